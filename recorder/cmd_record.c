/* `warprace record`: run a program with the recorder injected. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../analyzer/commands.h"
#include "record_args.h"

#ifndef WARPRACE_HAVE_RECORDER
#define WARPRACE_HAVE_RECORDER 0
#endif

static int is_file(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* An injection library: $WARPRACE_INJECT, its build-tree path, or beside the
 * program (same dir, ../lib*, ../recorder[/sanitizer]). */
static const char *find_library(const char *name, const char *build_path, char *buf, size_t len)
{
    const char *env = getenv(WRR_ENV_INJECT);
    if (env && *env)
        return is_file(env) ? env : NULL;
    if (build_path && is_file(build_path))
        return build_path;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            const char *rel[] = {"", "/../lib", "/../lib64", "/../lib/x86_64-linux-gnu",
                                 "/../recorder", "/../recorder/sanitizer"};
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
                int w = snprintf(buf, len, "%s%s/%s", self, rel[i], name);
                if (w > 0 && (size_t)w < len && is_file(buf))
                    return buf;
            }
        }
    }
    return NULL;
}

#ifndef WARPRACE_INJECT_BUILD_PATH
#define WARPRACE_INJECT_BUILD_PATH NULL
#endif
#ifndef WARPRACE_SANITIZER_BUILD_PATH
#define WARPRACE_SANITIZER_BUILD_PATH NULL
#endif

/* The program file execvp would run: argv0 itself when it has a '/', else
 * the first match on $PATH.  NULL when none is found. */
static const char *resolve_program(const char *argv0, char *buf, size_t len)
{
    if (strchr(argv0, '/'))
        return argv0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        int w = snprintf(buf, len, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", argv0);
        if (w > 0 && (size_t)w < len && is_file(buf) && access(buf, X_OK) == 0)
            return buf;
        path += n + (path[n] == ':');
    }
    return NULL;
}

/* Chooses the instrumentation for --mode auto: the device API when the
 * program carries its marker.  Prints why, since it changes what is seen. */
static int choose_mode(const wrr_record_opts *o)
{
    if (o->mode != WRR_MODE_AUTO)
        return o->mode;
    char buf[PATH_MAX];
    const char *prog = resolve_program(o->app_argv[0], buf, sizeof buf);
    int has = prog ? wrr_file_has_api_marker(prog) : -1;
    if (has == 1) {
        fprintf(stderr, "warprace record: %s uses the device API: recording through it "
                        "(--mode api)\n", prog);
        return WRR_MODE_API;
    }
    fprintf(stderr, "warprace record: %s%s: recording by binary instrumentation "
                    "(--mode sanitizer)\n", prog ? prog : o->app_argv[0],
            has == 0 ? " does not use the device API" : " could not be inspected");
    return WRR_MODE_SANITIZER;
}

/* Returns 0 when the recorder left its summary and reported no error, -1
 * when not. */
static int print_stats(const char *stats_path, const char *out)
{
    FILE *f = fopen(stats_path, "r");
    if (!f) {
        fprintf(stderr, "warprace record: the recorder left no summary: the program did not "
                        "load it (no CUDA use?) or crashed before exit\n");
        struct stat st;
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
            unlink(out);   /* not a named pipe that an analyze reads */
            fprintf(stderr, "warprace record: nothing was recorded; %s not written\n", out);
        } else if (stat(out, &st) == 0) {
            fprintf(stderr, "warprace record: %s: %lld bytes on disk (possibly truncated; "
                            "'warprace verify' tells)\n", out, (long long)st.st_size);
        }
        return -1;
    }
    char line[512];
    unsigned long long events = 0, lost = 0, lost_lanes = 0, launches = 0, records = 0;
    unsigned long long busy_ns = 0, wall_ns = 0, full_waits = 0, ring_setup_ns = 0;
    unsigned drain_threads = 0;
    unsigned long host_site_failures = 0;
    char error[512] = "", unrecorded[512] = "", launches_unrecorded[512] = "";
    char graphs[512] = "";
    /* the sanitizer path's counters (SANITIZER.md: what it recovered and
     * what it could not), those not 0 as they come: name=value */
    char san[2048] = "";
    size_t san_len = 0, san_col = 0;
    unsigned san_zero = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "sanitizer_", 10)) {
            line[strcspn(line, "\n")] = 0;
            const char *item = line + 10;
            size_t len = strlen(item);
            if (len >= 2 && !strcmp(item + len - 2, "=0")) {
                san_zero++;
                continue;
            }
            int wrap = san_col && san_col + 1 + len > 72;
            int k = snprintf(san + san_len, sizeof san - san_len, "%s%s",
                             !san_col ? "" : wrap ? "\n                 " : " ", item);
            if (k > 0 && (size_t)k < sizeof san - san_len) {
                san_len += (size_t)k;
                san_col = wrap || !san_col ? len : san_col + 1 + len;
            }
            continue;
        }
        sscanf(line, "events=%llu", &events);
        sscanf(line, "device_records=%llu", &records);
        sscanf(line, "lost_records=%llu", &lost);
        sscanf(line, "lost_lanes=%llu", &lost_lanes);
        sscanf(line, "launches=%llu", &launches);
        sscanf(line, "drain_busy_ns=%llu", &busy_ns);
        sscanf(line, "wall_ns=%llu", &wall_ns);
        sscanf(line, "ring_full_waits=%llu", &full_waits);
        sscanf(line, "ring_setup_ns=%llu", &ring_setup_ns);
        sscanf(line, "drain_threads=%u", &drain_threads);
        sscanf(line, "host_site_lookups_failed=%lu", &host_site_failures);
        if (!strncmp(line, "launches_unrecorded=", 20)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(launches_unrecorded, sizeof launches_unrecorded, "%s", line + 20);
        }
        if (!strncmp(line, "graph_work_unrecorded=", 22)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(graphs, sizeof graphs, "%s", line + 22);
        }
        if (!strncmp(line, "host_copies_unrecorded=", 23)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(unrecorded, sizeof unrecorded, "%s", line + 23);
        }
        if (!strncmp(line, "error=", 6)) {
            snprintf(error, sizeof error, "%s", line + 6);
            error[strcspn(error, "\n")] = 0;
        }
    }
    fclose(f);
    struct stat st;
    long long bytes = stat(out, &st) == 0 ? (long long)st.st_size : -1;
    printf("warprace record: wrote %s\n", out);
    printf("  events         %llu (%llu from the device, %llu kernel launches)\n", events,
           records, launches);
    printf("  bytes          %lld\n", bytes);
    printf("  lost events    %llu", lost);
    if (lost)
        printf(" (%llu thread-level accesses; enlarge --buffer or drop --drop)", lost_lanes);
    printf("\n");
    if (wall_ns) {
        printf("  drain overhead %.3f s busy of %.3f s (%.1f%% of one core", busy_ns / 1e9,
               wall_ns / 1e9, 100.0 * (double)busy_ns / (double)wall_ns);
        if (drain_threads)
            printf("; %u converting and %u compressing threads", drain_threads, drain_threads);
        printf(")\n");
    }
    if (ring_setup_ns >= 500000000ull)   /* pinning a large --buffer takes seconds */
        printf("  ring setup     %.2f s (allocating and pinning the --buffer)\n",
               ring_setup_ns / 1e9);
    if (full_waits)
        printf("  ring full      %llu records waited for the drain (back-pressure; a larger "
               "--buffer absorbs bursts)\n", full_waits);
    if (san[0] || san_zero)
        printf("  sanitizer      %s%s%u other counter%s 0\n", san, san[0] ? "; " : "", san_zero,
               san_zero == 1 ? "" : "s");
    if (launches_unrecorded[0])
        printf("  launches       %s of kernels without the device API's state: their "
               "accesses are not recorded (rebuild them with warprace/device.cuh, or record "
               "with --mode sanitizer)\n", launches_unrecorded);
    if (unrecorded[0])
        printf("  host copies    %s not recorded: races with them go unseen\n", unrecorded);
    if (host_site_failures)
        printf("  host sites     %lu lookup%s of a copy's call site got no answer from addr2line: "
               "those sites have a pc but no name (WARPRACE_ADDR2LINE names another tool)\n",
               host_site_failures, host_site_failures == 1 ? "" : "s");
    if (graphs[0])
        printf("  CUDA graphs    %s: their kernels, copies and orderings are not recorded "
               "(each graph launch counts as a lost event): races in them go unseen\n", graphs);
    if (error[0]) {
        fprintf(stderr, "warprace record: recorder error: %s\n", error);
        return -1;   /* the trace stops where the recorder failed */
    }
    return 0;
}

int wr_cmd_record(int argc, char **argv)
{
    wrr_record_opts o;
    char err[512];
    if (wrr_record_parse(argc, argv, &o, err, sizeof err) != 0) {
        fprintf(stderr, "warprace %s\n", err);
        return 2;
    }
    if (o.help) {
        fputs(wrr_record_usage, stdout);
        if (!WARPRACE_HAVE_RECORDER)
            printf("\nThis build has no recorder (built without CUDA).\n");
        return 0;
    }
    if (!WARPRACE_HAVE_RECORDER) {
        fprintf(stderr,
                "warprace record: this build of warprace has no recorder: it was built "
                "without CUDA (nvcc was not found, or -Dcuda=disabled).\n"
                "Rebuild on a machine with the CUDA toolkit (meson setup build "
                "-Dcuda=enabled) to record; this build can still analyze traces.\n");
        return 2;
    }
    int mode = choose_mode(&o);
    const char *lib_name = mode == WRR_MODE_API ? "libwarprace_inject.so"
                                                : "libwarprace_sanitizer.so";
    char ibuf[PATH_MAX];
    const char *inject = find_library(lib_name,
                                      mode == WRR_MODE_API ? WARPRACE_INJECT_BUILD_PATH
                                                           : WARPRACE_SANITIZER_BUILD_PATH,
                                      ibuf, sizeof ibuf);
    if (!inject) {
        fprintf(stderr, "warprace record: cannot find the injection library %s (set %s to "
                        "its path%s)\n", lib_name, WRR_ENV_INJECT,
                mode == WRR_MODE_SANITIZER ? ", or build with the Compute Sanitizer headers; "
                                             "--mode api records programs built with "
                                             "warprace/device.cuh" : "");
        return 2;
    }
    char inject_abs[PATH_MAX];
    if (!realpath(inject, inject_abs)) {
        fprintf(stderr, "warprace record: %s: %s\n", inject, strerror(errno));
        return 2;
    }
    /* the trace must be creatable before we run anything */
    int fd = open(o.out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "warprace record: cannot create %s: %s\n", o.out, strerror(errno));
        return 2;
    }
    close(fd);
    char stats_path[] = "/tmp/warprace-record-XXXXXX";
    int sfd = mkstemp(stats_path);
    if (sfd < 0) {
        fprintf(stderr, "warprace record: cannot create a temporary file: %s\n", strerror(errno));
        return 2;
    }
    close(sfd);
    unlink(stats_path);         /* the recorder creates it at exit */

    char out_abs[PATH_MAX];
    if (!realpath(o.out, out_abs))
        snprintf(out_abs, sizeof out_abs, "%s", o.out);
    char command[4096];
    size_t len = 0;
    command[0] = 0;
    for (int i = 0; i < o.app_argc && len + 2 < sizeof command; i++)
        len += (size_t)snprintf(command + len, sizeof command - len, "%s%s", i ? " " : "",
                                o.app_argv[i]);
    char bufsz[32];
    snprintf(bufsz, sizeof bufsz, "%llu", (unsigned long long)o.buffer_bytes);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "warprace record: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        setenv("CUDA_INJECTION64_PATH", inject_abs, 1);
        setenv(WRR_ENV_OUT, out_abs, 1);
        setenv(WRR_ENV_STATS, stats_path, 1);
        setenv(WRR_ENV_BUFFER, bufsz, 1);
        setenv(WRR_ENV_COMMAND, command, 1);
        if (o.kernels)
            setenv(WRR_ENV_KERNELS, o.kernels, 1);
        if (o.nvtx) {
            setenv(WRR_ENV_NVTX, o.nvtx, 1);
#ifdef WARPRACE_CUPTI_LIB
            /* NVTX calls reach CUPTI's callbacks only through its injection */
            setenv("NVTX_INJECTION64_PATH", WARPRACE_CUPTI_LIB, 0);
#endif
        }
        if (o.drop)
            setenv(WRR_ENV_DROP, "1", 1);
        if (o.drain_threads) {
            char threads[16];
            snprintf(threads, sizeof threads, "%u", o.drain_threads);
            setenv(WRR_ENV_DRAIN_THREADS, threads, 1);
        }
        if (mode == WRR_MODE_SANITIZER)   /* patch every module when it loads */
            setenv("CUDA_MODULE_LOADING", "EAGER", 0);
        execvp(o.app_argv[0], o.app_argv);
        fprintf(stderr, "warprace record: cannot run %s: %s\n", o.app_argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "warprace record: waitpid: %s\n", strerror(errno));
            return 2;
        }
    int rc = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        unlink(stats_path);
        return 2;
    }
    if (print_stats(stats_path, o.out) != 0)
        rc = 2;
    unlink(stats_path);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "warprace record: %s was killed by signal %d (%s); the trace keeps "
                        "every chunk flushed before that\n", o.app_argv[0], WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        rc = 2;
    } else if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "warprace record: %s exited with status %d\n", o.app_argv[0],
                WEXITSTATUS(status));
        rc = 2;
    }
    return rc;
}

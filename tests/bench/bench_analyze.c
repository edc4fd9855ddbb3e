/*
 * bench-analyze: figures for the analyzer on one trace (not a timed test).
 *
 *   bench-analyze TRACE...
 *
 * For each trace, every configuration runs in its own forked child so that
 * peak RSS is that configuration's alone:
 *   decode      the bare decode of the trace (wr_reader_next over every
 *               chunk, batches released): the baseline of the ratios
 *   vc scoped lockset fsm   one engine, 1 worker
 *   all x1, all x2          the four engines together, 1 and 2 workers
 * Printed per configuration: wall seconds, thread-level accesses per second
 * per worker core (thread accesses / wall / workers; the decoding thread
 * runs beside the workers and is not counted), analysis / decode wall-time ratio, peak RSS,
 * and bytes of RSS above the decode baseline per distinct touched word (the
 * largest shadow_words of the engines run).  Scaling = wall(all x1) /
 * wall(all x2).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "replay.h"
#include "warprace/trace.h"

typedef struct figures {
    int ok;
    double wall;
    uint64_t thread_accesses;
    uint64_t shadow_words;     /* the largest over the engines run */
    uint64_t peak_rss;
    uint64_t raw_bytes;        /* decode: uncompressed event payload */
    char error[sizeof(((wr_error *)0)->msg)];
} figures;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_maxrss * 1024;
}

static void run_decode(const char *path, figures *f)
{
    wr_error err;
    double t0 = now_seconds();
    wr_reader *r = wr_reader_open(path, &err);
    if (!r) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    wr_batch b;
    int rc;
    uint64_t lanes = 0;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            if (b.events[i].kind == WR_EV_ACCESS)
                lanes += (uint64_t)__builtin_popcount(b.events[i].u.access.active_mask);
        wr_batch_release(&b);
    }
    f->wall = now_seconds() - t0;
    if (rc < 0) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
    } else {
        f->ok = 1;
        f->thread_accesses = lanes;
        f->raw_bytes = wr_reader_stats_get(r)->raw_bytes;
    }
    wr_reader_close(r);
    f->peak_rss = peak_rss_bytes();
}

static void run_replay(const char *path, uint32_t engine_mask, unsigned threads, figures *f)
{
    wr_error err;
    wr_replay_options opts = {.engine_mask = engine_mask, .threads = threads};
    double t0 = now_seconds();
    wr_replay *rp = wr_replay_run(path, &opts, &err);
    f->wall = now_seconds() - t0;
    if (!rp) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    f->ok = 1;
    f->thread_accesses = st->thread_accesses;
    for (unsigned i = 0; i < st->engine_count; i++)
        if (st->shadow_words[i] > f->shadow_words)
            f->shadow_words = st->shadow_words[i];
    wr_replay_free(rp);
    f->peak_rss = peak_rss_bytes();
}

/* Seconds one configuration may take ($WR_BENCH_TIMEOUT, default 300): a
 * pathological case is reported as such instead of stalling the benchmark. */
static unsigned time_limit(void)
{
    const char *v = getenv("WR_BENCH_TIMEOUT");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (unsigned)n : 300;
}

/* Runs one configuration in a child; engine_mask 0 with threads 0 = decode. */
static figures measure(const char *path, uint32_t engine_mask, unsigned threads)
{
    figures f = {0};
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(f.error, sizeof f.error, "pipe failed");
        return f;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(time_limit());
        figures child = {0};
        if (threads == 0)
            run_decode(path, &child);
        else
            run_replay(path, engine_mask, threads, &child);
        ssize_t n = write(fds[1], &child, sizeof child);
        _exit(n == (ssize_t)sizeof child ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = pid > 0 ? read(fds[0], &f, sizeof f) : -1;
    close(fds[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (n != (ssize_t)sizeof f) {
        memset(&f, 0, sizeof f);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            snprintf(f.error, sizeof f.error, "timed out after %u s", time_limit());
        else
            snprintf(f.error, sizeof f.error, "child failed (status %d)", status);
    }
    return f;
}

static void print_row(const char *name, unsigned cores, const figures *f, const figures *decode)
{
    if (!f->ok) {
        printf("  %-10s error: %s\n", name, f->error);
        return;
    }
    double per_core = f->thread_accesses / f->wall / cores / 1e6;
    double extra = f->peak_rss > decode->peak_rss ? (double)(f->peak_rss - decode->peak_rss) : 0;
    printf("  %-10s %8.3f s %9.1f M/s/core %7.2fx decode %8.1f MiB", name, f->wall, per_core,
           f->wall / decode->wall, f->peak_rss / 1048576.0);
    if (f->shadow_words)
        printf(" %6.1f B/word (%" PRIu64 " words)", extra / (double)f->shadow_words,
               f->shadow_words);
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: bench-analyze TRACE...\n");
        return argc < 2 ? 2 : 0;
    }
    int status = 0;
    for (int t = 1; t < argc; t++) {
        const char *path = argv[t];
        figures decode = measure(path, 0, 0);
        if (!decode.ok) {
            fprintf(stderr, "bench-analyze: %s\n", decode.error);
            status = 1;
            continue;
        }
        printf("%s: %" PRIu64 " thread-level accesses, %.1f MiB event payload\n", path,
               decode.thread_accesses, decode.raw_bytes / 1048576.0);
        printf("  %-10s %8.3f s %9.1f M/s/core  %.2f GB/s decoded     %8.1f MiB\n", "decode",
               decode.wall, decode.thread_accesses / decode.wall / 1e6,
               decode.raw_bytes / decode.wall / 1e9, decode.peak_rss / 1048576.0);
        for (unsigned e = 0; e < wr_engine_count; e++) {
            figures f = measure(path, 1u << e, 1);
            print_row(wr_engines[e]->name, 1, &f, &decode);
        }
        uint32_t all = (1u << wr_engine_count) - 1;
        figures one = measure(path, all, 1);
        figures two = measure(path, all, 2);
        print_row("all x1", 1, &one, &decode);
        print_row("all x2", 2, &two, &decode);
        if (one.ok && two.ok)
            printf("  scaling 1 -> 2 workers: %.2fx\n", one.wall / two.wall);
    }
    return status;
}

/* `warprace record` as a command: with and without a recorder in the build
 * (this file is compiled twice, WARPRACE_HAVE_RECORDER 0 and 1). */
#define _XOPEN_SOURCE 700   /* nftw */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analyzer/commands.h"

static char *slurp(FILE *f)
{
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

#define RUN(...) ({ char *av_[] = {"record", __VA_ARGS__, NULL}; \
    wr_cmd_record((int)(sizeof av_ / sizeof av_[0]) - 1, av_); })

Test(record_cmd, usage_errors_exit_2, .init = cr_redirect_stderr)
{
    cr_assert_eq(RUN("--", "true"), 2);
    fflush(stderr);
    cr_assert(strstr(slurp(cr_get_redirected_stderr()), "no output file"));
}

#if !WARPRACE_HAVE_RECORDER
Test(record_cmd, no_recorder_in_this_build, .init = cr_redirect_stderr)
{
    cr_assert_eq(RUN("-o", "/tmp/never.wrt", "--", "true"), 2);
    fflush(stderr);
    char *e = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(e, "has no recorder"), "%s", e);
    cr_assert(strstr(e, "without CUDA"), "%s", e);
    cr_assert_neq(access("/tmp/never.wrt", F_OK), 0, "nothing written");
}
#else
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A test's scratch directory goes when the test passes. */
static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

Test(record_cmd, missing_injection_library, .init = cr_redirect_stderr)
{
    setenv("WARPRACE_INJECT", "/nonexistent/libwarprace_inject.so", 1);
    cr_assert_eq(RUN("-o", "/tmp/wr-never.wrt", "--", "true"), 2);
    fflush(stderr);
    cr_assert(strstr(slurp(cr_get_redirected_stderr()), "cannot find the injection library"));
}

/* The command passes its options to the program's environment and prints
 * the summary the recorder leaves in $WARPRACE_STATS. */
Test(record_cmd, environment_contract_and_summary, .init = cr_redirect_stdout)
{
    char dir[] = "/tmp/wr-rec-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char inject[256], out[256], envdump[256], script[1024];
    snprintf(inject, sizeof inject, "%s/fake_inject.so", dir);
    snprintf(out, sizeof out, "%s/t.wrt", dir);
    snprintf(envdump, sizeof envdump, "%s/env", dir);
    FILE *f = fopen(inject, "w");
    fclose(f);
    setenv("WARPRACE_INJECT", inject, 1);
    snprintf(script, sizeof script,
             "env | grep -E '^(WARPRACE_|CUDA_INJECTION64_PATH)' | sort > %s; "
             "printf 'events=1234\\ndevice_records=1200\\nlaunches=3\\nlost_records=7\\n"
             "lost_lanes=200\\ndrain_busy_ns=5000000\\nwall_ns=1000000000\\n"
             "host_copies_unrecorded=3 (symbol address unknown)\\n"
             "host_site_lookups_failed=2\\n"
             "sanitizer_fence_unknown=2\\nsanitizer_fence_unreachable=0\\n"
             "sanitizer_reads_held=40\\nsanitizer_grid_syncs=0\\n"
             "sanitizer_cas_outcome_unknown_with_a_long_name_to_wrap=1234567890123\\n' "
             "> $WARPRACE_STATS; "
             "printf 'xxxx' > $WARPRACE_OUT", envdump);
    cr_assert_eq(RUN("-o", out, "--kernels", "mp", "--buffer", "2M", "--drop", "--", "sh", "-c",
                     script), 0);
    fflush(stdout);
    char *s = slurp(cr_get_redirected_stdout());
    cr_assert(strstr(s, "events         1234 (1200 from the device, 3 kernel launches)"), "%s", s);
    cr_assert(strstr(s, "bytes          4"), "%s", s);
    cr_assert(strstr(s, "lost events    7 (200 thread-level"), "%s", s);
    cr_assert(strstr(s, "drain overhead 0.005 s busy of 1.000 s (0.5% of one core)"), "%s", s);
    cr_assert(strstr(s, "  host copies    3 (symbol address unknown) not recorded: races with "
                        "them go unseen\n"), "%s", s);
    cr_assert(strstr(s, "  host sites     2 lookups of a copy's call site got no answer from "
                        "addr2line"), "%s", s);
    cr_assert(strstr(s, "  sanitizer      fence_unknown=2 reads_held=40\n                 "
                        "cas_outcome_unknown_with_a_long_name_to_wrap=1234567890123; "
                        "2 other counters 0\n"), "%s", s);
    f = fopen(envdump, "r");
    cr_assert_not_null(f);
    char env[4096];
    size_t n = fread(env, 1, sizeof env - 1, f);
    env[n] = 0;
    fclose(f);
    cr_assert(strstr(env, "WARPRACE_BUFFER=2097152\n"), "%s", env);
    cr_assert(strstr(env, "WARPRACE_DROP=1\n"), "%s", env);
    cr_assert(strstr(env, "WARPRACE_KERNELS=mp\n"), "%s", env);
    cr_assert(strstr(env, "CUDA_INJECTION64_PATH=/tmp/wr-rec-"), "%s", env);
    cr_assert(strstr(env, "WARPRACE_COMMAND=sh -c"), "%s", env);
    cr_assert(strstr(env, "WARPRACE_OUT=/tmp/wr-rec-"), "%s", env);
    cr_assert_null(strstr(env, "WARPRACE_NVTX"), "%s", env);
    remove_tree(dir);
}

/* A temporary folder with an empty stand-in injection library, which
 * WARPRACE_INJECT names; out[] gets the trace path in it. */
static void fake_recorder(char dir[static 19], char out[256])
{
    strcpy(dir, "/tmp/wr-rec-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char inject[256];
    snprintf(inject, sizeof inject, "%s/fake_inject.so", dir);
    snprintf(out, 256, "%s/t.wrt", dir);
    fclose(fopen(inject, "w"));
    setenv("WARPRACE_INJECT", inject, 1);
}

Test(record_cmd, failing_program_is_reported, .init = cr_redirect_stderr)
{
    char dir[19], out[256];
    fake_recorder(dir, out);
    cr_assert_eq(RUN("-o", out, "--", "sh", "-c", "exit 3"), 2);
    fflush(stderr);
    char *e = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(e, "left no summary"), "%s", e);
    cr_assert(strstr(e, "exited with status 3"), "%s", e);
    cr_assert_eq(RUN("-o", out, "--", "/nonexistent/prog"), 2);
    /* a program that never loads the recorder: exit 2, no empty trace left */
    cr_assert_eq(RUN("-o", out, "--", "true"), 2);
    fflush(stderr);
    cr_assert(strstr(slurp(cr_get_redirected_stderr()), "nothing was recorded"));
    cr_assert_neq(access(out, F_OK), 0);
    remove_tree(dir);
}

/* A recorder that reports an error (a refused event: the trace stops
 * there) makes the command fail, so that no script takes the trace for
 * whole (the first GPU runs printed the error and exited 0). */
Test(record_cmd, recorder_error_fails_the_command, .init = cr_redirect_stderr)
{
    char dir[19], out[256];
    fake_recorder(dir, out);
    cr_assert_eq(RUN("-o", out, "--", "sh", "-c",
                     "printf 'events=3\nok=0\nerror=the trace writer rejected the access "
                     "event\n' > $WARPRACE_STATS; printf 'xxxx' > $WARPRACE_OUT"), 2);
    fflush(stderr);
    char *e = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(e, "recorder error: the trace writer rejected the access event"), "%s", e);
    remove_tree(dir);
}

Test(record_cmd, unwritable_output, .init = cr_redirect_stderr)
{
    cr_assert_eq(RUN("-o", "/nonexistent-dir/t.wrt", "--", "true"), 2);
    fflush(stderr);
    char *e = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(e, "cannot create /nonexistent-dir/t.wrt") ||
              strstr(e, "cannot find the injection library"), "%s", e);
}
#endif

/* `warprace record` argument parsing and its error messages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record_args.h"

static wrr_record_opts o;
static char err[512];
static char *argv_store[32];    /* opts point into argv: it must outlive PARSE */

#define PARSE(...) ({ char *av_[] = {"record", __VA_ARGS__, NULL}; \
    memcpy(argv_store, av_, sizeof av_); \
    wrr_record_parse((int)(sizeof av_ / sizeof av_[0]) - 1, argv_store, &o, err, sizeof err); })

Test(record_args, full_command_line)
{
    cr_assert_eq(PARSE("-o", "out.wrt", "--kernels", "^mp_.*", "--nvtx", "phase2", "--buffer",
                       "8M", "--drop", "--", "./app", "-x", "1"), 0, "%s", err);
    cr_assert_str_eq(o.out, "out.wrt");
    cr_assert_str_eq(o.kernels, "^mp_.*");
    cr_assert_str_eq(o.nvtx, "phase2");
    cr_assert_eq(o.buffer_bytes, 8u << 20);
    cr_assert_eq(o.drop, 1);
    cr_assert_eq(o.app_argc, 3);
    cr_assert_str_eq(o.app_argv[0], "./app");
    cr_assert_str_eq(o.app_argv[2], "1");
    cr_assert_null(o.app_argv[3]);
}

Test(record_args, equals_forms_and_defaults)
{
    cr_assert_eq(PARSE("--output=t.wrt", "--buffer=1G", "./app"), 0, "%s", err);
    cr_assert_str_eq(o.out, "t.wrt");
    cr_assert_eq(o.buffer_bytes, 1ull << 30);
    cr_assert_eq(o.drop, 0);
    cr_assert_null(o.kernels);
    cr_assert_str_eq(o.app_argv[0], "./app");
    cr_assert_eq(PARSE("-ox.wrt", "--", "prog"), 0, "%s", err);
    cr_assert_str_eq(o.out, "x.wrt");
    cr_assert_eq(o.buffer_bytes, WRR_DEFAULT_BUFFER);
}

Test(record_args, options_after_the_program_belong_to_it)
{
    cr_assert_eq(PARSE("-o", "a.wrt", "./app", "--drop", "-o", "b"), 0, "%s", err);
    cr_assert_eq(o.drop, 0);
    cr_assert_str_eq(o.out, "a.wrt");
    cr_assert_eq(o.app_argc, 4);
}

Test(record_args, help)
{
    cr_assert_eq(PARSE("--help"), 0);
    cr_assert_eq(o.help, 1);
    cr_assert(strstr(wrr_record_usage, "--kernels REGEX"));
}

Test(record_args, errors_name_the_problem)
{
    cr_assert_eq(PARSE("--", "./app"), -1);
    cr_assert(strstr(err, "no output file"), "%s", err);
    cr_assert_eq(PARSE("-o", "x.wrt"), -1);
    cr_assert(strstr(err, "no program to run"), "%s", err);
    cr_assert_eq(PARSE("-o", "x.wrt", "--"), -1);
    cr_assert(strstr(err, "no program to run"), "%s", err);
    cr_assert_eq(PARSE("-o"), -1);
    cr_assert(strstr(err, "'-o' needs a value"), "%s", err);
    cr_assert_eq(PARSE("-o", "x", "--frobnicate", "--", "a"), -1);
    cr_assert(strstr(err, "unknown option '--frobnicate'"), "%s", err);
    cr_assert_eq(PARSE("-o", "x", "--kernels", "(unclosed", "--", "a"), -1);
    cr_assert(strstr(err, "not a valid regular expression"), "%s", err);
    cr_assert_eq(PARSE("-o", "x", "--buffer", "12Q", "--", "a"), -1);
    cr_assert(strstr(err, "--buffer '12Q'"), "%s", err);
    cr_assert_eq(PARSE("-o", "", "--", "a"), -1);
    cr_assert(strstr(err, "empty"), "%s", err);
    cr_assert_eq(PARSE("-o", "-", "--", "a"), -1);
    cr_assert(strstr(err, "cannot go to standard output"), "%s", err);
    cr_assert_eq(PARSE("-o", "x", "--nvtx=", "--", "a"), -1);
    cr_assert(strstr(err, "--nvtx range name is empty"), "%s", err);
}

Test(record_args, sizes)
{
    uint64_t v;
    cr_assert_eq(wrr_parse_size("4096", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(wrr_parse_size("3000", &v), 0);
    cr_assert_eq(v, 2048, "rounded down to a power of two");
    cr_assert_eq(wrr_parse_size("64M", &v), 0);
    cr_assert_eq(v, 64u << 20);
    cr_assert_eq(wrr_parse_size("512k", &v), 0);
    cr_assert_eq(v, 512u << 10);
    cr_assert_eq(wrr_parse_size("2GiB", &v), 0);
    cr_assert_eq(v, 2ull << 30);
    cr_assert_eq(wrr_parse_size("16G", &v), 0);
    cr_assert_eq(wrr_parse_size("17G", &v), -1, "above the maximum");
    cr_assert_eq(wrr_parse_size("512", &v), -1, "below the minimum");
    cr_assert_eq(wrr_parse_size("-1M", &v), -1);
    cr_assert_eq(wrr_parse_size("", &v), -1);
    cr_assert_eq(wrr_parse_size("M", &v), -1);
    cr_assert_eq(wrr_parse_size("99999999999999999999999", &v), -1);
    cr_assert_eq(wrr_buffer_log2cap(1024), 6);
    cr_assert_eq(wrr_buffer_log2cap(64u << 20), 22);
}

/* --drain-threads and WARPRACE_DRAIN_THREADS: a count in 1..16, else the
 * recorder's choice, a quarter of the CPUs, 1 to 4. */
Test(record_args, drain_threads)
{
    int valid;
    cr_assert_eq(wrr_drain_threads("3", 16, &valid), 3);
    cr_assert(valid);
    cr_assert_eq(wrr_drain_threads("16", 2, &valid), 16);
    cr_assert_eq(wrr_drain_threads(NULL, 16, &valid), 4);
    cr_assert(valid);
    cr_assert_eq(wrr_drain_threads("", 8, &valid), 2);
    cr_assert_eq(wrr_drain_threads(NULL, 2, &valid), 1);
    cr_assert_eq(wrr_drain_threads(NULL, 64, &valid), 4);
    cr_assert_eq(wrr_drain_threads(NULL, -1, &valid), 1, "sysconf failed");
    const char *bad[] = {"0", "17", "-2", "+3", "2x", "many"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(wrr_drain_threads(bad[i], 16, &valid), 4, "%s: the choice", bad[i]);
        cr_assert(!valid, "%s", bad[i]);
    }
    wrr_record_opts o;
    char err[256];
    char *argv[] = {"record", "-o", "t.wrt", "--drain-threads", "6", "--", "./app", NULL};
    cr_assert_eq(wrr_record_parse(7, argv, &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.drain_threads, 6);
    char *argv2[] = {"record", "-o", "t.wrt", "--drain-threads=0", "--", "./app", NULL};
    cr_assert_eq(wrr_record_parse(6, argv2, &o, err, sizeof err), -1);
    cr_assert(strstr(err, "--drain-threads '0'"), "%s", err);
}

Test(record_args, mode)
{
    cr_assert_eq(PARSE("-o", "t.wrt", "./app"), 0, "%s", err);
    cr_assert_eq(o.mode, WRR_MODE_AUTO);
    cr_assert_eq(PARSE("-o", "t.wrt", "--mode", "sanitizer", "./app"), 0, "%s", err);
    cr_assert_eq(o.mode, WRR_MODE_SANITIZER);
    cr_assert_eq(PARSE("-o", "t.wrt", "--mode=api", "./app"), 0, "%s", err);
    cr_assert_eq(o.mode, WRR_MODE_API);
    cr_assert_eq(PARSE("-o", "t.wrt", "--mode", "nvbit", "./app"), -1);
    cr_assert(strstr(err, "'nvbit'") && strstr(err, "auto, api, sanitizer"), "%s", err);
}

/* Writes `size` filler bytes with the marker (if any) at offset `at`. */
static void write_program(const char *path, size_t size, long at)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (size_t i = 0; i < size; i++)
        fputc((int)('a' + i % 7), f);
    if (at >= 0) {
        fseek(f, at, SEEK_SET);
        fputs(WRR_API_MARKER, f);
    }
    fclose(f);
}

Test(record_args, api_marker_scan)
{
    char path[] = "/tmp/wr-marker-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    write_program(path, 300000, -1);
    cr_assert_eq(wrr_file_has_api_marker(path), 0);
    write_program(path, 300000, 12);
    cr_assert_eq(wrr_file_has_api_marker(path), 1);
    /* across the scanner's 64 KiB block boundary */
    write_program(path, 300000, 65536 - 5);
    cr_assert_eq(wrr_file_has_api_marker(path), 1);
    write_program(path, 300000, 300000 - 14);
    cr_assert_eq(wrr_file_has_api_marker(path), 1);
    unlink(path);
    cr_assert_eq(wrr_file_has_api_marker(path), -1);
}

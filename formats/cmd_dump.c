/* `warprace dump FILE [-o out.txt]`: .wrt -> canonical text (formats/TEXT.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "warprace/trace.h"

static void dump_usage(FILE *out)
{
    fputs("usage: warprace dump FILE.wrt [-o OUT.txt] [--from SEQ] [--count N]\n"
          "Prints a binary trace in the canonical text form (formats/TEXT.md);\n"
          "`warprace asm` reads it back into the same trace (the same events, catalog\n"
          "and modules; string ids may be numbered differently).\n"
          "--from/--count print only the events SEQ..SEQ+N-1 (the seq of a race in\n"
          "`raceq races`), found through the footer index without decoding the\n"
          "rest: a window to read, not a whole trace.\n"
          "Exit 0 on success, 2 on a usage error or an unreadable/corrupt file, 3 on a\n"
          "truncated trace (what it holds is printed, and a warning: the text of a\n"
          "truncated trace assembles into a whole one).\n",
          out);
}

int wr_cmd_dump(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    uint64_t from = 0, count = UINT64_MAX;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            dump_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--from") || !strcmp(argv[i], "--count")) {
            uint64_t *v = argv[i][2] == 'f' ? &from : &count;
            char *end = NULL;
            errno = 0;
            unsigned long long n = i + 1 < argc ? strtoull(argv[i + 1], &end, 0) : 0;
            if (i + 1 >= argc || !*argv[i + 1] || *end || errno || argv[i + 1][0] == '-' ||
                (v == &count && n == 0)) {
                fprintf(stderr, "warprace dump: %s wants a %snumber\n", argv[i],
                        v == &count ? "positive " : "");
                return 2;
            }
            *v = n;
            i++;
            continue;
        }
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc || out) {
                dump_usage(stderr);
                return 2;
            }
            out = argv[++i];
        } else if (!strncmp(argv[i], "--output=", 9) && !out) {
            out = argv[i] + 9;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "warprace dump: unknown option '%s'\n", argv[i]);
            dump_usage(stderr);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else {
            dump_usage(stderr);
            return 2;
        }
    }
    if (!in) {
        dump_usage(stderr);
        return 2;
    }
    FILE *f = stdout;
    if (out && strcmp(out, "-")) {
        f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "warprace dump: %s: %s\n", out, strerror(errno));
            return 2;
        }
    }
    wr_error err;
    uint64_t truncated_at;
    int rc = wr_text_dump_window(in, f, from, count, &truncated_at, &err);
    if (f != stdout && fclose(f) && !rc) {
        fprintf(stderr, "warprace dump: %s: write error\n", out);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "warprace dump: %s\n", err.msg);
        return 2;
    }
    if (truncated_at != UINT64_MAX) {
        fprintf(stderr, "warprace dump: %s: truncated at offset %" PRIu64 ": the text holds the "
                        "events before it, and assembles into a trace that looks whole\n",
                in, truncated_at);
        return 3;
    }
    return 0;
}

/* `warprace dump FILE [-o out.txt]`: .wrt -> canonical text (formats/TEXT.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "warprace/trace.h"

static void dump_usage(FILE *out)
{
    fputs("usage: warprace dump FILE.wrt [-o OUT.txt]\n"
          "Prints a binary trace in the canonical text form (formats/TEXT.md);\n"
          "`warprace asm` reads it back into an identical file.\n"
          "Exit 0 on success, 2 on a usage error or an unreadable/corrupt file.\n",
          out);
}

int wr_cmd_dump(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            dump_usage(stdout);
            return 0;
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
    int rc = wr_text_dump(in, f, &err);
    if (f != stdout && fclose(f) && !rc) {
        fprintf(stderr, "warprace dump: %s: write error\n", out);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "warprace dump: %s\n", err.msg);
        return 2;
    }
    return 0;
}

/* `warprace asm in.txt -o out.wrt`: text form -> .wrt (formats/TEXT.md). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "warprace/trace.h"

static void asm_usage(FILE *out)
{
    fputs("usage: warprace asm IN.txt -o OUT.wrt\n"
          "Assembles a text trace (formats/TEXT.md) into a binary trace.\n"
          "Errors name IN.txt:LINE:COL; exit 0 on success, 2 on a usage or input error.\n",
          out);
}

int wr_cmd_asm(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            asm_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc || out) {
                asm_usage(stderr);
                return 2;
            }
            out = argv[++i];
        } else if (!strncmp(argv[i], "--output=", 9) && !out) {
            out = argv[i] + 9;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "warprace asm: unknown option '%s'\n", argv[i]);
            asm_usage(stderr);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else {
            asm_usage(stderr);
            return 2;
        }
    }
    if (!in || !out) {
        asm_usage(stderr);
        return 2;
    }
    wr_error err;
    if (wr_text_assemble(in, out, &err)) {
        fprintf(stderr, "warprace asm: %s\n", err.msg);
        return 2;
    }
    return 0;
}

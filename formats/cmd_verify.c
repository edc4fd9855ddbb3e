/* `warprace verify FILE...`: exit 0 only if every file is entirely sound. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "warprace/trace.h"

static void verify_usage(FILE *out)
{
    fprintf(out,
            "usage: warprace verify [-q] FILE.wrt...\n\n"
            "Checks every byte of each trace: header, every chunk's checksum and decoding,\n"
            "catalog references, the footer index.  Prints one line per file; after a\n"
            "fault, also how many sound chunks (and events) still follow it.\n\n"
            "  -q, --quiet   print problems only\n\n"
            "exit status: 0 every file sound, 1 a file is truncated or corrupt,\n"
            "             2 usage error or a file cannot be opened\n");
}

int wr_cmd_verify(int argc, char **argv)
{
    int quiet = 0, files = 0, status = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            verify_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "warprace verify: unknown option '%s'\n", argv[i]);
            verify_usage(stderr);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1])
            continue;
        files++;
        wr_error err = {0};
        int rc = wr_verify_file(argv[i], NULL, &err);
        switch (rc) {
        case 0:
            if (!quiet)
                printf("%s: ok\n", strcmp(argv[i], "-") ? argv[i] : WR_STDIN_NAME);
            break;
        case 1: /* truncated */
        case 2: /* corrupt */
            printf("%s\n", err.msg);
            if (rc == 2 && strcmp(argv[i], "-"))   /* a stream is read once: no second look */
                wr_verify_after_fault(argv[i], err.offset, stdout);
            if (status < 1)
                status = 1;
            break;
        default:
            fprintf(stderr, "warprace verify: %s\n", err.msg);
            status = 2;
            break;
        }
    }
    if (!files) {
        verify_usage(stderr);
        return 2;
    }
    return status;
}

/* libFuzzer target for the text parser (formats/TEXT.md): any input must
 * give success or a FILE:LINE:COL error -- no crash, hang or unbounded
 * allocation.  Successful inputs are dumped and reassembled, and the dump
 * must be stable (dump -> asm -> dump is identical). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text_priv.h"

static char out1[64], out2[64];

static void init_paths(void)
{
    if (out1[0])
        return;
    snprintf(out1, sizeof(out1), "/tmp/wr-fuzz-text-%d-1.wrt", (int)getpid());
    snprintf(out2, sizeof(out2), "/tmp/wr-fuzz-text-%d-2.wrt", (int)getpid());
}

static char *dump(const char *path, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    wr_error err;
    int rc = wr_text_dump(path, f, &err);
    fclose(f);
    if (rc) {
        fprintf(stderr, "dump of an assembled trace failed: %s\n", err.msg);
        abort();
    }
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_paths();
    if (size > (1u << 20))
        return 0;
    wr_error err;
    if (wr_text_assemble_buf("fuzz.txt", (const char *)data, size, out1, &err)) {
        if (strncmp(err.msg, "fuzz.txt:", 9) || !err.line || !err.col) {
            fprintf(stderr, "error without a position: %s\n", err.msg);
            abort();
        }
        return 0;
    }
    size_t l1, l2;
    char *d1 = dump(out1, &l1);
    if (wr_text_assemble_buf("dump.txt", d1, l1, out2, &err)) {
        fprintf(stderr, "the dump does not reassemble: %s\n", err.msg);
        abort();
    }
    char *d2 = dump(out2, &l2);
    if (l1 != l2 || memcmp(d1, d2, l1)) {
        fprintf(stderr, "dump -> asm -> dump differs\n");
        abort();
    }
    free(d1);
    free(d2);
    unlink(out1);
    unlink(out2);
    return 0;
}

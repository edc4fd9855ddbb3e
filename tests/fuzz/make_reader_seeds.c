/* Writes the seed corpus of the binary reader fuzz target (committed in
 * tests/fuzz/corpus_reader/): small valid traces covering every event kind,
 * both codecs, no footer, a truncated chunk, and damaged copies.
 * usage: make_reader_seeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_trace.h"

static int save(const char *dir, const char *name, const unsigned char *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        perror(path);
        return 1;
    }
    fclose(f);
    return 0;
}

static int trace(const char *dir, const char *name, uint64_t events, uint32_t chunk,
                 int footer)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wr_error err;
    wr_header h = sample_header();
    wr_writer_options opts = {.chunk_bytes = chunk};
    wr_writer *w = wr_writer_open(path, &h, &opts, &err);
    if (!w) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    sample_define_catalog(w);
    uint64_t lanes[32];
    for (uint64_t i = 0; i < events; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        if (wr_writer_event(w, &ev, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    }
    if (footer)
        return wr_writer_close(w, &err) ? (fprintf(stderr, "%s\n", err.msg), 1) : 0;
    wr_writer_flush(w, &err);
    wr_writer_abandon(w);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int rc = trace(dir, "all-kinds.wrt", 48, 0, 1) |       /* LZ4 chunk */
             trace(dir, "tiny-chunks.wrt", 30, 64, 1) |    /* stored chunks */
             trace(dir, "empty.wrt", 0, 0, 1) |
             trace(dir, "no-footer.wrt", 24, 200, 0);
    if (rc)
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/all-kinds.wrt", dir);
    size_t n;
    unsigned char *file = sample_read_file(path, &n);
    if (!file)
        return 1;
    rc |= save(dir, "truncated.wrt", file, n * 2 / 3);
    file[n / 2] ^= 0x04;
    rc |= save(dir, "bitflip.wrt", file, n);
    free(file);
    return rc;
}

/* libFuzzer target for the binary .wrt reader: opens the input in memory,
 * reads every batch, then verifies it.  Random bytes almost never carry
 * valid CRC32Cs, which would stop the fuzzer at the checksums, so each input
 * also runs a second time with every checksum it can locate recomputed:
 * that lets mutations reach the decompressor, the metadata parsers and the
 * event decoder.  Each input is also read through wr_reader_seek (trailer,
 * footer index, the metadata chunks before the target). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_everything(const uint8_t *data, size_t size)
{
    wr_error err;
    wr_reader *r = wr_reader_open_memory(data, size, "fuzz.wrt", &err);
    if (r) {
        const wr_catalog *c = wr_reader_catalog(r);
        wr_batch b;
        uint64_t sum = 0;
        while (wr_reader_next(r, &b, &err) == 1) {
            /* Touch what consumers touch: every lane address and site. */
            for (size_t i = 0; i < b.count; i++) {
                const wr_event *ev = &b.events[i];
                if (ev->site)
                    sum += wr_catalog_site(c, ev->site)->line;
                if (ev->kind == WR_EV_ACCESS)
                    for (unsigned l = 0; l < 32; l++)
                        sum += wr_access_lane_addr(&ev->u.access, l);
            }
            wr_batch_release(&b);
        }
        (void)sum;
        wr_reader_close(r);
    }
    if (wr_verify_memory(data, size, "fuzz.wrt", NULL, &err) == 2 && err.offset < size)
        wrf_scan_after_fault(data, size, err.offset + 1, "fuzz.wrt", NULL, NULL);
    /* random access: trailer and index parsing, then reading on from there */
    r = wr_reader_open_memory(data, size, "fuzz.wrt", &err);
    if (r) {
        uint64_t seq = size > 8 ? wrf_get64(data + size / 2 - 4) % 4096 : 0;
        if (wr_reader_seek(r, seq, &err) >= 0) {
            wr_batch b;
            while (wr_reader_next(r, &b, &err) == 1)
                wr_batch_release(&b);
        }
        wr_reader_close(r);
    }
}

/* Recomputes the header, chunk-header, payload and trailer CRCs in place,
 * wherever the structure can be followed. */
static void fix_checksums(uint8_t *d, size_t size)
{
    if (size < 16 || memcmp(d, wrf_file_magic, WRF_MAGIC_LEN))
        return;
    uint32_t hs = wrf_get32(d + 12);
    if (hs < WRF_HEADER_MIN || hs > size)
        return;
    wrf_put32(d + hs - 4, wrf_crc32c(0, d, hs - 4));
    size_t at = hs;
    while (size - at >= WRF_CHUNK_HEADER_SIZE) {
        uint8_t *h = d + at;
        wrf_put32(h, WRF_CHUNK_MAGIC);
        uint32_t stored = wrf_get32(h + 12);
        if (stored > size - at - WRF_CHUNK_HEADER_SIZE)
            stored = (uint32_t)(size - at - WRF_CHUNK_HEADER_SIZE);
        wrf_put32(h + 12, stored);
        wrf_put32(h + 32, wrf_crc32c(0, h + WRF_CHUNK_HEADER_SIZE, stored));
        wrf_put32(h + 36, wrf_crc32c(0, h, 36));
        size_t next = at + WRF_CHUNK_HEADER_SIZE + stored;
        if (h[4] == WRF_CHUNK_INDEX && size - next >= WRF_TRAILER_SIZE) {
            uint8_t *t = d + next;
            wrf_put64(t, at);
            wrf_put32(t + 8, WRF_TRAILER_MAGIC);
            wrf_put32(t + 12, wrf_crc32c(0, t, 12));
            return;
        }
        at = next;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_everything(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    fix_checksums(fixed, size);
    read_everything(fixed, size);
    free(fixed);
    return 0;
}

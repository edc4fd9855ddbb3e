/* libFuzzer target for the binary .wrt reader: opens the input in memory,
 * reads every batch, then verifies it.  Random bytes almost never carry
 * valid CRC32Cs, which would stop the fuzzer at the checksums, so each input
 * also runs a second time with every checksum it can locate recomputed:
 * that lets mutations reach the decompressor, the metadata parsers and the
 * event decoder.  Each input is also read through wr_reader_seek (trailer,
 * footer index, the metadata chunks before the target), and as a stream,
 * which must agree with the memory reader. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"
#include "../format/read_outcome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The same bytes read as a stream (no size known beforehand) must give the
 * same events and the same verdict as read from memory. */
static void stream_agrees(const uint8_t *data, size_t size)
{
    if (!size)
        return;   /* fmemopen wants a buffer */
    wr_error e1, e2;
    read_outcome m = read_to_end(wr_reader_open_memory(data, size, "fuzz.wrt", &e1), &e1);
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return;
    read_outcome s = read_to_end(wr_reader_open_stream(f, "fuzz.wrt", &e2), &e2);
    bool same = s.rc == m.rc && s.events == m.events;
    if (same && m.rc < 0)
        same = s.err.offset == m.err.offset && !strcmp(s.err.msg, m.err.msg);
    else if (same)
        same = s.st.truncated == m.st.truncated && s.st.truncated_at == m.st.truncated_at &&
               s.st.truncated_bytes == m.st.truncated_bytes && s.st.has_footer == m.st.has_footer &&
               s.st.file_bytes == size &&
               s.st.stream_hash == wr_fnv1a64(WR_FNV1A64_INIT, data, size);
    if (!same) {
        fprintf(stderr, "stream and memory disagree: %d/%d, %llu/%llu events, '%s' / '%s'\n", s.rc,
                m.rc, (unsigned long long)s.events, (unsigned long long)m.events, s.err.msg,
                m.err.msg);
        abort();
    }
}

static void read_everything(const uint8_t *data, size_t size)
{
    wr_error err;
    stream_agrees(data, size);
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

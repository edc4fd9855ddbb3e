/* wr_verify_file: reads every chunk of a trace (checksums, decoding, catalog
 * references, footer index) and reports what is wrong with it. */
#include <fcntl.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format_internal.h"

static int verify_reader(wr_reader *r, FILE *report, wr_error *err)
{
    wr_batch batch;
    int rc;
    while ((rc = wr_reader_next(r, &batch, err)) == 1)
        wr_batch_release(&batch);
    if (rc < 0) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 2;
    }
    const wr_reader_stats *st = wr_reader_stats_get(r);
    if (st->truncated) {
        if (st->truncated_bytes)
            wr_error_at(err, wr_reader_path(r), st->truncated_at,
                        "truncated: the last %llu bytes are an incomplete chunk or footer "
                        "(the producer stopped while writing); everything before is sound",
                        (unsigned long long)st->truncated_bytes);
        else
            wr_error_at(err, wr_reader_path(r), st->truncated_at,
                        "truncated: no footer (the producer stopped after a complete chunk); "
                        "everything before is sound");
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 1;
    }
    return 0;
}

int wr_verify_file(const char *path, FILE *report, wr_error *err)
{
    wr_error local;
    if (!err)
        err = &local;
    int io_failure = 0;
    wr_reader *r = wrf_reader_open_file(path, err, &io_failure, 0);
    if (!r) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return io_failure ? -1 : 2;
    }
    int rc = verify_reader(r, report, err);
    wr_reader_close(r);
    return rc;
}

int wr_verify_memory(const void *data, size_t size, const char *name, FILE *report, wr_error *err)
{
    wr_error local;
    if (!err)
        err = &local;
    wr_reader *r = wr_reader_open_memory(data, size, name, err);
    if (!r) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 2;
    }
    int rc = verify_reader(r, report, err);
    wr_reader_close(r);
    return rc;
}

/* ---- after a fault: what else is sound ---- */

/* Scans d[from, size) for chunks whose header and payload checksums hold
 * (and whose LZ4 payload decompresses), as a reader would resynchronise:
 * at every "WRCK" magic, skipping each sound chunk whole.  Reports the
 * first few damaged chunk headers it meets on the way. */
int wrf_scan_after_fault(const uint8_t *d, size_t size, uint64_t from, const char *name,
                         FILE *report, wrf_scan_result *out)
{
    wrf_scan_result res = {0};
    res.resync_at = UINT64_MAX;
    size_t cap = 0;
    char *raw = NULL;
    uint64_t at = from;
    while (size >= WRF_CHUNK_HEADER_SIZE && at <= size - WRF_CHUNK_HEADER_SIZE) {
        if (wrf_get32(d + at) != WRF_CHUNK_MAGIC) {
            at++;
            continue;
        }
        wrf_chunk_header h;
        if (wrf_chunk_header_decode(d + at, &h)) {
            at++;   /* a magic without a sound header: payload bytes, or a damaged header */
            continue;
        }
        uint64_t payload_at = at + WRF_CHUNK_HEADER_SIZE;
        int sound = h.stored_size <= size - payload_at &&
                    wrf_crc32c(0, d + payload_at, h.stored_size) == h.payload_crc;
        if (sound && h.codec == WRF_CODEC_LZ4) {
            if (h.raw_size > WRF_CHUNK_RAW_MAX)
                sound = 0;
            else {
                if (h.raw_size > cap) {
                    char *nr = realloc(raw, h.raw_size);
                    if (!nr)
                        break;
                    raw = nr;
                    cap = h.raw_size;
                }
                int n = LZ4_decompress_safe((const char *)d + payload_at, raw, (int)h.stored_size,
                                            (int)h.raw_size);
                sound = n >= 0 && (uint32_t)n == h.raw_size;
            }
        } else if (sound && h.codec != WRF_CODEC_STORED) {
            sound = 0;
        }
        if (!sound) {
            if (report && res.damaged < 8)
                fprintf(report, "%s: offset %llu: chunk (type %u) with a sound header but a damaged "
                                "payload\n", name, (unsigned long long)at, h.type);
            res.damaged++;
            at++;
            continue;
        }
        if (res.resync_at == UINT64_MAX)
            res.resync_at = at;
        res.sound++;
        if (h.type == WRF_CHUNK_EVENTS)
            res.events += h.count;
        at = payload_at + h.stored_size;
    }
    free(raw);
    if (report) {
        if (res.sound)
            fprintf(report, "%s: after the fault: %llu sound chunks from offset %llu on (%llu events), "
                            "%llu damaged\n", name, (unsigned long long)res.sound,
                    (unsigned long long)res.resync_at, (unsigned long long)res.events,
                    (unsigned long long)res.damaged);
        else
            fprintf(report, "%s: after the fault: no sound chunk (%llu damaged)\n", name,
                    (unsigned long long)res.damaged);
    }
    if (out)
        *out = res;
    return 0;
}

int wr_verify_after_fault(const char *path, uint64_t fault_offset, FILE *report)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || st.st_size <= 0) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    void *d = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d == MAP_FAILED)
        return -1;
    int rc = wrf_scan_after_fault(d, size, fault_offset + 1, path, report, NULL);
    munmap(d, size);
    return rc;
}

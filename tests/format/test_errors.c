/* Bad input: version mismatch, compatibility with later minor versions,
 * missing footer, truncation, forged (checksum-valid) hostile fields.  Every
 * error must name the file and a byte offset. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format_internal.h"
#include "sample_trace.h"

static char tmp_path[256];

static void make_tmp(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/wr-format-errors-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(tmp_path);
    cr_assert(fd >= 0);
    close(fd);
}

static void drop_tmp(void) { unlink(tmp_path); }

TestSuite(errors, .init = make_tmp, .fini = drop_tmp);

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

/* "path: offset N: ..." */
static void assert_names_file_and_offset(const wr_error *err, const char *path, uint64_t offset)
{
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s: offset %llu: ", path, (unsigned long long)offset);
    cr_assert(!strncmp(err->msg, prefix, strlen(prefix)), "expected '%s...', got '%s'", prefix, err->msg);
    cr_assert_eq(err->offset, offset);
}

/* A growing in-memory file, to forge traces chunk by chunk. */
typedef struct forge {
    uint8_t data[1 << 16];
    size_t len;
} forge;

static size_t header_size_of(const uint8_t *file) { return wrf_get32(file + 12); }

/* Starts a forged file with the header of a real, empty trace. */
static void forge_begin(forge *f)
{
    wr_error err;
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w);
    wr_writer_abandon(w);
    size_t n;
    unsigned char *file = sample_read_file(tmp_path, &n);
    cr_assert(file && n == header_size_of(file));
    memcpy(f->data, file, n);
    f->len = n;
    free(file);
}

static uint64_t forge_chunk(forge *f, uint8_t type, uint32_t count, uint32_t aux, uint64_t first,
                            const void *payload, uint32_t size)
{
    wrf_chunk_header h = {.type = type, .codec = WRF_CODEC_STORED, .raw_size = size,
                          .stored_size = size, .count = count, .aux = aux, .first_index = first,
                          .payload_crc = wrf_crc32c(0, payload, size)};
    uint64_t at = f->len;
    wrf_chunk_header_encode(f->data + f->len, &h);
    memcpy(f->data + f->len + WRF_CHUNK_HEADER_SIZE, payload, size);
    f->len += WRF_CHUNK_HEADER_SIZE + size;
    return at;
}

/* Opens the forged file and reads until the end or an error. */
static int forge_read(forge *f, wr_error *err, uint64_t *events)
{
    write_file(tmp_path, f->data, f->len);
    wr_reader *r = wr_reader_open(tmp_path, err);
    if (!r)
        return -2;
    wr_batch b;
    int rc;
    *events = 0;
    while ((rc = wr_reader_next(r, &b, err)) == 1) {
        *events += b.count;
        wr_batch_release(&b);
    }
    wr_reader_close(r);
    return rc;
}

Test(errors, crc32c_known_answer)
{
    cr_assert_eq(wrf_crc32c(0, "123456789", 9), 0xE3069283u);
    cr_assert_eq(wrf_crc32c(wrf_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u, "CRC chains");
    /* both code paths (8-byte steps and tail bytes) agree on odd lengths */
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    uint32_t whole = wrf_crc32c(0, buf, sizeof buf);
    uint32_t split = wrf_crc32c(wrf_crc32c(0, buf, 333), buf + 333, sizeof buf - 333);
    cr_assert_eq(whole, split);
}

Test(errors, major_version_mismatch_is_refused_clearly)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 50, 0, &err), 0);
    size_t n;
    unsigned char *file = sample_read_file(tmp_path, &n);
    size_t hs = header_size_of(file);
    wrf_put16(file + 8, 2);
    wrf_put16(file + 10, 3);
    wrf_put32(file + hs - 4, wrf_crc32c(0, file, hs - 4));
    write_file(tmp_path, file, n);
    free(file);
    cr_assert_null(wr_reader_open(tmp_path, &err));
    assert_names_file_and_offset(&err, tmp_path, 8);
    cr_assert(strstr(err.msg, "version 2.3 is not supported"), "%s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2);
}

Test(errors, later_minor_version_is_read)
{
    /* A 1.7 file: extra header fields, an unknown chunk type, reserved
     * chunk-header bytes in use.  A 1.0 reader must read the events. */
    forge f;
    forge_begin(&f);
    size_t hs = header_size_of(f.data);
    memcpy(f.data + hs - 4, "NEWFIELD", 8);   /* 8 bytes of a future field */
    hs += 8;
    wrf_put16(f.data + 10, 7);
    wrf_put32(f.data + 12, (uint32_t)hs);
    wrf_put32(f.data + hs - 4, wrf_crc32c(0, f.data, hs - 4));
    f.len = hs;
    forge_chunk(&f, 100, 3, 0, 0, "future metadata", 15);
    uint8_t rec[8] = {WR_EV_DEVICE_SYNC};
    uint64_t at = forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 0, rec, 8);
    wrf_put16(f.data + at + 6, 0xbeef);          /* reserved chunk field */
    wrf_put32(f.data + at + 36, wrf_crc32c(0, f.data + at, 36));
    wr_error err = {0};
    uint64_t events;
    cr_assert_eq(forge_read(&f, &err, &events), 0, "%s", err.msg);
    cr_assert_eq(events, 1);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert_eq(wr_reader_header(r)->version_minor, 7);
    cr_assert_str_eq(wr_reader_header(r)->command, sample_header().command);
    wr_reader_close(r);
}

Test(errors, missing_footer_reads_every_flushed_chunk)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    sample_define_catalog(w);
    uint64_t lanes[32];
    for (uint64_t i = 0; i < 1000; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        cr_assert_eq(wr_writer_event(w, &ev, &err), 0);
        if (i == 599)
            cr_assert_eq(wr_writer_flush(w, &err), 0);
    }
    wr_writer_abandon(w);   /* the producer crashes: 400 events never written */
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    uint64_t seen = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t k = 0; k < b.count; k++) {
            wr_event want;
            char why[200];
            sample_event(seen + k, &want, lanes);
            cr_assert(sample_events_equal(&want, &b.events[k], why, sizeof why), "%s", why);
        }
        seen += b.count;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(seen, 600);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_eq(st->truncated, 1);
    cr_assert_eq(st->has_footer, 0);
    cr_assert_eq(st->truncated_bytes, 0);
    cr_assert_eq(st->truncated_at, st->file_bytes);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 1);
    assert_names_file_and_offset(&err, tmp_path, err.offset);
    cr_assert(strstr(err.msg, "no footer"), "%s", err.msg);
}

Test(errors, crash_mid_chunk_reads_up_to_last_complete_chunk)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 2000, 2048, &err), 0);
    /* find the offset of the 10th event chunk, cut inside it */
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch b;
    uint64_t before = 0, cut_chunk = 0;
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(wr_reader_next(r, &b, &err), 1);
        if (i < 9)
            before += b.count;
        cut_chunk = b.chunk_offset;
        wr_batch_release(&b);
    }
    wr_reader_close(r);
    size_t n;
    unsigned char *file = sample_read_file(tmp_path, &n);
    write_file(tmp_path, file, cut_chunk + WRF_CHUNK_HEADER_SIZE + 100);
    free(file);
    r = wr_reader_open(tmp_path, &err);
    uint64_t seen = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        seen += b.count;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(seen, before);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_eq(st->truncated, 1);
    cr_assert_eq(st->truncated_at, cut_chunk);
    cr_assert_eq(st->truncated_bytes, WRF_CHUNK_HEADER_SIZE + 100);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 1);
    assert_names_file_and_offset(&err, tmp_path, cut_chunk);
}

Test(errors, not_a_trace)
{
    wr_error err = {0};
    write_file(tmp_path, "", 0);
    cr_assert_null(wr_reader_open(tmp_path, &err));
    assert_names_file_and_offset(&err, tmp_path, 0);
    write_file(tmp_path, "PK\3\4 this is a zip file, not a trace......", 40);
    cr_assert_null(wr_reader_open(tmp_path, &err));
    assert_names_file_and_offset(&err, tmp_path, 0);
    cr_assert(strstr(err.msg, "bad magic"), "%s", err.msg);
    cr_assert(!strstr(err.msg, "text"), "binary junk is not called text: %s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2);
    /* a text trace read as a binary one: the message says how to convert it */
    const char text[] = "alloc data global 4\nlaunch k grid=1 block=32\n";
    write_file(tmp_path, text, sizeof text - 1);
    cr_assert_null(wr_reader_open(tmp_path, &err));
    assert_names_file_and_offset(&err, tmp_path, 0);
    cr_assert(strstr(err.msg, "bad magic") && strstr(err.msg, "warprace asm"), "%s", err.msg);
    cr_assert_null(wr_reader_open("/nonexistent/x.wrt", &err));
    assert_names_file_and_offset(&err, "/nonexistent/x.wrt", 0);
    cr_assert_eq(wr_verify_file("/nonexistent/x.wrt", NULL, &err), -1);
    cr_assert(strstr(err.msg, "No such file"), "%s", err.msg);
    errno = ENOENT;   /* a stale errno must not speak for the directory */
    cr_assert_null(wr_reader_open("/tmp", &err), "a directory is not a trace");
    assert_names_file_and_offset(&err, "/tmp", 0);
    cr_assert(strstr(err.msg, "is a directory"), "%s", err.msg);
    /* a character device is read as a stream (as a named pipe is): empty */
    cr_assert_null(wr_reader_open("/dev/null", &err));
    assert_names_file_and_offset(&err, "/dev/null", 0);
    cr_assert(strstr(err.msg, "too short for a warprace trace (0 bytes)"), "%s", err.msg);
}

Test(errors, hostile_header_size)
{
    forge f;
    forge_begin(&f);
    wrf_put32(f.data + 12, 0xfffffff0u);
    wr_error err = {0};
    uint64_t events;
    cr_assert_eq(forge_read(&f, &err, &events), -2);
    assert_names_file_and_offset(&err, tmp_path, 12);
    wrf_put32(f.data + 12, 4096);   /* in range, past the end of the file */
    cr_assert_eq(forge_read(&f, &err, &events), -2);
    cr_assert(strstr(err.msg, "ends inside"), "%s", err.msg);
}

Test(errors, hostile_chunk_sizes_are_refused_before_allocating)
{
    static const struct {
        uint8_t type, codec;
        uint32_t raw, stored, count, aux;
        uint64_t field_offset;
        const char *needle;
    } cases[] = {
        {WRF_CHUNK_STRINGS, 0, 0xfffffff0u, 0xfffffff0u, 1, 0, 8, "exceeds"},
        {WRF_CHUNK_STRINGS, 1, 64u << 20, 100, 1, 0, 12, "impossible"},
        {WRF_CHUNK_STRINGS, 0, 100, 99, 1, 0, 12, "impossible"},
        {WRF_CHUNK_STRINGS, 2, 100, 100, 1, 0, 5, "codec"},
        {WRF_CHUNK_EVENTS, 0, 16, 16, 1000, 0, 8, "inconsistent"},
        {WRF_CHUNK_EVENTS, 0, 100000, 100000, 2, 0, 8, "inconsistent"},
        {WRF_CHUNK_EVENTS, 0, 800, 800, 100, 101, 8, "inconsistent"},
        {WRF_CHUNK_EVENTS, 0, 0, 0, 0, 0, 8, "inconsistent"},
        {WRF_CHUNK_EVENTS, 0, 9u << 20, 9u << 20, 1u << 20, 0, 8, "inconsistent"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        forge f;
        forge_begin(&f);
        wrf_chunk_header h = {.type = cases[i].type, .codec = cases[i].codec,
                              .raw_size = cases[i].raw, .stored_size = cases[i].stored,
                              .count = cases[i].count, .aux = cases[i].aux};
        uint64_t at = f.len;
        wrf_chunk_header_encode(f.data + f.len, &h);
        f.len += WRF_CHUNK_HEADER_SIZE;
        memset(f.data + f.len, 0, 200);
        f.len += 200;
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "case %zu accepted", i);
        assert_names_file_and_offset(&err, tmp_path, at + cases[i].field_offset);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: %s", i, err.msg);
    }
    /* A sound header announcing more payload than the file holds is a
     * truncated tail, not a reason to allocate 8 MiB. */
    forge f;
    forge_begin(&f);
    wrf_chunk_header h = {.type = WRF_CHUNK_EVENTS, .raw_size = 8u << 20, .stored_size = 8u << 20,
                          .count = 1u << 20};
    wrf_chunk_header_encode(f.data + f.len, &h);
    f.len += WRF_CHUNK_HEADER_SIZE + 100;
    wr_error err = {0};
    uint64_t events;
    cr_assert_eq(forge_read(&f, &err, &events), 0, "%s", err.msg);
}

Test(errors, forged_records_are_rejected_with_their_position)
{
    static const struct {
        uint8_t rec[64];
        uint32_t size;
        const char *needle;
    } cases[] = {
        {{0}, 8, "unknown event kind"},
        {{WR_EV_KIND_MAX + 1}, 8, "unknown event kind"},
        {{WR_EV_DEVICE_SYNC, 1}, 8, "reserved"},
        {{WR_EV_DEVICE_SYNC, 0, 0, 0, 1}, 8, "undefined source site"},
        {{WR_EV_KERNEL_END}, 8, "overruns"},
        {{WR_EV_ALLOC, 0, 0, 0, 0, 0, 0, 0, 1}, 12, "undefined allocation"},
        {{WR_EV_FENCE, 0, 5}, 24, "out of range"},
        {{WR_EV_HOST_COPY, 0, 0, 2}, 36, "out of range"},
        /* bytes = 2^39 + 1 (+24) */
        {{WR_EV_HOST_COPY, [24] = 1, [28] = 0x80}, 36, "larger than 2^39"},
        /* dst = 2^64 - 16 (+8), bytes = 32 (+24) */
        {{WR_EV_HOST_COPY, [8] = 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, [24] = 32}, 36,
         "wrapping"},
        {{WR_EV_ACCESS, 3}, 28, "out of range"},                       /* addr mode 3 */
        {{WR_EV_ACCESS, 0x50}, 28, "out of range"},                    /* size 32 */
        {{WR_EV_ACCESS, 0x04 | 0x80}, 28, "out of range"},             /* NARROW on uniform */
        {{WR_EV_ACCESS, 0x04, 2}, 28, "inconsistent atomic"},          /* RMW without op */
        {{WR_EV_ACCESS, 0x04, 0, 1}, 28, "inconsistent atomic"},       /* op on a load */
        {{WR_EV_ACCESS, 0x04, 0, 0x80}, 28, "out of range"},
        {{WR_EV_ACCESS, 0x04}, 27, "overruns"},
        {{WR_EV_ACCESS, 0x01 | 0x04}, 28, "overruns"},                 /* strided needs 16 */
        {{WR_EV_ACCESS, 0x08, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
          /* mask */ 1, 0, 0, 0, /* cas */ 3, 0, 0, 0}, 32, "inactive"},
        /* warp 32 (+16): a block has at most 32 warps; warp 0xffffffff
         * once crashed vc, which made a block of warp + 1 = 0 warps */
        {{WR_EV_ACCESS, 0x04, [16] = 32}, 28, "warp index at or past 32"},
        {{WR_EV_ACCESS, 0x04, [16] = 0xff, 0xff, 0xff, 0xff}, 28, "warp index at or past 32"},
        {{WR_EV_BARRIER, [16] = 32}, 32, "warp index at or past 32"},
        {{WR_EV_WARP_SYNC, [16] = 32}, 24, "warp index at or past 32"},
        {{WR_EV_FENCE, 0, WR_SCOPE_BLOCK, WR_ORDER_SC, [16] = 32}, 24, "warp index at or past 32"},
        /* block_dim (+28) 1025 x 1 x 1 */
        {{WR_EV_KERNEL_LAUNCH, [28] = 0x01, 0x04, 0, 0, 1, 0, 0, 0, 1}, 60,
         "more than 1024 threads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        forge f;
        forge_begin(&f);
        uint8_t ok[8] = {WR_EV_DEVICE_SYNC};
        uint8_t payload[80];
        memcpy(payload, ok, 8);
        memcpy(payload + 8, cases[i].rec, cases[i].size);
        uint64_t at = forge_chunk(&f, WRF_CHUNK_EVENTS, 2, 0, 0, payload, 8 + cases[i].size);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "case %zu accepted", i);
        assert_names_file_and_offset(&err, tmp_path, at + WRF_CHUNK_HEADER_SIZE);
        cr_assert(strstr(err.msg, "record 1 (payload byte 8)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: %s", i, err.msg);
    }
}

/* A barrier record (32 bytes): b1 = scope, barrier_id at body +16. */
static void forge_barrier(uint8_t rec[32], uint8_t b1, uint32_t id)
{
    memset(rec, 0, 32);
    rec[0] = WR_EV_BARRIER;
    rec[1] = b1;
    wrf_put32(rec + 8 + 12, WR_FULL_MASK);
    wrf_put32(rec + 8 + 16, id);
    wrf_put32(rec + 8 + 20, 256);
}

Test(errors, forged_barrier_scopes)
{
    /* b1 of a BARRIER is its scope: 0..3 (1, an mbarrier, is 1.3's:
     * forged_mbarriers); cluster and grid barriers have no id */
    static const struct {
        uint8_t b1;
        uint32_t id;
        const char *needle;
    } bad[] = {
        {4, 0, "bad barrier scope"},
        {5, 0, "bad barrier scope"},
        {0xff, 0, "bad barrier scope"},
        {WR_BAR_CLUSTER, 3, "cluster or grid barrier with a barrier id"},
        {WR_BAR_GRID, 1, "cluster or grid barrier with a barrier id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        forge f;
        forge_begin(&f);
        uint8_t payload[8 + 32] = {WR_EV_DEVICE_SYNC};
        forge_barrier(payload + 8, bad[i].b1, bad[i].id);
        uint64_t at = forge_chunk(&f, WRF_CHUNK_EVENTS, 2, 0, 0, payload, sizeof payload);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "case %zu accepted", i);
        assert_names_file_and_offset(&err, tmp_path, at + WRF_CHUNK_HEADER_SIZE);
        cr_assert(strstr(err.msg, "record 1 (payload byte 8)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
        cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2, "case %zu", i);
    }
    /* b3 stays reserved (b2 is the mode, 1.3: forged_barrier_modes) */
    forge f;
    forge_begin(&f);
    uint8_t rec[32];
    forge_barrier(rec, WR_BAR_CLUSTER, 0);
    rec[3] = 1;
    forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 0, rec, sizeof rec);
    wr_error err = {0};
    uint64_t events;
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "reserved record byte"), "%s", err.msg);

    /* the valid scopes, in a file that says 1.0 (its block barriers are
     * those of every 1.0 file) */
    forge_begin(&f);
    size_t hs = header_size_of(f.data);
    wrf_put16(f.data + 10, 0);
    wrf_put32(f.data + hs - 4, wrf_crc32c(0, f.data, hs - 4));
    uint8_t recs[3 * 32];
    forge_barrier(recs, WR_BAR_BLOCK, 15);
    forge_barrier(recs + 32, WR_BAR_CLUSTER, 0);
    forge_barrier(recs + 64, WR_BAR_GRID, 0);
    forge_chunk(&f, WRF_CHUNK_EVENTS, 3, 0, 0, recs, sizeof recs);
    write_file(tmp_path, f.data, f.len);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_header(r)->version_minor, 0);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.count, 3);
    static const uint8_t scope[3] = {WR_BAR_BLOCK, WR_BAR_CLUSTER, WR_BAR_GRID};
    for (int k = 0; k < 3; k++) {
        const wr_barrier *bar = &b.events[k].u.barrier;
        cr_assert_eq(b.events[k].kind, WR_EV_BARRIER);
        cr_assert_eq(bar->scope, scope[k], "record %d: scope %u", k, bar->scope);
        cr_assert_eq(bar->barrier_id, k ? 0u : 15u);
        cr_assert_eq(bar->active_mask, WR_FULL_MASK);
        cr_assert_eq(bar->expected, 256);
    }
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    wr_reader_close(r);
}

/* A barrier record of format 1.3: b1 = scope, b2 = mode, expected at body
 * +20. */
static void forge_barrier_mode(uint8_t rec[32], uint8_t b1, uint8_t b2, uint32_t expected)
{
    forge_barrier(rec, b1, 0);
    rec[2] = b2;
    wrf_put32(rec + 8 + 20, expected);
}

Test(errors, forged_barrier_modes)
{
    /* b2 of a BARRIER is its mode (1.3): 0..4, and only where it fits the
     * scope and the count (wr_barrier_mode_problem); init (4) is an
     * mbarrier's alone */
    static const struct {
        uint8_t b1, b2;
        uint32_t expected;
        const char *needle;
    } bad[] = {
        {WR_BAR_CLUSTER, 5, 256, "barrier mode out of range"},
        {WR_BAR_BLOCK, 0xff, 256, "barrier mode out of range"},
        {WR_BAR_BLOCK, WR_BARMODE_INIT, 256, "an init of a barrier other than an mbarrier"},
        {WR_BAR_CLUSTER, WR_BARMODE_INIT, 1, "an init of a barrier other than an mbarrier"},
        {WR_BAR_GRID, WR_BARMODE_INIT, 1, "an init of a barrier other than an mbarrier"},
        {WR_BAR_BLOCK, WR_BARMODE_WAIT, 0,
         "a wait at a block barrier (a block barrier's wait is its sync)"},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE_RELAXED, 256,
         "a relaxed arrive at a barrier other than a cluster's"},
        {WR_BAR_GRID, WR_BARMODE_ARRIVE_RELAXED, 256,
         "a relaxed arrive at a barrier other than a cluster's"},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE, 0,
         "a block barrier's arrive without its thread count (expected 0)"},
        {WR_BAR_CLUSTER, WR_BARMODE_WAIT, 256,
         "a barrier wait with a thread count (expected must be 0)"},
        {WR_BAR_GRID, WR_BARMODE_WAIT, 1, "a barrier wait with a thread count (expected must be 0)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        forge f;
        forge_begin(&f);
        uint8_t payload[8 + 32] = {WR_EV_DEVICE_SYNC};
        forge_barrier_mode(payload + 8, bad[i].b1, bad[i].b2, bad[i].expected);
        uint64_t at = forge_chunk(&f, WRF_CHUNK_EVENTS, 2, 0, 0, payload, sizeof payload);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "case %zu accepted", i);
        assert_names_file_and_offset(&err, tmp_path, at + WRF_CHUNK_HEADER_SIZE);
        cr_assert(strstr(err.msg, "record 1 (payload byte 8)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
        cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2, "case %zu", i);
    }

    /* the valid modes, in files that say 1.0 and 1.2 as in one of 1.3: the
     * record says what it uses */
    static const struct {
        uint8_t scope, mode;
        uint32_t expected;
    } ok[] = {
        {WR_BAR_BLOCK, WR_BARMODE_SYNC, 256},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE, 64},
        {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0},
        {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED, 512},
        {WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0},
        {WR_BAR_GRID, WR_BARMODE_ARRIVE, 4096},
        {WR_BAR_GRID, WR_BARMODE_WAIT, 0},
    };
    enum { N = sizeof ok / sizeof ok[0] };
    static const uint16_t minors[] = {0, 2, WR_FORMAT_MINOR};
    for (size_t m = 0; m < sizeof minors / sizeof minors[0]; m++) {
        forge f;
        forge_begin(&f);
        size_t hs = header_size_of(f.data);
        wrf_put16(f.data + 10, minors[m]);
        wrf_put32(f.data + hs - 4, wrf_crc32c(0, f.data, hs - 4));
        uint8_t recs[N * 32];
        for (size_t k = 0; k < N; k++)
            forge_barrier_mode(recs + 32 * k, ok[k].scope, ok[k].mode, ok[k].expected);
        forge_chunk(&f, WRF_CHUNK_EVENTS, N, 0, 0, recs, sizeof recs);
        write_file(tmp_path, f.data, f.len);
        wr_error err = {0};
        wr_reader *r = wr_reader_open(tmp_path, &err);
        cr_assert(r, "%s", err.msg);
        cr_assert_eq(wr_reader_header(r)->version_minor, minors[m]);
        wr_batch b;
        cr_assert_eq(wr_reader_next(r, &b, &err), 1, "minor %u: %s", minors[m], err.msg);
        cr_assert_eq(b.count, N);
        for (size_t k = 0; k < N; k++) {
            const wr_barrier *bar = &b.events[k].u.barrier;
            cr_assert_eq(bar->mode, ok[k].mode, "minor %u, record %zu: mode %u", minors[m], k,
                         bar->mode);
            cr_assert_eq(bar->scope, ok[k].scope, "record %zu", k);
            cr_assert_eq(bar->expected, ok[k].expected, "record %zu", k);
        }
        wr_batch_release(&b);
        cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
        wr_reader_close(r);
    }
}

/* An mbarrier record (format 1.3): scope 1, b2 = mode, barrier_id = its
 * shared offset, expected = count or parity. */
static void forge_mbarrier(uint8_t rec[32], uint8_t mode, uint32_t offset, uint32_t expected)
{
    forge_barrier_mode(rec, WR_BAR_MBARRIER, mode, expected);
    wrf_put32(rec + 8 + 16, offset);
}

Test(errors, forged_mbarriers)
{
    /* what wr_barrier_mode_problem says of an mbarrier: an offset that is
     * 8-aligned and below 2^24, no sync, counts below 2^20 (an init's not
     * 0), a parity of 0 or 1 */
    static const struct {
        uint8_t mode;
        uint32_t offset, expected;
        const char *needle;
    } bad[] = {
        {WR_BARMODE_SYNC, 0, 0, "an mbarrier has no sync (arrive, then wait)"},
        {WR_BARMODE_SYNC, 64, 256, "an mbarrier has no sync (arrive, then wait)"},
        {WR_BARMODE_ARRIVE, 4, 0, "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_WAIT, 0x101, 0, "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_INIT, WR_SHARED_LIMIT, 1,
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_ARRIVE, UINT32_MAX - 7, 0,
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_INIT, 0, 0, "an mbarrier's init count out of range (1 .. 2^20 - 1)"},
        {WR_BARMODE_INIT, 8, WR_MBARRIER_COUNT_MAX + 1,
         "an mbarrier's init count out of range (1 .. 2^20 - 1)"},
        {WR_BARMODE_ARRIVE, 8, WR_MBARRIER_COUNT_MAX + 1,
         "an mbarrier arrive's count out of range (below 2^20)"},
        {WR_BARMODE_ARRIVE_RELAXED, 8, UINT32_MAX,
         "an mbarrier arrive's count out of range (below 2^20)"},
        {WR_BARMODE_WAIT, 8, 2, "an mbarrier wait's parity is not 0 or 1"},
        {WR_BARMODE_WAIT, 8, 256, "an mbarrier wait's parity is not 0 or 1"},
        {5, 8, 0, "barrier mode out of range"},
        {0xff, 8, 0, "barrier mode out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        forge f;
        forge_begin(&f);
        uint8_t payload[8 + 32] = {WR_EV_DEVICE_SYNC};
        forge_mbarrier(payload + 8, bad[i].mode, bad[i].offset, bad[i].expected);
        uint64_t at = forge_chunk(&f, WRF_CHUNK_EVENTS, 2, 0, 0, payload, sizeof payload);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "case %zu accepted", i);
        assert_names_file_and_offset(&err, tmp_path, at + WRF_CHUNK_HEADER_SIZE);
        cr_assert(strstr(err.msg, "record 1 (payload byte 8)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
        cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2, "case %zu", i);
    }

    /* b3 stays reserved on an mbarrier too */
    forge f;
    forge_begin(&f);
    uint8_t rec[32];
    forge_mbarrier(rec, WR_BARMODE_ARRIVE, 8, 0);
    rec[3] = 1;
    forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 0, rec, sizeof rec);
    wr_error err = {0};
    uint64_t events;
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "reserved record byte"), "%s", err.msg);

    /* the valid ones at the edges of each range, in files that say 1.0 and
     * 1.2 as in one of 1.3: the record says what it uses, and an
     * mbarrier's id (its offset) is no named barrier's */
    static const struct {
        uint8_t mode;
        uint32_t offset, expected;
    } ok[] = {
        {WR_BARMODE_INIT, 0, 1},
        {WR_BARMODE_INIT, WR_SHARED_LIMIT - 8, WR_MBARRIER_COUNT_MAX},
        {WR_BARMODE_ARRIVE, 8, 0},
        {WR_BARMODE_ARRIVE, 0x100, WR_MBARRIER_COUNT_MAX},
        {WR_BARMODE_ARRIVE_RELAXED, 0x100, 0},
        {WR_BARMODE_ARRIVE_RELAXED, 0x108, 3},
        {WR_BARMODE_WAIT, 0x100, 0},
        {WR_BARMODE_WAIT, WR_SHARED_LIMIT - 8, 1},
    };
    enum { N = sizeof ok / sizeof ok[0] };
    static const uint16_t minors[] = {0, 2, WR_FORMAT_MINOR};
    for (size_t m = 0; m < sizeof minors / sizeof minors[0]; m++) {
        forge_begin(&f);
        size_t hs = header_size_of(f.data);
        wrf_put16(f.data + 10, minors[m]);
        wrf_put32(f.data + hs - 4, wrf_crc32c(0, f.data, hs - 4));
        uint8_t recs[N * 32];
        for (size_t k = 0; k < N; k++)
            forge_mbarrier(recs + 32 * k, ok[k].mode, ok[k].offset, ok[k].expected);
        forge_chunk(&f, WRF_CHUNK_EVENTS, N, 0, 0, recs, sizeof recs);
        write_file(tmp_path, f.data, f.len);
        wr_reader *r = wr_reader_open(tmp_path, &err);
        cr_assert(r, "%s", err.msg);
        cr_assert_eq(wr_reader_header(r)->version_minor, minors[m]);
        wr_batch b;
        cr_assert_eq(wr_reader_next(r, &b, &err), 1, "minor %u: %s", minors[m], err.msg);
        cr_assert_eq(b.count, N);
        for (size_t k = 0; k < N; k++) {
            const wr_barrier *bar = &b.events[k].u.barrier;
            cr_assert_eq(bar->scope, WR_BAR_MBARRIER, "record %zu", k);
            cr_assert_eq(bar->mode, ok[k].mode, "minor %u, record %zu: mode %u", minors[m], k,
                         bar->mode);
            cr_assert_eq(bar->barrier_id, ok[k].offset, "record %zu", k);
            cr_assert_eq(bar->expected, ok[k].expected, "record %zu", k);
        }
        wr_batch_release(&b);
        cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
        wr_reader_close(r);
    }
}

/* An ALLOCS entry (24 bytes): base, size, no name, space. */
static void forge_alloc(uint8_t entry[24], uint8_t space)
{
    memset(entry, 0, 24);
    wrf_put64(entry, 0x400);
    wrf_put64(entry + 8, 256);
    entry[20] = space;
}

Test(errors, forged_dsmem_allocation_is_rejected)
{
    /* DSMEM names other blocks' SHARED allocations: an allocation of its own
     * is corrupt, whatever the file's minor version */
    for (uint8_t space = WR_SPACE_DSMEM; space <= WR_SPACE_DSMEM + 1; space++) {
        forge f;
        forge_begin(&f);
        uint8_t entry[24];
        forge_alloc(entry, space);
        uint64_t at = forge_chunk(&f, WRF_CHUNK_ALLOCS, 1, 0, 1, entry, sizeof entry);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), -1, "space %u accepted", space);
        assert_names_file_and_offset(&err, tmp_path, at + WRF_CHUNK_HEADER_SIZE);
        char want[64];
        snprintf(want, sizeof want, "allocation 1 has a bad space %u", space);
        cr_assert(strstr(err.msg, want), "%s", err.msg);
        cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2);
    }
    /* the same entry in the spaces an allocation may lie in reads */
    for (uint8_t space = 0; space <= WR_ALLOC_SPACE_MAX; space++) {
        forge f;
        forge_begin(&f);
        uint8_t entry[24];
        forge_alloc(entry, space);
        forge_chunk(&f, WRF_CHUNK_ALLOCS, 1, 0, 1, entry, sizeof entry);
        uint8_t rec[12] = {WR_EV_ALLOC, [8] = 1};
        forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 0, rec, sizeof rec);
        wr_error err = {0};
        uint64_t events;
        cr_assert_eq(forge_read(&f, &err, &events), 0, "space %u: %s", space, err.msg);
        cr_assert_eq(events, 1);
    }
}

/* A full-warp UNIFORM 4-byte load (28 bytes) from the DSMEM address of
 * owner block `owner`, offset `offset`, with memory order `order`. */
static void forge_dsmem_load(uint8_t rec[28], uint32_t owner, uint32_t offset, uint8_t order)
{
    memset(rec, 0, 28);
    rec[0] = WR_EV_ACCESS;
    rec[1] = 0x04 | 2 << 4 | WR_ADDR_UNIFORM;
    rec[2] = (uint8_t)(WR_OP_LOAD | WR_SPACE_DSMEM << 3 | order << 5);
    wrf_put32(rec + 8, 1);       /* launch */
    wrf_put32(rec + 12, 6);      /* block */
    wrf_put32(rec + 16, 2);      /* warp */
    wrf_put64(rec + 20, wr_dsmem_addr(owner, offset));
}

Test(errors, dsmem_access_reads_whatever_the_minor_version)
{
    /* As cluster barriers in a file that says 1.0 (forged_barrier_scopes):
     * a record is judged by what it holds, not by the file's version. */
    for (uint16_t minor = 0; minor <= WR_FORMAT_MINOR; minor++) {
        forge f;
        forge_begin(&f);
        size_t hs = header_size_of(f.data);
        wrf_put16(f.data + 10, minor);
        wrf_put32(f.data + hs - 4, wrf_crc32c(0, f.data, hs - 4));
        uint8_t recs[2 * 28];
        forge_dsmem_load(recs, 7, 0x80, WR_ORDER_WEAK);
        forge_dsmem_load(recs + 28, UINT32_MAX, WR_SHARED_LIMIT - 4, WR_ORDER_SC);
        forge_chunk(&f, WRF_CHUNK_EVENTS, 2, 0, 0, recs, sizeof recs);
        write_file(tmp_path, f.data, f.len);
        wr_error err = {0};
        wr_reader *r = wr_reader_open(tmp_path, &err);
        cr_assert(r, "%s", err.msg);
        cr_assert_eq(wr_reader_header(r)->version_minor, minor);
        wr_batch b;
        cr_assert_eq(wr_reader_next(r, &b, &err), 1, "minor %u: %s", minor, err.msg);
        cr_assert_eq(b.count, 2);
        const wr_access *a = &b.events[0].u.access, *c = &b.events[1].u.access;
        cr_assert_eq(a->space, WR_SPACE_DSMEM, "minor %u: space %u", minor, a->space);
        cr_assert_eq(a->order, WR_ORDER_WEAK);
        cr_assert_eq(a->block, 6);
        cr_assert_eq(wr_dsmem_block(a->base), 7);
        cr_assert_eq(wr_dsmem_offset(a->base), 0x80);
        cr_assert_eq(c->space, WR_SPACE_DSMEM);
        cr_assert_eq(c->order, WR_ORDER_SC, "the space bits leave the order alone");
        cr_assert_eq(c->base, wr_dsmem_addr(UINT32_MAX, WR_SHARED_LIMIT - 4));
        wr_batch_release(&b);
        cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
        wr_reader_close(r);
    }
}

/* A shared offset at or past WR_SHARED_LIMIT (its bytes, in any lane) is
 * an error at the record's offset, SHARED or DSMEM; the writer refuses it. */
Test(errors, shared_offsets_past_the_limit_are_rejected)
{
    static const struct { uint8_t space; uint32_t offset; bool ok; } cases[] = {
        {WR_SPACE_DSMEM, WR_SHARED_LIMIT - 4, true},
        {WR_SPACE_DSMEM, WR_SHARED_LIMIT - 3, false},   /* its last byte past the limit */
        {WR_SPACE_DSMEM, UINT32_MAX - 3, false},
        {WR_SPACE_SHARED, WR_SHARED_LIMIT - 4, true},
        {WR_SPACE_SHARED, WR_SHARED_LIMIT, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        forge f;
        forge_begin(&f);
        uint8_t rec[28];
        forge_dsmem_load(rec, 3, cases[i].offset, WR_ORDER_WEAK);
        if (cases[i].space == WR_SPACE_SHARED) {   /* the plain offset, space bits 1 */
            rec[2] = (uint8_t)(WR_OP_LOAD | WR_SPACE_SHARED << 3);
            wrf_put64(rec + 20, cases[i].offset);
        }
        forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 0, rec, sizeof rec);
        wr_error err = {0};
        uint64_t events;
        int rc = forge_read(&f, &err, &events);
        if (cases[i].ok) {
            cr_assert_eq(rc, 0, "case %zu: %s", i, err.msg);
            continue;
        }
        cr_assert_neq(rc, 0, "case %zu: offset %#x read", i, cases[i].offset);
        cr_assert(strstr(err.msg, "shared memory offset at or past 16 MiB") && strstr(err.msg, "offset"),
                  "case %zu: %s", i, err.msg);
    }
    /* the writer: a strided access whose last lane crosses the limit */
    wr_header h = sample_header();
    wr_error err = {0};
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    wr_event ev = {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .active_mask = WR_FULL_MASK,
                   .op = WR_OP_STORE, .space = WR_SPACE_SHARED, .size = 4,
                   .addr_mode = WR_ADDR_STRIDED, .base = WR_SHARED_LIMIT - 64, .stride = 4}};
    cr_assert_neq(wr_writer_event(w, &ev, &err), 0);
    cr_assert(strstr(err.msg, "shared memory offset"), "%s", err.msg);
    ev.u.access.base = WR_SHARED_LIMIT - 128;
    cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
    wr_writer_abandon(w);
}

Test(errors, forged_metadata_is_checked)
{
    wr_error err = {0};
    uint64_t events;
    forge f;
    forge_begin(&f);
    uint8_t kernel[4] = {5};   /* names string 5: undefined */
    forge_chunk(&f, WRF_CHUNK_KERNELS, 1, 0, 1, kernel, 4);
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "undefined string"), "%s", err.msg);

    forge_begin(&f);
    uint8_t str[6] = {2, 0, 0, 0, 'a', 0};
    forge_chunk(&f, WRF_CHUNK_STRINGS, 1, 0, 1, str, 6);
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "NUL"), "%s", err.msg);

    forge_begin(&f);
    uint8_t str2[5] = {1, 0, 0, 0, 'a'};
    forge_chunk(&f, WRF_CHUNK_STRINGS, 1, 0, 2, str2, 5);   /* ids must start at 1 */
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "expected 1"), "%s", err.msg);

    forge_begin(&f);
    forge_chunk(&f, WRF_CHUNK_STRINGS, 2, 0, 1, str2, 5);   /* count says 2 */
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "overruns"), "%s", err.msg);

    forge_begin(&f);
    uint8_t mod[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    forge_chunk(&f, WRF_CHUNK_MODULES, 1, 0, 1, mod, 16);   /* 2^64-1 byte image */
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "overruns"), "%s", err.msg);

    forge_begin(&f);
    uint8_t rec[8] = {WR_EV_DEVICE_SYNC};
    forge_chunk(&f, WRF_CHUNK_EVENTS, 1, 0, 5, rec, 8);     /* seq must start at 0 */
    cr_assert_eq(forge_read(&f, &err, &events), -1);
    cr_assert(strstr(err.msg, "expected 0"), "%s", err.msg);
}

Test(errors, bytes_after_the_footer)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 100, 0, &err), 0);
    FILE *f = fopen(tmp_path, "ab");
    fputs("junk", f);
    fclose(f);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2);
    cr_assert(strstr(err.msg, "after the footer"), "%s", err.msg);
}

Test(errors, reader_stays_failed)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 3000, 1024, &err), 0);
    size_t n;
    unsigned char *file = sample_read_file(tmp_path, &n);
    file[n / 2] ^= 0x10;
    write_file(tmp_path, file, n);
    free(file);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch b;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1)
        wr_batch_release(&b);
    cr_assert_eq(rc, -1);
    wr_error again = {0};
    cr_assert_eq(wr_reader_next(r, &b, &again), -1);
    cr_assert_str_eq(again.msg, err.msg);
    cr_assert_null(b.events);
    wr_reader_close(r);
}

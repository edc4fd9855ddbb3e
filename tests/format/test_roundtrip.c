/* Writer -> reader round trips: header, catalog, every event kind and lane
 * address encoding, chunk boundaries, empty and multi-chunk traces,
 * deterministic output. */
#include <criterion/criterion.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format_internal.h"
#include "sample_trace.h"

static char tmp_path[256];

static void make_tmp(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/wr-format-test-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(tmp_path);
    cr_assert(fd >= 0);
    close(fd);
}

static void drop_tmp(void) { unlink(tmp_path); }

TestSuite(roundtrip, .init = make_tmp, .fini = drop_tmp);

/* Reads the whole trace at path back and compares it with the sample stream. */
static void check_sample(const char *path, uint64_t events, int expect_footer)
{
    wr_error err = {0};
    wr_reader *r = wr_reader_open(path, &err);
    cr_assert(r, "%s", err.msg);
    uint64_t seen = 0;
    wr_batch b;
    int rc;
    uint64_t lanes[32];
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        cr_assert_eq(b.first_seq, seen);
        cr_assert_gt(b.count, 0);
        for (size_t k = 0; k < b.count; k++, seen++) {
            wr_event want;
            sample_event(seen, &want, lanes);
            char why[200] = "";
            cr_assert_eq(b.events[k].seq, seen);
            cr_assert(sample_events_equal(&want, &b.events[k], why, sizeof why),
                      "event %llu (%s): %s", (unsigned long long)seen,
                      wr_event_kind_name(want.kind), why);
        }
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(seen, events);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_eq(st->events, events);
    cr_assert_eq(st->has_footer, expect_footer);
    cr_assert_eq(st->truncated, !expect_footer);
    wr_reader_close(r);
}

Test(roundtrip, header_and_catalog)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 10, 0, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    const wr_header *h = wr_reader_header(r), want = sample_header();
    cr_assert_eq(h->version_major, WR_FORMAT_MAJOR);
    cr_assert_eq(h->version_minor, WR_FORMAT_MINOR);
    cr_assert_str_eq(h->producer, want.producer);
    cr_assert_str_eq(h->producer_version, want.producer_version);
    cr_assert_str_eq(h->device, want.device);
    cr_assert_str_eq(h->host, want.host);
    cr_assert_str_eq(h->command, want.command);
    cr_assert_eq(h->sm_arch, 90);
    cr_assert_eq(h->warp_size, 32);
    cr_assert_eq(h->clock_khz, 1755000);
    cr_assert_eq(h->time_unix_ns, want.time_unix_ns);

    /* The catalog arrives with the first event chunk. */
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    const wr_catalog *c = wr_reader_catalog(r);
    cr_assert_eq(wr_catalog_kernel_count(c), 3);
    cr_assert_str_eq(wr_catalog_kernel(c, 1)->name, "reduce");
    cr_assert_str_eq(wr_catalog_kernel(c, 2)->name, "scan_kernel<int>");
    cr_assert_str_eq(wr_catalog_kernel(c, 3)->name, "reduce");
    cr_assert_eq(wr_catalog_kernel(c, 3)->id, 3);
    cr_assert_null(wr_catalog_kernel(c, 0));
    cr_assert_null(wr_catalog_kernel(c, 4));
    cr_assert_eq(wr_catalog_alloc_count(c), 4);
    const wr_alloc *a = wr_catalog_alloc(c, 3);
    cr_assert_eq(a->space, WR_SPACE_SHARED);
    cr_assert_eq(a->size, 48 * 1024);
    cr_assert_str_eq(a->name, "tile");
    cr_assert_str_eq(wr_catalog_alloc(c, 2)->name, "");
    /* newest allocation containing the address wins; outside it, the older */
    cr_assert_eq(wr_catalog_find_alloc(c, WR_SPACE_GLOBAL, 0x7f0000000010ull)->id, 4);
    cr_assert_eq(wr_catalog_find_alloc(c, WR_SPACE_GLOBAL, 0x7f0000020000ull)->id, 1);
    cr_assert_eq(wr_catalog_find_alloc(c, WR_SPACE_GLOBAL, 0x7f0000100fffull)->id, 2);
    cr_assert_null(wr_catalog_find_alloc(c, WR_SPACE_GLOBAL, 0x7f0000101000ull));
    cr_assert_eq(wr_catalog_find_alloc(c, WR_SPACE_SHARED, 100)->id, 3);
    cr_assert_null(wr_catalog_find_alloc(c, WR_SPACE_LOCAL, 100));
    cr_assert_eq(wr_catalog_site_count(c), 5);
    const wr_site *s = wr_catalog_site(c, 2);
    cr_assert_eq(s->pc, 0x1b8);
    cr_assert_str_eq(s->file, "reduce.cu");
    cr_assert_eq(s->line, 43);
    cr_assert_str_eq(s->function, "reduce");
    cr_assert_str_eq(wr_catalog_site(c, 3)->file, "");
    cr_assert_str_eq(wr_catalog_site(c, 5)->file, "dir/ü.cu");
    cr_assert_eq(wr_catalog_site(c, 5)->line, 4000000000u);
    cr_assert_eq(wr_catalog_module_count(c), 1);
    const wr_module *m = wr_catalog_module(c, 1);
    cr_assert_str_eq(m->name, "reduce.cubin");
    cr_assert_eq(m->size, 10);
    cr_assert_eq(m->image[1], 'E');
    cr_assert_eq(m->image[9], 0xff);
    wr_batch_release(&b);
    wr_reader_close(r);
}

/* A recorder defines a kernel once however often it is launched
 * (wr_writer_kernel_once), while wr_writer_kernel keeps making new ids. */
Test(roundtrip, kernel_once_per_name)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel_once(w, "k"), 1);
    cr_assert_eq(wr_writer_kernel_once(w, "other"), 2);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(wr_writer_kernel_once(w, i % 2 ? "k" : "other"), 1u + (i % 2 == 0));
    cr_assert_eq(wr_writer_kernel(w, "k"), 3, "the plain form always defines a new one");
    char name[32];
    for (int i = 0; i < 300; i++) {   /* past the first table's 64 strings */
        snprintf(name, sizeof name, "k%d", i);
        cr_assert_eq(wr_writer_kernel_once(w, name), 4u + (unsigned)i);
    }
    cr_assert_eq(wr_writer_kernel_once(w, "k150"), 154);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    while (wr_reader_next(r, &b, &err) == 1)
        wr_batch_release(&b);
    cr_assert_eq(wr_catalog_kernel_count(wr_reader_catalog(r)), 303);
    wr_reader_close(r);
}

Test(roundtrip, every_kind_and_encoding_in_one_chunk)
{
    wr_error err = {0};
    /* 24 * 11 events: every case of the sample with every atomic op */
    cr_assert_eq(sample_write(tmp_path, 24 * 11 * 2, 0, &err), 0, "%s", err.msg);
    check_sample(tmp_path, 24 * 11 * 2, 1);
}

/* Opens tmp_path and reads its first batch, which must be exactly the n
 * events evs; the reader stays open for the caller's further checks. */
static wr_reader *read_back_one_batch(const wr_event *evs, size_t n, wr_batch *b)
{
    wr_error err = {0};
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_next(r, b, &err), 1, "%s", err.msg);
    cr_assert_eq(b->count, n);
    for (size_t i = 0; i < n; i++) {
        char why[200] = "";
        cr_assert(sample_events_equal(&evs[i], &b->events[i], why, sizeof why), "event %zu: %s",
                  i, why);
    }
    return r;
}

Test(roundtrip, every_kind_hand_built)
{
    /* Independent of the sample generator: one event per kind with extreme
     * values, read back field by field. */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    uint32_t k = wr_writer_kernel(w, "k");
    uint32_t al = wr_writer_alloc(w, 0x1000, 64, WR_SPACE_GLOBAL, "a");
    uint32_t site = wr_writer_site(w, 1, "f.cu", 1, "k");
    cr_assert(k == 1 && al == 1 && site == 1);
    uint64_t lanes[32];
    for (unsigned l = 0; l < 32; l++)
        lanes[l] = UINT64_MAX - l * 0x100000000ull;   /* wide: deltas beyond int32 */
    wr_event evs[] = {
        {.kind = WR_EV_ACCESS, .site = 1, .u.access = {.launch = UINT32_MAX, .block = UINT32_MAX,
            .warp = 31, .active_mask = 0x80000001u, .cas_success = 0x80000000u, .op = WR_OP_ATOMIC_RMW,
            .atomic_op = WR_AOP_CAS, .scope = WR_SCOPE_SYSTEM, .order = WR_ORDER_SC,
            .space = WR_SPACE_LOCAL, .size = 16, .addr_mode = WR_ADDR_STRIDED,
            .stride = -(1ll << 40), .base = UINT64_MAX}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .active_mask = WR_FULL_MASK,
            .op = WR_OP_LOAD, .size = 1, .addr_mode = WR_ADDR_VECTOR, .lane_addr = lanes}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .active_mask = 0,
            .op = WR_OP_ATOMIC_STORE, .size = 8, .addr_mode = WR_ADDR_VECTOR, .lane_addr = lanes}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, 4, 15, 1024, WR_BAR_BLOCK, WR_BARMODE_SYNC}},
        {.kind = WR_EV_WARP_SYNC, .u.warp_sync = {1, 2, 3, 0x0000ffffu}},
        {.kind = WR_EV_FENCE, .u.fence = {1, 2, 3, WR_FULL_MASK, WR_SCOPE_CLUSTER, WR_ORDER_ACQ_REL}},
        {.kind = WR_EV_BLOCK_ENTER, .u.block = {7, 8}},
        {.kind = WR_EV_BLOCK_EXIT, .u.block = {7, 8}},
        {.kind = WR_EV_KERNEL_LAUNCH, .u.launch = {9, 1, {1, 2, 3}, {4, 5, 6}, {7, 8, 9}, 10, 11}},
        {.kind = WR_EV_KERNEL_END, .u.kernel_end = {9}},
        {.kind = WR_EV_EVENT_RECORD, .u.stream_event = {5, 6}},
        {.kind = WR_EV_STREAM_WAIT, .u.stream_event = {5, 7}},
        {.kind = WR_EV_EVENT_SYNC, .u.stream_event = {5, 0}},
        {.kind = WR_EV_STREAM_SYNC, .u.stream_sync = {3}},
        {.kind = WR_EV_DEVICE_SYNC},
        /* the largest copy, ending at the top of the address space */
        {.kind = WR_EV_HOST_COPY,
         .u.copy = {UINT64_MAX - WR_COPY_BYTES_MAX, 1, WR_COPY_BYTES_MAX, 2, WR_COPY_D2D, 1}},
        {.kind = WR_EV_ALLOC, .u.alloc = {1}},
        {.kind = WR_EV_FREE, .u.alloc = {1}},
        {.kind = WR_EV_LOST, .u.lost = {UINT64_MAX / 2, 9, UINT32_MAX}},
    };
    size_t n = sizeof evs / sizeof evs[0];
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(wr_writer_event(w, &evs[i], &err), 0, "event %zu: %s", i, err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_batch b;
    wr_reader *r = read_back_one_batch(evs, n, &b);
    /* inactive vector lanes read back as 0 */
    cr_assert_eq(b.events[2].u.access.lane_addr[5], 0);
    cr_assert_eq(b.events[1].u.access.lane_addr[31], lanes[31]);
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_reader_stats_get(r)->lost_events, UINT64_MAX / 2);
    wr_reader_close(r);
}

/* LOST counts add up saturating: 1 + (2^64 - 1) once read as 0 lost
 * events, a trace that lost events looking whole. */
Test(roundtrip, lost_counts_saturate)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    wr_event evs[] = {
        {.kind = WR_EV_LOST, .u.lost = {1, 1, 0}},
        {.kind = WR_EV_LOST, .u.lost = {UINT64_MAX, 0, UINT32_MAX}},
    };
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(wr_writer_event(w, &evs[i], &err), 0, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_batch b;
    wr_reader *r = read_back_one_batch(evs, 2, &b);
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_reader_stats_get(r)->lost_events, UINT64_MAX);
    wr_reader_close(r);
}

/* The first EVENTS chunk of tmp_path, which must hold raw_size bytes,
 * uncompressed into raw (chunks before it, a catalog, skipped). */
static void read_first_event_payload(uint8_t *raw, size_t raw_size)
{
    size_t size;
    unsigned char *file = sample_read_file(tmp_path, &size);
    cr_assert(file);
    for (size_t at = wrf_get32(file + 12); at + WRF_CHUNK_HEADER_SIZE <= size;) {
        wrf_chunk_header ch;
        cr_assert_eq(wrf_chunk_header_decode(file + at, &ch), 0);
        const uint8_t *payload = file + at + WRF_CHUNK_HEADER_SIZE;
        if (ch.type == WRF_CHUNK_EVENTS) {
            cr_assert_eq(ch.raw_size, raw_size);
            if (ch.codec == WRF_CODEC_LZ4)
                cr_assert_eq(LZ4_decompress_safe((const char *)payload, (char *)raw,
                                                 (int)ch.stored_size, (int)raw_size),
                             (int)raw_size);
            else
                memcpy(raw, payload, raw_size);
            free(file);
            return;
        }
        at += WRF_CHUNK_HEADER_SIZE + ch.stored_size;
    }
    cr_assert_fail("no event chunk");
}

Test(roundtrip, cluster_and_grid_barriers)
{
    /* The scope travels in prefix byte b1; the body is that of 1.0. */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    wr_event evs[] = {
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, WR_FULL_MASK, 15, 1024, WR_BAR_BLOCK, WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, 0x0000ffffu, 0, 512, WR_BAR_CLUSTER, WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {UINT32_MAX, UINT32_MAX, 31, WR_FULL_MASK, 0, 0,
                                               WR_BAR_CLUSTER, WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 7, 0, 1, 0, UINT32_MAX, WR_BAR_GRID, WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 0, 0, WR_FULL_MASK, 0, 0, WR_BAR_GRID, WR_BARMODE_SYNC}},
    };
    size_t n = sizeof evs / sizeof evs[0];
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(wrf_event_encoded_size(&evs[i]), 32, "a barrier record is 32 bytes");
        cr_assert_eq(wr_writer_event(w, &evs[i], &err), 0, "event %zu: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_batch b;
    wr_reader *r = read_back_one_batch(evs, n, &b);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(b.events[i].u.barrier.scope, evs[i].u.barrier.scope, "event %zu", i);
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);

    /* on disk, as FORMAT.md lays it out: b1 of each record is the scope (the
     * trace has no catalog: its first chunk holds the events) */
    uint8_t raw[32 * 5];
    read_first_event_payload(raw, 32 * n);
    const uint8_t want_b1[] = {0, 2, 2, 3, 3};
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(raw[32 * i], WR_EV_BARRIER);
        cr_assert_eq(raw[32 * i + 1], want_b1[i], "record %zu: b1 %u", i, raw[32 * i + 1]);
        cr_assert_eq(raw[32 * i + 2] | raw[32 * i + 3], 0);
        cr_assert_eq(wrf_get32(raw + 32 * i + 24), evs[i].u.barrier.barrier_id);
    }
}


Test(roundtrip, dsmem_accesses_in_every_address_mode)
{
    /* Owner block in the high 32 bits, offset in the low 32: the lanes of one
     * access may name several owners, in any encoding. */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    /* narrow: one owner's top and bottom offsets, within an int32 delta of
     * lane 0 (two owners are 2^32 - WR_SHARED_LIMIT apart at least: wide) */
    uint64_t narrow[32] = {0}, wide[32] = {0};
    for (unsigned l = 0; l < 32; l++)
        narrow[l] = wr_dsmem_addr(1, l < 16 ? WR_SHARED_LIMIT - 64 + 4 * l : 4 * (l - 16));
    /* wide: owners 0 and 7 are 7 x 2^32 apart, beyond an int32 delta */
    wide[0] = wr_dsmem_addr(0, 0);
    wide[5] = wr_dsmem_addr(7, 0x100);
    wide[31] = wr_dsmem_addr(UINT32_MAX, WR_SHARED_LIMIT - 16);
    wr_event evs[] = {
        {.kind = WR_EV_ACCESS, .site = 0, .u.access = {.launch = 1, .block = 2, .warp = 3,
            .active_mask = WR_FULL_MASK, .op = WR_OP_STORE, .space = WR_SPACE_DSMEM, .size = 4,
            .addr_mode = WR_ADDR_UNIFORM, .base = wr_dsmem_addr(3, 0x40)}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .block = UINT32_MAX, .warp = 31,
            .active_mask = 0x0000ffffu, .op = WR_OP_ATOMIC_RMW, .atomic_op = WR_AOP_ADD,
            .scope = WR_SCOPE_CLUSTER, .order = WR_ORDER_ACQ_REL, .space = WR_SPACE_DSMEM, .size = 8,
            .addr_mode = WR_ADDR_STRIDED, .base = wr_dsmem_addr(UINT32_MAX, 0), .stride = 8}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .block = 1, .active_mask = WR_FULL_MASK,
            .op = WR_OP_LOAD, .space = WR_SPACE_DSMEM, .size = 4, .addr_mode = WR_ADDR_VECTOR,
            .lane_addr = narrow}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .block = 7, .active_mask = 0x80000021u,
            .cas_success = 0x20u, .op = WR_OP_ATOMIC_RMW, .atomic_op = WR_AOP_CAS,
            .scope = WR_SCOPE_CLUSTER, .order = WR_ORDER_SC, .space = WR_SPACE_DSMEM, .size = 16,
            .addr_mode = WR_ADDR_VECTOR, .lane_addr = wide}},
    };
    const size_t n = sizeof evs / sizeof evs[0];
    /* 28 uniform, 8+12+4+16 strided, 8+12+8+32x4 narrow, 8+12+4+4+3x8 wide */
    const size_t sizes[] = {28, 40, 156, 52};
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(wrf_event_encoded_size(&evs[i]), sizes[i], "event %zu: %zu bytes", i,
                     wrf_event_encoded_size(&evs[i]));
        total += sizes[i];
        cr_assert_eq(wr_writer_event(w, &evs[i], &err), 0, "event %zu: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_batch b;
    wr_reader *r = read_back_one_batch(evs, n, &b);
    cr_assert_geq(wr_reader_header(r)->version_minor, 2, "DSMEM is format 1.2");
    const wr_access *nv = &b.events[2].u.access, *wv = &b.events[3].u.access;
    cr_assert_eq(wr_dsmem_block(nv->lane_addr[15]), 1);
    cr_assert_eq(wr_dsmem_offset(nv->lane_addr[15]), WR_SHARED_LIMIT - 4);
    cr_assert_eq(wr_dsmem_block(nv->lane_addr[16]), 1);
    cr_assert_eq(wr_dsmem_offset(nv->lane_addr[31]), 60);
    cr_assert_eq(wr_dsmem_block(wv->lane_addr[5]), 7);
    cr_assert_eq(wr_dsmem_offset(wv->lane_addr[5]), 0x100);
    cr_assert_eq(wv->lane_addr[31], wr_dsmem_addr(UINT32_MAX, WR_SHARED_LIMIT - 16));
    cr_assert_eq(wr_dsmem_block(wr_access_lane_addr(&b.events[1].u.access, 15)), UINT32_MAX);
    cr_assert_eq(wr_dsmem_offset(wr_access_lane_addr(&b.events[1].u.access, 15)), 120);
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);

    /* on disk: b2 bits 3-4 hold space 3, b1 the encodings expected above */
    uint8_t raw[28 + 40 + 156 + 52];
    cr_assert_eq(total, sizeof raw);
    read_first_event_payload(raw, sizeof raw);
    const uint8_t want_b1[] = {0x04 | 2 << 4 | WR_ADDR_UNIFORM, 3 << 4 | WR_ADDR_STRIDED,
                               0x80 | 0x04 | 2 << 4 | WR_ADDR_VECTOR, 0x08 | 4 << 4 | WR_ADDR_VECTOR};
    size_t at = 0;
    for (size_t i = 0; i < n; at += sizes[i], i++) {
        cr_assert_eq(raw[at], WR_EV_ACCESS);
        cr_assert_eq(raw[at + 1], want_b1[i], "record %zu: b1 0x%x", i, raw[at + 1]);
        cr_assert_eq(raw[at + 2] >> 3 & 3, WR_SPACE_DSMEM, "record %zu: b2 0x%x", i, raw[at + 2]);
        cr_assert_eq(raw[at + 2] >> 5, evs[i].u.access.order, "record %zu: space spills into order", i);
    }
}

Test(roundtrip, writer_refuses_a_dsmem_allocation)
{
    /* DSMEM names the owner's SHARED allocations: none lies in DSMEM */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_alloc(w, 0, 256, WR_SPACE_DSMEM, "remote"), 0);
    cr_assert_eq(wr_writer_alloc(w, 0, 256, WR_SPACE_MAX + 1, "beyond"), 0);
    /* the refusals took no id, and the writer carries on */
    cr_assert_eq(wr_writer_alloc(w, 0, 256, WR_SPACE_SHARED, "tile"), 1);
    wr_event ev = {.kind = WR_EV_ALLOC, .u.alloc = {1}};
    cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    const wr_catalog *c = wr_reader_catalog(r);
    cr_assert_eq(wr_catalog_alloc_count(c), 1);
    cr_assert_eq(wr_catalog_alloc(c, 1)->space, WR_SPACE_SHARED);
    cr_assert_str_eq(wr_catalog_alloc(c, 1)->name, "tile");
    wr_batch_release(&b);
    wr_reader_close(r);
}

Test(roundtrip, barrier_modes)
{
    /* Every valid (scope, mode) of format 1.3: the mode travels in prefix
     * byte b2, the scope in b1, the body is that of 1.0. */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    wr_event evs[] = {
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, WR_FULL_MASK, 15, 1024, WR_BAR_BLOCK,
                                               WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 0, WR_FULL_MASK, 15, 64, WR_BAR_BLOCK,
                                               WR_BARMODE_ARRIVE}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 1, 0x1u, 0, UINT32_MAX, WR_BAR_BLOCK,
                                               WR_BARMODE_ARRIVE}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, WR_FULL_MASK, 0, 512, WR_BAR_CLUSTER,
                                               WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, 0x0000ffffu, 0, 512, WR_BAR_CLUSTER,
                                               WR_BARMODE_ARRIVE}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 3, 3, WR_FULL_MASK, 0, 0, WR_BAR_CLUSTER,
                                               WR_BARMODE_ARRIVE}},
        {.kind = WR_EV_BARRIER, .u.barrier = {UINT32_MAX, UINT32_MAX, 31, WR_FULL_MASK, 0, 7,
                                               WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 2, 3, 0xffff0000u, 0, 0, WR_BAR_CLUSTER,
                                               WR_BARMODE_WAIT}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 7, 0, 1, 0, UINT32_MAX, WR_BAR_GRID,
                                               WR_BARMODE_SYNC}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 7, 0, WR_FULL_MASK, 0, 4096, WR_BAR_GRID,
                                               WR_BARMODE_ARRIVE}},
        {.kind = WR_EV_BARRIER, .u.barrier = {1, 7, 0, WR_FULL_MASK, 0, 0, WR_BAR_GRID,
                                               WR_BARMODE_WAIT}},
    };
    enum { N = sizeof evs / sizeof evs[0] };
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(wrf_event_encoded_size(&evs[i]), 32, "a barrier record is 32 bytes");
        cr_assert_eq(wr_writer_event(w, &evs[i], &err), 0, "event %zu: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_header(r)->version_minor, 3, "split barriers are format 1.3");
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.count, N);
    for (size_t i = 0; i < N; i++) {
        char why[200] = "";
        cr_assert(sample_events_equal(&evs[i], &b.events[i], why, sizeof why), "event %zu: %s", i, why);
        cr_assert_eq(b.events[i].u.barrier.mode, evs[i].u.barrier.mode, "event %zu", i);
    }
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);

    /* on disk, as FORMAT.md lays it out: b1 the scope, b2 the mode, b3 0 */
    uint8_t raw[32 * N];
    read_first_event_payload(raw, 32 * N);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(raw[32 * i], WR_EV_BARRIER);
        cr_assert_eq(raw[32 * i + 1], evs[i].u.barrier.scope, "record %zu: b1 %u", i, raw[32 * i + 1]);
        cr_assert_eq(raw[32 * i + 2], evs[i].u.barrier.mode, "record %zu: b2 %u", i, raw[32 * i + 2]);
        cr_assert_eq(raw[32 * i + 3], 0);
        cr_assert_eq(wrf_get32(raw + 32 * i + 28), evs[i].u.barrier.expected);
    }
}

Test(roundtrip, compact_lane_encodings)
{
    /* A full-warp coalesced access must cost far less than 32 addresses. */
    wr_event ev = {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .active_mask = WR_FULL_MASK,
                   .size = 4, .addr_mode = WR_ADDR_STRIDED, .base = 0x7f0000000000ull, .stride = 4}};
    cr_assert_eq(wrf_event_encoded_size(&ev), 36);
    ev.u.access.addr_mode = WR_ADDR_UNIFORM;
    cr_assert_eq(wrf_event_encoded_size(&ev), 28);
    uint64_t lanes[32];
    for (unsigned l = 0; l < 32; l++)
        lanes[l] = 0x7f0000000000ull + l * 4096;
    ev.u.access.addr_mode = WR_ADDR_VECTOR;
    ev.u.access.lane_addr = lanes;
    cr_assert_eq(wrf_event_encoded_size(&ev), 20 + 8 + 32 * 4);  /* narrow deltas */
    lanes[7] = 1;
    cr_assert_eq(wrf_event_encoded_size(&ev), 20 + 32 * 8);      /* wide */
    ev.u.access.active_mask = 0x3;
    cr_assert_eq(wrf_event_encoded_size(&ev), 20 + 4 + 8 + 2 * 4);
}

Test(roundtrip, chunk_boundaries_follow_payload_size)
{
    wr_error err = {0};
    const uint64_t n = 5000;
    cr_assert_eq(sample_write(tmp_path, n, 1000, &err), 0, "%s", err.msg);
    check_sample(tmp_path, n, 1);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r);
    wr_batch b;
    uint64_t batches = 0, last_offset = 0;
    while (wr_reader_next(r, &b, &err) == 1) {
        cr_assert_gt(b.chunk_offset, last_offset);
        last_offset = b.chunk_offset;
        batches++;
        wr_batch_release(&b);
    }
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_eq(st->event_chunks, batches);
    cr_assert_gt(batches, 50);
    /* every chunk closes at the first record reaching 1000 bytes: at most
     * one record (<= WRF_RECORD_MAX) over the target */
    cr_assert_leq(st->raw_bytes, batches * (1000 + WRF_RECORD_MAX) + 4096);
    wr_reader_close(r);
}

Test(roundtrip, one_event_per_chunk)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 100, 1, &err), 0, "%s", err.msg);
    check_sample(tmp_path, 100, 1);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch b;
    while (wr_reader_next(r, &b, &err) == 1) {
        cr_assert_eq(b.count, 1);
        wr_batch_release(&b);
    }
    cr_assert_eq(wr_reader_stats_get(r)->event_chunks, 100);
    wr_reader_close(r);
}

Test(roundtrip, empty_trace)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "end is sticky");
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_eq(st->events, 0);
    cr_assert_eq(st->has_footer, 1);
    cr_assert_eq(st->truncated, 0);
    cr_assert_eq(wr_catalog_kernel_count(wr_reader_catalog(r)), 0);
    wr_reader_close(r);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);
}

Test(roundtrip, metadata_without_events_is_kept)
{
    wr_error err = {0};
    wr_header h = {.producer = NULL};   /* NULL strings read back as "" */
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "lonely"), 1);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_str_eq(wr_reader_header(r)->producer, "");
    cr_assert_eq(wr_reader_header(r)->warp_size, 32);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    cr_assert_str_eq(wr_catalog_kernel(wr_reader_catalog(r), 1)->name, "lonely");
    wr_reader_close(r);
}

Test(roundtrip, large_trace_many_chunks)
{
    wr_error err = {0};
    const uint64_t n = 300000;
    cr_assert_eq(sample_write(tmp_path, n, 0, &err), 0, "%s", err.msg);
    check_sample(tmp_path, n, 1);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch b;
    while (wr_reader_next(r, &b, &err) == 1)
        wr_batch_release(&b);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert_gt(st->event_chunks, 10);
    cr_assert_lt(st->compressed_bytes, st->raw_bytes);
    wr_reader_close(r);
}

Test(roundtrip, batches_outlive_the_reader_and_each_other)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 3000, 500, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch kept[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(wr_reader_next(r, &kept[i], &err), 1, "%s", err.msg);
    wr_reader_close(r);
    uint64_t lanes[32];
    for (int i = 2; i >= 0; i--) {
        for (size_t k = 0; k < kept[i].count; k++) {
            wr_event want;
            sample_event(kept[i].first_seq + k, &want, lanes);
            char why[200];
            cr_assert(sample_events_equal(&want, &kept[i].events[k], why, sizeof why), "%s", why);
        }
        wr_batch_release(&kept[i]);
        cr_assert_null(kept[i].events);
    }
}

Test(roundtrip, output_is_deterministic)
{
    wr_error err = {0};
    char second[300];
    snprintf(second, sizeof second, "%s.2", tmp_path);
    cr_assert_eq(sample_write(tmp_path, 20000, 4096, &err), 0, "%s", err.msg);
    cr_assert_eq(sample_write(second, 20000, 4096, &err), 0, "%s", err.msg);
    size_t n1, n2;
    unsigned char *a = sample_read_file(tmp_path, &n1), *b = sample_read_file(second, &n2);
    unlink(second);
    cr_assert(a && b);
    cr_assert_eq(n1, n2);
    cr_assert(!memcmp(a, b, n1), "two identical writes differ");
    free(a);
    free(b);
}

Test(roundtrip, memory_open_matches_file_open)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 777, 2048, &err), 0, "%s", err.msg);
    size_t size;
    unsigned char *data = sample_read_file(tmp_path, &size);
    wr_reader *r = wr_reader_open_memory(data, size, "in-memory.wrt", &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    uint64_t events = 0;
    while (wr_reader_next(r, &b, &err) == 1) {
        events += b.count;
        wr_batch_release(&b);
    }
    cr_assert_eq(events, 777);
    cr_assert(wr_reader_stats_get(r)->has_footer);
    cr_assert_str_eq(wr_reader_path(r), "in-memory.wrt");
    wr_reader_close(r);
    cr_assert_eq(wr_verify_memory(data, size, "in-memory.wrt", NULL, &err), 0, "%s", err.msg);
    free(data);
}

Test(roundtrip, writer_rejects_events_outside_the_model)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w);
    wr_event bad[] = {
        {.kind = 0},
        {.kind = WR_EV_KIND_MAX + 1},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 3}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .op = WR_OP_MAX + 1}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .op = WR_OP_ATOMIC_RMW}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .op = WR_OP_LOAD, .atomic_op = WR_AOP_ADD}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .scope = WR_SCOPE_MAX + 1}},
        /* space 4 would spill into the order bits */
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .space = WR_SPACE_MAX + 1}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .addr_mode = 3}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .addr_mode = WR_ADDR_VECTOR}},
        {.kind = WR_EV_ACCESS, .u.access = {.size = 4, .active_mask = 1, .cas_success = 1}},
        {.kind = WR_EV_FENCE, .u.fence = {.scope = 9}},
        {.kind = WR_EV_HOST_COPY, .u.copy = {.kind = 4}},
        {.kind = WR_EV_HOST_COPY, .u.copy = {.async = 2}},
        {.kind = WR_EV_HOST_COPY, .u.copy = {.dst = 0x1000, .bytes = WR_COPY_BYTES_MAX + 1}},
        {.kind = WR_EV_HOST_COPY, .u.copy = {.src = UINT64_MAX - 15, .bytes = 32, .kind = 1}},
        {.kind = WR_EV_BARRIER, .u.barrier = {.scope = 1}},
        {.kind = WR_EV_BARRIER, .u.barrier = {.scope = WR_BAR_CLUSTER, .barrier_id = 3}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        cr_assert_eq(wr_writer_event(w, &bad[i], &err), -1, "bad event %zu accepted", i);
        cr_assert(strstr(err.msg, tmp_path), "error names the file: %s", err.msg);
    }
    /* a rejected event leaves no trace: the writer still works */
    wr_event ok = {.kind = WR_EV_DEVICE_SYNC};
    cr_assert_eq(wr_writer_event(w, &ok, &err), 0);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1);
    cr_assert_eq(b.count, 1);
    cr_assert_eq(b.events[0].kind, WR_EV_DEVICE_SYNC);
    wr_batch_release(&b);
    wr_reader_close(r);
}

Test(roundtrip, writer_refuses_bad_barrier_scope)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w);
    static const struct {
        wr_barrier b;
        const char *needle;
    } bad[] = {
        /* scope 1 is an mbarrier (1.3): writer_refuses_bad_mbarriers */
        {{.scope = 4}, "barrier scope out of range"},
        {{.scope = 5}, "barrier scope out of range"},
        {{.scope = 0xff}, "barrier scope out of range"},
        {{.scope = WR_BAR_CLUSTER, .barrier_id = 3}, "have no barrier id"},
        {{.scope = WR_BAR_GRID, .barrier_id = 1}, "have no barrier id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wr_event ev = {.kind = WR_EV_BARRIER, .u.barrier = bad[i].b};
        err.msg[0] = 0;
        cr_assert_eq(wrf_event_encoded_size(&ev), 0, "case %zu encodable", i);
        cr_assert_eq(wr_writer_event(w, &ev, &err), -1, "case %zu accepted", i);
        cr_assert(strstr(err.msg, tmp_path), "error names the file: %s", err.msg);
        cr_assert(strstr(err.msg, "(barrier)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
    }
    /* the valid ones, named barrier 15 of the block included */
    wr_event ok[] = {
        {.kind = WR_EV_BARRIER, .u.barrier = {.barrier_id = 15, .scope = WR_BAR_BLOCK}},
        {.kind = WR_EV_BARRIER, .u.barrier = {.scope = WR_BAR_CLUSTER}},
        {.kind = WR_EV_BARRIER, .u.barrier = {.scope = WR_BAR_GRID}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        cr_assert_eq(wr_writer_event(w, &ok[i], &err), 0, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);
}

Test(roundtrip, writer_refuses_bad_barrier_mode)
{
    /* what wr_barrier_mode_problem names, refused before anything is
     * written; a reader would reject each (test_errors.c) */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w);
    static const struct {
        wr_barrier b;
        const char *needle;
    } bad[] = {
        {{.scope = WR_BAR_CLUSTER, .mode = 5}, "barrier mode out of range"},
        {{.scope = WR_BAR_CLUSTER, .mode = WR_BARMODE_INIT}, "an init of a barrier other than an mbarrier"},
        {{.scope = WR_BAR_BLOCK, .expected = 64, .mode = WR_BARMODE_INIT},
         "an init of a barrier other than an mbarrier"},
        {{.scope = WR_BAR_BLOCK, .expected = 64, .mode = 0xff}, "barrier mode out of range"},
        {{.scope = WR_BAR_BLOCK, .mode = WR_BARMODE_WAIT}, "a wait at a block barrier"},
        {{.scope = WR_BAR_BLOCK, .expected = 64, .mode = WR_BARMODE_ARRIVE_RELAXED},
         "a relaxed arrive at a barrier other than a cluster's"},
        {{.scope = WR_BAR_GRID, .mode = WR_BARMODE_ARRIVE_RELAXED},
         "a relaxed arrive at a barrier other than a cluster's"},
        {{.scope = WR_BAR_BLOCK, .barrier_id = 3, .mode = WR_BARMODE_ARRIVE},
         "a block barrier's arrive without its thread count (expected 0)"},
        {{.scope = WR_BAR_CLUSTER, .expected = 64, .mode = WR_BARMODE_WAIT},
         "a barrier wait with a thread count (expected must be 0)"},
        {{.scope = WR_BAR_GRID, .expected = 1, .mode = WR_BARMODE_WAIT},
         "a barrier wait with a thread count (expected must be 0)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wr_event ev = {.kind = WR_EV_BARRIER, .u.barrier = bad[i].b};
        err.msg[0] = 0;
        cr_assert_eq(wrf_event_encoded_size(&ev), 0, "case %zu encodable", i);
        cr_assert_eq(wr_writer_event(w, &ev, &err), -1, "case %zu accepted", i);
        cr_assert(strstr(err.msg, tmp_path), "error names the file: %s", err.msg);
        cr_assert(strstr(err.msg, "(barrier)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
    }
    /* a refused barrier leaves no trace: the next ones are written */
    wr_event ok = {.kind = WR_EV_BARRIER,
                   .u.barrier = {.scope = WR_BAR_CLUSTER, .mode = WR_BARMODE_WAIT}};
    cr_assert_eq(wr_writer_event(w, &ok, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.count, 1);
    cr_assert_eq(b.events[0].u.barrier.mode, WR_BARMODE_WAIT);
    wr_batch_release(&b);
    wr_reader_close(r);
}

/* The mbarriers of format 1.3 (scope 1) in every mode they may take, at
 * the edges of their offsets, counts and parities. */
static const wr_event mbarrier_events[] = {
    {.kind = WR_EV_BARRIER, .site = 1,
     .u.barrier = {1, 2, 0, 0x1u, 0, 1, WR_BAR_MBARRIER, WR_BARMODE_INIT}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 2, 0, 0x80000000u, WR_SHARED_LIMIT - 8, WR_MBARRIER_COUNT_MAX,
                   WR_BAR_MBARRIER, WR_BARMODE_INIT}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 2, 3, WR_FULL_MASK, 0x100, 0, WR_BAR_MBARRIER, WR_BARMODE_ARRIVE}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 2, 3, 0x0000ffffu, 0x100, 1, WR_BAR_MBARRIER, WR_BARMODE_ARRIVE}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {UINT32_MAX, UINT32_MAX, 31, WR_FULL_MASK, 0x108, WR_MBARRIER_COUNT_MAX,
                   WR_BAR_MBARRIER, WR_BARMODE_ARRIVE}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 7, 1, WR_FULL_MASK, 0x108, 0, WR_BAR_MBARRIER, WR_BARMODE_ARRIVE_RELAXED}},
    {.kind = WR_EV_BARRIER, .site = 3,
     .u.barrier = {1, 7, 1, 0x2u, 0x108, 32, WR_BAR_MBARRIER, WR_BARMODE_ARRIVE_RELAXED}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 2, 3, WR_FULL_MASK, 0x100, 0, WR_BAR_MBARRIER, WR_BARMODE_WAIT}},
    {.kind = WR_EV_BARRIER,
     .u.barrier = {1, 2, 3, 0xffff0000u, WR_SHARED_LIMIT - 8, 1, WR_BAR_MBARRIER,
                   WR_BARMODE_WAIT}},
};
enum { N_MBARRIER_EVENTS = sizeof mbarrier_events / sizeof mbarrier_events[0] };

Test(roundtrip, mbarriers)
{
    /* the scope travels in b1, the mode in b2, the offset in barrier_id and
     * the count or parity in expected: the body is that of every barrier */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w, "%s", err.msg);
    sample_define_catalog(w);
    for (size_t i = 0; i < N_MBARRIER_EVENTS; i++) {
        cr_assert_eq(wrf_event_encoded_size(&mbarrier_events[i]), 32, "a barrier record is 32 bytes");
        cr_assert_eq(wr_writer_event(w, &mbarrier_events[i], &err), 0, "event %zu: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);

    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_header(r)->version_minor, 3, "mbarriers are format 1.3");
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.count, N_MBARRIER_EVENTS);
    for (size_t i = 0; i < N_MBARRIER_EVENTS; i++) {
        char why[200] = "";
        cr_assert(sample_events_equal(&mbarrier_events[i], &b.events[i], why, sizeof why),
                  "event %zu: %s", i, why);
        const wr_barrier *got = &b.events[i].u.barrier, *want = &mbarrier_events[i].u.barrier;
        cr_assert_eq(got->scope, WR_BAR_MBARRIER, "event %zu", i);
        cr_assert_eq(got->mode, want->mode, "event %zu", i);
        cr_assert_eq(got->barrier_id, want->barrier_id, "event %zu", i);
        cr_assert_eq(got->expected, want->expected, "event %zu", i);
        cr_assert_eq(b.events[i].site, mbarrier_events[i].site, "event %zu", i);
    }
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_next(r, &b, &err), 0, "%s", err.msg);
    wr_reader_close(r);

    /* on disk, as FORMAT.md lays it out: b1 1, b2 the mode, b3 0, the
     * offset at body +16, the count or parity at +20 */
    uint8_t raw[32 * N_MBARRIER_EVENTS];
    read_first_event_payload(raw, sizeof raw);
    for (size_t i = 0; i < N_MBARRIER_EVENTS; i++) {
        const uint8_t *rec = raw + 32 * i;
        const wr_barrier *want = &mbarrier_events[i].u.barrier;
        cr_assert_eq(rec[0], WR_EV_BARRIER);
        cr_assert_eq(rec[1], WR_BAR_MBARRIER, "record %zu: b1 %u", i, rec[1]);
        cr_assert_eq(rec[2], want->mode, "record %zu: b2 %u", i, rec[2]);
        cr_assert_eq(rec[3], 0);
        cr_assert_eq(wrf_get32(rec + 8 + 16), want->barrier_id, "record %zu", i);
        cr_assert_eq(wrf_get32(rec + 8 + 20), want->expected, "record %zu", i);
    }
}

Test(roundtrip, writer_refuses_bad_mbarriers)
{
    /* each of what wr_barrier_mode_problem names for an mbarrier, refused
     * before anything is written (the reader's side: test_errors.c,
     * forged_mbarriers) */
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, NULL, &err);
    cr_assert(w);
    static const struct {
        wr_barrier b;
        const char *needle;
    } bad[] = {
        {{.barrier_id = 8, .expected = 64, .scope = WR_BAR_MBARRIER, .mode = WR_BARMODE_SYNC},
         "an mbarrier has no sync"},
        {{.barrier_id = 12, .scope = WR_BAR_MBARRIER, .mode = WR_BARMODE_ARRIVE},
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {{.barrier_id = WR_SHARED_LIMIT, .expected = 1, .scope = WR_BAR_MBARRIER,
          .mode = WR_BARMODE_INIT},
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {{.barrier_id = 8, .scope = WR_BAR_MBARRIER, .mode = WR_BARMODE_INIT},
         "an mbarrier's init count out of range"},
        {{.barrier_id = 8, .expected = WR_MBARRIER_COUNT_MAX + 1, .scope = WR_BAR_MBARRIER,
          .mode = WR_BARMODE_INIT},
         "an mbarrier's init count out of range"},
        {{.barrier_id = 8, .expected = WR_MBARRIER_COUNT_MAX + 1, .scope = WR_BAR_MBARRIER,
          .mode = WR_BARMODE_ARRIVE},
         "an mbarrier arrive's count out of range"},
        {{.barrier_id = 8, .expected = WR_MBARRIER_COUNT_MAX + 1, .scope = WR_BAR_MBARRIER,
          .mode = WR_BARMODE_ARRIVE_RELAXED},
         "an mbarrier arrive's count out of range"},
        {{.barrier_id = 8, .expected = 2, .scope = WR_BAR_MBARRIER, .mode = WR_BARMODE_WAIT},
         "an mbarrier wait's parity is not 0 or 1"},
        {{.barrier_id = 8, .scope = WR_BAR_MBARRIER, .mode = 5}, "barrier mode out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wr_event ev = {.kind = WR_EV_BARRIER, .u.barrier = bad[i].b};
        err.msg[0] = 0;
        cr_assert_eq(wrf_event_encoded_size(&ev), 0, "case %zu encodable", i);
        cr_assert_eq(wr_writer_event(w, &ev, &err), -1, "case %zu accepted", i);
        cr_assert(strstr(err.msg, tmp_path), "error names the file: %s", err.msg);
        cr_assert(strstr(err.msg, "(barrier)"), "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].needle), "case %zu: %s", i, err.msg);
    }
    /* an mbarrier's non-zero id is its offset, no named barrier's: taken,
     * and so is every valid record */
    for (size_t i = 0; i < N_MBARRIER_EVENTS; i++) {
        wr_event ev = mbarrier_events[i];
        ev.site = 0;
        cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "event %zu: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 0, "%s", err.msg);
}

/* The writer's background thread (what the recorder's drain uses) writes
 * the same bytes as the caller's thread: catalog definitions made between
 * events, explicit flushes, chunks queued faster than they are written
 * (small chunks: the queue fills and the caller waits), and a module image
 * among them. */
static int write_with(const char *path, int background, size_t batch, wr_error *err)
{
    wr_header h = sample_header();
    wr_writer_options opts = {.chunk_bytes = 2048, .background = background};
    wr_writer *w = wr_writer_open(path, &h, &opts, err);
    wr_encoded *b = wr_encoded_new();
    if (!w || !b) {
        wr_encoded_free(b);
        if (w)
            wr_writer_abandon(w);
        return -1;
    }
    sample_define_catalog(w);
    uint64_t lanes[32];
    int rc = 0;
    for (uint64_t i = 0; i < 60000 && !rc; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        if (!batch)
            rc = wr_writer_event(w, &ev, err);
        else {
            const char *why = NULL;
            if (wr_encoded_add(b, &ev, &why)) {
                snprintf(err->msg, sizeof err->msg, "event %llu: %s", (unsigned long long)i, why);
                rc = -1;
                break;
            }
            /* batches of several sizes, appended before any definition or flush */
            size_t want = batch * (1 + i % 5);
            if (wr_encoded_count(b) >= want || i % 7919 == 0 || i % 20011 == 0 || i == 59999) {
                rc = wr_writer_encoded(w, b, err);
                wr_encoded_clear(b);
            }
        }
        if (!rc && i % 7919 == 0) {
            char file[32];
            snprintf(file, sizeof file, "late%llu.cu", (unsigned long long)i);
            if (!wr_writer_site(w, 0x1000 + i, file, (uint32_t)i, "k") ||
                !wr_writer_kernel(w, file))
                rc = -1;
        }
        if (!rc && i % 20011 == 0)
            rc = wr_writer_flush(w, err);
    }
    wr_encoded_free(b);
    if (rc) {
        wr_writer_abandon(w);
        return -1;
    }
    return wr_writer_close(w, err);
}

/* The same bytes as the plain per-event calls on the caller's thread. */
static void assert_written_like_plain(int background, size_t batch)
{
    char other[300];
    snprintf(other, sizeof other, "%s.other", tmp_path);
    wr_error err;
    cr_assert_eq(write_with(tmp_path, 0, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(write_with(other, background, batch, &err), 0, "%s", err.msg);
    size_t a_size, b_size;
    unsigned char *a = sample_read_file(tmp_path, &a_size), *b = sample_read_file(other, &b_size);
    cr_assert(a && b);
    cr_assert_gt(a_size, 100000, "several hundred chunks");
    cr_assert_eq(a_size, b_size);
    cr_assert(!memcmp(a, b, a_size), "the same bytes");
    free(a);
    free(b);
    unlink(other);
}

Test(roundtrip, background_thread_writes_the_same_bytes)
{
    assert_written_like_plain(1, 0);
}

/* Several compressing threads: chunks compressed out of order, written in
 * order; more than the cap (16) takes the cap. */
Test(roundtrip, background_threads_write_the_same_bytes)
{
    assert_written_like_plain(4, 0);
    assert_written_like_plain(100, 0);
}

/* Events encoded ahead (the drain's workers) and appended in batches of
 * 1 to 5 x N events, which span chunks, end at chunk limits or inside
 * them: the same bytes as one wr_writer_event call per event. */
Test(roundtrip, encoded_batches_write_the_same_bytes)
{
    assert_written_like_plain(0, 1);
    assert_written_like_plain(0, 13);
    assert_written_like_plain(3, 700);
}

/* An event the format cannot hold is refused by wr_encoded_add with the
 * reason, and the batch keeps what it had. */
Test(roundtrip, encoded_batch_refuses_a_bad_event)
{
    wr_encoded *b = wr_encoded_new();
    cr_assert(b);
    uint64_t lanes[32];
    wr_event ev;
    sample_event(1, &ev, lanes);
    const char *why = NULL;
    cr_assert_eq(wr_encoded_add(b, &ev, &why), 0, "%s", why);
    size_t bytes = wr_encoded_bytes(b);
    wr_event bad = ev;
    bad.kind = 200;
    cr_assert_neq(wr_encoded_add(b, &bad, &why), 0);
    cr_assert(why && *why);
    cr_assert_eq(wr_encoded_count(b), 1);
    cr_assert_eq(wr_encoded_bytes(b), bytes);
    wr_encoded_free(b);
}

/* A write that fails on a background thread (a full device) is reported
 * by a later call of the caller's thread, with the file's name, and the
 * writer stops there: no crash, no hang, close fails cleanly. */
static void assert_failure_reported(int background)
{
    if (access("/dev/full", W_OK) != 0)
        cr_skip_test("no /dev/full");
    wr_header h = sample_header();
    wr_writer_options opts = {.chunk_bytes = 1024, .background = background};
    wr_error err;
    wr_writer *w = wr_writer_open("/dev/full", &h, &opts, &err);
    if (!w) {   /* the header's write already failed: reported at open */
        cr_assert(strstr(err.msg, "/dev/full"), "%s", err.msg);
        return;
    }
    sample_define_catalog(w);
    uint64_t lanes[32];
    int failed = 0;
    for (uint64_t i = 0; i < 200000 && !failed; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        failed = wr_writer_event(w, &ev, &err) != 0;
    }
    if (!failed)
        failed = wr_writer_flush(w, &err) != 0;
    cr_assert(failed, "the failure reaches the caller");
    cr_assert(strstr(err.msg, "/dev/full"), "%s", err.msg);
    cr_assert(strstr(err.msg, "write failed") || strstr(err.msg, "flush failed"), "%s", err.msg);
    /* sticky: every later call says so */
    wr_event ev;
    sample_event(0, &ev, lanes);
    cr_assert_neq(wr_writer_event(w, &ev, &err), 0);
    cr_assert(strstr(err.msg, "/dev/full"), "%s", err.msg);
    cr_assert_neq(wr_writer_close(w, &err), 0);
}

Test(roundtrip, background_thread_failure_is_reported)
{
    assert_failure_reported(1);
}

Test(roundtrip, background_threads_failure_is_reported)
{
    assert_failure_reported(4);
}

/* Abandoning a writer whose threads have chunks queued, compressing and
 * waiting for the head: no hang, nothing leaked (ASan), at every point of
 * the queue's life the loop happens to hit. */
Test(roundtrip, background_threads_abandoned_with_chunks_queued)
{
    wr_header h = sample_header();
    uint64_t lanes[32];
    for (int round = 0; round < 40; round++) {
        wr_writer_options opts = {.chunk_bytes = 512, .background = 2 + round % 7};
        wr_error err;
        wr_writer *w = wr_writer_open(tmp_path, &h, &opts, &err);
        cr_assert(w, "%s", err.msg);
        sample_define_catalog(w);
        for (uint64_t i = 0; i < 500u + 300u * (unsigned)round; i++) {
            wr_event ev;
            sample_event(i, &ev, lanes);
            cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
        }
        wr_writer_abandon(w);
    }
}

/* The drain with workers (wrr_drain_options.workers): records converted and
 * encoded on worker threads, appended in ring order.  The trace must be
 * the same bytes as the inline drain's for the same ring and host events;
 * threaded producers keep their order; a worker's failure and a sink's
 * refusal stop the drain with a message naming the position, after the
 * events before it, and nothing hangs. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"
#include "drain.h"
#include "ring_sim.h"
#include "sim_helpers.h"
#include "warprace/trace.h"
#include "writer_sink.h"

static long host_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    memcpy(buf, (const void *)(uintptr_t)addr, len);
    return (long)len;
}

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
    return fake_now;
}

static wr_writer *open_writer(const char *path, int threads)
{
    wr_header h = sim_header();
    wr_writer_options wo = {.chunk_bytes = 4096, .background = threads};
    wr_error err;
    wr_writer *w = wr_writer_open(path, &h, &wo, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "scenario_kernel"), 1, "the launches' kernel");
    return w;
}

static void temp_path(char *path, size_t len, const char *what)
{
    snprintf(path, len, "/tmp/wr-drain-workers-%s-XXXXXX", what);
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
}

/* Record i of a launch: every address mode, atomics, fences, barriers,
 * and a site descriptor for some. */
static void record_words(uint64_t i, uint64_t site, uint64_t *words)
{
    if (i % 11 == 5) {
        wrr_encode_sync(words, WRR_K_FENCE, (uint32_t)(i % 7), 0, WR_FULL_MASK, 0,
                        WR_SCOPE_DEVICE, WR_ORDER_SC, site);
        return;
    }
    if (i % 13 == 7) {
        wrr_encode_sync(words, WRR_K_BARRIER, (uint32_t)(i % 7), (uint32_t)(i % 8), WR_FULL_MASK,
                        0, WR_BAR_BLOCK, 0, site);
        return;
    }
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = (uint32_t)(i % 7);
    d.warp = (uint32_t)(i % 8);
    d.active_mask = i % 5 == 1 ? 0x0000ffffu : WR_FULL_MASK;
    d.op = i % 3 ? WR_OP_LOAD : WR_OP_STORE;
    d.size = 4;
    d.space = WR_SPACE_GLOBAL;
    d.site_addr = site;
    for (unsigned l = 0; l < 32; l++) {
        uint64_t x = (i * 32 + l + 1) * 0x9e3779b97f4a7c15ull;
        d.lane_addr[l] = i % 4 == 0   ? 0x7f0000000000ull + i * 128 + 4 * l           /* stride */
                         : i % 4 == 1 ? 0x7f0000000000ull + (x >> 40) * 4             /* narrow */
                         : i % 4 == 2 ? 0x7f0000000000ull + i * 8                      /* uniform */
                                      : (0x100000000ull << (l % 12)) + (x >> 50) * 4; /* wide */
    }
    if (i % 9 == 4) {
        d.op = WR_OP_ATOMIC_RMW;
        d.atomic_op = WR_AOP_ADD;
        d.scope = WR_SCOPE_BLOCK;
        d.order = WR_ORDER_RELAXED;
    }
    wrr_encode_access(&d, words);
}

/* Drains the ring until nothing is left to take (single-threaded runs). */
static void drain_some(wrr_drain *d)
{
    long n;
    while ((n = wrr_drain_step(d)) > 0)
        ;
    cr_assert_geq(n, 0, "%s", d->error);
}

/* Six launches of records written in bursts that fill a 256-slot ring, one
 * closed early (a close, then its KERNEL_END), a host event between
 * launches, flushes every 300 events and once by time, sites, and a
 * drop-mode stretch with lost-events markers.  Written to path through
 * the writer sink with `workers` drain workers and as many writer
 * threads. */
static void record_scenario(const char *path, unsigned workers)
{
    static char file[64] = "kernels/scenario.cu", func[64] = "scenario_kernel";
    static wrr_site_desc s1 = {WRR_SITE_MAGIC, 17, file, func};
    static wrr_site_desc s2 = {WRR_SITE_MAGIC, 23, file, func};
    const uint64_t sites[] = {0, (uintptr_t)&s1, (uintptr_t)&s2};
    for (int drop = 0; drop < 2; drop++) {
        char part[4200];
        snprintf(part, sizeof part, "%s%s", path, drop ? ".drop" : "");
        wrr_sim sim;
        cr_assert_eq(wrr_sim_init(&sim, 8, drop), 0);
        wr_writer *w = open_writer(part, (int)workers);
        wrr_writer_sink ws;
        wrr_sink sink;
        wrr_writer_sink_init(&ws, w, &sink);
        fake_now = 1;
        wrr_drain_options o = {.workers = workers, .flush_events = 300, .flush_ns = 1000,
                               .now_ns = fake_clock, .read_mem = host_read};
        wrr_drain d;
        cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
        uint64_t words[2 * WRR_MAX_SLOTS];
        uint64_t i = 0;
        for (uint32_t l = 1; l <= 6; l++) {
            wr_event ev = launch_ev(l);
            wrr_drain_post(&d, &ev);
            drain_some(&d);
            for (int burst = 0; burst < 12; burst++) {
                for (int k = 0; k < 40; k++, i++) {
                    record_words(i, sites[i % 3], words);
                    /* drop mode: a full ring drops (counted); else room is left */
                    uint64_t head = sim.dev.head, tail = sim.ring.ctl->tail;
                    if (!drop && head - tail + WRR_W0_NSLOTS(words[0]) > 256)
                        drain_some(&d);
                    wrr_sim_write(&sim, words, 32, 0);
                }
                drain_some(&d);
                if (burst == 6) {   /* an idle drain flushes by time */
                    fake_now += 2000;
                    drain_some(&d);
                }
            }
            if (l == 3)
                wrr_drain_post_close(&d, l, sim.dev.head);
            ev = end_ev(l);
            wrr_drain_post(&d, &ev);
            wr_event copy;
            memset(&copy, 0, sizeof copy);
            copy.kind = WR_EV_DEVICE_SYNC;
            wrr_drain_post(&d, &copy);
            drain_some(&d);
        }
        /* a launch group (a CUDA graph's kernel nodes): records of two
         * members interleaved, each with its member's tag */
        for (uint32_t tag = 1; tag <= 2; tag++) {
            wr_event ev = launch_ev(6 + tag);
            wrr_drain_post_tagged_launch(&d, &ev, tag);
        }
        for (int k = 0; k < 300; k++, i++) {
            record_words(i, sites[i % 3], words);
            words[2] |= (uint64_t)(1 + k % 2) << 48;
            uint64_t head = sim.dev.head, tail = sim.ring.ctl->tail;
            if (!drop && head - tail + WRR_W0_NSLOTS(words[0]) > 256)
                drain_some(&d);
            wrr_sim_write(&sim, words, 32, 0);
        }
        wrr_drain_post_group_close(&d, sim.dev.head);
        cr_assert_eq(wrr_drain_finish(&d), 0, "%s", d.error);
        if (drop)
            cr_assert_gt(d.st.lost_records, 0, "the drop stretch lost records");
        cr_assert_gt(d.st.sites, 0);
        wrr_drain_destroy(&d);
        wr_error err;
        cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
        wrr_sim_free(&sim);
    }
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    cr_assert_gt(na, 20000, "%s: several chunks", a);
    cr_assert_eq(na, nb, "%s and %s: the same size", a, b);
    cr_assert(!memcmp(x, y, na), "%s and %s: the same bytes", a, b);
    free(x);
    free(y);
}

static void remove_scenario(const char *path)
{
    char part[4200];
    snprintf(part, sizeof part, "%s.drop", path);
    unlink(path);
    unlink(part);
}

Test(drain_workers, the_same_trace_as_the_inline_drain)
{
    char inline_path[4096], par_path[4096];
    temp_path(inline_path, sizeof inline_path, "inline");
    temp_path(par_path, sizeof par_path, "par");
    record_scenario(inline_path, 0);
    for (unsigned workers = 1; workers <= 5; workers += 2) {
        record_scenario(par_path, workers);
        assert_same_file(inline_path, par_path);
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s.drop", inline_path);
        snprintf(b, sizeof b, "%s.drop", par_path);
        assert_same_file(a, b);
    }
    remove_scenario(inline_path);
    remove_scenario(par_path);
}

/* The drain's thread, its workers and four producers on a 128-slot ring
 * (back-pressure all along): every record arrives, each producer's in
 * its order, between the launch and its end. */
Test(drain_workers, threaded_producers_keep_their_order)
{
    char path[4096];
    temp_path(path, sizeof path, "threads");
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 7, 0), 0);
    wr_writer *w = open_writer(path, 2);
    wrr_writer_sink ws;
    wrr_sink sink;
    wrr_writer_sink_init(&ws, w, &sink);
    wrr_drain_options o = {.workers = 3};
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    d.poll_sleep_ns = 1000;
    cr_assert_eq(wrr_drain_start_thread(&d), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    enum { P = 4, N = 5000 };
    cr_assert_eq(sim_run_producers(&sim, P, N, 1), 0);
    wr_event e = end_ev(1);
    wrr_drain_post(&d, &e);
    wrr_drain_wait_processed(&d);
    cr_assert_eq(wrr_drain_stop_thread(&d), 0, "%s", d.error);
    cr_assert_gt(sim.waits, 0, "a 128-slot ring must have pushed back");
    wrr_drain_destroy(&d);
    wr_error err;
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_reader *r = wr_reader_open(path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    uint64_t next[P] = {0}, n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++, n++) {
            const wr_event *ev = &b.events[i];
            if (n == 0) {
                cr_assert_eq(ev->kind, WR_EV_KERNEL_LAUNCH);
                continue;
            }
            if (n == 1 + P * N) {
                cr_assert_eq(ev->kind, WR_EV_KERNEL_END);
                continue;
            }
            cr_assert_eq(ev->kind, WR_EV_ACCESS, "event %llu", (unsigned long long)n);
            uint32_t blk = ev->u.access.block;
            cr_assert_lt(blk, P);
            cr_assert_eq(wr_access_lane_addr(&ev->u.access, 0), 0x1000 + next[blk] * 128,
                         "block %u, record %llu", blk, (unsigned long long)next[blk]);
            next[blk]++;
        }
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n, 2 + P * N);
    wr_reader_close(r);
    wrr_sim_free(&sim);
    unlink(path);
}

/* Counts the events of a trace. */
static uint64_t trace_events(const char *path)
{
    wr_error err;
    wr_reader *r = wr_reader_open(path, &err);
    cr_assert(r, "%s", err.msg);
    wr_batch b;
    uint64_t n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        n += b.count;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    wr_reader_close(r);
    return n;
}

/* A record only the conversion finds bad (a barrier scope out of range),
 * deep inside a batch of a worker: the drain stops with the reason and
 * the record's ring position, and the trace holds exactly the events
 * before it, as the inline drain's would. */
Test(drain_workers, a_bad_record_found_by_a_worker_ends_the_trace_there)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        char path[4096];
        temp_path(path, sizeof path, "bad");
        wrr_sim sim;
        cr_assert_eq(wrr_sim_init(&sim, 12, 0), 0);
        wr_writer *w = open_writer(path, (int)workers);
        wrr_writer_sink ws;
        wrr_sink sink;
        wrr_writer_sink_init(&ws, w, &sink);
        wrr_drain_options o = {.workers = workers};
        wrr_drain d;
        cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
        wr_event l = launch_ev(1);
        wrr_drain_post(&d, &l);
        uint64_t words[2 * WRR_MAX_SLOTS];
        uint64_t bad_pos = 0;
        for (uint64_t i = 0; i < 1000; i++) {   /* 2000 of 4096 slots */
            if (i == 700) {
                bad_pos = sim.dev.head;
                wrr_encode_sync(words, WRR_K_BARRIER, 1, 0, WR_FULL_MASK, 64, WR_SCOPE_SYSTEM,
                                0, 0);
            } else
                wrr_encode_sync(words, WRR_K_FENCE, 0, 0, WR_FULL_MASK, 0, WR_SCOPE_DEVICE,
                                WR_ORDER_SC, 0);
            cr_assert_eq(wrr_sim_write(&sim, words, 32, 0), 1);
        }
        long n = 0;
        while ((n = wrr_drain_step(&d)) > 0)
            ;
        cr_assert_eq(wrr_drain_finish(&d), -1, "workers %u", workers);
        cr_assert(strstr(d.error, "barrier scope out of range"), "%s", d.error);
        char at[64];
        snprintf(at, sizeof at, "position %llu", (unsigned long long)bad_pos);
        cr_assert(strstr(d.error, at), "workers %u: %s (expected %s)", workers, d.error, at);
        wrr_drain_destroy(&d);
        wr_error err;
        wr_writer_close(w, &err);
        cr_assert_eq(trace_events(path), 1 + 700, "workers %u: the launch and the records before",
                     workers);
        wrr_sim_free(&sim);
        unlink(path);
    }
}

/* A sink that refuses encoded events after the first call. */
static int refusals;
static int refuse_second(void *ctx, const wr_encoded *events)
{
    (void)ctx;
    (void)events;
    return refusals++ ? -1 : 0;
}
static int accept_event(void *ctx, const wr_event *ev)
{
    (void)ctx;
    (void)ev;
    return 0;
}
static const char *refusal_reason(void *ctx)
{
    (void)ctx;
    return "disk quota exceeded";
}

Test(drain_workers, a_refusing_sink_stops_the_drain_with_its_reason)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 14, 0), 0);
    wrr_sink sink = {.event = accept_event, .error = refusal_reason, .encoded = refuse_second};
    wrr_drain_options o = {.workers = 2};
    wrr_drain d;
    refusals = 0;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    uint64_t words[4];
    for (uint64_t i = 0; i < 6000; i++) {   /* 2-slot records, 16384 slots: two batches */
        wrr_encode_sync(words, WRR_K_FENCE, 0, 0, WR_FULL_MASK, 0, WR_SCOPE_DEVICE, WR_ORDER_SC, 0);
        cr_assert_eq(wrr_sim_write(&sim, words, 32, 0), 1);
    }
    while (wrr_drain_step(&d) > 0)
        ;
    cr_assert_eq(wrr_drain_finish(&d), -1);
    cr_assert(strstr(d.error, "rejected"), "%s", d.error);
    cr_assert(strstr(d.error, "disk quota exceeded"), "%s", d.error);
    wrr_drain_destroy(&d);
    wrr_sim_free(&sim);
}

/* Workers append through sink.encoded: a sink without it is refused. */
Test(drain_workers, workers_need_a_sink_that_takes_encoded_events)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    wrr_sink sink = {.event = accept_event};
    wrr_drain_options o = {.workers = 2};
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), -1);
    wrr_sim_free(&sim);
}

/* A drain destroyed without finishing (the recorder giving up) stops its
 * workers: no hang, no leak (ASan). */
Test(drain_workers, destroy_without_finish_stops_the_workers)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 10, 0), 0);
    wrr_sink sink = {.event = accept_event, .encoded = refuse_second};
    refusals = -1000000;
    wrr_drain_options o = {.workers = 3};
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    uint64_t words[4];
    for (uint64_t i = 0; i < 500; i++) {
        wrr_encode_sync(words, WRR_K_FENCE, 0, 0, WR_FULL_MASK, 0, WR_SCOPE_DEVICE, WR_ORDER_SC, 0);
        cr_assert_eq(wrr_sim_write(&sim, words, 32, 0), 1);
    }
    cr_assert_gt(wrr_drain_step(&d), 0);
    wrr_drain_destroy(&d);
    wrr_sim_free(&sim);
}

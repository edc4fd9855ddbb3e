/* The drain against a simulated ring in host memory: order, wrap-around,
 * back-pressure, drop mode and lost-events markers, chunk flushing, sites,
 * corruption. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "capture.h"
#include "convert.h"
#include "drain.h"
#include "ring_sim.h"
#include "sim_helpers.h"

static uint64_t enc[2 * WRR_MAX_SLOTS];

/* An access record whose address encodes `tag` so that order is checkable;
 * vector = 1 gives an 11-slot record, 2 a 19-slot one. */
static const uint64_t *access_rec(uint32_t block, uint64_t tag, int vector)
{
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = block;
    d.active_mask = WR_FULL_MASK;
    d.op = WR_OP_STORE;
    d.size = 4;
    for (unsigned i = 0; i < 32; i++)
        d.lane_addr[i] = vector == 0 ? 0x1000 + tag * 128 + 4 * i
                       : vector == 1 ? 0x1000 + tag * 128 + ((i * 13) % 32) * 4
                                     : (0x100000000ull << (i % 8)) + tag;
    wrr_encode_access(&d, enc);
    return enc;
}

static uint64_t first_addr(const wr_event *e)
{
    return wr_access_lane_addr(&e->u.access, 0);
}

Test(drain, launch_records_end_in_order)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);

    /* records committed before the drain saw their KERNEL_LAUNCH: a poll
     * with the launch posted but unprocessed must not take them */
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    for (uint64_t i = 0; i < 5; i++)
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, i, 0), 32, 0), 1);
    cr_assert_eq(wrr_drain_poll(&d, 100), 0);
    cr_assert_eq(cap.n, 0);
    cr_assert_gt(wrr_drain_step(&d), 0);
    wr_event e = end_ev(1);
    wrr_drain_post(&d, &e);
    for (uint64_t i = 5; i < 8; i++)
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, i, 0), 32, 0), 1);
    cr_assert_eq(wrr_drain_finish(&d), 0);

    cr_assert_eq(cap.n, 10);
    cr_assert_eq(cap.ev[0].kind, WR_EV_KERNEL_LAUNCH);
    for (unsigned i = 1; i <= 8; i++) {
        cr_assert_eq(cap.ev[i].kind, WR_EV_ACCESS);
        cr_assert_eq(cap.ev[i].u.access.launch, 1);
        cr_assert_eq(first_addr(&cap.ev[i]), 0x1000 + (i - 1) * 128);
    }
    cr_assert_eq(cap.ev[9].kind, WR_EV_KERNEL_END, "the end follows every record of its kernel");
    cr_assert_eq(d.st.records, 8);
    cr_assert_eq(__atomic_load_n(&sim.ring.ctl->tail, __ATOMIC_ACQUIRE), 24, "tail published");
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, wraparound_with_records_straddling_the_end)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);      /* 64 slots */
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(3);
    wrr_drain_post(&d, &l);
    wrr_drain_step(&d);
    /* sizes 3, 11, 19 slots in a pattern that makes records straddle the
     * end of the array on many laps */
    uint64_t expect = 0;
    int straddled = 0;
    for (uint64_t i = 0; i < 600; i++) {
        int v = (int)(i % 3);
        const uint64_t *r = access_rec(2, i, v);
        unsigned n = WRR_W0_NSLOTS(r[0]);
        uint64_t head = sim.dev.head;
        if ((head & 63) + n > 64)
            straddled++;
        cr_assert_eq(wrr_sim_write(&sim, r, 32, 0), 1);
        if (i % 2)
            cr_assert_geq(wrr_drain_poll(&d, 1000), 0, "%s", d.error);
        expect++;
    }
    cr_assert_eq(wrr_drain_finish(&d), 0, "%s", d.error);
    cr_assert_gt(straddled, 10);
    cr_assert_eq(cap.n, 1 + expect);
    for (uint64_t i = 0; i < expect; i++) {
        const wr_event *e = &cap.ev[1 + i];
        cr_assert_eq(e->u.access.block, 2);
        int v = (int)(i % 3);
        if (v == 0)
            cr_assert_eq(first_addr(e), 0x1000 + i * 128);
        else if (v == 1)
            cr_assert_eq(e->u.access.lane_addr[1], 0x1000 + i * 128 + 13 * 4, "record %llu",
                         (unsigned long long)i);
        else
            cr_assert_eq(e->u.access.lane_addr[3], (0x100000000ull << 3) + i);
    }
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, an_uncommitted_record_holds_back_later_ones)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    uint64_t first[2 * WRR_MAX_SLOTS];
    memcpy(first, access_rec(0, 0, 0), sizeof first);
    uint64_t pos = wrr_sim_reserve_only(&sim, 3);
    cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0), 1);
    wrr_drain_step(&d);
    cr_assert_eq(cap.n, 1, "only the launch: record 0 is reserved, not committed");
    wrr_sim_commit_at(&sim, pos, first);
    cr_assert_eq(wrr_drain_poll(&d, 100), 2);
    cr_assert_eq(first_addr(&cap.ev[1]), 0x1000);
    cr_assert_eq(first_addr(&cap.ev[2]), 0x1000 + 128);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, back_pressure_blocks_until_drained)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    wrr_drain_step(&d);
    /* 21 records of 3 slots fill 63 of 64 slots; the 22nd must wait */
    for (uint64_t i = 0; i < 21; i++)
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, i, 0), 32, 100), 1);
    cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 21, 0), 32, 100), -1, "ring full: waits");
    cr_assert_eq(sim.waits, 1);
    uint64_t held = sim.last_pos;
    cr_assert_eq(wrr_drain_poll(&d, 5), 5);
    /* space now: the waiting writer proceeds into its reservation */
    uint64_t rec[2 * WRR_MAX_SLOTS];
    memcpy(rec, access_rec(0, 21, 0), sizeof rec);
    wrr_sim_commit_at(&sim, held, rec);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 23);
    for (uint64_t i = 0; i < 22; i++)
        cr_assert_eq(first_addr(&cap.ev[1 + i]), 0x1000 + i * 128);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, threaded_producers_and_drain_thread)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 7, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    d.poll_sleep_ns = 1000;
    cr_assert_eq(wrr_drain_start_thread(&d), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    wrr_drain_wait_processed(&d);
    enum { P = 4, N = 5000 };
    cr_assert_eq(sim_run_producers(&sim, P, N, 0), 0);
    wr_event e = end_ev(1);
    wrr_drain_post(&d, &e);
    wrr_drain_wait_processed(&d);
    cr_assert_eq(wrr_drain_stop_thread(&d), 0, "%s", d.error);
    cr_assert_eq(cap.n, 2 + P * N);
    cr_assert_eq(cap.ev[cap.n - 1].kind, WR_EV_KERNEL_END);
    cr_assert_gt(sim.waits, 0, "a 128-slot ring must have pushed back");
    /* per producer, records arrive in program order */
    uint64_t next[P] = {0};
    for (size_t i = 1; i + 1 < cap.n; i++) {
        const wr_event *ev = &cap.ev[i];
        uint32_t b = ev->u.access.block;
        cr_assert_lt(b, P);
        cr_assert_eq(first_addr(ev), 0x1000 + next[b] * 128);
        next[b]++;
    }
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, drop_mode_counts_and_emits_lost)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 1), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(5);
    wrr_drain_post(&d, &l);
    wrr_drain_step(&d);
    int kept = 0, dropped = 0;
    for (uint64_t i = 0; i < 30; i++) {
        int r = wrr_sim_write(&sim, access_rec(1, i, 0), 20, 0);
        cr_assert_neq(r, -1, "drop mode never waits");
        r ? kept++ : dropped++;
    }
    cr_assert_eq(kept, 21);
    cr_assert_eq(dropped, 9);
    cr_assert_eq(sim.ring.ctl->dropped_records, 9);
    cr_assert_eq(sim.ring.ctl->dropped_lanes, 9 * 20);
    cr_assert_eq(wrr_drain_poll(&d, 1000), 21);
    /* after the drain made room, records are kept again */
    cr_assert_eq(wrr_sim_write(&sim, access_rec(1, 100, 0), 32, 0), 1);
    int r = wrr_sim_write(&sim, access_rec(1, 101, 0), 32, 0);
    cr_assert_eq(r, 1);
    wr_event e = end_ev(5);
    wrr_drain_post(&d, &e);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    /* launch, LOST(9), 21 records, 2 records, end */
    cr_assert_eq(cap.n, 1 + 1 + 21 + 2 + 1);
    cr_assert_eq(cap.ev[1].kind, WR_EV_LOST, "the loss is reported where it was noticed");
    cr_assert_eq(cap.ev[1].u.lost.count, 9);
    cr_assert_eq(cap.ev[1].u.lost.launch, 5);
    cr_assert_eq(cap.ev[1].u.lost.block, UINT32_MAX);
    cr_assert_eq(d.st.lost_records, 9);
    cr_assert_eq(d.st.lost_lanes, 180);
    cr_assert_eq(d.st.lost_events_emitted, 1);
    cr_assert_eq(cap.ev[cap.n - 1].kind, WR_EV_KERNEL_END);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, drops_noticed_at_kernel_end_precede_it)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 1), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(2), e = end_ev(2);
    wrr_drain_post(&d, &l);
    wrr_drain_step(&d);
    for (uint64_t i = 0; i < 25; i++)
        wrr_sim_write(&sim, access_rec(1, i, 0), 32, 0);
    wrr_drain_post(&d, &e);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.ev[cap.n - 1].kind, WR_EV_KERNEL_END);
    int lost_seen = 0;
    for (size_t i = 0; i + 1 < cap.n; i++)
        if (cap.ev[i].kind == WR_EV_LOST) {
            lost_seen = 1;
            cr_assert_eq(cap.ev[i].u.lost.count, 4);
        }
    cr_assert(lost_seen);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

static uint64_t fake_now;
static uint64_t fake_clock(void) { return fake_now; }

Test(drain, chunk_flushing_by_count_time_and_finish)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 10, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    wrr_drain_options o = {.flush_events = 10, .flush_ns = 1000, .now_ns = fake_clock};
    fake_now = 0;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    for (uint64_t i = 0; i < 24; i++)
        wrr_sim_write(&sim, access_rec(0, i, 0), 32, 0);
    wrr_drain_step(&d);
    cr_assert_eq(cap.n, 25);
    cr_assert_eq(cap.flushes, 2, "a flush every 10 events");
    cr_assert_eq(cap.flushed_upto, 20);
    /* idle, 5 events pending, not long enough yet */
    fake_now = 500;
    cr_assert_eq(wrr_drain_step(&d), 0);
    cr_assert_eq(cap.flushes, 2);
    fake_now = 1500;
    cr_assert_eq(wrr_drain_step(&d), 0);
    cr_assert_eq(cap.flushes, 3, "pending events are flushed after flush_ns idle");
    cr_assert_eq(cap.flushed_upto, 25);
    /* nothing pending: no empty flushes */
    fake_now = 5000;
    wrr_drain_step(&d);
    cr_assert_eq(cap.flushes, 3);
    wrr_sim_write(&sim, access_rec(0, 99, 0), 32, 0);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.flushes, 4);
    cr_assert_eq(cap.flushed_upto, cap.n, "finish leaves nothing unflushed");
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

static long host_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    if (addr == 0xbad)
        return -1;
    memcpy(buf, (const void *)(uintptr_t)addr, len);   /* strings here are long enough */
    return (long)len;
}

Test(drain, sites_resolved_once_per_descriptor)
{
    static char file[128] = "kernels/mp.cu";
    static char func[128] = "mp_kernel";
    static wrr_site_desc s1 = {WRR_SITE_MAGIC, 17, file, func};
    static wrr_site_desc s2 = {WRR_SITE_MAGIC, 23, file, func};
    static wrr_site_desc bad = {0x1111, 5, file, func};
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    wrr_drain_options o = {.read_mem = host_read};
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    uint64_t sites[] = {(uintptr_t)&s1, (uintptr_t)&s2, (uintptr_t)&s1, (uintptr_t)&bad, 0, 0xbad,
                        (uintptr_t)&s2};
    uint64_t w[4];
    for (unsigned i = 0; i < 7; i++) {
        wrr_encode_sync(w, WRR_K_FENCE, 0, 0, 1, 0, WR_SCOPE_DEVICE, WR_ORDER_SC, sites[i]);
        wrr_sim_write(&sim, w, 1, 0);
    }
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.nsites, 2, "two good descriptors, each defined once");
    cr_assert_str_eq(cap.sites[0].file, "kernels/mp.cu");
    cr_assert_str_eq(cap.sites[0].func, "mp_kernel");
    cr_assert_eq(cap.sites[0].line, 17);
    cr_assert_eq(cap.sites[1].line, 23);
    uint32_t expect[] = {1, 2, 1, 0, 0, 0, 2};
    for (unsigned i = 0; i < 7; i++)
        cr_assert_eq(cap.ev[1 + i].site, expect[i], "event %u", i);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, corrupt_ring_is_reported)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    /* a header whose tag belongs to a later lap */
    sim.ring.slots[0] = WRR_W0(WRR_TAG(64, 6), WRR_K_FENCE, 2, 0, 0, WR_SCOPE_DEVICE, WR_ORDER_SC, 0, 0, 0);
    cr_assert_eq(wrr_drain_step(&d), -1);
    cr_assert(strstr(d.error, "another lap"), "%s", d.error);
    wrr_drain_destroy(&d);
    cap_free(&cap);

    /* a committed record with a bad kind */
    wrr_sim_free(&sim);
    cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);
    sink = cap_sink(&cap);
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wrr_drain_post(&d, &l);
    uint64_t w[4] = {WRR_W0(0, 13, 2, 0, 0, 0, 0, 0, 0, 0), 1, 0, 0};
    wrr_sim_write(&sim, w, 1, 0);
    cr_assert_eq(wrr_drain_step(&d), -1);
    cr_assert(strstr(d.error, "unknown record kind"), "%s", d.error);
    cr_assert_eq(wrr_drain_finish(&d), -1);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* Barrier scopes reach the sink; one that names no set of threads stops
 * the drain as any malformed record does, and nothing after it is taken. */
Test(drain, barrier_scopes_and_a_bad_one)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    uint64_t w[4];
    wrr_encode_sync(w, WRR_K_BARRIER, 1, 0, WR_FULL_MASK, 64, WR_BAR_CLUSTER, 0, 0);
    cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
    wrr_encode_sync(w, WRR_K_BARRIER, 2, 1, WR_FULL_MASK, 96, WR_BAR_GRID, 0, 0);
    cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
    cr_assert_eq(wrr_drain_step(&d), 3);
    cr_assert_eq(cap.n, 3);
    cr_assert_eq(cap.ev[1].kind, WR_EV_BARRIER);
    cr_assert_eq(cap.ev[1].u.barrier.scope, WR_BAR_CLUSTER);
    cr_assert_eq(cap.ev[1].u.barrier.expected, 64);
    cr_assert_eq(cap.ev[1].u.barrier.launch, 1);
    cr_assert_eq(cap.ev[2].u.barrier.scope, WR_BAR_GRID);
    cr_assert_eq(cap.ev[2].u.barrier.expected, 96);
    cr_assert_eq(cap.ev[2].u.barrier.block, 2);

    wrr_encode_sync(w, WRR_K_BARRIER, 1, 0, WR_FULL_MASK, 64, WR_SCOPE_SYSTEM, 0, 0);
    cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
    cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0), 1);
    cr_assert_eq(wrr_drain_step(&d), -1);
    cr_assert(strstr(d.error, "barrier scope out of range"), "%s", d.error);
    cr_assert_eq(cap.n, 3);
    cr_assert_eq(wrr_drain_finish(&d), -1);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* Split barriers reach the sink with their mode; a mode out of range, and
 * one that does not fit its scope (a block wait), stop the drain as a bad
 * scope does, and nothing after either is taken. */
Test(drain, barrier_modes_and_bad_ones)
{
    static const struct {
        uint8_t mode, scope;
        uint32_t aux;
        const char *why;
    } bad[] = {
        {5, WR_BAR_CLUSTER, 64, "barrier mode out of range"},
        {7, WR_BAR_GRID, 64, "barrier mode out of range"},
        {WR_BARMODE_INIT, WR_BAR_CLUSTER, 64, "an init of a barrier other than an mbarrier"},
        {WR_BARMODE_WAIT, WR_BAR_BLOCK, 0, "a wait at a block barrier"},
    };
    for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        wrr_sim sim;
        cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);
        capture cap;
        wrr_sink sink = cap_sink(&cap);
        wrr_drain d;
        cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
        wr_event l = launch_ev(1);
        wrr_drain_post(&d, &l);
        uint64_t w[4];
        /* a producer warp's bar.arrive, the cluster's arrive, relaxed
         * arrive and wait, the grid's arrive and wait */
        static const struct { uint8_t scope, mode; uint32_t aux; } sent[] = {
            {WR_BAR_BLOCK, WR_BARMODE_ARRIVE, WRR_BAR_AUX_BLOCK(1, 64)},
            {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 128},
            {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED, 128},
            {WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0},
            {WR_BAR_GRID, WR_BARMODE_ARRIVE, 256},
            {WR_BAR_GRID, WR_BARMODE_WAIT, 0},
        };
        size_t nsent = sizeof sent / sizeof sent[0];
        for (unsigned i = 0; i < nsent; i++) {
            wrr_encode_sync(w, WRR_K_BARRIER, i, 1, WR_FULL_MASK, sent[i].aux, sent[i].scope,
                            sent[i].mode, 0);
            cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
        }
        cr_assert_eq(wrr_drain_step(&d), (int)nsent + 1);
        cr_assert_eq(cap.n, nsent + 1);
        for (unsigned i = 0; i < nsent; i++) {
            const wr_event *e = &cap.ev[1 + i];
            cr_assert_eq(e->kind, WR_EV_BARRIER);
            cr_assert_eq(e->u.barrier.mode, sent[i].mode, "record %u: mode %u", i,
                         e->u.barrier.mode);
            cr_assert_eq(e->u.barrier.scope, sent[i].scope, "record %u", i);
            cr_assert_eq(e->u.barrier.block, i);
            cr_assert_eq(e->u.barrier.launch, 1);
        }
        cr_assert_eq(cap.ev[1].u.barrier.barrier_id, 1);
        cr_assert_eq(cap.ev[1].u.barrier.expected, 64);
        cr_assert_eq(cap.ev[2].u.barrier.expected, 128);
        cr_assert_eq(cap.ev[4].u.barrier.expected, 0);

        wrr_encode_sync(w, WRR_K_BARRIER, 1, 0, WR_FULL_MASK, bad[k].aux, bad[k].scope,
                        bad[k].mode, 0);
        cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0), 1);
        cr_assert_eq(wrr_drain_step(&d), -1, "case %u", k);
        cr_assert(strstr(d.error, "corrupt ring record"), "case %u: %s", k, d.error);
        cr_assert(strstr(d.error, bad[k].why), "case %u: %s", k, d.error);
        cr_assert_eq(cap.n, nsent + 1, "case %u", k);
        cr_assert_eq(wrr_drain_finish(&d), -1);
        wrr_drain_destroy(&d);
        cap_free(&cap);
        wrr_sim_free(&sim);
    }
}

/* mbarrier records (3 slots, the offset in the third) reach the sink as
 * BARRIERs of scope mbarrier, between 2-slot sync records and accesses and
 * across the ring's end; a bad one (its offset, count, parity or slot
 * count) stops the drain, and nothing after it is taken. */
Test(drain, mbarriers_and_bad_ones)
{
    static const struct {
        uint8_t mode;
        uint64_t offset;
        uint32_t aux;
        unsigned slots;   /* 0: as encoded */
        const char *why;
    } bad[] = {
        {WR_BARMODE_ARRIVE, 0x104, 0, 0, "not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_ARRIVE, (1ull << 32) | 0x100, 0, 0, "not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_INIT, 0x100, 0, 0, "an mbarrier's init count out of range"},
        {WR_BARMODE_WAIT, 0x100, 2, 0, "an mbarrier wait's parity is not 0 or 1"},
        {WR_BARMODE_SYNC, 0x100, 0, 0, "an mbarrier has no sync"},
        {WR_BARMODE_ARRIVE, 0x100, 0, 2, "slot count of an mbarrier record is not 3"},
    };
    for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        wrr_sim sim;
        cr_assert_eq(wrr_sim_init(&sim, 6, 0), 0);   /* 64 slots: the records wrap */
        capture cap;
        wrr_sink sink = cap_sink(&cap);
        wrr_drain d;
        cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
        wr_event l = launch_ev(1);
        wrr_drain_post(&d, &l);
        /* an init by one thread, a block barrier, arrives of a warp and
         * of a lane with a count, waits of both parities; 7 x 3 + 2 + 3
         * slots, the last records straddling the end of the ring */
        static const struct { uint8_t mode; uint32_t offset, aux, mask; } sent[] = {
            {WR_BARMODE_INIT, 0x100, 64, 0x1},
            {WR_BARMODE_INIT, WR_SHARED_LIMIT - 8, WR_MBARRIER_COUNT_MAX, 0x1},
            {WR_BARMODE_ARRIVE, 0x100, 0, WR_FULL_MASK},
            {WR_BARMODE_ARRIVE, 0x100, 32, 0x1},
            {WR_BARMODE_ARRIVE_RELAXED, 0x108, 0, 0xffff},
            {WR_BARMODE_WAIT, 0x100, 0, WR_FULL_MASK},
            {WR_BARMODE_WAIT, WR_SHARED_LIMIT - 8, 1, 0xf0},
        };
        enum { N = sizeof sent / sizeof sent[0] };
        uint64_t w[2 * WRR_MBAR_SLOTS];
        for (unsigned round = 0; round < 3; round++) {
            size_t base = cap.n;
            for (unsigned i = 0; i < N; i++) {
                wrr_encode_mbarrier(w, i, 2, sent[i].mask, sent[i].offset, sent[i].aux,
                                    sent[i].mode, 0);
                cr_assert_eq(wrr_sim_write(&sim, w, (unsigned)__builtin_popcount(sent[i].mask), 0), 1);
                if (i == 2) {   /* a 2-slot record between them */
                    wrr_encode_sync(w, WRR_K_BARRIER, 0, 0, WR_FULL_MASK,
                                    WRR_BAR_AUX_BLOCK(0, 64), WR_BAR_BLOCK, 0, 0);
                    cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
                }
            }
            cr_assert_eq(wrr_sim_write(&sim, access_rec(0, round, 0), 32, 0), 1);
            cr_assert_gt(wrr_drain_step(&d), 0, "%s", d.error);
            cr_assert_eq(cap.n, base + (round ? 0 : 1) + N + 2, "round %u", round);
            size_t at = base + (round ? 0 : 1);
            for (unsigned i = 0; i < N; i++, at++) {
                if (i == 3)
                    at++;   /* the block barrier */
                const wr_barrier *b = &cap.ev[at].u.barrier;
                cr_assert_eq(cap.ev[at].kind, WR_EV_BARRIER, "round %u, record %u", round, i);
                cr_assert_eq(b->scope, WR_BAR_MBARRIER, "round %u, record %u", round, i);
                cr_assert_eq(b->mode, sent[i].mode, "round %u, record %u", round, i);
                cr_assert_eq(b->barrier_id, sent[i].offset, "round %u, record %u", round, i);
                cr_assert_eq(b->expected, sent[i].aux, "round %u, record %u", round, i);
                cr_assert_eq(b->active_mask, sent[i].mask, "round %u, record %u", round, i);
                cr_assert_eq(b->block, i);
                cr_assert_eq(b->warp, 2);
                cr_assert_eq(b->launch, 1);
            }
            cr_assert_eq(cap.ev[base + (round ? 0 : 1) + 3].u.barrier.scope, WR_BAR_BLOCK);
            cr_assert_eq(cap.ev[at].kind, WR_EV_ACCESS, "round %u", round);
        }
        size_t taken = cap.n;

        wrr_encode_mbarrier(w, 1, 0, WR_FULL_MASK, bad[k].offset, bad[k].aux, bad[k].mode, 0);
        if (bad[k].slots)
            w[0] = (w[0] & ~(31ull << 37)) | ((uint64_t)bad[k].slots << 37);
        cr_assert_eq(wrr_sim_write(&sim, w, 32, 0), 1);
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0), 1);
        cr_assert_eq(wrr_drain_step(&d), -1, "case %u", k);
        cr_assert(strstr(d.error, "corrupt ring record"), "case %u: %s", k, d.error);
        cr_assert(strstr(d.error, bad[k].why), "case %u: %s", k, d.error);
        cr_assert_eq(cap.n, taken, "case %u", k);
        cr_assert_eq(wrr_drain_finish(&d), -1);
        wrr_drain_destroy(&d);
        cap_free(&cap);
        wrr_sim_free(&sim);
    }
}

/* A DSMEM record from the simulated device: block 1 of a cluster of 4
 * reads words of blocks 0 and 2 (lanes 0-15 and 16-31), then block 2 stores
 * to its own words through SHARED.  The drain hands out an ACCESS in space
 * 3 whose lanes name (owner, offset). */
Test(drain, dsmem_record_becomes_a_space_3_access)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    l.u.launch.grid[0] = 4;
    l.u.launch.cluster[0] = 4;
    wrr_drain_post(&d, &l);
    wrr_access_desc a;
    memset(&a, 0, sizeof a);
    a.block = 1;
    a.warp = 0;
    a.active_mask = WR_FULL_MASK;
    a.op = WR_OP_LOAD;
    a.space = WR_SPACE_DSMEM;
    a.size = 4;
    for (uint32_t i = 0; i < 32; i++)
        a.lane_addr[i] = wr_dsmem_addr(i < 16 ? 0 : 2, 4 * (i % 16));
    cr_assert_eq(wrr_encode_access(&a, enc), 19);
    cr_assert_eq(wrr_sim_write(&sim, enc, 32, 0), 1);
    memset(&a, 0, sizeof a);
    a.block = 2;
    a.active_mask = 0xffffu;
    a.op = WR_OP_STORE;
    a.space = WR_SPACE_SHARED;
    a.size = 4;
    for (uint32_t i = 0; i < 16; i++)
        a.lane_addr[i] = 4 * i;
    wrr_encode_access(&a, enc);
    cr_assert_eq(wrr_sim_write(&sim, enc, 16, 0), 1);
    cr_assert_eq(wrr_drain_finish(&d), 0, "%s", d.error);
    cr_assert_eq(cap.n, 3);
    const wr_access *g = &cap.ev[1].u.access;
    cr_assert_eq(cap.ev[1].kind, WR_EV_ACCESS);
    cr_assert_eq(g->space, WR_SPACE_DSMEM);
    cr_assert_eq(g->launch, 1);
    cr_assert_eq(g->block, 1);
    cr_assert_eq(g->op, WR_OP_LOAD);
    cr_assert_eq(g->active_mask, WR_FULL_MASK);
    for (unsigned i = 0; i < 32; i++) {
        uint64_t x = wr_access_lane_addr(g, i);
        cr_assert_eq(wr_dsmem_block(x), i < 16 ? 0u : 2u, "lane %u", i);
        cr_assert_eq(wr_dsmem_offset(x), 4 * (i % 16), "lane %u", i);
    }
    /* the owner's own store names the same words of block 2 */
    const wr_access *s = &cap.ev[2].u.access;
    cr_assert_eq(s->space, WR_SPACE_SHARED);
    cr_assert_eq(s->block, 2);
    for (unsigned i = 0; i < 16; i++)
        cr_assert_eq(wr_access_lane_addr(s, i), wr_dsmem_offset(wr_access_lane_addr(g, 16 + i)));
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, sink_failure_stops_the_drain)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    cap.fail_after = 3;
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l = launch_ev(1);
    wrr_drain_post(&d, &l);
    for (uint64_t i = 0; i < 6; i++)
        wrr_sim_write(&sim, access_rec(0, i, 0), 32, 0);
    cr_assert_eq(wrr_drain_step(&d), -1);
    cr_assert(strstr(d.error, "rejected"), "%s", d.error);
    cr_assert_eq(cap.n, 3);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, records_without_any_launch_are_kept_as_launch_0)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    cr_assert_eq(wrr_drain_step(&d), 1);
    cr_assert_eq(cap.ev[0].u.access.launch, 0);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, host_events_pass_through_in_post_order)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_ALLOC;
    e.u.alloc.alloc = 4;
    wrr_drain_post(&d, &e);
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_HOST_COPY;
    e.u.copy.dst = 0x7000;
    e.u.copy.bytes = 64;
    e.u.copy.kind = WR_COPY_H2D;
    wrr_drain_post(&d, &e);
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_DEVICE_SYNC;
    wrr_drain_post(&d, &e);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 3);
    cr_assert_eq(cap.ev[0].kind, WR_EV_ALLOC);
    cr_assert_eq(cap.ev[0].u.alloc.alloc, 4);
    cr_assert_eq(cap.ev[1].kind, WR_EV_HOST_COPY);
    cr_assert_eq(cap.ev[1].u.copy.bytes, 64);
    cr_assert_eq(cap.ev[2].kind, WR_EV_DEVICE_SYNC);
    cr_assert_eq(d.st.host_events, 3);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

Test(drain, close_consumes_records_without_emitting_an_end)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2), e1 = end_ev(1), e2 = end_ev(2);
    wrr_drain_post(&d, &l1);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    wrr_drain_post_close(&d, 1, WRR_END_UNKNOWN);
    wrr_drain_step(&d);
    cr_assert_eq(d.launch, 0, "closed");
    wrr_drain_post(&d, &l2);
    wrr_drain_step(&d);
    wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0);
    wrr_drain_post_close(&d, 2, WRR_END_UNKNOWN);
    /* the program synchronizes later: both ends come then */
    wrr_drain_post(&d, &e1);
    wrr_drain_post(&d, &e2);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 6);
    cr_assert_eq(cap.ev[0].kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(cap.ev[1].u.access.launch, 1);
    cr_assert_eq(cap.ev[2].kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(cap.ev[3].u.access.launch, 2);
    cr_assert_eq(cap.ev[4].kind, WR_EV_KERNEL_END);
    cr_assert_eq(cap.ev[5].kind, WR_EV_KERNEL_END);
    cr_assert_eq(d.st.host_events, 4, "closes are not events");
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* The same, when the drain polls between taking its queue (empty then)
 * and the program's close: it must not consume past a close it has not
 * processed (the second GPU run: a consumer's load still under its
 * producer's launch). */
Test(drain, no_record_is_consumed_while_a_host_event_waits)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2);
    wrr_drain_post(&d, &l1);
    wrr_drain_step(&d);
    cr_assert_eq(d.launch, 1);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    wrr_drain_post_close(&d, 1, sim.dev.head);
    wrr_drain_post(&d, &l2);
    wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0);
    cr_assert_eq(wrr_drain_poll(&d, 100), 0, "the close and the launch come first");
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 4);
    cr_assert_eq(cap.ev[1].u.access.launch, 1);
    cr_assert_eq(cap.ev[2].kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(cap.ev[3].u.access.launch, 2);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

static const char *reason(void *ctx)
{
    (void)ctx;
    return "an access's shared offset past 16 MiB";
}

/* A sink's refusal names the event and the sink's reason: the first GPU
 * run said only "the trace writer rejected an event". */
Test(drain, a_refused_event_is_named_with_the_sinks_reason)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    cap.fail_after = 1;
    sink.error = reason;
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l1 = launch_ev(1);
    wrr_drain_post(&d, &l1);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    wrr_drain_post_close(&d, 1, sim.dev.head);
    cr_assert_neq(wrr_drain_finish(&d), 0);
    cr_assert(strstr(d.error, "rejected the access event: an access's shared offset past 16 MiB"),
              "%s", d.error);
    cr_assert(strstr(d.error, "ring position 0"), "%s", d.error);
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* The drain runs behind the program: by the time it processes a launch's
 * close, the next launch (posted and run meanwhile) may have committed
 * records.  The close's bound keeps them out of the closed launch (the
 * first GPU run showed a consumer's load attributed to its producer). */
Test(drain, close_bound_keeps_the_next_launchs_records_out)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2);
    wrr_drain_post(&d, &l1);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    uint64_t end1 = sim.dev.head;
    wrr_drain_post_close(&d, 1, end1);
    /* nothing processed yet: launch 2 is posted and writes */
    wrr_drain_post(&d, &l2);
    wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0);
    wrr_drain_post_close(&d, 2, sim.dev.head);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 4);
    cr_assert_eq(cap.ev[0].kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(cap.ev[1].kind, WR_EV_ACCESS);
    cr_assert_eq(cap.ev[1].u.access.launch, 1);
    cr_assert_eq(cap.ev[2].kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(cap.ev[3].kind, WR_EV_ACCESS);
    cr_assert_eq(cap.ev[3].u.access.launch, 2, "launch 2's record stays launch 2's");
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* The same when the program synchronizes between the launches: the
 * KERNEL_END of launch 1 (posted at the sync) comes after its close, and
 * launch 2 has run by the time the drain gets to it.  The end must not
 * take launch 2's records for none (an H100 run of 12 short launches
 * recorded launches 2 to 6 as launch 0). */
Test(drain, kernel_end_after_a_close_leaves_the_next_launchs_records)
{
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
    capture cap;
    wrr_sink sink = cap_sink(&cap);
    wrr_drain d;
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2), e1 = end_ev(1), e2 = end_ev(2);
    wrr_drain_post(&d, &l1);
    wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0);
    wrr_drain_post_close(&d, 1, sim.dev.head);
    wrr_drain_post(&d, &e1);
    wrr_drain_post(&d, &l2);
    wrr_sim_write(&sim, access_rec(0, 1, 0), 32, 0);
    wrr_drain_post_close(&d, 2, sim.dev.head);
    wrr_drain_post(&d, &e2);
    cr_assert_eq(wrr_drain_finish(&d), 0);
    cr_assert_eq(cap.n, 6);
    static const unsigned kinds[] = {WR_EV_KERNEL_LAUNCH, WR_EV_ACCESS, WR_EV_KERNEL_END,
                                     WR_EV_KERNEL_LAUNCH, WR_EV_ACCESS, WR_EV_KERNEL_END};
    for (unsigned i = 0; i < 6; i++)
        cr_expect_eq(cap.ev[i].kind, kinds[i], "event %u", i);
    cr_expect_eq(cap.ev[1].u.access.launch, 1);
    cr_expect_eq(cap.ev[4].u.access.launch, 2, "launch 2's record stays launch 2's");
    wrr_drain_destroy(&d);
    cap_free(&cap);
    wrr_sim_free(&sim);
}

/* A sink that holds events back hears of the end of the stream before the
 * last flush, and what it emits then is flushed; a failure there fails the
 * finish with a message. */
static int fin_calls, fin_flushes_before, fin_fail;
static int finish_hook(void *ctx)
{
    capture *c = ctx;
    fin_calls++;
    fin_flushes_before = (int)c->flushes;
    if (fin_fail)
        return -1;
    wr_event e = end_ev(7);
    return cap_event(c, &e);
}

Test(drain, finish_hook_runs_once_before_the_last_flush)
{
    for (fin_fail = 0; fin_fail < 2; fin_fail++) {
        wrr_sim sim;
        cr_assert_eq(wrr_sim_init(&sim, 8, 0), 0);
        capture cap;
        wrr_sink sink = cap_sink(&cap);
        sink.finish = finish_hook;
        fin_calls = 0;
        wrr_drain d;
        cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, NULL), 0);
        wr_event l = launch_ev(1);
        wrr_drain_post(&d, &l);
        cr_assert_gt(wrr_drain_step(&d), 0);
        cr_assert_eq(wrr_sim_write(&sim, access_rec(0, 0, 0), 32, 0), 1);
        if (!fin_fail) {
            cr_assert_eq(wrr_drain_finish(&d), 0, "%s", d.error);
            cr_assert_eq(fin_calls, 1);
            cr_assert_eq(cap.n, 3);
            cr_assert_eq(cap.ev[2].kind, WR_EV_KERNEL_END);
            cr_assert_eq(cap.flushes, (size_t)fin_flushes_before + 1);
            cr_assert_eq(cap.flushed_upto, 3, "what the hook emitted is flushed");
        } else {
            cr_assert_eq(wrr_drain_finish(&d), -1);
            cr_assert_eq(fin_calls, 1);
            cr_assert(strstr(d.error, "end of the stream"), "%s", d.error);
        }
        wrr_drain_destroy(&d);
        cap_free(&cap);
        wrr_sim_free(&sim);
    }
}

/* An access record of `block` whose first lane's address encodes `tag`,
 * carrying launch tag `launch_tag` in its w2 (ring_format.h). */
static const uint64_t *tagged_rec(uint32_t block, uint64_t tag, unsigned launch_tag)
{
    access_rec(block, tag, 0);
    enc[2] |= (uint64_t)launch_tag << 48;
    return enc;
}

/* A drain over a 256-slot simulated ring into a capture, with `workers`
 * workers (whose encoded events are only counted). */
typedef struct drain_rig {
    wrr_sim sim;
    capture cap;
    wrr_drain d;
} drain_rig;

static int accept_encoded(void *ctx, const wr_encoded *events)
{
    (void)ctx;
    (void)events;
    return 0;
}

static void rig_open(drain_rig *r, unsigned workers)
{
    cr_assert_eq(wrr_sim_init(&r->sim, 8, 0), 0);
    wrr_sink sink = cap_sink(&r->cap);
    if (workers)
        sink.encoded = accept_encoded;
    wrr_drain_options o = {.workers = workers};
    cr_assert_eq(wrr_drain_init(&r->d, &r->sim.ring, &sink, &o), 0);
}

static void rig_close(drain_rig *r)
{
    wrr_drain_destroy(&r->d);
    cap_free(&r->cap);
    wrr_sim_free(&r->sim);
}

/* A CUDA graph's kernel nodes run concurrently: their records interleave
 * in the ring, and each carries its member's tag.  Every record goes to
 * the launch its tag names, whatever the order; the group's close bounds
 * them all, and a tag may be opened again after it (the graph's next
 * launch). */
Test(drain, a_launch_groups_records_go_to_the_members_their_tags_name)
{
    drain_rig r;
    rig_open(&r, 0);
    wr_event l5 = launch_ev(5), l6 = launch_ev(6), l7 = launch_ev(7), l8 = launch_ev(8);
    wrr_drain_post_tagged_launch(&r.d, &l5, 1);
    wrr_drain_post_tagged_launch(&r.d, &l6, 2);
    wrr_sim_write(&r.sim, tagged_rec(0, 0, 2), 32, 0);
    wrr_sim_write(&r.sim, tagged_rec(0, 1, 1), 32, 0);
    wrr_sim_write(&r.sim, tagged_rec(1, 2, 2), 32, 0);
    wrr_drain_post_group_close(&r.d, r.sim.dev.head);
    /* the graph again: the same tags, new launches */
    wrr_drain_post_tagged_launch(&r.d, &l7, 2);
    wrr_drain_post_tagged_launch(&r.d, &l8, 1);
    wrr_sim_write(&r.sim, tagged_rec(0, 3, 1), 32, 0);
    wrr_sim_write(&r.sim, tagged_rec(0, 4, 2), 32, 0);
    wrr_drain_post_group_close(&r.d, r.sim.dev.head);
    cr_assert_eq(wrr_drain_finish(&r.d), 0, "%s", r.d.error);
    cr_assert_eq(r.cap.n, 9);
    static const uint32_t want[] = {5, 6, 6, 5, 6, 7, 8, 8, 7};
    for (int i = 0; i < 9; i++) {
        const wr_event *e = &r.cap.ev[i];
        uint32_t got = e->kind == WR_EV_KERNEL_LAUNCH ? e->u.launch.launch : e->u.access.launch;
        cr_assert_eq(got, want[i], "event %d: launch %u, not %u", i, got, want[i]);
        if (e->kind == WR_EV_ACCESS)
            cr_assert_eq(first_addr(e), 0x1000 + (uint64_t)(i < 5 ? i - 2 : i - 4) * 128,
                         "event %d: the records keep their ring order", i);
    }
    cr_assert_eq(r.d.group_n, 0, "the close ends the group");
    rig_close(&r);
}

/* Untagged records stay the open launch's while a group is open beside it
 * (a launch from another thread during a graph launch). */
Test(drain, untagged_records_stay_the_open_launchs_beside_a_group)
{
    drain_rig r;
    rig_open(&r, 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2);
    wrr_drain_post(&r.d, &l1);
    wrr_drain_post_tagged_launch(&r.d, &l2, 3);
    wrr_sim_write(&r.sim, tagged_rec(0, 0, 3), 32, 0);
    wrr_sim_write(&r.sim, tagged_rec(0, 1, 0), 32, 0);
    wrr_drain_post_close(&r.d, 1, r.sim.dev.head);
    wrr_drain_post_group_close(&r.d, r.sim.dev.head);
    cr_assert_eq(wrr_drain_finish(&r.d), 0, "%s", r.d.error);
    cr_assert_eq(r.cap.n, 4);
    cr_assert_eq(r.cap.ev[2].u.access.launch, 2);
    cr_assert_eq(r.cap.ev[3].u.access.launch, 1);
    rig_close(&r);
}

/* A tag no member was opened with, or one opened twice, is named, with the
 * ring position, and stops the drain: never a record given to a guess. */
Test(drain, a_record_of_an_unopened_tag_is_a_corrupt_record)
{
    for (unsigned workers = 0; workers < 2; workers++) {
        drain_rig r;
        rig_open(&r, workers);
        wr_event l1 = launch_ev(1);
        wrr_drain_post_tagged_launch(&r.d, &l1, 1);
        wrr_sim_write(&r.sim, tagged_rec(0, 0, 1), 32, 0);
        wrr_sim_write(&r.sim, tagged_rec(0, 1, 4), 32, 0);
        cr_assert_neq(wrr_drain_finish(&r.d), 0);
        cr_assert(strstr(r.d.error, "launch tag names no open launch") &&
                      strstr(r.d.error, "position 3"),
                  "%s", r.d.error);
        rig_close(&r);
    }
    drain_rig r;
    rig_open(&r, 0);
    wr_event l1 = launch_ev(1), l2 = launch_ev(2);
    wrr_drain_post_tagged_launch(&r.d, &l1, 1);
    wrr_drain_post_tagged_launch(&r.d, &l2, 1);
    cr_assert_neq(wrr_drain_finish(&r.d), 0);
    cr_assert(strstr(r.d.error, "opened twice"), "%s", r.d.error);
    rig_close(&r);
}

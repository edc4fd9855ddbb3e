/* fsm engine scenarios: HiRace's listings, warp syncs, atomics, kernel and
 * stream boundaries, host copies, sharding. */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "lf_events.h"

extern const wr_engine_ops wr_engine_fsm;

#define X 0x10000ull   /* data[] */
#define L 1u           /* launch */

static lf_run R;

static void start(unsigned shards)
{
    lf_start(&R, &wr_engine_fsm, shards);
    lf_feed(&R, lf_launch(L, 0));
}

static const wr_race_group *one_group(wr_findings *f)
{
    const wr_race_group *g;
    size_t n = lf_groups(f, &g);
    cr_assert_eq(n, 1, "expected exactly one race group, got %zu", n);
    return &g[0];
}

/* Listing 1: every thread reads data[0] then writes it: race (the second
 * block's read makes GREAD, any write then races). */
Test(fsm, listing1_read_write_no_sync)
{
    start(1);
    lf_feed(&R, lf_acc(10, L, 0, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X, 0));
    lf_feed(&R, lf_acc(10, L, 1, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X, 0));
    lf_feed(&R, lf_acc(11, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(g->count, 1, "RACE is absorbing: one report per word");
    wr_findings_free(f);
}

/* Listing 2, one block: all warps read data[0], __syncthreads, thread tid>0
 * writes data[tid-1].  The barrier orders them: no race. */
static void listing2(int with_barrier, int second_block_reads)
{
    start(1);
    for (uint32_t w = 0; w < 2; w++)
        lf_feed(&R, lf_acc(20, L, 0, w, WR_FULL_MASK, WR_OP_LOAD, 0, X, 0));
    if (second_block_reads)
        lf_feed(&R, lf_acc(20, L, 1, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X, 0));
    if (with_barrier)
        for (uint32_t w = 0; w < 2; w++)
            lf_feed(&R, lf_barrier(L, 0, w, 64));
    /* data[tid-1] = tid for tid = 1..63: warp 0 lanes 1..31 write data[0..30],
       warp 1 lanes 0..31 write data[31..62] */
    lf_feed(&R, lf_acc(21, L, 0, 0, 0xfffffffeu, WR_OP_STORE, 0, X - 4, 4));
    lf_feed(&R, lf_acc(21, L, 0, 1, WR_FULL_MASK, WR_OP_STORE, 0, X + 31 * 4, 4));
}

Test(fsm, listing2_barrier_orders_block)
{
    listing2(1, 0);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(fsm, listing2_without_barrier_races)
{
    listing2(0, 0);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
}

Test(fsm, listing2_other_block_read_races_despite_barrier)
{
    listing2(1, 1);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
}

/* Warp 0 of block 0 writes X, the block syncs, warp 1 reads X, then block
 * 1 reads it: the state summarises block 0's write and read, and the
 * stored accessor is warp 1's read.  The race is named as the write of
 * the word's history (not kept: site and position unknown), never as a
 * read/read pair (found by fuzz_analyze). */
Test(fsm, a_load_racing_a_summarised_write_names_a_write)
{
    start(1);
    lf_feed(&R, lf_acc(30, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    for (uint32_t w = 0; w < 2; w++)
        lf_feed(&R, lf_barrier(L, 0, w, 64));
    lf_feed(&R, lf_acc(31, L, 0, 1, 1u, WR_OP_LOAD, 0, X, 0));
    lf_feed(&R, lf_acc(32, L, 1, 1, 1u, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    const wr_race_access *first = g->example.first.block == 0 ? &g->example.first
                                                               : &g->example.second;
    const wr_race_access *second = first == &g->example.first ? &g->example.second
                                                               : &g->example.first;
    cr_assert_eq(first->kind, WR_KIND_WRITE);
    cr_assert_eq(first->site, 0);
    cr_assert_eq(first->seq, 0);
    cr_assert_eq(second->kind, WR_KIND_READ);
    cr_assert_eq(second->site, 32);
    wr_findings_free(f);
}

/* Listing 3 (finite history): local = data[tid]; local += data[tid+1];
 * data[tid+1] = local.  Word k is read by thread k then thread k-1, then
 * written by thread k-1: a single-history detector loses thread k's read;
 * the FSM keeps WREAD and reports. */
Test(fsm, listing3_finite_history)
{
    start(1);
    uint32_t m = 0x3fffffffu;  /* tid < len - 2 with len = 32 */
    lf_feed(&R, lf_acc(8, L, 0, 0, m, WR_OP_LOAD, 0, X, 4));
    lf_feed(&R, lf_acc(9, L, 0, 0, m, WR_OP_LOAD, 0, X + 4, 4));
    lf_feed(&R, lf_acc(11, L, 0, 0, m, WR_OP_STORE, 0, X + 4, 4));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTRA_WARP);
    cr_assert_eq(g->count, 29, "words 1..29 are read by two lanes then written");
    /* the pair: the write (site 11) against the stored reader's read (site 9) */
    uint32_t s1 = g->example.first.site, s2 = g->example.second.site;
    cr_assert((s1 == 9 && s2 == 11) || (s1 == 11 && s2 == 9), "sites %u %u", s1, s2);
    wr_findings_free(f);
}

static void warp_handoff(uint32_t sync_mask, uint32_t reader_lane)
{
    start(1);
    lf_feed(&R, lf_acc(30, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    if (sync_mask)
        lf_feed(&R, lf_warp_sync(L, 0, 0, sync_mask));
    lf_feed(&R, lf_acc(31, L, 0, 0, 1u << reader_lane, WR_OP_LOAD, 0, X, 0));
}

Test(fsm, syncwarp_orders_lanes)
{
    warp_handoff(WR_FULL_MASK, 1);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(fsm, no_syncwarp_intra_warp_race)
{
    warp_handoff(0, 1);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTRA_WARP);
    wr_findings_free(f);
}

Test(fsm, partial_syncwarp_orders_only_its_lanes)
{
    warp_handoff(0x3u, 1);   /* lanes 0,1 synchronise: lane 1 may read */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
    warp_handoff(0x3u, 5);   /* lane 5 did not take part */
    f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTRA_WARP);
    wr_findings_free(f);
}

/* Lamport counts: lanes whose counts diverged through partial masks are
 * still ordered by a later full __syncwarp. */
Test(fsm, diverged_counts_then_full_syncwarp)
{
    start(1);
    lf_feed(&R, lf_warp_sync(L, 0, 0, 0x1u));   /* lane 0 ahead */
    lf_feed(&R, lf_warp_sync(L, 0, 0, 0x1u));
    lf_feed(&R, lf_acc(40, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    lf_feed(&R, lf_warp_sync(L, 0, 0, WR_FULL_MASK));
    lf_feed(&R, lf_acc(41, L, 0, 0, 1u << 20, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* A warp sync does not order two warps; a barrier does. */
Test(fsm, syncwarp_does_not_order_warps)
{
    start(1);
    lf_feed(&R, lf_acc(50, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    lf_feed(&R, lf_warp_sync(L, 0, 0, WR_FULL_MASK));
    lf_feed(&R, lf_warp_sync(L, 0, 1, WR_FULL_MASK));
    lf_feed(&R, lf_acc(51, L, 0, 1, 1u, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
}

/* Many barriers between a write and a read in another warp (counts must not
 * be confused by their 11-bit field for < 1024 barriers). */
Test(fsm, many_barriers)
{
    start(1);
    lf_feed(&R, lf_acc(60, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    for (int i = 0; i < 1000; i++)
        for (uint32_t w = 0; w < 2; w++)
            lf_feed(&R, lf_barrier(L, 0, w, 64));
    lf_feed(&R, lf_acc(61, L, 0, 1, 1u, WR_OP_LOAD, 0, X, 0));
    lf_feed(&R, lf_acc(62, L, 0, 1, 1u, WR_OP_STORE, 0, X + 4, 0));
    lf_feed(&R, lf_acc(63, L, 0, 0, 1u, WR_OP_LOAD, 0, X + 4, 0));  /* no barrier: race */
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
}

Test(fsm, device_atomics_from_all_blocks_no_race)
{
    start(1);
    for (uint32_t b = 0; b < 4; b++)
        for (uint32_t w = 0; w < 2; w++)
            lf_feed(&R, lf_acc(70, L, b, w, WR_FULL_MASK, WR_OP_ATOMIC_RMW, WR_SCOPE_DEVICE, X, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(fsm, block_atomics_across_blocks_race)
{
    start(1);
    lf_feed(&R, lf_acc(80, L, 0, 0, WR_FULL_MASK, WR_OP_ATOMIC_RMW, WR_SCOPE_BLOCK, X, 0));
    lf_feed(&R, lf_acc(80, L, 0, 1, WR_FULL_MASK, WR_OP_ATOMIC_RMW, WR_SCOPE_BLOCK, X, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0, "block-scoped atomics within one block are fine");
    wr_findings_free(f);
    start(1);
    lf_feed(&R, lf_acc(80, L, 0, 0, WR_FULL_MASK, WR_OP_ATOMIC_RMW, WR_SCOPE_BLOCK, X, 0));
    lf_feed(&R, lf_acc(81, L, 1, 0, WR_FULL_MASK, WR_OP_ATOMIC_RMW, WR_SCOPE_BLOCK, X, 0));
    f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
}

Test(fsm, atomic_then_plain_read_other_block_races)
{
    start(1);
    lf_feed(&R, lf_acc(90, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, WR_SCOPE_DEVICE, X, 0));
    lf_feed(&R, lf_acc(91, L, 1, 0, 1u, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
}

/* Kernel boundaries: same stream = ordered; two streams without an event =
 * concurrent; with an event recorded and waited = ordered. */
static void two_kernels(uint32_t s1, uint32_t s2, int with_event)
{
    lf_start(&R, &wr_engine_fsm, 1);
    lf_feed(&R, lf_launch(1, s1));
    if (!with_event)
        lf_feed(&R, lf_launch(2, s2));
    lf_feed(&R, lf_acc(100, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X, 4));
    if (with_event) {
        lf_feed(&R, lf_stream_event(WR_EV_EVENT_RECORD, 7, s1));
        lf_feed(&R, lf_stream_event(WR_EV_STREAM_WAIT, 7, s2));
        lf_feed(&R, lf_launch(2, s2));
    }
    lf_feed(&R, lf_acc(101, 2, 3, 1, WR_FULL_MASK, WR_OP_LOAD, 0, X, 4));
}

Test(fsm, kernels_same_stream_ordered)
{
    two_kernels(1, 1, 0);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(fsm, kernels_two_streams_race)
{
    two_kernels(1, 2, 0);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_KERNEL);
    cr_assert_eq(g->count, 32);
    cr_assert(g->example.first.site == 100 || g->example.second.site == 100);
    wr_findings_free(f);
}

Test(fsm, kernels_two_streams_with_event_ordered)
{
    two_kernels(1, 2, 1);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(fsm, host_copy_async_races_running_kernel)
{
    lf_start(&R, &wr_engine_fsm, 1);
    lf_feed(&R, lf_launch(1, 1));
    lf_feed(&R, lf_acc(110, 1, 0, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X, 4));
    lf_feed(&R, lf_copy(WR_COPY_H2D, X, 0, 128, 2, 1));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_KERNEL);
    cr_assert_eq(g->count, 32);
    wr_findings_free(f);
}

/* A store, then an atomic of the same thread, then another block's device
 * atomic: the race is the store's, and the report names it, not the atomic
 * between (an atomic/atomic pair of device scope is no conflict; the
 * warp's ring holds both, and the newest was named). */
Test(fsm, atomic_race_names_the_plain_access_not_an_atomic)
{
    lf_start(&R, &wr_engine_fsm, 1);
    lf_feed(&R, lf_launch(1, 2));
    lf_feed(&R, lf_acc(130, 1, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    lf_feed(&R, lf_acc(131, 1, 0, 0, 1u, WR_OP_ATOMIC_RMW, WR_SCOPE_DEVICE, X, 0));
    lf_feed(&R, lf_acc(132, 1, 1, 0, 1u, WR_OP_ATOMIC_RMW, WR_SCOPE_DEVICE, X, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    const wr_race_access *st = g->example.first.site == 130 ? &g->example.first : &g->example.second;
    const wr_race_access *at = st == &g->example.first ? &g->example.second : &g->example.first;
    cr_assert_eq(st->site, 130, "sides %u and %u", g->example.first.site, g->example.second.site);
    cr_assert_eq(st->kind, WR_KIND_WRITE);
    cr_assert_eq(at->site, 132);
    cr_assert_eq(at->kind, WR_KIND_ATOMIC);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
}

Test(fsm, sync_copy_then_kernel_ordered)
{
    lf_start(&R, &wr_engine_fsm, 1);
    lf_feed(&R, lf_copy(WR_COPY_H2D, X, 0, 128, 0, 0));
    lf_feed(&R, lf_launch(1, 1));
    lf_feed(&R, lf_acc(120, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X, 4));
    lf_feed(&R, lf_kernel_end(1));
    lf_feed(&R, lf_simple(WR_EV_DEVICE_SYNC));
    lf_feed(&R, lf_copy(WR_COPY_D2H, 0, X, 128, 0, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* Shared memory: the same offset in two blocks is two words. */
Test(fsm, shared_memory_per_block)
{
    start(1);
    wr_event a = lf_acc(130, L, 0, 0, 1u, WR_OP_STORE, 0, 0x40, 0);
    a.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, a);
    a.u.access.block = 1;
    lf_feed(&R, a);
    wr_event rd = lf_acc(131, L, 0, 1, 1u, WR_OP_LOAD, 0, 0x40, 0);
    rd.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, rd);   /* block 0, other warp, no barrier: race */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
}

/* A block that exited keeps only its warps' recent accesses (a retired
 * record): a later block's race against them still names their sites and
 * trace positions, warp by warp; the exited block's shared memory is gone
 * from the shadow; a malformed trace that goes on with the exited block
 * gets fresh state, not a crash. */
static uint64_t live_words(void);

Test(fsm, exited_block_keeps_its_accesses_for_reports)
{
    start(1);                                                                   /* seq 0 */
    lf_feed(&R, lf_acc(150, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));               /* seq 1 */
    lf_feed(&R, lf_acc(151, L, 0, 3, 1u << 5, WR_OP_STORE, 0, X + 64, 0));     /* seq 2 */
    wr_event sh = lf_acc(152, L, 0, 0, 1u, WR_OP_STORE, 0, 0x40, 0);           /* seq 3 */
    sh.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, sh);
    uint64_t live = live_words();
    lf_feed(&R, lf_block_exit(L, 0));                                          /* seq 4 */
    cr_assert_eq(live_words(), live - 1, "the shared word goes with its block");
    lf_feed(&R, lf_block_exit(L, 0));   /* twice: nothing more */              /* seq 5 */
    lf_feed(&R, lf_acc(153, L, 1, 0, 1u, WR_OP_LOAD, 0, X, 0));                /* seq 6 */
    lf_feed(&R, lf_acc(154, L, 1, 1, 1u << 7, WR_OP_LOAD, 0, X + 64, 0));      /* seq 7 */
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    size_t n = lf_groups(f, &g);
    cr_assert_eq(n, 2, "two site pairs, got %zu", n);
    bool seen[2] = {false, false};
    for (size_t i = 0; i < n; i++) {
        const wr_race_access *first = &g[i].example.first, *second = &g[i].example.second;
        cr_assert_eq(first->block, 0);
        if (first->site == 150) {
            cr_expect_eq(first->seq, 1);
            cr_expect_eq(first->warp, 0);
            cr_expect_eq(second->site, 153);
            seen[0] = true;
        } else {
            cr_assert_eq(first->site, 151, "first site %u", first->site);
            cr_expect_eq(first->seq, 2);
            cr_expect_eq(first->warp, 3);
            cr_expect_eq(first->lane, 5);
            cr_expect_eq(second->site, 154);
            seen[1] = true;
        }
    }
    cr_assert(seen[0] && seen[1]);
    wr_findings_free(f);

    start(1);
    lf_feed(&R, lf_acc(150, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    lf_feed(&R, lf_block_exit(L, 0));
    lf_feed(&R, lf_acc(155, L, 0, 1, 1u, WR_OP_STORE, 0, X, 0));   /* after its exit */
    lf_feed(&R, lf_block_exit(L, 0));
    lf_feed(&R, lf_acc(156, L, 1, 0, 1u, WR_OP_LOAD, 0, X, 0));
    f = lf_end(&R);
    /* the restarted block's race against its own access before the exit:
     * that access went with the retired record, so the first side is said
     * to be unknown (site 0, seq 0), never guessed; RACE then absorbs the
     * word */
    n = lf_groups(f, &g);
    cr_assert_eq(n, 1, "got %zu", n);
    cr_expect_eq(g[0].example.first.site, 0);
    cr_expect_eq(g[0].example.first.seq, 0);
    cr_expect_eq(g[0].example.second.site, 155);
    wr_findings_free(f);
}

/* The result must not depend on the number of shards. */
Test(fsm, shards_give_same_findings)
{
    uint64_t tot[2];
    size_t groups[2];
    for (unsigned k = 0; k < 2; k++) {
        lf_start(&R, &wr_engine_fsm, k ? 3 : 1);
        lf_feed(&R, lf_launch(L, 0));
        for (uint32_t b = 0; b < 3; b++)
            for (uint32_t w = 0; w < 2; w++)
                lf_feed(&R, lf_acc(140, L, b, w, WR_FULL_MASK, WR_OP_LOAD, 0, X + 512 * w, 4));
        for (uint32_t w = 0; w < 2; w++)
            lf_feed(&R, lf_acc(141, L, 1, w, WR_FULL_MASK, WR_OP_STORE, 0, X + 4096 * w, 8));
        wr_findings *f = lf_end(&R);
        const wr_race_group *g;
        groups[k] = lf_groups(f, &g);
        tot[k] = lf_total(f);
        wr_findings_free(f);
    }
    cr_assert_gt(tot[0], 0);
    cr_assert_eq(tot[0], tot[1]);
    cr_assert_eq(groups[0], groups[1]);
}

static uint64_t live_words(void) { return R.ops->shadow_words(R.eng[0]); }

/* Whole aligned lines stay packed in the shadow (one rep for 32 words):
 * the count of tracked words, the sweep of an ordered kernel's words and
 * the drop of a block's shared memory must see the 32 words a rep stands
 * for, and an access to part of the line must unpack it unchanged. */
Test(fsm, packed_lines_count_sweep_and_unpack)
{
    start(1);
    lf_feed(&R, lf_acc(140, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X, 4));         /* packed */
    lf_feed(&R, lf_acc(140, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X + 128, 4));   /* packed */
    lf_feed(&R, lf_acc(140, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, X + 384, 4));   /* stays so */
    cr_assert_eq(live_words(), 96);
    /* lane 1 again (its own word X + 4, no race): unpacks line 0 */
    lf_feed(&R, lf_acc(141, L, 0, 0, 0x2u, WR_OP_STORE, 0, X, 4));
    cr_assert_eq(live_words(), 96);
    wr_event sh = lf_acc(142, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0, 4);
    sh.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, sh);
    cr_assert_eq(live_words(), 128);
    wr_event exit_b0;
    memset(&exit_b0, 0, sizeof exit_b0);
    exit_b0.kind = WR_EV_BLOCK_EXIT;
    exit_b0.u.block.launch = L;
    exit_b0.u.block.block = 0;
    lf_feed(&R, exit_b0);   /* block 0's shared memory (one packed line) dies */
    cr_assert_eq(live_words(), 96);
    /* another warp of the same kernel: lane 5 of the packed line X + 128
     * was written by lane 5 of warp 0 -> race on every word, reported from
     * the unpacked words with their own lanes */
    lf_feed(&R, lf_acc(143, L, 1, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X + 128, 4));
    lf_feed(&R, lf_kernel_end(L));
    /* the next kernel on the same stream is ordered after it: touching the
     * page sweeps the earlier words, packed or not */
    lf_feed(&R, lf_launch(2, 0));
    lf_feed(&R, lf_acc(144, 2, 0, 0, WR_FULL_MASK, WR_OP_LOAD, 0, X + 256, 4));
    cr_assert_eq(live_words(), 32);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->count, 32);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(g->example.first.lane, g->example.second.lane);
    cr_assert_eq(g->example.addr >> 2, (X + 128) / 4 + g->example.second.lane);
    wr_findings_free(f);
}

/* ---- split barriers (format 1.3) ---- */

#include "barriers.h"

#define FULL 1u
#define EMPTY 2u
#define BUF 0x200ull   /* a shared buffer word */
enum { PROD = 0, CONS = 1 };

static void feed_bar(uint32_t block, uint32_t warp, uint32_t id, uint32_t expected, uint8_t scope,
                     uint8_t mode)
{
    lf_feed(&R, lf_barrier_mode(L, block, warp, id, expected, scope, mode));
}

static void buf_access(uint32_t warp, uint8_t op, uint32_t site)
{
    wr_event e = lf_acc(site, L, 0, warp, WR_FULL_MASK, op, 0, BUF, 4);
    e.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, e);
}

static void buf1_access(uint32_t warp, uint8_t op, uint32_t site)
{
    wr_event e = lf_acc(site, L, 0, warp, WR_FULL_MASK, op, 0, BUF + 128, 4);
    e.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, e);
}

#define P_WRITE() buf_access(PROD, WR_OP_STORE, 200)
#define C_READ() buf_access(CONS, WR_OP_LOAD, 201)
#define P_ARRIVE_FULL() feed_bar(0, PROD, FULL, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE)
#define P_SYNC_EMPTY() feed_bar(0, PROD, EMPTY, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC)
#define C_SYNC_FULL() feed_bar(0, CONS, FULL, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC)
#define C_ARRIVE_EMPTY() feed_bar(0, CONS, EMPTY, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE)

/* A warp-specialised pipeline on named barriers, three rounds:
 *   producer: [bar.sync EMPTY;] write buf; bar.arrive FULL
 *   consumer: bar.sync FULL; read buf; bar.arrive EMPTY
 * `bug`: the producer never waits for EMPTY (it overwrites the buffer the
 * consumer may still read).  `order` 0: the warps take turns; 1: the
 * consumer waits first and the producer runs ahead as far as it may. */
static void pipeline(bool bug, int order)
{
    start(1);
    for (int i = 0; i < 3; i++) {
        if (order == 0) {
            if (i && !bug)
                P_SYNC_EMPTY();
            P_WRITE();
            P_ARRIVE_FULL();
            C_SYNC_FULL();
            C_READ();
            C_ARRIVE_EMPTY();
        } else {
            C_SYNC_FULL();
            if (i && !bug)
                P_SYNC_EMPTY();   /* completes: the consumer arrived last round */
            P_WRITE();
            P_ARRIVE_FULL();       /* completes FULL: the consumer goes on */
            if (bug)
                P_WRITE();         /* the next round's write, before the read */
            C_READ();
            C_ARRIVE_EMPTY();
        }
    }
}

Test(fsm, split_producer_consumer_no_race)
{
    for (int order = 0; order < 2; order++) {
        pipeline(false, order);
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "order %d", order);
        wr_findings_free(f);
    }
}

Test(fsm, split_producer_overwrite_without_empty_wait_races)
{
    for (int order = 0; order < 2; order++) {
        pipeline(true, order);
        wr_findings *f = lf_end(&R);
        const wr_race_group *g = one_group(f);
        cr_assert_eq(g->example.race_class, WR_CLASS_INTER_WARP, "order %d", order);
        uint32_t s1 = g->example.first.site, s2 = g->example.second.site;
        cr_assert((s1 == 200 && s2 == 201) || (s1 == 201 && s2 == 200), "sites %u %u", s1, s2);
        wr_findings_free(f);
    }
}

/* The producer's access after its arrival is not ordered before the
 * consumer's after the phase: the arrival released only what came before
 * it (the arriver's count steps at the arrival; the waiter takes the
 * arrival's count + 1, no more). */
Test(fsm, split_arriver_access_after_arrival_races_with_waiter)
{
    start(1);
    P_ARRIVE_FULL();
    P_WRITE();
    C_SYNC_FULL();
    C_READ();
    wr_findings *f = lf_end(&R);
    cr_assert_eq(one_group(f)->example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
}

/* Two stages (FULL0/EMPTY0 = 1/2 for buffer 0, FULL1/EMPTY1 = 3/4 for
 * buffer 1 at BUF + 128): the producer writes buffer 1 while its arrival
 * at FULL0 is pending, and buffer 0 again while FULL1's is. */
Test(fsm, split_two_stage_pipeline_no_race)
{
    start(1);
    P_WRITE();
    feed_bar(0, PROD, 1, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    buf1_access(PROD, WR_OP_STORE, 202);
    feed_bar(0, PROD, 3, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    feed_bar(0, CONS, 1, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    C_READ();
    feed_bar(0, CONS, 2, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    feed_bar(0, PROD, 2, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    P_WRITE();
    feed_bar(0, PROD, 1, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    feed_bar(0, CONS, 3, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    buf1_access(CONS, WR_OP_LOAD, 203);
    feed_bar(0, CONS, 4, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    feed_bar(0, CONS, 1, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    C_READ();
    feed_bar(0, CONS, 2, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
    feed_bar(0, PROD, 4, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    buf1_access(PROD, WR_OP_STORE, 202);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* What a Lamport count cannot say (ENGINES.md, fsm, "Split barriers"):
 * the consumer reads, then waits at FULL; the producer arrives there, then
 * writes.  The write is not ordered after the read (the producer waited
 * for nothing), but the producer's count stepped at its arrival past the
 * read's, so the pair looks ordered: fsm misses it (lockset warns). */
Test(fsm, split_arriver_that_never_waited_looks_ordered_missed)
{
    start(1);
    C_READ();
    P_ARRIVE_FULL();
    C_SYNC_FULL();
    P_WRITE();
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0, "a documented miss; a change that catches it updates ENGINES.md");
    wr_findings_free(f);
}

/* barriers.h: an arriver goes on; acting again says nothing about its
 * phase, arriving again counts again; a waiter acting again completes it. */
static unsigned done_calls;
static wr_bar_phase done_last;

static void count_done(void *ctx, unsigned slot, const wr_bar_phase *ph, bool relaxed)
{
    (void)ctx;
    (void)slot;
    (void)relaxed;
    done_calls++;
    done_last = *ph;
}

Test(fsm, split_barrier_table_keeps_arrivers_apart)
{
    wr_block_barriers t;
    memset(&t, 0, sizeof t);
    done_calls = 0;
    const uint32_t all = 0xffffffffu;
    wr_barrier_arrive(&t, 1, WR_BARMODE_ARRIVE, 0, all, 32, 96, 7, count_done, NULL);
    wr_barrier_arrive(&t, 1, WR_BARMODE_SYNC, 1, all, 32, 96, 3, count_done, NULL);
    wr_barrier_wake(&t, 0, all, count_done, NULL);   /* the arriver acts again */
    cr_assert_eq(done_calls, 0, "an arriver acting again completes nothing");
    cr_assert_eq(t.pending, 1u << 1);
    wr_barrier_arrive(&t, 1, WR_BARMODE_ARRIVE, 0, all, 32, 96, 9, count_done, NULL);   /* counts again */
    cr_assert_eq(done_calls, 1, "the third 32 threads complete the phase");
    cr_assert_eq(done_last.waiters, 1u << 1);
    cr_assert_eq(done_last.arrivers, 1u << 0);
    cr_assert_eq(done_last.m, 10, "1 + the largest stamp a releasing arrival brought");
    cr_assert_eq(t.open, 0);
    cr_assert_eq(t.pending, 0);
    /* a waiter acting again completes its phase */
    wr_barrier_arrive(&t, 2, WR_BARMODE_SYNC, 3, all, 32, 64, 1, count_done, NULL);
    wr_barrier_wake(&t, 3, all, count_done, NULL);
    cr_assert_eq(done_calls, 2);
    cr_assert_eq(done_last.waiters, 1u << 3);
    /* a relaxed arrival releases nothing: no stamp */
    wr_barrier_arrive(&t, WR_BAR_SHARE, WR_BARMODE_ARRIVE_RELAXED, 0, all, 32, 64, 5, count_done,
                      NULL);
    cr_assert_eq(t.bar[WR_BAR_SHARE].m, 0);
    cr_assert(wr_barrier_wait(&t, WR_BAR_SHARE, 0, all, count_done, NULL),
              "its WAIT joins the phase");
    cr_assert_eq(t.pending, 1u << 0);
}

/* A warp that reaches a barrier in two groups of lanes (independent
 * thread scheduling): the second group acting before its arrival
 * completes nothing; the first group acting again does. */
Test(fsm, barrier_wakes_by_lanes_not_by_warp)
{
    wr_block_barriers t;
    memset(&t, 0, sizeof t);
    done_calls = 0;
    wr_barrier_arrive(&t, 0, WR_BARMODE_SYNC, 2, 0x0000ffffu, 16, 64, 1, count_done, NULL);
    wr_barrier_wake(&t, 2, 0xffff0000u, count_done, NULL);
    cr_assert_eq(done_calls, 0, "the lanes that act wait for nothing");
    wr_barrier_arrive(&t, 0, WR_BARMODE_SYNC, 2, 0xffff0000u, 16, 64, 2, count_done, NULL);
    cr_assert_eq(done_calls, 0, "32 of 64 threads");
    cr_assert_eq(t.bar[0].arrived, 32);
    wr_barrier_wake(&t, 2, 0x00000001u, count_done, NULL);
    cr_assert_eq(done_calls, 1, "a waiting lane acts: the phase completed");
    cr_assert_eq(t.pending, 0);
    cr_assert_eq(t.wait_lanes[2], 0);
}

/* The same on the engine: warp D's write before its arrival is ordered
 * before warp A's read after the phase of A (waiting), P (arriving) and D
 * (waiting), 96 threads; P acting again between does not complete it (it
 * would give A a count below D's, whose barriers alone made it larger). */
Test(fsm, split_arriver_acting_again_does_not_complete_the_phase)
{
    for (int acts = 0; acts < 2; acts++) {
        start(1);
        for (int i = 0; i < 3; i++)
            feed_bar(0, 2, 3, 32, WR_BAR_BLOCK, WR_BARMODE_SYNC);   /* D alone: count 3 */
        feed_bar(0, 0, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_SYNC);     /* A waits */
        feed_bar(0, 1, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);   /* P arrives, goes on */
        if (acts)
            lf_feed(&R, lf_acc(210, L, 0, 1, WR_FULL_MASK, WR_OP_STORE, 0, X + 512, 4));
        lf_feed(&R, lf_acc(211, L, 0, 2, 1u, WR_OP_STORE, 0, X, 0));  /* D writes */
        feed_bar(0, 2, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_SYNC);     /* D: complete */
        lf_feed(&R, lf_acc(212, L, 0, 0, 1u, WR_OP_LOAD, 0, X, 0));   /* A reads */
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "acts %d", acts);
        wr_findings_free(f);
    }
}

/* ---- cluster barriers split into arrive and wait ---- */

static void start_cluster(void)
{
    lf_start(&R, &wr_engine_fsm, 1);
    wr_event l = lf_launch(L, 0);
    l.u.launch.cluster[0] = 2;   /* blocks 0 and 1 of one cluster; 64 threads each */
    lf_feed(&R, l);
}

static void cbar(uint32_t block, uint32_t warp, uint8_t mode)
{
    feed_bar(block, warp, 0, 128, WR_BAR_CLUSTER, mode);
}

/* Block 0 writes X, then its warps arrive (`mode0`); block 1's warps
 * arrive; block 1's warp 0 waits (`wait_before`: before its block's share
 * completes) and reads X; block 1's warp 1 reads Y = X + 4 (written by
 * block 0 too) without having waited when `w1_waits` is false. */
static void cluster_handoff(uint8_t mode0, bool wait_before, bool w1_waits)
{
    start_cluster();
    lf_feed(&R, lf_acc(220, L, 0, 0, 3u, WR_OP_STORE, 0, X, 4));
    cbar(0, 0, mode0);
    cbar(0, 1, mode0);
    cbar(1, 0, WR_BARMODE_ARRIVE);
    if (wait_before)
        cbar(1, 0, WR_BARMODE_WAIT);
    cbar(1, 1, WR_BARMODE_ARRIVE);
    if (!wait_before)
        cbar(1, 0, WR_BARMODE_WAIT);   /* the share completed: taken at once */
    if (w1_waits)
        cbar(1, 1, WR_BARMODE_WAIT);
    lf_feed(&R, lf_acc(221, L, 1, 0, 1u, WR_OP_LOAD, 0, X, 0));
    lf_feed(&R, lf_acc(222, L, 1, 1, 1u, WR_OP_LOAD, 0, X + 4, 0));
}

Test(fsm, split_cluster_arrive_wait_handoff_no_race)
{
    for (int wb = 0; wb < 2; wb++) {
        cluster_handoff(WR_BARMODE_ARRIVE, wb, true);
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "wait before completion %d", wb);
        wr_findings_free(f);
    }
    cluster_handoff(WR_BARMODE_SYNC, false, true);   /* block 0 syncs, block 1 splits */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* Y's side is per warp: block 1's warp 1 arrived and has not waited. */
Test(fsm, split_cluster_warp_that_only_arrived_races)
{
    cluster_handoff(WR_BARMODE_ARRIVE, false, false);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(g->example.second.site, 222);
    wr_findings_free(f);
}

/* barrier.cluster.arrive.relaxed releases nothing: block 0's write is not
 * handed to block 1 by the phase, and both reads race. */
Test(fsm, split_cluster_relaxed_arrive_does_not_order_handoff)
{
    cluster_handoff(WR_BARMODE_ARRIVE_RELAXED, false, true);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 2);
    wr_findings_free(f);
}

/* In the block: warp 1 arrives last (the share completes with no waiter)
 * and waits after: its WAIT takes the completion then, which orders warp
 * 0's write (made at a count above warp 1's) before warp 1's read; with no
 * WAIT, warp 1 only arrived, and the read races. */
Test(fsm, split_cluster_wait_after_completion)
{
    for (int waits = 0; waits < 2; waits++) {
        start_cluster();
        feed_bar(0, 0, 3, 32, WR_BAR_BLOCK, WR_BARMODE_SYNC);   /* warp 0 alone: count 1 */
        buf_access(0, WR_OP_STORE, 230);
        cbar(0, 0, WR_BARMODE_ARRIVE);
        cbar(0, 1, WR_BARMODE_ARRIVE);   /* the share completes */
        if (waits)
            cbar(0, 1, WR_BARMODE_WAIT);
        buf_access(1, WR_OP_LOAD, 231);
        wr_findings *f = lf_end(&R);
        if (waits) {
            cr_assert_eq(lf_total(f), 0);
        } else {
            const wr_race_group *g = one_group(f);
            cr_assert_eq(g->example.race_class, WR_CLASS_INTER_WARP);
        }
        wr_findings_free(f);
    }
}

/* Block 0's warp 0 writes X after its arrival (and before its block's
 * share completes): the phase did not release that write, and block 1's
 * read after its wait races with it. */
Test(fsm, split_cluster_write_after_arrive_races)
{
    start_cluster();
    cbar(0, 0, WR_BARMODE_ARRIVE);
    lf_feed(&R, lf_acc(240, L, 0, 0, 1u, WR_OP_STORE, 0, X, 0));
    cbar(0, 1, WR_BARMODE_ARRIVE);
    cbar(1, 0, WR_BARMODE_SYNC);
    cbar(1, 1, WR_BARMODE_SYNC);
    lf_feed(&R, lf_acc(241, L, 1, 0, 1u, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g = one_group(f);
    cr_assert_eq(g->example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
}

/* CUTLASS's prologue: every warp arrives relaxed at the cluster barrier
 * first thing (the peer blocks have started once it is waited for), the
 * block's warps write shared memory meanwhile and meet at __syncthreads;
 * the relaxed phase orders nothing, the block barrier orders the write
 * before the other warp's read. */
Test(fsm, split_cluster_relaxed_prologue_then_block_barrier_no_race)
{
    start_cluster();
    cbar(0, 0, WR_BARMODE_ARRIVE_RELAXED);
    buf_access(0, WR_OP_STORE, 250);
    cbar(0, 1, WR_BARMODE_ARRIVE_RELAXED);
    cbar(1, 0, WR_BARMODE_ARRIVE_RELAXED);
    cbar(1, 1, WR_BARMODE_ARRIVE_RELAXED);
    feed_bar(0, 0, 0, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    feed_bar(0, 1, 0, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    buf_access(1, WR_OP_LOAD, 251);
    cbar(0, 0, WR_BARMODE_WAIT);
    cbar(0, 1, WR_BARMODE_WAIT);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

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

/* Unit tests of the scoped engine: the 32 ScoR microbenchmarks as event
 * sequences, HRF-indirect chains, weak accesses, and classification. */
#include <criterion/criterion.h>

#include "hb_events.h"

extern const wr_engine_ops wr_engine_scoped;

#define DATA 0x1000u
#define FLAG 0x2000u
#define LOCK 0x3000u
#define DEV WR_SCOPE_DEVICE
#define BLK WR_SCOPE_BLOCK
#define SA 10   /* site of party A's data access */
#define SB 20   /* site of party B's data access */

static hbt T;

static void setup(void)
{
    hbt_open(&T, &wr_engine_scoped, 0, 1);
    ev_launch(&T, 1, 0, 2, 64);   /* 2 blocks x 2 warps */
}

static void teardown(void) { hbt_close(&T); }

TestSuite(scoped, .init = setup, .fini = teardown);

static void expect_none(void) { cr_assert_eq(hbt_count(&T), 0, "expected no race"); }

static void expect_race(uint32_t s1, uint32_t s2, uint8_t verdict, uint8_t cls)
{
    const wr_race *r = hbt_find(&T, s1, s2);
    cr_assert_not_null(r, "expected a race between sites %u and %u", s1, s2);
    cr_assert_eq(r->verdict, verdict, "verdict %u, expected %u", r->verdict, verdict);
    cr_assert_eq(r->race_class, cls, "class %u, expected %u", r->race_class, cls);
}

/* parties: interblock A=b0w0 B=b1w0; interwarp A=b0w0 B=b0w1 */
#define AB 0, 0
#define BB 1, 0
#define BW 0, 1

/* message passing: A stores, fence(fs), exch(flag, fl); B exch(flag) then loads */
static void mp(uint32_t bb, uint32_t bw, uint8_t fs, uint8_t fl)
{
    ev_st(&T, SA, 1, 0, 0, 0, DATA);
    ev_fence(&T, 1, 0, 0, 1, fs);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, fl, FLAG);
    ev_atom(&T, 3, 1, bb, bw, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_ld(&T, SB, 1, bb, bw, 0, DATA);
}

/* party stores data inside lock(cs, fs1) / unlock(es, fs2) */
static void locked_store(uint32_t site, uint32_t b, uint32_t w, uint8_t cs, uint8_t fs1,
                         int acq_fence, uint8_t es, uint8_t fs2, int rel_fence)
{
    ev_lock(&T, 1, b, w, cs, fs1, LOCK, acq_fence);
    ev_st(&T, site, 1, b, w, 0, DATA);
    ev_unlock(&T, 1, b, w, es, fs2, LOCK, rel_fence);
}

/* ---------------- race-free (14) ---------------- */

Test(scoped, norace_interblock_atom)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, DEV, DATA);
    ev_atom(&T, SB, 1, BB, 0, WR_AOP_EXCH, DEV, DATA);
    expect_none();
}

Test(scoped, norace_interblock_fence_raw) { mp(BB, DEV, DEV); expect_none(); }

Test(scoped, norace_interblock_lock_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 1);
    locked_store(SB, BB, DEV, DEV, 1, DEV, DEV, 1);
    expect_none();
}

Test(scoped, norace_interwarp_block_fence_atom_hrf_indirect)
{
    ev_atom(&T, SA, 1, 0, 0, 0, WR_AOP_EXCH, BLK, DATA);
    ev_fence(&T, 1, 0, 0, 1, BLK);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 0, 1, 0, WR_AOP_ADD, DEV, FLAG);
    ev_atom(&T, SB, 1, 0, 1, 0, WR_AOP_EXCH, DEV, DATA);
    ev_fence(&T, 1, 0, 1, 1, DEV);
    ev_atom(&T, 2, 1, 0, 1, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_ADD, DEV, FLAG);
    ev_atom(&T, 30, 1, 1, 0, 0, WR_AOP_EXCH, BLK, DATA);
    ev_fence(&T, 1, 1, 0, 1, BLK);
    ev_atom(&T, 2, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 1, 0, WR_AOP_ADD, DEV, FLAG);
    ev_atom(&T, 40, 1, 1, 1, 0, WR_AOP_EXCH, DEV, DATA);
    expect_none();
}

static void hrf_fence_chain(uint8_t middle_fence)
{
    ev_st(&T, SA, 1, 0, 0, 0, DATA);
    ev_fence(&T, 1, 0, 0, 1, BLK);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 0, 1, 0, WR_AOP_ADD, DEV, FLAG);
    ev_ld(&T, SB, 1, 0, 1, 0, DATA);
    ev_st(&T, SB, 1, 0, 1, 0, DATA);
    ev_fence(&T, 1, 0, 1, 1, middle_fence);
    ev_atom(&T, 2, 1, 0, 1, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_ADD, DEV, FLAG);
    ev_ld(&T, 30, 1, 1, 0, 0, DATA);
    ev_st(&T, 30, 1, 1, 0, 0, DATA);
    ev_fence(&T, 1, 1, 0, 1, BLK);
    ev_atom(&T, 2, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 1, 0, WR_AOP_ADD, DEV, FLAG);
    ev_ld(&T, 40, 1, 1, 1, 0, DATA);
}

Test(scoped, norace_interwarp_block_fence_hrf_indirect)
{
    hrf_fence_chain(DEV);
    expect_none();
}

Test(scoped, hrf_chain_with_a_block_fence_across_blocks_is_a_scoped_fence_race)
{
    hrf_fence_chain(BLK);   /* b0w1 -> b1w0 hand-off is block-scoped */
    expect_race(SB, 30, WR_VERDICT_SCOPE_FENCE, WR_CLASS_INTER_BLOCK);
    /* b0w0's store reaches b1 only through the too-narrow hand-off too */
    cr_assert_null(hbt_find(&T, SA, SB));
}

Test(scoped, norace_interwarp_blkatom)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, BLK, DATA);
    ev_atom(&T, SB, 1, BW, 0, WR_AOP_EXCH, BLK, DATA);
    expect_none();
}

Test(scoped, norace_interwarp_blkfence_raw)
{
    mp(BW, BLK, DEV);
    ev_atom(&T, 4, 1, BW, 0, WR_AOP_EXCH, DEV, FLAG);
    expect_none();
}

Test(scoped, norace_interwarp_blklock_waw)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 1);
    expect_none();
}

Test(scoped, norace_interwarp_dev_blkatom)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, DEV, DATA);
    ev_atom(&T, SB, 1, BW, 0, WR_AOP_EXCH, BLK, DATA);
    expect_none();
}

Test(scoped, norace_interwarp_dev_blklock_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 1);
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 1);
    expect_none();
}

Test(scoped, norace_interwarp_fence_raw) { mp(BW, DEV, DEV); expect_none(); }

Test(scoped, norace_intrawarp_none_blkatom)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, BLK, DATA);
    ev_st(&T, SB, 1, AB, 0, DATA);
    expect_none();
}

Test(scoped, norace_intrawarp_none_blklock_no_tf_waw)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 0);
    ev_st(&T, SB, 1, AB, 0, DATA);
    expect_none();
}

Test(scoped, norace_intrawarp_none_blklock_waw)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 1);
    ev_st(&T, SB, 1, AB, 0, DATA);
    expect_none();
}

/* ---------------- racy (18) ---------------- */

Test(scoped, race_interblock_blkatom)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, BLK, DATA);
    ev_atom(&T, SB, 1, BB, 0, WR_AOP_EXCH, BLK, DATA);
    expect_race(SA, SB, WR_VERDICT_SCOPE_ATOMIC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_blkfence_raw)
{
    mp(BB, BLK, DEV);
    expect_race(SA, SB, WR_VERDICT_SCOPE_FENCE, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_blklock_waw)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SB, BB, BLK, BLK, 1, BLK, BLK, 1);
    expect_race(SA, SB, WR_VERDICT_SCOPE_LOCK, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_fence_rtraw)
{
    ev_ld(&T, SA, 1, AB, 0, DATA);
    ev_fence(&T, 1, AB, 1, DEV);
    ev_atom(&T, 2, 1, AB, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, BB, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_st(&T, SB, 1, BB, 0, DATA);
    ev_ld(&T, 11, 1, AB, 0, DATA);
    cr_assert_null(hbt_find(&T, SA, SB));
    expect_race(SB, 11, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_lock_blkfence_waw)
{
    locked_store(SB, BB, DEV, DEV, 1, DEV, DEV, 1);
    locked_store(SA, AB, DEV, BLK, 1, DEV, DEV, 1);
    expect_race(SA, SB, WR_VERDICT_SCOPE_LOCK, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_lock_no_stf_waw)
{
    locked_store(SB, BB, DEV, DEV, 1, DEV, DEV, 1);
    locked_store(SA, AB, DEV, DEV, 0, DEV, DEV, 1);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_lock_no_tf_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 0);
    locked_store(SB, BB, DEV, DEV, 1, DEV, DEV, 0);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_none_atom_waw)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, DEV, DATA);
    ev_st(&T, SB, 1, BB, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interblock_none_lock_rtraw)
{
    ev_lock(&T, 1, AB, DEV, DEV, LOCK, 1);
    ev_ld(&T, 12, 1, AB, 0, DATA);
    ev_unlock(&T, 1, AB, DEV, DEV, LOCK, 1);
    ev_st(&T, SA, 1, AB, 0, DATA);
    ev_lock(&T, 1, BB, DEV, DEV, LOCK, 1);
    ev_ld(&T, SB, 1, BB, 0, DATA);
    ev_unlock(&T, 1, BB, DEV, DEV, LOCK, 1);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(hbt_count(&T), 1);
}

Test(scoped, race_interblock_none_lock_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 1);
    ev_st(&T, SB, 1, BB, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, race_interwarp_blklock_no_stf_waw)
{
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SA, AB, BLK, BLK, 0, BLK, BLK, 1);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_blklock_no_tf_waw)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 0);
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 0);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_dev_blklock_no_stf_waw)
{
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SA, AB, DEV, DEV, 0, DEV, DEV, 1);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_dev_blklock_no_tf_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 0);
    locked_store(SB, BW, BLK, BLK, 1, BLK, BLK, 0);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_none_atom_waw)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, DEV, DATA);
    ev_st(&T, SB, 1, BW, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_none_blkatom_waw)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, BLK, DATA);
    ev_st(&T, SB, 1, BW, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_none_blklock_waw)
{
    locked_store(SA, AB, BLK, DEV, 1, BLK, DEV, 1);
    ev_st(&T, SB, 1, BW, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

Test(scoped, race_interwarp_none_lock_waw)
{
    locked_store(SA, AB, DEV, DEV, 1, DEV, DEV, 1);
    ev_st(&T, SB, 1, BW, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_WARP);
}

/* ---------------- weak accesses, barriers, misc ---------------- */

Test(scoped, weak_data_through_fence_and_flag_is_a_weak_access_race)
{
    ev_stw(&T, SA, 1, 0, 0, 0, DATA);
    ev_fence(&T, 1, 0, 0, 1, DEV);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_ldw(&T, SB, 1, 1, 0, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_WEAK_ACCESS, WR_CLASS_INTER_BLOCK);
}

Test(scoped, weak_data_ordered_by_a_barrier_is_fine)
{
    ev_stw(&T, SA, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 0, 64);
    ev_ldw(&T, SB, 1, 0, 1, 0, DATA);
    expect_none();
}

Test(scoped, barrier_then_relaxed_flag_is_a_block_scope_fence)
{
    /* the barrier releases at block scope only: another block races */
    ev_st(&T, SA, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 0, 64);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_ld(&T, SB, 1, 1, 0, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_SCOPE_FENCE, WR_CLASS_INTER_BLOCK);
}

Test(scoped, block_scoped_counter_after_a_barrier_races_across_blocks)
{
    /* __syncthreads(); atomicAdd_block(&counter, 1) in two blocks: the
     * barrier's fence makes each add a release, but the counter is no flag
     * the program synchronizes through, and the two adds' block scopes do
     * not hold each other */
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 32);
    ev_bar(&T, 1, 1, 0, WR_FULL_MASK, 0, 32);
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_ADD, BLK, DATA);
    ev_atom(&T, SB, 1, BB, 0, WR_AOP_ADD, BLK, DATA);
    expect_race(SA, SB, WR_VERDICT_SCOPE_ATOMIC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, block_scoped_flag_after_an_explicit_fence_reports_the_data)
{
    /* the flag a fence released is the program's synchronization: its own
     * atomics' short scope shows as the race on the data it orders */
    ev_st(&T, SA, 1, 0, 0, 0, DATA);
    ev_fence(&T, 1, 0, 0, 1, BLK);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, BLK, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, BLK, FLAG);
    ev_ld(&T, SB, 1, 1, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, SA, SB), "the data race");
    cr_assert_null(hbt_find(&T, 2, 3), "no race on the flag itself");
}

Test(scoped, block_scoped_release_acquire_atomics_across_blocks)
{
    ev_st(&T, SA, 1, 0, 0, 0, DATA);
    ev_acc(&T, 2, 1, 0, 0, 1, WR_OP_ATOMIC_STORE, 0, BLK, WR_ORDER_RELEASE, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_acc(&T, 3, 1, 1, 0, 1, WR_OP_ATOMIC_LOAD, 0, DEV, WR_ORDER_ACQUIRE, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_ld(&T, SB, 1, 1, 0, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_SCOPE_ATOMIC, WR_CLASS_INTER_BLOCK);
}

Test(scoped, kernel_boundary_orders_everything)
{
    ev_atom(&T, SA, 1, AB, 0, WR_AOP_EXCH, BLK, DATA);
    ev_stw(&T, 11, 1, 0, 0, 0, DATA + 4);
    ev_simple(&T, WR_EV_KERNEL_END, 1, 0);
    ev_launch(&T, 2, 0, 2, 64);
    ev_atom(&T, SB, 2, 1, 0, 0, WR_AOP_EXCH, BLK, DATA);
    ev_ldw(&T, 21, 2, 1, 0, 0, DATA + 4);
    expect_none();
}

Test(scoped, intra_warp_divergence_is_missing_sync)
{
    ev_acc(&T, SA, 1, 0, 0, 0x1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    ev_acc(&T, SB, 1, 0, 0, 0x2, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTRA_WARP);
}

Test(scoped, streams_without_event_race_as_missing_sync)
{
    ev_launch(&T, 2, 1, 1, 32);
    ev_launch(&T, 3, 2, 1, 32);
    ev_st(&T, SA, 2, 0, 0, 0, DATA);
    ev_ld(&T, SB, 3, 0, 0, 0, DATA);
    expect_race(SA, SB, WR_VERDICT_MISSING_SYNC, WR_CLASS_INTER_KERNEL);
}

Test(scoped, lock_word_itself_is_not_reported)
{
    locked_store(SA, AB, BLK, BLK, 1, BLK, BLK, 1);
    locked_store(SB, BB, BLK, BLK, 1, BLK, BLK, 1);
    cr_assert_null(hbt_find(&T, 90, 90));
    cr_assert_null(hbt_find(&T, 90, 91));
    cr_assert_eq(hbt_count(&T), 1);
}

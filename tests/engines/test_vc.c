/* Unit tests of the vc engine (happens-before, scope-oblivious). */
#include <criterion/criterion.h>

#include "hb_events.h"
#include "hbcore.h"

extern const wr_engine_ops wr_engine_vc;

#define DATA 0x1000u
#define FLAG 0x2000u
#define LOCK 0x3000u
#define DEV WR_SCOPE_DEVICE
#define BLK WR_SCOPE_BLOCK

static hbt T;

static void setup(void)
{
    hbt_open(&T, &wr_engine_vc, 0, 1);
    ev_launch(&T, 1, 0, 2, 64);   /* 2 blocks x 2 warps */
}

static void teardown(void) { hbt_close(&T); }

TestSuite(vc, .init = setup, .fini = teardown);

Test(vc, message_passing_fence_then_atomic)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_fence(&T, 1, 0, 0, 1, DEV);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);   /* reads 1 */
    ev_ld(&T, 4, 1, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, message_passing_without_fence_races)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);   /* relaxed: no release */
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_ld(&T, 4, 1, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
    const wr_race *r = hbt_find(&T, 1, 4);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(r->verdict, WR_VERDICT_NONE);
    cr_assert_eq(r->first.kind, WR_KIND_WRITE);
    cr_assert_eq(r->second.kind, WR_KIND_READ);
    cr_assert_eq(r->first.block, 0);
    cr_assert_eq(r->second.block, 1);
    cr_assert_lt(r->first.seq, r->second.seq);
}

Test(vc, fence_releases_only_what_precedes_it)
{
    /* fence; store; exch: the store is after the fence, not released */
    ev_fence(&T, 1, 0, 0, 1, DEV);
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_atom(&T, 2, 1, 0, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_atom(&T, 3, 1, 1, 0, 0, WR_AOP_EXCH, DEV, FLAG);
    ev_fence(&T, 1, 1, 0, 1, DEV);
    ev_ld(&T, 4, 1, 1, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 4));
}

Test(vc, explicit_release_acquire)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_acc(&T, 2, 1, 0, 0, 1, WR_OP_ATOMIC_STORE, 0, DEV, WR_ORDER_RELEASE, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_acc(&T, 3, 1, 1, 0, 1, WR_OP_ATOMIC_LOAD, 0, DEV, WR_ORDER_ACQUIRE, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_ld(&T, 4, 1, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, relaxed_store_does_not_release)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_acc(&T, 2, 1, 0, 0, 1, WR_OP_ATOMIC_STORE, 0, DEV, WR_ORDER_RELAXED, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_acc(&T, 3, 1, 1, 0, 1, WR_OP_ATOMIC_LOAD, 0, DEV, WR_ORDER_ACQUIRE, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, FLAG, 0);
    ev_ld(&T, 4, 1, 1, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 4));
}

Test(vc, lock_with_fences_orders)
{
    ev_lock(&T, 1, 1, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 1, 1, 1, 0, 0, DATA);
    ev_unlock(&T, 1, 1, 0, DEV, DEV, LOCK, 1);
    ev_lock(&T, 1, 0, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 2, 1, 0, 0, 0, DATA);
    ev_unlock(&T, 1, 0, 0, DEV, DEV, LOCK, 1);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, lock_without_acquire_fence_races)
{
    ev_lock(&T, 1, 1, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 1, 1, 1, 0, 0, DATA);
    ev_unlock(&T, 1, 1, 0, DEV, DEV, LOCK, 1);
    ev_lock(&T, 1, 0, 0, DEV, DEV, LOCK, 0);   /* CAS, no fence */
    ev_st(&T, 2, 1, 0, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

Test(vc, lock_without_release_fence_races)
{
    ev_lock(&T, 1, 1, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 1, 1, 1, 0, 0, DATA);
    ev_unlock(&T, 1, 1, 0, DEV, DEV, LOCK, 0);  /* exch, no fence */
    ev_lock(&T, 1, 0, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 2, 1, 0, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

Test(vc, atomics_never_race_even_block_scoped_across_blocks)
{
    ev_atom(&T, 1, 1, 0, 0, 0, WR_AOP_EXCH, BLK, DATA);
    ev_atom(&T, 2, 1, 1, 0, 0, WR_AOP_EXCH, BLK, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, atomic_vs_plain_races)
{
    ev_atom(&T, 1, 1, 0, 0, 0, WR_AOP_EXCH, DEV, DATA);
    ev_st(&T, 2, 1, 0, 1, 0, DATA);
    const wr_race *r = hbt_find(&T, 1, 2);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_WARP);
    cr_assert_eq(r->first.kind, WR_KIND_ATOMIC);
}

Test(vc, barrier_orders_block)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 0, 64);
    ev_ld(&T, 2, 1, 0, 1, 5, DATA);
    ev_st(&T, 3, 1, 0, 0, 3, DATA + 4);
    ev_ld(&T, 4, 1, 0, 1, 5, DATA + 4);   /* after the barrier: races */
    cr_assert_eq(hbt_count(&T), 1);
    const wr_race *r = hbt_find(&T, 3, 4);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_WARP);
    cr_assert_eq(r->first.lane, 3);
    cr_assert_eq(r->second.lane, 5);
}

Test(vc, barrier_partial_arrival_does_not_order)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, 0xffffu, 0, 64);        /* only 48 of 64 threads */
    ev_ld(&T, 2, 1, 0, 1, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

Test(vc, barrier_does_not_order_other_blocks)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 1, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 1, 1, WR_FULL_MASK, 0, 64);
    ev_ld(&T, 2, 1, 1, 0, 0, DATA);
    const wr_race *r = hbt_find(&T, 1, 2);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_BLOCK);
}

Test(vc, named_barrier_orders_only_its_arrivers)
{
    hbt_close(&T);
    hbt_open(&T, &wr_engine_vc, 0, 1);
    ev_launch(&T, 1, 0, 1, 96);   /* 3 warps */
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 1, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 1, 64);
    ev_ld(&T, 2, 1, 0, 1, 0, DATA);   /* ordered */
    ev_ld(&T, 3, 1, 0, 2, 0, DATA);   /* warp 2 did not take part */
    cr_assert_eq(hbt_count(&T), 1);
    cr_assert_not_null(hbt_find(&T, 1, 3));
}

Test(vc, shared_memory_is_per_block)
{
    ev_acc(&T, 1, 1, 0, 0, 1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_SHARED,
           WR_ADDR_UNIFORM, 16, 0);
    ev_acc(&T, 2, 1, 1, 0, 1, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_SHARED,
           WR_ADDR_UNIFORM, 16, 0);
    cr_assert_eq(hbt_count(&T), 0);
    ev_acc(&T, 3, 1, 0, 1, 1, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_SHARED,
           WR_ADDR_UNIFORM, 16, 0);
    const wr_race *r = hbt_find(&T, 1, 3);
    cr_assert_not_null(r);
    cr_assert_eq(r->space, WR_SPACE_SHARED);
}

Test(vc, local_memory_never_races)
{
    ev_acc(&T, 1, 1, 0, 0, 1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_LOCAL,
           WR_ADDR_UNIFORM, 16, 0);
    ev_acc(&T, 2, 1, 1, 0, 1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_LOCAL,
           WR_ADDR_UNIFORM, 16, 0);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, converged_warp_is_lockstep)
{
    /* every lane writes x[lane], then every lane reads x[lane ^ 1] */
    ev_acc(&T, 1, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_STRIDED, DATA, 4);
    ev_acc(&T, 2, 1, 0, 0, WR_FULL_MASK, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA + 4, 0);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, diverged_lanes_race_intra_warp)
{
    ev_acc(&T, 1, 1, 0, 0, 0x1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    ev_acc(&T, 2, 1, 0, 0, 0x2, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    const wr_race *r = hbt_find(&T, 1, 2);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTRA_WARP);
    cr_assert_eq(r->first.lane, 0);
    cr_assert_eq(r->second.lane, 1);
}

Test(vc, divergence_sticks_until_syncwarp)
{
    ev_acc(&T, 1, 1, 0, 0, 0x1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    ev_wsync(&T, 1, 0, 0, WR_FULL_MASK);
    ev_acc(&T, 2, 1, 0, 0, 0x2, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, partial_syncwarp_orders_only_its_lanes)
{
    ev_acc(&T, 1, 1, 0, 0, 0x1, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    ev_wsync(&T, 1, 0, 0, 0x3);
    ev_acc(&T, 2, 1, 0, 0, 0x2, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    cr_assert_eq(hbt_count(&T), 0);
    ev_acc(&T, 3, 1, 0, 0, 0x4, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    const wr_race *r = hbt_find(&T, 1, 3);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTRA_WARP);
    cr_assert_eq(r->second.lane, 2);
}

Test(vc, same_instruction_store_to_one_word)
{
    ev_acc(&T, 1, 1, 0, 0, 0x5, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA, 0);
    const wr_race *r = hbt_find(&T, 1, 1);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTRA_WARP);
    cr_assert_eq(hbt_count(&T), 1);
}

Test(vc, byte_stores_by_lanes_are_not_a_race)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ACCESS;
    ev.site = 1;
    ev.u.access = (wr_access){.launch = 1, .block = 0, .warp = 0, .active_mask = 0xf,
                              .op = WR_OP_STORE, .size = 1, .addr_mode = WR_ADDR_STRIDED,
                              .base = DATA, .stride = 1};
    hbt_feed(&T, &ev);
    cr_assert_eq(hbt_count(&T), 0);
}

/* One vector store of warp 0, block 0, launch 1: lane l writes `size`
 * bytes at addr[l] (every lane active). */
static void ev_scatter(hbt *t, uint32_t site, const uint64_t addr[32], uint8_t size)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ACCESS;
    ev.site = site;
    ev.u.access = (wr_access){.launch = 1, .block = 0, .warp = 0, .active_mask = WR_FULL_MASK,
                              .op = WR_OP_STORE, .size = size, .addr_mode = WR_ADDR_VECTOR,
                              .lane_addr = addr};
    hbt_feed(t, &ev);
}

/* The one race reported: one intra-warp group, first side lane `a`, second `b`. */
static const wr_race *only_intra_race(unsigned a, unsigned b)
{
    const wr_race *r = hbt_find(&T, 1, 1);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTRA_WARP);
    cr_assert_eq(r->first.lane, a);
    cr_assert_eq(r->second.lane, b);
    cr_assert_eq(hbt_count(&T), 1);
    return r;
}

Test(vc, scatter_to_distinct_words_is_not_a_race)
{
    uint64_t addr[32];
    for (unsigned l = 0; l < 32; l++)   /* a permutation of 32 words, and far apart ones */
        addr[l] = l < 16 ? DATA + 4u * ((l * 7u) % 16u) : DATA + 0x100000u * l;
    ev_scatter(&T, 1, addr, 4);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, scatter_of_bytes_into_one_word_is_not_a_race)
{
    uint64_t addr[32];
    for (unsigned l = 0; l < 32; l++)   /* lanes 4k..4k+3 share a word, distinct bytes */
        addr[l] = DATA + 0x40u * (l % 8u) + (31u - l) / 8u;
    ev_scatter(&T, 1, addr, 1);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, scatter_lanes_on_one_word_race_intra_warp)
{
    uint64_t addr[32];
    for (unsigned l = 0; l < 32; l++)
        addr[l] = DATA + 0x10000u * ((l * 13u) % 32u);
    addr[17] = addr[3];
    ev_scatter(&T, 1, addr, 4);
    cr_assert_eq(only_intra_race(3, 17)->addr, addr[3]);
}

Test(vc, scatter_of_overlapping_unaligned_vectors_races)
{
    uint64_t addr[32];
    for (unsigned l = 0; l < 32; l++)   /* 16-byte lanes 32 bytes apart */
        addr[l] = DATA + 32u * l;
    addr[9] = addr[5] + 12;   /* starts 12 bytes into lane 5's 16: they share 4 bytes */
    ev_scatter(&T, 1, addr, 16);
    only_intra_race(5, 9);
}

Test(vc, scatter_of_adjacent_unaligned_vectors_is_not_a_race)
{
    uint64_t addr[32];
    for (unsigned l = 0; l < 32; l++)   /* 16-byte lanes back to back from an odd address */
        addr[l] = DATA + 2u + 16u * ((l * 5u) % 32u);
    ev_scatter(&T, 1, addr, 16);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, kernels_on_one_stream_are_ordered)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_launch(&T, 2, 0, 1, 32);
    ev_ld(&T, 2, 2, 0, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, kernels_on_two_streams_race)
{
    ev_launch(&T, 2, 1, 1, 32);
    ev_launch(&T, 3, 2, 1, 32);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_ld(&T, 2, 3, 0, 0, 0, DATA);
    const wr_race *r = hbt_find(&T, 1, 2);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_KERNEL);
}

Test(vc, event_orders_two_streams)
{
    ev_launch(&T, 2, 1, 1, 32);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_simple(&T, WR_EV_EVENT_RECORD, 7, 1);
    ev_simple(&T, WR_EV_STREAM_WAIT, 7, 2);
    ev_launch(&T, 3, 2, 1, 32);
    ev_ld(&T, 2, 3, 0, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, event_recorded_before_the_kernel_does_not_order_it)
{
    ev_simple(&T, WR_EV_EVENT_RECORD, 7, 1);
    ev_launch(&T, 2, 1, 1, 32);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_simple(&T, WR_EV_STREAM_WAIT, 7, 2);
    ev_launch(&T, 3, 2, 1, 32);
    ev_ld(&T, 2, 3, 0, 0, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

Test(vc, async_copy_races_running_kernel)
{
    ev_launch(&T, 2, 1, 1, 32);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_copy(&T, 5, WR_COPY_D2H, 0, DATA, 64, 2, 1);
    const wr_race *r = hbt_find(&T, 1, 5);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_KERNEL);
    cr_assert_eq(r->second.block, UINT32_MAX);
    cr_assert_eq(r->second.launch, 0);
}

Test(vc, device_to_device_copy_reads_its_source_and_writes_its_destination)
{
    /* one site, two contexts: the copy's read of FLAG and its write of DATA */
    ev_launch(&T, 2, 1, 1, 32);
    ev_ld(&T, 1, 2, 0, 0, 0, DATA);
    ev_st(&T, 3, 2, 0, 0, 0, FLAG);
    ev_copy(&T, 5, WR_COPY_D2D, DATA, FLAG, 4, 2, 1);
    const wr_race *r = hbt_find(&T, 1, 5);
    cr_assert_not_null(r, "the copy's write of DATA races the kernel's read");
    cr_assert_eq(r->first.site == 5 ? r->first.kind : r->second.kind, WR_KIND_WRITE);
    r = hbt_find(&T, 3, 5);
    cr_assert_not_null(r, "the copy's read of FLAG races the kernel's write");
    cr_assert_eq(r->first.site == 5 ? r->first.kind : r->second.kind, WR_KIND_READ);
}

Test(vc, copy_after_stream_sync_is_ordered)
{
    ev_launch(&T, 2, 1, 1, 32);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_simple(&T, WR_EV_STREAM_SYNC, 1, 0);
    ev_copy(&T, 5, WR_COPY_D2H, 0, DATA, 64, 2, 1);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, sync_copy_then_kernel_on_other_stream_is_ordered)
{
    ev_copy(&T, 5, WR_COPY_H2D, DATA, 0, 64, 1, 0);   /* blocks the host */
    ev_launch(&T, 2, 2, 1, 32);
    ev_ld(&T, 2, 2, 0, 0, 0, DATA + 8);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, async_copy_then_kernel_on_other_stream_races)
{
    ev_copy(&T, 5, WR_COPY_H2D, DATA, 0, 64, 1, 1);
    ev_launch(&T, 2, 2, 1, 32);
    ev_ld(&T, 2, 2, 0, 0, 0, DATA + 8);
    cr_assert_not_null(hbt_find(&T, 5, 2));
}

Test(vc, read_shared_then_write)
{
    /* two unordered readers, then a write ordered after only one of them */
    ev_ld(&T, 1, 1, 0, 0, 0, DATA);
    ev_ld(&T, 2, 1, 1, 0, 0, DATA);
    ev_st(&T, 3, 1, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
    cr_assert_not_null(hbt_find(&T, 1, 3));
}

static size_t run_sharded(uint32_t shards)
{
    size_t total = 0;
    for (uint32_t s = 0; s < shards; s++) {
        hbt t;
        hbt_open(&t, &wr_engine_vc, s, shards);
        ev_launch(&t, 1, 0, 2, 64);
        for (unsigned i = 0; i < 8; i++) {
            ev_acc(&t, 1, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0, WR_ORDER_WEAK,
                   WR_SPACE_GLOBAL, WR_ADDR_STRIDED, DATA + i * 4096, 4);
            ev_acc(&t, 2, 1, 1, 0, WR_FULL_MASK, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK,
                   WR_SPACE_GLOBAL, WR_ADDR_STRIDED, DATA + i * 4096, 4);
        }
        const wr_race_group *g;
        size_t n = wr_findings_groups(t.f, &g);
        for (size_t k = 0; k < n; k++)
            total += g[k].count;
        hbt_close(&t);
    }
    return total;
}

Test(vc, shards_split_words_not_findings)
{
    size_t one = run_sharded(1);
    cr_assert_eq(one, 8 * 32);
    cr_assert_eq(run_sharded(2), one);
    cr_assert_eq(run_sharded(3), one);
}

Test(vc, partial_group_runs_in_lockstep_until_a_mask_changes)
{
    /* HiRace Listing 3 in one warp, lanes 0-3 throughout: lockstep */
    ev_acc(&T, 1, 1, 0, 0, 0xf, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_STRIDED, DATA, 4);
    ev_acc(&T, 2, 1, 0, 0, 0xf, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_STRIDED, DATA + 4, 4);
    cr_assert_eq(hbt_count(&T), 0);
    /* a different mask: diverged, lane 0 now races lane 1's earlier store */
    ev_acc(&T, 3, 1, 0, 0, 0x1, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA + 4, 0);
    cr_assert_eq(hbt_count(&T), 0);   /* stored by lane 0 itself */
    ev_acc(&T, 4, 1, 0, 0, 0x1, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA + 8, 0);
    cr_assert_eq(hbt_count(&T), 0);   /* the store ran converged with lane 0 */
    ev_acc(&T, 5, 1, 0, 0, 0x2, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, DATA + 8, 0);
    const wr_race *r = hbt_find(&T, 4, 5);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTRA_WARP);
}

/* ---- skipped joins (an acquire whose release clock the acquirer already
 * holds) must never drop knowledge ---- */

#define LOCK2 0x3100u
#define FLAGA 0x3200u
#define FLAGB 0x3300u
#define FLAGC 0x3400u

/* a lock handed around 32 warps of 8 blocks, twice, with a second lock
 * taken in between: the last holder is ordered after the first one's write
 * through the chain */
Test(vc, lock_chain_orders_through_many_warps)
{
    ev_launch(&T, 2, 0, 8, 128);   /* 8 blocks x 4 warps */
    ev_lock(&T, 2, 0, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_unlock(&T, 2, 0, 0, DEV, DEV, LOCK, 1);
    for (int round = 0; round < 2; round++)
        for (uint32_t i = 1; i < 32; i++) {
            uint32_t b = (i * 3) % 8, w = i % 4;
            ev_lock(&T, 2, b, w, DEV, DEV, LOCK, 1);
            ev_unlock(&T, 2, b, w, DEV, DEV, LOCK, 1);
            ev_lock(&T, 2, b, w, DEV, DEV, LOCK2, 1);
            ev_unlock(&T, 2, b, w, DEV, DEV, LOCK2, 1);
        }
    ev_lock(&T, 2, 7, 3, DEV, DEV, LOCK2, 1);
    ev_unlock(&T, 2, 7, 3, DEV, DEV, LOCK2, 1);
    ev_lock(&T, 2, 7, 3, DEV, DEV, LOCK, 1);
    ev_st(&T, 2, 2, 7, 3, 0, DATA);
    ev_unlock(&T, 2, 7, 3, DEV, DEV, LOCK, 1);
    cr_assert_eq(hbt_count(&T), 0);
}

/* the same hand-around of the second lock only: the first holder of the
 * first lock never released into it, so the last one is NOT ordered */
Test(vc, lock_chain_without_the_writer_races)
{
    ev_launch(&T, 2, 0, 8, 128);
    ev_lock(&T, 2, 0, 0, DEV, DEV, LOCK, 1);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_unlock(&T, 2, 0, 0, DEV, DEV, LOCK, 1);
    for (int round = 0; round < 2; round++)
        for (uint32_t i = 1; i < 32; i++) {
            uint32_t b = (i * 3) % 8, w = i % 4;
            if (b || w)   /* not the writer */
                ev_lock(&T, 2, b, w, DEV, DEV, LOCK2, 1);
            if (b || w)
                ev_unlock(&T, 2, b, w, DEV, DEV, LOCK2, 1);
        }
    ev_lock(&T, 2, 7, 3, DEV, DEV, LOCK2, 1);
    ev_st(&T, 2, 2, 7, 3, 0, DATA);
    ev_unlock(&T, 2, 7, 3, DEV, DEV, LOCK2, 1);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

/* X releases twice under one fence stamp, learning Z's write in between:
 * Y, which got the first release, must still learn the second one */
Test(vc, second_release_under_one_fence_stamp_is_not_skipped)
{
    ev_launch(&T, 2, 0, 4, 32);
    ev_fence(&T, 2, 1, 0, 1, DEV);                   /* X */
    ev_atom(&T, 91, 2, 1, 0, 0, WR_AOP_EXCH, DEV, FLAGA);
    ev_st(&T, 1, 2, 2, 0, 0, DATA);                  /* Z */
    ev_fence(&T, 2, 2, 0, 1, DEV);
    ev_atom(&T, 91, 2, 2, 0, 0, WR_AOP_EXCH, DEV, FLAGB);
    ev_atom(&T, 91, 2, 1, 0, 0, WR_AOP_EXCH, DEV, FLAGB);   /* X learns Z */
    ev_atom(&T, 91, 2, 1, 0, 0, WR_AOP_EXCH, DEV, FLAGC);   /* releases at its fence */
    ev_atom(&T, 91, 2, 3, 0, 0, WR_AOP_EXCH, DEV, FLAGA);   /* Y */
    ev_atom(&T, 91, 2, 3, 0, 0, WR_AOP_EXCH, DEV, FLAGC);
    ev_ld(&T, 2, 2, 3, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

/* Blocks are recycled objects (vclock.c, block_new): a block made after
 * another one exited starts knowing nothing.  Block 0's warps order their
 * accesses by a barrier, then block 0 exits; block 1, in the recycled
 * object, has no barrier, and its warps race. */
Test(vc, block_after_an_exited_one_starts_knowing_nothing)
{
    ev_simple(&T, WR_EV_BLOCK_ENTER, 1, 0);
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_bar(&T, 1, 0, 0, WR_FULL_MASK, 0, 64);
    ev_bar(&T, 1, 0, 1, WR_FULL_MASK, 0, 64);
    ev_ld(&T, 2, 1, 0, 1, 0, DATA);
    ev_simple(&T, WR_EV_BLOCK_EXIT, 1, 0);
    cr_assert_eq(hbt_count(&T), 0);
    ev_simple(&T, WR_EV_BLOCK_ENTER, 1, 1);
    ev_st(&T, 3, 1, 1, 0, 0, DATA + 64);
    ev_ld(&T, 4, 1, 1, 1, 0, DATA + 64);
    ev_simple(&T, WR_EV_BLOCK_EXIT, 1, 1);
    cr_assert_eq(hbt_count(&T), 1);
    const wr_race *r = hbt_find(&T, 3, 4);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_WARP);
}

/* A malformed trace names warp 5 of a 2-warp block: it is a warp of its
 * own (its block's warps grow apart from the block object), unordered
 * with warp 0 until a barrier; the block then exits and is dropped (ASan:
 * no leak, no double free). */
Test(vc, warp_beyond_the_block_size_is_a_warp_of_its_own)
{
    ev_simple(&T, WR_EV_BLOCK_ENTER, 1, 0);
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    ev_st(&T, 2, 1, 0, 5, 0, DATA);
    cr_assert_not_null(hbt_find(&T, 1, 2));
    ev_ld(&T, 3, 1, 0, 1, 0, DATA + 4);
    ev_st(&T, 4, 1, 0, 5, 0, DATA + 4);
    cr_assert_not_null(hbt_find(&T, 3, 4));
    ev_simple(&T, WR_EV_BLOCK_EXIT, 1, 0);
    ev_simple(&T, WR_EV_BLOCK_ENTER, 1, 1);   /* a block of the usual size again */
    ev_st(&T, 5, 1, 1, 0, 0, DATA + 8);
    ev_ld(&T, 6, 1, 1, 1, 0, DATA + 8);
    cr_assert_not_null(hbt_find(&T, 5, 6));
    cr_assert_eq(hbt_count(&T), 3);
}

/* A long trace: launch 2 on stream 1 writes KEEP once, 5,000 launches after
 * it on stream 1 write DATA (a warp each of two-warp blocks: 10,002 units,
 * three chunks), then a launch on stream 2, concurrent with all of them,
 * reads both words.  With contexts collected as the trace goes, the units
 * of the DATA writers overwritten since are forgotten a chunk at a time,
 * and the races still name both writers whole. */
Test(vc, units_no_access_names_are_forgotten_and_named_ones_kept)
{
    const uint64_t KEEP = DATA + 0x100;
    const uint32_t writers = 5000, last = 2 + writers;
    wr_hbe_collect_every(50);
    ev_launch(&T, 2, 1, 1, 64);
    ev_simple(&T, WR_EV_BLOCK_ENTER, 2, 0);
    ev_st(&T, 1, 2, 0, 0, 0, KEEP);
    ev_simple(&T, WR_EV_BLOCK_EXIT, 2, 0);
    for (uint32_t l = 3; l <= last; l++) {
        ev_launch(&T, l, 1, 1, 64);
        ev_simple(&T, WR_EV_BLOCK_ENTER, l, 0);
        ev_st(&T, 2, l, 0, 0, 0, DATA);
        ev_simple(&T, WR_EV_BLOCK_EXIT, l, 0);
    }
    ev_launch(&T, last + 1, 2, 1, 64);
    ev_simple(&T, WR_EV_BLOCK_ENTER, last + 1, 0);
    ev_ld(&T, 3, last + 1, 0, 0, 0, KEEP);
    ev_ld(&T, 4, last + 1, 0, 0, 0, DATA);
    wr_hbe_collect_every(0);

    const wr_hb *hb = wr_hbe_hb(T.eng);
    cr_assert(wr_hb_unit_kept(hb, 0), "launch 2's warp wrote KEEP, which no one overwrote");
    cr_assert_not(wr_hb_unit_kept(hb, WR_HB_UNIT_CHUNK), "a chunk of overwritten writers");
    cr_assert(wr_hb_unit_kept(hb, 2 * writers + 1), "the last writer of DATA");
    const wr_race *r = hbt_find(&T, 1, 3);
    cr_assert_not_null(r);
    cr_assert_eq(r->first.launch, 2);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_KERNEL);
    r = hbt_find(&T, 2, 4);
    cr_assert_not_null(r);
    cr_assert_eq(r->first.launch, last);
    cr_assert_eq(hbt_count(&T), 2);
}

/* ---- cluster and grid barriers ---- */

/* Launch 2: 4 blocks of 2 warps in clusters of 2 blocks. */
static void launch_clusters(void)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch.launch = 2;
    ev.u.launch.kernel = 2;
    ev.u.launch.grid[0] = 4;
    ev.u.launch.grid[1] = ev.u.launch.grid[2] = 1;
    ev.u.launch.block_dim[0] = 64;
    ev.u.launch.block_dim[1] = ev.u.launch.block_dim[2] = 1;
    ev.u.launch.cluster[0] = 2;
    ev.u.launch.cluster[1] = ev.u.launch.cluster[2] = 1;
    hbt_feed(&T, &ev);
}

static void cluster_sync(uint32_t b0, uint32_t expected)
{
    for (uint32_t b = b0; b < b0 + 2; b++)
        for (uint32_t w = 0; w < 2; w++)
            ev_xbar(&T, 2, b, w, WR_BAR_CLUSTER, expected);
}

Test(vc, cluster_barrier_orders_the_blocks_of_its_cluster)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 1, 3, DATA);
    cluster_sync(0, 0);   /* the count from the launch: 2 blocks x 64 */
    ev_ld(&T, 2, 2, 1, 0, 5, DATA);
    ev_st(&T, 3, 2, 1, 1, 7, DATA + 4);
    cluster_sync(0, 128);
    ev_ld(&T, 4, 2, 0, 0, 0, DATA + 4);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, cluster_barrier_does_not_order_other_clusters)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    cluster_sync(0, 0);
    cluster_sync(2, 0);
    ev_ld(&T, 2, 2, 2, 0, 0, DATA);   /* block 2: the other cluster */
    cr_assert_eq(hbt_count(&T), 1);
    const wr_race *r = hbt_find(&T, 1, 2);
    cr_assert_not_null(r);
    cr_assert_eq(r->race_class, WR_CLASS_INTER_BLOCK);
}

Test(vc, cluster_barrier_short_of_its_count_orders_nothing)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_xbar(&T, 2, 0, 0, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 0, 1, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 1, 0, WR_BAR_CLUSTER, 0);   /* b1 w1 has not arrived */
    ev_ld(&T, 2, 2, 1, 1, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
}

/* A warp that arrives again went on: the barrier completed, also when the
 * count was short (threads that exited). */
Test(vc, cluster_barrier_completes_when_a_warp_arrives_again)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_xbar(&T, 2, 0, 0, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 1, 0, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 0, 0, WR_BAR_CLUSTER, 0);   /* again: the first completed */
    ev_ld(&T, 2, 2, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

Test(vc, grid_barrier_orders_every_block_of_the_launch)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_st(&T, 2, 2, 3, 1, 0, DATA + 4);
    for (uint32_t b = 0; b < 4; b++)
        for (uint32_t w = 0; w < 2; w++)
            ev_xbar(&T, 2, b, w, WR_BAR_GRID, 0);
    ev_ld(&T, 3, 2, 3, 0, 0, DATA);
    ev_ld(&T, 4, 2, 0, 1, 0, DATA + 4);
    cr_assert_eq(hbt_count(&T), 0);
    /* after the barrier, two blocks are unordered again */
    ev_st(&T, 5, 2, 1, 0, 0, DATA + 8);
    ev_ld(&T, 6, 2, 2, 0, 0, DATA + 8);
    cr_assert_eq(hbt_count(&T), 1);
}

/* An arriver's block gone before the barrier completes (a malformed
 * trace): the others still complete it, and nothing breaks. */
Test(vc, cluster_barrier_with_an_exited_arriver)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    ev_xbar(&T, 2, 0, 0, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 0, 1, WR_BAR_CLUSTER, 0);
    ev_simple(&T, WR_EV_BLOCK_EXIT, 2, 0);
    ev_xbar(&T, 2, 1, 0, WR_BAR_CLUSTER, 0);
    ev_xbar(&T, 2, 1, 1, WR_BAR_CLUSTER, 0);
    ev_ld(&T, 2, 2, 1, 0, 0, DATA);
    /* the writer's clock left with its block: the read is not ordered */
    cr_assert_eq(hbt_count(&T), 1);
}

/* ---- split barriers (format 1.3) ---- */

static void bar_arrive(uint32_t l, uint32_t b, uint32_t w, uint32_t id, uint32_t expected)
{
    ev_barrier_mode(&T, l, b, w, WR_FULL_MASK, id, expected, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
}

static void xbar_mode(uint32_t b, uint32_t w, uint8_t mode, uint32_t expected)
{
    ev_barrier_mode(&T, 2, b, w, WR_FULL_MASK, 0, expected, WR_BAR_CLUSTER, mode);
}

/* bar.arrive releases the warp's clock when it arrives: what it does after
 * arriving, even before the phase completes, is not ordered before the
 * waiter. */
Test(vc, bar_arrive_releases_its_clock_at_arrival)
{
    ev_st(&T, 1, 1, 0, 0, 0, DATA);
    bar_arrive(1, 0, 0, 1, 64);
    ev_st(&T, 2, 1, 0, 0, 0, DATA + 4);
    ev_barrier(&T, 1, 0, 1, WR_FULL_MASK, 1, 64, WR_BAR_BLOCK);   /* completes */
    ev_ld(&T, 3, 1, 0, 1, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
    ev_ld(&T, 4, 1, 0, 1, 0, DATA + 4);
    cr_assert_eq(hbt_count(&T), 1);
    cr_assert_not_null(hbt_find(&T, 2, 4));
}

/* The arriver does not wait: it learns nothing from the phase. */
Test(vc, bar_arrive_learns_nothing_from_the_waiters)
{
    ev_st(&T, 1, 1, 0, 1, 0, DATA);
    ev_barrier(&T, 1, 0, 1, WR_FULL_MASK, 1, 64, WR_BAR_BLOCK);
    bar_arrive(1, 0, 0, 1, 64);                                   /* completes */
    ev_ld(&T, 2, 1, 0, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
    cr_assert_not_null(hbt_find(&T, 1, 2));
}

/* A warp's WAIT before its phase completed takes the phase when the last
 * arrival comes. */
Test(vc, cluster_wait_before_the_phase_completes)
{
    launch_clusters();
    xbar_mode(1, 0, WR_BARMODE_ARRIVE, 64);
    xbar_mode(1, 0, WR_BARMODE_WAIT, 0);
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    xbar_mode(0, 0, WR_BARMODE_ARRIVE, 64);                      /* completes */
    ev_ld(&T, 2, 2, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
}

/* A relaxed arrival counts toward the phase but releases nothing. */
Test(vc, cluster_relaxed_arrive_releases_nothing)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    xbar_mode(0, 0, WR_BARMODE_ARRIVE_RELAXED, 64);
    xbar_mode(1, 0, WR_BARMODE_ARRIVE, 64);                      /* completes */
    xbar_mode(1, 0, WR_BARMODE_WAIT, 0);
    ev_ld(&T, 2, 2, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
}

/* A WAIT with no arrival before it (a malformed trace) acquires nothing. */
Test(vc, cluster_wait_without_arrival_acquires_nothing)
{
    launch_clusters();
    ev_st(&T, 1, 2, 0, 0, 0, DATA);
    xbar_mode(0, 0, WR_BARMODE_ARRIVE, 64);
    xbar_mode(1, 1, WR_BARMODE_ARRIVE, 64);                      /* completes */
    xbar_mode(1, 0, WR_BARMODE_WAIT, 0);                         /* b1 w0 never arrived */
    ev_ld(&T, 2, 2, 1, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 1);
}

/* A slow warp waits for phase 0 after a fast one waited and arrived at
 * phase 1: it takes phase 0's join, not what the fast one did after it. */
Test(vc, cluster_slow_wait_takes_its_own_phase)
{
    launch_clusters();
    ev_st(&T, 1, 2, 1, 0, 0, DATA);
    xbar_mode(0, 0, WR_BARMODE_ARRIVE, 64);                      /* A, phase 0 */
    xbar_mode(1, 0, WR_BARMODE_ARRIVE, 64);                      /* B: completes phase 0 */
    xbar_mode(1, 0, WR_BARMODE_WAIT, 0);
    ev_st(&T, 2, 2, 1, 0, 0, DATA + 4);
    xbar_mode(1, 0, WR_BARMODE_ARRIVE, 64);                      /* B, phase 1 */
    xbar_mode(0, 0, WR_BARMODE_WAIT, 0);                         /* A: phase 0 */
    ev_ld(&T, 3, 2, 0, 0, 0, DATA);
    cr_assert_eq(hbt_count(&T), 0);
    ev_ld(&T, 4, 2, 0, 0, 0, DATA + 4);
    cr_assert_eq(hbt_count(&T), 1);
    cr_assert_not_null(hbt_find(&T, 2, 4));
}

/* A launch's shared memory dies with it: its shared pages go at its
 * KERNEL_END even when the trace has no block exits (the device API
 * records none), so a program that launches a kernel with shared memory
 * again and again holds about one launch's pages, not all of them.  Its
 * global pages stay. */
Test(vc, a_launchs_shared_pages_go_at_its_end)
{
    hbt t;
    hbt_open(&t, &wr_engine_vc, 0, 1);
    for (uint32_t l = 1; l <= 3; l++) {
        ev_launch(&t, l, 0, 4, 64);
        for (uint32_t b = 0; b < 4; b++)
            ev_acc(&t, 1, l, b, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0, WR_ORDER_WEAK,
                   WR_SPACE_SHARED, WR_ADDR_STRIDED, 0x400, 4);
        ev_acc(&t, 2, l, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
               WR_ADDR_STRIDED, DATA + l * 4096, 4);
        cr_assert_eq(wr_hbe_shadow_pages(t.eng), 4 + l, "launch %u running", l);
        ev_simple(&t, WR_EV_KERNEL_END, l, 0);
        cr_assert_eq(wr_hbe_shadow_pages(t.eng), l, "launch %u ended: its global page stays", l);
    }
    cr_assert_eq(hbt_count(&t), 0);
    hbt_close(&t);
}

/* A word read by many warps at once keeps every read: in its set (three
 * inline), then heap arrays of 8 and 16 from the pools and of 32 and 64
 * from malloc; a write no read is ordered before races with each reader,
 * also with the contexts collected between every two accesses.  Each reader first makes
 * four contexts (a warp keeps its first four listed while it runs), then
 * stores to a word of its own, and after its read stores there again from
 * another site: the first store's context, older than the reads', is then
 * named nowhere, so each collection renumbers the reads' contexts in every
 * set.  Block 0's warp reads twice: its second read supersedes its
 * first. */
Test(vc, many_readers_each_race_with_a_write)
{
    const uint64_t OWN = DATA + 0x10000;
    for (unsigned collect = 0; collect <= 1; collect++) {
        hbt t;
        wr_hbe_collect_every(collect);
        hbt_open(&t, &wr_engine_vc, 0, 1);
        ev_launch(&t, 1, 0, 64, 32);
        const uint32_t readers = 40;
        for (uint32_t b = 0; b < readers; b++) {
            for (uint32_t k = 0; k < 4; k++)
                ev_ld(&t, 500 + k, 1, b, 0, 0, OWN + 0x1000 + 4 * b);
            ev_st(&t, 300 + b, 1, b, 0, 0, OWN + 4 * b);
        }
        ev_ld(&t, 99, 1, 0, 0, 0, DATA);
        for (uint32_t b = 0; b < readers; b++) {
            ev_ld(&t, 100 + b, 1, b, 0, 0, DATA);
            ev_st(&t, 400, 1, b, 0, 0, OWN + 4 * b);
            ev_ld(&t, 200 + b, 1, b, 0, 0, DATA + 4);   /* a second word, one read each */
        }
        ev_st(&t, 5, 1, readers, 0, 0, DATA);
        wr_hbe_collect_every(0);
        cr_assert_eq(hbt_count(&t), readers, "collect %u", collect);
        for (uint32_t b = 0; b < readers; b++)
            cr_assert_not_null(hbt_find(&t, 100 + b, 5), "reader %u, collect %u", b, collect);
        cr_assert_null(hbt_find(&t, 99, 5), "superseded by its warp's later read");
        hbt_close(&t);
    }
}

/* A warp's instruction contexts are found by their site and flags (a
 * listing in the warp, hbcore.c ctx_intern: a signature for sites below
 * 2^24, the context records compared otherwise).  Interleaved stores at
 * small and large sites, each store made twice: every race must name the
 * store's own site, and its side the later of the two stores (the context
 * keeps its latest position). */
Test(vc, contexts_are_told_apart_by_site_large_or_small)
{
    static const uint32_t sites[4] = {3, (1u << 24) + 5, 4, (1u << 24) + 6};
    uint64_t second_store[4];
    for (unsigned round = 0; round < 2; round++)
        for (unsigned i = 0; i < 4; i++) {
            if (round)
                second_store[i] = T.seq;
            ev_st(&T, sites[i], 1, 0, 0, 0, DATA + 4u * i);
        }
    for (unsigned i = 0; i < 4; i++)
        ev_ld(&T, 100 + i, 1, 1, 0, 0, DATA + 4u * i);
    cr_assert_eq(hbt_count(&T), 4);
    for (unsigned i = 0; i < 4; i++) {
        const wr_race *r = hbt_find(&T, sites[i], 100 + i);
        cr_assert_not_null(r, "store at site %u vs its load", sites[i]);
        /* the sides are in canonical order (findings.c): the store's is
         * the one at its site */
        const wr_race_access *st = r->first.site == sites[i] ? &r->first : &r->second;
        cr_assert_eq(st->site, sites[i]);
        cr_assert_eq(st->kind, WR_KIND_WRITE);
        cr_assert_eq(st->seq, second_store[i], "site %u: the store's side at %llu, not the later store",
                     sites[i], (unsigned long long)st->seq);
    }
}

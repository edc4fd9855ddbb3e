/* lockset engine: the ScoR lock cases (seed 001 / scor-microbenchmarks.md),
 * atomics, barrier and kernel-boundary resets. */
#include <criterion/criterion.h>

#include "access_ring.h"
#include "lf_events.h"

extern const wr_engine_ops wr_engine_lockset;

#define DATA 0x20000ull
#define LOCK 0x30000ull
#define L 1u
#define S_DATA 500u   /* site of the data accesses of party A */
#define S_DATA_B 501u /* party B */

static lf_run R;

typedef struct party {
    uint32_t block, warp;
} party;

static const party A0 = {0, 0}, B_BLOCK = {1, 0}, B_WARP = {0, 1};

static void start(void)
{
    lf_start(&R, &wr_engine_lockset, 1);
    lf_feed(&R, lf_launch(L, 0));
}

static void cas(party p, uint8_t scope, int success)
{
    wr_event e = lf_acc(600, L, p.block, p.warp, 1u, WR_OP_ATOMIC_RMW, scope, LOCK, 0);
    e.u.access.atomic_op = WR_AOP_CAS;
    e.u.access.cas_success = success ? 1u : 0u;
    lf_feed(&R, e);
}

static void exch(party p, uint8_t scope)
{
    wr_event e = lf_acc(601, L, p.block, p.warp, 1u, WR_OP_ATOMIC_RMW, scope, LOCK, 0);
    e.u.access.atomic_op = WR_AOP_EXCH;
    lf_feed(&R, e);
}

static void fence(party p, uint8_t scope)
{
    lf_feed(&R, lf_fence(L, p.block, p.warp, 1u, scope));
}

/* lock(s) with an acquire fence of scope fs (0 = missing) */
static void lock_(party p, uint8_t s, uint8_t fs)
{
    cas(p, s, 1);
    if (fs)
        fence(p, fs);
}

/* unlock(s) with a release fence of scope fs (0 = missing) */
static void unlock_(party p, uint8_t s, uint8_t fs)
{
    if (fs)
        fence(p, fs);
    exch(p, s);
}

static void store(party p, uint32_t site)
{
    lf_feed(&R, lf_acc(site, L, p.block, p.warp, 1u, WR_OP_STORE, 0, DATA, 0));
}

static void load(party p, uint32_t site)
{
    lf_feed(&R, lf_acc(site, L, p.block, p.warp, 1u, WR_OP_LOAD, 0, DATA, 0));
}

/* Both parties: lock; store data; unlock, with the given scopes. */
static void waw(party a, uint8_t as, uint8_t a_acq, uint8_t a_rel, party b, uint8_t bs,
                uint8_t b_acq, uint8_t b_rel)
{
    start();
    lock_(a, as, a_acq);
    store(a, S_DATA);
    cas(b, bs, 0);   /* B spins while A holds the lock */
    unlock_(a, as, a_rel);
    lock_(b, bs, b_acq);
    store(b, S_DATA_B);
    unlock_(b, bs, b_rel);
}

static int data_race(wr_findings *f)
{
    const wr_race_group *g;
    size_t n = lf_groups(f, &g);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(g[i].example.potential, 1, "lockset warnings are potential");
        uint32_t s1 = g[i].example.first.site, s2 = g[i].example.second.site;
        if ((s1 == S_DATA || s1 == S_DATA_B) && (s2 == S_DATA || s2 == S_DATA_B))
            found++;
    }
    return found;
}

#define D WR_SCOPE_DEVICE
#define B WR_SCOPE_BLOCK

Test(lockset, norace_interblock_lock_waw)
{
    waw(A0, D, D, D, B_BLOCK, D, D, D);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(lockset, norace_interwarp_blklock_waw)
{
    waw(A0, B, B, B, B_WARP, B, B, B);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(lockset, norace_interwarp_dev_blklock_waw)
{
    waw(A0, D, D, D, B_WARP, B, B, B);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(lockset, race_interblock_blklock_waw)
{
    waw(A0, B, B, B, B_BLOCK, B, B, B);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1, "a block-scoped lock does not exclude another block");
    cr_assert_eq(lf_total(f), 1, "the lock word itself (CAS target) is not data");
    wr_findings_free(f);
}

Test(lockset, race_interblock_lock_blkfence_waw)
{
    waw(A0, D, B, D, B_BLOCK, D, D, D);   /* A's acquire fence is block scope */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interblock_lock_blk_release_fence_waw)
{
    waw(A0, D, D, B, B_BLOCK, D, D, D);   /* A's release fence is block scope */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interblock_lock_no_stf_waw)
{
    waw(A0, D, 0, D, B_BLOCK, D, D, D);   /* A misses its acquire fence */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interblock_lock_no_tf_waw)
{
    waw(A0, D, D, 0, B_BLOCK, D, D, 0);   /* both miss the release fence */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interwarp_blklock_no_stf_and_no_tf)
{
    waw(A0, B, 0, B, B_WARP, B, B, B);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    cr_assert_eq(lf_total(f), 1);
    wr_findings_free(f);
    waw(A0, D, D, 0, B_WARP, B, B, 0);     /* dev-blklock-no-tf */
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interblock_none_lock_waw)
{
    start();
    lock_(A0, D, D);
    store(A0, S_DATA);
    unlock_(A0, D, D);
    store(B_BLOCK, S_DATA_B);   /* no lock */
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    const wr_race_group *g;
    lf_groups(f, &g);
    cr_assert_eq(g[0].example.race_class, WR_CLASS_INTER_BLOCK);
    wr_findings_free(f);
    /* the other order: the unlocked store first */
    start();
    store(B_BLOCK, S_DATA_B);
    lock_(A0, D, D);
    store(A0, S_DATA);
    unlock_(A0, D, D);
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, race_interblock_none_lock_rtraw)
{
    start();
    lock_(A0, D, D);
    load(A0, S_DATA);
    unlock_(A0, D, D);
    store(A0, S_DATA);          /* outside the lock */
    lock_(B_BLOCK, D, D);
    load(B_BLOCK, S_DATA_B);
    unlock_(B_BLOCK, D, D);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, norace_intrawarp_blklock_no_tf)
{
    start();
    lock_(A0, B, B);
    store(A0, S_DATA);
    unlock_(A0, B, 0);
    store(A0, S_DATA);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0, "program order of one thread");
    wr_findings_free(f);
}

Test(lockset, atomics)
{
    start();   /* device atomics from two blocks: never a data race */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, D, DATA, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_ATOMIC_RMW, D, DATA, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
    start();   /* block atomics from two blocks */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, B, DATA, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_ATOMIC_RMW, B, DATA, 0));
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
    start();   /* block atomics from two warps of one block */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, B, DATA, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 0, 1, 1u, WR_OP_ATOMIC_RMW, B, DATA, 0));
    f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
    start();   /* atomic vs plain */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, D, DATA, 0));
    store(B_BLOCK, S_DATA_B);
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

/* A plain store, the same thread's atomic, then another block's atomic: the
 * atomics share the implicit atomic lock, so the report names the store. */
Test(lockset, report_names_the_plain_write_an_atomic_conflicts_with)
{
    start();
    store(A0, S_DATA);
    lf_feed(&R, lf_acc(502, L, 0, 0, 1u, WR_OP_ATOMIC_RMW, D, DATA, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_ATOMIC_RMW, D, DATA, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 1);
    cr_assert_eq(g[0].example.first.site, S_DATA);
    cr_assert_eq(g[0].example.first.kind, WR_KIND_WRITE);
    cr_assert_eq(g[0].example.second.site, S_DATA_B);
    cr_assert_eq(g[0].example.second.kind, WR_KIND_ATOMIC);
    wr_findings_free(f);
}

Test(lockset, barrier_resets_block_local_words)
{
    start();
    store(A0, S_DATA);
    lf_feed(&R, lf_barrier(L, 0, 0, 64));
    lf_feed(&R, lf_barrier(L, 0, 1, 64));
    store(B_WARP, S_DATA_B);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
    start();   /* no barrier */
    store(A0, S_DATA);
    store(B_WARP, S_DATA_B);
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    const wr_race_group *g;
    lf_groups(f, &g);
    cr_assert_eq(g[0].example.race_class, WR_CLASS_INTER_WARP);
    wr_findings_free(f);
    start();   /* a barrier does not order another block */
    store(A0, S_DATA);
    lf_feed(&R, lf_barrier(L, 0, 0, 64));
    lf_feed(&R, lf_barrier(L, 0, 1, 64));
    store(B_BLOCK, S_DATA_B);
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    wr_findings_free(f);
}

Test(lockset, kernel_boundary_resets)
{
    lf_start(&R, &wr_engine_lockset, 1);
    lf_feed(&R, lf_launch(1, 0));
    lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    lf_feed(&R, lf_launch(2, 0));
    lf_feed(&R, lf_acc(S_DATA_B, 2, 1, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
    lf_start(&R, &wr_engine_lockset, 1);   /* two streams, no event */
    lf_feed(&R, lf_launch(1, 1));
    lf_feed(&R, lf_launch(2, 2));
    lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    lf_feed(&R, lf_acc(S_DATA_B, 2, 1, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    f = lf_end(&R);
    cr_assert_eq(data_race(f), 1);
    const wr_race_group *g;
    lf_groups(f, &g);
    cr_assert_eq(g[0].example.race_class, WR_CLASS_INTER_KERNEL);
    wr_findings_free(f);
}

Test(lockset, shards_give_same_findings)
{
    uint64_t tot[2];
    for (unsigned k = 0; k < 2; k++) {
        lf_start(&R, &wr_engine_lockset, k ? 3 : 1);
        lf_feed(&R, lf_launch(L, 0));
        for (uint32_t b = 0; b < 3; b++)
            lf_feed(&R, lf_acc(700, L, b, 0, WR_FULL_MASK, WR_OP_STORE, 0, DATA + 64 * b, 4));
        wr_findings *f = lf_end(&R);
        tot[k] = lf_total(f);
        wr_findings_free(f);
    }
    cr_assert_gt(tot[0], 0);
    cr_assert_eq(tot[0], tot[1]);
}

/* The 16-byte cell keeps who touched a word, not when: the report finds the
 * first access's trace position in that warp's ring of recent accesses,
 * and says 0 (unknown) once the ring has moved on. */
Test(lockset, report_names_the_first_access_position)
{
    lf_start(&R, &wr_engine_lockset, 1);
    lf_feed(&R, lf_launch(L, 0));                                          /* seq 0 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_STORE, 0, DATA, 0));     /* seq 1 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_LOAD, 0, DATA + 64, 0)); /* seq 2, elsewhere */
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_STORE, 0, DATA, 0));   /* seq 3: races with 1 */
    /* a second word: its first access pushed out of block 0 warp 0's ring */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_STORE, 0, DATA + 128, 0)); /* seq 4 */
    for (unsigned i = 0; i < 12; i++)
        lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_LOAD, 0, DATA + 256 + 4 * i, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_STORE, 0, DATA + 128, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    size_t n = lf_groups(f, &g);
    cr_assert_eq(n, 1, "one site pair");
    cr_assert_eq(g[0].count, 2);
    cr_assert_eq(g[0].example.first.seq, 1, "the earliest example's first access is seq 1, got %llu",
                 (unsigned long long)g[0].example.first.seq);
    cr_assert_eq(g[0].example.second.seq, 3);
    wr_findings_free(f);
}

/* The first WR_ACCESS_RING_INLINE slots of a warp's ring live in the warp,
 * the others in a pooled block taken when the ring reaches them: an access
 * in a pooled slot, and one that is exactly WR_ACCESS_RING accesses back
 * after the ring wrapped, are still found; one further back is found by
 * its instruction among the older ones, until WR_RING_OLDER newer
 * instructions pushed it out.  `after` loads at sites after_site,
 * after_site + after_step, ... follow the first side. */
static uint64_t first_seq_after_exit_sites(unsigned before, unsigned after, bool exit_first,
                                           uint32_t after_site, uint32_t after_step)
{
    lf_start(&R, &wr_engine_lockset, 1);
    lf_feed(&R, lf_launch(L, 0));                                          /* seq 0 */
    uint64_t seq = 1;
    for (unsigned i = 0; i < before; i++, seq++)
        lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_LOAD, 0, DATA + 256 + 4 * i, 0));
    uint64_t first = seq++;
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    for (unsigned i = 0; i < after; i++)
        lf_feed(&R, lf_acc(after_site + i * after_step, L, 0, 0, 1u, WR_OP_LOAD, 0, DATA + 512 + 4 * i, 0));
    if (exit_first)   /* block 0 is retired: its accesses stay findable */
        lf_feed(&R, lf_block_exit(L, 0));
    lf_feed(&R, lf_acc(S_DATA_B, L, 1, 0, 1u, WR_OP_STORE, 0, DATA, 0));
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 1);
    uint64_t got = g[0].example.first.seq;
    wr_findings_free(f);
    return got == first ? first : got ? UINT64_MAX : 0;
}

static uint64_t first_seq_after_exit(unsigned before, unsigned after, bool exit_first)
{
    return first_seq_after_exit_sites(before, after, exit_first, S_DATA, 0);
}

Test(lockset, report_finds_the_first_access_in_a_grown_ring)
{
    for (int exit_first = 0; exit_first < 2; exit_first++) {
        cr_assert_eq(first_seq_after_exit(0, 0, exit_first), 1, "inline slot (exit %d)", exit_first);
        cr_assert_eq(first_seq_after_exit(4, 0, exit_first), 5, "pooled slot (exit %d)", exit_first);
        cr_assert_eq(first_seq_after_exit(9, 7, exit_first), 10, "8 accesses back, after a wrap (exit %d)",
                     exit_first);
        cr_assert_eq(first_seq_after_exit(9, 8, exit_first), 10,
                     "9 accesses back: its instruction's newest access (exit %d)", exit_first);
        cr_assert_eq(first_seq_after_exit(9, 40, exit_first), 10,
                     "41 back, a loop of one load since (exit %d)", exit_first);
        cr_assert_eq(first_seq_after_exit_sites(9, 8 + WR_RING_OLDER - 1, exit_first, 900, 1), 10,
                     "WR_RING_OLDER - 1 other instructions folded since (exit %d)", exit_first);
        cr_assert_eq(first_seq_after_exit_sites(9, 8 + WR_RING_OLDER, exit_first, 900, 1), 0,
                     "WR_RING_OLDER other instructions folded since: gone, said as unknown (exit %d)",
                     exit_first);
        cr_assert_eq(first_seq_after_exit(1, 7, exit_first), 2, "8 back in a ring that wrapped once (exit %d)",
                     exit_first);
    }
}

static uint64_t tracked_words(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < R.shards; i++)
        n += R.ops->shadow_words(R.eng[i]);
    return n;
}

/* shadow_words is a running count: new words, lock words, and the words a
 * later, ordered launch sweeps away; the same for any number of shards. */
Test(lockset, counts_tracked_words)
{
    for (unsigned shards = 1; shards <= 3; shards += 2) {
        lf_start(&R, &wr_engine_lockset, shards);
        lf_feed(&R, lf_launch(1, 0));
        lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 32, "%u shards", shards);
        lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, WR_FULL_MASK, WR_OP_LOAD, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 32, "touched again: no new word");
        /* a page boundary inside one access: words of two pages */
        lf_feed(&R, lf_acc(S_DATA, 1, 0, 1, WR_FULL_MASK, WR_OP_STORE, 0, DATA + 4096 - 64, 4));
        cr_assert_eq(tracked_words(), 64);
        cas(A0, WR_SCOPE_DEVICE, 1);
        cr_assert_eq(tracked_words(), 65, "the lock word");
        /* launch 2 follows launch 1 in stream 0, but the host has not seen
         * launch 1 end: a launch issued later on another stream could still
         * meet its words, so touching DATA's page keeps them */
        lf_feed(&R, lf_launch(2, 0));
        lf_feed(&R, lf_acc(S_DATA, 2, 0, 0, 1u, WR_OP_STORE, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 65, "%u shards: launch 1 is not settled", shards);
        /* once the host saw both end, launch 3 touching DATA's page sweeps
         * the words of launches 1 and 2 there */
        lf_feed(&R, lf_kernel_end(1));
        lf_feed(&R, lf_kernel_end(2));
        lf_feed(&R, lf_launch(3, 0));
        lf_feed(&R, lf_acc(S_DATA, 3, 0, 0, 1u, WR_OP_STORE, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 65 - 32 - 16 + 1, "%u shards", shards);
        wr_findings_free(lf_end(&R));
    }
}

/* A race between two lanes of one instruction names that instruction as
 * its first side (the ring does not offer the current access); one whose
 * stored access is an older one of the same site, kept or of a later lane,
 * names the older one. */
Test(lockset, first_side_of_a_race_inside_one_instruction)
{
    start();                                                             /* seq 0 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, DATA, 0));   /* seq 1 */
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 1);
    cr_assert_eq(g[0].example.first.seq, 1, "lane 0 of this store, not an unknown access");
    cr_assert_eq(g[0].example.first.lane, 0);
    cr_assert_eq(g[0].example.second.seq, 1);
    cr_assert_eq(g[0].example.second.lane, 1);
    wr_findings_free(f);

    /* lane 5 stores the word, then one store of the same site has lanes 3
     * and 5 on it: lane 3 meets lane 5's older store */
    start();                                                                     /* seq 0 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u << 5, WR_OP_STORE, 0, DATA, 0));       /* seq 1 */
    static uint64_t lanes[32];
    lanes[3] = lanes[5] = DATA;
    wr_event e = lf_acc(S_DATA, L, 0, 0, (1u << 3) | (1u << 5), WR_OP_STORE, 0, 0, 4);
    e.u.access.addr_mode = WR_ADDR_VECTOR;
    e.u.access.lane_addr = lanes;
    lf_feed(&R, e);                                                              /* seq 2 */
    f = lf_end(&R);
    cr_assert_eq(lf_groups(f, &g), 1);
    cr_assert_eq(g[0].example.first.lane, 5);
    cr_assert_eq(g[0].example.first.seq, 1, "lane 5's own older store, not this one");
    cr_assert_eq(g[0].example.second.lane, 3);
    wr_findings_free(f);

    /* a read after a write keeps the write in the cell: lanes 0 and 1 read
     * what lane 0 wrote at the same site (a line like a[i] = a[i] + 1) */
    start();                                                                     /* seq 0 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 1u, WR_OP_STORE, 0, DATA, 0));            /* seq 1 */
    lf_feed(&R, lf_acc(S_DATA, L, 0, 0, 3u, WR_OP_LOAD, 0, DATA, 0));             /* seq 2 */
    f = lf_end(&R);
    cr_assert_eq(lf_groups(f, &g), 1);
    /* same site: the pair is canonical by kind, the read first */
    cr_assert_eq(g[0].example.first.kind, WR_KIND_READ);
    cr_assert_eq(g[0].example.first.lane, 1);
    cr_assert_eq(g[0].example.second.kind, WR_KIND_WRITE);
    cr_assert_eq(g[0].example.second.seq, 1, "the kept store, found in the ring");
    wr_findings_free(f);
}

/* A word a CAS named stays a lock word after its launch is settled: a
 * later launch touching its page (which sweeps the settled launch's words)
 * does not make it data again. */
Test(lockset, lock_word_outlives_its_launch)
{
    lf_start(&R, &wr_engine_lockset, 1);
    lf_feed(&R, lf_launch(1, 1));
    wr_event e = lf_acc(600, 1, 0, 0, 1u, WR_OP_ATOMIC_RMW, WR_SCOPE_DEVICE, LOCK, 0);
    e.u.access.atomic_op = WR_AOP_CAS;
    lf_feed(&R, e);
    lf_feed(&R, lf_kernel_end(1));
    lf_feed(&R, lf_launch(2, 1));
    lf_feed(&R, lf_acc(S_DATA, 2, 0, 0, 1u, WR_OP_STORE, 0, LOCK, 0));
    lf_feed(&R, lf_acc(S_DATA_B, 2, 1, 0, 1u, WR_OP_STORE, 0, LOCK, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0, "lock words are never warned on");
    wr_findings_free(f);
}

/* ---- split barriers (format 1.3) ---- */

#define FULL 1u
#define EMPTY 2u
#define BUF 0x200ull   /* a shared buffer word */
#define XG 0x40000ull  /* a global word */
enum { PROD = 0, CONS = 1 };

static void feed_bar(uint32_t block, uint32_t warp, uint32_t id, uint32_t expected, uint8_t scope,
                     uint8_t mode)
{
    lf_feed(&R, lf_barrier_mode(L, block, warp, id, expected, scope, mode));
}

static void buf_access(uint32_t warp, uint8_t op, uint32_t site, uint64_t at)
{
    wr_event e = lf_acc(site, L, 0, warp, WR_FULL_MASK, op, 0, at, 4);
    e.u.access.space = WR_SPACE_SHARED;
    lf_feed(&R, e);
}

static size_t groups(wr_findings *f)
{
    const wr_race_group *g;
    return lf_groups(f, &g);
}

static void p_arrive(uint32_t id) { feed_bar(0, PROD, id, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE); }
static void p_sync(uint32_t id) { feed_bar(0, PROD, id, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC); }
static void c_arrive(uint32_t id) { feed_bar(0, CONS, id, 64, WR_BAR_BLOCK, WR_BARMODE_ARRIVE); }
static void c_sync(uint32_t id) { feed_bar(0, CONS, id, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC); }
static void p_write(int stage) { buf_access(PROD, WR_OP_STORE, 800, BUF + 128 * (uint64_t)stage); }
static void c_read(int stage) { buf_access(CONS, WR_OP_LOAD, 801, BUF + 128 * (uint64_t)stage); }

/* A warp-specialised pipeline on named barriers, three rounds:
 *   producer: [bar.sync EMPTY;] write buf; bar.arrive FULL
 *   consumer: bar.sync FULL; read buf; bar.arrive EMPTY
 * `bug`: the producer never waits for EMPTY.  `order` 0: the warps take
 * turns; 1: the consumer waits first, the producer runs ahead. */
static void pipeline(bool bug, int order)
{
    start();
    for (int i = 0; i < 3; i++) {
        if (order == 0) {
            if (i && !bug)
                p_sync(EMPTY);
            p_write(0);
            p_arrive(FULL);
            c_sync(FULL);
            c_read(0);
            c_arrive(EMPTY);
        } else {
            c_sync(FULL);
            if (i && !bug)
                p_sync(EMPTY);
            p_write(0);
            p_arrive(FULL);
            if (bug)
                p_write(0);   /* the next round's write, before the read */
            c_read(0);
            c_arrive(EMPTY);
        }
    }
}

Test(lockset, split_producer_consumer_no_warning)
{
    for (int order = 0; order < 2; order++) {
        pipeline(false, order);
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "order %d", order);
        wr_findings_free(f);
    }
}

Test(lockset, split_producer_overwrite_without_empty_wait_warns)
{
    for (int order = 0; order < 2; order++) {
        pipeline(true, order);
        wr_findings *f = lf_end(&R);
        const wr_race_group *g;
        cr_assert_eq(lf_groups(f, &g), 1, "order %d", order);
        cr_assert_eq(g[0].example.potential, 1);
        cr_assert_eq(g[0].example.race_class, WR_CLASS_INTER_WARP);
        uint32_t s1 = g[0].example.first.site, s2 = g[0].example.second.site;
        cr_assert((s1 == 800 && s2 == 801) || (s1 == 801 && s2 == 800), "sites %u %u", s1, s2);
        wr_findings_free(f);
    }
}

/* Two stages (FULL0/EMPTY0 = 1/2 for buffer 0, FULL1/EMPTY1 = 3/4 for
 * buffer 1): the producer writes buffer 1 while its arrival at FULL0 is
 * still pending, and buffer 0 again while FULL1's is. */
Test(lockset, split_two_stage_pipeline_no_warning)
{
    start();
    p_write(0);
    p_arrive(1);
    p_write(1);
    p_arrive(3);
    c_sync(1);
    c_read(0);
    c_arrive(2);
    p_sync(2);
    p_write(0);
    p_arrive(1);
    c_sync(3);
    c_read(1);
    c_arrive(4);
    c_sync(1);
    c_read(0);
    c_arrive(2);
    p_sync(4);
    p_write(1);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* The arriver's access after its arrival, and an access of a warp that
 * only arrived (it waited for nothing since), are not ordered by the
 * phase. */
Test(lockset, split_arrivers_later_accesses_warn)
{
    start();
    p_arrive(FULL);
    p_write(0);
    c_sync(FULL);
    c_read(0);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(groups(f), 1);
    wr_findings_free(f);
    start();   /* the consumer reads, then waits; the producer arrives, then writes */
    c_read(0);
    p_arrive(FULL);
    c_sync(FULL);
    p_write(0);
    f = lf_end(&R);
    cr_assert_eq(groups(f), 1);
    wr_findings_free(f);
}

/* Warp D's write before its arrival is ordered before warp A's read after
 * the phase of A (waiting), P (arriving) and D (waiting), 96 threads; P
 * acting again in between does not complete it (were it completed then,
 * D's write would come after the barrier interval A waited for). */
Test(lockset, split_arriver_acting_again_does_not_complete_the_phase)
{
    for (int acts = 0; acts < 2; acts++) {
        start();
        feed_bar(0, 0, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_SYNC);
        feed_bar(0, 1, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_ARRIVE);
        if (acts)
            lf_feed(&R, lf_acc(810, L, 0, 1, WR_FULL_MASK, WR_OP_STORE, 0, DATA + 512, 4));
        lf_feed(&R, lf_acc(811, L, 0, 2, 1u, WR_OP_STORE, 0, DATA, 0));
        feed_bar(0, 2, FULL, 96, WR_BAR_BLOCK, WR_BARMODE_SYNC);
        lf_feed(&R, lf_acc(812, L, 0, 0, 1u, WR_OP_LOAD, 0, DATA, 0));
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "acts %d", acts);
        wr_findings_free(f);
    }
}

/* ---- cluster barriers split into arrive and wait ---- */

static void start_cluster(void)
{
    lf_start(&R, &wr_engine_lockset, 1);
    wr_event l = lf_launch(L, 0);
    l.u.launch.cluster[0] = 2;   /* blocks 0 and 1 of one cluster; 64 threads each */
    lf_feed(&R, l);
}

static void cbar(uint32_t block, uint32_t warp, uint8_t mode)
{
    feed_bar(block, warp, 0, 128, WR_BAR_CLUSTER, mode);
}

/* Block 0 writes XG and XG + 4, its warps arrive (`mode0`); block 1's
 * warps arrive, its warp 0 waits (`wait_before`: before its block's share
 * completes) and reads XG; its warp 1 reads XG + 4, having waited or not. */
static void cluster_handoff(uint8_t mode0, bool wait_before, bool w1_waits)
{
    start_cluster();
    lf_feed(&R, lf_acc(820, L, 0, 0, 3u, WR_OP_STORE, 0, XG, 4));
    cbar(0, 0, mode0);
    cbar(0, 1, mode0);
    cbar(1, 0, WR_BARMODE_ARRIVE);
    if (wait_before)
        cbar(1, 0, WR_BARMODE_WAIT);
    cbar(1, 1, WR_BARMODE_ARRIVE);
    if (!wait_before)
        cbar(1, 0, WR_BARMODE_WAIT);
    if (w1_waits)
        cbar(1, 1, WR_BARMODE_WAIT);
    lf_feed(&R, lf_acc(821, L, 1, 0, 1u, WR_OP_LOAD, 0, XG, 0));
    lf_feed(&R, lf_acc(822, L, 1, 1, 1u, WR_OP_LOAD, 0, XG + 4, 0));
}

Test(lockset, split_cluster_arrive_wait_handoff_no_warning)
{
    for (int wb = 0; wb < 2; wb++) {
        cluster_handoff(WR_BARMODE_ARRIVE, wb, true);
        wr_findings *f = lf_end(&R);
        cr_assert_eq(lf_total(f), 0, "wait before completion %d", wb);
        wr_findings_free(f);
    }
    cluster_handoff(WR_BARMODE_SYNC, false, true);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

Test(lockset, split_cluster_warp_that_only_arrived_warns)
{
    cluster_handoff(WR_BARMODE_ARRIVE, false, false);
    wr_findings *f = lf_end(&R);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 1);
    cr_assert_eq(g[0].example.race_class, WR_CLASS_INTER_BLOCK);
    cr_assert_eq(g[0].example.second.site, 822);
    wr_findings_free(f);
}

Test(lockset, split_cluster_relaxed_arrive_does_not_order_handoff)
{
    cluster_handoff(WR_BARMODE_ARRIVE_RELAXED, false, true);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 2, "both reads");
    wr_findings_free(f);
}

/* In the block: warp 1 arrives last (the share completes with no waiter)
 * and waits after: its WAIT takes the completion then; with no WAIT it
 * only arrived, and its read of warp 0's earlier write warns.  A relaxed
 * phase orders nothing in the block either. */
Test(lockset, split_cluster_wait_after_completion)
{
    for (int k = 0; k < 3; k++) {
        start_cluster();
        buf_access(0, WR_OP_STORE, 830, BUF);
        uint8_t mode = k == 2 ? WR_BARMODE_ARRIVE_RELAXED : WR_BARMODE_ARRIVE;
        cbar(0, 0, mode);
        cbar(0, 1, mode);   /* the share completes */
        if (k)
            cbar(0, 1, WR_BARMODE_WAIT);
        buf_access(1, WR_OP_LOAD, 831, BUF);
        wr_findings *f = lf_end(&R);
        cr_assert_eq(groups(f), k == 1 ? 0 : 1, "case %d", k);
        wr_findings_free(f);
    }
}

/* Block 0's warp 0 writes XG after its arrival (and before its block's
 * share completes): the phase did not release that write. */
Test(lockset, split_cluster_write_after_arrive_warns)
{
    start_cluster();
    cbar(0, 0, WR_BARMODE_ARRIVE);
    lf_feed(&R, lf_acc(840, L, 0, 0, 1u, WR_OP_STORE, 0, XG, 0));
    cbar(0, 1, WR_BARMODE_ARRIVE);
    cbar(1, 0, WR_BARMODE_SYNC);
    cbar(1, 1, WR_BARMODE_SYNC);
    lf_feed(&R, lf_acc(841, L, 1, 0, 1u, WR_OP_LOAD, 0, XG, 0));
    wr_findings *f = lf_end(&R);
    cr_assert_eq(groups(f), 1);
    wr_findings_free(f);
}

/* CUTLASS's prologue: every warp arrives relaxed at the cluster barrier
 * first thing (the peer blocks have started once it is waited for), the
 * block's warps write shared memory meanwhile and meet at __syncthreads;
 * the relaxed phase orders nothing, the block barrier orders the write
 * before the other warp's read. */
Test(lockset, split_cluster_relaxed_prologue_then_block_barrier_no_race)
{
    start_cluster();
    cbar(0, 0, WR_BARMODE_ARRIVE_RELAXED);
    buf_access(0, WR_OP_STORE, 850, BUF);
    cbar(0, 1, WR_BARMODE_ARRIVE_RELAXED);
    cbar(1, 0, WR_BARMODE_ARRIVE_RELAXED);
    cbar(1, 1, WR_BARMODE_ARRIVE_RELAXED);
    feed_bar(0, 0, 0, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    feed_bar(0, 1, 0, 64, WR_BAR_BLOCK, WR_BARMODE_SYNC);
    buf_access(1, WR_OP_LOAD, 851, BUF);
    cbar(0, 0, WR_BARMODE_WAIT);
    cbar(0, 1, WR_BARMODE_WAIT);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(lf_total(f), 0);
    wr_findings_free(f);
}

/* A relaxed phase releases nothing, also to a warp that waited for it
 * before it completed (its WAIT under way). */
Test(lockset, split_cluster_relaxed_phase_orders_nothing_for_its_waiters)
{
    start_cluster();
    buf_access(0, WR_OP_STORE, 860, BUF);
    cbar(0, 1, WR_BARMODE_ARRIVE_RELAXED);
    cbar(0, 1, WR_BARMODE_WAIT);
    cbar(0, 0, WR_BARMODE_ARRIVE_RELAXED);   /* the share completes: warp 1 waited */
    buf_access(1, WR_OP_LOAD, 861, BUF);
    wr_findings *f = lf_end(&R);
    cr_assert_eq(groups(f), 1);
    wr_findings_free(f);
}

/* A block's shared words go at its exit, another block's stay until its
 * own; the global words stay tracked.  The two blocks' tiles lie at the
 * same offsets, pages apart (one at 0x400, one past a page at 0x1400). */
Test(lockset, a_blocks_shared_words_go_at_its_exit)
{
    for (unsigned shards = 1; shards <= 3; shards += 2) {
        lf_start(&R, &wr_engine_lockset, shards);
        lf_feed(&R, lf_launch(1, 0));
        for (uint32_t b = 0; b < 2; b++)
            for (uint64_t at = 0x400; at <= 0x1400; at += 0x1000) {
                wr_event e = lf_acc(S_DATA, 1, b, 0, WR_FULL_MASK, WR_OP_STORE, 0, at, 4);
                e.u.access.space = WR_SPACE_SHARED;
                lf_feed(&R, e);
            }
        lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 160, "%u shards", shards);
        lf_feed(&R, lf_block_exit(1, 0));
        cr_assert_eq(tracked_words(), 96, "%u shards: block 0's tile went", shards);
        lf_feed(&R, lf_block_exit(1, 1));
        cr_assert_eq(tracked_words(), 32, "%u shards: the global words stay", shards);
        lf_feed(&R, lf_kernel_end(1));
        cr_assert_eq(tracked_words(), 32, "%u shards", shards);
        wr_findings_free(lf_end(&R));
    }
}

/* A launch's shared words go at its KERNEL_END (no later access can name
 * them), block exits or not; its global words stay tracked. */
Test(lockset, a_launchs_shared_words_go_at_its_end)
{
    for (unsigned shards = 1; shards <= 3; shards += 2) {
        lf_start(&R, &wr_engine_lockset, shards);
        lf_feed(&R, lf_launch(1, 0));
        for (uint32_t b = 0; b < 2; b++) {
            wr_event e = lf_acc(S_DATA, 1, b, 0, WR_FULL_MASK, WR_OP_STORE, 0, 0x400, 4);
            e.u.access.space = WR_SPACE_SHARED;
            lf_feed(&R, e);
        }
        lf_feed(&R, lf_acc(S_DATA, 1, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, DATA, 4));
        cr_assert_eq(tracked_words(), 96, "%u shards", shards);
        lf_feed(&R, lf_kernel_end(1));
        cr_assert_eq(tracked_words(), 32, "%u shards: the global words stay", shards);
        wr_findings_free(lf_end(&R));
    }
}

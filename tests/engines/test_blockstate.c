/* blockstate: fsm's and lockset's block and warp objects, found through
 * the recent slots or the table, and dropped by purges (one by one, or all
 * at once with the pools). */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "blockstate.h"
#include "lf_events.h"

typedef struct test_block {
    wr_block_head head;
    uint64_t mark;
} test_block;

typedef struct test_warp {
    uint64_t mark;
    wr_access_ring ring;
} test_warp;

static uint32_t feed(wr_epochs *e, wr_event ev) { return wr_epochs_on_event(e, &ev); }

static void locate(wr_blockstate *s, wr_epochs *ep, uint32_t launch, uint32_t block, uint32_t warp,
                   uint32_t *epoch, test_block **b, test_warp **w)
{
    void *bv, *wv;
    wr_blockstate_locate(s, ep, launch, block, warp, epoch, &bv, &wv);
    *b = bv;
    *w = wv;
}

/* Every (block, warp) of 3 launches gets its own objects, found again
 * however the recent slots are shared: 20 blocks of 12 warps put several
 * pairs on every slot. */
Test(blockstate, locate_finds_each_warps_own_objects)
{
    wr_epochs *ep = wr_epochs_new();
    wr_blockstate s;
    wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
    uint32_t epochs[4];
    for (uint32_t l = 1; l <= 3; l++)
        epochs[l] = feed(ep, lf_launch(l, l));
    for (int round = 0; round < 2; round++)
        for (uint32_t l = 1; l <= 3; l++)
            for (uint32_t b = 0; b < 20; b++)
                for (uint32_t w = 0; w < 12; w++) {
                    uint32_t e;
                    test_block *tb;
                    test_warp *tw;
                    locate(&s, ep, l, b, w, &e, &tb, &tw);
                    cr_assert_eq(e, epochs[l]);
                    cr_assert_eq(tb->head.epoch, epochs[l]);
                    cr_assert_eq(tb->head.block, b);
                    cr_assert_eq(wr_blockstate_warp_if(&tb->head, w), tw);
                    uint64_t mark = (uint64_t)l << 40 | (uint64_t)b << 20 | w;
                    if (!round) {
                        cr_assert_eq(tw->mark, 0, "new objects are zeroed");
                        tw->mark = mark;
                        tb->mark = l * 1000 + b;
                    } else {
                        cr_assert_eq(tw->mark, mark, "launch %u block %u warp %u", l, b, w);
                        cr_assert_eq(tb->mark, l * 1000 + b);
                    }
                }
    cr_assert_eq(s.tab.count, 60);
    cr_assert_eq(wr_blockstate_block(&s, epochs[2], 7, false)->block, 7);
    cr_assert_null(wr_blockstate_block(&s, epochs[2], 20, false));
    cr_assert_null(wr_blockstate_warp_if(wr_blockstate_block(&s, epochs[1], 0, false), 12));
    wr_blockstate_free(&s, NULL, NULL);
    wr_epochs_free(ep);
}

typedef struct drops {
    wr_blockstate *s;
    unsigned blocks, warps;
    uint32_t kept_epoch;
    bool wrong;
} drops;

static void count_warp(void *w, void *ctx)
{
    (void)w;
    ((drops *)ctx)->warps++;
}

static void count_block(wr_block_head *b, void *ctx)
{
    drops *d = ctx;
    d->blocks++;
    d->wrong |= b->epoch == d->kept_epoch;
    wr_blockstate_drop(d->s, b, count_warp, d);
}

static void two_warps_each(wr_blockstate *s, wr_epochs *ep, uint32_t launch, uint32_t blocks)
{
    for (uint32_t b = 0; b < blocks; b++)
        for (uint32_t w = 0; w < 2; w++) {
            uint32_t e;
            test_block *tb;
            test_warp *tw;
            locate(s, ep, launch, b, w, &e, &tb, &tw);
            tw->mark = 1;
        }
}

/* Launch 1 ended and the host waited: at launch 2 it goes, all at once
 * when the caller allows (no callback), one block at a time otherwise.
 * Launch 3 then runs beside an ended, not settled launch 2: only launch
 * 2's blocks stay out of a purge at launch 4, and what is dropped comes
 * back new, never from a stale recent slot. */
static void purges(bool all_pooled)
{
    wr_epochs *ep = wr_epochs_new();
    wr_blockstate s;
    wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
    drops d = {.s = &s, .kept_epoch = UINT32_MAX};
    uint32_t e1 = feed(ep, lf_launch(1, 0));
    two_warps_each(&s, ep, 1, 300);
    feed(ep, lf_kernel_end(1));
    uint32_t e2 = feed(ep, lf_launch(2, 0));
    cr_assert_eq(wr_blockstate_purge(&s, ep, e2, all_pooled, count_block, &d), all_pooled);
    cr_assert_eq(d.blocks, all_pooled ? 0 : 300);
    cr_assert_eq(d.warps, all_pooled ? 0 : 600);
    cr_assert_eq(s.tab.count, 0);
    cr_assert_null(wr_blockstate_block(&s, e1, 0, false));
    uint32_t e;
    test_block *tb;
    test_warp *tw;
    locate(&s, ep, 1, 299, 1, &e, &tb, &tw);   /* the last one its recent slot held */
    cr_assert_eq(tw->mark, 0, "a dropped warp comes back new");
    tw->mark = 1;

    two_warps_each(&s, ep, 2, 10);
    uint32_t e3 = feed(ep, lf_launch(3, 1));
    two_warps_each(&s, ep, 3, 10);
    feed(ep, lf_kernel_end(2));
    uint32_t e4 = feed(ep, lf_launch(4, 2));
    d = (drops){.s = &s, .kept_epoch = e3};
    cr_assert_not(wr_blockstate_purge(&s, ep, e4, all_pooled, count_block, &d), "launch 3 runs");
    cr_assert_not(d.wrong, "a running launch's block was dropped");
    cr_assert_eq(s.tab.count, 10, "launch 3's blocks kept (and no longer launch 1's)");
    cr_assert_eq(d.blocks + s.tab.count, 21);
    locate(&s, ep, 3, 4, 1, &e, &tb, &tw);
    cr_assert_eq(tw->mark, 1, "kept warps keep their state");
    locate(&s, ep, 2, 4, 1, &e, &tb, &tw);
    cr_assert_eq(e, e2);
    cr_assert_eq(tw->mark, 0, "a dropped warp comes back new");
    wr_blockstate_free(&s, NULL, NULL);
    wr_epochs_free(ep);
}

Test(blockstate, purge_drops_every_block_at_once)
{
    purges(true);
}

Test(blockstate, purge_drops_blocks_one_by_one)
{
    purges(false);
}

/* A warp access of lane mask `mask` to the word at addr, recorded in the
 * warp's ring as the engines record theirs. */
static void record_in(wr_ring_pool *ring_pool, test_warp *tw, uint64_t seq, uint32_t site,
                      uint32_t mask, uint64_t addr, uint8_t space)
{
    wr_access a = lf_uniform_access(addr, mask, space);
    wr_ring_push_access(&tw->ring, ring_pool, &a, 4, seq, site, 0);
}

static void record(wr_ring_pool *ring_pool, test_warp *tw, uint64_t seq, uint32_t site, uint32_t mask,
                   uint64_t addr)
{
    record_in(ring_pool, tw, seq, site, mask, addr, WR_SPACE_GLOBAL);
}

typedef struct retire_ctx {
    wr_blockstate *s;
    wr_ring_pool *ring_pool;
    unsigned blocks;
} retire_ctx;

static void drop_retiring(void *w, void *ctx)
{
    wr_ring_release(&((test_warp *)w)->ring, ((retire_ctx *)ctx)->ring_pool);
}

static void retire_block(wr_block_head *b, void *ctx)
{
    retire_ctx *rc = ctx;
    rc->blocks++;
    wr_blockstate_drop(rc->s, b, drop_retiring, rc);
}

/* Blocks of 1 to 32 warps with 0 to 11 accesses each (rings that wrapped
 * and folded older accesses, records of every size class up to 32 full
 * rings) are retired: every access a ring or its older entries still held
 * is found as before, by warp, lane and site; the warps with none are
 * not; the objects went back
 * (a retired block has no object, and a locate makes a new, zeroed one);
 * and a purge one block at a time frees the records. */
Test(blockstate, retired_blocks_keep_what_their_rings_held)
{
    wr_epochs *ep = wr_epochs_new();
    wr_blockstate s;
    wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
    wr_ring_pool ring_pool;
    wr_ring_pool_init(&ring_pool);
    retire_ctx rc = {&s, &ring_pool, 0};
    uint32_t e1 = feed(ep, lf_launch(1, 0));
    const uint32_t nblocks = 40;
    uint64_t seq = 1;
    for (uint32_t b = 0; b < nblocks; b++) {
        uint32_t nwarps = 1 + b % 32;
        for (uint32_t w = 0; w < nwarps; w++) {
            unsigned n = (b + w) % 12;   /* 0: a warp with no access */
            if (!n) {   /* it has an object all the same */
                uint32_t e;
                test_block *tb;
                test_warp *tw;
                locate(&s, ep, 1, b, w, &e, &tb, &tw);
            }
            for (unsigned i = 0; i < n; i++) {
                uint32_t e;
                test_block *tb;
                test_warp *tw;
                locate(&s, ep, 1, b, w, &e, &tb, &tw);
                /* word b*4096 + w*64 + i*4, lane w, site encodes all three */
                record(&ring_pool, tw, seq++, b << 16 | w << 8 | i, 1u << w,
                       0x100000 + (uint64_t)b * 4096 + w * 64 + i * 4);
            }
        }
    }
    for (uint32_t b = 0; b < nblocks; b += 2)   /* every other block exits */
        wr_blockstate_retire(&s, e1, b, retire_block, &rc);
    wr_blockstate_retire(&s, e1, 0, retire_block, &rc);   /* again: nothing */
    cr_assert_eq(rc.blocks, nblocks / 2);
    for (uint32_t b = 0; b < nblocks; b++) {
        bool retired = b % 2 == 0;
        cr_assert_eq(wr_blockstate_block(&s, e1, b, false) == NULL, retired, "block %u", b);
        uint32_t nwarps = 1 + b % 32;
        for (uint32_t w = 0; w < 32; w++) {
            unsigned n = w < nwarps ? (b + w) % 12 : 0;
            for (unsigned i = 0; i < 12; i++) {
                uint64_t addr = 0x100000 + (uint64_t)b * 4096 + w * 64 + i * 4;
                const wr_ring_ent *got =
                    wr_blockstate_find_access(&s, e1, b, w, w, WR_SPACE_GLOBAL, addr, seq, 0, false);
                /* the ring keeps the last 8, the older ones the rest (at
                 * most 3, each its own instruction) */
                bool held = i < n;
                cr_assert_eq(got != NULL, held, "block %u warp %u access %u of %u", b, w, i, n);
                if (held) {
                    cr_assert_eq(got->site, b << 16 | w << 8 | i);
                    cr_assert_null(wr_blockstate_find_access(&s, e1, b, w, (w + 1) % 32, WR_SPACE_GLOBAL,
                                                             addr, seq, 0, false), "another lane");
                    cr_assert_null(wr_blockstate_find_access(&s, e1, b, w, w, WR_SPACE_GLOBAL, addr, seq,
                                                             got->site + 1, false), "another site");
                }
            }
        }
    }
    /* a retired block's warp comes back as a new object (no stale slot),
     * also where a malformed trace named it warp 33 (warp 1 mod 32, a
     * recent slot 32 further on) */
    uint32_t e;
    test_block *tb;
    test_warp *tw;
    locate(&s, ep, 1, 3, 33, &e, &tb, &tw);
    tw->mark = 7;
    wr_blockstate_retire(&s, e1, 3, retire_block, &rc);
    locate(&s, ep, 1, 3, 33, &e, &tb, &tw);
    cr_assert_eq(tw->mark, 0, "warp 33's slot was cleared at the retirement");
    locate(&s, ep, 1, 2, 1, &e, &tb, &tw);
    cr_assert_eq(tw->ring.pos, 0, "new and empty");
    cr_assert_eq(tw->mark, 0);
    cr_assert_null(wr_blockstate_find_access(&s, e1, 2, 1, 1, WR_SPACE_GLOBAL, 0x100000 + 2 * 4096 + 64,
                                             seq, 0, false), "the record made way for the new block");
    /* launch 1 settles: a purge one block at a time frees records and objects */
    feed(ep, lf_kernel_end(1));
    feed(ep, lf_simple(WR_EV_DEVICE_SYNC));
    uint32_t e2 = feed(ep, lf_launch(2, 0));
    wr_blockstate_purge(&s, ep, e2, false, retire_block, &rc);
    cr_assert_eq(s.tab.count, 0);
    cr_assert_null(wr_blockstate_find_access(&s, e1, 1, 0, 0, WR_SPACE_GLOBAL, 0x100000 + 4096, seq, 0, false));
    wr_blockstate_free(&s, NULL, NULL);
    wr_ring_pool_release(&ring_pool);
    wr_epochs_free(ep);
}

/* What an engine keeps of an exited block (fsm and lockset: its cluster
 * barrier history) is there after the retirement, with or without ring
 * entries beside it, until the block starts again or is purged; a block
 * retired without a keep has none. */
Test(blockstate, retired_blocks_keep_what_the_engine_asked)
{
    wr_epochs *ep = wr_epochs_new();
    wr_blockstate s;
    wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
    wr_blockstate_keep(&s, 20);
    wr_ring_pool ring_pool;
    wr_ring_pool_init(&ring_pool);
    retire_ctx rc = {&s, &ring_pool, 0};
    uint32_t e1 = feed(ep, lf_launch(1, 0));
    uint32_t e;
    test_block *tb;
    test_warp *tw;
    locate(&s, ep, 1, 0, 0, &e, &tb, &tw);             /* block 0: no access */
    locate(&s, ep, 1, 1, 2, &e, &tb, &tw);             /* block 1: one access */
    record(&ring_pool, tw, 1, 77, 1u, 0x5000);
    locate(&s, ep, 1, 2, 0, &e, &tb, &tw);             /* block 2: retired without a keep */
    const char a[20] = "history of block 0", b[20] = "history of block 1";
    wr_blockstate_retire_keeping(&s, e1, 0, a, false, retire_block, &rc);
    wr_blockstate_retire_keeping(&s, e1, 1, b, false, retire_block, &rc);
    wr_blockstate_retire(&s, e1, 2, retire_block, &rc);
    cr_assert_eq(rc.blocks, 3);
    cr_assert_null(wr_blockstate_block(&s, e1, 0, false));
    const char *k0 = wr_blockstate_kept(&s, e1, 0), *k1 = wr_blockstate_kept(&s, e1, 1);
    cr_assert(k0 && !memcmp(k0, a, 20), "kept with no ring entry beside it");
    cr_assert(k1 && !memcmp(k1, b, 20));
    cr_assert_not_null(wr_blockstate_find_access(&s, e1, 1, 2, 0, WR_SPACE_GLOBAL, 0x5000, 2, 0, false),
                       "the entries are found as before");
    cr_assert_null(wr_blockstate_kept(&s, e1, 2));
    cr_assert_null(wr_blockstate_kept(&s, e1, 3), "never seen");
    locate(&s, ep, 1, 0, 0, &e, &tb, &tw);             /* block 0 starts again */
    cr_assert_null(wr_blockstate_kept(&s, e1, 0));
    feed(ep, lf_kernel_end(1));
    feed(ep, lf_simple(WR_EV_DEVICE_SYNC));
    uint32_t e2 = feed(ep, lf_launch(2, 0));
    wr_blockstate_purge(&s, ep, e2, false, retire_block, &rc);
    cr_assert_null(wr_blockstate_kept(&s, e1, 1), "purged");
    wr_blockstate_free(&s, NULL, NULL);
    wr_ring_pool_release(&ring_pool);
    wr_epochs_free(ep);
}

/* A block whose shared memory died with it (no cluster) is retired without
 * its accesses to that memory, in the ring and among the older entries
 * alike, and every global access stays findable at its place; retired
 * otherwise, the shared ones stay too. */
Test(blockstate, a_retired_block_leaves_out_its_shared_accesses_when_they_died)
{
    for (int died = 0; died < 2; died++) {
        wr_epochs *ep = wr_epochs_new();
        wr_blockstate s;
        wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
        wr_ring_pool ring_pool;
        wr_ring_pool_init(&ring_pool);
        retire_ctx rc = {&s, &ring_pool, 0};
        uint32_t e1 = feed(ep, lf_launch(1, 0));
        uint32_t e;
        test_block *tb;
        test_warp *tw;
        /* 14 accesses at 14 sites, shared and global in turn: 8 stay in
         * the ring, 6 are folded into older entries */
        for (unsigned w = 0; w < 2; w++) {
            locate(&s, ep, 1, 0, w, &e, &tb, &tw);
            for (uint32_t i = 0; i < 14; i++)
                record_in(&ring_pool, tw, 10 + i, 100 * w + i, ~0u, 0x400 + 64 * i,
                          i % 2 ? WR_SPACE_GLOBAL : WR_SPACE_SHARED);
        }
        wr_blockstate_retire_keeping(&s, e1, 0, NULL, died, retire_block, &rc);
        cr_assert_null(wr_blockstate_block(&s, e1, 0, false), "retired");
        for (unsigned w = 0; w < 2; w++)
            for (uint32_t i = 0; i < 14; i++) {
                uint8_t space = i % 2 ? WR_SPACE_GLOBAL : WR_SPACE_SHARED;
                const wr_ring_ent *got = wr_blockstate_find_access(&s, e1, 0, w, 5, space, 0x400 + 64 * i,
                                                                   100, 0, false);
                bool kept = space == WR_SPACE_GLOBAL || !died;
                cr_assert_eq(got != NULL, kept, "died %d warp %u access %u", died, w, i);
                if (got)
                    cr_assert_eq(got->site, 100 * w + i);
            }
        wr_blockstate_free(&s, NULL, NULL);
        wr_ring_pool_release(&ring_pool);
        wr_epochs_free(ep);
    }
}

/* The largest record: 32 warps whose rings are full and whose older
 * entries are full too.  40 accesses per warp, each on its own word, at
 * `sites` sites in turn: with 12, each instruction that left the ring
 * makes way again (8 entries, the 12 in a cycle) before it comes back, so
 * the older entries hold accesses 24..31 alone; with 4 (a loop), each
 * entry holds its instruction's accesses 0..31 and names the newest.
 * Retired, every access is found as before the retirement. */
static void full_record(unsigned sites)
{
    wr_epochs *ep = wr_epochs_new();
    wr_blockstate s;
    wr_blockstate_init(&s, sizeof(test_block), sizeof(test_warp), offsetof(test_warp, ring));
    wr_ring_pool ring_pool;
    wr_ring_pool_init(&ring_pool);
    retire_ctx rc = {&s, &ring_pool, 0};
    uint32_t e1 = feed(ep, lf_launch(1, 0));
    uint64_t seq = 1;
    enum { PER_WARP = 40 };
    for (unsigned i = 0; i < PER_WARP; i++)
        for (uint32_t w = 0; w < 32; w++) {
            uint32_t e;
            test_block *tb;
            test_warp *tw;
            locate(&s, ep, 1, 0, w, &e, &tb, &tw);
            record(&ring_pool, tw, seq++, 1000 + i % sites, 1u << w, 0x200000 + w * 4096 + i * 4);
        }
    for (int retired = 0; retired < 2; retired++) {
        if (retired)
            wr_blockstate_retire(&s, e1, 0, retire_block, &rc);
        cr_assert_eq(wr_blockstate_block(&s, e1, 0, false) == NULL, retired);
        for (uint32_t w = 0; w < 32; w++)
            for (unsigned i = 0; i < PER_WARP; i++) {
                uint64_t addr = 0x200000 + w * 4096 + i * 4;
                const wr_ring_ent *got = wr_blockstate_find_access(&s, e1, 0, w, w, WR_SPACE_GLOBAL,
                                                                   addr, seq, 1000 + i % sites, false);
                bool in_ring = i + WR_ACCESS_RING >= PER_WARP;
                bool kept = in_ring || sites <= WR_RING_OLDER || i >= 24;
                cr_assert_eq(got != NULL, kept, "sites %u retired %d warp %u access %u", sites, retired,
                             w, i);
                if (!got)
                    continue;
                /* the instruction's newest access that left the ring */
                uint64_t want = in_ring || sites > WR_RING_OLDER ? i : 32 - sites + i % sites;
                cr_assert_eq(wr_ring_seq(got, seq), 1 + want * 32 + w,
                             "sites %u retired %d warp %u access %u", sites, retired, w, i);
            }
    }
    wr_blockstate_free(&s, NULL, NULL);
    wr_ring_pool_release(&ring_pool);
    wr_epochs_free(ep);
}

Test(blockstate, retired_record_keeps_full_rings_and_older_entries)
{
    full_record(12);
    full_record(4);
}

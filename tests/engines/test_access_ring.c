/* access_ring: a warp's recent accesses, which fsm's and lockset's reports
 * take their first side from.  Entries keep 48 bits of the trace position
 * and rebuild the rest from the asking access's position. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "access_ring.h"
#include "lf_events.h"

/* Positions just below and across 2^48 and near 2^64: each entry comes back
 * with its whole position, kind, space and site, asked from a later one. */
Test(access_ring, positions_beyond_48_bits_come_back_whole)
{
    const uint64_t starts[] = {1, WR_RING_SEQ_MASK - 2, (UINT64_C(5) << 48) + 7, UINT64_MAX - 40};
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        wr_ring_pool pool;
        wr_ring_pool_init(&pool);
        wr_access_ring ring = {0};
        for (unsigned i = 0; i < 6; i++) {
            wr_access a = lf_uniform_access(0x1000 + 64u * i, 0xffffffffu,
                                         i & 1 ? WR_SPACE_SHARED : WR_SPACE_GLOBAL);
            wr_ring_push_access(&ring, &pool, &a, 4, starts[s] + 3u * i, 100 + i, (uint8_t)(i % 3));
        }
        uint64_t now = starts[s] + 30;
        for (unsigned i = 0; i < 6; i++) {
            const wr_ring_ent *e = wr_ring_find(&ring, 5, i & 1 ? WR_SPACE_SHARED : WR_SPACE_GLOBAL,
                                                0x1000 + 64u * i, now, 0, 0);
            cr_assert_not_null(e, "start %zu entry %u", s, i);
            cr_expect_eq(wr_ring_seq(e, now), starts[s] + 3u * i, "start %zu entry %u", s, i);
            cr_expect_eq(e->site, 100 + i);
            cr_expect_eq(wr_ring_kind(e), i % 3);
        }
        /* the wrong space, or a word no lane touched: not found */
        cr_expect_null(wr_ring_find(&ring, 5, WR_SPACE_SHARED, 0x1000, now, 0, 0));
        cr_expect_null(wr_ring_find(&ring, 5, WR_SPACE_GLOBAL, 0x1000 + 64u * 6, now, 0, 0));
        wr_ring_pool_release(&pool);
    }
}

/* The asking access is skipped by its position, also when only the low 48
 * bits are kept, and the older access of the same word is found instead. */
Test(access_ring, skips_the_asking_access)
{
    wr_ring_pool pool;
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    wr_access a = lf_uniform_access(0x2000, 1u << 4, WR_SPACE_GLOBAL);
    uint64_t older = (UINT64_C(3) << 48) - 1, cur = (UINT64_C(3) << 48) + 10;
    wr_ring_push_access(&ring, &pool, &a, 4, older, 7, 0);
    wr_ring_push_access(&ring, &pool, &a, 4, cur, 8, 1);
    const wr_ring_ent *e = wr_ring_find(&ring, 4, WR_SPACE_GLOBAL, 0x2000, cur, 0, 0);
    cr_assert_not_null(e);
    cr_expect_eq(e->site, 7);
    cr_expect_eq(wr_ring_seq(e, cur), older);
    /* another lane than the one that made it: not found */
    cr_expect_null(wr_ring_find(&ring, 3, WR_SPACE_GLOBAL, 0x2000, cur, 0, 0));
    wr_ring_pool_release(&pool);
}

/* Past WR_ACCESS_RING accesses the oldest leave the ring: each is then
 * found by its instruction among the older ones (here each access is its
 * own instruction), never a newer access standing in for it. */
Test(access_ring, finds_what_left_the_ring_among_the_older_instructions)
{
    wr_ring_pool pool;
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    for (unsigned i = 0; i < WR_ACCESS_RING + 2; i++) {
        wr_access a = lf_uniform_access(0x3000 + 4u * i, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &a, 4, 10 + i, 50 + i, 0);
    }
    cr_assert_eq(ring.nolder, 2);
    cr_assert_eq(wr_ring_count(&ring), WR_ACCESS_RING);
    uint64_t now = 100;
    for (unsigned i = 0; i < WR_ACCESS_RING + 2; i++) {
        const wr_ring_ent *e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x3000 + 4u * i, now, 0, 0);
        cr_assert_not_null(e, "access %u", i);
        cr_expect_eq(e->site, 50 + i);
        cr_expect_eq(wr_ring_seq(e, now), 10 + i);
        cr_expect_eq(e >= ring.older && e < ring.older + WR_RING_OLDER, i < 2, "access %u", i);
    }
    cr_expect_null(wr_ring_find(&ring, 1, WR_SPACE_GLOBAL, 0x3000, now, 0, 0), "another lane");
    wr_ring_release(&ring, &pool);
    cr_assert_null(ring.older);
    cr_assert_eq(ring.nolder, 0);
    wr_ring_pool_release(&pool);
}

/* A loop: one instruction's accesses leave the ring one by one and fold
 * into one older entry, the union of their lanes and ranges at the
 * position of the newest; the same site with another kind or in another
 * space is another instruction. */
Test(access_ring, folds_an_instructions_accesses_into_one)
{
    wr_ring_pool pool;
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    uint64_t seq = 1;
    for (unsigned i = 0; i < 6; i++) {   /* site 7 loads, lane i, word i */
        wr_access a = lf_uniform_access(0x4000 + 4u * i, 1u << i, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &a, 4, seq++, 7, WR_KIND_READ);
    }
    wr_access st = lf_uniform_access(0x4000, 1u << 20, WR_SPACE_GLOBAL);   /* site 7 stores */
    wr_ring_push_access(&ring, &pool, &st, 4, seq++, 7, WR_KIND_WRITE);
    wr_access sh = lf_uniform_access(0x4000, 1u << 21, WR_SPACE_SHARED);   /* site 7, shared */
    wr_ring_push_access(&ring, &pool, &sh, 4, seq++, 7, WR_KIND_READ);
    for (unsigned i = 0; i < WR_ACCESS_RING; i++) {   /* push them all out */
        wr_access a = lf_uniform_access(0x9000, 1u << 31, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &a, 4, seq++, 99, WR_KIND_READ);
    }
    cr_assert_eq(ring.nolder, 3, "loads, the store and the shared load");
    uint64_t now = seq + 5;
    for (unsigned i = 0; i < 6; i++) {
        const wr_ring_ent *e = wr_ring_find(&ring, i, WR_SPACE_GLOBAL, 0x4000 + 4u * i, now, 7, 0);
        cr_assert_not_null(e, "lane %u", i);
        cr_expect_eq(wr_ring_seq(e, now), 6, "the newest load's position");
        cr_expect_eq(wr_ring_kind(e), WR_KIND_READ);
        cr_expect_eq(e->mask, 0x3fu);
        cr_expect_eq(e->lo, 0x4000);
        cr_expect_eq(e->hi, 0x4000 + 4 * 5 + 3);
    }
    /* the union is looser than each access: lane 0 over word 5 matches */
    cr_expect_not_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x4014, now, 7, 0));
    cr_expect_null(wr_ring_find(&ring, 6, WR_SPACE_GLOBAL, 0x4000, now, 7, 0), "no such lane");
    cr_expect_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x4018, now, 7, 0), "beyond the range");
    const wr_ring_ent *w = wr_ring_find(&ring, 20, WR_SPACE_GLOBAL, 0x4000, now, 0, true);
    cr_assert_not_null(w, "the store, asked for writes only");
    cr_expect_eq(wr_ring_kind(w), WR_KIND_WRITE);
    cr_expect_eq(wr_ring_seq(w, now), 7);
    const wr_ring_ent *h = wr_ring_find(&ring, 21, WR_SPACE_SHARED, 0x4000, now, 0, 0);
    cr_assert_not_null(h, "the shared load");
    cr_expect_eq(wr_ring_seq(h, now), 8);
    cr_expect_null(wr_ring_find(&ring, 21, WR_SPACE_SHARED, 0x4000, now, 0, true), "a read");
    wr_ring_pool_release(&pool);
}

/* Of several older instructions that match, the newest is named; the
 * ring's own entries come before any older one. */
Test(access_ring, names_the_newest_match)
{
    wr_ring_pool pool;
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    wr_access a = lf_uniform_access(0x5000, 1, WR_SPACE_GLOBAL);
    uint64_t seq = 1;
    wr_ring_push_access(&ring, &pool, &a, 4, seq++, 1, WR_KIND_WRITE);
    wr_ring_push_access(&ring, &pool, &a, 4, seq++, 1, WR_KIND_WRITE);
    wr_ring_push_access(&ring, &pool, &a, 4, seq++, 2, WR_KIND_WRITE);   /* newer, folded second */
    for (unsigned i = 0; i < WR_ACCESS_RING; i++) {
        wr_access b = lf_uniform_access(0x9000, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &b, 4, seq++, 99, WR_KIND_READ);
    }
    const wr_ring_ent *e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x5000, seq, 0, 0);
    cr_assert_not_null(e);
    cr_expect_eq(e->site, 2);
    cr_expect_eq(wr_ring_seq(e, seq), 3);
    e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x5000, seq, 1, 0);
    cr_assert_not_null(e, "asked by site");
    cr_expect_eq(wr_ring_seq(e, seq), 2);
    /* a newer access of the word in the ring: it, not the older ones */
    wr_ring_push_access(&ring, &pool, &a, 4, seq++, 3, WR_KIND_READ);
    e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x5000, seq, 0, 0);
    cr_assert_not_null(e);
    cr_expect_eq(e->site, 3);
    wr_ring_pool_release(&pool);
}

/* Past WR_RING_OLDER instructions the one whose newest access is the
 * oldest makes way, also when it was the first to arrive and was seen
 * again since (it is then not the oldest). */
Test(access_ring, older_instructions_make_way_by_their_newest_access)
{
    wr_ring_pool pool;
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    uint64_t seq = (UINT64_C(1) << 48) - 3;   /* positions across 2^48 */
    /* sites 1..WR_RING_OLDER, each on its own word, then site 1 again */
    for (unsigned i = 1; i <= WR_RING_OLDER; i++) {
        wr_access a = lf_uniform_access(0x6000 + 4u * i, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &a, 4, seq++, i, WR_KIND_WRITE);
    }
    wr_access again = lf_uniform_access(0x6000 + 4u, 1, WR_SPACE_GLOBAL);
    wr_ring_push_access(&ring, &pool, &again, 4, seq++, 1, WR_KIND_WRITE);
    /* a new site pushes all of them out of the ring */
    for (unsigned i = 0; i < WR_ACCESS_RING; i++) {
        wr_access b = lf_uniform_access(0x9000, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &b, 4, seq++, 100, WR_KIND_READ);
    }
    cr_assert_eq(ring.nolder, WR_RING_OLDER);
    uint64_t now = seq;
    for (unsigned i = 1; i <= WR_RING_OLDER; i++)
        cr_assert_not_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x6000 + 4u * i, now, i, 0),
                           "site %u", i);
    /* site 100 leaves the ring too: site 2 (newest access the oldest) goes */
    for (unsigned i = 0; i < WR_ACCESS_RING; i++) {
        wr_access b = lf_uniform_access(0xa000, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &b, 4, seq++, 101, WR_KIND_READ);
    }
    now = seq;
    cr_assert_eq(ring.nolder, WR_RING_OLDER);
    cr_expect_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x6008, now, 2, 0), "site 2 made way");
    const wr_ring_ent *e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x6004, now, 1, 0);
    cr_assert_not_null(e, "site 1 was seen again: kept");
    cr_expect_eq(wr_ring_seq(e, now), (UINT64_C(1) << 48) - 3 + WR_RING_OLDER);
    cr_expect_not_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x9000, now, 100, 0));
    for (unsigned i = 3; i <= WR_RING_OLDER; i++)
        cr_expect_not_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x6000 + 4u * i, now, i, 0),
                           "site %u", i);
    wr_ring_pool_release(&pool);
}

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
        wr_pool pool = {0};
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
                                                0x1000 + 64u * i, now, 0, false);
            cr_assert_not_null(e, "start %zu entry %u", s, i);
            cr_expect_eq(wr_ring_seq(e, now), starts[s] + 3u * i, "start %zu entry %u", s, i);
            cr_expect_eq(e->site, 100 + i);
            cr_expect_eq(wr_ring_kind(e), i % 3);
        }
        /* the wrong space, or a word no lane touched: not found */
        cr_expect_null(wr_ring_find(&ring, 5, WR_SPACE_SHARED, 0x1000, now, 0, false));
        cr_expect_null(wr_ring_find(&ring, 5, WR_SPACE_GLOBAL, 0x1000 + 64u * 6, now, 0, false));
        wr_pool_release(&pool);
    }
}

/* The asking access is skipped by its position, also when only the low 48
 * bits are kept, and the older access of the same word is found instead. */
Test(access_ring, skips_the_asking_access)
{
    wr_pool pool = {0};
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    wr_access a = lf_uniform_access(0x2000, 1u << 4, WR_SPACE_GLOBAL);
    uint64_t older = (UINT64_C(3) << 48) - 1, cur = (UINT64_C(3) << 48) + 10;
    wr_ring_push_access(&ring, &pool, &a, 4, older, 7, 0);
    wr_ring_push_access(&ring, &pool, &a, 4, cur, 8, 1);
    const wr_ring_ent *e = wr_ring_find(&ring, 4, WR_SPACE_GLOBAL, 0x2000, cur, 0, false);
    cr_assert_not_null(e);
    cr_expect_eq(e->site, 7);
    cr_expect_eq(wr_ring_seq(e, cur), older);
    /* another lane than the one that made it: not found */
    cr_expect_null(wr_ring_find(&ring, 3, WR_SPACE_GLOBAL, 0x2000, cur, 0, false));
    wr_pool_release(&pool);
}

/* Past WR_ACCESS_RING accesses the oldest are gone: not found, never a
 * newer access standing in for them. */
Test(access_ring, forgets_the_oldest_past_its_size)
{
    wr_pool pool = {0};
    wr_ring_pool_init(&pool);
    wr_access_ring ring = {0};
    for (unsigned i = 0; i < WR_ACCESS_RING + 2; i++) {
        wr_access a = lf_uniform_access(0x3000 + 4u * i, 1, WR_SPACE_GLOBAL);
        wr_ring_push_access(&ring, &pool, &a, 4, 10 + i, 50 + i, 0);
    }
    uint64_t now = 100;
    cr_expect_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x3000, now, 0, false));
    cr_expect_null(wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x3004, now, 0, false));
    const wr_ring_ent *e = wr_ring_find(&ring, 0, WR_SPACE_GLOBAL, 0x3008, now, 0, false);
    cr_assert_not_null(e);
    cr_expect_eq(e->site, 52);
    cr_expect_eq(wr_ring_seq(e, now), 12);
    wr_ring_release(&ring, &pool);
    wr_pool_release(&pool);
}

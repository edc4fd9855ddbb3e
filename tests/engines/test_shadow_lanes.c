/*
 * wr_shadow_vector_lanes: the lanes of a gather / scatter that the engines'
 * lane loops walk.  Every owned active lane once, in lane order, with the
 * cell of its word in the page of that word; the byte range of every active
 * lane (owned or not: the access ring keeps the whole access); "same word"
 * against the previous active lane whoever owns it; and no answer for a
 * lane that crosses a word.
 */
#include <criterion/criterion.h>

#include "shadow.h"

#define BASE 0x40000000ull

static wr_shadow_map *map;
static unsigned pages_asked;

static wr_shadow_page *page_of(void *ctx, uint64_t word)
{
    (void)ctx;
    pages_asked++;
    return wr_shadow_get(map, wr_shadow_key(WR_SPACE_GLOBAL, 1, 0, word));
}

static void setup(void)
{
    map = wr_shadow_new(8, NULL);
    pages_asked = 0;
}

static void teardown(void)
{
    wr_shadow_free(map);
}

static wr_access vector_access(uint64_t *lanes, uint32_t mask, unsigned size)
{
    return (wr_access){.launch = 1, .active_mask = mask, .op = WR_OP_LOAD,
                       .space = WR_SPACE_GLOBAL, .size = (uint8_t)size,
                       .addr_mode = WR_ADDR_VECTOR, .lane_addr = lanes};
}

TestSuite(shadow_lanes, .init = setup, .fini = teardown);

Test(shadow_lanes, every_active_lane_in_order_with_its_own_cell)
{
    uint64_t lanes[32] = {0};
    for (unsigned l = 0; l < 32; l++)
        lanes[l] = BASE + (uint64_t)((l * 7919u) % 4096u) * 4u;   /* scattered over pages */
    uint32_t mask = 0xf0f0f00fu;
    wr_access a = vector_access(lanes, mask, 4);
    wr_shadow_lanes vl;
    cr_assert(wr_shadow_vector_lanes(&a, 4, map, 0, 1, page_of, NULL, &vl));
    cr_assert_eq(vl.n, (unsigned)__builtin_popcount(mask));
    uint64_t lo = UINT64_MAX, hi = 0;
    unsigned i = 0;
    for (uint32_t x = mask; x; x &= x - 1, i++) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        const wr_shadow_lane *l = &vl.l[i];
        uint64_t word = lanes[lane] >> WR_WORD_SHIFT;
        cr_assert_eq(l->lane, lane);
        cr_assert_eq(l->word, word);
        cr_assert_eq(l->page, wr_shadow_get(map, wr_shadow_key(WR_SPACE_GLOBAL, 1, 0, word)));
        cr_assert_eq(l->cell, wr_shadow_cell(map, l->page, word));
        cr_assert(!l->same_word);
        lo = lanes[lane] < lo ? lanes[lane] : lo;
        hi = lanes[lane] > hi ? lanes[lane] : hi;
    }
    cr_assert_eq(vl.lo, lo);
    cr_assert_eq(vl.hi, hi + 3);
}

Test(shadow_lanes, one_page_lookup_per_run_of_lanes_on_a_page)
{
    uint64_t lanes[32];
    for (unsigned l = 0; l < 32; l++)   /* lanes 0-15 on one page, 16-31 on another */
        lanes[l] = BASE + (l < 16 ? 0 : 1ull << 20) + (uint64_t)(31 - l) * 4u;
    wr_access a = vector_access(lanes, UINT32_MAX, 4);
    wr_shadow_lanes vl;
    cr_assert(wr_shadow_vector_lanes(&a, 4, map, 0, 1, page_of, NULL, &vl));
    cr_assert_eq(vl.n, 32);
    cr_assert_eq(pages_asked, 2);
    cr_assert_neq(vl.l[0].page, vl.l[16].page);
}

Test(shadow_lanes, same_word_is_against_the_previous_active_lane_of_any_shard)
{
    /* lane 0 and 1 on word A, lane 2 on word B, lane 3 on word A again, lane
     * 5 on B (lane 4 inactive) */
    uint64_t A = BASE, B = BASE + (64ull << 20);   /* far apart: different shard runs */
    uint64_t lanes[32] = {A, A, B, A, 0, B};
    wr_access a = vector_access(lanes, 0x2fu, 4);
    const unsigned shards = 64;
    unsigned seen = 0;
    cr_assert_neq(wr_shard_of(WR_SPACE_GLOBAL, 1, 0, A, shards),
                  wr_shard_of(WR_SPACE_GLOBAL, 1, 0, B, shards),
                  "the test wants A and B in different shards");
    for (unsigned shard = 0; shard < shards; shard++) {
        wr_shadow_lanes vl;
        cr_assert(wr_shadow_vector_lanes(&a, 4, map, shard, shards, page_of, NULL, &vl));
        cr_assert_eq(vl.lo, A);
        cr_assert_eq(vl.hi, B + 3);
        for (unsigned i = 0; i < vl.n; i++) {
            const wr_shadow_lane *l = &vl.l[i];
            uint64_t addr = lanes[l->lane];
            cr_assert_eq(wr_shard_of(WR_SPACE_GLOBAL, 1, 0, addr, shards), shard);
            /* lane 1 follows lane 0 on A; 3 follows 2 (B) and 5 follows 3 (A) */
            cr_assert_eq(l->same_word, l->lane == 1, "lane %u", l->lane);
            seen |= 1u << l->lane;
        }
    }
    cr_assert_eq(seen, 0x2fu, "every active lane in exactly one shard");
}

/* A sub-word access's lanes step byte cells (shadow.h, "Sub-word
 * accesses"), which only the engines' general paths do. */
Test(shadow_lanes, no_answer_for_a_sub_word_access)
{
    uint64_t lanes[32] = {BASE, BASE + 8, BASE + 17};
    wr_access a = vector_access(lanes, 0x7u, 1);
    wr_shadow_lanes vl;
    cr_assert(!wr_shadow_vector_lanes(&a, 1, map, 0, 1, page_of, NULL, &vl));
    a.size = 2;
    cr_assert(!wr_shadow_vector_lanes(&a, 2, map, 0, 1, page_of, NULL, &vl));
}

Test(shadow_lanes, no_answer_for_a_lane_across_two_words)
{
    uint64_t lanes[32] = {BASE, BASE + 8, BASE + 18};   /* lane 2: bytes 18-21 cross */
    wr_access a = vector_access(lanes, 0x7u, 4);
    wr_shadow_lanes vl;
    cr_assert(!wr_shadow_vector_lanes(&a, 4, map, 0, 1, page_of, NULL, &vl));
    a = vector_access(lanes, 0x3u, 4);
    cr_assert(wr_shadow_vector_lanes(&a, 4, map, 0, 1, page_of, NULL, &vl));
    cr_assert_eq(vl.n, 2);
    a = vector_access(lanes, 0x3u, 8);
    cr_assert(!wr_shadow_vector_lanes(&a, 8, map, 0, 1, page_of, NULL, &vl), "8-byte lanes");
    wr_access strided = {.launch = 1, .active_mask = 1, .space = WR_SPACE_GLOBAL, .size = 4,
                         .addr_mode = WR_ADDR_STRIDED, .base = BASE, .stride = 4};
    cr_assert(!wr_shadow_vector_lanes(&strided, 4, map, 0, 1, page_of, NULL, &vl), "not a vector");
}

/* wr_shadow_get_scattered probes the table itself: it must find what
 * wr_shadow_get finds and create what is absent, across the table's growth
 * and the backward shifts of removals, and leave the recent pages alone. */
Test(shadow_lanes, scattered_lookup_agrees_with_the_cached_one)
{
    enum { N = 5000 };
    static wr_shadow_page *page[N];
    uint64_t key = 0x1234;
    for (unsigned i = 0; i < N; i++) {   /* keys that collide in their low bits too */
        key = wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, (uint64_t)i << (WR_SHADOW_PAGE_SHIFT + 6));
        page[i] = i % 2 ? wr_shadow_get_scattered(map, key) : wr_shadow_get(map, key);
        cr_assert_not_null(page[i]);
        cr_assert_eq(page[i]->key, key);
    }
    cr_assert_eq(map->count, N);
    wr_shadow_page *recent0 = map->recent[0];
    for (unsigned i = 0; i < N; i++) {
        key = wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, (uint64_t)i << (WR_SHADOW_PAGE_SHIFT + 6));
        cr_assert_eq(wr_shadow_get_scattered(map, key), page[i], "page %u", i);
    }
    cr_assert_eq(map->recent[0], recent0, "the recent pages are not reordered");
    cr_assert_eq(map->count, N, "nothing created for a present key");
    for (unsigned i = 0; i < N; i += 3)
        wr_shadow_remove(map, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0,
                                            (uint64_t)i << (WR_SHADOW_PAGE_SHIFT + 6)));
    wr_shadow_forget_recent(map);
    for (unsigned i = 0; i < N; i++) {
        key = wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, (uint64_t)i << (WR_SHADOW_PAGE_SHIFT + 6));
        wr_shadow_page *p = wr_shadow_get_scattered(map, key);
        cr_assert_eq(p->key, key);
        if (i % 3)
            cr_assert_eq(p, page[i], "page %u kept", i);
        cr_assert_eq(wr_shadow_lookup_slow(map, key, false), p);
    }
    cr_assert_eq(map->count, N, "removed pages created again");
}

/* blocktab: the (epoch, block) table that fsm and lockset keep their block
 * state in, and the per-block warp slots.  Values here are tagged integers
 * cast to pointers: the table never looks behind them. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "blocktab.h"

static void *val_of(uint32_t epoch, uint32_t block)
{
    return (void *)(uintptr_t)(((uint64_t)epoch << 32 | block) + 1);
}

typedef struct filter_ctx {
    uint32_t keep_epoch;
    uint64_t dropped, kept;
    bool wrong;
} filter_ctx;

static bool keep_one_epoch(uint32_t epoch, uint32_t block, void *ctx)
{
    (void)block;
    filter_ctx *c = ctx;
    bool keep = epoch == c->keep_epoch;
    c->kept += keep;
    return keep;
}

static void count_drop(void *val, void *ctx)
{
    filter_ctx *c = ctx;
    c->dropped++;
    c->wrong |= (uint32_t)(((uintptr_t)val - 1) >> 32) == c->keep_epoch;
}

/* Grids of small blocks put hundreds of thousands of consecutive block
 * indices in one epoch; every one must come back, through every growth of
 * the table, beside another epoch's blocks with the same indices. */
Test(blocktab, many_consecutive_blocks_in_two_epochs)
{
    wr_blocktab t = {0};
    const uint32_t n = 300000;
    for (uint32_t b = 0; b < n; b++) {
        wr_blocktab_put(&t, 1, b, val_of(1, b));
        if (b % 3 == 0)
            wr_blocktab_put(&t, 7, b, val_of(7, b));
    }
    cr_assert_eq(t.count, n + n / 3);
    cr_assert(t.ngroups * 2 <= t.cap, "the directory at most half full");
    cr_assert_eq(t.ngroups, (n + WR_BLOCKTAB_GROUP - 1) / WR_BLOCKTAB_GROUP * 2,
                 "consecutive blocks share groups");
    for (uint32_t b = 0; b < n; b++) {
        cr_assert_eq(wr_blocktab_get(&t, 1, b), val_of(1, b), "epoch 1 block %u", b);
        cr_assert_eq(wr_blocktab_get(&t, 7, b), b % 3 == 0 ? val_of(7, b) : NULL,
                     "epoch 7 block %u", b);
    }
    cr_assert_null(wr_blocktab_get(&t, 1, n));
    cr_assert_null(wr_blocktab_get(&t, 2, 0));
    cr_assert_null(wr_blocktab_get(&t, 1, UINT32_MAX));

    /* dropping the big epoch keeps the other and shrinks the table */
    uint32_t big_cap = t.cap;
    filter_ctx c = {.keep_epoch = 7};
    wr_blocktab_filter(&t, keep_one_epoch, count_drop, &c);
    cr_assert_eq(c.dropped, n);
    cr_assert_eq(c.kept, n / 3);
    cr_assert(!c.wrong, "a kept value was handed to drop");
    cr_assert_eq(t.count, n / 3);
    cr_assert_lt(t.cap, big_cap, "the table shrinks to the kept entries");
    for (uint32_t b = 0; b < n; b++) {
        cr_assert_null(wr_blocktab_get(&t, 1, b));
        cr_assert_eq(wr_blocktab_get(&t, 7, b), b % 3 == 0 ? val_of(7, b) : NULL);
    }
    /* and takes new entries after its rebuild */
    wr_blocktab_put(&t, 8, 5, val_of(8, 5));
    cr_assert_eq(wr_blocktab_get(&t, 8, 5), val_of(8, 5));
    wr_blocktab_free(&t, NULL, NULL);
    cr_assert_eq(t.cap, 0);
    cr_assert_null(wr_blocktab_get(&t, 7, 0));
}

/* Scattered block indices (a launch's blocks seen in no particular order,
 * the host's pseudo-block UINT32_MAX) in many epochs. */
Test(blocktab, scattered_blocks_and_the_host_block)
{
    wr_blocktab t = {0};
    for (uint32_t i = 0; i < 20000; i++) {
        uint32_t epoch = 1 + i % 13, block = i * 2654435761u;
        wr_blocktab_put(&t, epoch, block, val_of(epoch, block));
    }
    wr_blocktab_put(&t, 3, UINT32_MAX, val_of(3, UINT32_MAX));
    for (uint32_t i = 0; i < 20000; i++) {
        uint32_t epoch = 1 + i % 13, block = i * 2654435761u;
        cr_assert_eq(wr_blocktab_get(&t, epoch, block), val_of(epoch, block));
        cr_assert_null(wr_blocktab_get(&t, epoch + 13, block));
    }
    cr_assert_eq(wr_blocktab_get(&t, 3, UINT32_MAX), val_of(3, UINT32_MAX));
    filter_ctx c = {.keep_epoch = 3};
    wr_blocktab_filter(&t, keep_one_epoch, count_drop, &c);
    cr_assert_eq(t.count, c.kept);
    cr_assert_eq(c.kept + c.dropped, 20001);
    cr_assert_eq(wr_blocktab_get(&t, 3, UINT32_MAX), val_of(3, UINT32_MAX));
    /* an empty table filters to nothing and stays usable */
    c = (filter_ctx){.keep_epoch = 99};
    wr_blocktab_filter(&t, keep_one_epoch, count_drop, &c);
    cr_assert_eq(t.count, 0);
    wr_blocktab_filter(&t, keep_one_epoch, count_drop, &c);
    wr_blocktab_put(&t, 1, 1, val_of(1, 1));
    cr_assert_eq(wr_blocktab_get(&t, 1, 1), val_of(1, 1));
    wr_blocktab_free(&t, NULL, NULL);
}

static void count_warp(void *obj, void *ctx)
{
    (void)obj;
    (*(unsigned *)ctx)++;
}

Test(blocktab, warp_slots_grow_to_the_highest_warp)
{
    wr_warp_slots s = {0};
    wr_warp_slot_pools pools;
    wr_warp_slot_pools_init(&pools);
    static int objs[32];
    *wr_warp_slot_ref(&s, 0, &pools) = &objs[0];
    cr_assert_eq(s.cap, 0, "warp 0 lives inline");
    *wr_warp_slot_ref(&s, 5, &pools) = &objs[5];
    cr_assert_geq(s.cap, 5);
    cr_assert_null(wr_warp_slot(&s, 3));
    cr_assert_null(wr_warp_slot(&s, 30), "past the array: none");
    *wr_warp_slot_ref(&s, 31, &pools) = &objs[31];
    cr_assert_eq(s.cap, 31);
    cr_assert_eq(wr_warp_slot(&s, 0), &objs[0]);
    cr_assert_eq(wr_warp_slot(&s, 5), &objs[5], "kept through the growth");
    cr_assert_eq(wr_warp_slot(&s, 31), &objs[31]);
    cr_assert_eq(wr_warp_slot(&s, 32 + 5), &objs[5], "warps are taken mod 32");
    unsigned dropped = 0;
    wr_warp_slots_free(&s, &pools, count_warp, &dropped);
    cr_assert_eq(dropped, 3);
    cr_assert_null(wr_warp_slot(&s, 5));
    wr_warp_slot_pools_release(&pools);
}

static bool keep_block_7(uint32_t epoch, uint32_t block, void *ctx)
{
    (void)epoch;
    (*(unsigned *)ctx)++;
    return block == 7;
}

Test(blocktab, keeps_none_asks_every_key)
{
    wr_blocktab t = {0};
    unsigned asked = 0;
    cr_assert(wr_blocktab_keeps_none(&t, keep_block_7, &asked), "an empty table keeps none");
    for (uint32_t b = 0; b < 7; b++)
        wr_blocktab_put(&t, 2, b, val_of(2, b));
    cr_assert(wr_blocktab_keeps_none(&t, keep_block_7, &asked));
    cr_assert_eq(asked, 7, "every entry asked");
    wr_blocktab_put(&t, 2, 7, val_of(2, 7));
    cr_assert_not(wr_blocktab_keeps_none(&t, keep_block_7, &asked));
    cr_assert_eq(t.count, 8, "asking changes nothing");
    wr_blocktab_free(&t, NULL, NULL);
    cr_assert_eq(t.count, 0);
    cr_assert_null(wr_blocktab_get(&t, 2, 7));
    wr_blocktab_put(&t, 3, 1, val_of(3, 1));
    cr_assert_eq(wr_blocktab_get(&t, 3, 1), val_of(3, 1), "usable after free");
    wr_blocktab_free(&t, NULL, NULL);
}

/* Warp arrays come from pools by size: one put back and handed out again
 * to another block must hold none of the first block's warps, and a
 * release frees arrays still in use. */
Test(blocktab, warp_slot_arrays_come_back_empty)
{
    wr_warp_slot_pools pools;
    wr_warp_slot_pools_init(&pools);
    static int objs[32];
    wr_warp_slots a = {0}, b = {0}, kept = {0};
    for (uint32_t w = 1; w < 32; w++)
        *wr_warp_slot_ref(&a, w, &pools) = &objs[w];
    cr_assert_eq(a.cap, 31);
    *wr_warp_slot_ref(&kept, 3, &pools) = &objs[3];
    wr_warp_slots_free(&a, &pools, NULL, NULL);
    cr_assert_eq(a.cap, 0);
    cr_assert_null(a.more);
    for (uint32_t top = 1; top < 32; top++) {
        *wr_warp_slot_ref(&b, top, &pools) = &objs[top];
        cr_assert_geq(b.cap, top);
        for (uint32_t w = 1; w < 32; w++)
            cr_assert_eq(wr_warp_slot(&b, w), w <= top ? &objs[w] : NULL, "top %u warp %u", top, w);
    }
    cr_assert_eq(wr_warp_slot(&kept, 3), &objs[3], "another block's array untouched");
    wr_warp_slot_pools_release(&pools);   /* b's and kept's arrays go with it */
}

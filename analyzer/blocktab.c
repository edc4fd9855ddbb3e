#include "blocktab.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Blocks are scheduled roughly in index order, so the resident ones have
 * neighbouring indices: eight consecutive blocks of an epoch hash to eight
 * consecutive slots (two cache lines), and groups of eight are spread by
 * Fibonacci hashing, which takes the product's top bits: consecutive groups
 * then land as far apart as the table allows.  (The low bits of the high
 * half, used before, step by a constant for consecutive groups; their runs
 * of eight met and chained: a 470 K-block launch cost 12.6 probes per
 * lookup, now none.) */
static inline uint32_t slot_of(uint32_t epoch, uint32_t block, uint32_t cap)
{
    uint64_t k = ((uint64_t)epoch << 32 | (block >> 3)) * 0x9E3779B97F4A7C15ull;
    unsigned group_bits = (unsigned)__builtin_ctz(cap) - 3u;   /* cap >= 256 */
    return (uint32_t)(k >> (64u - group_bits)) * 8u + (block & 7u);
}

/* Tables of a few hundred thousand blocks and more are regions (xalloc.h):
 * they fill densely and are rebuilt at every doubling. */
static bool slots_are_region(uint32_t cap)
{
    return !WR_UNDER_ASAN && (size_t)cap * sizeof(wr_blocktab_slot) >= WR_REGION_ALIGN;
}

static wr_blocktab_slot *slots_alloc(uint32_t cap)
{
    if (slots_are_region(cap))
        return wr_region_alloc((size_t)cap * sizeof(wr_blocktab_slot));
    return xcalloc(cap, sizeof(wr_blocktab_slot));
}

static void slots_free(wr_blocktab_slot *slots, uint32_t cap)
{
    if (slots_are_region(cap))
        wr_region_free(slots, (size_t)cap * sizeof(wr_blocktab_slot));
    else
        free(slots);
}

static void insert(wr_blocktab_slot *slots, uint32_t cap, wr_blocktab_slot s)
{
    uint32_t j = slot_of(s.epoch, s.block, cap);
    while (slots[j].val)
        j = (j + 1) & (cap - 1);
    slots[j] = s;
}

void *wr_blocktab_get(const wr_blocktab *t, uint32_t epoch, uint32_t block)
{
    if (!t->cap)
        return NULL;
    for (uint32_t j = slot_of(epoch, block, t->cap); t->slots[j].val; j = (j + 1) & (t->cap - 1))
        if (t->slots[j].epoch == epoch && t->slots[j].block == block)
            return t->slots[j].val;
    return NULL;
}

void wr_blocktab_put(wr_blocktab *t, uint32_t epoch, uint32_t block, void *val)
{
    if ((t->count + 1) * 2 > t->cap) {
        uint32_t ncap = t->cap ? t->cap * 2 : 256;
        wr_blocktab_slot *ns = slots_alloc(ncap);
        for (uint32_t i = 0; i < t->cap; i++)
            if (t->slots[i].val)
                insert(ns, ncap, t->slots[i]);
        slots_free(t->slots, t->cap);
        t->slots = ns;
        t->cap = ncap;
    }
    insert(t->slots, t->cap, (wr_blocktab_slot){epoch, block, val});
    t->count++;
}

void wr_blocktab_filter(wr_blocktab *t, wr_blocktab_keep_fn keep,
                        void (*drop)(void *val, void *ctx), void *ctx)
{
    if (!t->count)
        return;
    /* The kept entries are first packed to the front of the old array, then
     * rehashed into a table sized for them: at most that small table is
     * allocated beside the old one (a copy at the old size was the peak of
     * a run whose million-block launch ended), and a table a big launch
     * grew shrinks again.  Rebuilt rather than deleted in place: linear
     * probing needs no tombstones. */
    wr_blocktab_slot *old = t->slots;
    uint32_t oldcap = t->cap, kept = 0;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!old[i].val)
            continue;
        if (keep(old[i].epoch, old[i].block, ctx))
            old[kept++] = old[i];
        else
            drop(old[i].val, ctx);
    }
    uint32_t cap = 256;
    while (cap < 2 * kept)
        cap *= 2;
    t->slots = slots_alloc(cap);
    t->cap = cap;
    t->count = kept;
    for (uint32_t i = 0; i < kept; i++)
        insert(t->slots, cap, old[i]);
    slots_free(old, oldcap);
}

bool wr_blocktab_keeps_none(const wr_blocktab *t, wr_blocktab_keep_fn keep, void *ctx)
{
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slots[i].val && keep(t->slots[i].epoch, t->slots[i].block, ctx))
            return false;
    return true;
}

void wr_blocktab_free(wr_blocktab *t, void (*drop)(void *val, void *ctx), void *ctx)
{
    for (uint32_t i = 0; drop && i < t->cap; i++)
        if (t->slots[i].val)
            drop(t->slots[i].val, ctx);
    slots_free(t->slots, t->cap);
    *t = (wr_blocktab){0};
}

/* Slots per array of each pool: warps 1..31 in arrays of 1, 2, 4, 8, 16
 * and 31. */
static uint32_t slots_of_size(unsigned size)
{
    return size + 1 < WR_WARP_SLOT_SIZES ? 1u << size : 31u;
}

static unsigned size_for(uint32_t warp)
{
    unsigned size = 0;
    while (slots_of_size(size) < warp)
        size++;
    return size;
}

void wr_warp_slot_pools_init(wr_warp_slot_pools *p)
{
    for (unsigned i = 0; i < WR_WARP_SLOT_SIZES; i++)
        p->by_size[i] = (wr_pool){.size = slots_of_size(i) * sizeof(void *)};
}

void wr_warp_slot_pools_release(wr_warp_slot_pools *p)
{
    for (unsigned i = 0; i < WR_WARP_SLOT_SIZES; i++)
        wr_pool_release(&p->by_size[i]);
}

void **wr_warp_slot_ref(wr_warp_slots *s, uint32_t warp, wr_warp_slot_pools *pools)
{
    warp &= 31u;
    if (!warp)
        return &s->first;
    if (warp > s->cap) {
        unsigned size = size_for(warp);
        void **more = wr_pool_get(&pools->by_size[size]);   /* zeroed: no warps */
        if (s->cap) {
            memcpy(more, s->more, s->cap * sizeof *more);
            wr_pool_put(&pools->by_size[size_for(s->cap)], s->more);
        }
        s->more = more;
        s->cap = slots_of_size(size);
    }
    return &s->more[warp - 1];
}

void wr_warp_slots_free(wr_warp_slots *s, wr_warp_slot_pools *pools,
                        void (*drop)(void *obj, void *ctx), void *ctx)
{
    if (drop) {
        if (s->first)
            drop(s->first, ctx);
        for (uint32_t i = 0; i < s->cap; i++)
            if (s->more[i])
                drop(s->more[i], ctx);
    }
    if (s->cap)
        wr_pool_put(&pools->by_size[size_for(s->cap)], s->more);
    *s = (wr_warp_slots){0};
}

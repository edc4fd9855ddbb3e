#include "blocktab.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define GROUP_MASK (WR_BLOCKTAB_GROUP - 1u)

/* Fibonacci hashing of (epoch, group): consecutive groups of a launch land
 * far apart, so runs of linear probing stay short. */
static inline uint32_t slot_of(uint32_t epoch, uint32_t group, uint32_t cap)
{
    uint64_t k = ((uint64_t)epoch << 32 | group) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> (64u - (unsigned)__builtin_ctz(cap)));
}

/* Directories of 2 MiB and more (over 64 K groups: 2 M blocks) are
 * regions (xalloc.h): they fill densely and are rebuilt at every doubling. */
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
    uint32_t j = slot_of(s.epoch, s.group, cap);
    while (slots[j].g)
        j = (j + 1) & (cap - 1);
    slots[j] = s;
}

static wr_blocktab_group *group_find(const wr_blocktab *t, uint32_t epoch, uint32_t group)
{
    if (!t->cap)
        return NULL;
    for (uint32_t j = slot_of(epoch, group, t->cap); t->slots[j].g; j = (j + 1) & (t->cap - 1))
        if (t->slots[j].group == group && t->slots[j].epoch == epoch)
            return t->slots[j].g;
    return NULL;
}

void **wr_blocktab_ref(const wr_blocktab *t, uint32_t epoch, uint32_t block)
{
    wr_blocktab_group *g = group_find(t, epoch, block >> WR_BLOCKTAB_GROUP_BITS);
    return g && g->vals[block & GROUP_MASK] ? &g->vals[block & GROUP_MASK] : NULL;
}

void *wr_blocktab_get(const wr_blocktab *t, uint32_t epoch, uint32_t block)
{
    void **ref = wr_blocktab_ref(t, epoch, block);
    return ref ? *ref : NULL;
}

/* The group stays, empty or not, until the next filter: probing needs no
 * tombstones. */
void wr_blocktab_remove(wr_blocktab *t, uint32_t epoch, uint32_t block)
{
    wr_blocktab_group *g = group_find(t, epoch, block >> WR_BLOCKTAB_GROUP_BITS);
    if (!g || !g->vals[block & GROUP_MASK])
        return;
    g->vals[block & GROUP_MASK] = NULL;
    g->present &= ~(1u << (block & GROUP_MASK));
    t->count--;
}

/* A directory for n groups, at most half full; the old one's groups moved in. */
static void rebuild(wr_blocktab *t, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    wr_blocktab_slot *old = t->slots;
    uint32_t oldcap = t->cap;
    t->slots = slots_alloc(cap);
    t->cap = cap;
    for (uint32_t i = 0; i < oldcap; i++)
        if (old[i].g)
            insert(t->slots, cap, old[i]);
    slots_free(old, oldcap);
}

void wr_blocktab_put(wr_blocktab *t, uint32_t epoch, uint32_t block, void *val)
{
    uint32_t group = block >> WR_BLOCKTAB_GROUP_BITS;
    wr_blocktab_group *g = group_find(t, epoch, group);
    if (!g) {
        if ((t->ngroups + 1) * 2 > t->cap)
            rebuild(t, t->ngroups + 1);
        if (!t->groups.size)
            t->groups.size = sizeof(wr_blocktab_group);
        g = wr_pool_get(&t->groups);
        insert(t->slots, t->cap, (wr_blocktab_slot){epoch, group, g});
        t->ngroups++;
    }
    g->vals[block & GROUP_MASK] = val;
    g->present |= 1u << (block & GROUP_MASK);
    t->count++;
}

void wr_blocktab_filter(wr_blocktab *t, wr_blocktab_keep_fn keep,
                        void (*drop)(void *val, void *ctx), void *ctx)
{
    if (!t->ngroups)
        return;
    /* Groups left empty go back to the pool and their slots are cleared;
     * the directory is then rebuilt for the groups kept, so that a
     * directory a big launch grew shrinks again (linear probing needs no
     * tombstones). */
    for (uint32_t i = 0; i < t->cap; i++) {
        wr_blocktab_slot *s = &t->slots[i];
        if (!s->g)
            continue;
        uint32_t first = s->group << WR_BLOCKTAB_GROUP_BITS;
        for (uint32_t x = s->g->present; x; x &= x - 1) {
            unsigned k = (unsigned)__builtin_ctz(x);
            if (keep(s->epoch, first | k, ctx))
                continue;
            drop(s->g->vals[k], ctx);
            s->g->vals[k] = NULL;
            s->g->present &= ~(1u << k);
            t->count--;
        }
        if (!s->g->present) {
            wr_pool_put(&t->groups, s->g);
            s->g = NULL;
            t->ngroups--;
        }
    }
    if (!t->ngroups)
        wr_pool_release(&t->groups);
    rebuild(t, t->ngroups);
}

bool wr_blocktab_keeps_none(const wr_blocktab *t, wr_blocktab_keep_fn keep, void *ctx)
{
    for (uint32_t i = 0; i < t->cap; i++) {
        const wr_blocktab_slot *s = &t->slots[i];
        if (!s->g)
            continue;
        for (uint32_t x = s->g->present; x; x &= x - 1)
            if (keep(s->epoch, s->group << WR_BLOCKTAB_GROUP_BITS | (uint32_t)__builtin_ctz(x), ctx))
                return false;
    }
    return true;
}

void wr_blocktab_free(wr_blocktab *t, void (*drop)(void *val, void *ctx), void *ctx)
{
    for (uint32_t i = 0; drop && i < t->cap; i++) {
        const wr_blocktab_group *g = t->slots[i].g;
        if (!g)
            continue;
        for (uint32_t x = g->present; x; x &= x - 1)
            drop(g->vals[__builtin_ctz(x)], ctx);
    }
    slots_free(t->slots, t->cap);
    wr_pool_release(&t->groups);
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

#include "blockstate.h"

#include <string.h>

void wr_blockstate_init(wr_blockstate *s, size_t block_size, size_t warp_size)
{
    memset(s, 0, sizeof *s);
    s->block_pool.size = block_size;
    s->warp_pool.size = warp_size;
    wr_warp_slot_pools_init(&s->slot_pools);
}

wr_block_head *wr_blockstate_block(wr_blockstate *s, uint32_t epoch, uint32_t block, bool create)
{
    wr_block_head *b = wr_blocktab_get(&s->tab, epoch, block);
    if (b || !create)
        return b;
    b = wr_pool_get(&s->block_pool);
    b->epoch = epoch;
    b->block = block;
    wr_blocktab_put(&s->tab, epoch, block, b);
    return b;
}

void *wr_blockstate_warp(wr_blockstate *s, wr_block_head *b, uint32_t warp)
{
    void **slot = wr_warp_slot_ref(&b->warps, warp, &s->slot_pools);
    if (!*slot)
        *slot = wr_pool_get(&s->warp_pool);
    return *slot;
}

void wr_blockstate_locate_slow(wr_blockstate *s, wr_epochs *ep, wr_blockstate_recent *r,
                               uint32_t launch, uint32_t block, uint32_t warp)
{
    uint32_t epoch = wr_blockstate_epoch_of(s, ep, launch);
    wr_block_head *b = wr_blockstate_block(s, epoch, block, true);
    *r = (wr_blockstate_recent){.launch = launch, .block = block, .warp = warp, .epoch = epoch,
                                .b = b, .w = wr_blockstate_warp(s, b, warp)};
}

typedef struct warp_drop {
    wr_blockstate *s;
    void (*drop_warp)(void *w, void *ctx);
    void *ctx;
} warp_drop;

static void drop_one_warp(void *w, void *ctx)
{
    warp_drop *d = ctx;
    if (d->drop_warp)
        d->drop_warp(w, d->ctx);
    wr_pool_put(&d->s->warp_pool, w);
}

void wr_blockstate_drop(wr_blockstate *s, wr_block_head *b, void (*drop_warp)(void *w, void *ctx),
                        void *ctx)
{
    warp_drop d = {s, drop_warp, ctx};
    wr_warp_slots_free(&b->warps, &s->slot_pools, drop_one_warp, &d);
    wr_pool_put(&s->block_pool, b);
}

typedef struct purge_ctx {
    wr_epochs_purge rule;
    void (*drop_block)(wr_block_head *b, void *ctx);
    void *ctx;
} purge_ctx;

static bool keep_block(uint32_t epoch, uint32_t block, void *ctx)
{
    return wr_epochs_purge_keeps(&((purge_ctx *)ctx)->rule, epoch, block == UINT32_MAX);
}

static void drop_purged_block(void *val, void *ctx)
{
    purge_ctx *pc = ctx;
    pc->drop_block(val, pc->ctx);
}

static void forget_recent(wr_blockstate *s)
{
    memset(s->recent, 0, sizeof s->recent);
    s->memo_launch = 0;
}

/* Every block and warp object, and the warp arrays, go at once. */
static void release_pools(wr_blockstate *s)
{
    wr_pool_release(&s->block_pool);
    wr_pool_release(&s->warp_pool);
    wr_warp_slot_pools_release(&s->slot_pools);
    forget_recent(s);
}

bool wr_blockstate_purge(wr_blockstate *s, const wr_epochs *ep, uint32_t newest, bool all_pooled,
                         void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    if (!s->tab.count)
        return false;
    purge_ctx pc = {wr_epochs_purge_begin(ep, newest, &s->purged_at), drop_block, ctx};
    bool whole = all_pooled && wr_blocktab_keeps_none(&s->tab, keep_block, &pc);
    if (whole) {
        wr_blocktab_free(&s->tab, NULL, NULL);
        release_pools(s);
    } else {
        wr_blocktab_filter(&s->tab, keep_block, drop_purged_block, &pc);
        forget_recent(s);
    }
    return whole;
}

typedef struct free_ctx {
    void (*drop_block)(wr_block_head *b, void *ctx);
    void *ctx;
} free_ctx;

static void drop_block_at_end(void *val, void *ctx)
{
    free_ctx *fc = ctx;
    fc->drop_block(val, fc->ctx);
}

void wr_blockstate_free(wr_blockstate *s, void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    free_ctx fc = {drop_block, ctx};
    wr_blocktab_free(&s->tab, drop_block ? drop_block_at_end : NULL, &fc);
    release_pools(s);
}

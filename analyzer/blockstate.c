#include "blockstate.h"

#include <stddef.h>
#include <string.h>

/* ---- retired records ----
 * A retired block's table value is its record's address + 1 (records, like
 * block objects, are at least 8-byte aligned).  A record: a header, then
 * (warp, ring entries, older entries) for each warp with entries, padded
 * to 8 bytes, then those warps' entries in the same order, each warp's
 * ring newest first, then its older entries (access_ring.h), then, where
 * the engine kept some (wr_blockstate_retire_keeping), its keep_size bytes. */
typedef struct retired {
    uint16_t nwarps, nents;
    uint8_t cls;
    uint8_t kept;               /* the engine's kept bytes follow the entries */
    uint8_t pad[2];
    uint8_t warp_counts[];      /* 3 x nwarps: warp, ring count, older count */
} retired;

_Static_assert(sizeof(retired) + 3 * 32 + 32 * (WR_ACCESS_RING + WR_RING_OLDER) * sizeof(wr_ring_ent) +
                       WR_BLOCKSTATE_KEEP_MAX <=
                   (size_t)1024 << (WR_RETIRED_CLASSES - 1 - 16),
               "the largest record (32 warps, full rings and older entries) fits the largest class");

static bool is_retired(const void *val) { return (uintptr_t)val & 1u; }
static retired *retired_of(void *val) { return (retired *)((uintptr_t)val - 1u); }

static size_t counts_bytes(unsigned nwarps) { return (3u * nwarps + 7u) & ~(size_t)7u; }

static wr_ring_ent *retired_ents(const retired *r)
{
    return (wr_ring_ent *)((unsigned char *)r + sizeof *r + counts_bytes(r->nwarps));
}

static unsigned class_of(size_t bytes)
{
    if (bytes <= 512)
        return (unsigned)((bytes + 31) / 32 - 1);
    unsigned cls = 16;
    for (size_t top = 1024; top < bytes; top *= 2)
        cls++;
    return cls;
}

static size_t class_bytes(unsigned cls)
{
    return cls < 16 ? 32u * (cls + 1) : (size_t)1024 << (cls - 16);
}

static void retired_free(wr_blockstate *s, retired *r)
{
    wr_pool_put(&s->retired_pools[r->cls], r);
}

static const wr_access_ring *ring_of(const wr_blockstate *s, const void *warp_obj)
{
    return (const wr_access_ring *)((const unsigned char *)warp_obj + s->ring_offset);
}

void wr_blockstate_init(wr_blockstate *s, size_t block_size, size_t warp_size, size_t ring_offset)
{
    memset(s, 0, sizeof *s);
    s->block_pool.size = block_size;
    s->warp_pool.size = warp_size;
    s->ring_offset = ring_offset;
    for (unsigned c = 0; c < WR_RETIRED_CLASSES; c++)
        s->retired_pools[c].size = class_bytes(c);
    wr_warp_slot_pools_init(&s->slot_pools);
}

wr_block_head *wr_blockstate_block(wr_blockstate *s, uint32_t epoch, uint32_t block, bool create)
{
    void **ref = wr_blocktab_ref(&s->tab, epoch, block);
    if (ref && !is_retired(*ref))
        return *ref;
    if (!create)
        return NULL;
    wr_block_head *b = wr_pool_get(&s->block_pool);
    b->epoch = epoch;
    b->block = block;
    if (ref) {   /* accesses after the block's exit: a fresh start */
        retired_free(s, retired_of(*ref));
        *ref = b;
    } else {
        wr_blocktab_put(&s->tab, epoch, block, b);
    }
    return b;
}

/* The block's warp objects are in recent slots (block * 8 + warp) mod
 * WR_BLOCKSTATE_RECENT, where warp is the index a trace gave, which the
 * objects take mod 32: warp w's object may sit in the slot of w or of
 * w + 32 (a malformed trace's warp 40 is warp 8).  Both are cleared when
 * they name the block's object. */
static void forget_recent_of(wr_blockstate *s, const wr_block_head *b, uint32_t warp)
{
    for (uint32_t k = 0; k < 2; k++) {
        wr_blockstate_recent *r = &s->recent[(b->block * 8u + warp + 32u * k) % WR_BLOCKSTATE_RECENT];
        if (r->b == b)
            *r = (wr_blockstate_recent){0};
    }
}

void wr_blockstate_retire(wr_blockstate *s, uint32_t epoch, uint32_t block,
                          void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    wr_blockstate_retire_keeping(s, epoch, block, NULL, false, drop_block, ctx);
}

/* Whether a retired record keeps ring entry e (wr_blockstate_retire_keeping). */
static bool retired_keeps(const wr_ring_ent *e, bool shared_died)
{
    return !shared_died || wr_ring_space(e) != WR_SPACE_SHARED;
}

void wr_blockstate_retire_keeping(wr_blockstate *s, uint32_t epoch, uint32_t block,
                                  const void *keep, bool shared_died,
                                  void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    if (!s->keep_size)
        keep = NULL;
    void **ref = wr_blocktab_ref(&s->tab, epoch, block);
    if (!ref || is_retired(*ref))
        return;
    wr_block_head *b = *ref;
    /* the warps that have objects: warp 0 inline, the others in the array */
    const void *objs[32];
    uint8_t warps[32], counts[32], older[32];
    unsigned nobjs = 0, nwarps = 0, nents = 0;
    if (b->warps.first)
        objs[nobjs] = b->warps.first, warps[nobjs++] = 0;
    for (uint32_t i = 0; i < b->warps.cap; i++)
        if (b->warps.more[i])
            objs[nobjs] = b->warps.more[i], warps[nobjs++] = (uint8_t)(i + 1);
    for (unsigned k = 0; k < nobjs; k++) {
        forget_recent_of(s, b, warps[k]);
        const wr_access_ring *ring = ring_of(s, objs[k]);
        unsigned n = wr_ring_count(ring), kept = 0;
        for (unsigned i = 0; i < n; i++)
            kept += retired_keeps(wr_ring_newest(ring, i), shared_died);
        counts[k] = (uint8_t)kept;
        kept = 0;
        for (unsigned i = 0; i < ring->nolder; i++)
            kept += retired_keeps(&ring->older[i], shared_died);
        older[k] = (uint8_t)kept;
        nwarps += counts[k] + older[k] != 0;
        nents += counts[k] + older[k];
    }
    if (!nents && !keep) {   /* nothing a report or the engine could ask for */
        drop_block(b, ctx);
        wr_blocktab_remove(&s->tab, epoch, block);
        return;
    }
    size_t bytes = sizeof(retired) + counts_bytes(nwarps) + nents * sizeof(wr_ring_ent) +
                   (keep ? s->keep_size : 0);
    unsigned cls = class_of(bytes);
    retired *r = wr_pool_get(&s->retired_pools[cls]);
    *r = (retired){.nwarps = (uint16_t)nwarps, .nents = (uint16_t)nents, .cls = (uint8_t)cls,
                   .kept = keep != NULL};
    wr_ring_ent *e = retired_ents(r);
    uint8_t *wc = r->warp_counts;
    for (unsigned k = 0; k < nobjs; k++) {
        if (!counts[k] && !older[k])
            continue;
        *wc++ = warps[k];
        *wc++ = counts[k];
        *wc++ = older[k];
        const wr_access_ring *ring = ring_of(s, objs[k]);
        for (unsigned i = 0, n = wr_ring_count(ring); i < n; i++)
            if (retired_keeps(wr_ring_newest(ring, i), shared_died))
                *e++ = *wr_ring_newest(ring, i);
        for (unsigned i = 0; i < ring->nolder; i++)   /* ring->older may be NULL */
            if (retired_keeps(&ring->older[i], shared_died))
                *e++ = ring->older[i];
    }
    if (keep)   /* copied before drop_block frees what it points into */
        memcpy(retired_ents(r) + nents, keep, s->keep_size);
    drop_block(b, ctx);
    *ref = (void *)((uintptr_t)r + 1u);
}

const void *wr_blockstate_kept(const wr_blockstate *s, uint32_t epoch, uint32_t block)
{
    void **ref = wr_blocktab_ref(&s->tab, epoch, block);
    if (!ref || !is_retired(*ref))
        return NULL;
    const retired *r = retired_of(*ref);
    return r->kept ? retired_ents(r) + r->nents : NULL;
}

const wr_ring_ent *wr_blockstate_find_access(const wr_blockstate *s, uint32_t epoch, uint32_t block,
                                             uint32_t warp, unsigned lane, uint8_t space,
                                             uint64_t addr, uint64_t skip_seq, uint32_t site,
                                             unsigned skip_kinds)
{
    void **ref = wr_blocktab_ref(&s->tab, epoch, block);
    if (!ref)
        return NULL;
    warp &= 31u;
    if (!is_retired(*ref)) {
        const void *obj = wr_warp_slot(&((const wr_block_head *)*ref)->warps, warp);
        return obj ? wr_ring_find(ring_of(s, obj), lane, space, addr, skip_seq, site, skip_kinds) : NULL;
    }
    const retired *r = retired_of(*ref);
    const wr_ring_ent *e = retired_ents(r);
    for (unsigned k = 0; k < r->nwarps; e += r->warp_counts[3 * k + 1] + r->warp_counts[3 * k + 2], k++) {
        if (r->warp_counts[3 * k] != warp)
            continue;
        unsigned nring = r->warp_counts[3 * k + 1];
        for (unsigned i = 0; i < nring; i++)
            if (wr_ring_ent_matches(&e[i], lane, space, addr, skip_seq, site, skip_kinds))
                return &e[i];
        return wr_ring_older_find(e + nring, r->warp_counts[3 * k + 2], lane, space, addr, skip_seq,
                                  site, skip_kinds);
    }
    return NULL;
}

const wr_ring_ent *wr_blockstate_find_word_access(const wr_blockstate *s, uint32_t epoch,
                                                  uint32_t block, uint32_t warp, unsigned lane,
                                                  uint8_t space, uint32_t owner,
                                                  bool accessor_is_owner, uint64_t addr,
                                                  uint64_t skip_seq, uint32_t site,
                                                  unsigned skip_kinds)
{
    if (space != WR_SPACE_SHARED)
        return wr_blockstate_find_access(s, epoch, block, warp, lane, space, addr, skip_seq, site,
                                         skip_kinds);
    const wr_ring_ent *own =
        accessor_is_owner ? wr_blockstate_find_access(s, epoch, block, warp, lane, space, addr,
                                                      skip_seq, site, skip_kinds)
                          : NULL;
    const wr_ring_ent *remote =
        wr_blockstate_find_access(s, epoch, block, warp, lane, WR_SPACE_DSMEM,
                                  wr_dsmem_addr(owner, (uint32_t)addr), skip_seq, site, skip_kinds);
    if (!own || !remote)
        return own ? own : remote;
    /* the newer: the smaller distance back from the asking access */
    return ((skip_seq - remote->tag) & WR_RING_SEQ_MASK) < ((skip_seq - own->tag) & WR_RING_SEQ_MASK)
               ? remote
               : own;
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
    wr_blockstate *s;
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
    if (is_retired(val))
        retired_free(pc->s, retired_of(val));
    else
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
    for (unsigned c = 0; c < WR_RETIRED_CLASSES; c++)
        wr_pool_release(&s->retired_pools[c]);
    wr_warp_slot_pools_release(&s->slot_pools);
    forget_recent(s);
}

bool wr_blockstate_purge(wr_blockstate *s, const wr_epochs *ep, uint32_t newest, bool all_pooled,
                         void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    if (!s->tab.count)
        return false;
    purge_ctx pc = {wr_epochs_purge_begin(ep, newest, &s->purged_at), s, drop_block, ctx};
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
    if (!is_retired(val))   /* records own nothing: they go with the pools */
        fc->drop_block(val, fc->ctx);
}

void wr_blockstate_free(wr_blockstate *s, void (*drop_block)(wr_block_head *b, void *ctx), void *ctx)
{
    free_ctx fc = {drop_block, ctx};
    wr_blocktab_free(&s->tab, drop_block ? drop_block_at_end : NULL, &fc);
    release_pools(s);
}

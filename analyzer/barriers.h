/*
 * Block-barrier bookkeeping shared by the engines that keep per-block state
 * (fsm, lockset): which warps wait at each of the 16 named barriers and how
 * many threads arrived.  A barrier completes when `expected` threads have
 * arrived, or when a waiting warp arrives at it again or acts again (trace
 * order is consistent with synchronisation: it could only go on because the
 * barrier completed).  What completion means is the engine's: the `done`
 * callback gets the warps that took part, before the barrier is reset.
 */
#ifndef WARPRACE_BARRIERS_H
#define WARPRACE_BARRIERS_H

#include <stdint.h>

#include "warprace/event.h"
#include "xalloc.h"

typedef struct wr_block_barriers {
    uint32_t pending;           /* warps waiting in some incomplete barrier */
    struct {
        uint32_t arrived;       /* threads */
        uint32_t warps;         /* mask of arrived warps */
    } bar[16];
} wr_block_barriers;

typedef void (*wr_barrier_done)(void *ctx, uint32_t warps);

static inline void wr_barrier_complete(wr_block_barriers *t, unsigned id, wr_barrier_done done,
                                       void *ctx)
{
    done(ctx, t->bar[id].warps);
    t->bar[id].warps = 0;
    t->bar[id].arrived = 0;
    t->pending = 0;
    for (unsigned i = 0; i < 16; i++)
        t->pending |= t->bar[i].warps;
}

/* A warp arrives at barrier br->barrier_id. */
static inline void wr_barrier_arrive(wr_block_barriers *t, const wr_barrier *br,
                                     wr_barrier_done done, void *ctx)
{
    unsigned id = br->barrier_id & 15u;
    uint32_t expected = br->expected;
    /* A cluster or grid barrier gathers every thread of the block too, so
     * it is a block barrier here (what it orders across blocks is the
     * engine's to model or not); the block's share of `expected` is not
     * known, so it completes when one of its warps goes on. */
    if (br->scope != WR_BAR_BLOCK) {
        id = 0;
        expected = 0;
    }
    uint32_t bit = 1u << (br->warp & 31u);
    if (t->bar[id].warps & bit)
        wr_barrier_complete(t, id, done, ctx);
    t->bar[id].warps |= bit;
    t->bar[id].arrived += (uint32_t)__builtin_popcount(br->active_mask);
    t->pending |= bit;
    if (expected && t->bar[id].arrived >= expected)
        wr_barrier_complete(t, id, done, ctx);
}

/* The warps of warp_bits act again: the barriers they wait at completed. */
static inline void wr_barrier_wake(wr_block_barriers *t, uint32_t warp_bits, wr_barrier_done done,
                                   void *ctx)
{
    if (!(t->pending & warp_bits))
        return;
    for (unsigned i = 0; i < 16; i++)
        if (t->bar[i].warps & warp_bits)
            wr_barrier_complete(t, i, done, ctx);
}

/* Most blocks wait at no barrier most of the time, and grids of small
 * blocks keep a million blocks: their barrier state (132 bytes) exists only
 * while some barrier of the block is incomplete, taken from `pool` at an
 * arrival and given back once none is pending (*t NULL: none pending). */
static inline void wr_barrier_release_idle(wr_block_barriers **t, wr_pool *pool)
{
    if (*t && !(*t)->pending) {
        wr_pool_put(pool, *t);
        *t = NULL;
    }
}

static inline void wr_barrier_arrive_lazy(wr_block_barriers **t, wr_pool *pool,
                                          const wr_barrier *br, wr_barrier_done done, void *ctx)
{
    if (!*t)
        *t = wr_pool_get(pool);
    wr_barrier_arrive(*t, br, done, ctx);
    wr_barrier_release_idle(t, pool);
}

static inline void wr_barrier_wake_lazy(wr_block_barriers **t, wr_pool *pool, uint32_t warp_bits,
                                        wr_barrier_done done, void *ctx)
{
    if (!*t)
        return;
    wr_barrier_wake(*t, warp_bits, done, ctx);
    wr_barrier_release_idle(t, pool);
}

/* ---- barriers that gather blocks, as fsm and lockset order blocks ----
 *
 * Neither engine keeps clocks across blocks.  What they keep instead, per
 * block: how many cluster and grid barriers its share completed, and for
 * the latest two a stamp of the block at that barrier (the engine's own
 * count, modulo what its cells keep: fsm's block-barrier count, lockset's
 * barrier generation), at least the stamp of every access the block made
 * before it arrived and below that of every access after.  An access of
 * block X with stamp s came before X arrived at a barrier that the current
 * block Y has passed, one that gathers both (a cluster barrier of their
 * cluster, or a grid barrier), when s is at most X's stamp at the k-th
 * such barrier, k being Y's count of them: the k-th barrier of X is the
 * k-th of Y, as every block of a cluster (grid) takes part in every one of
 * its barriers.  Not told (false) when X is more than one barrier behind
 * or ahead of that. */
typedef struct wr_cross_hist {
    uint32_t n, stamp[2];       /* [k & 1]: at the k-th */
} wr_cross_hist;

typedef struct wr_cross_bars {
    wr_cross_hist cluster;      /* cluster and grid barriers: blocks of one cluster */
    wr_cross_hist grid;         /* grid barriers: any blocks of the launch */
    uint8_t arriving;           /* the wr_barrier_scope under way, 0 none */
} wr_cross_bars;

/* A warp of the block arrives at cluster or grid barrier br: the block's
 * share is a barrier of all its threads, `threads` of them (0: not known;
 * it then completes when one of its warps goes on), the one returned. */
static inline wr_barrier wr_cross_arrive(wr_cross_bars *x, const wr_barrier *br, uint64_t threads)
{
    if (!x->arriving)
        x->arriving = br->scope;
    wr_barrier share = *br;
    share.scope = WR_BAR_BLOCK;
    share.barrier_id = 0;
    share.expected = threads > UINT32_MAX ? 0 : (uint32_t)threads;
    return share;
}

/* The block's share of the barrier under way (if any) completed; `stamp`
 * as above. */
static inline void wr_cross_done(wr_cross_bars *x, uint32_t stamp)
{
    if (!x || !x->arriving)
        return;
    x->cluster.n++;
    x->cluster.stamp[x->cluster.n & 1u] = stamp;
    if (x->arriving == WR_BAR_GRID) {
        x->grid.n++;
        x->grid.stamp[x->grid.n & 1u] = stamp;
    }
    x->arriving = 0;
}

/* Did block X's access with stamp s (modulo mask + 1, a power of two: the
 * cell's bits) come before X arrived at a barrier gathering X and Y (of
 * one cluster: same_cluster) that Y has passed?  Stamps compared within
 * half the modulus. */
static inline bool wr_cross_before(const wr_cross_bars *x, const wr_cross_bars *y, bool same_cluster,
                                   uint32_t s, uint32_t mask)
{
    if (!x || !y)
        return false;
    const wr_cross_hist *hx = same_cluster ? &x->cluster : &x->grid;
    uint32_t passed = same_cluster ? y->cluster.n : y->grid.n;
    if (!passed || hx->n < passed || hx->n > passed + 1)
        return false;
    return ((hx->stamp[passed & 1u] - s) & mask) <= mask / 2;
}

#endif

/*
 * Block-barrier bookkeeping shared by the engines that keep per-block state
 * (fsm, lockset): who takes part in each phase of the 16 named barriers
 * (and of the block's share of a cluster or grid barrier, slot
 * WR_BAR_SHARE) and how many threads arrived.
 *
 * A phase completes when `expected` threads have arrived, by every mode
 * alike, or when one of its waiters acts again (trace order is consistent
 * with synchronisation: it could only go on because the phase completed;
 * this also covers exited threads).  "Acts again" is by lanes: a warp's
 * lanes may reach a barrier in groups (independent thread scheduling; the
 * recorder saw it on an H200 under back-pressure), and a group that has
 * not arrived yet acting says nothing about the phase the others wait in.  Split barriers (format 1.3,
 * wr_barrier_mode) keep two kinds of participants apart:
 *   - waiters: a SYNC arrival (arrive and wait), or a WAIT at the share for
 *     the phase the warp arrived in;
 *   - arrivers: an ARRIVE or ARRIVE_RELAXED arrival, which counts toward
 *     the phase but goes on: acting again says nothing about the phase,
 *     and arriving again only counts again (as the hardware's counter
 *     does).
 * What completion means is the engine's: the `done` callback gets the
 * phase (its waiters, its arrivers, the largest stamp its releasing
 * arrivals brought) after the slot is reset.
 */
#ifndef WARPRACE_BARRIERS_H
#define WARPRACE_BARRIERS_H

#include <stdbool.h>
#include <stdint.h>

#include "warprace/event.h"
#include "xalloc.h"

enum {
    WR_BAR_SHARE = 16,   /* slot of the block's share of a cluster or grid barrier */
    WR_BAR_SLOTS = 17,
};

typedef struct wr_bar_phase {
    uint32_t arrived;   /* threads counted, by every mode */
    uint32_t waiters;   /* warps waiting for the phase */
    uint32_t arrivers;  /* warps that arrived and went on (and have not waited since) */
    /* 1 + the largest stamp (the engine's, given at arrival) of a releasing
     * arrival (SYNC, ARRIVE); 0: none released anything.  Taken at the
     * arrival because an arriver goes on and its state moves on. */
    uint32_t m;
} wr_bar_phase;

typedef struct wr_block_barriers {
    uint32_t pending;   /* warps waiting in some phase under way */
    uint32_t open;      /* slots whose phase under way has an arrival */
    uint32_t relaxed;   /* slots whose phase under way had an ARRIVE_RELAXED */
    wr_bar_phase bar[WR_BAR_SLOTS];
    uint32_t wait_lanes[32];   /* per warp of pending: the lanes that wait */
} wr_block_barriers;

/* An event's active mask as the lanes that act (0: the whole warp). */
static inline uint32_t wr_barrier_lanes(uint32_t active_mask)
{
    return active_mask ? active_mask : 0xffffffffu;
}

/* slot's phase ph completed; `relaxed`: some arrival of it was
 * ARRIVE_RELAXED (it released nothing) */
typedef void (*wr_barrier_done)(void *ctx, unsigned slot, const wr_bar_phase *ph, bool relaxed);

static inline void wr_barrier_complete(wr_block_barriers *t, unsigned slot, wr_barrier_done done,
                                       void *ctx)
{
    wr_bar_phase ph = t->bar[slot];
    bool relaxed = (t->relaxed >> slot) & 1u;
    t->bar[slot] = (wr_bar_phase){0};
    t->open &= ~(1u << slot);
    t->relaxed &= ~(1u << slot);
    t->pending = 0;
    for (unsigned i = 0; i < WR_BAR_SLOTS; i++)
        t->pending |= t->bar[i].waiters;
    for (uint32_t gone = ph.waiters & ~t->pending; gone; gone &= gone - 1)
        t->wait_lanes[__builtin_ctz(gone)] = 0;
    done(ctx, slot, &ph, relaxed);
}

/* Lanes `lanes` of warp `warp` act again: if some of them wait, the
 * phases the warp waits for completed. */
static inline void wr_barrier_wake(wr_block_barriers *t, uint32_t warp, uint32_t lanes,
                                   wr_barrier_done done, void *ctx)
{
    uint32_t bit = 1u << (warp & 31u);
    if (!(t->pending & bit) || !(t->wait_lanes[warp & 31u] & lanes))
        return;
    for (unsigned i = 0; i < WR_BAR_SLOTS; i++)
        if (t->bar[i].waiters & bit)
            wr_barrier_complete(t, i, done, ctx);
}

/* Warp `warp` arrives at `slot` with `mode` (SYNC, ARRIVE or
 * ARRIVE_RELAXED), `threads` of its lanes; the phase completes at
 * `expected` threads (0: only when a waiter acts again).  `stamp`: the
 * engine's stamp of the warp at its arrival (phase m).  A barrier event is
 * the warp acting again: the phases it waited for completed first (also
 * of other slots: it could not have reached this one otherwise), so the
 * caller takes its stamp after wr_barrier_wake. */
static inline void wr_barrier_arrive(wr_block_barriers *t, unsigned slot, unsigned mode,
                                     uint32_t warp, uint32_t lanes, uint32_t threads,
                                     uint32_t expected, uint32_t stamp, wr_barrier_done done,
                                     void *ctx)
{
    uint32_t bit = 1u << (warp & 31u);
    wr_barrier_wake(t, warp, lanes, done, ctx);
    wr_bar_phase *ph = &t->bar[slot];
    ph->arrived += threads;
    t->open |= 1u << slot;
    if (mode == WR_BARMODE_SYNC) {
        /* an earlier ARRIVE of the warp in this phase now waits too */
        ph->waiters |= bit;
        ph->arrivers &= ~bit;
        t->pending |= bit;
        t->wait_lanes[warp & 31u] |= lanes;
    } else {
        ph->arrivers |= bit;
    }
    if (mode == WR_BARMODE_ARRIVE_RELAXED)
        t->relaxed |= 1u << slot;   /* it counts, and releases nothing */
    else if (stamp >= ph->m)
        ph->m = stamp + 1u;
    if (expected && ph->arrived >= expected)
        wr_barrier_complete(t, slot, done, ctx);
}

/* Warp `warp` waits (WAIT) at `slot` for the phase its last arrival
 * joined.  True when that is the phase under way: the warp is one of its
 * waiters from now on.  False when the warp is no arriver of it (its
 * phase completed before the WAIT, or it never arrived): the engine looks
 * at the completed phase (wr_cross_wait_late). */
static inline bool wr_barrier_wait(wr_block_barriers *t, unsigned slot, uint32_t warp,
                                   uint32_t lanes, wr_barrier_done done, void *ctx)
{
    uint32_t bit = 1u << (warp & 31u);
    wr_barrier_wake(t, warp, lanes, done, ctx);
    wr_bar_phase *ph = &t->bar[slot];
    if (!(ph->arrivers & bit))
        return false;
    ph->arrivers &= ~bit;
    ph->waiters |= bit;
    t->pending |= bit;
    t->wait_lanes[warp & 31u] |= lanes;
    return true;
}

/* Most blocks wait at no barrier most of the time, and grids of small
 * blocks keep a million blocks: their barrier state (284 bytes) exists
 * only while some phase of the block has an arrival, taken from `pool` at
 * an arrival and given back once none has (*t NULL: none).  A block whose
 * warps only ever SYNC holds it from the first arrival of a phase to its
 * completion, as before split barriers; one that keeps an ARRIVE's phase
 * open (a producer/consumer pipeline) holds it throughout. */
static inline void wr_barrier_release_idle(wr_block_barriers **t, wr_pool *pool)
{
    if (*t && !(*t)->open) {
        wr_pool_put(pool, *t);
        *t = NULL;
    }
}

static inline void wr_barrier_arrive_lazy(wr_block_barriers **t, wr_pool *pool, unsigned slot,
                                          unsigned mode, uint32_t warp, uint32_t lanes,
                                          uint32_t threads, uint32_t expected, uint32_t stamp,
                                          wr_barrier_done done, void *ctx)
{
    if (!*t)
        *t = wr_pool_get(pool);
    wr_barrier_arrive(*t, slot, mode, warp, lanes, threads, expected, stamp, done, ctx);
    wr_barrier_release_idle(t, pool);
}

static inline bool wr_barrier_wait_lazy(wr_block_barriers **t, wr_pool *pool, unsigned slot,
                                        uint32_t warp, uint32_t lanes, wr_barrier_done done,
                                        void *ctx)
{
    if (!*t)
        return false;
    bool waits = wr_barrier_wait(*t, slot, warp, lanes, done, ctx);
    wr_barrier_release_idle(t, pool);
    return waits;
}

static inline void wr_barrier_wake_lazy(wr_block_barriers **t, wr_pool *pool, uint32_t warp,
                                        uint32_t lanes, wr_barrier_done done, void *ctx)
{
    if (!*t)
        return;
    wr_barrier_wake(*t, warp, lanes, done, ctx);
    wr_barrier_release_idle(t, pool);
}

/* Is warp an arriver (went on, not waiting) of slot's phase under way? */
static inline bool wr_barrier_is_arriver(const wr_block_barriers *t, unsigned slot, uint32_t warp)
{
    return t && (t->bar[slot].arrivers >> (warp & 31u)) & 1u;
}

/* ---- barriers that gather blocks, as fsm and lockset order blocks ----
 *
 * Neither engine keeps clocks across blocks.  What they keep instead, per
 * block: how many cluster and grid barriers its share completed, and for
 * the latest two a stamp of the block at that barrier (the engine's own
 * count, modulo what its cells keep: fsm's block-barrier count, lockset's
 * barrier generation), at least the stamp of every access the block made
 * before its arrival (a releasing one: SYNC or ARRIVE) and below that of
 * every access after it.  An access of block X with stamp s came before X
 * arrived at a barrier that the current warp of block Y has passed, one
 * that gathers both (a cluster barrier of their cluster, or a grid
 * barrier), when s is at most X's stamp at the k-th such barrier, k being
 * the count of them that warp passed: the k-th barrier of X is the k-th of
 * Y, as every block of a cluster (grid) takes part in every one of its
 * barriers.  Not told (false) when X is more than one barrier behind or
 * ahead of that.
 *
 * Split phases (format 1.3).  X's side: a phase released X's accesses
 * only when some arrival released and none was ARRIVE_RELAXED (which
 * counts and releases nothing); a phase with a relaxed arrival orders no
 * access of X (`ok` clear), whatever its other arrivals did.  Y's side is
 * per warp: one warp of Y may have waited while another only arrived.  A
 * warp passes a phase when it waits for it (SYNC, or its WAIT: at the
 * completion, or at once when the phase completed before the WAIT); one
 * that arrived in the last completed phase and has not waited yet (`late`)
 * has passed one fewer; one whose count is not known (`lost`: it arrived
 * again without waiting for its last phase, or a phase completed without
 * it) passes nothing until it next waits. */
typedef struct wr_cross_hist {
    uint32_t n, stamp[2];       /* [k & 1]: at the k-th */
    uint8_t ok;                 /* bit k & 1: the k-th released X's earlier accesses */
} wr_cross_hist;

typedef struct wr_cross_bars {
    wr_cross_hist cluster;      /* cluster and grid barriers: blocks of one cluster */
    wr_cross_hist grid;         /* grid barriers: any blocks of the launch */
    uint32_t late;              /* warps: arrived in the last completed phase, not waited yet */
    uint32_t lost;              /* warps: how many phases they passed is not known */
    uint32_t done_stamp;        /* the engine's, for a late WAIT of the last completed phase */
    uint8_t arriving;           /* the wr_barrier_scope of the phase under way, 0 none */
    uint8_t done_scope;         /* that of the last completed phase */
} wr_cross_bars;

/* A warp of the block arrives (SYNC, ARRIVE or ARRIVE_RELAXED) at cluster
 * or grid barrier br: the block's share is a phase of slot WR_BAR_SHARE of
 * all its threads, `threads` of them (0: not known; it then completes when
 * one of its waiters goes on), the count returned.  A warp that arrives
 * again without having waited for its last phase loses its count. */
static inline uint32_t wr_cross_arrive(wr_cross_bars *x, const wr_barrier *br, uint64_t threads)
{
    if (!x->arriving)
        x->arriving = br->scope;
    uint32_t bit = 1u << (br->warp & 31u);
    if (x->late & bit) {
        x->late &= ~bit;
        x->lost |= bit;
    }
    return threads > UINT32_MAX ? 0 : (uint32_t)threads;
}

/* The block's share (phase ph, `relaxed` as wr_barrier_done's) completed;
 * `stamp` as above.  Its waiters passed it; its arrivers will at their
 * WAIT; a warp that took no part passed nothing. */
static inline void wr_cross_done(wr_cross_bars *x, const wr_bar_phase *ph, bool relaxed,
                                 uint32_t stamp)
{
    if (!x || !x->arriving)
        return;
    uint8_t ok = ph->m && !relaxed;
    x->cluster.n++;
    x->cluster.stamp[x->cluster.n & 1u] = stamp;
    x->cluster.ok = (uint8_t)((x->cluster.ok & ~(1u << (x->cluster.n & 1u))) |
                              (unsigned)ok << (x->cluster.n & 1u));
    if (x->arriving == WR_BAR_GRID) {
        x->grid.n++;
        x->grid.stamp[x->grid.n & 1u] = stamp;
        x->grid.ok = (uint8_t)((x->grid.ok & ~(1u << (x->grid.n & 1u))) |
                               (unsigned)ok << (x->grid.n & 1u));
    }
    uint32_t part = ph->waiters | ph->arrivers;
    x->lost = (x->lost | ~part) & ~ph->waiters;
    x->late = ph->arrivers;
    x->done_scope = x->arriving;
    x->arriving = 0;
}

/* A warp's WAIT found no phase under way that it arrived in: true when it
 * arrived in the last completed one, which it passes now (the engine takes
 * that phase's completion, done_stamp). */
static inline bool wr_cross_wait_late(wr_cross_bars *x, uint32_t warp)
{
    uint32_t bit = 1u << (warp & 31u);
    if (!x || !(x->late & bit))
        return false;
    x->late &= ~bit;
    x->lost &= ~bit;
    return true;
}

/* How many of the histories' barriers (cluster: cluster and grid ones;
 * else grid ones) warp `warp` of the block has passed; 0 when not known. */
static inline uint32_t wr_cross_passed(const wr_cross_bars *y, uint32_t warp, bool cluster)
{
    uint32_t bit = 1u << (warp & 31u);
    if (y->lost & bit)
        return 0;
    uint32_t n = cluster ? y->cluster.n : y->grid.n;
    if ((y->late & bit) && (cluster || y->done_scope == WR_BAR_GRID))
        n--;
    return n;
}

/* Did block X's access with stamp s (modulo mask + 1, a power of two: the
 * cell's bits) come before X arrived at a barrier gathering X and Y (of
 * one cluster: same_cluster) that warp ywarp of Y has passed, one that
 * released it?  Stamps compared within half the modulus. */
static inline bool wr_cross_before(const wr_cross_bars *x, const wr_cross_bars *y, uint32_t ywarp,
                                   bool same_cluster, uint32_t s, uint32_t mask)
{
    if (!x || !y)
        return false;
    const wr_cross_hist *hx = same_cluster ? &x->cluster : &x->grid;
    uint32_t passed = wr_cross_passed(y, ywarp, same_cluster);
    if (!passed || hx->n < passed || hx->n > passed + 1 || !((hx->ok >> (passed & 1u)) & 1u))
        return false;
    return ((hx->stamp[passed & 1u] - s) & mask) <= mask / 2;
}

#endif

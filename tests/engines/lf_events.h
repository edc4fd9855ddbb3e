/* Event builders and a tiny driver for the lockset / fsm engine tests. */
#ifndef WR_TEST_LF_EVENTS_H
#define WR_TEST_LF_EVENTS_H

#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "finding.h"
#include "warprace/event.h"

typedef struct lf_run {
    const wr_engine_ops *ops;
    void *eng[4];
    wr_findings *fnd[4];
    unsigned shards;
    uint64_t seq;
    uint64_t shadow_words;   /* lf_end: the shards' shadow_words, summed */
} lf_run;

static inline void lf_start(lf_run *r, const wr_engine_ops *ops, unsigned shards)
{
    memset(r, 0, sizeof *r);
    r->ops = ops;
    r->shards = shards;
    for (unsigned i = 0; i < shards; i++) {
        r->fnd[i] = wr_findings_new();
        wr_engine_config cfg = {.shard = i, .shards = shards, .engine_index = 0, .findings = r->fnd[i]};
        r->eng[i] = ops->create(&cfg);
    }
}

static inline void lf_feed(lf_run *r, wr_event ev)
{
    ev.seq = r->seq++;
    for (unsigned i = 0; i < r->shards; i++)
        r->ops->on_event(r->eng[i], &ev);
}

/* Finish and merge every shard into one collector (caller frees). */
static inline wr_findings *lf_end(lf_run *r)
{
    wr_findings *all = wr_findings_new();
    for (unsigned i = 0; i < r->shards; i++) {
        r->ops->finish(r->eng[i]);
        if (r->ops->shadow_words)
            r->shadow_words += r->ops->shadow_words(r->eng[i]);
        wr_findings_merge(all, r->fnd[i]);
        r->ops->destroy(r->eng[i]);
        wr_findings_free(r->fnd[i]);
    }
    return all;
}

static inline size_t lf_groups(wr_findings *f, const wr_race_group **g)
{
    return wr_findings_groups(f, g);
}

static inline uint64_t lf_total(wr_findings *f)
{
    const wr_race_group *g;
    size_t n = wr_findings_groups(f, &g);
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += g[i].count;
    return t;
}

/* A warp access's fields alone: every active lane at addr (UNIFORM). */
static inline wr_access lf_uniform_access(uint64_t addr, uint32_t mask, uint8_t space)
{
    wr_access a;
    memset(&a, 0, sizeof a);
    a.addr_mode = WR_ADDR_UNIFORM;
    a.base = addr;
    a.active_mask = mask;
    a.space = space;
    return a;
}

static inline wr_event lf_launch(uint32_t launch, uint32_t stream)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_KERNEL_LAUNCH;
    e.u.launch.launch = launch;
    e.u.launch.kernel = 1;
    e.u.launch.stream = stream;
    e.u.launch.grid[0] = 4;
    e.u.launch.grid[1] = e.u.launch.grid[2] = 1;
    e.u.launch.block_dim[0] = 64;
    e.u.launch.block_dim[1] = e.u.launch.block_dim[2] = 1;
    e.u.launch.cluster[0] = e.u.launch.cluster[1] = e.u.launch.cluster[2] = 1;
    return e;
}

static inline wr_event lf_kernel_end(uint32_t launch)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_KERNEL_END;
    e.u.kernel_end.launch = launch;
    return e;
}

static inline wr_event lf_block_exit(uint32_t launch, uint32_t block)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_BLOCK_EXIT;
    e.u.block = (wr_block_mark){.launch = launch, .block = block};
    return e;
}

static inline wr_event lf_simple(uint8_t kind)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    return e;
}

static inline wr_event lf_stream_event(uint8_t kind, uint32_t event, uint32_t stream)
{
    wr_event e = lf_simple(kind);
    e.u.stream_event.event = event;
    e.u.stream_event.stream = stream;
    return e;
}

/* A warp access: lanes in mask use base + lane * stride (stride 0 = uniform). */
static inline wr_event lf_acc(uint32_t site, uint32_t launch, uint32_t block, uint32_t warp,
                              uint32_t mask, uint8_t op, uint8_t scope, uint64_t base,
                              int64_t stride)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_ACCESS;
    e.site = site;
    wr_access *a = &e.u.access;
    a->launch = launch;
    a->block = block;
    a->warp = warp;
    a->active_mask = mask;
    a->op = op;
    a->atomic_op = op == WR_OP_ATOMIC_RMW ? WR_AOP_ADD : WR_AOP_NONE;
    a->scope = scope;
    a->order = wr_op_is_atomic(op) ? WR_ORDER_RELAXED : WR_ORDER_WEAK;
    a->space = WR_SPACE_GLOBAL;
    a->size = 4;
    a->addr_mode = stride ? WR_ADDR_STRIDED : WR_ADDR_UNIFORM;
    a->stride = stride;
    a->base = base;
    return e;
}

static inline wr_event lf_barrier(uint32_t launch, uint32_t block, uint32_t warp, uint32_t expected)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_BARRIER;
    e.u.barrier.launch = launch;
    e.u.barrier.block = block;
    e.u.barrier.warp = warp;
    e.u.barrier.active_mask = WR_FULL_MASK;
    e.u.barrier.expected = expected;
    return e;
}

/* A barrier event of any scope and mode (format 1.3): a named block
 * barrier `id` (SYNC or ARRIVE, whose count PTX requires), or a cluster or
 * grid barrier (id 0; SYNC, ARRIVE, ARRIVE_RELAXED for a cluster, or WAIT,
 * whose count is 0). */
static inline wr_event lf_barrier_mode(uint32_t launch, uint32_t block, uint32_t warp, uint32_t id,
                                       uint32_t expected, uint8_t scope, uint8_t mode)
{
    wr_event e = lf_barrier(launch, block, warp, mode == WR_BARMODE_WAIT ? 0 : expected);
    e.u.barrier.barrier_id = id;
    e.u.barrier.scope = scope;
    e.u.barrier.mode = mode;
    return e;
}

static inline wr_event lf_warp_sync(uint32_t launch, uint32_t block, uint32_t warp, uint32_t mask)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_WARP_SYNC;
    e.u.warp_sync.launch = launch;
    e.u.warp_sync.block = block;
    e.u.warp_sync.warp = warp;
    e.u.warp_sync.mask = mask;
    return e;
}

static inline wr_event lf_fence(uint32_t launch, uint32_t block, uint32_t warp, uint32_t mask,
                                uint8_t scope)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_FENCE;
    e.u.fence.launch = launch;
    e.u.fence.block = block;
    e.u.fence.warp = warp;
    e.u.fence.active_mask = mask;
    e.u.fence.scope = scope;
    e.u.fence.order = WR_ORDER_SC;
    return e;
}

static inline wr_event lf_copy(uint8_t kind, uint64_t dst, uint64_t src, uint64_t bytes,
                               uint32_t stream, uint8_t async)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_HOST_COPY;
    e.u.copy.kind = kind;
    e.u.copy.dst = dst;
    e.u.copy.src = src;
    e.u.copy.bytes = bytes;
    e.u.copy.stream = stream;
    e.u.copy.async = async;
    return e;
}

/* ---- the oracle tests' model of a block's barrier phases ----
 *
 * What barriers.h does, stated naively for the reference models of
 * test_fsm_oracle.c and test_lockset_oracle.c (whose blocks have
 * LF_MWARPS warps): per slot (named block barriers 0 .. LF_MSLOTS - 2, the
 * block's share of a cluster or grid barrier LF_MSHARE), the phase under
 * way: who waits (SYNC; a WAIT at the share), who arrived and went on
 * (ARRIVE, ARRIVE_RELAXED), how many threads arrived, whether an arrival
 * was relaxed, and 1 + the largest stamp a releasing arrival (SYNC,
 * ARRIVE) brought.  A phase completes when `expected` threads arrived, or
 * when one of its waiters acts again (an access or a barrier event: it
 * went on, so the phase completed); the phases a warp waits for complete
 * in slot order.  An arriver acting again completes nothing; arriving
 * again counts again; a SYNC after its own ARRIVE in one phase waits. */
enum { LF_MWARPS = 2, LF_MSLOTS = 3, LF_MSHARE = LF_MSLOTS - 1 };

typedef struct lf_mphase {
    bool waits[LF_MWARPS], goes_on[LF_MWARPS];
    uint32_t threads;
    bool relaxed;
    uint32_t top;
} lf_mphase;

typedef struct lf_mbars {
    lf_mphase ph[LF_MSLOTS];
} lf_mbars;

typedef void (*lf_mdone)(void *ctx, unsigned slot, const lf_mphase *ph);

static inline void lf_mbars_complete(lf_mbars *t, unsigned slot, lf_mdone done, void *ctx)
{
    lf_mphase ph = t->ph[slot];
    memset(&t->ph[slot], 0, sizeof t->ph[slot]);
    done(ctx, slot, &ph);
}

/* warp acts again */
static inline void lf_mbars_acts(lf_mbars *t, unsigned warp, lf_mdone done, void *ctx)
{
    for (unsigned slot = 0; slot < LF_MSLOTS; slot++)
        if (t->ph[slot].waits[warp])
            lf_mbars_complete(t, slot, done, ctx);
}

/* an arrival (the caller has made the warp act again first, and took its
 * stamp after that) */
static inline void lf_mbars_arrive(lf_mbars *t, unsigned slot, unsigned warp, uint8_t mode,
                                   uint32_t threads, uint32_t expected, uint32_t stamp,
                                   lf_mdone done, void *ctx)
{
    lf_mphase *p = &t->ph[slot];
    p->threads += threads;
    if (mode == WR_BARMODE_SYNC) {
        p->waits[warp] = true;
        p->goes_on[warp] = false;
    } else {
        p->goes_on[warp] = true;
    }
    if (mode == WR_BARMODE_ARRIVE_RELAXED)
        p->relaxed = true;
    else if (stamp + 1 > p->top)
        p->top = stamp + 1;
    if (expected && p->threads >= expected)
        lf_mbars_complete(t, slot, done, ctx);
}

/* a WAIT at slot: true when the warp arrived (and went on) in the phase
 * under way, which it now waits for */
static inline bool lf_mbars_wait(lf_mbars *t, unsigned slot, unsigned warp)
{
    lf_mphase *p = &t->ph[slot];
    if (!p->goes_on[warp])
        return false;
    p->goes_on[warp] = false;
    p->waits[warp] = true;
    return true;
}

static inline bool lf_mbars_waiting(const lf_mbars *t, unsigned warp)
{
    for (unsigned slot = 0; slot < LF_MSLOTS; slot++)
        if (t->ph[slot].waits[warp])
            return true;
    return false;
}

/* ---- the oracle tests' split-barrier plans ----
 *
 * A barrier whose arrivals (and WAITs) are spread over the steps of a
 * random program, in a random order, so that accesses, other barriers and
 * host steps come between them.  A block barrier (named `id`) of one or
 * both warps of a block, each with SYNC or ARRIVE; a cluster or grid
 * barrier of every warp of the blocks it gathers, each with SYNC, ARRIVE
 * or (a cluster's) ARRIVE_RELAXED, most of those waiting later (WAIT). */
typedef struct lf_plan_part {
    uint32_t block, warp;
    uint8_t mode;
    bool arrived, waits_later;
} lf_plan_part;

typedef struct lf_plan {
    lf_plan_part part[2 * LF_MWARPS];
    unsigned n;
    uint8_t scope;
    uint32_t id, expected;
} lf_plan;

static inline bool lf_plan_active(const lf_plan *p)
{
    for (unsigned i = 0; i < p->n; i++)
        if (!p->part[i].arrived || p->part[i].waits_later)
            return true;
    return false;
}

/* rnd: the program's random source; blocks: the first and how many */
static inline void lf_plan_start(lf_plan *p, uint32_t (*rnd)(uint32_t), uint8_t scope,
                                 uint32_t block0, uint32_t nblocks)
{
    memset(p, 0, sizeof *p);
    p->scope = scope;
    if (scope == WR_BAR_BLOCK) {
        p->id = rnd(2);
        bool both = rnd(3) != 0;
        p->expected = both ? 32 * LF_MWARPS : 32;
        uint32_t w0 = both ? 0 : rnd(LF_MWARPS);
        for (uint32_t w = w0; w < (both ? LF_MWARPS : w0 + 1); w++)
            p->part[p->n++] = (lf_plan_part){.block = block0, .warp = w,
                                             .mode = rnd(2) ? WR_BARMODE_ARRIVE : WR_BARMODE_SYNC};
        return;
    }
    p->expected = 32 * LF_MWARPS * nblocks;
    for (uint32_t b = block0; b < block0 + nblocks; b++)
        for (uint32_t w = 0; w < LF_MWARPS; w++) {
            uint32_t r = rnd(6);
            uint8_t mode = r < 2 ? WR_BARMODE_SYNC
                           : r < 5 || scope != WR_BAR_CLUSTER ? WR_BARMODE_ARRIVE
                                                             : WR_BARMODE_ARRIVE_RELAXED;
            p->part[p->n++] = (lf_plan_part){.block = b, .warp = w, .mode = mode,
                                             .waits_later = mode != WR_BARMODE_SYNC && rnd(8)};
        }
}

/* The plan's next event (a random part with something left), or false. */
static inline bool lf_plan_next(lf_plan *p, uint32_t (*rnd)(uint32_t), uint32_t launch,
                                wr_event *out)
{
    unsigned left[2 * LF_MWARPS], k = 0;
    for (unsigned i = 0; i < p->n; i++)
        if (!p->part[i].arrived || p->part[i].waits_later)
            left[k++] = i;
    if (!k)
        return false;
    lf_plan_part *q = &p->part[left[rnd(k)]];
    uint8_t mode = q->mode;
    if (q->arrived) {
        mode = WR_BARMODE_WAIT;
        q->waits_later = false;
    }
    q->arrived = true;
    *out = lf_barrier_mode(launch, q->block, q->warp, p->id, p->expected, p->scope, mode);
    return true;
}

/* The split programs' barriers under way in one epoch: a block barrier of
 * each of its LF_MBLOCKS blocks, and a cluster or grid barrier. */
#define LF_MBLOCKS 2
typedef struct lf_plans {
    lf_plan block[LF_MBLOCKS], share;
} lf_plans;

/* One step of a split program's barriers: the next event (in *out) of a
 * random block's barrier or of the cluster or grid barrier, started when
 * none is under way.  A cluster barrier gathers both blocks when
 * `one_cluster` (the dsmem programs), one block otherwise; a grid barrier
 * gathers both.  False: the plan drawn had nothing left this step. */
static inline bool lf_plans_step(lf_plans *ps, uint32_t (*rnd)(uint32_t), bool one_cluster,
                                 uint32_t launch, wr_event *out)
{
    uint32_t b = rnd(LF_MBLOCKS);
    bool share = rnd(2) == 0;
    lf_plan *pl = share ? &ps->share : &ps->block[b];
    if (!lf_plan_active(pl)) {
        uint8_t scope = !share ? WR_BAR_BLOCK : rnd(2) ? WR_BAR_CLUSTER : WR_BAR_GRID;
        bool both = scope == WR_BAR_GRID || (scope == WR_BAR_CLUSTER && one_cluster);
        lf_plan_start(pl, rnd, scope, both ? 0 : b, both ? LF_MBLOCKS : 1);
    }
    return lf_plan_next(pl, rnd, launch, out);
}

#endif

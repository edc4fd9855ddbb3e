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

#endif

/*
 * hb_events.h: builds event sequences for the vc / scoped engine tests and
 * runs them through one engine instance with a real findings collector.
 */
#ifndef WR_TEST_HB_EVENTS_H
#define WR_TEST_HB_EVENTS_H

#include <string.h>

#include "engine.h"
#include "finding.h"

typedef struct hbt {
    const wr_engine_ops *ops;
    void *eng;
    wr_findings *f;
    uint64_t seq;
} hbt;

static inline void hbt_open(hbt *t, const wr_engine_ops *ops, uint32_t shard, uint32_t shards)
{
    memset(t, 0, sizeof *t);
    t->ops = ops;
    t->f = wr_findings_new();
    wr_engine_config cfg = {.shard = shard, .shards = shards, .findings = t->f};
    t->eng = ops->create(&cfg);
}

static inline void hbt_close(hbt *t)
{
    t->ops->destroy(t->eng);
    wr_findings_free(t->f);
}

static inline void hbt_feed(hbt *t, wr_event *ev)
{
    ev->seq = t->seq++;
    t->ops->on_event(t->eng, ev);
}

static inline void ev_launch(hbt *t, uint32_t launch, uint32_t stream, uint32_t gx,
                             uint32_t bx)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch.launch = launch;
    ev.u.launch.kernel = launch;
    ev.u.launch.grid[0] = gx;
    ev.u.launch.grid[1] = ev.u.launch.grid[2] = 1;
    ev.u.launch.block_dim[0] = bx;
    ev.u.launch.block_dim[1] = ev.u.launch.block_dim[2] = 1;
    ev.u.launch.cluster[0] = ev.u.launch.cluster[1] = ev.u.launch.cluster[2] = 1;
    ev.u.launch.stream = stream;
    ev.u.launch.shared_bytes = 4096;
    hbt_feed(t, &ev);
}

static inline void ev_simple(hbt *t, uint8_t kind, uint32_t a, uint32_t b)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    switch (kind) {
    case WR_EV_KERNEL_END: ev.u.kernel_end.launch = a; break;
    case WR_EV_EVENT_RECORD:
    case WR_EV_STREAM_WAIT:
    case WR_EV_EVENT_SYNC: ev.u.stream_event.event = a; ev.u.stream_event.stream = b; break;
    case WR_EV_STREAM_SYNC: ev.u.stream_sync.stream = a; break;
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT: ev.u.block.launch = a; ev.u.block.block = b; break;
    default: break;
    }
    hbt_feed(t, &ev);
}

/* A general access. */
static inline void ev_acc(hbt *t, uint32_t site, uint32_t launch, uint32_t block, uint32_t warp,
                          uint32_t mask, uint8_t op, uint8_t aop, uint8_t scope, uint8_t order,
                          uint8_t space, uint8_t mode, uint64_t base, int64_t stride)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ACCESS;
    ev.site = site;
    wr_access *a = &ev.u.access;
    a->launch = launch;
    a->block = block;
    a->warp = warp;
    a->active_mask = mask;
    a->cas_success = mask;
    a->op = op;
    a->atomic_op = aop;
    a->scope = scope;
    a->order = order;
    a->space = space;
    a->size = 4;
    a->addr_mode = mode;
    a->base = base;
    a->stride = stride;
    hbt_feed(t, &ev);
}

/* One lane, global, strong (relaxed/volatile) plain access. */
static inline void ev_st(hbt *t, uint32_t site, uint32_t l, uint32_t b, uint32_t w, uint32_t lane,
                         uint64_t addr)
{
    ev_acc(t, site, l, b, w, 1u << lane, WR_OP_STORE, 0, 0, WR_ORDER_RELAXED, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, addr, 0);
}
static inline void ev_ld(hbt *t, uint32_t site, uint32_t l, uint32_t b, uint32_t w, uint32_t lane,
                         uint64_t addr)
{
    ev_acc(t, site, l, b, w, 1u << lane, WR_OP_LOAD, 0, 0, WR_ORDER_RELAXED, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, addr, 0);
}
/* Weak variants */
static inline void ev_stw(hbt *t, uint32_t site, uint32_t l, uint32_t b, uint32_t w, uint32_t lane,
                          uint64_t addr)
{
    ev_acc(t, site, l, b, w, 1u << lane, WR_OP_STORE, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, addr, 0);
}
static inline void ev_ldw(hbt *t, uint32_t site, uint32_t l, uint32_t b, uint32_t w, uint32_t lane,
                          uint64_t addr)
{
    ev_acc(t, site, l, b, w, 1u << lane, WR_OP_LOAD, 0, 0, WR_ORDER_WEAK, WR_SPACE_GLOBAL,
           WR_ADDR_UNIFORM, addr, 0);
}
/* One-lane atomic RMW, relaxed. */
static inline void ev_atom(hbt *t, uint32_t site, uint32_t l, uint32_t b, uint32_t w,
                           uint32_t lane, uint8_t aop, uint8_t scope, uint64_t addr)
{
    ev_acc(t, site, l, b, w, 1u << lane, WR_OP_ATOMIC_RMW, aop, scope, WR_ORDER_RELAXED,
           WR_SPACE_GLOBAL, WR_ADDR_UNIFORM, addr, 0);
}
static inline void ev_fence(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint32_t mask,
                            uint8_t scope)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_FENCE;
    ev.u.fence.launch = l;
    ev.u.fence.block = b;
    ev.u.fence.warp = w;
    ev.u.fence.active_mask = mask;
    ev.u.fence.scope = scope;
    ev.u.fence.order = WR_ORDER_SC;
    hbt_feed(t, &ev);
}
/* A barrier: a block barrier (scope WR_BAR_BLOCK) with its id, or a
 * cluster or grid barrier (WR_BAR_CLUSTER / WR_BAR_GRID, id 0). */
/* A barrier record of any mode (wr_barrier_mode); ev_barrier: SYNC. */
static inline void ev_barrier_mode(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint32_t mask,
                                   uint32_t id, uint32_t expected, uint8_t scope, uint8_t mode)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_BARRIER;
    ev.u.barrier.launch = l;
    ev.u.barrier.block = b;
    ev.u.barrier.warp = w;
    ev.u.barrier.active_mask = mask;
    ev.u.barrier.barrier_id = id;
    ev.u.barrier.expected = expected;
    ev.u.barrier.scope = scope;
    ev.u.barrier.mode = mode;
    hbt_feed(t, &ev);
}
static inline void ev_barrier(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint32_t mask,
                              uint32_t id, uint32_t expected, uint8_t scope)
{
    ev_barrier_mode(t, l, b, w, mask, id, expected, scope, WR_BARMODE_SYNC);
}
static inline void ev_bar(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint32_t mask,
                          uint32_t id, uint32_t expected)
{
    ev_barrier(t, l, b, w, mask, id, expected, WR_BAR_BLOCK);
}
static inline void ev_xbar(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint8_t scope,
                           uint32_t expected)
{
    ev_barrier(t, l, b, w, WR_FULL_MASK, 0, expected, scope);
}

static inline void ev_wsync(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint32_t mask)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_WARP_SYNC;
    ev.u.warp_sync.launch = l;
    ev.u.warp_sync.block = b;
    ev.u.warp_sync.warp = w;
    ev.u.warp_sync.mask = mask;
    hbt_feed(t, &ev);
}
static inline void ev_copy(hbt *t, uint32_t site, uint8_t kind, uint64_t dst, uint64_t src,
                           uint64_t bytes, uint32_t stream, uint8_t async)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_HOST_COPY;
    ev.site = site;
    ev.u.copy.dst = dst;
    ev.u.copy.src = src;
    ev.u.copy.bytes = bytes;
    ev.u.copy.stream = stream;
    ev.u.copy.kind = kind;
    ev.u.copy.async = async;
    hbt_feed(t, &ev);
}

/* lock(s) / unlock(s) of the ScoR microbenchmarks, one lane */
static inline void ev_lock(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint8_t cas_scope,
                           uint8_t fence_scope, uint64_t lock, int with_fence)
{
    ev_atom(t, 90, l, b, w, 0, WR_AOP_CAS, cas_scope, lock);
    if (with_fence)
        ev_fence(t, l, b, w, 1, fence_scope);
}
static inline void ev_unlock(hbt *t, uint32_t l, uint32_t b, uint32_t w, uint8_t exch_scope,
                             uint8_t fence_scope, uint64_t lock, int with_fence)
{
    if (with_fence)
        ev_fence(t, l, b, w, 1, fence_scope);
    ev_atom(t, 91, l, b, w, 0, WR_AOP_EXCH, exch_scope, lock);
}

static inline size_t hbt_groups(hbt *t, const wr_race_group **g)
{
    return wr_findings_groups(t->f, g);
}

/* Number of race groups; and the number whose sites are {s1, s2}. */
static inline size_t hbt_count(hbt *t) { const wr_race_group *g; return hbt_groups(t, &g); }

static inline const wr_race *hbt_find(hbt *t, uint32_t s1, uint32_t s2)
{
    const wr_race_group *g;
    size_t n = hbt_groups(t, &g);
    for (size_t i = 0; i < n; i++) {
        const wr_race *r = &g[i].example;
        if ((r->first.site == s1 && r->second.site == s2) ||
            (r->first.site == s2 && r->second.site == s1))
            return r;
    }
    return NULL;
}

#endif

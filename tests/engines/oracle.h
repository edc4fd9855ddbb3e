/*
 * What the reference-model tests of fsm and lockset (test_fsm_oracle.c,
 * test_lockset_oracle.c) share: the random source, the order of epochs
 * (launches and host copies) as a transitively closed relation built from
 * the host-side rules, a warp's accesses as the models' rings see them,
 * and the comparison of an engine's findings with a model's, group for
 * group, at 1 and 3 shards.
 */
#ifndef WR_TEST_ORACLE_H
#define WR_TEST_ORACLE_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access_ring.h"
#include "lf_events.h"

/* <= WR_EPOCHS_KEEP + 1 for fsm and lockset: no block of an unsettled
 * epoch is purged (vc has no such limit) */
#ifndef ORACLE_MAX_EPOCHS
#define ORACLE_MAX_EPOCHS 5
#endif
#define ORACLE_STREAMS 4        /* streams 0 (legacy), 1, 2, 3 */
/* Stream 3 is non-blocking (cudaStreamNonBlocking): the legacy stream 0
 * orders it by neither side; its records carry WR_STREAM_NON_BLOCKING. */
#define ORACLE_NB_STREAM 3

static inline bool oe_nb(uint32_t stream) { return stream == ORACLE_NB_STREAM; }

/* The recorder's id of stream index `stream`. */
static inline uint32_t oe_stream_id(uint32_t stream)
{
    return oe_nb(stream) ? WR_STREAM_NON_BLOCKING | stream : stream;
}
#define ORACLE_EVENTS 2         /* CUDA events 1, 2 */

static uint64_t rnd_state;
static uint32_t rnd(uint32_t n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rnd_state >> 33) % n;
}

/* ---- epochs: a happens-before relation over launches and copies ---- */

typedef struct mepoch {
    uint32_t launch;            /* 0: a host copy */
    uint32_t stream;
    bool finished;              /* acts no more (launch) / done (copy) */
    bool ended;                 /* KERNEL_END emitted */
} mepoch;

typedef struct oracle_epochs {
    mepoch ep[ORACLE_MAX_EPOCHS + 1];   /* 1-based */
    uint32_t nep;
    bool before[ORACLE_MAX_EPOCHS + 1][ORACLE_MAX_EPOCHS + 1];   /* [a][b]: a happens before b */
    bool host_waited[ORACLE_MAX_EPOCHS + 1];
    /* [s][a]: the stream's next work waits for a through events it waited for */
    bool stream_waits[ORACLE_STREAMS][ORACLE_MAX_EPOCHS + 1];
    /* [e - 1][a]: what the event captured when last recorded */
    bool captured[ORACLE_EVENTS][ORACLE_MAX_EPOCHS + 1];
} oracle_epochs;

static inline bool oe_ordered(const oracle_epochs *o, uint32_t a, uint32_t b)
{
    return o->before[a][b];
}

/* Does work issued now on `stream` wait for epoch a through the legacy
 * stream: on stream 0, for the blocking streams' work and what they waited
 * for; on a blocking stream, for stream 0's; on the non-blocking one, no. */
static inline bool oe_legacy_waits(const oracle_epochs *o, uint32_t stream, uint32_t a)
{
    if (oe_nb(stream))
        return false;
    if (stream != 0)
        return o->ep[a].stream == 0 || o->stream_waits[0][a];
    for (uint32_t s = 0; s < ORACLE_STREAMS; s++)
        if (!oe_nb(s) && o->stream_waits[s][a])
            return true;
    return !oe_nb(o->ep[a].stream);
}

/* A new epoch on `stream`: after the stream's previous work, the events it
 * waited for, what the legacy stream orders it after (oe_legacy_waits), and
 * what the host waited for; and after everything those come after. */
static inline uint32_t oe_new(oracle_epochs *o, uint32_t launch, uint32_t stream)
{
    uint32_t x = ++o->nep;
    cr_assert(x <= ORACLE_MAX_EPOCHS);
    o->ep[x] = (mepoch){.launch = launch, .stream = stream};
    for (uint32_t a = 1; a < x; a++) {
        bool direct = o->host_waited[a] || o->ep[a].stream == stream ||
                      o->stream_waits[stream][a] || oe_legacy_waits(o, stream, a);
        if (direct) {
            o->before[a][x] = true;
            for (uint32_t b = 1; b < a; b++)
                if (o->before[b][a])
                    o->before[b][x] = true;
        }
    }
    return x;
}

/* Takes back the newest epoch (a copy that may not run yet). */
static inline void oe_drop_newest(oracle_epochs *o)
{
    for (uint32_t a = 1; a < o->nep; a++)
        o->before[a][o->nep] = false;
    o->nep--;
}

/* The host has waited for epoch x (and so for what x came after). */
static inline void oe_host_waits(oracle_epochs *o, uint32_t x)
{
    o->host_waited[x] = true;
    for (uint32_t a = 1; a < x; a++)
        if (o->before[a][x])
            o->host_waited[a] = true;
}

/* May epoch x act now: every epoch before it is over (trace order is
 * consistent with the order of epochs)? */
static inline bool oe_may_act(const oracle_epochs *o, uint32_t x)
{
    if (o->ep[x].finished)
        return false;
    for (uint32_t a = 1; a < x; a++)
        if (o->before[a][x] && !o->ep[a].finished)
            return false;
    return true;
}

/* One of the launches that may act now, at random; 0 when none may. */
static inline uint32_t oe_pick_acting(const oracle_epochs *o)
{
    uint32_t can[ORACLE_MAX_EPOCHS], ncan = 0;
    for (uint32_t x = 1; x <= o->nep; x++)
        if (o->ep[x].launch && oe_may_act(o, x))
            can[ncan++] = x;
    return ncan ? can[rnd(ncan)] : 0;
}

/* What the stream's next work would wait for, into in[]: its own epochs,
 * what they came after, the events it waited for. */
static inline void oe_stream_reach(const oracle_epochs *o, uint32_t stream, bool *in)
{
    for (uint32_t a = 1; a <= o->nep; a++)
        in[a] = o->stream_waits[stream][a];
    for (uint32_t b = 1; b <= o->nep; b++)
        if (o->ep[b].stream == stream) {
            in[b] = true;
            for (uint32_t a = 1; a < b; a++)
                in[a] |= o->before[a][b];
        }
}

/* What an event recorded on `stream` captures, into in[]: the stream's
 * reach, and the legacy default stream's work orders the record with: on
 * stream 0, every stream's reach; on another (blocking) stream, stream 0's
 * (the record is work issued to the stream, which waits for them). */
static inline void oe_record_reach(const oracle_epochs *o, uint32_t stream, bool *in)
{
    oe_stream_reach(o, stream, in);
    for (uint32_t s = 0; s < ORACLE_STREAMS; s++) {
        if (s == stream || oe_nb(stream) || oe_nb(s) || (stream != 0 && s != 0))
            continue;
        bool more[ORACLE_MAX_EPOCHS + 1] = {false};
        oe_stream_reach(o, s, more);
        for (uint32_t a = 1; a <= o->nep; a++)
            in[a] |= more[a];
    }
}

/* The host waited for the epochs in in[]: they are over. */
static inline void oe_host_waits_all(oracle_epochs *o, const bool *in)
{
    for (uint32_t a = 1; a <= o->nep; a++)
        if (in[a]) {
            o->ep[a].finished = true;
            oe_host_waits(o, a);
        }
}

/* A random host-side ordering event into *ev: cudaEventRecord or
 * cudaStreamWaitEvent (events 1-2, streams 0-3), cudaStreamSynchronize or
 * cudaEventSynchronize (the host waits: what they cover is over). */
static inline void oe_random_order(oracle_epochs *o, wr_event *ev)
{
    uint32_t stream = rnd(ORACLE_STREAMS), event = 1 + rnd(ORACLE_EVENTS);
    bool in[ORACLE_MAX_EPOCHS + 1] = {false};   /* epochs issued later: not captured */
    switch (rnd(4)) {
    case 0:
        *ev = lf_stream_event(WR_EV_EVENT_RECORD, event, oe_stream_id(stream));
        oe_record_reach(o, stream, in);
        memcpy(o->captured[event - 1], in, sizeof in);
        break;
    case 1:   /* an event never recorded captured nothing */
        *ev = lf_stream_event(WR_EV_STREAM_WAIT, event, oe_stream_id(stream));
        for (uint32_t a = 1; a <= o->nep; a++)
            o->stream_waits[stream][a] |= o->captured[event - 1][a];
        break;
    case 2:
        *ev = lf_simple(WR_EV_STREAM_SYNC);
        ev->u.stream_sync.stream = oe_stream_id(stream);
        oe_stream_reach(o, stream, in);
        oe_host_waits_all(o, in);
        break;
    default:
        *ev = lf_stream_event(WR_EV_EVENT_SYNC, event, 0);
        oe_host_waits_all(o, o->captured[event - 1]);
        break;
    }
}

/* DEVICE_SYNC: every epoch so far is over, and the host waited for it. */
static inline void oe_device_sync(oracle_epochs *o)
{
    for (uint32_t y = 1; y <= o->nep; y++) {
        o->ep[y].finished = true;
        oe_host_waits(o, y);
    }
}

/* A random host copy of some of the `words` words at `base` (H2D or D2H,
 * synchronous or not, on stream 0-3), as its HOST_COPY event in *out,
 * with its new epoch; 0 (no epoch made) when what it comes after is not
 * over yet, so that it cannot run now.  The caller feeds it to its model,
 * then calls oe_copy_done. */
static inline uint32_t oe_random_copy(oracle_epochs *o, uint64_t base, uint32_t words, wr_event *out)
{
    uint32_t stream = rnd(ORACLE_STREAMS);
    uint32_t x = oe_new(o, 0, stream);
    if (!oe_may_act(o, x)) {
        oe_drop_newest(o);
        return 0;
    }
    uint32_t first = rnd(words), count = 1 + rnd(words - first);
    uint8_t kind = rnd(2) ? WR_COPY_H2D : WR_COPY_D2H;
    uint64_t at = base + 4ull * first;
    bool async = rnd(2);
    *out = lf_copy(kind, kind == WR_COPY_H2D ? at : 0, kind == WR_COPY_D2H ? at : 0, 4ull * count,
                   oe_stream_id(stream), async);
    return x;
}

/* The copy of epoch x ran: a synchronous one was waited for. */
static inline void oe_copy_done(oracle_epochs *o, uint32_t x, const wr_event *copy)
{
    o->ep[x].finished = true;
    if (!copy->u.copy.async)
        oe_host_waits(o, x);
}

/* Launch epoch x acts no more: the events that say so (maybe every one of
 * its `blocks` blocks' BLOCK_EXIT, maybe its KERNEL_END, which the host
 * waits for) into out[0 .. blocks], how many returned. */
static inline unsigned oe_finish_launch(oracle_epochs *o, uint32_t x, uint32_t blocks, wr_event *out)
{
    unsigned n = 0;
    o->ep[x].finished = true;
    if (rnd(2))
        for (uint32_t b = 0; b < blocks; b++)
            out[n++] = lf_block_exit(o->ep[x].launch, b);
    if (rnd(3)) {
        out[n++] = lf_kernel_end(o->ep[x].launch);
        o->ep[x].ended = true;
        oe_host_waits(o, x);
    }
    return n;
}

/* The host's part of a random program's step, `what` in [0, 100): a new
 * launch on stream 0-3 (ORACLE_LAUNCH, its event in *ev), a host copy
 * (ORACLE_COPY, the caller makes it), an event record or wait, a stream,
 * event or device sync (ORACLE_SYNC, *ev), the end of the acting launch
 * (ORACLE_FINISH, *x); else the launch that acts in the step, *x
 * (ORACLE_DEVICE), or none may (ORACLE_NONE). */
typedef enum { ORACLE_NONE, ORACLE_LAUNCH, ORACLE_COPY, ORACLE_FINISH, ORACLE_SYNC,
               ORACLE_DEVICE } oracle_step;

static inline oracle_step oracle_host_step(oracle_epochs *o, uint32_t what, uint32_t *nlaunches,
                                           uint32_t max_launches, wr_event *ev, uint32_t *x)
{
    if (what < 5 && *nlaunches < max_launches && o->nep < ORACLE_MAX_EPOCHS) {
        uint32_t launch = ++*nlaunches, stream = rnd(4) ? 1 + rnd(ORACLE_STREAMS - 1) : 0;
        *ev = lf_launch(launch, oe_stream_id(stream));
        oe_new(o, launch, stream);
        return ORACLE_LAUNCH;
    }
    if (what < 7 && o->nep < ORACLE_MAX_EPOCHS)
        return ORACLE_COPY;
    if (what < 11) {
        oe_random_order(o, ev);
        return ORACLE_SYNC;
    }
    *x = oe_pick_acting(o);
    if (!*x)
        return ORACLE_NONE;
    if (what < 13)
        return ORACLE_FINISH;
    if (what < 14) {   /* the host waits for everything */
        *ev = lf_simple(WR_EV_DEVICE_SYNC);
        oe_device_sync(o);
        return ORACLE_SYNC;
    }
    return ORACLE_DEVICE;
}

/* ---- a random program's events ---- */

#define ORACLE_MAX_EVENTS 4096
#define ORACLE_MAX_BLOCKS 8      /* of a launch the programs finish */

/* The events fed to the engine (event i at trace position i), with the
 * per-lane addresses of vector accesses (lanes[i] for event i). */
typedef struct oracle_prog {
    wr_event ev[ORACLE_MAX_EVENTS];
    uint64_t lanes[ORACLE_MAX_EVENTS][WR_WARP_SIZE];
    uint32_t n;
} oracle_prog;

static inline wr_event *oracle_emit(oracle_prog *p, wr_event e)
{
    cr_assert(p->n < ORACLE_MAX_EVENTS);
    e.seq = p->n;
    p->ev[p->n] = e;
    return &p->ev[p->n++];
}

/* Emits a random host copy that may run now (oe_random_copy), its site
 * site0 + its position, its epoch in *x; NULL when none may run.  The
 * caller feeds it to its model, then calls oe_copy_done. */
static inline wr_event *oracle_emit_copy(oracle_prog *p, oracle_epochs *o, uint64_t base,
                                         uint32_t words, uint32_t site0, uint32_t *x)
{
    wr_event c;
    *x = oe_random_copy(o, base, words, &c);
    if (!*x)
        return NULL;   /* not this time: what it comes after still runs */
    wr_event *e = oracle_emit(p, c);
    e->site = site0 + (uint32_t)e->seq;
    return e;
}

/* Launch epoch x of `blocks` blocks acts no more: emits what says so
 * (oe_finish_launch). */
static inline void oracle_emit_finish(oracle_prog *p, oracle_epochs *o, uint32_t x, uint32_t blocks)
{
    wr_event ends[ORACLE_MAX_BLOCKS + 1];
    cr_assert(blocks <= ORACLE_MAX_BLOCKS);
    unsigned n = oe_finish_launch(o, x, blocks, ends);
    for (unsigned i = 0; i < n; i++)
        oracle_emit(p, ends[i]);
}

/* The program is over: every launch the host has not seen end ends now,
 * as a recorder would say at exit. */
static inline void oracle_emit_ends(oracle_prog *p, const oracle_epochs *o)
{
    for (uint32_t x = 1; x <= o->nep; x++)
        if (o->ep[x].launch && !o->ep[x].ended)
            oracle_emit(p, lf_kernel_end(o->ep[x].launch));
}

/* ---- a warp's accesses, as a report's first side looks for them ---- */

typedef struct mring_ent {
    uint64_t seq, lo, hi;       /* bytes [lo, hi] of all its lanes */
    uint32_t site, mask;
    uint8_t kind, space;
} mring_ent;

typedef struct mring {          /* every access of one warp (or of the host), oldest first */
    mring_ent *e;
    uint32_t n, cap;
} mring;

static inline void ring_push(mring *r, mring_ent e)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->e = realloc(r->e, r->cap * sizeof *r->e);
    }
    r->e[r->n++] = e;
}

/* The older instructions of a warp, as access_ring.h keeps them: the
 * accesses before its last WR_ACCESS_RING, in order, one entry per (site,
 * kind, space) with the union of their lanes and bytes and the newest
 * position, at most WR_RING_OLDER, the one whose newest access is the
 * oldest making way for a new one.  Returns how many, in out. */
static inline unsigned ring_older(const mring *r, mring_ent out[WR_RING_OLDER])
{
    unsigned n = 0;
    for (uint32_t i = 0; i + WR_ACCESS_RING < r->n; i++) {
        const mring_ent *e = &r->e[i];
        if (!e->mask)
            continue;
        unsigned k = 0;
        while (k < n && !(out[k].site == e->site && out[k].kind == e->kind && out[k].space == e->space))
            k++;
        if (k < n) {
            out[k].lo = e->lo < out[k].lo ? e->lo : out[k].lo;
            out[k].hi = e->hi > out[k].hi ? e->hi : out[k].hi;
            out[k].mask |= e->mask;
            out[k].seq = e->seq;
        } else if (n < WR_RING_OLDER) {
            out[n++] = *e;
        } else {
            unsigned oldest = 0;
            for (k = 1; k < n; k++)
                if (out[k].seq < out[oldest].seq)
                    oldest = k;
            out[oldest] = *e;
        }
    }
    return n;
}

/* ---- the comparison ---- */

static inline void oracle_print_group(const char *who, const wr_race_group *g)
{
    const wr_race *r = &g->example;
    fprintf(stderr,
            "  %s: x%" PRIu64 " class %u | #%" PRIu64 " site %u kind %u L%u b%u w%u l%u"
            " | #%" PRIu64 " site %u kind %u L%u b%u w%u l%u | space %u addr %#" PRIx64 "\n",
            who, g->count, r->race_class, r->first.seq, r->first.site, r->first.kind,
            r->first.launch, r->first.block, r->first.warp, r->first.lane, r->second.seq,
            r->second.site, r->second.kind, r->second.launch, r->second.block, r->second.warp,
            r->second.lane, r->space, r->addr);
}

static inline bool oracle_same_example(const wr_race *x, const wr_race *y)
{
    return x->engine == y->engine && x->race_class == y->race_class && x->verdict == y->verdict &&
           x->potential == y->potential && x->space == y->space && x->addr == y->addr &&
           !memcmp(&x->first, &y->first, sizeof x->first) &&
           !memcmp(&x->second, &y->second, sizeof x->second);
}

static inline void oracle_dump_program(const wr_event *ev, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const wr_event *e = &ev[i];
        switch (e->kind) {
        case WR_EV_ACCESS: {
            const wr_access *a = &e->u.access;
            fprintf(stderr, "  #%u access L%u b%u w%u site %u op %u aop %u cas %08x scope %u space %u"
                    " mask %08x mode %u base %#" PRIx64 " size %u", i, a->launch, a->block, a->warp,
                    e->site, a->op, a->atomic_op, a->cas_success, a->scope, a->space,
                    a->active_mask, a->addr_mode, a->base, a->size);
            if (a->addr_mode == WR_ADDR_VECTOR)
                for (unsigned l = 0; l < WR_WARP_SIZE; l++)
                    if ((a->active_mask >> l) & 1u)
                        fprintf(stderr, " %u:%#" PRIx64, l, a->lane_addr[l]);
            fprintf(stderr, "\n");
            break;
        }
        case WR_EV_FENCE:
            fprintf(stderr, "  #%u fence L%u b%u w%u mask %08x scope %u\n", i, e->u.fence.launch,
                    e->u.fence.block, e->u.fence.warp, e->u.fence.active_mask, e->u.fence.scope);
            break;
        case WR_EV_BARRIER:
            fprintf(stderr, "  #%u barrier L%u b%u w%u expected %u\n", i, e->u.barrier.launch,
                    e->u.barrier.block, e->u.barrier.warp, e->u.barrier.expected);
            break;
        case WR_EV_WARP_SYNC:
            fprintf(stderr, "  #%u warp sync L%u b%u w%u mask %08x\n", i, e->u.warp_sync.launch,
                    e->u.warp_sync.block, e->u.warp_sync.warp, e->u.warp_sync.mask);
            break;
        case WR_EV_KERNEL_LAUNCH:
            fprintf(stderr, "  #%u launch L%u stream %u\n", i, e->u.launch.launch, e->u.launch.stream);
            break;
        case WR_EV_KERNEL_END:
            fprintf(stderr, "  #%u kernel end L%u\n", i, e->u.kernel_end.launch);
            break;
        case WR_EV_BLOCK_EXIT:
            fprintf(stderr, "  #%u block exit L%u b%u\n", i, e->u.block.launch, e->u.block.block);
            break;
        case WR_EV_HOST_COPY:
            fprintf(stderr, "  #%u copy kind %u dst %#" PRIx64 " src %#" PRIx64 " bytes %" PRIu64
                    " stream %u async %u\n", i, e->u.copy.kind, e->u.copy.dst, e->u.copy.src,
                    e->u.copy.bytes, e->u.copy.stream, e->u.copy.async);
            break;
        default:
            fprintf(stderr, "  #%u kind %u\n", i, e->kind);
            break;
        }
    }
}

/* Runs the program through the engine at 1 and at 3 shards; its groups
 * (count and example) must be the model's. */
static inline void oracle_compare(const wr_engine_ops *ops, const wr_event *ev, uint32_t n,
                                  const wr_findings *model_found, uint64_t seed)
{
    const wr_race_group *mg;
    size_t mn = wr_findings_groups(model_found, &mg);
    for (unsigned shards = 1; shards <= 3; shards += 2) {
        lf_run r;
        lf_start(&r, ops, shards);
        for (uint32_t i = 0; i < n; i++)
            lf_feed(&r, ev[i]);
        wr_findings *got = lf_end(&r);
        const wr_race_group *eg;
        size_t en = wr_findings_groups(got, &eg);
        bool same = en == mn;
        for (size_t i = 0; same && i < en; i++)
            same = eg[i].count == mg[i].count && oracle_same_example(&eg[i].example, &mg[i].example);
        if (!same) {
            fprintf(stderr, "seed %" PRIu64 ", %u shards: engine %zu groups, model %zu\n", seed,
                    shards, en, mn);
            for (size_t i = 0; i < en; i++)
                oracle_print_group("engine", &eg[i]);
            for (size_t i = 0; i < mn; i++)
                oracle_print_group("model ", &mg[i]);
            oracle_dump_program(ev, n);
        }
        wr_findings_free(got);
        cr_assert(same, "seed %" PRIu64 ", %u shards: the engine's findings differ from the model's",
                  seed, shards);
    }
}

/* How many seeds to run: WR_ORACLE_SEEDS=N searches longer than the
 * suite's `fallback`; WR_ORACLE_SEED=S runs seed S alone (*first = S). */
static inline uint64_t oracle_seeds(uint64_t fallback, uint64_t *first)
{
    const char *one = getenv("WR_ORACLE_SEED"), *many = getenv("WR_ORACLE_SEEDS");
    *first = one ? strtoull(one, NULL, 10) : 1;
    if (one)
        return *first;
    return many ? strtoull(many, NULL, 10) : fallback;
}

/* The model's findings of each program, counted: the programs must race,
 * and in many ways, for a comparison to mean anything. */
static unsigned oracle_races_seen, oracle_programs_racing;

static inline void oracle_tally(const wr_findings *model_found)
{
    const wr_race_group *g;
    size_t n = wr_findings_groups(model_found, &g);
    oracle_races_seen += (unsigned)n;
    oracle_programs_racing += n > 0;
}

static inline void oracle_assert_racing(uint64_t seeds)
{
    cr_assert_gt(oracle_programs_racing, seeds / 2, "%u of %" PRIu64 " programs race",
                 oracle_programs_racing, seeds);
    cr_assert_gt(oracle_races_seen, 4 * seeds, "%u race groups", oracle_races_seen);
}

/* Runs check_seed over the programs oracle_seeds says; the last seed, or 0
 * for one seed alone (WR_ORACLE_SEED: no totals to judge). */
static inline uint64_t oracle_run(uint64_t seeds, void (*check_seed)(uint64_t))
{
    uint64_t first, last = oracle_seeds(seeds, &first);
    for (uint64_t seed = first; seed <= last; seed++)
        check_seed(seed);
    return getenv("WR_ORACLE_SEED") ? 0 : last;
}

/* The programs of an engine's DSMEM test: seeds programs (or as
 * oracle_seeds says) through check_seed with *dsmem set, which must race
 * (oracle_assert_racing) and, *examples counting them, race on shared
 * words of another block often enough to check anything. */
static inline void oracle_run_dsmem(const char *engine, bool *dsmem, uint64_t seeds,
                                    void (*check_seed)(uint64_t), const unsigned *examples)
{
    *dsmem = true;
    uint64_t last = oracle_run(seeds, check_seed);
    *dsmem = false;
    if (!last)
        return;
    oracle_assert_racing(last);
    fprintf(stderr, "%s oracle, dsmem: %u races on another block's shared word\n", engine,
            *examples);
    cr_assert_gt(*examples, last / 4, "%u races through DSMEM", *examples);
}

#endif

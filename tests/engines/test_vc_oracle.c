/*
 * The vc engine against a naive reference model of its own semantics
 * (ENGINES.md, "vc"), on random programs; and the scoped engine against
 * the same model with acquires taken out (its barrier-only layer: these
 * programs' plain accesses are weak, so scoped reports what that layer
 * leaves unordered; atomic pairs it may report only where their scopes do
 * not both hold both threads).
 *
 * The model keeps no epochs, read sets, packed lines, clock chunks, stream
 * summaries or shards: every thread (lane) has a full vector clock over all
 * threads of the program, and every word keeps its whole access history,
 * each access with a snapshot of its thread's clock.  A pair of accesses
 * races when the model says so, by definition: different threads, one
 * writes, not both atomic, and the later one's clock does not hold the
 * earlier one's tick.
 *
 * Where ENGINES.md makes the warp the unit of knowledge, the model does
 * too: what a warp learns from another warp (barrier, acquire) all its lanes
 * learn, and what a warp releases is every lane's accesses up to its fence
 * (ENGINES.md, "Known limits").  Ordering inside a warp is per lane:
 * lockstep instructions, full and partial __syncwarp, barriers, and an
 * acquire of the warp's own release, each a plain join of lane clocks, so
 * transitive by construction.
 *
 * What is checked, for each program, at 1 and 3 shards:
 *   - soundness: every race group the engine reports is a pair of
 *     instructions that race in the model, and its example (lanes, word)
 *     is a racing pair of lane accesses;
 *   - completeness where FastTrack promises it: for every word, the first
 *     lane access that races with an earlier one is reported, paired with
 *     one of the accesses it races with.  (Later races on a word that
 *     already raced may be subsumed: the engine keeps the last write and
 *     the unordered reads only.)
 * Every instruction has its own site, so a race group names one pair of
 * instructions.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "hbcore.h"
#include "lf_events.h"

extern const wr_engine_ops wr_engine_vc, wr_engine_scoped;

enum {
    LAUNCHES = 2,
    BLOCKS = 2,
    WARPS = 2,                 /* per block: blocks of 64 threads */
    LANES = 32,
    WARPS_ALL = LAUNCHES * BLOCKS * WARPS,
    THREADS = WARPS_ALL * LANES,
    WORDS = 48,
    STEPS = 260,
    SEEDS = 400,
};

#define BASE 0x20000ull        /* word i at BASE + 4 i */
#define SITE0 1000u            /* site of step i: SITE0 + i */

typedef struct vclk {
    uint32_t v[THREADS];
} vclk;

static void vclk_join(vclk *dst, const vclk *src)
{
    for (unsigned i = 0; i < THREADS; i++)
        if (dst->v[i] < src->v[i])
            dst->v[i] = src->v[i];
}

typedef struct rec {            /* one lane's access to one word */
    uint64_t seq;
    uint32_t site, snap;        /* snap: index of the thread's clock copy */
    uint16_t t;
    uint8_t write, atomic, scope;
} rec;

typedef struct mwarp {
    uint32_t group;             /* lockstep group (0: none since reconvergence) */
    bool diverged, has_fence;
    uint32_t fence_tick[LANES]; /* each lane's tick at the warp's last fence */
    vclk know;                  /* what the warp learned from outside itself */
} mwarp;

typedef struct racy_pair {      /* instructions (by seq) that race somewhere */
    uint64_t s1, s2;
} racy_pair;

typedef struct partner {        /* an access the word's first race races with */
    uint64_t seq;
    uint32_t site, lane;
    bool atomic;
    uint32_t atomics_after;     /* atomic lane accesses to the word after it */
    bool round_trip;            /* superseded through another warp (round_trip) */
} partner;

typedef struct model {
    /* the barrier-only layer (ENGINES.md, scoped): no acquire orders
     * anything; what the scoped engine reports of these programs */
    bool bar_only;
    vclk lane[THREADS];         /* per-lane entries of its own warp */
    mwarp w[WARPS_ALL];
    vclk rel[WORDS];            /* what the word's release sequence carries */
    bool has_rel[WORDS];
    vclk host;                  /* what the host has seen complete */
    bool started[LAUNCHES], ended[LAUNCHES];
    uint32_t stream[LAUNCHES];
    /* history */
    rec *hist[WORDS];
    uint32_t nhist[WORDS], caphist[WORDS];
    vclk *snaps;
    uint32_t nsnaps, capsnaps;
    bool word_raced[WORDS];
    uint64_t first_racy_seq[WORDS];   /* the first racing access of the word */
    uint32_t first_racy_lane[WORDS], first_racy_site[WORDS];
    partner *first_partners[WORDS];
    uint32_t npartners[WORDS];
    racy_pair *pairs;
    size_t npairs, cappairs;
    /* bar_only: atomic pairs whose scopes do not both hold both threads;
     * scoped may report them (scope-atomic) or not (on a flag word, or
     * when ordered), so they are allowed, not required */
    racy_pair *scope_pairs;
    size_t nscope_pairs, capscope_pairs;
} model;

static uint64_t rnd_state;
static uint32_t rnd(uint32_t n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rnd_state >> 33) % n;
}

static unsigned warp_index(unsigned li, unsigned b, unsigned w) { return (li * BLOCKS + b) * WARPS + w; }
static unsigned thread_of(unsigned wi, unsigned lane) { return wi * LANES + lane; }

/* The clock thread t acts with: its warp's outside knowledge, its own
 * warp's entries as the lane knows them. */
static void full_clock(const model *m, unsigned t, vclk *out)
{
    unsigned wi = t / LANES;
    *out = m->w[wi].know;
    for (unsigned l = 0; l < LANES; l++)
        out->v[thread_of(wi, l)] = m->lane[t].v[thread_of(wi, l)];
}

static bool knows(const model *m, unsigned t, unsigned t_prev, uint32_t tick)
{
    unsigned wi = t / LANES;
    if (t_prev / LANES == wi)
        return m->lane[t].v[t_prev] >= tick;
    return m->w[wi].know.v[t_prev] >= tick;
}

/* Lanes in `mask` of warp wi join each other's own-warp entries. */
static void lanes_join(model *m, unsigned wi, uint32_t mask)
{
    vclk j;
    memset(&j, 0, sizeof j);
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            for (unsigned k = 0; k < LANES; k++) {
                unsigned u = thread_of(wi, k);
                if (j.v[u] < m->lane[thread_of(wi, l)].v[u])
                    j.v[u] = m->lane[thread_of(wi, l)].v[u];
            }
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            for (unsigned k = 0; k < LANES; k++) {
                unsigned u = thread_of(wi, k);
                m->lane[thread_of(wi, l)].v[u] = j.v[u];
            }
}

/* The warp's whole knowledge (outside entries and every lane's ticks). */
static void warp_view(const model *m, unsigned wi, vclk *out)
{
    *out = m->w[wi].know;
    for (unsigned l = 0; l < LANES; l++)
        for (unsigned k = 0; k < LANES; k++) {
            unsigned u = thread_of(wi, k);
            if (out->v[u] < m->lane[thread_of(wi, l)].v[u])
                out->v[u] = m->lane[thread_of(wi, l)].v[u];
        }
}

static void fence(model *m, unsigned wi)
{
    m->w[wi].has_fence = true;
    for (unsigned l = 0; l < LANES; l++)
        m->w[wi].fence_tick[l] = m->lane[thread_of(wi, l)].v[thread_of(wi, l)];
}

static void pair_push(racy_pair **v, size_t *n, size_t *cap, uint64_t s1, uint64_t s2)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *v = realloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = (racy_pair){s1, s2};
}

static void add_pair(model *m, uint64_t s1, uint64_t s2)
{
    pair_push(&m->pairs, &m->npairs, &m->cappairs, s1, s2);
}

/* Do the scopes of two atomics both hold both threads?  (A thread's block
 * is its warp index over WARPS: launches number their blocks apart.) */
static bool scopes_hold(unsigned t1, uint8_t s1, unsigned t2, uint8_t s2)
{
    uint8_t narrower = s1 < s2 ? s1 : s2;
    return narrower >= WR_SCOPE_DEVICE || t1 / LANES / WARPS == t2 / LANES / WARPS;
}

/* Is hist[word][i], an access of t's own warp, superseded by a later plain
 * write of another warp that is ordered after it and before t?  Then t
 * knows that write through its warp's knowledge (ENGINES.md, vc, "Known
 * limits": knowledge from other warps is the warp's), while the model,
 * per lane inside a warp, need not order t after the access itself; vc
 * keeps the last write only, so it cannot report that pair. */
static bool round_trip(const model *m, unsigned t, unsigned word, uint32_t i)
{
    const rec *r = &m->hist[word][i];
    if (r->t / LANES != t / LANES)
        return false;
    uint32_t tick = m->snaps[r->snap].v[r->t];
    for (uint32_t j = i + 1; j < m->nhist[word]; j++) {
        const rec *q = &m->hist[word][j];
        if (q->write && !q->atomic && q->t / LANES != t / LANES &&
            m->snaps[q->snap].v[r->t] >= tick && knows(m, t, q->t, m->snaps[q->snap].v[q->t]))
            return true;
    }
    return false;
}

static void lane_access(model *m, unsigned t, unsigned word, uint64_t seq, uint32_t site,
                        bool write, bool atomic, bool reads, uint8_t scope, unsigned lane)
{
    uint32_t atomics = 0, atomics_seen = 0;
    for (uint32_t i = 0; i < m->nhist[word]; i++)
        atomics += m->hist[word][i].atomic;
    for (uint32_t i = 0; i < m->nhist[word]; i++) {
        const rec *r = &m->hist[word][i];
        atomics_seen += r->atomic;
        if (r->t == t || (!r->write && !write))
            continue;
        if (r->atomic && atomic) {
            if (m->bar_only && !scopes_hold(r->t, r->scope, t, scope))
                pair_push(&m->scope_pairs, &m->nscope_pairs, &m->capscope_pairs, r->seq, seq);
            continue;
        }
        uint32_t tick = m->snaps[r->snap].v[r->t];
        if (knows(m, t, r->t, tick))
            continue;
        /* an atomic that reads the word reads its release sequence: what
         * was released there happens before it (it is the acquire) */
        if (reads && !m->bar_only && m->has_rel[word] && m->rel[word].v[r->t] >= tick)
            continue;
        add_pair(m, r->seq, seq);
        if (!m->word_raced[word] || (m->first_racy_seq[word] == seq &&
                                     m->first_racy_lane[word] == lane)) {
            m->word_raced[word] = true;
            m->first_racy_seq[word] = seq;
            m->first_racy_lane[word] = lane;
            m->first_racy_site[word] = site;
            m->first_partners[word] = realloc(m->first_partners[word],
                                              (m->npartners[word] + 1) * sizeof(partner));
            m->first_partners[word][m->npartners[word]++] =
                (partner){r->seq, r->site, r->t % LANES, r->atomic, atomics - atomics_seen,
                          round_trip(m, t, word, i)};
        }
    }
    if (m->nsnaps == m->capsnaps) {
        m->capsnaps = m->capsnaps ? 2 * m->capsnaps : 512;
        m->snaps = realloc(m->snaps, m->capsnaps * sizeof *m->snaps);
    }
    full_clock(m, t, &m->snaps[m->nsnaps]);
    if (m->nhist[word] == m->caphist[word]) {
        m->caphist[word] = m->caphist[word] ? 2 * m->caphist[word] : 64;
        m->hist[word] = realloc(m->hist[word], m->caphist[word] * sizeof(rec));
    }
    m->hist[word][m->nhist[word]++] =
        (rec){.seq = seq, .site = site, .snap = m->nsnaps++, .t = (uint16_t)t,
              .write = write, .atomic = atomic, .scope = scope};
}

/* An access instruction; lanes in mask touch word_of[lane]. */
static void model_access(model *m, unsigned wi, uint32_t mask, const unsigned *word_of,
                         uint8_t op, uint8_t scope, uint8_t order, uint64_t seq, uint32_t site)
{
    mwarp *w = &m->w[wi];
    if (!w->group && !w->diverged)
        w->group = mask;
    if (mask != w->group)
        w->diverged = true;
    bool conv = !w->diverged;
    bool write = wr_op_writes(op), atomic = wr_op_is_atomic(op);
    bool reads = atomic && op != WR_OP_ATOMIC_STORE, is_store = op == WR_OP_ATOMIC_STORE;
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            m->lane[thread_of(wi, l)].v[thread_of(wi, l)]++;
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            lane_access(m, thread_of(wi, l), word_of[l], seq, site, write, atomic, reads, scope,
                        l);
    if (atomic) {
        /* per run of lanes on one word, in lane order: each lane reads the
         * word (a relaxed RMW or load acquires), then writes it: a release
         * (release order: of all the warp did so far; after a fence: of
         * what it did up to the fence) joins the release sequence, or
         * heads a new one for a store; a store that does not release ends
         * it */
        for (unsigned l = 0; l < LANES; l++) {
            if (!((mask >> l) & 1u))
                continue;
            unsigned x = word_of[l];
            if (reads && m->has_rel[x] && !m->bar_only) {
                vclk_join(&w->know, &m->rel[x]);
                for (unsigned k = 0; k < LANES; k++) {
                    unsigned u = thread_of(wi, k), me = thread_of(wi, l);
                    if (m->lane[me].v[u] < m->rel[x].v[u])
                        m->lane[me].v[u] = m->rel[x].v[u];
                }
            }
            bool last_of_run = true;
            for (unsigned k = l + 1; k < LANES; k++)
                if ((mask >> k) & 1u) {
                    last_of_run = word_of[k] != x;
                    break;
                }
            if (!write || !last_of_run)
                continue;
            bool by_order = order == WR_ORDER_RELEASE;
            if (is_store) {
                memset(&m->rel[x], 0, sizeof m->rel[x]);
                m->has_rel[x] = false;
            }
            if (by_order || w->has_fence) {
                vclk pub;
                warp_view(m, wi, &pub);
                if (!by_order)
                    for (unsigned k = 0; k < LANES; k++)
                        pub.v[thread_of(wi, k)] = w->fence_tick[k];
                vclk_join(&m->rel[x], &pub);
                m->has_rel[x] = true;
            }
        }
    }
    if (conv)
        lanes_join(m, wi, mask);
}

static int pair_cmp(const void *a, const void *b)
{
    const racy_pair *x = a, *y = b;
    if (x->s1 != y->s1)
        return x->s1 < y->s1 ? -1 : 1;
    return x->s2 < y->s2 ? -1 : x->s2 > y->s2;
}

static bool model_pair_races(const model *m, uint64_t s1, uint64_t s2)
{
    racy_pair k = {s1, s2};
    return m->npairs && bsearch(&k, m->pairs, m->npairs, sizeof k, pair_cmp) != NULL;
}

/* bar_only: an atomic pair scoped may report (model.scope_pairs). */
static bool model_scope_pair(const model *m, uint64_t s1, uint64_t s2)
{
    racy_pair k = {s1, s2};
    return m->nscope_pairs &&
           bsearch(&k, m->scope_pairs, m->nscope_pairs, sizeof k, pair_cmp) != NULL;
}

/* Is lane access (s1, l1) on word racing with (s2, l2) in the model? */
static bool model_lane_pair_races(const model *m, unsigned word, uint64_t s1, unsigned l1,
                                  uint64_t s2, unsigned l2)
{
    const rec *a = NULL, *b = NULL;
    for (uint32_t i = 0; i < m->nhist[word]; i++) {
        const rec *r = &m->hist[word][i];
        if (r->seq == s1 && r->t % LANES == l1)
            a = r;
        if (r->seq == s2 && r->t % LANES == l2)
            b = r;
    }
    if (!a || !b || a->t == b->t || (!a->write && !b->write) || (a->atomic && b->atomic))
        return false;
    return m->snaps[b->snap].v[a->t] < m->snaps[a->snap].v[a->t];
}

/* ---- the random program, fed to the engine and the model together ---- */

typedef struct program {
    lf_run run;
    const wr_engine_ops *engine;
    bool bar_only;              /* the model's layer (model.bar_only) */
    model *m;
    uint64_t lanes[STEPS][LANES];
    uint32_t launch_id[LAUNCHES];
} program;

static void print_sync(uint64_t seq, uint32_t launch, uint32_t block, uint32_t warp,
                       const char *what, uint32_t mask)
{
    fprintf(stderr, "#%" PRIu64 " L%u b%u w%u %s %08x\n", seq, launch, block, warp, what, mask);
}

/* WR_ORACLE_TRACE=1: the programs' events on stderr, to debug a seed. */
static void print_event(uint64_t seq, const wr_event *ev)
{
    const wr_access *a = &ev->u.access;
    switch (ev->kind) {
    case WR_EV_ACCESS:
        fprintf(stderr, "#%" PRIu64 " L%u b%u w%u %s%s%s mask=%08x site=%u", seq, a->launch,
                a->block, a->warp, a->op == WR_OP_LOAD          ? "ld"
                : a->op == WR_OP_STORE       ? "st"
                : a->op == WR_OP_ATOMIC_LOAD  ? "ld.atomic"
                : a->op == WR_OP_ATOMIC_STORE ? "st.atomic"
                                              : "atom",
                a->scope == WR_SCOPE_BLOCK ? ".block" : "",
                a->order == WR_ORDER_RELEASE ? ".release" : "", a->active_mask, ev->site);
        for (unsigned l = 0; l < LANES; l++)
            if ((a->active_mask >> l) & 1u)
                fprintf(stderr, " %u:%u", l, (unsigned)((wr_access_lane_addr(a, l) - BASE) / 4));
        fprintf(stderr, "\n");
        break;
    case WR_EV_BARRIER:
        print_sync(seq, ev->u.barrier.launch, ev->u.barrier.block, ev->u.barrier.warp, "barrier",
                   WR_FULL_MASK);
        break;
    case WR_EV_WARP_SYNC:
        print_sync(seq, ev->u.warp_sync.launch, ev->u.warp_sync.block, ev->u.warp_sync.warp,
                   "syncwarp", ev->u.warp_sync.mask);
        break;
    case WR_EV_FENCE:
        print_sync(seq, ev->u.fence.launch, ev->u.fence.block, ev->u.fence.warp, "fence",
                   WR_FULL_MASK);
        break;
    case WR_EV_KERNEL_LAUNCH:
        fprintf(stderr, "#%" PRIu64 " launch L%u stream %u\n", seq, ev->u.launch.launch,
                ev->u.launch.stream);
        break;
    case WR_EV_KERNEL_END:
        fprintf(stderr, "#%" PRIu64 " end L%u\n", seq, ev->u.kernel_end.launch);
        break;
    default:
        break;
    }
}

static void feed(program *p, wr_event ev)
{
    static int trace = -1;
    if (trace < 0)
        trace = getenv("WR_ORACLE_TRACE") != NULL;
    if (trace)
        print_event(p->run.seq, &ev);
    lf_feed(&p->run, ev);
}

static uint32_t random_mask(const model *m, unsigned wi)
{
    switch (rnd(6)) {
    case 0: case 1: return WR_FULL_MASK;
    case 2: return m->w[wi].group ? m->w[wi].group : WR_FULL_MASK;   /* stays in lockstep */
    case 3: return 1u << rnd(LANES);
    case 4: return rnd(2) ? 0x0000ffffu : 0xffff0000u;
    default: return rnd(0xffffffffu) | 1u;
    }
}

static void launch(program *p, unsigned li, uint32_t stream)
{
    model *m = p->m;
    m->started[li] = true;
    m->stream[li] = stream;
    /* start knowledge: what the host saw complete, and the earlier kernel
     * of the same stream (which has finished: it emits nothing later) */
    for (unsigned b = 0; b < BLOCKS; b++)
        for (unsigned w = 0; w < WARPS; w++) {
            unsigned wi = warp_index(li, b, w);
            m->w[wi].know = m->host;
            for (unsigned pl = 0; pl < li; pl++)
                if (m->started[pl] && m->stream[pl] == stream)
                    for (unsigned x = 0; x < BLOCKS * WARPS; x++) {
                        vclk v;
                        warp_view(m, pl * BLOCKS * WARPS + x, &v);
                        vclk_join(&m->w[wi].know, &v);
                    }
        }
    wr_event e = lf_launch(p->launch_id[li], stream);
    e.u.launch.grid[0] = BLOCKS;
    e.u.launch.block_dim[0] = WARPS * LANES;
    feed(p, e);
}

static void kernel_end(program *p, unsigned li)
{
    model *m = p->m;
    m->ended[li] = true;
    for (unsigned x = 0; x < BLOCKS * WARPS; x++) {
        vclk v;
        warp_view(m, li * BLOCKS * WARPS + x, &v);
        vclk_join(&m->host, &v);
    }
    feed(p, lf_kernel_end(p->launch_id[li]));
}

static void step_access(program *p, unsigned step, unsigned li, unsigned b, unsigned w)
{
    model *m = p->m;
    unsigned wi = warp_index(li, b, w);
    uint32_t mask = random_mask(m, wi);
    /* atomics: RMWs (read and write; they release after a fence or with
     * release order), loads (they acquire at once, as every relaxed atomic
     * read but a CAS does) and stores (a release heads a new release
     * sequence, a relaxed store without a fence ends it) */
    static const uint8_t ops[] = {WR_OP_LOAD,       WR_OP_LOAD,       WR_OP_STORE,
                                  WR_OP_STORE,      WR_OP_ATOMIC_RMW, WR_OP_ATOMIC_RMW,
                                  WR_OP_ATOMIC_LOAD, WR_OP_ATOMIC_STORE};
    uint8_t op = ops[rnd(getenv("WR_ORACLE_NO_ATOMICS") ? 4 : 8)];
    unsigned word_of[LANES] = {0};
    /* a block-scoped atomic now and then: vc ignores scopes; for scoped
     * they decide atomic pairs only (plain accesses are weak: model) */
    uint8_t scope = !wr_op_is_atomic(op) ? 0 : rnd(4) ? WR_SCOPE_DEVICE : WR_SCOPE_BLOCK;
    wr_event e = lf_acc(SITE0 + step, p->launch_id[li], b, w, mask, op, scope, 0, 0);
    if (wr_op_writes(op) && wr_op_is_atomic(op) && rnd(4) == 0)
        e.u.access.order = WR_ORDER_RELEASE;   /* releases without a fence */
    switch (rnd(4)) {
    case 0: {   /* uniform: every lane one word */
        unsigned x = rnd(WORDS);
        for (unsigned l = 0; l < LANES; l++)
            word_of[l] = x;
        e.u.access.addr_mode = WR_ADDR_UNIFORM;
        e.u.access.base = BASE + 4ull * x;
        break;
    }
    case 1: {   /* coalesced, sometimes a whole aligned line (packed lines) */
        unsigned x0 = rnd(2) ? 0 : rnd(WORDS - LANES + 1);
        for (unsigned l = 0; l < LANES; l++)
            word_of[l] = x0 + l;
        e.u.access.addr_mode = WR_ADDR_STRIDED;
        e.u.access.base = BASE + 4ull * x0;
        e.u.access.stride = 4;
        break;
    }
    default: {  /* a gather / scatter, lanes sometimes on one word */
        for (unsigned l = 0; l < LANES; l++) {
            word_of[l] = l && rnd(4) == 0 ? word_of[l - 1] : rnd(WORDS);
            p->lanes[step][l] = (mask >> l) & 1u ? BASE + 4ull * word_of[l] : 0;
        }
        e.u.access.addr_mode = WR_ADDR_VECTOR;
        e.u.access.lane_addr = p->lanes[step];
        break;
    }
    }
    uint64_t seq = p->run.seq;
    feed(p, e);
    model_access(m, wi, mask, word_of, op, scope, e.u.access.order, seq, SITE0 + step);
}

static void step_barrier(program *p, unsigned li, unsigned b)
{
    model *m = p->m;
    for (unsigned w = 0; w < WARPS; w++) {
        fence(m, warp_index(li, b, w));   /* a barrier is a block-scope fence at arrival */
        feed(p, lf_barrier(p->launch_id[li], b, w, WARPS * LANES));
    }
    vclk j;
    memset(&j, 0, sizeof j);
    for (unsigned w = 0; w < WARPS; w++) {
        vclk v;
        warp_view(m, warp_index(li, b, w), &v);
        vclk_join(&j, &v);
    }
    for (unsigned w = 0; w < WARPS; w++) {
        unsigned wi = warp_index(li, b, w);
        vclk_join(&m->w[wi].know, &j);
        for (unsigned l = 0; l < LANES; l++)
            for (unsigned k = 0; k < LANES; k++)
                m->lane[thread_of(wi, l)].v[thread_of(wi, k)] = j.v[thread_of(wi, k)];
        m->w[wi].group = 0;
        m->w[wi].diverged = false;
    }
}

static void step_warp_sync(program *p, unsigned li, unsigned b, unsigned w)
{
    model *m = p->m;
    unsigned wi = warp_index(li, b, w);
    uint32_t mask;
    switch (rnd(4)) {
    case 0: mask = WR_FULL_MASK; break;
    case 1: mask = (1u << rnd(LANES)) | (1u << rnd(LANES)); break;
    case 2: mask = rnd(2) ? 0x0000ffffu : 0x00ff00ffu; break;
    default: mask = rnd(0xffffffffu) | 1u; break;
    }
    feed(p, lf_warp_sync(p->launch_id[li], b, w, mask));
    lanes_join(m, wi, mask);
    if (mask == WR_FULL_MASK) {
        m->w[wi].group = 0;
        m->w[wi].diverged = false;
    }
}

static void run_program(program *p, unsigned shards, uint64_t seed)
{
    rnd_state = seed * 0x9E3779B97F4A7C15ull + 7;
    memset(p->m, 0, sizeof *p->m);
    p->m->bar_only = p->bar_only;
    lf_start(&p->run, p->engine, shards);
    p->launch_id[0] = 1;
    p->launch_id[1] = 2;
    /* the second kernel: on the first one's stream, or another stream
     * started while the first runs, or after the host saw the first end */
    unsigned how = rnd(4);
    unsigned second_at = how == 0 ? STEPS : STEPS / 4 + rnd(STEPS / 2);
    launch(p, 0, 1);
    for (unsigned step = 0; step < STEPS; step++) {
        if (step == second_at) {
            if (how == 1)
                launch(p, 1, 1);            /* same stream: the first is done */
            else if (how == 2)
                launch(p, 1, 2);            /* concurrent */
            else {
                kernel_end(p, 0);           /* the host waited */
                launch(p, 1, 2);
            }
        }
        bool second = step >= second_at;
        unsigned li = second && (how != 2 || rnd(2)) ? 1 : 0;
        unsigned b = rnd(BLOCKS), w = rnd(WARPS);
        unsigned what = rnd(100);
        if (what < 4)
            step_barrier(p, li, b);
        else if (what < 10)
            step_warp_sync(p, li, b, w);
        else if (what < 13) {
            fence(p->m, warp_index(li, b, w));
            feed(p, lf_fence(p->launch_id[li], b, w, WR_FULL_MASK,
                             rnd(4) ? WR_SCOPE_DEVICE : WR_SCOPE_BLOCK));
        } else
            step_access(p, step, li, b, w);
    }
    for (unsigned li = 0; li < LAUNCHES; li++)
        if (p->m->started[li] && !p->m->ended[li])
            kernel_end(p, li);
    if (p->m->npairs)   /* (qsort and bsearch take no null array, even empty) */
        qsort(p->m->pairs, p->m->npairs, sizeof *p->m->pairs, pair_cmp);
    if (p->m->nscope_pairs)
        qsort(p->m->scope_pairs, p->m->nscope_pairs, sizeof *p->m->scope_pairs, pair_cmp);
}

static void check_seed(program *p, unsigned shards, uint64_t seed, uint64_t *groups_seen,
                       uint64_t *first_races, uint64_t *forgotten)
{
    run_program(p, shards, seed);
    wr_findings *f = lf_end(&p->run);
    model *m = p->m;
    const wr_race_group *g;
    size_t n = lf_groups(f, &g);
    for (size_t i = 0; i < n; i++) {
        const wr_race *r = &g[i].example;
        if (r->first.kind == WR_KIND_ATOMIC && r->second.kind == WR_KIND_ATOMIC) {
            cr_assert(model_scope_pair(m, r->first.seq, r->second.seq),
                      "seed %" PRIu64 ", %u shards: %s reports atomics #%" PRIu64
                      " and #%" PRIu64 ", whose scopes hold both threads", seed, shards,
                      p->engine->name, r->first.seq, r->second.seq);
            continue;
        }
        cr_assert(model_pair_races(m, r->first.seq, r->second.seq),
                  "seed %" PRIu64 ", %u shards: %s reports events #%" PRIu64 " and #%" PRIu64
                  " (sites %u, %u; lanes %u, %u at word %u), which the model orders", seed,
                  shards, p->engine->name, r->first.seq, r->second.seq, r->first.site, r->second.site,
                  r->first.lane, r->second.lane, (unsigned)((r->addr - BASE) / 4));
        cr_assert(r->addr >= BASE && r->addr < BASE + 4 * WORDS, "seed %" PRIu64 ": address",
                  seed);
        unsigned word = (unsigned)((r->addr - BASE) / 4);
        cr_assert(model_lane_pair_races(m, word, r->first.seq, r->first.lane, r->second.seq,
                                        r->second.lane),
                  "seed %" PRIu64 ", %u shards: example #%" PRIu64 " lane %u vs #%" PRIu64
                  " lane %u on word %u is not a race in the model", seed, shards,
                  r->first.seq, r->first.lane, r->second.seq, r->second.lane, word);
    }
    *groups_seen += n;
    /* completeness for each word's first race, but where vc may have let
     * every partner go: an atomic with more than WR_HB_KEPT_ATOMICS atomic
     * accesses to the word after it (hbcore.h), or an access of the same
     * warp superseded through another warp (round_trip) */
    for (unsigned x = 0; x < WORDS; x++) {
        if (!m->word_raced[x])
            continue;
        bool may_forget = true;
        for (uint32_t k = 0; k < m->npartners[x]; k++)
            may_forget &= (m->first_partners[x][k].atomic &&
                           m->first_partners[x][k].atomics_after > WR_HB_KEPT_ATOMICS) ||
                          m->first_partners[x][k].round_trip;
        if (may_forget) {
            (*forgotten)++;
            continue;
        }
        (*first_races)++;
        bool found = false;
        for (uint32_t k = 0; k < m->npartners[x] && !found; k++) {
            uint32_t site1 = m->first_partners[x][k].site, site2 = m->first_racy_site[x];
            for (size_t i = 0; i < n && !found; i++) {
                const wr_race *r = &g[i].example;
                found = (r->first.site == site1 && r->second.site == site2) ||
                        (r->first.site == site2 && r->second.site == site1);
            }
        }
        cr_assert(found, "seed %" PRIu64 ", %u shards: word %u first races at event #%" PRIu64
                  " lane %u (with #%" PRIu64 " lane %u, ...), which %s does not report",
                  seed, shards, x, m->first_racy_seq[x], m->first_racy_lane[x],
                  m->first_partners[x][0].seq, m->first_partners[x][0].lane, p->engine->name);
    }
    wr_findings_free(f);
    for (unsigned i = 0; i < WORDS; i++) {
        free(m->hist[i]);
        free(m->first_partners[i]);
    }
    free(m->snaps);
    free(m->pairs);
    free(m->scope_pairs);
}

static void check_all(const wr_engine_ops *engine, bool bar_only, unsigned shards)
{
    program *p = calloc(1, sizeof *p);
    p->engine = engine;
    p->bar_only = bar_only;
    p->m = calloc(1, sizeof *p->m);
    uint64_t groups = 0, first = 0, forgotten = 0;
    uint64_t first_seed = 1, last_seed = SEEDS;
    if (getenv("WR_ORACLE_SEEDS"))   /* a longer run than the suite's */
        last_seed = strtoull(getenv("WR_ORACLE_SEEDS"), NULL, 10);
    if (getenv("WR_ORACLE_SEED"))   /* one seed, to debug it */
        first_seed = last_seed = strtoull(getenv("WR_ORACLE_SEED"), NULL, 10);
    for (uint64_t seed = first_seed; seed <= last_seed; seed++)
        check_seed(p, shards, seed, &groups, &first, &forgotten);
    if (first_seed != last_seed)
        cr_assert_gt(groups, SEEDS, "the random programs must race to check anything");
    if (first_seed != last_seed) {
        cr_assert_gt(first, SEEDS, "the random programs must race to check anything");
        /* the exemption is for the rare word, not a way around the check */
        cr_assert_lt(forgotten * 20, first, "%" PRIu64 " first races exempted of %" PRIu64,
                     forgotten, first + forgotten);
    }
    free(p->m);
    free(p);
}

Test(vc_oracle, reports_exactly_what_the_model_says_one_shard) { check_all(&wr_engine_vc, false, 1); }
Test(vc_oracle, reports_exactly_what_the_model_says_three_shards) { check_all(&wr_engine_vc, false, 3); }

/* The programs' plain accesses are weak, so the scoped engine reports a
 * pair with a plain access exactly when the barrier-only layer does not
 * order it (missing-sync or a scope race, or weak-access where an acquire
 * orders it), and a pair of atomics only where their scopes do not both
 * hold both threads (model.scope_pairs). */
Test(vc_oracle, scoped_reports_what_the_barrier_only_model_says_one_shard)
{
    check_all(&wr_engine_scoped, true, 1);
}
Test(vc_oracle, scoped_reports_what_the_barrier_only_model_says_three_shards)
{
    check_all(&wr_engine_scoped, true, 3);
}

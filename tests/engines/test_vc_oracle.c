/*
 * The vc and scoped engines against a naive reference model of their
 * semantics (ENGINES.md, "vc" and "scoped"), on random programs.  The
 * model keeps scoped's three layers (scope-oblivious, scoped: an acquire
 * takes a release only where the releaser is within both scopes,
 * barrier-only: no acquire orders anything); vc's rules read the first,
 * scoped's read the barrier-only layer for a pair with a weak access and
 * the scoped layer for a pair of strong ones (programs with and without
 * volatile plain accesses).  Atomic pairs scoped may report only where
 * their scopes do not both hold both threads.
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
 *     instructions that race in the model, and its example (lanes, byte:
 *     below) is a racing pair of lane accesses;
 *   - scoped: the example's verdict is the model's class of the pair;
 *   - completeness where FastTrack promises it: for every byte (word), the
 *     first lane access that races with an earlier one is reported, paired
 *     with one of the accesses it races with.  (Later races on a byte that
 *     already raced may be subsumed: the engine keeps the last write and
 *     the unordered reads only.)
 * Counts are not compared (a group's count, or that a race met on several
 * bytes of one word by one lane's access counts once).
 * Every instruction has its own site, so a race group names one pair of
 * instructions.
 *
 * Two kinds of program: two launches (the second on the first one's
 * stream, concurrent on another, or after the host saw the first end),
 * and the host side of oracle.h: up to four launches on streams 0-3, host
 * copies, events, stream waits, stream, event and device syncs, launch
 * ends.  There an epoch (launch or copy) starts, when it first acts, with
 * what every epoch ordered before it knew at its end, its warps' whole
 * knowledge: also what they learned by acquires from another stream after
 * the host had issued the later work (ENGINES.md, vc, "Orders").  A copy
 * is one instruction of a host thread of its own, a strong plain access
 * to each word it reads or writes.
 *
 * Memory is byte-addressed: the model keeps each byte's history (a cell),
 * and an access steps the cells of the bytes it covers, each as a word's
 * history was stepped; release sequences stay per word, as the engines'
 * (vclock.c, access_sync_words).  A word that every access so far covered
 * whole keeps one history for its four bytes (cell 4 i: they are alike)
 * until an access covers part of it, which copies that history to each
 * byte; so on programs of whole words the model is the per-word one.  A
 * race's example names a byte both sides touched (the word's first byte
 * where no access split it), and the example's lane pair must race on
 * that byte; completeness holds for each byte's first race.  The subword
 * programs add naturally aligned 1- and 2-byte accesses (uniform,
 * coalesced, one element of every word, gathers) and host copies that
 * start or end inside a word.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "hbcore.h"
#include "warprace/trace.h"
#define ORACLE_MAX_EPOCHS 7   /* launches and copies of the host-side programs */
#include "oracle.h"

extern const wr_engine_ops wr_engine_vc, wr_engine_scoped;

enum {
    LAUNCHES = 4,              /* two in the programs of two launches */
    BLOCKS = 2,
    WARPS = 2,                 /* per block: blocks of 64 threads */
    LANES = 32,
    LAUNCH_WARPS = LAUNCHES * BLOCKS * WARPS,
    WARPS_ALL = LAUNCH_WARPS + ORACLE_MAX_EPOCHS,   /* a host copy: a warp of one lane */
    THREADS = WARPS_ALL * LANES,
    WORDS = 48,                /* of global memory; of each block's shared memory */
    MODEL_WORDS = BLOCKS * WORDS,   /* words the model tells apart */
    MODEL_CELLS = 4 * MODEL_WORDS,  /* their bytes: cell 4 i + b is word i's byte b */
    STEPS = 260,
    SEEDS = 400,
};

#define MAX_SEQ 2048u           /* events of one program (a step feeds at most WARPS) */
#define BASE 0x7f9c5fe20000ull   /* word i at BASE + 4 i (a 47-bit device address, as real traces have) */
#define SHARED_BASE 0x100u     /* dsmem programs: block b's word i at its shared
                                  offset SHARED_BASE + 4 i, model word b * WORDS + i */
#define SITE0 1000u            /* site of step i: SITE0 + i */

typedef struct vclk {
    uint16_t v[THREADS];        /* ticks stay below STEPS */
} vclk;

/* Threads the current program may have: the programs of two launches
 * (the first ones here) do not pay for the larger ones' clocks. */
static unsigned prog_threads = THREADS;

static void vclk_copy(vclk *dst, const vclk *src)
{
    memcpy(dst->v, src->v, prog_threads * sizeof *dst->v);
}

static void vclk_zero(vclk *v) { memset(v->v, 0, prog_threads * sizeof *v->v); }

static void vclk_join(vclk *dst, const vclk *src)
{
    for (unsigned i = 0; i < prog_threads; i++)
        if (dst->v[i] < src->v[i])
            dst->v[i] = src->v[i];
}

typedef struct rec {            /* one lane's access to one word */
    uint64_t seq;
    uint32_t site, snap;        /* snap: index of the thread's clock copy */
    uint16_t t;
    uint8_t write, atomic, strong, scope;
} rec;

/* The model's layers (ENGINES.md, scoped): scope-oblivious (all vc
 * knows), scoped (an acquire takes a release only where both scopes hold
 * both parties) and barrier-only (no acquire orders anything). */
enum { L_OBL, L_SC, L_BAR, NLAYERS };

typedef struct mwarp {
    uint32_t group;             /* lockstep group (0: none since reconvergence) */
    bool diverged, has_fence;
    uint8_t fence_scope;        /* of the warp's last fence (a barrier: block) */
    uint32_t fence_tick[LANES]; /* each lane's tick at the warp's last fence */
    vclk know[NLAYERS];         /* what the warp learned from outside itself */
    /* split programs: arrived at a cluster or grid barrier (ARRIVE or
     * ARRIVE_RELAXED, of scope `armed`), its WAIT still to come, which
     * takes `pending`: what the completed phase released */
    uint8_t armed;
    vclk pending[NLAYERS];
} mwarp;

typedef struct mrel {           /* one release of a word's sequence, scoped layer */
    vclk clk;
    uint8_t scope;              /* effective: the narrower of fence and atomic */
    unsigned block;             /* releaser's block (launches number theirs apart) */
} mrel;

/* mbarrier programs: MBARS mbarrier objects per block, at shared offsets
 * MBAR_BASE + 8 i */
enum { MBARS = 2, MBAR_BASE = 0x8000 };

typedef struct mmbar {          /* an mbarrier, as the model keeps it */
    uint32_t count, pending, phase;   /* count 0: not initialized */
    bool done_ok[2];
    vclk acc[NLAYERS];          /* what the phase's releasing arrivals knew */
    vclk done[2][NLAYERS];      /* the latest completed phase of each parity */
} mmbar;

typedef struct racy_pair {      /* instructions (by seq) that race somewhere */
    uint64_t s1, s2;
} racy_pair;

typedef struct partner {        /* an access the word's first race races with */
    uint64_t seq;
    uint32_t site, lane;
    bool atomic;
    uint32_t atomics_after;     /* atomic lane accesses to the byte after it */
    bool round_trip;            /* superseded through another warp (round_trip) */
} partner;

typedef struct model {
    /* scoped's rules: a pair with a weak access races unless the
     * barrier-only layer orders it, a pair of strong accesses unless the
     * scoped layer does; vc's: unless the scope-oblivious layer does */
    bool scoped;
    unsigned nlayers;           /* vc's rules need the scope-oblivious layer only */
    vclk lane[NLAYERS][THREADS]; /* per-lane entries of its own warp */
    mwarp w[WARPS_ALL];
    vclk rel[MODEL_WORDS];            /* what the word's release sequence carries */
    bool has_rel[MODEL_WORDS];
    mrel *srel[MODEL_WORDS];          /* the same releases one by one, scoped layer */
    uint32_t nsrel[MODEL_WORDS], capsrel[MODEL_WORDS];
    vclk host[NLAYERS];         /* what the host has seen complete */
    mmbar mbar[LAUNCHES][BLOCKS][MBARS];
    bool started[LAUNCHES], ended[LAUNCHES];
    uint32_t stream[LAUNCHES];
    /* history, by byte (cell 4 i + b: word i's byte b); a word not split
     * keeps its four bytes' history in cell 4 i */
    bool split[MODEL_WORDS];
    rec *hist[MODEL_CELLS];
    uint32_t nhist[MODEL_CELLS], caphist[MODEL_CELLS];
    vclk *snaps;                /* NLAYERS per access: snaps[snap * NLAYERS + layer] */
    uint32_t nsnaps, capsnaps;
    bool byte_raced[MODEL_CELLS];
    uint64_t first_racy_seq[MODEL_CELLS];   /* the first racing access of the byte */
    uint32_t first_racy_lane[MODEL_CELLS], first_racy_site[MODEL_CELLS];
    partner *first_partners[MODEL_CELLS];
    uint32_t npartners[MODEL_CELLS];
    racy_pair *pairs;
    size_t npairs, cappairs;
    /* scoped: atomic pairs whose scopes do not both hold both threads;
     * scoped may report them (scope-atomic) or not (on a flag word, or
     * when ordered), so they are allowed, not required */
    racy_pair *scope_pairs;
    size_t nscope_pairs, capscope_pairs;
    /* [pairs, scope_pairs][s1]: s2 + 1 of the last pair pushed with s1 */
    uint64_t pair_pushed[2][MAX_SEQ];
} model;

static unsigned warp_index(unsigned li, unsigned b, unsigned w) { return (li * BLOCKS + b) * WARPS + w; }
static unsigned thread_of(unsigned wi, unsigned lane) { return wi * LANES + lane; }

/* The clock thread t acts with in a layer: its warp's outside knowledge,
 * its own warp's entries as the lane knows them. */
static void full_clock(const model *m, unsigned layer, unsigned t, vclk *out)
{
    unsigned wi = t / LANES;
    vclk_copy(out, &m->w[wi].know[layer]);
    for (unsigned l = 0; l < LANES; l++)
        out->v[thread_of(wi, l)] = m->lane[layer][t].v[thread_of(wi, l)];
}

static bool knows(const model *m, unsigned layer, unsigned t, unsigned t_prev, uint32_t tick)
{
    unsigned wi = t / LANES;
    if (t_prev / LANES == wi)
        return m->lane[layer][t].v[t_prev] >= tick;
    return m->w[wi].know[layer].v[t_prev] >= tick;
}

/* Lanes in `mask` of warp wi join each other's own-warp entries (every
 * layer: lockstep and warp syncs order weak accesses too). */
static void lanes_join(model *m, unsigned wi, uint32_t mask)
{
    for (unsigned layer = 0; layer < m->nlayers; layer++) {
        vclk *lane = m->lane[layer];
        vclk j;
        vclk_zero(&j);
        for (unsigned l = 0; l < LANES; l++)
            if ((mask >> l) & 1u)
                for (unsigned k = 0; k < LANES; k++) {
                    unsigned u = thread_of(wi, k);
                    if (j.v[u] < lane[thread_of(wi, l)].v[u])
                        j.v[u] = lane[thread_of(wi, l)].v[u];
                }
        for (unsigned l = 0; l < LANES; l++)
            if ((mask >> l) & 1u)
                for (unsigned k = 0; k < LANES; k++) {
                    unsigned u = thread_of(wi, k);
                    lane[thread_of(wi, l)].v[u] = j.v[u];
                }
    }
}

/* The warp's whole knowledge in a layer (outside entries and every lane's
 * ticks). */
static void warp_view(const model *m, unsigned layer, unsigned wi, vclk *out)
{
    vclk_copy(out, &m->w[wi].know[layer]);
    for (unsigned l = 0; l < LANES; l++)
        for (unsigned k = 0; k < LANES; k++) {
            unsigned u = thread_of(wi, k);
            if (out->v[u] < m->lane[layer][thread_of(wi, l)].v[u])
                out->v[u] = m->lane[layer][thread_of(wi, l)].v[u];
        }
}

/* Thread t (lane `me` of warp wi) acquires clock c in a layer. */
static void acquire(model *m, unsigned layer, unsigned wi, unsigned me, const vclk *c)
{
    vclk_join(&m->w[wi].know[layer], c);
    for (unsigned k = 0; k < LANES; k++) {
        unsigned u = thread_of(wi, k);
        if (m->lane[layer][me].v[u] < c->v[u])
            m->lane[layer][me].v[u] = c->v[u];
    }
}

/* Blocks per cluster of the current program's launches: 1, or with
 * cluster and grid barriers (xbar programs) 1 or 2, BLOCKS a multiple. */
static unsigned cluster_blocks = 1;

/* The smallest scope holding two blocks (numbered apart across launches,
 * BLOCKS each): the same cluster, else a device apart. */
static uint8_t relation(unsigned block1, unsigned block2)
{
    if (block1 == block2)
        return WR_SCOPE_BLOCK;
    return block1 / cluster_blocks == block2 / cluster_blocks ? WR_SCOPE_CLUSTER
                                                              : WR_SCOPE_DEVICE;
}

static uint8_t min_scope(uint8_t a, uint8_t b) { return a < b ? a : b; }

/* Does the scoped layer take release r for an acquire at acq_scope by wi? */
static bool scoped_takes(const mrel *r, unsigned wi, uint8_t acq_scope)
{
    return relation(wi / WARPS, r->block) <= min_scope(r->scope, acq_scope);
}

static void fence(model *m, unsigned wi, uint8_t scope)
{
    m->w[wi].has_fence = true;
    m->w[wi].fence_scope = scope;
    for (unsigned l = 0; l < LANES; l++)
        m->w[wi].fence_tick[l] = m->lane[L_OBL][thread_of(wi, l)].v[thread_of(wi, l)];
}

static void pair_push(racy_pair **v, size_t *n, size_t *cap, uint64_t s1, uint64_t s2)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *v = realloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = (racy_pair){s1, s2};
}

/* Once per pair of instructions, whatever the lanes. */
static void add_pair(model *m, uint64_t s1, uint64_t s2)
{
    if (s1 >= MAX_SEQ)
        cr_assert_fail("event #%" PRIu64 " beyond MAX_SEQ", s1);
    if (m->pair_pushed[0][s1] == s2 + 1)
        return;
    m->pair_pushed[0][s1] = s2 + 1;
    pair_push(&m->pairs, &m->npairs, &m->cappairs, s1, s2);
}

/* Do the scopes of two atomics both hold both threads?  (A thread's block
 * is its warp index over WARPS: launches number their blocks apart.) */
static bool scopes_hold(unsigned t1, uint8_t s1, unsigned t2, uint8_t s2)
{
    uint8_t narrower = s1 < s2 ? s1 : s2;
    return narrower >= WR_SCOPE_DEVICE || t1 / LANES / WARPS == t2 / LANES / WARPS;
}

/* Is hist[word][i], an access of t's own warp, superseded by a later
 * access of another warp that is ordered after it and before t: a plain
 * write (the last write), or for a read a later read that prunes it from
 * the read set (a plain one, or an atomic one for an atomic read)?  Then t
 * knows that access through its warp's knowledge (ENGINES.md, vc, "Known
 * limits": knowledge from other warps is the warp's), while the model,
 * per lane inside a warp, need not order t after the access itself; vc
 * keeps the last write and the unordered reads only, so it cannot report
 * that pair. */
static bool round_trip(const model *m, unsigned layer, unsigned t, unsigned cell, uint32_t i)
{
    const rec *r = &m->hist[cell][i];
    if (r->t / LANES != t / LANES)
        return false;
    uint32_t tick = m->snaps[r->snap * NLAYERS + layer].v[r->t];
    for (uint32_t j = i + 1; j < m->nhist[cell]; j++) {
        const rec *q = &m->hist[cell][j];
        bool supersedes = q->write ? !q->atomic : !r->write && (!q->atomic || r->atomic);
        if (supersedes && q->t / LANES != t / LANES &&
            m->snaps[q->snap * NLAYERS + layer].v[r->t] >= tick &&
            knows(m, layer, t, q->t, m->snaps[q->snap * NLAYERS + layer].v[q->t]))
            return true;
    }
    return false;
}

/* What the model calls a pair of lane accesses, earlier a, later b. */
enum { PAIR_ORDERED, PAIR_MISSING_SYNC, PAIR_SCOPE, PAIR_WEAK };

/* Is lane access a ordered before b by the model's rule for the pair (the
 * scoped layer between strong accesses, the barrier-only one otherwise),
 * whether or not they conflict? */
static bool pair_ordered(const model *m, const rec *a, const rec *b)
{
    unsigned layer = a->strong && b->strong ? L_SC : L_BAR;
    return a->t == b->t ||
           m->snaps[b->snap * NLAYERS + layer].v[a->t] >= m->snaps[a->snap * NLAYERS].v[a->t];
}

/* scoped: is hist[word][i] superseded for `cur` by a later access q of
 * the word ordered after it and before cur, where the engine lets q stand
 * for it (FastTrack: a write replaces the last write and prunes the reads
 * ordered before it; a read prunes the reads ordered before it)?  The
 * model's two orders (pair_ordered) do not compose, and PTX's causality
 * order, which is transitive, orders hist[word][i] before cur through q;
 * the model, pair by pair, does not.  Seen: a weak read, a volatile read
 * of its warp after a barrier, then (release, acquire, barrier) another
 * block's atomic store; a weak read, an atomic store of its warp in
 * lockstep that releases, another block's atomic that acquires it; an
 * atomic, a volatile store after it by an acquire, a weak load after that
 * store by a barrier. */
static bool superseded(const model *m, unsigned cell, uint32_t i, const rec *cur)
{
    const rec *r = &m->hist[cell][i];
    for (uint32_t j = i + 1; j < m->nhist[cell]; j++) {
        const rec *q = &m->hist[cell][j];
        if ((q->write || !r->write) && pair_ordered(m, r, q) && pair_ordered(m, q, cur))
            return true;
    }
    return false;
}

static unsigned pair_class(const model *m, const rec *a, const rec *b)
{
    if (a->t == b->t || (!a->write && !b->write) || (a->atomic && b->atomic))
        return PAIR_ORDERED;
    const vclk *snap_b = &m->snaps[b->snap * NLAYERS];
    uint32_t tick = m->snaps[a->snap * NLAYERS].v[a->t];
    bool obl = snap_b[L_OBL].v[a->t] >= tick;
    if (!m->scoped)
        return obl ? PAIR_ORDERED : PAIR_MISSING_SYNC;
    bool sc = snap_b[L_SC].v[a->t] >= tick, bar = snap_b[L_BAR].v[a->t] >= tick;
    if (sc && (bar || (a->strong && b->strong)))
        return PAIR_ORDERED;
    return sc ? PAIR_WEAK : obl ? PAIR_SCOPE : PAIR_MISSING_SYNC;
}

/* The clocks thread t acts with in every layer, into out[NLAYERS]; an
 * atomic that reads the word reads its release sequence: what was
 * released there happens before it (it is the acquire). */
static void access_clocks(const model *m, unsigned t, unsigned word, bool reads, uint8_t scope,
                          vclk *out)
{
    for (unsigned layer = 0; layer < m->nlayers; layer++)
        full_clock(m, layer, t, &out[layer]);
    if (!reads)
        return;
    if (m->has_rel[word])
        vclk_join(&out[L_OBL], &m->rel[word]);
    for (uint32_t i = 0; m->scoped && i < m->nsrel[word]; i++)
        if (scoped_takes(&m->srel[word][i], t / LANES, scope))
            vclk_join(&out[L_SC], &m->srel[word][i].clk);
}

/* The clocks thread t acts with at its access of `word` (access_clocks),
 * kept as snapshot; its index, for each byte the access steps. */
static uint32_t take_snap(model *m, unsigned t, unsigned word, bool reads, uint8_t scope)
{
    if (m->nsnaps == m->capsnaps) {
        m->capsnaps = m->capsnaps ? 2 * m->capsnaps : 512;
        m->snaps = realloc(m->snaps, m->capsnaps * NLAYERS * sizeof *m->snaps);
    }
    access_clocks(m, t, word, reads, scope, &m->snaps[m->nsnaps * NLAYERS]);
    return m->nsnaps++;
}

/* Thread t's access (lane `lane`, clocks snap) to the byte or bytes of
 * cell: a byte of a split word, or an unsplit word's four. */
static void lane_access(model *m, unsigned t, unsigned cell, uint32_t snap, uint64_t seq,
                        uint32_t site, bool write, bool atomic, bool strong, uint8_t scope,
                        unsigned lane)
{
    if (m->nhist[cell] == m->caphist[cell]) {
        m->caphist[cell] = m->caphist[cell] ? 2 * m->caphist[cell] : 64;
        m->hist[cell] = realloc(m->hist[cell], m->caphist[cell] * sizeof(rec));
    }
    rec cur = {.seq = seq, .site = site, .snap = snap, .t = (uint16_t)t,
               .write = write, .atomic = atomic, .strong = strong, .scope = scope};
    uint32_t atomics = 0, atomics_seen = 0;
    for (uint32_t i = 0; i < m->nhist[cell]; i++)
        atomics += m->hist[cell][i].atomic;
    for (uint32_t i = 0; i < m->nhist[cell]; i++) {
        const rec *r = &m->hist[cell][i];
        atomics_seen += r->atomic;
        if (r->atomic && atomic && r->t != t) {
            if (m->scoped && !scopes_hold(r->t, r->scope, t, scope))
                if (m->pair_pushed[1][r->seq] != seq + 1) {
                    m->pair_pushed[1][r->seq] = seq + 1;
                    pair_push(&m->scope_pairs, &m->nscope_pairs, &m->capscope_pairs, r->seq,
                              seq);
                }
            continue;
        }
        if (pair_class(m, r, &cur) == PAIR_ORDERED)
            continue;
        add_pair(m, r->seq, seq);
        if (!m->byte_raced[cell] || (m->first_racy_seq[cell] == seq &&
                                     m->first_racy_lane[cell] == lane)) {
            m->byte_raced[cell] = true;
            m->first_racy_seq[cell] = seq;
            m->first_racy_lane[cell] = lane;
            m->first_racy_site[cell] = site;
            m->first_partners[cell] = realloc(m->first_partners[cell],
                                              (m->npartners[cell] + 1) * sizeof(partner));
            /* scoped keeps the last write by the barrier-only layer's
             * orderings, or the scoped layer's between strong accesses */
            bool trip = m->scoped ? superseded(m, cell, i, &cur) ||
                                        round_trip(m, L_BAR, t, cell, i) ||
                                        round_trip(m, L_SC, t, cell, i)
                                  : round_trip(m, L_OBL, t, cell, i);
            m->first_partners[cell][m->npartners[cell]++] =
                (partner){r->seq, r->site, r->t % LANES, r->atomic, atomics - atomics_seen, trip};
        }
    }
    m->hist[cell][m->nhist[cell]++] = cur;
}

/* Word `word` gets a history per byte: each byte's is the word's so far
 * (every access before covered all four), its first race too. */
static void split_word(model *m, unsigned word)
{
    if (m->split[word])
        return;
    m->split[word] = true;
    unsigned c0 = 4 * word;
    for (unsigned c = c0 + 1; c < c0 + 4; c++) {
        cr_assert(!m->nhist[c] && !m->npartners[c]);
        if (m->nhist[c0]) {
            m->caphist[c] = m->caphist[c0];
            m->hist[c] = malloc(m->caphist[c] * sizeof(rec));
            memcpy(m->hist[c], m->hist[c0], m->nhist[c0] * sizeof(rec));
            m->nhist[c] = m->nhist[c0];
        }
        m->byte_raced[c] = m->byte_raced[c0];
        m->first_racy_seq[c] = m->first_racy_seq[c0];
        m->first_racy_lane[c] = m->first_racy_lane[c0];
        m->first_racy_site[c] = m->first_racy_site[c0];
        if (m->npartners[c0]) {
            m->first_partners[c] = malloc(m->npartners[c0] * sizeof(partner));
            memcpy(m->first_partners[c], m->first_partners[c0],
                   m->npartners[c0] * sizeof(partner));
            m->npartners[c] = m->npartners[c0];
        }
    }
}

/* Bytes subword counts: those stepped by an access that covered part of
 * their word (subword programs must have many). */
static uint64_t subword_bytes;

/* Thread t's access to bytes [lo, end) of word `word` (0 <= lo < end <= 4):
 * the word's cell while it is whole and the access covers it, else the
 * cells of those bytes, splitting it first. */
static void word_access(model *m, unsigned t, unsigned word, unsigned lo, unsigned end,
                        uint32_t snap, uint64_t seq, uint32_t site, bool write, bool atomic,
                        bool strong, uint8_t scope, unsigned lane)
{
    if (lo == 0 && end == 4 && !m->split[word]) {
        lane_access(m, t, 4 * word, snap, seq, site, write, atomic, strong, scope, lane);
        return;
    }
    split_word(m, word);
    subword_bytes += end - lo < 4 ? end - lo : 0;
    for (unsigned b = lo; b < end; b++)
        lane_access(m, t, 4 * word + b, snap, seq, site, write, atomic, strong, scope, lane);
}

/* An access instruction of `size` bytes (1, 2 or 4, naturally aligned);
 * lanes in mask touch word word_of[lane] from its byte byte_of[lane]. */
static void model_access(model *m, unsigned wi, uint32_t mask, const unsigned *word_of,
                         const unsigned *byte_of, unsigned size, uint8_t op, uint8_t scope,
                         uint8_t order, uint64_t seq, uint32_t site)
{
    mwarp *w = &m->w[wi];
    if (!w->group && !w->diverged)
        w->group = mask;
    if (mask != w->group)
        w->diverged = true;
    bool conv = !w->diverged;
    bool write = wr_op_writes(op), atomic = wr_op_is_atomic(op);
    bool strong = atomic || order != WR_ORDER_WEAK;
    /* strong accesses synchronize: atomics, and plain ones that are
     * volatile (relaxed at system scope) */
    bool reads = strong && wr_op_reads(op);
    bool is_store = op == WR_OP_ATOMIC_STORE || (strong && op == WR_OP_STORE);
    uint8_t eff_scope = scope ? scope : atomic ? WR_SCOPE_DEVICE : WR_SCOPE_SYSTEM;
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            for (unsigned layer = 0; layer < m->nlayers; layer++)
                m->lane[layer][thread_of(wi, l)].v[thread_of(wi, l)]++;
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u) {
            unsigned t = thread_of(wi, l);
            uint32_t snap = take_snap(m, t, word_of[l], reads, eff_scope);
            word_access(m, t, word_of[l], byte_of[l], byte_of[l] + size, snap, seq, site, write,
                        atomic, strong, eff_scope, l);
        }
    if (strong) {
        /* per run of lanes on one word, in lane order: each lane reads the
         * word (a relaxed RMW or load acquires: every release of the
         * sequence in the scope-oblivious layer, those whose scope and the
         * atomic's hold both parties in the scoped layer), then writes it:
         * a release (release order: of all the warp did so far, at the
         * atomic's scope; after a fence: of what it did up to the fence, at
         * the narrower of the two) joins the release sequence, or heads a
         * new one for a store; a store that does not release ends it */
        for (unsigned l = 0; l < LANES; l++) {
            if (!((mask >> l) & 1u))
                continue;
            unsigned x = word_of[l], me = thread_of(wi, l);
            if (reads) {
                if (m->has_rel[x])
                    acquire(m, L_OBL, wi, me, &m->rel[x]);
                for (uint32_t i = 0; m->scoped && i < m->nsrel[x]; i++)
                    if (scoped_takes(&m->srel[x][i], wi, eff_scope))
                        acquire(m, L_SC, wi, me, &m->srel[x][i].clk);
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
                m->nsrel[x] = 0;
            }
            if (by_order || w->has_fence) {
                vclk pub[NLAYERS];
                for (unsigned layer = L_OBL; layer < m->nlayers && layer <= L_SC; layer++) {
                    warp_view(m, layer, wi, &pub[layer]);
                    if (!by_order)
                        for (unsigned k = 0; k < LANES; k++)
                            pub[layer].v[thread_of(wi, k)] = w->fence_tick[k];
                }
                vclk_join(&m->rel[x], &pub[L_OBL]);
                m->has_rel[x] = true;
                if (!m->scoped)
                    continue;
                if (m->nsrel[x] == m->capsrel[x]) {
                    m->capsrel[x] = m->capsrel[x] ? 2 * m->capsrel[x] : 8;
                    m->srel[x] = realloc(m->srel[x], m->capsrel[x] * sizeof(mrel));
                }
                m->srel[x][m->nsrel[x]++] =
                    (mrel){.clk = pub[L_SC],
                           .scope = by_order ? eff_scope : min_scope(w->fence_scope, eff_scope),
                           .block = wi / WARPS};
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

/* scoped: an atomic pair it may report (model.scope_pairs). */
static bool model_scope_pair(const model *m, uint64_t s1, uint64_t s2)
{
    racy_pair k = {s1, s2};
    return m->nscope_pairs &&
           bsearch(&k, m->scope_pairs, m->nscope_pairs, sizeof k, pair_cmp) != NULL;
}

/* What the model calls lane access (s1, l1) on cell with (s2, l2). */
static unsigned model_lane_pair(const model *m, unsigned cell, uint64_t s1, unsigned l1,
                                uint64_t s2, unsigned l2)
{
    const rec *a = NULL, *b = NULL;
    for (uint32_t i = 0; i < m->nhist[cell]; i++) {
        const rec *r = &m->hist[cell][i];
        /* a host copy's thread has no lane (UINT32_MAX in a report) */
        unsigned lane = r->t / LANES >= LAUNCH_WARPS ? UINT32_MAX : r->t % LANES;
        if (r->seq == s1 && lane == l1)
            a = r;
        if (r->seq == s2 && lane == l2)
            b = r;
    }
    return a && b ? pair_class(m, a, b) : PAIR_ORDERED;
}

/* The classes of the examples checked (check_all). */
static uint64_t class_seen[PAIR_WEAK + 1];

/* Does an engine's verdict name the model's class of the pair? */
static bool verdict_fits(unsigned cls, unsigned verdict)
{
    switch (cls) {
    case PAIR_MISSING_SYNC: return verdict == WR_VERDICT_MISSING_SYNC;
    case PAIR_WEAK: return verdict == WR_VERDICT_WEAK_ACCESS;
    case PAIR_SCOPE:
        return verdict == WR_VERDICT_SCOPE_FENCE || verdict == WR_VERDICT_SCOPE_ATOMIC ||
               verdict == WR_VERDICT_SCOPE_LOCK;
    default: return false;
    }
}

/* ---- the random program, fed to the engine and the model together ---- */

typedef struct program {
    lf_run run;
    const wr_engine_ops *engine;
    bool scoped;                /* the model's rules (model.scoped) */
    bool strong_plain;          /* some plain accesses strong (volatile) */
    bool host_side;             /* launches, copies and host orders from oracle.h */
    bool xbar;                  /* cluster and grid barriers, clusters of 1-2 blocks */
    bool dsmem;                 /* one launch, shared memory only, reached through
                                   DSMEM too (xbar programs) */
    bool split;                 /* split barriers: some warps bar.arrive (block
                                   barriers), or arrive and WAIT later (xbar) */
    bool mbar;                  /* mbarrier init, arrive (relaxed too) and parity
                                   waits among the steps */
    bool subword;               /* 1- and 2-byte accesses, copies of unaligned
                                   ranges (narrow, step_copy) */
    model *m;
    uint64_t lanes[STEPS][LANES];
    uint32_t launch_id[LAUNCHES];
    /* the programs of the host side: epochs (launches and copies) in the
     * order oracle.h makes of the host's events */
    oracle_epochs E;
    uint32_t nlaunches, ncopies;
    bool primed[ORACLE_MAX_EPOCHS + 1];        /* its start knowledge set */
    unsigned copy_warp[ORACLE_MAX_EPOCHS + 1];
} program;

static void print_sync(uint64_t seq, uint32_t launch, uint32_t block, uint32_t warp,
                       const char *what, uint32_t mask)
{
    fprintf(stderr, "#%" PRIu64 " L%u b%u w%u %s %08x\n", seq, launch, block, warp, what, mask);
}

/* The model byte (cell) lane l of access a starts at: global byte i at
 * BASE + i; in dsmem programs block b's shared byte i (its offset
 * SHARED_BASE + i, or wr_dsmem_addr(b, that offset)) is 4 b WORDS + i.
 * Its word is the cell over 4. */
static uint64_t model_byte_of(const wr_access *a, unsigned l)
{
    uint64_t addr = wr_access_lane_addr(a, l);
    if (a->space == WR_SPACE_SHARED)
        return a->block * 4ull * WORDS + (addr - SHARED_BASE);
    if (a->space == WR_SPACE_DSMEM)
        return wr_dsmem_block(addr) * 4ull * WORDS + (wr_dsmem_offset(addr) - SHARED_BASE);
    return addr - BASE;
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
                a->order == WR_ORDER_RELEASE                        ? ".release"
                : !wr_op_is_atomic(a->op) && a->order != WR_ORDER_WEAK ? ".volatile"
                                                                       : "",
                a->active_mask, ev->site);
        if (a->space != WR_SPACE_GLOBAL)
            fprintf(stderr, " %s", a->space == WR_SPACE_SHARED ? "shared" : "dsmem");
        if (a->size < 4)
            fprintf(stderr, " size=%u", a->size);
        for (unsigned l = 0; l < LANES; l++)
            if ((a->active_mask >> l) & 1u) {
                /* word, and the byte of a sub-word access: word.byte */
                unsigned at = (unsigned)model_byte_of(a, l);
                fprintf(stderr, a->size < 4 ? " %u:%u.%u" : " %u:%u", l, at / 4, at % 4);
            }
        fprintf(stderr, "\n");
        break;
    case WR_EV_BARRIER:
        print_sync(seq, ev->u.barrier.launch, ev->u.barrier.block, ev->u.barrier.warp,
                   ev->u.barrier.scope == WR_BAR_GRID      ? "barrier.grid"
                   : ev->u.barrier.scope == WR_BAR_CLUSTER ? "barrier.cluster"
                                                           : "barrier",
                   WR_FULL_MASK);
        break;
    case WR_EV_WARP_SYNC:
        print_sync(seq, ev->u.warp_sync.launch, ev->u.warp_sync.block, ev->u.warp_sync.warp,
                   "syncwarp", ev->u.warp_sync.mask);
        break;
    case WR_EV_FENCE:
        print_sync(seq, ev->u.fence.launch, ev->u.fence.block, ev->u.fence.warp,
                   ev->u.fence.scope == WR_SCOPE_BLOCK ? "fence.block" : "fence", WR_FULL_MASK);
        break;
    case WR_EV_KERNEL_LAUNCH:
        fprintf(stderr, "#%" PRIu64 " launch L%u stream %u\n", seq, ev->u.launch.launch,
                ev->u.launch.stream);
        break;
    case WR_EV_KERNEL_END:
        fprintf(stderr, "#%" PRIu64 " end L%u\n", seq, ev->u.kernel_end.launch);
        break;
    case WR_EV_HOST_COPY: {
        uint64_t at = (ev->u.copy.kind == WR_COPY_H2D ? ev->u.copy.dst : ev->u.copy.src) - BASE;
        fprintf(stderr, "#%" PRIu64 " copy %s %u bytes at word %u.%u stream %u%s\n", seq,
                ev->u.copy.kind == WR_COPY_H2D ? "h2d" : "d2h", (unsigned)ev->u.copy.bytes,
                (unsigned)(at / 4), (unsigned)(at % 4), ev->u.copy.stream,
                ev->u.copy.async ? " async" : "");
        break;
    }
    default:
        fprintf(stderr, "#%" PRIu64 " host event kind %u event %u stream %u\n", seq, ev->kind,
                ev->u.stream_event.event, ev->u.stream_event.stream);
        break;
    }
}

/* WR_ORACLE_WRITE=FILE (with WR_ORACLE_SEED): the program is also written
 * to FILE as a trace, for `warprace dump` and `analyze` (sites "o.cu":N). */
static wr_writer *trace_out;

static void feed(program *p, wr_event ev)
{
    static int trace = -1;
    if (trace < 0)
        trace = getenv("WR_ORACLE_TRACE") != NULL;
    if (trace)
        print_event(p->run.seq, &ev);
    if (getenv("WR_ORACLE_WRITE")) {
        wr_error err;
        if (!trace_out) {
            wr_header h = {.warp_size = WR_WARP_SIZE};
            trace_out = wr_writer_open(getenv("WR_ORACLE_WRITE"), &h, NULL, &err);
            cr_assert(trace_out, "%s", err.msg);
            for (unsigned i = 1; i < SITE0 + STEPS; i++)
                wr_writer_site(trace_out, 0, "o.cu", i, "f");
            wr_writer_kernel(trace_out, "k");
        }
        cr_assert(wr_writer_event(trace_out, &ev, &err) == 0, "%s", err.msg);
    }
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
            for (unsigned layer = 0; layer < m->nlayers; layer++) {
                vclk_copy(&m->w[wi].know[layer], &m->host[layer]);
                for (unsigned pl = 0; pl < li; pl++)
                    if (m->started[pl] && m->stream[pl] == stream)
                        for (unsigned x = 0; x < BLOCKS * WARPS; x++) {
                            vclk v;
                            warp_view(m, layer, pl * BLOCKS * WARPS + x, &v);
                            vclk_join(&m->w[wi].know[layer], &v);
                        }
            }
        }
    wr_event e = lf_launch(p->launch_id[li], stream);
    e.u.launch.cluster[0] = cluster_blocks;
    e.u.launch.grid[0] = BLOCKS;
    e.u.launch.block_dim[0] = WARPS * LANES;
    feed(p, e);
}

static void kernel_end(program *p, unsigned li)
{
    model *m = p->m;
    m->ended[li] = true;
    for (unsigned layer = 0; layer < m->nlayers; layer++)
        for (unsigned x = 0; x < BLOCKS * WARPS; x++) {
            vclk v;
            warp_view(m, layer, li * BLOCKS * WARPS + x, &v);
            vclk_join(&m->host[layer], &v);
        }
    feed(p, lf_kernel_end(p->launch_id[li]));
}

/* dsmem programs: access a of block b (its words word_of[l] < WORDS, from
 * byte byte_of[l]) moves to shared memory: a third of the time the block's
 * own, as a SHARED access, else as a DSMEM access of blocks of b's cluster
 * (one for a uniform or coalesced access, a random one per lane for a
 * gather; its own too).  word_of becomes the model's words. */
static void place_in_shared(program *p, unsigned step, unsigned b, wr_access *a,
                            unsigned word_of[LANES], const unsigned byte_of[LANES])
{
    unsigned c0 = b / cluster_blocks * cluster_blocks;
    bool own = rnd(3) == 0;
    unsigned owner = own ? b : c0 + rnd(cluster_blocks);
    a->space = own ? WR_SPACE_SHARED : WR_SPACE_DSMEM;
    for (unsigned l = 0; l < LANES; l++) {
        if (a->addr_mode == WR_ADDR_VECTOR && !own && (l == 0 || rnd(4)))
            owner = c0 + rnd(cluster_blocks);
        uint32_t offset = SHARED_BASE + 4u * word_of[l] + byte_of[l];
        if (a->addr_mode == WR_ADDR_VECTOR && ((a->active_mask >> l) & 1u))
            p->lanes[step][l] = own ? offset : wr_dsmem_addr(owner, offset);
        if (l == 0 && a->addr_mode != WR_ADDR_VECTOR)
            a->base = own ? offset : wr_dsmem_addr(owner, offset);
        word_of[l] += owner * WORDS;
    }
}

/* Subword programs: access a, as step_access made it, becomes a 1- or
 * 2-byte one (a char or short array): a uniform one an element of its
 * word, a coalesced one lanes on consecutive elements or on one of every
 * word, a gather's lanes an element of their word each.  word_of and
 * byte_of (0 for whole words) become its lanes' words and first bytes;
 * returns the size. */
static unsigned narrow(program *p, unsigned step, wr_access *a, unsigned word_of[LANES],
                       unsigned byte_of[LANES])
{
    unsigned size = rnd(2) ? 1 : 2;
    a->size = (uint8_t)size;
    if (a->addr_mode == WR_ADDR_UNIFORM) {
        unsigned off = size * rnd(4 / size);
        for (unsigned l = 0; l < LANES; l++)
            byte_of[l] = off;
        a->base += off;
    } else if (a->addr_mode == WR_ADDR_STRIDED) {
        a->stride = rnd(3) ? size : 4;
        unsigned span = 31 * (unsigned)a->stride + size;   /* bytes from lane 0's to the end */
        unsigned at = size * rnd((4 * WORDS - span) / size + 1);
        for (unsigned l = 0; l < LANES; l++) {
            word_of[l] = (at + l * (unsigned)a->stride) / 4;
            byte_of[l] = (at + l * (unsigned)a->stride) % 4;
        }
        a->base = BASE + at;
    } else {
        for (unsigned l = 0; l < LANES; l++) {
            byte_of[l] = size * rnd(4 / size);
            if ((a->active_mask >> l) & 1u)
                p->lanes[step][l] += byte_of[l];
        }
    }
    return size;
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
    if (p->xbar && scope == WR_SCOPE_DEVICE && rnd(3) == 0)
        scope = WR_SCOPE_CLUSTER;
    wr_event e = lf_acc(SITE0 + step, p->launch_id[li], b, w, mask, op, scope, 0, 0);
    if (wr_op_writes(op) && wr_op_is_atomic(op) && rnd(4) == 0)
        e.u.access.order = WR_ORDER_RELEASE;   /* releases without a fence */
    /* volatile (strong: synchronizes as a relaxed atomic load or store at
     * system scope does), now and then a plain store with release order */
    if (!wr_op_is_atomic(op) && p->strong_plain && rnd(2)) {
        e.u.access.order = op == WR_OP_STORE && rnd(6) == 0 ? WR_ORDER_RELEASE : WR_ORDER_RELAXED;
        if (rnd(4) == 0)   /* ld/st.relaxed.cta or .gpu: a scope of its own */
            e.u.access.scope = rnd(2) ? WR_SCOPE_BLOCK : WR_SCOPE_DEVICE;
    }
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
    unsigned byte_of[LANES] = {0}, size = 4;
    if (p->subword && rnd(2))
        size = narrow(p, step, &e.u.access, word_of, byte_of);
    if (p->dsmem)
        place_in_shared(p, step, b, &e.u.access, word_of, byte_of);
    uint64_t seq = p->run.seq;
    feed(p, e);
    model_access(m, wi, mask, word_of, byte_of, size, op, e.u.access.scope, e.u.access.order,
                 seq, SITE0 + step);
}

/* A block barrier: every warp of block b arrives, each a block-scope
 * fence at arrival.  In split programs some only arrive (bar.arrive):
 * they release what they knew, reconverge and go on, learning nothing;
 * the others wait and learn what all of them knew. */
static void step_barrier(program *p, unsigned li, unsigned b)
{
    model *m = p->m;
    uint32_t arrive_only = p->split ? (uint32_t)rnd(1u << WARPS) : 0;
    for (unsigned w = 0; w < WARPS; w++) {
        fence(m, warp_index(li, b, w), WR_SCOPE_BLOCK);
        wr_event e = lf_barrier(p->launch_id[li], b, w, WARPS * LANES);
        if ((arrive_only >> w) & 1u)
            e.u.barrier.mode = WR_BARMODE_ARRIVE;
        feed(p, e);
    }
    for (unsigned layer = 0; layer < m->nlayers; layer++) {
        vclk j;
        vclk_zero(&j);
        for (unsigned w = 0; w < WARPS; w++) {
            vclk v;
            warp_view(m, layer, warp_index(li, b, w), &v);
            vclk_join(&j, &v);
        }
        for (unsigned w = 0; w < WARPS; w++) {
            unsigned wi = warp_index(li, b, w);
            if ((arrive_only >> w) & 1u)
                continue;
            vclk_join(&m->w[wi].know[layer], &j);
            for (unsigned l = 0; l < LANES; l++)
                for (unsigned k = 0; k < LANES; k++)
                    m->lane[layer][thread_of(wi, l)].v[thread_of(wi, k)] = j.v[thread_of(wi, k)];
        }
    }
    for (unsigned w = 0; w < WARPS; w++) {
        unsigned wi = warp_index(li, b, w);
        if ((arrive_only >> w) & 1u)
            lanes_join(m, wi, WR_FULL_MASK);
        m->w[wi].group = 0;
        m->w[wi].diverged = false;
    }
}

/* Split programs: warp wi, armed at a cluster or grid barrier whose phase
 * completed, waits (barrier.cluster.wait): every lane takes what the phase
 * released, and the warp reconverges. */
static void step_xbar_wait(program *p, unsigned li, unsigned b, unsigned w)
{
    model *m = p->m;
    unsigned wi = warp_index(li, b, w);
    wr_event e = lf_barrier(p->launch_id[li], b, w, 0);
    e.u.barrier.scope = m->w[wi].armed;
    e.u.barrier.mode = WR_BARMODE_WAIT;
    feed(p, e);
    for (unsigned layer = 0; layer < m->nlayers; layer++)
        for (unsigned l = 0; l < LANES; l++)
            acquire(m, layer, wi, thread_of(wi, l), &m->w[wi].pending[layer]);
    lanes_join(m, wi, WR_FULL_MASK);
    m->w[wi].group = 0;
    m->w[wi].diverged = false;
    m->w[wi].armed = 0;
}

/* A cluster barrier of block b's cluster, or a grid barrier: every warp
 * of the blocks it gathers arrives (a fence of its scope), then each knows
 * what all of them knew, and reconverges. */
static void step_xbarrier(program *p, unsigned li, unsigned b, bool grid)
{
    model *m = p->m;
    unsigned b0 = grid ? 0 : b / cluster_blocks * cluster_blocks;
    unsigned nb = grid ? BLOCKS : cluster_blocks;
    uint8_t scope = grid ? WR_SCOPE_DEVICE : WR_SCOPE_CLUSTER;
    /* the trace's count, or none: the launch's cluster or grid size */
    uint32_t expected = rnd(2) ? nb * WARPS * LANES : 0;
    /* split programs: a warp that arrived before waits first (arrive and
     * wait alternate); then each warp syncs, arrives (releasing) or, at a
     * cluster barrier, arrives relaxed (releasing nothing) */
    uint8_t mode[BLOCKS][WARPS] = {{0}};
    if (p->split)
        for (unsigned x = b0; x < b0 + nb; x++)
            for (unsigned w = 0; w < WARPS; w++) {
                if (m->w[warp_index(li, x, w)].armed)
                    step_xbar_wait(p, li, x, w);
                mode[x][w] = (uint8_t)rnd(grid ? 2 : 3);
            }
    for (unsigned x = b0; x < b0 + nb; x++)
        for (unsigned w = 0; w < WARPS; w++) {
            if (mode[x][w] != WR_BARMODE_ARRIVE_RELAXED)
                fence(m, warp_index(li, x, w), scope);
            wr_event e = lf_barrier(p->launch_id[li], x, w, expected);
            e.u.barrier.scope = grid ? WR_BAR_GRID : WR_BAR_CLUSTER;
            e.u.barrier.mode = mode[x][w];
            feed(p, e);
        }
    for (unsigned layer = 0; layer < m->nlayers; layer++) {
        vclk j;
        vclk_zero(&j);
        for (unsigned x = b0; x < b0 + nb; x++)
            for (unsigned w = 0; w < WARPS; w++) {
                if (mode[x][w] == WR_BARMODE_ARRIVE_RELAXED)
                    continue;
                vclk v;
                warp_view(m, layer, warp_index(li, x, w), &v);
                vclk_join(&j, &v);
            }
        for (unsigned x = b0; x < b0 + nb; x++)
            for (unsigned w = 0; w < WARPS; w++) {
                unsigned wi = warp_index(li, x, w);
                if (mode[x][w] != WR_BARMODE_SYNC) {
                    vclk_copy(&m->w[wi].pending[layer], &j);
                    continue;
                }
                vclk_join(&m->w[wi].know[layer], &j);
                for (unsigned l = 0; l < LANES; l++)
                    for (unsigned k = 0; k < LANES; k++)
                        m->lane[layer][thread_of(wi, l)].v[thread_of(wi, k)] =
                            j.v[thread_of(wi, k)];
            }
    }
    for (unsigned x = b0; x < b0 + nb; x++)
        for (unsigned w = 0; w < WARPS; w++) {
            unsigned wi = warp_index(li, x, w);
            if (mode[x][w] != WR_BARMODE_SYNC) {
                lanes_join(m, wi, WR_FULL_MASK);
                m->w[wi].armed = grid ? WR_BAR_GRID : WR_BAR_CLUSTER;
            }
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

/* mbarrier programs: warp (b, w) of launch li initializes one of its
 * block's mbarriers (when it is not yet, and now and then again), arrives
 * at it (releasing what the warp knew, or, relaxed, nothing; each active
 * lane `count` times), or waits for a parity (acquiring, for each active
 * lane, what the latest completed phase of that parity released). */
static void step_mbarrier(program *p, unsigned li, unsigned b, unsigned w)
{
    model *m = p->m;
    unsigned wi = warp_index(li, b, w), id = rnd(MBARS);
    mmbar *mb = &m->mbar[li][b][id];
    uint32_t mask = rnd(2) ? WR_FULL_MASK : 1u << rnd(LANES);
    wr_event e = lf_barrier(p->launch_id[li], b, w, 0);
    e.u.barrier.scope = WR_BAR_MBARRIER;
    e.u.barrier.barrier_id = MBAR_BASE + 8u * id;
    e.u.barrier.active_mask = mask;
    if (!mb->count || rnd(40) == 0) {
        e.u.barrier.mode = WR_BARMODE_INIT;
        e.u.barrier.expected = 1 + rnd(48);
        memset(mb, 0, sizeof *mb);
        mb->count = mb->pending = e.u.barrier.expected;
    } else if (rnd(3)) {
        bool relaxed = rnd(4) == 0;
        e.u.barrier.mode = relaxed ? WR_BARMODE_ARRIVE_RELAXED : WR_BARMODE_ARRIVE;
        e.u.barrier.expected = rnd(3);
        if (!relaxed)
            for (unsigned layer = 0; layer < m->nlayers; layer++) {
                vclk v;
                warp_view(m, layer, wi, &v);
                vclk_join(&mb->acc[layer], &v);
            }
        uint32_t n = (uint32_t)__builtin_popcount(mask) *
                     (e.u.barrier.expected ? e.u.barrier.expected : 1u);
        if (n < mb->pending) {
            mb->pending -= n;
        } else {
            unsigned par = mb->phase & 1u;
            for (unsigned layer = 0; layer < m->nlayers; layer++) {
                vclk_copy(&mb->done[par][layer], &mb->acc[layer]);
                vclk_zero(&mb->acc[layer]);
            }
            mb->done_ok[par] = true;
            mb->phase++;
            mb->pending = mb->count;
        }
    } else {
        unsigned par = rnd(2);
        e.u.barrier.mode = WR_BARMODE_WAIT;
        e.u.barrier.expected = par;
        /* the barrier-only layer keeps no per-lane acquires: there the
         * warp's own arrival coming back orders none of its lanes (as an
         * atomic's round trip does not), the other warps' all of them */
        if (mb->done_ok[par])
            for (unsigned layer = 0; layer < m->nlayers; layer++) {
                if (layer == L_BAR) {
                    vclk_join(&m->w[wi].know[layer], &mb->done[par][layer]);
                    continue;
                }
                for (unsigned l = 0; l < LANES; l++)
                    if ((mask >> l) & 1u)
                        acquire(m, layer, wi, thread_of(wi, l), &mb->done[par][layer]);
            }
    }
    feed(p, e);
}

/* A device step of launch li's warp (b, w): a barrier of its block, a
 * warp sync, a fence or an access, by `what` in [0, 100). */
static void device_step(program *p, unsigned step, unsigned li, unsigned b, unsigned w,
                        unsigned what)
{
    if (p->mbar && what >= 13 && what < 25)
        step_mbarrier(p, li, b, w);
    else if (p->split && p->m->w[warp_index(li, b, w)].armed && what < 30)
        step_xbar_wait(p, li, b, w);
    else if (what < 2 && p->xbar)
        step_xbarrier(p, li, b, rnd(2));
    else if (what < 4)
        step_barrier(p, li, b);
    else if (what < 10)
        step_warp_sync(p, li, b, w);
    else if (what < 13) {
        uint8_t scope = rnd(4) ? WR_SCOPE_DEVICE : WR_SCOPE_BLOCK;
        fence(p->m, warp_index(li, b, w), scope);
        feed(p, lf_fence(p->launch_id[li], b, w, WR_FULL_MASK, scope));
    } else
        step_access(p, step, li, b, w);
}

/* ---- the host side: several launches, copies, events and host waits ---- */

/* What epoch x knew when it ended, in a layer: its warps' whole
 * knowledge (a copy's one thread). */
static void epoch_view(const program *p, uint32_t x, unsigned layer, vclk *out)
{
    const mepoch *e = &p->E.ep[x];
    if (!e->launch) {
        warp_view(p->m, layer, p->copy_warp[x], out);
        return;
    }
    vclk_zero(out);
    for (unsigned k = 0; k < BLOCKS * WARPS; k++) {
        vclk v;
        warp_view(p->m, layer, (e->launch - 1) * BLOCKS * WARPS + k, &v);
        vclk_join(out, &v);
    }
}

/* Epoch x acts for the first time: its warps start with what every epoch
 * ordered before it knew at its end.  (Those are over now: an epoch acts
 * only when all it comes after is done, and trace order is run order.
 * The order is closed transitively, so an earlier epoch that never acted
 * brings nothing the others do not.) */
static void prime(program *p, uint32_t x, unsigned first_warp, unsigned nwarps)
{
    model *m = p->m;
    for (unsigned layer = 0; layer < m->nlayers; layer++) {
        vclk start;
        vclk_zero(&start);
        for (uint32_t a = 1; a < x; a++)
            if (oe_ordered(&p->E, a, x)) {
                vclk v;
                epoch_view(p, a, layer, &v);
                vclk_join(&start, &v);
            }
        for (unsigned k = 0; k < nwarps; k++)
            vclk_copy(&m->w[first_warp + k].know[layer], &start);
    }
    p->primed[x] = true;
}

/* A host copy (oracle.h) when it may run now: one instruction of a host
 * thread of its own, a strong plain access to each word. */
static void step_copy(program *p, unsigned step)
{
    wr_event c;
    uint32_t x = oe_random_copy(&p->E, BASE, WORDS, &c);
    if (!x)
        return;
    if (p->subword && c.u.copy.bytes > 6 && rnd(2)) {
        /* from and to the middle of a word */
        uint32_t head = rnd(4), tail = rnd(3);
        *(c.u.copy.kind == WR_COPY_H2D ? &c.u.copy.dst : &c.u.copy.src) += head;
        c.u.copy.bytes -= head + tail;
    }
    model *m = p->m;
    unsigned wi = LAUNCH_WARPS + p->ncopies++, t = thread_of(wi, 0);
    p->copy_warp[x] = wi;
    prime(p, x, wi, 1);
    c.site = SITE0 + step;
    uint64_t seq = p->run.seq;
    feed(p, c);
    bool write = c.u.copy.kind == WR_COPY_H2D;
    uint64_t at = write ? c.u.copy.dst : c.u.copy.src;
    for (unsigned layer = 0; layer < m->nlayers; layer++)
        m->lane[layer][t].v[t]++;
    uint64_t lo = at - BASE, end = lo + c.u.copy.bytes;   /* bytes [lo, end) */
    for (uint64_t word = lo / 4; word < (end + 3) / 4; word++) {
        uint64_t b0 = word * 4 > lo ? word * 4 : lo, b1 = word * 4 + 4 < end ? word * 4 + 4 : end;
        uint32_t snap = take_snap(m, t, (unsigned)word, false, WR_SCOPE_SYSTEM);
        word_access(m, t, (unsigned)word, (unsigned)(b0 - word * 4), (unsigned)(b1 - word * 4),
                    snap, seq, SITE0 + step, write, false, true, WR_SCOPE_SYSTEM, 0);
    }
    oe_copy_done(&p->E, x, &c);
}

static void run_host_side_program(program *p)
{
    memset(&p->E, 0, sizeof p->E);
    memset(p->primed, 0, sizeof p->primed);
    p->nlaunches = p->ncopies = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        uint32_t what = rnd(100), x = 0;
        wr_event ev;
        switch (oracle_host_step(&p->E, what, &p->nlaunches, LAUNCHES, &ev, &x)) {
        case ORACLE_NONE: continue;
        case ORACLE_LAUNCH:
            ev.u.launch.grid[0] = BLOCKS;
            ev.u.launch.cluster[0] = cluster_blocks;
            ev.u.launch.block_dim[0] = WARPS * LANES;
            p->launch_id[ev.u.launch.launch - 1] = ev.u.launch.launch;
            feed(p, ev);
            continue;
        case ORACLE_SYNC: feed(p, ev); continue;
        case ORACLE_COPY: step_copy(p, step); continue;
        case ORACLE_FINISH: {
            wr_event ends[BLOCKS + 1];
            unsigned n = oe_finish_launch(&p->E, x, BLOCKS, ends);
            for (unsigned i = 0; i < n; i++)
                feed(p, ends[i]);
            continue;
        }
        case ORACLE_DEVICE: break;
        }
        unsigned li = p->E.ep[x].launch - 1;
        if (!p->primed[x])
            prime(p, x, warp_index(li, 0, 0), BLOCKS * WARPS);
        unsigned b = rnd(BLOCKS), w = rnd(WARPS);
        device_step(p, step, li, b, w, rnd(100));
    }
    for (uint32_t x = 1; x <= p->E.nep; x++)
        if (p->E.ep[x].launch && !p->E.ep[x].ended)
            feed(p, lf_kernel_end(p->E.ep[x].launch));
}

/* Two launches: the second on the first one's stream, or another stream
 * started while the first runs, or after the host saw the first end. */
static void run_two_launch_program(program *p)
{
    p->launch_id[0] = 1;
    p->launch_id[1] = 2;
    unsigned how = p->dsmem ? 0 : rnd(4);   /* dsmem: one launch (shared memory) */
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
        device_step(p, step, li, b, w, rnd(100));
    }
    for (unsigned li = 0; li < LAUNCHES; li++)
        if (p->m->started[li] && !p->m->ended[li])
            kernel_end(p, li);
}

static void run_program(program *p, unsigned shards, uint64_t seed)
{
    rnd_state = seed * 0x9E3779B97F4A7C15ull + 7;
    cluster_blocks = p->dsmem ? (rnd(4) ? 2 : 1) : p->xbar ? 1 + rnd(2) : 1;
    vclk *snaps = p->m->snaps;   /* kept from program to program: no page faults */
    uint32_t capsnaps = p->m->capsnaps;
    memset(p->m, 0, sizeof *p->m);
    p->m->snaps = snaps;
    p->m->capsnaps = capsnaps;
    p->m->scoped = p->scoped;
    p->m->nlayers = p->scoped ? NLAYERS : 1;
    prog_threads = p->host_side ? THREADS : 2 * BLOCKS * WARPS * LANES;
    lf_start(&p->run, p->engine, shards);
    if (p->host_side)
        run_host_side_program(p);
    else
        run_two_launch_program(p);
    if (p->m->npairs)   /* (qsort and bsearch take no null array, even empty) */
        qsort(p->m->pairs, p->m->npairs, sizeof *p->m->pairs, pair_cmp);
    if (p->m->nscope_pairs)
        qsort(p->m->scope_pairs, p->m->nscope_pairs, sizeof *p->m->scope_pairs, pair_cmp);
}

/* The model cell of a race's example (UINT_MAX: not a byte the program
 * touched): its byte, which is the word's cell where the word is not split
 * (its first byte, as the engines name a whole word); a dsmem program's
 * shared byte is named by its offset when both sides are its block's, else
 * as DSMEM with its owner (engine.h). */
static unsigned report_cell(const program *p, const wr_race *r)
{
    if (!p->dsmem)
        return r->space == WR_SPACE_GLOBAL && r->addr >= BASE && r->addr < BASE + 4 * WORDS
                   ? (unsigned)(r->addr - BASE)
                   : UINT_MAX;
    uint32_t owner, offset;
    if (r->space == WR_SPACE_SHARED && r->first.block == r->second.block) {
        owner = r->second.block;
        offset = (uint32_t)r->addr;
    } else if (r->space == WR_SPACE_DSMEM) {
        owner = wr_dsmem_block(r->addr);
        offset = wr_dsmem_offset(r->addr);
    } else {
        return UINT_MAX;
    }
    if (owner >= BLOCKS || offset < SHARED_BASE || offset >= SHARED_BASE + 4 * WORDS)
        return UINT_MAX;
    return owner * 4 * WORDS + (offset - SHARED_BASE);
}

/* Race examples checked on a byte of a split word other than its first
 * (subword programs must have many). */
static uint64_t byte_examples;

static void check_seed(program *p, unsigned shards, uint64_t seed, uint64_t *groups_seen,
                       uint64_t *first_races, uint64_t *forgotten)
{
    run_program(p, shards, seed);
    if (trace_out) {
        wr_error err;
        cr_assert(wr_writer_close(trace_out, &err) == 0, "%s", err.msg);
        trace_out = NULL;
    }
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
                  " (sites %u, %u; lanes %u, %u at byte %u), which the model orders", seed,
                  shards, p->engine->name, r->first.seq, r->second.seq, r->first.site, r->second.site,
                  r->first.lane, r->second.lane, report_cell(p, r));
        unsigned cell = report_cell(p, r);
        cr_assert(cell < 4 * (p->dsmem ? MODEL_WORDS : WORDS), "seed %" PRIu64 ": address", seed);
        /* on a byte of an unsplit word other than its first, no history:
         * the engines name a whole word by its first byte */
        unsigned cls = model_lane_pair(m, cell, r->first.seq, r->first.lane, r->second.seq,
                                       r->second.lane);
        cr_assert(cls != PAIR_ORDERED,
                  "seed %" PRIu64 ", %u shards: example #%" PRIu64 " lane %u vs #%" PRIu64
                  " lane %u on word %u byte %u%s is not a race in the model", seed, shards,
                  r->first.seq, r->first.lane, r->second.seq, r->second.lane, cell / 4, cell % 4,
                  m->split[cell / 4] ? "" : " (not split)");
        byte_examples += cell % 4 != 0;
        if (m->scoped)
            cr_assert(verdict_fits(cls, r->verdict),
                      "seed %" PRIu64 ", %u shards: %s calls #%" PRIu64 " lane %u vs #%" PRIu64
                      " lane %u on word %u byte %u %s; the model's class is %s", seed, shards,
                      p->engine->name, r->first.seq, r->first.lane, r->second.seq,
                      r->second.lane, cell / 4, cell % 4, wr_scope_verdict_name(r->verdict),
                      cls == PAIR_MISSING_SYNC ? "missing-sync"
                      : cls == PAIR_WEAK       ? "weak-access"
                                               : "insufficient scope");
        class_seen[cls]++;
    }
    if (getenv("WR_ORACLE_TRACE"))
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "group: #%" PRIu64 " site %u lane %u vs #%" PRIu64
                    " site %u lane %u byte %u %s\n", g[i].example.first.seq,
                    g[i].example.first.site, g[i].example.first.lane, g[i].example.second.seq,
                    g[i].example.second.site, g[i].example.second.lane,
                    report_cell(p, &g[i].example),
                    wr_scope_verdict_name(g[i].example.verdict));
    *groups_seen += n;
    /* completeness for each byte's first race (a word's, where it is not
     * split), but where vc may have let every partner go: an atomic with
     * more than WR_HB_KEPT_ATOMICS atomic accesses to the byte after it
     * (hbcore.h), or an access of the same warp superseded through another
     * warp (round_trip) */
    for (unsigned x = 0; x < MODEL_CELLS; x++) {
        if (!m->byte_raced[x])
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
        cr_assert(found, "seed %" PRIu64 ", %u shards: word %u byte %u first races at event #%"
                  PRIu64 " lane %u (with #%" PRIu64 " lane %u, ...), which %s does not report",
                  seed, shards, x / 4, x % 4, m->first_racy_seq[x], m->first_racy_lane[x],
                  m->first_partners[x][0].seq, m->first_partners[x][0].lane, p->engine->name);
    }
    wr_findings_free(f);
    for (unsigned i = 0; i < MODEL_CELLS; i++) {
        free(m->hist[i]);
        free(m->first_partners[i]);
    }
    for (unsigned i = 0; i < MODEL_WORDS; i++)
        free(m->srel[i]);
    free(m->pairs);
    free(m->scope_pairs);
}

static bool xbar_programs, dsmem_programs, split_programs, mbar_programs, subword_programs;

static void check_all(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                      unsigned shards, bool host_side)
{
    program *p = calloc(1, sizeof *p);
    p->engine = engine;
    p->scoped = scoped;
    p->strong_plain = strong_plain;
    p->host_side = host_side;
    p->xbar = xbar_programs || dsmem_programs;
    p->dsmem = dsmem_programs;
    p->split = split_programs;
    p->mbar = mbar_programs;
    p->subword = subword_programs;
    p->m = calloc(1, sizeof *p->m);
    memset(class_seen, 0, sizeof class_seen);
    subword_bytes = byte_examples = 0;
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
        if (scoped && strong_plain)   /* every class the model names shows up */
            for (unsigned c = PAIR_MISSING_SYNC; c <= PAIR_WEAK; c++)
                cr_assert_gt(class_seen[c], SEEDS / 20, "class %u checked %" PRIu64 " times", c,
                             class_seen[c]);
        if (p->subword) {   /* bytes apart from their word, races checked on bytes */
            cr_assert_gt(subword_bytes, 20 * SEEDS, "%" PRIu64 " bytes stepped alone",
                         subword_bytes);
            cr_assert_gt(byte_examples, SEEDS, "%" PRIu64 " examples inside words",
                         byte_examples);
        }
    }
    if (getenv("WR_ORACLE_STATS"))
        fprintf(stderr, "%s scoped=%d strong=%d shards=%u: groups %" PRIu64 " first %" PRIu64
                " forgiven %" PRIu64 " classes %" PRIu64 "/%" PRIu64 "/%" PRIu64
                " subword bytes %" PRIu64 " byte examples %" PRIu64 "\n",
                engine->name, scoped, strong_plain, shards, groups, first, forgotten,
                class_seen[1], class_seen[2], class_seen[3], subword_bytes, byte_examples);
    free(p->m->snaps);
    free(p->m);
    free(p);
}

Test(vc_oracle, reports_exactly_what_the_model_says_one_shard)
{
    check_all(&wr_engine_vc, false, false, 1, false);
}
Test(vc_oracle, reports_exactly_what_the_model_says_three_shards)
{
    check_all(&wr_engine_vc, false, false, 3, false);
}

/* The programs' plain accesses are weak, so the scoped engine reports a
 * pair with a plain access exactly when the barrier-only layer does not
 * order it (missing-sync or a scope race, or weak-access where an acquire
 * orders it), and a pair of atomics only where their scopes do not both
 * hold both threads (model.scope_pairs). */
Test(vc_oracle, scoped_reports_what_the_barrier_only_model_says_one_shard)
{
    check_all(&wr_engine_scoped, true, false, 1, false);
}
Test(vc_oracle, scoped_reports_what_the_barrier_only_model_says_three_shards)
{
    check_all(&wr_engine_scoped, true, false, 3, false);
}

/* Half the plain accesses strong (volatile, a few stores with release
 * order): they release and acquire as atomic loads and stores do, and
 * still race as plain accesses. */
Test(vc_oracle, reports_what_the_model_says_with_volatile_one_shard)
{
    check_all(&wr_engine_vc, false, true, 1, false);
}
Test(vc_oracle, reports_what_the_model_says_with_volatile_three_shards)
{
    check_all(&wr_engine_vc, false, true, 3, false);
}

/* Half the plain accesses strong (volatile): a pair of strong accesses is
 * ordered by the scoped layer, where an acquire takes a release only if
 * both scopes hold both parties; and each example's verdict must be the
 * model's class of the pair (missing-sync, insufficient scope,
 * weak-access). */
Test(vc_oracle, scoped_reports_what_the_scoped_model_says_one_shard)
{
    check_all(&wr_engine_scoped, true, true, 1, false);
}
Test(vc_oracle, scoped_reports_what_the_scoped_model_says_three_shards)
{
    check_all(&wr_engine_scoped, true, true, 3, false);
}

/* Up to three launches on streams 0-3 and host copies, with events,
 * stream waits, stream, event and device syncs and launch ends between
 * them (oracle.h): a launch starts with what every epoch ordered before it
 * knew at its end, also what its warps learned by acquires from a launch
 * on another stream after the host issued the later work. */
Test(vc_oracle, host_side_reports_exactly_what_the_model_says_one_shard)
{
    check_all(&wr_engine_vc, false, false, 1, true);
}
Test(vc_oracle, host_side_reports_exactly_what_the_model_says_three_shards)
{
    check_all(&wr_engine_vc, false, false, 3, true);
}
Test(vc_oracle, scoped_host_side_reports_what_the_scoped_model_says_one_shard)
{
    check_all(&wr_engine_scoped, true, true, 1, true);
}
Test(vc_oracle, scoped_host_side_reports_what_the_scoped_model_says_three_shards)
{
    check_all(&wr_engine_scoped, true, true, 3, true);
}

/* The same programs with every engine's contexts collected and renumbered
 * before every third access (hbcore.c, ctx_collect), not only when the
 * table is full: a context lost or renamed wrongly shows as a race with the
 * wrong instruction, or none. */
static void check_all_collecting(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                                 unsigned shards, bool host_side)
{
    wr_hbe_collect_every(3);
    check_all(engine, scoped, strong_plain, shards, host_side);
    wr_hbe_collect_every(0);
}

Test(vc_oracle, contexts_collected_often_one_shard)
{
    check_all_collecting(&wr_engine_vc, false, false, 1, false);
}
Test(vc_oracle, contexts_collected_often_host_side_three_shards)
{
    check_all_collecting(&wr_engine_vc, false, false, 3, true);
}
Test(vc_oracle, scoped_contexts_collected_often_one_shard)
{
    check_all_collecting(&wr_engine_scoped, true, true, 1, false);
}
Test(vc_oracle, scoped_contexts_collected_often_host_side_three_shards)
{
    check_all_collecting(&wr_engine_scoped, true, true, 3, true);
}

/* Cluster and grid barriers (cluster.sync(), grid.sync()), clusters of one
 * or two blocks, cluster-scoped atomics now and then: a barrier that
 * gathers blocks orders all of their warps, in every layer. */
static void check_all_xbar(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                           unsigned shards, bool host_side)
{
    xbar_programs = true;
    check_all(engine, scoped, strong_plain, shards, host_side);
    xbar_programs = false;
}

Test(vc_oracle, cluster_and_grid_barriers_one_shard)
{
    check_all_xbar(&wr_engine_vc, false, false, 1, false);
}
Test(vc_oracle, cluster_and_grid_barriers_host_side_three_shards)
{
    check_all_xbar(&wr_engine_vc, false, true, 3, true);
}
Test(vc_oracle, scoped_cluster_and_grid_barriers_one_shard)
{
    check_all_xbar(&wr_engine_scoped, true, true, 1, false);
}
Test(vc_oracle, scoped_cluster_and_grid_barriers_host_side_three_shards)
{
    check_all_xbar(&wr_engine_scoped, true, true, 3, true);
}

/* Shared memory reached through distributed shared memory (DSMEM): one
 * launch whose accesses all go to shared memory, a third to the block's
 * own as SHARED accesses, the others as DSMEM accesses of blocks of its
 * cluster (its own too: the same words), clusters of two blocks (one in
 * a quarter of the programs); cluster and grid barriers as above.  The
 * model keeps one word per (block, offset): a DSMEM access must meet the
 * owner's own accesses on it, at any shard count, and a race's example
 * must name the owner. */
static void check_all_dsmem(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                            unsigned shards)
{
    dsmem_programs = true;
    check_all(engine, scoped, strong_plain, shards, false);
    dsmem_programs = false;
}

Test(vc_oracle, dsmem_one_shard)
{
    check_all_dsmem(&wr_engine_vc, false, true, 1);
}
Test(vc_oracle, dsmem_three_shards)
{
    check_all_dsmem(&wr_engine_vc, false, false, 3);
}
Test(vc_oracle, scoped_dsmem_one_shard)
{
    check_all_dsmem(&wr_engine_scoped, true, true, 1);
}
Test(vc_oracle, scoped_dsmem_three_shards)
{
    check_all_dsmem(&wr_engine_scoped, true, true, 3);
}

/* Split barriers: at block barriers some warps only arrive (bar.arrive:
 * they release and go on, learning nothing); in xbar programs each warp
 * of a cluster or grid barrier syncs, arrives, or (cluster) arrives
 * relaxed, and an arriver waits (barrier.cluster.wait) later, before its
 * next such barrier, taking what the phase released. */
static void check_all_split(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                            unsigned shards, bool host_side, bool xbar)
{
    split_programs = true;
    xbar_programs = xbar;
    check_all(engine, scoped, strong_plain, shards, host_side);
    xbar_programs = false;
    split_programs = false;
}

Test(vc_oracle, split_block_barriers_one_shard)
{
    check_all_split(&wr_engine_vc, false, false, 1, false, false);
}
Test(vc_oracle, split_barriers_xbar_host_side_three_shards)
{
    check_all_split(&wr_engine_vc, false, true, 3, true, true);
}
Test(vc_oracle, scoped_split_block_barriers_three_shards)
{
    check_all_split(&wr_engine_scoped, true, true, 3, false, false);
}
Test(vc_oracle, scoped_split_barriers_xbar_one_shard)
{
    check_all_split(&wr_engine_scoped, true, true, 1, true, true);
}

/* mbarriers: init, arrive (release or relaxed, 1 to 2 arrivals per lane
 * of a full or one-lane mask) and parity waits by random warps of a block,
 * among the accesses: a wait acquires what the latest completed phase of
 * its parity released, in every layer; an mbarrier never initialized
 * orders nothing. */
static void check_all_mbar(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                           unsigned shards, bool host_side)
{
    mbar_programs = true;
    check_all(engine, scoped, strong_plain, shards, host_side);
    mbar_programs = false;
}

Test(vc_oracle, mbarrier_one_shard)
{
    check_all_mbar(&wr_engine_vc, false, false, 1, false);
}
Test(vc_oracle, mbarrier_host_side_three_shards)
{
    check_all_mbar(&wr_engine_vc, false, true, 3, true);
}
Test(vc_oracle, scoped_mbarrier_three_shards)
{
    check_all_mbar(&wr_engine_scoped, true, true, 3, false);
}
Test(vc_oracle, scoped_mbarrier_host_side_one_shard)
{
    check_all_mbar(&wr_engine_scoped, true, true, 1, true);
}

/* Sub-word accesses: in half the accesses a 1- or 2-byte one (narrow:
 * uniform, coalesced on consecutive elements or one of every word,
 * gathers), and host copies that start or end inside a word, among the
 * whole-word ones.  The engines' byte cells of split words (hbcore.c,
 * check_bytes) against the model's bytes, on every path (packed lines,
 * coalesced accesses and gathers meeting split words): threads on
 * different bytes of a word do not race, on one byte they do, a whole-word
 * access meets each byte's history, and an example names a byte both
 * sides touched.  Without DSMEM, then with it. */
static void check_all_subword(const wr_engine_ops *engine, bool scoped, bool strong_plain,
                              unsigned shards, bool host_side, bool dsmem)
{
    subword_programs = true;
    dsmem_programs = dsmem;
    check_all(engine, scoped, strong_plain, shards, host_side);
    dsmem_programs = false;
    subword_programs = false;
}

Test(vc_oracle, subword_accesses_one_shard)
{
    check_all_subword(&wr_engine_vc, false, false, 1, false, false);
}
Test(vc_oracle, subword_accesses_host_side_three_shards)
{
    check_all_subword(&wr_engine_vc, false, true, 3, true, false);
}
Test(vc_oracle, scoped_subword_accesses_three_shards)
{
    check_all_subword(&wr_engine_scoped, true, true, 3, false, false);
}
Test(vc_oracle, scoped_subword_accesses_host_side_one_shard)
{
    check_all_subword(&wr_engine_scoped, true, true, 1, true, false);
}
Test(vc_oracle, subword_remote_shared_three_shards)
{
    check_all_subword(&wr_engine_vc, false, true, 3, false, true);
}
Test(vc_oracle, scoped_subword_remote_shared_one_shard)
{
    check_all_subword(&wr_engine_scoped, true, true, 1, false, true);
}

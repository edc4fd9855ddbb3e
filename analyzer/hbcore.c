/*
 * hbcore.c: shadow memory, access contexts and read sets of the
 * happens-before engines (see hbcore.h).
 */
#include "hbcore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#include "shadow.h"

#define RSET 0x80000000u
#define CTX_ATOMIC 1u
#define CTX_WRITES 2u
#define CTX_WEAK 4u

/* A word's state as the checks read and write it: last write and last read
 * as (context id, epoch); rctx may be RSET | a read set (rep 0 then). */
typedef struct hb_cell {
    uint32_t wctx, wep, rctx, rep;
} hb_cell;

/* The shadow cell, 8 bytes: w and r each name an interned instruction
 * (ins below) and a lane, iid << 5 | lane (0: none), and r may be RSET |
 * a read set instead.  An instruction is a (context id, epoch without its
 * lane) pair: the lanes of one warp instruction share it, so what was 8
 * bytes per half of a 16-byte cell is one table entry per instruction
 * (8 bytes) and 4 bytes per half.  Equal (ctx, ep) pairs unpack equal
 * whatever their ids: the checks compare the unpacked cell as they
 * compared the 16-byte one. */
typedef struct hb_pcell {
    uint32_t w, r;
} hb_pcell;

typedef struct hb_ins {
    uint32_t ctx, ep;   /* ep: stamp | converged, lane bits 0 */
} hb_ins;

#define INS_LIMIT (1u << 26)   /* ids fit in bits 5..30 */

/* A read kept in a read set, and which checkers keep it (bit k = checker
 * k): each checker drops the reads a later read supersedes in its own prune
 * layer, so the set holds the union of what each would keep alone. */
typedef struct rset_ent {
    uint32_t ctx, ep;
    uint8_t keep;
} rset_ent;

typedef struct checker {
    wr_hb_checker c;
    uint8_t engine_index;
} checker;

/* A read set, 32 bytes: up to RSET_INLINE reads live in it (their keep
 * masks packed in keep_in), so checking a word's reads costs the one cache
 * miss of the set (a gather's words are read by a few warps each, and a
 * heap array behind every set was a second miss per word); larger sets
 * move their entries to the heap.  Half a line rather than a whole one: a
 * gather leaves a set on a quarter of the words it reads. */
#define RSET_INLINE 3
typedef struct rset {
    uint32_t n;
    uint16_t keep_in;         /* inline: read i's keep mask in bits 4i..4i+3 */
    uint8_t heap_log2;        /* 0: the reads are inline; else heap holds 2^heap_log2 */
    /* 0: reads only.  Else kept_for_atomics made the set: it holds writes,
     * and its first for_atomics - 1 entries are the atomics kept from
     * before the word's last write, oldest first (the rest came later) */
    uint8_t for_atomics;
    union {
        struct {
            uint32_t ctx, ep;
        } in[RSET_INLINE];
        rset_ent *heap;
    } u;
} rset;

_Static_assert(sizeof(rset) == 32, "a read set is half a cache line");
_Static_assert(WR_HBE_MAX_CHECKERS <= 4, "a keep mask fits in 4 bits");

static inline rset_ent rset_get(const rset *r, uint32_t i)
{
    if (r->heap_log2)
        return r->u.heap[i];
    return (rset_ent){r->u.in[i].ctx, r->u.in[i].ep, (uint8_t)((r->keep_in >> (4 * i)) & 15u)};
}

static inline void rset_put(rset *r, uint32_t i, rset_ent x)
{
    if (r->heap_log2) {
        r->u.heap[i] = x;
        return;
    }
    r->u.in[i].ctx = x.ctx;
    r->u.in[i].ep = x.ep;
    r->keep_in = (uint16_t)((r->keep_in & ~(15u << (4 * i))) | ((unsigned)x.keep << (4 * i)));
}

/* A read set's heap arrays hold 2^RHEAP_FIRST_LOG2 reads, then twice as
 * many each time; up to 2^RHEAP_POOLED_LOG2 they come from pools. */
#define RHEAP_FIRST_LOG2 3
#define RHEAP_POOLED_LOG2 4
#define RHEAP_POOLS (RHEAP_POOLED_LOG2 - RHEAP_FIRST_LOG2 + 1)

/* Read sets live in fixed chunks, never moved: growing one array by
 * doubling held the old and the new copy at once, the peak of a gather. */
#define RCHUNK_SHIFT 14
#define RCHUNK (1u << RCHUNK_SHIFT)

struct wr_hbe {
    wr_engine_config cfg;
    wr_hb *hb;
    checker chk[WR_HBE_MAX_CHECKERS];
    unsigned nchk;
    /* what the checkers' atomic_pairs_free_from allow together (0: none) */
    uint8_t atomic_pairs_free_from;
    uint8_t all;             /* keep mask of every checker */
    wr_shadow_map *shadow;
    uint64_t words;
    uint64_t reports;        /* races reported so far (all checkers) */
    /* contexts: id 0 unused */
    wr_hb_ctx *ctx;
    /* ctx[i].unit again, densely: the word loops ask only the unit of an
     * earlier access's context, and a gather's earlier accesses name
     * contexts all over the table (24 bytes each; 4 here) */
    uint32_t *ctx_unit;
    uint8_t *ctx_class;      /* CTX_ATOMIC | CTX_WRITES | CTX_WEAK per context, densely too */
    uint32_t nctx, capctx;
    uint32_t ctx_kept;       /* contexts the last collection kept (ctx_collect) */
    uint32_t since_collect;  /* accesses since then, for wr_hbe_collect_every */
    uint32_t *collect_to;    /* ctx_collect's old id -> new id */
    uint32_t capto;
    uint32_t *cslots;
    uint32_t ncslots, hashed;   /* hash slots; contexts in the hash (ctx_intern) */
    /* interned instructions the cells name (hb_pcell): id 0 = {0, 0} */
    hb_ins *ins;
    uint32_t nins, capins;
    uint32_t ins_due;        /* collect (ctx_collect) when nins reaches it */
    uint32_t *ins_to;        /* ins_collect's old id -> new id */
    uint32_t capinsto;
    uint32_t memo_ins_ctx, memo_ins_ep, memo_ins_id;   /* the last one asked (id 0: none) */
    /* read sets: set i is rchunk[i >> RCHUNK_SHIFT][i % RCHUNK] */
    rset **rchunk;
    uint32_t nrs, nrchunk;
    uint32_t *rfree;
    uint32_t nfree, capfree;
    /* heap arrays of 8 and 16 reads (rset.heap_log2 3 and 4; larger ones
     * are malloc'd): a real gather's table words are read by 4-12 warps
     * each, and malloc, realloc and free of their arrays were a tenth of
     * the vc+scoped pass */
    wr_pool rheap[RHEAP_POOLS];
    /* wr_hb_knows answers for the current access, one per layer: its
     * words mostly meet the same earlier instruction, and the accessor's
     * clocks do not change until the access ends */
    uint64_t access_no;
    /* wr_hb_layer_read of each layer for the current access: the memo is
     * kept per layer read, so that checkers whose prune or decide layers
     * still share their clocks (scoped's barrier layer and vc's, on code
     * without scoped synchronization) ask once, not once each */
    uint8_t layer_of[WR_HB_MAX_LAYERS];
    uint64_t memo_at[WR_HB_MAX_LAYERS];
    uint32_t memo_unit[WR_HB_MAX_LAYERS], memo_stamp[WR_HB_MAX_LAYERS];
    bool memo_knows[WR_HB_MAX_LAYERS];
    /* the word being checked */
    uint8_t cur_space;
    uint32_t cur_launch, cur_block;
    uint64_t cur_word;
    /* the access acquires at each word it reads (wr_hb_release_knows) */
    bool cur_acquires;
    uint8_t cur_acq_scope;
    bool avx2;               /* memo_piece_avx2 for memo_piece (wr_shadow_simd) */
    /* check_bytes: the races one lane's step on a split word reported so
     * far (checker, earlier context, verdict), so that a race met on
     * several of its bytes counts once, as on the word */
    bool byte_step;
    unsigned nbyte_seen;
    struct byte_race {
        uint32_t ctx;
        uint8_t chk, verdict;
    } byte_seen[16];
};

bool wr_hbe_cur_sync_word(wr_hbe *e)
{
    return wr_hb_sync_word(e->hb, e->cur_space, e->cur_launch, e->cur_block, e->cur_word);
}


/* ---- contexts ---- */

static uint64_t ctx_hash(uint32_t unit, uint32_t site, uint32_t flags)
{
    uint64_t h = ((uint64_t)unit << 32 | site) * 0x9E3779B97F4A7C15ull;
    h ^= flags * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return h;
}

static uint32_t ctx_flags(const wr_hb_ctx *c)
{
    return (uint32_t)c->kind | (uint32_t)c->scope << 8 | (uint32_t)c->weak << 16 |
           (uint32_t)c->writes << 24;
}

/* Open addressing, linear probing; n is a power of two. */
static void hash_insert(uint32_t *slots, uint32_t n, const wr_hb_ctx *c, uint32_t id)
{
    uint32_t j = (uint32_t)ctx_hash(c->unit, c->site, ctx_flags(c)) & (n - 1);
    while (slots[j])
        j = (j + 1) & (n - 1);
    slots[j] = id;
}

static uint32_t ctx_append(wr_hbe *e, const wr_hb_ctx *key)
{
    if (e->nctx == e->capctx) {
        e->capctx *= 2;
        e->ctx = xrealloc(e->ctx, (size_t)e->capctx * sizeof *e->ctx);
        e->ctx_unit = xrealloc(e->ctx_unit, (size_t)e->capctx * sizeof *e->ctx_unit);
        e->ctx_class = xrealloc(e->ctx_class, (size_t)e->capctx);
    }
    e->ctx[e->nctx] = *key;
    e->ctx_unit[e->nctx] = key->unit;
    e->ctx_class[e->nctx] = (uint8_t)((key->kind == WR_KIND_ATOMIC ? CTX_ATOMIC : 0) |
                                      (key->writes ? CTX_WRITES : 0) |
                                      (key->weak ? CTX_WEAK : 0));
    return e->nctx++;
}

/* A listed context's site and flags in 32 bits (eng_sig): exact, and never
 * 0, for a site below 2^24 and flags that fit (kind < 4, scope < 8); 0
 * otherwise, when a lookup reads the contexts themselves.  The contexts
 * are spread over a large array: reading the listed ones to find the
 * current access's was a cache miss or more per access on recordings of
 * many warps. */
static inline uint32_t ctx_sig(uint32_t site, uint8_t kind, uint8_t scope, uint8_t weak,
                               uint8_t writes)
{
    if (site >= (1u << 24) || kind > 3 || scope > 7 || weak > 1 || writes > 1)
        return 0;
    return (site + 1u) << 7 | (uint32_t)kind | (uint32_t)scope << 2 | (uint32_t)weak << 5 |
           (uint32_t)writes << 6;
}

/* A unit's first contexts are listed in its warp (eng_ctx, with eng_sig),
 * the rest in the hash table: most warps have a few instruction contexts,
 * and a grid of many small blocks would otherwise insert every one of them
 * into a table far larger than the cache.  A context is in exactly one of
 * the two places. */
static uint32_t ctx_intern(wr_hbe *e, wr_hb_warp *w, const wr_hb_ctx *key)
{
    uint32_t unit = key->unit, site = key->site;
    uint64_t seq = key->seq;
    uint32_t fl = ctx_flags(key),
             sig = ctx_sig(site, key->kind, key->scope, key->weak, key->writes);
    unsigned listed = 0;
    for (; listed < WR_HB_ENG_CTX && w->eng_ctx[listed]; listed++) {
        uint32_t id = w->eng_ctx[listed];
        if (sig ? w->eng_sig[listed] == sig
                : e->ctx[id].site == site && ctx_flags(&e->ctx[id]) == fl) {
            e->ctx[id].seq = seq;
            return id;
        }
    }
    if (listed < WR_HB_ENG_CTX) {
        w->eng_ctx[listed] = ctx_append(e, key);
        w->eng_sig[listed] = sig;
        return w->eng_ctx[listed];
    }
    if ((e->hashed + 1) * 2 > e->ncslots) {
        uint32_t n = e->ncslots ? e->ncslots * 2 : 1024;
        uint32_t *s = xcalloc(n, sizeof *s);
        for (uint32_t k = 0; k < e->ncslots; k++) {
            uint32_t i = e->cslots[k];
            if (!i)
                continue;
            hash_insert(s, n, &e->ctx[i], i);
        }
        free(e->cslots);
        e->cslots = s;
        e->ncslots = n;
    }
    uint32_t j = (uint32_t)ctx_hash(unit, site, fl) & (e->ncslots - 1);
    while (e->cslots[j]) {
        wr_hb_ctx *c = &e->ctx[e->cslots[j]];
        if (c->unit == unit && c->site == site && ctx_flags(c) == fl) {
            c->seq = seq;
            return e->cslots[j];
        }
        j = (j + 1) & (e->ncslots - 1);
    }
    e->cslots[j] = ctx_append(e, key);
    e->hashed++;
    return e->cslots[j];
}

/* ---- read sets ---- */

static inline rset *rset_at(const wr_hbe *e, uint32_t i)
{
    return &e->rchunk[i >> RCHUNK_SHIFT][i & (RCHUNK - 1u)];
}

static uint32_t rset_new(wr_hbe *e)
{
    uint32_t i;
    if (e->nfree) {
        i = e->rfree[--e->nfree];
        /* the next new set is the next one freed before: cold by now, and
         * its first store (rset_push) was a miss per new set on a gather */
        if (e->nfree)
            __builtin_prefetch(rset_at(e, e->rfree[e->nfree - 1]), 1);
    } else {
        if (e->nrs == e->nrchunk * RCHUNK) {
            if (e->nrchunk == RSET >> RCHUNK_SHIFT)
                wr_out_of_memory((size_t)RSET * sizeof(rset));   /* 2^31 sets */
            e->rchunk = xrealloc(e->rchunk, (size_t)(e->nrchunk + 1) * sizeof *e->rchunk);
            /* cache-line aligned, so no set straddles two lines */
            rset *c = aligned_alloc(64, RCHUNK * sizeof *c);
            if (!c)
                wr_out_of_memory(RCHUNK * sizeof *c);
            e->rchunk[e->nrchunk++] = c;
        }
        i = e->nrs++;
        memset(rset_at(e, i), 0, sizeof(rset));
    }
    return i;
}

static rset_ent *rheap_get(wr_hbe *e, unsigned log2)
{
    if (log2 <= RHEAP_POOLED_LOG2)
        return wr_pool_get(&e->rheap[log2 - RHEAP_FIRST_LOG2]);
    return xmalloc(sizeof(rset_ent) << log2);
}

static void rheap_put(wr_hbe *e, rset_ent *h, unsigned log2)
{
    if (log2 <= RHEAP_POOLED_LOG2)
        wr_pool_put(&e->rheap[log2 - RHEAP_FIRST_LOG2], h);
    else
        free(h);
}

static void rset_release(wr_hbe *e, uint32_t i)
{
    rset *r = rset_at(e, i);
    if (r->heap_log2) {
        rheap_put(e, r->u.heap, r->heap_log2);
        r->heap_log2 = 0;
    }
    r->n = 0;
    r->keep_in = 0;
    r->for_atomics = 0;
    if (e->nfree == e->capfree) {
        e->capfree = e->capfree ? e->capfree * 2 : 64;
        e->rfree = xrealloc(e->rfree, (size_t)e->capfree * sizeof *e->rfree);
    }
    e->rfree[e->nfree++] = i;
}

/* A new set holding what set src holds. */
static uint32_t rset_clone(wr_hbe *e, uint32_t src)
{
    uint32_t i = rset_new(e);   /* may add a chunk: sets never move */
    rset *d = rset_at(e, i);
    const rset *s = rset_at(e, src);
    *d = *s;
    if (s->heap_log2) {
        d->u.heap = rheap_get(e, s->heap_log2);
        memcpy(d->u.heap, s->u.heap, s->n * sizeof *s->u.heap);
    }
    return i;
}

static void rset_push(wr_hbe *e, rset *r, uint32_t ctx, uint32_t ep, uint8_t keep)
{
    uint32_t cap = r->heap_log2 ? 1u << r->heap_log2 : RSET_INLINE;
    if (r->n == cap) {
        unsigned log2 = r->heap_log2 ? r->heap_log2 + 1u : RHEAP_FIRST_LOG2;
        rset_ent *h = rheap_get(e, log2);
        for (uint32_t i = 0; i < r->n; i++)
            h[i] = rset_get(r, i);
        if (r->heap_log2)
            rheap_put(e, r->u.heap, r->heap_log2);
        r->u.heap = h;
        r->heap_log2 = (uint8_t)log2;
    }
    rset_put(r, r->n++, (rset_ent){ctx, ep, keep});
}

/* ---- collecting contexts ---- */

/* A warp's context lives while some cell or read set names it or the warp
 * still runs; the warps of a long trace come and go, and their contexts
 * (about 35 bytes each, a few per warp) and units (20 bytes, vclock.h)
 * would otherwise be kept for the whole trace.  When the table is full,
 * ctx_collect keeps the contexts still named and renumbers them densely, in their old order, everywhere
 * they are named: cells, read sets, running warps' eng_ctx and the hash.
 * Nothing reported changes: a report reads a context's unit, site, kind and
 * seq, never its id, and an instruction still interning keeps its one
 * context (its warp is running, so its listed contexts are kept, and a
 * hashed one a cell no longer names is found again as a new context of the
 * same key, whose seq is set anew as the old one's would have been). */

static uint32_t collect_every;   /* tests: collect before every n-th access */
static bool memo_enabled = true;  /* words_by_lane's memo (tests turn it off) */

void wr_hbe_allow_word_memo(bool allow) { memo_enabled = allow; }

void wr_hbe_collect_every(uint32_t accesses)
{
    collect_every = accesses;
}

/* One place naming context *id: mark it, or give it its new id. */
static inline void id_visit(uint32_t *id, uint32_t *to, bool rename)
{
    if (rename)
        *id = to[*id];
    else
        to[*id] = 1;
}

/* One half of a cell naming instruction *v >> 5: mark it, or renumber it. */
static inline void iid_visit(uint32_t *v, uint32_t *to, bool rename)
{
    if (rename)
        *v = to[*v >> 5] << 5 | (*v & 31u);
    else
        to[*v >> 5] = 1;
}

/* Instruction ids named by one cell (a read set names contexts, walked apart). */
static inline void cell_ids(hb_pcell *c, uint32_t *to, bool rename)
{
    if (c->w)
        iid_visit(&c->w, to, rename);
    if (c->r && !(c->r & RSET))
        iid_visit(&c->r, to, rename);
}

typedef struct collect_walk {
    wr_hbe *e;
    uint32_t *to;           /* old id -> 1 (named) while marking, new id while renaming */
    bool rename;
} collect_walk;

/* A packed line's cells are its rep (never a read set); an expanded line's
 * are read, and only those: a packed line's cells were never written, and
 * reading them would make them resident. */
static void page_ids(wr_shadow_page *p, void *arg)
{
    collect_walk *cw = arg;
    for (unsigned l = 0; l < WR_SHADOW_LINES; l++) {
        if (wr_shadow_line_packed(p, l)) {
            cell_ids(wr_shadow_line_rep(cw->e->shadow, p, l), cw->to, cw->rename);
            continue;
        }
        hb_pcell *c = wr_shadow_cells_at(cw->e->shadow, p, (uint64_t)l << WR_SHADOW_LINE_SHIFT);
        for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
            cell_ids(&c[i], cw->to, cw->rename);
    }
}

static void warp_ids(wr_hb_warp *w, void *arg)
{
    collect_walk *cw = arg;
    for (unsigned k = 0; k < WR_HB_ENG_CTX && w->eng_ctx[k]; k++)
        id_visit(&w->eng_ctx[k], cw->to, cw->rename);
}

/* Every set in use, whichever cell holds it; a free set has no reads. */
static void rset_ids(wr_hbe *e, uint32_t *to, bool rename)
{
    for (uint32_t i = 0; i < e->nrs; i++) {
        rset *r = rset_at(e, i);
        for (uint32_t j = 0; j < r->n; j++)
            id_visit(r->heap_log2 ? &r->u.heap[j].ctx : &r->u.in[j].ctx, to, rename);
    }
}

/* Context ids: the cells name them through their instructions. */
static void ids_walk(wr_hbe *e, uint32_t *to, bool rename)
{
    collect_walk cw = {e, to, rename};
    for (uint32_t i = 1; i < e->nins; i++)
        id_visit(&e->ins[i].ctx, to, rename);
    rset_ids(e, to, rename);
    wr_hb_foreach_warp(e->hb, warp_ids, &cw);
}

/* Keeps the instructions some cell names, renumbered densely in their old
 * order (the cells renamed), so that the contexts only dropped
 * instructions named go in ctx_collect. */
static void ins_collect(wr_hbe *e)
{
    if (e->capinsto < e->nins) {
        free(e->ins_to);
        e->capinsto = e->capins;
        e->ins_to = xmalloc((size_t)e->capinsto * sizeof *e->ins_to);
    }
    uint32_t *to = e->ins_to;
    memset(to, 0, (size_t)e->nins * sizeof *to);
    collect_walk cw = {e, to, false};
    wr_shadow_foreach(e->shadow, page_ids, &cw);
    uint32_t n = 1;   /* id 0 stays {0, 0} */
    for (uint32_t i = 1; i < e->nins; i++) {
        if (!to[i])
            continue;
        to[i] = n;
        e->ins[n++] = e->ins[i];
    }
    cw.rename = true;
    wr_shadow_foreach(e->shadow, page_ids, &cw);
    e->nins = n;
    e->memo_ins_id = 0;
}

#define INS_COLLECT_MIN (1u << 20)

static void ctx_collect(wr_hbe *e)
{
    ins_collect(e);
    {
        uint64_t due = 2ull * e->nins;
        if (due < INS_COLLECT_MIN)
            due = INS_COLLECT_MIN;
        if (due > INS_LIMIT - 1024u)
            due = INS_LIMIT - 1024u;
        e->ins_due = (uint32_t)due;
    }
    /* kept between collections: a fresh one this large came from mmap,
     * and its unmapping flushed every worker's TLB each time */
    if (e->capto < e->nctx) {
        free(e->collect_to);
        e->capto = e->capctx;
        e->collect_to = xmalloc((size_t)e->capto * sizeof *e->collect_to);
    }
    uint32_t *to = e->collect_to;
    memset(to, 0, (size_t)e->nctx * sizeof *to);
    ids_walk(e, to, false);
    uint32_t n = 1;   /* id 0 stays unused */
    for (uint32_t i = 1; i < e->nctx; i++) {
        if (!to[i])
            continue;
        to[i] = n;
        e->ctx[n] = e->ctx[i];
        e->ctx_unit[n] = e->ctx_unit[i];
        e->ctx_class[n] = e->ctx_class[i];
        n++;
    }
    ids_walk(e, to, true);
    /* the hash keeps the hashed contexts still named */
    uint32_t hashed = 0;
    for (uint32_t k = 0; k < e->ncslots; k++)
        hashed += e->cslots[k] && to[e->cslots[k]];
    uint32_t slots = 0;
    if (hashed) {
        slots = 1024;
        while ((hashed + 1) * 2 > slots)
            slots *= 2;
    }
    uint32_t *s = slots ? xcalloc(slots, sizeof *s) : NULL;
    for (uint32_t k = 0; k < e->ncslots; k++) {
        uint32_t i = e->cslots[k];
        if (i && to[i])
            hash_insert(s, slots, &e->ctx[to[i]], to[i]);
    }
    free(e->cslots);
    e->cslots = s;
    e->ncslots = slots;
    e->hashed = hashed;
    e->nctx = n;
    e->ctx_kept = n;
    e->since_collect = 0;
    /* the units no context names go too, a chunk of them at a time */
    uint8_t *named = xcalloc(wr_hb_unit_chunks(e->hb), 1);
    for (uint32_t i = 1; i < n; i++)
        named[e->ctx_unit[i] >> WR_HB_UNIT_CHUNK_SHIFT] = 1;
    wr_hb_forget_units(e->hb, named);
    free(named);
}

/* Collect rather than grow a full table when at least half of it is new
 * since the last collection and the walk is worth it: the cells walked
 * (pages x words) are at most 16 per context made since, so a trace whose
 * contexts stay named pays a bounded share, and one whose shadow is far
 * larger than its contexts does not walk it for a few. */
#define CTX_COLLECT_MIN (1u << 16)

static __attribute__((noinline)) void ctx_collect_if_worth(wr_hbe *e)
{
    if (e->nins >= e->ins_due) {
        /* as for contexts: the walk only when the instructions made since
         * are at least an eighth of the cells walked, or the ids run out */
        uint64_t cells = (uint64_t)e->shadow->count * WR_SHADOW_PAGE_WORDS;
        if ((uint64_t)e->nins * 8 >= cells || e->nins >= INS_LIMIT - 1024u) {
            ctx_collect(e);
            if (e->nins >= INS_LIMIT - 1024u) {
                /* a limit of the cell's id bits, as out of memory is one of
                 * the machine's: the run stays uncommitted (xalloc.h) */
                fprintf(stderr,
                        "warprace: analysis stopped: more than %u warp instructions are each "
                        "the last access of some word (the vc/scoped shadow cells' limit)\n",
                        INS_LIMIT - 1024u);
                exit(WR_EXIT_OUT_OF_MEMORY);
            }
            return;
        }
        uint64_t due = 2ull * e->ins_due;
        e->ins_due = due > INS_LIMIT - 1024u ? INS_LIMIT - 1024u : (uint32_t)due;
    }
    if (collect_every) {
        if (++e->since_collect >= collect_every)
            ctx_collect(e);
        return;
    }
    if (e->capctx < CTX_COLLECT_MIN || e->capctx < 2ull * e->ctx_kept)
        return;
    uint64_t cells = (uint64_t)e->shadow->count * WR_SHADOW_PAGE_WORDS;
    if ((uint64_t)e->capctx * 8 >= cells)
        ctx_collect(e);
}

static inline void ctx_maybe_collect(wr_hbe *e)
{
    if (__builtin_expect(e->nctx == e->capctx || collect_every || e->nins >= e->ins_due, 0))
        ctx_collect_if_worth(e);
}


/* ---- checks ---- */

/* wr_hb_knows for the access being checked (w is its warp), memoized. */
static inline bool knows(wr_hbe *e, const wr_hb_warp *w, unsigned layer, uint32_t unit,
                         uint32_t stamp)
{
    layer = e->layer_of[layer];
    if (e->memo_at[layer] == e->access_no && e->memo_unit[layer] == unit &&
        e->memo_stamp[layer] == stamp)
        return e->memo_knows[layer];
    bool k = wr_hb_knows(e->hb, w, layer, unit, stamp);
    e->memo_at[layer] = e->access_no;
    e->memo_unit[layer] = unit;
    e->memo_stamp[layer] = stamp;
    e->memo_knows[layer] = k;
    return k;
}

/* A new access (or copy part) begins: the memo of knows() is stale. */
static inline void memo_reset(wr_hbe *e)
{
    e->access_no++;
    for (unsigned l = 0; l < WR_HB_MAX_LAYERS; l++)
        e->layer_of[l] = (uint8_t)wr_hb_layer_read(e->hb, l);
}

bool wr_hbe_ordered(wr_hbe *e, const wr_hb_warp *w, unsigned layer, const wr_hb_prev *prev,
                    unsigned lane)
{
    uint32_t pep = prev->ep;
    bool o = prev->unit == w->unit
                 ? wr_hb_intra_ordered(w, WR_EP_LANE(pep), WR_EP_STAMP(pep), WR_EP_CONV(pep), lane,
                                       layer)
                 : knows(e, w, layer, prev->unit, WR_EP_STAMP(pep));
    if (o || !e->cur_acquires)
        return o;
    return wr_hb_release_knows(e->hb, w, layer, e->cur_space, e->cur_launch, e->cur_block,
                               e->cur_word, e->cur_acq_scope, prev->unit, WR_EP_STAMP(pep));
}

const wr_hb_ctx *wr_hbe_ctx(const wr_hbe *e, uint32_t ctx) { return &e->ctx[ctx]; }

typedef struct cur_access {
    const wr_hb_warp *w;
    uint32_t ctx;
    const wr_hb_ctx *c;
    uint32_t ep;        /* without lane */
    uint8_t space;
    bool writes, atomic;
} cur_access;

static void report(wr_hbe *e, const checker *k, const wr_hb_warp *w, const wr_hb_ctx *prev,
                   uint32_t prev_ep, const wr_hb_ctx *cur, unsigned lane, uint8_t verdict,
                   uint8_t space, uint64_t addr)
{
    wr_race r;
    memset(&r, 0, sizeof r);
    r.engine = k->engine_index;
    r.race_class = wr_hb_race_class(e->hb, prev->unit, cur->unit);
    r.verdict = verdict;
    wr_hb_race_side(e->hb, &r.first, prev->unit, WR_EP_LANE(prev_ep), prev->site, prev->kind,
                    prev->seq);
    wr_hb_race_side(e->hb, &r.second, cur->unit, lane, cur->site, cur->kind, cur->seq);
    /* e->cur_block: the owner of a shared word (another block's, reached
     * through DSMEM, when a side's block is not it) */
    wr_race_set_word(&r, space, e->cur_block, addr,
                     r.first.block != e->cur_block || r.second.block != e->cur_block);
    (void)w;
    e->reports++;
    if (e->cfg.findings)
        wr_findings_report(e->cfg.findings, &r);
}

/* Was (the context with unit `punit`, pep) an earlier lane of the current
 * instruction? */
static inline bool same_instr(const cur_access *ca, uint32_t punit, uint32_t pep)
{
    return punit == ca->w->unit && WR_EP_STAMP(pep) == WR_EP_STAMP(ca->ep);
}

/* Is prev the current warp's own earlier access, ordered before this lane
 * by program order, lockstep, barriers or warp syncs?  Those hold in every
 * layer (an acquire of the warp's own stamp does not: the barrier-only
 * layer), so such a pair is no race for any engine's decide, and a read it
 * precedes is superseded.  Inline: most
 * words a warp touches again are its own (stencils, tiles in shared
 * memory), and the call was most of their cost. */
static inline __attribute__((always_inline)) bool own_ordered(const wr_hbe *e,
                                                              const cur_access *ca,
                                                              uint32_t pctx, uint32_t pep,
                                                              unsigned lane)
{
    if (e->ctx_unit[pctx] != ca->w->unit)
        return false;
    return WR_EP_STAMP(pep) == WR_EP_STAMP(ca->ep) ||
           wr_hb_intra_ordered(ca->w, WR_EP_LANE(pep), WR_EP_STAMP(pep), WR_EP_CONV(pep), lane,
                               WR_HB_BAR);
}

/* Another lane of the current instruction, interchangeable with this one
 * (it ran converged), or this lane itself. */
static inline bool same_instr_alike(const cur_access *ca, uint32_t punit, uint32_t pep,
                                    unsigned lane)
{
    return same_instr(ca, punit, pep) && (ca->w->conv || WR_EP_LANE(pep) == lane);
}

/* own_ordered for superseding: lanes of one instruction that ran diverged
 * are not ordered with each other (lanes_alike), so an earlier lane's read
 * of the same instruction is not superseded by this lane's (the checks
 * treat such pairs as ordered: they are no race, or the intra-instruction
 * race of intra_instruction). */
static inline bool own_supersedes(const wr_hbe *e, const cur_access *ca, uint32_t pctx,
                                  uint32_t pep, unsigned lane)
{
    uint32_t punit = e->ctx_unit[pctx];
    if (same_instr(ca, punit, pep))
        return same_instr_alike(ca, punit, pep, lane);
    return own_ordered(e, ca, pctx, pep, lane);
}

/* In a step on a split word's bytes (check_bytes): has checker k reported
 * the race of pctx with this verdict on an earlier byte?  (else it is noted
 * now)  The earlier context, the current one and the verdict make the
 * race's identity (findings.c), so a byte step counts each race once. */
static bool byte_seen(wr_hbe *e, unsigned k, uint32_t pctx, uint8_t verdict)
{
    for (unsigned i = 0; i < e->nbyte_seen; i++)
        if (e->byte_seen[i].ctx == pctx && e->byte_seen[i].chk == k &&
            e->byte_seen[i].verdict == verdict)
            return true;
    if (e->nbyte_seen < sizeof e->byte_seen / sizeof e->byte_seen[0])
        e->byte_seen[e->nbyte_seen++] = (struct byte_race){pctx, (uint8_t)k, verdict};
    return false;
}

/* prev against the current access, for the checkers in `keep`; at least
 * one of them writes, and prev is not the warp's own ordered access
 * (own_ordered). */
static void check_pair(wr_hbe *e, const cur_access *ca, uint32_t pctx, uint32_t pep,
                       unsigned lane, uint64_t addr, uint8_t keep)
{
    uint8_t cls = e->ctx_class[pctx];
    const wr_hb_prev p = {pctx, e->ctx_unit[pctx], pep, (cls & CTX_ATOMIC) != 0,
                          (cls & CTX_WEAK) != 0};
    for (unsigned k = 0; k < e->nchk; k++) {
        if (!(keep & (1u << k)))
            continue;
        uint8_t verdict = 0;
        if (e->chk[k].c.decide(e, ca->w, &p, ca->c, lane, &verdict) &&
            !(e->byte_step && byte_seen(e, k, pctx, verdict)))
            report(e, &e->chk[k], ca->w, &e->ctx[pctx], pep, ca->c, lane, verdict, ca->space, addr);
    }
}

static inline __attribute__((always_inline)) void check_prev(wr_hbe *e, const cur_access *ca,
                                                             uint32_t pctx, uint32_t pep,
                                                             unsigned lane, uint64_t addr,
                                                             uint8_t keep)
{
    if (ca->atomic && (e->ctx_class[pctx] & CTX_ATOMIC) && e->atomic_pairs_free_from) {
        uint8_t ps = e->ctx[pctx].scope, cs = ca->c->scope;
        if ((ps < cs ? ps : cs) >= e->atomic_pairs_free_from)
            return;   /* no checker would report the pair */
    }
    if (!own_ordered(e, ca, pctx, pep, lane))
        check_pair(e, ca, pctx, pep, lane, addr, keep);
}

/* The checkers of `keep` that still keep prev, an earlier read of another
 * warp, once the current read is recorded: those in whose prune layer prev
 * is not ordered before it. */
static inline uint8_t still_kept(wr_hbe *e, const cur_access *ca, uint32_t punit,
                                 uint32_t pep, uint8_t keep)
{
    for (unsigned k = 0; k < e->nchk; k++)
        if ((keep & (1u << k)) &&
            knows(e, ca->w, e->chk[k].c.prune_layer, punit, WR_EP_STAMP(pep)))
            keep &= (uint8_t)~(1u << k);
    return keep;
}

static inline bool ctx_plain(const wr_hbe *e, uint32_t ctx) { return !(e->ctx_class[ctx] & CTX_ATOMIC); }
static inline bool ctx_writes(const wr_hbe *e, uint32_t ctx) { return e->ctx_class[ctx] & CTX_WRITES; }

#define KEPT_ATOMICS WR_HB_KEPT_ATOMICS

/* kept_for_atomics: what an atomic write does not supersede.  Atomics do
 * not race with each other, so FastTrack's "a later access unordered with
 * an earlier one is unordered with the last write, and races with it"
 * fails when the last write and the later access are both atomics:
 *   - a plain access, ordered before the atomic write or not, matters to
 *     a later atomic (a plain store, the same warp's atomicAdd, then
 *     another block's atomicAdd: that one races with the store only);
 *   - an atomic access (a load, or a write) the atomic write is not
 *     ordered after matters to a later plain access (every block's
 *     atomicAdd(&bin, 1), then a plain read of bin by the last adder's
 *     warp, ordered after its own add only).
 * The word's read set keeps, beside the new last write, every plain access
 * (the plain write, at most one: a plain write clears the set; the plain
 * reads no later read superseded) and the KEPT_ATOMICS newest atomic
 * accesses not ordered before this lane by its warp's program order.  No
 * clock is asked (a histogram bin takes an add from every warp, and each
 * add would ask about every kept one), and older atomics go (ENGINES.md,
 * vc, "Known limits"); "newest" is by the order of the accesses, which
 * the set keeps (for_atomics).  Reads check the writes of a set made here
 * and never supersede them; an atomic read does not supersede a plain
 * read; a plain write, checked against them all, clears them.  Returns
 * the cell's new rctx: RSET | the set (the old one compacted in place, or
 * a new one), or 0. */
typedef struct kept_atoms {
    rset_ent a[KEPT_ATOMICS + 1];   /* oldest first; one spare before the oldest goes */
    unsigned n;
} kept_atoms;

/* x, an atomic access, goes in as the newest unless program order puts it
 * before this lane (then the current write stands for it). */
static inline void kept_atom(const wr_hbe *e, const cur_access *ca, unsigned lane, kept_atoms *k,
                             rset_ent x)
{
    if (same_instr_alike(ca, e->ctx_unit[x.ctx], x.ep, lane) ||
        own_supersedes(e, ca, x.ctx, x.ep, lane))
        return;
    if (k->n == KEPT_ATOMICS + 1) {
        memmove(k->a, k->a + 1, KEPT_ATOMICS * sizeof *k->a);
        k->n--;
    }
    k->a[k->n++] = x;
}

/* The atomics of a set made by kept_for_atomics that are older than the
 * word's last write: its first entries. */
static inline uint32_t old_atoms(const rset *r) { return r->for_atomics ? r->for_atomics - 1u : 0; }

/* kept_for_atomics' step for one earlier access x: a plain one stays in
 * the set (compacted to its first *o entries; r is made when needed), an
 * atomic one is a candidate for ka. */
static inline void kept_one(wr_hbe *e, const cur_access *ca, unsigned lane, kept_atoms *ka,
                            uint32_t *ri, rset **r, uint32_t *o, rset_ent x)
{
    if (!ctx_plain(e, x.ctx)) {
        kept_atom(e, ca, lane, ka, x);
        return;
    }
    if (!*r) {
        *ri = rset_new(e);
        *r = rset_at(e, *ri);
    }
    if (*o < (*r)->n) {
        rset_put(*r, (*o)++, x);
    } else {
        (*r)->n = *o;
        rset_push(e, *r, x.ctx, x.ep, x.keep);
        (*o)++;
    }
}

static __attribute__((noinline)) uint32_t kept_for_atomics(wr_hbe *e, const cur_access *ca,
                                                           const hb_cell *c, unsigned lane)
{
    kept_atoms ka = {.n = 0};
    uint32_t ri = UINT32_MAX;
    rset *r = NULL;
    uint32_t o = 0;
    /* the candidates go in oldest first: the atomics kept before the last
     * write, the last write, then what came after it (the set's other
     * entries, or the one read in the cell) */
    rset_ent last = {c->wctx, c->wep, e->all};
    bool last_atomic = last.ctx && !ctx_plain(e, last.ctx);
    if (c->rctx & RSET) {
        ri = c->rctx & ~RSET;
        r = rset_at(e, ri);
        uint32_t before_last = old_atoms(r), n = r->n;
        /* in place (o <= i): the plain entries' order does not matter, so
         * a plain last write goes in after the loop */
        for (uint32_t i = 0; i < n; i++) {
            if (i == before_last && last_atomic)
                kept_atom(e, ca, lane, &ka, last);
            kept_one(e, ca, lane, &ka, &ri, &r, &o, rset_get(r, i));
        }
        if (n <= before_last && last_atomic)
            kept_atom(e, ca, lane, &ka, last);
        if (last.ctx && !last_atomic)
            kept_one(e, ca, lane, &ka, &ri, &r, &o, last);
    } else {
        if (last.ctx)
            kept_one(e, ca, lane, &ka, &ri, &r, &o, last);
        if (c->rctx)
            kept_one(e, ca, lane, &ka, &ri, &r, &o, (rset_ent){c->rctx, c->rep, e->all});
    }
    unsigned first = ka.n > KEPT_ATOMICS ? ka.n - KEPT_ATOMICS : 0;
    uint32_t atoms = ka.n - first;
    if (!o && !atoms) {
        if (r)
            rset_release(e, ri);
        return 0;
    }
    if (!r) {
        ri = rset_new(e);
        r = rset_at(e, ri);
    }
    r->n = o;
    for (unsigned i = first; i < ka.n; i++)
        rset_push(e, r, ka.a[i].ctx, ka.a[i].ep, ka.a[i].keep);
    /* the atomics to the front (old_atoms), the plain entries after them */
    for (uint32_t i = 0; i < atoms && o; i++) {
        rset_ent x = rset_get(r, i), y = rset_get(r, o + i);
        rset_put(r, i, y);
        rset_put(r, o + i, x);
    }
    r->for_atomics = (uint8_t)(1u + atoms);
    return RSET | ri;
}

/* kept_for_atomics' answer where a histogram bin spends its life: the set
 * holds the KEPT_ATOMICS newest atomics and nothing else, and they and the
 * last write, an atomic too, are other warps' (so none is ordered before
 * this lane by program order): the oldest goes and the last write comes
 * in.  false: not that case, nothing changed. */
static inline bool kept_shift(wr_hbe *e, const cur_access *ca, const hb_cell *c)
{
    _Static_assert(KEPT_ATOMICS == 2 && RSET_INLINE >= 2, "two inline atomics");
    if (!(c->rctx & RSET) || !c->wctx)
        return false;
    rset *r = rset_at(e, c->rctx & ~RSET);
    if (old_atoms(r) != 2 || r->heap_log2 || r->n != 2)
        return false;
    uint32_t a = r->u.in[0].ctx, b = r->u.in[1].ctx, unit = ca->w->unit;
    if (!(e->ctx_class[a] & e->ctx_class[b] & e->ctx_class[c->wctx] & CTX_ATOMIC) ||
        e->ctx_unit[a] == unit || e->ctx_unit[b] == unit || e->ctx_unit[c->wctx] == unit)
        return false;
    r->u.in[0] = r->u.in[1];
    r->u.in[1].ctx = c->wctx;
    r->u.in[1].ep = c->wep;
    r->keep_in = (uint16_t)((r->keep_in & ~0xffu) | ((r->keep_in >> 4) & 15u) |
                            ((unsigned)e->all << 4));
    return true;
}

/* Inlined into the word loops: the call was a tenth of the per-word cost. */
static inline __attribute__((always_inline)) void check_cell(wr_hbe *e, const cur_access *ca,
                                                             hb_cell *c, unsigned lane,
                                                             uint64_t addr)
{
    uint32_t ep = ca->ep | lane;
    if (!c->wctx && !c->rctx)
        e->words++;
    if (ca->writes) {
        if (c->wctx)
            check_prev(e, ca, c->wctx, c->wep, lane, addr, e->all);
        if (c->rctx & RSET) {
            uint32_t ri = c->rctx & ~RSET;
            const rset *r = rset_at(e, ri);
            for (uint32_t i = 0; i < r->n; i++) {
                rset_ent x = rset_get(r, i);
                /* an atomic kept for later plain accesses (kept_for_atomics):
                 * the last write stands for it against an atomic */
                if (ca->atomic && r->for_atomics && !ctx_plain(e, x.ctx))
                    continue;
                check_prev(e, ca, x.ctx, x.ep, lane, addr, x.keep);
            }
        } else if (c->rctx) {
            check_prev(e, ca, c->rctx, c->rep, lane, addr, e->all);
        }
        uint32_t kept = 0;
        if (ca->atomic && !kept_shift(e, ca, c))
            kept = kept_for_atomics(e, ca, c, lane);   /* reuses or releases the set */
        else if (ca->atomic)
            kept = c->rctx;
        else if (c->rctx & RSET)
            rset_release(e, c->rctx & ~RSET);
        /* another lane of this instruction: keep the first (an atomic's
         * diverged lanes are each kept: kept_for_atomics) */
        if (!(c->wctx == ca->ctx && (ca->atomic ? same_instr_alike(ca, ca->w->unit, c->wep, lane)
                                                : same_instr(ca, ca->w->unit, c->wep)))) {
            c->wctx = ca->ctx;
            c->wep = ep;
        }
        c->rctx = kept;
        c->rep = 0;
        return;
    }
    /* read */
    if (c->wctx)
        check_prev(e, ca, c->wctx, c->wep, lane, addr, e->all);
    if ((c->rctx & RSET) && rset_at(e, c->rctx & ~RSET)->for_atomics) {
        const rset *r = rset_at(e, c->rctx & ~RSET);
        for (uint32_t i = 0; i < r->n; i++) {
            rset_ent x = rset_get(r, i);
            if (ctx_writes(e, x.ctx))
                check_prev(e, ca, x.ctx, x.ep, lane, addr, x.keep);
        }
    }
    if (!c->rctx) {
        c->rctx = ca->ctx;
        c->rep = ep;
        return;
    }
    if (!(c->rctx & RSET)) {
        uint32_t punit = e->ctx_unit[c->rctx];
        if (same_instr_alike(ca, punit, c->rep, lane))
            return;
        uint8_t keep = 0;
        if (ca->atomic && ctx_plain(e, c->rctx))
            keep = e->all;   /* an atomic read does not supersede a plain one */
        else if (!own_supersedes(e, ca, c->rctx, c->rep, lane))
            keep = punit != ca->w->unit ? still_kept(e, ca, punit, c->rep, e->all) : e->all;
        if (!keep) {   /* superseded by the current read for every checker */
            c->rctx = ca->ctx;
            c->rep = ep;
            return;
        }
        uint32_t ri = rset_new(e);
        rset_push(e, rset_at(e, ri), c->rctx, c->rep, keep);
        rset_push(e, rset_at(e, ri), ca->ctx, ep, e->all);
        c->rctx = RSET | ri;
        c->rep = 0;
        return;
    }
    rset *r = rset_at(e, c->rctx & ~RSET);
    /* Another lane of this instruction put it in already: then nothing
     * changes (this lane's read is not recorded, so it supersedes nothing).
     * That entry can only be the last one: it was pushed when the
     * instruction's first lane read this word, and no other access touches
     * the word before the instruction ends. */
    if (r->n) {
        rset_ent last = rset_get(r, r->n - 1);
        if (same_instr_alike(ca, e->ctx_unit[last.ctx], last.ep, lane))
            return;
    }
    uint32_t o = 0, old = old_atoms(r), old_left = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        rset_ent x = rset_get(r, i);
        uint32_t punit = e->ctx_unit[x.ctx];
        if ((ca->atomic && ctx_plain(e, x.ctx)) || (r->for_atomics && ctx_writes(e, x.ctx))) {
            old_left += i < old;
            rset_put(r, o++, x);   /* a read supersedes no write, an atomic no plain read */
            continue;
        }
        if (own_supersedes(e, ca, x.ctx, x.ep, lane))
            continue; /* superseded by the current read */
        if (punit != ca->w->unit && !(x.keep = still_kept(e, ca, punit, x.ep, x.keep)))
            continue;
        old_left += i < old;
        rset_put(r, o++, x);
    }
    if (r->for_atomics)
        r->for_atomics = (uint8_t)(1u + old_left);
    if (!o) {   /* every earlier read superseded: back to one read in the cell */
        rset_release(e, c->rctx & ~RSET);
        c->rctx = ca->ctx;
        c->rep = ep;
        return;
    }
    r->n = o;
    rset_push(e, r, ca->ctx, ep, e->all);
}

static __attribute__((noinline)) uint32_t ins_new(wr_hbe *e, uint32_t ctx, uint32_t ep)
{
    if (e->nins == e->capins) {
        e->capins *= 2;
        e->ins = xrealloc(e->ins, (size_t)e->capins * sizeof *e->ins);
    }
    e->ins[e->nins] = (hb_ins){ctx, ep};
    e->memo_ins_ctx = ctx;
    e->memo_ins_ep = ep;
    e->memo_ins_id = e->nins;
    return e->nins++;
}

/* The half of a packed cell for (ctx, ep).  Every half an access stores is
 * its own (ctx, ep): the memo answers all but its first word. */
static inline uint32_t pack_half(wr_hbe *e, uint32_t ctx, uint32_t ep)
{
    if (!ctx)
        return 0;
    uint32_t hi = ep & ~31u, id;
    if (e->memo_ins_id && e->memo_ins_ctx == ctx && e->memo_ins_ep == hi)
        id = e->memo_ins_id;
    else
        id = ins_new(e, ctx, hi);
    return id << 5 | (ep & 31u);
}

static inline hb_cell unpack(const wr_hbe *e, hb_pcell p)
{
    hb_cell c;
    const hb_ins *w = &e->ins[p.w >> 5];
    c.wctx = w->ctx;
    c.wep = w->ep | (p.w & 31u);
    if (p.r & RSET) {
        c.rctx = p.r;
        c.rep = 0;
    } else {
        const hb_ins *r = &e->ins[p.r >> 5];
        c.rctx = r->ctx;
        c.rep = r->ep | (p.r & 31u);
    }
    return c;
}

static inline __attribute__((always_inline)) void check_word(wr_hbe *e, const cur_access *ca,
                                                             hb_pcell *pc, unsigned lane,
                                                             uint64_t addr)
{
    hb_cell old = unpack(e, *pc), c = old;
    check_cell(e, ca, &c, lane, addr);
    if (c.wctx != old.wctx || c.wep != old.wep)
        pc->w = pack_half(e, c.wctx, c.wep);
    if (c.rctx & RSET)
        pc->r = c.rctx;
    else if (c.rctx != old.rctx || c.rep != old.rep)
        pc->r = pack_half(e, c.rctx, c.rep);
}

/* Sub-word accesses (shadow.h): a split word's byte cells start as its
 * cell (wr_shadow_split_fn).  A cell owns its read set (rset_release when
 * it is overwritten, free_page_sets when its page goes): byte 0 takes the
 * word's, the others get copies, and the word's cell, no longer read, is
 * zeroed (wr_shadow_byte_cells), so that no set is released or walked
 * twice. */
static void split_cell(void *byte_cells, const void *word_cell, wr_shadow_page *byte_page,
                       void *ctx)
{
    (void)byte_page;
    wr_hbe *e = ctx;
    const hb_pcell *w = word_cell;
    hb_pcell *b = byte_cells;
    for (unsigned i = 0; i < 4; i++) {
        b[i] = *w;
        if (i && (w->r & RSET))
            b[i].r = RSET | rset_clone(e, w->r & ~RSET);
    }
}

/* One lane's step on bytes [lo, end) of word `word` of page p, an access
 * that covers part of the word or a word already split: each byte's cell
 * is stepped as the word's would be, named by its byte's address.  A race
 * met on several of the bytes counts once (byte_seen; the lowest byte is
 * its example), and the word counts once among the words touched. */
static __attribute__((noinline)) void check_bytes(wr_hbe *e, const cur_access *ca,
                                                  wr_shadow_page *p, uint64_t word, unsigned lane,
                                                  uint64_t lo, uint64_t end)
{
    hb_pcell *bc = wr_shadow_byte_cells(e->shadow, p, word, split_cell, e, NULL);
    bool untouched = true;
    for (unsigned i = 0; i < 4; i++)
        untouched &= !bc[i].w && !bc[i].r;
    uint64_t words = e->words;
    e->byte_step = true;
    e->nbyte_seen = 0;
    for (uint64_t b = lo; b < end; b++)
        check_word(e, ca, &bc[b & 3u], lane, b);
    e->byte_step = false;
    e->words = words + untouched;
}

/* One lane's step on word `word` of page p, of which it touches bytes
 * [lo, end): the word's cell, or (check_bytes) the cells of those bytes
 * where that is part of the word or the word is split. */
static inline __attribute__((always_inline)) void step_word(wr_hbe *e, const cur_access *ca,
                                                            wr_shadow_page *p, uint64_t word,
                                                            unsigned lane, uint64_t lo,
                                                            uint64_t end)
{
    e->cur_word = word;
    if (__builtin_expect(wr_shadow_partial_word(lo, end, word) || wr_shadow_word_split(p, word),
                         0))
        check_bytes(e, ca, p, word, lane, lo, end);
    else
        check_word(e, ca, wr_shadow_cell(e->shadow, p, word), lane, lo);
}

typedef struct lane_page_ctx {
    wr_hbe *e;
    const wr_access *a;
} lane_page_ctx;

/* Packed lines (shadow.h): a rep is the cell of the line's lane-0 word;
 * word 32k + l holds it with l added to the lanes of its epochs, which is
 * what a whole-line coalesced access leaves.  A rep never holds a read set. */
static void expand_line(void *cells, const void *rep)
{
    const hb_pcell *r = rep;
    hb_pcell *c = cells;
    for (unsigned l = 0; l < WR_SHADOW_LINE_WORDS; l++) {
        c[l] = *r;
        if (r->w)
            c[l].w = (r->w & ~31u) | ((r->w + l) & 31u);
        if (r->r)
            c[l].r = (r->r & ~31u) | ((r->r + l) & 31u);
    }
}

static uint8_t access_kind(uint8_t op)
{
    if (wr_op_is_atomic(op))
        return WR_KIND_ATOMIC;
    return op == WR_OP_STORE ? WR_KIND_WRITE : WR_KIND_READ;
}

/* May two active lanes of a vector access overlap?  false when no word is
 * touched by two lanes (then no two lanes' bytes overlap either); true when
 * some word is, or a lane's bytes wrap around the address space.  One pass
 * over the lanes with a small hash set of words: a scatter of distinct
 * words, the common case, costs no sort (the insertion sort below was a
 * tenth of vc's instructions on a gather/scatter trace).  Lanes whose
 * words all lie within 64 words of the lowest (a warp's stores permuted
 * within a tile) mark a bit each instead, a quarter of the hash set's
 * instructions. */
static bool vector_lanes_may_overlap(const wr_access *a, uint32_t lanes)
{
    enum { SLOTS = 256 };   /* > 32 lanes x 5 words (16 bytes unaligned) */
    unsigned size = a->size;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t x = lanes; x; x &= x - 1) {
        uint64_t addr = a->lane_addr[__builtin_ctz(x)];
        lo = addr < lo ? addr : lo;
        hi = addr > hi ? addr : hi;
    }
    if (hi > UINT64_MAX - (size - 1u))
        return true;
    uint64_t lo_word = lo >> WR_WORD_SHIFT;
    if (((hi + size - 1u) >> WR_WORD_SHIFT) - lo_word < 64) {
        uint64_t seen = 0;
        for (uint32_t x = lanes; x; x &= x - 1) {
            uint64_t addr = a->lane_addr[__builtin_ctz(x)];
            unsigned w0 = (unsigned)((addr >> WR_WORD_SHIFT) - lo_word);
            unsigned w1 = (unsigned)(((addr + size - 1u) >> WR_WORD_SHIFT) - lo_word);
            uint64_t bits = (w1 == 63 ? ~0ull : (2ull << w1) - 1u) & ~((1ull << w0) - 1u);
            if (seen & bits)
                return true;
            seen |= bits;
        }
        return false;
    }
    uint64_t key[SLOTS];
    uint64_t used[SLOTS / 64] = {0};
    for (uint32_t x = lanes; x; x &= x - 1) {
        uint64_t addr = a->lane_addr[__builtin_ctz(x)];
        if (addr > UINT64_MAX - (size - 1u))
            return true;
        uint64_t w = addr >> WR_WORD_SHIFT, last = (addr + size - 1u) >> WR_WORD_SHIFT;
        do {
            unsigned h = (unsigned)((w * 0x9E3779B97F4A7C15ull) >> 56);
            while ((used[h >> 6] >> (h & 63u)) & 1u) {
                if (key[h] == w)
                    return true;
                h = (h + 1u) & (SLOTS - 1u);
            }
            used[h >> 6] |= 1ull << (h & 63u);
            key[h] = w;
        } while (w++ < last);
    }
    return false;
}

/* Two lanes of one plain store writing overlapping bytes: an intra-warp race
 * inside one instruction.  Only the lanes of `lanes` are compared: the
 * active ones, or where the word loop found every lane on one word of its
 * own (wr_shadow_vector_lanes), those whose word this shard owns: two
 * lanes then overlap only on one word, which one shard owns, and a shard
 * compares its half of a scatter's lanes, not all of them again. */
static void intra_instruction(wr_hbe *e, const cur_access *ca, const wr_access *a, uint32_t lanes)
{
    if (a->op != WR_OP_STORE || !a->size || __builtin_popcount(lanes) < 2)
        return;
    /* strided lanes |stride| >= size apart never overlap */
    if (a->addr_mode == WR_ADDR_STRIDED && a->stride != INT64_MIN &&
        (uint64_t)(a->stride < 0 ? -a->stride : a->stride) >= a->size)
        return;
    if (a->addr_mode == WR_ADDR_VECTOR && !vector_lanes_may_overlap(a, lanes))
        return;
    uint64_t addr[32];
    unsigned lane[32], n = 0;
    for (unsigned l = 0; l < 32; l++)
        if ((lanes >> l) & 1u) {
            addr[n] = wr_access_lane_addr(a, l);
            lane[n] = l;
            n++;
        }
    /* insertion sort by address (stable: lower lane first) */
    for (unsigned i = 1; i < n; i++) {
        uint64_t x = addr[i];
        unsigned y = lane[i], j = i;
        while (j > 0 && addr[j - 1] > x) {
            addr[j] = addr[j - 1];
            lane[j] = lane[j - 1];
            j--;
        }
        addr[j] = x;
        lane[j] = y;
    }
    uint64_t reported_word = UINT64_MAX;
    for (unsigned i = 1; i < n; i++) {
        if (addr[i] >= addr[i - 1] + a->size)
            continue;
        uint64_t word = addr[i] >> WR_WORD_SHIFT;
        if (word == reported_word)
            continue;
        reported_word = word;
        if (wr_shard_of(a->space, a->launch, a->block, addr[i], e->cfg.shards) != e->cfg.shard)
            continue;
        unsigned la = lane[i - 1] < lane[i] ? lane[i - 1] : lane[i];
        unsigned lb = lane[i - 1] < lane[i] ? lane[i] : lane[i - 1];
        for (unsigned k = 0; k < e->nchk; k++)
            report(e, &e->chk[k], ca->w, ca->c, ca->ep | la, ca->c, lb,
                   e->chk[k].c.intra_verdict, a->space, addr[i]);
    }
}

_Static_assert(WR_SHARD_RUN_SHIFT == WR_SHADOW_PAGE_SHIFT && WR_WORD_SHIFT == 2,
               "wr_access_one_run (shadow.h) assumes shard runs of one shadow page");

/* Does the access touch no word of this shard?  (one wr_shard_of for a
 * coalesced access that lies in one shard run) */
static bool access_not_mine(const wr_hbe *e, const wr_access *a, unsigned size)
{
    uint64_t a0;
    return e->cfg.shards > 1 && a->space != WR_SPACE_DSMEM && wr_access_one_run(a, size, &a0) &&
           wr_shard_of(a->space, a->launch, a->block, a0, e->cfg.shards) != e->cfg.shard;
}

/* A whole packed line under a full-mask aligned plain access: check_word()
 * on the lane-0 word's cell stands for all 32, which stay packed.  The
 * lanes' words look alike from their lanes: an earlier access of the same
 * warp is the same lane's (ordered), another warp's is decided by its
 * stamp alone, and no pair of plain accesses asks whether the word is a
 * sync word.  When word 0 reports or needs a read set, its own check was
 * what the word loop would have done: the line is unpacked with word 0's
 * new cell for the caller to go on with lanes 1..31 (returns false). */
static bool packed_line_check(wr_hbe *e, const cur_access *ca, wr_shadow_page *p, uint64_t first)
{
    unsigned line = wr_shadow_line_of(first);
    hb_pcell *rep = wr_shadow_line_rep(e->shadow, p, line);
    hb_pcell now = *rep;
    uint64_t reports = e->reports, words = e->words;
    e->cur_word = first;
    check_word(e, ca, &now, 0, first << WR_WORD_SHIFT);
    if (e->reports == reports && !(now.r & RSET)) {
        if (e->words != words)
            e->words += WR_SHADOW_LINE_WORDS - 1;   /* check_word counted word 0 */
        *rep = now;
        return true;
    }
    wr_shadow_expand_line(e->shadow, p, line);
    *(hb_pcell *)wr_shadow_cells_at(e->shadow, p, first) = now;
    return false;
}

/* The word loop for the coalesced shape (shadow.h, wr_access_word_per_lane):
 * lane l checks word lane0_word + l, and shard and page are decided once
 * per page.  Visits the same (lane, word) pairs in the same order as the
 * general loop, words_by_address. */
/* A half of a packed cell as seen from lane `lane`: its lane replaced by
 * (its lane - lane) mod 32 (0, no access, stays 0); and back. */
static inline uint32_t half_relative(uint32_t h, unsigned lane)
{
    return h ? (h & ~31u) | ((h - lane) & 31u) : 0;
}

static inline uint32_t half_absolute(uint32_t h, unsigned lane)
{
    return h ? (h & ~31u) | ((h + lane) & 31u) : 0;
}

/* Do the checks of a plain access's lanes in `piece` depend on their lanes
 * only through the distances to the lanes of the earlier accesses they
 * meet?  check_cell asks a lane's own warp's ordering through
 * wr_hb_intra_ordered (lanes a, b: a == b, b in group_mask, pair[b][a],
 * lane_ord[b]), other warps' through knows() (no lane), and the word
 * itself only for atomics, acquires and reports.  So without per-lane
 * pairs or acquires, and with every lane of the piece in the lockstep
 * group or none, two words whose cells are alike from their lanes
 * (half_relative) get cells alike from their lanes, unless one reports or
 * needs a read set. */
static inline bool lanes_alike_from_lanes(const wr_hbe *e, const cur_access *ca, uint32_t piece)
{
    const wr_hb_warp *w = ca->w;
    uint32_t g = w->group_mask & piece;
    return !ca->atomic && !e->cur_acquires && !w->pair && !w->lane_ord && (!g || g == piece);
}

/* words_by_lane's memo: the last checked word's cell before and after
 * its check, both as seen from its lane (half_relative); `on` when that
 * check reported nothing and took no read set. */
typedef struct word_memo {
    bool on;
    hb_pcell old, now;
} word_memo;

/* One word of a piece whose lanes are alike from their lanes
 * (lanes_alike_from_lanes): answered from the memo when its cell looks
 * like the memo's from its lane, else checked (and the memo moves). */
static inline __attribute__((always_inline)) void memo_word(wr_hbe *e, const cur_access *ca,
                                                            hb_pcell *cells, uint64_t lane0_word,
                                                            unsigned lane, word_memo *m)
{
    uint64_t word = lane0_word + lane;
    hb_pcell *pc = &cells[word & WR_SHADOW_PAGE_MASK];
    hb_pcell old = *pc;
    e->cur_word = word;
    if ((!old.w && !old.r) || (old.r & RSET)) {   /* a first touch, a read set */
        check_word(e, ca, pc, lane, word << WR_WORD_SHIFT);
        m->on = false;
        return;
    }
    hb_pcell rel = {half_relative(old.w, lane), half_relative(old.r, lane)};
    if (m->on && rel.w == m->old.w && rel.r == m->old.r) {
        *pc = (hb_pcell){half_absolute(m->now.w, lane), half_absolute(m->now.r, lane)};
        return;
    }
    uint64_t reports = e->reports;
    check_word(e, ca, pc, lane, word << WR_WORD_SHIFT);
    m->on = e->reports == reports && !(pc->r & RSET);
    m->old = rel;
    m->now = (hb_pcell){half_relative(pc->w, lane), half_relative(pc->r, lane)};
}

static __attribute__((noinline)) void memo_piece(wr_hbe *e, const cur_access *ca, hb_pcell *cells,
                                                 uint64_t lane0_word, uint32_t piece, word_memo *m)
{
    for (uint32_t x = piece; x; x &= x - 1)
        memo_word(e, ca, cells, lane0_word, (unsigned)__builtin_ctz(x), m);
}

#if WR_SHADOW_AVX2
/* memo_piece four words at a time.  A group of four lanes inside the
 * piece's word range (expanded, in one page) is one load: the words whose
 * cells look like the memo's from their lanes take the memo's answer in
 * one store, the others go through memo_word in lane order (which moves
 * the memo).  A word answered here rather than after an earlier word of
 * its group moved the memo gets the same cell: what lanes_alike_from_lanes
 * says is that a word's answer is a function of its cell as seen from its
 * lane, whichever word's check put it in the memo.  A first touch (0, 0)
 * or a read set (RSET in r) never looks like a memo's cell, which came
 * from neither.  The halves are 32-bit lanes of the vector: a half h seen
 * from lane l is h ? (h & ~31) | ((h - l) & 31) : 0, and back with + l. */
__attribute__((noinline, target("avx2"))) static void
memo_piece_avx2(wr_hbe *e, const cur_access *ca, hb_pcell *cells, uint64_t lane0_word,
                uint32_t piece, word_memo *m)
{
    const __m256i low5 = _mm256_set1_epi32(31), high = _mm256_set1_epi32(~31);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i lanes4 = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);   /* both halves' lane */
    unsigned lo = (unsigned)__builtin_ctz(piece), hi = 31u - (unsigned)__builtin_clz(piece);
    for (unsigned g = lo & ~3u; g <= hi; g += 4) {
        uint32_t m4 = (piece >> g) & 15u;
        if (m->on && g >= lo && g + 3 <= hi) {
            __m256i *p = (__m256i *)&cells[(lane0_word + g) & WR_SHADOW_PAGE_MASK];
            __m256i old = _mm256_loadu_si256(p);
            __m256i lanes = _mm256_add_epi32(lanes4, _mm256_set1_epi32((int)g));
            __m256i rel = _mm256_or_si256(_mm256_and_si256(old, high),
                                          _mm256_and_si256(_mm256_sub_epi32(old, lanes), low5));
            rel = _mm256_andnot_si256(_mm256_cmpeq_epi32(old, zero), rel);
            uint64_t mo = (uint64_t)m->old.w | (uint64_t)m->old.r << 32;
            __m256i eq = _mm256_cmpeq_epi64(rel, _mm256_set1_epi64x((long long)mo));
            uint32_t hits = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(eq)) & m4;
            if (hits) {
                uint64_t mn = (uint64_t)m->now.w | (uint64_t)m->now.r << 32;
                __m256i now = _mm256_set1_epi64x((long long)mn);
                __m256i nw = _mm256_or_si256(_mm256_and_si256(now, high),
                                             _mm256_and_si256(_mm256_add_epi32(now, lanes), low5));
                nw = _mm256_andnot_si256(_mm256_cmpeq_epi32(now, zero), nw);
                wr_shadow_store4(p, old, nw, hits);
                m4 &= ~hits;
            }
        }
        for (uint32_t x = m4; x; x &= x - 1)
            memo_word(e, ca, cells, lane0_word, g + (unsigned)__builtin_ctz(x), m);
    }
}
#endif

static void words_by_lane(wr_hbe *e, const cur_access *ca, const wr_access *a, uint64_t lane0_word)
{
    uint32_t mask = a->active_mask, piece;
    /* a word of a shifted access (a stencil's neighbours, a tile's halo)
     * whose cell looks like the last checked word's from its lane gets the
     * same answer from its lane (word_memo) */
    word_memo memo = {false, {0, 0}, {0, 0}};
    while (wr_next_owned_lane_page(&mask, lane0_word, a, e->cfg.shard, e->cfg.shards, &piece)) {
        uint64_t first = lane0_word + (unsigned)__builtin_ctz(piece);
        uint64_t last = lane0_word + (31u - (unsigned)__builtin_clz(piece));
        wr_shadow_page *p =
            wr_shadow_get(e->shadow, wr_shadow_key(a->space, a->launch, a->block, first));
        if (wr_shadow_page_split(p)) {
            /* split words keep their state in byte cells: no packed line,
             * no memo, each word stepped on its own (step_word) */
            for (uint32_t x = piece; x; x &= x - 1) {
                unsigned lane = (unsigned)__builtin_ctz(x);
                uint64_t word = lane0_word + lane;
                step_word(e, ca, p, word, lane, word << WR_WORD_SHIFT,
                          (word << WR_WORD_SHIFT) + 4u);
            }
            memo.on = false;
            continue;
        }
        if (ca->c->kind != WR_KIND_ATOMIC && wr_shadow_packed_whole_line(p, first, piece)) {
            if (packed_line_check(e, ca, p, first))
                continue;
            piece &= ~1u;   /* word 0 is done */
        }
        wr_shadow_expand_range(e->shadow, p, first, last);
        hb_pcell *cells = wr_shadow_cells_at(e->shadow, p, 0);
        if (!memo_enabled || !(piece & (piece - 1)) || !lanes_alike_from_lanes(e, ca, piece)) {
            for (uint32_t x = piece; x; x &= x - 1) {
                unsigned lane = (unsigned)__builtin_ctz(x);
                uint64_t word = lane0_word + lane;
                e->cur_word = word;
                check_word(e, ca, &cells[word & WR_SHADOW_PAGE_MASK], lane, word << WR_WORD_SHIFT);
            }
            memo.on = false;
            continue;
        }
#if WR_SHADOW_AVX2
        if (e->avx2) {
            memo_piece_avx2(e, ca, cells, lane0_word, piece, &memo);
            continue;
        }
#endif
        memo_piece(e, ca, cells, lane0_word, piece, &memo);
    }
}

/* The word loop for any access shape: lane by lane, each lane's words,
 * shard decided per shard run and page looked up per page. */
static wr_shadow_page *lane_page(void *ctx, uint64_t word)
{
    const lane_page_ctx *c = ctx;
    return wr_shadow_get_scattered(c->e->shadow,
                                   wr_shadow_key(c->a->space, c->a->launch, c->a->block, word));
}

/* lanes_alike: several lanes of one instruction on one word are checked
 * once, for the first of them, only when the instruction ran converged.
 * Then every lane is ordered after every earlier access of its own warp
 * (those before the group's reconvergence through it, the group's own
 * lockstep instructions by lockstep), and what other warps did is known
 * warp-wide: the first lane's answer is every lane's.  After divergence
 * the lanes differ (lane 16 of a uniform load may not know a store of
 * lane 10 that lane 0 knows through lockstep), so each is checked. */

/* A gather / scatter whose lanes touch one word each (wr_shadow_vector_lanes
 * resolved the cells and asked for them).  A word read by several warps
 * points on to its read set: a second miss in a row per lane, so the read
 * sets the cells name are asked for too, as the cells arrive, before any
 * lane is checked. */
static void words_by_vector_lane(wr_hbe *e, const cur_access *ca, const wr_access *a,
                                 const wr_shadow_lanes *vl)
{
    uint32_t sets = 0;
    for (unsigned i = 0; i < vl->n; i++) {
        const hb_pcell *c = vl->l[i].cell;
        uint32_t r = c->r;
        /* the instructions the cells name: a gather's are all over the table */
        __builtin_prefetch(&e->ins[c->w >> 5]);
        sets |= r;
        if (r & RSET)
            __builtin_prefetch(rset_at(e, r & ~RSET), 1);
        else
            __builtin_prefetch(&e->ins[r >> 5]);
    }
    /* A word that many warps read (a real gather's table: 4-12 readers a
     * launch) keeps its reads in a heap array behind the set, a third
     * miss per lane: asked for once the sets have had the time to come
     * (where some lane has a set: a synthetic gather's rarely do) */
    for (unsigned i = 0; (sets & RSET) && i < vl->n; i++) {
        uint32_t r = ((const hb_pcell *)vl->l[i].cell)->r;
        if (r & RSET) {
            const rset *s = rset_at(e, r & ~RSET);
            /* every line of the reads: 12 bytes each, and the check reads
             * the last one first (5 reads at the median end on the second
             * line; asking for the first alone left a quarter of the
             * vc+scoped pass on that load) */
            if (s->heap_log2 && s->n) {
                const char *h = (const char *)s->u.heap;
                const char *end = (const char *)(s->u.heap + s->n) - 1;
                for (; h < end; h += 64)
                    __builtin_prefetch(h);
                __builtin_prefetch(end);
            }
        }
    }
    for (unsigned i = 0; i < vl->n; i++) {
        const wr_shadow_lane *l = &vl->l[i];
        if (l->same_word && ca->w->conv)
            continue;   /* the previous lane's word: checked once (lanes_alike) */
        e->cur_word = l->word;
        check_word(e, ca, l->cell, l->lane, wr_access_lane_addr(a, l->lane));
    }
}

/* Returns the lanes intra_instruction compares: where every lane is on
 * one word of its own, the lanes this shard owns; else every active lane. */
static uint32_t words_by_address(wr_hbe *e, const cur_access *ca, const wr_access *a,
                                 unsigned size)
{
    lane_page_ctx lpc = {e, a};
    wr_shadow_lanes vl;
    if (wr_shadow_vector_lanes(a, size, e->shadow, e->cfg.shard, e->cfg.shards, lane_page, &lpc,
                               &vl)) {
        words_by_vector_lane(e, ca, a, &vl);
        return vl.owned;
    }
    uint64_t last_word = UINT64_MAX, last_lo = 0, last_end = 0;
    uint64_t run = UINT64_MAX, pn = UINT64_MAX;
    bool run_ok = false;
    wr_shadow_page *p = NULL;
    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t addr = wr_access_lane_addr(a, lane);
        uint64_t w0 = addr >> WR_WORD_SHIFT, w1 = (addr + size - 1) >> WR_WORD_SHIFT;
        for (uint64_t word = w0; word <= w1; word++) {
            /* the bytes of the word this lane touches */
            uint64_t lo = word == w0 ? addr : word << WR_WORD_SHIFT;
            uint64_t end = word == w1 ? addr + size : (word << WR_WORD_SHIFT) + 4u;
            /* the previous lane's very cells (the same bytes of one word:
             * other bytes of it are other locations) are checked once */
            if (word == last_word && lo == last_lo && end == last_end && ca->w->conv)
                continue;   /* (lanes_alike) */
            last_word = word;
            last_lo = lo;
            last_end = end;
            if ((word >> WR_SHARD_RUN_SHIFT) != run) {
                run = word >> WR_SHARD_RUN_SHIFT;
                run_ok = e->cfg.shards <= 1 ||
                         wr_shard_of(a->space, a->launch, a->block, word << WR_WORD_SHIFT,
                                     e->cfg.shards) == e->cfg.shard;
            }
            if (!run_ok)
                continue;
            if ((word >> WR_SHADOW_PAGE_SHIFT) != pn) {
                pn = word >> WR_SHADOW_PAGE_SHIFT;
                p = wr_shadow_get(e->shadow, wr_shadow_key(a->space, a->launch, a->block, word));
            }
            step_word(e, ca, p, word, lane, lo, end);
        }
    }
    return a->active_mask;
}

/* The words of access m (a DSMEM access's part: m->block is the words'
 * owner) checked for the current access.  Inlined into both callers: it
 * is the whole per-word cost of an access. */
static inline __attribute__((always_inline)) void access_words(wr_hbe *e, cur_access *ca,
                                                               const wr_access *m, unsigned size)
{
    ca->space = m->space;
    e->cur_space = m->space;
    e->cur_block = m->block;
    uint64_t lane0_word;
    uint32_t lanes = m->active_mask;
    if (wr_access_word_per_lane(m, size, &lane0_word))
        words_by_lane(e, ca, m, lane0_word);
    else
        lanes = words_by_address(e, ca, m, size);
    intra_instruction(e, ca, m, lanes);
}

/* A DSMEM access's words: each owner's shared words, as the owner's own
 * accesses name them (engine.h). */
static __attribute__((noinline)) void dsmem_words(wr_hbe *e, cur_access *ca, const wr_access *a,
                                                  unsigned size)
{
    wr_dsmem_parts parts;
    wr_dsmem_parts_begin(&parts, a);
    while (wr_dsmem_next_part(&parts))
        access_words(e, ca, &parts.part, size);
}

static void do_access(wr_hbe *e, const wr_event *ev)
{
    const wr_access *a = &ev->u.access;
    if (a->space == WR_SPACE_LOCAL || !a->active_mask)
        return;
    wr_hb_warp *w = wr_hb_access_begin(e->hb, a);
    unsigned size = a->size ? a->size : 4;
    cur_access ca;
    uint8_t kind = access_kind(a->op);
    uint8_t weak = !wr_hb_strong(a);
    /* a strong access's scope (a volatile one: system), at which it
     * acquires; 0 for weak ones */
    uint8_t scope = weak ? 0 : wr_hb_strong_scope(a);
    ca.w = w;
    ctx_maybe_collect(e);
    /* the context's fields: interned, and read from here rather than from
     * the record they went into */
    const wr_hb_ctx cur = {w->unit, ev->site, kind, scope, weak, wr_op_writes(a->op), ev->seq};
    /* interned on every shard: the context's seq (the latest access of that
     * instruction context, reported as the first access) must not depend on
     * the shard count */
    ca.ctx = ctx_intern(e, w, &cur);
    if (access_not_mine(e, a, size)) {
        /* none of this shard's words: only the synchronization part remains */
        wr_hb_access_end(e->hb, w, a);
        return;
    }
    memo_reset(e);
    ca.c = &cur;
    ca.ep = (w->c << 6) | ((uint32_t)w->conv << 5);
    ca.writes = wr_access_writes(a);
    ca.atomic = kind == WR_KIND_ATOMIC;
    /* an access that acquires is ordered after its word's releases */
    e->cur_acquires = wr_hb_acquires_at_once(a);
    e->cur_acq_scope = scope;
    e->cur_launch = a->launch;
    if (a->space == WR_SPACE_DSMEM)
        dsmem_words(e, &ca, a, size);
    else
        access_words(e, &ca, a, size);
    wr_hb_access_end(e->hb, w, a);
}

static void copy_range(wr_hbe *e, cur_access *ca, uint64_t base, uint64_t bytes)
{
    if (!bytes)
        return;
    uint64_t w0 = base >> WR_WORD_SHIFT, next = w0, last = (base + bytes - 1) >> WR_WORD_SHIFT;
    uint64_t first, end;
    while (wr_next_owned_global_run(&next, last, e->cfg.shard, e->cfg.shards, &first, &end))
        for (uint64_t word = first; word <= end; word++) {
            wr_shadow_page *p =
                wr_shadow_get(e->shadow, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, word));
            e->cur_space = WR_SPACE_GLOBAL;
            /* the range's end words may be partial (step_word splits them) */
            step_word(e, ca, p, word, 0, word == w0 ? base : word << WR_WORD_SHIFT,
                      word == last ? base + bytes : (word << WR_WORD_SHIFT) + 4u);
        }
}

static void do_copy(wr_hbe *e, const wr_event *ev)
{
    const wr_host_copy *cp = &ev->u.copy;
    wr_hb_warp *w = wr_hb_copy_begin(e->hb, cp);
    memo_reset(e);
    cur_access ca;
    ca.w = w;
    ca.ep = (w->c << 6) | (1u << 5);
    ca.space = WR_SPACE_GLOBAL;
    ca.atomic = false;
    e->cur_acquires = false;
    bool rd = cp->kind == WR_COPY_D2H || cp->kind == WR_COPY_D2D;
    bool wr = cp->kind != WR_COPY_D2H;
    if (rd) {
        ca.ctx = ctx_intern(e, w, &(wr_hb_ctx){w->unit, ev->site, WR_KIND_READ, 0, 0, 0, ev->seq});
        ca.c = &e->ctx[ca.ctx];
        ca.writes = false;
        copy_range(e, &ca, cp->src, cp->bytes);
    }
    if (wr) {
        w->c++;   /* the write part is a later "instruction" of the copy */
        memo_reset(e);
        ca.ep = (w->c << 6) | (1u << 5);
        ca.ctx = ctx_intern(e, w, &(wr_hb_ctx){w->unit, ev->site, WR_KIND_WRITE, 0, 0, 1, ev->seq});
        ca.c = &e->ctx[ca.ctx];
        ca.writes = true;
        copy_range(e, &ca, cp->dst, cp->bytes);
    }
    wr_hb_copy_end(e->hb, w, cp);
}

/* Gives back the read sets of page p's cells (ctx: the wr_hbe), before the
 * page goes. */
static void free_page_sets(wr_shadow_page *p, void *ctx)
{
    wr_hbe *e = ctx;
    for (uint32_t x = p->expanded; x; x &= x - 1) {   /* reps hold no read sets */
        hb_pcell *c = wr_shadow_cells_at(e->shadow, p, (uint64_t)__builtin_ctz(x)
                                                           << WR_SHADOW_LINE_SHIFT);
        for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
            if (c[i].r & RSET) {
                rset_release(e, c[i].r & ~RSET);
                c[i].r = 0;
            }
    }
}

void wr_hbe_event(wr_hbe *e, const wr_event *ev)
{
    switch (ev->kind) {
    case WR_EV_ACCESS:
        do_access(e, ev);
        break;
    case WR_EV_HOST_COPY:
        do_copy(e, ev);
        break;
    case WR_EV_BLOCK_EXIT:
        wr_shadow_drop_block(e->shadow, ev->u.block.launch, ev->u.block.block, free_page_sets, e);
        wr_hb_event(e->hb, ev);
        break;
    case WR_EV_KERNEL_END:
        wr_shadow_drop_launch(e->shadow, ev->u.kernel_end.launch, free_page_sets, e);
        wr_hb_event(e->hb, ev);
        break;
    default:
        wr_hb_event(e->hb, ev);
        break;
    }
}

void *wr_hbe_create_pass(const wr_engine_config *cfg, const wr_pass_member *members, unsigned n)
{
    if (n < 1 || n > WR_HBE_MAX_CHECKERS)
        return NULL;
    wr_hbe *e = xcalloc(1, sizeof *e);
    e->cfg = *cfg;
    for (unsigned i = 0; i < RHEAP_POOLS; i++)
        e->rheap[i].size = sizeof(rset_ent) << (i + RHEAP_FIRST_LOG2);
    if (!e->cfg.shards)
        e->cfg.shards = 1;
    unsigned layers = 1;
    for (unsigned k = 0; k < n; k++) {
        e->chk[k].c = *(const wr_hb_checker *)members[k].param;
        e->chk[k].engine_index = members[k].engine_index;
        if (e->chk[k].c.layers > layers)
            layers = e->chk[k].c.layers;
        uint8_t from = e->chk[k].c.atomic_pairs_free_from;
        if (k == 0 || !from || (e->atomic_pairs_free_from && from > e->atomic_pairs_free_from))
            e->atomic_pairs_free_from = from;
    }
    e->nchk = n;
    e->all = (uint8_t)((1u << n) - 1u);
    e->hb = wr_hb_new(layers, cfg->keep_all_layers);
    memo_reset(e);
    e->shadow = wr_shadow_new(sizeof(hb_pcell), expand_line);
    e->avx2 = wr_shadow_simd();
    e->capins = 1024;
    e->ins = xmalloc((size_t)e->capins * sizeof *e->ins);
    e->ins[0] = (hb_ins){0, 0};
    e->nins = 1;
    e->ins_due = INS_COLLECT_MIN;
    e->capctx = 256;
    e->ctx = xrealloc(NULL, (size_t)e->capctx * sizeof *e->ctx);
    e->ctx_unit = xrealloc(NULL, (size_t)e->capctx * sizeof *e->ctx_unit);
    e->ctx_class = xrealloc(NULL, (size_t)e->capctx);
    e->ctx_class[0] = 0;
    memset(&e->ctx[0], 0, sizeof e->ctx[0]);
    e->ctx_unit[0] = 0;
    e->nctx = 1;
    return e;
}

wr_hbe *wr_hbe_new(const wr_engine_config *cfg, const wr_hb_checker *checker)
{
    wr_pass_member m = {cfg->engine_index, checker};
    return wr_hbe_create_pass(cfg, &m, 1);
}

uint64_t wr_hbe_words(const wr_hbe *e) { return e->words; }

size_t wr_hbe_shadow_pages(const wr_hbe *e)
{
    return e->shadow->count;
}

wr_hb *wr_hbe_hb(wr_hbe *e) { return e->hb; }

void wr_hbe_free(wr_hbe *e)
{
    if (!e)
        return;
    wr_hb_free(e->hb);
    wr_shadow_free(e->shadow);
    free(e->ctx);
    free(e->ctx_unit);
    free(e->ctx_class);
    free(e->collect_to);
    free(e->cslots);
    free(e->ins);
    free(e->ins_to);
    for (uint32_t i = 0; i < e->nrs; i++)
        if (rset_at(e, i)->heap_log2 > RHEAP_POOLED_LOG2)
            free(rset_at(e, i)->u.heap);
    for (unsigned i = 0; i < RHEAP_POOLS; i++)
        wr_pool_release(&e->rheap[i]);
    for (uint32_t i = 0; i < e->nrchunk; i++)
        free(e->rchunk[i]);
    free(e->rchunk);
    free(e->rfree);
    free(e);
}

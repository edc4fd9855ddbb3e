/*
 * lockset: Eraser-style locksets with GPU locks inferred from the idioms of
 * seed 001 (ScoRD).  Semantics and decisions in ENGINES.md, "lockset".
 *
 * Lock inference, per lane:
 *   acquire = a successful atomicCAS on L (cas_success bit) followed by a
 *             fence of the same lane; the hold's scope = min(CAS, fence);
 *   release = a fence, then an atomic exchange (or atomic store, or
 *             volatile store) on a held L
 *             with no plain access of that lane between the fence and the
 *             exchange; release scope = min(fence, exchange).  A release
 *             without such a fence marks L "broken": its protection no
 *             longer counts (for any pair checked afterwards).
 * A hold by a thread of block b is the lock "L@b"; one of cluster scope or
 * wider also "L@c" for b's cluster c, where the launch's clusters hold
 * several blocks (else L@b says as much); one of device/system scope also
 * "L@dev".  So a block-scoped lock protects only accesses from its block,
 * a cluster-scoped one those from its cluster.  An atomic access also
 * holds the implicit lock "ATOM@scope" for itself, in the same way:
 * atomic vs atomic at a scope that holds both never conflicts, atomic vs
 * plain does.
 *
 * Per-word state (8-byte cell: the accessor and an interned context, below):
 * VIRGIN, EXCLUSIVE (one thread), SHARED
 * (read by several, no write), SHARED_MOD; the candidate set C(v) is
 * intersected with the accessor's locks on every access; a warning is issued
 * (once per word) when the word is SHARED_MOD and C(v) holds no valid lock.
 * A block barrier resets words touched by that block only; a cluster or
 * grid barrier also resets, at another block's access, a word only one
 * block touched before it arrived (block_ordered); a launch boundary
 * that orders the previous accesses resets everything (epochs.h).  Once a
 * block has a split barrier (bar.arrive, a cluster or grid arrive or
 * wait), its warps are told apart: lk_split.  Lockset
 * does not track happens-before, so every warning is potential = 1.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access_ring.h"
#include "barriers.h"
#include "blockstate.h"
#include "engine.h"
#include "epochs.h"
#include "shadow.h"
#include "launch_geo.h"
#include "xalloc.h"

enum { ST_VIRGIN = 0, ST_EXCL = 1, ST_SHARED = 2, ST_SMOD = 3 };

#define BLOCK_BITS 20
#define HOST_BLOCK ((1u << BLOCK_BITS) - 1u)
#define DEV_FIELD 0x1fffffu     /* block field of a device-scope lock entry */
/* field of a cluster-scope lock entry: the flag and the block's cluster
 * folded below DEV_FIELD; 0 (a block field) where there is none */
#define CLUSTER_FLAG 0x100000u
#define NO_CLUSTER 0u
#define ATOM_WORD 0ull           /* lock number of the implicit atomic lock */

/* A word's state as touch() reads and writes it. */
typedef struct fcell {
    uint32_t ls;     /* interned candidate lockset C(v) */
    uint32_t site;   /* site of the last access */
    uint32_t who;    /* lane 0..4 | warp 5..9 | block 10..29 | state 30..31 */
    uint32_t meta;   /* tag 0..7 | bar 8..19 | multi 20 | written 21 | kind 22..23 |
                        reported 24 | live 25 */
} fcell;

/* The shadow cell: who as above, and (ls, site, meta) interned as one
 * context id (ctxs below; 0: virgin, meta 0).  A word's context is
 * shared by every word whose last access was the same instruction in the
 * same epoch and barrier interval with the same candidate set and flags,
 * so the table stays small (sites x locksets x intervals) while the cell
 * halves (16 to 8 bytes).  Equal ids mean equal (ls, site, meta): the
 * cell compares as the 16-byte one did, and a report reads the same site.
 * The table is never pruned: it holds every context made since the
 * engine started (bounded by the 8-bit tag and 12-bit stamp a meta
 * keeps; about 20 bytes each with its hash slot). */
typedef struct cell {
    uint32_t ctx;
    uint32_t who;
} cell;

#define M_TAG(m) ((m) & 0xffu)
#define M_BAR(m) (((m) >> 8) & 0xfffu)
#define M_MULTI (1u << 20)
#define M_WRITTEN (1u << 21)
#define M_KIND(m) (((m) >> 22) & 3u)
#define M_REPORTED (1u << 24)
#define M_LIVE (1u << 25)
#define M_LOCKWORD (1u << 26)   /* a lock word (target of a CAS): not data */

/* ---- interned locksets ---- */

typedef struct lsets {
    uint64_t *ent;      /* all entries, sets stored contiguously */
    uint32_t nent, capent;
    uint32_t *off, *len; /* per set id */
    uint32_t nsets, capsets;
    uint32_t *slot;     /* hash of sets -> id + 1 */
    uint32_t capslot;
    uint64_t *icache_key; /* (a, b) -> intersection id, direct-mapped */
    uint32_t *icache_val;
    uint32_t last_a, last_b, last_r;   /* the last intersection (a, b > 0, a != b) */
} lsets;

#define ICACHE 4096

static uint64_t set_hash(const uint64_t *e, uint32_t n)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= e[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static uint32_t ls_intern(lsets *L, const uint64_t *e, uint32_t n);

static void ls_init(lsets *L)
{
    memset(L, 0, sizeof *L);
    L->capslot = 256;
    L->slot = xcalloc(L->capslot, sizeof *L->slot);
    L->icache_key = xcalloc(ICACHE, sizeof *L->icache_key);
    L->icache_val = xcalloc(ICACHE, sizeof *L->icache_val);
    memset(L->icache_key, 0xff, ICACHE * sizeof *L->icache_key);
    ls_intern(L, NULL, 0); /* id 0 = the empty set */
}

static void ls_free(lsets *L)
{
    free(L->ent);
    free(L->off);
    free(L->len);
    free(L->slot);
    free(L->icache_key);
    free(L->icache_val);
}

static uint32_t ls_intern(lsets *L, const uint64_t *e, uint32_t n)
{
    uint64_t h = set_hash(e, n);
    uint32_t i = (uint32_t)h & (L->capslot - 1);
    while (L->slot[i]) {
        uint32_t id = L->slot[i] - 1;
        if (L->len[id] == n && (!n || !memcmp(L->ent + L->off[id], e, n * sizeof *e)))
            return id;
        i = (i + 1) & (L->capslot - 1);
    }
    if (L->nsets == L->capsets) {
        L->capsets = L->capsets ? L->capsets * 2 : 64;
        L->off = xrealloc(L->off, L->capsets * sizeof *L->off);
        L->len = xrealloc(L->len, L->capsets * sizeof *L->len);
    }
    if (L->nent + n > L->capent) {
        while (L->nent + n > L->capent)
            L->capent = L->capent ? L->capent * 2 : 256;
        L->ent = xrealloc(L->ent, L->capent * sizeof *L->ent);
    }
    uint32_t id = L->nsets++;
    L->off[id] = L->nent;
    L->len[id] = n;
    if (n)
        memcpy(L->ent + L->nent, e, n * sizeof *e);
    L->nent += n;
    L->slot[i] = id + 1;
    if (L->nsets * 2 > L->capslot) {
        uint32_t ncap = L->capslot * 2;
        uint32_t *ns = xcalloc(ncap, sizeof *ns);
        for (uint32_t s = 0; s < L->nsets; s++) {
            uint32_t j = (uint32_t)set_hash(L->ent + L->off[s], L->len[s]) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = s + 1;
        }
        free(L->slot);
        L->slot = ns;
        L->capslot = ncap;
    }
    return id;
}

/* The intersection through the direct-mapped cache, or computed. */
static __attribute__((noinline)) uint32_t ls_intersect_slow(lsets *L, uint32_t a, uint32_t b)
{
    uint64_t key = a < b ? ((uint64_t)a << 32 | b) : ((uint64_t)b << 32 | a);
    uint32_t slot = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 52) & (ICACHE - 1);
    if (L->icache_key[slot] == key)
        return L->icache_val[slot];
    uint64_t tmp[64];
    uint32_t n = 0;
    const uint64_t *x = L->ent + L->off[a], *y = L->ent + L->off[b];
    uint32_t i = 0, j = 0, nx = L->len[a], ny = L->len[b];
    while (i < nx && j < ny && n < 64) {
        if (x[i] == y[j]) {
            tmp[n++] = x[i];
            i++;
            j++;
        } else if (x[i] < y[j]) {
            i++;
        } else {
            j++;
        }
    }
    uint32_t r = ls_intern(L, tmp, n);
    L->icache_key[slot] = key;
    L->icache_val[slot] = r;
    return r;
}

/* Inline, with the last pair asked remembered: every lane of a histogram's
 * atomics intersects its block's atomic set with a bin's set (the same
 * two sets, lane after lane), and the word loops ask once per lane. */
static inline uint32_t ls_intersect(lsets *L, uint32_t a, uint32_t b)
{
    if (a == b)
        return a;
    if (!a || !b)
        return 0;
    if (a == L->last_a && b == L->last_b)
        return L->last_r;
    uint32_t r = ls_intersect_slow(L, a, b);
    L->last_a = a;
    L->last_b = b;
    L->last_r = r;
    return r;
}

/* ---- interned contexts (ls, site, meta) ---- */

typedef struct cx_ent {
    uint32_t ls, site, meta;
} cx_ent;

typedef struct ctxs {
    cx_ent *ent;        /* [id]; ent[0] = {0, 0, 0}, the virgin cell's */
    uint32_t n, cap;
    uint32_t *slot;     /* open addressing: id, 0 = empty */
    uint32_t capslot;
    cx_ent last;        /* the last context asked, and its id */
    uint32_t last_id;
} ctxs;

static inline uint32_t cx_hash(uint32_t ls, uint32_t site, uint32_t meta)
{
    uint64_t h = ((uint64_t)ls << 32 | site) * 0x9E3779B97F4A7C15ull;
    h ^= (h >> 29) ^ ((uint64_t)meta * 0xC2B2AE3D27D4EB4Full);
    return (uint32_t)(h >> 32);
}

static void cx_init(ctxs *X)
{
    memset(X, 0, sizeof *X);
    X->cap = 256;
    X->ent = xcalloc(X->cap, sizeof *X->ent);
    X->n = 1;
    X->capslot = 512;
    X->slot = xcalloc(X->capslot, sizeof *X->slot);
}

static void cx_free(ctxs *X)
{
    free(X->ent);
    free(X->slot);
}

static __attribute__((noinline)) uint32_t cx_intern_slow(ctxs *X, uint32_t ls, uint32_t site,
                                                         uint32_t meta)
{
    uint32_t i = cx_hash(ls, site, meta) & (X->capslot - 1);
    while (X->slot[i]) {
        const cx_ent *e = &X->ent[X->slot[i]];
        if (e->ls == ls && e->site == site && e->meta == meta)
            break;
        i = (i + 1) & (X->capslot - 1);
    }
    uint32_t id = X->slot[i];
    if (!id) {
        if (X->n == X->cap) {
            X->cap *= 2;
            X->ent = xrealloc(X->ent, X->cap * sizeof *X->ent);
        }
        id = X->n++;
        X->ent[id] = (cx_ent){ls, site, meta};
        X->slot[i] = id;
        if (X->n * 2 > X->capslot) {
            uint32_t ncap = X->capslot * 2;
            uint32_t *ns = xcalloc(ncap, sizeof *ns);
            for (uint32_t k = 1; k < X->n; k++) {
                const cx_ent *e = &X->ent[k];
                uint32_t j = cx_hash(e->ls, e->site, e->meta) & (ncap - 1);
                while (ns[j])
                    j = (j + 1) & (ncap - 1);
                ns[j] = k;
            }
            free(X->slot);
            X->slot = ns;
            X->capslot = ncap;
        }
    }
    X->last = (cx_ent){ls, site, meta};
    X->last_id = id;
    return id;
}

/* The id of (ls, site, meta); meta != 0 (every stored cell is live). */
static inline uint32_t cx_intern(ctxs *X, uint32_t ls, uint32_t site, uint32_t meta)
{
    if (X->last.ls == ls && X->last.site == site && X->last.meta == meta && X->last_id)
        return X->last_id;
    return cx_intern_slow(X, ls, site, meta);
}

/* ---- lock records (per lock word) ---- */

/* A lock is named by its number (1, 2, ... in order of first acquisition)
 * in lockset entries, beside a 21-bit field: the word itself does not fit
 * there (a device address of 47 bits, a word of 45). */
typedef struct lockrec {
    uint8_t broken;     /* some release had no fence */
    uint8_t min_rel;    /* narrowest release scope seen (WR_SCOPE_*), 0xff none yet */
} lockrec;

typedef struct lock_slot {   /* lock word -> number */
    uint64_t word;      /* lock address >> 2, bit 63 set; 0 = empty slot */
    uint32_t num;
} lock_slot;

/* ---- per block / warp ---- */

#define MAX_HOLDS 16

typedef struct hold {
    uint64_t word;
    uint32_t num;       /* its lockrec's number: what lockset entries name */
    uint64_t acq_seq;   /* seq of the fence that completed the acquire (0: pending) */
    uint8_t lane;
    uint8_t scope;      /* min(CAS, fence) once held; CAS scope while pending */
} hold;

/* Per-lane state a warp needs only once it takes a lock or fences: most
 * warps of most kernels never do, and grids of small blocks keep a million
 * warps, so these are allocated on first use. */
typedef struct warp_locks {     /* from the warp's first successful CAS */
    hold holds[MAX_HOLDS];
    uint32_t lsid[32];          /* cached lockset of each lane (plain accesses) */
} warp_locks;

typedef struct warp_fences {    /* from the warp's first fence */
    uint64_t last_fence_seq[32];
    /* seq + 1 of each lane's last plain access since the warp's first
     * fence: an earlier one precedes every fence recorded here, which is
     * all a release asks (fence after the last data access) */
    uint64_t last_data_seq[32];
    uint8_t last_fence_scope[32];
} warp_fences;

typedef struct warp_st {
    uint32_t nholds;            /* > 0 only with locks */
    uint32_t lsid_valid;        /* lanes whose locks->lsid is valid */
    uint64_t data_seq_all;      /* seq + 1 of the warp's last full-mask plain access */
    warp_locks *locks;          /* NULL until the first acquisition */
    warp_fences *fences;        /* NULL until the first fence */
    wr_access_ring ring;        /* recent accesses: the first side's trace position */
} warp_st;

/* A block's split-barrier state (format 1.3), from its first barrier
 * event that is not a SYNC (split_begin); until then every warp of it
 * waits at every barrier it arrives at, and a completed phase orders all
 * of the block's earlier accesses before all of its later ones.  After:
 *   - an access is stamped gen + pend: pend counts the phases the warp
 *     arrived at and went on from (ARRIVE, ARRIVE_RELAXED) that have not
 *     completed, each of which must complete, and then the warp's next
 *     arrival's, before the access can be ordered before anything;
 *   - a warp sees the words stamped before its view: gen just after the
 *     completion of the last phase it waited for (SYNC, WAIT), so what
 *     the block did after that is not ordered before a warp that has
 *     only arrived since (the producer's overwrite without waiting for
 *     the consumer);
 *   - a word resets when its stamp is before the current warp's view,
 *     compared within half the 12-bit field (ENGINES.md, lockset). */
typedef struct lk_split {
    uint32_t view[32];
    uint8_t pend[32];
    /* the smallest stamp an ARRIVE brought to the block's share of the
     * cluster or grid barrier under way; UINT32_MAX: none */
    uint32_t share_lo;
} lk_split;

typedef struct block_st {
    wr_block_head head;         /* epoch, block, warp_st by warp */
    uint32_t gen;               /* completed barriers */
    wr_block_barriers *bars;    /* NULL while no phase has an arrival */
    /* NULL until a cluster or grid barrier; its stamp: the smaller of gen
     * before the barrier completed and the stamps its ARRIVEs brought
     * (barriers.h) */
    wr_cross_bars *cross;
    lk_split *split;            /* NULL until a split barrier (above) */
} block_st;

typedef struct lk {
    wr_engine_config cfg;
    wr_shadow_map *map;
    wr_epochs *ep;
    lsets ls;
    ctxs cx;                /* the cells' contexts */
    uint32_t empty_ls;      /* id of the empty set */
    bool avx2;              /* uniform_piece_avx2 for a piece of one lockset */
    uint64_t atom_key;      /* memo of an atomic's set without locks: key + 1 */
    uint32_t atom_id;
    wr_launch_geos geo;     /* the cluster of a block: cluster-scoped locks, atomics */
    /* What blocks and warps own comes from these pools, so that a purge
     * dropping every block releases them whole; the host's ring outlives
     * the blocks and has a pool of its own. */
    wr_pool bar_pool, locks_pool, fences_pool, cross_pool, split_pool;
    wr_ring_pool ring_pool, host_ring_pool;
    lock_slot *lock_slots;  /* open addressing, lcap of them */
    uint32_t lcap, lcount;
    lockrec *locks;         /* [num], num 1..lcount */
    uint32_t lrec_cap;
    wr_blockstate bs;       /* (epoch, block) -> block_st, warp -> warp_st */
    uint64_t live;          /* cells with meta != 0: the words tracked, a split
                               word's live bytes in place of its word */
    wr_access_ring host_ring;   /* host copies, as the warp rings */
} lk;

/* A page's user2 (shadow.h, wr_shadow_live_add): its flag says it holds
 * a lock word (a sweep then never clears it whole), the bits above count
 * its live cells (meta != 0), so that a page a sweep drops whole is
 * zeroed without being read to count them. */
#define LK_PAGE_LOCKWORD WR_SHADOW_PAGE_FLAG

static inline uint32_t cell_meta(const lk *s, cell c)
{
    return s->cx.ent[c.ctx].meta;
}

static inline fcell unpack(const lk *s, cell c)
{
    const cx_ent *e = &s->cx.ent[c.ctx];
    return (fcell){.ls = e->ls, .site = e->site, .who = c.who, .meta = e->meta};
}

static inline cell pack(lk *s, const fcell *f)
{
    return (cell){.ctx = cx_intern(&s->cx, f->ls, f->site, f->meta), .who = f->who};
}

/* The number of the lock at `word`, made at its first acquisition. */
static uint32_t lock_num(lk *s, uint64_t word)
{
    word |= 1ull << 63;  /* never 0 */
    if (s->lcap) {
        uint32_t i = (uint32_t)((word * 0x9E3779B97F4A7C15ull) >> 32) & (s->lcap - 1);
        while (s->lock_slots[i].word) {
            if (s->lock_slots[i].word == word)
                return s->lock_slots[i].num;
            i = (i + 1) & (s->lcap - 1);
        }
    }
    if ((s->lcount + 1) * 2 > s->lcap) {
        uint32_t ncap = s->lcap ? s->lcap * 2 : 64;
        lock_slot *nl = xcalloc(ncap, sizeof *nl);
        for (uint32_t i = 0; i < s->lcap; i++) {
            if (!s->lock_slots[i].word)
                continue;
            uint32_t j = (uint32_t)((s->lock_slots[i].word * 0x9E3779B97F4A7C15ull) >> 32) &
                         (ncap - 1);
            while (nl[j].word)
                j = (j + 1) & (ncap - 1);
            nl[j] = s->lock_slots[i];
        }
        free(s->lock_slots);
        s->lock_slots = nl;
        s->lcap = ncap;
    }
    uint32_t i = (uint32_t)((word * 0x9E3779B97F4A7C15ull) >> 32) & (s->lcap - 1);
    while (s->lock_slots[i].word)
        i = (i + 1) & (s->lcap - 1);
    uint32_t num = ++s->lcount;
    s->lock_slots[i] = (lock_slot){.word = word, .num = num};
    if (num >= s->lrec_cap) {
        s->lrec_cap = s->lrec_cap ? 2 * s->lrec_cap : 64;
        s->locks = xrealloc(s->locks, s->lrec_cap * sizeof *s->locks);
    }
    s->locks[num] = (lockrec){.broken = 0, .min_rel = 0xff};
    return num;
}

static void drop_warp(void *obj, void *ctx)
{
    lk *s = ctx;
    warp_st *w = obj;
    wr_pool_put(&s->locks_pool, w->locks);
    wr_pool_put(&s->fences_pool, w->fences);
    wr_ring_release(&w->ring, &s->ring_pool);
}

static void drop_block(wr_block_head *head, void *ctx)
{
    lk *s = ctx;
    wr_pool_put(&s->bar_pool, ((block_st *)head)->bars);
    wr_pool_put(&s->cross_pool, ((block_st *)head)->cross);
    wr_pool_put(&s->split_pool, ((block_st *)head)->split);
    wr_blockstate_drop(&s->bs, head, drop_warp, s);
}

/* Frees what every block and warp owns at once: these pools hold all of it. */
static void release_owned_pools(lk *s)
{
    wr_pool_release(&s->bar_pool);
    wr_pool_release(&s->cross_pool);
    wr_pool_release(&s->split_pool);
    wr_pool_release(&s->locks_pool);
    wr_pool_release(&s->fences_pool);
    wr_ring_pool_release(&s->ring_pool);
}

/* Drops the per-block state the epochs' rule lets go (blockstate.h).
 * Checked at every new epoch, so that a kernel launched again and again
 * keeps about one launch's warps; when none is kept, the pools go whole. */
static void purge_blocks(lk *s, uint32_t newest)
{
    if (wr_blockstate_purge(&s->bs, s->ep, newest, true, drop_block, s))
        release_owned_pools(s);
}

static inline void locate(lk *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t *epoch,
                          block_st **bs, warp_st **ws)
{
    void *b, *w;
    wr_blockstate_locate(&s->bs, s->ep, launch, block, warp, epoch, &b, &w);
    *bs = b;
    *ws = w;
}

/* A completed phase starts a new barrier interval of the block (gen).
 * Split blocks: its waiters see everything stamped before now, unless the
 * phase had an ARRIVE_RELAXED (a cluster barrier's): that one orders
 * nothing in the block, whatever its other arrivals did (a potential
 * warning rather than silence), and its waiters' views stay; its arrivers'
 * pending phases are one fewer (gen + pend, their stamp, stays: the
 * interval counts for them once a later phase they wait for completes,
 * as for everyone).  The share of a cluster or grid barrier goes into the
 * block's history with the smaller of gen before it and the stamps its
 * ARRIVEs brought (an arriver's later accesses are stamped above both); a
 * late WAIT takes done_stamp, the view after this completion. */
static void barrier_done(void *ctx, unsigned slot, const wr_bar_phase *ph, bool relaxed)
{
    block_st *b = ctx;
    lk_split *sp = b->split;
    uint32_t before = b->gen++;
    if (slot == WR_BAR_SHARE) {
        uint32_t stamp = sp && sp->share_lo < before ? sp->share_lo : before;
        wr_cross_done(b->cross, ph, relaxed, stamp);
        if (b->cross)   /* a relaxed phase: its late WAITs learn nothing, as its waiters */
            b->cross->done_stamp = relaxed ? 0 : b->gen;
        if (sp)
            sp->share_lo = UINT32_MAX;
    }
    if (!sp)
        return;
    for (uint32_t x = ph->arrivers; x; x &= x - 1)
        if (sp->pend[__builtin_ctz(x)])
            sp->pend[__builtin_ctz(x)]--;
    if (!relaxed)
        for (uint32_t x = ph->waiters; x; x &= x - 1)
            sp->view[__builtin_ctz(x)] = b->gen;
}

/* The block's first split barrier event: every warp has waited for all
 * that completed so far (the rule until now), and none went on from an
 * arrival. */
static void split_begin(lk *s, block_st *b)
{
    lk_split *sp = b->split = wr_pool_get(&s->split_pool);
    for (unsigned i = 0; i < 32; i++)
        sp->view[i] = b->gen;
    sp->share_lo = UINT32_MAX;
}

/* A barrier event (barriers.h: which phases it joins and completes).  A
 * cluster or grid barrier is a phase of the block's share, noted in its
 * history.  The warp acts again first: what it waited for completed,
 * under its own scope. */
static void on_barrier(lk *s, const wr_barrier *br)
{
    uint32_t e;
    block_st *b;
    warp_st *w;
    locate(s, br->launch, br->block, br->warp, &e, &b, &w);
    uint32_t wi = br->warp & 31u;
    uint32_t lanes = wr_barrier_lanes(br->active_mask);
    wr_barrier_wake_lazy(&b->bars, &s->bar_pool, wi, lanes, barrier_done, b);
    /* an mbarrier synchronizes as release/acquire through an object, which
     * this engine does not model (ENGINES.md): the warp acted, no more */
    if (br->scope == WR_BAR_MBARRIER)
        return;
    if (br->mode != WR_BARMODE_SYNC && !b->split)
        split_begin(s, b);
    lk_split *sp = b->split;
    unsigned slot;
    uint32_t expected;
    if (br->scope == WR_BAR_BLOCK) {
        if (br->mode == WR_BARMODE_WAIT)
            return;   /* not a block barrier's (the format refuses it) */
        slot = br->barrier_id & 15u;
        expected = br->expected;
    } else {
        if (!b->cross)
            b->cross = wr_pool_get(&s->cross_pool);
        slot = WR_BAR_SHARE;
        if (br->mode == WR_BARMODE_WAIT) {
            bool arrived = wr_barrier_is_arriver(b->bars, slot, wi);
            if (wr_barrier_wait_lazy(&b->bars, &s->bar_pool, slot, wi, lanes, barrier_done, b)) {
                if (arrived && sp->pend[wi])
                    sp->pend[wi]--;   /* it waits now: barrier_done gives it its view */
            } else if (wr_cross_wait_late(b->cross, wi) && b->cross->done_stamp > sp->view[wi]) {
                sp->view[wi] = b->cross->done_stamp;
            }
            return;
        }
        expected = wr_cross_arrive(
            b->cross, br, wr_launch_geo_threads(wr_launch_geos_get(&s->geo, br->launch)));
        if (sp && br->mode == WR_BARMODE_ARRIVE && b->gen + sp->pend[wi] < sp->share_lo)
            sp->share_lo = b->gen + sp->pend[wi];
    }
    if (sp) {
        /* pend before the arrival: it may complete the phase at once */
        bool arrived = wr_barrier_is_arriver(b->bars, slot, wi);
        if (br->mode != WR_BARMODE_SYNC && !arrived)
            sp->pend[wi]++;
        else if (br->mode == WR_BARMODE_SYNC && arrived && sp->pend[wi])
            sp->pend[wi]--;
    }
    wr_barrier_arrive_lazy(&b->bars, &s->bar_pool, slot, br->mode, wi, lanes,
                           (uint32_t)__builtin_popcount(br->active_mask), expected, 0,
                           barrier_done, b);
}

/* ---- lock inference ---- */

static uint8_t norm_scope(uint8_t scope)
{
    return scope == WR_SCOPE_NONE ? WR_SCOPE_DEVICE : scope;
}

static void on_fence(lk *s, const wr_event *ev)
{
    const wr_fence *fe = &ev->u.fence;
    uint32_t e;
    block_st *b;
    warp_st *w;
    locate(s, fe->launch, fe->block, fe->warp, &e, &b, &w);
    uint8_t fs = norm_scope(fe->scope);
    if (!w->fences)
        w->fences = wr_pool_get(&s->fences_pool);
    for (uint32_t x = fe->active_mask; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        w->fences->last_fence_seq[lane] = ev->seq + 1;
        w->fences->last_fence_scope[lane] = fs;
    }
    for (uint32_t i = 0; i < w->nholds; i++) {
        hold *h = &w->locks->holds[i];
        if (!h->acq_seq && ((fe->active_mask >> h->lane) & 1u)) {
            h->acq_seq = ev->seq + 1;
            if (fs < h->scope)
                h->scope = fs;
            w->lsid_valid &= ~(1u << h->lane);
        }
    }
}

static inline __attribute__((always_inline)) wr_shadow_page *
page_for(lk *s, uint8_t space, uint32_t launch, uint32_t block, uint64_t word, uint32_t epoch,
         bool scattered);

static cell *byte_cells(lk *s, wr_shadow_page *p, uint64_t word, uint32_t epoch,
                        wr_shadow_page **bpp);

/* Cell c of page p (a word's or a byte's) names a lock from now on. */
static void mark_lock_cell(lk *s, wr_shadow_page *p, cell *c, uint32_t epoch)
{
    if (!(cell_meta(s, *c) & M_LOCKWORD)) {
        p->user2 |= LK_PAGE_LOCKWORD;   /* sweep: not cleared whole */
        wr_shadow_live_add(p, &s->live, !c->ctx);
        fcell f = {.meta = M_LIVE | M_LOCKWORD | (epoch & 0xffu)};
        *c = pack(s, &f);
    }
}

/* Marks the words a CAS targets as lock words (this shard's only; a DSMEM
 * CAS's in each owner's shared memory, engine.h).  A split word's bytes
 * that the CAS covers become lock bytes; a word not split stays whole, a
 * lock word for every byte, whatever the CAS's size. */
static void mark_lock_words(lk *s, const wr_access *a, uint32_t epoch)
{
    if (a->space == WR_SPACE_DSMEM) {
        wr_dsmem_parts parts;
        wr_dsmem_parts_begin(&parts, a);
        while (wr_dsmem_next_part(&parts))
            mark_lock_words(s, &parts.part, epoch);
        return;
    }
    unsigned size = a->size ? a->size : 4;
    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        uint64_t ad = wr_access_lane_addr(a, (unsigned)__builtin_ctz(x));
        for (uint64_t wd = ad >> WR_WORD_SHIFT; wd <= (ad + size - 1) >> WR_WORD_SHIFT; wd++) {
            if (wr_shard_of(a->space, a->launch, a->block, wd << WR_WORD_SHIFT, s->cfg.shards) !=
                s->cfg.shard)
                continue;
            wr_shadow_page *p = page_for(s, a->space, a->launch, a->block, wd, epoch, false);
            if (!wr_shadow_word_split(p, wd)) {
                mark_lock_cell(s, p, (cell *)wr_shadow_cell(s->map, p, wd), epoch);
                continue;
            }
            wr_shadow_page *bp;
            cell *b = byte_cells(s, p, wd, epoch, &bp);
            uint64_t w0 = wd << WR_WORD_SHIFT;
            for (uint64_t k = ad > w0 ? ad - w0 : 0; k < 4 && w0 + k < ad + size; k++)
                mark_lock_cell(s, bp, &b[k], epoch);
        }
    }
}

/* A volatile store (strong, plain) to a held lock word releases it as an
 * atomic store does: `__threadfence(); *(volatile int *)&lock = 0;`. */
static bool strong_plain_store(const wr_access *a)
{
    return a->op == WR_OP_STORE && a->order != WR_ORDER_WEAK;
}

/* The lock idioms' part of an atomic access, or of a strong plain store
 * while the warp holds a lock; returns the lanes that released a lock. */
static uint32_t lock_events(lk *s, warp_st *w, const wr_event *ev, uint32_t epoch)
{
    const wr_access *a = &ev->u.access;
    /* a strong plain store's scope defaults to system (volatile) */
    uint8_t as = wr_op_is_atomic(a->op) || a->scope ? norm_scope(a->scope) : WR_SCOPE_SYSTEM;
    if (a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS) {
        mark_lock_words(s, a, epoch);
        if ((a->active_mask & a->cas_success) && !w->locks)
            w->locks = wr_pool_get(&s->locks_pool);
        for (uint32_t x = a->active_mask & a->cas_success; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            uint64_t word = wr_access_lane_addr(a, lane) >> WR_WORD_SHIFT;
            bool dup = false;
            for (uint32_t i = 0; i < w->nholds; i++)
                if (w->locks->holds[i].lane == lane && w->locks->holds[i].word == word)
                    dup = true;
            if (dup || w->nholds == MAX_HOLDS)
                continue;
            w->locks->holds[w->nholds++] = (hold){.word = word,
                                                  .num = lock_num(s, word),
                                                  .acq_seq = 0, .lane = (uint8_t)lane,
                                                  .scope = as};
        }
        return 0;
    }
    bool release_op = (a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_EXCH) ||
                      a->op == WR_OP_ATOMIC_STORE || strong_plain_store(a);
    if (!release_op || !w->nholds)
        return 0;
    uint32_t released = 0;
    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t word = wr_access_lane_addr(a, lane) >> WR_WORD_SHIFT;
        for (uint32_t i = 0; i < w->nholds; i++) {
            hold *h = &w->locks->holds[i];
            if (h->lane != lane || h->word != word)
                continue;
            lockrec *r = &s->locks[h->num];
            const warp_fences *wf = w->fences;
            uint64_t f = wf ? wf->last_fence_seq[lane] : 0;
            uint64_t d = wf && wf->last_data_seq[lane] > w->data_seq_all ? wf->last_data_seq[lane]
                                                                         : w->data_seq_all;
            bool fenced = h->acq_seq && f > h->acq_seq && f > d;
            if (!h->acq_seq)
                fenced = f > d && f > 0;
            if (!fenced) {
                r->broken = 1;
            } else {
                uint8_t rs = wf->last_fence_scope[lane] < as ? wf->last_fence_scope[lane] : as;
                if (rs < r->min_rel)
                    r->min_rel = rs;
            }
            w->locks->holds[i] = w->locks->holds[--w->nholds];
            w->lsid_valid &= ~(1u << lane);
            released |= 1u << lane;
            break;
        }
    }
    return released;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static inline uint64_t entry(uint64_t word, uint32_t field)
{
    return (word << 21) | (field & DEV_FIELD);
}

static inline uint32_t fold_block(uint32_t block)
{
    return block < HOST_BLOCK ? block : block % HOST_BLOCK;
}

/* The lockset of `lane` for this access (plus the implicit atomic lock),
 * computed and interned; plain accesses remember it per lane until the
 * warp's holds change. */
/* The memo key of an atomic's set without locks (block field bf, cluster
 * field cf, the atomic's scope): + 1, never 0. */
static inline uint64_t atom_key_of(uint32_t bf, uint32_t cf, uint8_t ascope)
{
    unsigned wide = ascope >= WR_SCOPE_DEVICE ? 2u : ascope >= WR_SCOPE_CLUSTER ? 1u : 0u;
    return ((uint64_t)cf << 22 | (uint64_t)bf << 2 | wide) + 1;
}

static __attribute__((noinline)) uint32_t lane_lockset_slow(lk *s, warp_st *w, uint32_t bf,
                                                           uint32_t cf, unsigned lane, bool atomic,
                                                           uint8_t ascope)
{
    /* a plain access here comes from a warp that holds a lock (without,
     * lane_lockset took the empty set); an atomic of a warp without locks:
     * the same set for every lane of the access, and for the block's next
     * atomic */
    uint64_t atom_key = atom_key_of(bf, cf, ascope);
    if (atomic && !w->nholds && s->atom_key == atom_key)
        return s->atom_id;
    uint64_t e[3 * MAX_HOLDS + 3] = {0};   /* = {0}: GCC 12 cannot see that only e[0..n) is read */
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nholds; i++) {
        const hold *h = &w->locks->holds[i];
        if (h->lane != lane || !h->acq_seq)
            continue;
        e[n++] = entry(h->num, bf);
        if (cf != NO_CLUSTER && h->scope >= WR_SCOPE_CLUSTER)
            e[n++] = entry(h->num, cf);
        if (h->scope >= WR_SCOPE_DEVICE)
            e[n++] = entry(h->num, DEV_FIELD);
    }
    if (atomic) {
        e[n++] = entry(ATOM_WORD, bf);
        if (cf != NO_CLUSTER && ascope >= WR_SCOPE_CLUSTER)
            e[n++] = entry(ATOM_WORD, cf);
        if (ascope >= WR_SCOPE_DEVICE)
            e[n++] = entry(ATOM_WORD, DEV_FIELD);
    }
    if (n > 1)
        qsort(e, n, sizeof *e, cmp_u64);
    uint32_t id = ls_intern(&s->ls, e, n);
    if (atomic && !w->nholds) {
        s->atom_key = atom_key;
        s->atom_id = id;
    }
    if (!atomic) {   /* here the warp holds a lock: w->locks exists */
        w->locks->lsid[lane] = id;
        w->lsid_valid |= 1u << lane;
    }
    return id;
}

/* Inline: the word loops ask it once per lane, and a plain access almost
 * always finds the lane's set remembered. */
static inline uint32_t lane_lockset(lk *s, warp_st *w, uint32_t bf, uint32_t cf, unsigned lane,
                                    bool atomic, uint8_t ascope)
{
    if (!atomic && !w->nholds)
        return s->empty_ls;   /* no lock held by any lane (most plain accesses) */
    if (!atomic && ((w->lsid_valid >> lane) & 1u))
        return w->locks->lsid[lane];
    if (atomic && !w->nholds && s->atom_key == atom_key_of(bf, cf, ascope))
        return s->atom_id;
    return lane_lockset_slow(s, w, bf, cf, lane, atomic, ascope);
}

/* Does the candidate set still hold a lock whose releases were sound? */
static __attribute__((noinline)) bool effective_slow(lk *s, uint32_t id)
{
    const uint64_t *e = s->ls.ent + s->ls.off[id];
    for (uint32_t i = 0; i < s->ls.len[id]; i++) {
        uint64_t num = e[i] >> 21;
        uint32_t field = (uint32_t)(e[i] & DEV_FIELD);
        if (num == ATOM_WORD)
            return true;
        const lockrec *r = &s->locks[num];
        if (r->broken)
            continue;
        uint8_t need = field == DEV_FIELD            ? WR_SCOPE_DEVICE
                       : (field & CLUSTER_FLAG) != 0 ? WR_SCOPE_CLUSTER
                                                     : WR_SCOPE_BLOCK;
        if (r->min_rel == 0xff || r->min_rel >= need)
            return true;
    }
    return false;
}

/* Inline for the sets of atomics: their implicit lock's entries sort
 * first (its word is 0), and it is always effective. */
static inline bool effective(lk *s, uint32_t id)
{
    if (!s->ls.len[id])
        return false;   /* (and ls.ent may still be NULL: no offset on it) */
    if ((s->ls.ent[s->ls.off[id]] >> 21) == ATOM_WORD)
        return true;
    return effective_slow(s, id);
}

/* ---- accesses ---- */

typedef struct cur_ctx {
    const wr_access *a;     /* NULL for a host copy */
    uint32_t epoch, launch, block, warp;
    uint32_t block_field;
    uint32_t gen;           /* the stamp of the access (lk_split) */
    uint32_t view, lim;     /* a word of this block resets when its stamp is 1..lim before view */
    uint32_t cluster_field; /* CLUSTER_FLAG | the block's cluster, or NO_CLUSTER */
    const block_st *b;      /* the current block's state, when it passed a cluster
                               or grid barrier (block_ordered); else NULL */
    uint64_t seq;
    uint32_t site;
    uint8_t space, kind;    /* space of the words: SHARED for a DSMEM part */
    bool write;
    uint32_t owner;         /* a shared word's block: `block`, or a DSMEM
                               part's owner (engine.h) */
} cur_ctx;

/* A newer epoch touches the page: the words wr_epochs_sweep_drops names
 * become VIRGIN (epochs.h: settled, or more than 255 epochs old).  Lock
 * words stay lock words: their cells keep the epoch of the CAS that first
 * named them, and a later launch's accesses to them are lock traffic
 * still (no cell state is read from a lock word but the mark). */
static inline bool swept(const lk *s, wr_epochs_sweep *sw, const cell *c)
{
    uint32_t meta = cell_meta(s, *c);
    return meta && !(meta & M_LOCKWORD) && wr_epochs_sweep_drops(sw, M_TAG(meta));
}

/* m: the map of p, s->map or its byte cells' (a byte page is swept as a
 * word page, when an epoch first reaches it: byte_page_enter). */
static void sweep(lk *s, const wr_shadow_map *m, wr_shadow_page *p, uint32_t epoch)
{
    wr_epochs_sweep sw;
    wr_epochs_sweep_begin(&sw, s->ep, (uint32_t)p->user, epoch);
    /* user3 bounds the page's epochs from below (page_for); user2 marks a
     * page holding a lock word, which every sweep keeps */
    if (!(p->user2 & LK_PAGE_LOCKWORD) && wr_epochs_sweep_drops_all(&sw, p->user3)) {
        wr_shadow_drop_live(m, p, &s->live);
        p->user = p->user3 = epoch;
        return;
    }
    for (unsigned l = 0; l < WR_SHADOW_LINES; l++) {
        if (wr_shadow_line_packed(p, l)) {
            cell *rep = wr_shadow_line_rep(m, p, l);
            if (swept(s, &sw, rep)) {   /* the tag is the same in all 32 */
                memset(rep, 0, sizeof *rep);
                wr_shadow_live_sub(p, &s->live, WR_SHADOW_LINE_WORDS);
            }
            continue;
        }
        cell *cells = wr_shadow_cells_at(m, p, (uint64_t)l << WR_SHADOW_LINE_SHIFT);
        for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
            if (swept(s, &sw, &cells[i])) {
                memset(&cells[i], 0, sizeof cells[i]);
                wr_shadow_live_sub(p, &s->live, 1);
            }
    }
    p->user = epoch;
    p->user3 = wr_epochs_sweep_oldest_kept(&sw);
}

/* addr: the cell's word, or its byte where the cell is a byte cell (byte):
 * the example names it.  The rings hold ranges and are asked for the
 * word, so a byte cell's first side is the newest access of its accessor
 * at its site that touched the word, not necessarily that byte. */
static void report(lk *s, const cur_ctx *c, const fcell *old, uint32_t old_epoch, unsigned lane,
                   uint64_t addr, bool byte)
{
    wr_race r;
    memset(&r, 0, sizeof r);
    r.engine = s->cfg.engine_index;
    r.potential = 1;
    r.verdict = WR_VERDICT_NONE;
    r.addr = addr;
    uint64_t wa = addr & ~3ull;
    uint32_t ob = (old->who >> 10) & HOST_BLOCK, ow = (old->who >> 5) & 31u, ol = old->who & 31u;
    bool ohost = ob == HOST_BLOCK;
    if (old_epoch != c->epoch || ohost || c->launch == 0)
        r.race_class = WR_CLASS_INTER_KERNEL;
    else if (ob != c->block_field)
        r.race_class = WR_CLASS_INTER_BLOCK;
    else if (ow != (c->warp & 31u))
        r.race_class = WR_CLASS_INTER_WARP;
    else
        r.race_class = WR_CLASS_INTRA_WARP;
    r.first.site = old->site;
    r.first.kind = (uint8_t)M_KIND(old->meta);
    r.first.launch = ohost ? 0 : wr_epochs_launch_of(s->ep, old_epoch);
    r.first.block = ohost ? UINT32_MAX : ob;
    r.first.warp = ohost ? UINT32_MAX : ow;
    r.first.lane = ohost ? UINT32_MAX : ol;
    /* The cell keeps who and where, not when: the accessor's ring knows,
     * unless the cell's access is an earlier lane of this instruction (its
     * entry is not asked).  A lane of this instruction that touched the
     * word left its own site and kind in the cell, except where the cell
     * kept an older write (touch: keeps_old), whose kind is never this
     * instruction's; so the same thread, site and kind, and that lane's
     * touch of the word, say the cell's access is this one. */
    if (c->a && !ohost && old_epoch == c->epoch && ob == c->block_field && ow == (c->warp & 31u) &&
        ol < lane && old->site == c->site && r.first.kind == c->kind &&
        (byte ? wr_access_lane_touches_byte(c->a, ol, addr)
              : wr_access_lane_touches(c->a, ol, addr))) {
        r.first.seq = c->seq;
    } else {
        const wr_ring_ent *fe =
            ohost ? wr_ring_find(&s->host_ring, 0, c->space, wa, c->seq, old->site, 0)
                  : wr_blockstate_find_word_access(&s->bs, old_epoch, ob, ow, ol, c->space,
                                                   c->owner, ob == fold_block(c->owner), wa,
                                                   c->seq, old->site, 0);
        r.first.seq = fe ? wr_ring_seq(fe, c->seq) : 0;   /* 0: neither the ring nor its older entries */
    }
    r.second.site = c->site;
    r.second.kind = c->kind;
    r.second.launch = c->launch;
    r.second.block = c->launch ? c->block : UINT32_MAX;
    r.second.warp = c->launch ? c->warp : UINT32_MAX;
    r.second.lane = c->launch ? lane : UINT32_MAX;
    r.second.seq = c->seq;
    wr_race_set_word(&r, c->space, c->owner, r.addr,
                     c->owner != c->block || ob != fold_block(c->owner));
    if (s->cfg.findings)
        wr_findings_report(s->cfg.findings, &r);
}

/* Did only block X (the cell's) touch the word, before X arrived at a
 * cluster or grid barrier gathering X and the current block, which that
 * block has passed (barriers.h, wr_cross_before)?  Then every access to it
 * is ordered before the current one: the word resets, as at X's own
 * barrier.  False where that cannot be told: block ids folded (grids of
 * HOST_BLOCK blocks or more), a launch never announced.  X may have
 * exited: its history was kept. */
static __attribute__((noinline)) bool block_ordered(lk *s, const cur_ctx *c, const fcell *old)
{
    uint32_t x = (old->who >> 10) & HOST_BLOCK;
    const wr_launch_geo *g = wr_launch_geos_get(&s->geo, c->launch);
    if (x == HOST_BLOCK || !g || wr_launch_geo_blocks(g) >= HOST_BLOCK)
        return false;
    const block_st *bx = (const block_st *)wr_blockstate_block(&s->bs, c->epoch, x, false);
    const wr_cross_bars *cx = bx ? bx->cross : wr_blockstate_kept(&s->bs, c->epoch, x);
    return wr_cross_before(cx, c->b->cross, c->warp,
                           wr_launch_geo_same_cluster(g, x, c->block), M_BAR(old->meta), 0xfffu);
}

/* Inlined into the word loops (the call was a large part of the per-word cost).
 * addr, byte: as report's.  quiet: a race found is marked reported without
 * a report (touch_bytes: one report per lane access of a word). */
static inline __attribute__((always_inline)) void touch(lk *s, const cur_ctx *c, wr_shadow_page *p,
                                                        cell *cl, uint32_t who_id, uint32_t lsid,
                                                        unsigned lane, uint64_t addr, bool byte,
                                                        bool quiet)
{
    fcell old = unpack(s, *cl);
    if (old.meta & M_LOCKWORD)
        return;   /* lock words are synchronisation, not data */
    wr_shadow_live_add(p, &s->live, !old.meta);   /* every new cell has meta != 0 */
    uint32_t old_epoch = c->epoch;
    bool concurrent_epoch = false;
    if (old.meta && M_TAG(old.meta) != (c->epoch & 0xffu)) {
        old_epoch = wr_epochs_of_tag((uint32_t)p->user, M_TAG(old.meta));
        if (wr_epochs_ordered(s->ep, old_epoch, c->epoch))
            old.meta = 0;
        else
            concurrent_epoch = true;
    }
    if (old.meta && !concurrent_epoch && !(old.meta & M_MULTI) &&
        ((old.who >> 10) & HOST_BLOCK) == c->block_field &&
        ((c->view - M_BAR(old.meta)) & 0xfffu) - 1u < c->lim)
        old.meta = 0;   /* only this block touched it, and a barrier intervened */
    else if (c->b && old.meta && !concurrent_epoch && !(old.meta & M_MULTI) &&
             ((old.who >> 10) & HOST_BLOCK) != c->block_field && block_ordered(s, c, &old))
        old.meta = 0;   /* only another block touched it, and a cluster or grid barrier ordered it */

    fcell nc;
    unsigned st;
    uint32_t meta = M_LIVE | (c->epoch & 0xffu) | ((c->gen & 0xfffu) << 8) |
                    ((uint32_t)c->kind << 22);
    if (!old.meta) {
        st = ST_EXCL;
        nc.ls = lsid;
        if (c->write)
            meta |= M_WRITTEN;
    } else {
        st = old.who >> 30;
        nc.ls = ls_intersect(&s->ls, old.ls, lsid);
        bool same = !concurrent_epoch && (old.who & 0x3fffffffu) == who_id;
        bool written = (old.meta & M_WRITTEN) || c->write;
        if (st == ST_EXCL && !same)
            st = written ? ST_SMOD : ST_SHARED;
        else if (st == ST_SHARED && c->write)
            st = ST_SMOD;
        if (written)
            meta |= M_WRITTEN;
        if ((old.meta & M_MULTI) || concurrent_epoch ||
            ((old.who >> 10) & HOST_BLOCK) != c->block_field)
            meta |= M_MULTI;
        meta |= old.meta & M_REPORTED;
        if (st == ST_SMOD && !(old.meta & M_REPORTED) && !effective(s, nc.ls)) {
            if (!quiet)
                report(s, c, &old, old_epoch, lane, addr, byte);
            meta |= M_REPORTED;
        }
        /* A read after a write of this epoch leaves the write as the side a
         * report names: a read/read pair would name no conflict.  So does
         * an atomic after a plain write: the plain write holds no implicit
         * atomic lock, so it is what a later atomic conflicts with (an
         * atomic/atomic pair at a scope that holds both names none).
         * EXCL's owner check is unaffected (every access in EXCL is the
         * owner's), and so is M_MULTI (a block other than the kept one
         * sets it). */
        bool keeps_old = c->kind == WR_KIND_ATOMIC ? M_KIND(old.meta) == WR_KIND_WRITE
                                                   : !c->write && (old.meta & M_WRITTEN);
        if (keeps_old && !concurrent_epoch) {
            nc.site = old.site;
            nc.who = (old.who & 0x3fffffffu) | ((uint32_t)st << 30);
            nc.meta = (meta & ~(3u << 22)) | (old.meta & (3u << 22));
            *cl = pack(s, &nc);
            return;
        }
    }
    nc.site = c->site;
    nc.who = who_id | ((uint32_t)st << 30);
    nc.meta = meta;
    *cl = pack(s, &nc);
}

/* `scattered`: a gather's lane (wr_shadow_get_scattered).  Inlined into
 * the lane loops, as fsm's is. */
static inline __attribute__((always_inline)) wr_shadow_page *
page_for(lk *s, uint8_t space, uint32_t launch, uint32_t block, uint64_t word, uint32_t epoch,
         bool scattered)
{
    uint64_t key = wr_shadow_key(space, launch, block, word);
    wr_shadow_page *p = scattered ? wr_shadow_get_scattered(s->map, key) : wr_shadow_get(s->map, key);
    if (wr_epochs_page_enter(&p->user, &p->user3, epoch))
        sweep(s, s->map, p, epoch);
    return p;
}

typedef struct lane_page_ctx {
    lk *s;
    const wr_access *a;
    uint32_t epoch;
} lane_page_ctx;

static wr_shadow_page *lane_page(void *ctx, uint64_t word)
{
    lane_page_ctx *c = ctx;
    return page_for(c->s, c->a->space, c->a->launch, c->a->block, word, c->epoch, true);
}

/* ---- split words (shadow.h, "Sub-word accesses") ---- */

/* A byte page is entered by an epoch, and swept, as page_for does a word
 * page: its cells carry epoch tags read against its own newest epoch. */
static void byte_page_enter(lk *s, wr_shadow_page *bp, uint32_t epoch)
{
    if (wr_epochs_page_enter(&bp->user, &bp->user3, epoch))
        sweep(s, s->map->bytes, bp, epoch);
}

typedef struct split_ctx {
    lk *s;
    wr_shadow_page *p;   /* the word's page */
} split_ctx;

/* The word's cell becomes each of its bytes' (a plain copy: contexts are
 * interned for good and owned by no cell).  Its tag names an epoch against
 * the word page's newest, which no byte page of it is ahead of (the word
 * page is entered first), so the byte page bp catches up to that first and
 * takes the word page's bound on its oldest epoch.  The word cell (zeroed
 * next, wr_shadow_byte_cells) is read no more: its bytes count as live
 * instead. */
static void split_word(void *bytes, const void *word_cell, wr_shadow_page *bp, void *ctx)
{
    const split_ctx *x = ctx;
    lk *s = x->s;
    cell w = *(const cell *)word_cell, *b = bytes;
    byte_page_enter(s, bp, (uint32_t)x->p->user);
    if (x->p->user3 < bp->user3)
        bp->user3 = x->p->user3;
    for (unsigned k = 0; k < 4; k++)
        b[k] = w;
    if (!w.ctx)
        return;
    if (cell_meta(s, w) & M_LOCKWORD)
        bp->user2 |= LK_PAGE_LOCKWORD;
    wr_shadow_live_add(bp, &s->live, 4);
    wr_shadow_live_sub(x->p, &s->live, 1);
}

/* The four byte cells of word `word` of p, split first if it is not yet;
 * *bpp: their page, entered by `epoch`. */
static cell *byte_cells(lk *s, wr_shadow_page *p, uint64_t word, uint32_t epoch,
                        wr_shadow_page **bpp)
{
    split_ctx x = {s, p};
    cell *b = wr_shadow_byte_cells(s->map, p, word, split_word, &x, bpp);
    byte_page_enter(s, *bpp, epoch);
    return b;
}

/* touch() for the bytes [lo, end) of a lane's access (or a host copy's)
 * that lie in word `word` of p, which is split or which the access covers
 * only in part: each byte's cell is stepped as the word's would be.  Bytes
 * of the word that race report once for the lane (the findings count a
 * report as an occurrence); the others are marked reported, as the word's
 * one cell would have been. */
static __attribute__((noinline)) void touch_bytes(lk *s, const cur_ctx *c, wr_shadow_page *p,
                                                  uint64_t word, uint64_t lo, uint64_t end,
                                                  uint32_t who_id, uint32_t lsid, unsigned lane)
{
    wr_shadow_page *bp;
    cell *b = byte_cells(s, p, word, c->epoch, &bp);
    uint64_t w0 = word << WR_WORD_SHIFT;
    unsigned k = lo > w0 ? (unsigned)(lo - w0) : 0u, e = end < w0 + 4u ? (unsigned)(end - w0) : 4u;
    bool reported = false;
    for (; k < e; k++) {
        uint32_t before = cell_meta(s, b[k]);
        touch(s, c, bp, &b[k], who_id, lsid, lane, w0 + k, true, reported);
        reported |= (cell_meta(s, b[k]) & ~before & M_REPORTED) != 0;
    }
}

/* What an access of the bytes [lo, end) does to word `word` of p: the
 * word's cell steps, unless the access covers only part of the word or
 * the word is split, when its bytes' do (touch_bytes). */
static inline __attribute__((always_inline)) void touch_word(lk *s, const cur_ctx *c,
                                                             wr_shadow_page *p, uint64_t word,
                                                             uint64_t lo, uint64_t end,
                                                             uint32_t who_id, uint32_t lsid,
                                                             unsigned lane)
{
    if (__builtin_expect(wr_shadow_partial_word(lo, end, word) || wr_shadow_word_split(p, word), 0))
        touch_bytes(s, c, p, word, lo, end, who_id, lsid, lane);
    else
        touch(s, c, p, (cell *)wr_shadow_cell(s->map, p, word), who_id, lsid, lane,
              word << WR_WORD_SHIFT, false, false);
}

/* A cell as seen from lane `lane`: its accessor's lane replaced by the
 * distance (old lane - lane) mod 32.  touch() asks of the old accessor only
 * whether it is the same thread (block, warp, lane), its block and its
 * state, and the rest of the cell holds no lane; so two words of one access
 * whose cells look the same from their own lanes get the same new cell,
 * up to the lane, unless touch() reports (the report names the lane). */
static inline cell lane_relative(cell c, unsigned lane)
{
    c.who = (c.who & ~31u) | ((c.who - lane) & 31u);
    return c;
}

static inline cell lane_absolute(cell c, unsigned lane)
{
    c.who = (c.who & ~31u) | ((c.who + lane) & 31u);
    return c;
}

static inline bool same_cell(const cell *x, const cell *y)
{
    return x->ctx == y->ctx && x->who == y->who;
}

/* Packed lines (shadow.h): a rep is the cell of the line's lane-0 word;
 * word 32k + l holds it with l added to the accessor's lane, which is what
 * a whole-line coalesced access leaves (lane_relative). */
static void expand_line(void *cells, const void *rep)
{
    const cell *r = rep;
    cell *c = cells;
    for (unsigned l = 0; l < WR_SHADOW_LINE_WORDS; l++) {
        c[l] = *r;
        c[l].who = (r->who & ~31u) | ((r->who + l) & 31u);
    }
}

/* A whole packed line under a full-mask aligned plain access of a warp
 * that holds no lock: touch() on the lane-0 word's cell stands for all 32,
 * which stay packed.  When it reports, the report for word 0 is the one its
 * own touch() makes; the line is then unpacked with word 0's new cell for
 * the caller to go on with lanes 1..31 (returns false). */
static bool packed_line_touch(lk *s, const cur_ctx *c, wr_shadow_page *p, uint64_t first,
                              uint32_t base_id, uint32_t ls)
{
    unsigned line = wr_shadow_line_of(first);
    cell *rep = wr_shadow_line_rep(s->map, p, line);
    cell old = *rep, now = old;
    touch(s, c, p, &now, base_id, ls, 0, first << WR_WORD_SHIFT, false, false);
    if (!(cell_meta(s, now) & ~cell_meta(s, old) & M_REPORTED)) {
        if (!old.ctx)
            wr_shadow_live_add(p, &s->live, WR_SHADOW_LINE_WORDS - 1);   /* touch() counted word 0 */
        *rep = now;
        return true;
    }
    wr_shadow_expand_line(s->map, p, line);
    *(cell *)wr_shadow_cells_at(s->map, p, first) = now;
    return false;
}

/* The word loop for the coalesced shape (shadow.h, wr_access_word_per_lane):
 * lane l touches word lane0_word + l; shard and page are decided once per
 * page.  Same (lane, word) visits in the same order as on_access's loop.
 * Neighbouring words last touched by one instruction (a loop over an
 * array, a stencil's neighbours) look the same from their lanes
 * (lane_relative): a one-entry memo of touch()'s answer per page replaces
 * the state machine for them. */
/* What words_by_lane remembers across the words of a piece: the last
 * touch()'s cell before and after (both lane-relative), when it
 * reported nothing: a word whose relative cell is the same gets the same
 * answer with its own lane. */
typedef struct word_memo {
    bool on;
    uint32_t ls;
    cell old, nw;
} word_memo;

static inline __attribute__((always_inline)) void piece_word(lk *s, const cur_ctx *c,
                                                             wr_shadow_page *p, cell *cells,
                                                             uint64_t lane0_word, unsigned lane,
                                                             uint32_t ls, uint32_t base_id,
                                                             word_memo *m)
{
    uint64_t wd = lane0_word + lane;
    cell *cl = &cells[wd & WR_SHADOW_PAGE_MASK];
    cell old = *cl;
    if (!old.ctx || (cell_meta(s, old) & M_LOCKWORD)) {
        touch(s, c, p, cl, base_id | lane, ls, lane, wd << WR_WORD_SHIFT, false, false);
        return;
    }
    cell rel = lane_relative(old, lane);
    if (m->on && m->ls == ls && same_cell(&rel, &m->old)) {
        *cl = lane_absolute(m->nw, lane);
        return;
    }
    touch(s, c, p, cl, base_id | lane, ls, lane, wd << WR_WORD_SHIFT, false, false);
    if (cell_meta(s, *cl) & ~cell_meta(s, old) & M_REPORTED) {
        m->on = false;   /* reported: the next word's report names its own lane */
        return;
    }
    m->on = true;
    m->ls = ls;
    m->old = rel;
    m->nw = lane_relative(*cl, lane);
}

#if WR_SHADOW_AVX2
/* A piece whose lanes all have lockset `ls`, four lanes (four 8-byte cells)
 * at a time: a group inside the piece's word range (expanded, one page)
 * is one load, and the lanes whose relative cell is the memo's take the
 * memo's answer in one store; the others go through piece_word in lane
 * order, as the portable loop does.  A memo hit never reports, and every
 * word's answer is a function of its relative cell alone. */
__attribute__((noinline, target("avx2"))) static void
uniform_piece_avx2(lk *s, const cur_ctx *c, wr_shadow_page *p, cell *cells, uint64_t lane0_word,
                   uint32_t piece, uint32_t base_id, uint32_t ls)
{
    _Static_assert(sizeof(cell) == 8 && offsetof(cell, who) == 4, "who is the second word");
    word_memo m = {0};
    const __m256i who31 = _mm256_setr_epi32(0, 31, 0, 31, 0, 31, 0, 31);
    const __m256i who_lanes4 = _mm256_setr_epi32(0, 0, 0, 1, 0, 2, 0, 3);   /* who's lane */
    unsigned lo = (unsigned)__builtin_ctz(piece), hi = 31u - (unsigned)__builtin_clz(piece);
    for (unsigned g = lo & ~3u; g <= hi; g += 4) {
        uint32_t m4 = (piece >> g) & 15u;
        if (m.on && m4 && g >= lo && g + 3 <= hi) {
            __m256i *q = (__m256i *)&cells[(lane0_word + g) & WR_SHADOW_PAGE_MASK];
            __m256i old = _mm256_loadu_si256(q);
            __m256i lanes = _mm256_add_epi64(who_lanes4, _mm256_set1_epi64x((long long)g << 32));
            __m256i rel = _mm256_or_si256(_mm256_andnot_si256(who31, old),
                                          _mm256_and_si256(_mm256_sub_epi32(old, lanes), who31));
            uint64_t mo, mn;
            memcpy(&mo, &m.old, sizeof mo);
            __m256i memo_old = _mm256_set1_epi64x((long long)mo);
            uint32_t hits = (uint32_t)_mm256_movemask_pd(
                                _mm256_castsi256_pd(_mm256_cmpeq_epi64(rel, memo_old))) & m4;
            if (hits) {
                memcpy(&mn, &m.nw, sizeof mn);
                __m256i memo_nw = _mm256_set1_epi64x((long long)mn);
                __m256i nw = _mm256_or_si256(_mm256_andnot_si256(who31, memo_nw),
                                             _mm256_and_si256(_mm256_add_epi32(memo_nw, lanes), who31));
                wr_shadow_store4(q, old, nw, hits);
                m4 &= ~hits;
            }
        }
        for (uint32_t x = m4; x; x &= x - 1)
            piece_word(s, c, p, cells, lane0_word, g + (unsigned)__builtin_ctz(x), ls, base_id, &m);
    }
}
#endif

/* A lane's lockset in a piece: the warp's one set where it has one
 * (uniform_ls), else the lane's own. */
static inline uint32_t piece_lockset(lk *s, const cur_ctx *c, warp_st *w, uint32_t uniform_ls,
                                     unsigned lane, bool atomic, uint8_t ascope)
{
    return uniform_ls != UINT32_MAX
               ? uniform_ls
               : lane_lockset(s, w, c->block_field, c->cluster_field, lane, atomic, ascope);
}

/* A piece on a page with split words: the loop of the general path
 * (touch_word), none of the shortcuts below, which step word cells only. */
static __attribute__((noinline)) void split_piece(lk *s, const cur_ctx *c, warp_st *w,
                                                  wr_shadow_page *p, uint64_t lane0_word,
                                                  uint32_t piece, uint32_t base_id,
                                                  uint32_t uniform_ls, bool atomic, uint8_t ascope)
{
    for (uint32_t x = piece; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint32_t ls = piece_lockset(s, c, w, uniform_ls, lane, atomic, ascope);
        uint64_t wd = lane0_word + lane;
        touch_word(s, c, p, wd, wd << WR_WORD_SHIFT, (wd << WR_WORD_SHIFT) + 4u, base_id | lane,
                   ls, lane);
    }
}

static inline __attribute__((always_inline)) void words_by_lane(lk *s, const cur_ctx *c, warp_st *w, const wr_access *a,
                          uint64_t lane0_word, uint32_t base_id, bool atomic, uint8_t ascope)
{
    /* a warp that holds no lock accesses plain data with the empty set on
     * every lane */
    uint32_t uniform_ls = !atomic && !w->nholds ? s->empty_ls : UINT32_MAX;
    uint32_t mask = a->active_mask, piece;
    while (wr_next_owned_lane_page(&mask, lane0_word, a, s->cfg.shard, s->cfg.shards, &piece)) {
        uint64_t first = lane0_word + (unsigned)__builtin_ctz(piece);
        wr_shadow_page *p = page_for(s, a->space, a->launch, a->block, first, c->epoch, false);
        if (__builtin_expect(wr_shadow_page_split(p), 0)) {
            split_piece(s, c, w, p, lane0_word, piece, base_id, uniform_ls, atomic, ascope);
            continue;
        }
        if (uniform_ls != UINT32_MAX && wr_shadow_packed_whole_line(p, first, piece)) {
            if (packed_line_touch(s, c, p, first, base_id, uniform_ls))
                continue;
            piece &= ~1u;   /* word 0 is done */
        }
        wr_shadow_expand_range(s->map, p, first, lane0_word + (31u - (unsigned)__builtin_clz(piece)));
        cell *cells = wr_shadow_cells_at(s->map, p, 0);
#if WR_SHADOW_AVX2
        if (s->avx2 && uniform_ls != UINT32_MAX) {
            uniform_piece_avx2(s, c, p, cells, lane0_word, piece, base_id, uniform_ls);
            continue;
        }
#endif
        word_memo m = {0};
        for (uint32_t x = piece; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            uint32_t ls = piece_lockset(s, c, w, uniform_ls, lane, atomic, ascope);
            piece_word(s, c, p, cells, lane0_word, lane, ls, base_id, &m);
        }
    }
}

static inline __attribute__((always_inline)) void
access_words(lk *s, const cur_ctx *c, warp_st *w, const wr_access *a, unsigned size,
             const wr_shadow_lanes *vl, bool atomic, uint8_t ascope);
static void on_dsmem_access(lk *s, const wr_event *ev, cur_ctx *c, warp_st *w, unsigned size,
                            bool atomic, uint8_t ascope);

/* The cluster field of lock entries made by block `block` of `launch`:
 * NO_CLUSTER where its clusters are single blocks (a cluster-scoped hold
 * or atomic then protects what a block-scoped one does). */
static inline uint32_t cluster_field(const lk *s, uint32_t launch, uint32_t block)
{
    if (!s->geo.clustered)
        return NO_CLUSTER;
    const wr_launch_geo *g = wr_launch_geos_get(&s->geo, launch);
    if (wr_launch_geo_single_block_clusters(g))
        return NO_CLUSTER;
    return CLUSTER_FLAG | (wr_cluster_of(g->grid, g->cluster, block) % (CLUSTER_FLAG - 1u));
}

static void on_access(lk *s, const wr_event *ev)
{
    const wr_access *a = &ev->u.access;
    if (a->space == WR_SPACE_LOCAL || !a->active_mask)
        return;
    uint32_t epoch;
    block_st *b;
    warp_st *w;
    locate(s, a->launch, a->block, a->warp, &epoch, &b, &w);
    wr_barrier_wake_lazy(&b->bars, &s->bar_pool, a->warp, wr_barrier_lanes(a->active_mask),
                         barrier_done, b);

    bool atomic = wr_op_is_atomic(a->op);
    uint8_t ascope = atomic ? norm_scope(a->scope) : 0;
    if (atomic) {
        lock_events(s, w, ev, epoch);
    } else {
        /* the lanes whose volatile store released a lock made no data access */
        uint32_t data_lanes = a->active_mask;
        if (w->nholds && strong_plain_store(a))
            data_lanes &= ~lock_events(s, w, ev, epoch);
        if (data_lanes == UINT32_MAX) {
            w->data_seq_all = ev->seq + 1;
        } else if (w->fences) {
            for (uint32_t x = data_lanes; x; x &= x - 1)
                w->fences->last_data_seq[__builtin_ctz(x)] = ev->seq + 1;
        }
    }

    unsigned size = a->size ? a->size : 4;
    uint8_t kind = atomic ? WR_KIND_ATOMIC : a->op == WR_OP_STORE ? WR_KIND_WRITE : WR_KIND_READ;
    /* without split barriers a word resets when its stamp is not the
     * block's gen (lim: any other value of the field) */
    uint32_t gen = b->gen, view = b->gen, lim = 0xfffu;
    if (b->split) {
        gen += b->split->pend[a->warp & 31u];
        view = b->split->view[a->warp & 31u];
        lim = 0x7ffu;
    }
    cur_ctx c = {.a = a, .epoch = epoch, .launch = a->launch, .block = a->block, .warp = a->warp,
                 .block_field = fold_block(a->block), .gen = gen, .view = view, .lim = lim,
                 .cluster_field = cluster_field(s, a->launch, a->block),
                 .b = b->cross && b->cross->cluster.n ? b : NULL, .seq = ev->seq,
                 .site = ev->site, .space = a->space, .owner = a->block,
                 .kind = kind, .write = wr_access_writes(a)};
    if (a->space == WR_SPACE_DSMEM) {
        on_dsmem_access(s, ev, &c, w, size, atomic, ascope);
        return;
    }
    /* a gather / scatter's cells, resolved once (and their misses
     * overlapped) for both the ring's range and the lane loop */
    lane_page_ctx lpc = {s, a, epoch};
    wr_shadow_lanes vl;
    bool vector = wr_shadow_vector_lanes(a, size, s->map, s->cfg.shard, s->cfg.shards, lane_page,
                                         &lpc, &vl);
    if (vector)
        wr_ring_push_span(&w->ring, &s->ring_pool, a, vl.lo, vl.hi, ev->seq, ev->site, kind);
    else
        wr_ring_push_access(&w->ring, &s->ring_pool, a, size, ev->seq, ev->site, kind);
    uint64_t a0;
    if (s->cfg.shards > 1 && wr_access_one_run(a, size, &a0) &&
        wr_shard_of(a->space, a->launch, a->block, a0, s->cfg.shards) != s->cfg.shard)
        return;   /* no word of this shard (the lock / data-seq state above is per warp) */
    access_words(s, &c, w, a, size, vector ? &vl : NULL, atomic, ascope);
}

/* A DSMEM access: the ring names it as the trace does
 * (find_word_access); its words are each owner's, as the owner's own
 * shared accesses name them (engine.h). */
static __attribute__((noinline)) void on_dsmem_access(lk *s, const wr_event *ev, cur_ctx *c,
                                                      warp_st *w, unsigned size, bool atomic,
                                                      uint8_t ascope)
{
    const wr_access *a = &ev->u.access;
    wr_ring_push_access(&w->ring, &s->ring_pool, a, size, ev->seq, ev->site, c->kind);
    wr_dsmem_parts parts;
    wr_dsmem_parts_begin(&parts, a);
    while (wr_dsmem_next_part(&parts)) {
        const wr_access *m = &parts.part;
        c->a = m;
        c->space = m->space;
        c->owner = m->block;
        lane_page_ctx lpc = {s, m, c->epoch};
        wr_shadow_lanes vl;
        bool vector = wr_shadow_vector_lanes(m, size, s->map, s->cfg.shard, s->cfg.shards,
                                             lane_page, &lpc, &vl);
        access_words(s, c, w, m, size, vector ? &vl : NULL, atomic, ascope);
    }
}

/* The words of access a (a DSMEM access's part: a->block is the words'
 * owner) touched for the current access; vl: its lanes' cells when
 * wr_shadow_vector_lanes resolved them.  Inlined into both callers: it
 * is the whole per-word cost of an access. */
static inline __attribute__((always_inline)) void
access_words(lk *s, const cur_ctx *c, warp_st *w, const wr_access *a, unsigned size,
             const wr_shadow_lanes *vl, bool atomic, uint8_t ascope)
{
    uint32_t base_id = ((uint32_t)(c->warp & 31u) << 5) | (c->block_field << 10);
    uint64_t lane0_word;
    if (wr_access_word_per_lane(a, size, &lane0_word)) {
        words_by_lane(s, c, w, a, lane0_word, base_id, atomic, ascope);
        return;
    }
    if (vl) {
        for (unsigned i = 0; i < vl->n; i++) {
            const wr_shadow_lane *l = &vl->l[i];
            uint32_t lsid =
                lane_lockset(s, w, c->block_field, c->cluster_field, l->lane, atomic, ascope);
            touch(s, c, l->page, l->cell, base_id | l->lane, lsid, l->lane,
                  l->word << WR_WORD_SHIFT, false, false);
        }
        return;
    }
    uint64_t run = UINT64_MAX, pn = UINT64_MAX;
    bool run_ok = false;
    wr_shadow_page *p = NULL;
    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t ad = wr_access_lane_addr(a, lane);
        uint64_t w0 = ad >> WR_WORD_SHIFT, w1 = (ad + size - 1) >> WR_WORD_SHIFT;
        uint32_t lsid = UINT32_MAX;
        for (uint64_t wd = w0; wd <= w1; wd++) {
            if ((wd >> WR_SHARD_RUN_SHIFT) != run) {
                run = wd >> WR_SHARD_RUN_SHIFT;
                run_ok = wr_shard_of(a->space, a->launch, a->block, wd << WR_WORD_SHIFT,
                                     s->cfg.shards) == s->cfg.shard;
            }
            if (!run_ok)
                continue;
            if ((wd >> WR_SHADOW_PAGE_SHIFT) != pn) {
                pn = wd >> WR_SHADOW_PAGE_SHIFT;
                p = page_for(s, a->space, a->launch, a->block, wd, c->epoch, false);
            }
            if (lsid == UINT32_MAX)
                lsid = lane_lockset(s, w, c->block_field, c->cluster_field, lane, atomic, ascope);
            touch_word(s, c, p, wd, ad, ad + size, base_id | lane, lsid, lane);
        }
    }
}

static void host_range(lk *s, cur_ctx *c, uint64_t addr, uint64_t bytes)
{
    if (!bytes)
        return;
    wr_ring_push_range(&s->host_ring, &s->host_ring_pool, c->seq, addr, bytes, c->site, c->kind);
    uint64_t next = addr >> WR_WORD_SHIFT, last = (addr + bytes - 1) >> WR_WORD_SHIFT;
    uint64_t first, end;
    while (wr_next_owned_global_run(&next, last, s->cfg.shard, s->cfg.shards, &first, &end)) {
        wr_shadow_page *p = page_for(s, WR_SPACE_GLOBAL, 0, 0, first, c->epoch, false);
        for (uint64_t wd = first; wd <= end; wd++)
            touch_word(s, c, p, wd, addr, addr + bytes, HOST_BLOCK << 10, 0, 0);
    }
}

static void on_host_copy(lk *s, const wr_event *ev, uint32_t epoch)
{
    const wr_host_copy *cp = &ev->u.copy;
    cur_ctx c = {.epoch = epoch, .launch = 0, .block = UINT32_MAX, .warp = UINT32_MAX,
                 .block_field = HOST_BLOCK, .gen = 0, .view = 0, .lim = 0xfffu, .seq = ev->seq, .site = ev->site,
                 .space = WR_SPACE_GLOBAL};
    if ((cp->kind == WR_COPY_D2H || cp->kind == WR_COPY_D2D) && cp->src) {
        c.kind = WR_KIND_READ;
        c.write = false;
        host_range(s, &c, cp->src, cp->bytes);
    }
    if ((cp->kind == WR_COPY_H2D || cp->kind == WR_COPY_D2D || cp->kind == WR_COPY_MEMSET) && cp->dst) {
        c.kind = WR_KIND_WRITE;
        c.write = true;
        host_range(s, &c, cp->dst, cp->bytes);
    }
}

/* ---- ops ---- */

static void *lk_create(const wr_engine_config *cfg)
{
    lk *s = xcalloc(1, sizeof *s);
    wr_blockstate_init(&s->bs, sizeof(block_st), sizeof(warp_st), offsetof(warp_st, ring));
    s->bar_pool.size = sizeof(wr_block_barriers);
    s->cross_pool.size = sizeof(wr_cross_bars);
    wr_blockstate_keep(&s->bs, sizeof(wr_cross_bars));
    s->split_pool.size = sizeof(lk_split);
    s->locks_pool.size = sizeof(warp_locks);
    s->fences_pool.size = sizeof(warp_fences);
    wr_ring_pool_init(&s->ring_pool);
    wr_ring_pool_init(&s->host_ring_pool);
    s->cfg = *cfg;
    if (!s->cfg.shards)
        s->cfg.shards = 1;
    s->map = wr_shadow_new(sizeof(cell), expand_line);
    s->avx2 = wr_shadow_simd();
    s->ep = wr_epochs_new();
    ls_init(&s->ls);
    cx_init(&s->cx);
    s->empty_ls = ls_intern(&s->ls, NULL, 0);
    return s;
}

/* A page going whole: its live cells stop counting. */
static void uncount_page(wr_shadow_page *p, void *live)
{
    *(uint64_t *)live -= wr_shadow_page_live(p);
}

static void lk_on_event(void *self, const wr_event *ev)
{
    lk *s = self;
    switch (ev->kind) {
    case WR_EV_ACCESS:
        on_access(s, ev);
        break;
    case WR_EV_BARRIER:
        on_barrier(s, &ev->u.barrier);
        break;
    case WR_EV_FENCE:
        on_fence(s, ev);
        break;
    case WR_EV_BLOCK_EXIT: {
        /* its locks, barriers and shared memory go, its accesses stay
         * findable for reports, its cluster and grid barrier history stays
         * for block_ordered (a block of its cluster may run on past its
         * exit) */
        uint32_t e = wr_blockstate_epoch_of(&s->bs, s->ep, ev->u.block.launch);
        const block_st *b = (const block_st *)wr_blockstate_block(&s->bs, e, ev->u.block.block, false);
        wr_blockstate_retire_keeping(&s->bs, e, ev->u.block.block,
                                     b && b->cross && b->cross->cluster.n ? b->cross : NULL,
                                     wr_launch_geo_single_block_clusters(
                                         wr_launch_geos_get(&s->geo, ev->u.block.launch)),
                                     drop_block, s);
        /* as in vc, scoped and fsm; a report needs none of it (the
         * rings and contexts stay), and a launch of thousands of blocks
         * kept a tile each to its end */
        wr_shadow_drop_block(s->map, ev->u.block.launch, ev->u.block.block, uncount_page,
                             &s->live);
        break;
    }
    case WR_EV_KERNEL_LAUNCH:
    case WR_EV_HOST_COPY: {
        if (ev->kind == WR_EV_KERNEL_LAUNCH)
            wr_launch_geos_note(&s->geo, &ev->u.launch);
        uint32_t e = wr_epochs_on_event(s->ep, ev);
        purge_blocks(s, e);
        if (ev->kind == WR_EV_HOST_COPY)
            on_host_copy(s, ev, e);
        break;
    }
    case WR_EV_KERNEL_END:
        wr_shadow_drop_launch(s->map, ev->u.kernel_end.launch, uncount_page, &s->live);
        wr_epochs_on_event(s->ep, ev);
        break;
    case WR_EV_EVENT_RECORD:
    case WR_EV_STREAM_WAIT:
    case WR_EV_EVENT_SYNC:
    case WR_EV_STREAM_SYNC:
    case WR_EV_DEVICE_SYNC:
        wr_epochs_on_event(s->ep, ev);
        break;
    default:
        break;
    }
}

static void lk_finish(void *self) { (void)self; }

static uint64_t lk_shadow_words(void *self)
{
    const lk *s = self;
    return s->live;
}

static void lk_destroy(void *self)
{
    lk *s = self;
    if (!s)
        return;
    wr_blockstate_free(&s->bs, NULL, NULL);   /* the pools hold the blocks */
    release_owned_pools(s);
    wr_ring_release(&s->host_ring, &s->host_ring_pool);
    wr_ring_pool_release(&s->host_ring_pool);
    free(s->lock_slots);
    free(s->locks);
    wr_launch_geos_free(&s->geo);
    ls_free(&s->ls);
    cx_free(&s->cx);
    wr_shadow_free(s->map);
    wr_epochs_free(s->ep);
    free(s);
}

const wr_engine_ops wr_engine_lockset = {
    .name = "lockset",
    .description = "Eraser-style locksets with inferred scoped GPU locks (CAS+fence / fence+exch); potential races",
    .create = lk_create,
    .on_event = lk_on_event,
    .finish = lk_finish,
    .shadow_words = lk_shadow_words,
    .destroy = lk_destroy,
    .unmodelled = WR_UNMODELLED_MBARRIERS,
    .lane_ns = 3.3f,
    .gather_lane_ns = 18.3f,
};

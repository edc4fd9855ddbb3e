/*
 * fsm: the 25-state race FSM of HiRace (seed 002), driven by exactly the
 * transition table analyzer/fsm25-transitions.csv (compiled into
 * fsm25_table.c).  One 8-byte shadow word per tracked 4-byte word (layout in
 * engine_fsm.h); semantics and decisions in ENGINES.md, section "fsm".
 * A word that an access covers only in part splits into four byte cells of
 * the same layout (shadow.h, "Sub-word accesses"; touch_bytes), stepped on
 * the general path only: the fast paths leave pages with split words to it.
 *
 * Counters.  Each warp keeps a block-barrier count (bc) and each lane a
 * warp-sync count (wc; one count for the whole warp until a partial-mask
 * __syncwarp makes the lanes differ).  Both are Lamport clocks: when a
 * barrier completes, every participating warp's bc becomes max(bc of the
 * participants) + 1; a __syncwarp(mask) sets the wc of the lanes in mask to
 * max(their wc) + 1.  So if a synchronisation chain leads from the stored
 * access to the current one, the current count is larger; plain program
 * order changes nothing.  The shadow word keeps them modulo 2^11 / 2^10.
 *
 * Split barriers (format 1.3).  An ARRIVE (bar.arrive, a cluster or grid
 * barrier's arrive) brings the warp's bc at its arrival to the phase's max
 * m and goes on: it does not take m + 1 (it did not wait), but its own bc
 * steps by one at the arrival, so that its later accesses are told apart
 * from its earlier ones.  Waiters (SYNC, and a cluster or grid WAIT) take
 * max(m + 1, their bc + 1) at completion.  The Lamport property holds
 * (no false race), and a waiter's count equals, not exceeds, the arriver's
 * count after its arrival when the arriver brought the largest count, so
 * an access of the arriver after its arrival stays unordered with the
 * waiter's later ones (the producer that overwrites a buffer without
 * waiting for the consumer).  Counts cannot say more than that: what fsm
 * misses is in ENGINES.md (fsm, "Split barriers").
 *
 * Launch boundaries: every launch and host copy is an epoch (epochs.h).  A
 * word whose stored epoch happens before the current one is treated as INIT
 * (kernel boundary = global synchronisation); a word whose stored epoch is
 * concurrent with the current one (other stream, no event, no host wait) is
 * compared with relation G and sync U.  Pages are swept lazily when a newer
 * epoch first touches them, so the 8-bit epoch tag never becomes ambiguous.
 *
 * Cluster and grid barriers order blocks the same way: a word about to
 * race between two blocks that such a barrier ordered, whose history is
 * of one block, starts again from INIT (block_ordered; ENGINES.md, fsm).
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
#include "engine_fsm.h"
#include "epochs.h"
#include "launch_geo.h"
#include "shadow.h"
#include "xalloc.h"

typedef struct warp_st {
    uint32_t bc;            /* block-barrier count (Lamport) */
    uint32_t wc;            /* warp-sync count while all lanes agree */
    uint32_t *wcl;          /* per-lane warp-sync counts, NULL while uniform */
    wr_access_ring ring;    /* the warp's recent accesses (for the first site) */
} warp_st;

typedef struct block_st {
    wr_block_head head;         /* epoch, block, warp_st by warp */
    wr_block_barriers *bars;    /* NULL while no barrier is pending */
    uint64_t *shared_keys;  /* shared-memory pages of this block (this shard) */
    uint32_t nshared, capshared;
    /* NULL until a cluster or grid barrier; its stamp: the largest
     * block-barrier count the block's warps arrived with (barriers.h) */
    wr_cross_bars *cross;
} block_st;

typedef struct cur_ctx {
    const wr_access *a;     /* NULL for a host copy */
    uint32_t epoch;
    uint32_t launch;        /* 0 for the host */
    uint32_t block, warp;   /* UINT32_MAX for the host */
    uint64_t seq;
    uint32_t site;
    uint8_t space;          /* of the words: SHARED for a DSMEM part */
    uint32_t owner;         /* a shared word's block: `block`, or a DSMEM
                               part's owner (engine.h) */
    unsigned acc;
} cur_ctx;

typedef struct fsm {
    wr_engine_config cfg;
    wr_shadow_map *map;
    wr_epochs *ep;
    wr_blockstate bs;       /* (epoch, block) -> block_st, warp -> warp_st */
    uint64_t live;          /* non-zero cells (shadow_words, kept O(1)) */
    bool avx2;              /* uniform_segment_avx2 for uniform_segment */
    /* What blocks and warps own comes from these pools (the shared page
     * lists excepted), so that a purge dropping every block releases them
     * whole; blocks_with_shared counts the blocks holding a list. */
    wr_pool bar_pool, lanes_pool, cross_pool;
    wr_launch_geos geo;     /* blocks per cluster, threads per block */
    wr_ring_pool ring_pool;
    uint64_t blocks_with_shared;
    /* a global gather whose words are stepped at the next event
     * (gather_flush): pend[kept] while one is kept; the other one takes the
     * cells of the next access */
    struct fsm_pending {
        bool on;
        uint32_t owned;     /* its lanes in this shard */
        uint64_t lo, hi;    /* the bytes of all its active lanes (the ring's) */
        cur_ctx c;          /* c.a: acc */
        wr_access acc;      /* lane_addr: lane_addr */
        uint64_t lane_addr[WR_WARP_SIZE];
        uint64_t *cells[WR_WARP_SIZE];          /* of the owned lanes, in order */
        wr_shadow_page *pages[WR_WARP_SIZE];
        uint64_t base, cur_uniform;             /* as access_words packs them */
        const uint32_t *wcl;                    /* the warp's per-lane counts or NULL */
    } pend[2];
    unsigned kept;
    /* What a gather's lanes ask of their pages, one 32-byte entry a page
     * in a direct-mapped table (gather_resolve): an entry is valid while
     * its gen is pc_gen, which moves on when a page is entered with
     * another epoch than pc_epoch or a page is removed. */
    struct fsm_pc_ent *pc;
    size_t pc_cap;          /* entries, a power of two; 0 = none yet */
    uint32_t pc_gen, pc_epoch;
    /* While one lane's access steps the byte cells of a split word
     * (touch_bytes): the races it reported there.  Its bytes that race
     * with one access are one occurrence, as the word's one cell was. */
    struct {
        bool on;
        unsigned n;
        wr_race_access first[4];
        uint8_t race_class[4];
    } bytes;
} fsm;

typedef struct fsm_pc_ent {
    uint64_t key;
    uint64_t *cells;
    wr_shadow_page *page;
    uint32_t expanded;      /* lines expanded when the entry was made (they stay so) */
    uint32_t gen;
} fsm_pc_ent;
_Static_assert(sizeof(fsm_pc_ent) == 32, "two entries a cache line");

/* Every entry of the page cache becomes stale (a page entered with
 * another epoch, a page removed). */
static inline void pc_forget(fsm *f)
{
    if (__builtin_expect(++f->pc_gen == 0, 0)) {   /* gen 0 is never valid */
        if (f->pc)
            memset(f->pc, 0, f->pc_cap * sizeof *f->pc);
        f->pc_gen = 1;
    }
}
typedef struct fsm_pending fsm_pending;

/* ---- packed lines (shadow.h) ----
 * A packed line's rep is the state word of its lane-0 word; word 32k + l
 * holds the same word with l added to the lane (mod 32).  The fast path
 * packs the lines a whole-line coalesced access leaves alike: every lane
 * gets the same table answer (uniform_segment), so only the lane differs. */

static void expand_line(void *cells, const void *rep)
{
    uint64_t r = *(const uint64_t *)rep;
    uint64_t *c = cells;
    uint64_t rest = r & ~(31ull << WR_FSM_LANE_SHIFT);
    unsigned lane0 = wr_fsm_lane(r);
    for (unsigned l = 0; l < WR_SHADOW_LINE_WORDS; l++)
        c[l] = rest | ((uint64_t)((lane0 + l) & 31u) << WR_FSM_LANE_SHIFT);
}

/* ---- block / warp state (blockstate.h) ---- */

static block_st *block_find(fsm *f, uint32_t epoch, uint32_t block, bool create)
{
    return (block_st *)wr_blockstate_block(&f->bs, epoch, block, create);
}

/* A page's user2 (shadow.h, wr_shadow_live_add): its flag says the page
 * is listed with its block (note_shared_page), the bits above count its
 * non-zero cells, so that a page dropped whole, by a sweep or with its
 * block, is not read to count them. */
#define FSM_PAGE_LISTED WR_SHADOW_PAGE_FLAG

static warp_st *warp_of(fsm *f, block_st *b, uint32_t warp)
{
    return wr_blockstate_warp(&f->bs, &b->head, warp);
}

static void drop_shared_pages(fsm *f, block_st *b)
{
    if (b->shared_keys)
        f->blocks_with_shared--;
    for (uint32_t i = 0; i < b->nshared; i++) {
        wr_shadow_page *p = wr_shadow_lookup_slow(f->map, b->shared_keys[i], false);
        if (p) {
            /* its byte pages go with it (wr_shadow_remove): their cells too */
            wr_shadow_page *bp[4];
            for (unsigned k = wr_shadow_byte_pages(f->map, p, bp); k--;)
                f->live -= wr_shadow_page_live(bp[k]);
            f->live -= wr_shadow_page_live(p);
        }
        wr_shadow_remove(f->map, b->shared_keys[i]);
    }
    if (b->nshared)
        pc_forget(f);
    free(b->shared_keys);
    b->shared_keys = NULL;
    b->nshared = b->capshared = 0;
}

static void drop_warp(void *obj, void *ctx)
{
    fsm *f = ctx;
    warp_st *w = obj;
    wr_pool_put(&f->lanes_pool, w->wcl);
    wr_ring_release(&w->ring, &f->ring_pool);
}

static void drop_block(wr_block_head *head, void *ctx)
{
    fsm *f = ctx;
    block_st *b = (block_st *)head;
    drop_shared_pages(f, b);
    wr_pool_put(&f->bar_pool, b->bars);
    wr_pool_put(&f->cross_pool, b->cross);
    wr_blockstate_drop(&f->bs, head, drop_warp, f);
}

/* Frees what every block and warp owns at once: these pools hold all of
 * it (the shared page lists excepted). */
static void release_owned_pools(fsm *f)
{
    wr_pool_release(&f->bar_pool);
    wr_pool_release(&f->cross_pool);
    wr_ring_pool_release(&f->ring_pool);
    wr_pool_release(&f->lanes_pool);
}

/* At the end the pools and the shadow map go whole: a block's list of its
 * shared pages is all it owns besides. */
static void drop_shared_list_at_end(wr_block_head *head, void *ctx)
{
    (void)ctx;
    free(((block_st *)head)->shared_keys);
}

/* Frees the per-block state the epochs' rule lets go.  Checked at every
 * new epoch, so that a kernel launched again and again keeps about one
 * launch's warps.  When none is kept (a launch the host waited for, before
 * the next) and no block holds a shared page list, the pools go whole:
 * visiting a million blocks and their warps to free each was a sixth of
 * fsm's time on a grid of small blocks. */
static void purge_blocks(fsm *f, uint32_t newest)
{
    if (wr_blockstate_purge(&f->bs, f->ep, newest, !f->blocks_with_shared, drop_block, f))
        release_owned_pools(f);
}

static inline uint32_t epoch_of(fsm *f, uint32_t launch)
{
    return wr_blockstate_epoch_of(&f->bs, f->ep, launch);
}

/* Block and warp state of (launch, block, warp). */
static inline void locate(fsm *f, uint32_t launch, uint32_t block, uint32_t warp, uint32_t *epoch,
                          block_st **bs, warp_st **ws)
{
    void *b, *w;
    wr_blockstate_locate(&f->bs, f->ep, launch, block, warp, epoch, &b, &w);
    *bs = b;
    *ws = w;
}

/* A phase completed: each of its waiters takes the largest block-barrier
 * count a releasing arrival brought (ph->m is that plus one), plus one,
 * and never less than its own plus one (a WAIT's own count may be larger:
 * it stepped at its arrival and may have passed block barriers since).
 * Its arrivers take nothing: they went on (their count stepped at their
 * arrival, on_barrier).  The block's share of a cluster or grid barrier
 * is also kept in its history (cross_bars): its stamp is the largest
 * count a releasing arrival brought, at least that of every access its
 * arrivers made before and below that of every access of its waiters
 * after; a late WAIT takes done_stamp, the phase's m. */
static void barrier_done(void *ctx, unsigned slot, const wr_bar_phase *ph, bool relaxed)
{
    block_st *b = ctx;
    if (slot == WR_BAR_SHARE) {
        wr_cross_done(b->cross, ph, relaxed, ph->m ? ph->m - 1u : 0u);
        if (b->cross)
            b->cross->done_stamp = ph->m;
    }
    for (uint32_t x = ph->waiters; x; x &= x - 1) {
        warp_st *w = wr_blockstate_warp_if(&b->head, (uint32_t)__builtin_ctz(x));
        if (w)
            w->bc = ph->m > w->bc + 1u ? ph->m : w->bc + 1u;
    }
}

static void warp_sync_lanes(fsm *f, warp_st *w, uint32_t mask);

/* A barrier event.  SYNC: the warp arrives and waits (barrier_done gives
 * it its count).  ARRIVE: it brings its count to the phase and goes on; its
 * own count steps by one, so that its accesses after the arrival are told
 * apart from those before it: a waiter of the phase takes at most the
 * arrival's count + 1 from it, which does not order the arriver's later
 * accesses (counts equal), and every sync chain from an access before the
 * arrival to a later one still makes the later count larger (Lamport).
 * ARRIVE_RELAXED (the share only): it counts and releases nothing, so it
 * brings no count and keeps its own; its lanes meet at the instruction (a
 * warp sync of them).  WAIT (the share only): the warp waits for the phase
 * its last arrival joined: as a waiter when that is still under way, else
 * it takes that phase's completion now (or nothing: it never arrived). */
static void on_barrier(fsm *f, const wr_barrier *br)
{
    uint32_t e;
    block_st *b;
    warp_st *w;
    locate(f, br->launch, br->block, br->warp, &e, &b, &w);
    uint32_t lanes = wr_barrier_lanes(br->active_mask);
    /* it acts again: what it waited for completed (under its own scope) */
    wr_barrier_wake_lazy(&b->bars, &f->bar_pool, br->warp, lanes, barrier_done, b);
    /* an mbarrier synchronizes as release/acquire through an object, which
     * this engine does not model (ENGINES.md): the warp acted, no more */
    if (br->scope == WR_BAR_MBARRIER)
        return;
    uint32_t threads = (uint32_t)__builtin_popcount(br->active_mask);
    if (br->scope == WR_BAR_BLOCK) {
        if (br->mode == WR_BARMODE_WAIT)
            return;   /* not a block barrier's (the format refuses it) */
        wr_barrier_arrive_lazy(&b->bars, &f->bar_pool, br->barrier_id & 15u, br->mode, br->warp,
                               lanes, threads, br->expected, w->bc, barrier_done, b);
    } else {
        if (!b->cross)
            b->cross = wr_pool_get(&f->cross_pool);
        if (br->mode == WR_BARMODE_WAIT) {
            if (!wr_barrier_wait_lazy(&b->bars, &f->bar_pool, WR_BAR_SHARE, br->warp, lanes,
                                      barrier_done, b) &&
                wr_cross_wait_late(b->cross, br->warp)) {
                uint32_t m = b->cross->done_stamp;
                w->bc = m > w->bc + 1u ? m : w->bc + 1u;
            }
            return;
        }
        uint32_t expected = wr_cross_arrive(
            b->cross, br, wr_launch_geo_threads(wr_launch_geos_get(&f->geo, br->launch)));
        wr_barrier_arrive_lazy(&b->bars, &f->bar_pool, WR_BAR_SHARE, br->mode, br->warp, lanes,
                               threads, expected, w->bc, barrier_done, b);
    }
    if (br->mode == WR_BARMODE_ARRIVE)
        w->bc++;
    else if (br->mode == WR_BARMODE_ARRIVE_RELAXED)
        warp_sync_lanes(f, w, br->active_mask);
}

/* Was the access `old` stored (of block X, in the current epoch) made
 * before X arrived at a cluster or grid barrier that the current warp has
 * passed, one that gathers both blocks and released X's accesses
 * (barriers.h, wr_cross_before)?  Then every access of X's history (a
 * state of one block's accesses) is ordered before the current one, as if
 * a kernel boundary lay between them.  False where that cannot be told:
 * block ids folded (grids of WR_FSM_HOST_BLOCK blocks or more), a launch
 * never announced.  X may have exited: its history was kept.  (The current access: warp `warp` of
 * block `block` of `launch`.) */
static bool block_ordered(fsm *f, uint32_t epoch, uint32_t launch, uint32_t block, uint32_t warp,
                          uint64_t old)
{
    uint32_t x = wr_fsm_block(old);
    const wr_launch_geo *g = launch ? wr_launch_geos_get(&f->geo, launch) : NULL;
    if (x == WR_FSM_HOST_BLOCK || !g || wr_launch_geo_blocks(g) >= WR_FSM_HOST_BLOCK)
        return false;
    const block_st *bx = block_find(f, epoch, x, false);
    const block_st *by = block_find(f, epoch, block, false);
    if (!by)
        return false;
    const wr_cross_bars *cx = bx ? bx->cross : wr_blockstate_kept(&f->bs, epoch, x);
    return wr_cross_before(cx, by->cross, warp, wr_launch_geo_same_cluster(g, x, block),
                           wr_fsm_bc(old), 0x7ffu);
}

/* __syncwarp(mask) of warp w: the lanes in mask take the largest of their
 * warp-sync counts, plus one. */
static void warp_sync_lanes(fsm *f, warp_st *w, uint32_t mask)
{
    if (!mask)
        return;
    if (mask == WR_FULL_MASK && !w->wcl) {
        w->wc++;
        return;
    }
    if (!w->wcl) {
        w->wcl = wr_pool_get(&f->lanes_pool);
        for (unsigned i = 0; i < 32; i++)
            w->wcl[i] = w->wc;
    }
    uint32_t m = 0;
    for (uint32_t x = mask; x; x &= x - 1)
        if (w->wcl[__builtin_ctz(x)] > m)
            m = w->wcl[__builtin_ctz(x)];
    for (uint32_t x = mask; x; x &= x - 1)
        w->wcl[__builtin_ctz(x)] = m + 1;
}

static void on_warp_sync(fsm *f, const wr_warp_sync *s)
{
    uint32_t e;
    block_st *b;
    warp_st *w;
    locate(f, s->launch, s->block, s->warp, &e, &b, &w);
    warp_sync_lanes(f, w, s->mask);
}

/* ---- races ---- */

static unsigned state_scope_class(unsigned st)
{
    switch (st) {
    case 4: case 10: case 12: case 19: case 20:  /* BREAD B_MR_BSYNC BATOM_B GATOM_B BSYNC_ATOM_B */
        return WR_CLASS_INTER_WARP;
    case 5: case 16:                             /* GREAD GATOM_G */
        return WR_CLASS_INTER_BLOCK;
    default:
        return WR_CLASS_INTRA_WARP;
    }
}

static unsigned state_kind(unsigned st)
{
    switch (st) {
    case 1: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11:
        return WR_KIND_READ;
    case 2:
        return WR_KIND_WRITE;
    default:
        return WR_KIND_ATOMIC;
    }
}

static uint8_t access_kind(unsigned acc)
{
    return acc == WR_FSM_ACC_R ? WR_KIND_READ : acc == WR_FSM_ACC_W ? WR_KIND_WRITE : WR_KIND_ATOMIC;
}

/* The stored accessor of `old`, of epoch old_epoch, for the current access
 * by `lane`: an earlier lane of the current instruction (the word keeps
 * the last accessor, so if that lane touched the word in this instruction,
 * this instruction is what the word keeps) when the instruction writes,
 * or an access its warp's ring still holds, or failing that an older
 * instruction of the warp (access_ring.h), or unknown (site 0, trace
 * position 0).  A load's own earlier lane would name a read/read pair,
 * no conflict: what the load conflicts with is in the state's history,
 * and the ring's entry for that lane is the better guess.  For a load the
 * ring's reads are passed over for the same reason (a thread that wrote
 * the word, then read it: the state is still WRITE, the read is not what
 * the load races with). */
static void fill_first(fsm *f, wr_race_access *a, uint64_t old, uint32_t old_epoch,
                       const cur_ctx *c, unsigned lane, uint64_t addr)
{
    /* A byte cell (addr: its byte) keeps the last accessor of its byte;
     * the ring is searched by word: it may name the stored thread's access
     * of another byte of the word. */
    uint64_t word_addr = addr & ~3ull;
    unsigned bf = wr_fsm_block(old);
    bool host = bf == WR_FSM_HOST_BLOCK;
    a->launch = host ? 0 : wr_epochs_launch_of(f->ep, old_epoch);
    a->block = host ? UINT32_MAX : bf;
    a->warp = host ? UINT32_MAX : wr_fsm_warp(old);
    a->lane = host ? UINT32_MAX : wr_fsm_lane(old);
    a->kind = (uint8_t)state_kind(wr_fsm_state(old));
    a->site = 0;
    a->seq = 0;
    if (c->a && c->acc != WR_FSM_ACC_R && !host && old_epoch == c->epoch &&
        bf == wr_fsm_fold_block(c->block) &&
        wr_fsm_warp(old) == (c->warp & 31u) && wr_fsm_lane(old) < lane &&
        (f->bytes.on ? wr_access_lane_touches_byte(c->a, wr_fsm_lane(old), addr)
                     : wr_access_lane_touches(c->a, wr_fsm_lane(old), addr))) {
        a->site = c->site;
        a->seq = c->seq;
        a->kind = access_kind(c->acc);
        return;
    }
    /* A load races with writes and atomics: reads are passed over.  A
     * device-scope atomic races with plain accesses only: the warp's
     * atomics are passed over while a plain access is there to name (a
     * store, then an atomic of the same thread, then another block's
     * atomic: the store is what the last one races with, not the atomic
     * before it, which named an atomic/atomic pair). */
    unsigned skip = c->acc == WR_FSM_ACC_R ? 1u << WR_KIND_READ : 0;
    uint32_t rblock = host ? UINT32_MAX : bf, rwarp = host ? 0 : wr_fsm_warp(old);
    unsigned rlane = host ? 0 : wr_fsm_lane(old);
    bool owner = bf == wr_fsm_fold_block(c->owner);
    const wr_ring_ent *r = NULL;
    if (c->acc == WR_FSM_ACC_GA)
        r = wr_blockstate_find_word_access(&f->bs, old_epoch, rblock, rwarp, rlane, c->space,
                                           c->owner, owner, word_addr, c->seq, 0,
                                           1u << WR_KIND_ATOMIC);
    if (!r)
        r = wr_blockstate_find_word_access(&f->bs, old_epoch, rblock, rwarp, rlane, c->space,
                                           c->owner, owner, word_addr, c->seq, 0, skip);
    if (r) {
        a->site = r->site;
        a->seq = wr_ring_seq(r, c->seq);
        a->kind = wr_ring_kind(r);
    }
    /* A load races only with a write: when the stored accessor read and no
     * write of its is kept, what the load races with is a write the state
     * summarises (a block's write, then its reads after a barrier, then
     * another block's read), not kept: named as a write, site and position
     * unknown, never as a read/read pair. */
    if (c->acc == WR_FSM_ACC_R && a->kind == WR_KIND_READ)
        a->kind = WR_KIND_WRITE;
}

/* Has this lane's access of a split word reported this race already, on
 * another byte (fsm.bytes)?  If not, it is noted. */
static bool reported_on_word(fsm *f, const wr_race *r)
{
    for (unsigned i = 0; i < f->bytes.n; i++)
        if (f->bytes.first[i].site == r->first.site && f->bytes.first[i].kind == r->first.kind &&
            f->bytes.first[i].launch == r->first.launch && f->bytes.race_class[i] == r->race_class)
            return true;
    if (f->bytes.n < 4) {
        f->bytes.first[f->bytes.n] = r->first;
        f->bytes.race_class[f->bytes.n++] = r->race_class;
    }
    return false;
}

/* addr: the cell's word address, or a byte cell's byte (the example). */
static void report(fsm *f, const cur_ctx *c, uint64_t old, uint32_t old_epoch, unsigned rel,
                   unsigned lane, uint64_t addr)
{
    wr_race r;
    memset(&r, 0, sizeof r);
    r.engine = f->cfg.engine_index;
    r.verdict = WR_VERDICT_NONE;
    r.potential = 0;
    bool host = wr_fsm_block(old) == WR_FSM_HOST_BLOCK || c->launch == 0;
    if (old_epoch != c->epoch || host) {
        r.race_class = WR_CLASS_INTER_KERNEL;
    } else {
        unsigned rc = rel == WR_FSM_REL_G ? WR_CLASS_INTER_BLOCK
                      : rel == WR_FSM_REL_B ? WR_CLASS_INTER_WARP : WR_CLASS_INTRA_WARP;
        unsigned sc = state_scope_class(wr_fsm_state(old));
        r.race_class = (uint8_t)(rc > sc ? rc : sc);
    }
    fill_first(f, &r.first, old, old_epoch, c, lane, addr);
    r.second.site = c->site;
    r.second.kind = access_kind(c->acc);
    r.second.launch = c->launch;
    r.second.block = c->block;
    r.second.warp = c->warp;
    r.second.lane = c->launch ? lane : UINT32_MAX;
    r.second.seq = c->seq;
    wr_race_set_word(&r, c->space, c->owner, addr,
                     c->owner != c->block || wr_fsm_block(old) != wr_fsm_fold_block(c->owner));
    if (f->bytes.on && reported_on_word(f, &r))
        return;
    if (f->cfg.findings)
        wr_findings_report(f->cfg.findings, &r);
}

/* ---- pages and epochs ---- */

/* The cells of p (a page of map m) whose epochs sw drops, made INIT. */
static void sweep_cells(fsm *f, wr_shadow_map *m, wr_shadow_page *p, wr_epochs_sweep *sw)
{
    uint64_t dropped = 0;
    for (unsigned l = 0; l < WR_SHADOW_LINES; l++) {
        if (wr_shadow_line_packed(p, l)) {
            uint64_t *rep = wr_shadow_line_rep(m, p, l);
            if (*rep && wr_epochs_sweep_drops(sw, wr_fsm_tag(*rep))) {   /* the tag is the same in all 32 */
                *rep = 0;
                dropped += WR_SHADOW_LINE_WORDS;
            }
            continue;
        }
        uint64_t *cells = wr_shadow_cells_at(m, p, (uint64_t)l << WR_SHADOW_LINE_SHIFT);
        for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
            if (cells[i] && wr_epochs_sweep_drops(sw, wr_fsm_tag(cells[i]))) {
                cells[i] = 0;
                dropped++;
            }
    }
    wr_shadow_live_sub(p, &f->live, dropped);
}

/* A newer epoch touches the page: the words wr_epochs_sweep_drops names
 * become INIT (epochs.h: settled, or more than 255 epochs old).  A page's
 * user3 bounds the epochs of its words from below (page_for), so a page
 * whose epochs all drop is cleared whole. */
static void sweep(fsm *f, wr_shadow_page *p, uint32_t epoch)
{
    wr_epochs_sweep sw;
    wr_epochs_sweep_begin(&sw, f->ep, (uint32_t)p->user, epoch);
    /* the byte cells of p's split words carry p's epochs (touch_bytes) */
    wr_shadow_page *bp[4];
    unsigned nb = wr_shadow_byte_pages(f->map, p, bp);
    if (wr_epochs_sweep_drops_all(&sw, p->user3)) {
        wr_shadow_drop_live(f->map, p, &f->live);
        for (unsigned k = 0; k < nb; k++)
            wr_shadow_drop_live(f->map->bytes, bp[k], &f->live);
        p->user = p->user3 = epoch;
        return;
    }
    sweep_cells(f, f->map, p, &sw);
    for (unsigned k = 0; k < nb; k++)
        sweep_cells(f, f->map->bytes, bp[k], &sw);
    p->user = epoch;
    p->user3 = wr_epochs_sweep_oldest_kept(&sw);
}

/* Lists a block's shared page, once, for dropping at the block's end. */
static __attribute__((noinline)) void note_shared_page(fsm *f, block_st *b, wr_shadow_page *p, uint64_t key)
{
    p->user2 |= FSM_PAGE_LISTED;
    f->blocks_with_shared += !b->shared_keys;
    if (b->nshared == b->capshared) {
        b->capshared = b->capshared ? b->capshared * 2 : 4;
        b->shared_keys = xrealloc(b->shared_keys, b->capshared * sizeof *b->shared_keys);
    }
    b->shared_keys[b->nshared++] = key;
}

/* `scattered`: a gather's lane (wr_shadow_get_scattered).  Inlined into
 * the lane loops: the call was a tenth of fsm's instructions on a gather. */
static inline __attribute__((always_inline)) wr_shadow_page *
page_for(fsm *f, uint8_t space, uint32_t launch, block_st *b, uint64_t word, uint32_t epoch,
         bool scattered)
{
    uint64_t key = wr_shadow_key(space, launch, b ? b->head.block : 0, word);
    wr_shadow_page *p = scattered ? wr_shadow_get_scattered(f->map, key) : wr_shadow_get(f->map, key);
    if (__builtin_expect(epoch != f->pc_epoch, 0)) {
        f->pc_epoch = epoch;
        pc_forget(f);
    }
    if (wr_epochs_page_enter(&p->user, &p->user3, epoch))
        sweep(f, p, epoch);
    if (space == WR_SPACE_SHARED && !(p->user2 & FSM_PAGE_LISTED) && b)
        note_shared_page(f, b, p, key);
    return p;
}

/* The slow path of one cell: another epoch's word, or a race.  With
 * `races` not NULL nothing is reported: *races says whether it would be.
 * p: the word's page (its epochs name the cell's tag); addr as report's. */
static uint64_t step_slow(fsm *f, const cur_ctx *c, wr_shadow_page *p, uint64_t old, uint64_t cur,
                          unsigned lane, uint64_t addr, bool *races)
{
    uint32_t old_epoch = c->epoch;
    unsigned rel, sync;
    if (old && wr_fsm_tag(old) != (c->epoch & 0xffu)) {
        old_epoch = wr_epochs_of_tag((uint32_t)p->user, wr_fsm_tag(old));
        if (wr_epochs_ordered(f->ep, old_epoch, c->epoch))
            old = 0;
        rel = WR_FSM_REL_G;   /* concurrent launches / copies */
        sync = WR_FSM_SYNC_U;
    } else {
        rel = wr_fsm_relation(old, cur);
        sync = wr_fsm_sync(old, cur);
    }
    unsigned st = wr_fsm_state(old);
    unsigned next = wr_fsm25_next[st][c->acc][sync][rel];
    /* two blocks a cluster or grid barrier ordered: the table has no such
     * barrier, so the word starts again, as at a kernel boundary, where its
     * history is of one block */
    if (next == WR_FSM25_RACE && st != WR_FSM25_RACE && old_epoch == c->epoch &&
        rel == WR_FSM_REL_G && state_scope_class(st) != WR_CLASS_INTER_BLOCK && c->launch &&
        block_ordered(f, c->epoch, c->launch, c->block, c->warp, old)) {
        old = 0;
        st = WR_FSM25_INIT;
        next = wr_fsm25_next[st][c->acc][sync][rel];
    }
    bool race = next == WR_FSM25_RACE && st != WR_FSM25_RACE;
    if (races)
        *races = race;
    else if (race)
        report(f, c, old, old_epoch, rel, lane, addr);
    return cur | next;
}

/* The next state of a cell of page p (a word's, or a byte's of a word of
 * p) that holds `old`, reporting a race. */
static inline uint64_t step_cell(fsm *f, const cur_ctx *c, wr_shadow_page *p, uint64_t old,
                                 uint64_t cur, unsigned lane, uint64_t addr)
{
    if ((old ^ cur) & (0xffull << WR_FSM_TAG_SHIFT) && old)
        return step_slow(f, c, p, old, cur, lane, addr, NULL);
    uint64_t nw = wr_fsm_step(old, cur, c->acc);
    if (wr_fsm_state(nw) == WR_FSM25_RACE && wr_fsm_state(old) != WR_FSM25_RACE)
        nw = step_slow(f, c, p, old, cur, lane, addr, NULL);
    return nw;
}

static inline void touch_cell(fsm *f, const cur_ctx *c, wr_shadow_page *p, uint64_t *cell,
                              uint64_t cur, unsigned lane, uint64_t word)
{
    uint64_t old = *cell;
    *cell = step_cell(f, c, p, old, cur, lane, word << WR_WORD_SHIFT);
    wr_shadow_live_add(p, &f->live, !old);   /* no transition leads to INIT: nw != 0 */
}

/* A word's four byte cells from its cell (on byte page bp): each byte's
 * history is the word's (the cell owns nothing elsewhere).  The word's
 * live count moves to its bytes' page, and the page cache forgets, as a
 * gather must not take the word page's cells any more (gather_resolve).
 * The byte cells' epoch tags are the word page's (sweep sweeps them with
 * it). */
typedef struct split_ctx {
    fsm *f;
    wr_shadow_page *p;   /* the word's page */
} split_ctx;

static void split_word(void *byte_cells, const void *word_cell, wr_shadow_page *bp, void *ctx)
{
    const split_ctx *x = ctx;
    uint64_t v = *(const uint64_t *)word_cell;
    uint64_t *bc = byte_cells;
    for (unsigned i = 0; i < 4; i++)
        bc[i] = v;
    if (v) {
        wr_shadow_live_sub(x->p, &x->f->live, 1);
        wr_shadow_live_add(bp, &x->f->live, 4);
    }
    pc_forget(x->f);
}

/* The bytes [addr, addr + size) of word `word` of page p (a part of it, or
 * all of a split word) stepped, each byte's cell as the word's would be. */
static __attribute__((noinline)) void touch_bytes(fsm *f, const cur_ctx *c, wr_shadow_page *p,
                                                  uint64_t cur, unsigned lane, uint64_t word,
                                                  uint64_t addr, unsigned size)
{
    uint64_t w0 = word << WR_WORD_SHIFT;
    uint64_t lo = addr > w0 ? addr : w0, hi = addr + size < w0 + 4 ? addr + size : w0 + 4;
    split_ctx x = {f, p};
    wr_shadow_page *bp;
    uint64_t *cells = wr_shadow_byte_cells(f->map, p, word, split_word, &x, &bp);
    f->bytes.on = true;
    f->bytes.n = 0;
    uint32_t born = 0;
    for (uint64_t ad = lo; ad < hi; ad++) {
        uint64_t old = cells[ad - w0];
        cells[ad - w0] = step_cell(f, c, p, old, cur, lane, ad);
        born += !old;
    }
    f->bytes.on = false;
    wr_shadow_live_add(bp, &f->live, born);
}

/* The part of the bytes [addr, addr + size) (a lane's access, or a host
 * copy's bytes within the word) in word `word` of page p, stepped: its
 * cell, or its byte cells where the access covers part of it or it is
 * split. */
static inline void touch_word(fsm *f, const cur_ctx *c, wr_shadow_page *p, uint64_t cur,
                              unsigned lane, uint64_t word, uint64_t addr, unsigned size)
{
    if (__builtin_expect(wr_shadow_partial_word(addr, addr + size, word) ||
                             wr_shadow_word_split(p, word),
                         0))
        touch_bytes(f, c, p, cur, lane, word, addr, size);
    else
        touch_cell(f, c, p, (uint64_t *)wr_shadow_cell(f->map, p, word), cur, lane, word);
}

/* One word of a uniform segment; *memo_canon / *memo_next take the answer
 * of a table lookup that reports nothing.  Returns 1 for a word born. */
static inline uint32_t uniform_word(fsm *f, const cur_ctx *c, wr_shadow_page *sp, uint64_t *cells,
                                    uint64_t w0, unsigned ln, uint64_t cur_uniform,
                                    uint64_t init_next, uint64_t *memo_canon, uint64_t *memo_next)
{
    uint64_t lanebits = (uint64_t)ln << WR_FSM_LANE_SHIFT;
    uint64_t cur = cur_uniform | lanebits;
    uint64_t *cell = &cells[(w0 + ln) & WR_SHADOW_PAGE_MASK];
    uint64_t old = *cell;
    if (!old) {
        *cell = cur | init_next;
        return 1;
    }
    /* the lane field minus ln, in place: nothing below it borrows */
    const uint64_t field = 31ull << WR_FSM_LANE_SHIFT;
    uint64_t canon = (old & ~field) | ((old - lanebits) & field);
    if (canon == *memo_canon) {
        *cell = cur | *memo_next;
        return 0;
    }
    uint64_t nw;
    if ((old ^ cur) & (0xffull << WR_FSM_TAG_SHIFT)) {
        nw = step_slow(f, c, sp, old, cur, ln, (w0 + ln) << WR_WORD_SHIFT, NULL);
    } else {
        nw = wr_fsm_step(old, cur, c->acc);
        if (wr_fsm_state(nw) == WR_FSM25_RACE && wr_fsm_state(old) != WR_FSM25_RACE) {
            nw = step_slow(f, c, sp, old, cur, ln, (w0 + ln) << WR_WORD_SHIFT, NULL);
        } else {
            *memo_canon = canon;
            *memo_next = nw & WR_FSM_STATE_MASK;
        }
    }
    *cell = nw;
    return 0;
}

/* The words of a coalesced access whose lanes share one sync state (no
 * per-lane warp-sync counts): cur differs between lanes only in the lane
 * field, so the table's answer depends on the old word with its lane
 * replaced by (old lane - current lane) mod 32 -- the relation only asks
 * whether the lanes are equal, and the tag, state and counts do not hold
 * them.  Neighbouring words last touched by one instruction of the same
 * shape, at any lane offset (a loop over an array, a stencil's +-1
 * neighbours), share that key, and a one-entry memo of the answer replaces
 * the relation, sync and table lookup. */
__attribute__((noinline)) static void uniform_segment(fsm *f, const cur_ctx *c, wr_shadow_page *sp, uint64_t *cells,
                                   uint64_t w0, uint32_t segmask, uint64_t cur_uniform)
{
    const uint64_t init_next = wr_fsm25_next[WR_FSM25_INIT][c->acc][0][0];
    uint64_t memo_canon = 0, memo_next = 0;   /* canon is never 0 for a live word */
    uint32_t born = 0;
    for (uint32_t x = segmask; x; x &= x - 1)
        born += uniform_word(f, c, sp, cells, w0, (unsigned)__builtin_ctz(x), cur_uniform, init_next,
                             &memo_canon, &memo_next);
    wr_shadow_live_add(sp, &f->live, born);
}

#if WR_SHADOW_AVX2
/* uniform_segment four lanes at a time.  A group of four lanes inside the
 * segment's word range (expanded, in one page) is one load: the active
 * lanes whose canon key is the memo's take the memo's answer in one store,
 * the others go through uniform_word as before (in lane order, so the memo
 * moves as it would).  A dead word (old 0) has a canon of lane bits only,
 * never a live word's, so it is never answered from the memo.  Every
 * word's answer is a function of its canon key alone, so the order in
 * which the words of a segment are answered does not change them. */
__attribute__((noinline, target("avx2"))) static void
uniform_segment_avx2(fsm *f, const cur_ctx *c, wr_shadow_page *sp, uint64_t *cells, uint64_t w0,
                     uint32_t segmask, uint64_t cur_uniform)
{
    const uint64_t init_next = wr_fsm25_next[WR_FSM25_INIT][c->acc][0][0];
    uint64_t memo_canon = 0, memo_next = 0;
    uint32_t born = 0;
    const __m256i field4 = _mm256_set1_epi64x((long long)(31ull << WR_FSM_LANE_SHIFT));
    const __m256i lanes4 = _mm256_setr_epi64x(0, 1ll << WR_FSM_LANE_SHIFT, 2ll << WR_FSM_LANE_SHIFT,
                                              3ll << WR_FSM_LANE_SHIFT);
    unsigned lo = (unsigned)__builtin_ctz(segmask), hi = 31u - (unsigned)__builtin_clz(segmask);
    for (unsigned g = lo & ~3u; g <= hi; g += 4) {
        uint32_t m4 = (segmask >> g) & 15u;
        if (memo_canon && g >= lo && g + 3 <= hi) {
            __m256i *p = (__m256i *)&cells[(w0 + g) & WR_SHADOW_PAGE_MASK];
            __m256i old = _mm256_loadu_si256(p);
            __m256i lb = _mm256_add_epi64(lanes4, _mm256_set1_epi64x((long long)g << WR_FSM_LANE_SHIFT));
            __m256i canon = _mm256_or_si256(_mm256_andnot_si256(field4, old),
                                            _mm256_and_si256(_mm256_sub_epi64(old, lb), field4));
            __m256i eq = _mm256_cmpeq_epi64(canon, _mm256_set1_epi64x((long long)memo_canon));
            uint32_t hits = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(eq)) & m4;
            if (hits) {
                __m256i nw = _mm256_or_si256(_mm256_set1_epi64x((long long)(cur_uniform | memo_next)), lb);
                wr_shadow_store4(p, old, nw, hits);
                m4 &= ~hits;
            }
        }
        for (uint32_t x = m4; x; x &= x - 1)
            born += uniform_word(f, c, sp, cells, w0, g + (unsigned)__builtin_ctz(x), cur_uniform,
                                 init_next, &memo_canon, &memo_next);
    }
    wr_shadow_live_add(sp, &f->live, born);
}
#endif

/* A whole packed line under a full-mask aligned access whose lanes share
 * one sync state: the lane-0 word's step, kept packed.  Returns false,
 * changing nothing, when the step reports (each word then reports its own
 * lane: the caller expands the line). */
static bool packed_line_step(fsm *f, const cur_ctx *c, wr_shadow_page *sp, unsigned line,
                             uint64_t cur_uniform)
{
    uint64_t *rep = wr_shadow_line_rep(f->map, sp, line);
    uint64_t old = *rep;
    if (!old) {
        *rep = cur_uniform | wr_fsm25_next[WR_FSM25_INIT][c->acc][0][0];
        wr_shadow_live_add(sp, &f->live, WR_SHADOW_LINE_WORDS);
        return true;
    }
    uint64_t nw;
    bool races = false;
    if ((old ^ cur_uniform) & (0xffull << WR_FSM_TAG_SHIFT)) {
        nw = step_slow(f, c, sp, old, cur_uniform, 0, 0, &races);   /* no report: no word */
    } else {
        nw = wr_fsm_step(old, cur_uniform, c->acc);
        races = wr_fsm_state(nw) == WR_FSM25_RACE && wr_fsm_state(old) != WR_FSM25_RACE;
    }
    if (races)
        return false;
    *rep = nw;
    return true;
}

typedef struct lane_page_ctx {
    fsm *f;
    const wr_access *a;
    block_st *b;
    uint32_t epoch;
} lane_page_ctx;

static wr_shadow_page *lane_page(void *ctx, uint64_t word)
{
    lane_page_ctx *c = ctx;
    return page_for(c->f, c->a->space, c->a->launch, c->b, word, c->epoch, true);
}

static unsigned access_label(const wr_access *a)
{
    if (wr_op_is_atomic(a->op))
        return a->scope == WR_SCOPE_BLOCK ? WR_FSM_ACC_BA : WR_FSM_ACC_GA;
    return a->op == WR_OP_STORE ? WR_FSM_ACC_W : WR_FSM_ACC_R;
}

static inline __attribute__((always_inline)) void access_words(fsm *f, const cur_ctx *c, const wr_access *a, block_st *b,
                         const warp_st *w, unsigned size, const wr_shadow_lanes *vl);

static void on_dsmem_access(fsm *f, const wr_event *ev, cur_ctx *c, block_st *b, warp_st *w,
                            unsigned size);

/* ---- gathers and scatters ----
 * A vector access whose every active lane touches one whole word (size 4,
 * aligned) on a page without split words, not DSMEM: what
 * wr_shadow_vector_lanes and access_words' lane loop do, in fewer
 * instructions (callgrind, a 2 M gather trace: 140 -> 117 a lane in all of
 * fsm), its pages found through a page cache, and, in global memory, with
 * its words stepped one event late.  A gather's lanes land on unrelated
 * pages, each cell a cache miss: asked of the cache when the
 * access is seen (gather_resolve) and stepped right after (gather_step),
 * they were still on their way.  So the cells of a global gather are
 * asked for, its ring entry pushed and its step kept (fsm->pend) until
 * the next event: every event steps the kept access first, and a global
 * gather of the same launch asks for its own cells before that, so that
 * they come while the kept one is stepped.  What runs ahead of the kept
 * step is finding, creating and sweeping the new access's pages and
 * expanding their lines: in the same epoch none of that changes a word or
 * a page the kept access steps (its pages were entered in that epoch, so
 * none is swept again, and its lines are expanded), and the new access's
 * block, warp, barrier and ring state are touched only after the kept
 * step, as in trace order.  finish and shadow_words step what is kept. */

#if WR_SHADOW_AVX2
/* gather_shape's lane loop for a full warp, four lanes a step: whether a
 * lane crosses a word, and the lanes' lowest and highest address (unsigned
 * order, compared as signed with the top bit flipped). */
__attribute__((target("avx2"))) static bool full_warp_span_avx2(const uint64_t *la, unsigned size,
                                                              uint64_t *lo, uint64_t *hi)
{
    const __m256i flip = _mm256_set1_epi64x((long long)(1ull << 63));
    const __m256i three = _mm256_set1_epi64x(3), sz = _mm256_set1_epi64x(size);
    const __m256i four = _mm256_set1_epi64x(4);
    __m256i mn = _mm256_set1_epi64x(INT64_MAX), mx = _mm256_set1_epi64x(INT64_MIN);
    __m256i bad = _mm256_setzero_si256();
    for (unsigned i = 0; i < WR_WARP_SIZE; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(la + i));
        __m256i end = _mm256_add_epi64(_mm256_and_si256(v, three), sz);
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi64(end, four));
        __m256i b = _mm256_xor_si256(v, flip);
        mn = _mm256_blendv_epi8(mn, b, _mm256_cmpgt_epi64(mn, b));
        mx = _mm256_blendv_epi8(mx, b, _mm256_cmpgt_epi64(b, mx));
    }
    if (!_mm256_testz_si256(bad, bad))
        return false;
    int64_t m[4], x[4];
    _mm256_storeu_si256((__m256i *)(void *)m, mn);
    _mm256_storeu_si256((__m256i *)(void *)x, mx);
    int64_t l = m[0], h = x[0];
    for (unsigned k = 1; k < 4; k++) {
        l = m[k] < l ? m[k] : l;
        h = x[k] > h ? x[k] : h;
    }
    *lo = (uint64_t)l ^ (1ull << 63);
    *hi = (uint64_t)h ^ (1ull << 63);
    return true;
}
#endif

/* Is a such an access?  Then [*lo, *hi] are its lanes' bytes and *owned
 * the lanes of this shard (without a branch on each lane's shard: a shard
 * owns a random half of a gather's lanes). */
static inline bool gather_shape(const fsm *f, const wr_access *a, unsigned size, uint64_t *lo,
                                uint64_t *hi, uint32_t *owned)
{
    if (a->addr_mode != WR_ADDR_VECTOR || size != 4 || !a->active_mask)
        return false;   /* narrower: bytes of words (touch_bytes) */
    const uint64_t *la = a->lane_addr;
    uint64_t l = UINT64_MAX, h = 0;
#if WR_SHADOW_AVX2
    if (a->active_mask == WR_FULL_MASK && f->avx2) {
        if (!full_warp_span_avx2(la, size, &l, &h))
            return false;
    } else
#endif
    {
        bool bad = false;
        for (uint32_t x = a->active_mask; x; x &= x - 1) {
            uint64_t addr = la[__builtin_ctz(x)];
            bad |= (addr & 3u) + size > 4u;
            l = addr < l ? addr : l;
            h = addr > h ? addr : h;
        }
        if (bad)
            return false;
    }
    uint32_t own = a->active_mask;
    if (f->cfg.shards > 1)
        for (uint32_t x = a->active_mask; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            own &= ~((uint32_t)(wr_shard_of(a->space, a->launch, a->block, la[lane] & ~3ull,
                                            f->cfg.shards) != f->cfg.shard) << lane);
        }
    *lo = l;
    *hi = h + size - 1;
    *owned = own;
    return true;
}

/* The owned lanes' pages and cells (lines expanded), the cells asked of
 * the cache.  A lane whose page the page cache holds, made in this epoch
 * with the lane's line expanded, takes the page and cells from there: a
 * slot and a page header were two misses a lane, and page_for would
 * change nothing (its page was entered in this epoch and nothing entered
 * a page with another since, so page_enter is a no-op and no sweep is
 * due; a shared page was listed then).  Other lanes go through page_for
 * (found, created, swept, listed) in lane order and fill the entry.
 * False when a lane's page has split words (their bytes are stepped on
 * the general path): the cache holds only pages without, as a split
 * makes it forget (touch_bytes). */
static inline bool gather_resolve(fsm *f, const wr_access *a, block_st *b, uint32_t epoch,
                                  uint32_t owned, uint64_t **cells, wr_shadow_page **pages)
{
    const uint64_t *la = a->lane_addr;
    wr_shadow_map *m = f->map;
    if (epoch != f->pc_epoch) {
        f->pc_epoch = epoch;
        pc_forget(f);
    }
    if (__builtin_expect((m->count + WR_WARP_SIZE) * 2 > f->pc_cap, 0)) {
        size_t cap = f->pc_cap ? f->pc_cap : 512;
        while ((m->count + WR_WARP_SIZE) * 2 > cap)
            cap *= 2;
        free(f->pc);
        f->pc = xcalloc(cap, sizeof *f->pc);
        f->pc_cap = cap;
    }
    fsm_pc_ent *pc = f->pc;
    size_t pcmask = f->pc_cap - 1;
    uint32_t gen = f->pc_gen;
    uint32_t kblock = b ? b->head.block : 0;
    unsigned n = 0;
    uint64_t last_pn = UINT64_MAX;
    fsm_pc_ent *e = NULL;
    for (uint32_t x = owned; x; x &= x - 1) {
        uint64_t word = la[__builtin_ctz(x)] >> WR_WORD_SHIFT;
        uint64_t key = 0;
        if (word >> WR_SHADOW_PAGE_SHIFT != last_pn) {   /* else the previous lane's entry */
            last_pn = word >> WR_SHADOW_PAGE_SHIFT;
            key = wr_shadow_key(a->space, a->launch, kblock, word);
            e = &pc[(key ^ (key >> 14) ^ (key >> 46)) & pcmask];
            if (e->key != key || e->gen != gen)
                e = NULL;
        }
        if (__builtin_expect(!e || !((e->expanded >> wr_shadow_line_of(word)) & 1u), 0)) {
            key = wr_shadow_key(a->space, a->launch, kblock, word);
            e = &pc[(key ^ (key >> 14) ^ (key >> 46)) & pcmask];
            wr_shadow_page *p = page_for(f, a->space, a->launch, b, word, epoch, true);
            if (wr_shadow_page_split(p))
                return false;
            (void)wr_shadow_cell(m, p, word);
            gen = f->pc_gen;
            *e = (fsm_pc_ent){.key = key, .cells = (uint64_t *)(void *)p->cells, .page = p,
                              .expanded = p->expanded, .gen = gen};
        }
        uint64_t *cell = e->cells + (word & WR_SHADOW_PAGE_MASK);
        __builtin_prefetch(cell, 1);
        cells[n] = cell;
        pages[n++] = e->page;
    }
    return true;
}

/* The owned lanes' words stepped (c->a: the access, its lane addresses
 * kept); base and cur_uniform as access_words packs them, wcl the warp's
 * per-lane warp-sync counts or NULL. */
static inline void gather_step(fsm *f, const cur_ctx *c, uint32_t owned, uint64_t *const *cells,
                               wr_shadow_page *const *pages, uint64_t base, uint64_t cur_uniform,
                               const uint32_t *wcl)
{
    const uint64_t *la = c->a->lane_addr;
    const uint64_t tagmask = 0xffull << WR_FSM_TAG_SHIFT;
    unsigned acc = c->acc;
    uint64_t born = 0;
    unsigned i = 0;
    for (uint32_t x = owned; x; x &= x - 1, i++) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t cur = (wcl ? (base | ((uint64_t)(wcl[lane] & 0x3ffu) << WR_FSM_WC_SHIFT))
                            : cur_uniform) |
                       ((uint64_t)lane << WR_FSM_LANE_SHIFT);
        uint64_t *cell = cells[i];
        uint64_t old = *cell;
        uint64_t nw = wr_fsm_step(old, cur, acc);
        if (__builtin_expect(((old ^ cur) & tagmask) && old, 0) ||
            __builtin_expect(wr_fsm_state(nw) == WR_FSM25_RACE &&
                                 wr_fsm_state(old) != WR_FSM25_RACE, 0))
            nw = step_slow(f, c, pages[i], old, cur, lane, la[lane] & ~3ull, NULL);
        wr_shadow_live_add(pages[i], &born, !old);   /* no transition leads to INIT: nw != 0 */
        *cell = nw;
    }
    f->live += born;
}

/* Steps the kept gather (fsm->pend), if any. */
static void gather_flush(fsm *f)
{
    fsm_pending *pd = &f->pend[f->kept];
    if (!pd->on)
        return;
    pd->on = false;
    gather_step(f, &pd->c, pd->owned, pd->cells, pd->pages, pd->base, pd->cur_uniform, pd->wcl);
}

/* A gather being kept (fsm->pend[kept]) and the access a: when a is a
 * global gather of the kept one's launch (so of its epoch), its cells are
 * asked for first, into the other slot (true); then the kept one is
 * stepped. */
static __attribute__((noinline)) bool flush_before(fsm *f, const wr_access *a, unsigned size)
{
    const fsm_pending *kept = &f->pend[f->kept];
    fsm_pending *pd = &f->pend[f->kept ^ 1u];
    bool resolved = a->space == WR_SPACE_GLOBAL && a->launch == kept->c.launch &&
                    gather_shape(f, a, size, &pd->lo, &pd->hi, &pd->owned) &&
                    gather_resolve(f, a, NULL, kept->c.epoch, pd->owned, pd->cells, pd->pages);
    gather_flush(f);
    return resolved;
}

/* A gather whose cells gather_resolve found (into the free slot): its
 * ring entry, then its words stepped now (not global memory) or kept. */
static __attribute__((noinline)) void gather_access(fsm *f, const wr_event *ev, const cur_ctx *c,
                                                    warp_st *w)
{
    const wr_access *a = c->a;
    fsm_pending *pd = &f->pend[f->kept ^ 1u];
    wr_ring_push_span(&w->ring, &f->ring_pool, a, pd->lo, pd->hi, ev->seq, ev->site,
                      access_kind(c->acc));
    uint64_t base = wr_fsm_pack(0, c->epoch, 0, c->warp, wr_fsm_fold_block(c->block), w->bc, 0);
    uint64_t cur_uniform = base | ((uint64_t)(w->wc & 0x3ffu) << WR_FSM_WC_SHIFT);
    if (a->space != WR_SPACE_GLOBAL) {
        gather_step(f, c, pd->owned, pd->cells, pd->pages, base, cur_uniform, w->wcl);
        return;
    }
    pd->on = true;
    pd->acc = *a;
    memcpy(pd->lane_addr, a->lane_addr, sizeof pd->lane_addr);
    pd->acc.lane_addr = pd->lane_addr;
    pd->c = *c;
    pd->c.a = &pd->acc;
    pd->base = base;
    pd->cur_uniform = cur_uniform;
    pd->wcl = w->wcl;
    f->kept ^= 1u;
}

static void on_access(fsm *f, const wr_event *ev)
{
    const wr_access *a = &ev->u.access;
    unsigned size = a->size ? a->size : 4;
    bool resolved = f->pend[f->kept].on && flush_before(f, a, size);
    if (a->space == WR_SPACE_LOCAL || !a->active_mask)
        return;
    uint32_t epoch;
    block_st *b;
    warp_st *w;
    locate(f, a->launch, a->block, a->warp, &epoch, &b, &w);
    wr_barrier_wake_lazy(&b->bars, &f->bar_pool, a->warp, wr_barrier_lanes(a->active_mask),
                         barrier_done, b);

    cur_ctx c = {.a = a, .epoch = epoch, .launch = a->launch, .block = a->block, .warp = a->warp,
                 .seq = ev->seq, .site = ev->site, .space = a->space, .owner = a->block,
                 .acc = access_label(a)};

    if (a->space == WR_SPACE_DSMEM) {
        on_dsmem_access(f, ev, &c, b, w, size);
        return;
    }
    if (a->addr_mode == WR_ADDR_VECTOR) {
        fsm_pending *pd = &f->pend[f->kept ^ 1u];
        if (!resolved && gather_shape(f, a, size, &pd->lo, &pd->hi, &pd->owned))
            resolved = gather_resolve(f, a, b, epoch, pd->owned, pd->cells, pd->pages);
        if (resolved) {
            gather_access(f, ev, &c, w);
            return;
        }
    }
    /* a gather / scatter's cells, resolved once (and their misses
     * overlapped) for both the ring's range and the lane loop */
    lane_page_ctx lpc = {f, a, b, epoch};
    wr_shadow_lanes vl;
    bool vector = wr_shadow_vector_lanes(a, size, f->map, f->cfg.shard, f->cfg.shards, lane_page,
                                         &lpc, &vl);
    /* remember the access for reports */
    if (vector)
        wr_ring_push_span(&w->ring, &f->ring_pool, a, vl.lo, vl.hi, ev->seq, ev->site,
                          access_kind(c.acc));
    else
        wr_ring_push_access(&w->ring, &f->ring_pool, a, size, ev->seq, ev->site,
                            access_kind(c.acc));
    access_words(f, &c, a, b, w, size, vector ? &vl : NULL);
}

/* A DSMEM access: the ring names it as the trace does (find_word_access);
 * its words are each owner's, as the owner's own shared accesses name
 * them, and their pages are listed with the owner's block (engine.h). */
static __attribute__((noinline)) void on_dsmem_access(fsm *f, const wr_event *ev, cur_ctx *c,
                                                      block_st *b, warp_st *w, unsigned size)
{
    const wr_access *a = &ev->u.access;
    wr_ring_push_access(&w->ring, &f->ring_pool, a, size, ev->seq, ev->site, access_kind(c->acc));
    wr_dsmem_parts parts;
    wr_dsmem_parts_begin(&parts, a);
    while (wr_dsmem_next_part(&parts)) {
        const wr_access *m = &parts.part;
        block_st *ob = m->block == a->block ? b : block_find(f, c->epoch, m->block, true);
        c->a = m;
        c->space = m->space;
        c->owner = m->block;
        lane_page_ctx lpc = {f, m, ob, c->epoch};
        wr_shadow_lanes vl;
        bool vector = wr_shadow_vector_lanes(m, size, f->map, f->cfg.shard, f->cfg.shards,
                                             lane_page, &lpc, &vl);
        access_words(f, c, m, ob, w, size, vector ? &vl : NULL);
    }
}

/* The words of access a (a DSMEM access's part: b is the words' owner's
 * block, which lists its shared pages) stepped for the current access;
 * vl: its lanes' cells when wr_shadow_vector_lanes resolved them. */
static inline __attribute__((always_inline)) void access_words(fsm *f, const cur_ctx *c, const wr_access *a, block_st *b,
                         const warp_st *w, unsigned size, const wr_shadow_lanes *vl)
{
    uint32_t epoch = c->epoch;
    uint64_t base = wr_fsm_pack(0, epoch, 0, c->warp, wr_fsm_fold_block(c->block), w->bc, 0);
    const uint32_t *wcl = w->wcl;
    uint64_t cur_uniform = base | ((uint64_t)(w->wc & 0x3ffu) << WR_FSM_WC_SHIFT);
    uint32_t shards = f->cfg.shards, shard = f->cfg.shard;

    /* Fast path: a 4-byte-per-lane access with consecutive words (lane i at
     * word w0 + i): split at shard-run boundaries (WR_SHARD_RUN_SHIFT, which
     * also never straddles a page), then one tight loop per segment. */
    if (a->addr_mode == WR_ADDR_STRIDED && size == 4 && a->stride == 4 && !(a->base & 3u)) {
        uint64_t w0 = a->base >> WR_WORD_SHIFT;
        uint32_t mask = a->active_mask;
        while (mask) {
            unsigned lane = (unsigned)__builtin_ctz(mask);
            uint64_t seg = (w0 + lane) >> WR_SHARD_RUN_SHIFT;
            unsigned end = (unsigned)(((seg + 1) << WR_SHARD_RUN_SHIFT) - w0); /* first lane of the next run */
            uint32_t segmask = end >= 32 ? mask : mask & ((1u << end) - 1u);
            mask &= ~segmask;
            if (wr_shard_of(a->space, a->launch, a->block, (w0 + lane) << WR_WORD_SHIFT, shards) != shard)
                continue;
            wr_shadow_page *sp = page_for(f, a->space, a->launch, b, w0 + lane, epoch, false);
            if (!wcl && !wr_shadow_page_split(sp)) {
                if (wr_shadow_packed_whole_line(sp, w0, segmask) &&
                    packed_line_step(f, c, sp, wr_shadow_line_of(w0), cur_uniform))
                    continue;
                wr_shadow_expand_range(f->map, sp, w0 + lane,
                                       w0 + 31u - (unsigned)__builtin_clz(segmask));
                uint64_t *cells = wr_shadow_cells_at(f->map, sp, 0);
#if WR_SHADOW_AVX2
                if (f->avx2)
                    uniform_segment_avx2(f, c, sp, cells, w0, segmask, cur_uniform);
                else
#endif
                    uniform_segment(f, c, sp, cells, w0, segmask, cur_uniform);
                continue;
            }
            /* per-lane counts, or split words (their byte cells): word by word */
            for (uint32_t x = segmask; x; x &= x - 1) {
                unsigned ln = (unsigned)__builtin_ctz(x);
                uint64_t wd = w0 + ln;
                uint64_t cur = (wcl ? (base | ((uint64_t)(wcl[ln] & 0x3ffu) << WR_FSM_WC_SHIFT))
                                    : cur_uniform) |
                               ((uint64_t)ln << WR_FSM_LANE_SHIFT);
                touch_word(f, c, sp, cur, ln, wd, wd << WR_WORD_SHIFT, 4);
            }
        }
        return;
    }

    if (vl) {
        for (unsigned i = 0; i < vl->n; i++) {
            const wr_shadow_lane *l = &vl->l[i];
            uint64_t cur = (wcl ? (base | ((uint64_t)(wcl[l->lane] & 0x3ffu) << WR_FSM_WC_SHIFT))
                                : cur_uniform) |
                           ((uint64_t)l->lane << WR_FSM_LANE_SHIFT);
            touch_cell(f, c, l->page, l->cell, cur, l->lane, l->word);
        }
        return;
    }

    uint64_t run = UINT64_MAX;
    bool run_ok = false;
    uint64_t pn = UINT64_MAX;
    wr_shadow_page *p = NULL;

    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t ad = wr_access_lane_addr(a, lane);
        uint64_t w0 = ad >> WR_WORD_SHIFT, w1 = (ad + size - 1) >> WR_WORD_SHIFT;
        uint64_t cur = (wcl ? (base | ((uint64_t)(wcl[lane] & 0x3ffu) << WR_FSM_WC_SHIFT)) : cur_uniform) |
                       ((uint64_t)lane << WR_FSM_LANE_SHIFT);
        for (uint64_t wd = w0; wd <= w1; wd++) {
            if ((wd >> WR_SHARD_RUN_SHIFT) != run) {
                run = wd >> WR_SHARD_RUN_SHIFT;
                run_ok = wr_shard_of(a->space, a->launch, a->block, wd << WR_WORD_SHIFT, shards) == shard;
            }
            if (!run_ok)
                continue;
            if ((wd >> WR_SHADOW_PAGE_SHIFT) != pn) {
                pn = wd >> WR_SHADOW_PAGE_SHIFT;
                p = page_for(f, a->space, a->launch, b, wd, epoch, false);
            }
            touch_word(f, c, p, cur, lane, wd, ad, size);
        }
    }
}

/* A host copy: the host reads the source and/or writes the destination. */
static void host_range(fsm *f, cur_ctx *c, block_st *b, uint64_t addr, uint64_t bytes)
{
    if (!bytes)
        return;
    warp_st *w = warp_of(f, b, 0);
    wr_ring_push_range(&w->ring, &f->ring_pool, c->seq, addr, bytes, c->site, access_kind(c->acc));
    uint64_t cur = wr_fsm_pack(0, c->epoch, 0, 0, WR_FSM_HOST_BLOCK, 0, 0);
    uint64_t next = addr >> WR_WORD_SHIFT, last = (addr + bytes - 1) >> WR_WORD_SHIFT;
    uint64_t first, end;
    while (wr_next_owned_global_run(&next, last, f->cfg.shard, f->cfg.shards, &first, &end)) {
        wr_shadow_page *p = page_for(f, WR_SPACE_GLOBAL, 0, NULL, first, c->epoch, false);
        for (uint64_t wd = first; wd <= end; wd++) {
            /* the copy's bytes in the word: part of its first and last */
            uint64_t lo = wd << WR_WORD_SHIFT, hi = lo + 4;
            lo = addr > lo ? addr : lo;
            hi = addr + bytes < hi ? addr + bytes : hi;
            touch_word(f, c, p, cur, 0, wd, lo, (unsigned)(hi - lo));
        }
    }
}

static void on_host_copy(fsm *f, const wr_event *ev, uint32_t epoch)
{
    const wr_host_copy *cp = &ev->u.copy;
    block_st *b = block_find(f, epoch, UINT32_MAX, true);
    cur_ctx c = {.epoch = epoch, .launch = 0, .block = UINT32_MAX, .warp = UINT32_MAX,
                 .seq = ev->seq, .site = ev->site, .space = WR_SPACE_GLOBAL};
    if ((cp->kind == WR_COPY_D2H || cp->kind == WR_COPY_D2D) && cp->src) {
        c.acc = WR_FSM_ACC_R;
        host_range(f, &c, b, cp->src, cp->bytes);
    }
    if ((cp->kind == WR_COPY_H2D || cp->kind == WR_COPY_D2D || cp->kind == WR_COPY_MEMSET) && cp->dst) {
        c.acc = WR_FSM_ACC_W;
        host_range(f, &c, b, cp->dst, cp->bytes);
    }
}

/* ---- ops ---- */

static void *fsm_create(const wr_engine_config *cfg)
{
    fsm *f = xcalloc(1, sizeof *f);
    wr_blockstate_init(&f->bs, sizeof(block_st), sizeof(warp_st), offsetof(warp_st, ring));
    f->bar_pool.size = sizeof(wr_block_barriers);
    f->cross_pool.size = sizeof(wr_cross_bars);
    wr_blockstate_keep(&f->bs, sizeof(wr_cross_bars));
    f->lanes_pool.size = 32 * sizeof(uint32_t);
    wr_ring_pool_init(&f->ring_pool);
    f->cfg = *cfg;
    if (!f->cfg.shards)
        f->cfg.shards = 1;
    f->map = wr_shadow_new(8, expand_line);
    f->pc_gen = 1;
    f->ep = wr_epochs_new();
#if WR_SHADOW_AVX2
    f->avx2 = wr_shadow_simd();
#endif
    return f;
}

static void fsm_on_event(void *self, const wr_event *ev)
{
    fsm *f = self;
    if (ev->kind != WR_EV_ACCESS && f->pend[f->kept].on)
        gather_flush(f);
    switch (ev->kind) {
    case WR_EV_ACCESS:
        on_access(f, ev);
        break;
    case WR_EV_BARRIER:
        on_barrier(f, &ev->u.barrier);
        break;
    case WR_EV_WARP_SYNC:
        on_warp_sync(f, &ev->u.warp_sync);
        break;
    case WR_EV_BLOCK_EXIT: {
        /* its shared memory dies with it (drop_block), its accesses stay
         * findable for reports, and its cluster and grid barrier history
         * stays for block_ordered: a block of its cluster still running
         * may touch what it wrote before their barrier (an H200 ran the
         * writer's exit ahead of the reader's load) */
        uint32_t e = epoch_of(f, ev->u.block.launch);
        const block_st *b = block_find(f, e, ev->u.block.block, false);
        wr_blockstate_retire_keeping(&f->bs, e, ev->u.block.block,
                                     b && b->cross && b->cross->cluster.n ? b->cross : NULL,
                                     wr_launch_geo_single_block_clusters(
                                         wr_launch_geos_get(&f->geo, ev->u.block.launch)),
                                     drop_block, f);
        break;
    }
    case WR_EV_KERNEL_LAUNCH:
    case WR_EV_HOST_COPY: {
        if (ev->kind == WR_EV_KERNEL_LAUNCH)
            wr_launch_geos_note(&f->geo, &ev->u.launch);
        uint32_t e = wr_epochs_on_event(f->ep, ev);
        purge_blocks(f, e);
        if (ev->kind == WR_EV_HOST_COPY)
            on_host_copy(f, ev, e);
        break;
    }
    case WR_EV_KERNEL_END:
    case WR_EV_EVENT_RECORD:
    case WR_EV_STREAM_WAIT:
    case WR_EV_EVENT_SYNC:
    case WR_EV_STREAM_SYNC:
    case WR_EV_DEVICE_SYNC:
        wr_epochs_on_event(f->ep, ev);
        break;
    default:   /* fences, block enter, allocations, lost markers: not modelled */
        break;
    }
}

static void fsm_finish(void *self) { gather_flush(self); }

static uint64_t fsm_shadow_words(void *self)
{
    fsm *f = self;
    gather_flush(f);
    return f->live;
}

static void fsm_destroy(void *self)
{
    fsm *f = self;
    if (!f)
        return;
    wr_blockstate_free(&f->bs, f->blocks_with_shared ? drop_shared_list_at_end : NULL, f);
    release_owned_pools(f);
    wr_shadow_free(f->map);
    free(f->pc);
    wr_epochs_free(f->ep);
    wr_launch_geos_free(&f->geo);
    free(f);
}

const wr_engine_ops wr_engine_fsm = {
    .name = "fsm",
    .description = "HiRace 25-state FSM, one 8-byte shadow word per word (barriers, warp syncs, scoped atomics)",
    .create = fsm_create,
    .on_event = fsm_on_event,
    .finish = fsm_finish,
    .shadow_words = fsm_shadow_words,
    .destroy = fsm_destroy,
    .unmodelled = WR_UNMODELLED_FENCES | WR_UNMODELLED_MBARRIERS,
    .lane_ns = 2.6f,
    .gather_lane_ns = 11.9f,
};

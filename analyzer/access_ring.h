/*
 * access_ring.h: a warp's most recent accesses, for reports.
 *
 * The fsm and lockset shadow words say who touched a word last (block,
 * warp, lane) but not when: a report finds that accessor's trace position
 * (and, for fsm, its site) in the accessor's ring.  The ring is small and
 * fixed: it holds the last WR_ACCESS_RING accesses of its warp, and a
 * summary of the older ones by instruction (below); an access neither
 * holds is not found, and the report then carries seq 0 (unknown).  An
 * entry keeps the
 * byte range of all its lanes, not each lane's words: a newer access of
 * the lane whose range holds the word, though that lane touched another
 * word of it (a gather, a strided access), is taken for the one that
 * touched the word (ENGINES.md, known limits).
 *
 * Grids of small blocks keep millions of warps that make two or three
 * accesses each (state lives until the kernel ends), so the ring's first
 * WR_ACCESS_RING_INLINE slots live in the warp and the others are taken
 * from the engine's pool (wr_ring_pool_init) when the ring first reaches
 * them: 120 bytes per warp instead of 280 while it stays small, 280 once
 * it has grown.  An entry is 32 bytes: the trace position keeps its low
 * WR_RING_SEQ_BITS bits beside the kind and space, and is rebuilt from the
 * position of the access that asks (wr_ring_seq): exact for an entry less
 * than 2^48 events older than the asker, which every entry a ring still
 * holds is in any trace a disk can hold.
 *
 * What the ring lets go is folded into the warp's older accesses: one
 * entry per instruction (site, kind, space), up to WR_RING_OLDER of them,
 * holding the union of the lane masks and byte ranges of that
 * instruction's accesses that left the ring and the position of the newest
 * of them (the one an instruction is reported by in vc and scoped too).  A
 * warp in a loop makes its accesses at a few sites over and over, so a
 * report whose first side is older than the last WR_ACCESS_RING accesses
 * still names the instruction, not "unknown".  The match is by union
 * range, looser than the ring's: another instruction of that lane whose
 * accesses spanned the word is named if it is newer (ENGINES.md).  Past
 * WR_RING_OLDER instructions, the one whose newest access is the oldest
 * makes way.  The older entries come from the pool on the ring's first
 * wrap (256 bytes).
 */
#ifndef WARPRACE_ACCESS_RING_H
#define WARPRACE_ACCESS_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "finding.h"
#include "warprace/event.h"
#include "xalloc.h"

#define WR_ACCESS_RING 8
#define WR_ACCESS_RING_INLINE 3
#define WR_RING_OLDER 8

#define WR_RING_SEQ_BITS 48
#define WR_RING_SEQ_MASK ((UINT64_C(1) << WR_RING_SEQ_BITS) - 1)

typedef struct wr_ring_ent {
    uint64_t lo, hi;        /* byte range [lo, hi] touched by the lanes */
    uint64_t tag;           /* seq's low 48 bits | wr_access_kind << 48 | wr_space << 56 */
    uint32_t site, mask;    /* mask 0: an empty slot */
} wr_ring_ent;

static inline uint64_t wr_ring_tag(uint64_t seq, uint8_t kind, uint8_t space)
{
    return (seq & WR_RING_SEQ_MASK) | (uint64_t)kind << 48 | (uint64_t)space << 56;
}

/* The entry's trace position, from `now`, the position of a later access. */
static inline uint64_t wr_ring_seq(const wr_ring_ent *e, uint64_t now)
{
    return now - ((now - e->tag) & WR_RING_SEQ_MASK);
}

static inline uint8_t wr_ring_kind(const wr_ring_ent *e)
{
    return (uint8_t)(e->tag >> 48);
}

static inline uint8_t wr_ring_space(const wr_ring_ent *e)
{
    return (uint8_t)(e->tag >> 56);
}

/* Zeroed = empty.  Slot i of the ring is small[i], or big[i -
 * WR_ACCESS_RING_INLINE] (NULL until pos first reaches it); pos is the next
 * slot.  older[0, nolder) are the folded older accesses, distinct by
 * (site, kind, space); hint is where the last fold went. */
typedef struct wr_access_ring {
    uint8_t pos, nolder, hint;
    bool lapped;            /* pos has come round once: every slot was pushed */
    wr_ring_ent *big;
    wr_ring_ent *older;
    wr_ring_ent small[WR_ACCESS_RING_INLINE];
} wr_access_ring;

/* The pools that an engine's rings grow into (one per engine instance). */
typedef struct wr_ring_pool {
    wr_pool slots, older;
} wr_ring_pool;

static inline void wr_ring_pool_init(wr_ring_pool *pool)
{
    *pool = (wr_ring_pool){0};
    pool->slots.size = (WR_ACCESS_RING - WR_ACCESS_RING_INLINE) * sizeof(wr_ring_ent);
    pool->older.size = WR_RING_OLDER * sizeof(wr_ring_ent);
}

static inline void wr_ring_pool_release(wr_ring_pool *pool)
{
    wr_pool_release(&pool->slots);
    wr_pool_release(&pool->older);
}

/* Gives the pooled slots back (call it when the warp goes). */
static inline void wr_ring_release(wr_access_ring *r, wr_ring_pool *pool)
{
    wr_pool_put(&pool->slots, r->big);
    wr_pool_put(&pool->older, r->older);
    r->big = r->older = NULL;
    r->nolder = 0;
}

static inline const wr_ring_ent *wr_ring_slot(const wr_access_ring *r, unsigned i)
{
    return i < WR_ACCESS_RING_INLINE ? &r->small[i] : &r->big[i - WR_ACCESS_RING_INLINE];
}

static inline bool wr_ring_same_instr(const wr_ring_ent *a, const wr_ring_ent *b)
{
    return a->site == b->site && ((a->tag ^ b->tag) & ~WR_RING_SEQ_MASK) == 0;
}

static inline void wr_ring_merge(wr_ring_ent *o, const wr_ring_ent *e)
{
    o->lo = e->lo < o->lo ? e->lo : o->lo;
    o->hi = e->hi > o->hi ? e->hi : o->hi;
    o->mask |= e->mask;
    o->tag = e->tag;
}

/* wr_ring_fold past its fast path: any entry, a new one, or the one whose
 * newest access is the oldest making way. */
static __attribute__((noinline)) void wr_ring_fold_slow(wr_access_ring *r, wr_ring_pool *pool,
                                                        const wr_ring_ent *e)
{
    if (!r->older)
        r->older = wr_pool_get(&pool->older);
    wr_ring_ent *o = r->older;
    unsigned n = r->nolder, i = 0;
    while (i < n && !wr_ring_same_instr(&o[i], e))
        i++;
    if (i < n) {
        wr_ring_merge(&o[i], e);
    } else {
        if (n < WR_RING_OLDER) {
            r->nolder = (uint8_t)(n + 1);
        } else {
            i = 0;
            for (unsigned k = 1; k < n; k++)
                if (((e->tag - o[k].tag) & WR_RING_SEQ_MASK) > ((e->tag - o[i].tag) & WR_RING_SEQ_MASK))
                    i = k;
        }
        o[i] = *e;
    }
    r->hint = (uint8_t)i;
}

/* Folds e, the entry the ring lets go, into the older accesses: entries
 * leave in trace order, so e is newer than all of them.  A loop lets its
 * instructions go in its order: the last fold's entry or the one after it
 * is e's, checked here; the rest is out of line. */
static inline void wr_ring_fold(wr_access_ring *r, wr_ring_pool *pool, const wr_ring_ent *e)
{
    unsigned i = r->hint;
    if (i < r->nolder && wr_ring_same_instr(&r->older[i], e)) {
        wr_ring_merge(&r->older[i], e);
        return;
    }
    if (++i < r->nolder && wr_ring_same_instr(&r->older[i], e)) {
        wr_ring_merge(&r->older[i], e);
        r->hint = (uint8_t)i;
        return;
    }
    wr_ring_fold_slow(r, pool, e);
}

static inline __attribute__((always_inline)) wr_ring_ent *wr_ring_next(wr_access_ring *r,
                                                                       wr_ring_pool *pool)
{
    if (r->pos >= WR_ACCESS_RING_INLINE && !r->big)
        r->big = wr_pool_get(&pool->slots);   /* zeroed: empty slots */
    wr_ring_ent *e = (wr_ring_ent *)wr_ring_slot(r, r->pos);
    if (r->lapped && e->mask)
        wr_ring_fold(r, pool, e);
    r->pos = (uint8_t)((r->pos + 1) % WR_ACCESS_RING);
    r->lapped |= r->pos == 0;
    return e;
}

/* A warp access of `size` bytes per lane.  Always inlined: an engine's
 * access path calls it for every access (and twice, where it also takes
 * distributed shared memory apart). */
static inline __attribute__((always_inline)) void wr_ring_push_access(wr_access_ring *r, wr_ring_pool *pool, const wr_access *a,
                                       unsigned size, uint64_t seq, uint32_t site, uint8_t kind)
{
    wr_ring_ent *e = wr_ring_next(r, pool);
    e->tag = wr_ring_tag(seq, kind, a->space);
    e->site = site;
    e->mask = a->active_mask;
    e->lo = UINT64_MAX;
    e->hi = 0;
    if (a->addr_mode == WR_ADDR_UNIFORM ||
        (a->addr_mode == WR_ADDR_STRIDED && a->stride >= 0 &&
         a->base + (uint64_t)a->stride * 31u + size - 1 >= a->base &&
         (uint64_t)a->stride <= (UINT64_MAX - size) / 32u)) {
        /* monotone lane addresses without wrap-around: the extreme lanes */
        unsigned lo = (unsigned)__builtin_ctz(a->active_mask);
        unsigned hi = 31u - (unsigned)__builtin_clz(a->active_mask);
        e->lo = wr_access_lane_addr(a, lo);
        e->hi = wr_access_lane_addr(a, hi) + size - 1;
        return;
    }
    for (uint32_t x = a->active_mask; x; x &= x - 1) {
        uint64_t ad = wr_access_lane_addr(a, (unsigned)__builtin_ctz(x));
        if (ad < e->lo)
            e->lo = ad;
        if (ad + size - 1 > e->hi)
            e->hi = ad + size - 1;
    }
}

/* A warp access whose byte range [lo, hi] is already known (a vector
 * access's, from wr_shadow_vector_lanes). */
static inline void wr_ring_push_span(wr_access_ring *r, wr_ring_pool *pool, const wr_access *a,
                                     uint64_t lo, uint64_t hi, uint64_t seq, uint32_t site,
                                     uint8_t kind)
{
    *wr_ring_next(r, pool) = (wr_ring_ent){.lo = lo, .hi = hi, .tag = wr_ring_tag(seq, kind, a->space),
                                           .site = site, .mask = a->active_mask};
}

/* A host copy's range (lane 0 of the host's pseudo-warp). */
static inline void wr_ring_push_range(wr_access_ring *r, wr_ring_pool *pool, uint64_t seq,
                                      uint64_t addr, uint64_t bytes, uint32_t site, uint8_t kind)
{
    *wr_ring_next(r, pool) = (wr_ring_ent){.lo = addr, .hi = addr + bytes - 1,
                                           .tag = wr_ring_tag(seq, kind, WR_SPACE_GLOBAL),
                                           .site = site, .mask = 1};
}

/* The k-th newest entry (0: the newest); empty (mask 0) past the oldest. */
static inline const wr_ring_ent *wr_ring_newest(const wr_access_ring *r, unsigned k)
{
    return wr_ring_slot(r, (r->pos + WR_ACCESS_RING - 1 - k) % WR_ACCESS_RING);
}

/* Whether entry e is an access of `lane` in `space` whose range holds the
 * 4-byte word at addr, not the access at skip_seq, when site != 0 made at
 * that site, and not of a kind in the mask skip_kinds (1 << WR_KIND_...:
 * wr_ring_find). */
static inline bool wr_ring_ent_matches(const wr_ring_ent *e, unsigned lane, uint8_t space,
                                       uint64_t addr, uint64_t skip_seq, uint32_t site,
                                       unsigned skip_kinds)
{
    if (((e->tag ^ skip_seq) & WR_RING_SEQ_MASK) == 0 || (site && e->site != site) ||
        ((skip_kinds >> wr_ring_kind(e)) & 1u))
        return false;
    return wr_ring_space(e) == space && ((e->mask >> lane) & 1u) && e->lo <= addr + 3 && addr <= e->hi;
}

/* Of the older entries o[0, n), the one with the newest position that
 * matches (wr_ring_ent_matches), or NULL.  `now` is the asking access's
 * position (every entry is older). */
static inline const wr_ring_ent *wr_ring_older_find(const wr_ring_ent *o, unsigned n, unsigned lane,
                                                    uint8_t space, uint64_t addr, uint64_t now,
                                                    uint32_t site, unsigned skip_kinds)
{
    const wr_ring_ent *best = NULL;
    for (unsigned k = 0; k < n; k++)
        if (wr_ring_ent_matches(&o[k], lane, space, addr, now, site, skip_kinds) &&
            (!best || ((now - o[k].tag) & WR_RING_SEQ_MASK) < ((now - best->tag) & WR_RING_SEQ_MASK)))
            best = &o[k];
    return best;
}

/* The newest access of `lane` in `space` whose range holds the 4-byte word
 * at addr, other than the access at skip_seq (the current one, the newest
 * position: wr_ring_seq(e, skip_seq) is then the entry's), when site != 0
 * made at that site, and not of a kind in skip_kinds (a read races with
 * writes and atomics: it skips reads); failing that, the newest such older instruction
 * (wr_ring_fold); NULL when neither holds it. */
static inline const wr_ring_ent *wr_ring_find(const wr_access_ring *r, unsigned lane,
                                              uint8_t space, uint64_t addr, uint64_t skip_seq,
                                              uint32_t site, unsigned skip_kinds)
{
    /* without big, the ring never wrapped: slots [0, pos) */
    unsigned n = r->big ? WR_ACCESS_RING : r->pos;
    for (unsigned k = 0; k < n; k++) {
        const wr_ring_ent *e = wr_ring_newest(r, k);
        if (!e->mask)
            break;
        if (wr_ring_ent_matches(e, lane, space, addr, skip_seq, site, skip_kinds))
            return e;
    }
    return wr_ring_older_find(r->older, r->nolder, lane, space, addr, skip_seq, site, skip_kinds);
}

/* Did lane `lane` of access a touch the 4-byte word at addr (4-aligned)?
 * A race between two lanes of one instruction has that instruction as its
 * first side too, but its ring entry is skipped (it would match lanes that
 * touched other words of its range): an engine whose stored accessor is
 * exactly the last one to touch the word asks this of the stored lane. */
static inline bool wr_access_lane_touches(const wr_access *a, unsigned lane, uint64_t addr)
{
    if (lane >= 32 || !((a->active_mask >> lane) & 1u))
        return false;
    uint64_t lo = wr_access_lane_addr(a, lane), size = a->size ? a->size : 4;
    return lo <= addr + 3 && addr <= lo + size - 1 && lo <= UINT64_MAX - (size - 1);
}

/* The same for the one byte at addr: a byte cell's stored lane
 * (shadow.h, "Sub-word accesses"). */
static inline bool wr_access_lane_touches_byte(const wr_access *a, unsigned lane, uint64_t addr)
{
    if (lane >= 32 || !((a->active_mask >> lane) & 1u))
        return false;
    return addr - wr_access_lane_addr(a, lane) < (a->size ? a->size : 4u);
}

/* How many entries the ring holds (wr_ring_newest(r, 0 .. n-1)). */
static inline unsigned wr_ring_count(const wr_access_ring *r)
{
    unsigned n = r->big ? WR_ACCESS_RING : r->pos, k = 0;
    while (k < n && wr_ring_newest(r, k)->mask)
        k++;
    return k;
}

#endif

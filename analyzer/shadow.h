/*
 * shadow.h: a page-table shadow map shared by the engines (lockset and fsm
 * use it; vc/scoped may too).
 *
 * Memory words (WR_WORD_SHIFT = 4-byte granularity) are grouped into pages of
 * WR_SHADOW_PAGE_WORDS (1024) consecutive words, i.e. one 4 KiB page of
 * device memory.  A page is found by a 64-bit key (wr_shadow_key(): global
 * memory by address, shared memory by (launch, block, offset)) in an
 * open-addressing hash table, with a cache of the few most recent pages in
 * front of it, so a
 * coalesced warp access costs one lookup for all its lanes and then one
 * array store per word.  Each page holds 1024 cells of `cell_bytes` bytes
 * (fixed per map, zero-initialised: an engine should make "all zero" its
 * virgin/INIT state) plus two 64-bit engine-owned header fields.
 *
 * Packed lines.  A map keeps each line of
 * WR_SHADOW_LINE_WORDS (32) words packed while it can: one representative
 * cell (`rep`) stands for all 32, and the line's own cells are not touched,
 * so the memory behind them is never made resident.  What a rep means is
 * the engine's: expand(cells, rep) writes the 32 cells it stands for (rep
 * all zero: 32 zero cells, without a call).  A coalesced warp access of a
 * whole aligned line (lane l on word 32k + l) leaves its 32 cells alike up
 * to their lane, which is what an engine packs; anything else that reaches
 * a cell through wr_shadow_cell() or wr_shadow_expand_range() expands the
 * line first, for good.  The cells of a packed line are zero and must not
 * be read.  Pages live as a small header and their reps apart from their
 * cells, so a page whose lines all stay packed costs no cell memory.
 *
 * Not thread-safe: one map per engine instance (per shard).
 */
#ifndef WARPRACE_SHADOW_H
#define WARPRACE_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "warprace/event.h"

#define WR_SHADOW_PAGE_SHIFT 10
#define WR_SHADOW_PAGE_WORDS (1u << WR_SHADOW_PAGE_SHIFT)
#define WR_SHADOW_PAGE_MASK (WR_SHADOW_PAGE_WORDS - 1u)
/* A shard run is one shadow page: no page is shared by two shards, and the
 * engines look a page up once per run. */
_Static_assert(WR_SHARD_RUN_SHIFT == WR_SHADOW_PAGE_SHIFT, "shard runs must be shadow pages");

#define WR_SHADOW_LINE_SHIFT 5
#define WR_SHADOW_LINE_WORDS (1u << WR_SHADOW_LINE_SHIFT)
#define WR_SHADOW_LINES (WR_SHADOW_PAGE_WORDS / WR_SHADOW_LINE_WORDS)
_Static_assert(WR_SHADOW_LINES == 32, "one bit per line in a uint32_t");

/* A page's header: one 64-byte line, the headers of a map side by side
 * (shadow.c), with the reps apart.  A gather's lanes land on pages at
 * random, and each lane reads its page's cells pointer and line bits:
 * with the reps inside each header the headers lay 0.5-1 KiB apart, a
 * cache miss per lane before the cell's own. */
typedef struct wr_shadow_page {
    unsigned char *cells; /* WR_SHADOW_PAGE_WORDS * cell_bytes */
    uint32_t expanded;   /* bit l: line l lives in its cells, not in reps */
    uint32_t user3;      /* engine-owned, 0 on creation */
    uint64_t user;       /* engine-owned, 0 on creation */
    uint64_t user2;      /* engine-owned, 0 on creation */
    uint64_t key;
    unsigned char *reps; /* WR_SHADOW_LINES * cell_bytes, 16-byte aligned */
    uint64_t *split;     /* bit w: word w keeps its state in byte cells (NULL: none) */
    uint64_t pad2;
} wr_shadow_page;
_Static_assert(sizeof(wr_shadow_page) == 64, "a page header is one cache line");

/* Writes the 32 cells of a packed line from its rep (not all zero). */
typedef void (*wr_shadow_expand_fn)(void *cells, const void *rep);

/* Shadow pages' cells come from 2 MiB slabs (shadow.c): fresh anonymous
 * memory is already zero, so a new page costs no memset.  Headers and reps
 * come from arenas of their own (blocks of WR_SHADOW_ARENA_PAGES). */
#define WR_SHADOW_ARENA_PAGES 256

typedef struct wr_shadow_slabs {
    /* [0]: global pages' cells, [1]: shared pages', placed apart
     * (shadow.c, cells_alloc) */
    unsigned char *next[2];  /* unused rest of the newest slab */
    size_t left[2];          /* bytes */
    void **slabs;            /* every slab, for freeing */
    size_t nslabs, capslabs;
    wr_shadow_page **spare[2];  /* removed pages, reused before the slab */
    size_t nspare[2], capspare[2];
    void **arenas;           /* header and reps blocks, for freeing */
    size_t narenas, caparenas;
    wr_shadow_page *next_header;
    unsigned char *next_reps;
    size_t arena_left;       /* pages left in the newest header and reps blocks */
} wr_shadow_slabs;

#define WR_SHADOW_RECENT 4

typedef struct wr_shadow_map {
    size_t cell_bytes;
    size_t page_bytes;       /* cells */
    size_t reps_bytes;       /* WR_SHADOW_LINES * cell_bytes */
    wr_shadow_expand_fn expand;
    wr_shadow_slabs mem;
    size_t cap;          /* power of two */
    size_t count;
    /* key and page side by side: a probe that hits costs one cache line */
    struct wr_shadow_slot {
        uint64_t key;
        wr_shadow_page *page;   /* NULL = empty slot */
    } *slots;
    /* the most recently used pages, most recent first (NULL = empty): an
     * engine's accesses alternate among a few pages (a kernel's input,
     * output and shared tile), and each switch would otherwise probe the
     * table */
    uint64_t recent_key[WR_SHADOW_RECENT];
    wr_shadow_page *recent[WR_SHADOW_RECENT];
    /* the keys of the shared-memory pages created, so that a launch's go
     * at its end (wr_shadow_drop_launch); keys of pages removed otherwise
     * linger until the list would grow */
    uint64_t *shared_keys;
    size_t nshared_keys, capshared_keys;
    /* 1 + the highest page index within a block of any shared page made
     * (0: none): a block's pages lie below it (wr_shadow_drop_block) */
    uint32_t shared_page_end;
    /* The byte cells of split words (below, "Sub-word accesses"): a map of
     * the same cells, indexed by byte where this one is by word; made on
     * the first split.  Pages go with this map's: dropped with a launch or
     * a block, removed with their word page, walked by wr_shadow_foreach. */
    struct wr_shadow_map *bytes;
} wr_shadow_map;

/* The page key of word `word` (= address >> WR_WORD_SHIFT) in `space`.
 * Global memory: one key space for every launch and the host.  Shared
 * memory: distinct per (launch, block); shared offsets are < 2^22 words.
 * Local memory is never tracked (engines skip it). */
#define WR_SHADOW_KEY_SHARED 0x8000000000000000ull
#define WR_SHADOW_KEY_LAUNCH_SHIFT 46
#define WR_SHADOW_KEY_LAUNCH_MASK 0x1ffffu   /* a launch id's low 17 bits */

static inline uint64_t wr_shadow_key(uint8_t space, uint32_t launch, uint32_t block,
                                     uint64_t word)
{
    if (space == 0)
        return (word >> WR_SHADOW_PAGE_SHIFT) & ~WR_SHADOW_KEY_SHARED;
    return WR_SHADOW_KEY_SHARED |
           ((uint64_t)(launch & WR_SHADOW_KEY_LAUNCH_MASK) << WR_SHADOW_KEY_LAUNCH_SHIFT) |
           ((uint64_t)block << 14) | ((word >> WR_SHADOW_PAGE_SHIFT) & 0x3fffu);
}

/* Whether a page key is a shared-memory page's (1) or a global one's (0). */
static inline unsigned wr_shadow_key_shared(uint64_t key)
{
    return (key & WR_SHADOW_KEY_SHARED) != 0;
}

/* Whether a page key is a shared-memory page of launch `launch`. */
static inline bool wr_shadow_key_of_launch(uint64_t key, uint32_t launch)
{
    return wr_shadow_key_shared(key) &&
           ((key >> WR_SHADOW_KEY_LAUNCH_SHIFT) & WR_SHADOW_KEY_LAUNCH_MASK) ==
               (launch & WR_SHADOW_KEY_LAUNCH_MASK);
}

/* Whether engine instances created from now on take the AVX2 forms of
 * their coalesced word loops (fsm, lockset, vc's and scoped's word memo):
 * true where the CPU has AVX2 (chosen at run time: the build targets plain
 * x86-64) unless wr_shadow_allow_simd(false) was called.  Both forms give
 * the same cells; tests turn the AVX2 forms off to hold the portable loops
 * to that.  Not thread-safe: call before creating instances. */
bool wr_shadow_simd(void);
void wr_shadow_allow_simd(bool allow);
/* 1 where the AVX2 forms are compiled in (x86-64 with gcc or clang, which
 * build them with target("avx2") whatever the -march); then <immintrin.h>
 * is included here for them. */
#if defined(__x86_64__) && defined(__GNUC__)
#define WR_SHADOW_AVX2 1
#include <immintrin.h>
#else
#define WR_SHADOW_AVX2 0
#endif

#if WR_SHADOW_AVX2
/* The AVX2 loops' store of a group of four 8-byte cells at p: nw in the
 * cells of `lanes` (bits 0-3), old (as loaded) in the others. */
__attribute__((target("avx2"))) static inline void wr_shadow_store4(void *p, __m256i old,
                                                                     __m256i nw, uint32_t lanes)
{
    if (lanes != 15u) {
        const __m256i bit4 = _mm256_setr_epi64x(1, 2, 4, 8);
        __m256i sel = _mm256_and_si256(_mm256_set1_epi64x(lanes), bit4);
        nw = _mm256_blendv_epi8(old, nw, _mm256_cmpeq_epi64(sel, bit4));
    }
    _mm256_storeu_si256((__m256i *)p, nw);
}
#endif

wr_shadow_map *wr_shadow_new(size_t cell_bytes, wr_shadow_expand_fn expand);
void wr_shadow_free(wr_shadow_map *m);
/* The page for `key`, created (zeroed) when absent when `create`; a page
 * found or created becomes the most recent one. */
wr_shadow_page *wr_shadow_lookup_slow(wr_shadow_map *m, uint64_t key, bool create);
/* Drops the page for `key` if present. */
void wr_shadow_remove(wr_shadow_map *m, uint64_t key);
/* Drops every shared-memory page of launch `launch` (its blocks' shared
 * memory is gone once it ended: no later access names those words, and a
 * trace without block exits, as the device API records, kept every
 * launch's pages to the end), calling before(page, ctx) on each first
 * (NULL: none) for what the engine keeps outside the page.  Costs a step
 * per shared page of the launches still listed.  Empties the cache of
 * recent pages. */
void wr_shadow_drop_launch(wr_shadow_map *m, uint32_t launch,
                           void (*before)(wr_shadow_page *, void *), void *ctx);
/* Drops the shared-memory pages of one block of a launch (its shared
 * memory is gone once it exited), calling before(page, ctx) on each first
 * (NULL: none).  Costs a probe per page index any block's shared memory
 * reached.  Empties the cache of recent pages. */
void wr_shadow_drop_block(wr_shadow_map *m, uint32_t launch, uint32_t block,
                          void (*before)(wr_shadow_page *, void *), void *ctx);
/* Empties the cache of recent pages (after pages were removed). */
void wr_shadow_forget_recent(wr_shadow_map *m);
/* Puts p first among the recent pages (the others move down one). */
void wr_shadow_remember(wr_shadow_map *m, uint64_t key, wr_shadow_page *p);
/* Calls fn on every page (in table order), then on every page of the
 * byte cells (m->bytes): the cells are alike, and an engine that walks its
 * cells must see both. */
void wr_shadow_foreach(wr_shadow_map *m, void (*fn)(wr_shadow_page *, void *), void *ctx);

/* Sub-word accesses.  Memory is byte-addressed: two threads that touch
 * different bytes of one word do not race.  A word's cell keeps its state
 * while every access covers the whole word; the first access narrower
 * than a word (or a host copy that ends inside one) SPLITS it: its state
 * is copied into four byte cells, each then stepped as a cell of its own
 * by the accesses that cover its byte, and the word's cell is zeroed, read
 * no more.  The copy is exact: before the split every access covered all
 * four bytes, so each byte's history is the word's.  A word stays split
 * until its page goes (its byte cells go with it).  Byte cells live in
 * m->bytes under the same keys as words (wr_shadow_key with the byte
 * index, address or shared offset, in place of the word), the four of a
 * word side by side.  Engines step byte cells on their general per-word
 * path only; their fast paths leave a page that has split words
 * (wr_shadow_page_split) to it, and wr_shadow_vector_lanes refuses
 * sub-word accesses and such pages. */
static inline bool wr_shadow_page_split(const wr_shadow_page *p)
{
    return p->split != NULL;
}

static inline bool wr_shadow_word_split(const wr_shadow_page *p, uint64_t word)
{
    unsigned i = (unsigned)(word & WR_SHADOW_PAGE_MASK);
    return p->split && ((p->split[i >> 6] >> (i & 63u)) & 1u);
}

/* Does the byte range [lo, end) (a lane's access, a copy's range) cover
 * only part of word `word`, which it touches? */
static inline bool wr_shadow_partial_word(uint64_t lo, uint64_t end, uint64_t word)
{
    uint64_t w0 = word << 2;
    return lo > w0 || end < w0 + 4u;
}

/* Writes the four byte cells of a word (on page byte_page) from its word
 * cell: the engine's copy (a cell that owns memory elsewhere, a read set,
 * gives each byte its own) and whatever it keeps per page (live counts,
 * epochs), before the word's cell is zeroed. */
typedef void (*wr_shadow_split_fn)(void *byte_cells, const void *word_cell,
                                   wr_shadow_page *byte_page, void *ctx);

/* The four byte cells of word `word` of page p (side by side, byte 0
 * first), splitting the word first if it is not yet (split(cells, word
 * cell, their page, ctx), then the word cell zeroed); *byte_page (when
 * not NULL) gets their page.  The byte page may be new; p stays valid. */
void *wr_shadow_byte_cells(wr_shadow_map *m, wr_shadow_page *p, uint64_t word,
                           wr_shadow_split_fn split, void *ctx, wr_shadow_page **byte_page);
/* The pages that hold the byte cells of p's split words (one for each
 * quarter of p's words that has one, at most 4) into out; returns how
 * many: for an engine that sweeps or counts a page with its bytes. */
unsigned wr_shadow_byte_pages(wr_shadow_map *m, const wr_shadow_page *p, wr_shadow_page **out);

/* The slot hash of a page key (the table probes linearly from it). */
static inline size_t wr_shadow_hash(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    k ^= k >> 29;
    return (size_t)k;
}

/* The slot of `key` in the table, or the empty slot where its probe ends
 * (the table is never full). */
static inline size_t wr_shadow_slot_of(const wr_shadow_map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = wr_shadow_hash(key) & mask;
    while (m->slots[i].page && m->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

/* The page for `key`, created (zeroed) when absent, for lookups that have
 * no locality (the lanes of a gather): the table is probed inline, and the
 * recent pages are neither asked nor reordered (asking them and moving
 * them down cost more than the probe: a third of fsm's instructions on a
 * gather trace went to finding pages). */
static inline wr_shadow_page *wr_shadow_get_scattered(wr_shadow_map *m, uint64_t key)
{
    wr_shadow_page *p = m->slots[wr_shadow_slot_of(m, key)].page;
    return p ? p : wr_shadow_lookup_slow(m, key, true);
}

static inline wr_shadow_page *wr_shadow_get(wr_shadow_map *m, uint64_t key)
{
    if (m->recent_key[0] == key && m->recent[0])
        return m->recent[0];
    for (unsigned i = 1; i < WR_SHADOW_RECENT; i++)
        if (m->recent_key[i] == key && m->recent[i]) {
            wr_shadow_page *p = m->recent[i];
            m->recent_key[i] = m->recent_key[0];
            m->recent[i] = m->recent[0];
            m->recent_key[0] = key;
            m->recent[0] = p;
            return p;
        }
    return wr_shadow_lookup_slow(m, key, true);
}

/* Makes every cell of p zero again (its packed lines' reps and its
 * expanded lines' cells; which lines are expanded does not change) and
 * returns how many cells were not all zero: an engine whose cells are zero
 * exactly when they are untracked counts the words it stopped tracking.
 * A whole page dropped at once by a sweep costs this, not a step per cell. */
size_t wr_shadow_clear_page(const wr_shadow_map *m, wr_shadow_page *p);
/* Makes every cell of p zero again as wr_shadow_clear_page does, without
 * reading them: for an engine that counts its non-zero cells itself. */
void wr_shadow_zero_page(const wr_shadow_map *m, wr_shadow_page *p);
/* How many cells of p are not all zero (a packed line's rep counts for its
 * 32 cells), changing nothing. */
size_t wr_shadow_nonzero_cells(const wr_shadow_map *m, wr_shadow_page *p);

/* Live cells counted per page, for an engine that drops pages whole (a
 * sweep, a block's end): it keeps in a page's user2 a flag of its own in
 * bit 0 and the page's live cells above (a packed line's rep counts for
 * its 32), and their sum over all pages in *total; a page dropped whole
 * is then zeroed (wr_shadow_zero_page) without being read to count them. */
#define WR_SHADOW_PAGE_FLAG 1ull
#define WR_SHADOW_LIVE_SHIFT 1

static inline void wr_shadow_live_add(wr_shadow_page *p, uint64_t *total, uint64_t n)
{
    *total += n;
    p->user2 += n << WR_SHADOW_LIVE_SHIFT;
}

static inline void wr_shadow_live_sub(wr_shadow_page *p, uint64_t *total, uint64_t n)
{
    *total -= n;
    p->user2 -= n << WR_SHADOW_LIVE_SHIFT;
}

static inline uint64_t wr_shadow_page_live(const wr_shadow_page *p)
{
    return p->user2 >> WR_SHADOW_LIVE_SHIFT;
}

/* Drops every cell of p, whole: its live cells leave *total, and a page
 * that had any is zeroed. */
static inline void wr_shadow_drop_live(const wr_shadow_map *m, wr_shadow_page *p, uint64_t *total)
{
    if (wr_shadow_page_live(p)) {
        wr_shadow_live_sub(p, total, wr_shadow_page_live(p));
        wr_shadow_zero_page(m, p);
    }
}

/* Unpacks line `line` of p into its cells (it must be packed). */
void wr_shadow_expand_line(const wr_shadow_map *m, wr_shadow_page *p, unsigned line);

static inline unsigned wr_shadow_line_of(uint64_t word)
{
    return (unsigned)(word & WR_SHADOW_PAGE_MASK) >> WR_SHADOW_LINE_SHIFT;
}

static inline bool wr_shadow_line_packed(const wr_shadow_page *p, unsigned line)
{
    return !((p->expanded >> line) & 1u);
}

/* The rep of a packed line. */
static inline void *wr_shadow_line_rep(const wr_shadow_map *m, wr_shadow_page *p, unsigned line)
{
    return p->reps + (size_t)line * m->cell_bytes;
}

/* Is the access of `lanes`, lane l on word first + l, a whole aligned
 * line that is still packed in p?  (the one shape an engine steps packed) */
static inline bool wr_shadow_packed_whole_line(const wr_shadow_page *p, uint64_t first,
                                               uint32_t lanes)
{
    return lanes == UINT32_MAX && !(first & (WR_SHADOW_LINE_WORDS - 1)) &&
           wr_shadow_line_packed(p, wr_shadow_line_of(first));
}

/* Expands the packed lines among words first..last (one page). */
static inline void wr_shadow_expand_range(const wr_shadow_map *m, wr_shadow_page *p,
                                          uint64_t first, uint64_t last)
{
    for (unsigned l = wr_shadow_line_of(first), e = wr_shadow_line_of(last); l <= e; l++)
        if (wr_shadow_line_packed(p, l))
            wr_shadow_expand_line(m, p, l);
}

/* The cell of `word` in p, its line expanded first. */
static inline void *wr_shadow_cell(const wr_shadow_map *m, wr_shadow_page *p, uint64_t word)
{
    unsigned line = wr_shadow_line_of(word);
    if (__builtin_expect(wr_shadow_line_packed(p, line), 0))
        wr_shadow_expand_line(m, p, line);
    return p->cells + (size_t)(word & WR_SHADOW_PAGE_MASK) * m->cell_bytes;
}

/* The cells of p from word `first` (which must not be packed), without a
 * check: for a loop over words whose lines were expanded. */
static inline void *wr_shadow_cells_at(const wr_shadow_map *m, wr_shadow_page *p, uint64_t first)
{
    return p->cells + (size_t)(first & WR_SHADOW_PAGE_MASK) * m->cell_bytes;
}

/* Do all the bytes an access touches lie in one shard run (engine.h,
 * WR_SHARD_RUN_SHIFT)?  Decided for uniform and strided accesses from their
 * extreme active lanes (monotone addresses); vector accesses, and ranges that
 * wrap around, answer false.  *addr0 gets an address inside the run, so one
 * wr_shard_of(space, launch, block, *addr0, shards) decides the whole access:
 * the not-my-shard path of a coalesced warp access costs one hash. */
static inline bool wr_access_one_run(const wr_access *a, unsigned size, uint64_t *addr0)
{
    if (a->addr_mode == WR_ADDR_VECTOR || !a->active_mask)
        return false;
    unsigned lo = (unsigned)__builtin_ctz(a->active_mask);
    unsigned hi = 31u - (unsigned)__builtin_clz(a->active_mask);
    uint64_t first = wr_access_lane_addr(a, lo), last = wr_access_lane_addr(a, hi);
    if (a->addr_mode == WR_ADDR_STRIDED && a->stride < 0) {
        uint64_t t = first;
        first = last;
        last = t;
    }
    last += size - 1;
    if (last < first)
        return false;   /* wraps */
    unsigned sh = WR_WORD_SHIFT + WR_SHARD_RUN_SHIFT;
    *addr0 = first & ~3ull;
    return (first >> sh) == (last >> sh);
}

/* Is this the coalesced shape where lane l touches exactly the one word
 * *lane0_word + l (4-byte lanes at stride 4 from an aligned base, no
 * wrap-around)?  Most warp accesses of real kernels have it; the engines
 * then walk words by lane without the general per-lane address arithmetic
 * and check shard and page once per page instead of once per word. */
static inline bool wr_access_word_per_lane(const wr_access *a, unsigned size,
                                           uint64_t *lane0_word)
{
    if (a->addr_mode != WR_ADDR_STRIDED || size != 4 || a->stride != 4 || (a->base & 3u) ||
        a->base > UINT64_MAX - 4u * 32u)
        return false;
    *lane0_word = a->base >> 2;
    return true;
}

/* Of `mask` (not 0), the lanes whose words (lane0_word + lane) lie in the
 * same shadow page as the lowest lane's word. */
static inline uint32_t wr_lanes_in_first_page(uint32_t mask, uint64_t lane0_word)
{
    unsigned lo = (unsigned)__builtin_ctz(mask);
    uint64_t left = WR_SHADOW_PAGE_MASK - ((lane0_word + lo) & WR_SHADOW_PAGE_MASK);
    unsigned hi = lo + (unsigned)(left < 31u ? left : 31u);   /* last lane in the page */
    return hi >= 31u ? mask : mask & ((2u << hi) - 1u);
}

/* Walks a word-per-lane access page by page: takes from *mask the lanes of
 * the next page that this shard owns into *piece and returns true, or
 * returns false when no lane is left.  A page is one shard run, so one
 * wr_shard_of decides all its lanes.  Start with *mask = the active mask. */
static inline bool wr_next_owned_lane_page(uint32_t *mask, uint64_t lane0_word,
                                           const wr_access *a, uint32_t shard,
                                           uint32_t shards, uint32_t *piece)
{
    while (*mask) {
        uint32_t p = wr_lanes_in_first_page(*mask, lane0_word);
        *mask &= ~p;
        uint64_t first = lane0_word + (unsigned)__builtin_ctz(p);
        if (shards <= 1 ||
            wr_shard_of(a->space, a->launch, a->block, first << WR_WORD_SHIFT, shards) == shard) {
            *piece = p;
            return true;
        }
    }
    return false;
}

/* The lanes of a vector (gather / scatter) access, each on one word. */
typedef struct wr_shadow_lane {
    wr_shadow_page *page;
    void *cell;              /* its line expanded */
    uint64_t word;
    uint8_t lane;
    bool same_word;          /* the word of the previous active lane */
} wr_shadow_lane;

typedef struct wr_shadow_lanes {
    unsigned n;              /* lanes this shard owns, in lane order */
    bool split;              /* a lane's page has split words */
    uint32_t owned;          /* their mask */
    uint64_t lo, hi;         /* bytes [lo, hi] of every active lane */
    wr_shadow_lane l[WR_WARP_SIZE];
} wr_shadow_lanes;

/* wr_shadow_vector_lanes: does lane `lane` of a stay in one word?  Then
 * *word is that word and [*lo, *hi] grows to hold the lane's address. */
static inline bool wr_shadow_lane_word(const wr_access *a, unsigned lane, unsigned size,
                                       uint64_t *lo, uint64_t *hi, uint64_t *word)
{
    uint64_t addr = a->lane_addr[lane];
    if ((addr & 3u) + size > 4u)
        return false;
    *lo = addr < *lo ? addr : *lo;
    *hi = addr > *hi ? addr : *hi;
    *word = addr >> WR_WORD_SHIFT;
    return true;
}

/* wr_shadow_vector_lanes: lane `lane` (on `word`; `same`: on its previous
 * active lane's word) becomes out->l[n], its page asked when it differs
 * from the previous resolved lane's, its cell asked of the cache; returns
 * n + 1. */
static inline __attribute__((always_inline)) unsigned
wr_shadow_lane_resolve(const wr_shadow_map *m, wr_shadow_page *(*page)(void *ctx, uint64_t word),
                       void *ctx, wr_shadow_lanes *out, unsigned n, unsigned lane, uint64_t word,
                       bool same, uint64_t *last_pn, wr_shadow_page **p)
{
    if (word >> WR_SHADOW_PAGE_SHIFT != *last_pn) {
        *last_pn = word >> WR_SHADOW_PAGE_SHIFT;
        *p = page(ctx, word);
        out->split |= wr_shadow_page_split(*p);
    }
    void *cell = wr_shadow_cell(m, *p, word);
    __builtin_prefetch(cell, 1);
    out->l[n] = (wr_shadow_lane){.page = *p, .cell = cell, .word = word, .lane = (uint8_t)lane,
                                 .same_word = same};
    return n + 1;
}

/* Resolves, once, the cells of a vector access whose every active lane
 * touches one whole word (size 4, aligned) on a page without split words,
 * for the engine's lane
 * loop: the lanes this shard owns with their page and cell, and the byte
 * range of all active lanes (what the access ring keeps).  Each cell is
 * asked of the cache as it is found: the lanes land on unrelated cells,
 * each a miss, and asked for together the misses overlap instead of
 * queueing one behind the other.  `page` returns (creating) the page of a
 * word exactly as the engine would, once per run of consecutive lanes on
 * one page; expanding a packed line changes no state.  Returns false for
 * another shape (then out->n and the range mean nothing); the pages must
 * not be removed before the engine is done with them. */
static inline __attribute__((always_inline)) bool
wr_shadow_vector_lanes(const wr_access *a, unsigned size, const wr_shadow_map *m, uint32_t shard,
                       uint32_t shards, wr_shadow_page *(*page)(void *ctx, uint64_t word), void *ctx,
                       wr_shadow_lanes *out)
{
    out->n = 0;
    out->split = false;
    if (a->addr_mode != WR_ADDR_VECTOR || size != 4 || !a->active_mask)
        return false;
    uint64_t lo = UINT64_MAX, hi = 0, prev = UINT64_MAX;
    unsigned n = 0;
    uint64_t last_pn = UINT64_MAX;
    wr_shadow_page *p = NULL;
    if (shards <= 1) {
        out->owned = a->active_mask;
        /* one pass: the lanes' loads and lookups overlap */
        for (uint32_t x = a->active_mask; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            uint64_t word;
            if (!wr_shadow_lane_word(a, lane, size, &lo, &hi, &word))
                return false;
            n = wr_shadow_lane_resolve(m, page, ctx, out, n, lane, word, word == prev, &last_pn,
                                       &p);
            prev = word;
        }
    } else {
        /* Two passes: a shard owns a random half of a gather's lanes, and a
         * branch on each lane's shard cost every shard a misprediction per
         * lane it does not own (about 60% of one shard's time again per
         * added shard), so the first pass finds the owned lanes without a
         * branch and the second resolves them. */
        uint64_t words[WR_WARP_SIZE];
        uint32_t same = 0, owned = a->active_mask;
        for (uint32_t x = a->active_mask; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            uint64_t word;
            if (!wr_shadow_lane_word(a, lane, size, &lo, &hi, &word))
                return false;
            words[lane] = word;
            same |= (uint32_t)(word == prev) << lane;
            prev = word;
            owned &= ~((uint32_t)(wr_shard_of(a->space, a->launch, a->block,
                                              word << WR_WORD_SHIFT, shards) != shard) << lane);
        }
        for (uint32_t x = owned; x; x &= x - 1) {
            unsigned lane = (unsigned)__builtin_ctz(x);
            n = wr_shadow_lane_resolve(m, page, ctx, out, n, lane, words[lane],
                                       (same >> lane) & 1u, &last_pn, &p);
        }
        out->owned = owned;
    }
    out->n = n;
    out->lo = lo;
    out->hi = hi + size - 1;
    return !out->split;   /* a split word's bytes: the engine's general path */
}

#endif

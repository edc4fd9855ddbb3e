/* Page-table shadow map: see shadow.h. */
#include "shadow.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ASan does not watch mmap'd memory: under it every page is its own heap
 * block, so an overrun of a page is still caught. */
#define WR_SHADOW_HEAP_PAGES WR_UNDER_ASAN

#define SLAB_BYTES (2u << 20)

static bool simd_allowed = true;

void wr_shadow_allow_simd(bool allow)
{
    simd_allowed = allow;
}

bool wr_shadow_simd(void)
{
#if WR_SHADOW_AVX2
    return simd_allowed && __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

wr_shadow_map *wr_shadow_new(size_t cell_bytes, wr_shadow_expand_fn expand)
{
    wr_shadow_map *m = xcalloc(1, sizeof *m);
    m->cell_bytes = cell_bytes;
    m->expand = expand;
    m->page_bytes = WR_SHADOW_PAGE_WORDS * cell_bytes;
    m->reps_bytes = (WR_SHADOW_LINES * cell_bytes + 15u) & ~(size_t)15u;
    m->cap = 64;
    m->slots = xcalloc(m->cap, sizeof *m->slots);
    return m;
}

/* A slab of fresh anonymous memory: already zero, so a page needs no
 * memset, and not touched here: cells are written (line by line, on
 * expansion) before they are read, so a first read never maps the kernel's
 * zero page for a write to copy (and flush every worker's TLB), and the
 * lines that stay packed are never made resident.  (Transparent huge pages
 * for the slabs were tried: no gain on the gather trace, and sys time
 * spiked with compaction.) */
static void *slab_new(void)
{
    unsigned char *slab = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slab == MAP_FAILED)
        return wr_out_of_memory(SLAB_BYTES);
    return slab;
}

/* Cells of a reused page: the expanded lines are zeroed again, the packed
 * ones were never written. */
static void cells_clear(const wr_shadow_map *m, wr_shadow_page *p)
{
    size_t line_bytes = WR_SHADOW_LINE_WORDS * m->cell_bytes;
    for (uint32_t x = p->expanded; x; x &= x - 1)
        memset(p->cells + (unsigned)__builtin_ctz(x) * line_bytes, 0, line_bytes);
}

static unsigned char *cells_alloc(wr_shadow_map *m, unsigned shared);

static void *arena_block(wr_shadow_slabs *s, size_t align, size_t bytes)
{
    if (s->narenas == s->caparenas) {
        s->caparenas = s->caparenas ? 2 * s->caparenas : 16;
        s->arenas = xrealloc(s->arenas, s->caparenas * sizeof *s->arenas);
    }
    void *b = aligned_alloc(align, bytes);
    if (!b)
        return wr_out_of_memory(bytes);
    memset(b, 0, bytes);
    s->arenas[s->narenas++] = b;
    return b;
}

/* A new page's header and reps, zero: side by side with the other pages'
 * (shadow.h), or, under ASan, each its own heap block. */
static wr_shadow_page *header_alloc(wr_shadow_map *m)
{
    wr_shadow_slabs *s = &m->mem;
    wr_shadow_page *p;
    if (WR_SHADOW_HEAP_PAGES) {
        p = aligned_alloc(64, sizeof *p);
        unsigned char *reps = aligned_alloc(16, m->reps_bytes);
        if (!p || !reps)
            return wr_out_of_memory(sizeof *p + m->reps_bytes);
        memset(p, 0, sizeof *p);
        memset(reps, 0, m->reps_bytes);
        p->reps = reps;
        return p;
    }
    if (!s->arena_left) {
        s->next_header = arena_block(s, 64, WR_SHADOW_ARENA_PAGES * sizeof *p);
        s->next_reps = arena_block(s, 16, WR_SHADOW_ARENA_PAGES * m->reps_bytes);
        s->arena_left = WR_SHADOW_ARENA_PAGES;
    }
    p = s->next_header++;
    p->reps = s->next_reps;
    s->next_reps += m->reps_bytes;
    s->arena_left--;
    return p;
}

static wr_shadow_page *page_alloc(wr_shadow_map *m, unsigned shared)
{
    wr_shadow_slabs *s = &m->mem;
    wr_shadow_page *p;
    if (s->nspare[shared]) {
        p = s->spare[shared][--s->nspare[shared]];
        free(p->split);
        unsigned char *cells = p->cells, *reps = p->reps;
        cells_clear(m, p);
        memset(p, 0, sizeof *p);
        memset(reps, 0, m->reps_bytes);
        p->cells = cells;
        p->reps = reps;
    } else {
        p = header_alloc(m);
        p->cells = cells_alloc(m, shared);
    }
    return p;
}

/* On sm_90 a block's shared memory starts at offset 0x400 of its window
 * (the first KiB is reserved: every shared access of the litmus and
 * benchmark kernels recorded on the H100 and H200, on both recording
 * paths, lies above it), that is at word 256 of the block's first shadow
 * page.  A shared page's cells are placed so that this word's cell begins
 * a page of the OS: a tile of up to 2 KiB then makes one OS page of
 * 8-byte cells resident, not two (a stencil's 264-word tile at 0x400 made
 * both resident in every block). */
#define SHARED_FIRST_WORD 256u
#define OS_PAGE 4096u

static unsigned char *cells_alloc(wr_shadow_map *m, unsigned shared)
{
    wr_shadow_slabs *s = &m->mem;
    if (WR_SHADOW_HEAP_PAGES || m->page_bytes > SLAB_BYTES)
        return xcalloc(1, m->page_bytes);
    if (s->left[shared] < m->page_bytes) {
        if (s->nslabs == s->capslabs) {
            s->capslabs = s->capslabs ? 2 * s->capslabs : 16;
            s->slabs = xrealloc(s->slabs, s->capslabs * sizeof *s->slabs);
        }
        unsigned char *slab = slab_new();
        s->slabs[s->nslabs++] = slab;
        size_t skew = shared ? (OS_PAGE - SHARED_FIRST_WORD * m->cell_bytes % OS_PAGE) % OS_PAGE : 0;
        s->next[shared] = slab + skew;
        s->left[shared] = SLAB_BYTES - skew;
    }
    unsigned char *cells = s->next[shared];
    s->next[shared] += m->page_bytes;
    s->left[shared] -= m->page_bytes;
    return cells;
}

static void page_free(const wr_shadow_map *m, wr_shadow_page *p)
{
    free(p->split);
    if (WR_SHADOW_HEAP_PAGES || m->page_bytes > SLAB_BYTES)
        free(p->cells);
    if (WR_SHADOW_HEAP_PAGES) {   /* otherwise the arenas go whole */
        free(p->reps);
        free(p);
    }
}

static void page_release(wr_shadow_map *m, wr_shadow_page *p)
{
    wr_shadow_slabs *s = &m->mem;
    if (WR_SHADOW_HEAP_PAGES) {   /* each page its own heap block, as ASan sees it */
        page_free(m, p);
        return;
    }
    unsigned shared = wr_shadow_key_shared(p->key);
    if (s->nspare[shared] == s->capspare[shared]) {
        s->capspare[shared] = s->capspare[shared] ? 2 * s->capspare[shared] : 64;
        s->spare[shared] = xrealloc(s->spare[shared], s->capspare[shared] * sizeof *s->spare[shared]);
    }
    s->spare[shared][s->nspare[shared]++] = p;
}

void wr_shadow_free(wr_shadow_map *m)
{
    if (!m)
        return;
    wr_shadow_free(m->bytes);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].page)
            page_free(m, m->slots[i].page);
    for (unsigned k = 0; k < 2; k++)
        for (size_t i = 0; i < m->mem.nspare[k]; i++)
            page_free(m, m->mem.spare[k][i]);
    for (size_t i = 0; i < m->mem.nslabs; i++)
        munmap(m->mem.slabs[i], SLAB_BYTES);
    free(m->mem.slabs);
    for (size_t i = 0; i < m->mem.narenas; i++)
        free(m->mem.arenas[i]);
    free(m->mem.arenas);
    free(m->mem.spare[0]);
    free(m->mem.spare[1]);
    free(m->shared_keys);
    free(m->slots);
    free(m);
}

static void grow(wr_shadow_map *m)
{
    size_t ncap = m->cap * 2;
    struct wr_shadow_slot *ns = xcalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].page)
            continue;
        size_t j = wr_shadow_hash(m->slots[i].key) & (ncap - 1);
        while (ns[j].page)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

/* Removes the page in slot i. */
static void remove_slot(wr_shadow_map *m, size_t i)
{
    size_t mask = m->cap - 1;
    for (unsigned r = 0; r < WR_SHADOW_RECENT; r++)
        if (m->recent[r] == m->slots[i].page)
            m->recent[r] = NULL;
    page_release(m, m->slots[i].page);
    m->slots[i].page = NULL;
    m->count--;
    /* backward-shift deletion keeps probe chains intact */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].page)
            break;
        size_t home = wr_shadow_hash(m->slots[j].key) & mask;
        /* move j into the hole i if its home is not in (i, j] cyclically */
        bool in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->slots[i] = m->slots[j];
            m->slots[j].page = NULL;
            i = j;
        }
    }
}

static bool page_present(const wr_shadow_map *m, uint64_t key)
{
    return m->slots[wr_shadow_slot_of(m, key)].page != NULL;
}

static void list_shared_key(wr_shadow_map *m, uint64_t key)
{
    if (m->nshared_keys == m->capshared_keys) {
        /* the keys of pages removed since (block exits, sweeps) go first:
         * the list grows only with the shared pages that live */
        size_t n = 0;
        for (size_t i = 0; i < m->nshared_keys; i++)
            if (page_present(m, m->shared_keys[i]))
                m->shared_keys[n++] = m->shared_keys[i];
        m->nshared_keys = n;
        if (!m->capshared_keys || n * 2 > m->capshared_keys) {
            m->capshared_keys = m->capshared_keys ? 2 * m->capshared_keys : 64;
            m->shared_keys = xrealloc(m->shared_keys, m->capshared_keys * sizeof *m->shared_keys);
        }
    }
    m->shared_keys[m->nshared_keys++] = key;
}

void wr_shadow_drop_launch(wr_shadow_map *m, uint32_t launch,
                           void (*before)(wr_shadow_page *, void *), void *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nshared_keys; i++) {
        uint64_t key = m->shared_keys[i];
        if (!wr_shadow_key_of_launch(key, launch)) {
            m->shared_keys[n++] = key;
            continue;
        }
        size_t slot = wr_shadow_slot_of(m, key);
        if (!m->slots[slot].page)
            continue;   /* removed before (a block exit) */
        if (before)
            before(m->slots[slot].page, ctx);
        remove_slot(m, slot);
    }
    m->nshared_keys = n;
    wr_shadow_forget_recent(m);
    if (m->bytes)
        wr_shadow_drop_launch(m->bytes, launch, before, ctx);
}

wr_shadow_page *wr_shadow_lookup_slow(wr_shadow_map *m, uint64_t key, bool create)
{
    size_t i = wr_shadow_slot_of(m, key);
    if (m->slots[i].page) {
        wr_shadow_remember(m, key, m->slots[i].page);
        return m->slots[i].page;
    }
    if (!create)
        return NULL;
    if ((m->count + 1) * 2 > m->cap) {
        grow(m);
        i = wr_shadow_slot_of(m, key);
    }
    unsigned shared = wr_shadow_key_shared(key);
    if (shared) {
        list_shared_key(m, key);
        uint32_t page_index = (uint32_t)(key & 0x3fffu);
        if (page_index >= m->shared_page_end)
            m->shared_page_end = page_index + 1;
    }
    wr_shadow_page *p = page_alloc(m, shared);
    p->key = key;
    m->slots[i].key = key;
    m->slots[i].page = p;
    m->count++;
    wr_shadow_remember(m, key, p);
    return p;
}

void wr_shadow_remember(wr_shadow_map *m, uint64_t key, wr_shadow_page *p)
{
    _Static_assert(WR_SHADOW_RECENT == 4, "the moves below are unrolled for 4");
    /* the entries above p's place (or all but the last, evicted) move down */
    if (m->recent[0] == p) {
        m->recent_key[0] = key;
        return;
    }
    if (m->recent[1] != p) {
        if (m->recent[2] != p) {
            m->recent_key[3] = m->recent_key[2];
            m->recent[3] = m->recent[2];
        }
        m->recent_key[2] = m->recent_key[1];
        m->recent[2] = m->recent[1];
    }
    m->recent_key[1] = m->recent_key[0];
    m->recent[1] = m->recent[0];
    m->recent_key[0] = key;
    m->recent[0] = p;
}

void wr_shadow_forget_recent(wr_shadow_map *m)
{
    for (unsigned i = 0; i < WR_SHADOW_RECENT; i++)
        m->recent[i] = NULL;
}

void wr_shadow_drop_block(wr_shadow_map *m, uint32_t launch, uint32_t block,
                          void (*before)(wr_shadow_page *, void *), void *ctx)
{
    for (uint32_t i = 0; i < m->shared_page_end; i++) {
        size_t slot = wr_shadow_slot_of(
            m, wr_shadow_key(WR_SPACE_SHARED, launch, block, (uint64_t)i << WR_SHADOW_PAGE_SHIFT));
        if (!m->slots[slot].page)
            continue;
        if (before)
            before(m->slots[slot].page, ctx);
        remove_slot(m, slot);
    }
    wr_shadow_forget_recent(m);
    if (m->bytes)
        wr_shadow_drop_block(m->bytes, launch, block, before, ctx);
}

/* The key of byte page k (0-3) of the word page with key `key`: a word
 * page's 1024 words are 4096 bytes, four byte pages.  Shared pages keep
 * their launch and block bits; a block's shared bytes (< 2^24) need 14
 * bits of page index as its words need 12. */
static uint64_t byte_page_key(uint64_t key, unsigned k)
{
    if (wr_shadow_key_shared(key))
        return (key & ~0x3fffull) | ((((key & 0x3fffull) << 2) + k) & 0x3fffull);
    return ((key << 2) + k) & ~WR_SHADOW_KEY_SHARED;
}

void wr_shadow_remove(wr_shadow_map *m, uint64_t key)
{
    size_t i = wr_shadow_slot_of(m, key);
    if (!m->slots[i].page)
        return;
    bool split = wr_shadow_page_split(m->slots[i].page);
    remove_slot(m, i);
    for (unsigned k = 0; split && k < 4; k++)
        wr_shadow_remove(m->bytes, byte_page_key(key, k));
}

void wr_shadow_foreach(wr_shadow_map *m, void (*fn)(wr_shadow_page *, void *), void *ctx)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].page)
            fn(m->slots[i].page, ctx);
    if (m->bytes)
        wr_shadow_foreach(m->bytes, fn, ctx);
}

/* The page of the byte cells of `word` of p. */
static wr_shadow_page *byte_page_of(wr_shadow_map *m, const wr_shadow_page *p, uint64_t word)
{
    unsigned k = (unsigned)((word & WR_SHADOW_PAGE_MASK) >> (WR_SHADOW_PAGE_SHIFT - 2));
    return wr_shadow_get(m->bytes, byte_page_key(p->key, k));
}

unsigned wr_shadow_byte_pages(wr_shadow_map *m, const wr_shadow_page *p, wr_shadow_page **out)
{
    if (!wr_shadow_page_split(p))
        return 0;
    enum { QUARTER = WR_SHADOW_PAGE_WORDS / 4, BITS = QUARTER / 64 };
    unsigned n = 0;
    for (unsigned k = 0; k < 4; k++) {
        uint64_t any = 0;
        for (unsigned i = 0; i < BITS; i++)
            any |= p->split[k * BITS + i];
        if (any)
            out[n++] = byte_page_of(m, p, (uint64_t)k * QUARTER);
    }
    return n;
}

void *wr_shadow_byte_cells(wr_shadow_map *m, wr_shadow_page *p, uint64_t word,
                           wr_shadow_split_fn split, void *ctx, wr_shadow_page **byte_page)
{
    if (!m->bytes)
        m->bytes = wr_shadow_new(m->cell_bytes, m->expand);
    wr_shadow_page *bp = byte_page_of(m, p, word);
    /* the four cells lie in one line: 4-aligned, lines of 32 */
    void *cells = wr_shadow_cell(m->bytes, bp, word << 2);
    if (!wr_shadow_word_split(p, word)) {
        if (!p->split)
            p->split = xcalloc(WR_SHADOW_PAGE_WORDS / 64, sizeof *p->split);
        void *word_cell = wr_shadow_cell(m, p, word);
        split(cells, word_cell, bp, ctx);
        memset(word_cell, 0, m->cell_bytes);
        unsigned i = (unsigned)(word & WR_SHADOW_PAGE_MASK);
        p->split[i >> 6] |= 1ull << (i & 63u);
    }
    if (byte_page)
        *byte_page = bp;
    return cells;
}

void wr_shadow_expand_line(const wr_shadow_map *m, wr_shadow_page *p, unsigned line)
{
    size_t cb = m->cell_bytes;
    unsigned char *cells = p->cells + (size_t)line * WR_SHADOW_LINE_WORDS * cb;
    const unsigned char *rep = p->reps + (size_t)line * cb;
    bool zero = true;
    for (size_t i = 0; i < cb && zero; i++)
        zero = !rep[i];
    if (zero)
        memset(cells, 0, WR_SHADOW_LINE_WORDS * cb);   /* written before read: see slab_new */
    else
        m->expand(cells, rep);
    memset(p->reps + (size_t)line * cb, 0, cb);
    p->expanded |= 1u << line;
}

/* Whether one cell (or a packed line's rep) is not all zero: one or two
 * 64-bit loads for the engines' 8- and 16-byte cells (cells and reps are
 * 8-byte aligned), bytes otherwise. */
static inline bool cell_nonzero(const unsigned char *c, size_t cell_bytes)
{
    const uint64_t *w = (const uint64_t *)(const void *)c;
    if (cell_bytes == 8)
        return w[0] != 0;
    if (cell_bytes == 16)
        return (w[0] | w[1]) != 0;
    unsigned char any = 0;
    for (size_t k = 0; k < cell_bytes; k++)
        any |= c[k];
    return any != 0;
}

/* The cells of one line that are not all zero; called with the engines'
 * cell sizes as constants, so that each loop is one load or two a cell. */
static inline __attribute__((always_inline)) size_t line_nonzero(const unsigned char *cells,
                                                                 size_t cell_bytes)
{
    size_t live = 0;
    for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
        live += cell_nonzero(cells + (size_t)i * cell_bytes, cell_bytes);
    return live;
}

static size_t page_nonzero(const wr_shadow_map *m, wr_shadow_page *p, bool clear)
{
    size_t live = 0;
    for (unsigned l = 0; l < WR_SHADOW_LINES; l++) {
        if (wr_shadow_line_packed(p, l)) {
            unsigned char *rep = wr_shadow_line_rep(m, p, l);
            if (cell_nonzero(rep, m->cell_bytes)) {
                if (clear)
                    memset(rep, 0, m->cell_bytes);
                live += WR_SHADOW_LINE_WORDS;
            }
            continue;
        }
        unsigned char *cells = wr_shadow_cells_at(m, p, (uint64_t)l << WR_SHADOW_LINE_SHIFT);
        live += m->cell_bytes == 8    ? line_nonzero(cells, 8)
                : m->cell_bytes == 16 ? line_nonzero(cells, 16)
                                      : line_nonzero(cells, m->cell_bytes);
        if (clear)
            memset(cells, 0, WR_SHADOW_LINE_WORDS * m->cell_bytes);
    }
    return live;
}

void wr_shadow_zero_page(const wr_shadow_map *m, wr_shadow_page *p)
{
    memset(p->reps, 0, WR_SHADOW_LINES * m->cell_bytes);
    size_t line_bytes = WR_SHADOW_LINE_WORDS * m->cell_bytes;
    if (p->expanded == UINT32_MAX) {
        memset(p->cells, 0, WR_SHADOW_LINES * line_bytes);
        return;
    }
    for (uint32_t x = p->expanded; x; x &= x - 1)
        memset(p->cells + (size_t)__builtin_ctz(x) * line_bytes, 0, line_bytes);
}

size_t wr_shadow_nonzero_cells(const wr_shadow_map *m, wr_shadow_page *p)
{
    return page_nonzero(m, p, false);
}

size_t wr_shadow_clear_page(const wr_shadow_map *m, wr_shadow_page *p)
{
    return page_nonzero(m, p, true);
}

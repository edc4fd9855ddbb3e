/*
 * Allocation for the analyzer's state.  A replay cannot continue without the
 * memory it asked for, and a half-analysed trace must not look analysed, so
 * running out of memory ends the process with a message and a status that
 * says so; the run's transaction was never committed.
 */
#ifndef WARPRACE_XALLOC_H
#define WARPRACE_XALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The exit status when the analysis cannot go on for memory (or a limit
 * of the shadow cells): apart from 3, an incomplete trace, so that a
 * script does not take a run that stopped for a truncated trace. */
#define WR_EXIT_OUT_OF_MEMORY 4

static inline void *wr_out_of_memory(size_t bytes)
{
    fprintf(stderr, "warprace: out of memory (allocating %zu bytes)\n", bytes);
    exit(WR_EXIT_OUT_OF_MEMORY);
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : wr_out_of_memory(n);
}

/* Zeroed by writing, not by calloc: calloc hands out fresh pages untouched,
 * the first read of one maps the kernel's shared zero page and the first
 * write then copies it -- and, with other workers running, flushes their
 * TLBs (an IPI per page: a fifth of a 2-worker profile on hash tables and
 * shadow pages that are probed before they are filled). */
static void *(*volatile wr_zero_fill)(void *, int, size_t) = memset; /* GCC folds malloc+memset into calloc */

static inline void *xcalloc(size_t n, size_t s)
{
    if (n && s > SIZE_MAX / n)
        return wr_out_of_memory(SIZE_MAX);
    size_t bytes = (n ? n : 1) * (s ? s : 1);
    void *p = malloc(bytes);
    if (!p)
        return wr_out_of_memory(bytes);
    return wr_zero_fill(p, 0, bytes);
}

static inline void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : wr_out_of_memory(n);
}

/* ASan watches only the heap blocks it hands out: where the analyzer
 * recycles memory itself (shadow slabs, object pools), under ASan it falls
 * back to one heap block per object so that overruns and uses after free
 * are still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define WR_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WR_UNDER_ASAN 1
#endif
#endif
#ifndef WR_UNDER_ASAN
#define WR_UNDER_ASAN 0
#endif

/* Regions: large zeroed allocations straight from the kernel, aligned to
 * and advised for transparent huge pages.  Grids of small blocks create
 * per-block and per-warp state by the hundred thousand, written once each:
 * with 4 KiB pages a third of fsm's time on such a grid went to page
 * faults (one per 4 KiB of new state); a huge page takes one fault per
 * 2 MiB.  Only for memory that fills densely (pool slabs, block tables):
 * sparse shadow cells stay on small pages (shadow.c).  `bytes` is rounded
 * up to whole huge pages. */
#define WR_REGION_ALIGN ((size_t)2 << 20)

static inline size_t wr_region_bytes(size_t bytes)
{
    return (bytes + WR_REGION_ALIGN - 1) & ~(WR_REGION_ALIGN - 1);
}

static inline void *wr_region_alloc(size_t bytes)
{
    bytes = wr_region_bytes(bytes);
    size_t span = bytes + WR_REGION_ALIGN;
    if (span < bytes)
        return wr_out_of_memory(SIZE_MAX);
    unsigned char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return wr_out_of_memory(bytes);
    uintptr_t at = ((uintptr_t)raw + WR_REGION_ALIGN - 1) & ~(uintptr_t)(WR_REGION_ALIGN - 1);
    size_t head = at - (uintptr_t)raw;
    if (head)
        munmap(raw, head);
    if (span - head - bytes)
        munmap((unsigned char *)at + bytes, span - head - bytes);
#ifdef MADV_HUGEPAGE
    madvise((void *)at, bytes, MADV_HUGEPAGE);   /* advice only: small pages if refused */
#endif
    return (void *)at;
}

static inline void wr_region_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, wr_region_bytes(bytes));
}

/* A pool of zeroed objects of one size (at least a pointer's), carved from
 * slabs: get() hands out a recycled or a fresh object, zeroed; put() links
 * a freed object into the pool's free list through its first bytes (no
 * side array: dropping a million-block launch's state costs no memory
 * beyond the objects themselves); wr_pool_release() frees the slabs, and
 * with them every object, handed out or not, so that a caller whose state
 * all comes from pools can drop it without visiting each object.  Per-block
 * and per-warp state comes and goes by the million on grids of small
 * blocks, where one free() per object at the end was a fifth of an
 * engine's time.  Slabs start at WR_POOL_SLAB_OBJECTS objects and double
 * up to WR_POOL_SLAB_MAX bytes; from WR_REGION_ALIGN bytes on they are
 * regions, fresh from the kernel and so already zero: their objects are
 * handed out without a memset.  Under ASan every object is its own heap
 * block behind a link into the pool's list of objects handed out (get =
 * calloc, put = unlink and free, release = free what the list holds): the
 * same contract, with overruns and uses after free caught. */
#define WR_POOL_SLAB_OBJECTS 256
#define WR_POOL_SLAB_MAX ((size_t)8 << 20)

typedef struct wr_pool_link {
    struct wr_pool_link *prev, *next;
} wr_pool_link;

typedef struct wr_pool_slab {
    void *base;
    size_t bytes;             /* >= WR_REGION_ALIGN: a region */
} wr_pool_slab;

typedef struct wr_pool {
    size_t size;
    void *free_list;          /* recycled objects, linked through their first bytes */
    wr_pool_slab *slabs;
    size_t nslabs, capslabs;
    unsigned char *next;      /* the rest of the newest slab */
    size_t left;              /* objects left in it */
    bool next_zero;           /* the newest slab is a region: its objects are zero */
    wr_pool_link *handed_out; /* under ASan: the objects handed out */
} wr_pool;

static inline void wr_pool_new_slab(wr_pool *p)
{
    if (p->nslabs == p->capslabs) {
        p->capslabs = p->capslabs ? 2 * p->capslabs : 16;
        p->slabs = xrealloc(p->slabs, p->capslabs * sizeof *p->slabs);
    }
    size_t bytes = WR_POOL_SLAB_OBJECTS * p->size;
    for (size_t i = 0; i < p->nslabs && bytes < WR_POOL_SLAB_MAX; i++)
        bytes *= 2;
    if (bytes >= WR_REGION_ALIGN) {
        bytes = wr_region_bytes(bytes);
        p->next = wr_region_alloc(bytes);
    } else {
        p->next = xmalloc(bytes);
    }
    p->next_zero = bytes >= WR_REGION_ALIGN;
    p->slabs[p->nslabs++] = (wr_pool_slab){p->next, bytes};
    p->left = bytes / p->size;
}

static inline void *wr_pool_get(wr_pool *p)
{
    if (WR_UNDER_ASAN) {
        wr_pool_link *l = xcalloc(1, sizeof *l + p->size);
        l->next = p->handed_out;
        if (l->next)
            l->next->prev = l;
        p->handed_out = l;
        return l + 1;
    }
    if (p->free_list) {
        void *obj = p->free_list;
        memcpy(&p->free_list, obj, sizeof p->free_list);
        /* the next get reads the new head's first bytes: a recycled object
         * is cold by then (a gather's read sets free and take arrays all
         * over the pool, and that load was half of taking one) */
        __builtin_prefetch(p->free_list, 1);
        return wr_zero_fill(obj, 0, p->size);
    }
    if (!p->left)
        wr_pool_new_slab(p);
    void *obj = p->next;
    p->next += p->size;
    p->left--;
    return p->next_zero ? obj : wr_zero_fill(obj, 0, p->size);
}

static inline void wr_pool_put(wr_pool *p, void *obj)
{
    if (!obj)
        return;
    if (WR_UNDER_ASAN) {
        wr_pool_link *l = (wr_pool_link *)obj - 1;
        if (l->prev)
            l->prev->next = l->next;
        else
            p->handed_out = l->next;
        if (l->next)
            l->next->prev = l->prev;
        free(l);
        return;
    }
    memcpy(obj, &p->free_list, sizeof p->free_list);
    p->free_list = obj;
}

static inline void wr_pool_release(wr_pool *p)
{
    for (wr_pool_link *l = p->handed_out, *next; l; l = next) {
        next = l->next;
        free(l);
    }
    for (size_t i = 0; i < p->nslabs; i++) {
        if (p->slabs[i].bytes >= WR_REGION_ALIGN)
            wr_region_free(p->slabs[i].base, p->slabs[i].bytes);
        else
            free(p->slabs[i].base);
    }
    free(p->slabs);
    size_t size = p->size;
    *p = (wr_pool){.size = size};
}

#endif

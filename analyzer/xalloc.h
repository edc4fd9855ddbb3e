/*
 * Allocation for the analyzer's state.  A replay cannot continue without the
 * memory it asked for, and a half-analysed trace must not look analysed, so
 * running out of memory ends the process with a message and a status that
 * says so; the run's transaction was never committed.
 */
#ifndef WARPRACE_XALLOC_H
#define WARPRACE_XALLOC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WR_EXIT_OUT_OF_MEMORY 3

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

#endif

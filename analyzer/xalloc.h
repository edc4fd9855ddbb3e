/*
 * Allocation for the analyzer's state.  A replay cannot continue without the
 * memory it asked for, and a half-analysed trace must not look analysed, so
 * running out of memory ends the process with a message and a status that
 * says so; the run's transaction was never committed.
 */
#ifndef WARPRACE_XALLOC_H
#define WARPRACE_XALLOC_H

#include <stdio.h>
#include <stdlib.h>

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

static inline void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s ? s : 1);
    return p ? p : wr_out_of_memory(n * s);
}

static inline void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : wr_out_of_memory(n);
}

#endif

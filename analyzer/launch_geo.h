/*
 * launch_geo.h: the grid, block and cluster dimensions of each launch, for
 * the engines that keep per-block state by linear block index (fsm,
 * lockset): which blocks share a thread-block cluster, how many threads a
 * block has.  Launches are noted as their KERNEL_LAUNCH events arrive; a
 * launch never announced has no geometry (NULL).  Kept for the whole
 * trace: 36 bytes per launch.
 */
#ifndef WARPRACE_LAUNCH_GEO_H
#define WARPRACE_LAUNCH_GEO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "u32map.h"
#include "warprace/event.h"
#include "xalloc.h"

typedef struct wr_launch_geo {
    uint32_t grid[3], block_dim[3], cluster[3];
} wr_launch_geo;

typedef struct wr_launch_geos {
    wr_u32map ix;           /* launch id -> index + 1 into g */
    wr_launch_geo *g;
    uint32_t n, cap;
    uint32_t clustered;     /* launches whose clusters hold several blocks */
} wr_launch_geos;

static inline void wr_launch_geos_note(wr_launch_geos *s, const wr_launch *l)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->g = xrealloc(s->g, s->cap * sizeof *s->g);
    }
    wr_launch_geo *g = &s->g[s->n++];
    memcpy(g->grid, l->grid, sizeof g->grid);
    memcpy(g->block_dim, l->block_dim, sizeof g->block_dim);
    memcpy(g->cluster, l->cluster, sizeof g->cluster);
    wr_map_put(&s->ix, l->launch, s->n);
    s->clustered += l->cluster[0] > 1 || l->cluster[1] > 1 || l->cluster[2] > 1;
}

static inline const wr_launch_geo *wr_launch_geos_get(const wr_launch_geos *s, uint32_t launch)
{
    uint32_t i = wr_map_get(&s->ix, launch);
    return i ? &s->g[i - 1] : NULL;
}

/* Does g's every cluster hold one block (or is the launch unknown)? */
static inline int wr_launch_geo_single_block_clusters(const wr_launch_geo *g)
{
    return !g || (g->cluster[0] <= 1 && g->cluster[1] <= 1 && g->cluster[2] <= 1);
}

/* Blocks in g's grid (dimensions of 0 count as 1). */
static inline uint64_t wr_launch_geo_blocks(const wr_launch_geo *g)
{
    return (uint64_t)g->grid[0] * (g->grid[1] ? g->grid[1] : 1) * (g->grid[2] ? g->grid[2] : 1);
}

/* Do blocks a and b of g share a thread-block cluster? */
static inline int wr_launch_geo_same_cluster(const wr_launch_geo *g, uint32_t a, uint32_t b)
{
    return wr_cluster_of(g->grid, g->cluster, a) == wr_cluster_of(g->grid, g->cluster, b);
}

/* Threads per block; 0 when unknown (no launch, or no block size). */
static inline uint64_t wr_launch_geo_threads(const wr_launch_geo *g)
{
    if (!g || !g->block_dim[0])
        return 0;
    uint64_t t = 1;
    for (int i = 0; i < 3; i++)
        t *= g->block_dim[i] ? g->block_dim[i] : 1;
    return t;
}

static inline void wr_launch_geos_free(wr_launch_geos *s)
{
    free(s->g);
    wr_map_free(&s->ix);
    memset(s, 0, sizeof *s);
}

#endif

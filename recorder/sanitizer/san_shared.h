/* Per-launch data shared by the injection library (host) and the patches
 * (device): the `userdata` every patch callback receives. */
#ifndef WARPRACE_SAN_SHARED_H
#define WARPRACE_SAN_SHARED_H

#include <stdint.h>

#include "ring_format.h"

#define WRS_DMALLOC_MAX 4096u

typedef struct wrs_dmalloc_rec {
    uint64_t ptr, size;            /* size 0: a free */
} wrs_dmalloc_rec;

/* A CUDA graph kernel node's entry in its graph launch's node table.  The
 * data a patch receives is the latest set for the node's stream (an H100
 * run: two nodes issued on one internal stream both got the second's), so
 * every node's data points at one table of the launch's nodes, and a patch
 * finds its own by the grid it runs in: %gridid, which is the gridId the
 * node launch callback gives (open addressing from gridid & mask). */
typedef struct wrs_node_data {
    uint64_t grid_key;             /* gridId + 1; 0 = an empty slot */
    uint32_t tag;                  /* its records' launch tag; 0: not recorded */
    uint32_t block_threads;
    unsigned int *block_enter, *block_exit;
} wrs_node_data;

typedef struct wrs_launch_data {
    wrr_dev_state *state;          /* the recorder's ring state (device) */
    unsigned int *block_enter;     /* per block: 0, 1 = being recorded, 2 = recorded */
    unsigned int *block_exit;      /* per block: threads that exited */
    uint32_t block_threads;        /* threads per block */
    uint32_t tag;                  /* the launch tag its records carry (ring_format.h, w2):
                                      0 (a graph node's is in its nodes entry) */
    uint32_t node_mask;            /* the node table's size - 1 */
    wrs_node_data *nodes;          /* a graph launch's node table, or NULL */
    uint32_t ndmalloc;             /* device malloc/free records (may exceed the max) */
    wrs_dmalloc_rec dmalloc[WRS_DMALLOC_MAX];
} wrs_launch_data;

#endif

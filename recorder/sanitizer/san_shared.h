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

typedef struct wrs_launch_data {
    wrr_dev_state *state;          /* the recorder's ring state (device) */
    unsigned int *block_enter;     /* per block: 0, 1 = being recorded, 2 = recorded */
    unsigned int *block_exit;      /* per block: threads that exited */
    uint32_t block_threads;        /* threads per block */
    uint32_t tag;                  /* the launch tag its records carry (ring_format.h, w2):
                                      0, or a CUDA graph kernel node's index + 1 */
    uint32_t ndmalloc;             /* device malloc/free records (may exceed the max) */
    wrs_dmalloc_rec dmalloc[WRS_DMALLOC_MAX];
} wrs_launch_data;

#endif

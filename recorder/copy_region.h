/*
 * The device memory a pitched host copy touches (cudaMemcpy2D/3D,
 * cudaMemset2D/3D, and the Compute Sanitizer's memcpy/memset data): `depth`
 * planes of `height` rows of `width` bytes, row y of plane z of a side at
 * addr + z * slice + y * pitch.  A HOST_COPY event describes one contiguous
 * range per side, so a pitched copy becomes one event per contiguous run:
 * one per row where a device side has padding between rows, fewer where
 * rows (or whole planes) follow each other without a gap.
 */
#ifndef WARPRACE_RECORDER_COPY_REGION_H
#define WARPRACE_RECORDER_COPY_REGION_H

#include <stdint.h>

#include "warprace/event.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wrr_copy_side {
    uint64_t addr;          /* 0: host memory (its layout does not matter) */
    uint64_t pitch;         /* bytes from a row to the next */
    uint64_t slice;         /* bytes from a plane to the next */
} wrr_copy_side;

/* Called once per contiguous run, in address order of the rows; a host
 * side's address is passed as 0.  Returns 0 to go on, non-zero to stop. */
typedef int (*wrr_copy_run_fn)(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes);

/* Calls fn for every run of a copy of width x height x depth bytes from
 * src to dst (a memset: src.addr 0).  A height or depth of 0 counts as 1
 * (a 1D copy passes width = bytes); width 0 copies nothing.  Returns the
 * number of runs, or -1 when fn stopped it. */
long wrr_copy_runs(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                   uint64_t depth, wrr_copy_run_fn fn, void *ctx);

/* The same, as HOST_COPY events (kind: wr_copy_kind; stream: the trace's
 * stream id; site: the host call site's id, 0 unknown) handed to post one
 * by one. */
typedef void (*wrr_copy_post_fn)(void *ctx, const wr_event *ev);
void wrr_copy_events(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                     uint64_t depth, unsigned kind, uint32_t stream, int async, uint32_t site,
                     wrr_copy_post_fn post, void *ctx);

#ifdef __cplusplus
}
#endif
#endif

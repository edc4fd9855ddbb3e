/*
 * The recorder's host runtime inside the recorded process: allocates the
 * ring (mapped pinned memory) and the device state, installs the state in
 * every instrumented module, runs the drain thread and the trace writer,
 * and turns what the CUPTI callbacks see into host events.  Launches are
 * serialized (each is followed by a context synchronize) so that every
 * device record belongs to the one open launch (RECORDER.md).
 */
#ifndef WARPRACE_RECORDER_HOST_RUNTIME_H
#define WARPRACE_RECORDER_HOST_RUNTIME_H

#include <cuda.h>
#include <stdint.h>

#include "copy_region.h"

/* Set while the runtime itself calls CUDA: callbacks ignore those calls. */
extern __thread int wrr_rt_internal;
/* Set by the callbacks for the API call in progress: a _ptsz/_ptds variant
 * (a program built with --default-stream per-thread), whose NULL stream is
 * this host thread's default stream, not the legacy one. */
extern __thread int wrr_rt_per_thread_default;

/* Reads the configuration (environment) once.  Returns 0, or -1 when the
 * recorder is switched off (no WARPRACE_OUT). */
int wrr_rt_configure(void);
/* Creates ring, state, writer and drain thread for the current context
 * (first launch).  Returns 0 or -1 (then the process runs unrecorded). */
int wrr_rt_ensure(void);

void wrr_rt_launch_begin(CUfunction f, const char *name, const unsigned grid[3],
                         const unsigned block[3], const unsigned cluster[3],
                         unsigned dyn_shared, CUstream stream);
void wrr_rt_launch_end(CUstream stream);

void wrr_rt_alloc(uint64_t base, uint64_t size, const char *what);
void wrr_rt_free(uint64_t base);
/* kind: wr_copy_kind; an address 0 is host memory */
void wrr_rt_copy(uint64_t dst, uint64_t src, uint64_t bytes, unsigned kind, CUstream stream,
                 int async);
/* A pitched copy or memset (copy_region.h): one event per contiguous run. */
void wrr_rt_copy_region(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                        uint64_t depth, unsigned kind, CUstream stream, int async);
/* A host copy of device memory that could not be recorded (counted in
 * the summary, the first reason shown). */
void wrr_rt_copy_unrecorded(const char *why);
void wrr_rt_stream_sync(CUstream stream);
void wrr_rt_device_sync(void);
void wrr_rt_event_record(void *event, CUstream stream);
void wrr_rt_stream_wait(CUstream stream, void *event);
void wrr_rt_event_sync(void *event);
/* cuGraphLaunch: the graph's work runs unrecorded, counted as one lost event. */
void wrr_rt_graph_launch(CUstream stream);
void wrr_rt_nvtx_push(const char *name);
void wrr_rt_nvtx_pop(void);

/* Stops the drain, closes the trace, writes the summary.  Idempotent. */
void wrr_rt_shutdown(void);

#endif

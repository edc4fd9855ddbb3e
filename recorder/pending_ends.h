/*
 * Kernel ends that wait for the program to observe them.
 *
 * A recorder knows that a kernel finished as soon as its own
 * synchronization after the launch returns, but KERNEL_END orders the host
 * after the kernel (FORMAT.md), so posting it then would hide every race
 * between the kernel and what the host does before it synchronizes
 * (another stream's launch, an asynchronous copy).  Both recording paths
 * (host_runtime.c, sanitizer/inject_sanitizer.c) keep their launches here
 * and post the KERNEL_END when the program itself synchronizes with the
 * kernel's stream: a stream or device synchronization, a synchronous copy
 * on that stream, an event synchronization of an event recorded on it, or
 * the process exit.
 *
 * Not thread-safe: the caller holds its own lock around every call.
 */
#ifndef WARPRACE_RECORDER_PENDING_ENDS_H
#define WARPRACE_RECORDER_PENDING_ENDS_H

#include <stddef.h>
#include <stdint.h>

#include "warprace/event.h"

#define WRR_ALL_STREAMS UINT32_MAX

typedef void (*wrr_post_fn)(void *ctx, const wr_event *ev);

typedef struct wrr_pending_ends {
    struct { uint32_t launch, stream; } *ends;
    size_t nends, capends;
    /* event id -> stream id of its last record */
    struct { uint32_t event, stream; } *recorded;
    size_t nrecorded, caprecorded;
} wrr_pending_ends;

/* Returns 0, or -1 when out of memory (the end is then posted at once:
 * a missed race, never a lost event). */
int wrr_ends_add(wrr_pending_ends *p, uint32_t launch, uint32_t stream, wrr_post_fn post,
                 void *ctx);

/* Posts the KERNEL_END of every pending launch on `stream`, in launch
 * order (WRR_ALL_STREAMS: all of them). */
void wrr_ends_flush(wrr_pending_ends *p, uint32_t stream, wrr_post_fn post, void *ctx);

/* An event was recorded on `stream`: a later synchronization with it
 * observes that stream's kernels. */
void wrr_ends_event_recorded(wrr_pending_ends *p, uint32_t event, uint32_t stream);

/* The host synchronized with `event`: posts the ends of its stream's
 * kernels.  Conservative only in that kernels launched on the stream after
 * the event's record are taken as observed too. */
void wrr_ends_event_synced(wrr_pending_ends *p, uint32_t event, wrr_post_fn post, void *ctx);

void wrr_ends_free(wrr_pending_ends *p);

#endif

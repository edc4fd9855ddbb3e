/*
 * handle_ids.h: the small ids a trace names the program's streams and
 * events by (formats/FORMAT.md, "Stream ids"), shared by both recording
 * paths.  A handle keeps the id it was first given.  Streams: the legacy
 * default stream (NULL, CU_STREAM_LEGACY) is WR_STREAM_LEGACY; every other
 * stream gets the next number, with WR_STREAM_NON_BLOCKING set when the
 * caller's flags function says it was created non-blocking; a host thread's
 * per-thread default stream (CU_STREAM_PER_THREAD, or the NULL stream of a
 * _ptsz/_ptds call) is a blocking stream of that thread's own
 * (wrr_stream_id_of_thread).  Not thread-safe: callers hold their own lock.
 */
#ifndef WARPRACE_HANDLE_IDS_H
#define WARPRACE_HANDLE_IDS_H

#include <stddef.h>
#include <stdint.h>

/* cuda.h's special stream handles */
#define WRR_STREAM_HANDLE_LEGACY ((void *)0x1)
#define WRR_STREAM_HANDLE_PER_THREAD ((void *)0x2)
/* CU_STREAM_NON_BLOCKING, the flag cuStreamGetFlags reports */
#define WRR_STREAM_FLAG_NON_BLOCKING 0x1u

/* Reads a stream's creation flags (cuStreamGetFlags); returns 0 on success.
 * NULL, or a failure: the stream is taken for a blocking one. */
typedef int (*wrr_stream_flags_fn)(void *stream, unsigned *flags);

typedef struct wrr_handle_id {
    void *handle;
    uint32_t id;
    int is_event;   /* a stream and an event may share an address, one after the other */
} wrr_handle_id;

typedef struct wrr_handle_ids {
    wrr_handle_id *v;
    size_t n, cap;
    uint32_t next_stream, next_event;
} wrr_handle_ids;

/* The id of stream handle h (asks flags() for its flags on first sight). */
uint32_t wrr_stream_id(wrr_handle_ids *t, void *h, wrr_stream_flags_fn flags);
/* The id of the per-thread default stream of the host thread numbered
 * `thread` (the caller's own numbering, never reused: a thread's default
 * stream is not another's).  A blocking stream: it synchronizes with the
 * legacy default stream, not with other streams. */
uint32_t wrr_stream_id_of_thread(wrr_handle_ids *t, uint64_t thread);
/* The calling host thread's number (1, 2, ... in the order threads first
 * ask; never reused): the key of its default stream.  Thread-safe. */
uint64_t wrr_host_thread_number(void);
/* The id of event handle h (1, 2, ...). */
uint32_t wrr_event_id(wrr_handle_ids *t, void *h);
/* A stream id or an event id of no handle: the recorder's own, for
 * orderings the program's streams do not spell (a CUDA graph's nodes:
 * graph_order.h).  Such a stream is non-blocking: ordered with the legacy
 * stream only through the events that say so. */
uint32_t wrr_new_stream_id(wrr_handle_ids *t);
uint32_t wrr_new_event_id(wrr_handle_ids *t);
void wrr_handle_ids_free(wrr_handle_ids *t);

#endif

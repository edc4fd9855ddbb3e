/*
 * The host drain: reads committed records from the ring (host memory),
 * converts them, interleaves them with host-side events (launches, copies,
 * syncs posted by the CUPTI callbacks) and hands everything to a sink
 * (normally the trace writer, see writer_sink.c).  Plain C: the unit tests
 * run it against a ring in ordinary host memory (ring_sim.c).
 *
 * Ordering rules (RECORDER.md):
 *  - host events are emitted in the order they were posted;
 *  - device records are consumed only while a launch is open (between its
 *    posted KERNEL_LAUNCH and KERNEL_END or close) and no host event waits:
 *    launches are serialized by the runtime, and a close names the position
 *    where its launch's records end, so every record consumed belongs to
 *    the open launch, although the drain runs behind the program;
 *  - a KERNEL_END, or a close (wrr_drain_post_close), is processed after
 *    every record committed before it was posted (the runtime posts them
 *    after the kernel completed);
 *  - lost records (drop mode) appear as WR_EV_LOST at the point the drain
 *    noticed them, attributed to the open launch, block UINT32_MAX;
 *  - a launch group (the kernel nodes of a CUDA graph launch, which run
 *    concurrently and so cannot be serialized): each member is opened with
 *    a tag that its records carry (ring_format.h, w2), so its records are
 *    told from the other members' wherever they interleave; one group
 *    close bounds them all.  Records with tag 0 are the open launch's, as
 *    before.
 */
#ifndef WARPRACE_RECORDER_DRAIN_H
#define WARPRACE_RECORDER_DRAIN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ring_format.h"
#include "warprace/event.h"
#include "warprace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where converted events go. */
typedef struct wrr_sink {
    void *ctx;
    int (*event)(void *ctx, const wr_event *ev);          /* 0 or -1 */
    int (*flush)(void *ctx);                               /* 0 or -1 */
    /* Defines a source site, returns its catalog id (>= 1) or 0. */
    uint32_t (*site)(void *ctx, const char *file, uint32_t line, const char *function,
                     uint64_t pc);
    /* Optional: the stream ends (wrr_drain_finish, before its last flush);
     * a sink that holds events back emits them now.  0 or -1. */
    int (*finish)(void *ctx);
    /* Optional: why the last call failed (the drain's error names it). */
    const char *(*error)(void *ctx);
    /* Events encoded ahead, in order (wrr_drain_options.workers): appends
     * them as `event` would one by one.  Called from the worker threads,
     * one call at a time, concurrently with the drain thread's calls of
     * `site`.  0 or -1. */
    int (*encoded)(void *ctx, const wr_encoded *events);
} wrr_sink;

/* Reads `len` bytes of device memory at `addr` (site descriptors and their
 * strings).  Returns the bytes read (may be fewer near the end of the
 * memory), or -1. */
typedef long (*wrr_read_mem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The host's view of the ring. */
typedef struct wrr_ring {
    uint64_t *slots;             /* 2 << log2cap words */
    wrr_host_ctl *ctl;
    uint32_t log2cap;
} wrr_ring;

typedef struct wrr_drain_options {
    uint64_t flush_events;       /* flush the sink after this many events
                                    (0 = 65536) */
    uint64_t flush_ns;           /* ... or this long after the last flush
                                    when events are pending (0 = 200 ms) */
    uint64_t (*now_ns)(void);    /* clock (tests inject one); NULL = monotonic */
    wrr_read_mem_fn read_mem;    /* NULL: site addresses stay unresolved (0) */
    void *read_mem_ctx;
    /* Threads that convert and encode device records (0: the drain's own
     * thread does, one record at a time).  With workers the drain thread
     * only copies records out of the ring, in batches, and resolves their
     * sites; the workers convert and encode the batches in parallel and
     * hand them to sink.encoded in ring order, host events in their place:
     * the same event stream, the same flush points.  Needs sink.encoded. */
    unsigned workers;
} wrr_drain_options;

typedef struct wrr_drain_stats {
    uint64_t records;            /* device records consumed */
    uint64_t slots;              /* ring slots consumed */
    uint64_t device_events;      /* events from device records */
    uint64_t host_events;        /* events posted by the host */
    uint64_t lost_records;       /* total of the WR_EV_LOST counts emitted */
    uint64_t lost_lanes;         /* thread-level accesses in lost records */
    uint64_t lost_events_emitted;/* WR_EV_LOST events emitted */
    uint64_t flushes;
    uint64_t polls, idle_polls;
    uint64_t busy_ns;            /* time spent converting / writing (the
                                    drain thread's and the workers' together) */
    uint64_t sites;              /* distinct site descriptors resolved */
} wrr_drain_stats;

typedef struct wrr_site_entry {
    uint64_t addr;
    uint32_t id;
} wrr_site_entry;

typedef struct wrr_qnode wrr_qnode;
typedef struct wrr_pool wrr_pool;

typedef struct wrr_drain {
    wrr_ring ring;
    wrr_sink sink;
    wrr_drain_options opt;
    uint64_t pos;                /* next position to consume (== published tail) */
    uint32_t launch;             /* open launch, 0 = none */
    /* the launch group: group[tag - 1] = the launch whose records carry
     * tag (wrr_drain_post_tagged_launch), 0 = none; group_n = the highest
     * tag opened since the group's last close */
    uint32_t *group;
    uint32_t group_cap, group_n;
    uint64_t stop_at;            /* consume no record at or past this position */
    int in_host;                 /* processing a host event (which may drain) */
    uint64_t dropped_seen;       /* ctl->dropped_records already reported */
    uint64_t since_flush;        /* events written since the last flush */
    uint64_t last_flush_ns;
    wrr_drain_stats st;
    int failed;                  /* sink error or corrupt ring: stop */
    char error[512];
    /* site cache: open addressing, power-of-two size */
    wrr_site_entry *sites;
    size_t site_cap, site_count;
    /* host event queue (multi-producer, single consumer) */
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    wrr_qnode *qhead, *qtail;
    uint64_t posted, processed;  /* host events posted / processed */
    /* drain thread */
    pthread_t thread;
    int thread_running;
    volatile int stop;
    uint64_t poll_sleep_ns;
    wrr_pool *pool;              /* the workers (options.workers > 0) */
} wrr_drain;

/* Initializes d over ring (already allocated; ring.ctl->tail must be 0 and
 * the slots zeroed).  opts may be NULL.  Returns 0 or -1. */
int wrr_drain_init(wrr_drain *d, const wrr_ring *ring, const wrr_sink *sink,
                   const wrr_drain_options *opts);
void wrr_drain_destroy(wrr_drain *d);

/* A LOST event of `count` for work the host side could not record (launch
 * 0, block unknown): a CUDA graph launch's, say (RECORDER.md). */
static inline wr_event wrr_host_lost_event(uint64_t count)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_LOST;
    ev.u.lost.count = count;
    ev.u.lost.block = UINT32_MAX;
    return ev;
}

/* Posts a host event (any thread).  KERNEL_LAUNCH opens a launch,
 * KERNEL_END closes it. */
void wrr_drain_post(wrr_drain *d, const wr_event *ev);
/* Closes the open launch `launch` without emitting anything: the records
 * at ring positions below `end_pos` are consumed as that launch's, and no
 * record at or past it is (WRR_END_UNKNOWN: every record committed when
 * the close is processed, which, the drain being asynchronous, may include
 * the next launch's).  The runtime posts this after its own (serializing)
 * synchronize, with the device's reservation head read then, and emits the
 * real KERNEL_END later, when the program observes the completion. */
#define WRR_END_UNKNOWN UINT64_MAX
void wrr_drain_post_close(wrr_drain *d, uint32_t launch, uint64_t end_pos);

/* Posts the KERNEL_LAUNCH `launch_ev` of a launch group's member whose
 * records carry `tag` (1..WRR_MAX_TAG): emitted as posted, it opens the
 * member without closing the open launch or another member.  A tag opened
 * again before the group's close is a host error (the drain fails).  A
 * record whose tag names no open member is a corrupt ring record. */
void wrr_drain_post_tagged_launch(wrr_drain *d, const wr_event *launch_ev, uint32_t tag);
/* Closes every member of the launch group, silently, as wrr_drain_post_close
 * closes a launch: the records below end_pos are consumed first. */
void wrr_drain_post_group_close(wrr_drain *d, uint64_t end_pos);

/* Consumes up to max_records committed records of the open launch (none
 * when no launch is open).  Returns the number consumed or -1 on failure. */
long wrr_drain_poll(wrr_drain *d, size_t max_records);

/* Processes posted host events and polls the ring once.  Returns the amount
 * of work done (0 = idle) or -1. */
long wrr_drain_step(wrr_drain *d);

/* Processes everything posted, consumes every committed record, flushes
 * the sink.  Returns 0 or -1. */
int wrr_drain_finish(wrr_drain *d);

/* Runs wrr_drain_step in a thread until wrr_drain_stop_thread. */
int wrr_drain_start_thread(wrr_drain *d);
/* Waits until every host event posted so far has been processed. */
void wrr_drain_wait_processed(wrr_drain *d);
int wrr_drain_stop_thread(wrr_drain *d);

uint64_t wrr_monotonic_ns(void);

#ifdef __cplusplus
}
#endif
#endif

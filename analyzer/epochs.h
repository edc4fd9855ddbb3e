/*
 * epochs.h: host-side ordering of kernel launches and host copies, shared by
 * the lockset and fsm engines (a small support module, not an engine).
 *
 * Every kernel launch and every host copy gets an "epoch" number, 1, 2, ...
 * in trace order.  wr_epochs_ordered(a, b) tells whether all of epoch a
 * happens before all of epoch b according to the host-side events:
 *  - stream order: work on one stream runs in issue order;
 *  - the legacy default stream 0 synchronises with every other stream (all
 *    streams are treated as blocking streams): work on stream 0 waits for
 *    all earlier work, and later work on any stream waits for it;
 *  - cudaEventRecord / cudaStreamWaitEvent: the waiting stream's later work
 *    runs after everything the event captured;
 *  - host waits (DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, a synchronous copy,
 *    and KERNEL_END, which the recorder emits when the host has observed the
 *    kernel's completion): work issued afterwards runs after what was waited
 *    for.
 * Implemented with small vector clocks over streams (streams are few).
 */
#ifndef WARPRACE_EPOCHS_H
#define WARPRACE_EPOCHS_H

#include <stdbool.h>
#include <stdint.h>

#include "warprace/event.h"

typedef struct wr_epochs wr_epochs;

wr_epochs *wr_epochs_new(void);
void wr_epochs_free(wr_epochs *e);

/* Feed every event (non-host events are ignored).  Returns the new epoch for
 * KERNEL_LAUNCH and HOST_COPY, else 0. */
uint32_t wr_epochs_on_event(wr_epochs *e, const wr_event *ev);
/* The epoch of a launch id; a launch never announced gets a fresh epoch on
 * stream 0 (so a trace without host events still works). */
uint32_t wr_epochs_of_launch(wr_epochs *e, uint32_t launch);
/* Has the host seen epoch's launch end (a KERNEL_END fed in)?  Its
 * blocks can then never run again, whatever the stream order says. */
bool wr_epochs_ended(const wr_epochs *e, uint32_t epoch);
/* The launch id of an epoch (0 for a host copy or an unknown epoch). */
uint32_t wr_epochs_launch_of(const wr_epochs *e, uint32_t epoch);
/* Newest epoch so far. */
uint32_t wr_epochs_count(const wr_epochs *e);
/* True when epoch a (entirely) happens before epoch b. */
bool wr_epochs_ordered(const wr_epochs *e, uint32_t a, uint32_t b);
/* Is epoch over for good: a launch the host saw end (KERNEL_END) or a copy
 * the host waited for, that happens before every launch not yet seen to
 * end and, since the host waited for it, before every epoch issued from
 * now on?  Then no access still to come is concurrent with it, and an
 * engine may drop what it keeps about its threads for reports.  Once
 * true, stays true.  O(launches not yet ended). */
bool wr_epochs_settled(const wr_epochs *e, uint32_t epoch);

#endif

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
 * Implemented with sparse clocks over streams with a floor (every epoch up
 * to it happens before), so that programs with thousands of streams keep
 * small clocks while the host keeps waiting for what it issued.
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
/* An event of epoch's was seen: it runs, so every epoch ordered before it
 * is over (the trace order is the order in which things ran).  Engines
 * call it for a launch's accesses and block events; a copy acts at its
 * HOST_COPY.  Cheap once it has been said. */
void wr_epochs_acts(wr_epochs *e, uint32_t epoch);
/* Is epoch ordered before one that acted, so that none of its own events
 * can come any more?  (Not settled: an epoch issued later on another
 * stream may still be concurrent with it.) */
bool wr_epochs_over(const wr_epochs *e, uint32_t epoch);
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

/* Engines tag a shadow word with its epoch's low 8 bits (the tag) and
 * sweep a page when a newer epoch first touches it, so that a tag always
 * names one of the 256 epochs up to the page's newest.  The epoch a tag
 * names, read against the page's newest epoch: */
static inline uint32_t wr_epochs_of_tag(uint32_t newest, unsigned tag)
{
    return newest - ((newest - tag) & 0xffu);
}

/* What such a sweep drops: the words of an epoch more than 255 epochs older
 * than the sweeping one (their tag could no longer name it; documented as a
 * limit), and the words of a settled epoch (no access to come can race with
 * them).  Not those of an epoch merely ordered before the sweeping one: a
 * launch still running on another stream, or one issued later without a
 * host wait, may be concurrent with that epoch and must still meet its
 * words.  (An access of an epoch ordered after a word's reads the word as
 * new without any sweep.)  Asked once per tag per sweep. */
typedef struct wr_epochs_sweep {
    const wr_epochs *ep;
    uint32_t newest;            /* the page's newest epoch before the sweep */
    uint32_t epoch;             /* the sweeping epoch */
    uint8_t verdict[256];       /* by tag: 0 not asked yet, 1 keep, 2 drop */
} wr_epochs_sweep;

void wr_epochs_sweep_begin(wr_epochs_sweep *s, const wr_epochs *e, uint32_t newest,
                           uint32_t epoch);
bool wr_epochs_sweep_ask(wr_epochs_sweep *s, unsigned tag);

static inline bool wr_epochs_sweep_drops(wr_epochs_sweep *s, unsigned tag)
{
    uint8_t v = s->verdict[tag & 0xffu];
    return v ? v == 2 : wr_epochs_sweep_ask(s, tag);
}

/* An access of `epoch` reaches a page whose newest epoch is *newest (0: a
 * new page) and whose words' epochs are at least *oldest (fsm and lockset
 * keep both in the page header).  Returns true when the page must be swept
 * first (a newer epoch; the caller's sweep then sets both); otherwise
 * keeps the two bounds true: an older launch that still runs lowers
 * *oldest.  The page's own epoch, the usual case, costs one compare. */
static inline bool wr_epochs_page_enter(uint64_t *newest, uint32_t *oldest, uint32_t epoch)
{
    if (__builtin_expect(*newest == epoch, 1))
        return false;
    if (*newest < epoch) {
        if (*newest)
            return true;
        *newest = *oldest = epoch;
    } else if (epoch < *oldest) {
        *oldest = epoch;
    }
    return false;
}

/* A page whose words all carry epochs from `oldest` to the page's newest
 * (an engine keeps that bound per page) is dropped whole when each of
 * those epochs drops: asked here, one epoch at a time, for at most
 * WR_EPOCHS_SWEEP_SPAN epochs (a wider span, or oldest 0 = unknown,
 * answers false and leaves the word-by-word sweep to decide).  Iterative
 * kernels touch every page once per launch: the word-by-word sweep was a
 * seventh of fsm's and of lockset's time on the gather trace. */
#define WR_EPOCHS_SWEEP_SPAN 8u
bool wr_epochs_sweep_drops_all(wr_epochs_sweep *s, uint32_t oldest);
/* After a word-by-word sweep: the oldest epoch among those the sweep asked
 * about and kept (a bound on the epochs of the words it kept), or the
 * sweeping epoch where it kept none. */
uint32_t wr_epochs_sweep_oldest_kept(const wr_epochs_sweep *s);

/* Which per-block state an engine keeps (fsm and lockset share the rule)
 * when a new epoch `newest` begins: the blocks of settled epochs go; once
 * every WR_EPOCHS_KEEP epochs, so do those of epochs finished (ended,
 * ordered before newest, or over) more than WR_EPOCHS_KEEP epochs ago, so that a
 * trace without KERNEL_ENDs still keeps bounded state (a race found later
 * against one of their accesses loses its first side's ring entry). */
#define WR_EPOCHS_KEEP 4
typedef struct wr_epochs_purge {
    const wr_epochs *ep;
    uint32_t newest;
    bool window;               /* this time also the finished old epochs */
    uint32_t asked;            /* the last epoch asked about ... */
    bool settled;              /* ... and whether it is settled */
} wr_epochs_purge;

/* Starts the decision for one pass over an engine's blocks; *purged_at
 * (0 at first) is the engine's own record of the last window. */
wr_epochs_purge wr_epochs_purge_begin(const wr_epochs *e, uint32_t newest, uint32_t *purged_at);
/* Keep the state of a block of `epoch`?  finished: the block is over
 * whatever the epochs say (fsm's host pseudo-block).  Ask in table order:
 * consecutive blocks of one epoch share one wr_epochs_settled. */
bool wr_epochs_purge_keeps(wr_epochs_purge *p, uint32_t epoch, bool finished);

#endif

/*
 * Record-time completion of the binary-instrumentation path (pure C, no
 * CUDA; SANITIZER.md).  The patches write provisional ring records: what
 * the Compute Sanitizer callbacks know (read / write / atomic, size, space,
 * lanes) with the patched instruction's PC in the site word (w3).  The
 * drain (recorder/drain.c, unchanged) converts them as usual; this layer
 * sits between the drain and the trace writer as a wrr_sink and:
 *
 *  - serves the drain's site look-ups (its read_mem) from the PC tables:
 *    every PC becomes a catalog site with pc, file:line and function;
 *  - completes every ACCESS event from the SASS classification of its PC
 *    (op, atomic op, scope, order; space only where the instruction says
 *    more than the callback), counting PCs it cannot classify;
 *  - infers fences: before each device event of a warp it asks the CFG
 *    whether every path from the warp's previous recorded PC passes a
 *    MEMBAR, and if so emits a WR_EV_FENCE of the widest such scope;
 *    UNKNOWN answers (indirect branches) are counted and emit nothing
 *    (treated as "no fence": conservative for race detection);
 *  - CAS success is not reported by the API: it records every active lane
 *    as successful (the conservative choice: a write) and counts it;
 *  - places atomic reads after they took effect.  The memory callback runs
 *    BEFORE the instruction, so an atomic read's record can be reserved in
 *    the ring before the record of the release it then reads from (the
 *    unlock of a spin lock by another warp, say).  The device-API path
 *    records acquires after they executed; to give the analyzer the same
 *    order, an atomic read (RMW, CAS, atomic load) is held back and emitted
 *    just before its warp's next record (and the fence inferred there): that
 *    record is reserved after the read executed (certainly so when a fence
 *    lies between them, as in the acquire idiom).  A held read-modify-write
 *    is also a write, which must stay before the reads that observe it:
 *    before any other warp's atomic access to one of its words is emitted,
 *    the held read-modify-writes up to the last that overlaps it are
 *    emitted first, in arrival order.  A host event, a block exit and the
 *    drain's flush emit everything held (counted as flushed early).
 *  - completes every BARRIER event's mode (format 1.3) from the
 *    classification of its PC: the barrier callback fires alike for
 *    bar.sync and bar.arrive (BAR.ARV: ARRIVE, with the callback's thread
 *    count), the cluster arrive callback alike for barrier.cluster.arrive
 *    and its .relaxed form.  Where the PC does not say (no disassembly, an
 *    unknown BAR form, or callback and instruction disagree) the callback's
 *    mode stays (SYNC for a block barrier) and is counted; a BAR.ARV whose
 *    callback gave no count is recorded as SYNC and counted, since a block
 *    ARRIVE without its count is no valid record.  A cluster WAIT is held
 *    like an atomic read: its callback runs before the wait, and only the
 *    warp's next record is certainly reserved after every arrival of the
 *    phase it waited for.
 */
#ifndef WARPRACE_SAN_EVENTS_H
#define WARPRACE_SAN_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "drain.h"
#include "sass_classify.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wrs_stats {
    uint64_t events_in, events_out;
    uint64_t accesses_classified;
    uint64_t accesses_unclassified;   /* PC unknown or not a memory instruction */
    uint64_t space_mismatch;          /* callback space != instruction space */
    uint64_t cas_unknown;             /* CAS records: success assumed */
    uint64_t fences_inferred;
    uint64_t fence_queries;
    uint64_t fence_unknown;           /* indirect branch on the way */
    uint64_t fence_unreachable;       /* no CFG path between the two PCs */
    uint64_t fence_cross_function;    /* previous PC in another function */
    uint64_t reads_held;              /* atomic reads moved to the warp's next record */
    uint64_t held_flushed_early;      /* ... emitted before it (overlap, block exit, host event) */
    uint64_t barrier_mode_unknown;    /* barrier PC unknown / not that barrier: callback's mode kept */
    uint64_t barrier_arrive_uncounted;/* BAR.ARV without a thread count: recorded as SYNC */
    uint64_t waits_held;              /* cluster waits moved to the warp's next record */
} wrs_stats;

/* A loaded function: [start, start + size) in the device's address space. */
typedef struct wrs_range {
    uint64_t start, size;
    wrs_function *fn;
    const wrs_module *mod;
} wrs_range;

typedef struct wrs_warp_slot wrs_warp_slot;
typedef struct wrs_pair_slot wrs_pair_slot;
typedef struct wrs_held wrs_held;
typedef struct wrs_word_slot wrs_word_slot;

/* Held atomic reads in arrival order (indices + 1 into the pool; 0 = none). */
typedef struct wrs_held_list {
    uint32_t head, tail;
} wrs_held_list;

typedef struct wrs_finisher {
    wrr_sink down;                /* the trace writer */
    wrs_range *ranges;
    size_t nranges, capranges;
    /* site catalog id -> pc */
    uint64_t *site_pc;
    size_t cap_site_pc;
    uint64_t last_desc_pc;        /* the PC whose descriptor the drain read last */
    /* strings served to the drain */
    char **strs;
    size_t nstrs, capstrs;
    /* per-warp last recorded PC (current launch) */
    wrs_warp_slot *warps;
    size_t warp_cap, warp_count;
    /* cache of fence answers */
    wrs_pair_slot *pairs;
    size_t pair_cap, pair_count;
    /* atomic reads waiting for their warp's next record (see below) */
    wrs_held *held;
    uint32_t held_cap, held_free;
    uint64_t held_seq;
    wrs_held_list held_writes;    /* held read-modify-writes */
    wrs_held_list held_loads;     /* held atomic loads and cluster waits: they write nothing */
    /* words of the held read-modify-writes -> pool index */
    wrs_word_slot *words;
    size_t word_cap, word_used;
    uint32_t launch;
    uint32_t block_threads;       /* the current launch's block size (0: not known) */
    wrs_stats st;
} wrs_finisher;

int wrs_finisher_init(wrs_finisher *f, const wrr_sink *down);
void wrs_finisher_destroy(wrs_finisher *f);

/* Registers a function's loaded range (the module and function outlive f). */
int wrs_finisher_add_range(wrs_finisher *f, uint64_t start, uint64_t size, wrs_function *fn,
                           const wrs_module *mod);

/* The sink to give the drain, and its read_mem (ctx = f). */
void wrs_finisher_sink(wrs_finisher *f, wrr_sink *out);
long wrs_finisher_read_mem(void *ctx, uint64_t addr, void *buf, size_t len);

/* Strings served through read_mem live at these addresses (never device
 * PCs, which are below 2^49). */
#define WRS_STR_BASE 0xfff0000000000000ull

#ifdef __cplusplus
}
#endif
#endif

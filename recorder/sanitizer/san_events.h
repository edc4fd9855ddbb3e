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
 *  - CAS success is not reported by the API.  A CAS is held until its
 *    warp's next record (below); when that is the same CAS instruction on
 *    the same words, the lanes retrying it failed and the others succeeded
 *    (a spin lock's loop).  Otherwise every active lane is recorded as
 *    successful (the conservative choice: a write) and counted;
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
    uint64_t cas_retries_seen;        /* CAS records whose retry by the warp told the
                                         failed lanes */
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
    uint64_t arrives_inferred;        /* BAR.ARV emitted after the record before them */
    uint64_t arrives_invalid;         /* ... whose id or count the format cannot hold */
    uint64_t arrives_reported_too;    /* ... whose barrier callback fired after all: dropped */
    uint64_t grid_syncs;              /* grid.sync() barriers recorded as grid barriers */
    uint64_t grid_sync_parts;         /* its other records, left out */
    uint64_t grid_sync_unknown;       /* records in sync.h whose role is not known: kept */
    uint64_t mbarrier_inits;          /* mbarrier inits whose count the code gave */
    uint64_t mbarrier_count_unknown;  /* ... whose count it did not: that object untracked */
    uint64_t mbarrier_untracked;      /* arrivals and waits on untracked objects: left out */
    uint64_t shared_atomics_cluster_scoped; /* scopeless shared atomics of clustered
                                               launches: taken at cluster scope */
} wrs_stats;

/*
 * Two things the API does not report as such, recovered from the code:
 *
 *  - bar.arrive (BAR.ARV) fires no callback.  After each record of a warp
 *    the finisher asks the CFG whether every path from its PC reaches one
 *    BAR.ARV with immediate id and count before anything that may record
 *    (wrs_arrives_after); if so it emits the block barrier's ARRIVE right
 *    after the record (after a held record, when that goes out).  No record
 *    of the warp lies between, so the arrival stands where it executed, and
 *    every waiter's records after its wait come later in the ring.  A
 *    BAR.ARV no record leads to for certain is not recorded and is said at
 *    launch (inject_sanitizer.c).
 *  - grid.sync() arrives as its parts: two block barriers around the block
 *    master's atomic on the grid's workspace and its polling, whose weak
 *    data orderings scoped would take for fences and flags.  With -gi line
 *    info its instructions name cooperative groups' details/sync.h
 *    (wrs_grid_sync_role): the second barrier becomes a grid barrier
 *    (WR_BAR_GRID, SYNC, every thread of the grid), as the device API
 *    records grid.sync(); the first barrier, the atomics, loads and warp
 *    syncs inside it are left out (counted), and no fence is inferred
 *    across it.  Without line info the parts stay as they are.
 *  - mbarriers: the callbacks give an arrival's count, but neither an
 *    init's count nor a wait's parity (patches.cu).  The init's count is
 *    read from its instruction's operands (wrs_mbarrier_init_count_in: the
 *    value the code writes into the object, from constants and the
 *    launch's geometry: cuda::barrier of block.size()); the finisher counts
 *    each object's arrivals (count x lanes) in ring order, and a
 *    successful wait, recorded after it succeeded (the attempt callback
 *    has its result), waited for the latest phase those arrivals
 *    completed: parity (completed - 1) & 1, or the phase before the first
 *    (parity 1: it acquires nothing) when none has.  Arrivals are recorded
 *    before they execute, so one of the next phase can come before a wait
 *    that did not see it: the parity is then one phase ahead (the wait
 *    acquires more than it did: a race may be hidden, none invented).  An
 *    object whose count the code does not give (a count computed at run
 *    time) is not tracked: its init, arrivals and waits are left out and
 *    counted, and what they order looks unordered.
 */

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
typedef struct wrs_mbar_slot wrs_mbar_slot;

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
    /* mbarriers of running blocks: their count and the arrivals seen */
    wrs_mbar_slot *mbars;
    size_t mbar_cap, mbar_used;
    /* the latest launches' geometry (blockDim x y z, gridDim x y z), for
     * mbarrier counts computed from it, their block size, and whether their
     * clusters hold several blocks (the scope of shared atomics):
     * concurrent launches (a CUDA graph's kernel nodes) interleave */
    struct wrs_launch_seen {
        uint32_t launch;
        uint32_t geometry[6];
        uint32_t block_threads;
        uint8_t clustered;
    } launches[64];
    uint32_t launches_next;
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

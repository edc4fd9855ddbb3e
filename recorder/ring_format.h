/*
 * warprace recorder: the device ring buffer and its record layout.
 *
 * Shared, byte for byte, by the device logger (device_logger.cuh, CUDA) and
 * the host drain (drain.c, plain C).  Nothing here depends on CUDA headers.
 * RECORDER.md explains the protocol; the summary:
 *
 *  - The ring is an array of 2^k slots of 16 bytes (WRR_SLOT_BYTES) in
 *    mapped pinned host memory.  A record takes 1..31 consecutive slots
 *    (it may wrap around the end of the array).  Positions are absolute
 *    64-bit slot counters; slot index = pos & (capacity - 1).
 *  - Reservation: one atomicAdd of the record's slot count on
 *    wrr_dev_state.head (device memory).  Back-pressure: a writer whose
 *    reservation ends beyond tail + capacity spins until the host drain has
 *    advanced wrr_host_ctl.tail far enough.  Drop mode: a CAS loop on head
 *    that gives up (and counts) instead of waiting.
 *  - Commit: the writer fills words 1..n of the record, makes them visible
 *    (__threadfence_system), then stores word 0, whose low 32 bits are the
 *    commit tag WRR_TAG(pos, log2cap) = lap number + 1.  A slot whose tag
 *    does not match the lap of the drain's position holds no (complete)
 *    record yet.  Zeroed memory never matches (tags start at 1), so the ring
 *    needs no clearing between laps.
 *  - Consumption: the host reads records in position order and stores the
 *    new tail (release) after each batch.
 *
 * Record header (every record begins with 2 slots = 4 x uint64):
 *   w0  bits  0..31  commit tag
 *       bits 32..36  kind            (wrr_kind)
 *       bits 37..41  nslots          (total slots of the record, 2..31)
 *       bits 42..44  op              (wr_mem_op)           ACCESS
 *       bits 45..48  atomic op       (wr_atomic_op)        ACCESS
 *       bits 49..51  scope           (wr_scope)            ACCESS, FENCE
 *                    barrier scope   (wr_barrier_scope)    BARRIER: 0 block,
 *                                      1 mbarrier, 2 cluster, 3 grid; else
 *                                      corrupt
 *       bits 52..54  order           (wr_order)            ACCESS, FENCE
 *                    barrier mode    (wr_barrier_mode)     BARRIER: 0 sync,
 *                                      1 arrive, 2 relaxed arrive, 3 wait,
 *                                      4 init; else corrupt, and so is a
 *                                      mode that does not fit the scope and
 *                                      count (wr_barrier_mode_problem)
 *       bits 55..56  space           (wr_space)            ACCESS
 *       bits 57..59  log2(size)      (1..16 bytes)         ACCESS
 *       bits 60..61  address mode    (wrr_amode)           ACCESS
 *       bits 62..63  reserved, 0
 *   w1  bits  0..31  active mask (BARRIER, FENCE, ACCESS) / sync mask (WARP_SYNC)
 *       bits 32..63  aux: ACCESS = per-lane CAS success mask (CAS only);
 *                    BARRIER of block scope = barrier id (bits 32..39) |
 *                    expected threads (bits 40..63); BARRIER of cluster or
 *                    grid scope = expected threads (bits 32..63): they have
 *                    no barrier id, so the count keeps the event model's
 *                    32 bits (a grid's saturates there); a wait's is 0;
 *                    BARRIER of mbarrier scope = the record's expected
 *                    (bits 32..63): an init's count, an arrive's count per
 *                    lane (0: once), a wait's phase parity
 *   w2  bits  0..31  linear block index in the grid
 *       bits 32..47  warp index in the block
 *       bits 48..63  launch tag: 0 = the drain's open launch (launches
 *                    are serialized); 1..65535 = the member of the drain's
 *                    launch group that the host opened with this tag
 *                    (wrr_drain_post_tagged_launch: the kernel nodes of a
 *                    CUDA graph launch, which run concurrently)
 *   w3  site: device address of a wrr_site_desc (0 = unknown)
 * BARRIER records of mbarrier scope (format 1.3) add one slot: the
 * mbarrier's 24-bit shared offset has no room beside a 20-bit count in
 * the aux word, and a record may take any slot count up to 31, so it
 * takes a third slot (WRR_MBAR_SLOTS) rather than squeezing the offset
 * into header bits other kinds use:
 *   w4  the mbarrier's offset in the block's shared window
 *       (cvta.to.shared); at or past 2^24, or not 8-aligned: corrupt
 *   w5  reserved, 0
 * Every other sync record is 2 slots; a sync record with another slot
 * count (an mbarrier's of 2 among them) is corrupt.
 * ACCESS records add one slot:
 *   w4  base address (UNIFORM, STRIDED, VECTOR32) / 0 (VECTOR64)
 *   w5  stride in bytes as int64 (STRIDED) / 0
 * and, for vector modes, the per-lane addresses (inactive lanes 0):
 *   VECTOR32: 32 x int32 deltas from base (8 slots): lane i = base + d[i]
 *   VECTOR64: 32 x uint64 addresses (16 slots)
 * So a record is 2 slots (sync records), 3 (mbarrier records,
 * uniform/strided access), 11 (vector32) or 19 (vector64).
 *
 * Shared-memory addresses are offsets in the block's shared window
 * (cvta.to.shared), local ones offsets in the thread's local window; global
 * ones are generic device addresses.  Distributed shared memory (space 3,
 * WR_SPACE_DSMEM: another block of the cluster's shared memory) carries
 * WRR_DSMEM_ADDR(owner's linear block index, offset in the owner's shared
 * window) per lane, the trace's own encoding (event.h wr_dsmem_addr), so
 * the drain passes it through unchanged.  The 2 space bits hold every
 * wr_space; lanes of two owners are 2^32 apart and so take VECTOR64 (or
 * STRIDED with a 64-bit stride), never a 32-bit delta that would wrap.
 */
#ifndef WARPRACE_RING_FORMAT_H
#define WARPRACE_RING_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WRR_SLOT_BYTES 16u
#define WRR_MAX_SLOTS 31u
#define WRR_MIN_LOG2_CAP 6u      /* 64 slots: must hold the largest record */
#define WRR_MAX_LOG2_CAP 30u

/* Device record kinds.  Host-side events (launches, copies...) never go
 * through the ring. */
typedef enum wrr_kind {
    WRR_K_NONE = 0,
    WRR_K_ACCESS = 1,
    WRR_K_BARRIER = 2,
    WRR_K_WARP_SYNC = 3,
    WRR_K_FENCE = 4,
    WRR_K_BLOCK_ENTER = 5,
    WRR_K_BLOCK_EXIT = 6,
    WRR_K_MAX = 6
} wrr_kind;

typedef enum wrr_amode {
    WRR_A_UNIFORM = 0,
    WRR_A_STRIDED = 1,
    WRR_A_VECTOR32 = 2,
    WRR_A_VECTOR64 = 3
} wrr_amode;

/* Source-site descriptor: one per call site of the device API, a static
 * object in the module's global memory; records carry its address. */
#define WRR_SITE_MAGIC 0x57525354u   /* "WRST" */
typedef struct wrr_site_desc {
    uint32_t magic;
    uint32_t line;
    const char *file;
    const char *function;
} wrr_site_desc;

/* Host-side control block, in mapped pinned host memory.  The device reads
 * tail (rarely: it caches it) and atomically adds to the dropped counters. */
typedef struct wrr_host_ctl {
    volatile uint64_t tail;           /* host: first position not yet consumed */
    uint64_t dropped_records;         /* device (drop mode): records not kept */
    uint64_t dropped_lanes;           /* device: thread-level accesses in them */
    uint64_t full_waits;              /* device: records that found the ring full
                                         and waited for the drain (back-pressure) */
    uint64_t mbarrier_unrecorded;     /* device (sanitizer path): mbarrier actions
                                         whose object or count could not be
                                         recorded as the format holds them */
    uint64_t node_unknown;            /* device (sanitizer path): records of a graph
                                         kernel that no node entry names: not written */
    uint64_t pad_[2];
} wrr_host_ctl;

#define WRR_F_DROP 1u                 /* drop and count instead of waiting */

/* Device-side state, in device memory; every instrumented module's
 * `warprace_state` pointer is set to it by the host runtime. */
typedef struct wrr_dev_state {
    unsigned long long head;          /* next free position (reservations) */
    unsigned long long tail_cache;    /* last tail seen by the device */
    uint64_t *slots;                  /* device view of the ring (mapped) */
    wrr_host_ctl *ctl;                /* device view of the control block */
    uint32_t log2cap;
    uint32_t flags;                   /* WRR_F_* */
    uint32_t enabled;                 /* 0: record nothing (kernel filtered) */
    uint32_t pad_;
    /* Locks that order uniform atomics on the same address with their
     * records (RECORDER.md, "Ordering"). */
    unsigned int locks[1024];
} wrr_dev_state;
#define WRR_LOCK_COUNT 1024u

#define WRR_TAG(pos, log2cap) ((uint32_t)(((pos) >> (log2cap)) + 1u))

/* w0 field helpers */
#define WRR_W0(tag, kind, nslots, op, aop, scope, order, space, lsize, amode) \
    ((uint64_t)(uint32_t)(tag) | ((uint64_t)(kind) << 32) | ((uint64_t)(nslots) << 37) | \
     ((uint64_t)(op) << 42) | ((uint64_t)(aop) << 45) | ((uint64_t)(scope) << 49) | \
     ((uint64_t)(order) << 52) | ((uint64_t)(space) << 55) | ((uint64_t)(lsize) << 57) | \
     ((uint64_t)(amode) << 60))
#define WRR_W0_TAG(w)    ((uint32_t)(w))
#define WRR_W0_KIND(w)   ((unsigned)(((w) >> 32) & 31u))
#define WRR_W0_NSLOTS(w) ((unsigned)(((w) >> 37) & 31u))
#define WRR_W0_OP(w)     ((unsigned)(((w) >> 42) & 7u))
#define WRR_W0_AOP(w)    ((unsigned)(((w) >> 45) & 15u))
#define WRR_W0_SCOPE(w)  ((unsigned)(((w) >> 49) & 7u))
#define WRR_W0_ORDER(w)  ((unsigned)(((w) >> 52) & 7u))
/* a BARRIER has no memory order: its order bits carry its mode */
#define WRR_W0_BARMODE(w) WRR_W0_ORDER(w)
#define WRR_W0_SPACE(w)  ((unsigned)(((w) >> 55) & 3u))
#define WRR_W0_LSIZE(w)  ((unsigned)(((w) >> 57) & 7u))
#define WRR_W0_AMODE(w)  ((unsigned)(((w) >> 60) & 3u))
#define WRR_W0_RESERVED(w) ((unsigned)(((w) >> 62) & 3u))

/* BARRIER aux word (w1 bits 32..63) of a block barrier; a cluster or grid
 * barrier's is its expected thread count as is */
#define WRR_BAR_AUX_BLOCK(id, expected) (((uint32_t)(id) & 0xffu) | ((uint32_t)(expected) << 8))

/* = wr_dsmem_addr() of event.h, which device code cannot call (host-only C) */
#define WRR_DSMEM_ADDR(block, offset) \
    (((uint64_t)(uint32_t)(block) << 32) | (uint64_t)(uint32_t)(offset))

#define WRR_W2(block, warp) ((uint64_t)(uint32_t)(block) | ((uint64_t)(uint16_t)(warp) << 32))
#define WRR_W2T(block, warp, tag) (WRR_W2(block, warp) | ((uint64_t)(uint16_t)(tag) << 48))
#define WRR_W2_TAG(w) ((unsigned)((w) >> 48))
#define WRR_MAX_TAG 0xffffu

/* Slots used by an access record with the given address mode. */
#define WRR_ACCESS_SLOTS(amode) ((amode) == WRR_A_VECTOR64 ? 19u : (amode) == WRR_A_VECTOR32 ? 11u : 3u)
#define WRR_SYNC_SLOTS 2u
/* a BARRIER of mbarrier scope: the sync record and w4 (offset), w5 (0) */
#define WRR_MBAR_SLOTS 3u

#ifdef __cplusplus
}
#endif
#endif

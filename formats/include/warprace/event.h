/*
 * warprace event model: the contract between the recorder and the analyzer.
 *
 * One wr_event is one recorded happening: a warp-level memory access, a
 * synchronization, a host action (launch, copy, allocation, stream order) or
 * a lost-events marker.  The byte encoding of each kind is in
 * formats/FORMAT.md, the text form in formats/TEXT.md; this header is the
 * in-memory form both the writer consumes and the reader produces.
 *
 * Ordering contract: the order of events in a trace is the observed order
 * and is consistent with synchronization (a release is recorded before any
 * acquire that observed it; all arrivals at a barrier precede any access
 * made after that barrier by any warp it gathers: the block's for a block
 * barrier, the cluster's or the grid's for theirs).
 *
 * Identifiers:
 *  - launch ids are assigned by the recorder, unique per trace, starting at 1;
 *  - block is the linear block index within the grid
 *    (x + y*gx + z*gx*gy); warp is the warp index within the block
 *    (linear thread index / warp size); lane 0..31;
 *  - site, kernel, alloc and string ids index the trace's catalog
 *    (see trace.h); id 0 always means "unknown / none".
 */
#ifndef WARPRACE_EVENT_H
#define WARPRACE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WR_WARP_SIZE 32u
/* A block holds at most 1024 threads (every CUDA GPU): warps 0..31.  A
 * reader rejects a device event naming a warp at or past this. */
#define WR_BLOCK_WARPS_MAX 32u
#define WR_FULL_MASK 0xffffffffu

typedef enum wr_event_kind {
    WR_EV_ACCESS = 1,       /* one warp-level memory instruction */
    WR_EV_BARRIER = 2,      /* a warp arrives at a block, cluster or grid barrier */
    WR_EV_WARP_SYNC = 3,    /* __syncwarp(mask) executed by a warp */
    WR_EV_FENCE = 4,        /* a memory fence executed by a warp */
    WR_EV_BLOCK_ENTER = 5,  /* a block starts running */
    WR_EV_BLOCK_EXIT = 6,   /* a block finished */
    WR_EV_KERNEL_LAUNCH = 7,
    WR_EV_KERNEL_END = 8,   /* the kernel completed (observed by the host) */
    WR_EV_EVENT_RECORD = 9, /* cudaEventRecord(event, stream) */
    WR_EV_STREAM_WAIT = 10, /* cudaStreamWaitEvent(stream, event) */
    WR_EV_EVENT_SYNC = 11,  /* host waits for an event (cudaEventSynchronize) */
    WR_EV_STREAM_SYNC = 12, /* host waits for a stream */
    WR_EV_DEVICE_SYNC = 13, /* host waits for the whole device */
    WR_EV_HOST_COPY = 14,   /* memcpy / memset issued by the host */
    WR_EV_ALLOC = 15,       /* an allocation (catalog entry) becomes live */
    WR_EV_FREE = 16,        /* an allocation is freed */
    WR_EV_LOST = 17,        /* the recorder lost events: how many, where */
    WR_EV_KIND_MAX = 17
} wr_event_kind;

typedef enum wr_mem_op {
    WR_OP_LOAD = 0,
    WR_OP_STORE = 1,
    WR_OP_ATOMIC_RMW = 2,   /* read-modify-write: atomic_op says which */
    WR_OP_ATOMIC_LOAD = 3,
    WR_OP_ATOMIC_STORE = 4,
    WR_OP_MAX = 4
} wr_mem_op;

typedef enum wr_atomic_op {
    WR_AOP_NONE = 0,
    WR_AOP_ADD, WR_AOP_SUB, WR_AOP_EXCH, WR_AOP_CAS, WR_AOP_MIN, WR_AOP_MAX,
    WR_AOP_AND, WR_AOP_OR, WR_AOP_XOR, WR_AOP_INC, WR_AOP_DEC,
    WR_AOP_MAX_ID = WR_AOP_DEC
} wr_atomic_op;

/* Ordered from narrowest to widest: a scope holds every narrower one. */
typedef enum wr_scope {
    WR_SCOPE_NONE = 0,      /* plain (non-atomic, non-fence) access */
    WR_SCOPE_BLOCK = 1,     /* CTA */
    WR_SCOPE_CLUSTER = 2,
    WR_SCOPE_DEVICE = 3,    /* GPU */
    WR_SCOPE_SYSTEM = 4,
    WR_SCOPE_MAX = 4
} wr_scope;

/* Memory order / strength of an access or a fence (PTX memory model). */
typedef enum wr_order {
    WR_ORDER_WEAK = 0,      /* plain ld/st: may be cached, never synchronizes */
    WR_ORDER_RELAXED = 1,   /* volatile / .relaxed: strong but unordered */
    WR_ORDER_ACQUIRE = 2,
    WR_ORDER_RELEASE = 3,
    WR_ORDER_ACQ_REL = 4,
    WR_ORDER_SC = 5,
    WR_ORDER_MAX = 5
} wr_order;

typedef enum wr_space {
    WR_SPACE_GLOBAL = 0,    /* device memory, shared by every kernel and the host */
    WR_SPACE_SHARED = 1,    /* per block: an offset names a word of its block only */
    WR_SPACE_LOCAL = 2,     /* per thread */
    /* Distributed shared memory (format 1.2; PTX shared::cluster, cooperative
     * groups' cluster.map_shared_rank()): the shared memory of any block of
     * the issuing block's cluster.  Each lane's address is
     * wr_dsmem_addr(owner block, offset): the owner's linear block index in
     * the grid in the high 32 bits, the byte offset in its shared memory in
     * the low 32.  The word it names is the one the owner's own SHARED
     * accesses at that offset name. */
    WR_SPACE_DSMEM = 3,
    WR_SPACE_MAX = 3
} wr_space;

/* The spaces an allocation (ALLOCS table, text `alloc`) may lie in: DSMEM
 * names other blocks' shared memory, whose allocations are SHARED ones. */
#define WR_ALLOC_SPACE_MAX WR_SPACE_LOCAL

/* The linear index of the thread-block cluster that holds linear block
 * `block` of a grid of grid[3] blocks in clusters of cluster[3] blocks (a
 * launch's; a cluster component 0 reads as 1): the block itself where
 * clusters are single blocks or the grid is unknown (grid[0] == 0). */
static inline uint32_t wr_cluster_of(const uint32_t grid[3], const uint32_t cluster[3],
                                     uint32_t block)
{
    uint32_t cx = cluster[0] ? cluster[0] : 1, cy = cluster[1] ? cluster[1] : 1;
    uint32_t cz = cluster[2] ? cluster[2] : 1;
    if (!grid[0] || (cx == 1 && cy == 1 && cz == 1))
        return block;
    /* 64-bit: a grid's x times y may pass 2^32 (an index past the grid
     * gives some index, never a fault) */
    uint64_t gx = grid[0], gy = grid[1] ? grid[1] : 1;
    uint64_t bx = block % gx, by = (block / gx) % gy, bz = block / (gx * gy);
    uint64_t nx = (gx + cx - 1) / cx, ny = (gy + cy - 1) / cy;
    return (uint32_t)(bx / cx + (by / cy) * nx + (bz / cz) * nx * ny);
}

/* Shared memory offsets (format 1.2): every active lane of a SHARED or
 * DSMEM access touches bytes below WR_SHARED_LIMIT of its block's shared
 * memory (an sm_90 block has at most 228 KiB); the reader and the writer
 * reject an access that does not.  The analyzer keys a shared word by
 * its block and offset and relies on it. */
#define WR_SHARED_LIMIT (UINT32_C(1) << 24)

static inline uint64_t wr_dsmem_addr(uint32_t owner_block, uint32_t offset)
{
    return ((uint64_t)owner_block << 32) | offset;
}
static inline uint32_t wr_dsmem_block(uint64_t addr) { return (uint32_t)(addr >> 32); }
static inline uint32_t wr_dsmem_offset(uint64_t addr) { return (uint32_t)addr; }

/* How the per-lane addresses of an access are encoded. */
typedef enum wr_addr_mode {
    WR_ADDR_UNIFORM = 0,    /* every active lane uses `base` */
    WR_ADDR_STRIDED = 1,    /* lane i uses base + i * stride (i = lane index) */
    WR_ADDR_VECTOR = 2      /* lane_addr[i] for every active lane i */
} wr_addr_mode;

typedef struct wr_access {
    uint32_t launch;
    uint32_t block;
    uint32_t warp;
    uint32_t active_mask;   /* lanes that executed the instruction */
    uint32_t cas_success;   /* CAS only: lanes whose compare succeeded */
    uint8_t op;             /* wr_mem_op */
    uint8_t atomic_op;      /* wr_atomic_op; NONE unless op is ATOMIC_RMW */
    uint8_t scope;          /* wr_scope; NONE for plain accesses */
    uint8_t order;          /* wr_order */
    uint8_t space;          /* wr_space */
    uint8_t size;           /* bytes per lane: 1, 2, 4, 8 or 16 */
    uint8_t addr_mode;      /* wr_addr_mode */
    int64_t stride;         /* STRIDED only */
    uint64_t base;          /* UNIFORM / STRIDED */
    /* VECTOR only: 32 entries indexed by lane; inactive lanes are 0.  Points
     * into the batch (reader) or the caller's memory (writer). */
    const uint64_t *lane_addr;
} wr_access;

/* Which threads a barrier gathers (format 1.1, FORMAT.md): a block barrier
 * (__syncthreads, bar.sync: WR_BAR_BLOCK, the zero value, the only kind of
 * 1.0), every thread of the block's cluster (cooperative groups'
 * cluster.sync(), barrier.cluster.arrive + wait) or every thread of the
 * grid (grid.sync() of a cooperative launch).  The values are the wr_scope
 * of the threads gathered. */
typedef enum wr_barrier_scope {
    WR_BAR_BLOCK = 0,
    WR_BAR_MBARRIER = 1,    /* an mbarrier object in the block's shared memory
                               (format 1.3): threads of the block (= WR_SCOPE_BLOCK) */
    WR_BAR_CLUSTER = 2,     /* = WR_SCOPE_CLUSTER */
    WR_BAR_GRID = 3,        /* = WR_SCOPE_DEVICE */
} wr_barrier_scope;

/* What a warp does at a barrier (format 1.3, FORMAT.md, BARRIER b2).  A
 * barrier's phase completes when `expected` threads have arrived, by SYNC,
 * ARRIVE or ARRIVE_RELAXED records alike.
 * - SYNC (0, the zero value, the only mode before 1.3): arrive and wait for
 *   the phase (__syncthreads, bar.sync, bar.red, cluster.sync(),
 *   grid.sync()).
 * - ARRIVE (1): arrive and go on without waiting (bar.arrive /
 *   barrier.cta.arrive, barrier.cluster.arrive, cooperative groups'
 *   barrier_arrive()).  The arrival releases: what the warp did before it
 *   is ordered before what every waiter of the phase does after it.  A
 *   block barrier's ARRIVE names its thread count (expected != 0), as PTX
 *   requires of bar.arrive.
 * - ARRIVE_RELAXED (2, cluster barriers only): barrier.cluster.arrive.relaxed,
 *   an arrival that counts and releases nothing.
 * - WAIT (3, cluster and grid barriers only): barrier.cluster.wait, the wait
 *   for the phase the warp's last ARRIVE or ARRIVE_RELAXED joined; it
 *   acquires what that phase's arrivals released.  It counts no thread
 *   (expected is 0).
 *
 * An mbarrier (scope WR_BAR_MBARRIER: mbarrier.*, cuda::barrier in shared
 * memory) is an object at shared memory offset `barrier_id` of the issuing
 * block (8-byte aligned, below WR_SHARED_LIMIT), with phases:
 * - INIT (4, mbarriers only): mbarrier.init, `expected` = the arrivals each
 *   phase waits for (1 .. 2^20 - 1); phase 0 begins.
 * - ARRIVE / ARRIVE_RELAXED: mbarrier.arrive[.release] / .relaxed, each
 *   active lane arriving `expected` times (the count operand; 0: once,
 *   below 2^20); the phase completes when its count is reached.
 * - WAIT: a successful mbarrier.test_wait/try_wait.parity: `expected` is
 *   the parity (0 or 1) of the phase waited for; it acquires what the
 *   latest completed phase of that parity released.
 * There is no SYNC on an mbarrier. */
typedef enum wr_barrier_mode {
    WR_BARMODE_SYNC = 0,
    WR_BARMODE_ARRIVE = 1,
    WR_BARMODE_ARRIVE_RELAXED = 2,
    WR_BARMODE_WAIT = 3,
    WR_BARMODE_INIT = 4,
    WR_BARMODE_MAX = WR_BARMODE_INIT
} wr_barrier_mode;

typedef struct wr_barrier {
    uint32_t launch, block, warp;
    uint32_t active_mask;   /* lanes of this warp arriving */
    uint32_t barrier_id;    /* named barrier 0..15; __syncthreads is 0;
                               always 0 for cluster and grid barriers; an
                               mbarrier's shared memory offset */
    uint32_t expected;      /* threads the barrier waits for (block size for
                               __syncthreads; cluster or grid size for the
                               others); 0: all of them (derived from the launch);
                               for an mbarrier, by mode (above) */
    uint8_t scope;          /* wr_barrier_scope */
    uint8_t mode;           /* wr_barrier_mode */
} wr_barrier;

/* A valid barrier scope? */
static inline bool wr_barrier_scope_ok(unsigned scope)
{
    return scope <= WR_BAR_GRID;
}

/* mbarrier counts (PTX: 1 .. 2^20 - 1 arrivals per phase) */
#define WR_MBARRIER_COUNT_MAX ((UINT32_C(1) << 20) - 1)

/* Why barrier b's mode does not fit its other fields (FORMAT.md, BARRIER),
 * or NULL when it does.  The reader and the writer refuse such a record. */
static inline const char *wr_barrier_mode_problem(const wr_barrier *b)
{
    if (b->scope == WR_BAR_MBARRIER) {
        if (b->barrier_id % 8u || b->barrier_id >= WR_SHARED_LIMIT)
            return "an mbarrier's shared offset not 8-byte aligned or past 16 MiB";
        switch (b->mode) {
        case WR_BARMODE_SYNC:
            return "an mbarrier has no sync (arrive, then wait)";
        case WR_BARMODE_INIT:
            return !b->expected || b->expected > WR_MBARRIER_COUNT_MAX
                       ? "an mbarrier's init count out of range (1 .. 2^20 - 1)"
                       : NULL;
        case WR_BARMODE_ARRIVE:
        case WR_BARMODE_ARRIVE_RELAXED:
            return b->expected > WR_MBARRIER_COUNT_MAX
                       ? "an mbarrier arrive's count out of range (below 2^20)"
                       : NULL;
        case WR_BARMODE_WAIT:
            return b->expected > 1u ? "an mbarrier wait's parity is not 0 or 1" : NULL;
        default:
            return "barrier mode out of range";
        }
    }
    switch (b->mode) {
    case WR_BARMODE_SYNC:
        return NULL;
    case WR_BARMODE_ARRIVE:
        return b->scope == WR_BAR_BLOCK && !b->expected
                   ? "a block barrier's arrive without its thread count (expected 0)"
                   : NULL;
    case WR_BARMODE_ARRIVE_RELAXED:
        return b->scope != WR_BAR_CLUSTER ? "a relaxed arrive at a barrier other than a cluster's"
                                          : NULL;
    case WR_BARMODE_WAIT:
        if (b->scope == WR_BAR_BLOCK)
            return "a wait at a block barrier (a block barrier's wait is its sync)";
        return b->expected ? "a barrier wait with a thread count (expected must be 0)" : NULL;
    case WR_BARMODE_INIT:
        return "an init of a barrier other than an mbarrier";
    default:
        return "barrier mode out of range";
    }
}

typedef struct wr_warp_sync {
    uint32_t launch, block, warp;
    uint32_t mask;          /* the __syncwarp mask */
} wr_warp_sync;

typedef struct wr_fence {
    uint32_t launch, block, warp;
    uint32_t active_mask;
    uint8_t scope;          /* BLOCK .. SYSTEM */
    uint8_t order;          /* WR_ORDER_SC or WR_ORDER_ACQ_REL */
} wr_fence;

typedef struct wr_block_mark {  /* BLOCK_ENTER / BLOCK_EXIT */
    uint32_t launch, block;
} wr_block_mark;

/* Stream ids.  0 is the legacy default stream, which synchronizes with
 * every blocking stream: its work waits for all earlier work of those
 * streams, and their later work waits for it.  An id with
 * WR_STREAM_NON_BLOCKING set is a stream created non-blocking
 * (cudaStreamNonBlocking / CU_STREAM_NON_BLOCKING), which does not
 * synchronize with stream 0 either way; any other id is a blocking stream
 * (cudaStreamCreate, the per-thread default stream).  The flag is part of
 * the id: a stream keeps it in every record. */
#define WR_STREAM_LEGACY 0u
#define WR_STREAM_NON_BLOCKING 0x80000000u

static inline int wr_stream_non_blocking(uint32_t stream)
{
    return (stream & WR_STREAM_NON_BLOCKING) != 0;
}

typedef struct wr_launch {
    uint32_t launch;        /* new launch id */
    uint32_t kernel;        /* catalog kernel id */
    uint32_t grid[3];
    uint32_t block_dim[3];
    uint32_t cluster[3];    /* {1,1,1} without clusters */
    uint32_t shared_bytes;  /* dynamic + static shared memory */
    uint32_t stream;        /* recorder's stream id (WR_STREAM_LEGACY, WR_STREAM_NON_BLOCKING) */
} wr_launch;

typedef struct wr_kernel_end {
    uint32_t launch;
} wr_kernel_end;

typedef struct wr_stream_event {  /* EVENT_RECORD / STREAM_WAIT / EVENT_SYNC */
    uint32_t event;         /* recorder's cudaEvent id */
    uint32_t stream;        /* unused for EVENT_SYNC */
} wr_stream_event;

typedef struct wr_stream_sync {   /* STREAM_SYNC (DEVICE_SYNC has no payload) */
    uint32_t stream;
} wr_stream_sync;

typedef enum wr_copy_kind {
    WR_COPY_H2D = 0,        /* host writes dst */
    WR_COPY_D2H = 1,        /* host reads src */
    WR_COPY_D2D = 2,        /* reads src, writes dst */
    WR_COPY_MEMSET = 3,     /* writes dst */
    WR_COPY_MAX = 3
} wr_copy_kind;

/* The largest host copy a trace may hold (512 GiB, above any GPU's memory):
 * a reader rejects more as corrupt, since an analyzer walks every word of a
 * copy.  A copy's device ranges (dst, src where used) must not wrap around. */
#define WR_COPY_BYTES_MAX (1ull << 39)

/* Is the copy's size within WR_COPY_BYTES_MAX and are its ranges unwrapped? */
static inline bool wr_copy_size_ok(uint64_t dst, uint64_t src, uint64_t bytes)
{
    return bytes <= WR_COPY_BYTES_MAX && dst <= UINT64_MAX - bytes && src <= UINT64_MAX - bytes;
}

typedef struct wr_host_copy {
    uint64_t dst, src;      /* device addresses; 0 where not a device side */
    uint64_t bytes;
    uint32_t stream;
    uint8_t kind;           /* wr_copy_kind */
    uint8_t async;          /* 1: ordered in its stream only; 0: also blocks
                               the host until done (cudaMemcpy) */
} wr_host_copy;

typedef struct wr_alloc_mark {  /* ALLOC / FREE */
    uint32_t alloc;         /* catalog allocation id */
} wr_alloc_mark;

typedef struct wr_lost {
    uint64_t count;         /* events the recorder could not keep */
    uint32_t launch;        /* where: the launch (0 = host side) */
    uint32_t block;         /* and block, UINT32_MAX if several / unknown */
} wr_lost;

typedef struct wr_event {
    uint8_t kind;           /* wr_event_kind */
    uint32_t site;          /* catalog source-site id, 0 = unknown */
    uint64_t seq;           /* reader: index of the event in the trace (0-based) */
    union {
        wr_access access;
        wr_barrier barrier;
        wr_warp_sync warp_sync;
        wr_fence fence;
        wr_block_mark block;
        wr_launch launch;
        wr_kernel_end kernel_end;
        wr_stream_event stream_event;
        wr_stream_sync stream_sync;
        wr_host_copy copy;
        wr_alloc_mark alloc;
        wr_lost lost;
    } u;
} wr_event;

/* The address lane `lane` of an access touches (meaningful for active lanes). */
static inline uint64_t wr_access_lane_addr(const wr_access *a, unsigned lane)
{
    switch (a->addr_mode) {
    case WR_ADDR_UNIFORM: return a->base;
    /* unsigned: the stride wraps modulo 2^64 like the hardware address */
    case WR_ADDR_STRIDED: return a->base + (uint64_t)lane * (uint64_t)a->stride;
    default: return a->lane_addr[lane];
    }
}

/* Does every active lane of access a keep to WR_SHARED_LIMIT (its offset,
 * a DSMEM lane's low 32 bits, plus its size)?  True for other spaces. */
static inline bool wr_access_shared_offsets_ok(const wr_access *a)
{
    if (a->space != WR_SPACE_SHARED && a->space != WR_SPACE_DSMEM)
        return true;
    uint64_t room = WR_SHARED_LIMIT - (a->size ? a->size : 1u);   /* the last start that fits */
    uint32_t m = a->active_mask;
    if (!m)
        return true;
    bool dsmem = a->space == WR_SPACE_DSMEM;
    if (a->addr_mode != WR_ADDR_VECTOR && !dsmem &&
        (a->addr_mode == WR_ADDR_UNIFORM ||
         (a->stride > -(int64_t)WR_SHARED_LIMIT && a->stride < (int64_t)WR_SHARED_LIMIT))) {
        /* the lanes lie between the lowest and highest active lane's (a
         * stride this short cannot wrap from an offset in range) */
        uint64_t lo = wr_access_lane_addr(a, (unsigned)__builtin_ctz(m));
        uint64_t hi = wr_access_lane_addr(a, 31u - (unsigned)__builtin_clz(m));
        return lo <= room && hi <= room;
    }
    for (; m; m &= m - 1) {
        uint64_t addr = wr_access_lane_addr(a, (unsigned)__builtin_ctz(m));
        if ((dsmem ? (uint32_t)addr : addr) > room)
            return false;
    }
    return true;
}

static inline bool wr_op_is_atomic(uint8_t op)
{
    return op == WR_OP_ATOMIC_RMW || op == WR_OP_ATOMIC_LOAD || op == WR_OP_ATOMIC_STORE;
}

static inline bool wr_op_reads(uint8_t op) { return op != WR_OP_STORE && op != WR_OP_ATOMIC_STORE; }
static inline bool wr_op_writes(uint8_t op) { return op != WR_OP_LOAD && op != WR_OP_ATOMIC_LOAD; }

/* Lost-event counts add up saturating: a total past 2^64 - 1 stays there
 * (a marker of a corrupt or hostile trace must not wrap the sum to a few). */
static inline uint64_t wr_lost_add(uint64_t total, uint64_t count)
{
    return total > UINT64_MAX - count ? UINT64_MAX : total + count;
}

/* Does access a write memory: its op writes, and it is not a CAS whose
 * compare failed in every active lane (such a CAS only read; one that
 * succeeded in some lane is taken as a write by all of its lanes). */
static inline bool wr_access_writes(const wr_access *a)
{
    if (a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS)
        return (a->cas_success & a->active_mask) != 0;
    return wr_op_writes(a->op);
}

/* Names used by the text form, reports and the database (stable strings). */
const char *wr_event_kind_name(unsigned kind);
const char *wr_mem_op_name(unsigned op);
const char *wr_atomic_op_name(unsigned aop);
const char *wr_scope_name(unsigned scope);
const char *wr_order_name(unsigned order);
const char *wr_space_name(unsigned space);
const char *wr_copy_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif
#endif

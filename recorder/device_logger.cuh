/*
 * warprace device-side logger (CUDA, header-only: every translation unit
 * that includes it gets its own `warprace_state`, which the host runtime
 * sets per module; RECORDER.md).  Used by warprace/device.cuh; not meant to
 * be called directly.
 *
 * One record per warp instruction: the lanes that execute a wrapped
 * operation together (__activemask) elect a leader (lowest lane), compare
 * their addresses with warp shuffles / __match_any_sync, and the leader
 * reserves ring space with one atomic, broadcasts the position, and commits
 * the record (ring_format.h).  Vector records are filled in parallel, each
 * lane writing its own address.  Generic pointers are sorted into global,
 * shared (own block), local and, on sm_90, distributed shared memory
 * (another block of the cluster: wrr_space_of).
 */
#ifndef WARPRACE_DEVICE_LOGGER_CUH
#define WARPRACE_DEVICE_LOGGER_CUH

#include <stdint.h>

#include "ring_format.h"
#include "warprace/event.h"

/* The ring and its counters (device memory), installed by the host runtime
 * through cuModuleGetGlobal(module, "warprace_state").  NULL: not recording
 * (the program runs without `warprace record`). */
static __device__ wrr_dev_state *warprace_state;

#define WRR_DEV __device__ __forceinline__

/* Per-lane state carried from the reservation to the commit. */
typedef struct wrr_pending {
    unsigned long long pos;
    uint64_t addr, base;
    long long stride;
    unsigned mask, leader, lane, nslots, amode, space, lock;
    int dropped;
} wrr_pending;

WRR_DEV unsigned wrr_lane(void)
{
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

WRR_DEV uint32_t wrr_block_linear(void)
{
    return blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
}

WRR_DEV uint32_t wrr_warp_in_block(void)
{
    return (threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y) /
           WR_WARP_SIZE;
}

WRR_DEV wrr_dev_state *wrr_active(void)
{
    wrr_dev_state *s = warprace_state;
    return (s && *(volatile uint32_t *)&s->enabled) ? s : (wrr_dev_state *)0;
}

WRR_DEV unsigned long long wrr_refresh_tail(wrr_dev_state *s)
{
    unsigned long long t = *(volatile unsigned long long *)&s->ctl->tail;
    atomicMax(&s->tail_cache, t);
    return t;
}

/* Leader only.  Returns the position, or ~0ull when dropped (drop mode,
 * `droppable` records only: plain loads and stores.  A lost access can
 * only hide a race; a lost atomic, fence, barrier or volatile access would
 * lose the order it made and report false races, so those wait for ring
 * space in drop mode too). */
WRR_DEV unsigned long long wrr_reserve(wrr_dev_state *s, unsigned n, unsigned lanes,
                                       int droppable)
{
    const unsigned long long cap = 1ull << s->log2cap;
    if ((s->flags & WRR_F_DROP) && droppable) {
        unsigned long long h = *(volatile unsigned long long *)&s->head;
        for (;;) {
            unsigned long long t = *(volatile unsigned long long *)&s->tail_cache;
            if (h + n - t > cap) {
                t = wrr_refresh_tail(s);
                if (h + n - t > cap) {
                    atomicAdd_system((unsigned long long *)&s->ctl->dropped_records, 1ull);
                    atomicAdd_system((unsigned long long *)&s->ctl->dropped_lanes,
                                     (unsigned long long)lanes);
                    return ~0ull;
                }
            }
            unsigned long long old = atomicCAS(&s->head, h, h + n);
            if (old == h)
                return h;
            h = old;
        }
    }
    unsigned long long pos = atomicAdd(&s->head, (unsigned long long)n);
    if (pos + n - *(volatile unsigned long long *)&s->tail_cache > cap) {
        /* Back-pressure: wait for the host drain.  Forward progress: every
         * position below ours belongs to a warp that reserved earlier and
         * commits without waiting on anything but ring space, which the
         * drain frees in position order (RECORDER.md). */
        unsigned ns = 64;
        while (pos + n - wrr_refresh_tail(s) > cap) {
            if (ns == 64)   /* the first wait of this record: counted once */
                atomicAdd_system((unsigned long long *)&s->ctl->full_waits, 1ull);
            __nanosleep(ns);
            if (ns < 8192)
                ns *= 2;
        }
    }
    return pos;
}

WRR_DEV volatile uint64_t *wrr_word(wrr_dev_state *s, unsigned long long pos, unsigned w)
{
    unsigned long long slot = (pos + w / 2) & ((1ull << s->log2cap) - 1);
    return (volatile uint64_t *)&s->slots[2 * slot + (w & 1)];
}

WRR_DEV void wrr_commit(wrr_dev_state *s, unsigned long long pos, uint64_t w0)
{
    __threadfence_system();
    *wrr_word(s, pos, 0) = (w0 & ~0xffffffffull) | WRR_TAG(pos, s->log2cap);
}

/* Stripe lock ordering uniform atomics on one address with their records.
 * A shared word is keyed by (owner block, offset) whichever way it is
 * reached: its own block's SHARED atomics and another block's DSMEM
 * atomics on it take the same lock, and two blocks' equal offsets do not. */
WRR_DEV unsigned wrr_lock_index(uint64_t addr, unsigned space)
{
    if (space == WR_SPACE_SHARED) {
        addr = WRR_DSMEM_ADDR(wrr_block_linear(), addr);
        space = WR_SPACE_DSMEM;
    }
    uint64_t h = (addr >> 2) * 0x9e3779b97f4a7c15ull + space;
    return (unsigned)(h >> 40) & (WRR_LOCK_COUNT - 1);
}

/* ---- access records: begin (all active lanes) -> operation -> end -------- */

/* This block's shared window base as a shared address (what
 * cvta.to.shared gives and STS/LDS take).  On an H200 the block of rank r
 * in its cluster has its window at r * 2^24 (`gpu_litmus --dsmem-probe`:
 * rank 1's first shared word is 0x1000000), so that every shared address of
 * a cluster's blocks is distinct; 0 without clusters.  Reached through mapa
 * of shared address 0 to the own rank, so as not to rely on that layout. */
WRR_DEV uint32_t wrr_own_shared_base(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return (uint32_t)__cvta_generic_to_shared(
        __cluster_map_shared_rank(__cvta_shared_to_generic(0), __clusterRelativeBlockRank()));
#else
    return 0;
#endif
}

/* A shared address of this block as the offset in its window, what the
 * trace records (below WR_SHARED_LIMIT); an address that is already one
 * (below the base: a window at 0, or a tool that reports offsets) stays.
 * An address below WR_SHARED_LIMIT is taken as an offset without asking
 * for the base: the mapa that finds it cost the barrier-heavy benchmark
 * kernel half its recorded time again on an H200, and a block's window
 * holds at most 228 KiB, so only a base of 2^24 or more (rank 1 and up)
 * needs subtracting. */
WRR_DEV uint32_t wrr_shared_offset(uint32_t shared_addr)
{
    if (shared_addr < WR_SHARED_LIMIT)
        return shared_addr;
    uint32_t base = wrr_own_shared_base();
    return shared_addr >= base && shared_addr - base < WR_SHARED_LIMIT ? shared_addr - base
                                                                        : shared_addr;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Linear grid index of the block of rank `rank` in this block's cluster.
 * The cluster's first block is blockIdx - %cluster_ctaid; a rank counts x
 * fastest, then y, then z (%cluster_ctarank; CUTLASS's sm90 multicast masks
 * map (x, y) to rank with a column-major layout of the cluster shape, i.e.
 * x + y * cx).  Cluster dims: %cluster_nctaid (__clusterDim()). */
WRR_DEV uint32_t wrr_cluster_block_linear(unsigned rank)
{
    dim3 cd = __clusterDim(), ci = __clusterRelativeBlockIdx();
    uint32_t x = blockIdx.x - ci.x + rank % cd.x;
    uint32_t y = blockIdx.y - ci.y + (rank / cd.x) % cd.y;
    uint32_t z = blockIdx.z - ci.z + rank / (cd.x * cd.y);
    return x + y * gridDim.x + z * gridDim.x * gridDim.y;
}

/* A generic pointer into the shared memory of a block of this block's
 * cluster (__isClusterShared: isspacep.shared::cluster) that is not in the
 * own block's shared window (__isShared, checked first by the caller).
 * Owner rank: __cluster_query_shared_rank (getctarank).  Offset: the
 * pointer mapped back into this block (__cluster_map_shared_rank to the
 * own rank: mapa, "the address in CTA b corresponding to a") and converted
 * as an own shared address (__cvta_generic_to_shared: cvta.to.shared::cta).
 * That relies on offsets being equal across the blocks of a cluster (what
 * mapa maps is "the same variable" in the other block).  The own rank
 * reached through a cluster pointer is recorded as SHARED so that both
 * ways to name an own word give the same event; whether __isShared already
 * holds for such a pointer (mapa(p, own rank) == p) is not documented. */
WRR_DEV unsigned wrr_cluster_shared_of(const void *p, uint64_t *addr)
{
    unsigned own = __clusterRelativeBlockRank();
    unsigned rank = __cluster_query_shared_rank(p);
    /* the mapped address carries the own window's base (rank 1 on an H200:
     * 0x1000000 + offset, which the trace writer refused as past 16 MiB) */
    uint32_t off =
        wrr_shared_offset((uint32_t)__cvta_generic_to_shared(__cluster_map_shared_rank(p, own)));
    if (rank == own) {
        *addr = off;
        return WR_SPACE_SHARED;
    }
    *addr = WRR_DSMEM_ADDR(wrr_cluster_block_linear(rank), off);
    return WR_SPACE_DSMEM;
}
#endif

WRR_DEV unsigned wrr_space_of(const void *p, uint64_t *addr)
{
    if (__isShared(p)) {
        *addr = wrr_shared_offset((uint32_t)__cvta_generic_to_shared(p));
        return WR_SPACE_SHARED;
    }
    if (__isLocal(p)) {
        *addr = (uint64_t)__cvta_generic_to_local(p);
        return WR_SPACE_LOCAL;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (__isClusterShared(p))
        return wrr_cluster_shared_of(p, addr);
#endif
    *addr = (uint64_t)(uintptr_t)p;
    return WR_SPACE_GLOBAL;
}

/* What a wrapped access is, for wrr_access_begin: a plain load or store
 * (drop mode may drop it), a volatile one (it synchronizes: never
 * dropped), an atomic (never dropped; a uniform address takes the stripe
 * lock). */
enum { WRR_ACC_PLAIN = 0, WRR_ACC_ATOMIC = 1, WRR_ACC_VOLATILE = 2 };

/* Every lane that executes the wrapped operation calls this first.
 * Returns with the ring space reserved (or pd->dropped / s == NULL). */
WRR_DEV void wrr_access_begin(wrr_dev_state *s, wrr_pending *pd, const void *p, int what)
{
    const int lock = what == WRR_ACC_ATOMIC;
    unsigned mask = __activemask();
    pd->lane = wrr_lane();
    pd->space = wrr_space_of(p, &pd->addr);
    /* lanes whose generic pointers fall into different spaces: one record
     * per space */
    mask = __match_any_sync(mask, pd->space);
    pd->mask = mask;
    pd->leader = __ffs(mask) - 1;
    pd->lock = ~0u;
    pd->dropped = 0;
    uint64_t a0 = __shfl_sync(mask, pd->addr, pd->leader);
    int uniform = __all_sync(mask, pd->addr == a0);
    pd->base = a0;
    pd->stride = 0;
    if (uniform) {
        pd->amode = WRR_A_UNIFORM;
    } else {
        unsigned l1 = __ffs(mask & ~(1u << pd->leader)) - 1;
        uint64_t a1 = __shfl_sync(mask, pd->addr, l1);
        long long diff = (long long)(a1 - a0), dl = (long long)l1 - (long long)pd->leader;
        int ok = diff % dl == 0;
        long long stride = diff / dl;
        uint64_t base = a0 - (uint64_t)((long long)pd->leader * stride);
        if (__all_sync(mask, ok && pd->addr == base + (uint64_t)((long long)pd->lane * stride))) {
            pd->amode = WRR_A_STRIDED;
            pd->base = base;
            pd->stride = stride;
        } else {
            long long d = (long long)(pd->addr - a0);
            pd->amode = __all_sync(mask, d >= INT32_MIN && d <= INT32_MAX) ? WRR_A_VECTOR32
                                                                         : WRR_A_VECTOR64;
        }
    }
    pd->nslots = WRR_ACCESS_SLOTS(pd->amode);
    unsigned long long pos = 0;
    if (pd->lane == pd->leader) {
        if (lock && uniform) {
            pd->lock = wrr_lock_index(a0, pd->space);
            while (atomicCAS(&s->locks[pd->lock], 0u, 1u) != 0u)
                __nanosleep(32);
        }
        pos = wrr_reserve(s, pd->nslots, __popc(mask), what == WRR_ACC_PLAIN);
        /* the reservation is ordered before the operation (release side) */
        __threadfence();
    }
    pd->pos = __shfl_sync(mask, pos, pd->leader);
    pd->dropped = pd->pos == ~0ull;
    __syncwarp(mask);
}

/* After the operation.  `aux`: this lane's CAS success (CAS only). */
WRR_DEV void wrr_access_end(wrr_dev_state *s, wrr_pending *pd, unsigned op, unsigned aop,
                            unsigned scope, unsigned order, unsigned size,
                            const wrr_site_desc *site, int cas_ok)
{
    unsigned mask = pd->mask;
    unsigned cas = __ballot_sync(mask, cas_ok);
    if (!pd->dropped) {
        if (pd->amode == WRR_A_VECTOR32) {
            unsigned w = 6 + pd->lane / 2;
            unsigned long long slot = (pd->pos + w / 2) & ((1ull << s->log2cap) - 1);
            volatile uint32_t *p32 = (volatile uint32_t *)&s->slots[2 * slot + (w & 1)];
            p32[pd->lane & 1] = (uint32_t)(pd->addr - pd->base);
            __threadfence_system();
        } else if (pd->amode == WRR_A_VECTOR64) {
            *wrr_word(s, pd->pos, 6 + pd->lane) = pd->addr;
            __threadfence_system();
        }
    }
    __syncwarp(mask);
    if (pd->lane == pd->leader) {
        if (!pd->dropped) {
            unsigned ls = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : 4;
            *wrr_word(s, pd->pos, 1) =
                (uint64_t)mask | ((uint64_t)(aop == WR_AOP_CAS ? cas & mask : 0) << 32);
            *wrr_word(s, pd->pos, 2) = WRR_W2(wrr_block_linear(), wrr_warp_in_block());
            *wrr_word(s, pd->pos, 3) = (uint64_t)(uintptr_t)site;
            *wrr_word(s, pd->pos, 4) = pd->amode == WRR_A_VECTOR64 ? 0 : pd->base;
            *wrr_word(s, pd->pos, 5) = (uint64_t)pd->stride;
            wrr_commit(s, pd->pos,
                       WRR_W0(0, WRR_K_ACCESS, pd->nslots, op, aop, scope, order, pd->space, ls,
                              pd->amode));
        }
        if (pd->lock != ~0u) {
            __threadfence();
            atomicExch(&s->locks[pd->lock], 0u);
        }
    }
    __syncwarp(mask);
}

/* ---- sync records ------------------------------------------------------------ */

/* One record for the lanes executing together (the leader writes it).
 * `order` is a FENCE's wr_order or a BARRIER's wr_barrier_mode
 * (ring_format.h). */
WRR_DEV void wrr_sync_record(wrr_dev_state *s, unsigned kind, unsigned mask, uint32_t aux,
                             unsigned scope, unsigned order, const wrr_site_desc *site)
{
    unsigned long long pos = wrr_reserve(s, WRR_SYNC_SLOTS, __popc(mask), 0);
    if (pos == ~0ull)
        return;
    *wrr_word(s, pos, 1) = (uint64_t)mask | ((uint64_t)aux << 32);
    *wrr_word(s, pos, 2) = WRR_W2(wrr_block_linear(), wrr_warp_in_block());
    *wrr_word(s, pos, 3) = (uint64_t)(uintptr_t)site;
    wrr_commit(s, pos, WRR_W0(0, kind, WRR_SYNC_SLOTS, 0, 0, scope, order, 0, 0, 0));
}

/* Called by every active lane; records once for them. */
WRR_DEV void wrr_sync_warp_record(unsigned kind, uint32_t aux, unsigned scope, unsigned order,
                                  const wrr_site_desc *site)
{
    wrr_dev_state *s = wrr_active();
    if (!s)
        return;
    unsigned mask = __activemask();
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        wrr_sync_record(s, kind, mask, aux, scope, order, site);
        __threadfence();
    }
    __syncwarp(mask);
}

/* ---- mbarrier records (format 1.3, ring_format.h: 3 slots) ------------------ */

/* One mbarrier record (the leader writes it): the offset goes in w4 whole,
 * cvta.to.shared's 64 bits, so that a pointer outside shared memory makes
 * a record the drain rejects rather than one naming another mbarrier. */
WRR_DEV void wrr_mbarrier_record(wrr_dev_state *s, unsigned mask, uint64_t offset, uint32_t aux,
                                 unsigned mode, uint64_t site_word, unsigned tag = 0)
{
    unsigned long long pos = wrr_reserve(s, WRR_MBAR_SLOTS, __popc(mask), 0);
    if (pos == ~0ull)
        return;
    *wrr_word(s, pos, 1) = (uint64_t)mask | ((uint64_t)aux << 32);
    *wrr_word(s, pos, 2) = WRR_W2T(wrr_block_linear(), wrr_warp_in_block(), tag);
    *wrr_word(s, pos, 3) = site_word;   /* a site descriptor's address, or a PC */
    *wrr_word(s, pos, 4) = offset;
    *wrr_word(s, pos, 5) = 0;
    wrr_commit(s, pos, WRR_W0(0, WRR_K_BARRIER, WRR_MBAR_SLOTS, 0, 0, WR_BAR_MBARRIER, mode, 0,
                              0, 0));
}

/* Called by every lane of `lanes` (the caller's: __activemask(), or the
 * lanes whose wait succeeded); records once for each set of them that
 * names the same mbarrier with the same count or parity (`aux`): one
 * record per warp where, as usual, they all do.  The lanes meet again
 * after the record, so that none goes on to the operation before it is
 * written (an arrive is recorded before it executes). */
WRR_DEV void wrr_mbarrier_lanes_record(wrr_dev_state *s, unsigned lanes, const void *bar,
                                       uint32_t aux, unsigned mode, const wrr_site_desc *site)
{
    uint64_t offset = (uint64_t)__cvta_generic_to_shared(bar);
    if (offset >> 32 == 0)   /* a shared address: its offset in the window */
        offset = wrr_shared_offset((uint32_t)offset);
    unsigned mask = __match_any_sync(lanes, (unsigned long long)offset);
    mask = __match_any_sync(mask, aux);
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        wrr_mbarrier_record(s, mask, offset, aux, mode, (uint64_t)(uintptr_t)site);
        __threadfence();
    }
    __syncwarp(mask);
}

WRR_DEV uint32_t wrr_block_threads(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

#endif

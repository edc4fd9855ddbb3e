/*
 * warprace source-level device API.
 *
 * Wrap the memory operations and synchronizations of a kernel so that
 * `warprace record` sees them, each with its file:line:
 *
 *   #include <warprace/device.cuh>
 *   __global__ void mp(int *data, int *flag) {
 *       if (blockIdx.x == 0) {
 *           WR_STORE(data, 42);
 *           WR_THREADFENCE();
 *           WR_ATOMIC_EXCH(flag, 1);
 *       } else {
 *           while (WR_ATOMIC_EXCH(flag, 0) == 0) {}
 *           int v = WR_LOAD(data);
 *       }
 *   }
 *
 * Loads/stores:   WR_LOAD(p)  WR_STORE(p, v)          plain (weak)
 *                 WR_LOAD_VOLATILE(p)  WR_STORE_VOLATILE(p, v)   volatile
 * Atomics:        WR_ATOMIC_<OP>(p, v) at device scope, WR_ATOMIC_<OP>_BLOCK,
 *                 WR_ATOMIC_<OP>_SYSTEM, with OP in ADD SUB EXCH MIN MAX AND
 *                 OR XOR INC DEC; WR_ATOMIC_CAS(p, cmp, v) (+_BLOCK, _SYSTEM)
 *                 records which lanes succeeded.
 * Fences:         WR_THREADFENCE_BLOCK()  WR_THREADFENCE()  WR_THREADFENCE_SYSTEM()
 * Barriers:       WR_SYNCTHREADS()  WR_SYNCTHREADS_COUNT(p) _AND(p) _OR(p)
 *                 WR_BARRIER_SYNC(id, nthreads)   (named barrier, bar.sync)
 *                 WR_CLUSTER_SYNC()   cooperative_groups::this_cluster().sync()
 *                                     (sm_90 thread-block clusters)
 *                 WR_GRID_SYNC()      cooperative_groups::this_grid().sync()
 *                                     (a cooperative launch)
 * Split barriers: WR_BARRIER_ARRIVE(id, nthreads)   (bar.arrive: arrive at a
 *                                     named barrier and go on)
 *                 WR_CLUSTER_ARRIVE()  WR_CLUSTER_ARRIVE_RELAXED()
 *                 WR_CLUSTER_WAIT()   barrier.cluster.arrive[.relaxed] and
 *                                     barrier.cluster.wait (sm_90 clusters)
 * mbarriers:      WR_MBARRIER_INIT(bar, count)   WR_MBARRIER_ARRIVE(bar)
 *                 WR_MBARRIER_ARRIVE_RELAXED(bar)  (sm_90)
 *                 WR_MBARRIER_TRY_WAIT_PARITY(bar, parity)  (sm_90)
 *                 with bar a uint64_t * in shared memory (an mbarrier,
 *                 cuda::barrier's native handle): mbarrier.init,
 *                 mbarrier.arrive (returns its state), .arrive.relaxed,
 *                 mbarrier.try_wait.parity (returns whether the phase of
 *                 that parity completed)
 * Warp:           WR_SYNCWARP(mask)
 * Blocks:         WR_BLOCK_BEGIN()  WR_BLOCK_END()  (optional markers; each
 *                 contains a __syncthreads)
 * cuda::atomic_ref: wr::atomic_ref<T, cuda::thread_scope_X> with load,
 *                 store, exchange, fetch_add, compare_exchange_strong (define
 *                 WARPRACE_ATOMIC_REF before including; needs <cuda/atomic>).
 *
 * Distributed shared memory (sm_90 clusters): every wrapper that takes a
 * pointer takes the generic pointer cooperative groups'
 * cluster.map_shared_rank(p, rank) (__cluster_map_shared_rank) returns, and
 * records the access as WR_SPACE_DSMEM with (owner block, offset) lanes; a
 * pointer mapped to the own rank is recorded as the plain shared access it
 * is (device_logger.cuh wrr_space_of; unverified without a GPU).  Inline
 * PTX ld/st/atom.shared::cluster on 32-bit addresses is not seen.
 *
 * Defining WARPRACE_REPLACE_BUILTINS makes atomicAdd(...), atomicCAS_block
 * (...), __threadfence(), __syncthreads(), __syncwarp(m) and the rest of the
 * builtins above go through the wrappers (include this header after the
 * CUDA headers).  The cooperative groups' cluster.sync() and grid.sync()
 * are member calls no macro can catch: write WR_CLUSTER_SYNC() and
 * WR_GRID_SYNC() for them.
 *
 * With -DWARPRACE_RECORD=0 every macro is the plain operation: nothing is
 * recorded and nothing is added to the code.
 */
#ifndef WARPRACE_DEVICE_CUH
#define WARPRACE_DEVICE_CUH

#ifndef WARPRACE_RECORD
#define WARPRACE_RECORD 1
#endif

#include <stdint.h>
#include <stdlib.h>

#include <cooperative_groups.h>

/* The bare mbarrier instructions, shared by the recording wrappers and the
 * plain build (-DWARPRACE_RECORD=0): inline PTX on the mbarrier's offset
 * in the block's shared window (__cvta_generic_to_shared). */
namespace wr {
namespace ptx {
__device__ __forceinline__ unsigned shared_offset(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbarrier_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_offset(bar)), "r"(count)
                 : "memory");
}
/* the default semantics of mbarrier.arrive are .release at .cta scope */
__device__ __forceinline__ uint64_t mbarrier_arrive(uint64_t *bar)
{
    uint64_t state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
                 : "=l"(state) : "r"(shared_offset(bar)) : "memory");
    return state;
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint64_t mbarrier_arrive_relaxed(uint64_t *bar)
{
    uint64_t state;
    asm volatile("mbarrier.arrive.relaxed.cta.shared::cta.b64 %0, [%1];"
                 : "=l"(state) : "r"(shared_offset(bar)) : "memory");
    return state;
}
/* true once the phase of parity `parity` has completed (PTX may suspend
 * the thread a while before it answers false) */
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint64_t *bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(shared_offset(bar)), "r"(parity) : "memory");
    return done != 0;
}
#endif
} /* namespace ptx */
} /* namespace wr */

/* Host side: names the next device allocation this process makes (the
 * recorder reads and clears $WARPRACE_ALLOC_NAME at that allocation), so
 * that reports say "data" instead of "cudaMalloc".  Not thread-safe. */
static inline void warprace_name_next_alloc(const char *name)
{
    setenv("WARPRACE_ALLOC_NAME", name, 1);
}

#if WARPRACE_RECORD

#include "../../device_logger.cuh"

/* The source site of the call: a static descriptor in the module's global
 * memory; records carry its address, the host reads it once. */
#define WR_SITE() ({ static __device__ const wrr_site_desc wrr_site_ = \
    {WRR_SITE_MAGIC, __LINE__, __FILE__, __builtin_FUNCTION()}; &wrr_site_; })

namespace wr {

/* operation | atomic op | scope | order packed for the templates below */
enum { S_BLOCK = WR_SCOPE_BLOCK, S_DEVICE = WR_SCOPE_DEVICE, S_SYSTEM = WR_SCOPE_SYSTEM };

template <typename T>
__device__ __forceinline__ T load(const wrr_site_desc *site, const T *p)
{
    wrr_dev_state *s = wrr_active();
    if (!s)
        return *p;
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_PLAIN);
    T v = *p;
    wrr_access_end(s, &pd, WR_OP_LOAD, WR_AOP_NONE, WR_SCOPE_NONE, WR_ORDER_WEAK, sizeof(T),
                   site, 0);
    return v;
}

template <typename T>
__device__ __forceinline__ T load_volatile(const wrr_site_desc *site, const T *p)
{
    wrr_dev_state *s = wrr_active();
    if (!s)
        return *(const volatile T *)p;
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_VOLATILE);
    T v = *(const volatile T *)p;
    wrr_access_end(s, &pd, WR_OP_LOAD, WR_AOP_NONE, WR_SCOPE_NONE, WR_ORDER_RELAXED, sizeof(T),
                   site, 0);
    return v;
}

template <typename T, typename U>
__device__ __forceinline__ void store(const wrr_site_desc *site, T *p, U v)
{
    wrr_dev_state *s = wrr_active();
    if (!s) {
        *p = (T)v;
        return;
    }
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_PLAIN);
    *p = (T)v;
    wrr_access_end(s, &pd, WR_OP_STORE, WR_AOP_NONE, WR_SCOPE_NONE, WR_ORDER_WEAK, sizeof(T),
                   site, 0);
}

template <typename T, typename U>
__device__ __forceinline__ void store_volatile(const wrr_site_desc *site, T *p, U v)
{
    wrr_dev_state *s = wrr_active();
    if (!s) {
        *(volatile T *)p = (T)v;
        return;
    }
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_VOLATILE);
    *(volatile T *)p = (T)v;
    wrr_access_end(s, &pd, WR_OP_STORE, WR_AOP_NONE, WR_SCOPE_NONE, WR_ORDER_RELAXED, sizeof(T),
                   site, 0);
}

/* Generic recorded RMW: `op` performs the atomic and returns the old value. */
template <typename T, typename F>
__device__ __forceinline__ T rmw(const wrr_site_desc *site, T *p, unsigned aop, unsigned scope,
                                 F op)
{
    wrr_dev_state *s = wrr_active();
    if (!s)
        return op();
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_ATOMIC);
    T old = op();
    wrr_access_end(s, &pd, WR_OP_ATOMIC_RMW, aop, scope, WR_ORDER_RELAXED, sizeof(T), site, 0);
    return old;
}

template <typename T, typename F>
__device__ __forceinline__ T cas(const wrr_site_desc *site, T *p, T cmp, unsigned scope, F op)
{
    wrr_dev_state *s = wrr_active();
    if (!s)
        return op();
    wrr_pending pd;
    wrr_access_begin(s, &pd, p, WRR_ACC_ATOMIC);
    T old = op();
    wrr_access_end(s, &pd, WR_OP_ATOMIC_RMW, WR_AOP_CAS, scope, WR_ORDER_RELAXED, sizeof(T), site,
                   old == cmp);
    return old;
}

__device__ __forceinline__ void fence(const wrr_site_desc *site, unsigned scope)
{
    /* recorded before the fence executes, in program order between the
     * accesses it separates */
    wrr_sync_warp_record(WRR_K_FENCE, 0, scope, WR_ORDER_SC, site);
    if (scope == WR_SCOPE_BLOCK)
        __threadfence_block();
    else if (scope == WR_SCOPE_SYSTEM)
        __threadfence_system();
    else
        __threadfence();
}

/* Barrier arrival is recorded before the barrier: every arrival precedes
 * every access made after it.  This records a sync's arrival;
 * WR_BARRIER_ARRIVE's, an arrival that does not wait, is bar_arrive below. */
__device__ __forceinline__ void barrier_arrive(const wrr_site_desc *site, unsigned id,
                                               unsigned expected)
{
    wrr_sync_warp_record(WRR_K_BARRIER, WRR_BAR_AUX_BLOCK(id, expected), WR_BAR_BLOCK, 0, site);
}

__device__ __forceinline__ void syncthreads(const wrr_site_desc *site)
{
    barrier_arrive(site, 0, wrr_block_threads());
    __syncthreads();
}
__device__ __forceinline__ int syncthreads_count(const wrr_site_desc *site, int pred)
{
    barrier_arrive(site, 0, wrr_block_threads());
    return __syncthreads_count(pred);
}
__device__ __forceinline__ int syncthreads_and(const wrr_site_desc *site, int pred)
{
    barrier_arrive(site, 0, wrr_block_threads());
    return __syncthreads_and(pred);
}
__device__ __forceinline__ int syncthreads_or(const wrr_site_desc *site, int pred)
{
    barrier_arrive(site, 0, wrr_block_threads());
    return __syncthreads_or(pred);
}
__device__ __forceinline__ void barrier_sync(const wrr_site_desc *site, unsigned id,
                                             unsigned nthreads)
{
    barrier_arrive(site, id, nthreads);
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

/* cluster.sync() and grid.sync(): each warp records its arrival first, as
 * at __syncthreads, so that every arrival of the cluster (grid) precedes
 * every record made after the barrier by any of its warps: a later
 * reservation on the ring's head is ordered after the barrier, which
 * releases (and its waiters acquire) at cluster (device) scope.  They have
 * no barrier id; the record's aux word is the whole expected count. */
#if defined(_CG_HAS_CLUSTER_GROUP)
__device__ __forceinline__ void cluster_sync(const wrr_site_desc *site)
{
    cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
    wrr_sync_warp_record(WRR_K_BARRIER, c.num_threads(), WR_BAR_CLUSTER, 0, site);
    c.sync();
}
#endif

#if defined(_CG_HAS_GRID_GROUP)
__device__ __forceinline__ void grid_sync(const wrr_site_desc *site)
{
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    /* the event model counts threads in 32 bits; no cooperative grid that
     * fits on a GPU reaches that, so saturating loses nothing real */
    unsigned long long n = g.num_threads();
    wrr_sync_warp_record(WRR_K_BARRIER, n > 0xffffffffull ? 0xffffffffu : (uint32_t)n,
                         WR_BAR_GRID, 0, site);
    g.sync();
}
#endif

/* Split barriers (format 1.3, event.h wr_barrier_mode), one record per warp
 * with its mode.  An arrive is recorded before it executes, as a sync's
 * arrival is: it releases, so its record must lie ahead of every record a
 * waiter of its phase makes after its wait.  A wait is recorded after it
 * returns: it acquires, and only once it has returned is every arrival of
 * its phase (each recorded before it arrived) ahead of the wait's own
 * reservation on the ring's head.  A relaxed arrival releases nothing;
 * the __threadfence() that follows its record (wrr_sync_warp_record) is
 * what keeps the record ahead of the waiters' records (unverified without
 * a GPU, RECORDER.md). */

/* bar.arrive id, nthreads: the warp arrives at the block's named barrier
 * `id` and goes on.  PTX requires the thread count here (a multiple of the
 * warp size, the producers and consumers together); so does the record
 * (expected != 0), and a 0 would stop the drain as a corrupt record. */
__device__ __forceinline__ void bar_arrive(const wrr_site_desc *site, unsigned id,
                                           unsigned nthreads)
{
    wrr_sync_warp_record(WRR_K_BARRIER, WRR_BAR_AUX_BLOCK(id, nthreads), WR_BAR_BLOCK,
                         WR_BARMODE_ARRIVE, site);
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

/* barrier.cluster.arrive[.relaxed] and barrier.cluster.wait (what
 * cluster.sync() does in one; cooperative groups' barrier_arrive() /
 * barrier_wait()).  The arrive's count is the cluster's, as at
 * cluster_sync; a wait counts no thread (its aux word is 0). */
#if defined(_CG_HAS_CLUSTER_GROUP)
__device__ __forceinline__ void cluster_arrive(const wrr_site_desc *site, bool relaxed)
{
    wrr_sync_warp_record(WRR_K_BARRIER, cooperative_groups::this_cluster().num_threads(),
                         WR_BAR_CLUSTER, relaxed ? WR_BARMODE_ARRIVE_RELAXED : WR_BARMODE_ARRIVE,
                         site);
    if (relaxed)
        asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
    else
        asm volatile("barrier.cluster.arrive;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait(const wrr_site_desc *site)
{
    asm volatile("barrier.cluster.wait;" ::: "memory");
    wrr_sync_warp_record(WRR_K_BARRIER, 0, WR_BAR_CLUSTER, WR_BARMODE_WAIT, site);
}
#endif

/* mbarriers (format 1.3, event.h: scope WR_BAR_MBARRIER), one record per
 * warp with the lanes that executed (those naming one mbarrier with one
 * count or parity: device_logger.cuh wrr_mbarrier_lanes_record), the
 * mbarrier's shared offset, and the count or parity.  As at the split
 * barriers: an init and an arrive are recorded before they execute (an
 * init must precede every use of the mbarrier, an arrive releases); a wait
 * is recorded after it succeeded, only then, and only for the lanes it
 * succeeded in: every arrival of the phase it waited for is then ahead of
 * its reservation on the ring's head.  A relaxed arrive releases nothing;
 * the __threadfence() after its record keeps the record ahead of the
 * waiters' (unverified without a GPU, RECORDER.md). */
__device__ __forceinline__ void mbarrier_init(const wrr_site_desc *site, uint64_t *bar,
                                              unsigned count)
{
    wrr_dev_state *s = wrr_active();
    if (s)
        wrr_mbarrier_lanes_record(s, __activemask(), bar, count, WR_BARMODE_INIT, site);
    ptx::mbarrier_init(bar, count);
}

/* one arrival per lane: the record's count 0 */
__device__ __forceinline__ uint64_t mbarrier_arrive(const wrr_site_desc *site, uint64_t *bar)
{
    wrr_dev_state *s = wrr_active();
    if (s)
        wrr_mbarrier_lanes_record(s, __activemask(), bar, 0, WR_BARMODE_ARRIVE, site);
    return ptx::mbarrier_arrive(bar);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint64_t mbarrier_arrive_relaxed(const wrr_site_desc *site,
                                                            uint64_t *bar)
{
    wrr_dev_state *s = wrr_active();
    if (s)
        wrr_mbarrier_lanes_record(s, __activemask(), bar, 0, WR_BARMODE_ARRIVE_RELAXED, site);
    return ptx::mbarrier_arrive_relaxed(bar);
}

/* The record keeps the parity's low bit, the phase PTX tests: a record
 * with another parity would stop the drain as corrupt. */
__device__ __forceinline__ bool mbarrier_try_wait_parity(const wrr_site_desc *site,
                                                         uint64_t *bar, unsigned parity)
{
    bool done = ptx::mbarrier_try_wait_parity(bar, parity);
    wrr_dev_state *s = wrr_active();
    if (s) {
        unsigned lanes = __ballot_sync(__activemask(), done);
        if (done)
            wrr_mbarrier_lanes_record(s, lanes, bar, parity & 1u, WR_BARMODE_WAIT, site);
    }
    return done;
}
#endif

/* __syncwarp(mask): the lanes of mask meet first, then the lowest lane of
 * mask records once, then they meet again, so the record lies between
 * every access before and every access after the sync. */
__device__ __forceinline__ void syncwarp(const wrr_site_desc *site, unsigned mask)
{
    wrr_dev_state *s = wrr_active();
    __syncwarp(mask);
    if (!s)
        return;
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        wrr_sync_record(s, WRR_K_WARP_SYNC, mask, 0, 0, 0, site);
        __threadfence();
    }
    __syncwarp(mask);
}

__device__ __forceinline__ void block_mark(const wrr_site_desc *site, unsigned kind)
{
    wrr_dev_state *s = wrr_active();
    if (kind == WRR_K_BLOCK_EXIT)
        __syncthreads();
    if (s && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        wrr_sync_record(s, kind, 1u, 0, 0, 0, site);
        __threadfence();
    }
    if (kind == WRR_K_BLOCK_ENTER)
        __syncthreads();
}

} /* namespace wr */

#define WR_LOAD(p) wr::load(WR_SITE(), (p))
#define WR_STORE(p, v) wr::store(WR_SITE(), (p), (v))
#define WR_LOAD_VOLATILE(p) wr::load_volatile(WR_SITE(), (p))
#define WR_STORE_VOLATILE(p, v) wr::store_volatile(WR_SITE(), (p), (v))

#define WRR_RMW_(fn, aop, scope, p, v) \
    ({ auto wrr_p_ = (p); auto wrr_v_ = (v); \
       wr::rmw(WR_SITE(), wrr_p_, aop, scope, [&]() { return fn(wrr_p_, wrr_v_); }); })
#define WRR_CAS_(fn, scope, p, c, v) \
    ({ auto wrr_p_ = (p); auto wrr_c_ = (c); auto wrr_v_ = (v); \
       wr::cas(WR_SITE(), wrr_p_, (decltype(*wrr_p_ + 0))wrr_c_, scope, \
               [&]() { return fn(wrr_p_, wrr_c_, wrr_v_); }); })

#define WR_ATOMIC_ADD(p, v)          WRR_RMW_(atomicAdd, WR_AOP_ADD, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_ADD_BLOCK(p, v)    WRR_RMW_(atomicAdd_block, WR_AOP_ADD, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_ADD_SYSTEM(p, v)   WRR_RMW_(atomicAdd_system, WR_AOP_ADD, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_SUB(p, v)          WRR_RMW_(atomicSub, WR_AOP_SUB, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_SUB_BLOCK(p, v)    WRR_RMW_(atomicSub_block, WR_AOP_SUB, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_SUB_SYSTEM(p, v)   WRR_RMW_(atomicSub_system, WR_AOP_SUB, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_EXCH(p, v)         WRR_RMW_(atomicExch, WR_AOP_EXCH, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_EXCH_BLOCK(p, v)   WRR_RMW_(atomicExch_block, WR_AOP_EXCH, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_EXCH_SYSTEM(p, v)  WRR_RMW_(atomicExch_system, WR_AOP_EXCH, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_MIN(p, v)          WRR_RMW_(atomicMin, WR_AOP_MIN, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_MIN_BLOCK(p, v)    WRR_RMW_(atomicMin_block, WR_AOP_MIN, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_MIN_SYSTEM(p, v)   WRR_RMW_(atomicMin_system, WR_AOP_MIN, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_MAX(p, v)          WRR_RMW_(atomicMax, WR_AOP_MAX, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_MAX_BLOCK(p, v)    WRR_RMW_(atomicMax_block, WR_AOP_MAX, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_MAX_SYSTEM(p, v)   WRR_RMW_(atomicMax_system, WR_AOP_MAX, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_AND(p, v)          WRR_RMW_(atomicAnd, WR_AOP_AND, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_AND_BLOCK(p, v)    WRR_RMW_(atomicAnd_block, WR_AOP_AND, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_AND_SYSTEM(p, v)   WRR_RMW_(atomicAnd_system, WR_AOP_AND, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_OR(p, v)           WRR_RMW_(atomicOr, WR_AOP_OR, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_OR_BLOCK(p, v)     WRR_RMW_(atomicOr_block, WR_AOP_OR, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_OR_SYSTEM(p, v)    WRR_RMW_(atomicOr_system, WR_AOP_OR, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_XOR(p, v)          WRR_RMW_(atomicXor, WR_AOP_XOR, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_XOR_BLOCK(p, v)    WRR_RMW_(atomicXor_block, WR_AOP_XOR, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_XOR_SYSTEM(p, v)   WRR_RMW_(atomicXor_system, WR_AOP_XOR, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_INC(p, v)          WRR_RMW_(atomicInc, WR_AOP_INC, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_INC_BLOCK(p, v)    WRR_RMW_(atomicInc_block, WR_AOP_INC, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_INC_SYSTEM(p, v)   WRR_RMW_(atomicInc_system, WR_AOP_INC, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_DEC(p, v)          WRR_RMW_(atomicDec, WR_AOP_DEC, WR_SCOPE_DEVICE, p, v)
#define WR_ATOMIC_DEC_BLOCK(p, v)    WRR_RMW_(atomicDec_block, WR_AOP_DEC, WR_SCOPE_BLOCK, p, v)
#define WR_ATOMIC_DEC_SYSTEM(p, v)   WRR_RMW_(atomicDec_system, WR_AOP_DEC, WR_SCOPE_SYSTEM, p, v)
#define WR_ATOMIC_CAS(p, c, v)        WRR_CAS_(atomicCAS, WR_SCOPE_DEVICE, p, c, v)
#define WR_ATOMIC_CAS_BLOCK(p, c, v)  WRR_CAS_(atomicCAS_block, WR_SCOPE_BLOCK, p, c, v)
#define WR_ATOMIC_CAS_SYSTEM(p, c, v) WRR_CAS_(atomicCAS_system, WR_SCOPE_SYSTEM, p, c, v)

#define WR_THREADFENCE_BLOCK()  wr::fence(WR_SITE(), WR_SCOPE_BLOCK)
#define WR_THREADFENCE()        wr::fence(WR_SITE(), WR_SCOPE_DEVICE)
#define WR_THREADFENCE_SYSTEM() wr::fence(WR_SITE(), WR_SCOPE_SYSTEM)
#define WR_SYNCTHREADS()        wr::syncthreads(WR_SITE())
#define WR_SYNCTHREADS_COUNT(p) wr::syncthreads_count(WR_SITE(), (p))
#define WR_SYNCTHREADS_AND(p)   wr::syncthreads_and(WR_SITE(), (p))
#define WR_SYNCTHREADS_OR(p)    wr::syncthreads_or(WR_SITE(), (p))
#define WR_BARRIER_SYNC(id, n)  wr::barrier_sync(WR_SITE(), (id), (n))
#define WR_CLUSTER_SYNC()       wr::cluster_sync(WR_SITE())
#define WR_GRID_SYNC()          wr::grid_sync(WR_SITE())
#define WR_BARRIER_ARRIVE(id, n)    wr::bar_arrive(WR_SITE(), (id), (n))
#define WR_CLUSTER_ARRIVE()         wr::cluster_arrive(WR_SITE(), false)
#define WR_CLUSTER_ARRIVE_RELAXED() wr::cluster_arrive(WR_SITE(), true)
#define WR_CLUSTER_WAIT()           wr::cluster_wait(WR_SITE())
#define WR_MBARRIER_INIT(bar, n)            wr::mbarrier_init(WR_SITE(), (bar), (n))
#define WR_MBARRIER_ARRIVE(bar)             wr::mbarrier_arrive(WR_SITE(), (bar))
#define WR_MBARRIER_ARRIVE_RELAXED(bar)     wr::mbarrier_arrive_relaxed(WR_SITE(), (bar))
#define WR_MBARRIER_TRY_WAIT_PARITY(bar, p) wr::mbarrier_try_wait_parity(WR_SITE(), (bar), (p))
#define WR_SYNCWARP(mask)       wr::syncwarp(WR_SITE(), (mask))
#define WR_BLOCK_BEGIN()        wr::block_mark(WR_SITE(), WRR_K_BLOCK_ENTER)
#define WR_BLOCK_END()          wr::block_mark(WR_SITE(), WRR_K_BLOCK_EXIT)

#ifdef WARPRACE_ATOMIC_REF
#include <cuda/atomic>
namespace wr {
template <cuda::thread_scope S> struct scope_of { enum { v = WR_SCOPE_SYSTEM }; };
template <> struct scope_of<cuda::thread_scope_block> { enum { v = WR_SCOPE_BLOCK }; };
template <> struct scope_of<cuda::thread_scope_device> { enum { v = WR_SCOPE_DEVICE }; };

__device__ __forceinline__ unsigned order_of(cuda::std::memory_order o)
{
    switch (o) {
    case cuda::std::memory_order_relaxed: return WR_ORDER_RELAXED;
    case cuda::std::memory_order_consume:
    case cuda::std::memory_order_acquire: return WR_ORDER_ACQUIRE;
    case cuda::std::memory_order_release: return WR_ORDER_RELEASE;
    case cuda::std::memory_order_acq_rel: return WR_ORDER_ACQ_REL;
    default: return WR_ORDER_SC;
    }
}

/* cuda::atomic_ref with each operation recorded; `site` comes from the
 * WR_REF(...) macro or defaults to unknown. */
template <typename T, cuda::thread_scope S = cuda::thread_scope_system>
struct atomic_ref {
    T *p;
    const wrr_site_desc *site;
    __device__ explicit atomic_ref(T &r, const wrr_site_desc *s = 0) : p(&r), site(s) {}

    template <typename F>
    __device__ T rec(unsigned op, unsigned aop, cuda::std::memory_order mo, F f, int is_cas = 0,
                     T cmp = T()) const
    {
        wrr_dev_state *s = wrr_active();
        if (!s)
            return f();
        wrr_pending pd;
        wrr_access_begin(s, &pd, p, WRR_ACC_ATOMIC);
        T v = f();
        wrr_access_end(s, &pd, op, aop, scope_of<S>::v, order_of(mo), sizeof(T), site,
                       is_cas && v == cmp);
        return v;
    }
    __device__ T load(cuda::std::memory_order mo = cuda::std::memory_order_seq_cst) const
    {
        return rec(WR_OP_ATOMIC_LOAD, WR_AOP_NONE, mo,
                   [&]() { return cuda::atomic_ref<T, S>(*p).load(mo); });
    }
    __device__ void store(T v, cuda::std::memory_order mo = cuda::std::memory_order_seq_cst) const
    {
        rec(WR_OP_ATOMIC_STORE, WR_AOP_NONE, mo,
            [&]() { cuda::atomic_ref<T, S>(*p).store(v, mo); return v; });
    }
    __device__ T exchange(T v, cuda::std::memory_order mo = cuda::std::memory_order_seq_cst) const
    {
        return rec(WR_OP_ATOMIC_RMW, WR_AOP_EXCH, mo,
                   [&]() { return cuda::atomic_ref<T, S>(*p).exchange(v, mo); });
    }
    __device__ T fetch_add(T v, cuda::std::memory_order mo = cuda::std::memory_order_seq_cst) const
    {
        return rec(WR_OP_ATOMIC_RMW, WR_AOP_ADD, mo,
                   [&]() { return cuda::atomic_ref<T, S>(*p).fetch_add(v, mo); });
    }
    __device__ bool compare_exchange_strong(T &expected, T desired,
                                            cuda::std::memory_order mo =
                                                cuda::std::memory_order_seq_cst) const
    {
        T want = expected;
        T old = rec(WR_OP_ATOMIC_RMW, WR_AOP_CAS, mo, [&]() {
            T e = want;
            cuda::atomic_ref<T, S>(*p).compare_exchange_strong(e, desired, mo);
            return e;
        }, 1, want);
        expected = old;
        return old == want;
    }
};
} /* namespace wr */
#define WR_REF(T, S, x) wr::atomic_ref<T, S>((x), WR_SITE())
#endif /* WARPRACE_ATOMIC_REF */

#else /* !WARPRACE_RECORD: the plain operations */

#define WR_LOAD(p) (*(p))
#define WR_STORE(p, v) ((void)(*(p) = (v)))
#define WR_LOAD_VOLATILE(p) (*(volatile decltype(+*(p)) *)(p))
#define WR_STORE_VOLATILE(p, v) ((void)(*(volatile decltype(+*(p)) *)(p) = (v)))
#define WR_ATOMIC_ADD(p, v) atomicAdd(p, v)
#define WR_ATOMIC_ADD_BLOCK(p, v) atomicAdd_block(p, v)
#define WR_ATOMIC_ADD_SYSTEM(p, v) atomicAdd_system(p, v)
#define WR_ATOMIC_SUB(p, v) atomicSub(p, v)
#define WR_ATOMIC_SUB_BLOCK(p, v) atomicSub_block(p, v)
#define WR_ATOMIC_SUB_SYSTEM(p, v) atomicSub_system(p, v)
#define WR_ATOMIC_EXCH(p, v) atomicExch(p, v)
#define WR_ATOMIC_EXCH_BLOCK(p, v) atomicExch_block(p, v)
#define WR_ATOMIC_EXCH_SYSTEM(p, v) atomicExch_system(p, v)
#define WR_ATOMIC_MIN(p, v) atomicMin(p, v)
#define WR_ATOMIC_MIN_BLOCK(p, v) atomicMin_block(p, v)
#define WR_ATOMIC_MIN_SYSTEM(p, v) atomicMin_system(p, v)
#define WR_ATOMIC_MAX(p, v) atomicMax(p, v)
#define WR_ATOMIC_MAX_BLOCK(p, v) atomicMax_block(p, v)
#define WR_ATOMIC_MAX_SYSTEM(p, v) atomicMax_system(p, v)
#define WR_ATOMIC_AND(p, v) atomicAnd(p, v)
#define WR_ATOMIC_AND_BLOCK(p, v) atomicAnd_block(p, v)
#define WR_ATOMIC_AND_SYSTEM(p, v) atomicAnd_system(p, v)
#define WR_ATOMIC_OR(p, v) atomicOr(p, v)
#define WR_ATOMIC_OR_BLOCK(p, v) atomicOr_block(p, v)
#define WR_ATOMIC_OR_SYSTEM(p, v) atomicOr_system(p, v)
#define WR_ATOMIC_XOR(p, v) atomicXor(p, v)
#define WR_ATOMIC_XOR_BLOCK(p, v) atomicXor_block(p, v)
#define WR_ATOMIC_XOR_SYSTEM(p, v) atomicXor_system(p, v)
#define WR_ATOMIC_INC(p, v) atomicInc(p, v)
#define WR_ATOMIC_INC_BLOCK(p, v) atomicInc_block(p, v)
#define WR_ATOMIC_INC_SYSTEM(p, v) atomicInc_system(p, v)
#define WR_ATOMIC_DEC(p, v) atomicDec(p, v)
#define WR_ATOMIC_DEC_BLOCK(p, v) atomicDec_block(p, v)
#define WR_ATOMIC_DEC_SYSTEM(p, v) atomicDec_system(p, v)
#define WR_ATOMIC_CAS(p, c, v) atomicCAS(p, c, v)
#define WR_ATOMIC_CAS_BLOCK(p, c, v) atomicCAS_block(p, c, v)
#define WR_ATOMIC_CAS_SYSTEM(p, c, v) atomicCAS_system(p, c, v)
#define WR_THREADFENCE_BLOCK() __threadfence_block()
#define WR_THREADFENCE() __threadfence()
#define WR_THREADFENCE_SYSTEM() __threadfence_system()
#define WR_SYNCTHREADS() __syncthreads()
#define WR_SYNCTHREADS_COUNT(p) __syncthreads_count(p)
#define WR_SYNCTHREADS_AND(p) __syncthreads_and(p)
#define WR_SYNCTHREADS_OR(p) __syncthreads_or(p)
#define WR_BARRIER_SYNC(id, n) asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory")
#define WR_CLUSTER_SYNC() cooperative_groups::this_cluster().sync()
#define WR_GRID_SYNC() cooperative_groups::this_grid().sync()
#define WR_BARRIER_ARRIVE(id, n) asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory")
#define WR_CLUSTER_ARRIVE() asm volatile("barrier.cluster.arrive;" ::: "memory")
#define WR_CLUSTER_ARRIVE_RELAXED() asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory")
#define WR_CLUSTER_WAIT() asm volatile("barrier.cluster.wait;" ::: "memory")
#define WR_MBARRIER_INIT(bar, n) wr::ptx::mbarrier_init((bar), (n))
#define WR_MBARRIER_ARRIVE(bar) wr::ptx::mbarrier_arrive(bar)
#define WR_MBARRIER_ARRIVE_RELAXED(bar) wr::ptx::mbarrier_arrive_relaxed(bar)
#define WR_MBARRIER_TRY_WAIT_PARITY(bar, p) wr::ptx::mbarrier_try_wait_parity((bar), (p))
#define WR_SYNCWARP(mask) __syncwarp(mask)
#define WR_BLOCK_BEGIN() ((void)0)
#define WR_BLOCK_END() ((void)0)
#ifdef WARPRACE_ATOMIC_REF
#include <cuda/atomic>
#define WR_REF(T, S, x) cuda::atomic_ref<T, S>(x)
#endif

#endif /* WARPRACE_RECORD */

#ifdef WARPRACE_REPLACE_BUILTINS
#define atomicAdd(p, v) WR_ATOMIC_ADD(p, v)
#define atomicAdd_block(p, v) WR_ATOMIC_ADD_BLOCK(p, v)
#define atomicAdd_system(p, v) WR_ATOMIC_ADD_SYSTEM(p, v)
#define atomicSub(p, v) WR_ATOMIC_SUB(p, v)
#define atomicExch(p, v) WR_ATOMIC_EXCH(p, v)
#define atomicExch_block(p, v) WR_ATOMIC_EXCH_BLOCK(p, v)
#define atomicExch_system(p, v) WR_ATOMIC_EXCH_SYSTEM(p, v)
#define atomicMin(p, v) WR_ATOMIC_MIN(p, v)
#define atomicMax(p, v) WR_ATOMIC_MAX(p, v)
#define atomicAnd(p, v) WR_ATOMIC_AND(p, v)
#define atomicOr(p, v) WR_ATOMIC_OR(p, v)
#define atomicXor(p, v) WR_ATOMIC_XOR(p, v)
#define atomicInc(p, v) WR_ATOMIC_INC(p, v)
#define atomicDec(p, v) WR_ATOMIC_DEC(p, v)
#define atomicCAS(p, c, v) WR_ATOMIC_CAS(p, c, v)
#define atomicCAS_block(p, c, v) WR_ATOMIC_CAS_BLOCK(p, c, v)
#define atomicCAS_system(p, c, v) WR_ATOMIC_CAS_SYSTEM(p, c, v)
#define __threadfence_block() WR_THREADFENCE_BLOCK()
#define __threadfence() WR_THREADFENCE()
#define __threadfence_system() WR_THREADFENCE_SYSTEM()
#define __syncthreads() WR_SYNCTHREADS()
#define __syncwarp(m) WR_SYNCWARP(m)
#endif

#endif /* WARPRACE_DEVICE_CUH */

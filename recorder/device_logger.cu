/*
 * Compile check of the device API for sm_90: kernels that use every
 * wrapper, for every element type the atomics take.  Built by meson (with
 * recording on and, as device_logger_off.o, with -DWARPRACE_RECORD=0) so
 * that a change that breaks the device code fails the build even where no
 * GPU runs the tests.  The ring protocol itself lives in device_logger.cuh.
 */
#define WARPRACE_ATOMIC_REF 1
#include "warprace/device.cuh"

template <typename T>
__device__ void every_atomic(T *p, T v)
{
    (void)WR_ATOMIC_ADD(p, v);
    (void)WR_ATOMIC_ADD_BLOCK(p, v);
    (void)WR_ATOMIC_ADD_SYSTEM(p, v);
}

template <typename T>
__device__ void every_exch(T *p, T v)
{
    (void)WR_ATOMIC_EXCH(p, v);
    (void)WR_ATOMIC_EXCH_BLOCK(p, v);
    (void)WR_ATOMIC_EXCH_SYSTEM(p, v);
}

template <typename T>
__device__ void every_int_atomic(T *p, T v)
{
    every_atomic(p, v);
    every_exch(p, v);
    (void)WR_ATOMIC_MIN(p, v);
    (void)WR_ATOMIC_MAX_BLOCK(p, v);
    (void)WR_ATOMIC_AND(p, v);
    (void)WR_ATOMIC_OR_SYSTEM(p, v);
    (void)WR_ATOMIC_XOR(p, v);
    (void)WR_ATOMIC_CAS(p, (T)0, v);
    (void)WR_ATOMIC_CAS_BLOCK(p, (T)0, v);
    (void)WR_ATOMIC_CAS_SYSTEM(p, (T)0, v);
}

extern "C" __global__ void warprace_api_selftest(int *gi, unsigned *gu, unsigned long long *gl,
                                                 float *gf, double *gd, int *out)
{
    __shared__ int sh[64];
    int local[4];
    WR_BLOCK_BEGIN();
    unsigned t = threadIdx.x;
    WR_STORE(&sh[t % 64], (int)t);                 /* shared, strided */
    WR_SYNCTHREADS();
    int a = WR_LOAD(&sh[(t * 7) % 64]);            /* shared, vector */
    int b = WR_LOAD_VOLATILE(&gi[0]);              /* global, uniform */
    WR_STORE_VOLATILE(&gi[t + 1], a + b);          /* global, strided */
    WR_STORE(&local[t % 4], a);                    /* local */
    every_int_atomic(gi, 1);
    every_int_atomic(gu, 1u);
    every_int_atomic(gl, 1ull);
    every_atomic(gf, 1.0f);
    every_exch(gf, 1.0f);
    (void)WR_ATOMIC_SUB(gi, 1);
    (void)WR_ATOMIC_SUB_BLOCK(gu, 1u);
    (void)WR_ATOMIC_SUB_SYSTEM(gi, 1);
    every_atomic(gd, 1.0);
    (void)WR_ATOMIC_INC(gu, 10u);
    (void)WR_ATOMIC_DEC(gu, 10u);
    WR_THREADFENCE_BLOCK();
    WR_THREADFENCE();
    WR_THREADFENCE_SYSTEM();
    if (t < 16)                                    /* divergence + partial syncwarp */
        WR_SYNCWARP(0x0000ffffu);
    int c = WR_SYNCTHREADS_COUNT(t & 1) + WR_SYNCTHREADS_AND(1) + WR_SYNCTHREADS_OR(0);
    if (blockDim.x >= 64)
        WR_BARRIER_SYNC(1, 64);
    auto r = WR_REF(int, cuda::thread_scope_device, gi[1]);
    r.store(3, cuda::std::memory_order_release);
    int e = 3;
    r.compare_exchange_strong(e, 4, cuda::std::memory_order_acq_rel);
    c += r.load(cuda::std::memory_order_acquire) + r.fetch_add(1) + r.exchange(0);
    out[t] = c + WR_LOAD(&local[(t + 1) % 4]);
    WR_BLOCK_END();
}

/* Cluster and grid barriers, apart: a kernel that uses them must be
 * launched in clusters or cooperatively. */
extern "C" __global__ void warprace_api_selftest_groups(int *g)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
    WR_STORE(&g[t], 1);
    WR_CLUSTER_SYNC();
    int a = WR_LOAD(&g[t ^ blockDim.x]);
    WR_GRID_SYNC();
    WR_STORE(&g[t], a + WR_LOAD(&g[(t + blockDim.x) % (blockDim.x * gridDim.x)]));
}

/* Split barriers: a producer warp arrives at named barrier 1 (bar.arrive)
 * where the consumer warp syncs; the cluster's arrive, relaxed arrive and
 * wait (clusters of 2 fixed at compile time, as barrier.cluster needs a
 * cluster launch). */
extern "C" __global__ void __cluster_dims__(2, 1, 1) warprace_api_selftest_split(int *g)
{
    __shared__ int sh[32];
    unsigned t = threadIdx.x;
    if (t < 32) {
        WR_STORE(&sh[t], (int)t);
        WR_BARRIER_ARRIVE(1, 64);
    } else if (t < 64) {
        WR_BARRIER_SYNC(1, 64);
        WR_STORE(&g[blockIdx.x * 32 + t - 32], WR_LOAD(&sh[t - 32]));
    }
    WR_CLUSTER_ARRIVE();
    WR_CLUSTER_WAIT();
    WR_CLUSTER_ARRIVE_RELAXED();
    WR_CLUSTER_WAIT();
}

/* mbarriers: one thread initializes two, every thread arrives at the
 * first and waits for its phase 0 (a hand-off of shared memory through
 * it), then arrives relaxed at the second and waits; the arrive's state
 * is used so that it is not dropped. */
extern "C" __global__ void warprace_api_selftest_mbarrier(int *g)
{
    __shared__ uint64_t bars[2];
    __shared__ int sh[64];
    unsigned t = threadIdx.x;
    if (t == 0) {
        WR_MBARRIER_INIT(&bars[0], blockDim.x);
        WR_MBARRIER_INIT(&bars[1], blockDim.x);
    }
    WR_SYNCTHREADS();
    WR_STORE(&sh[t % 64], (int)t);
    uint64_t state = WR_MBARRIER_ARRIVE(&bars[0]);
    while (!WR_MBARRIER_TRY_WAIT_PARITY(&bars[0], 0)) {
    }
    WR_STORE(&g[blockIdx.x * blockDim.x + t], WR_LOAD(&sh[(t + 1) % 64]) + (int)(state & 1));
    (void)WR_MBARRIER_ARRIVE_RELAXED(&bars[1]);
    while (!WR_MBARRIER_TRY_WAIT_PARITY(&bars[1], 0)) {
    }
}

/* Distributed shared memory: the wrappers reach another block's shared
 * memory through the generic pointer cluster.map_shared_rank() returns
 * (recorded as DSMEM), and the own block's through either pointer. */
extern "C" __global__ void __cluster_dims__(2, 1, 1) warprace_api_selftest_dsmem(int *g)
{
    __shared__ int sh[64];
    cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
    unsigned t = threadIdx.x % 64;
    WR_STORE(&sh[t], (int)t);
    WR_CLUSTER_SYNC();
    int *peer = c.map_shared_rank(sh, c.block_rank() ^ 1u);
    int *own = c.map_shared_rank(sh, c.block_rank());
    int v = WR_LOAD(&peer[t]) + WR_LOAD_VOLATILE(&own[t]);
    (void)WR_ATOMIC_ADD(&peer[0], 1);
    WR_STORE(&peer[(t + 1) % 64], v);
    WR_CLUSTER_SYNC();
    g[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

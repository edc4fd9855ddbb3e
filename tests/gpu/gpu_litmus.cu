/*
 * GPU litmus kernels written with the warprace device API.  Each mirrors a
 * text litmus trace of tests/litmus/ (same name, same allocation labels),
 * after the ScoR microbenchmarks and the barrier / warp-sync / divergence /
 * stream cases, the cluster (sm_90) and grid (cooperative launch)
 * barriers, and distributed shared memory (sm_90 clusters).  `gpu_litmus NAME` runs one; `gpu_litmus --list` lists
 * them; `gpu_litmus --probe` exits 0 when a CUDA device is usable.
 *
 * Parties: interblock = block 0 thread 0 (A) and block 1 thread 0 (B);
 * interwarp = threads 0 (A, warp 0) and 32 (B, warp 1) of one block.
 * lock(s) = spin on atomicCAS(lock, 0, 1) at scope s, then fence(s);
 * unlock(s) = fence(s), then atomicExch(lock, 0) at scope s.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "warprace/device.cuh"
#include "gpu_probe.cuh"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "gpu_litmus: %s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

struct args { int *data, *flag, *lock, *dummy; };

__device__ int party(bool interblock)
{
    if (interblock)
        return threadIdx.x == 0 ? (int)blockIdx.x : -1;   /* 0 = A, 1 = B */
    return threadIdx.x == 0 ? 0 : threadIdx.x == 32 ? 1 : -1;
}

/* ---- message passing ------------------------------------------------------ */

template <int A_FENCE, bool INTERBLOCK>   /* A_FENCE: 0 block, 1 device */
__global__ void k_mp(args a)
{
    int p = party(INTERBLOCK);
    if (p == 0) {
        WR_STORE_VOLATILE(a.data, 42);
        if (A_FENCE)
            WR_THREADFENCE();
        else
            WR_THREADFENCE_BLOCK();
        WR_ATOMIC_EXCH(a.flag, 1);
    } else if (p == 1) {
        while (WR_ATOMIC_EXCH(a.flag, 0) == 0) {
        }
        /* the reader's acquire fence: the writer's scope, or device scope
         * where the writer's (block) fence is the defect (tests/litmus) */
        if (A_FENCE || INTERBLOCK)
            WR_THREADFENCE();
        else
            WR_THREADFENCE_BLOCK();
        *a.dummy = WR_LOAD_VOLATILE(a.data);
    }
}

/* ---- atomics ---------------------------------------------------------------- */

template <int SA, int SB, bool INTERBLOCK>   /* scopes: 0 block, 1 device, 2 plain store */
__global__ void k_atom(args a)
{
    int p = party(INTERBLOCK);
    int s = p == 0 ? SA : SB;
    if (p < 0)
        return;
    if (s == 0)
        WR_ATOMIC_EXCH_BLOCK(a.data, p + 1);
    else if (s == 1)
        WR_ATOMIC_EXCH(a.data, p + 1);
    else
        WR_STORE_VOLATILE(a.data, p + 1);
}

/* ---- locks ------------------------------------------------------------------ */

template <int S>
__device__ void lock(int *l, bool acquire_fence)
{
    if (S)
        while (WR_ATOMIC_CAS(l, 0, 1) != 0) {
        }
    else
        while (WR_ATOMIC_CAS_BLOCK(l, 0, 1) != 0) {
        }
    if (acquire_fence) {
        if (S)
            WR_THREADFENCE();
        else
            WR_THREADFENCE_BLOCK();
    }
}

template <int S>
__device__ void unlock(int *l, bool release_fence)
{
    if (release_fence) {
        if (S)
            WR_THREADFENCE();
        else
            WR_THREADFENCE_BLOCK();
    }
    if (S)
        WR_ATOMIC_EXCH(l, 0);
    else
        WR_ATOMIC_EXCH_BLOCK(l, 0);
}

/* both parties store data inside lock(S); TF: release fences; STF: A's
 * acquire fence.  Without it, the race needs A to take the lock second
 * (the text litmus's order): a lock taken first needs no acquire fence, and
 * an H200 ran A first, an execution with no race.  So A sleeps first
 * (unrecorded, and no synchronization: the order is likely, not forced). */
template <int S, bool TF, bool STF, bool INTERBLOCK>
__global__ void k_lock(args a)
{
    int p = party(INTERBLOCK);
    if (p < 0)
        return;
    if (!STF && p == 0)
        for (int i = 0; i < 200; i++)
            __nanosleep(1000);
    lock<S>(a.lock, p == 0 ? STF : true);
    WR_STORE_VOLATILE(a.data, p + 1);
    unlock<S>(a.lock, TF);
}

/* ---- barriers, warp syncs, divergence -------------------------------------- */

template <bool SYNC>
__global__ void k_barrier(int *out)
{
    __shared__ int tile[32];
    unsigned t = threadIdx.x;
    if (t < 32)
        WR_STORE(&tile[t], (int)t);
    if (SYNC)
        WR_SYNCTHREADS();
    if (t >= 32)
        out[t] = WR_LOAD(&tile[t - 32]);
    WR_SYNCTHREADS();
    if (t >= 32)
        WR_STORE(&tile[t - 32], 0);
}

/* k_barrier in clusters of two: the block of rank 1 has its shared window
 * at 2^24 in shared addresses (an H200), which the logger must record as
 * the offset in the window, as rank 0's (cluster_own_shared_*) */
template <bool SYNC>
__global__ void __cluster_dims__(2, 1, 1) k_cluster_barrier(int *out)
{
    __shared__ int tile[32];
    unsigned t = threadIdx.x;
    if (t < 32)
        WR_STORE(&tile[t], (int)t);
    if (SYNC)
        WR_SYNCTHREADS();
    if (t >= 32)
        out[blockIdx.x * 32 + t - 32] = WR_LOAD(&tile[t - 32]);
}

template <unsigned MASK>
__global__ void k_syncwarp(int *data, int *out)
{
    unsigned lane = threadIdx.x;
    if (lane < 16)
        WR_STORE(&data[lane], (int)lane);
    WR_SYNCWARP(MASK);
    if (lane >= 16)
        out[lane] = WR_LOAD(&data[lane - 16]);
}

__global__ void k_divergence(int *data, int *out)
{
    unsigned lane = threadIdx.x;
    if (lane < 16)
        WR_STORE(data, 1);
    else
        out[lane] = WR_LOAD(data);
}

__global__ void producer(int *data)
{
    WR_STORE(&data[threadIdx.x], (int)threadIdx.x);
}

__global__ void consumer(int *data, int *out)
{
    out[threadIdx.x] = WR_LOAD(&data[threadIdx.x]);
}

/* data[first + i] = i for the block's threads */
__global__ void producer_at(int *data, int first)
{
    WR_STORE(&data[first + (int)threadIdx.x], (int)threadIdx.x);
}

/* ---- cluster and grid barriers ---------------------------------------------- */

/* Block 0's first LANES threads write data, every thread meets at a
 * cluster barrier (CLUSTER) or at its block's barrier only, and block
 * READER's read it.  Launched in clusters of 2 (cudaLaunchKernelEx: the
 * recorder takes the cluster shape from the launch). */
template <bool CLUSTER, unsigned LANES, unsigned READER>
__global__ void k_cluster_handoff(int *data, int *out)
{
    unsigned t = threadIdx.x;
    if (blockIdx.x == 0 && t < LANES)
        WR_STORE(&data[t], (int)t + 1);
    if (CLUSTER)
        WR_CLUSTER_SYNC();
    else
        WR_SYNCTHREADS();
    if (blockIdx.x == READER && t < LANES)
        out[t] = WR_LOAD(&data[t]);
}

/* Cooperative launch: thread 0 of each block writes its slot, grid.sync(),
 * thread 32 reads the next block's slot, (grid.sync(),) thread 0
 * overwrites its slot. */
template <bool SECOND>
__global__ void k_grid_phases(int *part, int *out)
{
    unsigned b = blockIdx.x, t = threadIdx.x;
    if (t == 0)
        WR_STORE(&part[b], (int)b + 1);
    WR_GRID_SYNC();
    if (t == 32)
        out[b] = WR_LOAD(&part[(b + 1) % gridDim.x]);
    if (SECOND)
        WR_GRID_SYNC();
    if (t == 0)
        WR_STORE(&part[b], 0);
}

/* ---- split barriers ------------------------------------------------------------ */

/* A warp-specialized pipeline on named barriers (64 threads): warp 0 fills
 * a shared buffer and bar.arrive(FULL = 1); warp 1 bar.sync(FULL), reads,
 * bar.arrive(EMPTY = 2).  EMPTY_WAIT: warp 0 bar.sync(EMPTY) before it
 * refills, and warp 1 reads the refill after FULL again; else warp 0
 * refills at once (the race). */
template <bool EMPTY_WAIT>
__global__ void k_pipeline(int *out)
{
    __shared__ int buf[32];
    unsigned t = threadIdx.x, lane = t & 31u;
    if (t < 32) {
        WR_STORE(&buf[lane], 1);
        WR_BARRIER_ARRIVE(1, 64);
        if (EMPTY_WAIT)
            WR_BARRIER_SYNC(2, 64);
        WR_STORE(&buf[lane], 2);
        if (EMPTY_WAIT)
            WR_BARRIER_ARRIVE(1, 64);
    } else {
        WR_BARRIER_SYNC(1, 64);
        int v = WR_LOAD(&buf[lane]);
        if (EMPTY_WAIT) {
            WR_BARRIER_ARRIVE(2, 64);
            WR_BARRIER_SYNC(1, 64);
            v += WR_LOAD(&buf[lane]);
        }
        out[lane] = v;
    }
}

/* Split cluster barriers (barrier.cluster.arrive / wait), clusters of 2
 * blocks of 32 threads.  MODE 0: block 0 writes data, arrives and waits;
 * block 1 arrives, waits and reads it (no race).  MODE 1: block 0's
 * arrival is relaxed (releases nothing).  MODE 2: block 0 writes between
 * its arrive and its wait. */
template <int MODE>
__global__ void k_cluster_split(int *data, int *out)
{
    unsigned t = threadIdx.x;
    if (blockIdx.x == 0) {
        if (MODE != 2)
            WR_STORE(&data[t], (int)t + 1);
        if (MODE == 1)
            WR_CLUSTER_ARRIVE_RELAXED();
        else
            WR_CLUSTER_ARRIVE();
        if (MODE == 2)
            WR_STORE(&data[t], (int)t + 1);
        WR_CLUSTER_WAIT();
    } else {
        WR_CLUSTER_ARRIVE();
        WR_CLUSTER_WAIT();
        out[t] = WR_LOAD(&data[t]);
    }
}

/* ---- mbarriers ----------------------------------------------------------------- */

/* A two-warp pipeline on mbarriers (FULL = bars[0], EMPTY = bars[1], one
 * arrival each, by lane 0 after a __syncwarp): warp 0 fills buf and
 * arrives at FULL; warp 1 waits for FULL's phase 0, reads, arrives at
 * EMPTY.  EMPTY_WAIT: warp 0 waits for EMPTY before it refills and
 * arrives at FULL again, warp 1 reads after FULL's phase 1.  Else warp 0
 * refills right after its arrival (the race; no second arrival, which
 * would let FULL's phase 1 complete and warp 1's wait for parity 0 spin
 * for ever). */
template <bool EMPTY_WAIT>
__global__ void k_mbarrier_pipeline(int *out)
{
    __shared__ int buf[32];
    __shared__ uint64_t bars[2];
    unsigned t = threadIdx.x, lane = t & 31u;
    if (t == 0) {
        WR_MBARRIER_INIT(&bars[0], 1);
        WR_MBARRIER_INIT(&bars[1], 1);
    }
    WR_SYNCTHREADS();
    if (t < 32) {
        WR_STORE(&buf[lane], 1);
        WR_SYNCWARP(0xffffffffu);
        if (lane == 0)
            WR_MBARRIER_ARRIVE(&bars[0]);
        if (EMPTY_WAIT)
            while (!WR_MBARRIER_TRY_WAIT_PARITY(&bars[1], 0)) {
            }
        WR_STORE(&buf[lane], 2);
        if (EMPTY_WAIT) {
            WR_SYNCWARP(0xffffffffu);
            if (lane == 0)
                WR_MBARRIER_ARRIVE(&bars[0]);
        }
    } else {
        while (!WR_MBARRIER_TRY_WAIT_PARITY(&bars[0], 0)) {
        }
        int v = WR_LOAD(&buf[lane]);
        if (EMPTY_WAIT) {
            WR_SYNCWARP(0xffffffffu);
            if (lane == 0)
                WR_MBARRIER_ARRIVE(&bars[1]);
            while (!WR_MBARRIER_TRY_WAIT_PARITY(&bars[0], 1)) {
            }
            v += WR_LOAD(&buf[lane]);
        }
        out[lane] = v;
    }
}

/* One mbarrier of the block's size, as cuda::barrier bar(block.size()) is
 * used: every thread writes its slot, arrives, waits for phase 0 and reads
 * the slot of the thread 32 further on.  The count comes from the launch
 * (blockDim.x), not a constant.  LATE_WRITE: each thread writes its slot
 * again between its arrive and its wait (the race). */
template <bool LATE_WRITE>
__global__ void k_mbarrier_block(int *out)
{
    __shared__ int buf[64];
    __shared__ uint64_t bar;
    unsigned t = threadIdx.x;
    if (t == 0)
        WR_MBARRIER_INIT(&bar, blockDim.x);
    WR_SYNCTHREADS();
    WR_STORE(&buf[t], (int)t);
    WR_MBARRIER_ARRIVE(&bar);
    if (LATE_WRITE)
        WR_STORE(&buf[t], (int)t + 1);
    while (!WR_MBARRIER_TRY_WAIT_PARITY(&bar, 0)) {
    }
    out[t] = WR_LOAD(&buf[(t + 32u) % 64u]);
}

/* A relaxed arrival (mbarrier.arrive.relaxed) completes the phase but
 * releases nothing: warp 0 fills buf and arrives relaxed, warp 1 waits for
 * the phase and reads (the race). */
__global__ void k_mbarrier_relaxed(int *out)
{
    __shared__ int buf[32];
    __shared__ uint64_t bar;
    unsigned t = threadIdx.x, lane = t & 31u;
    if (t == 0)
        WR_MBARRIER_INIT(&bar, 1);
    WR_SYNCTHREADS();
    if (t < 32) {
        WR_STORE(&buf[lane], 1);
        WR_SYNCWARP(0xffffffffu);
        if (lane == 0)
            WR_MBARRIER_ARRIVE_RELAXED(&bar);
    } else {
        while (!WR_MBARRIER_TRY_WAIT_PARITY(&bar, 0)) {
        }
        out[lane] = WR_LOAD(&buf[lane]);
    }
}

/* ---- distributed shared memory ----------------------------------------------- */

/* Clusters of 2 fixed at compile time (__cluster_dims__: the recorder takes
 * the shape from the kernel's attributes), 32 threads a block.  Block 1
 * reaches block 0's sh through cluster.map_shared_rank(sh, 0) (recorded as
 * DSMEM), block 0 through sh itself (SHARED).  Every block meets the other
 * at cluster.sync() before it exits: a block's shared memory may be
 * accessed only while that block runs (CUDA Programming Guide, distributed
 * shared memory).
 * HANDOFF: block 0 writes sh, cluster.sync(), block 1 reads it.
 * Else: after a first cluster.sync() (which makes sure both blocks run, so
 * the remote store has a target; it orders nothing between the two
 * accesses, both after it) block 1 writes block 0's sh while block 0
 * reads it, with no barrier between them. */
template <bool HANDOFF>
__global__ void __cluster_dims__(2, 1, 1) k_dsmem(int *out)
{
    __shared__ int sh[32];
    cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
    unsigned t = threadIdx.x, rank = c.block_rank();
    int *block0 = c.map_shared_rank(sh, 0);
    if (HANDOFF) {
        if (rank == 0)
            WR_STORE(&sh[t], (int)t + 1);
        WR_CLUSTER_SYNC();
        if (rank == 1)
            out[t] = WR_LOAD(&block0[t]);
    } else {
        WR_CLUSTER_SYNC();
        if (rank == 1)
            WR_STORE(&block0[t], (int)t + 1);
        else
            out[t] = WR_LOAD(&sh[t]);
    }
    WR_CLUSTER_SYNC();
}

/* Atomics on another block's shared memory (distributed shared memory):
 * block 0 zeroes its sh (atomicExch), cluster.sync(), then both blocks
 * add 1 to every word of block 0's sh, block 0 through sh itself (SHARED),
 * block 1 through cluster.map_shared_rank(sh, 0) (DSMEM), cluster.sync(),
 * and block 0 reads the sums (atomicAdd of 0).  DEVICE: atomicAdd, whose
 * scope holds both blocks; else atomicAdd_block, whose block scope holds
 * only the caller, so the two blocks' adds on one word race (insufficient
 * scope).  Every access is an atomic: with a plain store and load around
 * them, lockset and fsm warn by design (a word two blocks touched is not
 * reset by a cluster barrier), and which pair they name depends on which
 * block's add the GPU ran first, so the two recording paths would not
 * name the same races (litmus dsmem_atomic_norace). */
template <bool DEVICE>
__global__ void __cluster_dims__(2, 1, 1) k_dsmem_atomic(int *out)
{
    __shared__ int sh[32];
    cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
    unsigned t = threadIdx.x, rank = c.block_rank();
    int *block0 = c.map_shared_rank(sh, 0);
    if (rank == 0)
        WR_ATOMIC_EXCH(&sh[t], 0);
    WR_CLUSTER_SYNC();
    int *word = rank == 0 ? &sh[t] : &block0[t];
    if (DEVICE)
        WR_ATOMIC_ADD(word, 1);
    else
        WR_ATOMIC_ADD_BLOCK(word, 1);
    WR_CLUSTER_SYNC();
    if (rank == 0)
        out[t] = WR_ATOMIC_ADD(&sh[t], 0);
    WR_CLUSTER_SYNC();
}

/* What the cluster shared-memory conversions give on this GPU (printed by
 * --dsmem-probe): the logger's DSMEM offsets rest on them. */
__global__ void __cluster_dims__(2, 1, 1) k_dsmem_probe(unsigned long long *out)
{
    __shared__ int sh[32];
    cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
    unsigned rank = c.block_rank();
    if (threadIdx.x == 0) {
        unsigned long long *o = out + 8 * rank;
        void *other = c.map_shared_rank((void *)&sh[3], rank ^ 1u);
        o[0] = rank;
        o[1] = (unsigned)__cvta_generic_to_shared(&sh[3]);
        o[2] = (unsigned)__cvta_generic_to_shared(__cluster_map_shared_rank(other, rank));
        o[3] = (unsigned)__cvta_generic_to_shared(
            __cluster_map_shared_rank(__cvta_shared_to_generic(0), rank));
        o[4] = __isShared(__cluster_map_shared_rank(other, rank));
        o[5] = __isShared(other);
        o[6] = __cluster_query_shared_rank(other);
        o[7] = (unsigned long long)(uintptr_t)other - (unsigned long long)(uintptr_t)&sh[3];
    }
    c.sync();
}

static int run_dsmem_probe(void)
{
    unsigned long long *d, h[16];
    CK(cudaMalloc(&d, sizeof h));
    k_dsmem_probe<<<2, 32>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 2; r++) {
        const unsigned long long *o = h + 8 * r;
        printf("rank %llu: cvta(&sh[3]) %#llx; cvta(mapa(other rank's sh[3], own)) %#llx; "
               "cvta(mapa(shared 0, own)) %#llx; isShared(mapa(..., own)) %llu; "
               "isShared(other's) %llu; getctarank(other's) %llu; other's - own generic %#llx\n",
               o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]);
    }
    CK(cudaFree(d));
    return 0;
}

static int run_dsmem(const char *name)
{
    int *out;
    warprace_name_next_alloc("out");
    CK(cudaMalloc(&out, 32 * sizeof(int)));
    CK(cudaDeviceSynchronize());
    if (!strcmp(name, "dsmem_handoff_norace"))
        k_dsmem<true><<<2, 32>>>(out);
    else if (!strcmp(name, "dsmem_remote_race"))
        k_dsmem<false><<<2, 32>>>(out);
    else if (!strcmp(name, "dsmem_atomic_norace"))
        k_dsmem_atomic<true><<<2, 32>>>(out);
    else
        k_dsmem_atomic<false><<<2, 32>>>(out);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaFree(out));
    return 0;
}

static int run_group_barrier(const char *name)
{
    int *data, *out;
    int grid_kernel = !strncmp(name, "grid_sync", 9);
    warprace_name_next_alloc(grid_kernel ? "part" : "data");
    CK(cudaMalloc(&data, 128 * sizeof(int)));
    warprace_name_next_alloc("out");
    CK(cudaMalloc(&out, 128 * sizeof(int)));
    CK(cudaMemset(data, 0, 128 * sizeof(int)));
    CK(cudaDeviceSynchronize());
    if (grid_kernel) {
        void (*k)(int *, int *) = !strcmp(name, "grid_sync_phases_norace")
                                      ? k_grid_phases<true> : k_grid_phases<false>;
        void *kargs[] = {&data, &out};
        CK(cudaLaunchCooperativeKernel((const void *)k, dim3(3), dim3(64), kargs, 0, 0));
    } else {
        void (*k)(int *, int *);
        unsigned blocks = 2;
        if (!strcmp(name, "cluster_sync_global_handoff_norace"))
            k = k_cluster_handoff<true, 32, 1>;
        else if (!strcmp(name, "cluster_arrive_wait_handoff_norace"))
            k = k_cluster_split<0>;
        else if (!strcmp(name, "cluster_arrive_relaxed_handoff_race"))
            k = k_cluster_split<1>;
        else if (!strcmp(name, "cluster_write_between_arrive_and_wait_race"))
            k = k_cluster_split<2>;
        else if (!strcmp(name, "cluster_sync_other_cluster_race")) {
            k = k_cluster_handoff<true, 1, 2>;
            blocks = 4;
        } else
            k = k_cluster_handoff<false, 1, 1>;
        cudaLaunchConfig_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(32);
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = 2;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, k, data, out));
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaFree(data));
    CK(cudaFree(out));
    return 0;
}

/* A kernel on one stream writes; a host copy on another reads, 1D or
 * pitched (2 rows of 64 bytes at pitch 128), with or without waiting for
 * the kernel's stream first. */
static int run_host_copy(const char *name)
{
    int *data, host[64];
    warprace_name_next_alloc("data");
    CK(cudaMalloc(&data, 256));
    CK(cudaMemset(data, 0, 256));
    CK(cudaDeviceSynchronize());
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    int pitched = strstr(name, "copy2d") != NULL;
    int first = !strcmp(name, "host_copy2d_padding_norace") ? 16 : 0;
    producer_at<<<1, pitched ? 16 : 32, 0, s1>>>(data, first);
    CK(cudaGetLastError());
    if (!strcmp(name, "host_copy_after_sync_norace"))
        CK(cudaStreamSynchronize(s1));
    if (pitched)
        CK(cudaMemcpy2DAsync(host, 64, data, 128, 64, 2, cudaMemcpyDeviceToHost, s2));
    else
        CK(cudaMemcpyAsync(host, data, 128, cudaMemcpyDeviceToHost, s2));
    CK(cudaDeviceSynchronize());
    CK(cudaFree(data));
    return 0;
}

/* ---- the table -------------------------------------------------------------- */

enum shape { INTERBLOCK, INTERWARP };
typedef void (*args_kernel)(args);
struct litmus {
    const char *name;
    args_kernel k;
    int shape;
    const char *allocs;   /* labels of data/flag/lock, in that order, "" = unused */
};

static const litmus table[] = {
    {"scor_norace_interblock_fence_raw", k_mp<1, true>, INTERBLOCK, "data flag"},
    {"scor_race_interblock_blkfence_raw", k_mp<0, true>, INTERBLOCK, "data flag"},
    {"scor_norace_interwarp_fence_raw", k_mp<1, false>, INTERWARP, "data flag"},
    {"scor_norace_interwarp_blkfence_raw", k_mp<0, false>, INTERWARP, "data flag"},
    {"scor_norace_interblock_atom", k_atom<1, 1, true>, INTERBLOCK, "data"},
    {"scor_race_interblock_blkatom", k_atom<0, 0, true>, INTERBLOCK, "data"},
    {"scor_norace_interwarp_blkatom", k_atom<0, 0, false>, INTERWARP, "data"},
    {"scor_norace_interwarp_dev-blkatom", k_atom<1, 0, false>, INTERWARP, "data"},
    {"scor_race_interblock_none-atom_waw", k_atom<1, 2, true>, INTERBLOCK, "data"},
    {"scor_race_interwarp_none-atom_waw", k_atom<1, 2, false>, INTERWARP, "data"},
    {"scor_race_interwarp_none-blkatom_waw", k_atom<0, 2, false>, INTERWARP, "data"},
    {"scor_norace_interblock_lock_waw", k_lock<1, true, true, true>, INTERBLOCK, "data lock"},
    {"scor_race_interblock_blklock_waw", k_lock<0, true, true, true>, INTERBLOCK, "data lock"},
    {"scor_race_interblock_lock-no-tf_waw", k_lock<1, false, true, true>, INTERBLOCK, "data lock"},
    {"scor_race_interblock_lock-no-stf_waw", k_lock<1, true, false, true>, INTERBLOCK, "data lock"},
    {"scor_norace_interwarp_blklock_waw", k_lock<0, true, true, false>, INTERWARP, "data lock"},
};

static int run_args_kernel(const litmus *l)
{
    args a;
    const char *labels[] = {"data", "flag", "lock", "dummy"};
    int **slots[] = {&a.data, &a.flag, &a.lock, &a.dummy};
    for (int i = 0; i < 4; i++) {
        warprace_name_next_alloc(labels[i]);
        CK(cudaMalloc(slots[i], 4));
        CK(cudaMemset(*slots[i], 0, 4));
    }
    CK(cudaDeviceSynchronize());
    if (l->shape == INTERBLOCK)
        l->k<<<2, 1>>>(a);
    else
        l->k<<<1, 64>>>(a);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < 4; i++)
        CK(cudaFree(*slots[i]));
    return 0;
}

static int run_other(const char *name)
{
    int *data, *out;
    warprace_name_next_alloc("data");
    CK(cudaMalloc(&data, 128 * sizeof(int)));
    warprace_name_next_alloc("out");
    CK(cudaMalloc(&out, 128 * sizeof(int)));
    CK(cudaDeviceSynchronize());
    if (!strcmp(name, "barrier_interval_race"))
        k_barrier<false><<<1, 64>>>(out);
    else if (!strcmp(name, "barrier_interval_norace"))
        k_barrier<true><<<1, 64>>>(out);
    else if (!strcmp(name, "cluster_own_shared_race"))
        k_cluster_barrier<false><<<2, 64>>>(out);
    else if (!strcmp(name, "cluster_own_shared_norace"))
        k_cluster_barrier<true><<<2, 64>>>(out);
    else if (!strcmp(name, "mbarrier_pipeline_norace"))
        k_mbarrier_pipeline<true><<<1, 64>>>(out);
    else if (!strcmp(name, "mbarrier_missing_empty_wait_race"))
        k_mbarrier_pipeline<false><<<1, 64>>>(out);
    else if (!strcmp(name, "mbarrier_relaxed_arrive_race"))
        k_mbarrier_relaxed<<<1, 64>>>(out);
    else if (!strcmp(name, "mbarrier_block_sized_norace"))
        k_mbarrier_block<false><<<1, 64>>>(out);
    else if (!strcmp(name, "mbarrier_block_sized_write_after_arrive_race"))
        k_mbarrier_block<true><<<1, 64>>>(out);
    else if (!strcmp(name, "named_barrier_producer_consumer_norace"))
        k_pipeline<true><<<1, 64>>>(out);
    else if (!strcmp(name, "named_barrier_producer_overwrite_race"))
        k_pipeline<false><<<1, 64>>>(out);
    else if (!strcmp(name, "syncwarp_partial_mask_race"))
        k_syncwarp<0x0000ffffu><<<1, 32>>>(data, out);
    else if (!strcmp(name, "syncwarp_full_mask_norace"))
        k_syncwarp<0xffffffffu><<<1, 32>>>(data, out);
    else if (!strcmp(name, "divergence_intra_warp_race"))
        k_divergence<<<1, 32>>>(data, out);
    else if (!strcmp(name, "streams_no_event_race") || !strcmp(name, "streams_event_norace")) {
        cudaStream_t s1, s2;
        cudaEvent_t e;
        CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        CK(cudaEventCreate(&e));
        producer<<<1, 32, 0, s1>>>(data);
        if (!strcmp(name, "streams_event_norace")) {
            CK(cudaEventRecord(e, s1));
            CK(cudaStreamWaitEvent(s2, e, 0));
        }
        consumer<<<1, 32, 0, s2>>>(data, out);
    } else if (!strcmp(name, "legacy_stream_after_non_blocking_race") ||
               !strcmp(name, "legacy_stream_waits_for_blocking_norace")) {
        /* the producer on a stream of its own, the consumer on the legacy
         * default stream: ordered only when that stream is blocking */
        cudaStream_t s;
        if (!strcmp(name, "legacy_stream_after_non_blocking_race"))
            CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        else
            CK(cudaStreamCreate(&s));
        producer<<<1, 32, 0, s>>>(data);
        consumer<<<1, 32>>>(data, out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaStreamDestroy(s));
    } else {
        fprintf(stderr, "gpu_litmus: no litmus '%s' (try --list)\n", name);
        return 2;
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return 0;
}

static const char *const others[] = {"barrier_interval_race", "barrier_interval_norace",
                                     "cluster_own_shared_race", "cluster_own_shared_norace",
                                     "syncwarp_partial_mask_race", "syncwarp_full_mask_norace",
                                     "divergence_intra_warp_race", "streams_no_event_race",
                                     "streams_event_norace", "legacy_stream_after_non_blocking_race",
                                     "legacy_stream_waits_for_blocking_norace", "host_copy_race",
                                     "host_copy_after_sync_norace", "host_copy2d_race",
                                     "host_copy2d_padding_norace",
                                     "cluster_sync_global_handoff_norace",
                                     "cluster_sync_other_cluster_race",
                                     "cluster_sync_block_barrier_only_race",
                                     "cluster_arrive_wait_handoff_norace",
                                     "cluster_arrive_relaxed_handoff_race",
                                     "cluster_write_between_arrive_and_wait_race",
                                     "named_barrier_producer_consumer_norace",
                                     "mbarrier_pipeline_norace",
                                     "mbarrier_missing_empty_wait_race",
                                     "mbarrier_block_sized_norace",
                                     "mbarrier_relaxed_arrive_race",
                                     "mbarrier_block_sized_write_after_arrive_race",
                                     "named_barrier_producer_overwrite_race",
                                     "grid_sync_phases_norace",
                                     "grid_sync_missing_second_sync_race",
                                     "dsmem_handoff_norace", "dsmem_remote_race",
                                     "dsmem_atomic_norace", "dsmem_atomic_block_scope_race"};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpu_litmus NAME | --list | --probe | --dsmem-probe\n");
        return 2;
    }
    if (!strcmp(argv[1], "--probe"))
        return wr_gpu_probe();
    if (!strcmp(argv[1], "--dsmem-probe"))
        return run_dsmem_probe();
    if (!strcmp(argv[1], "--list")) {
        for (const litmus &l : table)
            printf("%s\n", l.name);
        for (const char *o : others)
            printf("%s\n", o);
        return 0;
    }
    for (const litmus &l : table)
        if (!strcmp(l.name, argv[1]))
            return run_args_kernel(&l);
    if (!strncmp(argv[1], "host_copy", 9))
        return run_host_copy(argv[1]);
    if (!strncmp(argv[1], "cluster_sync", 12) || !strncmp(argv[1], "grid_sync", 9) ||
        !strncmp(argv[1], "cluster_arrive", 14) || !strncmp(argv[1], "cluster_write", 13))
        return run_group_barrier(argv[1]);
    if (!strncmp(argv[1], "dsmem_", 6))
        return run_dsmem(argv[1]);
    return run_other(argv[1]);
}

/*
 * gpu_overhead: five kernels shaped like real code, written with the
 * warprace device API, to measure what recording costs (run-gpu-overhead
 * runs them natively, under `warprace record`, through the Compute
 * Sanitizer path and under `compute-sanitizer --tool racecheck`).
 *
 *   gpu_overhead KERNEL [--size N] [--iters K]
 *   gpu_overhead --list | --probe
 *
 * KERNEL: compute (FMA-bound, 2 accesses per thread), coalesced (1-D
 * stencil through a shared tile), gather (ELLPACK-style gathers + scatter
 * to a permutation), atomics (global histogram, device-scope atomicAdd),
 * barriers (shared tree reductions, __syncthreads at every level).
 * N: threads (one work item each), rounded up to a multiple of 256;
 * default 16M.  K: timed launches (default 5), after one warm-up launch.
 *
 * Prints `KERNEL gpu_ms=X thread_accesses=N per_launch=M launches=L size=S`
 * and `wall_s=W`.  gpu_ms: cudaEvent time of the K timed launches.
 * thread_accesses: every thread-level load/store/atomic that goes through a
 * WR_ macro, over all L = K + 1 launches (what a trace of the run holds),
 * computed from the sizes; per_launch = thread_accesses / L.  wall_s: from
 * the start of main to the end (the caller times the whole process).
 *
 * Inputs are initialised on the device by kernels that use the plain
 * operations, so a trace holds the measured kernel's accesses only.
 *
 * Built twice: recording (default) and -DWARPRACE_RECORD=0 (the plain
 * operations: the native and racecheck baseline).  Checking build:
 * -DWARPRACE_RECORD=0 -DGPU_OVERHEAD_COUNT counts every wrapped access on
 * the device and compares the count with thread_accesses (exit 3 when they
 * differ); use a small --size, each access is an extra atomic.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "warprace/device.cuh"
#include "../gpu/gpu_probe.cuh"

#ifdef GPU_OVERHEAD_COUNT
#if WARPRACE_RECORD
#error "GPU_OVERHEAD_COUNT needs -DWARPRACE_RECORD=0"
#endif
static __device__ unsigned long long g_counted;
static __device__ __forceinline__ int count_access(void)
{
    atomicAdd(&g_counted, 1ull);
    return 0;
}
#undef WR_LOAD
#undef WR_STORE
#undef WR_ATOMIC_ADD
#define WR_LOAD(p) (count_access(), *(p))
#define WR_STORE(p, v) (count_access(), (void)(*(p) = (v)))
#define WR_ATOMIC_ADD(p, v) (count_access(), atomicAdd((p), (v)))
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "gpu_overhead: %s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

#define BLOCK 256          /* every kernel: 256-thread blocks, one work item per thread */
#define COMPUTE_REPS 4096  /* x 4 FMAs: 16384 FMAs per loaded element */
#define STENCIL_R 4        /* 9-point stencil */
#define GATHER_G 8         /* gathers per row (ELLPACK width) */
#define HIST_BINS 384
#define HIST_PER_THREAD 4
#define REDUCE_ITERS 16    /* block reductions per thread per launch */
#define LOG2_BLOCK 8

typedef unsigned long long u64;

static __device__ __forceinline__ unsigned mix(unsigned x)
{
    /* murmur3 finalizer: cheap, well-spread pseudo-random inputs */
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* ---- initialisation (plain operations: not part of the trace) ----------- */

__global__ void init_float(float *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (float)(mix((unsigned)i ^ seed) & 0xffffu) * (1.0f / 65536.0f);
}

__global__ void init_uint(unsigned *p, size_t n, unsigned range, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = range ? mix((unsigned)i ^ seed) % range : mix((unsigned)i ^ seed);
}

/* i -> (a*i + c) mod n is a bijection when gcd(a, n) = 1 */
__global__ void init_perm(unsigned *p, unsigned n, unsigned a, unsigned c)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)(((u64)a * i + c) % n);
}

/* ---- the measured kernels ------------------------------------------------ */

/* compute: per thread 1 load + 1 store */
__global__ void k_compute(const float *in, float *out, int reps)
{
    size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x;
    float x = WR_LOAD(&in[i]);
    /* four independent chains: the FMA pipes bound the loop, not the
     * latency of one chain */
    float a = x, b = x + 0.25f, c = x + 0.5f, d = x + 0.75f;
#pragma unroll 8
    for (int r = 0; r < reps; r++) {
        a = fmaf(a, 0.9999f, 0.0001f);
        b = fmaf(b, 0.9998f, 0.0002f);
        c = fmaf(c, 0.9997f, 0.0003f);
        d = fmaf(d, 0.9996f, 0.0004f);
    }
    WR_STORE(&out[i], a + b + c + d);
}

/* coalesced: per thread 1 global load + 1 shared store (own tile cell),
 * 2R+1 shared loads, 1 global store; per block 2R halo cells, each 1 global
 * load + 1 shared store */
__global__ void k_stencil(const float *in, float *out, unsigned n)
{
    __shared__ float tile[BLOCK + 2 * STENCIL_R];
    unsigned t = threadIdx.x;
    unsigned base = blockIdx.x * BLOCK;
    float v = WR_LOAD(&in[base + t]);
    WR_STORE(&tile[STENCIL_R + t], v);
    if (t < STENCIL_R) {
        /* periodic domain: the halos wrap, so every block does the same work */
        float l = WR_LOAD(&in[(base + n - STENCIL_R + t) % n]);
        WR_STORE(&tile[t], l);
        float r = WR_LOAD(&in[(base + BLOCK + t) % n]);
        WR_STORE(&tile[STENCIL_R + BLOCK + t], r);
    }
    WR_SYNCTHREADS();
    float s = 0.0f;
#pragma unroll
    for (int k = -STENCIL_R; k <= STENCIL_R; k++)
        s += WR_LOAD(&tile[STENCIL_R + t + k]) * (1.0f / (1 + (k < 0 ? -k : k)));
    WR_STORE(&out[base + t], s * 0.35f);
}

/* gather: per thread G index loads + G gathers, 1 permutation load, 1
 * scattered store.  The index array is column-major (ELLPACK), so the index
 * loads are coalesced and only the gathers are irregular. */
__global__ void k_gather(const unsigned *idx, const float *x, const unsigned *perm, float *y,
                         unsigned n)
{
    size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < GATHER_G; j++) {
        unsigned c = WR_LOAD(&idx[(size_t)j * n + i]);
        s += WR_LOAD(&x[c]);
    }
    unsigned p = WR_LOAD(&perm[i]);
    WR_STORE(&y[p], s);
}

/* atomics: per thread H x (1 load + 1 device-scope atomicAdd) */
__global__ void k_histogram(const unsigned *data, unsigned *hist, unsigned n)
{
    size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x;
#pragma unroll
    for (int j = 0; j < HIST_PER_THREAD; j++) {
        unsigned v = WR_LOAD(&data[(size_t)j * n + i]);
        WR_ATOMIC_ADD(&hist[v % HIST_BINS], 1u);
    }
}

/* barriers: per thread 1 global load + 1 global store; per block and
 * iteration B shared stores, 3(B-1) tree accesses (2 loads + 1 store per
 * active thread per level, B/2 + B/4 + ... + 1 = B-1 of them), B loads of
 * the sum; 2 + log2(B) barriers */
__global__ void k_reduce(const float *in, float *out, int iters)
{
    __shared__ float s[BLOCK];
    unsigned t = threadIdx.x;
    size_t i = blockIdx.x * (size_t)BLOCK + t;
    float v = WR_LOAD(&in[i]);
    for (int it = 0; it < iters; it++) {
        WR_STORE(&s[t], v);
        WR_SYNCTHREADS();
        for (unsigned stride = BLOCK / 2; stride > 0; stride >>= 1) {
            if (t < stride) {
                float a = WR_LOAD(&s[t]);
                float b = WR_LOAD(&s[t + stride]);
                WR_STORE(&s[t], a + b);
            }
            WR_SYNCTHREADS();
        }
        /* every thread uses the block's sum (an iterative solver's dot
         * product); the barrier after it keeps the next iteration's stores
         * from overwriting s[0] before everyone has read it */
        v = 0.5f * v + WR_LOAD(&s[0]) * (0.5f / BLOCK);
        WR_SYNCTHREADS();
    }
    WR_STORE(&out[i], v);
}

/* ---- host ----------------------------------------------------------------- */

static const char *const kernels[] = {"compute", "coalesced", "gather", "atomics", "barriers"};
#define NKERNELS (int)(sizeof kernels / sizeof kernels[0])

/* thread-level wrapped accesses of one launch over n threads (the per-kernel
 * comments above) */
static u64 accesses_per_launch(int k, u64 n)
{
    u64 blocks = n / BLOCK;
    switch (k) {
    case 0: return 2 * n;
    case 1: return n * (2 * STENCIL_R + 4) + blocks * 4 * STENCIL_R;
    case 2: return n * (2 * GATHER_G + 2);
    case 3: return n * 2 * HIST_PER_THREAD;
    default: return blocks * (2 * BLOCK + (u64)REDUCE_ITERS * (5 * BLOCK - 3));
    }
}

static float *dev_floats(const char *name, size_t n, unsigned seed)
{
    float *p;
    warprace_name_next_alloc(name);
    CK(cudaMalloc(&p, n * sizeof *p));
    init_float<<<1024, BLOCK>>>(p, n, seed);
    CK(cudaGetLastError());
    return p;
}

static unsigned *dev_uints(const char *name, size_t n, unsigned range, unsigned seed)
{
    unsigned *p;
    warprace_name_next_alloc(name);
    CK(cudaMalloc(&p, n * sizeof *p));
    init_uint<<<1024, BLOCK>>>(p, n, range, seed);
    CK(cudaGetLastError());
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_size(const char *s, u64 *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: gpu_overhead KERNEL [--size N] [--iters K] | --list | --probe\n"
                    "KERNEL: compute coalesced gather atomics barriers; N threads (K, M "
                    "suffixes; default 16M), K timed launches (default 5)\n");
}

int main(int argc, char **argv)
{
    double t0 = now_s();
    if (argc < 2) {
        usage();
        return 2;
    }
    if (!strcmp(argv[1], "--probe"))
        return wr_gpu_probe();
    if (!strcmp(argv[1], "--list")) {
        for (int k = 0; k < NKERNELS; k++)
            printf("%s\n", kernels[k]);
        return 0;
    }
    int k = 0;
    while (k < NKERNELS && strcmp(argv[1], kernels[k]))
        k++;
    if (k == NKERNELS) {
        fprintf(stderr, "gpu_overhead: no kernel '%s' (try --list)\n", argv[1]);
        return 2;
    }
    u64 n = 16u << 20;
    u64 iters = 5;
    for (int a = 2; a < argc; a++) {
        if (a + 1 < argc && !strcmp(argv[a], "--size") && !parse_size(argv[a + 1], &n))
            a++;
        else if (a + 1 < argc && !strcmp(argv[a], "--iters") && !parse_size(argv[a + 1], &iters))
            a++;
        else {
            usage();
            return 2;
        }
    }
    /* 2^28 threads keeps every index (and j*n + i, j < 8) in 32 bits */
    if (n < 1 || n > (1u << 28) || iters < 1 || iters > 100000) {
        fprintf(stderr, "gpu_overhead: --size must be 1..268435456, --iters 1..100000\n");
        return 2;
    }
    n = (n + BLOCK - 1) / BLOCK * BLOCK;
    unsigned nu = (unsigned)n, blocks = (unsigned)(n / BLOCK);

    float *fa = 0, *fb = 0, *x = 0, *y = 0;
    unsigned *idx = 0, *perm = 0, *data = 0, *hist = 0;
    switch (k) {
    case 0:
    case 1:
    case 4:
        fa = dev_floats("in", n, 1);
        fb = dev_floats("out", n, 2);
        break;
    case 2: {
        idx = dev_uints("idx", n * GATHER_G, nu, 3);
        x = dev_floats("x", n, 4);
        y = dev_floats("y", n, 5);
        /* an odd prime that does not divide n: (a*i + c) mod n permutes */
        static const unsigned primes[] = {1000003u, 999983u, 15485863u};
        unsigned a = primes[0];
        for (unsigned p : primes)
            if (n % p) {
                a = p;
                break;
            }
        warprace_name_next_alloc("perm");
        CK(cudaMalloc(&perm, n * sizeof *perm));
        init_perm<<<1024, BLOCK>>>(perm, nu, a, nu / 3);
        CK(cudaGetLastError());
        break;
    }
    case 3:
        data = dev_uints("data", n * HIST_PER_THREAD, 0, 6);
        warprace_name_next_alloc("hist");
        CK(cudaMalloc(&hist, HIST_BINS * sizeof *hist));
        CK(cudaMemset(hist, 0, HIST_BINS * sizeof *hist));
        break;
    }
    CK(cudaDeviceSynchronize());

    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    for (u64 l = 0; l <= iters; l++) {
        if (l == 1) {
            /* `warprace record --nvtx timed` records the timed launches only */
            nvtxRangePushA("timed");
            CK(cudaEventRecord(start));
        }
        switch (k) {
        case 0:
            k_compute<<<blocks, BLOCK>>>(fa, fb, COMPUTE_REPS);
            break;
        case 1:
            /* Jacobi-style sweeps: each launch reads the previous one's output */
            if (l & 1)
                k_stencil<<<blocks, BLOCK>>>(fb, fa, nu);
            else
                k_stencil<<<blocks, BLOCK>>>(fa, fb, nu);
            break;
        case 2:
            k_gather<<<blocks, BLOCK>>>(idx, x, perm, y, nu);
            break;
        case 3:
            k_histogram<<<blocks, BLOCK>>>(data, hist, nu);
            break;
        case 4:
            k_reduce<<<blocks, BLOCK>>>(fa, fb, REDUCE_ITERS);
            break;
        }
        CK(cudaGetLastError());
        if (l == 0)
            CK(cudaDeviceSynchronize()); /* warm-up: module load, caches, clocks */
    }
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    nvtxRangePop();
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, start, stop));

    int rc = 0;
    if (k == 3) {
        /* every element counted once per launch (mod 2^32, like the bins) */
        unsigned h[HIST_BINS], sum = 0;
        CK(cudaMemcpy(h, hist, sizeof h, cudaMemcpyDeviceToHost));
        for (int b = 0; b < HIST_BINS; b++)
            sum += h[b];
        unsigned want = (unsigned)(n * HIST_PER_THREAD * (iters + 1));
        if (sum != want) {
            fprintf(stderr, "gpu_overhead: histogram holds %u counts, expected %u\n", sum, want);
            rc = 3;
        }
    }
    u64 per = accesses_per_launch(k, n);
    printf("%s gpu_ms=%.3f thread_accesses=%llu per_launch=%llu launches=%llu size=%llu\n",
           kernels[k], ms, per * (iters + 1), per, iters + 1, n);
#ifdef GPU_OVERHEAD_COUNT
    u64 counted = 0;
    CK(cudaMemcpyFromSymbol(&counted, g_counted, sizeof counted));
    printf("counted=%llu %s\n", counted, counted == per * (iters + 1) ? "ok" : "MISMATCH");
    if (counted != per * (iters + 1))
        rc = 3;
#endif
    cudaFree(fa);
    cudaFree(fb);
    cudaFree(x);
    cudaFree(y);
    cudaFree(idx);
    cudaFree(perm);
    cudaFree(data);
    cudaFree(hist);
    printf("wall_s=%.3f\n", now_s() - t0);
    return rc;
}

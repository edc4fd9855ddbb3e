/* `--probe` of the GPU test and benchmark programs: exit status 0 when a
 * CUDA device the recorder supports (sm_70+, a context can be created) is
 * usable, printing its name; else 1, printing why (the runners skip with
 * that reason). */
#ifndef WARPRACE_TESTS_GPU_PROBE_CUH
#define WARPRACE_TESTS_GPU_PROBE_CUH

#include <cuda_runtime.h>
#include <stdio.h>

/* In main(): a failed CUDA call names its file and line and returns 1. */
#define CUDA_CHECK(x)                                                                \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static int wr_gpu_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return 1;
    }
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    if (e == cudaSuccess)
        e = cudaFree(0); /* a context can actually be created */
    if (e != cudaSuccess) {
        printf("CUDA device 0 unusable: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("%s (sm_%d%d)\n", p.name, p.major, p.minor);
    if (p.major < 7) {
        printf("sm_%d%d: the recorder needs sm_70 or newer\n", p.major, p.minor);
        return 1;
    }
    return 0;
}

#endif

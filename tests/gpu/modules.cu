/*
 * warprace_modules: two translation units (two modules, loaded lazily by
 * CUDA 12+), a __device__ table written with cudaMemcpyToSymbol, and, with
 * `race`, a cudaMemcpyToSymbolAsync on another stream while a kernel reads
 * the table.  What the recorders had never run on a GPU: copies to a
 * symbol through the driver's copy entry points, and module loads of more
 * than one module.
 *
 *   warprace_modules norace   the copy, then fill (modules_b.cu) and read:
 *                             no race (every engine)
 *   warprace_modules race     the same, then a read of the table on stream
 *                             s1 while s2 copies into it: a race on the
 *                             table (host copy vs kernel read)
 *
 * Built with the device API (warprace_modules) and without it
 * (warprace_modules_plain); scripts/gpu-session modules records both.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "warprace/device.cuh"
#include "gpu_probe.cuh"

__device__ int g_table[64];

__global__ void read_table(int *out)
{
    unsigned t = threadIdx.x;
    out[t] = WR_LOAD(&g_table[t]);
}

void launch_fill(int *data, cudaStream_t s);   /* modules_b.cu */

int main(int argc, char **argv)
{
    int race = argc == 2 && !strcmp(argv[1], "race");
    if (argc != 2 || (!race && strcmp(argv[1], "norace"))) {
        fprintf(stderr, "usage: warprace_modules norace|race\n");
        return 2;
    }
    int host[64], *data, *out;
    for (int i = 0; i < 64; i++)
        host[i] = i;
    CUDA_CHECK(cudaMalloc(&data, sizeof host));
    CUDA_CHECK(cudaMalloc(&out, sizeof host));
    CUDA_CHECK(cudaMemcpyToSymbol(g_table, host, sizeof host));
    launch_fill(data, 0);
    read_table<<<1, 64>>>(out);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    if (race) {
        cudaStream_t s1, s2;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        read_table<<<1, 64, 0, s1>>>(out);
        CUDA_CHECK(cudaMemcpyToSymbolAsync(g_table, host, sizeof host, 0, cudaMemcpyHostToDevice, s2));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaFree(data));
    CUDA_CHECK(cudaFree(out));
    return 0;
}

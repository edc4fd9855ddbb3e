/*
 * warprace_demo: the three bugs of traces/demo.txt as a real CUDA program
 * written with the device API, recorded on a GPU into traces/gpu/demo.wrt
 * (what the README's main command analyzes):
 *
 *   block_reduce  a block reduction whose warp-synchronous tail has no
 *                 __syncwarp(): lanes 0-15 read sh[16..31], which lanes
 *                 16-31 of the same warp stored in the instruction before
 *                 (Volta+ independent thread scheduling makes that a race)
 *   histogram     atomicAdd_block on global bins from two blocks: block
 *                 scope does not hold both blocks
 *   d2h copy      cudaMemcpyAsync of the bins on another stream while the
 *                 histogram runs, with no event between them
 *
 * Allocations are named as in the text form (in, partial, hist; the shared
 * array sh), so that the expectations of traces/demo.txt apply.
 *
 *   warprace record -o demo.wrt -- build/tests/gpu/warprace_demo
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "warprace/device.cuh"
#include "gpu_probe.cuh"

__global__ void block_reduce(const float *in, float *partial)
{
    __shared__ float sh[64];
    unsigned t = threadIdx.x;
    WR_STORE(&sh[t], WR_LOAD(&in[t]));
    WR_SYNCTHREADS();
    if (t < 32)
        WR_STORE(&sh[t], WR_LOAD(&sh[t]) + WR_LOAD(&sh[t + 32]));
    /* the warp-synchronous tail, missing __syncwarp() before it */
    if (t < 16)
        WR_STORE(&sh[t], WR_LOAD(&sh[t]) + WR_LOAD(&sh[t + 16]));
    if (t == 0)
        WR_STORE(&partial[blockIdx.x], WR_LOAD(&sh[0]));
}

__global__ void histogram(const float *in, unsigned *hist)
{
    unsigned t = threadIdx.x;
    float v = WR_LOAD(&in[blockIdx.x * 32 + t]);
    /* bins 1, 3, 5, 7 from lanes 0-3 of both blocks */
    if (t < 4 && v >= 0.0f)
        WR_ATOMIC_ADD_BLOCK(&hist[2 * (t ^ blockIdx.x) + 1], 1u);
}

int main(void)
{
    float host_in[64];
    for (int i = 0; i < 64; i++)
        host_in[i] = (float)i;
    float *in, *partial;
    unsigned *hist, *host_hist;
    warprace_name_next_alloc("in");
    CUDA_CHECK(cudaMalloc(&in, sizeof host_in));
    warprace_name_next_alloc("partial");
    CUDA_CHECK(cudaMalloc(&partial, 2 * sizeof(float)));
    warprace_name_next_alloc("hist");
    CUDA_CHECK(cudaMalloc(&hist, 8 * sizeof(unsigned)));
    CUDA_CHECK(cudaMallocHost(&host_hist, 8 * sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(hist, 0, 8 * sizeof(unsigned)));
    CUDA_CHECK(cudaMemcpy(in, host_in, sizeof host_in, cudaMemcpyHostToDevice));

    block_reduce<<<2, 64>>>(in, partial);
    CUDA_CHECK(cudaGetLastError());

    cudaStream_t s1, s2;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    histogram<<<2, 32, 0, s1>>>(in, hist);
    CUDA_CHECK(cudaGetLastError());
    /* the bug: no cudaEventRecord(ev, s1) / cudaStreamWaitEvent(s2, ev) */
    CUDA_CHECK(cudaMemcpyAsync(host_hist, hist, 8 * sizeof(unsigned), cudaMemcpyDeviceToHost, s2));
    CUDA_CHECK(cudaDeviceSynchronize());

    float host_partial[2];
    CUDA_CHECK(cudaMemcpy(host_partial, partial, sizeof host_partial, cudaMemcpyDeviceToHost));
    printf("partial sums %.0f %.0f, bins %u %u %u %u\n", host_partial[0], host_partial[1],
           host_hist[1], host_hist[3], host_hist[5], host_hist[7]);
    CUDA_CHECK(cudaStreamDestroy(s1));
    CUDA_CHECK(cudaStreamDestroy(s2));
    CUDA_CHECK(cudaFreeHost(host_hist));
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(partial));
    CUDA_CHECK(cudaFree(hist));
    return 0;
}

/* The second translation unit of warprace_modules (modules.cu): its own
 * module, loaded when its kernel first launches. */
#include <cuda_runtime.h>

#include "warprace/device.cuh"

__global__ void fill(int *data)
{
    unsigned t = threadIdx.x;
    WR_STORE(&data[t], (int)t);
}

void launch_fill(int *data, cudaStream_t s)
{
    fill<<<1, 64, 0, s>>>(data);
}

/*
 * libwarprace_inject.so: loaded into the recorded program by the CUDA
 * driver (CUDA_INJECTION64_PATH -> InitializeInjection) or by LD_PRELOAD
 * (constructor).  Subscribes to CUPTI callbacks and forwards what they
 * report to the host runtime (host_runtime.c):
 *  - driver API launches (cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz],
 *    cuLaunchCooperativeKernel[_ptsz]; the runtime's launches end there):
 *    name, grid, block, cluster, shared memory, stream;
 *  - runtime API allocations (cudaMalloc, cudaMallocManaged, cudaMallocAsync)
 *    and frees, copies and memsets (host reads/writes of device memory:
 *    1D, pitched 2D/3D, peer, to/from a symbol), event record / stream
 *    wait / event synchronize, stream and device synchronize;
 *  - driver API copies and memsets (1D) that no runtime call wraps, and
 *    those a symbol copy makes (the only place its device address shows);
 *  - NVTX push/pop (for --nvtx; needs NVTX_INJECTION64_PATH=libcupti.so,
 *    which `warprace record --nvtx` sets).
 * Nothing here runs without a GPU; RECORDER.md lists what is unverified.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_runtime.h"
#include "warprace/event.h"

/* from generated_nvtx_meta.h, which needs the NVTX headers */
typedef struct { const char *message; } wrr_nvtxRangePushA_params;

static CUpti_SubscriberHandle subscriber;
static int initialized;

static unsigned copy_kind(enum cudaMemcpyKind k, const void *dst, const void *src)
{
    switch (k) {
    case cudaMemcpyHostToDevice: return WR_COPY_H2D;
    case cudaMemcpyDeviceToHost: return WR_COPY_D2H;
    case cudaMemcpyDeviceToDevice: return WR_COPY_D2D;
    default: {
        /* cudaMemcpyDefault / HostToHost: ask the driver where each side is */
        unsigned ds = 0, ss = 0;
        CUmemorytype t;
        if (dst && cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         (CUdeviceptr)(uintptr_t)dst) == CUDA_SUCCESS)
            ds = t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
        if (src && cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         (CUdeviceptr)(uintptr_t)src) == CUDA_SUCCESS)
            ss = t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
        if (ds && ss)
            return WR_COPY_D2D;
        if (ss)
            return WR_COPY_D2H;
        return WR_COPY_H2D;
    }
    }
}

static void on_copy(const void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                    cudaStream_t stream, int async)
{
    unsigned k = copy_kind(kind, dst, src);
    uint64_t d = k == WR_COPY_D2H ? 0 : (uint64_t)(uintptr_t)dst;
    uint64_t s = k == WR_COPY_H2D ? 0 : (uint64_t)(uintptr_t)src;
    wrr_rt_copy(d, s, count, k, (CUstream)stream, async);
}

/* A pitched copy: rows of `width` bytes at each side's pitch, planes at
 * pitch * rows (cudaMemcpy2D/3D). */
static void on_copy_region(void *dst, size_t dpitch, size_t dslice, const void *src,
                           size_t spitch, size_t sslice, size_t width, size_t height,
                           size_t depth, enum cudaMemcpyKind kind, cudaStream_t stream, int async)
{
    unsigned k = copy_kind(kind, dst, src);
    wrr_copy_side d = {k == WR_COPY_D2H ? 0 : (uint64_t)(uintptr_t)dst, dpitch, dslice};
    wrr_copy_side s = {k == WR_COPY_H2D ? 0 : (uint64_t)(uintptr_t)src, spitch, sslice};
    wrr_rt_copy_region(d, s, width, height, depth, k, (CUstream)stream, async);
}

static void on_memset_region(void *dst, size_t pitch, size_t slice, size_t width, size_t height,
                             size_t depth, cudaStream_t stream, int async)
{
    wrr_copy_side d = {(uint64_t)(uintptr_t)dst, pitch, slice}, none = {0, 0, 0};
    wrr_rt_copy_region(d, none, width, height, depth, WR_COPY_MEMSET, (CUstream)stream, async);
}

/* cudaMemcpy3D between linear memory (cudaPitchedPtr on both sides); a
 * CUDA array side is not device memory that kernels address (they reach
 * it through textures and surfaces, which are not recorded either). */
static void on_copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, int async)
{
    if (!p || p->srcArray || p->dstArray)
        return;
    const struct cudaPitchedPtr *sp = &p->srcPtr, *dp = &p->dstPtr;
    char *dst = (char *)dp->ptr + p->dstPos.z * dp->pitch * dp->ysize +
                p->dstPos.y * dp->pitch + p->dstPos.x;
    const char *src = (const char *)sp->ptr + p->srcPos.z * sp->pitch * sp->ysize +
                      p->srcPos.y * sp->pitch + p->srcPos.x;
    on_copy_region(dst, dp->pitch, dp->pitch * dp->ysize, src, sp->pitch, sp->pitch * sp->ysize,
                   p->extent.width, p->extent.height, p->extent.depth, p->kind, stream, async);
}

static void on_memset_3d(struct cudaPitchedPtr p, struct cudaExtent e, cudaStream_t stream,
                         int async)
{
    on_memset_region(p.ptr, p.pitch, p.pitch * p.ysize, e.width, e.height, e.depth, stream, async);
}

/* Runtime API calls in progress on this thread (the driver calls the
 * runtime makes for them are not recorded twice), and whether one of them
 * is a symbol copy, whose device address only its driver copy shows. */
static __thread int rt_depth;
static __thread int symbol_copy_open, symbol_copy_seen;

/* Driver-API copies and memsets: the program's own (no runtime call
 * around them) and those a cudaMemcpyToSymbol/FromSymbol makes. */
static void on_driver_copy(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    if (cb->callbackSite != CUPTI_API_ENTER || (rt_depth && !symbol_copy_open))
        return;
    const void *p = cb->functionParams;
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: {
        const cuMemcpyHtoD_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, a->ByteCount, WR_COPY_H2D, NULL, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
        const cuMemcpyHtoDAsync_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, a->ByteCount, WR_COPY_H2D, a->hStream, 1);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
        const cuMemcpyDtoH_v2_params *a = p;
        wrr_rt_copy(0, a->srcDevice, a->ByteCount, WR_COPY_D2H, NULL, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
        const cuMemcpyDtoHAsync_v2_params *a = p;
        wrr_rt_copy(0, a->srcDevice, a->ByteCount, WR_COPY_D2H, a->hStream, 1);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: {
        const cuMemcpyDtoD_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, a->srcDevice, a->ByteCount, WR_COPY_D2D, NULL, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
        const cuMemcpyDtoDAsync_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, a->srcDevice, a->ByteCount, WR_COPY_D2D, a->hStream, 1);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
        const cuMemcpy_params *a = p;
        on_copy((void *)(uintptr_t)a->dst, (const void *)(uintptr_t)a->src, a->ByteCount,
                cudaMemcpyDefault, 0, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
        const cuMemcpyAsync_params *a = p;
        on_copy((void *)(uintptr_t)a->dst, (const void *)(uintptr_t)a->src, a->ByteCount,
                cudaMemcpyDefault, (cudaStream_t)a->hStream, 1);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: {
        const cuMemsetD8_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, a->N, WR_COPY_MEMSET, NULL, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
        const cuMemsetD32_v2_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, 4 * (uint64_t)a->N, WR_COPY_MEMSET, NULL, 0);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
        const cuMemsetD8Async_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, a->N, WR_COPY_MEMSET, a->hStream, 1);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
        const cuMemsetD32Async_params *a = p;
        wrr_rt_copy(a->dstDevice, 0, 4 * (uint64_t)a->N, WR_COPY_MEMSET, a->hStream, 1);
        break;
    }
    default:
        return;
    }
    symbol_copy_seen = 1;
}

static const CUpti_CallbackId driver_copies[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz};

/* cudaMemcpyToSymbol / FromSymbol: recorded through the driver copy they
 * make (above); one that made none it could see is counted. */
static void on_symbol_copy(int exit)
{
    if (!exit) {
        symbol_copy_open = 1;
        symbol_copy_seen = 0;
        return;
    }
    if (!symbol_copy_seen)
        wrr_rt_copy_unrecorded("cudaMemcpyToSymbol/FromSymbol made no driver copy the recorder saw");
    symbol_copy_open = 0;
}

static void on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    const void *p = cb->functionParams;
    int exit = cb->callbackSite == CUPTI_API_EXIT;
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
        if (exit && *(cudaError_t *)cb->functionReturnValue == cudaSuccess) {
            const cudaMalloc_v3020_params *a = p;
            wrr_rt_alloc((uint64_t)(uintptr_t)*a->devPtr, a->size, "cudaMalloc");
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
        if (exit && *(cudaError_t *)cb->functionReturnValue == cudaSuccess) {
            const cudaMallocManaged_v6000_params *a = p;
            wrr_rt_alloc((uint64_t)(uintptr_t)*a->devPtr, a->size, "cudaMallocManaged");
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
        if (exit && *(cudaError_t *)cb->functionReturnValue == cudaSuccess) {
            const cudaMallocAsync_v11020_params *a = p;
            wrr_rt_alloc((uint64_t)(uintptr_t)*a->devPtr, a->size, "cudaMallocAsync");
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
        if (!exit)
            wrr_rt_free((uint64_t)(uintptr_t)((const cudaFree_v3020_params *)p)->devPtr);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
        if (!exit)
            wrr_rt_free((uint64_t)(uintptr_t)((const cudaFreeAsync_v11020_params *)p)->devPtr);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
        if (!exit) {
            const cudaMemcpy_v3020_params *a = p;
            on_copy(a->dst, a->src, a->count, a->kind, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemcpyAsync_v3020_params *a = p;
            on_copy(a->dst, a->src, a->count, a->kind, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
        if (!exit) {
            const cudaMemset_v3020_params *a = p;
            wrr_rt_copy((uint64_t)(uintptr_t)a->devPtr, 0, a->count, WR_COPY_MEMSET, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemsetAsync_v3020_params *a = p;
            wrr_rt_copy((uint64_t)(uintptr_t)a->devPtr, 0, a->count, WR_COPY_MEMSET,
                        (CUstream)a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000:
        if (!exit) {
            const cudaMemcpy2D_v3020_params *a = p;
            on_copy_region(a->dst, a->dpitch, 0, a->src, a->spitch, 0, a->width, a->height, 1,
                           a->kind, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemcpy2DAsync_v3020_params *a = p;
            on_copy_region(a->dst, a->dpitch, 0, a->src, a->spitch, 0, a->width, a->height, 1,
                           a->kind, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000:
        if (!exit)
            on_copy_3d(((const cudaMemcpy3D_v3020_params *)p)->p, 0, 0);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemcpy3DAsync_v3020_params *a = p;
            on_copy_3d(a->p, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
        if (!exit) {
            const cudaMemcpyPeer_v4000_params *a = p;
            on_copy(a->dst, a->src, a->count, cudaMemcpyDeviceToDevice, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
        if (!exit) {
            const cudaMemcpyPeerAsync_v4000_params *a = p;
            on_copy(a->dst, a->src, a->count, cudaMemcpyDeviceToDevice, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000:
        on_symbol_copy(exit);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000:
        if (!exit) {
            const cudaMemset2D_v3020_params *a = p;
            on_memset_region(a->devPtr, a->pitch, 0, a->width, a->height, 1, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemset2DAsync_v3020_params *a = p;
            on_memset_region(a->devPtr, a->pitch, 0, a->width, a->height, 1, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000:
        if (!exit) {
            const cudaMemset3D_v3020_params *a = p;
            on_memset_3d(a->pitchedDevPtr, a->extent, 0, 0);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000:
        if (!exit) {
            const cudaMemset3DAsync_v3020_params *a = p;
            on_memset_3d(a->pitchedDevPtr, a->extent, a->stream, 1);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000:
        if (!exit) {
            const cudaEventRecord_v3020_params *a = p;
            wrr_rt_event_record(a->event, (CUstream)a->stream);
        }
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
        if (!exit) {
            const cudaStreamWaitEvent_v3020_params *a = p;
            wrr_rt_stream_wait((CUstream)a->stream, a->event);
        }
        break;
    /* waits: the host-side ordering takes effect when the wait returns */
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        if (exit)
            wrr_rt_event_sync(((const cudaEventSynchronize_v3020_params *)p)->event);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
        if (exit)
            wrr_rt_stream_sync((CUstream)((const cudaStreamSynchronize_v3020_params *)p)->stream);
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
        if (exit)
            wrr_rt_device_sync();
        break;
    default:
        break;
    }
}

static void on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    unsigned grid[3], block[3], cluster[3] = {1, 1, 1}, shared = 0;
    CUfunction f = NULL;
    CUstream stream = NULL;
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        /* the cooperative launch's parameters have the same layout */
        const cuLaunchKernel_params *a = cb->functionParams;
        f = a->f;
        grid[0] = a->gridDimX, grid[1] = a->gridDimY, grid[2] = a->gridDimZ;
        block[0] = a->blockDimX, block[1] = a->blockDimY, block[2] = a->blockDimZ;
        shared = a->sharedMemBytes;
        stream = a->hStream;
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const cuLaunchKernelEx_params *a = cb->functionParams;
        const CUlaunchConfig *c = a->config;
        f = a->f;
        grid[0] = c->gridDimX, grid[1] = c->gridDimY, grid[2] = c->gridDimZ;
        block[0] = c->blockDimX, block[1] = c->blockDimY, block[2] = c->blockDimZ;
        shared = c->sharedMemBytes;
        stream = c->hStream;
        for (unsigned i = 0; i < c->numAttrs; i++)
            if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
                cluster[0] = c->attrs[i].value.clusterDim.x;
                cluster[1] = c->attrs[i].value.clusterDim.y;
                cluster[2] = c->attrs[i].value.clusterDim.z;
            }
        break;
    }
    default:
        return;
    }
    if (cb->callbackSite == CUPTI_API_ENTER)
        wrr_rt_launch_begin(f, cb->symbolName, grid, block, cluster, shared, stream);
    else
        wrr_rt_launch_end(stream);
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *data)
{
    (void)userdata;
    if (wrr_rt_internal)
        return;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        const char *fn = ((const CUpti_CallbackData *)data)->functionName;
        size_t n = fn ? strlen(fn) : 0;
        wrr_rt_per_thread_default =
            n > 5 && (!strcmp(fn + n - 5, "_ptsz") || !strcmp(fn + n - 5, "_ptds"));
    }
    switch (domain) {
    case CUPTI_CB_DOMAIN_DRIVER_API:
        on_launch(cbid, data);
        on_driver_copy(cbid, data);
        if ((cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) &&
            ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
            wrr_rt_graph_launch(((const cuGraphLaunch_params *)((const CUpti_CallbackData *)data)
                                     ->functionParams)->hStream);
        break;
    case CUPTI_CB_DOMAIN_RUNTIME_API: {
        const CUpti_CallbackData *cb = data;
        if (cb->callbackSite == CUPTI_API_ENTER)
            rt_depth++;
        on_runtime(cbid, cb);
        if (cb->callbackSite == CUPTI_API_EXIT && rt_depth > 0)
            rt_depth--;
        break;
    }
    case CUPTI_CB_DOMAIN_NVTX: {
        const CUpti_NvtxData *nv = data;
        if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA)
            wrr_rt_nvtx_push(((const wrr_nvtxRangePushA_params *)nv->functionParams)->message);
        else if (cbid == CUPTI_CBID_NVTX_nvtxRangePop)
            wrr_rt_nvtx_pop();
        break;
    }
    default:
        break;
    }
}

static void at_exit(void)
{
    wrr_rt_shutdown();
}

static int setup(void)
{
    if (initialized)
        return 0;
    initialized = 1;
    if (wrr_rt_configure() != 0)
        return 0;             /* no WARPRACE_OUT: stay out of the way */
    if (cuptiSubscribe(&subscriber, callback, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "warprace: cannot subscribe to CUPTI callbacks (another tool "
                        "holds the subscription?); not recording\n");
        return 1;
    }
    const CUpti_CallbackId launches[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
    for (size_t i = 0; i < sizeof driver_copies / sizeof driver_copies[0]; i++)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_copies[i]);
    cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
    atexit(at_exit);
    return 0;
}

/* CUDA_INJECTION64_PATH entry point */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    return setup() == 0;
}

/* LD_PRELOAD path */
__attribute__((constructor)) static void wrr_preload_init(void)
{
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "warprace_inject"))
        setup();
}

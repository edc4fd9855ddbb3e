/*
 * libwarprace_inject.so: loaded into the recorded program by the CUDA
 * driver (CUDA_INJECTION64_PATH -> InitializeInjection) or by LD_PRELOAD
 * (constructor).  Subscribes to CUPTI callbacks and forwards what they
 * report to the host runtime (host_runtime.c):
 *  - driver API launches (cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz],
 *    cuLaunchCooperativeKernel[_ptsz]; the runtime's launches end there):
 *    name, grid, block, cluster, shared memory, stream;
 *  - runtime API allocations (cudaMalloc, cudaMallocManaged, cudaMallocAsync)
 *    and frees, copies and memsets (host reads/writes of device memory),
 *    event record / stream wait / event synchronize, stream and device
 *    synchronize;
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
    switch (domain) {
    case CUPTI_CB_DOMAIN_DRIVER_API:
        on_launch(cbid, data);
        break;
    case CUPTI_CB_DOMAIN_RUNTIME_API:
        on_runtime(cbid, data);
        break;
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
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
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

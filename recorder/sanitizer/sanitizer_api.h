/*
 * The part of the Compute Sanitizer public API this recorder uses.
 *
 * WRS_HAVE_SANITIZER_H (set by meson when the toolkit's
 * compute-sanitizer/include/sanitizer.h is found): the real headers are
 * included and nothing below is declared.
 *
 * Otherwise (a toolkit without the compute-sanitizer directory, like the
 * machine this was written on): the types, enums and prototypes below are
 * DECLARED HERE from NVIDIA's public documentation (Compute Sanitizer API
 * Reference Manual: Callback, Patching and Memory APIs) and the public
 * header text of sanitizer_callbacks.h.  Enum values follow the documented
 * order (the headers number them 0, 1, 2 ... in that order; flags are
 * powers of two).  The library built against these declarations is for
 * compile checks only: the injection library refuses to record unless it
 * was built against the real headers (WRS_API_VERIFIED), because a struct
 * layout that differs from the driver's would be read silently wrong.
 * tests/sanitizer/test_api_values.c compares every value below with the
 * real header where it exists.
 *
 * Host code includes this file; device code (patches.cu) defines
 * WRS_DEVICE_SIDE first and gets only the patch-callback types.
 */
#ifndef WARPRACE_SANITIZER_API_H
#define WARPRACE_SANITIZER_API_H

#include <stddef.h>
#include <stdint.h>

/* Our own names for the values we depend on (checked against the real
 * header by test_api_values.c). */
#define WRS_SAN_SUCCESS 0
#define WRS_SAN_PATCH_SUCCESS 0
#define WRS_SAN_MEM_FLAG_READ 0x1u
#define WRS_SAN_MEM_FLAG_WRITE 0x2u
#define WRS_SAN_MEM_FLAG_ATOMSYS 0x4u
#define WRS_SAN_MEM_FLAG_PREFETCH 0x8u
/* mbarriers: the CUDA barrier patch points and their action kinds, as the
 * H200's compute-sanitizer 2025.3.1 sanitizer_patching.h declares them
 * (Sanitizer_CudaBarrierInstructionKind; the attempt point is newer than
 * some headers, so it goes by its value) */
#define WRS_SAN_INSTRUCTION_CUDA_BARRIER 13
#define WRS_SAN_INSTRUCTION_CUDA_BARRIER_ATTEMPT 39
#define WRS_SAN_CUDA_BARRIER_INIT 1u
#define WRS_SAN_CUDA_BARRIER_ARRIVE 2u
#define WRS_SAN_CUDA_BARRIER_ARRIVE_DROP 3u
#define WRS_SAN_CUDA_BARRIER_ARRIVE_NOCOMPLETE 4u
#define WRS_SAN_CUDA_BARRIER_ARRIVE_DROP_NOCOMPLETE 5u
#define WRS_SAN_CUDA_BARRIER_WAIT 6u

#if defined(WRS_HAVE_SANITIZER_H) && WRS_HAVE_SANITIZER_H
#ifdef WRS_DEVICE_SIDE
#include <sanitizer_patching.h>
#else
#include <sanitizer.h>
#endif
#define WRS_API_VERIFIED 1
/* set by meson: does this sanitizer.h declare the cluster barrier patch
 * points (newer than some toolkits)? */
#ifndef WRS_HAVE_CLUSTER_BARRIER_CB
#define WRS_HAVE_CLUSTER_BARRIER_CB 0
#endif
#else /* ---- declared from the documentation ---------------------------------- */
#define WRS_API_VERIFIED 0
#undef WRS_HAVE_CLUSTER_BARRIER_CB
#define WRS_HAVE_CLUSTER_BARRIER_CB 1     /* declared below */

#ifndef SANITIZERAPI
#define SANITIZERAPI
#endif

typedef enum {
    SANITIZER_PATCH_SUCCESS = 0,
    SANITIZER_PATCH_ERROR = 1,
    SANITIZER_PATCH_FORCE_INT = 0x7fffffff
} SanitizerPatchResult;

typedef enum {
    SANITIZER_MEMORY_DEVICE_FLAG_NONE = 0,
    SANITIZER_MEMORY_DEVICE_FLAG_READ = 0x1,
    SANITIZER_MEMORY_DEVICE_FLAG_WRITE = 0x2,
    SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS = 0x4,
    SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH = 0x8,
    SANITIZER_MEMORY_DEVICE_FLAG_FORCE_INT = 0x7fffffff
} Sanitizer_DeviceMemoryFlags;

#ifndef WRS_DEVICE_SIDE
#include <cuda.h>

typedef enum {
    SANITIZER_SUCCESS = 0,
    SANITIZER_RESULT_FORCE_INT = 0x7fffffff
} SanitizerResult;

typedef struct Sanitizer_Subscriber_st *Sanitizer_SubscriberHandle;
typedef struct Sanitizer_Stream_st *Sanitizer_StreamHandle;
typedef struct Sanitizer_Launch_st *Sanitizer_LaunchHandle;
typedef uint32_t Sanitizer_CallbackId;

typedef enum {
    SANITIZER_CB_DOMAIN_INVALID = 0,
    SANITIZER_CB_DOMAIN_DRIVER_API = 1,
    SANITIZER_CB_DOMAIN_RUNTIME_API = 2,
    SANITIZER_CB_DOMAIN_RESOURCE = 3,
    SANITIZER_CB_DOMAIN_SYNCHRONIZE = 4,
    SANITIZER_CB_DOMAIN_LAUNCH = 5,
    SANITIZER_CB_DOMAIN_MEMCPY = 6,
    SANITIZER_CB_DOMAIN_MEMSET = 7,
    SANITIZER_CB_DOMAIN_BATCH_MEMOP = 8,
    SANITIZER_CB_DOMAIN_UVM = 9,
    SANITIZER_CB_DOMAIN_GRAPHS = 10,
    SANITIZER_CB_DOMAIN_EVENTS = 11,
    SANITIZER_CB_DOMAIN_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackDomain;

typedef enum {
    SANITIZER_CBID_RESOURCE_INVALID = 0,
    SANITIZER_CBID_RESOURCE_INIT_FINISHED = 1,
    SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_STARTING = 2,
    SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED = 3,
    SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING = 4,
    SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_FINISHED = 5,
    SANITIZER_CBID_RESOURCE_STREAM_CREATED = 6,
    SANITIZER_CBID_RESOURCE_STREAM_DESTROY_STARTING = 7,
    SANITIZER_CBID_RESOURCE_STREAM_DESTROY_FINISHED = 8,
    SANITIZER_CBID_RESOURCE_MODULE_LOADED = 9,
    SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING = 10,
    SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC = 11,
    SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE = 12,
    SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC = 13,
    SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE = 14,
    SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC = 15,
    SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC = 16,
    SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC_DONE = 17,
    SANITIZER_CBID_RESOURCE_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdResource;

typedef enum {
    SANITIZER_CBID_SYNCHRONIZE_INVALID = 0,
    SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED = 1,
    SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED = 2,
    SANITIZER_CBID_SYNCHRONIZE_FORCE_INT = 0x7fffffff
} Sanitizer_CallackIdSync;

typedef enum {
    SANITIZER_CBID_LAUNCH_INVALID = 0,
    SANITIZER_CBID_LAUNCH_BEGIN = 1,
    SANITIZER_CBID_LAUNCH_AFTER_SYSCALL_SETUP = 2,
    SANITIZER_CBID_LAUNCH_END = 3,
    SANITIZER_CBID_LAUNCH_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdLaunch;

/* graphs domain: a graph's launch and its nodes' (values as the H200's
 * compute-sanitizer 2025.3.1 declares them; test_api_values) */
typedef enum {
    SANITIZER_CBID_GRAPHS_INVALID = 0,
    SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATING = 1,
    SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED = 2,
    SANITIZER_CBID_GRAPHS_GRAPHEXEC_DESTROYING = 3,
    SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN = 4,
    SANITIZER_CBID_GRAPHS_NODE_LAUNCH_END = 5,
    SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN = 6,
    SANITIZER_CBID_GRAPHS_LAUNCH_END = 7,
    SANITIZER_CBID_GRAPHS_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdGraphs;

typedef enum {
    SANITIZER_CBID_MEMCPY_INVALID = 0,
    SANITIZER_CBID_MEMCPY_STARTING = 1,
    SANITIZER_CBID_MEMCPY_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdMemcpy;

typedef enum {
    SANITIZER_CBID_MEMSET_INVALID = 0,
    SANITIZER_CBID_MEMSET_STARTING = 1,
    SANITIZER_CBID_MEMSET_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdMemset;

typedef enum {
    SANITIZER_CBID_EVENTS_INVALID = 0,
    SANITIZER_CBID_EVENTS_CREATED = 1,
    SANITIZER_CBID_EVENTS_DESTROYED = 2,
    SANITIZER_CBID_EVENTS_RECORD = 3,
    SANITIZER_CBID_EVENTS_STREAM_WAIT = 4,
    SANITIZER_CBID_EVENTS_SYNCHRONIZE = 5,
    SANITIZER_CBID_EVENTS_FORCE_INT = 0x7fffffff
} Sanitizer_CallbackIdEvents;

typedef enum {
    SANITIZER_MEMCPY_DIRECTION_UNKNOWN = 0,
    SANITIZER_MEMCPY_DIRECTION_HOST_TO_HOST = 1,
    SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE = 2,
    SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST = 3,
    SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE = 4,
    SANITIZER_MEMCPY_DIRECTION_FORCE_INT = 0x7fffffff
} Sanitizer_MemcpyDirection;

typedef enum {
    SANITIZER_MEMORY_VISIBILITY_INVALID = 0,
    SANITIZER_MEMORY_VISIBILITY_GLOBAL = 1,
    SANITIZER_MEMORY_VISIBILITY_HOST = 2,
    SANITIZER_MEMORY_VISIBILITY_STREAM = 3,
    SANITIZER_MEMORY_VISIBILITY_FORCE_INT = 0x7fffffff
} Sanitizer_MemoryVisibility;

typedef enum {
    SANITIZER_MEMORY_FLAG_NONE = 0,
    SANITIZER_MEMORY_FLAG_MODULE = 0x1,
    SANITIZER_MEMORY_FLAG_MANAGED = 0x2,
    SANITIZER_MEMORY_FLAG_HOST_MAPPED = 0x4,
    SANITIZER_MEMORY_FLAG_HOST_PINNED = 0x8,
    SANITIZER_MEMORY_FLAG_FORCE_INT = 0x7fffffff
} Sanitizer_ResourceMemoryFlags;

typedef enum {
    SANITIZER_INSTRUCTION_INVALID = 0,
    SANITIZER_INSTRUCTION_BLOCK_ENTER = 1,
    SANITIZER_INSTRUCTION_BLOCK_EXIT = 2,
    SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS = 3,
    SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS = 4,
    SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS = 5,
    SANITIZER_INSTRUCTION_BARRIER = 6,
    SANITIZER_INSTRUCTION_SYNCWARP = 7,
    SANITIZER_INSTRUCTION_SHFL = 8,
    SANITIZER_INSTRUCTION_CALL = 9,
    SANITIZER_INSTRUCTION_RET = 10,
    SANITIZER_INSTRUCTION_DEVICE_SIDE_MALLOC = 11,
    SANITIZER_INSTRUCTION_DEVICE_SIDE_FREE = 12,
    SANITIZER_INSTRUCTION_CUDA_BARRIER = 13,
    SANITIZER_INSTRUCTION_MEMCPY_ASYNC = 14,
    SANITIZER_INSTRUCTION_PIPELINE_COMMIT = 15,
    SANITIZER_INSTRUCTION_PIPELINE_WAIT = 16,
    SANITIZER_INSTRUCTION_REMOTE_SHARED_MEMORY_ACCESS = 17,
    /* 18 DEVICE_ALIGNED_MALLOC, 19 MATRIX_MEMORY_ACCESS, 20 CACHE_CONTROL:
     * not used.  The cluster barrier patch points come next in the
     * documentation ("Cluster barrier arrive instruction", callback type
     * SanitizerCallbackClusterBarrierArrive / ...Wait, (userdata, pc)); a
     * header that declares values 18..20 in that order (seen) makes them
     * 21 and 22, if nothing lies between (unverified). */
    SANITIZER_INSTRUCTION_CLUSTER_BARRIER_ARRIVE = 21,
    SANITIZER_INSTRUCTION_CLUSTER_BARRIER_WAIT = 22,
    SANITIZER_INSTRUCTION_FORCE_INT = 0x7fffffff
} Sanitizer_InstructionId;

/* callback data (sanitizer_callbacks.h) */
typedef struct {
    CUcontext context;
    CUmodule module;
    size_t cubinSize;
    const char *pCubin;
} Sanitizer_ResourceModuleData;

typedef struct {
    uint64_t address;
    uint64_t size;
    CUcontext context;
    CUdevice device;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
    CUmemoryPool memoryPool;
    uint32_t flags;
    uint32_t permissions;
    Sanitizer_MemoryVisibility visibility;
    CUdevice sourceDevice;
} Sanitizer_ResourceMemoryData;

typedef struct {
    CUcontext context;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
} Sanitizer_SynchronizeData;

typedef struct {
    CUcontext context;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
    CUmodule module;
    CUfunction function;
    const char *functionName;
    uint32_t gridDim_x, gridDim_y, gridDim_z;
    uint32_t blockDim_x, blockDim_y, blockDim_z;
    uint32_t clusterDim_x, clusterDim_y, clusterDim_z;
    uint64_t gridId;
    Sanitizer_LaunchHandle hLaunch;
    CUdevice device;
    CUcontext apiContext;
    CUstream apiStream;
    Sanitizer_StreamHandle hApiStream;
} Sanitizer_LaunchData;

typedef struct {
    CUcontext context;
    CUgraphExec graphExec;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
    uint32_t isGraphUpload;
} Sanitizer_GraphLaunchData;


typedef struct {
    CUcontext srcContext;
    CUcontext dstContext;
    CUstream srcStream;
    Sanitizer_StreamHandle hSrcStream;
    CUstream dstStream;
    Sanitizer_StreamHandle hDstStream;
    uint64_t srcAddress;
    uint64_t dstAddress;
    uint64_t size;
    uint64_t width, height, depth;
    uint64_t srcPitch, dstPitch;
    uint32_t isAsync;
    Sanitizer_MemcpyDirection direction;
} Sanitizer_MemcpyData;

typedef struct {
    CUcontext context;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
    uint64_t address;
    uint64_t width, height, pitch;
    uint32_t elementSize;
    uint32_t value;
    uint32_t isAsync;
} Sanitizer_MemsetData;

/* a graph node's launch: kernel nodes' launchData, memcpy and memset
 * nodes' memcpyData and memsetData are used (layout checked by
 * test_api_values) */
typedef struct {
    CUgraphExec graphExec;
    void *member_at_8;           /* undocumented here: an 8-byte member */
    CUgraphNode node;
    CUgraphNodeType nodeType;
    uint32_t launchId;
    union {
        Sanitizer_LaunchData launchData;
        Sanitizer_MemcpyData memcpyData;
        Sanitizer_MemsetData memsetData;
        uint64_t memFreeAddress;
        unsigned char union_bytes[144];   /* the memcpy and memset data are larger */
    };
    uint32_t isGraphUpload;
} Sanitizer_GraphNodeLaunchData;

/* an executable graph made (SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED): the
 * graph it was made from, whose nodes and edges are read then */
typedef struct {
    CUgraph graph;
    CUgraphExec graphExec;
    uint32_t isDeviceLaunch;
} Sanitizer_GraphExecData;

typedef struct {
    CUevent event;
    CUcontext context;
    CUstream stream;
    Sanitizer_StreamHandle hStream;
} Sanitizer_EventData;

typedef void(SANITIZERAPI *Sanitizer_CallbackFunc)(void *userdata, Sanitizer_CallbackDomain domain,
                                                   Sanitizer_CallbackId cbid, const void *cbdata);
#endif /* !WRS_DEVICE_SIDE */
#endif /* declared from the documentation */

#ifndef WRS_DEVICE_SIDE
/* The entry points, resolved with dlsym from libsanitizer-public.so (the
 * library is not linked, so the recorder builds without it).  Signatures
 * as documented. */
typedef struct wrs_sanitizer_fns {
    SanitizerResult (*subscribe)(Sanitizer_SubscriberHandle *, Sanitizer_CallbackFunc, void *);
    SanitizerResult (*unsubscribe)(Sanitizer_SubscriberHandle);
    SanitizerResult (*enable_domain)(uint32_t, Sanitizer_SubscriberHandle,
                                     Sanitizer_CallbackDomain);
    SanitizerResult (*add_patches_from_file)(const char *, CUcontext);
    SanitizerResult (*patch_instructions)(Sanitizer_InstructionId, CUmodule, const char *);
    SanitizerResult (*patch_module)(CUmodule);
    SanitizerResult (*set_launch_callback_data)(Sanitizer_LaunchHandle, CUfunction,
                                                Sanitizer_StreamHandle, const void *);
    SanitizerResult (*get_function_pc_and_size)(CUmodule, const char *, uint64_t *, uint64_t *);
    SanitizerResult (*alloc)(CUcontext, void **, size_t);
    SanitizerResult (*alloc_host)(CUcontext, void **, size_t);
    SanitizerResult (*free_)(CUcontext, void *);
    SanitizerResult (*memset_)(void *, int, size_t, Sanitizer_StreamHandle);
    SanitizerResult (*memcpy_h2d_async)(void *, void *, size_t, Sanitizer_StreamHandle);
    SanitizerResult (*memcpy_d2h)(void *, void *, size_t, Sanitizer_StreamHandle);
    SanitizerResult (*stream_synchronize)(Sanitizer_StreamHandle);
    SanitizerResult (*get_result_string)(SanitizerResult, const char **);
    /* optional (looked up apart): sanitizerGetStreamHandle */
    SanitizerResult (*get_stream_handle)(CUcontext, CUstream, Sanitizer_StreamHandle *);
} wrs_sanitizer_fns;

/* Symbol names, in the order of the fields above (all required but the
 * last, which is not named here). */
#define WRS_SANITIZER_SYMBOLS                                                                  \
    "sanitizerSubscribe", "sanitizerUnsubscribe", "sanitizerEnableDomain",                     \
    "sanitizerAddPatchesFromFile", "sanitizerPatchInstructions", "sanitizerPatchModule",       \
    "sanitizerSetLaunchCallbackData", "sanitizerGetFunctionPcAndSize", "sanitizerAlloc",       \
    "sanitizerAllocHost", "sanitizerFree", "sanitizerMemset",                                  \
    "sanitizerMemcpyHostToDeviceAsync", "sanitizerMemcpyDeviceToHost",                         \
    "sanitizerStreamSynchronize", "sanitizerGetResultString"
#endif

#endif

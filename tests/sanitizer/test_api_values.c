/* Built only where the toolkit's sanitizer.h exists: the values and
 * layouts sanitizer_api.h declares from the documentation must equal the
 * real header's. */
#include <sanitizer.h>
#include <stddef.h>
#include <stdio.h>

/* our own names (sanitizer_api.h, without its fallback declarations) */
#undef WRS_HAVE_SANITIZER_H
#define WRS_HAVE_SANITIZER_H 1
#include "sanitizer_api.h"

_Static_assert(WRS_SAN_SUCCESS == SANITIZER_SUCCESS, "SANITIZER_SUCCESS");
_Static_assert(WRS_SAN_PATCH_SUCCESS == SANITIZER_PATCH_SUCCESS, "PATCH_SUCCESS");
_Static_assert(WRS_SAN_MEM_FLAG_READ == SANITIZER_MEMORY_DEVICE_FLAG_READ, "READ");
_Static_assert(WRS_SAN_MEM_FLAG_WRITE == SANITIZER_MEMORY_DEVICE_FLAG_WRITE, "WRITE");
_Static_assert(WRS_SAN_MEM_FLAG_ATOMSYS == SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS, "ATOMSYS");
_Static_assert(WRS_SAN_MEM_FLAG_PREFETCH == SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH, "PREFETCH");
/* the documented order of the values sanitizer_api.h's fallback declares */
_Static_assert(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS == 3, "GLOBAL");
_Static_assert(SANITIZER_INSTRUCTION_SYNCWARP == 7, "SYNCWARP");
_Static_assert(SANITIZER_INSTRUCTION_DEVICE_SIDE_FREE == 12, "DEVICE_SIDE_FREE");
_Static_assert(SANITIZER_INSTRUCTION_REMOTE_SHARED_MEMORY_ACCESS == 17, "REMOTE_SHARED");
#if WRS_HAVE_CLUSTER_BARRIER_CB
/* the fallback's values, from the documented order (sanitizer_api.h) */
_Static_assert(SANITIZER_INSTRUCTION_CLUSTER_BARRIER_ARRIVE == 21, "CLUSTER_BARRIER_ARRIVE");
_Static_assert(SANITIZER_INSTRUCTION_CLUSTER_BARRIER_WAIT == 22, "CLUSTER_BARRIER_WAIT");
#endif
_Static_assert(SANITIZER_INSTRUCTION_CUDA_BARRIER == WRS_SAN_INSTRUCTION_CUDA_BARRIER, "CUDA_BARRIER");
_Static_assert(SANITIZER_INSTRUCTION_CUDA_BARRIER_ATTEMPT == WRS_SAN_INSTRUCTION_CUDA_BARRIER_ATTEMPT,
               "CUDA_BARRIER_ATTEMPT");
_Static_assert(SANITIZER_CUDA_BARRIER_INIT == WRS_SAN_CUDA_BARRIER_INIT, "CUDA_BARRIER_INIT");
_Static_assert(SANITIZER_CUDA_BARRIER_ARRIVE == WRS_SAN_CUDA_BARRIER_ARRIVE, "CUDA_BARRIER_ARRIVE");
_Static_assert(SANITIZER_CUDA_BARRIER_ARRIVE_DROP == WRS_SAN_CUDA_BARRIER_ARRIVE_DROP, "ARRIVE_DROP");
_Static_assert(SANITIZER_CUDA_BARRIER_ARRIVE_NOCOMPLETE == WRS_SAN_CUDA_BARRIER_ARRIVE_NOCOMPLETE,
               "ARRIVE_NOCOMPLETE");
_Static_assert(SANITIZER_CUDA_BARRIER_ARRIVE_DROP_NOCOMPLETE ==
                   WRS_SAN_CUDA_BARRIER_ARRIVE_DROP_NOCOMPLETE, "ARRIVE_DROP_NOCOMPLETE");
_Static_assert(SANITIZER_CUDA_BARRIER_WAIT == WRS_SAN_CUDA_BARRIER_WAIT, "CUDA_BARRIER_WAIT");
_Static_assert(SANITIZER_CB_DOMAIN_LAUNCH == 5, "DOMAIN_LAUNCH");
_Static_assert(SANITIZER_CB_DOMAIN_EVENTS == 11, "DOMAIN_EVENTS");
_Static_assert(SANITIZER_CBID_RESOURCE_MODULE_LOADED == 9, "MODULE_LOADED");
_Static_assert(SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC == 16, "FREE_ASYNC");
_Static_assert(SANITIZER_CBID_LAUNCH_END == 3, "LAUNCH_END");
_Static_assert(offsetof(Sanitizer_LaunchData, hLaunch) == 96, "LaunchData layout");
/* CUDA graphs (as the H200's compute-sanitizer 2025.3.1 declares them) */
_Static_assert(SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN == 4, "GRAPHS_NODE_LAUNCH_BEGIN");
_Static_assert(SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN == 6, "GRAPHS_LAUNCH_BEGIN");
_Static_assert(offsetof(Sanitizer_GraphLaunchData, isGraphUpload) == 32, "GraphLaunchData layout");
_Static_assert(offsetof(Sanitizer_GraphNodeLaunchData, nodeType) == 24 &&
                   offsetof(Sanitizer_GraphNodeLaunchData, launchData) == 32 &&
                   offsetof(Sanitizer_GraphNodeLaunchData, isGraphUpload) == 176,
               "GraphNodeLaunchData layout");
_Static_assert(SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED == 2, "GRAPHS_GRAPHEXEC_CREATED");
_Static_assert(SANITIZER_CBID_GRAPHS_GRAPHEXEC_DESTROYING == 3, "GRAPHS_GRAPHEXEC_DESTROYING");
_Static_assert(SANITIZER_CBID_GRAPHS_LAUNCH_END == 7, "GRAPHS_LAUNCH_END");
_Static_assert(offsetof(Sanitizer_GraphExecData, graph) == 0 &&
                   offsetof(Sanitizer_GraphExecData, graphExec) == 8,
               "GraphExecData layout");

int main(void)
{
    /* said, not asserted: where the fallback's guess differs, the values
     * to write into it */
    size_t node = offsetof(Sanitizer_GraphNodeLaunchData, node),
           copy = offsetof(Sanitizer_GraphNodeLaunchData, memcpyData),
           set = offsetof(Sanitizer_GraphNodeLaunchData, memsetData);
    printf("GraphNodeLaunchData: node at %zu, memcpyData at %zu, memsetData at %zu, size %zu\n",
           node, copy, set, sizeof(Sanitizer_GraphNodeLaunchData));
    if (node != 16 || copy != 32 || set != 32) {
        printf("sanitizer_api.h differs from sanitizer.h (GraphNodeLaunchData)\n");
        return 1;
    }
    printf("sanitizer_api.h matches sanitizer.h\n");
    return 0;
}

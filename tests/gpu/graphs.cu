/*
 * warprace_graphs: kernels launched through a CUDA graph (stream capture),
 * for what the two recording paths make of them.  A producer writes
 * data[0..31], a consumer reads it.
 *
 *   warprace_graphs stream     no graph: producer then consumer on one
 *                              stream (the reference: no race)
 *   warprace_graphs chain      captured the same way and launched as a
 *                              graph: the graph's edge orders them (no race)
 *   warprace_graphs branches   captured on two forked streams, joined after:
 *                              two graph nodes with no edge between them
 *                              (a race on data)
 *   warprace_graphs diamond    a memset node, the producer, then two
 *                              consumers on forked streams (reads only,
 *                              each its own output), joined; launched on
 *                              one stream and again on another, which CUDA
 *                              orders after the first launch (no race)
 *   warprace_graphs explicit   built by hand: a device-to-device copy from
 *                              out into data, the producer after it, an
 *                              empty node, then the two consumers (the copy
 *                              reads out, which a consumer writes: ordered
 *                              through the empty node; no race)
 *
 * Built with the device API (warprace_graphs) and without it
 * (warprace_graphs_plain); scripts/gpu-session graphs records both.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "warprace/device.cuh"
#include "gpu_probe.cuh"

__global__ void producer(int *data)
{
    WR_STORE(&data[threadIdx.x], (int)threadIdx.x);
}

__global__ void consumer(const int *data, int *out)
{
    out[threadIdx.x] = WR_LOAD(&data[threadIdx.x]);
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    if (strcmp(mode, "stream") && strcmp(mode, "chain") && strcmp(mode, "branches") &&
        strcmp(mode, "diamond") && strcmp(mode, "explicit")) {
        fprintf(stderr, "usage: warprace_graphs stream|chain|branches|diamond|explicit\n");
        return 2;
    }
    int *data, *out, *out2;
    warprace_name_next_alloc("data");
    CUDA_CHECK(cudaMalloc(&data, 32 * sizeof(int)));
    warprace_name_next_alloc("out");
    CUDA_CHECK(cudaMalloc(&out, 32 * sizeof(int)));
    warprace_name_next_alloc("out2");
    CUDA_CHECK(cudaMalloc(&out2, 32 * sizeof(int)));
    cudaStream_t s, s2;
    cudaEvent_t fork, join;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    if (!strcmp(mode, "stream")) {
        producer<<<1, 32, 0, s>>>(data);
        consumer<<<1, 32, 0, s>>>(data, out);
    } else if (!strcmp(mode, "explicit")) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        cudaGraphNode_t copy, prod, empty, c1, c2;
        CUDA_CHECK(cudaGraphCreate(&graph, 0));
        CUDA_CHECK(cudaGraphAddMemcpyNode1D(&copy, graph, NULL, 0, data, out, 32 * sizeof(int),
                                            cudaMemcpyDeviceToDevice));
        cudaKernelNodeParams kp;
        memset(&kp, 0, sizeof kp);
        void *pargs[] = {&data}, *c1args[] = {&data, &out}, *c2args[] = {&data, &out2};
        kp.func = (void *)producer;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(32);
        kp.kernelParams = pargs;
        CUDA_CHECK(cudaGraphAddKernelNode(&prod, graph, &copy, 1, &kp));
        CUDA_CHECK(cudaGraphAddEmptyNode(&empty, graph, &prod, 1));
        kp.func = (void *)consumer;
        kp.kernelParams = c1args;
        CUDA_CHECK(cudaGraphAddKernelNode(&c1, graph, &empty, 1, &kp));
        kp.kernelParams = c2args;
        CUDA_CHECK(cudaGraphAddKernelNode(&c2, graph, &empty, 1, &kp));
        CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        CUDA_CHECK(cudaGraphLaunch(exec, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        CUDA_CHECK(cudaGraphExecDestroy(exec));
        CUDA_CHECK(cudaGraphDestroy(graph));
    } else {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        if (!strcmp(mode, "chain")) {
            producer<<<1, 32, 0, s>>>(data);
            consumer<<<1, 32, 0, s>>>(data, out);
        } else if (!strcmp(mode, "diamond")) {
            CUDA_CHECK(cudaMemsetAsync(data, 0, 32 * sizeof(int), s));
            producer<<<1, 32, 0, s>>>(data);
            CUDA_CHECK(cudaEventRecord(fork, s));
            CUDA_CHECK(cudaStreamWaitEvent(s2, fork, 0));
            consumer<<<1, 32, 0, s>>>(data, out);
            consumer<<<1, 32, 0, s2>>>(data, out2);
            CUDA_CHECK(cudaEventRecord(join, s2));
            CUDA_CHECK(cudaStreamWaitEvent(s, join, 0));
        } else {
            CUDA_CHECK(cudaEventRecord(fork, s));
            CUDA_CHECK(cudaStreamWaitEvent(s2, fork, 0));
            producer<<<1, 32, 0, s>>>(data);
            consumer<<<1, 32, 0, s2>>>(data, out);
            CUDA_CHECK(cudaEventRecord(join, s2));
            CUDA_CHECK(cudaStreamWaitEvent(s, join, 0));
        }
        CUDA_CHECK(cudaStreamEndCapture(s, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        CUDA_CHECK(cudaGraphLaunch(exec, s));
        if (!strcmp(mode, "diamond")) {   /* again, on another stream */
            CUDA_CHECK(cudaGraphLaunch(exec, s2));
            CUDA_CHECK(cudaStreamSynchronize(s2));
        }
        CUDA_CHECK(cudaStreamSynchronize(s));
        CUDA_CHECK(cudaGraphExecDestroy(exec));
        CUDA_CHECK(cudaGraphDestroy(graph));
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    int h[32];
    CUDA_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    printf("graphs %s: out[31] = %d\n", mode, h[31]);
    return 0;
}

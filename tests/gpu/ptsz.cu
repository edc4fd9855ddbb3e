/*
 * warprace_ptsz: the per-thread default stream (built with
 * `--default-stream per-thread`, so a NULL stream is each host thread's own
 * default stream, which synchronizes with the legacy default stream only).
 *
 *   warprace_ptsz threads    two host threads, each a writer of data on
 *                            its default stream, joined, then a device
 *                            synchronize: two streams with nothing between
 *                            them (a race on data; a synchronize in a
 *                            thread would order the other thread's later
 *                            launch after it in the trace, whose host is
 *                            one timeline)
 *   warprace_ptsz blocking   one thread: a writer of data on its default
 *                            stream, then a reader on a blocking stream it
 *                            created: the per-thread default stream does
 *                            not synchronize with other blocking streams
 *                            (a race on data)
 *   warprace_ptsz ordered    the same with an event between them (no race)
 *
 * Built with the device API (warprace_ptsz) and without it
 * (warprace_ptsz_plain); scripts/gpu-session ptsz records both.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "warprace/device.cuh"
#include "gpu_probe.cuh"

__global__ void writer(int *data, int v)
{
    WR_STORE(&data[threadIdx.x], v + (int)threadIdx.x);
}

__global__ void reader(const int *data, int *out)
{
    out[threadIdx.x] = WR_LOAD(&data[threadIdx.x]);
}

static int *data, *out;

static void *thread_main(void *arg)
{
    writer<<<1, 32>>>(data, (int)(intptr_t)arg);   /* this thread's default stream */
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    if (strcmp(mode, "threads") && strcmp(mode, "blocking") && strcmp(mode, "ordered")) {
        fprintf(stderr, "usage: warprace_ptsz threads|blocking|ordered\n");
        return 2;
    }
    warprace_name_next_alloc("data");
    CUDA_CHECK(cudaMalloc(&data, 32 * sizeof(int)));
    warprace_name_next_alloc("out");
    CUDA_CHECK(cudaMalloc(&out, 32 * sizeof(int)));
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!strcmp(mode, "threads")) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)(100 * i));
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else {
        cudaStream_t s;
        cudaEvent_t e;
        CUDA_CHECK(cudaStreamCreate(&s));   /* blocking */
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        writer<<<1, 32>>>(data, 7);
        if (!strcmp(mode, "ordered")) {
            CUDA_CHECK(cudaEventRecord(e, 0));
            CUDA_CHECK(cudaStreamWaitEvent(s, e, 0));
        }
        reader<<<1, 32, 0, s>>>(data, out);
        CUDA_CHECK(cudaStreamSynchronize(s));
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("ptsz %s: done\n", mode);
    return 0;
}

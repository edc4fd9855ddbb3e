/*
 * What an mbarrier object holds, read back after each step (sm_90): the
 * sanitizer path must know where the phase bit lies to record the parity
 * a successful wait waited for, and what its init callback's `data` means
 * (recorder/sanitizer/SANITIZER.md, mbarriers).  One thread inits a
 * barrier of count C, arrives C times (the phase completes), then C more
 * times, and writes the 64-bit word after every step together with what
 * test_wait.parity(0/1) says; then the same with one arrive of count C.
 * Built WITHOUT the device API, so that recording it with
 * `warprace record --sanitizer` shows the callbacks' values beside the
 * words.  Not part of the tests: a probe for a GPU session
 * (scripts/gpu-session mbarrier).
 */
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define MAX_STEPS 16

struct step {
    unsigned long long word;
    unsigned long long state;   /* what the arrive returned */
    unsigned test0, test1;      /* test_wait.parity(0), (1) */
    unsigned what;              /* 0 init, 1 arrive, 2 arrive of count C, 3 try_wait */
};

static __device__ unsigned long long word_at(uint32_t a)
{
    unsigned long long v;
    asm volatile("ld.volatile.shared.b64 %0, [%1];" : "=l"(v) : "r"(a) : "memory");
    return v;
}

static __device__ unsigned test_parity(uint32_t a, unsigned p)
{
    unsigned r;
    asm volatile("{ .reg .pred q; mbarrier.test_wait.parity.shared::cta.b64 q, [%1], %2; "
                 "selp.u32 %0, 1, 0, q; }"
                 : "=r"(r)
                 : "r"(a), "r"(p)
                 : "memory");
    return r;
}

static __device__ void note(step *s, int *n, uint32_t a, unsigned long long state, unsigned what)
{
    if (*n >= MAX_STEPS)
        return;
    s[*n].word = word_at(a);
    s[*n].state = state;
    s[*n].test0 = test_parity(a, 0);
    s[*n].test1 = test_parity(a, 1);
    s[*n].what = what;
    (*n)++;
}

__global__ void k_probe(step *out, int *counts, unsigned count, int bulk)
{
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x != 0)
        return;
    uint32_t a = (uint32_t)__cvta_generic_to_shared(&bar);
    int n = 0;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(count) : "memory");
    note(out, &n, a, 0, 0);
    for (int phase = 0; phase < 2; phase++) {
        if (bulk) {
            unsigned long long st;
            asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1], %2;"
                         : "=l"(st)
                         : "r"(a), "r"(count)
                         : "memory");
            note(out, &n, a, st, 2);
        } else {
            for (unsigned k = 0; k < count; k++) {
                unsigned long long st;
                asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
                             : "=l"(st)
                             : "r"(a)
                             : "memory");
                if (k < 2 || k + 1 == count)
                    note(out, &n, a, st, 1);
            }
        }
        unsigned ok;
        asm volatile("{ .reg .pred q; mbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2; "
                     "selp.u32 %0, 1, 0, q; }"
                     : "=r"(ok)
                     : "r"(a), "r"((unsigned)phase)
                     : "memory");
        note(out, &n, a, ok, 3);
    }
    *counts = n;
}

int main()
{
    static const unsigned counts[] = {1, 2, 3, 5, 32, 100};
    step *d;
    int *dn;
    if (cudaMalloc(&d, sizeof(step) * MAX_STEPS) != cudaSuccess ||
        cudaMalloc(&dn, sizeof(int)) != cudaSuccess) {
        fprintf(stderr, "mbarrier_probe: no device\n");
        return 1;
    }
    static const char *const what[] = {"init", "arrive", "arrive.count", "try_wait"};
    for (int bulk = 0; bulk < 2; bulk++)
        for (unsigned c : counts) {
            step h[MAX_STEPS];
            int n = 0;
            k_probe<<<1, 32>>>(d, dn, c, bulk);
            if (cudaDeviceSynchronize() != cudaSuccess) {
                fprintf(stderr, "mbarrier_probe: kernel failed\n");
                return 1;
            }
            cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
            cudaMemcpy(&n, dn, sizeof n, cudaMemcpyDeviceToHost);
            printf("count %u%s\n", c, bulk ? " (one arrive of the count per phase)" : "");
            for (int i = 0; i < n; i++)
                printf("  %-12s word %016llx  returned %016llx  test_wait p0=%u p1=%u\n",
                       what[h[i].what], h[i].word, h[i].state, h[i].test0, h[i].test1);
        }
    return 0;
}

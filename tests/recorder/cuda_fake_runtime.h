/* Named like the CUDA runtime's headers (cuda_runtime.h): its inline
 * wrappers, inlined into the program's code, are not the call site. */
#ifndef WARPRACE_TEST_CUDA_FAKE_RUNTIME_H
#define WARPRACE_TEST_CUDA_FAKE_RUNTIME_H

int cufake_call(void (*callback)(void *), void *ctx);

static inline __attribute__((always_inline)) int copy_through_the_header(void (*callback)(void *),
                                                                         void *ctx)
{
    return cufake_call(callback, ctx) + 1;
}

#endif

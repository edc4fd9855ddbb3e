/* A stand-in for a CUDA library in host_site tests: its file name begins
 * with libcu, and it calls back into the program as the CUDA driver calls
 * a recorder's API callback. */
__attribute__((visibility("default"))) int cufake_call(void (*callback)(void *), void *ctx);

int cufake_call(void (*callback)(void *), void *ctx)
{
    callback(ctx);
    /* a call that is not the last thing done keeps this frame on the stack */
    static volatile int calls;
    return ++calls;
}

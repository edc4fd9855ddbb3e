/*
 * The label a program gives its next device allocation
 * (warprace_name_next_alloc in include/warprace/device.cuh sets
 * $WARPRACE_ALLOC_NAME), read by both recording paths -- the CUPTI host
 * runtime and the Compute Sanitizer library -- so that a program's reports
 * name the same allocations however it was recorded.
 */
#ifndef WARPRACE_RECORDER_ALLOC_LABEL_H
#define WARPRACE_RECORDER_ALLOC_LABEL_H

#include <stddef.h>

#define WRR_ALLOC_LABEL_ENV "WARPRACE_ALLOC_NAME"

/* The given label (copied into buf, at most cap-1 bytes), consumed: the
 * variable is cleared so that it names one allocation only.  Without one,
 * `fallback` (the API's own name for the allocation; may be NULL).  Not
 * thread-safe (the environment is not): call under the caller's lock. */
const char *wrr_take_alloc_label(char *buf, size_t cap, const char *fallback);

#endif

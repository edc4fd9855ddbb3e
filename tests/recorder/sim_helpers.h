/* What several recorder tests share: producer threads writing access
 * records into a simulated ring, and the header of a test trace. */
#ifndef WARPRACE_TESTS_RECORDER_SIM_HELPERS_H
#define WARPRACE_TESTS_RECORDER_SIM_HELPERS_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "convert.h"
#include "ring_sim.h"
#include "warprace/trace.h"

/* One producer: `count` access records of block `block`, lane 0's address
 * 0x1000 + i * 128 for record i (the order a drain must keep), every fifth
 * (every second with `vectors`) a scattered one. */
typedef struct prod_arg {
    wrr_sim *sim;
    uint64_t count;
    uint32_t block;
    int vectors;
} prod_arg;

static inline void *sim_producer(void *p)
{
    prod_arg *a = p;
    uint64_t buf[2 * WRR_MAX_SLOTS];
    const uint64_t every = a->vectors ? 2 : 5;
    for (uint64_t i = 0; i < a->count; i++) {
        wrr_access_desc d;
        memset(&d, 0, sizeof d);
        d.block = a->block;
        d.active_mask = WR_FULL_MASK;
        d.op = WR_OP_LOAD;
        d.size = 4;
        for (unsigned k = 0; k < 32; k++)
            d.lane_addr[k] = (i % every == every - 1) ? 0x1000 + i * 128 + ((k * 7) % 32) * 4
                                                      : 0x1000 + i * 128 + 4 * k;
        wrr_encode_access(&d, buf);
        if (wrr_sim_write(a->sim, buf, 32, 0) != 1)
            return (void *)1;
    }
    return NULL;
}

/* Runs `producers` producers of `count` records each (block i for
 * producer i) on sim until all are done.  0, or -1 if one failed. */
static inline int sim_run_producers(wrr_sim *sim, unsigned producers, uint64_t count, int vectors)
{
    pthread_t t[16];
    prod_arg a[16];
    int rc = 0;
    if (producers > 16)
        return -1;
    for (unsigned i = 0; i < producers; i++) {
        a[i] = (prod_arg){sim, count, i, vectors};
        pthread_create(&t[i], NULL, sim_producer, &a[i]);
    }
    for (unsigned i = 0; i < producers; i++) {
        void *r;
        pthread_join(t[i], &r);
        if (r)
            rc = -1;
    }
    return rc;
}

/* Launch `id` of kernel 1 (256 threads) and its end. */
static inline wr_event launch_ev(uint32_t id)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_KERNEL_LAUNCH;
    e.u.launch.launch = id;
    e.u.launch.kernel = 1;
    for (int i = 0; i < 3; i++)
        e.u.launch.grid[i] = e.u.launch.block_dim[i] = e.u.launch.cluster[i] = 1;
    e.u.launch.block_dim[0] = 256;
    return e;
}

static inline wr_event end_ev(uint32_t id)
{
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_KERNEL_END;
    e.u.kernel_end.launch = id;
    return e;
}

/* The header of a test trace (device "sim"). */
static inline wr_header sim_header(void)
{
    wr_header h;
    memset(&h, 0, sizeof h);
    h.version_major = WR_FORMAT_MAJOR;
    h.version_minor = WR_FORMAT_MINOR;
    h.producer = "test";
    h.producer_version = "0";
    h.device = "sim";
    h.host = "";
    h.command = "";
    h.warp_size = 32;
    return h;
}

#endif

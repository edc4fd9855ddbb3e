/*
 * A ring in ordinary host memory with a producer written in C11 atomics
 * that follows the device logger's protocol step by step (reserve, wait or
 * drop, fill, commit).  The unit tests drive the drain against it; it is
 * also the executable reference of the protocol for readers of
 * device_logger.cuh.
 */
#ifndef WARPRACE_RECORDER_RING_SIM_H
#define WARPRACE_RECORDER_RING_SIM_H

#include <stdint.h>

#include "drain.h"
#include "ring_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wrr_sim {
    wrr_ring ring;               /* host view, for the drain */
    wrr_dev_state dev;           /* what lives in device memory on a GPU */
    uint64_t waits;              /* reservations that had to wait for space */
    uint64_t last_pos;           /* position of the last reservation */
} wrr_sim;

/* Allocates a zeroed ring of 2^log2cap slots.  Returns 0 or -1. */
int wrr_sim_init(wrr_sim *s, uint32_t log2cap, int drop_mode);
void wrr_sim_free(wrr_sim *s);

/* Writes one encoded record (words[0..2n-1], tag ignored) as the device
 * does.  `lanes` is the number of thread-level accesses it stands for (for
 * the dropped-lanes counter).  Blocks while the ring is full unless in drop
 * mode, where it counts the drop and returns 0.  Returns 1 when written.
 * If `spin_limit` is non-zero and the wait exceeds that many polls, gives
 * up and returns -1, the reservation still held at s->last_pos (finish it
 * with wrr_sim_commit_at once there is space). */
int wrr_sim_write(wrr_sim *s, const uint64_t *words, unsigned lanes, uint64_t spin_limit);

/* Reserves like wrr_sim_write but leaves the record uncommitted; returns
 * its position (tests: a warp that reserved and has not committed yet). */
uint64_t wrr_sim_reserve_only(wrr_sim *s, unsigned nslots);
/* Commits a record at a position obtained from wrr_sim_reserve_only. */
void wrr_sim_commit_at(wrr_sim *s, uint64_t pos, const uint64_t *words);

#ifdef __cplusplus
}
#endif
#endif

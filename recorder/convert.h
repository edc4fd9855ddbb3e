/*
 * Device ring records -> wr_event (plain C, no CUDA).  See ring_format.h for
 * the record layout and RECORDER.md for the protocol.
 */
#ifndef WARPRACE_RECORDER_CONVERT_H
#define WARPRACE_RECORDER_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "ring_format.h"
#include "warprace/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks the header word of a record (everything but the tag): kind, slot
 * count and fields in range.  Returns NULL if sound, else what is wrong. */
const char *wrr_check_header(uint64_t w0);

/* Converts one complete record (words[0 .. 2*nslots-1], already copied out
 * of the ring, tag included) into *ev.  `launch` is the launch the record
 * belongs to, `site` the catalog id of its site (0 = unknown).  For vector
 * address modes ev->u.access.lane_addr points at lanes[], which the caller
 * owns and which must outlive the use of *ev.  Returns 0, or -1 with a
 * reason in *why for a malformed record. */
int wrr_convert(const uint64_t *words, size_t nwords, uint32_t launch, uint32_t site,
                wr_event *ev, uint64_t lanes[32], const char **why);

/* The host mirror of the device encoder (device_logger.cuh wrr_encode):
 * chooses the address mode for the active lanes' addresses exactly as the
 * device does and writes the record (without tag) into words[], which must
 * hold 2 * WRR_MAX_SLOTS words.  Returns the slot count.  Used by the unit
 * tests and by the simulated ring. */
typedef struct wrr_access_desc {
    uint32_t block, warp, active_mask, cas_success;
    uint8_t op, atomic_op, scope, order, space, size;
    uint64_t site_addr;
    uint64_t lane_addr[32];     /* meaningful for active lanes */
} wrr_access_desc;
unsigned wrr_encode_access(const wrr_access_desc *d, uint64_t *words);
/* A sync record as device_logger.cuh wrr_sync_record writes it: `scope` is
 * a FENCE's wr_scope or a BARRIER's wr_barrier_scope, `order` a FENCE's
 * wr_order or a BARRIER's wr_barrier_mode (ring_format.h). */
unsigned wrr_encode_sync(uint64_t *words, unsigned kind, uint32_t block, uint32_t warp,
                         uint32_t mask, uint32_t aux, uint8_t scope, uint8_t order,
                         uint64_t site_addr);

/* An mbarrier record as device_logger.cuh wrr_mbarrier_record writes it
 * (ring_format.h: 3 slots, the offset in w4): `aux` is the init's or the
 * arrive's count or the wait's parity, `mode` a wr_barrier_mode.  words[]
 * must hold 6 words.  Returns the slot count. */
unsigned wrr_encode_mbarrier(uint64_t *words, uint32_t block, uint32_t warp, uint32_t mask,
                             uint64_t offset, uint32_t aux, uint8_t mode, uint64_t site_addr);

/* log2 of an access size (1,2,4,8,16 -> 0..4); -1 otherwise. */
int wrr_size_log2(unsigned size);

#ifdef __cplusplus
}
#endif
#endif

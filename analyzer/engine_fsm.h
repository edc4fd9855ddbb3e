/*
 * Internal interface of the fsm engine (engine_fsm.c), exposed for its unit
 * tests: the 8-byte shadow word layout and the per-access step function.
 *
 * Shadow word (one per 4-byte word; 0 = INIT, never accessed):
 *   bits  0..4   FSM state (fsm25_table.h numbering)
 *   bits  5..12  epoch tag: low 8 bits of the launch/copy epoch (epochs.h)
 *   bits 13..17  lane of the last accessor
 *   bits 18..22  warp (within its block) of the last accessor
 *   bits 23..42  block of the last accessor, folded modulo 2^20-1;
 *                WR_FSM_HOST_BLOCK (2^20-1) is the host (copies)
 *   bits 43..53  that accessor's block-barrier count, mod 2^11
 *   bits 54..63  that accessor's warp-sync count, mod 2^10
 */
#ifndef WARPRACE_ENGINE_FSM_H
#define WARPRACE_ENGINE_FSM_H

#include <stdint.h>

#include "fsm25_table.h"

#define WR_FSM_STATE_MASK 0x1full
#define WR_FSM_TAG_SHIFT 5
#define WR_FSM_LANE_SHIFT 13
#define WR_FSM_WARP_SHIFT 18
#define WR_FSM_BLOCK_SHIFT 23
#define WR_FSM_BC_SHIFT 43
#define WR_FSM_WC_SHIFT 54
#define WR_FSM_BLOCK_BITS 20
#define WR_FSM_BC_BITS 11
#define WR_FSM_WC_BITS 10
#define WR_FSM_HOST_BLOCK ((1u << WR_FSM_BLOCK_BITS) - 1u)

#define WR_FSM_ID_MASK (((1ull << 30) - 1) << WR_FSM_LANE_SHIFT)        /* lane+warp+block */
#define WR_FSM_WARPID_MASK (((1ull << 25) - 1) << WR_FSM_WARP_SHIFT)    /* warp+block */
#define WR_FSM_BLOCKID_MASK (((1ull << 20) - 1) << WR_FSM_BLOCK_SHIFT)  /* block */

static inline uint32_t wr_fsm_fold_block(uint32_t block)
{
    return block < WR_FSM_HOST_BLOCK ? block : block % WR_FSM_HOST_BLOCK;
}

static inline uint64_t wr_fsm_pack(unsigned state, uint32_t epoch, uint32_t lane, uint32_t warp,
                                   uint32_t block_field, uint32_t bc, uint32_t wc)
{
    return (uint64_t)(state & 31u) | ((uint64_t)(epoch & 0xffu) << WR_FSM_TAG_SHIFT) |
           ((uint64_t)(lane & 31u) << WR_FSM_LANE_SHIFT) |
           ((uint64_t)(warp & 31u) << WR_FSM_WARP_SHIFT) |
           ((uint64_t)(block_field & WR_FSM_HOST_BLOCK) << WR_FSM_BLOCK_SHIFT) |
           ((uint64_t)(bc & ((1u << WR_FSM_BC_BITS) - 1)) << WR_FSM_BC_SHIFT) |
           ((uint64_t)(wc & ((1u << WR_FSM_WC_BITS) - 1)) << WR_FSM_WC_SHIFT);
}

static inline unsigned wr_fsm_state(uint64_t w) { return (unsigned)(w & WR_FSM_STATE_MASK); }
static inline unsigned wr_fsm_tag(uint64_t w) { return (unsigned)(w >> WR_FSM_TAG_SHIFT) & 0xffu; }
static inline unsigned wr_fsm_lane(uint64_t w) { return (unsigned)(w >> WR_FSM_LANE_SHIFT) & 31u; }
static inline unsigned wr_fsm_warp(uint64_t w) { return (unsigned)(w >> WR_FSM_WARP_SHIFT) & 31u; }
static inline unsigned wr_fsm_block(uint64_t w)
{
    return (unsigned)(w >> WR_FSM_BLOCK_SHIFT) & WR_FSM_HOST_BLOCK;
}
static inline unsigned wr_fsm_bc(uint64_t w) { return (unsigned)(w >> WR_FSM_BC_SHIFT) & 0x7ffu; }
static inline unsigned wr_fsm_wc(uint64_t w) { return (unsigned)(w >> WR_FSM_WC_SHIFT) & 0x3ffu; }

/* Thread relation of the stored accessor (old) and the current one (cur). */
static inline unsigned wr_fsm_relation(uint64_t old, uint64_t cur)
{
    uint64_t x = old ^ cur;
    if (!(x & WR_FSM_ID_MASK))
        return WR_FSM_REL_S;
    if (!(x & WR_FSM_WARPID_MASK))
        return WR_FSM_REL_W;
    if (!(x & WR_FSM_BLOCKID_MASK))
        return WR_FSM_REL_B;
    return WR_FSM_REL_G;
}

/* Sync status: B when the current accessor's block-barrier count is ahead
 * of the stored one (modular: ahead by 1 .. 2^10-1), else W when its
 * warp-sync count is ahead (by 1 .. 2^9-1), else U.  The counts are Lamport
 * style (see engine_fsm.c), so a synchronisation chain from the stored
 * access to the current one always makes the current count larger. */
static inline unsigned wr_fsm_sync(uint64_t old, uint64_t cur)
{
    unsigned dbc = (wr_fsm_bc(cur) - wr_fsm_bc(old)) & 0x7ffu;
    if (dbc - 1u < 0x3ffu)
        return WR_FSM_SYNC_B;
    unsigned dwc = (wr_fsm_wc(cur) - wr_fsm_wc(old)) & 0x3ffu;
    if (dwc - 1u < 0x1ffu)
        return WR_FSM_SYNC_W;
    return WR_FSM_SYNC_U;
}

/* One access of the same epoch: `old` the shadow word, `cur` the current
 * accessor packed with state 0, `access` WR_FSM_ACC_*.  Returns the new
 * shadow word (the table's next state + the current accessor). */
static inline uint64_t wr_fsm_step(uint64_t old, uint64_t cur, unsigned access)
{
    unsigned st = wr_fsm_state(old);
    unsigned next = old ? wr_fsm25_next[st][access][wr_fsm_sync(old, cur)][wr_fsm_relation(old, cur)]
                        : wr_fsm25_next[WR_FSM25_INIT][access][0][0];
    return cur | next;
}

#endif

/*
 * hbcore.h: the shadow-memory half shared by the happens-before engines (vc
 * and scoped).  It owns the shadow cells, the interned access contexts and
 * the read sets, walks every access word of this shard, and asks the engine
 * (a decide callback) whether a conflicting pair is a race and why.
 *
 * Shadow cell: 16 bytes per 4-byte word, FastTrack style:
 *   wctx, wep   last write: context id, epoch
 *   rctx, rep   last read (epoch), or RSET|index of a read set
 * An epoch packs (stamp:26 | converged:1 | lane:5).  A context id names an
 * interned (unit, site, access kind, atomic scope, weak) tuple: the lanes of
 * one warp instruction share it, so a cell stays small.
 */
#ifndef WARPRACE_HBCORE_H
#define WARPRACE_HBCORE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "vclock.h"

typedef struct wr_hb_ctx {
    uint32_t unit, site;
    uint8_t kind;        /* wr_access_kind */
    uint8_t scope;       /* atomics: wr_scope */
    uint8_t weak;        /* plain weak access */
    uint8_t pad;
    uint64_t seq;        /* latest trace position of this context */
} wr_hb_ctx;

#define WR_EP_LANE(ep) ((ep) & 31u)
#define WR_EP_CONV(ep) (((ep) >> 5) & 1u)
#define WR_EP_STAMP(ep) ((ep) >> 6)

typedef struct wr_hbe wr_hbe;

/* Is (prev, prev_ep) against the current access (cur by lane `lane` of w) a
 * race?  Both conflict (one writes) and are not the same instruction.
 * Return true and set *verdict to report it. */
typedef bool (*wr_hbe_decide_fn)(wr_hbe *e, const wr_hb_warp *w, const wr_hb_ctx *prev,
                                 uint32_t prev_ep, const wr_hb_ctx *cur, unsigned lane,
                                 uint8_t *verdict);

wr_hbe *wr_hbe_new(const wr_engine_config *cfg, unsigned layers, unsigned prune_layer,
                   wr_hbe_decide_fn decide);
void wr_hbe_event(wr_hbe *e, const wr_event *ev);
uint64_t wr_hbe_words(const wr_hbe *e);
void wr_hbe_free(wr_hbe *e);
wr_hb *wr_hbe_hb(wr_hbe *e);

/* Helper for decide functions: is prev ordered before w's lane now? */
bool wr_hbe_ordered(wr_hbe *e, const wr_hb_warp *w, unsigned layer, const wr_hb_ctx *prev,
                    uint32_t prev_ep, unsigned lane);

/* Is the word being checked a synchronization word (flag or lock)? */
bool wr_hbe_cur_sync_word(wr_hbe *e);

#endif

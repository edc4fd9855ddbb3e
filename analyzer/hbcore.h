/*
 * hbcore.h: the shadow-memory half shared by the happens-before engines (vc
 * and scoped).  It owns the shadow cells, the interned access contexts and
 * the read sets, walks every access word of this shard, and asks the engine
 * (a decide callback) whether a conflicting pair is a race and why.
 *
 * One instance serves one or more checkers (wr_hb_checker: vc, scoped) in
 * one pass: the cells, contexts and clocks are kept once; each conflicting
 * pair goes to every checker that keeps the earlier access.
 *
 * Shadow cell: 8 bytes per 4-byte word, FastTrack style:
 *   w   last write (every checker keeps it)
 *   r   last read (every checker keeps it), or RSET|index of a read set
 *       whose entries say which checkers keep them
 * Each names (context id, epoch) as an interned instruction id and a lane
 * (hbcore.c, hb_pcell).  An epoch packs (stamp:26 | converged:1 | lane:5).
 * A context id names an interned (unit, site, access kind, atomic scope,
 * weak) tuple; an instruction, a (context id, stamp, converged) triple: the
 * lanes of one warp instruction share both, so a cell stays small.
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
    uint8_t scope;       /* strong accesses: wr_scope; 0: weak, or a host copy */
    uint8_t weak;        /* plain weak access */
    uint8_t writes;      /* a store, or an atomic that writes (not a load) */
    uint64_t seq;        /* latest trace position of this context */
} wr_hb_ctx;

#define WR_EP_LANE(ep) ((ep) & 31u)
#define WR_EP_CONV(ep) (((ep) >> 5) & 1u)
#define WR_EP_STAMP(ep) ((ep) >> 6)

typedef struct wr_hbe wr_hbe;

/* How many atomic accesses a word keeps beside its last write for later
 * plain accesses to race with (hbcore.c, kept_for_atomics): an older one
 * may be forgotten, and a race with it missed (ENGINES.md, vc). */
#define WR_HB_KEPT_ATOMICS 2

/* The earlier access of a pair, as a decide function sees it: what the
 * engine keeps of every context densely (its context record, wr_hbe_ctx,
 * lies in a large array: reading it for every pair was a cache miss a
 * check on recordings of many warps). */
typedef struct wr_hb_prev {
    uint32_t ctx;        /* its context (wr_hbe_ctx) */
    uint32_t unit;       /* = wr_hbe_ctx(e, ctx)->unit */
    uint32_t ep;         /* its epoch: stamp, lane, converged (WR_EP_*) */
    bool atomic;         /* kind == WR_KIND_ATOMIC */
    bool weak;           /* a plain weak access */
} wr_hb_prev;

/* Is prev against the current access (cur by lane `lane` of w) a race?
 * Both conflict (one writes) and are not the same instruction.  Return
 * true and set *verdict to report it. */
typedef bool (*wr_hbe_decide_fn)(wr_hbe *e, const wr_hb_warp *w, const wr_hb_prev *prev,
                                 const wr_hb_ctx *cur, unsigned lane, uint8_t *verdict);

/* What an engine built on hbcore decides (its wr_engine_ops.pass_param). */
typedef struct wr_hb_checker {
    unsigned layers;         /* clock layers it asks about (vclock.h) */
    unsigned prune_layer;    /* a read ordered before a later read in this
                                layer is superseded by it */
    uint8_t intra_verdict;   /* verdict of a same-instruction race */
    /* 0: decide sees every pair of atomics.  Else decide would say "no
     * race" for every pair of atomics whose narrower scope is at least this
     * one (an atomic's scope is at least WR_SCOPE_BLOCK), and such pairs are
     * not handed to it: a histogram's bins meet one per lane */
    uint8_t atomic_pairs_free_from;
    wr_hbe_decide_fn decide;
} wr_hb_checker;

#define WR_HBE_MAX_CHECKERS 4

/* One shadow state and one set of clocks (as many layers as the most
 * demanding checker) for n checkers, n <= WR_HBE_MAX_CHECKERS.  Every
 * checker sees exactly the pairs it would see alone: a read set keeps, per
 * entry, which checkers still keep that read.  wr_hbe_new is the one-engine
 * case (cfg->engine_index); wr_hbe_create_pass is wr_engine_ops.create_pass
 * for engines whose pass_param is a wr_hb_checker. */
wr_hbe *wr_hbe_new(const wr_engine_config *cfg, const wr_hb_checker *checker);
void *wr_hbe_create_pass(const wr_engine_config *cfg, const wr_pass_member *members, unsigned n);
void wr_hbe_event(wr_hbe *e, const wr_event *ev);
uint64_t wr_hbe_words(const wr_hbe *e);
/* The shadow pages this instance holds now (for tests: a launch's shared
 * pages go at its end). */
size_t wr_hbe_shadow_pages(const wr_hbe *e);
void wr_hbe_free(wr_hbe *e);
wr_hb *wr_hbe_hb(wr_hbe *e);

/* Tests: collect the contexts no cell names (hbcore.c, ctx_collect) before
 * every n-th access of every engine made from now on, instead of when the
 * table is full; 0 restores that. */
void wr_hbe_collect_every(uint32_t accesses);
/* Whether the coalesced word loop may give a word the answer of the word
 * before it when their cells look alike from their lanes (the default);
 * tests turn it off to hold it to the word-by-word checks.  Not
 * thread-safe: call before creating instances. */
void wr_hbe_allow_word_memo(bool allow);

/* Helper for decide functions: is prev ordered before w's lane now? */
bool wr_hbe_ordered(wr_hbe *e, const wr_hb_warp *w, unsigned layer, const wr_hb_prev *prev,
                    unsigned lane);
/* The context record of id `ctx` (a wr_hb_prev's). */
const wr_hb_ctx *wr_hbe_ctx(const wr_hbe *e, uint32_t ctx);

/* Is the word being checked a synchronization word (flag or lock)? */
bool wr_hbe_cur_sync_word(wr_hbe *e);

#endif

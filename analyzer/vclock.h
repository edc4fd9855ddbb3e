/*
 * vclock.h: happens-before machinery shared by the vc and scoped engines.
 *
 * Clocks (clock.h) map keys to values in shared chunks.  A key is
 * either a *unit* (a warp of a launch, or one host copy) or a *stream*
 * (WR_HB_STREAM_KEY | slot), whose value is a position in that stream: "all
 * work enqueued on the stream up to position p has completed".  Stream
 * entries summarise whole kernels, so a later kernel never carries one entry
 * per warp of an earlier one.
 *
 * A warp's clock is split in three parts:
 *   - base: the knowledge of its launch at start (shared by all its warps);
 *   - blk:  a dense vector over the warps of its own block (barriers); what
 *           orders the block's own warps is read from here alone;
 *   - ext:  everything the warp learned by acquires and barriers (other
 *           blocks, other launches, the host; entries of its own block too,
 *           never above blk's, kept so that ext shares whole chunks with
 *           the clocks it joined, clock.h).
 * The warp's own component is its instruction stamp `c`, bumped by every
 * access instruction and every synchronization of the warp, so (unit, c)
 * names one instruction.  An access stamped s by unit u is ordered before a
 * clock K iff K[u] >= s, or K knows the completion of u's stream item.
 *
 * Lanes of one warp share the unit; intra-warp ordering is kept apart (see
 * wr_hb_intra_ordered).  The first instruction after a full reconvergence
 * (start, full-mask __syncwarp, barrier) defines the warp's lockstep group;
 * while every instruction runs with exactly that mask the warp is converged
 * and its instructions are ordered for all lanes of the group.  Once a mask
 * differs the warp is diverged until the next full reconvergence: then only
 * the same lane, a __syncwarp whose mask holds both lanes, a barrier or
 * (outside the barrier-only layer) an acquire of the warp's own release
 * orders two lanes (Volta+ independent thread scheduling).
 *
 * Layers: the vc engine keeps one layer (scope-oblivious).  The scoped engine
 * keeps three parallel layers over the same events:
 *   WR_HB_OBL    scope-oblivious happens-before (as vc);
 *   WR_HB_SCOPED scoped happens-before (a synchronization joins only when its
 *                scopes hold both parties; orderings compose transitively,
 *                HRF-indirect);
 *   WR_HB_BAR    only the orderings that also hold for weak accesses:
 *                program order, barriers, warp syncs, kernel/stream/host.
 */
#ifndef WARPRACE_VCLOCK_H
#define WARPRACE_VCLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "finding.h"
#include "warprace/event.h"

#define WR_HB_STREAM_KEY 0x80000000u
#define WR_HB_MAX_LAYERS 3
#define WR_HB_ENG_CTX 16  /* contexts a warp lists (eng_ctx) */
#define WR_HB_OBL 0
#define WR_HB_SCOPED 1
#define WR_HB_BAR 2

#define WR_SNAP_EPOCHS 4

/* An immutable, reference-counted clock (what a release publishes). */
typedef struct wr_vc_snap {
    uint32_t refs;
    uint8_t narrow;      /* scoped: a too-narrow sync the releaser went through */
    /* c is the join of units eu[i]'s whole clocks when they first published
     * stamps es[i] (nep of them; 0: unknown origin): whoever knows every
     * (eu[i], es[i]) holds c */
    uint8_t nep;
    uint32_t eu[WR_SNAP_EPOCHS], es[WR_SNAP_EPOCHS];
    wr_vclock c;
} wr_vc_snap;

void wr_snap_ref(wr_vc_snap *s);
void wr_snap_unref(wr_vc_snap *s);

/* ---- the happens-before state ---- */
typedef struct wr_hb wr_hb;
typedef struct wr_hb_warp wr_hb_warp;

typedef struct wr_hb_unit {
    uint32_t launch;     /* internal launch index (also host copies) */
    uint32_t launch_id;  /* recorder launch id, 0 for a host copy */
    uint32_t block;      /* UINT32_MAX for a host copy */
    uint32_t warp;       /* UINT32_MAX for a host copy */
} wr_hb_unit;

/* The current actor of an access: a warp, or a host copy's pseudo-warp. */
struct wr_hb_warp {
    uint32_t unit;
    uint32_t c;              /* instruction stamp */
    uint32_t launch;         /* internal launch index */
    uint32_t block;          /* UINT32_MAX for a host copy */
    uint32_t widx;
    uint32_t cluster;
    uint32_t full_mask;      /* lanes that exist in this warp */
    uint32_t group_mask;     /* lanes in lockstep since the last full sync (0: none yet) */
    uint32_t group_since;    /* stamp of the group's first instruction */
    uint32_t conv_last;      /* stamp of the group's latest lockstep instruction */
    uint8_t diverged;
    uint8_t conv;            /* the current instruction ran converged */
    uint8_t narrow;          /* scoped: last too-narrow sync seen (verdict) */
    uint8_t has_fence;
    uint8_t fence_scope;
    uint8_t fence_of_barrier; /* the last fence was a barrier's (barrier_arrival) */
    uint8_t xbar_wait;       /* waits at a cluster or grid barrier (its scope) */
    uint8_t xbar_armed;      /* arrived at one (ARRIVE) and not waited yet */
    uint32_t fence_c;        /* stamp at the last fence (release pattern) */
    uint32_t xbar_phase, xbar_at;  /* xbar_armed: the phase, the arrival's index */
    uint32_t *blk[WR_HB_MAX_LAYERS];  /* dense over the block's warps, or NULL */
    wr_vclock ext[WR_HB_MAX_LAYERS];
    /* Ordering between lanes.  lane_floor and pair come from barriers and
     * warp syncs, and hold in every layer; acq_floor and lane_ord come from
     * acquires that brought the warp's own stamp back (its own release, or
     * a round trip through another warp), and hold only in the layer that
     * took the acquire: the scope-oblivious one (0), the scoped one (1)
     * where the scopes held, never the barrier-only one */
    uint32_t lane_floor;     /* accesses of any lane stamped <= value are ordered */
    uint32_t *pair;          /* [32*32]: pair[b*32+a]: lane a's accesses stamped <= value
                              * are ordered before lane b (partial __syncwarp) */
    uint32_t acq_floor[2];   /* [layer]: all lanes acquired: any lane's accesses <= value */
    uint32_t *lane_ord;      /* [2*32]: [layer*32+b]: lane b acquired: any lane's
                              * accesses <= value */
    void *pend;              /* pending acquires (CAS before a fence) */
    uint32_t npend;
    uint64_t held[4];        /* words this warp CAS'd (lock idiom), ring */
    uint8_t nheld;
    wr_vc_snap *snap[WR_HB_MAX_LAYERS]; /* cached flattened clock */
    uint32_t snap_own;
    uint32_t pub_hi;         /* highest own stamp published (release, barrier) */
    uint32_t eng_ctx[WR_HB_ENG_CTX]; /* the engine's: ids of this unit's first contexts
                              * (0: none), zeroed with the warp, never read here */
    uint32_t eng_sig[WR_HB_ENG_CTX]; /* the engine's: what each of them is (its site
                              * and flags), so that finding one reads no context */
    struct wr_hb_block *blkp;
};

/* keep_all_layers false (the default): a layer keeps no clocks of its own
 * while it has taken exactly the orderings of WR_HB_OBL (a kernel synced
 * only by barriers, or only by synchronization of sufficient scope) and
 * reads OBL's; true keeps every layer apart from the start.  The answers
 * are the same either way; tests compare them. */
wr_hb *wr_hb_new(unsigned layers, bool keep_all_layers);
void wr_hb_free(wr_hb *hb);

/* Synchronization part of every non-access event (all shards). */
void wr_hb_event(wr_hb *hb, const wr_event *ev);

/* Access events: begin stamps the instruction and returns the warp (never
 * NULL); the engine checks its words; end applies the release / acquire
 * semantics of strong accesses (atomics, and plain accesses with a
 * non-weak order: volatile = relaxed at system scope, PTX's release and
 * acquire patterns) for every word (all shards). */
wr_hb_warp *wr_hb_access_begin(wr_hb *hb, const wr_access *a);
/* Is a strong: an atomic, or a plain access whose order is not weak? */
bool wr_hb_strong(const wr_access *a);
/* A strong access's scope: its own, else an atomic's device and a strong
 * plain access's system (volatile is relaxed at system scope). */
uint8_t wr_hb_strong_scope(const wr_access *a);
/* Does strong access a acquire at its words when it ends?  A strong read
 * does, unless it is a relaxed CAS (which acquires at the next fence: the
 * lock idiom). */
bool wr_hb_acquires_at_once(const wr_access *a);
void wr_hb_access_end(wr_hb *hb, wr_hb_warp *w, const wr_access *a);

/* Host copies: begin returns a pseudo-warp standing for the copy (one unit);
 * end retires it and applies the host-side ordering of the copy. */
wr_hb_warp *wr_hb_copy_begin(wr_hb *hb, const wr_host_copy *c);
void wr_hb_copy_end(wr_hb *hb, wr_hb_warp *w, const wr_host_copy *c);

const wr_hb_unit *wr_hb_unit_of(const wr_hb *hb, uint32_t unit);

/* Unit records are kept in chunks of WR_HB_UNIT_CHUNK consecutive units.
 * What reads a unit's record (wr_hb_knows, wr_hb_release_knows,
 * wr_hb_relation, wr_hb_race_side, wr_hb_race_class, wr_hb_unit_of) is
 * asked only of units an engine still names (an earlier access it keeps)
 * or of running warps.  wr_hb_forget_units frees every chunk but the
 * newest that holds no unit with named[chunk] set and no running warp's;
 * named has wr_hb_unit_chunks(hb) entries (it is written to).  Asking
 * about a unit of a freed chunk afterwards is a bug. */
#define WR_HB_UNIT_CHUNK_SHIFT 12
#define WR_HB_UNIT_CHUNK (1u << WR_HB_UNIT_CHUNK_SHIFT)
uint32_t wr_hb_unit_chunks(const wr_hb *hb);
void wr_hb_forget_units(wr_hb *hb, uint8_t *named);
/* Is unit u's record still kept (tests)? */
bool wr_hb_unit_kept(const wr_hb *hb, uint32_t u);

/* Whether a launch's start drops the clock entries of its own stream's
 * earlier work, which its stream position answers for (the default; see
 * launch_retire_prefix in vclock.c).  The answers are the same either way;
 * tests and fuzz_analyze compare them.  Not thread-safe: call before any
 * replay runs. */
void wr_hb_allow_retire(bool allow);

/* Calls fn for every warp of every block still running (not a host copy's
 * pseudo-warp): the engine renumbers what it keeps in eng_ctx. */
void wr_hb_foreach_warp(wr_hb *hb, void (*fn)(wr_hb_warp *w, void *ctx), void *ctx);

/* The layer whose clocks stand for `layer` now: `layer` itself once it
 * split from the scope-oblivious one, that one (WR_HB_OBL) before.
 * wr_hb_knows and wr_hb_release_knows answer for `layer` what they answer
 * for this one, and it changes only at a synchronization event or an
 * access's begin or end (an acquire that splits a layer). */
unsigned wr_hb_layer_read(const wr_hb *hb, unsigned layer);

/* Is an access (unit u, stamp s) of ANOTHER unit ordered before w's now? */
bool wr_hb_knows(const wr_hb *hb, const wr_hb_warp *w, unsigned layer, uint32_t u,
                 uint32_t s);
/* Same warp: access by lane a stamped s (conv: it ran converged) ordered
 * before lane b's current instruction in `layer`?  WR_HB_BAR: by program
 * order, lockstep, barriers and warp syncs only (what holds in every
 * layer); OBL and SCOPED: acquires of the warp's own stamp that layer
 * took count too.  Inline: the engines ask it for most words of a warp
 * that re-reads its own data. */
static inline bool wr_hb_intra_ordered(const wr_hb_warp *w, unsigned a, uint32_t s, bool conv,
                                       unsigned b, unsigned layer)
{
    if (a == b)
        return true;
    if (conv && (s < w->group_since || ((w->group_mask >> b) & 1u)))
        return true;
    if (s <= w->lane_floor)
        return true;
    if (w->pair && s <= w->pair[b * 32 + a])
        return true;
    if (layer >= WR_HB_BAR)
        return false;
    return s <= w->acq_floor[layer] || (w->lane_ord && s <= w->lane_ord[layer * 32 + b]);
}

/* Has this word been a CAS target, or carried a release of an atomic with
 * release order or after a fence (flag / lock word)?  A barrier's own fence
 * makes no flag word: an atomic written after __syncthreads() alone is
 * taken for a counter or a result. */
bool wr_hb_sync_word(wr_hb *hb, uint8_t space, uint32_t launch, uint32_t block,
                     uint64_t word);

/* Would w's acquire at this word now (an atomic read of acq_scope) bring
 * it to know unit u's stamp st in layer `layer`?  What the word's release
 * sequence carries happens before the atomic that reads it, so that
 * atomic is ordered after it already (not only the accesses after it).
 * BAR takes no acquire: false there. */
bool wr_hb_release_knows(wr_hb *hb, const wr_hb_warp *w, unsigned layer, uint8_t space,
                         uint32_t launch, uint32_t block, uint64_t word, unsigned acq_scope,
                         uint32_t u, uint32_t st);


/* The smallest scope holding both units (BLOCK, CLUSTER, DEVICE, SYSTEM). */
unsigned wr_hb_relation(const wr_hb *hb, uint32_t u1, uint32_t u2);

/* Fill a race side from a unit. */
void wr_hb_race_side(const wr_hb *hb, wr_race_access *ra, uint32_t unit, uint32_t lane,
                     uint32_t site, uint8_t kind, uint64_t seq);
uint8_t wr_hb_race_class(const wr_hb *hb, uint32_t u1, uint32_t u2);

#endif

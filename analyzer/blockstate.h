/*
 * blockstate.h: the per-block and per-warp state that fsm and lockset keep
 * for the launches whose accesses may still race (barrier counters, held
 * locks, the ring of recent accesses a report takes its first side from).
 *
 * Objects are found by (epoch, block) and warp, created zeroed on first
 * use, and dropped by the epochs' purge rule (wr_epochs_purge, epochs.h).
 * An engine's block object begins with a wr_block_head; its size and the
 * warp object's size are given at init.  Every block and warp object comes
 * from this module's pools, so a purge that keeps no block (a launch the
 * host waited for, before the next) releases them whole instead of
 * visiting a million blocks and their warps.
 *
 * A block that exited is retired (wr_blockstate_retire): of its state only
 * its warps' rings (recent and older accesses, access_ring.h) are needed
 * any more (a report's first side may be one of them), so their entries
 * are copied into a retired record of 8 + 3 x warps + 32 x entries
 * bytes, and its block and warp objects go back to the pools for the
 * blocks that start next.  A grid of a million small
 * blocks then holds the objects of its resident blocks and a record per
 * exited one, not a block and its warps (~190 bytes for one warp) per
 * block it ever ran.
 */
#ifndef WARPRACE_BLOCKSTATE_H
#define WARPRACE_BLOCKSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "access_ring.h"
#include "blocktab.h"
#include "epochs.h"
#include "xalloc.h"

typedef struct wr_block_head {
    uint32_t epoch, block;      /* block UINT32_MAX: the host's pseudo-block */
    wr_warp_slots warps;
} wr_block_head;

/* The objects of one (launch, block, warp) located lately; b NULL: empty. */
typedef struct wr_blockstate_recent {
    uint32_t launch, block, warp, epoch;
    wr_block_head *b;
    void *w;
} wr_blockstate_recent;

/* Warps of resident blocks take turns (each warp of eight 8-warp blocks
 * one access, or one warp of each of eight small blocks), so a one-entry
 * cache missed on almost every access and went to the block table; slot
 * (block * 8 + warp) mod 64 keeps 8 consecutive blocks of up to 8 warps
 * apart. */
#define WR_BLOCKSTATE_RECENT 64

/* The most bytes an engine may keep of a retired block (wr_blockstate_keep). */
#define WR_BLOCKSTATE_KEEP_MAX 64

/* Retired records come from pools by size: 32-byte steps to 512 bytes,
 * then powers of two to the largest (32 warps of WR_ACCESS_RING + WR_RING_OLDER). */
#define WR_RETIRED_CLASSES 22

typedef struct wr_blockstate {
    wr_blocktab tab;
    size_t ring_offset;             /* of the wr_access_ring in a warp object */
    size_t keep_size;               /* bytes an engine keeps of a retired block, 0 none */
    wr_pool block_pool, warp_pool;
    wr_pool retired_pools[WR_RETIRED_CLASSES];
    wr_warp_slot_pools slot_pools;
    uint32_t purged_at;
    uint32_t memo_launch, memo_epoch;   /* the epoch of the last launch asked, launch 0: none */
    wr_blockstate_recent recent[WR_BLOCKSTATE_RECENT];
} wr_blockstate;

/* A warp object of warp_size bytes holds its wr_access_ring at ring_offset. */
void wr_blockstate_init(wr_blockstate *s, size_t block_size, size_t warp_size, size_t ring_offset);

/* The epoch of a launch whose block or warp has an event (wr_epochs_of_launch,
 * through a one-launch memo; the epoch acts, wr_epochs_acts). */
static inline uint32_t wr_blockstate_epoch_of(wr_blockstate *s, wr_epochs *ep, uint32_t launch)
{
    if (launch == s->memo_launch && launch)
        return s->memo_epoch;
    s->memo_launch = launch;
    s->memo_epoch = wr_epochs_of_launch(ep, launch);
    wr_epochs_acts(ep, s->memo_epoch);   /* asked for its blocks: it runs */
    return s->memo_epoch;
}

/* The block object of (epoch, block); created (zeroed, head filled in)
 * when missing and `create`, else NULL.  A retired block has none: NULL,
 * or with `create` (accesses after its exit: a malformed trace) a new
 * object that takes the place of its retired record. */
wr_block_head *wr_blockstate_block(wr_blockstate *s, uint32_t epoch, uint32_t block, bool create);

/* The warp object of `warp` (mod 32) in b, or NULL when it was never made. */
static inline void *wr_blockstate_warp_if(const wr_block_head *b, uint32_t warp)
{
    return wr_warp_slot(&b->warps, warp);
}

/* The warp object of `warp` (mod 32) in b, created zeroed when missing. */
void *wr_blockstate_warp(wr_blockstate *s, wr_block_head *b, uint32_t warp);

void wr_blockstate_locate_slow(wr_blockstate *s, wr_epochs *ep, wr_blockstate_recent *r,
                               uint32_t launch, uint32_t block, uint32_t warp);

/* The epoch, block object and warp object of a device thread's
 * (launch, block, warp), created when missing. */
static inline void wr_blockstate_locate(wr_blockstate *s, wr_epochs *ep, uint32_t launch,
                                        uint32_t block, uint32_t warp, uint32_t *epoch,
                                        void **b, void **w)
{
    wr_blockstate_recent *r = &s->recent[(block * 8u + warp) % WR_BLOCKSTATE_RECENT];
    if (!(r->b && r->launch == launch && r->block == block && r->warp == warp))
        wr_blockstate_locate_slow(s, ep, r, launch, block, warp);
    *epoch = r->epoch;
    *b = r->b;
    *w = r->w;
}

/* Retires block (epoch, block) when it has an object (it exited): its
 * warps' ring entries go into a retired record that takes its place in
 * the table, and drop_block(b, ctx) frees the object and what it owns (as
 * at a purge).  The block's accesses stay findable with
 * wr_blockstate_find_access until the block is purged. */
void wr_blockstate_retire(wr_blockstate *s, uint32_t epoch, uint32_t block,
                          void (*drop_block)(wr_block_head *b, void *ctx), void *ctx);
/* wr_blockstate_retire that keeps keep_size bytes at `keep` (NULL: none)
 * in the retired record, for wr_blockstate_kept until the block is purged:
 * what an engine still needs of a block that exited (fsm and lockset: its
 * history of cluster and grid barriers, which tells whether its accesses
 * came before a barrier that a block still running has passed).  With
 * shared_died the record leaves out the block's accesses to its own shared
 * memory (WR_SPACE_SHARED): the caller drops those words at the exit and no
 * other block can name them (no cluster holds the block), so no report can
 * ask for them, and in a tiled kernel they are most of a warp's ring. */
void wr_blockstate_retire_keeping(wr_blockstate *s, uint32_t epoch, uint32_t block,
                                  const void *keep, bool shared_died,
                                  void (*drop_block)(wr_block_head *b, void *ctx), void *ctx);

/* Sets the size of what wr_blockstate_retire_keeping keeps (at most
 * WR_BLOCKSTATE_KEEP_MAX bytes; more keeps nothing). */
static inline void wr_blockstate_keep(wr_blockstate *s, size_t size)
{
    s->keep_size = size <= WR_BLOCKSTATE_KEEP_MAX ? size : 0;
}

/* The bytes kept of retired block (epoch, block), or NULL (not retired, or
 * retired with nothing kept). */
const void *wr_blockstate_kept(const wr_blockstate *s, uint32_t epoch, uint32_t block);

/* The newest recorded access of (block, warp, lane) that wr_ring_find
 * would give in the warp's ring (same arguments), whether the block is
 * still running or retired; NULL when none is recorded. */
const wr_ring_ent *wr_blockstate_find_access(const wr_blockstate *s, uint32_t epoch, uint32_t block,
                                             uint32_t warp, unsigned lane, uint8_t space,
                                             uint64_t addr, uint64_t skip_seq, uint32_t site,
                                             unsigned skip_kinds);

/* wr_blockstate_find_access for the word at `addr` in `space` of the
 * current access, whose owner (for a shared word) is block `owner`.  A
 * shared word is named two ways in the rings (engine.h): by its offset in
 * the accessor's own SHARED accesses, which name it only when the accessor
 * is the owner (`accessor_is_owner`, as the engine's folded block ids
 * tell), and by wr_dsmem_addr(owner, offset) in its DSMEM accesses; the
 * newer of the two matches.  Other spaces: wr_blockstate_find_access. */
const wr_ring_ent *wr_blockstate_find_word_access(const wr_blockstate *s, uint32_t epoch,
                                                  uint32_t block, uint32_t warp, unsigned lane,
                                                  uint8_t space, uint32_t owner,
                                                  bool accessor_is_owner, uint64_t addr,
                                                  uint64_t skip_seq, uint32_t site,
                                                  unsigned skip_kinds);

/* Frees a block object and its warps; drop_warp(w, ctx) first frees what
 * an engine's warp object owns (NULL: nothing). */
void wr_blockstate_drop(wr_blockstate *s, wr_block_head *b, void (*drop_warp)(void *w, void *ctx),
                        void *ctx);

/* Applies the epochs' purge rule as of epoch `newest`.  When it keeps no
 * block and `all_pooled` (the engine's blocks and warps own nothing that
 * needs freeing one by one), every block and warp goes at once and true is
 * returned: the engine then releases the pools of what its objects own.
 * Otherwise drop_block(b, ctx) is called for each block not kept; it frees
 * what the block owns and calls wr_blockstate_drop. */
bool wr_blockstate_purge(wr_blockstate *s, const wr_epochs *ep, uint32_t newest, bool all_pooled,
                         void (*drop_block)(wr_block_head *b, void *ctx), void *ctx);

/* Frees everything; drop_block(b, ctx), when not NULL, is called for each
 * block first, for what it owns outside pools. */
void wr_blockstate_free(wr_blockstate *s, void (*drop_block)(wr_block_head *b, void *ctx), void *ctx);

#endif

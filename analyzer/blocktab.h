/*
 * An open-addressing table from (epoch, block) to a caller-owned per-block
 * state object.  The fsm and lockset engines keep their block and warp
 * state in one; the table never frees a value itself except through the
 * drop callbacks.
 */
#ifndef WARPRACE_BLOCKTAB_H
#define WARPRACE_BLOCKTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xalloc.h"

/* Launches number their blocks densely from 0, so the table keeps them in
 * groups of WR_BLOCKTAB_GROUP consecutive indices, found through an
 * open-addressing directory by (epoch, block / WR_BLOCKTAB_GROUP): a
 * dense grid costs 8 bytes per block and a directory slot per group, where
 * a slot per block at most half full cost 32-64 (and a rebuild of them all
 * at every doubling).  A block alone in its group costs the group, about
 * 270 bytes. */
#define WR_BLOCKTAB_GROUP_BITS 5
#define WR_BLOCKTAB_GROUP (1u << WR_BLOCKTAB_GROUP_BITS)

typedef struct wr_blocktab_group {
    uint32_t present;       /* bit i: vals[i] is set */
    void *vals[WR_BLOCKTAB_GROUP];
} wr_blocktab_group;

typedef struct wr_blocktab_slot {
    uint32_t epoch, group;  /* group: block / WR_BLOCKTAB_GROUP */
    wr_blocktab_group *g;   /* NULL: empty slot */
} wr_blocktab_slot;

/* Zeroed = empty. */
typedef struct wr_blocktab {
    wr_blocktab_slot *slots;
    uint32_t cap;           /* directory: 0 or a power of two, at most half full */
    uint32_t ngroups;
    uint32_t count;         /* values stored */
    wr_pool groups;
} wr_blocktab;

/* The value stored for (epoch, block), or NULL. */
void *wr_blocktab_get(const wr_blocktab *t, uint32_t epoch, uint32_t block);
/* Stores val (not NULL) for a key that is not in the table. */
void wr_blocktab_put(wr_blocktab *t, uint32_t epoch, uint32_t block, void *val);
/* Where the value of (epoch, block) is kept (to replace it), or NULL. */
void **wr_blocktab_ref(const wr_blocktab *t, uint32_t epoch, uint32_t block);
/* Removes the entry of (epoch, block), when there is one. */
void wr_blocktab_remove(wr_blocktab *t, uint32_t epoch, uint32_t block);
/* Whether to keep the entry of (epoch, block).  Decided from the key alone,
 * so that a pass over a million blocks reads the table and not the blocks. */
typedef bool (*wr_blocktab_keep_fn)(uint32_t epoch, uint32_t block, void *ctx);

/* Keeps the entries for which keep holds and hands the others to
 * drop(val, ctx). */
void wr_blocktab_filter(wr_blocktab *t, wr_blocktab_keep_fn keep,
                        void (*drop)(void *val, void *ctx), void *ctx);
/* Whether keep holds for no entry (true for an empty table).  Reads only
 * the keys: a caller whose values all come from pools can then empty the
 * table (wr_blocktab_free, drop NULL) and release its pools. */
bool wr_blocktab_keeps_none(const wr_blocktab *t, wr_blocktab_keep_fn keep, void *ctx);
/* Hands every value to drop(val, ctx) (drop NULL: the values are owned
 * elsewhere) and empties the table, which stays usable. */
void wr_blocktab_free(wr_blocktab *t, void (*drop)(void *val, void *ctx), void *ctx);

/* A block's per-warp state objects by warp index (0..31).  Grids of small
 * blocks come by the million and use one or a few of their 32 slots, so
 * warp 0's slot is inline and the others live in an array that grows to the
 * highest warp seen (32 inline pointers were 256 bytes of every block).
 * The arrays come from pools by size (1, 2, 4, 8, 16 or 31 slots), owned by
 * the caller: like the blocks and warps themselves, they then go with the
 * pools, and dropping a launch's blocks need not visit each block. */
typedef struct wr_warp_slots {
    void *first;            /* warp 0 */
    void **more;            /* warps 1..cap, NULL while cap is 0 */
    uint32_t cap;
} wr_warp_slots;

#define WR_WARP_SLOT_SIZES 6
typedef struct wr_warp_slot_pools {
    wr_pool by_size[WR_WARP_SLOT_SIZES];
} wr_warp_slot_pools;

void wr_warp_slot_pools_init(wr_warp_slot_pools *p);
/* Frees every array handed out (wr_pool_release). */
void wr_warp_slot_pools_release(wr_warp_slot_pools *p);

/* The object of `warp` (taken mod 32), NULL when none was set. */
static inline void *wr_warp_slot(const wr_warp_slots *s, uint32_t warp)
{
    warp &= 31u;
    if (!warp)
        return s->first;
    return warp <= s->cap ? s->more[warp - 1] : NULL;
}

/* Where the object of `warp` (mod 32) is kept, grown to hold it. */
void **wr_warp_slot_ref(wr_warp_slots *s, uint32_t warp, wr_warp_slot_pools *pools);

/* Hands every object to drop(obj, ctx) (drop NULL: owned elsewhere) and
 * puts the array back into its pool; the slots are empty afterwards. */
void wr_warp_slots_free(wr_warp_slots *s, wr_warp_slot_pools *pools,
                        void (*drop)(void *obj, void *ctx), void *ctx);

#endif

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

typedef struct wr_blocktab_slot {
    uint32_t epoch, block;
    void *val;              /* NULL: empty slot */
} wr_blocktab_slot;

typedef struct wr_blocktab {
    wr_blocktab_slot *slots;
    uint32_t cap;           /* 0 or a power of two, at most half full */
    uint32_t count;
} wr_blocktab;

/* The value stored for (epoch, block), or NULL. */
void *wr_blocktab_get(const wr_blocktab *t, uint32_t epoch, uint32_t block);
/* Stores val (not NULL) for a key that is not in the table. */
void wr_blocktab_put(wr_blocktab *t, uint32_t epoch, uint32_t block, void *val);
/* Keeps the entries for which keep(val, ctx) holds and hands the others to
 * drop(val, ctx). */
void wr_blocktab_filter(wr_blocktab *t, bool (*keep)(void *val, void *ctx),
                        void (*drop)(void *val, void *ctx), void *ctx);
/* Hands every value to drop(val, ctx) (drop NULL: the values are owned
 * elsewhere) and empties the table. */
void wr_blocktab_free(wr_blocktab *t, void (*drop)(void *val, void *ctx), void *ctx);

/* A block's per-warp state objects by warp index (0..31).  Grids of small
 * blocks come by the million and use one or a few of their 32 slots, so
 * warp 0's slot is inline and the others live in an array that grows to the
 * highest warp seen (32 inline pointers were 256 bytes of every block). */
typedef struct wr_warp_slots {
    void *first;            /* warp 0 */
    void **more;            /* warps 1..cap, NULL while cap is 0 */
    uint32_t cap;
} wr_warp_slots;

/* The object of `warp` (taken mod 32), NULL when none was set. */
static inline void *wr_warp_slot(const wr_warp_slots *s, uint32_t warp)
{
    warp &= 31u;
    if (!warp)
        return s->first;
    return warp <= s->cap ? s->more[warp - 1] : NULL;
}

/* Where the object of `warp` (mod 32) is kept, grown to hold it. */
void **wr_warp_slot_ref(wr_warp_slots *s, uint32_t warp);

/* Hands every object to drop(obj, ctx) (drop NULL: owned elsewhere) and
 * frees the array; the slots are empty afterwards. */
void wr_warp_slots_free(wr_warp_slots *s, void (*drop)(void *obj, void *ctx), void *ctx);

#endif

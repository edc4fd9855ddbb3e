/*
 * An open-addressing table from (epoch, block) to a caller-owned per-block
 * state object.  The fsm and lockset engines keep their block and warp
 * state in one; the table never frees a value itself except through the
 * drop callbacks.
 */
#ifndef WARPRACE_BLOCKTAB_H
#define WARPRACE_BLOCKTAB_H

#include <stdbool.h>
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

#endif

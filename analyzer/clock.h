/*
 * clock.h: vector clocks as persistent, structurally shared chunks.
 *
 * A clock maps 32-bit keys to 32-bit values (0 = absent).  Keys are grouped
 * in chunks of WR_VC_CHUNK consecutive keys; a clock is a sorted directory of
 * (chunk index, chunk pointer).  Chunks are reference-counted and shared
 * between clocks: a copy copies the directory only, and a join that finds
 * the source's chunk pointer already in the destination skips it, adopts the
 * source's chunk when it holds everything the destination's does, and makes
 * a new chunk only where both hold something the other lacks (in place when
 * the destination owns its chunk alone).
 *
 * Why: vc and scoped units (warps) are numbered in the order they appear, so
 * what a join brings is mostly a few recent chunks; everything else is
 * either the same chunk (pointer-equal, one compare) or was published by
 * the same release.  A lock-heavy kernel whose clocks hold an entry for
 * nearly every warp thus costs a directory walk per acquire and per release
 * rather than a merge of every entry, and the locks' published clocks share
 * their chunks instead of holding a copy each.
 *
 * Contract:
 *   - a zero-initialised wr_vclock is the empty clock;
 *   - no function keeps a reference to its arguments beyond what it stores
 *     in its destination; chunks are never shared between threads (each
 *     wr_hb owns the clocks it builds), so reference counts are plain;
 *   - a join's result is the entry-wise maximum whatever the sharing: which
 *     chunk pointers end up shared affects memory and time only.
 */
#ifndef WARPRACE_CLOCK_H
#define WARPRACE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define WR_VC_CHUNK_SHIFT 6
#define WR_VC_CHUNK (1u << WR_VC_CHUNK_SHIFT)

typedef struct wr_vc_chunk {
    uint32_t refs;
    uint32_t v[WR_VC_CHUNK];
} wr_vc_chunk;

typedef struct wr_vc_slot {
    uint32_t idx;            /* key >> WR_VC_CHUNK_SHIFT */
    wr_vc_chunk *c;
} wr_vc_slot;

typedef struct wr_vclock {
    wr_vc_slot *s;           /* sorted by idx */
    uint32_t n, cap;
} wr_vclock;

uint32_t wr_vc_get(const wr_vclock *c, uint32_t k);
/* c[k] = max(c[k], v) */
void wr_vc_set_max(wr_vclock *c, uint32_t k, uint32_t v);
/* c[k] = v exactly (v > 0) */
void wr_vc_set(wr_vclock *c, uint32_t k, uint32_t v);
/* dst = dst join src; returns true when some value of dst grew. */
bool wr_vc_join(wr_vclock *dst, const wr_vclock *src);
/* dst join= the chunks of src at chunk index >= from_idx (keys >=
 * from_idx << WR_VC_CHUNK_SHIFT); dst's own chunks below stay as they
 * are.  Returns true when some value of dst grew. */
bool wr_vc_join_from(wr_vclock *dst, const wr_vclock *src, uint32_t from_idx);
/* Removes every chunk of c below chunk index idx. */
void wr_vc_drop_below(wr_vclock *c, uint32_t idx);
/* dst = src (shares src's chunks). */
void wr_vc_copy(wr_vclock *dst, const wr_vclock *src);
void wr_vc_clear(wr_vclock *c);
void wr_vc_free(wr_vclock *c);

/* out[i] = max(out[i], c[k0 + i]) for i < n; returns true when out grew. */
bool wr_vc_max_into(const wr_vclock *c, uint32_t k0, uint32_t n, uint32_t *out);
/* c[k0 + i] = max(c[k0 + i], in[i]) for i < n (zeros skipped). */
void wr_vc_max_from(wr_vclock *c, uint32_t k0, uint32_t n, const uint32_t *in);

/* The first key >= from that has a value: true, with *key and *val; false
 * when there is none. */
bool wr_vc_next(const wr_vclock *c, uint32_t from, uint32_t *key, uint32_t *val);

/* Whether joins compare chunks in AVX2 where the CPU has AVX2 (the default;
 * chosen at run time, the build targets plain x86-64).  Both forms give
 * the same clocks and share chunks alike; tests turn the AVX2 form off to
 * hold the portable loop to that.  Not thread-safe: call before any join
 * runs on another thread. */
void wr_vc_allow_simd(bool allow);

/* Keys with a value (for tests and statistics). */
uint64_t wr_vc_count(const wr_vclock *c);

#endif

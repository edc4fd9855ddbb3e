/*
 * The engine interface.  Each engine lives in one file (engine_<name>.c)
 * and exports one wr_engine_ops; the table in engine_table.c lists them.
 * Adding an engine = one file + one table entry.
 *
 * An engine instance owns its shadow state for one shard of the address
 * space.  The driver gives every instance EVERY event in trace order
 * (synchronization must be seen by all shards); for WR_EV_ACCESS and
 * WR_EV_HOST_COPY an instance handles only the words for which
 * wr_shard_of() gives cfg->shard.  The per-word result must not depend on the
 * number of shards, so findings are identical for any --threads.
 *
 * Engines know nothing of files, threads or SQLite: they see decoded events
 * and report wr_race to their wr_findings.
 */
#ifndef WARPRACE_ENGINE_H
#define WARPRACE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "finding.h"
#include "warprace/event.h"

/* Shadow granularity: one shadow word per 4-byte word (smaller accesses map
 * to the word that holds them; 8/16-byte accesses cover 2/4 words). */
#define WR_WORD_SHIFT 2

typedef struct wr_engine_config {
    uint32_t shard;         /* this instance's shard, 0..shards-1 */
    uint32_t shards;        /* >= 1 */
    uint8_t engine_index;   /* goes into wr_race.engine */
    wr_findings *findings;  /* where to report */
    bool keep_all_layers;   /* vc/scoped: see wr_hb_new (tests, cross-checks) */
} wr_engine_config;

/* Shards own runs of 2^WR_SHARD_RUN_SHIFT consecutive words: the size of a
 * shadow page (shadow.h), so a shard never allocates a page it fills only
 * partly, and a coalesced warp access almost always falls in one run. */
#define WR_SHARD_RUN_SHIFT 10

/* The shard that owns the word at (space, launch, block, addr).  Shared
 * memory words are distinct per (launch, block).  Local memory is private to
 * a thread, so no two threads can race on it: engines skip local accesses. */
static inline uint32_t wr_shard_of(uint8_t space, uint32_t launch, uint32_t block,
                                   uint64_t addr, uint32_t shards)
{
    if (shards <= 1)
        return 0;
    uint64_t key = addr >> (WR_WORD_SHIFT + WR_SHARD_RUN_SHIFT);
    if (space != 0)
        key ^= ((uint64_t)launch * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)block << 40) ^ space;
    key = (key ^ (key >> 29)) * 0xBF58476D1CE4E5B9ull;
    /* the well-mixed high half scaled to [0, shards): a multiply where a
     * 64-bit division would cost tens of cycles on every lane */
    return (uint32_t)(((key >> 32) * shards) >> 32);
}

/* Walks the global-space words [*next, last] (a host copy's range) one
 * shard run at a time, skipping the runs of other shards whole: returns
 * true with the words [*first, *end] of the next run this shard owns (they
 * lie in one shadow page, see shadow.h) and advances *next past it; false
 * when no word is left. */
static inline bool wr_next_owned_global_run(uint64_t *next, uint64_t last, uint32_t shard,
                                            uint32_t shards, uint64_t *first, uint64_t *end)
{
    while (*next <= last) {
        uint64_t w = *next;
        uint64_t run_end = w | ((1ull << WR_SHARD_RUN_SHIFT) - 1);
        if (run_end > last)
            run_end = last;
        *next = run_end + 1;
        if (wr_shard_of(WR_SPACE_GLOBAL, 0, 0, w << WR_WORD_SHIFT, shards) == shard) {
            *first = w;
            *end = run_end;
            return true;
        }
    }
    return false;
}

/* Distributed shared memory (WR_SPACE_DSMEM): an access whose lanes name
 * words of other blocks' shared memory is, for the shadow state, the
 * SHARED accesses of the blocks it touches, each one the word its owner's
 * own shared accesses name.  wr_dsmem_next_part() hands out those parts
 * one owner at a time, lowest lane first: *part is the access with space
 * SHARED, block = the owner, active_mask = the lanes that address it,
 * VECTOR addresses = their offsets (CAS lanes kept).  The part's block is
 * the OWNER, not the issuing warp's: an engine does its per-warp work (the
 * warp's program order, divergence, its ring) once with the whole access,
 * then its per-word work for each part.  Lanes keep their lane index. */
typedef struct wr_dsmem_parts {
    wr_access part;
    uint32_t left;              /* lanes not handed out yet */
    const wr_access *whole;
    uint64_t offset[32];
} wr_dsmem_parts;

static inline void wr_dsmem_parts_begin(wr_dsmem_parts *s, const wr_access *a)
{
    s->whole = a;
    s->left = a->active_mask;
    s->part = *a;
    s->part.space = WR_SPACE_SHARED;
    s->part.addr_mode = WR_ADDR_VECTOR;
    s->part.lane_addr = s->offset;
}

static inline bool wr_dsmem_next_part(wr_dsmem_parts *s)
{
    if (!s->left)
        return false;
    uint32_t owner = wr_dsmem_block(wr_access_lane_addr(s->whole, (unsigned)__builtin_ctz(s->left)));
    uint32_t mask = 0;
    for (uint32_t x = s->left; x; x &= x - 1) {
        unsigned lane = (unsigned)__builtin_ctz(x);
        uint64_t addr = wr_access_lane_addr(s->whole, lane);
        if (wr_dsmem_block(addr) != owner)
            continue;
        mask |= 1u << lane;
        s->offset[lane] = wr_dsmem_offset(addr);
    }
    for (uint32_t x = ~mask; x; x &= x - 1)
        s->offset[__builtin_ctz(x)] = 0;   /* inactive lanes read 0 (event.h) */
    s->left &= ~mask;
    s->part.block = owner;
    s->part.active_mask = mask;
    s->part.cas_success = s->whole->cas_success & mask;
    return true;
}

/* A race's example word (wr_race.space, .addr): a shared word that a side
 * of another block touched (through DSMEM: `remote`, as the engine knows
 * its sides' blocks) is named with its owner, as wr_dsmem_addr(owner,
 * offset) in space DSMEM, so that the example still says whose word it
 * is; otherwise as the access named it. */
static inline void wr_race_set_word(wr_race *r, uint8_t space, uint32_t owner, uint64_t addr,
                                    bool remote)
{
    r->space = space;
    r->addr = addr;
    if (space == WR_SPACE_SHARED && remote) {
        r->space = WR_SPACE_DSMEM;
        r->addr = wr_dsmem_addr(owner, (uint32_t)addr);
    }
}

/* One engine of a shared pass (wr_engine_ops.create_pass). */
typedef struct wr_pass_member {
    uint8_t engine_index;    /* its wr_race.engine */
    const void *param;       /* its wr_engine_ops.pass_param */
} wr_pass_member;

/* Synchronization an engine does not model by design (ENGINES.md), in
 * wr_engine_ops.unmodelled: the driver counts such events in a trace
 * (wr_replay_stats) and the report names them beside the engine's races,
 * so that a race on data they order reads as the engine's design, not as
 * a finding of the program. */
enum {
    WR_UNMODELLED_FENCES = 1u << 0,     /* FENCE events (and the release/acquire
                                           patterns and locks they make) */
    WR_UNMODELLED_MBARRIERS = 1u << 1,  /* BARRIER events of scope mbarrier */
};

typedef struct wr_engine_ops {
    const char *name;        /* "vc", "scoped", "lockset", "fsm" */
    const char *description; /* one line */
    void *(*create)(const wr_engine_config *cfg);
    void (*on_event)(void *self, const wr_event *ev);
    void (*finish)(void *self);           /* end of trace */
    uint64_t (*shadow_words)(void *self); /* distinct words tracked */
    void (*destroy)(void *self);
    /* Optional: one pass over the trace for several engines.  Engines with
     * the same create_pass keep the same shadow state and clocks (vc and
     * scoped: scoped's scope-oblivious clock layer is vc's, and both keep
     * FastTrack cells); selected together, they run as ONE instance,
     * create_pass(cfg, members, n), which walks the words and keeps the
     * shadow state once and reports each member's races under the member's
     * engine_index (cfg->engine_index is unused).  The driver uses the first
     * member's on_event, finish and destroy for it, and its shadow_words
     * for every member.  The findings must equal those of separate
     * instances (tests/analyze compares them). */
    void *(*create_pass)(const wr_engine_config *cfg, const wr_pass_member *members, unsigned n);
    const void *pass_param;
    unsigned unmodelled;     /* WR_UNMODELLED_* */
    /* What a thread-level access costs the engine (the pass it drives),
     * roughly, in ns on the development machine (BENCHMARKS.md): one of a
     * warp access whose lanes follow one base (coalesced, strided,
     * uniform), and one with per-lane addresses (gathers, scatters: a
     * cache miss per lane in every engine, more in some).  The driver
     * weighs the passes by them to give the heaviest pass more shards
     * (replay.h, wr_replay_plan_shards).  0: unknown, never split for
     * balance.  They decide how the work is shared, never what is found. */
    float lane_ns, gather_lane_ns;
} wr_engine_ops;

/* engine_table.c */
extern const wr_engine_ops *const wr_engines[];
extern const unsigned wr_engine_count;
/* Index of the engine named `name`, or -1. */
int wr_engine_find(const char *name);

#endif

/*
 * Findings: what an engine reports when it sees a race.
 *
 * Engines fill a wr_race and hand it to wr_findings_report(); the collector
 * groups races by identity and keeps a count and the first example (the
 * lowest trace position).  A race's identity never contains an address: it
 * is (engine, kernels, the two sites, the two access kinds, race class,
 * scope verdict), so runs and engines can be compared.  The pair is
 * canonicalised (lower (site, kind, kernel) first) so that the same race
 * seen in the other order has the same identity.
 */
#ifndef WARPRACE_FINDING_H
#define WARPRACE_FINDING_H

#include <stddef.h>
#include <stdint.h>

typedef enum wr_access_kind {
    WR_KIND_READ = 0,
    WR_KIND_WRITE = 1,
    WR_KIND_ATOMIC = 2
} wr_access_kind;

typedef enum wr_race_class {
    WR_CLASS_INTRA_WARP = 0,   /* two lanes of one warp */
    WR_CLASS_INTER_WARP = 1,   /* two warps of one block */
    WR_CLASS_INTER_BLOCK = 2,  /* two blocks of one launch */
    WR_CLASS_INTER_KERNEL = 3  /* two launches, or a launch and a host copy */
} wr_race_class;

/* Why the scoped engine considers the pair unordered (other engines: NONE). */
typedef enum wr_scope_verdict {
    WR_VERDICT_NONE = 0,
    WR_VERDICT_MISSING_SYNC = 1,        /* no synchronization at any scope */
    WR_VERDICT_SCOPE_FENCE = 2,         /* ordered only by a fence too narrow */
    WR_VERDICT_SCOPE_ATOMIC = 3,        /* atomics whose scope misses a party */
    WR_VERDICT_SCOPE_LOCK = 4,          /* a lock whose scope misses a party */
    WR_VERDICT_WEAK_ACCESS = 5          /* ordered, but an access is weak where
                                           it had to be strong */
} wr_scope_verdict;

/* One side of a race.  Host copies use launch 0, block/warp/lane UINT32_MAX. */
typedef struct wr_race_access {
    uint32_t site;      /* catalog site id, 0 = unknown */
    uint8_t kind;       /* wr_access_kind */
    uint32_t launch;
    uint32_t block;
    uint32_t warp;
    uint32_t lane;
    uint64_t seq;       /* trace position of the event */
} wr_race_access;

typedef struct wr_race {
    uint8_t engine;     /* index into the engine table (engine.h) */
    uint8_t race_class; /* wr_race_class */
    uint8_t verdict;    /* wr_scope_verdict */
    uint8_t potential;  /* 1: not ordered by any lock, but this run's order
                           did not expose it (lockset) */
    wr_race_access first;   /* earlier in the trace */
    wr_race_access second;
    uint8_t space;      /* wr_space of the word */
    uint64_t addr;      /* example address (device address, or shared/local
                           offset) */
} wr_race;

typedef struct wr_findings wr_findings;

/* A collector for one engine instance (one shard).  Not thread-safe: each
 * engine instance has its own; the driver merges them. */
wr_findings *wr_findings_new(void);
void wr_findings_free(wr_findings *f);
void wr_findings_report(wr_findings *f, const wr_race *race);
/* Adds every group of src into dst (counts summed, earliest example kept). */
void wr_findings_merge(wr_findings *dst, const wr_findings *src);

typedef struct wr_race_group {
    wr_race example;        /* canonical pair order, earliest example */
    uint64_t count;
} wr_race_group;

/* Groups sorted by (engine, identity) for a deterministic order. */
size_t wr_findings_groups(const wr_findings *f, const wr_race_group **out);

const char *wr_access_kind_name(unsigned kind);   /* read write atomic */
const char *wr_race_class_name(unsigned cls);     /* intra-warp inter-warp inter-block inter-kernel */
const char *wr_scope_verdict_name(unsigned v);    /* "" missing-sync scope-fence scope-atomic scope-lock weak-access */

#endif

/* Synthetic traces for the analyzer tests, written with the trace writer. */
#ifndef WR_TEST_ANALYZE_GEN_H
#define WR_TEST_ANALYZE_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

typedef struct gen_opts {
    uint64_t seed;
    unsigned launches;          /* kernels "gen_a" (odd) / "gen_b" (even) launches */
    unsigned blocks, warps;     /* per launch */
    unsigned steps;             /* accesses per warp between barriers */
    unsigned phases;            /* barrier-separated phases */
    unsigned words;             /* size of the global buffer in 4-byte words */
    uint64_t lost;              /* >0: a LOST marker with this count */
    uint32_t chunk_bytes;       /* writer chunk size (0 = default) */
    bool abandon_half;          /* flush after half the launches, then abandon */
    /* phases end by a block barrier, a split one (warp 0 arrives and goes
     * on: bar.arrive) or an mbarrier (each warp arrives, then waits for the
     * phase's parity), at random; else always by a block barrier */
    bool sync_mix;
} gen_opts;

typedef struct gen_result {
    uint64_t events;            /* events that reach the file (flushed) */
    uint64_t accesses, thread_accesses, launches;
} gen_result;

/* Writes the trace; 0 or -1 (message on stderr). */
int gen_trace(const char *path, const gen_opts *o, gen_result *out);

/* A test double of an engine, for driver tests independent of the real
 * engines: per word, remembers the last write and the reads since it, and
 * reports every conflicting pair of different threads (no synchronization
 * is modelled).  It honours wr_shard_of like a real engine. */
extern const wr_engine_ops gen_conflict_engine;

#endif

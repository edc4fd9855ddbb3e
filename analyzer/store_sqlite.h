/*
 * Findings -> SQLite (schema: queries/schema.sql, embedded at build time by
 * queries/embed_sql.py as wr_schema_sql[0], see analyzer/meson.build).
 *
 * wr_store_open creates the database with the schema, or checks that an
 * existing one is a warprace database of this schema version (PRAGMA
 * user_version; the expected version is read from the embedded schema's
 * "PRAGMA user_version = N" line, so schema.sql is the single source).
 *
 * wr_store_write_run writes one analysis in ONE transaction: the run row is
 * inserted with status 'running', then engine_runs, launches, allocations
 * and races, then the row is updated to 'complete' and the transaction is
 * committed.  Any failure rolls the whole run back; a process killed in the
 * middle leaves an uncommitted transaction that SQLite's journal undoes.
 * Either way no run that looks complete is left half-written.
 */
#ifndef WARPRACE_STORE_SQLITE_H
#define WARPRACE_STORE_SQLITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"
#include "warprace/trace.h"

/* The embedded queries/schema.sql. */
const char *wr_store_schema_sql(void);

typedef struct wr_store wr_store;

typedef struct wr_store_engine {
    const char *name;
    double seconds;
    uint64_t shadow_words;
    uint64_t races, occurrences;
} wr_store_engine;

typedef struct wr_store_launch {
    uint32_t launch;
    const char *kernel;
    uint32_t grid[3], block[3];
    uint32_t shared_bytes, stream;
    const char *site;              /* the host call site's name; "" or NULL unknown */
    bool analysed;                 /* false: left out by --kernels */
} wr_store_launch;

typedef struct wr_store_run {
    const char *name;
    const char *started_at;        /* ISO-8601 UTC; NULL = now */
    const char *trace_path;
    uint64_t trace_hash, trace_bytes;
    const char *device, *producer, *recorded_command;
    uint32_t sm_arch;
    const char *engines;           /* "vc,scoped,..." */
    unsigned threads;
    const char *options;
    uint64_t events, accesses, thread_accesses, launches, lost_events;
    bool truncated;
    double decode_seconds, wall_seconds;
    uint64_t peak_rss_bytes;
    const wr_store_engine *engine;
    size_t nengines;
    const wr_store_launch *launch;
    size_t nlaunches;
    const wr_alloc *alloc;         /* allocations of the catalog */
    size_t nallocs;
    const wr_resolved_race *race;
    size_t nraces;
    /* testing: fail (as an interruption would) after this many race rows;
     * 0 = never */
    size_t fail_after_races;
    /* testing: end the process with _exit(99) after this many race rows, in
     * the middle of the open transaction (as a kill would); 0 = never */
    size_t crash_after_races;
    void *priv_;                   /* storage owned by wr_store_run_from_replay */
} wr_store_run;

/* The schema version of the embedded schema. */
int wr_store_schema_version(void);

/* Opens or creates the database at path.  NULL with err set ("PATH: ...")
 * when it cannot be opened, is not a warprace database, or has another
 * schema version (the message names both versions). */
wr_store *wr_store_open(const char *path, wr_error *err);
void wr_store_close(wr_store *s);

/* Writes one run (see above).  Returns the run id (> 0), or -1 with err set
 * and nothing written. */
int64_t wr_store_write_run(wr_store *s, const wr_store_run *run, wr_error *err);

/* Fills a wr_store_run from a finished replay and its resolved races.  The
 * arrays it allocates are freed by wr_store_run_release; strings point into
 * rp and races (and into name/options/started_at, which the caller keeps). */
void wr_store_run_from_replay(wr_store_run *run, const wr_replay *rp, const char *trace_path,
                              const wr_resolved_race *races, size_t nraces);
void wr_store_run_release(wr_store_run *run);

#endif

/*
 * The replay driver: streams a trace through the selected engines.
 *
 * Threads.  The calling thread decodes (wr_reader_next) and counts; N worker
 * threads analyse.  Decoded batches go through a bounded ring (queue_batches
 * slots) that every unit of work reads in trace order; the decoder waits
 * when the unit furthest behind is queue_batches batches back, so memory
 * stays bounded whatever the trace length.  A batch is released by the last
 * unit that used it.
 *
 * Passes.  Selected engines that can share a pass (the same
 * wr_engine_ops.create_pass: vc and scoped) run as one instance, which keeps
 * their common shadow state and clocks once and reports for each of them;
 * every other engine is a pass of its own.  separate_passes turns sharing
 * off (the findings are the same; tests compare them).
 *
 * Units.  The work is split into units = one pass's instance for one shard
 * of the address space (wr_engine_config.shard = s, .shards = S, S chosen
 * per pass).  An instance handles only the access words wr_shard_of()
 * gives it and sees all synchronization; passes are independent of each
 * other.  Workers take units dynamically: a free worker runs the next
 * batch of the unit it ran last if that one has a batch ready, else of the
 * unit furthest behind that no one is running, so a unit runs on one
 * worker at a time and its batches in order (the
 * ring's mutex hands its state from worker to worker).  options.shards
 * gives every pass S shards; by default S is
 * wr_replay_default_shards(threads, passes): one shard while there are at
 * least as many passes as workers, since then the passes alone keep the
 * workers busy and no synchronization work is repeated per shard; more
 * shards only when there are more workers than passes.  Then a pass with
 * much more than its fair share of the work gets more shards
 * (wr_replay_plan_shards), judged from the first batch before any unit
 * exists: a gather's vc+scoped pass is 60% of all four engines' work, so
 * on two workers it is two units beside lockset and fsm.  Each unit reports
 * to its own wr_findings; at the end the driver merges them with
 * wr_findings_merge, whose result depends neither on S nor on which worker
 * ran what: findings are identical for any threads and shards.
 *
 * Kernel selection (--kernels REGEX, POSIX extended, searched in the kernel
 * name).  Accesses, barriers, warp syncs, fences and block marks of launches
 * whose kernel does not match are not given to the engines.  Their
 * KERNEL_LAUNCH and KERNEL_END events are kept, so an unselected launch is
 * an empty kernel in its stream: it still orders later work on that stream
 * (and events recorded after it), exactly as in the recorded run.  Host
 * copies, allocations and stream/event synchronization are always kept.
 * Races between a selected and an unselected launch are therefore not
 * reported.
 *
 * Timing.  A worker reads CLOCK_THREAD_CPUTIME_ID around each unit's pass
 * over a batch: two clock reads per unit per batch, which
 * does not distort the per-event cost.  engine_seconds[e] is the CPU time of
 * engine e's pass summed over all shards (including finish()).  decode_seconds is
 * the decoding thread's CPU time inside wr_reader_next.  wall_seconds runs
 * from wr_replay_run's start to the end of the merge.  peak_rss_bytes is
 * getrusage's ru_maxrss of the process.
 *
 * Trace hash: FNV-1a 64 over every byte of the file (trace_hash), computed
 * by the decoding thread as it reads the file (wr_reader_open_hashing), and
 * for what it did not read in order (a file whose last chunk is cut short),
 * in a second pass after the last batch was queued.  A second pass over
 * the whole file came too late: the queue holds a few batches, so the
 * workers were nearly done when it began, and it added its own time to
 * the wall time (fsm alone on a 30 M gather: 0.25 -> 0.33 s).
 */
#ifndef WARPRACE_REPLAY_H
#define WARPRACE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "finding.h"
#include "warprace/trace.h"

#define WR_REPLAY_MAX_ENGINES 16
#define WR_REPLAY_MAX_THREADS 256

/* How far the decoding has come (wr_replay_options.progress).  The
 * analysis runs behind it by at most the ring's batches. */
typedef struct wr_replay_progress {
    uint64_t offset;          /* file offset of the latest chunk decoded */
    uint64_t file_bytes;      /* the trace's size; 0 for a stream */
    uint64_t events;          /* events decoded so far */
    double seconds;           /* since wr_replay_run began */
} wr_replay_progress;

typedef struct wr_replay_options {
    /* The engines to choose from; NULL = the built-in table wr_engines.
     * wr_race.engine is an index into this table. */
    const wr_engine_ops *const *table;
    unsigned table_count;
    uint32_t engine_mask;     /* bit i selects table[i]; 0 = all */
    unsigned threads;         /* workers; 0 = the number of online CPUs */
    unsigned shards;          /* address-space shards of every pass; 0 = decided
                                 per pass (wr_replay_plan_shards) */
    const char *kernels;      /* regex selecting launches by kernel name; NULL = all */
    unsigned queue_batches;   /* ring slots; 0 = wr_replay_default_queue() */
    bool no_hash;             /* skip the trace hash (trace_hash = 0) */
    bool separate_passes;     /* one instance per engine even where engines
                                 could share a pass (create_pass) */
    bool keep_all_layers;     /* vc/scoped keep every clock layer apart even
                                 while it equals the scope-oblivious one
                                 (wr_hb_new; the findings are the same) */
    /* Called by the decoding thread after a batch is queued, at most once
     * per progress_seconds (0: 1 s), never in the first one; NULL: never. */
    void (*progress)(void *ctx, const wr_replay_progress *p);
    void *progress_ctx;
    double progress_seconds;
} wr_replay_options;

typedef struct wr_replay_stats {
    unsigned threads;
    unsigned shards;          /* the most shards any pass has */
    uint64_t events;          /* all events of the trace */
    uint64_t accesses;        /* warp-level access records */
    uint64_t thread_accesses; /* sum of popcount(active_mask) over accesses */
    uint64_t launches;
    uint64_t launches_selected;
    uint64_t skipped_events;  /* events of unselected launches not analysed */
    uint64_t lost_events;     /* sum of WR_EV_LOST counts */
    uint64_t lost_markers;    /* WR_EV_LOST events */
    uint64_t fences;          /* FENCE events (engines' WR_UNMODELLED_FENCES) */
    uint64_t mbarrier_events; /* BARRIER events of scope mbarrier */
    uint64_t batches;
    /* times a worker took up a unit other than the one it ran last (the
     * first unit of each worker counts): a worker keeps to its unit while
     * that one has batches ready (replay.c, pick_unit) */
    uint64_t unit_switches;
    bool truncated;           /* no footer or an incomplete last chunk */
    uint64_t truncated_at, truncated_bytes;
    uint64_t trace_bytes;
    uint64_t trace_hash;      /* FNV-1a 64 of the file */
    double decode_seconds, wall_seconds;
    unsigned engine_count;    /* selected engines */
    unsigned engine_index[WR_REPLAY_MAX_ENGINES]; /* their table indices */
    /* CPU time of the engine's pass, by position in engine_index: engines
     * that share a pass (pass_of equal) each show the whole pass's time */
    double engine_seconds[WR_REPLAY_MAX_ENGINES];
    unsigned passes;          /* instances per shard */
    unsigned pass_of[WR_REPLAY_MAX_ENGINES]; /* by position in engine_index */
    unsigned pass_shards[WR_REPLAY_MAX_ENGINES]; /* shards of each pass */
    uint64_t shadow_words[WR_REPLAY_MAX_ENGINES];
    uint64_t peak_rss_bytes;
} wr_replay_stats;

typedef struct wr_replay_launch {
    wr_launch launch;         /* as recorded */
    uint64_t seq;             /* trace position of the launch event */
    uint32_t site;            /* the host call site of the launch, 0 = unknown */
    bool selected;            /* analysed (matches --kernels) */
    bool ended;               /* a KERNEL_END was seen */
} wr_replay_launch;

typedef struct wr_replay_lost {
    wr_lost lost;
    uint64_t seq;
} wr_replay_lost;

/* A host copy and its trace position (wr_replay_host_copy). */
typedef struct wr_replay_copy {
    wr_host_copy copy;
    uint64_t seq;
} wr_replay_copy;

typedef struct wr_replay wr_replay;

/* The ring slots used when none are asked for: 2 * threads + 4, and 2 more
 * per unit (at most 4 units' worth) where there are fewer workers than
 * units, since a worker then takes turns among units, and runs each for
 * about as many batches as the ring holds before it switches (pick_unit in
 * replay.c).  All four engines on one worker: 12 slots rather than 6, and
 * the shipped stencil recording's wall 0.81 -> 0.70 s. */
unsigned wr_replay_default_queue(unsigned threads, unsigned units);

/* The shards per pass used when none is asked for: 1 when passes >=
 * threads, else ceil(threads / passes), so every worker has a unit. */
unsigned wr_replay_default_shards(unsigned threads, unsigned passes);

/* The shards of each pass when none is asked for.  Every pass starts with
 * wr_replay_default_shards(threads, passes); then, while the pass with the
 * most work per shard has more than WR_REPLAY_BALANCE times a worker's
 * fair share (the sum of cost over threads) and fewer shards than
 * threads, it gets one more shard.  cost[p]: pass p's estimated work (the
 * replay weighs the first batch's thread-level accesses by the engines'
 * lane_ns and gather_lane_ns); all 0 = unknown, the default for every pass.
 * Why the margin: a shard repeats its pass's synchronization work and the
 * per-access bookkeeping, so splitting a pass that is barely the longest
 * costs more than it gains (all four engines on the 2-core machine: the
 * vc+scoped pass in two shards made gathers 7-26% faster and coalesced
 * traces 5-15% slower, BENCHMARKS.md). */
#define WR_REPLAY_BALANCE 1.15
void wr_replay_plan_shards(unsigned threads, unsigned passes, const double *cost,
                           unsigned *shards);

/* Replays the trace at path.  Returns the finished replay (findings, stats,
 * catalog), or NULL with err set (unreadable or corrupt trace, bad regex,
 * bad options).  A truncated trace is not an error: it is analysed up to the
 * last complete chunk and stats.truncated is set. */
wr_replay *wr_replay_run(const char *path, const wr_replay_options *opts, wr_error *err);
void wr_replay_free(wr_replay *rp);

const wr_replay_stats *wr_replay_get_stats(const wr_replay *rp);
const wr_findings *wr_replay_findings(const wr_replay *rp);
const wr_catalog *wr_replay_catalog(const wr_replay *rp);
const wr_header *wr_replay_header(const wr_replay *rp);
const wr_engine_ops *const *wr_replay_table(const wr_replay *rp);
/* Launches in trace order. */
size_t wr_replay_launches(const wr_replay *rp, const wr_replay_launch **out);
/* The launch of that id, or NULL. */
const wr_replay_launch *wr_replay_launch_of(const wr_replay *rp, uint32_t launch);
/* A source site's name as reports give it (file:line:function, pc:0x...,
 * or "?"), malloc'd. */
char *wr_replay_site_name(const wr_replay *rp, uint32_t site);
/* LOST markers in trace order (at most the first 4096 are kept). */
/* The host copy at trace position seq (a race side by "host copy"), or NULL
 * when there is none there or it is past the first 2^20 copies, which are
 * all that is kept. */
const wr_host_copy *wr_replay_host_copy(const wr_replay *rp, uint64_t seq);
size_t wr_replay_lost_list(const wr_replay *rp, const wr_replay_lost **out);

/* ---- resolution: ids -> names, the cross-run identity ------------------- */

typedef struct wr_resolved_race {
    unsigned engine;          /* table index */
    const char *engine_name;
    char *kernel[2];          /* kernel names; "host" for a host copy */
    char *site[2];            /* "file:line:function" ("file:line" without a
                                 function), "pc:0x...", or "?" */
    uint8_t kind[2];          /* wr_access_kind */
    uint8_t race_class, verdict, potential;
    uint64_t count;
    wr_race example;          /* sides in the same order as kernel/site/kind */
    char *identity;           /* kernel_a|kernel_b|key_a|key_b|kind_a|kind_b|class, where
                                 a site's key is "basename:line" (else its name):
                                 the same race recorded through the device API
                                 (__FILE__ as compiled, __func__) and through the
                                 sanitizer path (the debug info's absolute path,
                                 the mangled name) has one identity */
    char *alloc_name;         /* allocation holding the example address, "" */
    bool has_offset;
    uint64_t offset;          /* example address - allocation base */
} wr_resolved_race;

/* Resolves the merged findings: names for kernels and sites, the pair put
 * in canonical order by (site, kind, kernel) names, and groups that have the
 * same (engine, identity, scope verdict) combined (several launches of one
 * kernel; potential = 0 when any of them was exposed).  Sorted by (engine,
 * identity, verdict).  Returns the count; *out is freed with
 * wr_resolved_free. */
size_t wr_replay_resolve(const wr_replay *rp, wr_resolved_race **out);
void wr_resolved_free(wr_resolved_race *races, size_t n);

/* FNV-1a 64 of the file (0 and errno set on error). */
uint64_t wr_file_fnv1a64(const char *path, uint64_t *bytes);
/* The same, going on from h, the hash of the file's first `from` bytes:
 * *bytes is then the file's whole size. */
uint64_t wr_file_fnv1a64_from(const char *path, uint64_t h, uint64_t from, uint64_t *bytes);

#endif

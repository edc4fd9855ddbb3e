/* The replay driver (replay.h): decode thread + sharded workers. */
#include "replay.h"
#include "findings_kernels.h"
#include "xalloc.h"
#include "warprace/demangle.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LOST_KEEP 4096
/* host copies kept for the report (wr_replay_host_copy): 24 MiB at most */
#define MAX_COPIES (1u << 20)

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- a small set of launch ids (unselected launches) --------------------- */

typedef struct u32set {
    uint32_t *keys;  /* 0 = empty (launch ids start at 1) */
    size_t n, cap;   /* cap: power of two */
} u32set;

static size_t u32hash(uint32_t k, size_t cap)
{
    return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static bool u32set_has(const u32set *s, uint32_t k)
{
    if (!s->cap || !k)
        return false;
    for (size_t i = u32hash(k, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (s->keys[i] == k)
            return true;
        if (!s->keys[i])
            return false;
    }
}

static void u32set_add(u32set *s, uint32_t k)
{
    if (!k || u32set_has(s, k))
        return;
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        uint32_t *nk = xcalloc(ncap, sizeof *nk);
        for (size_t i = 0; i < s->cap; i++)
            if (s->keys[i]) {
                size_t j = u32hash(s->keys[i], ncap);
                while (nk[j])
                    j = (j + 1) & (ncap - 1);
                nk[j] = s->keys[i];
            }
        free(s->keys);
        s->keys = nk;
        s->cap = ncap;
    }
    size_t i = u32hash(k, s->cap);
    while (s->keys[i])
        i = (i + 1) & (s->cap - 1);
    s->keys[i] = k;
    s->n++;
}

/* ---- the broadcast ring ----------------------------------------------- */

typedef struct slot {
    wr_batch batch;
    uint8_t *skip;      /* bit per event: not for the engines; NULL = none */
    uint64_t *launches; /* launch << 32 | kernel of the batch's launch events */
    size_t nlaunches;
    unsigned refs;      /* workers that have not finished it */
    bool used;
} slot;

typedef struct ring {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    slot *slots;
    unsigned cap;
    uint64_t head;      /* batches pushed */
    bool done;          /* no more batches */
} ring;

/* One engine instance for one shard: the unit of parallel work.  A unit sees
 * the batches in trace order; at most one worker runs it at a time, and the
 * ring's mutex hands it from worker to worker (so its state needs no lock). */
typedef struct unit {
    unsigned pass;                /* index into wr_replay.pass */
    void *inst;
    wr_findings *findings;
    wr_launch_kernels *kernels;   /* this unit's launch -> kernel map */
    uint64_t pos;                 /* next batch to run */
    bool running, finished;
    unsigned last_worker;         /* for affinity among equally late units */
    double seconds;
    uint64_t shadow_words;
} unit;

typedef struct worker {
    struct wr_replay *rp;
    unsigned index;
    pthread_t thread;
    struct unit *last;   /* the unit it ran last (under the ring's mutex) */
    uint64_t switches;   /* batches it ran of a unit other than its last */
} worker;

struct wr_replay {
    wr_reader *reader;
    const wr_engine_ops *const *table;
    unsigned table_count;
    wr_replay_stats stats;
    const wr_engine_ops *sel[WR_REPLAY_MAX_ENGINES];
    /* passes: the engines (positions in sel) each instance serves; the
     * first one's ops drive it */
    struct {
        unsigned member[WR_REPLAY_MAX_ENGINES];
        unsigned n;
    } pass[WR_REPLAY_MAX_ENGINES];
    ring ring;
    worker *workers;
    unit *units;
    unsigned nunits;
    wr_findings *findings;      /* merged */
    wr_replay_launch *launches;
    size_t nlaunches, caplaunches;
    wr_replay_lost *lost;
    size_t nlost;
    wr_replay_copy *copies;     /* the first MAX_COPIES host copies, in trace order */
    size_t ncopies, capcopies;
    bool have_regex;
    regex_t regex;
    u32set unselected;
};

static void run_batch(const wr_replay *rp, unit *u, const slot *s)
{
    const wr_event *ev = s->batch.events;
    size_t n = s->batch.count;
    /* known before the engine sees the batch: launch ids are unique */
    for (size_t i = 0; i < s->nlaunches; i++)
        wr_launch_kernels_set(u->kernels, (uint32_t)(s->launches[i] >> 32),
                              (uint32_t)s->launches[i]);
    const wr_engine_ops *ops = rp->sel[rp->pass[u->pass].member[0]];
    void *inst = u->inst;
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    if (s->skip) {
        for (size_t i = 0; i < n; i++)
            if (!(s->skip[i >> 3] & (1u << (i & 7))))
                ops->on_event(inst, &ev[i]);
    } else {
        for (size_t i = 0; i < n; i++)
            ops->on_event(inst, &ev[i]);
    }
    u->seconds += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
}

static void finish_unit(const wr_replay *rp, unit *u)
{
    const wr_engine_ops *ops = rp->sel[rp->pass[u->pass].member[0]];
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    if (ops->finish)
        ops->finish(u->inst);
    u->seconds += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    u->shadow_words = ops->shadow_words ? ops->shadow_words(u->inst) : 0;
    /* Freed here, by the worker, not after the join: freeing a large
     * shadow (munmap of its slabs) took about a quarter of a second per GB
     * here, and the workers free their units side by side.  The findings live
     * in the unit's collector, apart from the instance. */
    ops->destroy(u->inst);
    u->inst = NULL;
}

/* Under the ring's mutex: the unit this worker should run next, or NULL.
 * The unit it ran last, while that one has a batch ready: a switch to
 * another unit costs more than the new unit's own work, since a pass finds
 * its hot state (shadow pages and lines in use, warps' and blocks' records)
 * pushed out of this core's caches by the other pass's (all four engines
 * on one worker, the shipped stencil recording: each pass 1.4-2.2x its CPU
 * time alone when the worker switched every batch).  Otherwise the unit
 * furthest behind, since the decoder can run ahead only queue_batches
 * batches of the slowest one; among equally late units, the one this
 * worker ran last.  A unit that has caught up with the decoder is given
 * up, so the slowest one is taken in turn and the decoder never waits for
 * good. */
static unit *pick_unit(wr_replay *rp, const worker *w)
{
    const ring *r = &rp->ring;
    unsigned me = w->index;
    unit *last = w->last;
    if (last && !last->running && !last->finished && last->pos < r->head)
        return last;
    unit *best = NULL;
    for (unsigned i = 0; i < rp->nunits; i++) {
        unit *u = &rp->units[i];
        if (u->running || u->finished || (u->pos == r->head && !r->done))
            continue;
        if (!best || u->pos < best->pos ||
            (u->pos == best->pos && u->last_worker == me && best->last_worker != me))
            best = u;
    }
    return best;
}

static bool all_finished(const wr_replay *rp)
{
    for (unsigned i = 0; i < rp->nunits; i++)
        if (!rp->units[i].finished)
            return false;
    return true;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    wr_replay *rp = w->rp;
    ring *r = &rp->ring;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        unit *u = pick_unit(rp, w);
        if (!u) {
            if (r->done && all_finished(rp))
                break;
            pthread_cond_wait(&r->not_empty, &r->mu);
            continue;
        }
        u->running = true;
        u->last_worker = w->index;
        if (u != w->last)
            w->switches++;
        w->last = u;
        if (u->pos == r->head) { /* r->done: the trace is over for this unit */
            pthread_mutex_unlock(&r->mu);
            finish_unit(rp, u);
            pthread_mutex_lock(&r->mu);
            u->running = false;
            u->finished = true;
            pthread_cond_broadcast(&r->not_empty); /* others may be waiting to exit */
            continue;
        }
        slot *s = &r->slots[u->pos % r->cap];
        pthread_mutex_unlock(&r->mu);

        run_batch(rp, u, s);

        pthread_mutex_lock(&r->mu);
        u->pos++;
        u->running = false;
        if (u->pos < r->head || r->done)
            pthread_cond_signal(&r->not_empty); /* it is ready again, perhaps for another worker */
        if (--s->refs == 0) {
            wr_batch b = s->batch;
            uint8_t *skip = s->skip;
            uint64_t *launches = s->launches;
            s->used = false;
            s->skip = NULL;
            s->launches = NULL;
            s->nlaunches = 0;
            memset(&s->batch, 0, sizeof s->batch);
            pthread_cond_signal(&r->not_full);
            pthread_mutex_unlock(&r->mu);
            wr_batch_release(&b);
            free(skip);
            free(launches);
            pthread_mutex_lock(&r->mu);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

unsigned wr_replay_default_queue(unsigned threads, unsigned units)
{
    return 2 * threads + 4 + (threads < units ? 2 * (units < 4 ? units : 4) : 0);
}

unsigned wr_replay_default_shards(unsigned threads, unsigned passes)
{
    if (!passes)
        return 1;
    return threads > passes ? (threads + passes - 1) / passes : 1;
}

void wr_replay_plan_shards(unsigned threads, unsigned passes, const double *cost,
                           unsigned *shards)
{
    unsigned base = wr_replay_default_shards(threads, passes);
    double total = 0;
    for (unsigned p = 0; p < passes; p++) {
        shards[p] = base;
        total += cost ? cost[p] : 0;
    }
    if (threads < 2 || !(total > 0))
        return;
    double fair = total / threads;
    for (;;) {
        unsigned top = 0;
        for (unsigned p = 1; p < passes; p++)
            if (cost[p] / shards[p] > cost[top] / shards[top])
                top = p;
        if (shards[top] >= threads || !(cost[top] / shards[top] > WR_REPLAY_BALANCE * fair))
            return;
        shards[top]++;
    }
}

/* Pass p's estimated work on batch b (wr_replay_plan_shards): its
 * driving engine's cost per thread-level access, by address shape.  What
 * makes per-lane addresses dear is a cache miss per lane, so only the
 * lanes that reach a cache line the sample has not seen yet are costed
 * as gathers: per-lane atomics on a histogram's few bins (the synthetic
 * atomics trace) stay in the cache and cost what coalesced lanes do
 * (splitting vc+scoped there made it 5-10% slower). */
enum { SAMPLE_LINES_LOG2 = 17, SAMPLE_LANES = 1 << (SAMPLE_LINES_LOG2 - 1) };

static void estimate_pass_costs(const wr_replay *rp, const wr_batch *b, double *cost)
{
    uint64_t lanes = 0, gather_lanes = 0, sampled = 0, fresh = 0;
    const uint64_t slots = 1ull << SAMPLE_LINES_LOG2;
    uint64_t *seen = xcalloc(slots, sizeof *seen);   /* line + 1; 0 = empty */
    for (size_t i = 0; i < b->count; i++) {
        const wr_event *ev = &b->events[i];
        if (ev->kind != WR_EV_ACCESS)
            continue;
        const wr_access *a = &ev->u.access;
        uint64_t n = (uint64_t)__builtin_popcount(a->active_mask);
        if (a->addr_mode != WR_ADDR_VECTOR) {
            lanes += n;
            continue;
        }
        gather_lanes += n;
        for (uint32_t m = a->active_mask; m && sampled < SAMPLE_LANES; m &= m - 1, sampled++) {
            uint64_t key = (wr_access_lane_addr(a, (unsigned)__builtin_ctz(m)) >> 6) ^
                           ((uint64_t)a->space << 58);
            uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> (64 - SAMPLE_LINES_LOG2);
            while (seen[h] && seen[h] != key + 1)
                h = (h + 1) & (slots - 1);
            if (!seen[h]) {
                seen[h] = key + 1;
                fresh++;
            }
        }
    }
    free(seen);
    double missing = sampled ? (double)fresh / (double)sampled : 0;
    for (unsigned p = 0; p < rp->stats.passes; p++) {
        const wr_engine_ops *ops = rp->sel[rp->pass[p].member[0]];
        double gather_ns = ops->lane_ns + missing * (ops->gather_lane_ns - ops->lane_ns);
        cost[p] = (double)lanes * ops->lane_ns + (double)gather_lanes * gather_ns;
    }
}

/* Groups the selected engines into passes: an engine joins the first pass
 * whose engines share its create_pass. */
static void plan_passes(wr_replay *rp, bool separate)
{
    unsigned np = 0;
    for (unsigned e = 0; e < rp->stats.engine_count; e++) {
        unsigned p = np;
        if (!separate && rp->sel[e]->create_pass)
            for (p = 0; p < np; p++)
                if (rp->sel[rp->pass[p].member[0]]->create_pass == rp->sel[e]->create_pass)
                    break;
        if (p == np)
            rp->pass[np++].n = 0;
        rp->pass[p].member[rp->pass[p].n++] = e;
        rp->stats.pass_of[e] = p;
    }
    rp->stats.passes = np;
}

static void *create_instance(const wr_replay *rp, unsigned p, const wr_engine_config *cfg)
{
    unsigned n = rp->pass[p].n;
    const wr_engine_ops *first = rp->sel[rp->pass[p].member[0]];
    if (n == 1) {
        wr_engine_config one = *cfg;
        one.engine_index = (uint8_t)rp->stats.engine_index[rp->pass[p].member[0]];
        return first->create(&one);
    }
    wr_pass_member m[WR_REPLAY_MAX_ENGINES];
    for (unsigned i = 0; i < n; i++) {
        unsigned e = rp->pass[p].member[i];
        m[i].engine_index = (uint8_t)rp->stats.engine_index[e];
        m[i].param = rp->sel[e]->pass_param;
    }
    return first->create_pass(cfg, m, n);
}

/* ---- decoding side ------------------------------------------------------ */

static bool event_of_launch(const wr_event *ev, uint32_t *launch)
{
    switch (ev->kind) {
    case WR_EV_ACCESS: *launch = ev->u.access.launch; return true;
    case WR_EV_BARRIER: *launch = ev->u.barrier.launch; return true;
    case WR_EV_WARP_SYNC: *launch = ev->u.warp_sync.launch; return true;
    case WR_EV_FENCE: *launch = ev->u.fence.launch; return true;
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT: *launch = ev->u.block.launch; return true;
    default: return false;
    }
}

static wr_replay_launch *find_launch(const wr_replay *rp, uint32_t id)
{
    /* Launch ids are usually increasing in trace order: binary search, with
     * a linear fallback for traces where they are not. */
    size_t lo = 0, hi = rp->nlaunches;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rp->launches[mid].launch.launch < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < rp->nlaunches && rp->launches[lo].launch.launch == id)
        return &rp->launches[lo];
    for (size_t i = rp->nlaunches; i-- > 0;)
        if (rp->launches[i].launch.launch == id)
            return &rp->launches[i];
    return NULL;
}

/* Counts, records launches and LOST markers, builds the skip bits and the
 * batch's (launch, kernel) list. */
static uint8_t *scan_batch(wr_replay *rp, const wr_batch *b, uint64_t **launches, size_t *nl)
{
    wr_replay_stats *st = &rp->stats;
    uint8_t *skip = NULL;
    size_t capl = 0;
    *launches = NULL;
    *nl = 0;
    st->events += b->count;
    for (size_t i = 0; i < b->count; i++) {
        const wr_event *ev = &b->events[i];
        switch (ev->kind) {
        case WR_EV_ACCESS:
            st->accesses++;
            st->thread_accesses += (uint64_t)__builtin_popcount(ev->u.access.active_mask);
            break;
        case WR_EV_KERNEL_LAUNCH: {
            st->launches++;
            if (rp->nlaunches == rp->caplaunches) {
                rp->caplaunches = rp->caplaunches ? rp->caplaunches * 2 : 64;
                rp->launches = xrealloc(rp->launches, rp->caplaunches * sizeof *rp->launches);
            }
            if (*nl == capl) {
                capl = capl ? capl * 2 : 8;
                *launches = xrealloc(*launches, capl * sizeof **launches);
            }
            (*launches)[(*nl)++] = (uint64_t)ev->u.launch.launch << 32 | ev->u.launch.kernel;
            wr_replay_launch *l = &rp->launches[rp->nlaunches++];
            memset(l, 0, sizeof *l);
            l->launch = ev->u.launch;
            l->seq = ev->seq;
            l->site = ev->site;
            l->selected = true;
            if (rp->have_regex) {
                const wr_kernel *k = wr_catalog_kernel(wr_reader_catalog(rp->reader),
                                                       ev->u.launch.kernel);
                const char *name = k && k->name ? k->name : "";
                l->selected = wr_kernel_matches(&rp->regex, name);
                if (!l->selected)
                    u32set_add(&rp->unselected, ev->u.launch.launch);
            }
            if (l->selected)
                st->launches_selected++;
            break;
        }
        case WR_EV_KERNEL_END: {
            wr_replay_launch *l = find_launch(rp, ev->u.kernel_end.launch);
            if (l)
                l->ended = true;
            break;
        }
        case WR_EV_HOST_COPY:
            if (rp->ncopies < MAX_COPIES) {
                if (rp->ncopies == rp->capcopies) {
                    rp->capcopies = rp->capcopies ? rp->capcopies * 2 : 64;
                    rp->copies = xrealloc(rp->copies, rp->capcopies * sizeof *rp->copies);
                }
                rp->copies[rp->ncopies++] = (wr_replay_copy){ev->u.copy, ev->seq};
            }
            break;
        case WR_EV_FENCE:
            st->fences++;
            break;
        case WR_EV_BARRIER:
            st->mbarrier_events += ev->u.barrier.scope == WR_BAR_MBARRIER;
            break;
        case WR_EV_LOST:
            st->lost_events = wr_lost_add(st->lost_events, ev->u.lost.count);
            st->lost_markers++;
            if (rp->nlost < LOST_KEEP) {
                if (!rp->lost)
                    rp->lost = xmalloc(LOST_KEEP * sizeof *rp->lost);
                rp->lost[rp->nlost].lost = ev->u.lost;
                rp->lost[rp->nlost].seq = ev->seq;
                rp->nlost++;
            }
            break;
        default:
            break;
        }
        uint32_t launch;
        if (rp->unselected.n && event_of_launch(ev, &launch) &&
            u32set_has(&rp->unselected, launch)) {
            if (!skip)
                skip = xcalloc((b->count + 7) / 8, 1);
            skip[i >> 3] |= (uint8_t)(1u << (i & 7));
            st->skipped_events++;
        }
    }
    return skip;
}

uint64_t wr_file_fnv1a64(const char *path, uint64_t *bytes)
{
    return wr_file_fnv1a64_from(path, WR_FNV1A64_INIT, 0, bytes);
}

uint64_t wr_file_fnv1a64_from(const char *path, uint64_t h, uint64_t from, uint64_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (bytes)
        *bytes = 0;
    if (!f)
        return 0;
    if (from && fseeko(f, (off_t)from, SEEK_SET)) {
        fclose(f);
        return 0;
    }
    static const size_t BUF = 1 << 16;
    unsigned char *buf = xmalloc(BUF);
    uint64_t total = from;
    size_t n;
    while ((n = fread(buf, 1, BUF, f)) > 0) {
        h = wr_fnv1a64(h, buf, n);
        total += n;
    }
    int bad = ferror(f);
    fclose(f);
    free(buf);
    if (bytes)
        *bytes = total;
    if (bad) {
        errno = EIO;
        return 0;
    }
    return h;
}

static void set_err(wr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(wr_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

void wr_replay_free(wr_replay *rp)
{
    if (!rp)
        return;
    if (rp->reader)
        wr_reader_close(rp->reader);
    wr_findings_free(rp->findings);
    free(rp->launches);
    free(rp->lost);
    free(rp->copies);
    free(rp->unselected.keys);
    if (rp->have_regex)
        regfree(&rp->regex);
    free(rp);
}

wr_replay *wr_replay_run(const char *path, const wr_replay_options *opts, wr_error *err)
{
    wr_replay_options o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    double wall0 = clock_s(CLOCK_MONOTONIC);

    wr_replay *rp = xcalloc(1, sizeof *rp);
    rp->table = o.table ? o.table : wr_engines;
    rp->table_count = o.table ? o.table_count : wr_engine_count;
    if (rp->table_count > WR_REPLAY_MAX_ENGINES)
        rp->table_count = WR_REPLAY_MAX_ENGINES;
    uint32_t mask = o.engine_mask ? o.engine_mask : UINT32_MAX;
    for (unsigned i = 0; i < rp->table_count; i++)
        if (mask & (1u << i)) {
            rp->stats.engine_index[rp->stats.engine_count] = i;
            rp->sel[rp->stats.engine_count++] = rp->table[i];
        }
    if (o.engine_mask >> rp->table_count) {
        set_err(err, "engine selection names an engine that is not built");
        wr_replay_free(rp);
        return NULL;
    }
    unsigned threads = o.threads;
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    if (threads > WR_REPLAY_MAX_THREADS)
        threads = WR_REPLAY_MAX_THREADS;
    rp->stats.threads = threads;
    if (o.kernels) {
        int rc = regcomp(&rp->regex, o.kernels, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &rp->regex, msg, sizeof msg);
            set_err(err, "--kernels '%s': %s", o.kernels, msg);
            wr_replay_free(rp);
            return NULL;
        }
        rp->have_regex = true;
    }

    rp->reader = o.no_hash ? wr_reader_open(path, err) : wr_reader_open_hashing(path, err);
    if (!rp->reader) {
        wr_replay_free(rp);
        return NULL;
    }

    /* the first batch, before any unit exists: it decides the shards */
    int rc = 0;
    double decode = 0;
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    wr_batch first;
    int got_first = wr_reader_next(rp->reader, &first, err);
    decode += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    if (got_first < 0)
        rc = -1;

    /* workers and their engine instances */
    ring *r = &rp->ring;
    plan_passes(rp, o.separate_passes);
    unsigned *pshards = rp->stats.pass_shards;
    if (o.shards) {
        for (unsigned p = 0; p < rp->stats.passes; p++)
            pshards[p] = o.shards > WR_REPLAY_MAX_THREADS ? WR_REPLAY_MAX_THREADS : o.shards;
    } else {
        double cost[WR_REPLAY_MAX_ENGINES] = {0};
        if (got_first > 0 && threads > 1)
            estimate_pass_costs(rp, &first, cost);
        wr_replay_plan_shards(threads, rp->stats.passes, cost, pshards);
    }
    rp->nunits = 0;
    rp->stats.shards = 0;
    for (unsigned p = 0; p < rp->stats.passes; p++) {
        rp->nunits += pshards[p];
        if (pshards[p] > rp->stats.shards)
            rp->stats.shards = pshards[p];
    }
    r->cap = o.queue_batches ? o.queue_batches : wr_replay_default_queue(threads, rp->nunits);
    r->slots = xcalloc(r->cap, sizeof *r->slots);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->not_empty, NULL);
    pthread_cond_init(&r->not_full, NULL);
    rp->units = xcalloc(rp->nunits, sizeof *rp->units);
    unit *u = rp->units;
    for (unsigned p = 0; p < rp->stats.passes; p++)
        for (unsigned sh = 0; sh < pshards[p]; sh++, u++) {
            u->pass = p;
            u->last_worker = sh % threads;
            u->kernels = wr_launch_kernels_new();
            u->findings = wr_findings_new();
            wr_findings_use_kernels(u->findings, u->kernels);
            wr_engine_config cfg = {.shard = sh, .shards = pshards[p], .findings = u->findings,
                                    .keep_all_layers = o.keep_all_layers};
            u->inst = create_instance(rp, p, &cfg);
            if (!u->inst)
                abort();
        }
    rp->workers = xcalloc(threads, sizeof *rp->workers);
    for (unsigned t = 0; t < threads; t++) {
        rp->workers[t].rp = rp;
        rp->workers[t].index = t;
    }
    unsigned started = 0;
    for (; started < threads; started++)
        if (pthread_create(&rp->workers[started].thread, NULL, worker_main, &rp->workers[started]))
            break;

    /* decode */
    if (started < threads) {
        set_err(err, "cannot start %u analysis threads", threads);
        rc = -1;
        if (got_first > 0)
            wr_batch_release(&first);
    }
    bool have_first = got_first > 0, ended = got_first <= 0;
    double every = o.progress_seconds > 0 ? o.progress_seconds : 1.0;
    double next_progress = wall0 + every;
    while (rc == 0 && (have_first || !ended)) {
        wr_batch b;
        if (have_first) {
            b = first;
            have_first = false;
        } else {
            t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
            int got = wr_reader_next(rp->reader, &b, err);
            decode += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
            if (got <= 0) {
                rc = got;
                break;
            }
        }
        uint64_t *launches;
        size_t nl;
        uint8_t *skip = scan_batch(rp, &b, &launches, &nl);
        rp->stats.batches++;
        pthread_mutex_lock(&r->mu);
        slot *s = &r->slots[r->head % r->cap];
        while (s->used)
            pthread_cond_wait(&r->not_full, &r->mu);
        s->batch = b;
        s->skip = skip;
        s->launches = launches;
        s->nlaunches = nl;
        s->refs = rp->nunits;
        s->used = true;
        r->head++;
        pthread_cond_broadcast(&r->not_empty);
        pthread_mutex_unlock(&r->mu);
        if (o.progress) {
            double now = clock_s(CLOCK_MONOTONIC);
            if (now >= next_progress) {
                next_progress = now + every;
                const wr_reader_stats *rs = wr_reader_stats_get(rp->reader);
                wr_replay_progress pr = {.offset = b.chunk_offset,
                                         .file_bytes = rs->streamed ? 0 : rs->file_bytes,
                                         .events = rp->stats.events,
                                         .seconds = now - wall0};
                o.progress(o.progress_ctx, &pr);
            }
        }
    }
    pthread_mutex_lock(&r->mu);
    r->done = true;
    pthread_cond_broadcast(&r->not_empty);
    pthread_mutex_unlock(&r->mu);

    const wr_reader_stats *rs = wr_reader_stats_get(rp->reader);
    if (rc == 0 && !o.no_hash) {
        if (rs->streamed || rs->hashed_bytes == rs->file_bytes) {   /* hashed on the way */
            rp->stats.trace_hash = rs->stream_hash;
            rp->stats.trace_bytes = rs->file_bytes;
        } else {   /* what the reader did not read in order (a recording cut short) */
            rp->stats.trace_hash =
                wr_file_fnv1a64_from(path, rs->stream_hash, rs->hashed_bytes, &rp->stats.trace_bytes);
        }
    }

    for (unsigned t = 0; t < started; t++) {
        pthread_join(rp->workers[t].thread, NULL);
        rp->stats.unit_switches += rp->workers[t].switches;
    }
    /* (a failed start leaves batches nobody released) */
    for (unsigned i = 0; i < r->cap; i++)
        if (r->slots[i].used) {
            wr_batch_release(&r->slots[i].batch);
            free(r->slots[i].skip);
            free(r->slots[i].launches);
        }

    /* merge, in unit order (the result does not depend on it) */
    rp->findings = wr_findings_new();
    for (unsigned i = 0; i < rp->nunits; i++) {
        unit *u = &rp->units[i];
        for (unsigned i = 0; i < rp->pass[u->pass].n; i++) {
            unsigned e = rp->pass[u->pass].member[i];
            rp->stats.engine_seconds[e] += u->seconds;
            rp->stats.shadow_words[e] += u->shadow_words;
        }
        wr_findings_merge(rp->findings, u->findings);
        if (u->inst)   /* a unit no worker finished (no worker started) */
            rp->sel[rp->pass[u->pass].member[0]]->destroy(u->inst);
        wr_findings_free(u->findings);
        wr_launch_kernels_free(u->kernels);
    }
    free(rp->units);
    rp->units = NULL;
    free(rp->workers);
    rp->workers = NULL;
    free(r->slots);
    r->slots = NULL;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->not_empty);
    pthread_cond_destroy(&r->not_full);

    if (rc < 0) {
        wr_replay_free(rp);
        return NULL;
    }
    rp->stats.truncated = rs->truncated != 0;
    rp->stats.truncated_at = rs->truncated_at;
    rp->stats.truncated_bytes = rs->truncated_bytes;
    if (o.no_hash || !rp->stats.trace_bytes)
        rp->stats.trace_bytes = rs->file_bytes;
    rp->stats.decode_seconds = decode;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        rp->stats.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
    rp->stats.wall_seconds = clock_s(CLOCK_MONOTONIC) - wall0;
    return rp;
}

const wr_replay_stats *wr_replay_get_stats(const wr_replay *rp) { return &rp->stats; }
const wr_findings *wr_replay_findings(const wr_replay *rp) { return rp->findings; }
const wr_catalog *wr_replay_catalog(const wr_replay *rp) { return wr_reader_catalog(rp->reader); }
const wr_header *wr_replay_header(const wr_replay *rp) { return wr_reader_header(rp->reader); }
const wr_engine_ops *const *wr_replay_table(const wr_replay *rp) { return rp->table; }

size_t wr_replay_launches(const wr_replay *rp, const wr_replay_launch **out)
{
    *out = rp->launches;
    return rp->nlaunches;
}

const wr_host_copy *wr_replay_host_copy(const wr_replay *rp, uint64_t seq)
{
    size_t lo = 0, hi = rp->ncopies;   /* in trace order: seq increasing */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rp->copies[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rp->ncopies && rp->copies[lo].seq == seq ? &rp->copies[lo].copy : NULL;
}

size_t wr_replay_lost_list(const wr_replay *rp, const wr_replay_lost **out)
{
    *out = rp->lost;
    return rp->nlost;
}

/* ---- resolution ---------------------------------------------------------- */

static char *kernel_name(const wr_replay *rp, uint32_t launch)
{
    if (launch == 0)
        return xstrdup("host");
    const wr_replay_launch *l = find_launch(rp, launch);
    if (l) {
        const wr_kernel *k = wr_catalog_kernel(wr_replay_catalog(rp), l->launch.kernel);
        if (k && k->name && k->name[0])
            return xstrdup(k->name);
        return xasprintf("kernel#%" PRIu32, l->launch.kernel);
    }
    return xasprintf("launch#%" PRIu32, launch);
}

char *wr_replay_site_name(const wr_replay *rp, uint32_t id)
{
    const wr_site *s = id ? wr_catalog_site(wr_replay_catalog(rp), id) : NULL;
    if (!s)
        return xstrdup("?");
    if (s->file && s->file[0]) {
        if (s->function && s->function[0])
            return xasprintf("%s:%" PRIu32 ":%s", s->file, s->line, s->function);
        return xasprintf("%s:%" PRIu32, s->file, s->line);
    }
    if (s->pc)
        return xasprintf("pc:0x%" PRIx64, s->pc);
    if (s->function && s->function[0])
        return xasprintf("?:0:%s", s->function);
    return xstrdup("?");
}

const wr_replay_launch *wr_replay_launch_of(const wr_replay *rp, uint32_t launch)
{
    return find_launch(rp, launch);
}

/* A site as the identity names it: the file's base name and the line,
 * which both recording paths give alike; else the site's name. */
static char *site_key(const wr_replay *rp, uint32_t id)
{
    const wr_site *s = id ? wr_catalog_site(wr_replay_catalog(rp), id) : NULL;
    if (!s || !s->file || !s->file[0])
        return wr_replay_site_name(rp, id);
    const char *base = strrchr(s->file, '/');
    return xasprintf("%s:%" PRIu32, base && base[1] ? base + 1 : s->file, s->line);
}

static int side_cmp(const wr_resolved_race *r, char *const key[2], int a, int b)
{
    int c = strcmp(key[a], key[b]);
    if (c)
        return c;
    if (r->kind[a] != r->kind[b])
        return r->kind[a] < r->kind[b] ? -1 : 1;
    return strcmp(r->kernel[a], r->kernel[b]);
}

static int resolved_cmp(const void *pa, const void *pb)
{
    const wr_resolved_race *a = pa, *b = pb;
    if (a->engine != b->engine)
        return a->engine < b->engine ? -1 : 1;
    int c = strcmp(a->identity, b->identity);
    if (c)
        return c;
    if (a->verdict != b->verdict)
        return a->verdict < b->verdict ? -1 : 1;
    return 0;
}

static uint64_t later_seq(const wr_race *r)
{
    return r->first.seq > r->second.seq ? r->first.seq : r->second.seq;
}

static uint64_t earlier_seq(const wr_race *r)
{
    return r->first.seq < r->second.seq ? r->first.seq : r->second.seq;
}

static void resolved_clear(wr_resolved_race *r)
{
    free(r->kernel[0]);
    free(r->kernel[1]);
    free(r->site[0]);
    free(r->site[1]);
    free(r->identity);
    free(r->alloc_name);
}

void wr_resolved_free(wr_resolved_race *races, size_t n)
{
    for (size_t i = 0; i < n; i++)
        resolved_clear(&races[i]);
    free(races);
}

size_t wr_replay_resolve(const wr_replay *rp, wr_resolved_race **out)
{
    const wr_race_group *g;
    size_t n = wr_findings_groups(rp->findings, &g);
    wr_resolved_race *v = xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        wr_resolved_race *r = &v[i];
        r->example = g[i].example;
        r->engine = r->example.engine;
        r->engine_name = r->engine < rp->table_count ? rp->table[r->engine]->name : "?";
        r->race_class = r->example.race_class;
        r->verdict = r->example.verdict;
        r->potential = r->example.potential;
        r->count = g[i].count;
        const wr_race_access *side[2] = {&r->example.first, &r->example.second};
        char *key[2];
        for (int s = 0; s < 2; s++) {
            r->kernel[s] = kernel_name(rp, side[s]->launch);
            r->site[s] = wr_replay_site_name(rp, side[s]->site);
            key[s] = site_key(rp, side[s]->site);
            r->kind[s] = side[s]->kind;
        }
        int c = side_cmp(r, key, 0, 1);
        if (c > 0 || (c == 0 && r->example.first.seq > r->example.second.seq)) {
            char *t;
            t = r->kernel[0], r->kernel[0] = r->kernel[1], r->kernel[1] = t;
            t = r->site[0], r->site[0] = r->site[1], r->site[1] = t;
            t = key[0], key[0] = key[1], key[1] = t;
            uint8_t k = r->kind[0];
            r->kind[0] = r->kind[1];
            r->kind[1] = k;
            wr_race_access a = r->example.first;
            r->example.first = r->example.second;
            r->example.second = a;
        }
        r->identity = xasprintf("%s|%s|%s|%s|%s|%s|%s", r->kernel[0], r->kernel[1], key[0],
                                key[1], wr_access_kind_name(r->kind[0]),
                                wr_access_kind_name(r->kind[1]),
                                wr_race_class_name(r->race_class));
        free(key[0]);
        free(key[1]);
        const wr_alloc *al = NULL;
        /* a DSMEM example names its owner's shared word: the shared
         * allocation at that offset */
        bool dsmem = r->example.space == WR_SPACE_DSMEM;
        uint64_t at = dsmem ? wr_dsmem_offset(r->example.addr) : r->example.addr;
        if (r->example.space == WR_SPACE_GLOBAL || r->example.space == WR_SPACE_SHARED || dsmem)
            al = wr_catalog_find_alloc(wr_replay_catalog(rp),
                                       dsmem ? WR_SPACE_SHARED : r->example.space, at);
        if (al) {
            r->alloc_name = xstrdup(al->name ? al->name : "");
            r->has_offset = true;
            r->offset = at - al->base;
        } else {
            r->alloc_name = xstrdup("");
        }
    }
    qsort(v, n, sizeof *v, resolved_cmp);
    /* combine equal (engine, identity, verdict) */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && resolved_cmp(&v[m - 1], &v[i]) == 0) {
            wr_resolved_race *d = &v[m - 1];
            d->count += v[i].count;
            d->potential = d->potential && v[i].potential;
            uint64_t dl = later_seq(&d->example), il = later_seq(&v[i].example);
            if (il < dl || (il == dl && earlier_seq(&v[i].example) < earlier_seq(&d->example))) {
                uint64_t count = d->count;
                uint8_t pot = d->potential;
                resolved_clear(d);
                *d = v[i];
                d->count = count;
                d->potential = pot;
            } else {
                resolved_clear(&v[i]);
            }
            continue;
        }
        if (m != i)
            v[m] = v[i];
        m++;
    }
    *out = v;
    return m;
}

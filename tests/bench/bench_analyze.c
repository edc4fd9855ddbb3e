/*
 * bench-analyze: figures for the analyzer on one trace (not a timed test).
 *
 *   bench-analyze [--repeat N] TRACE...
 *
 * For each trace, every configuration runs in its own forked child so that
 * peak RSS is that configuration's alone, N times (default 3, also
 * $WR_BENCH_REPEAT) in rounds -- every configuration once per round -- so
 * that the machine's drift touches all of them alike:
 *   decode      the bare decode of the trace (wr_reader_next over every
 *               chunk, batches released): the baseline of the ratios
 *   vc scoped lockset fsm   one engine, 1 worker; and with 2 workers ("x2",
 *                           which shard that engine's address space in two)
 *   all x1, all x2          the four engines together, 1 and 2 workers (the
 *                           default split: one shard per engine)
 * Printed per configuration: wall seconds, thread-level accesses per second
 * per worker core (thread accesses / wall / workers; the decoding thread
 * runs beside the workers and is not counted), analysis / decode wall-time ratio, peak RSS,
 * and bytes of RSS above the decode baseline per distinct touched word.
 * The touched words are counted once per trace, from the trace itself (a
 * word is what the engines' shadow keys name: a global word by address, a
 * shared word per launch and block; local memory is not tracked), so every
 * row divides by the same count: the engines' own shadow_words differ (fsm
 * counts the words live at the end, vc every word ever touched).  Scaling = wall(x1) / wall(x2),
 * per engine and for all four; on a 2-core machine, under it, the most that
 * two workers could reach there (print_two_core_ceiling).  Walls are medians over the rounds; the ratios (x decode,
 * scaling) are medians of the ratios taken within each round, as a paired
 * comparison, with their spread (min-max) where N > 1.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "replay.h"
#include "shadow.h"
#include "warprace/trace.h"

typedef struct figures {
    int ok;
    double wall;
    double cpu;                /* replay: user + system seconds of all its threads */
    unsigned passes;           /* replay: its passes, their CPU seconds and shards */
    double pass_cpu[WR_REPLAY_MAX_ENGINES];
    unsigned pass_shards[WR_REPLAY_MAX_ENGINES];
    uint64_t thread_accesses;
    uint64_t peak_rss;
    uint64_t raw_bytes;        /* decode: uncompressed event payload */
    uint64_t touched_words;    /* word count: distinct words touched */
    char error[sizeof(((wr_error *)0)->msg)];
} figures;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_maxrss * 1024;
}

static void run_decode(const char *path, figures *f)
{
    wr_error err;
    double t0 = now_seconds();
    wr_reader *r = wr_reader_open(path, &err);
    if (!r) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    wr_batch b;
    int rc;
    uint64_t lanes = 0;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            if (b.events[i].kind == WR_EV_ACCESS)
                lanes += (uint64_t)__builtin_popcount(b.events[i].u.access.active_mask);
        wr_batch_release(&b);
    }
    f->wall = now_seconds() - t0;
    if (rc < 0) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
    } else {
        f->ok = 1;
        f->thread_accesses = lanes;
        f->raw_bytes = wr_reader_stats_get(r)->raw_bytes;
    }
    wr_reader_close(r);
    f->peak_rss = peak_rss_bytes();
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void run_replay(const char *path, uint32_t engine_mask, unsigned threads, figures *f)
{
    wr_error err;
    wr_replay_options opts = {.engine_mask = engine_mask, .threads = threads};
    double c0 = cpu_seconds(), t0 = now_seconds();
    wr_replay *rp = wr_replay_run(path, &opts, &err);
    f->wall = now_seconds() - t0;
    f->cpu = cpu_seconds() - c0;   /* the workers have been joined */
    if (!rp) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    for (unsigned e = 0; e < st->engine_count; e++)
        f->pass_cpu[st->pass_of[e]] = st->engine_seconds[e];   /* the pass's, for each member */
    f->passes = st->passes;
    for (unsigned p = 0; p < st->passes; p++)
        f->pass_shards[p] = st->pass_shards[p];
    f->ok = 1;
    f->thread_accesses = st->thread_accesses;
    wr_replay_free(rp);
    f->peak_rss = peak_rss_bytes();
}

/* ---- distinct touched words ------------------------------------------- */

/* The touched words are marked in a shadow map (shadow.h) of one-byte
 * cells: the engines' own page table and keys, so a word is what they
 * count as one.  Lines are only expanded, never packed (their reps stay
 * zero), so no expand function is needed. */
static void word_set_add_range(wr_shadow_map *ws, uint8_t space, uint32_t launch, uint32_t block,
                               uint64_t addr, uint64_t bytes)
{
    if (!bytes)
        return;
    for (uint64_t w = addr >> WR_WORD_SHIFT; w <= (addr + bytes - 1) >> WR_WORD_SHIFT; w++) {
        wr_shadow_page *p = wr_shadow_get(ws, wr_shadow_key(space, launch, block, w));
        *(unsigned char *)wr_shadow_cell(ws, p, w) = 1;
    }
}

static void count_page_words(wr_shadow_page *p, void *ctx)
{
    uint64_t *n = ctx;
    for (uint32_t x = p->expanded; x; x &= x - 1) {
        const unsigned char *c = p->cells + (size_t)__builtin_ctz(x) * WR_SHADOW_LINE_WORDS;
        for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
            *n += c[i];
    }
}

static void add_event_words(wr_shadow_map *ws, const wr_event *ev)
{
    if (ev->kind == WR_EV_HOST_COPY) {
        const wr_host_copy *c = &ev->u.copy;
        if (c->dst)
            word_set_add_range(ws, WR_SPACE_GLOBAL, 0, 0, c->dst, c->bytes);
        if (c->src)
            word_set_add_range(ws, WR_SPACE_GLOBAL, 0, 0, c->src, c->bytes);
        return;
    }
    if (ev->kind != WR_EV_ACCESS)
        return;
    const wr_access *a = &ev->u.access;
    if (a->space == WR_SPACE_LOCAL)
        return;
    unsigned size = a->size ? a->size : 4;
    for (uint32_t m = a->active_mask; m; m &= m - 1)
        word_set_add_range(ws, a->space, a->launch, a->block,
                           wr_access_lane_addr(a, (unsigned)__builtin_ctz(m)), size);
}

/* The distinct words the trace's accesses and host copies touch. */
static void run_count_words(const char *path, figures *f)
{
    wr_error err;
    wr_reader *r = wr_reader_open(path, &err);
    if (!r) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    wr_shadow_map *ws = wr_shadow_new(1, NULL);
    wr_batch b;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            add_event_words(ws, &b.events[i]);
        wr_batch_release(&b);
    }
    if (rc < 0) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
    } else {
        f->ok = 1;
        wr_shadow_foreach(ws, count_page_words, &f->touched_words);
    }
    wr_shadow_free(ws);
    wr_reader_close(r);
}

/* Seconds one configuration may take ($WR_BENCH_TIMEOUT, default 300): a
 * pathological case is reported as such instead of stalling the benchmark. */
static unsigned time_limit(void)
{
    const char *v = getenv("WR_BENCH_TIMEOUT");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (unsigned)n : 300;
}

typedef enum { RUN_DECODE, RUN_COUNT_WORDS, RUN_REPLAY } run_kind;

/* Runs one configuration in a child (so that its peak RSS is its own). */
static figures measure(const char *path, run_kind kind, uint32_t engine_mask, unsigned threads)
{
    figures f = {0};
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(f.error, sizeof f.error, "pipe failed");
        return f;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(time_limit());
        figures child = {0};
        if (kind == RUN_DECODE)
            run_decode(path, &child);
        else if (kind == RUN_COUNT_WORDS)
            run_count_words(path, &child);
        else
            run_replay(path, engine_mask, threads, &child);
        ssize_t n = write(fds[1], &child, sizeof child);
        _exit(n == (ssize_t)sizeof child ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = pid > 0 ? read(fds[0], &f, sizeof f) : -1;
    close(fds[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (n != (ssize_t)sizeof f) {
        memset(&f, 0, sizeof f);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            snprintf(f.error, sizeof f.error, "timed out after %u s", time_limit());
        else
            snprintf(f.error, sizeof f.error, "child failed (status %d)", status);
    }
    return f;
}

#define MAX_REPEAT 15

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One configuration's rounds.  f[0] carries the non-timing figures. */
typedef struct series {
    figures f[MAX_REPEAT];
    unsigned n;
} series;

static int series_ok(const series *s)
{
    for (unsigned r = 0; r < s->n; r++)
        if (!s->f[r].ok)
            return 0;
    return s->n > 0;
}

/* Median over rounds of a(r) / b(r); *lo, *hi the spread. */
static double paired_ratio(const series *a, const series *b, double *lo, double *hi)
{
    double v[MAX_REPEAT];
    unsigned n = a->n < b->n ? a->n : b->n;
    for (unsigned r = 0; r < n; r++)
        v[r] = a->f[r].wall / b->f[r].wall;
    double m = median(v, n);
    *lo = v[0];
    *hi = v[n - 1];
    return m;
}

static double median_wall(const series *s)
{
    double v[MAX_REPEAT];
    for (unsigned r = 0; r < s->n; r++)
        v[r] = s->f[r].wall;
    return median(v, s->n);
}

static uint64_t max_rss(const series *s)
{
    uint64_t m = 0;
    for (unsigned r = 0; r < s->n; r++)
        m = s->f[r].peak_rss > m ? s->f[r].peak_rss : m;
    return m;
}

static void print_row(const char *name, unsigned cores, const series *s, const series *decode,
                      uint64_t touched_words)
{
    for (unsigned r = 0; r < s->n; r++)
        if (!s->f[r].ok) {
            printf("  %-10s error: %s\n", name, s->f[r].error);
            return;
        }
    const figures *f = &s->f[0];
    double wall = median_wall(s), lo, hi;
    double ratio = paired_ratio(s, decode, &lo, &hi);
    double per_core = f->thread_accesses / wall / cores / 1e6;
    uint64_t rss = max_rss(s), base = max_rss(decode);
    double extra = rss > base ? (double)(rss - base) : 0;
    printf("  %-10s %8.3f s %9.1f M/s/core %7.2fx decode", name, wall, per_core, ratio);
    if (s->n > 1)
        printf(" (%.1f-%.1f)", lo, hi);
    printf(" %8.1f MiB", rss / 1048576.0);
    if (touched_words)
        printf(" %6.1f B/word", extra / (double)touched_words);
    printf("\n");
}

/* What two workers on two cores can reach at best, from the one-worker
 * run: the decoding thread shares the cores with the workers, so two
 * workers take at least half the CPU time of one (sharding only adds
 * work), wall(x2) >= CPU(x1) / 2; and all four with two workers run each
 * pass whole on one worker, wall(x2) >= the longest pass's CPU time.
 * Printed under the scaling, so that it reads against what the machine
 * and the split allow (median over rounds).  An estimate, not a bound:
 * one worker running three passes in turn pays cache misses that two
 * workers do not (each pass evicts the others' lines), so all four on
 * two workers can beat it (blocks). */
/* all2 gives the shards each pass had on two workers (the same trace: the
 * same plan every round), so a pass split in two counts half its CPU. */
static void print_two_core_ceiling(const series *one, const series *all1, const series *all2)
{
    printf("  2-core ceiling, estimated (wall x1 / max(CPU x1 / 2, longest unit)):");
    for (unsigned e = 0; e <= wr_engine_count; e++) {
        const series *s = e < wr_engine_count ? &one[e] : all1;
        if (!series_ok(s))
            continue;
        double v[MAX_REPEAT];
        for (unsigned r = 0; r < s->n; r++) {
            double floor = s->f[r].cpu / 2;
            for (unsigned p = 0; e == wr_engine_count && p < s->f[r].passes; p++) {
                unsigned shards = series_ok(all2) && p < all2->f[0].passes
                                      ? all2->f[0].pass_shards[p] : 1;
                double unit = s->f[r].pass_cpu[p] / (shards ? shards : 1);
                floor = unit > floor ? unit : floor;
            }
            v[r] = floor > 0 ? s->f[r].wall / floor : 2;
            v[r] = v[r] < 2 ? v[r] : 2;
        }
        printf("%s %s %.2fx", e ? "," : "", e < wr_engine_count ? wr_engines[e]->name : "all four",
               median(v, s->n));
    }
    printf("\n");
}

static unsigned parse_repeat(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > MAX_REPEAT) {
        fprintf(stderr, "bench-analyze: --repeat wants 1..%d, not '%s'\n", MAX_REPEAT, v);
        exit(2);
    }
    return (unsigned)n;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);   /* each figure as it is known, even into a file */
    unsigned repeat = 3;
    const char *env = getenv("WR_BENCH_REPEAT");
    if (env && *env)
        repeat = parse_repeat(env);
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--repeat")) {
        repeat = parse_repeat(argv[2]);
        first = 3;
    }
    if (argc <= first || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: bench-analyze [--repeat N] TRACE...\n");
        return argc <= first ? 2 : 0;
    }
    int status = 0;
    /* DECODE, then each engine with 1 worker, each with 2, all four with 1, 2 */
    enum { DECODE, ONE = 1, TWO = ONE + 4, ALL1 = TWO + 4, ALL2, NCONFIG };
    for (int t = first; t < argc; t++) {
        const char *path = argv[t];
        uint32_t all = (1u << wr_engine_count) - 1;
        series *cfg = calloc(NCONFIG, sizeof *cfg);
        if (!cfg || wr_engine_count != 4) {
            fprintf(stderr, "bench-analyze: setup failed\n");
            return 1;
        }
        for (unsigned r = 0; r < repeat; r++)
            for (unsigned c = 0; c < NCONFIG; c++) {
                uint32_t mask = c == DECODE ? 0
                                : c < TWO   ? 1u << (c - ONE)
                                : c < ALL1  ? 1u << (c - TWO)
                                            : all;
                unsigned threads = c == DECODE ? 0 : (c >= TWO && c < ALL1) || c == ALL2 ? 2 : 1;
                cfg[c].f[cfg[c].n++] =
                    measure(path, c == DECODE ? RUN_DECODE : RUN_REPLAY, mask, threads);
            }
        series *decode = &cfg[DECODE];
        if (!series_ok(decode)) {
            for (unsigned r = 0; r < decode->n; r++)
                if (!decode->f[r].ok)
                    fprintf(stderr, "bench-analyze: %s\n", decode->f[r].error);
            status = 1;
            free(cfg);
            continue;
        }
        const figures *d0 = &decode->f[0];
        double dwall = median_wall(decode);
        figures words = measure(path, RUN_COUNT_WORDS, 0, 0);
        if (!words.ok)
            fprintf(stderr, "bench-analyze: counting touched words: %s\n", words.error);
        uint64_t touched = words.ok ? words.touched_words : 0;
        printf("%s: %" PRIu64 " thread-level accesses, %" PRIu64 " distinct words touched, "
               "%.1f MiB event payload, median of %u rounds\n",
               path, d0->thread_accesses, touched, d0->raw_bytes / 1048576.0, repeat);
        printf("  %-10s %8.3f s %9.1f M/s/core  %.2f GB/s decoded     %8.1f MiB\n", "decode",
               dwall, d0->thread_accesses / dwall / 1e6, d0->raw_bytes / dwall / 1e9,
               max_rss(decode) / 1048576.0);
        for (unsigned e = 0; e < wr_engine_count; e++)
            print_row(wr_engines[e]->name, 1, &cfg[ONE + e], decode, touched);
        for (unsigned e = 0; e < wr_engine_count; e++) {
            char name[32];
            snprintf(name, sizeof name, "%s x2", wr_engines[e]->name);
            print_row(name, 2, &cfg[TWO + e], decode, touched);
        }
        print_row("all x1", 1, &cfg[ALL1], decode, touched);
        print_row("all x2", 2, &cfg[ALL2], decode, touched);
        printf("  scaling 1 -> 2 workers:");
        for (unsigned e = 0; e <= wr_engine_count; e++) {
            const series *one = e < wr_engine_count ? &cfg[ONE + e] : &cfg[ALL1];
            const series *two = e < wr_engine_count ? &cfg[TWO + e] : &cfg[ALL2];
            const char *name = e < wr_engine_count ? wr_engines[e]->name : "all four";
            if (!series_ok(one) || !series_ok(two))
                continue;
            double lo, hi, m = paired_ratio(one, two, &lo, &hi);
            printf("%s %s %.2fx", e ? "," : "", name, m);
            if (repeat > 1)
                printf(" (%.2f-%.2f)", lo, hi);
        }
        printf("\n");
        if (sysconf(_SC_NPROCESSORS_ONLN) == 2)
            print_two_core_ceiling(cfg + ONE, cfg + ALL1, cfg + ALL2);
        free(cfg);
    }
    return status;
}

/* The replay driver: determinism over --threads, counts, lost events,
 * truncated traces, kernel selection; and `warprace analyze` end to end. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "warprace/demangle.h"
#include "gen.h"
#include "replay.h"
#include "store_sqlite.h"
#include "vclock.h"

static char dir[256];

static void mk_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/wr-replay-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *tpath(const char *name)
{
    static char p[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

TestSuite(replay, .init = mk_tmp, .fini = rm_tmp, .timeout = 120);

static const wr_engine_ops *const double_table[] = {&gen_conflict_engine};

static gen_opts default_opts(uint64_t seed)
{
    return (gen_opts){.seed = seed, .launches = 3, .blocks = 3, .warps = 2, .steps = 6,
                      .phases = 3, .words = 16384, .chunk_bytes = 2048};
}

static wr_replay *run_sharded(const char *path, const wr_engine_ops *const *table,
                              unsigned count, unsigned threads, unsigned shards,
                              const char *kernels)
{
    wr_replay_options o = {.table = table, .table_count = count, .threads = threads,
                           .shards = shards, .kernels = kernels,
                           .queue_batches = threads == 3 ? 1 : 0};
    wr_error err;
    wr_replay *rp = wr_replay_run(path, &o, &err);
    cr_assert_not_null(rp, "replay %s: %s", path, err.msg);
    return rp;
}

static wr_replay *run(const char *path, const wr_engine_ops *const *table, unsigned count,
                      unsigned threads, const char *kernels)
{
    return run_sharded(path, table, count, threads, 0, kernels);
}

/* One-worker replay of `path` (engine_mask 0: every engine), shared or
 * separate vc/scoped passes; *out gets the resolved races (their count is
 * returned). */
static wr_replay *run_resolved(const char *path, uint32_t engine_mask, int separate,
                               wr_resolved_race **out, size_t *n)
{
    wr_replay_options o = {.threads = 1, .engine_mask = engine_mask, .separate_passes = separate};
    wr_error err;
    wr_replay *rp = wr_replay_run(path, &o, &err);
    cr_assert_not_null(rp, "replay %s (separate=%d): %s", path, separate, err.msg);
    *n = wr_replay_resolve(rp, out);
    return rp;
}

/* Everything observable about the findings must be equal. */
static void expect_same_findings(const wr_replay *a, const wr_replay *b, const char *what)
{
    const wr_race_group *ga, *gb;
    size_t na = wr_findings_groups(wr_replay_findings(a), &ga);
    size_t nb = wr_findings_groups(wr_replay_findings(b), &gb);
    cr_assert_eq(na, nb, "%s: %zu vs %zu groups", what, na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(ga[i].count, gb[i].count, "%s: group %zu count", what, i);
        cr_assert_eq(memcmp(&ga[i].example, &gb[i].example, sizeof ga[i].example), 0,
                     "%s: group %zu example differs", what, i);
    }
    wr_resolved_race *ra, *rb;
    size_t ma = wr_replay_resolve(a, &ra), mb = wr_replay_resolve(b, &rb);
    cr_assert_eq(ma, mb, "%s", what);
    for (size_t i = 0; i < ma; i++) {
        cr_assert_str_eq(ra[i].identity, rb[i].identity, "%s", what);
        cr_assert_eq(ra[i].count, rb[i].count, "%s", what);
        cr_assert_eq(ra[i].example.addr, rb[i].example.addr, "%s", what);
    }
    wr_resolved_free(ra, ma);
    wr_resolved_free(rb, mb);
}

Test(replay, identical_for_1_2_3_threads_engine_double)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        const char *p = tpath("t.wrt");
        gen_opts o = default_opts(seed);
        gen_result g;
        cr_assert_eq(gen_trace(p, &o, &g), 0);
        wr_replay *r1 = run(p, double_table, 1, 1, NULL);
        const wr_race_group *gr;
        cr_assert_gt(wr_findings_groups(wr_replay_findings(r1), &gr), 10, "races expected");
        for (unsigned t = 2; t <= 3; t++) {
            wr_replay *rt = run(p, double_table, 1, t, NULL);
            cr_assert_eq(wr_replay_get_stats(rt)->threads, t);
            expect_same_findings(r1, rt, t == 2 ? "1 vs 2 threads" : "1 vs 3 threads");
            /* every shard did some of the work */
            cr_assert_eq(wr_replay_get_stats(rt)->shadow_words[0],
                         wr_replay_get_stats(r1)->shadow_words[0]);
            wr_replay_free(rt);
        }
        wr_replay_free(r1);
    }
}

Test(replay, identical_for_1_2_3_threads_real_engines)
{
    if (wr_engine_count == 0)
        cr_skip_test("no engine built yet");
    const char *p = tpath("t.wrt");
    gen_opts o = default_opts(7);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *r1 = run(p, NULL, 0, 1, NULL);
    cr_assert_eq(wr_replay_get_stats(r1)->engine_count, wr_engine_count);
    const wr_race_group *gr;
    cr_assert_gt(wr_findings_groups(wr_replay_findings(r1), &gr), 0, "races expected");
    /* (threads, shards): 0 shards = the default, one shard per engine here */
    static const unsigned config[][2] = {{2, 0}, {3, 0}, {2, 2}, {3, 3}, {1, 3}, {2, 5}};
    for (size_t c = 0; c < sizeof config / sizeof config[0]; c++) {
        wr_replay *rt = run_sharded(p, NULL, 0, config[c][0], config[c][1], NULL);
        char what[64];
        snprintf(what, sizeof what, "1 vs %u threads, %u shards", config[c][0], config[c][1]);
        expect_same_findings(r1, rt, what);
        const wr_replay_stats *st = wr_replay_get_stats(rt);
        for (unsigned p = 0; p < st->passes; p++)
            if (config[c][1])
                cr_assert_eq(st->pass_shards[p], config[c][1], "%s: every pass as asked", what);
            else   /* the default may split the heaviest pass, never past a shard a worker */
                cr_assert(st->pass_shards[p] >= 1 && st->pass_shards[p] <= config[c][0],
                          "%s: pass %u has %u shards", what, p, st->pass_shards[p]);
        wr_replay_free(rt);
    }
    wr_replay_free(r1);
}

/* Writes a text trace (formats/TEXT.md) to NAME.txt and assembles it into
 * NAME.wrt, whose path it returns (tpath's buffer). */
static const char *assemble_text(const char *name, const char *text)
{
    char base[16];   /* short names: tpath joins them to the directory */
    snprintf(base, sizeof base, "%s.txt", name);
    const char *txt = tpath(base);
    snprintf(base, sizeof base, "%s.wrt", name);
    const char *wrt = tpath(base);
    FILE *f = fopen(txt, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    wr_error err;
    cr_assert_eq(wr_text_assemble(txt, wrt, &err), 0, "%s", err.msg);
    return wrt;
}

/* vc and scoped share one pass unless told not to; the findings are the
 * same either way, on generated traces at several thread counts. */
Test(replay, shared_pass_equals_separate_passes)
{
    if (wr_engine_find("vc") < 0 || wr_engine_find("scoped") < 0)
        cr_skip_test("vc or scoped not built");
    int vc = wr_engine_find("vc"), sc = wr_engine_find("scoped");
    for (uint64_t seed = 11; seed <= 14; seed++) {
        const char *p = tpath("s.wrt");
        gen_opts o = default_opts(seed);
        gen_result g;
        cr_assert_eq(gen_trace(p, &o, &g), 0);
        wr_error err;
        wr_replay_options sep = {.threads = 1, .separate_passes = true};
        wr_replay *r1 = wr_replay_run(p, &sep, &err);
        cr_assert_not_null(r1, "%s", err.msg);
        const wr_replay_stats *s1 = wr_replay_get_stats(r1);
        cr_assert_eq(s1->passes, s1->engine_count);
        const wr_race_group *gr;
        cr_assert_gt(wr_findings_groups(wr_replay_findings(r1), &gr), 0, "races expected");
        for (unsigned t = 1; t <= 2; t++) {
            wr_replay_options fused = {.threads = t};
            wr_replay *rf = wr_replay_run(p, &fused, &err);
            cr_assert_not_null(rf, "%s", err.msg);
            const wr_replay_stats *sf = wr_replay_get_stats(rf);
            cr_assert_eq(sf->passes, sf->engine_count - 1);
            cr_assert_eq(sf->pass_of[vc], sf->pass_of[sc]);
            cr_assert_eq(sf->shadow_words[vc], s1->shadow_words[vc]);
            cr_assert_eq(sf->shadow_words[sc], s1->shadow_words[sc]);
            expect_same_findings(r1, rf, t == 1 ? "separate vs shared pass, 1 thread"
                                                : "separate vs shared pass, 2 threads");
            wr_replay_free(rf);
        }
        wr_replay_free(r1);
    }
}

/* In a shared pass every checker keeps the reads it would keep alone: vc
 * lets a flag-ordered read supersede an earlier one, scoped (whose fences
 * do not order weak accesses) keeps both and so reports the later write
 * against each (tests/litmus/read_set_prune_scopes.txt). */
Test(replay, shared_pass_keeps_each_engines_reads)
{
    if (wr_engine_find("vc") < 0 || wr_engine_find("scoped") < 0)
        cr_skip_test("vc or scoped not built");
    static const char text[] =
        "alloc data global 4\n"
        "alloc flag global 4\n"
        "launch L1 k grid=3 block=1\n"
        "ld b0 w0 lane=0 data[0] @p.cu:10\n"
        "fence.sc.device b0 w0 lane=0 @p.cu:11\n"
        "atom.exch b0 w0 lane=0 flag[0] @p.cu:12\n"
        "atom.exch b1 w0 lane=0 flag[0] @p.cu:20\n"
        "fence.sc.device b1 w0 lane=0 @p.cu:21\n"
        "ld b1 w0 lane=0 data[0] @p.cu:22\n"
        "st b2 w0 lane=0 data[0] @p.cu:30\n"
        "kernel_end L1\n";
    const char *wrt = assemble_text("p", text);
    uint32_t hb = 1u << wr_engine_find("vc") | 1u << wr_engine_find("scoped");
    for (int separate = 0; separate <= 1; separate++) {
        wr_resolved_race *rr;
        size_t n;
        wr_replay *rp = run_resolved(wrt, hb, separate, &rr, &n);
        unsigned vc_reads = 0, scoped_reads = 0;
        for (size_t i = 0; i < n; i++) {
            bool line10 = strstr(rr[i].site[0], ":10") || strstr(rr[i].site[1], ":10");
            bool line22 = strstr(rr[i].site[0], ":22") || strstr(rr[i].site[1], ":22");
            cr_assert(line10 != line22, "%s", rr[i].identity);
            if (!strcmp(rr[i].engine_name, "vc")) {
                cr_assert(line22, "vc: only the later read races: %s", rr[i].identity);
                vc_reads++;
            } else {
                scoped_reads += line10 ? 1u : 2u;
            }
        }
        cr_assert_eq(vc_reads, 1, "separate=%d", separate);
        cr_assert_eq(scoped_reads, 3, "scoped reports both reads (separate=%d)", separate);
        wr_resolved_free(rr, n);
        wr_replay_free(rp);
    }
}

/* Reads of one word by six blocks, none ordered: the word's read set
 * outgrows the entries a set holds inline, and the later write must still
 * race with every one of them, in every engine built on hbcore. */
Test(replay, write_races_with_every_unordered_read)
{
    if (wr_engine_find("vc") < 0 || wr_engine_find("scoped") < 0)
        cr_skip_test("vc or scoped not built");
    char text[2048];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "alloc data global 4\nlaunch L1 k grid=7 block=1\n");
    for (unsigned b = 0; b < 6; b++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "ld b%u w0 lane=0 data[0] @r.cu:%u\n", b, 10 + b);
    snprintf(text + len, sizeof text - len, "st b6 w0 lane=0 data[0] @r.cu:30\nkernel_end L1\n");
    const char *wrt = assemble_text("r", text);
    for (int separate = 0; separate <= 1; separate++) {
        wr_resolved_race *rr;
        size_t n;
        wr_replay *rp = run_resolved(wrt, 0, separate, &rr, &n);
        unsigned vc = 0, scoped = 0;
        for (size_t i = 0; i < n; i++) {
            vc += !strcmp(rr[i].engine_name, "vc");
            scoped += !strcmp(rr[i].engine_name, "scoped");
        }
        cr_assert_eq(vc, 6, "vc: one race per read (separate=%d)", separate);
        cr_assert_eq(scoped, 6, "scoped: one race per read (separate=%d)", separate);
        wr_resolved_free(rr, n);
        wr_replay_free(rp);
    }
}

/* A grid's size costs nothing until its blocks come: vc and scoped once
 * kept a block table per launch sized by the grid (8 bytes a block: 16 GB
 * for 2^31 blocks), and at 2^32 blocks its 32-bit size doubled forever. */
Test(replay, huge_grids_cost_only_the_blocks_touched)
{
    const char *wrt = assemble_text("hg",
                                    "alloc x global 4\n"
                                    "launch L1 k grid=2147483647 block=1024\n"
                                    "st b2147483646 w31 lane=0 x[0] @h.cu:1\n"
                                    "ld b0 w0 lane=0 x[0] @h.cu:2\n"
                                    "kernel_end L1\n"
                                    "launch L2 k grid=131072,32768 block=32\n"
                                    "st b4294967295 w0 lane=0 x[0] @h.cu:3\n"
                                    "ld b1 w0 lane=0 x[0] @h.cu:4\n"
                                    "kernel_end L2\n");
    wr_resolved_race *rr;
    size_t n;
    wr_replay *rp = run_resolved(wrt, 0, 0, &rr, &n);
    unsigned hb = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rr[i].engine_name, "vc") || !strcmp(rr[i].engine_name, "scoped")) {
            hb++;
            /* block 2^32-1 is a block, not the host's copy */
            cr_assert_eq(rr[i].race_class, WR_CLASS_INTER_BLOCK, "%s", rr[i].engine_name);
        }
    cr_assert_eq(hb, 4, "vc and scoped: one race in each launch");
    uint64_t rss = wr_replay_get_stats(rp)->peak_rss_bytes;
    cr_assert_lt(rss, 256ull << 20, "peak RSS %llu bytes", (unsigned long long)rss);
    wr_resolved_free(rr, n);
    wr_replay_free(rp);
}

Test(replay, default_shards_give_every_worker_a_unit)
{
    cr_assert_eq(wr_replay_default_shards(1, 4), 1);
    cr_assert_eq(wr_replay_default_shards(2, 4), 1);
    cr_assert_eq(wr_replay_default_shards(4, 4), 1);
    cr_assert_eq(wr_replay_default_shards(5, 4), 2);
    cr_assert_eq(wr_replay_default_shards(16, 4), 4);
    cr_assert_eq(wr_replay_default_shards(2, 1), 2);
    cr_assert_eq(wr_replay_default_shards(3, 2), 2);
    cr_assert_eq(wr_replay_default_shards(3, 0), 1);
    /* the engine double alone: one shard per worker, as the test above needs */
    const char *p = tpath("d.wrt");
    gen_opts o = default_opts(2);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 3, NULL);
    cr_assert_eq(wr_replay_get_stats(rp)->shards, 3);
    wr_replay_free(rp);
}

Test(replay, plan_shards_splits_only_a_pass_well_above_its_share)
{
    unsigned sh[4];
    /* the latest per-lane costs of vc+scoped, lockset and fsm (engines'
     * lane_ns, gather_lane_ns) on a gather and on a coalesced stencil */
    const double gather[3] = {44.5, 18.3, 11.9}, stencil[3] = {5.3, 3.3, 2.6};
    wr_replay_plan_shards(2, 3, gather, sh);
    cr_assert(sh[0] == 2 && sh[1] == 1 && sh[2] == 1, "gather, 2 workers: %u %u %u",
              sh[0], sh[1], sh[2]);
    wr_replay_plan_shards(2, 3, stencil, sh);
    cr_assert(sh[0] == 1 && sh[1] == 1 && sh[2] == 1, "stencil: the passes are balanced enough");
    wr_replay_plan_shards(1, 3, gather, sh);
    cr_assert(sh[0] == 1 && sh[1] == 1 && sh[2] == 1, "one worker: nothing to balance");
    const double unknown[3] = {0, 0, 0};
    wr_replay_plan_shards(5, 3, unknown, sh);
    cr_assert(sh[0] == 2 && sh[1] == 2 && sh[2] == 2, "no costs: the default");
    wr_replay_plan_shards(5, 3, NULL, sh);
    cr_assert(sh[0] == 2 && sh[1] == 2 && sh[2] == 2, "no costs: the default");
    /* 4 workers: every pass starts with 2 shards; vc+scoped's 22.3 a shard
     * is above 1.15 x 74.7 / 4, so it gets a third */
    wr_replay_plan_shards(4, 3, gather, sh);
    cr_assert(sh[0] == 3 && sh[1] == 2 && sh[2] == 2, "gather, 4 workers: %u %u %u",
              sh[0], sh[1], sh[2]);
    /* never more shards than workers, however lopsided */
    const double lopsided[2] = {1000, 1};
    wr_replay_plan_shards(2, 2, lopsided, sh);
    cr_assert(sh[0] == 2 && sh[1] == 1);
    wr_replay_plan_shards(3, 2, lopsided, sh);
    cr_assert(sh[0] == 3 && sh[1] == 2, "%u %u", sh[0], sh[1]);
    /* just under the margin: left whole */
    const double close[2] = {1.14 * 1.5, 1.5 - 0.14 * 1.5};   /* top = 1.14 x the fair 1.5 */
    wr_replay_plan_shards(2, 2, close, sh);
    cr_assert(sh[0] == 1 && sh[1] == 1);
}

/* A kernel whose warps gather from a large table (32 lanes, 32 cache
 * lines: shape GATHER), or the same amounts coalesced (COALESCED), or with
 * per-lane addresses among 64 words (HOT: a histogram's bins), with one
 * race: on two workers the gathers' vc+scoped pass is split in two shards
 * beside lockset and fsm, the others' is not (a hot word costs no miss),
 * and the findings are those of one worker in every case. */
enum { COALESCED, GATHER, HOT };

static const char *gather_text(const char *name, int shape)
{
    static char text[1 << 16];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "alloc table global 4194304\n"
                                  "alloc out global 65536\n"
                                  "launch L1 k grid=4 block=64\n");
    uint64_t x = 12345;
    for (unsigned b = 0; b < 4; b++)
        for (unsigned w = 0; w < 2; w++)
            for (unsigned i = 0; i < 4; i++) {
                if (shape == COALESCED) {
                    len += (size_t)snprintf(text + len, sizeof text - len,
                                            "ld b%u w%u table[%u..] @g.cu:10\n", b, w,
                                            ((b * 2 + w) * 4 + i) * 32);
                    continue;
                }
                len += (size_t)snprintf(text + len, sizeof text - len, "ld b%u w%u {", b, w);
                for (unsigned l = 0; l < 32; l++) {
                    x = x * 6364136223846793005ull + 1442695040888963407ull;
                    len += (size_t)snprintf(text + len, sizeof text - len, "%stable[%u]",
                                            l ? " " : "", (unsigned)(x >> 33) % (shape == HOT ? 64u : 1048576u));
                }
                len += (size_t)snprintf(text + len, sizeof text - len, "} @g.cu:10\n");
            }
    snprintf(text + len, sizeof text - len,
             "st b0 w0 lane=0 out[0] @g.cu:20\n"
             "st b1 w0 lane=0 out[0] @g.cu:20\n"
             "kernel_end L1\n");
    return assemble_text(name, text);
}

Test(replay, gathers_split_the_heaviest_pass_on_two_workers)
{
    if (wr_engine_count < 4)
        cr_skip_test("needs the four engines");
    static const char *const names[] = {"co", "ga", "hot"};
    for (int shape = COALESCED; shape <= HOT; shape++) {
        const char *wrt = gather_text(names[shape], shape);
        bool gather = shape == GATHER;
        wr_replay *r1 = run(wrt, NULL, 0, 1, NULL);
        wr_replay *r2 = run(wrt, NULL, 0, 2, NULL);
        const wr_replay_stats *s1 = wr_replay_get_stats(r1), *s2 = wr_replay_get_stats(r2);
        cr_assert_eq(s2->passes, 3, "vc+scoped, lockset, fsm");
        for (unsigned p = 0; p < 3; p++) {
            cr_assert_eq(s1->pass_shards[p], 1);
            unsigned want = gather && p == s2->pass_of[0] ? 2 : 1;   /* engine 0: vc */
            cr_assert_eq(s2->pass_shards[p], want, "%s: pass %u has %u shards", names[shape], p,
                         s2->pass_shards[p]);
        }
        cr_assert_eq(s2->shards, gather ? 2u : 1u);
        const wr_race_group *gr;
        cr_assert_gt(wr_findings_groups(wr_replay_findings(r1), &gr), 0, "the race on out[0]");
        expect_same_findings(r1, r2, names[shape]);
        for (unsigned e = 0; e < s1->engine_count; e++)
            cr_assert_eq(s1->shadow_words[e], s2->shadow_words[e]);
        wr_replay_free(r1);
        wr_replay_free(r2);
    }
}

/* A generated trace of six launches in small chunks: some 60+ batches. */
static const char *many_batches_trace(const char *name, uint64_t seed)
{
    const char *p = tpath(name);
    gen_opts o = default_opts(seed);
    o.launches = 6;
    o.chunk_bytes = 512;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    return p;
}

typedef struct progress_log {
    unsigned calls;
    wr_replay_progress last;
    bool ordered;
} progress_log;

static void log_progress(void *ctx, const wr_replay_progress *p)
{
    progress_log *l = ctx;
    if (l->calls && (p->offset <= l->last.offset || p->events < l->last.events ||
                     p->seconds < l->last.seconds))
        l->ordered = false;
    l->last = *p;
    l->calls++;
}

/* The decoder reports how far it has come, no more often than asked; and
 * not at all within the first interval. */
Test(replay, progress_reports_the_decoders_position)
{
    const char *p = many_batches_trace("prog.wrt", 9);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    progress_log log = {.ordered = true};
    wr_replay_options ro = {.threads = 2, .progress = log_progress, .progress_ctx = &log,
                            .progress_seconds = 1e-9};
    wr_error err;
    wr_replay *rp = wr_replay_run(p, &ro, &err);
    cr_assert_not_null(rp, "%s", err.msg);
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    cr_assert_gt(st->batches, 60);
    cr_assert_geq(log.calls, st->batches - 1, "every batch after the first: %u of %" PRIu64,
                  log.calls, st->batches);
    cr_assert(log.ordered, "offsets, events and times only grow");
    cr_assert_eq(log.last.file_bytes, (uint64_t)sb.st_size);
    cr_assert_lt(log.last.offset, (uint64_t)sb.st_size);
    cr_assert_leq(log.last.events, st->events);
    cr_assert_gt(log.last.events, st->events / 2);
    wr_replay_free(rp);
    /* the default interval is a second: a trace read faster says nothing */
    progress_log quiet = {.ordered = true};
    ro.progress_ctx = &quiet;
    ro.progress_seconds = 0;
    rp = wr_replay_run(p, &ro, &err);
    cr_assert_not_null(rp, "%s", err.msg);
    if (wr_replay_get_stats(rp)->wall_seconds < 1.0)   /* (else a very slow machine) */
        cr_assert_eq(quiet.calls, 0);
    wr_replay_free(rp);
}

/* One worker, three passes: it keeps to a pass while the pass has batches
 * ready (a switch costs the pass its cached state), so it switches about
 * once per turn of queue_batches batches, not once per batch. */
Test(replay, one_worker_keeps_to_a_pass_while_it_has_batches)
{
    cr_assert_eq(wr_replay_default_queue(1, 1), 6);
    cr_assert_eq(wr_replay_default_queue(1, 3), 12);
    cr_assert_eq(wr_replay_default_queue(2, 3), 14);
    cr_assert_eq(wr_replay_default_queue(4, 3), 12, "a worker per unit: no turns to take");
    cr_assert_eq(wr_replay_default_queue(2, 24), 16, "at most 4 units' worth");
    const char *p = many_batches_trace("k.wrt", 5);
    wr_replay_options ro = {.threads = 1};
    wr_error err;
    wr_replay *rp = wr_replay_run(p, &ro, &err);
    cr_assert_not_null(rp, "%s", err.msg);
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    uint64_t units = (uint64_t)st->passes * st->shards;
    cr_assert_eq(units, 3, "vc+scoped, lockset, fsm");
    cr_assert_gt(st->batches, 60, "small chunks: many batches (%" PRIu64 ")", st->batches);
    /* the decoder may lag, so a turn can be shorter than the ring: allow a
     * third of it; switching at every batch gives units * batches */
    cr_assert_leq(st->unit_switches, units * (st->batches / 4 + 2),
                  "%" PRIu64 " switches over %" PRIu64 " batches", st->unit_switches,
                  st->batches);
    cr_assert_geq(st->unit_switches, units, "every unit ran");
    wr_replay_free(rp);
}

Test(replay, counts_events_and_accesses)
{
    const char *p = tpath("c.wrt");
    gen_opts o = default_opts(11);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 2, NULL);
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    cr_assert_eq(st->events, g.events);
    cr_assert_eq(st->accesses, g.accesses);
    cr_assert_eq(st->thread_accesses, g.thread_accesses);
    cr_assert_eq(st->launches, 3);
    cr_assert_eq(st->launches_selected, 3);
    cr_assert_eq(st->lost_events, 0);
    cr_assert(!st->truncated);
    cr_assert_gt(st->batches, 3, "small chunks: several batches");
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_eq(st->trace_bytes, (uint64_t)sb.st_size);
    uint64_t bytes;
    cr_assert_eq(st->trace_hash, wr_file_fnv1a64(p, &bytes));
    cr_assert_neq(st->trace_hash, 0);
    cr_assert_gt(st->peak_rss_bytes, 0);
    cr_assert_geq(st->wall_seconds, 0);
    const wr_replay_launch *l;
    cr_assert_eq(wr_replay_launches(rp, &l), 3);
    cr_assert_eq(l[1].launch.launch, 2);
    cr_assert(l[2].ended);
    wr_replay_free(rp);
}

Test(replay, fnv1a_known_value)
{
    const char *p = tpath("h.bin");
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fputs("a", f);
    fclose(f);
    uint64_t n;
    cr_assert_eq(wr_file_fnv1a64(p, &n), 0xaf63dc4c8601ec8cull);
    cr_assert_eq(n, 1);
}

Test(replay, lost_events_are_surfaced)
{
    const char *p = tpath("l.wrt");
    gen_opts o = default_opts(3);
    o.lost = 4242;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 2, NULL);
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    cr_assert_eq(st->lost_events, 4242);
    cr_assert_eq(st->lost_markers, 1);
    const wr_replay_lost *lost;
    cr_assert_eq(wr_replay_lost_list(rp, &lost), 1);
    cr_assert_eq(lost[0].lost.launch, 1);
    cr_assert_eq(lost[0].lost.count, 4242);
    wr_replay_free(rp);
}

Test(replay, truncated_trace_analyzed_up_to_last_chunk)
{
    /* no footer: the producer crashed after a flush */
    const char *p = tpath("tr.wrt");
    gen_opts o = default_opts(5);
    o.launches = 4;
    o.abandon_half = true;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 2, NULL);
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    cr_assert(st->truncated, "a trace without footer is truncated");
    cr_assert_geq(st->events, g.events, "flushed events are analysed");
    cr_assert_geq(st->launches, 2, "chunks written before the crash are analysed");
    uint64_t bytes;
    cr_assert_eq(st->trace_hash, wr_file_fnv1a64(p, &bytes), "the hash covers the whole file");
    cr_assert_eq(st->trace_bytes, bytes);
    wr_replay_free(rp);

    /* a complete trace cut in the middle of its last chunks */
    const char *full = tpath("full.wrt");
    o.abandon_half = false;
    cr_assert_eq(gen_trace(full, &o, &g), 0);
    struct stat sb;
    cr_assert_eq(stat(full, &sb), 0);
    cr_assert_eq(truncate(full, sb.st_size * 2 / 3), 0);
    rp = run(full, double_table, 1, 3, NULL);
    st = wr_replay_get_stats(rp);
    cr_assert(st->truncated);
    cr_assert_gt(st->truncated_bytes, 0);
    cr_assert_lt(st->events, g.events);
    cr_assert_gt(st->events, 0);
    /* the incomplete tail is never read: its bytes are hashed afterwards */
    cr_assert_eq(st->trace_hash, wr_file_fnv1a64(full, &bytes));
    cr_assert_eq(st->trace_bytes, (uint64_t)sb.st_size * 2 / 3);
    wr_replay *r1 = run(full, double_table, 1, 1, NULL);
    expect_same_findings(r1, rp, "truncated, 1 vs 3 threads");
    wr_replay_free(r1);
    wr_replay_free(rp);
}

Test(replay, kernel_selection)
{
    const char *p = tpath("k.wrt");
    gen_opts o = default_opts(9);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 2, "_b$");
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    cr_assert_eq(st->launches, 3);
    cr_assert_eq(st->launches_selected, 1, "only launch 2 runs gen_b");
    cr_assert_gt(st->skipped_events, 0);
    const wr_race_group *gr;
    size_t n = wr_findings_groups(wr_replay_findings(rp), &gr);
    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(gr[i].example.first.launch, 2);
        cr_assert_eq(gr[i].example.second.launch, 2);
    }
    wr_resolved_race *rr;
    size_t m = wr_replay_resolve(rp, &rr);
    for (size_t i = 0; i < m; i++) {
        cr_assert_str_eq(rr[i].kernel[0], "gen_b");
        cr_assert(!strncmp(rr[i].identity, "gen_b|gen_b|gen.cu:", 19), "%s", rr[i].identity);
        cr_assert_str_eq(rr[i].alloc_name, "buf");
        cr_assert(rr[i].has_offset);
        cr_assert_lt(rr[i].offset, 16384 * 4);
    }
    wr_resolved_free(rr, m);
    wr_replay_free(rp);

    wr_replay_options bad = {.kernels = "(unclosed"};
    wr_error err;
    cr_assert_null(wr_replay_run(p, &bad, &err));
    cr_assert(strstr(err.msg, "--kernels"), "%s", err.msg);
}

Test(replay, groups_are_per_kernel_not_per_launch)
{
    /* launches 1, 3, 5 run gen_a and 2, 4 gen_b: the collector keys races
     * by kernel, so resolving names combines nothing (keyed by launch, the
     * same race in launches 1 and 3 would be two groups) */
    const char *p = tpath("r.wrt");
    gen_opts o = default_opts(13);
    o.launches = 5;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    wr_replay *rp = run(p, double_table, 1, 2, NULL);
    const wr_race_group *gr;
    size_t n = wr_findings_groups(wr_replay_findings(rp), &gr);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += gr[i].count;
    wr_resolved_race *rr;
    size_t m = wr_replay_resolve(rp, &rr);
    cr_assert_eq(m, n, "one group per (kernel, sites, kinds, class)");
    uint64_t total2 = 0;
    for (size_t i = 0; i < m; i++) {
        total2 += rr[i].count;
        if (i)
            cr_assert(rr[i - 1].engine < rr[i].engine ||
                          strcmp(rr[i - 1].identity, rr[i].identity) < 0,
                      "sorted, unique");
        cr_assert(strcmp(rr[i].site[0], rr[i].site[1]) <= 0, "canonical order by site name");
    }
    cr_assert_eq(total, total2);
    wr_resolved_free(rr, m);
    wr_replay_free(rp);
}

Test(replay, errors_name_the_file)
{
    wr_error err;
    const char *missing = tpath("missing.wrt");
    cr_assert_null(wr_replay_run(missing, NULL, &err));
    cr_assert(strstr(err.msg, missing), "%s", err.msg);
    const char *junk = tpath("junk.wrt");
    FILE *f = fopen(junk, "wb");
    cr_assert_not_null(f);
    for (int i = 0; i < 4096; i++)
        fputc(i * 7 & 0xff, f);
    fclose(f);
    cr_assert_null(wr_replay_run(junk, NULL, &err));
    cr_assert(strstr(err.msg, junk), "%s", err.msg);
}

static int analyze(const char *const *args);
static int analyze_args_for_corrupt(const char *p);

Test(replay, corrupt_chunk_is_an_error_with_offset)
{
    const char *p = tpath("bad.wrt");
    gen_opts o = default_opts(8);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    FILE *f = fopen(p, "r+b");
    cr_assert_not_null(f);
    long at = (long)sb.st_size / 2;
    cr_assert_eq(fseek(f, at, SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_eq(fseek(f, at, SEEK_SET), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
    for (unsigned t = 1; t <= 2; t++) {
        wr_replay_options ro = {.threads = t, .table = double_table, .table_count = 1};
        wr_error err;
        cr_assert_null(wr_replay_run(p, &ro, &err), "a corrupt chunk must not pass");
        cr_assert(strstr(err.msg, p) && strstr(err.msg, "offset"), "%s", err.msg);
    }
    cr_assert_eq(analyze_args_for_corrupt(p), 2);
}

/* ---- warprace analyze ---------------------------------------------------- */

static int analyze_args_for_corrupt(const char *p)
{
    return analyze((const char *[]){p, "--no-db", "--quiet", NULL});
}

static int analyze(const char *const *args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "analyze";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    fflush(stdout);
    return wr_cmd_analyze(argc, argv);
}

static int64_t q_int(const char *db_path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Out of memory has an exit status of its own (4), apart from 3's
 * incomplete trace, which a script may accept (--allow-incomplete): it once
 * exited 3.  The analysis runs in a child whose address space is limited to
 * what it has at the start and a few MiB more. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SHADOWING_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SHADOWING_SANITIZER 1
#endif
#endif
#ifndef UNDER_SHADOWING_SANITIZER
#define UNDER_SHADOWING_SANITIZER 0
#endif

static uint64_t address_space_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    cr_assert_not_null(f);
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    fclose(f);
    cr_assert_gt(kb, 0);
    return kb * 1024;
}

Test(replay, cli_out_of_memory_exits_4)
{
    if (UNDER_SHADOWING_SANITIZER)
        cr_skip_test("the sanitizer's shadow needs more address space than the limit leaves");
    const char *p = tpath("m.wrt");
    gen_opts o = default_opts(4);
    o.words = 1u << 20;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (!pid) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDOUT_FILENO);
        uint64_t limit = address_space_bytes() + (10u << 20);
        struct rlimit r = {.rlim_cur = limit, .rlim_max = limit};
        setrlimit(RLIMIT_AS, &r);
        _exit(analyze((const char *[]){p, "--no-db", "--threads", "1", "--exit-code", "0", NULL}));
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the analysis died of a signal");
    cr_assert_eq(WEXITSTATUS(status), 4, "exit %d, expected 4 (out of memory)", WEXITSTATUS(status));
}

Test(replay, cli_bad_input_exits_2)
{
    cr_assert_eq(analyze((const char *[]){tpath("nope.wrt"), NULL}), 2);
    cr_assert_eq(analyze((const char *[]){NULL}), 2);
    const char *p = tpath("c.wrt");
    gen_opts o = default_opts(2);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    cr_assert_eq(analyze((const char *[]){p, "--bogus", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--engines", "nosuch", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--threads", "0", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--threads", "x", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--shards", "0", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--shards", "257", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--kernels", "(", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--threads", NULL}), 2);
    /* contradicting or empty options: the run asked for would vanish */
    const char *asked = tpath("asked.db");
    cr_assert_eq(analyze((const char *[]){p, "--db", asked, "--no-db", NULL}), 2);
    cr_assert_eq(access(asked, F_OK), -1, "nothing written");
    cr_assert_eq(analyze((const char *[]){p, "--name", "n", "--no-db", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--name", "", "--db", asked, NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--db", "", NULL}), 2);
    cr_assert_eq(analyze((const char *[]){p, "--kernels", "", "--no-db", NULL}), 2);
    cr_assert_eq(access(asked, F_OK), -1, "nothing written");
    /* a database of another schema version is refused before analysing */
    const char *db = tpath("other.db");
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_exec(h, "PRAGMA user_version = 99; CREATE TABLE x(y);", NULL, NULL, NULL);
    sqlite3_close(h);
    cr_assert_eq(analyze((const char *[]){p, "--db", db, NULL}), 2);
}

Test(replay, cli_analyzes_into_database)
{
    const char *p = tpath("a.wrt");
    gen_opts o = default_opts(4);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    int rc = analyze((const char *[]){p, "--threads", "2", "--quiet", NULL});
    const char *db = tpath("warprace.db");
    cr_assert_eq(access(db, F_OK), 0, "default database beside the trace");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs"), 1);
    cr_assert_eq(q_int(db, "SELECT events FROM runs"), (int64_t)g.events);
    cr_assert_eq(q_int(db, "SELECT threads FROM runs"), 2);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches"), 3);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM allocations"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM engine_runs"), wr_engine_count);
    int64_t races = q_int(db, "SELECT count(*) FROM races");
    cr_assert_eq(rc, races ? 1 : 0, "exit status follows the races found");
    if (wr_engine_count) {
        cr_assert_gt(races, 0, "the random trace has unsynchronized conflicts");
        int rc2 = analyze((const char *[]){p, "--threads", "1", "--exit-code", "7", "--name",
                                           "second", "--quiet", NULL});
        cr_assert_eq(rc2, 7);
        cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs WHERE name = 'second'"), 1);
        cr_assert_eq(q_int(db, "SELECT count(*) FROM races WHERE run_id = 2"), races,
                     "same races for 1 and 2 threads");
        cr_assert_eq(q_int(db, "SELECT count(*) FROM races a JOIN races b ON a.identity ="
                               " b.identity AND a.engine = b.engine AND a.count = b.count AND"
                               " a.scope_verdict = b.scope_verdict AND a.ex_address ="
                               " b.ex_address WHERE a.run_id = 1 AND b.run_id = 2"),
                     races);
        int rc3 = analyze((const char *[]){p, "--threads", "2", "--shards", "3", "--name",
                                           "sharded", "--quiet", NULL});
        cr_assert_eq(rc3, 1);
        cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE name = 'sharded' AND options"
                               " LIKE '%--shards 3%'"), 1, "the run row keeps --shards");
        cr_assert_eq(q_int(db, "SELECT count(*) FROM races a JOIN races b ON a.identity ="
                               " b.identity AND a.engine = b.engine AND a.count = b.count AND"
                               " a.ex_address = b.ex_address WHERE a.run_id = 1 AND b.run_id = 3"),
                     races, "same races with 3 shards of each engine");
        int rc4 = analyze((const char *[]){p, "--threads", "1", "--separate-passes", "--name",
                                           "separate", "--quiet", NULL});
        cr_assert_eq(rc4, 1);
        cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE name = 'separate' AND options"
                               " LIKE '%--separate-passes%'"), 1,
                     "the run row keeps --separate-passes");
        cr_assert_eq(q_int(db, "SELECT count(*) FROM races a JOIN races b ON a.identity ="
                               " b.identity AND a.engine = b.engine AND a.count = b.count AND"
                               " a.ex_address = b.ex_address WHERE a.run_id = 1 AND b.run_id = 4"),
                     races, "same races with vc and scoped in passes of their own");
    }
}

/* Runs the command with file descriptor fd (1 or 2) captured into a string
 * (caller frees). */
static char *analyze_capture_fd(const char *const *args, int fd, int *rc)
{
    const char *out = tpath("captured.txt");
    fflush(stdout);
    fflush(stderr);
    int saved = dup(fd);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    dup2(fileno(f), fd);
    *rc = analyze(args);
    fflush(stdout);
    fflush(stderr);
    dup2(saved, fd);
    close(saved);
    fclose(f);
    f = fopen(out, "r");
    cr_assert_not_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

static char *analyze_capture(const char *const *args, int *rc)
{
    return analyze_capture_fd(args, 1, rc);
}

/* The report up to its SUMMARY lines (the rest holds the path and times). */
static char *races_part(char *out)
{
    char *end = strstr(out, "SUMMARY:");
    if (end)
        *end = 0;
    return out;
}

static unsigned files_in(const char *path)
{
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    unsigned n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* `warprace analyze FILE.txt`: a text trace is assembled on the way, into
 * a temporary file that is gone afterwards, and reported as the assembled
 * trace is; the run row names the text file.  A malformed one is an input
 * error naming its line. */
Test(replay, cli_analyzes_a_text_trace)
{
    /* copies: tpath's buffers are reused */
    char *tmpdir = strdup(tpath("tmpdir"));
    cr_assert_eq(mkdir(tmpdir, 0700), 0);
    setenv("TMPDIR", tmpdir, 1);
    static const char text[] = "# two blocks store one word\n"
                               "alloc data global 4\n"
                               "launch L1 k grid=2 block=32\n"
                               "st b0 w0 lane=0 data[0] @t.cu:5:k\n"
                               "st b1 w0 lane=0 data[0] @t.cu:5:k\n"
                               "kernel_end L1\n";
    char *wrt = strdup(assemble_text("direct", text));
    char *txt = strdup(tpath("direct.txt"));
    int rc;
    char *from_wrt = races_part(analyze_capture((const char *[]){wrt, "--no-db", NULL}, &rc));
    cr_assert_eq(rc, 1);
    char *db = strdup(tpath("direct.db"));
    char *from_txt =
        races_part(analyze_capture((const char *[]){txt, "--db", db, NULL}, &rc));
    cr_assert_eq(rc, 1, "%s", from_txt);
    cr_assert(strstr(from_txt, "WARNING: data race (vc): write/write, inter-block"), "%s",
              from_txt);
    cr_assert(strstr(from_txt, "t.cu:5:k"), "%s", from_txt);
    cr_assert_str_eq(from_txt, from_wrt);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE trace_path LIKE '%/direct.txt'"
                           " AND name = 'direct.txt' AND status = 'complete'"),
                 1);
    cr_assert_eq(files_in(tmpdir), 0, "the assembled trace is removed");
    free(from_wrt);
    free(from_txt);

    char *bad = strdup(tpath("bad.txt"));
    FILE *f = fopen(bad, "w");
    cr_assert_not_null(f);
    fputs("alloc data global 4\nfrobnicate b0\n", f);
    fclose(f);
    char *err = analyze_capture_fd((const char *[]){bad, "--no-db", NULL}, 2, &rc);
    cr_assert_eq(rc, 2);
    cr_assert(strstr(err, "bad.txt:2:"), "names the line: %s", err);
    cr_assert_eq(files_in(tmpdir), 0, "nothing left behind by a failed assembly");
    free(err);
    /* neither text nor a trace: the binary reader's error */
    f = fopen(bad, "wb");
    cr_assert_not_null(f);
    fputs("\x01\x02 this is neither text nor a trace", f);
    fclose(f);
    err = analyze_capture_fd((const char *[]){bad, "--no-db", NULL}, 2, &rc);
    cr_assert_eq(rc, 2);
    cr_assert(strstr(err, "not a warprace trace"), "%s", err);
    free(err);
    unsetenv("TMPDIR");
    free(tmpdir);
    free(wrt);
    free(txt);
    free(db);
    free(bad);
}

/* A race side that is a host copy says which copy: its direction, size and
 * stream, and its call site where the trace has one. */
Test(replay, cli_report_describes_host_copies_and_launch_sites)
{
    static const char text[] = "alloc data global 64\n"
                               "launch L1 k grid=1 block=32 stream=1 @main.cu:7:main\n"
                               "st b0 w0 lane=0 data[0] @k.cu:5:k\n"
                               "copy.d2h src=data bytes=64 stream=2 async\n"
                               "kernel_end L1\n"
                               "launch L2 k grid=1 block=32 stream=3\n"
                               "st b0 w0 lane=0 data[8] @k.cu:5:k\n"
                               "copy.memset dst=data+32 bytes=32 stream=0x80000004 @main.cu:9:main\n"
                               "kernel_end L2\n";
    char *wrt = strdup(assemble_text("copies", text));
    int rc;
    char *out = analyze_capture((const char *[]){wrt, "--no-db", "--engines", "vc", NULL}, &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "  read   at ? (no host call site recorded)\n"
                          "         by the host, async device-to-host copy of 64 bytes on stream 2,"),
              "%s", out);
    cr_assert(strstr(out, "  write  at main.cu:9:main\n"
                          "         by the host, memset of 32 bytes on non-blocking stream 4,"),
              "%s", out);
    /* a kernel side says where the host launched it, when the trace says */
    cr_assert(strstr(out, "         by kernel k (launch 1) block 0 warp 0 lane 0, event #2\n"
                          "         launched at main.cu:7:main\n"), "%s", out);
    cr_assert(strstr(out, "         by kernel k (launch 2) block 0 warp 0 lane 0, event #6\n"
                          "  write  at main.cu:9:main"), "launch 2 has no site:\n%s", out);
    free(out);
    free(wrt);
}

Test(replay, kernel_names_read_as_their_source_spells_them)
{
    char *s = wr_demangle("_Z9histogramPKfPj");
    if (wr_demangler_available())
        cr_expect_str_eq(s, "histogram(float const*, unsigned int*)");
    else
        cr_expect_str_eq(s, "_Z9histogramPKfPj");
    free(s);
    s = wr_demangle("stencil");   /* a C kernel (extern "C"): its name as it is */
    cr_expect_str_eq(s, "stencil");
    free(s);
    s = wr_demangle("_Znot_a_symbol");
    cr_expect_str_eq(s, "_Znot_a_symbol");
    free(s);
    s = wr_demangle(NULL);
    cr_expect_str_eq(s, "");
    free(s);
    /* a crafted name from a corrupt trace: deep nesting, shown as it is */
    size_t n = 200000;
    char *deep = malloc(n + 1);
    memcpy(deep, "_Z1f", 4);
    for (size_t i = 4; i < n; i++)
        deep[i] = "PA1_"[i % 4];
    deep[n] = 0;
    s = wr_demangle(deep);
    cr_expect_str_eq(s, deep);
    free(s);
    free(deep);
    /* --kernels matches the symbol or the demangled name */
    regex_t re;
    cr_assert_eq(regcomp(&re, "^histogram\\(float", REG_EXTENDED | REG_NOSUB), 0);
    cr_expect_eq(wr_kernel_matches(&re, "_Z9histogramPKfPj"), wr_demangler_available());
    cr_expect(!wr_kernel_matches(&re, "_Z6reducePf"));
    cr_expect(!wr_kernel_matches(&re, NULL));
    regfree(&re);
    cr_assert_eq(regcomp(&re, "^_Z9histogram", REG_EXTENDED | REG_NOSUB), 0);
    cr_expect(wr_kernel_matches(&re, "_Z9histogramPKfPj"));
    regfree(&re);
    /* the report reads them so; the race's identity keeps the symbol */
    static const char text[] = "alloc hist global 64\n"
                               "launch L1 _Z9histogramPKfPj grid=1 block=32 stream=1\n"
                               "st b0 w0 lane=0 hist[0] @h.cu:5:histogram\n"
                               "launch L2 _Z9histogramPKfPj grid=1 block=32 stream=2\n"
                               "st b0 w0 lane=0 hist[0] @h.cu:5:histogram\n"
                               "kernel_end L1\n"
                               "kernel_end L2\n";
    char *wrt = strdup(assemble_text("mangled", text));
    const char *db = tpath("mangled.db");
    unlink(db);
    int rc;
    char *out = analyze_capture((const char *[]){wrt, "--db", db, "--engines", "vc", NULL}, &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, wr_demangler_available()
                              ? "by kernel histogram(float const*, unsigned int*) (launch 1)"
                              : "by kernel _Z9histogramPKfPj (launch 1)"),
              "%s", out);
    free(out);
    /* --kernels by the name as the source spells it */
    out = analyze_capture((const char *[]){wrt, "--no-db", "--engines", "vc", "--kernels",
                                           "^histogram\\(", NULL}, &rc);
    cr_expect_eq(rc, wr_demangler_available() ? 1 : 0, "%s", out);
    cr_expect(strstr(out, wr_demangler_available() ? "(2 analysed)" : "(0 analysed)"), "%s",
              out);
    free(out);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT identity FROM races", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_expect(strstr((const char *)sqlite3_column_text(q, 0), "_Z9histogramPKfPj"), "%s",
              sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(h);
    free(wrt);
}

Test(replay, cli_report_shows_races_lost_events_and_truncation)
{
    const char *p = tpath("rep.wrt");
    gen_opts o = default_opts(6);
    o.lost = 77;
    o.abandon_half = true;
    o.launches = 4;
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    int rc;
    char *out = analyze_capture((const char *[]){p, "--no-db", "--threads", "2", NULL}, &rc);
    cr_assert(strstr(out, "WARNING: the recorder lost 77 events"), "%s", out);
    cr_assert(strstr(out, "lost 77 at event #"), "%s", out);
    cr_assert(strstr(out, "is truncated at offset"), "%s", out);
    cr_assert(strstr(out, "trace: "), "%s", out);
    for (unsigned e = 0; e < wr_engine_count; e++) {
        char line[64];
        snprintf(line, sizeof line, "SUMMARY: %-8s", wr_engines[e]->name);
        cr_assert(strstr(out, line), "no summary for %s:\n%s", wr_engines[e]->name, out);
        if (!strcmp(wr_engines[e]->name, "vc") && wr_engine_find("scoped") >= 0)
            cr_assert(strstr(out, "(one pass with scoped)"), "vc's time is its pass's:\n%s", out);
    }
    if (wr_engine_count) {
        cr_assert_eq(rc, 1);
        cr_assert(strstr(out, "WARNING: data race (") || strstr(out, "WARNING: potential race ("),
                  "%s", out);
        cr_assert(strstr(out, "at gen.cu:"), "sites by file:line:function:\n%s", out);
        cr_assert(strstr(out, "= buf+"), "allocation and offset:\n%s", out);
        cr_assert(strstr(out, "block ") && strstr(out, " warp ") && strstr(out, " lane "), "%s",
                  out);
    }
    free(out);
    /* --quiet: summaries and warnings only */
    out = analyze_capture((const char *[]){p, "--no-db", "--quiet", NULL}, &rc);
    cr_assert_null(strstr(out, "WARNING: data race"), "%s", out);
    cr_assert(strstr(out, "lost 77 events"), "%s", out);
    free(out);
}

/* A trace where b0 w0 stores buf[0] at old.cu:LINE, then makes 16 loads
 * at 16 other sites (old.cu:11..26), more than its ring and its older
 * instructions keep; then b1 w0 loads buf[0] at old.cu:30: a race whose
 * earlier side the ring no longer holds. */
static const char *store_then_forgotten(const char *name, int store_line)
{
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "alloc buf global 512\nlaunch L1 k grid=2 block=32\n"
                     "st b0 w0 lane=0 buf[0] @old.cu:%d\n", store_line);
    for (int i = 1; i <= 16; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "ld b0 w0 lane=0 buf[%d] @old.cu:%d\n",
                      4 * i, 10 + i);
    snprintf(text + n, sizeof text - (size_t)n,
             "ld b1 w0 lane=0 buf[0] @old.cu:30\nkernel_end L1\n");
    return assemble_text(name, text);
}

/* fsm finds a first side's site and position among the warp's last few
 * accesses, or its site and its instruction's newest position among the
 * last WR_RING_OLDER instructions of the older ones; one older still is
 * printed as unknown, not as event #0. */
Test(replay, cli_report_says_when_a_first_side_is_not_kept)
{
    const char *p = store_then_forgotten("old", 1);
    if (wr_engine_find("fsm") < 0)
        cr_skip("fsm not built");
    int rc;
    char *out = analyze_capture((const char *[]){p, "--no-db", "--engines", "fsm", NULL}, &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "write  at ? (not kept: older than the warp's recent accesses)\n"
                          "         by kernel k (launch 1) block 0 warp 0 lane 0, "
                          "trace position unknown\n"),
              "%s", out);
    cr_assert(strstr(out, "read   at old.cu:30\n"), "%s", out);
    cr_assert_null(strstr(out, "event #0\n"), "%s", out);
    free(out);
    /* vc keeps every context: the same race with its site and position */
    if (wr_engine_find("vc") >= 0) {
        out = analyze_capture((const char *[]){p, "--no-db", "--engines", "vc", NULL}, &rc);
        cr_assert(strstr(out, "write  at old.cu:1\n"), "%s", out);
        cr_assert_null(strstr(out, "trace position unknown"), "%s", out);
        free(out);
    }
}

/* lockset keeps the site of an access it no longer holds, not its trace
 * position; when that side is printed second (canonical order: its site
 * old.cu:40 is the higher), it still reads "trace position unknown", not
 * event #0. */
Test(replay, cli_report_says_when_a_second_side_is_not_kept)
{
    const char *p = store_then_forgotten("old2", 40);
    if (wr_engine_find("lockset") < 0)
        cr_skip("lockset not built");
    int rc;
    char *out = analyze_capture((const char *[]){p, "--no-db", "--engines", "lockset", NULL}, &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "  read   at old.cu:30\n"
                          "         by kernel k (launch 1) block 1 warp 0 lane 0, event #19\n"
                          "  write  at old.cu:40\n"
                          "         by kernel k (launch 1) block 0 warp 0 lane 0, "
                          "trace position unknown\n"),
              "%s", out);
    cr_assert_null(strstr(out, "event #0\n"), "%s", out);
    free(out);
}

/* --suppressions: a suppressed race is neither printed nor counted in the
 * exit status, the SUMMARY lines and a line per rule say how many were
 * suppressed, the others are reported as before; a bad file stops the
 * analysis (status 2) before it starts. */
Test(replay, cli_suppressions_hide_races_and_exit_status)
{
    const char *p = assemble_text("supp",
                                  "alloc a global 64\nalloc b global 64\n"
                                  "launch L1 k grid=2 block=32\n"
                                  "st b0 w0 lane=0 a[0] @one.cu:1\nld b1 w0 lane=0 a[0] @one.cu:2\n"
                                  "st b0 w0 lane=0 b[0] @lib/two.cu:3\nld b1 w0 lane=0 b[0] @lib/two.cu:4\n"
                                  "kernel_end L1\n");
    const char *rules = tpath("rules.supp");
    FILE *f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("# library code\nsite:lib/*\n", f);
    fclose(f);
    int rc;
    char *out = analyze_capture((const char *[]){p, "--no-db", "--engines", "vc,fsm", "--suppressions",
                                                 rules, NULL}, &rc);
    cr_assert_eq(rc, 1, "one.cu's race is still there:\n%s", out);
    cr_assert(strstr(out, "at one.cu:1\n"), "%s", out);
    cr_assert_null(strstr(out, "two.cu"), "%s", out);
    cr_assert(strstr(out, "SUMMARY: vc       1 race (1 more suppressed), 1 occurrence"), "%s", out);
    cr_assert(strstr(out, "SUMMARY: fsm      1 race (1 more suppressed), 1 occurrence"), "%s", out);
    char want[600];
    snprintf(want, sizeof want, "suppressed: 2 races by %s:2 (site:lib/*)\n", rules);
    cr_assert(strstr(out, want), "%s", out);
    free(out);
    /* every race suppressed: status 0 */
    f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("race:*.cu:*\n", f);
    fclose(f);
    out = analyze_capture((const char *[]){p, "--no-db", "--engines", "vc", "--suppressions", rules, NULL},
                          &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "WARNING"), "%s", out);
    cr_assert(strstr(out, "SUMMARY: vc       0 races (2 more suppressed), 0 occurrences"), "%s", out);
    free(out);
    /* a line that is not a rule, a missing file: status 2, nothing analysed */
    f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("site:ok\nsite\n", f);
    fclose(f);
    out = analyze_capture((const char *[]){p, "--no-db", "--suppressions", rules, NULL}, &rc);
    cr_assert_eq(rc, 2);
    cr_assert_null(strstr(out, "SUMMARY"), "%s", out);
    free(out);
    out = analyze_capture((const char *[]){p, "--no-db", "--suppressions", tpath("none.supp"), NULL}, &rc);
    cr_assert_eq(rc, 2);
    free(out);
}

/* A loop: 20 loads at one site since the write.  The write is no longer in
 * the ring, but its instruction is among the older ones: fsm names its site
 * and its position (the instruction's only access), as vc does. */
Test(replay, cli_report_names_a_first_side_older_than_the_ring_by_its_instruction)
{
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "alloc buf global 256\nlaunch L1 k grid=2 block=32\n"
                     "st b0 w0 lane=0 buf[0] @loop.cu:1\n");
    for (int i = 1; i <= 20; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "ld b0 w0 lane=0 buf[%d] @loop.cu:5\n", 2 * i);
    snprintf(text + n, sizeof text - (size_t)n,
             "ld b1 w0 lane=0 buf[0] @loop.cu:30\nkernel_end L1\n");
    const char *p = assemble_text("loop", text);
    int rc;
    for (int e = 0; e < 2; e++) {
        const char *engine = e ? "vc" : "fsm";
        if (wr_engine_find(engine) < 0)
            continue;
        char *out = analyze_capture((const char *[]){p, "--no-db", "--engines", engine, NULL}, &rc);
        cr_assert_eq(rc, 1, "%s", out);
        cr_assert(strstr(out, "write  at loop.cu:1\n"
                              "         by kernel k (launch 1) block 0 warp 0 lane 0, event #2\n"),
                  "%s: %s", engine, out);
        free(out);
    }
}

/* "No race" in an incomplete trace covers only what was recorded: exit 3
 * unless --allow-incomplete; races still give --exit-code's status. */
Test(replay, cli_incomplete_trace_without_races_exits_3)
{
#define INCOMPLETE_HEAD "alloc buf global 256\nlaunch L1 k grid=2 block=32\nst b0 w0 lane=0 buf[0] @c.cu:1\n"
    static const char clean[] = INCOMPLETE_HEAD "st b1 w0 lane=0 buf[32] @c.cu:2\nkernel_end L1\n";
    const char *wrt = assemble_text("c", clean);
    char path[512];
    snprintf(path, sizeof path, "%s", wrt);
    cr_assert_eq(analyze((const char *[]){path, "--no-db", "--quiet", NULL}), 0,
                 "a complete race-free trace passes");

    /* lost events */
    static const char lost[] = INCOMPLETE_HEAD "lost count=5 launch=1 block=1\nkernel_end L1\n";
#undef INCOMPLETE_HEAD
    const char *lwrt = assemble_text("l", lost);
    char lpath[512];
    snprintf(lpath, sizeof lpath, "%s", lwrt);
    cr_assert_eq(analyze((const char *[]){lpath, "--no-db", "--quiet", NULL}), 3);
    cr_assert_eq(analyze((const char *[]){lpath, "--no-db", "--quiet", "--allow-incomplete", NULL}),
                 0);
    cr_assert_eq(analyze((const char *[]){lpath, "--no-db", "--quiet", "--exit-code", "0", NULL}), 3,
                 "--exit-code speaks for races, not for a lost part");

    /* a truncated copy of the clean trace: the footer and index cut off */
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(truncate(path, sb.st_size - 8), 0);
    cr_assert_eq(analyze((const char *[]){path, "--no-db", "--quiet", NULL}), 3);
    cr_assert_eq(analyze((const char *[]){path, "--no-db", "--quiet", "--allow-incomplete", NULL}), 0);
    int rc;
    char *out = analyze_capture((const char *[]){path, "--no-db", NULL}, &rc);
    cr_assert_eq(rc, 3);
    cr_assert(strstr(out, "is truncated at offset"), "%s", out);
    free(out);
}

/* "-": the trace read once from standard input (a pipe: no size, no
 * seeking, hashed on the way): the same findings as from the file, a run
 * row that names <stdin> with the file's hash and size, and a truncated
 * stream exits 3 as a truncated file does. */
Test(replay, cli_analyzes_standard_input_as_a_stream)
{
    const char *p = tpath("s.wrt");
    gen_opts o = default_opts(5);
    gen_result g;
    cr_assert_eq(gen_trace(p, &o, &g), 0);
    char trace[512];
    snprintf(trace, sizeof trace, "%s", p);
    char db[512];
    snprintf(db, sizeof db, "%s", tpath("s.db"));
    int rc_file = analyze((const char *[]){trace, "--db", db, "--quiet", NULL});
    cr_assert_not_null(freopen(trace, "rb", stdin));
    int rc_stream = analyze((const char *[]){"-", "--db", db, "--quiet", NULL});
    cr_assert_eq(rc_stream, rc_file);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs"), 2);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE id = 2 AND trace_path = '<stdin>' AND"
                           " name = 'stdin'"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs a JOIN runs b ON a.trace_hash ="
                           " b.trace_hash AND a.trace_bytes = b.trace_bytes AND a.events ="
                           " b.events WHERE a.id = 1 AND b.id = 2"), 1,
                 "the stream's hash and size are the file's");
    int64_t races = q_int(db, "SELECT count(*) FROM races WHERE run_id = 1");
    cr_assert_gt(races, 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races a JOIN races b ON a.identity ="
                           " b.identity AND a.engine = b.engine AND a.count = b.count AND"
                           " a.ex_address = b.ex_address WHERE a.run_id = 1 AND b.run_id = 2"),
                 races, "the same races from the stream");

    /* a race-free trace cut before its footer, through standard input */
    const char *wrt = assemble_text("sc", "alloc buf global 256\nlaunch L1 k grid=2 block=32\n"
                                          "st b0 w0 lane=0 buf[0] @c.cu:1\n"
                                          "st b1 w0 lane=0 buf[32] @c.cu:2\nkernel_end L1\n");
    char cut[512];
    snprintf(cut, sizeof cut, "%s", wrt);
    struct stat sb;
    cr_assert_eq(stat(cut, &sb), 0);
    cr_assert_eq(truncate(cut, sb.st_size - 8), 0);
    cr_assert_not_null(freopen(cut, "rb", stdin));
    int rc;
    char *out = analyze_capture((const char *[]){"-", "--no-db", NULL}, &rc);
    cr_assert_eq(rc, 3);
    cr_assert(strstr(out, "WARNING: <stdin> is truncated at offset"), "%s", out);
    free(out);
}

/* A hand-off through an mbarrier, then one through a fence and a flag:
 * the report notes, beside each engine that reports races, the
 * synchronization of the trace it does not model (fsm: fences and
 * mbarriers; lockset: mbarriers); vc reports nothing and gets no note. */
Test(replay, cli_report_notes_what_an_engine_does_not_model)
{
    if (wr_engine_find("fsm") < 0 || wr_engine_find("lockset") < 0 || wr_engine_find("vc") < 0)
        cr_skip("fsm, lockset or vc not built");
    const char *p = assemble_text("unmod",
        "alloc buf shared 128\nalloc bars shared 8\nalloc data global 64\nalloc flag global 4\n"
        "launch L1 k grid=2 block=64\n"
        "mbarrier.init b0 w0 lanes=0 bars[0] count=1\n"
        "barrier b0 w0\nbarrier b0 w1\n"
        "st.shared b0 w0 lanes=0-31 buf[0..]\n"
        "mbarrier.arrive b0 w0 lanes=0 bars[0]\n"
        "mbarrier.wait b0 w1 bars[0] parity=0\n"
        "ld.shared b0 w1 lanes=0-31 buf[0..]\n"
        "st b0 w0 lane=0 data[0]\n"
        "fence b0 w0 lane=0\n"
        "atom.exch b0 w0 lane=0 flag[0]\n"
        "atom.exch b1 w0 lane=0 flag[0]\n"
        "fence b1 w0 lane=0\n"
        "ld b1 w0 lane=0 data[0]\n"
        "kernel_end L1\n");
    int rc;
    char *out = analyze_capture((const char *[]){p, "--no-db", NULL}, &rc);
    cr_assert(strstr(out, "SUMMARY: vc       0 races"), "%s", out);
    cr_assert(strstr(out, "NOTE: fsm does not model fences (2 in this trace) or mbarriers "
                          "(3 mbarrier events)"), "%s", out);
    cr_assert(strstr(out, "NOTE: lockset does not model mbarriers (3 mbarrier events)"), "%s", out);
    cr_assert_null(strstr(out, "NOTE: vc"), "%s", out);
    cr_assert_null(strstr(out, "NOTE: scoped"), "%s", out);
    free(out);
    /* an engine that reports nothing gets no note */
    out = analyze_capture((const char *[]){p, "--no-db", "--engines", "vc", NULL}, &rc);
    cr_assert_null(strstr(out, "NOTE:"), "%s", out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* ---- retired clock entries (vclock.c, launch_retire_prefix) ---- */

typedef struct textbuf {
    char *s;
    size_t n, cap;
} textbuf;

static void tb_printf(textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(textbuf *t, const char *fmt, ...)
{
    if (!t->s) {   /* (no pointer arithmetic on NULL) */
        t->cap = 4096;
        t->s = malloc(t->cap);
        cr_assert_not_null(t->s);
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        cr_assert_geq(k, 0);
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap * 2 + (size_t)k + 64;
        t->s = realloc(t->s, t->cap);
        cr_assert_not_null(t->s);
    }
}

static uint64_t retire_rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

enum { RT_WARPS = 4 };   /* a launch of 16 blocks: one clock chunk of warps */

/* One warp's random step in launch L: plain accesses to shared data, a
 * critical section under a lock (ScoRD's idiom), or a flag's release or
 * acquire, at the fence's device or block scope. */
static void retire_step(textbuf *t, uint64_t *x, unsigned L, unsigned blocks)
{
    unsigned b = (unsigned)(retire_rng(x) % blocks), w = (unsigned)(retire_rng(x) % RT_WARPS);
    unsigned word = (unsigned)(retire_rng(x) % 24), k = (unsigned)(retire_rng(x) % 4);
    const char *scope = retire_rng(x) % 4 ? "device" : "block";
    char th[64];   /* the thread: lane 0 of warp w of block b of launch L */
    snprintf(th, sizeof th, "L%u b%u w%u lane=0", L, b, w);
    switch (retire_rng(x) % 5) {
    case 0:
        tb_printf(t, "st %s data[%u] @r.cu:1\n", th, word);
        break;
    case 1:
        tb_printf(t, "ld %s data[%u] @r.cu:2\n", th, word);
        break;
    case 2:
        tb_printf(t,
                  "atom.cas %s lock[%u] cas=1 @r.cu:3\nfence.%s %s @r.cu:4\n"
                  "ld %s data[%u] @r.cu:5\nst %s data[%u] @r.cu:6\n"
                  "fence.%s %s @r.cu:7\natom.exch %s lock[%u] @r.cu:8\n",
                  th, k, scope, th, th, word, th, word, scope, th, th, k);
        break;
    case 3:
        tb_printf(t, "st %s data[%u] @r.cu:9\nfence.%s %s @r.cu:10\nst.atomic %s flag[%u] @r.cu:11\n",
                  th, word, scope, th, th, k);
        break;
    default:
        tb_printf(t, "ld.atomic %s flag[%u] @r.cu:12\nfence.%s %s @r.cu:13\nld %s data[%u] @r.cu:14\n",
                  th, k, scope, th, th, word);
        break;
    }
}

/* Rounds of kernels on streams 1 and 2 (now and then the legacy stream 0),
 * run one after the other or interleaved, with events between the streams,
 * kernel ends and host copies, over data guarded by locks and flags that
 * outlive the kernels: so that the clocks that later kernels acquire carry
 * the warps of earlier ones, whole chunks of them of one stream. */
static char *retire_program(uint64_t seed)
{
    textbuf t = {0};
    uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1;
    tb_printf(&t, "alloc data global 96\nalloc lock global 16\nalloc flag global 16\n");
    unsigned L = 0, ev = 0;
    for (unsigned round = 0; round < 7; round++) {
        unsigned a = ++L, b = ++L;
        unsigned sa = retire_rng(&x) % 6 ? 1 : 0;
        /* grids of 16 blocks, or of 10-20: chunks that launches share */
        unsigned grid = retire_rng(&x) % 2 ? 16 : 10 + (unsigned)(retire_rng(&x) % 11);
        tb_printf(&t, "launch L%u ka grid=%u block=%u stream=%u\n", a, grid, RT_WARPS * 32, sa);
        tb_printf(&t, "launch L%u kb grid=%u block=%u stream=2\n", b, grid, RT_WARPS * 32);
        /* the blocks enter in order, a launch's warps numbered together
         * (whole chunks of one stream), or the two launches' interleaved;
         * some rounds run stream 1 alone */
        bool interleave = retire_rng(&x) % 3 == 0, a_alone = retire_rng(&x) % 3 == 0;
        bool a_first = a_alone || retire_rng(&x) % 2;
        unsigned steps = 60 + (unsigned)(retire_rng(&x) % 60);
        for (unsigned i = 0; i < 2 * grid; i++) {
            unsigned l = interleave ? (i % 2 ? a : b) : (i < grid) == a_first ? a : b;
            if (!(a_alone && l == b))
                tb_printf(&t, "block_enter L%u b%u\n", l, interleave ? i / 2 : i % grid);
        }
        for (unsigned i = 0; i < 2 * steps; i++) {
            unsigned l = interleave ? (retire_rng(&x) % 2 ? a : b) : (i < steps) == a_first ? a : b;
            if (!(a_alone && l == b))
                retire_step(&t, &x, l, grid);
        }
        switch (retire_rng(&x) % 5) {
        case 0:   /* stream 2 waits for stream 1 */
            ev++;
            tb_printf(&t, "event_record event=%u stream=1\nstream_wait stream=2 event=%u\n", ev,
                      ev);
            break;
        case 1:
            ev++;
            tb_printf(&t, "event_record event=%u stream=2\nstream_wait stream=1 event=%u\n", ev,
                      ev);
            break;
        case 2:
            tb_printf(&t, "kernel_end L%u\nkernel_end L%u\n", a, b);
            break;
        case 3:
            tb_printf(&t, "copy.h2d dst=data[%u] bytes=16 stream=%u async\n",
                      (unsigned)(retire_rng(&x) % 20), 1 + (unsigned)(retire_rng(&x) % 2));
            break;
        default:
            break;
        }
    }
    tb_printf(&t, "device_sync\n");
    return t.s;
}

/* A launch's start drops the clock entries of its stream's earlier kernels
 * (their stream position answers for them): the findings of vc and scoped
 * are the same with and without that, on programs whose clocks do carry
 * such entries. */
Test(replay, retired_clock_entries_change_no_finding)
{
    if (wr_engine_find("vc") < 0 || wr_engine_find("scoped") < 0)
        cr_skip_test("vc or scoped not built");
    uint32_t mask = 1u << wr_engine_find("vc") | 1u << wr_engine_find("scoped");
    for (uint64_t seed = 1; seed <= 100; seed++) {
        char *text = retire_program(seed);
        const char *p = assemble_text("rt", text);
        free(text);
        wr_error err;
        wr_replay_options o = {.threads = 1, .engine_mask = mask};
        wr_replay *kept = wr_replay_run(p, &o, &err);
        cr_assert_not_null(kept, "%s", err.msg);
        wr_hb_allow_retire(false);
        wr_replay *all = wr_replay_run(p, &o, &err);
        wr_hb_allow_retire(true);
        cr_assert_not_null(all, "%s", err.msg);
        const wr_race_group *gr;
        cr_assert_gt(wr_findings_groups(wr_replay_findings(all), &gr), 0, "races expected");
        char what[64];
        snprintf(what, sizeof what, "seed %llu: retiring vs not", (unsigned long long)seed);
        expect_same_findings(all, kept, what);
        wr_replay_free(kept);
        wr_replay_free(all);
    }
}

/*
 * The threaded replay driver without Criterion, so that it also runs under
 * ThreadSanitizer (Criterion itself cannot start under TSan: its
 * inheritable arena fails, Snaipe/Criterion#274).  For several generated
 * traces: results identical for 1..4 threads and tiny/large queues, with
 * the engine double and with every built engine; counts; lost events;
 * truncated traces; kernel selection; and `warprace analyze` end to end.
 * Exit status 0 or 1; every failed check prints a line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "gen.h"
#include "replay.h"

static int failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static const wr_engine_ops *const double_table[] = {&gen_conflict_engine};

static wr_replay *run_sharded(const char *path, const wr_engine_ops *const *table,
                              unsigned count, unsigned threads, unsigned shards, unsigned queue,
                              const char *kernels)
{
    wr_replay_options o = {.table = table, .table_count = count, .threads = threads,
                           .shards = shards, .queue_batches = queue, .kernels = kernels};
    wr_error err;
    wr_replay *rp = wr_replay_run(path, &o, &err);
    CHECK(rp, "%s", err.msg);
    return rp;
}

static wr_replay *run(const char *path, const wr_engine_ops *const *table, unsigned count,
                      unsigned threads, unsigned queue, const char *kernels)
{
    return run_sharded(path, table, count, threads, 0, queue, kernels);
}

/* shadow words are compared for the engine double only: real engines may
 * track some words (locks, sync objects) in every shard */
static void same(const wr_replay *a, const wr_replay *b, const char *what)
{
    const wr_race_group *ga, *gb;
    size_t na = wr_findings_groups(wr_replay_findings(a), &ga);
    size_t nb = wr_findings_groups(wr_replay_findings(b), &gb);
    CHECK(na == nb, "%s: %zu vs %zu groups", what, na, nb);
    for (size_t i = 0; i < na && i < nb; i++) {
        CHECK(ga[i].count == gb[i].count, "%s: group %zu count", what, i);
        CHECK(!memcmp(&ga[i].example, &gb[i].example, sizeof ga[i].example),
              "%s: group %zu example", what, i);
    }
    const wr_replay_stats *sa = wr_replay_get_stats(a), *sb = wr_replay_get_stats(b);
    CHECK(sa->events == sb->events, "%s", what);
    if (wr_replay_table(a)[0] == &gen_conflict_engine)
        for (unsigned e = 0; e < sa->engine_count; e++)
            CHECK(sa->shadow_words[e] == sb->shadow_words[e], "%s: engine %u shadow words", what,
                  e);
}

int main(void)
{
    char dir[] = "/tmp/wr-replay-check-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[300], path2[300];
    snprintf(path, sizeof path, "%s/t.wrt", dir);
    snprintf(path2, sizeof path2, "%s/cut.wrt", dir);

    for (uint64_t seed = 1; seed <= 3; seed++) {
        /* seed 3: phases end by split barriers and mbarriers too */
        gen_opts o = {.seed = seed, .launches = 4, .blocks = 3, .warps = 3, .steps = 5,
                      .phases = seed == 3 ? 6 : 3, .words = 16384, .chunk_bytes = 1024,
                      .lost = seed * 5, .sync_mix = seed == 3};
        gen_result g;
        CHECK(gen_trace(path, &o, &g) == 0, "gen");
        for (int real = 0; real < 2; real++) {
            if (real && wr_engine_count == 0)
                continue;
            const wr_engine_ops *const *t = real ? NULL : double_table;
            unsigned tc = real ? 0 : 1;
            wr_replay *r1 = run(path, t, tc, 1, 0, NULL);
            if (!r1)
                continue;
            const wr_replay_stats *st = wr_replay_get_stats(r1);
            CHECK(st->events == g.events, "%lu vs %lu", (unsigned long)st->events,
                  (unsigned long)g.events);
            CHECK(st->thread_accesses == g.thread_accesses, "thread accesses");
            CHECK(st->lost_events == seed * 5, "lost events surfaced");
            const wr_race_group *gr;
            CHECK(wr_findings_groups(wr_replay_findings(r1), &gr) > 0, "races expected");
            for (unsigned threads = 2; threads <= 4; threads++)
                for (unsigned queue = 1; queue <= 16; queue += 15) {
                    /* real engines: the default (one shard each) and a shard per worker */
                    unsigned shards = real && queue == 16 ? threads : 0;
                    wr_replay *rt = run_sharded(path, t, tc, threads, shards, queue, NULL);
                    if (rt) {
                        char what[80];
                        snprintf(what, sizeof what, "%s, 1 vs %u threads, %u shards, queue %u",
                                 real ? "engines" : "double", threads,
                                 wr_replay_get_stats(rt)->shards, queue);
                        same(r1, rt, what);
                        wr_replay_free(rt);
                    }
                }
            wr_replay_free(r1);

            /* kernel selection under threads */
            wr_replay *k1 = run(path, t, tc, 1, 0, "gen_a");
            wr_replay *k3 = run(path, t, tc, 3, 2, "gen_a");
            if (k1 && k3) {
                same(k1, k3, "--kernels, 1 vs 3 threads");
                CHECK(wr_replay_get_stats(k3)->launches_selected == 2, "gen_a launches");
                CHECK(wr_replay_get_stats(k3)->skipped_events > 0, "skipped");
            }
            wr_replay_free(k1);
            wr_replay_free(k3);
        }

        /* truncated copy */
        struct stat sb;
        CHECK(stat(path, &sb) == 0, "stat");
        char cmd[700];
        snprintf(cmd, sizeof cmd, "head -c %lld '%s' > '%s'", (long long)sb.st_size / 2, path,
                 path2);
        CHECK(system(cmd) == 0, "%s", cmd);
        wr_replay *c1 = run(path2, double_table, 1, 1, 0, NULL);
        wr_replay *c2 = run(path2, double_table, 1, 2, 1, NULL);
        if (c1 && c2) {
            CHECK(wr_replay_get_stats(c2)->truncated, "truncated flagged");
            CHECK(wr_replay_get_stats(c2)->events < g.events, "only complete chunks");
            same(c1, c2, "truncated, 1 vs 2 threads");
        }
        wr_replay_free(c1);
        wr_replay_free(c2);
    }

    /* the command end to end, with threads */
    char db[320];
    snprintf(db, sizeof db, "%s/x.db", dir);
    char *argv[] = {"analyze", path, "--threads", "3", "--db", db, "--quiet", NULL};
    int rc = wr_cmd_analyze(7, argv);
    CHECK(rc == (wr_engine_count ? 1 : 0), "analyze exit status %d", rc);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        failures++;
    printf("replay_check: %d failure%s\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}

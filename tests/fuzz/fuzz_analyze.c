/* libFuzzer target for the analyzer end to end: any text trace
 * (formats/TEXT.md) that assembles is replayed through all four engines
 * several ways -- one worker and one shard, two workers and three shards
 * (with a one-slot ring), one worker with vc and scoped in separate passes,
 * one worker keeping every clock layer apart from the start, one worker
 * with the engines' portable word loops and clock joins instead of their
 * AVX2 forms, vc's and scoped's word loop without its memo and their
 * launches keeping their stream's earlier clock entries, one
 * worker collecting vc's and scoped's contexts before every second access
 * (hbcore.c) -- and the findings must be identical (analyzer/replay.h: "findings are
 * identical for any threads and shards"; separate_passes and
 * keep_all_layers: "the findings are the same"; shadow.h,
 * wr_shadow_simd: "both forms give the same cells"; clock.h: "both forms
 * give the same clocks"; vclock.h, wr_hb_allow_retire: "the answers are
 * the same either way"; ENGINES.md: "speed never changes a verdict", collecting
 * "never changes" a report).  Compared as tests/analyze/test_replay.c's expect_same_findings
 * does: the merged groups (count, example by memcmp) and the resolved races
 * (identity, count, example address; also engine, verdict, potential).  A
 * replay may fail (NULL) only if every one fails with the same message.  Any
 * difference is printed and aborts, so libFuzzer keeps the input; so does
 * a race whose two sides are reads (no conflict).  Inputs
 * over 64 KiB, or whose host copies sum to over 1 MiB, are skipped. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hbcore.h"
#include "replay.h"
#include "shadow.h"
#include "text_priv.h"

#define MAX_INPUT (64u << 10)
/* Host copies are analysed word by word (shadow for every word copied), so
 * a 40-byte line can ask for gigabytes: inputs whose copies sum to more than
 * this are skipped, which keeps each input to milliseconds. */
#define MAX_COPY_BYTES (1u << 20)

static const struct config {
    unsigned threads, shards, queue_batches;
    bool separate;
    bool keep_layers;
    bool portable;   /* the engines' portable word loops and clock joins, not their
                        AVX2 forms, vc's and scoped's word loop without its memo, and
                        no retired clock entries (wr_hb_allow_retire) */
    unsigned collect_every;   /* wr_hbe_collect_every */
    const char *what;
} configs[] = {
    {1, 1, 0, false, false, false, 0, "threads=1 shards=1"},
    {2, 3, 1, false, false, false, 0, "threads=2 shards=3 queue=1"},
    {1, 0, 0, true, false, false, 0, "threads=1 separate passes"},
    {1, 1, 0, false, true, false, 0, "threads=1 every clock layer kept apart"},
    {1, 1, 0, false, false, true, 0, "threads=1 portable word loops, no word memo, no retiring"},
    {1, 1, 0, false, false, false, 2, "threads=1 contexts collected every 2 accesses"},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

static char wrt[64];

static const char *engine_name(const wr_replay *rp, unsigned e)
{
    const wr_engine_ops *const *t = wr_replay_table(rp);
    return t && t[e] && t[e]->name ? t[e]->name : "?";
}

/* The group's identity in catalog ids, and its example. */
static void print_group(const char *label, const wr_replay *rp, const wr_race_group *g)
{
    const wr_race *r = &g->example;
    fprintf(stderr,
            "  %s: engine %s class %s verdict %u potential %u count %" PRIu64 "\n"
            "    first  site %" PRIu32 " %s L%" PRIu32 " b%" PRIu32 " w%" PRIu32
            " lane %" PRIu32 " seq %" PRIu64 "\n"
            "    second site %" PRIu32 " %s L%" PRIu32 " b%" PRIu32 " w%" PRIu32
            " lane %" PRIu32 " seq %" PRIu64 "\n"
            "    space %u addr 0x%" PRIx64 "\n",
            label, engine_name(rp, r->engine), wr_race_class_name(r->race_class), r->verdict,
            r->potential, g->count, r->first.site, wr_access_kind_name(r->first.kind),
            r->first.launch, r->first.block, r->first.warp, r->first.lane, r->first.seq,
            r->second.site, wr_access_kind_name(r->second.kind), r->second.launch,
            r->second.block, r->second.warp, r->second.lane, r->second.seq, r->space, r->addr);
}

static void print_resolved(const char *label, const wr_resolved_race *r)
{
    fprintf(stderr,
            "  %s: engine %s identity %s verdict %u potential %u count %" PRIu64
            " addr 0x%" PRIx64 " seq %" PRIu64 "/%" PRIu64 "\n",
            label, r->engine_name ? r->engine_name : "?", r->identity, r->verdict, r->potential,
            r->count, r->example.addr, r->example.first.seq, r->example.second.seq);
}

static void mismatch_groups(const char *what, const wr_replay *a, const wr_replay *b,
                            const wr_race_group *ga, size_t na, const wr_race_group *gb,
                            size_t nb, size_t i, const char *why)
{
    fprintf(stderr, "fuzz_analyze: findings differ, %s vs %s: group %zu: %s (%zu vs %zu groups)\n",
            configs[0].what, what, i, why, na, nb);
    if (i < na)
        print_group(configs[0].what, a, &ga[i]);
    else
        fprintf(stderr, "  %s: no group %zu\n", configs[0].what, i);
    if (i < nb)
        print_group(what, b, &gb[i]);
    else
        fprintf(stderr, "  %s: no group %zu\n", what, i);
    abort();
}

static void mismatch_resolved(const char *what, const wr_resolved_race *ra, size_t ma,
                              const wr_resolved_race *rb, size_t mb, size_t i, const char *why)
{
    fprintf(stderr,
            "fuzz_analyze: resolved races differ, %s vs %s: race %zu: %s (%zu vs %zu races)\n",
            configs[0].what, what, i, why, ma, mb);
    if (i < ma)
        print_resolved(configs[0].what, &ra[i]);
    else
        fprintf(stderr, "  %s: no race %zu\n", configs[0].what, i);
    if (i < mb)
        print_resolved(what, &rb[i]);
    else
        fprintf(stderr, "  %s: no race %zu\n", what, i);
    abort();
}

static void expect_same_findings(const wr_replay *a, const wr_replay *b, const char *what)
{
    const wr_race_group *ga, *gb;
    size_t na = wr_findings_groups(wr_replay_findings(a), &ga);
    size_t nb = wr_findings_groups(wr_replay_findings(b), &gb);
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        if (ga[i].count != gb[i].count)
            mismatch_groups(what, a, b, ga, na, gb, nb, i, "count");
        if (memcmp(&ga[i].example, &gb[i].example, sizeof ga[i].example))
            mismatch_groups(what, a, b, ga, na, gb, nb, i, "example");
    }
    if (na != nb)
        mismatch_groups(what, a, b, ga, na, gb, nb, n, "group count");

    wr_resolved_race *ra, *rb;
    size_t ma = wr_replay_resolve(a, &ra), mb = wr_replay_resolve(b, &rb);
    size_t m = ma < mb ? ma : mb;
    for (size_t i = 0; i < m; i++) {
        const char *why = NULL;
        if (ra[i].engine != rb[i].engine)
            why = "engine";
        else if (strcmp(ra[i].identity, rb[i].identity))
            why = "identity";
        else if (ra[i].count != rb[i].count)
            why = "count";
        else if (ra[i].example.addr != rb[i].example.addr)
            why = "example address";
        else if (ra[i].verdict != rb[i].verdict || ra[i].potential != rb[i].potential)
            why = "verdict/potential";
        if (why)
            mismatch_resolved(what, ra, ma, rb, mb, i, why);
    }
    if (ma != mb)
        mismatch_resolved(what, ra, ma, rb, mb, m, "race count");
    wr_resolved_free(ra, ma);
    wr_resolved_free(rb, mb);
}

/* Every race names a conflict: two reads are never one, in any engine. */
static void expect_conflicts(const wr_replay *rp)
{
    const wr_race_group *g;
    size_t n = wr_findings_groups(wr_replay_findings(rp), &g);
    for (size_t i = 0; i < n; i++)
        if (g[i].example.first.kind == WR_KIND_READ && g[i].example.second.kind == WR_KIND_READ) {
            fprintf(stderr, "fuzz_analyze: a read/read race, group %zu:\n", i);
            print_group(configs[0].what, rp, &g[i]);
            abort();
        }
}

/* Sums the bytes of the trace's host copies (saturating), as far as the
 * trace reads back (where it does not, the replays report their own error). */
static uint64_t copy_bytes(const char *path)
{
    wr_error err;
    wr_reader *r = wr_reader_open(path, &err);
    if (!r)
        return 0;
    uint64_t sum = 0;
    wr_batch b;
    while (wr_reader_next(r, &b, &err) == 1) {
        for (size_t i = 0; i < b.count; i++) {
            const wr_event *ev = &b.events[i];
            if (ev->kind != WR_EV_HOST_COPY)
                continue;
            uint64_t n = ev->u.copy.bytes;
            sum = n > UINT64_MAX - sum ? UINT64_MAX : sum + n;
        }
        wr_batch_release(&b);
    }
    wr_reader_close(r);
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!wrt[0])
        snprintf(wrt, sizeof wrt, "/tmp/wr-fuzz-analyze-%d.wrt", (int)getpid());
    if (size > MAX_INPUT)
        return 0;
    wr_error err;
    if (wr_text_assemble_buf("fuzz.txt", (const char *)data, size, wrt, &err)) {
        unlink(wrt);
        return 0;
    }
    if (copy_bytes(wrt) > MAX_COPY_BYTES) {
        unlink(wrt);
        return 0;
    }

    wr_replay *rp[NCONFIGS];
    static wr_error errs[NCONFIGS];
    size_t failed = 0;
    for (size_t c = 0; c < NCONFIGS; c++) {
        wr_replay_options o = {.threads = configs[c].threads, .shards = configs[c].shards,
                               .queue_batches = configs[c].queue_batches, .no_hash = true,
                               .separate_passes = configs[c].separate,
                               .keep_all_layers = configs[c].keep_layers};
        wr_shadow_allow_simd(!configs[c].portable);
        wr_vc_allow_simd(!configs[c].portable);
        wr_hbe_allow_word_memo(!configs[c].portable);
        wr_hb_allow_retire(!configs[c].portable);
        wr_hbe_collect_every(configs[c].collect_every);
        rp[c] = wr_replay_run(wrt, &o, &errs[c]);
        wr_hbe_collect_every(0);
        wr_hb_allow_retire(true);
        wr_hbe_allow_word_memo(true);
        wr_vc_allow_simd(true);
        wr_shadow_allow_simd(true);
        failed += !rp[c];
    }
    unlink(wrt);

    if (failed) {
        bool same = failed == NCONFIGS;
        for (size_t c = 1; same && c < NCONFIGS; c++)
            same = !strcmp(errs[0].msg, errs[c].msg);
        if (!same) {
            fprintf(stderr, "fuzz_analyze: replays fail differently:\n");
            for (size_t c = 0; c < NCONFIGS; c++)
                fprintf(stderr, "  %s: %s\n", configs[c].what, rp[c] ? "ok" : errs[c].msg);
            abort();
        }
        return 0;
    }

    expect_conflicts(rp[0]);
    for (size_t c = 1; c < NCONFIGS; c++)
        expect_same_findings(rp[0], rp[c], configs[c].what);
    for (size_t c = 0; c < NCONFIGS; c++)
        wr_replay_free(rp[c]);
    return 0;
}

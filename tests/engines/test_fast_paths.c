/*
 * Every engine's coalesced fast path (fsm's memo of the table's answer,
 * the word-per-lane loops of vc, scoped and lockset) must give exactly what
 * its general per-lane path gives.  The same random programs run twice:
 * once with strided accesses, which take the fast paths (and, whole
 * aligned lines, the packed shadow lines of shadow.h), and once with the
 * same lane addresses spelled out as vectors, which never do.  Findings
 * must match group for group, example for example, at 1 and at 3 shards.
 */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "hbcore.h"
#include "lf_events.h"
#include "shadow.h"

extern const wr_engine_ops wr_engine_vc, wr_engine_scoped, wr_engine_lockset, wr_engine_fsm;

#define X 0x10000ull   /* data[]: page-aligned, so bases near X + 4096 cross a page */
#define STEPS 400

static uint64_t rnd_state;
static uint32_t rnd(uint32_t n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rnd_state >> 33) % n;
}

static wr_findings *run_random_program(const wr_engine_ops *ops, unsigned shards,
                                       uint64_t seed, int as_vectors,
                                       uint64_t lanes[][32], uint64_t *shadow_words)
{
    static uint64_t both_runs_lanes[STEPS][32];
    if (!lanes)
        lanes = both_runs_lanes;
    rnd_state = seed;
    lf_run r;
    lf_start(&r, ops, shards);
    uint32_t launch = 1;
    lf_feed(&r, lf_launch(launch, 0));
    for (unsigned i = 0; i < STEPS; i++) {
        /* mostly one warp: lanes of one warp at shifted offsets are where a
         * wrong shortcut would confuse "same thread" with "same warp" */
        uint32_t what = rnd(100), b = rnd(4) == 0, w = rnd(3) == 0;
        if (what < 4) {            /* a block barrier: both warps arrive */
            lf_feed(&r, lf_barrier(launch, b, 0, 64));
            lf_feed(&r, lf_barrier(launch, b, 1, 64));
        } else if (what < 8) {     /* a warp sync, sometimes partial */
            lf_feed(&r, lf_warp_sync(launch, b, w, rnd(2) ? WR_FULL_MASK : 0x0000ffffu));
        } else if (what < 10) {    /* a fence (lockset and the hb engines track them) */
            lf_feed(&r, lf_fence(launch, b, w, WR_FULL_MASK, rnd(2) ? WR_SCOPE_DEVICE : WR_SCOPE_BLOCK));
        } else if (what < 11) {    /* the next kernel, same stream */
            lf_feed(&r, lf_kernel_end(launch));
            lf_feed(&r, lf_launch(++launch, 0));
        } else {
            static const uint8_t ops_[] = {WR_OP_LOAD, WR_OP_LOAD, WR_OP_STORE, WR_OP_STORE,
                                           WR_OP_ATOMIC_RMW};
            uint8_t op = ops_[rnd(5)];
            uint32_t mask = rnd(4) ? WR_FULL_MASK : (rnd(0xffffffffu) | 1u);
            /* a third cover whole aligned 32-word lines (the shadow packs
             * them), a fifth straddle the page boundary at X + 4096, the
             * rest start anywhere near X (and unpack packed lines) */
            uint32_t shape = rnd(15);
            uint64_t base = shape < 5    ? X + 128ull * rnd(4)
                            : shape < 8 ? X + 4096 - 64 + 4ull * rnd(40)
                                        : X + 4ull * rnd(40);
            /* one in eight: stride 0 (the general path, on lines the fast
             * path may have packed), half of them a single lane, the rest
             * several lanes on one word (in the vector run, a run of lanes
             * on one word: each lane's atomic acquires) */
            int64_t stride = 4;
            if (rnd(8) == 0) {
                stride = 0;
                if (rnd(2))
                    mask = 1u << rnd(32);
                else if (rnd(2))
                    mask = WR_FULL_MASK;
            }
            wr_event e = lf_acc(200 + rnd(4), launch, b, w, mask, op,
                                op == WR_OP_ATOMIC_RMW ? WR_SCOPE_DEVICE : 0, base, stride);
            if (rnd(5) == 0)
                e.u.access.space = WR_SPACE_SHARED;
            /* a few are vectors in both runs: the general path then meets
             * lines the fast path packed */
            bool vector_in_both = rnd(6) == 0;
            if (as_vectors || vector_in_both) {
                for (unsigned l = 0; l < 32; l++)
                    lanes[i][l] = (mask >> l) & 1u ? base + (uint64_t)stride * l : 0;
                e.u.access.addr_mode = WR_ADDR_VECTOR;
                e.u.access.lane_addr = lanes[i];
            }
            lf_feed(&r, e);
        }
    }
    lf_feed(&r, lf_kernel_end(launch));
    wr_findings *f = lf_end(&r);
    *shadow_words = r.shadow_words;
    return f;
}

static void same_findings(const wr_engine_ops *ops)
{
    static uint64_t lanes[STEPS][32];
    uint64_t races = 0;
    for (unsigned shards = 1; shards <= 3; shards += 2)
        for (uint64_t seed = 1; seed <= 150; seed++) {
            uint64_t fast_words, slow_words;
            wr_findings *fast = run_random_program(ops, shards, seed, 0, NULL, &fast_words);
            wr_findings *slow = run_random_program(ops, shards, seed, 1, lanes, &slow_words);
            /* the words tracked are what the SUMMARY line and the run row
             * report: a shortcut must count them as the per-lane path does */
            cr_assert_eq(fast_words, slow_words,
                         "%s, %u shards, seed %" PRIu64 ": %" PRIu64 " shadow words on the fast "
                         "path, %" PRIu64 " per lane", ops->name, shards, seed, fast_words, slow_words);
            const wr_race_group *g1, *g2;
            size_t n1 = lf_groups(fast, &g1), n2 = lf_groups(slow, &g2);
            cr_assert_eq(n1, n2,
                         "%s, %u shards, seed %" PRIu64 ": %zu race groups on the fast path, "
                         "%zu per lane", ops->name, shards, seed, n1, n2);
            for (size_t k = 0; k < n1; k++) {
                const wr_race *a = &g1[k].example, *b = &g2[k].example;
                cr_assert_eq(g1[k].count, g2[k].count, "%s, %u shards, seed %" PRIu64
                             " group %zu: count %" PRIu64 " vs %" PRIu64, ops->name, shards,
                             seed, k, g1[k].count, g2[k].count);
                cr_assert(a->addr == b->addr && a->race_class == b->race_class &&
                              a->verdict == b->verdict && a->first.seq == b->first.seq &&
                              a->second.seq == b->second.seq && a->first.lane == b->first.lane &&
                              a->second.lane == b->second.lane && a->first.site == b->first.site &&
                              a->second.site == b->second.site,
                          "%s, %u shards, seed %" PRIu64 " group %zu: the examples differ",
                          ops->name, shards, seed, k);
                races += g1[k].count;
            }
            wr_findings_free(fast);
            wr_findings_free(slow);
        }
    cr_assert_gt(races, 0, "%s: the random programs must race somewhere to compare anything",
                 ops->name);
}

Test(fast_paths, vc_equals_per_lane_path) { same_findings(&wr_engine_vc); }
Test(fast_paths, scoped_equals_per_lane_path) { same_findings(&wr_engine_scoped); }
Test(fast_paths, lockset_equals_per_lane_path) { same_findings(&wr_engine_lockset); }
Test(fast_paths, fsm_equals_per_lane_path) { same_findings(&wr_engine_fsm); }
/* fsm's and lockset's coalesced loops, and vc's and scoped's word memo,
 * have AVX2 forms, taken where the CPU has AVX2: the tests above then hold
 * those forms, the *_portable_* ones the portable loops. */
/* vc's and scoped's word loop gives a word of a shifted access the answer
 * of the word before it when their cells look alike from their lanes
 * (hbcore.c, words_by_lane): the tests above hold it to the per-lane path,
 * these the word loop without it (removing any of its conditions on the
 * warp's lane ordering fails the tests above within their 150 seeds). */
Test(fast_paths, vc_without_word_memo_equals_per_lane_path)
{
    wr_hbe_allow_word_memo(false);
    same_findings(&wr_engine_vc);
}
Test(fast_paths, scoped_without_word_memo_equals_per_lane_path)
{
    wr_hbe_allow_word_memo(false);
    same_findings(&wr_engine_scoped);
}
Test(fast_paths, vc_portable_word_memo_equals_per_lane_path)
{
    wr_shadow_allow_simd(false);
    same_findings(&wr_engine_vc);
}
Test(fast_paths, scoped_portable_word_memo_equals_per_lane_path)
{
    wr_shadow_allow_simd(false);
    same_findings(&wr_engine_scoped);
}
Test(fast_paths, lockset_portable_loop_equals_per_lane_path)
{
    wr_shadow_allow_simd(false);
    same_findings(&wr_engine_lockset);
}
Test(fast_paths, fsm_portable_loop_equals_per_lane_path)
{
    wr_shadow_allow_simd(false);
    same_findings(&wr_engine_fsm);
}

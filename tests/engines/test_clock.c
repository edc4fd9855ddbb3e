/*
 * clock.h: shared-chunk vector clocks against a dense model.  Random
 * programs of set_max / set / join / copy / clear / max_into / max_from on a
 * handful of clocks that share chunks with each other: after every step each
 * clock must equal its model entry for entry, so a write through one clock
 * that leaked into another (a missed copy-on-write) or a join that skipped a
 * chunk it should have merged fails here.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "clock.h"

#define NCLOCKS 6
/* keys in three clusters: dense low units, a sparse middle, stream keys */
#define SPAN 400u

static uint64_t rnd_state;
static uint32_t rnd(uint32_t n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rnd_state >> 33) % n;
}

static uint32_t key_of(uint32_t i)
{
    if (i < 300)
        return i;                          /* units 0..299: chunks 0..4 */
    if (i < 380)
        return 100000u + (i - 300) * 97u;  /* scattered: a chunk each, mostly */
    return 0x80000000u | (i - 380);        /* stream keys */
}

static uint32_t model[NCLOCKS][SPAN];
static wr_vclock clk[NCLOCKS];

static void check_all(uint64_t seed, unsigned step)
{
    for (unsigned c = 0; c < NCLOCKS; c++) {
        uint64_t n = 0;
        for (uint32_t i = 0; i < SPAN; i++) {
            uint32_t got = wr_vc_get(&clk[c], key_of(i));
            cr_assert_eq(got, model[c][i],
                         "seed %llu step %u: clock %u key %#x holds %u, model %u",
                         (unsigned long long)seed, step, c, key_of(i), got, model[c][i]);
            n += model[c][i] != 0;
        }
        cr_assert_eq(wr_vc_count(&clk[c]), n, "seed %llu step %u: clock %u counts %llu keys",
                     (unsigned long long)seed, step, c, (unsigned long long)n);
    }
}

/* simd: joins in their AVX2 form where the CPU has it (the default), or
 * the portable loop. */
static void random_programs(bool simd)
{
    wr_vc_allow_simd(simd);
    uint64_t grew_true = 0, grew_false = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rnd_state = seed;
        memset(model, 0, sizeof model);
        for (unsigned step = 0; step < 400; step++) {
            unsigned a = rnd(NCLOCKS), b = rnd(NCLOCKS), what = rnd(100);
            /* values from a small range, so that equal chunks reached by
             * different routes are common; some at the top of the range,
             * which a signed comparison would take for the smallest */
            uint32_t i = rnd(SPAN), v = 1 + rnd(6);
            if (rnd(8) == 0)
                v += 0x7ffffffcu;
            if (what < 30) {
                wr_vc_set_max(&clk[a], key_of(i), v);
                if (model[a][i] < v)
                    model[a][i] = v;
            } else if (what < 35) {
                wr_vc_set(&clk[a], key_of(i), v);
                model[a][i] = v;
            } else if (what < 70) {
                bool want = false;
                for (uint32_t k = 0; k < SPAN; k++)
                    if (model[b][k] > model[a][k] && a != b) {
                        model[a][k] = model[b][k];
                        want = true;
                    }
                bool got = wr_vc_join(&clk[a], &clk[b]);
                cr_assert_eq(got, want, "seed %llu step %u: join says %d, model %d",
                             (unsigned long long)seed, step, got, want);
                if (got)
                    grew_true++;
                else
                    grew_false++;
            } else if (what < 80) {
                wr_vc_copy(&clk[a], &clk[b]);
                memcpy(model[a], model[b], sizeof model[a]);
            } else if (what < 83) {
                wr_vc_clear(&clk[a]);
                memset(model[a], 0, sizeof model[a]);
            } else if (what < 92) {
                /* a block's dense entries out and back in */
                uint32_t k0 = rnd(280), n = 1 + rnd(20);
                uint32_t out[20], want[20];
                for (uint32_t k = 0; k < n; k++)
                    out[k] = want[k] = rnd(3);
                bool grew = false;
                for (uint32_t k = 0; k < n; k++)
                    if (want[k] < model[b][k0 + k]) {
                        want[k] = model[b][k0 + k];
                        grew = true;
                    }
                cr_assert_eq(wr_vc_max_into(&clk[b], k0, n, out), grew);
                cr_assert_arr_eq(out, want, n * sizeof *out, "seed %llu step %u: max_into",
                                 (unsigned long long)seed, step);
                for (uint32_t k = 0; k < n; k++)
                    out[k] = rnd(8);
                wr_vc_max_from(&clk[a], k0, n, out);
                for (uint32_t k = 0; k < n; k++)
                    if (model[a][k0 + k] < out[k])
                        model[a][k0 + k] = out[k];
            } else {
                /* a join with itself is a no-op */
                cr_assert_not(wr_vc_join(&clk[a], &clk[a]));
            }
            check_all(seed, step);
        }
        for (unsigned c = 0; c < NCLOCKS; c++)
            wr_vc_free(&clk[c]);
    }
    cr_assert(grew_true > 100 && grew_false > 100,
              "joins must both grow and not grow clocks (%llu / %llu)",
              (unsigned long long)grew_true, (unsigned long long)grew_false);
    wr_vc_allow_simd(true);
}

Test(clock, random_programs_match_a_dense_model) { random_programs(true); }

Test(clock, random_programs_match_a_dense_model_portable_join) { random_programs(false); }

Test(clock, copies_share_chunks_and_write_apart)
{
    wr_vclock a = {0}, b = {0};
    for (uint32_t k = 0; k < 256; k++)
        wr_vc_set_max(&a, k, k + 1);
    wr_vc_copy(&b, &a);
    cr_assert_eq(b.n, a.n);
    for (uint32_t i = 0; i < a.n; i++)
        cr_assert_eq(b.s[i].c, a.s[i].c, "a copy shares every chunk");
    wr_vc_set_max(&b, 5, 1000);
    cr_assert_eq(wr_vc_get(&a, 5), 6, "a write through the copy leaves the original alone");
    cr_assert_eq(wr_vc_get(&b, 5), 1000);
    cr_assert_neq(b.s[0].c, a.s[0].c, "the written chunk was copied");
    cr_assert_eq(b.s[1].c, a.s[1].c, "the other chunks stay shared");
    /* a join that brings nothing new keeps b's chunks; one that holds all
     * of b's chunk adopts it */
    cr_assert_not(wr_vc_join(&b, &a));
    cr_assert(wr_vc_join(&a, &b));
    cr_assert_eq(a.s[0].c, b.s[0].c, "a dominating chunk is adopted, not copied");
    wr_vc_free(&a);
    wr_vc_free(&b);
}

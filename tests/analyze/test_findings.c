/* Findings collector: grouping by identity, canonical pair order, earliest
 * example, merge determinism, names. */
#include <criterion/criterion.h>
#include <string.h>

#include "finding.h"
#include "findings_kernels.h"

static wr_race mk(uint32_t site_a, uint8_t kind_a, uint64_t seq_a, uint32_t site_b,
                  uint8_t kind_b, uint64_t seq_b, uint64_t addr)
{
    wr_race r;
    memset(&r, 0, sizeof r);
    r.engine = 0;
    r.race_class = WR_CLASS_INTER_WARP;
    r.first = (wr_race_access){.site = site_a, .kind = kind_a, .launch = 1, .block = 0,
                               .warp = 0, .lane = 3, .seq = seq_a};
    r.second = (wr_race_access){.site = site_b, .kind = kind_b, .launch = 1, .block = 0,
                                .warp = 1, .lane = 3, .seq = seq_b};
    r.addr = addr;
    return r;
}

Test(findings, groups_by_identity_and_counts)
{
    wr_findings *f = wr_findings_new();
    for (int i = 0; i < 10; i++) {
        wr_race r = mk(5, WR_KIND_WRITE, 100 + i, 7, WR_KIND_READ, 200 + i, 0x1000 + 4 * i);
        wr_findings_report(f, &r);
    }
    wr_race other = mk(5, WR_KIND_WRITE, 1, 8, WR_KIND_READ, 2, 0x2000);
    wr_findings_report(f, &other);
    const wr_race_group *g;
    size_t n = wr_findings_groups(f, &g);
    cr_assert_eq(n, 2);
    cr_assert_eq(g[0].count, 10);
    cr_assert_eq(g[0].example.second.site, 7);
    cr_assert_eq(g[0].example.addr, 0x1000, "earliest example kept");
    cr_assert_eq(g[0].example.first.seq, 100);
    cr_assert_eq(g[1].count, 1);
    cr_assert_eq(g[1].example.second.site, 8);
    wr_findings_free(f);
}

Test(findings, canonical_pair_order)
{
    wr_findings *f = wr_findings_new();
    /* the same race seen in both orders */
    wr_race a = mk(9, WR_KIND_READ, 10, 4, WR_KIND_WRITE, 20, 0x40);
    wr_race b = mk(4, WR_KIND_WRITE, 30, 9, WR_KIND_READ, 40, 0x44);
    wr_findings_report(f, &a);
    wr_findings_report(f, &b);
    const wr_race_group *g;
    cr_assert_eq(wr_findings_groups(f, &g), 1);
    cr_assert_eq(g[0].count, 2);
    cr_assert_eq(g[0].example.first.site, 4, "lower site first");
    cr_assert_eq(g[0].example.first.kind, WR_KIND_WRITE);
    cr_assert_eq(g[0].example.first.seq, 20, "sides swapped together with their data");
    cr_assert_eq(g[0].example.second.seq, 10);
    cr_assert_eq(g[0].example.second.warp, 0);
    cr_assert_eq(g[0].example.addr, 0x40);
    wr_findings_free(f);
}

Test(findings, identity_includes_kind_class_verdict_engine)
{
    wr_findings *f = wr_findings_new();
    wr_race r = mk(1, WR_KIND_WRITE, 1, 2, WR_KIND_WRITE, 2, 0);
    wr_findings_report(f, &r);
    r.second.kind = WR_KIND_READ;
    wr_findings_report(f, &r);
    r.race_class = WR_CLASS_INTER_BLOCK;
    wr_findings_report(f, &r);
    r.verdict = WR_VERDICT_SCOPE_FENCE;
    wr_findings_report(f, &r);
    r.engine = 2;
    wr_findings_report(f, &r);
    r.potential = 1;
    wr_findings_report(f, &r);
    r.addr = 0x999; /* address is not identity */
    wr_findings_report(f, &r);
    const wr_race_group *g;
    cr_assert_eq(wr_findings_groups(f, &g), 6);
    for (size_t i = 1; i < 6; i++)
        cr_assert(g[i - 1].example.engine <= g[i].example.engine, "sorted by engine");
    cr_assert_eq(g[5].count, 2);
    wr_findings_free(f);
}

/* Reports spread over k collectors, merged in different orders, give the
 * same groups as one collector. */
static void expect_same(const wr_findings *a, const wr_findings *b)
{
    const wr_race_group *ga, *gb;
    size_t na = wr_findings_groups(a, &ga), nb = wr_findings_groups(b, &gb);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(ga[i].count, gb[i].count, "group %zu", i);
        cr_assert(!memcmp(&ga[i].example, &gb[i].example, sizeof ga[i].example) ||
                      (ga[i].example.addr == gb[i].example.addr &&
                       ga[i].example.first.seq == gb[i].example.first.seq &&
                       ga[i].example.second.seq == gb[i].example.second.seq &&
                       ga[i].example.first.lane == gb[i].example.first.lane),
                  "group %zu example differs", i);
    }
}

Test(findings, merge_is_deterministic)
{
    enum { N = 5000, K = 3 };
    wr_findings *all = wr_findings_new();
    wr_findings *part[K];
    for (int k = 0; k < K; k++)
        part[k] = wr_findings_new();
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t sa = (uint32_t)(x >> 33) % 7, sb = (uint32_t)(x >> 40) % 7;
        uint64_t seq = (x >> 20) % 1000;
        wr_race r = mk(sa, (uint8_t)((x >> 50) % 3), seq, sb, (uint8_t)((x >> 55) % 3),
                       seq + 1 + (x >> 8) % 50, (x >> 12) % 4096 * 4);
        r.first.lane = (uint32_t)(x >> 3) % 32;
        wr_findings_report(all, &r);
        wr_findings_report(part[(x >> 60) % K], &r);
    }
    wr_findings *m1 = wr_findings_new(), *m2 = wr_findings_new();
    for (int k = 0; k < K; k++)
        wr_findings_merge(m1, part[k]);
    for (int k = K - 1; k >= 0; k--)
        wr_findings_merge(m2, part[k]);
    expect_same(all, m1);
    expect_same(all, m2);
    uint64_t total = 0;
    const wr_race_group *g;
    size_t n = wr_findings_groups(m1, &g);
    for (size_t i = 0; i < n; i++)
        total += g[i].count;
    cr_assert_eq(total, N);
    for (int k = 0; k < K; k++)
        wr_findings_free(part[k]);
    wr_findings_free(all);
    wr_findings_free(m1);
    wr_findings_free(m2);
}

Test(findings, names)
{
    cr_assert_str_eq(wr_access_kind_name(WR_KIND_ATOMIC), "atomic");
    cr_assert_str_eq(wr_race_class_name(WR_CLASS_INTER_KERNEL), "inter-kernel");
    cr_assert_str_eq(wr_race_class_name(WR_CLASS_INTRA_WARP), "intra-warp");
    cr_assert_str_eq(wr_scope_verdict_name(WR_VERDICT_NONE), "");
    cr_assert_str_eq(wr_scope_verdict_name(WR_VERDICT_WEAK_ACCESS), "weak-access");
    cr_assert_str_eq(wr_scope_verdict_name(99), "?");
}

Test(findings, launches_of_one_kernel_group_together_with_a_map)
{
    wr_launch_kernels *m = wr_launch_kernels_new();
    for (uint32_t l = 1; l <= 300; l++)
        wr_launch_kernels_set(m, l, l % 2 ? 7 : 9); /* odd launches run kernel 7 */
    cr_assert_eq(wr_launch_kernels_get(m, 5), 7);
    cr_assert_eq(wr_launch_kernels_get(m, 6), 9);
    cr_assert_eq(wr_launch_kernels_get(m, 301), 0);
    cr_assert_eq(wr_launch_kernels_get(m, 0), 0);
    wr_findings *with = wr_findings_new(), *without = wr_findings_new();
    wr_findings_use_kernels(with, m);
    for (uint32_t l = 1; l <= 300; l++) {
        wr_race r = mk(3, WR_KIND_WRITE, 1000 - l, 4, WR_KIND_READ, 2000 - l, 0x40);
        r.first.launch = r.second.launch = l;
        wr_findings_report(with, &r);
        wr_findings_report(without, &r);
    }
    const wr_race_group *g;
    cr_assert_eq(wr_findings_groups(without, &g), 300, "keyed by launch without a map");
    cr_assert_eq(wr_findings_groups(with, &g), 2, "keyed by kernel with a map");
    cr_assert_eq(g[0].count + g[1].count, 300);
    /* the earliest example is kept, with its launch */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(g[i].example.second.seq, g[i].example.first.launch % 2 ? 1701 : 1700,
                     "group %d: seq %lu launch %u", i, (unsigned long)g[i].example.second.seq,
                     g[i].example.first.launch);
    /* merging keyed collectors keeps the kernel keys */
    wr_findings *m2 = wr_findings_new();
    wr_findings_merge(m2, with);
    wr_findings_merge(m2, with);
    cr_assert_eq(wr_findings_groups(m2, &g), 2);
    cr_assert_eq(g[0].count + g[1].count, 600);
    wr_findings_free(m2);
    wr_findings_free(with);
    wr_findings_free(without);
    wr_launch_kernels_free(m);
}

/* Pitched host copies cut into contiguous runs (recorder/copy_region.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "copy_region.h"

typedef struct runs {
    uint64_t dst[64], src[64], bytes[64];
    int n, stop_at;
} runs;

static int collect(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes)
{
    runs *r = ctx;
    if (r->stop_at && r->n == r->stop_at)
        return 1;
    cr_assert_lt(r->n, 64);
    r->dst[r->n] = dst, r->src[r->n] = src, r->bytes[r->n] = bytes;
    r->n++;
    return 0;
}

static const wrr_copy_side HOST = {0, 0, 0};

Test(copy_region, one_dimensional_copy_is_one_run)
{
    runs r = {0};
    wrr_copy_side d = {0x1000, 0, 0};
    cr_assert_eq(wrr_copy_runs(d, HOST, 300, 0, 0, collect, &r), 1);
    cr_expect_eq(r.dst[0], 0x1000);
    cr_expect_eq(r.src[0], 0);
    cr_expect_eq(r.bytes[0], 300);
}

Test(copy_region, padded_device_rows_are_one_run_each)
{
    runs r = {0};
    wrr_copy_side d = {0x10000, 512, 0};   /* cudaMallocPitch: 512-byte rows */
    cr_assert_eq(wrr_copy_runs(d, HOST, 100, 4, 1, collect, &r), 4);
    for (int y = 0; y < 4; y++) {
        cr_expect_eq(r.dst[y], 0x10000 + 512u * (unsigned)y);
        cr_expect_eq(r.bytes[y], 100);
        cr_expect_eq(r.src[y], 0, "a host side stays 0");
    }
}

Test(copy_region, unpadded_rows_on_every_device_side_merge)
{
    runs r = {0};
    wrr_copy_side d = {0x10000, 100, 400}, s = {0x20000, 100, 400};
    cr_assert_eq(wrr_copy_runs(d, s, 100, 4, 3, collect, &r), 1);
    cr_expect_eq(r.bytes[0], 1200);
    cr_expect_eq(r.src[0], 0x20000);
    /* the host side's pitch does not split the device side's rows */
    runs h = {0};
    wrr_copy_side hs = {0, 4096, 0};
    cr_assert_eq(wrr_copy_runs(d, hs, 100, 4, 1, collect, &h), 1);
    cr_expect_eq(h.bytes[0], 400);
}

Test(copy_region, a_padded_source_splits_a_device_to_device_copy)
{
    runs r = {0};
    wrr_copy_side d = {0x10000, 64, 0}, s = {0x20000, 128, 0};
    cr_assert_eq(wrr_copy_runs(d, s, 64, 3, 1, collect, &r), 3);
    cr_expect_eq(r.dst[2], 0x10000 + 128);
    cr_expect_eq(r.src[2], 0x20000 + 256);
    cr_expect_eq(r.bytes[1], 64);
}

Test(copy_region, planes_with_a_gap_are_runs_of_whole_planes)
{
    runs r = {0};
    wrr_copy_side d = {0x100000, 32, 32 * 8 + 64};   /* rows adjacent, planes not */
    cr_assert_eq(wrr_copy_runs(d, HOST, 32, 8, 3, collect, &r), 3);
    cr_expect_eq(r.dst[1], 0x100000 + 320);
    cr_expect_eq(r.bytes[1], 256);
    /* padded rows inside padded planes: one run per row of every plane */
    runs p = {0};
    wrr_copy_side q = {0x100000, 48, 48 * 8};
    cr_assert_eq(wrr_copy_runs(q, HOST, 32, 8, 2, collect, &p), 16);
    cr_expect_eq(p.dst[9], 0x100000 + 48 * 8 + 48);
    /* one row per plane: the pitch does not matter, the slice does */
    runs o = {0};
    wrr_copy_side one = {0x100000, 999, 32};
    cr_assert_eq(wrr_copy_runs(one, HOST, 32, 1, 5, collect, &o), 1);
    cr_expect_eq(o.bytes[0], 160);
}

Test(copy_region, nothing_to_copy_and_a_stopping_callback)
{
    runs r = {0};
    wrr_copy_side d = {0x1000, 64, 0};
    cr_expect_eq(wrr_copy_runs(d, HOST, 0, 4, 1, collect, &r), 0);
    cr_expect_eq(r.n, 0);
    r.stop_at = 2;
    cr_expect_eq(wrr_copy_runs(d, HOST, 16, 4, 1, collect, &r), -1);
    cr_expect_eq(r.n, 2);
}

static wr_event got[8];
static int ngot;
static void keep(void *ctx, const wr_event *ev)
{
    (void)ctx;
    cr_assert_lt(ngot, 8);
    got[ngot++] = *ev;
}

Test(copy_region, events_carry_kind_stream_async_and_site)
{
    wrr_copy_side d = {0x10000, 512, 0};
    ngot = 0;
    wrr_copy_events(d, HOST, 100, 2, 1, WR_COPY_MEMSET, 7, 1, 3, keep, NULL);
    cr_assert_eq(ngot, 2);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(got[i].kind, WR_EV_HOST_COPY);
        cr_expect_eq(got[i].u.copy.kind, WR_COPY_MEMSET);
        cr_expect_eq(got[i].u.copy.stream, 7);
        cr_expect_eq(got[i].u.copy.async, 1);
        cr_expect_eq(got[i].u.copy.bytes, 100);
        cr_expect_eq(got[i].u.copy.src, 0);
        cr_expect_eq(got[i].site, 3, "every run of a copy has its call site");
    }
    cr_expect_eq(got[1].u.copy.dst, 0x10000 + 512);
}

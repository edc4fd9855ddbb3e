/* Kernel ends wait for the program's own synchronization (pending_ends.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "pending_ends.h"

typedef struct {
    uint32_t launches[64];
    size_t n;
} posted;

static void collect(void *ctx, const wr_event *ev)
{
    posted *p = ctx;
    cr_assert_eq(ev->kind, WR_EV_KERNEL_END);
    cr_assert_lt(p->n, 64);
    p->launches[p->n++] = ev->u.kernel_end.launch;
}

Test(pending_ends, nothing_posted_until_the_program_synchronizes)
{
    wrr_pending_ends e;
    memset(&e, 0, sizeof e);
    posted got = {.n = 0};
    wrr_ends_add(&e, 1, 1, collect, &got);
    wrr_ends_add(&e, 2, 2, collect, &got);
    cr_assert_eq(got.n, 0, "a launch's end is not the program's observation");
    wrr_ends_flush(&e, 2, collect, &got);
    cr_assert_eq(got.n, 1);
    cr_assert_eq(got.launches[0], 2, "a stream sync observes its own stream only");
    wrr_ends_flush(&e, 2, collect, &got);
    cr_assert_eq(got.n, 1, "an end is posted once");
    wrr_ends_flush(&e, WRR_ALL_STREAMS, collect, &got);
    cr_assert_eq(got.n, 2);
    cr_assert_eq(got.launches[1], 1);
    wrr_ends_free(&e);
}

Test(pending_ends, device_sync_posts_all_in_launch_order)
{
    wrr_pending_ends e;
    memset(&e, 0, sizeof e);
    posted got = {.n = 0};
    for (uint32_t l = 1; l <= 40; l++)
        wrr_ends_add(&e, l, l % 3, collect, &got);
    wrr_ends_flush(&e, 1, collect, &got);
    size_t on1 = got.n;
    cr_assert_eq(on1, 14);
    wrr_ends_flush(&e, WRR_ALL_STREAMS, collect, &got);
    cr_assert_eq(got.n, 40);
    for (size_t i = on1 + 1; i < got.n; i++)
        cr_assert_lt(got.launches[i - 1], got.launches[i], "launch order kept");
    wrr_ends_free(&e);
}

Test(pending_ends, event_sync_observes_the_stream_it_was_recorded_on)
{
    wrr_pending_ends e;
    memset(&e, 0, sizeof e);
    posted got = {.n = 0};
    wrr_ends_add(&e, 1, 1, collect, &got);
    wrr_ends_add(&e, 2, 2, collect, &got);
    wrr_ends_event_synced(&e, 7, collect, &got);
    cr_assert_eq(got.n, 0, "an event never recorded observes nothing");
    wrr_ends_event_recorded(&e, 7, 1);
    wrr_ends_event_recorded(&e, 7, 2);   /* re-recorded: its last stream counts */
    wrr_ends_event_synced(&e, 7, collect, &got);
    cr_assert_eq(got.n, 1);
    cr_assert_eq(got.launches[0], 2);
    wrr_ends_free(&e);
}

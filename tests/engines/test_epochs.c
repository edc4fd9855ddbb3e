/* epochs: the host-side order of launches and copies, and when an epoch is
 * settled (no access still to come can be concurrent with it), which lets
 * lockset and fsm drop its threads' state; then fsm and lockset on a
 * trace where an ended kernel is not settled yet. */
#include <criterion/criterion.h>

#include "epochs.h"
#include "lf_events.h"

extern const wr_engine_ops wr_engine_fsm;
extern const wr_engine_ops wr_engine_lockset;

static uint32_t feed(wr_epochs *e, wr_event ev) { return wr_epochs_on_event(e, &ev); }

static wr_event stream_sync(uint32_t stream)
{
    wr_event ev = lf_simple(WR_EV_STREAM_SYNC);
    ev.u.stream_sync.stream = stream;
    return ev;
}

Test(epochs, one_stream_settles_at_kernel_end)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 0));
    cr_assert(!wr_epochs_settled(e, a), "a running kernel is not settled");
    feed(e, lf_kernel_end(1));
    cr_assert(wr_epochs_ended(e, a));
    cr_assert(wr_epochs_settled(e, a));
    uint32_t b = feed(e, lf_launch(2, 0));
    cr_assert(wr_epochs_ordered(e, a, b));
    cr_assert(wr_epochs_settled(e, a), "settled stays settled");
    cr_assert(!wr_epochs_settled(e, b));
    cr_assert(!wr_epochs_settled(e, 0));
    cr_assert(!wr_epochs_settled(e, 99));
    wr_epochs_free(e);
}

/* The legacy default stream 0 waits for the blocking streams' earlier work,
 * and their later work waits for it; a non-blocking stream is ordered with
 * neither, nor are the others' through it, but its own order stands. */
Test(epochs, legacy_stream_orders_blocking_streams_not_non_blocking_ones)
{
    const uint32_t nb = WR_STREAM_NON_BLOCKING | 1, blk = 2;
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, blk));
    uint32_t n1 = feed(e, lf_launch(2, nb));
    uint32_t l1 = feed(e, lf_launch(3, WR_STREAM_LEGACY));
    uint32_t b = feed(e, lf_launch(4, blk));
    uint32_t n2 = feed(e, lf_launch(5, nb));
    cr_assert(wr_epochs_ordered(e, a, l1), "legacy waits for a blocking stream");
    cr_assert(wr_epochs_ordered(e, l1, b), "a blocking stream waits for legacy");
    cr_assert(wr_epochs_ordered(e, a, b), "through legacy");
    cr_assert(!wr_epochs_ordered(e, n1, l1), "legacy does not wait for a non-blocking stream");
    cr_assert(!wr_epochs_ordered(e, l1, n2), "nor a non-blocking stream for legacy");
    cr_assert(!wr_epochs_ordered(e, a, n2), "nor through it");
    cr_assert(!wr_epochs_ordered(e, n1, b));
    cr_assert(wr_epochs_ordered(e, n1, n2), "a non-blocking stream's own order");
    wr_epochs_free(e);
}

Test(epochs, ended_kernel_not_settled_while_a_concurrent_one_runs)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 1));
    uint32_t b = feed(e, lf_launch(2, 2));
    feed(e, lf_kernel_end(1));
    cr_assert(!wr_epochs_ordered(e, a, b));
    cr_assert(!wr_epochs_settled(e, a), "b may still touch a's words");
    /* work issued after the host saw a end waits for a */
    uint32_t c = feed(e, lf_launch(3, 3));
    cr_assert(wr_epochs_ordered(e, a, c));
    cr_assert(!wr_epochs_settled(e, a), "b still runs");
    feed(e, lf_kernel_end(2));
    cr_assert(wr_epochs_settled(e, a), "b ended, c waits for a");
    cr_assert(!wr_epochs_settled(e, b), "c runs and does not wait for b");
    feed(e, lf_kernel_end(3));
    cr_assert(wr_epochs_settled(e, b));
    wr_epochs_free(e);
}

Test(epochs, event_wait_orders_the_running_kernel)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 1));
    feed(e, lf_stream_event(WR_EV_EVENT_RECORD, 7, 1));
    feed(e, lf_stream_event(WR_EV_STREAM_WAIT, 7, 2));
    uint32_t b = feed(e, lf_launch(2, 2));
    cr_assert(wr_epochs_ordered(e, a, b));
    feed(e, lf_kernel_end(1));
    cr_assert(wr_epochs_settled(e, a), "the running b waits for a");
    wr_epochs_free(e);
}

/* cudaStreamSynchronize waits for all the stream's work, the waits on
 * events among it, also when no epoch was issued to it after the wait. */
Test(epochs, stream_sync_covers_the_events_the_stream_waited_for)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 2));
    feed(e, lf_stream_event(WR_EV_EVENT_RECORD, 7, 2));
    feed(e, lf_stream_event(WR_EV_STREAM_WAIT, 7, 1));
    feed(e, stream_sync(1));
    uint32_t c = feed(e, lf_copy(WR_COPY_D2H, 0, 0x1000, 64, 3, 0));
    cr_assert(wr_epochs_ordered(e, a, c), "the host waited for stream 1, which waited for a");
    wr_epochs_free(e);
}

/* A stream per task: the host's clock keeps a floor (every epoch up to
 * the first it did not wait for) and entries above it; each must order
 * exactly what the host waited for. */
Test(epochs, host_waits_on_many_streams_order_exactly_what_was_waited_for)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t ep[101];
    for (uint32_t i = 1; i <= 100; i++) {
        ep[i] = feed(e, lf_launch(i, 1000 + i));
        if (i % 2 || i > 60)   /* the even ones up to 60 are never waited for */
            feed(e, stream_sync(1000 + i));
    }
    uint32_t later = feed(e, lf_launch(200, 5000));
    for (uint32_t i = 1; i <= 100; i++)
        cr_assert_eq(wr_epochs_ordered(e, ep[i], later), i % 2 || i > 60, "launch %u", i);
    feed(e, stream_sync(1002));   /* the first gap closes: the floor rises to 3 */
    uint32_t next = feed(e, lf_launch(201, 5001));
    cr_assert(wr_epochs_ordered(e, ep[2], next));
    cr_assert(!wr_epochs_ordered(e, ep[4], next));
    cr_assert(!wr_epochs_ordered(e, later, next), "launch 200 was not waited for");
    feed(e, lf_simple(WR_EV_DEVICE_SYNC));
    uint32_t last = feed(e, lf_launch(202, 5002));
    for (uint32_t i = 1; i <= 100; i++)
        cr_assert(wr_epochs_ordered(e, ep[i], last), "launch %u", i);
    cr_assert(wr_epochs_ordered(e, next, last));
    /* the legacy stream waits for everything before it */
    uint32_t more = feed(e, lf_launch(203, 5003));
    uint32_t legacy = feed(e, lf_launch(204, 0));
    cr_assert(wr_epochs_ordered(e, more, legacy));
    uint32_t after = feed(e, lf_launch(205, 5004));
    cr_assert(wr_epochs_ordered(e, legacy, after));
    cr_assert(wr_epochs_ordered(e, more, after));
    wr_epochs_free(e);
}

Test(epochs, an_older_kernel_never_seen_to_end_keeps_later_ones)
{
    wr_epochs *e = wr_epochs_new();
    feed(e, lf_launch(1, 1));   /* no KERNEL_END for it */
    uint32_t b = feed(e, lf_launch(2, 1));
    feed(e, lf_kernel_end(2));
    cr_assert(!wr_epochs_settled(e, b), "launch 1 is not known to be over");
    wr_epochs_free(e);
}

Test(epochs, device_sync_alone_does_not_settle_a_launch)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 0));
    feed(e, lf_simple(WR_EV_DEVICE_SYNC));
    cr_assert(!wr_epochs_settled(e, a), "a launch is settled once seen to end");
    wr_epochs_free(e);
}

Test(epochs, copies_settle_when_waited_for)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t sync = feed(e, lf_copy(WR_COPY_H2D, 0x1000, 0, 64, 0, 0));
    cr_assert(wr_epochs_settled(e, sync), "a synchronous copy is waited for");
    uint32_t async = feed(e, lf_copy(WR_COPY_H2D, 0x1000, 0, 64, 4, 1));
    cr_assert(!wr_epochs_settled(e, async));
    feed(e, stream_sync(4));
    cr_assert(wr_epochs_settled(e, async));
    wr_epochs_free(e);
}

/* The engines' purge rule: settled epochs at every new epoch; finished
 * ones more than WR_EPOCHS_KEEP epochs old only once every WR_EPOCHS_KEEP
 * epochs, so a trace whose first launch never ends stays bounded. */
Test(epochs, purge_rule_window_and_settled)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 1));   /* never seen to end */
    uint32_t newest = a;
    for (uint32_t k = 2; k <= 6; k++) {
        newest = feed(e, lf_launch(k, 1));
        feed(e, lf_kernel_end(k));
    }
    cr_assert_eq(newest, 6);
    uint32_t purged_at = 0;
    wr_epochs_purge p = wr_epochs_purge_begin(e, newest, &purged_at);
    cr_assert(p.window);
    cr_assert_eq(purged_at, newest);
    cr_assert(!wr_epochs_purge_keeps(&p, a, false), "finished (ordered before 6), 5 epochs old");
    cr_assert(wr_epochs_purge_keeps(&p, 5, false), "ended, not settled (1 runs), 1 epoch old");
    cr_assert(wr_epochs_purge_keeps(&p, 5, true), "recent: kept even when finished");
    uint32_t next = feed(e, lf_launch(7, 2));
    p = wr_epochs_purge_begin(e, next, &purged_at);
    cr_assert(!p.window, "the window comes once every WR_EPOCHS_KEEP epochs");
    cr_assert(wr_epochs_purge_keeps(&p, a, false), "outside the window only settled epochs go");
    cr_assert(wr_epochs_purge_keeps(&p, 5, false), "1 still runs");
    feed(e, lf_kernel_end(1));
    p = wr_epochs_purge_begin(e, next, &purged_at);
    cr_assert(!p.window);
    cr_assert(!wr_epochs_purge_keeps(&p, 5, false), "settled once 1 ended (7 waits for 5)");
    cr_assert(!wr_epochs_purge_keeps(&p, a, false), "ended; 7, issued after the host waited for 6, waits for it");
    wr_epochs_free(e);
}

/* An epoch is over once one ordered after it acts: its own events can no
 * longer come.  Streams that never wait for each other are not over for
 * each other, and a copy acts at its event. */
Test(epochs, over_once_a_later_epoch_acts)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 1));
    uint32_t b = feed(e, lf_launch(2, 2));
    uint32_t c = feed(e, lf_launch(3, 1));
    cr_assert(!wr_epochs_over(e, a) && !wr_epochs_over(e, b) && !wr_epochs_over(e, c));
    wr_epochs_acts(e, a);
    wr_epochs_acts(e, b);
    cr_assert(!wr_epochs_over(e, a), "a acts, nothing after it does");
    wr_epochs_acts(e, c);
    cr_assert(wr_epochs_over(e, a), "c, behind a on stream 1, acts");
    cr_assert(!wr_epochs_over(e, b), "stream 2 does not wait for stream 1");
    cr_assert(!wr_epochs_settled(e, a), "over is not settled: b may still race with a");
    uint32_t d = feed(e, lf_copy(WR_COPY_H2D, 0x1000, 0, 64, 2, true));
    cr_assert(!wr_epochs_over(e, d));
    cr_assert(wr_epochs_over(e, b), "the copy behind b on stream 2 ran");
    cr_assert(!wr_epochs_over(e, 0) && !wr_epochs_over(e, 99));
    wr_epochs_free(e);
}

/* Past the first 64 epochs the record array has grown: every record there
 * must start as not acted (the flag was left uninitialized, and under ASan's
 * malloc fill an epoch acting never made the one before it over). */
Test(epochs, over_holds_past_the_records_first_grown)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t prev = 0;
    for (uint32_t l = 1; l <= 150; l++) {
        uint32_t ep = feed(e, lf_launch(l, 1));
        wr_epochs_acts(e, ep);
        if (prev)
            cr_assert(wr_epochs_over(e, prev), "epoch %u acts, %u before it on stream 1", ep,
                      prev);
        cr_assert(!wr_epochs_over(e, ep));
        prev = ep;
    }
    wr_epochs_free(e);
}

/* Two streams that never wait for each other, launches alternating and
 * never seen to end: the window drops each one once the next launch of its
 * stream acts, whichever stream the newest epoch is on, so the engines'
 * block state stays bounded (it once kept every launch of the stream the
 * window never fell on). */
Test(epochs, purge_window_drops_launches_over_on_another_stream)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t purged_at = 0, newest = 0;
    for (uint32_t k = 1; k <= 9; k++) {
        newest = feed(e, lf_launch(k, 1 + k % 2));
        wr_epochs_acts(e, newest);
    }
    wr_epochs_purge p = wr_epochs_purge_begin(e, newest, &purged_at);
    cr_assert(p.window);
    cr_assert(!wr_epochs_purge_keeps(&p, 2, false), "stream 1: 4 and later acted");
    cr_assert(!wr_epochs_purge_keeps(&p, 3, false), "stream 2: 5 and later acted");
    cr_assert(wr_epochs_purge_keeps(&p, 8, false), "newest of stream 1: may still run");
    cr_assert(wr_epochs_purge_keeps(&p, 5, false), "over but recent: kept");
    wr_epochs_free(e);
}

/* A page whose words' epochs lie between a bound and its newest epoch is
 * dropped whole only when every one of them drops; the word-by-word sweep
 * reports the oldest epoch it kept. */
Test(epochs, sweep_drops_a_page_whole_only_when_every_epoch_of_it_drops)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t a = feed(e, lf_launch(1, 1));
    uint32_t b = feed(e, lf_launch(2, 2));
    feed(e, lf_kernel_end(2));
    feed(e, stream_sync(2));
    uint32_t c = feed(e, lf_launch(3, 3));   /* issued before the host sees a end */
    feed(e, lf_kernel_end(1));
    cr_assert(wr_epochs_settled(e, b), "c waits for b");
    cr_assert(!wr_epochs_settled(e, a), "c does not wait for a");

    wr_epochs_sweep sw;
    wr_epochs_sweep_begin(&sw, e, b, c);
    cr_assert(wr_epochs_sweep_drops_all(&sw, b), "only b's words");
    cr_assert(!wr_epochs_sweep_drops_all(&sw, a), "a's words may be there");
    cr_assert(!wr_epochs_sweep_drops_all(&sw, 0), "no bound known");
    cr_assert(!wr_epochs_sweep_drops_all(&sw, b + 1), "a bound above the newest epoch");

    wr_epochs_sweep_begin(&sw, e, b, c);
    cr_assert_eq(wr_epochs_sweep_oldest_kept(&sw), c, "nothing kept");
    cr_assert(wr_epochs_sweep_drops(&sw, b & 0xffu));
    cr_assert_eq(wr_epochs_sweep_oldest_kept(&sw), c, "b dropped");
    cr_assert(!wr_epochs_sweep_drops(&sw, a & 0xffu));
    cr_assert_eq(wr_epochs_sweep_oldest_kept(&sw), a, "a kept");
    wr_epochs_free(e);
}

Test(epochs, sweep_asks_no_wider_span_than_its_limit)
{
    wr_epochs *e = wr_epochs_new();
    uint32_t last = 0;
    for (uint32_t k = 1; k <= WR_EPOCHS_SWEEP_SPAN + 2; k++) {
        last = feed(e, lf_launch(k, 0));
        feed(e, lf_kernel_end(k));
    }
    uint32_t next = feed(e, lf_launch(100, 0));
    for (uint32_t k = 1; k <= last; k++)
        cr_assert(wr_epochs_settled(e, k));
    wr_epochs_sweep sw;
    wr_epochs_sweep_begin(&sw, e, last, next);
    cr_assert(wr_epochs_sweep_drops_all(&sw, last - WR_EPOCHS_SWEEP_SPAN + 1));
    cr_assert(!wr_epochs_sweep_drops_all(&sw, last - WR_EPOCHS_SWEEP_SPAN),
              "a wider span is left to the word-by-word sweep");
    wr_epochs_free(e);
}

/* The first side of a race names the earlier access's launch, site,
 * thread and trace position. */
static void assert_first_side(const char *engine, const wr_race_access *w, uint32_t launch,
                              uint32_t site, uint32_t block, uint32_t warp, uint32_t lane,
                              uint64_t seq)
{
    cr_assert_eq(w->launch, launch, "%s", engine);
    cr_assert_eq(w->site, site, "%s", engine);
    cr_assert_eq(w->block, block, "%s", engine);
    cr_assert_eq(w->warp, warp, "%s", engine);
    cr_assert_eq(w->lane, lane, "%s", engine);
    cr_assert_eq(w->seq, seq, "%s: the write's trace position", engine);
}

/* Kernel 1 (stream 1) writes X and ends while kernel 2 (stream 2), launched
 * before that end, still runs; launches on a third stream follow (each a
 * new epoch, at which the engines drop settled blocks; fewer than the 4
 * after which a finished epoch's blocks go anyway).  Kernel 2 then reads
 * X: the race's first side must still name kernel 1's write, its thread
 * and trace position, which come from kernel 1's block state. */
static void ended_but_not_settled(const wr_engine_ops *ops)
{
    lf_run r;
    lf_start(&r, ops, 1);
    const uint64_t X = 0x20000;
    lf_feed(&r, lf_launch(1, 1));
    lf_feed(&r, lf_launch(2, 2));
    uint64_t write_seq = r.seq;
    lf_feed(&r, lf_acc(10, 1, 3, 1, 1u << 5, WR_OP_STORE, 0, X, 0));
    lf_feed(&r, lf_kernel_end(1));
    for (uint32_t k = 3; k < 6; k++) {
        lf_feed(&r, lf_launch(k, 3));
        lf_feed(&r, lf_acc(30, k, 0, 0, 1, WR_OP_LOAD, 0, 0x90000 + k * 4, 0));
        lf_feed(&r, lf_kernel_end(k));
    }
    lf_feed(&r, lf_acc(20, 2, 0, 0, 1, WR_OP_LOAD, 0, X, 0));
    wr_findings *f = lf_end(&r);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 1, "%s: one race", ops->name);
    assert_first_side(ops->name, &g[0].example.first, 1, 10, 3, 1, 5, write_seq);
    cr_assert_eq(g[0].example.second.site, 20, "%s", ops->name);
    wr_findings_free(f);
}

Test(epochs, fsm_keeps_an_ended_kernel_a_running_one_may_race)
{
    ended_but_not_settled(&wr_engine_fsm);
}

Test(epochs, lockset_keeps_an_ended_kernel_a_running_one_may_race)
{
    ended_but_not_settled(&wr_engine_lockset);
}

/* A launch the host waited for is over before the next one starts: at that
 * launch every block goes at once (the engines release their pools whole,
 * with 1800 warps' state in them: per-lane warp-sync counts, warp arrays of
 * 3-warp blocks, fences, rings).  The next launch's state then comes from
 * the emptied pools: its race must name its own write, thread and trace
 * position, and the rewrite of the old launch's words is no race.  A purge
 * that keeps some blocks comes after: the table must hold none of the
 * blocks the pools took with them. */
static void all_blocks_dropped_at_once(const wr_engine_ops *ops)
{
    lf_run r;
    lf_start(&r, ops, 1);
    const uint64_t OLD = 0x100000, X = 0x40000;
    lf_feed(&r, lf_launch(1, 0));
    for (uint32_t b = 0; b < 600; b++)
        for (uint32_t w = 0; w < 3; w++) {
            lf_feed(&r, lf_warp_sync(1, b, w, 0x0000ffffu));
            lf_feed(&r, lf_acc(10, 1, b, w, WR_FULL_MASK, WR_OP_STORE, 0,
                               OLD + (b * 3 + w) * 128, 4));
            lf_feed(&r, lf_fence(1, b, w, WR_FULL_MASK, WR_SCOPE_DEVICE));
        }
    lf_feed(&r, lf_kernel_end(1));
    lf_feed(&r, lf_launch(2, 0));
    lf_feed(&r, lf_acc(20, 2, 0, 0, WR_FULL_MASK, WR_OP_STORE, 0, OLD, 4));
    lf_feed(&r, lf_warp_sync(2, 0, 2, 0x3u));
    uint64_t write_seq = r.seq;
    lf_feed(&r, lf_acc(30, 2, 0, 2, 1u << 7, WR_OP_STORE, 0, X, 0));
    lf_feed(&r, lf_acc(31, 2, 1, 1, 1u, WR_OP_LOAD, 0, X, 0));
    lf_feed(&r, lf_kernel_end(2));
    /* then a purge that keeps some blocks and so visits each: kernel 3
     * ended, kernel 4 (launched before that end) runs on */
    const uint64_t Y = 0x50000;
    lf_feed(&r, lf_launch(3, 1));
    lf_feed(&r, lf_launch(4, 2));
    lf_feed(&r, lf_acc(40, 3, 5, 0, 1u, WR_OP_STORE, 0, Y, 0));
    lf_feed(&r, lf_kernel_end(3));
    lf_feed(&r, lf_launch(5, 3));
    lf_feed(&r, lf_acc(41, 4, 0, 0, 1u, WR_OP_LOAD, 0, Y, 0));
    wr_findings *f = lf_end(&r);
    const wr_race_group *g;
    cr_assert_eq(lf_groups(f, &g), 2, "%s: two races", ops->name);
    const wr_race_group *in2 = &g[g[0].example.first.site == 30 ? 0 : 1];
    const wr_race_group *in4 = &g[g[0].example.first.site == 30 ? 1 : 0];
    cr_assert_eq(in4->example.first.site, 40, "%s: kernel 3's write, kept", ops->name);
    cr_assert_eq(in4->example.first.block, 5, "%s", ops->name);
    cr_assert_eq(in4->example.second.site, 41, "%s", ops->name);
    assert_first_side(ops->name, &in2->example.first, 2, 30, 0, 2, 7, write_seq);
    cr_assert_eq(in2->example.second.site, 31, "%s", ops->name);
    wr_findings_free(f);
}

Test(epochs, fsm_drops_a_waited_for_launch_whole)
{
    all_blocks_dropped_at_once(&wr_engine_fsm);
}

Test(epochs, lockset_drops_a_waited_for_launch_whole)
{
    all_blocks_dropped_at_once(&wr_engine_lockset);
}

/* A CUDA graph launch's orderings as trace events (recorder/graph_order.h):
 * the events each step emits, exactly, for the shapes stream capture makes
 * (chains, forks and joins), the passes through nodes that do no recorded
 * work, relaunches, and the graphs the model cannot spell.  The litmus
 * traces graph_*.txt check what the analyzer makes of these sequences. */
#include <criterion/criterion.h>
#include <string.h>

#include "graph_order.h"

typedef struct seq {
    wr_event ev[64];
    int n;
    uint32_t next_stream, next_event;
} seq;

static void keep(void *ctx, const wr_event *ev)
{
    seq *s = ctx;
    cr_assert_lt(s->n, 64);
    s->ev[s->n++] = *ev;
}

static uint32_t new_id(void *ctx, int is_event)
{
    seq *s = ctx;
    return is_event ? ++s->next_event : (++s->next_stream | WR_STREAM_NON_BLOCKING);
}

/* event i of s is KIND(stream, event) */
static void expect(const seq *s, int i, unsigned kind, uint32_t stream, uint32_t event)
{
    cr_assert_lt(i, s->n, "event %d missing (%d emitted)", i, s->n);
    const wr_event *e = &s->ev[i];
    cr_assert_eq(e->kind, kind, "event %d: kind %u, not %u", i, e->kind, kind);
    cr_assert_eq(e->u.stream_event.stream, stream, "event %d: stream %#x, not %#x", i,
                 e->u.stream_event.stream, stream);
    cr_assert_eq(e->u.stream_event.event, event, "event %d: event %u, not %u", i,
                 e->u.stream_event.event, event);
}

#define NB(x) ((x) | WR_STREAM_NON_BLOCKING)
#define REC WR_EV_EVENT_RECORD
#define WAIT WR_EV_STREAM_WAIT

/* K1 -> empty -> K2 and K1 -> memcpy -> K2: K2 waits for K1 through the
 * empty node and for the copy; the launching stream waits for all three. */
Test(graph_order, a_chain_passes_through_nodes_that_do_no_recorded_work)
{
    const uint64_t h[] = {0x500, 0x100, 0x300, 0x200};   /* K1, empty, memcpy, K2 */
    const unsigned t[] = {WRR_GNODE_KERNEL, WRR_GNODE_EMPTY, WRR_GNODE_MEMCPY, WRR_GNODE_KERNEL};
    const uint64_t from[] = {0x500, 0x100, 0x500, 0x300}, to[] = {0x100, 0x200, 0x300, 0x200};
    seq s = {0};
    wrr_graph g;
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 4, h, t, 4, from, to, NULL, new_id, &s), 0);
    cr_assert_null(g.unrecordable);
    /* ids: K1 stream 1 event 1, memcpy stream 2 event 2, K2 stream 3
     * event 3, the entry event 4 */
    cr_assert_eq(g.entry_event, 4);
    wrr_graph_launch_begin(&g, 7, keep, &s);
    uint32_t unordered = 9;
    cr_assert_eq(wrr_graph_node_begin(&g, 0x100, keep, &s, &unordered), -1,
                 "an empty node has no work to begin");
    cr_assert_eq(wrr_graph_node_begin(&g, 0x999, keep, &s, &unordered), -1);
    long k1 = wrr_graph_node_begin(&g, 0x500, keep, &s, &unordered);
    cr_assert_eq(k1, 0);
    cr_assert_eq(unordered, 0);
    wrr_graph_node_issued(&g, k1, keep, &s);
    long m = wrr_graph_node_begin(&g, 0x300, keep, &s, &unordered);
    cr_assert_eq(m, 2);
    wrr_graph_node_issued(&g, m, keep, &s);
    long k2 = wrr_graph_node_begin(&g, 0x200, keep, &s, &unordered);
    cr_assert_eq(k2, 3);
    cr_assert_eq(unordered, 0);
    wrr_graph_node_issued(&g, k2, keep, &s);
    cr_assert_eq(wrr_graph_launch_end(&g, 7, keep, &s), 0);
    int i = 0;
    expect(&s, i++, REC, 7, 4);
    expect(&s, i++, WAIT, NB(1), 4);
    expect(&s, i++, REC, NB(1), 1);
    expect(&s, i++, WAIT, NB(2), 4);
    expect(&s, i++, WAIT, NB(2), 1);
    expect(&s, i++, REC, NB(2), 2);
    expect(&s, i++, WAIT, NB(3), 4);
    cr_assert_eq(s.ev[i].kind, WAIT);
    cr_assert_eq(s.ev[i].u.stream_event.stream, NB(3));
    uint32_t a = s.ev[i++].u.stream_event.event, b = s.ev[i++].u.stream_event.event;
    cr_assert((a == 1 && b == 2) || (a == 2 && b == 1), "K2 waits for K1 and the copy: %u %u", a, b);
    cr_assert_eq(s.ev[i - 1].u.stream_event.stream, NB(3));
    expect(&s, i++, REC, NB(3), 3);
    expect(&s, i++, WAIT, 7, 1);
    expect(&s, i++, WAIT, 7, 2);
    expect(&s, i++, WAIT, 7, 3);
    cr_assert_eq(s.n, i);
    wrr_graph_free(&g);
}

/* Two kernel nodes with no edge: each waits only for the entry event.  The
 * graph launched again on another stream waits first for the previous
 * launch's nodes. */
Test(graph_order, branches_are_unordered_and_a_relaunch_follows_the_last_launch)
{
    const uint64_t h[] = {0x10, 0x20};
    const unsigned t[] = {WRR_GNODE_KERNEL, WRR_GNODE_KERNEL};
    seq s = {0};
    wrr_graph g;
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 2, h, t, 0, NULL, NULL, NULL, new_id, &s), 0);
    uint32_t unordered;
    for (int launch = 0; launch < 2; launch++) {
        wrr_graph_launch_begin(&g, launch ? 9 : 7, keep, &s);
        for (int k = 1; k >= 0; k--) {   /* any order: no edge */
            long i = wrr_graph_node_begin(&g, h[k], keep, &s, &unordered);
            cr_assert_eq(i, k);
            cr_assert_eq(unordered, 0);
            wrr_graph_node_issued(&g, i, keep, &s);
        }
        cr_assert_eq(wrr_graph_launch_end(&g, launch ? 9 : 7, keep, &s), 0);
    }
    int i = 0;
    expect(&s, i++, REC, 7, 3);
    expect(&s, i++, WAIT, NB(2), 3);
    expect(&s, i++, REC, NB(2), 2);
    expect(&s, i++, WAIT, NB(1), 3);
    expect(&s, i++, REC, NB(1), 1);
    expect(&s, i++, WAIT, 7, 1);
    expect(&s, i++, WAIT, 7, 2);
    /* the second launch */
    expect(&s, i++, WAIT, 9, 1);
    expect(&s, i++, WAIT, 9, 2);
    expect(&s, i++, REC, 9, 3);
    i += 4;
    expect(&s, i++, WAIT, 9, 1);
    expect(&s, i++, WAIT, 9, 2);
    cr_assert_eq(s.n, i);
    wrr_graph_free(&g);
}

/* A node announced before one it depends on: its ordering with it is
 * counted as missed; a node that never began is counted at the end. */
Test(graph_order, nodes_out_of_order_and_nodes_never_begun_are_counted)
{
    const uint64_t h[] = {0x10, 0x20, 0x30};
    const unsigned t[] = {WRR_GNODE_KERNEL, WRR_GNODE_KERNEL, WRR_GNODE_MEMSET};
    const uint64_t from[] = {0x10}, to[] = {0x20};
    seq s = {0};
    wrr_graph g;
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 3, h, t, 1, from, to, NULL, new_id, &s), 0);
    wrr_graph_launch_begin(&g, 7, keep, &s);
    uint32_t unordered;
    long k2 = wrr_graph_node_begin(&g, 0x20, keep, &s, &unordered);
    cr_assert_eq(unordered, 1);
    wrr_graph_node_issued(&g, k2, keep, &s);
    long k1 = wrr_graph_node_begin(&g, 0x10, keep, &s, &unordered);
    cr_assert_eq(unordered, 0);
    wrr_graph_node_issued(&g, k1, keep, &s);
    cr_assert_eq(wrr_graph_launch_end(&g, 7, keep, &s), 1, "the memset never began");
    wrr_graph_free(&g);
}

/* What the model cannot spell makes a graph unrecordable, with the reason. */
Test(graph_order, graphs_the_model_cannot_spell_are_unrecordable)
{
    const uint64_t h[] = {0x10, 0x20};
    const uint64_t from[] = {0x10}, to[] = {0x20}, stray[] = {0x30};
    seq s = {0};
    wrr_graph g;
    static const struct {
        unsigned type;
        const char *why;
    } kinds[] = {{WRR_GNODE_GRAPH, "child graph"},
                 {WRR_GNODE_EVENT_RECORD, "event record or wait"},
                 {WRR_GNODE_WAIT_EVENT, "event record or wait"},
                 {WRR_GNODE_EXT_SEMAS_WAIT, "external semaphore"},
                 {WRR_GNODE_BATCH_MEM_OP, "batch memory"},
                 {WRR_GNODE_CONDITIONAL, "conditional"},
                 {99, "does not know"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const unsigned t[] = {WRR_GNODE_KERNEL, kinds[k].type};
        cr_assert_eq(wrr_graph_build(&g, 0xe0, 2, h, t, 1, from, to, NULL, new_id, &s), 0);
        cr_assert(g.unrecordable && strstr(g.unrecordable, kinds[k].why), "type %u: %s",
                  kinds[k].type, g.unrecordable ? g.unrecordable : "(recordable)");
        cr_assert_eq(g.n, 0);
        wrr_graph_free(&g);
    }
    const unsigned t[] = {WRR_GNODE_KERNEL, WRR_GNODE_KERNEL};
    const unsigned char programmatic[] = {0};
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 2, h, t, 1, from, to, programmatic, new_id, &s), 0);
    cr_assert(g.unrecordable && strstr(g.unrecordable, "programmatic"));
    wrr_graph_free(&g);
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 2, h, t, 1, from, stray, NULL, new_id, &s), 0);
    cr_assert(g.unrecordable && strstr(g.unrecordable, "does not list"));
    wrr_graph_free(&g);
    const unsigned char full[] = {1};
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 2, h, t, 1, from, to, full, new_id, &s), 0);
    cr_assert_null(g.unrecordable);
    cr_assert_eq(g.n, 2);
    wrr_graph_free(&g);
}

/* A wide fork and join through one empty node: every node after it waits
 * for every node before it, each once. */
Test(graph_order, a_join_through_an_empty_node_reaches_every_branch_once)
{
    enum { W = 20 };
    uint64_t h[2 * W + 1], from[2 * W + 2 * W], to[2 * W + 2 * W];
    unsigned t[2 * W + 1];
    size_t ne = 0;
    for (int i = 0; i < 2 * W; i++) {
        h[i] = 0x1000 + (uint64_t)i;
        t[i] = WRR_GNODE_KERNEL;
    }
    h[2 * W] = 0x10;
    t[2 * W] = WRR_GNODE_EMPTY;
    for (int i = 0; i < W; i++) {
        from[ne] = h[i], to[ne++] = 0x10;
        from[ne] = h[i], to[ne++] = 0x10;   /* a repeated edge changes nothing */
        from[ne] = 0x10, to[ne++] = h[W + i];
    }
    seq s = {0};
    wrr_graph g;
    cr_assert_eq(wrr_graph_build(&g, 0xe0, 2 * W + 1, h, t, ne, from, to, NULL, new_id, &s), 0);
    for (int i = W; i < 2 * W; i++) {
        cr_assert_eq(g.nodes[i].npreds, W, "node %d", i);
        uint64_t seen = 0;
        for (uint32_t k = 0; k < W; k++)
            seen |= 1ull << g.preds[g.nodes[i].first_pred + k];
        cr_assert_eq(seen, (1ull << W) - 1);
    }
    for (int i = 0; i < W; i++)
        cr_assert_eq(g.nodes[i].npreds, 0);
    wrr_graph_free(&g);
}

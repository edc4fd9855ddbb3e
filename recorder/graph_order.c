/* A CUDA graph launch's orderings as trace events: see graph_order.h. */
#include "graph_order.h"

#include <stdlib.h>
#include <string.h>

typedef struct handle_index {
    uint64_t handle;
    uint32_t index;
} handle_index;

static int by_handle(const void *a, const void *b)
{
    uint64_t x = ((const handle_index *)a)->handle, y = ((const handle_index *)b)->handle;
    return x < y ? -1 : x > y;
}

static long find_node(const handle_index *sorted, uint32_t n, uint64_t handle)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid].handle < handle)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && sorted[lo].handle == handle ? (long)sorted[lo].index : -1;
}

static const char *type_problem(unsigned type)
{
    switch (type) {
    case WRR_GNODE_KERNEL:
    case WRR_GNODE_MEMCPY:
    case WRR_GNODE_MEMSET:
    case WRR_GNODE_HOST:
    case WRR_GNODE_EMPTY:
    case WRR_GNODE_MEM_ALLOC:
    case WRR_GNODE_MEM_FREE:
        return NULL;
    case WRR_GNODE_GRAPH:
        return "it has a child graph node";
    case WRR_GNODE_WAIT_EVENT:
    case WRR_GNODE_EVENT_RECORD:
        return "it has an event record or wait node";
    case WRR_GNODE_EXT_SEMAS_SIGNAL:
    case WRR_GNODE_EXT_SEMAS_WAIT:
        return "it has an external semaphore node";
    case WRR_GNODE_BATCH_MEM_OP:
        return "it has a batch memory operation node";
    case WRR_GNODE_CONDITIONAL:
        return "it has a conditional node";
    default:
        return "it has a node of a type this recorder does not know";
    }
}

/* The nearest working predecessors of every working node, through the
 * others: preds[], in g->nodes[v].first_pred / npreds.  in_first / in_list:
 * the direct predecessors (CSR).  0 or -1. */
static int nearest_working_preds(wrr_graph *g, const uint32_t *in_first, const uint32_t *in_list)
{
    uint32_t n = g->n;
    uint32_t *stack = malloc((size_t)(n ? n : 1) * sizeof *stack);
    uint32_t *mark = calloc(n ? n : 1, sizeof *mark);   /* = v + 1: seen for v */
    size_t cap = 16, used = 0;
    uint32_t *preds = malloc(cap * sizeof *preds);
    if (!stack || !mark || !preds) {
        free(stack);
        free(mark);
        free(preds);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++) {
        g->nodes[v].first_pred = (uint32_t)used;
        if (!g->nodes[v].works)
            continue;
        /* walk back from v: a working node other than v ends its path */
        size_t top = 0;
        mark[v] = v + 1;
        stack[top++] = v;
        while (top) {
            uint32_t p = stack[--top];
            if (p != v && g->nodes[p].works) {
                if (used == cap) {
                    uint32_t *q = realloc(preds, 2 * cap * sizeof *q);
                    if (!q) {
                        free(stack);
                        free(mark);
                        free(preds);
                        return -1;
                    }
                    preds = q;
                    cap *= 2;
                }
                preds[used++] = p;
                continue;
            }
            for (uint32_t k = in_first[p]; k < in_first[p + 1]; k++)
                if (mark[in_list[k]] != v + 1) {
                    mark[in_list[k]] = v + 1;
                    stack[top++] = in_list[k];
                }
        }
        g->nodes[v].npreds = (uint32_t)used - g->nodes[v].first_pred;
    }
    free(stack);
    free(mark);
    g->preds = preds;
    return 0;
}

int wrr_graph_build(wrr_graph *g, uint64_t exec, uint32_t n, const uint64_t *handles,
                    const unsigned *types, size_t nedges, const uint64_t *from,
                    const uint64_t *to, const unsigned char *edge_default,
                    wrr_graph_id_fn new_id, void *id_ctx)
{
    memset(g, 0, sizeof *g);
    g->exec = exec;
    if (n > WRR_GRAPH_MAX_NODES) {
        g->unrecordable = "it has more nodes than a record's launch tag can name";
        return 0;
    }
    for (uint32_t i = 0; i < n && !g->unrecordable; i++)
        g->unrecordable = type_problem(types[i]);
    for (size_t e = 0; e < nedges && !g->unrecordable && edge_default; e++)
        if (!edge_default[e])
            g->unrecordable = "it has an edge other than a full dependency (a programmatic one)";
    if (g->unrecordable)
        return 0;
    handle_index *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    uint32_t *in_first = calloc((size_t)n + 1, sizeof *in_first);
    uint32_t *in_list = malloc((nedges ? nedges : 1) * sizeof *in_list);
    uint32_t *edge_to = malloc((nedges ? nedges : 1) * sizeof *edge_to);
    uint32_t *edge_from = malloc((nedges ? nedges : 1) * sizeof *edge_from);
    g->nodes = calloc(n ? n : 1, sizeof *g->nodes);
    int rc = -1;
    if (!sorted || !in_first || !in_list || !edge_to || !edge_from || !g->nodes)
        goto out;
    g->n = n;
    for (uint32_t i = 0; i < n; i++) {
        sorted[i] = (handle_index){handles[i], i};
        wrr_gnode *v = &g->nodes[i];
        v->handle = handles[i];
        v->type = types[i];
        v->works = types[i] == WRR_GNODE_KERNEL || types[i] == WRR_GNODE_MEMCPY ||
                   types[i] == WRR_GNODE_MEMSET;
        if (v->works) {
            v->stream = new_id(id_ctx, 0);
            v->event = new_id(id_ctx, 1);
        }
    }
    qsort(sorted, n, sizeof *sorted, by_handle);
    /* incoming edges, counted then placed (CSR) */
    for (size_t e = 0; e < nedges; e++) {
        long f = find_node(sorted, n, from[e]), t = find_node(sorted, n, to[e]);
        if (f < 0 || t < 0) {
            g->unrecordable = "an edge names a node the graph does not list";
            rc = 0;
            goto out;
        }
        edge_from[e] = (uint32_t)f;
        edge_to[e] = (uint32_t)t;
        in_first[t + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        in_first[i + 1] += in_first[i];
    {
        uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
        if (!fill)
            goto out;
        for (size_t e = 0; e < nedges; e++) {
            uint32_t t = edge_to[e];
            in_list[in_first[t] + fill[t]++] = edge_from[e];
        }
        free(fill);
    }
    if (nearest_working_preds(g, in_first, in_list) != 0)
        goto out;
    g->entry_event = new_id(id_ctx, 1);
    g->by_handle = sorted;   /* kept: node_begin finds nodes by bisection */
    sorted = NULL;
    rc = 0;
out:
    free(sorted);
    free(in_first);
    free(in_list);
    free(edge_to);
    free(edge_from);
    if (rc != 0 || g->unrecordable) {
        const char *why = g->unrecordable;
        wrr_graph_free(g);
        g->exec = exec;
        g->unrecordable = why;
    }
    return rc;
}

void wrr_graph_free(wrr_graph *g)
{
    free(g->nodes);
    free(g->preds);
    free(g->by_handle);
    memset(g, 0, sizeof *g);
}

static void emit_stream_event(wrr_graph_emit_fn emit, void *ctx, unsigned kind, uint32_t stream,
                              uint32_t event)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.u.stream_event.stream = stream;
    ev.u.stream_event.event = event;
    emit(ctx, &ev);
}

void wrr_graph_launch_begin(wrr_graph *g, uint32_t stream, wrr_graph_emit_fn emit, void *ctx)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (g->nodes[i].works && g->launches && g->nodes[i].issued == g->launches)
            emit_stream_event(emit, ctx, WR_EV_STREAM_WAIT, stream, g->nodes[i].event);
    g->launches++;
    emit_stream_event(emit, ctx, WR_EV_EVENT_RECORD, stream, g->entry_event);
}

long wrr_graph_node_begin(wrr_graph *g, uint64_t handle, wrr_graph_emit_fn emit, void *ctx,
                          uint32_t *unordered)
{
    *unordered = 0;
    long i = g->by_handle ? find_node(g->by_handle, g->n, handle) : -1;
    if (i < 0 || !g->nodes[i].works || !g->launches)
        return -1;
    wrr_gnode *v = &g->nodes[i];
    v->begun = g->launches;
    emit_stream_event(emit, ctx, WR_EV_STREAM_WAIT, v->stream, g->entry_event);
    for (uint32_t k = 0; k < v->npreds; k++) {
        const wrr_gnode *p = &g->nodes[g->preds[v->first_pred + k]];
        if (p->issued != g->launches)
            (*unordered)++;
        emit_stream_event(emit, ctx, WR_EV_STREAM_WAIT, v->stream, p->event);
    }
    return i;
}

void wrr_graph_node_issued(wrr_graph *g, long index, wrr_graph_emit_fn emit, void *ctx)
{
    if (index < 0 || (uint32_t)index >= g->n)
        return;
    wrr_gnode *v = &g->nodes[index];
    v->issued = g->launches;
    emit_stream_event(emit, ctx, WR_EV_EVENT_RECORD, v->stream, v->event);
}

uint32_t wrr_graph_launch_end(wrr_graph *g, uint32_t stream, wrr_graph_emit_fn emit, void *ctx)
{
    uint32_t missing = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        if (!g->nodes[i].works)
            continue;
        if (g->nodes[i].issued == g->launches)
            emit_stream_event(emit, ctx, WR_EV_STREAM_WAIT, stream, g->nodes[i].event);
        else
            missing++;
    }
    return missing;
}

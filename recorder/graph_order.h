/*
 * graph_order.h: a CUDA graph launch's orderings as trace events (plain C,
 * no CUDA headers; unit-tested in tests/recorder).
 *
 * A graph's nodes run on the device's own streams, as its edges allow:
 * nodes with no path between them run concurrently.  The trace has no
 * graphs, only streams and events (formats/FORMAT.md), so each node that
 * does memory work (a kernel, a copy, a memset) gets a stream and an event
 * of the recorder's own (handle_ids.h: non-blocking ids of no handle), and
 * the launch becomes:
 *
 *   launch begin     the launching stream S waits for the graph's previous
 *                    launch (CUDA orders a launch of an executable graph
 *                    after its previous one, whatever the stream), then
 *                    records the graph's entry event;
 *   a node begins    its stream waits for the entry event and for the
 *                    event of each nearest working node before it (paths
 *                    through empty, host and memory-allocation nodes,
 *                    which do no recorded work, pass their orderings on);
 *   its work issued  (KERNEL_LAUNCH, or the copy's events, on its stream)
 *                    its stream records its event;
 *   launch end       S waits for every node's event: work issued on S
 *                    after the graph comes after all of it.
 *
 * A node's stream is the same in every launch of the graph, so a node is
 * also in program order with itself in the previous launch (which the
 * previous-launch wait covers already).  A graph whose nodes order what
 * this model cannot spell is recordable no more: its launches run
 * unrecorded (the caller counts them as lost).  That is a graph with a
 * child graph, an event record or wait node, an external semaphore, a
 * batch memory operation or a conditional node, an edge other than the
 * default (a programmatic edge lets its nodes overlap), or more nodes than
 * a ring record's launch tag can name.
 */
#ifndef WARPRACE_GRAPH_ORDER_H
#define WARPRACE_GRAPH_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "warprace/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Node types, with the values of cuda.h's CUgraphNodeType. */
enum {
    WRR_GNODE_KERNEL = 0,
    WRR_GNODE_MEMCPY = 1,
    WRR_GNODE_MEMSET = 2,
    WRR_GNODE_HOST = 3,
    WRR_GNODE_GRAPH = 4,
    WRR_GNODE_EMPTY = 5,
    WRR_GNODE_WAIT_EVENT = 6,
    WRR_GNODE_EVENT_RECORD = 7,
    WRR_GNODE_EXT_SEMAS_SIGNAL = 8,
    WRR_GNODE_EXT_SEMAS_WAIT = 9,
    WRR_GNODE_MEM_ALLOC = 10,
    WRR_GNODE_MEM_FREE = 11,
    WRR_GNODE_BATCH_MEM_OP = 12,
    WRR_GNODE_CONDITIONAL = 13
};

/* The most nodes a recordable graph may have (a kernel node's records
 * carry its index + 1 as their launch tag: ring_format.h). */
#define WRR_GRAPH_MAX_NODES 65535u

typedef struct wrr_gnode {
    uint64_t handle;
    unsigned type;
    int works;                   /* a kernel, memcpy or memset node */
    uint32_t stream, event;      /* the recorder's own ids (working nodes) */
    uint32_t first_pred, npreds; /* nearest working predecessors: preds[] */
    uint64_t begun;              /* the launch (1, 2, ...) it last began in */
    uint64_t issued;             /* ... and had its event recorded in */
} wrr_gnode;

typedef struct wrr_graph {
    uint64_t exec;               /* the executable graph's handle */
    wrr_gnode *nodes;
    uint32_t n;
    uint32_t *preds;
    void *by_handle;             /* the nodes' handles, sorted, with their indices */
    uint32_t entry_event;
    uint64_t launches;           /* launches begun */
    const char *unrecordable;    /* NULL, or why its launches go unrecorded */
} wrr_graph;

typedef void (*wrr_graph_emit_fn)(void *ctx, const wr_event *ev);
/* A new stream id (is_event 0) or event id (1) of the recorder's own. */
typedef uint32_t (*wrr_graph_id_fn)(void *ctx, int is_event);

/* Builds g for executable graph `exec` from its graph's n nodes (handles,
 * cuGraphNodeGetType's types) and edges (from[i] -> to[i]; edge_default[i]
 * 0 where the edge is not a default one, NULL when all are).  An edge
 * naming no node makes the graph unrecordable.  Returns 0, or -1 out of
 * memory (g then has no nodes). */
int wrr_graph_build(wrr_graph *g, uint64_t exec, uint32_t n, const uint64_t *handles,
                    const unsigned *types, size_t nedges, const uint64_t *from,
                    const uint64_t *to, const unsigned char *edge_default,
                    wrr_graph_id_fn new_id, void *id_ctx);
void wrr_graph_free(wrr_graph *g);

/* A launch of g on stream id `stream` begins (recordable graphs only). */
void wrr_graph_launch_begin(wrr_graph *g, uint32_t stream, wrr_graph_emit_fn emit, void *ctx);
/* Working node `handle` begins: its waits are emitted.  Returns its index,
 * or -1 when g has no such working node.  *unordered: how many of its
 * predecessors had not begun in this launch (the driver announced the
 * nodes out of their order: their ordering with this node is missed). */
long wrr_graph_node_begin(wrr_graph *g, uint64_t handle, wrr_graph_emit_fn emit, void *ctx,
                          uint32_t *unordered);
/* Node `index`'s work has been issued on its stream: its event is recorded. */
void wrr_graph_node_issued(wrr_graph *g, long index, wrr_graph_emit_fn emit, void *ctx);
/* The launch ends: `stream` waits for every node issued in it.  Returns
 * how many working nodes did not begin in it (their work went unrecorded). */
uint32_t wrr_graph_launch_end(wrr_graph *g, uint32_t stream, wrr_graph_emit_fn emit, void *ctx);

#ifdef __cplusplus
}
#endif
#endif

/* Kernel ends that wait for the program to observe them (pending_ends.h). */
#include "pending_ends.h"

#include <stdlib.h>
#include <string.h>

static void post_end(uint32_t launch, wrr_post_fn post, void *ctx)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_END;
    ev.u.kernel_end.launch = launch;
    post(ctx, &ev);
}

int wrr_ends_add(wrr_pending_ends *p, uint32_t launch, uint32_t stream, wrr_post_fn post,
                 void *ctx)
{
    if (p->nends == p->capends) {
        size_t cap = p->capends ? 2 * p->capends : 64;
        void *grown = realloc(p->ends, cap * sizeof *p->ends);
        if (!grown) {
            post_end(launch, post, ctx);
            return -1;
        }
        p->ends = grown;
        p->capends = cap;
    }
    p->ends[p->nends].launch = launch;
    p->ends[p->nends++].stream = stream;
    return 0;
}

void wrr_ends_flush(wrr_pending_ends *p, uint32_t stream, wrr_post_fn post, void *ctx)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->nends; i++) {
        if (stream == WRR_ALL_STREAMS || p->ends[i].stream == stream)
            post_end(p->ends[i].launch, post, ctx);
        else
            p->ends[kept++] = p->ends[i];
    }
    p->nends = kept;
}

void wrr_ends_event_recorded(wrr_pending_ends *p, uint32_t event, uint32_t stream)
{
    size_t i = 0;
    while (i < p->nrecorded && p->recorded[i].event != event)
        i++;
    if (i == p->nrecorded) {
        if (p->nrecorded == p->caprecorded) {
            size_t cap = p->caprecorded ? 2 * p->caprecorded : 64;
            void *grown = realloc(p->recorded, cap * sizeof *p->recorded);
            if (!grown)
                return;   /* its synchronization then observes nothing: a missed end */
            p->recorded = grown;
            p->caprecorded = cap;
        }
        p->nrecorded++;
    }
    p->recorded[i].event = event;
    p->recorded[i].stream = stream;
}

void wrr_ends_event_synced(wrr_pending_ends *p, uint32_t event, wrr_post_fn post, void *ctx)
{
    for (size_t i = 0; i < p->nrecorded; i++)
        if (p->recorded[i].event == event)
            wrr_ends_flush(p, p->recorded[i].stream, post, ctx);
}

void wrr_ends_free(wrr_pending_ends *p)
{
    free(p->ends);
    free(p->recorded);
    memset(p, 0, sizeof *p);
}

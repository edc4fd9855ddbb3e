/* A wrr_sink that keeps every event in memory (lane addresses copied). */
#ifndef WARPRACE_TESTS_RECORDER_CAPTURE_H
#define WARPRACE_TESTS_RECORDER_CAPTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"

typedef struct cap_site {
    char file[256], func[128];
    uint32_t line;
} cap_site;

typedef struct capture {
    wr_event *ev;
    uint64_t (*lanes)[32];
    size_t n, cap;
    size_t flushes;
    size_t flushed_upto;         /* events covered by the last flush */
    cap_site sites[64];
    uint32_t nsites;
    int fail_after;              /* >0: event() fails once n reaches it */
} capture;

static int cap_event(void *ctx, const wr_event *e)
{
    capture *c = ctx;
    if (c->fail_after && (int)c->n >= c->fail_after)
        return -1;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->ev = realloc(c->ev, c->cap * sizeof *c->ev);
        c->lanes = realloc(c->lanes, c->cap * sizeof *c->lanes);
        for (size_t i = 0; i < c->n; i++)   /* lanes moved: re-point */
            if (c->ev[i].kind == WR_EV_ACCESS && c->ev[i].u.access.addr_mode == WR_ADDR_VECTOR)
                c->ev[i].u.access.lane_addr = c->lanes[i];
    }
    c->ev[c->n] = *e;
    if (e->kind == WR_EV_ACCESS && e->u.access.addr_mode == WR_ADDR_VECTOR) {
        memcpy(c->lanes[c->n], e->u.access.lane_addr, sizeof c->lanes[0]);
        c->ev[c->n].u.access.lane_addr = c->lanes[c->n];
    }
    c->n++;
    return 0;
}

static int cap_flush(void *ctx)
{
    capture *c = ctx;
    c->flushes++;
    c->flushed_upto = c->n;
    return 0;
}

static uint32_t cap_site_fn(void *ctx, const char *file, uint32_t line, const char *func,
                            uint64_t pc)
{
    (void)pc;
    capture *c = ctx;
    if (c->nsites >= 64)
        return 0;
    cap_site *s = &c->sites[c->nsites++];
    snprintf(s->file, sizeof s->file, "%s", file);
    snprintf(s->func, sizeof s->func, "%s", func);
    s->line = line;
    return c->nsites;
}

static inline wrr_sink cap_sink(capture *c)
{
    memset(c, 0, sizeof *c);
    wrr_sink s = {c, cap_event, cap_flush, cap_site_fn, NULL, NULL, NULL};
    return s;
}

static inline void cap_free(capture *c)
{
    free(c->ev);
    free(c->lanes);
}

#endif

/* Contiguous runs of a pitched host copy (copy_region.h). */
#include "copy_region.h"

#include <stdbool.h>
#include <string.h>

/* Rows of a device side follow each other without a gap. */
static bool rows_adjacent(const wrr_copy_side *s, uint64_t width)
{
    return !s->addr || s->pitch == width;
}

static bool planes_adjacent(const wrr_copy_side *s, uint64_t width, uint64_t height)
{
    return !s->addr || ((height == 1 || s->pitch == width) && s->slice == width * height);
}

long wrr_copy_runs(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                   uint64_t depth, wrr_copy_run_fn fn, void *ctx)
{
    if (!width)
        return 0;
    if (!height)
        height = 1;
    if (!depth)
        depth = 1;
    /* merge what both device sides lay out contiguously */
    uint64_t run = width, rows = height, planes = depth;
    if (height == 1 || (rows_adjacent(&dst, width) && rows_adjacent(&src, width))) {
        run = width * height;
        rows = 1;
        if (depth == 1 || (planes_adjacent(&dst, width, height) &&
                           planes_adjacent(&src, width, height))) {
            run *= depth;
            planes = 1;
        }
    }
    long n = 0;
    for (uint64_t z = 0; z < planes; z++)
        for (uint64_t y = 0; y < rows; y++) {
            uint64_t d = dst.addr ? dst.addr + z * dst.slice + y * dst.pitch : 0;
            uint64_t s = src.addr ? src.addr + z * src.slice + y * src.pitch : 0;
            if (fn(ctx, d, s, run) != 0)
                return -1;
            n++;
        }
    return n;
}

typedef struct copy_post {
    uint8_t kind, async;
    uint32_t stream, site;
    wrr_copy_post_fn post;
    void *ctx;
} copy_post;

static int post_run(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes)
{
    const copy_post *c = ctx;
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_HOST_COPY;
    ev.site = c->site;
    ev.u.copy.kind = c->kind;
    ev.u.copy.dst = dst;
    ev.u.copy.src = src;
    ev.u.copy.bytes = bytes;
    ev.u.copy.async = c->async;
    ev.u.copy.stream = c->stream;
    c->post(c->ctx, &ev);
    return 0;
}

void wrr_copy_events(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                     uint64_t depth, unsigned kind, uint32_t stream, int async, uint32_t site,
                     wrr_copy_post_fn post, void *ctx)
{
    copy_post c = {(uint8_t)kind, (uint8_t)(async != 0), stream, site, post, ctx};
    wrr_copy_runs(dst, src, width, height, depth, post_run, &c);
}

/* wrr_sink over the trace writer.  The writer lives in the drain thread
 * (one thread per wr_writer, as trace.h requires); it compresses and writes
 * chunks itself. */
#include "writer_sink.h"

#include <string.h>

static int ws_event(void *ctx, const wr_event *ev)
{
    wrr_writer_sink *ws = ctx;
    if (wr_writer_event(ws->w, ev, &ws->err) != 0)
        return -1;
    ws->events++;
    return 0;
}

static int ws_encoded(void *ctx, const wr_encoded *events)
{
    wrr_writer_sink *ws = ctx;
    if (wr_writer_encoded(ws->w, events, &ws->err) != 0)
        return -1;
    ws->events += wr_encoded_count(events);
    return 0;
}

static int ws_flush(void *ctx)
{
    wrr_writer_sink *ws = ctx;
    return wr_writer_flush(ws->w, &ws->err);
}

static uint32_t ws_site(void *ctx, const char *file, uint32_t line, const char *function,
                        uint64_t pc)
{
    wrr_writer_sink *ws = ctx;
    return wr_writer_site(ws->w, pc, file, line, function);
}

static const char *ws_error(void *ctx)
{
    const wrr_writer_sink *ws = ctx;
    return ws->err.msg;
}

void wrr_writer_sink_init(wrr_writer_sink *ws, wr_writer *w, wrr_sink *sink)
{
    memset(ws, 0, sizeof *ws);
    ws->w = w;
    sink->ctx = ws;
    sink->event = ws_event;
    sink->flush = ws_flush;
    sink->site = ws_site;
    sink->finish = NULL;
    sink->error = ws_error;
    sink->encoded = ws_encoded;
}

/* A wrr_sink that writes to a wr_writer (the trace file). */
#ifndef WARPRACE_RECORDER_WRITER_SINK_H
#define WARPRACE_RECORDER_WRITER_SINK_H

#include "drain.h"
#include "warprace/trace.h"

typedef struct wrr_writer_sink {
    wr_writer *w;
    wr_error err;                /* the last error */
    uint64_t events;
} wrr_writer_sink;

/* Fills *sink so that it writes to ws->w. */
void wrr_writer_sink_init(wrr_writer_sink *ws, wr_writer *w, wrr_sink *sink);

#endif

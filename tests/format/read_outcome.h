/* What a reader made of a whole trace: the last wr_reader_next status (or
 * -2: refused at open), the events delivered, the error and the stats.
 * Shared by the stream tests and the reader's fuzz target, which compare a
 * stream with the same bytes read from memory. */
#ifndef WARPRACE_TESTS_READ_OUTCOME_H
#define WARPRACE_TESTS_READ_OUTCOME_H

#include <string.h>

#include "warprace/trace.h"

typedef struct read_outcome {
    int rc;
    uint64_t events;
    wr_error err;
    wr_reader_stats st;
} read_outcome;

/* Reads r to its end and closes it; r NULL: refused, with *open_err. */
static inline read_outcome read_to_end(wr_reader *r, const wr_error *open_err)
{
    read_outcome o;
    memset(&o, 0, sizeof o);
    if (!r) {
        o.rc = -2;
        o.err = *open_err;
        return o;
    }
    wr_batch b;
    while ((o.rc = wr_reader_next(r, &b, &o.err)) == 1) {
        o.events += b.count;
        wr_batch_release(&b);
    }
    o.st = *wr_reader_stats_get(r);
    wr_reader_close(r);
    return o;
}

#endif

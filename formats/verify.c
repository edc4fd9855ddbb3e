/* wr_verify_file: reads every chunk of a trace (checksums, decoding, catalog
 * references, footer index) and reports what is wrong with it. */
#include <stdio.h>

#include "format_internal.h"

static int verify_reader(wr_reader *r, FILE *report, wr_error *err)
{
    wr_batch batch;
    int rc;
    while ((rc = wr_reader_next(r, &batch, err)) == 1)
        wr_batch_release(&batch);
    if (rc < 0) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 2;
    }
    const wr_reader_stats *st = wr_reader_stats_get(r);
    if (st->truncated) {
        if (st->truncated_bytes)
            wr_error_at(err, wr_reader_path(r), st->truncated_at,
                        "truncated: the last %llu bytes are an incomplete chunk or footer "
                        "(the producer stopped while writing); everything before is sound",
                        (unsigned long long)st->truncated_bytes);
        else
            wr_error_at(err, wr_reader_path(r), st->truncated_at,
                        "truncated: no footer (the producer stopped after a complete chunk); "
                        "everything before is sound");
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 1;
    }
    return 0;
}

int wr_verify_file(const char *path, FILE *report, wr_error *err)
{
    wr_error local;
    if (!err)
        err = &local;
    int io_failure = 0;
    wr_reader *r = wrf_reader_open_file(path, err, &io_failure);
    if (!r) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return io_failure ? -1 : 2;
    }
    int rc = verify_reader(r, report, err);
    wr_reader_close(r);
    return rc;
}

int wr_verify_memory(const void *data, size_t size, const char *name, FILE *report, wr_error *err)
{
    wr_error local;
    if (!err)
        err = &local;
    wr_reader *r = wr_reader_open_memory(data, size, name, err);
    if (!r) {
        if (report)
            fprintf(report, "%s\n", err->msg);
        return 2;
    }
    int rc = verify_reader(r, report, err);
    wr_reader_close(r);
    return rc;
}

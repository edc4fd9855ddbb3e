/* wr_error_at: every binary-format error names the file and the byte offset. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "warprace/trace.h"

void wr_error_at(wr_error *err, const char *file, uint64_t offset, const char *fmt, ...)
{
    if (!err)
        return;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err->msg, sizeof err->msg, "%s: offset %llu: %s", file ? file : "(trace)",
             (unsigned long long)offset, what);
    err->offset = offset;
    err->line = err->col = 0;
}

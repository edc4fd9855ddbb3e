/* raceq result tables. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"

void *rq_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("raceq: out of memory\n", stderr);
        exit(RQ_USAGE);
    }
    return p;
}

void *rq_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("raceq: out of memory\n", stderr);
        exit(RQ_USAGE);
    }
    return p;
}

char *rq_xstrndup(const char *s, size_t n)
{
    char *d = rq_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *rq_xstrdup(const char *s)
{
    return rq_xstrndup(s, strlen(s));
}

rq_table *rq_table_new(const char *title, int ncols, const char *const *cols)
{
    rq_table *t = rq_xmalloc(sizeof *t);
    memset(t, 0, sizeof *t);
    t->title = title ? rq_xstrdup(title) : NULL;
    t->ncols = ncols;
    t->cols = rq_xmalloc(sizeof(char *) * (size_t)(ncols > 0 ? ncols : 1));
    for (int i = 0; i < ncols; i++)
        t->cols[i] = rq_xstrdup(cols[i]);
    return t;
}

rq_cell *rq_table_add_row(rq_table *t)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = rq_xrealloc(t->cells, sizeof(rq_cell) * t->cap * (size_t)(t->ncols ? t->ncols : 1));
    }
    rq_cell *row = t->cells + t->nrows * (size_t)t->ncols;
    memset(row, 0, sizeof(rq_cell) * (size_t)t->ncols);
    for (int i = 0; i < t->ncols; i++)
        row[i].type = SQLITE_NULL;
    t->nrows++;
    return row;
}

void rq_cell_set_text(rq_cell *c, const char *s)
{
    free(c->s);
    c->type = SQLITE_TEXT;
    c->s = rq_xstrdup(s);
}

void rq_cell_set_int(rq_cell *c, long long v)
{
    c->type = SQLITE_INTEGER;
    c->i = v;
}

const rq_cell *rq_table_cell(const rq_table *t, size_t row, int col)
{
    return &t->cells[row * (size_t)t->ncols + (size_t)col];
}

int rq_table_col(const rq_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], name))
            return i;
    return -1;
}

void rq_table_free(rq_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i].s);
    free(t->cells);
    for (int i = 0; i < t->ncols; i++)
        free(t->cols[i]);
    free(t->cols);
    free(t->title);
    free(t);
}

void rq_result_add(rq_result *r, rq_table *t)
{
    r->tables = rq_xrealloc(r->tables, sizeof(rq_table *) * (r->ntables + 1));
    r->tables[r->ntables++] = t;
}

void rq_result_free(rq_result *r)
{
    for (size_t i = 0; i < r->ntables; i++)
        rq_table_free(r->tables[i]);
    free(r->tables);
    free(r->name);
    memset(r, 0, sizeof *r);
}

/* Shortest "%.*g" that reads back as the same double. */
static void format_double(double d, char *buf, size_t bufsize)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, bufsize, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

const char *rq_cell_text(const rq_cell *c, char *buf, size_t bufsize)
{
    switch (c->type) {
    case SQLITE_INTEGER:
        snprintf(buf, bufsize, "%lld", c->i);
        return buf;
    case SQLITE_FLOAT:
        format_double(c->d, buf, bufsize);
        return buf;
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        return c->s ? c->s : "";
    default:
        return "";
    }
}

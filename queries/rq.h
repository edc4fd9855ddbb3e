/*
 * raceq internals: result tables, report catalog, output formats.
 *
 *   rq_table.c   result tables (a report's statements produce one each)
 *   rq_report.c  the catalog (embedded reports + --queries DIR), header
 *                parsing, running a report with bound parameters
 *   rq_output.c  table, csv, json, markdown
 *   rq_sarif.c   SARIF 2.1.0 for race rows
 *   raceq.c      the command line, opening and checking the database, runs
 */
#ifndef RACEQ_RQ_H
#define RACEQ_RQ_H

#include <stddef.h>
#include <stdio.h>
#include <sqlite3.h>

#define RQ_SCHEMA_VERSION 3
/* The oldest version raceq reads (the columns added since read as empty:
 * raceq.c, older_schema_views). */
#define RQ_SCHEMA_OLDEST 1

/* Exit statuses. */
enum { RQ_OK = 0, RQ_FOUND = 1, RQ_USAGE = 2 };

/* ---- result tables ---- */
typedef struct rq_cell {
    int type;           /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL */
    long long i;
    double d;
    char *s;            /* TEXT; BLOB as lower-case hex */
} rq_cell;

typedef struct rq_table {
    char *title;        /* section title, NULL when none */
    int ncols;
    char **cols;
    size_t nrows, cap;
    rq_cell *cells;     /* nrows * ncols */
} rq_table;

typedef struct rq_result {
    char *name;         /* report name ("sql" for ad-hoc) */
    rq_table **tables;
    size_t ntables;
} rq_result;

void *rq_xmalloc(size_t n);
void *rq_xrealloc(void *p, size_t n);
char *rq_xstrdup(const char *s);
char *rq_xstrndup(const char *s, size_t n);
/* A copy of s[0..n) without leading blanks and trailing blanks or CR. */
char *rq_trimmed(const char *s, size_t n);

rq_table *rq_table_new(const char *title, int ncols, const char *const *cols);
rq_cell *rq_table_add_row(rq_table *t);           /* ncols NULL cells */
void rq_cell_set_text(rq_cell *c, const char *s);
void rq_cell_set_int(rq_cell *c, long long v);
const rq_cell *rq_table_cell(const rq_table *t, size_t row, int col);
int rq_table_col(const rq_table *t, const char *name);   /* -1 when absent */
void rq_table_free(rq_table *t);
void rq_result_add(rq_result *r, rq_table *t);
void rq_result_free(rq_result *r);
/* A cell as text ("" for NULL), in the given buffer or the cell's string. */
const char *rq_cell_text(const rq_cell *c, char *buf, size_t bufsize);

/* ---- reports ---- */
typedef struct rq_param {
    char *name;
    char *def;          /* default value, NULL when none */
    char *desc;
    int required;
} rq_param;

typedef struct rq_report {
    char *name;
    char *desc;
    char *origin;       /* "built-in" or the file's path */
    char *text;
    rq_param *params;
    int nparams;
} rq_report;

typedef struct rq_catalog {
    rq_report *reports;
    size_t n;
} rq_catalog;

/* name=value given on the command line. */
typedef struct rq_kv {
    const char *name;
    const char *value;
} rq_kv;

/* Parses the header of a report; name_hint is used when there is no
 * "-- name:" line.  Returns 0, or -1 with a message in err. */
/* Parses a report's header (the leading `--` comment lines: `name:`,
 * `description:`, `param:`) and keeps the text.  name_hint names a report
 * without `-- name:`.  0, or -1 with err set to "ORIGIN:LINE: what" (a bad
 * parameter line, a bad name) or "ORIGIN: what" (a bad name taken from
 * name_hint); r is then empty. */
int rq_report_parse(rq_report *r, const char *name_hint, const char *origin,
                    const char *text, char *err, size_t errsize);
void rq_report_free(rq_report *r);
void rq_catalog_load_builtin(rq_catalog *c);
/* Adds (or replaces, by name) the *.sql files of dir.  -1 on error (printed). */
int rq_catalog_load_dir(rq_catalog *c, const char *dir);
const rq_report *rq_catalog_find(const rq_catalog *c, const char *name);
void rq_catalog_free(rq_catalog *c);
int rq_param_is_run(const char *name);   /* "run" or "run_*" */

/* Resolves a run reference (id, name or 'latest') to a complete run's id.
 * Returns 0, or prints an error and returns -1. */
int rq_resolve_run(sqlite3 *db, const char *dbpath, const char *ref, long long *id);

/* Runs every statement of sql, binding parameters by name from kv (run
 * parameters resolved to run ids) and then from the report's defaults
 * (report may be NULL for ad-hoc SQL); each statement gives one table.
 * Statements that would write are refused.  Returns RQ_OK or RQ_USAGE
 * (message printed). */
int rq_run_sql(sqlite3 *db, const char *dbpath, const rq_report *report,
               const char *sql, const rq_kv *kv, int nkv, rq_result *out);

/* ---- output ---- */
typedef enum rq_format {
    RQ_FMT_TABLE, RQ_FMT_CSV, RQ_FMT_JSON, RQ_FMT_MARKDOWN, RQ_FMT_SARIF
} rq_format;

int rq_format_parse(const char *s, rq_format *f);
void rq_print(FILE *out, const rq_result *r, rq_format f);
void rq_json_string(FILE *out, const char *s);
void rq_json_number_double(FILE *out, double d);

/* SARIF for a result whose (single) table has race columns.  Returns 0, or
 * -1 with a message in err when the result has no race rows. */
int rq_print_sarif(FILE *out, const rq_result *r, char *err, size_t errsize);

#endif

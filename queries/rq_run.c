/*
 * Running a raceq report (rq_report.c has the catalog): each statement in
 * turn, with its parameters bound (run references resolved to run ids), its
 * rows collected into tables with the "-- section:" titles.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"

/* The "-- section: TITLE" comment in the text before a statement. */
static char *section_title(const char *from, const char *to)
{
    static const char key[] = "-- section:";
    for (const char *p = from; p < to; p++) {
        if ((size_t)(to - p) >= sizeof key - 1 && !strncmp(p, key, sizeof key - 1)) {
            const char *s = p + sizeof key - 1;
            const char *e = s;
            while (e < to && *e != '\n')
                e++;
            return rq_trimmed(s, (size_t)(e - s));
        }
    }
    return NULL;
}

/* Binds a value: integers and reals as numbers, anything else as text. */
static int bind_value(sqlite3_stmt *st, int i, const char *v)
{
    char *end;
    if (*v && !isspace((unsigned char)*v)) {
        errno = 0;
        long long ll = strtoll(v, &end, 10);
        if (!*end && !errno)
            return sqlite3_bind_int64(st, i, ll);
        double d = strtod(v, &end);
        if (!*end && !errno)
            return sqlite3_bind_double(st, i, d);
    }
    return sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

static const char *lookup(const rq_report *report, const rq_kv *kv, int nkv,
                          const char *name, int *required)
{
    *required = 0;
    for (int i = nkv - 1; i >= 0; i--)      /* the last one given wins */
        if (!strcmp(kv[i].name, name))
            return kv[i].value;
    if (report)
        for (int i = 0; i < report->nparams; i++)
            if (!strcmp(report->params[i].name, name)) {
                *required = report->params[i].required;
                return report->params[i].def;
            }
    return NULL;
}

static void store_cell(rq_cell *c, sqlite3_stmt *st, int col)
{
    c->type = sqlite3_column_type(st, col);
    switch (c->type) {
    case SQLITE_INTEGER:
        c->i = sqlite3_column_int64(st, col);
        break;
    case SQLITE_FLOAT:
        c->d = sqlite3_column_double(st, col);
        break;
    case SQLITE_TEXT: {
        const unsigned char *t = sqlite3_column_text(st, col);
        c->s = rq_xstrndup((const char *)t, (size_t)sqlite3_column_bytes(st, col));
        break;
    }
    case SQLITE_BLOB: {
        const unsigned char *b = sqlite3_column_blob(st, col);
        size_t n = (size_t)sqlite3_column_bytes(st, col);
        c->s = rq_xmalloc(2 * n + 1);
        for (size_t k = 0; k < n; k++)
            snprintf(c->s + 2 * k, 3, "%02x", b[k]);
        c->s[2 * n] = '\0';
        break;
    }
    default:
        c->type = SQLITE_NULL;
        break;
    }
}

int rq_run_sql(sqlite3 *db, const char *dbpath, const rq_report *report,
               const char *sql, const rq_kv *kv, int nkv, rq_result *out)
{
    const char *what = report ? report->name : "sql";
    const char *p = sql;
    while (*p) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(db, p, -1, &st, &tail) != SQLITE_OK) {
            fprintf(stderr, "raceq: %s: SQL error: %s\n", what, sqlite3_errmsg(db));
            return RQ_USAGE;
        }
        if (!st) {                          /* only comments or blanks left */
            if (!tail || tail == p)
                break;
            p = tail;
            continue;
        }
        if (!sqlite3_stmt_readonly(st)) {
            fprintf(stderr, "raceq: %s: refusing a statement that writes (the database is "
                            "opened read-only; raceq only reads): %.60s\n",
                    what, sqlite3_sql(st));
            sqlite3_finalize(st);
            return RQ_USAGE;
        }
        int np = sqlite3_bind_parameter_count(st);
        for (int i = 1; i <= np; i++) {
            const char *pname = sqlite3_bind_parameter_name(st, i);
            if (!pname) {
                fprintf(stderr, "raceq: %s: positional parameters (?) are not supported; "
                                "use :name and --param name=value\n", what);
                sqlite3_finalize(st);
                return RQ_USAGE;
            }
            const char *name = pname + 1;
            int required;
            const char *v = lookup(report, kv, nkv, name, &required);
            int rc = SQLITE_OK;
            if (!v) {
                if (required) {
                    fprintf(stderr, "raceq: report '%s' needs the parameter %s (--param %s=VALUE)\n",
                            what, name, name);
                    sqlite3_finalize(st);
                    return RQ_USAGE;
                }
                continue;                   /* stays NULL */
            }
            if (rq_param_is_run(name)) {
                long long id;
                if (rq_resolve_run(db, dbpath, v, &id) != 0) {
                    sqlite3_finalize(st);
                    return RQ_USAGE;
                }
                rc = sqlite3_bind_int64(st, i, id);
            } else {
                rc = bind_value(st, i, v);
            }
            if (rc != SQLITE_OK) {
                fprintf(stderr, "raceq: %s: cannot bind %s: %s\n", what, name, sqlite3_errmsg(db));
                sqlite3_finalize(st);
                return RQ_USAGE;
            }
        }
        int ncols = sqlite3_column_count(st);
        rq_table *t = NULL;
        if (ncols > 0) {
            const char **cols = rq_xmalloc(sizeof(char *) * (size_t)ncols);
            for (int c = 0; c < ncols; c++) {
                cols[c] = sqlite3_column_name(st, c);
                if (!cols[c])
                    cols[c] = "?";
            }
            char *title = section_title(p, tail);
            t = rq_table_new(title, ncols, cols);
            free(title);
            free(cols);
        }
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!t)
                continue;
            rq_cell *row = rq_table_add_row(t);
            for (int c = 0; c < ncols; c++)
                store_cell(&row[c], st, c);
        }
        if (rc != SQLITE_DONE) {
            fprintf(stderr, "raceq: %s: %s\n", what, sqlite3_errmsg(db));
            sqlite3_finalize(st);
            rq_table_free(t);
            return RQ_USAGE;
        }
        sqlite3_finalize(st);
        if (t)
            rq_result_add(out, t);
        p = tail;
    }
    return RQ_OK;
}

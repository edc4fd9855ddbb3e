/*
 * raceq reports: the catalog (the shipped .sql files embedded at build time,
 * plus the user's --queries DIR), their header comments, and running one
 * with bound parameters.
 *
 * A report is a .sql file of one or more read-only statements.  Its header
 * (the leading comment lines) documents it:
 *
 *   -- name: diff
 *   -- description: one line
 *   -- param: run_a required  the older run     (NAME [required] description)
 *   -- param: limit=20  rows per section       (NAME=DEFAULT description)
 *
 * A "-- section: TITLE" comment before a statement titles its result.
 * Parameters are :NAME in the SQL and are always bound, never spliced; those
 * named run or run_* take a run reference (id, name, 'latest') and are bound
 * to the run's id.  A parameter given nowhere is NULL.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "embedded_sql.h"
#include "rq.h"

WR_SQL_FILES_DECLARE(wr_report_sql);

int rq_param_is_run(const char *name)
{
    return !strcmp(name, "run") || !strncmp(name, "run_", 4);
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static char *trimmed(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return rq_xstrndup(s, n);
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

int rq_report_parse(rq_report *r, const char *name_hint, const char *origin,
                    const char *text, char *err, size_t errsize)
{
    memset(r, 0, sizeof *r);
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *s = skip_ws(p);
        if ((size_t)(s - p) == len) {       /* blank line */
            p = eol ? eol + 1 : p + len;
            continue;
        }
        if (strncmp(s, "--", 2))
            break;                          /* first statement: header over */
        s = skip_ws(s + 2);
        size_t rest = len - (size_t)(s - p);
        if (rest >= 5 && !strncmp(s, "name:", 5)) {
            free(r->name);
            r->name = trimmed(s + 5, rest - 5);
        } else if (rest >= 12 && !strncmp(s, "description:", 12)) {
            free(r->desc);
            r->desc = trimmed(s + 12, rest - 12);
        } else if (rest >= 6 && !strncmp(s, "param:", 6)) {
            char *line = trimmed(s + 6, rest - 6);
            size_t nlen = strcspn(line, " \t");
            rq_param pm = {0};
            char *word = rq_xstrndup(line, nlen);
            char *eq = strchr(word, '=');
            if (eq) {
                pm.def = rq_xstrdup(eq + 1);
                *eq = '\0';
            }
            pm.name = word;
            const char *d = skip_ws(line + nlen);
            if (!strncmp(d, "required", 8) && (d[8] == '\0' || d[8] == ' ' || d[8] == '\t')) {
                pm.required = 1;
                d = skip_ws(d + 8);
            }
            pm.desc = rq_xstrdup(d);
            free(line);
            if (!valid_name(pm.name)) {
                snprintf(err, errsize, "bad parameter line in %s: '-- param: NAME[=DEFAULT] [required] DESCRIPTION'", origin);
                free(pm.name);
                free(pm.def);
                free(pm.desc);
                goto fail;
            }
            r->params = rq_xrealloc(r->params, sizeof(rq_param) * (size_t)(r->nparams + 1));
            r->params[r->nparams++] = pm;
        }
        p = eol ? eol + 1 : p + len;
    }
    if (!r->name)
        r->name = rq_xstrdup(name_hint);
    if (!valid_name(r->name)) {
        snprintf(err, errsize, "bad report name '%s' in %s", r->name, origin);
        goto fail;
    }
    if (!r->desc)
        r->desc = rq_xstrdup("");
    r->origin = rq_xstrdup(origin);
    r->text = rq_xstrdup(text);
    return 0;
fail:
    free(r->name);
    free(r->desc);
    for (int i = 0; i < r->nparams; i++) {
        free(r->params[i].name);
        free(r->params[i].def);
        free(r->params[i].desc);
    }
    free(r->params);
    memset(r, 0, sizeof *r);
    return -1;
}

static void report_free(rq_report *r)
{
    free(r->name);
    free(r->desc);
    free(r->origin);
    free(r->text);
    for (int i = 0; i < r->nparams; i++) {
        free(r->params[i].name);
        free(r->params[i].def);
        free(r->params[i].desc);
    }
    free(r->params);
}

static void catalog_put(rq_catalog *c, rq_report *r)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->reports[i].name, r->name)) {
            report_free(&c->reports[i]);
            c->reports[i] = *r;
            return;
        }
    c->reports = rq_xrealloc(c->reports, sizeof(rq_report) * (c->n + 1));
    c->reports[c->n++] = *r;
}

void rq_catalog_load_builtin(rq_catalog *c)
{
    for (unsigned i = 0; i < wr_report_sql_count; i++) {
        rq_report r;
        char err[256];
        if (rq_report_parse(&r, wr_report_sql[i].name, "built-in", wr_report_sql[i].text,
                            err, sizeof err) == 0)
            catalog_put(c, &r);
        else
            fprintf(stderr, "raceq: internal error: %s\n", err);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int rq_catalog_load_dir(rq_catalog *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "raceq: --queries %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".sql") && e->d_name[0] != '.') {
            names = rq_xrealloc(names, sizeof(char *) * (n + 1));
            names[n++] = rq_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp_str);   /* deterministic order */
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = rq_xmalloc(plen);
        snprintf(path, plen, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        char *text = NULL;
        size_t tlen = 0;
        if (f) {
            char buf[8192];
            size_t got;
            while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
                text = rq_xrealloc(text, tlen + got + 1);
                memcpy(text + tlen, buf, got);
                tlen += got;
            }
            if (ferror(f)) {
                free(text);
                text = NULL;
            }
            fclose(f);
        }
        if (!text && f)
            text = rq_xstrdup("");
        if (!text) {
            fprintf(stderr, "raceq: %s: %s\n", path, strerror(errno));
            status = -1;
        } else {
            text[tlen] = '\0';
            char hint[256];
            snprintf(hint, sizeof hint, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
            rq_report r;
            char err[512];
            if (rq_report_parse(&r, hint, path, text, err, sizeof err) == 0) {
                catalog_put(c, &r);
            } else {
                fprintf(stderr, "raceq: %s\n", err);
                status = -1;
            }
        }
        free(text);
        free(path);
        free(names[i]);
    }
    free(names);
    return status;
}

const rq_report *rq_catalog_find(const rq_catalog *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->reports[i].name, name))
            return &c->reports[i];
    return NULL;
}

void rq_catalog_free(rq_catalog *c)
{
    for (size_t i = 0; i < c->n; i++)
        report_free(&c->reports[i]);
    free(c->reports);
    c->reports = NULL;
    c->n = 0;
}

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
            return trimmed(s, (size_t)(e - s));
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

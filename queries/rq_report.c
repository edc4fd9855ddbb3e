/*
 * raceq reports: the catalog (the shipped .sql files embedded at build time,
 * plus the user's --queries DIR) and their header comments; running one
 * with bound parameters is rq_run.c.
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

char *rq_trimmed(const char *s, size_t n)
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
    unsigned line_no = 0, name_line = 0;   /* 0: the name comes from name_hint */
    while (*p) {
        line_no++;
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
            r->name = rq_trimmed(s + 5, rest - 5);
            name_line = line_no;
        } else if (rest >= 12 && !strncmp(s, "description:", 12)) {
            free(r->desc);
            r->desc = rq_trimmed(s + 12, rest - 12);
        } else if (rest >= 6 && !strncmp(s, "param:", 6)) {
            char *line = rq_trimmed(s + 6, rest - 6);
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
                snprintf(err, errsize,
                         "%s:%u: bad parameter line: '-- param: NAME[=DEFAULT] [required] "
                         "DESCRIPTION' (NAME: letters, digits, _ and -)",
                         origin, line_no);
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
        if (name_line)
            snprintf(err, errsize, "%s:%u: bad report name '%s' (letters, digits, _ and -)",
                     origin, name_line, r->name);
        else
            snprintf(err, errsize,
                     "%s: bad report name '%s' (from the file name: give one with '-- name:')",
                     origin, r->name);
        goto fail;
    }
    if (!r->desc)
        r->desc = rq_xstrdup("");
    r->origin = rq_xstrdup(origin);
    r->text = rq_xstrdup(text);
    return 0;
fail:
    rq_report_free(r);
    return -1;
}

void rq_report_free(rq_report *r)
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
    memset(r, 0, sizeof *r);
}

static void catalog_put(rq_catalog *c, rq_report *r)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->reports[i].name, r->name)) {
            rq_report_free(&c->reports[i]);
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
        } else if (memchr(text, '\0', tlen)) {
            /* the SQL would end there unseen */
            fprintf(stderr, "raceq: %s: offset %zu: a NUL byte in a report file\n", path,
                    (size_t)((char *)memchr(text, '\0', tlen) - text));
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
        rq_report_free(&c->reports[i]);
    free(c->reports);
    c->reports = NULL;
    c->n = 0;
}

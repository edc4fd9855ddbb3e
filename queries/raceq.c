/*
 * raceq: SQL reports over warprace findings (model: `nsys stats`).
 *
 *   raceq [DB]                          summary of the latest complete run
 *   raceq DB list                       the reports and their parameters
 *   raceq DB report NAME [--run R] [--param name=value ...]
 *   raceq DB diff RUN_A RUN_B           new, fixed, persisting races
 *   raceq DB runs                       every run, interrupted ones included
 *   raceq DB sql "SELECT ..."           ad-hoc read-only SQL
 *
 * The database is opened read-only (never created); statements that would
 * write are refused; parameters are bound, never spliced into SQL text.
 * Exit: 0 the report ran, 1 --fail-on-races and races found, 2 usage or
 * input error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "warprace/demangle.h"
#include "rq.h"
#include "suppress.h"
#include "warprace_version.h"

#define DEFAULT_DB "warprace.db"

static void usage(FILE *out)
{
    fprintf(out,
"raceq %s: SQL reports over warprace findings\n"
"\n"
"usage: raceq [DB] [COMMAND [ARGS]] [OPTIONS]      (DB defaults to " DEFAULT_DB ")\n"
"\n"
"commands:\n"
"  summary               the run at a glance (default command)\n"
"  list                  the reports, what they show, their parameters\n"
"  report NAME           run a report (also: raceq DB NAME)\n"
"  diff RUN_A RUN_B      races new, fixed and persisting from RUN_A to RUN_B\n"
"  runs                  every run in the database, interrupted ones included\n"
"  sql \"SELECT ...\"      ad-hoc read-only SQL (:name parameters from --param)\n"
"\n"
"options:\n"
"  --run R               the run: id, name or 'latest' (default latest complete run)\n"
"  -p, --param NAME=VALUE  a report parameter (repeatable)\n"
"  -f, --format FMT      table (default), csv, json, markdown, sarif\n"
"                        (sarif: race rows, i.e. `report races`, `diff`)\n"
"  --queries DIR         add the .sql reports in DIR (same name replaces a shipped one)\n"
"  --suppressions FILE   leave out the races a rule of FILE matches, in every report\n"
"                        (kernel:GLOB, site:GLOB, race:GLOB, as warprace analyze)\n"
"  --fail-on-races       exit 1 when summary finds races in the run, or diff finds\n"
"                        new races (lockset's potential races do not count)\n"
"  -h, --help            this text\n"
"  --version             print the version\n"
"\n"
"exit status: 0 the report ran, 1 races found (--fail-on-races), 2 usage or input error\n",
            WARPRACE_VERSION);
}

/* wr_suppressed(kernel_a, kernel_b, site_a, site_b): 1 when a rule matches. */
static void sql_suppressed(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;   /* registered with 4 */
    const char *v[4];
    for (int i = 0; i < 4; i++)
        v[i] = (const char *)sqlite3_value_text(argv[i]);
    sqlite3_result_int(ctx, wr_suppressions_match(sqlite3_user_data(ctx), v[0], v[1], v[2], v[3]) >= 0);
}

/* wr_demangle(name): a kernel's symbol as its source spells it
 * (warprace/demangle.h); a name that is no C++ symbol as it is. */
static void sql_demangle(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;   /* registered with 1 */
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    if (!name) {
        sqlite3_result_null(ctx);
        return;
    }
    char *readable = wr_demangle(name);
    if (!readable)
        sqlite3_result_error_nomem(ctx);
    else
        sqlite3_result_text(ctx, readable, -1, free);
}

/* Every report reads `races` unqualified: a TEMP view of that name, which
 * SQLite looks up before main's table, leaves the suppressed rows out of
 * all of them (and of `sql`); the file itself is never written. */
static int hide_suppressed(sqlite3 *db, wr_suppressions *supp)
{
    char *msg = NULL;
    if (sqlite3_create_function(db, "wr_suppressed", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, supp,
                                sql_suppressed, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA query_only = 0;"
                     "CREATE TEMP VIEW races AS SELECT * FROM main.races"
                     " WHERE NOT wr_suppressed(kernel_a, kernel_b, site_a, site_b);"
                     "PRAGMA query_only = 1;",
                     NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "raceq: cannot apply the suppressions: %s\n", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int is_command(const char *s)
{
    static const char *const cmds[] = {"summary", "list", "report", "diff", "runs", "sql", "help"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(s, cmds[i]))
            return 1;
    return 0;
}

/* ---- the database ---- */

/* A database of an older version read as the current one: a TEMP view of
 * each changed table, which SQLite finds before main's, gives the columns
 * added since as empty.  The file is not written. */
static int older_schema_views(sqlite3 *db, const char *path, int version)
{
    char *msg = NULL;
    int rc = SQLITE_OK;
    if (version < 3)   /* launches.site (2), launches.analysed (3) */
        rc = sqlite3_exec(db,
                          version < 2
                              ? "PRAGMA query_only = 0;"
                                "CREATE TEMP VIEW launches AS"
                                " SELECT *, '' AS site, 1 AS analysed FROM main.launches;"
                                "PRAGMA query_only = 1;"
                              : "PRAGMA query_only = 0;"
                                "CREATE TEMP VIEW launches AS"
                                " SELECT *, 1 AS analysed FROM main.launches;"
                                "PRAGMA query_only = 1;",
                          NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "raceq: %s: cannot read schema version %d: %s\n", path, version,
                msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static sqlite3 *open_db(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            fprintf(stderr, "raceq: no such database: %s (create one with `warprace analyze "
                            "TRACE --db %s`)\n", path, path);
        else
            fprintf(stderr, "raceq: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "raceq: %s is a directory, not a warprace database\n", path);
        return NULL;
    }
    sqlite3 *db = NULL;
    /* SQLITE_OPEN_READONLY: never creates, never writes. */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "raceq: cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);     /* no ATTACH of other files */
    sqlite3_create_function(db, "wr_demangle", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_demangle, NULL, NULL);
    sqlite3_busy_timeout(db, 5000);                  /* an analysis may be writing */
    sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL);

    sqlite3_stmt *s = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (version < 0) {
        fprintf(stderr, "raceq: %s is not a warprace database (%s)\n", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    int is_warprace = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'application'", -1, &s,
                           NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) &&
        !strcmp((const char *)sqlite3_column_text(s, 0), "warprace"))
        is_warprace = 1;
    sqlite3_finalize(s);
    if (!is_warprace) {
        fprintf(stderr, "raceq: %s is not a warprace database (no meta row application = "
                        "'warprace'; it was not written by `warprace analyze`)\n", path);
        sqlite3_close(db);
        return NULL;
    }
    if (version < RQ_SCHEMA_OLDEST || version > RQ_SCHEMA_VERSION) {
        fprintf(stderr, "raceq: %s has the wrong schema version: expected %d, found %d (%s)\n",
                path, RQ_SCHEMA_VERSION, version,
                version > RQ_SCHEMA_VERSION ? "written by a newer warprace; upgrade raceq"
                                            : "written by an older warprace; analyze the trace again");
        sqlite3_close(db);
        return NULL;
    }
    if (version < RQ_SCHEMA_VERSION && older_schema_views(db, path, version) != 0) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* Single-row integer query with one optional text or int binding; returns 1
 * and *out when a non-NULL value came back. */
static int query_int(sqlite3 *db, const char *sql, const char *text, long long num, long long *out)
{
    sqlite3_stmt *s;
    int got = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_bind_parameter_count(s) > 0) {
        if (text)
            sqlite3_bind_text(s, 1, text, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_int64(s, 1, num);
    }
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        *out = sqlite3_column_int64(s, 0);
        got = 1;
    }
    sqlite3_finalize(s);
    return got;
}

static void print_known_runs(sqlite3 *db, const char *dbpath)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT id, name FROM complete_runs ORDER BY id DESC LIMIT 11",
                           -1, &s, NULL) != SQLITE_OK)
        return;
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (n == 10) {
            fputs(", ...", stderr);
            break;
        }
        fprintf(stderr, "%s%lld (%s)", n ? ", " : "; complete runs: ",
                (long long)sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1));
        n++;
    }
    sqlite3_finalize(s);
    if (!n)
        fputs("; it has no complete run", stderr);
    fprintf(stderr, " (see `raceq %s runs`)\n", dbpath);
}

int rq_resolve_run(sqlite3 *db, const char *dbpath, const char *ref, long long *id)
{
    if (!strcmp(ref, "latest")) {
        if (query_int(db, "SELECT max(id) FROM complete_runs", NULL, 0, id))
            return 0;
        fprintf(stderr, "raceq: %s has no complete run (analyze a trace into it with "
                        "`warprace analyze TRACE --db %s`; see `raceq %s runs`)\n",
                dbpath, dbpath, dbpath);
        return -1;
    }
    long long incomplete = -1;
    if (all_digits(ref)) {
        long long want = strtoll(ref, NULL, 10);
        if (query_int(db, "SELECT id FROM complete_runs WHERE id = ?1", NULL, want, id))
            return 0;
        long long x;
        if (query_int(db, "SELECT id FROM runs WHERE id = ?1", NULL, want, &x))
            incomplete = x;
    }
    if (query_int(db, "SELECT max(id) FROM complete_runs WHERE name = ?1", ref, 0, id))
        return 0;
    if (incomplete < 0)
        query_int(db, "SELECT max(id) FROM runs WHERE name = ?1", ref, 0, &incomplete);
    if (incomplete >= 0) {
        sqlite3_stmt *s;
        const char *status = "?";
        char buf[32] = "?";
        if (sqlite3_prepare_v2(db, "SELECT status FROM runs WHERE id = ?1", -1, &s, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(s, 1, incomplete);
            if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
                snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(s, 0));
            sqlite3_finalize(s);
            status = buf;
        }
        fprintf(stderr, "raceq: run '%s' in %s is not complete (run %lld has status '%s': an "
                        "interrupted or failed analysis); reports use complete runs only",
                ref, dbpath, incomplete, status);
    } else {
        fprintf(stderr, "raceq: unknown run '%s' in %s", ref, dbpath);
    }
    print_known_runs(db, dbpath);
    return -1;
}

/* ---- commands ---- */

typedef struct opts {
    rq_format format;
    int fail_on_races;
    const char *queries_dir;
    const char *suppressions;
    rq_kv *kv;
    int nkv;
} opts;

static void add_kv(opts *o, const char *name, const char *value)
{
    o->kv = rq_xrealloc(o->kv, sizeof(rq_kv) * (size_t)(o->nkv + 1));
    o->kv[o->nkv].name = rq_xstrdup(name);
    o->kv[o->nkv].value = value;
    o->nkv++;
}

static int output(const rq_result *res, rq_format f)
{
    if (f == RQ_FMT_SARIF) {
        char err[512];
        if (rq_print_sarif(stdout, res, err, sizeof err) != 0) {
            fprintf(stderr, "raceq: %s\n", err);
            return RQ_USAGE;
        }
    } else {
        rq_print(stdout, res, f);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "raceq: writing the output: %s\n", strerror(errno));
        return RQ_USAGE;
    }
    return RQ_OK;
}

static void print_known_reports(const rq_catalog *cat)
{
    fputs("known reports:", stderr);
    for (size_t i = 0; i < cat->n; i++)
        fprintf(stderr, "%s %s", i ? "," : "", cat->reports[i].name);
    fputc('\n', stderr);
}

static int cmd_list(const rq_catalog *cat, rq_format f)
{
    static const char *const cols[] = {"report", "description", "parameters", "origin"};
    rq_result res = {.name = rq_xstrdup("list")};
    rq_table *t = rq_table_new(NULL, 4, cols);
    for (size_t i = 0; i < cat->n; i++) {
        const rq_report *r = &cat->reports[i];
        rq_cell *row = rq_table_add_row(t);
        rq_cell_set_text(&row[0], r->name);
        rq_cell_set_text(&row[1], r->desc);
        size_t len = 1;
        for (int k = 0; k < r->nparams; k++)
            len += strlen(r->params[k].name) + (r->params[k].def ? strlen(r->params[k].def) + 1 : 0) + 16;
        char *ps = rq_xmalloc(len);
        ps[0] = '\0';
        for (int k = 0; k < r->nparams; k++) {
            const rq_param *p = &r->params[k];
            if (k)
                strcat(ps, " ");
            strcat(ps, p->name);
            if (p->def) {
                strcat(ps, "=");
                strcat(ps, p->def);
            }
            if (p->required)
                strcat(ps, " (required)");
        }
        rq_cell_set_text(&row[2], ps);
        free(ps);
        rq_cell_set_text(&row[3], r->origin);
    }
    rq_result_add(&res, t);
    int rc;
    if (f == RQ_FMT_SARIF) {
        fputs("raceq: --format sarif is for race rows, not for `list`\n", stderr);
        rc = RQ_USAGE;
    } else {
        rc = output(&res, f);
    }
    rq_result_free(&res);
    return rc;
}

/* Every --param must name a parameter the report declares. */
static int check_params(const rq_report *r, const opts *o)
{
    for (int i = 0; i < o->nkv; i++) {
        int ok = 0;
        for (int k = 0; k < r->nparams; k++)
            if (!strcmp(r->params[k].name, o->kv[i].name))
                ok = 1;
        if (!ok) {
            fprintf(stderr, "raceq: report '%s' has no parameter '%s'", r->name, o->kv[i].name);
            if (r->nparams) {
                fputs("; its parameters:", stderr);
                for (int k = 0; k < r->nparams; k++)
                    fprintf(stderr, "%s %s", k ? "," : "", r->params[k].name);
            } else {
                fputs("; it takes none", stderr);
            }
            fputc('\n', stderr);
            return RQ_USAGE;
        }
    }
    for (int k = 0; k < r->nparams; k++) {
        if (!r->params[k].required)
            continue;
        int given = 0;
        for (int i = 0; i < o->nkv; i++)
            if (!strcmp(o->kv[i].name, r->params[k].name))
                given = 1;
        if (!given) {
            fprintf(stderr, "raceq: report '%s' needs the parameter %s (--param %s=VALUE)\n",
                    r->name, r->params[k].name, r->params[k].name);
            return RQ_USAGE;
        }
    }
    return RQ_OK;
}

static const char *kv_get(const opts *o, const char *name)
{
    for (int i = o->nkv - 1; i >= 0; i--)
        if (!strcmp(o->kv[i].name, name))
            return o->kv[i].value;
    return NULL;
}

/* Runs report `name`; with fail_on_races, 1 when it finds (new) races. */
static int cmd_report(sqlite3 *db, const char *dbpath, const rq_catalog *cat,
                      const char *name, const opts *o)
{
    const rq_report *r = rq_catalog_find(cat, name);
    if (!r) {
        fprintf(stderr, "raceq: unknown report '%s'; ", name);
        print_known_reports(cat);
        return RQ_USAGE;
    }
    int rc = check_params(r, o);
    if (rc != RQ_OK)
        return rc;
    rq_result res = {.name = rq_xstrdup(r->name)};
    rc = rq_run_sql(db, dbpath, r, r->text, o->kv, o->nkv, &res);
    if (rc == RQ_OK)
        rc = output(&res, o->format);
    if (rc == RQ_OK && o->fail_on_races) {
        if (!strcmp(r->name, "summary")) {
            const char *ref = kv_get(o, "run");
            long long id, n = 0;
            if (rq_resolve_run(db, dbpath, ref ? ref : "latest", &id) != 0)
                rc = RQ_USAGE;
            else if (query_int(db, "SELECT count(DISTINCT identity) FROM races WHERE run_id = ?1 "
                                   "AND potential = 0", NULL, id, &n) && n > 0) {
                fprintf(stderr, "raceq: %lld race(s) in run %lld (--fail-on-races)\n", n, id);
                rc = RQ_FOUND;
            }
        } else if (!strcmp(r->name, "diff") && res.ntables > 0) {
            const rq_table *t = res.tables[0];
            int cs = rq_table_col(t, "status"), cp = rq_table_col(t, "potential");
            long long n = 0;
            for (size_t i = 0; cs >= 0 && i < t->nrows; i++) {
                const rq_cell *st = rq_table_cell(t, i, cs);
                int potential = cp >= 0 && rq_table_cell(t, i, cp)->type == SQLITE_INTEGER &&
                                rq_table_cell(t, i, cp)->i != 0;
                if (st->type == SQLITE_TEXT && !strcmp(st->s, "new") && !potential)
                    n++;
            }
            if (n > 0) {
                fprintf(stderr, "raceq: %lld new race(s) (--fail-on-races)\n", n);
                rc = RQ_FOUND;
            }
        }
    }
    rq_result_free(&res);
    return rc;
}

static int cmd_sql(sqlite3 *db, const char *dbpath, const char *sql, const opts *o)
{
    rq_result res = {.name = rq_xstrdup("sql")};
    int rc = rq_run_sql(db, dbpath, NULL, sql, o->kv, o->nkv, &res);
    if (rc == RQ_OK)
        rc = output(&res, o->format);
    rq_result_free(&res);
    return rc;
}

int main(int argc, char **argv)
{
    opts o = {.format = RQ_FMT_TABLE};
    const char **pos = rq_xmalloc(sizeof(char *) * (size_t)(argc + 1));
    int npos = 0, status = RQ_USAGE;
    int options_done = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || !a[1]) {
            pos[npos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            free(pos);
            free(o.kv);
            return RQ_OK;
        }
        if (!strcmp(a, "--version")) {
            printf("raceq %s (schema version %d)\n", WARPRACE_VERSION, RQ_SCHEMA_VERSION);
            free(pos);
            free(o.kv);
            return RQ_OK;
        }
        if (!strcmp(a, "--fail-on-races")) {
            o.fail_on_races = 1;
            continue;
        }
        /* options with a value: --opt VALUE or --opt=VALUE */
        static const char *const valued[] = {"--run",     "--param",  "-p",          "--format",
                                             "-f",        "--queries", "--suppressions"};
        const char *opt = NULL, *val = NULL;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
            size_t n = strlen(valued[k]);
            if (!strncmp(a, valued[k], n) && (a[n] == '\0' || a[n] == '=')) {
                opt = valued[k];
                if (a[n] == '=')
                    val = a + n + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                break;
            }
        }
        if (!opt) {
            fprintf(stderr, "raceq: unknown option '%s' (see raceq --help)\n", a);
            goto done;
        }
        if (!val) {
            fprintf(stderr, "raceq: %s needs a value (see raceq --help)\n", opt);
            goto done;
        }
        if (!strcmp(opt, "--run")) {
            add_kv(&o, "run", val);
        } else if (!strcmp(opt, "--param") || !strcmp(opt, "-p")) {
            const char *eq = strchr(val, '=');
            if (!eq || eq == val) {
                fprintf(stderr, "raceq: --param wants NAME=VALUE, not '%s'\n", val);
                goto done;
            }
            /* the name is the argv text before '=': point into a copy */
            char *name = rq_xstrndup(val, (size_t)(eq - val));
            add_kv(&o, name, eq + 1);
            free(name);
        } else if (!strcmp(opt, "--format") || !strcmp(opt, "-f")) {
            if (rq_format_parse(val, &o.format) != 0) {
                fprintf(stderr, "raceq: unknown format '%s' (table, csv, json, markdown, sarif)\n", val);
                goto done;
            }
        } else if (!strcmp(opt, "--queries")) {
            o.queries_dir = val;
        } else if (!strcmp(opt, "--suppressions")) {
            o.suppressions = val;
        }
    }

    const char *dbpath = DEFAULT_DB;
    int db_given = 0, first = 0;
    if (npos > 0) {
        struct stat st;
        if (!(is_command(pos[0]) && stat(pos[0], &st) != 0)) {
            dbpath = pos[0];
            db_given = 1;
            first = 1;
        }
    }
    const char *cmd = first < npos ? pos[first] : "summary";
    const char **args = pos + first + 1;
    int nargs = npos > first ? npos - first - 1 : 0;

    if (!strcmp(cmd, "help")) {
        usage(stdout);
        status = RQ_OK;
        goto done;
    }

    rq_catalog cat = {0};
    rq_catalog_load_builtin(&cat);
    if (o.queries_dir && rq_catalog_load_dir(&cat, o.queries_dir) != 0) {
        rq_catalog_free(&cat);
        goto done;
    }

    sqlite3 *db = NULL;
    wr_suppressions *supp = NULL;
    if (!strcmp(cmd, "list")) {
        if (nargs) {
            fputs("raceq: list takes no arguments\n", stderr);
        } else if (db_given && !(db = open_db(dbpath))) {
            /* error printed */
        } else {
            status = cmd_list(&cat, o.format);
        }
        sqlite3_close(db);
        rq_catalog_free(&cat);
        goto done;
    }

    /* the command's shape, before touching the database */
    const char *report = NULL;
    if (!strcmp(cmd, "summary") || !strcmp(cmd, "runs")) {
        report = cmd;
        if (nargs) {
            fprintf(stderr, "raceq: %s takes no arguments (use --run R)\n", cmd);
            goto close;
        }
    } else if (!strcmp(cmd, "report")) {
        if (nargs != 1) {
            fputs("raceq: usage: raceq DB report NAME [--run R] [--param NAME=VALUE ...]\n", stderr);
            if (nargs == 0)
                print_known_reports(&cat);
            goto close;
        }
        report = args[0];
    } else if (!strcmp(cmd, "diff")) {
        if (nargs != 2) {
            fputs("raceq: usage: raceq DB diff RUN_A RUN_B (runs by id, name or 'latest')\n", stderr);
            goto close;
        }
        add_kv(&o, "run_a", args[0]);
        add_kv(&o, "run_b", args[1]);
        report = "diff";
    } else if (!strcmp(cmd, "sql")) {
        if (nargs != 1) {
            fputs("raceq: usage: raceq DB sql \"SELECT ...\" (one argument; quote it)\n", stderr);
            goto close;
        }
    } else if (rq_catalog_find(&cat, cmd)) {
        report = cmd;                       /* raceq DB races */
        if (nargs) {
            fprintf(stderr, "raceq: report %s takes no positional arguments (use --run, --param)\n", cmd);
            goto close;
        }
    } else {
        fprintf(stderr, "raceq: unknown command or report '%s' (commands: summary list report "
                        "diff runs sql; ", cmd);
        print_known_reports(&cat);
        fputs("raceq: see raceq --help)\n", stderr);
        goto close;
    }

    if (o.suppressions) {
        char msg[512];
        supp = wr_suppressions_load(o.suppressions, msg, sizeof msg);
        if (!supp) {
            fprintf(stderr, "raceq: %s\n", msg);
            goto close;
        }
    }
    db = open_db(dbpath);
    if (!db || (supp && hide_suppressed(db, supp) != 0))
        goto close;
    if (report)
        status = cmd_report(db, dbpath, &cat, report, &o);
    else
        status = cmd_sql(db, dbpath, args[0], &o);

close:
    sqlite3_close(db);
    wr_suppressions_free(supp);
    rq_catalog_free(&cat);
done:
    for (int i = 0; i < o.nkv; i++)
        free((char *)o.kv[i].name);
    free(o.kv);
    free(pos);
    return status;
}

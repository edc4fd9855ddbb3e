/*
 * raceq tests (suite 'raceq').  Each test builds a database from
 * queries/schema.sql + tests/raceq/fixture.sql in its own temporary
 * directory and runs the raceq program (path in $RACEQ) on it.
 *
 * Golden outputs live in tests/raceq/golden/ and are compared byte for byte.
 * After an intended change of a report or format, regenerate them with
 *
 *     WR_UPDATE_GOLDEN=1 meson test -C BUILD --suite raceq
 *
 * and review the diff (git diff tests/raceq/golden) before committing.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_mini.h"

static char g_dir[512];
static char g_db[600];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    cr_assert(v && *v, "environment variable %s not set (run through meson test)", name);
    return v;
}

static void exec_file(sqlite3 *db, const char *path)
{
    char *sql = slurp(path, NULL);
    cr_assert(sql, "cannot read %s", path);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", path, err ? err : "?");
    free(sql);
}

static void make_db(const char *path)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    exec_file(db, env("RQ_SCHEMA"));
    exec_file(db, env("RQ_FIXTURE"));
    sqlite3_close(db);
}

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/raceq-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
    snprintf(g_db, sizeof g_db, "%s/fx.db", g_dir);
    make_db(g_db);
}

static void teardown(void)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
}

TestSuite(raceq, .init = setup, .fini = teardown, .timeout = 60);

typedef struct run {
    int status;         /* exit status, or -1 */
    char *out;
    size_t outlen;
    char *err;
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs raceq with args (NULL-terminated) in the test directory. */
static run rq(const char *const *args)
{
    const char *prog = env("RACEQ");
    char out[700], err[700];
    snprintf(out, sizeof out, "%s/stdout", g_dir);
    snprintf(err, sizeof err, "%s/stderr", g_dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(g_dir) != 0)
            _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        size_t n = 0;
        while (args[n])
            n++;
        char **argv = calloc(n + 2, sizeof(char *));
        argv[0] = (char *)prog;
        for (size_t i = 0; i < n; i++)
            argv[i + 1] = (char *)args[i];
        execv(prog, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    run r = {.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1};
    r.out = slurp(out, &r.outlen);
    r.err = slurp(err, NULL);
    cr_assert(r.out && r.err);
    return r;
}
#define RQ(...) rq((const char *const[]){__VA_ARGS__, NULL})

/* ---- goldens ---- */

static int update_golden(void)
{
    const char *u = getenv("WR_UPDATE_GOLDEN");
    return u && !strcmp(u, "1");
}

/* 1 when data equals the golden file (or it was rewritten). */
static int check_golden(const char *name, const char *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", env("RQ_GOLDEN_DIR"), name);
    if (update_golden()) {
        FILE *f = fopen(path, "wb");
        cr_assert(f, "cannot write %s", path);
        fwrite(data, 1, len, f);
        fclose(f);
        return 1;
    }
    size_t glen;
    char *g = slurp(path, &glen);
    if (!g) {
        cr_log_error("golden %s is missing; regenerate with WR_UPDATE_GOLDEN=1 meson test "
                     "--suite raceq", path);
        return 0;
    }
    int same = glen == len && !memcmp(g, data, len);
    if (!same) {
        size_t i = 0, line = 1, ls = 0;
        while (i < len && i < glen && g[i] == data[i]) {
            if (data[i] == '\n') {
                line++;
                ls = i + 1;
            }
            i++;
        }
        const char *ge = strchr(g + ls, '\n');
        const char *de = memchr(data + ls, '\n', len - ls);
        cr_log_error("%s differs at line %zu:\n  golden: %.*s\n  actual: %.*s\n(regenerate "
                     "with WR_UPDATE_GOLDEN=1 if intended)", name, line,
                     (int)(ge ? (size_t)(ge - (g + ls)) : glen - ls), g + ls,
                     (int)(de ? (size_t)(de - (data + ls)) : len - ls), data + ls);
    }
    free(g);
    return same;
}

/* Every report, as it is run for the goldens. */
static const struct {
    const char *name;
    const char *args[8];
} cases[] = {
    {"summary", {"summary", "--run", "demo"}},
    {"summary-latest", {"summary"}},
    {"races", {"report", "races", "--run", "1"}},
    {"races-scoped", {"report", "races", "--run", "1", "--param", "engine=scoped"}},
    {"hotspots", {"report", "hotspots", "--run", "1"}},
    {"engines", {"report", "engines", "--run", "1"}},
    {"diff", {"diff", "demo", "demo-fixed"}},
    {"kernels", {"report", "kernels", "--run", "1"}},
    {"allocations", {"report", "allocations", "--run", "1"}},
    {"runs", {"runs"}},
    {"list", {"list"}},
};

static const struct {
    const char *flag, *ext;
} formats[] = {
    {"table", "txt"}, {"csv", "csv"}, {"json", "json"}, {"markdown", "md"},
};

static void golden_format(size_t fi)
{
    int bad = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *argv[12] = {g_db};
        size_t n = 1;
        for (size_t k = 0; cases[c].args[k]; k++)
            argv[n++] = cases[c].args[k];
        argv[n++] = "--format";
        argv[n++] = formats[fi].flag;
        argv[n] = NULL;
        run r = rq(argv);
        cr_expect_eq(r.status, 0, "%s --format %s: exit %d: %s", cases[c].name,
                     formats[fi].flag, r.status, r.err);
        cr_expect_str_empty(r.err, "%s: stderr: %s", cases[c].name, r.err);
        char name[128];
        snprintf(name, sizeof name, "%s.%s", cases[c].name, formats[fi].ext);
        if (!check_golden(name, r.out, r.outlen))
            bad++;
        if (!strcmp(formats[fi].flag, "json")) {
            char err[200];
            js *v = js_parse(r.out, err, sizeof err);
            cr_expect(v, "%s: json output does not parse: %s", name, err);
            cr_expect(js_str(js_get(v, "report")), "%s: no report name", name);
            cr_expect(js_get(v, "sections") && js_get(v, "sections")->type == JS_ARR);
            js_free(v);
        }
        run_free(&r);
    }
    cr_expect_eq(bad, 0, "%d golden file(s) differ (see above)", bad);
}

Test(raceq, golden_table) { golden_format(0); }
Test(raceq, golden_csv) { golden_format(1); }
Test(raceq, golden_json) { golden_format(2); }
Test(raceq, golden_markdown) { golden_format(3); }

Test(raceq, golden_sarif)
{
    run r = RQ(g_db, "report", "races", "--run", "1", "--format", "sarif");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(check_golden("races.sarif", r.out, r.outlen));
    run_free(&r);
    r = RQ(g_db, "diff", "1", "2", "--format", "sarif");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(check_golden("diff.sarif", r.out, r.outlen));
    run_free(&r);
}

/* ---- SARIF structure ---- */

static long long count_sql(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    long long n = -1;
    cr_assert_eq(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

static void check_location(const js *loc, const char *what)
{
    cr_assert(loc && loc->type == JS_OBJ, "%s: not an object", what);
    const js *pl = js_get(loc, "physicalLocation");
    if (pl) {
        const char *uri = js_str(js_get(js_get(pl, "artifactLocation"), "uri"));
        cr_assert(uri && *uri, "%s: physicalLocation without artifactLocation.uri", what);
        const js *line = js_get(js_get(pl, "region"), "startLine");
        cr_assert(line && line->type == JS_NUM && line->num >= 1, "%s: bad region.startLine", what);
    } else {
        /* no source site (pc or '?'): then at least a message */
        cr_assert(js_str(js_get(js_get(loc, "message"), "text")), "%s: empty location", what);
    }
}

Test(raceq, sarif_required_fields)
{
    run r = RQ(g_db, "races", "--run", "1", "-f", "sarif");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char err[200];
    js *doc = js_parse(r.out, err, sizeof err);
    cr_assert(doc, "sarif does not parse: %s", err);
    cr_assert(js_str(js_get(doc, "$schema")) && strstr(js_str(js_get(doc, "$schema")), "sarif"));
    cr_assert_str_eq(js_str(js_get(doc, "version")), "2.1.0");
    const js *runs = js_get(doc, "runs");
    cr_assert(runs && runs->type == JS_ARR && runs->n == 1);
    const js *driver = js_get(js_get(js_at(runs, 0), "tool"), "driver");
    cr_assert_str_eq(js_str(js_get(driver, "name")), "warprace");
    const js *rules = js_get(driver, "rules");
    cr_assert(rules && rules->type == JS_ARR && rules->n == 4);
    static const char *const want[] = {"warprace/intra-warp", "warprace/inter-warp",
                                       "warprace/inter-block", "warprace/inter-kernel"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(js_str(js_get(js_at(rules, i), "id")), want[i]);
        cr_assert(js_str(js_get(js_get(js_at(rules, i), "shortDescription"), "text")));
    }
    const js *results = js_get(js_at(runs, 0), "results");
    cr_assert(results && results->type == JS_ARR);
    long long rows = count_sql("SELECT count(*) FROM races WHERE run_id = 1");
    cr_assert_eq((long long)results->n, rows, "one result per race row: %zu vs %lld", results->n, rows);
    int stencil = 0, warnings = 0, launch_sites = 0, host_rows = 0;
    for (size_t i = 0; i < results->n; i++) {
        const js *res = js_at(results, i);
        const char *rule = js_str(js_get(res, "ruleId"));
        cr_assert(rule, "result %zu: no ruleId", i);
        const js *ri = js_get(res, "ruleIndex");
        cr_assert(ri && ri->type == JS_NUM && ri->num >= 0 && ri->num < 4);
        cr_assert_str_eq(js_str(js_get(js_at(rules, (size_t)ri->num), "id")), rule);
        const char *level = js_str(js_get(res, "level"));
        cr_assert(level && (!strcmp(level, "error") || !strcmp(level, "warning")));
        warnings += !strcmp(level, "warning");
        const char *msg = js_str(js_get(js_get(res, "message"), "text"));
        cr_assert(msg && *msg);
        const js *locs = js_get(res, "locations");
        const js *rel = js_get(res, "relatedLocations");
        cr_assert(locs && locs->type == JS_ARR && locs->n >= 1);
        cr_assert(rel && rel->type == JS_ARR && rel->n >= 1);
        check_location(js_at(locs, 0), "locations[0]");
        check_location(js_at(rel, 0), "relatedLocations[0]");
        /* then the launch sites the fixture gives (none for listing3) */
        for (size_t k = 1; k < rel->n; k++) {
            const js *l = js_at(rel, k), *id = js_get(l, "id");
            check_location(l, "relatedLocations[k]");
            cr_assert(id && id->type == JS_NUM && (id->num == 2 || id->num == 3));
            cr_assert(strstr(js_str(js_get(js_get(l, "message"), "text")), "launched here"));
            launch_sites++;
        }
        const char *m0 = js_str(js_get(js_get(js_at(rel, 0), "message"), "text"));
        if (m0 && strstr(m0, "host copy")) {   /* host / stencil: the kernel's side only */
            cr_assert_eq(rel->n, 2);
            const js *l = js_at(rel, 1);
            cr_assert_eq(js_get(l, "id")->num, 3);
            cr_assert_eq(js_get(js_get(js_get(l, "physicalLocation"), "region"), "startLine")->num, 91);
            host_rows++;
        }
        const js *props = js_get(res, "properties");
        const char *engine = js_str(js_get(props, "engine"));
        cr_assert(engine && *engine);
        cr_assert(js_str(js_get(props, "kinds")));
        cr_assert(js_get(props, "count") && js_get(props, "count")->type == JS_NUM);
        cr_assert(js_str(js_get(props, "scope_verdict")));
        cr_assert(js_str(js_get(js_get(res, "partialFingerprints"), "warpraceIdentity/v1")));
        /* the stencil race: second site is the primary location, first related */
        const js *pl0 = js_get(js_at(locs, 0), "physicalLocation");
        const char *uri = js_str(js_get(js_get(pl0, "artifactLocation"), "uri"));
        if (uri && !strcmp(uri, "src/stencil.cu") && !strcmp(engine, "scoped")) {
            stencil++;
            cr_assert_str_eq(rule, "warprace/inter-block");
            cr_assert_eq(js_get(js_get(pl0, "region"), "startLine")->num, 57);
            const js *pl1 = js_get(js_at(rel, 0), "physicalLocation");
            cr_assert_str_eq(js_str(js_get(js_get(pl1, "artifactLocation"), "uri")), "src/stencil.cu");
            cr_assert_eq(js_get(js_get(pl1, "region"), "startLine")->num, 42);
            cr_assert_str_eq(js_str(js_get(props, "kinds")), "write/read");
            cr_assert_str_eq(js_str(js_get(props, "scope_verdict")), "missing-sync");
            cr_assert_eq(js_get(props, "count")->num, 12);
            /* both sides in launch 1: its site once */
            cr_assert_eq(rel->n, 2);
            const js *l = js_at(rel, 1);
            cr_assert_eq(js_get(js_get(js_get(l, "physicalLocation"), "region"), "startLine")->num, 80);
            cr_assert(strstr(js_str(js_get(js_get(l, "message"), "text")), "both accesses"));
        }
    }
    cr_assert_eq(stencil, 1, "the scoped stencil race is in the SARIF once");
    cr_assert(host_rows >= 1, "a host copy's race is in the SARIF");
    /* the fixture's 17 rows of run 1: 12 launch sites (listing3 and
     * producer_consumer have none; a host copy's side has none) */
    cr_assert_eq(results->n, 17);
    cr_assert_eq(launch_sites, 12);
    cr_assert_eq(warnings, 1, "lockset's potential race is a warning, the rest errors");
    js_free(doc);
    run_free(&r);

    /* sarif of a report without race rows is a usage error, not bad output */
    r = RQ(g_db, "summary", "-f", "sarif");
    cr_assert_eq(r.status, 2);
    cr_assert_str_empty(r.out);
    cr_assert(strstr(r.err, "sarif"));
    run_free(&r);
}

/* ---- diff ---- */

static int count_status_with(const char *csv, const char *status, const char *what);

/* Counts CSV lines of the diff whose first field is status. */
static int count_status(const char *csv, const char *status)
{
    return count_status_with(csv, status, "");
}

Test(raceq, diff_with_itself_reports_nothing_new_or_fixed)
{
    run r = RQ(g_db, "diff", "1", "demo", "-f", "csv", "--fail-on-races");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(count_status(r.out, "new"), 0);
    cr_assert_eq(count_status(r.out, "fixed"), 0);
    cr_assert_eq(count_status(r.out, "persisting"),
                 count_sql("SELECT count(DISTINCT identity) FROM races WHERE run_id = 1"));
    run_free(&r);
}

Test(raceq, diff_with_fixed_variant_reports_the_fixed_race)
{
    run r = RQ(g_db, "diff", "demo", "demo-fixed", "-f", "csv", "--fail-on-races");
    cr_assert_eq(r.status, 0, "no new race: %s", r.err);
    cr_assert_eq(count_status(r.out, "fixed"), 1, "%s", r.out);
    cr_assert_eq(count_status(r.out, "new"), 0);
    cr_assert(strstr(r.out, "fixed,stencil,inter-block,src/stencil.cu:42:stencil,write,"
                            "src/stencil.cu:57:stencil,read,"), "%s", r.out);
    /* every other race persists although its addresses moved */
    cr_assert_eq(count_status(r.out, "persisting"), 6);
    run_free(&r);

    /* the other way round the race is new, and --fail-on-races fails */
    r = RQ(g_db, "diff", "2", "1", "-f", "csv", "--fail-on-races");
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert_eq(count_status(r.out, "new"), 1);
    cr_assert(strstr(r.err, "1 new race"));
    run_free(&r);
    r = RQ(g_db, "diff", "2", "1", "-f", "csv");
    cr_assert_eq(r.status, 0, "without --fail-on-races: %s", r.err);
    run_free(&r);
}

Test(raceq, fail_on_races_summary)
{
    run r = RQ(g_db, "--fail-on-races", "--run", "1");
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert(strstr(r.out, "Races per engine"));
    run_free(&r);
    r = RQ(g_db, "--run", "1");
    cr_assert_eq(r.status, 0);
    run_free(&r);
}

/* ---- read-only ---- */

Test(raceq, writes_are_refused_and_the_database_unchanged)
{
    size_t before_len, after_len;
    char *before = slurp(g_db, &before_len);
    long long rows = count_sql("SELECT count(*) FROM races");
    cr_assert_eq(rows, 35, "fixture: 17 + 13 + 1 + 4 race rows");
    static const char *const writes[] = {
        "DELETE FROM races", "INSERT INTO meta VALUES ('x', 'y')", "DROP TABLE runs",
        "UPDATE runs SET status = 'failed'", "PRAGMA user_version = 5",
        "CREATE TABLE t (x)", "SELECT 1; DELETE FROM races",
        "ATTACH DATABASE 'other.db' AS o",
    };
    for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
        run r = RQ(g_db, "sql", writes[i]);
        cr_expect_eq(r.status, 2, "'%s' exited %d", writes[i], r.status);
        cr_expect(r.err[0], "'%s': no message", writes[i]);
        run_free(&r);
    }
    char *after = slurp(g_db, &after_len);
    cr_assert(before_len == after_len && !memcmp(before, after, before_len),
              "the database file changed");
    free(before);
    free(after);
    cr_assert_eq(count_sql("SELECT count(*) FROM races"), rows);
    char other[700];
    snprintf(other, sizeof other, "%s/other.db", g_dir);
    cr_assert(access(other, F_OK) != 0, "ATTACH created a file");

    run r = RQ(g_db, "sql", "SELECT count(*) AS n FROM races WHERE run_id = :r", "-p", "r=2", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "n\n13\n");
    run_free(&r);
}

Test(raceq, parameters_are_bound_not_spliced)
{
    run r = RQ(g_db, "races", "--run", "1", "--param", "engine=vc' OR '1'='1", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* header only: the value is one string compared to engine */
    cr_assert_eq(strchr(r.out, '\n') - r.out + 1, (long)strlen(r.out), "%s", r.out);
    run_free(&r);
    r = RQ(g_db, "races", "--run", "1 OR 1=1");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown run '1 OR 1=1'"), "%s", r.err);
    run_free(&r);
}

/* ---- errors ---- */

Test(raceq, error_missing_database)
{
    char path[700];
    snprintf(path, sizeof path, "%s/nope.db", g_dir);
    run r = RQ(path, "summary");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "no such database"), "%s", r.err);
    cr_assert_str_empty(r.out);
    cr_assert(access(path, F_OK) != 0, "raceq created the database");
    run_free(&r);
    /* default DB name in the current directory */
    r = RQ("runs");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "no such database: warprace.db"), "%s", r.err);
    run_free(&r);
}

Test(raceq, error_wrong_schema_version)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(g_db, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 7", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    run r = RQ(g_db);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "expected 3, found 7"), "%s", r.err);
    run_free(&r);
}

Test(raceq, error_not_a_warprace_database)
{
    char path[700];
    snprintf(path, sizeof path, "%s/other.db", g_dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    run r = RQ(path);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "not a warprace database"), "%s", r.err);
    run_free(&r);
    snprintf(path, sizeof path, "%s/text.db", g_dir);
    FILE *f = fopen(path, "w");
    fputs("this is not sqlite\n", f);
    fclose(f);
    r = RQ(path, "runs");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "not a warprace database"), "%s", r.err);
    run_free(&r);
}

Test(raceq, error_unknown_report_lists_known_ones)
{
    run r = RQ(g_db, "report", "racez");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown report 'racez'"), "%s", r.err);
    static const char *const known[] = {"summary", "races", "hotspots", "engines", "diff",
                                        "kernels", "allocations"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        cr_assert(strstr(r.err, known[i]), "%s not listed: %s", known[i], r.err);
    run_free(&r);
}

Test(raceq, error_unknown_and_incomplete_run)
{
    run r = RQ(g_db, "races", "--run", "nope");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown run 'nope'"), "%s", r.err);
    cr_assert(strstr(r.err, "2 (demo-fixed)"), "known runs listed: %s", r.err);
    run_free(&r);
    r = RQ(g_db, "races", "--run", "3");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "not complete"), "%s", r.err);
    run_free(&r);
    r = RQ(g_db, "diff", "1", "99");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown run '99'"), "%s", r.err);
    run_free(&r);
    /* the interrupted run 3 'demo' never shadows the complete run 1 'demo' */
    r = RQ(g_db, "--run", "demo", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "run,1 (demo)\n"), "%s", r.out);
    run_free(&r);
}

Test(raceq, error_usage)
{
    run r = RQ(g_db, "diff", "1");
    cr_assert_eq(r.status, 2);
    run_free(&r);
    r = RQ(g_db, "races", "--format", "xml");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown format 'xml'"));
    run_free(&r);
    r = RQ(g_db, "races", "--param", "nosuch=1");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "has no parameter 'nosuch'"), "%s", r.err);
    run_free(&r);
    r = RQ(g_db, "report", "diff", "--param", "run_a=1");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "run_b"), "%s", r.err);
    run_free(&r);
}

/* ---- user reports ---- */

Test(raceq, user_queries_directory)
{
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%s/myq", g_dir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/by_kind.sql", dir);
    FILE *f = fopen(path, "w");
    fputs("-- name: by_kind\n"
          "-- description: races per access-kind pair\n"
          "-- param: run=latest  the run\n"
          "-- param: min=1  smallest count shown\n"
          "SELECT kind_a || '/' || kind_b AS kinds, count(*) AS n FROM races\n"
          "WHERE run_id = :run GROUP BY 1 HAVING n >= :min ORDER BY 1;\n", f);
    fclose(f);
    run r = RQ(g_db, "list", "--queries", dir, "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "by_kind,races per access-kind pair,run=latest min=1,"), "%s", r.out);
    cr_assert(strstr(r.out, "summary,"), "shipped reports stay: %s", r.out);
    run_free(&r);
    r = RQ(g_db, "report", "by_kind", "--queries", dir, "--run", "1", "-p", "min=2", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "kinds,n\nwrite/read,15\n");
    run_free(&r);
    r = RQ(g_db, "report", "by_kind", "--run", "1");
    cr_assert_eq(r.status, 2, "not known without --queries");
    run_free(&r);
}

/* A bad report file is refused, naming the file and the line (or the
 * offset of a NUL byte, which would end the SQL unseen). */
Test(raceq, bad_user_reports_name_the_file_and_line)
{
    static const struct {
        const char *file, *text;
        size_t len;
        const char *want;
    } bad[] = {
        {"p.sql", "-- name: p\n-- description: d\n-- param: =3 no name\nSELECT 1;\n", 0,
         "/p.sql:3: bad parameter line"},
        {"n.sql", "\n-- name: two words\nSELECT 1;\n", 0, "/n.sql:2: bad report name 'two words'"},
        {"has space.sql", "SELECT 1;\n", 0, "/has space.sql: bad report name 'has space' (from the file name"},
        {"z.sql", "-- name: z\nSELECT 1;\0 DROP TABLE runs;\n", 32, "/z.sql: offset 20: a NUL byte"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char dir[700], path[900];
        snprintf(dir, sizeof dir, "%s/badq%zu", g_dir, i);
        cr_assert_eq(mkdir(dir, 0755), 0);
        snprintf(path, sizeof path, "%s/%s", dir, bad[i].file);
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
        cr_assert_eq(fwrite(bad[i].text, 1, len, f), len);
        fclose(f);
        run r = RQ(g_db, "list", "--queries", dir);
        cr_assert_eq(r.status, 2, "%s: %s", bad[i].file, r.err);
        cr_assert(strstr(r.err, bad[i].want), "%s: want '%s' in: %s", bad[i].file, bad[i].want,
                  r.err);
        run_free(&r);
    }
}

/* ---- end to end: databases written by `warprace analyze` ---- */

/* Runs a program (argv[0] = path) in the test directory; returns its exit status. */
static int run_prog(const char *const *argv)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull < 0 || chdir(g_dir) != 0)
            _exit(127);
        dup2(devnull, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* warprace analyze of tests/raceq/traces/TRACE_TXT.txt into db as run
 * `name`, with --kernels kernels where not NULL. */
static void analyze_kernels(const char *db, const char *trace_txt, const char *name,
                            const char *kernels)
{
    const char *w = env("WARPRACE");
    char txt[800], wrt[800];
    snprintf(txt, sizeof txt, "%s/%s.txt", env("RQ_TRACES"), trace_txt);
    snprintf(wrt, sizeof wrt, "%s/%s.wrt", g_dir, trace_txt);
    int st = run_prog((const char *const[]){w, "asm", txt, "-o", wrt, NULL});
    cr_assert_eq(st, 0, "warprace asm %s: exit %d", txt, st);
    st = kernels ? run_prog((const char *const[]){w, "analyze", wrt, "--db", db, "--name", name,
                                                  "--kernels", kernels, NULL})
                 : run_prog((const char *const[]){w, "analyze", wrt, "--db", db, "--name", name, NULL});
    cr_assert(st == 0 || st == 1, "warprace analyze %s: exit %d", wrt, st);
}

static void analyze(const char *db, const char *trace_txt, const char *name)
{
    analyze_kernels(db, trace_txt, name, NULL);
}

/* Counts the CSV lines of a diff with this status whose text holds `what`. */
static int count_status_with(const char *csv, const char *status, const char *what)
{
    int n = 0;
    size_t sl = strlen(status);
    for (const char *p = csv; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if (!strncmp(line, status, sl) && line[sl] == ',' && strstr(line, what))
            n++;
    }
    return n;
}

/* A kernel the newer run left out (--kernels) was not looked at: its races
 * are neither fixed nor new, whichever way the runs are compared; the
 * kernel both analysed is compared as before. */
Test(raceq, diff_leaves_out_kernels_a_run_did_not_analyse)
{
    char db[700];
    snprintf(db, sizeof db, "%s/kernels.db", g_dir);
    analyze_kernels(db, "two_kernels", "whole", NULL);
    analyze_kernels(db, "two_kernels", "alpha-only", "^alpha$");
    for (int way = 0; way < 2; way++) {
        run r = way ? RQ(db, "diff", "alpha-only", "whole", "-f", "csv", "--fail-on-races")
                    : RQ(db, "diff", "whole", "alpha-only", "-f", "csv", "--fail-on-races");
        cr_assert_eq(r.status, 0, "no new race: %s", r.err);
        cr_assert_eq(count_status(r.out, "fixed"), 0, "%s", r.out);
        cr_assert_eq(count_status(r.out, "new"), 0, "%s", r.out);
        cr_assert_eq(count_status_with(r.out, "persisting", "two.cu:10:alpha"), 1, "%s", r.out);
        cr_assert(!strstr(r.out, "beta"), "beta was not analysed in one run:\n%s", r.out);
        run_free(&r);
    }
    /* the first run's beta race is there: the diff left it out, it did not lose it */
    run r = RQ(db, "races", "--run", "whole", "-f", "csv");
    cr_assert(strstr(r.out, "two.cu:20:beta"), "%s", r.out);
    run_free(&r);
}

/* A scoped race's verdict is part of its identity: the same race with a
 * block-scoped fence (scope-fence) and without fences (missing-sync) is
 * 'changed', with both verdicts, not persisting; it is no new race. */
Test(raceq, diff_reports_a_changed_scope_verdict)
{
    char db[700];
    snprintf(db, sizeof db, "%s/verdict.db", g_dir);
    analyze(db, "fence_block", "block-fence");
    analyze(db, "fence_none", "no-fence");
    run r = RQ(db, "diff", "block-fence", "no-fence", "-f", "csv", "--fail-on-races");
    cr_assert_eq(r.status, 0, "a changed verdict is no new race: %s", r.err);
    cr_assert_eq(count_status_with(r.out, "changed", ",scope-fence,missing-sync,"), 1, "%s", r.out);
    cr_assert_eq(count_status(r.out, "persisting"), 0, "%s", r.out);
    run_free(&r);
    r = RQ(db, "diff", "block-fence", "block-fence", "-f", "csv");
    cr_assert_eq(count_status(r.out, "changed"), 0, "%s", r.out);
    cr_assert_eq(count_status_with(r.out, "persisting", ",scope-fence,scope-fence,"), 1, "%s", r.out);
    run_free(&r);
    r = RQ(db, "diff", "block-fence", "no-fence", "-f", "sarif");
    cr_assert(strstr(r.out, "\"baselineState\": \"updated\""), "%s", r.out);
    run_free(&r);
}

Test(raceq, reports_on_a_database_from_warprace_analyze)
{
    char db[700];
    snprintf(db, sizeof db, "%s/analyzed.db", g_dir);
    analyze(db, "racy", "racy");
    analyze(db, "fixed", "fixed");

    /* every report in every format runs on it; json and sarif parse */
    static const char *const reports[] = {"summary", "races", "hotspots", "engines",
                                          "kernels", "allocations", "runs"};
    static const char *const fmts[] = {"table", "csv", "json", "markdown"};
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++)
        for (size_t f = 0; f < 4; f++) {
            run r = RQ(db, "report", reports[i], "--format", fmts[f]);
            cr_expect_eq(r.status, 0, "%s -f %s: %s", reports[i], fmts[f], r.err);
            cr_expect(r.outlen > 0);
            if (f == 2) {
                char err[200];
                js *v = js_parse(r.out, err, sizeof err);
                cr_expect(v, "%s json: %s", reports[i], err);
                js_free(v);
            }
            run_free(&r);
        }
    run r = RQ(db, "races", "--run", "racy", "-f", "sarif");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char err[200];
    js *doc = js_parse(r.out, err, sizeof err);
    cr_assert(doc, "sarif: %s", err);
    const js *results = js_get(js_at(js_get(doc, "runs"), 0), "results");
    cr_assert(results && results->n > 0, "the racy trace has races");
    int found = 0;
    for (size_t i = 0; i < results->n; i++) {
        const js *pl = js_get(js_at(js_get(js_at(results, i), "locations"), 0), "physicalLocation");
        const char *uri = js_str(js_get(js_get(pl, "artifactLocation"), "uri"));
        const js *line = js_get(js_get(pl, "region"), "startLine");
        if (uri && !strcmp(uri, "racy.cu") && line && line->num == 20)
            found++;
    }
    cr_assert(found > 0, "the write/read race's second site racy.cu:20 is a location");
    js_free(doc);
    run_free(&r);

    /* diff with itself: nothing new or fixed; with the fixed trace: the race is fixed */
    r = RQ(db, "diff", "racy", "racy", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(count_status(r.out, "new"), 0);
    cr_assert_eq(count_status(r.out, "fixed"), 0);
    cr_assert(count_status(r.out, "persisting") > 0);
    run_free(&r);
    r = RQ(db, "diff", "racy", "fixed", "-f", "csv", "--fail-on-races");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(count_status(r.out, "new"), 0, "%s", r.out);
    cr_assert(strstr(r.out, "fixed,racy,inter-block,racy.cu:10:racy,write,racy.cu:20:racy,read,"),
              "%s", r.out);
    run_free(&r);
}

/* Reports print a C++ kernel's name demangled (wr_demangle, also for
 * `raceq sql`); the race's identity, which diff compares, keeps the symbol. */
Test(raceq, reports_demangle_kernel_names_identities_keep_the_symbol)
{
    void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY);
    const char *shown = cxx ? "histogram(float const*, unsigned int*)" : "_Z9histogramPKfPj";
    char db[700];
    snprintf(db, sizeof db, "%s/mangled.db", g_dir);
    analyze(db, "mangled", "mangled");
    static const char *const reports[] = {"races", "kernels", "hotspots"};
    for (size_t i = 0; i < 3; i++) {
        run r = RQ(db, reports[i], "-f", "json");
        cr_assert_eq(r.status, 0, "%s: %s", reports[i], r.err);
        cr_expect(strstr(r.out, shown), "%s:\n%s", reports[i], r.out);
        cr_expect(!cxx || !strstr(r.out, "_Z9histogramPKfPj"), "%s:\n%s", reports[i], r.out);
        run_free(&r);
    }
    run r = RQ(db, "sql", "SELECT identity, wr_demangle(kernel_a) AS k FROM races LIMIT 1", "-f",
               "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "_Z9histogramPKfPj|_Z9histogramPKfPj|"), "%s", r.out);
    cr_expect(strstr(r.out, shown), "%s", r.out);
    run_free(&r);
    r = RQ(db, "sql", "SELECT wr_demangle('stencil') || wr_demangle('_Zbad') AS k", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "stencil_Zbad"), "not C++ symbols: as they are\n%s", r.out);
    run_free(&r);
    if (cxx)
        dlclose(cxx);
}

/* kernels says where each kernel was launched (launches.site, schema
 * version 2); a version-1 database, which has no such column, still reads,
 * without the sites, and is not written. */
Test(raceq, kernels_name_launch_sites_and_version_1_databases_still_read)
{
    char db[700];
    snprintf(db, sizeof db, "%s/sites.db", g_dir);
    analyze(db, "mangled", "mangled");
    run r = RQ(db, "kernels", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "launched_at"), "%s", r.out);
    cr_expect(strstr(r.out, ",main.cu:12:main,"), "%s", r.out);
    run_free(&r);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "ALTER TABLE launches DROP COLUMN site; PRAGMA user_version = 1;"
                                 "UPDATE meta SET value = '1' WHERE key = 'schema_version'",
                              NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    static const char *const reports[] = {"summary", "races", "hotspots", "engines", "kernels",
                                          "allocations", "runs"};
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++) {
        r = RQ(db, reports[i], "-f", "csv");
        cr_expect_eq(r.status, 0, "%s on version 1: %s", reports[i], r.err);
        if (!strcmp(reports[i], "kernels"))
            cr_expect_null(strstr(r.out, "main.cu:12:main"), "%s", r.out);
        run_free(&r);
    }
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_expect_eq(sqlite3_column_int(q, 0), 1, "raceq does not upgrade a database");
    sqlite3_finalize(q);
    sqlite3_close(h);
}

/* A race on another block's shared word (through DSMEM) names the word by
 * its offset and owner block, and is placed in the shared allocation. */
Test(raceq, races_name_another_blocks_shared_word_by_its_owner)
{
    char db[700];
    snprintf(db, sizeof db, "%s/dsmem.db", g_dir);
    analyze(db, "dsmem", "dsmem");
    run r = RQ(db, "races", "-p", "engine=vc", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "vc,inter-block,dsmem,dsmem.cu:10:dsmem,write,dsmem.cu:20:dsmem,read,"),
              "%s", r.out);
    cr_assert(strstr(r.out, ",shared 0x8 of B0 (tile+8),"), "%s", r.out);
    run_free(&r);
    r = RQ(db, "allocations", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "tile,shared,0x0,64,1,1,4"), "%s", r.out);
    cr_assert_null(strstr(r.out, "(unknown)"), "%s", r.out);
    run_free(&r);
}

/* A first side fsm no longer had: site '?', trace position '@?' (not @0). */
Test(raceq, races_report_an_unknown_first_side_as_such)
{
    char db[700];
    snprintf(db, sizeof db, "%s/old.db", g_dir);
    analyze(db, "old_first_side", "old");
    run r = RQ(db, "races", "-p", "engine=fsm", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "fsm,inter-block,old,?,write,old.cu:30:old,read,"), "%s", r.out);
    cr_assert(strstr(r.out, ",L1 B0 W0 lane 0 @?,L1 B1 W0 lane 0 @"), "%s", r.out);
    run_free(&r);
    r = RQ(db, "races", "-p", "engine=vc", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "vc,inter-block,old,old.cu:1:old,write,old.cu:30:old,read,"), "%s",
              r.out);
    cr_assert_null(strstr(r.out, "@?"), "%s", r.out);
    run_free(&r);
    /* lockset keeps the site, not the position: '@?' beside the site */
    r = RQ(db, "races", "-p", "engine=lockset", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "lockset,inter-block,old,old.cu:1:old,write,old.cu:30:old,read,"), "%s",
              r.out);
    cr_assert(strstr(r.out, ",L1 B0 W0 lane 0 @?,L1 B1 W0 lane 0 @"), "%s", r.out);
    run_free(&r);
}

/* The unknown side in second place (canonical order: its site is the
 * higher): thread_b is '@?', never '@0'. */
Test(raceq, races_report_an_unknown_second_side_as_such)
{
    char db[700];
    snprintf(db, sizeof db, "%s/old2.db", g_dir);
    analyze(db, "old_second_side", "old2");
    run r = RQ(db, "races", "-p", "engine=lockset", "-f", "csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "lockset,inter-block,old,old.cu:30:old,read,old.cu:40:old,write,"), "%s",
              r.out);
    cr_assert(strstr(r.out, ",L1 B1 W0 lane 0 @"), "%s", r.out);
    cr_assert(strstr(r.out, ",L1 B0 W0 lane 0 @?,"), "%s", r.out);   /* launched_a follows */
    cr_assert_null(strstr(r.out, "@0"), "%s", r.out);
    run_free(&r);
}

/* --suppressions: the rows a rule matches are left out of every report
 * (races, summary), the others stay; a bad file is a usage error. */
Test(raceq, suppressions_leave_races_out_of_reports)
{
    char db[700], rules[700];
    snprintf(db, sizeof db, "%s/supp.db", g_dir);
    snprintf(rules, sizeof rules, "%s/rules.supp", g_dir);
    analyze(db, "racy", "racy");
    FILE *f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("# the atomics are known\nsite:racy.cu:30:*\n", f);
    fclose(f);
    run all = RQ(db, "races", "-f", "csv");
    cr_assert_eq(all.status, 0, "%s", all.err);
    cr_assert(strstr(all.out, "racy.cu:30:racy"), "%s", all.out);
    cr_assert(strstr(all.out, "racy.cu:10:racy"), "%s", all.out);
    run some = RQ(db, "races", "-f", "csv", "--suppressions", rules);
    cr_assert_eq(some.status, 0, "%s", some.err);
    cr_assert_null(strstr(some.out, "racy.cu:30:racy"), "%s", some.out);
    cr_assert(strstr(some.out, "racy.cu:10:racy"), "%s", some.out);
    run_free(&all);
    run_free(&some);
    /* every race suppressed: summary finds none, --fail-on-races passes */
    f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("kernel:racy\n", f);
    fclose(f);
    run r = RQ(db, "summary", "--fail-on-races", "--suppressions", rules);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    run_free(&r);
    r = RQ(db, "summary", "--fail-on-races");
    cr_assert_eq(r.status, 1, "%s\n%s", r.out, r.err);
    run_free(&r);
    /* a bad file */
    f = fopen(rules, "w");
    cr_assert_not_null(f);
    fputs("kernel:racy\nracy\n", f);
    fclose(f);
    r = RQ(db, "races", "--suppressions", rules);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "rules.supp:2: 'racy' is not a rule"), "%s", r.err);
    run_free(&r);
}

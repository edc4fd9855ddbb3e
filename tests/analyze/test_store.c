/* The SQLite store: schema creation and version check, run rows, one
 * transaction per run. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_sqlite.h"

static char dir[256];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/wr-store-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static char *path_in(const char *name)
{
    static char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static int64_t q_int(const char *db_path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static char *q_text(const char *db_path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    char *v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void exec_sql(const char *db_path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* a run with n races */
static wr_resolved_race races[8];
static wr_store_engine engines[2] = {
    {.name = "vc", .seconds = 0.5, .shadow_words = 100, .races = 2, .occurrences = 7},
    {.name = "scoped", .seconds = 0.25, .shadow_words = 90, .races = 1, .occurrences = 1},
};
static wr_store_launch launches[2] = {
    {.launch = 1, .kernel = "stencil", .grid = {4, 1, 1}, .block = {128, 1, 1}, .stream = 0,
     .site = "app.cu:40:main", .analysed = true},
    {.launch = 2, .kernel = "reduce", .grid = {2, 2, 1}, .block = {64, 1, 1}, .stream = 7},
};
static wr_alloc allocs[1] = {{.id = 1, .base = 0x1000, .size = 4096, .space = 0, .name = "buf"}};

static wr_store_run make_run(size_t nraces)
{
    static char *k1 = "stencil", *s1 = "a.cu:10:stencil", *s2 = "a.cu:12:stencil";
    for (size_t i = 0; i < 8; i++) {
        wr_resolved_race *r = &races[i];
        memset(r, 0, sizeof *r);
        r->engine = i == 2 ? 1 : 0;
        r->engine_name = i == 2 ? "scoped" : "vc";
        r->kernel[0] = r->kernel[1] = k1;
        r->site[0] = s1;
        r->site[1] = s2;
        r->kind[0] = WR_KIND_WRITE;
        r->kind[1] = (uint8_t)(i % 3);
        r->race_class = WR_CLASS_INTER_WARP;
        r->verdict = i == 2 ? WR_VERDICT_SCOPE_FENCE : 0;
        r->count = i + 1;
        r->example.space = 0;
        r->example.addr = 0x1010 + 4 * i;
        r->example.first = (wr_race_access){.site = 1, .kind = 1, .launch = 1, .block = 0,
                                            .warp = 0, .lane = 4, .seq = 10};
        r->example.second = (wr_race_access){.site = 2, .launch = 0, .block = UINT32_MAX,
                                             .warp = UINT32_MAX, .lane = UINT32_MAX, .seq = 20};
        static char ids[8][128], empty[1] = "", buf[4] = "buf";
        snprintf(ids[i], sizeof ids[i], "stencil|stencil|%s|%s|write|%s|inter-warp", s1, s2,
                 wr_access_kind_name(r->kind[1]));
        /* distinct identities: vary by index */
        snprintf(ids[i] + strlen(ids[i]), sizeof ids[i] - strlen(ids[i]), "#%zu", i);
        r->identity = ids[i];
        r->alloc_name = i % 2 ? empty : buf;
        r->has_offset = i % 2 == 0;
        r->offset = 0x10 + 4 * i;
    }
    wr_store_run run = {
        .name = "unit", .trace_path = "/nowhere/t.wrt", .trace_hash = 0xabcdef0123456789ull,
        .trace_bytes = 1234, .device = "Test GPU", .producer = "test", .sm_arch = 90,
        .engines = "vc,scoped", .threads = 2, .options = "--threads 2", .events = 100,
        .accesses = 40, .thread_accesses = 1280, .launches = 2, .lost_events = 3,
        .truncated = true, .decode_seconds = 0.1, .wall_seconds = 1.0, .peak_rss_bytes = 1 << 20,
        .engine = engines, .nengines = 2, .launch = launches, .nlaunches = 2,
        .alloc = allocs, .nallocs = 1, .race = races, .nraces = nraces,
    };
    return run;
}

TestSuite(store, .init = mkdir_tmp, .fini = rm_tmp);

Test(store, creates_schema_and_writes_a_complete_run)
{
    char *db = path_in("a.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_run run = make_run(3);
    int64_t id = wr_store_write_run(s, &run, &err);
    cr_assert_gt(id, 0, "%s", err.msg);
    wr_store_close(s);

    cr_assert_eq(q_int(db, "PRAGMA user_version"), wr_store_schema_version());
    cr_assert_eq(wr_store_schema_version(), 3);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE analysed"), 1,
                 "a launch --kernels left out is stored as not analysed");
    char *site = q_text(db, "SELECT group_concat(site, '|') FROM launches ORDER BY launch");
    cr_assert_str_eq(site, "app.cu:40:main|", "a launch's site, or '' where there is none");
    free(site);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs"), 1);
    cr_assert_eq(q_int(db, "SELECT lost_events FROM runs"), 3);
    cr_assert_eq(q_int(db, "SELECT truncated FROM runs"), 1);
    cr_assert_eq(q_int(db, "SELECT thread_accesses FROM runs"), 1280);
    cr_assert_eq(q_int(db, "SELECT finished_at IS NOT NULL FROM runs"), 1);
    char *hash = q_text(db, "SELECT trace_hash FROM runs");
    cr_assert_str_eq(hash, "abcdef0123456789");
    free(hash);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM engine_runs"), 2);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches"), 2);
    char *grid = q_text(db, "SELECT grid FROM launches WHERE launch = 2");
    cr_assert_str_eq(grid, "2,2,1");
    free(grid);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM allocations WHERE name = 'buf'"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races"), 3);
    cr_assert_eq(q_int(db, "SELECT sum(count) FROM races"), 6);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races WHERE engine = 'scoped'"
                           " AND scope_verdict = 'scope-fence'"), 1);
    cr_assert_eq(q_int(db, "SELECT ex_offset FROM races WHERE identity LIKE '%#0'"), 0x10);
    cr_assert_eq(q_int(db, "SELECT ex_offset IS NULL FROM races WHERE identity LIKE '%#1'"), 1);
    cr_assert_eq(q_int(db, "SELECT ex_b_block IS NULL AND ex_b_launch = 0 FROM races"
                           " WHERE identity LIKE '%#0'"), 1, "host side stored as NULL");
    cr_assert_eq(q_int(db, "SELECT ex_a_lane FROM races WHERE identity LIKE '%#0'"), 4);
}

Test(store, several_runs_per_database)
{
    char *db = path_in("b.db");
    wr_error err;
    for (int i = 0; i < 3; i++) {
        wr_store *s = wr_store_open(db, &err);
        cr_assert_not_null(s, "%s", err.msg);
        wr_store_run run = make_run((size_t)i + 1);
        cr_assert_eq(wr_store_write_run(s, &run, &err), i + 1, "%s", err.msg);
        wr_store_close(s);
    }
    cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs"), 3);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races"), 1 + 2 + 3);
}

Test(store, failure_midway_leaves_no_run)
{
    char *db = path_in("c.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_run ok = make_run(2);
    cr_assert_gt(wr_store_write_run(s, &ok, &err), 0, "%s", err.msg);
    wr_store_run run = make_run(5);
    run.fail_after_races = 3;
    cr_assert_eq(wr_store_write_run(s, &run, &err), -1);
    cr_assert(strstr(err.msg, "interrupted"), "%s", err.msg);
    /* the store is still usable after the failure */
    wr_store_run again = make_run(1);
    cr_assert_gt(wr_store_write_run(s, &again, &err), 0, "%s", err.msg);
    wr_store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs"), 2, "the failed run left a row");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status != 'complete'"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races"), 2 + 1, "the failed run left races");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches"), 4);
}

Test(store, duplicate_identity_fails_whole_run)
{
    /* a constraint violation in the middle (same identity twice) also rolls
     * back everything written before it */
    char *db = path_in("d.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_run run = make_run(4);
    races[3].identity = races[1].identity;
    cr_assert_eq(wr_store_write_run(s, &run, &err), -1);
    cr_assert(strstr(err.msg, db), "error names the database: %s", err.msg);
    wr_store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races"), 0);
}

Test(store, refuses_other_schema_version)
{
    char *db = path_in("e.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    exec_sql(db, "PRAGMA user_version = 7");
    s = wr_store_open(db, &err);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "version 7"), "%s", err.msg);
    cr_assert(strstr(err.msg, "version 3"), "%s", err.msg);
    cr_assert(strstr(err.msg, db), "%s", err.msg);
}

/* A database with one run, made as an older version wrote it by
 * `downgrade`, then opened again and given a second run: it is upgraded in
 * place to the current version. */
static char *upgraded_database(const char *name, const char *downgrade)
{
    char *db = path_in(name);
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_run run = make_run(0);
    cr_assert_gt(wr_store_write_run(s, &run, &err), 0, "%s", err.msg);
    wr_store_close(s);
    exec_sql(db, downgrade);
    s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_gt(wr_store_write_run(s, &run, &err), 0, "%s", err.msg);
    wr_store_close(s);
    cr_assert_eq(q_int(db, "PRAGMA user_version"), 3);
    char *v = q_text(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    cr_assert_str_eq(v, "3");
    free(v);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM complete_runs"), 2, "the old run stays");
    return db;
}

/* Version 1: no launches.site, no launches.analysed. */
Test(store, upgrades_a_version_1_database)
{
    char *db = upgraded_database("v1.db", "ALTER TABLE launches DROP COLUMN site;"
                                          "ALTER TABLE launches DROP COLUMN analysed;"
                                          "PRAGMA user_version = 1;"
                                          "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE site = 'app.cu:40:main'"), 1,
                 "the new run's launch has its site, the old one's is empty");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE site = ''"), 3);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE analysed"), 3,
                 "the old run's launches were all analysed, the new run's first");
}

/* Version 2: no launches.analysed. */
Test(store, upgrades_a_version_2_database)
{
    char *db = upgraded_database("v2.db", "ALTER TABLE launches DROP COLUMN analysed;"
                                          "PRAGMA user_version = 2;"
                                          "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE analysed"), 3);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM launches WHERE site = 'app.cu:40:main'"), 2,
                 "the old run's sites stay");
}

Test(store, refuses_foreign_database)
{
    char *db = path_in("f.db");
    exec_sql(db, "CREATE TABLE t(x)");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "version 0"), "%s", err.msg);
    /* a file that is not SQLite at all */
    char *junk = path_in("junk.db");
    FILE *f = fopen(junk, "w");
    cr_assert_not_null(f);
    fputs("this is not a database, not at all, it is just some text for the test\n", f);
    fclose(f);
    s = wr_store_open(junk, &err);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, junk), "%s", err.msg);
}

/* A database that cannot take a run is refused when it is opened, before
 * the analysis, not after it (it once ran the whole trace, printed the
 * report, then failed). */
Test(store, refuses_database_that_cannot_take_a_run)
{
    char *db = path_in("h.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    exec_sql(db, "DROP TABLE races");
    s = wr_store_open(db, &err);
    cr_assert_null(s, "a database without its races table");
    cr_assert(strstr(err.msg, db) && strstr(err.msg, "no such table: races"), "%s", err.msg);
}

Test(store, refuses_read_only_database)
{
    char *ro = path_in("ro.db");
    wr_error err;
    wr_store *s = wr_store_open(ro, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    cr_assert_eq(chmod(ro, 0444), 0);
    if (geteuid() == 0)   /* root writes a file whatever its mode */
        cr_skip_test("running as root: a file's mode does not make it read-only");
    s = wr_store_open(ro, &err);
    cr_assert_null(s, "a read-only database");
    cr_assert(strstr(err.msg, ro) && strstr(err.msg, "read-only"), "%s", err.msg);
}

Test(store, reopens_existing_database)
{
    char *db = path_in("g.db");
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM meta WHERE key = 'application'"), 1);
}

Test(store, killed_midway_leaves_no_run)
{
    char *db = strdup(path_in("k.db"));
    wr_error err;
    wr_store *s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_run ok = make_run(1);
    cr_assert_gt(wr_store_write_run(s, &ok, &err), 0, "%s", err.msg);
    wr_store_close(s);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        wr_error e2;
        wr_store *c = wr_store_open(db, &e2);
        if (!c)
            _exit(3);
        wr_store_run run = make_run(6);
        run.crash_after_races = 4;
        wr_store_write_run(c, &run, &e2);
        _exit(4); /* not reached */
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 99, "child status %d", status);
    /* the interrupted transaction is rolled back by the next opener */
    s = wr_store_open(db, &err);
    cr_assert_not_null(s, "%s", err.msg);
    wr_store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM races"), 1);
    free(db);
}

/* Findings -> SQLite (store_sqlite.h). */
#include "store_sqlite.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "embedded_sql.h"
#include "warprace_version.h"

WR_SQL_FILES_DECLARE(wr_schema_sql);

const char *wr_store_schema_sql(void) { return wr_schema_sql[0].text; }

struct wr_store {
    sqlite3 *db;
    char *path;
};

static void set_err(wr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(wr_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

int wr_store_schema_version(void)
{
    /* the statement at the start of a line (comments may mention it too) */
    static const char key[] = "PRAGMA user_version";
    for (const char *p = wr_store_schema_sql(); p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, key, sizeof key - 1))
            continue;
        p += sizeof key - 1;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '=')
            continue;
        return atoi(p + 1);
    }
    return -1;
}

static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* What turns version N - 1 into version N (schema.sql, "Versions"). */
static const char *const upgrade_sql[] = {
    [2] = "ALTER TABLE launches ADD COLUMN site TEXT NOT NULL DEFAULT '';",
    [3] = "ALTER TABLE launches ADD COLUMN analysed INTEGER NOT NULL DEFAULT 1;",
};

/* An older database brought to version `want`, all in one transaction:
 * it is either upgraded or left as it was. */
static int upgrade(sqlite3 *db, const char *path, int have, int want, wr_error *err)
{
    int n = (int)(sizeof upgrade_sql / sizeof upgrade_sql[0]);
    char *msg = NULL;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    for (int v = have + 1; v <= want && rc == SQLITE_OK; v++) {
        if (v >= n || !upgrade_sql[v]) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            set_err(err, "%s: database schema version %d, this warprace uses version %d and "
                         "cannot upgrade it", path, have, want);
            return -1;
        }
        rc = sqlite3_exec(db, upgrade_sql[v], NULL, NULL, &msg);
    }
    char set[160];
    snprintf(set, sizeof set, "UPDATE meta SET value = '%d' WHERE key = 'schema_version';"
                              "PRAGMA user_version = %d; COMMIT", want, want);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, set, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        set_err(err, "%s: cannot upgrade the database from schema version %d to %d: %s", path,
                have, want, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

/* What wr_store_write_run writes; wr_store_open prepares each first, so that
 * a database that cannot take a run says so before the analysis, not after
 * it. */
static const char SQL_INSERT_RUN[] =
    "INSERT INTO runs(name, status, started_at, analyzer_version, trace_path, trace_hash,"
    " trace_bytes, device, sm_arch, producer, recorded_command, engines, threads, options,"
    " events, accesses, thread_accesses, launches, lost_events, truncated, decode_seconds,"
    " wall_seconds, peak_rss_bytes)"
    " VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
    " ?16, ?17, ?18, ?19, ?20, ?21, ?22)";
static const char SQL_INSERT_ENGINE_RUN[] =
    "INSERT INTO engine_runs(run_id, engine, seconds, shadow_words, races,"
    " occurrences) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_INSERT_LAUNCH[] =
    "INSERT OR REPLACE INTO launches(run_id, launch, kernel, grid, block,"
    " shared_bytes, stream, site, analysed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
static const char SQL_INSERT_ALLOCATION[] =
    "INSERT INTO allocations(run_id, alloc_id, name, space, base, size)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_INSERT_RACE[] =
    "INSERT INTO races(run_id, engine, identity, kernel_a, kernel_b, site_a, site_b, kind_a,"
    " kind_b, race_class, scope_verdict, potential, count, ex_space, ex_address, ex_alloc,"
    " ex_offset, ex_a_launch, ex_a_block, ex_a_warp, ex_a_lane, ex_a_seq, ex_b_launch,"
    " ex_b_block, ex_b_warp, ex_b_lane, ex_b_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
    " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25,"
    " ?26, ?27)";
static const char SQL_COMPLETE_RUN[] =
    "UPDATE runs SET status = 'complete', finished_at = ?1 WHERE id = ?2";
static const char *const store_statements[] = {SQL_INSERT_RUN, SQL_INSERT_ENGINE_RUN,
    SQL_INSERT_LAUNCH, SQL_INSERT_ALLOCATION, SQL_INSERT_RACE, SQL_COMPLETE_RUN};

/* Can a run be written: the file writable, the tables and columns there? */
static int check_writable(sqlite3 *db, const char *path, wr_error *err)
{
    if (sqlite3_db_readonly(db, "main") == 1) {
        set_err(err, "%s: the database is read-only (no write permission)", path);
        return -1;
    }
    for (size_t i = 0; i < sizeof store_statements / sizeof *store_statements; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, store_statements[i], -1, &st, NULL) != SQLITE_OK) {
            set_err(err, "%s: cannot store a run there: %s", path, sqlite3_errmsg(db));
            return -1;
        }
        sqlite3_finalize(st);
    }
    return 0;
}

wr_store *wr_store_open(const char *path, wr_error *err)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        set_err(err, "%s: cannot open database: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 10000);
    int want = wr_store_schema_version();
    int64_t have = 0, tables = 0;
    if (query_int(db, "PRAGMA user_version", &have) ||
        query_int(db, "SELECT count(*) FROM sqlite_master", &tables)) {
        set_err(err, "%s: not a database: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    if (have == 0 && tables == 0) {
        char *msg = NULL;
        if (sqlite3_exec(db, wr_store_schema_sql(), NULL, NULL, &msg) != SQLITE_OK) {
            set_err(err, "%s: cannot create the schema: %s", path, msg ? msg : "?");
            sqlite3_free(msg);
            sqlite3_close(db);
            return NULL;
        }
    } else if (have < 1 || have > want) {
        set_err(err, "%s: database schema version %" PRId64 ", this warprace uses version %d%s",
                path, have, want, have == 0 ? " (not a warprace database?)" : "");
        sqlite3_close(db);
        return NULL;
    } else {
        sqlite3_stmt *st;
        int ok = 0;
        if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'application'", -1, &st,
                               NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) {
                const unsigned char *v = sqlite3_column_text(st, 0);
                ok = v && !strcmp((const char *)v, "warprace");
            }
            sqlite3_finalize(st);
        }
        if (!ok) {
            set_err(err, "%s: not a warprace database (no meta.application = 'warprace')", path);
            sqlite3_close(db);
            return NULL;
        }
        if (have < want && upgrade(db, path, (int)have, want, err) != 0) {
            sqlite3_close(db);
            return NULL;
        }
    }
    if (check_writable(db, path, err) != 0) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    wr_store *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->db = db;
    s->path = strdup(path);
    return s;
}

void wr_store_close(wr_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

/* ---- writing ---------------------------------------------------------- */

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

typedef struct writer {
    wr_store *s;
    wr_error *err;
    int failed;
} writer;

static sqlite3_stmt *prep(writer *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (w->failed)
        return NULL;
    if (sqlite3_prepare_v2(w->s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_err(w->err, "%s: %s", w->s->path, sqlite3_errmsg(w->s->db));
        w->failed = 1;
        return NULL;
    }
    return st;
}

static void step(writer *w, sqlite3_stmt *st)
{
    if (w->failed || !st)
        return;
    if (sqlite3_step(st) != SQLITE_DONE) {
        set_err(w->err, "%s: %s", w->s->path, sqlite3_errmsg(w->s->db));
        w->failed = 1;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static void bt(sqlite3_stmt *st, int i, const char *v)
{
    if (st)
        sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT);
}
static void bi(sqlite3_stmt *st, int i, int64_t v)
{
    if (st)
        sqlite3_bind_int64(st, i, v);
}
static void bu(sqlite3_stmt *st, int i, uint64_t v) { bi(st, i, (int64_t)v); }
static void bd(sqlite3_stmt *st, int i, double v)
{
    if (st)
        sqlite3_bind_double(st, i, v);
}
static void bnull(sqlite3_stmt *st, int i)
{
    if (st)
        sqlite3_bind_null(st, i);
}
/* block/warp/lane: UINT32_MAX (host side) is stored as NULL */
static void bthr(sqlite3_stmt *st, int i, uint32_t v)
{
    if (v == UINT32_MAX)
        bnull(st, i);
    else
        bi(st, i, v);
}

static void exec(writer *w, const char *sql)
{
    if (w->failed)
        return;
    char *msg = NULL;
    if (sqlite3_exec(w->s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        set_err(w->err, "%s: %s", w->s->path, msg ? msg : sqlite3_errmsg(w->s->db));
        w->failed = 1;
    }
    sqlite3_free(msg);
}

int64_t wr_store_write_run(wr_store *s, const wr_store_run *run, wr_error *err)
{
    writer w = {.s = s, .err = err};
    char started[32], finished[32];
    if (run->started_at)
        snprintf(started, sizeof started, "%s", run->started_at);
    else
        now_iso(started, sizeof started);
    char hash[17];
    snprintf(hash, sizeof hash, "%016" PRIx64, run->trace_hash);

    exec(&w, "BEGIN IMMEDIATE");
    if (w.failed)
        return -1;
    sqlite3_stmt *st = prep(&w, SQL_INSERT_RUN);
    bt(st, 1, run->name);
    bt(st, 2, started);
    bt(st, 3, WARPRACE_VERSION);
    bt(st, 4, run->trace_path);
    bt(st, 5, hash);
    bu(st, 6, run->trace_bytes);
    bt(st, 7, run->device);
    bi(st, 8, run->sm_arch);
    bt(st, 9, run->producer);
    bt(st, 10, run->recorded_command);
    bt(st, 11, run->engines);
    bi(st, 12, run->threads);
    bt(st, 13, run->options);
    bu(st, 14, run->events);
    bu(st, 15, run->accesses);
    bu(st, 16, run->thread_accesses);
    bu(st, 17, run->launches);
    bu(st, 18, run->lost_events);
    bi(st, 19, run->truncated);
    bd(st, 20, run->decode_seconds);
    bd(st, 21, run->wall_seconds);
    bu(st, 22, run->peak_rss_bytes);
    step(&w, st);
    sqlite3_finalize(st);
    int64_t id = w.failed ? -1 : sqlite3_last_insert_rowid(s->db);

    st = prep(&w, SQL_INSERT_ENGINE_RUN);
    for (size_t i = 0; i < run->nengines && !w.failed; i++) {
        const wr_store_engine *e = &run->engine[i];
        bi(st, 1, id);
        bt(st, 2, e->name);
        bd(st, 3, e->seconds);
        bu(st, 4, e->shadow_words);
        bu(st, 5, e->races);
        bu(st, 6, e->occurrences);
        step(&w, st);
    }
    sqlite3_finalize(st);

    st = prep(&w, SQL_INSERT_LAUNCH);
    for (size_t i = 0; i < run->nlaunches && !w.failed; i++) {
        const wr_store_launch *l = &run->launch[i];
        char grid[48], block[48];
        snprintf(grid, sizeof grid, "%u,%u,%u", l->grid[0], l->grid[1], l->grid[2]);
        snprintf(block, sizeof block, "%u,%u,%u", l->block[0], l->block[1], l->block[2]);
        bi(st, 1, id);
        bi(st, 2, l->launch);
        bt(st, 3, l->kernel);
        bt(st, 4, grid);
        bt(st, 5, block);
        bi(st, 6, l->shared_bytes);
        bi(st, 7, l->stream);
        bt(st, 8, l->site ? l->site : "");
        bi(st, 9, l->analysed);
        step(&w, st);
    }
    sqlite3_finalize(st);

    st = prep(&w, SQL_INSERT_ALLOCATION);
    for (size_t i = 0; i < run->nallocs && !w.failed; i++) {
        const wr_alloc *a = &run->alloc[i];
        bi(st, 1, id);
        bi(st, 2, a->id);
        bt(st, 3, a->name);
        bt(st, 4, wr_space_name(a->space));
        bu(st, 5, a->base);
        bu(st, 6, a->size);
        step(&w, st);
    }
    sqlite3_finalize(st);

    st = prep(&w, SQL_INSERT_RACE);
    for (size_t i = 0; i < run->nraces && !w.failed; i++) {
        if (run->fail_after_races && i == run->fail_after_races) {
            set_err(err, "%s: interrupted after %zu race rows (test)", s->path, i);
            w.failed = 1;
            break;
        }
        if (run->crash_after_races && i == run->crash_after_races)
            _exit(99);
        const wr_resolved_race *r = &run->race[i];
        bi(st, 1, id);
        bt(st, 2, r->engine_name);
        bt(st, 3, r->identity);
        bt(st, 4, r->kernel[0]);
        bt(st, 5, r->kernel[1]);
        bt(st, 6, r->site[0]);
        bt(st, 7, r->site[1]);
        bt(st, 8, wr_access_kind_name(r->kind[0]));
        bt(st, 9, wr_access_kind_name(r->kind[1]));
        bt(st, 10, wr_race_class_name(r->race_class));
        bt(st, 11, wr_scope_verdict_name(r->verdict));
        bi(st, 12, r->potential);
        bu(st, 13, r->count);
        bt(st, 14, wr_space_name(r->example.space));
        bu(st, 15, r->example.addr);
        bt(st, 16, r->alloc_name);
        if (r->has_offset)
            bu(st, 17, r->offset);
        else
            bnull(st, 17);
        const wr_race_access *a = &r->example.first, *b = &r->example.second;
        bi(st, 18, a->launch);
        bthr(st, 19, a->block);
        bthr(st, 20, a->warp);
        bthr(st, 21, a->lane);
        bu(st, 22, a->seq);
        bi(st, 23, b->launch);
        bthr(st, 24, b->block);
        bthr(st, 25, b->warp);
        bthr(st, 26, b->lane);
        bu(st, 27, b->seq);
        step(&w, st);
    }
    sqlite3_finalize(st);

    now_iso(finished, sizeof finished);
    st = prep(&w, SQL_COMPLETE_RUN);
    bt(st, 1, finished);
    bi(st, 2, id);
    step(&w, st);
    sqlite3_finalize(st);
    exec(&w, "COMMIT");
    if (w.failed) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return id;
}


/*
 * SARIF 2.1.0 output of race rows (the races report, a diff, or any query
 * with the columns site_a, site_b and race_class), for code-scanning tools.
 *
 * One rule per race class (warprace/intra-warp ... warprace/inter-kernel),
 * one result per row: locations[0] is the second access's site,
 * relatedLocations[0] the first's, then (ids 2 and 3) the host lines that
 * launched the first and second access's kernels where the rows say
 * (launched_a, launched_b); engine, kinds, count and scope verdict are
 * result properties; the race identity is the partial fingerprint, so a
 * code-scanning tool tracks a race across runs as the diff report does.
 * A diff (a status column) sets baselineState: new, unchanged, absent.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"
#include "warprace_version.h"

/* ---- a small pretty-printing JSON writer ---- */
typedef struct jw {
    FILE *out;
    int depth;
    int count[64];      /* members written so far, per open container */
    int after_key;
} jw;

static void jw_sep(jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0) {
        fputs(w->count[w->depth]++ ? ",\n" : "\n", w->out);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->out);
    }
}

static void jw_open(jw *w, char c)
{
    jw_sep(w);
    fputc(c, w->out);
    w->depth++;
    w->count[w->depth] = 0;
}

static void jw_close(jw *w, char c)
{
    int had = w->count[w->depth];
    w->depth--;
    if (had) {
        fputc('\n', w->out);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->out);
    }
    fputc(c, w->out);
    if (w->depth == 0)
        fputc('\n', w->out);
}

static void jw_key(jw *w, const char *k)
{
    jw_sep(w);
    rq_json_string(w->out, k);
    fputs(": ", w->out);
    w->after_key = 1;
}

static void jw_str(jw *w, const char *s)
{
    jw_sep(w);
    rq_json_string(w->out, s);
}

static void jw_int(jw *w, long long v)
{
    jw_sep(w);
    fprintf(w->out, "%lld", v);
}

static void jw_kstr(jw *w, const char *k, const char *s) { jw_key(w, k); jw_str(w, s); }
static void jw_kint(jw *w, const char *k, long long v) { jw_key(w, k); jw_int(w, v); }

static void jw_ktext(jw *w, const char *k, const char *text)
{
    jw_key(w, k);
    jw_open(w, '{');
    jw_kstr(w, "text", text);
    jw_close(w, '}');
}

/* ---- race classes = rules ---- */
static const struct rule {
    const char *cls, *id, *name, *brief, *help;
} rules[] = {
    {"intra-warp", "warprace/intra-warp", "IntraWarpDataRace",
     "Data race between two lanes of one warp",
     "Lanes of a warp are not in lockstep after divergence (independent thread scheduling, "
     "Volta and later). Order the accesses with __syncwarp(mask) covering both lanes, or make "
     "them atomic."},
    {"inter-warp", "warprace/inter-warp", "InterWarpDataRace",
     "Data race between two warps of one block",
     "Separate the accesses with a block barrier (__syncthreads) or with release/acquire "
     "synchronization of at least block scope."},
    {"inter-block", "warprace/inter-block", "InterBlockDataRace",
     "Data race between two blocks of one kernel launch",
     "Blocks are ordered only through memory: use atomics, fences or locks of device scope "
     "(a block-scoped atomic or fence does not order two blocks), or a grid-wide sync."},
    {"inter-kernel", "warprace/inter-kernel", "InterKernelDataRace",
     "Data race between two kernel launches, or a kernel and a host copy",
     "Kernels on different streams run concurrently unless an event or a stream "
     "synchronization orders them; a host copy must wait for the kernel that uses the memory."},
};
enum { NRULES = sizeof rules / sizeof rules[0] };

typedef struct site {
    char *file;         /* NULL when the site has no source location */
    long line;
    char *func;
    unsigned long long pc;
    int has_pc;
} site;

/* "file:line:function", "pc:0x...", "?".  The file part may hold ':' (the
 * first ":DIGITS:" or trailing ":DIGITS" ends it); the function may too. */
static void parse_site(const char *s, site *out)
{
    memset(out, 0, sizeof *out);
    if (!strncmp(s, "pc:", 3)) {
        char *end;
        out->pc = strtoull(s + 3, &end, 0);
        out->has_pc = end != s + 3 && !*end;
        return;
    }
    for (const char *p = s + 1; *p; p++) {
        if (*p != ':' || !isdigit((unsigned char)p[1]))
            continue;
        const char *q = p + 1;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == ':' || *q == '\0') {
            out->file = rq_xstrndup(s, (size_t)(p - s));
            out->line = strtol(p + 1, NULL, 10);
            out->func = rq_xstrdup(*q ? q + 1 : "");
            return;
        }
    }
}

static void site_free(site *s)
{
    free(s->file);
    free(s->func);
}

/* A file path as a URI reference: relative paths stay relative (resolved
 * against the checkout by code-scanning tools), absolute ones get file://. */
static char *path_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = rq_xmalloc(3 * n + 8), *o = u;
    if (path[0] == '/') {
        memcpy(o, "file://", 7);
        o += 7;
    }
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("-._~/", *p))
            *o++ = (char)*p;
        else
            o += sprintf(o, "%%%02X", *p);
    }
    *o = '\0';
    return u;
}

#define DEVICE_NO_LINE "build with -lineinfo"

/* no_line: how to get a source line where the site is a bare pc */
static void write_location(jw *w, const site *s, const char *raw, const char *kernel,
                           int id, const char *msg, const char *no_line)
{
    jw_open(w, '{');
    if (id >= 0)
        jw_kint(w, "id", id);
    if (s->file) {
        char *uri = path_uri(s->file);
        jw_key(w, "physicalLocation");
        jw_open(w, '{');
        jw_key(w, "artifactLocation");
        jw_open(w, '{');
        jw_kstr(w, "uri", uri);
        jw_close(w, '}');
        if (s->line > 0) {
            jw_key(w, "region");
            jw_open(w, '{');
            jw_kint(w, "startLine", s->line);
            jw_close(w, '}');
        }
        jw_close(w, '}');
        free(uri);
    }
    const char *fn = s->func && *s->func ? s->func : kernel;
    if (fn && *fn && strcmp(fn, "host")) {
        jw_key(w, "logicalLocations");
        jw_open(w, '[');
        jw_open(w, '{');
        jw_kstr(w, "name", fn);
        jw_kstr(w, "kind", "function");
        jw_close(w, '}');
        jw_close(w, ']');
    }
    char buf[512];
    if (s->file)
        snprintf(buf, sizeof buf, "%s", msg);
    else if (s->has_pc)
        snprintf(buf, sizeof buf, "%s at pc 0x%llx (no source line: %s)", msg, s->pc, no_line);
    else
        snprintf(buf, sizeof buf, "%s (%s)", msg, strcmp(raw, "?") ? raw : "unknown site");
    jw_ktext(w, "message", buf);
    jw_close(w, '}');
}

static const char *col_text(const rq_table *t, size_t r, const char *name, char *buf, size_t n)
{
    int c = rq_table_col(t, name);
    return c < 0 ? NULL : rq_cell_text(rq_table_cell(t, r, c), buf, n);
}

/* First of the named columns present and non-empty in row r. */
static const char *first_text(const rq_table *t, size_t r, const char *const *names,
                              char *buf, size_t n)
{
    for (; *names; names++) {
        const char *s = col_text(t, r, *names, buf, n);
        if (s && *s)
            return s;
    }
    return NULL;
}

static void short_site(const site *s, const char *raw, char *buf, size_t n)
{
    if (s->file && s->line > 0)
        snprintf(buf, n, "%s:%ld", s->file, s->line);
    else
        snprintf(buf, n, "%s", raw);
}

/* Where the host launched each side's kernel (the races report's
 * launched_a and launched_b), as related locations 2 (first access) and 3
 * (second): a code-scanning tool then shows the launch line beside the
 * device lines.  One location when both sides name the same launch site. */
static void write_launch_sites(jw *w, const rq_table *t, size_t r, const char *kn_a,
                               const char *kn_b)
{
    char ba[64], bb[64];
    const char *la = col_text(t, r, "launched_a", ba, sizeof ba);
    const char *lb = col_text(t, r, "launched_b", bb, sizeof bb);
    bool a = la && *la, b = lb && *lb;
    bool same = a && b && !strcmp(la, lb) && !strcmp(kn_a, kn_b);
    const char *sides[2] = {la, lb}, *kernels[2] = {kn_a, kn_b};
    bool have[2] = {a, b && !same};
    for (int i = 0; i < 2; i++) {
        if (!have[i])
            continue;
        site s;
        parse_site(sides[i], &s);
        char msg[1400];
        snprintf(msg, sizeof msg, "kernel %s launched here (%s)", kernels[i],
                 same ? "both accesses" : i ? "second access" : "first access");
        write_location(w, &s, sides[i], NULL, 2 + i, msg, "build the host code with -g");
        site_free(&s);
    }
}

int rq_print_sarif(FILE *out, const rq_result *res, char *err, size_t errsize)
{
    const rq_table *t = NULL;
    for (size_t i = 0; i < res->ntables; i++) {
        const rq_table *c = res->tables[i];
        if (rq_table_col(c, "site_a") >= 0 && rq_table_col(c, "site_b") >= 0 &&
            rq_table_col(c, "race_class") >= 0) {
            t = c;
            break;
        }
    }
    if (!t) {
        snprintf(err, errsize, "--format sarif needs race rows (columns site_a, site_b, "
                               "race_class): use it with `report races`, `diff`, or a query "
                               "selecting those columns");
        return -1;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        char b[64];
        const char *cls = rq_cell_text(rq_table_cell(t, r, rq_table_col(t, "race_class")), b, sizeof b);
        int ri = 0;
        while (ri < NRULES && strcmp(rules[ri].cls, cls))
            ri++;
        if (ri == NRULES) {
            snprintf(err, errsize, "row %zu: unknown race class '%s'", r + 1, cls);
            return -1;
        }
    }
    jw w = {.out = out};
    jw_open(&w, '{');
    jw_kstr(&w, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    jw_kstr(&w, "version", "2.1.0");
    jw_key(&w, "runs");
    jw_open(&w, '[');
    jw_open(&w, '{');
    jw_key(&w, "tool");
    jw_open(&w, '{');
    jw_key(&w, "driver");
    jw_open(&w, '{');
    jw_kstr(&w, "name", "warprace");
    jw_kstr(&w, "version", WARPRACE_VERSION);
    jw_kstr(&w, "semanticVersion", WARPRACE_VERSION);
    jw_key(&w, "rules");
    jw_open(&w, '[');
    for (int i = 0; i < NRULES; i++) {
        jw_open(&w, '{');
        jw_kstr(&w, "id", rules[i].id);
        jw_kstr(&w, "name", rules[i].name);
        jw_ktext(&w, "shortDescription", rules[i].brief);
        jw_ktext(&w, "fullDescription", rules[i].brief);
        jw_ktext(&w, "help", rules[i].help);
        jw_key(&w, "defaultConfiguration");
        jw_open(&w, '{');
        jw_kstr(&w, "level", "error");
        jw_close(&w, '}');
        jw_key(&w, "properties");
        jw_open(&w, '{');
        jw_key(&w, "tags");
        jw_open(&w, '[');
        jw_str(&w, "concurrency");
        jw_str(&w, "cuda");
        jw_str(&w, "data-race");
        jw_close(&w, ']');
        jw_close(&w, '}');
        jw_close(&w, '}');
    }
    jw_close(&w, ']');
    jw_close(&w, '}');
    jw_close(&w, '}');

    jw_key(&w, "results");
    jw_open(&w, '[');
    static const char *const engine_cols[] = {"engine", "engines_b", "engines_a", "found_by", NULL};
    static const char *const count_cols[] = {"count", "count_b", "count_a", "occurrences", NULL};
    static const char *const verdict_cols[] = {"scope_verdict", "scope_verdict_b", "scope_verdict_a",
                                               NULL};
    for (size_t r = 0; r < t->nrows; r++) {
        char b1[64], b2[64], b3[64], b4[64], b5[64], b6[64], b7[64], b8[64], b9[64], b10[64], b11[64];
        const char *cls = col_text(t, r, "race_class", b1, sizeof b1);
        const char *sa = col_text(t, r, "site_a", b2, sizeof b2);
        const char *sb = col_text(t, r, "site_b", b3, sizeof b3);
        const char *ka = col_text(t, r, "kind_a", b4, sizeof b4);
        const char *kb = col_text(t, r, "kind_b", b5, sizeof b5);
        const char *engine = first_text(t, r, engine_cols, b6, sizeof b6);
        const char *count = first_text(t, r, count_cols, b7, sizeof b7);
        const char *verdict = first_text(t, r, verdict_cols, b8, sizeof b8);
        const char *pot = col_text(t, r, "potential", b9, sizeof b9);
        const char *status = col_text(t, r, "status", b10, sizeof b10);
        const char *ident = col_text(t, r, "identity", b11, sizeof b11);
        char kbuf[2][64];
        const char *kernel = col_text(t, r, "kernel", kbuf[0], sizeof kbuf[0]);
        const char *kernel_a = col_text(t, r, "kernel_a", kbuf[0], sizeof kbuf[0]);
        const char *kernel_b = col_text(t, r, "kernel_b", kbuf[1], sizeof kbuf[1]);
        if (!kernel)
            kernel = kernel_b ? kernel_b : kernel_a;
        if (!ka) ka = "?";
        if (!kb) kb = "?";
        int potential = pot && strcmp(pot, "") && strcmp(pot, "0");
        int ri = 0;
        while (ri < NRULES && strcmp(rules[ri].cls, cls))
            ri++;
        site A, B;
        parse_site(sa, &A);
        parse_site(sb, &B);
        /* kernel names of each side: "k" or "k_a / k_b" */
        char kn_a[1024], kn_b[1024];   /* demangled template names run long */
        const char *slash = kernel ? strstr(kernel, " / ") : NULL;
        if (kernel_a && kernel_b && rq_table_col(t, "kernel") < 0) {
            snprintf(kn_a, sizeof kn_a, "%s", kernel_a);
            snprintf(kn_b, sizeof kn_b, "%s", kernel_b);
        } else if (slash) {
            snprintf(kn_a, sizeof kn_a, "%.*s", (int)(slash - kernel), kernel);
            snprintf(kn_b, sizeof kn_b, "%s", slash + 3);
        } else {
            snprintf(kn_a, sizeof kn_a, "%s", kernel ? kernel : "");
            snprintf(kn_b, sizeof kn_b, "%s", kernel ? kernel : "");
        }
        char la[1400], lb[1400], msg[4096], s1[300], s2[300];
        short_site(&A, sa, s1, sizeof s1);
        short_site(&B, sb, s2, sizeof s2);
        snprintf(msg, sizeof msg,
                 "%sData race (%s) in %s%s: %s at %s and %s at %s are not ordered%s%s%s%s%s%s%s.",
                 potential ? "Potential " : "", cls,
                 strcmp(kn_a, kn_b) ? "kernels " : "kernel ",
                 kernel ? kernel : "?", ka, s1, kb, s2,
                 potential ? " by any common lock (this run's order hid it)" : "",
                 count ? "; " : "", count ? count : "", count ? " occurrence(s)" : "",
                 engine ? "; found by " : "", engine ? engine : "",
                 verdict && *verdict ? (strcmp(verdict, "missing-sync") ? " (insufficient scope or strength)"
                                                                        : " (missing synchronization)")
                                     : "");
        jw_open(&w, '{');
        jw_kstr(&w, "ruleId", rules[ri].id);
        jw_kint(&w, "ruleIndex", ri);
        jw_kstr(&w, "level", potential ? "warning" : "error");
        jw_ktext(&w, "message", msg);
        jw_key(&w, "locations");
        jw_open(&w, '[');
        snprintf(lb, sizeof lb, "second access: %s in %s", kb, strcmp(kn_b, "host") ? kn_b : "a host copy");
        write_location(&w, &B, sb, kn_b, -1, lb, DEVICE_NO_LINE);
        jw_close(&w, ']');
        jw_key(&w, "relatedLocations");
        jw_open(&w, '[');
        snprintf(la, sizeof la, "first access: %s in %s", ka, strcmp(kn_a, "host") ? kn_a : "a host copy");
        write_location(&w, &A, sa, kn_a, 1, la, DEVICE_NO_LINE);
        write_launch_sites(&w, t, r, kn_a, kn_b);
        jw_close(&w, ']');
        jw_key(&w, "partialFingerprints");
        jw_open(&w, '{');
        if (ident) {
            jw_kstr(&w, "warpraceIdentity/v1", ident);
        } else {
            /* whole, however long: a cut fingerprint could merge two races */
            size_t n = strlen(kn_a) + strlen(kn_b) + strlen(sa) + strlen(sb) + strlen(ka) +
                       strlen(kb) + strlen(cls) + 8;
            char *fp = rq_xmalloc(n);
            snprintf(fp, n, "%s|%s|%s|%s|%s|%s|%s", kn_a, kn_b, sa, sb, ka, kb, cls);
            jw_kstr(&w, "warpraceIdentity/v1", fp);
            free(fp);
        }
        jw_close(&w, '}');
        if (status && *status) {
            const char *bs = !strcmp(status, "new")       ? "new"
                           : !strcmp(status, "fixed")   ? "absent"
                           : !strcmp(status, "changed") ? "updated"
                                                        : "unchanged";
            jw_kstr(&w, "baselineState", bs);
        }
        jw_key(&w, "properties");
        jw_open(&w, '{');
        jw_kstr(&w, "engine", engine ? engine : "");
        char kinds[140];
        snprintf(kinds, sizeof kinds, "%s/%s", ka, kb);
        jw_kstr(&w, "kinds", kinds);
        char *end = NULL;
        long long cnt = count ? strtoll(count, &end, 10) : 0;
        if (count && end && !*end)
            jw_kint(&w, "count", cnt);
        else
            jw_kint(&w, "count", 0);
        jw_kstr(&w, "scope_verdict", verdict ? verdict : "");
        jw_kstr(&w, "race_class", cls);
        jw_kstr(&w, "kernel", kernel ? kernel : "");
        jw_key(&w, "potential");
        jw_sep(&w);
        fputs(potential ? "true" : "false", out);
        if (status && *status)
            jw_kstr(&w, "diff_status", status);
        const char *ex = col_text(t, r, "example", b1, sizeof b1);
        if (ex && *ex)
            jw_kstr(&w, "example", ex);
        jw_close(&w, '}');
        jw_close(&w, '}');
        site_free(&A);
        site_free(&B);
    }
    jw_close(&w, ']');
    jw_close(&w, '}');
    jw_close(&w, ']');
    jw_close(&w, '}');
    return 0;
}

/*
 * The litmus harness: for each litmus trace (tests/litmus/NAME.txt, format in
 * tests/litmus/README.md) assembles it with wr_text_assemble, analyses it
 * with every built engine (with 1 worker, and with 2 workers both with one
 * shard per engine and with two: the three must agree) and
 * checks each engine's verdict against the file's expectation lines:
 *
 *     # expect ENGINE: norace
 *     # expect ENGINE: race ALLOC [VERDICT] [CLASS]     (one line per allocation)
 *     # why: ENGINE: free text
 *
 * ENGINE is an engine name (also accepted: "all", or a comma list).
 * "norace": the engine reports nothing (a potential race is a report).
 * "race ALLOC": the engine reports a race whose example address lies in the
 * allocation named ALLOC (the catalog name, which the text form takes from
 * the label); the set of allocations with races must be exactly the listed
 * set.  VERDICT (missing-sync scope-fence scope-atomic scope-lock
 * weak-access) and CLASS (intra-warp inter-warp inter-block inter-kernel):
 * at least one race of the engine on that allocation has it.  "potential" /
 * "exposed" may also be given.  Lines starting with "# expect" or "# why"
 * that do not follow this form fail the file (a typo must not weaken a
 * test); an expectation for an engine that is not built is skipped.
 *
 * usage: litmus [--global-base ADDR] FILE.txt...   or   litmus DIR  (every .txt file in DIR)
 *        litmus --new-only DIR KNOWN.txt...  (the files of DIR not named:
 *        those added after meson listed them)
 * --global-base: the global and local allocations that name no address are
 * placed from ADDR upwards (wr_text_assemble_at), e.g. at a device's 47-bit
 * addresses, where packing an address beside other fields once overflowed
 * (lockset's lock entries); the verdicts must not change.
 * Exit status: 0 all passed (or --new-only found no new file), 1 a check
 * failed, 77 nothing to check (no litmus file, or no expectation names a
 * built engine).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "replay.h"
#include "vclock.h"

/* where asm places allocations that name no address (--global-base) */
static uint64_t global_base = 0x10000000ull;

#define MAX_EXPECT 128
#define MAX_TOKENS 8

typedef struct expect {
    unsigned line;
    uint32_t engines;       /* mask over wr_engines */
    char unbuilt[64];       /* engine names not built (skipped) */
    bool race;
    char alloc[64];
    unsigned ntok;
    char tok[MAX_TOKENS][32];
} expect;

static const char *const classes[] = {"intra-warp", "inter-warp", "inter-block", "inter-kernel"};
static const char *const verdicts[] = {"", "missing-sync", "scope-fence", "scope-atomic",
                                       "scope-lock", "weak-access"};
static const char *const engine_names[] = {"vc", "scoped", "lockset", "fsm"};

static bool known_token(const char *t)
{
    for (unsigned i = 0; i < 4; i++)
        if (!strcmp(t, classes[i]))
            return true;
    for (unsigned i = 1; i < 6; i++)
        if (!strcmp(t, verdicts[i]))
            return true;
    return !strcmp(t, "potential") || !strcmp(t, "exposed");
}

/* Parses "ENGINE[,ENGINE]" into e; false on an unknown name. */
static bool parse_engines(char *list, expect *e, const char *path, unsigned ln)
{
    bool ok = true, any = false;
    char *save = NULL;
    for (char *t = strtok_r(list, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        any = true;
        if (!strcmp(t, "all")) {
            e->engines |= (1u << wr_engine_count) - 1;
            continue;
        }
        int i = wr_engine_find(t);
        if (i >= 0) {
            e->engines |= 1u << i;
            continue;
        }
        bool planned = false;
        for (unsigned k = 0; k < 4; k++)
            planned |= !strcmp(t, engine_names[k]);
        if (planned) {
            size_t len = strlen(e->unbuilt);
            snprintf(e->unbuilt + len, sizeof e->unbuilt - len, " %s", t);
        } else {
            printf("%s:%u: unknown engine '%s'\n", path, ln, t);
            ok = false;
        }
    }
    if (!any) {
        printf("%s:%u: no engine named\n", path, ln);
        ok = false;
    }
    return ok;
}

/* Parses the expectation lines; -1 on a malformed one (message printed). */
static int parse_expect(const char *path, expect *ex, unsigned *nex)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("%s: cannot open\n", path);
        return -1;
    }
    char line[4200];
    unsigned ln = 0;
    *nex = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '#')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        bool is_why = !strncmp(p, "why", 3) && (p[3] == ':' || p[3] == ' ' || p[3] == '\t');
        bool is_expect = !strncmp(p, "expect", 6) && (p[6] == ' ' || p[6] == '\t');
        if (!is_why && !is_expect)
            continue;
        if (is_why) {
            /* "# why: ENGINE: text" */
            expect tmp;
            memset(&tmp, 0, sizeof tmp);
            char *q = p + 3;
            char *c1 = *q == ':' ? q : NULL;
            char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2) {
                printf("%s:%u: malformed '# why: ENGINE: text'\n", path, ln);
                rc = -1;
                continue;
            }
            *c2 = 0;
            if (!parse_engines(c1 + 1, &tmp, path, ln))
                rc = -1;
            continue;
        }
        p += 6;
        char *colon = strchr(p, ':');
        if (!colon || *nex == MAX_EXPECT) {
            printf("%s:%u: malformed expectation (want '# expect ENGINE: race|norace ...')\n",
                   path, ln);
            rc = -1;
            continue;
        }
        *colon = 0;
        expect *e = &ex[*nex];
        memset(e, 0, sizeof *e);
        e->line = ln;
        if (!parse_engines(p, e, path, ln))
            rc = -1;
        char *save = NULL;
        char *v = strtok_r(colon + 1, " \t\r\n", &save);
        if (!v || (strcmp(v, "race") && strcmp(v, "norace"))) {
            printf("%s:%u: verdict must be race or norace, not '%s'\n", path, ln, v ? v : "");
            rc = -1;
            continue;
        }
        e->race = !strcmp(v, "race");
        char *t = strtok_r(NULL, " \t\r\n", &save);
        if (e->race) {
            if (!t || known_token(t)) {
                printf("%s:%u: 'race' needs the allocation label first\n", path, ln);
                rc = -1;
                continue;
            }
            snprintf(e->alloc, sizeof e->alloc, "%s", t);
            t = strtok_r(NULL, " \t\r\n", &save);
        } else if (t) {
            printf("%s:%u: 'norace' takes nothing after it, not '%s'\n", path, ln, t);
            rc = -1;
            continue;
        }
        for (; t; t = strtok_r(NULL, " \t\r\n", &save)) {
            if (!known_token(t)) {
                printf("%s:%u: unknown token '%s'\n", path, ln, t);
                rc = -1;
                continue;
            }
            if (e->ntok < MAX_TOKENS)
                snprintf(e->tok[e->ntok++], sizeof e->tok[0], "%s", t);
        }
        (*nex)++;
    }
    fclose(f);
    return rc;
}

static bool race_matches(const wr_resolved_race *r, const char *t)
{
    if (!strcmp(t, "potential"))
        return r->potential;
    if (!strcmp(t, "exposed"))
        return !r->potential;
    if (r->race_class < 4 && !strcmp(t, classes[r->race_class]))
        return true;
    return r->verdict && r->verdict < 6 && !strcmp(t, verdicts[r->verdict]);
}

static const char *alloc_of(const wr_resolved_race *r)
{
    return r->alloc_name[0] ? r->alloc_name : "(no allocation)";
}

static void print_races(const wr_resolved_race *r, size_t n, unsigned engine)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].engine == engine)
            printf("      on %s: %s%s %s/%s %s | %s | %s  (x%llu)\n", alloc_of(&r[i]),
                   r[i].potential ? "potential " : "", wr_race_class_name(r[i].race_class),
                   wr_access_kind_name(r[i].kind[0]), wr_access_kind_name(r[i].kind[1]),
                   wr_scope_verdict_name(r[i].verdict), r[i].site[0], r[i].site[1],
                   (unsigned long long)r[i].count);
}

/* 0 pass, 1 fail, 77 nothing checked */
static int check_file(const char *path)
{
    expect ex[MAX_EXPECT];
    unsigned nex;
    if (parse_expect(path, ex, &nex)) {
        printf("FAIL %s: bad expectation lines\n", path);
        return 1;
    }
    if (nex == 0) {
        printf("FAIL %s: no '# expect' line\n", path);
        return 1;
    }
    char wrt[] = "/tmp/wr-litmus-XXXXXX";
    int fd = mkstemp(wrt);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    wr_error err;
    if (wr_text_assemble_at(path, wrt, global_base, &err)) {
        printf("FAIL %s: does not assemble: %s\n", path, err.msg);
        unlink(wrt);
        return 1;
    }
    /* {threads, shards, separate passes, every clock layer kept, no retired
     * clock entries}: 1 worker; 2 workers with the default split (one shard
     * per pass); 2 workers with 2 shards of each pass; 1 worker with vc and
     * scoped in passes of their own; 1 worker keeping scoped's layers apart
     * from the start; 1 worker whose launches keep their stream's earlier
     * clock entries (wr_hb_allow_retire) */
    static const unsigned config[][5] = {{1, 1, 0, 0, 0}, {2, 0, 0, 0, 0}, {2, 2, 0, 0, 0},
                                         {1, 1, 1, 0, 0}, {1, 1, 0, 1, 0}, {1, 1, 0, 0, 1}};
    enum { CONFIGS = sizeof config / sizeof config[0] };
    wr_replay *rp[CONFIGS];
    wr_resolved_race *rr[CONFIGS];
    size_t nr[CONFIGS];
    for (int k = 0; k < CONFIGS; k++) {
        wr_replay_options o = {.threads = config[k][0], .shards = config[k][1],
                               .separate_passes = config[k][2] != 0,
                               .keep_all_layers = config[k][3] != 0};
        wr_hb_allow_retire(!config[k][4]);
        rp[k] = wr_replay_run(wrt, &o, &err);
        wr_hb_allow_retire(true);
        if (!rp[k]) {
            printf("FAIL %s: replay: %s\n", path, err.msg);
            for (int j = 0; j < k; j++) {
                wr_resolved_free(rr[j], nr[j]);
                wr_replay_free(rp[j]);
            }
            unlink(wrt);
            return 1;
        }
        nr[k] = wr_replay_resolve(rp[k], &rr[k]);
    }
    unlink(wrt);
    int rc = 0;
    /* every configuration agrees with the first */
    for (int k = 1; k < CONFIGS; k++) {
        bool same = nr[0] == nr[k];
        for (size_t i = 0; same && i < nr[0]; i++)
            same = !strcmp(rr[0][i].identity, rr[k][i].identity) &&
                   rr[0][i].count == rr[k][i].count && rr[0][i].verdict == rr[k][i].verdict &&
                   rr[0][i].engine == rr[k][i].engine &&
                   rr[0][i].example.addr == rr[k][i].example.addr &&
                   rr[0][i].example.first.seq == rr[k][i].example.first.seq &&
                   rr[0][i].example.second.seq == rr[k][i].example.second.seq &&
                   rr[0][i].example.first.lane == rr[k][i].example.first.lane &&
                   rr[0][i].example.second.lane == rr[k][i].example.second.lane;
        if (!same) {
            printf("FAIL %s: findings differ between 1 worker and %u workers with %u shards%s%s%s\n",
                   path, config[k][0], wr_replay_get_stats(rp[k])->shards,
                   config[k][2] ? ", separate passes" : "",
                   config[k][3] ? ", every clock layer kept" : "",
                   config[k][4] ? ", no retired clock entries" : "");
            rc = 1;
        }
    }
    const wr_resolved_race *r = rr[0];
    size_t n = nr[0];
    /* a race names a conflict: two reads never are one, whatever the
     * engine, and for vc (scope-oblivious) two atomics never are either */
    for (size_t i = 0; i < n; i++) {
        bool reads = r[i].kind[0] == WR_KIND_READ && r[i].kind[1] == WR_KIND_READ;
        bool atomics = r[i].kind[0] == WR_KIND_ATOMIC && r[i].kind[1] == WR_KIND_ATOMIC &&
                       !strcmp(wr_engines[r[i].engine]->name, "vc");
        if (reads || atomics) {
            printf("FAIL %s: %s reports a%s pair:\n", path, wr_engines[r[i].engine]->name,
                   reads ? " read/read" : "n atomic/atomic");
            print_races(r + i, 1, r[i].engine);
            rc = 1;
        }
    }
    unsigned checked = 0;
    for (unsigned eng = 0; eng < wr_engine_count; eng++) {
        const char *name = wr_engines[eng]->name;
        bool any_expect = false, norace = false;
        /* the listed allocations */
        for (unsigned x = 0; x < nex; x++) {
            const expect *e = &ex[x];
            if (!(e->engines >> eng & 1))
                continue;
            any_expect = true;
            checked++;
            if (!e->race) {
                norace = true;
                size_t k = 0;
                for (size_t i = 0; i < n; i++)
                    k += r[i].engine == eng;
                if (k) {
                    printf("FAIL %s:%u: %s: expected no race, reported %zu:\n", path, e->line,
                           name, k);
                    print_races(r, n, eng);
                    rc = 1;
                }
                continue;
            }
            bool on_alloc = false;
            for (size_t i = 0; i < n; i++)
                on_alloc |= r[i].engine == eng && !strcmp(r[i].alloc_name, e->alloc);
            if (!on_alloc) {
                printf("FAIL %s:%u: %s: expected a race on %s, reported none there%s\n", path,
                       e->line, name, e->alloc, n ? "; reported:" : "");
                print_races(r, n, eng);
                rc = 1;
                continue;
            }
            for (unsigned t = 0; t < e->ntok; t++) {
                bool found = false;
                for (size_t i = 0; i < n && !found; i++)
                    found = r[i].engine == eng && !strcmp(r[i].alloc_name, e->alloc) &&
                            race_matches(&r[i], e->tok[t]);
                if (!found) {
                    printf("FAIL %s:%u: %s: no race on %s is '%s'; reported:\n", path, e->line,
                           name, e->alloc, e->tok[t]);
                    print_races(r, n, eng);
                    rc = 1;
                }
            }
        }
        if (!any_expect || norace)
            continue;
        /* no race on an unlisted allocation */
        for (size_t i = 0; i < n; i++) {
            if (r[i].engine != eng)
                continue;
            bool listed = false;
            for (unsigned x = 0; x < nex && !listed; x++)
                listed = (ex[x].engines >> eng & 1) && ex[x].race &&
                         !strcmp(ex[x].alloc, r[i].alloc_name);
            if (!listed) {
                printf("FAIL %s: %s: race on unlisted allocation %s: %s | %s\n", path, name,
                       alloc_of(&r[i]), r[i].site[0], r[i].site[1]);
                rc = 1;
            }
        }
    }
    for (unsigned x = 0; x < nex; x++)
        if (ex[x].unbuilt[0])
            printf("skip %s:%u: engine(s)%s not built\n", path, ex[x].line, ex[x].unbuilt);
    for (int k = 0; k < CONFIGS; k++) {
        wr_resolved_free(rr[k], nr[k]);
        wr_replay_free(rp[k]);
    }
    if (rc == 0 && checked == 0) {
        printf("skip %s: no expectation names a built engine\n", path);
        return 77;
    }
    if (rc == 0)
        printf("ok   %s (%u expectations)\n", path, checked);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    char **files = NULL;
    size_t n = 0;
    int first = 1;
    if (argc >= 3 && !strcmp(argv[1], "--global-base")) {
        char *end;
        global_base = strtoull(argv[2], &end, 0);
        if (*end || !global_base) {
            fprintf(stderr, "litmus: bad --global-base '%s'\n", argv[2]);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc >= 3 && !strcmp(argv[1], "--new-only")) {
        /* DIR's files except the known ones */
        DIR *d = opendir(argv[2]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            size_t len = strlen(de->d_name);
            if (len <= 4 || strcmp(de->d_name + len - 4, ".txt"))
                continue;
            bool known = false;
            for (int i = 3; i < argc && !known; i++) {
                const char *b = strrchr(argv[i], '/');
                known = !strcmp(b ? b + 1 : argv[i], de->d_name);
            }
            if (known)
                continue;
            files = realloc(files, (n + 1) * sizeof *files);
            if (!files || asprintf(&files[n], "%s/%s", argv[2], de->d_name) < 0)
                abort();
            n++;
        }
        if (d)
            closedir(d);
        first = argc; /* no further arguments */
        if (!n) {
            printf("litmus: no litmus file added since meson listed them\n");
            free(files);
            return 0;
        }
        printf("litmus: %zu file(s) added since meson listed them (reconfigure to get one test "
               "each)\n", n);
    }
    for (int i = first; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *de;
            while (d && (de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len > 4 && !strcmp(de->d_name + len - 4, ".txt")) {
                    files = realloc(files, (n + 1) * sizeof *files);
                    if (!files || asprintf(&files[n], "%s/%s", argv[i], de->d_name) < 0)
                        abort();
                    n++;
                }
            }
            if (d)
                closedir(d);
        } else {
            files = realloc(files, (n + 1) * sizeof *files);
            if (!files || !(files[n] = strdup(argv[i])))
                abort();
            n++;
        }
    }
    if (n)
        qsort(files, n, sizeof *files, cmp_str);
    int failed = 0, passed = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = check_file(files[i]);
        failed += rc == 1;
        passed += rc == 0;
        skipped += rc == 77;
        free(files[i]);
    }
    free(files);
    printf("litmus: %d passed, %d failed, %d skipped (engines built: %u)\n", passed, failed,
           skipped, wr_engine_count);
    if (failed)
        return 1;
    return passed ? 0 : 77;
}

/*
 * `warprace analyze TRACE [options]`: replay a trace through the engines,
 * print a report, store the findings in SQLite.
 *
 * Exit status: 0 no race, 1 (or --exit-code N) races found, 2 bad input
 * (missing or corrupt trace, bad option, database refused), 3 no race
 * reported but the trace is incomplete (truncated tail, or the recorder
 * lost events): "no race" then covers only what was recorded, so it is not
 * a pass unless --allow-incomplete says it is.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "warprace/demangle.h"
#include "engine.h"
#include "replay.h"
#include "store_sqlite.h"
#include "suppress.h"
#include "xalloc.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: warprace analyze TRACE [options]\n"
        "Replays TRACE (.wrt, or a text trace (formats/TEXT.md), assembled first) through\n"
        "race-detection engines, prints the races found and stores them in a SQLite\n"
        "database (read it with raceq).\n\n"
        "  --engines LIST   comma-separated engines (default: all built):");
    for (unsigned i = 0; i < wr_engine_count; i++)
        fprintf(out, "%s%s", i ? "," : " ", wr_engines[i]->name);
    fprintf(out,
        "\n"
        "  --threads N      analysis threads (default: all cores)\n"
        "  --shards N       split each pass's address space into N shards (default: 1\n"
        "                   while passes >= threads, else threads / passes rounded up;\n"
        "                   a pass with far more work than the others, such as vc+scoped\n"
        "                   on gathers, gets more)\n"
        "  --separate-passes  run vc and scoped as two passes instead of one shared pass\n"
        "                   (same findings; more time and memory)\n"
        "  --keep-all-layers  keep scoped's clock layers apart even while they equal the\n"
        "                   scope-oblivious one (same findings; more time and memory)\n"
        "  --db FILE        database (default: warprace.db beside the trace; TRACE \"-\"\n"
        "                   (standard input) or a named pipe is read as a stream, and\n"
        "                   the database is in the current directory)\n"
        "  --no-db          do not write a database\n"
        "  --name RUN       name of the run in the database (default: the trace file name)\n"
        "  --kernels REGEX  analyse only launches whose kernel name matches (POSIX ERE; the\n"
        "                   symbol or the demangled name: '^histogram\\(' and '_Z9histogram'\n"
        "                   both select _Z9histogramPKfPj);\n"
        "                   other launches stay in their streams as empty kernels\n"
        "  --suppressions FILE  races a rule of FILE matches (kernel:GLOB, site:GLOB,\n"
        "                   race:GLOB; ANALYZE.md) are not printed and not counted in the\n"
        "                   exit status; the database keeps them\n"
        "  --exit-code N    exit status when races are found (default 1)\n"
        "  --allow-incomplete  exit 0, not 3, when no race is reported in a truncated\n"
        "                   trace or one whose recorder lost events\n"
        "  --quiet          print only the summary lines\n"
        "  --progress       how far the trace has been read, on standard error every 5 s\n"
        "                   (every second on a terminal, where it is on by default)\n"
        "exit status: 0 no race, 1 (--exit-code) races found, 2 bad input,\n"
        "             3 no race reported but the trace is incomplete (truncated, lost events),\n"
        "             4 out of memory (nothing is stored)\n");
}

/* A text trace (formats/TEXT.md), told from a binary one by its first
 * 4 KiB (no binary magic, no control bytes but line ends and tabs), is
 * assembled into a temporary .wrt, whose path it returns for the caller
 * to replay and unlink; NULL for any other file (the replay judges it).
 * *failed: the assembly failed, and the error, naming the text's
 * file:line:col, is printed. */
static char *assemble_if_text(const char *path, bool *failed)
{
    *failed = false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char head[4096];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (!wr_text_looks_like(head, n))
        return NULL;
    const char *dir = getenv("TMPDIR");
    char *tmp;
    if (asprintf(&tmp, "%s/warprace-asm-XXXXXX.wrt", dir && *dir ? dir : "/tmp") < 0)
        abort();
    int fd = mkstemps(tmp, 4);
    if (fd < 0) {
        fprintf(stderr, "warprace analyze: %s: no temporary file for the assembled trace: %s\n",
                tmp, strerror(errno));
        free(tmp);
        *failed = true;
        return NULL;
    }
    close(fd);
    wr_error err;
    if (wr_text_assemble(path, tmp, &err)) {
        fprintf(stderr, "warprace analyze: %s\n", err.msg);
        unlink(tmp);
        free(tmp);
        *failed = true;
        return NULL;
    }
    return tmp;
}

/* A host copy's description: "async device-to-host copy of 32 bytes on
 * stream 2" (replay.h keeps the first 2^20 copies; a later one is "a host
 * copy"). */
static const char *copy_text(char *buf, size_t n, const wr_replay *rp, uint64_t seq)
{
    static const char *const what[] = {"host-to-device copy", "device-to-host copy",
                                       "device-to-device copy", "memset"};
    const wr_host_copy *cp = seq ? wr_replay_host_copy(rp, seq) : NULL;
    if (!cp)
        return "a host copy";
    char stream[40];
    if (cp->stream & WR_STREAM_NON_BLOCKING)
        snprintf(stream, sizeof stream, "non-blocking stream %" PRIu32,
                 cp->stream & ~WR_STREAM_NON_BLOCKING);
    else if (cp->stream)
        snprintf(stream, sizeof stream, "stream %" PRIu32, cp->stream);
    else
        snprintf(stream, sizeof stream, "the default stream");
    snprintf(buf, n, "%s%s of %" PRIu64 " bytes on %s", cp->async ? "async " : "",
             cp->kind <= WR_COPY_MAX ? what[cp->kind] : "copy", cp->bytes, stream);
    return buf;
}

static const char *thread_str(char *buf, size_t n, const wr_race_access *a, const char *kernel,
                              const wr_replay *rp)
{
    char copy[128];
    if (a->launch == 0 && a->block == UINT32_MAX) {
        snprintf(buf, n, "the host, %s", copy_text(copy, sizeof copy, rp, a->seq));
    } else {
        char *readable = wr_demangle(kernel);
        snprintf(buf, n, "kernel %s (launch %" PRIu32 ") block %" PRIu32 " warp %" PRIu32
                 " lane %" PRIu32, readable ? readable : kernel, a->launch, a->block, a->warp,
                 a->lane);
        free(readable);
    }
    return buf;
}

/* "1 shard", "2 shards", or where the passes differ (a pass split for
 * balance, replay.h) each pass's: "shards 2 vc+scoped, 1 lockset, 1 fsm". */
static void shards_text(char *buf, size_t n, const wr_replay_stats *st,
                        const wr_engine_ops *const *table)
{
    bool same = true;
    for (unsigned p = 1; p < st->passes; p++)
        same = same && st->pass_shards[p] == st->pass_shards[0];
    if (same) {
        snprintf(buf, n, "%u shard%s", st->shards, st->shards == 1 ? "" : "s");
        return;
    }
    size_t len = (size_t)snprintf(buf, n, "shards");
    for (unsigned p = 0; p < st->passes && len < n; p++) {
        len += (size_t)snprintf(buf + len, n - len, "%s %u ", p ? "," : "", st->pass_shards[p]);
        bool first = true;
        for (unsigned e = 0; e < st->engine_count && len < n; e++)
            if (st->pass_of[e] == p) {
                len += (size_t)snprintf(buf + len, n - len, "%s%s", first ? "" : "+",
                                        table[st->engine_index[e]]->name);
                first = false;
            }
    }
}

static const char *verdict_text(unsigned v)
{
    switch (v) {
    case WR_VERDICT_MISSING_SYNC: return "missing synchronization";
    case WR_VERDICT_SCOPE_FENCE: return "insufficient scope: fence too narrow";
    case WR_VERDICT_SCOPE_ATOMIC: return "insufficient scope: atomic scope misses a party";
    case WR_VERDICT_SCOPE_LOCK: return "insufficient scope: lock scope misses a party";
    case WR_VERDICT_WEAK_ACCESS: return "weak access where a strong one was needed";
    default: return "";
    }
}

static void print_race(const wr_replay *rp, const wr_resolved_race *r)
{
    char t[2][1024];
    printf("==================\n");
    printf("WARNING: %s race (%s): %s/%s, %s", r->potential ? "potential" : "data",
           r->engine_name, wr_access_kind_name(r->kind[0]), wr_access_kind_name(r->kind[1]),
           wr_race_class_name(r->race_class));
    if (r->verdict)
        printf(", %s", wr_scope_verdict_name(r->verdict));
    printf(", seen %" PRIu64 " time%s\n", r->count, r->count == 1 ? "" : "s");
    const wr_race_access *side[2] = {&r->example.first, &r->example.second};
    for (int s = 0; s < 2; s++) {
        /* fsm and lockset find a first side's site and trace position in
         * the warp's ring (access_ring.h); of an access it no longer holds
         * fsm knows neither (site 0, position 0), lockset the site only
         * (its cell keeps it).  The sides are in canonical order, so that
         * access may be printed second.  Position 0 is the trace's first
         * event, never an access of a launch (its launch comes first); a
         * host copy there would read as unknown. */
        bool no_site = side[s]->site == 0 && side[s]->seq == 0;
        bool no_position = side[s]->seq == 0;
        bool host = side[s]->launch == 0 && side[s]->block == UINT32_MAX;
        printf("  %-6s at %s\n", wr_access_kind_name(r->kind[s]),
               host && side[s]->site == 0 ? "? (no host call site recorded)"
               : no_site                  ? "? (not kept: older than the warp's recent accesses)"
                                          : r->site[s]);
        printf("         by %s, ", thread_str(t[s], sizeof t[s], side[s], r->kernel[s], rp));
        if (no_position)
            printf("trace position unknown\n");
        else
            printf("event #%" PRIu64 "\n", side[s]->seq);
        const wr_replay_launch *l = host ? NULL : wr_replay_launch_of(rp, side[s]->launch);
        if (l && l->site) {   /* where the host launched it */
            char *at = wr_replay_site_name(rp, l->site);
            printf("         launched at %s\n", at);
            free(at);
        }
    }
    if (r->example.space == WR_SPACE_DSMEM)   /* another block's shared word */
        printf("  example: shared address 0x%" PRIx32 " of block %" PRIu32 " (through dsmem)",
               wr_dsmem_offset(r->example.addr), wr_dsmem_block(r->example.addr));
    else
        printf("  example: %s address 0x%" PRIx64, wr_space_name(r->example.space),
               r->example.addr);
    if (r->has_offset)
        printf(" = %s+%" PRIu64, r->alloc_name[0] ? r->alloc_name : "(unnamed allocation)",
               r->offset);
    printf("\n");
    if (r->verdict)
        printf("  scope verdict: %s\n", verdict_text(r->verdict));
    if (r->potential)
        printf("  potential: no common lock protects these accesses; this run's order did not "
               "expose the race, another schedule could\n");
}

/* Progress on standard error while the trace is decoded: one line kept
 * up to date on a terminal, a line every few seconds into a file. */
typedef struct progress_out {
    const char *name;
    bool tty, shown;
} progress_out;

static void print_progress(void *ctx, const wr_replay_progress *p)
{
    progress_out *o = ctx;
    char where[64];
    if (p->file_bytes)
        snprintf(where, sizeof where, "%.0f%% of %.1f MiB", 100.0 * (double)p->offset /
                 (double)p->file_bytes, (double)p->file_bytes / 1048576.0);
    else
        snprintf(where, sizeof where, "%.1f MiB", (double)p->offset / 1048576.0);
    fprintf(stderr, "%swarprace analyze: %s: %s read, %" PRIu64 " events, %.0f s%s",
            o->tty ? "\r" : "", o->name, where, p->events, p->seconds, o->tty ? "\033[K" : "\n");
    fflush(stderr);
    o->shown = true;
}

/* Appends s to buf (quoted when it has spaces). */
static void append_opt(char *buf, size_t n, const char *s)
{
    size_t len = strlen(buf);
    if (len + 1 >= n)
        return;
    int quote = strpbrk(s, " \t'\"") != NULL;
    snprintf(buf + len, n - len, "%s%s%s%s", len ? " " : "", quote ? "'" : "", s, quote ? "'" : "");
}

int wr_cmd_analyze(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"engines", required_argument, NULL, 'e'},
        {"threads", required_argument, NULL, 't'},
        {"shards", required_argument, NULL, 's'},
        {"db", required_argument, NULL, 'd'},
        {"no-db", no_argument, NULL, 'D'},
        {"separate-passes", no_argument, NULL, 'S'},
        {"keep-all-layers", no_argument, NULL, 'L'},
        {"name", required_argument, NULL, 'n'},
        {"kernels", required_argument, NULL, 'k'},
        {"exit-code", required_argument, NULL, 'x'},
        {"suppressions", required_argument, NULL, 'u'},
        {"allow-incomplete", no_argument, NULL, 'I'},
        {"quiet", no_argument, NULL, 'q'},
        {"progress", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    wr_replay_options ro;
    memset(&ro, 0, sizeof ro);
    const char *db_path = NULL, *run_name = NULL, *suppressions_path = NULL;
    int exit_code = 1, quiet = 0, no_db = 0, allow_incomplete = 0, progress = 0;
    char options[1024] = "";
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c != '?' && c != ':' && c != 'h') {
            char o[64];
            snprintf(o, sizeof o, "--%s", longopts[0].name);
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c)
                    snprintf(o, sizeof o, "--%s", lo->name);
            append_opt(options, sizeof options, o);
            if (optarg)
                append_opt(options, sizeof options, optarg);
        }
        switch (c) {
        case 'e': {
            ro.engine_mask = 0;
            char *list = strdup(optarg), *save = NULL;
            if (!list)
                abort();
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int i = wr_engine_find(tok);
                if (i < 0) {
                    fprintf(stderr, "warprace analyze: --engines: no engine '%s' (built:", tok);
                    for (unsigned j = 0; j < wr_engine_count; j++)
                        fprintf(stderr, " %s", wr_engines[j]->name);
                    fprintf(stderr, ")\n");
                    free(list);
                    return 2;
                }
                ro.engine_mask |= 1u << i;
            }
            free(list);
            if (!ro.engine_mask) {
                fprintf(stderr, "warprace analyze: --engines: empty list\n");
                return 2;
            }
            break;
        }
        case 't':
        case 's': {
            char *end;
            errno = 0;
            long n = strtol(optarg, &end, 10);
            if (errno || *end || n < 1 || n > WR_REPLAY_MAX_THREADS) {
                fprintf(stderr, "warprace analyze: --%s: '%s' is not a number in 1..%d\n",
                        c == 't' ? "threads" : "shards", optarg, WR_REPLAY_MAX_THREADS);
                return 2;
            }
            if (c == 't')
                ro.threads = (unsigned)n;
            else
                ro.shards = (unsigned)n;
            break;
        }
        case 'd': db_path = optarg; break;
        case 'D': no_db = 1; break;
        case 'S': ro.separate_passes = true; break;
        case 'L': ro.keep_all_layers = true; break;
        case 'n': run_name = optarg; break;
        case 'k': ro.kernels = optarg; break;
        case 'x': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 0 || n > 255) {
                fprintf(stderr, "warprace analyze: --exit-code: '%s' is not in 0..255\n", optarg);
                return 2;
            }
            exit_code = (int)n;
            break;
        }
        case 'q': quiet = 1; break;
        case 'P': progress = 1; break;
        case 'u': suppressions_path = optarg; break;
        case 'I': allow_incomplete = 1; break;
        case 'h': usage(stdout); return 0;
        default:
            /* a long option without its argument sets optopt to its val; an
             * unknown short option sets it to the letter */
            if (optopt && !strncmp(argv[optind - 1], "--", 2))
                fprintf(stderr, "warprace analyze: option %s needs an argument\n",
                        argv[optind - 1]);
            else
                fprintf(stderr, "warprace analyze: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, optind == argc ? "warprace analyze: no trace given\n"
                                       : "warprace analyze: one trace at a time\n");
        usage(stderr);
        return 2;
    }
    /* options that contradict each other, or say nothing, are refused: a
     * run the user asked to store and named must not vanish quietly */
    if (db_path && no_db) {
        fprintf(stderr, "warprace analyze: --db %s and --no-db: store the run or not, not both\n",
                db_path);
        return 2;
    }
    const struct { const char *option, *value; } given[] = {
        {"--db", db_path}, {"--name", run_name}, {"--kernels", ro.kernels}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++)
        if (given[i].value && !*given[i].value) {
            fprintf(stderr, "warprace analyze: %s needs a value that is not empty\n",
                    given[i].option);
            return 2;
        }
    if (run_name && no_db) {
        fprintf(stderr, "warprace analyze: --name %s and --no-db: a run that is not stored has no "
                        "name\n", run_name);
        return 2;
    }
    const char *trace = argv[optind];
    bool from_stdin = !strcmp(trace, "-");   /* a stream: read once, hashed on the way */
    const char *trace_shown = from_stdin ? WR_STDIN_NAME : trace;   /* in messages */
    struct stat sb;
    if (!from_stdin && stat(trace, &sb) != 0) {
        fprintf(stderr, "warprace analyze: %s: %s\n", trace, strerror(errno));
        return 2;
    }
    /* standard input, a named pipe, <(...): no directory to put the
     * database beside */
    bool streamed = from_stdin || !(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode));

    /* the suppressions and the database first: a bad file costs no analysis */
    wr_suppressions *supp = NULL;
    if (suppressions_path) {
        char msg[512];
        supp = wr_suppressions_load(suppressions_path, msg, sizeof msg);
        if (!supp) {
            fprintf(stderr, "warprace analyze: %s\n", msg);
            return 2;
        }
    }
    char *default_db = NULL;
    if (!db_path && !no_db) {
        char *copy = strdup(trace);
        if (!copy || asprintf(&default_db, "%s/warprace.db", streamed ? "." : dirname(copy)) < 0)
            abort();
        free(copy);
        db_path = default_db;
    }
    ro.no_hash = no_db;   /* the hash names the trace in the run row, and nothing else */
    wr_error err;
    wr_store *store = NULL;
    if (!no_db) {
        store = wr_store_open(db_path, &err);
        if (!store) {
            fprintf(stderr, "warprace analyze: %s\n", err.msg);
            wr_suppressions_free(supp);
            free(default_db);
            return 2;
        }
    }

    bool asm_failed = false;
    char *assembled = streamed ? NULL : assemble_if_text(trace, &asm_failed);
    progress_out pout = {.name = trace_shown, .tty = isatty(2) != 0};
    if (progress || (pout.tty && !quiet)) {
        ro.progress = print_progress;
        ro.progress_ctx = &pout;
        ro.progress_seconds = pout.tty ? 1.0 : 5.0;
    }
    wr_replay *rp = asm_failed ? NULL : wr_replay_run(assembled ? assembled : trace, &ro, &err);
    if (pout.shown && pout.tty)
        fputs("\r\033[K", stderr);   /* the report takes its place */
    if (assembled) {   /* read whole by now (the reader keeps it open) */
        unlink(assembled);
        free(assembled);
    }
    if (!rp) {
        if (!asm_failed)
            fprintf(stderr, "warprace analyze: %s\n", err.msg);
        wr_store_close(store);
        wr_suppressions_free(supp);
        free(default_db);
        return 2;
    }
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    wr_resolved_race *races;
    size_t nraces = wr_replay_resolve(rp, &races);
    /* rule index + 1 per race, 0: not suppressed */
    int *suppressed_by = xcalloc(nraces, sizeof *suppressed_by);
    size_t nrules = wr_suppressions_count(supp), shown = 0;
    uint64_t *rule_races = xcalloc(nrules, sizeof *rule_races);
    for (size_t i = 0; i < nraces && supp; i++) {
        int r = wr_suppressions_match(supp, races[i].kernel[0], races[i].kernel[1], races[i].site[0],
                                      races[i].site[1]);
        suppressed_by[i] = r + 1;
        if (r >= 0)
            rule_races[r]++;
    }

    /* report */
    uint64_t total = 0;
    if (!quiet) {
        for (unsigned e = 0; e < st->engine_count; e++) {
            unsigned idx = st->engine_index[e];
            for (size_t i = 0; i < nraces; i++)
                if (races[i].engine == idx && !suppressed_by[i]) {
                    print_race(rp, &races[i]);
                    shown++;
                }
        }
        if (shown)
            printf("==================\n");
    }
    for (unsigned e = 0; e < st->engine_count; e++) {
        unsigned idx = st->engine_index[e];
        uint64_t n = 0, occ = 0, pot = 0, supn = 0;
        for (size_t i = 0; i < nraces; i++)
            if (races[i].engine == idx) {
                if (suppressed_by[i]) {
                    supn++;
                    continue;
                }
                n++;
                occ += races[i].count;
                pot += races[i].potential;
            }
        total += n;
        printf("SUMMARY: %-8s %" PRIu64 " race%s", wr_engines[idx]->name, n, n == 1 ? "" : "s");
        if (pot || supn) {
            const char *sep = " (";
            if (pot) {
                printf("%s%" PRIu64 " potential", sep, pot);
                sep = ", ";
            }
            if (supn)
                printf("%s%" PRIu64 " more suppressed", sep, supn);
            printf(")");
        }
        printf(", %" PRIu64 " occurrence%s, %.3f s CPU", occ, occ == 1 ? "" : "s",
               st->engine_seconds[e]);
        const char *sep = " (one pass with ";
        for (unsigned o = 0; o < st->engine_count; o++)
            if (o != e && st->pass_of[o] == st->pass_of[e]) {
                printf("%s%s", sep, wr_engines[st->engine_index[o]]->name);
                sep = ", ";
            }
        printf("%s, %" PRIu64 " shadow words\n", *sep == ',' ? ")" : "", st->shadow_words[e]);
    }
    /* what an engine that reports races does not model, where the trace
     * has it */
    for (unsigned e = 0; e < st->engine_count && !quiet; e++) {
        unsigned idx = st->engine_index[e];
        const wr_engine_ops *eng = wr_engines[idx];
        size_t shown = 0;
        for (size_t i = 0; i < nraces; i++)
            shown += races[i].engine == idx && !suppressed_by[i];
        if (!shown)
            continue;
        char what[128] = "";
        int len = 0;
        if ((eng->unmodelled & WR_UNMODELLED_FENCES) && st->fences)
            len += snprintf(what, sizeof what, "fences (%" PRIu64 " in this trace)", st->fences);
        if ((eng->unmodelled & WR_UNMODELLED_MBARRIERS) && st->mbarrier_events)
            len += snprintf(what + len, sizeof what - (size_t)len,
                            "%smbarriers (%" PRIu64 " mbarrier events)", len ? " or " : "",
                            st->mbarrier_events);
        if (len)
            printf("NOTE: %s does not model %s: what it reports on data they order is its"
                   " design, not necessarily the program's race (analyzer/ENGINES.md)\n",
                   eng->name, what);
    }
    if (!quiet) {
        char shards[256];
        shards_text(shards, sizeof shards, st, wr_replay_table(rp));
        printf("trace: %s: %" PRIu64 " events, %" PRIu64 " warp accesses, %" PRIu64
               " thread accesses, %" PRIu64 " launches (%" PRIu64 " analysed); %u thread%s,"
               " %s, decode %.3f s, wall %.3f s, peak RSS %.1f MiB\n",
               trace_shown, st->events, st->accesses, st->thread_accesses, st->launches,
               st->launches_selected, st->threads, st->threads == 1 ? "" : "s", shards,
               st->decode_seconds, st->wall_seconds, (double)st->peak_rss_bytes / 1048576.0);
    }
    if (st->lost_events || st->lost_markers) {
        const wr_replay_lost *lost;
        size_t nl = wr_replay_lost_list(rp, &lost);
        printf("WARNING: the recorder lost %" PRIu64 " events (%" PRIu64
               " markers): races involving them cannot be found\n",
               st->lost_events, st->lost_markers);
        for (size_t i = 0; i < nl && i < 10 && !quiet; i++) {
            printf("  lost %" PRIu64 " at event #%" PRIu64 ": ", lost[i].lost.count, lost[i].seq);
            if (lost[i].lost.launch == 0)
                printf("host side\n");
            else if (lost[i].lost.block == UINT32_MAX)
                printf("launch %" PRIu32 "\n", lost[i].lost.launch);
            else
                printf("launch %" PRIu32 " block %" PRIu32 "\n", lost[i].lost.launch,
                       lost[i].lost.block);
        }
        if (nl > 10 && !quiet)
            printf("  ... and %zu more markers\n", (size_t)(st->lost_markers - 10));
    }
    for (size_t r = 0; r < nrules && !quiet; r++)
        if (rule_races[r]) {
            unsigned line;
            const char *text = wr_suppressions_rule(supp, r, &line);
            printf("suppressed: %" PRIu64 " race%s by %s:%u (%s)\n", rule_races[r],
                   rule_races[r] == 1 ? "" : "s", suppressions_path, line, text);
        }
    if (st->truncated)
        printf("WARNING: %s is truncated at offset %" PRIu64 " (%" PRIu64
               " bytes of incomplete tail ignored): analysed up to the last complete chunk\n",
               trace_shown, st->truncated_at, st->truncated_bytes);

    int status = total ? exit_code : 0;
    if (status == 0 && !allow_incomplete &&
        (st->truncated || st->lost_events || st->lost_markers)) {
        fprintf(stderr,
                "warprace analyze: %s: incomplete trace (%s%s%s): no race reported in what was "
                "recorded; exit status 3 (--allow-incomplete: 0)\n",
                trace_shown, st->truncated ? "truncated tail" : "",
                st->truncated && (st->lost_events || st->lost_markers) ? ", " : "",
                st->lost_events || st->lost_markers ? "the recorder lost events" : "");
        status = 3;
    }
    if (store) {
        char *base_copy = strdup(trace);
        if (!base_copy)
            abort();
        wr_store_run run;
        memset(&run, 0, sizeof run);
        /* the run row names the file absolutely */
        char *abs = from_stdin ? strdup(WR_STDIN_NAME) : realpath(trace, NULL);
        wr_store_run_from_replay(&run, rp, abs ? abs : trace, races, nraces);
        run.name = run_name ? run_name : from_stdin ? "stdin" : basename(base_copy);
        run.options = options;
        int64_t id = wr_store_write_run(store, &run, &err);
        wr_store_run_release(&run);
        free(abs);
        free(base_copy);
        if (id < 0) {
            fprintf(stderr, "warprace analyze: %s\n", err.msg);
            status = 2;
        } else if (!quiet) {
            printf("stored as run %" PRId64 " in %s\n", id, db_path);
        }
        wr_store_close(store);
    }
    wr_resolved_free(races, nraces);
    free(suppressed_by);
    free(rule_races);
    wr_suppressions_free(supp);
    wr_replay_free(rp);
    free(default_db);
    return status;
}

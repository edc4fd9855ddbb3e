/*
 * `warprace check [options] -- PROGRAM [ARGS...]`: record one run of
 * PROGRAM and print its races, in one command (as compute-sanitizer runs a
 * program and reports).  It is `warprace record` into a trace, then
 * `warprace analyze` of that trace: each option goes to the command it
 * belongs to, and both print what they print on their own.  The trace is a
 * temporary file unless --keep names one; the database is written only
 * where --db (or --keep, beside the trace) asks for it, the run named after
 * the program (or the kept trace) unless --name says otherwise.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

static const char check_usage[] =
    "usage: warprace check [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under the recorder (warprace record) and analyzes the trace of\n"
    "that run (warprace analyze): its races, in one command.\n"
    "\n"
    "options of warprace record: --mode MODE, --kernels REGEX (also limits the\n"
    "  analysis), --nvtx RANGE, --buffer SIZE, --drop, --drain-threads N\n"
    "options of warprace analyze: --engines LIST, --threads N, --shards N,\n"
    "  --suppressions FILE, --exit-code N, --allow-incomplete, --quiet, --progress,\n"
    "  --separate-passes, --keep-all-layers, --db FILE, --no-db, --name RUN\n"
    "own options:\n"
    "  --keep FILE   keep the trace as FILE (default: a temporary file, removed\n"
    "                after the analysis); the database then goes beside it, as\n"
    "                warprace analyze puts it, unless --db or --no-db says otherwise\n"
    "A run stored in a database is named after PROGRAM (after FILE with --keep)\n"
    "unless --name says otherwise.\n"
    "  -h, --help    this text\n"
    "Without --keep and --db, nothing is written but the report.\n"
    "\n"
    "exit status: that of warprace analyze (0 no race, 1 races, 3 incomplete\n"
    "trace, 4 out of memory) when the program ran and was recorded; 2 when it could not be run or\n"
    "recorded, or exited with a failure (what was recorded is still analyzed).\n";

typedef struct option_route {
    const char *name;
    bool value;        /* takes a value */
    bool to_record, to_analyze;
} option_route;

static const option_route routes[] = {
    {"--mode", true, true, false},
    {"--kernels", true, true, true},
    {"--nvtx", true, true, false},
    {"--buffer", true, true, false},
    {"--drop", false, true, false},
    {"--drain-threads", true, true, false},
    {"--engines", true, false, true},
    {"--threads", true, false, true},
    {"--shards", true, false, true},
    {"--suppressions", true, false, true},
    {"--exit-code", true, false, true},
    {"--allow-incomplete", false, false, true},
    {"--quiet", false, false, true},
    {"--progress", false, false, true},
    {"--separate-passes", false, false, true},
    {"--keep-all-layers", false, false, true},
    {"--db", true, false, true},
    {"--no-db", false, false, true},
    {"--name", true, false, true},
};

static const option_route *route_of(const char *arg, size_t name_len)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strlen(routes[i].name) == name_len && !strncmp(routes[i].name, arg, name_len))
            return &routes[i];
    return NULL;
}

/* Appends an option (and its value, where given apart) to a command's argv. */
static void pass_on(char **args, int *n, char *opt, char *value)
{
    args[(*n)++] = opt;
    if (value)
        args[(*n)++] = value;
}

static bool file_has_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

int wr_cmd_check(int argc, char **argv)
{
    /* at most every argument, plus the commands' own words */
    char **rec = calloc((size_t)argc + 8, sizeof *rec);
    char **ana = calloc((size_t)argc + 8, sizeof *ana);
    if (!rec || !ana) {
        free(rec);
        free(ana);
        fprintf(stderr, "warprace check: out of memory\n");
        return 2;
    }
    int nrec = 0, nana = 0, rc = 2;
    const char *keep = NULL;
    bool db_chosen = false, named = false, stored = true;   /* stored: no --no-db */
    char trace[4096] = "";
    rec[nrec++] = "record";
    rec[nrec++] = "-o";
    rec[nrec++] = trace;
    ana[nana++] = "analyze";
    ana[nana++] = trace;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(check_usage, stdout);
            rc = 0;
            goto out;
        }
        const char *eq = strchr(a, '=');
        size_t name_len = eq ? (size_t)(eq - a) : strlen(a);
        if (name_len == 6 && !strncmp(a, "--keep", 6)) {
            keep = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!keep || !keep[0]) {
                fprintf(stderr, "warprace check: --keep needs a file name\n");
                goto out;
            }
            continue;
        }
        const option_route *r = route_of(a, name_len);
        if (!r || (!r->value && eq)) {
            fprintf(stderr, "warprace check: unknown option '%s' (see 'warprace check --help')\n",
                    a);
            goto out;
        }
        char *opt = argv[i], *value = NULL;   /* value: given apart ("--db FILE") */
        if (r->value && !eq) {
            if (i + 1 >= argc) {
                fprintf(stderr, "warprace check: %s needs a value\n", r->name);
                goto out;
            }
            value = argv[++i];
        }
        db_chosen = db_chosen || !strcmp(r->name, "--db") || !strcmp(r->name, "--no-db");
        named = named || !strcmp(r->name, "--name");
        stored = stored && strcmp(r->name, "--no-db");
        if (r->to_record)
            pass_on(rec, &nrec, opt, value);
        if (r->to_analyze)
            pass_on(ana, &nana, opt, value);
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "warprace check: no program to run: give it after '--' "
                        "(warprace check -- ./app args)\n");
        goto out;
    }
    if (keep) {
        snprintf(trace, sizeof trace, "%s", keep);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(trace, sizeof trace, "%s/warprace-check-XXXXXX.wrt", tmp && tmp[0] ? tmp : "/tmp");
        int fd = mkstemps(trace, 4);
        if (fd < 0) {
            fprintf(stderr, "warprace check: cannot create a temporary trace in %s: %s\n",
                    tmp && tmp[0] ? tmp : "/tmp", strerror(errno));
            goto out;
        }
        close(fd);
        if (!db_chosen) {
            ana[nana++] = "--no-db";
            stored = false;
        }
    }
    if (!named && !keep && stored) {
        /* a run stored from a temporary trace is named after the program */
        const char *slash = strrchr(argv[i + 1], '/');
        ana[nana++] = "--name";
        ana[nana++] = (char *)(slash ? slash + 1 : argv[i + 1]);
    }
    rec[nrec++] = "--";
    for (int j = i + 1; j < argc; j++)
        rec[nrec++] = argv[j];

    int recorded = wr_cmd_record(nrec, rec);
    fflush(stdout);
    if (!file_has_bytes(trace)) {
        /* the program did not run, or the recorder wrote nothing: it said why */
        fprintf(stderr, "warprace check: nothing was recorded; no analysis\n");
        rc = 2;
    } else {
        if (recorded != 0)
            fprintf(stderr, "warprace check: the run did not end well (above); what was "
                            "recorded is analyzed\n");
        int analyzed = wr_cmd_analyze(nana, ana);
        fflush(stdout);
        rc = recorded != 0 ? 2 : analyzed;
    }
    if (!keep)
        unlink(trace);
out:
    free(rec);
    free(ana);
    return rc;
}

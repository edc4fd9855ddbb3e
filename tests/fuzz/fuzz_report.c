/* libFuzzer target for raceq's report files (queries/rq_report.c): any
 * bytes either parse into a report or are refused with a message that
 * names the file, and the line where one is given; a parsed report has a
 * valid name, valid parameter names, and keeps the text whole.  Any broken
 * promise aborts, so libFuzzer keeps the input. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_report: %s\n", what);
        abort();
    }
}

static int valid_name(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a report file is text: raceq refuses one with a NUL byte before
     * parsing, so the parser sees the bytes up to the first NUL */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t len = strlen(text);
    unsigned lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    rq_report r;
    char err[512] = "";
    /* the name hint, as raceq makes it from a file name, is valid */
    if (rq_report_parse(&r, "fuzzed", "in.sql", text, err, sizeof err) != 0) {
        check(!strncmp(err, "in.sql:", 7), "a refusal that does not name the file");
        if (err[7] != ' ') {
            unsigned line = (unsigned)strtoul(err + 7, NULL, 10);
            check(line >= 1 && line <= lines, "a refusal naming a line outside the input");
        }
        check(r.name == NULL && r.nparams == 0, "a refused report keeps something");
    } else {
        check(valid_name(r.name), "a parsed report with an invalid name");
        check(r.desc != NULL && r.origin && !strcmp(r.origin, "in.sql"), "description or origin");
        check(r.text && !strcmp(r.text, text), "the text not kept whole");
        for (int i = 0; i < r.nparams; i++)
            check(valid_name(r.params[i].name) && r.params[i].desc != NULL,
                  "a parsed parameter with an invalid name");
        rq_report_free(&r);
    }
    /* with a name hint that is not a name, a report without `-- name:` is
     * refused, naming the file */
    if (rq_report_parse(&r, "bad name", "in.sql", text, err, sizeof err) == 0) {
        check(valid_name(r.name) && strcmp(r.name, "bad name"), "the bad hint taken as a name");
        rq_report_free(&r);
    } else {
        check(!strncmp(err, "in.sql:", 7), "a refusal that does not name the file");
    }
    free(text);
    return 0;
}

/* libFuzzer target for suppression files (analyzer/suppress.h): any bytes
 * either parse or are refused with a message that names the file and a
 * line inside the input; a parsed file's rules come back as written (their
 * text non-empty, their lines ascending and within the input), and
 * matching names built from the input never crashes.  Any broken promise
 * aborts, so libFuzzer keeps the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_suppress: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    wr_suppressions *s = wr_suppressions_parse("in.supp", (const char *)data, size, err, sizeof err);
    unsigned lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (!s) {
        check(!strncmp(err, "in.supp:", 8), "a refusal that does not name the file");
        unsigned line = (unsigned)strtoul(err + 8, NULL, 10);
        check(line >= 1 && line <= lines, "a refusal naming a line outside the input");
        return 0;
    }
    unsigned prev = 0;
    for (size_t i = 0; i < wr_suppressions_count(s); i++) {
        unsigned line;
        const char *text = wr_suppressions_rule(s, i, &line);
        check(text && text[0] && strchr(text, ':'), "a rule without its text");
        check(line > prev && line <= lines, "rules out of line order");
        prev = line;
    }
    /* names from the input: its first bytes, NUL-terminated */
    char name[64];
    size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    int r = wr_suppressions_match(s, name, NULL, "?", name);
    check(r >= -1 && r < (int)wr_suppressions_count(s), "a match outside the rules");
    wr_suppressions_free(s);
    return 0;
}

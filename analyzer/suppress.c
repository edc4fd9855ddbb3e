/* Suppression files: see suppress.h. */
#include "suppress.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ON_KERNEL = 1, ON_SITE = 2 };

typedef struct rule {
    unsigned on;        /* ON_KERNEL | ON_SITE */
    unsigned line;
    char *text;         /* the rule as written, blanks dropped */
    const char *pattern;/* inside text, after the ':' */
} rule;

struct wr_suppressions {
    rule *rules;
    size_t n, cap;
};

/* Input larger than this is not a suppression file. */
#define MAX_FILE_BYTES ((size_t)16 << 20)

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void wr_suppressions_free(wr_suppressions *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->rules[i].text);
    free(s->rules);
    free(s);
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* One line [p, end) of `name`, number `line`: a rule added to s, nothing
 * for a blank or comment line; false with err set if it is neither. */
static bool parse_line(wr_suppressions *s, const char *name, unsigned line, const char *p,
                       const char *end, char *err, size_t errlen)
{
    while (p < end && is_blank(*p))
        p++;
    while (end > p && is_blank(end[-1]))
        end--;
    if (p == end || *p == '#')
        return true;
    for (const char *q = p; q < end; q++)
        if (*q == '\0') {
            say(err, errlen, "%s:%u: a NUL byte in the line", name, line);
            return false;
        }
    const char *colon = memchr(p, ':', (size_t)(end - p));
    static const struct {
        const char *word;
        unsigned on;
    } kinds[] = {{"kernel", ON_KERNEL}, {"site", ON_SITE}, {"race", ON_KERNEL | ON_SITE}};
    unsigned on = 0;
    for (size_t k = 0; colon && k < sizeof kinds / sizeof kinds[0]; k++)
        if ((size_t)(colon - p) == strlen(kinds[k].word) &&
            !memcmp(p, kinds[k].word, (size_t)(colon - p)))
            on = kinds[k].on;
    if (!on) {
        int shown = (int)(end - p < 60 ? end - p : 60);
        say(err, errlen, "%s:%u: '%.*s%s' is not a rule (kernel:PATTERN, site:PATTERN or race:PATTERN)",
            name, line, shown, p, end - p > 60 ? "..." : "");
        return false;
    }
    if (colon + 1 == end) {
        say(err, errlen, "%s:%u: '%.*s' has an empty pattern", name, line, (int)(end - p), p);
        return false;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        rule *r = realloc(s->rules, s->cap * sizeof *r);
        if (!r) {
            say(err, errlen, "%s: out of memory", name);
            return false;
        }
        s->rules = r;
    }
    char *text = malloc((size_t)(end - p) + 1);
    if (!text) {
        say(err, errlen, "%s: out of memory", name);
        return false;
    }
    memcpy(text, p, (size_t)(end - p));
    text[end - p] = '\0';
    s->rules[s->n++] = (rule){.on = on, .line = line, .text = text,
                              .pattern = text + (colon - p) + 1};
    return true;
}

wr_suppressions *wr_suppressions_parse(const char *name, const char *text, size_t len, char *err,
                                       size_t errlen)
{
    wr_suppressions *s = calloc(1, sizeof *s);
    if (!s) {
        say(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    const char *p = text, *end = text + len;
    unsigned line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        if (!parse_line(s, name, line, p, stop, err, errlen)) {
            wr_suppressions_free(s);
            return NULL;
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return s;
}

wr_suppressions *wr_suppressions_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        say(err, errlen, "%s: cannot open the suppressions: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    bool ok = buf != NULL;
    if (!ok)
        say(err, errlen, "%s: out of memory", path);
    while (ok) {
        if (len == cap) {
            if (cap >= MAX_FILE_BYTES) {
                say(err, errlen, "%s: over %zu bytes: not a suppression file", path, MAX_FILE_BYTES);
                ok = false;
                break;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                say(err, errlen, "%s: out of memory", path);
                ok = false;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                say(err, errlen, "%s: offset %zu: cannot read: %s", path, len, strerror(errno));
                ok = false;
            }
            break;
        }
    }
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    wr_suppressions *s = wr_suppressions_parse(path, buf, len, err, errlen);
    free(buf);
    return s;
}

static bool glob(const char *pattern, const char *name)
{
    return name && fnmatch(pattern, name, 0) == 0;
}

int wr_suppressions_match(const wr_suppressions *s, const char *k0, const char *k1, const char *s0,
                          const char *s1)
{
    for (size_t i = 0; s && i < s->n; i++) {
        const rule *r = &s->rules[i];
        if (((r->on & ON_KERNEL) && (glob(r->pattern, k0) || glob(r->pattern, k1))) ||
            ((r->on & ON_SITE) && (glob(r->pattern, s0) || glob(r->pattern, s1))))
            return (int)i;
    }
    return -1;
}

size_t wr_suppressions_count(const wr_suppressions *s) { return s ? s->n : 0; }

const char *wr_suppressions_rule(const wr_suppressions *s, size_t i, unsigned *line)
{
    if (!s || i >= s->n)
        return NULL;
    if (line)
        *line = s->rules[i].line;
    return s->rules[i].text;
}

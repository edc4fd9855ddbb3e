/* raceq output formats: table, csv, json, markdown (sarif: rq_sarif.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"

int rq_format_parse(const char *s, rq_format *f)
{
    static const struct { const char *name; rq_format f; } names[] = {
        {"table", RQ_FMT_TABLE}, {"csv", RQ_FMT_CSV}, {"json", RQ_FMT_JSON},
        {"markdown", RQ_FMT_MARKDOWN}, {"md", RQ_FMT_MARKDOWN}, {"sarif", RQ_FMT_SARIF},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *f = names[i].f;
            return 0;
        }
    return -1;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) { n = 2; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return n;
}

/* Display width: code points (invalid bytes count one each). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        p += n ? n : 1;
        w++;
    }
    return w;
}

void rq_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            case '\b': fputs("\\b", out); break;
            case '\f': fputs("\\f", out); break;
            default: fprintf(out, "\\u%04x", c); break;
            }
            p++;
        } else {
            size_t n = utf8_len(p);
            if (n == 0) {
                fputs("\\ufffd", out);      /* not UTF-8: replacement char */
                p++;
            } else {
                fwrite(p, 1, n, out);
                p += n;
            }
        }
    }
    fputc('"', out);
}

void rq_json_number_double(FILE *out, double d)
{
    if (!isfinite(d)) {
        fputs("null", out);
        return;
    }
    rq_cell c = {.type = SQLITE_FLOAT, .d = d};
    char buf[64];
    fputs(rq_cell_text(&c, buf, sizeof buf), out);
}

static void json_cell(FILE *out, const rq_cell *c)
{
    char buf[64];
    switch (c->type) {
    case SQLITE_INTEGER:
        fputs(rq_cell_text(c, buf, sizeof buf), out);
        break;
    case SQLITE_FLOAT:
        rq_json_number_double(out, c->d);
        break;
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        rq_json_string(out, c->s ? c->s : "");
        break;
    default:
        fputs("null", out);
        break;
    }
}

static int column_is_numeric(const rq_table *t, int col)
{
    int any = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        int ty = rq_table_cell(t, r, col)->type;
        if (ty == SQLITE_NULL)
            continue;
        if (ty != SQLITE_INTEGER && ty != SQLITE_FLOAT)
            return 0;
        any = 1;
    }
    return any;
}

/* Cell text for table/markdown: control characters made visible. */
static char *display_text(const rq_cell *c, int markdown)
{
    char buf[64];
    const char *s = rq_cell_text(c, buf, sizeof buf);
    size_t n = strlen(s);
    char *d = rq_xmalloc(n * 6 + 1), *o = d;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '\n') {
            if (markdown) { memcpy(o, "<br>", 4); o += 4; }
            else { *o++ = '\\'; *o++ = 'n'; }
        } else if (ch == '|' && markdown) {
            *o++ = '\\';
            *o++ = '|';
        } else if (ch < 0x20 || ch == 0x7f) {
            o += sprintf(o, "\\x%02x", ch);
        } else {
            *o++ = (char)ch;
        }
    }
    *o = '\0';
    return d;
}

static void pad(FILE *out, size_t n)
{
    while (n--)
        fputc(' ', out);
}

static void print_table(FILE *out, const rq_table *t)
{
    size_t nc = (size_t)t->ncols;
    size_t *w = rq_xmalloc(sizeof(size_t) * nc);
    int *num = rq_xmalloc(sizeof(int) * nc);
    char **txt = rq_xmalloc(sizeof(char *) * (t->nrows * nc + 1));
    for (size_t c = 0; c < nc; c++) {
        w[c] = text_width(t->cols[c]);
        num[c] = column_is_numeric(t, (int)c);
    }
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < nc; c++) {
            char *s = display_text(rq_table_cell(t, r, (int)c), 0);
            txt[r * nc + c] = s;
            size_t tw = text_width(s);
            if (tw > w[c])
                w[c] = tw;
        }
    if (t->title)
        fprintf(out, "== %s ==\n", t->title);
    /* header, rule, rows; no trailing blanks */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t c = 0; c < nc; c++) {
            const char *s = t->cols[c];
            size_t tw = text_width(s);
            int last = c + 1 == nc;
            if (pass == 0) {
                if (num[c]) pad(out, w[c] - tw);
                fputs(s, out);
                if (!num[c] && !last) pad(out, w[c] - tw);
            } else {
                for (size_t k = 0; k < w[c]; k++)
                    fputc('-', out);
            }
            if (!last)
                fputs("  ", out);
        }
        fputc('\n', out);
    }
    for (size_t r = 0; r < t->nrows; r++) {
        /* find the last non-empty left-aligned tail to avoid trailing blanks */
        for (size_t c = 0; c < nc; c++) {
            const char *s = txt[r * nc + c];
            size_t tw = text_width(s);
            int last = 1;
            for (size_t k = c + 1; k < nc; k++)
                if (num[k] || txt[r * nc + k][0]) { last = 0; break; }
            if (num[c]) pad(out, w[c] - tw);
            fputs(s, out);
            if (last)
                break;
            if (!num[c]) pad(out, w[c] - tw);
            fputs("  ", out);
        }
        fputc('\n', out);
    }
    if (t->nrows == 0)
        fputs("(no rows)\n", out);
    for (size_t i = 0; i < t->nrows * nc; i++)
        free(txt[i]);
    free(txt);
    free(w);
    free(num);
}

static void csv_field(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\r\n") || (*s && (s[0] == ' ' || s[strlen(s) - 1] == ' '))) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
}

static void print_csv(FILE *out, const rq_table *t)
{
    char buf[64];
    if (t->title)
        fprintf(out, "# %s\n", t->title);
    for (int c = 0; c < t->ncols; c++) {
        if (c) fputc(',', out);
        csv_field(out, t->cols[c]);
    }
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c) fputc(',', out);
            csv_field(out, rq_cell_text(rq_table_cell(t, r, c), buf, sizeof buf));
        }
        fputc('\n', out);
    }
}

static void print_markdown(FILE *out, const rq_table *t)
{
    if (t->title)
        fprintf(out, "### %s\n\n", t->title);
    fputc('|', out);
    for (int c = 0; c < t->ncols; c++) {
        rq_cell h = {.type = SQLITE_TEXT, .s = t->cols[c]};
        char *s = display_text(&h, 1);
        fprintf(out, " %s |", s);
        free(s);
    }
    fputs("\n|", out);
    for (int c = 0; c < t->ncols; c++)
        fputs(column_is_numeric(t, c) ? " ---: |" : " --- |", out);
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        fputc('|', out);
        for (int c = 0; c < t->ncols; c++) {
            char *s = display_text(rq_table_cell(t, r, c), 1);
            fprintf(out, " %s |", s);
            free(s);
        }
        fputc('\n', out);
    }
    if (t->nrows == 0)
        fputs("\n_(no rows)_\n", out);
}

static void print_json(FILE *out, const rq_result *res)
{
    fputs("{\n  \"report\": ", out);
    rq_json_string(out, res->name ? res->name : "");
    fputs(",\n  \"sections\": [", out);
    for (size_t i = 0; i < res->ntables; i++) {
        const rq_table *t = res->tables[i];
        fputs(i ? ",\n    {\n" : "\n    {\n", out);
        fputs("      \"title\": ", out);
        if (t->title)
            rq_json_string(out, t->title);
        else
            fputs("null", out);
        fputs(",\n      \"columns\": [", out);
        for (int c = 0; c < t->ncols; c++) {
            if (c) fputs(", ", out);
            rq_json_string(out, t->cols[c]);
        }
        fputs("],\n      \"rows\": [", out);
        for (size_t r = 0; r < t->nrows; r++) {
            fputs(r ? ",\n        {" : "\n        {", out);
            for (int c = 0; c < t->ncols; c++) {
                if (c) fputs(", ", out);
                rq_json_string(out, t->cols[c]);
                fputs(": ", out);
                json_cell(out, rq_table_cell(t, r, c));
            }
            fputc('}', out);
        }
        fputs(t->nrows ? "\n      ]\n    }" : "]\n    }", out);
    }
    fputs(res->ntables ? "\n  ]\n}\n" : "]\n}\n", out);
}

void rq_print(FILE *out, const rq_result *r, rq_format f)
{
    if (f == RQ_FMT_JSON) {
        print_json(out, r);
        return;
    }
    for (size_t i = 0; i < r->ntables; i++) {
        if (i)
            fputc('\n', out);
        switch (f) {
        case RQ_FMT_CSV: print_csv(out, r->tables[i]); break;
        case RQ_FMT_MARKDOWN: print_markdown(out, r->tables[i]); break;
        default: print_table(out, r->tables[i]); break;
        }
    }
}

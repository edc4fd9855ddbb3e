/*
 * warprace text form -> .wrt (formats/TEXT.md).
 *
 * One pass, line by line, in bounded memory: a line is at most
 * WR_TEXT_MAX_LINE bytes; the only state that grows is the symbol tables
 * (kernels, sites, allocation labels, launches), each capped.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"
#include "text_priv.h"
#include "warprace_version.h"

/* ---- string map ---------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void wr_text_map_free(wr_text_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

uint32_t wr_text_map_get(const wr_text_map *m, const char *key)
{
    if (!m->cap)
        return 0;
    for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return 0;
        if (!strcmp(m->keys[i], key))
            return m->vals[i];
    }
}

static int map_grow(wr_text_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    char **nk = calloc(ncap, sizeof(*nk));
    uint32_t *nv = calloc(ncap, sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_str(m->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

int wr_text_map_put(wr_text_map *m, const char *key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap && map_grow(m))
        return -1;
    size_t i = hash_str(key) & (m->cap - 1);
    for (; m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (!strcmp(m->keys[i], key)) {
            m->vals[i] = val;
            return 0;
        }
    m->keys[i] = strdup(key);
    if (!m->keys[i])
        return -1;
    m->vals[i] = val;
    m->count++;
    return 0;
}

int wr_text_is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

size_t wr_text_string_len(const char *s)
{
    size_t n = 2;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\' || *c == '\n' || *c == '\t' || *c == '\r')
            n += 2;
        else if (*c < 0x20 || *c > 0x7e)
            n += 4;
        else
            n += 1;
    }
    return n;
}

void wr_text_site_key(char *buf, size_t cap, const char *file, uint32_t line, const char *func)
{
    snprintf(buf, cap, "%s\x01%u\x01%s", file, line, func);
}

/* ---- parser state -------------------------------------------------------- */

#define MAX_TOKENS 1024

typedef struct tok {
    char *s;    /* NUL-terminated copy */
    int col;    /* 1-based */
} tok;

typedef struct alloc_info {
    uint64_t base, size;
    uint8_t space;
} alloc_info;

typedef struct launch_info {
    uint32_t id;
    uint64_t blocks;
    uint64_t threads;   /* per block */
    uint64_t cluster_blocks;   /* blocks per cluster (1 without clusters) */
    uint32_t grid[3], cluster[3];   /* which blocks share a cluster (dsmem owners) */
} launch_info;

/* Catalog definitions are handed to the writer only just before the event
 * chunk that follows them is cut, in the canonical order kernels, allocs,
 * sites, modules (what dump prints): the writer interns strings in call
 * order, so this makes the string table -- and the file -- independent of
 * where in the chunk the text defined them. */
typedef struct pend_def {
    char *s1, *s2;          /* kernel/alloc/module name; site file, function */
    uint64_t a, b;          /* alloc base, size; site pc, line */
    uint8_t space;
    uint8_t *image;         /* module */
} pend_def;

typedef struct pend_list {
    pend_def *v;
    size_t n, cap;
} pend_list;

typedef struct src {
    FILE *f;
    const char *buf;
    size_t len, pos;
} src;

typedef struct P {
    const char *name;       /* input name for messages */
    const char *out_path;
    wr_error *err;
    src in;
    uint32_t lineno;
    /* grown to the longest line so far: most traces never need the limit */
    char *line, *arena;
    size_t line_cap, arena_cap;
    tok toks[MAX_TOKENS];
    int ntok, ti;

    /* header */
    int in_body;
    unsigned seen_hdr;
    char *h_producer, *h_producer_version, *h_device, *h_host, *h_command;
    wr_header hdr;
    wr_writer *w;

    /* catalog */
    uint32_t nkernels, nsites, nmodules;
    wr_text_map kernel_by_name, site_by_key, alloc_by_label;
    alloc_info *allocs;     /* index id-1 */
    uint32_t nallocs, allocs_cap;
    uint64_t next_base[WR_ALLOC_SPACE_MAX + 1];

    pend_list pend[4];      /* kernels, allocs, sites, modules */
    uint32_t flushed[4];    /* definitions handed to the writer */
    uint64_t chunk_bytes, chunk_events;   /* mirror of the writer's open chunk */

    /* launches: open addressing by id */
    launch_info *launches;
    size_t launch_cap, nlaunches;
    uint32_t last_launch, max_launch;

    /* module being read */
    int mod_active;
    int mod_col;
    uint32_t mod_line;
    char *mod_name;
    uint8_t *mod_image;
    uint64_t mod_size, mod_have;
} P;

static int perr(P *p, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int perr(P *p, int col, const char *fmt, ...)
{
    wr_error *e = p->err;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (col < 1)
        col = 1;
    snprintf(e->msg, sizeof(e->msg), "%s:%u:%d: %s", p->name, p->lineno, col, what);
    e->offset = 0;
    e->line = p->lineno;
    e->col = (uint32_t)col;
    return -1;
}

/* The token text shown in messages, shortened. */
static const char *shown(const char *s)
{
    static _Thread_local char buf[64];
    size_t n = strlen(s);
    if (n < sizeof(buf))
        return s;
    memcpy(buf, s, 56);
    memcpy(buf + 56, "...", 4);
    return buf;
}

/* ---- input --------------------------------------------------------------- */

static int src_getc(src *s)
{
    if (s->f)
        return getc(s->f);
    if (s->pos >= s->len)
        return EOF;
    return (unsigned char)s->buf[s->pos++];
}

static int grow_line(P *p, size_t need)
{
    size_t cap = p->line_cap ? p->line_cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > WR_TEXT_MAX_LINE + 2)
        cap = WR_TEXT_MAX_LINE + 2;
    char *l = realloc(p->line, cap);
    if (!l)
        return perr(p, 1, "out of memory");
    p->line = l;
    p->line_cap = cap;
    return 0;
}

/* An EOF that is a read error (a directory, an I/O error): -1, said. */
static int read_failed(P *p)
{
    if (!p->in.f || !ferror(p->in.f))
        return 0;
    int e = errno;   /* set by the read that failed */
    return perr(p, 1, "cannot read: %s", strerror(e ? e : EIO));
}

/* 1 line read, 0 EOF, -1 error. */
static int read_line(P *p)
{
    size_t n = 0;
    int c = src_getc(&p->in);
    if (c == EOF)
        return read_failed(p);
    p->lineno++;
    while (c != EOF && c != '\n') {
        if (n >= WR_TEXT_MAX_LINE)
            return perr(p, (int)WR_TEXT_MAX_LINE + 1, "line longer than %u bytes", WR_TEXT_MAX_LINE);
        if (c == 0)
            return perr(p, (int)n + 1, "NUL byte in text");
        if (n + 2 > p->line_cap && grow_line(p, n + 2))
            return -1;
        p->line[n++] = (char)c;
        c = src_getc(&p->in);
    }
    if (c == EOF && read_failed(p))
        return -1;
    if (n + 2 > p->line_cap && grow_line(p, n + 2))
        return -1;
    /* tokens are copied with a NUL each: at most two bytes per line byte */
    if (2 * n + 8 > p->arena_cap) {
        size_t cap = 2 * p->line_cap + 8;
        char *a = realloc(p->arena, cap);
        if (!a)
            return perr(p, 1, "out of memory");
        p->arena = a;
        p->arena_cap = cap;
    }
    if (n && p->line[n - 1] == '\r')
        n--;
    p->line[n] = 0;
    return 1;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int tokenize(P *p)
{
    const char *l = p->line;
    char *a = p->arena;
    int depth = 0;
    size_t i = 0;
    p->ntok = 0;
    p->ti = 0;
    for (;;) {
        while (l[i] && (is_blank(l[i]) || (depth && l[i] == ',')))
            i++;
        if (!l[i] || l[i] == '#')
            break;
        if (p->ntok >= MAX_TOKENS)
            return perr(p, (int)i + 1, "too many tokens on one line");
        tok *t = &p->toks[p->ntok++];
        t->s = a;
        t->col = (int)i + 1;
        if (l[i] == '{' || l[i] == '}') {
            depth += l[i] == '{' ? 1 : -1;
            *a++ = l[i++];
            *a++ = 0;
            continue;
        }
        while (l[i] && !is_blank(l[i]) && l[i] != '{' && l[i] != '}' && !(depth && l[i] == ',')) {
            if (l[i] == '"') {
                size_t q = i;
                *a++ = l[i++];
                while (l[i] && l[i] != '"') {
                    if (l[i] == '\\' && l[i + 1])
                        *a++ = l[i++];
                    *a++ = l[i++];
                }
                if (!l[i])
                    return perr(p, (int)q + 1, "unterminated string");
            }
            *a++ = l[i++];
        }
        *a++ = 0;
        if ((size_t)(a - t->s) - 1 > WR_TEXT_MAX_TOKEN)
            return perr(p, t->col, "token longer than %u bytes", WR_TEXT_MAX_TOKEN);
    }
    return 0;
}

/* ---- scalar parsing ------------------------------------------------------ */

/* 0 ok, -1 syntax, -2 range */
static int num_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        if (!*s)
            return -1;
        for (; *s; s++) {
            int d;
            if (*s >= '0' && *s <= '9') d = *s - '0';
            else if (*s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
            else if (*s >= 'A' && *s <= 'F') d = *s - 'A' + 10;
            else return -1;
            if (v >> 60)
                return -2;
            v = v << 4 | (uint64_t)d;
        }
    } else {
        if (!*s)
            return -1;
        for (; *s; s++) {
            if (*s < '0' || *s > '9')
                return -1;
            uint64_t d = (uint64_t)(*s - '0');
            if (v > (UINT64_MAX - d) / 10)
                return -2;
            v = v * 10 + d;
        }
    }
    *out = v;
    return 0;
}

static int get_u64(P *p, const char *s, int col, uint64_t max, uint64_t *out)
{
    int r = num_u64(s, out);
    if (r == -1)
        return perr(p, col, "bad number '%s'", shown(s));
    if (r == -2 || *out > max)
        return perr(p, col, "number out of range '%s'", shown(s));
    return 0;
}

static int get_u32(P *p, const char *s, int col, uint32_t *out)
{
    uint64_t v;
    if (get_u64(p, s, col, UINT32_MAX, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int get_i64(P *p, const char *s, int col, int64_t *out)
{
    int neg = *s == '-';
    uint64_t v;
    int r = num_u64(s + neg, &v);
    if (r == -1)
        return perr(p, col, "bad number '%s'", shown(s));
    if (r == -2 || v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return perr(p, col, "number out of range '%s'", shown(s));
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Unescapes a "..." token into out (cap >= strlen(s)). */
static int get_string(P *p, const char *s, int col, char *out)
{
    size_t n = strlen(s);
    if (n < 2 || s[0] != '"' || s[n - 1] != '"')
        return perr(p, col, "expected a \"string\", got '%s'", shown(s));
    char *o = out;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = s[i];
        if (c == '"')
            return perr(p, col + (int)i, "unexpected '\"' in string");
        if (c != '\\') {
            *o++ = c;
            continue;
        }
        c = s[++i];
        if (i + 1 >= n)
            return perr(p, col + (int)i, "bad escape at end of string");
        switch (c) {
        case '\\': *o++ = '\\'; break;
        case '"': *o++ = '"'; break;
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'x': {
            int v = 0;
            for (int k = 0; k < 2; k++) {
                char h = s[++i];
                int d;
                if (i + 1 >= n) return perr(p, col + (int)i, "bad \\x escape");
                if (h >= '0' && h <= '9') d = h - '0';
                else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
                else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
                else return perr(p, col + (int)i, "bad \\x escape");
                v = v * 16 + d;
            }
            if (!v)
                return perr(p, col + (int)i - 3, "\\x00 is not allowed in strings");
            *o++ = (char)v;
            break;
        }
        default:
            return perr(p, col + (int)i - 1, "unknown escape '\\%c'", c);
        }
    }
    *o = 0;
    size_t canon = wr_text_string_len(out);
    if (canon > WR_TEXT_MAX_TOKEN)
        return perr(p, col, "string is %zu bytes in canonical form, more than %u", canon, WR_TEXT_MAX_TOKEN);
    return 0;
}

/* ---- tokens -------------------------------------------------------------- */

static tok *peek(P *p) { return p->ti < p->ntok ? &p->toks[p->ti] : NULL; }

static int end_col(P *p) { return (int)strlen(p->line) + 1; }

/* If the next token starts with key (e.g. "grid="), consumes it and returns
 * its value; else NULL. */
static const char *take_kv(P *p, const char *key, int *col)
{
    tok *t = peek(p);
    size_t n = strlen(key);
    if (!t || strncmp(t->s, key, n))
        return NULL;
    p->ti++;
    *col = t->col + (int)n;
    return t->s + n;
}

static int no_more(P *p)
{
    tok *t = peek(p);
    if (t)
        return perr(p, t->col, "unexpected '%s'", shown(t->s));
    return 0;
}

/* ---- writer -------------------------------------------------------------- */

static int writer_fail(P *p, int col)
{
    char m[sizeof(p->err->msg)];
    snprintf(m, sizeof(m), "%s", p->err->msg);
    return perr(p, col, "%s", m);
}

static int open_writer(P *p)
{
    if (p->w)
        return 0;
    p->hdr.version_major = WR_FORMAT_MAJOR;
    p->hdr.version_minor = WR_FORMAT_MINOR;
    p->hdr.producer = p->h_producer ? p->h_producer : "warprace-asm";
    p->hdr.producer_version = p->h_producer_version ? p->h_producer_version : WARPRACE_VERSION;
    p->hdr.device = p->h_device ? p->h_device : "";
    p->hdr.host = p->h_host ? p->h_host : "";
    p->hdr.command = p->h_command ? p->h_command : "";
    if (!(p->seen_hdr & (1u << 3)))
        p->hdr.warp_size = 32;
    p->w = wr_writer_open(p->out_path, &p->hdr, NULL, p->err);
    if (!p->w)
        return writer_fail(p, 1);
    return 0;
}

static int flush_defs(P *p, int col);

static int emit(P *p, const wr_event *ev, int col)
{
    /* The writer cuts the chunk right after the event that brings it to
     * chunk_bytes (or to the event limit): definitions go out before that. */
    size_t n = wrf_event_encoded_size(ev);
    int cut = p->chunk_bytes + n >= WRF_DEFAULT_CHUNK_BYTES ||
              p->chunk_events + 1 >= WRF_EVENT_CHUNK_COUNT_MAX;
    if (cut && flush_defs(p, col))
        return -1;
    if (wr_writer_event(p->w, ev, p->err))
        return writer_fail(p, col);
    if (cut) {
        p->chunk_bytes = 0;
        p->chunk_events = 0;
    } else {
        p->chunk_bytes += n;
        p->chunk_events++;
    }
    return 0;
}

enum { PK_KERNEL, PK_ALLOC, PK_SITE, PK_MODULE };

static pend_def *pend_push(P *p, int kind, int col)
{
    pend_list *l = &p->pend[kind];
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        pend_def *nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv) {
            perr(p, col, "out of memory");
            return NULL;
        }
        l->v = nv;
        l->cap = nc;
    }
    pend_def *d = &l->v[l->n++];
    memset(d, 0, sizeof(*d));
    return d;
}

static void pend_clear(P *p)
{
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < p->pend[k].n; i++) {
            free(p->pend[k].v[i].s1);
            free(p->pend[k].v[i].s2);
            free(p->pend[k].v[i].image);
        }
        p->pend[k].n = 0;
    }
}

/* Hands the pending definitions to the writer in canonical order. */
static int flush_defs(P *p, int col)
{
    int rc = 0;
    for (int k = 0; k < 4 && !rc; k++) {
        for (size_t i = 0; i < p->pend[k].n && !rc; i++) {
            pend_def *d = &p->pend[k].v[i];
            uint32_t id = 0;
            switch (k) {
            case PK_KERNEL: id = wr_writer_kernel(p->w, d->s1); break;
            case PK_ALLOC: id = wr_writer_alloc(p->w, d->a, d->b, d->space, d->s1); break;
            case PK_SITE: id = wr_writer_site(p->w, d->a, d->s1, (uint32_t)d->b, d->s2); break;
            case PK_MODULE:
                id = wr_writer_module(p->w, d->s1, d->image ? d->image : (const uint8_t *)"", d->a);
                break;
            }
            if (id != p->flushed[k] + 1)
                rc = perr(p, col, "the writer refused a catalog definition (%s)",
                          k == PK_KERNEL ? "kernel" : k == PK_ALLOC ? "allocation" : k == PK_SITE ? "site" : "module");
            else
                p->flushed[k] = id;
        }
    }
    pend_clear(p);
    return rc;
}

/* ---- header -------------------------------------------------------------- */

static const char *const header_words[] = {"producer", "device", "sm", "warpsize", "clock",
                                           "host", "time", "command"};

static int header_line(P *p, unsigned which)
{
    tok *kw = &p->toks[0];
    p->ti = 1;
    if (p->in_body)
        return perr(p, kw->col, "header line '%s' after the first event or definition", kw->s);
    if (p->seen_hdr & (1u << which))
        return perr(p, kw->col, "duplicate header line '%s'", kw->s);
    p->seen_hdr |= 1u << which;
    tok *v = peek(p);
    if (!v)
        return perr(p, end_col(p), "missing value after '%s'", kw->s);
    p->ti++;
    char buf[WR_TEXT_MAX_TOKEN + 1];
    switch (which) {
    case 0:
        if (get_string(p, v->s, v->col, buf) || !(p->h_producer = strdup(buf)))
            return -1;
        if (peek(p)) {
            v = peek(p);
            p->ti++;
            if (get_string(p, v->s, v->col, buf) || !(p->h_producer_version = strdup(buf)))
                return -1;
        }
        break;
    case 1:
        if (get_string(p, v->s, v->col, buf) || !(p->h_device = strdup(buf)))
            return -1;
        break;
    case 2: if (get_u32(p, v->s, v->col, &p->hdr.sm_arch)) return -1; break;
    case 3: if (get_u32(p, v->s, v->col, &p->hdr.warp_size)) return -1; break;
    case 4: if (get_u32(p, v->s, v->col, &p->hdr.clock_khz)) return -1; break;
    case 5:
        if (get_string(p, v->s, v->col, buf) || !(p->h_host = strdup(buf)))
            return -1;
        break;
    case 6: if (get_i64(p, v->s, v->col, &p->hdr.time_unix_ns)) return -1; break;
    case 7:
        if (get_string(p, v->s, v->col, buf) || !(p->h_command = strdup(buf)))
            return -1;
        break;
    }
    return no_more(p);
}

/* ---- catalog ------------------------------------------------------------- */

/* Parses an optional "%N" that must equal `next`. */
static int check_id(P *p, uint32_t next)
{
    tok *t = peek(p);
    if (!t || t->s[0] != '%')
        return 0;
    p->ti++;
    uint32_t id;
    if (get_u32(p, t->s + 1, t->col + 1, &id))
        return -1;
    if (id != next)
        return perr(p, t->col, "definition %s gets id %%%u", t->s, next);
    return 0;
}

static int define_kernel(P *p, const char *name, int col, uint32_t *id)
{
    if (p->nkernels >= WR_TEXT_MAX_DEFS)
        return perr(p, col, "too many kernels");
    pend_def *d = pend_push(p, PK_KERNEL, col);
    if (!d || !(d->s1 = strdup(name)))
        return d ? perr(p, col, "out of memory") : -1;
    uint32_t k = ++p->nkernels;
    if (wr_text_map_put(&p->kernel_by_name, name, k))
        return perr(p, col, "out of memory");
    *id = k;
    return 0;
}

static int define_site(P *p, const char *file, uint32_t line, const char *func, uint64_t pc,
                       int col, uint32_t *id)
{
    if (p->nsites >= WR_TEXT_MAX_DEFS)
        return perr(p, col, "too many sites");
    pend_def *d = pend_push(p, PK_SITE, col);
    if (!d)
        return -1;
    d->a = pc;
    d->b = line;
    if (!(d->s1 = strdup(file)) || !(d->s2 = strdup(func)))
        return perr(p, col, "out of memory");
    uint32_t s = ++p->nsites;
    char key[2 * WR_TEXT_MAX_TOKEN + 32];
    wr_text_site_key(key, sizeof(key), file, line, func);
    if (wr_text_map_put(&p->site_by_key, key, s))
        return perr(p, col, "out of memory");
    *id = s;
    return 0;
}

static int parse_space(const char *s)
{
    if (!strcmp(s, "shared::cluster"))   /* PTX's name for dsmem */
        return WR_SPACE_DSMEM;
    for (unsigned i = 0; i <= WR_SPACE_MAX; i++)
        if (!strcmp(s, wr_space_name(i)))
            return (int)i;
    return -1;
}

/* alloc-spec = LABEL SPACE NUM ["at" NUM] ["name=" STRING]; defines it. */
static int alloc_spec(P *p, uint32_t *id)
{
    tok *lt = peek(p);
    if (!lt)
        return perr(p, end_col(p), "missing allocation label");
    p->ti++;
    const char *label = lt->s;
    int pct = label[0] == '%';
    if (pct) {
        uint32_t n;
        if (get_u32(p, label + 1, lt->col + 1, &n))
            return -1;
        if (n != p->nallocs + 1)
            return perr(p, lt->col, "definition %s gets id %%%u", label, p->nallocs + 1);
    } else if (!wr_text_is_ident(label)) {
        return perr(p, lt->col, "bad allocation label '%s'", shown(label));
    }
    tok *st = peek(p);
    if (!st)
        return perr(p, end_col(p), "missing address space (global, shared, local)");
    p->ti++;
    int space = parse_space(st->s);
    if (space < 0)
        return perr(p, st->col, "unknown address space '%s'", shown(st->s));
    if (space > WR_ALLOC_SPACE_MAX)
        return perr(p, st->col, "an allocation is global, shared or local, not '%s' (a block's "
                    "dsmem is its shared allocations)", shown(st->s));
    tok *zt = peek(p);
    if (!zt)
        return perr(p, end_col(p), "missing allocation size");
    p->ti++;
    uint64_t size, base;
    if (get_u64(p, zt->s, zt->col, UINT64_MAX, &size))
        return -1;
    int have_base = 0;
    tok *t = peek(p);
    if (t && !strcmp(t->s, "at")) {
        p->ti++;
        t = peek(p);
        if (!t)
            return perr(p, end_col(p), "missing address after 'at'");
        p->ti++;
        if (get_u64(p, t->s, t->col, UINT64_MAX, &base))
            return -1;
        have_base = 1;
    } else {
        base = p->next_base[space];
    }
    if (base + size < base)
        return perr(p, zt->col, "allocation wraps around the address space");
    char name[WR_TEXT_MAX_TOKEN + 1];
    if (pct)
        name[0] = 0;
    else
        snprintf(name, sizeof(name), "%s", label);
    int col;
    const char *nv = take_kv(p, "name=", &col);
    if (nv && get_string(p, nv, col, name))
        return -1;
    if (p->nallocs >= WR_TEXT_MAX_DEFS)
        return perr(p, lt->col, "too many allocations");
    pend_def *d = pend_push(p, PK_ALLOC, lt->col);
    if (!d)
        return -1;
    d->a = base;
    d->b = size;
    d->space = (uint8_t)space;
    if (!(d->s1 = strdup(name)))
        return perr(p, lt->col, "out of memory");
    uint32_t a = p->nallocs + 1;
    if (p->nallocs >= p->allocs_cap) {
        uint32_t nc = p->allocs_cap ? p->allocs_cap * 2 : 64;
        alloc_info *na = realloc(p->allocs, nc * sizeof(*na));
        if (!na)
            return perr(p, lt->col, "out of memory");
        p->allocs = na;
        p->allocs_cap = nc;
    }
    p->allocs[a - 1] = (alloc_info){base, size, (uint8_t)space};
    p->nallocs = a;
    if (!pct && wr_text_map_put(&p->alloc_by_label, label, a))
        return perr(p, lt->col, "out of memory");
    uint64_t end = base + size;
    uint64_t next = end > UINT64_MAX - 255 ? UINT64_MAX : (end + 255) & ~255ull;
    if (!have_base || next > p->next_base[space])
        p->next_base[space] = next;
    *id = a;
    return 0;
}

/* An allocation named by LABEL (IDENT or %N).  0 with error set if unknown. */
static uint32_t lookup_alloc(P *p, const char *label, int col)
{
    if (label[0] == '%') {
        uint32_t n;
        if (get_u32(p, label + 1, col + 1, &n))
            return 0;
        if (n == 0 || n > p->nallocs) {
            perr(p, col, "undefined allocation '%s'", shown(label));
            return 0;
        }
        return n;
    }
    uint32_t a = wr_text_map_get(&p->alloc_by_label, label);
    if (!a)
        perr(p, col, "undefined allocation '%s'", shown(label));
    return a;
}

static int module_finish(P *p);

static int module_start(P *p)
{
    tok *t0 = &p->toks[0];
    if (p->nmodules >= WR_TEXT_MAX_DEFS)
        return perr(p, t0->col, "too many modules");
    if (check_id(p, p->nmodules + 1))
        return -1;
    tok *nt = peek(p);
    if (!nt)
        return perr(p, end_col(p), "missing module name");
    p->ti++;
    char name[WR_TEXT_MAX_TOKEN + 1];
    if (get_string(p, nt->s, nt->col, name))
        return -1;
    tok *zt = peek(p);
    if (!zt)
        return perr(p, end_col(p), "missing module size");
    p->ti++;
    uint64_t size;
    if (get_u64(p, zt->s, zt->col, WR_TEXT_MAX_MODULE, &size))
        return -1;
    if (no_more(p))
        return -1;
    p->mod_name = strdup(name);
    if (!p->mod_name)
        return perr(p, t0->col, "out of memory");
    p->mod_size = size;
    p->mod_have = 0;
    p->mod_image = NULL;
    p->mod_active = 1;
    p->mod_line = p->lineno;
    p->mod_col = t0->col;
    return size ? 0 : module_finish(p);   /* an empty image has no image lines */
}

static int module_finish(P *p)
{
    pend_def *d = pend_push(p, PK_MODULE, 1);
    if (!d)
        return -1;
    d->s1 = p->mod_name;
    d->image = p->mod_image;
    d->a = p->mod_size;
    p->mod_name = NULL;
    p->mod_image = NULL;
    p->mod_active = 0;
    p->nmodules++;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int module_image_line(P *p)
{
    tok *t0 = &p->toks[0];
    if (strcmp(t0->s, "image")) {
        uint32_t l = p->lineno;
        p->lineno = p->mod_line;
        perr(p, p->mod_col, "module image incomplete (%llu of %llu bytes) before line %u",
             (unsigned long long)p->mod_have, (unsigned long long)p->mod_size, l);
        return -1;
    }
    tok *h = p->ntok > 1 ? &p->toks[1] : NULL;
    if (!h)
        return perr(p, end_col(p), "missing hex bytes after 'image'");
    if (p->ntok > 2)
        return perr(p, p->toks[2].col, "unexpected '%s'", shown(p->toks[2].s));
    size_t n = strlen(h->s);
    uint64_t want = p->mod_size - p->mod_have;
    uint64_t exp = want < WR_TEXT_IMAGE_LINE ? want : WR_TEXT_IMAGE_LINE;
    if (n != 2 * exp)
        return perr(p, h->col, "image line must hold %llu bytes (%llu hex digits)",
                    (unsigned long long)exp, (unsigned long long)(2 * exp));
    if (!p->mod_image) {
        p->mod_image = malloc(p->mod_size ? p->mod_size : 1);
        if (!p->mod_image)
            return perr(p, h->col, "out of memory");
    }
    for (size_t i = 0; i < n; i += 2) {
        int a = hexval(h->s[i]), b = hexval(h->s[i + 1]);
        if (a < 0 || b < 0)
            return perr(p, h->col + (int)i, "bad hex digit");
        p->mod_image[p->mod_have++] = (uint8_t)(a * 16 + b);
    }
    if (p->mod_have == p->mod_size)
        return module_finish(p);
    return 0;
}

static int definition(P *p)
{
    tok *kt = peek(p);
    if (!kt)
        return perr(p, end_col(p), "missing kind after 'def' (kernel, site, alloc, module)");
    p->ti++;
    if (!strcmp(kt->s, "kernel")) {
        if (check_id(p, p->nkernels + 1))
            return -1;
        tok *nt = peek(p);
        if (!nt)
            return perr(p, end_col(p), "missing kernel name");
        p->ti++;
        char name[WR_TEXT_MAX_TOKEN + 1];
        if (nt->s[0] == '"') {
            if (get_string(p, nt->s, nt->col, name))
                return -1;
        } else if (wr_text_is_ident(nt->s)) {
            snprintf(name, sizeof(name), "%s", nt->s);
        } else {
            return perr(p, nt->col, "bad kernel name '%s' (use a \"string\")", shown(nt->s));
        }
        if (no_more(p))
            return -1;
        uint32_t id;
        return define_kernel(p, name, nt->col, &id);
    }
    if (!strcmp(kt->s, "site")) {
        if (check_id(p, p->nsites + 1))
            return -1;
        tok *ft = peek(p);
        if (!ft)
            return perr(p, end_col(p), "missing site file");
        p->ti++;
        char file[WR_TEXT_MAX_TOKEN + 1], func[WR_TEXT_MAX_TOKEN + 1];
        if (get_string(p, ft->s, ft->col, file))
            return -1;
        tok *lt = peek(p);
        if (!lt)
            return perr(p, end_col(p), "missing site line");
        p->ti++;
        uint32_t line;
        if (get_u32(p, lt->s, lt->col, &line))
            return -1;
        func[0] = 0;
        tok *t = peek(p);
        if (t && t->s[0] == '"') {
            p->ti++;
            if (get_string(p, t->s, t->col, func))
                return -1;
        }
        uint64_t pc = 0;
        int col;
        const char *v = take_kv(p, "pc=", &col);
        if (v && get_u64(p, v, col, UINT64_MAX, &pc))
            return -1;
        if (no_more(p))
            return -1;
        uint32_t id;
        return define_site(p, file, line, func, pc, ft->col, &id);
    }
    if (!strcmp(kt->s, "alloc")) {
        uint32_t id;
        if (alloc_spec(p, &id))
            return -1;
        return no_more(p);
    }
    if (!strcmp(kt->s, "module"))
        return module_start(p);
    return perr(p, kt->col, "unknown definition kind '%s' (kernel, site, alloc, module)", shown(kt->s));
}

/* ---- launches ------------------------------------------------------------ */

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static launch_info *find_launch(P *p, uint32_t id)
{
    if (!p->launch_cap)
        return NULL;
    for (size_t i = (id * 2654435761u) & (p->launch_cap - 1);; i = (i + 1) & (p->launch_cap - 1)) {
        if (!p->launches[i].id)
            return NULL;
        if (p->launches[i].id == id)
            return &p->launches[i];
    }
}

static int add_launch(P *p, const launch_info *li, int col)
{
    if (p->nlaunches >= WR_TEXT_MAX_LAUNCHES)
        return perr(p, col, "too many launches");
    if ((p->nlaunches + 1) * 2 > p->launch_cap) {
        size_t nc = p->launch_cap ? p->launch_cap * 2 : 64;
        launch_info *nl = calloc(nc, sizeof(*nl));
        if (!nl)
            return perr(p, col, "out of memory");
        for (size_t i = 0; i < p->launch_cap; i++) {
            if (!p->launches[i].id)
                continue;
            size_t j = (p->launches[i].id * 2654435761u) & (nc - 1);
            while (nl[j].id)
                j = (j + 1) & (nc - 1);
            nl[j] = p->launches[i];
        }
        free(p->launches);
        p->launches = nl;
        p->launch_cap = nc;
    }
    size_t j = (li->id * 2654435761u) & (p->launch_cap - 1);
    while (p->launches[j].id)
        j = (j + 1) & (p->launch_cap - 1);
    p->launches[j] = *li;
    p->nlaunches++;
    p->last_launch = li->id;
    if (li->id > p->max_launch)
        p->max_launch = li->id;
    return 0;
}

/* ["L"N]: the launch id, default the most recent one. */
static int opt_launch(P *p, uint32_t *id, launch_info **li)
{
    tok *t = peek(p);
    int col = t ? t->col : end_col(p);
    if (t && t->s[0] == 'L' && t->s[1] >= '0' && t->s[1] <= '9') {
        p->ti++;
        if (get_u32(p, t->s + 1, t->col + 1, id))
            return -1;
    } else {
        if (!p->last_launch)
            return perr(p, col, "no launch yet (add a 'launch' line or write L<n>)");
        *id = p->last_launch;
    }
    *li = find_launch(p, *id);
    if (!*li)
        return perr(p, col, "launch L%u is not defined", *id);
    return 0;
}

/* "<c>"N with a bound. */
static int letter_num(P *p, char c, const char *what, uint64_t bound, uint32_t *out)
{
    tok *t = peek(p);
    if (!t || t->s[0] != c || !(t->s[1] >= '0' && t->s[1] <= '9'))
        return perr(p, t ? t->col : end_col(p), "missing %s (%c<n>)", what, c);
    p->ti++;
    if (get_u32(p, t->s + 1, t->col + 1, out))
        return -1;
    if (*out >= bound)
        return perr(p, t->col, "%s %u out of range (launch has %llu)", what, *out,
                    (unsigned long long)bound);
    return 0;
}

static int parse_lanes(P *p, const char *s, int col, uint32_t *mask)
{
    uint32_t m = 0;
    const char *q = s;
    while (*q) {
        char buf[32];
        size_t n = strcspn(q, ",");
        if (n == 0 || n >= sizeof(buf))
            return perr(p, col + (int)(q - s), "bad lane list '%s'", shown(s));
        memcpy(buf, q, n);
        buf[n] = 0;
        char range[32];   /* as written, for the message: the dash is cut below */
        memcpy(range, buf, n + 1);
        char *dash = strchr(buf, '-');
        uint64_t lo, hi;
        if (dash)
            *dash = 0;
        if (num_u64(buf, &lo) || (dash ? num_u64(dash + 1, &hi) : (hi = lo, 0)) || lo > hi || hi > 31)
            return perr(p, col + (int)(q - s), "bad lane range '%s' (lanes are 0..31)", shown(range));
        for (uint64_t l = lo; l <= hi; l++)
            m |= 1u << l;
        q += n;
        if (*q == ',') {
            q++;
            if (!*q)
                return perr(p, col + (int)(q - s), "bad lane list '%s'", shown(s));
        }
    }
    *mask = m;
    return 0;
}

/* [mask]: default full. */
static int opt_mask(P *p, uint32_t *mask)
{
    int col;
    const char *v;
    *mask = WR_FULL_MASK;
    if ((v = take_kv(p, "mask=", &col)))
        return get_u32(p, v, col, mask);
    if ((v = take_kv(p, "lane=", &col))) {
        uint64_t l;
        if (get_u64(p, v, col, 31, &l))
            return -1;
        *mask = 1u << l;
        return 0;
    }
    if ((v = take_kv(p, "lanes=", &col)))
        return parse_lanes(p, v, col, mask);
    return 0;
}

typedef struct thread_ref {
    uint32_t launch, block, warp, mask;
    launch_info *li;
} thread_ref;

static int thread_spec(P *p, thread_ref *t, int need_warp)
{
    if (opt_launch(p, &t->launch, &t->li))
        return -1;
    if (letter_num(p, 'b', "block", t->li->blocks, &t->block))
        return -1;
    if (!need_warp)
        return 0;
    uint64_t warps = (t->li->threads + 31) / 32;
    if (letter_num(p, 'w', "warp", warps, &t->warp))
        return -1;
    return opt_mask(p, &t->mask);
}

/* ---- sites --------------------------------------------------------------- */

static int opt_site(P *p, uint32_t *site)
{
    *site = 0;
    tok *t = peek(p);
    if (!t || t->s[0] != '@')
        return 0;
    p->ti++;
    const char *s = t->s + 1;
    if (s[0] == '%') {
        if (get_u32(p, s + 1, t->col + 2, site))
            return -1;
        if (*site == 0 || *site > p->nsites)
            return perr(p, t->col, "undefined site '%s'", shown(t->s));
        return 0;
    }
    const char *c1 = strchr(s, ':');
    if (!c1 || c1 == s)
        return perr(p, t->col, "bad site '%s' (expected @FILE:LINE[:FUNCTION])", shown(t->s));
    char file[WR_TEXT_MAX_TOKEN + 1], num[32];
    memcpy(file, s, (size_t)(c1 - s));
    file[c1 - s] = 0;
    const char *ls = c1 + 1;
    const char *c2 = strchr(ls, ':');
    size_t ln = c2 ? (size_t)(c2 - ls) : strlen(ls);
    if (ln == 0 || ln >= sizeof(num))
        return perr(p, t->col + (int)(ls - t->s), "bad line number in site '%s'", shown(t->s));
    memcpy(num, ls, ln);
    num[ln] = 0;
    uint32_t line;
    if (get_u32(p, num, t->col + (int)(ls - t->s), &line))
        return -1;
    const char *func = c2 ? c2 + 1 : "";
    char key[2 * WR_TEXT_MAX_TOKEN + 32];
    wr_text_site_key(key, sizeof(key), file, line, func);
    *site = wr_text_map_get(&p->site_by_key, key);
    if (*site)
        return 0;
    return define_site(p, file, line, func, 0, t->col, site);
}

/* ---- addresses ----------------------------------------------------------- */

/* ADDR: NUM | LABEL[NUM] | LABEL[NUM..] | LABEL [+NUM].  *range set when the
 * "..]" form was used (only allowed when range != NULL). */
static int parse_addr(P *p, const char *s, int col, unsigned size, uint64_t *out, int *range,
                      uint32_t *alloc_out)
{
    if (range)
        *range = 0;
    if (alloc_out)
        *alloc_out = 0;
    if (s[0] >= '0' && s[0] <= '9')
        return get_u64(p, s, col, UINT64_MAX, out);
    if (!(s[0] == '%' || s[0] == '_' || isalpha((unsigned char)s[0])))
        return perr(p, col, "bad address '%s'", shown(s));
    char label[WR_TEXT_MAX_TOKEN + 1];
    size_t n = 1;
    while (s[n] && (isalnum((unsigned char)s[n]) || s[n] == '_'))
        n++;
    memcpy(label, s, n);
    label[n] = 0;
    if (label[0] == '%' && n == 1)
        return perr(p, col, "bad address '%s'", shown(s));
    uint32_t a = lookup_alloc(p, label, col);
    if (!a)
        return -1;
    const alloc_info *ai = &p->allocs[a - 1];
    uint64_t off = 0;
    const char *r = s + n;
    int rcol = col + (int)n;
    if (*r == '[') {
        const char *close = strchr(r, ']');
        if (!close || close[1])
            return perr(p, rcol, "bad index in '%s' (expected LABEL[N])", shown(s));
        char num[64];
        size_t ln = (size_t)(close - r - 1);
        int is_range = 0;
        if (ln >= 2 && r[ln - 1] == '.' && r[ln] == '.') {
            if (!range)
                return perr(p, rcol, "'..' range not allowed here");
            is_range = 1;
            ln -= 2;
        }
        if (ln == 0 || ln >= sizeof(num))
            return perr(p, rcol + 1, "bad index in '%s'", shown(s));
        memcpy(num, r + 1, ln);
        num[ln] = 0;
        uint64_t idx;
        if (get_u64(p, num, rcol + 1, UINT64_MAX, &idx))
            return -1;
        if (size && idx > UINT64_MAX / size)
            return perr(p, rcol + 1, "index out of range '%s'", shown(num));
        off = idx * size;
        if (range)
            *range = is_range;
    } else if (*r == '+') {
        if (get_u64(p, r + 1, rcol + 1, UINT64_MAX, &off))
            return -1;
    } else if (*r) {
        return perr(p, rcol, "bad address '%s'", shown(s));
    }
    if (off >= ai->size)
        return perr(p, col, "offset %llu is outside allocation '%s' (%llu bytes)",
                    (unsigned long long)off, label, (unsigned long long)ai->size);
    *out = ai->base + off;
    if (alloc_out)
        *alloc_out = a;
    return 0;
}

/* ---- distributed shared memory ------------------------------------------ */

int wr_text_dsmem_strided_fits(const wr_access *a)
{
    const uint64_t room = WR_SHARED_LIMIT - a->size;   /* the highest offset it may start at */
    const uint32_t off0 = wr_dsmem_offset(a->base);
    if (off0 > room)
        return 0;
    if (!a->active_mask)
        return 1;
    /* exact, not modulo 2^64: a stride that wraps all the way round must
     * not pass for one that stays in the block */
    const int64_t last = 31 - __builtin_clz(a->active_mask);
    int64_t off;
    if (__builtin_mul_overflow(last, a->stride, &off) || __builtin_add_overflow(off, (int64_t)off0, &off))
        return 0;
    return off >= 0 && (uint64_t)off <= room;
}

/* Length of an owner-block prefix "b"N":" at the start of s (N as in a
 * thread's "b"N, decimal or hex), 0 if none.  No ADDR has a ':', so the
 * prefix is unambiguous. */
static size_t owner_prefix_len(const char *s)
{
    if (s[0] != 'b' || !isdigit((unsigned char)s[1]))
        return 0;
    size_t n = 1;
    while (isalnum((unsigned char)s[n]))
        n++;
    return s[n] == ':' ? n + 1 : 0;
}

/* Are linear blocks a and b (below the grid size) in the same thread-block
 * cluster? */
static int same_cluster(const launch_info *li, uint32_t a, uint32_t b)
{
    return wr_cluster_of(li->grid, li->cluster, a) == wr_cluster_of(li->grid, li->cluster, b);
}

/* One address of an access.  A dsmem address is "b"N":"ADDR: the owner
 * block N, which must share the issuing block's cluster, and ADDR, an
 * offset in N's shared memory that the access must fit below
 * WR_SHARED_LIMIT; the
 * result is wr_dsmem_addr(N, offset).  Other spaces take ADDR alone.
 * *range as for parse_addr. */
static int access_addr(P *p, const tok *t, const wr_access *a, const thread_ref *th, uint64_t *out,
                       int *range)
{
    const size_t pre = owner_prefix_len(t->s);
    if (a->space != WR_SPACE_DSMEM) {
        if (pre)
            return perr(p, t->col, "owner block '%.*s' on a %s access (only dsmem addresses have one)",
                        (int)(pre - 1), t->s, wr_space_name(a->space));
        return parse_addr(p, t->s, t->col, a->size, out, range, NULL);
    }
    if (!pre)
        return perr(p, t->col, "a dsmem address needs its owner block: b<n>:ADDR, got '%s'", shown(t->s));
    char num[WR_TEXT_MAX_TOKEN + 1];
    memcpy(num, t->s + 1, pre - 2);
    num[pre - 2] = 0;
    uint32_t owner;
    if (get_u32(p, num, t->col + 1, &owner))
        return -1;
    if (owner >= th->li->blocks)
        return perr(p, t->col, "owner block %u out of range (launch has %llu)", owner,
                    (unsigned long long)th->li->blocks);
    if (!same_cluster(th->li, th->block, owner))
        return perr(p, t->col, "owner block %u is not in the cluster of block %u (cluster=%u,%u,%u)",
                    owner, th->block, th->li->cluster[0], th->li->cluster[1], th->li->cluster[2]);
    const int acol = t->col + (int)pre;
    uint64_t off;
    if (parse_addr(p, t->s + pre, acol, a->size, &off, range, NULL))
        return -1;
    if (off >= WR_SHARED_LIMIT)
        return perr(p, acol, "dsmem offset 0x%llx is past a block's 16 MiB of shared memory",
                    (unsigned long long)off);
    if (off + a->size > WR_SHARED_LIMIT)
        return perr(p, acol, "dsmem access of %u bytes at offset 0x%llx runs past a block's 16 MiB "
                    "of shared memory", a->size, (unsigned long long)off);
    *out = wr_dsmem_addr(owner, (uint32_t)off);
    return 0;
}

/* ---- events -------------------------------------------------------------- */

static int parse_scope(const char *s)
{
    if (!strcmp(s, "block") || !strcmp(s, "cta")) return WR_SCOPE_BLOCK;
    if (!strcmp(s, "cluster")) return WR_SCOPE_CLUSTER;
    if (!strcmp(s, "device") || !strcmp(s, "gpu")) return WR_SCOPE_DEVICE;
    if (!strcmp(s, "system") || !strcmp(s, "sys")) return WR_SCOPE_SYSTEM;
    return -1;
}

static int parse_order(const char *s)
{
    if (!strcmp(s, "volatile")) return WR_ORDER_RELAXED;
    for (unsigned i = 0; i <= WR_ORDER_MAX; i++)
        if (!strcmp(s, wr_order_name(i)))
            return (int)i;
    return -1;
}

static int parse_aop(const char *s)
{
    for (unsigned i = 1; i <= WR_AOP_MAX_ID; i++)
        if (!strcmp(s, wr_atomic_op_name(i)))
            return (int)i;
    return -1;
}

static int access_line(P *p, const char *base_op)
{
    tok *t0 = &p->toks[0];
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = WR_EV_ACCESS;
    wr_access *a = &ev.u.access;
    int op;
    const char *mods;
    if (!strcmp(base_op, "ld")) op = WR_OP_LOAD;
    else if (!strcmp(base_op, "st")) op = WR_OP_STORE;
    else op = WR_OP_ATOMIC_RMW;
    mods = t0->s + strlen(base_op);
    int aop = -1, order = -1, scope = -1, space = -1, size = -1;
    int first = 1;
    char buf[WR_TEXT_MAX_TOKEN + 1];
    snprintf(buf, sizeof(buf), "%s", mods);
    char *save = NULL;
    int mcol = t0->col + (int)strlen(base_op) + 1;
    for (char *m = strtok_r(buf, ".", &save); m; m = strtok_r(NULL, ".", &save), first = 0) {
        int col = mcol + (int)(m - buf) - 1;
        int v;
        if (first && op != WR_OP_ATOMIC_RMW && !strcmp(m, "atomic")) {
            op = op == WR_OP_LOAD ? WR_OP_ATOMIC_LOAD : WR_OP_ATOMIC_STORE;
            continue;
        }
        if ((v = parse_aop(m)) >= 0) {
            if (aop >= 0) return perr(p, col, "atomic operation given twice");
            aop = v;
        } else if ((v = parse_order(m)) >= 0) {
            if (order >= 0) return perr(p, col, "memory order given twice");
            order = v;
        } else if ((v = parse_scope(m)) >= 0) {
            if (scope >= 0) return perr(p, col, "scope given twice");
            scope = v;
        } else if ((v = parse_space(m)) >= 0) {
            if (space >= 0) return perr(p, col, "address space given twice");
            space = v;
        } else if (!strcmp(m, "1") || !strcmp(m, "2") || !strcmp(m, "4") || !strcmp(m, "8") ||
                   !strcmp(m, "16")) {
            if (size >= 0) return perr(p, col, "size given twice");
            size = atoi(m);
        } else {
            return perr(p, col, "unknown modifier '%s' of '%s'", shown(m), base_op);
        }
    }
    if (op == WR_OP_ATOMIC_RMW && aop < 0)
        return perr(p, t0->col, "'atom' needs an operation (atom.add, atom.cas, ...)");
    int atomic = wr_op_is_atomic((uint8_t)op);
    a->op = (uint8_t)op;
    a->atomic_op = (uint8_t)(aop < 0 ? WR_AOP_NONE : aop);
    a->order = (uint8_t)(order >= 0 ? order : atomic ? WR_ORDER_RELAXED : WR_ORDER_WEAK);
    a->scope = (uint8_t)(scope >= 0 ? scope : atomic ? WR_SCOPE_DEVICE : WR_SCOPE_NONE);
    a->space = (uint8_t)(space >= 0 ? space : WR_SPACE_GLOBAL);
    a->size = (uint8_t)(size >= 0 ? size : 4);

    thread_ref th;
    if (thread_spec(p, &th, 1))
        return -1;
    a->launch = th.launch;
    a->block = th.block;
    a->warp = th.warp;
    a->active_mask = th.mask;

    uint64_t lanes[WR_WARP_SIZE];
    tok *at = peek(p);
    if (!at || at->s[0] == '@' || strchr(at->s, '='))
        return perr(p, at ? at->col : end_col(p), "missing address");
    p->ti++;
    if (!strcmp(at->s, "{")) {
        memset(lanes, 0, sizeof(lanes));
        unsigned lane = 0;
        for (;;) {
            tok *t = peek(p);
            if (!t)
                return perr(p, end_col(p), "missing '}'");
            p->ti++;
            if (!strcmp(t->s, "}"))
                break;
            while (lane < WR_WARP_SIZE && !(a->active_mask >> lane & 1))
                lane++;
            if (lane >= WR_WARP_SIZE)
                return perr(p, t->col, "more addresses than active lanes (mask 0x%x)", a->active_mask);
            if (access_addr(p, t, a, &th, &lanes[lane], NULL))
                return -1;
            lane++;
        }
        while (lane < WR_WARP_SIZE && !(a->active_mask >> lane & 1))
            lane++;
        if (lane < WR_WARP_SIZE)
            return perr(p, at->col, "fewer addresses than active lanes (mask 0x%x)", a->active_mask);
        a->addr_mode = WR_ADDR_VECTOR;
        a->lane_addr = lanes;
    } else {
        int range;
        if (access_addr(p, at, a, &th, &a->base, &range))
            return -1;
        a->addr_mode = range ? WR_ADDR_STRIDED : WR_ADDR_UNIFORM;
        a->stride = range ? a->size : 0;
        int col = at->col + (int)owner_prefix_len(at->s);
        const char *v = take_kv(p, "stride=", &col);
        if (v) {
            if (range)
                return perr(p, col, "stride given twice ('..' already sets it)");
            if (get_i64(p, v, col, &a->stride))
                return -1;
            a->addr_mode = WR_ADDR_STRIDED;
        }
        /* lane 0 fits (access_addr); the last active lane must too */
        if (a->space == WR_SPACE_DSMEM && a->addr_mode == WR_ADDR_STRIDED && !wr_text_dsmem_strided_fits(a))
            return perr(p, col, "lane %d of the strided dsmem access falls outside block %u's 16 MiB of shared memory",
                        a->active_mask ? 31 - __builtin_clz(a->active_mask) : 0, wr_dsmem_block(a->base));
    }
    int col;
    const char *v = take_kv(p, "cas=", &col);
    if (v) {
        if (get_u32(p, v, col, &a->cas_success))
            return -1;
    } else if (a->atomic_op == WR_AOP_CAS) {
        a->cas_success = a->active_mask;
    }
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    return emit(p, &ev, t0->col);
}

/* The barrier a directive names: its wr_barrier_scope, and its
 * wr_barrier_mode in *mode; -1 if s names none.  The first spelling of each
 * (scope, mode) is the one dump writes. */
static int barrier_word(const char *s, int *mode)
{
    static const struct { const char *w; uint8_t scope, mode; } words[] = {
        {"barrier", WR_BAR_BLOCK, WR_BARMODE_SYNC}, {"bar", WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {"barrier.block", WR_BAR_BLOCK, WR_BARMODE_SYNC}, {"bar.block", WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {"barrier.cluster", WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {"bar.cluster", WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {"cluster_sync", WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {"barrier.grid", WR_BAR_GRID, WR_BARMODE_SYNC}, {"bar.grid", WR_BAR_GRID, WR_BARMODE_SYNC},
        {"grid_sync", WR_BAR_GRID, WR_BARMODE_SYNC},
        /* split barriers (format 1.3): PTX's own spellings, and names like
         * cluster_sync's for the cluster's */
        {"bar.arrive", WR_BAR_BLOCK, WR_BARMODE_ARRIVE},
        {"barrier.arrive", WR_BAR_BLOCK, WR_BARMODE_ARRIVE},
        {"barrier.cta.arrive", WR_BAR_BLOCK, WR_BARMODE_ARRIVE},
        {"barrier.cluster.arrive", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE},
        {"bar.cluster.arrive", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE},
        {"cluster_arrive", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE},
        {"barrier.cluster.arrive.relaxed", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {"bar.cluster.arrive.relaxed", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {"cluster_arrive_relaxed", WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {"barrier.cluster.wait", WR_BAR_CLUSTER, WR_BARMODE_WAIT},
        {"bar.cluster.wait", WR_BAR_CLUSTER, WR_BARMODE_WAIT},
        {"cluster_wait", WR_BAR_CLUSTER, WR_BARMODE_WAIT},
        {"barrier.grid.arrive", WR_BAR_GRID, WR_BARMODE_ARRIVE},
        {"bar.grid.arrive", WR_BAR_GRID, WR_BARMODE_ARRIVE},
        {"barrier.grid.wait", WR_BAR_GRID, WR_BARMODE_WAIT},
        {"bar.grid.wait", WR_BAR_GRID, WR_BARMODE_WAIT},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcmp(s, words[i].w)) {
            if (mode)
                *mode = words[i].mode;
            return words[i].scope;
        }
    return -1;
}

static int sync_line(P *p, int kind)
{
    tok *t0 = &p->toks[0];
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = (uint8_t)kind;
    thread_ref th;
    if (kind == WR_EV_FENCE) {
        int scope = -1, order = -1;
        char buf[WR_TEXT_MAX_TOKEN + 1];
        snprintf(buf, sizeof(buf), "%s", t0->s + 5);
        char *save = NULL;
        for (char *m = strtok_r(buf, ".", &save); m; m = strtok_r(NULL, ".", &save)) {
            int col = t0->col + 5 + (int)(m - buf);
            int v;
            if (!strcmp(m, "sc") || !strcmp(m, "acq_rel")) {
                if (order >= 0) return perr(p, col, "fence order given twice");
                order = m[0] == 's' ? WR_ORDER_SC : WR_ORDER_ACQ_REL;
            } else if ((v = parse_scope(m)) >= 0) {
                if (scope >= 0) return perr(p, col, "scope given twice");
                scope = v;
            } else {
                return perr(p, col, "unknown modifier '%s' of 'fence'", shown(m));
            }
        }
        if (thread_spec(p, &th, 1))
            return -1;
        ev.u.fence = (wr_fence){th.launch, th.block, th.warp, th.mask,
                                (uint8_t)(scope >= 0 ? scope : WR_SCOPE_DEVICE),
                                (uint8_t)(order >= 0 ? order : WR_ORDER_SC)};
    } else if (kind == WR_EV_BARRIER) {
        int mode = WR_BARMODE_SYNC, scope = barrier_word(t0->s, &mode);
        if (thread_spec(p, &th, 1))
            return -1;
        /* by default every thread the barrier gathers: the block's, the
         * cluster's or the grid's, spelled out (expected=0 leaves it to the
         * analyzer); a wait counts no thread (event.h) */
        uint64_t threads = th.li->threads;
        if (scope == WR_BAR_CLUSTER)
            threads = sat_mul(threads, th.li->cluster_blocks);
        else if (scope == WR_BAR_GRID)
            threads = sat_mul(threads, th.li->blocks);
        if (mode == WR_BARMODE_WAIT)
            threads = 0;
        uint32_t id = 0, expected = threads > UINT32_MAX ? UINT32_MAX : (uint32_t)threads;
        int col;
        const char *v;
        /* a wait waits for the phase its warp's last arrive joined: neither
         * an id nor a count of its own */
        if ((v = take_kv(p, "id=", &col)) && mode == WR_BARMODE_WAIT)
            return perr(p, col - 3, "a barrier wait has no id");
        if (v && get_u32(p, v, col, &id))
            return -1;
        if (v && id && scope != WR_BAR_BLOCK)
            return perr(p, col, "cluster and grid barriers have no id");
        if ((v = take_kv(p, "expected=", &col)) && mode == WR_BARMODE_WAIT)
            return perr(p, col - 9, "a barrier wait has no expected= (it counts no thread)");
        if (v && get_u32(p, v, col, &expected))
            return -1;
        if (scope == WR_BAR_BLOCK && mode == WR_BARMODE_ARRIVE) {
            /* PTX's bar.arrive always names its thread count (a producer /
             * consumer pair rarely gathers the whole block), and so must the
             * record (event.h): no default from the launch */
            if (!v)
                return perr(p, peek(p) ? peek(p)->col : end_col(p),
                            "missing field 'expected=' (%s names its thread count)", t0->s);
            if (!expected)
                return perr(p, col, "%s needs a thread count: expected=0 is not one", t0->s);
        }
        ev.u.barrier = (wr_barrier){th.launch, th.block, th.warp, th.mask, id, expected,
                                    (uint8_t)scope, (uint8_t)mode};
    } else if (kind == WR_EV_WARP_SYNC) {
        if (thread_spec(p, &th, 1))
            return -1;
        ev.u.warp_sync = (wr_warp_sync){th.launch, th.block, th.warp, th.mask};
    } else { /* block enter / exit */
        if (thread_spec(p, &th, 0))
            return -1;
        ev.u.block = (wr_block_mark){th.launch, th.block};
    }
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    return emit(p, &ev, t0->col);
}

/* The mbarrier directive s names (format 1.3, scope WR_BAR_MBARRIER): its
 * wr_barrier_mode, -1 if s names none.  The first spelling of each mode is
 * the one dump writes. */
static int mbarrier_word(const char *s)
{
    static const struct { const char *w; uint8_t mode; } words[] = {
        {"mbarrier.init", WR_BARMODE_INIT},
        {"mbarrier.arrive", WR_BARMODE_ARRIVE},
        {"mbarrier.arrive.release", WR_BARMODE_ARRIVE},
        {"mbarrier.arrive.relaxed", WR_BARMODE_ARRIVE_RELAXED},
        /* only a wait that succeeded is an event (event.h): whichever
         * instruction tested the phase, the record is the same */
        {"mbarrier.wait", WR_BARMODE_WAIT},
        {"mbarrier.try_wait", WR_BARMODE_WAIT},
        {"mbarrier.test_wait", WR_BARMODE_WAIT},
        {"mbarrier.try_wait.parity", WR_BARMODE_WAIT},
        {"mbarrier.test_wait.parity", WR_BARMODE_WAIT},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcmp(s, words[i].w))
            return words[i].mode;
    return -1;
}

/* An mbarrier's address: an offset in the issuing block's own shared
 * memory, written as an access writes one (a number, LABEL[i] with 8-byte
 * elements, LABEL+N), 8-byte aligned and below WR_SHARED_LIMIT as the
 * record must be (wr_barrier_mode_problem). */
static int mbarrier_addr(P *p, const tok *t, uint32_t *out)
{
    const size_t pre = owner_prefix_len(t->s);
    if (pre)
        return perr(p, t->col, "owner block '%.*s' on an mbarrier (an mbarrier is in the issuing "
                    "block's own shared memory)", (int)(pre - 1), t->s);
    uint64_t off = 0;
    uint32_t alloc;
    if (parse_addr(p, t->s, t->col, 8, &off, NULL, &alloc))
        return -1;
    /* a label of another space would pass its base off as a shared offset */
    if (alloc && p->allocs[alloc - 1].space != WR_SPACE_SHARED)
        return perr(p, t->col, "'%s' is in a %s allocation: an mbarrier is in shared memory",
                    shown(t->s), wr_space_name(p->allocs[alloc - 1].space));
    if (off >= WR_SHARED_LIMIT)
        return perr(p, t->col, "mbarrier address 0x%llx is past a block's 16 MiB of shared memory",
                    (unsigned long long)off);
    if (off % 8)
        return perr(p, t->col, "mbarrier address 0x%llx is not 8-byte aligned",
                    (unsigned long long)off);
    *out = (uint32_t)off;
    return 0;
}

/* mbarrier.init / arrive[.relaxed] / wait THREAD ADDR [count= | parity=]:
 * the record's expected is the init's count (required), the arrive's count
 * per lane (optional, 0 when absent: one arrival) or the wait's phase
 * parity (required). */
static int mbarrier_line(P *p)
{
    tok *t0 = &p->toks[0];
    const int mode = mbarrier_word(t0->s);
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = WR_EV_BARRIER;
    thread_ref th;
    if (thread_spec(p, &th, 1))
        return -1;
    tok *at = peek(p);
    if (!at || at->s[0] == '@' || strchr(at->s, '='))
        return perr(p, at ? at->col : end_col(p), "missing address (the mbarrier's shared memory offset)");
    p->ti++;
    uint32_t off = 0;
    if (mbarrier_addr(p, at, &off))
        return -1;
    const int is_wait = mode == WR_BARMODE_WAIT;
    const char *key = is_wait ? "parity=" : "count=";
    int col;
    const char *v = take_kv(p, key, &col);
    uint32_t val = 0;
    if (!v && mode != WR_BARMODE_ARRIVE && mode != WR_BARMODE_ARRIVE_RELAXED)
        return perr(p, peek(p) ? peek(p)->col : end_col(p), "missing field '%s' (%s)", key,
                    is_wait ? "a wait names the parity of the phase it waited for"
                            : "mbarrier.init names the arrivals of each phase");
    if (v && get_u32(p, v, col, &val))
        return -1;
    if (v && is_wait && val > 1)
        return perr(p, col, "parity %u is not 0 or 1", val);
    /* an arrive without count= arrives once: count=0 would be no count at
     * all (PTX's count operand is 1 .. 2^20 - 1, as init's) */
    if (v && !is_wait && !val && mode != WR_BARMODE_INIT)
        return perr(p, col, "count=0 is no count (1 .. %u; leave count= out for one arrival)",
                    (unsigned)WR_MBARRIER_COUNT_MAX);
    if (v && !is_wait && (!val || val > WR_MBARRIER_COUNT_MAX))
        return perr(p, col, "count %u out of range (1 .. %u)", val, (unsigned)WR_MBARRIER_COUNT_MAX);
    /* fields of the other directives, named rather than "unexpected" */
    tok *t = peek(p);
    if (t && !strncmp(t->s, is_wait ? "count=" : "parity=", is_wait ? 6 : 7))
        return perr(p, t->col, is_wait ? "%s has no count= (a wait counts no arrival)"
                                       : "%s has no parity= (only a wait names a phase)", t0->s);
    if (t && (!strncmp(t->s, "id=", 3) || !strncmp(t->s, "expected=", 9)))
        return perr(p, t->col, "an mbarrier has no %.*s (its address names it; count= or parity= "
                    "is its number)", (int)(strchr(t->s, '=') - t->s + 1), t->s);
    ev.u.barrier = (wr_barrier){th.launch, th.block, th.warp, th.mask, off, val,
                                WR_BAR_MBARRIER, (uint8_t)mode};
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    return emit(p, &ev, t0->col);
}

static int parse_dim(P *p, const char *s, int col, uint32_t d[3])
{
    d[0] = d[1] = d[2] = 1;
    char buf[128];
    if (strlen(s) >= sizeof(buf))
        return perr(p, col, "bad dimensions '%s'", shown(s));
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    int i = 0;
    if (!buf[0] || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
        return perr(p, col, "bad dimensions '%s' (X[,Y[,Z]])", shown(s));
    for (char *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save), i++) {
        if (i >= 3)
            return perr(p, col, "more than 3 dimensions in '%s'", shown(s));
        if (get_u32(p, c, col + (int)(c - buf), &d[i]))
            return -1;
        if (!d[i])
            return perr(p, col + (int)(c - buf), "dimension must not be 0");
    }
    return 0;
}

static int launch_line(P *p)
{
    tok *t0 = &p->toks[0];
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = WR_EV_KERNEL_LAUNCH;
    wr_launch *l = &ev.u.launch;
    tok *t = peek(p);
    if (t && t->s[0] == 'L' && t->s[1] >= '0' && t->s[1] <= '9') {
        p->ti++;
        if (get_u32(p, t->s + 1, t->col + 1, &l->launch))
            return -1;
        if (!l->launch)
            return perr(p, t->col, "launch ids start at 1");
        if (find_launch(p, l->launch))
            return perr(p, t->col, "launch L%u is already defined", l->launch);
    } else {
        if (p->max_launch == UINT32_MAX)
            return perr(p, t0->col, "no launch id left");
        l->launch = p->max_launch + 1;
    }
    t = peek(p);
    if (!t || strchr(t->s, '=') || t->s[0] == '@')
        return perr(p, t ? t->col : end_col(p), "missing kernel name");
    p->ti++;
    if (t->s[0] == '%') {
        if (get_u32(p, t->s + 1, t->col + 1, &l->kernel))
            return -1;
        if (!l->kernel || l->kernel > p->nkernels)
            return perr(p, t->col, "undefined kernel '%s'", shown(t->s));
    } else {
        char name[WR_TEXT_MAX_TOKEN + 1];
        if (t->s[0] == '"') {
            if (get_string(p, t->s, t->col, name))
                return -1;
        } else if (wr_text_is_ident(t->s)) {
            snprintf(name, sizeof(name), "%s", t->s);
        } else {
            return perr(p, t->col, "bad kernel name '%s' (use a \"string\")", shown(t->s));
        }
        l->kernel = wr_text_map_get(&p->kernel_by_name, name);
        if (!l->kernel && define_kernel(p, name, t->col, &l->kernel))
            return -1;
    }
    int col;
    const char *v = take_kv(p, "grid=", &col);
    if (!v)
        return perr(p, peek(p) ? peek(p)->col : end_col(p), "missing field 'grid='");
    if (parse_dim(p, v, col, l->grid))
        return -1;
    v = take_kv(p, "block=", &col);
    if (!v)
        return perr(p, peek(p) ? peek(p)->col : end_col(p), "missing field 'block='");
    if (parse_dim(p, v, col, l->block_dim))
        return -1;
    l->cluster[0] = l->cluster[1] = l->cluster[2] = 1;
    if ((v = take_kv(p, "cluster=", &col)) && parse_dim(p, v, col, l->cluster))
        return -1;
    if ((v = take_kv(p, "shared=", &col)) && get_u32(p, v, col, &l->shared_bytes))
        return -1;
    if ((v = take_kv(p, "stream=", &col)) && get_u32(p, v, col, &l->stream))
        return -1;
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    launch_info li = {
        .id = l->launch,
        .blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2],
        .threads = (uint64_t)l->block_dim[0] * l->block_dim[1] * l->block_dim[2],
        /* saturated like the default expected= of a cluster barrier, its
         * only reader: the text accepts any u32 cluster dimensions */
        .cluster_blocks = sat_mul(sat_mul(l->cluster[0], l->cluster[1]), l->cluster[2]),
    };
    memcpy(li.grid, l->grid, sizeof(li.grid));
    memcpy(li.cluster, l->cluster, sizeof(li.cluster));
    if (add_launch(p, &li, t0->col))
        return -1;
    return emit(p, &ev, t0->col);
}

/* Required key=value u32 field. */
static int req_u32(P *p, const char *key, uint32_t *out)
{
    int col;
    const char *v = take_kv(p, key, &col);
    if (!v)
        return perr(p, peek(p) ? peek(p)->col : end_col(p), "missing field '%s'", key);
    return get_u32(p, v, col, out);
}

static int copy_line(P *p)
{
    tok *t0 = &p->toks[0];
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = WR_EV_HOST_COPY;
    wr_host_copy *c = &ev.u.copy;
    const char *k = t0->s + 4;
    if (*k != '.')
        return perr(p, t0->col, "copy needs a kind: copy.h2d, copy.d2h, copy.d2d, copy.memset");
    int kind = -1;
    for (unsigned i = 0; i <= WR_COPY_MAX; i++)
        if (!strcmp(k + 1, wr_copy_kind_name(i)))
            kind = (int)i;
    if (kind < 0)
        return perr(p, t0->col + 5, "unknown copy kind '%s' (h2d, d2h, d2d, memset)", shown(k + 1));
    c->kind = (uint8_t)kind;
    int col, have_dst = 0, have_src = 0;
    uint32_t dst_alloc = 0, src_alloc = 0;
    const char *v;
    if ((v = take_kv(p, "dst=", &col))) {
        if (parse_addr(p, v, col, 1, &c->dst, NULL, &dst_alloc))
            return -1;
        have_dst = 1;
    }
    if ((v = take_kv(p, "src=", &col))) {
        if (parse_addr(p, v, col, 1, &c->src, NULL, &src_alloc))
            return -1;
        have_src = 1;
    }
    int need_dst = kind != WR_COPY_D2H, need_src = kind == WR_COPY_D2H || kind == WR_COPY_D2D;
    int here = peek(p) ? peek(p)->col : end_col(p);
    if (need_dst && !have_dst)
        return perr(p, here, "missing field 'dst='");
    if (need_src && !have_src)
        return perr(p, here, "missing field 'src='");
    if ((v = take_kv(p, "bytes=", &col))) {
        if (get_u64(p, v, col, UINT64_MAX, &c->bytes))
            return -1;
    } else {
        uint32_t a = kind == WR_COPY_D2H ? src_alloc : dst_alloc;
        uint64_t addr = kind == WR_COPY_D2H ? c->src : c->dst;
        if (!a)
            return perr(p, here, "missing field 'bytes=' (needed without a symbolic address)");
        c->bytes = p->allocs[a - 1].base + p->allocs[a - 1].size - addr;
        col = here;
    }
    if (!wr_copy_size_ok(c->dst, c->src, c->bytes))
        return perr(p, col, "copy of %llu bytes: more than 2^39 or wrapping around the address space",
                    (unsigned long long)c->bytes);
    if ((v = take_kv(p, "stream=", &col)) && get_u32(p, v, col, &c->stream))
        return -1;
    tok *t = peek(p);
    if (t && !strcmp(t->s, "async")) {
        p->ti++;
        c->async = 1;
    }
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    return emit(p, &ev, t0->col);
}

static int host_line(P *p, int kind)
{
    tok *t0 = &p->toks[0];
    wr_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = (uint8_t)kind;
    switch (kind) {
    case WR_EV_KERNEL_END: {
        launch_info *li;
        if (opt_launch(p, &ev.u.kernel_end.launch, &li))
            return -1;
        break;
    }
    case WR_EV_EVENT_RECORD:
        if (req_u32(p, "event=", &ev.u.stream_event.event) || req_u32(p, "stream=", &ev.u.stream_event.stream))
            return -1;
        break;
    case WR_EV_STREAM_WAIT:
        if (req_u32(p, "stream=", &ev.u.stream_event.stream) || req_u32(p, "event=", &ev.u.stream_event.event))
            return -1;
        break;
    case WR_EV_EVENT_SYNC:
        if (req_u32(p, "event=", &ev.u.stream_event.event))
            return -1;
        break;
    case WR_EV_STREAM_SYNC:
        if (req_u32(p, "stream=", &ev.u.stream_sync.stream))
            return -1;
        break;
    case WR_EV_DEVICE_SYNC:
        break;
    case WR_EV_ALLOC:
    case WR_EV_FREE: {
        tok *t = peek(p);
        if (!t || t->s[0] == '@')
            return perr(p, t ? t->col : end_col(p), "missing allocation label");
        if (kind == WR_EV_ALLOC && p->ti + 1 < p->ntok && p->toks[p->ti + 1].s[0] != '@') {
            if (alloc_spec(p, &ev.u.alloc.alloc))
                return -1;
        } else {
            p->ti++;
            ev.u.alloc.alloc = lookup_alloc(p, t->s, t->col);
            if (!ev.u.alloc.alloc)
                return -1;
        }
        break;
    }
    case WR_EV_LOST: {
        uint64_t n;
        int col;
        const char *v = take_kv(p, "count=", &col);
        if (!v)
            return perr(p, peek(p) ? peek(p)->col : end_col(p), "missing field 'count='");
        if (get_u64(p, v, col, UINT64_MAX, &n))
            return -1;
        ev.u.lost.count = n;
        ev.u.lost.block = UINT32_MAX;
        if ((v = take_kv(p, "launch=", &col)) && get_u32(p, v, col, &ev.u.lost.launch))
            return -1;
        if ((v = take_kv(p, "block=", &col)) && strcmp(v, "*") &&
            get_u32(p, v, col, &ev.u.lost.block))
            return -1;
        break;
    }
    }
    if (opt_site(p, &ev.site) || no_more(p))
        return -1;
    return emit(p, &ev, t0->col);
}

/* ---- line dispatch ------------------------------------------------------- */

static int is_op(const char *s, const char *op)
{
    size_t n = strlen(op);
    return !strncmp(s, op, n) && (s[n] == 0 || s[n] == '.');
}

static int body_line(P *p)
{
    tok *t0 = &p->toks[0];
    const char *s = t0->s;
    p->ti = 1;
    if (!p->in_body) {
        p->in_body = 1;
        if (open_writer(p))
            return -1;
    }
    if (!strcmp(s, "def"))
        return definition(p);
    if (!strcmp(s, "flush")) {
        if (no_more(p))
            return -1;
        if (flush_defs(p, t0->col))
            return -1;
        if (wr_writer_flush(p->w, p->err))
            return writer_fail(p, t0->col);
        p->chunk_bytes = 0;
        p->chunk_events = 0;
        return 0;
    }
    if (is_op(s, "ld")) return access_line(p, "ld");
    if (is_op(s, "st")) return access_line(p, "st");
    if (is_op(s, "atom")) return access_line(p, "atom");
    if (barrier_word(s, NULL) >= 0) return sync_line(p, WR_EV_BARRIER);
    if (mbarrier_word(s) >= 0) return mbarrier_line(p);
    if (!strcmp(s, "warpsync") || !strcmp(s, "syncwarp")) return sync_line(p, WR_EV_WARP_SYNC);
    if (is_op(s, "fence")) return sync_line(p, WR_EV_FENCE);
    if (!strcmp(s, "block_enter") || !strcmp(s, "enter")) return sync_line(p, WR_EV_BLOCK_ENTER);
    if (!strcmp(s, "block_exit") || !strcmp(s, "exit")) return sync_line(p, WR_EV_BLOCK_EXIT);
    if (!strcmp(s, "launch")) return launch_line(p);
    if (is_op(s, "copy")) return copy_line(p);
    static const struct { const char *w; int kind; } host[] = {
        {"kernel_end", WR_EV_KERNEL_END}, {"event_record", WR_EV_EVENT_RECORD},
        {"stream_wait", WR_EV_STREAM_WAIT}, {"event_sync", WR_EV_EVENT_SYNC},
        {"stream_sync", WR_EV_STREAM_SYNC}, {"device_sync", WR_EV_DEVICE_SYNC},
        {"alloc", WR_EV_ALLOC}, {"free", WR_EV_FREE}, {"lost", WR_EV_LOST},
    };
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        if (!strcmp(s, host[i].w))
            return host_line(p, host[i].kind);
    return perr(p, t0->col, "unknown directive '%s'", shown(s));
}

static int one_line(P *p)
{
    if (tokenize(p))
        return -1;
    if (!p->ntok)
        return 0;
    if (p->mod_active)
        return module_image_line(p);
    for (unsigned i = 0; i < sizeof(header_words) / sizeof(header_words[0]); i++)
        if (!strcmp(p->toks[0].s, header_words[i]))
            return header_line(p, i);
    return body_line(p);
}

static int run(P *p)
{
    int r;
    while ((r = read_line(p)) > 0)
        if (one_line(p))
            return -1;
    if (r < 0)
        return -1;
    if (p->mod_active) {
        p->lineno = p->mod_line;
        return perr(p, p->mod_col, "module image incomplete at end of file (%llu of %llu bytes)",
                    (unsigned long long)p->mod_have, (unsigned long long)p->mod_size);
    }
    if (open_writer(p) || flush_defs(p, 1))
        return -1;
    wr_writer *w = p->w;
    p->w = NULL;
    if (wr_writer_close(w, p->err))
        return writer_fail(p, 1);
    return 0;
}

static int assemble(P *p)
{
    int r = run(p);
    if (p->w) {
        wr_writer_abandon(p->w);
        p->w = NULL;
    }
    if (r && strcmp(p->out_path, "-"))   /* standard output: the reader sees it end early */
        remove(p->out_path);
    free(p->h_producer);
    free(p->h_producer_version);
    free(p->h_device);
    free(p->h_host);
    free(p->h_command);
    free(p->mod_name);
    free(p->mod_image);
    free(p->line);
    free(p->arena);
    wr_text_map_free(&p->kernel_by_name);
    wr_text_map_free(&p->site_by_key);
    wr_text_map_free(&p->alloc_by_label);
    free(p->allocs);
    free(p->launches);
    pend_clear(p);
    for (int k = 0; k < 4; k++)
        free(p->pend[k].v);
    free(p);
    return r;
}

static P *new_parser(const char *name, const char *out_path, wr_error *err)
{
    P *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err->msg, sizeof(err->msg), "%s: out of memory", name);
        return NULL;
    }
    p->name = name;
    p->out_path = out_path;
    p->err = err;
    p->line_cap = 256;
    p->arena_cap = 2 * p->line_cap + 8;
    p->line = calloc(1, p->line_cap);
    p->arena = calloc(1, p->arena_cap);
    if (!p->line || !p->arena) {
        free(p->line);
        free(p->arena);
        free(p);
        snprintf(err->msg, sizeof(err->msg), "%s: out of memory", name);
        return NULL;
    }
    p->next_base[WR_SPACE_GLOBAL] = WR_TEXT_GLOBAL_BASE;
    p->next_base[WR_SPACE_LOCAL] = WR_TEXT_GLOBAL_BASE;
    p->next_base[WR_SPACE_SHARED] = 0;
    return p;
}

int wr_text_assemble_buf(const char *name, const char *data, size_t len, const char *out_path,
                         wr_error *err)
{
    memset(err, 0, sizeof(*err));
    P *p = new_parser(name, out_path, err);
    if (!p)
        return -1;
    p->in.buf = data;
    p->in.len = len;
    return assemble(p);
}

int wr_text_assemble(const char *in_path, const char *out_path, wr_error *err)
{
    return wr_text_assemble_at(in_path, out_path, WR_TEXT_GLOBAL_BASE, err);
}

int wr_text_assemble_at(const char *in_path, const char *out_path, uint64_t global_base,
                        wr_error *err)
{
    memset(err, 0, sizeof(*err));
    bool from_stdin = !strcmp(in_path, "-");
    FILE *f = from_stdin ? stdin : fopen(in_path, "rb");
    if (!f) {
        snprintf(err->msg, sizeof(err->msg), "%s: %s", in_path, strerror(errno));
        return -1;
    }
    P *p = new_parser(from_stdin ? "<stdin>" : in_path, out_path, err);
    if (!p) {
        if (!from_stdin)
            fclose(f);
        return -1;
    }
    p->in.f = f;
    p->next_base[WR_SPACE_GLOBAL] = p->next_base[WR_SPACE_LOCAL] = global_base;
    int r = assemble(p);
    if (!from_stdin)
        fclose(f);
    return r;
}

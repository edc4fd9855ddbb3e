/* Minimal strict JSON parser (see json_mini.h). */
#include "json_mini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct P {
    const char *s, *p;
    char *err;
    size_t errsize;
    int depth;
} P;

static void fail(P *x, const char *why)
{
    if (x->err && !x->err[0])
        snprintf(x->err, x->errsize, "offset %ld: %s", (long)(x->p - x->s), why);
}

static void ws(P *x)
{
    while (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r')
        x->p++;
}

static js *mk(js_type t)
{
    js *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

static js *value(P *x);

static void put_utf8(char **o, unsigned c)
{
    unsigned char *u = (unsigned char *)*o;
    if (c < 0x80) { *u++ = (unsigned char)c; }
    else if (c < 0x800) { *u++ = (unsigned char)(0xC0 | c >> 6); *u++ = (unsigned char)(0x80 | (c & 0x3F)); }
    else if (c < 0x10000) { *u++ = (unsigned char)(0xE0 | c >> 12); *u++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F)); *u++ = (unsigned char)(0x80 | (c & 0x3F)); }
    else { *u++ = (unsigned char)(0xF0 | c >> 18); *u++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F)); *u++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F)); *u++ = (unsigned char)(0x80 | (c & 0x3F)); }
    *o = (char *)u;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static char *string(P *x)
{
    if (*x->p != '"') { fail(x, "expected string"); return NULL; }
    x->p++;
    size_t cap = strlen(x->p) + 1;
    char *buf = malloc(cap), *o = buf;
    if (!buf) return NULL;
    for (;;) {
        unsigned char c = (unsigned char)*x->p;
        if (c == '"') { x->p++; break; }
        if (c == '\0') { fail(x, "unterminated string"); free(buf); return NULL; }
        if (c < 0x20) { fail(x, "control character in string"); free(buf); return NULL; }
        if (c != '\\') { *o++ = (char)c; x->p++; continue; }
        x->p++;
        char e = *x->p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(x->p, &cp)) { fail(x, "bad \\u escape"); free(buf); return NULL; }
            x->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && x->p[0] == '\\' && x->p[1] == 'u') {
                unsigned lo;
                if (!hex4(x->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    x->p += 6;
                }
            }
            put_utf8(&o, cp);
            break;
        }
        default: fail(x, "bad escape"); free(buf); return NULL;
        }
    }
    *o = '\0';
    return buf;
}

static js *number(P *x)
{
    const char *p = x->p;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else { fail(x, "bad number"); return NULL; }
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) { fail(x, "bad fraction"); return NULL; }
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) { fail(x, "bad exponent"); return NULL; }
        while (*p >= '0' && *p <= '9') p++;
    }
    js *v = mk(JS_NUM);
    if (!v) return NULL;
    v->num = strtod(x->p, NULL);
    x->p = p;
    return v;
}

static int push(js *v, char *key, js *item)
{
    js **items = realloc(v->items, sizeof(js *) * (v->n + 1));
    if (!items) return -1;
    v->items = items;
    if (v->type == JS_OBJ) {
        char **keys = realloc(v->keys, sizeof(char *) * (v->n + 1));
        if (!keys) return -1;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 0;
}

static js *container(P *x, char open, char close)
{
    js *v = mk(open == '{' ? JS_OBJ : JS_ARR);
    if (!v) return NULL;
    x->p++;
    ws(x);
    if (*x->p == close) { x->p++; return v; }
    for (;;) {
        char *key = NULL;
        ws(x);
        if (open == '{') {
            key = string(x);
            if (!key) goto bad;
            ws(x);
            if (*x->p != ':') { fail(x, "expected ':'"); free(key); goto bad; }
            x->p++;
        }
        js *item = value(x);
        if (!item || push(v, key, item)) { free(key); js_free(item); goto bad; }
        ws(x);
        if (*x->p == ',') { x->p++; continue; }
        if (*x->p == close) { x->p++; return v; }
        fail(x, open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        goto bad;
    }
bad:
    js_free(v);
    return NULL;
}

static js *value(P *x)
{
    if (++x->depth > 200) { fail(x, "too deep"); return NULL; }
    ws(x);
    js *v = NULL;
    char c = *x->p;
    if (c == '{') v = container(x, '{', '}');
    else if (c == '[') v = container(x, '[', ']');
    else if (c == '"') {
        char *s = string(x);
        if (s) { v = mk(JS_STR); if (v) v->str = s; else free(s); }
    } else if (!strncmp(x->p, "null", 4)) { x->p += 4; v = mk(JS_NULL); }
    else if (!strncmp(x->p, "true", 4)) { x->p += 4; v = mk(JS_TRUE); }
    else if (!strncmp(x->p, "false", 5)) { x->p += 5; v = mk(JS_FALSE); }
    else v = number(x);
    x->depth--;
    return v;
}

js *js_parse(const char *text, char *err, size_t errsize)
{
    P x = {text, text, err, errsize, 0};
    if (err && errsize) err[0] = '\0';
    js *v = value(&x);
    if (!v) return NULL;
    ws(&x);
    if (*x.p) { fail(&x, "trailing characters"); js_free(v); return NULL; }
    return v;
}

void js_free(js *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        js_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const js *js_get(const js *obj, const char *key)
{
    if (!obj || obj->type != JS_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key)) return obj->items[i];
    return NULL;
}

const js *js_at(const js *arr, size_t i)
{
    if (!arr || arr->type != JS_ARR || i >= arr->n) return NULL;
    return arr->items[i];
}

const char *js_str(const js *v)
{
    return v && v->type == JS_STR ? v->str : NULL;
}

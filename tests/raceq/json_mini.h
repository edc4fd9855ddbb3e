/* A minimal strict JSON parser for the raceq tests (RFC 8259 values; no
 * extensions).  Used to check that json and sarif output is well-formed and
 * to walk it. */
#ifndef RQ_JSON_MINI_H
#define RQ_JSON_MINI_H
#include <stddef.h>

typedef enum { JS_NULL, JS_FALSE, JS_TRUE, JS_NUM, JS_STR, JS_ARR, JS_OBJ } js_type;

typedef struct js {
    js_type type;
    double num;
    char *str;              /* JS_STR (decoded UTF-8) */
    size_t n;               /* JS_ARR / JS_OBJ: members */
    struct js **items;      /* values */
    char **keys;            /* JS_OBJ: keys */
} js;

/* NULL on a syntax error (err gets the offset and reason). */
js *js_parse(const char *text, char *err, size_t errsize);
void js_free(js *v);
const js *js_get(const js *obj, const char *key);   /* NULL if absent / not an object */
const js *js_at(const js *arr, size_t i);           /* NULL if out of range */
const char *js_str(const js *v);                    /* NULL unless a string */

#endif

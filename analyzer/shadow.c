/* Page-table shadow map: see shadow.h. */
#include "shadow.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline size_t hash_key(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    k ^= k >> 29;
    return (size_t)k;
}

wr_shadow_map *wr_shadow_new(size_t cell_bytes)
{
    wr_shadow_map *m = xcalloc(1, sizeof *m);
    m->cell_bytes = cell_bytes;
    m->cap = 64;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->pages = xcalloc(m->cap, sizeof *m->pages);
    return m;
}

void wr_shadow_free(wr_shadow_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->pages[i]);
    free(m->keys);
    free(m->pages);
    free(m);
}

static void grow(wr_shadow_map *m)
{
    size_t ncap = m->cap * 2;
    uint64_t *nk = xcalloc(ncap, sizeof *nk);
    wr_shadow_page **np = xcalloc(ncap, sizeof *np);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->pages[i])
            continue;
        size_t j = hash_key(m->keys[i]) & (ncap - 1);
        while (np[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        np[j] = m->pages[i];
    }
    free(m->keys);
    free(m->pages);
    m->keys = nk;
    m->pages = np;
    m->cap = ncap;
}

wr_shadow_page *wr_shadow_lookup_slow(wr_shadow_map *m, uint64_t key, bool create)
{
    size_t mask = m->cap - 1;
    size_t i = hash_key(key) & mask;
    while (m->pages[i]) {
        if (m->keys[i] == key) {
            m->last_key = key;
            m->last = m->pages[i];
            return m->pages[i];
        }
        i = (i + 1) & mask;
    }
    if (!create)
        return NULL;
    if ((m->count + 1) * 2 > m->cap) {
        grow(m);
        mask = m->cap - 1;
        i = hash_key(key) & mask;
        while (m->pages[i])
            i = (i + 1) & mask;
    }
    wr_shadow_page *p = xcalloc(1, sizeof *p + WR_SHADOW_PAGE_WORDS * m->cell_bytes);
    p->key = key;
    m->keys[i] = key;
    m->pages[i] = p;
    m->count++;
    m->last_key = key;
    m->last = p;
    return p;
}

void wr_shadow_remove(wr_shadow_map *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    size_t i = hash_key(key) & mask;
    while (m->pages[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    if (!m->pages[i])
        return;
    if (m->last == m->pages[i])
        m->last = NULL;
    free(m->pages[i]);
    m->pages[i] = NULL;
    m->count--;
    /* backward-shift deletion keeps probe chains intact */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->pages[j])
            break;
        size_t home = hash_key(m->keys[j]) & mask;
        /* move j into the hole i if its home is not in (i, j] cyclically */
        bool in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->keys[i] = m->keys[j];
            m->pages[i] = m->pages[j];
            m->pages[j] = NULL;
            i = j;
        }
    }
}

void wr_shadow_foreach(wr_shadow_map *m, void (*fn)(wr_shadow_page *, void *), void *ctx)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->pages[i])
            fn(m->pages[i], ctx);
}

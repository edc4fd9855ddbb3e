/*
 * u32map.h: a small open-addressing hash map from 32-bit keys to nonzero
 * 32-bit values (0 reads as "absent"), for the analyzer's host-side
 * tables (streams, events, launches), which a program may make by the
 * thousand.  Grows by doubling; no removal.
 */
#ifndef WARPRACE_U32MAP_H
#define WARPRACE_U32MAP_H

#include <stdint.h>
#include <stdlib.h>

#include "xalloc.h"

typedef struct wr_kv {
    uint32_t key, val;  /* val 0 = empty */
} wr_kv;

typedef struct wr_u32map {
    wr_kv *slots;
    uint32_t cap, count;
} wr_u32map;

static inline uint32_t wr_map_get(const wr_u32map *m, uint32_t key)
{
    if (!m->cap)
        return 0;
    uint32_t i = (key * 2654435761u) & (m->cap - 1);
    while (m->slots[i].val) {
        if (m->slots[i].key == key)
            return m->slots[i].val;
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

static inline void wr_map_put(wr_u32map *m, uint32_t key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap) {
        uint32_t ncap = m->cap ? m->cap * 2 : 64;
        wr_kv *ns = xcalloc(ncap, sizeof *ns);
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].val)
                continue;
            uint32_t j = (m->slots[i].key * 2654435761u) & (ncap - 1);
            while (ns[j].val)
                j = (j + 1) & (ncap - 1);
            ns[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    uint32_t i = (key * 2654435761u) & (m->cap - 1);
    while (m->slots[i].val && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].val)
        m->count++;
    m->slots[i].key = key;
    m->slots[i].val = val;
}

static inline void wr_map_free(wr_u32map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

#endif

/* The reader's catalog: strings, kernels, allocations, sites, modules, each a
 * table indexed by id 1..count.  Tables grow in fixed pages that never move,
 * because callers keep pointers to entries while the catalog keeps growing
 * (trace.h promises they stay valid until the reader closes). */
#include <stdlib.h>

#include "format_internal.h"

#define PAGE_SHIFT 10
#define PAGE_ENTRIES (1u << PAGE_SHIFT)

typedef struct paged_table {
    size_t elem_size;
    uint32_t count;             /* entries; ids 1..count live at index id-1 */
    uint32_t page_count, page_cap;
    void **pages;
} paged_table;

struct wr_catalog {
    paged_table strings;        /* of char*: every string owns its allocation */
    paged_table kernels, allocs, sites, modules;
};

static void *table_slot(const paged_table *t, uint32_t index)
{
    return (char *)t->pages[index >> PAGE_SHIFT] + (size_t)(index & (PAGE_ENTRIES - 1)) * t->elem_size;
}

static const void *table_get(const paged_table *t, uint32_t id)
{
    if (id == 0 || id > t->count)
        return NULL;
    return table_slot(t, id - 1);
}

/* Returns a zeroed slot for entry id count+1, or NULL. */
static void *table_push(paged_table *t)
{
    if (t->count >= WRF_CATALOG_TABLE_MAX)
        return NULL;
    uint32_t index = t->count;
    if ((index >> PAGE_SHIFT) >= t->page_count) {
        if (t->page_count == t->page_cap) {
            uint32_t cap = t->page_cap ? t->page_cap * 2 : 8;
            void **pages = realloc(t->pages, cap * sizeof *pages);
            if (!pages)
                return NULL;
            t->pages = pages;
            t->page_cap = cap;
        }
        void *page = calloc(PAGE_ENTRIES, t->elem_size);
        if (!page)
            return NULL;
        t->pages[t->page_count++] = page;
    }
    t->count++;
    return table_slot(t, index);
}

static void table_free(paged_table *t)
{
    for (uint32_t i = 0; i < t->page_count; i++)
        free(t->pages[i]);
    free(t->pages);
}

wr_catalog *wrf_catalog_new(void)
{
    wr_catalog *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->strings.elem_size = sizeof(char *);
    c->kernels.elem_size = sizeof(wr_kernel);
    c->allocs.elem_size = sizeof(wr_alloc);
    c->sites.elem_size = sizeof(wr_site);
    c->modules.elem_size = sizeof(wr_module);
    return c;
}

void wrf_catalog_free(wr_catalog *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->strings.count; i++)
        free(*(char **)table_slot(&c->strings, i));
    for (uint32_t i = 0; i < c->modules.count; i++)
        free((void *)((wr_module *)table_slot(&c->modules, i))->image);
    table_free(&c->strings);
    table_free(&c->kernels);
    table_free(&c->allocs);
    table_free(&c->sites);
    table_free(&c->modules);
    free(c);
}

uint32_t wrf_catalog_string_count(const wr_catalog *c) { return c->strings.count; }

const char *wrf_catalog_string(const wr_catalog *c, uint32_t id)
{
    char *const *s = table_get(&c->strings, id);
    return s ? *s : "";
}

int wrf_catalog_add_string(wr_catalog *c, const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    char **slot = table_push(&c->strings);
    if (!slot) {
        free(copy);
        return -1;
    }
    *slot = copy;
    return 0;
}

int wrf_catalog_add_kernel(wr_catalog *c, uint32_t name_string)
{
    wr_kernel *k = table_push(&c->kernels);
    if (!k)
        return -1;
    k->id = c->kernels.count;
    k->name = wrf_catalog_string(c, name_string);
    return 0;
}

int wrf_catalog_add_alloc(wr_catalog *c, uint64_t base, uint64_t size, uint8_t space,
                          uint32_t name_string)
{
    wr_alloc *a = table_push(&c->allocs);
    if (!a)
        return -1;
    a->id = c->allocs.count;
    a->base = base;
    a->size = size;
    a->space = space;
    a->name = wrf_catalog_string(c, name_string);
    return 0;
}

int wrf_catalog_add_site(wr_catalog *c, uint64_t pc, uint32_t file_string, uint32_t line,
                         uint32_t function_string)
{
    wr_site *s = table_push(&c->sites);
    if (!s)
        return -1;
    s->id = c->sites.count;
    s->pc = pc;
    s->file = wrf_catalog_string(c, file_string);
    s->line = line;
    s->function = wrf_catalog_string(c, function_string);
    return 0;
}

int wrf_catalog_add_module(wr_catalog *c, uint32_t name_string, const uint8_t *image, uint64_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return -1;
    if (size)
        memcpy(copy, image, size);
    wr_module *m = table_push(&c->modules);
    if (!m) {
        free(copy);
        return -1;
    }
    m->id = c->modules.count;
    m->name = wrf_catalog_string(c, name_string);
    m->image = copy;
    m->size = size;
    return 0;
}

const wr_site *wr_catalog_site(const wr_catalog *c, uint32_t id) { return c ? table_get(&c->sites, id) : NULL; }
const wr_kernel *wr_catalog_kernel(const wr_catalog *c, uint32_t id) { return c ? table_get(&c->kernels, id) : NULL; }
const wr_alloc *wr_catalog_alloc(const wr_catalog *c, uint32_t id) { return c ? table_get(&c->allocs, id) : NULL; }
const wr_module *wr_catalog_module(const wr_catalog *c, uint32_t id) { return c ? table_get(&c->modules, id) : NULL; }
uint32_t wr_catalog_site_count(const wr_catalog *c) { return c ? c->sites.count : 0; }
uint32_t wr_catalog_kernel_count(const wr_catalog *c) { return c ? c->kernels.count : 0; }
uint32_t wr_catalog_alloc_count(const wr_catalog *c) { return c ? c->allocs.count : 0; }
uint32_t wr_catalog_module_count(const wr_catalog *c) { return c ? c->modules.count : 0; }

/* Newest first, so a re-allocation of freed memory wins over the old one.
 * Linear: allocation tables are small next to event streams, and callers
 * use this for reporting, not per access. */
const wr_alloc *wr_catalog_find_alloc(const wr_catalog *c, uint8_t space, uint64_t addr)
{
    if (!c)
        return NULL;
    for (uint32_t id = c->allocs.count; id >= 1; id--) {
        const wr_alloc *a = table_get(&c->allocs, id);
        if (a->space == space && addr >= a->base && addr - a->base < a->size)
            return a;
    }
    return NULL;
}

/*
 * The findings collector (finding.h).
 *
 * Races are grouped by identity in an open-addressing hash table.  At this
 * level the identity is
 *     (engine, race class, scope verdict, potential,
 *      side A = (site, kind, launch), side B = (site, kind, launch))
 * with the two sides in canonical order: the lower (site, kind, launch)
 * first.  Engines know launches, not kernel names, so the collector keys a
 * side by its launch; the driver resolves launches to kernel names and
 * collapses launches of the same kernel when it writes the report and the
 * database (analyzer/replay.c, wr_replay_resolve).
 *
 * Per group: the number of reports and the earliest example.  "Earliest" is
 * a total order on the example (the later access's trace position, then the
 * earlier one's, then space, address, and the threads), so that merging
 * per-shard collectors in any order gives the same example whatever the
 * number of shards.
 */
#include "finding.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct wr_findings {
    wr_race_group *groups;  /* dense array, insertion order */
    size_t count, cap;
    uint32_t *slots;        /* hash slots: group index + 1, 0 = empty */
    size_t nslots;          /* power of two */
    wr_race_group *sorted;  /* cache for wr_findings_groups */
    bool sorted_valid;
};

/* ---- ordering ---------------------------------------------------------- */

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* The identity part of one side. */
static int side_key_cmp(const wr_race_access *a, const wr_race_access *b)
{
    int c;
    if ((c = cmp_u64(a->site, b->site))) return c;
    if ((c = cmp_u64(a->kind, b->kind))) return c;
    return cmp_u64(a->launch, b->launch);
}

/* The whole of one side (identity, then thread, then position). */
static int side_full_cmp(const wr_race_access *a, const wr_race_access *b)
{
    int c;
    if ((c = side_key_cmp(a, b))) return c;
    if ((c = cmp_u64(a->seq, b->seq))) return c;
    if ((c = cmp_u64(a->block, b->block))) return c;
    if ((c = cmp_u64(a->warp, b->warp))) return c;
    return cmp_u64(a->lane, b->lane);
}

/* Puts the pair in canonical order. */
static void canonicalise(wr_race *r)
{
    int c = side_key_cmp(&r->first, &r->second);
    if (c == 0) {
        /* Symmetric identity: keep the earlier access first. */
        c = cmp_u64(r->first.seq, r->second.seq);
        if (c == 0)
            c = side_full_cmp(&r->first, &r->second);
    }
    if (c > 0) {
        wr_race_access t = r->first;
        r->first = r->second;
        r->second = t;
    }
}

static int identity_cmp(const wr_race *a, const wr_race *b)
{
    int c;
    if ((c = cmp_u64(a->engine, b->engine))) return c;
    if ((c = side_key_cmp(&a->first, &b->first))) return c;
    if ((c = side_key_cmp(&a->second, &b->second))) return c;
    if ((c = cmp_u64(a->race_class, b->race_class))) return c;
    if ((c = cmp_u64(a->verdict, b->verdict))) return c;
    return cmp_u64(a->potential, b->potential);
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Total order on examples of one identity: < 0 when a is the earlier one. */
static int example_cmp(const wr_race *a, const wr_race *b)
{
    int c;
    if ((c = cmp_u64(max_u64(a->first.seq, a->second.seq), max_u64(b->first.seq, b->second.seq))))
        return c;
    if ((c = cmp_u64(min_u64(a->first.seq, a->second.seq), min_u64(b->first.seq, b->second.seq))))
        return c;
    if ((c = cmp_u64(a->space, b->space))) return c;
    if ((c = cmp_u64(a->addr, b->addr))) return c;
    if ((c = side_full_cmp(&a->first, &b->first))) return c;
    return side_full_cmp(&a->second, &b->second);
}

/* ---- hashing ----------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static uint64_t identity_hash(const wr_race *r)
{
    uint64_t h = 0x243F6A8885A308D3ull;
    h = mix(h, r->engine | (uint64_t)r->race_class << 8 | (uint64_t)r->verdict << 16 |
                   (uint64_t)r->potential << 24);
    h = mix(h, r->first.site | (uint64_t)r->first.kind << 32);
    h = mix(h, r->first.launch);
    h = mix(h, r->second.site | (uint64_t)r->second.kind << 32);
    h = mix(h, r->second.launch);
    return h;
}

/* ---- collector ---------------------------------------------------------- */

wr_findings *wr_findings_new(void)
{
    wr_findings *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    return f;
}

void wr_findings_free(wr_findings *f)
{
    if (!f)
        return;
    free(f->groups);
    free(f->slots);
    free(f->sorted);
    free(f);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

static void rehash(wr_findings *f, size_t nslots)
{
    free(f->slots);
    f->slots = calloc(nslots, sizeof *f->slots);
    if (!f->slots)
        abort();
    f->nslots = nslots;
    for (size_t i = 0; i < f->count; i++) {
        size_t s = identity_hash(&f->groups[i].example) & (nslots - 1);
        while (f->slots[s])
            s = (s + 1) & (nslots - 1);
        f->slots[s] = (uint32_t)(i + 1);
    }
}

/* Adds `count` occurrences of the canonical race r. */
static void add_group(wr_findings *f, const wr_race *r, uint64_t count)
{
    if ((f->count + 1) * 2 > f->nslots)
        rehash(f, f->nslots ? f->nslots * 2 : 64);
    size_t s = identity_hash(r) & (f->nslots - 1);
    while (f->slots[s]) {
        wr_race_group *g = &f->groups[f->slots[s] - 1];
        if (identity_cmp(&g->example, r) == 0) {
            g->count += count;
            if (example_cmp(r, &g->example) < 0)
                g->example = *r;
            f->sorted_valid = false;
            return;
        }
        s = (s + 1) & (f->nslots - 1);
    }
    if (f->count == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 32;
        f->groups = xrealloc(f->groups, f->cap * sizeof *f->groups);
    }
    f->groups[f->count].example = *r;
    f->groups[f->count].count = count;
    f->slots[s] = (uint32_t)(++f->count);
    f->sorted_valid = false;
}

void wr_findings_report(wr_findings *f, const wr_race *race)
{
    wr_race r = *race;
    canonicalise(&r);
    add_group(f, &r, 1);
}

void wr_findings_merge(wr_findings *dst, const wr_findings *src)
{
    if (!src || src == dst)
        return;
    for (size_t i = 0; i < src->count; i++)
        add_group(dst, &src->groups[i].example, src->groups[i].count);
}

static int group_cmp(const void *pa, const void *pb)
{
    const wr_race_group *a = pa, *b = pb;
    return identity_cmp(&a->example, &b->example);
}

size_t wr_findings_groups(const wr_findings *cf, const wr_race_group **out)
{
    /* The sorted copy is a cache: logically const. */
    wr_findings *f = (wr_findings *)cf;
    if (!f->sorted_valid) {
        free(f->sorted);
        f->sorted = xrealloc(NULL, f->count * sizeof *f->sorted);
        if (f->count)
            memcpy(f->sorted, f->groups, f->count * sizeof *f->sorted);
        qsort(f->sorted, f->count, sizeof *f->sorted, group_cmp);
        f->sorted_valid = true;
    }
    if (out)
        *out = f->sorted;
    return f->count;
}

/* ---- names -------------------------------------------------------------- */

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof((table)[0]) ? (table)[i] : "?")

const char *wr_access_kind_name(unsigned kind)
{
    static const char *const names[] = {"read", "write", "atomic"};
    return NAME_OF(names, kind);
}

const char *wr_race_class_name(unsigned cls)
{
    static const char *const names[] = {"intra-warp", "inter-warp", "inter-block", "inter-kernel"};
    return NAME_OF(names, cls);
}

const char *wr_scope_verdict_name(unsigned v)
{
    static const char *const names[] = {"", "missing-sync", "scope-fence", "scope-atomic",
                                        "scope-lock", "weak-access"};
    return NAME_OF(names, v);
}

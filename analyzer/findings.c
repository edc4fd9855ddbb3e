/*
 * The findings collector (finding.h).
 *
 * Races are grouped by identity in an open-addressing hash table.  At this
 * level the identity is
 *     (engine, race class, scope verdict, potential,
 *      side A = (site, kind, who), side B = (site, kind, who))
 * with the two sides in canonical order: the lower (site, kind, who) first.
 * "who" is the side's kernel id when the collector has a launch -> kernel map
 * (findings_kernels.h) that knows the launch, else its launch id (engines
 * know launches, not kernels).  The driver resolves ids to names, and
 * combines groups with equal names, when it writes the report and the
 * database (analyzer/replay.c, wr_replay_resolve).
 *
 * Per group: the number of reports and the earliest example.  "Earliest" is
 * a total order on the example (the later access's trace position, then the
 * earlier one's, then space, address, and the threads), so that merging
 * per-shard collectors in any order gives the same example whatever the
 * number of shards.
 */
#include "finding.h"
#include "findings_kernels.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A group and the "who" keys of its two sides (canonical order). */
typedef struct group {
    wr_race_group g;
    uint64_t who[2];
} group;

/* A race being added, with its keys. */
typedef struct keyed {
    wr_race r;
    uint64_t who[2];
} keyed;

struct wr_findings {
    group *groups;          /* dense array, insertion order */
    size_t count, cap;
    uint32_t *slots;        /* hash slots: group index + 1, 0 = empty */
    size_t nslots;          /* power of two */
    wr_race_group *sorted;  /* cache for wr_findings_groups */
    bool sorted_valid;
    const wr_launch_kernels *kernels;
};

/* ---- ordering ---------------------------------------------------------- */

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* The identity part of one side. */
static int side_key_cmp(const wr_race_access *a, uint64_t wa, const wr_race_access *b, uint64_t wb)
{
    int c;
    if ((c = cmp_u64(a->site, b->site))) return c;
    if ((c = cmp_u64(a->kind, b->kind))) return c;
    return cmp_u64(wa, wb);
}

/* The whole of one side (launch, thread, position). */
static int side_rest_cmp(const wr_race_access *a, const wr_race_access *b)
{
    int c;
    if ((c = cmp_u64(a->site, b->site))) return c;
    if ((c = cmp_u64(a->kind, b->kind))) return c;
    if ((c = cmp_u64(a->launch, b->launch))) return c;
    if ((c = cmp_u64(a->seq, b->seq))) return c;
    if ((c = cmp_u64(a->block, b->block))) return c;
    if ((c = cmp_u64(a->warp, b->warp))) return c;
    return cmp_u64(a->lane, b->lane);
}

/* Puts the pair in canonical order. */
static void canonicalise(keyed *k)
{
    wr_race *r = &k->r;
    int c = side_key_cmp(&r->first, k->who[0], &r->second, k->who[1]);
    if (c == 0) {
        /* Symmetric identity: keep the earlier access first. */
        c = cmp_u64(r->first.seq, r->second.seq);
        if (c == 0)
            c = side_rest_cmp(&r->first, &r->second);
    }
    if (c > 0) {
        wr_race_access t;
        memcpy(&t, &r->first, sizeof t);
        memcpy(&r->first, &r->second, sizeof t);
        memcpy(&r->second, &t, sizeof t);
        uint64_t w = k->who[0];
        k->who[0] = k->who[1];
        k->who[1] = w;
    }
}

static int identity_cmp(const wr_race *a, const uint64_t *wa, const wr_race *b, const uint64_t *wb)
{
    int c;
    if ((c = cmp_u64(a->engine, b->engine))) return c;
    if ((c = side_key_cmp(&a->first, wa[0], &b->first, wb[0]))) return c;
    if ((c = side_key_cmp(&a->second, wa[1], &b->second, wb[1]))) return c;
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
    if ((c = side_rest_cmp(&a->first, &b->first))) return c;
    return side_rest_cmp(&a->second, &b->second);
}

/* ---- hashing ----------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static uint64_t identity_hash(const wr_race *r, const uint64_t *who)
{
    uint64_t h = 0x243F6A8885A308D3ull;
    h = mix(h, r->engine | (uint64_t)r->race_class << 8 | (uint64_t)r->verdict << 16 |
                   (uint64_t)r->potential << 24);
    h = mix(h, r->first.site | (uint64_t)r->first.kind << 32);
    h = mix(h, who[0]);
    h = mix(h, r->second.site | (uint64_t)r->second.kind << 32);
    h = mix(h, who[1]);
    return h;
}

/* ---- launch -> kernel map ------------------------------------------------ */

struct wr_launch_kernels {
    uint64_t *slots;        /* launch << 32 | kernel; 0 = empty */
    size_t n, cap;
};

wr_launch_kernels *wr_launch_kernels_new(void)
{
    wr_launch_kernels *m = xcalloc(1, sizeof *m);
    return m;
}

void wr_launch_kernels_free(wr_launch_kernels *m)
{
    if (m)
        free(m->slots);
    free(m);
}

static size_t lk_index(uint32_t launch, size_t cap)
{
    return (size_t)(((uint64_t)launch * 0x9E3779B97F4A7C15ull) >> 23) & (cap - 1);
}

void wr_launch_kernels_set(wr_launch_kernels *m, uint32_t launch, uint32_t kernel)
{
    if (!launch)
        return;
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *ns = xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i]) {
                size_t j = lk_index((uint32_t)(m->slots[i] >> 32), ncap);
                while (ns[j])
                    j = (j + 1) & (ncap - 1);
                ns[j] = m->slots[i];
            }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    size_t i = lk_index(launch, m->cap);
    while (m->slots[i] && (uint32_t)(m->slots[i] >> 32) != launch)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i])
        m->n++;
    m->slots[i] = (uint64_t)launch << 32 | kernel;
}

uint32_t wr_launch_kernels_get(const wr_launch_kernels *m, uint32_t launch)
{
    if (!m || !m->cap || !launch)
        return 0;
    for (size_t i = lk_index(launch, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i])
            return 0;
        if ((uint32_t)(m->slots[i] >> 32) == launch)
            return (uint32_t)m->slots[i];
    }
}

void wr_findings_use_kernels(wr_findings *f, const wr_launch_kernels *m) { f->kernels = m; }

/* The "who" key of a side: 1 << 32 | kernel when known, else the launch. */
static uint64_t who_of(const wr_findings *f, uint32_t launch)
{
    uint32_t k = wr_launch_kernels_get(f->kernels, launch);
    return k ? (1ull << 32 | k) : launch;
}

/* ---- collector ---------------------------------------------------------- */

wr_findings *wr_findings_new(void)
{
    wr_findings *f = xcalloc(1, sizeof *f);
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

static void rehash(wr_findings *f, size_t nslots)
{
    free(f->slots);
    f->slots = xcalloc(nslots, sizeof *f->slots);
    f->nslots = nslots;
    for (size_t i = 0; i < f->count; i++) {
        size_t s = identity_hash(&f->groups[i].g.example, f->groups[i].who) & (nslots - 1);
        while (f->slots[s])
            s = (s + 1) & (nslots - 1);
        f->slots[s] = (uint32_t)(i + 1);
    }
}

/* Adds `count` occurrences of the canonical race k. */
static void add_group(wr_findings *f, const keyed *k, uint64_t count)
{
    if ((f->count + 1) * 2 > f->nslots)
        rehash(f, f->nslots ? f->nslots * 2 : 64);
    size_t s = identity_hash(&k->r, k->who) & (f->nslots - 1);
    while (f->slots[s]) {
        group *g = &f->groups[f->slots[s] - 1];
        if (identity_cmp(&g->g.example, g->who, &k->r, k->who) == 0) {
            g->g.count += count;
            if (example_cmp(&k->r, &g->g.example) < 0)
                memcpy(&g->g.example, &k->r, sizeof k->r);
            f->sorted_valid = false;
            return;
        }
        s = (s + 1) & (f->nslots - 1);
    }
    if (f->count == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 32;
        f->groups = xrealloc(f->groups, f->cap * sizeof *f->groups);
    }
    group *g = &f->groups[f->count];
    memcpy(&g->g.example, &k->r, sizeof k->r);
    g->g.count = count;
    g->who[0] = k->who[0];
    g->who[1] = k->who[1];
    f->slots[s] = (uint32_t)(++f->count);
    f->sorted_valid = false;
}

/* A side, field by field, into zeroed bytes. */
static void side_bytes(wr_race_access *dst, const wr_race_access *src)
{
    memset(dst, 0, sizeof *dst);
    dst->site = src->site;
    dst->kind = src->kind;
    dst->launch = src->launch;
    dst->block = src->block;
    dst->warp = src->warp;
    dst->lane = src->lane;
    dst->seq = src->seq;
}

/* The race with its padding zeroed: a reporter's padding is whatever its
 * stack held, and examples are compared and copied as bytes (memcmp in the
 * tests, memcpy here, where a field-wise struct copy may leave the
 * destination's padding as it was), so that equal examples have equal
 * bytes for any compiler. */
static void race_bytes(wr_race *dst, const wr_race *src)
{
    memset(dst, 0, sizeof *dst);
    dst->engine = src->engine;
    dst->race_class = src->race_class;
    dst->verdict = src->verdict;
    dst->potential = src->potential;
    side_bytes(&dst->first, &src->first);
    side_bytes(&dst->second, &src->second);
    dst->space = src->space;
    dst->addr = src->addr;
}

void wr_findings_report(wr_findings *f, const wr_race *race)
{
    keyed k;
    race_bytes(&k.r, race);
    k.who[0] = who_of(f, race->first.launch);
    k.who[1] = who_of(f, race->second.launch);
    canonicalise(&k);
    add_group(f, &k, 1);
}

void wr_findings_merge(wr_findings *dst, const wr_findings *src)
{
    if (!src || src == dst)
        return;
    for (size_t i = 0; i < src->count; i++) {
        keyed k;
        memcpy(&k.r, &src->groups[i].g.example, sizeof k.r);   /* its bytes: race_bytes */
        k.who[0] = src->groups[i].who[0];
        k.who[1] = src->groups[i].who[1];
        add_group(dst, &k, src->groups[i].g.count);
    }
}

static int group_cmp(const void *pa, const void *pb)
{
    const group *a = pa, *b = pb;
    return identity_cmp(&a->g.example, a->who, &b->g.example, b->who);
}

size_t wr_findings_groups(const wr_findings *cf, const wr_race_group **out)
{
    /* The sorted copy is a cache: logically const.  It stays valid until the
     * next report or merge into f. */
    wr_findings *f = (wr_findings *)cf;
    if (!f->sorted_valid) {
        group *tmp = xrealloc(NULL, f->count * sizeof *tmp);
        if (f->count)
            memcpy(tmp, f->groups, f->count * sizeof *tmp);
        qsort(tmp, f->count, sizeof *tmp, group_cmp);
        free(f->sorted);
        f->sorted = xrealloc(NULL, f->count * sizeof *f->sorted);
        for (size_t i = 0; i < f->count; i++)
            memcpy(&f->sorted[i], &tmp[i].g, sizeof tmp[i].g);
        free(tmp);
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

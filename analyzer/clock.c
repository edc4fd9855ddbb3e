/*
 * clock.c: persistent chunked vector clocks (see clock.h).
 */
#include "clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define WR_VC_AVX2 1
#include <immintrin.h>
#else
#define WR_VC_AVX2 0
#endif

#define CHUNK_MASK (WR_VC_CHUNK - 1u)

static bool simd_allowed = true;

void wr_vc_allow_simd(bool allow) { simd_allowed = allow; }

/* Chunks this thread dropped, taken again before malloc: a lock hand-off
 * makes a chunk at each merge into a shared one and drops the chunks of
 * the clocks it replaces, and glibc's own per-thread cache holds seven of
 * a size (malloc and free were a fifth of vc's time on the lock trace;
 * with this list vc takes 9% less there).  At most POOL_MAX are kept (1 MiB); a
 * thread's list is given back when it exits.  Off under ASan, which could
 * not see a use of a dropped chunk otherwise. */
#define POOL_MAX 4096

typedef struct chunk_pool {
    wr_vc_chunk *head;   /* linked through the first bytes of v */
    uint32_t n;
    bool registered;     /* pool_key holds it, so that the thread's exit drains it */
} chunk_pool;

static __thread chunk_pool pool;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static wr_vc_chunk *pool_next(const wr_vc_chunk *c)
{
    wr_vc_chunk *next;
    memcpy(&next, c->v, sizeof next);
    return next;
}

static void pool_drain(void *arg)
{
    chunk_pool *p = arg;
    while (p->head) {
        wr_vc_chunk *c = p->head;
        p->head = pool_next(c);
        free(c);
    }
    p->n = 0;
}

static void pool_key_make(void)
{
    if (pthread_key_create(&pool_key, pool_drain))
        pool_key = (pthread_key_t)-1;
}

static wr_vc_chunk *chunk_alloc(void)
{
    wr_vc_chunk *c = pool.head;
    if (c) {
        pool.head = pool_next(c);
        pool.n--;
        return c;
    }
    return xmalloc(sizeof *c);
}

static void chunk_free(wr_vc_chunk *c)
{
    if (WR_UNDER_ASAN || pool.n >= POOL_MAX) {
        free(c);
        return;
    }
    if (!pool.registered) {
        pthread_once(&pool_once, pool_key_make);
        if (pool_key == (pthread_key_t)-1 || pthread_setspecific(pool_key, &pool)) {
            free(c);   /* no way to give the list back at exit: keep none */
            return;
        }
        pool.registered = true;
    }
    memcpy(c->v, &pool.head, sizeof pool.head);
    pool.head = c;
    pool.n++;
}

static wr_vc_chunk *chunk_new(void)
{
    wr_vc_chunk *c = chunk_alloc();
    memset(c, 0, sizeof *c);
    c->refs = 1;
    return c;
}

static wr_vc_chunk *chunk_ref(wr_vc_chunk *c)
{
    c->refs++;
    return c;
}

static void chunk_unref(wr_vc_chunk *c)
{
    if (--c->refs == 0)
        chunk_free(c);
}

/* A chunk this clock may write: its own, or a private copy of a shared one. */
static wr_vc_chunk *chunk_own(wr_vc_slot *s)
{
    if (s->c->refs > 1) {
        wr_vc_chunk *c = chunk_alloc();
        memcpy(c->v, s->c->v, sizeof c->v);
        c->refs = 1;
        s->c->refs--;
        s->c = c;
    }
    return s->c;
}

static void dir_reserve(wr_vclock *c, uint32_t n)
{
    if (n <= c->cap)
        return;
    uint32_t cap = c->cap ? c->cap : 4;
    while (cap < n)
        cap *= 2;
    c->s = xrealloc(c->s, (size_t)cap * sizeof *c->s);
    c->cap = cap;
}

/* First slot with idx >= want. */
static uint32_t dir_find(const wr_vclock *c, uint32_t want)
{
    uint32_t lo = 0, hi = c->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->s[mid].idx < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The slot of chunk idx, created empty when missing. */
static wr_vc_slot *dir_slot(wr_vclock *c, uint32_t idx)
{
    uint32_t i = dir_find(c, idx);
    if (i < c->n && c->s[i].idx == idx)
        return &c->s[i];
    dir_reserve(c, c->n + 1);
    memmove(c->s + i + 1, c->s + i, (size_t)(c->n - i) * sizeof *c->s);
    c->s[i].idx = idx;
    c->s[i].c = chunk_new();
    c->n++;
    return &c->s[i];
}

uint32_t wr_vc_get(const wr_vclock *c, uint32_t k)
{
    if (!c->n)
        return 0;
    uint32_t idx = k >> WR_VC_CHUNK_SHIFT, i = dir_find(c, idx);
    return i < c->n && c->s[i].idx == idx ? c->s[i].c->v[k & CHUNK_MASK] : 0;
}

void wr_vc_set_max(wr_vclock *c, uint32_t k, uint32_t v)
{
    if (!v || wr_vc_get(c, k) >= v)
        return;
    chunk_own(dir_slot(c, k >> WR_VC_CHUNK_SHIFT))->v[k & CHUNK_MASK] = v;
}

void wr_vc_set(wr_vclock *c, uint32_t k, uint32_t v)
{
    if (wr_vc_get(c, k) == v)
        return;
    chunk_own(dir_slot(c, k >> WR_VC_CHUNK_SHIFT))->v[k & CHUNK_MASK] = v;
}

#if WR_VC_AVX2
_Static_assert(WR_VC_CHUNK == 64, "chunk_compare_avx2 takes a chunk in 8 vectors");

/* chunk_compare in one pass of 8-entry vectors. */
__attribute__((target("avx2"))) static void chunk_compare_avx2(const wr_vc_chunk *d,
                                                             const wr_vc_chunk *src,
                                                             bool *src_more, bool *dst_more)
{
    const __m256i ones = _mm256_set1_epi32(-1);
    __m256i d_is_max = ones, s_is_max = ones;
    for (unsigned k = 0; k < 8; k++) {
        __m256i dv = _mm256_loadu_si256((const __m256i *)(const void *)(d->v + 8 * k));
        __m256i sv = _mm256_loadu_si256((const __m256i *)(const void *)(src->v + 8 * k));
        __m256i mx = _mm256_max_epu32(dv, sv);
        d_is_max = _mm256_and_si256(d_is_max, _mm256_cmpeq_epi32(mx, dv));
        s_is_max = _mm256_and_si256(s_is_max, _mm256_cmpeq_epi32(mx, sv));
    }
    *src_more = !_mm256_testc_si256(d_is_max, ones);
    *dst_more = !_mm256_testc_si256(s_is_max, ones);
}
#endif

/* Does src hold an entry above d's, and d one above src's? */
static inline void chunk_compare(const wr_vc_chunk *d, const wr_vc_chunk *src, bool *src_more,
                                 bool *dst_more)
{
#if WR_VC_AVX2
    if (simd_allowed && __builtin_cpu_supports("avx2")) {
        chunk_compare_avx2(d, src, src_more, dst_more);
        return;
    }
#endif
    uint32_t s = 0, t = 0;
    for (unsigned x = 0; x < WR_VC_CHUNK; x++) {
        s |= src->v[x] > d->v[x];
        t |= d->v[x] > src->v[x];
    }
    *src_more = s;
    *dst_more = t;
}

/* *dst join= src, chunk by chunk; true when a value of *dst grew.  Equal
 * contents adopt src's pointer, so that clocks which learned the same
 * things by different routes come to share one chunk. */
static bool chunk_join(wr_vc_slot *dst, wr_vc_chunk *src)
{
    wr_vc_chunk *d = dst->c;
    if (d == src)
        return false;
    bool src_more, dst_more;
    chunk_compare(d, src, &src_more, &dst_more);
    if (dst_more && !src_more)
        return false;
    /* the same contents: the lower address wins, so that every clock comes
     * to share one copy (the choice affects memory and time only) */
    if (!src_more && !dst_more && (uintptr_t)src > (uintptr_t)d)
        return false;
    if (!dst_more) {        /* src holds all of dst (or the same) */
        chunk_unref(d);
        dst->c = chunk_ref(src);
        return src_more;
    }
    d = chunk_own(dst);
    /* a store to every entry, so that the loop is vectorized (the
     * conditional store was a branch per entry: a third of the join's
     * time on the lock benchmark) */
    for (unsigned x = 0; x < WR_VC_CHUNK; x++) {
        uint32_t a = d->v[x], b = src->v[x];
        d->v[x] = a < b ? b : a;
    }
    return true;
}

bool wr_vc_join(wr_vclock *dst, const wr_vclock *src) { return wr_vc_join_from(dst, src, 0); }

bool wr_vc_join_from(wr_vclock *dst, const wr_vclock *src, uint32_t from_idx)
{
    if (!src->n || dst == src)
        return false;
    const wr_vc_slot *S = src->s;
    uint32_t j0 = from_idx ? dir_find(src, from_idx) : 0;
    uint32_t i = from_idx ? dir_find(dst, from_idx) : 0, j = j0, extra = 0;
    bool changed = false;
    while (j < src->n) {
        if (i < dst->n && dst->s[i].idx < S[j].idx) {
            i++;
        } else if (i < dst->n && dst->s[i].idx == S[j].idx) {
            changed |= chunk_join(&dst->s[i], S[j].c);
            i++;
            j++;
        } else {
            extra++;
            j++;
        }
    }
    if (!extra)
        return changed;
    /* insert src's other chunks, merging from the back */
    uint32_t n = dst->n + extra;
    dir_reserve(dst, n);
    int64_t a = (int64_t)dst->n - 1, b = (int64_t)src->n - 1, o = (int64_t)n - 1;
    /* dst's slots below from_idx stay where they are: every insertion lies
     * above them */
    while (b >= (int64_t)j0) {
        if (a >= 0 && dst->s[a].idx > S[b].idx) {
            dst->s[o--] = dst->s[a--];
        } else if (a >= 0 && dst->s[a].idx == S[b].idx) {
            dst->s[o--] = dst->s[a--];   /* joined above */
            b--;
        } else {
            dst->s[o].idx = S[b].idx;
            dst->s[o--].c = chunk_ref(S[b--].c);
        }
    }
    dst->n = n;
    return true;
}

void wr_vc_clear(wr_vclock *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        chunk_unref(c->s[i].c);
    c->n = 0;
}

void wr_vc_drop_below(wr_vclock *c, uint32_t idx)
{
    uint32_t k = dir_find(c, idx);
    if (!k)
        return;
    for (uint32_t i = 0; i < k; i++)
        chunk_unref(c->s[i].c);
    memmove(c->s, c->s + k, (size_t)(c->n - k) * sizeof *c->s);
    c->n -= k;
}

void wr_vc_copy(wr_vclock *dst, const wr_vclock *src)
{
    if (dst == src)
        return;
    for (uint32_t i = 0; i < src->n; i++)
        chunk_ref(src->s[i].c);
    wr_vc_clear(dst);
    dir_reserve(dst, src->n);
    if (src->n)
        memcpy(dst->s, src->s, (size_t)src->n * sizeof *src->s);
    dst->n = src->n;
}

void wr_vc_free(wr_vclock *c)
{
    wr_vc_clear(c);
    free(c->s);
    c->s = NULL;
    c->cap = 0;
}

bool wr_vc_max_into(const wr_vclock *c, uint32_t k0, uint32_t n, uint32_t *out)
{
    bool grew = false;
    if (!n || !c->n)
        return false;
    uint32_t end = k0 + n;
    for (uint32_t i = dir_find(c, k0 >> WR_VC_CHUNK_SHIFT); i < c->n; i++) {
        uint32_t base = c->s[i].idx << WR_VC_CHUNK_SHIFT;
        if (base >= end)
            break;
        uint32_t lo = base > k0 ? base : k0;
        uint32_t hi = base + WR_VC_CHUNK < end ? base + WR_VC_CHUNK : end;
        const uint32_t *v = c->s[i].c->v;
        for (uint32_t k = lo; k < hi; k++)
            if (out[k - k0] < v[k - base]) {
                out[k - k0] = v[k - base];
                grew = true;
            }
    }
    return grew;
}

void wr_vc_max_from(wr_vclock *c, uint32_t k0, uint32_t n, const uint32_t *in)
{
    for (uint32_t i = 0; i < n; i++)
        wr_vc_set_max(c, k0 + i, in[i]);
}

bool wr_vc_next(const wr_vclock *c, uint32_t from, uint32_t *key, uint32_t *val)
{
    for (uint32_t i = dir_find(c, from >> WR_VC_CHUNK_SHIFT); i < c->n; i++) {
        uint32_t k0 = c->s[i].idx << WR_VC_CHUNK_SHIFT;
        for (uint32_t x = from > k0 ? from - k0 : 0; x < WR_VC_CHUNK; x++)
            if (c->s[i].c->v[x]) {
                *key = k0 + x;
                *val = c->s[i].c->v[x];
                return true;
            }
    }
    return false;
}

uint64_t wr_vc_count(const wr_vclock *c)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->n; i++)
        for (unsigned x = 0; x < WR_VC_CHUNK; x++)
            n += c->s[i].c->v[x] != 0;
    return n;
}

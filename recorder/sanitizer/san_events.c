/* Record-time completion of sanitizer-path events (san_events.h). */
#include "san_events.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ring_format.h"

struct wrs_warp_slot {
    uint64_t key;                 /* warp_key(); 0 = empty */
    uint64_t pc;
    /* the BAR.ARVs (absolute PCs) emitted after the warp's last record: a
     * barrier callback of one of them, should the API ever report it, is
     * the same arrival */
    uint64_t arrived[4];
    uint32_t narrived;
    uint32_t held;                /* the warp's held atomic read: pool index + 1 */
};

struct wrs_held {
    wr_event ev;                  /* an atomic read (lane_addr points at `lanes`) or a
                                     cluster barrier's WAIT */
    uint64_t lanes[WR_WARP_SIZE];
    uint64_t warp_key;
    uint64_t seq;                 /* arrival order */
    uint32_t prev, next;          /* its list (or the free list: next); index + 1 */
    uint8_t writes;               /* a read-modify-write: in the word index */
    wrs_function *arrive_fn;      /* BAR.ARV may follow its PC (arrive_off): asked */
    uint64_t arrive_off;          /* when it goes out (emit_arrives_after) */
    uint64_t arrive_start;        /* the function's start */
};

/* An mbarrier of a running block (san_events.h): key 0 empty, 1 deleted. */
struct wrs_mbar_slot {
    uint64_t key;
    uint32_t launch, block, offset;
    uint32_t count;               /* arrivals per phase */
    uint64_t arrivals;            /* since its init */
};

/* Word index entry: a word of a held read-modify-write.  Keys are hashes:
 * two words sharing one only make a read-modify-write go out early. */
struct wrs_word_slot {
    uint64_t key;                 /* 0 empty, 1 deleted */
    uint32_t held;
};

struct wrs_pair_slot {
    const wrs_function *fn;       /* NULL = empty */
    uint64_t a, b;
    uint8_t answer, scope, order;
};

int wrs_finisher_init(wrs_finisher *f, const wrr_sink *down)
{
    memset(f, 0, sizeof *f);
    f->down = *down;
    f->warp_cap = 1024;
    f->warps = calloc(f->warp_cap, sizeof *f->warps);
    f->pair_cap = 1024;
    f->pairs = calloc(f->pair_cap, sizeof *f->pairs);
    f->word_cap = 1024;
    f->words = calloc(f->word_cap, sizeof *f->words);
    if (!f->warps || !f->pairs || !f->words) {
        wrs_finisher_destroy(f);
        return -1;
    }
    return 0;
}

void wrs_finisher_destroy(wrs_finisher *f)
{
    free(f->ranges);
    free(f->site_pc);
    for (size_t i = 0; i < f->nstrs; i++)
        free(f->strs[i]);
    free(f->strs);
    free(f->warps);
    free(f->pairs);
    free(f->held);
    free(f->words);
    free(f->mbars);
    memset(f, 0, sizeof *f);
}

int wrs_finisher_add_range(wrs_finisher *f, uint64_t start, uint64_t size, wrs_function *fn,
                           const wrs_module *mod)
{
    for (size_t i = 0; i < f->nranges; i++)
        if (f->ranges[i].start == start) {
            f->ranges[i].size = size;
            f->ranges[i].fn = fn;
            f->ranges[i].mod = mod;
            return 0;
        }
    if (f->nranges == f->capranges) {
        size_t cap = f->capranges ? 2 * f->capranges : 16;
        wrs_range *n = realloc(f->ranges, cap * sizeof *n);
        if (!n)
            return -1;
        f->ranges = n;
        f->capranges = cap;
    }
    /* keep sorted by start */
    size_t i = f->nranges;
    while (i > 0 && f->ranges[i - 1].start > start) {
        f->ranges[i] = f->ranges[i - 1];
        i--;
    }
    f->ranges[i] = (wrs_range){start, size, fn, mod};
    f->nranges++;
    return 0;
}

static const wrs_range *find_range(const wrs_finisher *f, uint64_t pc)
{
    size_t lo = 0, hi = f->nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->ranges[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const wrs_range *r = &f->ranges[lo - 1];
    return pc - r->start < r->size ? r : NULL;
}

/* ---- strings and site descriptors served to the drain ------------------------ */

static uint64_t intern(wrs_finisher *f, const char *s)
{
    if (!s || !*s)
        return 0;
    for (size_t i = 0; i < f->nstrs; i++)
        if (!strcmp(f->strs[i], s))
            return WRS_STR_BASE + ((uint64_t)i << 24);
    if (f->nstrs == f->capstrs) {
        size_t cap = f->capstrs ? 2 * f->capstrs : 16;
        char **n = realloc(f->strs, cap * sizeof *n);
        if (!n)
            return 0;
        f->strs = n;
        f->capstrs = cap;
    }
    size_t len = strlen(s);
    if (len >= (1u << 24))
        return 0;
    f->strs[f->nstrs] = malloc(len + 1);
    if (!f->strs[f->nstrs])
        return 0;
    memcpy(f->strs[f->nstrs], s, len + 1);
    return WRS_STR_BASE + ((uint64_t)f->nstrs++ << 24);
}

long wrs_finisher_read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
    wrs_finisher *f = ctx;
    if (addr >= WRS_STR_BASE) {
        uint64_t idx = (addr - WRS_STR_BASE) >> 24, off = addr & 0xffffffu;
        if (idx >= f->nstrs)
            return -1;
        const char *s = f->strs[idx];
        size_t slen = strlen(s) + 1;
        if (off >= slen)
            return -1;
        size_t n = slen - off < len ? slen - off : len;
        memcpy(buf, s + off, n);
        return (long)n;
    }
    /* a PC: its site descriptor (ring_format.h wrr_site_desc layout) */
    if (len < 24)
        return -1;
    const wrs_range *r = find_range(f, addr);
    uint32_t magic = WRR_SITE_MAGIC, line = 0;
    uint64_t file = 0, func = 0;
    if (r) {
        const wrs_insn *in = wrs_find_insn(r->fn, addr - r->start);
        if (in) {
            line = in->line;
            file = intern(f, wrs_insn_file(r->mod, in));
        }
        func = intern(f, wrs_display_name(r->fn));
    }
    unsigned char raw[24];
    memcpy(raw, &magic, 4);
    memcpy(raw + 4, &line, 4);
    memcpy(raw + 8, &file, 8);
    memcpy(raw + 16, &func, 8);
    memcpy(buf, raw, sizeof raw);
    f->last_desc_pc = addr;
    return (long)sizeof raw;
}

static uint32_t fin_site(void *ctx, const char *file, uint32_t line, const char *function,
                         uint64_t pc)
{
    wrs_finisher *f = ctx;
    (void)pc;                     /* the drain does not know it: we do */
    uint64_t real_pc = f->last_desc_pc;
    uint32_t id = f->down.site ? f->down.site(f->down.ctx, file, line, function, real_pc) : 0;
    if (id) {
        if (id >= f->cap_site_pc) {
            size_t cap = f->cap_site_pc ? f->cap_site_pc : 256;
            while (cap <= id)
                cap *= 2;
            uint64_t *n = realloc(f->site_pc, cap * sizeof *n);
            if (!n)
                return id;
            memset(n + f->cap_site_pc, 0, (cap - f->cap_site_pc) * sizeof *n);
            f->site_pc = n;
            f->cap_site_pc = cap;
        }
        f->site_pc[id] = real_pc;
    }
    return id;
}

static uint64_t pc_of_site(const wrs_finisher *f, uint32_t site)
{
    return site && site < f->cap_site_pc ? f->site_pc[site] : 0;
}

/* ---- per-warp state and the fence-answer cache ---------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* A warp's key: its launch too, since a CUDA graph's kernel nodes run,
 * and their records interleave, concurrently.  The launch's low 16 bits
 * tell apart the launches the table holds: it is emptied at a launch when
 * it holds WRS_WARPS_KEPT warps, and whenever those bits wrap. */
static uint64_t warp_key(uint32_t launch, uint32_t block, uint32_t warp)
{
    return (((uint64_t)block << 32) | ((uint64_t)(warp & 0xffffu) << 16) | (launch & 0xffffu)) + 1;
}

#define WRS_WARPS_KEPT (1u << 16)

static wrs_warp_slot *warp_slot(wrs_finisher *f, uint64_t key, int create)
{
    if (create && 2 * (f->warp_count + 1) > f->warp_cap) {
        size_t ncap = f->warp_cap * 2;
        wrs_warp_slot *n = calloc(ncap, sizeof *n), *old = f->warps;
        if (!n)
            return NULL;
        for (size_t i = 0; i < f->warp_cap; i++)
            if (old[i].key) {
                size_t j = mix(old[i].key) & (ncap - 1);
                while (n[j].key)
                    j = (j + 1) & (ncap - 1);
                n[j] = old[i];
            }
        free(old);
        f->warps = n;
        f->warp_cap = ncap;
    }
    size_t j = mix(key) & (f->warp_cap - 1);
    while (f->warps[j].key && f->warps[j].key != key)
        j = (j + 1) & (f->warp_cap - 1);
    if (!f->warps[j].key) {
        if (!create)
            return NULL;
        f->warps[j].key = key;
        f->warps[j].pc = 0;
        f->warps[j].held = 0;
        f->warps[j].narrived = 0;
        f->warp_count++;
    }
    return &f->warps[j];
}

static void clear_warps(wrs_finisher *f)
{
    memset(f->warps, 0, f->warp_cap * sizeof *f->warps);
    f->warp_count = 0;
}

/* Which fence every path from a to b passes: answer (wrs_answer) and, for
 * YES, the widest such scope and its order. */
static void decide(wrs_finisher *f, wrs_function *fn, uint64_t a, uint64_t b, uint8_t *answer,
                   uint8_t *scope, uint8_t *order)
{
    size_t j = mix((uint64_t)(uintptr_t)fn ^ mix(a) ^ (b * 0x9e3779b97f4a7c15ull)) &
               (f->pair_cap - 1);
    while (f->pairs[j].fn && !(f->pairs[j].fn == fn && f->pairs[j].a == a && f->pairs[j].b == b))
        j = (j + 1) & (f->pair_cap - 1);
    if (f->pairs[j].fn) {
        *answer = f->pairs[j].answer;
        *scope = f->pairs[j].scope;
        *order = f->pairs[j].order;
        return;
    }
    *answer = WRS_NO;
    *scope = 0;
    *order = 0;
    static const uint8_t scopes[] = {WR_SCOPE_SYSTEM, WR_SCOPE_DEVICE, WR_SCOPE_BLOCK};
    for (size_t k = 0; k < sizeof scopes; k++) {
        wrs_answer r = wrs_fence_between(fn, a, b, scopes[k], 0);
        if (r == WRS_YES) {
            *answer = WRS_YES;
            *scope = scopes[k];
            *order = wrs_fence_between(fn, a, b, scopes[k], 1) == WRS_YES ? WR_ORDER_SC
                                                                          : WR_ORDER_ACQ_REL;
            break;
        }
        if (r != WRS_NO) {
            *answer = (uint8_t)r;   /* UNKNOWN / UNREACHABLE: the same at every scope */
            break;
        }
    }
    /* cache (unbounded growth is avoided by resetting when half full) */
    if (2 * (f->pair_count + 1) > f->pair_cap) {
        memset(f->pairs, 0, f->pair_cap * sizeof *f->pairs);
        f->pair_count = 0;
        j = mix((uint64_t)(uintptr_t)fn ^ mix(a) ^ (b * 0x9e3779b97f4a7c15ull)) &
            (f->pair_cap - 1);
    }
    f->pairs[j] = (wrs_pair_slot){fn, a, b, *answer, *scope, *order};
    f->pair_count++;
}

/* ---- the sink ------------------------------------------------------------------ */

static int emit(wrs_finisher *f, const wr_event *ev)
{
    f->st.events_out++;
    return f->down.event(f->down.ctx, ev);
}

/* Launch `launch` among the latest launches, or NULL (an older one, or 0). */
static const struct wrs_launch_seen *launch_seen(const wrs_finisher *f, uint32_t launch)
{
    for (size_t i = 0; launch && i < sizeof f->launches / sizeof f->launches[0]; i++)
        if (f->launches[i].launch == launch)
            return &f->launches[i];
    return NULL;
}

static void complete_access(wrs_finisher *f, wr_access *a, const wrs_range *r, uint64_t pc)
{
    const wrs_insn *in = r ? wrs_find_insn(r->fn, pc - r->start) : NULL;
    unsigned k = in ? in->cls.kind : WRS_K_OTHER;
    if (k != WRS_K_LOAD && k != WRS_K_STORE && k != WRS_K_ATOMIC && k != WRS_K_RED) {
        f->st.accesses_unclassified++;
        return;
    }
    const wrs_class *c = &in->cls;
    /* the callback's read/write flags and the instruction must agree on
     * what is atomic; where they do not, the callback (what ran) wins */
    int cb_atomic = a->op == WR_OP_ATOMIC_RMW;
    int insn_rmw = c->op == WR_OP_ATOMIC_RMW;
    if (cb_atomic != insn_rmw && !(k == WRS_K_RED && a->op == WR_OP_STORE)) {
        f->st.accesses_unclassified++;
        return;
    }
    a->op = c->op;
    a->atomic_op = c->atomic_op;
    a->scope = c->scope;
    a->order = c->order;
    /* ATOMS names no scope: atomicAdd and atomicAdd_block on the block's
     * own shared memory are one instruction, taken for block scope.  Where
     * other blocks of a cluster reach that memory (DSMEM), block scope
     * would make every pair with their atomics a scope race: the narrowest
     * scope that holds them all is taken instead (SANITIZER.md) */
    const struct wrs_launch_seen *ls;
    if (c->scope_implied && c->space == WR_SPACE_SHARED && (ls = launch_seen(f, a->launch)) &&
        ls->clustered) {
        a->scope = WR_SCOPE_CLUSTER;
        f->st.shared_atomics_cluster_scoped++;
    }
    /* concrete instruction spaces only: a generic LD/ST/ATOM takes
     * whatever space its callback found (DSMEM included) */
    if (c->space <= WR_SPACE_MAX && c->space != a->space)
        f->st.space_mismatch++;
    if (a->atomic_op == WR_AOP_CAS) {
        a->cas_success = a->active_mask;
        f->st.cas_unknown++;
    } else {
        a->cas_success = 0;
    }
    f->st.accesses_classified++;
}

/* The mode of a barrier from the classification of its PC (san_events.h).
 * What the callbacks wrote: a block barrier's SYNC (the barrier callback,
 * whatever the instruction) with the callback's thread count, 0 where it
 * gave none; a cluster barrier's ARRIVE or WAIT (one callback each). */
static void complete_barrier(wrs_finisher *f, wr_barrier *b, const wrs_range *r, uint64_t pc)
{
    if (b->scope != WR_BAR_BLOCK && b->scope != WR_BAR_CLUSTER)
        return;                   /* no patch writes another: nothing to complete */
    const wrs_insn *in = r ? wrs_find_insn(r->fn, pc - r->start) : NULL;
    const wrs_class *c = in ? &in->cls : NULL;
    int known = c && c->kind == WRS_K_BARRIER && c->barmode != WRS_BARMODE_UNKNOWN;
    if (known && b->scope == WR_BAR_BLOCK)
        known = c->scope == WR_SCOPE_BLOCK;
    else if (known)               /* cluster: an arrive stays an arrive, a wait a wait */
        known = c->scope == WR_SCOPE_CLUSTER &&
                (c->barmode == WR_BARMODE_WAIT) == (b->mode == WR_BARMODE_WAIT);
    wr_barrier nb = *b;
    if (known)
        nb.mode = c->barmode;
    else
        f->st.barrier_mode_unknown++;
    if (nb.scope == WR_BAR_BLOCK) {
        /* PTX's bar.arrive always names its count, and a block ARRIVE must
         * carry it: without one from the callback, SYNC is what can be
         * recorded (its arrival counted, the warp then seen to wait) */
        if (nb.mode == WR_BARMODE_ARRIVE && !nb.expected) {
            nb.mode = WR_BARMODE_SYNC;
            f->st.barrier_arrive_uncounted++;
        }
        /* no count for a sync: all of the block's threads, as the device
         * API records __syncthreads (0 where the launch is not known: "all
         * of them" in the format too) */
        const struct wrs_launch_seen *ls;
        if (!nb.expected && (ls = launch_seen(f, nb.launch)))
            nb.expected = ls->block_threads;
    }
    /* never an invalid record: the event as converted passed the same
     * check, so it is kept where the completed one would not */
    if (wr_barrier_mode_problem(&nb)) {
        if (known)
            f->st.barrier_mode_unknown++;
        return;
    }
    *b = nb;
}

/* ---- atomic reads held until their warp's next record (san_events.h) ------ */

/* word: the access's address / 4.  A shared word is keyed by (owner
 * block, offset) whether its own block reaches it (SHARED: the issuing
 * block) or another block of the cluster does (DSMEM: the owner is in the
 * address), so that the two overlap and equal offsets of two blocks do
 * not. */
static uint64_t word_key(const wr_access *a, uint64_t word)
{
    unsigned space = a->space;
    if (space == WR_SPACE_SHARED) {
        word = (WRR_DSMEM_ADDR(a->block, 0) >> 2) + (uint32_t)word;
        space = WR_SPACE_DSMEM;
    }
    uint64_t k = mix(word ^ ((uint64_t)space << 58));
    return k < 2 ? k + 2 : k;
}

typedef void (*word_fn)(wrs_finisher *f, uint64_t key, void *arg);

/* fn once per 4-byte word of a (a repeat of the previous word skipped: the
 * index adds and removes a held access's words in this same order). */
static void for_each_word(wrs_finisher *f, const wr_access *a, word_fn fn, void *arg)
{
    uint64_t last = UINT64_MAX;
    unsigned size = a->size ? a->size : 1;
    for (unsigned lane = 0; lane < WR_WARP_SIZE; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane);
        uint64_t w = addr >> 2, end = (addr + size - 1) >> 2;
        if (end < w)
            end = w;
        for (;; w++) {
            if (w != last)
                fn(f, word_key(a, w), arg);
            last = w;
            if (w == end)
                break;
        }
        if (a->addr_mode == WR_ADDR_UNIFORM)
            break;
    }
}

static int words_rehash(wrs_finisher *f, size_t cap)
{
    wrs_word_slot *n = calloc(cap, sizeof *n), *old = f->words;
    if (!n)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < f->word_cap; i++)
        if (old[i].key > 1) {
            size_t j = old[i].key & (cap - 1);
            while (n[j].key)
                j = (j + 1) & (cap - 1);
            n[j] = old[i];
            used++;
        }
    free(old);
    f->words = n;
    f->word_cap = cap;
    f->word_used = used;
    return 0;
}

static void word_add(wrs_finisher *f, uint64_t key, void *arg)
{
    uint32_t idx = *(const uint32_t *)arg;
    if (2 * (f->word_used + 1) > f->word_cap && words_rehash(f, 2 * f->word_cap) != 0)
        return;   /* unindexed: that write only misses being emitted early */
    size_t j = key & (f->word_cap - 1);
    while (f->words[j].key > 1)
        j = (j + 1) & (f->word_cap - 1);
    if (!f->words[j].key)
        f->word_used++;
    f->words[j] = (wrs_word_slot){key, idx};
}

static void word_del(wrs_finisher *f, uint64_t key, void *arg)
{
    uint32_t idx = *(const uint32_t *)arg;
    for (size_t j = key & (f->word_cap - 1); f->words[j].key; j = (j + 1) & (f->word_cap - 1))
        if (f->words[j].key == key && f->words[j].held == idx) {
            f->words[j].key = 1;
            return;
        }
}

typedef struct overlap_query {
    uint32_t skip;               /* the held access being emitted (0: none) */
    uint64_t last_seq;           /* newest overlapping held write; 0: none */
} overlap_query;

static void word_probe(wrs_finisher *f, uint64_t key, void *arg)
{
    overlap_query *q = arg;
    for (size_t j = key & (f->word_cap - 1); f->words[j].key; j = (j + 1) & (f->word_cap - 1))
        if (f->words[j].key == key && f->words[j].held != q->skip) {
            uint64_t seq = f->held[f->words[j].held - 1].seq;
            if (seq > q->last_seq)
                q->last_seq = seq;
        }
}

static void list_unlink(wrs_finisher *f, wrs_held_list *l, uint32_t idx)
{
    wrs_held *h = &f->held[idx - 1];
    if (h->prev)
        f->held[h->prev - 1].next = h->next;
    else
        l->head = h->next;
    if (h->next)
        f->held[h->next - 1].prev = h->prev;
    else
        l->tail = h->prev;
}

/* The launch of a warp's event (access, barrier, warp sync). */
static uint32_t launch_of(const wr_event *ev)
{
    switch (ev->kind) {
    case WR_EV_ACCESS:
        return ev->u.access.launch;
    case WR_EV_BARRIER:
        return ev->u.barrier.launch;
    default:
        return ev->u.warp_sync.launch;
    }
}

/* The warp an event of a warp belongs to, and its lanes. */
static void warp_of(const wr_event *ev, uint32_t *block, uint32_t *warp, uint32_t *mask)
{
    switch (ev->kind) {
    case WR_EV_ACCESS:
        *block = ev->u.access.block, *warp = ev->u.access.warp, *mask = ev->u.access.active_mask;
        break;
    case WR_EV_BARRIER:
        *block = ev->u.barrier.block, *warp = ev->u.barrier.warp, *mask = ev->u.barrier.active_mask;
        break;
    default:
        *block = ev->u.warp_sync.block, *warp = ev->u.warp_sync.warp, *mask = ev->u.warp_sync.mask;
        break;
    }
}

/* The block barrier arrivals (BAR.ARV, which the API does not report) its
 * warp makes after the record of ev, at offset off of fn, before its next
 * record: emitted right after ev (san_events.h). */
static int emit_arrives_after(wrs_finisher *f, const wr_event *ev, wrs_function *fn, uint64_t off,
                              uint64_t fn_start)
{
    if (!fn || !fn->unrecorded.bar_arrive)
        return 0;
    uint32_t ids[4], counts[4];
    uint64_t pcs[4];
    int n = wrs_arrives_after(fn, off, ids, counts, pcs, 4);
    uint32_t block, warp, mask;
    warp_of(ev, &block, &warp, &mask);
    wrs_warp_slot *slot = warp_slot(f, warp_key(launch_of(ev), block, warp), 0);
    if (slot) {
        slot->narrived = (uint32_t)n;
        for (int i = 0; i < n; i++)
            slot->arrived[i] = fn_start + pcs[i];
    }
    for (int i = 0; i < n; i++) {
        wr_event b;
        memset(&b, 0, sizeof b);
        b.kind = WR_EV_BARRIER;
        b.site = 0;
        b.u.barrier.launch = launch_of(ev);
        warp_of(ev, &b.u.barrier.block, &b.u.barrier.warp, &b.u.barrier.active_mask);
        b.u.barrier.barrier_id = ids[i];
        b.u.barrier.expected = counts[i];
        b.u.barrier.scope = WR_BAR_BLOCK;
        b.u.barrier.mode = WR_BARMODE_ARRIVE;
        if (wr_barrier_mode_problem(&b.u.barrier)) {
            f->st.arrives_invalid++;
            continue;
        }
        f->st.arrives_inferred++;
        if (emit(f, &b) != 0)
            return -1;
    }
    return 0;
}

static int emit_held(wrs_finisher *f, uint32_t idx, bool early)
{
    wrs_held *h = &f->held[idx - 1];
    list_unlink(f, h->writes ? &f->held_writes : &f->held_loads, idx);
    if (h->writes)
        for_each_word(f, &h->ev.u.access, word_del, &idx);
    wrs_warp_slot *slot = warp_slot(f, h->warp_key, 0);
    if (slot && slot->held == idx)
        slot->held = 0;
    if (early)
        f->st.held_flushed_early++;
    int rc = emit(f, &h->ev);
    if (rc == 0)
        rc = emit_arrives_after(f, &h->ev, h->arrive_fn, h->arrive_off, h->arrive_start);
    h->next = f->held_free;
    f->held_free = idx;
    return rc;
}

/* Before an atomic access `a` goes out: the held read-modify-writes of other
 * warps, in arrival order, up to the newest that shares a word with it. */
static int emit_writes_before(wrs_finisher *f, const wr_access *a, uint32_t skip)
{
    if (!f->held_writes.head)
        return 0;
    overlap_query q = {skip, 0};
    for_each_word(f, a, word_probe, &q);
    if (!q.last_seq)
        return 0;
    uint32_t cur = f->held_writes.head;
    while (cur && f->held[cur - 1].seq <= q.last_seq) {
        uint32_t next = f->held[cur - 1].next;
        if (cur != skip && emit_held(f, cur, true) != 0)
            return -1;
        cur = next;
    }
    return 0;
}

/* Everything held, in arrival order. */
static int emit_all_held(wrs_finisher *f)
{
    for (;;) {
        uint32_t w = f->held_writes.head, l = f->held_loads.head;
        if (!w && !l)
            return 0;
        uint32_t first = !l || (w && f->held[w - 1].seq < f->held[l - 1].seq) ? w : l;
        if (emit_held(f, first, true) != 0)
            return -1;
    }
}

/* A CAS whose warp's next record is the same CAS again on the same words:
 * the lanes that retry failed (a spin lock's loop), the others succeeded.
 * Any other next record leaves the outcome unknown (every lane counted as
 * successful, san_events.h). */
static void cas_outcome_from_retry(wrs_finisher *f, wr_event *held, const wr_event *next)
{
    wr_access *a = &held->u.access;
    if (held->kind != WR_EV_ACCESS || a->atomic_op != WR_AOP_CAS || next->kind != WR_EV_ACCESS ||
        next->u.access.atomic_op != WR_AOP_CAS)
        return;
    uint64_t pc = pc_of_site(f, held->site);
    if (!pc || pc != pc_of_site(f, next->site))
        return;
    uint32_t retry = next->u.access.active_mask & a->active_mask;
    if (!retry)
        return;
    for (unsigned l = 0; l < 32; l++)
        if ((retry >> l & 1) &&
            wr_access_lane_addr(a, l) != wr_access_lane_addr(&next->u.access, l))
            return;
    a->cas_success = a->active_mask & ~retry;
    f->st.cas_unknown--;
    f->st.cas_retries_seen++;
}

/* The warp moved on: its held read goes out (after the writes it may have
 * read from), at the position of the record that follows it (next). */
static int release_held(wrs_finisher *f, wrs_warp_slot *slot, const wr_event *next)
{
    uint32_t idx = slot->held;
    cas_outcome_from_retry(f, &f->held[idx - 1].ev, next);
    /* a held wait reads no memory: no write has to go before it */
    if (f->held[idx - 1].ev.kind == WR_EV_ACCESS &&
        emit_writes_before(f, &f->held[idx - 1].ev.u.access, idx) != 0)
        return -1;
    return emit_held(f, idx, false);
}

/* Holds e (an atomic read or a cluster wait of the warp in slot).  Returns
 * 1 when it could not (no memory): the caller emits it at once. */
static int hold(wrs_finisher *f, wrs_warp_slot *slot, const wr_event *e)
{
    if (!f->held_free) {
        uint32_t cap = f->held_cap ? 2 * f->held_cap : 64;
        wrs_held *n = realloc(f->held, cap * sizeof *n);
        if (!n)
            return 1;
        f->held = n;
        for (uint32_t i = 0; i < f->held_cap; i++)   /* accesses point into the pool */
            if (n[i].ev.kind == WR_EV_ACCESS)
                n[i].ev.u.access.lane_addr = n[i].lanes;
        for (uint32_t i = cap; i > f->held_cap; i--) {
            n[i - 1].next = f->held_free;
            f->held_free = i;
        }
        f->held_cap = cap;
    }
    uint32_t idx = f->held_free;
    wrs_held *h = &f->held[idx - 1];
    f->held_free = h->next;
    h->ev = *e;
    h->writes = 0;
    if (e->kind == WR_EV_ACCESS) {
        if (e->u.access.addr_mode == WR_ADDR_VECTOR)
            memcpy(h->lanes, e->u.access.lane_addr, sizeof h->lanes);
        h->ev.u.access.lane_addr = h->lanes;
        h->writes = wr_op_writes(e->u.access.op);
    }
    h->warp_key = slot->key;
    h->arrive_fn = NULL;
    h->arrive_off = h->arrive_start = 0;
    h->seq = ++f->held_seq;
    wrs_held_list *l = h->writes ? &f->held_writes : &f->held_loads;
    h->prev = l->tail;
    h->next = 0;
    if (l->tail)
        f->held[l->tail - 1].next = idx;
    else
        l->head = idx;
    l->tail = idx;
    if (h->writes)
        for_each_word(f, &h->ev.u.access, word_add, &idx);
    slot->held = idx;
    if (e->kind == WR_EV_ACCESS)
        f->st.reads_held++;
    else
        f->st.waits_held++;
    return 0;
}

/* ---- mbarriers (san_events.h) ---------------------------------------------- */

static uint64_t mbar_key(uint32_t launch, uint32_t block, uint32_t offset)
{
    uint64_t k = mix(((uint64_t)launch << 32 | block) ^ mix(offset));
    return k > 1 ? k : k + 2;
}

static wrs_mbar_slot *mbar_find(wrs_finisher *f, const wr_barrier *b, int create)
{
    if (create && 2 * (f->mbar_used + 1) > f->mbar_cap) {
        size_t ncap = f->mbar_cap ? 2 * f->mbar_cap : 64;
        wrs_mbar_slot *n = calloc(ncap, sizeof *n), *old = f->mbars;
        if (!n)
            return NULL;
        size_t used = 0;
        for (size_t i = 0; i < f->mbar_cap; i++)
            if (old[i].key > 1) {
                size_t j = old[i].key & (ncap - 1);
                while (n[j].key)
                    j = (j + 1) & (ncap - 1);
                n[j] = old[i];
                used++;
            }
        free(old);
        f->mbars = n;
        f->mbar_cap = ncap;
        f->mbar_used = used;
    }
    if (!f->mbar_cap)
        return NULL;
    uint64_t key = mbar_key(b->launch, b->block, b->barrier_id);
    size_t j = key & (f->mbar_cap - 1), tomb = SIZE_MAX;
    for (;;) {
        wrs_mbar_slot *m = &f->mbars[j];
        if (!m->key)
            break;
        if (m->key == 1 && tomb == SIZE_MAX)
            tomb = j;
        if (m->key == key && m->launch == b->launch && m->block == b->block &&
            m->offset == b->barrier_id)
            return m;
        j = (j + 1) & (f->mbar_cap - 1);
    }
    if (!create)
        return NULL;
    if (tomb != SIZE_MAX)
        j = tomb;
    else
        f->mbar_used++;
    wrs_mbar_slot *m = &f->mbars[j];
    *m = (wrs_mbar_slot){key, b->launch, b->block, b->barrier_id, 0, 0};
    return m;
}

/* A block's mbarriers end with it. */
static void mbar_block_exit(wrs_finisher *f, uint32_t launch, uint32_t block)
{
    for (size_t i = 0; i < f->mbar_cap; i++)
        if (f->mbars[i].key > 1 && f->mbars[i].launch == launch && f->mbars[i].block == block)
            f->mbars[i].key = 1;
}

/* Completes an mbarrier record (init's count, wait's parity) or says it
 * goes (0: drop). */
static int complete_mbarrier(wrs_finisher *f, wr_barrier *b, const wrs_range *r, uint64_t pc)
{
    if (b->mode == WR_BARMODE_INIT) {
        uint32_t count = 0;
        wrs_mbar_slot *m = mbar_find(f, b, 1);
        const struct wrs_launch_seen *ls = launch_seen(f, b->launch);
        const uint32_t *geometry = ls ? ls->geometry : NULL;
        if (!r || !wrs_mbarrier_init_count_in(r->fn, pc - r->start, geometry, &count)) {
            f->st.mbarrier_count_unknown++;
            if (m)
                m->count = 0;
            return 0;
        }
        if (!m)
            return 0;
        m->count = count;
        m->arrivals = 0;
        b->expected = count;
        f->st.mbarrier_inits++;
        return 1;
    }
    wrs_mbar_slot *m = mbar_find(f, b, 0);
    if (!m || !m->count) {
        f->st.mbarrier_untracked++;
        return 0;
    }
    if (b->mode == WR_BARMODE_WAIT) {
        uint64_t completed = m->arrivals / m->count;
        b->expected = completed ? (uint32_t)((completed - 1) & 1) : 1;
    } else {
        m->arrivals += (uint64_t)(b->expected ? b->expected : 1) *
                       (uint64_t)__builtin_popcount(b->active_mask);
    }
    return 1;
}

static void set_held_arrive(wrs_finisher *f, wrs_warp_slot *slot, wrs_function *fn, uint64_t off,
                            uint64_t start)
{
    wrs_held *h = &f->held[slot->held - 1];
    h->arrive_fn = fn;
    h->arrive_off = off;
    h->arrive_start = start;
}

static int fin_event(void *ctx, const wr_event *ev)
{
    wrs_finisher *f = ctx;
    f->st.events_in++;
    uint32_t block, warp, mask;
    switch (ev->kind) {
    case WR_EV_KERNEL_LAUNCH:
        if (emit_all_held(f) != 0)
            return -1;
        {
            uint32_t i = f->launches_next++ % (sizeof f->launches / sizeof f->launches[0]);
            f->launches[i].launch = ev->u.launch.launch;
            for (int k = 0; k < 3; k++) {
                f->launches[i].geometry[k] = ev->u.launch.block_dim[k];
                f->launches[i].geometry[3 + k] = ev->u.launch.grid[k];
            }
            f->launches[i].clustered = ev->u.launch.cluster[0] > 1 ||
                                       ev->u.launch.cluster[1] > 1 || ev->u.launch.cluster[2] > 1;
            f->launches[i].block_threads = ev->u.launch.block_dim[0] *
                                           ev->u.launch.block_dim[1] * ev->u.launch.block_dim[2];
        }
        if (f->warp_count >= WRS_WARPS_KEPT || !(ev->u.launch.launch & 0xffffu))
            clear_warps(f);
        return emit(f, ev);
    case WR_EV_ACCESS:
        block = ev->u.access.block, warp = ev->u.access.warp, mask = ev->u.access.active_mask;
        break;
    case WR_EV_BARRIER:
        block = ev->u.barrier.block, warp = ev->u.barrier.warp, mask = ev->u.barrier.active_mask;
        break;
    case WR_EV_WARP_SYNC:
        block = ev->u.warp_sync.block, warp = ev->u.warp_sync.warp, mask = ev->u.warp_sync.mask;
        break;
    case WR_EV_BLOCK_ENTER:
        return emit(f, ev);
    default:
        /* a host event or block exit orders what is held: out first */
        if (emit_all_held(f) != 0)
            return -1;
        if (ev->kind == WR_EV_BLOCK_EXIT && f->mbar_used)
            mbar_block_exit(f, ev->u.block.launch, ev->u.block.block);
        return emit(f, ev);
    }
    wr_event e = *ev;
    uint64_t pc = pc_of_site(f, ev->site);
    const wrs_range *r = pc ? find_range(f, pc) : NULL;
    int grid = r ? wrs_grid_sync_role(r->fn, pc - r->start) : WRS_GRID_NONE;
    if (grid == WRS_GRID_UNKNOWN)
        f->st.grid_sync_unknown++;
    if (e.kind == WR_EV_ACCESS)
        complete_access(f, &e.u.access, r, pc);
    else if (e.kind == WR_EV_BARRIER && e.u.barrier.scope == WR_BAR_MBARRIER) {
        if (!complete_mbarrier(f, &e.u.barrier, r, pc))
            return 0;
    } else if (e.kind == WR_EV_BARRIER)
        complete_barrier(f, &e.u.barrier, r, pc);
    uint64_t key = warp_key(launch_of(&e), block, warp);
    wrs_warp_slot *slot = warp_slot(f, key, 1);
    if (slot && slot->held && release_held(f, slot, &e) != 0)
        return -1;
    if (slot && e.kind == WR_EV_BARRIER && e.u.barrier.scope == WR_BAR_BLOCK) {
        for (uint32_t i = 0; i < slot->narrived; i++)
            if (slot->arrived[i] == pc) {
                f->st.arrives_reported_too++;   /* emitted already */
                slot->pc = pc;
                return 0;
            }
    }
    if (slot)
        slot->narrived = 0;
    /* grid.sync(): its parts go, its second block barrier stands for the
     * grid barrier (san_events.h) */
    if (grid == WRS_GRID_ARRIVE_BAR || grid == WRS_GRID_PART) {
        f->st.grid_sync_parts++;
        if (slot)
            slot->pc = pc;
        return 0;
    }
    if (grid == WRS_GRID_WAIT_BAR && e.kind == WR_EV_BARRIER) {
        e.u.barrier.scope = WR_BAR_GRID;
        e.u.barrier.mode = WR_BARMODE_SYNC;
        e.u.barrier.barrier_id = 0;
        e.u.barrier.expected = 0;    /* all of the grid's threads */
        f->st.grid_syncs++;
    }
    if (slot && slot->pc && r && grid != WRS_GRID_WAIT_BAR) {
        const wrs_range *pr = find_range(f, slot->pc);
        if (pr && pr->fn == r->fn) {
            uint8_t answer, scope, order;
            f->st.fence_queries++;
            decide(f, r->fn, slot->pc - pr->start, pc - r->start, &answer, &scope, &order);
            if (answer == WRS_YES) {
                wr_event fe;
                memset(&fe, 0, sizeof fe);
                fe.kind = WR_EV_FENCE;
                fe.site = 0;
                fe.u.fence.launch = launch_of(&e);
                fe.u.fence.block = block;
                fe.u.fence.warp = warp;
                fe.u.fence.active_mask = mask;
                fe.u.fence.scope = scope;
                fe.u.fence.order = order;
                f->st.fences_inferred++;
                if (emit(f, &fe) != 0)
                    return -1;
            } else if (answer == WRS_UNKNOWN) {
                f->st.fence_unknown++;
            } else if (answer == WRS_UNREACHABLE) {
                f->st.fence_unreachable++;
            }
        } else {
            f->st.fence_cross_function++;
        }
    }
    if (slot)
        slot->pc = pc;
    /* a wait goes out once its warp has moved on (san_events.h) */
    wrs_function *afn = r ? r->fn : NULL;
    uint64_t aoff = r ? pc - r->start : 0, astart = r ? r->start : 0;
    /* (an mbarrier's wait is recorded after it succeeded: the attempt
     * callback has its result) */
    if (e.kind == WR_EV_BARRIER && e.u.barrier.mode == WR_BARMODE_WAIT &&
        e.u.barrier.scope != WR_BAR_MBARRIER && slot) {
        int rc = hold(f, slot, &e);
        if (rc == 0)
            set_held_arrive(f, slot, afn, aoff, astart);
        if (rc <= 0)
            return rc;
    }
    if (e.kind == WR_EV_ACCESS && wr_op_is_atomic(e.u.access.op)) {
        if (wr_op_reads(e.u.access.op) && slot) {
            int rc = hold(f, slot, &e);
            if (rc == 0)
                set_held_arrive(f, slot, afn, aoff, astart);
            if (rc <= 0)
                return rc;
        }
        if (emit_writes_before(f, &e.u.access, 0) != 0)
            return -1;
    }
    if (emit(f, &e) != 0)
        return -1;
    return emit_arrives_after(f, &e, afn, aoff, astart);
}

/* The stream ends: nothing may stay held. */
static int fin_finish(void *ctx)
{
    return emit_all_held(ctx);
}

static int fin_flush(void *ctx)
{
    wrs_finisher *f = ctx;
    return f->down.flush ? f->down.flush(f->down.ctx) : 0;
}

static const char *fin_error(void *ctx)
{
    wrs_finisher *f = ctx;
    return f->down.error ? f->down.error(f->down.ctx) : NULL;
}

void wrs_finisher_sink(wrs_finisher *f, wrr_sink *out)
{
    out->ctx = f;
    out->event = fin_event;
    out->flush = fin_flush;
    out->site = fin_site;
    out->finish = fin_finish;
    out->error = fin_error;
    out->encoded = NULL;   /* it rewrites the stream event by event: no drain workers */
}

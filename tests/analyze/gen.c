/* Synthetic traces and a conflict-detecting engine double (gen.h). */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warprace/trace.h"

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t x = *s;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

static int put(wr_writer *w, wr_event *ev, gen_result *r)
{
    wr_error err;
    if (wr_writer_event(w, ev, &err)) {
        fprintf(stderr, "gen: %s\n", err.msg);
        return -1;
    }
    r->events++;
    if (ev->kind == WR_EV_ACCESS) {
        r->accesses++;
        r->thread_accesses += (uint64_t)__builtin_popcount(ev->u.access.active_mask);
    }
    if (ev->kind == WR_EV_KERNEL_LAUNCH)
        r->launches++;
    return 0;
}

int gen_trace(const char *path, const gen_opts *o, gen_result *out)
{
    wr_error err;
    wr_header h = {.version_major = WR_FORMAT_MAJOR, .version_minor = WR_FORMAT_MINOR,
                   .producer = "gen", .producer_version = "1", .device = "Synthetic GPU",
                   .sm_arch = 90, .warp_size = 32, .host = "test", .command = "gen"};
    wr_writer_options wo = {.chunk_bytes = o->chunk_bytes};
    wr_writer *w = wr_writer_open(path, &h, &wo, &err);
    if (!w) {
        fprintf(stderr, "gen: %s\n", err.msg);
        return -1;
    }
    gen_result r;
    memset(&r, 0, sizeof r);
    uint64_t s = o->seed * 2 + 1;
    uint32_t kern[2] = {wr_writer_kernel(w, "gen_a"), wr_writer_kernel(w, "gen_b")};
    uint32_t sites[8];
    for (unsigned i = 0; i < 8; i++) {
        char fn[16];
        snprintf(fn, sizeof fn, "f%u", i % 3);
        sites[i] = wr_writer_site(w, 0x1000 + 16 * i, "gen.cu", 10 + i, fn);
    }
    uint64_t base = 0x7f0000000000ull;
    uint32_t buf = wr_writer_alloc(w, base, (uint64_t)o->words * 4, WR_SPACE_GLOBAL, "buf");
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ALLOC;
    ev.u.alloc.alloc = buf;
    if (put(w, &ev, &r))
        goto fail;
    uint64_t lanes[32];
    for (unsigned l = 1; l <= o->launches; l++) {
        if (o->abandon_half && l == o->launches / 2 + 1) {
            if (wr_writer_flush(w, &err)) {
                fprintf(stderr, "gen: %s\n", err.msg);
                goto fail;
            }
            out[0] = r; /* what reaches the file */
        }
        memset(&ev, 0, sizeof ev);
        ev.kind = WR_EV_KERNEL_LAUNCH;
        ev.u.launch = (wr_launch){.launch = l, .kernel = kern[(l - 1) % 2],
                                  .grid = {o->blocks, 1, 1}, .block_dim = {32 * o->warps, 1, 1},
                                  .cluster = {1, 1, 1}, .stream = l % 2};
        if (put(w, &ev, &r))
            goto fail;
        if (o->lost && l == 1) {
            memset(&ev, 0, sizeof ev);
            ev.kind = WR_EV_LOST;
            ev.u.lost = (wr_lost){.count = o->lost, .launch = 1, .block = 0};
            if (put(w, &ev, &r))
                goto fail;
        }
        for (unsigned b = 0; b < o->blocks; b++) {
            memset(&ev, 0, sizeof ev);
            ev.kind = WR_EV_BLOCK_ENTER;
            ev.u.block = (wr_block_mark){.launch = l, .block = b};
            if (put(w, &ev, &r))
                goto fail;
            if (o->sync_mix) {   /* the block's mbarrier: one arrival per warp */
                memset(&ev, 0, sizeof ev);
                ev.kind = WR_EV_BARRIER;
                ev.u.barrier = (wr_barrier){.launch = l, .block = b, .active_mask = 1,
                                            .expected = o->warps, .scope = WR_BAR_MBARRIER,
                                            .mode = WR_BARMODE_INIT};
                if (put(w, &ev, &r))
                    goto fail;
            }
        }
        unsigned mbar_phase = 0;
        for (unsigned p = 0; p < o->phases; p++) {
            for (unsigned st = 0; st < o->steps; st++)
                for (unsigned b = 0; b < o->blocks; b++)
                    for (unsigned wp = 0; wp < o->warps; wp++) {
                        uint64_t x = rnd(&s);
                        memset(&ev, 0, sizeof ev);
                        ev.kind = WR_EV_ACCESS;
                        ev.site = sites[x % 8];
                        wr_access *a = &ev.u.access;
                        a->launch = l;
                        a->block = b;
                        a->warp = wp;
                        a->active_mask = (x >> 8) % 4 == 0 ? (uint32_t)(x >> 16) | 1u
                                                           : WR_FULL_MASK;
                        unsigned opk = (unsigned)(x >> 48) % 10;
                        a->op = opk < 5 ? WR_OP_LOAD : opk < 9 ? WR_OP_STORE : WR_OP_ATOMIC_RMW;
                        if (a->op == WR_OP_ATOMIC_RMW) {
                            a->atomic_op = WR_AOP_ADD;
                            a->scope = WR_SCOPE_DEVICE;
                            a->order = WR_ORDER_RELAXED;
                        }
                        a->space = WR_SPACE_GLOBAL;
                        a->size = 4;
                        uint64_t word = rnd(&s) % o->words;
                        switch ((x >> 56) % 3) {
                        case 0:
                            a->addr_mode = WR_ADDR_UNIFORM;
                            a->base = base + 4 * word;
                            break;
                        case 1:
                            a->addr_mode = WR_ADDR_STRIDED;
                            a->stride = 4;
                            a->base = base + 4 * (word > o->words - 32 ? o->words - 32 : word);
                            break;
                        default:
                            a->addr_mode = WR_ADDR_VECTOR;
                            for (unsigned i = 0; i < 32; i++)
                                lanes[i] = (a->active_mask >> i & 1)
                                               ? base + 4 * (rnd(&s) % o->words) : 0;
                            a->lane_addr = lanes;
                            break;
                        }
                        if (put(w, &ev, &r))
                            goto fail;
                    }
            unsigned how = o->sync_mix ? (unsigned)(rnd(&s) % 3) : 0;
            for (unsigned b = 0; b < o->blocks; b++)
                for (unsigned wp = 0; wp < o->warps; wp++) {
                    memset(&ev, 0, sizeof ev);
                    ev.kind = WR_EV_BARRIER;
                    ev.u.barrier = (wr_barrier){.launch = l, .block = b, .warp = wp,
                                                .active_mask = WR_FULL_MASK,
                                                .expected = 32 * o->warps};
                    if (how == 1 && wp == 0)
                        ev.u.barrier.mode = WR_BARMODE_ARRIVE;
                    if (how == 2)
                        ev.u.barrier = (wr_barrier){.launch = l, .block = b, .warp = wp,
                                                    .active_mask = 1, .scope = WR_BAR_MBARRIER,
                                                    .mode = WR_BARMODE_ARRIVE};
                    if (put(w, &ev, &r))
                        goto fail;
                }
            if (how == 2) {   /* every warp waits for the phase all of them completed */
                for (unsigned b = 0; b < o->blocks; b++)
                    for (unsigned wp = 0; wp < o->warps; wp++) {
                        memset(&ev, 0, sizeof ev);
                        ev.kind = WR_EV_BARRIER;
                        ev.u.barrier = (wr_barrier){.launch = l, .block = b, .warp = wp,
                                                    .active_mask = WR_FULL_MASK,
                                                    .expected = mbar_phase & 1u,
                                                    .scope = WR_BAR_MBARRIER,
                                                    .mode = WR_BARMODE_WAIT};
                        if (put(w, &ev, &r))
                            goto fail;
                    }
                mbar_phase++;
            }
        }
        for (unsigned b = 0; b < o->blocks; b++) {
            memset(&ev, 0, sizeof ev);
            ev.kind = WR_EV_BLOCK_EXIT;
            ev.u.block = (wr_block_mark){.launch = l, .block = b};
            if (put(w, &ev, &r))
                goto fail;
        }
        memset(&ev, 0, sizeof ev);
        ev.kind = WR_EV_KERNEL_END;
        ev.u.kernel_end.launch = l;
        if (put(w, &ev, &r))
            goto fail;
    }
    if (o->abandon_half) {
        wr_writer_abandon(w);
        return 0;
    }
    *out = r;
    if (wr_writer_close(w, &err)) {
        fprintf(stderr, "gen: %s\n", err.msg);
        return -1;
    }
    return 0;
fail:
    wr_writer_abandon(w);
    return -1;
}

/* ---- the conflict engine double ------------------------------------------ */

typedef struct acc {
    wr_race_access who;
    bool valid;
} acc;

typedef struct entry {
    uint64_t key;       /* word address | space << 62; 0 = empty */
    acc write, read;
} entry;

typedef struct conflict {
    wr_engine_config cfg;
    entry *tab;
    size_t n, cap;
} conflict;

static void *c_create(const wr_engine_config *cfg)
{
    conflict *c = calloc(1, sizeof *c);
    c->cfg = *cfg;
    c->cap = 1024;
    c->tab = calloc(c->cap, sizeof *c->tab);
    return c;
}

static size_t hidx(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

static entry *lookup(conflict *c, uint64_t key)
{
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap * 2;
        entry *nt = calloc(ncap, sizeof *nt);
        for (size_t i = 0; i < c->cap; i++)
            if (c->tab[i].key) {
                size_t j = hidx(c->tab[i].key, ncap);
                while (nt[j].key)
                    j = (j + 1) & (ncap - 1);
                nt[j] = c->tab[i];
            }
        free(c->tab);
        c->tab = nt;
        c->cap = ncap;
    }
    size_t i = hidx(key, c->cap);
    while (c->tab[i].key && c->tab[i].key != key)
        i = (i + 1) & (c->cap - 1);
    if (!c->tab[i].key) {
        c->tab[i].key = key;
        c->n++;
    }
    return &c->tab[i];
}

static uint8_t class_of(const wr_race_access *a, const wr_race_access *b)
{
    if (a->launch != b->launch)
        return WR_CLASS_INTER_KERNEL;
    if (a->block != b->block)
        return WR_CLASS_INTER_BLOCK;
    if (a->warp != b->warp)
        return WR_CLASS_INTER_WARP;
    return WR_CLASS_INTRA_WARP;
}

static bool same_thread(const wr_race_access *a, const wr_race_access *b)
{
    return a->launch == b->launch && a->block == b->block && a->warp == b->warp &&
           a->lane == b->lane;
}

static void report(conflict *c, const acc *prev, const wr_race_access *now, uint64_t addr)
{
    if (!prev->valid || same_thread(&prev->who, now))
        return;
    if (prev->who.kind == WR_KIND_ATOMIC && now->kind == WR_KIND_ATOMIC)
        return;
    wr_race r;
    memset(&r, 0, sizeof r);
    r.engine = c->cfg.engine_index;
    r.race_class = class_of(&prev->who, now);
    r.first = prev->who;
    r.second = *now;
    r.space = WR_SPACE_GLOBAL;
    r.addr = addr;
    wr_findings_report(c->cfg.findings, &r);
}

static void c_event(void *self, const wr_event *ev)
{
    conflict *c = self;
    if (ev->kind == WR_EV_KERNEL_END) {
        /* kernels are ordered: forget everything */
        memset(c->tab, 0, c->cap * sizeof *c->tab);
        c->n = 0;
        return;
    }
    if (ev->kind != WR_EV_ACCESS)
        return;
    const wr_access *a = &ev->u.access;
    if (a->space != WR_SPACE_GLOBAL)
        return;
    for (unsigned lane = 0; lane < 32; lane++) {
        if (!(a->active_mask >> lane & 1))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane) & ~3ull;
        if (wr_shard_of(a->space, a->launch, a->block, addr, c->cfg.shards) != c->cfg.shard)
            continue;
        wr_race_access now = {.site = ev->site, .launch = a->launch, .block = a->block,
                              .warp = a->warp, .lane = lane, .seq = ev->seq};
        now.kind = wr_op_is_atomic(a->op) ? WR_KIND_ATOMIC
                   : wr_op_writes(a->op)  ? WR_KIND_WRITE
                                          : WR_KIND_READ;
        entry *e = lookup(c, addr | 1);
        report(c, &e->write, &now, addr);
        if (now.kind != WR_KIND_READ) {
            report(c, &e->read, &now, addr);
            e->write = (acc){now, true};
            e->read.valid = false;
        } else {
            e->read = (acc){now, true};
        }
    }
}

static void c_finish(void *self) { (void)self; }
static uint64_t c_words(void *self) { return ((conflict *)self)->n; }

static void c_destroy(void *self)
{
    conflict *c = self;
    free(c->tab);
    free(c);
}

const wr_engine_ops gen_conflict_engine = {
    .name = "conflict",
    .description = "test double: unsynchronized conflicting accesses",
    .create = c_create,
    .on_event = c_event,
    .finish = c_finish,
    .shadow_words = c_words,
    .destroy = c_destroy,
};

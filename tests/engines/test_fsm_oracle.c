/*
 * The fsm engine against a naive reference model of its semantics
 * (ENGINES.md, "fsm"), on random programs of several launches on several
 * streams, host copies and host waits.
 *
 * The model keeps, per word, the FSM state and the last accessor whole
 * (epoch, block, warp, lane and that thread's counters as plain integers),
 * with no packing, tags, sweeps, packed lines, memos, SIMD loops, block
 * tables, retired blocks or shards.  Per step:
 *   - a word never touched, or last touched by an epoch that happens
 *     before the current one, is INIT;
 *   - a word last touched by a concurrent epoch is compared with relation
 *     G and sync U;
 *   - else relation S / W / B / G from the two threads and sync B when the
 *     current thread's block-barrier count is larger than the stored one,
 *     else W when its warp-sync count is, else U;
 *   - the next state is the table's; entering RACE reports, once.
 * Counters are Lamport clocks as ENGINES.md defines them (a completed
 * barrier: max of the participants + 1; __syncwarp(mask): max of the
 * lanes + 1).  Barrier phases are lf_events.h's model of barriers.h: a
 * phase completes at its count or when one of its waiters acts again.
 * Split barriers (the split programs): an ARRIVE brings its warp's count
 * to the phase and steps that count by one, going on; a waiter (SYNC, a
 * cluster or grid barrier's WAIT) takes max(the largest count a SYNC or
 * ARRIVE brought + 1, its own + 1) when the phase completes, or at its
 * WAIT when the phase completed before; an ARRIVE_RELAXED brings nothing
 * and is a __syncwarp of its lanes.  Across blocks, a word whose history
 * is of one block X starts again at an access of warp w of another block
 * when X arrived at the k-th cluster or grid barrier gathering both after
 * the stored access (its count at most the largest a SYNC or ARRIVE of X
 * brought to it), that phase released (no relaxed arrival), and w passed
 * k of them (mshare: waited; late, lost).  The model also checks the
 * property the counts exist for (lamport_check): an access that a block's
 * barriers order after another warp's access has the larger count, so
 * that no barrier-ordered pair is a race.  Epoch order is a
 * happens-before relation built from the host-side rules (stream order,
 * the legacy stream 0, KERNEL_END, device and stream syncs, synchronous
 * copies) and closed transitively.  A
 * report's first side is the stored thread; its site, kind and trace
 * position are the current instruction's when the stored access is an
 * earlier lane of it and it writes (of a load, that would be a read/read
 * pair), else those of the newest of that warp's last
 * WR_ACCESS_RING accesses (the current one among them, but not asked)
 * that the thread made with a byte range holding the word, not a plain
 * read when the current access is one, and for a device atomic not an
 * atomic if another access fits (ENGINES.md), else site 0 and the
 * state's kind.
 *
 * The model keeps all of that per byte (memory is byte-addressed): an
 * access steps the bytes it covers, each as a word was stepped, and the
 * report's address is the byte's.  A thread's access of a word is one
 * occurrence of a race however many of its bytes race with the same
 * access (the first one's example); the first side is searched by word.
 * Accesses that cover whole words keep a word's four bytes alike, so
 * this is the per-word model for them; the subword programs add 1- and
 * 2-byte accesses and copies that start or end inside a word.
 *
 * The model's reports go into a findings collector of their own; the
 * engine's groups (counts and examples) must equal the model's exactly,
 * at 1 and at 3 shards.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access_ring.h"
#include "fsm25_table.h"
#include "oracle.h"

extern const wr_engine_ops wr_engine_fsm;

enum {
    MAX_LAUNCHES = 3,
    MAX_EPOCHS = ORACLE_MAX_EPOCHS,
    BLOCKS = 2,
    WARPS = 2,                 /* blocks of 64 threads */
    LANES = 32,
    WORDS = 128,               /* four aligned lines, two on each side of a page */
    STEPS = 240,
    SEEDS = 2000,
};

#define BASE (0x7f9c5fe40000ull + 4096 - 256)   /* word i at BASE + 4 i: a page starts at word 64;
                                                   a 47-bit device address, as real traces have */
#define SHARED_BASE 0x100ull            /* shared word i at SHARED_BASE + 4 i */
#define SITE0 1000u                     /* an access's site: SITE0 + its event's seq */
#define SITE_POOL 500u                  /* or one of 4 shared ones per op from here */
#define HOST UINT32_MAX


/* ---- epochs: a happens-before relation over launches and copies ---- */


typedef struct mword {
    bool live;
    uint8_t state;
    uint32_t epoch, block, warp, lane;   /* block HOST: the host */
    uint32_t bc, wc;
    uint64_t seq;               /* the access's trace position */
} mword;

/* A block's cluster and grid barriers as its warps pass them: a warp
 * passed the phases its block completed up to its last wait (passed[k]);
 * one that arrived in the last completed phase and has not waited yet is
 * late; one that arrived again without waiting, or that a phase completed
 * without, has passed none known (lost) until it next waits. */
typedef struct mshare {
    uint8_t scope;              /* of the phase under way, 0 none */
    uint8_t done_scope;
    uint32_t done_top;          /* the last completed phase's 1 + largest count */
    bool late[WARPS], lost[WARPS];
    uint32_t passed[WARPS][2];
} mshare;

typedef struct model {
    oracle_epochs E;
    uint32_t nlaunches;
    /* per epoch and block / warp / lane */
    uint32_t bc[MAX_EPOCHS + 1][BLOCKS][WARPS];
    uint32_t wc[MAX_EPOCHS + 1][BLOCKS][WARPS][LANES];
    mring ring[MAX_EPOCHS + 1][BLOCKS + 1][WARPS];  /* [BLOCKS]: the host */
    mword global[4 * WORDS];                      /* by byte */
    mword shared[MAX_EPOCHS + 1][BLOCKS][4 * WORDS];
    /* per epoch and block, the cluster and grid barriers its share of
     * completed ([0]: cluster or grid, [1]: grid): how many, and the
     * largest block-barrier count a SYNC or ARRIVE of its warps brought,
     * at each, and whether that phase released the block's accesses (it
     * had such an arrival and no relaxed one) */
    uint32_t cross_n[MAX_EPOCHS + 1][BLOCKS][2];
    uint32_t cross_max[MAX_EPOCHS + 1][BLOCKS][2][64];
    bool cross_ok[MAX_EPOCHS + 1][BLOCKS][2][64];
    lf_mbars bars[MAX_EPOCHS + 1][BLOCKS];
    mshare xs[MAX_EPOCHS + 1][BLOCKS];
    /* The counts' own check (lamport_check): what barriers order in a
     * block, as vector clocks over its warps' accesses: per warp, how
     * many accesses of each warp of its block come before its next one
     * (its own: how many it made), each access's block-barrier count,
     * and per phase under way the join of what its releasing arrivals
     * (SYNC, ARRIVE) brought; for a late WAIT, the last completed share's. */
    uint32_t vc[MAX_EPOCHS + 1][BLOCKS][WARPS][WARPS];
    uint32_t acc_bc[MAX_EPOCHS + 1][BLOCKS][WARPS][STEPS];
    uint32_t join[MAX_EPOCHS + 1][BLOCKS][LF_MSLOTS][WARPS];
    uint32_t join_done[MAX_EPOCHS + 1][BLOCKS][WARPS];
    wr_findings *found;
} model;

/* ---- the FSM's labels ---- */

static bool name_has(unsigned st, const char *s) { return strstr(wr_fsm25_state_names[st], s) != NULL; }

static uint8_t state_kind(unsigned st)
{
    if (name_has(st, "ATOM"))
        return WR_KIND_ATOMIC;
    return name_has(st, "WRITE") ? WR_KIND_WRITE : WR_KIND_READ;
}

/* The scope of the history a state summarises (ENGINES.md: "the wider of
 * the relation and the scope of the state's history"). */
static unsigned state_scope_class(unsigned st)
{
    static const char *const inter_warp[] = {"BREAD", "B_MR_BSYNC", "BATOM_B", "GATOM_B",
                                             "BSYNC_ATOM_B"};
    static const char *const inter_block[] = {"GREAD", "GATOM_G"};
    for (size_t i = 0; i < sizeof inter_warp / sizeof *inter_warp; i++)
        if (!strcmp(wr_fsm25_state_names[st], inter_warp[i]))
            return WR_CLASS_INTER_WARP;
    for (size_t i = 0; i < sizeof inter_block / sizeof *inter_block; i++)
        if (!strcmp(wr_fsm25_state_names[st], inter_block[i]))
            return WR_CLASS_INTER_BLOCK;
    return WR_CLASS_INTRA_WARP;
}

static unsigned access_label(uint8_t op, uint8_t scope)
{
    if (wr_op_is_atomic(op))
        return scope == WR_SCOPE_BLOCK ? WR_FSM_ACC_BA : WR_FSM_ACC_GA;
    return op == WR_OP_STORE ? WR_FSM_ACC_W : WR_FSM_ACC_R;
}

static uint8_t label_kind(unsigned acc)
{
    return acc == WR_FSM_ACC_R ? WR_KIND_READ : acc == WR_FSM_ACC_W ? WR_KIND_WRITE : WR_KIND_ATOMIC;
}

/* dsmem programs: shared accesses through DSMEM too; each launch is one
 * cluster of both blocks, whose cluster and grid barriers gather both */
static bool dsmem_programs;
/* split programs: barriers whose arrivals (ARRIVE, ARRIVE_RELAXED) and
 * WAITs are spread over the program (lf_events.h, lf_plan) */
static bool split_programs;
/* subword programs: 1- and 2-byte accesses, copies of unaligned ranges */
static bool subword_programs;

/* ---- the model's steps ---- */

typedef struct cur {
    uint32_t epoch, launch, block, warp;   /* block HOST: the host */
    uint64_t seq;
    uint32_t site;
    uint8_t space;          /* of the access (DSMEM: its words are SHARED) */
    unsigned acc;
} cur;

static mring *ring_of(model *m, uint32_t epoch, uint32_t block, uint32_t warp)
{
    return &m->ring[epoch][block == HOST ? BLOCKS : block][block == HOST ? 0 : warp];
}

static unsigned older_named;   /* first sides named by an older instruction */
static unsigned dsmem_examples;   /* races on shared words of another block */
static unsigned barrier_restarts;   /* words a cluster or grid barrier started again */

/* An access of the ring (or an older instruction) that a first side may
 * name: not the current access, in the space, of the lane, holding the
 * word, and not of a kind in skip (1 << WR_KIND_...). */
static bool fits(const mring_ent *e, uint64_t cur_seq, uint8_t space, unsigned lane, uint64_t addr,
                 unsigned skip)
{
    return e->seq != cur_seq && e->space == space && ((e->mask >> lane) & 1u) && e->lo <= addr + 3 &&
           addr <= e->hi && !((skip >> e->kind) & 1u);
}

/* The access of ring r that names the word at addr in space for `lane`:
 * the newest of the last WR_ACCESS_RING that fits, else the newest older
 * instruction that fits (*older set); false when none does. */
static bool ring_names(const mring *r, unsigned lane, uint8_t space, uint64_t addr,
                       uint64_t cur_seq, unsigned skip, mring_ent *out, bool *older)
{
    for (uint32_t k = 0; k < WR_ACCESS_RING && k < r->n; k++) {
        const mring_ent *e = &r->e[r->n - 1 - k];
        if (fits(e, cur_seq, space, lane, addr, skip)) {
            *out = *e;
            *older = false;
            return true;
        }
    }
    mring_ent olders[WR_RING_OLDER];
    const mring_ent *best = NULL;
    for (unsigned k = 0, n = ring_older(r, olders); k < n; k++)
        if (fits(&olders[k], cur_seq, space, lane, addr, skip) &&
            (!best || olders[k].seq > best->seq))
            best = &olders[k];
    if (best) {
        *out = *best;
        *older = true;
    }
    return best != NULL;
}

/* The first side of a race on the word at addr in space (a shared word of
 * block `owner`): the stored thread, and the access of its ring that
 * names the word.  The accessor's SHARED accesses name a shared word only
 * when it is the owner; its DSMEM accesses name it as
 * wr_dsmem_addr(owner, offset); the newer of the two counts. */
static void fill_first(const model *m, wr_race_access *a, const mword *w, uint8_t space,
                       uint32_t owner, uint64_t addr, uint64_t cur_seq, bool writes_only,
                       bool prefer_plain)
{
    bool host = w->block == HOST;
    a->launch = host ? 0 : m->E.ep[w->epoch].launch;
    a->block = w->block;
    a->warp = host ? HOST : w->warp;
    a->lane = host ? HOST : w->lane;
    a->kind = state_kind(w->state);
    a->site = 0;
    a->seq = 0;
    const mring *r = &m->ring[w->epoch][host ? BLOCKS : w->block][host ? 0 : w->warp];
    unsigned lane = host ? 0 : w->lane;
    mring_ent own, remote;
    bool own_older = false, remote_older = false, has_own = false, has_remote = false;
    /* a device atomic names a plain access of the thread where one fits
     * (ENGINES.md, fsm reports), then any */
    for (int pass = prefer_plain ? 0 : 1; pass < 2 && !has_own && !has_remote; pass++) {
        unsigned skip = pass == 0 ? 1u << WR_KIND_ATOMIC : writes_only ? 1u << WR_KIND_READ : 0;
        has_own = (space != WR_SPACE_SHARED || w->block == owner) &&
                  ring_names(r, lane, space, addr, cur_seq, skip, &own, &own_older);
        has_remote = space == WR_SPACE_SHARED &&
                     ring_names(r, lane, WR_SPACE_DSMEM, wr_dsmem_addr(owner, (uint32_t)addr),
                                cur_seq, skip, &remote, &remote_older);
    }
    if (has_remote && (!has_own || remote.seq > own.seq)) {
        own = remote;
        own_older = remote_older;
        has_own = true;
    }
    if (has_own) {
        a->site = own.site;
        a->seq = own.seq;
        a->kind = own.kind;
        older_named += own_older;
    }
    if (writes_only && a->kind == WR_KIND_READ)   /* a load races with a write */
        a->kind = WR_KIND_WRITE;
}

/* Did block x arrive at a cluster or grid barrier gathering it and block
 * y (both blocks of the programs' launches are one cluster in the dsmem
 * programs, two of one block otherwise) after an access of x with
 * block-barrier count bc, one that y has passed?  Counted as the engine
 * counts: the k-th such barrier of x is the k-th of y, and x's history
 * goes back one barrier before y's latest. */
static bool barrier_ordered(const model *m, uint32_t epoch, uint32_t x, uint32_t y, uint32_t ywarp,
                            uint32_t bc)
{
    unsigned k = dsmem_programs ? 0 : 1;   /* one cluster of both, else only grid barriers */
    const mshare *ys = &m->xs[epoch][y];
    uint32_t passed = ys->lost[ywarp] ? 0 : ys->passed[ywarp][k], nx = m->cross_n[epoch][x][k];
    if (!passed || nx < passed || nx > passed + 1)
        return false;
    return m->cross_ok[epoch][x][k][passed] && bc <= m->cross_max[epoch][x][k][passed];
}

/* The races one thread's access of one word reported so far (on its
 * bytes): another byte's race with the same access is no new occurrence. */
typedef struct word_races {
    bool restarted;             /* a barrier started one of its bytes again */
    unsigned n;
    wr_race_access first[4];
    uint8_t race_class[4];
} word_races;

static bool seen_on_word(word_races *o, const wr_race *r)
{
    for (unsigned i = 0; i < o->n; i++)
        if (o->first[i].site == r->first.site && o->first[i].kind == r->first.kind &&
            o->first[i].launch == r->first.launch && o->race_class[i] == r->race_class)
            return true;
    o->first[o->n] = r->first;
    o->race_class[o->n++] = r->race_class;
    return false;
}

static unsigned subword_bytes;   /* bytes the subword programs' accesses stepped alone */

/* One thread's access to one byte: a global byte at addr, or a shared
 * byte of block `owner` at offset addr; o: the access's races on the
 * byte's word so far. */
static void step(model *m, const cur *c, mword *w, uint32_t lane, uint8_t space, uint32_t owner,
                 uint64_t addr, word_races *o)
{
    bool host = c->block == HOST;
    uint32_t bc = host ? 0 : m->bc[c->epoch][c->block][c->warp];
    uint32_t wc = host ? 0 : m->wc[c->epoch][c->block][c->warp][lane];
    unsigned old_state = WR_FSM25_INIT, rel = WR_FSM_REL_S, sync = WR_FSM_SYNC_U;
    bool concurrent = false;
    if (w->live && (w->epoch == c->epoch || !oe_ordered(&m->E, w->epoch, c->epoch))) {
        old_state = w->state;
        if (w->epoch != c->epoch) {
            concurrent = true;
            rel = WR_FSM_REL_G;
        } else {
            if (w->block != c->block)
                rel = WR_FSM_REL_G;
            else if (w->warp != c->warp)
                rel = WR_FSM_REL_B;
            else
                rel = w->lane != lane ? WR_FSM_REL_W : WR_FSM_REL_S;
            sync = bc > w->bc ? WR_FSM_SYNC_B : wc > w->wc ? WR_FSM_SYNC_W : WR_FSM_SYNC_U;
        }
    }
    unsigned next = wr_fsm25_next[old_state][c->acc][sync][rel];
    /* another block's access, of a one-block history, before that block
     * arrived at a cluster or grid barrier the current block has passed:
     * the word starts again (ENGINES.md, fsm) */
    if (next == WR_FSM25_RACE && old_state != WR_FSM25_RACE && !concurrent && !host &&
        rel == WR_FSM_REL_G && w->block != HOST && state_scope_class(old_state) != WR_CLASS_INTER_BLOCK &&
        barrier_ordered(m, c->epoch, w->block, c->block, c->warp, w->bc)) {
        old_state = WR_FSM25_INIT;
        next = wr_fsm25_next[old_state][c->acc][sync][rel];
        barrier_restarts += !o->restarted;
        o->restarted = true;
    }
    if (next == WR_FSM25_RACE && old_state != WR_FSM25_RACE) {
        wr_race r;
        memset(&r, 0, sizeof r);
        /* a shared word another block touched is named with its owner */
        bool remote = space == WR_SPACE_SHARED && (c->block != owner || w->block != owner);
        r.space = remote ? WR_SPACE_DSMEM : space;
        r.addr = remote ? wr_dsmem_addr(owner, (uint32_t)addr) : addr;
        unsigned named = older_named;   /* counted for occurrences only */
        if (concurrent || host || w->block == HOST) {
            r.race_class = WR_CLASS_INTER_KERNEL;
        } else {
            unsigned rc = rel == WR_FSM_REL_G   ? WR_CLASS_INTER_BLOCK
                          : rel == WR_FSM_REL_B ? WR_CLASS_INTER_WARP
                                                : WR_CLASS_INTRA_WARP;
            unsigned sc = state_scope_class(old_state);
            r.race_class = (uint8_t)(rc > sc ? rc : sc);
        }
        if (w->seq == c->seq && w->block != HOST && c->acc != WR_FSM_ACC_R) {
            /* an earlier lane of this instruction, which writes */
            r.first = (wr_race_access){.site = c->site, .kind = label_kind(c->acc),
                                       .launch = c->launch, .block = c->block, .warp = c->warp,
                                       .lane = w->lane, .seq = c->seq};
        } else {
            fill_first(m, &r.first, w, space, owner, addr & ~3ull, c->seq,
                       c->acc == WR_FSM_ACC_R, c->acc == WR_FSM_ACC_GA);
        }
        r.second = (wr_race_access){.site = c->site, .kind = label_kind(c->acc),
                                    .launch = c->launch, .block = c->block, .warp = c->warp,
                                    .lane = host ? HOST : lane, .seq = c->seq};
        if (seen_on_word(o, &r)) {
            older_named = named;
        } else {
            dsmem_examples += remote;
            wr_findings_report(m->found, &r);
        }
    }
    *w = (mword){.live = true, .state = (uint8_t)next, .epoch = c->epoch, .block = c->block,
                 .warp = host ? 0 : c->warp, .lane = host ? 0 : lane, .bc = bc, .wc = wc,
                 .seq = c->seq};
}

/* The byte at addr of c's lane addresses; its space, owner block and
 * address (global address, or offset in the owner's shared memory) into
 * *space, *owner, *at. */
static mword *byte_at(model *m, const cur *c, uint64_t addr, uint8_t *space, uint32_t *owner,
                      uint64_t *at)
{
    *space = c->space == WR_SPACE_GLOBAL ? WR_SPACE_GLOBAL : WR_SPACE_SHARED;
    *owner = c->space == WR_SPACE_DSMEM ? wr_dsmem_block(addr) : c->block;
    *at = c->space == WR_SPACE_DSMEM ? wr_dsmem_offset(addr) : addr;
    if (*space == WR_SPACE_SHARED)
        return &m->shared[c->epoch][*owner][*at - SHARED_BASE];
    return &m->global[addr - BASE];
}

static void model_acts(model *m, uint32_t epoch, uint32_t block, uint32_t warp);

/* The Lamport property fsm's "no false race from barriers" rests on
 * (ENGINES.md, fsm): an access that barriers order after another warp's
 * access of the block has a larger block-barrier count.  Checked at every
 * access against the newest access of each other warp of the block that
 * barriers order before it, then the access is counted. */
static unsigned lamport_checks;

static void lamport_check(model *m, uint32_t epoch, uint32_t block, uint32_t warp)
{
    uint32_t *vc = m->vc[epoch][block][warp], bc = m->bc[epoch][block][warp];
    for (unsigned x = 0; x < WARPS; x++) {
        if (x == warp || !vc[x])
            continue;
        uint32_t before = m->acc_bc[epoch][block][x][vc[x] - 1];
        cr_assert_gt(bc, before, "warp %u's access with count %u is ordered after warp %u's with"
                     " count %u", warp, bc, x, before);
        lamport_checks++;
    }
    cr_assert_lt(vc[warp], STEPS);
    m->acc_bc[epoch][block][warp][vc[warp]++] = bc;
}

static void model_access(model *m, const wr_event *ev, uint32_t epoch)
{
    const wr_access *a = &ev->u.access;
    model_acts(m, epoch, a->block, a->warp);   /* what it waited for completed */
    lamport_check(m, epoch, a->block, a->warp);
    cur c = {.epoch = epoch, .launch = a->launch, .block = a->block, .warp = a->warp,
             .seq = ev->seq, .site = ev->site, .space = a->space,
             .acc = access_label(a->op, a->scope)};
    /* the access takes its place in its warp's ring first: a report of its
     * own lanes searches the ring without it (ENGINES.md) */
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned lane = 0; lane < LANES; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane);
        lo = addr < lo ? addr : lo;
        hi = addr + a->size - 1 > hi ? addr + a->size - 1 : hi;
    }
    ring_push(ring_of(m, epoch, a->block, a->warp),
              (mring_ent){.seq = ev->seq, .lo = lo, .hi = hi, .site = ev->site,
                          .mask = a->active_mask, .kind = label_kind(c.acc), .space = a->space});
    for (unsigned lane = 0; lane < LANES; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane);
        for (uint64_t wd = addr / 4; wd <= (addr + a->size - 1) / 4; wd++) {
            word_races o = {0};
            uint64_t lo = wd * 4 > addr ? wd * 4 : addr;
            uint64_t hi = wd * 4 + 4 < addr + a->size ? wd * 4 + 4 : addr + a->size;
            subword_bytes += hi - lo < 4 ? (unsigned)(hi - lo) : 0;
            for (uint64_t by = lo; by < hi; by++) {
                uint8_t space;
                uint32_t owner;
                uint64_t at;
                mword *w = byte_at(m, &c, by, &space, &owner, &at);
                step(m, &c, w, lane, space, owner, at, &o);
            }
        }
    }
}

static void model_copy(model *m, const wr_event *ev, uint32_t epoch)
{
    const wr_host_copy *cp = &ev->u.copy;
    cur c = {.epoch = epoch, .launch = 0, .block = HOST, .warp = HOST, .seq = ev->seq,
             .site = ev->site, .space = WR_SPACE_GLOBAL};
    for (int side = 0; side < 2; side++) {
        uint64_t at = side == 0 ? (cp->kind == WR_COPY_D2H || cp->kind == WR_COPY_D2D ? cp->src : 0)
                                : (cp->kind != WR_COPY_D2H ? cp->dst : 0);
        if (!at)
            continue;
        c.acc = side == 0 ? WR_FSM_ACC_R : WR_FSM_ACC_W;
        ring_push(ring_of(m, epoch, HOST, 0),
                  (mring_ent){.seq = ev->seq, .lo = at, .hi = at + cp->bytes - 1, .site = ev->site,
                              .mask = 1, .kind = label_kind(c.acc), .space = WR_SPACE_GLOBAL});
        for (uint64_t wd = at / 4; wd <= (at + cp->bytes - 1) / 4; wd++) {
            word_races o = {0};
            uint64_t lo = wd * 4 > at ? wd * 4 : at;
            uint64_t hi = wd * 4 + 4 < at + cp->bytes ? wd * 4 + 4 : at + cp->bytes;
            for (uint64_t by = lo; by < hi; by++)
                step(m, &c, &m->global[by - BASE], 0, WR_SPACE_GLOBAL, 0, by, &o);
        }
    }
}

/* Phase counts of what the split programs made happen */
static unsigned split_phases, split_late_waits, split_relaxed_phases;

typedef struct mdone {
    model *m;
    uint32_t epoch, block;
} mdone;

/* A phase of a block completed (lf_mbars): its waiters take the largest
 * count a releasing arrival brought + 1, or their own + 1.  The block's
 * share of a cluster or grid barrier is noted in its history with that
 * count, and who passed it. */
static void vc_join(uint32_t *into, const uint32_t *from)
{
    for (unsigned w = 0; w < WARPS; w++)
        if (from[w] > into[w])
            into[w] = from[w];
}

static void phase_done(void *ctx, unsigned slot, const lf_mphase *ph)
{
    mdone *d = ctx;
    model *m = d->m;
    uint32_t *bc = m->bc[d->epoch][d->block];
    uint32_t *join = m->join[d->epoch][d->block][slot];
    bool arrivers = false;
    for (unsigned w = 0; w < WARPS; w++) {
        arrivers |= ph->goes_on[w];
        if (ph->waits[w]) {
            bc[w] = ph->top > bc[w] + 1 ? ph->top : bc[w] + 1;
            vc_join(m->vc[d->epoch][d->block][w], join);
        }
    }
    if (slot == LF_MSHARE)
        memcpy(m->join_done[d->epoch][d->block], join, sizeof m->join_done[0][0]);
    memset(join, 0, sizeof m->join[0][0][0]);
    split_phases += arrivers;
    if (slot != LF_MSHARE)
        return;
    split_relaxed_phases += ph->relaxed;
    mshare *xs = &m->xs[d->epoch][d->block];
    for (unsigned k = 0; k < 2; k++) {
        if (k == 1 && xs->scope != WR_BAR_GRID)
            break;
        uint32_t n = ++m->cross_n[d->epoch][d->block][k];
        cr_assert_lt(n, 64);
        m->cross_max[d->epoch][d->block][k][n] = ph->top ? ph->top - 1 : 0;
        m->cross_ok[d->epoch][d->block][k][n] = ph->top && !ph->relaxed;
    }
    for (unsigned w = 0; w < WARPS; w++) {
        if (ph->waits[w]) {
            for (unsigned k = 0; k < 2; k++)
                xs->passed[w][k] = m->cross_n[d->epoch][d->block][k];
            xs->late[w] = xs->lost[w] = false;
        } else if (ph->goes_on[w]) {
            xs->late[w] = true;
        } else {
            xs->late[w] = false;
            xs->lost[w] = true;
        }
    }
    xs->done_top = ph->top;
    xs->done_scope = xs->scope;
    xs->scope = 0;
}

static void model_acts(model *m, uint32_t epoch, uint32_t block, uint32_t warp)
{
    mdone d = {m, epoch, block};
    lf_mbars_acts(&m->bars[epoch][block], warp, phase_done, &d);
}

static void model_warp_sync(model *m, uint32_t epoch, uint32_t block, uint32_t warp, uint32_t mask);

/* A barrier event of a warp: it acts again, then arrives (its count as it
 * stands then) or waits.  A cluster or grid barrier is the block's share
 * (every thread of the block: 64). */
static void model_barrier(model *m, uint32_t epoch, const wr_barrier *br)
{
    uint32_t b = br->block, w = br->warp;
    mdone d = {m, epoch, b};
    lf_mbars *t = &m->bars[epoch][b];
    lf_mbars_acts(t, w, phase_done, &d);
    uint32_t *bc = &m->bc[epoch][b][w];
    uint32_t threads = (uint32_t)__builtin_popcount(br->active_mask);
    /* what a releasing arrival brings to its phase: everything its warp
     * has seen, its own accesses so far included */
    if (br->mode == WR_BARMODE_SYNC || br->mode == WR_BARMODE_ARRIVE)
        vc_join(m->join[epoch][b][br->scope == WR_BAR_BLOCK ? br->barrier_id : LF_MSHARE],
                m->vc[epoch][b][w]);
    if (br->scope == WR_BAR_BLOCK) {
        cr_assert_lt(br->barrier_id, LF_MSHARE);
        lf_mbars_arrive(t, br->barrier_id, w, br->mode, threads, br->expected, *bc, phase_done, &d);
    } else {
        mshare *xs = &m->xs[epoch][b];
        if (br->mode == WR_BARMODE_WAIT) {
            if (!lf_mbars_wait(t, LF_MSHARE, w) && xs->late[w]) {
                /* its phase completed before: it passes it now */
                xs->late[w] = xs->lost[w] = false;
                for (unsigned k = 0; k < 2; k++)
                    xs->passed[w][k] = m->cross_n[epoch][b][k];
                *bc = xs->done_top > *bc + 1 ? xs->done_top : *bc + 1;
                vc_join(m->vc[epoch][b][w], m->join_done[epoch][b]);
                split_late_waits++;
            }
            return;
        }
        if (!xs->scope)
            xs->scope = br->scope;
        if (xs->late[w]) {   /* it arrives again, not having waited */
            xs->late[w] = false;
            xs->lost[w] = true;
        }
        lf_mbars_arrive(t, LF_MSHARE, w, br->mode, threads, WARPS * LANES, *bc, phase_done, &d);
    }
    if (br->mode == WR_BARMODE_ARRIVE)
        ++*bc;
    else if (br->mode == WR_BARMODE_ARRIVE_RELAXED)
        model_warp_sync(m, epoch, b, w, br->active_mask);
}

static void model_warp_sync(model *m, uint32_t epoch, uint32_t block, uint32_t warp, uint32_t mask)
{
    uint32_t mx = 0;
    uint32_t *wc = m->wc[epoch][block][warp];
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u && wc[l] > mx)
            mx = wc[l];
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u)
            wc[l] = mx + 1;
}

/* ---- random programs ---- */

typedef oracle_prog prog;


/* The subword programs' 1- or 2-byte form of access a (a char or short
 * array): one element for every lane, lanes on consecutive elements or
 * on one of every word, a gather's lanes on an element of their word. */
static void narrow(wr_access *a, uint64_t *lane_addr, uint64_t base0)
{
    unsigned size = rnd(2) ? 1 : 2;
    const uint32_t bytes = 4 * WORDS;
    a->size = (uint8_t)size;
    if (a->addr_mode == WR_ADDR_UNIFORM) {
        a->base = base0 + size * rnd(bytes / size);
    } else if (a->addr_mode == WR_ADDR_STRIDED) {
        a->stride = rnd(3) ? size : 4;
        a->base = base0 + size * rnd((bytes - 31 * (uint32_t)a->stride - size) / size + 1);
    } else {
        for (unsigned l = 0; l < LANES; l++)
            if ((a->active_mask >> l) & 1u)
                lane_addr[l] = (lane_addr[l] & ~3ull) + size * rnd(4 / size);
    }
}

/* A random access of a warp of a launch that may act. */
static void random_access(prog *p, model *m, uint32_t epoch)
{
    uint32_t launch = m->E.ep[epoch].launch, b = rnd(BLOCKS), w = rnd(WARPS);
    /* split programs: mostly a warp that waits at no barrier (one that
     * does would go on: its phase completes) */
    for (int tries = 0; split_programs && tries < 4 && lf_mbars_waiting(&m->bars[epoch][b], w); tries++) {
        b = rnd(BLOCKS);
        w = rnd(WARPS);
    }
    static const uint8_t ops[] = {WR_OP_LOAD, WR_OP_LOAD, WR_OP_STORE, WR_OP_STORE,
                                  WR_OP_ATOMIC_RMW, WR_OP_ATOMIC_LOAD};
    uint8_t op = ops[rnd(6)];
    uint8_t scope = wr_op_is_atomic(op) ? (rnd(2) ? WR_SCOPE_BLOCK : WR_SCOPE_DEVICE) : 0;
    uint32_t mask = rnd(3) ? WR_FULL_MASK : (rnd(0xffffffffu) | 1u);
    bool shared = rnd(5) == 0;
    /* dsmem programs: two of three shared accesses reach the shared memory
     * of the blocks of the cluster (the launch's two), a random one for a
     * uniform or strided access, per lane for a gather */
    bool dsmem = shared && dsmem_programs && rnd(3);
    uint32_t owner = dsmem ? rnd(BLOCKS) : 0;
    uint64_t base0 = !shared ? BASE : dsmem ? wr_dsmem_addr(owner, SHARED_BASE) : SHARED_BASE;
    wr_event e = lf_acc(0, launch, b, w, mask, op, scope, 0, 4);
    e.u.access.space = dsmem ? WR_SPACE_DSMEM : shared ? WR_SPACE_SHARED : WR_SPACE_GLOBAL;
    wr_access *a = &e.u.access;
    switch (rnd(6)) {
    case 0:   /* a whole aligned line (packed lines) */
        a->base = base0 + 128ull * rnd(WORDS / 32);
        break;
    case 1:   /* coalesced at any word, maybe across the page */
        a->base = base0 + 4ull * rnd(WORDS - 31);
        break;
    case 2:   /* one word for every lane */
        a->addr_mode = WR_ADDR_UNIFORM;
        a->stride = 0;
        a->base = base0 + 4ull * rnd(WORDS);
        break;
    case 3:   /* two words per lane (the general loop) */
        a->size = 8;
        a->stride = 8;
        a->base = base0 + 4ull * rnd(WORDS - 63);
        break;
    default: { /* a gather / scatter, lanes often sharing words */
        a->addr_mode = WR_ADDR_VECTOR;
        uint32_t span = 1 + rnd(WORDS);
        uint32_t at = rnd(WORDS - span + 1);
        for (unsigned l = 0; l < LANES; l++) {
            if (dsmem && rnd(2))
                base0 = wr_dsmem_addr(rnd(BLOCKS), SHARED_BASE);
            p->lanes[p->n][l] = (mask >> l) & 1u ? base0 + 4ull * (at + rnd(span)) : 0;
        }
        a->lane_addr = p->lanes[p->n];
        break;
    }
    }
    if (subword_programs && rnd(2))
        narrow(a, p->lanes[p->n], base0);
    wr_event *at = oracle_emit(p, e);
    /* mostly its own site; one in four from a few sites per op, as a
     * loop's instructions (the ring's older entries fold them) */
    at->site = rnd(4) ? SITE0 + (uint32_t)at->seq : SITE_POOL + 4u * op + rnd(4);
    model_access(m, at, epoch);
}

static void random_copy(prog *p, model *m)
{
    uint32_t x;
    wr_event *e = oracle_emit_copy(p, &m->E, BASE, WORDS, SITE0, &x);
    if (e && subword_programs && e->u.copy.bytes > 6 && rnd(2)) {
        /* from and to the middle of a word */
        uint32_t head = rnd(4), tail = rnd(3);
        *(e->u.copy.dst ? &e->u.copy.dst : &e->u.copy.src) += head;
        e->u.copy.bytes -= head + tail;
    }
    if (e) {
        model_copy(m, e, x);
        oe_copy_done(&m->E, x, e);
    }
}

/* The split programs' barriers under way, per epoch (lf_plans_step). */
static lf_plans split_plans[MAX_EPOCHS + 1];
_Static_assert(BLOCKS == LF_MBLOCKS, "the plans cover the program's blocks");

static void split_barrier_step(prog *p, model *m, uint32_t x)
{
    wr_event e;
    if (lf_plans_step(&split_plans[x], rnd, dsmem_programs, m->E.ep[x].launch, &e))
        model_barrier(m, x, &oracle_emit(p, e)->u.barrier);
}

static void random_program(prog *p, model *m)
{
    memset(split_plans, 0, sizeof split_plans);
    p->n = 0;
    memset(m, 0, sizeof *m);
    m->found = wr_findings_new();
    for (unsigned step_no = 0; step_no < STEPS; step_no++) {
        uint32_t what = rnd(100), x = 0;
        wr_event host_ev;
        switch (oracle_host_step(&m->E, what, &m->nlaunches, MAX_LAUNCHES, &host_ev, &x)) {
        case ORACLE_NONE: continue;
        case ORACLE_LAUNCH:
            if (dsmem_programs)   /* one cluster: DSMEM reaches both blocks */
                host_ev.u.launch.cluster[0] = BLOCKS;
            oracle_emit(p, host_ev);
            continue;
        case ORACLE_SYNC: oracle_emit(p, host_ev); continue;
        case ORACLE_COPY: random_copy(p, m); continue;
        case ORACLE_FINISH: oracle_emit_finish(p, &m->E, x, BLOCKS); continue;
        case ORACLE_DEVICE: break;
        }
        if (split_programs && what < 32) {   /* a fifth of the device steps */
            split_barrier_step(p, m, x);
        } else if (split_programs && what < 36) {
            uint32_t b = rnd(BLOCKS), w = rnd(WARPS);
            uint32_t mask = rnd(2) ? WR_FULL_MASK : rnd(2) ? 0x0000ffffu : (rnd(0xffffffffu) | 1u);
            oracle_emit(p, lf_warp_sync(m->E.ep[x].launch, b, w, mask));
            model_warp_sync(m, x, b, w, mask);
        } else if (split_programs) {
            random_access(p, m, x);
        } else if (what < 19) {   /* a block barrier of both warps, or of one (expected 32) */
            uint32_t launch = m->E.ep[x].launch, b = rnd(BLOCKS);
            if (rnd(3)) {
                /* every third one a cluster or grid barrier, whose count
                 * is the cluster's or grid's: a barrier of each block it
                 * gathers, as far as the table goes (the choice draws no
                 * random number, so the programs stay what they were) */
                uint8_t scope = step_no % 3 ? WR_BAR_BLOCK
                                : step_no % 2 ? WR_BAR_CLUSTER
                                              : WR_BAR_GRID;
                /* in the dsmem programs a cluster or grid barrier gathers
                 * both blocks, and orders them (block_ordered) */
                bool both = dsmem_programs && scope != WR_BAR_BLOCK;
                for (uint32_t k = 0; k < (both ? BLOCKS : 1); k++) {
                    uint32_t bk = both ? k : b;
                    wr_event e0 = lf_barrier(launch, bk, 0, 64), e1 = lf_barrier(launch, bk, 1, 64);
                    if (scope != WR_BAR_BLOCK) {
                        e0.u.barrier.scope = e1.u.barrier.scope = scope;
                        e0.u.barrier.expected = e1.u.barrier.expected = 64 * BLOCKS;
                    }
                    model_barrier(m, x, &oracle_emit(p, e0)->u.barrier);
                    model_barrier(m, x, &oracle_emit(p, e1)->u.barrier);
                }
            } else {
                uint32_t w = rnd(WARPS);
                model_barrier(m, x, &oracle_emit(p, lf_barrier(launch, b, w, 32))->u.barrier);
            }
        } else if (what < 24) {   /* a warp sync, full or partial */
            uint32_t b = rnd(BLOCKS), w = rnd(WARPS);
            uint32_t mask = rnd(2) ? WR_FULL_MASK : rnd(2) ? 0x0000ffffu : (rnd(0xffffffffu) | 1u);
            oracle_emit(p, lf_warp_sync(m->E.ep[x].launch, b, w, mask));
            model_warp_sync(m, x, b, w, mask);
        } else {
            random_access(p, m, x);
        }
    }
    oracle_emit_ends(p, &m->E);
}

static void free_model(model *m)
{
    for (uint32_t x = 0; x <= MAX_EPOCHS; x++)
        for (unsigned b = 0; b <= BLOCKS; b++)
            for (unsigned w = 0; w < WARPS; w++)
                free(m->ring[x][b][w].e);
    wr_findings_free(m->found);
}

static void check_seed(uint64_t seed)
{
    static prog p;
    static model m;
    rnd_state = seed * 0x9E3779B97F4A7C15ull + 1;
    random_program(&p, &m);
    oracle_tally(m.found);
    oracle_compare(&wr_engine_fsm, p.ev, p.n, m.found, seed);
    free_model(&m);
}

Test(fsm_oracle, random_programs_match_the_model, .timeout = 120)
{
    uint64_t last = oracle_run(SEEDS, check_seed);
    if (!last)
        return;
    oracle_assert_racing(last);
    fprintf(stderr, "fsm oracle: %" PRIu64 " programs, %u race groups; %u first sides named by an"
            " older instruction\n", last, oracle_races_seen, older_named);
    cr_assert_gt(older_named, last / 4, "older instructions named %u first sides", older_named);
}

/* Shared accesses through distributed shared memory too (DSMEM, one
 * cluster of both blocks): a DSMEM lane's word is its owner's, met by the
 * owner's own SHARED accesses; a race on a word another block touched
 * names its owner; a first side is named by the accessor's SHARED
 * accesses when it owns the word, else by its DSMEM ones. */
Test(fsm_oracle, random_programs_with_dsmem_match_the_model, .timeout = 120)
{
    barrier_restarts = 0;
    oracle_run_dsmem("fsm", &dsmem_programs, SEEDS / 2, check_seed, &dsmem_examples);
    if (getenv("WR_ORACLE_SEED"))
        return;
    /* and blocks were ordered by cluster and grid barriers, often */
    fprintf(stderr, "fsm oracle, dsmem: %u words started again by a cluster or grid barrier\n",
            barrier_restarts);
    cr_assert_gt(barrier_restarts, SEEDS / 4, "%u words started again", barrier_restarts);
}

/* Split barriers (format 1.3): block barriers of one or both warps whose
 * arrivals are SYNC or ARRIVE, cluster and grid barriers whose arrivals
 * are SYNC, ARRIVE or ARRIVE_RELAXED (cluster) and whose WAITs come later
 * (or, one in eight, never), all spread over the program (lf_plan).  Alone
 * (two one-block clusters: grid barriers order the blocks), then with
 * DSMEM (one cluster of both blocks). */
static void run_split(bool dsmem)
{
    split_phases = split_late_waits = split_relaxed_phases = barrier_restarts = 0;
    split_programs = true;
    if (dsmem) {
        oracle_run_dsmem("fsm, split", &dsmem_programs, SEEDS, check_seed, &dsmem_examples);
    } else {
        uint64_t last = oracle_run(SEEDS, check_seed);
        if (last)
            oracle_assert_racing(last);
    }
    split_programs = false;
    if (getenv("WR_ORACLE_SEED"))
        return;
    uint64_t first, seeds = oracle_seeds(SEEDS, &first);
    fprintf(stderr, "fsm oracle, split%s: %" PRIu64 " programs, %u racing, %u race groups; %u"
            " phases with arrivers, %u of them relaxed cluster ones, %u WAITs after their phase,"
            " %u words started again by a cluster or grid barrier; %u pairs of accesses barriers"
            " order had counts in order\n", dsmem ? " + dsmem" : "", seeds, oracle_programs_racing,
            oracle_races_seen, split_phases, split_relaxed_phases, split_late_waits,
            barrier_restarts, lamport_checks);
    cr_assert_gt(lamport_checks, seeds * 4, "%u ordered pairs checked", lamport_checks);
    cr_assert_gt(split_phases, seeds * 2, "%u phases with arrivers", split_phases);
    cr_assert_gt(split_relaxed_phases, seeds / 10, "%u relaxed phases", split_relaxed_phases);
    cr_assert_gt(split_late_waits, seeds / 5, "%u late WAITs", split_late_waits);
    cr_assert_gt(barrier_restarts, seeds / 10, "%u words started again", barrier_restarts);
}

Test(fsm_oracle, random_programs_with_split_barriers_match_the_model, .timeout = 120)
{
    run_split(false);
}

Test(fsm_oracle, random_programs_with_split_barriers_and_dsmem_match_the_model, .timeout = 120)
{
    run_split(true);
}

/* 1- and 2-byte accesses (uniform, coalesced, one byte of every word,
 * gathers) and host copies that start or end inside a word, among the
 * whole-word ones: the engine's byte cells of split words against the
 * model's bytes, on every path (packed lines, uniform segments and
 * gathers meeting split words).  Alone, then with DSMEM. */
Test(fsm_oracle, random_programs_with_subword_accesses_match_the_model, .timeout = 120)
{
    subword_bytes = 0;
    subword_programs = true;
    uint64_t last = oracle_run(SEEDS / 4, check_seed);
    if (last)
        oracle_assert_racing(last);
    oracle_run_dsmem("fsm, subword", &dsmem_programs, SEEDS / 4, check_seed, &dsmem_examples);
    subword_programs = false;
    if (getenv("WR_ORACLE_SEED"))
        return;
    uint64_t first, seeds = oracle_seeds(SEEDS / 4, &first);
    fprintf(stderr, "fsm oracle, subword: %" PRIu64 " programs, %u race groups; %u bytes stepped"
            " apart from their word\n", 2 * seeds, oracle_races_seen, subword_bytes);
    cr_assert_gt(subword_bytes, seeds * 20, "%u bytes stepped alone", subword_bytes);
}

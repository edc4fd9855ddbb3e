/*
 * The lockset engine against a naive reference model of its semantics
 * (ENGINES.md, "lockset"), on random programs of several launches on
 * several streams, host copies and host waits, with GPU locks: successful
 * and failed CASes on lock words, acquire fences (or none, or of another
 * mask), releases by fence + exchange or atomic store (or without the
 * fence, or with a plain access after it), block / cluster / device /
 * system / unscoped locks, and data accesses inside and outside critical
 * sections.
 *
 * The model keeps everything explicitly, with no interning, packing, tags,
 * sweeps, memos, SIMD loops, block tables, retired blocks or shards:
 *   - per lane of every warp, the state of each lock word for that lane
 *     (none, pending: CAS succeeded, held: a fence followed) with the
 *     hold's scope, and the lane's last fence and last plain access;
 *   - per lock word, whether some release lacked its fence (broken) and
 *     the narrowest release scope seen;
 *   - per data word, the state (VIRGIN, EXCLUSIVE, SHARED, SHARED_MOD),
 *     the candidate set C(v) as a set of (lock, block-or-device) entries,
 *     "written", "several blocks", "reported", the epoch of its last
 *     access and the access a report names (thread, site, kind);
 *   - rings of every access of every warp (and of the host), searched
 *     over the newest WR_ACCESS_RING entries;
 *   - a happens-before relation over epochs (launches and copies), built
 *     from the host-side rules and closed transitively (oracle.h,
 *     shared with test_fsm_oracle.c).
 * The lockset of a lane holds L@b for each lock it holds (b: its block),
 * plus L@c when the hold's scope is cluster or wider and the launch's
 * clusters hold several blocks (the dsmem programs': c, the cluster of
 * both), plus L@dev when it is device or system; an atomic adds ATOM@b
 * (and ATOM@c, ATOM@dev in the same way); the host holds nothing.
 * A warning is issued when the word is SHARED_MOD and C(v) holds no valid
 * entry (ATOM, or a lock never released, or one not broken whose
 * narrowest release scope covers the entry), once until the word resets.
 * Resets: a launch boundary that orders the word's epoch before the
 * current one, and a completed barrier of the only block that touched
 * it.  Barrier phases are lf_events.h's model of barriers.h (a phase
 * completes at its count or when one of its waiters acts again).  A
 * block counts its completed phases; a word keeps, from its last access,
 * that count plus the phases its accessor had arrived at and gone on from
 * (ARRIVE, ARRIVE_RELAXED) and not seen complete: all of those, and its
 * accessor's next arrival, must complete before the access is ordered
 * before anything.  A block that never had a split barrier event resets
 * the word at its next access once its count passed the word's; after its
 * first one (ARRIVE, ARRIVE_RELAXED, WAIT), at a warp's access when the
 * count just after the last phase that warp waited for (SYNC, or a
 * cluster or grid barrier's WAIT) passed it, a phase with a relaxed
 * arrival not counting as one waited for (it released nothing).
 * A report's first side is the access the word keeps (the last one,
 * or the last write that a read, or the plain write that an atomic, left
 * in place); its trace position is the current instruction's when that
 * is an earlier lane of it with its site and kind that touched the word,
 * else the newest of the thread's warp's last WR_ACCESS_RING accesses
 * (the current one not asked) of that lane, at that site (any site when
 * it is 0), whose byte range holds the word, else 0.
 * The rules ENGINES.md leaves open were read from engine_lockset.c; each
 * says so where the model applies it ("rule from the code").
 *
 * Each program uses each of its locks at device scope, at block scope,
 * or sloppily (any scopes, fences missing or misplaced, releases by other
 * lanes), so that words stay protected, lose their lock to the meet, or
 * keep only locks that are no longer valid.  Any epoch may name a lock
 * word outside the lock protocol, and launches that ran a CAS end while
 * others still run: a page sweep once forgot lock words there (seed 16).
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
#include "oracle.h"

extern const wr_engine_ops wr_engine_lockset;

enum {
    MAX_LAUNCHES = 3,
    MAX_EPOCHS = ORACLE_MAX_EPOCHS,
    BLOCKS = 2,
    WARPS = 2,                 /* blocks of 64 threads */
    LANES = 32,
    WORDS = 128,               /* data words: four aligned lines, two on each side of a page */
    NLOCKS = 4,                /* lock words: words WORDS .. WORDS + NLOCKS - 1 */
    ALL_WORDS = WORDS + NLOCKS,
    REGION = 16,               /* by convention lock k guards words [k REGION, (k + 1) REGION) */
    STEPS = 240,
    SEEDS = 2000,
    MAX_HOLDS = 16,            /* ENGINES.md, known limits: holds tracked per warp */
    SLOTS = 2,                 /* locks a generated warp means to hold at once */
};

#define BASE (0x7f9c5fe40000ull + 4096 - 256)   /* word i at BASE + 4 i: a page starts at word 64;
                                                   a 47-bit device address, as real traces have */
#define SHARED_BASE 0x100ull            /* shared word i at SHARED_BASE + 4 i */
#define LOCK_ADDR(k) (BASE + 4ull * (WORDS + (k)))
#define SITE0 1000u                     /* an access's own site: SITE0 + its event's seq */
#define SITE_POOL 500u                  /* sites shared by several accesses of one kind */
#define HOST UINT32_MAX


/* ---- epochs: a happens-before relation over launches and copies ---- */


/* ---- locksets: explicit sets of (lock, block or device) entries ---- */

/* dsmem programs: shared accesses through DSMEM too; every launch is one
 * cluster of both blocks */
static bool dsmem_programs;
/* split programs: barriers whose arrivals (ARRIVE, ARRIVE_RELAXED) and
 * WAITs are spread over the program (lf_events.h, lf_plan) */
static bool split_programs;

/* lock ATOM: the implicit atomic lock; fields DEV and CL (the cluster of
 * both blocks, in the dsmem programs, whose launches are one cluster) */
enum { ATOM = NLOCKS, DEV = BLOCKS, CL = BLOCKS + 1, FIELDS = BLOCKS + 2 };

typedef struct lset {
    bool has[NLOCKS + 1][FIELDS];   /* [lock or ATOM][block b, DEV or CL] */
} lset;

static lset lset_meet(const lset *x, const lset *y)
{
    lset r;
    for (unsigned k = 0; k <= NLOCKS; k++)
        for (unsigned f = 0; f < FIELDS; f++)
            r.has[k][f] = x->has[k][f] && y->has[k][f];
    return r;
}

static bool lset_has_lock(const lset *x)   /* some entry of a real lock (not ATOM) */
{
    for (unsigned k = 0; k < NLOCKS; k++)
        for (unsigned f = 0; f < FIELDS; f++)
            if (x->has[k][f])
                return true;
    return false;
}

/* ---- per-thread lock state ---- */

enum { H_NONE = 0, H_PENDING, H_HELD };

typedef struct mlane {
    uint8_t hold[NLOCKS];       /* this lane's state of each lock word */
    uint8_t hold_scope[NLOCKS]; /* CAS scope; min(CAS, fence) once held */
    uint64_t acq_fence[NLOCKS]; /* seq + 1 of the fence that made it held */
    uint64_t last_fence;        /* seq + 1 of the lane's last fence, 0: none */
    uint8_t fence_scope;
    uint64_t last_data;         /* seq + 1 of the lane's last plain access */
} mlane;

typedef struct mwarp {
    mlane lane[LANES];
    uint32_t nholds;            /* pending + held, over the lanes (at most MAX_HOLDS) */
} mwarp;

typedef struct mlockrec {          /* per lock word, over the whole program */
    bool released;              /* some release seen */
    bool broken;                /* some release had no fence */
    uint8_t min_rel;            /* narrowest scope of a fenced release */
} mlockrec;

/* ---- per-byte state ----
 *
 * Memory is byte-addressed: the model keeps every byte's state, each
 * stepped by the accesses that cover it.  The engine keeps a word's in one
 * cell until an access covers only part of it; before that the four bytes'
 * states are equal, so the model is the engine's with every word split
 * from the start.  One lane's access (or a copy) reports at most once per
 * word: the first of its bytes there that races names the byte; the
 * others are marked reported as that byte is (rule from the code). */

enum { ST_EXCL = 1, ST_SHARED, ST_SMOD };

typedef struct mword {
    bool lockword;              /* a CAS named it: synchronisation, no state */
    bool live;                  /* not VIRGIN */
    uint8_t state;
    lset cand;                  /* C(v) */
    bool written, multi, reported;
    /* its last accessor's block's count of completed phases then, plus
     * the phases that accessor had arrived at and gone on from */
    uint32_t after;
    uint32_t epoch;             /* of the last access */
    /* the access a report names (the last one, or the last write it keeps) */
    uint32_t block, warp, lane, site;   /* block HOST: the host */
    uint8_t kind;
    uint64_t seq;               /* its true trace position (the model's own check) */
} mword;

/* A block's barriers: its phases (lf_mbars), its count of completed
 * phases, and, from its first split barrier event, per warp the phases it
 * arrived at and went on from, not complete yet (pend) and the count just
 * after the last phase with no relaxed arrival it waited for (seen).
 * Its cluster and grid barriers: how many its share completed ([0]; [1]:
 * grid barriers alone), at each the count before it, or the smallest
 * count + pend an ARRIVE brought if smaller (stamp), and whether it
 * released (some SYNC or ARRIVE, no relaxed arrival); per warp, the
 * phases it passed (those its block completed up to its last wait), late
 * (it arrived in the last completed one, not waited yet) and lost (it
 * arrived again without waiting, or a phase completed without it: none
 * known until it next waits). */
typedef struct mblock {
    lf_mbars bars;
    uint32_t count;
    bool split;
    uint32_t pend[WARPS], seen[WARPS];
    uint32_t share_lo;          /* the smallest count + pend an ARRIVE brought to the share */
    uint8_t scope, done_scope;  /* of the share under way (0 none), of the last completed */
    uint32_t done_seen;         /* seen after the last completed share, for a late WAIT */
    uint32_t cross_n[2];
    uint32_t stamp[2][64];
    bool ok[2][64];
    bool late[WARPS], lost[WARPS];
    uint32_t passed[WARPS][2];
} mblock;

typedef struct model {
    oracle_epochs E;
    uint32_t nlaunches;
    mwarp warp[MAX_EPOCHS + 1][BLOCKS][WARPS];
    mblock blk[MAX_EPOCHS + 1][BLOCKS];
    mring ring[MAX_EPOCHS + 1][BLOCKS][WARPS];
    mring host_ring;            /* one for all copies, as the engine's */
    mlockrec lock[NLOCKS];
    mword global[4 * ALL_WORDS];   /* by byte */
    mword shared[MAX_EPOCHS + 1][BLOCKS][4 * WORDS];
    wr_findings *found;
    /* what the programs exercised */
    unsigned protected_by_lock;   /* SHARED_MOD, no warning: a real lock was valid */
    unsigned lock_not_valid;      /* warnings with a lock left in C(v), none valid */
    unsigned lock_lost;           /* warnings where this access's meet dropped a lock */
    unsigned ring_guesses;        /* ring named an access other than the kept one */
    unsigned older_named;         /* first sides found among the older instructions */
    unsigned dsmem_examples;      /* races on another block's shared word */
    unsigned barrier_resets;      /* words a cluster or grid barrier reset */
    unsigned split_kept;          /* words a completed phase left: the warp only arrived since,
                                     or the word's accessor had gone on from an arrival */
} model;

/* ---- the model's steps ---- */

typedef struct cur {
    const wr_access *a;         /* NULL: a host copy */
    uint32_t epoch, launch, block, warp;   /* block HOST: the host */
    uint64_t seq;
    uint32_t site;
    uint8_t space, kind;
    bool write;
} cur;

static uint8_t norm_scope(uint8_t scope) { return scope == WR_SCOPE_NONE ? WR_SCOPE_DEVICE : scope; }

/* Is C(v) still protecting: an entry of the implicit atomic lock, or of a
 * lock never released, or of one whose releases all had their fence and
 * the narrowest of them covers the entry (device for L@dev)? */
static bool valid(const model *m, const lset *c)
{
    for (unsigned f = 0; f < FIELDS; f++)
        if (c->has[ATOM][f])
            return true;
    for (unsigned k = 0; k < NLOCKS; k++)
        for (unsigned f = 0; f < FIELDS; f++) {
            if (!c->has[k][f])
                continue;
            const mlockrec *l = &m->lock[k];
            if (!l->released)
                return true;
            if (l->broken)
                continue;
            if (l->min_rel >= (f == DEV  ? WR_SCOPE_DEVICE
                               : f == CL ? WR_SCOPE_CLUSTER
                                         : WR_SCOPE_BLOCK))
                return true;
        }
    return false;
}

/* Did lane `lane` of access a touch the byte at addr itself? */
static bool lane_touches(const wr_access *a, unsigned lane, uint64_t addr)
{
    if (!((a->active_mask >> lane) & 1u))
        return false;
    uint64_t lo = wr_access_lane_addr(a, lane);
    return lo <= addr && addr <= lo + a->size - 1;
}

/* An access of the ring (or an older instruction) that names the kept
 * thread's access: not the current one, at its site (any when 0), in the
 * space, of the lane, holding the word. */
static bool fits(const mring_ent *e, const cur *c, uint32_t site, unsigned lane, uint8_t space,
                 uint64_t addr)
{
    return e->seq != c->seq && (!site || e->site == site) && e->space == space &&
           ((e->mask >> lane) & 1u) && e->lo <= addr + 3 && addr <= e->hi;
}

/* The position of the access of `ring` that names the word at addr in
 * space for `lane` at `site`: the newest of the last WR_ACCESS_RING that
 * fits, else the newest older instruction that fits (*older set), else 0. */
static uint64_t ring_names(const mring *ring, const cur *c, uint32_t site, unsigned lane,
                           uint8_t space, uint64_t addr, bool *older)
{
    *older = false;
    for (uint32_t k = 0; k < WR_ACCESS_RING && k < ring->n; k++) {
        const mring_ent *e = &ring->e[ring->n - 1 - k];
        if (fits(e, c, site, lane, space, addr))
            return e->seq;
    }
    uint64_t seq = 0;
    mring_ent olders[WR_RING_OLDER];
    for (unsigned k = 0, n = ring_older(ring, olders); k < n; k++)
        if (fits(&olders[k], c, site, lane, space, addr) && olders[k].seq > seq)
            seq = olders[k].seq;
    *older = seq != 0;
    return seq;
}

/* A race on the byte at addr in space (a shared byte of block `owner`,
 * addr its offset; raw: its address as the current lane used it).  The
 * example names the byte; the rings are asked for its word, whose bytes
 * their ranges hold (access_ring.h: rule from the code). */
static void report(model *m, const cur *c, const mword *w, uint32_t lane, uint8_t space,
                   uint32_t owner, uint64_t addr, uint64_t raw)
{
    uint64_t word = addr & ~3ull;
    wr_race r;
    memset(&r, 0, sizeof r);
    r.potential = 1;
    r.verdict = WR_VERDICT_NONE;
    /* a shared word another block touched is named with its owner */
    bool remote = space == WR_SPACE_SHARED && (c->block != owner || w->block != owner);
    r.space = remote ? WR_SPACE_DSMEM : space;
    r.addr = remote ? wr_dsmem_addr(owner, (uint32_t)addr) : addr;
    m->dsmem_examples += remote;
    bool ohost = w->block == HOST, chost = c->block == HOST;
    if (w->epoch != c->epoch || ohost || chost)
        r.race_class = WR_CLASS_INTER_KERNEL;
    else if (w->block != c->block)
        r.race_class = WR_CLASS_INTER_BLOCK;
    else if (w->warp != c->warp)
        r.race_class = WR_CLASS_INTER_WARP;
    else
        r.race_class = WR_CLASS_INTRA_WARP;
    r.first = (wr_race_access){.site = w->site, .kind = w->kind,
                               .launch = ohost ? 0 : m->E.ep[w->epoch].launch,
                               .block = ohost ? HOST : w->block, .warp = ohost ? HOST : w->warp,
                               .lane = ohost ? HOST : w->lane};
    /* trace position: the current instruction's when the kept thread is an
     * earlier lane of it with its site and kind that touched the word;
     * else the newest of that warp's last WR_ACCESS_RING accesses (the
     * current one not asked) of that lane, at that site (any site when it
     * is 0), whose byte range holds the word (access_ring.h); else 0 */
    if (!chost && !ohost && w->epoch == c->epoch && w->block == c->block && w->warp == c->warp &&
        w->lane < lane && w->site == c->site && w->kind == c->kind && lane_touches(c->a, w->lane, raw)) {
        r.first.seq = c->seq;
    } else {
        /* a shared word is named by the accessor's SHARED accesses when it
         * owns the word, by its DSMEM accesses with the owner; the newer */
        const mring *ring = ohost ? &m->host_ring : &m->ring[w->epoch][w->block][w->warp];
        unsigned l = ohost ? 0 : w->lane;
        bool own_older = false, remote_older = false;
        uint64_t own = space != WR_SPACE_SHARED || w->block == owner
                           ? ring_names(ring, c, w->site, l, space, word, &own_older)
                           : 0;
        uint64_t rem = space == WR_SPACE_SHARED
                           ? ring_names(ring, c, w->site, l, WR_SPACE_DSMEM,
                                        wr_dsmem_addr(owner, (uint32_t)word), &remote_older)
                           : 0;
        r.first.seq = rem > own ? rem : own;
        m->older_named += rem > own ? remote_older : own_older;
    }
    if (r.first.seq && r.first.seq != w->seq)
        m->ring_guesses++;
    r.second = (wr_race_access){.site = c->site, .kind = c->kind, .launch = c->launch,
                                .block = chost ? HOST : c->block, .warp = chost ? HOST : c->warp,
                                .lane = chost ? HOST : lane, .seq = c->seq};
    wr_findings_report(m->found, &r);
}

/* One thread's access to one data byte, with lockset ls: a global byte
 * at addr, or a shared byte of block `owner` at offset addr; raw: the
 * address the lane used.  quiet: a race is marked reported, not reported
 * (an earlier byte of the word reported it for this lane).  Returns
 * whether it reported. */
static bool touch(model *m, const cur *c, mword *w, uint32_t lane, uint8_t space, uint32_t owner,
                  uint64_t addr, uint64_t raw, const lset *ls, bool quiet)
{
    bool reported = false;
    if (w->lockword)
        return false;   /* lock words are synchronisation, not data */
    /* A launch boundary that orders the word's epoch before this one
     * resets it.  The word's epoch is that of its last access (ENGINES.md,
     * "Launch ordering", shared with fsm: the stored epoch), also when an
     * access of a concurrent epoch came after one of its own epoch (rule
     * from the code: that access takes the word into its epoch). */
    bool concurrent = false;
    if (w->live && w->epoch != c->epoch) {
        if (oe_ordered(&m->E, w->epoch, c->epoch))
            w->live = false;
        else
            concurrent = true;
    }
    /* A completed barrier resets a word only its block touched.  Rule from
     * the code: the reset shows at that block's next access; an access of
     * another block first still meets the word's state (the barrier does
     * not order that block's accesses with it).  Without split barriers
     * the block's count passed the word's; with them, the count the
     * current warp has seen did. */
    const mblock *cb = c->block == HOST ? NULL : &m->blk[c->epoch][c->block];
    if (w->live && !concurrent && !w->multi && cb && w->block == c->block) {
        if ((cb->split ? cb->seen[c->warp] : cb->count) > w->after)
            w->live = false;
        else if (cb->count > w->after)
            m->split_kept++;   /* reset but for split barriers */
    }
    /* and a word only another block touched resets when that block arrived
     * at a cluster or grid barrier (the dsmem programs' gather both blocks,
     * one cluster; grid barriers gather both in the split programs) after
     * it, one that released it and that the current warp has passed: X's
     * k-th is the current block's k-th, and X's count one behind or ahead
     * at most (barriers.h); "after it": the word's count is at most X's
     * stamp at that barrier */
    else if (w->live && !concurrent && !w->multi && w->block != c->block && w->block != HOST && cb) {
        unsigned k = dsmem_programs ? 0 : 1;
        const mblock *xb = &m->blk[c->epoch][w->block];
        uint32_t passed = cb->lost[c->warp] ? 0 : cb->passed[c->warp][k], nx = xb->cross_n[k];
        if (passed && nx >= passed && nx <= passed + 1 && xb->ok[k][passed] &&
            w->after <= xb->stamp[k][passed]) {
            w->live = false;
            m->barrier_resets++;
        }
    }
    uint32_t tl = c->block == HOST ? 0 : lane, tw = c->block == HOST ? 0 : c->warp;
    mword nw = *w;
    nw.epoch = c->epoch;
    nw.after = cb ? cb->count + (cb->split ? cb->pend[c->warp] : 0) : 0;
    if (!w->live) {
        nw.live = true;
        nw.state = ST_EXCL;
        nw.cand = *ls;
        nw.written = c->write;
        nw.multi = false;
        nw.reported = false;   /* (rule from the code: a reset word may warn again) */
    } else {
        nw.cand = lset_meet(&w->cand, ls);
        /* Rule from the code: "another thread" is compared with the kept
         * thread (in EXCLUSIVE always the owner); an access of a
         * concurrent epoch is always another thread. */
        bool same = !concurrent && w->block == c->block && w->warp == tw && w->lane == tl;
        nw.written = w->written || c->write;
        if (w->state == ST_EXCL && !same)
            nw.state = nw.written ? ST_SMOD : ST_SHARED;
        else if (w->state == ST_SHARED && c->write)
            nw.state = ST_SMOD;
        nw.multi = w->multi || concurrent || w->block != c->block;
        if (nw.state == ST_SMOD && !w->reported) {
            if (quiet) {
                nw.reported = !valid(m, &nw.cand);
            } else if (!valid(m, &nw.cand)) {
                if (lset_has_lock(&nw.cand))
                    m->lock_not_valid++;
                else if (lset_has_lock(&w->cand))
                    m->lock_lost++;
                report(m, c, w, lane, space, owner, addr, raw);
                nw.reported = reported = true;
            } else if (lset_has_lock(&nw.cand)) {
                m->protected_by_lock++;
            }
        }
        /* A read after a write keeps the write as the side a report names,
         * and an atomic after a plain write keeps the plain write
         * (ENGINES.md).  Rule from the code: "after a write" means the word
         * was written (by a store, or an atomic that writes: not an atomic
         * load, nor a CAS that failed in every lane) for a read, and that
         * the kept access is a plain write for an atomic; an access of a
         * concurrent epoch never keeps the old side. */
        bool keeps_old = c->kind == WR_KIND_ATOMIC ? w->kind == WR_KIND_WRITE : !c->write && w->written;
        if (keeps_old && !concurrent) {
            *w = nw;
            return reported;
        }
    }
    nw.block = c->block;
    nw.warp = tw;
    nw.lane = tl;
    nw.site = c->site;
    nw.kind = c->kind;
    nw.seq = c->seq;
    *w = nw;
    return reported;
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

/* The lockset of one lane for this access. */
static lset lane_lockset(const mwarp *W, uint32_t block, unsigned lane, bool atomic, uint8_t ascope)
{
    lset s;
    memset(&s, 0, sizeof s);
    for (unsigned k = 0; k < NLOCKS; k++) {
        if (W->lane[lane].hold[k] != H_HELD)
            continue;
        s.has[k][block] = true;
        /* cluster scope: L@c where the launch's clusters hold several
         * blocks (the dsmem programs'), else L@b is all it means */
        if (dsmem_programs && W->lane[lane].hold_scope[k] >= WR_SCOPE_CLUSTER)
            s.has[k][CL] = true;
        if (W->lane[lane].hold_scope[k] >= WR_SCOPE_DEVICE)
            s.has[k][DEV] = true;
    }
    if (atomic) {
        s.has[ATOM][block] = true;
        if (dsmem_programs && ascope >= WR_SCOPE_CLUSTER)
            s.has[ATOM][CL] = true;
        if (ascope >= WR_SCOPE_DEVICE)
            s.has[ATOM][DEV] = true;
    }
    return s;
}

/* Phase counts of what the split programs made happen */
static unsigned split_phases, split_late_waits, split_relaxed_phases;

typedef struct mdone {
    model *m;
    uint32_t epoch, block;
} mdone;

/* A phase of a block completed (lf_mbars): a new barrier interval; its
 * arrivers have one pending phase fewer; its waiters have seen the count,
 * unless it had a relaxed arrival (it released nothing).  The share of a
 * cluster or grid barrier goes into the block's history, with who passed
 * it. */
static void phase_done(void *ctx, unsigned slot, const lf_mphase *ph)
{
    mdone *d = ctx;
    mblock *B = &d->m->blk[d->epoch][d->block];
    uint32_t before = B->count++;
    bool arrivers = false;
    for (unsigned w = 0; w < WARPS; w++)
        arrivers |= ph->goes_on[w];
    split_phases += arrivers;
    if (slot == LF_MSHARE) {
        split_relaxed_phases += ph->relaxed;
        uint32_t stamp = B->split && B->share_lo < before ? B->share_lo : before;
        for (unsigned k = 0; k < 2; k++) {
            if (k == 1 && B->scope != WR_BAR_GRID)
                break;
            uint32_t n = ++B->cross_n[k];
            cr_assert_lt(n, 64);
            B->stamp[k][n] = stamp;
            B->ok[k][n] = ph->top && !ph->relaxed;
        }
        for (unsigned w = 0; w < WARPS; w++) {
            if (ph->waits[w]) {
                for (unsigned k = 0; k < 2; k++)
                    B->passed[w][k] = B->cross_n[k];
                B->late[w] = B->lost[w] = false;
            } else if (ph->goes_on[w]) {
                B->late[w] = true;
            } else {
                B->late[w] = false;
                B->lost[w] = true;
            }
        }
        B->done_seen = ph->relaxed ? 0 : B->count;
        B->done_scope = B->scope;
        B->scope = 0;
        B->share_lo = UINT32_MAX;
    }
    if (!B->split)
        return;
    for (unsigned w = 0; w < WARPS; w++) {
        if (ph->goes_on[w] && B->pend[w])
            B->pend[w]--;
        if (ph->waits[w] && !ph->relaxed)
            B->seen[w] = B->count;
    }
}

static void model_acts(model *m, uint32_t epoch, uint32_t block, uint32_t warp)
{
    mdone d = {m, epoch, block};
    lf_mbars_acts(&m->blk[epoch][block].bars, warp, phase_done, &d);
}

/* A barrier event of a warp: it acts again, then arrives or waits.  A
 * cluster or grid barrier is the block's share (every thread of the
 * block: the launch's 64). */
static void model_barrier(model *m, uint32_t epoch, const wr_barrier *br)
{
    uint32_t w = br->warp;
    mblock *B = &m->blk[epoch][br->block];
    mdone d = {m, epoch, br->block};
    lf_mbars_acts(&B->bars, w, phase_done, &d);
    if (br->mode != WR_BARMODE_SYNC && !B->split) {
        /* its first split barrier event: every warp has seen all so far */
        B->split = true;
        for (unsigned i = 0; i < WARPS; i++)
            B->seen[i] = B->count;
        B->share_lo = UINT32_MAX;
    }
    unsigned slot;
    uint32_t expected;
    if (br->scope == WR_BAR_BLOCK) {
        cr_assert_lt(br->barrier_id, LF_MSHARE);
        slot = br->barrier_id;
        expected = br->expected;
    } else {
        slot = LF_MSHARE;
        expected = WARPS * LANES;
        if (br->mode == WR_BARMODE_WAIT) {
            bool arrived = B->bars.ph[slot].goes_on[w];
            if (lf_mbars_wait(&B->bars, slot, w)) {
                if (arrived && B->pend[w])
                    B->pend[w]--;
            } else if (B->late[w]) {   /* its phase completed before: passed now */
                B->late[w] = B->lost[w] = false;
                for (unsigned k = 0; k < 2; k++)
                    B->passed[w][k] = B->cross_n[k];
                if (B->done_seen > B->seen[w])
                    B->seen[w] = B->done_seen;
                split_late_waits++;
            }
            return;
        }
        if (!B->scope)
            B->scope = br->scope;
        if (B->late[w]) {   /* it arrives again, not having waited */
            B->late[w] = false;
            B->lost[w] = true;
        }
        if (B->split && br->mode == WR_BARMODE_ARRIVE && B->count + B->pend[w] < B->share_lo)
            B->share_lo = B->count + B->pend[w];
    }
    if (B->split) {
        bool arrived = B->bars.ph[slot].goes_on[w];
        if (br->mode != WR_BARMODE_SYNC && !arrived)
            B->pend[w]++;
        else if (br->mode == WR_BARMODE_SYNC && arrived && B->pend[w])
            B->pend[w]--;
    }
    lf_mbars_arrive(&B->bars, slot, w, br->mode, (uint32_t)__builtin_popcount(br->active_mask),
                    expected, 0, phase_done, &d);
}

static void model_fence(model *m, uint32_t epoch, const wr_event *ev)
{
    const wr_fence *f = &ev->u.fence;
    mwarp *W = &m->warp[epoch][f->block][f->warp];
    uint8_t fs = norm_scope(f->scope);
    for (unsigned l = 0; l < LANES; l++) {
        if (!((f->active_mask >> l) & 1u))
            continue;
        mlane *L = &W->lane[l];
        L->last_fence = ev->seq + 1;
        L->fence_scope = fs;
        for (unsigned k = 0; k < NLOCKS; k++)
            if (L->hold[k] == H_PENDING) {   /* the acquire completes */
                L->hold[k] = H_HELD;
                L->acq_fence[k] = ev->seq + 1;
                if (fs < L->hold_scope[k])
                    L->hold_scope[k] = fs;
            }
    }
}

static int lock_of(uint64_t addr)
{
    if (addr < LOCK_ADDR(0) || addr >= LOCK_ADDR(NLOCKS))
        return -1;
    return (int)((addr - LOCK_ADDR(0)) / 4);
}

static bool strong_plain_store(const wr_access *a)
{
    return a->op == WR_OP_STORE && a->order != WR_ORDER_WEAK;
}

/* CAS: acquires (pending); exchange / atomic store / volatile store:
 * releases.  Returns the lanes that released a lock. */
static uint32_t lock_events(model *m, mwarp *W, const wr_event *ev)
{
    const wr_access *a = &ev->u.access;
    /* a volatile store is relaxed at system scope */
    uint8_t as = wr_op_is_atomic(a->op) || a->scope ? norm_scope(a->scope) : WR_SCOPE_SYSTEM;
    if (a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS) {
        /* every word a CAS names is a lock word from then on (rule from the
         * code: not before; the data state it had is dropped) */
        for (unsigned l = 0; l < LANES; l++)
            if ((a->active_mask >> l) & 1u) {
                for (uint64_t i = 0; i < 4; i++) {   /* the CAS's word: all its bytes */
                    mword *w = &m->global[((wr_access_lane_addr(a, l) - BASE) & ~3ull) + i];
                    memset(w, 0, sizeof *w);
                    w->lockword = true;
                }
            }
        for (unsigned l = 0; l < LANES; l++) {
            if (!((a->active_mask & a->cas_success) >> l & 1u))
                continue;
            int k = lock_of(wr_access_lane_addr(a, l));
            cr_assert(k >= 0);
            /* Rules from the code: a lane's second CAS on a lock it holds
             * (pending or held) changes nothing, and a hold beyond the
             * warp's MAX_HOLDS is not taken, lanes taken in order. */
            if (W->lane[l].hold[k] != H_NONE || W->nholds == MAX_HOLDS)
                continue;
            W->lane[l].hold[k] = H_PENDING;
            W->lane[l].hold_scope[k] = as;
            W->nholds++;
        }
        return 0;
    }
    if (!((a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_EXCH) ||
          a->op == WR_OP_ATOMIC_STORE || strong_plain_store(a)))
        return 0;
    uint32_t released = 0;
    for (unsigned l = 0; l < LANES; l++) {
        if (!((a->active_mask >> l) & 1u))
            continue;
        int k = lock_of(wr_access_lane_addr(a, l));
        mlane *L = &W->lane[l];
        if (k < 0 || L->hold[k] == H_NONE)
            continue;
        /* release fence: a fence of the lane after its last plain access.
         * Rules from the code: of a held lock, it must also come after the
         * acquire's fence (CAS, fence, exchange: the acquire fence is no
         * release fence, the lock is broken); of a hold still pending (no
         * acquire fence), any fence of the lane counts, even one before
         * the CAS. */
        bool fenced = L->hold[k] == H_HELD
                          ? L->last_fence > L->acq_fence[k] && L->last_fence > L->last_data
                          : L->last_fence && L->last_fence > L->last_data;
        mlockrec *rec = &m->lock[k];
        if (!rec->released) {
            rec->released = true;
            rec->min_rel = 0xff;
        }
        if (!fenced) {
            rec->broken = true;
        } else {
            uint8_t rs = L->fence_scope < as ? L->fence_scope : as;
            if (rs < rec->min_rel)
                rec->min_rel = rs;
        }
        L->hold[k] = H_NONE;
        W->nholds--;
        released |= 1u << l;
    }
    return released;
}

static void model_access(model *m, const wr_event *ev, uint32_t epoch)
{
    const wr_access *a = &ev->u.access;
    model_acts(m, epoch, a->block, a->warp);   /* it goes on: what it waited for completed */
    mwarp *W = &m->warp[epoch][a->block][a->warp];
    bool atomic = wr_op_is_atomic(a->op);
    if (atomic) {
        lock_events(m, W, ev);
    } else {
        /* a lane whose volatile store released a lock made no data access */
        uint32_t released = strong_plain_store(a) ? lock_events(m, W, ev) : 0;
        for (unsigned l = 0; l < LANES; l++)
            if ((a->active_mask & ~released) >> l & 1u)
                W->lane[l].last_data = ev->seq + 1;
    }
    cur c = {.a = a, .epoch = epoch, .launch = a->launch, .block = a->block, .warp = a->warp,
             .seq = ev->seq, .site = ev->site, .space = a->space,
             .kind = atomic ? WR_KIND_ATOMIC : a->op == WR_OP_STORE ? WR_KIND_WRITE : WR_KIND_READ,
             .write = wr_access_writes(a)};
    /* the access takes its place in its warp's ring first: a report of its
     * own lanes searches the ring without it */
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned lane = 0; lane < LANES; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane);
        lo = addr < lo ? addr : lo;
        hi = addr + a->size - 1 > hi ? addr + a->size - 1 : hi;
    }
    ring_push(&m->ring[epoch][a->block][a->warp],
              (mring_ent){.seq = ev->seq, .lo = lo, .hi = hi, .site = ev->site,
                          .mask = a->active_mask, .kind = c.kind, .space = a->space});
    for (unsigned lane = 0; lane < LANES; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        lset ls = lane_lockset(W, a->block, lane, atomic, norm_scope(a->scope));
        uint64_t addr = wr_access_lane_addr(a, lane);
        for (uint64_t wd = addr / 4; wd <= (addr + a->size - 1) / 4; wd++) {
            bool reported = false;
            for (uint64_t b = wd * 4; b < wd * 4 + 4; b++) {
                if (b < addr || b >= addr + a->size)
                    continue;
                uint8_t space;
                uint32_t owner;
                uint64_t at;
                mword *w = byte_at(m, &c, b, &space, &owner, &at);
                reported |= touch(m, &c, w, lane, space, owner, at, b, &ls, reported);
            }
        }
    }
}

static void model_copy(model *m, const wr_event *ev, uint32_t epoch)
{
    const wr_host_copy *cp = &ev->u.copy;
    cur c = {.epoch = epoch, .launch = 0, .block = HOST, .warp = HOST, .seq = ev->seq,
             .site = ev->site, .space = WR_SPACE_GLOBAL};
    lset none;
    memset(&none, 0, sizeof none);   /* the host holds no lock */
    for (int side = 0; side < 2; side++) {
        uint64_t at = side == 0 ? (cp->kind == WR_COPY_D2H || cp->kind == WR_COPY_D2D ? cp->src : 0)
                                : (cp->kind != WR_COPY_D2H ? cp->dst : 0);
        if (!at)
            continue;
        c.kind = side == 0 ? WR_KIND_READ : WR_KIND_WRITE;
        c.write = side == 1;
        ring_push(&m->host_ring, (mring_ent){.seq = ev->seq, .lo = at, .hi = at + cp->bytes - 1,
                                             .site = ev->site, .mask = 1, .kind = c.kind,
                                             .space = WR_SPACE_GLOBAL});
        for (uint64_t wd = at / 4; wd <= (at + cp->bytes - 1) / 4; wd++) {
            bool reported = false;
            for (uint64_t b = wd * 4; b < wd * 4 + 4; b++)
                if (b >= at && b < at + cp->bytes)
                    reported |= touch(m, &c, &m->global[b - BASE], 0, WR_SPACE_GLOBAL, 0, b, b,
                                      &none, reported);
        }
    }
}

/* ---- random programs ---- */

enum { P_DEVICE, P_BLOCK, P_SLOPPY };   /* how a program uses a lock */

typedef struct gslot {          /* a lock a generated warp means to hold */
    uint8_t stage;              /* 0 free, 1 its CAS succeeded, 2 and fenced */
    bool sloppy;                /* a lock of P_SLOPPY among its locks: fences may lack */
    uint32_t lanes;             /* the lanes whose CAS succeeded */
    uint8_t lock[LANES];        /* the lock of each */
} gslot;

typedef struct prog {
    oracle_prog ev;             /* the program's events */
    gslot slot[MAX_EPOCHS + 1][BLOCKS][WARPS][SLOTS];
    uint8_t profile[NLOCKS];
} prog;

static wr_event *emit(prog *p, wr_event e) { return oracle_emit(&p->ev, e); }

/* An access's site: mostly its own; sometimes one of a few shared by
 * accesses of its kind (the ring then has several entries at the site);
 * rarely 0 (unknown: the ring matches any site). */
static uint32_t pick_site(const wr_event *e)
{
    uint32_t r = rnd(32);
    if (r == 0)
        return 0;
    if (r < 6) {
        const wr_access *a = &e->u.access;
        uint32_t kind = wr_op_is_atomic(a->op) ? 2 : a->op == WR_OP_STORE;
        return SITE_POOL + 4 * kind + rnd(4);
    }
    return SITE0 + (uint32_t)e->seq;
}

static wr_event *emit_access(prog *p, model *m, uint32_t epoch, wr_event e)
{
    wr_event *at = emit(p, e);
    at->site = pick_site(at);
    model_access(m, at, epoch);
    return at;
}

static uint8_t pick_scope(void)
{
    static const uint8_t scopes[] = {WR_SCOPE_BLOCK,  WR_SCOPE_BLOCK,  WR_SCOPE_BLOCK,
                                     WR_SCOPE_DEVICE, WR_SCOPE_DEVICE, WR_SCOPE_DEVICE,
                                     WR_SCOPE_DEVICE, WR_SCOPE_SYSTEM, WR_SCOPE_CLUSTER,
                                     WR_SCOPE_NONE};
    return scopes[rnd(sizeof scopes)];
}

static uint32_t random_mask(void) { return rnd(0xffffffffu) | 1u; }

static uint32_t some_lanes(void)   /* two to four lanes */
{
    uint32_t mask = 0, n = 2 + rnd(3);
    while ((uint32_t)__builtin_popcount(mask) < n)
        mask |= 1u << rnd(LANES);
    return mask;
}

static void emit_fence(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, uint32_t mask,
                       uint8_t scope)
{
    wr_event *e = emit(p, lf_fence(m->E.ep[x].launch, b, w, mask, scope));
    model_fence(m, x, e);
}

/* The scope of a CAS, fence or exchange of lock k's protocol: a program
 * uses each lock at device scope, at block scope, or any way. */
static uint8_t lock_scope(const prog *p, unsigned k)
{
    static const uint8_t device[] = {WR_SCOPE_DEVICE, WR_SCOPE_DEVICE, WR_SCOPE_SYSTEM, WR_SCOPE_NONE};
    switch (p->profile[k]) {
    case P_DEVICE:
        return device[rnd(4)];
    case P_BLOCK:
        return rnd(4) ? WR_SCOPE_BLOCK : WR_SCOPE_CLUSTER;
    default:
        return pick_scope();
    }
}

/* One in four 4-byte accesses becomes a 1- or 2-byte one, naturally
 * aligned: a strided one packs its lanes into words (neighbouring lanes
 * share a word and race on none of it), a uniform one or a gather's lanes
 * name a byte or half of the word they named (lanes: a gather's, the
 * program's copy that a->lane_addr points to). */
static void maybe_narrow(wr_access *a, uint64_t *lanes)
{
    if (a->size != 4 || rnd(4))
        return;
    a->size = rnd(2) ? 1 : 2;
    uint32_t slots = 4 / a->size;
    if (a->addr_mode == WR_ADDR_STRIDED)
        a->stride = a->size;
    if (a->addr_mode != WR_ADDR_VECTOR) {
        a->base += a->size * rnd(slots);
        return;
    }
    for (unsigned l = 0; l < LANES; l++)
        if ((a->active_mask >> l) & 1u)
            lanes[l] += a->size * rnd(slots);
}

/* A data access of the lanes in `mask`, each in the region of its lock
 * (lock[lane]); a uniform or coalesced one only of the lanes whose lock is
 * the lowest lane's, unless the whole warp accesses. */
static void region_access(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, uint32_t mask,
                          const uint8_t lock[LANES], bool plain)
{
    static const uint8_t ops[] = {WR_OP_LOAD, WR_OP_LOAD, WR_OP_STORE, WR_OP_STORE, WR_OP_STORE,
                                  WR_OP_ATOMIC_RMW};
    uint8_t op = ops[rnd(plain ? 5 : 6)];
    unsigned k = lock[__builtin_ctz(mask)], shape = rnd(3);
    if (shape < 2 && mask != WR_FULL_MASK)
        for (unsigned l = 0; l < LANES; l++)
            if (lock[l] != k)
                mask &= ~(1u << l);
    wr_event e = lf_acc(0, m->E.ep[x].launch, b, w, mask, op,
                        wr_op_is_atomic(op) ? pick_scope() : 0, 0, 4);
    wr_access *a = &e.u.access;
    switch (shape) {
    case 0:   /* one word for every lane */
        a->addr_mode = WR_ADDR_UNIFORM;
        a->stride = 0;
        a->base = BASE + 4ull * (REGION * k + rnd(REGION));
        break;
    case 1: { /* coalesced: the lowest lane at a word of the region (others maybe beyond) */
        uint32_t lo = (uint32_t)__builtin_ctz(mask), hi = 31u - (uint32_t)__builtin_clz(mask);
        uint32_t at = REGION * k + rnd(REGION);
        if (at < lo || at - lo + hi >= WORDS)
            at = lo <= REGION * k ? REGION * k - lo : 0;
        a->base = BASE + 4ull * (at + hi < WORDS ? at : 0);
        break;
    }
    default:  /* gather / scatter, each lane in its lock's region */
        a->addr_mode = WR_ADDR_VECTOR;
        for (unsigned l = 0; l < LANES; l++)
            p->ev.lanes[p->ev.n][l] = (mask >> l) & 1u ? BASE + 4ull * (REGION * lock[l] + rnd(REGION)) : 0;
        a->lane_addr = p->ev.lanes[p->ev.n];
        break;
    }
    maybe_narrow(a, p->ev.lanes[p->ev.n]);
    emit_access(p, m, x, e);
}

/* A CAS or exchange / atomic or volatile store of the lanes in mask on
 * their locks. */
static void lock_access(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, uint32_t mask,
                        const uint8_t lock[LANES], uint8_t op, uint8_t aop, uint32_t success)
{
    unsigned k = lock[__builtin_ctz(mask)];
    wr_event e = lf_acc(0, m->E.ep[x].launch, b, w, mask, op, lock_scope(p, k), 0, 0);
    wr_access *a = &e.u.access;
    if (op == WR_OP_STORE) {   /* volatile: strong, plain, no scope */
        a->scope = WR_SCOPE_NONE;
        a->order = WR_ORDER_RELAXED;
    }
    a->atomic_op = aop;
    a->cas_success = success;
    unsigned lo = (unsigned)__builtin_ctz(mask);
    bool one = true;
    for (unsigned l = 0; l < LANES; l++)
        if ((mask >> l) & 1u && lock[l] != lock[lo])
            one = false;
    if (one) {
        a->base = LOCK_ADDR(lock[lo]);
    } else {
        a->addr_mode = WR_ADDR_VECTOR;
        for (unsigned l = 0; l < LANES; l++)
            p->ev.lanes[p->ev.n][l] = (mask >> l) & 1u ? LOCK_ADDR(lock[l]) : 0;
        a->lane_addr = p->ev.lanes[p->ev.n];
    }
    emit_access(p, m, x, e);
}

static void acquire(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, gslot *s)
{
    uint8_t lock[LANES];
    uint32_t mask, success;
    unsigned k = rnd(NLOCKS);
    memset(lock, k, sizeof lock);
    switch (rnd(8)) {
    case 4:   /* a few lanes, one lock */
        mask = some_lanes();
        success = rnd(2) ? mask & -mask : mask & random_mask();
        break;
    case 5:   /* a few lanes, each its own lock */
        mask = some_lanes();
        for (unsigned l = 0; l < LANES; l++)
            lock[l] = (uint8_t)rnd(NLOCKS);
        success = mask & random_mask();
        break;
    case 6:   /* the whole warp tries one lock, one lane wins (or none) */
        mask = WR_FULL_MASK;
        success = rnd(4) ? 1u << rnd(LANES) : 0;
        break;
    case 7:   /* the whole warp, a lock each (beyond MAX_HOLDS) */
        mask = WR_FULL_MASK;
        for (unsigned l = 0; l < LANES; l++)
            lock[l] = (uint8_t)rnd(NLOCKS);
        success = random_mask();
        break;
    default:  /* one lane: lane 0 or any; it may fail (spin) */
        mask = 1u << (rnd(2) ? 0 : rnd(LANES));
        success = rnd(5) ? mask : 0;
        break;
    }
    if (p->profile[lock[__builtin_ctz(mask)]] == P_SLOPPY && !rnd(3))   /* a fence before the CAS */
        emit_fence(p, m, x, b, w, rnd(2) ? mask : WR_FULL_MASK, pick_scope());
    lock_access(p, m, x, b, w, mask, lock, WR_OP_ATOMIC_RMW, WR_AOP_CAS, success);
    if (!success) {
        if (!rnd(4))   /* a fence all the same */
            emit_fence(p, m, x, b, w, mask, pick_scope());
        return;
    }
    s->stage = 1;
    s->lanes = success;
    s->sloppy = false;
    memcpy(s->lock, lock, sizeof lock);
    for (unsigned l = 0; l < LANES; l++)
        if ((success >> l) & 1u && p->profile[lock[l]] == P_SLOPPY)
            s->sloppy = true;
    if (rnd(s->sloppy ? 4 : 8)) {   /* the acquire fence, at once: of the holders, the warp or (sloppy) other lanes */
        uint32_t r = rnd(6);
        emit_fence(p, m, x, b, w, r < 4 ? success : r == 4 || !s->sloppy ? WR_FULL_MASK : random_mask(),
                   lock_scope(p, lock[__builtin_ctz(success)]));
        s->stage = 2;
    }
}

/* Release the slot's locks; no_fence: without a release fence. */
static void release(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, gslot *s, bool no_fence)
{
    unsigned k = s->lock[__builtin_ctz(s->lanes)];
    uint32_t r = no_fence ? 0 : s->sloppy ? rnd(6) : 2;
    if (r != 0)   /* the release fence (r == 0: none) */
        emit_fence(p, m, x, b, w, rnd(4) ? s->lanes : WR_FULL_MASK, lock_scope(p, k));
    if (r == 1)   /* a plain access after it: it was no release fence */
        region_access(p, m, x, b, w, s->lanes, s->lock, true);
    uint32_t mask = !s->sloppy || rnd(6) ? s->lanes : random_mask();
    uint8_t lock[LANES];
    for (unsigned l = 0; l < LANES; l++)
        lock[l] = (s->lanes >> l) & 1u ? s->lock[l] : (uint8_t)rnd(NLOCKS);
    switch (rnd(4)) {
    case 0: lock_access(p, m, x, b, w, mask, lock, WR_OP_ATOMIC_STORE, WR_AOP_NONE, 0); break;
    case 1: lock_access(p, m, x, b, w, mask, lock, WR_OP_STORE, WR_AOP_NONE, 0); break;   /* volatile */
    default: lock_access(p, m, x, b, w, mask, lock, WR_OP_ATOMIC_RMW, WR_AOP_EXCH, 0); break;
    }
    s->stage = 0;
}

static void lock_step(prog *p, model *m, uint32_t x)
{
    uint32_t b = rnd(BLOCKS), w = rnd(WARPS);
    gslot *sl = p->slot[x][b][w];
    gslot *busy = NULL, *free_slot = NULL;
    for (unsigned i = 0; i < SLOTS; i++) {
        if (sl[i].stage && (!busy || rnd(2)))
            busy = &sl[i];
        if (!sl[i].stage)
            free_slot = &sl[i];
    }
    if (busy && (!free_slot || rnd(4))) {
        if (busy->stage == 1 && (!busy->sloppy || rnd(4))) {   /* the acquire fence, late */
            emit_fence(p, m, x, b, w, !busy->sloppy || rnd(5) ? busy->lanes : random_mask(),
                       lock_scope(p, busy->lock[__builtin_ctz(busy->lanes)]));
            busy->stage = 2;
        } else {   /* release (from stage 1, sloppy: maybe without any fence since the CAS) */
            release(p, m, x, b, w, busy, busy->stage == 1 && rnd(2));
        }
    } else if (free_slot) {
        acquire(p, m, x, b, w, free_slot);
    }
}

/* A random access of a warp of a launch that may act: in a critical
 * section of the warp's, mostly its lock's region by its holders. */
static void random_access(prog *p, model *m, uint32_t x)
{
    uint32_t launch = m->E.ep[x].launch, b = rnd(BLOCKS), w = rnd(WARPS);
    /* split programs: mostly a warp that waits at no barrier (one that
     * does would go on: its phase completes) */
    for (int tries = 0; split_programs && tries < 4 && lf_mbars_waiting(&m->blk[x][b].bars, w);
         tries++) {
        b = rnd(BLOCKS);
        w = rnd(WARPS);
    }
    gslot *sl = p->slot[x][b][w];
    for (unsigned i = 0; i < SLOTS; i++)
        if (sl[i].stage && rnd(5)) {
            uint32_t mask = rnd(16) ? sl[i].lanes : WR_FULL_MASK;
            region_access(p, m, x, b, w, mask, sl[i].lock, false);
            return;
        }
    static const uint8_t ops[] = {WR_OP_LOAD, WR_OP_LOAD, WR_OP_STORE, WR_OP_STORE,
                                  WR_OP_ATOMIC_RMW, WR_OP_ATOMIC_LOAD, WR_OP_ATOMIC_STORE,
                                  WR_OP_ATOMIC_RMW};
    uint8_t op = ops[rnd(8)];
    uint8_t scope = wr_op_is_atomic(op) ? pick_scope() : 0;
    uint32_t mask = rnd(3) ? WR_FULL_MASK : random_mask();
    bool shared = rnd(5) == 0;
    /* dsmem programs: two of three shared accesses reach the shared memory
     * of the blocks of the cluster (the launch's two), a random one for a
     * uniform or strided access, per lane for a gather */
    bool dsmem = shared && dsmem_programs && rnd(3);
    uint64_t base0 = !shared ? BASE
                     : dsmem ? wr_dsmem_addr(rnd(BLOCKS), SHARED_BASE)
                             : SHARED_BASE;
    /* mostly the words no lock guards, so that guarded words stay guarded */
    uint32_t lo = rnd(16) ? NLOCKS * REGION : 0;
    wr_event e = lf_acc(0, launch, b, w, mask, op, scope, 0, 4);
    e.u.access.space = dsmem ? WR_SPACE_DSMEM : shared ? WR_SPACE_SHARED : WR_SPACE_GLOBAL;
    wr_access *a = &e.u.access;
    if (op == WR_OP_ATOMIC_RMW && rnd(2))
        a->atomic_op = WR_AOP_EXCH;   /* an exchange: a release only of a held lock word */
    switch (rnd(6)) {
    case 0:   /* a whole aligned line (packed lines) */
        a->base = base0 + 128ull * (lo / 32 + rnd((WORDS - lo) / 32));
        break;
    case 1:   /* coalesced at any word, maybe across the page */
        a->base = base0 + 4ull * (lo + rnd(WORDS - lo - 31));
        break;
    case 2:   /* one word for every lane; rarely a lock word */
        a->addr_mode = WR_ADDR_UNIFORM;
        a->stride = 0;
        a->base = base0 + 4ull * (lo + rnd(WORDS - lo));
        if (!shared && !rnd(8))
            a->base = LOCK_ADDR(rnd(NLOCKS));
        break;
    case 3:   /* two words per lane (the general loop) */
        a->size = 8;
        a->stride = 8;
        a->base = base0 + 4ull * (lo + rnd(WORDS - lo - 63));
        break;
    default: { /* a gather / scatter, lanes often sharing words, maybe lock words */
        a->addr_mode = WR_ADDR_VECTOR;
        uint32_t top = shared ? WORDS : ALL_WORDS;
        uint32_t span = 1 + rnd(top - lo);
        uint32_t at = lo + rnd(top - lo - span + 1);
        for (unsigned l = 0; l < LANES; l++) {
            uint32_t wd = at + rnd(span);
            if (dsmem && rnd(2))
                base0 = wr_dsmem_addr(rnd(BLOCKS), SHARED_BASE);
            p->ev.lanes[p->ev.n][l] = (mask >> l) & 1u ? base0 + 4ull * wd : 0;
        }
        a->lane_addr = p->ev.lanes[p->ev.n];
        break;
    }
    }
    maybe_narrow(a, p->ev.lanes[p->ev.n]);
    emit_access(p, m, x, e);
}

static void random_copy(prog *p, model *m)
{
    uint32_t x;
    wr_event *e = oracle_emit_copy(&p->ev, &m->E, BASE, WORDS, SITE0, &x);
    if (e && e->u.copy.bytes > 8 && !rnd(3)) {   /* starts or ends inside a word */
        wr_host_copy *cp = &e->u.copy;
        uint32_t head = rnd(4), tail = rnd(4);
        if (cp->src)
            cp->src += head;
        if (cp->dst)
            cp->dst += head;
        cp->bytes -= head + tail;
    }
    if (e) {
        model_copy(m, e, x);
        oe_copy_done(&m->E, x, e);
    }
}

/* A cluster or grid barrier's count is the cluster's or grid's threads. */
static void barrier(prog *p, model *m, uint32_t x, uint32_t b, uint32_t w, uint32_t expected,
                    uint8_t scope)
{
    wr_event ev = lf_barrier(m->E.ep[x].launch, b, w,
                             scope == WR_BAR_BLOCK ? expected : expected * BLOCKS);
    ev.u.barrier.scope = scope;
    wr_event *e = emit(p, ev);
    model_barrier(m, x, &e->u.barrier);
}

/* The split programs' barriers under way, per epoch (lf_plans_step). */
static lf_plans split_plans[MAX_EPOCHS + 1];
_Static_assert(BLOCKS == LF_MBLOCKS, "the plans cover the program's blocks");

static void split_barrier_step(prog *p, model *m, uint32_t x)
{
    wr_event e;
    if (lf_plans_step(&split_plans[x], rnd, dsmem_programs, m->E.ep[x].launch, &e))
        model_barrier(m, x, &emit(p, e)->u.barrier);
}

static void random_program(prog *p, model *m)
{
    memset(split_plans, 0, sizeof split_plans);
    p->ev.n = 0;
    memset(p->slot, 0, sizeof p->slot);
    for (unsigned k = 0; k < NLOCKS; k++)
        p->profile[k] = (uint8_t)rnd(3);
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
            emit(p, host_ev);
            continue;
        case ORACLE_SYNC: emit(p, host_ev); continue;
        case ORACLE_COPY: random_copy(p, m); continue;
        case ORACLE_FINISH: oracle_emit_finish(&p->ev, &m->E, x, BLOCKS); continue;
        case ORACLE_DEVICE: break;
        }
        /* split programs: a fifth of the device steps are barriers */
        uint32_t sh = split_programs ? 10 : 0;
        if (split_programs && what < 28) {
            split_barrier_step(p, m, x);
        } else if (what < 18) {   /* a block barrier: both warps, one (expected 32), or one waiting */
            uint32_t b = rnd(BLOCKS), r = rnd(6);
            if (r < 3) {
                /* every third one a cluster or grid barrier (no random
                 * number drawn: the programs stay what they were) */
                uint8_t scope = step_no % 3 ? WR_BAR_BLOCK
                                : step_no % 2 ? WR_BAR_CLUSTER : WR_BAR_GRID;
                /* in the dsmem programs one gathers both blocks */
                bool both = dsmem_programs && scope != WR_BAR_BLOCK;
                for (uint32_t k = 0; k < (both ? BLOCKS : 1); k++) {
                    barrier(p, m, x, both ? k : b, 0, 64, scope);
                    barrier(p, m, x, both ? k : b, 1, 64, scope);
                }
            } else {
                barrier(p, m, x, b, rnd(WARPS), r < 5 ? 32 : 64, WR_BAR_BLOCK);
            }
        } else if (what < 20 + sh) {   /* a warp sync (lockset ignores it) */
            uint32_t b = rnd(BLOCKS), w = rnd(WARPS);
            emit(p, lf_warp_sync(m->E.ep[x].launch, b, w, rnd(2) ? WR_FULL_MASK : random_mask()));
        } else if (what < 30 + sh) {
            lock_step(p, m, x);
        } else if (what < 33 + sh) {   /* a stray fence */
            emit_fence(p, m, x, rnd(BLOCKS), rnd(WARPS), rnd(2) ? WR_FULL_MASK : random_mask(),
                       pick_scope());
        } else {
            random_access(p, m, x);
        }
    }
    oracle_emit_ends(&p->ev, &m->E);
}

static void free_model(model *m)
{
    for (uint32_t x = 0; x <= MAX_EPOCHS; x++)
        for (unsigned b = 0; b < BLOCKS; b++)
            for (unsigned w = 0; w < WARPS; w++)
                free(m->ring[x][b][w].e);
    free(m->host_ring.e);
    wr_findings_free(m->found);
}

static unsigned protected_by_lock, lock_not_valid, lock_lost,
    ring_guesses, older_named;
static unsigned dsmem_examples, barrier_resets, split_kept;

static void check_seed(uint64_t seed)
{
    static prog p;
    static model m;
    rnd_state = seed * 0x9E3779B97F4A7C15ull + 1;
    random_program(&p, &m);
    oracle_tally(m.found);
    protected_by_lock += m.protected_by_lock;
    lock_not_valid += m.lock_not_valid;
    lock_lost += m.lock_lost;
    ring_guesses += m.ring_guesses;
    older_named += m.older_named;
    dsmem_examples += m.dsmem_examples;
    barrier_resets += m.barrier_resets;
    split_kept += m.split_kept;
    oracle_compare(&wr_engine_lockset, p.ev.ev, p.ev.n, m.found, seed);
    free_model(&m);
}

Test(lockset_oracle, random_programs_match_the_model, .timeout = 120)
{
    uint64_t last = oracle_run(SEEDS, check_seed);
    if (!last)
        return;
    uint64_t seeds = last;
    fprintf(stderr, "lockset oracle: %" PRIu64 " programs, %u racing, %u race groups; SHARED_MOD"
            " kept silent by a lock %u times; warned with only invalid locks left %u, with a lock"
            " lost by the meet %u; ring named another access %u times; older instructions named %u\n",
            seeds, oracle_programs_racing, oracle_races_seen, protected_by_lock, lock_not_valid, lock_lost,
            ring_guesses, older_named);
    oracle_assert_racing(seeds);
    /* and locks must both protect and fail to */
    cr_assert_gt(protected_by_lock, seeds, "a lock kept a shared word silent %u times", protected_by_lock);
    cr_assert_gt(lock_not_valid, seeds / 25, "%u warnings with only invalid locks", lock_not_valid);
    cr_assert_gt(lock_lost, seeds / 5, "%u warnings where the meet lost a lock", lock_lost);
    cr_assert_gt(older_named, seeds / 4, "older instructions named %u first sides", older_named);
}

/* Shared accesses through distributed shared memory too (DSMEM, one
 * cluster of both blocks): a DSMEM lane's word is its owner's, met by the
 * owner's own SHARED accesses; a block's barrier resets the words only it
 * touched, in any block's shared memory; a race on a word another block
 * touched names its owner; a first side is named by the accessor's SHARED
 * accesses when it owns the word, else by its DSMEM ones. */
Test(lockset_oracle, random_programs_with_dsmem_match_the_model, .timeout = 120)
{
    barrier_resets = 0;
    oracle_run_dsmem("lockset", &dsmem_programs, SEEDS / 2, check_seed, &dsmem_examples);
    if (getenv("WR_ORACLE_SEED"))
        return;
    /* and blocks were ordered by cluster and grid barriers, often */
    fprintf(stderr, "lockset oracle, dsmem: %u words reset by a cluster or grid barrier\n",
            barrier_resets);
    cr_assert_gt(barrier_resets, SEEDS / 4, "%u words reset", barrier_resets);
}

/* Split barriers (format 1.3): block barriers of one or both warps whose
 * arrivals are SYNC or ARRIVE, cluster and grid barriers whose arrivals
 * are SYNC, ARRIVE or ARRIVE_RELAXED (cluster) and whose WAITs come later
 * (or, one in eight, never), all spread over the program (lf_plan).  Alone
 * (two one-block clusters: grid barriers order the blocks), then with
 * DSMEM (one cluster of both blocks). */
static void run_split(bool dsmem)
{
    split_phases = split_late_waits = split_relaxed_phases = barrier_resets = split_kept = 0;
    split_programs = true;
    if (dsmem) {
        oracle_run_dsmem("lockset, split", &dsmem_programs, SEEDS, check_seed, &dsmem_examples);
    } else {
        uint64_t last = oracle_run(SEEDS, check_seed);
        if (last)
            oracle_assert_racing(last);
    }
    split_programs = false;
    if (getenv("WR_ORACLE_SEED"))
        return;
    uint64_t first, seeds = oracle_seeds(SEEDS, &first);
    fprintf(stderr, "lockset oracle, split%s: %" PRIu64 " programs, %u racing, %u race groups; %u phases with arrivers, %u of"
            " them relaxed cluster ones, %u WAITs after their phase, %u words reset by a cluster"
            " or grid barrier, %u words a completed phase did not reset for the split rule\n",
            dsmem ? " + dsmem" : "", seeds, oracle_programs_racing, oracle_races_seen, split_phases, split_relaxed_phases, split_late_waits,
            barrier_resets, split_kept);
    cr_assert_gt(split_phases, seeds * 3 / 2, "%u phases with arrivers", split_phases);
    cr_assert_gt(split_relaxed_phases, seeds / 10, "%u relaxed phases", split_relaxed_phases);
    cr_assert_gt(split_late_waits, seeds / 5, "%u late WAITs", split_late_waits);
    cr_assert_gt(barrier_resets, seeds / 10, "%u words reset", barrier_resets);
    cr_assert_gt(split_kept, seeds, "%u words kept by the split rule", split_kept);
}

Test(lockset_oracle, random_programs_with_split_barriers_match_the_model, .timeout = 120)
{
    run_split(false);
}

Test(lockset_oracle, random_programs_with_split_barriers_and_dsmem_match_the_model, .timeout = 120)
{
    run_split(true);
}

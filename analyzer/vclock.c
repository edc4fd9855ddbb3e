/*
 * vclock.c: sparse vector clocks and the happens-before state shared by the
 * vc and scoped engines (see vclock.h for the model).
 */
#include "vclock.h"

#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u32map.h"
#include "xalloc.h"

/* ------------------------------------------------------------------ */
/* snapshots                                                            */

static wr_vc_snap *snap_new(void)
{
    wr_vc_snap *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    return s;
}

void wr_snap_ref(wr_vc_snap *s)
{
    if (s)
        s->refs++;
}

void wr_snap_unref(wr_vc_snap *s)
{
    if (s && --s->refs == 0) {
        wr_vc_free(&s->c);
        free(s);
    }
}

/* ------------------------------------------------------------------ */
/* state                                                                */

#define MULTI UINT32_MAX
#define MAX_PEND 8
#define MAX_REL 16
#define STAMP_MAX 0x3ffffffu  /* stamps live in 26 bits of a shadow epoch */

typedef struct hb_rel {      /* one release recorded at a synchronizing word */
    uint32_t refs;           /* the lists holding it (hb_rels): copied on write */
    uint8_t scope;           /* effective scope of the release */
    uint8_t kind;            /* verdict if the scope turns out too narrow */
    uint8_t lock;            /* fence-then-exch (unlock idiom) */
    uint32_t launch, block, cluster;  /* releaser (block MULTI: several) */
    wr_vc_snap *snap[2];     /* OBL, SCOPED; own entry included */
    /* a later release merged into this one and not yet joined with snap
     * (NULL: none): acquirers take both.  A lock's next holder releases
     * at its CAS what it knew at its last fence, before it acquired the
     * lock; its unlock then holds both, and the join is never made. */
    wr_vc_snap *later[2];
} hb_rel;

static void rel_ref(hb_rel *r)
{
    for (int k = 0; k < 2; k++) {
        wr_snap_ref(r->snap[k]);
        wr_snap_ref(r->later[k]);
    }
}

static void rel_unref(hb_rel *r)
{
    for (int k = 0; k < 2; k++) {
        wr_snap_unref(r->snap[k]);
        wr_snap_unref(r->later[k]);
    }
}

/* A list lets go of a release it held. */
static void rel_put(hb_rel *r)
{
    if (--r->refs)
        return;
    rel_unref(r);
    free(r);
}

/* *slot, made the list's own (a copy while another list holds it), to
 * change. */
static hb_rel *rel_own(hb_rel **slot)
{
    hb_rel *r = *slot;
    if (r->refs == 1)
        return r;
    hb_rel *c = xmalloc(sizeof *c);
    *c = *r;
    c->refs = 1;
    rel_ref(c);
    r->refs--;
    *slot = c;
    return c;
}

/* Bit i stands for rel[i] (MAX_REL <= 16). */
typedef uint16_t rel_set;
#define REL_ALL(n) ((rel_set)((1u << (n)) - 1u))

/* The releases a word holds, shared by reference: a CAS's read takes the
 * list as it is (a reference) and acquires from it at the next fence; the
 * word copies the list before it changes one that such a read still holds.
 * Each read made a copy before (a reference on every release's snapshots):
 * now a spinning warp's failed CAS, which releases nothing, costs a
 * reference, and the copy is made once per release that comes while
 * reads hold the list (a lock's next holder releases at its own CAS what
 * it knew at its last fence, after its read).  The releases themselves
 * are shared by the copies (hb_rel.refs), and the one a release changes
 * is copied then (rel_own): a copy of the list costs a reference per
 * release, not two to four. */
typedef struct hb_rels {
    uint32_t refs, n, cap;
    /* The releases that hold all the others: every rel outside `front` is
     * held (both layers, narrow verdict alike) by one inside it.  A lock
     * handed from block to block leaves one release per block; each new
     * holder's unlock holds them all, so an acquirer for which every
     * release's scope holds joins one or two instead of up to MAX_REL. */
    rel_set front;
    hb_rel *rel[];           /* cap of them */
} hb_rels;

typedef struct hb_loc {
    uint64_t k1, word;
    hb_rels *rs;             /* NULL: none yet */
    uint8_t sync;            /* ever carried a release, or a CAS target */
} hb_loc;

typedef struct hb_pend {     /* relaxed CAS read awaiting a fence */
    hb_rels *rs;             /* the word's releases when it was read (a reference) */
    uint8_t scope;
    uint64_t k1, word;
} hb_pend;

typedef struct hb_bar {
    uint32_t count;          /* threads arrived, waiting or not */
    uint64_t arrived;        /* warps waiting (SYNC) */
    uint32_t stamp[64];
    /* the phase's ARRIVE arrivals (bar.arrive): the join of their clocks at
     * arrival, per layer; NULL until the block's first one.  They went on,
     * so their clocks at completion would say too much. */
    wr_vclock *rel;
} hb_bar;

/* A cluster or grid barrier under way.  Arrivals are kept by position,
 * not by pointer: a block's warps may be regrown before it completes. */
typedef struct hb_xarrival {
    uint32_t block, widx;
    uint32_t stamp;          /* of its arrival; of its WAIT once it waits */
    uint32_t mask;
    uint8_t mode;            /* wr_barrier_mode of the arrival */
    uint8_t waiting;         /* SYNC, or an arrival whose WAIT came */
    /* ARRIVE: its clock at arrival, per kept layer (it went on since) */
    wr_vc_snap *snap[WR_HB_MAX_LAYERS];
} hb_xarrival;

typedef struct hb_xbar {
    uint64_t count;          /* threads arrived */
    hb_xarrival *arr;
    uint32_t n, cap;
    uint32_t phase;          /* phases completed */
    /* the last completed phase's join, per layer, for its arrivers whose
     * WAIT comes later (one phase at most: the next cannot complete before
     * they arrive again, and they wait first) */
    wr_vclock done[WR_HB_MAX_LAYERS];
} hb_xbar;

/* An mbarrier object of a block's shared memory (format 1.3, scope
 * WR_BAR_MBARRIER): arrivals per phase (its INIT; 0: never initialized in
 * the trace, so no phase completes), those the phase under way still
 * waits for, the join of its releasing arrivals' clocks at their arrival
 * (an arriver goes on), and the join of the latest completed phase of each
 * parity, which a wait for that parity acquires. */
typedef struct hb_mbar {
    uint32_t offset, count, pending, phase;
    uint8_t done_ok[2];
    wr_vclock acc[WR_HB_MAX_LAYERS];
    wr_vclock done[2][WR_HB_MAX_LAYERS];
} hb_mbar;

typedef struct wr_hb_block {
    uint32_t idx, unit0, nw;
    uint32_t made_nw;        /* the warps the object was made with (block_new) */
    wr_hb_warp *w;           /* nw warps: made_nw of them right after the block */
    uint8_t *live;           /* warp touched */
    hb_bar *bar[16];
    hb_mbar *mbar;           /* its mbarriers, by first use (a kernel has a few) */
    uint32_t nmbar;
    uint32_t present_at;     /* its index in its launch's present[] */
    uint8_t exited;
} hb_block;

/* Blocks of up to this many warps come from a pool per warp count
 * (block_new). */
#define HB_POOLED_WARPS 32

typedef struct hb_launch {
    uint32_t id;
    uint32_t idx;            /* its index in wr_hb.launches */
    uint32_t stream_slot, pos;
    uint8_t is_copy, ended;
    /* started: its first block appeared; complete: over, its end knowledge
     * handed to the clocks that know its position (complete_known) */
    uint8_t started, complete;
    uint32_t unstarted_at;   /* index in wr_hb.unstarted + 1; 0: started */
    uint32_t grid[3], bdim[3], cl[3];
    uint32_t threads, nw;
    uint32_t span;           /* the highest block index seen, + 1 */
    /* Its blocks by index: a directory of leaves of HB_LEAF_BLOCKS
     * pointers, a leaf made when a block of it first comes and the
     * directory as long as the highest block seen needs, so that memory
     * follows the blocks a trace touches, not the grid (a dense array per
     * grid kept 16 GB of NULL pointers for a grid of 2^31 blocks); and the
     * blocks there, in no order, for the loops over them. */
    hb_block ***leaf;
    uint32_t nleaf;
    hb_block **present;
    uint32_t npresent, cappresent;
    uint32_t running_blocks; /* blocks entered and not exited */
    /* its units lie in [unit_lo, unit_hi); units_alone: no other launch's
     * unit lies between them, so a unit in the range is one of its own
     * (wr_hb_knows then spares the lookup of the unit's launch) */
    uint32_t unit_lo, unit_hi;
    uint8_t units_alone;
    uint32_t running_at;     /* index in wr_hb.running + 1; 0: no block running */
    wr_vclock base[WR_HB_MAX_LAYERS];
    wr_vclock endj[WR_HB_MAX_LAYERS];
    /* clock chunks below this index hold only units of earlier items of its
     * own stream, which its start knows whole (launch_retire_prefix) */
    uint32_t retired;
    /* cluster barriers under way (xbar_ix: cluster index + 1 -> index + 1
     * in xbar) and the grid barrier's; gone with the blocks */
    hb_xbar *xbar, *grid_bar;
    uint32_t nxbar;
    wr_u32map xbar_ix;
} hb_launch;

#define HB_LEAF_SHIFT 12u
#define HB_LEAF_BLOCKS (1u << HB_LEAF_SHIFT)

static inline hb_block *block_at(const hb_launch *l, uint32_t block)
{
    uint32_t i = block >> HB_LEAF_SHIFT;
    return i < l->nleaf && l->leaf[i] ? l->leaf[i][block & (HB_LEAF_BLOCKS - 1u)] : NULL;
}

/* Block `block` of l is b (NULL: gone). */
static void block_set(hb_launch *l, uint32_t block, hb_block *b)
{
    uint32_t i = block >> HB_LEAF_SHIFT;
    if (i >= l->nleaf) {
        /* doubled, in 64 bits: a block index near 2^32 needs 2^20 leaves */
        uint64_t n = l->nleaf ? l->nleaf : 1;
        while (n <= i)
            n *= 2;
        l->leaf = xrealloc(l->leaf, (size_t)n * sizeof *l->leaf);
        memset(l->leaf + l->nleaf, 0, (size_t)(n - l->nleaf) * sizeof *l->leaf);
        l->nleaf = (uint32_t)n;
    }
    if (!l->leaf[i])
        l->leaf[i] = xcalloc(HB_LEAF_BLOCKS, sizeof **l->leaf);
    hb_block **slot = &l->leaf[i][block & (HB_LEAF_BLOCKS - 1u)];
    if (b && !*slot) {
        if (l->npresent == l->cappresent) {
            l->cappresent = l->cappresent ? 2 * l->cappresent : 16;
            l->present = xrealloc(l->present, (size_t)l->cappresent * sizeof *l->present);
        }
        b->present_at = l->npresent;
        l->present[l->npresent++] = b;
        if (block >= l->span)
            l->span = block + 1u;
    } else if (!b && *slot) {
        hb_block *last = l->present[--l->npresent];
        l->present[(*slot)->present_at] = last;
        last->present_at = (*slot)->present_at;
    }
    *slot = b;
}

static void launch_free_block_index(hb_launch *l)
{
    for (uint32_t i = 0; i < l->nleaf; i++)
        free(l->leaf[i]);
    free(l->leaf);
    free(l->present);
    l->leaf = NULL;
    l->present = NULL;
    l->nleaf = l->npresent = l->cappresent = 0;
}

typedef struct hb_stream {
    uint32_t id, pos;
    wr_vclock tail[WR_HB_MAX_LAYERS];
    /* its launches not complete, in issue order: q[qhead..qn); those of
     * q[qhead..qdue) complete in the complete_known under way */
    uint32_t *q;
    uint32_t qhead, qdue, qn, qcap;
    uint32_t pending_at;     /* index in wr_hb.pending + 1 while q holds launches */
    uint32_t retired, retired_pos;   /* the latest launch's prefix, its position */
} hb_stream;

typedef struct hb_cuevent {
    uint32_t id;
    wr_vclock clk[WR_HB_MAX_LAYERS];
} hb_cuevent;

typedef struct hb_unit_chunk {
    /* units' launches again, densely: wr_hb_knows asks them of earlier
     * accesses' units all over the chunk (a gather's), 4 bytes here
     * against 16 in u */
    uint32_t launch[WR_HB_UNIT_CHUNK];
    wr_hb_unit u[WR_HB_UNIT_CHUNK];
} hb_unit_chunk;

struct wr_hb {
    unsigned L;
    /* unit u is uchunk[u / WR_HB_UNIT_CHUNK] at u % WR_HB_UNIT_CHUNK; a
     * chunk whose units no engine names any more is freed (NULL here) */
    hb_unit_chunk **uchunk;
    uint32_t nunits, nuchunk, capuchunk;
    /* Per clock chunk of units (unit >> WR_VC_CHUNK_SHIFT): the stream slot
     * of every unit's launch (UINT32_MAX: several), and the highest stream
     * position among them (launch_retire_prefix) */
    uint32_t *uc_slot, *uc_pos;
    uint32_t capuc;
    hb_launch **launches;    /* internal index */
    uint32_t nlaunches, caplaunches;
    uint32_t *id2idx;        /* recorder launch id -> internal index + 1, ids below HB_DENSE_IDS */
    uint32_t capid;
    wr_u32map big_ids;       /* the same for larger ids (a corrupt or foreign trace's) */
    hb_stream *streams;
    uint32_t nstreams, capstreams;
    hb_cuevent *events;
    uint32_t nevents, capevents;
    wr_u32map stream_slots, event_slots;   /* recorder id -> index + 1 */
    uint32_t legacy_slot;    /* stream 0's slot + 1; 0: none yet */
    /* A tail's or event's clock can know a launch's position only if it
     * changed after the launch was issued: the launch count then, so that
     * complete_known skips the many that cannot learn a completed
     * launch's end (a program with a stream per task) */
    uint32_t *tail_stamp, *event_stamp;
    /* stream slots whose queues hold launches not complete */
    uint32_t *pending;
    uint32_t npending, cappending;
    wr_vclock host[WR_HB_MAX_LAYERS];
    /* launches with blocks running (wr_hb_foreach_warp): a long trace
     * keeps every launch it has seen */
    uint32_t *running;
    uint32_t nrunning, caprunning;
    /* launches not started yet (launch_pending) */
    uint32_t *unstarted;
    uint32_t nunstarted, capunstarted;
    /* complete_known's work: the launches completing, their streams, keys */
    uint32_t *batch, *due_slots, *keys;
    uint32_t nbatch, capbatch, ndue_slots, capdue_slots, nkeys, capkeys;
    /* synchronizing words */
    hb_loc **locs;
    size_t nloc, caploc;
    wr_vclock tmp;           /* a barrier's join */
    /* blocks by warp count - 1: a grid of small blocks makes and drops one
     * per block, three heap blocks each before, a quarter of vc's time in
     * malloc and free (half of it with two shards, each repeating them) */
    wr_pool block_pool[HB_POOLED_WARPS];
    /* a warp published an own stamp below one it had published before: its
     * later clocks no longer carry all it published, so "knows (u, s)" stops
     * implying "knows u's clock at s" (exact snapshots are not trusted) */
    uint8_t lossy;
    /* bit k: layer k has received exactly layer OBL's orderings so far, so
     * it is not kept apart: its clocks stay empty, readers of layer k read
     * OBL, and releases publish OBL's snapshot for it.  A layer splits off
     * (layer_split) just before the first ordering that only OBL takes:
     * SCOPED at the first acquire whose scope does not hold both parties,
     * BAR at the first acquire through an atomic or fence.  Kernels synced
     * only by barriers, or by locks of sufficient scope, thus keep one set
     * of clocks for all three layers. */
    uint8_t alias;
};

static inline bool layer_kept(const wr_hb *hb, unsigned k)
{
    return !((hb->alias >> k) & 1u);
}

/* The first layer from k on that keeps its own clocks (hb->L: none):
 * loops that update clocks walk only those. */
static inline unsigned kept_from(const wr_hb *hb, unsigned k)
{
    while (k < hb->L && !layer_kept(hb, k))
        k++;
    return k;
}

/* The layer whose clocks stand for layer k. */
static inline unsigned layer_read(const wr_hb *hb, unsigned k)
{
    return layer_kept(hb, k) ? k : WR_HB_OBL;
}

static unsigned min_u(unsigned a, unsigned b) { return a < b ? a : b; }

/* ---- units / launches / streams ---- */

static inline const wr_hb_unit *unit_rec(const wr_hb *hb, uint32_t u)
{
    return &hb->uchunk[u >> WR_HB_UNIT_CHUNK_SHIFT]->u[u & (WR_HB_UNIT_CHUNK - 1u)];
}

static inline uint32_t unit_launch(const wr_hb *hb, uint32_t u)
{
    return hb->uchunk[u >> WR_HB_UNIT_CHUNK_SHIFT]->launch[u & (WR_HB_UNIT_CHUNK - 1u)];
}

static uint32_t unit_add(wr_hb *hb, uint32_t launch, uint32_t launch_id, uint32_t block,
                         uint32_t warp)
{
    uint32_t c = hb->nunits >> WR_HB_UNIT_CHUNK_SHIFT, i = hb->nunits & (WR_HB_UNIT_CHUNK - 1u);
    if (!i) {
        if (c == hb->capuchunk) {
            hb->capuchunk = hb->capuchunk ? hb->capuchunk * 2 : 16;
            hb->uchunk = xrealloc(hb->uchunk, (size_t)hb->capuchunk * sizeof *hb->uchunk);
        }
        hb->uchunk[c] = xmalloc(sizeof(hb_unit_chunk));
        hb->nuchunk = c + 1;
    }
    hb_unit_chunk *ch = hb->uchunk[c];
    ch->launch[i] = launch;
    uint32_t vc = hb->nunits >> WR_VC_CHUNK_SHIFT;
    if (vc == hb->capuc) {
        hb->capuc = hb->capuc ? hb->capuc * 2 : 64;
        hb->uc_slot = xrealloc(hb->uc_slot, (size_t)hb->capuc * sizeof *hb->uc_slot);
        hb->uc_pos = xrealloc(hb->uc_pos, (size_t)hb->capuc * sizeof *hb->uc_pos);
    }
    hb_launch *l = hb->launches[launch];
    if (l->unit_hi == 0) {
        l->unit_lo = hb->nunits;
        l->units_alone = 1;
    } else if (l->unit_hi != hb->nunits) {
        l->units_alone = 0;
    }
    l->unit_hi = hb->nunits + 1;
    if (!(hb->nunits & (WR_VC_CHUNK - 1u))) {
        hb->uc_slot[vc] = l->stream_slot;
        hb->uc_pos[vc] = l->pos;
    } else {
        if (hb->uc_slot[vc] != l->stream_slot)
            hb->uc_slot[vc] = UINT32_MAX;
        if (hb->uc_pos[vc] < l->pos)
            hb->uc_pos[vc] = l->pos;
    }
    ch->u[i] = (wr_hb_unit){.launch = launch, .launch_id = launch_id, .block = block, .warp = warp};
    return hb->nunits++;
}

const wr_hb_unit *wr_hb_unit_of(const wr_hb *hb, uint32_t unit)
{
    return unit_rec(hb, unit);
}

uint32_t wr_hb_unit_chunks(const wr_hb *hb)
{
    return hb->nuchunk;
}

bool wr_hb_unit_kept(const wr_hb *hb, uint32_t u)
{
    return u < hb->nunits && hb->uchunk[u >> WR_HB_UNIT_CHUNK_SHIFT];
}

static void name_warp_unit(wr_hb_warp *w, void *ctx)
{
    uint8_t *named = ctx;
    named[w->unit >> WR_HB_UNIT_CHUNK_SHIFT] = 1;
}

void wr_hb_forget_units(wr_hb *hb, uint8_t *named)
{
    wr_hb_foreach_warp(hb, name_warp_unit, named);
    for (uint32_t c = 0; c + 1 < hb->nuchunk; c++)   /* the newest is being filled */
        if (hb->uchunk[c] && !named[c]) {
            free(hb->uchunk[c]);
            hb->uchunk[c] = NULL;
        }
}

void wr_hb_foreach_warp(wr_hb *hb, void (*fn)(wr_hb_warp *w, void *ctx), void *ctx)
{
    for (uint32_t i = 0; i < hb->nrunning; i++) {
        hb_launch *l = hb->launches[hb->running[i]];
        for (uint32_t b = 0; b < l->npresent; b++) {
            hb_block *bl = l->present[b];
            for (uint32_t j = 0; j < bl->nw; j++)
                fn(&bl->w[j], ctx);
        }
    }
}

static hb_stream *stream_get(wr_hb *hb, uint32_t id, uint32_t *slot)
{
    uint32_t i = wr_map_get(&hb->stream_slots, id);
    if (i--) {
        if (slot)
            *slot = i;
        return &hb->streams[i];
    }
    if (hb->nstreams == hb->capstreams) {
        hb->capstreams = hb->capstreams ? 2 * hb->capstreams : 8;
        hb->streams = xrealloc(hb->streams, (size_t)hb->capstreams * sizeof *hb->streams);
        hb->tail_stamp = xrealloc(hb->tail_stamp, (size_t)hb->capstreams * sizeof *hb->tail_stamp);
    }
    i = hb->nstreams++;
    hb_stream *s = &hb->streams[i];
    memset(s, 0, sizeof *s);
    s->id = id;
    hb->tail_stamp[i] = 0;
    wr_map_put(&hb->stream_slots, id, i + 1);
    if (id == 0)
        hb->legacy_slot = i + 1;
    if (slot)
        *slot = i;
    return s;
}

static hb_cuevent *cuevent_get(wr_hb *hb, uint32_t id, uint32_t *index)
{
    uint32_t i = wr_map_get(&hb->event_slots, id);
    if (!i--) {
        if (hb->nevents == hb->capevents) {
            hb->capevents = hb->capevents ? 2 * hb->capevents : 8;
            hb->events = xrealloc(hb->events, (size_t)hb->capevents * sizeof *hb->events);
            hb->event_stamp =
                xrealloc(hb->event_stamp, (size_t)hb->capevents * sizeof *hb->event_stamp);
        }
        i = hb->nevents++;
        memset(&hb->events[i], 0, sizeof hb->events[i]);
        hb->events[i].id = id;
        hb->event_stamp[i] = 0;
        wr_map_put(&hb->event_slots, id, i + 1);
    }
    if (index)
        *index = i;
    return &hb->events[i];
}

static uint32_t launch_new(wr_hb *hb)
{
    if (hb->nlaunches == hb->caplaunches) {
        hb->caplaunches = hb->caplaunches ? hb->caplaunches * 2 : 16;
        hb->launches = xrealloc(hb->launches, (size_t)hb->caplaunches * sizeof *hb->launches);
    }
    hb->launches[hb->nlaunches] = xcalloc(1, sizeof(hb_launch));
    return hb->nlaunches++;
}

/* What an operation issued now on stream `stream_id` (slot `slot`: a
 * launch, a copy, an event record) learns through the legacy default
 * stream, besides its own stream's tail: on stream 0, every blocking
 * stream's; on a blocking stream, stream 0's; on a non-blocking one,
 * nothing (as epochs.c does). */
static void legacy_waits(wr_hb *hb, uint32_t stream_id, uint32_t slot, wr_vclock *out)
{
    if (stream_id == WR_STREAM_LEGACY) {
        for (uint32_t i = 0; i < hb->nstreams; i++) {
            if (i == slot || wr_stream_non_blocking(hb->streams[i].id))
                continue;
            hb_stream *o = &hb->streams[i];
            for (unsigned l = kept_from(hb, 0); l < hb->L; l = kept_from(hb, l + 1)) {
                wr_vc_join(&out[l], &o->tail[l]);
                wr_vc_set_max(&out[l], WR_HB_STREAM_KEY | i, o->pos);
            }
        }
    } else if (hb->legacy_slot && !wr_stream_non_blocking(stream_id)) {
        /* a stream-0 item: later items of every blocking stream wait for it */
        uint32_t s0 = hb->legacy_slot - 1;
        const hb_stream *o = &hb->streams[s0];
        for (unsigned l = kept_from(hb, 0); l < hb->L; l = kept_from(hb, l + 1)) {
            wr_vc_join(&out[l], &o->tail[l]);
            wr_vc_set_max(&out[l], WR_HB_STREAM_KEY | s0, o->pos);
        }
    }
}

/* Knowledge a new stream item starts with: the stream's tail, the host, and
 * the completion of the previous items, and what the legacy stream adds. */
static void item_start(wr_hb *hb, uint32_t stream_id, wr_vclock *out, uint32_t *slot_out,
                       uint32_t *pos_out)
{
    uint32_t slot;
    hb_stream *s = stream_get(hb, stream_id, &slot);
    uint32_t pos = ++s->pos;
    for (unsigned l = kept_from(hb, 0); l < hb->L; l = kept_from(hb, l + 1)) {
        wr_vc_copy(&out[l], &s->tail[l]);
        wr_vc_join(&out[l], &hb->host[l]);
        wr_vc_set_max(&out[l], WR_HB_STREAM_KEY | slot, pos - 1);
    }
    legacy_waits(hb, stream_id, slot, out);
    *slot_out = slot;
    *pos_out = pos;
}

/* After an item completes: its stream's tail learns what it knew. */
static void stream_item_done(wr_hb *hb, uint32_t slot, uint32_t pos, wr_vclock *knowledge)
{
    hb_stream *s = &hb->streams[slot];
    for (unsigned l = kept_from(hb, 0); l < hb->L; l = kept_from(hb, l + 1)) {
        wr_vc_join(&s->tail[l], &knowledge[l]);
        wr_vc_set_max(&s->tail[l], WR_HB_STREAM_KEY | slot, pos);
    }
    hb->tail_stamp[slot] = hb->nlaunches;
}

/* ---- launches that are over before the host says so ----
 *
 * A clock that knows a launch whole (its stream position) must know what
 * the launch's warps learned too (acquires from a kernel on another
 * stream): work ordered after a launch is ordered after what the launch
 * was ordered after.  But the clocks that learn the position are made when
 * the host issues work, mostly before the launch has run: a later launch's
 * start, the stream's tail, an event, the host's.  So when work that waits
 * for a launch begins (a later item of its stream or of a stream that
 * waited for an event after it, a legacy-stream item, a host wait), the
 * launch is over: it is *completed*, and every clock that knows its
 * position learns its end knowledge (endj: its exited blocks' warps, its
 * live warps', its start).  Its blocks stay: a KERNEL_END or BLOCK_EXIT
 * still folds them.
 *
 * The launches not complete wait in their stream's queue in issue order,
 * and a clock that knows position p of a stream knows every item up to p:
 * what completes at once is a prefix of each queue (marked up to qdue). */

static void queue_push(uint32_t **v, uint32_t *n, uint32_t *cap, uint32_t x)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = xrealloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = x;
}

/* The launch is waiting in its stream's queue and not started. */
static void launch_pending(wr_hb *hb, hb_launch *l, uint32_t idx)
{
    hb_stream *s = &hb->streams[l->stream_slot];
    if (!s->pending_at) {
        queue_push(&hb->pending, &hb->npending, &hb->cappending, l->stream_slot);
        s->pending_at = hb->npending;
    }
    queue_push(&s->q, &s->qn, &s->qcap, idx);
    queue_push(&hb->unstarted, &hb->nunstarted, &hb->capunstarted, idx);
    l->unstarted_at = hb->nunstarted;
}

static void launch_started(wr_hb *hb, hb_launch *l)
{
    l->started = 1;
    if (!l->unstarted_at)
        return;
    uint32_t moved = hb->unstarted[--hb->nunstarted];
    hb->unstarted[l->unstarted_at - 1] = moved;
    hb->launches[moved]->unstarted_at = l->unstarted_at;
    l->unstarted_at = 0;
}

/* Marks due the queued launches of stream slot at positions <= pos. */
static void mark_due(wr_hb *hb, uint32_t slot, uint32_t pos)
{
    if (slot >= hb->nstreams)
        return;
    hb_stream *s = &hb->streams[slot];
    if (s->qdue < s->qhead)
        s->qdue = s->qhead;
    while (s->qdue < s->qn && hb->launches[s->q[s->qdue]]->pos <= pos) {
        if (s->qdue == s->qhead)
            queue_push(&hb->due_slots, &hb->ndue_slots, &hb->capdue_slots, slot);
        queue_push(&hb->batch, &hb->nbatch, &hb->capbatch, s->q[s->qdue++]);
    }
}

/* Few streams with launches waiting: ask c for those alone, not walk c's
 * stream keys (the host's: every stream it waited for). */
static void mark_known(wr_hb *hb, const wr_vclock *c)
{
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
        if (hb->npending <= 32) {
            for (uint32_t i = 0; i < hb->npending; i++) {
                uint32_t v = wr_vc_get(&c[k], WR_HB_STREAM_KEY | hb->pending[i]);
                if (v)
                    mark_due(hb, hb->pending[i], v);
            }
            continue;
        }
        uint32_t key = WR_HB_STREAM_KEY, v;
        while (wr_vc_next(&c[k], key, &key, &v)) {
            mark_due(hb, key & ~WR_HB_STREAM_KEY, v);
            if (key == UINT32_MAX)
                break;
            key++;
        }
    }
}

/* Clock c learns the end knowledge of the completed launches of this
 * batch whose position it knows, layer by layer: asked stream by stream of
 * the batch when they are few, else key by key of c. */
static void learn_ends(wr_hb *hb, wr_vclock *c)
{
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
        hb->nkeys = 0;
        if (hb->ndue_slots <= 8) {
            for (uint32_t i = 0; i < hb->ndue_slots; i++) {
                uint32_t slot = hb->due_slots[i];
                uint32_t v = wr_vc_get(&c[k], WR_HB_STREAM_KEY | slot);
                if (v) {
                    queue_push(&hb->keys, &hb->nkeys, &hb->capkeys, slot);
                    queue_push(&hb->keys, &hb->nkeys, &hb->capkeys, v);
                }
            }
        } else {
            uint32_t key = WR_HB_STREAM_KEY, v;
            while (wr_vc_next(&c[k], key, &key, &v)) {
                queue_push(&hb->keys, &hb->nkeys, &hb->capkeys, key & ~WR_HB_STREAM_KEY);
                queue_push(&hb->keys, &hb->nkeys, &hb->capkeys, v);
                if (key == UINT32_MAX)
                    break;
                key++;
            }
        }
        for (uint32_t i = 0; i < hb->nkeys; i += 2) {
            if (hb->keys[i] >= hb->nstreams)
                continue;
            const hb_stream *s = &hb->streams[hb->keys[i]];
            for (uint32_t j = s->qhead; j < s->qdue; j++) {
                const hb_launch *l = hb->launches[s->q[j]];
                if (l->pos > hb->keys[i + 1])
                    break;
                if (l->complete)
                    wr_vc_join(&c[k], &l->endj[k]);
            }
        }
    }
}

/* A launch that is over and has no block running gives back its block
 * array: no block of it can come any more (the trace order is the order
 * things ran), and a long trace keeps every launch record.  Not earlier:
 * a grid whose blocks run one after another would make the array anew
 * for each. */
static void xarrival_drop_snaps(hb_xarrival *a)
{
    for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++) {
        wr_snap_unref(a->snap[k]);
        a->snap[k] = NULL;
    }
}

static void xbar_free(hb_xbar *x)
{
    for (uint32_t i = 0; i < x->n; i++)
        xarrival_drop_snaps(&x->arr[i]);
    free(x->arr);
    for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
        wr_vc_free(&x->done[k]);
}

static void launch_drop_xbars(hb_launch *l)
{
    for (uint32_t i = 0; i < l->nxbar; i++)
        xbar_free(&l->xbar[i]);
    free(l->xbar);
    l->xbar = NULL;
    l->nxbar = 0;
    wr_map_free(&l->xbar_ix);
    if (l->grid_bar)
        xbar_free(l->grid_bar);
    free(l->grid_bar);
    l->grid_bar = NULL;
}

static void launch_drop_blocks(hb_launch *l)
{
    launch_free_block_index(l);
    launch_drop_xbars(l);
}

static void launch_complete(wr_hb *hb, hb_launch *l)
{
    if (!l->started)   /* its start learns what it waited for, if that just ended */
        learn_ends(hb, l->base);
    for (uint32_t b = 0; b < l->npresent; b++) {
        const hb_block *bl = l->present[b];
        for (uint32_t i = 0; i < bl->nw; i++)
            if (bl->live[i])
                for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
                    wr_vc_join(&l->endj[k], &bl->w[i].ext[k]);
    }
    /* (not its own position: whoever learns endj knows that already, and
     * endj shares its start's chunks) */
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
        wr_vc_join(&l->endj[k], &l->base[k]);
    l->complete = 1;
    if (!l->running_blocks)
        launch_drop_blocks(l);
    stream_item_done(hb, l->stream_slot, l->pos, l->endj);
}

/* Clock c learns completed launch l's end knowledge, in each layer that
 * knows its position. */
static void learn_end(const wr_hb *hb, wr_vclock *c, const hb_launch *l)
{
    uint32_t key = WR_HB_STREAM_KEY | l->stream_slot;
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
        if (wr_vc_get(&c[k], key) >= l->pos)
            wr_vc_join(&c[k], &l->endj[k]);
}

static int idx_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Every queued launch whose position clock c knows is over, and so is
 * every one their starts know (an earlier launch of the stream, perhaps
 * never started: an empty kernel).  Completes them oldest first (a start
 * knows only launches issued before it), so that each end knowledge holds
 * those it comes after, then hands their end knowledge to c and to the
 * clocks made before they ended. */
static void complete_known(wr_hb *hb, wr_vclock *c)
{
    hb->nbatch = 0;
    hb->ndue_slots = 0;
    mark_known(hb, c);
    for (uint32_t i = 0; i < hb->nbatch; i++)
        mark_known(hb, hb->launches[hb->batch[i]]->base);
    if (!hb->nbatch)
        return;
    qsort(hb->batch, hb->nbatch, sizeof *hb->batch, idx_cmp);
    for (uint32_t i = 0; i < hb->nbatch; i++)
        launch_complete(hb, hb->launches[hb->batch[i]]);
    learn_ends(hb, c);
    learn_ends(hb, hb->host);
    uint32_t oldest = hb->batch[0];
    for (uint32_t i = 0; i < hb->nstreams; i++)
        if (hb->tail_stamp[i] > oldest) {
            learn_ends(hb, hb->streams[i].tail);
            hb->tail_stamp[i] = hb->nlaunches;
        }
    for (uint32_t i = 0; i < hb->nevents; i++)
        if (hb->event_stamp[i] > oldest) {
            learn_ends(hb, hb->events[i].clk);
            hb->event_stamp[i] = hb->nlaunches;
        }
    for (uint32_t i = 0; i < hb->nunstarted; i++) {
        hb_launch *p = hb->launches[hb->unstarted[i]];
        if (!p->complete)
            learn_ends(hb, p->base);
    }
    for (uint32_t i = 0; i < hb->nbatch; i++) {
        hb_launch *l = hb->launches[hb->batch[i]];
        if (!l->started)
            launch_started(hb, l);   /* never will: off the unstarted list */
    }
    for (uint32_t i = 0; i < hb->ndue_slots; i++) {
        hb_stream *s = &hb->streams[hb->due_slots[i]];
        s->qhead = s->qdue;
        if (s->qhead == s->qn && s->pending_at) {   /* none left waiting */
            uint32_t moved = hb->pending[--hb->npending];
            hb->pending[s->pending_at - 1] = moved;
            hb->streams[moved].pending_at = s->pending_at;
            s->pending_at = 0;
        }
        if (s->qhead * 2 >= s->qn) {   /* the queue's front moves back */
            memmove(s->q, s->q + s->qhead, (size_t)(s->qn - s->qhead) * sizeof *s->q);
            s->qn -= s->qhead;
            s->qhead = s->qdue = 0;
        }
    }
}

/* Recorders number launches from 1 up: ids below this index an array,
 * larger ones (a trace that is not a recorder's) a hash map, so that an id
 * near 2^32 costs neither 16 GB nor a doubling that overflows. */
#define HB_DENSE_IDS (1u << 20)

static hb_launch *launch_of_id(wr_hb *hb, uint32_t id, bool create)
{
    if (id < hb->capid && hb->id2idx[id])
        return hb->launches[hb->id2idx[id] - 1];
    uint32_t big = id >= HB_DENSE_IDS ? wr_map_get(&hb->big_ids, id) : 0;
    if (big)
        return hb->launches[big - 1];
    if (!create)
        return NULL;
    if (id < HB_DENSE_IDS && id >= hb->capid) {
        uint32_t cap = hb->capid ? hb->capid : 64;
        while (cap <= id)
            cap *= 2;
        hb->id2idx = xrealloc(hb->id2idx, (size_t)cap * sizeof *hb->id2idx);
        memset(hb->id2idx + hb->capid, 0, (size_t)(cap - hb->capid) * sizeof *hb->id2idx);
        hb->capid = cap;
    }
    uint32_t idx = launch_new(hb);
    if (id < HB_DENSE_IDS)
        hb->id2idx[id] = idx + 1;
    else
        wr_map_put(&hb->big_ids, id, idx + 1);
    hb_launch *l = hb->launches[idx];
    l->id = id;
    l->idx = idx;
    return l;
}

static void launch_setup(wr_hb *hb, hb_launch *l, const wr_launch *d)
{
    for (int i = 0; i < 3; i++) {
        l->grid[i] = d ? (d->grid[i] ? d->grid[i] : 1) : 0;
        l->bdim[i] = d ? (d->block_dim[i] ? d->block_dim[i] : 1) : 0;
        l->cl[i] = d ? (d->cluster[i] ? d->cluster[i] : 1) : 1;
    }
    if (d) {
        l->threads = l->bdim[0] * l->bdim[1] * l->bdim[2];
        l->nw = (l->threads + WR_WARP_SIZE - 1) / WR_WARP_SIZE;
    }
    item_start(hb, d ? d->stream : 0, l->base, &l->stream_slot, &l->pos);
    launch_pending(hb, l, l->idx);
}

static hb_launch *launch_get(wr_hb *hb, uint32_t id)
{
    hb_launch *l = launch_of_id(hb, id, false);
    if (!l) {   /* never announced: a fresh item on stream 0 */
        l = launch_of_id(hb, id, true);
        launch_setup(hb, l, NULL);
    }
    return l;
}

static uint32_t cluster_of(const hb_launch *l, uint32_t block)
{
    return wr_cluster_of(l->grid, l->cl, block);
}

static void warp_init(const hb_launch *l, hb_block *b, uint32_t i)
{
    wr_hb_warp *w = &b->w[i];
    memset(w, 0, sizeof *w);
    w->unit = b->unit0 + i;
    w->launch = l->idx;
    w->block = b->idx;
    w->widx = i;
    w->cluster = cluster_of(l, b->idx);
    w->blkp = b;
    uint32_t lanes = WR_WARP_SIZE;
    if (l->threads && (i + 1) * WR_WARP_SIZE > l->threads)
        lanes = l->threads - i * WR_WARP_SIZE;
    w->full_mask = lanes >= 32 ? WR_FULL_MASK : ((1u << lanes) - 1u);
}

static void warp_drop_snaps(wr_hb_warp *w)
{
    for (unsigned l = 0; l < WR_HB_MAX_LAYERS; l++) {
        wr_snap_unref(w->snap[l]);
        w->snap[l] = NULL;
    }
}

static void rels_unref(hb_rels *rs)
{
    if (!rs || --rs->refs)
        return;
    for (uint32_t i = 0; i < rs->n; i++)
        rel_put(rs->rel[i]);
    free(rs);
}

/* The word's list, made its own (a copy while a pending read holds it)
 * with room for one more release (MAX_REL at most). */
static hb_rels *rels_own(hb_loc *p)
{
    hb_rels *rs = p->rs;
    uint32_t n = rs ? rs->n : 0, need = n < MAX_REL ? n + 1 : n;
    if (rs && rs->refs == 1 && rs->cap >= need)
        return rs;
    _Static_assert((MAX_REL & (MAX_REL - 1)) == 0, "capacities double up to MAX_REL");
    uint32_t cap = rs ? rs->cap : 2;
    while (cap < need)
        cap *= 2;
    if (rs && rs->refs == 1) {
        rs = xrealloc(rs, sizeof *rs + (size_t)cap * sizeof *rs->rel);
    } else {
        hb_rels *c = xmalloc(sizeof *c + (size_t)cap * sizeof *c->rel);
        c->refs = 1;
        c->n = n;
        c->front = rs ? rs->front : 0;
        for (uint32_t i = 0; i < n; i++) {
            c->rel[i] = rs->rel[i];
            c->rel[i]->refs++;
        }
        if (rs)
            rs->refs--;   /* the pending reads keep it */
        rs = c;
    }
    rs->cap = cap;
    p->rs = rs;
    return rs;
}

static void pend_free(hb_pend *p)
{
    rels_unref(p->rs);
    p->rs = NULL;
}

/* Most warps of a grid of small blocks own nothing: the tests spare a
 * dozen calls of free(NULL) per warp. */
static void warp_fini(wr_hb_warp *w)
{
    for (unsigned l = 0; l < WR_HB_MAX_LAYERS; l++) {
        if (w->blk[l])
            free(w->blk[l]);
        if (w->ext[l].s)
            wr_vc_free(&w->ext[l]);
        if (w->snap[l]) {
            wr_snap_unref(w->snap[l]);
            w->snap[l] = NULL;
        }
    }
    if (w->lane_ord)
        free(w->lane_ord);
    if (w->pair)
        free(w->pair);
    if (w->pend) {
        hb_pend *p = w->pend;
        for (uint32_t i = 0; i < w->npend; i++)
            pend_free(&p[i]);
        free(w->pend);
    }
}

/* A zeroed block with its nw warps and live flags in one object. */
static size_t block_bytes(uint32_t nw)
{
    return sizeof(hb_block) + (size_t)nw * sizeof(wr_hb_warp) + ((nw + 7u) & ~7u);
}

static hb_block *block_new(wr_hb *hb, uint32_t nw)
{
    hb_block *b;
    if (nw <= HB_POOLED_WARPS) {
        wr_pool *pool = &hb->block_pool[nw - 1];
        if (!pool->size)
            pool->size = block_bytes(nw);
        b = wr_pool_get(pool);
    } else {
        b = xcalloc(1, block_bytes(nw));
    }
    b->nw = b->made_nw = nw;
    b->w = (wr_hb_warp *)(b + 1);
    b->live = (uint8_t *)(b->w + nw);
    return b;
}

/* Its warps moved out of the object (a malformed warp index grew them). */
static bool block_grown_apart(const hb_block *b) { return b->w != (const wr_hb_warp *)(b + 1); }

static void block_delete(wr_hb *hb, hb_block *b)
{
    if (block_grown_apart(b)) {
        free(b->w);
        free(b->live);
    }
    if (b->made_nw <= HB_POOLED_WARPS)
        wr_pool_put(&hb->block_pool[b->made_nw - 1], b);
    else
        free(b);
}

static void running_add(wr_hb *hb, hb_launch *l, uint32_t li)
{
    if (hb->nrunning == hb->caprunning) {
        hb->caprunning = hb->caprunning ? hb->caprunning * 2 : 16;
        hb->running = xrealloc(hb->running, (size_t)hb->caprunning * sizeof *hb->running);
    }
    hb->running[hb->nrunning++] = li;
    l->running_at = hb->nrunning;
}

static void running_remove(wr_hb *hb, hb_launch *l)
{
    uint32_t at = l->running_at - 1, moved = hb->running[--hb->nrunning];
    hb->running[at] = moved;
    hb->launches[moved]->running_at = at + 1;
    l->running_at = 0;
}

static bool retire_enabled = true;

void wr_hb_allow_retire(bool allow) { retire_enabled = allow; }

/* A launch starting: the prefix of clock chunks that hold only units of
 * earlier items of its own stream (positions below its own, whole chunks:
 * a chunk still filling may take units of later work).  Its start knows
 * those items whole (item_start gives it its stream's position - 1), so
 * every ordering question about their units is answered by that stream
 * entry (wr_hb_knows, snap_knows), in its clocks and in every clock that
 * learns from them: their entries are dead weight.  Without this, each
 * kernel's clocks carried every earlier kernel's warps through its start
 * (the previous end's knowledge) and through the locks' published clocks,
 * and a lock-heavy kernel's joins walked them all.  The start drops them,
 * and the launch's warps join only the chunks above (warp_join).  A
 * stream's launches run in position order, so the walk resumes where the
 * stream's previous launch left it. */
static void launch_retire_prefix(wr_hb *hb, hb_launch *l)
{
    if (!retire_enabled)
        return;
    hb_stream *s = &hb->streams[l->stream_slot];
    uint32_t d = l->pos > s->retired_pos ? s->retired : 0;
    uint32_t whole = hb->nunits >> WR_VC_CHUNK_SHIFT;
    while (d < whole && hb->uc_slot[d] == l->stream_slot && hb->uc_pos[d] < l->pos)
        d++;
    if (l->pos > s->retired_pos) {
        s->retired = d;
        s->retired_pos = l->pos;
    }
    l->retired = d;
    if (d)
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
            wr_vc_drop_below(&l->base[k], d);
}

static hb_block *block_get(wr_hb *hb, hb_launch *l, uint32_t block, uint32_t warp)
{
    hb_block *b = block_at(l, block);
    if (!b) {
        if (!l->started) {   /* what it waits for is over */
            launch_started(hb, l);
            complete_known(hb, l->base);
            launch_retire_prefix(hb, l);
        }
        uint32_t nw = l->nw ? l->nw : 32;
        if (nw <= warp)
            nw = warp + 1;
        b = block_new(hb, nw);
        b->idx = block;
        uint32_t li = l->idx;
        if (!l->running_blocks++)
            running_add(hb, l, li);
        b->unit0 = hb->nunits;
        for (uint32_t i = 0; i < b->nw; i++) {
            unit_add(hb, li, l->id, block, i);
            warp_init(l, b, i);
        }
        block_set(l, block, b);
    } else if (warp >= b->nw) {
        /* malformed (warp beyond the block size): give it its own unit */
        uint32_t nw = warp + 1;
        uint32_t li = l->idx;
        wr_hb_warp *nwarr = xcalloc(nw, sizeof *nwarr);
        memcpy(nwarr, b->w, (size_t)b->nw * sizeof *nwarr);
        /* the dense blk vectors are sized by nw: regrow them */
        for (uint32_t i = 0; i < b->nw; i++)
            for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
                if (nwarr[i].blk[k]) {
                    nwarr[i].blk[k] = xrealloc(nwarr[i].blk[k], (size_t)nw * sizeof(uint32_t));
                    memset(nwarr[i].blk[k] + b->nw, 0, (size_t)(nw - b->nw) * sizeof(uint32_t));
                }
        uint8_t *nlive = xcalloc(nw, 1);
        memcpy(nlive, b->live, b->nw);
        if (block_grown_apart(b)) {
            free(b->w);
            free(b->live);
        }
        b->w = nwarr;
        b->live = nlive;
        /* new units are not contiguous with unit0: not supported, so they
         * stay apart (their blk slots are unused) */
        for (uint32_t i = b->nw; i < nw; i++) {
            uint32_t u = unit_add(hb, li, l->id, block, i);
            warp_init(l, b, i);
            b->w[i].unit = u;
        }
        b->nw = nw;
    }
    return b;
}

static void block_fold(wr_hb *hb, hb_launch *l, hb_block *b)
{
    if (!--l->running_blocks)
        running_remove(hb, l);
    for (uint32_t i = 0; i < b->nw; i++) {
        wr_hb_warp *w = &b->w[i];
        if (b->live[i])
            for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
                wr_vc_join(&l->endj[k], &w->ext[k]);
        warp_fini(w);
    }
    for (int i = 0; i < 16; i++)
        if (b->bar[i]) {
            if (b->bar[i]->rel) {
                for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
                    wr_vc_free(&b->bar[i]->rel[k]);
                free(b->bar[i]->rel);
            }
            free(b->bar[i]);
        }
    for (uint32_t i = 0; i < b->nmbar; i++)
        for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++) {
            wr_vc_free(&b->mbar[i].acc[k]);
            wr_vc_free(&b->mbar[i].done[0][k]);
            wr_vc_free(&b->mbar[i].done[1][k]);
        }
    free(b->mbar);
    block_delete(hb, b);
}

static wr_hb_warp *warp_get(wr_hb *hb, uint32_t launch, uint32_t block, uint32_t warp)
{
    hb_launch *l = launch_get(hb, launch);
    hb_block *b = block_get(hb, l, block, warp);
    b->live[warp] = 1;
    return &b->w[warp];
}

/* ------------------------------------------------------------------ */
/* ordering queries                                                     */

static inline const hb_launch *warp_launch(const wr_hb *hb, const wr_hb_warp *w)
{
    return hb->launches[w->launch];
}

unsigned wr_hb_layer_read(const wr_hb *hb, unsigned layer) { return layer_read(hb, layer); }

bool wr_hb_knows(const wr_hb *hb, const wr_hb_warp *w, unsigned layer, uint32_t u,
                 uint32_t s)
{
    layer = layer_read(hb, layer);
    const hb_launch *wl = warp_launch(hb, w);
    /* a gather asks mostly about units of its own launch, whose launch
     * was a cache miss per question to look up */
    uint32_t ulaunch = wl->units_alone && u - wl->unit_lo < wl->unit_hi - wl->unit_lo
                           ? w->launch
                           : unit_launch(hb, u);
    const hb_block *b = w->blkp;
    if (ulaunch == w->launch && b && u - b->unit0 < b->nw && w->block != UINT32_MAX &&
        unit_rec(hb, u)->block == w->block)
        return w->blk[layer] && w->blk[layer][u - b->unit0] >= s;
    if (ulaunch != w->launch) {
        /* another launch's unit is mostly known through that launch's end
         * (a kernel before this one on the stream): asked first, it spares
         * the two lookups of the unit itself (a fifth of vc's clock
         * lookups on a gather trace) */
        const hb_launch *ul = hb->launches[ulaunch];
        uint32_t sk = WR_HB_STREAM_KEY | ul->stream_slot;
        if (wr_vc_get(&wl->base[layer], sk) >= ul->pos || wr_vc_get(&w->ext[layer], sk) >= ul->pos)
            return true;
    }
    /* (same launch: its completion is never known inside it) */
    return wr_vc_get(&w->ext[layer], u) >= s || wr_vc_get(&wl->base[layer], u) >= s;
}


/* A host copy's unit: launch 0 and no block, as in finding.h (block
 * UINT32_MAX alone is also the last block of a grid of 2^32). */
static inline bool unit_is_host(const wr_hb_unit *u)
{
    return u->launch_id == 0 && u->block == UINT32_MAX;
}

unsigned wr_hb_relation(const wr_hb *hb, uint32_t u1, uint32_t u2)
{
    const wr_hb_unit *a = unit_rec(hb, u1), *b = unit_rec(hb, u2);
    if (unit_is_host(a) || unit_is_host(b))
        return WR_SCOPE_SYSTEM;
    if (a->launch != b->launch)
        return WR_SCOPE_DEVICE;
    if (a->block == b->block)
        return WR_SCOPE_BLOCK;
    const hb_launch *l = hb->launches[a->launch];
    if (cluster_of(l, a->block) == cluster_of(l, b->block))
        return WR_SCOPE_CLUSTER;
    return WR_SCOPE_DEVICE;
}

void wr_hb_race_side(const wr_hb *hb, wr_race_access *ra, uint32_t unit, uint32_t lane,
                     uint32_t site, uint8_t kind, uint64_t seq)
{
    const wr_hb_unit *u = unit_rec(hb, unit);
    ra->site = site;
    ra->kind = kind;
    ra->launch = u->launch_id;
    ra->block = u->block;
    ra->warp = u->warp;
    ra->lane = unit_is_host(u) ? UINT32_MAX : lane;
    ra->seq = seq;
}

uint8_t wr_hb_race_class(const wr_hb *hb, uint32_t u1, uint32_t u2)
{
    const wr_hb_unit *a = unit_rec(hb, u1), *b = unit_rec(hb, u2);
    if (unit_is_host(a) || unit_is_host(b) || a->launch != b->launch)
        return WR_CLASS_INTER_KERNEL;
    if (a->block != b->block)
        return WR_CLASS_INTER_BLOCK;
    if (a->warp != b->warp)
        return WR_CLASS_INTER_WARP;
    return WR_CLASS_INTRA_WARP;
}

/* ------------------------------------------------------------------ */
/* joins                                                                */

static uint32_t *warp_blk(wr_hb_warp *w, unsigned layer)
{
    if (!w->blk[layer])
        w->blk[layer] = xcalloc(w->blkp->nw, sizeof(uint32_t));
    return w->blk[layer];
}

/* A barrier or a full __syncwarp at stamp v: every lane is ordered after
 * every lane's accesses up to it. */
static void lanes_reconverge(wr_hb_warp *w, uint32_t v)
{
    if (w->lane_floor < v)
        w->lane_floor = v;
}

/* The lanes of `mask` acquired the warp's own stamp v in layer k (OBL or
 * SCOPED; wr_hb_intra_ordered): they are ordered there after every lane's
 * accesses up to it. */
static void lanes_acquire_in(wr_hb_warp *w, unsigned k, uint32_t mask, uint32_t v)
{
    if (mask == WR_FULL_MASK) {
        /* one store instead of 32, and no per-lane array for a warp whose
         * acquires are all converged */
        if (w->acq_floor[k] < v)
            w->acq_floor[k] = v;
        return;
    }
    if (!w->lane_ord)
        w->lane_ord = xcalloc(2 * 32, sizeof(uint32_t));
    for (unsigned b = 0; b < 32; b++)
        if ((mask >> b) & 1u && w->lane_ord[k * 32 + b] < v)
            w->lane_ord[k * 32 + b] = v;
}

/* w[layer] (OBL or SCOPED) acquired a clock holding w's own stamp v.
 * While the scoped layer reads OBL's clocks it took the same acquire
 * (layer_split). */
static void lanes_acquire(const wr_hb *hb, wr_hb_warp *w, unsigned layer, uint32_t mask,
                          uint32_t v)
{
    lanes_acquire_in(w, layer, mask, v);
    if (layer == WR_HB_OBL && hb->L > WR_HB_SCOPED && !layer_kept(hb, WR_HB_SCOPED))
        lanes_acquire_in(w, WR_HB_SCOPED, mask, v);
}

/* w[layer] join= src (a flat clock).  `mask`: the lanes acquiring.  ext
 * takes all of src, chunk by chunk (clock.h); the block's own entries also
 * go to blk, and w's own entry orders its lanes. */
static void warp_join(const wr_hb *hb, wr_hb_warp *w, unsigned layer, const wr_vclock *src,
                      uint32_t mask)
{
    if (!src->n)
        return;
    bool changed = wr_vc_join_from(&w->ext[layer], src, warp_launch(hb, w)->retired);
    if (w->blkp) {
        /* w's own slot is not an entry (its own stamp is w->c): held at the
         * top while the block's entries are maxed in */
        uint32_t *blk = warp_blk(w, layer), own_slot = blk[w->widx];
        blk[w->widx] = UINT32_MAX;
        changed |= wr_vc_max_into(src, w->blkp->unit0, w->blkp->nw, blk);
        blk[w->widx] = own_slot;
    }
    uint32_t v = layer <= WR_HB_SCOPED ? wr_vc_get(src, w->unit) : 0;
    if (v)
        lanes_acquire(hb, w, layer, mask, v);
    if (changed)
        warp_drop_snaps(w);
}

/* w's entry for another unit u in a layer (as w[layer] stores it). */
static uint32_t warp_entry(const wr_hb *hb, const wr_hb_warp *w, unsigned layer, uint32_t u)
{
    layer = layer_read(hb, layer);
    const hb_block *b = w->blkp;
    if (b && u >= b->unit0 && u < b->unit0 + b->nw)
        return w->blk[layer] ? w->blk[layer][u - b->unit0] : 0;
    uint32_t v = wr_vc_get(&w->ext[layer], u);
    uint32_t bv = wr_vc_get(&warp_launch(hb, w)->base[layer], u);
    return v > bv ? v : bv;
}

/* Does w[layer] already hold all of snapshot s (but possibly w's own entry,
 * which a join turns into lane ordering)?  Clocks are transitively closed:
 * an exact snapshot is its publisher's whole clock at the first publication
 * of its stamp, and every clock that knows that stamp got it from that or a
 * later (larger) clock of the publisher. */
static bool snap_dominated(const wr_hb *hb, const wr_hb_warp *w, unsigned layer,
                           const wr_vc_snap *s)
{
    if (hb->lossy || !s->nep)
        return false;
    uint32_t retired = warp_launch(hb, w)->retired;
    for (unsigned i = 0; i < s->nep; i++)
        if (s->eu[i] != w->unit &&   /* w's own earlier clock: clocks only grow */
            /* a retired unit's launch is over and w's start learned its
             * end, which holds every clock of its warps */
            (s->eu[i] >> WR_VC_CHUNK_SHIFT) >= retired &&
            warp_entry(hb, w, layer, s->eu[i]) < s->es[i])
            return false;
    return true;
}

/* w[layer] join= s, skipping the merge when w already holds s. */
static void warp_join_snap(wr_hb *hb, wr_hb_warp *w, unsigned layer, const wr_vc_snap *s,
                           uint32_t mask)
{
    if (!snap_dominated(hb, w, layer, s)) {
        warp_join(hb, w, layer, &s->c, mask);
        return;
    }
    /* what the join would still do: w's own entry orders its lanes */
    uint32_t v = layer <= WR_HB_SCOPED ? wr_vc_get(&s->c, w->unit) : 0;
    if (v)
        lanes_acquire(hb, w, layer, mask, v);
}

/* Flat clock of w for a release: base + ext + blk + own entry. */
static wr_vc_snap *warp_flatten(wr_hb *hb, wr_hb_warp *w, unsigned layer, uint32_t own)
{
    if (w->snap[layer] && w->snap_own == own) {
        wr_snap_ref(w->snap[layer]);
        return w->snap[layer];
    }
    /* one publication per (own stamp, clock content): the other layer's
     * snapshot of the same publication, if cached, says whether it is exact */
    bool same_pub = false, exact = false;
    if (w->snap_own != own) {
        warp_drop_snaps(w);
    } else {
        for (unsigned l = 0; l < WR_HB_MAX_LAYERS; l++)
            if (w->snap[l]) {
                same_pub = true;
                exact = w->snap[l]->nep != 0;
            }
    }
    if (!same_pub) {
        /* exact only for a stamp never published before (an earlier snapshot
         * at this stamp had less); a stamp below one already published makes
         * the later snapshots lose that knowledge of w itself */
        exact = own > w->pub_hi && own < STAMP_MAX;
        if (own < w->pub_hi)
            hb->lossy = 1;
        else
            w->pub_hi = own;
    }
    wr_vc_snap *s = snap_new();
    if (exact) {
        s->nep = 1;
        s->eu[0] = w->unit;
        s->es[0] = own;
    }
    /* ext (its chunks shared), base, the block's entries, w's own stamp */
    wr_vc_copy(&s->c, &w->ext[layer]);
    wr_vc_join(&s->c, &warp_launch(hb, w)->base[layer]);
    if (w->blkp && w->blk[layer]) {
        uint32_t own_slot = w->blk[layer][w->widx];
        w->blk[layer][w->widx] = 0;
        wr_vc_max_from(&s->c, w->blkp->unit0, w->blkp->nw, w->blk[layer]);
        w->blk[layer][w->widx] = own_slot;
    }
    wr_vc_set(&s->c, w->unit, own);
    s->narrow = w->narrow;
    w->snap[layer] = s;
    w->snap_own = own;
    wr_snap_ref(s);
    return s;
}

/* ------------------------------------------------------------------ */
/* synchronizing words                                                  */

static uint64_t loc_hash(uint64_t k1, uint64_t word)
{
    uint64_t h = (k1 * 0x9E3779B97F4A7C15ull) ^ word;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return h;
}

static hb_loc *loc_find(wr_hb *hb, uint64_t k1, uint64_t word, bool create)
{
    if (create && (hb->nloc + 1) * 2 > hb->caploc) {
        size_t cap = hb->caploc ? hb->caploc * 2 : 256;
        hb_loc **nl = xcalloc(cap, sizeof *nl);
        for (size_t i = 0; i < hb->caploc; i++) {
            hb_loc *p = hb->locs[i];
            if (!p)
                continue;
            size_t j = loc_hash(p->k1, p->word) & (cap - 1);
            while (nl[j])
                j = (j + 1) & (cap - 1);
            nl[j] = p;
        }
        free(hb->locs);
        hb->locs = nl;
        hb->caploc = cap;
    }
    if (!hb->caploc)
        return NULL;
    size_t j = loc_hash(k1, word) & (hb->caploc - 1);
    while (hb->locs[j]) {
        if (hb->locs[j]->k1 == k1 && hb->locs[j]->word == word)
            return hb->locs[j];
        j = (j + 1) & (hb->caploc - 1);
    }
    if (!create)
        return NULL;
    hb_loc *p = xcalloc(1, sizeof *p);
    p->k1 = k1;
    p->word = word;
    hb->locs[j] = p;
    hb->nloc++;
    return p;
}

static void rel_clear(hb_loc *p)
{
    hb_rels *rs = p->rs;
    if (!rs || !rs->n)
        return;
    if (rs->refs > 1) {   /* the pending reads keep what they read */
        rs->refs--;
        p->rs = NULL;
        return;
    }
    for (uint32_t i = 0; i < rs->n; i++)
        rel_put(rs->rel[i]);
    rs->n = 0;
    rs->front = 0;
}

static wr_vc_snap *snap_join(wr_vc_snap *a, wr_vc_snap *b)
{
    /* returns a new reference to a join of a and b (consumes neither) */
    if (!a) {
        wr_snap_ref(b);
        return b;
    }
    if (!b || a == b) {
        wr_snap_ref(a);
        return a;
    }
    wr_vc_snap *s = snap_new();
    wr_vc_copy(&s->c, &a->c);
    wr_vc_join(&s->c, &b->c);
    s->narrow = a->narrow ? a->narrow : b->narrow;
    /* the join's origin: both origins (a unit's later first publication
     * holds its earlier ones) */
    if (a->nep && b->nep) {
        uint32_t eu[2 * WR_SNAP_EPOCHS], es[2 * WR_SNAP_EPOCHS];
        unsigned n = 0;
        for (unsigned i = 0; i < a->nep; i++) {
            eu[n] = a->eu[i];
            es[n++] = a->es[i];
        }
        for (unsigned i = 0; i < b->nep; i++) {
            unsigned j = 0;
            while (j < n && eu[j] != b->eu[i])
                j++;
            if (j == n) {
                eu[n] = b->eu[i];
                es[n++] = b->es[i];
            } else if (es[j] < b->es[i]) {
                es[j] = b->es[i];
            }
        }
        if (n <= WR_SNAP_EPOCHS) {
            s->nep = (uint8_t)n;
            memcpy(s->eu, eu, n * sizeof *eu);
            memcpy(s->es, es, n * sizeof *es);
        }
    }
    return s;
}

/* Does mine, w's release at own (layer k), hold all of old?  (then it
 * stands for both, stays exact, and no copy is made) */
static bool rel_subsumes(const wr_hb *hb, const wr_hb_warp *w, unsigned k, uint32_t own,
                         const wr_vc_snap *old, const wr_vc_snap *mine)
{
    if (old == mine)
        return true;
    return old && (!old->narrow || old->narrow == mine->narrow) &&
           snap_dominated(hb, w, k, old) && wr_vc_get(&old->c, w->unit) <= own;
}

/* Does mine, w's release at own, hold all that q stands for in layer k? */
static bool rel_held_by(const wr_hb *hb, const wr_hb_warp *w, unsigned k, uint32_t own,
                        const hb_rel *q, const wr_vc_snap *mine)
{
    return rel_subsumes(hb, w, k, own, q->snap[k], mine) &&
           (!q->later[k] || rel_subsumes(hb, w, k, own, q->later[k], mine));
}

/* q[k] join= mine (w's release at own).  What q stands for is the join of
 * snap and later whatever the representation; the join is made only when
 * a third release comes that holds neither. */
static void rel_merge(wr_hb *hb, wr_hb_warp *w, unsigned k, uint32_t own, hb_rel *q,
                      wr_vc_snap *mine)
{
    if (!mine)
        return;   /* a layer this state does not keep */
    if (!q->snap[k] || rel_held_by(hb, w, k, own, q, mine)) {
        wr_snap_unref(q->snap[k]);
        wr_snap_unref(q->later[k]);
        wr_snap_ref(mine);
        q->snap[k] = mine;
        q->later[k] = NULL;
        return;
    }
    if (q->later[k]) {
        wr_vc_snap *j = snap_join(q->snap[k], q->later[k]);
        wr_snap_unref(q->snap[k]);
        wr_snap_unref(q->later[k]);
        q->snap[k] = j;
    }
    wr_snap_ref(mine);
    q->later[k] = mine;
}

/* q's SCOPED part while that layer is OBL's: the same snapshots. */
static void rel_mirror(hb_rel *q)
{
    wr_snap_ref(q->snap[0]);
    wr_snap_ref(q->later[0]);
    wr_snap_unref(q->snap[1]);
    wr_snap_unref(q->later[1]);
    q->snap[1] = q->snap[0];
    q->later[1] = q->later[0];
}

/* q join= mine (w's release at own) in both layers; consumes mine's
 * references. */
static void rel_merge_both(wr_hb *hb, wr_hb_warp *w, uint32_t own, hb_rel *q,
                           wr_vc_snap *mine[2])
{
    rel_merge(hb, w, WR_HB_OBL, own, q, mine[0]);
    if (layer_kept(hb, WR_HB_SCOPED))
        rel_merge(hb, w, WR_HB_SCOPED, own, q, mine[1]);
    else
        rel_mirror(q);
    wr_snap_unref(mine[0]);
    wr_snap_unref(mine[1]);
}

/* Does mine (both layers), w's release at own, hold all that q stands for? */
static bool rel_held_both(const wr_hb *hb, const wr_hb_warp *w, uint32_t own, const hb_rel *q,
                          wr_vc_snap *const mine[2])
{
    if (!rel_held_by(hb, w, WR_HB_OBL, own, q, mine[0]))
        return false;
    /* an unsplit SCOPED layer mirrors OBL in every release (rel_mirror) */
    return hb->L < 2 || !layer_kept(hb, WR_HB_SCOPED) ||
           rel_held_by(hb, w, WR_HB_SCOPED, own, q, mine[1]);
}

/* Record a release by w at loc.  is_store: a plain atomic store replaces the
 * release sequence; an RMW continues it.  flag: the release makes loc a
 * flag word (wr_hb_sync_word). */
static void loc_release(wr_hb *hb, wr_hb_warp *w, hb_loc *p, uint32_t own, unsigned scope,
                        unsigned kind, bool lock, bool is_store, bool flag, bool *cleared)
{
    if (flag)
        p->sync = 1;
    if (is_store && !*cleared) {
        rel_clear(p);
        *cleared = true;
    }
    hb_rel r;
    memset(&r, 0, sizeof r);
    r.scope = (uint8_t)scope;
    r.kind = (uint8_t)kind;
    r.lock = lock;
    r.launch = w->launch;
    r.block = w->block;
    r.cluster = w->cluster;
    r.snap[0] = warp_flatten(hb, w, WR_HB_OBL, own);
    if (hb->L < 2) {
        r.snap[1] = NULL;
    } else if (layer_kept(hb, WR_HB_SCOPED)) {
        r.snap[1] = warp_flatten(hb, w, WR_HB_SCOPED, own);
    } else {
        wr_snap_ref(r.snap[0]);
        r.snap[1] = r.snap[0];
    }
    hb_rels *rs = rels_own(p);
    /* The frontier releases mine holds leave it: the release that takes
     * mine (which then holds mine) joins it and stands for them. */
    for (uint32_t i = 0; i < rs->n; i++)
        if (((rs->front >> i) & 1u) && rel_held_both(hb, w, own, rs->rel[i], r.snap))
            rs->front &= (rel_set)~(1u << i);
    for (uint32_t i = 0; i < rs->n; i++) {
        const hb_rel *c = rs->rel[i];
        if (c->scope == r.scope && c->launch == r.launch && c->block == r.block) {
            hb_rel *q = rel_own(&rs->rel[i]);
            rel_merge_both(hb, w, own, q, r.snap);
            q->kind = r.kind;
            q->lock = q->lock || r.lock;
            rs->front |= (rel_set)(1u << i);
            return;
        }
    }
    if (rs->n == MAX_REL) {
        /* merge into the oldest release of the same scope: several blocks */
        for (uint32_t i = 0; i < rs->n; i++) {
            if (rs->rel[i]->scope != r.scope)
                continue;
            hb_rel *q = rel_own(&rs->rel[i]);
            rel_merge_both(hb, w, own, q, r.snap);
            if (q->launch != r.launch)
                q->launch = MULTI;
            q->block = MULTI;
            q->cluster = MULTI;
            rs->front |= (rel_set)(1u << i);
            return;
        }
        /* no release of that scope: drop the oldest (what it held may now
         * be held by no other, so every release joins the frontier) */
        rel_put(rs->rel[0]);
        memmove(rs->rel, rs->rel + 1, (size_t)(rs->n - 1) * sizeof *rs->rel);
        rs->n--;
        rs->front = REL_ALL(rs->n);
    }
    rs->front |= (rel_set)(1u << rs->n);
    hb_rel *nr = xmalloc(sizeof *nr);
    *nr = r;   /* takes r's references */
    nr->refs = 1;
    rs->rel[rs->n++] = nr;
}

/* Relation between a release's party and w. */
static unsigned rel_relation(const wr_hb_warp *w, const hb_rel *r)
{
    if (r->launch == MULTI || r->launch != w->launch)
        return WR_SCOPE_DEVICE;
    if (r->block != MULTI && r->block == w->block)
        return WR_SCOPE_BLOCK;
    if (r->cluster != MULTI && r->cluster == w->cluster)
        return WR_SCOPE_CLUSTER;
    return WR_SCOPE_DEVICE;
}

/* Layer k stops standing for OBL: every clock it has is OBL's as of now
 * (copies share OBL's chunks, clock.h).  Releases already publish
 * OBL's snapshots for it (rel_mirror); a host copy's pseudo-warp never
 * lives across the acquire that splits a layer. */
static void layer_split(wr_hb *hb, unsigned k)
{
    if (layer_kept(hb, k))
        return;
    hb->alias &= (uint8_t)~(1u << k);
    for (uint32_t i = 0; i < hb->nlaunches; i++) {
        hb_launch *l = hb->launches[i];
        wr_vc_copy(&l->base[k], &l->base[WR_HB_OBL]);
        wr_vc_copy(&l->endj[k], &l->endj[WR_HB_OBL]);
        for (uint32_t b = 0; b < l->npresent; b++) {
            hb_block *bl = l->present[b];
            for (uint32_t j = 0; j < bl->nw; j++) {
                wr_hb_warp *x = &bl->w[j];
                wr_vc_copy(&x->ext[k], &x->ext[WR_HB_OBL]);
                if (x->blk[WR_HB_OBL]) {
                    x->blk[k] = xmalloc((size_t)bl->nw * sizeof(uint32_t));
                    memcpy(x->blk[k], x->blk[WR_HB_OBL], (size_t)bl->nw * sizeof(uint32_t));
                }
                /* the flattened clock is the same too */
                if (x->snap[WR_HB_OBL]) {
                    wr_snap_ref(x->snap[WR_HB_OBL]);
                    x->snap[k] = x->snap[WR_HB_OBL];
                }
            }
            /* what the block's barriers hold of their ARRIVE arrivals */
            for (unsigned id = 0; bl && id < 16; id++)
                if (bl->bar[id] && bl->bar[id]->rel)
                    wr_vc_copy(&bl->bar[id]->rel[k], &bl->bar[id]->rel[WR_HB_OBL]);
            for (uint32_t m = 0; bl && m < bl->nmbar; m++) {
                hb_mbar *mb = &bl->mbar[m];
                wr_vc_copy(&mb->acc[k], &mb->acc[WR_HB_OBL]);
                wr_vc_copy(&mb->done[0][k], &mb->done[0][WR_HB_OBL]);
                wr_vc_copy(&mb->done[1][k], &mb->done[1][WR_HB_OBL]);
            }
        }
        for (uint32_t i2 = 0; i2 <= l->nxbar; i2++) {
            hb_xbar *x = i2 < l->nxbar ? &l->xbar[i2] : l->grid_bar;
            if (!x)
                continue;
            wr_vc_copy(&x->done[k], &x->done[WR_HB_OBL]);
            for (uint32_t a = 0; a < x->n; a++)
                if (x->arr[a].snap[WR_HB_OBL]) {
                    wr_snap_ref(x->arr[a].snap[WR_HB_OBL]);
                    x->arr[a].snap[k] = x->arr[a].snap[WR_HB_OBL];
                }
        }
    }
    for (uint32_t i = 0; i < hb->nstreams; i++)
        wr_vc_copy(&hb->streams[i].tail[k], &hb->streams[i].tail[WR_HB_OBL]);
    for (uint32_t i = 0; i < hb->nevents; i++)
        wr_vc_copy(&hb->events[i].clk[k], &hb->events[i].clk[WR_HB_OBL]);
    wr_vc_copy(&hb->host[k], &hb->host[WR_HB_OBL]);
}

/* The scope-oblivious layer's part of an acquire of s. */
static void acquire_obl(wr_hb *hb, wr_hb_warp *w, const wr_vc_snap *s, uint32_t mask)
{
    warp_join_snap(hb, w, WR_HB_OBL, s, mask);
    if (s->narrow && !w->narrow)
        w->narrow = s->narrow;
}

/* The releases w must join for an acquire at acq_scope: the frontier when
 * every release's scope holds for w (then a release the frontier holds
 * would bring nothing, nor any verdict), all of them otherwise. */
static rel_set rels_to_join(const wr_hb *hb, const wr_hb_warp *w, const hb_rels *rs,
                            unsigned acq_scope)
{
    if (rs->front == REL_ALL(rs->n))
        return rs->front;
    if (hb->L >= 2)
        for (uint32_t i = 0; i < rs->n; i++)
            if (rel_relation(w, rs->rel[i]) > min_u(rs->rel[i]->scope, acq_scope))
                return REL_ALL(rs->n);
    return rs->front;
}

/* w acquires the releases rs at scope acq_scope. */
static void acquire_rels(wr_hb *hb, wr_hb_warp *w, const hb_rels *rs, unsigned acq_scope,
                         unsigned acq_kind, bool lock_shaped, uint32_t mask)
{
    if (rs->n && hb->L > WR_HB_BAR)
        layer_split(hb, WR_HB_BAR);   /* BAR takes no acquire */
    rel_set join = rels_to_join(hb, w, rs, acq_scope);
    for (uint32_t i = 0; i < rs->n; i++) {
        if (!((join >> i) & 1u))
            continue;
        const hb_rel *r = rs->rel[i];
        unsigned relation = rel_relation(w, r);
        bool scope_holds = relation <= min_u(r->scope, acq_scope);
        if (!scope_holds && hb->L > WR_HB_SCOPED)
            layer_split(hb, WR_HB_SCOPED);   /* before OBL takes what SCOPED does not */
        acquire_obl(hb, w, r->snap[0], mask);
        if (r->later[0])
            acquire_obl(hb, w, r->later[0], mask);
        if (hb->L < 2)
            continue;
        if (scope_holds) {
            if (layer_kept(hb, WR_HB_SCOPED)) {
                warp_join_snap(hb, w, WR_HB_SCOPED, r->snap[1], mask);
                if (r->later[1])
                    warp_join_snap(hb, w, WR_HB_SCOPED, r->later[1], mask);
            }
        } else {
            unsigned v;
            if (r->lock || lock_shaped)
                v = WR_VERDICT_SCOPE_LOCK;
            else if (r->scope < relation)
                v = r->kind;
            else
                v = acq_kind;
            w->narrow = (uint8_t)v;
            warp_drop_snaps(w);
        }
    }
}

/* w's pending CAS reads acquire at a fence of scope fs, or at a barrier
 * (which is a fence of its scope, and makes a too-narrow acquire the
 * fence's fault). */
static void acquire_pending(wr_hb *hb, wr_hb_warp *w, unsigned fs, bool at_barrier, uint32_t mask)
{
    hb_pend *pend = w->pend;
    for (uint32_t i = 0; i < w->npend; i++) {
        unsigned ps = pend[i].scope;
        unsigned kind = at_barrier || fs < ps ? WR_VERDICT_SCOPE_FENCE : WR_VERDICT_SCOPE_ATOMIC;
        acquire_rels(hb, w, pend[i].rs, min_u(ps, fs), kind, true, mask);
        pend_free(&pend[i]);
    }
    w->npend = 0;
}

static void pend_add(wr_hb_warp *w, hb_loc *p, uint64_t k1, uint64_t word, unsigned scope)
{
    hb_pend *pend = w->pend;
    hb_pend *slot = NULL;
    for (uint32_t i = 0; i < w->npend; i++)
        if (pend[i].k1 == k1 && pend[i].word == word) {
            slot = &pend[i];
            pend_free(slot);
            break;
        }
    if (!slot) {
        if (w->npend == MAX_PEND) {
            pend_free(&pend[0]);
            memmove(pend, pend + 1, (MAX_PEND - 1) * sizeof *pend);
            w->npend--;
        }
        if (!w->pend)
            w->pend = pend = xcalloc(MAX_PEND, sizeof *pend);
        slot = &pend[w->npend++];
        memset(slot, 0, sizeof *slot);
    }
    slot->k1 = k1;
    slot->word = word;
    slot->scope = (uint8_t)scope;
    slot->rs = p->rs;
    p->rs->refs++;
}

/* The location key of a shared word of (launch, block). */
static uint64_t shared_loc_key(uint32_t launch, uint32_t block)
{
    return 0x8000000000000000ull | ((uint64_t)launch << 32) | block;
}

bool wr_hb_sync_word(wr_hb *hb, uint8_t space, uint32_t launch, uint32_t block,
                     uint64_t word)
{
    uint64_t k1 = space == WR_SPACE_SHARED ? shared_loc_key(launch, block) : 0;
    hb_loc *p = loc_find(hb, k1, word, false);
    return p && p->sync;
}

/* Does snapshot s know unit u's stamp st (directly, or through the
 * completion of u's launch on its stream)? */
static bool snap_knows(const wr_hb *hb, const wr_vc_snap *s, uint32_t u, uint32_t st)
{
    if (wr_vc_get(&s->c, u) >= st)
        return true;
    const hb_launch *ul = hb->launches[unit_launch(hb, u)];
    return wr_vc_get(&s->c, WR_HB_STREAM_KEY | ul->stream_slot) >= ul->pos;
}

bool wr_hb_release_knows(wr_hb *hb, const wr_hb_warp *w, unsigned layer, uint8_t space,
                         uint32_t launch, uint32_t block, uint64_t word, unsigned acq_scope,
                         uint32_t u, uint32_t st)
{
    if (layer == WR_HB_BAR || (layer == WR_HB_SCOPED && hb->L < 2))
        return false;   /* BAR takes no acquire */
    uint64_t k1 = space == WR_SPACE_SHARED ? shared_loc_key(launch, block) : 0;
    const hb_loc *p = loc_find(hb, k1, word, false);
    if (!p || !p->rs)
        return false;
    unsigned k = layer == WR_HB_OBL ? 0 : 1;
    for (uint32_t i = 0; i < p->rs->n; i++) {
        const hb_rel *r = p->rs->rel[i];
        if (k == 1 && rel_relation(w, r) > min_u(r->scope, acq_scope))
            continue;   /* the scoped layer does not take it */
        if (snap_knows(hb, r->snap[k], u, st) || (r->later[k] && snap_knows(hb, r->later[k], u, st)))
            return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* accesses                                                             */

static inline uint32_t stamp_next(wr_hb_warp *w)
{
    if (w->c < STAMP_MAX)
        w->c++;
    return w->c;
}

wr_hb_warp *wr_hb_access_begin(wr_hb *hb, const wr_access *a)
{
    wr_hb_warp *w = warp_get(hb, a->launch, a->block, a->warp);
    stamp_next(w);
    if (!w->group_mask && !w->diverged) {
        w->group_mask = a->active_mask;
        w->group_since = w->c;
    }
    if (a->active_mask != w->group_mask)
        w->diverged = 1;
    w->conv = !w->diverged;
    if (w->conv)
        w->conv_last = w->c;
    return w;
}

static bool order_acquires(unsigned o)
{
    return o == WR_ORDER_ACQUIRE || o == WR_ORDER_ACQ_REL || o == WR_ORDER_SC;
}

static bool order_releases(unsigned o)
{
    return o == WR_ORDER_RELEASE || o == WR_ORDER_ACQ_REL || o == WR_ORDER_SC;
}

bool wr_hb_strong(const wr_access *a)
{
    return wr_op_is_atomic(a->op) || a->order != WR_ORDER_WEAK;
}

bool wr_hb_acquires_at_once(const wr_access *a)
{
    bool is_cas = a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS;
    return wr_hb_strong(a) && wr_op_reads(a->op) && (order_acquires(a->order) || !is_cas);
}

uint8_t wr_hb_strong_scope(const wr_access *a)
{
    if (a->scope)
        return a->scope;
    return wr_op_is_atomic(a->op) ? WR_SCOPE_DEVICE : WR_SCOPE_SYSTEM;
}

static void access_sync_words(wr_hb *hb, wr_hb_warp *w, const wr_access *a);

void wr_hb_access_end(wr_hb *hb, wr_hb_warp *w, const wr_access *a)
{
    if (!wr_hb_strong(a) || a->space == WR_SPACE_LOCAL)
        return;
    bool is_cas = a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS;
    /* No location exists yet (so none published anything, and no CAS ever
     * took a lock that an exchange could release) and this access publishes
     * nothing: the lane loop below would only look its words up and find
     * nothing (a histogram's relaxed atomics, before any other sync). */
    if (!hb->nloc && !is_cas && !order_releases(a->order) && !w->has_fence)
        return;
    access_sync_words(hb, w, a);
}

/* The release / acquire / lock part of strong access a on each of its
 * words, lane by lane in lane order (a lane acquires what an earlier
 * lane's release published, whatever block's memory either names): a
 * DSMEM lane's word is its owner's shared word (engine.h). */
static void access_sync_words(wr_hb *hb, wr_hb_warp *w, const wr_access *a)
{
    bool reads = wr_op_reads(a->op), writes = wr_op_writes(a->op);
    bool is_cas = a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_CAS;
    bool is_exch = a->op == WR_OP_ATOMIC_RMW && a->atomic_op == WR_AOP_EXCH;
    unsigned scope = wr_hb_strong_scope(a);
    uint64_t k1 = a->space == WR_SPACE_SHARED ? shared_loc_key(a->launch, a->block) : 0;
    uint64_t last = UINT64_MAX;
    for (unsigned lane = 0; lane < WR_WARP_SIZE; lane++) {
        if (!((a->active_mask >> lane) & 1u))
            continue;
        uint64_t addr = wr_access_lane_addr(a, lane);
        uint64_t word = addr >> WR_WORD_SHIFT;   /* DSMEM: with its owner, for the runs */
        if (word == last)
            continue;
        last = word;
        /* every lane of this run of lanes on one word reads it, and acquires
         * (a uniform address is one run of all active lanes) */
        uint32_t lm = 1u << lane;
        if (a->addr_mode == WR_ADDR_UNIFORM)
            lm = a->active_mask;
        else
            for (unsigned l = lane + 1; l < WR_WARP_SIZE; l++) {
                if (!((a->active_mask >> l) & 1u))
                    continue;
                if (wr_access_lane_addr(a, l) >> WR_WORD_SHIFT != word)
                    break;
                lm |= 1u << l;
            }
        if (a->space == WR_SPACE_DSMEM) {
            k1 = shared_loc_key(a->launch, wr_dsmem_block(addr));
            word = wr_dsmem_offset(addr) >> WR_WORD_SHIFT;
        }
        if (is_cas)   /* a CAS target is a lock word (ScoRD's lock idiom) */
            loc_find(hb, k1, word, true)->sync = 1;
        if (reads) {
            hb_loc *p = loc_find(hb, k1, word, false);
            if (p && p->rs && p->rs->n) {
                if (wr_hb_acquires_at_once(a))
                    acquire_rels(hb, w, p->rs, scope, WR_VERDICT_SCOPE_ATOMIC, false, lm);
                else
                    pend_add(w, p, k1, word, scope);
            }
        }
        bool does_write = writes && (!is_cas || (a->cas_success & lm));
        if (!does_write)
            continue;
        uint64_t hk = word ^ k1;
        bool unlock = false;
        if (is_cas) {
            w->held[w->nheld++ & 3u] = hk;
        } else if (is_exch) {
            for (unsigned i = 0; i < 4; i++)
                if (w->held[i] == hk && hk) {
                    w->held[i] = 0;
                    unlock = true;
                }
        }
        bool is_store = a->op == WR_OP_ATOMIC_STORE || a->op == WR_OP_STORE;
        if (order_releases(a->order)) {
            hb_loc *p = loc_find(hb, k1, word, true);
            bool cleared = false;
            loc_release(hb, w, p, w->c, scope, WR_VERDICT_SCOPE_ATOMIC, false, is_store, true,
                        &cleared);
        } else if (w->has_fence) {
            hb_loc *p = loc_find(hb, k1, word, true);
            bool cleared = false;
            unsigned fs = w->fence_scope;
            unsigned eff = min_u(fs, scope);
            unsigned kind = fs < scope ? WR_VERDICT_SCOPE_FENCE : WR_VERDICT_SCOPE_ATOMIC;
            /* an atomic write after no fence but a barrier's is a counter
             * or a result (a block's atomicAdd after __syncthreads()), not
             * a flag the program synchronizes through: it releases, but
             * two atomics on it whose scopes fall short still race
             * (wr_hb_sync_word) */
            loc_release(hb, w, p, w->fence_c, eff, kind, unlock, is_store,
                        unlock || !w->fence_of_barrier, &cleared);
        } else if (is_store) {
            hb_loc *p = loc_find(hb, k1, word, false);
            if (p)
                rel_clear(p);
        }
    }
}

/* ------------------------------------------------------------------ */
/* host copies                                                          */

wr_hb_warp *wr_hb_copy_begin(wr_hb *hb, const wr_host_copy *c)
{
    uint32_t idx = launch_new(hb);
    hb_launch *l = hb->launches[idx];
    l->is_copy = 1;
    item_start(hb, c->stream, l->base, &l->stream_slot, &l->pos);
    complete_known(hb, l->base);   /* the copy runs now: what it waits for is over */
    wr_hb_warp *w = xcalloc(1, sizeof *w);
    w->unit = unit_add(hb, idx, 0, UINT32_MAX, UINT32_MAX);
    w->launch = idx;
    w->block = UINT32_MAX;
    w->widx = 0;
    w->full_mask = 1;
    w->c = 1;
    w->conv = 1;
    return w;
}

void wr_hb_copy_end(wr_hb *hb, wr_hb_warp *w, const wr_host_copy *c)
{
    hb_launch *l = hb->launches[w->launch];
    stream_item_done(hb, l->stream_slot, l->pos, l->base);
    if (!c->async)
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
            wr_vc_join(&hb->host[k], &l->base[k]);
            wr_vc_set_max(&hb->host[k], WR_HB_STREAM_KEY | l->stream_slot, l->pos);
        }
    for (unsigned k = 0; k < hb->L; k++)
        wr_vc_free(&l->base[k]);
    /* keep the stream position: later accesses of other actors look it up */
    warp_fini(w);
    free(w);
}

/* ------------------------------------------------------------------ */
/* synchronization events                                               */

/* A barrier the warp arrived at with stamp s completed: it reconverges,
 * all its earlier accesses precede every lane. */
static void barrier_reconverge(wr_hb_warp *w, uint32_t s)
{
    lanes_reconverge(w, s);
    w->diverged = 0;
    w->group_mask = 0;
}

/* A warp's arrival at a barrier that gathers the threads of `scope`: its
 * stamp.  The barrier is also a fence of that scope for the warp (a
 * release pattern's fence, and the fence that completes a pending CAS
 * acquire). */
static uint32_t barrier_arrival(wr_hb *hb, wr_hb_warp *w, unsigned scope, uint32_t mask)
{
    uint32_t s = stamp_next(w);
    w->has_fence = 1;
    w->fence_of_barrier = 1;
    w->fence_scope = (uint8_t)scope;
    w->fence_c = s;
    acquire_pending(hb, w, scope, true, mask);
    return s;
}

/* Threads a cluster or grid barrier of l gathers when the trace does not
 * say: all of the cluster's or grid's (a launch never announced: its
 * blocks seen so far, of 32 threads). */
static uint64_t xbar_expected(const hb_launch *l, unsigned bscope)
{
    uint64_t threads = l->threads ? l->threads : WR_WARP_SIZE;
    uint64_t blocks = bscope == WR_BAR_CLUSTER
                          ? (uint64_t)l->cl[0] * l->cl[1] * l->cl[2]
                          : (l->grid[0] ? (uint64_t)l->grid[0] * l->grid[1] * l->grid[2]
                                        : l->span);
    return threads * (blocks ? blocks : 1);
}

static hb_xbar *xbar_of(hb_launch *l, unsigned bscope, uint32_t cluster)
{
    if (bscope == WR_BAR_GRID) {
        if (!l->grid_bar)
            l->grid_bar = xcalloc(1, sizeof *l->grid_bar);
        return l->grid_bar;
    }
    uint32_t ix = wr_map_get(&l->xbar_ix, cluster + 1u);
    if (ix)
        return &l->xbar[ix - 1];
    if (!(l->nxbar & (l->nxbar - 1)))   /* grows at powers of two */
        l->xbar = xrealloc(l->xbar, (size_t)(l->nxbar ? l->nxbar * 2 : 1) * sizeof *l->xbar);
    memset(&l->xbar[l->nxbar], 0, sizeof *l->xbar);
    wr_map_put(&l->xbar_ix, cluster + 1u, ++l->nxbar);
    return &l->xbar[l->nxbar - 1];
}

/* Is arrival a's warp still there (a malformed trace may retire its block
 * before the phase completes)? */
static bool xarrival_alive(const hb_launch *l, const hb_xarrival *a)
{
    const hb_block *b = block_at(l, a->block);
    return b && a->widx < b->nw;
}

/* A cluster or grid barrier's phase completes: the clocks its arrivals
 * released (a SYNC arriver's at its arrival, where it still waits; an
 * ARRIVE's as taken then; a relaxed arrival releases nothing) are joined
 * and given to every arriver that waits, in every layer (a barrier's scope
 * holds every thread it gathers, and it orders weak accesses as a block
 * barrier does), and each of them reconverges.  The join stays in x->done
 * for the arrivers whose WAIT is still to come. */
static void xbar_complete(wr_hb *hb, hb_launch *l, hb_xbar *x)
{
    /* an arriver whose block is gone (a malformed trace) takes no part,
     * but what an ARRIVE released stays released */
    uint32_t n = 0;
    for (uint32_t i = 0; i < x->n; i++) {
        hb_xarrival a = x->arr[i];
        if (xarrival_alive(l, &a) || a.mode == WR_BARMODE_ARRIVE)
            x->arr[n++] = a;
        else
            xarrival_drop_snaps(&x->arr[i]);
    }
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
        wr_vclock *j = &x->done[k];
        wr_vc_clear(j);
        for (uint32_t i = 0; i < n; i++) {
            hb_xarrival *a = &x->arr[i];
            if (a->mode == WR_BARMODE_ARRIVE) {
                if (a->snap[k])
                    wr_vc_join(j, &a->snap[k]->c);
            } else if (a->mode == WR_BARMODE_SYNC) {
                wr_hb_warp *w = &block_at(l, a->block)->w[a->widx];
                wr_vc_snap *sn = warp_flatten(hb, w, k, a->stamp);
                wr_vc_join(j, &sn->c);
                wr_snap_unref(sn);
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        hb_xarrival *a = &x->arr[i];
        if (a->waiting && xarrival_alive(l, a)) {
            wr_hb_warp *w = &block_at(l, a->block)->w[a->widx];
            for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
                warp_join(hb, w, k, &x->done[k], a->mask);
            w->xbar_wait = 0;
            barrier_reconverge(w, a->stamp);
        }
        xarrival_drop_snaps(a);
    }
    x->n = 0;
    x->count = 0;
    x->phase++;
}

/* A warp's WAIT (barrier.cluster.wait) for the phase its last arrival
 * joined: taken now if that phase completed, else when it does.  A WAIT
 * with no arrival before it (a malformed trace) acquires nothing. */
static void do_xbar_wait(wr_hb *hb, hb_launch *l, wr_hb_warp *w, const wr_barrier *br)
{
    uint32_t s = stamp_next(w);
    if (!w->xbar_armed)
        return;
    hb_xbar *x = xbar_of(l, w->xbar_armed, w->cluster);
    if (x->phase != w->xbar_phase) {
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
            warp_join(hb, w, k, &x->done[k], br->active_mask);
        barrier_reconverge(w, s);
    } else if (w->xbar_at < x->n) {
        x->arr[w->xbar_at].waiting = 1;
        x->arr[w->xbar_at].stamp = s;
        x->arr[w->xbar_at].mask = br->active_mask;
        w->xbar_wait = w->xbar_armed;
    }
    w->xbar_armed = 0;
}

/* A warp arrives at a cluster barrier (cluster.sync(),
 * barrier.cluster.arrive) or a grid barrier (grid.sync()), or waits at
 * one (WAIT). */
static void do_xbarrier(wr_hb *hb, const wr_barrier *br)
{
    wr_hb_warp *w = warp_get(hb, br->launch, br->block, br->warp);
    hb_launch *l = launch_get(hb, br->launch);
    if (br->mode == WR_BARMODE_WAIT) {
        do_xbar_wait(hb, l, w, br);
        return;
    }
    unsigned scope = br->scope == WR_BAR_CLUSTER ? WR_SCOPE_CLUSTER : WR_SCOPE_DEVICE;
    /* a relaxed arrival is no fence: it releases nothing */
    uint32_t s = br->mode == WR_BARMODE_ARRIVE_RELAXED
                     ? stamp_next(w)
                     : barrier_arrival(hb, w, scope, br->active_mask);
    /* a warp that arrives again went on: the barrier it waited at
     * completed (a count short of `expected`, as with exited threads) */
    if (w->xbar_wait)
        xbar_complete(hb, l, xbar_of(l, w->xbar_wait, w->cluster));
    /* one that arrived and never waited stays counted in that phase */
    w->xbar_armed = 0;
    hb_xbar *x = xbar_of(l, br->scope, w->cluster);
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 8;
        x->arr = xrealloc(x->arr, (size_t)x->cap * sizeof *x->arr);
    }
    hb_xarrival *a = &x->arr[x->n];
    *a = (hb_xarrival){.block = br->block, .widx = w->widx, .stamp = s, .mask = br->active_mask,
                       .mode = br->mode, .waiting = br->mode == WR_BARMODE_SYNC};
    if (br->mode == WR_BARMODE_SYNC) {
        w->xbar_wait = br->scope;
    } else {
        /* it goes on: its clock now is what it releases; its lanes wait
         * for each other at the instruction */
        if (br->mode == WR_BARMODE_ARRIVE)
            for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
                a->snap[k] = warp_flatten(hb, w, k, s);
        barrier_reconverge(w, s);
        w->xbar_armed = br->scope;
        w->xbar_phase = x->phase;
        w->xbar_at = x->n;
    }
    x->n++;
    x->count += (uint32_t)__builtin_popcount(br->active_mask);
    uint64_t expected = br->expected ? br->expected : xbar_expected(l, br->scope);
    if (x->count >= expected)
        xbar_complete(hb, l, x);
}

static hb_mbar *mbar_get(hb_block *b, uint32_t offset)
{
    for (uint32_t i = 0; i < b->nmbar; i++)
        if (b->mbar[i].offset == offset)
            return &b->mbar[i];
    if (!(b->nmbar & (b->nmbar - 1)))   /* grows at powers of two */
        b->mbar = xrealloc(b->mbar, (size_t)(b->nmbar ? b->nmbar * 2 : 1) * sizeof *b->mbar);
    hb_mbar *mb = &b->mbar[b->nmbar++];
    memset(mb, 0, sizeof *mb);
    mb->offset = offset;
    return mb;
}

/* An mbarrier operation (hb_mbar).  Its synchronization is the block's
 * (.cta): an arrival releases and a wait acquires in every layer, as a
 * barrier does (the scope holds both parties, and the hand-off of a
 * pipeline's weak data through an mbarrier is what it is for). */
static void do_mbarrier(wr_hb *hb, const wr_barrier *br)
{
    wr_hb_warp *w = warp_get(hb, br->launch, br->block, br->warp);
    hb_mbar *mb = mbar_get(w->blkp, br->barrier_id);
    uint32_t s = stamp_next(w);
    switch (br->mode) {
    case WR_BARMODE_INIT:
        mb->count = mb->pending = br->expected;
        mb->phase = 0;
        mb->done_ok[0] = mb->done_ok[1] = 0;
        for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++) {
            wr_vc_clear(&mb->acc[k]);
            wr_vc_clear(&mb->done[0][k]);
            wr_vc_clear(&mb->done[1][k]);
        }
        return;
    case WR_BARMODE_ARRIVE:
    case WR_BARMODE_ARRIVE_RELAXED: {
        if (br->mode == WR_BARMODE_ARRIVE)
            for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
                wr_vc_snap *sn = warp_flatten(hb, w, k, s);
                wr_vc_join(&mb->acc[k], &sn->c);
                wr_snap_unref(sn);
            }
        if (!mb->count)
            return;
        uint64_t n = (uint64_t)__builtin_popcount(br->active_mask) * (br->expected ? br->expected : 1u);
        if (n < mb->pending) {
            mb->pending -= (uint32_t)n;
            return;
        }
        unsigned par = mb->phase & 1u;
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
            wr_vc_copy(&mb->done[par][k], &mb->acc[k]);
            wr_vc_clear(&mb->acc[k]);
        }
        mb->done_ok[par] = 1;
        mb->phase++;
        mb->pending = mb->count;
        return;
    }
    case WR_BARMODE_WAIT: {
        unsigned par = br->expected & 1u;
        if (!mb->done_ok[par])
            return;   /* no phase of that parity completed: nothing to acquire */
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
            warp_join(hb, w, k, &mb->done[par][k], br->active_mask);
        return;
    }
    default:
        return;
    }
}

static void do_barrier(wr_hb *hb, const wr_barrier *br)
{
    if (br->scope == WR_BAR_MBARRIER) {
        do_mbarrier(hb, br);
        return;
    }
    if (br->scope != WR_BAR_BLOCK) {
        do_xbarrier(hb, br);
        return;
    }
    wr_hb_warp *w = warp_get(hb, br->launch, br->block, br->warp);
    hb_block *b = w->blkp;
    uint32_t id = br->barrier_id & 15u;
    if (!b->bar[id])
        b->bar[id] = xcalloc(1, sizeof(hb_bar));
    hb_bar *bar = b->bar[id];
    uint32_t s = barrier_arrival(hb, w, WR_SCOPE_BLOCK, br->active_mask);
    if (br->mode == WR_BARMODE_ARRIVE) {
        /* bar.arrive: it releases its clock now and goes on; its lanes
         * wait for each other at the instruction */
        if (!bar->rel)
            bar->rel = xcalloc(WR_HB_MAX_LAYERS, sizeof *bar->rel);
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
            wr_vc_snap *sn = warp_flatten(hb, w, k, s);
            wr_vc_join(&bar->rel[k], &sn->c);
            wr_snap_unref(sn);
        }
        barrier_reconverge(w, s);
    } else if (w->widx < 64) {
        bar->arrived |= 1ull << w->widx;
        bar->stamp[w->widx] = s;
    }
    bar->count += (uint32_t)__builtin_popcount(br->active_mask);
    uint32_t expected = br->expected;
    if (!expected) {
        const hb_launch *l = warp_launch(hb, w);
        expected = l->threads ? l->threads : WR_WARP_SIZE;
    }
    if (bar->count < expected)
        return;
    /* complete: join every arriver's clock, give it to all of them */
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
        wr_vclock *j = &hb->tmp;
        wr_vc_clear(j);
        uint32_t *jb = xcalloc(b->nw, sizeof(uint32_t));
        for (uint32_t i = 0; i < b->nw && i < 64; i++) {
            if (!((bar->arrived >> i) & 1u))
                continue;
            wr_hb_warp *x = &b->w[i];
            wr_vc_join(j, &x->ext[k]);
            if (x->blk[k])
                for (uint32_t q = 0; q < b->nw; q++)
                    if (jb[q] < x->blk[k][q])
                        jb[q] = x->blk[k][q];
            if (jb[i] < bar->stamp[i])
                jb[i] = bar->stamp[i];
        }
        for (uint32_t i = 0; i < b->nw && i < 64; i++) {
            if (!((bar->arrived >> i) & 1u))
                continue;
            wr_hb_warp *x = &b->w[i];
            wr_vc_join(&x->ext[k], j);
            memcpy(warp_blk(x, k), jb, (size_t)b->nw * sizeof(uint32_t));
            warp_drop_snaps(x);
            if (bar->rel)
                warp_join(hb, x, k, &bar->rel[k], WR_FULL_MASK);
        }
        free(jb);
        if (bar->rel)
            wr_vc_clear(&bar->rel[k]);
    }
    for (uint32_t i = 0; i < b->nw && i < 64; i++) {
        if (!((bar->arrived >> i) & 1u))
            continue;
        wr_hb_warp *x = &b->w[i];
        /* the barrier published (x, its arrival stamp) to the block */
        if (bar->stamp[i] < x->pub_hi)
            hb->lossy = 1;
        else
            x->pub_hi = bar->stamp[i];
        barrier_reconverge(x, bar->stamp[i]);
    }
    bar->count = 0;
    bar->arrived = 0;
}

static void do_warp_sync(wr_hb *hb, const wr_warp_sync *ws)
{
    wr_hb_warp *w = warp_get(hb, ws->launch, ws->block, ws->warp);
    uint32_t s = stamp_next(w);
    uint32_t m = ws->mask & w->full_mask;
    if (m == w->full_mask) {
        lanes_reconverge(w, s);
        w->diverged = 0;
        w->group_mask = 0;
        return;
    }
    if (!w->pair)
        w->pair = xcalloc(32 * 32, sizeof(uint32_t));
    /* Happens-before is transitive: every lane of the mask learns what any
     * of them knew of every lane, not only their own accesses (lane 0's
     * write, __syncwarp(0x3), __syncwarp(0x6): lane 2 is ordered after
     * it).  What a lane acquired of the warp's own stamp (lane_ord) is
     * handed on apart, so that pair stays what barriers and warp syncs
     * order alone.  What lane c knows of lane a's accesses, as a stamp: */
    for (unsigned k = 0; w->lane_ord && k < 2; k++) {
        uint32_t *ord = w->lane_ord + k * 32, acq = 0;
        for (unsigned c = 0; c < 32; c++)
            if ((m >> c) & 1u && acq < ord[c])
                acq = ord[c];
        for (unsigned b = 0; b < 32; b++)
            if ((m >> b) & 1u)
                ord[b] = acq;
    }
    uint32_t knew[32];
    memset(knew, 0, sizeof knew);
    for (unsigned c = 0; c < 32; c++) {
        if (!((m >> c) & 1u))
            continue;
        for (unsigned a = 0; a < 32; a++) {
            uint32_t k = w->pair[c * 32 + a];
            /* lockstep instructions of the group are ordered for its lanes */
            if (w->group_mask && ((w->group_mask >> c) & 1u) && ((w->group_mask >> a) & 1u) &&
                k < w->conv_last)
                k = w->conv_last;
            if ((m >> a) & 1u)
                k = s;
            if (knew[a] < k)
                knew[a] = k;
        }
    }
    for (unsigned b = 0; b < 32; b++) {
        if (!((m >> b) & 1u))
            continue;
        for (unsigned a = 0; a < 32; a++)
            if (w->pair[b * 32 + a] < knew[a])
                w->pair[b * 32 + a] = knew[a];
    }
}

static void do_fence(wr_hb *hb, const wr_fence *f)
{
    wr_hb_warp *w = warp_get(hb, f->launch, f->block, f->warp);
    unsigned fs = f->scope ? f->scope : WR_SCOPE_DEVICE;
    acquire_pending(hb, w, fs, false, f->active_mask);
    uint32_t s = stamp_next(w);
    w->has_fence = 1;
    w->fence_of_barrier = 0;
    w->fence_scope = (uint8_t)fs;
    w->fence_c = s;
}

static void do_kernel_end(wr_hb *hb, uint32_t id)
{
    hb_launch *l = launch_of_id(hb, id, false);
    if (!l || l->ended)
        return;
    /* the recorder emits KERNEL_END when the host observed the completion:
     * the host knows all of it, and what it knew (complete_known hands the
     * end knowledge to the host, or did when the launch completed) */
    for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
        wr_vc_set_max(&hb->host[k], WR_HB_STREAM_KEY | l->stream_slot, l->pos);
    bool was_complete = l->complete;
    complete_known(hb, hb->host);
    if (was_complete)
        learn_end(hb, hb->host, l);
    for (uint32_t i = 0; i < l->npresent; i++)
        block_fold(hb, l, l->present[i]);
    launch_drop_blocks(l);
    /* Its start clock goes too, once it is complete: only its own warps
     * and its completion read it (wr_hb_knows, acquires, mark_known), and
     * none of them comes any more.  The record stays (a kept access's unit
     * still names it: wr_hb_knows asks its stream position).  Long traces
     * kept every launch's start, about 350 bytes each (chunks and
     * directory). */
    for (unsigned k = 0; k < hb->L; k++) {
        wr_vc_free(&l->endj[k]);
        if (l->complete)
            wr_vc_free(&l->base[k]);
    }
    l->ended = 1;
}

void wr_hb_event(wr_hb *hb, const wr_event *ev)
{
    switch (ev->kind) {
    case WR_EV_BARRIER:
        do_barrier(hb, &ev->u.barrier);
        break;
    case WR_EV_WARP_SYNC:
        do_warp_sync(hb, &ev->u.warp_sync);
        break;
    case WR_EV_FENCE:
        do_fence(hb, &ev->u.fence);
        break;
    case WR_EV_BLOCK_ENTER: {
        hb_launch *l = launch_get(hb, ev->u.block.launch);
        block_get(hb, l, ev->u.block.block, 0);
        break;
    }
    case WR_EV_BLOCK_EXIT: {
        hb_launch *l = launch_get(hb, ev->u.block.launch);
        uint32_t b = ev->u.block.block;
        hb_block *bl = block_at(l, b);
        if (bl) {
            block_set(l, b, NULL);
            block_fold(hb, l, bl);
            if (!l->running_blocks && l->complete)   /* (a trace without kernel ends) */
                launch_drop_blocks(l);
        }
        break;
    }
    case WR_EV_KERNEL_LAUNCH: {
        hb_launch *l = launch_of_id(hb, ev->u.launch.launch, false);
        if (l)
            break;   /* duplicate: keep the first */
        l = launch_of_id(hb, ev->u.launch.launch, true);
        launch_setup(hb, l, &ev->u.launch);
        break;
    }
    case WR_EV_KERNEL_END:
        do_kernel_end(hb, ev->u.kernel_end.launch);
        break;
    case WR_EV_EVENT_RECORD: {
        uint32_t slot;
        hb_stream *s = stream_get(hb, ev->u.stream_event.stream, &slot);
        uint32_t at;
        hb_cuevent *e = cuevent_get(hb, ev->u.stream_event.event, &at);
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
            wr_vc_copy(&e->clk[k], &s->tail[k]);
            wr_vc_set_max(&e->clk[k], WR_HB_STREAM_KEY | slot, s->pos);
        }
        legacy_waits(hb, ev->u.stream_event.stream, slot, e->clk);
        hb->event_stamp[at] = hb->nlaunches;
        break;
    }
    case WR_EV_STREAM_WAIT: {
        uint32_t slot;
        hb_stream *s = stream_get(hb, ev->u.stream_event.stream, &slot);
        hb_cuevent *e = cuevent_get(hb, ev->u.stream_event.event, NULL);
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
            wr_vc_join(&s->tail[k], &e->clk[k]);
        hb->tail_stamp[slot] = hb->nlaunches;
        break;
    }
    case WR_EV_EVENT_SYNC: {
        hb_cuevent *e = cuevent_get(hb, ev->u.stream_event.event, NULL);
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1))
            wr_vc_join(&hb->host[k], &e->clk[k]);
        complete_known(hb, hb->host);
        break;
    }
    case WR_EV_STREAM_SYNC: {
        uint32_t slot;
        hb_stream *s = stream_get(hb, ev->u.stream_sync.stream, &slot);
        for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
            wr_vc_join(&hb->host[k], &s->tail[k]);
            wr_vc_set_max(&hb->host[k], WR_HB_STREAM_KEY | slot, s->pos);
        }
        complete_known(hb, hb->host);
        break;
    }
    case WR_EV_DEVICE_SYNC:
        for (uint32_t i = 0; i < hb->nstreams; i++)
            for (unsigned k = kept_from(hb, 0); k < hb->L; k = kept_from(hb, k + 1)) {
                wr_vc_join(&hb->host[k], &hb->streams[i].tail[k]);
                wr_vc_set_max(&hb->host[k], WR_HB_STREAM_KEY | i, hb->streams[i].pos);
            }
        complete_known(hb, hb->host);
        break;
    default:
        break;
    }
}

wr_hb *wr_hb_new(unsigned layers, bool keep_all_layers)
{
    wr_hb *hb = xcalloc(1, sizeof *hb);
    hb->L = layers < 1 ? 1 : layers > WR_HB_MAX_LAYERS ? WR_HB_MAX_LAYERS : layers;
    if (!keep_all_layers)
        hb->alias = (uint8_t)(((1u << hb->L) - 1u) & ~(1u << WR_HB_OBL));
    return hb;
}

void wr_hb_free(wr_hb *hb)
{
    if (!hb)
        return;
    for (uint32_t i = 0; i < hb->nlaunches; i++) {
        hb_launch *l = hb->launches[i];
        for (uint32_t b = 0; b < l->npresent; b++)
            block_fold(hb, l, l->present[b]);
        launch_drop_blocks(l);
        for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++) {
            wr_vc_free(&l->base[k]);
            wr_vc_free(&l->endj[k]);
        }
        free(l);
    }
    free(hb->launches);
    free(hb->running);
    free(hb->unstarted);
    free(hb->batch);
    free(hb->due_slots);
    free(hb->keys);
    free(hb->id2idx);
    wr_map_free(&hb->big_ids);
    for (uint32_t c = 0; c < hb->nuchunk; c++)
        free(hb->uchunk[c]);
    free(hb->uchunk);
    free(hb->uc_slot);
    free(hb->uc_pos);
    for (uint32_t i = 0; i < hb->nstreams; i++) {
        for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
            wr_vc_free(&hb->streams[i].tail[k]);
        free(hb->streams[i].q);
    }
    free(hb->streams);
    free(hb->tail_stamp);
    free(hb->event_stamp);
    free(hb->pending);
    wr_map_free(&hb->stream_slots);
    wr_map_free(&hb->event_slots);
    for (uint32_t i = 0; i < hb->nevents; i++)
        for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
            wr_vc_free(&hb->events[i].clk[k]);
    free(hb->events);
    for (unsigned k = 0; k < WR_HB_MAX_LAYERS; k++)
        wr_vc_free(&hb->host[k]);
    for (size_t i = 0; i < hb->caploc; i++)
        if (hb->locs[i]) {
            rels_unref(hb->locs[i]->rs);
            free(hb->locs[i]);
        }
    free(hb->locs);
    wr_vc_free(&hb->tmp);
    for (unsigned i = 0; i < HB_POOLED_WARPS; i++)
        wr_pool_release(&hb->block_pool[i]);
    free(hb);
}

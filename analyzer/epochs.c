/* Host-side ordering of launches and copies: see epochs.h. */
#include "epochs.h"
#include "u32map.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What happens before something: every epoch up to `floor`, and per
 * stream the epochs up to an entry's.  Sparse, so that a program with
 * thousands of streams (one per task, say) keeps small clocks: the host's
 * floor rises as it waits for everything up to an epoch, and the entries
 * at or below the floor go. */
typedef struct vc_ent {
    uint32_t stream;  /* stream index */
    uint32_t epoch;   /* newest epoch of that stream held; > floor */
} vc_ent;

typedef struct vc {
    uint32_t floor;
    uint32_t n, cap;
    vc_ent *v;        /* by stream index, ascending */
} vc;

typedef struct epoch_rec {
    uint32_t launch;  /* 0 = host copy */
    uint32_t stream;  /* stream index */
    bool ended;       /* the host saw this launch end (KERNEL_END) */
    bool acted;       /* an event of it was seen (wr_epochs_acts; copies at once) */
    uint32_t active_at;  /* index in active + 1 while not ended (launches) */
    vc before;        /* what happens before this epoch */
} epoch_rec;

struct wr_epochs {
    epoch_rec *ep;       /* ep[0] unused */
    uint32_t nep, capep;
    uint32_t *stream_ids;  /* index -> recorder stream id */
    vc *stream_vc;         /* per stream index: what its next work waits for */
    uint32_t *stream_last; /* newest epoch on the stream */
    uint32_t *stream_over; /* newest epoch of the stream ordered before one that acted */
    uint32_t over_floor;   /* every epoch up to it is ordered before one that acted */
    uint32_t nstreams, capstreams;
    bool non_blocking_seen;   /* some stream is non-blocking (WR_STREAM_NON_BLOCKING) */
    wr_u32map stream_map;     /* recorder stream id -> index + 1 */
    vc host;               /* what the host has waited for */
    wr_u32map launches;       /* launch id -> epoch */
    wr_u32map events;         /* event id -> index into event_vc + 1 */
    vc *event_vc;
    uint32_t nevents, capevents;
    uint32_t *active;      /* launch epochs the host has not seen end */
    uint32_t nactive, capactive;
};

/* Entry index of stream s in a, or where it would go. */
static uint32_t vc_find(const vc *a, uint32_t s)
{
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a->v[mid].stream < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint32_t vc_get(const vc *a, uint32_t s)
{
    uint32_t i = vc_find(a, s);
    return i < a->n && a->v[i].stream == s ? a->v[i].epoch : 0;
}

/* Does a hold epoch x of stream s? */
static bool vc_holds(const vc *a, uint32_t s, uint32_t x)
{
    return x <= a->floor || vc_get(a, s) >= x;
}

static void vc_reserve(vc *a, uint32_t n)
{
    if (n <= a->cap)
        return;
    a->cap = n < 4 ? 4 : n > 2 * a->cap ? n : 2 * a->cap;
    a->v = xrealloc(a->v, a->cap * sizeof *a->v);
}

static void vc_set(vc *a, uint32_t s, uint32_t x)
{
    if (x <= a->floor)
        return;
    uint32_t i = vc_find(a, s);
    if (i < a->n && a->v[i].stream == s) {
        if (a->v[i].epoch < x)
            a->v[i].epoch = x;
        return;
    }
    vc_reserve(a, a->n + 1);
    memmove(a->v + i + 1, a->v + i, (a->n - i) * sizeof *a->v);
    a->v[i] = (vc_ent){s, x};
    a->n++;
}

/* Drops the entries a's floor holds. */
static void vc_trim(vc *a)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->v[i].epoch > a->floor)
            a->v[k++] = a->v[i];
    a->n = k;
}

static void vc_raise_floor(vc *a, uint32_t floor)
{
    if (floor <= a->floor)
        return;
    a->floor = floor;
    vc_trim(a);
}

static void vc_join(vc *a, const vc *b)
{
    if (b->floor > a->floor) {
        a->floor = b->floor;
        vc_trim(a);
    }
    if (!b->n)
        return;
    /* merge from the back, in place */
    uint32_t extra = 0;
    for (uint32_t i = 0, j = 0; j < b->n; j++) {
        while (i < a->n && a->v[i].stream < b->v[j].stream)
            i++;
        extra += (i == a->n || a->v[i].stream != b->v[j].stream) && b->v[j].epoch > a->floor;
    }
    vc_reserve(a, a->n + extra);
    uint32_t i = a->n, j = b->n, out = a->n + extra;
    while (j > 0) {
        const vc_ent *y = &b->v[j - 1];
        if (i > 0 && a->v[i - 1].stream > y->stream) {
            a->v[--out] = a->v[--i];
        } else if (i > 0 && a->v[i - 1].stream == y->stream) {
            vc_ent x = a->v[--i];
            if (x.epoch < y->epoch)
                x.epoch = y->epoch;
            a->v[--out] = x;
            j--;
        } else {
            if (y->epoch > a->floor)
                a->v[--out] = *y;
            j--;
        }
    }
    a->n += extra;
}

static void vc_copy(vc *dst, const vc *src)
{
    dst->floor = src->floor;
    dst->n = 0;
    vc_reserve(dst, src->n);
    if (src->n)
        memcpy(dst->v, src->v, src->n * sizeof *dst->v);
    dst->n = src->n;
}

wr_epochs *wr_epochs_new(void)
{
    wr_epochs *e = xcalloc(1, sizeof *e);
    e->nep = 1;  /* epoch 0 = none */
    e->capep = 64;
    e->ep = xcalloc(e->capep, sizeof *e->ep);
    return e;
}

void wr_epochs_free(wr_epochs *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->nep; i++)
        free(e->ep[i].before.v);
    for (uint32_t i = 0; i < e->nstreams; i++)
        free(e->stream_vc[i].v);
    for (uint32_t i = 0; i < e->nevents; i++)
        free(e->event_vc[i].v);
    free(e->ep);
    free(e->stream_ids);
    free(e->stream_vc);
    free(e->stream_last);
    free(e->stream_over);
    free(e->host.v);
    free(e->stream_map.slots);
    free(e->launches.slots);
    free(e->events.slots);
    free(e->event_vc);
    free(e->active);
    free(e);
}

static uint32_t stream_index(wr_epochs *e, uint32_t stream)
{
    uint32_t known = wr_map_get(&e->stream_map, stream);
    if (known)
        return known - 1;
    if (e->nstreams == e->capstreams) {
        e->capstreams = e->capstreams ? e->capstreams * 2 : 8;
        e->stream_ids = xrealloc(e->stream_ids, e->capstreams * sizeof *e->stream_ids);
        e->stream_vc = xrealloc(e->stream_vc, e->capstreams * sizeof *e->stream_vc);
        e->stream_last = xrealloc(e->stream_last, e->capstreams * sizeof *e->stream_last);
        e->stream_over = xrealloc(e->stream_over, e->capstreams * sizeof *e->stream_over);
    }
    uint32_t i = e->nstreams++;
    e->stream_ids[i] = stream;
    e->non_blocking_seen |= wr_stream_non_blocking(stream);
    e->stream_vc[i] = (vc){0};
    e->stream_last[i] = 0;
    e->stream_over[i] = 0;
    wr_map_put(&e->stream_map, stream, i + 1);
    return i;
}

/* What an operation issued now on stream index s (recorder id `stream`:
 * a launch, a copy, an event record) waits for through the legacy default
 * stream, besides its own stream's earlier work: on stream 0, every
 * blocking stream's earlier work; on a blocking stream, stream 0's; on a
 * non-blocking stream, nothing. */
static void legacy_waits(wr_epochs *e, uint32_t s, uint32_t stream, vc *into)
{
    uint32_t s0 = stream_index(e, WR_STREAM_LEGACY);
    if (s == s0 && !e->non_blocking_seen) {
        vc_raise_floor(into, e->nep - 1);   /* all earlier work */
    } else if (s == s0) {
        for (uint32_t i = 0; i < e->nstreams; i++) {
            if (wr_stream_non_blocking(e->stream_ids[i]))
                continue;
            vc_join(into, &e->stream_vc[i]);
            if (e->stream_last[i])
                vc_set(into, i, e->stream_last[i]);
        }
    } else if (!wr_stream_non_blocking(stream)) {
        vc_join(into, &e->stream_vc[s0]);
        if (e->stream_last[s0])
            vc_set(into, s0, e->stream_last[s0]);
    }
}

/* A new epoch issued on `stream`. */
static uint32_t new_epoch(wr_epochs *e, uint32_t launch, uint32_t stream)
{
    uint32_t s = stream_index(e, stream);
    vc before = {0};
    vc_copy(&before, &e->stream_vc[s]);
    vc_join(&before, &e->host);
    legacy_waits(e, s, stream, &before);
    if (e->nep == e->capep) {
        e->capep *= 2;
        e->ep = xrealloc(e->ep, e->capep * sizeof *e->ep);
    }
    uint32_t id = e->nep++;
    e->ep[id].launch = launch;
    e->ep[id].stream = s;
    e->ep[id].ended = false;
    e->ep[id].acted = false;
    e->ep[id].active_at = 0;
    e->ep[id].before = before;
    /* the stream's next work waits for this one (and what it waited for) */
    vc_join(&e->stream_vc[s], &before);
    vc_set(&e->stream_vc[s], s, id);
    e->stream_last[s] = id;
    if (launch) {
        if (e->nactive == e->capactive) {
            e->capactive = e->capactive ? e->capactive * 2 : 16;
            e->active = xrealloc(e->active, e->capactive * sizeof *e->active);
        }
        e->active[e->nactive++] = id;
        e->ep[id].active_at = e->nactive;
    }
    return id;
}

static void launch_ended(wr_epochs *e, uint32_t id)
{
    if (e->ep[id].ended)
        return;
    e->ep[id].ended = true;
    uint32_t at = e->ep[id].active_at;
    if (!at)
        return;
    /* O(1) even when many launches never end (lost KERNEL_ENDs) */
    uint32_t moved = e->active[--e->nactive];
    e->active[at - 1] = moved;
    e->ep[moved].active_at = at;
    e->ep[id].active_at = 0;
}

/* The host's floor: every epoch up to the first it has not waited for
 * (so that a program that waits for each task's stream keeps a small
 * host clock, and small clocks for what it issues next). */
static void host_raise_floor(wr_epochs *e)
{
    uint32_t f = e->host.floor;
    while (f + 1 < e->nep && vc_get(&e->host, e->ep[f + 1].stream) >= f + 1)
        f++;
    vc_raise_floor(&e->host, f);
}

/* The host has observed epoch `id` complete. */
static void host_waits_epoch(wr_epochs *e, uint32_t id)
{
    if (!id || id >= e->nep)
        return;
    vc_join(&e->host, &e->ep[id].before);
    vc_set(&e->host, e->ep[id].stream, id);
    host_raise_floor(e);
}

uint32_t wr_epochs_on_event(wr_epochs *e, const wr_event *ev)
{
    switch (ev->kind) {
    case WR_EV_KERNEL_LAUNCH: {
        uint32_t id = new_epoch(e, ev->u.launch.launch, ev->u.launch.stream);
        wr_map_put(&e->launches, ev->u.launch.launch, id);
        return id;
    }
    case WR_EV_HOST_COPY: {
        uint32_t id = new_epoch(e, 0, ev->u.copy.stream);
        wr_epochs_acts(e, id);   /* a copy runs at its event */
        if (!ev->u.copy.async)
            host_waits_epoch(e, id);
        return id;
    }
    case WR_EV_KERNEL_END: {
        uint32_t id = wr_epochs_of_launch(e, ev->u.kernel_end.launch);
        launch_ended(e, id);
        host_waits_epoch(e, id);
        return 0;
    }
    case WR_EV_DEVICE_SYNC:   /* every epoch so far, on whatever stream */
        vc_raise_floor(&e->host, e->nep - 1);
        return 0;
    case WR_EV_STREAM_SYNC: {
        /* everything the stream's next work would wait for: its own
         * epochs and the events it waited for after the last of them */
        uint32_t s = stream_index(e, ev->u.stream_sync.stream);
        vc_join(&e->host, &e->stream_vc[s]);
        host_raise_floor(e);
        return 0;
    }
    case WR_EV_EVENT_RECORD: {
        uint32_t s = stream_index(e, ev->u.stream_event.stream);
        uint32_t idx = wr_map_get(&e->events, ev->u.stream_event.event);
        if (!idx) {
            if (e->nevents == e->capevents) {
                e->capevents = e->capevents ? e->capevents * 2 : 8;
                e->event_vc = xrealloc(e->event_vc, e->capevents * sizeof *e->event_vc);
            }
            e->event_vc[e->nevents] = (vc){0};
            idx = ++e->nevents;
            wr_map_put(&e->events, ev->u.stream_event.event, idx);
        }
        /* the event captures everything issued to the stream so far, and
         * what the legacy default stream makes the record wait for */
        vc_copy(&e->event_vc[idx - 1], &e->stream_vc[s]);
        legacy_waits(e, s, ev->u.stream_event.stream, &e->event_vc[idx - 1]);
        return 0;
    }
    case WR_EV_STREAM_WAIT: {
        uint32_t s = stream_index(e, ev->u.stream_event.stream);
        uint32_t idx = wr_map_get(&e->events, ev->u.stream_event.event);
        if (idx)
            vc_join(&e->stream_vc[s], &e->event_vc[idx - 1]);
        return 0;
    }
    case WR_EV_EVENT_SYNC: {
        uint32_t idx = wr_map_get(&e->events, ev->u.stream_event.event);
        if (idx) {
            vc_join(&e->host, &e->event_vc[idx - 1]);
            host_raise_floor(e);
        }
        return 0;
    }
    default:
        return 0;
    }
}

uint32_t wr_epochs_of_launch(wr_epochs *e, uint32_t launch)
{
    uint32_t id = wr_map_get(&e->launches, launch);
    if (!id) {
        id = new_epoch(e, launch, 0);
        wr_map_put(&e->launches, launch, id);
    }
    return id;
}

void wr_epochs_acts(wr_epochs *e, uint32_t epoch)
{
    if (!epoch || epoch >= e->nep || e->ep[epoch].acted)
        return;
    epoch_rec *r = &e->ep[epoch];
    r->acted = true;
    if (e->over_floor < r->before.floor)
        e->over_floor = r->before.floor;
    for (uint32_t i = 0; i < r->before.n; i++) {
        const vc_ent *x = &r->before.v[i];
        if (e->stream_over[x->stream] < x->epoch)
            e->stream_over[x->stream] = x->epoch;
    }
}

bool wr_epochs_over(const wr_epochs *e, uint32_t epoch)
{
    return epoch && epoch < e->nep &&
           (epoch <= e->over_floor || epoch <= e->stream_over[e->ep[epoch].stream]);
}

bool wr_epochs_ended(const wr_epochs *e, uint32_t epoch)
{
    return epoch && epoch < e->nep && e->ep[epoch].ended;
}

uint32_t wr_epochs_launch_of(const wr_epochs *e, uint32_t epoch)
{
    return epoch && epoch < e->nep ? e->ep[epoch].launch : 0;
}

uint32_t wr_epochs_count(const wr_epochs *e) { return e->nep - 1; }

bool wr_epochs_ordered(const wr_epochs *e, uint32_t a, uint32_t b)
{
    if (!a || !b || a >= b || b >= e->nep)
        return false;
    return vc_holds(&e->ep[b].before, e->ep[a].stream, a);
}

bool wr_epochs_settled(const wr_epochs *e, uint32_t epoch)
{
    if (!epoch || epoch >= e->nep)
        return false;
    const epoch_rec *r = &e->ep[epoch];
    if (r->launch && !r->ended)
        return false;
    /* the host waited for it: every epoch issued from now on waits for it */
    if (!vc_holds(&e->host, r->stream, epoch))
        return false;
    /* and so does every launch that may still run */
    for (uint32_t i = 0; i < e->nactive; i++)
        if (!wr_epochs_ordered(e, epoch, e->active[i]))
            return false;
    return true;
}

void wr_epochs_sweep_begin(wr_epochs_sweep *s, const wr_epochs *e, uint32_t newest,
                           uint32_t epoch)
{
    s->ep = e;
    s->newest = newest;
    s->epoch = epoch;
    memset(s->verdict, 0, sizeof s->verdict);
}

bool wr_epochs_sweep_ask(wr_epochs_sweep *s, unsigned tag)
{
    uint32_t we = wr_epochs_of_tag(s->newest, tag);
    bool drop = we + 255u < s->epoch || wr_epochs_settled(s->ep, we);
    s->verdict[tag & 0xffu] = drop ? 2 : 1;
    return drop;
}

bool wr_epochs_sweep_drops_all(wr_epochs_sweep *s, uint32_t oldest)
{
    if (!oldest || oldest > s->newest || s->newest - oldest >= WR_EPOCHS_SWEEP_SPAN)
        return false;
    for (uint32_t e = oldest; e <= s->newest; e++)
        if (!wr_epochs_sweep_drops(s, e & 0xffu))
            return false;
    return true;
}

uint32_t wr_epochs_sweep_oldest_kept(const wr_epochs_sweep *s)
{
    uint32_t oldest = s->epoch;
    for (unsigned tag = 0; tag < 256; tag++)
        if (s->verdict[tag] == 1) {
            uint32_t e = wr_epochs_of_tag(s->newest, tag);
            if (e < oldest)
                oldest = e;
        }
    return oldest;
}

wr_epochs_purge wr_epochs_purge_begin(const wr_epochs *e, uint32_t newest, uint32_t *purged_at)
{
    wr_epochs_purge p = {.ep = e, .newest = newest,
                         .window = newest >= *purged_at + WR_EPOCHS_KEEP};
    if (p.window)
        *purged_at = newest;
    return p;
}

bool wr_epochs_purge_keeps(wr_epochs_purge *p, uint32_t epoch, bool finished)
{
    if (epoch != p->asked) {
        p->asked = epoch;
        p->settled = wr_epochs_settled(p->ep, epoch);
    }
    if (p->settled)
        return false;   /* no access to come can race with its words */
    if (!p->window)
        return true;
    bool done = finished || wr_epochs_ordered(p->ep, epoch, p->newest) ||
                wr_epochs_ended(p->ep, epoch) || wr_epochs_over(p->ep, epoch);
    return !(epoch + WR_EPOCHS_KEEP < p->newest && done);
}

/* The host drain: ring -> wr_event -> sink.  See drain.h and RECORDER.md. */
#include "drain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"

struct wrr_qnode {
    wrr_qnode *next;
    wr_event ev;
    uint64_t end_pos;            /* a close's bound (wrr_drain_post_close) */
    uint32_t tag;                /* a group member's KERNEL_LAUNCH: its tag; else 0 */
};

uint64_t wrr_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(wrr_drain *d, const char *fmt, const char *what, uint64_t pos)
{
    if (!d->failed) {
        snprintf(d->error, sizeof d->error, fmt, what, (unsigned long long)pos);
        d->failed = 1;
    }
}

static uint32_t resolve_site(wrr_drain *d, uint64_t addr);

/* ---- workers (wrr_drain_options.workers) ---------------------------------------
 *
 * The drain thread fills a batch: the words of each record copied out of
 * the ring (so the ring space is free at once), the launch and site id it
 * gets, and host events in their place.  Workers convert and encode whole
 * batches in parallel; whichever finishes the oldest unappended batch hands
 * the batches to sink.encoded in order.  A flush marks a batch: the
 * appender flushes the sink after it, so the flush points are those of the
 * inline drain and the drain thread never waits for one.  A worker's
 * failure (a corrupt record, an event the writer refuses) is the pool's;
 * the drain thread takes it over at its next batch, so d->failed and
 * d->error stay the drain thread's. */

#define BATCH_RECORDS 4096u
#define BATCH_WORDS (1u << 17)

enum { B_FREE, B_FILLING, B_QUEUED, B_CONVERTING, B_DONE };

typedef struct batch_item {
    uint64_t pos;                /* ring position of a record */
    uint32_t off;                /* a record's first word, or a host event's index */
    uint32_t nwords;             /* 0: a host event */
    uint32_t launch, site;
} batch_item;

typedef struct batch {
    uint64_t *words;
    size_t nwords, cap_words;
    wr_event *hosts;
    size_t nhosts, cap_hosts;
    batch_item *items;
    size_t nitems, cap_items;
    wr_encoded *out;
    int state;
    int flush_after;             /* the appender flushes the sink after it */
    uint64_t seq;
    uint64_t busy_ns;
    char why[512];               /* a worker's failure, after the events before it */
} batch;

struct wrr_pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;   /* a batch was queued / a batch was appended */
    pthread_t *threads;
    unsigned nthreads;
    batch *batches;
    unsigned nbatches;
    batch *filling;              /* the drain thread's */
    uint64_t next_seq;           /* the next queued batch's */
    uint64_t append_seq;         /* the next batch to append */
    int appending, stop;
    int failed;                  /* a worker's or the sink's failure, in error */
    char error[512];
    uint64_t busy_ns;            /* the workers' */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static void pool_fail(wrr_pool *p, const char *why)
{
    if (!p->failed) {
        p->failed = 1;
        snprintf(p->error, sizeof p->error, "%s", why);
    }
}

/* Converts and encodes b's items into b->out (no lock held). */
static void convert_batch(const wrr_drain *d, batch *b)
{
    uint64_t t0 = d->opt.now_ns();
    uint64_t lanes[32];
    wr_encoded_clear(b->out);
    b->why[0] = 0;
    for (size_t i = 0; i < b->nitems; i++) {
        const batch_item *it = &b->items[i];
        wr_event ev;
        const char *why = NULL;
        if (!it->nwords)
            ev = b->hosts[it->off];
        else if (wrr_convert(b->words + it->off, it->nwords, it->launch, it->site, &ev, lanes,
                             &why) != 0) {
            snprintf(b->why, sizeof b->why, "corrupt ring record (%s) at position %llu", why,
                     (unsigned long long)it->pos);
            break;
        }
        if (wr_encoded_add(b->out, &ev, &why) != 0) {
            snprintf(b->why, sizeof b->why,
                     "the trace writer rejected the %s event: %s (at ring position %llu)",
                     wr_event_kind_name(ev.kind), why, (unsigned long long)it->pos);
            break;
        }
    }
    b->busy_ns = d->opt.now_ns() - t0;
}

/* Appends the finished batches in order; p->lock held (released around
 * the sink's calls).  After a failure the later batches are dropped: the
 * trace ends where the inline drain's would. */
static void append_ready(wrr_drain *d)
{
    wrr_pool *p = d->pool;
    while (!p->appending) {
        batch *b = NULL;
        for (unsigned i = 0; i < p->nbatches; i++)
            if (p->batches[i].state == B_DONE && p->batches[i].seq == p->append_seq)
                b = &p->batches[i];
        if (!b)
            return;
        p->appending = 1;
        int failed = p->failed;
        pthread_mutex_unlock(&p->lock);
        char why[512] = "";
        if (!failed) {
            if (wr_encoded_count(b->out) && d->sink.encoded(d->sink.ctx, b->out) != 0) {
                const char *e = d->sink.error ? d->sink.error(d->sink.ctx) : NULL;
                snprintf(why, sizeof why, "the trace writer rejected %zu events%s%s",
                         wr_encoded_count(b->out), e && *e ? ": " : "", e ? e : "");
            } else if (b->why[0])
                snprintf(why, sizeof why, "%s", b->why);
            else if (b->flush_after && d->sink.flush && d->sink.flush(d->sink.ctx) != 0)
                snprintf(why, sizeof why, "the trace writer failed to flush");
        }
        pthread_mutex_lock(&p->lock);
        if (why[0])
            pool_fail(p, why);
        p->busy_ns += b->busy_ns;
        b->state = B_FREE;
        p->append_seq++;
        p->appending = 0;
        pthread_cond_broadcast(&p->done);
    }
}

static void *worker_main(void *arg)
{
    wrr_drain *d = arg;
    wrr_pool *p = d->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        batch *b = NULL;
        for (unsigned i = 0; i < p->nbatches; i++)
            if (p->batches[i].state == B_QUEUED && (!b || p->batches[i].seq < b->seq))
                b = &p->batches[i];
        if (!b) {
            if (p->stop)
                break;
            pthread_cond_wait(&p->work, &p->lock);
            continue;
        }
        b->state = B_CONVERTING;
        int skip = p->failed;
        pthread_mutex_unlock(&p->lock);
        if (!skip)
            convert_batch(d, b);
        pthread_mutex_lock(&p->lock);
        b->state = B_DONE;
        append_ready(d);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pool_free(wrr_pool *p)
{
    for (unsigned i = 0; i < p->nbatches; i++) {
        free(p->batches[i].words);
        free(p->batches[i].hosts);
        free(p->batches[i].items);
        wr_encoded_free(p->batches[i].out);
    }
    free(p->batches);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}

static int pool_start(wrr_drain *d, unsigned workers)
{
    wrr_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->nbatches = 2 * workers + 2;
    p->batches = calloc(p->nbatches, sizeof *p->batches);
    p->threads = calloc(workers, sizeof *p->threads);
    int ok = p->batches && p->threads;
    for (unsigned i = 0; ok && i < p->nbatches; i++)
        ok = (p->batches[i].out = wr_encoded_new()) != NULL;
    if (!ok) {
        pool_free(p);
        return -1;
    }
    d->pool = p;
    for (; p->nthreads < workers; p->nthreads++)
        if (pthread_create(&p->threads[p->nthreads], NULL, worker_main, d) != 0)
            break;
    return p->nthreads ? 0 : -1;
}

/* Ends the workers once every queued batch is appended (or dropped). */
static void pool_stop(wrr_drain *d)
{
    wrr_pool *p = d->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    d->st.busy_ns += p->busy_ns;   /* the workers' conversion, with the drain thread's */
    pool_free(p);
    d->pool = NULL;
}

/* The drain thread takes over a worker's failure.  p->lock held. */
static void take_pool_failure(wrr_drain *d)
{
    if (d->pool->failed && !d->failed) {
        snprintf(d->error, sizeof d->error, "%s", d->pool->error);
        d->failed = 1;
    }
}

/* The batch the drain thread fills (waits for a free one), or NULL after
 * a failure. */
static batch *filling(wrr_drain *d)
{
    wrr_pool *p = d->pool;
    if (p->filling)
        return p->filling;
    pthread_mutex_lock(&p->lock);
    batch *b = NULL;
    for (;;) {
        take_pool_failure(d);
        if (d->failed)
            break;
        for (unsigned i = 0; i < p->nbatches && !b; i++)
            if (p->batches[i].state == B_FREE)
                b = &p->batches[i];
        if (b)
            break;
        pthread_cond_wait(&p->done, &p->lock);
    }
    if (b)
        b->state = B_FILLING;
    pthread_mutex_unlock(&p->lock);
    if (b) {
        b->nwords = b->nhosts = b->nitems = 0;
        b->flush_after = 0;
        p->filling = b;
    }
    return b;
}

/* Queues the batch being filled, if any. */
static void submit(wrr_drain *d, int flush_after)
{
    wrr_pool *p = d->pool;
    batch *b = p->filling;
    if (!b)
        return;
    p->filling = NULL;
    b->flush_after = flush_after;
    pthread_mutex_lock(&p->lock);
    b->seq = p->next_seq++;
    b->state = B_QUEUED;
    pthread_cond_signal(&p->work);
    take_pool_failure(d);
    pthread_mutex_unlock(&p->lock);
}

/* Waits until every queued batch is appended.  0, or -1 after a failure. */
static int pool_wait(wrr_drain *d)
{
    wrr_pool *p = d->pool;
    submit(d, 0);
    pthread_mutex_lock(&p->lock);
    while (p->append_seq != p->next_seq)
        pthread_cond_wait(&p->done, &p->lock);
    take_pool_failure(d);
    pthread_mutex_unlock(&p->lock);
    return d->failed ? -1 : 0;
}

static batch_item *add_item(batch *b)
{
    if (grow((void **)&b->items, &b->cap_items, b->nitems + 1, sizeof *b->items))
        return NULL;
    return &b->items[b->nitems++];
}

/* A host event (or lost-events marker) in its place among the records. */
static int queue_host_event(wrr_drain *d, const wr_event *ev)
{
    batch *b = filling(d);
    if (!b)
        return -1;
    batch_item *it;
    if (grow((void **)&b->hosts, &b->cap_hosts, b->nhosts + 1, sizeof *b->hosts) ||
        !(it = add_item(b))) {
        fail(d, "%s (at ring position %llu)", "out of memory batching events", d->pos);
        return -1;
    }
    b->hosts[b->nhosts] = *ev;
    *it = (batch_item){.pos = d->pos, .off = (uint32_t)b->nhosts++};
    return 0;
}

/* Copies the words of the record at d->pos (n slots, header word w0 as
 * already read) out of the ring into w. */
static void copy_record(const wrr_drain *d, uint64_t w0, unsigned n, uint64_t *w)
{
    const uint64_t mask = (1ull << d->ring.log2cap) - 1;
    const uint64_t *slots = d->ring.slots;
    for (unsigned s = 0; s < n; s++) {
        uint64_t j = (d->pos + s) & mask;
        w[2 * s] = s ? __atomic_load_n(&slots[2 * j], __ATOMIC_RELAXED) : w0;
        w[2 * s + 1] = __atomic_load_n(&slots[2 * j + 1], __ATOMIC_RELAXED);
    }
}

/* The launch a record (its w2) belongs to: the open launch for tag 0, else
 * the group member opened with the tag; 0 with *why set when none is. */
static uint32_t record_launch(const wrr_drain *d, uint64_t w2, const char **why)
{
    unsigned tag = WRR_W2_TAG(w2);
    if (!tag)
        return d->launch;
    if (tag <= d->group_n && d->group[tag - 1])
        return d->group[tag - 1];
    *why = "its launch tag names no open launch of the group";
    return 0;
}

/* Copies the record at d->pos (n slots) out of the ring into the batch. */
static int queue_record(wrr_drain *d, uint64_t w0, unsigned n)
{
    batch *b = filling(d);
    if (!b)
        return -1;
    batch_item *it;
    if (grow((void **)&b->words, &b->cap_words, b->nwords + 2 * n, sizeof *b->words) ||
        !(it = add_item(b))) {
        fail(d, "%s (at ring position %llu)", "out of memory batching records", d->pos);
        return -1;
    }
    uint64_t *w = b->words + b->nwords;
    copy_record(d, w0, n, w);
    const char *why = NULL;
    uint32_t launch = record_launch(d, w[2], &why);
    if (why) {
        b->nitems--;
        fail(d, "corrupt ring record (%s) at position %llu", why, d->pos);
        return -1;
    }
    *it = (batch_item){.pos = d->pos, .off = (uint32_t)b->nwords, .nwords = 2 * n,
                       .launch = launch, .site = resolve_site(d, w[3])};
    b->nwords += 2 * n;
    if (b->nitems >= BATCH_RECORDS || b->nwords >= BATCH_WORDS)
        submit(d, 0);
    return 0;
}

int wrr_drain_init(wrr_drain *d, const wrr_ring *ring, const wrr_sink *sink,
                   const wrr_drain_options *opts)
{
    memset(d, 0, sizeof *d);
    if (!ring || !ring->slots || !ring->ctl || ring->log2cap < WRR_MIN_LOG2_CAP ||
        ring->log2cap > WRR_MAX_LOG2_CAP || !sink || !sink->event)
        return -1;
    d->ring = *ring;
    d->sink = *sink;
    d->stop_at = WRR_END_UNKNOWN;
    if (opts)
        d->opt = *opts;
    if (!d->opt.flush_events)
        d->opt.flush_events = 65536;
    if (!d->opt.flush_ns)
        d->opt.flush_ns = 200000000u;
    if (!d->opt.now_ns)
        d->opt.now_ns = wrr_monotonic_ns;
    d->pos = __atomic_load_n(&ring->ctl->tail, __ATOMIC_ACQUIRE);
    d->dropped_seen = __atomic_load_n(&ring->ctl->dropped_records, __ATOMIC_ACQUIRE);
    d->last_flush_ns = d->opt.now_ns();
    d->site_cap = 256;
    d->sites = calloc(d->site_cap, sizeof *d->sites);
    d->poll_sleep_ns = 50000;
    if (!d->sites)
        return -1;
    pthread_mutex_init(&d->qlock, NULL);
    pthread_cond_init(&d->qcond, NULL);
    if (d->opt.workers && (!d->sink.encoded || pool_start(d, d->opt.workers) != 0)) {
        wrr_drain_destroy(d);
        return -1;
    }
    return 0;
}

void wrr_drain_destroy(wrr_drain *d)
{
    if (d->pool) {
        if (d->pool->filling) {   /* never queued: nothing to append */
            d->pool->filling->state = B_FREE;
            d->pool->filling = NULL;
        }
        pool_stop(d);
    }
    wrr_qnode *n = d->qhead;
    while (n) {
        wrr_qnode *next = n->next;
        free(n);
        n = next;
    }
    d->qhead = d->qtail = NULL;
    free(d->sites);
    d->sites = NULL;
    free(d->group);
    d->group = NULL;
    d->group_cap = d->group_n = 0;
    pthread_mutex_destroy(&d->qlock);
    pthread_cond_destroy(&d->qcond);
}

/* ---- sink wrappers -------------------------------------------------------- */

static int do_flush(wrr_drain *d)
{
    if (d->pool) {   /* after the events before it, by the appender */
        if (!filling(d))
            return -1;
        submit(d, 1);
    } else if (d->sink.flush && d->sink.flush(d->sink.ctx) != 0) {
        fail(d, "%s (at ring position %llu)", "the trace writer failed to flush", d->pos);
        return -1;
    }
    d->st.flushes++;
    d->since_flush = 0;
    d->last_flush_ns = d->opt.now_ns();
    return 0;
}

static int emit(wrr_drain *d, const wr_event *ev)
{
    if (d->pool) {
        if (queue_host_event(d, ev) != 0)
            return -1;
    } else if (d->sink.event(d->sink.ctx, ev) != 0) {
        const char *why = d->sink.error ? d->sink.error(d->sink.ctx) : NULL;
        char what[400];
        snprintf(what, sizeof what, "the trace writer rejected the %s event%s%s",
                 wr_event_kind_name(ev->kind), why && *why ? ": " : "", why ? why : "");
        fail(d, "%s (at ring position %llu)", what, d->pos);
        return -1;
    }
    if (ev->kind == WR_EV_LOST) {
        d->st.lost_records += ev->u.lost.count;
        d->st.lost_events_emitted++;
    }
    if (++d->since_flush >= d->opt.flush_events)
        return do_flush(d);
    return 0;
}

/* ---- sites ------------------------------------------------------------------ */

static size_t site_slot(const wrr_drain *d, uint64_t addr)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (d->site_cap - 1);
    while (d->sites[i].addr && d->sites[i].addr != addr)
        i = (i + 1) & (d->site_cap - 1);
    return i;
}

static int read_string(wrr_drain *d, uint64_t addr, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    if (!addr)
        return 0;
    while (len + 1 < cap) {
        char buf[64];
        size_t want = sizeof buf;
        if (want > cap - 1 - len)
            want = cap - 1 - len;
        long got = d->opt.read_mem(d->opt.read_mem_ctx, addr + len, buf, want);
        if (got <= 0)
            break;
        for (long i = 0; i < got; i++) {
            out[len++] = buf[i];
            if (!buf[i])
                return 0;
        }
    }
    out[len] = 0;
    return 0;
}

static uint32_t resolve_site(wrr_drain *d, uint64_t addr)
{
    if (!addr || !d->opt.read_mem || !d->sink.site)
        return 0;
    size_t i = site_slot(d, addr);
    if (d->sites[i].addr == addr)
        return d->sites[i].id;
    if (2 * (d->site_count + 1) > d->site_cap) {
        size_t ncap = d->site_cap * 2;
        wrr_site_entry *n = calloc(ncap, sizeof *n), *old = d->sites;
        if (!n)
            return 0;
        size_t ocap = d->site_cap;
        d->sites = n;
        d->site_cap = ncap;
        for (size_t k = 0; k < ocap; k++)
            if (old[k].addr)
                d->sites[site_slot(d, old[k].addr)] = old[k];
        free(old);
        i = site_slot(d, addr);
    }
    /* the descriptor: magic, line, file pointer, function pointer */
    unsigned char raw[24];
    uint32_t id = 0;
    if (d->opt.read_mem(d->opt.read_mem_ctx, addr, raw, sizeof raw) == (long)sizeof raw) {
        uint32_t magic, line;
        uint64_t file, func;
        memcpy(&magic, raw, 4);
        memcpy(&line, raw + 4, 4);
        memcpy(&file, raw + 8, 8);
        memcpy(&func, raw + 16, 8);
        if (magic == WRR_SITE_MAGIC) {
            char fbuf[512], nbuf[256];
            read_string(d, file, fbuf, sizeof fbuf);
            read_string(d, func, nbuf, sizeof nbuf);
            id = d->sink.site(d->sink.ctx, fbuf, line, nbuf, 0);
        }
    }
    d->sites[i].addr = addr;
    d->sites[i].id = id;
    d->site_count++;
    d->st.sites++;
    return id;
}

/* ---- ring -------------------------------------------------------------------- */

static void check_lost(wrr_drain *d)
{
    uint64_t dropped = __atomic_load_n(&d->ring.ctl->dropped_records, __ATOMIC_ACQUIRE);
    if (dropped > d->dropped_seen) {
        wr_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = WR_EV_LOST;
        ev.u.lost.count = dropped - d->dropped_seen;
        ev.u.lost.launch = d->launch;
        ev.u.lost.block = UINT32_MAX;
        d->dropped_seen = dropped;
        d->st.lost_lanes = __atomic_load_n(&d->ring.ctl->dropped_lanes, __ATOMIC_ACQUIRE);
        emit(d, &ev);
    }
}

static int host_pending(wrr_drain *d)
{
    return __atomic_load_n(&d->posted, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&d->processed, __ATOMIC_ACQUIRE);
}

long wrr_drain_poll(wrr_drain *d, size_t max_records)
{
    if (d->failed)
        return -1;
    d->st.polls++;
    check_lost(d);
    const uint64_t cap = 1ull << d->ring.log2cap, mask = cap - 1;
    uint64_t *slots = d->ring.slots;
    uint64_t words[2 * WRR_MAX_SLOTS];
    uint64_t lanes[32];
    uint64_t start = d->pos;
    long done = 0;
    uint64_t t0 = 0;
    while ((size_t)done < max_records && !d->failed) {
        uint64_t idx = d->pos & mask;
        uint64_t w0 = __atomic_load_n(&slots[2 * idx], __ATOMIC_ACQUIRE);
        if (WRR_W0_TAG(w0) != WRR_TAG(d->pos, d->ring.log2cap)) {
            if (w0 != 0)
                fail(d, "%s at ring position %llu", "a record's commit tag is from another lap", d->pos);
            break;
        }
        if (!d->in_host && host_pending(d))
            break;          /* host events first: a posted close bounds the open launch
                               (its records end where the next launch's begin), a posted
                               KERNEL_LAUNCH opens the launch these records are of */
        if (d->pos >= d->stop_at)
            break;          /* the next launch's: its close bounds this one */
        if (!done)
            t0 = d->opt.now_ns();
        const char *why = wrr_check_header(w0);
        if (why) {
            fail(d, "corrupt ring record (%s) at position %llu", why, d->pos);
            break;
        }
        unsigned n = WRR_W0_NSLOTS(w0);
        if (d->pool) {
            if (queue_record(d, w0, n) != 0)
                break;
            if (++d->since_flush >= d->opt.flush_events && do_flush(d) != 0)
                break;
        } else {
            copy_record(d, w0, n, words);
            wr_event ev;
            uint32_t launch = record_launch(d, words[2], &why);
            if (why || wrr_convert(words, 2 * n, launch, resolve_site(d, words[3]), &ev, lanes,
                                   &why) != 0) {
                fail(d, "corrupt ring record (%s) at position %llu", why, d->pos);
                break;
            }
            if (emit(d, &ev) != 0)
                break;
        }
        /* clear the consumed slots: a stale payload word must never look
         * like a committed header on a later lap */
        for (unsigned s = 0; s < n; s++) {
            uint64_t j = (d->pos + s) & mask;
            __atomic_store_n(&slots[2 * j], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&slots[2 * j + 1], 0, __ATOMIC_RELAXED);
        }
        d->pos += n;
        d->st.records++;
        d->st.slots += n;
        d->st.device_events++;
        done++;
    }
    if (d->pool)
        submit(d, 0);
    if (d->pos != start) {
        __atomic_store_n(&d->ring.ctl->tail, d->pos, __ATOMIC_RELEASE);
        if (!d->in_host)   /* else the host event's time counts it */
            d->st.busy_ns += d->opt.now_ns() - t0;
    }
    return d->failed ? -1 : done;
}

static int drain_all(wrr_drain *d)
{
    long n;
    while ((n = wrr_drain_poll(d, 1u << 16)) > 0)
        ;
    return n < 0 ? -1 : 0;
}

/* ---- host events ----------------------------------------------------------- */

static void queue_event(wrr_drain *d, const wr_event *ev, uint64_t end_pos, uint32_t tag)
{
    wrr_qnode *n = malloc(sizeof *n);
    pthread_mutex_lock(&d->qlock);
    if (!n) {
        d->failed = 1;
        snprintf(d->error, sizeof d->error, "out of memory queueing a host event");
        pthread_mutex_unlock(&d->qlock);
        return;
    }
    n->next = NULL;
    n->ev = *ev;
    n->end_pos = end_pos;
    n->tag = tag;
    if (d->qtail)
        d->qtail->next = n;
    else
        d->qhead = n;
    d->qtail = n;
    __atomic_add_fetch(&d->posted, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&d->qlock);
}

void wrr_drain_post(wrr_drain *d, const wr_event *ev)
{
    queue_event(d, ev, WRR_END_UNKNOWN, 0);
}

void wrr_drain_post_tagged_launch(wrr_drain *d, const wr_event *launch_ev, uint32_t tag)
{
    queue_event(d, launch_ev, WRR_END_UNKNOWN, tag);
}

#define WRR_Q_CLOSE 0    /* queue-only kind: close a launch silently */
#define WRR_GROUP_CLOSE UINT32_MAX   /* a close's launch: the whole group */

void wrr_drain_post_group_close(wrr_drain *d, uint64_t end_pos)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WRR_Q_CLOSE;
    ev.u.kernel_end.launch = WRR_GROUP_CLOSE;
    queue_event(d, &ev, end_pos, 0);
}

/* Opens group member `tag` for the launch of ev (processed in order). */
static int open_member(wrr_drain *d, const wr_event *ev, uint32_t tag)
{
    if (tag > WRR_MAX_TAG || ev->kind != WR_EV_KERNEL_LAUNCH) {
        fail(d, "%s (tag %llu)", "a launch group's member is not a kernel launch of a valid tag",
             tag);
        return -1;
    }
    if (tag > d->group_cap) {
        uint32_t cap = d->group_cap ? d->group_cap : 16;
        while (cap < tag)
            cap *= 2;
        uint32_t *g = realloc(d->group, cap * sizeof *g);
        if (!g) {
            fail(d, "%s (tag %llu)", "out of memory opening a launch group's member", tag);
            return -1;
        }
        memset(g + d->group_cap, 0, (cap - d->group_cap) * sizeof *g);
        d->group = g;
        d->group_cap = cap;
    }
    if (d->group[tag - 1]) {
        fail(d, "%s (tag %llu)", "a launch group's tag opened twice before the group's close",
             tag);
        return -1;
    }
    if (emit(d, ev) != 0)
        return -1;
    d->group[tag - 1] = ev->u.launch.launch;
    if (tag > d->group_n)
        d->group_n = tag;
    return 0;
}

void wrr_drain_post_close(wrr_drain *d, uint32_t launch, uint64_t end_pos)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WRR_Q_CLOSE;
    ev.u.kernel_end.launch = launch;
    queue_event(d, &ev, end_pos, 0);
}

static int process_host(wrr_drain *d, const wr_event *ev, uint64_t end_pos, uint32_t tag)
{
    if (ev->kind == WRR_Q_CLOSE) {
        d->stop_at = end_pos;
        int rc = drain_all(d);
        d->stop_at = WRR_END_UNKNOWN;
        if (rc != 0)
            return -1;
        check_lost(d);
        if (ev->u.kernel_end.launch == WRR_GROUP_CLOSE) {
            if (d->group_n)
                memset(d->group, 0, d->group_n * sizeof *d->group);
            d->group_n = 0;
        } else if (d->launch == ev->u.kernel_end.launch) {
            d->launch = 0;
        }
        return 0;
    }
    d->st.host_events++;
    if (tag)
        return open_member(d, ev, tag);
    switch (ev->kind) {
    case WR_EV_KERNEL_LAUNCH:
        if (d->launch && drain_all(d) != 0)   /* a launch never closed: keep order */
            return -1;
        if (emit(d, ev) != 0)
            return -1;
        d->launch = ev->u.launch.launch;
        return 0;
    case WR_EV_KERNEL_END:
        /* an open launch's records come first; a closed one's are out
         * already, and what the ring holds now is a later launch's */
        if (d->launch == ev->u.kernel_end.launch && drain_all(d) != 0)
            return -1;
        check_lost(d);
        if (emit(d, ev) != 0)
            return -1;
        if (d->launch == ev->u.kernel_end.launch)
            d->launch = 0;
        return 0;
    default:
        return emit(d, ev);
    }
}

static long process_queue(wrr_drain *d)
{
    pthread_mutex_lock(&d->qlock);
    wrr_qnode *n = d->qhead;
    d->qhead = d->qtail = NULL;
    pthread_mutex_unlock(&d->qlock);
    long count = 0;
    while (n) {
        wrr_qnode *next = n->next;
        if (!d->failed) {
            uint64_t t0 = d->opt.now_ns();
            d->in_host = 1;
            process_host(d, &n->ev, n->end_pos, n->tag);
            d->in_host = 0;
            d->st.busy_ns += d->opt.now_ns() - t0;
        }
        free(n);
        n = next;
        count++;
        pthread_mutex_lock(&d->qlock);
        __atomic_add_fetch(&d->processed, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&d->qcond);
        pthread_mutex_unlock(&d->qlock);
    }
    return count;
}

long wrr_drain_step(wrr_drain *d)
{
    long work = process_queue(d);
    long n = wrr_drain_poll(d, 4096);
    if (n < 0)
        return -1;
    work += n;
    if (!work) {
        d->st.idle_polls++;
        if (d->since_flush && d->opt.now_ns() - d->last_flush_ns >= d->opt.flush_ns &&
            do_flush(d) != 0)
            return -1;
    }
    return d->failed ? -1 : work;
}

int wrr_drain_finish(wrr_drain *d)
{
    process_queue(d);
    if (drain_all(d) != 0)
        return -1;
    check_lost(d);
    if (d->pool && pool_wait(d) != 0)
        return -1;
    if (d->failed)
        return -1;
    if (d->sink.finish && d->sink.finish(d->sink.ctx) != 0) {
        fail(d, "%s (at ring position %llu)", "the trace writer failed at the end of the stream",
             d->pos);
        return -1;
    }
    pool_stop(d);   /* every batch is appended: the last flush is the sink's, now */
    return do_flush(d);
}

/* ---- thread ------------------------------------------------------------------ */

static void *drain_main(void *arg)
{
    wrr_drain *d = arg;
    while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
        long w = wrr_drain_step(d);
        if (w < 0) {
            /* keep acknowledging host events so that nobody waits forever */
            process_queue(d);
        }
        if (w <= 0) {
            struct timespec ts = {0, (long)d->poll_sleep_ns};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int wrr_drain_start_thread(wrr_drain *d)
{
    d->stop = 0;
    if (pthread_create(&d->thread, NULL, drain_main, d) != 0)
        return -1;
    d->thread_running = 1;
    return 0;
}

void wrr_drain_wait_processed(wrr_drain *d)
{
    pthread_mutex_lock(&d->qlock);
    uint64_t target = d->posted;
    while (d->thread_running && d->processed < target)
        pthread_cond_wait(&d->qcond, &d->qlock);
    pthread_mutex_unlock(&d->qlock);
}

int wrr_drain_stop_thread(wrr_drain *d)
{
    if (!d->thread_running)
        return wrr_drain_finish(d);
    __atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
    pthread_join(d->thread, NULL);
    d->thread_running = 0;
    return wrr_drain_finish(d);
}

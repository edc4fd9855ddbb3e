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
    return 0;
}

void wrr_drain_destroy(wrr_drain *d)
{
    wrr_qnode *n = d->qhead;
    while (n) {
        wrr_qnode *next = n->next;
        free(n);
        n = next;
    }
    d->qhead = d->qtail = NULL;
    free(d->sites);
    d->sites = NULL;
    pthread_mutex_destroy(&d->qlock);
    pthread_cond_destroy(&d->qcond);
}

/* ---- sink wrappers -------------------------------------------------------- */

static int do_flush(wrr_drain *d)
{
    if (d->sink.flush && d->sink.flush(d->sink.ctx) != 0) {
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
    if (d->sink.event(d->sink.ctx, ev) != 0) {
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
        for (unsigned s = 0; s < n; s++) {
            uint64_t j = (d->pos + s) & mask;
            words[2 * s] = s ? __atomic_load_n(&slots[2 * j], __ATOMIC_RELAXED) : w0;
            words[2 * s + 1] = __atomic_load_n(&slots[2 * j + 1], __ATOMIC_RELAXED);
        }
        wr_event ev;
        if (wrr_convert(words, 2 * n, d->launch, resolve_site(d, words[3]), &ev, lanes, &why) != 0) {
            fail(d, "corrupt ring record (%s) at position %llu", why, d->pos);
            break;
        }
        if (emit(d, &ev) != 0)
            break;
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

static void queue_event(wrr_drain *d, const wr_event *ev, uint64_t end_pos)
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
    queue_event(d, ev, WRR_END_UNKNOWN);
}

#define WRR_Q_CLOSE 0    /* queue-only kind: close a launch silently */

void wrr_drain_post_close(wrr_drain *d, uint32_t launch, uint64_t end_pos)
{
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WRR_Q_CLOSE;
    ev.u.kernel_end.launch = launch;
    queue_event(d, &ev, end_pos);
}

static int process_host(wrr_drain *d, const wr_event *ev, uint64_t end_pos)
{
    if (ev->kind == WRR_Q_CLOSE) {
        d->stop_at = end_pos;
        int rc = drain_all(d);
        d->stop_at = WRR_END_UNKNOWN;
        if (rc != 0)
            return -1;
        check_lost(d);
        if (d->launch == ev->u.kernel_end.launch)
            d->launch = 0;
        return 0;
    }
    d->st.host_events++;
    switch (ev->kind) {
    case WR_EV_KERNEL_LAUNCH:
        if (d->launch && drain_all(d) != 0)   /* a launch never closed: keep order */
            return -1;
        if (emit(d, ev) != 0)
            return -1;
        d->launch = ev->u.launch.launch;
        return 0;
    case WR_EV_KERNEL_END:
        if (drain_all(d) != 0)
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
            process_host(d, &n->ev, n->end_pos);
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
    if (d->failed)
        return -1;
    if (d->sink.finish && d->sink.finish(d->sink.ctx) != 0) {
        fail(d, "%s (at ring position %llu)", "the trace writer failed at the end of the stream",
             d->pos);
        return -1;
    }
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

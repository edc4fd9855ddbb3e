/*
 * .wrt -> canonical text form (formats/TEXT.md, "Canonical form").
 *
 * Streams the trace batch by batch.  Catalog entries are printed at the
 * start of the batch with which they arrived, and a "flush" line separates
 * batches, so that asm reproduces the chunk structure exactly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_priv.h"

typedef struct D {
    FILE *out;
    const wr_catalog *cat;
    uint32_t nkernels, nsites, nallocs, nmodules;   /* printed so far */
    char **alloc_label;                             /* index id-1 */
    size_t alloc_label_cap;
    wr_text_map labels_used;    /* IDENT labels given so far */
    wr_text_map kernel_latest;  /* name -> newest kernel id with that name */
    wr_text_map site_latest;    /* site key -> newest site id */
    int oom;
    size_t too_long;            /* canonical length of a string the text form cannot hold */
} D;

/* A name the text form cannot carry is a dump error (wr_text_dump reports
 * it), never a line the assembler would refuse. */
static void put_string(D *d, const char *s)
{
    FILE *out = d->out;
    size_t canon = wr_text_string_len(s);
    if (canon > WR_TEXT_MAX_TOKEN) {
        if (!d->too_long)
            d->too_long = canon;
        fputs("\"\"", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (*c < 0x20 || *c > 0x7e)
                fprintf(out, "\\x%02x", *c);
            else
                fputc(*c, out);
        }
    }
    fputc('"', out);
}

/* An identifier short enough to be written bare. */
static int bare_name(const char *s)
{
    return wr_text_is_ident(s) && strlen(s) <= WR_TEXT_MAX_TOKEN;
}

/* "_a" followed only by digits: reserved so that %N fallbacks stay unique. */
static int reserved_label(const char *s)
{
    if (s[0] != '_' || s[1] != 'a' || !s[2])
        return 0;
    for (s += 2; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static int plain_site_text(const char *s, int is_file)
{
    if (is_file && (!*s || *s == '%'))
        return 0;
    if (strlen(s) > 1024)
        return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c > 0x7e || c == '"' || c == '{' || c == '}' || (is_file && c == ':'))
            return 0;
    }
    return 1;
}

static void print_catalog(D *d)
{
    const wr_catalog *c = d->cat;
    uint32_t n = wr_catalog_kernel_count(c);
    for (uint32_t id = d->nkernels + 1; id <= n; id++) {
        const wr_kernel *k = wr_catalog_kernel(c, id);
        const char *name = k && k->name ? k->name : "";
        fprintf(d->out, "def kernel %%%u ", id);
        if (bare_name(name))
            fputs(name, d->out);
        else
            put_string(d, name);
        fputc('\n', d->out);
        if (wr_text_map_put(&d->kernel_latest, name, id))
            d->oom = 1;
    }
    d->nkernels = n;
    n = wr_catalog_alloc_count(c);
    if (n > d->alloc_label_cap) {
        size_t nc = d->alloc_label_cap ? d->alloc_label_cap : 64;
        while (nc < n)
            nc *= 2;
        char **nl = realloc(d->alloc_label, nc * sizeof(*nl));
        if (!nl) {
            d->oom = 1;
            return;
        }
        memset(nl + d->alloc_label_cap, 0, (nc - d->alloc_label_cap) * sizeof(*nl));
        d->alloc_label = nl;
        d->alloc_label_cap = nc;
    }
    for (uint32_t id = d->nallocs + 1; id <= n; id++) {
        const wr_alloc *a = wr_catalog_alloc(c, id);
        const char *name = a && a->name ? a->name : "";
        char label[32];
        const char *lab = label;
        if (bare_name(name) && !reserved_label(name) && !wr_text_map_get(&d->labels_used, name)) {
            lab = name;
            if (wr_text_map_put(&d->labels_used, name, id))
                d->oom = 1;
        } else {
            snprintf(label, sizeof(label), "%%%u", id);
        }
        d->alloc_label[id - 1] = strdup(lab);
        if (!d->alloc_label[id - 1])
            d->oom = 1;
        fprintf(d->out, "def alloc %s %s %" PRIu64 " at 0x%" PRIx64, lab,
                wr_space_name(a ? a->space : 0), a ? a->size : 0, a ? a->base : 0);
        if (lab == label && *name) {
            fputs(" name=", d->out);
            put_string(d, name);
        }
        fputc('\n', d->out);
    }
    d->nallocs = n;
    n = wr_catalog_site_count(c);
    for (uint32_t id = d->nsites + 1; id <= n; id++) {
        const wr_site *s = wr_catalog_site(c, id);
        const char *file = s && s->file ? s->file : "", *func = s && s->function ? s->function : "";
        fprintf(d->out, "def site %%%u ", id);
        put_string(d, file);
        fprintf(d->out, " %u ", s ? s->line : 0);
        put_string(d, func);
        fprintf(d->out, " pc=0x%" PRIx64 "\n", s ? s->pc : 0);
        char key[2 * WR_TEXT_MAX_TOKEN + 32];
        wr_text_site_key(key, sizeof(key), file, s ? s->line : 0, func);
        if (wr_text_map_put(&d->site_latest, key, id))
            d->oom = 1;
    }
    d->nsites = n;
    n = wr_catalog_module_count(c);
    for (uint32_t id = d->nmodules + 1; id <= n; id++) {
        const wr_module *m = wr_catalog_module(c, id);
        uint64_t size = m ? m->size : 0;
        fprintf(d->out, "def module %%%u ", id);
        put_string(d, m && m->name ? m->name : "");
        fprintf(d->out, " %" PRIu64 "\n", size);
        for (uint64_t off = 0; off < size; off += WR_TEXT_IMAGE_LINE) {
            fputs("image ", d->out);
            for (uint64_t i = off; i < size && i < off + WR_TEXT_IMAGE_LINE; i++)
                fprintf(d->out, "%02x", m->image[i]);
            fputc('\n', d->out);
        }
    }
    d->nmodules = n;
}

/* Writes an address: symbolic inside a known allocation of `space`. */
static void put_addr(D *d, uint8_t space, uint64_t addr, unsigned size)
{
    const wr_alloc *a = wr_catalog_find_alloc(d->cat, space, addr);
    if (a && a->id >= 1 && a->id <= d->nallocs && d->alloc_label[a->id - 1] && addr >= a->base &&
        addr - a->base < a->size) {
        uint64_t off = addr - a->base;
        const char *lab = d->alloc_label[a->id - 1];
        if (size && off % size == 0)
            fprintf(d->out, "%s[%" PRIu64 "]", lab, off / size);
        else if (off == 0)
            fputs(lab, d->out);
        else
            fprintf(d->out, "%s+0x%" PRIx64, lab, off);
        return;
    }
    fprintf(d->out, "0x%" PRIx64, addr);
}

/* Writes one lane address of an access: a dsmem one as its owner block and
 * its offset, symbolic as the owner's shared allocations make it. */
static void put_lane_addr(D *d, const wr_access *a, uint64_t addr)
{
    if (a->space != WR_SPACE_DSMEM) {
        put_addr(d, a->space, addr, a->size);
        return;
    }
    fprintf(d->out, "b%u:", wr_dsmem_block(addr));
    put_addr(d, WR_SPACE_SHARED, wr_dsmem_offset(addr), a->size);
}

static void put_site(D *d, uint32_t id)
{
    if (!id)
        return;
    const wr_site *s = wr_catalog_site(d->cat, id);
    if (s) {
        const char *file = s->file ? s->file : "", *func = s->function ? s->function : "";
        char key[2 * WR_TEXT_MAX_TOKEN + 32];
        wr_text_site_key(key, sizeof(key), file, s->line, func);
        if (plain_site_text(file, 1) && plain_site_text(func, 0) &&
            wr_text_map_get(&d->site_latest, key) == id) {
            fprintf(d->out, " @%s:%u", file, s->line);
            if (*func)
                fprintf(d->out, ":%s", func);
            return;
        }
    }
    fprintf(d->out, " @%%%u", id);
}

static void put_thread(D *d, uint32_t launch, uint32_t block, uint32_t warp, uint32_t mask)
{
    fprintf(d->out, " L%u b%u w%u", launch, block, warp);
    if (mask != WR_FULL_MASK)
        fprintf(d->out, " mask=0x%x", mask);
}

/* " stream=N": a non-blocking stream's id in hex, where its flag shows
 * (0x80000001; TEXT.md) */
static void put_stream(FILE *o, uint32_t stream)
{
    if (wr_stream_non_blocking(stream))
        fprintf(o, " stream=0x%x", stream);
    else
        fprintf(o, " stream=%u", stream);
}

static void put_dim(FILE *out, const char *key, const uint32_t v[3])
{
    fprintf(out, " %s%u,%u,%u", key, v[0], v[1], v[2]);
}

static void put_event(D *d, const wr_event *ev)
{
    FILE *o = d->out;
    switch (ev->kind) {
    case WR_EV_ACCESS: {
        const wr_access *a = &ev->u.access;
        fputs(wr_mem_op_name(a->op), o);
        if (a->op == WR_OP_ATOMIC_RMW || a->atomic_op != WR_AOP_NONE)
            fprintf(o, ".%s", wr_atomic_op_name(a->atomic_op));
        fprintf(o, ".%s", wr_order_name(a->order));
        if (a->scope != WR_SCOPE_NONE)
            fprintf(o, ".%s", wr_scope_name(a->scope));
        fprintf(o, ".%s.%u", wr_space_name(a->space), a->size);
        put_thread(d, a->launch, a->block, a->warp, a->active_mask);
        fputc(' ', o);
        /* A strided dsmem access whose lane 0 is outside the active lanes'
         * owner block (a recorder's base for a warp whose first lanes are
         * inactive) has no "bN:ADDR stride=" form: its lanes are written
         * one by one, the same addresses as a vector. */
        int by_lane = a->addr_mode == WR_ADDR_VECTOR ||
                      (a->space == WR_SPACE_DSMEM && a->addr_mode == WR_ADDR_STRIDED &&
                       !wr_text_dsmem_strided_fits(a));
        if (by_lane) {
            fputc('{', o);
            int first = 1;
            for (unsigned l = 0; l < WR_WARP_SIZE; l++) {
                if (!(a->active_mask >> l & 1))
                    continue;
                if (!first)
                    fputc(' ', o);
                first = 0;
                put_lane_addr(d, a, wr_access_lane_addr(a, l));
            }
            fputc('}', o);
        } else {
            put_lane_addr(d, a, a->base);
            if (a->addr_mode == WR_ADDR_STRIDED)
                fprintf(o, " stride=%" PRId64, a->stride);
        }
        if (a->atomic_op == WR_AOP_CAS || a->cas_success)
            fprintf(o, " cas=0x%x", a->cas_success);
        break;
    }
    case WR_EV_BARRIER: {
        const wr_barrier *b = &ev->u.barrier;
        if (b->scope == WR_BAR_MBARRIER) {
            /* the reader lets only INIT, ARRIVE, ARRIVE_RELAXED and WAIT
             * through for an mbarrier; its address is an 8-byte object's
             * in shared memory, symbolic as a shared access of 8 bytes
             * would be */
            fputs(b->mode == WR_BARMODE_INIT             ? "mbarrier.init"
                  : b->mode == WR_BARMODE_WAIT           ? "mbarrier.wait"
                  : b->mode == WR_BARMODE_ARRIVE_RELAXED ? "mbarrier.arrive.relaxed"
                                                         : "mbarrier.arrive",
                  o);
            put_thread(d, b->launch, b->block, b->warp, b->active_mask);
            fputc(' ', o);
            put_addr(d, WR_SPACE_SHARED, b->barrier_id, 8);
            /* an arrive's count= only where the record has one: expected 0
             * (one arrival) and 1 are different bytes */
            if (b->mode == WR_BARMODE_WAIT)
                fprintf(o, " parity=%u", b->expected);
            else if (b->mode == WR_BARMODE_INIT || b->expected)
                fprintf(o, " count=%u", b->expected);
            break;
        }
        if (b->scope == WR_BAR_BLOCK) {
            /* the reader lets only SYNC and ARRIVE through for a block */
            fputs(b->mode == WR_BARMODE_ARRIVE ? "bar.arrive" : "barrier", o);
            put_thread(d, b->launch, b->block, b->warp, b->active_mask);
            fprintf(o, " id=%u expected=%u", b->barrier_id, b->expected);
            break;
        }
        /* no id=: the reader let no id through for these */
        fputs(b->scope == WR_BAR_CLUSTER ? "barrier.cluster" : "barrier.grid", o);
        /* INIT is an mbarrier's only: the reader let none through here */
        static const char *const mode_suffix[] = {
            [WR_BARMODE_SYNC] = "", [WR_BARMODE_ARRIVE] = ".arrive",
            [WR_BARMODE_ARRIVE_RELAXED] = ".arrive.relaxed", [WR_BARMODE_WAIT] = ".wait",
            [WR_BARMODE_INIT] = "",
        };
        fputs(b->mode <= WR_BARMODE_MAX ? mode_suffix[b->mode] : "", o);
        put_thread(d, b->launch, b->block, b->warp, b->active_mask);
        /* nor expected= on a wait: it counts no thread (expected is 0) */
        if (b->mode != WR_BARMODE_WAIT)
            fprintf(o, " expected=%u", b->expected);
        break;
    }
    case WR_EV_WARP_SYNC: {
        const wr_warp_sync *w = &ev->u.warp_sync;
        fputs("warpsync", o);
        put_thread(d, w->launch, w->block, w->warp, w->mask);
        break;
    }
    case WR_EV_FENCE: {
        const wr_fence *f = &ev->u.fence;
        fprintf(o, "fence.%s.%s", f->order == WR_ORDER_ACQ_REL ? "acq_rel" : "sc", wr_scope_name(f->scope));
        put_thread(d, f->launch, f->block, f->warp, f->active_mask);
        break;
    }
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT:
        fprintf(o, "%s L%u b%u", ev->kind == WR_EV_BLOCK_ENTER ? "block_enter" : "block_exit",
                ev->u.block.launch, ev->u.block.block);
        break;
    case WR_EV_KERNEL_LAUNCH: {
        const wr_launch *l = &ev->u.launch;
        fprintf(o, "launch L%u ", l->launch);
        const wr_kernel *k = wr_catalog_kernel(d->cat, l->kernel);
        if (k && k->name && bare_name(k->name) && wr_text_map_get(&d->kernel_latest, k->name) == l->kernel)
            fputs(k->name, o);
        else if (k && k->name && k->name[0] && wr_text_map_get(&d->kernel_latest, k->name) == l->kernel)
            put_string(d, k->name);
        else
            fprintf(o, "%%%u", l->kernel);
        put_dim(o, "grid=", l->grid);
        put_dim(o, "block=", l->block_dim);
        put_dim(o, "cluster=", l->cluster);
        fprintf(o, " shared=%u", l->shared_bytes);
        put_stream(o, l->stream);
        break;
    }
    case WR_EV_KERNEL_END:
        fprintf(o, "kernel_end L%u", ev->u.kernel_end.launch);
        break;
    case WR_EV_EVENT_RECORD:
        fprintf(o, "event_record event=%u", ev->u.stream_event.event);
        put_stream(o, ev->u.stream_event.stream);
        break;
    case WR_EV_STREAM_WAIT:
        fputs("stream_wait", o);
        put_stream(o, ev->u.stream_event.stream);
        fprintf(o, " event=%u", ev->u.stream_event.event);
        break;
    case WR_EV_EVENT_SYNC:
        fprintf(o, "event_sync event=%u", ev->u.stream_event.event);
        break;
    case WR_EV_STREAM_SYNC:
        fputs("stream_sync", o);
        put_stream(o, ev->u.stream_sync.stream);
        break;
    case WR_EV_DEVICE_SYNC:
        fputs("device_sync", o);
        break;
    case WR_EV_HOST_COPY: {
        const wr_host_copy *c = &ev->u.copy;
        fprintf(o, "copy.%s", wr_copy_kind_name(c->kind));
        int need_dst = c->kind != WR_COPY_D2H, need_src = c->kind == WR_COPY_D2H || c->kind == WR_COPY_D2D;
        if (need_dst || c->dst) {
            fputs(" dst=", o);
            put_addr(d, WR_SPACE_GLOBAL, c->dst, 0);
        }
        if (need_src || c->src) {
            fputs(" src=", o);
            put_addr(d, WR_SPACE_GLOBAL, c->src, 0);
        }
        fprintf(o, " bytes=%" PRIu64, c->bytes);
        put_stream(o, c->stream);
        if (c->async)
            fputs(" async", o);
        break;
    }
    case WR_EV_ALLOC:
    case WR_EV_FREE: {
        uint32_t id = ev->u.alloc.alloc;
        fputs(ev->kind == WR_EV_ALLOC ? "alloc " : "free ", o);
        if (id >= 1 && id <= d->nallocs && d->alloc_label[id - 1])
            fputs(d->alloc_label[id - 1], o);
        else
            fprintf(o, "%%%u", id);
        break;
    }
    case WR_EV_LOST:
        fprintf(o, "lost count=%" PRIu64 " launch=%u block=", ev->u.lost.count, ev->u.lost.launch);
        if (ev->u.lost.block == UINT32_MAX)
            fputc('*', o);
        else
            fprintf(o, "%u", ev->u.lost.block);
        break;
    default:
        fprintf(o, "# unknown event kind %u", ev->kind);
        break;
    }
    put_site(d, ev->site);
    fputc('\n', o);
}

static void put_header(D *d, const wr_header *h)
{
    FILE *o = d->out;
    fputs("producer ", o);
    put_string(d, h->producer ? h->producer : "");
    fputc(' ', o);
    put_string(d, h->producer_version ? h->producer_version : "");
    fputs("\ndevice ", o);
    put_string(d, h->device ? h->device : "");
    fprintf(o, "\nsm %u\nwarpsize %u\nclock %u\nhost ", h->sm_arch, h->warp_size, h->clock_khz);
    put_string(d, h->host ? h->host : "");
    fprintf(o, "\ntime %" PRId64 "\ncommand ", h->time_unix_ns);
    put_string(d, h->command ? h->command : "");
    fputc('\n', o);
}

static int catalog_grew(const D *d)
{
    return wr_catalog_kernel_count(d->cat) > d->nkernels || wr_catalog_site_count(d->cat) > d->nsites ||
           wr_catalog_alloc_count(d->cat) > d->nallocs || wr_catalog_module_count(d->cat) > d->nmodules;
}

int wr_text_dump(const char *path, FILE *out, wr_error *err)
{
    return wr_text_dump_window(path, out, 0, UINT64_MAX, NULL, err);
}

int wr_text_dump_window(const char *path, FILE *out, uint64_t from, uint64_t count,
                        uint64_t *truncated_at, wr_error *err)
{
    memset(err, 0, sizeof(*err));
    if (truncated_at)
        *truncated_at = UINT64_MAX;
    wr_reader *r = wr_reader_open(path, err);
    if (!r)
        return -1;
    bool window = from > 0 || count != UINT64_MAX;
    uint64_t end = count > UINT64_MAX - from ? UINT64_MAX : from + count;
    /* without a footer the seek declines and the loop below skips instead */
    if (from > 0 && wr_reader_seek(r, from, err) < 0) {
        wr_reader_close(r);
        return -1;
    }
    D d;
    memset(&d, 0, sizeof(d));
    d.out = out;
    d.cat = wr_reader_catalog(r);
    put_header(&d, wr_reader_header(r));
    if (window)
        fprintf(out, "# events %" PRIu64 " to %" PRIu64 " of %s only: a window, not a whole trace\n", from,
                end - 1, path);
    int rc = 0;
    uint64_t batches = 0;
    for (;;) {
        wr_batch b;
        int n = wr_reader_next(r, &b, err);
        if (n < 0) {
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        if (b.first_seq + b.count <= from) {   /* before the window (no footer to seek by) */
            print_catalog(&d);
            wr_batch_release(&b);
            continue;
        }
        if (batches++)
            fputs("flush\n", out);
        print_catalog(&d);
        bool past = false;
        for (size_t i = 0; i < b.count && !d.oom && !d.too_long; i++) {
            uint64_t seq = b.first_seq + i;
            if (seq < from)
                continue;
            if (seq >= end) {
                past = true;
                break;
            }
            if (window && seq == from)
                fprintf(out, "# seq %" PRIu64 "\n", seq);
            put_event(&d, &b.events[i]);
        }
        wr_batch_release(&b);
        if (d.oom || d.too_long || past)
            break;
    }
    if (!rc && !d.oom && !d.too_long && catalog_grew(&d)) {
        if (batches)
            fputs("flush\n", out);
        print_catalog(&d);
    }
    if (!rc && d.too_long) {
        snprintf(err->msg, sizeof(err->msg),
                 "%s: a name or string is %zu bytes in text form, more than the text form's %u",
                 path, d.too_long, WR_TEXT_MAX_TOKEN);
        rc = -1;
    }
    if (!rc && d.oom) {
        snprintf(err->msg, sizeof(err->msg), "%s: out of memory", path);
        rc = -1;
    }
    if (!rc) {
        const wr_reader_stats *st = wr_reader_stats_get(r);
        if (st && st->truncated) {
            fprintf(out, "# truncated: %" PRIu64 " incomplete bytes at offset %" PRIu64 "\n",
                    st->truncated_bytes, st->truncated_at);
            if (truncated_at)
                *truncated_at = st->truncated_at;
        }
    }
    if (!rc && (fflush(out) || ferror(out))) {
        snprintf(err->msg, sizeof(err->msg), "%s: write error", path);
        rc = -1;
    }
    wr_reader_close(r);
    for (size_t i = 0; i < d.alloc_label_cap; i++)
        free(d.alloc_label[i]);
    free(d.alloc_label);
    wr_text_map_free(&d.labels_used);
    wr_text_map_free(&d.kernel_latest);
    wr_text_map_free(&d.site_latest);
    return rc;
}

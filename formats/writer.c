/* The .wrt writer: header, metadata chunks, event chunks, footer index.
 *
 * Output is a pure function of the calls made: chunk boundaries depend only
 * on the event payload size (and explicit flushes), pending metadata is
 * written immediately before the event chunk that may refer to it, and the
 * header's time comes from the caller's struct.  The text form relies on
 * this for asm -> dump -> asm byte identity.
 *
 * With wr_writer_options.background = N, chunks are compressed by N threads
 * of the writer's own (a chunk is one LZ4 block, independent of the others)
 * and written, index entry included, strictly in the order the caller made
 * them, so the bytes are the same; the caller goes on encoding events
 * meanwhile (the recorder's drain: threads converting records, others
 * compressing). */
#include <errno.h>
#include <lz4.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"

/* Pending metadata beyond this is flushed early so that no metadata chunk
 * gets near the reader's chunk size limit. */
#define METADATA_FLUSH_BYTES (16u << 20)

typedef struct bytebuf {
    uint8_t *data;
    size_t len, cap;
} bytebuf;

static int buf_reserve(bytebuf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static uint8_t *buf_grow(bytebuf *b, size_t n)
{
    if (buf_reserve(b, n))
        return NULL;
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

typedef struct pending_table {
    bytebuf bytes;
    uint32_t count;             /* entries pending */
    uint32_t next_id;           /* id the next definition gets */
} pending_table;

typedef struct pending_module {
    uint32_t id;
    bytebuf entry;              /* the whole MODULES payload of one module */
} pending_module;

/* A chunk: what write_chunk takes, then what pack_chunk makes of it.  Each
 * has its own buffers (capacity kept for the next use), so threads compress
 * different chunks at once. */
typedef struct chunk_job {
    wrf_chunk_header h;         /* type, count, aux, first_index, raw_size given */
    const uint8_t *raw;         /* the payload: the caller's (inline) or copy.data */
    const uint8_t *stored;      /* what is written: raw or out.data */
    bytebuf copy, out;          /* the raw copy (background), the LZ4 block */
    int packed;                 /* compressed, may be written (under bg->lock) */
} chunk_job;

/* Background threads: jobs[head .. head+count) (mod slots) are the chunks
 * queued and not yet written, in the caller's order; the first `taken` of
 * them are compressing or packed, the rest wait for a thread.  Whichever
 * thread finds jobs[head] packed and nobody writing becomes the writer
 * until the head is not packed, so chunks are written in order, one
 * thread at a time.  Twice as many slots as threads (+2): every thread may
 * compress while the packed ones wait for the head. */
#define BG_THREADS_MAX 16
typedef struct background {
    pthread_mutex_t lock;
    pthread_cond_t queued, done;    /* a job was queued / a job was written */
    pthread_t threads[BG_THREADS_MAX];
    unsigned nthreads, slots;
    unsigned head, count, taken;
    int writing;                /* a thread is writing head jobs */
    int stop, discard;          /* threads end when no job waits / skip all jobs */
    chunk_job jobs[];           /* [slots] */
} background;

struct wr_writer {
    FILE *file;
    char *path;
    uint64_t offset;            /* bytes written so far */
    uint32_t chunk_bytes;
    int failed;                 /* sticky: a write failed, the file is unusable */
    wr_error failure;

    bytebuf events;             /* pending event chunk payload */
    uint32_t event_count, vector_count;
    uint64_t events_written;    /* seq of the first pending event */
    uint64_t lost_events;

    pending_table strings, kernels, allocs, sites;
    pending_module *modules;
    uint32_t module_count, module_cap, next_module_id;

    /* string interning: ids in first-use order, so output is deterministic */
    char **string_by_id;        /* [id-1] */
    uint32_t string_total, string_cap;
    uint32_t *hash_slots;       /* open addressing, holds ids, 0 = empty */
    uint32_t *kernel_of_string; /* [string id] -> kernel id (wr_writer_kernel_once) */
    uint32_t kernel_of_string_cap;
    uint32_t hash_cap;

    bytebuf index;              /* footer entries, one per chunk written */
    uint32_t index_entries;
    chunk_job inline_job;       /* the chunk being written without threads */
    /* With background threads, file, offset and index are the writing
     * thread's (bg->writing) until bg_wait, and failed/failure are touched
     * under bg->lock. */
    background *bg;
};

/* ---- low-level output ---- */

static int fail_io(wr_writer *w, wr_error *err, const char *what)
{
    int errnum = errno;
    if (w->bg)   /* either thread may fail; the caller's reads it under the lock */
        pthread_mutex_lock(&w->bg->lock);
    if (!w->failed) {
        w->failed = 1;
        wr_error_at(&w->failure, w->path, __atomic_load_n(&w->offset, __ATOMIC_RELAXED), "%s: %s", what, strerror(errnum));
    }
    if (err)
        *err = w->failure;
    if (w->bg)
        pthread_mutex_unlock(&w->bg->lock);
    return -1;
}

static int write_bytes(wr_writer *w, const void *data, size_t len, wr_error *err)
{
    if (len && fwrite(data, 1, len, w->file) != len)
        return fail_io(w, err, "write failed");
    __atomic_store_n(&w->offset, w->offset + len, __ATOMIC_RELAXED);   /* read by messages */
    return 0;
}

/* Compresses j->raw into j's own buffer and completes its header: touches
 * nothing else, so threads pack different jobs at once.  -1: out of memory. */
static int pack_chunk(chunk_job *j)
{
    size_t raw_size = j->h.raw_size;
    int bound = LZ4_compressBound((int)raw_size);
    if (buf_reserve(&j->out, (size_t)bound))
        return -1;
    int csize = raw_size ? LZ4_compress_default((const char *)j->raw, (char *)j->out.data,
                                                (int)raw_size, bound)
                         : 0;
    /* Stored when LZ4 does not help: keeps the reader's worst case at 1:1. */
    if (csize > 0 && (size_t)csize < raw_size) {
        j->h.codec = WRF_CODEC_LZ4;
        j->h.stored_size = (uint32_t)csize;
        j->stored = j->out.data;
    } else {
        j->h.codec = WRF_CODEC_STORED;
        j->h.stored_size = (uint32_t)raw_size;
        j->stored = j->raw;
    }
    j->h.payload_crc = wrf_crc32c(0, j->stored, j->h.stored_size);
    return 0;
}

/* Writes a packed chunk at the file's end and adds its index entry: the
 * caller's order, one thread at a time. */
static int write_packed(wr_writer *w, const chunk_job *j, wr_error *err)
{
    uint8_t hb[WRF_CHUNK_HEADER_SIZE];
    wrf_chunk_header_encode(hb, &j->h);
    if (j->h.type != WRF_CHUNK_INDEX) {
        uint8_t *e = buf_grow(&w->index, WRF_INDEX_ENTRY);
        if (!e)
            return fail_io(w, err, "out of memory");
        wrf_put64(e, w->offset);
        wrf_put64(e + 8, j->h.first_index);
        wrf_put32(e + 16, j->h.count);
        e[20] = j->h.type;
        e[21] = j->h.codec;
        wrf_put16(e + 22, 0);
        w->index_entries++;
    }
    if (write_bytes(w, hb, sizeof hb, err) || write_bytes(w, j->stored, j->h.stored_size, err))
        return -1;
    return 0;
}

/* ---- background threads ---- */

static void *bg_main(void *arg)
{
    wr_writer *w = arg;
    background *bg = w->bg;
    pthread_mutex_lock(&bg->lock);
    for (;;) {
        while (bg->taken == bg->count && !bg->stop)
            pthread_cond_wait(&bg->queued, &bg->lock);
        if (bg->taken == bg->count)
            break;
        chunk_job *j = &bg->jobs[(bg->head + bg->taken++) % bg->slots];
        /* a failure is sticky: later chunks are dropped with it */
        int skip = w->failed || bg->discard;
        pthread_mutex_unlock(&bg->lock);
        if (!skip && pack_chunk(j))
            fail_io(w, NULL, "out of memory");
        pthread_mutex_lock(&bg->lock);
        j->packed = 1;
        if (bg->writing)   /* the writer takes it when it reaches it */
            continue;
        bg->writing = 1;
        while (bg->count && bg->jobs[bg->head].packed) {
            chunk_job *h = &bg->jobs[bg->head];
            skip = w->failed || bg->discard;
            pthread_mutex_unlock(&bg->lock);
            if (!skip)
                write_packed(w, h, NULL);
            pthread_mutex_lock(&bg->lock);
            bg->head = (bg->head + 1) % bg->slots;
            bg->count--;
            bg->taken--;
            pthread_cond_broadcast(&bg->done);
        }
        bg->writing = 0;
    }
    pthread_mutex_unlock(&bg->lock);
    return NULL;
}


/* Has a write failed (err, when given, gets the failure)?  With
 * background threads, which may fail too, asked under their lock. */
static int writer_failed(wr_writer *w, wr_error *err)
{
    if (w->bg)
        pthread_mutex_lock(&w->bg->lock);
    int failed = w->failed;
    if (failed && err)
        *err = w->failure;
    if (w->bg)
        pthread_mutex_unlock(&w->bg->lock);
    return failed;
}

/* Waits until every queued chunk is written; -1 (err set) if one failed. */
static int bg_wait(wr_writer *w, wr_error *err)
{
    background *bg = w->bg;
    pthread_mutex_lock(&bg->lock);
    while (bg->count)
        pthread_cond_wait(&bg->done, &bg->lock);
    int failed = w->failed;
    if (failed && err)
        *err = w->failure;
    pthread_mutex_unlock(&bg->lock);
    return failed ? -1 : 0;
}

static void bg_free(wr_writer *w)
{
    background *bg = w->bg;
    for (unsigned i = 0; i < bg->slots; i++) {
        free(bg->jobs[i].copy.data);
        free(bg->jobs[i].out.data);
    }
    pthread_mutex_destroy(&bg->lock);
    pthread_cond_destroy(&bg->queued);
    pthread_cond_destroy(&bg->done);
    free(bg);
    w->bg = NULL;
}

/* Ends the threads after the queued chunks are written (or at once,
 * `discard`: the jobs no thread took are dropped, the others skipped). */
static void bg_stop(wr_writer *w, bool discard)
{
    background *bg = w->bg;
    if (!bg)
        return;
    pthread_mutex_lock(&bg->lock);
    if (discard) {
        bg->count = bg->taken;
        bg->discard = 1;
    }
    bg->stop = 1;
    pthread_cond_broadcast(&bg->queued);
    pthread_mutex_unlock(&bg->lock);
    for (unsigned i = 0; i < bg->nthreads; i++)
        pthread_join(bg->threads[i], NULL);
    bg_free(w);
}

/* Starts up to n threads; without any, chunks are written by the caller's. */
static void bg_start(wr_writer *w, unsigned n)
{
    if (n > BG_THREADS_MAX)
        n = BG_THREADS_MAX;
    unsigned slots = 2 * n + 2;
    background *bg = calloc(1, sizeof *bg + slots * sizeof(chunk_job));
    if (!bg)
        return;
    bg->slots = slots;
    pthread_mutex_init(&bg->lock, NULL);
    pthread_cond_init(&bg->queued, NULL);
    pthread_cond_init(&bg->done, NULL);
    w->bg = bg;
    while (bg->nthreads < n && pthread_create(&bg->threads[bg->nthreads], NULL, bg_main, w) == 0)
        bg->nthreads++;
    if (!bg->nthreads)
        bg_free(w);
}

static int write_chunk(wr_writer *w, uint8_t type, uint32_t count, uint32_t aux,
                       uint64_t first_index, const uint8_t *raw, size_t raw_size, wr_error *err)
{
    wrf_chunk_header h = {.type = type, .raw_size = (uint32_t)raw_size, .count = count,
                          .aux = aux, .first_index = first_index};
    background *bg = w->bg;
    if (!bg) {
        if (w->failed) {
            if (err)
                *err = w->failure;
            return -1;
        }
        chunk_job *j = &w->inline_job;
        j->h = h;
        j->raw = raw;
        if (pack_chunk(j))
            return fail_io(w, err, "out of memory");
        return write_packed(w, j, err);
    }
    pthread_mutex_lock(&bg->lock);
    while (bg->count == bg->slots && !w->failed)
        pthread_cond_wait(&bg->done, &bg->lock);
    if (w->failed) {
        if (err)
            *err = w->failure;
        pthread_mutex_unlock(&bg->lock);
        return -1;
    }
    /* Outside every thread's range until counted; head + count only moves
     * when the caller queues, so the slot stays this one. */
    chunk_job *j = &bg->jobs[(bg->head + bg->count) % bg->slots];
    pthread_mutex_unlock(&bg->lock);
    j->copy.len = 0;
    uint8_t *copy = buf_grow(&j->copy, raw_size);
    if (raw_size && !copy)
        return fail_io(w, err, "out of memory");
    if (raw_size)
        memcpy(copy, raw, raw_size);
    j->h = h;
    j->raw = j->copy.data;
    pthread_mutex_lock(&bg->lock);
    j->packed = 0;
    bg->count++;
    pthread_cond_signal(&bg->queued);
    pthread_mutex_unlock(&bg->lock);
    return 0;
}

/* ---- metadata ---- */

static int flush_table(wr_writer *w, pending_table *t, uint8_t type, wr_error *err)
{
    if (!t->count)
        return 0;
    uint64_t first = t->next_id - t->count;
    int rc = write_chunk(w, type, t->count, 0, first, t->bytes.data, t->bytes.len, err);
    t->bytes.len = 0;
    t->count = 0;
    return rc;
}

/* Canonical order: strings first (everything refers to them), modules last. */
static int flush_metadata(wr_writer *w, wr_error *err)
{
    if (flush_table(w, &w->strings, WRF_CHUNK_STRINGS, err) ||
        flush_table(w, &w->kernels, WRF_CHUNK_KERNELS, err) ||
        flush_table(w, &w->allocs, WRF_CHUNK_ALLOCS, err) ||
        flush_table(w, &w->sites, WRF_CHUNK_SITES, err))
        return -1;
    for (uint32_t i = 0; i < w->module_count; i++) {
        pending_module *m = &w->modules[i];
        int rc = write_chunk(w, WRF_CHUNK_MODULES, 1, 0, m->id, m->entry.data, m->entry.len, err);
        free(m->entry.data);
        m->entry.data = NULL;
        if (rc) {
            /* free the rest too, the writer is failed */
            for (uint32_t j = i + 1; j < w->module_count; j++)
                free(w->modules[j].entry.data);
            w->module_count = 0;
            return -1;
        }
    }
    w->module_count = 0;
    return 0;
}

static size_t pending_metadata_bytes(const wr_writer *w)
{
    return w->strings.bytes.len + w->kernels.bytes.len + w->allocs.bytes.len + w->sites.bytes.len;
}

static int maybe_flush_metadata(wr_writer *w)
{
    if (pending_metadata_bytes(w) < METADATA_FLUSH_BYTES)
        return 0;
    return flush_metadata(w, NULL);
}

static uint32_t hash_string(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int hash_insert(wr_writer *w, uint32_t id)
{
    uint32_t mask = w->hash_cap - 1;
    for (uint32_t i = hash_string(w->string_by_id[id - 1]) & mask;; i = (i + 1) & mask)
        if (!w->hash_slots[i]) {
            w->hash_slots[i] = id;
            return 0;
        }
}

/* The id of s in the string table, defining it if new; 0 for "" / NULL,
 * UINT32_MAX on failure. */
static uint32_t intern(wr_writer *w, const char *s)
{
    if (!s || !*s)
        return 0;
    size_t len = strlen(s);
    if (len > WRF_CHUNK_RAW_MAX / 4)
        return UINT32_MAX;
    if (w->hash_cap) {
        uint32_t mask = w->hash_cap - 1;
        for (uint32_t i = hash_string(s) & mask; w->hash_slots[i]; i = (i + 1) & mask)
            if (!strcmp(w->string_by_id[w->hash_slots[i] - 1], s))
                return w->hash_slots[i];
    }
    if (w->string_total >= WRF_CATALOG_TABLE_MAX)
        return UINT32_MAX;
    if (w->string_total == w->string_cap) {
        uint32_t cap = w->string_cap ? w->string_cap * 2 : 64;
        char **p = realloc(w->string_by_id, cap * sizeof *p);
        if (!p)
            return UINT32_MAX;
        w->string_by_id = p;
        w->string_cap = cap;
    }
    if ((w->string_total + 1) * 2 > w->hash_cap) {
        uint32_t cap = w->hash_cap ? w->hash_cap * 2 : 128;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return UINT32_MAX;
        free(w->hash_slots);
        w->hash_slots = slots;
        w->hash_cap = cap;
        for (uint32_t id = 1; id <= w->string_total; id++)
            hash_insert(w, id);
    }
    char *copy = strdup(s);
    uint8_t *e = buf_grow(&w->strings.bytes, 4 + len);
    if (!copy || !e) {
        free(copy);
        return UINT32_MAX;
    }
    wrf_put32(e, (uint32_t)len);
    memcpy(e + 4, s, len);
    w->string_by_id[w->string_total++] = copy;
    uint32_t id = w->string_total;
    hash_insert(w, id);
    w->strings.count++;
    w->strings.next_id++;
    return id;
}

static uint8_t *table_entry(pending_table *t, size_t size)
{
    if (t->next_id >= WRF_CATALOG_TABLE_MAX)
        return NULL;
    return buf_grow(&t->bytes, size);
}

uint32_t wr_writer_site(wr_writer *w, uint64_t pc, const char *file, uint32_t line,
                        const char *function)
{
    if (!w || writer_failed(w, NULL))
        return 0;
    uint32_t fs = intern(w, file), fn = intern(w, function);
    if (fs == UINT32_MAX || fn == UINT32_MAX)
        return 0;
    uint8_t *e = table_entry(&w->sites, WRF_SITE_ENTRY);
    if (!e)
        return 0;
    wrf_put64(e, pc);
    wrf_put32(e + 8, fs);
    wrf_put32(e + 12, line);
    wrf_put32(e + 16, fn);
    wrf_put32(e + 20, 0);
    w->sites.count++;
    uint32_t id = w->sites.next_id++;
    return maybe_flush_metadata(w) ? 0 : id;
}

uint32_t wr_writer_kernel(wr_writer *w, const char *name)
{
    if (!w || writer_failed(w, NULL))
        return 0;
    uint32_t ns = intern(w, name);
    if (ns == UINT32_MAX)
        return 0;
    uint8_t *e = table_entry(&w->kernels, WRF_KERNEL_ENTRY);
    if (!e)
        return 0;
    wrf_put32(e, ns);
    w->kernels.count++;
    uint32_t id = w->kernels.next_id++;
    return maybe_flush_metadata(w) ? 0 : id;
}

uint32_t wr_writer_kernel_once(wr_writer *w, const char *name)
{
    if (!w || writer_failed(w, NULL))
        return 0;
    uint32_t ns = intern(w, name);
    if (ns == UINT32_MAX)
        return 0;
    if (ns < w->kernel_of_string_cap && w->kernel_of_string[ns])
        return w->kernel_of_string[ns];
    uint32_t id = wr_writer_kernel(w, name);
    if (id && ns >= w->kernel_of_string_cap) {
        uint32_t cap = w->kernel_of_string_cap ? w->kernel_of_string_cap : 64;
        while (cap <= ns)
            cap *= 2;
        uint32_t *n = realloc(w->kernel_of_string, cap * sizeof *n);
        if (!n)
            return id;            /* not remembered: the next launch defines it again */
        memset(n + w->kernel_of_string_cap, 0, (cap - w->kernel_of_string_cap) * sizeof *n);
        w->kernel_of_string = n;
        w->kernel_of_string_cap = cap;
    }
    if (id)
        w->kernel_of_string[ns] = id;
    return id;
}

uint32_t wr_writer_alloc(wr_writer *w, uint64_t base, uint64_t size, uint8_t space,
                         const char *name)
{
    /* a reader rejects a DSMEM allocation: DSMEM names SHARED allocations */
    if (!w || writer_failed(w, NULL) || space > WR_ALLOC_SPACE_MAX)
        return 0;
    uint32_t ns = intern(w, name);
    if (ns == UINT32_MAX)
        return 0;
    uint8_t *e = table_entry(&w->allocs, WRF_ALLOC_ENTRY);
    if (!e)
        return 0;
    wrf_put64(e, base);
    wrf_put64(e + 8, size);
    wrf_put32(e + 16, ns);
    e[20] = space;
    e[21] = e[22] = e[23] = 0;
    w->allocs.count++;
    uint32_t id = w->allocs.next_id++;
    return maybe_flush_metadata(w) ? 0 : id;
}

uint32_t wr_writer_module(wr_writer *w, const char *name, const void *image, uint64_t size)
{
    if (!w || writer_failed(w, NULL) || (size && !image) || size > WRF_CHUNK_RAW_MAX - WRF_MODULE_ENTRY_FIXED ||
        w->next_module_id >= WRF_CATALOG_TABLE_MAX)
        return 0;
    uint32_t ns = intern(w, name);
    if (ns == UINT32_MAX)
        return 0;
    if (w->module_count == w->module_cap) {
        uint32_t cap = w->module_cap ? w->module_cap * 2 : 4;
        pending_module *m = realloc(w->modules, cap * sizeof *m);
        if (!m)
            return 0;
        w->modules = m;
        w->module_cap = cap;
    }
    pending_module *m = &w->modules[w->module_count];
    memset(m, 0, sizeof *m);
    uint8_t *e = buf_grow(&m->entry, WRF_MODULE_ENTRY_FIXED + size);
    if (!e)
        return 0;
    wrf_put32(e, ns);
    wrf_put32(e + 4, 0);
    wrf_put64(e + 8, size);
    if (size)
        memcpy(e + 16, image, size);
    m->id = w->next_module_id++;
    w->module_count++;
    return m->id;
}

/* ---- events ---- */

static unsigned log2_size(uint8_t size)
{
    switch (size) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
    default: return 8;
    }
}

/* Encodes ev at out (room for WRF_RECORD_MAX bytes).  Returns the record
 * size, or 0 with *why set when ev breaks the event model's ranges. */
static size_t encode_event(uint8_t *out, const wr_event *ev, int *is_vector, const char **why)
{
    uint8_t *p = out;
    p[0] = ev->kind;
    p[1] = p[2] = p[3] = 0;
    wrf_put32(p + 4, ev->site);
    p += 8;
    *is_vector = 0;
    switch (ev->kind) {
    case WR_EV_ACCESS: {
        const wr_access *a = &ev->u.access;
        unsigned lg = log2_size(a->size);
        if (a->op > WR_OP_MAX) return *why = "access op out of range", 0;
        if (a->atomic_op > WR_AOP_MAX_ID) return *why = "atomic op out of range", 0;
        if ((a->op == WR_OP_ATOMIC_RMW) != (a->atomic_op != WR_AOP_NONE))
            return *why = "atomic_op must be set exactly for ATOMIC_RMW accesses", 0;
        if (a->scope > WR_SCOPE_MAX) return *why = "scope out of range", 0;
        if (a->order > WR_ORDER_MAX) return *why = "order out of range", 0;
        if (a->space > WR_SPACE_MAX) return *why = "space out of range", 0;
        if (lg > 4) return *why = "access size must be 1, 2, 4, 8 or 16", 0;
        if (a->addr_mode > WR_ADDR_VECTOR) return *why = "address mode out of range", 0;
        if (a->addr_mode == WR_ADDR_VECTOR && !a->lane_addr)
            return *why = "vector access without lane addresses", 0;
        if (!wr_access_shared_offsets_ok(a))
            return *why = "shared memory offset at or past 16 MiB (2^24)", 0;
        int cas = a->atomic_op == WR_AOP_CAS;
        if (!cas && a->cas_success) return *why = "cas_success set on a non-CAS access", 0;
        if (a->cas_success & ~a->active_mask) return *why = "cas_success has inactive lanes", 0;
        uint8_t flags = (uint8_t)(a->addr_mode | lg << WRF_AF_SIZE_SHIFT);
        if (a->active_mask == WR_FULL_MASK) flags |= WRF_AF_FULL_MASK;
        if (cas) flags |= WRF_AF_CAS;
        out[2] = (uint8_t)(a->op | a->space << 3 | a->order << 5);
        out[3] = (uint8_t)(a->atomic_op | a->scope << 4);
        wrf_put32(p, a->launch);
        wrf_put32(p + 4, a->block);
        wrf_put32(p + 8, a->warp);
        p += 12;
        if (!(flags & WRF_AF_FULL_MASK)) { wrf_put32(p, a->active_mask); p += 4; }
        if (cas) { wrf_put32(p, a->cas_success); p += 4; }
        if (a->addr_mode == WR_ADDR_UNIFORM) {
            wrf_put64(p, a->base);
            p += 8;
        } else if (a->addr_mode == WR_ADDR_STRIDED) {
            wrf_put64(p, a->base);
            wrf_put64(p + 8, (uint64_t)a->stride);
            p += 16;
        } else {
            if (!a->lane_addr) return *why = "vector access without lane addresses", 0;
            *is_vector = 1;
            uint32_t m = a->active_mask;
            uint64_t base = m ? a->lane_addr[__builtin_ctz(m)] : 0;
            int narrow = m != 0;
            for (uint32_t rest = m; rest && narrow; rest &= rest - 1) {
                int64_t d = (int64_t)(a->lane_addr[__builtin_ctz(rest)] - base);
                narrow = d >= INT32_MIN && d <= INT32_MAX;
            }
            if (narrow) {
                flags |= WRF_AF_NARROW;
                wrf_put64(p, base);
                p += 8;
                for (uint32_t rest = m; rest; rest &= rest - 1) {
                    wrf_put32(p, (uint32_t)(a->lane_addr[__builtin_ctz(rest)] - base));
                    p += 4;
                }
            } else {
                for (uint32_t rest = m; rest; rest &= rest - 1) {
                    wrf_put64(p, a->lane_addr[__builtin_ctz(rest)]);
                    p += 8;
                }
            }
        }
        out[1] = flags;
        break;
    }
    case WR_EV_BARRIER: {
        const wr_barrier *b = &ev->u.barrier;
        if (!wr_barrier_scope_ok(b->scope)) return *why = "barrier scope out of range", 0;
        /* only the block has named barriers: a reader rejects an id on a
         * cluster or grid barrier (an mbarrier's is its shared offset,
         * checked by wr_barrier_mode_problem) */
        if ((b->scope == WR_BAR_CLUSTER || b->scope == WR_BAR_GRID) && b->barrier_id)
            return *why = "cluster and grid barriers have no barrier id", 0;
        const char *mode_why = wr_barrier_mode_problem(b);
        if (mode_why) return *why = mode_why, 0;
        out[1] = b->scope;
        out[2] = b->mode;
        wrf_put32(p, b->launch); wrf_put32(p + 4, b->block); wrf_put32(p + 8, b->warp);
        wrf_put32(p + 12, b->active_mask); wrf_put32(p + 16, b->barrier_id);
        wrf_put32(p + 20, b->expected);
        p += 24;
        break;
    }
    case WR_EV_WARP_SYNC: {
        const wr_warp_sync *s = &ev->u.warp_sync;
        wrf_put32(p, s->launch); wrf_put32(p + 4, s->block); wrf_put32(p + 8, s->warp);
        wrf_put32(p + 12, s->mask);
        p += 16;
        break;
    }
    case WR_EV_FENCE: {
        const wr_fence *f = &ev->u.fence;
        if (f->scope > WR_SCOPE_MAX) return *why = "fence scope out of range", 0;
        if (f->order > WR_ORDER_MAX) return *why = "fence order out of range", 0;
        out[2] = f->scope;
        out[3] = f->order;
        wrf_put32(p, f->launch); wrf_put32(p + 4, f->block); wrf_put32(p + 8, f->warp);
        wrf_put32(p + 12, f->active_mask);
        p += 16;
        break;
    }
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT:
        wrf_put32(p, ev->u.block.launch); wrf_put32(p + 4, ev->u.block.block);
        p += 8;
        break;
    case WR_EV_KERNEL_LAUNCH: {
        const wr_launch *l = &ev->u.launch;
        const uint32_t v[13] = {l->launch, l->kernel, l->grid[0], l->grid[1], l->grid[2],
                                l->block_dim[0], l->block_dim[1], l->block_dim[2],
                                l->cluster[0], l->cluster[1], l->cluster[2],
                                l->shared_bytes, l->stream};
        for (int i = 0; i < 13; i++, p += 4)
            wrf_put32(p, v[i]);
        break;
    }
    case WR_EV_KERNEL_END:
        wrf_put32(p, ev->u.kernel_end.launch);
        p += 4;
        break;
    case WR_EV_EVENT_RECORD:
    case WR_EV_STREAM_WAIT:
    case WR_EV_EVENT_SYNC:
        wrf_put32(p, ev->u.stream_event.event); wrf_put32(p + 4, ev->u.stream_event.stream);
        p += 8;
        break;
    case WR_EV_STREAM_SYNC:
        wrf_put32(p, ev->u.stream_sync.stream);
        p += 4;
        break;
    case WR_EV_DEVICE_SYNC:
        break;
    case WR_EV_HOST_COPY: {
        const wr_host_copy *c = &ev->u.copy;
        if (c->kind > WR_COPY_MAX) return *why = "copy kind out of range", 0;
        if (c->async > 1) return *why = "copy async flag must be 0 or 1", 0;
        if (!wr_copy_size_ok(c->dst, c->src, c->bytes))
            return *why = "copy larger than 2^39 bytes or wrapping around the address space", 0;
        out[2] = c->kind;
        out[3] = c->async;
        wrf_put64(p, c->dst); wrf_put64(p + 8, c->src); wrf_put64(p + 16, c->bytes);
        wrf_put32(p + 24, c->stream);
        p += 28;
        break;
    }
    case WR_EV_ALLOC:
    case WR_EV_FREE:
        wrf_put32(p, ev->u.alloc.alloc);
        p += 4;
        break;
    case WR_EV_LOST:
        wrf_put64(p, ev->u.lost.count); wrf_put32(p + 8, ev->u.lost.launch);
        wrf_put32(p + 12, ev->u.lost.block);
        p += 16;
        break;
    default:
        return *why = "unknown event kind", 0;
    }
    return (size_t)(p - out);
}

size_t wrf_event_encoded_size(const wr_event *ev)
{
    uint8_t tmp[WRF_RECORD_MAX];
    int vec;
    const char *why;
    return encode_event(tmp, ev, &vec, &why);
}

static int flush_events(wr_writer *w, wr_error *err)
{
    if (flush_metadata(w, err))
        return -1;
    if (!w->event_count)
        return 0;
    int rc = write_chunk(w, WRF_CHUNK_EVENTS, w->event_count, w->vector_count, w->events_written,
                         w->events.data, w->events.len, err);
    w->events_written += w->event_count;
    w->events.len = 0;
    w->event_count = w->vector_count = 0;
    return rc;
}

/* Is the pending event chunk due (the event just added filled it)? */
static bool chunk_full(const wr_writer *w)
{
    return w->events.len >= w->chunk_bytes || w->event_count >= WRF_EVENT_CHUNK_COUNT_MAX;
}

int wr_writer_event(wr_writer *w, const wr_event *ev, wr_error *err)
{
    if (!w || !ev) {
        wr_error_at(err, w ? w->path : NULL, 0, "wr_writer_event: no writer or event");
        return -1;
    }
    if (writer_failed(w, err))
        return -1;
    uint8_t *p = buf_grow(&w->events, WRF_RECORD_MAX);
    if (!p)
        return fail_io(w, err, "out of memory");
    int is_vector;
    const char *why = NULL;
    size_t n = encode_event(p, ev, &is_vector, &why);
    w->events.len -= WRF_RECORD_MAX - n;
    if (!n) {
        wr_error_at(err, w->path, __atomic_load_n(&w->offset, __ATOMIC_RELAXED), "event %llu (%s): %s",
                    (unsigned long long)(w->events_written + w->event_count),
                    wr_event_kind_name(ev->kind), why);
        return -1;
    }
    w->event_count++;
    w->vector_count += (uint32_t)is_vector;
    if (ev->kind == WR_EV_LOST)
        w->lost_events = wr_lost_add(w->lost_events, ev->u.lost.count);
    if (chunk_full(w))
        return flush_events(w, err);
    return 0;
}

/* ---- events encoded ahead (wr_encoded) ---- */

struct wr_encoded {
    bytebuf bytes;
    uint32_t *ends;             /* [i]: end of event i in bytes; bit 31: a vector record */
    size_t count, cap;
    uint64_t lost;              /* sum of the WR_EV_LOST counts */
};

#define ENCODED_VECTOR 0x80000000u
#define ENCODED_MAX_BYTES (ENCODED_VECTOR - WRF_RECORD_MAX)

wr_encoded *wr_encoded_new(void)
{
    return calloc(1, sizeof(wr_encoded));
}

void wr_encoded_free(wr_encoded *b)
{
    if (!b)
        return;
    free(b->bytes.data);
    free(b->ends);
    free(b);
}

void wr_encoded_clear(wr_encoded *b)
{
    b->bytes.len = 0;
    b->count = 0;
    b->lost = 0;
}

size_t wr_encoded_count(const wr_encoded *b)
{
    return b->count;
}

size_t wr_encoded_bytes(const wr_encoded *b)
{
    return b->bytes.len;
}

int wr_encoded_add(wr_encoded *b, const wr_event *ev, const char **why)
{
    if (b->bytes.len > ENCODED_MAX_BYTES) {
        *why = "too many events encoded ahead in one batch";
        return -1;
    }
    if (b->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        uint32_t *e = realloc(b->ends, cap * sizeof *e);
        if (!e) {
            *why = "out of memory";
            return -1;
        }
        b->ends = e;
        b->cap = cap;
    }
    uint8_t *p = buf_grow(&b->bytes, WRF_RECORD_MAX);
    if (!p) {
        *why = "out of memory";
        return -1;
    }
    int is_vector;
    size_t n = encode_event(p, ev, &is_vector, why);
    b->bytes.len -= WRF_RECORD_MAX - n;
    if (!n)
        return -1;
    b->ends[b->count++] = (uint32_t)b->bytes.len | (is_vector ? ENCODED_VECTOR : 0);
    if (ev->kind == WR_EV_LOST)
        b->lost += ev->u.lost.count;
    return 0;
}

int wr_writer_encoded(wr_writer *w, const wr_encoded *b, wr_error *err)
{
    if (!w || !b) {
        wr_error_at(err, w ? w->path : NULL, 0, "wr_writer_encoded: no writer or events");
        return -1;
    }
    if (writer_failed(w, err))
        return -1;
    size_t i = 0;
    uint32_t from = 0;
    while (i < b->count) {
        /* the events up to the one after which wr_writer_event would flush */
        size_t j = i;
        uint32_t vectors = 0, to;
        for (;;) {
            to = b->ends[j] & ~ENCODED_VECTOR;
            vectors += b->ends[j] >> 31;
            j++;
            if (j == b->count || w->events.len + (to - from) >= w->chunk_bytes ||
                w->event_count + (j - i) >= WRF_EVENT_CHUNK_COUNT_MAX)
                break;
        }
        uint8_t *p = buf_grow(&w->events, to - from);
        if (!p)
            return fail_io(w, err, "out of memory");
        memcpy(p, b->bytes.data + from, to - from);
        w->event_count += (uint32_t)(j - i);
        w->vector_count += vectors;
        from = to;
        i = j;
        if (chunk_full(w) && flush_events(w, err))
            return -1;
    }
    w->lost_events = wr_lost_add(w->lost_events, b->lost);
    return 0;
}

int wr_writer_flush(wr_writer *w, wr_error *err)
{
    if (!w)
        return -1;
    if (flush_events(w, err))
        return -1;
    if (w->bg && bg_wait(w, err))   /* the file is the threads' until then */
        return -1;
    if (fflush(w->file))
        return fail_io(w, err, "flush failed");
    return 0;
}

/* ---- open / close ---- */

static int put_string(bytebuf *b, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    uint8_t *p = buf_grow(b, 4 + len);
    if (!p)
        return -1;
    wrf_put32(p, (uint32_t)len);
    if (len)
        memcpy(p + 4, s, len);
    return 0;
}

wr_writer *wr_writer_open(const char *path, const wr_header *hdr, const wr_writer_options *opts,
                          wr_error *err)
{
    if (!path || !hdr) {
        wr_error_at(err, path, 0, "wr_writer_open: no path or header");
        return NULL;
    }
    if (hdr->warp_size && hdr->warp_size != WR_WARP_SIZE) {
        wr_error_at(err, path, 0, "warp size %u is not supported (the event model has 32 lanes)",
                    hdr->warp_size);
        return NULL;
    }
    bytebuf h = {0};
    uint8_t *fixed = buf_grow(&h, WRF_HEADER_FIXED);
    if (!fixed)
        goto oom;
    memcpy(fixed, wrf_file_magic, WRF_MAGIC_LEN);
    wrf_put16(fixed + 8, WR_FORMAT_MAJOR);
    wrf_put16(fixed + 10, WR_FORMAT_MINOR);
    wrf_put32(fixed + 12, 0);   /* header size, patched below */
    wrf_put32(fixed + 16, hdr->sm_arch);
    wrf_put32(fixed + 20, WR_WARP_SIZE);
    wrf_put32(fixed + 24, hdr->clock_khz);
    wrf_put32(fixed + 28, 0);
    wrf_put64(fixed + 32, (uint64_t)hdr->time_unix_ns);
    if (put_string(&h, hdr->producer) || put_string(&h, hdr->producer_version) ||
        put_string(&h, hdr->device) || put_string(&h, hdr->host) || put_string(&h, hdr->command))
        goto oom;
    if (h.len + 4 > WRF_HEADER_MAX) {
        free(h.data);
        wr_error_at(err, path, 0, "header strings exceed %u bytes", WRF_HEADER_MAX);
        return NULL;
    }
    wrf_put32(h.data + 12, (uint32_t)(h.len + 4));
    uint32_t crc = wrf_crc32c(0, h.data, h.len);
    uint8_t *c = buf_grow(&h, 4);
    if (!c)
        goto oom;
    wrf_put32(c, crc);

    wr_writer *w = calloc(1, sizeof *w);
    /* "-": standard output (the format is written front to back, never
     * seeking), named so in messages */
    bool to_stdout = !strcmp(path, "-");
    if (!w || !(w->path = strdup(to_stdout ? "<stdout>" : path))) {
        free(w);
        goto oom;
    }
    uint32_t chunk = opts && opts->chunk_bytes ? opts->chunk_bytes : WRF_DEFAULT_CHUNK_BYTES;
    /* The last record may overshoot the target by up to one record. */
    w->chunk_bytes = chunk > WRF_EVENT_CHUNK_RAW_MAX - WRF_RECORD_MAX ? WRF_EVENT_CHUNK_RAW_MAX - WRF_RECORD_MAX : chunk;
    w->strings.next_id = w->kernels.next_id = w->allocs.next_id = w->sites.next_id = 1;
    w->next_module_id = 1;
    w->file = to_stdout ? stdout : fopen(path, "wb");
    if (!w->file) {
        wr_error_at(err, path, 0, "cannot create: %s", strerror(errno));
        free(w->path);
        free(w);
        free(h.data);
        return NULL;
    }
    int rc = write_bytes(w, h.data, h.len, err);
    free(h.data);
    if (rc) {
        wr_writer_abandon(w);
        return NULL;
    }
    if (opts && opts->background > 0)
        bg_start(w, (unsigned)opts->background);
    return w;
oom:
    free(h.data);
    wr_error_at(err, path, 0, "out of memory");
    return NULL;
}

static void writer_free(wr_writer *w)
{
    free(w->events.data);
    free(w->strings.bytes.data);
    free(w->kernels.bytes.data);
    free(w->allocs.bytes.data);
    free(w->sites.bytes.data);
    for (uint32_t i = 0; i < w->module_count; i++)
        free(w->modules[i].entry.data);
    free(w->modules);
    for (uint32_t i = 0; i < w->string_total; i++)
        free(w->string_by_id[i]);
    free(w->string_by_id);
    free(w->hash_slots);
    free(w->kernel_of_string);
    free(w->index.data);
    free(w->inline_job.out.data);
    free(w->path);
    free(w);
}

int wr_writer_close(wr_writer *w, wr_error *err)
{
    if (!w)
        return -1;
    int rc = flush_events(w, err);
    if (w->bg) {   /* the rest (index, trailer) is written by this thread */
        if (!rc)
            rc = bg_wait(w, err);
        bg_stop(w, rc != 0);
    }
    if (!rc && w->index.len + WRF_INDEX_FIXED > WRF_CHUNK_RAW_MAX) {
        wr_error_at(err, w->path, w->offset, "too many chunks (%u) for the footer index",
                    w->index_entries);
        rc = -1;
    }
    if (!rc) {
        uint64_t index_offset = w->offset;
        uint8_t *fixed = malloc(WRF_INDEX_FIXED + w->index.len);
        if (!fixed) {
            rc = fail_io(w, err, "out of memory");
        } else {
            wrf_put64(fixed, w->events_written);
            wrf_put64(fixed + 8, w->lost_events);
            wrf_put32(fixed + 16, w->index_entries);
            wrf_put32(fixed + 20, 0);
            if (w->index.len)
                memcpy(fixed + WRF_INDEX_FIXED, w->index.data, w->index.len);
            rc = write_chunk(w, WRF_CHUNK_INDEX, w->index_entries, 0, 0, fixed,
                             WRF_INDEX_FIXED + w->index.len, err);
            free(fixed);
        }
        if (!rc) {
            uint8_t t[WRF_TRAILER_SIZE];
            wrf_put64(t, index_offset);
            wrf_put32(t + 8, WRF_TRAILER_MAGIC);
            wrf_put32(t + 12, wrf_crc32c(0, t, 12));
            rc = write_bytes(w, t, sizeof t, err);
        }
    }
    if (fclose(w->file) && !rc) {
        wr_error_at(err, w->path, w->offset, "close failed: %s", strerror(errno));
        rc = -1;
    }
    writer_free(w);
    return rc;
}

void wr_writer_abandon(wr_writer *w)
{
    if (!w)
        return;
    bg_stop(w, true);
    fclose(w->file);
    writer_free(w);
}

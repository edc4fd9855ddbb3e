/* The streaming .wrt reader: header, chunk by chunk, metadata into the
 * catalog, event chunks into independently owned batches.
 *
 * Hostile input: every length is checked against the bytes actually left in
 * the file and against fixed caps before anything is allocated, so the
 * largest allocation is bounded (see FORMAT.md "Limits"); every failure
 * names the file and the byte offset. */
#include <errno.h>
#include <stdarg.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "format_internal.h"

struct wr_reader {
    FILE *file;
    char *path;
    uint64_t pos;               /* offset of the next unread byte */
    /* A stream (a pipe): its size is known only at its end, so the checks
     * of a length against the bytes left become reads that may end short
     * (read_exact: 1), and every byte read is hashed on the way. */
    int stream;
    /* A file opened with wr_reader_open_hashing: the bytes read in file
     * order from its start are hashed on the way too (hashed_bytes). */
    int hash_file;
    wr_header header;
    char *header_strings[5];
    wr_catalog *catalog;
    wr_reader_stats stats;
    enum { READING, AT_END, FAILED } state;
    wr_error failure;           /* repeated for every call after a failure */

    uint8_t *stored;            /* payload as read (compressed or not) */
    size_t stored_cap;
    uint8_t *raw;               /* decompressed payload */
    size_t raw_cap;
    uint64_t next_seq;

    /* The footer index must list exactly the chunks read: both sides are
     * reduced to a CRC of the entry bytes, so checking needs no memory. */
    uint32_t index_crc;
    uint32_t index_entries;
    int seeked;                 /* wr_reader_seek skipped chunks: no cross-check */
    uint64_t metadata_chunks, other_chunks;
    uint64_t event_raw_bytes, event_stored_bytes;
    uint64_t kind_counts[WR_EV_KIND_MAX + 1];
};

uint64_t wr_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- errors ---- */

static int fail(wr_reader *r, wr_error *err, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(wr_reader *r, wr_error *err, uint64_t offset, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    wr_error_at(&r->failure, r->path, offset, "%s", what);
    r->state = FAILED;
    if (err)
        *err = r->failure;
    return -1;
}

/* 0: read; -1: a read error, or a file shorter than its size said;
 * 1 (streams only): the stream ended first, and its size is now known. */
static int read_exact(wr_reader *r, void *buf, size_t len)
{
    size_t got = len ? fread(buf, 1, len, r->file) : 0;
    /* the bytes that extend the hashed prefix: a read after a seek back
     * over it hashes only what lies beyond, one after a seek past it
     * nothing (wr_replay then hashes the rest of the file itself) */
    if (r->hash_file && r->pos <= r->stats.hashed_bytes && r->pos + got > r->stats.hashed_bytes) {
        size_t skip = (size_t)(r->stats.hashed_bytes - r->pos);
        r->stats.stream_hash = wr_fnv1a64(r->stats.stream_hash, (const unsigned char *)buf + skip,
                                          got - skip);
        r->stats.hashed_bytes = r->pos + got;
    }
    if (r->stream) {
        r->stats.stream_hash = wr_fnv1a64(r->stats.stream_hash, buf, got);
        r->stats.hashed_bytes += got;
        r->pos += got;
        if (got == len)
            return 0;
        if (ferror(r->file))
            return -1;
        r->stats.file_bytes = r->pos;
        return 1;
    }
    if (got != len)
        return -1;
    r->pos += len;
    return 0;
}

/* A stream after its footer: 0 when it ends there, else the bytes that
 * follow, read to the end (so that the writer of a pipe is not cut off) but
 * no further than STREAM_REST_MAX (an endless source is no hang): *more is
 * then set. */
#define STREAM_REST_MAX (1u << 20)
static uint64_t stream_rest(wr_reader *r, int *more)
{
    uint8_t buf[4096];
    uint64_t extra = 0;
    int rc;
    do {
        uint64_t at = r->pos;
        rc = read_exact(r, buf, sizeof buf);
        extra += r->pos - at;
    } while (rc == 0 && extra < STREAM_REST_MAX);
    *more = rc == 0;
    return extra;
}

/* ---- header ---- */

/* In the binary library, not the text one: the reader names a text trace
 * given where a binary one is read, and builds that link only the binary
 * sources (the reader's fuzz target) must still link. */
int wr_text_looks_like(const unsigned char *head, size_t n)
{
    if (n == 0 || head[0] == wrf_file_magic[0])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (head[i] < 0x20 && head[i] != '\n' && head[i] != '\r' && head[i] != '\t')
            return 0;
    return 1;
}

static int parse_header(wr_reader *r, wr_error *err)
{
    uint8_t fixed[16];
    int got = r->stats.file_bytes < 16 ? 1 : read_exact(r, fixed, 16);
    if (got < 0)
        return fail(r, err, 0, "read error in header");
    if (got)
        return fail(r, err, 0, "too short for a warprace trace (%llu bytes)",
                    (unsigned long long)r->stats.file_bytes);
    if (memcmp(fixed, wrf_file_magic, WRF_MAGIC_LEN)) {
        /* a text trace where a binary one is read (standard input, a pipe)
         * says how to get the binary one */
        bool text = wr_text_looks_like(fixed, sizeof fixed);
        return fail(r, err, 0, text ? "not a warprace trace (bad magic); it begins like text: "
                                      "`warprace asm FILE -o -` makes a trace of a text trace"
                                    : "not a warprace trace (bad magic)");
    }
    uint32_t size = wrf_get32(fixed + 12);
    if (size < WRF_HEADER_MIN || size > WRF_HEADER_MAX)
        return fail(r, err, 12, "header size %u out of range [%u, %u]", size, WRF_HEADER_MIN,
                    WRF_HEADER_MAX);
    if (size > r->stats.file_bytes)
        return fail(r, err, r->stats.file_bytes, "file ends inside the %u-byte header", size);
    uint8_t *h = malloc(size);
    if (!h)
        return fail(r, err, 0, "out of memory");
    memcpy(h, fixed, 16);
    got = read_exact(r, h + 16, size - 16);
    if (got) {
        free(h);
        if (got > 0)
            return fail(r, err, r->stats.file_bytes, "file ends inside the %u-byte header", size);
        return fail(r, err, 16, "read error in header");
    }
    if (wrf_get32(h + size - 4) != wrf_crc32c(0, h, size - 4)) {
        free(h);
        return fail(r, err, size - 4, "header checksum mismatch");
    }
    r->header.version_major = wrf_get16(h + 8);
    r->header.version_minor = wrf_get16(h + 10);
    if (r->header.version_major != WR_FORMAT_MAJOR) {
        free(h);
        return fail(r, err, 8,
                    "format version %u.%u is not supported: this reader reads version %u.x "
                    "(a different major version is incompatible)",
                    r->header.version_major, r->header.version_minor, WR_FORMAT_MAJOR);
    }
    r->header.sm_arch = wrf_get32(h + 16);
    r->header.warp_size = wrf_get32(h + 20);
    r->header.clock_khz = wrf_get32(h + 24);
    r->header.time_unix_ns = (int64_t)wrf_get64(h + 32);
    if (r->header.warp_size != WR_WARP_SIZE) {
        free(h);
        return fail(r, err, 20, "warp size %u is not supported (the event model has 32 lanes)",
                    r->header.warp_size);
    }
    uint32_t at = WRF_HEADER_FIXED, end = size - 4;
    for (int i = 0; i < 5; i++) {
        if (end - at < 4) {
            free(h);
            return fail(r, err, at, "header string %d overruns the header", i + 1);
        }
        uint32_t len = wrf_get32(h + at);
        if (len > end - at - 4) {
            free(h);
            return fail(r, err, at, "header string length %u overruns the header", len);
        }
        char *s = malloc((size_t)len + 1);
        if (!s) {
            free(h);
            return fail(r, err, at, "out of memory");
        }
        memcpy(s, h + at + 4, len);
        s[len] = '\0';
        r->header_strings[i] = s;
        at += 4 + len;
    }
    /* Bytes between the last known field and the CRC belong to later minor
     * versions: skipped. */
    free(h);
    r->header.producer = r->header_strings[0];
    r->header.producer_version = r->header_strings[1];
    r->header.device = r->header_strings[2];
    r->header.host = r->header_strings[3];
    r->header.command = r->header_strings[4];
    return 0;
}

static wr_reader *reader_new(FILE *f, const char *name, uint64_t size, int stream, int hash_file,
                             wr_error *err)
{
    wr_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name)) || !(r->catalog = wrf_catalog_new())) {
        if (r)
            free(r->path);
        free(r);
        fclose(f);
        wr_error_at(err, name, 0, "out of memory");
        return NULL;
    }
    r->file = f;
    r->stream = stream;
    r->hash_file = hash_file && !stream;
    r->stats.streamed = stream;
    r->stats.stream_hash = WR_FNV1A64_INIT;
    r->stats.file_bytes = stream ? UINT64_MAX : size;   /* a stream's: at its end */
    if (parse_header(r, err)) {
        wr_reader_close(r);
        return NULL;
    }
    return r;
}

wr_reader *wrf_reader_open_file(const char *path, wr_error *err, int *io_failure, int hash)
{
    if (io_failure)
        *io_failure = 0;
    if (!strcmp(path, "-"))
        return wr_reader_open_stream(stdin, WR_STDIN_NAME, err);
    FILE *f = fopen(path, "rb");
    struct stat st;
    int fstat_failed = f && fstat(fileno(f), &st) != 0;
    if (f && !fstat_failed && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)))
        return wr_reader_open_stream(f, path, err);   /* a named pipe, <(...), a device */
    if (!f || fstat_failed || !S_ISREG(st.st_mode)) {
        /* errno speaks only for a failed call: fopen opens a directory */
        const char *why = !f || fstat_failed ? strerror(errno)
                          : S_ISDIR(st.st_mode)  ? "is a directory"
                                                 : "not a regular file";
        wr_error_at(err, path, 0, "cannot open: %s", why);
        if (f)
            fclose(f);
        if (io_failure)
            *io_failure = 1;
        return NULL;
    }
    return reader_new(f, path, (uint64_t)st.st_size, 0, hash, err);
}

static wr_reader *open_path(const char *path, wr_error *err, int hash)
{
    if (!path) {
        wr_error_at(err, "(null)", 0, "no path");
        return NULL;
    }
    return wrf_reader_open_file(path, err, NULL, hash);
}

wr_reader *wr_reader_open(const char *path, wr_error *err) { return open_path(path, err, 0); }

wr_reader *wr_reader_open_hashing(const char *path, wr_error *err)
{
    return open_path(path, err, 1);
}

wr_reader *wr_reader_open_memory(const void *data, size_t size, const char *name, wr_error *err)
{
    if (!name)
        name = "(memory)";
    if (size < 16) {
        wr_error_at(err, name, 0, "too short for a warprace trace (%zu bytes)", size);
        return NULL;
    }
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) {
        wr_error_at(err, name, 0, "cannot open in memory: %s", strerror(errno));
        return NULL;
    }
    return reader_new(f, name, size, 0, 0, err);
}

wr_reader *wr_reader_open_stream(FILE *f, const char *name, wr_error *err)
{
    if (!name)
        name = "(stream)";
    if (!f) {
        wr_error_at(err, name, 0, "no stream");
        return NULL;
    }
    return reader_new(f, name, 0, 1, 0, err);
}

const wr_header *wr_reader_header(const wr_reader *r) { return &r->header; }
const wr_catalog *wr_reader_catalog(const wr_reader *r) { return r->catalog; }
const char *wr_reader_path(const wr_reader *r) { return r->path; }
const wr_reader_stats *wr_reader_stats_get(const wr_reader *r) { return &r->stats; }

void wr_reader_close(wr_reader *r)
{
    if (!r)
        return;
    if (r->file)
        fclose(r->file);
    for (int i = 0; i < 5; i++)
        free(r->header_strings[i]);
    wrf_catalog_free(r->catalog);
    free(r->stored);
    free(r->raw);
    free(r->path);
    free(r);
}

void wrf_reader_detail(const wr_reader *r, wrf_reader_detail_stats *d)
{
    d->metadata_chunks = r->metadata_chunks;
    d->other_chunks = r->other_chunks;
    d->event_raw_bytes = r->event_raw_bytes;
    d->event_stored_bytes = r->event_stored_bytes;
    memcpy(d->kind_counts, r->kind_counts, sizeof d->kind_counts);
}

/* ---- metadata chunks ---- */

static int absorb_metadata(wr_reader *r, const wrf_chunk_header *h, uint64_t chunk_at,
                           const uint8_t *p, wr_error *err)
{
    wr_catalog *c = r->catalog;
    uint32_t have;
    const char *what;
    switch (h->type) {
    case WRF_CHUNK_STRINGS: have = wrf_catalog_string_count(c); what = "string"; break;
    case WRF_CHUNK_KERNELS: have = wr_catalog_kernel_count(c); what = "kernel"; break;
    case WRF_CHUNK_ALLOCS: have = wr_catalog_alloc_count(c); what = "allocation"; break;
    case WRF_CHUNK_SITES: have = wr_catalog_site_count(c); what = "site"; break;
    default: have = wr_catalog_module_count(c); what = "module"; break;
    }
    if (h->first_index != (uint64_t)have + 1)
        return fail(r, err, chunk_at + 24, "%s table chunk starts at id %llu, expected %u", what,
                    (unsigned long long)h->first_index, have + 1);
    if (h->count > WRF_CATALOG_TABLE_MAX - have)
        return fail(r, err, chunk_at + 16, "%s table would exceed %u entries", what,
                    WRF_CATALOG_TABLE_MAX);
    const uint64_t payload_at = chunk_at + WRF_CHUNK_HEADER_SIZE;
    const uint8_t *end = p + h->raw_size;
    uint32_t strings = wrf_catalog_string_count(c);
    for (uint32_t i = 0; i < h->count; i++) {
        size_t left = (size_t)(end - p);
        switch (h->type) {
        case WRF_CHUNK_STRINGS: {
            if (left < 4 || wrf_get32(p) > left - 4)
                return fail(r, err, payload_at, "string %llu overruns its chunk (payload byte %zu)",
                            (unsigned long long)h->first_index + i, (size_t)(h->raw_size - left));
            uint32_t len = wrf_get32(p);
            if (memchr(p + 4, 0, len))
                return fail(r, err, payload_at, "string %llu contains a NUL byte",
                            (unsigned long long)h->first_index + i);
            if (wrf_catalog_add_string(c, (const char *)p + 4, len))
                return fail(r, err, payload_at, "out of memory");
            p += 4 + len;
            break;
        }
        case WRF_CHUNK_KERNELS: {
            if (left < WRF_KERNEL_ENTRY)
                return fail(r, err, payload_at, "kernel table overruns its chunk");
            uint32_t name = wrf_get32(p);
            if (name > strings)
                return fail(r, err, payload_at, "kernel %llu names undefined string %u",
                            (unsigned long long)h->first_index + i, name);
            if (wrf_catalog_add_kernel(c, name))
                return fail(r, err, payload_at, "out of memory");
            p += WRF_KERNEL_ENTRY;
            break;
        }
        case WRF_CHUNK_ALLOCS: {
            if (left < WRF_ALLOC_ENTRY)
                return fail(r, err, payload_at, "allocation table overruns its chunk");
            uint32_t name = wrf_get32(p + 16);
            if (name > strings)
                return fail(r, err, payload_at, "allocation %llu names undefined string %u",
                            (unsigned long long)h->first_index + i, name);
            /* DSMEM names other blocks' SHARED allocations: never an allocation's own */
            if (p[20] > WR_ALLOC_SPACE_MAX)
                return fail(r, err, payload_at,
                            "allocation %llu has a bad space %u (global, shared or local)",
                            (unsigned long long)h->first_index + i, p[20]);
            if (p[21] || p[22] || p[23])
                return fail(r, err, payload_at, "allocation %llu has a bad reserved byte",
                            (unsigned long long)h->first_index + i);
            if (wrf_catalog_add_alloc(c, wrf_get64(p), wrf_get64(p + 8), p[20], name))
                return fail(r, err, payload_at, "out of memory");
            p += WRF_ALLOC_ENTRY;
            break;
        }
        case WRF_CHUNK_SITES: {
            if (left < WRF_SITE_ENTRY)
                return fail(r, err, payload_at, "site table overruns its chunk");
            uint32_t file = wrf_get32(p + 8), fn = wrf_get32(p + 16);
            if (file > strings || fn > strings || wrf_get32(p + 20))
                return fail(r, err, payload_at, "site %llu names an undefined string",
                            (unsigned long long)h->first_index + i);
            if (wrf_catalog_add_site(c, wrf_get64(p), file, wrf_get32(p + 12), fn))
                return fail(r, err, payload_at, "out of memory");
            p += WRF_SITE_ENTRY;
            break;
        }
        default: { /* MODULES */
            if (left < WRF_MODULE_ENTRY_FIXED || wrf_get64(p + 8) > left - WRF_MODULE_ENTRY_FIXED)
                return fail(r, err, payload_at, "module %llu overruns its chunk",
                            (unsigned long long)h->first_index + i);
            uint32_t name = wrf_get32(p);
            if (name > strings || wrf_get32(p + 4))
                return fail(r, err, payload_at, "module %llu names an undefined string",
                            (unsigned long long)h->first_index + i);
            uint64_t size = wrf_get64(p + 8);
            if (wrf_catalog_add_module(c, name, p + WRF_MODULE_ENTRY_FIXED, size))
                return fail(r, err, payload_at, "out of memory");
            p += WRF_MODULE_ENTRY_FIXED + size;
            break;
        }
        }
    }
    if (p != end)
        return fail(r, err, payload_at, "%zu unused bytes at the end of a %s table chunk",
                    (size_t)(end - p), what);
    return 0;
}

/* ---- event chunks: the hot path ---- */

/* Decodes `h->count` records from p into a new batch.  On a bad record,
 * *bad_record and *bad_byte say where and *why what; returns -1. */
typedef struct decode_fault {
    uint32_t record;
    size_t byte;
    const char *why;
} decode_fault;

/* a device event naming a warp at or past WR_BLOCK_WARPS_MAX */
static const char warp_past_block[] = "warp index at or past 32 (a block has at most 1024 threads)";

#define DECODE_FAIL(msg)                                                                      \
    do {                                                                                      \
        fault->record = i;                                                                    \
        fault->byte = (size_t)(p - start);                                                    \
        fault->why = (msg);                                                                   \
        return -1;                                                                            \
    } while (0)

static int decode_events(const uint8_t *start, size_t raw_size, uint32_t count, uint32_t vectors,
                         const wr_catalog *cat, wr_event *events, uint64_t *pool, uint64_t first_seq,
                         uint64_t *lost, uint64_t *kind_counts, decode_fault *fault)
{
    const uint8_t *p = start, *end = start + raw_size;
    const uint32_t sites = wr_catalog_site_count(cat), kernels = wr_catalog_kernel_count(cat),
                   allocs = wr_catalog_alloc_count(cat);
    uint32_t vectors_left = vectors;
    uint32_t i;
    for (i = 0; i < count; i++) {
        wr_event *ev = &events[i];
        if ((size_t)(end - p) < WRF_RECORD_MIN)
            DECODE_FAIL("record header overruns the chunk");
        const uint8_t kind = p[0], b1 = p[1], b2 = p[2], b3 = p[3];
        const uint32_t site = wrf_get32(p + 4);
        if (site > sites)
            DECODE_FAIL("undefined source site");
        ev->kind = kind;
        ev->site = site;
        ev->seq = first_seq + i;
        const uint8_t *q = p + 8;
        const size_t left = (size_t)(end - q);
        kind_counts[kind <= WR_EV_KIND_MAX ? kind : 0]++;
        if (kind == WR_EV_ACCESS) {
            wr_access *a = &ev->u.access;
            const unsigned mode = b1 & WRF_AF_MODE_MASK, lg = (b1 >> WRF_AF_SIZE_SHIFT) & 7u;
            const unsigned op = b2 & 7u, space = (b2 >> 3) & 3u, order = b2 >> 5;
            const unsigned aop = b3 & 15u, scope = (b3 >> 4) & 7u;
            if (mode > WR_ADDR_VECTOR || lg > 4 || op > WR_OP_MAX || space > WR_SPACE_MAX ||
                order > WR_ORDER_MAX || aop > WR_AOP_MAX_ID || scope > WR_SCOPE_MAX || (b3 & 0x80u) ||
                ((b1 & WRF_AF_NARROW) && mode != WR_ADDR_VECTOR))
                DECODE_FAIL("access field out of range");
            if ((op == WR_OP_ATOMIC_RMW) != (aop != WR_AOP_NONE) ||
                ((b1 & WRF_AF_CAS) != 0) != (aop == WR_AOP_CAS))
                DECODE_FAIL("inconsistent atomic op");
            size_t fixed = 12 + ((b1 & WRF_AF_FULL_MASK) ? 0 : 4) + ((b1 & WRF_AF_CAS) ? 4 : 0);
            if (left < fixed)
                DECODE_FAIL("access record overruns the chunk");
            a->launch = wrf_get32(q);
            a->block = wrf_get32(q + 4);
            a->warp = wrf_get32(q + 8);
            if (a->warp >= WR_BLOCK_WARPS_MAX)
                DECODE_FAIL(warp_past_block);
            q += 12;
            uint32_t mask = WR_FULL_MASK, cas = 0;
            if (!(b1 & WRF_AF_FULL_MASK)) { mask = wrf_get32(q); q += 4; }
            if (b1 & WRF_AF_CAS) { cas = wrf_get32(q); q += 4; }
            if (cas & ~mask)
                DECODE_FAIL("cas_success has inactive lanes");
            a->active_mask = mask;
            a->cas_success = cas;
            a->op = (uint8_t)op;
            a->atomic_op = (uint8_t)aop;
            a->scope = (uint8_t)scope;
            a->order = (uint8_t)order;
            a->space = (uint8_t)space;
            a->size = (uint8_t)(1u << lg);
            a->addr_mode = (uint8_t)mode;
            size_t rest = left - fixed;
            if (mode == WR_ADDR_STRIDED) {
                if (rest < 16)
                    DECODE_FAIL("access record overruns the chunk");
                a->base = wrf_get64(q);
                a->stride = (int64_t)wrf_get64(q + 8);
                a->lane_addr = NULL;
                q += 16;
            } else if (mode == WR_ADDR_UNIFORM) {
                if (rest < 8)
                    DECODE_FAIL("access record overruns the chunk");
                a->base = wrf_get64(q);
                a->stride = 0;
                a->lane_addr = NULL;
                q += 8;
            } else {
                if (!vectors_left)
                    DECODE_FAIL("more vector accesses than the chunk header declares");
                vectors_left--;
                const unsigned lanes = (unsigned)__builtin_popcount(mask);
                uint64_t *out = pool;
                pool += WR_WARP_SIZE;
                memset(out, 0, WR_WARP_SIZE * sizeof *out);
                if (b1 & WRF_AF_NARROW) {
                    if (!lanes || rest < 8 + (size_t)lanes * 4)
                        DECODE_FAIL("vector access overruns the chunk");
                    const uint64_t base = wrf_get64(q);
                    q += 8;
                    for (uint32_t m = mask; m; m &= m - 1, q += 4)
                        out[__builtin_ctz(m)] = base + (uint64_t)(int64_t)(int32_t)wrf_get32(q);
                } else {
                    if (rest < (size_t)lanes * 8)
                        DECODE_FAIL("vector access overruns the chunk");
                    for (uint32_t m = mask; m; m &= m - 1, q += 8)
                        out[__builtin_ctz(m)] = wrf_get64(q);
                }
                a->base = 0;
                a->stride = 0;
                a->lane_addr = out;
            }
            if (!wr_access_shared_offsets_ok(a))
                DECODE_FAIL("shared memory offset at or past 16 MiB (2^24)");
            p = q;
            continue;
        }
        static const uint8_t body_size[WR_EV_KIND_MAX + 1] = {
            [WR_EV_BARRIER] = 24, [WR_EV_WARP_SYNC] = 16, [WR_EV_FENCE] = 16,
            [WR_EV_BLOCK_ENTER] = 8, [WR_EV_BLOCK_EXIT] = 8, [WR_EV_KERNEL_LAUNCH] = 52,
            [WR_EV_KERNEL_END] = 4, [WR_EV_EVENT_RECORD] = 8, [WR_EV_STREAM_WAIT] = 8,
            [WR_EV_EVENT_SYNC] = 8, [WR_EV_STREAM_SYNC] = 4, [WR_EV_DEVICE_SYNC] = 0,
            [WR_EV_HOST_COPY] = 28, [WR_EV_ALLOC] = 4, [WR_EV_FREE] = 4, [WR_EV_LOST] = 16,
        };
        if (kind == 0 || kind > WR_EV_KIND_MAX)
            DECODE_FAIL("unknown event kind");
        if (left < body_size[kind])
            DECODE_FAIL("record overruns the chunk");
        /* b1 of a BARRIER is its scope (1.1), b2 its mode (1.3); older
         * readers see them as reserved */
        if ((b1 && kind != WR_EV_BARRIER) ||
            (b2 && kind != WR_EV_FENCE && kind != WR_EV_HOST_COPY && kind != WR_EV_BARRIER) ||
            (b3 && kind != WR_EV_FENCE && kind != WR_EV_HOST_COPY))
            DECODE_FAIL("reserved record byte is not zero");
        switch (kind) {
        case WR_EV_BARRIER:
            if (!wr_barrier_scope_ok(b1))
                DECODE_FAIL("bad barrier scope");
            ev->u.barrier = (wr_barrier){wrf_get32(q), wrf_get32(q + 4), wrf_get32(q + 8),
                                         wrf_get32(q + 12), wrf_get32(q + 16), wrf_get32(q + 20), b1,
                                         b2};
            /* an mbarrier's id is its shared offset, which
             * wr_barrier_mode_problem checks below */
            if (ev->u.barrier.warp >= WR_BLOCK_WARPS_MAX)
                DECODE_FAIL(warp_past_block);
            if ((b1 == WR_BAR_CLUSTER || b1 == WR_BAR_GRID) && ev->u.barrier.barrier_id)
                DECODE_FAIL("cluster or grid barrier with a barrier id");
            {
                const char *why = wr_barrier_mode_problem(&ev->u.barrier);
                if (why)
                    DECODE_FAIL(why);
            }
            break;
        case WR_EV_WARP_SYNC:
            ev->u.warp_sync = (wr_warp_sync){wrf_get32(q), wrf_get32(q + 4), wrf_get32(q + 8),
                                             wrf_get32(q + 12)};
            if (ev->u.warp_sync.warp >= WR_BLOCK_WARPS_MAX)
                DECODE_FAIL(warp_past_block);
            break;
        case WR_EV_FENCE:
            if (b2 > WR_SCOPE_MAX || b3 > WR_ORDER_MAX)
                DECODE_FAIL("fence scope or order out of range");
            ev->u.fence = (wr_fence){wrf_get32(q), wrf_get32(q + 4), wrf_get32(q + 8),
                                     wrf_get32(q + 12), b2, b3};
            if (ev->u.fence.warp >= WR_BLOCK_WARPS_MAX)
                DECODE_FAIL(warp_past_block);
            break;
        case WR_EV_BLOCK_ENTER:
        case WR_EV_BLOCK_EXIT:
            ev->u.block = (wr_block_mark){wrf_get32(q), wrf_get32(q + 4)};
            break;
        case WR_EV_KERNEL_LAUNCH: {
            wr_launch *l = &ev->u.launch;
            l->launch = wrf_get32(q);
            l->kernel = wrf_get32(q + 4);
            if (l->kernel > kernels)
                DECODE_FAIL("launch of an undefined kernel");
            for (int d = 0; d < 3; d++) {
                l->grid[d] = wrf_get32(q + 8 + 4 * d);
                l->block_dim[d] = wrf_get32(q + 20 + 4 * d);
                l->cluster[d] = wrf_get32(q + 32 + 4 * d);
            }
            l->shared_bytes = wrf_get32(q + 44);
            l->stream = wrf_get32(q + 48);
            if ((uint64_t)l->block_dim[0] * l->block_dim[1] * l->block_dim[2] >
                WR_BLOCK_WARPS_MAX * WR_WARP_SIZE)
                DECODE_FAIL("block of more than 1024 threads");
            break;
        }
        case WR_EV_KERNEL_END:
            ev->u.kernel_end.launch = wrf_get32(q);
            break;
        case WR_EV_EVENT_RECORD:
        case WR_EV_STREAM_WAIT:
        case WR_EV_EVENT_SYNC:
            ev->u.stream_event = (wr_stream_event){wrf_get32(q), wrf_get32(q + 4)};
            break;
        case WR_EV_STREAM_SYNC:
            ev->u.stream_sync.stream = wrf_get32(q);
            break;
        case WR_EV_DEVICE_SYNC:
            break;
        case WR_EV_HOST_COPY:
            if (b2 > WR_COPY_MAX || b3 > 1)
                DECODE_FAIL("copy kind or async flag out of range");
            ev->u.copy = (wr_host_copy){wrf_get64(q), wrf_get64(q + 8), wrf_get64(q + 16),
                                        wrf_get32(q + 24), b2, b3};
            if (!wr_copy_size_ok(ev->u.copy.dst, ev->u.copy.src, ev->u.copy.bytes))
                DECODE_FAIL("copy larger than 2^39 bytes or wrapping around the address space");
            break;
        case WR_EV_ALLOC:
        case WR_EV_FREE:
            ev->u.alloc.alloc = wrf_get32(q);
            if (ev->u.alloc.alloc > allocs)
                DECODE_FAIL("undefined allocation");
            break;
        case WR_EV_LOST:
            ev->u.lost = (wr_lost){wrf_get64(q), wrf_get32(q + 8), wrf_get32(q + 12)};
            *lost = wr_lost_add(*lost, ev->u.lost.count);
            break;
        }
        p = q + body_size[kind];
    }
    if (vectors_left)
        DECODE_FAIL("fewer vector accesses than the chunk header declares");
    if (p != end)
        DECODE_FAIL("unused bytes after the last record");
    return 0;
}

/* One allocation per batch: the events, then the vector lane pool, so a
 * batch is freed with one call on whichever thread consumed it. */
static int decode_event_chunk(wr_reader *r, const wrf_chunk_header *h, uint64_t chunk_at,
                              const uint8_t *payload, wr_batch *out, wr_error *err)
{
    if (h->first_index != r->next_seq)
        return fail(r, err, chunk_at + 24, "event chunk starts at seq %llu, expected %llu",
                    (unsigned long long)h->first_index, (unsigned long long)r->next_seq);
    size_t events_bytes = (size_t)h->count * sizeof(wr_event);
    size_t total = events_bytes + (size_t)h->aux * WR_WARP_SIZE * sizeof(uint64_t);
    void *block = malloc(total ? total : 1);
    if (!block)
        return fail(r, err, chunk_at, "out of memory for %u events", h->count);
    wr_event *events = block;
    uint64_t *pool = (uint64_t *)((char *)block + events_bytes);
    decode_fault fault = {0};
    uint64_t lost = 0;
    if (decode_events(payload, h->raw_size, h->count, h->aux, r->catalog, events, pool,
                      h->first_index, &lost, r->kind_counts, &fault)) {
        free(block);
        return fail(r, err, chunk_at + WRF_CHUNK_HEADER_SIZE,
                    "event chunk at offset %llu: record %u (payload byte %zu): %s",
                    (unsigned long long)chunk_at, fault.record, fault.byte, fault.why);
    }
    r->stats.lost_events = wr_lost_add(r->stats.lost_events, lost);
    r->stats.events += h->count;
    r->stats.event_chunks++;
    r->event_raw_bytes += h->raw_size;
    r->event_stored_bytes += h->stored_size;
    r->next_seq += h->count;
    out->events = events;
    out->count = h->count;
    out->first_seq = h->first_index;
    out->chunk_offset = chunk_at;
    out->priv_ = block;
    return 1;
}

void wr_batch_release(wr_batch *b)
{
    if (!b)
        return;
    free(b->priv_);
    b->priv_ = NULL;
    b->events = NULL;
    b->count = 0;
}

/* ---- footer ---- */

static void mark_truncated(wr_reader *r, uint64_t at)
{
    r->stats.truncated = 1;
    r->stats.truncated_at = at;
    r->stats.truncated_bytes = r->stats.file_bytes - at;
    r->state = AT_END;
}

static int read_footer(wr_reader *r, const wrf_chunk_header *h, uint64_t chunk_at,
                       const uint8_t *p, wr_error *err)
{
    const uint64_t payload_at = chunk_at + WRF_CHUNK_HEADER_SIZE;
    if (h->raw_size < WRF_INDEX_FIXED ||
        (uint64_t)h->raw_size != WRF_INDEX_FIXED + (uint64_t)h->count * WRF_INDEX_ENTRY)
        return fail(r, err, chunk_at + 8, "index chunk size %u does not match its %u entries",
                    h->raw_size, h->count);
    if (r->seeked)
        goto trailer;   /* only part of the file was read: nothing to compare */
    if (wrf_get64(p) != r->stats.events)
        return fail(r, err, payload_at, "index counts %llu events, the file holds %llu",
                    (unsigned long long)wrf_get64(p), (unsigned long long)r->stats.events);
    if (wrf_get64(p + 8) != r->stats.lost_events)
        return fail(r, err, payload_at + 8, "index counts %llu lost events, the file %llu",
                    (unsigned long long)wrf_get64(p + 8), (unsigned long long)r->stats.lost_events);
    if (wrf_get32(p + 16) != h->count || h->count != r->index_entries || wrf_get32(p + 20))
        return fail(r, err, payload_at + 16, "index lists %u chunks, the file holds %u",
                    wrf_get32(p + 16), r->index_entries);
    if (wrf_crc32c(0, p + WRF_INDEX_FIXED, (size_t)h->count * WRF_INDEX_ENTRY) != r->index_crc)
        return fail(r, err, payload_at + WRF_INDEX_FIXED,
                    "index entries do not match the chunks of the file");
trailer:;
    uint64_t left = r->stats.file_bytes - r->pos;
    uint8_t t[WRF_TRAILER_SIZE];
    uint64_t trailer_at = r->pos;
    int got = left < WRF_TRAILER_SIZE ? 1 : read_exact(r, t, sizeof t);
    if (got > 0) {
        mark_truncated(r, chunk_at);
        return 0;
    }
    if (got < 0)
        return fail(r, err, trailer_at, "read error in the footer trailer");
    if (wrf_get32(t + 12) != wrf_crc32c(0, t, 12))
        return fail(r, err, trailer_at + 12, "footer trailer checksum mismatch");
    if (wrf_get32(t + 8) != WRF_TRAILER_MAGIC || wrf_get64(t) != chunk_at)
        return fail(r, err, trailer_at, "footer trailer does not point at the index chunk");
    int more = 0;
    uint64_t after = r->stream ? stream_rest(r, &more) : left - WRF_TRAILER_SIZE;
    if (after)
        return fail(r, err, r->pos - (r->stream ? after : 0), "%s%llu unexpected bytes after the footer",
                    more ? "more than " : "", (unsigned long long)after);
    r->stats.has_footer = 1;
    r->state = AT_END;
    return 0;
}

/* ---- the chunk loop ---- */

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 65536;
    while (cap2 < need)
        cap2 *= 2;
    uint8_t *b = realloc(*buf, cap2);
    if (!b)
        return -1;
    *buf = b;
    *cap = cap2;
    return 0;
}

/* Reads, checks and decompresses the chunk at r->pos.  1 read (*h, its
 * offset and its payload filled), 0 the file ends there or inside it
 * (marked truncated), -1 corrupt. */
static int read_chunk(wr_reader *r, wrf_chunk_header *h, uint64_t *at_out, const uint8_t **payload_out,
                      wr_error *err)
{
    const uint64_t at = r->pos;
    *at_out = at;
    const uint64_t left = r->stats.file_bytes - at;   /* a stream: unknown, "all" */
    uint8_t hb[WRF_CHUNK_HEADER_SIZE];
    int got = left < WRF_CHUNK_HEADER_SIZE ? 1 : read_exact(r, hb, sizeof hb);
    if (got > 0) {
        /* Includes left == 0: a complete chunk sequence without footer. */
        mark_truncated(r, at);
        return 0;
    }
    if (got < 0)
        return fail(r, err, at, "read error in chunk header");
    if (wrf_get32(hb) != WRF_CHUNK_MAGIC)
        return fail(r, err, at, "no chunk header here (bad chunk magic)");
    if (wrf_chunk_header_decode(hb, h))
        return fail(r, err, at + 36, "chunk header checksum mismatch");
    if (h->codec > WRF_CODEC_LZ4)
        return fail(r, err, at + 5, "unknown codec %u", h->codec);
    if (h->raw_size > WRF_CHUNK_RAW_MAX)
        return fail(r, err, at + 8, "chunk raw size %u exceeds the %u-byte limit", h->raw_size,
                    WRF_CHUNK_RAW_MAX);
    if (h->codec == WRF_CODEC_STORED ? h->stored_size != h->raw_size
                                    : (h->stored_size == 0 || h->stored_size >= h->raw_size ||
                                       h->raw_size > (uint64_t)h->stored_size * WRF_LZ4_MAX_RATIO))
        return fail(r, err, at + 12, "stored size %u impossible for raw size %u (codec %u)",
                    h->stored_size, h->raw_size, h->codec);
    if (h->type == WRF_CHUNK_EVENTS &&
        (h->count == 0 || h->count > WRF_EVENT_CHUNK_COUNT_MAX || h->raw_size > WRF_EVENT_CHUNK_RAW_MAX ||
         (uint64_t)h->count * WRF_RECORD_MIN > h->raw_size ||
         (uint64_t)h->count * WRF_RECORD_MAX < h->raw_size || h->aux > h->count ||
         (uint64_t)h->aux * WRF_VECTOR_RECORD_MIN > h->raw_size))
        return fail(r, err, at + 8,
                    "event chunk sizes inconsistent (raw %u bytes, %u events, %u vector)",
                    h->raw_size, h->count, h->aux);
    if (h->stored_size > left - WRF_CHUNK_HEADER_SIZE) {
        /* A sound header whose payload the file does not hold: the
         * producer stopped mid-chunk. */
        mark_truncated(r, at);
        return 0;
    }
    if (grow(&r->stored, &r->stored_cap, h->stored_size))
        return fail(r, err, at, "out of memory");
    got = read_exact(r, r->stored, h->stored_size);
    if (got > 0) {   /* a stream that stopped mid-chunk */
        mark_truncated(r, at);
        return 0;
    }
    if (got < 0)
        return fail(r, err, at + WRF_CHUNK_HEADER_SIZE, "read error in chunk payload");
    if (wrf_crc32c(0, r->stored, h->stored_size) != h->payload_crc)
        return fail(r, err, at + WRF_CHUNK_HEADER_SIZE, "chunk payload checksum mismatch");
    const uint8_t *payload = r->stored;
    if (h->codec == WRF_CODEC_LZ4) {
        if (grow(&r->raw, &r->raw_cap, h->raw_size))
            return fail(r, err, at, "out of memory");
        int n = LZ4_decompress_safe((const char *)r->stored, (char *)r->raw, (int)h->stored_size,
                                    (int)h->raw_size);
        if (n < 0 || (uint32_t)n != h->raw_size)
            return fail(r, err, at + WRF_CHUNK_HEADER_SIZE,
                        "LZ4 payload does not decompress to %u bytes", h->raw_size);
        payload = r->raw;
    }
    /* an empty payload before any buffer grew: a pointer all the same, so
     * that its parsers may step through it (p + 0 of NULL is undefined) */
    static const uint8_t no_payload[1];
    *payload_out = payload ? payload : no_payload;
    return 1;
}

int wr_reader_next(wr_reader *r, wr_batch *out, wr_error *err)
{
    if (!r || !out)
        return -1;
    memset(out, 0, sizeof *out);
    for (;;) {
        if (r->state == FAILED) {
            if (err)
                *err = r->failure;
            return -1;
        }
        if (r->state == AT_END)
            return 0;
        wrf_chunk_header h;
        uint64_t at;
        const uint8_t *payload;
        int got = read_chunk(r, &h, &at, &payload, err);
        if (got <= 0)
            return got;
        r->stats.chunks++;
        r->stats.raw_bytes += h.raw_size;
        r->stats.compressed_bytes += h.stored_size;
        if (h.type == WRF_CHUNK_INDEX)
            return read_footer(r, &h, at, payload, err) ? -1 : 0;

        uint8_t entry[WRF_INDEX_ENTRY];
        wrf_put64(entry, at);
        wrf_put64(entry + 8, h.first_index);
        wrf_put32(entry + 16, h.count);
        entry[20] = h.type;
        entry[21] = h.codec;
        wrf_put16(entry + 22, 0);
        r->index_crc = wrf_crc32c(r->index_crc, entry, sizeof entry);
        r->index_entries++;

        switch (h.type) {
        case WRF_CHUNK_EVENTS:
            return decode_event_chunk(r, &h, at, payload, out, err);
        case WRF_CHUNK_STRINGS:
        case WRF_CHUNK_KERNELS:
        case WRF_CHUNK_ALLOCS:
        case WRF_CHUNK_SITES:
        case WRF_CHUNK_MODULES:
            r->metadata_chunks++;
            if (absorb_metadata(r, &h, at, payload, err))
                return -1;
            break;
        default:
            /* A chunk type from a later minor version: checked, skipped. */
            r->other_chunks++;
            break;
        }
    }
}

/* ---- random access ---- */

static int seek_to(wr_reader *r, uint64_t offset)
{
    if (fseeko(r->file, (off_t)offset, SEEK_SET))
        return -1;
    r->pos = offset;
    return 0;
}

static int is_table_chunk(uint8_t type)
{
    return type == WRF_CHUNK_STRINGS || type == WRF_CHUNK_KERNELS || type == WRF_CHUNK_ALLOCS ||
           type == WRF_CHUNK_SITES || type == WRF_CHUNK_MODULES;
}

int wr_reader_seek(wr_reader *r, uint64_t seq, wr_error *err)
{
    if (!r)
        return -1;
    if (r->state != READING || r->stats.chunks)
        return fail(r, err, r->pos, "seek is only possible before the first chunk is read");
    if (r->stream)
        return 0;   /* no index to read ahead of: read forward */
    const uint64_t start = r->pos, size = r->stats.file_bytes;
    if (size < start + WRF_CHUNK_HEADER_SIZE + WRF_TRAILER_SIZE)
        return 0;
    /* the trailer: absent or unsound means no usable footer (a recording
     * that stopped early), which is not an error -- read from the start */
    uint8_t t[WRF_TRAILER_SIZE];
    if (seek_to(r, size - WRF_TRAILER_SIZE) || read_exact(r, t, sizeof t))
        return fail(r, err, size - WRF_TRAILER_SIZE, "read error in the footer trailer");
    uint64_t index_at = wrf_get64(t);
    if (wrf_get32(t + 8) != WRF_TRAILER_MAGIC || wrf_get32(t + 12) != wrf_crc32c(0, t, 12) ||
        index_at < start || index_at > size - WRF_TRAILER_SIZE - WRF_CHUNK_HEADER_SIZE) {
        if (seek_to(r, start))
            return fail(r, err, start, "seek error");
        return 0;
    }
    wrf_chunk_header h;
    uint64_t at;
    const uint8_t *p;
    if (seek_to(r, index_at) || read_chunk(r, &h, &at, &p, err) != 1)
        return r->state == FAILED ? -1 : fail(r, err, index_at, "the trailer points at no chunk");
    if (h.type != WRF_CHUNK_INDEX || h.raw_size != WRF_INDEX_FIXED + (uint64_t)h.count * WRF_INDEX_ENTRY)
        return fail(r, err, index_at, "the trailer does not point at a sound index chunk");
    /* the index payload is overwritten by the chunks read below: keep it */
    size_t bytes = (size_t)h.count * WRF_INDEX_ENTRY;
    uint8_t *idx = malloc(bytes ? bytes : 1);
    if (!idx)
        return fail(r, err, index_at, "out of memory");
    memcpy(idx, p + WRF_INDEX_FIXED, bytes);
    int64_t target = -1;
    for (uint32_t i = 0; i < h.count; i++) {
        const uint8_t *e = idx + (size_t)i * WRF_INDEX_ENTRY;
        uint64_t first = wrf_get64(e + 8);
        uint32_t count = wrf_get32(e + 16);
        if (e[20] == WRF_CHUNK_EVENTS && seq >= first && seq - first < count) {
            target = i;
            break;
        }
    }
    int rc = 0;
    if (target < 0) {
        rc = seek_to(r, start) ? fail(r, err, start, "seek error") : 0;
        free(idx);
        return rc;
    }
    /* every definition made before the target chunk, in file order */
    for (uint32_t i = 0; i < (uint32_t)target && rc == 0; i++) {
        const uint8_t *e = idx + (size_t)i * WRF_INDEX_ENTRY;
        uint64_t off = wrf_get64(e);
        if (!is_table_chunk(e[20]))
            continue;
        if (off < start || off >= index_at || seek_to(r, off)) {
            rc = fail(r, err, index_at, "index entry %u points outside the chunks", i);
            break;
        }
        if (read_chunk(r, &h, &at, &p, err) != 1) {
            rc = r->state == FAILED ? -1 : fail(r, err, off, "index entry %u names no chunk", i);
            break;
        }
        if (h.type != e[20] || h.first_index != wrf_get64(e + 8)) {
            rc = fail(r, err, off, "the chunk here is not the one index entry %u names", i);
            break;
        }
        r->metadata_chunks++;
        if (absorb_metadata(r, &h, at, p, err))
            rc = -1;
    }
    if (rc == 0) {
        const uint8_t *e = idx + (size_t)target * WRF_INDEX_ENTRY;
        uint64_t off = wrf_get64(e);
        if (off < start || off >= index_at || seek_to(r, off))
            rc = fail(r, err, index_at, "index entry %lld points outside the chunks", (long long)target);
        else {
            r->next_seq = wrf_get64(e + 8);
            r->seeked = 1;
            rc = 1;
        }
    }
    free(idx);
    return rc;
}

/*
 * warprace trace files (.wrt): writer, streaming reader, catalog.
 *
 * The byte layout is specified in formats/FORMAT.md.  One library serves the
 * recorder (writer) and the analyzer (reader).  All functions report errors
 * through a wr_error that names the file and the byte offset; none of them
 * aborts, prints, or allocates more than a bounded amount on bad input.
 *
 * Threading: a wr_writer or wr_reader is used by one thread at a time.
 * Batches returned by the reader are independent objects that may be handed
 * to other threads and freed there.
 */
#ifndef WARPRACE_TRACE_H
#define WARPRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "warprace/event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WR_FORMAT_MAJOR 1
#define WR_FORMAT_MINOR 3

typedef struct wr_error {
    char msg[512];          /* "FILE: offset N: what went wrong" (binary) or
                               "FILE:LINE:COL: what went wrong" (text) */
    uint64_t offset;        /* byte offset of the fault (binary) */
    uint32_t line, col;     /* text position, 1-based; 0 when not text */
} wr_error;

/* Fills err->msg with "file: offset N: <fmt>" and err->offset. */
void wr_error_at(wr_error *err, const char *file, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- header -------------------------------------------------------------- */

typedef struct wr_header {
    uint16_t version_major, version_minor;
    const char *producer;        /* e.g. "warprace-record" */
    const char *producer_version;
    const char *device;          /* e.g. "NVIDIA H100 80GB HBM3" */
    uint32_t sm_arch;            /* e.g. 90 */
    uint32_t warp_size;          /* 32 */
    uint32_t clock_khz;
    const char *host;
    int64_t time_unix_ns;        /* when recording started */
    const char *command;         /* the recorded command line */
} wr_header;

/* ---- catalog: metadata that events refer to by id ----------------------- */

typedef struct wr_site {
    uint32_t id;
    uint64_t pc;                 /* 0 when unknown */
    const char *file;            /* "" when unknown */
    uint32_t line;
    const char *function;        /* "" when unknown */
} wr_site;

typedef struct wr_kernel {
    uint32_t id;
    const char *name;
} wr_kernel;

typedef struct wr_alloc {
    uint32_t id;
    uint64_t base;
    uint64_t size;
    uint8_t space;               /* wr_space, at most WR_ALLOC_SPACE_MAX */
    const char *name;            /* "" when unknown */
} wr_alloc;

typedef struct wr_module {
    uint32_t id;
    const char *name;
    const uint8_t *image;        /* e.g. a cubin */
    uint64_t size;
} wr_module;

typedef struct wr_catalog wr_catalog;

/* Lookups return NULL for an unknown id (id 0 is always unknown). */
const wr_site *wr_catalog_site(const wr_catalog *c, uint32_t id);
const wr_kernel *wr_catalog_kernel(const wr_catalog *c, uint32_t id);
const wr_alloc *wr_catalog_alloc(const wr_catalog *c, uint32_t id);
const wr_module *wr_catalog_module(const wr_catalog *c, uint32_t id);
uint32_t wr_catalog_site_count(const wr_catalog *c);    /* ids 1..count */
uint32_t wr_catalog_kernel_count(const wr_catalog *c);
uint32_t wr_catalog_alloc_count(const wr_catalog *c);
uint32_t wr_catalog_module_count(const wr_catalog *c);
/* The allocation of `space` that contains addr, or NULL.  When several
 * (freed and re-allocated) contain it, the one with the highest id. */
const wr_alloc *wr_catalog_find_alloc(const wr_catalog *c, uint8_t space, uint64_t addr);

/* ---- writer -------------------------------------------------------------- */

typedef struct wr_writer wr_writer;

typedef struct wr_writer_options {
    uint32_t chunk_bytes;        /* target uncompressed event payload per chunk;
                                    0 = default (256 KiB) */
    int background;              /* threads of the writer's own that compress
                                    and write chunks: 0 = none (the caller's
                                    thread), N = N compressing in parallel (at
                                    most 16), writing in the caller's order:
                                    the same bytes for every N.  The caller's
                                    calls must still not overlap, and
                                    wr_writer_flush returns once they are written */
} wr_writer_options;

/* Creates/truncates path and writes the header.  opts may be NULL.  The
 * path "-" writes to standard output (closed by wr_writer_close): the
 * format is written front to back, so a pipe can take it
 * (`warprace asm t.txt -o - | warprace analyze -`). */
wr_writer *wr_writer_open(const char *path, const wr_header *hdr,
                          const wr_writer_options *opts, wr_error *err);

/* Catalog definitions return the new id (>= 1), or 0 on error.  A definition
 * is written in a metadata chunk before the first event chunk that could
 * refer to it.  Strings are copied.  An allocation's space is at most
 * WR_ALLOC_SPACE_MAX (never DSMEM); another is an error, and the writer
 * carries on without it. */
uint32_t wr_writer_site(wr_writer *w, uint64_t pc, const char *file, uint32_t line,
                        const char *function);
uint32_t wr_writer_kernel(wr_writer *w, const char *name);
/* The id of the kernel this writer already defined under `name`, else a
 * new one (what a recorder gives each launch: one entry per kernel, not
 * per launch). */
uint32_t wr_writer_kernel_once(wr_writer *w, const char *name);
uint32_t wr_writer_alloc(wr_writer *w, uint64_t base, uint64_t size, uint8_t space,
                         const char *name);
uint32_t wr_writer_module(wr_writer *w, const char *name, const void *image, uint64_t size);

/* Appends one event (its seq is ignored).  Returns 0, or -1 with err set. */
int wr_writer_event(wr_writer *w, const wr_event *ev, wr_error *err);
/* Events encoded ahead of the writer, on any thread: the recorder's drain
 * converts and encodes device records on worker threads and appends the
 * batches in order.  A wr_encoded is used by one thread at a time.
 * wr_writer_encoded appends a batch exactly as wr_writer_event calls for
 * its events, in order, would: the same bytes. */
typedef struct wr_encoded wr_encoded;
wr_encoded *wr_encoded_new(void);                  /* NULL: out of memory */
void wr_encoded_free(wr_encoded *b);
void wr_encoded_clear(wr_encoded *b);               /* empty, memory kept */
size_t wr_encoded_count(const wr_encoded *b);       /* events in it */
size_t wr_encoded_bytes(const wr_encoded *b);       /* their encoded size */
/* Encodes ev (its seq is ignored) after the others.  0, or -1 with *why
 * (a static string) when ev breaks the event model's ranges or memory
 * ran out; b is unchanged then. */
int wr_encoded_add(wr_encoded *b, const wr_event *ev, const char **why);
/* Appends b's events.  0, or -1 with err set. */
int wr_writer_encoded(wr_writer *w, const wr_encoded *b, wr_error *err);
/* Writes the pending chunk now (the recorder calls this so that a crash
 * loses at most one chunk).  Returns 0 or -1. */
int wr_writer_flush(wr_writer *w, wr_error *err);
/* Flushes, writes the footer index, closes and frees w.  Returns 0 or -1. */
int wr_writer_close(wr_writer *w, wr_error *err);
/* Frees w without a footer (as if the producer had crashed). */
void wr_writer_abandon(wr_writer *w);

/* ---- reader -------------------------------------------------------------- */

typedef struct wr_reader wr_reader;

typedef struct wr_batch {
    const wr_event *events;      /* in trace order */
    size_t count;
    uint64_t first_seq;          /* seq of events[0] */
    uint64_t chunk_offset;       /* file offset of the chunk they came from */
    /* private: owned storage */
    void *priv_;
} wr_batch;

typedef struct wr_reader_stats {
    uint64_t file_bytes;
    uint64_t chunks;             /* chunks read so far (all types) */
    uint64_t event_chunks;
    uint64_t events;             /* events read so far */
    uint64_t raw_bytes;          /* uncompressed payload bytes read so far */
    uint64_t compressed_bytes;   /* compressed payload bytes read so far */
    uint64_t lost_events;        /* sum of WR_EV_LOST counts seen so far */
    int has_footer;              /* footer present and sound (known after end) */
    int truncated;               /* the file ends inside a chunk or lacks
                                    its footer (known after end) */
    uint64_t truncated_at;       /* offset of the incomplete tail */
    uint64_t truncated_bytes;    /* bytes of the incomplete tail */
    int streamed;                /* read from a stream (wr_reader_open_stream):
                                    file_bytes is known only at its end */
    uint64_t stream_hash;        /* FNV-1a 64 (wr_fnv1a64) of the first
                                    hashed_bytes bytes: a stream's, every byte
                                    read so far (all of it at its end); a file
                                    opened with wr_reader_open_hashing, the
                                    bytes read in order from its start */
    uint64_t hashed_bytes;
} wr_reader_stats;

/* The name of standard input in messages (path "-"). */
#define WR_STDIN_NAME "<stdin>"

/* Opens and checks the header.  NULL with err set on failure.  The path
 * "-" reads standard input as a stream (wr_reader_open_stream), and so is
 * a path that names a named pipe, a socket or a character device (a
 * shell's <(...)); a directory or other non-file is refused. */
wr_reader *wr_reader_open(const char *path, wr_error *err);
/* wr_reader_open, and the bytes of a file are hashed as they are read
 * (stats.stream_hash, stats.hashed_bytes), as a stream's always are: a
 * reader that reads the whole trace in order from its start (every
 * wr_reader_next to the end, no seek) has hashed the whole file at its
 * end, and needs no second pass over it for the hash.  Costs about a
 * multiply per byte in the reading thread; wr_reader_open does not. */
wr_reader *wr_reader_open_hashing(const char *path, wr_error *err);
/* The same over a trace held in memory (fuzzing, tests); `name` stands for
 * the file in error messages.  data must outlive the reader. */
wr_reader *wr_reader_open_memory(const void *data, size_t size, const char *name, wr_error *err);
/* The same over a stream read once from start to end (a pipe: no size, no
 * seeking); the reader owns f and closes it.  What a file's size decides
 * beforehand is decided by where the stream ends: it may end inside a chunk
 * or before the footer (truncated, not an error), and bytes after the
 * footer are read to the end and are an error.  No length is trusted
 * further than the format's fixed limits allow (FORMAT.md, "Limits"). */
wr_reader *wr_reader_open_stream(FILE *f, const char *name, wr_error *err);
const wr_header *wr_reader_header(const wr_reader *r);
/* The catalog grows as metadata chunks are read; every id used by a batch is
 * defined by the time the batch is returned.  Pointers into the catalog stay
 * valid until wr_reader_close. */
const wr_catalog *wr_reader_catalog(const wr_reader *r);
const char *wr_reader_path(const wr_reader *r);

/* Reads the next event chunk (metadata chunks are absorbed on the way).
 * Returns 1 and fills *out, 0 at the end of the trace, -1 on a corrupt file
 * (err names the offset).  A missing footer or an incomplete last chunk is
 * NOT an error: the reader returns 0 and sets stats.truncated. */
int wr_reader_next(wr_reader *r, wr_batch *out, wr_error *err);
void wr_batch_release(wr_batch *b);

/* Random access through the footer index: positions a freshly opened
 * reader so that the next wr_reader_next returns the event chunk holding
 * event `seq`, with the catalog already holding every definition made
 * before that chunk (only those metadata chunks are read).  Call before the
 * first wr_reader_next.  Returns 1 when positioned; 0 when the file has no
 * sound footer (a recording that stopped early) or no event `seq`, with the
 * reader still at the start (read forward and skip instead); -1 on a
 * corrupt index (err names the offset).  After a seek, stats count what was
 * read, and the footer is no longer compared with the whole file. */
int wr_reader_seek(wr_reader *r, uint64_t seq, wr_error *err);

const wr_reader_stats *wr_reader_stats_get(const wr_reader *r);

/* FNV-1a 64 (offset basis WR_FNV1A64_INIT) of n more bytes after h: the
 * hash that names a trace's bytes in the analyzer's run rows. */
#define WR_FNV1A64_INIT 0xcbf29ce484222325ull
uint64_t wr_fnv1a64(uint64_t h, const void *data, size_t n);
void wr_reader_close(wr_reader *r);

/* Checks every byte of the file: header, every chunk's checksum and
 * decodability, catalog references, footer.  Writes a line per problem to
 * `report` (may be NULL).  Returns 0 if sound, 1 if truncated but otherwise
 * sound (no footer), 2 if corrupt, -1 if it could not be opened. */
int wr_verify_file(const char *path, FILE *report, wr_error *err);
/* After wr_verify_file found the file corrupt at fault_offset: scans the
 * rest for chunks that are still sound (resynchronising at chunk headers
 * whose checksum holds) and writes to `report` how many follow and from
 * where, and the first damaged ones -- how much a damaged file still holds.
 * Returns 0, or -1 if the file cannot be read. */
int wr_verify_after_fault(const char *path, uint64_t fault_offset, FILE *report);
/* The same over a trace held in memory; `name` stands for the file. */
int wr_verify_memory(const void *data, size_t size, const char *name, FILE *report, wr_error *err);

/* ---- text form (formats/TEXT.md) ---------------------------------------- */

/* Assembles the text trace at in_path into a .wrt at out_path.  Errors name
 * in_path:line:col.  Returns 0 or -1. */
int wr_text_assemble(const char *in_path, const char *out_path, wr_error *err);
/* The same, placing the global and local allocations that name no address
 * from global_base upwards instead of 0x10000000 (TEXT.md): the litmus
 * suite runs again at addresses a device gives (47 bits), where packing an
 * address beside other fields once overflowed. */
int wr_text_assemble_at(const char *in_path, const char *out_path, uint64_t global_base,
                        wr_error *err);
/* Do the first n bytes of a file look like a text trace: some bytes, no
 * binary trace's first byte, no control bytes but line ends and tabs?
 * (How `analyze` tells a text trace from a binary one, and the reader
 * names a text given where a binary one is read.) */
int wr_text_looks_like(const unsigned char *head, size_t n);
/* Writes the text form of the trace at path to out.  Returns 0 or -1. */
int wr_text_dump(const char *path, FILE *out, wr_error *err);
/* Events from..from+count-1 only (count UINT64_MAX: to the end), with the
 * catalog known at that point; reached through the footer index when the
 * file has one.  A window is for reading, not a whole trace for asm.
 * *truncated_at (when not NULL): the offset where a truncated trace's
 * incomplete tail begins (the text ends there), UINT64_MAX for a whole one. */
int wr_text_dump_window(const char *path, FILE *out, uint64_t from, uint64_t count,
                        uint64_t *truncated_at, wr_error *err);

#ifdef __cplusplus
}
#endif
#endif

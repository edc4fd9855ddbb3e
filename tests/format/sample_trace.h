/* A deterministic synthetic trace holding every event kind and every lane
 * address encoding, shared by the format tests, the fuzz seed generator and
 * the decode benchmark. */
#ifndef WARPRACE_TESTS_SAMPLE_TRACE_H
#define WARPRACE_TESTS_SAMPLE_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "warprace/trace.h"

/* The header every sample trace carries. */
wr_header sample_header(void);

/* Event i of the sample stream (i = 0, 1, ...): cycles through every kind and
 * address encoding.  Vector lanes are written to lanes[32], which must stay
 * alive while ev is used.  Ids refer to sample_define_catalog's entries. */
void sample_event(uint64_t i, wr_event *ev, uint64_t lanes[32]);

/* Defines the catalog (3 kernels, 4 allocations, 5 sites, 1 module). */
void sample_define_catalog(wr_writer *w);

/* Writes a sample trace of `events` events.  Returns 0 or -1 (err set). */
int sample_write(const char *path, uint64_t events, uint32_t chunk_bytes, wr_error *err);

/* Field-by-field equality (ignores seq and inactive vector lanes); on a
 * difference, writes which field to why. */
bool sample_events_equal(const wr_event *a, const wr_event *b, char *why, size_t why_len);

/* Reads a whole file into memory (malloc'd); NULL on failure. */
unsigned char *sample_read_file(const char *path, size_t *size);

/* Writes a sample trace of `events` events into a new temporary file
 * /tmp/wr-format-TAG-PID-XXXXXX (its name into path[path_len]) and reads it
 * back (malloc'd, *size bytes); NULL on failure, *why set. */
unsigned char *sample_make_temp(const char *tag, uint64_t events, uint32_t chunk_bytes,
                                char *path, size_t path_len, size_t *size, wr_error *why);

#endif

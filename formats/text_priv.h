/*
 * Private helpers of the text form (formats/TEXT.md): shared by text_asm.c
 * and text_dump.c, and the in-memory entry point used by the fuzz target.
 */
#ifndef WARPRACE_TEXT_PRIV_H
#define WARPRACE_TEXT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "warprace/trace.h"

#define WR_TEXT_MAX_LINE 65536u              /* bytes per line, without '\n' */
/* Bytes of one token as written, and of a string in canonical (dumped) form.
 * Well below the line limit so that a dumped line -- at most two names plus
 * fixed fields -- always fits, and a dump always reassembles. */
#define WR_TEXT_MAX_TOKEN 16384u
#define WR_TEXT_MAX_DEFS (16u << 20)         /* definitions of each catalog kind */
#define WR_TEXT_MAX_LAUNCHES (16u << 20)
#define WR_TEXT_MAX_MODULE (64u << 20)       /* bytes of one module image */
#define WR_TEXT_IMAGE_LINE 64u               /* module bytes per "image" line */
#define WR_TEXT_GLOBAL_BASE 0x10000000ull    /* where asm places global/local allocations */

/* Assembles text held in memory (name is used in error messages) into a
 * .wrt at out_path.  Same grammar and errors as wr_text_assemble. */
int wr_text_assemble_buf(const char *name, const char *data, size_t len,
                         const char *out_path, wr_error *err);

/* A string -> uint32 map; inserting an existing key replaces its value. */
typedef struct wr_text_map {
    char **keys;
    uint32_t *vals;
    size_t cap, count;
} wr_text_map;

void wr_text_map_free(wr_text_map *m);
/* 0 if absent. */
uint32_t wr_text_map_get(const wr_text_map *m, const char *key);
/* 0 ok, -1 out of memory. */
int wr_text_map_put(wr_text_map *m, const char *key, uint32_t val);

/* Length of s written as a STRING token in canonical form, quotes included. */
size_t wr_text_string_len(const char *s);

/* IDENT = [A-Za-z_][A-Za-z0-9_]* */
int wr_text_is_ident(const char *s);

/* Whether a STRIDED dsmem access has a text form "b"N":"ADDR "stride="S:
 * lane 0 (whose address is written) and every active lane lie in lane 0's
 * owner block N, each with its offset and size below 2^32.  asm refuses
 * other strided dsmem accesses; dump writes them lane by lane. */
int wr_text_dsmem_strided_fits(const wr_access *a);

/* The key under which a site is looked up by @FILE:LINE:FUNCTION. */
void wr_text_site_key(char *buf, size_t cap, const char *file, uint32_t line, const char *func);

#endif

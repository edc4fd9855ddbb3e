/*
 * Private to the binary format library (and its tests/fuzzers): the byte
 * layout constants of formats/FORMAT.md, little-endian helpers, CRC32C and
 * the catalog's mutation functions.  Every number here is specified in
 * FORMAT.md; change both together.
 */
#ifndef WARPRACE_FORMAT_INTERNAL_H
#define WARPRACE_FORMAT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "warprace/trace.h"

/* ---- file header ---- */
#define WRF_MAGIC_LEN 8
extern const uint8_t wrf_file_magic[WRF_MAGIC_LEN];  /* 89 'W' 'R' 'T' 0D 0A 1A 0A */
#define WRF_HEADER_FIXED 40u            /* magic .. time_unix_ns */
#define WRF_HEADER_MIN (WRF_HEADER_FIXED + 5u * 4u + 4u)  /* 5 empty strings + CRC */
#define WRF_HEADER_MAX (1u << 20)       /* command lines can be long, not gigabytes */

/* ---- chunks ---- */
#define WRF_CHUNK_MAGIC 0x4b435257u     /* "WRCK" */
#define WRF_CHUNK_HEADER_SIZE 40u
#define WRF_CHUNK_RAW_MAX (64u << 20)   /* any chunk's uncompressed payload */
#define WRF_EVENT_CHUNK_RAW_MAX (8u << 20)
#define WRF_EVENT_CHUNK_COUNT_MAX (1u << 20)
#define WRF_LZ4_MAX_RATIO 255u          /* LZ4 block cannot expand more than this */
#define WRF_DEFAULT_CHUNK_BYTES (256u << 10)

enum wrf_chunk_type {
    WRF_CHUNK_STRINGS = 1,
    WRF_CHUNK_KERNELS = 2,
    WRF_CHUNK_ALLOCS = 3,
    WRF_CHUNK_SITES = 4,
    WRF_CHUNK_MODULES = 5,
    WRF_CHUNK_EVENTS = 16,
    WRF_CHUNK_INDEX = 255,
};

enum wrf_codec { WRF_CODEC_STORED = 0, WRF_CODEC_LZ4 = 1 };

typedef struct wrf_chunk_header {
    uint8_t type, codec;
    uint32_t raw_size, stored_size, count, aux;
    uint64_t first_index;
    uint32_t payload_crc;
} wrf_chunk_header;

/* ---- metadata entry sizes ---- */
#define WRF_KERNEL_ENTRY 4u
#define WRF_ALLOC_ENTRY 24u
#define WRF_SITE_ENTRY 24u
#define WRF_MODULE_ENTRY_FIXED 16u
#define WRF_INDEX_FIXED 24u
#define WRF_INDEX_ENTRY 24u

/* ---- footer trailer ---- */
#define WRF_TRAILER_MAGIC 0x4e455257u   /* "WREN" */
#define WRF_TRAILER_SIZE 16u

/* ---- event records ---- */
#define WRF_RECORD_MIN 8u               /* DEVICE_SYNC: the 8-byte prefix alone */
#define WRF_RECORD_MAX (8u + 12u + 4u + 4u + 32u * 8u)  /* wide vector access, all fields */
#define WRF_VECTOR_RECORD_MIN (8u + 12u + 4u)   /* wide vector with no active lane */

/* access flags (record byte 1) */
#define WRF_AF_MODE_MASK 0x03u
#define WRF_AF_FULL_MASK 0x04u          /* active_mask omitted: all 32 lanes */
#define WRF_AF_CAS 0x08u                /* cas_success present */
#define WRF_AF_SIZE_SHIFT 4             /* bits 4-6: log2(size) */
#define WRF_AF_NARROW 0x80u             /* VECTOR: base + int32 delta per lane */

/* ---- little-endian helpers (the format is little-endian everywhere) ---- */
static inline uint16_t wrf_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t wrf_get32(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}
static inline uint64_t wrf_get64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)wrf_get32(p) | (uint64_t)wrf_get32(p + 4) << 32;
#endif
}
static inline void wrf_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wrf_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void wrf_put64(uint8_t *p, uint64_t v) { wrf_put32(p, (uint32_t)v); wrf_put32(p + 4, (uint32_t)(v >> 32)); }

/* CRC32C (Castagnoli), the checksum of every checksummed region. */
uint32_t wrf_crc32c(uint32_t crc, const void *data, size_t len);

/* Encodes/decodes the 40-byte chunk header (the decoder checks magic and
 * header CRC; returns 0 if sound, -1 otherwise). */
void wrf_chunk_header_encode(uint8_t out[WRF_CHUNK_HEADER_SIZE], const wrf_chunk_header *h);
int wrf_chunk_header_decode(const uint8_t in[WRF_CHUNK_HEADER_SIZE], wrf_chunk_header *h);

/* Size in bytes of the encoding of ev, 0 if ev is not encodable. */
size_t wrf_event_encoded_size(const wr_event *ev);

/* ---- catalog (reader side) ---- */
wr_catalog *wrf_catalog_new(void);
void wrf_catalog_free(wr_catalog *c);
uint32_t wrf_catalog_string_count(const wr_catalog *c);
const char *wrf_catalog_string(const wr_catalog *c, uint32_t id);  /* "" for 0 */
/* Each add returns 0, or -1 when out of memory or past the table limit. */
int wrf_catalog_add_string(wr_catalog *c, const char *s, size_t len);
int wrf_catalog_add_kernel(wr_catalog *c, uint32_t name_string);
int wrf_catalog_add_alloc(wr_catalog *c, uint64_t base, uint64_t size, uint8_t space,
                          uint32_t name_string);
int wrf_catalog_add_site(wr_catalog *c, uint64_t pc, uint32_t file_string, uint32_t line,
                         uint32_t function_string);
int wrf_catalog_add_module(wr_catalog *c, uint32_t name_string, const uint8_t *image, uint64_t size);
#define WRF_CATALOG_TABLE_MAX (1u << 26)

/* ---- reader extras for the tools ---- */
/* As wr_reader_open; *io_failure = 1 when the file could not be opened at
 * all (as opposed to opened and found unreadable as a trace). */
wr_reader *wrf_reader_open_file(const char *path, wr_error *err, int *io_failure, int hash);

typedef struct wrf_reader_detail_stats {
    uint64_t metadata_chunks;   /* string/kernel/alloc/site/module chunks */
    uint64_t other_chunks;      /* unknown types, skipped */
    uint64_t event_raw_bytes, event_stored_bytes;
    uint64_t kind_counts[WR_EV_KIND_MAX + 1];  /* records decoded per kind */
} wrf_reader_detail_stats;
void wrf_reader_detail(const wr_reader *r, wrf_reader_detail_stats *d);

/* verify.c: the chunks after a fault (see wr_verify_after_fault). */
typedef struct wrf_scan_result {
    uint64_t sound, damaged, events;
    uint64_t resync_at;          /* first sound chunk, UINT64_MAX if none */
} wrf_scan_result;
int wrf_scan_after_fault(const uint8_t *d, size_t size, uint64_t from, const char *name,
                         FILE *report, wrf_scan_result *out);

#endif

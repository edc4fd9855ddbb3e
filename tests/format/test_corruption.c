/* Corruption: every single flipped bit of a sample trace (header, chunk
 * headers, payloads, footer) is detected; truncation at every offset reads a
 * clean prefix; random damage never crashes.  Every error names the file and
 * an offset inside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format_internal.h"
#include "sample_trace.h"

#define NAME "sample.wrt"

static unsigned char *sample;
static size_t sample_size;
static char tmp_path[256];

/* Small chunks so that the file has many chunk headers and both codecs. */
static void make_sample(void)
{
    wr_error err = {0};
    sample = sample_make_temp("corrupt", 150, 700, tmp_path, sizeof tmp_path, &sample_size, &err);
    cr_assert_not_null(sample, "%s", err.msg);
}

static void drop_sample(void)
{
    free(sample);
    unlink(tmp_path);
}

TestSuite(corruption, .init = make_sample, .fini = drop_sample);

static void assert_error_names(const wr_error *err, const char *name, size_t file_size)
{
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: offset %llu: ", name, (unsigned long long)err->offset);
    cr_assert(!strncmp(err->msg, prefix, strlen(prefix)), "error lacks '%s': %s", prefix, err->msg);
    cr_assert_leq(err->offset, file_size, "offset %llu beyond the file: %s",
                  (unsigned long long)err->offset, err->msg);
}

/* Reads data fully; every event delivered must be the sample's (damage is
 * never passed on silently).  Returns the final wr_reader_next status, or
 * -2 if the header was refused. */
static int read_checked(const unsigned char *data, size_t size, wr_error *err, uint64_t *events,
                        wr_reader_stats *stats)
{
    wr_reader *r = wr_reader_open_memory(data, size, NAME, err);
    if (!r)
        return -2;
    wr_batch b;
    int rc;
    uint64_t lanes[32];
    *events = 0;
    while ((rc = wr_reader_next(r, &b, err)) == 1) {
        for (size_t k = 0; k < b.count; k++) {
            wr_event want;
            char why[200];
            sample_event(*events + k, &want, lanes);
            cr_assert(sample_events_equal(&want, &b.events[k], why, sizeof why),
                      "damaged event %llu delivered: %s", (unsigned long long)(*events + k), why);
        }
        *events += b.count;
        wr_batch_release(&b);
    }
    *stats = *wr_reader_stats_get(r);
    wr_reader_close(r);
    return rc;
}

Test(corruption, sample_is_sound_and_uses_both_codecs)
{
    wr_error err = {0};
    cr_assert_eq(wr_verify_memory(sample, sample_size, NAME, NULL, &err), 0, "%s", err.msg);
    int lz4 = 0, stored = 0;
    size_t at = wrf_get32(sample + 12);
    for (; at + WRF_CHUNK_HEADER_SIZE <= sample_size - WRF_TRAILER_SIZE;) {
        wrf_chunk_header h;
        cr_assert_eq(wrf_chunk_header_decode(sample + at, &h), 0);
        lz4 += h.codec == WRF_CODEC_LZ4;
        stored += h.codec == WRF_CODEC_STORED;
        at += WRF_CHUNK_HEADER_SIZE + h.stored_size;
    }
    cr_assert_eq(at, sample_size - WRF_TRAILER_SIZE);
    cr_assert(lz4 > 0 && stored > 0, "lz4 %d stored %d", lz4, stored);
}

Test(corruption, every_single_bit_flip_is_detected, .timeout = 300)
{
    unsigned char *copy = malloc(sample_size);
    for (size_t byte = 0; byte < sample_size; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, sample, sample_size);
            copy[byte] ^= (unsigned char)(1u << bit);
            wr_error err = {0};
            int rc = wr_verify_memory(copy, sample_size, NAME, NULL, &err);
            cr_assert_eq(rc, 2, "flip of bit %d at offset %zu: verify returned %d (%s)", bit, byte,
                         rc, err.msg);
            assert_error_names(&err, NAME, sample_size);
            /* The fault is reported at or before the damaged byte's region:
             * never after the end of the chunk holding it. */
            if (bit == 0 && byte % 7 == 0) {
                uint64_t events;
                wr_reader_stats st;
                int r = read_checked(copy, sample_size, &err, &events, &st);
                cr_assert(r < 0, "flip at %zu read without error", byte);
            }
        }
    }
    free(copy);
}

Test(corruption, flips_are_reported_with_the_file_path)
{
    /* The same through a real file, on a sample of offsets. */
    unsigned char *copy = malloc(sample_size);
    for (size_t byte = 0; byte < sample_size; byte += 61) {
        memcpy(copy, sample, sample_size);
        copy[byte] ^= 0x40;
        FILE *f = fopen(tmp_path, "wb");
        fwrite(copy, 1, sample_size, f);
        fclose(f);
        wr_error err = {0};
        cr_assert_eq(wr_verify_file(tmp_path, NULL, &err), 2, "offset %zu", byte);
        assert_error_names(&err, tmp_path, sample_size);
    }
    free(copy);
}

Test(corruption, truncation_at_every_offset_reads_a_clean_prefix, .timeout = 300)
{
    uint32_t header_size = wrf_get32(sample + 12);
    uint64_t previous_events = 0;
    for (size_t cut = 0; cut < sample_size; cut++) {
        wr_error err = {0};
        uint64_t events = 0;
        wr_reader_stats st;
        int rc = read_checked(sample, cut, &err, &events, &st);
        if (cut < header_size) {
            cr_assert_eq(rc, -2, "cut at %zu inside the header was accepted", cut);
            assert_error_names(&err, NAME, cut);
            continue;
        }
        cr_assert_eq(rc, 0, "cut at %zu: %s", cut, err.msg);
        cr_assert(st.truncated, "cut at %zu not reported as truncated", cut);
        cr_assert_eq(st.truncated_at + st.truncated_bytes, cut);
        cr_assert_geq(events, previous_events, "a longer prefix gave fewer events");
        previous_events = events;
        int v = wr_verify_memory(sample, cut, NAME, NULL, &err);
        cr_assert_eq(v, 1, "cut at %zu: verify %d", cut, v);
        assert_error_names(&err, NAME, cut);
        cr_assert_eq(err.offset, st.truncated_at);
    }
    cr_assert_eq(previous_events, 150, "the prefix before the footer holds every event");
}

Test(corruption, random_damage_never_crashes, .timeout = 300)
{
    unsigned char *copy = malloc(sample_size + 64);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 20000; round++) {
        memcpy(copy, sample, sample_size);
        size_t size = sample_size;
        int edits = 1 + round % 8;
        for (int e = 0; e < edits; e++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(state >> 33) % size;
            switch ((state >> 20) % 4) {
            case 0: copy[at] ^= (unsigned char)(state >> 8); break;
            case 1: copy[at] = 0xff; break;
            case 2: size = at + 1; break;   /* truncate */
            default: memset(copy + at, 0, size - at < 8 ? size - at : 8); break;
            }
        }
        wr_error err = {0};
        int rc = wr_verify_memory(copy, size, NAME, NULL, &err);
        cr_assert(rc == 1 || rc == 2 || (rc == 0 && size == sample_size && !memcmp(copy, sample, size)),
                  "round %d: damaged file verified sound", round);
        if (rc)
            assert_error_names(&err, NAME, size);
    }
    free(copy);
}

/* After a fault, the scan finds exactly the chunks that follow the damaged
 * one (resynchronising at the next sound chunk header), and their events. */
Test(corruption, after_a_fault_the_rest_is_counted)
{
    /* walk the chunk chain of the sound sample: offsets and event counts */
    uint64_t offs[4096], evs[4096];
    size_t n = 0, at = wrf_get32(sample + 12);
    while (at + WRF_CHUNK_HEADER_SIZE <= sample_size - WRF_TRAILER_SIZE && n < 4096) {
        wrf_chunk_header h;
        cr_assert_eq(wrf_chunk_header_decode(sample + at, &h), 0);
        offs[n] = at;
        evs[n] = h.type == WRF_CHUNK_EVENTS ? h.count : 0;
        n++;
        at += WRF_CHUNK_HEADER_SIZE + h.stored_size;
    }
    cr_assert_gt(n, 6);
    unsigned char *bad = malloc(sample_size);
    for (size_t k = 1; k + 1 < n; k += n / 5) {
        memcpy(bad, sample, sample_size);
        bad[offs[k] + WRF_CHUNK_HEADER_SIZE] ^= 0x01;   /* first payload byte of chunk k */
        wr_error err = {0};
        cr_assert_eq(wr_verify_memory(bad, sample_size, NAME, NULL, &err), 2);
        wrf_scan_result res;
        char *text = NULL;
        size_t len = 0;
        FILE *rep = open_memstream(&text, &len);
        cr_assert_eq(wrf_scan_after_fault(bad, sample_size, err.offset + 1, NAME, rep, &res), 0);
        fclose(rep);
        uint64_t events = 0;
        for (size_t j = k + 1; j < n; j++)
            events += evs[j];
        cr_assert_eq(res.sound, n - k - 1, "chunk %zu damaged: %s", k, text);
        cr_assert_eq(res.resync_at, offs[k + 1]);
        cr_assert_eq(res.events, events);
        cr_assert_eq(res.damaged, 0);
        cr_assert(strstr(text, "after the fault:"), "%s", text);
        free(text);
    }
    free(bad);
}

/* Random access through the footer index (wr_reader_seek): the events found
 * are those a sequential read finds, the catalog holds every definition
 * made before the chunk, and files without a usable footer fall back to a
 * read from the start. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format_internal.h"
#include "sample_trace.h"

static char tmp_path[256];

static void make_tmp(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/wr-seek-test-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(tmp_path);
    cr_assert(fd >= 0);
    close(fd);
}

static void drop_tmp(void) { unlink(tmp_path); }

TestSuite(seek, .init = make_tmp, .fini = drop_tmp);

#define EVENTS 5000u

/* Seeks to seq, then reads to the end: the events are the sample stream's,
 * from the start of seq's chunk on, and the footer is accepted. */
static void check_seek(uint64_t seq)
{
    wr_error err = {0};
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_seek(r, seq, &err), 1, "seek %llu: %s", (unsigned long long)seq, err.msg);
    wr_batch b;
    int rc;
    uint64_t lanes[32], next = UINT64_MAX, chunks = 0;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        if (next == UINT64_MAX) {
            cr_assert(b.first_seq <= seq && seq < b.first_seq + b.count,
                      "seek %llu landed on chunk [%llu, +%zu)", (unsigned long long)seq,
                      (unsigned long long)b.first_seq, b.count);
            next = b.first_seq;
        }
        cr_assert_eq(b.first_seq, next);
        for (size_t k = 0; k < b.count; k++, next++) {
            wr_event want;
            sample_event(next, &want, lanes);
            char why[200] = "";
            cr_assert_eq(b.events[k].seq, next);
            cr_assert(sample_events_equal(&want, &b.events[k], why, sizeof why), "event %llu: %s",
                      (unsigned long long)next, why);
        }
        chunks++;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "after seek %llu: %s", (unsigned long long)seq, err.msg);
    cr_assert_eq(next, EVENTS);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    cr_assert(st->has_footer && !st->truncated);
    cr_assert_lt(st->event_chunks, 1000, "only the chunks from the target on are read");
    wr_reader_close(r);
}

Test(seek, lands_on_the_chunk_holding_the_event)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, EVENTS, 2048, &err), 0, "%s", err.msg);
    static const uint64_t seqs[] = {0, 1, 777, 2500, 4998, EVENTS - 1};
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        check_seek(seqs[i]);
}

Test(seek, no_such_event_or_no_footer_reads_from_the_start)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 100, 1024, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_seek(r, 100, &err), 0, "past the last event");
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.first_seq, 0);
    wr_batch_release(&b);
    cr_assert_eq(wr_reader_seek(r, 0, &err), -1, "seek after a read");
    cr_assert(strstr(err.msg, "before the first chunk"), "%s", err.msg);
    wr_reader_close(r);

    /* the same stream without its footer: a recording that stopped early */
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, &(wr_writer_options){.chunk_bytes = 1024}, &err);
    cr_assert(w, "%s", err.msg);
    sample_define_catalog(w);
    uint64_t lanes[32];
    for (uint64_t i = 0; i < 100; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(wr_writer_flush(w, &err), 0, "%s", err.msg);
    wr_writer_abandon(w);
    r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_seek(r, 50, &err), 0, "no footer: no random access");
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    cr_assert_eq(b.first_seq, 0);
    wr_batch_release(&b);
    wr_reader_close(r);
}

/* Sites defined between event chunks: after a seek past them the catalog
 * already holds them, and events that use them decode. */
Test(seek, catalog_holds_the_definitions_before_the_chunk)
{
    wr_error err = {0};
    wr_header h = sample_header();
    wr_writer *w = wr_writer_open(tmp_path, &h, &(wr_writer_options){.chunk_bytes = 256}, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "k"), 1);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch = (wr_launch){.launch = 1, .kernel = 1, .grid = {1, 1, 1}, .block_dim = {32, 1, 1},
                              .cluster = {1, 1, 1}};
    cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
    uint64_t seq = 1;
    for (uint32_t s = 1; s <= 40; s++) {
        char file[32];
        snprintf(file, sizeof file, "f%u.cu", s);
        cr_assert_eq(wr_writer_site(w, 0x100 * s, file, s, "fn"), s);
        for (int k = 0; k < 20; k++, seq++) {
            memset(&ev, 0, sizeof ev);
            ev.kind = WR_EV_ACCESS;
            ev.site = s;
            ev.u.access = (wr_access){.launch = 1, .active_mask = 1, .op = WR_OP_LOAD, .size = 4,
                                      .addr_mode = WR_ADDR_UNIFORM, .base = 0x1000 + 4 * (uint64_t)k};
            cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
        }
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    uint64_t target = 1 + 20 * 29 + 5;   /* an access at site 30 */
    cr_assert_eq(wr_reader_seek(r, target, &err), 1, "%s", err.msg);
    cr_assert_geq(wr_catalog_site_count(wr_reader_catalog(r)), 30);
    wr_batch b;
    cr_assert_eq(wr_reader_next(r, &b, &err), 1, "%s", err.msg);
    const wr_event *e = &b.events[target - b.first_seq];
    cr_assert_eq(e->seq, target);
    cr_assert_eq(e->site, 30);
    const wr_site *site = wr_catalog_site(wr_reader_catalog(r), e->site);
    cr_assert(site && !strcmp(site->file, "f30.cu"));
    cr_assert_lt(wr_reader_stats_get(r)->events, 20 * 40, "only part of the file was decoded");
    wr_batch_release(&b);
    wr_reader_close(r);
}

Test(seek, a_corrupt_index_is_an_error_with_its_offset)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 2000, 1024, &err), 0, "%s", err.msg);
    size_t size;
    unsigned char *data = sample_read_file(tmp_path, &size);
    cr_assert(data);
    uint64_t index_at = wrf_get64(data + size - WRF_TRAILER_SIZE);
    data[index_at + WRF_CHUNK_HEADER_SIZE + WRF_INDEX_FIXED + 3] ^= 0x10;   /* an entry's offset */
    FILE *f = fopen(tmp_path, "wb");
    cr_assert(f && fwrite(data, 1, size, f) == size);
    fclose(f);
    free(data);
    wr_reader *r = wr_reader_open(tmp_path, &err);
    cr_assert(r, "%s", err.msg);
    cr_assert_eq(wr_reader_seek(r, 1500, &err), -1);
    cr_assert(strstr(err.msg, tmp_path) && strstr(err.msg, "offset"), "%s", err.msg);
    wr_reader_close(r);
}

/* The event lines of a dump window are the full dump's lines for the same
 * events (definitions, flushes and comments aside). */
static char **event_lines(char *text, size_t *n, int skip_to_window)
{
    size_t cap = 1024;
    char **v = malloc(cap * sizeof *v);
    *n = 0;
    int in = !skip_to_window, header = 8;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (header > 0) {
            header--;
            continue;
        }
        if (!strncmp(l, "# seq ", 6))
            in = 1;
        if (!in || l[0] == '#' || !strncmp(l, "def ", 4) || !strncmp(l, "image ", 6) || !strcmp(l, "flush"))
            continue;
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = l;
    }
    return v;
}

static char *dump_to_string(uint64_t from, uint64_t count)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    wr_error err = {0};
    cr_assert_eq(wr_text_dump_window(tmp_path, f, from, count, NULL, &err), 0, "%s", err.msg);
    fclose(f);
    return buf;
}

Test(seek, dump_window_prints_the_same_events_as_the_whole_dump)
{
    wr_error err = {0};
    cr_assert_eq(sample_write(tmp_path, 3000, 1024, &err), 0, "%s", err.msg);
    char *whole = dump_to_string(0, UINT64_MAX), *part = dump_to_string(1234, 50);
    size_t nw, np;
    char **lw = event_lines(whole, &nw, 0), **lp = event_lines(part, &np, 1);
    cr_assert_eq(nw, 3000);
    cr_assert_eq(np, 50);
    for (size_t i = 0; i < np; i++)
        cr_assert_str_eq(lp[i], lw[1234 + i], "event %zu", 1234 + i);
    free(lw);
    free(lp);
    free(whole);
    free(part);
}

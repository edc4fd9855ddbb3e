/* Streams (wr_reader_open_stream, the path "-"): a trace read once from a
 * pipe, whose size is known only at its end, reads exactly as the same
 * bytes read from a file: the same events, the same verdict (sound,
 * truncated where, or corrupt at which offset with which message), at every
 * cut, after every damage tried, with bytes after the footer; its hash is
 * the FNV-1a of every byte. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format_internal.h"
#include "read_outcome.h"
#include "sample_trace.h"

#define NAME "sample.wrt"

static unsigned char *sample;
static size_t sample_size;
static char tmp_path[256];

static void make_sample(void)
{
    wr_error err = {0};
    sample = sample_make_temp("stream", 150, 700, tmp_path, sizeof tmp_path, &sample_size, &err);
    cr_assert_not_null(sample, "%s", err.msg);
}

static void drop_sample(void)
{
    free(sample);
    unlink(tmp_path);
}

TestSuite(stream, .init = make_sample, .fini = drop_sample);

/* The bytes as a stream: a temporary file read through a FILE that the
 * reader is not told the size of. */
static FILE *stream_of(const unsigned char *data, size_t size)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    rewind(f);
    return f;
}

static void assert_same(const unsigned char *data, size_t size, const char *what)
{
    wr_error e1 = {0}, e2 = {0};
    read_outcome want = read_to_end(wr_reader_open_memory(data, size, NAME, &e1), &e1);
    read_outcome got = read_to_end(wr_reader_open_stream(stream_of(data, size), NAME, &e2), &e2);
    cr_assert_eq(got.rc, want.rc, "%s: status %d, the file's %d (%s | %s)", what, got.rc, want.rc,
                 got.err.msg, want.err.msg);
    cr_assert_eq(got.events, want.events, "%s: %llu events, the file's %llu", what,
                 (unsigned long long)got.events, (unsigned long long)want.events);
    if (want.rc < 0) {
        cr_assert_str_eq(got.err.msg, want.err.msg, "%s", what);
        cr_assert_eq(got.err.offset, want.err.offset, "%s", what);
        return;
    }
    cr_assert(got.st.streamed && !want.st.streamed);
    cr_assert_eq(got.st.truncated, want.st.truncated, "%s", what);
    cr_assert_eq(got.st.truncated_at, want.st.truncated_at, "%s", what);
    cr_assert_eq(got.st.truncated_bytes, want.st.truncated_bytes, "%s", what);
    cr_assert_eq(got.st.has_footer, want.st.has_footer, "%s", what);
    cr_assert_eq(got.st.chunks, want.st.chunks, "%s", what);
    /* read to its end: its size and the hash of all of it */
    cr_assert_eq(got.st.file_bytes, size, "%s", what);
    cr_assert_eq(got.st.stream_hash, wr_fnv1a64(WR_FNV1A64_INIT, data, size), "%s", what);
}

Test(stream, the_whole_sample_reads_as_the_file_does)
{
    assert_same(sample, sample_size, "whole");
    wr_error err = {0};
    read_outcome o = read_to_end(wr_reader_open_stream(stream_of(sample, sample_size), NAME, &err), &err);
    cr_assert_eq(o.rc, 0, "%s", err.msg);
    cr_assert_eq(o.events, 150);
    cr_assert(o.st.has_footer && !o.st.truncated);
}

/* A file opened with wr_reader_open_hashing hashes what it reads in order
 * from its start, as a stream does: the whole file when read to the end,
 * the prefix before an incomplete tail (never read) when cut; opened
 * plainly, nothing. */
Test(stream, a_file_opened_hashing_hashes_what_it_read_in_order)
{
    wr_error err = {0};
    read_outcome o = read_to_end(wr_reader_open_hashing(tmp_path, &err), &err);
    cr_assert_eq(o.rc, 0, "%s", err.msg);
    cr_assert(!o.st.streamed);
    cr_assert_eq(o.st.hashed_bytes, sample_size);
    cr_assert_eq(o.st.stream_hash, wr_fnv1a64(WR_FNV1A64_INIT, sample, sample_size));
    o = read_to_end(wr_reader_open(tmp_path, &err), &err);
    cr_assert_eq(o.rc, 0, "%s", err.msg);
    cr_assert_eq(o.st.hashed_bytes, 0);
    cr_assert_eq(o.st.stream_hash, WR_FNV1A64_INIT);

    char cut_path[300];
    snprintf(cut_path, sizeof cut_path, "%s.cut", tmp_path);
    for (size_t cut = sample_size / 3; cut < sample_size; cut += sample_size / 7) {
        FILE *f = fopen(cut_path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(sample, 1, cut, f), cut);
        fclose(f);
        o = read_to_end(wr_reader_open_hashing(cut_path, &err), &err);
        cr_assert_eq(o.rc, 0, "cut at %zu: %s", cut, err.msg);
        cr_assert(o.st.truncated, "cut at %zu", cut);
        cr_assert_leq(o.st.hashed_bytes, cut);
        cr_assert_geq(o.st.hashed_bytes, o.st.truncated_at, "cut at %zu: every complete chunk", cut);
        cr_assert_eq(o.st.stream_hash, wr_fnv1a64(WR_FNV1A64_INIT, sample, o.st.hashed_bytes),
                     "cut at %zu", cut);
    }
    unlink(cut_path);
}

Test(stream, every_cut_reads_as_the_file_does, .timeout = 300)
{
    for (size_t cut = 0; cut < sample_size; cut++) {
        char what[64];
        snprintf(what, sizeof what, "cut at %zu", cut);
        assert_same(sample, cut, what);
    }
}

Test(stream, damage_fails_as_the_file_does, .timeout = 300)
{
    unsigned char *d = malloc(sample_size);
    cr_assert_not_null(d);
    for (size_t bit = 0; bit < sample_size * 8; bit += 7) {
        memcpy(d, sample, sample_size);
        d[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        char what[64];
        snprintf(what, sizeof what, "bit %zu flipped", bit);
        assert_same(d, sample_size, what);
    }
    free(d);
}

Test(stream, bytes_after_the_footer_fail_as_the_file_does)
{
    for (size_t extra = 1; extra < 9000; extra = extra * 3 + 1) {   /* past the drain's buffer */
        unsigned char *d = malloc(sample_size + extra);
        cr_assert_not_null(d);
        memcpy(d, sample, sample_size);
        memset(d + sample_size, 0x5a, extra);
        char what[64];
        snprintf(what, sizeof what, "%zu bytes after the footer", extra);
        assert_same(d, sample_size + extra, what);
        wr_error err = {0};
        read_outcome o = read_to_end(wr_reader_open_stream(stream_of(d, sample_size + extra), NAME, &err),
                             &err);
        cr_assert_eq(o.rc, -1);
        cr_assert(strstr(o.err.msg, "unexpected bytes after the footer"), "%s", o.err.msg);
        free(d);
    }
}

Test(stream, a_stream_cannot_seek_and_reads_forward)
{
    wr_error err = {0};
    wr_reader *r = wr_reader_open_stream(stream_of(sample, sample_size), NAME, &err);
    cr_assert_not_null(r, "%s", err.msg);
    cr_assert_eq(wr_reader_seek(r, 100, &err), 0, "no index to read ahead of");
    read_outcome o = read_to_end(r, &err);
    cr_assert_eq(o.rc, 0, "%s", o.err.msg);
    cr_assert_eq(o.events, 150);
}

typedef struct feeder {
    int fd;
    const unsigned char *data;
    size_t size, piece;
} feeder;

/* Writes the data in pieces of f->piece bytes (all at once: 0); false if
 * the pipe's reader went away first. */
static bool write_pieces(const feeder *f)
{
    for (size_t at = 0; at < f->size;) {
        size_t n = f->piece && f->size - at > f->piece ? f->piece : f->size - at;
        ssize_t w = write(f->fd, f->data + at, n);
        if (w <= 0)
            return false;
        at += (size_t)w;
    }
    return true;
}

static void *feed(void *arg)
{
    feeder *f = arg;
    write_pieces(f);
    close(f->fd);
    return NULL;
}

/* The data, then zeros until the pipe's reader closes it. */
static void *feed_then_zeros(void *arg)
{
    feeder *f = arg;
    signal(SIGPIPE, SIG_IGN);
    static const unsigned char zeros[4096];
    if (write_pieces(f))
        while (write(f->fd, zeros, sizeof zeros) > 0) {
        }
    close(f->fd);
    return NULL;
}

/* The sample through a pipe that `writer` feeds from a thread (pieces of
 * `piece` bytes), read as a stream named `name`. */
static read_outcome read_through_pipe(void *(*writer)(void *), size_t piece, const char *name)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    feeder fe = {fds[1], sample, sample_size, piece};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, writer, &fe), 0);
    wr_error err = {0};
    read_outcome o = read_to_end(wr_reader_open_stream(fdopen(fds[0], "rb"), name, &err), &err);
    pthread_join(t, NULL);   /* its writes fail once the reader has closed the pipe */
    return o;
}

/* A real pipe, written in small pieces while the reader reads. */
Test(stream, a_pipe_written_in_pieces)
{
    read_outcome o = read_through_pipe(feed, 13, "pipe");
    cr_assert_eq(o.rc, 0, "%s", o.err.msg);
    cr_assert_eq(o.events, 150);
    cr_assert_eq(o.st.file_bytes, sample_size);
    cr_assert_eq(o.st.stream_hash, wr_fnv1a64(WR_FNV1A64_INIT, sample, sample_size));
}

/* "-" is standard input, named <stdin> in messages. */
Test(stream, dash_reads_standard_input)
{
    cr_assert_not_null(freopen(tmp_path, "rb", stdin));
    wr_error err = {0};
    read_outcome o = read_to_end(wr_reader_open("-", &err), &err);
    cr_assert_eq(o.rc, 0, "%s", o.err.msg);
    cr_assert_eq(o.events, 150);
    cr_assert(o.st.streamed);

    char short_path[300];
    snprintf(short_path, sizeof short_path, "%s.short", tmp_path);
    FILE *f = fopen(short_path, "wb");
    cr_assert_not_null(f);
    fwrite(sample, 1, 20, f);
    fclose(f);
    cr_assert_not_null(freopen(short_path, "rb", stdin));
    wr_reader *r = wr_reader_open("-", &err);
    unlink(short_path);
    cr_assert_null(r);
    cr_assert(!strncmp(err.msg, WR_STDIN_NAME ": offset 20: file ends inside the", 40), "%s",
              err.msg);
}

typedef struct fifo_feeder {
    const char *path;
    const unsigned char *data;
    size_t size;
} fifo_feeder;

static void *feed_fifo(void *arg)
{
    fifo_feeder *f = arg;
    FILE *out = fopen(f->path, "wb");   /* blocks until the reader opens it */
    if (out) {
        fwrite(f->data, 1, f->size, out);
        fclose(out);
    }
    return NULL;
}

/* A named pipe given as a path (also what a shell's <(...) gives) is read
 * as a stream. */
Test(stream, a_named_pipe_by_its_path)
{
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s.fifo", tmp_path);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    fifo_feeder fe = {fifo, sample, sample_size};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, feed_fifo, &fe), 0);
    wr_error err = {0};
    read_outcome o = read_to_end(wr_reader_open(fifo, &err), &err);
    pthread_join(t, NULL);
    unlink(fifo);
    cr_assert_eq(o.rc, 0, "%s", o.err.msg);
    cr_assert(o.st.streamed);
    cr_assert_eq(o.events, 150);
    cr_assert_eq(o.st.stream_hash, wr_fnv1a64(WR_FNV1A64_INIT, sample, sample_size));
}

/* A writer given "-" writes standard output, byte for byte the file. */
Test(stream, a_writer_to_standard_output)
{
    char out[300];
    snprintf(out, sizeof out, "%s.stdout", tmp_path);
    fflush(stdout);
    cr_assert_not_null(freopen(out, "wb", stdout));
    wr_error err = {0};
    cr_assert_eq(sample_write("-", 150, 700, &err), 0, "%s", err.msg);
    size_t size = 0;
    unsigned char *got = sample_read_file(out, &size);
    unlink(out);
    cr_assert_not_null(got);
    cr_assert_eq(size, sample_size);
    cr_assert_eq(memcmp(got, sample, size), 0, "the bytes differ from the file's");
    free(got);
}

/* An endless source after a sound footer is no hang: the reader stops
 * after a bounded look and reports the bytes it saw. */
Test(stream, an_endless_tail_is_refused, .timeout = 30)
{
    read_outcome o = read_through_pipe(feed_then_zeros, 0, "endless");
    cr_assert_eq(o.rc, -1);
    cr_assert(strstr(o.err.msg, "more than 1048576 unexpected bytes after the footer"), "%s",
              o.err.msg);
}

/* The recorder's drain on the CPU: how many device records a second the
 * drain converts and hands to the trace writer: everything on the drain's
 * thread ("inline"); chunks compressed on one writer thread ("bg 1"); and
 * what the recorder does, W workers converting and encoding batches and W
 * writer threads compressing ("par W", W = --threads, default the
 * recorder's choice for this machine).  The
 * "device" is the simulated ring (ring_sim.c), filled ahead of the drain,
 * one ring at a time, so that only the drain is timed.  Prints figures; not
 * a timed test.  The patterns are those of tests/bench/gpu_overhead.cu: a
 * coalesced warp (one base + stride record), a scattered warp (32
 * addresses), and uniform atomics.
 *
 * The trace is the same bytes in every mode (checked).
 *
 *   bench_drain [--records N] [--threads W] [--out PATH]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "drain.h"
#include "record_args.h"
#include "ring_sim.h"
#include "writer_sink.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static unsigned encode(int pattern, uint64_t i, uint64_t *words)
{
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = (uint32_t)(i / 8);
    d.warp = (uint32_t)(i % 8);
    d.active_mask = WR_FULL_MASK;
    d.op = i % 3 ? WR_OP_LOAD : WR_OP_STORE;
    d.size = 4;
    d.space = WR_SPACE_GLOBAL;
    d.site_addr = 0;
    uint64_t base = 0x7f0000000000ull + (i % 100000) * 128;
    for (unsigned l = 0; l < 32; l++) {
        if (pattern == 0)
            d.lane_addr[l] = base + 4 * l;
        else if (pattern == 1) {   /* a gather: each lane its own word of 64 MiB */
            uint64_t x = (i * 32 + l + 1) * 0x9e3779b97f4a7c15ull;
            x ^= x >> 29;
            d.lane_addr[l] = 0x7f0000000000ull + (x % (1u << 24)) * 4;
        }
        else if (pattern == 2)
            d.lane_addr[l] = 0x7f0000000000ull + (i % 64) * 4;
        else {   /* a histogram: each lane its bin of 384 */
            uint64_t x = (i * 32 + l + 1) * 0x9e3779b97f4a7c15ull;
            d.lane_addr[l] = 0x7f0000000000ull + ((x >> 33) % 384) * 4;
        }
    }
    if (pattern >= 2) {
        d.op = WR_OP_ATOMIC_RMW;
        d.atomic_op = WR_AOP_ADD;
        d.scope = WR_SCOPE_DEVICE;
        d.order = WR_ORDER_RELAXED;
    }
    return wrr_encode_access(&d, words);
}

static double run(int pattern, uint64_t records, int background, unsigned workers,
                  const char *out, uint64_t *bytes)
{
    wrr_sim sim;
    const uint32_t log2cap = 16;
    if (wrr_sim_init(&sim, log2cap, 0) != 0)
        return -1;
    wr_header h;
    memset(&h, 0, sizeof h);
    h.version_major = WR_FORMAT_MAJOR;
    h.version_minor = WR_FORMAT_MINOR;
    h.producer = "bench_drain";
    h.warp_size = 32;
    wr_writer_options opts = {.background = background};
    wr_error err;
    wr_writer *w = wr_writer_open(out, &h, &opts, &err);
    if (!w) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    wrr_writer_sink ws;
    wrr_sink sink;
    wrr_writer_sink_init(&ws, w, &sink);
    wrr_drain d;
    wrr_drain_options dopts = {.workers = workers};
    if (wrr_drain_init(&d, &sim.ring, &sink, &dopts) != 0) {
        fprintf(stderr, "cannot start the drain\n");
        return -1;
    }
    wr_event launch;
    memset(&launch, 0, sizeof launch);
    launch.kind = WR_EV_KERNEL_LAUNCH;
    launch.u.launch.launch = 1;
    launch.u.launch.kernel = wr_writer_kernel(w, "k");
    for (int i = 0; i < 3; i++)
        launch.u.launch.grid[i] = launch.u.launch.block_dim[i] = launch.u.launch.cluster[i] = 1;
    launch.u.launch.grid[0] = 1u << 20;
    launch.u.launch.block_dim[0] = 256;
    wrr_drain_post(&d, &launch);
    wrr_drain_step(&d);
    uint64_t words[2 * WRR_MAX_SLOTS];
    double timed = 0;
    uint64_t done = 0;
    while (done < records) {
        /* fill most of the ring, then drain it: only the drain is timed */
        uint64_t room = (1ull << log2cap) - (sim.dev.head - sim.ring.ctl->tail);
        while (done < records) {
            unsigned n = encode(pattern, done, words);
            unsigned slots = WRR_W0_NSLOTS(words[0]);
            if (slots > room)
                break;
            wrr_sim_write(&sim, words, 32, 0);
            (void)n;
            room -= slots;
            done++;
        }
        double t0 = now();
        while (wrr_drain_poll(&d, 1u << 16) > 0)
            ;
        timed += now() - t0;
    }
    double t0 = now();
    wrr_drain_finish(&d);
    wr_writer_close(w, &err);
    timed += now() - t0;
    wrr_drain_destroy(&d);
    wrr_sim_free(&sim);
    FILE *f = fopen(out, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        *bytes = (uint64_t)ftell(f);
        fclose(f);
    }
    return timed;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    static char ba[1 << 16], bb[1 << 16];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && !memcmp(ba, bb, na);
        if (na < sizeof ba)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

int main(int argc, char **argv)
{
    uint64_t records = 2000000;
    const char *out = "/tmp/bench-drain.wrt";
    int valid;
    unsigned threads = wrr_drain_threads(NULL, sysconf(_SC_NPROCESSORS_ONLN), &valid);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--records") && i + 1 < argc)
            records = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = wrr_drain_threads(argv[++i], 1, &valid);
            if (!valid) {
                fprintf(stderr, "bench_drain: --threads: 1..%d\n", WRR_MAX_DRAIN_THREADS);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_drain [--records N] [--threads W] [--out PATH]\n");
            return 2;
        }
    }
    char first[4096];
    snprintf(first, sizeof first, "%s.inline", out);
    static const char *names[] = {"coalesced", "scattered", "atomics", "histogram"};
    printf("drain: %llu warp records per pattern, ring of 2^16 slots, %ld CPUs; M records/s\n",
           (unsigned long long)records, sysconf(_SC_NPROCESSORS_ONLN));
    printf("%-10s %8s %8s %8s  %8s %8s  %9s %5s\n", "pattern", "inline", "bg 1", "par W",
           "bg/inl", "par/inl", "bytes/rec", "same");
    int all_same = 1;
    for (int p = 0; p < 4; p++) {
        uint64_t b0 = 0, b1 = 0, b2 = 0;
        double t0 = run(p, records, 0, 0, first, &b0);
        double t1 = run(p, records, 1, 0, out, &b1);
        int same = same_file(first, out);
        double t2 = run(p, records, (int)threads, threads, out, &b2);
        same = same && same_file(first, out);
        if (t0 <= 0 || t1 <= 0 || t2 <= 0)
            return 1;
        all_same &= same;
        printf("%-10s %8.2f %8.2f %8.2f  %7.2fx %7.2fx  %9.2f %5s\n", names[p], records / t0 / 1e6,
               records / t1 / 1e6, records / t2 / 1e6, t0 / t1, t0 / t2,
               (double)b0 / (double)records, same ? "yes" : "NO");
    }
    printf("par W: %u drain workers and %u writer threads\n", threads, threads);
    remove(out);
    remove(first);
    return all_same ? 0 : 1;
}

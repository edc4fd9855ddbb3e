/* The recorder's drain on the CPU: how many device records a second one
 * drain thread converts and hands to the trace writer, with the writer
 * compressing and writing on the drain's thread and on its own background
 * thread (wr_writer_options.background, what the recorder uses).  The
 * "device" is the simulated ring (ring_sim.c), filled ahead of the drain,
 * one ring at a time, so that only the drain is timed.  Prints figures; not
 * a timed test.  The patterns are those of tests/bench/gpu_overhead.cu: a
 * coalesced warp (one base + stride record), a scattered warp (32
 * addresses), and uniform atomics.
 *
 *   bench_drain [--records N] [--out PATH]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"
#include "drain.h"
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
        else
            d.lane_addr[l] = 0x7f0000000000ull + (i % 64) * 4;
    }
    if (pattern == 2) {
        d.op = WR_OP_ATOMIC_RMW;
        d.atomic_op = WR_AOP_ADD;
        d.scope = WR_SCOPE_DEVICE;
        d.order = WR_ORDER_RELAXED;
    }
    return wrr_encode_access(&d, words);
}

static double run(int pattern, uint64_t records, int background, const char *out, uint64_t *bytes)
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
    wrr_drain_init(&d, &sim.ring, &sink, NULL);
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

int main(int argc, char **argv)
{
    uint64_t records = 2000000;
    const char *out = "/tmp/bench-drain.wrt";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--records") && i + 1 < argc)
            records = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: bench_drain [--records N] [--out PATH]\n");
            return 2;
        }
    }
    static const char *names[] = {"coalesced", "scattered", "atomics"};
    printf("drain: %llu warp records per pattern, ring of 2^16 slots, one drain thread\n",
           (unsigned long long)records);
    printf("%-10s %14s %14s %8s %12s\n", "pattern", "inline M rec/s", "bg M rec/s", "bg/inl",
           "bytes/rec");
    for (int p = 0; p < 3; p++) {
        uint64_t b0 = 0, b1 = 0;
        double t0 = run(p, records, 0, out, &b0);
        double t1 = run(p, records, 1, out, &b1);
        if (t0 <= 0 || t1 <= 0)
            return 1;
        printf("%-10s %14.2f %14.2f %7.2fx %12.2f\n", names[p], records / t0 / 1e6,
               records / t1 / 1e6, t0 / t1, (double)b1 / (double)records);
    }
    remove(out);
    return 0;
}

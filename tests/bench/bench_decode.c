/* bench_decode: single-core decode throughput of the .wrt reader.
 *
 *   bench_decode [--events N] [--chunk BYTES] [--file PATH] [--keep] [--reps R]
 *
 * Writes a synthetic trace shaped like a real kernel's (per warp: mostly
 * full-warp coalesced loads/stores, some uniform accesses, some gathers with
 * per-lane addresses, partial masks at the edges, atomics, barriers every
 * few instructions, fences, block enter/exit), then reads it back R times
 * with the streaming reader (file in the page cache: checksums, LZ4 and
 * record decoding into wr_event batches) and prints the best run in GB/s of
 * uncompressed event payload and events/s.  A figure, not a test. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "warprace/trace.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 32);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_trace(const char *path, uint64_t target_events, uint32_t chunk, uint64_t *raw_bytes)
{
    wr_error err;
    wr_header h = {.producer = "bench_decode", .producer_version = "1", .device = "synthetic",
                   .sm_arch = 90, .warp_size = 32, .clock_khz = 1755000, .host = "bench",
                   .command = "bench_decode"};
    wr_writer_options opts = {.chunk_bytes = chunk};
    wr_writer *w = wr_writer_open(path, &h, &opts, &err);
    if (!w) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    uint32_t kernel = wr_writer_kernel(w, "stencil_step");
    uint32_t sites[16];
    for (unsigned i = 0; i < 16; i++)
        sites[i] = wr_writer_site(w, 0x100 + 8 * i, "stencil.cu", 40 + i, "stencil_step");
    wr_writer_alloc(w, 0x7f0000000000ull, 1ull << 32, WR_SPACE_GLOBAL, "grid");
    wr_writer_alloc(w, 0, 48 * 1024, WR_SPACE_SHARED, "tile");

    uint64_t events = 0, lanes[32];
    uint32_t launch = 0;
    while (events < target_events) {
        launch++;
        wr_event ev = {.kind = WR_EV_KERNEL_LAUNCH,
                       .u.launch = {launch, kernel, {4096, 1, 1}, {256, 1, 1}, {1, 1, 1}, 8192, 0}};
        wr_writer_event(w, &ev, &err);
        events++;
        for (uint32_t block = 0; block < 4096 && events < target_events; block++) {
            ev = (wr_event){.kind = WR_EV_BLOCK_ENTER, .u.block = {launch, block}};
            wr_writer_event(w, &ev, &err);
            events++;
            for (uint32_t step = 0; step < 6; step++) {
                for (uint32_t warp = 0; warp < 8; warp++) {
                    uint64_t tid0 = ((uint64_t)block * 256 + warp * 32);
                    for (unsigned k = 0; k < 4; k++) {
                        uint32_t r = rng() % 100;
                        wr_access a = {.launch = launch, .block = block, .warp = warp,
                                       .active_mask = WR_FULL_MASK, .size = 4,
                                       .addr_mode = WR_ADDR_STRIDED, .stride = 4,
                                       .base = 0x7f0000000000ull + (tid0 + step * 1048576) * 4};
                        if (r < 45) {           /* coalesced global load */
                            a.op = WR_OP_LOAD;
                        } else if (r < 65) {    /* coalesced global store */
                            a.op = WR_OP_STORE;
                            a.size = 8;
                            a.stride = 8;
                        } else if (r < 75) {    /* shared-memory tile access */
                            a.op = (r & 1) ? WR_OP_STORE : WR_OP_LOAD;
                            a.space = WR_SPACE_SHARED;
                            a.base = (uint64_t)warp * 128 + k * 4;
                        } else if (r < 83) {    /* uniform: a coefficient */
                            a.op = WR_OP_LOAD;
                            a.addr_mode = WR_ADDR_UNIFORM;
                            a.base = 0x7f0000000000ull + 64 * k;
                        } else if (r < 92) {    /* gather: per-lane addresses */
                            a.op = WR_OP_LOAD;
                            a.addr_mode = WR_ADDR_VECTOR;
                            for (unsigned l = 0; l < 32; l++)
                                lanes[l] = 0x7f0000000000ull + (uint64_t)(rng() % (1u << 24)) * 4;
                            a.lane_addr = lanes;
                        } else if (r < 96) {    /* edge of the domain: partial mask */
                            a.op = WR_OP_LOAD;
                            a.active_mask = 0x0000ffffu;
                        } else {                /* atomic histogram update */
                            a.op = WR_OP_ATOMIC_RMW;
                            a.atomic_op = WR_AOP_ADD;
                            a.scope = WR_SCOPE_DEVICE;
                            a.order = WR_ORDER_RELAXED;
                            a.addr_mode = WR_ADDR_VECTOR;
                            for (unsigned l = 0; l < 32; l++)
                                lanes[l] = 0x7f0100000000ull + (uint64_t)(rng() % 256) * 4;
                            a.lane_addr = lanes;
                        }
                        ev = (wr_event){.kind = WR_EV_ACCESS, .site = sites[(step * 4 + k) % 16], .u.access = a};
                        if (wr_writer_event(w, &ev, &err)) {
                            fprintf(stderr, "%s\n", err.msg);
                            return -1;
                        }
                        events++;
                    }
                }
                for (uint32_t warp = 0; warp < 8; warp++) {
                    ev = (wr_event){.kind = WR_EV_BARRIER, .site = sites[15],
                                    .u.barrier = {launch, block, warp, WR_FULL_MASK, 0, 256,
                                                  WR_BAR_BLOCK, WR_BARMODE_SYNC}};
                    wr_writer_event(w, &ev, &err);
                    events++;
                }
                if (step == 5) {
                    ev = (wr_event){.kind = WR_EV_FENCE,
                                    .u.fence = {launch, block, 0, WR_FULL_MASK, WR_SCOPE_DEVICE, WR_ORDER_SC}};
                    wr_writer_event(w, &ev, &err);
                    events++;
                }
            }
            ev = (wr_event){.kind = WR_EV_BLOCK_EXIT, .u.block = {launch, block}};
            wr_writer_event(w, &ev, &err);
            events++;
        }
        ev = (wr_event){.kind = WR_EV_KERNEL_END, .u.kernel_end = {launch}};
        wr_writer_event(w, &ev, &err);
        events++;
    }
    if (wr_writer_close(w, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    (void)raw_bytes;
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t target = 10000000;
    uint32_t chunk = 0;
    int keep = 0, reps = 3;
    char path[512];
    snprintf(path, sizeof path, "/tmp/bench_decode-%d.wrt", (int)getpid());
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            target = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--file") && i + 1 < argc)
            snprintf(path, sizeof path, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else {
            fprintf(stderr, "usage: bench_decode [--events N] [--chunk BYTES] [--file PATH] [--keep] [--reps R]\n");
            return 2;
        }
    }
    double t0 = now();
    if (write_trace(path, target, chunk, NULL))
        return 1;
    double t_write = now() - t0;

    double best = 1e30;
    uint64_t events = 0, raw = 0, stored = 0, file_bytes = 0, vector = 0;
    for (int rep = 0; rep < reps; rep++) {
        wr_error err;
        double t = now();
        wr_reader *r = wr_reader_open(path, &err);
        if (!r) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        wr_batch b;
        int rc;
        uint64_t n = 0, checksum = 0, vec = 0;
        while ((rc = wr_reader_next(r, &b, &err)) == 1) {
            n += b.count;
            /* Touch one field per event so the work cannot be skipped. */
            for (size_t k = 0; k < b.count; k++) {
                checksum += b.events[k].kind;
                vec += b.events[k].kind == WR_EV_ACCESS && b.events[k].u.access.addr_mode == WR_ADDR_VECTOR;
            }
            wr_batch_release(&b);
        }
        double dt = now() - t;
        if (rc < 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        const wr_reader_stats *st = wr_reader_stats_get(r);
        events = n;
        vector = vec;
        raw = st->raw_bytes;
        stored = st->compressed_bytes;
        file_bytes = st->file_bytes;
        wr_reader_close(r);
        if (dt < best)
            best = dt;
        if (checksum == 0)
            return 1;
    }
    if (!keep)
        unlink(path);
    printf("decode benchmark (single core, file in page cache)\n");
    printf("  events          %" PRIu64 " (%.1f%% vector-address accesses)\n", events,
           100.0 * (double)vector / (double)events);
    printf("  payload         %.1f MB uncompressed, %.1f MB stored (ratio %.2f), file %.1f MB\n",
           (double)raw / 1e6, (double)stored / 1e6, (double)raw / (double)stored, (double)file_bytes / 1e6);
    printf("  bytes/event     %.1f uncompressed, %.1f stored\n", (double)raw / (double)events,
           (double)stored / (double)events);
    printf("  write           %.2f s (%.1f Mevents/s)\n", t_write, (double)events / t_write / 1e6);
    printf("  decode          %.3f s best of %d\n", best, reps);
    printf("  throughput      %.2f GB/s of uncompressed event payload, %.1f Mevents/s\n",
           (double)raw / best / 1e9, (double)events / best / 1e6);
    return 0;
}

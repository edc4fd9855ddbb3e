#include "sample_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

wr_header sample_header(void)
{
    return (wr_header){
        .producer = "warprace-tests",
        .producer_version = "0.1.0",
        .device = "Synthetic GPU 80GB",
        .sm_arch = 90,
        .warp_size = 32,
        .clock_khz = 1755000,
        .host = "testhost",
        .time_unix_ns = 1700000000123456789LL,
        .command = "./app --size 1024 \"quoted arg\"",
    };
}

void sample_define_catalog(wr_writer *w)
{
    wr_writer_kernel(w, "reduce");
    wr_writer_kernel(w, "scan_kernel<int>");
    wr_writer_kernel(w, "reduce");  /* same name twice: distinct kernel ids */
    wr_writer_alloc(w, 0x7f0000000000ull, 1 << 20, WR_SPACE_GLOBAL, "data");
    wr_writer_alloc(w, 0x7f0000100000ull, 4096, WR_SPACE_GLOBAL, "");
    wr_writer_alloc(w, 0, 48 * 1024, WR_SPACE_SHARED, "tile");
    wr_writer_alloc(w, 0x7f0000000000ull, 1 << 16, WR_SPACE_GLOBAL, "data_realloc");
    wr_writer_site(w, 0x1a0, "reduce.cu", 42, "reduce");
    wr_writer_site(w, 0x1b8, "reduce.cu", 43, "reduce");
    wr_writer_site(w, 0, "", 0, "");
    wr_writer_site(w, 0x2000, "scan.cu", 7, "scan_kernel<int>");
    wr_writer_site(w, 0xffffffffffffull, "dir/ü.cu", 4000000000u, "f");
    static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 0, 0xff};
    wr_writer_module(w, "reduce.cubin", cubin, sizeof cubin);
}

static uint32_t mix32(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

void sample_event(uint64_t i, wr_event *ev, uint64_t lanes[32])
{
    memset(ev, 0, sizeof *ev);
    uint32_t r = mix32(i);
    ev->site = (uint32_t)(i % 6);   /* 0 (unknown) .. 5 */
    /* 24 cases: the first 13 are accesses covering every encoding, the rest
     * each kind of synchronization / host event. */
    unsigned c = (unsigned)(i % 24);
    if (c < 13) {
        wr_access *a = &ev->u.access;
        ev->kind = WR_EV_ACCESS;
        a->launch = 1 + (uint32_t)(i % 3);
        a->block = r % 100000;
        a->warp = (r >> 8) % 32;
        a->active_mask = (c % 3 == 0) ? WR_FULL_MASK : (r | 1u);
        a->op = (uint8_t)(c % 5);
        a->space = (uint8_t)(c % 3);
        a->order = (uint8_t)(c % 6);
        a->scope = (uint8_t)(c % 5);
        a->size = (uint8_t)(1u << (c % 5));
        if (a->op == WR_OP_ATOMIC_RMW) {
            a->atomic_op = (uint8_t)(1 + (i / 24) % WR_AOP_MAX_ID);
            if (a->atomic_op == WR_AOP_CAS)
                a->cas_success = a->active_mask & mix32(i + 7);
        }
        uint64_t base = 0x7f0000000000ull + (uint64_t)(r % 4096) * 16;
        if (a->space == WR_SPACE_SHARED) {
            /* shared offsets stay below WR_SHARED_LIMIT: small, and never
             * the wide vector's lanes far apart (those go to local memory) */
            base = 0x1000 + (uint64_t)(r % 4096) * 16;
            if (c % 4 == 3)
                a->space = WR_SPACE_LOCAL;
        }
        switch (c % 4) {
        case 0:
            a->addr_mode = WR_ADDR_STRIDED;
            a->base = base;
            a->stride = (c & 4) ? -8 : a->size;
            break;
        case 1:
            a->addr_mode = WR_ADDR_UNIFORM;
            a->base = base;
            break;
        case 2: /* narrow vector: lanes within +-2 GiB of the first */
            a->addr_mode = WR_ADDR_VECTOR;
            for (unsigned l = 0; l < 32; l++)
                lanes[l] = (a->active_mask >> l & 1) ? base + (uint64_t)(mix32(i * 32 + l) % 65536) * 4 - 1000
                                                     : 0xdeadbeefull;  /* inactive: ignored */
            a->lane_addr = lanes;
            break;
        default: /* wide vector: lanes far apart */
            a->addr_mode = WR_ADDR_VECTOR;
            for (unsigned l = 0; l < 32; l++)
                lanes[l] = (a->active_mask >> l & 1) ? ((uint64_t)mix32(i * 32 + l) << 20) ^ (uint64_t)l << 40 : 0;
            a->lane_addr = lanes;
            break;
        }
        return;
    }
    switch (c) {
    case 13:
        ev->kind = WR_EV_BARRIER;
        /* block (named 0..15), cluster and grid barriers and mbarriers in
         * turn; cluster and grid barriers have no id.  Each in every mode
         * it may take (1.3), in turn over the rounds of four: block sync
         * and arrive (with its count), cluster sync, arrive, relaxed
         * arrive and wait, grid sync, arrive and wait (a wait counts no
         * thread), mbarrier init, arrive, relaxed arrive and wait. */
        ev->u.barrier = (wr_barrier){1, r % 1000, r % 32, r | 0x80000000u, r % 16, 256,
                                     WR_BAR_BLOCK, WR_BARMODE_SYNC};
        uint64_t turn = i / 96;
        switch ((i / 24) % 4) {
        case 0:
            ev->u.barrier.mode = (uint8_t)(turn % 2 ? WR_BARMODE_ARRIVE : WR_BARMODE_SYNC);
            break;
        case 1:
            ev->u.barrier.scope = WR_BAR_CLUSTER;
            ev->u.barrier.barrier_id = 0;
            ev->u.barrier.expected = 1024;
            ev->u.barrier.mode = (uint8_t)(turn % 4);
            break;
        case 2:
            ev->u.barrier.scope = WR_BAR_GRID;
            ev->u.barrier.barrier_id = 0;
            ev->u.barrier.expected = (r & 1) ? 0 : r;   /* 0: all of the grid */
            static const uint8_t grid_modes[] = {WR_BARMODE_SYNC, WR_BARMODE_ARRIVE,
                                                 WR_BARMODE_WAIT};
            ev->u.barrier.mode = grid_modes[turn % 3];
            break;
        case 3:
            /* an 8-byte object in the 48 KiB "tile"; the init's count
             * 1 .. 2^20 - 1, an arrive's 0 (once) or a count, a wait's
             * parity */
            ev->u.barrier.scope = WR_BAR_MBARRIER;
            ev->u.barrier.barrier_id = (r % 6144) * 8;
            static const uint8_t mbar_modes[] = {WR_BARMODE_INIT, WR_BARMODE_ARRIVE,
                                                 WR_BARMODE_ARRIVE_RELAXED, WR_BARMODE_WAIT};
            ev->u.barrier.mode = mbar_modes[turn % 4];
            if (ev->u.barrier.mode == WR_BARMODE_INIT)
                ev->u.barrier.expected = 1 + r % WR_MBARRIER_COUNT_MAX;
            else if (ev->u.barrier.mode == WR_BARMODE_WAIT)
                ev->u.barrier.expected = r & 1;
            else
                ev->u.barrier.expected = (r & 1) ? 0 : (r >> 1) % (WR_MBARRIER_COUNT_MAX + 1);
            ev->u.barrier.active_mask = ev->u.barrier.mode == WR_BARMODE_INIT ? 1u << (r % 32)
                                                                              : r | 1u;
            break;
        }
        if (ev->u.barrier.mode == WR_BARMODE_WAIT && ev->u.barrier.scope != WR_BAR_MBARRIER)
            ev->u.barrier.expected = 0;
        break;
    case 14:
        ev->kind = WR_EV_WARP_SYNC;
        ev->u.warp_sync = (wr_warp_sync){2, r % 1000, r % 32, r};
        break;
    case 15:
        ev->kind = WR_EV_FENCE;
        ev->u.fence = (wr_fence){3, r % 1000, r % 32, WR_FULL_MASK, (uint8_t)(1 + r % 4),
                                 (r & 1) ? WR_ORDER_SC : WR_ORDER_ACQ_REL};
        break;
    case 16:
        ev->kind = (r & 1) ? WR_EV_BLOCK_ENTER : WR_EV_BLOCK_EXIT;
        ev->u.block = (wr_block_mark){1, r};
        break;
    case 17:
        ev->kind = WR_EV_KERNEL_LAUNCH;
        ev->u.launch = (wr_launch){.launch = (uint32_t)(i / 24 + 1), .kernel = 1 + r % 3,
                                   .grid = {r % 65536, 2, 1}, .block_dim = {256, 1, 1},
                                   .cluster = {1, 1, 1}, .shared_bytes = 4096, .stream = r % 4};
        break;
    case 18:
        ev->kind = WR_EV_KERNEL_END;
        ev->u.kernel_end.launch = (uint32_t)(i / 24 + 1);
        break;
    case 19:
        ev->kind = (uint8_t)(WR_EV_EVENT_RECORD + r % 3);
        ev->u.stream_event = (wr_stream_event){r % 100, ev->kind == WR_EV_EVENT_SYNC ? 0 : r % 7};
        break;
    case 20:
        ev->kind = (r & 1) ? WR_EV_STREAM_SYNC : WR_EV_DEVICE_SYNC;
        if (ev->kind == WR_EV_STREAM_SYNC)
            ev->u.stream_sync.stream = r % 9;
        break;
    case 21:
        ev->kind = WR_EV_HOST_COPY;
        ev->u.copy = (wr_host_copy){.dst = 0x7f0000000000ull, .src = (r & 2) ? 0x7f0000100000ull : 0,
                                    .bytes = r, .stream = r % 3, .kind = (uint8_t)(r % 4),
                                    .async = (uint8_t)(r >> 7 & 1)};
        break;
    case 22:
        ev->kind = (r & 1) ? WR_EV_ALLOC : WR_EV_FREE;
        ev->u.alloc.alloc = r % 5;
        break;
    default:
        ev->kind = WR_EV_LOST;
        ev->u.lost = (wr_lost){.count = 1 + r % 1000, .launch = r % 3,
                               .block = (r & 1) ? UINT32_MAX : r % 1000};
        break;
    }
}

int sample_write(const char *path, uint64_t events, uint32_t chunk_bytes, wr_error *err)
{
    wr_header h = sample_header();
    wr_writer_options opts = {.chunk_bytes = chunk_bytes};
    wr_writer *w = wr_writer_open(path, &h, &opts, err);
    if (!w)
        return -1;
    sample_define_catalog(w);
    uint64_t lanes[32];
    for (uint64_t i = 0; i < events; i++) {
        wr_event ev;
        sample_event(i, &ev, lanes);
        if (wr_writer_event(w, &ev, err)) {
            wr_writer_abandon(w);
            return -1;
        }
    }
    return wr_writer_close(w, err);
}

#define DIFF(field)                                                                 \
    do {                                                                            \
        if ((x->field) != (y->field)) {                                             \
            snprintf(why, why_len, "%s: %llu != %llu", #field,                     \
                     (unsigned long long)(x->field), (unsigned long long)(y->field)); \
            return false;                                                           \
        }                                                                           \
    } while (0)

bool sample_events_equal(const wr_event *x, const wr_event *y, char *why, size_t why_len)
{
    DIFF(kind);
    DIFF(site);
    switch (x->kind) {
    case WR_EV_ACCESS:
        DIFF(u.access.launch); DIFF(u.access.block); DIFF(u.access.warp);
        DIFF(u.access.active_mask); DIFF(u.access.cas_success); DIFF(u.access.op);
        DIFF(u.access.atomic_op); DIFF(u.access.scope); DIFF(u.access.order);
        DIFF(u.access.space); DIFF(u.access.size); DIFF(u.access.addr_mode);
        if (x->u.access.addr_mode != WR_ADDR_VECTOR) {
            DIFF(u.access.base);
            if (x->u.access.addr_mode == WR_ADDR_STRIDED)
                DIFF(u.access.stride);
        }
        for (unsigned l = 0; l < 32; l++)
            if (x->u.access.active_mask >> l & 1 &&
                wr_access_lane_addr(&x->u.access, l) != wr_access_lane_addr(&y->u.access, l)) {
                snprintf(why, why_len, "lane %u address differs", l);
                return false;
            }
        break;
    case WR_EV_BARRIER:
        DIFF(u.barrier.launch); DIFF(u.barrier.block); DIFF(u.barrier.warp);
        DIFF(u.barrier.active_mask); DIFF(u.barrier.barrier_id); DIFF(u.barrier.expected);
        DIFF(u.barrier.scope); DIFF(u.barrier.mode);
        break;
    case WR_EV_WARP_SYNC:
        DIFF(u.warp_sync.launch); DIFF(u.warp_sync.block); DIFF(u.warp_sync.warp); DIFF(u.warp_sync.mask);
        break;
    case WR_EV_FENCE:
        DIFF(u.fence.launch); DIFF(u.fence.block); DIFF(u.fence.warp); DIFF(u.fence.active_mask);
        DIFF(u.fence.scope); DIFF(u.fence.order);
        break;
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT:
        DIFF(u.block.launch); DIFF(u.block.block);
        break;
    case WR_EV_KERNEL_LAUNCH:
        DIFF(u.launch.launch); DIFF(u.launch.kernel); DIFF(u.launch.shared_bytes); DIFF(u.launch.stream);
        for (int d = 0; d < 3; d++) {
            DIFF(u.launch.grid[d]); DIFF(u.launch.block_dim[d]); DIFF(u.launch.cluster[d]);
        }
        break;
    case WR_EV_KERNEL_END:
        DIFF(u.kernel_end.launch);
        break;
    case WR_EV_EVENT_RECORD:
    case WR_EV_STREAM_WAIT:
    case WR_EV_EVENT_SYNC:
        DIFF(u.stream_event.event); DIFF(u.stream_event.stream);
        break;
    case WR_EV_STREAM_SYNC:
        DIFF(u.stream_sync.stream);
        break;
    case WR_EV_HOST_COPY:
        DIFF(u.copy.dst); DIFF(u.copy.src); DIFF(u.copy.bytes); DIFF(u.copy.stream);
        DIFF(u.copy.kind); DIFF(u.copy.async);
        break;
    case WR_EV_ALLOC:
    case WR_EV_FREE:
        DIFF(u.alloc.alloc);
        break;
    case WR_EV_LOST:
        DIFF(u.lost.count); DIFF(u.lost.launch); DIFF(u.lost.block);
        break;
    default:
        break;
    }
    return true;
}

unsigned char *sample_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

unsigned char *sample_make_temp(const char *tag, uint64_t events, uint32_t chunk_bytes,
                                char *path, size_t path_len, size_t *size, wr_error *why)
{
    snprintf(path, path_len, "/tmp/wr-format-%s-%d-XXXXXX", tag, (int)getpid());
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(why->msg, sizeof why->msg, "mkstemp %s failed", path);
        return NULL;
    }
    close(fd);
    if (sample_write(path, events, chunk_bytes, why))
        return NULL;
    unsigned char *data = sample_read_file(path, size);
    if (!data)
        snprintf(why->msg, sizeof why->msg, "cannot read back %s", path);
    return data;
}

/* libFuzzer target for the recorder's drain (recorder/drain.c), the parser
 * of what the device writes into the ring: records whose words come from
 * the input (headers, launch tags, lanes), between host events the input
 * chooses (launches, tagged launches of a launch group, closes, group
 * closes, ends).  The drain must never crash or hang; when it stops, its
 * error names a ring position or what the host did wrong; and every device
 * event it emits belongs to a launch it emitted before, or to none (0).
 * Any broken promise aborts, so libFuzzer keeps the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"
#include "ring_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_ring: %s\n", what);
        abort();
    }
}

/* the launches emitted so far (a bitmap of ids below 4096) */
static uint8_t seen[4096 / 8];

static int sink_event(void *ctx, const wr_event *ev)
{
    (void)ctx;
    uint32_t launch = UINT32_MAX;
    switch (ev->kind) {
    case WR_EV_KERNEL_LAUNCH:
        if (ev->u.launch.launch < 4096)
            seen[ev->u.launch.launch / 8] |= (uint8_t)(1u << (ev->u.launch.launch % 8));
        return 0;
    case WR_EV_ACCESS: launch = ev->u.access.launch; break;
    case WR_EV_BARRIER: launch = ev->u.barrier.launch; break;
    case WR_EV_WARP_SYNC: launch = ev->u.warp_sync.launch; break;
    case WR_EV_FENCE: launch = ev->u.fence.launch; break;
    case WR_EV_BLOCK_ENTER:
    case WR_EV_BLOCK_EXIT: launch = ev->u.block.launch; break;
    default: return 0;
    }
    check(launch == 0 || (launch < 4096 && (seen[launch / 8] >> (launch % 8)) & 1u),
          "a device event of a launch never emitted");
    return 0;
}

static int sink_flush(void *ctx)
{
    (void)ctx;
    return 0;
}

static uint32_t sink_site(void *ctx, const char *file, uint32_t line, const char *fn, uint64_t pc)
{
    (void)ctx, (void)file, (void)line, (void)fn, (void)pc;
    return 1;
}

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static unsigned byte(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint64_t word(input *in)
{
    uint64_t w = 0;
    for (int i = 0; i < 8; i++)
        w |= (uint64_t)byte(in) << (8 * i);
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(seen, 0, sizeof seen);
    wrr_sim sim;
    if (wrr_sim_init(&sim, 10, 0) != 0)
        return 0;
    wrr_sink sink = {NULL, sink_event, sink_flush, sink_site, NULL, NULL, NULL};
    wrr_drain d;
    if (wrr_drain_init(&d, &sim.ring, &sink, NULL) != 0) {
        wrr_sim_free(&sim);
        return 0;
    }
    input in = {data, size};
    uint32_t next_launch = 0;
    while (in.n && !d.failed) {
        unsigned op = byte(&in) % 8;
        wr_event ev;
        memset(&ev, 0, sizeof ev);
        switch (op) {
        case 0:   /* a launch */
        case 1: { /* a launch group's member */
            ev.kind = WR_EV_KERNEL_LAUNCH;
            ev.u.launch.launch = ++next_launch % 4096;
            ev.u.launch.kernel = 1;
            for (int i = 0; i < 3; i++)
                ev.u.launch.grid[i] = ev.u.launch.block_dim[i] = ev.u.launch.cluster[i] = 1;
            if (op == 0)
                wrr_drain_post(&d, &ev);
            else
                wrr_drain_post_tagged_launch(&d, &ev, byte(&in) % 9);
            break;
        }
        case 2:
        case 3: { /* a record: its header from the input, a slot count that fits */
            uint64_t w[2 * WRR_MAX_SLOTS];
            w[0] = word(&in);
            unsigned nslots = 2 + byte(&in) % 18;
            w[0] = (w[0] & ~(0x1full << 37)) | ((uint64_t)nslots << 37);
            for (unsigned i = 1; i < 2 * nslots; i++)
                w[i] = i < 4 ? word(&in) : (i & 1 ? 0 : word(&in) & 0xffff);
            if (sim.dev.head - sim.ring.ctl->tail + nslots > 1024 && wrr_drain_step(&d) < 0)
                break;
            if (sim.dev.head - sim.ring.ctl->tail + nslots <= 1024)
                wrr_sim_write(&sim, w, 32, 1);
            break;
        }
        case 4: /* a launch's close */
            wrr_drain_post_close(&d, next_launch % 4096, byte(&in) & 1 ? sim.dev.head
                                                                        : WRR_END_UNKNOWN);
            break;
        case 5:
            wrr_drain_post_group_close(&d, byte(&in) & 1 ? sim.dev.head : WRR_END_UNKNOWN);
            break;
        case 6:
            ev.kind = WR_EV_KERNEL_END;
            ev.u.kernel_end.launch = next_launch % 4096;
            wrr_drain_post(&d, &ev);
            break;
        default:
            wrr_drain_step(&d);
            break;
        }
    }
    if (wrr_drain_finish(&d) != 0)
        check(strstr(d.error, "ring position") || strstr(d.error, "position") ||
                  strstr(d.error, "tag"),
              "a failure that names neither a ring position nor a tag");
    wrr_drain_destroy(&d);
    wrr_sim_free(&sim);
    return 0;
}

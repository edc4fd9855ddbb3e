/*
 * wr-synth: writes large synthetic .wrt traces for the benchmarks.
 *
 *   wr-synth -o out.wrt [--pattern P] [--accesses N] [--blocks B]
 *            [--threads-per-block T] [--races K] [--seed S]
 *
 * Patterns (each a kernel shaped like real code, race-free unless --races):
 *   stencil   coalesced 1-D stencil: global loads into shared memory, a
 *             barrier, neighbour reads from shared, a coalesced global store,
 *             a barrier before the next tile
 *   gather    irregular graph-like gathers (vector addresses from a random
 *             index) and scatters to a permutation (distinct addresses)
 *   atomics   histogram: device-scope atomicAdd to random bins, then a
 *             coalesced read of the input
 *   locks     per-bucket locks: CAS + fence, update, fence + exch (every
 *             CAS succeeds: no spinning)
 *   blocks    many small blocks (grids of 10^5+ blocks, 1 warp each)
 *   bytes     the stencil on 8-bit pixels: 1-byte loads and stores, four
 *             lanes to a word, every word touched split into byte cells
 *   mix       all of the above, one launch each
 *
 * --races K injects K unsynchronized write/read pairs on a separate array so
 * that the race path of the engines is exercised too.  Event order is a
 * legal observed order: resident blocks are interleaved phase by phase and
 * every barrier's arrivals precede the accesses after it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warprace/trace.h"

typedef struct synth {
    wr_writer *w;
    wr_error err;
    uint64_t budget;        /* thread-level accesses still to emit */
    uint64_t emitted;
    uint64_t rng;
    uint32_t next_launch;
    uint32_t blocks, tpb;
    uint32_t site_load, site_store, site_shared_st, site_shared_ld, site_barrier;
    uint32_t site_atomic, site_cas, site_fence, site_exch, site_gather, site_scatter;
    uint32_t site_race_w, site_race_r;
} synth;

static uint64_t next_random(synth *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static void emit(synth *s, const wr_event *ev)
{
    if (wr_writer_event(s->w, ev, &s->err) != 0) {
        fprintf(stderr, "wr-synth: %s\n", s->err.msg);
        exit(2);
    }
    if (ev->kind == WR_EV_ACCESS)
        s->emitted += (uint64_t)__builtin_popcount(ev->u.access.active_mask);
}

static void sized_access(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t site,
                         uint32_t mask, uint8_t op, uint8_t space, uint64_t base, int64_t stride,
                         uint8_t size)
{
    wr_event ev = {.kind = WR_EV_ACCESS, .site = site};
    ev.u.access = (wr_access){.launch = launch, .block = block, .warp = warp,
                              .active_mask = mask, .op = op, .space = space,
                              .size = size, .order = WR_ORDER_WEAK,
                              .addr_mode = stride ? WR_ADDR_STRIDED : WR_ADDR_UNIFORM,
                              .base = base, .stride = stride};
    emit(s, &ev);
}

static void masked_access(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t site,
                          uint32_t mask, uint8_t op, uint8_t space, uint64_t base, int64_t stride)
{
    sized_access(s, launch, block, warp, site, mask, op, space, base, stride, 4);
}

/* A full-warp access; stride 0 would make every lane touch one word. */
static void access_event(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t site,
                         uint8_t op, uint8_t space, uint64_t base, int64_t stride)
{
    masked_access(s, launch, block, warp, site, WR_FULL_MASK, op, space, base, stride);
}

static void vector_event(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t site,
                         uint8_t op, const uint64_t *lanes)
{
    wr_event ev = {.kind = WR_EV_ACCESS, .site = site};
    ev.u.access = (wr_access){.launch = launch, .block = block, .warp = warp,
                              .active_mask = WR_FULL_MASK, .op = op, .space = WR_SPACE_GLOBAL,
                              .size = 4, .order = WR_ORDER_WEAK,
                              .addr_mode = WR_ADDR_VECTOR, .lane_addr = lanes};
    emit(s, &ev);
}

static void atomic_event(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t site,
                         uint8_t aop, uint32_t mask, uint32_t cas_success, uint64_t addr,
                         uint8_t order)
{
    wr_event ev = {.kind = WR_EV_ACCESS, .site = site};
    ev.u.access = (wr_access){.launch = launch, .block = block, .warp = warp,
                              .active_mask = mask, .cas_success = cas_success,
                              .op = WR_OP_ATOMIC_RMW, .atomic_op = aop,
                              .scope = WR_SCOPE_DEVICE, .order = order,
                              .space = WR_SPACE_GLOBAL, .size = 4,
                              .addr_mode = WR_ADDR_UNIFORM, .base = addr};
    emit(s, &ev);
}

static void barrier_event(synth *s, uint32_t launch, uint32_t block, uint32_t warp)
{
    wr_event ev = {.kind = WR_EV_BARRIER, .site = s->site_barrier};
    ev.u.barrier = (wr_barrier){.launch = launch, .block = block, .warp = warp,
                                .active_mask = WR_FULL_MASK, .barrier_id = 0,
                                .expected = s->tpb};
    emit(s, &ev);
}

static void fence_event(synth *s, uint32_t launch, uint32_t block, uint32_t warp, uint32_t mask)
{
    wr_event ev = {.kind = WR_EV_FENCE, .site = s->site_fence};
    ev.u.fence = (wr_fence){.launch = launch, .block = block, .warp = warp,
                            .active_mask = mask, .scope = WR_SCOPE_DEVICE,
                            .order = WR_ORDER_SC};
    emit(s, &ev);
}

static void block_mark(synth *s, uint8_t kind, uint32_t launch, uint32_t block)
{
    wr_event ev = {.kind = kind};
    ev.u.block = (wr_block_mark){.launch = launch, .block = block};
    emit(s, &ev);
}

static uint32_t launch_kernel(synth *s, const char *name, uint32_t blocks, uint32_t tpb,
                              uint32_t shared_bytes)
{
    uint32_t kernel = wr_writer_kernel(s->w, name);
    uint32_t launch = ++s->next_launch;
    wr_event ev = {.kind = WR_EV_KERNEL_LAUNCH};
    ev.u.launch = (wr_launch){.launch = launch, .kernel = kernel,
                              .grid = {blocks, 1, 1}, .block_dim = {tpb, 1, 1},
                              .cluster = {1, 1, 1}, .shared_bytes = shared_bytes, .stream = 0};
    emit(s, &ev);
    return launch;
}

static void end_kernel(synth *s, uint32_t launch)
{
    wr_event ev = {.kind = WR_EV_KERNEL_END};
    ev.u.kernel_end.launch = launch;
    emit(s, &ev);
    wr_event sync = {.kind = WR_EV_DEVICE_SYNC};
    emit(s, &sync);
}

/* Blocks run in waves of `resident`; inside a wave each phase is emitted for
 * every block before the next phase, as concurrently resident blocks would
 * interleave.  phase(s, launch, block, phase_index) returns 0 when the block
 * has no more phases. */
typedef int (*phase_fn)(synth *s, uint32_t launch, uint32_t block, uint32_t phase);

static void run_grid(synth *s, uint32_t launch, uint32_t blocks, phase_fn phase)
{
    const uint32_t resident = 8;
    for (uint32_t first = 0; first < blocks && s->emitted < s->budget; first += resident) {
        uint32_t last = first + resident < blocks ? first + resident : blocks;
        for (uint32_t b = first; b < last; b++)
            block_mark(s, WR_EV_BLOCK_ENTER, launch, b);
        for (uint32_t p = 0;; p++) {
            int more = 0;
            for (uint32_t b = first; b < last; b++)
                more |= phase(s, launch, b, p);
            if (!more)
                break;
        }
        for (uint32_t b = first; b < last; b++)
            block_mark(s, WR_EV_BLOCK_EXIT, launch, b);
    }
}

enum { GLOBAL_IN = 0x10000000, GLOBAL_OUT = 0x50000000, GLOBAL_BINS = 0x90000000,
       GLOBAL_LOCKS = 0xA0000000, GLOBAL_RACY = 0xB0000000 };

/* stencil: per block, tiles of tpb elements of `size` bytes; phases: load
 * tile -> barrier -> neighbour reads + store -> barrier, for `tiles` tiles.
 * With 1-byte elements (the bytes pattern: 8-bit pixels) four lanes share
 * every word, and each word the kernel touches is split into byte cells
 * (ENGINES.md, "Bytes where a word is not enough"). */
static const uint32_t stencil_tiles = 16;

static int tile_stencil(synth *s, uint32_t launch, uint32_t block, uint32_t p, uint8_t size)
{
    uint32_t tile = p / 4, step = p % 4, warps = s->tpb / WR_WARP_SIZE;
    if (tile >= stencil_tiles)
        return 0;
    uint64_t elem0 = ((uint64_t)block * stencil_tiles + tile) * s->tpb;
    for (uint32_t w = 0; w < warps; w++) {
        uint64_t lane0 = elem0 + (uint64_t)w * WR_WARP_SIZE;
        uint64_t shared0 = (uint64_t)w * WR_WARP_SIZE * size;
        switch (step) {
        case 0:
            sized_access(s, launch, block, w, s->site_load, WR_FULL_MASK, WR_OP_LOAD,
                         WR_SPACE_GLOBAL, GLOBAL_IN + lane0 * size, size, size);
            sized_access(s, launch, block, w, s->site_shared_st, WR_FULL_MASK, WR_OP_STORE,
                         WR_SPACE_SHARED, shared0 + size, size, size);
            break;
        case 1:
        case 3:
            barrier_event(s, launch, block, w);
            break;
        case 2:
            sized_access(s, launch, block, w, s->site_shared_ld, WR_FULL_MASK, WR_OP_LOAD,
                         WR_SPACE_SHARED, shared0, size, size);
            sized_access(s, launch, block, w, s->site_shared_ld, WR_FULL_MASK, WR_OP_LOAD,
                         WR_SPACE_SHARED, shared0 + 2u * size, size, size);
            sized_access(s, launch, block, w, s->site_store, WR_FULL_MASK, WR_OP_STORE,
                         WR_SPACE_GLOBAL, GLOBAL_OUT + lane0 * size, size, size);
            break;
        }
    }
    return 1;
}

static int stencil_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    return tile_stencil(s, launch, block, p, 4);
}

static int bytes_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    return tile_stencil(s, launch, block, p, 1);
}

/* gather: each warp gathers 32 random elements of `in` and scatters to a
 * distinct slot of `out` (a bijection by construction: element index). */
static const uint32_t gather_rounds = 8;

static int gather_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    if (p >= gather_rounds)
        return 0;
    uint64_t lanes[WR_WARP_SIZE];
    uint32_t warps = s->tpb / WR_WARP_SIZE;
    uint64_t span = (uint64_t)s->blocks * s->tpb * gather_rounds;
    for (uint32_t w = 0; w < warps; w++) {
        for (unsigned l = 0; l < WR_WARP_SIZE; l++)
            lanes[l] = GLOBAL_IN + (next_random(s) % span) * 4;
        vector_event(s, launch, block, w, s->site_gather, WR_OP_LOAD, lanes);
        uint64_t slot = (((uint64_t)p * s->blocks + block) * warps + w) * WR_WARP_SIZE;
        for (unsigned l = 0; l < WR_WARP_SIZE; l++)   /* permuted within the warp */
            lanes[l] = GLOBAL_OUT + (slot + ((l * 7u + p) % WR_WARP_SIZE)) * 4;
        vector_event(s, launch, block, w, s->site_scatter, WR_OP_STORE, lanes);
    }
    return 1;
}

static const uint32_t atomic_rounds = 8;

static int atomics_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    if (p >= atomic_rounds)
        return 0;
    uint32_t warps = s->tpb / WR_WARP_SIZE;
    for (uint32_t w = 0; w < warps; w++) {
        uint64_t lane0 = (((uint64_t)block * atomic_rounds + p) * warps + w) * WR_WARP_SIZE;
        access_event(s, launch, block, w, s->site_load, WR_OP_LOAD, WR_SPACE_GLOBAL,
                     GLOBAL_IN + lane0 * 4, 4);
        uint64_t lanes[WR_WARP_SIZE];
        for (unsigned l = 0; l < WR_WARP_SIZE; l++)
            lanes[l] = GLOBAL_BINS + (next_random(s) % 256) * 4;
        wr_event ev = {.kind = WR_EV_ACCESS, .site = s->site_atomic};
        ev.u.access = (wr_access){.launch = launch, .block = block, .warp = w,
                                  .active_mask = WR_FULL_MASK, .op = WR_OP_ATOMIC_RMW,
                                  .atomic_op = WR_AOP_ADD, .scope = WR_SCOPE_DEVICE,
                                  .order = WR_ORDER_RELAXED, .space = WR_SPACE_GLOBAL,
                                  .size = 4, .addr_mode = WR_ADDR_VECTOR, .lane_addr = lanes};
        emit(s, &ev);
    }
    return 1;
}

/* locks: lane 0 of each warp takes the lock of a random bucket, reads and
 * writes the bucket's first word (lane 0 alone: one thread-level access
 * each, two per hold against four synchronizing events), and releases. */
static const uint32_t lock_rounds = 8;

static int locks_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    if (p >= lock_rounds)
        return 0;
    uint32_t warps = s->tpb / WR_WARP_SIZE;
    for (uint32_t w = 0; w < warps; w++) {
        uint64_t bucket = next_random(s) % 1024;
        uint64_t lock = GLOBAL_LOCKS + bucket * 4;
        atomic_event(s, launch, block, w, s->site_cas, WR_AOP_CAS, 1, 1, lock, WR_ORDER_RELAXED);
        fence_event(s, launch, block, w, 1);
        masked_access(s, launch, block, w, s->site_load, 1, WR_OP_LOAD, WR_SPACE_GLOBAL,
                      GLOBAL_OUT + bucket * 128, 0);
        masked_access(s, launch, block, w, s->site_store, 1, WR_OP_STORE, WR_SPACE_GLOBAL,
                      GLOBAL_OUT + bucket * 128, 0);
        fence_event(s, launch, block, w, 1);
        atomic_event(s, launch, block, w, s->site_exch, WR_AOP_EXCH, 1, 0, lock, WR_ORDER_RELAXED);
    }
    return 1;
}

static int small_block_phase(synth *s, uint32_t launch, uint32_t block, uint32_t p)
{
    if (p >= 2)
        return 0;
    uint64_t lane0 = (uint64_t)block * WR_WARP_SIZE;
    access_event(s, launch, block, 0, p ? s->site_store : s->site_load,
                 p ? WR_OP_STORE : WR_OP_LOAD, WR_SPACE_GLOBAL,
                 (p ? GLOBAL_OUT : GLOBAL_IN) + lane0 * 4, 4);
    return 1;
}

/* Unordered write/read pairs between block 0 and block 1 of a launch. */
static void inject_races(synth *s, uint32_t races)
{
    if (!races)
        return;
    uint32_t launch = launch_kernel(s, "racy_pairs", 2, WR_WARP_SIZE, 0);
    block_mark(s, WR_EV_BLOCK_ENTER, launch, 0);
    block_mark(s, WR_EV_BLOCK_ENTER, launch, 1);
    for (uint32_t i = 0; i < races; i++) {
        uint64_t addr = GLOBAL_RACY + (uint64_t)i * WR_WARP_SIZE * 4;
        masked_access(s, launch, 0, 0, s->site_race_w, 1, WR_OP_STORE, WR_SPACE_GLOBAL, addr, 0);
        masked_access(s, launch, 1, 0, s->site_race_r, 1, WR_OP_LOAD, WR_SPACE_GLOBAL, addr, 0);
    }
    block_mark(s, WR_EV_BLOCK_EXIT, launch, 0);
    block_mark(s, WR_EV_BLOCK_EXIT, launch, 1);
    end_kernel(s, launch);
}

static void run_pattern(synth *s, const char *pattern)
{
    struct { const char *name, *kernel; phase_fn fn; uint32_t tpb_override; } table[] = {
        {"stencil", "stencil_1d", stencil_phase, 0},
        {"gather", "graph_gather_scatter", gather_phase, 0},
        {"atomics", "histogram_atomics", atomics_phase, 0},
        {"locks", "bucket_locks", locks_phase, 0},
        {"blocks", "many_small_blocks", small_block_phase, WR_WARP_SIZE},
        {"bytes", "stencil_u8", bytes_phase, 0},
    };
    int mix = !strcmp(pattern, "mix");
    uint64_t total = s->budget;
    size_t n = sizeof(table) / sizeof(table[0]);
    for (size_t i = 0; i < n; i++) {
        if (!mix && strcmp(pattern, table[i].name))
            continue;
        /* mix: each pattern gets an equal share of the budget */
        s->budget = mix ? s->emitted + total / n : total;
        uint32_t tpb = table[i].tpb_override ? table[i].tpb_override : s->tpb;
        uint32_t saved_tpb = s->tpb;
        s->tpb = tpb;
        /* enough blocks to reach the budget; the grid stops early when it is spent */
        uint32_t blocks = table[i].tpb_override ? 1u << 20 : s->blocks;
        uint32_t shared_bytes = table[i].fn == stencil_phase ? tpb * 4
                                : table[i].fn == bytes_phase ? tpb + 4 : 0;
        uint32_t launch = launch_kernel(s, table[i].kernel, blocks, tpb, shared_bytes);
        while (s->emitted < s->budget) {
            uint64_t before = s->emitted;
            run_grid(s, launch, blocks, table[i].fn);
            if (s->emitted == before)
                break;
            if (s->emitted < s->budget) {   /* next launch of the same kernel */
                end_kernel(s, launch);
                launch = launch_kernel(s, table[i].kernel, blocks, tpb, 0);
            }
        }
        end_kernel(s, launch);
        s->tpb = saved_tpb;
        if (!mix)
            return;
    }
    if (!mix) {
        fprintf(stderr, "wr-synth: unknown pattern '%s' (stencil gather atomics locks blocks bytes mix)\n",
                pattern);
        exit(2);
    }
}

static uint64_t parse_count(const char *arg, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || errno || v < 0) {
        fprintf(stderr, "wr-synth: bad %s '%s'\n", what, arg);
        exit(2);
    }
    switch (*end) {
    case 'k': case 'K': v *= 1e3; end++; break;
    case 'm': case 'M': v *= 1e6; end++; break;
    case 'g': case 'G': v *= 1e9; end++; break;
    }
    if (*end) {
        fprintf(stderr, "wr-synth: bad %s '%s'\n", what, arg);
        exit(2);
    }
    return (uint64_t)v;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *pattern = "mix";
    synth s = {.budget = 10000000, .blocks = 1024, .tpb = 256, .rng = 88172645463325252ull};
    uint32_t races = 0;
    static const struct option longopts[] = {
        {"pattern", required_argument, 0, 'p'}, {"accesses", required_argument, 0, 'n'},
        {"blocks", required_argument, 0, 'b'}, {"threads-per-block", required_argument, 0, 't'},
        {"races", required_argument, 0, 'r'}, {"seed", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:p:n:b:t:r:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'p': pattern = optarg; break;
        case 'n': s.budget = parse_count(optarg, "access count"); break;
        case 'b': s.blocks = (uint32_t)parse_count(optarg, "block count"); break;
        case 't': s.tpb = (uint32_t)parse_count(optarg, "threads per block"); break;
        case 'r': races = (uint32_t)parse_count(optarg, "race count"); break;
        case 's': s.rng = parse_count(optarg, "seed") | 1; break;
        case 'h':
            printf("usage: wr-synth -o OUT.wrt [--pattern stencil|gather|atomics|locks|blocks|bytes|mix]\n"
                   "                [--accesses N] [--blocks B] [--threads-per-block T]\n"
                   "                [--races K] [--seed S]\n");
            return 0;
        default: return 2;
        }
    }
    if (!out || s.tpb == 0 || s.tpb % WR_WARP_SIZE || s.blocks == 0) {
        fprintf(stderr, "wr-synth: need -o OUT.wrt, --threads-per-block a multiple of 32, "
                        "--blocks >= 1 (see --help)\n");
        return 2;
    }
    wr_header hdr = {.producer = "wr-synth", .producer_version = "1", .device = "synthetic",
                     .sm_arch = 90, .warp_size = 32, .clock_khz = 1980000, .host = "synth",
                     .time_unix_ns = 0, .command = "wr-synth"};
    s.w = wr_writer_open(out, &hdr, NULL, &s.err);
    if (!s.w) {
        fprintf(stderr, "wr-synth: %s\n", s.err.msg);
        return 2;
    }
    s.site_load = wr_writer_site(s.w, 0x100, "synth.cu", 10, "load_input");
    s.site_store = wr_writer_site(s.w, 0x110, "synth.cu", 11, "store_output");
    s.site_shared_st = wr_writer_site(s.w, 0x120, "synth.cu", 20, "stage_tile");
    s.site_shared_ld = wr_writer_site(s.w, 0x130, "synth.cu", 21, "read_neighbours");
    s.site_barrier = wr_writer_site(s.w, 0x140, "synth.cu", 22, "stage_tile");
    s.site_atomic = wr_writer_site(s.w, 0x150, "synth.cu", 30, "histogram");
    s.site_cas = wr_writer_site(s.w, 0x160, "synth.cu", 40, "lock");
    s.site_fence = wr_writer_site(s.w, 0x170, "synth.cu", 41, "lock");
    s.site_exch = wr_writer_site(s.w, 0x180, "synth.cu", 42, "unlock");
    s.site_gather = wr_writer_site(s.w, 0x190, "synth.cu", 50, "gather");
    s.site_scatter = wr_writer_site(s.w, 0x1a0, "synth.cu", 51, "scatter");
    s.site_race_w = wr_writer_site(s.w, 0x1b0, "synth.cu", 60, "racy_pairs");
    s.site_race_r = wr_writer_site(s.w, 0x1c0, "synth.cu", 61, "racy_pairs");
    uint64_t span = (uint64_t)s.blocks * s.tpb * 64 * 4;
    wr_writer_alloc(s.w, GLOBAL_IN, span, WR_SPACE_GLOBAL, "in");
    wr_writer_alloc(s.w, GLOBAL_OUT, span, WR_SPACE_GLOBAL, "out");
    wr_writer_alloc(s.w, GLOBAL_BINS, 256 * 4, WR_SPACE_GLOBAL, "bins");
    wr_writer_alloc(s.w, GLOBAL_LOCKS, 1024 * 4, WR_SPACE_GLOBAL, "locks");
    wr_writer_alloc(s.w, GLOBAL_RACY, (uint64_t)(races + 1) * WR_WARP_SIZE * 4, WR_SPACE_GLOBAL,
                    "racy");
    for (uint32_t id = 1; id <= 5; id++) {
        wr_event ev = {.kind = WR_EV_ALLOC};
        ev.u.alloc.alloc = id;
        emit(&s, &ev);
    }
    run_pattern(&s, pattern);
    inject_races(&s, races);
    if (wr_writer_close(s.w, &s.err) != 0) {
        fprintf(stderr, "wr-synth: %s\n", s.err.msg);
        return 2;
    }
    printf("%s: %" PRIu64 " thread-level accesses, pattern %s, %u injected races\n", out,
           s.emitted, pattern, races);
    return 0;
}

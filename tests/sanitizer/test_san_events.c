/* Record-time completion (recorder/sanitizer/san_events.c) end to end on
 * the host: provisional records as the patches write them go through a
 * simulated ring and the unchanged drain; the finisher classifies them from
 * the committed disassembly, names their sites and infers fences. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "drain.h"
#include "ring_sim.h"
#include "san_events.h"
#include "sass_classify.h"

typedef struct site_rec {
    char file[256], func[128];
    uint32_t line;
    uint64_t pc;
} site_rec;

typedef struct out {
    wr_event ev[1024];
    uint64_t lane5[1024];        /* a VECTOR access's lane 5 address, as it came */
    size_t n;
    site_rec sites[64];
    uint32_t nsites;
} out;

static int out_event(void *ctx, const wr_event *e)
{
    out *o = ctx;
    cr_assert_lt(o->n, 1024);
    o->ev[o->n] = *e;
    o->lane5[o->n] = e->kind == WR_EV_ACCESS && e->u.access.addr_mode == WR_ADDR_VECTOR
                         ? e->u.access.lane_addr[5] : 0;
    o->ev[o->n].u.access.lane_addr = NULL;
    o->n++;
    return 0;
}
static int out_flush(void *ctx) { (void)ctx; return 0; }
static uint32_t out_site(void *ctx, const char *file, uint32_t line, const char *func, uint64_t pc)
{
    out *o = ctx;
    cr_assert_lt(o->nsites, 64);
    site_rec *s = &o->sites[o->nsites++];
    snprintf(s->file, sizeof s->file, "%s", file);
    snprintf(s->func, sizeof s->func, "%s", func);
    s->line = line;
    s->pc = pc;
    return o->nsites;
}

static wrs_module M, L, B;
static out O;
static wrs_finisher F;
static wrr_sim S;
static wrr_drain D;

#define PRODUCER 0x10000u
#define CONSUMER 0x20000u
#define INDIRECT 0x30000u
#define OPCODES 0x40000u
#define LOCK 0x50000u
#define SPLIT 0xa0000u       /* barriers_sm90.nvdisasm */
#define CLREL 0xb0000u
#define CLRELAXED 0xc0000u
#define BLOCK_THREADS 64u    /* the launch's block size */

static void parse_data(const char *name, wrs_module *m)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/%s", WRS_TEST_DATA, name);
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    static char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    memset(m, 0, sizeof *m);
    cr_assert_eq(wrs_parse(text, len, m, err, sizeof err), 0, "%s: %s", name, err);
}

/* The finisher between a simulated ring's drain and O, and a launch of
 * blocks of BLOCK_THREADS threads, in clusters of launch_cluster blocks
 * (0: a launch without clusters). */
static uint32_t launch_cluster;

static void start_stream(void)
{
    memset(&O, 0, sizeof O);
    wrr_sink down = {&O, out_event, out_flush, out_site, NULL, NULL, NULL};
    cr_assert_eq(wrs_finisher_init(&F, &down), 0);
    cr_assert_eq(wrr_sim_init(&S, 12, 0), 0);
    wrr_sink mid;
    wrs_finisher_sink(&F, &mid);
    wrr_drain_options o = {.read_mem = wrs_finisher_read_mem, .read_mem_ctx = &F};
    cr_assert_eq(wrr_drain_init(&D, &S.ring, &mid, &o), 0);
    wr_event l;
    memset(&l, 0, sizeof l);
    l.kind = WR_EV_KERNEL_LAUNCH;
    l.u.launch.launch = 1;
    l.u.launch.kernel = 1;
    l.u.launch.block_dim[0] = BLOCK_THREADS;
    l.u.launch.block_dim[1] = l.u.launch.block_dim[2] = 1;
    l.u.launch.cluster[0] = launch_cluster;
    wrr_drain_post(&D, &l);
}

static void add_range(uint64_t start, const wrs_module *m, const char *name)
{
    wrs_function *fn = (wrs_function *)wrs_find_function(m, name);
    cr_assert_not_null(fn, "%s", name);
    cr_assert_eq(wrs_finisher_add_range(&F, start, 0x1000, fn, m), 0);
}

static void setup(void)
{
    parse_data("litmus_sm90.nvdisasm", &M);
    parse_data("spinlock_sm90.nvdisasm", &L);
    parse_data("barriers_sm90.nvdisasm", &B);
    start_stream();
    add_range(PRODUCER, &M, "_Z11mp_producerPiS_");
    add_range(CONSUMER, &M, "_Z11mp_consumerPiS_");
    add_range(INDIRECT, &M, "_Z8indirectPi");
    add_range(OPCODES, &M, "_Z9opcodes_allPi");
    add_range(LOCK, &L, "_Z9lock_pathPiS_");
    add_range(SPLIT, &B, "_Z11split_blockPi");
    add_range(CLREL, &B, "_Z11cluster_relPi");
    add_range(CLRELAXED, &B, "_Z15cluster_relaxedPi");
}

static void setup_clustered(void)
{
    launch_cluster = 2;
    setup();
    launch_cluster = 0;
}

static void teardown(void)
{
    wrr_drain_destroy(&D);
    wrr_sim_free(&S);
    wrs_finisher_destroy(&F);
    wrs_module_free(&M);
    wrs_module_free(&L);
    wrs_module_free(&B);
}

/* A provisional access record as the patch writes it: op from the
 * callback's flags, provisional atomic fields, the PC as site; lane l at
 * lanes[l] (NULL: every lane at addr). */
static uint32_t access_mask = 0xffffffffu;
static unsigned access_tag;     /* the records' launch tag (ring_format.h, w2) */

static void access_lanes(uint32_t block, uint32_t warp, uint64_t pc, unsigned op, unsigned space,
                         uint64_t addr, const uint64_t *lanes)
{
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = block;
    d.warp = warp;
    d.active_mask = access_mask;
    d.op = (uint8_t)op;
    d.atomic_op = op == WR_OP_ATOMIC_RMW ? WR_AOP_ADD : WR_AOP_NONE;
    d.scope = op == WR_OP_ATOMIC_RMW ? WR_SCOPE_DEVICE : WR_SCOPE_NONE;
    d.order = op == WR_OP_ATOMIC_RMW ? WR_ORDER_RELAXED : WR_ORDER_WEAK;
    d.space = (uint8_t)space;
    d.size = 4;
    d.site_addr = pc;
    for (unsigned l = 0; l < 32; l++)
        d.lane_addr[l] = lanes ? lanes[l] : addr;
    uint64_t words[2 * WRR_MAX_SLOTS];
    wrr_encode_access(&d, words);
    words[2] |= (uint64_t)access_tag << 48;
    cr_assert_eq(wrr_sim_write(&S, words, (unsigned)__builtin_popcount(access_mask), 1000), 1);
    cr_assert_geq(wrr_drain_step(&D), 0, "%s", D.error);   /* the ring never fills */
}

static void access(uint32_t block, uint32_t warp, uint64_t pc, unsigned op, unsigned space,
                   uint64_t addr)
{
    access_lanes(block, warp, pc, op, space, addr, NULL);
}

/* An access of some lanes only, every one at addr. */
static void access_masked(uint32_t block, uint32_t warp, uint32_t mask, uint64_t pc, unsigned op,
                          unsigned space, uint64_t addr)
{
    access_mask = mask;
    access_lanes(block, warp, pc, op, space, addr, NULL);
    access_mask = 0xffffffffu;
}

static void finish(void)
{
    wrr_drain_post_close(&D, 1, WRR_END_UNKNOWN);
    wr_event e;
    memset(&e, 0, sizeof e);
    e.kind = WR_EV_KERNEL_END;
    e.u.kernel_end.launch = 1;
    wrr_drain_post(&D, &e);
    cr_assert_eq(wrr_drain_finish(&D), 0, "%s", D.error);
}

static const site_rec *site_of(const wr_event *e)
{
    cr_assert(e->site >= 1 && e->site <= O.nsites, "site %u", e->site);
    return &O.sites[e->site - 1];
}

Test(sanitizer_events, message_passing_producer, .init = setup, .fini = teardown)
{
    access(0, 0, PRODUCER + 0x70, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    access(0, 0, PRODUCER + 0xb0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);
    finish();
    cr_assert_eq(O.n, 5, "%zu events", O.n);
    cr_expect_eq(O.ev[0].kind, WR_EV_KERNEL_LAUNCH);
    const wr_event *st = &O.ev[1], *fe = &O.ev[2], *at = &O.ev[3];
    cr_expect_eq(st->kind, WR_EV_ACCESS);
    cr_expect_eq(st->u.access.op, WR_OP_STORE);
    cr_expect_eq(st->u.access.order, WR_ORDER_WEAK);
    cr_expect_eq(fe->kind, WR_EV_FENCE);
    cr_expect_eq(fe->u.fence.scope, WR_SCOPE_DEVICE);
    cr_expect_eq(fe->u.fence.order, WR_ORDER_SC);
    cr_expect_eq(fe->u.fence.launch, 1);
    cr_expect_eq(fe->u.fence.active_mask, 0xffffffffu);
    cr_expect_eq(at->u.access.op, WR_OP_ATOMIC_RMW);
    cr_expect_eq(at->u.access.atomic_op, WR_AOP_EXCH);
    cr_expect_eq(at->u.access.scope, WR_SCOPE_DEVICE);
    cr_expect_eq(O.ev[4].kind, WR_EV_KERNEL_END);
    /* sites: pc, file:line, function */
    const site_rec *s = site_of(st);
    cr_expect_eq(s->pc, PRODUCER + 0x70);
    cr_expect_eq(s->line, 13);
    cr_expect_str_eq(s->file, "/work/tests/gpu/litmus_mp.cu");
    /* the kernel as __func__ names it: demangled where the process has a
     * C++ runtime (the ASan builds load one), else as the binary has it */
    cr_expect_str_eq(s->func, wrs_display_name((wrs_function *)wrs_find_function(
                                  &M, "_Z11mp_producerPiS_")));
    cr_expect(!strcmp(s->func, "mp_producer") || !strcmp(s->func, "_Z11mp_producerPiS_"), "%s",
              s->func);
    cr_expect_eq(site_of(at)->line, 15);
    cr_expect_eq(F.st.fences_inferred, 1);
    cr_expect_eq(F.st.accesses_classified, 2);
    cr_expect_eq(F.st.accesses_unclassified, 0);
}

Test(sanitizer_events, consumer_spin_then_fence, .init = setup, .fini = teardown)
{
    access(1, 0, CONSUMER + 0x30, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1004);
    access(1, 0, CONSUMER + 0x30, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1004);
    access(1, 0, CONSUMER + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);
    access(1, 0, CONSUMER + 0x80, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1008);
    /* another warp interleaved: its own history */
    access(1, 1, CONSUMER + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);
    finish();
    unsigned kinds[16], n = 0;
    for (size_t i = 0; i < O.n && n < 16; i++)
        kinds[n++] = O.ev[i].kind;
    cr_assert_eq(n, 8, "%u events", n);
    const unsigned want[] = {WR_EV_KERNEL_LAUNCH, WR_EV_ACCESS, WR_EV_ACCESS, WR_EV_FENCE,
                             WR_EV_ACCESS, WR_EV_ACCESS, WR_EV_ACCESS, WR_EV_KERNEL_END};
    for (unsigned i = 0; i < n; i++)
        cr_expect_eq(kinds[i], want[i], "event %u: kind %u", i, kinds[i]);
    cr_expect_eq(O.ev[1].u.access.order, WR_ORDER_RELAXED);   /* volatile spin load */
    cr_expect_eq(O.ev[3].u.fence.block, 1);
    cr_expect_eq(O.ev[3].u.fence.warp, 0);
    cr_expect_eq(F.st.fences_inferred, 1);
    cr_expect_eq(F.st.fence_queries, 3);
}

Test(sanitizer_events, indirect_is_counted_not_guessed, .init = setup, .fini = teardown)
{
    access(0, 0, INDIRECT + 0x0, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);
    access(0, 0, INDIRECT + 0x30, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    finish();
    cr_expect_eq(O.n, 4);
    for (size_t i = 0; i < O.n; i++)
        cr_expect_neq(O.ev[i].kind, WR_EV_FENCE);
    cr_expect_eq(F.st.fence_unknown, 1);
    cr_expect_eq(F.st.fences_inferred, 0);
}

Test(sanitizer_events, cas_and_unclassified, .init = setup, .fini = teardown)
{
    access(2, 0, OPCODES + 0x0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x2000);   /* CAS */
    access(2, 0, OPCODES + 0x10, WR_OP_ATOMIC_RMW, WR_SPACE_SHARED, 0x20);    /* ATOMS.CAS */
    access(2, 0, PRODUCER + 0x0, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x2000);         /* LDC: not memory */
    access(2, 0, 0x90000, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x2000);                /* unknown PC */
    access(2, 0, OPCODES + 0x30, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x2000);  /* LDG but RMW */
    finish();
    cr_assert_eq(O.n, 7);
    const wr_access *cas = &O.ev[1].u.access;
    cr_expect_eq(cas->atomic_op, WR_AOP_CAS);
    cr_expect_eq(cas->cas_success, 0xffffffffu);
    cr_expect_eq(O.ev[2].u.access.scope, WR_SCOPE_BLOCK);
    cr_expect_eq(F.st.cas_unknown, 2);
    cr_expect_eq(F.st.accesses_classified, 2);
    cr_expect_eq(F.st.accesses_unclassified, 3);
    /* an unknown PC still gets a site with its pc */
    const site_rec *s = site_of(&O.ev[4]);
    cr_expect_eq(s->pc, 0x90000);
    cr_expect_str_eq(s->func, "");
    /* the unclassified RMW keeps the callback's provisional fields */
    cr_expect_eq(O.ev[5].u.access.op, WR_OP_ATOMIC_RMW);
    cr_expect_eq(O.ev[5].u.access.atomic_op, WR_AOP_ADD);
}

Test(sanitizer_events, read_mem_strings)
{
    wrs_finisher f;
    out o;
    memset(&o, 0, sizeof o);
    wrr_sink down = {&o, out_event, out_flush, out_site, NULL, NULL, NULL};
    cr_assert_eq(wrs_finisher_init(&f, &down), 0);
    unsigned char raw[24];
    cr_expect_eq(wrs_finisher_read_mem(&f, 0x1234, raw, 16), -1);
    cr_expect_eq(wrs_finisher_read_mem(&f, 0x1234, raw, 24), 24);
    uint32_t magic;
    memcpy(&magic, raw, 4);
    cr_expect_eq(magic, WRR_SITE_MAGIC);
    cr_expect_eq(wrs_finisher_read_mem(&f, WRS_STR_BASE, raw, 4), -1);   /* no strings yet */
    wrs_finisher_destroy(&f);
}

/* ---- atomic reads go out at their warp's next record -------------------- */

/* The kinds and (for accesses) PCs of what came out, as "block.warp@pc" /
 * "F" / "L" / "E" tokens, barriers as their mode's letter and
 * block.warp, for order checks. */
static const char *trail(void)
{
    static char buf[4096];
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < O.n && n + 32 < sizeof buf; i++) {
        const wr_event *e = &O.ev[i];
        if (e->kind == WR_EV_ACCESS)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%u.%u@%llx", n ? " " : "",
                                  e->u.access.block, e->u.access.warp,
                                  (unsigned long long)(site_of(e)->pc & 0xfff));
        else if (e->kind == WR_EV_BARRIER)   /* S, A, R (relaxed arrive), W + block.warp */
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%c%u.%u", n ? " " : "",
                                  "SARW?"[e->u.barrier.mode < 4 ? e->u.barrier.mode : 4],
                                  e->u.barrier.block, e->u.barrier.warp);
        else
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? " " : "",
                                  e->kind == WR_EV_FENCE ? "F" : e->kind == WR_EV_KERNEL_LAUNCH ? "L"
                                  : e->kind == WR_EV_KERNEL_END ? "E" : "?");
    }
    return buf;
}

/* The API gives no CAS result; a spin lock's retry tells it: the lanes
 * that run the same CAS on the same word again failed, the others won.  A
 * CAS followed by anything else keeps every lane successful (counted). */
Test(sanitizer_events, cas_outcome_from_the_warps_retry, .init = setup, .fini = teardown)
{
    access(0, 1, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);      /* all fail */
    access(0, 1, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);      /* lane 0 wins */
    access_masked(0, 1, 0xfffffffeu, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);
    access_masked(0, 1, 0xfffffffeu, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x2004);
    access(0, 1, LOCK + 0x60, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);
    finish();
    uint32_t want[] = {0, 0x1u, 0xfffffffeu, 0xfffffffeu}, n = 0;
    for (size_t k = 0; k < O.n; k++)
        if (O.ev[k].kind == WR_EV_ACCESS && O.ev[k].u.access.atomic_op == WR_AOP_CAS) {
            cr_assert_lt(n, 4);
            cr_expect_eq(O.ev[k].u.access.cas_success, want[n], "CAS %u: %#x", n,
                         O.ev[k].u.access.cas_success);
            n++;
        }
    cr_expect_eq(n, 4);
    cr_expect_eq(F.st.cas_retries_seen, 2);
    cr_expect_eq(F.st.cas_unknown, 2, "another word, then a load: assumed successful");
}

/* Warp 1's CAS is reserved while warp 0 holds the lock, warp 0 unlocks,
 * and the CAS then succeeds: the unlock must come before the CAS in the
 * trace, as the device-API path (which records acquires after they ran)
 * writes it; the ring order put it after. */
Test(sanitizer_events, lock_handoff_cas_goes_after_the_unlock_it_read, .init = setup,
     .fini = teardown)
{
    access(0, 0, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);   /* A: CAS */
    access(0, 0, LOCK + 0x60, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);         /* A: critical */
    access(0, 0, LOCK + 0x80, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    access(0, 1, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);   /* B: CAS, early */
    access(0, 0, LOCK + 0xa0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);   /* A: unlock */
    access(0, 1, LOCK + 0x60, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);         /* B: critical */
    access(0, 1, LOCK + 0x80, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    finish();
    cr_expect_str_eq(trail(), "L 0.0@20 F 0.0@60 0.0@80 F 0.0@a0 0.1@20 F 0.1@60 0.1@80 E");
    cr_expect_eq(O.ev[6].u.access.atomic_op, WR_AOP_EXCH);
    cr_expect_eq(O.ev[7].u.access.atomic_op, WR_AOP_CAS);
    cr_expect_eq(F.st.reads_held, 3);
    cr_expect_eq(F.st.held_flushed_early, 1);   /* A's unlock, taken out before B's CAS */
    cr_expect_eq(F.st.events_out, O.n);
}

/* An acquire load of a flag reserved before the release that sets it. */
Test(sanitizer_events, acquire_load_goes_after_the_release_it_read, .init = setup,
     .fini = teardown)
{
    access(0, 1, LOCK + 0xb0, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1008);     /* B: ld.acquire flag */
    access(0, 0, PRODUCER + 0x70, WR_OP_STORE, WR_SPACE_GLOBAL, 0x100c);
    access(0, 0, PRODUCER + 0xb0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1008);   /* A: release */
    access(0, 1, LOCK + 0xf0, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x100c);     /* B: the data */
    finish();
    cr_expect_str_eq(trail(), "L 0.0@70 F 0.0@b0 0.1@b0 0.1@f0 E");
    cr_expect_eq(O.ev[4].u.access.op, WR_OP_ATOMIC_LOAD);
    cr_expect_eq(O.ev[4].u.access.order, WR_ORDER_ACQUIRE);
}

/* A held write goes out early only for an atomic that shares a word. */
Test(sanitizer_events, held_write_goes_early_only_for_an_overlapping_atomic, .init = setup,
     .fini = teardown)
{
    access(0, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x2000);  /* A: add */
    access(0, 1, OPCODES + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x3000);   /* B: red, apart */
    access(0, 1, OPCODES + 0x80, WR_OP_STORE, WR_SPACE_GLOBAL, 0x2000);        /* B: plain */
    access(0, 2, OPCODES + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x3004);        /* C: atomic st, apart */
    access(0, 0, OPCODES + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x4000);         /* A moves on */
    cr_expect_eq(F.st.held_flushed_early, 0);
    access(1, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x2000);  /* D: add */
    access(1, 1, OPCODES + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x2000);        /* E: atomic st */
    finish();
    cr_expect_str_eq(trail(),
                     "L 0.1@20 0.1@80 0.2@60 0.0@1b0 0.0@70 1.0@1b0 1.1@60 E");
    cr_expect_eq(F.st.held_flushed_early, 1);   /* D's add, before E's store to its word */
}

/* Lanes of a scatter: one shared word is an overlap; shared memory of
 * another block is not. */
Test(sanitizer_events, overlap_by_any_lane_and_per_block_shared, .init = setup, .fini = teardown)
{
    uint64_t lanes[32];
    for (unsigned l = 0; l < 32; l++)
        lanes[l] = 0x8000 + 64 * (uint64_t)l;
    access_lanes(0, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0, lanes);
    access(0, 0, OPCODES + 0x1c0, WR_OP_ATOMIC_RMW, WR_SPACE_SHARED, 0x20);   /* A: ATOMS.EXCH */
    access(1, 0, OPCODES + 0x10, WR_OP_ATOMIC_RMW, WR_SPACE_SHARED, 0x20);    /* other block */
    access(1, 0, OPCODES + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x4000);
    cr_expect_eq(F.st.held_flushed_early, 0);
    access(0, 1, OPCODES + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x8000 + 64 * 17);
    cr_expect_eq(F.st.held_flushed_early, 0);   /* A's scatter already went out at its next */
    access_lanes(0, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0, lanes);
    access(0, 1, OPCODES + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x8000 + 64 * 17 + 2);
    cr_expect_eq(F.st.held_flushed_early, 1);
    finish();
    cr_expect_str_eq(trail(), "L 0.0@1b0 1.0@10 1.0@70 0.1@60 0.0@1c0 0.0@1b0 0.1@60 E");
    /* the held scatter kept its own lanes */
    const wr_access *sc = &O.ev[6].u.access;
    cr_expect_eq(sc->addr_mode, WR_ADDR_STRIDED);
    cr_expect_eq(sc->base, 0x8000);
    cr_expect_eq(sc->stride, 64);
}

/* Distributed shared memory: block 1's atomic on block 0's word through
 * DSMEM overlaps block 0's held SHARED read-modify-write of that word, so
 * that goes out first when block 1's is let out; block 2's on the same
 * offset of block 3 overlaps nothing.  Generic instructions (ATOM, LD) take
 * the callback's space, DSMEM included, without a space mismatch. */
Test(sanitizer_events, dsmem_overlaps_the_owners_shared_word, .init = setup, .fini = teardown)
{
    access(0, 0, OPCODES + 0x1c0, WR_OP_ATOMIC_RMW, WR_SPACE_SHARED, 0x20);   /* ATOMS.EXCH */
    access(1, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_DSMEM, wr_dsmem_addr(0, 0x20));
    access(2, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_DSMEM, wr_dsmem_addr(3, 0x20));
    access(2, 0, OPCODES + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x4000);
    cr_expect_eq(F.st.held_flushed_early, 0, "block 3's word is another word");
    access(1, 0, OPCODES + 0x70, WR_OP_LOAD, WR_SPACE_DSMEM, wr_dsmem_addr(0, 0x40));
    cr_expect_eq(F.st.held_flushed_early, 1, "block 0's held exchange went out first");
    cr_expect_eq(F.st.space_mismatch, 0);
    finish();
    cr_expect_str_eq(trail(), "L 2.0@1b0 2.0@70 0.0@1c0 1.0@1b0 1.0@70 E");
    const wr_access *x = &O.ev[4].u.access;
    cr_expect_eq(x->space, WR_SPACE_DSMEM);
    cr_expect_eq(x->op, WR_OP_ATOMIC_RMW);
    cr_expect_eq(x->atomic_op, WR_AOP_ADD);
    cr_expect_eq(x->base, wr_dsmem_addr(0, 0x20));
    cr_expect_eq(O.ev[5].u.access.space, WR_SPACE_DSMEM);
    cr_expect_eq(O.ev[5].u.access.base, wr_dsmem_addr(0, 0x40));
    cr_expect_eq(O.ev[3].u.access.space, WR_SPACE_SHARED);
}

/* ATOMS names no scope (atomicAdd and atomicAdd_block on the own shared
 * memory are one instruction): block scope, but cluster scope where the
 * launch's clusters let other blocks reach the word through DSMEM, so
 * that a device-scope add there and the owner's are no scope race.  A
 * scope the instruction names stays. */
static void shared_atomic_scopes(uint8_t want_atoms)
{
    access(0, 0, OPCODES + 0x1c0, WR_OP_ATOMIC_RMW, WR_SPACE_SHARED, 0x20);   /* ATOMS.EXCH */
    access(1, 0, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_DSMEM, wr_dsmem_addr(0, 0x40));
    access(1, 0, OPCODES + 0xc0, WR_OP_ATOMIC_RMW, WR_SPACE_DSMEM, wr_dsmem_addr(0, 0x80));
    finish();
    unsigned n = 0;
    for (size_t i = 0; i < O.n; i++) {
        const wr_access *a = &O.ev[i].u.access;
        if (O.ev[i].kind != WR_EV_ACCESS)
            continue;
        uint8_t want = a->space == WR_SPACE_SHARED ? want_atoms
                       : a->base == wr_dsmem_addr(0, 0x40) ? WR_SCOPE_DEVICE   /* .GPU */
                                                            : WR_SCOPE_BLOCK;  /* .CTA */
        cr_expect_eq(a->scope, want, "access %zu: scope %u, expected %u", i, a->scope, want);
        n++;
    }
    cr_expect_eq(n, 3);
    cr_expect_eq(F.st.shared_atomics_cluster_scoped, want_atoms == WR_SCOPE_CLUSTER);
}

Test(sanitizer_events, shared_atomics_are_block_scoped_without_clusters, .init = setup,
     .fini = teardown)
{
    shared_atomic_scopes(WR_SCOPE_BLOCK);
}

Test(sanitizer_events, shared_atomics_are_cluster_scoped_in_clusters, .init = setup_clustered,
     .fini = teardown)
{
    shared_atomic_scopes(WR_SCOPE_CLUSTER);
}

/* Many warps hold at once (the pool and the word index grow); a block's
 * exit and the end of the stream let everything out, in arrival order. */
Test(sanitizer_events, many_held_reads_all_come_out_in_order, .init = setup, .fini = teardown)
{
    enum { WARPS = 700 };
    for (uint32_t w = 0; w < WARPS; w++) {
        uint64_t lanes[32];
        for (unsigned l = 0; l < 32; l++)
            lanes[l] = 0x100000 + 4096 * (uint64_t)w + 4 * (uint64_t)((l * 7) % 32);
        access_lanes(2, w, OPCODES + 0x1b0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0, lanes);
    }
    cr_expect_eq(O.n, 1);   /* only the launch: everything else is held */
    finish();
    cr_assert_eq(O.n, WARPS + 2);
    for (uint32_t w = 0; w < WARPS; w++) {
        const wr_access *a = &O.ev[1 + w].u.access;
        cr_expect_eq(a->warp, w);
        cr_expect_eq(a->addr_mode, WR_ADDR_VECTOR);
        cr_expect_eq(a->op, WR_OP_ATOMIC_RMW);
    }
    cr_expect_eq(F.st.reads_held, WARPS);
    cr_expect_eq(F.st.held_flushed_early, WARPS);
}

/* Random interleavings of plain and atomic accesses by six warps over four
 * words.  Whatever is held: (1) every access comes out once, each warp's
 * in its own order; (2) an atomic read that goes out just before its
 * warp's next record (a fence may sit between) comes after every
 * read-modify-write of another warp to one of its words that arrived
 * before that next record. */
Test(sanitizer_events, random_interleavings_keep_warp_order_and_writes_before_reads,
     .init = setup, .fini = teardown)
{
    static const struct { uint32_t pc; unsigned op; } kinds[] = {
        {0x70, WR_OP_LOAD},          {0x80, WR_OP_STORE},      {0x0, WR_OP_ATOMIC_RMW},
        {0x20, WR_OP_ATOMIC_RMW},    {0x1b0, WR_OP_ATOMIC_RMW}, {0x40, WR_OP_LOAD},
        {0x60, WR_OP_STORE}};
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int reordered = 0;   /* writes that arrived after the read they now precede */
    for (int round = 0; round < 200; round++) {
        teardown();
        setup();
        enum { N = 60 };
        uint32_t warp[N], pc[N];
        uint64_t addr[N];
        for (int i = 0; i < N; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            warp[i] = (uint32_t)(rng % 6);
            unsigned k = (unsigned)((rng >> 8) % 7);
            pc[i] = OPCODES + kinds[k].pc;
            addr[i] = 0x3000 + 4 * ((rng >> 16) % 4);
            access(warp[i] / 3, warp[i] % 3, pc[i], kinds[k].op, WR_SPACE_GLOBAL, addr[i]);
        }
        finish();
        /* output position of input i: the k-th access of a warp in the
         * output is its k-th in the input */
        int pos[N], next_in[N], seen[6] = {0};
        for (int i = 0; i < N; i++) {
            next_in[i] = N;
            for (int j = i + 1; j < N; j++)
                if (warp[j] == warp[i]) {
                    next_in[i] = j;
                    break;
                }
        }
        int nacc = 0;
        for (size_t o = 0; o < O.n; o++) {
            const wr_event *e = &O.ev[o];
            if (e->kind != WR_EV_ACCESS)
                continue;
            uint32_t w = e->u.access.block * 3 + e->u.access.warp;
            int k = 0, i;
            for (i = 0; i < N; i++)
                if (warp[i] == w && k++ == seen[w])
                    break;
            cr_assert_lt(i, N, "round %d: more accesses of warp %u than went in", round, w);
            cr_assert_eq(site_of(e)->pc, pc[i], "round %d: warp %u out of order", round, w);
            cr_assert_eq(e->u.access.base, addr[i]);
            seen[w]++;
            pos[i] = (int)o;
            nacc++;
        }
        cr_assert_eq(nacc, N, "round %d", round);
        for (int i = 0; i < N; i++) {
            const wr_access *x = &O.ev[pos[i]].u.access;
            if (!wr_op_is_atomic(x->op) || !wr_op_reads(x->op) || next_in[i] == N)
                continue;
            int succ = pos[next_in[i]], gap = succ - pos[i];
            if (gap != 1 && !(gap == 2 && O.ev[pos[i] + 1].kind == WR_EV_FENCE))
                continue;   /* let out early: not at its warp's next record */
            for (int j = 0; j < next_in[i]; j++) {
                const wr_access *y = &O.ev[pos[j]].u.access;
                if (warp[j] != warp[i] && addr[j] == addr[i] && y->op == WR_OP_ATOMIC_RMW) {
                    cr_assert_lt(pos[j], pos[i], "round %d: write %d after read %d", round, j, i);
                    reordered += j > i;
                }
            }
        }
    }
    cr_expect_gt(reordered, 20, "the case the holding is for came up %d times", reordered);
}

/* ---- barrier modes (format 1.3) from the disassembly --------------------- */

/* A barrier record as the patches write it (patches.cu): the barrier
 * callback's block SYNC with its id and count (0: the callback gave none),
 * a cluster arrive's ARRIVE with the cluster's threads, a cluster WAIT. */
static void barrier(uint32_t block, uint32_t warp, uint64_t pc, unsigned scope, unsigned mode,
                    uint32_t id, uint32_t expected)
{
    uint64_t words[2 * WRR_MAX_SLOTS];
    uint32_t aux = scope == WR_BAR_BLOCK ? WRR_BAR_AUX_BLOCK(id, expected) : expected;
    wrr_encode_sync(words, WRR_K_BARRIER, block, warp, 0xffffffffu, aux, (uint8_t)scope,
                    (uint8_t)mode, pc);
    cr_assert_eq(wrr_sim_write(&S, words, 32, 1000), 1);
    cr_assert_geq(wrr_drain_step(&D), 0, "%s", D.error);
}

static void block_barrier(uint32_t block, uint32_t warp, uint64_t pc, uint32_t id, uint32_t count)
{
    barrier(block, warp, pc, WR_BAR_BLOCK, WR_BARMODE_SYNC, id, count);
}

/* The i-th barrier event that came out; every one must be a record the
 * writer takes. */
static const wr_barrier *nth_barrier(unsigned i)
{
    for (size_t k = 0; k < O.n; k++) {
        if (O.ev[k].kind != WR_EV_BARRIER)
            continue;
        const wr_barrier *b = &O.ev[k].u.barrier;
        const char *bad = wr_barrier_mode_problem(b);
        cr_assert_null(bad, "barrier %zu: %s", k, bad);
        if (!i--)
            return b;
    }
    cr_assert_fail("fewer barriers than %u", i);
    return NULL;
}

/* bar.arrive 1, 64 (BAR.ARV) fires the barrier callback as bar.sync does:
 * the PC makes it an ARRIVE, with the callback's count and id. */
Test(sanitizer_events, block_arrive_from_bar_arv, .init = setup, .fini = teardown)
{
    access(0, 0, SPLIT + 0x10, WR_OP_STORE, WR_SPACE_SHARED, 0x0);
    block_barrier(0, 0, SPLIT + 0x20, 1, 64);          /* BAR.ARV 0x1, 0x40 */
    access(0, 0, SPLIT + 0x30, WR_OP_LOAD, WR_SPACE_SHARED, 0x4);
    block_barrier(0, 1, SPLIT + 0x40, 1, 64);          /* BAR.SYNC 0x1, 0x40 */
    block_barrier(0, 0, SPLIT + 0x50, 0, 0);           /* __syncthreads, no count */
    block_barrier(0, 1, SPLIT + 0x60, 0, 32);          /* BAR.RED.POPC */
    finish();
    cr_expect_str_eq(trail(), "L 0.0@10 A0.0 0.0@30 S0.1 S0.0 S0.1 E");
    const wr_barrier *arv = nth_barrier(0);
    cr_expect_eq(arv->mode, WR_BARMODE_ARRIVE);
    cr_expect_eq(arv->scope, WR_BAR_BLOCK);
    cr_expect_eq(arv->expected, 64);
    cr_expect_eq(arv->barrier_id, 1);
    cr_expect_eq(nth_barrier(1)->mode, WR_BARMODE_SYNC);
    cr_expect_eq(nth_barrier(1)->expected, 64);
    /* no count given: the block's size, as the patch used to put it */
    cr_expect_eq(nth_barrier(2)->mode, WR_BARMODE_SYNC);
    cr_expect_eq(nth_barrier(2)->expected, BLOCK_THREADS);
    cr_expect_eq(nth_barrier(3)->expected, 32);
    cr_expect_eq(F.st.barrier_mode_unknown, 0);
    cr_expect_eq(F.st.barrier_arrive_uncounted, 0);
    cr_expect_eq(F.st.events_out, O.n);
}

/* A BAR.ARV whose callback gave no count: a block ARRIVE without one is no
 * valid record, so it stays SYNC, and that is counted. */
Test(sanitizer_events, bar_arv_without_a_count_stays_sync, .init = setup, .fini = teardown)
{
    block_barrier(0, 0, SPLIT + 0x20, 1, 0);
    finish();
    const wr_barrier *b = nth_barrier(0);
    cr_expect_eq(b->mode, WR_BARMODE_SYNC);
    cr_expect_eq(b->expected, BLOCK_THREADS);
    cr_expect_eq(b->barrier_id, 1);
    cr_expect_eq(F.st.barrier_arrive_uncounted, 1);
    cr_expect_eq(F.st.barrier_mode_unknown, 0);
}

/* Where the PC does not say (no disassembly there, no barrier there, an
 * unknown BAR form, a cluster barrier's instruction) the callback's block
 * SYNC stays, counted once each. */
Test(sanitizer_events, unknown_barrier_pc_stays_sync_and_is_counted, .init = setup,
     .fini = teardown)
{
    block_barrier(0, 0, 0x90000, 1, 64);               /* no function there */
    block_barrier(0, 1, SPLIT + 0x30, 1, 64);          /* LDS */
    block_barrier(0, 2, SPLIT + 0x90, 0, 64);          /* BAR.SCAN */
    block_barrier(0, 3, CLREL + 0xb0, 0, 64);          /* UCGABAR_ARV */
    finish();
    for (unsigned i = 0; i < 4; i++) {
        cr_expect_eq(nth_barrier(i)->mode, WR_BARMODE_SYNC, "barrier %u", i);
        cr_expect_eq(nth_barrier(i)->scope, WR_BAR_BLOCK, "barrier %u", i);
        cr_expect_eq(nth_barrier(i)->expected, 64, "barrier %u", i);
    }
    cr_expect_eq(F.st.barrier_mode_unknown, 4);
    cr_expect_eq(F.st.barrier_arrive_uncounted, 0);
}

/* Cluster arrives: the release one (the MEMBAR before it also comes out
 * as a fence) and the relaxed one, told apart by the disassembly. */
Test(sanitizer_events, cluster_arrive_release_or_relaxed, .init = setup, .fini = teardown)
{
    access(0, 0, CLREL + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    barrier(0, 0, CLREL + 0xb0, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128);
    access(1, 0, CLRELAXED + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x2000);
    barrier(1, 0, CLRELAXED + 0x80, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128);
    finish();
    cr_expect_str_eq(trail(), "L 0.0@60 F A0.0 1.0@60 R1.0 E");
    cr_expect_eq(nth_barrier(0)->scope, WR_BAR_CLUSTER);
    cr_expect_eq(nth_barrier(0)->expected, 128);
    cr_expect_eq(nth_barrier(1)->mode, WR_BARMODE_ARRIVE_RELAXED);
    cr_expect_eq(nth_barrier(1)->scope, WR_BAR_CLUSTER);
    cr_expect_eq(F.st.barrier_mode_unknown, 0);
}

/* The wait callback runs before the wait: block 0's wait is reserved
 * before block 1 arrives.  It goes out at block 0's next record, after
 * every arrival of the phase, as the device API records a wait after it
 * returned. */
Test(sanitizer_events, cluster_wait_goes_out_at_the_warps_next_record, .init = setup,
     .fini = teardown)
{
    access(0, 0, CLREL + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    barrier(0, 0, CLREL + 0xb0, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128);
    barrier(0, 0, CLREL + 0xf0, WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0, 0);
    access(1, 0, CLREL + 0x60, WR_OP_STORE, WR_SPACE_GLOBAL, 0x2000);
    barrier(1, 0, CLREL + 0xb0, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128);
    access(0, 0, CLREL + 0x140, WR_OP_STORE, WR_SPACE_GLOBAL, 0x2004);
    barrier(1, 0, CLREL + 0xf0, WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0, 0);
    cr_expect_eq(F.st.held_flushed_early, 0);
    finish();   /* block 1's wait: let out by the end */
    cr_expect_str_eq(trail(), "L 0.0@60 F A0.0 1.0@60 F A1.0 W0.0 0.0@140 W1.0 E");
    cr_expect_eq(nth_barrier(2)->mode, WR_BARMODE_WAIT);
    cr_expect_eq(nth_barrier(2)->expected, 0);
    cr_expect_eq(F.st.waits_held, 2);
    cr_expect_eq(F.st.reads_held, 0);
    cr_expect_eq(F.st.held_flushed_early, 1);
    cr_expect_eq(F.st.barrier_mode_unknown, 0);
}

/* A cluster callback whose PC does not say: its own mode stays (the
 * arrive as a release: what cluster.sync() does), counted. */
Test(sanitizer_events, cluster_barrier_at_an_unknown_pc_keeps_its_mode, .init = setup,
     .fini = teardown)
{
    barrier(0, 0, 0x90000, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128);
    barrier(0, 1, CLREL + 0xb0, WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0, 0);   /* at an arrive */
    barrier(0, 2, SPLIT + 0x20, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 128); /* at BAR.ARV */
    finish();
    cr_expect_str_eq(trail(), "L A0.0 A0.2 W0.1 E");   /* the wait held to the end */
    cr_expect_eq(nth_barrier(1)->scope, WR_BAR_CLUSTER);
    cr_expect_eq(nth_barrier(2)->expected, 0);
    cr_expect_eq(F.st.barrier_mode_unknown, 3);
}

/* Waits and atomic reads held together past the pool's first size: each
 * goes out at its warp's next record, the reads with their own lanes. */
Test(sanitizer_events, held_waits_and_reads_share_the_pool, .init = setup, .fini = teardown)
{
    enum { WARPS = 100 };
    uint64_t lanes[32];
    for (unsigned w = 0; w < WARPS; w++) {
        /* no stride (a vector record), and words of its own: nothing
         * overlaps, nothing goes out early */
        for (unsigned l = 0; l < 32; l++)
            lanes[l] = 0x1000000 * (uint64_t)(w + 1) + 4096 * (uint64_t)l * l;
        if (w % 2)
            access_lanes(0, w, LOCK + 0x20, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0, lanes);
        else
            barrier(0, w, CLREL + 0xf0, WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0, 0);
    }
    cr_expect_eq(F.st.waits_held, WARPS / 2);
    cr_expect_eq(F.st.reads_held, WARPS / 2);
    for (unsigned w = 0; w < WARPS; w++)
        access(0, w, CLREL + 0x140, WR_OP_STORE, WR_SPACE_GLOBAL, 0x100000 + 4 * w);
    cr_expect_eq(F.st.held_flushed_early, 0);
    finish();
    cr_assert_eq(O.n, 2 + 2 * WARPS);
    for (unsigned w = 0; w < WARPS; w++) {
        const wr_event *h = &O.ev[1 + 2 * w], *next = &O.ev[2 + 2 * w];
        cr_expect_eq(next->kind, WR_EV_ACCESS);
        if (w % 2) {
            cr_expect_eq(h->kind, WR_EV_ACCESS, "warp %u", w);
            cr_expect_eq(h->u.access.warp, w);
            cr_expect_eq(h->u.access.addr_mode, WR_ADDR_VECTOR, "warp %u", w);
            cr_expect_eq(O.lane5[1 + 2 * w], 0x1000000 * (uint64_t)(w + 1) + 4096 * 25,
                         "warp %u", w);
        } else {
            cr_expect_eq(h->kind, WR_EV_BARRIER, "warp %u", w);
            cr_expect_eq(h->u.barrier.warp, w);
            cr_expect_eq(h->u.barrier.mode, WR_BARMODE_WAIT);
        }
    }
}

/* ---- bar.arrive and grid.sync() on the H200's real disassembly ------------ */

#define PIPE_RACE 0x100000u   /* k_pipeline<false>: fill, bar.arrive, refill */
#define PIPE 0x110000u        /* k_pipeline<true> */
#define GRID 0x120000u        /* k_grid_phases<true>: two grid.sync() */
#define MBAR 0x130000u        /* k_mbarrier_pipeline<true>: FULL at 0x480, EMPTY at 0x488 */

static wrs_module G;

static void setup_real(void)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/h200_litmus_plain_sm90_gi.nvdisasm", WRS_TEST_DATA);
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = malloc((size_t)n);
    cr_assert_eq(fread(text, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    memset(&G, 0, sizeof G);
    cr_assert_eq(wrs_parse(text, (size_t)n, &G, err, sizeof err), 0, "%s", err);
    free(text);
    start_stream();
    add_range(PIPE_RACE, &G, "_Z10k_pipelineILb0EEvPi");
    add_range(PIPE, &G, "_Z10k_pipelineILb1EEvPi");
    add_range(GRID, &G, "_Z13k_grid_phasesILb1EEvPiS0_");
    add_range(MBAR, &G, "_Z19k_mbarrier_pipelineILb1EEvPi");
}

static wrs_function *fn_of(uint64_t start)
{
    const char *name = start == PIPE_RACE ? "_Z10k_pipelineILb0EEvPi"
                       : start == PIPE    ? "_Z10k_pipelineILb1EEvPi"
                                          : "_Z13k_grid_phasesILb1EEvPiS0_";
    return (wrs_function *)wrs_find_function(&G, name);
}

static void teardown_real(void)
{
    wrr_drain_destroy(&D);
    wrr_sim_free(&S);
    wrs_finisher_destroy(&F);
    wrs_module_free(&G);
}

/* The API fires no callback for BAR.ARV: the producer's arrive is emitted
 * right after its store, the record before it, with the instruction's id
 * and count; the consumer's records after its sync come after it. */
Test(sanitizer_events, bar_arrive_follows_the_record_before_it, .init = setup_real,
     .fini = teardown_real)
{
    access(0, 0, PIPE_RACE + 0x130, WR_OP_STORE, WR_SPACE_SHARED, 0x0);   /* STS; BAR.ARV 1, 64 */
    block_barrier(0, 1, PIPE_RACE + 0xa0, 1, 64);                         /* BAR.SYNC 1, 64 */
    access(0, 1, PIPE_RACE + 0xc0, WR_OP_LOAD, WR_SPACE_SHARED, 0x0);
    access(0, 0, PIPE_RACE + 0x150, WR_OP_STORE, WR_SPACE_SHARED, 0x0);   /* the refill */
    finish();
    cr_expect_str_eq(trail(), "L 0.0@130 A0.0 S0.1 0.1@c0 0.0@150 E");
    const wr_barrier *arv = nth_barrier(0);
    cr_expect_eq(arv->mode, WR_BARMODE_ARRIVE);
    cr_expect_eq(arv->scope, WR_BAR_BLOCK);
    cr_expect_eq(arv->barrier_id, 1);
    cr_expect_eq(arv->expected, 64);
    cr_expect_eq(arv->active_mask, 0xffffffffu);
    cr_expect_eq(F.st.arrives_inferred, 1);
    cr_expect_eq(wrs_arrives_uninferred(fn_of(PIPE_RACE)), 0);
}

/* Both sides of k_pipeline<true>: the producer's two arrivals on FULL and
 * the consumer's on EMPTY; a barrier callback for a BAR.ARV already emitted
 * (should the API report one) is the same arrival, not a second. */
Test(sanitizer_events, bar_arrives_on_both_sides_and_no_twice, .init = setup_real,
     .fini = teardown_real)
{
    access(0, 0, PIPE + 0x1a0, WR_OP_STORE, WR_SPACE_SHARED, 0x0);   /* STS; BAR.ARV 1 */
    block_barrier(0, 1, PIPE + 0xa0, 1, 64);                         /* SYNC 1 */
    access(0, 1, PIPE + 0xd0, WR_OP_LOAD, WR_SPACE_SHARED, 0x0);     /* LDS; BAR.ARV 2 */
    block_barrier(0, 0, PIPE + 0x1d0, 2, 64);                        /* SYNC 2 */
    access(0, 0, PIPE + 0x1e0, WR_OP_STORE, WR_SPACE_SHARED, 0x0);   /* STS; BAR.ARV 1 */
    block_barrier(0, 0, PIPE + 0x1f0, 1, 64);                        /* its callback, if any */
    block_barrier(0, 1, PIPE + 0x130, 1, 64);                        /* SYNC 1 */
    finish();
    cr_expect_str_eq(trail(), "L 0.0@1a0 A0.0 S0.1 0.1@d0 A0.1 S0.0 0.0@1e0 A0.0 S0.1 E");
    cr_expect_eq(nth_barrier(2)->barrier_id, 2);
    cr_expect_eq(F.st.arrives_inferred, 3);
    cr_expect_eq(F.st.arrives_reported_too, 1);
}

/* grid.sync() from its parts: the barrier before the block's arrival, the
 * master's fence, atomic and polling load go; the barrier after the wait
 * becomes the grid barrier; no fence is inferred across it. */
Test(sanitizer_events, grid_sync_becomes_one_grid_barrier, .init = setup_real,
     .fini = teardown_real)
{
    for (uint32_t b = 0; b < 2; b++) {
        access(b, 0, GRID + 0xc0, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000 + 4 * b);
        block_barrier(b, 0, GRID + 0x120, 0, 0);                 /* sync.h:71 */
        block_barrier(b, 1, GRID + 0x120, 0, 0);
        access(b, 0, GRID + 0x2e0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x9000);
        access(b, 0, GRID + 0x340, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x9000);
        block_barrier(b, 1, GRID + 0x3d0, 0, 0);                 /* sync.h:109 */
        block_barrier(b, 0, GRID + 0x3d0, 0, 0);
    }
    access(1, 1, GRID + 0x560, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x1000);
    finish();
    cr_expect_str_eq(trail(), "L 0.0@c0 S0.1 S0.0 1.0@c0 S1.1 S1.0 1.1@560 E");
    for (unsigned i = 0; i < 4; i++) {
        const wr_barrier *g = nth_barrier(i);
        cr_expect_eq(g->scope, WR_BAR_GRID, "barrier %u", i);
        cr_expect_eq(g->mode, WR_BARMODE_SYNC);
        cr_expect_eq(g->barrier_id, 0);
        cr_expect_eq(g->expected, 0, "every thread of the grid");
    }
    cr_expect_eq(F.st.grid_syncs, 4);
    cr_expect_eq(F.st.grid_sync_parts, 8);
    cr_expect_eq(F.st.fences_inferred, 0);
    cr_expect_eq(F.st.grid_sync_unknown, 0);
}

/* Outside grid.sync() nothing changes: k_pipeline's barriers stay block
 * barriers, and a function whose sync.h barriers are not on two lines
 * keeps its parts. */
Test(sanitizer_events, grid_roles_from_the_lines, .init = setup_real, .fini = teardown_real)
{
    wrs_function *g = fn_of(GRID);
    cr_expect_eq(wrs_grid_sync_role(g, 0x120), WRS_GRID_ARRIVE_BAR);
    cr_expect_eq(wrs_grid_sync_role(g, 0x3d0), WRS_GRID_WAIT_BAR);
    cr_expect_eq(wrs_grid_sync_role(g, 0x5c0), WRS_GRID_ARRIVE_BAR, "the second grid.sync()");
    cr_expect_eq(wrs_grid_sync_role(g, 0x2e0), WRS_GRID_PART);
    cr_expect_eq(wrs_grid_sync_role(g, 0x340), WRS_GRID_PART);
    cr_expect_eq(wrs_grid_sync_role(g, 0xc0), WRS_GRID_NONE);
    cr_expect_eq(wrs_grid_sync_role(g, 0x560), WRS_GRID_NONE);
    cr_expect_eq(wrs_grid_sync_role(fn_of(PIPE), 0xa0), WRS_GRID_NONE);
    /* one sync.h barrier line only: the roles are not known */
    g->grid_lines = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->insns[i].cls.kind == WRS_K_BARRIER && g->insns[i].grid_sync_line)
            g->insns[i].grid_sync_line = 71;
    cr_expect_eq(wrs_grid_sync_role(g, 0x3d0), WRS_GRID_UNKNOWN);
    cr_expect_eq(wrs_grid_sync_role(g, 0x2e0), WRS_GRID_PART);
}

/* An mbarrier record as the patches write it: an init with count 1 and a
 * successful wait with parity 0 (neither reaches the callbacks), an
 * arrive with the callback's count. */
static void mbar(uint32_t block, uint32_t warp, uint32_t mask, uint64_t pc, uint32_t offset,
                 uint32_t aux, uint8_t mode)
{
    uint64_t words[2 * WRR_MAX_SLOTS];
    wrr_encode_mbarrier(words, block, warp, mask, offset, aux, mode, pc);
    cr_assert_eq(wrr_sim_write(&S, words, (unsigned)__builtin_popcount(mask), 1000), 1);
    cr_assert_geq(wrr_drain_step(&D), 0, "%s", D.error);
}

static const wr_barrier *nth_mbarrier(unsigned i)
{
    for (size_t k = 0; k < O.n; k++)
        if (O.ev[k].kind == WR_EV_BARRIER && O.ev[k].u.barrier.scope == WR_BAR_MBARRIER && !i--)
            return &O.ev[k].u.barrier;
    cr_assert_fail("fewer mbarrier events");
    return NULL;
}

/* mbarrier_pipeline_norace as the H200 ran it: the inits' count comes from
 * their instructions (1), each wait's parity from the arrivals before it:
 * FULL's phase 0, EMPTY's phase 0, FULL's phase 1. */
Test(sanitizer_events, mbarrier_counts_from_the_code_and_parities_from_the_arrivals,
     .init = setup_real, .fini = teardown_real)
{
    const uint32_t FULL = 0x480, EMPTY = 0x488, ALL = 0xffffffffu;
    mbar(0, 0, ALL, MBAR + 0x100, FULL, 1, WR_BARMODE_INIT);
    mbar(0, 0, ALL, MBAR + 0x110, EMPTY, 1, WR_BARMODE_INIT);
    mbar(0, 1, ALL, MBAR + 0x1b0, EMPTY, 0, WR_BARMODE_WAIT);    /* no phase yet: parity 1 */
    access(0, 0, MBAR + 0x330, WR_OP_STORE, WR_SPACE_SHARED, 0x0);
    mbar(0, 0, 0x1, MBAR + 0x3d0, FULL, 1, WR_BARMODE_ARRIVE);
    mbar(0, 1, ALL, MBAR + 0x1b0, FULL, 0, WR_BARMODE_WAIT);
    access(0, 1, MBAR + 0x1d0, WR_OP_LOAD, WR_SPACE_SHARED, 0x0);
    mbar(0, 1, 0x1, MBAR + 0x250, EMPTY, 1, WR_BARMODE_ARRIVE);
    mbar(0, 0, ALL, MBAR + 0x3e0, EMPTY, 0, WR_BARMODE_WAIT);
    access(0, 0, MBAR + 0x400, WR_OP_STORE, WR_SPACE_SHARED, 0x0);
    mbar(0, 0, 0x1, MBAR + 0x450, FULL, 1, WR_BARMODE_ARRIVE);
    mbar(0, 1, ALL, MBAR + 0x270, FULL, 0, WR_BARMODE_WAIT);
    access(0, 1, MBAR + 0x290, WR_OP_LOAD, WR_SPACE_SHARED, 0x0);
    finish();
    static const struct { uint8_t mode; uint32_t id, expected; } want[] = {
        {WR_BARMODE_INIT, 0x480, 1}, {WR_BARMODE_INIT, 0x488, 1}, {WR_BARMODE_WAIT, 0x488, 1},
        {WR_BARMODE_ARRIVE, 0x480, 1}, {WR_BARMODE_WAIT, 0x480, 0},
        {WR_BARMODE_ARRIVE, 0x488, 1}, {WR_BARMODE_WAIT, 0x488, 0},
        {WR_BARMODE_ARRIVE, 0x480, 1}, {WR_BARMODE_WAIT, 0x480, 1}};
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
        const wr_barrier *b = nth_mbarrier(i);
        cr_expect_eq(b->mode, want[i].mode, "mbarrier event %u", i);
        cr_expect_eq(b->barrier_id, want[i].id, "mbarrier event %u", i);
        cr_expect_eq(b->expected, want[i].expected, "mbarrier event %u", i);
        cr_expect_null(wr_barrier_mode_problem(b), "mbarrier event %u", i);
    }
    cr_expect_eq(F.st.mbarrier_inits, 2);
    cr_expect_eq(F.st.mbarrier_count_unknown, 0);
    cr_expect_eq(F.st.mbarrier_untracked, 0);
}

/* An init whose count the code does not give (here: a PC that is no
 * SYNCS.EXCH.64) leaves its object untracked: its arrivals and waits go,
 * counted, rather than phases made up. */
Test(sanitizer_events, mbarrier_of_unknown_count_is_left_out, .init = setup_real,
     .fini = teardown_real)
{
    mbar(0, 0, 0xffffffffu, MBAR + 0x140, 0x480, 1, WR_BARMODE_INIT);
    mbar(0, 0, 0x1, MBAR + 0x3d0, 0x480, 1, WR_BARMODE_ARRIVE);
    mbar(0, 1, 0xffffffffu, MBAR + 0x1b0, 0x480, 0, WR_BARMODE_WAIT);
    mbar(0, 1, 0xffffffffu, MBAR + 0x1b0, 0x490, 0, WR_BARMODE_WAIT);   /* never initialised */
    finish();
    cr_expect_str_eq(trail(), "L E");
    cr_expect_eq(F.st.mbarrier_count_unknown, 1);
    cr_expect_eq(F.st.mbarrier_untracked, 3);
}

/* An init whose count is the block's size (cuda::barrier of block.size()):
 * the count comes from the launch's geometry (64 threads here), and the
 * wait after both warps' 64 arrivals is for phase 0. */
Test(sanitizer_events, mbarrier_count_from_the_launch, .init = setup_real, .fini = teardown_real)
{
    static const char text[] = ".text._Z6blocksv:\n"
                               "        /*0000*/                   ULDC UR4, c[0x0][0x0] ;\n"
                               "        /*0010*/                   UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
                               "        /*0020*/                   USHF.L.U32 UR5, UR4, 0xb, URZ ;\n"
                               "        /*0030*/                   USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
                               "        /*0040*/                   SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"
                               "        /*0050*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR6], RZ ;\n"
                               "        /*0060*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR6], R2 ;\n"
                               "        /*0070*/                   EXIT ;\n";
    wrs_module k;
    char err[256];
    memset(&k, 0, sizeof k);
    cr_assert_eq(wrs_parse(text, sizeof text - 1, &k, err, sizeof err), 0, "%s", err);
    add_range(0x140000, &k, "_Z6blocksv");
    const uint32_t ALL = 0xffffffffu;
    mbar(0, 0, ALL, 0x140040, 0x400, 1, WR_BARMODE_INIT);
    mbar(0, 0, ALL, 0x140050, 0x400, 1, WR_BARMODE_ARRIVE);
    mbar(0, 1, ALL, 0x140050, 0x400, 1, WR_BARMODE_ARRIVE);
    mbar(0, 1, ALL, 0x140060, 0x400, 0, WR_BARMODE_WAIT);
    finish();
    cr_expect_eq(nth_mbarrier(0)->expected, BLOCK_THREADS, "the init's count: blockDim.x");
    cr_expect_eq(nth_mbarrier(3)->mode, WR_BARMODE_WAIT);
    cr_expect_eq(nth_mbarrier(3)->expected, 0, "phase 0 completed at the 64th arrival");
    cr_expect_eq(F.st.mbarrier_inits, 1);
    wrs_module_free(&k);
}

/* A CUDA graph's two kernel nodes (launches 2 and 3, tags 1 and 2) run
 * together: the same block and warp of each interleave their records.  A
 * warp's previous PC is its own launch's, so the producer's fence between
 * its store and its flag's exchange is still found, and named with its
 * launch. */
Test(sanitizer_events, interleaved_launches_keep_their_own_warps, .init = setup, .fini = teardown)
{
    wr_event l;
    memset(&l, 0, sizeof l);
    l.kind = WR_EV_KERNEL_LAUNCH;
    l.u.launch.kernel = 1;
    l.u.launch.block_dim[0] = BLOCK_THREADS;
    l.u.launch.block_dim[1] = l.u.launch.block_dim[2] = 1;
    for (uint32_t tag = 1; tag <= 2; tag++) {
        l.u.launch.launch = 1 + tag;
        wrr_drain_post_tagged_launch(&D, &l, tag);
    }
    access_tag = 1;
    access(0, 0, PRODUCER + 0x70, WR_OP_STORE, WR_SPACE_GLOBAL, 0x1000);
    access_tag = 2;
    access(0, 0, CONSUMER + 0x70, WR_OP_LOAD, WR_SPACE_GLOBAL, 0x2000);
    access_tag = 1;
    access(0, 0, PRODUCER + 0xb0, WR_OP_ATOMIC_RMW, WR_SPACE_GLOBAL, 0x1004);
    access_tag = 0;
    wrr_drain_post_group_close(&D, WRR_END_UNKNOWN);
    finish();
    cr_expect_eq(F.st.fences_inferred, 1);
    size_t fences = 0;
    for (size_t i = 0; i < O.n; i++)
        if (O.ev[i].kind == WR_EV_FENCE) {
            fences++;
            cr_expect_eq(O.ev[i].u.fence.launch, 2, "the producer's launch");
            cr_expect_eq(O.ev[i + 1].kind, WR_EV_ACCESS);
            cr_expect_eq(O.ev[i + 1].u.access.launch, 2);
            cr_expect_eq(O.ev[i + 1].u.access.op, WR_OP_ATOMIC_RMW);
        }
    cr_expect_eq(fences, 1);
}

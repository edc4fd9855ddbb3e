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
    wr_event ev[256];
    size_t n;
    site_rec sites[64];
    uint32_t nsites;
} out;

static int out_event(void *ctx, const wr_event *e)
{
    out *o = ctx;
    cr_assert_lt(o->n, 256);
    o->ev[o->n] = *e;
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

static wrs_module M;
static out O;
static wrs_finisher F;
static wrr_sim S;
static wrr_drain D;

#define PRODUCER 0x10000u
#define CONSUMER 0x20000u
#define INDIRECT 0x30000u
#define OPCODES 0x40000u

static void setup(void)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/litmus_sm90.nvdisasm", WRS_TEST_DATA);
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    static char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    memset(&M, 0, sizeof M);
    cr_assert_eq(wrs_parse(text, len, &M, err, sizeof err), 0, "%s", err);
    memset(&O, 0, sizeof O);
    wrr_sink down = {&O, out_event, out_flush, out_site};
    cr_assert_eq(wrs_finisher_init(&F, &down), 0);
    struct { uint64_t start; const char *name; } fns[] = {
        {PRODUCER, "_Z11mp_producerPiS_"}, {CONSUMER, "_Z11mp_consumerPiS_"},
        {INDIRECT, "_Z8indirectPi"}, {OPCODES, "_Z9opcodes_allPi"}};
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(wrs_finisher_add_range(&F, fns[i].start, 0x1000,
                                            (wrs_function *)wrs_find_function(&M, fns[i].name),
                                            &M), 0);
    cr_assert_eq(wrr_sim_init(&S, 10, 0), 0);
    wrr_sink mid;
    wrs_finisher_sink(&F, &mid);
    wrr_drain_options o = {.read_mem = wrs_finisher_read_mem, .read_mem_ctx = &F};
    cr_assert_eq(wrr_drain_init(&D, &S.ring, &mid, &o), 0);
    wr_event l;
    memset(&l, 0, sizeof l);
    l.kind = WR_EV_KERNEL_LAUNCH;
    l.u.launch.launch = 1;
    l.u.launch.kernel = 1;
    wrr_drain_post(&D, &l);
}

static void teardown(void)
{
    wrr_drain_destroy(&D);
    wrr_sim_free(&S);
    wrs_finisher_destroy(&F);
    wrs_module_free(&M);
}

/* A provisional access record as the patch writes it: op from the
 * callback's flags, provisional atomic fields, the PC as site. */
static void access(uint32_t block, uint32_t warp, uint64_t pc, unsigned op, unsigned space,
                   uint64_t addr)
{
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = block;
    d.warp = warp;
    d.active_mask = 0xffffffffu;
    d.op = (uint8_t)op;
    d.atomic_op = op == WR_OP_ATOMIC_RMW ? WR_AOP_ADD : WR_AOP_NONE;
    d.scope = op == WR_OP_ATOMIC_RMW ? WR_SCOPE_DEVICE : WR_SCOPE_NONE;
    d.order = op == WR_OP_ATOMIC_RMW ? WR_ORDER_RELAXED : WR_ORDER_WEAK;
    d.space = (uint8_t)space;
    d.size = 4;
    d.site_addr = pc;
    for (unsigned l = 0; l < 32; l++)
        d.lane_addr[l] = addr;
    uint64_t words[2 * WRR_MAX_SLOTS];
    wrr_encode_access(&d, words);
    cr_assert_eq(wrr_sim_write(&S, words, 32, 1000), 1);
}

static void finish(void)
{
    wrr_drain_post_close(&D, 1);
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
    cr_expect_str_eq(s->func, "_Z11mp_producerPiS_");
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
    wrr_sink down = {&o, out_event, out_flush, out_site};
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

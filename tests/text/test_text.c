/* The text form (formats/TEXT.md): parsing, errors, round trips. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "text_priv.h"
#include "warprace/trace.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/wrtextXXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(text, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
    static char buf[4][256];
    static int k;
    char *b = buf[k++ & 3];
    snprintf(b, 256, "%s/%s", dir, name);
    return b;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

/* Assembles text into name.wrt; asserts success. */
static const char *asm_ok(const char *name, const char *text)
{
    char tname[128];
    snprintf(tname, sizeof(tname), "%s.txt", name);
    const char *in = path_of(tname);
    write_text(in, text);
    snprintf(tname, sizeof(tname), "%s.wrt", name);
    const char *out = path_of(tname);
    wr_error err;
    int rc = wr_text_assemble(in, out, &err);
    cr_assert_eq(rc, 0, "assemble failed: %s", err.msg);
    return out;
}

static char *dump_str(const char *wrt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    wr_error err;
    int rc = wr_text_dump(wrt, f, &err);
    fclose(f);
    cr_assert_eq(rc, 0, "dump failed: %s", err.msg);
    return buf;
}

/* Reads every event (lane addresses copied into lanes[i]). */
typedef struct evs {
    wr_event ev[256];
    uint64_t lanes[256][32];
    size_t n;
} evs;

static void read_events(const char *wrt, evs *out)
{
    wr_error err;
    wr_reader *r = wr_reader_open(wrt, &err);
    cr_assert_not_null(r, "%s", err.msg);
    out->n = 0;
    wr_batch b;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++) {
            cr_assert_lt(out->n, 256);
            out->ev[out->n] = b.events[i];
            if (b.events[i].kind == WR_EV_ACCESS && b.events[i].u.access.addr_mode == WR_ADDR_VECTOR) {
                memcpy(out->lanes[out->n], b.events[i].u.access.lane_addr, sizeof(out->lanes[0]));
                out->ev[out->n].u.access.lane_addr = out->lanes[out->n];
            }
            out->n++;
        }
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    wr_reader_close(r);
}

/* A barrier record a test expects (launch numbers as the trace names them). */
typedef struct want_barrier {
    uint32_t launch, block, warp, mask, id, expected;
    uint8_t scope, mode;
} want_barrier;

/* Every event of e but launches and allocations is a barrier, and they are
 * want[0..n), in order. */
static void check_barriers(const evs *e, const want_barrier *want, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++) {
        const wr_event *ev = &e->ev[i];
        if (ev->kind == WR_EV_KERNEL_LAUNCH || ev->kind == WR_EV_ALLOC)
            continue;
        cr_assert_lt(k, n);
        const wr_barrier *b = &ev->u.barrier;
        cr_assert_eq(ev->kind, WR_EV_BARRIER, "event %zu", i);
        cr_assert_eq(b->mode, want[k].mode, "barrier %zu: mode %u", k, b->mode);
        cr_assert_eq(b->scope, want[k].scope, "barrier %zu: scope %u", k, b->scope);
        cr_assert_eq(b->launch, want[k].launch, "barrier %zu", k);
        cr_assert_eq(b->block, want[k].block, "barrier %zu", k);
        cr_assert_eq(b->warp, want[k].warp, "barrier %zu", k);
        cr_assert_eq(b->active_mask, want[k].mask, "barrier %zu: mask 0x%x", k, b->active_mask);
        cr_assert_eq(b->barrier_id, want[k].id, "barrier %zu: id 0x%x", k, b->barrier_id);
        cr_assert_eq(b->expected, want[k].expected, "barrier %zu: expected %u", k, b->expected);
        k++;
    }
    cr_assert_eq(k, n);
}

/* ---- parsing ------------------------------------------------------------- */

static const char *every_kind =
    "# every event kind\n"
    "producer \"litmus\" \"9.9\"\n"
    "device \"Test GPU\"   # trailing comment\n"
    "sm 90\n"
    "warpsize 32\n"
    "clock 1755000\n"
    "host \"h\\\"ost\"\n"
    "time -5\n"
    "command \"./a --x\\ty\"\n"
    "\n"
    "alloc data global 64\n"
    "alloc flag global 4 at 0x20000000\n"
    "def alloc %3 shared 128 name=\"tile s\"\n"
    "alloc %3\n"
    "launch L7 \"k<int>\" grid=2,3 block=64 cluster=2,1,1 shared=4096 stream=5 @k.cu:1:main\n"
    "ld b5 w1 data[3]\n"
    "st.volatile.8 L7 b0 w0 lane=3 data+0x10 @k.cu:10\n"
    "atom.cas.acquire.block b1 w0 lanes=0-1,4 {data[0], data[1] flag} cas=0x1 @k.cu:11:spin\n"
    "atom.add.shared.sc.system.2 b1 w1 mask=0xf0 %3[2..]\n"
    "ld.atomic.relaxed b0 w0 data stride=-4\n"
    "st.atomic.release.cluster.16 b0 w0 data[1]\n"
    "barrier b0 w1 mask=0xffff id=3 expected=48 @%1\n"
    "bar b0 w0\n"
    "warpsync b0 w0 mask=0x0000ffff\n"
    "fence.acq_rel.block b0 w0\n"
    "fence b0 w1\n"
    "block_enter b4\n"
    "block_exit L7 b4\n"
    "kernel_end\n"
    "event_record event=1 stream=2\n"
    "stream_wait stream=3 event=1\n"
    "event_sync event=1\n"
    "stream_sync stream=2\n"
    "device_sync\n"
    "copy.h2d dst=data\n"
    "copy.d2h src=data+8 bytes=8 stream=1 async\n"
    "copy.d2d dst=flag src=data bytes=4\n"
    "copy.memset dst=0x30000000 bytes=12\n"
    "lost count=9\n"
    "lost count=1 launch=7 block=1\n"
    "free data\n";

Test(text, every_kind_and_shorthand)
{
    const char *wrt = asm_ok("every", every_kind);
    wr_error err;
    wr_reader *r = wr_reader_open(wrt, &err);
    cr_assert_not_null(r);
    const wr_header *h = wr_reader_header(r);
    cr_assert_str_eq(h->producer, "litmus");
    cr_assert_str_eq(h->producer_version, "9.9");
    cr_assert_str_eq(h->device, "Test GPU");
    cr_assert_eq(h->sm_arch, 90);
    cr_assert_eq(h->clock_khz, 1755000);
    cr_assert_str_eq(h->host, "h\"ost");
    cr_assert_eq(h->time_unix_ns, -5);
    cr_assert_str_eq(h->command, "./a --x\ty");
    wr_reader_close(r);

    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    cr_assert_eq(e->n, 30);
    size_t i = 0;
    /* alloc data, alloc flag, alloc %3 */
    cr_assert_eq(e->ev[i].kind, WR_EV_ALLOC);
    cr_assert_eq(e->ev[i++].u.alloc.alloc, 1);
    cr_assert_eq(e->ev[i++].u.alloc.alloc, 2);
    cr_assert_eq(e->ev[i++].u.alloc.alloc, 3);
    const wr_event *ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_KERNEL_LAUNCH);
    cr_assert_eq(ev->u.launch.launch, 7);
    cr_assert_eq(ev->u.launch.kernel, 1);
    cr_assert_eq(ev->u.launch.grid[0], 2);
    cr_assert_eq(ev->u.launch.grid[1], 3);
    cr_assert_eq(ev->u.launch.grid[2], 1);
    cr_assert_eq(ev->u.launch.block_dim[0], 64);
    cr_assert_eq(ev->u.launch.cluster[0], 2);
    cr_assert_eq(ev->u.launch.shared_bytes, 4096);
    cr_assert_eq(ev->u.launch.stream, 5);
    cr_assert_eq(ev->site, 1);
    /* ld b5 w1 data[3]: defaults */
    ev = &e->ev[i++];
    const wr_access *a = &ev->u.access;
    cr_assert_eq(ev->kind, WR_EV_ACCESS);
    cr_assert_eq(a->launch, 7);
    cr_assert_eq(a->block, 5);
    cr_assert_eq(a->warp, 1);
    cr_assert_eq(a->active_mask, WR_FULL_MASK);
    cr_assert_eq(a->op, WR_OP_LOAD);
    cr_assert_eq(a->order, WR_ORDER_WEAK);
    cr_assert_eq(a->scope, WR_SCOPE_NONE);
    cr_assert_eq(a->space, WR_SPACE_GLOBAL);
    cr_assert_eq(a->size, 4);
    cr_assert_eq(a->addr_mode, WR_ADDR_UNIFORM);
    cr_assert_eq(a->base, WR_TEXT_GLOBAL_BASE + 12);
    cr_assert_eq(ev->site, 0);
    /* st.volatile.8 lane=3 data+0x10 */
    ev = &e->ev[i++];
    a = &ev->u.access;
    cr_assert_eq(a->op, WR_OP_STORE);
    cr_assert_eq(a->order, WR_ORDER_RELAXED);
    cr_assert_eq(a->size, 8);
    cr_assert_eq(a->active_mask, 0x8);
    cr_assert_eq(a->base, WR_TEXT_GLOBAL_BASE + 16);
    cr_assert_eq(ev->site, 2);
    /* CAS vector */
    ev = &e->ev[i++];
    a = &ev->u.access;
    cr_assert_eq(a->op, WR_OP_ATOMIC_RMW);
    cr_assert_eq(a->atomic_op, WR_AOP_CAS);
    cr_assert_eq(a->order, WR_ORDER_ACQUIRE);
    cr_assert_eq(a->scope, WR_SCOPE_BLOCK);
    cr_assert_eq(a->active_mask, 0x13);
    cr_assert_eq(a->cas_success, 0x1);
    cr_assert_eq(a->addr_mode, WR_ADDR_VECTOR);
    cr_assert_eq(a->lane_addr[0], WR_TEXT_GLOBAL_BASE);
    cr_assert_eq(a->lane_addr[1], WR_TEXT_GLOBAL_BASE + 4);
    cr_assert_eq(a->lane_addr[4], 0x20000000);
    cr_assert_eq(ev->site, 3);
    /* atom.add shared strided */
    ev = &e->ev[i++];
    a = &ev->u.access;
    cr_assert_eq(a->atomic_op, WR_AOP_ADD);
    cr_assert_eq(a->space, WR_SPACE_SHARED);
    cr_assert_eq(a->order, WR_ORDER_SC);
    cr_assert_eq(a->scope, WR_SCOPE_SYSTEM);
    cr_assert_eq(a->size, 2);
    cr_assert_eq(a->active_mask, 0xf0);
    cr_assert_eq(a->addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(a->base, 4);
    cr_assert_eq(a->stride, 2);
    cr_assert_eq(a->cas_success, 0);
    /* ld.atomic default order/scope, negative stride */
    ev = &e->ev[i++];
    a = &ev->u.access;
    cr_assert_eq(a->op, WR_OP_ATOMIC_LOAD);
    cr_assert_eq(a->order, WR_ORDER_RELAXED);
    cr_assert_eq(a->scope, WR_SCOPE_DEVICE);
    cr_assert_eq(a->stride, -4);
    ev = &e->ev[i++];
    a = &ev->u.access;
    cr_assert_eq(a->op, WR_OP_ATOMIC_STORE);
    cr_assert_eq(a->order, WR_ORDER_RELEASE);
    cr_assert_eq(a->scope, WR_SCOPE_CLUSTER);
    cr_assert_eq(a->size, 16);
    cr_assert_eq(a->base, WR_TEXT_GLOBAL_BASE + 16);
    /* barriers */
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_BARRIER);
    cr_assert_eq(ev->u.barrier.warp, 1);
    cr_assert_eq(ev->u.barrier.active_mask, 0xffff);
    cr_assert_eq(ev->u.barrier.barrier_id, 3);
    cr_assert_eq(ev->u.barrier.expected, 48);
    cr_assert_eq(ev->site, 1);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.barrier.barrier_id, 0);
    cr_assert_eq(ev->u.barrier.expected, 64);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_WARP_SYNC);
    cr_assert_eq(ev->u.warp_sync.mask, 0xffff);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_FENCE);
    cr_assert_eq(ev->u.fence.order, WR_ORDER_ACQ_REL);
    cr_assert_eq(ev->u.fence.scope, WR_SCOPE_BLOCK);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.fence.order, WR_ORDER_SC);
    cr_assert_eq(ev->u.fence.scope, WR_SCOPE_DEVICE);
    cr_assert_eq(ev->u.fence.warp, 1);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_BLOCK_ENTER);
    cr_assert_eq(ev->u.block.block, 4);
    cr_assert_eq(e->ev[i++].kind, WR_EV_BLOCK_EXIT);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_KERNEL_END);
    cr_assert_eq(ev->u.kernel_end.launch, 7);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_EVENT_RECORD);
    cr_assert_eq(ev->u.stream_event.event, 1);
    cr_assert_eq(ev->u.stream_event.stream, 2);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_STREAM_WAIT);
    cr_assert_eq(ev->u.stream_event.stream, 3);
    cr_assert_eq(e->ev[i++].kind, WR_EV_EVENT_SYNC);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_STREAM_SYNC);
    cr_assert_eq(ev->u.stream_sync.stream, 2);
    cr_assert_eq(e->ev[i++].kind, WR_EV_DEVICE_SYNC);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_HOST_COPY);
    cr_assert_eq(ev->u.copy.kind, WR_COPY_H2D);
    cr_assert_eq(ev->u.copy.dst, WR_TEXT_GLOBAL_BASE);
    cr_assert_eq(ev->u.copy.bytes, 64);
    cr_assert_eq(ev->u.copy.async, 0);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.copy.kind, WR_COPY_D2H);
    cr_assert_eq(ev->u.copy.src, WR_TEXT_GLOBAL_BASE + 8);
    cr_assert_eq(ev->u.copy.bytes, 8);
    cr_assert_eq(ev->u.copy.stream, 1);
    cr_assert_eq(ev->u.copy.async, 1);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.copy.kind, WR_COPY_D2D);
    cr_assert_eq(ev->u.copy.dst, 0x20000000);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.copy.kind, WR_COPY_MEMSET);
    cr_assert_eq(ev->u.copy.dst, 0x30000000);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_LOST);
    cr_assert_eq(ev->u.lost.count, 9);
    cr_assert_eq(ev->u.lost.launch, 0);
    cr_assert_eq(ev->u.lost.block, UINT32_MAX);
    ev = &e->ev[i++];
    cr_assert_eq(ev->u.lost.launch, 7);
    cr_assert_eq(ev->u.lost.block, 1);
    ev = &e->ev[i++];
    cr_assert_eq(ev->kind, WR_EV_FREE);
    cr_assert_eq(ev->u.alloc.alloc, 1);
    cr_assert_eq(i, e->n);
    free(e);

    /* the catalog */
    r = wr_reader_open(wrt, &err);
    wr_batch b;
    while (wr_reader_next(r, &b, &err) == 1)
        wr_batch_release(&b);
    const wr_catalog *c = wr_reader_catalog(r);
    cr_assert_eq(wr_catalog_kernel_count(c), 1);
    cr_assert_str_eq(wr_catalog_kernel(c, 1)->name, "k<int>");
    cr_assert_eq(wr_catalog_alloc_count(c), 3);
    cr_assert_str_eq(wr_catalog_alloc(c, 1)->name, "data");
    cr_assert_eq(wr_catalog_alloc(c, 2)->base, 0x20000000);
    cr_assert_str_eq(wr_catalog_alloc(c, 3)->name, "tile s");
    cr_assert_eq(wr_catalog_alloc(c, 3)->space, WR_SPACE_SHARED);
    cr_assert_eq(wr_catalog_alloc(c, 3)->base, 0);
    cr_assert_eq(wr_catalog_site_count(c), 3);
    cr_assert_str_eq(wr_catalog_site(c, 1)->file, "k.cu");
    cr_assert_str_eq(wr_catalog_site(c, 1)->function, "main");
    cr_assert_eq(wr_catalog_site(c, 2)->line, 10);
    cr_assert_str_eq(wr_catalog_site(c, 2)->function, "");
    cr_assert_str_eq(wr_catalog_site(c, 3)->function, "spin");
    wr_reader_close(r);
}

Test(text, site_reuse_and_module)
{
    const char *wrt = asm_ok("sites",
        "def site \"a.cu\" 5 \"f\" pc=0x40\n"
        "def kernel k\n"
        "def module \"m.cubin\" 3\n"
        "image 7f4500\n"
        "launch k grid=1 block=32\n"
        "ld b0 w0 0x100 @a.cu:5:f\n"       /* reuses %1 although its pc is not 0 */
        "ld b0 w0 0x100 @a.cu:5\n"         /* a new site (function differs) */
        "ld b0 w0 0x100 @%1\n");
    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    cr_assert_eq(e->n, 4);
    cr_assert_eq(e->ev[0].u.launch.kernel, 1);
    cr_assert_eq(e->ev[1].site, 1);
    cr_assert_eq(e->ev[2].site, 2);
    cr_assert_eq(e->ev[3].site, 1);
    free(e);
    char *d = dump_str(wrt);
    cr_assert(strstr(d, "def module %1 \"m.cubin\" 3\nimage 7f4500\n"), "%s", d);
    cr_assert(strstr(d, "def site %1 \"a.cu\" 5 \"f\" pc=0x40\n"), "%s", d);
    cr_assert(strstr(d, "ld.weak.global.4 L1 b0 w0 0x100 @a.cu:5\n"), "%s", d);
    free(d);
}

/* A module with an empty image has no image lines; asm once waited for
 * them ("module image incomplete (0 of 0 bytes)"), so dump's text of such
 * a trace did not assemble. */
Test(text, empty_module_round_trips)
{
    const char *wrt = asm_ok("emod", "def module \"m\" 0\n"
                                     "def kernel k\n"
                                     "launch k grid=1 block=32\n"
                                     "ld b0 w0 0x100\n");
    char *d = dump_str(wrt);
    cr_assert(strstr(d, "def module %1 \"m\" 0\n") && !strstr(d, "image"), "%s", d);
    free(d);
}

Test(text, dump_canonical_form)
{
    const char *wrt = asm_ok("canon",
        "alloc buf global 256\n"
        "alloc sh shared 128\n"
        "launch reduce grid=1 block=64\n"
        "ld b0 w1 buf[32..]\n"
        "ld.8.shared b0 w0 lanes=0-1 {sh[3] sh+0x40}\n"
        "st.2 b0 w0 lane=1 buf+3\n"
        "atom.cas b0 w0 lane=0 buf[0] cas=0\n"
        "copy.d2h src=buf\n");
    char *d = dump_str(wrt);
    const char *want =
        "producer \"warprace-asm\" \"0.1.0\"\n"
        "device \"\"\nsm 0\nwarpsize 32\nclock 0\nhost \"\"\ntime 0\ncommand \"\"\n"
        "def kernel %1 reduce\n"
        "def alloc buf global 256 at 0x10000000\n"
        "def alloc sh shared 128 at 0x0\n"
        "alloc buf\n"
        "alloc sh\n"
        "launch L1 reduce grid=1,1,1 block=64,1,1 cluster=1,1,1 shared=0 stream=0\n"
        "ld.weak.global.4 L1 b0 w1 buf[32] stride=4\n"
        "ld.weak.shared.8 L1 b0 w0 mask=0x3 {sh[3] sh[8]}\n"
        "st.weak.global.2 L1 b0 w0 mask=0x2 buf+0x3\n"
        "atom.cas.relaxed.device.global.4 L1 b0 w0 mask=0x1 buf[0] cas=0x0\n"
        "copy.d2h src=buf bytes=256 stream=0\n";
    cr_assert_str_eq(d, want);
    free(d);
}

/* Cluster and grid barriers: the threads they gather by default, aliases. */
static const char *scoped_barriers =
    "launch k grid=4,2 block=48 cluster=2,1,1\n"
    "barrier.cluster b0 w0\n"
    "bar.cluster b1 w1 lanes=0-15\n"
    "cluster_sync b2 w0 expected=0\n"
    "barrier.grid b3 w1 @g.cu:7\n"
    "bar.grid b7 w0 id=0 expected=5\n"
    "grid_sync L1 b0 w0\n"
    "barrier.block b0 w0 id=2\n"
    "bar.block b0 w1\n"
    "barrier b0 w0 expected=0\n"
    "launch L2 k grid=3 block=32\n"             /* no clusters: one block each */
    "barrier.cluster b2 w0\n"
    "launch L3 k grid=65536,65536 block=1024\n" /* 2^42 threads: saturated */
    "barrier.grid b0 w0\n"
    "barrier.cluster L3 b0 w0\n";

Test(text, cluster_and_grid_barriers)
{
    const char *wrt = asm_ok("scoped", scoped_barriers);
    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    static const want_barrier want[] = {
        {1, 0, 0, WR_FULL_MASK, 0, 96, WR_BAR_CLUSTER, WR_BARMODE_SYNC},    /* 48 threads x 2 blocks */
        {1, 1, 1, 0xffff, 0, 96, WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {1, 2, 0, WR_FULL_MASK, 0, 0, WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {1, 3, 1, WR_FULL_MASK, 0, 384, WR_BAR_GRID, WR_BARMODE_SYNC},      /* 48 threads x 8 blocks */
        {1, 7, 0, WR_FULL_MASK, 0, 5, WR_BAR_GRID, WR_BARMODE_SYNC},
        {1, 0, 0, WR_FULL_MASK, 0, 384, WR_BAR_GRID, WR_BARMODE_SYNC},
        {1, 0, 0, WR_FULL_MASK, 2, 48, WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {1, 0, 1, WR_FULL_MASK, 0, 48, WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {1, 0, 0, WR_FULL_MASK, 0, 0, WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {2, 2, 0, WR_FULL_MASK, 0, 32, WR_BAR_CLUSTER, WR_BARMODE_SYNC},
        {3, 0, 0, WR_FULL_MASK, 0, UINT32_MAX, WR_BAR_GRID, WR_BARMODE_SYNC},
        {3, 0, 0, WR_FULL_MASK, 0, 1024, WR_BAR_CLUSTER, WR_BARMODE_SYNC},
    };
    check_barriers(e, want, sizeof(want) / sizeof(want[0]));
    cr_assert_eq(e->ev[4].site, 1);
    free(e);
}

Test(text, dump_cluster_and_grid_barriers)
{
    const char *wrt = asm_ok("scopedump",
        "launch k grid=4 block=64 cluster=2\n"
        "barrier.cluster b0 w0\n"
        "bar.cluster b1 w1 lanes=0-3 expected=7\n"
        "grid_sync b3 w0\n"
        "barrier.grid b2 w1 lane=31 expected=0 @g.cu:3\n"
        "bar b0 w0\n"
        "barrier.block b0 w1 id=15 expected=33\n");
    char *d = dump_str(wrt);
    const char *want =
        "launch L1 k grid=4,1,1 block=64,1,1 cluster=2,1,1 shared=0 stream=0\n"
        "barrier.cluster L1 b0 w0 expected=128\n"
        "barrier.cluster L1 b1 w1 mask=0xf expected=7\n"
        "barrier.grid L1 b3 w0 expected=256\n"
        "barrier.grid L1 b2 w1 mask=0x80000000 expected=0 @g.cu:3\n"
        "barrier L1 b0 w0 id=0 expected=64\n"
        "barrier L1 b0 w1 id=15 expected=33\n";
    const char *at = strstr(d, "launch L1 ");
    cr_assert_not_null(at, "%s", d);
    cr_assert_str_eq(at, want);
    free(d);
}

/* Distributed shared memory: every address form behind its owner block.
 * Launch 1's clusters are 2x2 boxes of its 4x2 grid: blocks 0, 1, 4, 5 and
 * 2, 3, 6, 7; launch 3's pair blocks z = 0 and z = 1 of each (x, y). */
/* Split barriers (format 1.3): every directive and alias, the default
 * counts, a wait's none. */
static const char *split_barriers =
    "launch k grid=4,2 block=48 cluster=2,1,1\n"
    "bar.arrive b0 w0 id=1 expected=64\n"
    "barrier.arrive b0 w1 expected=32\n"
    "barrier.cta.arrive b1 w0 id=15 expected=48 @s.cu:3\n"
    "barrier.cluster.arrive b0 w0\n"
    "bar.cluster.arrive b1 w1 lanes=0-15 expected=5\n"
    "cluster_arrive b2 w0 expected=0\n"
    "barrier.cluster.arrive.relaxed b3 w0\n"
    "bar.cluster.arrive.relaxed b3 w1 lane=4\n"
    "cluster_arrive_relaxed b4 w0 expected=7\n"
    "barrier.cluster.wait b0 w0\n"
    "bar.cluster.wait b1 w1 lanes=0-15\n"
    "cluster_wait b2 w0\n"
    "barrier.grid.arrive b0 w0\n"
    "bar.grid.arrive b1 w0 expected=9\n"
    "barrier.grid.wait b0 w0\n"
    "bar.grid.wait b1 w0 @s.cu:9\n"
    "barrier b0 w0\n"                          /* a sync among them */
    "launch L2 k grid=3 block=32\n"             /* no clusters: one block each */
    "barrier.cluster.arrive b2 w0\n"
    "barrier.grid.arrive b1 w0\n"
    "launch L3 k grid=65536,65536 block=1024\n" /* 2^42 threads: saturated */
    "barrier.grid.arrive b0 w0\n"
    "barrier.cluster.arrive.relaxed L3 b0 w0\n";

Test(text, split_barriers)
{
    const char *wrt = asm_ok("split", split_barriers);
    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    enum { B = WR_BAR_BLOCK, C = WR_BAR_CLUSTER, G = WR_BAR_GRID };
    enum { SY = WR_BARMODE_SYNC, AR = WR_BARMODE_ARRIVE, RX = WR_BARMODE_ARRIVE_RELAXED,
           WT = WR_BARMODE_WAIT };
    static const want_barrier want[] = {
        {1, 0, 0, WR_FULL_MASK, 1, 64, B, AR},
        {1, 0, 1, WR_FULL_MASK, 0, 32, B, AR},
        {1, 1, 0, WR_FULL_MASK, 15, 48, B, AR},
        {1, 0, 0, WR_FULL_MASK, 0, 96, C, AR},      /* 48 threads x 2 blocks */
        {1, 1, 1, 0xffff, 0, 5, C, AR},
        {1, 2, 0, WR_FULL_MASK, 0, 0, C, AR},
        {1, 3, 0, WR_FULL_MASK, 0, 96, C, RX},
        {1, 3, 1, 0x10, 0, 96, C, RX},
        {1, 4, 0, WR_FULL_MASK, 0, 7, C, RX},
        {1, 0, 0, WR_FULL_MASK, 0, 0, C, WT},       /* a wait counts no thread */
        {1, 1, 1, 0xffff, 0, 0, C, WT},
        {1, 2, 0, WR_FULL_MASK, 0, 0, C, WT},
        {1, 0, 0, WR_FULL_MASK, 0, 384, G, AR},     /* 48 threads x 8 blocks */
        {1, 1, 0, WR_FULL_MASK, 0, 9, G, AR},
        {1, 0, 0, WR_FULL_MASK, 0, 0, G, WT},
        {1, 1, 0, WR_FULL_MASK, 0, 0, G, WT},
        {1, 0, 0, WR_FULL_MASK, 0, 48, B, SY},
        {2, 2, 0, WR_FULL_MASK, 0, 32, C, AR},
        {2, 1, 0, WR_FULL_MASK, 0, 96, G, AR},
        {3, 0, 0, WR_FULL_MASK, 0, UINT32_MAX, G, AR},
        {3, 0, 0, WR_FULL_MASK, 0, 1024, C, RX},
    };
    check_barriers(e, want, sizeof(want) / sizeof(want[0]));
    cr_assert_eq(e->ev[3].site, 1);
    cr_assert_eq(e->ev[16].site, 2);
    free(e);
}

Test(text, dump_split_barriers)
{
    /* each mode in its canonical spelling, whatever alias wrote it; a
     * block arrive always with id= and expected=, a wait with neither */
    const char *wrt = asm_ok("splitdump",
        "launch k grid=4 block=64 cluster=2\n"
        "barrier.cta.arrive b0 w0 expected=32\n"
        "barrier.arrive b0 w1 id=3 expected=64 @s.cu:2\n"
        "cluster_arrive b1 w0\n"
        "bar.cluster.arrive.relaxed b1 w1 lanes=0-3 expected=7\n"
        "cluster_wait b1 w0\n"
        "bar.cluster.wait b1 w1 lane=31\n"
        "bar.grid.arrive b2 w0 expected=0\n"
        "bar.grid.wait b2 w0 @s.cu:4\n"
        "bar b3 w0\n"
        "cluster_sync b3 w1\n");
    char *d = dump_str(wrt);
    const char *want =
        "launch L1 k grid=4,1,1 block=64,1,1 cluster=2,1,1 shared=0 stream=0\n"
        "bar.arrive L1 b0 w0 id=0 expected=32\n"
        "bar.arrive L1 b0 w1 id=3 expected=64 @s.cu:2\n"
        "barrier.cluster.arrive L1 b1 w0 expected=128\n"
        "barrier.cluster.arrive.relaxed L1 b1 w1 mask=0xf expected=7\n"
        "barrier.cluster.wait L1 b1 w0\n"
        "barrier.cluster.wait L1 b1 w1 mask=0x80000000\n"
        "barrier.grid.arrive L1 b2 w0 expected=0\n"
        "barrier.grid.wait L1 b2 w0 @s.cu:4\n"
        "barrier L1 b3 w0 id=0 expected=64\n"
        "barrier.cluster L1 b3 w1 expected=128\n";
    const char *at = strstr(d, "launch L1 ");
    cr_assert_not_null(at, "%s", d);
    cr_assert_str_eq(at, want);
    free(d);
}

/* mbarriers (format 1.3, scope 1): every directive and alias, every
 * address form (raw, LABEL[i] of 8-byte elements, LABEL+n), counts at
 * their edges, both parities. */
static const char *mbarriers_text =
    "alloc g global 64\n"
    "alloc bars shared 32\n"
    "alloc top shared 0x100 at 0xffff00\n"
    "launch k grid=2 block=64\n"
    "mbarrier.init b0 w0 lane=0 bars[0] count=64 @m.cu:3\n"
    "mbarrier.init b0 w0 lane=31 bars+8 count=1\n"
    "mbarrier.init b1 w1 lanes=0-1 top[31] count=1048575\n"   /* the last 8 bytes below 16 MiB */
    "mbarrier.arrive b0 w0 bars[0]\n"
    "mbarrier.arrive.release b0 w1 bars[0] count=1\n"
    "mbarrier.arrive.relaxed b0 w1 lanes=0-7 0x8\n"
    "mbarrier.arrive.relaxed b1 w0 0x10 count=1048575 @m.cu:5\n"
    "mbarrier.wait b0 w0 bars[0] parity=0\n"
    "mbarrier.try_wait b0 w1 bars[1] parity=1\n"
    "mbarrier.test_wait b1 w0 0x0 parity=1\n"
    "mbarrier.try_wait.parity b1 w1 top+0xf8 parity=0\n"
    "mbarrier.test_wait.parity b1 w1 mask=0xffff0000 0x18 parity=1\n";

Test(text, mbarriers)
{
    const char *wrt = asm_ok("mbar", mbarriers_text);
    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    enum { IN = WR_BARMODE_INIT, AR = WR_BARMODE_ARRIVE, RX = WR_BARMODE_ARRIVE_RELAXED,
           WT = WR_BARMODE_WAIT };
    enum { M = WR_BAR_MBARRIER };
    static const want_barrier want[] = {
        {1, 0, 0, 0x1, 0, 64, M, IN},
        {1, 0, 0, 0x80000000u, 8, 1, M, IN},
        {1, 1, 1, 0x3, 0xfffff8, WR_MBARRIER_COUNT_MAX, M, IN},
        {1, 0, 0, WR_FULL_MASK, 0, 0, M, AR},             /* no count=: one arrival */
        {1, 0, 1, WR_FULL_MASK, 0, 1, M, AR},
        {1, 0, 1, 0xff, 8, 0, M, RX},
        {1, 1, 0, WR_FULL_MASK, 0x10, WR_MBARRIER_COUNT_MAX, M, RX},
        {1, 0, 0, WR_FULL_MASK, 0, 0, M, WT},             /* expected: the parity */
        {1, 0, 1, WR_FULL_MASK, 8, 1, M, WT},
        {1, 1, 0, WR_FULL_MASK, 0, 1, M, WT},
        {1, 1, 1, WR_FULL_MASK, 0xfffff8, 0, M, WT},
        {1, 1, 1, 0xffff0000u, 0x18, 1, M, WT},
    };
    check_barriers(e, want, sizeof(want) / sizeof(want[0]));
    cr_assert_eq(e->ev[4].site, 1);   /* after 3 allocs and the launch */
    cr_assert_eq(e->ev[10].site, 2);
    free(e);
}

Test(text, dump_mbarriers)
{
    /* each mode in its canonical spelling, whatever alias wrote it; the
     * address symbolic in the newest shared allocation holding it, as a
     * shared access of 8 bytes writes it, else raw hex; count= on an
     * arrive only where the record has one */
    const char *wrt = asm_ok("mbardump",
        "alloc g global 64\n"
        "alloc bars shared 32 at 0x100\n"
        "alloc odd shared 32 at 0x204\n"
        "launch k grid=2 block=64\n"
        "mbarrier.init b0 w0 lane=0 0x108 count=2 @m.cu:2\n"
        "mbarrier.arrive.release b0 w0 bars[1]\n"
        "mbarrier.arrive b0 w1 bars[2] count=1\n"
        "mbarrier.arrive.relaxed b1 w0 lanes=0-3 0x208 count=9\n"
        "mbarrier.try_wait b0 w0 bars+8 parity=1\n"
        "mbarrier.test_wait.parity b0 w1 0x200 parity=0 @m.cu:4\n"
        "mbarrier.try_wait.parity b1 w1 0x10 parity=0\n");
    char *d = dump_str(wrt);
    const char *want =
        "launch L1 k grid=2,1,1 block=64,1,1 cluster=1,1,1 shared=0 stream=0\n"
        "mbarrier.init L1 b0 w0 mask=0x1 bars[1] count=2 @m.cu:2\n"
        "mbarrier.arrive L1 b0 w0 bars[1]\n"
        "mbarrier.arrive L1 b0 w1 bars[2] count=1\n"
        "mbarrier.arrive.relaxed L1 b1 w0 mask=0xf odd+0x4 count=9\n"
        "mbarrier.wait L1 b0 w0 bars[1] parity=1\n"
        "mbarrier.wait L1 b0 w1 0x200 parity=0 @m.cu:4\n"
        "mbarrier.wait L1 b1 w1 0x10 parity=0\n";
    const char *at = strstr(d, "launch L1 ");
    cr_assert_not_null(at, "%s", d);
    cr_assert_str_eq(at, want);
    free(d);
}

static const char *dsmem_text =
    "alloc sh shared 256\n"
    "alloc top shared 0x100 at 0xffff00\n"
    "launch k grid=4,2 block=64 cluster=2,2,1\n"
    "ld.dsmem b0 w0 b1:sh[3]\n"                                  /* LABEL[i] */
    "st.shared::cluster.8 b0 w1 b5:sh[2..]\n"                    /* LABEL[NUM..] */
    "ld.dsmem b5 w0 lanes=0-4 b0:sh+16 stride=-4 @d.cu:5\n"      /* LABEL+n stride=, down to 0 */
    "atom.add.cluster.dsmem b4 w0 lanes=0-2 {b1:sh[2], b5:0x10 b4:sh+1}\n"
    "ld.dsmem.16 b0 w0 lanes=0-3 b4:0xfffff0 stride=0\n"         /* the last 16 bytes */
    "ld.dsmem b1 w0 b0:top[0..]\n"                              /* lane 31 at 0xffff7c */
    "launch k grid=3 block=32\n"                                 /* no cluster: itself */
    "st.dsmem b2 w0 b2:0x1000\n"                                /* in no allocation */
    "launch k grid=4,2,2 block=32 cluster=1,1,2\n"
    "ld.dsmem b8 w0 lanes=0-1 {b0:sh[0] b8:sh[0]}\n"
    "ld.dsmem L3 b13 w0 b5:sh[1]\n";

Test(text, dsmem_addresses)
{
    const char *wrt = asm_ok("dsmem", dsmem_text);
    evs *e = calloc(1, sizeof(*e));
    read_events(wrt, e);
    cr_assert_eq(e->n, 2 + 3 + 9);
    static const struct {
        uint32_t block, mask;
        uint8_t size, mode;
        uint64_t base;
        int64_t stride;
        uint64_t lanes[3];
    } want[] = {
        {0, WR_FULL_MASK, 4, WR_ADDR_UNIFORM, 1ull << 32 | 12, 0, {0}},
        {0, WR_FULL_MASK, 8, WR_ADDR_STRIDED, 5ull << 32 | 16, 8, {0}},
        {5, 0x1f, 4, WR_ADDR_STRIDED, 0ull << 32 | 16, -4, {0}},
        {4, 0x7, 4, WR_ADDR_VECTOR, 0, 0, {1ull << 32 | 8, 5ull << 32 | 0x10, 4ull << 32 | 1}},
        {0, 0xf, 16, WR_ADDR_STRIDED, 4ull << 32 | 0xfffff0u, 0, {0}},
        {1, WR_FULL_MASK, 4, WR_ADDR_STRIDED, 0ull << 32 | 0xffff00u, 4, {0}},
        {2, WR_FULL_MASK, 4, WR_ADDR_UNIFORM, 2ull << 32 | 0x1000, 0, {0}},
        {8, 0x3, 4, WR_ADDR_VECTOR, 0, 0, {0, 8ull << 32}},
        {13, WR_FULL_MASK, 4, WR_ADDR_UNIFORM, 5ull << 32 | 4, 0, {0}},
    };
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++) {
        const wr_access *a = &e->ev[i].u.access;
        if (e->ev[i].kind != WR_EV_ACCESS)
            continue;
        cr_assert_lt(k, sizeof(want) / sizeof(want[0]));
        cr_assert_eq(a->space, WR_SPACE_DSMEM, "access %zu: space %u", k, a->space);
        cr_assert_eq(a->block, want[k].block, "access %zu", k);
        cr_assert_eq(a->active_mask, want[k].mask, "access %zu", k);
        cr_assert_eq(a->size, want[k].size, "access %zu", k);
        cr_assert_eq(a->addr_mode, want[k].mode, "access %zu: mode %u", k, a->addr_mode);
        if (a->addr_mode == WR_ADDR_VECTOR) {
            for (unsigned l = 0; l < 32 && a->active_mask >> l; l++)
                cr_assert_eq(a->lane_addr[l], want[k].lanes[l], "access %zu lane %u: 0x%llx", k, l,
                             (unsigned long long)a->lane_addr[l]);
        } else {
            cr_assert_eq(a->base, want[k].base, "access %zu: base 0x%llx", k, (unsigned long long)a->base);
            cr_assert_eq(a->stride, want[k].stride, "access %zu", k);
        }
        k++;
    }
    cr_assert_eq(k, sizeof(want) / sizeof(want[0]));
    cr_assert_eq(e->ev[6].u.access.atomic_op, WR_AOP_ADD);
    cr_assert_eq(e->ev[6].u.access.scope, WR_SCOPE_CLUSTER);
    free(e);
}

Test(text, dump_dsmem)
{
    char *d = dump_str(asm_ok("dsmemdump", dsmem_text));
    const char *want =
        "def alloc sh shared 256 at 0x0\n"
        "def alloc top shared 256 at 0xffff00\n"
        "def site %1 \"d.cu\" 5 \"\" pc=0x0\n"
        "alloc sh\n"
        "alloc top\n"
        "launch L1 k grid=4,2,1 block=64,1,1 cluster=2,2,1 shared=0 stream=0\n"
        "ld.weak.dsmem.4 L1 b0 w0 b1:sh[3]\n"
        "st.weak.dsmem.8 L1 b0 w1 b5:sh[2] stride=8\n"
        "ld.weak.dsmem.4 L1 b5 w0 mask=0x1f b0:sh[4] stride=-4 @d.cu:5\n"
        "atom.add.relaxed.cluster.dsmem.4 L1 b4 w0 mask=0x7 {b1:sh[2] b5:sh[4] b4:sh+0x1}\n"
        "ld.weak.dsmem.16 L1 b0 w0 mask=0xf b4:top[15] stride=0\n"
        "ld.weak.dsmem.4 L1 b1 w0 b0:top[0] stride=4\n"
        "launch L2 k grid=3,1,1 block=32,1,1 cluster=1,1,1 shared=0 stream=0\n"
        "st.weak.dsmem.4 L2 b2 w0 b2:0x1000\n"
        "launch L3 k grid=4,2,2 block=32,1,1 cluster=1,1,2 shared=0 stream=0\n"
        "ld.weak.dsmem.4 L3 b8 w0 mask=0x3 {b0:sh[0] b8:sh[0]}\n"
        "ld.weak.dsmem.4 L3 b13 w0 b5:sh[1]\n";
    const char *at = strstr(d, "def alloc sh ");
    cr_assert_not_null(at, "%s", d);
    cr_assert_str_eq(at, want);
    free(d);
}

/* ---- errors -------------------------------------------------------------- */

static void expect_error(const char *text, const char *want)
{
    const char *in = path_of("bad.txt");
    const char *out = path_of("bad.wrt");
    write_text(in, text);
    wr_error err;
    int rc = wr_text_assemble(in, out, &err);
    cr_assert_eq(rc, -1, "accepted: %s", text);
    char full[600];
    snprintf(full, sizeof(full), "%s:%s", in, want);
    cr_assert(strstr(err.msg, full) == err.msg, "got '%s', want prefix '%s'", err.msg, full);
    cr_assert_gt(err.line, 0);
    cr_assert_gt(err.col, 0);
    cr_assert_neq(access(out, F_OK), 0, "output left behind after an error");
}

#define L1 "launch k grid=2 block=64\n"

Test(text, errors)
{
    expect_error("lod b0 w0 0x0\n", "1:1: unknown directive 'lod'");
    expect_error(L1 "ld b0 w0 0x1g\n", "2:10: bad number '0x1g'");
    expect_error(L1 "ld b0 w0 99999999999999999999999\n", "2:10: number out of range");
    expect_error("alloc data global 4\n" L1 "ld b0 w0 dta[0]\n", "3:10: undefined allocation 'dta'");
    expect_error(L1 "ld b0 w0 0x0 @%3\n", "2:14: undefined site '@%3'");
    expect_error(L1 "ld L3 b0 w0 0x0\n", "2:4: launch L3 is not defined");
    expect_error("ld b0 w0 0x0\n", "1:4: no launch yet");
    expect_error("launch k block=64\n", "1:10: missing field 'grid='");
    expect_error("launch k grid=1\n", "1:16: missing field 'block='");
    expect_error(L1 "ld b2 w0 0x0\n", "2:4: block 2 out of range");
    expect_error(L1 "ld b0 w2 0x0\n", "2:7: warp 2 out of range");
    expect_error(L1 "ld b0 0x0\n", "2:7: missing warp");
    expect_error(L1 "ld b0 w0\n", "2:9: missing address");
    expect_error(L1 "ld.foo b0 w0 0x0\n", "2:4: unknown modifier 'foo'");
    expect_error(L1 "ld.8.4 b0 w0 0x0\n", "2:6: size given twice");
    expect_error(L1 "atom b0 w0 0x0\n", "2:1: 'atom' needs an operation");
    expect_error(L1 "ld b0 w0 lanes=0-2 {0x0 0x4}\n", "2:20: fewer addresses than active lanes");
    expect_error(L1 "ld b0 w0 lane=0 {0x0 0x4}\n", "2:22: more addresses than active lanes");
    expect_error(L1 "ld b0 w0 lane=32 0x0\n", "2:15: number out of range");
    /* the range as written, not its low end alone */
    expect_error(L1 "ld b0 w0 lanes=0-99 0x0\n", "2:16: bad lane range '0-99' (lanes are 0..31)");
    expect_error(L1 "ld b0 w0 lanes=1,7-3 0x0\n", "2:18: bad lane range '7-3' (lanes are 0..31)");
    expect_error("alloc d global 8\n" L1 "ld b0 w0 d[2]\n", "3:10: offset 8 is outside allocation 'd'");
    expect_error(L1 "ld b0 w0 0x0 extra\n", "2:14: unexpected 'extra'");
    expect_error(L1 "launch L1 k grid=1 block=1\n", "2:8: launch L1 is already defined");
    expect_error("alloc d global 8\nsm 90\n", "2:1: header line 'sm' after the first event");
    expect_error("sm 90\nsm 80\n", "2:1: duplicate header line 'sm'");
    expect_error("device H100\n", "1:8: expected a \"string\"");
    expect_error("device \"abc\n", "1:8: unterminated string");
    expect_error("device \"a\\x00\"\n", "1:");
    expect_error("def kernel %2 k\n", "1:12: definition %2 gets id %1");
    expect_error("def thing x\n", "1:5: unknown definition kind 'thing'");
    expect_error("def module \"m\" 4\nimage 0102\n", "2:7: image line must hold 4 bytes");
    expect_error("def module \"m\" 4\n", "1:1: module image incomplete at end of file");
    expect_error("def module \"m\" 99999999999\n", "1:16: number out of range");
    expect_error("alloc d global 8\ncopy.h2d dst=0x10\n", "2:18: missing field 'bytes='");
    expect_error("copy.h2d src=0x10 bytes=1\n", "1:19: missing field 'dst='");
    expect_error("copy.x dst=0x10 bytes=1\n", "1:6: unknown copy kind 'x'");
    expect_error("copy.memset dst=0x10 bytes=0x10000000001\n", "1:28: copy of 1099511627777 bytes");
    expect_error("copy.memset dst=0xfffffffffffffff0 bytes=0x20\n", "1:42: copy of 32 bytes");
    expect_error("lost launch=1\n", "1:6: missing field 'count='");
    expect_error("event_record event=1\n", "1:21: missing field 'stream='");
    expect_error("free nothing\n", "1:6: undefined allocation 'nothing'");
    expect_error(L1 "ld b0 w0 0x0 @a.cu:x\n", "2:20: bad number 'x'");
    expect_error(L1 "ld b0 w0 0x0 @nofile\n", "2:14: bad site");
    expect_error(L1 "ld b0 w0 0x0 cas=1\n", "2:1: ");   /* the writer's check, placed at the line */
    expect_error("launch k grid=1,0 block=1\n", "1:17: dimension must not be 0");
    expect_error(L1 "barrier.cluster b0 w0 id=2\n", "2:26: cluster and grid barriers have no id");
    expect_error(L1 "bar.grid b0 w0 id=1 expected=64\n", "2:19: cluster and grid barriers have no id");
    expect_error(L1 "grid_sync b0 w0 id=0x10\n", "2:20: cluster and grid barriers have no id");
    expect_error(L1 "barrier.cta b0 w0\n", "2:1: unknown directive 'barrier.cta'");
    expect_error(L1 "barrier.grid b2 w0\n", "2:14: block 2 out of range");
    expect_error(L1 "barrier.cluster b0 w0 id=x\n", "2:26: bad number 'x'");

    /* an overlong line, and a NUL byte */
    char *big = malloc(WR_TEXT_MAX_LINE + 100);
    memset(big, 'x', WR_TEXT_MAX_LINE + 50);
    memcpy(big, "# ", 2);
    strcpy(big + WR_TEXT_MAX_LINE + 50, "\n");
    char *two = malloc(WR_TEXT_MAX_LINE + 200);
    snprintf(two, WR_TEXT_MAX_LINE + 200, "sm 1\n%s", big);
    char want[64];
    snprintf(want, sizeof(want), "2:%u: line longer than %u bytes", WR_TEXT_MAX_LINE + 1, WR_TEXT_MAX_LINE);
    expect_error(two, want);
    free(big);
    free(two);
    const char nul[] = "sm 1\nsm\0 2\n";
    const char *in = path_of("nul.txt");
    FILE *f = fopen(in, "wb");
    fwrite(nul, 1, sizeof(nul) - 1, f);
    fclose(f);
    wr_error err;
    cr_assert_eq(wr_text_assemble(in, path_of("nul.wrt"), &err), -1);
    cr_assert(strstr(err.msg, "nul.txt:2:3: NUL byte"), "%s", err.msg);

    cr_assert_eq(wr_text_assemble(path_of("missing.txt"), path_of("x.wrt"), &err), -1);
    cr_assert(strstr(err.msg, "missing.txt"), "%s", err.msg);
}

/* 2x2 clusters of a 4x2 grid: block 0's cluster is blocks 0, 1, 4, 5. */
#define LC "launch k grid=4,2 block=64 cluster=2,2,1\n"

Test(text, split_barrier_errors)
{
    /* bar.arrive names its thread count: missing (at the column where it
     * belongs) or 0 */
    expect_error(L1 "bar.arrive b0 w0\n",
                 "2:17: missing field 'expected=' (bar.arrive names its thread count)");
    expect_error(L1 "bar.arrive b0 w0 id=1 @s.cu:3\n",
                 "2:23: missing field 'expected=' (bar.arrive names its thread count)");
    expect_error(L1 "barrier.cta.arrive b0 w0 id=2\n",
                 "2:30: missing field 'expected=' (barrier.cta.arrive names its thread count)");
    expect_error(L1 "barrier.arrive b0 w0 expected=0\n",
                 "2:31: barrier.arrive needs a thread count: expected=0 is not one");
    expect_error(L1 "bar.arrive b0 w0 id=x expected=64\n", "2:21: bad number 'x'");
    /* a wait counts no thread and names no barrier, whatever the value */
    expect_error(L1 "barrier.cluster.wait b0 w0 expected=64\n",
                 "2:28: a barrier wait has no expected= (it counts no thread)");
    expect_error(L1 "bar.grid.wait b0 w0 expected=0\n",
                 "2:21: a barrier wait has no expected= (it counts no thread)");
    expect_error(L1 "cluster_wait b0 w0 id=0\n", "2:20: a barrier wait has no id");
    expect_error(L1 "barrier.cluster.wait b1 w1 id=1\n", "2:28: a barrier wait has no id");
    expect_error(L1 "barrier.grid.wait b1 w1 id=1 expected=0\n", "2:25: a barrier wait has no id");
    /* cluster and grid arrives have no id, as their syncs */
    expect_error(L1 "barrier.cluster.arrive b0 w0 id=2\n",
                 "2:33: cluster and grid barriers have no id");
    expect_error(L1 "cluster_arrive_relaxed b0 w0 id=1\n",
                 "2:33: cluster and grid barriers have no id");
    expect_error(L1 "bar.grid.arrive b0 w0 id=4 expected=1\n",
                 "2:26: cluster and grid barriers have no id");
    /* the combinations the format has no mode for are no directive */
    expect_error(L1 "barrier.grid.arrive.relaxed b0 w0\n",
                 "2:1: unknown directive 'barrier.grid.arrive.relaxed'");
    expect_error(L1 "barrier.cta.wait b0 w0\n", "2:1: unknown directive 'barrier.cta.wait'");
    expect_error(L1 "bar.arrive.relaxed b0 w0 expected=64\n",
                 "2:1: unknown directive 'bar.arrive.relaxed'");
    /* the thread as for any barrier */
    expect_error(L1 "barrier.cluster.arrive b2 w0\n", "2:24: block 2 out of range");
    expect_error(L1 "barrier.grid.wait b0\n", "2:21: missing warp");
}

Test(text, mbarrier_errors)
{
#define LM "alloc bars shared 32\nalloc g global 64\n" L1
    /* a field missing (at the column where it belongs) */
    expect_error(LM "mbarrier.init b0 w0 lane=0 bars[0]\n",
                 "4:35: missing field 'count=' (mbarrier.init names the arrivals of each phase)");
    expect_error(LM "mbarrier.init b0 w0 bars[0] @m.cu:1\n",
                 "4:29: missing field 'count=' (mbarrier.init names the arrivals of each phase)");
    expect_error(LM "mbarrier.wait b0 w0 bars[0]\n",
                 "4:28: missing field 'parity=' (a wait names the parity of the phase it waited for)");
    expect_error(LM "mbarrier.try_wait b0 w0 0x8 @m.cu:1\n", "4:29: missing field 'parity='");
    expect_error(LM "mbarrier.arrive b0 w0\n",
                 "4:22: missing address (the mbarrier's shared memory offset)");
    expect_error(LM "mbarrier.test_wait b0 w0 parity=1\n", "4:26: missing address");
    expect_error(LM "mbarrier.init b0\n", "4:17: missing warp");
    /* a field too many, or another directive's */
    expect_error(LM "mbarrier.arrive b0 w0 bars[0] parity=1\n",
                 "4:31: mbarrier.arrive has no parity= (only a wait names a phase)");
    expect_error(LM "mbarrier.init b0 w0 bars[0] count=1 parity=0\n",
                 "4:37: mbarrier.init has no parity= (only a wait names a phase)");
    expect_error(LM "mbarrier.wait b0 w0 bars[0] parity=1 count=2\n",
                 "4:38: mbarrier.wait has no count= (a wait counts no arrival)");
    expect_error(LM "mbarrier.arrive b0 w0 bars[0] id=1\n", "4:31: an mbarrier has no id=");
    expect_error(LM "mbarrier.arrive.relaxed b0 w0 bars[0] expected=64\n",
                 "4:39: an mbarrier has no expected=");
    expect_error(LM "mbarrier.arrive b0 w0 bars[0] count=1 count=2\n", "4:39: unexpected 'count=2'");
    expect_error(LM "mbarrier.arrive b0 w0 bars[0] bars[1]\n", "4:31: unexpected 'bars[1]'");
    /* the address: 8-byte aligned, below 16 MiB, the issuing block's own
     * shared memory */
    expect_error(LM "mbarrier.arrive b0 w0 bars+4\n",
                 "4:23: mbarrier address 0x4 is not 8-byte aligned");
    expect_error(LM "mbarrier.wait b0 w0 0x1001 parity=0\n",
                 "4:21: mbarrier address 0x1001 is not 8-byte aligned");
    expect_error(LM "mbarrier.arrive b0 w0 0x1000000\n",
                 "4:23: mbarrier address 0x1000000 is past a block's 16 MiB of shared memory");
    expect_error(LM "mbarrier.init b0 w0 0xffffffffffffff00 count=1\n",
                 "4:21: mbarrier address 0xffffffffffffff00 is past a block's 16 MiB");
    expect_error(LM "mbarrier.arrive b0 w0 g[0]\n",
                 "4:23: 'g[0]' is in a global allocation: an mbarrier is in shared memory");
    expect_error(LM "mbarrier.arrive b0 w0 b1:bars[0]\n",
                 "4:23: owner block 'b1' on an mbarrier");
    expect_error(LM "mbarrier.arrive b0 w0 bars[0..]\n", "4:27: '..' range not allowed here");
    expect_error(LM "mbarrier.arrive b0 w0 bars[4]\n",
                 "4:23: offset 32 is outside allocation 'bars' (32 bytes)");
    expect_error(LM "mbarrier.arrive b0 w0 nobars[0]\n", "4:23: undefined allocation 'nobars'");
    /* counts and parities out of range (at the value) */
    expect_error(LM "mbarrier.init b0 w0 bars[0] count=0\n", "4:35: count 0 out of range (1 .. 1048575)");
    expect_error(LM "mbarrier.init b0 w0 bars[0] count=1048576\n",
                 "4:35: count 1048576 out of range (1 .. 1048575)");
    expect_error(LM "mbarrier.arrive b0 w0 bars[0] count=0\n",
                 "4:37: count=0 is no count (1 .. 1048575; leave count= out for one arrival)");
    expect_error(LM "mbarrier.arrive.relaxed b0 w0 bars[0] count=0x100000\n",
                 "4:45: count 1048576 out of range");
    expect_error(LM "mbarrier.wait b0 w0 bars[0] parity=2\n", "4:36: parity 2 is not 0 or 1");
    expect_error(LM "mbarrier.test_wait b0 w0 bars[0] parity=-1\n", "4:41: bad number '-1'");
    expect_error(LM "mbarrier.init b0 w0 bars[0] count=x\n", "4:35: bad number 'x'");
    /* what the format has no record for is no directive */
    expect_error(LM "mbarrier.sync b0 w0 bars[0]\n", "4:1: unknown directive 'mbarrier.sync'");
    expect_error(LM "mbarrier.wait.relaxed b0 w0 bars[0] parity=0\n",
                 "4:1: unknown directive 'mbarrier.wait.relaxed'");
    expect_error(LM "mbarrier b0 w0 bars[0]\n", "4:1: unknown directive 'mbarrier'");
#undef LM
}

Test(text, dsmem_errors)
{
    /* the owner prefix: on every dsmem address, on no other */
    expect_error("alloc sh shared 64\n" LC "ld.dsmem b0 w0 sh[3]\n",
                 "3:16: a dsmem address needs its owner block: b<n>:ADDR, got 'sh[3]'");
    expect_error(LC "ld.dsmem b0 w0 lanes=0-1 {b1:0x0 0x4}\n", "2:34: a dsmem address needs its owner block");
    expect_error(LC "ld.shared::cluster b0 w0 0x4 stride=4\n", "2:26: a dsmem address needs its owner block");
    expect_error("alloc sh shared 64\n" LC "ld.shared b0 w0 b1:sh[3]\n",
                 "3:17: owner block 'b1' on a shared access (only dsmem addresses have one)");
    expect_error(LC "ld b0 w0 b1:0x0\n", "2:10: owner block 'b1' on a global access");
    expect_error(LC "st.local b0 w0 lanes=0-1 {0x0 b0:0x4}\n", "2:31: owner block 'b0' on a local access");
    /* the owner: in the grid, in the issuing block's cluster */
    expect_error(LC "ld.dsmem b0 w0 b8:0x0\n", "2:16: owner block 8 out of range (launch has 8)");
    expect_error(LC "ld.dsmem b0 w0 b99999999999:0x0\n", "2:17: number out of range '99999999999'");
    expect_error(LC "ld.dsmem b0 w0 b0x9:0x0\n", "2:16: owner block 9 out of range");   /* hex, as b<n> */
    expect_error(LC "ld.dsmem b0 w0 b1z:0x0\n", "2:17: bad number '1z'");
    expect_error(LC "ld.dsmem b0 w0 b2:0x0\n",
                 "2:16: owner block 2 is not in the cluster of block 0 (cluster=2,2,1)");
    expect_error(LC "ld.dsmem b6 w0 lanes=0-1 {b7:0x0 b1:0x0}\n",
                 "2:34: owner block 1 is not in the cluster of block 6");
    expect_error(L1 "ld.dsmem b0 w0 b1:0x0\n",
                 "2:16: owner block 1 is not in the cluster of block 0 (cluster=1,1,1)");
    expect_error("launch k grid=2,2,2 block=32 cluster=1,1,2\n" "ld.dsmem b0 w0 b1:0x0\n",
                 "2:16: owner block 1 is not in the cluster of block 0 (cluster=1,1,2)");
    /* the offset, and the access's bytes, below WR_SHARED_LIMIT (16 MiB) */
    expect_error(LC "ld.dsmem b0 w0 b1:0x100000000\n",
                 "2:19: dsmem offset 0x100000000 is past a block's 16 MiB of shared memory");
    expect_error(LC "ld.dsmem b0 w0 b1:0x1000000\n",
                 "2:19: dsmem offset 0x1000000 is past a block's 16 MiB of shared memory");
    expect_error("alloc g global 0x100000010 at 0\n" LC "ld.dsmem b0 w0 b1:g+0x100000000\n",
                 "3:19: dsmem offset 0x100000000 is past a block's 16 MiB of shared memory");
    expect_error(LC "ld.dsmem.8 b0 w0 b1:0xfffffc\n",
                 "2:21: dsmem access of 8 bytes at offset 0xfffffc runs past a block's 16 MiB of shared memory");
    expect_error(LC "ld.dsmem b0 w0 lane=0 {b1:0xfffffd}\n",
                 "2:27: dsmem access of 4 bytes at offset 0xfffffd runs past a block's 16 MiB of shared memory");
    /* strided: the last active lane too, up or down */
    expect_error(LC "ld.dsmem b0 w0 b1:0xffff84 stride=4\n",
                 "2:35: lane 31 of the strided dsmem access falls outside block 1's 16 MiB of shared memory");
    expect_error(LC "ld.dsmem b0 w0 lanes=0-5 b1:0x10 stride=-4\n",
                 "2:41: lane 5 of the strided dsmem access falls outside block 1's 16 MiB of shared memory");
    expect_error(LC "ld.dsmem b0 w0 b1:0x0 stride=0x2000000000000000\n", "2:30: lane 31 of the strided");
    expect_error("alloc top shared 0x100 at 0xffff00\n" LC "ld.dsmem b0 w0 b1:top[33..]\n",
                 "3:19: lane 31 of the strided dsmem access falls outside block 1's 16 MiB of shared memory");
    /* a plain shared access past the limit: the writer's error, at the line */
    expect_error(LC "ld.shared b0 w0 0x1000000\n", "2:1: ");
    /* allocations stay global, shared or local */
    expect_error("alloc x dsmem 4\n", "1:9: an allocation is global, shared or local, not 'dsmem'");
    expect_error("def alloc x shared::cluster 4\n",
                 "1:13: an allocation is global, shared or local, not 'shared::cluster'");
}

Test(text, exactly_max_line_is_accepted)
{
    char *t = malloc(WR_TEXT_MAX_LINE + 2);
    memset(t, ' ', WR_TEXT_MAX_LINE);
    memcpy(t, "device_sync #", 13);
    t[WR_TEXT_MAX_LINE] = '\n';
    t[WR_TEXT_MAX_LINE + 1] = 0;
    asm_ok("maxline", t);
    free(t);
}

/* Every token is bounded well below the line, so that a dumped line (which
 * may add fields the input left out) still fits one. */
Test(text, long_tokens_and_strings)
{
    size_t cap = WR_TEXT_MAX_TOKEN + 100;
    char *t = malloc(cap + 64), *name = malloc(cap);
    cr_assert(t && name);
    memset(name, 'k', WR_TEXT_MAX_TOKEN + 1);
    name[WR_TEXT_MAX_TOKEN + 1] = 0;
    snprintf(t, cap + 64, "launch %s grid=1 block=1\n", name);
    char want[64];
    snprintf(want, sizeof(want), "1:8: token longer than %u bytes", WR_TEXT_MAX_TOKEN);
    expect_error(t, want);

    /* 5000 raw bytes >= 0x80 are 20002 bytes once dumped as \xHH */
    memset(name, 0xff, 5000);
    name[5000] = 0;
    snprintf(t, cap + 64, "device \"%s\"\n", name);
    snprintf(want, sizeof(want), "1:8: string is 20002 bytes in canonical form, more than %u", WR_TEXT_MAX_TOKEN);
    expect_error(t, want);

    free(t);
    free(name);
}

Test(text, dump_refuses_a_name_the_text_form_cannot_hold)
{
    const char *wrt = path_of("longname.wrt");
    wr_header h = {.producer = "p", .device = "d", .sm_arch = 90, .warp_size = 32, .command = "c"};
    wr_writer_options o = {0};
    wr_error err;
    wr_writer *w = wr_writer_open(wrt, &h, &o, &err);
    cr_assert_not_null(w, "%s", err.msg);
    char *name = malloc(WR_TEXT_MAX_TOKEN + 2);
    memset(name, 'n', WR_TEXT_MAX_TOKEN + 1);
    name[WR_TEXT_MAX_TOKEN + 1] = 0;   /* one byte over as a bare name, three as a string */
    cr_assert_eq(wr_writer_kernel(w, name), 1);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    free(name);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = wr_text_dump(wrt, f, &err);
    fclose(f);
    free(buf);
    cr_assert_eq(rc, -1);
    char want[128];
    snprintf(want, sizeof(want), "a name or string is %u bytes in text form, more than the text form's %u",
             WR_TEXT_MAX_TOKEN + 3, WR_TEXT_MAX_TOKEN);
    cr_assert(strstr(err.msg, wrt) == err.msg && strstr(err.msg, want), "%s", err.msg);
}

/* ---- round trips --------------------------------------------------------- */

static void check_round_trips(const char *name, const char *text)
{
    char n1[64], n2[64], n3[64];
    snprintf(n1, sizeof(n1), "%s1", name);
    snprintf(n2, sizeof(n2), "%s2", name);
    snprintf(n3, sizeof(n3), "%s3", name);
    const char *w1 = asm_ok(n1, text);
    char *d1 = dump_str(w1);
    const char *w2 = asm_ok(n2, d1);          /* asm -> dump -> asm */
    size_t l1, l2;
    char *b1 = read_all(w1, &l1), *b2 = read_all(w2, &l2);
    cr_assert(l1 == l2 && !memcmp(b1, b2, l1), "%s: asm -> dump -> asm differs", name);
    char *d2 = dump_str(w2);                  /* dump -> asm -> dump */
    cr_assert_str_eq(d1, d2, "%s: dump -> asm -> dump differs", name);
    const char *w3 = asm_ok(n3, d2);
    char *b3 = read_all(w3, &l2);
    cr_assert(l1 == l2 && !memcmp(b1, b3, l1));
    free(b1);
    free(b2);
    free(b3);
    free(d1);
    free(d2);
}

Test(text, long_strings_round_trip)
{
    size_t cap = 3 * WR_TEXT_MAX_TOKEN;
    char *t = malloc(cap), *raw = malloc(2000), *ident = malloc(WR_TEXT_MAX_TOKEN + 1);
    memset(raw, 0xff, 1500);
    raw[1500] = 0;
    memset(ident, 'k', WR_TEXT_MAX_TOKEN);
    ident[WR_TEXT_MAX_TOKEN] = 0;
    /* found by fuzz_text: a raw string that expands 4x in the dump made a
     * line the assembler refused.  With it, and a kernel named by the longest token
     * in a launch line whose dump adds cluster=, shared=, stream= */
    snprintf(t, cap, "device \"%s\"\nlaunch %s grid=1 block=1\n", raw, ident);
    check_round_trips("longstr", t);
    free(t);
    free(raw);
    free(ident);
}

Test(text, round_trip_every_kind)
{
    check_round_trips("every", every_kind);
}

Test(text, round_trip_cluster_and_grid_barriers)
{
    check_round_trips("scoped", scoped_barriers);
}

Test(text, round_trip_split_barriers)
{
    check_round_trips("split", split_barriers);
}

Test(text, round_trip_mbarriers)
{
    check_round_trips("mbar", mbarriers_text);
}

Test(text, round_trip_dsmem)
{
    check_round_trips("dsmem", dsmem_text);
}

Test(text, round_trip_definitions_mid_stream)
{
    /* sites and kernels defined between events, labels shadowed and
     * clashing, explicit flushes, a module, odd strings */
    check_round_trips("mid",
        "alloc a global 16\n"
        "launch k grid=1 block=32 @x.cu:1\n"
        "st b0 w0 a[0] @y.cu:2:f\n"
        "def kernel \"odd name \\\"q\\\"\"\n"
        "alloc a global 16\n"        /* shadows: the dump must call it %2 */
        "alloc _a1 global 4\n"       /* reserved-looking name */
        "def alloc %4 global 8 name=\"\\xc3\\xbc\"\n"
        "ld b0 w0 a[1] @y.cu:2:f\n"
        "launch \"odd name \\\"q\\\"\" grid=1 block=32\n"
        "launch k grid=1 block=32\n"
        "flush\n"
        "ld L1 b0 w0 {%2[0] %4+1 a[3] 0x5 0x6 0x7 0x8 0x9 0xa 0xb 0xc 0xd 0xe 0xf 0x10 0x11 0x12 0x13 0x14 "
        "0x15 0x16 0x17 0x18 0x19 0x1a 0x1b 0x1c 0x1d 0x1e 0x1f 0x20 0x21} @z.cu:3\n"
        "def site \"z.cu\" 3 \"\" pc=0x10\n"     /* same key: the newest wins */
        "ld b0 w0 a[2] @z.cu:3\n"
        "ld b0 w0 a[2] @%3\n"
        "def site \"\" 0\n"
        "ld b0 w0 a[2] @%5\n"
        "def kernel k\n"                         /* a second kernel named k */
        "launch k grid=1 block=32\n"
        "launch %1 grid=1 block=32\n"
        "def module \"mod\" 70\n"
        "image 000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f"
        "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f\n"
        "image 112233445566\n"
        "flush\n"
        "def site \"late.cu\" 9\n"
        "def alloc late global 4\n");
}

Test(text, round_trip_many_chunks)
{
    /* > 256 KiB of events: the writer cuts chunks by itself, with sites
     * defined all along the way. */
    size_t cap = 8u << 20, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len, "alloc big global 1048576\nlaunch k grid=64 block=256\n");
    for (int i = 0; i < 30000; i++) {
        len += (size_t)snprintf(t + len, cap - len, "ld b%d w%d lanes=0-3 {big[%d] big[%d] big[%d] big[%d]} @s%d.cu:%d\n",
                                i % 64, i % 8, i, i + 1, i * 3, 7, i / 500, i % 7);
        if (i % 7000 == 6999)
            len += (size_t)snprintf(t + len, cap - len, "def alloc x%d global 16\n", i);
    }
    check_round_trips("many", t);
    /* and the writer really cut several chunks */
    char *d = dump_str(path_of("many1.wrt"));
    cr_assert(strstr(d, "\nflush\n"), "expected several chunks");
    free(d);
    free(t);
}

Test(text, dump_of_a_writer_trace_reassembles_identically)
{
    /* A trace written through the API (as the recorder does, definitions
     * before the events of their chunk in canonical order), small chunks. */
    const char *orig = path_of("api.wrt");
    wr_header h = {.producer = "rec", .producer_version = "1", .device = "GPU \"x\"\n", .sm_arch = 80,
                   .warp_size = 32, .clock_khz = 1, .host = "h", .time_unix_ns = 123456789012345, .command = "c"};
    wr_writer_options o = {.chunk_bytes = 300};
    wr_error err;
    wr_writer *w = wr_writer_open(orig, &h, &o, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "reduce"), 1);
    cr_assert_eq(wr_writer_kernel(w, ""), 2);
    cr_assert_eq(wr_writer_alloc(w, 0x7f0000000000ull, 4096, WR_SPACE_GLOBAL, "data"), 1);
    cr_assert_eq(wr_writer_alloc(w, 0x7f0000000000ull, 64, WR_SPACE_GLOBAL, "data"), 2);
    cr_assert_eq(wr_writer_alloc(w, 0, 1024, WR_SPACE_SHARED, "has space"), 3);
    cr_assert_eq(wr_writer_site(w, 0x1a0, "reduce.cu", 42, "reduce"), 1);
    cr_assert_eq(wr_writer_site(w, 0x1b0, "dir/\xc3\xbc.cu", 7, "ns::f(int)"), 2);
    uint64_t lanes[32] = {0};
    for (uint32_t i = 0; i < 200; i++) {
        wr_event ev;
        memset(&ev, 0, sizeof(ev));
        if (i % 50 == 0) {
            ev.kind = WR_EV_KERNEL_LAUNCH;
            ev.u.launch = (wr_launch){.launch = i / 50 + 1, .kernel = 1 + (i / 50) % 2, .grid = {4, 1, 1},
                                      .block_dim = {128, 1, 1}, .cluster = {1, 1, 1}, .stream = i / 50};
        } else {
            ev.kind = WR_EV_ACCESS;
            ev.site = i % 3;
            wr_access *a = &ev.u.access;
            a->launch = i / 50 + 1;
            a->block = i % 4;
            a->warp = i % 4;
            a->active_mask = i % 2 ? WR_FULL_MASK : 0x0f0f0f0fu;
            a->op = (uint8_t)(i % 5);
            a->atomic_op = a->op == WR_OP_ATOMIC_RMW ? (uint8_t)(1 + i % 11) : 0;
            a->cas_success = a->atomic_op == WR_AOP_CAS ? (a->active_mask & 0x3) : 0;
            a->scope = (uint8_t)(i % 5);
            a->order = (uint8_t)(i % 6);
            a->space = (uint8_t)(i % 2);
            a->size = (uint8_t)(1u << (i % 5));
            a->addr_mode = (uint8_t)(i % 3);
            /* shared offsets stay below WR_SHARED_LIMIT in every lane */
            uint64_t region = a->space ? 0x1000 : 0x7f0000000000ull;
            a->base = a->space ? region + 4 * i : region + 3 * i;
            a->stride = (int64_t)(i % 7) - 3;
            for (int l = 0; l < 32; l++)
                lanes[l] = (a->active_mask >> l & 1) ? region + 64 * (uint64_t)l + i : 0;
            a->lane_addr = lanes;
        }
        cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
        if (i == 120) {
            cr_assert_eq(wr_writer_site(w, 0, "late.cu", 1, ""), 3);
            static const unsigned char img[] = {1, 2, 3};
            cr_assert_eq(wr_writer_module(w, "m", img, 3), 1);
        }
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    char *d = dump_str(orig);
    const char *w2 = asm_ok("api2", d);
    size_t l1, l2;
    char *b1 = read_all(orig, &l1), *b2 = read_all(w2, &l2);
    cr_assert(l1 == l2 && !memcmp(b1, b2, l1), "dump of a writer trace does not reassemble identically");
    cr_assert(strstr(d, "def alloc %2 global 64 at 0x7f0000000000 name=\"data\"\n"), "%s", d);
    cr_assert(strstr(d, "def alloc %3 shared 1024 at 0x0 name=\"has space\"\n"), "%s", d);
    cr_assert(strstr(d, " @%2\n"), "%s", d);
    cr_assert(strstr(d, "launch L2 %2 "), "%s", d);
    free(b1);
    free(b2);
    free(d);
}

Test(text, dump_of_writer_mbarriers_reassembles_identically)
{
    /* mbarriers through the API, as the recorder writes them: offsets in
     * and outside a shared allocation (at its end, past its last whole
     * element, below an unaligned base), every mode, counts at the edges */
    const char *orig = path_of("apimbar.wrt");
    wr_header h = {.producer = "rec", .sm_arch = 90, .warp_size = 32};
    wr_error err;
    wr_writer *w = wr_writer_open(orig, &h, NULL, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "k"), 1);
    cr_assert_eq(wr_writer_alloc(w, 0x400, 20, WR_SPACE_SHARED, "bars"), 1);
    cr_assert_eq(wr_writer_alloc(w, 0x404, 64, WR_SPACE_SHARED, "odd"), 2);
    wr_event ev = {.kind = WR_EV_KERNEL_LAUNCH,
                   .u.launch = {.launch = 1, .kernel = 1, .grid = {2, 1, 1},
                                .block_dim = {64, 1, 1}, .cluster = {1, 1, 1}}};
    cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%s", err.msg);
    static const struct { uint32_t off, expected; uint8_t mode; } m[] = {
        {0x400, 1, WR_BARMODE_INIT}, {0x410, WR_MBARRIER_COUNT_MAX, WR_BARMODE_INIT},
        {0x408, 0, WR_BARMODE_ARRIVE}, {0x440, 7, WR_BARMODE_ARRIVE},
        {0x0, 0, WR_BARMODE_ARRIVE_RELAXED}, {WR_SHARED_LIMIT - 8, 1, WR_BARMODE_ARRIVE_RELAXED},
        {0x400, 0, WR_BARMODE_WAIT}, {0x448, 1, WR_BARMODE_WAIT},
    };
    for (uint32_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        ev = (wr_event){.kind = WR_EV_BARRIER,
                        .u.barrier = {1, i % 2, i % 2, i % 3 ? WR_FULL_MASK : 1u << i, m[i].off,
                                      m[i].expected, WR_BAR_MBARRIER, m[i].mode}};
        cr_assert_eq(wr_writer_event(w, &ev, &err), 0, "%u: %s", i, err.msg);
    }
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    char *d = dump_str(orig);
    const char *w2 = asm_ok("apimbar2", d);
    size_t l1, l2;
    char *b1 = read_all(orig, &l1), *b2 = read_all(w2, &l2);
    cr_assert(l1 == l2 && !memcmp(b1, b2, l1), "dump of writer mbarriers does not reassemble:\n%s", d);
    /* the newest shared allocation holding the offset names it */
    cr_assert(strstr(d, "mbarrier.init L1 b1 w1 odd+0xc count=1048575\n"), "%s", d);
    cr_assert(strstr(d, "mbarrier.init L1 b0 w0 mask=0x1 bars[0] count=1\n"), "%s", d);
    cr_assert(strstr(d, "mbarrier.arrive L1 b1 w1 mask=0x8 odd+0x3c count=7\n"), "%s", d);
    cr_assert(strstr(d, "mbarrier.wait L1 b1 w1 0x448 parity=1\n"), "%s", d);
    cr_assert(strstr(d, "mbarrier.arrive.relaxed L1 b1 w1 0xfffff8 count=1\n"), "%s", d);
    free(b1);
    free(b2);
    free(d);
}

Test(text, dump_of_a_strided_dsmem_access_without_a_text_form)
{
    /* A producer's strided base is lane 0's address even when lane 0 is
     * inactive: lanes 16-31 reading block 1's sh[0..15] have lane 0 at
     * offset -64, in block 0.  "b0:0xffffffc0 stride=4" would say block 0,
     * so the dump writes the lanes one by one. */
    const char *orig = path_of("dsmemapi.wrt");
    wr_header h = {.producer = "rec", .warp_size = 32};
    wr_error err;
    wr_writer *w = wr_writer_open(orig, &h, NULL, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(wr_writer_kernel(w, "k"), 1);
    cr_assert_eq(wr_writer_alloc(w, 0, 256, WR_SPACE_SHARED, "sh"), 1);
    wr_event written[3] = {
        {.kind = WR_EV_KERNEL_LAUNCH, .u.launch = {.launch = 1, .kernel = 1, .grid = {2, 1, 1},
                                                    .block_dim = {32, 1, 1}, .cluster = {2, 1, 1}}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .block = 0, .active_mask = 0xffff0000u,
            .space = WR_SPACE_DSMEM, .size = 4, .addr_mode = WR_ADDR_STRIDED,
            .base = wr_dsmem_addr(1, 0) - 64, .stride = 4}},
        {.kind = WR_EV_ACCESS, .u.access = {.launch = 1, .block = 0, .active_mask = WR_FULL_MASK,
            .space = WR_SPACE_DSMEM, .size = 4, .addr_mode = WR_ADDR_STRIDED,
            .base = wr_dsmem_addr(1, 8), .stride = 4}},
    };
    for (int i = 0; i < 3; i++)
        cr_assert_eq(wr_writer_event(w, &written[i], &err), 0, "%s", err.msg);
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);

    char *d1 = dump_str(orig);
    char want[512] = "ld.weak.dsmem.4 L1 b0 w0 mask=0xffff0000 {";
    for (int i = 0; i < 16; i++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%sb1:sh[%d]", i ? " " : "", i);
    strcat(want, "}\nld.weak.dsmem.4 L1 b0 w0 b1:sh[2] stride=4\n");
    const char *at = strstr(d1, "ld.weak.dsmem.4 ");
    cr_assert_not_null(at, "%s", d1);
    cr_assert_str_eq(at, want);

    /* it reassembles, as the same lanes, and its dump is stable */
    const char *w2 = asm_ok("dsmemapi2", d1);
    evs *e = calloc(1, sizeof(*e));
    read_events(w2, e);
    cr_assert_eq(e->n, 3);   /* the launch, two accesses */
    const wr_access *a = &e->ev[1].u.access;
    cr_assert_eq(a->addr_mode, WR_ADDR_VECTOR);
    cr_assert_eq(a->active_mask, written[1].u.access.active_mask);
    for (unsigned l = 16; l < 32; l++)
        cr_assert_eq(wr_access_lane_addr(a, l), wr_access_lane_addr(&written[1].u.access, l), "lane %u", l);
    cr_assert_eq(e->ev[2].u.access.addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(e->ev[2].u.access.base, written[2].u.access.base);
    free(e);
    char *d2 = dump_str(w2);
    cr_assert_str_eq(d1, d2);
    free(d1);
    free(d2);
}

/* ---- in-memory entry point and the commands ------------------------------ */

Test(text, assemble_from_memory)
{
    const char *t = "launch k grid=1 block=32\nld b0 w0 0x10\n";
    wr_error err;
    cr_assert_eq(wr_text_assemble_buf("mem", t, strlen(t), path_of("m.wrt"), &err), 0, "%s", err.msg);
    cr_assert_eq(wr_text_assemble_buf("mem", "ld b0\n", 6, path_of("n.wrt"), &err), -1);
    cr_assert(strstr(err.msg, "mem:1:4: no launch yet"), "%s", err.msg);
}

static int run_cmd(const char *cmd)
{
    int st = system(cmd);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

Test(text, commands)
{
    char cmd[1024];
    write_text(path_of("c.txt"), "alloc d global 4\nlaunch k grid=1 block=32\nst b0 w0 d[0]\n");
    write_text(path_of("bad.txt"), "alloc d global 4\nlaunch k grid=1 block=32\nst b0 w0 e[0]\n");
    snprintf(cmd, sizeof(cmd), "%s asm %s -o %s", WARPRACE_EXE, path_of("c.txt"), path_of("c.wrt"));
    cr_assert_eq(run_cmd(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s dump %s -o %s", WARPRACE_EXE, path_of("c.wrt"), path_of("c.out"));
    cr_assert_eq(run_cmd(cmd), 0);
    char *o = read_all(path_of("c.out"), NULL);
    cr_assert(strstr(o, "st.weak.global.4 L1 b0 w0 d[0]\n"), "%s", o);
    free(o);
    snprintf(cmd, sizeof(cmd), "%s asm %s -o %s 2>%s", WARPRACE_EXE, path_of("bad.txt"), path_of("b.wrt"),
             path_of("err"));
    cr_assert_eq(run_cmd(cmd), 2);
    o = read_all(path_of("err"), NULL);
    cr_assert(strstr(o, "bad.txt:3:10: undefined allocation 'e'"), "%s", o);
    free(o);
    snprintf(cmd, sizeof(cmd), "%s dump %s >/dev/null 2>&1", WARPRACE_EXE, path_of("bad.txt"));
    cr_assert_eq(run_cmd(cmd), 2);
    snprintf(cmd, sizeof(cmd), "%s asm >/dev/null 2>&1", WARPRACE_EXE);
    cr_assert_eq(run_cmd(cmd), 2);
    snprintf(cmd, sizeof(cmd), "%s asm --help >/dev/null", WARPRACE_EXE);
    cr_assert_eq(run_cmd(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s dump --help >/dev/null", WARPRACE_EXE);
    cr_assert_eq(run_cmd(cmd), 0);
}

/* Every litmus trace assembles, and round-trips. */
Test(text, litmus_traces_round_trip)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls %s/*.txt 2>/dev/null", LITMUS_DIR);
    FILE *ls = popen(cmd, "r");
    cr_assert_not_null(ls);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), ls)) {
        line[strcspn(line, "\n")] = 0;
        char *text = read_all(line, NULL);
        cr_assert_not_null(text);
        char name[32];
        snprintf(name, sizeof(name), "lit%d", n++);
        check_round_trips(name, text);
        free(text);
    }
    pclose(ls);
}

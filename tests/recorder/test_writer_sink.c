/* The drain writing a real trace file through the writer sink, read back
 * with the format library's reader: events, sites, lost markers survive. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"
#include "drain.h"
#include "ring_sim.h"
#include "sim_helpers.h"
#include "warprace/trace.h"
#include "writer_sink.h"

static long host_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    memcpy(buf, (const void *)(uintptr_t)addr, len);
    return (long)len;
}

/* A writer on a new temporary file (path: a mkstemp template, filled in). */
static wr_writer *open_temp_writer(char *path, const wr_writer_options *wo, wr_error *err)
{
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    wr_header h = sim_header();
    return wr_writer_open(path, &h, wo, err);
}

/* A simulated device ring drained through the writer sink into a new
 * temporary file, with kernel `kernel` launched as launch 1 (geometry from
 * *l): the set-up of the tests that send device records to a file. */
typedef struct sink_rig {
    char path[32];
    wr_writer *w;
    wrr_writer_sink ws;
    wrr_sink sink;
    wrr_sim sim;
    wrr_drain d;
} sink_rig;

static void rig_open(sink_rig *g, const char *kernel, wr_launch l)
{
    wr_error err;
    strcpy(g->path, "/tmp/wr-sink-XXXXXX");
    g->w = open_temp_writer(g->path, NULL, &err);
    cr_assert_not_null(g->w, "%s", err.msg);
    wrr_writer_sink_init(&g->ws, g->w, &g->sink);
    l.launch = 1;
    l.kernel = wr_writer_kernel(g->w, kernel);
    cr_assert_eq(wrr_sim_init(&g->sim, 6, 0), 0);
    wrr_drain_options o = {.read_mem = host_read};
    cr_assert_eq(wrr_drain_init(&g->d, &g->sim.ring, &g->sink, &o), 0);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch = l;
    wrr_drain_post(&g->d, &ev);
}

/* Ends launch 1, drains and closes the file, and opens it to read. */
static wr_reader *rig_read_back(sink_rig *g)
{
    wr_error err;
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_END;
    ev.u.kernel_end.launch = 1;
    wrr_drain_post(&g->d, &ev);
    cr_assert_eq(wrr_drain_finish(&g->d), 0, "%s", g->d.error);
    cr_assert_eq(wr_writer_close(g->w, &err), 0, "%s", err.msg);
    wr_reader *r = wr_reader_open(g->path, &err);
    cr_assert_not_null(r, "%s", err.msg);
    return r;
}

static void rig_free(sink_rig *g, wr_reader *r)
{
    wr_reader_close(r);
    wrr_drain_destroy(&g->d);
    wrr_sim_free(&g->sim);
    unlink(g->path);
}

Test(writer_sink, ring_to_file_and_back)
{
    static char file[64] = "litmus.cu", func[64] = "kern";
    static wrr_site_desc site = {WRR_SITE_MAGIC, 12, file, func};
    char path[] = "/tmp/wr-sink-XXXXXX";
    wr_writer_options wo = {.chunk_bytes = 4096};
    wr_error err;
    wr_writer *w = open_temp_writer(path, &wo, &err);
    cr_assert_not_null(w, "%s", err.msg);
    wrr_writer_sink ws;
    wrr_sink sink;
    wrr_writer_sink_init(&ws, w, &sink);
    uint32_t kid = wr_writer_kernel(w, "kern");
    uint32_t aid = wr_writer_alloc(w, 0x1000, 1 << 20, WR_SPACE_GLOBAL, "data");
    wrr_sim sim;
    cr_assert_eq(wrr_sim_init(&sim, 6, 1), 0);
    wrr_drain d;
    wrr_drain_options o = {.read_mem = host_read, .flush_events = 50};
    cr_assert_eq(wrr_drain_init(&d, &sim.ring, &sink, &o), 0);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ALLOC;
    ev.u.alloc.alloc = aid;
    wrr_drain_post(&d, &ev);
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch = (wr_launch){.launch = 1, .kernel = kid, .grid = {4, 1, 1},
                              .block_dim = {64, 1, 1}, .cluster = {1, 1, 1}};
    wrr_drain_post(&d, &ev);
    wrr_drain_step(&d);
    uint64_t rec[2 * WRR_MAX_SLOTS];
    unsigned written = 0, dropped = 0;
    for (unsigned i = 0; i < 300; i++) {
        wrr_access_desc a;
        memset(&a, 0, sizeof a);
        a.block = i % 4;
        a.warp = i % 2;
        a.active_mask = WR_FULL_MASK;
        a.op = i % 3 ? WR_OP_LOAD : WR_OP_STORE;
        a.size = 4;
        a.site_addr = (uintptr_t)&site;
        for (unsigned k = 0; k < 32; k++)
            a.lane_addr[k] = 0x1000 + i * 128 + (i % 7 == 0 ? ((k * 5) % 32) : k) * 4;
        wrr_encode_access(&a, rec);
        int r = wrr_sim_write(&sim, rec, 32, 0);
        r ? written++ : dropped++;
        if (i % 25 == 24)
            wrr_drain_step(&d);
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_END;
    ev.u.kernel_end.launch = 1;
    wrr_drain_post(&d, &ev);
    cr_assert_eq(wrr_drain_finish(&d), 0, "%s", d.error);
    cr_assert_gt(dropped, 0, "the small ring in drop mode must have dropped");
    cr_assert_eq(wr_writer_close(w, &err), 0, "%s", err.msg);
    cr_assert_gt(d.st.flushes, 3);

    wr_reader *r = wr_reader_open(path, &err);
    cr_assert_not_null(r, "%s", err.msg);
    wr_batch b;
    unsigned accesses = 0, lost = 0, ends = 0;
    uint64_t lost_count = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++) {
            const wr_event *e = &b.events[i];
            if (e->kind == WR_EV_ACCESS) {
                cr_assert_eq(e->u.access.launch, 1);
                const wr_site *s = wr_catalog_site(wr_reader_catalog(r), e->site);
                cr_assert_not_null(s);
                cr_assert_str_eq(s->file, "litmus.cu");
                cr_assert_eq(s->line, 12);
                cr_assert_str_eq(s->function, "kern");
                accesses++;
            } else if (e->kind == WR_EV_LOST) {
                lost++;
                lost_count += e->u.lost.count;
            } else if (e->kind == WR_EV_KERNEL_END) {
                ends++;
            }
        }
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(accesses, written);
    cr_assert_eq(lost_count, dropped);
    cr_assert_gt(lost, 0);
    cr_assert_eq(ends, 1);
    cr_assert_eq(wr_reader_stats_get(r)->lost_events, dropped);
    wr_reader_close(r);
    wrr_drain_destroy(&d);
    wrr_sim_free(&sim);
    unlink(path);
}

/* Cluster and grid barriers from the ring keep their scope and their full
 * expected count through the file. */
Test(writer_sink, barrier_scopes_to_file_and_back)
{
    sink_rig g;
    rig_open(&g, "coop",
             (wr_launch){.grid = {4, 1, 1}, .block_dim = {64, 1, 1}, .cluster = {2, 1, 1}});
    uint64_t rec[4];
    const struct { uint32_t block, aux; uint8_t scope; } sent[] = {
        {0, WRR_BAR_AUX_BLOCK(2, 64), WR_BAR_BLOCK},
        {1, 128, WR_BAR_CLUSTER},
        {3, 0x01000000u, WR_BAR_GRID},
    };
    for (unsigned i = 0; i < 3; i++) {
        wrr_encode_sync(rec, WRR_K_BARRIER, sent[i].block, 1, WR_FULL_MASK, sent[i].aux,
                        sent[i].scope, 0, 0);
        cr_assert_eq(wrr_sim_write(&g.sim, rec, 32, 0), 1);
    }
    wr_reader *r = rig_read_back(&g);
    wr_error err;
    wr_batch b;
    wr_barrier got[3];
    unsigned n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            if (b.events[i].kind == WR_EV_BARRIER && n < 3)
                got[n++] = b.events[i].u.barrier;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert_eq(got[0].scope, WR_BAR_BLOCK);
    cr_assert_eq(got[0].barrier_id, 2);
    cr_assert_eq(got[0].expected, 64);
    cr_assert_eq(got[1].scope, WR_BAR_CLUSTER);
    cr_assert_eq(got[1].barrier_id, 0);
    cr_assert_eq(got[1].expected, 128);
    cr_assert_eq(got[1].block, 1);
    cr_assert_eq(got[2].scope, WR_BAR_GRID);
    cr_assert_eq(got[2].barrier_id, 0);
    cr_assert_eq(got[2].expected, 0x01000000u);
    cr_assert_eq(got[2].block, 3);
    cr_assert_eq(got[2].warp, 1);
    rig_free(&g, r);
}

/* Split barriers from the ring keep their mode, scope and count through
 * the file (format 1.3's BARRIER b2). */
Test(writer_sink, barrier_modes_to_file_and_back)
{
    sink_rig g;
    rig_open(&g, "split",
             (wr_launch){.grid = {4, 1, 1}, .block_dim = {64, 1, 1}, .cluster = {2, 1, 1}});
    uint64_t rec[4];
    static const struct { uint32_t block, aux; uint8_t scope, mode; } sent[] = {
        {0, WRR_BAR_AUX_BLOCK(1, 64), WR_BAR_BLOCK, WR_BARMODE_ARRIVE},
        {0, WRR_BAR_AUX_BLOCK(1, 64), WR_BAR_BLOCK, WR_BARMODE_SYNC},
        {1, 128, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE},
        {2, 128, WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {1, 0, WR_BAR_CLUSTER, WR_BARMODE_WAIT},
        {3, 256, WR_BAR_GRID, WR_BARMODE_ARRIVE},
        {3, 0, WR_BAR_GRID, WR_BARMODE_WAIT},
    };
    enum { N = sizeof sent / sizeof sent[0] };
    for (unsigned i = 0; i < N; i++) {
        wrr_encode_sync(rec, WRR_K_BARRIER, sent[i].block, 1, WR_FULL_MASK, sent[i].aux,
                        sent[i].scope, sent[i].mode, 0);
        cr_assert_eq(wrr_sim_write(&g.sim, rec, 32, 0), 1);
    }
    wr_reader *r = rig_read_back(&g);
    wr_error err;
    wr_batch b;
    wr_barrier got[N];
    unsigned n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            if (b.events[i].kind == WR_EV_BARRIER && n < N)
                got[n++] = b.events[i].u.barrier;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n, N);
    for (unsigned i = 0; i < N; i++) {
        cr_assert_eq(got[i].mode, sent[i].mode, "barrier %u: mode %u", i, got[i].mode);
        cr_assert_eq(got[i].scope, sent[i].scope, "barrier %u", i);
        cr_assert_eq(got[i].block, sent[i].block, "barrier %u", i);
        cr_assert_eq(got[i].expected,
                     sent[i].scope == WR_BAR_BLOCK ? sent[i].aux >> 8 : sent[i].aux, "barrier %u", i);
    }
    cr_assert_eq(got[0].barrier_id, 1);
    rig_free(&g, r);
}

/* mbarriers from the ring (3-slot records) keep their scope, mode, offset
 * and count or parity through the file (format 1.3's BARRIER scope 1). */
Test(writer_sink, mbarriers_to_file_and_back)
{
    sink_rig g;
    rig_open(&g, "mbar",
             (wr_launch){.grid = {2, 1, 1}, .block_dim = {64, 1, 1}, .cluster = {1, 1, 1},
                         .shared_bytes = 1024});
    uint64_t rec[2 * WRR_MBAR_SLOTS];
    static const struct { uint32_t block, mask, offset, aux; uint8_t mode; } sent[] = {
        {0, 0x1, 0x200, 64, WR_BARMODE_INIT},
        {0, WR_FULL_MASK, 0x200, 0, WR_BARMODE_ARRIVE},
        {0, 0x3, 0x208, 5, WR_BARMODE_ARRIVE},
        {1, WR_FULL_MASK, 0x200, 0, WR_BARMODE_ARRIVE_RELAXED},
        {0, WR_FULL_MASK, 0x200, 0, WR_BARMODE_WAIT},
        {1, 0xffff0000u, WR_SHARED_LIMIT - 8, 1, WR_BARMODE_WAIT},
    };
    enum { N = sizeof sent / sizeof sent[0] };
    for (unsigned i = 0; i < N; i++) {
        wrr_encode_mbarrier(rec, sent[i].block, 1, sent[i].mask, sent[i].offset, sent[i].aux,
                            sent[i].mode, 0);
        cr_assert_eq(wrr_sim_write(&g.sim, rec, 32, 0), 1);
    }
    wr_reader *r = rig_read_back(&g);
    wr_error err;
    wr_batch b;
    wr_barrier got[N];
    unsigned n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++)
            if (b.events[i].kind == WR_EV_BARRIER && n < N)
                got[n++] = b.events[i].u.barrier;
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n, N);
    for (unsigned i = 0; i < N; i++) {
        cr_assert_eq(got[i].scope, WR_BAR_MBARRIER, "mbarrier %u", i);
        cr_assert_eq(got[i].mode, sent[i].mode, "mbarrier %u: mode %u", i, got[i].mode);
        cr_assert_eq(got[i].barrier_id, sent[i].offset, "mbarrier %u", i);
        cr_assert_eq(got[i].expected, sent[i].aux, "mbarrier %u", i);
        cr_assert_eq(got[i].active_mask, sent[i].mask, "mbarrier %u", i);
        cr_assert_eq(got[i].block, sent[i].block, "mbarrier %u", i);
        cr_assert_eq(got[i].warp, 1, "mbarrier %u", i);
    }
    rig_free(&g, r);
}

/* A DSMEM access from the ring keeps its space and every lane's (owner,
 * offset) through the file: block 1 of a cluster of 4 stores to words of
 * blocks 0 and 2, and block 0 reads its own (SHARED). */
Test(writer_sink, dsmem_access_to_file_and_back)
{
    sink_rig g;
    rig_open(&g, "dsmem",
             (wr_launch){.grid = {4, 1, 1}, .block_dim = {32, 1, 1}, .cluster = {4, 1, 1},
                         .shared_bytes = 256});
    uint64_t rec[2 * WRR_MAX_SLOTS];
    wrr_access_desc a;
    memset(&a, 0, sizeof a);
    a.block = 1;
    a.active_mask = WR_FULL_MASK;
    a.op = WR_OP_STORE;
    a.space = WR_SPACE_DSMEM;
    a.size = 4;
    for (uint32_t i = 0; i < 32; i++)
        a.lane_addr[i] = wr_dsmem_addr(i & 1 ? 2 : 0, 4 * (i / 2));
    wrr_encode_access(&a, rec);
    cr_assert_eq(wrr_sim_write(&g.sim, rec, 32, 0), 1);
    memset(&a, 0, sizeof a);
    a.block = 0;
    a.active_mask = WR_FULL_MASK;
    a.op = WR_OP_LOAD;
    a.space = WR_SPACE_SHARED;
    a.size = 4;
    for (uint32_t i = 0; i < 32; i++)
        a.lane_addr[i] = 4 * i;
    wrr_encode_access(&a, rec);
    cr_assert_eq(wrr_sim_write(&g.sim, rec, 32, 0), 1);
    wr_reader *r = rig_read_back(&g);
    wr_error err;
    wr_batch b;
    unsigned n = 0;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1) {
        for (size_t i = 0; i < b.count; i++) {
            const wr_event *e = &b.events[i];
            if (e->kind != WR_EV_ACCESS)
                continue;
            const wr_access *x = &e->u.access;
            if (n == 0) {
                cr_assert_eq(x->space, WR_SPACE_DSMEM);
                cr_assert_eq(x->block, 1);
                cr_assert_eq(x->op, WR_OP_STORE);
                for (unsigned l = 0; l < 32; l++) {
                    uint64_t ad = wr_access_lane_addr(x, l);
                    cr_assert_eq(wr_dsmem_block(ad), l & 1 ? 2u : 0u, "lane %u", l);
                    cr_assert_eq(wr_dsmem_offset(ad), 4 * (l / 2), "lane %u", l);
                }
            } else {
                cr_assert_eq(x->space, WR_SPACE_SHARED);
                cr_assert_eq(x->block, 0);
                cr_assert_eq(wr_access_lane_addr(x, 5), 20);
            }
            n++;
        }
        wr_batch_release(&b);
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n, 2);
    rig_free(&g, r);
}

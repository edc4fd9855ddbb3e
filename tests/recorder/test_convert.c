/* Record encoding (host mirror of the device encoder) and conversion to
 * wr_event, for every record kind and address mode. */
#include <criterion/criterion.h>
#include <string.h>

#include "convert.h"

static uint64_t words[2 * WRR_MAX_SLOTS];
static uint64_t lanes[32];

static wrr_access_desc base_desc(void)
{
    wrr_access_desc d;
    memset(&d, 0, sizeof d);
    d.block = 7;
    d.warp = 3;
    d.active_mask = WR_FULL_MASK;
    d.op = WR_OP_LOAD;
    d.size = 4;
    d.site_addr = 0x1234;
    return d;
}

static wr_event roundtrip(const wrr_access_desc *d, unsigned *nslots)
{
    *nslots = wrr_encode_access(d, words);
    wr_event ev;
    const char *why = NULL;
    cr_assert_eq(wrr_convert(words, 2 * *nslots, 42, 9, &ev, lanes, &why), 0, "%s", why);
    cr_assert_eq(ev.kind, WR_EV_ACCESS);
    cr_assert_eq(ev.site, 9);
    cr_assert_eq(ev.u.access.launch, 42);
    cr_assert_eq(ev.u.access.block, d->block);
    cr_assert_eq(ev.u.access.warp, d->warp);
    cr_assert_eq(ev.u.access.active_mask, d->active_mask);
    cr_assert_eq(ev.u.access.size, d->size);
    cr_assert_eq(ev.u.access.op, d->op);
    cr_assert_eq(ev.u.access.atomic_op, d->atomic_op);
    cr_assert_eq(ev.u.access.scope, d->scope);
    cr_assert_eq(ev.u.access.order, d->order);
    cr_assert_eq(ev.u.access.space, d->space);
    for (unsigned i = 0; i < 32; i++)
        if (d->active_mask >> i & 1)
            cr_assert_eq(wr_access_lane_addr(&ev.u.access, i), d->lane_addr[i],
                         "lane %u: %#llx != %#llx", i,
                         (unsigned long long)wr_access_lane_addr(&ev.u.access, i),
                         (unsigned long long)d->lane_addr[i]);
    return ev;
}

Test(convert, uniform)
{
    wrr_access_desc d = base_desc();
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = 0x7f0000001000ull;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_UNIFORM);
    cr_assert_eq(ev.u.access.base, 0x7f0000001000ull);
}

Test(convert, strided_coalesced_full_warp)
{
    wrr_access_desc d = base_desc();
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = 0x7f0000002000ull + 4u * (unsigned)i;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(ev.u.access.stride, 4);
    cr_assert_eq(ev.u.access.base, 0x7f0000002000ull);
}

Test(convert, strided_partial_mask_leader_not_lane0)
{
    wrr_access_desc d = base_desc();
    d.active_mask = 0xf0f0f000u;      /* leader lane 12, next active 13 */
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = (d.active_mask >> i & 1) ? 0x10000ull + 8u * (unsigned)i : 0xdead;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(ev.u.access.stride, 8);
    cr_assert_eq(ev.u.access.base, 0x10000ull);
}

Test(convert, strided_negative_and_gapped)
{
    wrr_access_desc d = base_desc();
    d.active_mask = 0x80000101u;      /* lanes 0, 8, 31 */
    d.lane_addr[0] = 0x100000;
    d.lane_addr[8] = 0x100000 - 8 * 16;
    d.lane_addr[31] = 0x100000 - 31 * 16;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(ev.u.access.stride, -16);
}

Test(convert, gapped_not_divisible_is_vector)
{
    wrr_access_desc d = base_desc();
    d.active_mask = 0x5u;             /* lanes 0 and 2, difference 5: no integer stride */
    d.lane_addr[0] = 0x1000;
    d.lane_addr[2] = 0x1005;
    d.size = 1;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_VECTOR);
    cr_assert_eq(n, 11);
    cr_assert_eq(ev.u.access.lane_addr[1], 0, "inactive lanes read as 0");
}

Test(convert, vector32_gather)
{
    wrr_access_desc d = base_desc();
    d.size = 8;
    d.op = WR_OP_STORE;
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = 0x7f0000100000ull + (uint64_t)((i * 7919) % 1000) * 8 - (i == 5 ? 0x100000 : 0);
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(n, 11);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_VECTOR);
}

Test(convert, vector64_far_apart)
{
    wrr_access_desc d = base_desc();
    d.active_mask = 0x0000ffffu;
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = (i & 1) ? 0x7f0000000000ull + (uint64_t)i * 64 : 0x100000000ull * (uint64_t)(i + 1);
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(n, 19);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_VECTOR);
    for (unsigned i = 16; i < 32; i++)
        cr_assert_eq(ev.u.access.lane_addr[i], 0);
}

Test(convert, single_lane)
{
    wrr_access_desc d = base_desc();
    d.active_mask = 1u << 17;
    d.lane_addr[17] = 0x42;
    d.space = WR_SPACE_SHARED;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_UNIFORM);
    cr_assert_eq(ev.u.access.space, WR_SPACE_SHARED);
}

Test(convert, cas_success_and_atomic_fields)
{
    wrr_access_desc d = base_desc();
    d.op = WR_OP_ATOMIC_RMW;
    d.atomic_op = WR_AOP_CAS;
    d.scope = WR_SCOPE_BLOCK;
    d.order = WR_ORDER_RELAXED;
    d.active_mask = 0x0000000fu;
    d.cas_success = 0xf0000002u;      /* bits outside the mask must not survive */
    for (int i = 0; i < 32; i++)
        d.lane_addr[i] = 0x5000;
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.cas_success, 0x2u);
    /* and a non-CAS atomic carries no success mask */
    d.atomic_op = WR_AOP_EXCH;
    d.scope = WR_SCOPE_SYSTEM;
    ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.cas_success, 0);
    cr_assert_eq(ev.u.access.scope, WR_SCOPE_SYSTEM);
}

Test(convert, every_size)
{
    unsigned sizes[] = {1, 2, 4, 8, 16};
    for (unsigned k = 0; k < 5; k++) {
        wrr_access_desc d = base_desc();
        d.size = (uint8_t)sizes[k];
        for (int i = 0; i < 32; i++)
            d.lane_addr[i] = 0x9000 + sizes[k] * (unsigned)i;
        unsigned n;
        wr_event ev = roundtrip(&d, &n);
        cr_assert_eq(ev.u.access.size, sizes[k]);
        cr_assert_eq(ev.u.access.stride, (int64_t)sizes[k]);
    }
}

Test(convert, sync_records)
{
    wr_event ev;
    const char *why;
    unsigned n = wrr_encode_sync(words, WRR_K_BARRIER, 5, 2, 0xffffu, WRR_BAR_AUX_BLOCK(3, 256),
                                 WR_BAR_BLOCK, 0, 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(wrr_convert(words, 4, 8, 0, &ev, lanes, &why), 0);
    cr_assert_eq(ev.kind, WR_EV_BARRIER);
    cr_assert_eq(ev.u.barrier.launch, 8);
    cr_assert_eq(ev.u.barrier.block, 5);
    cr_assert_eq(ev.u.barrier.warp, 2);
    cr_assert_eq(ev.u.barrier.active_mask, 0xffffu);
    cr_assert_eq(ev.u.barrier.barrier_id, 3);
    cr_assert_eq(ev.u.barrier.expected, 256);
    cr_assert_eq(ev.u.barrier.scope, WR_BAR_BLOCK);

    wrr_encode_sync(words, WRR_K_WARP_SYNC, 1, 0, 0x0000ff00u, 0, 0, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 8, 0, &ev, lanes, &why), 0);
    cr_assert_eq(ev.kind, WR_EV_WARP_SYNC);
    cr_assert_eq(ev.u.warp_sync.mask, 0x0000ff00u);

    wrr_encode_sync(words, WRR_K_FENCE, 1, 4, 0x1u, 0, WR_SCOPE_DEVICE, WR_ORDER_SC, 0);
    cr_assert_eq(wrr_convert(words, 4, 8, 0, &ev, lanes, &why), 0);
    cr_assert_eq(ev.kind, WR_EV_FENCE);
    cr_assert_eq(ev.u.fence.scope, WR_SCOPE_DEVICE);
    cr_assert_eq(ev.u.fence.order, WR_ORDER_SC);
    cr_assert_eq(ev.u.fence.warp, 4);

    wrr_encode_sync(words, WRR_K_BLOCK_ENTER, 99, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 8, 0, &ev, lanes, &why), 0);
    cr_assert_eq(ev.kind, WR_EV_BLOCK_ENTER);
    cr_assert_eq(ev.u.block.block, 99);
    wrr_encode_sync(words, WRR_K_BLOCK_EXIT, 99, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 8, 0, &ev, lanes, &why), 0);
    cr_assert_eq(ev.kind, WR_EV_BLOCK_EXIT);
}

/* A cluster or grid barrier's aux word is its whole expected count: no
 * barrier id is split off its low byte and no bit of the count is lost. */
Test(convert, cluster_and_grid_barriers)
{
    wr_event ev;
    const char *why = NULL;
    /* cluster.sync() of a 2-block cluster of 1024-thread blocks: 2048 needs
     * more than the 24 bits a block barrier has after its id */
    wrr_encode_sync(words, WRR_K_BARRIER, 6, 31, WR_FULL_MASK, 2048u, WR_BAR_CLUSTER, 0, 0x77);
    cr_assert_eq(wrr_convert(words, 4, 3, 5, &ev, lanes, &why), 0, "%s", why);
    cr_assert_eq(ev.kind, WR_EV_BARRIER);
    cr_assert_eq(ev.site, 5);
    cr_assert_eq(ev.u.barrier.launch, 3);
    cr_assert_eq(ev.u.barrier.block, 6);
    cr_assert_eq(ev.u.barrier.warp, 31);
    cr_assert_eq(ev.u.barrier.active_mask, WR_FULL_MASK);
    cr_assert_eq(ev.u.barrier.scope, WR_BAR_CLUSTER);
    cr_assert_eq(ev.u.barrier.barrier_id, 0);
    cr_assert_eq(ev.u.barrier.expected, 2048);

    /* low byte set: a block barrier would read it as id 3 */
    wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 0x1u, 0x00012303u, WR_BAR_CLUSTER, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 3, 0, &ev, lanes, &why), 0, "%s", why);
    cr_assert_eq(ev.u.barrier.barrier_id, 0);
    cr_assert_eq(ev.u.barrier.expected, 0x00012303u);
    cr_assert_eq(ev.u.barrier.active_mask, 0x1u);

    /* grid.sync(): a count above 2^24 survives, the saturated 2^32-1 too */
    wrr_encode_sync(words, WRR_K_BARRIER, 131, 7, 0xffff0000u, 0x01000040u, WR_BAR_GRID, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 9, 0, &ev, lanes, &why), 0, "%s", why);
    cr_assert_eq(ev.u.barrier.scope, WR_BAR_GRID);
    cr_assert_eq(ev.u.barrier.barrier_id, 0);
    cr_assert_eq(ev.u.barrier.expected, 0x01000040u);
    cr_assert_eq(ev.u.barrier.block, 131);
    cr_assert_eq(ev.u.barrier.warp, 7);
    cr_assert_eq(ev.u.barrier.active_mask, 0xffff0000u);
    wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, UINT32_MAX, WR_BAR_GRID, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 9, 0, &ev, lanes, &why), 0, "%s", why);
    cr_assert_eq(ev.u.barrier.expected, UINT32_MAX);
    cr_assert_eq(ev.u.barrier.barrier_id, 0);

    /* the barrier scope sits in the header's scope field */
    cr_assert_eq(WRR_W0_SCOPE(words[0]), WR_BAR_GRID);
}

/* Split barriers (format 1.3): the mode rides in the header's order field,
 * which a barrier has no other use for, and comes out as the event's mode
 * with the scope's usual id and count. */
Test(convert, barrier_modes)
{
    wr_event ev;
    const char *why = NULL;
    static const struct {
        uint8_t scope, mode;
        uint32_t aux, id, expected;
    } ok[] = {
        {WR_BAR_BLOCK, WR_BARMODE_SYNC, WRR_BAR_AUX_BLOCK(0, 128), 0, 128},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE, WRR_BAR_AUX_BLOCK(7, 64), 7, 64},   /* bar.arrive 7, 64 */
        {WR_BAR_CLUSTER, WR_BARMODE_SYNC, 2048, 0, 2048},
        {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 2048, 0, 2048},
        {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE, 0, 0, 0},                       /* 0: all of them */
        {WR_BAR_CLUSTER, WR_BARMODE_ARRIVE_RELAXED, 0x00012303u, 0, 0x00012303u},
        {WR_BAR_CLUSTER, WR_BARMODE_WAIT, 0, 0, 0},
        {WR_BAR_GRID, WR_BARMODE_SYNC, 96, 0, 96},
        {WR_BAR_GRID, WR_BARMODE_ARRIVE, UINT32_MAX, 0, UINT32_MAX},
        {WR_BAR_GRID, WR_BARMODE_WAIT, 0, 0, 0},
    };
    for (unsigned i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        why = NULL;
        wrr_encode_sync(words, WRR_K_BARRIER, 4, 3, 0x0000ffffu, ok[i].aux, ok[i].scope,
                        ok[i].mode, 0x40);
        cr_assert_eq(WRR_W0_BARMODE(words[0]), ok[i].mode, "case %u", i);
        cr_assert_null(wrr_check_header(words[0]), "case %u", i);
        cr_assert_eq(wrr_convert(words, 4, 2, 9, &ev, lanes, &why), 0, "case %u: %s", i, why);
        cr_assert_eq(ev.kind, WR_EV_BARRIER, "case %u", i);
        cr_assert_eq(ev.u.barrier.mode, ok[i].mode, "case %u: mode %u", i, ev.u.barrier.mode);
        cr_assert_eq(ev.u.barrier.scope, ok[i].scope, "case %u", i);
        cr_assert_eq(ev.u.barrier.barrier_id, ok[i].id, "case %u", i);
        cr_assert_eq(ev.u.barrier.expected, ok[i].expected, "case %u", i);
        cr_assert_eq(ev.u.barrier.launch, 2);
        cr_assert_eq(ev.u.barrier.block, 4);
        cr_assert_eq(ev.u.barrier.warp, 3);
        cr_assert_eq(ev.u.barrier.active_mask, 0x0000ffffu);
        cr_assert_eq(ev.site, 9);
    }

    /* modes the header cannot hold: the 3 bits go to 7 */
    for (unsigned mode = WR_BARMODE_MAX + 1; mode <= 7; mode++) {
        why = NULL;
        wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, 64, WR_BAR_CLUSTER, (uint8_t)mode, 0);
        cr_assert_str_eq(wrr_check_header(words[0]), "barrier mode out of range", "mode %u", mode);
        cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1, "mode %u", mode);
        cr_assert_str_eq(why, "barrier mode out of range");
    }

    /* modes that do not fit their scope or count: a sound header, a corrupt
     * record (wr_barrier_mode_problem) */
    static const struct {
        uint8_t scope, mode;
        uint32_t aux;
        const char *why;
    } bad[] = {
        {WR_BAR_BLOCK, WR_BARMODE_WAIT, WRR_BAR_AUX_BLOCK(0, 0), "a wait at a block barrier"},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE_RELAXED, WRR_BAR_AUX_BLOCK(1, 64),
         "a relaxed arrive at a barrier other than a cluster's"},
        {WR_BAR_GRID, WR_BARMODE_ARRIVE_RELAXED, 96,
         "a relaxed arrive at a barrier other than a cluster's"},
        {WR_BAR_BLOCK, WR_BARMODE_ARRIVE, WRR_BAR_AUX_BLOCK(3, 0),
         "a block barrier's arrive without its thread count"},
        {WR_BAR_CLUSTER, WR_BARMODE_WAIT, 64, "a barrier wait with a thread count"},
        {WR_BAR_GRID, WR_BARMODE_WAIT, 1, "a barrier wait with a thread count"},
        {WR_BAR_BLOCK, WR_BARMODE_INIT, WRR_BAR_AUX_BLOCK(0, 64),
         "an init of a barrier other than an mbarrier"},
        {WR_BAR_CLUSTER, WR_BARMODE_INIT, 64, "an init of a barrier other than an mbarrier"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, bad[i].aux, bad[i].scope, bad[i].mode, 0);
        cr_assert_null(wrr_check_header(words[0]), "case %u", i);
        cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1, "case %u accepted", i);
        cr_assert(why && strstr(why, bad[i].why), "case %u: %s", i, why ? why : "(none)");
    }
}

/* mbarriers (format 1.3): 3 slots, the offset in w4, the count or parity
 * in the aux word, the mode in the order field; every valid one becomes
 * the trace's record, every invalid one is corrupt. */
Test(convert, mbarriers)
{
    wr_event ev;
    const char *why = NULL;
    static const struct {
        uint8_t mode;
        uint64_t offset;
        uint32_t aux;
    } ok[] = {
        {WR_BARMODE_INIT, 0, 1},
        {WR_BARMODE_INIT, 0x1f8, WR_MBARRIER_COUNT_MAX},
        {WR_BARMODE_ARRIVE, 0x100, 0},                      /* once */
        {WR_BARMODE_ARRIVE, 0x100, 3},
        {WR_BARMODE_ARRIVE_RELAXED, WR_SHARED_LIMIT - 8, 0},
        {WR_BARMODE_ARRIVE_RELAXED, 8, WR_MBARRIER_COUNT_MAX},
        {WR_BARMODE_WAIT, 0x100, 0},
        {WR_BARMODE_WAIT, 0x100, 1},
    };
    for (unsigned i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        why = NULL;
        unsigned n = wrr_encode_mbarrier(words, 6, 3, 0x0000ff01u, ok[i].offset, ok[i].aux,
                                         ok[i].mode, 0x40);
        cr_assert_eq(n, WRR_MBAR_SLOTS);
        cr_assert_eq(WRR_W0_NSLOTS(words[0]), 3, "case %u", i);
        cr_assert_eq(WRR_W0_SCOPE(words[0]), WR_BAR_MBARRIER, "case %u", i);
        cr_assert_eq(WRR_W0_BARMODE(words[0]), ok[i].mode, "case %u", i);
        cr_assert_null(wrr_check_header(words[0]), "case %u", i);
        cr_assert_eq(wrr_convert(words, 6, 2, 9, &ev, lanes, &why), 0, "case %u: %s", i, why);
        cr_assert_eq(ev.kind, WR_EV_BARRIER, "case %u", i);
        const wr_barrier *b = &ev.u.barrier;
        cr_assert_eq(b->scope, WR_BAR_MBARRIER, "case %u", i);
        cr_assert_eq(b->mode, ok[i].mode, "case %u: mode %u", i, b->mode);
        cr_assert_eq(b->barrier_id, ok[i].offset, "case %u: offset %#x", i, b->barrier_id);
        cr_assert_eq(b->expected, ok[i].aux, "case %u: expected %u", i, b->expected);
        cr_assert_eq(b->launch, 2);
        cr_assert_eq(b->block, 6);
        cr_assert_eq(b->warp, 3);
        cr_assert_eq(b->active_mask, 0x0000ff01u);
        cr_assert_eq(ev.site, 9);
        /* the third slot is part of the record: 2 slots' words are short */
        cr_assert_eq(wrr_convert(words, 4, 2, 9, &ev, lanes, &why), -1, "case %u", i);
        cr_assert_str_eq(why, "record shorter than its slot count");
    }

    /* a sound header, a record the trace cannot hold (wr_barrier_mode_problem,
     * or the offset word itself) */
    static const struct {
        uint8_t mode;
        uint64_t offset;
        uint32_t aux;
        const char *why;
    } bad[] = {
        {WR_BARMODE_SYNC, 0x100, 0, "an mbarrier has no sync"},
        {WR_BARMODE_ARRIVE, 0x104, 0, "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_WAIT, WR_SHARED_LIMIT, 0,
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        /* cvta.to.shared of a pointer outside shared memory: its low 32
         * bits (8 here) must not pass for an offset */
        {WR_BARMODE_ARRIVE, (1ull << 32) | 8, 0,
         "an mbarrier's shared offset not 8-byte aligned or past 16 MiB"},
        {WR_BARMODE_INIT, 8, 0, "an mbarrier's init count out of range"},
        {WR_BARMODE_INIT, 8, WR_MBARRIER_COUNT_MAX + 1, "an mbarrier's init count out of range"},
        {WR_BARMODE_ARRIVE, 8, WR_MBARRIER_COUNT_MAX + 1, "an mbarrier arrive's count out of range"},
        {WR_BARMODE_ARRIVE_RELAXED, 8, UINT32_MAX, "an mbarrier arrive's count out of range"},
        {WR_BARMODE_WAIT, 8, 2, "an mbarrier wait's parity is not 0 or 1"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        wrr_encode_mbarrier(words, 0, 0, 1, bad[i].offset, bad[i].aux, bad[i].mode, 0);
        cr_assert_null(wrr_check_header(words[0]), "case %u", i);
        cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1, "case %u accepted", i);
        cr_assert(why && strstr(why, bad[i].why), "case %u: %s", i, why ? why : "(none)");
    }
    /* w5 is reserved */
    wrr_encode_mbarrier(words, 0, 0, 1, 8, 0, WR_BARMODE_ARRIVE, 0);
    words[5] = 1;
    cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "reserved word of an mbarrier record is not 0");
    /* modes the header cannot hold */
    for (unsigned mode = WR_BARMODE_MAX + 1; mode <= 7; mode++) {
        wrr_encode_mbarrier(words, 0, 0, 1, 8, 0, (uint8_t)mode, 0);
        cr_assert_str_eq(wrr_check_header(words[0]), "barrier mode out of range", "mode %u", mode);
        cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1, "mode %u", mode);
    }
    /* an mbarrier's record of 2 slots, or of 4 */
    wrr_encode_mbarrier(words, 0, 0, 1, 8, 0, WR_BARMODE_ARRIVE, 0);
    words[0] = (words[0] & ~(31ull << 37)) | (4ull << 37);
    cr_assert_str_eq(wrr_check_header(words[0]), "slot count of an mbarrier record is not 3");
    /* and a block barrier's of 3 is no mbarrier */
    wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, WRR_BAR_AUX_BLOCK(0, 64), WR_BAR_BLOCK, 0, 0);
    words[0] = (words[0] & ~(31ull << 37)) | (3ull << 37);
    cr_assert_str_eq(wrr_check_header(words[0]), "slot count of a sync record is not 2");
}

Test(convert, malformed_records_rejected)
{
    wr_event ev;
    const char *why = NULL;
    wrr_encode_sync(words, WRR_K_FENCE, 0, 0, 1, 0, WR_SCOPE_NONE, WR_ORDER_SC, 0);
    cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "fence scope out of range");

    words[0] = WRR_W0(1, 9, 2, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "unknown record kind");

    /* a barrier scope that names no set of threads: system and beyond */
    unsigned bad_scopes[] = {WR_SCOPE_SYSTEM, 5, 7};
    for (unsigned i = 0; i < 3; i++) {
        why = NULL;
        wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, 64, (uint8_t)bad_scopes[i], 0, 0);
        cr_assert_str_eq(wrr_check_header(words[0]), "barrier scope out of range",
                         "scope %u", bad_scopes[i]);
        cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1, "scope %u",
                     bad_scopes[i]);
        cr_assert_str_eq(why, "barrier scope out of range");
    }

    /* scope 1 is an mbarrier (1.3), whose record has 3 slots: a 2-slot
     * one (a block barrier written with the block's wr_scope, 1, say) is
     * corrupt */
    why = NULL;
    wrr_encode_sync(words, WRR_K_BARRIER, 0, 0, 1, 64, WR_BAR_MBARRIER, WR_BARMODE_ARRIVE, 0);
    cr_assert_str_eq(wrr_check_header(words[0]), "slot count of an mbarrier record is not 3");
    cr_assert_eq(wrr_convert(words, 4, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "slot count of an mbarrier record is not 3");

    words[0] = WRR_W0(1, WRR_K_ACCESS, 3, WR_OP_LOAD, 0, 0, 0, 0, 2, WRR_A_VECTOR32);
    cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "slot count does not match the address mode");

    words[0] = WRR_W0(1, WRR_K_ACCESS, 3, WR_OP_LOAD, WR_AOP_ADD, 0, 0, 0, 2, WRR_A_UNIFORM);
    cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "atomic operation does not match the memory operation");

    words[0] = WRR_W0(1, WRR_K_ACCESS, 3, WR_OP_LOAD, 0, 0, 0, 0, 5, WRR_A_UNIFORM);
    cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "access size out of range");

    words[0] = WRR_W0(1, WRR_K_ACCESS, 11, WR_OP_LOAD, 0, 0, 0, 0, 2, WRR_A_VECTOR32);
    cr_assert_eq(wrr_convert(words, 6, 1, 0, &ev, lanes, &why), -1);
    cr_assert_str_eq(why, "record shorter than its slot count");
}

/* Distributed shared memory (space 3): each lane's address is (owner
 * block, offset), the trace's own encoding, carried through unchanged. */
Test(convert, dsmem_lanes_in_two_owner_blocks)
{
    cr_assert_eq(WRR_DSMEM_ADDR(5, 0x80), wr_dsmem_addr(5, 0x80), "the device's encoding is the trace's");
    cr_assert_eq(WRR_DSMEM_ADDR(0xffffffffu, 0xfffffffcu), wr_dsmem_addr(0xffffffffu, 0xfffffffcu));

    /* block 1 of a cluster of 4 gathers from blocks 0 (even lanes) and 2 (odd) */
    wrr_access_desc d = base_desc();
    d.block = 1;
    d.space = WR_SPACE_DSMEM;
    for (uint32_t i = 0; i < 32; i++)
        d.lane_addr[i] = wr_dsmem_addr(i & 1 ? 2 : 0, 0x100 + 4 * (i / 2));
    unsigned n;
    wr_event ev = roundtrip(&d, &n);
    cr_assert_eq(n, 19, "owners 2^32 apart: no 32-bit delta holds them");
    cr_assert_eq(ev.u.access.space, WR_SPACE_DSMEM);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_VECTOR);
    cr_assert_eq(ev.u.access.block, 1, "the issuing block stays the event's block");
    for (unsigned i = 0; i < 32; i++) {
        uint64_t a = wr_access_lane_addr(&ev.u.access, i);
        cr_assert_eq(wr_dsmem_block(a), i & 1 ? 2u : 0u, "lane %u", i);
        cr_assert_eq(wr_dsmem_offset(a), 0x100 + 4 * (i / 2), "lane %u", i);
    }

    /* a lower owner above a higher one: negative distances */
    d.active_mask = 0x3u;
    d.lane_addr[0] = wr_dsmem_addr(3, 0x10);
    d.lane_addr[1] = wr_dsmem_addr(0, 0xfff0);
    ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.space, WR_SPACE_DSMEM);

    /* one owner: the usual modes, the owner in the base */
    d = base_desc();
    d.space = WR_SPACE_DSMEM;
    d.op = WR_OP_STORE;
    for (uint32_t i = 0; i < 32; i++)
        d.lane_addr[i] = wr_dsmem_addr(6, 0x200 + 4 * i);
    ev = roundtrip(&d, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_STRIDED);
    cr_assert_eq(ev.u.access.base, wr_dsmem_addr(6, 0x200));
    cr_assert_eq(ev.u.access.stride, 4);
    for (uint32_t i = 0; i < 32; i++)
        d.lane_addr[i] = wr_dsmem_addr(6, 0x200 + 4 * ((i * 7) % 32));
    ev = roundtrip(&d, &n);
    cr_assert_eq(n, 11, "a gather within one owner: 32-bit deltas");
    for (uint32_t i = 0; i < 32; i++)
        d.lane_addr[i] = wr_dsmem_addr(7, 0x40);
    d.op = WR_OP_ATOMIC_RMW;
    d.atomic_op = WR_AOP_ADD;
    d.scope = WR_SCOPE_CLUSTER;
    d.order = WR_ORDER_RELAXED;
    ev = roundtrip(&d, &n);
    cr_assert_eq(ev.u.access.addr_mode, WR_ADDR_UNIFORM);
    cr_assert_eq(ev.u.access.base, wr_dsmem_addr(7, 0x40));
    cr_assert_eq(ev.u.access.scope, WR_SCOPE_CLUSTER);
}

Test(convert, header_fields_do_not_overlap)
{
    uint64_t w = WRR_W0(0xdeadbeefu, WRR_K_ACCESS, 19, WR_OP_ATOMIC_RMW, WR_AOP_DEC,
                        WR_SCOPE_SYSTEM, WR_ORDER_SC, WR_SPACE_LOCAL, 4, WRR_A_VECTOR64);
    cr_assert_eq(WRR_W0_TAG(w), 0xdeadbeefu);
    cr_assert_eq(WRR_W0_KIND(w), WRR_K_ACCESS);
    cr_assert_eq(WRR_W0_NSLOTS(w), 19);
    cr_assert_eq(WRR_W0_OP(w), WR_OP_ATOMIC_RMW);
    cr_assert_eq(WRR_W0_AOP(w), WR_AOP_DEC);
    cr_assert_eq(WRR_W0_SCOPE(w), WR_SCOPE_SYSTEM);
    cr_assert_eq(WRR_W0_ORDER(w), WR_ORDER_SC);
    cr_assert_eq(WRR_W0_SPACE(w), WR_SPACE_LOCAL);
    cr_assert_eq(WRR_W0_LSIZE(w), 4);
    cr_assert_eq(WRR_W0_AMODE(w), WRR_A_VECTOR64);
    cr_assert_eq(WRR_W0_RESERVED(w), 0);
    /* space 3 sets both space bits: nothing spills into the size */
    w = WRR_W0(0, WRR_K_ACCESS, 3, WR_OP_LOAD, 0, 0, 0, WR_SPACE_DSMEM, 0, WRR_A_UNIFORM);
    cr_assert_eq(WRR_W0_SPACE(w), WR_SPACE_DSMEM);
    cr_assert_eq(WRR_W0_LSIZE(w), 0);
    cr_assert_eq(WRR_W0_ORDER(w), 0);
    cr_assert_null(wrr_check_header(w));
}

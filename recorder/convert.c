/* Device ring records -> wr_event.  See convert.h. */
#include "convert.h"

#include <string.h>

int wrr_size_log2(unsigned size)
{
    switch (size) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
    default: return -1;
    }
}

const char *wrr_check_header(uint64_t w0)
{
    unsigned kind = WRR_W0_KIND(w0), n = WRR_W0_NSLOTS(w0);
    if (kind == WRR_K_NONE || kind > WRR_K_MAX)
        return "unknown record kind";
    if (WRR_W0_RESERVED(w0))
        return "reserved header bits set";
    if (kind == WRR_K_ACCESS) {
        if (n != WRR_ACCESS_SLOTS(WRR_W0_AMODE(w0)))
            return "slot count does not match the address mode";
        if (WRR_W0_OP(w0) > WR_OP_MAX)
            return "memory operation out of range";
        if (WRR_W0_AOP(w0) > WR_AOP_MAX_ID)
            return "atomic operation out of range";
        if ((WRR_W0_OP(w0) == WR_OP_ATOMIC_RMW) != (WRR_W0_AOP(w0) != WR_AOP_NONE))
            return "atomic operation does not match the memory operation";
        if (WRR_W0_SCOPE(w0) > WR_SCOPE_MAX || WRR_W0_ORDER(w0) > WR_ORDER_MAX)
            return "scope or order out of range";
        if (WRR_W0_SPACE(w0) > WR_SPACE_MAX)
            return "address space out of range";
        if (WRR_W0_LSIZE(w0) > 4)
            return "access size out of range";
    } else if (kind == WRR_K_BARRIER && WRR_W0_SCOPE(w0) == WR_BAR_MBARRIER) {
        /* its offset takes a slot of its own (ring_format.h) */
        if (n != WRR_MBAR_SLOTS)
            return "slot count of an mbarrier record is not 3";
        if (WRR_W0_BARMODE(w0) > WR_BARMODE_MAX)
            return "barrier mode out of range";
    } else {
        if (n != WRR_SYNC_SLOTS)
            return "slot count of a sync record is not 2";
        if (kind == WRR_K_FENCE &&
            (WRR_W0_SCOPE(w0) < WR_SCOPE_BLOCK || WRR_W0_SCOPE(w0) > WR_SCOPE_MAX))
            return "fence scope out of range";
        if (kind == WRR_K_BARRIER && !wr_barrier_scope_ok(WRR_W0_SCOPE(w0)))
            return "barrier scope out of range";
        if (kind == WRR_K_BARRIER && WRR_W0_BARMODE(w0) > WR_BARMODE_MAX)
            return "barrier mode out of range";
    }
    return NULL;
}

int wrr_convert(const uint64_t *w, size_t nwords, uint32_t launch, uint32_t site,
                wr_event *ev, uint64_t lanes[32], const char **why)
{
    const char *bad = nwords < 4 ? "record shorter than its header" : wrr_check_header(w[0]);
    if (!bad && nwords < 2u * WRR_W0_NSLOTS(w[0]))
        bad = "record shorter than its slot count";
    if (bad) {
        if (why)
            *why = bad;
        return -1;
    }
    memset(ev, 0, sizeof *ev);
    ev->site = site;
    uint32_t mask = (uint32_t)w[1], aux = (uint32_t)(w[1] >> 32);
    uint32_t block = (uint32_t)w[2], warp = (uint32_t)((w[2] >> 32) & 0xffffu);
    switch (WRR_W0_KIND(w[0])) {
    case WRR_K_ACCESS: {
        wr_access *a = &ev->u.access;
        ev->kind = WR_EV_ACCESS;
        a->launch = launch;
        a->block = block;
        a->warp = warp;
        a->active_mask = mask;
        a->op = (uint8_t)WRR_W0_OP(w[0]);
        a->atomic_op = (uint8_t)WRR_W0_AOP(w[0]);
        a->cas_success = a->atomic_op == WR_AOP_CAS ? aux & mask : 0;
        a->scope = (uint8_t)WRR_W0_SCOPE(w[0]);
        a->order = (uint8_t)WRR_W0_ORDER(w[0]);
        a->space = (uint8_t)WRR_W0_SPACE(w[0]);
        a->size = (uint8_t)(1u << WRR_W0_LSIZE(w[0]));
        switch (WRR_W0_AMODE(w[0])) {
        case WRR_A_UNIFORM:
            a->addr_mode = WR_ADDR_UNIFORM;
            a->base = w[4];
            break;
        case WRR_A_STRIDED:
            a->addr_mode = WR_ADDR_STRIDED;
            a->base = w[4];
            a->stride = (int64_t)w[5];
            break;
        case WRR_A_VECTOR32:
            a->addr_mode = WR_ADDR_VECTOR;
            for (unsigned i = 0; i < 32; i++) {
                int32_t d = (int32_t)(uint32_t)(w[6 + i / 2] >> (32 * (i & 1)));
                lanes[i] = (mask >> i & 1) ? w[4] + (uint64_t)(int64_t)d : 0;
            }
            a->lane_addr = lanes;
            break;
        default:
            a->addr_mode = WR_ADDR_VECTOR;
            for (unsigned i = 0; i < 32; i++)
                lanes[i] = (mask >> i & 1) ? w[6 + i] : 0;
            a->lane_addr = lanes;
            break;
        }
        break;
    }
    case WRR_K_BARRIER: {
        ev->kind = WR_EV_BARRIER;
        uint8_t mode = (uint8_t)WRR_W0_BARMODE(w[0]);
        if (WRR_W0_SCOPE(w[0]) == WR_BAR_MBARRIER) {
            /* the offset whole (the device writes cvta.to.shared's 64
             * bits): one past 32 bits must not pass for the small offset
             * its low bits name */
            const char *bad_word = NULL;
            if (w[5])
                bad_word = "reserved word of an mbarrier record is not 0";
            else if (w[4] > UINT32_MAX)
                bad_word = "an mbarrier's shared offset not 8-byte aligned or past 16 MiB";
            if (bad_word) {
                if (why)
                    *why = bad_word;
                return -1;
            }
            ev->u.barrier = (wr_barrier){launch, block, warp, mask, (uint32_t)w[4], aux,
                                         WR_BAR_MBARRIER, mode};
        } else if (WRR_W0_SCOPE(w[0]) == WR_BAR_BLOCK) {
            ev->u.barrier = (wr_barrier){launch, block, warp, mask, aux & 0xffu, aux >> 8,
                                         WR_BAR_BLOCK, mode};
        } else {
            ev->u.barrier = (wr_barrier){launch, block, warp, mask, 0, aux,
                                         (uint8_t)WRR_W0_SCOPE(w[0]), mode};
        }
        /* a mode the trace cannot hold (a block wait, a wait with a count,
         * an mbarrier's misaligned offset or count out of range) is no
         * record the device writes: corrupt, as a bad scope is, rather
         * than a writer error later */
        const char *bad_mode = wr_barrier_mode_problem(&ev->u.barrier);
        if (bad_mode) {
            if (why)
                *why = bad_mode;
            return -1;
        }
        break;
    }
    case WRR_K_WARP_SYNC:
        ev->kind = WR_EV_WARP_SYNC;
        ev->u.warp_sync = (wr_warp_sync){launch, block, warp, mask};
        break;
    case WRR_K_FENCE:
        ev->kind = WR_EV_FENCE;
        ev->u.fence = (wr_fence){launch, block, warp, mask, (uint8_t)WRR_W0_SCOPE(w[0]),
                                 (uint8_t)WRR_W0_ORDER(w[0])};
        break;
    case WRR_K_BLOCK_ENTER:
    case WRR_K_BLOCK_EXIT:
        ev->kind = WRR_W0_KIND(w[0]) == WRR_K_BLOCK_ENTER ? WR_EV_BLOCK_ENTER : WR_EV_BLOCK_EXIT;
        ev->u.block = (wr_block_mark){launch, block};
        break;
    }
    return 0;
}

/* Mirror of the device's address-mode choice (device_logger.cuh). */
unsigned wrr_encode_access(const wrr_access_desc *d, uint64_t *w)
{
    uint32_t mask = d->active_mask;
    memset(w, 0, 2 * WRR_MAX_SLOTS * sizeof *w);
    int lead = mask ? __builtin_ctz(mask) : 0;
    uint64_t a0 = d->lane_addr[lead];
    unsigned amode = WRR_A_UNIFORM;
    int64_t stride = 0;
    uint64_t base = a0;
    int uniform = 1;
    for (unsigned i = 0; i < 32; i++)
        if ((mask >> i & 1) && d->lane_addr[i] != a0)
            uniform = 0;
    if (!uniform) {
        /* the next active lane after the leader fixes the candidate stride */
        uint32_t rest = mask & ~(1u << lead);
        int l1 = __builtin_ctz(rest);
        int64_t diff = (int64_t)(d->lane_addr[l1] - a0);
        int ok = diff % (l1 - lead) == 0;
        if (ok) {
            stride = diff / (l1 - lead);
            base = a0 - (uint64_t)((int64_t)lead * stride);
            for (unsigned i = 0; i < 32 && ok; i++)
                if ((mask >> i & 1) && d->lane_addr[i] != base + (uint64_t)((int64_t)i * stride))
                    ok = 0;
        }
        if (ok) {
            amode = WRR_A_STRIDED;
        } else {
            base = a0;
            int fits = 1;
            for (unsigned i = 0; i < 32; i++) {
                int64_t dd = (int64_t)(d->lane_addr[i] - a0);
                if ((mask >> i & 1) && (dd < INT32_MIN || dd > INT32_MAX))
                    fits = 0;
            }
            amode = fits ? WRR_A_VECTOR32 : WRR_A_VECTOR64;
        }
    }
    unsigned n = WRR_ACCESS_SLOTS(amode);
    int ls = wrr_size_log2(d->size);
    w[0] = WRR_W0(0, WRR_K_ACCESS, n, d->op, d->atomic_op, d->scope, d->order, d->space,
                  ls < 0 ? 0 : ls, amode);
    w[1] = (uint64_t)mask | ((uint64_t)(d->atomic_op == WR_AOP_CAS ? d->cas_success & mask : 0) << 32);
    w[2] = WRR_W2(d->block, d->warp);
    w[3] = d->site_addr;
    if (amode == WRR_A_VECTOR64) {
        for (unsigned i = 0; i < 32; i++)
            w[6 + i] = (mask >> i & 1) ? d->lane_addr[i] : 0;
    } else {
        w[4] = base;
        w[5] = (uint64_t)stride;
        if (amode == WRR_A_VECTOR32)
            for (unsigned i = 0; i < 32; i++) {
                uint32_t dd = (mask >> i & 1) ? (uint32_t)(d->lane_addr[i] - a0) : 0;
                w[6 + i / 2] |= (uint64_t)dd << (32 * (i & 1));
            }
    }
    return n;
}

unsigned wrr_encode_sync(uint64_t *w, unsigned kind, uint32_t block, uint32_t warp,
                         uint32_t mask, uint32_t aux, uint8_t scope, uint8_t order,
                         uint64_t site_addr)
{
    memset(w, 0, 4 * sizeof *w);
    w[0] = WRR_W0(0, kind, WRR_SYNC_SLOTS, 0, 0, scope, order, 0, 0, 0);
    w[1] = (uint64_t)mask | ((uint64_t)aux << 32);
    w[2] = WRR_W2(block, warp);
    w[3] = site_addr;
    return WRR_SYNC_SLOTS;
}

unsigned wrr_encode_mbarrier(uint64_t *w, uint32_t block, uint32_t warp, uint32_t mask,
                             uint64_t offset, uint32_t aux, uint8_t mode, uint64_t site_addr)
{
    memset(w, 0, 2 * WRR_MBAR_SLOTS * sizeof *w);
    w[0] = WRR_W0(0, WRR_K_BARRIER, WRR_MBAR_SLOTS, 0, 0, WR_BAR_MBARRIER, mode, 0, 0, 0);
    w[1] = (uint64_t)mask | ((uint64_t)aux << 32);
    w[2] = WRR_W2(block, warp);
    w[3] = site_addr;
    w[4] = offset;
    return WRR_MBAR_SLOTS;
}

/*
 * Device callbacks patched into unmodified kernels by the Compute Sanitizer
 * API (inject_sanitizer.c).  Built with
 *   nvcc --fatbin -arch=sm_90 --keep-device-functions -Xptxas --compile-as-tools-patch
 * and loaded with sanitizerAddPatchesFromFile.  Every active thread of the
 * instrumented instruction calls its callback; the lanes executing it
 * together combine into ONE record per warp instruction, written into the
 * recorder's device ring with the recorder's own logger primitives
 * (device_logger.cuh: reservation, back-pressure, commit protocol of
 * ring_format.h).  The records are provisional: the patched PC goes into
 * the site word and the host completes op / atomic op / scope / order from
 * the disassembly (san_events.c).
 */
#define WRS_DEVICE_SIDE 1
#include "sanitizer_api.h"

#include "device_logger.cuh"
#include "san_shared.h"

#define WRS_PATCH extern "C" __device__ __noinline__

/* A graph kernel node's entry in its launch's node table (san_shared.h),
 * found by the grid it runs in; NULL when none names it. */
static __device__ __forceinline__ const wrs_node_data *wrs_node(const wrs_launch_data *ld)
{
    unsigned long long grid;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
    for (uint32_t i = (uint32_t)grid & ld->node_mask, n = 0; n <= ld->node_mask;
         i = (i + 1) & ld->node_mask, n++) {
        uint64_t key = *(volatile uint64_t *)&ld->nodes[i].grid_key;
        if (key == grid + 1)
            return &ld->nodes[i];
        if (!key)
            break;
    }
    return (const wrs_node_data *)0;
}

/* The ring, and the tag of the launch's records; NULL when this launch is
 * not recorded (a graph kernel no node entry names: counted). */
static __device__ __forceinline__ wrr_dev_state *wrs_state(void *ud, unsigned *tag)
{
    wrs_launch_data *ld = (wrs_launch_data *)ud;
    if (!ld || !ld->state || !*(volatile uint32_t *)&ld->state->enabled)
        return (wrr_dev_state *)0;
    *tag = ld->tag;
    if (ld->nodes) {
        const wrs_node_data *nd = wrs_node(ld);
        if (!nd) {
            atomicAdd_system((unsigned long long *)&ld->state->ctl->node_unknown, 1ull);
            return (wrr_dev_state *)0;
        }
        if (!nd->tag)
            return (wrr_dev_state *)0;   /* a node not recorded (--kernels) */
        *tag = nd->tag;
    }
    return ld->state;
}

/* A launch's block counters and block size: its own, or its graph node's. */
static __device__ __forceinline__ void wrs_blocks(void *ud, unsigned **enter, unsigned **exit,
                                                  uint32_t *threads)
{
    wrs_launch_data *ld = (wrs_launch_data *)ud;
    const wrs_node_data *nd = ld->nodes ? wrs_node(ld) : (const wrs_node_data *)0;
    *enter = nd ? nd->block_enter : ld->block_enter;
    *exit = nd ? nd->block_exit : ld->block_exit;
    *threads = nd ? nd->block_threads : ld->block_threads;
}

/* One access record for the lanes of this warp that execute the same
 * instruction (same pc) now.  addr: generic address (global), the offset
 * in the shared / local window, as the callback reports it, or the DSMEM
 * address (owner block, offset) wrs_remote_shared_access makes of it. */
static __device__ __forceinline__ void wrs_access(void *ud, uint64_t pc, uint64_t addr,
                                                  uint32_t size, uint32_t flags, unsigned space)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s || (flags & WRS_SAN_MEM_FLAG_PREFETCH))
        return;
    unsigned mask = __match_any_sync(__activemask(), pc);
    unsigned lane = wrr_lane();
    unsigned leader = __ffs(mask) - 1;
    unsigned op, aop = WR_AOP_NONE, scope = WR_SCOPE_NONE, order = WR_ORDER_WEAK;
    if ((flags & WRS_SAN_MEM_FLAG_READ) && (flags & WRS_SAN_MEM_FLAG_WRITE)) {
        /* provisional: the host replaces these from the disassembly */
        op = WR_OP_ATOMIC_RMW;
        aop = WR_AOP_ADD;
        scope = (flags & WRS_SAN_MEM_FLAG_ATOMSYS) ? WR_SCOPE_SYSTEM
                : space == WR_SPACE_SHARED          ? WR_SCOPE_BLOCK
                                                    : WR_SCOPE_DEVICE;
        order = WR_ORDER_RELAXED;
    } else if (flags & WRS_SAN_MEM_FLAG_WRITE) {
        op = WR_OP_STORE;
    } else {
        op = WR_OP_LOAD;
    }
    /* address mode, exactly as wrr_access_begin chooses it */
    uint64_t a0 = __shfl_sync(mask, addr, leader);
    int uniform = __all_sync(mask, addr == a0);
    uint64_t base = a0;
    long long stride = 0;
    unsigned amode;
    if (uniform) {
        amode = WRR_A_UNIFORM;
    } else {
        unsigned l1 = __ffs(mask & ~(1u << leader)) - 1;
        uint64_t a1 = __shfl_sync(mask, addr, l1);
        long long diff = (long long)(a1 - a0), dl = (long long)l1 - (long long)leader;
        int ok = diff % dl == 0;
        long long st = diff / dl;
        uint64_t b = a0 - (uint64_t)((long long)leader * st);
        if (__all_sync(mask, ok && addr == b + (uint64_t)((long long)lane * st))) {
            amode = WRR_A_STRIDED;
            base = b;
            stride = st;
        } else {
            long long d = (long long)(addr - a0);
            amode = __all_sync(mask, d >= INT32_MIN && d <= INT32_MAX) ? WRR_A_VECTOR32
                                                                       : WRR_A_VECTOR64;
        }
    }
    unsigned nslots = WRR_ACCESS_SLOTS(amode);
    unsigned long long pos = 0;
    if (lane == leader)   /* drop mode drops what the device takes for plain */
        pos = wrr_reserve(s, nslots, __popc(mask), op != WR_OP_ATOMIC_RMW);
    pos = __shfl_sync(mask, pos, leader);
    if (pos == ~0ull)
        return;                       /* dropped (drop mode), counted */
    if (amode == WRR_A_VECTOR32) {
        unsigned w = 6 + lane / 2;
        unsigned long long slot = (pos + w / 2) & ((1ull << s->log2cap) - 1);
        volatile uint32_t *p32 = (volatile uint32_t *)&s->slots[2 * slot + (w & 1)];
        p32[lane & 1] = (uint32_t)(addr - base);
        __threadfence_system();
    } else if (amode == WRR_A_VECTOR64) {
        *wrr_word(s, pos, 6 + lane) = addr;
        __threadfence_system();
    }
    __syncwarp(mask);
    if (lane == leader) {
        unsigned ls = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : 4;
        *wrr_word(s, pos, 1) = (uint64_t)mask;
        *wrr_word(s, pos, 2) = WRR_W2T(wrr_block_linear(), wrr_warp_in_block(), tag);
        *wrr_word(s, pos, 3) = pc;    /* the site word carries the PC */
        *wrr_word(s, pos, 4) = amode == WRR_A_VECTOR64 ? 0 : base;
        *wrr_word(s, pos, 5) = (uint64_t)stride;
        wrr_commit(s, pos, WRR_W0(0, WRR_K_ACCESS, nslots, op, aop, scope, order, space, ls, amode));
    }
    __syncwarp(mask);
}

WRS_PATCH SanitizerPatchResult wrs_global_access(void *ud, uint64_t pc, void *ptr,
                                                 uint32_t size, uint32_t flags, const void *data)
{
    (void)data;
    wrs_access(ud, pc, (uint64_t)(uintptr_t)ptr, size, flags, WR_SPACE_GLOBAL);
    return SANITIZER_PATCH_SUCCESS;
}

WRS_PATCH SanitizerPatchResult wrs_shared_access(void *ud, uint64_t pc, void *ptr,
                                                 uint32_t size, uint32_t flags, const void *data)
{
    (void)data;
    /* the callback's 32-bit shared address: in a cluster's block of rank
     * r > 0 it carries that block's window base (device_logger.cuh) */
    wrs_access(ud, pc, wrr_shared_offset((uint32_t)(uintptr_t)ptr), size, flags,
               WR_SPACE_SHARED);
    return SANITIZER_PATCH_SUCCESS;
}

/* Another block's shared memory (sm_90 distributed shared memory: the
 * API's SANITIZER_INSTRUCTION_REMOTE_SHARED_MEMORY_ACCESS, "store or load").
 * What `ptr` holds for it is not documented (for shared and local accesses
 * it is "the offset within the shared memory window"): a generic address
 * in the cluster's shared window is taken as it is, anything else as a
 * .shared::cluster address, made generic with cvta.shared::cluster.  The
 * owner and the offset then come as in the device API's logger
 * (wrr_cluster_shared_of: getctarank, mapa back to the own rank, cvta):
 * WR_SPACE_DSMEM, or SHARED where the owner is the issuing block.
 * Unverified without a GPU (SANITIZER.md). */
WRS_PATCH SanitizerPatchResult wrs_remote_shared_access(void *ud, uint64_t pc, void *ptr,
                                                        uint32_t size, uint32_t flags,
                                                        const void *data)
{
    (void)data;
    const void *g = ptr;
    if (!__isClusterShared(g)) {
        uint64_t gen;
        asm("cvta.shared::cluster.u64 %0, %1;" : "=l"(gen) : "l"((uint64_t)(uint32_t)(uintptr_t)ptr));
        g = (const void *)(uintptr_t)gen;
    }
    uint64_t addr;
    unsigned space;
    if (__isShared(g)) {
        addr = wrr_shared_offset((uint32_t)__cvta_generic_to_shared(g));
        space = WR_SPACE_SHARED;
    } else {
        space = wrr_cluster_shared_of(g, &addr);
    }
    wrs_access(ud, pc, addr, size, flags, space);
    return SANITIZER_PATCH_SUCCESS;
}

WRS_PATCH SanitizerPatchResult wrs_local_access(void *ud, uint64_t pc, void *ptr,
                                                uint32_t size, uint32_t flags, const void *data)
{
    (void)data;
    wrs_access(ud, pc, (uint64_t)(uintptr_t)ptr, size, flags, WR_SPACE_LOCAL);
    return SANITIZER_PATCH_SUCCESS;
}

/* A sync record written by the leader of the lanes executing together.
 * scope / mode: a BARRIER's wr_barrier_scope and wr_barrier_mode (0 for
 * the other kinds). */
static __device__ __forceinline__ void wrs_sync(void *ud, uint64_t pc, unsigned kind,
                                                unsigned mask_rec, uint32_t aux,
                                                unsigned scope = 0, unsigned mode = 0)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s)
        return;
    unsigned mask = __match_any_sync(__activemask(), pc);
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        unsigned long long pos = wrr_reserve(s, WRR_SYNC_SLOTS, __popc(mask), 0);
        if (pos != ~0ull) {
            *wrr_word(s, pos, 1) = (uint64_t)(mask_rec ? mask_rec : mask) | ((uint64_t)aux << 32);
            *wrr_word(s, pos, 2) = WRR_W2T(wrr_block_linear(), wrr_warp_in_block(), tag);
            *wrr_word(s, pos, 3) = pc;
            wrr_commit(s, pos, WRR_W0(0, kind, WRR_SYNC_SLOTS, 0, 0, scope, mode, 0, 0, 0));
        }
    }
    __syncwarp(mask);
}

/* Every block barrier instruction (bar.sync, bar.red, and bar.arrive if the
 * API reports it here: unverified), recorded as a SYNC; the host makes a
 * BAR.ARV's record an ARRIVE from the disassembly (san_events.c).  The
 * count goes as the callback gives it, 0 included: only the host knows
 * whether the instruction is an arrive, which must name its count (a 0
 * there is recorded as SYNC and counted); for a sync the host puts the
 * block's size in its place, as this patch did before. */
WRS_PATCH SanitizerPatchResult wrs_barrier(void *ud, uint64_t pc, uint32_t bar, uint32_t count,
                                           uint32_t flags)
{
    (void)flags;
    wrs_sync(ud, pc, WRR_K_BARRIER, 0, WRR_BAR_AUX_BLOCK(bar, count), WR_BAR_BLOCK,
             WR_BARMODE_SYNC);
    return SANITIZER_PATCH_SUCCESS;
}

/* Cluster barriers (sm_90 UCGABAR_ARV / UCGABAR_WAIT; the API's
 * CLUSTER_BARRIER_ARRIVE and _WAIT, "generated by cg::this_cluster().sync()
 * or barrier.cluster.arrive / wait"; unverified without a GPU).  The arrive
 * callback does not tell barrier.cluster.arrive from its .relaxed form:
 * recorded as ARRIVE, made ARRIVE_RELAXED by the host where no fence
 * precedes the instruction.  Its count is the cluster's threads, as the
 * device API records it.  The callbacks run before the instruction: right
 * for an arrival (ahead of every waiter's later records); a wait's record
 * is held by the host until the warp's next record, which is reserved
 * after the wait returned. */
WRS_PATCH SanitizerPatchResult wrs_cluster_arrive(void *ud, uint64_t pc)
{
    dim3 cd = __clusterDim();
    wrs_sync(ud, pc, WRR_K_BARRIER, 0, wrr_block_threads() * cd.x * cd.y * cd.z, WR_BAR_CLUSTER,
             WR_BARMODE_ARRIVE);
    return SANITIZER_PATCH_SUCCESS;
}

WRS_PATCH SanitizerPatchResult wrs_cluster_wait(void *ud, uint64_t pc)
{
    wrs_sync(ud, pc, WRR_K_BARRIER, 0, 0, WR_BAR_CLUSTER, WR_BARMODE_WAIT);
    return SANITIZER_PATCH_SUCCESS;
}

/* ---- mbarriers (SANITIZER_INSTRUCTION_CUDA_BARRIER and _ATTEMPT) --------------
 *
 * The same 3-slot mbarrier records as the device API's (format 1.3): the
 * object's offset in the block's shared window, and an arrive's count
 * (the callback's data: "the count argument to the arrive-on operation").
 * Neither an init's count nor a wait's parity reaches the callbacks (seen
 * on an H100 and an H200, toolkit 13.0: their data is no such thing, and
 * the object reads 0 through ld.shared): an init is written with count 1
 * and a successful wait with parity 0, and the finisher puts in the count
 * the init instruction's operands give and the parity of the phase the
 * arrivals it has seen completed (san_events.h).  A drop arrival is
 * recorded as an arrival (the format has no drop).  What cannot be
 * recorded as the format holds it (an object outside the shared window, a
 * count out of range) is counted (ctl->mbarrier_unrecorded), never
 * written: a bad record would stop the drain. */
static __device__ __forceinline__ void wrs_mbarrier(void *ud, uint64_t pc, const void *bar,
                                                    uint32_t aux, unsigned mode)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s)
        return;
    uint64_t offset;
    if (__isShared(bar))
        offset = wrr_shared_offset((uint32_t)__cvta_generic_to_shared(bar));
    else   /* not a generic address: taken as the offset the API names it by */
        offset = (uint64_t)(uintptr_t)bar;
    int ok = !(offset & 7u) && offset < WR_SHARED_LIMIT &&
             (mode == WR_BARMODE_INIT   ? aux >= 1u && aux <= WR_MBARRIER_COUNT_MAX
              : mode == WR_BARMODE_WAIT ? aux <= 1u
                                        : aux <= WR_MBARRIER_COUNT_MAX);
    unsigned active = __activemask();
    unsigned mask = __match_any_sync(active, ok ? offset : ~0ull);
    mask = __match_any_sync(mask, aux);
    if (wrr_lane() != (unsigned)(__ffs(mask) - 1)) {
        __syncwarp(mask);
        return;
    }
    if (!ok) {
        atomicAdd_system((unsigned long long *)&s->ctl->mbarrier_unrecorded, 1ull);
    } else {
        wrr_mbarrier_record(s, mask, offset, aux, mode, pc, tag);
        __threadfence();
    }
    __syncwarp(mask);
}

#ifdef WRS_MBARRIER_RAW
/* A diagnostic build only (scripts/gpu-session mbarrier): every callback's
 * kind, data and result written as they came, each as two mbarrier
 * ARRIVE records of the lane, at the made-up offset `base` (kind and
 * result) and base + 8, with counts (data & 0xffff) + 1 and (data >> 16)
 * + 1.  Its traces describe the callbacks, not the program. */
static __device__ void wrs_mbarrier_raw(void *ud, uint64_t pc, uint32_t base, uint32_t data)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s)
        return;
    unsigned me = 1u << wrr_lane();
    wrr_mbarrier_record(s, me, base, (data & 0xffffu) + 1u, WR_BARMODE_ARRIVE, pc, tag);
    wrr_mbarrier_record(s, me, base + 8u, (data >> 16) + 1u, WR_BARMODE_ARRIVE, pc, tag);
    __threadfence();
}
#endif

/* Inits and arrivals; waits come through the attempt point. */
WRS_PATCH SanitizerPatchResult wrs_cuda_barrier(void *ud, uint64_t pc, void *barrier,
                                                uint32_t kind, uint32_t data)
{
#ifdef WRS_MBARRIER_RAW
    wrs_mbarrier_raw(ud, pc, 0x1000u + kind * 0x40u, data);
    return SANITIZER_PATCH_SUCCESS;
#endif
    if (kind == WRS_SAN_CUDA_BARRIER_INIT)
        wrs_mbarrier(ud, pc, barrier, 1u, WR_BARMODE_INIT);   /* the count: the finisher's */
    else if (kind >= WRS_SAN_CUDA_BARRIER_ARRIVE && kind <= WRS_SAN_CUDA_BARRIER_ARRIVE_DROP_NOCOMPLETE)
        wrs_mbarrier(ud, pc, barrier, data, WR_BARMODE_ARRIVE);
    return SANITIZER_PATCH_SUCCESS;
}

/* Every attempt at waiting: a successful one is recorded (its parity: the
 * finisher's). */
WRS_PATCH SanitizerPatchResult wrs_cuda_barrier_attempt(void *ud, uint64_t pc, void *barrier,
                                                        uint32_t kind, uint32_t data,
                                                        uint32_t result)
{
#ifdef WRS_MBARRIER_RAW
    wrs_mbarrier_raw(ud, pc, 0x2000u + kind * 0x40u + (result ? 0x20u : 0u), data);
    return SANITIZER_PATCH_SUCCESS;
#endif
    (void)data;
    if (kind == WRS_SAN_CUDA_BARRIER_WAIT && result)
        wrs_mbarrier(ud, pc, barrier, 0u, WR_BARMODE_WAIT);
    return SANITIZER_PATCH_SUCCESS;
}

WRS_PATCH SanitizerPatchResult wrs_syncwarp(void *ud, uint64_t pc, uint32_t mask)
{
    /* the record's mask word is the __syncwarp mask */
    wrs_sync(ud, pc, WRR_K_WARP_SYNC, mask, 0);
    return SANITIZER_PATCH_SUCCESS;
}

/* Block enter: the first warp of the block records it; the others wait
 * until it is committed, so that no access of the block precedes it. */
WRS_PATCH SanitizerPatchResult wrs_block_enter(void *ud, uint64_t pc)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s)
        return SANITIZER_PATCH_SUCCESS;
    unsigned *enter, *exit;
    uint32_t threads;
    wrs_blocks(ud, &enter, &exit, &threads);
    unsigned mask = __activemask();
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        unsigned b = wrr_block_linear();
        if (atomicCAS(&enter[b], 0u, 1u) == 0u) {
            unsigned long long pos = wrr_reserve(s, WRR_SYNC_SLOTS, 0, 0);
            if (pos != ~0ull) {
                *wrr_word(s, pos, 1) = 0;
                *wrr_word(s, pos, 2) = WRR_W2T(b, 0, tag);
                *wrr_word(s, pos, 3) = pc;
                wrr_commit(s, pos, WRR_W0(0, WRR_K_BLOCK_ENTER, WRR_SYNC_SLOTS, 0, 0, 0, 0, 0, 0, 0));
            }
            __threadfence();
            atomicExch(&enter[b], 2u);
        } else {
            while (*(volatile unsigned *)&enter[b] != 2u)
                __nanosleep(64);
        }
    }
    __syncwarp(mask);
    return SANITIZER_PATCH_SUCCESS;
}

/* Block exit: the warp whose threads complete the block's count records it. */
WRS_PATCH SanitizerPatchResult wrs_block_exit(void *ud, uint64_t pc)
{
    unsigned tag;
    wrr_dev_state *s = wrs_state(ud, &tag);
    if (!s)
        return SANITIZER_PATCH_SUCCESS;
    unsigned *enter, *exit;
    uint32_t threads;
    wrs_blocks(ud, &enter, &exit, &threads);
    unsigned mask = __activemask();
    if (wrr_lane() == (unsigned)(__ffs(mask) - 1)) {
        unsigned b = wrr_block_linear();
        __threadfence();
        unsigned before = atomicAdd(&exit[b], (unsigned)__popc(mask));
        if (before + __popc(mask) == threads) {
            unsigned long long pos = wrr_reserve(s, WRR_SYNC_SLOTS, 0, 0);
            if (pos != ~0ull) {
                *wrr_word(s, pos, 1) = 0;
                *wrr_word(s, pos, 2) = WRR_W2T(b, 0, tag);
                *wrr_word(s, pos, 3) = pc;
                wrr_commit(s, pos, WRR_W0(0, WRR_K_BLOCK_EXIT, WRR_SYNC_SLOTS, 0, 0, 0, 0, 0, 0, 0));
            }
        }
    }
    __syncwarp(mask);
    return SANITIZER_PATCH_SUCCESS;
}

/* Device-side malloc/free: logged per launch, turned into ALLOC / FREE
 * host events after the launch (inject_sanitizer.c). */
WRS_PATCH SanitizerPatchResult wrs_device_malloc(void *ud, uint64_t pc, void *ptr, uint64_t size)
{
    (void)pc;
    wrs_launch_data *ld = (wrs_launch_data *)ud;
    if (ld && ptr) {
        unsigned i = atomicAdd(&ld->ndmalloc, 1u);
        if (i < WRS_DMALLOC_MAX) {
            ld->dmalloc[i].ptr = (uint64_t)(uintptr_t)ptr;
            ld->dmalloc[i].size = size ? size : 1;
        }
    }
    return SANITIZER_PATCH_SUCCESS;
}

WRS_PATCH SanitizerPatchResult wrs_device_free(void *ud, uint64_t pc, void *ptr)
{
    (void)pc;
    wrs_launch_data *ld = (wrs_launch_data *)ud;
    if (ld && ptr) {
        unsigned i = atomicAdd(&ld->ndmalloc, 1u);
        if (i < WRS_DMALLOC_MAX) {
            ld->dmalloc[i].ptr = (uint64_t)(uintptr_t)ptr;
            ld->dmalloc[i].size = 0;
        }
    }
    return SANITIZER_PATCH_SUCCESS;
}

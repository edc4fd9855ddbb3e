/* The recorder's host runtime (see host_runtime.h, RECORDER.md). */
#include "host_runtime.h"

#include <pthread.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_label.h"
#include "drain.h"
#include "handle_ids.h"
#include "host_site.h"
#include "warprace/demangle.h"
#include "launch_serial.h"
#include "pending_ends.h"
#include "record_args.h"
#include "ring_format.h"
#include "warprace/trace.h"
#include "warprace_version.h"
#include "writer_sink.h"

__thread int wrr_rt_internal;

static struct {
    int configured, enabled_cfg, ready, failed, shut;
    pthread_mutex_t lock;        /* runtime state, catalog definitions */
    pthread_mutex_t wlock;       /* the writer (drain thread + catalog) */
    char out[4096], stats[4096], command[4096];
    uint64_t copies_unrecorded;
    char copy_unrecorded_why[256];
    regex_t kernels;
    int have_kernels;
    char nvtx[256];
    int nvtx_depth;              /* open ranges named nvtx */
    uint64_t buffer;
    int drop;
    unsigned drain_threads;      /* the drain's workers, the writer's threads */
    /* CUDA */
    CUcontext ctx;
    CUstream aux;                /* non-blocking stream for internal copies */
    uint64_t *ring_host;
    wrr_host_ctl *ctl_host;
    CUdeviceptr state_dev;
    uint32_t log2cap;
    uint32_t dev_enabled;        /* last value written to the device state */
    /* trace */
    wr_writer *w;
    wrr_writer_sink ws;
    wrr_drain drain;
    uint32_t next_launch, open_launch;
    uint32_t open_stream;
    wrr_pending_ends ends;       /* KERNEL_ENDs the program has not observed yet */
    uint64_t launches;
    /* modules seen, and whether they have the device API's state */
    struct { CUmodule mod; int has_state; } *mods;
    size_t nmods, capmods;
    /* launches of kernels built without the device API: nothing of
     * theirs is recorded, and the summary says so */
    uint64_t launches_unrecorded;
    /* CUDA graphs: work captured into them does not run when issued, and
     * their launches run it unrecorded (RECORDER.md, "CUDA graphs") */
    uint64_t captured_ops, graph_launches;
    char launch_unrecorded_name[128];
    /* allocations: base -> catalog id (linear; programs have few) */
    struct { uint64_t base; uint32_t id; } *allocs;
    size_t nallocs, capallocs;
    wrr_handle_ids ids;          /* streams and events -> small ids */
    wrr_host_sites *sites;       /* the program's call sites of copies and launches */
    uint64_t t_start;
    uint64_t ring_setup_ns;      /* allocating, pinning and clearing the ring */
    char error[512];
} R = {.lock = PTHREAD_MUTEX_INITIALIZER, .wlock = PTHREAD_MUTEX_INITIALIZER};

static void set_error(const char *msg)
{
    if (!R.error[0])
        snprintf(R.error, sizeof R.error, "%s", msg);
    fprintf(stderr, "warprace: %s\n", msg);
}

int wrr_rt_configure(void)
{
    if (R.configured)
        return R.enabled_cfg ? 0 : -1;
    R.configured = 1;
    const char *out = getenv(WRR_ENV_OUT);
    if (!out || !*out)
        return -1;
    snprintf(R.out, sizeof R.out, "%s", out);
    const char *v = getenv(WRR_ENV_STATS);
    snprintf(R.stats, sizeof R.stats, "%s", v ? v : "");
    v = getenv(WRR_ENV_COMMAND);
    snprintf(R.command, sizeof R.command, "%s", v ? v : "");
    v = getenv(WRR_ENV_KERNELS);
    if (v && *v) {
        if (regcomp(&R.kernels, v, REG_EXTENDED | REG_NOSUB) != 0) {
            set_error("WARPRACE_KERNELS is not a valid regular expression; recording all kernels");
        } else {
            R.have_kernels = 1;
        }
    }
    v = getenv(WRR_ENV_NVTX);
    snprintf(R.nvtx, sizeof R.nvtx, "%s", v ? v : "");
    R.buffer = WRR_DEFAULT_BUFFER;
    v = getenv(WRR_ENV_BUFFER);
    if (v && wrr_parse_size(v, &R.buffer) != 0)
        R.buffer = WRR_DEFAULT_BUFFER;
    v = getenv(WRR_ENV_DROP);
    R.drop = v && !strcmp(v, "1");
    int valid;
    R.drain_threads = wrr_drain_threads(getenv(WRR_ENV_DRAIN_THREADS), sysconf(_SC_NPROCESSORS_ONLN),
                                        &valid);
    R.enabled_cfg = 1;
    R.t_start = wrr_monotonic_ns();
    return 0;
}

/* ---- the writer behind a lock (the drain thread and the app's threads) ---- */

static int lk_event(void *ctx, const wr_event *ev)
{
    (void)ctx;
    pthread_mutex_lock(&R.wlock);
    int rc = wr_writer_event(R.w, ev, &R.ws.err);
    pthread_mutex_unlock(&R.wlock);
    return rc;
}

static int lk_encoded(void *ctx, const wr_encoded *events)
{
    (void)ctx;
    pthread_mutex_lock(&R.wlock);
    int rc = wr_writer_encoded(R.w, events, &R.ws.err);
    pthread_mutex_unlock(&R.wlock);
    return rc;
}

static const char *lk_error(void *ctx)
{
    (void)ctx;
    return R.ws.err.msg;
}

static int lk_flush(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&R.wlock);
    int rc = wr_writer_flush(R.w, &R.ws.err);
    pthread_mutex_unlock(&R.wlock);
    return rc;
}

static uint32_t lk_site(void *ctx, const char *file, uint32_t line, const char *fn, uint64_t pc)
{
    (void)ctx;
    pthread_mutex_lock(&R.wlock);
    uint32_t id = wr_writer_site(R.w, pc, file, line, fn);
    pthread_mutex_unlock(&R.wlock);
    return id;
}

/* The program's call sites, looked up from its first copy or launch on.
 * R.lock held. */
static wrr_host_sites *host_sites(void)
{
    if (!R.sites)
        R.sites = wrr_host_sites_new();
    return R.sites;
}

/* Site descriptors and strings live in device memory: read them on the
 * auxiliary non-blocking stream, which a running (possibly back-pressured)
 * kernel does not block. */
static long read_dev(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    wrr_rt_internal = 1;
    long rc = -1;
    if (cuCtxSetCurrent(R.ctx) == CUDA_SUCCESS) {
        /* stay inside one 64-byte line of the string's allocation when we can */
        size_t n = len;
        while (n > 0) {
            if (cuMemcpyDtoHAsync(buf, (CUdeviceptr)addr, n, R.aux) == CUDA_SUCCESS &&
                cuStreamSynchronize(R.aux) == CUDA_SUCCESS) {
                rc = (long)n;
                break;
            }
            n /= 2;
        }
    }
    wrr_rt_internal = 0;
    return rc;
}

static void fill_header(wr_header *h, char *devname, size_t devlen, char *host, size_t hostlen)
{
    memset(h, 0, sizeof *h);
    h->version_major = WR_FORMAT_MAJOR;
    h->version_minor = WR_FORMAT_MINOR;
    h->producer = "warprace-record";
    h->producer_version = WARPRACE_VERSION;
    CUdevice dev;
    int major = 0, minor = 0, clock = 0;
    devname[0] = 0;
    if (cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
        cuDeviceGetName(devname, (int)devlen, dev);
        cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
    }
    h->device = devname;
    h->sm_arch = (uint32_t)(major * 10 + minor);
    h->warp_size = 32;
    h->clock_khz = (uint32_t)clock;
    if (gethostname(host, hostlen) != 0)
        host[0] = 0;
    host[hostlen - 1] = 0;
    h->host = host;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->time_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    h->command = R.command;
}

int wrr_rt_ensure(void)
{
    if (R.ready)
        return 0;
    if (R.failed || wrr_rt_configure() != 0)
        return -1;
    pthread_mutex_lock(&R.lock);
    if (R.ready || R.failed) {
        pthread_mutex_unlock(&R.lock);
        return R.ready ? 0 : -1;
    }
    wrr_rt_internal = 1;
    const char *fail = NULL;
    CUresult rc = cuCtxGetCurrent(&R.ctx);
    if (rc != CUDA_SUCCESS || !R.ctx)
        fail = "no current CUDA context at the first launch";
    R.log2cap = wrr_buffer_log2cap(R.buffer);
    uint64_t t_ring = wrr_monotonic_ns();
    size_t ring_bytes = (size_t)WRR_SLOT_BYTES << R.log2cap;
    CUdeviceptr ring_dev = 0, ctl_dev = 0;
    if (!fail && cuStreamCreate(&R.aux, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        fail = "cannot create the recorder's stream";
    if (!fail && (cuMemHostAlloc((void **)&R.ring_host, ring_bytes,
                                 CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
                  cuMemHostAlloc((void **)&R.ctl_host, sizeof(wrr_host_ctl),
                                 CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS))
        fail = "cannot allocate the ring buffer in mapped pinned memory (--buffer too large?)";
    if (!fail) {
        memset(R.ring_host, 0, ring_bytes);
        memset(R.ctl_host, 0, sizeof *R.ctl_host);
        if (cuMemHostGetDevicePointer(&ring_dev, R.ring_host, 0) != CUDA_SUCCESS ||
            cuMemHostGetDevicePointer(&ctl_dev, R.ctl_host, 0) != CUDA_SUCCESS)
            fail = "cannot map the ring buffer into the device's address space";
    }
    R.ring_setup_ns = wrr_monotonic_ns() - t_ring;
    if (!fail && cuMemAlloc(&R.state_dev, sizeof(wrr_dev_state)) != CUDA_SUCCESS)
        fail = "cannot allocate the recorder's device state";
    if (!fail) {
        wrr_dev_state *st = calloc(1, sizeof *st);
        st->slots = (uint64_t *)(uintptr_t)ring_dev;
        st->ctl = (wrr_host_ctl *)(uintptr_t)ctl_dev;
        st->log2cap = R.log2cap;
        st->flags = R.drop ? WRR_F_DROP : 0;
        st->enabled = 1;
        R.dev_enabled = 1;
        if (cuMemcpyHtoD(R.state_dev, st, sizeof *st) != CUDA_SUCCESS)
            fail = "cannot initialize the recorder's device state";
        free(st);
    }
    if (!fail) {
        wr_header h;
        char devname[256], host[256];
        fill_header(&h, devname, sizeof devname, host, sizeof host);
        wr_error err;
        /* records converted and encoded by the drain's workers, chunks
         * compressed and written by the writer's threads (bench_drain) */
        wr_writer_options wopts = {.background = (int)R.drain_threads};
        R.w = wr_writer_open(R.out, &h, &wopts, &err);
        if (!R.w) {
            snprintf(R.error, sizeof R.error, "%s", err.msg);
            fail = R.error;
        }
    }
    if (!fail) {
        wrr_ring ring = {R.ring_host, R.ctl_host, R.log2cap};
        wrr_sink sink = {NULL, lk_event, lk_flush, lk_site, NULL, lk_error, lk_encoded};
        wrr_drain_options o = {.read_mem = read_dev, .workers = R.drain_threads};
        if (wrr_drain_init(&R.drain, &ring, &sink, &o) != 0 ||
            wrr_drain_start_thread(&R.drain) != 0)
            fail = "cannot start the drain thread";
    }
    wrr_rt_internal = 0;
    if (fail) {
        set_error(fail);
        R.failed = 1;
        pthread_mutex_unlock(&R.lock);
        return -1;
    }
    R.ready = 1;
    pthread_mutex_unlock(&R.lock);
    return 0;
}

/* ---- ids ------------------------------------------------------------------- */

/* cuStreamGetFlags, for the non-blocking mark of a stream id (handle_ids.h) */
static int stream_flags(void *stream, unsigned *flags)
{
    return cuStreamGetFlags((CUstream)stream, flags) == CUDA_SUCCESS ? 0 : -1;
}

__thread int wrr_rt_per_thread_default;

static uint32_t handle_id(void *h, int is_event)
{
    if (is_event)
        return wrr_event_id(&R.ids, h);
    if ((!h && wrr_rt_per_thread_default) || h == WRR_STREAM_HANDLE_PER_THREAD)
        return wrr_stream_id_of_thread(&R.ids, wrr_host_thread_number());
    return wrr_stream_id(&R.ids, h, stream_flags);
}

static void post(const wr_event *ev)
{
    wrr_drain_post(&R.drain, ev);
}

static void post_cb(void *ctx, const wr_event *ev)
{
    (void)ctx;
    post(ev);
}

/* ---- launches -------------------------------------------------------------- */

/* Debug trace of the recorder's dealings with the driver
 * (WARPRACE_RECORDER_DEBUG=1): what a first run on a new toolkit needs. */
static int debug_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("WARPRACE_RECORDER_DEBUG");
        on = v && *v && strcmp(v, "0") != 0;
    }
    return on;
}

#define DEBUG(...)                                                                  \
    do {                                                                            \
        if (debug_on()) {                                                           \
            fprintf(stderr, "warprace (debug): " __VA_ARGS__);                      \
            fputc('\n', stderr);                                                    \
        }                                                                           \
    } while (0)

/* The launch callbacks hand over what the runtime launched: a CUfunction,
 * or (CUDA 12 and later, whose runtime loads code as libraries) a CUkernel,
 * which cuLaunchKernel accepts in its place but cuFuncGetModule and
 * cuFuncGetAttribute do not.  Sets *f to a CUfunction of the current
 * context and returns its module, or NULL (*f then unchanged). */
static CUmodule resolve_function(CUfunction *f, const char *name)
{
    CUmodule mod;
    CUresult rc = cuFuncGetModule(&mod, *f);
    if (rc == CUDA_SUCCESS)
        return mod;
    CUfunction g = NULL;
    CUresult rk = cuKernelGetFunction(&g, (CUkernel)*f);
    CUresult rm = rk == CUDA_SUCCESS ? cuFuncGetModule(&mod, g) : rk;
    DEBUG("%s: cuFuncGetModule(%p) = %d; cuKernelGetFunction = %d -> %p, its module: %d", name,
          (void *)*f, (int)rc, (int)rk, (void *)g, (int)rm);
    if (rm != CUDA_SUCCESS)
        return NULL;
    *f = g;
    return mod;
}

/* Gives module `mod` (NULL: none found) the device state.  Returns 0 when
 * it has one (the kernel was built with the device API), -1 when not. */
static int install_state(CUmodule mod, const char *name)
{
    if (!mod)
        return -1;
    for (size_t i = 0; i < R.nmods; i++)
        if (R.mods[i].mod == mod)
            return R.mods[i].has_state ? 0 : -1;
    if (R.nmods == R.capmods) {
        R.capmods = R.capmods ? 2 * R.capmods : 16;
        R.mods = realloc(R.mods, R.capmods * sizeof *R.mods);
    }
    CUdeviceptr var = 0;
    size_t bytes = 0;
    CUresult rc = cuModuleGetGlobal(&var, &bytes, mod, WRR_API_MARKER);
    int has = rc == CUDA_SUCCESS && bytes == sizeof(CUdeviceptr);
    CUresult wrc = has ? cuMemcpyHtoD(var, &R.state_dev, sizeof R.state_dev) : CUDA_SUCCESS;
    DEBUG("%s: module %p: cuModuleGetGlobal(%s) = %d (%zu bytes at %#llx); state %#llx "
          "written: %d", name, (void *)mod, WRR_API_MARKER, (int)rc, bytes,
          (unsigned long long)var, (unsigned long long)R.state_dev, (int)wrc);
    if (has && wrc != CUDA_SUCCESS) {
        set_error("could not give a module the recorder's state (cuMemcpyHtoD)");
        has = 0;
    }
    R.mods[R.nmods].mod = mod;
    R.mods[R.nmods++].has_state = has;
    return has ? 0 : -1;
}

static int selected(const char *name)
{
    if (R.have_kernels && !wr_kernel_matches(&R.kernels, name))
        return 0;
    if (R.nvtx[0] && R.nvtx_depth <= 0)
        return 0;
    return 1;
}

/* Is stream capturing into a CUDA graph?  Its work then does not run now
 * (it runs when the graph is launched), and a synchronization or a
 * synchronous copy of ours would invalidate the capture. */
static int capturing(CUstream stream)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    wrr_rt_internal = 1;
    CUresult rc = cuStreamIsCapturing(stream, &st);
    wrr_rt_internal = 0;
    return rc == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Counts an operation issued into a capture: not recorded, and not
 * disturbed. */
static int skip_captured(CUstream stream)
{
    if (!capturing(stream))
        return 0;
    pthread_mutex_lock(&R.lock);
    R.captured_ops++;
    pthread_mutex_unlock(&R.lock);
    return 1;
}

/* The launch this thread began was captured: its end does nothing. */
static __thread int launch_captured;
void wrr_rt_launch_begin(CUfunction f, const char *name, const unsigned grid[3],
                         const unsigned block[3], const unsigned cluster[3],
                         unsigned dyn_shared, CUstream stream)
{
    launch_captured = skip_captured(stream);
    if (launch_captured || wrr_rt_ensure() != 0)
        return;
    /* launches are serialized across host threads too (launch_serial.h) */
    if (wrr_launch_serial_take() != 0)
        set_error("a launch waited 30 s for another thread's launch to end");
    pthread_mutex_lock(&R.lock);
    wrr_rt_internal = 1;
    CUmodule mod = resolve_function(&f, name ? name : "?");
    uint32_t want = (uint32_t)selected(name ? name : "");
    if (install_state(mod, name ? name : "?") != 0 && want) {
        if (!R.launches_unrecorded++)
            snprintf(R.launch_unrecorded_name, sizeof R.launch_unrecorded_name, "%s",
                     name ? name : "?");
    }
    if (want != R.dev_enabled) {
        cuMemcpyHtoD(R.state_dev + offsetof(wrr_dev_state, enabled), &want, sizeof want);
        R.dev_enabled = want;
    }
    int static_shared = 0;
    cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
    /* A kernel compiled with __cluster_dims__ runs in clusters although its
     * launch names none (an explicit one would be refused); cluster.sync()
     * in it gathers those blocks, so the launch event must say so. */
    unsigned cl[3];
    for (int i = 0; i < 3; i++)
        cl[i] = cluster[i] ? cluster[i] : 1;
    if (cl[0] * cl[1] * cl[2] == 1) {
        static const CUfunction_attribute dims[3] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                                                     CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                                     CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH};
        int req[3] = {0, 0, 0}, ok = 1;
        for (int i = 0; i < 3 && ok; i++)
            ok = cuFuncGetAttribute(&req[i], dims[i], f) == CUDA_SUCCESS && req[i] > 0;
        for (int i = 0; i < 3 && ok; i++)
            cl[i] = (unsigned)req[i];
    }
    wrr_rt_internal = 0;
    pthread_mutex_lock(&R.wlock);
    uint32_t kid = wr_writer_kernel_once(R.w, name ? name : "");
    pthread_mutex_unlock(&R.wlock);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch.launch = ++R.next_launch;
    ev.u.launch.kernel = kid;
    for (int i = 0; i < 3; i++) {
        ev.u.launch.grid[i] = grid[i];
        ev.u.launch.block_dim[i] = block[i];
        ev.u.launch.cluster[i] = cl[i];
    }
    ev.u.launch.shared_bytes = dyn_shared + (unsigned)static_shared;
    ev.u.launch.stream = handle_id(stream, 0);
    ev.site = wrr_host_site_trace_id(wrr_host_site_launching(host_sites(), name), lk_site, NULL);
    R.open_launch = ev.u.launch.launch;
    R.open_stream = ev.u.launch.stream;
    R.launches++;
    post(&ev);
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_launch_end(CUstream stream)
{
    (void)stream;
    if (launch_captured) {
        launch_captured = 0;
        return;
    }
    if (!R.ready) {
        wrr_launch_serial_release();
        return;
    }
    /* serialize: the kernel completes (and every record is committed)
     * before the end is posted and before the program goes on */
    wrr_rt_internal = 1;
    CUresult rc = cuCtxSynchronize();
    wrr_rt_internal = 0;
    if (rc != CUDA_SUCCESS)
        set_error("a recorded kernel failed (cuCtxSynchronize after the launch)");
    /* where the launch's records end: the drain runs behind, and must not
     * take the next launch's records for this one's */
    unsigned long long head = 0;
    wrr_rt_internal = 1;
    CUresult hrc = cuMemcpyDtoH(&head, R.state_dev + offsetof(wrr_dev_state, head), sizeof head);
    wrr_rt_internal = 0;
    DEBUG("launch %u ended (cuCtxSynchronize = %d): ring head %llu (read: %d), host tail %llu",
          R.open_launch, (int)rc, head, (int)hrc, (unsigned long long)R.ctl_host->tail);
    pthread_mutex_lock(&R.lock);
    /* our synchronize is not the program's: the records are complete, but
     * the KERNEL_END (which orders the host after the kernel) waits until
     * the program itself synchronizes (flush_ends) */
    wrr_drain_post_close(&R.drain, R.open_launch,
                         rc == CUDA_SUCCESS && hrc == CUDA_SUCCESS ? head : WRR_END_UNKNOWN);
    wrr_ends_add(&R.ends, R.open_launch, R.open_stream, post_cb, NULL);
    R.open_launch = 0;
    pthread_mutex_unlock(&R.lock);
    wrr_launch_serial_release();
}

static void flush_ends(uint32_t stream)
{
    wrr_ends_flush(&R.ends, stream, post_cb, NULL);
}

void wrr_rt_alloc(uint64_t base, uint64_t size, const char *what)
{
    if (!base || wrr_rt_ensure() != 0)
        return;
    pthread_mutex_lock(&R.lock);
    char label[128];
    what = wrr_take_alloc_label(label, sizeof label, what);
    pthread_mutex_lock(&R.wlock);
    uint32_t id = wr_writer_alloc(R.w, base, size, WR_SPACE_GLOBAL, what ? what : "");
    pthread_mutex_unlock(&R.wlock);
    if (R.nallocs == R.capallocs) {
        R.capallocs = R.capallocs ? 2 * R.capallocs : 64;
        R.allocs = realloc(R.allocs, R.capallocs * sizeof *R.allocs);
    }
    R.allocs[R.nallocs].base = base;
    R.allocs[R.nallocs++].id = id;
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_ALLOC;
    ev.u.alloc.alloc = id;
    post(&ev);
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_free(uint64_t base)
{
    if (!base || !R.ready)
        return;
    pthread_mutex_lock(&R.lock);
    for (size_t i = R.nallocs; i-- > 0;)
        if (R.allocs[i].base == base) {
            wr_event ev;
            memset(&ev, 0, sizeof ev);
            ev.kind = WR_EV_FREE;
            ev.u.alloc.alloc = R.allocs[i].id;
            post(&ev);
            R.allocs[i] = R.allocs[--R.nallocs];
            break;
        }
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_copy_region(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                        uint64_t depth, unsigned kind, CUstream stream, int async)
{
    if (async && skip_captured(stream))
        return;
    if (wrr_rt_ensure() != 0)
        return;
    pthread_mutex_lock(&R.lock);
    uint32_t sid = handle_id(stream, 0);
    if (!async)
        flush_ends(sid);   /* a synchronous copy waits for its stream */
    uint32_t site = wrr_host_site_trace_id(wrr_host_site_here(host_sites()), lk_site, NULL);
    wrr_copy_events(dst, src, width, height, depth, kind, sid, async, site, post_cb, NULL);
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_copy_unrecorded(const char *why)
{
    pthread_mutex_lock(&R.lock);
    if (!R.copies_unrecorded++)
        snprintf(R.copy_unrecorded_why, sizeof R.copy_unrecorded_why, "%s", why);
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_copy(uint64_t dst, uint64_t src, uint64_t bytes, unsigned kind, CUstream stream,
                 int async)
{
    wrr_copy_side d = {dst, 0, 0}, s = {src, 0, 0};
    wrr_rt_copy_region(d, s, bytes, 1, 1, kind, stream, async);
}

static void post_simple(uint8_t kind, void *stream, void *event, int has_stream)
{
    if (!R.ready)
        return;
    pthread_mutex_lock(&R.lock);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    if (kind == WR_EV_STREAM_SYNC) {
        ev.u.stream_sync.stream = handle_id(stream, 0);
        flush_ends(ev.u.stream_sync.stream);
    } else if (kind == WR_EV_DEVICE_SYNC) {
        flush_ends(WRR_ALL_STREAMS);
    } else {
        ev.u.stream_event.event = handle_id(event, 1);
        ev.u.stream_event.stream = has_stream ? handle_id(stream, 0) : 0;
        if (kind == WR_EV_EVENT_RECORD)
            wrr_ends_event_recorded(&R.ends, ev.u.stream_event.event, ev.u.stream_event.stream);
        else if (kind == WR_EV_EVENT_SYNC)
            wrr_ends_event_synced(&R.ends, ev.u.stream_event.event, post_cb, NULL);
    }
    post(&ev);
    pthread_mutex_unlock(&R.lock);
}

void wrr_rt_stream_sync(CUstream s) { post_simple(WR_EV_STREAM_SYNC, s, NULL, 1); }
void wrr_rt_device_sync(void) { post_simple(WR_EV_DEVICE_SYNC, NULL, NULL, 0); }
void wrr_rt_event_record(void *e, CUstream s)
{
    if (!skip_captured(s))
        post_simple(WR_EV_EVENT_RECORD, s, e, 1);
}

void wrr_rt_stream_wait(CUstream s, void *e)
{
    if (!skip_captured(s))
        post_simple(WR_EV_STREAM_WAIT, s, e, 1);
}

void wrr_rt_graph_launch(CUstream stream)
{
    if (skip_captured(stream) || wrr_rt_ensure() != 0)   /* skipped: a graph launched into a capture */
        return;
    pthread_mutex_lock(&R.lock);
    /* its kernels must not write into the ring: no launch of ours is open
     * for them, and the drain would take their records for the next one */
    if (R.dev_enabled) {
        uint32_t off = 0;
        wrr_rt_internal = 1;
        cuMemcpyHtoD(R.state_dev + offsetof(wrr_dev_state, enabled), &off, sizeof off);
        wrr_rt_internal = 0;
        R.dev_enabled = 0;
    }
    R.graph_launches++;
    /* what the graph does is missing from the trace: the analysis says so */
    wr_event ev = wrr_host_lost_event(1);
    post(&ev);
    pthread_mutex_unlock(&R.lock);
}
void wrr_rt_event_sync(void *e) { post_simple(WR_EV_EVENT_SYNC, NULL, e, 0); }

/* Pops do not say which range they close: a per-thread stack of "was it
 * ours". */
static __thread unsigned char nvtx_stack[256];
static __thread int nvtx_sp;

void wrr_rt_nvtx_push(const char *name)
{
    int ours = R.nvtx[0] && name && !strcmp(name, R.nvtx);
    if (nvtx_sp < (int)sizeof nvtx_stack)
        nvtx_stack[nvtx_sp++] = (unsigned char)ours;
    if (ours)
        __atomic_add_fetch(&R.nvtx_depth, 1, __ATOMIC_RELAXED);
}

void wrr_rt_nvtx_pop(void)
{
    if (nvtx_sp > 0 && nvtx_stack[--nvtx_sp])
        __atomic_sub_fetch(&R.nvtx_depth, 1, __ATOMIC_RELAXED);
}

/* ---- the end --------------------------------------------------------------- */

void wrr_rt_shutdown(void)
{
    pthread_mutex_lock(&R.lock);
    if (R.shut) {
        pthread_mutex_unlock(&R.lock);
        return;
    }
    R.shut = 1;
    uint64_t events = 0;
    int ok = 1;
    if (R.ready) {
        flush_ends(WRR_ALL_STREAMS);     /* the process exit observes every kernel */
        if (wrr_drain_stop_thread(&R.drain) != 0) {
            set_error(R.drain.error[0] ? R.drain.error : "the drain failed");
            ok = 0;
        }
        wr_error err;
        pthread_mutex_lock(&R.wlock);
        if (wr_writer_close(R.w, &err) != 0) {
            set_error(err.msg);
            ok = 0;
        }
        pthread_mutex_unlock(&R.wlock);
        events = R.drain.st.device_events + R.drain.st.host_events + R.drain.st.lost_events_emitted;
    } else if (R.configured && R.enabled_cfg && !R.failed) {
        /* the program launched nothing: still leave a valid, empty trace */
        wr_header h;
        memset(&h, 0, sizeof h);
        h.version_major = WR_FORMAT_MAJOR;
        h.version_minor = WR_FORMAT_MINOR;
        h.producer = "warprace-record";
        h.producer_version = WARPRACE_VERSION;
        h.device = "";
        h.host = "";
        h.command = R.command;
        h.warp_size = 32;
        wr_error err;
        wr_writer *w = wr_writer_open(R.out, &h, NULL, &err);
        if (!w || wr_writer_close(w, &err) != 0)
            set_error(err.msg);
    }
    if (R.stats[0]) {
        FILE *f = fopen(R.stats, "w");
        if (f) {
            fprintf(f, "events=%llu\n", (unsigned long long)events);
            fprintf(f, "device_records=%llu\n", (unsigned long long)R.drain.st.records);
            fprintf(f, "launches=%llu\n", (unsigned long long)R.launches);
            fprintf(f, "lost_records=%llu\n", (unsigned long long)R.drain.st.lost_records);
            fprintf(f, "lost_lanes=%llu\n", (unsigned long long)R.drain.st.lost_lanes);
            fprintf(f, "drain_busy_ns=%llu\n", (unsigned long long)R.drain.st.busy_ns);
            fprintf(f, "ring_setup_ns=%llu\n", (unsigned long long)R.ring_setup_ns);
            fprintf(f, "drain_threads=%u\n", R.drain_threads);
            if (R.ctl_host)
                fprintf(f, "ring_full_waits=%llu\n", (unsigned long long)R.ctl_host->full_waits);
            fprintf(f, "wall_ns=%llu\n", (unsigned long long)(wrr_monotonic_ns() - R.t_start));
            if (R.launches_unrecorded)
                fprintf(f, "launches_unrecorded=%llu (the first: %s)\n",
                        (unsigned long long)R.launches_unrecorded, R.launch_unrecorded_name);
            if (R.graph_launches || R.captured_ops)
                fprintf(f, "graph_work_unrecorded=%llu graph launches, %llu operations "
                           "captured into graphs (--mode sanitizer records graphs)\n",
                        (unsigned long long)R.graph_launches, (unsigned long long)R.captured_ops);
            if (R.copies_unrecorded)
                fprintf(f, "host_copies_unrecorded=%llu (%s)\n",
                        (unsigned long long)R.copies_unrecorded, R.copy_unrecorded_why);
            if (wrr_host_sites_resolver_failures(R.sites))
                fprintf(f, "host_site_lookups_failed=%lu\n", wrr_host_sites_resolver_failures(R.sites));
            fprintf(f, "ok=%d\n", ok);
            if (R.error[0])
                fprintf(f, "error=%s\n", R.error);
            fclose(f);
        }
    }
    wrr_host_sites_free(R.sites);
    R.sites = NULL;
    pthread_mutex_unlock(&R.lock);
}

/*
 * libwarprace_sanitizer.so: records UNMODIFIED CUDA programs through the
 * Compute Sanitizer API (SANITIZER.md).  Loaded by the driver through
 * CUDA_INJECTION64_PATH (InitializeInjection); libsanitizer-public.so is
 * opened with dlopen, so this builds without it.
 *
 *  - module load: the cubin goes into the trace (wr_writer_module), is
 *    disassembled with nvdisasm -c -g and parsed (sass_classify.c), and the
 *    module is patched with the device callbacks of patches.fatbin for
 *    global / shared / local accesses, barriers, __syncwarp, block
 *    enter/exit and device-side malloc/free;
 *  - launches: per-launch callback data (wrs_launch_data) pointing at the
 *    recorder's ring state; launches are serialized (stream synchronize at
 *    LAUNCH_END) like the CUPTI path, so every record belongs to the one
 *    open launch;
 *  - memcpy / memset, stream / context synchronization, events, device
 *    memory allocations become host events;
 *  - the ring, the drain and the trace writer are the recorder's own
 *    (ring_format.h, drain.c, writer_sink.c); between the drain and the
 *    writer sits the finisher (san_events.c), which classifies, names
 *    sites and infers fences.
 *
 * NOTHING HERE HAS RUN ON A GPU YET (see SANITIZER.md, "Status").
 */
#include <dlfcn.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_label.h"
#include "copy_region.h"
#include "drain.h"
#include "graph_order.h"
#include "handle_ids.h"
#include "host_site.h"
#include "warprace/demangle.h"
#include "launch_serial.h"
#include "pending_ends.h"
#include "record_args.h"
#include "san_events.h"
#include "san_shared.h"
#include "sanitizer_api.h"
#include "sass_classify.h"
#include "warprace/trace.h"
#include "warprace_version.h"
#include "writer_sink.h"

#ifndef WRS_PATCHES_BUILD_PATH
#define WRS_PATCHES_BUILD_PATH ""
#endif
#ifndef WRS_SANITIZER_LIB_DEFAULT
#define WRS_SANITIZER_LIB_DEFAULT "/usr/local/cuda/compute-sanitizer/libsanitizer-public.so"
#endif
#ifndef WRS_NVDISASM_DEFAULT
#define WRS_NVDISASM_DEFAULT "/usr/local/cuda/bin/nvdisasm"
#endif

/* A launch's device data: what its patches write through (wrs_launch_data)
 * and the block counters it points at. */
typedef struct launch_mem {
    wrs_launch_data *ld;
    void *enter, *exitc;
} launch_mem;

typedef struct mod_entry {
    CUmodule module;
    wrs_module sass;
    int parsed;
    int mbarriers_patched;       /* its mbarrier actions reach wrs_cuda_barrier* */
    uint32_t trace_id;
} mod_entry;

static struct {
    wrs_sanitizer_fns fn;
    Sanitizer_SubscriberHandle sub;
    pthread_mutex_t lock, wlock;
    int enabled, ready, failed, shut;
    char out[4096], stats[4096], command[4096], patches[4096], nvdisasm[1024];
    regex_t kernels;
    int have_kernels;
    uint64_t buffer;
    int drop;
    CUcontext ctx;
    uint64_t *ring;
    wrr_host_ctl *ctl;
    wrr_dev_state *state_dev;
    uint32_t log2cap;
    wr_writer *w;
    wrr_writer_sink ws;
    wrs_finisher fin;
    wrr_drain drain;
    mod_entry *mods;
    size_t nmods, capmods;
    CUcontext patched_ctx[16];
    size_t npatched_ctx;
    uint32_t next_launch, open_launch, open_stream;
    wrr_pending_ends ends;       /* KERNEL_ENDs the program has not observed yet */
    launch_mem open_mem;         /* the open launch's device data */
    uint64_t launches;
    uint64_t captured_launches;  /* launches captured into CUDA graphs (not run when issued) */
    uint64_t graph_launches;     /* CUDA graph launches */
    uint64_t launch_serial_timeouts;     /* launches not serialized with another
                                            thread's (launch_serial_take) */
    uint64_t graph_launches_unrecorded;  /* ... that ran unrecorded (one lost event each) */
    uint64_t graph_nodes_recorded;       /* working nodes recorded (kernels, copies) */
    uint64_t graph_nodes_unordered;      /* node orderings missed (nodes announced out
                                            of their order) */
    uint64_t graph_nodes_lost;           /* working nodes that never began (lost) */
    uint64_t graph_grid_ids_repeated;    /* kernel nodes whose grid id another node of
                                            their graph launch had (not recorded) */
    uint64_t graph_copies_skipped;       /* copy callbacks inside a graph launch: the
                                            node's own record stands */
    const char *graph_unrecorded_why;    /* the latest reason one was */
    wrr_graph **graphs;                  /* executable graphs, as made */
    size_t ngraphs, capgraphs;
    struct {                             /* the graph launch being issued */
        wrr_graph *g;
        pthread_t owner;
        uint32_t stream;
        CUcontext ctx;
        Sanitizer_StreamHandle hstream;
        struct graph_member {
            uint32_t launch;
            launch_mem mem;
            struct graph_upload {        /* its data's host side, until the launch ends */
                wrs_launch_data ld;
                wrs_node_data node;
            } *upload;
        } *members;
        size_t nmembers, capmembers;
        wrs_node_data *nodes;            /* the launch's node table (san_shared.h) */
        wrs_launch_data *skip_ld;        /* the data of its kernel nodes not recorded */
        wrs_launch_data skip_host;       /* ... its host side */
        uint32_t node_mask;
        uint64_t *node_keys;             /* its keys, as the host filled them */
    } gl;
    wrr_handle_ids ids;          /* streams and events -> small ids */
    struct { uint64_t base; uint32_t id; } *allocs;
    size_t nallocs, capallocs;
    uint64_t dmalloc_lost;        /* device malloc/free records past WRS_DMALLOC_MAX */
    uint64_t dfree_unknown;       /* device frees of a pointer with no recorded malloc */
    int dsmem_unpatched;          /* the API refused the remote shared access patch */
    int cluster_bar_unpatched;
    uint64_t arrive_unreported_launches;   /* launches of kernels with a BAR.ARV */
    uint64_t mbarrier_unrecorded_launches; /* ... with mbarrier instructions */
    char unrecorded_sync_last[256];    /* ... the cluster barrier patches (1), or the wait's (2) */
    /* host events before the first launch (the drain starts with it): kept
     * in order and posted ahead of it, or written at exit when no kernel
     * ever ran; early_lost counts what could not be kept */
    wr_event *early;
    size_t nearly, capearly;
    uint64_t early_lost;
    wrr_host_sites *sites;        /* the program's call sites of copies and launches */
    uint64_t t_start;
    char error[512];
} G = {.lock = PTHREAD_MUTEX_INITIALIZER, .wlock = PTHREAD_MUTEX_INITIALIZER};

static void set_error(const char *msg)
{
    if (!G.error[0])
        snprintf(G.error, sizeof G.error, "%s", msg);
    fprintf(stderr, "warprace (sanitizer): %s\n", msg);
}

static int san_ok(SanitizerResult r, const char *what)
{
    if (r == SANITIZER_SUCCESS)
        return 1;
    const char *s = NULL;
    if (G.fn.get_result_string)
        G.fn.get_result_string(r, &s);
    char msg[512];
    snprintf(msg, sizeof msg, "%s failed: %s", what, s ? s : "unknown error");
    set_error(msg);
    return 0;
}

static int load_api(void)
{
    const char *path = getenv("WARPRACE_SANITIZER_LIB");
    if (!path || !*path)
        path = WRS_SANITIZER_LIB_DEFAULT;
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "warprace (sanitizer): cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    static const char *const names[] = {WRS_SANITIZER_SYMBOLS};
    void **slots = (void **)&G.fn;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        slots[i] = dlsym(h, names[i]);
        if (!slots[i]) {
            fprintf(stderr, "warprace (sanitizer): %s lacks %s\n", path, names[i]);
            return -1;
        }
    }
    *(void **)&G.fn.get_stream_handle = dlsym(h, "sanitizerGetStreamHandle");
    return 0;
}

/* ---- the writer behind a lock ------------------------------------------------- */

static int lk_event(void *ctx, const wr_event *ev)
{
    (void)ctx;
    pthread_mutex_lock(&G.wlock);
    int rc = wr_writer_event(G.w, ev, &G.ws.err);
    pthread_mutex_unlock(&G.wlock);
    return rc;
}

static const char *lk_error(void *ctx)
{
    (void)ctx;
    return G.ws.err.msg;
}

static int lk_flush(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&G.wlock);
    int rc = wr_writer_flush(G.w, &G.ws.err);
    pthread_mutex_unlock(&G.wlock);
    return rc;
}

static uint32_t lk_site(void *ctx, const char *file, uint32_t line, const char *fn, uint64_t pc)
{
    (void)ctx;
    pthread_mutex_lock(&G.wlock);
    uint32_t id = wr_writer_site(G.w, pc, file, line, fn);
    pthread_mutex_unlock(&G.wlock);
    return id;
}

/* The program's call sites, looked up from its first copy or launch on.
 * G.lock held. */
static wrr_host_sites *host_sites(void)
{
    if (!G.sites)
        G.sites = wrr_host_sites_new();
    return G.sites;
}

/* ---- configuration and the runtime --------------------------------------------- */

static int configure(void)
{
    const char *v = getenv(WRR_ENV_OUT);
    if (!v || !*v)
        return -1;
    snprintf(G.out, sizeof G.out, "%s", v);
    v = getenv(WRR_ENV_STATS);
    snprintf(G.stats, sizeof G.stats, "%s", v ? v : "");
    v = getenv(WRR_ENV_COMMAND);
    snprintf(G.command, sizeof G.command, "%s", v ? v : "");
    v = getenv(WRR_ENV_KERNELS);
    if (v && *v && regcomp(&G.kernels, v, REG_EXTENDED | REG_NOSUB) == 0)
        G.have_kernels = 1;
    G.buffer = WRR_DEFAULT_BUFFER;
    v = getenv(WRR_ENV_BUFFER);
    if (v && wrr_parse_size(v, &G.buffer) != 0)
        G.buffer = WRR_DEFAULT_BUFFER;
    v = getenv(WRR_ENV_DROP);
    G.drop = v && !strcmp(v, "1");
    v = getenv("WARPRACE_PATCHES");
    snprintf(G.patches, sizeof G.patches, "%s", v && *v ? v : WRS_PATCHES_BUILD_PATH);
    v = getenv("WARPRACE_NVDISASM");
    snprintf(G.nvdisasm, sizeof G.nvdisasm, "%s", v && *v ? v : WRS_NVDISASM_DEFAULT);
    G.t_start = wrr_monotonic_ns();
    return 0;
}

/* The device of ctx (else of the current context) in the header: name, sm
 * and clock, as the device API's recorder names them (host_runtime.c).  The
 * driver is loaded in the process already (the CUDA runtime opens it with
 * RTLD_LOCAL: its symbols are looked up in its own handle, not linked);
 * where none of this works the fields stay empty. */
static void device_of_context(CUcontext ctx, wr_header *h, char *name, size_t len)
{
    typedef CUresult (*ctx_get_device_fn)(CUdevice *);
    typedef CUresult (*ctx_push_fn)(CUcontext);
    typedef CUresult (*ctx_pop_fn)(CUcontext *);
    typedef CUresult (*device_get_name_fn)(char *, int, CUdevice);
    typedef CUresult (*device_get_attribute_fn)(int *, CUdevice_attribute, CUdevice);
    name[0] = 0;
    h->device = name;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return;
    ctx_get_device_fn get_device;
    ctx_push_fn push;
    ctx_pop_fn pop;
    device_get_name_fn get_name;
    device_get_attribute_fn get_attribute;
    *(void **)&get_device = dlsym(lib, "cuCtxGetDevice");
    *(void **)&push = dlsym(lib, "cuCtxPushCurrent_v2");
    *(void **)&pop = dlsym(lib, "cuCtxPopCurrent_v2");
    *(void **)&get_name = dlsym(lib, "cuDeviceGetName");
    *(void **)&get_attribute = dlsym(lib, "cuDeviceGetAttribute");
    CUdevice dev;
    int have = 0;
    if (get_device && get_name && get_attribute) {
        if (ctx && push && pop && push(ctx) == CUDA_SUCCESS) {
            CUcontext popped;
            have = get_device(&dev) == CUDA_SUCCESS;
            pop(&popped);
        } else {
            have = get_device(&dev) == CUDA_SUCCESS;
        }
    }
    if (have) {
        int major = 0, minor = 0, clock = 0;
        if (get_name(name, (int)len, dev) != CUDA_SUCCESS)
            name[0] = 0;
        name[len - 1] = 0;
        if (get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ==
                CUDA_SUCCESS &&
            get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ==
                CUDA_SUCCESS)
            h->sm_arch = (uint32_t)(major * 10 + minor);
        if (get_attribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) == CUDA_SUCCESS &&
            clock > 0)
            h->clock_khz = (uint32_t)clock;
    }
    dlclose(lib);   /* NOLOAD took a reference: the library stays */
}

/* The writer exists from the first module load (module images go into it);
 * G.lock held. */
static int ensure_writer(CUcontext ctx)
{
    if (G.w)
        return 0;
    if (G.failed)
        return -1;
    wr_header h;
    memset(&h, 0, sizeof h);
    h.version_major = WR_FORMAT_MAJOR;
    h.version_minor = WR_FORMAT_MINOR;
    h.producer = "warprace-record-sanitizer";
    h.producer_version = WARPRACE_VERSION;
    char devname[256];
    device_of_context(ctx, &h, devname, sizeof devname);
    h.warp_size = 32;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    h.host = host;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h.time_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    h.command = G.command;
    wr_error err;
    /* chunks compressed and written on the writer's thread: the drain
     * thread converts records meanwhile (bench_drain) */
    int valid;
    wr_writer_options wopts = {.background = (int)wrr_drain_threads(
                                   getenv(WRR_ENV_DRAIN_THREADS), sysconf(_SC_NPROCESSORS_ONLN),
                                   &valid)};
    G.w = wr_writer_open(G.out, &h, &wopts, &err);
    if (!G.w) {
        set_error(err.msg);
        G.failed = 1;
        return -1;
    }
    return 0;
}

static void post_early(void);

/* Ring (pinned host memory, device-visible through UVA), device state,
 * finisher, drain thread: at the first launch.  G.lock held. */
static int ensure_runtime(CUcontext ctx, Sanitizer_StreamHandle hs)
{
    if (G.ready)
        return 0;
    if (G.failed || ensure_writer(ctx) != 0)
        return -1;
    G.ctx = ctx;
    G.log2cap = wrr_buffer_log2cap(G.buffer);
    size_t ring_bytes = (size_t)WRR_SLOT_BYTES << G.log2cap;
    void *ring = NULL, *ctl = NULL, *st = NULL;
    if (!san_ok(G.fn.alloc_host(ctx, &ring, ring_bytes), "sanitizerAllocHost (ring)") ||
        !san_ok(G.fn.alloc_host(ctx, &ctl, sizeof(wrr_host_ctl)), "sanitizerAllocHost (ctl)") ||
        !san_ok(G.fn.alloc(ctx, &st, sizeof(wrr_dev_state)), "sanitizerAlloc (state)")) {
        G.failed = 1;
        return -1;
    }
    G.ring = ring;
    G.ctl = ctl;
    G.state_dev = st;
    memset(G.ring, 0, ring_bytes);
    memset(G.ctl, 0, sizeof *G.ctl);
    static wrr_dev_state init;   /* copied asynchronously: must stay alive */
    memset(&init, 0, sizeof init);
    init.slots = G.ring;         /* UVA: pinned host memory has the same address */
    init.ctl = G.ctl;
    init.log2cap = G.log2cap;
    init.flags = G.drop ? WRR_F_DROP : 0;
    init.enabled = 1;
    if (!san_ok(G.fn.memcpy_h2d_async(G.state_dev, &init, sizeof init, hs), "state upload") ||
        !san_ok(G.fn.stream_synchronize(hs), "state upload sync")) {
        G.failed = 1;
        return -1;
    }
    /* no drain workers on this path: its finisher (san_events.c) rewrites
     * the event stream one event at a time */
    wrr_sink wsink = {NULL, lk_event, lk_flush, lk_site, NULL, lk_error, NULL};
    if (wrs_finisher_init(&G.fin, &wsink) != 0) {
        G.failed = 1;
        return -1;
    }
    wrr_sink mid;
    wrs_finisher_sink(&G.fin, &mid);
    wrr_ring r = {G.ring, G.ctl, G.log2cap};
    wrr_drain_options o = {.read_mem = wrs_finisher_read_mem, .read_mem_ctx = &G.fin};
    if (wrr_drain_init(&G.drain, &r, &mid, &o) != 0 || wrr_drain_start_thread(&G.drain) != 0) {
        set_error("cannot start the drain thread");
        G.failed = 1;
        return -1;
    }
    G.ready = 1;
    post_early();
    return 0;
}

/* Driver functions this library calls (it does not link the driver: they
 * are looked up in the one the program loaded). */
typedef CUresult (*stream_get_flags_fn)(CUstream, unsigned *);
typedef CUresult (*stream_is_capturing_fn)(CUstream, CUstreamCaptureStatus *);
typedef CUresult (*graph_get_nodes_fn)(CUgraph, CUgraphNode *, size_t *);
typedef CUresult (*graph_get_edges_fn)(CUgraph, CUgraphNode *, CUgraphNode *, CUgraphEdgeData *,
                                       size_t *);
typedef CUresult (*graph_node_get_type_fn)(CUgraphNode, CUgraphNodeType *);
static stream_get_flags_fn stream_get_flags;
static stream_is_capturing_fn stream_is_capturing;
static graph_get_nodes_fn graph_get_nodes;
static graph_get_edges_fn graph_get_edges;      /* cuGraphGetEdges_v2 (12.3 on) */
static graph_node_get_type_fn graph_node_get_type;
static pthread_once_t driver_symbols_once = PTHREAD_ONCE_INIT;

static void find_driver_symbols(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return;
    *(void **)&stream_get_flags = dlsym(lib, "cuStreamGetFlags");
    *(void **)&stream_is_capturing = dlsym(lib, "cuStreamIsCapturing");
    *(void **)&graph_get_nodes = dlsym(lib, "cuGraphGetNodes");
    *(void **)&graph_get_edges = dlsym(lib, "cuGraphGetEdges_v2");
    *(void **)&graph_node_get_type = dlsym(lib, "cuGraphNodeGetType");
    dlclose(lib);   /* NOLOAD took a reference: the library stays */
}

/* for the non-blocking mark of a stream id (handle_ids.h) */
static int stream_flags(void *stream, unsigned *flags)
{
    pthread_once(&driver_symbols_once, find_driver_symbols);
    return stream_get_flags && stream_get_flags((CUstream)stream, flags) == CUDA_SUCCESS ? 0 : -1;
}

static uint32_t handle_id(void *h, int is_event)
{
    if (is_event)
        return wrr_event_id(&G.ids, h);
    if (h == WRR_STREAM_HANDLE_PER_THREAD)
        return wrr_stream_id_of_thread(&G.ids, wrr_host_thread_number());
    return wrr_stream_id(&G.ids, h, stream_flags);
}

/* Is hs, the handle a callback gives with a NULL stream, not the legacy
 * stream's?  In a program built with --default-stream per-thread the API
 * gives NULL for the calling thread's default stream (an H100 run), with
 * that stream's own handle.  Without sanitizerGetStreamHandle: taken for
 * the legacy stream. */
static int per_thread_default(CUcontext ctx, Sanitizer_StreamHandle hs)
{
    static CUcontext known;
    static Sanitizer_StreamHandle legacy;
    if (!G.fn.get_stream_handle || !ctx)
        return 0;
    if (ctx != known) {
        legacy = NULL;
        if (G.fn.get_stream_handle(ctx, CU_STREAM_LEGACY, &legacy) != SANITIZER_SUCCESS)
            legacy = NULL;
        known = ctx;
    }
    return legacy && hs != legacy;
}

/* The id of a callback's stream (s, its handle hs, in context ctx).
 * G.lock held. */
static uint32_t stream_id(CUcontext ctx, CUstream s, Sanitizer_StreamHandle hs)
{
    if (!s && hs && per_thread_default(ctx, hs))
        return wrr_stream_id_of_thread(&G.ids, wrr_host_thread_number());
    return handle_id(s, 0);
}

static void post(const wr_event *ev)
{
    if (G.ready) {
        wrr_drain_post(&G.drain, ev);
        return;
    }
    if (G.failed || G.shut)
        return;
    if (G.nearly == G.capearly) {
        size_t cap = G.capearly ? 2 * G.capearly : 64;
        wr_event *n = realloc(G.early, cap * sizeof *n);
        if (!n) {
            G.early_lost++;
            return;
        }
        G.early = n;
        G.capearly = cap;
    }
    G.early[G.nearly++] = *ev;
}

/* The host events kept before the runtime was ready, in order, through
 * the drain (ready) or straight to the writer (exit without a launch). */
static void post_early(void)
{
    for (size_t i = 0; i < G.nearly; i++) {
        wr_event *ev = &G.early[i];
        if (ev->kind == WR_EV_HOST_COPY && ev->site)   /* an ordinal until now (copy_site) */
            ev->site = G.w ? wrr_host_site_trace_id(wrr_host_site_at(G.sites, ev->site), lk_site,
                                                    NULL)
                           : 0;
        if (G.ready)
            wrr_drain_post(&G.drain, ev);
        else if (!G.w || lk_event(NULL, ev) != 0)
            G.early_lost++;
    }
    free(G.early);
    G.early = NULL;
    G.nearly = G.capearly = 0;
}

static void post_cb(void *ctx, const wr_event *ev)
{
    (void)ctx;
    post(ev);
}

/* ---- modules ---------------------------------------------------------------------- */

/* The output of `nvdisasm FLAGS cubin_path` (malloc'd), or NULL when it
 * failed. */
static char *run_nvdisasm(const char *flags, const char *cubin_path, size_t *len)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>/dev/null", G.nvdisasm, flags, cubin_path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 20, n = 0, got;
    char *text = malloc(cap);
    while (text && (got = fread(text + n, 1, cap - n, p)) > 0) {
        n += got;
        if (n == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t)
                free(text);
            text = t;
        }
    }
    if (pclose(p) != 0) {
        free(text);
        return NULL;
    }
    *len = n;
    return text;
}

/* The cubin's disassembly with line info (malloc'd), or NULL.  -gi adds
 * the frames an inlined function was inlined into, so an atomic of the
 * toolkit's headers is attributed to the program's line that called it
 * (sass_classify.c); an nvdisasm without -gi gets -g. */
static char *disassemble(const void *cubin, size_t size, size_t *len)
{
    char tmpl[] = "/tmp/warprace-cubin-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(cubin, 1, size, f) == size;
    if (f)
        fclose(f);
    char *text = NULL;
    if (ok && !(text = run_nvdisasm("-c -gi", tmpl, len)))
        text = run_nvdisasm("-c -g", tmpl, len);
    unlink(tmpl);
    return text;
}

static void module_loaded(const Sanitizer_ResourceModuleData *d)
{
    pthread_mutex_lock(&G.lock);
    if (ensure_writer(d->context) != 0) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    if (G.nmods == G.capmods) {
        G.capmods = G.capmods ? 2 * G.capmods : 16;
        G.mods = realloc(G.mods, G.capmods * sizeof *G.mods);
    }
    mod_entry *m = &G.mods[G.nmods++];
    memset(m, 0, sizeof *m);
    m->module = d->module;
    char name[64];
    snprintf(name, sizeof name, "module-%zu.cubin", G.nmods);
    pthread_mutex_lock(&G.wlock);
    m->trace_id = wr_writer_module(G.w, name, d->pCubin, d->cubinSize);
    pthread_mutex_unlock(&G.wlock);
    size_t len = 0;
    char *text = disassemble(d->pCubin, d->cubinSize, &len);
    if (text) {
        char err[256];
        m->parsed = wrs_parse(text, len, &m->sass, err, sizeof err) == 0;
        if (!m->parsed) {
            char msg[400];
            snprintf(msg, sizeof msg, "cannot parse the disassembly of %s: %s", name, err);
            set_error(msg);
        }
        free(text);
    } else {
        set_error("nvdisasm failed: accesses of this module stay unclassified");
    }
    /* patches: once per context */
    int have = 0;
    for (size_t i = 0; i < G.npatched_ctx; i++)
        have |= G.patched_ctx[i] == d->context;
    if (!have && san_ok(G.fn.add_patches_from_file(G.patches, d->context), "loading patches") &&
        G.npatched_ctx < 16)
        G.patched_ctx[G.npatched_ctx++] = d->context;
    static const struct { Sanitizer_InstructionId id; const char *cb; } pts[] = {
        {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "wrs_global_access"},
        {SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "wrs_shared_access"},
        {SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, "wrs_local_access"},
        {SANITIZER_INSTRUCTION_BARRIER, "wrs_barrier"},
        {SANITIZER_INSTRUCTION_SYNCWARP, "wrs_syncwarp"},
        {SANITIZER_INSTRUCTION_BLOCK_ENTER, "wrs_block_enter"},
        {SANITIZER_INSTRUCTION_BLOCK_EXIT, "wrs_block_exit"},
        {SANITIZER_INSTRUCTION_DEVICE_SIDE_MALLOC, "wrs_device_malloc"},
        {SANITIZER_INSTRUCTION_DEVICE_SIDE_FREE, "wrs_device_free"},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        san_ok(G.fn.patch_instructions(pts[i].id, d->module, pts[i].cb), pts[i].cb);
    /* Another block's shared memory (sm_90 clusters).  An API or device
     * without the instruction kind records the rest all the same: said once,
     * not an error (SANITIZER.md, "Distributed shared memory"). */
    if (G.fn.patch_instructions(SANITIZER_INSTRUCTION_REMOTE_SHARED_MEMORY_ACCESS, d->module,
                                "wrs_remote_shared_access") != SANITIZER_SUCCESS &&
        !G.dsmem_unpatched) {
        G.dsmem_unpatched = 1;
        fprintf(stderr, "warprace (sanitizer): accesses to other blocks' shared memory "
                        "(distributed shared memory) cannot be patched: not recorded\n");
    }
    /* Cluster barriers (barrier.cluster.arrive / wait, cluster.sync()):
     * the arrive first, the wait only where the arrive is patched, so that
     * a refusal loses waits (what they acquire: races reported that are
     * none; the analyzers take an arrival never waited for) rather than
     * leave waits with no arrival.  Without them, what they order across a
     * cluster's blocks looks unordered: said once. */
    int arrive_ok = 0, wait_ok = 0;
#if WRS_HAVE_CLUSTER_BARRIER_CB
    arrive_ok = G.fn.patch_instructions(SANITIZER_INSTRUCTION_CLUSTER_BARRIER_ARRIVE, d->module,
                                        "wrs_cluster_arrive") == SANITIZER_SUCCESS;
    wait_ok = arrive_ok &&
              G.fn.patch_instructions(SANITIZER_INSTRUCTION_CLUSTER_BARRIER_WAIT, d->module,
                                      "wrs_cluster_wait") == SANITIZER_SUCCESS;
#endif
    if (!wait_ok && !G.cluster_bar_unpatched) {
        G.cluster_bar_unpatched = arrive_ok ? 2 : 1;
        fprintf(stderr, "warprace (sanitizer): cluster barrier %s (barrier.cluster.arrive / "
                        "wait, cluster.sync()) cannot be patched: not recorded\n",
                arrive_ok ? "waits" : "arrivals and waits");
    }
    /* mbarriers: successful waits at the attempt point (compute-sanitizer
     * 2025.2 and later), inits and arrivals at the CUDA barrier point; an
     * API without the attempt point patches neither (waits that acquire
     * nothing would only report races that are none).  The inits' counts
     * and the waits' parities are the finisher's (san_events.h).
     * WARPRACE_SAN_MBARRIER=0 leaves them unpatched: such kernels are then
     * said and counted as unrecorded (note_unrecorded_sync). */
    const char *mb = getenv("WARPRACE_SAN_MBARRIER");
    if (!(mb && !strcmp(mb, "0")) &&
        G.fn.patch_instructions((Sanitizer_InstructionId)WRS_SAN_INSTRUCTION_CUDA_BARRIER_ATTEMPT,
                                d->module, "wrs_cuda_barrier_attempt") == SANITIZER_SUCCESS &&
        G.fn.patch_instructions((Sanitizer_InstructionId)WRS_SAN_INSTRUCTION_CUDA_BARRIER,
                                d->module, "wrs_cuda_barrier") == SANITIZER_SUCCESS)
        m->mbarriers_patched = 1;
    san_ok(G.fn.patch_module(d->module), "sanitizerPatchModule");
    pthread_mutex_unlock(&G.lock);
}

/* Loaded ranges of every function of the module (lazy loading: asked at
 * each launch until known).  G.lock held, runtime ready. */
static void register_ranges(CUmodule module)
{
    for (size_t i = 0; i < G.nmods; i++) {
        mod_entry *m = &G.mods[i];
        if (m->module != module || !m->parsed)
            continue;
        for (size_t k = 0; k < m->sass.nfns; k++) {
            uint64_t pc = 0, size = 0;
            if (G.fn.get_function_pc_and_size(module, m->sass.fns[k].name, &pc, &size) ==
                    SANITIZER_SUCCESS && pc)
                wrs_finisher_add_range(&G.fin, pc, size, &m->sass.fns[k], &m->sass);
        }
    }
}

/* ---- launches ---------------------------------------------------------------------- */

static int selected(const char *name)
{
    return !G.have_kernels || wr_kernel_matches(&G.kernels, name);
}

/* What this path cannot record, seen on an H200 (toolkit 13.0): the API
 * reports no BAR.ARV (bar.arrive; the barrier callback fired for every
 * BAR.SYNC of tests/gpu named_barrier_* and never for a BAR.ARV), and the
 * mbarrier instructions (SYNCS.*) reach no patch this path uses.  Without
 * them what a producer wrote before its arrive looks unordered with the
 * consumer's reads after its wait (races reported that are none), and a
 * consumer's sync is taken for the whole phase.  Counted per launch of a
 * kernel that has them; said at the first such launch and again whenever
 * another such kernel follows.  G.lock held. */
static void note_unrecorded_sync(CUmodule module, const char *name)
{
    for (size_t i = 0; i < G.nmods; i++) {
        mod_entry *m = &G.mods[i];
        if (m->module != module || !m->parsed)
            continue;
        wrs_function *f = (wrs_function *)wrs_find_function(&m->sass, name);
        if (!f)
            return;
        wrs_unrecorded u = f->unrecorded;
        if (u.bar_arrive)   /* those the finisher infers are recorded (san_events.h) */
            u.bar_arrive = wrs_arrives_uninferred(f);
        if (m->mbarriers_patched)
            u.mbarrier = 0;
        if (!u.bar_arrive && !u.mbarrier)
            return;
        uint64_t before = G.arrive_unreported_launches + G.mbarrier_unrecorded_launches;
        G.arrive_unreported_launches += u.bar_arrive != 0;
        G.mbarrier_unrecorded_launches += u.mbarrier != 0;
        if (!before || strcmp(G.unrecorded_sync_last, name) != 0) {
            if (u.bar_arrive)
                fprintf(stderr,
                        "warprace (sanitizer): kernel %s has %zu bar.arrive (BAR.ARV) "
                        "instruction%s, which the Compute Sanitizer API does not report and "
                        "no record leads to for certain: their named-barrier arrivals are "
                        "not recorded, and races reported across them may be none (record "
                        "it with the device API: --mode api)\n",
                        name, u.bar_arrive, u.bar_arrive == 1 ? "" : "s");
            if (u.mbarrier)
                fprintf(stderr,
                        "warprace (sanitizer): kernel %s has %zu mbarrier instruction%s "
                        "(SYNCS.*), which this path does not record: what they order looks "
                        "unordered, and races reported across them may be none (record it "
                        "with the device API: --mode api)\n",
                        name, u.mbarrier, u.mbarrier == 1 ? "" : "s");
        }
        snprintf(G.unrecorded_sync_last, sizeof G.unrecorded_sync_last, "%s", name);
        return;
    }
}

/* Is stream capturing into a CUDA graph (its work runs when the graph is
 * launched, and a synchronization of ours would invalidate the capture)? */
static int capturing(CUstream stream)
{
    pthread_once(&driver_symbols_once, find_driver_symbols);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return stream_is_capturing && stream_is_capturing(stream, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* WARPRACE_SAN_DEBUG=1: every launch's streams and every graph callback
 * on stderr. */
static int san_debug(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("WARPRACE_SAN_DEBUG");
        on = e && e[0] == '1';
    }
    return on;
}

/* Gives a launch its device data (tag: its records' launch tag): allocated,
 * the block counters zeroed and the data uploaded from *h on the launch's
 * stream before it runs.  h must outlive the upload: a graph node's stream
 * synchronize does not wait for it (an H100 run saw a node's data read
 * after the next node's had replaced it), so each node has its own.  0, or
 * -1 (nothing of the launch is recorded).  G.lock held, runtime ready. */
static int give_launch_data(const Sanitizer_LaunchData *d, uint32_t tag, wrs_launch_data *h,
                            launch_mem *m, wrs_node_data *nodes, uint32_t node_mask)
{
    uint64_t blocks = (uint64_t)d->gridDim_x * d->gridDim_y * d->gridDim_z;
    void *ldp = NULL, *enter = NULL, *exitc = NULL;
    memset(m, 0, sizeof *m);
    if (!san_ok(G.fn.alloc(d->context, &ldp, sizeof(wrs_launch_data)), "launch data") ||
        !san_ok(G.fn.alloc(d->context, &enter, blocks * 4), "block counters") ||
        !san_ok(G.fn.alloc(d->context, &exitc, blocks * 4), "block counters"))
        return -1;
    G.fn.memset_(enter, 0, blocks * 4, d->hStream);
    G.fn.memset_(exitc, 0, blocks * 4, d->hStream);
    memset(h, 0, sizeof *h);
    h->state = G.state_dev;
    h->block_enter = enter;
    h->block_exit = exitc;
    h->block_threads = d->blockDim_x * d->blockDim_y * d->blockDim_z;
    h->tag = tag;
    h->nodes = nodes;
    h->node_mask = node_mask;
    G.fn.memcpy_h2d_async(ldp, h, sizeof *h, d->hStream);
    G.fn.stream_synchronize(d->hStream);
    san_ok(G.fn.set_launch_callback_data(d->hLaunch, d->function, d->hStream, ldp),
           "sanitizerSetLaunchCallbackData");
    *m = (launch_mem){ldp, enter, exitc};
    return 0;
}

/* A launch's KERNEL_LAUNCH event, as launch `launch` on stream id `stream`,
 * with the program's call site (a graph node's: the graph's launch; none
 * while the writer that names sites is not ready).  G.lock held. */
static wr_event kernel_launch_event(const Sanitizer_LaunchData *d, uint32_t launch,
                                    uint32_t stream)
{
    wrr_host_site *site = wrr_host_site_launching(host_sites(), d->functionName);
    pthread_mutex_lock(&G.wlock);
    uint32_t kid = wr_writer_kernel_once(G.w, d->functionName ? d->functionName : "");
    pthread_mutex_unlock(&G.wlock);
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WR_EV_KERNEL_LAUNCH;
    ev.u.launch.launch = launch;
    ev.u.launch.kernel = kid;
    ev.u.launch.grid[0] = d->gridDim_x, ev.u.launch.grid[1] = d->gridDim_y;
    ev.u.launch.grid[2] = d->gridDim_z;
    ev.u.launch.block_dim[0] = d->blockDim_x, ev.u.launch.block_dim[1] = d->blockDim_y;
    ev.u.launch.block_dim[2] = d->blockDim_z;
    ev.u.launch.cluster[0] = d->clusterDim_x ? d->clusterDim_x : 1;
    ev.u.launch.cluster[1] = d->clusterDim_y ? d->clusterDim_y : 1;
    ev.u.launch.cluster[2] = d->clusterDim_z ? d->clusterDim_z : 1;
    ev.u.launch.stream = stream;
    ev.site = G.ready ? wrr_host_site_trace_id(site, lk_site, NULL) : 0;
    return ev;
}

/* Launches (graph launches too) are serialized across host threads
 * (launch_serial.h); a wait given up is counted. */
static void launch_serial_take(void)
{
    if (wrr_launch_serial_take() != 0)
        __atomic_add_fetch(&G.launch_serial_timeouts, 1, __ATOMIC_RELAXED);
}

static void launch_begin(const Sanitizer_LaunchData *d)
{
    if (capturing(d->stream)) {
        pthread_mutex_lock(&G.lock);
        G.captured_launches++;
        pthread_mutex_unlock(&G.lock);
        return;
    }
    launch_serial_take();
    pthread_mutex_lock(&G.lock);
    if (ensure_runtime(d->context, d->hStream) != 0 || !selected(d->functionName ? d->functionName : "")) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    register_ranges(d->module);
    note_unrecorded_sync(d->module, d->functionName ? d->functionName : "");
    static wrs_launch_data h;    /* the upload is waited for */
    if (give_launch_data(d, 0, &h, &G.open_mem, NULL, 0) != 0) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    wr_event ev = kernel_launch_event(d, ++G.next_launch, stream_id(d->context, d->stream, d->hStream));
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer): launch %u of %s: stream %p (id %#x) hStream %p "
                "apiStream %p gridId %llu\n", ev.u.launch.launch,
                d->functionName ? d->functionName : "?", (void *)d->stream,
                ev.u.launch.stream, (void *)d->hStream, (void *)d->apiStream,
                (unsigned long long)d->gridId);
    G.open_launch = ev.u.launch.launch;
    G.open_stream = ev.u.launch.stream;
    G.launches++;
    post(&ev);
    pthread_mutex_unlock(&G.lock);
}

/* Live allocations: base -> catalog id (host allocations and device
 * malloc alike; under G.lock). */
static void alloc_add(uint64_t base, uint32_t id)
{
    if (G.nallocs == G.capallocs) {
        size_t cap = G.capallocs ? 2 * G.capallocs : 64;
        void *n = realloc(G.allocs, cap * sizeof *G.allocs);
        if (!n) {
            set_error("out of memory (allocation table)");
            return;
        }
        G.allocs = n;
        G.capallocs = cap;
    }
    G.allocs[G.nallocs].base = base;
    G.allocs[G.nallocs++].id = id;
}

/* Removes base's entry; returns its id, 0 when none. */
static uint32_t alloc_take(uint64_t base)
{
    for (size_t i = G.nallocs; i-- > 0;)
        if (G.allocs[i].base == base) {
            uint32_t id = G.allocs[i].id;
            G.allocs[i] = G.allocs[--G.nallocs];
            return id;
        }
    return 0;
}

/* After a launch completed: its device mallocs and frees become ALLOC and
 * FREE events, and its device data is freed.  G.lock held. */
static void take_launch_data(CUcontext ctx, Sanitizer_StreamHandle hs, launch_mem *m)
{
    static wrs_launch_data h;
    if (!m->ld || G.fn.memcpy_d2h(&h, m->ld, sizeof h, hs) != SANITIZER_SUCCESS)
        return;
    uint32_t n = h.ndmalloc < WRS_DMALLOC_MAX ? h.ndmalloc : WRS_DMALLOC_MAX;
    G.dmalloc_lost += h.ndmalloc - n;
    for (uint32_t i = 0; i < n; i++) {
        wr_event ev;
        memset(&ev, 0, sizeof ev);
        if (h.dmalloc[i].size) {
            pthread_mutex_lock(&G.wlock);
            ev.u.alloc.alloc = wr_writer_alloc(G.w, h.dmalloc[i].ptr, h.dmalloc[i].size,
                                               WR_SPACE_GLOBAL, "device malloc");
            pthread_mutex_unlock(&G.wlock);
            ev.kind = WR_EV_ALLOC;
            alloc_add(h.dmalloc[i].ptr, ev.u.alloc.alloc);
        } else {
            ev.u.alloc.alloc = alloc_take(h.dmalloc[i].ptr);
            if (!ev.u.alloc.alloc) {
                G.dfree_unknown++;   /* its malloc record was past the maximum */
                continue;
            }
            ev.kind = WR_EV_FREE;
        }
        post(&ev);
    }
    G.fn.free_(ctx, m->enter);
    G.fn.free_(ctx, m->exitc);
    G.fn.free_(ctx, m->ld);
    memset(m, 0, sizeof *m);
}

/* The device's reservation head, read after a synchronize: where the
 * records of what ran before it end (WRR_END_UNKNOWN when unread). */
static uint64_t ring_head(int synced, Sanitizer_StreamHandle hs)
{
    static unsigned long long head;
    return synced && G.fn.memcpy_d2h(&head, &G.state_dev->head, sizeof head, hs) ==
                         SANITIZER_SUCCESS
               ? head
               : WRR_END_UNKNOWN;
}

static void launch_end(const Sanitizer_LaunchData *d)
{
    pthread_mutex_lock(&G.lock);
    if (!G.ready || !G.open_launch) {
        pthread_mutex_unlock(&G.lock);
        wrr_launch_serial_release();
        return;
    }
    /* serialize: every record of the launch is committed before the close */
    int synced = san_ok(G.fn.stream_synchronize(d->hStream), "launch synchronize");
    /* where the launch's records end: the drain runs behind, and must not
     * take the next launch's records for this one's */
    wrr_drain_post_close(&G.drain, G.open_launch, ring_head(synced, d->hStream));
    take_launch_data(d->context, d->hStream, &G.open_mem);
    /* our synchronize is not the program's: the KERNEL_END (which orders
     * the host after the kernel) waits until the program synchronizes */
    wrr_ends_add(&G.ends, G.open_launch, G.open_stream, post_cb, NULL);
    G.open_launch = 0;
    pthread_mutex_unlock(&G.lock);
    wrr_launch_serial_release();
}

/* ---- host-side events ----------------------------------------------------------------- */

static void host_event(wr_event *ev)
{
    pthread_mutex_lock(&G.lock);
    switch (ev->kind) {
    case WR_EV_STREAM_SYNC:
        wrr_ends_flush(&G.ends, ev->u.stream_sync.stream, post_cb, NULL);
        break;
    case WR_EV_DEVICE_SYNC:
        wrr_ends_flush(&G.ends, WRR_ALL_STREAMS, post_cb, NULL);
        break;
    case WR_EV_EVENT_RECORD:
        wrr_ends_event_recorded(&G.ends, ev->u.stream_event.event, ev->u.stream_event.stream);
        break;
    case WR_EV_EVENT_SYNC:
        wrr_ends_event_synced(&G.ends, ev->u.stream_event.event, post_cb, NULL);
        break;
    default:
        break;
    }
    post(ev);
    pthread_mutex_unlock(&G.lock);
}

/* The program's call site of the copy being reported, as the trace's site
 * id; before the runtime is ready (the event waits in G.early) its
 * ordinal, which post_early turns into the id.  G.lock held. */
static uint32_t copy_site(void)
{
    wrr_host_site *s = wrr_host_site_here(host_sites());
    if (!s)
        return 0;
    return G.ready ? wrr_host_site_trace_id(s, lk_site, NULL) : s->ordinal;
}

/* One HOST_COPY per contiguous run of a (possibly pitched) copy or memset,
 * on stream id sid.  G.lock held. */
static void copy_event_on(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                          uint64_t depth, unsigned kind, uint32_t sid, int async)
{
    if (!async)
        wrr_ends_flush(&G.ends, sid, post_cb, NULL);   /* a synchronous copy waits for its stream */
    wrr_copy_events(dst, src, width, height, depth, kind, sid, async, copy_site(), post_cb, NULL);
}

/* A copy issued by a graph launch's node: the node's own record stands
 * (graph_node_begin), and this thread issues no other copy meanwhile. */
static __thread int issuing_graph;

static void copy_event(wrr_copy_side dst, wrr_copy_side src, uint64_t width, uint64_t height,
                       uint64_t depth, unsigned kind, CUcontext ctx, CUstream stream,
                       Sanitizer_StreamHandle hs, int async)
{
    pthread_mutex_lock(&G.lock);
    if (issuing_graph)
        G.graph_copies_skipped++;
    else
        copy_event_on(dst, src, width, height, depth, kind, stream_id(ctx, stream, hs), async);
    pthread_mutex_unlock(&G.lock);
}

/* A memcpy's copy events: on stream id sid when not 0 (a graph node's),
 * else on its own stream.  Copies other than between host and device
 * memory (arrays) are not recorded.  0, or -1 when not recorded. */
static int memcpy_events(const Sanitizer_MemcpyData *d, uint32_t sid)
{
    unsigned kind;
    switch (d->direction) {
    case SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE: kind = WR_COPY_H2D; break;
    case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST: kind = WR_COPY_D2H; break;
    case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE: kind = WR_COPY_D2D; break;
    default: return -1;
    }
    wrr_copy_side dst = {kind == WR_COPY_D2H ? 0 : d->dstAddress, d->dstPitch, 0};
    wrr_copy_side src = {kind == WR_COPY_H2D ? 0 : d->srcAddress, d->srcPitch, 0};
    uint64_t width = d->size, height = 1, depth = 1;
    if (d->height > 1 || d->depth > 1) {   /* a 2D/3D copy: rows at the pitches */
        width = d->width;
        height = d->height ? d->height : 1;
        depth = d->depth ? d->depth : 1;
        dst.slice = d->dstPitch * height;
        src.slice = d->srcPitch * height;
    }
    if (sid)
        copy_event_on(dst, src, width, height, depth, kind, sid, 1);
    else
        copy_event(dst, src, width, height, depth, kind, d->dstStream ? d->dstContext : d->srcContext,
                   d->dstStream ? d->dstStream : d->srcStream,
                   d->dstStream || !d->hSrcStream ? d->hDstStream : d->hSrcStream, d->isAsync);
    return 0;
}

/* A memset's events, on stream id sid when not 0, as memcpy_events. */
static void memset_events(const Sanitizer_MemsetData *d, uint32_t sid)
{
    /* rows of width elements at the pitch (a 1D memset: one row) */
    uint64_t row = d->width * (d->elementSize ? d->elementSize : 1);
    wrr_copy_side dst = {d->address, d->pitch ? d->pitch : row, 0}, none = {0, 0, 0};
    if (sid)
        copy_event_on(dst, none, row, d->height ? d->height : 1, 1, WR_COPY_MEMSET, sid, 1);
    else
        copy_event(dst, none, row, d->height ? d->height : 1, 1, WR_COPY_MEMSET, d->context,
                   d->stream, d->hStream, d->isAsync);
}

static void on_alloc(const Sanitizer_ResourceMemoryData *d, int is_free)
{
    pthread_mutex_lock(&G.lock);
    if (!G.w || (d->flags & SANITIZER_MEMORY_FLAG_MODULE)) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    if (!is_free) {
        char label[128];
        const char *what = wrr_take_alloc_label(label, sizeof label,
                                                (d->flags & SANITIZER_MEMORY_FLAG_MANAGED) ? "managed" : "");
        pthread_mutex_lock(&G.wlock);
        uint32_t id = wr_writer_alloc(G.w, d->address, d->size, WR_SPACE_GLOBAL, what);
        pthread_mutex_unlock(&G.wlock);
        alloc_add(d->address, id);
        ev.kind = WR_EV_ALLOC;
        ev.u.alloc.alloc = id;
        post(&ev);
    } else if ((ev.u.alloc.alloc = alloc_take(d->address)) != 0) {
        ev.kind = WR_EV_FREE;
        post(&ev);
    }
    pthread_mutex_unlock(&G.lock);
}

/* ---- CUDA graphs (graph_order.h) ------------------------------------------------
 *
 * An executable graph's nodes and edges are read when it is made.  A
 * launch of it is issued as graph_order.h spells it: its working nodes'
 * waits, their work (kernel nodes as launches whose records carry the
 * node's index + 1 as their launch tag, so that the drain tells the
 * concurrent nodes' records apart; copies and memsets as copy events),
 * their events.  At the launch's end the launching stream is synchronized
 * (launches are serialized, graphs as a whole), one close bounds every
 * node's records, and the launching stream waits for the nodes.  A graph
 * the model cannot spell, or one launched while another thread issues a
 * graph, runs unrecorded: one lost event. */

static void graph_post(void *ctx, const wr_event *ev)
{
    (void)ctx;
    post(ev);
}

static uint32_t graph_new_id(void *ctx, int is_event)
{
    (void)ctx;
    return is_event ? wrr_new_event_id(&G.ids) : wrr_new_stream_id(&G.ids);
}

static size_t graph_index(CUgraphExec exec)
{
    size_t i = 0;
    while (i < G.ngraphs && G.graphs[i]->exec != (uint64_t)(uintptr_t)exec)
        i++;
    return i;
}

/* Why graph's nodes and edges cannot be read into the arrays (malloc'd
 * here, freed by the caller), or NULL. */
static const char *read_graph(CUgraph graph, size_t *n, uint64_t **handles, unsigned **types,
                              size_t *ne, uint64_t **from, uint64_t **to, unsigned char **full)
{
    if (!graph_get_nodes || !graph_get_edges || !graph_node_get_type)
        return "the driver lacks cuGraphGetNodes, cuGraphGetEdges_v2 or cuGraphNodeGetType";
    if (graph_get_nodes(graph, NULL, n) != CUDA_SUCCESS ||
        graph_get_edges(graph, NULL, NULL, NULL, ne) != CUDA_SUCCESS)
        return "its nodes and edges could not be read";
    size_t nn = *n ? *n : 1, nne = *ne ? *ne : 1;
    CUgraphNode *nodes = malloc(nn * sizeof *nodes), *f = malloc(nne * sizeof *f),
                *t = malloc(nne * sizeof *t);
    CUgraphEdgeData *ed = malloc(nne * sizeof *ed);
    *handles = malloc(nn * sizeof **handles);
    *types = malloc(nn * sizeof **types);
    *from = malloc(nne * sizeof **from);
    *to = malloc(nne * sizeof **to);
    *full = malloc(nne);
    const char *why = NULL;
    if (!nodes || !f || !t || !ed || !*handles || !*types || !*from || !*to || !*full)
        why = "out of memory";
    else if ((*n && graph_get_nodes(graph, nodes, n) != CUDA_SUCCESS) ||
             (*ne && graph_get_edges(graph, f, t, ed, ne) != CUDA_SUCCESS))
        why = "its nodes and edges could not be read";   /* (with none, the call fails) */
    for (size_t i = 0; !why && i < *n; i++) {
        CUgraphNodeType type;
        if (graph_node_get_type(nodes[i], &type) != CUDA_SUCCESS)
            why = "a node's type could not be read";
        (*handles)[i] = (uint64_t)(uintptr_t)nodes[i];
        (*types)[i] = (unsigned)type;
    }
    for (size_t e = 0; !why && e < *ne; e++) {
        (*from)[e] = (uint64_t)(uintptr_t)f[e];
        (*to)[e] = (uint64_t)(uintptr_t)t[e];
        (*full)[e] = ed[e].type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT && !ed[e].from_port &&
                     !ed[e].to_port;
    }
    free(nodes);
    free(f);
    free(t);
    free(ed);
    return why;
}

/* An executable graph is made: its graph is read now (a program may
 * destroy it once instantiated).  G.lock held. */
static void graph_made(const Sanitizer_GraphExecData *x)
{
    pthread_once(&driver_symbols_once, find_driver_symbols);
    wrr_graph *g = calloc(1, sizeof *g);
    if (!g) {
        set_error("out of memory (graph table)");
        return;
    }
    uint64_t exec = (uint64_t)(uintptr_t)x->graphExec;
    size_t n = 0, ne = 0;
    uint64_t *handles = NULL, *from = NULL, *to = NULL;
    unsigned *types = NULL;
    unsigned char *full = NULL;
    const char *why = x->isDeviceLaunch ? "it is launched from the device"
                                        : read_graph(x->graph, &n, &handles, &types, &ne, &from,
                                                     &to, &full);
    if (!why && n > UINT32_MAX)
        why = "it has more nodes than a record's launch tag can name";
    if (!why && wrr_graph_build(g, exec, (uint32_t)n, handles, types, ne, from, to, full,
                                graph_new_id, NULL) != 0)
        why = "out of memory";
    if (why) {
        wrr_graph_free(g);
        g->exec = exec;
        g->unrecordable = why;
    }
    free(handles);
    free(types);
    free(from);
    free(to);
    free(full);
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer) graph: exec %p made: %zu nodes, %zu edges%s%s\n",
                (void *)x->graphExec, n, ne, g->unrecordable ? ": unrecordable, " : "",
                g->unrecordable ? g->unrecordable : "");
    size_t i = graph_index(x->graphExec);
    if (i < G.ngraphs) {       /* the handle of a destroyed one, reused */
        wrr_graph_free(G.graphs[i]);
        free(G.graphs[i]);
        G.graphs[i] = g;
        return;
    }
    if (G.ngraphs == G.capgraphs) {
        size_t cap = G.capgraphs ? 2 * G.capgraphs : 16;
        wrr_graph **v = realloc(G.graphs, cap * sizeof *v);
        if (!v) {
            wrr_graph_free(g);
            free(g);
            set_error("out of memory (graph table)");
            return;
        }
        G.graphs = v;
        G.capgraphs = cap;
    }
    G.graphs[G.ngraphs++] = g;
}

static void graph_destroyed(CUgraphExec exec)
{
    size_t i = graph_index(exec);
    if (i == G.ngraphs || G.gl.g == G.graphs[i])
        return;
    wrr_graph_free(G.graphs[i]);
    free(G.graphs[i]);
    G.graphs[i] = G.graphs[--G.ngraphs];
}

static void graph_launch_begin(const Sanitizer_GraphLaunchData *gd)
{
    if (gd->isGraphUpload)
        return;
    if (capturing(gd->stream)) {   /* launched into a capture: it runs later, as part of it */
        pthread_mutex_lock(&G.lock);
        G.captured_launches++;
        pthread_mutex_unlock(&G.lock);
        return;
    }
    launch_serial_take();   /* released at the graph launch's end */
    pthread_mutex_lock(&G.lock);
    G.graph_launches++;
    if (ensure_runtime(gd->context, gd->hStream) != 0) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    size_t i = graph_index(gd->graphExec);
    wrr_graph *g = i < G.ngraphs ? G.graphs[i] : NULL;
    const char *why = !g ? "the recorder did not see it made" : g->unrecordable;
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer) graph: launch of exec %p%s%s\n",
                (void *)gd->graphExec, why ? ": unrecorded, " : "", why ? why : "");
    if (why) {
        if (!G.graph_launches_unrecorded++ || strcmp(why, G.graph_unrecorded_why) != 0)
            fprintf(stderr, "warprace (sanitizer): a CUDA graph launch runs unrecorded (%s): "
                    "races in it go unseen (counted as a lost event)\n", why);
        G.graph_unrecorded_why = why;
        wr_event ev = wrr_host_lost_event(1);
        post(&ev);
        pthread_mutex_unlock(&G.lock);
        return;
    }
    /* the node table: twice the kernel nodes, at least 8 slots */
    uint32_t kernels = 0, cap = 8;
    for (uint32_t k = 0; k < g->n; k++)
        kernels += g->nodes[k].type == WRR_GNODE_KERNEL;
    while (cap < 2 * kernels)
        cap *= 2;
    void *table = NULL, *skip = NULL;
    uint64_t *keys = calloc(cap, sizeof *keys);
    if (!keys || !san_ok(G.fn.alloc(gd->context, &table, cap * sizeof(wrs_node_data)),
                         "graph node table") ||
        !san_ok(G.fn.alloc(gd->context, &skip, sizeof(wrs_launch_data)), "graph launch data")) {
        if (table)
            G.fn.free_(gd->context, table);
        free(keys);
        G.graph_launches_unrecorded++;
        G.graph_unrecorded_why = "out of memory";
        wr_event ev = wrr_host_lost_event(1);
        post(&ev);
        pthread_mutex_unlock(&G.lock);
        return;
    }
    G.fn.memset_(table, 0, cap * sizeof(wrs_node_data), gd->hStream);
    /* the data of the kernel nodes not recorded: the table, where they find
     * entries of tag 0 (graph_kernel_node) */
    memset(&G.gl.skip_host, 0, sizeof G.gl.skip_host);
    G.gl.skip_host.state = G.state_dev;
    G.gl.skip_host.nodes = table;
    G.gl.skip_host.node_mask = cap - 1;
    G.fn.memcpy_h2d_async(skip, &G.gl.skip_host, sizeof G.gl.skip_host, gd->hStream);
    G.fn.stream_synchronize(gd->hStream);
    G.gl.skip_ld = skip;
    G.gl.nodes = table;
    G.gl.node_mask = cap - 1;
    G.gl.node_keys = keys;
    G.gl.g = g;
    G.gl.owner = pthread_self();
    G.gl.stream = stream_id(gd->context, gd->stream, gd->hStream);
    G.gl.ctx = gd->context;
    G.gl.hstream = gd->hStream;
    G.gl.nmembers = 0;
    issuing_graph = 1;
    wrr_graph_launch_begin(g, G.gl.stream, graph_post, NULL);
    pthread_mutex_unlock(&G.lock);
}

/* A graph's kernel node as a launch on stream id sid whose records carry
 * tag (0: a node not recorded: not selected, or not placed).  Every kernel
 * node of a recorded graph launch gets data that names the launch's node
 * table, and an entry there: the data a patch receives is the latest given
 * on its stream, whichever node it was given for (san_shared.h), so a node
 * given none of its own, or none, would take or clear another's.  A node
 * not recorded has an entry of tag 0, and its patches record nothing.
 * 0, or -1 when the node is not recorded.  G.lock held. */
static int graph_kernel_node(const Sanitizer_LaunchData *d, uint32_t tag, uint32_t sid)
{
    const char *name = d->functionName ? d->functionName : "";
    struct graph_upload *upload = malloc(sizeof *upload);
    if (G.gl.nmembers == G.gl.capmembers) {
        size_t cap = G.gl.capmembers ? 2 * G.gl.capmembers : 16;
        struct graph_member *v = realloc(G.gl.members, cap * sizeof *v);
        if (v) {
            G.gl.members = v;
            G.gl.capmembers = cap;
        }
    }
    /* its slot in the node table: probed from its gridId, as the patches probe */
    uint32_t slot = (uint32_t)d->gridId & G.gl.node_mask, n = 0;
    int repeated = 0;
    while (G.gl.node_keys[slot] && n++ <= G.gl.node_mask) {
        repeated |= G.gl.node_keys[slot] == d->gridId + 1;
        slot = (slot + 1) & G.gl.node_mask;
    }
    if (repeated && !G.graph_grid_ids_repeated++)
        fprintf(stderr, "warprace (sanitizer): two kernel nodes of one CUDA graph launch have "
                "the same grid id (%llu): a node's records are found by it, so the first "
                "node's may include the other's\n", (unsigned long long)d->gridId);
    if (!upload || G.gl.nmembers == G.gl.capmembers || G.gl.node_keys[slot]) {
        free(upload);   /* out of memory, or no slot: the node clears its stream's data */
        G.fn.set_launch_callback_data(d->hLaunch, d->function, d->hStream, NULL);
        return -1;
    }
    launch_mem mem = {0};
    int record = tag && !repeated && selected(name) &&
                 give_launch_data(d, 0, &upload->ld, &mem, G.gl.nodes, G.gl.node_mask) == 0;
    if (!record) {
        tag = 0;
        san_ok(G.fn.set_launch_callback_data(d->hLaunch, d->function, d->hStream, G.gl.skip_ld),
               "sanitizerSetLaunchCallbackData");
    }
    upload->node = (wrs_node_data){d->gridId + 1, tag,
                                   d->blockDim_x * d->blockDim_y * d->blockDim_z,
                                   (unsigned int *)mem.enter, (unsigned int *)mem.exitc};
    if (!repeated) {   /* (a repeated id finds the first node's entry) */
        G.fn.memcpy_h2d_async(&G.gl.nodes[slot], &upload->node, sizeof upload->node,
                              d->hStream);
        G.gl.node_keys[slot] = d->gridId + 1;
    }
    uint32_t launch = 0;
    if (record) {
        register_ranges(d->module);
        note_unrecorded_sync(d->module, name);
        wr_event ev = kernel_launch_event(d, ++G.next_launch, sid);
        launch = ev.u.launch.launch;
        G.launches++;
        wrr_drain_post_tagged_launch(&G.drain, &ev, tag);
    }
    G.gl.members[G.gl.nmembers++] = (struct graph_member){launch, mem, upload};
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer) graph: kernel node %s as launch %u, tag %u: hLaunch %p "
                "hStream %p gridId %llu function %p data %p slot %u\n", name, launch, tag,
                (void *)d->hLaunch, (void *)d->hStream, (unsigned long long)d->gridId,
                (void *)d->function, (void *)mem.ld, slot);
    return record ? 0 : -1;
}

static void graph_node_begin(const Sanitizer_GraphNodeLaunchData *n)
{
    int kernel = n->nodeType == CU_GRAPH_NODE_TYPE_KERNEL;
    int works = kernel || n->nodeType == CU_GRAPH_NODE_TYPE_MEMCPY ||
                n->nodeType == CU_GRAPH_NODE_TYPE_MEMSET;
    pthread_mutex_lock(&G.lock);
    wrr_graph *g = G.gl.g;
    int ours = !n->isGraphUpload && g && pthread_equal(G.gl.owner, pthread_self()) &&
               g->exec == (uint64_t)(uintptr_t)n->graphExec;
    long idx = -1;
    uint32_t unordered = 0;
    if (ours)
        idx = wrr_graph_node_begin(g, (uint64_t)(uintptr_t)n->node, graph_post, NULL, &unordered);
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer) graph: node %p of exec %p, type %d: index %ld, "
                "%u predecessors not begun\n", (void *)n->node, (void *)n->graphExec,
                (int)n->nodeType, idx, unordered);
    if (!ours) {
        /* without data of their own the patches record nothing (left to an
         * earlier launch's, they faulted) */
        if (kernel)
            G.fn.set_launch_callback_data(n->launchData.hLaunch, n->launchData.function,
                                          n->launchData.hStream, NULL);
        pthread_mutex_unlock(&G.lock);
        return;
    }
    uint32_t sid = idx >= 0 ? g->nodes[idx].stream : 0;
    int recorded = 0;
    if (kernel)
        recorded = graph_kernel_node(&n->launchData, idx >= 0 ? (uint32_t)idx + 1 : 0, sid) == 0;
    else if (idx >= 0 && n->nodeType == CU_GRAPH_NODE_TYPE_MEMCPY)
        recorded = memcpy_events(&n->memcpyData, sid) == 0;
    else if (idx >= 0 && n->nodeType == CU_GRAPH_NODE_TYPE_MEMSET)
        memset_events(&n->memsetData, sid), recorded = 1;
    if (unordered && !G.graph_nodes_unordered)
        fprintf(stderr, "warprace (sanitizer): a CUDA graph node was issued before a node it "
                "depends on: that ordering is not recorded, and races reported across it may "
                "be none\n");
    G.graph_nodes_unordered += unordered;
    if (recorded) {
        G.graph_nodes_recorded++;
    } else if (works && (!kernel || selected(n->launchData.functionName
                                                 ? n->launchData.functionName
                                                 : ""))) {
        G.graph_nodes_lost++;   /* work that ran unrecorded */
        wr_event ev = wrr_host_lost_event(1);
        post(&ev);
    }
    if (idx >= 0)
        wrr_graph_node_issued(g, idx, graph_post, NULL);
    pthread_mutex_unlock(&G.lock);
}

static void graph_launch_end(const Sanitizer_GraphLaunchData *gd)
{
    if (gd->isGraphUpload)
        return;
    pthread_mutex_lock(&G.lock);
    wrr_graph *g = G.gl.g;
    if (!g || !pthread_equal(G.gl.owner, pthread_self()) ||
        g->exec != (uint64_t)(uintptr_t)gd->graphExec) {
        pthread_mutex_unlock(&G.lock);
        wrr_launch_serial_release();
        return;
    }
    issuing_graph = 0;
    /* serialize, the graph as a whole: every node's records are committed
     * before the close */
    int synced = san_ok(G.fn.stream_synchronize(G.gl.hstream), "graph launch synchronize");
    wrr_drain_post_group_close(&G.drain, ring_head(synced, G.gl.hstream));
    for (size_t i = 0; i < G.gl.nmembers; i++) {
        take_launch_data(G.gl.ctx, G.gl.hstream, &G.gl.members[i].mem);
        free(G.gl.members[i].upload);
        if (G.gl.members[i].launch)
            wrr_ends_add(&G.ends, G.gl.members[i].launch, G.gl.stream, post_cb, NULL);
    }
    uint32_t missing = wrr_graph_launch_end(g, G.gl.stream, graph_post, NULL);
    if (san_debug())
        fprintf(stderr, "warprace (sanitizer) graph: launch of exec %p ends: %zu kernel nodes "
                "recorded, %u working nodes never issued\n", (void *)gd->graphExec,
                G.gl.nmembers, missing);
    if (missing) {
        G.graph_nodes_lost += missing;
        wr_event ev = wrr_host_lost_event(missing);
        post(&ev);
    }
    G.fn.free_(G.gl.ctx, G.gl.nodes);
    G.fn.free_(G.gl.ctx, G.gl.skip_ld);
    free(G.gl.node_keys);
    G.gl.nodes = NULL;
    G.gl.skip_ld = NULL;
    G.gl.node_keys = NULL;
    G.gl.g = NULL;
    G.gl.nmembers = 0;
    pthread_mutex_unlock(&G.lock);
    wrr_launch_serial_release();
}

static void graph_event(Sanitizer_CallbackId cbid, const void *data)
{
    switch (cbid) {
    case SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED:
        pthread_mutex_lock(&G.lock);
        graph_made(data);
        pthread_mutex_unlock(&G.lock);
        break;
    case SANITIZER_CBID_GRAPHS_GRAPHEXEC_DESTROYING:
        pthread_mutex_lock(&G.lock);
        graph_destroyed(((const Sanitizer_GraphExecData *)data)->graphExec);
        pthread_mutex_unlock(&G.lock);
        break;
    case SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN:
        graph_launch_begin(data);
        break;
    case SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN:
        graph_node_begin(data);
        break;
    case SANITIZER_CBID_GRAPHS_LAUNCH_END:
        graph_launch_end(data);
        break;
    default:
        break;
    }
}

static void SANITIZERAPI callback(void *ud, Sanitizer_CallbackDomain dom, Sanitizer_CallbackId cbid,
                                  const void *data)
{
    (void)ud;
    wr_event ev;
    memset(&ev, 0, sizeof ev);
    switch (dom) {
    case SANITIZER_CB_DOMAIN_RESOURCE:
        if (cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED)
            module_loaded(data);
        else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC ||
                 cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC)
            on_alloc(data, 0);
        else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE ||
                 cbid == SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC)
            on_alloc(data, 1);
        break;
    case SANITIZER_CB_DOMAIN_GRAPHS:
        graph_event(cbid, data);
        break;
    case SANITIZER_CB_DOMAIN_LAUNCH:
        if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
            launch_begin(data);
        else if (cbid == SANITIZER_CBID_LAUNCH_END)
            launch_end(data);
        break;
    case SANITIZER_CB_DOMAIN_MEMCPY:
        if (cbid == SANITIZER_CBID_MEMCPY_STARTING)
            memcpy_events(data, 0);
        break;
    case SANITIZER_CB_DOMAIN_MEMSET:
        if (cbid == SANITIZER_CBID_MEMSET_STARTING)
            memset_events(data, 0);
        break;
    case SANITIZER_CB_DOMAIN_SYNCHRONIZE: {
        const Sanitizer_SynchronizeData *d = data;
        if (cbid == SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED) {
            ev.kind = WR_EV_STREAM_SYNC;
            pthread_mutex_lock(&G.lock);
            ev.u.stream_sync.stream = stream_id(d->context, d->stream, d->hStream);
            pthread_mutex_unlock(&G.lock);
        } else if (cbid == SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED) {
            ev.kind = WR_EV_DEVICE_SYNC;
        } else {
            break;
        }
        host_event(&ev);
        break;
    }
    case SANITIZER_CB_DOMAIN_EVENTS: {
        const Sanitizer_EventData *d = data;
        if (cbid == SANITIZER_CBID_EVENTS_RECORD)
            ev.kind = WR_EV_EVENT_RECORD;
        else if (cbid == SANITIZER_CBID_EVENTS_STREAM_WAIT)
            ev.kind = WR_EV_STREAM_WAIT;
        else if (cbid == SANITIZER_CBID_EVENTS_SYNCHRONIZE)
            ev.kind = WR_EV_EVENT_SYNC;
        else
            break;
        pthread_mutex_lock(&G.lock);
        ev.u.stream_event.event = handle_id(d->event, 1);
        ev.u.stream_event.stream =
            ev.kind == WR_EV_EVENT_SYNC ? 0 : stream_id(d->context, d->stream, d->hStream);
        pthread_mutex_unlock(&G.lock);
        host_event(&ev);
        break;
    }
    default:
        break;
    }
}

/* One counter of the stats file: "name=value". */
static void stat_line(FILE *f, const char *name, unsigned long long value)
{
    fprintf(f, "%s=%llu\n", name, value);
}

static void shutdown_recorder(void)
{
    pthread_mutex_lock(&G.lock);
    if (G.shut) {
        pthread_mutex_unlock(&G.lock);
        return;
    }
    G.shut = 1;
    int ok = !G.failed;
    if (!G.ready && G.nearly)
        post_early();             /* no kernel ran: the host events alone */
    if (G.ready)
        wrr_ends_flush(&G.ends, WRR_ALL_STREAMS, post_cb, NULL);   /* the exit observes them all */
    if (G.ready && wrr_drain_stop_thread(&G.drain) != 0) {
        set_error(G.drain.error[0] ? G.drain.error : "the drain failed");
        ok = 0;
    }
    if (G.w) {
        wr_error err;
        pthread_mutex_lock(&G.wlock);
        if (wr_writer_close(G.w, &err) != 0) {
            set_error(err.msg);
            ok = 0;
        }
        G.w = NULL;
        pthread_mutex_unlock(&G.wlock);
    }
    if (G.stats[0]) {
        FILE *f = fopen(G.stats, "w");
        if (f) {
            const wrs_stats *s = &G.fin.st;
            stat_line(f, "events", s->events_out);
            stat_line(f, "device_records", G.drain.st.records);
            stat_line(f, "launches", G.launches);
            stat_line(f, "lost_records", G.drain.st.lost_records);
            stat_line(f, "lost_lanes", G.drain.st.lost_lanes);
            stat_line(f, "drain_busy_ns", G.drain.st.busy_ns);
            if (G.ctl)
                stat_line(f, "ring_full_waits", G.ctl->full_waits);
            stat_line(f, "wall_ns", wrr_monotonic_ns() - G.t_start);
            stat_line(f, "sanitizer_classified", s->accesses_classified);
            stat_line(f, "sanitizer_unclassified", s->accesses_unclassified);
            stat_line(f, "sanitizer_fences_inferred", s->fences_inferred);
            stat_line(f, "sanitizer_fence_unknown", s->fence_unknown);
            stat_line(f, "sanitizer_fence_unreachable", s->fence_unreachable);
            stat_line(f, "sanitizer_cas_outcome_unknown", s->cas_unknown);
            stat_line(f, "sanitizer_cas_retries_seen", s->cas_retries_seen);
            stat_line(f, "sanitizer_reads_held", s->reads_held);
            stat_line(f, "sanitizer_device_malloc_records_lost", G.dmalloc_lost);
            stat_line(f, "sanitizer_device_free_unknown", G.dfree_unknown);
            stat_line(f, "sanitizer_held_flushed_early", s->held_flushed_early);
            fprintf(f, "sanitizer_dsmem_unpatched=%d\n", G.dsmem_unpatched);
            fprintf(f, "sanitizer_cluster_barriers_unpatched=%d\n", G.cluster_bar_unpatched);
            stat_line(f, "sanitizer_barrier_mode_unknown", s->barrier_mode_unknown);
            stat_line(f, "sanitizer_barrier_arrive_uncounted", s->barrier_arrive_uncounted);
            stat_line(f, "sanitizer_waits_held", s->waits_held);
            stat_line(f, "sanitizer_early_host_events_lost", G.early_lost);
            stat_line(f, "sanitizer_arrives_inferred", s->arrives_inferred);
            stat_line(f, "sanitizer_arrives_invalid", s->arrives_invalid);
            stat_line(f, "sanitizer_grid_syncs", s->grid_syncs);
            stat_line(f, "sanitizer_grid_sync_parts", s->grid_sync_parts);
            stat_line(f, "sanitizer_grid_sync_unknown", s->grid_sync_unknown);
            stat_line(f, "sanitizer_arrives_reported_too", s->arrives_reported_too);
            stat_line(f, "sanitizer_mbarrier_inits", s->mbarrier_inits);
            stat_line(f, "sanitizer_mbarrier_count_unknown", s->mbarrier_count_unknown);
            stat_line(f, "sanitizer_mbarrier_untracked", s->mbarrier_untracked);
            stat_line(f, "sanitizer_shared_atomics_cluster_scoped",
                      s->shared_atomics_cluster_scoped);
            stat_line(f, "sanitizer_graph_launches", G.graph_launches);
            stat_line(f, "sanitizer_launch_serial_timeouts", G.launch_serial_timeouts);
            stat_line(f, "sanitizer_graph_nodes_recorded", G.graph_nodes_recorded);
            stat_line(f, "sanitizer_graph_nodes_unordered", G.graph_nodes_unordered);
            stat_line(f, "sanitizer_graph_nodes_lost", G.graph_nodes_lost);
            if (G.ctl)
                stat_line(f, "sanitizer_graph_records_unplaced", G.ctl->node_unknown);
            stat_line(f, "sanitizer_graph_grid_ids_repeated", G.graph_grid_ids_repeated);
            stat_line(f, "sanitizer_graph_copies_skipped", G.graph_copies_skipped);
            if (wrr_host_sites_resolver_failures(G.sites))
                fprintf(f, "host_site_lookups_failed=%lu\n", wrr_host_sites_resolver_failures(G.sites));
            if (G.graph_launches_unrecorded)
                fprintf(f, "graph_work_unrecorded=%llu of %llu graph launches (%s)\n",
                        (unsigned long long)G.graph_launches_unrecorded,
                        (unsigned long long)G.graph_launches, G.graph_unrecorded_why);
            stat_line(f, "sanitizer_launches_captured", G.captured_launches);
            stat_line(f, "sanitizer_bar_arrive_unreported", G.arrive_unreported_launches);
            stat_line(f, "sanitizer_mbarrier_unrecorded", G.mbarrier_unrecorded_launches);
            if (G.ctl && G.ctl->mbarrier_unrecorded)
                stat_line(f, "sanitizer_mbarrier_actions_unrecorded", G.ctl->mbarrier_unrecorded);
            fprintf(f, "ok=%d\n", ok);
            if (G.error[0])
                fprintf(f, "error=%s\n", G.error);
            fclose(f);
        }
    }
    wrr_host_sites_free(G.sites);
    G.sites = NULL;
    pthread_mutex_unlock(&G.lock);
}

__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    if (configure() != 0)
        return 1;                /* no WARPRACE_OUT: stay out of the way */
    if (!WRS_API_VERIFIED) {
        fprintf(stderr, "warprace (sanitizer): this library was built without the toolkit's "
                        "sanitizer.h (declarations from the documentation only); not "
                        "recording.  Rebuild where compute-sanitizer/include exists.\n");
        return 1;
    }
    if (load_api() != 0)
        return 1;
    if (!san_ok(G.fn.subscribe(&G.sub, callback, NULL), "sanitizerSubscribe"))
        return 1;
    const Sanitizer_CallbackDomain doms[] = {SANITIZER_CB_DOMAIN_RESOURCE,
                                             SANITIZER_CB_DOMAIN_LAUNCH,
                                             SANITIZER_CB_DOMAIN_MEMCPY,
                                             SANITIZER_CB_DOMAIN_MEMSET,
                                             SANITIZER_CB_DOMAIN_SYNCHRONIZE,
                                             SANITIZER_CB_DOMAIN_EVENTS,
                                             SANITIZER_CB_DOMAIN_GRAPHS};
    for (size_t i = 0; i < sizeof doms / sizeof doms[0]; i++)
        san_ok(G.fn.enable_domain(1, G.sub, doms[i]), "sanitizerEnableDomain");
    G.enabled = 1;
    atexit(shutdown_recorder);
    return 1;
}

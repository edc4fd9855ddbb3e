/* Host call sites of recorded CUDA API calls (host_site.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "host_site.h"
#include "warprace/demangle.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { MAX_FRAMES = 64 };
/* The first answer of a module may wait for addr2line to read its debug
 * information; a later one is a table lookup. */
enum { FIRST_ANSWER_MS = 30000, ANSWER_MS = 5000 };

typedef struct module {
    uintptr_t base;         /* where its ELF header is mapped */
    char *path;             /* what addr2line opens */
    char *name;             /* its file name, no directory */
    bool cuda;              /* a CUDA library: its frames are never the site */
    bool fixed;             /* ET_EXEC: addresses are not relative to base */
    int fd;                 /* the addr2line coprocess's socket, -1 when none */
    pid_t pid;
    bool resolver_failed;   /* do not start it again */
    bool answered;
    char buf[8192];         /* what addr2line wrote and was not yet consumed */
    size_t len;
} module;

enum frame_class {
    FRAME_NEW,
    FRAME_RUNTIME,
    FRAME_PROGRAM,
    FRAME_UNNAMED,  /* the program's as far as anyone knows, but addr2line named nothing */
    FRAME_NONE
};

typedef struct frame {
    uintptr_t addr;         /* a return address; 0 = empty slot */
    module *mod;            /* NULL: no module maps it */
    uint8_t cls;
    wrr_host_site *site;    /* FRAME_PROGRAM */
} frame;

struct wrr_host_sites {
    char *tool;             /* addr2line, or NULL when switched off */
    uintptr_t main_base;
    module **mods;
    size_t nmods, capmods;
    frame *frames;          /* open addressing by return address */
    size_t nframes, capframes;
    wrr_host_site **sites;
    size_t nsites, capsites;
    unsigned long failures;
    bool debug;             /* WARPRACE_HOST_SITE_DEBUG: each frame on stderr */
    bool off;               /* WARPRACE_HOST_SITES=0: no site is looked up */
    /* during wrr_host_site_launching: the kernel's symbol, and its
     * demangled name once a frame needs it (most frames are known) */
    const char *kernel;
    char *kernel_readable;
};

static void *grow(void *p, size_t *cap, size_t elem)
{
    size_t n = *cap ? *cap * 2 : 16;
    void *q = realloc(p, n * elem);
    if (q)
        *cap = n;
    return q;
}

static int find_main_base(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    /* the first object is the program; its mapping starts at the segment
     * that holds file offset 0 (the ELF header) */
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_offset == 0) {
            *(uintptr_t *)ctx = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            break;
        }
    return 1;
}

wrr_host_sites *wrr_host_sites_new(void)
{
    wrr_host_sites *hs = calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    const char *tool = getenv("WARPRACE_ADDR2LINE");
    if (!tool || !tool[0])
        tool = "addr2line";
    /* WARPRACE_ADDR2LINE=none: names from the dynamic symbol table only */
    if (strcmp(tool, "none") != 0)
        hs->tool = strdup(tool);
    dl_iterate_phdr(find_main_base, &hs->main_base);
    const char *on = getenv("WARPRACE_HOST_SITES");
    hs->off = on && strcmp(on, "0") == 0;
    const char *debug = getenv("WARPRACE_HOST_SITE_DEBUG");
    hs->debug = debug && debug[0] && strcmp(debug, "0") != 0;
    return hs;
}

static void stop_resolver(module *m)
{
    if (m->fd >= 0) {
        close(m->fd);   /* addr2line ends at the end of its input */
        m->fd = -1;
    }
    if (m->pid > 0) {
        int status;
        /* it ends at once on end of input; kill one that does not */
        for (int i = 0; i < 100 && waitpid(m->pid, &status, WNOHANG) == 0; i++) {
            if (i == 50)
                kill(m->pid, SIGKILL);
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        m->pid = 0;
    }
}

void wrr_host_sites_free(wrr_host_sites *hs)
{
    if (!hs)
        return;
    for (size_t i = 0; i < hs->nmods; i++) {
        stop_resolver(hs->mods[i]);
        free(hs->mods[i]->path);
        free(hs->mods[i]->name);
        free(hs->mods[i]);
    }
    for (size_t i = 0; i < hs->nsites; i++) {
        free((char *)hs->sites[i]->file);
        free((char *)hs->sites[i]->function);
        free(hs->sites[i]);
    }
    free(hs->mods);
    free(hs->sites);
    free(hs->frames);
    free(hs->tool);
    free(hs);
}

unsigned long wrr_host_sites_resolver_failures(const wrr_host_sites *hs)
{
    return hs ? hs->failures : 0;
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool cuda_library(const char *name)
{
    return has_prefix(name, "libcu") || has_prefix(name, "libnv") ||
           has_prefix(name, "libsanitizer");
}

/* A function of the CUDA runtime linked into the program (nvcc links
 * libcudart_static by default), demangled or not: cudaMemcpy,
 * cudart::cudaApiMemcpy, __cudart1234, libcudart_static_3e3e0c... (its
 * internal functions, as CUDA 13.0 names them), the cuda_runtime.h
 * templates ("cudaError cudaMemcpyToSymbol<float>(...)"). */
static bool runtime_function(const char *f)
{
    if (strstr(f, "cudart"))
        return true;
    if (has_prefix(f, "_Z")) {   /* a mangled free function: _Z<length><name> */
        f += 2;
        while (*f >= '0' && *f <= '9')
            f++;
    }
    while (*f == '_')
        f++;
    /* nvcc's launch stubs: __device_stub__Z9histogramPKfPj */
    return has_prefix(f, "cuda") || has_prefix(f, "device_stub_");
}

/* A CUDA header: cuda_runtime.h and its kin, crt/ (nvcc's launch stubs). */
static bool runtime_header(const char *file)
{
    const char *slash = strrchr(file, '/');
    return has_prefix(slash ? slash + 1 : file, "cuda_") || strstr(file, "/crt/") != NULL;
}

/* The host function nvcc generates for a __global__ one, which the
 * program's <<<>>> calls: it has the kernel's name (mangled: the kernel's
 * symbol; demangled as addr2line -C prints it). */
static bool kernel_wrapper(wrr_host_sites *hs, const char *fn)
{
    if (!hs->kernel || !fn[0])
        return false;
    if (!hs->kernel_readable)
        hs->kernel_readable = wr_demangle(hs->kernel);
    return strcmp(fn, hs->kernel) == 0 ||
           (hs->kernel_readable && strcmp(fn, hs->kernel_readable) == 0);
}

static module *module_of(wrr_host_sites *hs, const Dl_info *info)
{
    uintptr_t base = (uintptr_t)info->dli_fbase;
    for (size_t i = 0; i < hs->nmods; i++)
        if (hs->mods[i]->base == base)
            return hs->mods[i];
    if (hs->nmods == hs->capmods) {
        module **m = grow(hs->mods, &hs->capmods, sizeof *m);
        if (!m)
            return NULL;
        hs->mods = m;
    }
    module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base = base;
    m->fd = -1;
    char exe[PATH_MAX];
    const char *path = info->dli_fname ? info->dli_fname : "";
    if (base == hs->main_base) {
        /* dladdr names the program by argv[0], which need not be a path */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        /* addr2line opens it by our pid: its own /proc/self is itself */
        char own[64];
        snprintf(own, sizeof own, "/proc/%ld/exe", (long)getpid());
        m->path = strdup(own);
        path = exe;
    } else {
        m->path = strdup(path);
    }
    const char *slash = strrchr(path, '/');
    m->name = strdup(slash ? slash + 1 : path);
    if (!m->path || !m->name) {
        free(m->path);
        free(m->name);
        free(m);
        return NULL;
    }
    m->cuda = cuda_library(m->name);
    const ElfW(Ehdr) *eh = info->dli_fbase;
    m->fixed = eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_type == ET_EXEC;
    hs->mods[hs->nmods++] = m;
    return m;
}

/* The environment of addr2line: without what loads a recorder into it. */
static char **resolver_environment(void)
{
    static const char *const drop[] = {"LD_PRELOAD=", "CUDA_INJECTION64_PATH=",
                                       "NVTX_INJECTION64_PATH=", "WARPRACE_", NULL};
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = true;
        for (int d = 0; drop[d] && keep; d++)
            keep = !has_prefix(environ[i], drop[d]);
        if (keep)
            env[k++] = environ[i];
    }
    return env;
}

static bool start_resolver(wrr_host_sites *hs, module *m)
{
    if (!hs->tool || m->resolver_failed)
        return false;
    if (m->fd >= 0)
        return true;
    m->resolver_failed = true;   /* until it started */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        hs->failures++;
        return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* -a echoes each address (the end of an answer: see ask_resolver),
     * -i adds the functions a call was inlined into */
    char *argv[] = {hs->tool, "-a", "-i", "-f", "-C", "-e", m->path, NULL};
    char **env = resolver_environment();
    pid_t pid;
    int rc = env ? posix_spawnp(&pid, hs->tool, &fa, NULL, argv, env) : ENOMEM;
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        hs->failures++;
        return false;
    }
    m->fd = sv[0];
    m->pid = pid;
    m->len = 0;
    m->resolver_failed = false;
    return true;
}

static long elapsed_ms(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Reads addr2line's next line into out (without the newline). */
static bool read_line(module *m, char *out, size_t n, const struct timespec *t0, long limit_ms)
{
    for (;;) {
        char *nl = memchr(m->buf, '\n', m->len);
        if (nl) {
            size_t len = (size_t)(nl - m->buf);
            snprintf(out, n, "%.*s", (int)len, m->buf);
            memmove(m->buf, nl + 1, m->len - len - 1);
            m->len -= len + 1;
            return true;
        }
        if (m->len == sizeof m->buf)
            return false;   /* a line longer than the buffer: not addr2line's answer */
        long left = limit_ms - elapsed_ms(t0);
        struct pollfd p = {m->fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) != 1)
            return false;
        ssize_t got = read(m->fd, m->buf + m->len, sizeof m->buf - m->len);
        if (got <= 0) {
            if (got < 0 && errno == EINTR)
                continue;
            return false;
        }
        m->len += (size_t)got;
    }
}

enum { MAX_INLINED = 8 };

/* What addr2line says of an address: the function and "file:line" of the
 * call and, outwards, of each function it was inlined into. */
typedef struct answer {
    char fn[MAX_INLINED][512];
    char where[MAX_INLINED][PATH_MAX + 64];
    int n;
} answer;

static bool null_echo(const char *line)
{
    if (line[0] != '0' || line[1] != 'x' || !line[2])
        return false;
    for (const char *c = line + 2; *c; c++)
        if (*c != '0')
            return false;
    return true;
}

/* Asks for the address, then for address 0, whose echo ends the first
 * answer however many inlined frames it has.  False when addr2line could
 * not answer (then the module is not asked again). */
static bool ask_resolver(wrr_host_sites *hs, module *m, uint64_t addr, answer *a)
{
    if (!start_resolver(hs, m))
        return false;
    char q[48], line[PATH_MAX + 64];
    int qn = snprintf(q, sizeof q, "0x%" PRIx64 "\n0\n", addr);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long limit = m->answered ? ANSWER_MS : FIRST_ANSWER_MS;
    bool ok = send(m->fd, q, (size_t)qn, MSG_NOSIGNAL) == qn &&
              read_line(m, line, sizeof line, &t0, limit);   /* the address's echo */
    a->n = 0;
    while (ok) {
        ok = read_line(m, line, sizeof line, &t0, limit);
        if (!ok || null_echo(line))
            break;
        int i = a->n < MAX_INLINED ? a->n++ : MAX_INLINED - 1;
        snprintf(a->fn[i], sizeof a->fn[i], "%.511s", line);
        ok = read_line(m, a->where[i], sizeof a->where[i], &t0, limit);
    }
    /* address 0's own answer */
    ok = ok && read_line(m, line, sizeof line, &t0, limit) &&
         read_line(m, line, sizeof line, &t0, limit) && a->n > 0;
    if (ok) {
        m->answered = true;
        return true;
    }
    hs->failures++;
    stop_resolver(m);
    m->resolver_failed = true;
    return false;
}

/* An absolute path without "." and "dir/.." components, in place: the
 * debug information names a source by its compile directory, so that
 * "/src/build/../app.cu" reads "/src/app.cu" (by its letters: a link
 * named build would lead elsewhere, but the name is for reading). */
static void tidy_path(char *p)
{
    if (p[0] != '/')
        return;
    char *out = p;   /* written up to here, no trailing slash */
    const char *in = p;
    while (*in) {
        while (*in == '/')
            in++;
        const char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 0)
            break;
        if (len == 1 && in[0] == '.') {
            /* nothing */
        } else if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (out > p && *--out != '/')
                ;
        } else {
            *out++ = '/';
            memmove(out, in, len);
            out += len;
        }
        in += len;
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

/* "file:line", "file:line (discriminator 2)", "??:0", "??:?" */
static void parse_where(char *where, const char **file, uint32_t *line)
{
    *file = "";
    *line = 0;
    char *disc = strstr(where, " (discriminator");
    if (disc)
        *disc = '\0';
    char *colon = strrchr(where, ':');
    if (!colon)
        return;
    *colon = '\0';
    if (strcmp(where, "??") == 0 || !where[0])
        return;
    char *end;
    unsigned long l = strtoul(colon + 1, &end, 10);
    tidy_path(where);
    *file = where;
    *line = *end == '\0' && l <= UINT32_MAX ? (uint32_t)l : 0;
}

static wrr_host_site *intern_site(wrr_host_sites *hs, module *m, uint64_t pc, const char *file,
                                  uint32_t line, const char *function)
{
    for (size_t i = 0; i < hs->nsites; i++) {
        wrr_host_site *s = hs->sites[i];
        if (s->pc == pc && s->module == m->name)
            return s;
    }
    if (hs->nsites == hs->capsites) {
        wrr_host_site **v = grow(hs->sites, &hs->capsites, sizeof *v);
        if (!v)
            return NULL;
        hs->sites = v;
    }
    wrr_host_site *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->pc = pc;
    s->file = strdup(file);
    s->line = line;
    s->function = strdup(function);
    s->module = m->name;
    if (!s->file || !s->function) {
        free((char *)s->file);
        free((char *)s->function);
        free(s);
        return NULL;
    }
    hs->sites[hs->nsites++] = s;
    s->ordinal = (uint32_t)hs->nsites;
    return s;
}

/* Classifies a frame outside the CUDA libraries: a runtime function, or
 * the program with its site. */
static void resolve_frame(wrr_host_sites *hs, frame *f, const Dl_info *info)
{
    module *m = f->mod;
    uintptr_t call = f->addr - 1;   /* inside the call instruction */
    uint64_t pc = m->fixed ? call : call - m->base;
    static answer a;   /* large; callers hold the recorder's lock */
    const char *file = "", *fn = "";
    uint32_t line = 0;
    bool resolved = ask_resolver(hs, m, pc, &a);
    bool skipped = false;
    if (resolved) {
        /* innermost first: the first frame that is not the runtime's own,
         * inlined from its headers (cuda_runtime.h's templates, crt/), nor
         * the launched kernel's host wrapper */
        for (int i = 0; i < a.n; i++) {
            parse_where(a.where[i], &file, &line);
            fn = strcmp(a.fn[i], "??") == 0 ? "" : a.fn[i];
            skipped = runtime_header(file) || (fn[0] && runtime_function(fn)) ||
                      kernel_wrapper(hs, fn);
            if (!skipped)
                break;
        }
    } else if (info->dli_sname) {
        fn = info->dli_sname;
        skipped = runtime_function(fn) || kernel_wrapper(hs, fn);
    }
    if (skipped) {
        f->cls = FRAME_RUNTIME;
        return;
    }
    f->site = intern_site(hs, m, pc, file, line, fn);
    f->cls = !f->site ? FRAME_NONE : resolved && !file[0] && !fn[0] ? FRAME_UNNAMED : FRAME_PROGRAM;
}

static frame *frame_of(wrr_host_sites *hs, uintptr_t addr)
{
    if (2 * (hs->nframes + 1) > hs->capframes) {
        size_t cap = hs->capframes ? hs->capframes * 2 : 256;
        frame *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < hs->capframes; i++)
            if (hs->frames[i].addr) {
                size_t j = (hs->frames[i].addr >> 2) * 0x9E3779B97F4A7C15ull & (cap - 1);
                while (t[j].addr)
                    j = (j + 1) & (cap - 1);
                t[j] = hs->frames[i];
            }
        free(hs->frames);
        hs->frames = t;
        hs->capframes = cap;
    }
    size_t j = (addr >> 2) * 0x9E3779B97F4A7C15ull & (hs->capframes - 1);
    while (hs->frames[j].addr && hs->frames[j].addr != addr)
        j = (j + 1) & (hs->capframes - 1);
    frame *f = &hs->frames[j];
    if (!f->addr) {
        f->addr = addr;
        f->cls = FRAME_NEW;
        hs->nframes++;
        Dl_info info;
        if (!dladdr((void *)(addr - 1), &info) || !info.dli_fbase || !(f->mod = module_of(hs, &info)))
            f->cls = FRAME_NONE;
    }
    return f;
}

wrr_host_site *wrr_host_site_of(wrr_host_sites *hs, void *const *frames, int count)
{
    if (!hs || hs->off)
        return NULL;
    bool past_cuda = false;
    /* a frame addr2line cannot name may be the runtime's (its internal
     * functions need not have symbols): a named frame further out in the
     * same module is the site, else the first unnamed one */
    const frame *unnamed = NULL;
    for (int i = 0; i < count; i++) {
        uintptr_t addr = (uintptr_t)frames[i];
        if (!addr)
            continue;
        frame *f = frame_of(hs, addr);
        if (!f || f->cls == FRAME_NONE)
            continue;
        if (f->mod->cuda) {
            past_cuda = true;
            continue;
        }
        if (!past_cuda)
            continue;   /* the recorder's own frames, above the CUDA library's */
        if (unnamed && f->mod != unnamed->mod)
            break;
        if (f->cls == FRAME_NEW) {
            Dl_info info;
            memset(&info, 0, sizeof info);
            if (!dladdr((void *)(addr - 1), &info))
                info.dli_sname = NULL;
            resolve_frame(hs, f, &info);
        }
        if (hs->debug)
            fprintf(stderr, "warprace host site: frame %d %s+0x%" PRIx64 " %s%s%s\n", i,
                    f->mod->name, (uint64_t)(f->addr - 1 - (f->mod->fixed ? 0 : f->mod->base)),
                    f->cls == FRAME_RUNTIME    ? "runtime"
                    : f->cls == FRAME_PROGRAM  ? "program "
                    : f->cls == FRAME_UNNAMED ? "unnamed"
                                               : "none",
                    f->cls == FRAME_PROGRAM ? f->site->function : "",
                    f->cls == FRAME_PROGRAM && !f->site->function[0] ? "(no name)" : "");
        if (f->cls == FRAME_PROGRAM)
            return f->site;
        if (f->cls == FRAME_UNNAMED && !unnamed)
            unnamed = f;
    }
    return unnamed ? unnamed->site : NULL;
}

wrr_host_site *wrr_host_site_here(wrr_host_sites *hs)
{
    return wrr_host_site_launching(hs, NULL);   /* no kernel wrapper to pass */
}

wrr_host_site *wrr_host_site_at(const wrr_host_sites *hs, uint32_t ordinal)
{
    return hs && ordinal >= 1 && ordinal <= hs->nsites ? hs->sites[ordinal - 1] : NULL;
}

uint32_t wrr_host_site_trace_id(wrr_host_site *s, wrr_site_define_fn define, void *ctx)
{
    if (s && !s->site_id)
        s->site_id = define(ctx, s->file, s->line, s->function, s->pc);
    return s ? s->site_id : 0;
}

wrr_host_site *wrr_host_site_launching(wrr_host_sites *hs, const char *kernel)
{
    if (!hs || hs->off)
        return NULL;
    hs->kernel = kernel;
    void *frames[MAX_FRAMES];
    int n = backtrace(frames, MAX_FRAMES);
    wrr_host_site *s = wrr_host_site_of(hs, frames, n);
    hs->kernel = NULL;
    free(hs->kernel_readable);
    hs->kernel_readable = NULL;
    return s;
}

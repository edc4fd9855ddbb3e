/* SASS disassembly parser, opcode classifier and fence inference
 * (sass_classify.h, SANITIZER.md). */
#include "sass_classify.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warprace/event.h"

#define SUCC_NONE UINT32_MAX
#define SUCC_UNKNOWN (UINT32_MAX - 1u)

const char *wrs_kind_name(unsigned kind)
{
    static const char *const names[] = {"other", "load", "store", "atomic", "red",
                                        "fence", "proxy_fence", "barrier", "warpsync"};
    return kind < WRS_K_KIND_MAX ? names[kind] : "?";
}

/* ---- opcode classification ------------------------------------------------ */

static int has_mod(char mods[][16], int n, const char *m)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(mods[i], m))
            return 1;
    return 0;
}

static unsigned size_of_mods(char mods[][16], int n)
{
    unsigned size = 0;
    for (int i = 0; i < n; i++) {
        const char *m = mods[i];
        if (!strcmp(m, "U8") || !strcmp(m, "S8"))
            size = 1;
        else if (!strcmp(m, "U16") || !strcmp(m, "S16") || !strcmp(m, "F16"))
            size = 2;
        else if (!strcmp(m, "32") || !strcmp(m, "U32") || !strcmp(m, "S32") ||
                 !strcmp(m, "F32") || !strcmp(m, "F16x2") || !strcmp(m, "BF16x2"))
            size = 4;
        else if (!strcmp(m, "64") || !strcmp(m, "U64") || !strcmp(m, "S64") || !strcmp(m, "F64"))
            size = 8;
        else if (!strcmp(m, "128"))
            size = 16;
    }
    return size ? size : 4;
}

/* Scope modifier of an access/atomic/fence; WR_SCOPE_NONE when absent. */
static unsigned scope_of_mods(char mods[][16], int n)
{
    if (has_mod(mods, n, "SYS"))
        return WR_SCOPE_SYSTEM;
    if (has_mod(mods, n, "GPU"))
        return WR_SCOPE_DEVICE;
    if (has_mod(mods, n, "CTA") || has_mod(mods, n, "SM"))
        return WR_SCOPE_BLOCK;
    return WR_SCOPE_NONE;
}

static unsigned atomic_op_of_mods(char mods[][16], int n)
{
    static const struct { const char *m; unsigned aop; } map[] = {
        {"ADD", WR_AOP_ADD},   {"EXCH", WR_AOP_EXCH}, {"CAS", WR_AOP_CAS},
        {"CAST", WR_AOP_CAS},  {"MIN", WR_AOP_MIN},   {"MAX", WR_AOP_MAX},
        {"AND", WR_AOP_AND},   {"OR", WR_AOP_OR},     {"XOR", WR_AOP_XOR},
        {"INC", WR_AOP_INC},   {"DEC", WR_AOP_DEC},
    };
    /* ATOMS.POPC.INC is an add of the population count (atomicAdd(p, 1)
     * on shared memory), not the wrapping atomicInc */
    if (has_mod(mods, n, "POPC") && has_mod(mods, n, "INC"))
        return WR_AOP_ADD;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (!strcmp(mods[i], map[k].m))
                return map[k].aop;
    return WR_AOP_NONE;
}

void wrs_classify_opcode(const char *opcode, wrs_class *c)
{
    memset(c, 0, sizeof *c);
    c->space = WRS_SPACE_NONE;
    c->flow = WRS_F_NEXT;
    char base[32];
    char mods[16][16];
    int nmods = 0;
    size_t i = 0, k = 0;
    while (opcode[i] && opcode[i] != '.' && k + 1 < sizeof base)
        base[k++] = opcode[i++];
    base[k] = 0;
    while (opcode[i] == '.' && nmods < 16) {
        i++;
        k = 0;
        while (opcode[i] && opcode[i] != '.') {
            if (k + 1 < sizeof mods[0])
                mods[nmods][k++] = opcode[i];
            i++;
        }
        mods[nmods++][k] = 0;
    }

    static const struct { const char *op; uint8_t kind, space; } mem[] = {
        {"LDG", WRS_K_LOAD, WR_SPACE_GLOBAL},     {"STG", WRS_K_STORE, WR_SPACE_GLOBAL},
        {"LDS", WRS_K_LOAD, WR_SPACE_SHARED},     {"STS", WRS_K_STORE, WR_SPACE_SHARED},
        {"LDSM", WRS_K_LOAD, WR_SPACE_SHARED},    {"LDL", WRS_K_LOAD, WR_SPACE_LOCAL},
        {"STL", WRS_K_STORE, WR_SPACE_LOCAL},     {"LD", WRS_K_LOAD, WRS_SPACE_GENERIC},
        {"ST", WRS_K_STORE, WRS_SPACE_GENERIC},   {"ATOMG", WRS_K_ATOMIC, WR_SPACE_GLOBAL},
        {"ATOMS", WRS_K_ATOMIC, WR_SPACE_SHARED}, {"ATOM", WRS_K_ATOMIC, WRS_SPACE_GENERIC},
        {"RED", WRS_K_RED, WRS_SPACE_GENERIC},    {"REDG", WRS_K_RED, WR_SPACE_GLOBAL},
        {"REDS", WRS_K_RED, WR_SPACE_SHARED},
    };
    for (size_t m = 0; m < sizeof mem / sizeof mem[0]; m++) {
        if (strcmp(base, mem[m].op) != 0)
            continue;
        c->kind = mem[m].kind;
        c->space = mem[m].space;
        c->size = (uint8_t)size_of_mods(mods, nmods);
        unsigned scope = scope_of_mods(mods, nmods);
        if (c->kind == WRS_K_ATOMIC || c->kind == WRS_K_RED) {
            c->op = WR_OP_ATOMIC_RMW;
            c->atomic_op = (uint8_t)atomic_op_of_mods(mods, nmods);
            if (c->atomic_op == WR_AOP_NONE)
                c->atomic_op = WR_AOP_ADD;   /* e.g. ATOMS.POPC alone; never seen */
            /* no scope printed: shared atomics are block-scoped, the others
             * device-scoped (atomicAdd) */
            if (scope == WR_SCOPE_NONE) {
                scope = c->space == WR_SPACE_SHARED ? WR_SCOPE_BLOCK : WR_SCOPE_DEVICE;
                c->scope_implied = 1;
            }
            c->scope = (uint8_t)scope;
            c->order = WR_ORDER_RELAXED;
        } else if (has_mod(mods, nmods, "STRONG") && scope != WR_SCOPE_NONE) {
            if (scope == WR_SCOPE_SYSTEM) {
                /* volatile (ld.volatile = relaxed.sys on sm_70+): the
                 * source-level API records it as a plain access with
                 * relaxed order */
                c->op = c->kind == WRS_K_LOAD ? WR_OP_LOAD : WR_OP_STORE;
                c->scope = WR_SCOPE_NONE;
            } else {
                /* ld/st.relaxed.gpu|cta: cuda::atomic_ref load/store */
                c->op = c->kind == WRS_K_LOAD ? WR_OP_ATOMIC_LOAD : WR_OP_ATOMIC_STORE;
                c->scope = (uint8_t)scope;
            }
            c->order = WR_ORDER_RELAXED;
        } else {
            c->op = c->kind == WRS_K_LOAD ? WR_OP_LOAD : WR_OP_STORE;
            c->scope = WR_SCOPE_NONE;
            c->order = WR_ORDER_WEAK;
        }
        return;
    }
    if (!strcmp(base, "MEMBAR")) {
        c->kind = WRS_K_FENCE;
        unsigned scope = scope_of_mods(mods, nmods);
        c->scope = (uint8_t)(scope == WR_SCOPE_NONE ? WR_SCOPE_DEVICE : scope);
        c->order = has_mod(mods, nmods, "ALL") ? WR_ORDER_ACQ_REL : WR_ORDER_SC;
        return;
    }
    if (!strcmp(base, "FENCE")) {
        c->kind = WRS_K_PROXY_FENCE;
        return;
    }
    if (!strcmp(base, "BAR")) {
        /* a block barrier (bar / barrier.cta): BAR.ARV is bar.arrive, an
         * arrival that does not wait; BAR.SYNC[.DEFER_BLOCKING] (bar.sync,
         * __syncthreads), BAR.SYNCALL and BAR.RED.{POPC,AND,OR} (bar.red,
         * __syncthreads_count/and/or) arrive and wait.  Any other form is
         * left unknown: the finisher keeps SYNC for it and counts it. */
        c->kind = WRS_K_BARRIER;
        c->scope = WR_SCOPE_BLOCK;
        if (nmods && !strcmp(mods[0], "ARV"))
            c->barmode = WR_BARMODE_ARRIVE;
        else if (nmods && (!strcmp(mods[0], "SYNC") || !strcmp(mods[0], "SYNCALL") ||
                           !strcmp(mods[0], "RED")))
            c->barmode = WR_BARMODE_SYNC;
        else
            c->barmode = WRS_BARMODE_UNKNOWN;
        return;
    }
    /* sm_90 cluster barriers: barrier.cluster.wait is UCGABAR_WAIT;
     * barrier.cluster.arrive, its .release and its .relaxed forms are all
     * one UCGABAR_ARV (ptxas 13.0 emits the same encoding for each), the
     * release being the MEMBAR that ptxas puts before it.  Alone, an
     * UCGABAR_ARV therefore releases nothing: finish_function makes it an
     * ARRIVE where that MEMBAR directly precedes it. */
    if (!strcmp(base, "UCGABAR_ARV") || !strcmp(base, "UCGABAR_WAIT")) {
        c->kind = WRS_K_BARRIER;
        c->scope = WR_SCOPE_CLUSTER;
        c->barmode = base[8] == 'W' ? WR_BARMODE_WAIT : WR_BARMODE_ARRIVE_RELAXED;
        return;
    }
    if (!strcmp(base, "WARPSYNC")) {
        c->kind = WRS_K_WARPSYNC;
        return;
    }
    if (!strcmp(base, "BRA") || !strcmp(base, "JMP"))
        c->flow = WRS_F_BRANCH;
    else if (!strcmp(base, "BRX") || !strcmp(base, "JMX"))
        c->flow = WRS_F_INDIRECT;
    else if (!strcmp(base, "EXIT") || !strcmp(base, "KILL") ||
             (!strcmp(base, "BPT") && has_mod(mods, nmods, "TRAP")))
        c->flow = WRS_F_EXIT;
    else if (!strcmp(base, "RET"))
        c->flow = WRS_F_RET;
    else if (!strcmp(base, "CALL"))
        c->flow = WRS_F_CALL;
}

/* ---- module bookkeeping --------------------------------------------------- */

void wrs_module_free(wrs_module *m)
{
    for (size_t i = 0; i < m->nfns; i++) {
        free(m->fns[i].name);
        free(m->fns[i].insns);
        free(m->fns[i].succ);
        free(m->fns[i].display);
        free(m->fns[i].arrive_n);
        free(m->fns[i].arrive_ids);
        free(m->fns[i].arrive_counts);
        free(m->fns[i].arrive_pcs);
    }
    free(m->fns);
    for (size_t i = 0; i < m->nfiles; i++)
        free(m->files[i]);
    free(m->files);
    memset(m, 0, sizeof *m);
}

/* Where the balanced open...close group that ends d[0, end) begins (end
 * itself when d[end - 1] is not close or the group is not balanced). */
static size_t before_balanced(const char *d, size_t end, char open, char close)
{
    if (end == 0 || d[end - 1] != close)
        return end;
    int depth = 0;
    for (size_t i = end; i > 0;) {
        char c = d[--i];
        depth += c == close ? 1 : c == open ? -1 : 0;
        if (depth == 0)
            return i > 0 ? i : end;
    }
    return end;
}

void wrs_bare_name(const char *d, char *out, size_t outlen)
{
    size_t end = strlen(d);
    /* " const", " volatile", "&" qualifiers after the parameters */
    while (end > 0 && d[end - 1] != ')') {
        if (d[end - 1] == '>' || d[end - 1] == '(')
            break;
        end--;
    }
    if (end == 0)
        end = strlen(d);
    end = before_balanced(d, end, '(', ')');   /* the parameter list */
    end = before_balanced(d, end, '<', '>');   /* template arguments */
    /* the last component: after the return type's space and any scope */
    size_t start = end;
    while (start > 0 && d[start - 1] != ' ' && d[start - 1] != ':')
        start--;
    if (start == end) {           /* nothing left: the whole name */
        start = 0;
        end = strlen(d);
    }
    size_t n = end - start < outlen - 1 ? end - start : outlen - 1;
    memcpy(out, d + start, n);
    out[n] = 0;
}

const char *wrs_display_name(wrs_function *f)
{
    if (f->display)
        return f->display;
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn demangle;
    static int looked;
    if (!looked) {
        looked = 1;
        *(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!demangle) {
            void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
            if (cxx)
                *(void **)&demangle = dlsym(cxx, "__cxa_demangle");
        }
    }
    int status = -1;
    char *dem = demangle && !strncmp(f->name, "_Z", 2) ? demangle(f->name, NULL, NULL, &status)
                                                        : NULL;
    if (dem && status == 0) {
        size_t len = strlen(dem) + 1;
        f->display = malloc(len);
        if (f->display)
            wrs_bare_name(dem, f->display, len);
    }
    free(dem);
    return f->display ? f->display : f->name;
}

const wrs_function *wrs_find_function(const wrs_module *m, const char *name)
{
    for (size_t i = 0; i < m->nfns; i++)
        if (!strcmp(m->fns[i].name, name))
            return &m->fns[i];
    return NULL;
}

static long insn_index(const wrs_function *f, uint64_t pc)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->insns[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->n && f->insns[lo].pc == pc ? (long)lo : -1;
}

const wrs_insn *wrs_find_insn(const wrs_function *f, uint64_t pc)
{
    long i = insn_index(f, pc);
    return i < 0 ? NULL : &f->insns[i];
}

const char *wrs_insn_file(const wrs_module *m, const wrs_insn *in)
{
    return in->file >= 0 && (size_t)in->file < m->nfiles ? m->files[in->file] : NULL;
}

/* ---- parser ------------------------------------------------------------------ */

typedef struct label {
    char name[64];
    uint64_t pc;          /* pc of the next instruction after the label */
    int pending;          /* no instruction seen yet after it */
} label;

typedef struct fixup {
    size_t insn;
    char name[64];
} fixup;

typedef struct parser {
    wrs_module *m;
    wrs_function *fn;     /* current function (index may move: realloc) */
    size_t fn_index;
    int have_fn;
    int32_t file;
    uint32_t line;
    /* nvdisasm -gi writes an instruction's frames as consecutive line-info
     * comments, innermost first: in_frames while they come, and whether
     * the frame taken so far is a toolkit header's (an outer one may
     * replace it) */
    int in_frames, frame_in_toolkit;
    uint32_t grid_sync_line;   /* of the current frames (wrs_insn) */
    label *labels;
    size_t nlabels, caplabels;
    fixup *fixups;
    size_t nfixups, capfixups;
    char *err;
    size_t errlen;
    unsigned lineno;
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        int n = snprintf(p->err, p->errlen, "line %u: ", p->lineno);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < p->errlen)
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The path with "." and "dir/.." taken out, in place (returns the new
 * length): nvcc run from a build directory names its sources
 * "/src/build/../k.cu", which reads better as "/src/k.cu".  Lexical: a
 * symbolic link named before ".." is not followed. */
static size_t clean_path(char *p, size_t len)
{
    size_t out = 0, i = 0;
    int absolute = len && p[0] == '/';
    size_t floor = absolute ? 1 : 0;   /* ".." never climbs past the root */
    if (absolute)
        out = i = 1;
    while (i < len) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 0 || (n == 1 && p[i] == '.')) {
            /* skip "" and "." */
        } else if (n == 2 && p[i] == '.' && p[i + 1] == '.' &&
                   (absolute || (out > 0 && !(out >= 2 && p[out - 2] == '.' &&
                                              p[out - 1] == '.' &&
                                              (out == 2 || p[out - 3] == '/'))))) {
            /* drop the last component written (at the root: nothing) */
            size_t k = out;
            while (k > floor && p[k - 1] != '/')
                k--;
            out = k > floor ? k - 1 : floor;
        } else {
            if (out > floor)
                p[out++] = '/';
            memmove(p + out, p + i, n);
            out += n;
        }
        i = j + 1;
    }
    if (!out && !absolute)
        p[out++] = '.';
    p[out] = 0;
    return out;
}

static int32_t intern_file(wrs_module *m, const char *raw, size_t raw_len)
{
    char buf[4096];
    if (raw_len >= sizeof buf)
        raw_len = sizeof buf - 1;
    memcpy(buf, raw, raw_len);
    buf[raw_len] = 0;
    size_t len = clean_path(buf, raw_len);
    const char *name = buf;
    for (size_t i = 0; i < m->nfiles; i++)
        if (strlen(m->files[i]) == len && !memcmp(m->files[i], name, len))
            return (int32_t)i;
    if (m->nfiles == m->capfiles) {
        size_t cap = m->capfiles ? 2 * m->capfiles : 8;
        char **n = realloc(m->files, cap * sizeof *n);
        if (!n)
            return -1;
        m->files = n;
        m->capfiles = cap;
    }
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, name, len);
    s[len] = 0;
    m->files[m->nfiles] = s;
    return (int32_t)m->nfiles++;
}

static int cmp_insn(const void *a, const void *b)
{
    const wrs_insn *x = a, *y = b;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Is opcode `name`, with or without modifiers? */
static int base_is(const char *opcode, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(opcode, name, n) && (opcode[n] == 0 || opcode[n] == '.');
}

/* Does some branch of f (targets resolved) land on pc? */
static int is_branch_target(const wrs_function *f, uint64_t pc)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->insns[i].target >= 0 && (uint64_t)f->insns[i].target == pc)
            return 1;
    return 0;
}

/* Ends the current function: sorts it, resolves label targets. */
static int finish_function(parser *p)
{
    if (!p->have_fn)
        return 0;
    wrs_function *f = &p->m->fns[p->fn_index];
    if (f->n > 1)
        qsort(f->insns, f->n, sizeof *f->insns, cmp_insn);
    for (size_t i = 0; i < f->n && !f->has_grid_sync; i++)
        f->has_grid_sync = f->insns[i].grid_sync_line != 0;
    /* a PC is one instruction: look-ups by PC (binary search) and the CFG
     * take them as unique */
    for (size_t i = 1; i < f->n; i++)
        if (f->insns[i].pc == f->insns[i - 1].pc)
            return fail(p, "PC 0x%llx twice in function %s", (unsigned long long)f->insns[i].pc,
                        f->name);
    for (size_t i = 0; i < p->nfixups; i++) {
        const fixup *x = &p->fixups[i];
        /* fixups hold the branch's pc (add_fixup) */
        uint64_t pc = (uint64_t)x->insn;
        long idx = insn_index(f, pc);
        if (idx < 0)
            continue;
        f->insns[idx].target = -1;
        for (size_t l = 0; l < p->nlabels; l++)
            if (!strcmp(p->labels[l].name, x->name) && !p->labels[l].pending) {
                f->insns[idx].target = (int64_t)p->labels[l].pc;
                break;
            }
    }
    /* acquire heuristic: a strong load or atomic directly followed by
     * CCTL.IVALL (the L1 invalidation ld.acquire / atom.acquire emit) */
    for (size_t i = 0; i + 1 < f->n; i++) {
        wrs_insn *in = &f->insns[i];
        if ((in->cls.op == WR_OP_ATOMIC_LOAD || in->cls.op == WR_OP_ATOMIC_RMW) &&
            !strncmp(f->insns[i + 1].opcode, "CCTL.IVALL", 10))
            in->cls.order = in->cls.op == WR_OP_ATOMIC_LOAD ? WR_ORDER_ACQUIRE : in->cls.order;
    }
    /* release of a cluster arrive: the default barrier.cluster.arrive
     * (release) is MEMBAR.ALL.GPU, ERRBAR, CGAERRBAR, UCGABAR_ARV, the
     * .relaxed one the UCGABAR_ARV alone (ptxas 13.0, sm_90).  An arrive
     * counts as releasing when a fence of cluster scope or wider directly
     * precedes it on its only way in: unpredicated, with only ERRBAR /
     * CGAERRBAR between, and no branch landing in between (a path that
     * jumps there skips the fence). */
    for (size_t i = 0; i < f->n; i++) {
        wrs_insn *in = &f->insns[i];
        if (in->cls.kind != WRS_K_BARRIER || in->cls.barmode != WR_BARMODE_ARRIVE_RELAXED)
            continue;
        for (size_t j = i; j > 0 && !is_branch_target(f, f->insns[j].pc);) {
            const wrs_insn *q = &f->insns[--j];
            if (q->cls.kind == WRS_K_FENCE) {
                if (!q->predicated && q->cls.scope >= WR_SCOPE_CLUSTER)
                    in->cls.barmode = WR_BARMODE_ARRIVE;
                break;
            }
            if (!base_is(q->opcode, "ERRBAR") && !base_is(q->opcode, "CGAERRBAR"))
                break;
        }
    }
    memset(&f->unrecorded, 0, sizeof f->unrecorded);
    for (size_t k = 0; k < f->n; k++) {
        const wrs_insn *in = &f->insns[k];
        f->unrecorded.bar_arrive += in->cls.kind == WRS_K_BARRIER &&
                                    in->cls.scope == WR_SCOPE_BLOCK &&
                                    in->cls.barmode == WR_BARMODE_ARRIVE;
        f->unrecorded.mbarrier += !strncmp(in->opcode, "SYNCS.", 6);
    }
    p->nlabels = 0;
    p->nfixups = 0;
    p->have_fn = 0;
    return 0;
}

static int start_function(parser *p, const char *name, size_t len)
{
    if (finish_function(p) != 0)
        return -1;
    wrs_module *m = p->m;
    for (size_t i = 0; i < m->nfns; i++)
        if (strlen(m->fns[i].name) == len && !memcmp(m->fns[i].name, name, len)) {
            if (m->fns[i].n > 0)
                return fail(p, "function %.*s defined twice", (int)len, name);
            p->fn_index = i;
            p->have_fn = 1;
            return 0;
        }
    if (m->nfns == m->capfns) {
        size_t cap = m->capfns ? 2 * m->capfns : 8;
        wrs_function *n = realloc(m->fns, cap * sizeof *n);
        if (!n)
            return fail(p, "out of memory");
        m->fns = n;
        m->capfns = cap;
    }
    wrs_function *f = &m->fns[m->nfns];
    memset(f, 0, sizeof *f);
    f->name = malloc(len + 1);
    if (!f->name)
        return fail(p, "out of memory");
    memcpy(f->name, name, len);
    f->name[len] = 0;
    p->fn_index = m->nfns++;
    p->have_fn = 1;
    p->file = -1;
    p->line = 0;
    p->grid_sync_line = 0;
    return 0;
}

static int add_label(parser *p, const char *name, size_t len)
{
    if (len >= sizeof p->labels[0].name)
        return fail(p, "label too long");
    if (p->nlabels == p->caplabels) {
        size_t cap = p->caplabels ? 2 * p->caplabels : 16;
        label *n = realloc(p->labels, cap * sizeof *n);
        if (!n)
            return fail(p, "out of memory");
        p->labels = n;
        p->caplabels = cap;
    }
    label *l = &p->labels[p->nlabels++];
    memcpy(l->name, name, len);
    l->name[len] = 0;
    l->pc = 0;
    l->pending = 1;
    return 0;
}

static int add_fixup(parser *p, uint64_t pc, const char *name, size_t len)
{
    if (len >= sizeof p->fixups[0].name)
        return fail(p, "branch target label too long");
    if (p->nfixups == p->capfixups) {
        size_t cap = p->capfixups ? 2 * p->capfixups : 16;
        fixup *n = realloc(p->fixups, cap * sizeof *n);
        if (!n)
            return fail(p, "out of memory");
        p->fixups = n;
        p->capfixups = cap;
    }
    fixup *x = &p->fixups[p->nfixups++];
    x->insn = (size_t)pc;
    memcpy(x->name, name, len);
    x->name[len] = 0;
    return 0;
}

static const char *skip_ws(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
        s++;
    return s;
}

/* A toolkit header: code the program did not write but inlined (the
 * atomics and intrinsics of sm_60_atomic_functions.hpp and the like,
 * cooperative groups, libcu++).  A site there names no line of the
 * program's, so a site takes the frame it was inlined into instead. */
static bool toolkit_file(const char *f, size_t n)
{
    static const char *const marks[] = {"/targets/x86_64-linux/include/",
                                        "/targets/sbsa-linux/include/",
                                        "/targets/aarch64-linux/include/", "/cuda/include/",
                                        "/include/cuda/std/", "/include/cccl/",
                                        "/include/cooperative_groups/", "/include/crt/"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        size_t k = strlen(marks[i]);
        for (size_t j = 0; j + k <= n; j++)
            if (!memcmp(f + j, marks[i], k))
                return true;
    }
    return false;
}

/* `"x.cu", line 42` at s: the name (quotes excluded) and the line; NULL
 * if s does not hold one, else the rest. */
static const char *file_and_line(const char *s, const char *end, const char **name, size_t *len,
                                 unsigned long *line)
{
    const char *q = memchr(s, '"', (size_t)(end - s));
    if (!q)
        return NULL;
    const char *q2 = memchr(q + 1, '"', (size_t)(end - q - 1));
    if (!q2)
        return NULL;
    const char *l = q2 + 1;
    while (l < end && (*l == ',' || *l == ' '))
        l++;
    if (end - l < 5 || strncmp(l, "line ", 5) != 0)
        return NULL;
    l += 5;
    unsigned long v = 0;
    int digits = 0;
    while (l < end && isdigit((unsigned char)*l) && v < 100000000ul) {
        v = v * 10 + (unsigned long)(*l++ - '0');
        digits++;
    }
    if (!digits)
        return NULL;
    *name = q + 1;
    *len = (size_t)(q2 - q - 1);
    *line = v;
    return l;
}

/* The line of the first frame in cooperative_groups/details/sync.h that
 * a line-info comment names (as its file or where it was inlined), or 0. */
static uint32_t grid_sync_frame(const char *s, const char *end)
{
    static const char mark[] = "/cooperative_groups/details/sync.h\", line ";
    size_t k = sizeof mark - 1;
    for (const char *q = s; q + k <= end; q++)
        if (!memcmp(q, mark, k)) {
            unsigned long v = 0;
            for (q += k; q < end && isdigit((unsigned char)*q) && v < 100000000ul; q++)
                v = v * 10 + (unsigned long)(*q - '0');
            return (uint32_t)v;
        }
    return 0;
}

/* `//## File "x.h", line 384 inlined at "k.cu", line 69`: nvdisasm -gi
 * writes one such comment per inlining level before an instruction,
 * innermost first, the outermost (the kernel's own line) without `inlined
 * at`; -g writes the innermost only.  The instruction's site is the
 * innermost frame outside the toolkit's headers, else the innermost.  An
 * `inlined at` part this parser does not know is ignored. */
static int parse_line_info(parser *p, const char *s, const char *end)
{
    if (!p->in_frames)
        p->grid_sync_line = 0;   /* a new instruction's frames */
    if (!p->grid_sync_line)
        p->grid_sync_line = grid_sync_frame(s, end);
    if (p->in_frames && !p->frame_in_toolkit)
        return 0;   /* an outer frame of a site already taken */
    const char *name;
    size_t len;
    unsigned long line;
    const char *rest = file_and_line(s, end, &name, &len, &line);
    if (!rest) {
        const char *q = memchr(s, '"', (size_t)(end - s));
        if (!q)
            return fail(p, "line-info comment without a file name");
        if (!memchr(q + 1, '"', (size_t)(end - q - 1)))
            return fail(p, "unterminated file name in line-info comment");
        return fail(p, "line-info comment without a sound 'line N'");
    }
    while (toolkit_file(name, len)) {
        const char *at = rest;
        while (at < end && *at == ' ')
            at++;
        const char *n2;
        size_t l2;
        unsigned long v2;
        const char *r2;
        if (end - at < 10 || strncmp(at, "inlined at", 10) != 0 ||
            !(r2 = file_and_line(at + 10, end, &n2, &l2, &v2)))
            break;
        name = n2, len = l2, line = v2, rest = r2;
    }
    int32_t fi = intern_file(p->m, name, len);
    if (fi < 0)
        return fail(p, "out of memory");
    p->file = fi;
    p->line = (uint32_t)line;
    p->in_frames = 1;
    p->frame_in_toolkit = toolkit_file(name, len);
    return 0;
}

static int is_pred_operand(const char *s, size_t n)
{
    /* P0..P6, !P0, UP0, !UP0 (not PT/UPT, which are always true) */
    if (n && *s == '!')
        s++, n--;
    if (n >= 2 && s[0] == 'U' && s[1] == 'P')
        s++, n--;
    return n >= 2 && s[0] == 'P' && isdigit((unsigned char)s[1]);
}

static int is_ureg_operand(const char *s, size_t n)
{
    return n >= 3 && s[0] == 'U' && s[1] == 'R' && isdigit((unsigned char)s[2]);
}

/* A hex immediate operand `0x1f` spanning [s, e), or -1. */
static int32_t hex_immediate(const char *s, const char *e)
{
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    if (e - s < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || e - s > 10)
        return -1;
    uint32_t v = 0;
    for (s += 2; s < e; s++) {
        int d = isdigit((unsigned char)*s) ? *s - '0'
                : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10
                : (*s >= 'A' && *s <= 'F') ? *s - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + (uint32_t)d;
    }
    return v > 0x7fffffffu ? -1 : (int32_t)v;
}

/* `BAR.ARV 0x1, 0x40`: the id and the thread count where they are
 * immediates (`BAR.SYNC.DEFER_BLOCKING 0x0` names the id only). */
static void bar_immediates(const char *ops, const char *end, wrs_insn *in)
{
    const char *c = memchr(ops, ',', (size_t)(end - ops));
    in->bar_id = hex_immediate(ops, c ? c : end);
    if (c && !memchr(c + 1, ',', (size_t)(end - c - 1)))
        in->bar_count = hex_immediate(c + 1, end);
}

static int handle_instruction(parser *p, uint64_t pc, const char *s, const char *end)
{
    if (!p->have_fn)
        return fail(p, "instruction outside a function");
    /* cut at ';' */
    const char *semi = memchr(s, ';', (size_t)(end - s));
    if (semi)
        end = semi;
    s = skip_ws(s, end);
    if (s < end && *s == '{')
        s = skip_ws(s + 1, end);
    wrs_insn in;
    memset(&in, 0, sizeof in);
    in.pc = pc;
    in.target = -1;
    in.file = p->file;
    in.line = p->line;
    in.grid_sync_line = p->grid_sync_line;
    in.bar_id = in.bar_count = -1;
    if (s < end && *s == '@') {
        const char *e = s;
        while (e < end && !isspace((unsigned char)*e))
            e++;
        size_t n = (size_t)(e - s);
        /* @PT / @UPT: always true */
        if (!(n == 3 && !memcmp(s, "@PT", 3)) && !(n == 4 && !memcmp(s, "@UPT", 4))) {
            in.predicated = 1;
            if (n > 1 && n - 1 < sizeof in.pred)
                memcpy(in.pred, s + 1, n - 1);   /* in is zeroed: terminated */
            else
                in.pred[0] = '?';
        }
        s = skip_ws(e, end);
    }
    const char *oe = s;
    while (oe < end && !isspace((unsigned char)*oe) && *oe != '}')
        oe++;
    size_t olen = (size_t)(oe - s);
    if (olen == 0)
        return fail(p, "missing opcode");
    if (olen >= sizeof in.opcode)
        olen = sizeof in.opcode - 1;
    memcpy(in.opcode, s, olen);
    in.opcode[olen] = 0;
    wrs_classify_opcode(in.opcode, &in.cls);
    const char *ops = skip_ws(oe, end);
    {
        /* the operand text, trimmed, cut to fit (in is zeroed: terminated) */
        const char *oend = end;
        while (oend > ops && isspace((unsigned char)oend[-1]))
            oend--;
        size_t n = (size_t)(oend - ops);
        memcpy(in.operands, ops, n < sizeof in.operands ? n : sizeof in.operands - 1);
    }
    if (base_is(in.opcode, "BAR"))
        bar_immediates(ops, end, &in);
    /* branch targets */
    if (in.cls.flow == WRS_F_BRANCH || !strncmp(in.opcode, "BSSY", 4)) {
        /* operands separated by ',' ; the target is the last one */
        const char *last = ops;
        int nops = 0;
        int cond = 0;
        const char *t = ops;
        while (t < end) {
            const char *c = memchr(t, ',', (size_t)(end - t));
            const char *oend = c ? c : end;
            const char *a = skip_ws(t, oend);
            const char *b = oend;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            if (b > a) {
                nops++;
                if (c && (is_pred_operand(a, (size_t)(b - a)) || is_ureg_operand(a, (size_t)(b - a))))
                    cond = 1;
                last = a;
            }
            if (!c)
                break;
            t = c + 1;
        }
        if (nops > 0) {
            const char *b = end;
            while (b > last && isspace((unsigned char)b[-1]))
                b--;
            const char *lp = memchr(last, '(', (size_t)(b - last));
            if (lp) {
                const char *rp = memchr(lp, ')', (size_t)(b - lp));
                if (!rp)
                    return fail(p, "unterminated branch target");
                if (in.cls.flow == WRS_F_BRANCH &&
                    add_fixup(p, pc, lp + 1, (size_t)(rp - lp - 1)) != 0)
                    return -1;
            } else if (b - last > 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
                char buf[32];
                size_t n = (size_t)(b - last);
                if (n >= sizeof buf)
                    return fail(p, "branch target too long");
                memcpy(buf, last, n);
                buf[n] = 0;
                in.target = (int64_t)strtoull(buf, NULL, 16);
            } else if (in.cls.flow == WRS_F_BRANCH) {
                /* a register target: indirect */
                in.cls.flow = WRS_F_INDIRECT;
            }
        }
        if (in.cls.flow == WRS_F_BRANCH)
            in.cond_operand = (uint8_t)cond;
        else
            in.target = -1;   /* BSSY: a convergence point, not a jump */
    }
    wrs_function *f = &p->m->fns[p->fn_index];
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        wrs_insn *n = realloc(f->insns, cap * sizeof *n);
        if (!n)
            return fail(p, "out of memory");
        f->insns = n;
        f->cap = cap;
    }
    f->insns[f->n++] = in;
    for (size_t l = 0; l < p->nlabels; l++)
        if (p->labels[l].pending) {
            p->labels[l].pc = pc;
            p->labels[l].pending = 0;
        }
    return 0;
}

static int parse_line(parser *p, const char *s, const char *end)
{
    s = skip_ws(s, end);
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    if (s == end)
        return 0;
    /* cuobjdump: "Function : NAME" */
    if (end - s > 10 && !strncmp(s, "Function", 8)) {
        const char *c = memchr(s, ':', (size_t)(end - s));
        if (c) {
            const char *n = skip_ws(c + 1, end);
            if (n < end)
                return start_function(p, n, (size_t)(end - n));
        }
    }
    if (s[0] == '/' && end - s >= 2 && s[1] == '/') {
        if (end - s > 8 && !strncmp(s, "//## File", 9))
            return parse_line_info(p, s, end);
        p->in_frames = 0;
        return 0;               /* other comments */
    }
    p->in_frames = 0;
    if (s[0] == '/' && end - s >= 2 && s[1] == '*') {
        const char *close = NULL;
        for (const char *q = s + 2; q + 1 < end; q++)
            if (q[0] == '*' && q[1] == '/') {
                close = q;
                break;
            }
        if (!close)
            return fail(p, "unterminated comment");
        const char *h = s + 2;
        /* hex encodings (a comment holding 0x000fe4...) carry no instruction */
        while (h < close && *h == ' ')
            h++;
        if (close - h >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
            return 0;
        uint64_t pc = 0;
        int digits = 0;
        for (; h < close; h++) {
            int v = isdigit((unsigned char)*h) ? *h - '0'
                    : (*h >= 'a' && *h <= 'f') ? *h - 'a' + 10
                    : (*h >= 'A' && *h <= 'F') ? *h - 'A' + 10 : -1;
            if (v < 0)
                return fail(p, "bad PC comment");
            if (digits++ > 15)
                return fail(p, "PC too long");
            pc = pc * 16 + (uint64_t)v;
        }
        if (!digits)
            return fail(p, "empty PC comment");
        return handle_instruction(p, pc, close + 2, end);
    }
    /* labels: "NAME:" */
    if (end[-1] == ':') {
        const char *n = s;
        size_t len = (size_t)(end - 1 - s);
        if (len > 6 && !strncmp(n, ".text.", 6))
            return start_function(p, n + 6, len - 6);
        if (len > 0 && n[0] == '.')
            return add_label(p, n, len);
        if (len > 0 && !memchr(n, ' ', len) && !memchr(n, '\t', len))
            return start_function(p, n, len);
        return 0;
    }
    /* directives (.section, .type, .headerflags ...) and anything else */
    return 0;
}

int wrs_parse(const char *text, size_t len, wrs_module *m, char *err, size_t errlen)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.err = err;
    p.errlen = errlen;
    p.file = -1;
    if (err && errlen)
        err[0] = 0;
    const char *s = text, *end = text + len;
    int rc = 0;
    while (s < end && rc == 0) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        p.lineno++;
        rc = parse_line(&p, s, le);
        s = nl ? nl + 1 : end;
    }
    if (rc == 0)
        rc = finish_function(&p);
    free(p.labels);
    free(p.fixups);
    return rc;
}

/* ---- CFG and fence inference ------------------------------------------------ */

static int build_cfg(wrs_function *f)
{
    if (f->cfg_built)
        return 0;
    f->succ = malloc((f->n ? f->n : 1) * 2 * sizeof *f->succ);
    if (!f->succ)
        return -1;
    for (size_t i = 0; i < f->n; i++) {
        const wrs_insn *in = &f->insns[i];
        uint32_t next = i + 1 < f->n ? (uint32_t)(i + 1) : SUCC_NONE;
        uint32_t *s = &f->succ[2 * i];
        s[0] = s[1] = SUCC_NONE;
        int cond = in->predicated || in->cond_operand;
        switch (in->cls.flow) {
        case WRS_F_BRANCH: {
            long t = in->target >= 0 ? insn_index(f, (uint64_t)in->target) : -1;
            s[0] = t >= 0 ? (uint32_t)t : SUCC_UNKNOWN;
            if (cond)
                s[1] = next;
            break;
        }
        case WRS_F_EXIT:
        case WRS_F_RET:
            if (in->predicated)
                s[0] = next;
            break;
        case WRS_F_INDIRECT:
            s[0] = SUCC_UNKNOWN;
            if (in->predicated)
                s[1] = next;
            f->has_indirect = 1;
            break;
        default:
            s[0] = next;
            break;
        }
    }
    f->cfg_built = 1;
    return 0;
}

static int counts_as_fence(const wrs_insn *in, unsigned scope, int sc_only)
{
    return in->cls.kind == WRS_K_FENCE && in->cls.scope >= scope &&
           (!sc_only || in->cls.order == WR_ORDER_SC);
}

/* Could the instruction make a record (or leave the function) before a
 * BAR.ARV is reached?  Conservative: any memory, barrier or warp-sync
 * instruction, mbarrier operations, calls and returns. */
static int may_record(const wrs_insn *in)
{
    switch (in->cls.kind) {
    case WRS_K_LOAD:
    case WRS_K_STORE:
    case WRS_K_ATOMIC:
    case WRS_K_RED:
    case WRS_K_BARRIER:
    case WRS_K_WARPSYNC:
        return 1;
    default:
        break;
    }
    return in->cls.flow == WRS_F_CALL || in->cls.flow == WRS_F_RET ||
           !strncmp(in->opcode, "SYNCS.", 6);
}

static int is_counted_arrive(const wrs_insn *in)
{
    return in->cls.kind == WRS_K_BARRIER && in->cls.barmode == WR_BARMODE_ARRIVE &&
           !in->predicated && in->bar_id >= 0 && in->bar_count > 0;
}

/* The one BAR.ARV every path from insns[s] (exclusive) reaches before
 * anything else wrs_arrives_after stops at: its index, or -1. */
static long first_arrive(const wrs_function *f, size_t s, unsigned char *seen, uint32_t *stack)
{
    memset(seen, 0, f->n);
    long hit = -1;
    size_t sp = 0;
    stack[sp++] = (uint32_t)s;
    seen[s] = 1;
    while (sp > 0) {
        uint32_t u = stack[--sp];
        for (int k = 0; k < 2; k++) {
            uint32_t v = f->succ[2 * u + k];
            if (v == SUCC_NONE) {
                if (k == 0)
                    return -1;    /* an exit, or the end of the code */
                continue;
            }
            if (v == SUCC_UNKNOWN || v == s)
                return -1;
            if (seen[v])
                continue;
            seen[v] = 1;
            const wrs_insn *in = &f->insns[v];
            if (is_counted_arrive(in)) {
                if (hit >= 0 && hit != (long)v)
                    return -1;
                hit = (long)v;
                continue;
            }
            if (may_record(in))
                return -1;
            stack[sp++] = v;
        }
    }
    return hit;
}

size_t wrs_arrives_uninferred(wrs_function *f)
{
    if (f->arrives_uninferred_1)
        return f->arrives_uninferred_1 - 1;
    size_t arrives = 0;
    for (size_t i = 0; i < f->n; i++)
        arrives += f->insns[i].cls.kind == WRS_K_BARRIER &&
                   f->insns[i].cls.barmode == WR_BARMODE_ARRIVE &&
                   f->insns[i].cls.scope == WR_SCOPE_BLOCK;
    size_t left = arrives;
    unsigned char *hit = calloc(f->n ? f->n : 1, 1);
    unsigned char *seen = malloc(f->n ? f->n : 1);
    uint32_t *stack = malloc((f->n + 1) * sizeof *stack);
    if (arrives && hit && seen && stack && build_cfg(f) == 0) {
        for (size_t i = 0; i < f->n; i++) {
            const wrs_insn *in = &f->insns[i];
            if (!may_record(in) && !is_counted_arrive(in))
                continue;
            long h = first_arrive(f, i, seen, stack);
            if (h >= 0 && !hit[h]) {
                hit[h] = 1;
                left--;
            }
        }
    }
    free(hit);
    free(seen);
    free(stack);
    f->arrives_uninferred_1 = left + 1;
    return left;
}

int wrs_grid_sync_role(wrs_function *f, uint64_t pc)
{
    if (!f->has_grid_sync)
        return WRS_GRID_NONE;     /* every event asks: most functions have none */
    const wrs_insn *in = wrs_find_insn(f, pc);
    if (!in || !in->grid_sync_line)
        return WRS_GRID_NONE;
    if (in->cls.kind != WRS_K_BARRIER)
        return WRS_GRID_PART;
    if (!f->grid_lines) {
        uint32_t lines[3];
        int n = 0;
        for (size_t i = 0; i < f->n && n < 3; i++) {
            const wrs_insn *b = &f->insns[i];
            if (b->cls.kind != WRS_K_BARRIER || !b->grid_sync_line)
                continue;
            int k = 0;
            while (k < n && lines[k] != b->grid_sync_line)
                k++;
            if (k == n)
                lines[n++] = b->grid_sync_line;
        }
        f->grid_lines = n == 2 ? 1 : -1;
        if (n == 2) {
            f->grid_arrive_line = lines[0] < lines[1] ? lines[0] : lines[1];
            f->grid_wait_line = lines[0] < lines[1] ? lines[1] : lines[0];
        }
    }
    if (f->grid_lines < 0 || in->cls.scope != WR_SCOPE_BLOCK ||
        in->cls.barmode != WR_BARMODE_SYNC)
        return WRS_GRID_UNKNOWN;
    return in->grid_sync_line == f->grid_arrive_line ? WRS_GRID_ARRIVE_BAR : WRS_GRID_WAIT_BAR;
}

/* The chain of arrivals after instruction `at`, found by the CFG walk. */
static int arrives_walk(wrs_function *f, long at, uint32_t *ids, uint32_t *counts, uint64_t *pcs,
                        int max)
{
    unsigned char *seen = malloc(f->n);
    uint32_t *stack = malloc(f->n * sizeof *stack + sizeof *stack);
    int found = 0;
    while (seen && stack && found < max) {
        long hit = first_arrive(f, (size_t)at, seen, stack);
        if (hit < 0)
            break;
        ids[found] = (uint32_t)f->insns[hit].bar_id;
        counts[found] = (uint32_t)f->insns[hit].bar_count;
        pcs[found] = f->insns[hit].pc;
        found++;
        at = hit;
    }
    free(seen);
    free(stack);
    return found;
}

int wrs_arrives_after(wrs_function *f, uint64_t pc, uint32_t *ids, uint32_t *counts,
                      uint64_t *pcs, int max)
{
    enum { CHAIN = 4 };
    long at = insn_index(f, pc);
    if (at < 0 || build_cfg(f) != 0)
        return 0;
    /* the answer is the code's: asked after every record of a warp, it is
     * walked once per instruction */
    if (!f->arrive_n) {
        f->arrive_n = malloc(f->n);
        f->arrive_ids = malloc(f->n * CHAIN * sizeof *f->arrive_ids);
        f->arrive_counts = malloc(f->n * CHAIN * sizeof *f->arrive_counts);
        f->arrive_pcs = malloc(f->n * CHAIN * sizeof *f->arrive_pcs);
        if (!f->arrive_n || !f->arrive_ids || !f->arrive_counts || !f->arrive_pcs) {
            free(f->arrive_n);
            free(f->arrive_ids);
            free(f->arrive_counts);
            free(f->arrive_pcs);
            f->arrive_n = NULL;
            f->arrive_ids = f->arrive_counts = NULL;
            f->arrive_pcs = NULL;
            return 0;
        }
        memset(f->arrive_n, -1, f->n);
    }
    size_t k = (size_t)at * CHAIN;
    if (f->arrive_n[at] < 0)
        f->arrive_n[at] = (int8_t)arrives_walk(f, at, f->arrive_ids + k, f->arrive_counts + k,
                                               f->arrive_pcs + k, CHAIN);
    int n = f->arrive_n[at] < max ? f->arrive_n[at] : max;
    for (int i = 0; i < n; i++) {
        ids[i] = f->arrive_ids[k + i];
        counts[i] = f->arrive_counts[k + i];
        if (pcs)
            pcs[i] = f->arrive_pcs[k + i];
    }
    return n;
}

wrs_answer wrs_fence_between(wrs_function *f, uint64_t pc1, uint64_t pc2, unsigned scope,
                             int sc_only)
{
    long ls = insn_index(f, pc1), lt = insn_index(f, pc2);
    if (ls < 0 || lt < 0 || build_cfg(f) != 0)
        return WRS_UNREACHABLE;
    size_t n = f->n, s = (size_t)ls, t = (size_t)lt;
    unsigned char *in_r = calloc(n, 1);       /* reachable from s */
    unsigned char *out = calloc(n, 1);
    unsigned char *nin = calloc(n, 1);
    uint32_t *stack = malloc(n * sizeof *stack + sizeof *stack);
    wrs_answer ans = WRS_UNREACHABLE;
    if (!in_r || !out || !nin || !stack)
        goto done;
    /* reachability: from s, not expanding past t */
    int unknown = 0, reached = 0;
    size_t sp = 0;
    for (int k = 0; k < 2; k++) {
        uint32_t v = f->succ[2 * s + k];
        if (v == SUCC_UNKNOWN)
            unknown = 1;
        else if (v != SUCC_NONE && !in_r[v]) {
            in_r[v] = 1;
            stack[sp++] = v;
        }
    }
    while (sp > 0) {
        uint32_t u = stack[--sp];
        if (u == t) {
            reached = 1;
            continue;
        }
        if (u == s)
            continue;             /* back at the start: a new record there */
        for (int k = 0; k < 2; k++) {
            uint32_t v = f->succ[2 * u + k];
            if (v == SUCC_UNKNOWN)
                unknown = 1;
            else if (v != SUCC_NONE && !in_r[v]) {
                in_r[v] = 1;
                stack[sp++] = v;
            }
        }
    }
    if (unknown) {
        ans = WRS_UNKNOWN;
        goto done;
    }
    if (!reached) {
        ans = WRS_UNREACHABLE;
        goto done;
    }
    in_r[s] = 1;
    /* greatest fixpoint of OUT[v] = AND(OUT[preds]) || fence(v) */
    for (size_t v = 0; v < n; v++)
        out[v] = in_r[v] && v != s;
    for (;;) {
        memset(nin, 1, n);
        for (size_t u = 0; u < n; u++) {
            if (!in_r[u] || (u == t && u != s))
                continue;         /* not reached, or the end (not expanded) */
            for (int k = 0; k < 2; k++) {
                uint32_t v = f->succ[2 * u + k];
                if (v < n && in_r[v] && !out[u])
                    nin[v] = 0;
            }
        }
        int changed = 0;
        for (size_t v = 0; v < n; v++) {
            if (!in_r[v] || v == s || v == t)
                continue;
            unsigned char o = nin[v] || counts_as_fence(&f->insns[v], scope, sc_only);
            if (o != out[v]) {
                out[v] = o;
                changed = 1;
            }
        }
        if (!changed)
            break;
    }
    ans = nin[t] ? WRS_YES : WRS_NO;
done:
    free(in_r);
    free(out);
    free(nin);
    free(stack);
    return ans;
}

/* ---- mbarrier init count (wrs_mbarrier_init_count) ------------------------------ */

#define MB_WINDOW 256     /* instructions looked back at most */
#define MB_DEPTH 8        /* nesting of evaluated sources */
#define MB_BUDGET 4096    /* instructions visited in all, per question */
#define MB_MAXOPS 16

typedef struct mb_op {
    const char *s;
    size_t n;
} mb_op;

typedef struct mb_reg {
    uint8_t uniform;      /* UR rather than R */
    uint8_t zero;         /* RZ / URZ */
    uint16_t num;
} mb_reg;

typedef struct mb_ctx {
    const wrs_function *f;
    size_t lo, init;      /* defs are looked for in [lo, init) */
    int budget;
    const uint32_t *geo;  /* ntid.x/y/z, nctaid.x/y/z of the launch, or NULL */
} mb_ctx;

#define MB_GEO_BYTES 0x18 /* c[0x0][0x0..0x17]: ntid.x/y/z, nctaid.x/y/z */

/* Operand text that may have been cut to fit wrs_insn.operands. */
static int mb_cut(const wrs_insn *in)
{
    return strlen(in->operands) >= sizeof in->operands - 1;
}

/* Splits operand text at top-level commas, trimmed; fills at most max,
 * returns how many there are (more than max: some left out). */
static int mb_split(const char *text, mb_op *ops, int max)
{
    if (!*text)
        return 0;
    int n = 0, depth = 0;
    const char *a = text;
    for (const char *s = text;; s++) {
        if (*s == '[' || *s == '(')
            depth++;
        else if ((*s == ']' || *s == ')') && depth > 0)
            depth--;
        else if ((*s == ',' && depth == 0) || !*s) {
            const char *b = s;
            while (a < b && isspace((unsigned char)*a))
                a++;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            if (n < max) {
                ops[n].s = a;
                ops[n].n = (size_t)(b - a);
            }
            n++;
            if (!*s)
                break;
            a = s + 1;
        }
    }
    return n;
}

static int mb_is(mb_op o, const char *text)
{
    return o.n == strlen(text) && !memcmp(o.s, text, o.n);
}

/* R<n>, RZ, UR<n>, URZ; with suffix_ok anything after a '.' is ignored
 * (a destination's .H0 and the like), else only ".reuse" is. */
static int mb_parse_reg(mb_op o, mb_reg *r, int suffix_ok)
{
    const char *s = o.s, *e = o.s + o.n;
    memset(r, 0, sizeof *r);
    if (s < e && *s == 'U') {
        r->uniform = 1;
        s++;
    }
    if (s >= e || *s != 'R')
        return 0;
    s++;
    if (s < e && *s == 'Z') {
        r->zero = 1;
        s++;
    } else {
        unsigned v = 0;
        int digits = 0;
        while (s < e && isdigit((unsigned char)*s) && digits < 4)
            v = v * 10 + (unsigned)(*s++ - '0'), digits++;
        if (!digits || v > 255 || (s < e && isdigit((unsigned char)*s)))
            return 0;
        r->num = (uint16_t)v;
    }
    if (s == e)
        return 1;
    if (*s != '.')
        return 0;
    return suffix_ok || ((size_t)(e - s) == 6 && !memcmp(s, ".reuse", 6));
}

/* A predicate operand (!)P<n>, PT, (!)UP<n>, UPT: its name without '!'. */
static int mb_parse_pred(const char *s, size_t n, int *neg, mb_op *name)
{
    *neg = 0;
    if (n && *s == '!')
        *neg = 1, s++, n--;
    name->s = s;
    name->n = n;
    if (n && *s == 'U')
        s++, n--;
    return n == 2 && s[0] == 'P' && (isdigit((unsigned char)s[1]) || s[1] == 'T');
}

/* An immediate without sign: 0x hex or decimal, at most 32 bits. */
static int mb_imm(const char *s, size_t n, uint32_t *v)
{
    uint64_t x = 0;
    size_t i = 0;
    int hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex)
        i = 2;
    if (i >= n)
        return 0;
    for (; i < n; i++) {
        int d = isdigit((unsigned char)s[i]) ? s[i] - '0'
                : hex && s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                : hex && s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        x = x * (hex ? 16u : 10u) + (uint64_t)d;
        if (x > 0xffffffffu)
            return 0;
    }
    *v = (uint32_t)x;
    return 1;
}

/* The general register an instruction writes first, and how many from it
 * (its width, conservatively); 0 when it writes none. */
static int mb_dest(const wrs_insn *in, mb_reg *d, unsigned *width)
{
    if (in->cls.flow != WRS_F_NEXT)
        return 0;   /* branches, exits, returns (calls end the window) */
    const char *op = in->opcode;
    size_t bl = strcspn(op, ".");
    if ((bl >= 4 && !memcmp(op + bl - 4, "SETP", 4)) ||
        (bl >= 5 && !memcmp(op + bl - 5, "SETP2", 5)))
        return 0;   /* ISETP & co. write predicates only */
    mb_op o[MB_MAXOPS];
    int n = mb_split(in->operands, o, MB_MAXOPS);
    if (n > MB_MAXOPS)
        n = MB_MAXOPS;
    int k = 0, neg;
    mb_op name;
    while (k < n && mb_parse_pred(o[k].s, o[k].n, &neg, &name))
        k++;   /* SHFL PT, R3, ...; LOP3.LUT P0, RZ, ... */
    if (k >= n || !mb_parse_reg(o[k], d, 1) || d->zero)
        return 0;
    unsigned w = 1;
    char base[48];
    memcpy(base, op, bl < sizeof base ? bl : sizeof base - 1);
    base[bl < sizeof base ? bl : sizeof base - 1] = 0;
    if (strstr(base, "MMA"))
        w = 256;   /* matrix fragments: everything from the first */
    else if (!strcmp(base, "LDSM") || !strncmp(base, "TEX", 3) || !strncmp(base, "TLD", 3) ||
             !strncmp(base, "TMML", 4) || !strncmp(base, "TXD", 3) ||
             !strncmp(base, "TXQ", 3) || !strncmp(base, "SULD", 4))
        w = 4;
    else if ((base[0] == 'D' && strcmp(base, "DEPBAR")) ||
             (!strcmp(base, "CS2R") && !strstr(op, ".32")))
        w = 2;   /* doubles; CS2R reads 64 bits */
    for (const char *m = strchr(op, '.'); m; m = strchr(m + 1, '.')) {
        size_t ml = strcspn(m + 1, ".");
        char mod[48];
        memcpy(mod, m + 1, ml < sizeof mod ? ml : sizeof mod - 1);
        mod[ml < sizeof mod ? ml : sizeof mod - 1] = 0;
        unsigned mw = strstr(mod, "256") ? 8
                      : strstr(mod, "128") ? 4
                      : (strstr(mod, "64") || !strcmp(mod, "WIDE")) ? 2 : 1;
        if (mw > w)
            w = mw;
    }
    *width = w;
    return 1;
}

/* Might the instruction write predicate `name`?  Any operand naming it
 * counts (conservative: sources too), PR / UPR count for all, except the
 * source of a VOTE / VOTEU (its last operand). */
static int mb_pred_writes(const wrs_insn *in, mb_op name)
{
    if (in->cls.flow != WRS_F_NEXT)
        return 0;
    if (mb_cut(in))
        return 1;
    mb_op o[MB_MAXOPS];
    int n = mb_split(in->operands, o, MB_MAXOPS);
    if (n > MB_MAXOPS)
        return 1;
    int vote = base_is(in->opcode, "VOTE") || base_is(in->opcode, "VOTEU");
    int uniform = name.s[0] == 'U';
    for (int k = 0; k < n; k++) {
        if (vote && k == n - 1)
            continue;
        if (mb_is(o[k], uniform ? "UPR" : "PR"))
            return 1;
        int neg;
        mb_op p;
        if (mb_parse_pred(o[k].s, o[k].n, &neg, &p) && p.n == name.n &&
            !memcmp(p.s, name.s, p.n))
            return 1;
    }
    return 0;
}

/* The last instruction in [lo, pos) that may write predicate `name`, -1
 * when none; -2 when out of budget. */
static long mb_pred_writer(mb_ctx *c, size_t pos, mb_op name)
{
    for (size_t j = pos; j-- > c->lo;) {
        if (--c->budget < 0)
            return -2;
        if (mb_pred_writes(&c->f->insns[j], name))
            return (long)j;
    }
    return -1;
}

/* Does predicate a read before instruction pa hold the value predicate b
 * holds before pb?  The same predicate with no write between, or two that
 * the same VOTE / VOTEU computed from equal sources. */
static int mb_pred_equiv(mb_ctx *c, mb_op a, size_t pa, mb_op b, size_t pb, int depth)
{
    long wa = mb_pred_writer(c, pa, a), wb = mb_pred_writer(c, pb, b);
    if (wa == -2 || wb == -2)
        return 0;
    if (a.n == b.n && !memcmp(a.s, b.s, a.n) && wa == wb)
        return 1;
    if (wa < 0 || wb < 0 || wa == wb || depth >= 3)
        return 0;
    const wrs_insn *A = &c->f->insns[wa], *B = &c->f->insns[wb];
    if ((!base_is(A->opcode, "VOTE") && !base_is(A->opcode, "VOTEU")) ||
        strcmp(A->opcode, B->opcode) != 0 || A->predicated || B->predicated)
        return 0;
    mb_op oa[3], ob[3], sa, sb;
    int na, nb;
    if (mb_split(A->operands, oa, 3) != 2 || mb_split(B->operands, ob, 3) != 2 ||
        !mb_parse_pred(oa[1].s, oa[1].n, &na, &sa) ||
        !mb_parse_pred(ob[1].s, ob[1].n, &nb, &sb) || na != nb)
        return 0;
    /* each writes exactly the predicate asked about */
    if (oa[0].n != a.n || memcmp(oa[0].s, a.s, a.n) || ob[0].n != b.n ||
        memcmp(ob[0].s, b.s, b.n))
        return 0;
    return mb_pred_equiv(c, sa, (size_t)wa, sb, (size_t)wb, depth + 1);
}

/* May the def at j count for the init?  Unguarded, or guarded as the
 * init is. */
static int mb_guard_ok(mb_ctx *c, size_t j)
{
    const wrs_insn *d = &c->f->insns[j], *in = &c->f->insns[c->init];
    if (!d->predicated)
        return 1;
    if (!in->predicated)
        return 0;
    int nd, ni;
    mb_op pd, pi;
    if (!mb_parse_pred(d->pred, strlen(d->pred), &nd, &pd) ||
        !mb_parse_pred(in->pred, strlen(in->pred), &ni, &pi) || nd != ni)
        return 0;
    return mb_pred_equiv(c, pd, j, pi, c->init, 0);
}

static int mb_eval_reg(mb_ctx *c, size_t pos, mb_reg r, int depth, uint32_t *v);

/* Word `word` (0 or 1) of constant bank operand o, `c[0x0][off]` with an
 * immediate offset aligned to `align`, when it lies in the launch geometry
 * (c[0x0][0x0..0x17]) and that geometry is known; 0 otherwise (kernel
 * parameters, other banks, register offsets: unknown). */
static int mb_geometry(const mb_ctx *c, mb_op o, unsigned word, uint32_t align, uint32_t *v)
{
    uint32_t bank, off;
    const char *s = o.s, *e = o.s + o.n, *b, *t;
    if (!c->geo || o.n < 8 || s[0] != 'c' || s[1] != '[' || e[-1] != ']')
        return 0;
    b = memchr(s + 2, ']', (size_t)(e - s - 2));
    if (!b || b + 1 >= e || b[1] != '[' || !mb_imm(s + 2, (size_t)(b - s - 2), &bank) ||
        bank != 0)
        return 0;
    t = b + 2;
    if (!mb_imm(t, (size_t)(e - 1 - t), &off) || off % align || off >= MB_GEO_BYTES ||
        off + 4u * word >= MB_GEO_BYTES)
        return 0;
    *v = c->geo[off / 4u + word];
    return 1;
}

/* A source operand read by the instruction at pos: -x, ~x, an immediate,
 * RZ / URZ, or a register evaluated before pos. */
static int mb_eval_src(mb_ctx *c, size_t pos, mb_op o, int depth, uint32_t *v)
{
    int neg = 0, inv = 0;
    if (o.n && o.s[0] == '-')
        neg = 1, o.s++, o.n--;
    else if (o.n && o.s[0] == '~')
        inv = 1, o.s++, o.n--;
    uint32_t x;
    mb_reg r;
    if (mb_imm(o.s, o.n, &x)) {
        /* an immediate */
    } else if (mb_parse_reg(o, &r, 0)) {
        if (!mb_eval_reg(c, pos, r, depth, &x))
            return 0;
    } else if (!mb_geometry(c, o, 0, 4, &x)) {
        return 0;   /* other constants, a special register, |x| ... */
    }
    *v = neg ? 0u - x : inv ? ~x : x;
    return 1;
}

/* The value the def at j writes to r (its only destination), or 0. */
static int mb_eval_def(mb_ctx *c, size_t j, mb_reg r, int depth, uint32_t *v)
{
    /* the .WIDE forms: their low word only (a * b + c's low word) */
    static const char *const imad[] = {"IMAD",         "IMAD.U32",       "IMAD.MOV",
                                       "IMAD.MOV.U32", "IMAD.SHL",       "IMAD.SHL.U32",
                                       "IMAD.IADD",    "IMAD.IADD.U32",  "UIMAD",
                                       "UIMAD.U32",    "IMAD.WIDE",      "IMAD.WIDE.U32",
                                       "UIMAD.WIDE",   "UIMAD.WIDE.U32"};
    const wrs_insn *in = &c->f->insns[j];
    if (mb_cut(in) || !mb_guard_ok(c, j))
        return 0;
    mb_op o[MB_MAXOPS];
    int n = mb_split(in->operands, o, MB_MAXOPS);
    mb_reg d;
    if (n < 2 || n > MB_MAXOPS || !mb_parse_reg(o[0], &d, 0) || d.zero ||
        d.uniform != r.uniform || d.num > r.num)
        return 0;
    const char *op = in->opcode;
    unsigned sub = (unsigned)(r.num - d.num);   /* r is the def's word sub */
    uint32_t a, b, x;
    if (!strcmp(op, "LDC") || !strcmp(op, "ULDC") || !strcmp(op, "LDC.64") ||
        !strcmp(op, "ULDC.64")) {
        /* the launch geometry; .64: two words into the pair */
        int wide = strstr(op, ".64") != NULL;
        if (n != 2 || sub >= (wide ? 2u : 1u))
            return 0;
        return mb_geometry(c, o[1], sub, wide ? 8 : 4, v);
    }
    if (sub)
        return 0;   /* a higher word of a wider def */
    if (!strcmp(op, "MOV") || !strcmp(op, "UMOV") || !strcmp(op, "MOV32I")) {
        if (n > 3 || (n == 3 && !mb_is(o[2], "0xf")))
            return 0;   /* MOV d, s, lanemask: all lanes only */
        return mb_eval_src(c, j, o[1], depth + 1, v);
    }
    for (size_t k = 0; k < sizeof imad / sizeof imad[0]; k++)
        if (!strcmp(op, imad[k])) {
            if (n != 4 || !mb_eval_src(c, j, o[1], depth + 1, &a) ||
                !mb_eval_src(c, j, o[2], depth + 1, &b) ||
                !mb_eval_src(c, j, o[3], depth + 1, &x))
                return 0;
            *v = a * b + x;
            return 1;
        }
    if (!strcmp(op, "IADD3") || !strcmp(op, "UIADD3")) {
        int k = 1, neg;
        mb_op p;
        while (k < n && mb_parse_pred(o[k].s, o[k].n, &neg, &p))
            k++;   /* carry-out predicates */
        if (n - k != 3 || !mb_eval_src(c, j, o[k], depth + 1, &a) ||
            !mb_eval_src(c, j, o[k + 1], depth + 1, &b) ||
            !mb_eval_src(c, j, o[k + 2], depth + 1, &x))
            return 0;
        *v = a + b + x;
        return 1;
    }
    if (!strcmp(op, "SHF.L.U32") || !strcmp(op, "USHF.L.U32")) {
        if (n != 4 || (!mb_is(o[3], "RZ") && !mb_is(o[3], "URZ")) ||
            !mb_eval_src(c, j, o[1], depth + 1, &a) ||
            !mb_eval_src(c, j, o[2], depth + 1, &b) || b >= 32)
            return 0;
        *v = a << b;
        return 1;
    }
    /* SHF.R d, lo, n, hi: {hi:lo} >> n; .HI its high word (hi >> n,
     * arithmetic for S32), else its low word, taken only with hi zero */
    if (!strcmp(op, "SHF.R.U32.HI") || !strcmp(op, "USHF.R.U32.HI") ||
        !strcmp(op, "SHF.R.S32.HI") || !strcmp(op, "USHF.R.S32.HI")) {
        if (n != 4 || !mb_eval_src(c, j, o[2], depth + 1, &b) || b >= 32 ||
            !mb_eval_src(c, j, o[3], depth + 1, &x))
            return 0;
        *v = x >> b;
        if (strstr(op, "S32") && (x >> 31) && b)
            *v |= ~(0xffffffffu >> b);   /* the sign, shifted in */
        return 1;
    }
    if (!strcmp(op, "SHF.R.U32") || !strcmp(op, "USHF.R.U32") || !strcmp(op, "SHF.R.S32") ||
        !strcmp(op, "USHF.R.S32")) {
        if (n != 4 || (!mb_is(o[3], "RZ") && !mb_is(o[3], "URZ")) ||
            !mb_eval_src(c, j, o[1], depth + 1, &a) ||
            !mb_eval_src(c, j, o[2], depth + 1, &b) || b >= 32)
            return 0;
        *v = a >> b;
        return 1;
    }
    /* LEA d, [carry-out,] a, b, s = (a << s) + b;
     * LEA.HI d, [carry-out,] a, b, c, s = b + high word of ({c:a} << s) */
    if (!strcmp(op, "LEA") || !strcmp(op, "ULEA") || !strcmp(op, "LEA.HI") ||
        !strcmp(op, "ULEA.HI")) {
        int k = 1, neg, hi = strstr(op, ".HI") != NULL;
        mb_op p;
        uint32_t s;
        while (k < n && mb_parse_pred(o[k].s, o[k].n, &neg, &p))
            k++;
        if (n - k != (hi ? 4 : 3) || !mb_imm(o[n - 1].s, o[n - 1].n, &s) || s >= 32 ||
            !mb_eval_src(c, j, o[k], depth + 1, &a) ||
            !mb_eval_src(c, j, o[k + 1], depth + 1, &b) ||
            (hi && !mb_eval_src(c, j, o[k + 2], depth + 1, &x)))
            return 0;
        *v = hi ? b + (uint32_t)((((uint64_t)x << 32 | a) << s) >> 32) : (a << s) + b;
        return 1;
    }
    if (!strcmp(op, "LOP3.LUT") || !strcmp(op, "ULOP3.LUT")) {
        uint32_t lut;
        if (n != 6 || (!mb_is(o[5], "!PT") && !mb_is(o[5], "!UPT")) ||
            !mb_imm(o[4].s, o[4].n, &lut) || lut > 0xff)
            return 0;
        /* an operand the table ignores need not be known */
        uint32_t in3[3] = {0, 0, 0};
        const int uses[3] = {((lut >> 4) & 0xf) != (lut & 0xf),
                             ((lut >> 2) & 0x33) != (lut & 0x33),
                             ((lut >> 1) & 0x55) != (lut & 0x55)};
        for (int k = 0; k < 3; k++)
            if (uses[k] && !mb_eval_src(c, j, o[1 + k], depth + 1, &in3[k]))
                return 0;
        uint32_t res = 0;
        for (unsigned k = 0; k < 8; k++)
            if (lut >> k & 1)
                res |= ((k & 4) ? in3[0] : ~in3[0]) & ((k & 2) ? in3[1] : ~in3[1]) &
                       ((k & 1) ? in3[2] : ~in3[2]);
        *v = res;
        return 1;
    }
    return 0;   /* S2R, loads, anything else */
}

/* The value of r before the instruction at pos, from its last def in
 * [lo, pos). */
static int mb_eval_reg(mb_ctx *c, size_t pos, mb_reg r, int depth, uint32_t *v)
{
    if (r.zero) {
        *v = 0;
        return 1;
    }
    if (depth > MB_DEPTH)
        return 0;
    for (size_t j = pos; j-- > c->lo;) {
        if (--c->budget < 0)
            return 0;
        mb_reg d;
        unsigned w;
        if (!mb_dest(&c->f->insns[j], &d, &w) || d.uniform != r.uniform || d.num > r.num ||
            (unsigned)(r.num - d.num) >= w)
            continue;
        return mb_eval_def(c, j, r, depth, v);
    }
    return 0;   /* no def in the straight line before */
}

int wrs_mbarrier_init_count(const wrs_function *f, uint64_t pc, uint32_t *count)
{
    return wrs_mbarrier_init_count_in(f, pc, NULL, count);
}

int wrs_mbarrier_init_count_in(const wrs_function *f, uint64_t pc, const uint32_t geometry[6],
                               uint32_t *count)
{
    long at = f ? insn_index(f, pc) : -1;
    if (at < 0)
        return 0;
    const wrs_insn *in = &f->insns[at];
    if (!base_is(in->opcode, "SYNCS") || strncmp(in->opcode, "SYNCS.EXCH.64", 13) != 0 ||
        (in->opcode[13] && in->opcode[13] != '.') || mb_cut(in) || in->pred[0] == '?')
        return 0;
    mb_op o[4];
    mb_reg r;
    if (mb_split(in->operands, o, 4) != 3 || !o[1].n || o[1].s[0] != '[' ||
        !mb_parse_reg(o[2], &r, 0))
        return 0;
    /* the straight line before it: back to a branch target (as
     * is_branch_target, in one pass over the window), a call, an
     * unconditional jump / exit / return, or MB_WINDOW instructions */
    size_t init = (size_t)at, lo_c = init > MB_WINDOW ? init - MB_WINDOW : 0;
    unsigned char target[MB_WINDOW + 1];
    memset(target, 0, sizeof target);
    uint64_t pc_lo = f->insns[lo_c].pc;
    for (size_t i = 0; i < f->n; i++) {
        const wrs_insn *b = &f->insns[i];
        if (b->cls.flow == WRS_F_INDIRECT)
            return 0;   /* could land anywhere */
        if (b->target >= 0 && (uint64_t)b->target >= pc_lo && (uint64_t)b->target <= pc) {
            long k = insn_index(f, (uint64_t)b->target);
            if (k >= 0)
                target[(size_t)k - lo_c] = 1;
        }
    }
    size_t lo = init;
    while (lo > lo_c && !target[lo - lo_c]) {
        const wrs_insn *q = &f->insns[lo - 1];
        if (q->cls.flow == WRS_F_CALL ||
            (q->cls.flow != WRS_F_NEXT && !q->predicated && !q->cond_operand))
            break;
        lo--;
    }
    mb_ctx c = {f, lo, init, MB_BUDGET, geometry};
    uint32_t low;
    if (!mb_eval_reg(&c, init, r, 0, &low) || (low & 1u))
        return 0;
    uint32_t n = 0x100000u - ((low >> 1) & 0xfffffu);
    if (n < 1 || n > 0xfffffu)
        return 0;
    *count = n;
    return 1;
}

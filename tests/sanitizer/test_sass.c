/* SASS parser, opcode classification, line info and fence inference
 * (recorder/sanitizer/sass_classify.c) on committed disassembly text. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sass_classify.h"
#include "warprace/event.h"

#ifndef WRS_TEST_DATA
#error "WRS_TEST_DATA must name tests/sanitizer/data"
#endif

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", WRS_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static wrs_module M;

static void load(const char *name)
{
    size_t len;
    char *text = slurp(name, &len);
    char err[256];
    memset(&M, 0, sizeof M);
    int rc = wrs_parse(text, len, &M, err, sizeof err);
    free(text);
    cr_assert_eq(rc, 0, "parse failed: %s", err);
}

static void unload(void) { wrs_module_free(&M); }

static wrs_function *fn(const char *name)
{
    const wrs_function *f = wrs_find_function(&M, name);
    cr_assert_not_null(f, "function %s not parsed", name);
    return (wrs_function *)f;
}

static const wrs_insn *at(const char *name, uint64_t pc)
{
    const wrs_insn *in = wrs_find_insn(fn(name), pc);
    cr_assert_not_null(in, "%s: no instruction at 0x%llx", name, (unsigned long long)pc);
    return in;
}

/* ---- opcode classification (no file) --------------------------------------- */

typedef struct expect {
    const char *opcode;
    unsigned kind, op, aop, scope, order, space, size;
} expect;

Test(sanitizer_classify, memory_opcodes)
{
    const expect cases[] = {
        {"ATOM.E.CAS.STRONG.GPU", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_CAS, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOMS.CAS", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_CAS, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WR_SPACE_SHARED, 4},
        {"ATOMS.CAST.SPIN", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_CAS, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WR_SPACE_SHARED, 4},
        {"ATOMS.ADD", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_ADD, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WR_SPACE_SHARED, 4},
        {"ATOMS.POPC.INC.32", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_ADD, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WR_SPACE_SHARED, 4},
        {"RED.E.ADD.STRONG.GPU", WRS_K_RED, WR_OP_ATOMIC_RMW, WR_AOP_ADD, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"RED.E.ADD.STRONG.SYS", WRS_K_RED, WR_OP_ATOMIC_RMW, WR_AOP_ADD, WR_SCOPE_SYSTEM,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOMG.E.MIN.S32.STRONG.SYS", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_MIN,
         WR_SCOPE_SYSTEM, WR_ORDER_RELAXED, WR_SPACE_GLOBAL, 4},
        {"ATOM.E.EXCH.64.STRONG.CTA", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_EXCH,
         WR_SCOPE_BLOCK, WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 8},
        {"ATOM.E.ADD.F32.FTZ.RN.STRONG.GPU", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_ADD,
         WR_SCOPE_DEVICE, WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.INC.STRONG.GPU", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_INC, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.DEC.STRONG.GPU", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_DEC, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.XOR.STRONG.SYS", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_XOR, WR_SCOPE_SYSTEM,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.OR", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_OR, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.AND.STRONG.SM", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_AND, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        {"ATOM.E.MAX.S32.STRONG.GPU", WRS_K_ATOMIC, WR_OP_ATOMIC_RMW, WR_AOP_MAX,
         WR_SCOPE_DEVICE, WR_ORDER_RELAXED, WRS_SPACE_GENERIC, 4},
        /* volatile: plain access, relaxed, no scope (as the device API records it) */
        {"LDG.E.STRONG.SYS", WRS_K_LOAD, WR_OP_LOAD, WR_AOP_NONE, WR_SCOPE_NONE,
         WR_ORDER_RELAXED, WR_SPACE_GLOBAL, 4},
        {"STG.E.STRONG.SYS", WRS_K_STORE, WR_OP_STORE, WR_AOP_NONE, WR_SCOPE_NONE,
         WR_ORDER_RELAXED, WR_SPACE_GLOBAL, 4},
        /* ld/st.relaxed.gpu: atomic load/store at device scope */
        {"LDG.E.STRONG.GPU", WRS_K_LOAD, WR_OP_ATOMIC_LOAD, WR_AOP_NONE, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WR_SPACE_GLOBAL, 4},
        {"STG.E.STRONG.GPU", WRS_K_STORE, WR_OP_ATOMIC_STORE, WR_AOP_NONE, WR_SCOPE_DEVICE,
         WR_ORDER_RELAXED, WR_SPACE_GLOBAL, 4},
        {"STS.STRONG.CTA", WRS_K_STORE, WR_OP_ATOMIC_STORE, WR_AOP_NONE, WR_SCOPE_BLOCK,
         WR_ORDER_RELAXED, WR_SPACE_SHARED, 4},
        /* weak */
        {"LDG.E", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_GLOBAL, 4},
        {"LDG.E.WEAK", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_GLOBAL, 4},
        {"LDG.E.128.CONSTANT", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK,
         WR_SPACE_GLOBAL, 16},
        {"STG.E.U8", WRS_K_STORE, WR_OP_STORE, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_GLOBAL, 1},
        {"LDS.U16", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_SHARED, 2},
        {"STS.64", WRS_K_STORE, WR_OP_STORE, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_SHARED, 8},
        {"LDSM.16.M88.4", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK,
         WR_SPACE_SHARED, 4},
        {"LDL.64", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_LOCAL, 8},
        {"STL", WRS_K_STORE, WR_OP_STORE, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WR_SPACE_LOCAL, 4},
        {"LD.E.64", WRS_K_LOAD, WR_OP_LOAD, 0, WR_SCOPE_NONE, WR_ORDER_WEAK, WRS_SPACE_GENERIC, 8},
        {"ST.E.U8", WRS_K_STORE, WR_OP_STORE, 0, WR_SCOPE_NONE, WR_ORDER_WEAK,
         WRS_SPACE_GENERIC, 1},
        {"ST.E.128", WRS_K_STORE, WR_OP_STORE, 0, WR_SCOPE_NONE, WR_ORDER_WEAK,
         WRS_SPACE_GENERIC, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const expect *e = &cases[i];
        wrs_class c;
        wrs_classify_opcode(e->opcode, &c);
        cr_expect_eq(c.kind, e->kind, "%s: kind %s", e->opcode, wrs_kind_name(c.kind));
        cr_expect_eq(c.op, e->op, "%s: op %u", e->opcode, c.op);
        cr_expect_eq(c.atomic_op, e->aop, "%s: aop %u", e->opcode, c.atomic_op);
        cr_expect_eq(c.scope, e->scope, "%s: scope %u", e->opcode, c.scope);
        cr_expect_eq(c.order, e->order, "%s: order %u", e->opcode, c.order);
        cr_expect_eq(c.space, e->space, "%s: space %u", e->opcode, c.space);
        cr_expect_eq(c.size, e->size, "%s: size %u", e->opcode, c.size);
        cr_expect_eq(c.flow, WRS_F_NEXT, "%s: flow", e->opcode);
    }
}

Test(sanitizer_classify, fences_barriers_flow)
{
    const struct { const char *opcode; unsigned kind, scope, order, flow; } cases[] = {
        {"MEMBAR.SC.CTA", WRS_K_FENCE, WR_SCOPE_BLOCK, WR_ORDER_SC, WRS_F_NEXT},
        {"MEMBAR.SC.GPU", WRS_K_FENCE, WR_SCOPE_DEVICE, WR_ORDER_SC, WRS_F_NEXT},
        {"MEMBAR.SC.SYS", WRS_K_FENCE, WR_SCOPE_SYSTEM, WR_ORDER_SC, WRS_F_NEXT},
        {"MEMBAR.ALL.CTA", WRS_K_FENCE, WR_SCOPE_BLOCK, WR_ORDER_ACQ_REL, WRS_F_NEXT},
        {"MEMBAR.ALL.GPU", WRS_K_FENCE, WR_SCOPE_DEVICE, WR_ORDER_ACQ_REL, WRS_F_NEXT},
        {"MEMBAR.ALL.SYS", WRS_K_FENCE, WR_SCOPE_SYSTEM, WR_ORDER_ACQ_REL, WRS_F_NEXT},
        {"MEMBAR.CTA", WRS_K_FENCE, WR_SCOPE_BLOCK, WR_ORDER_SC, WRS_F_NEXT},
        {"FENCE.VIEW.ASYNC.S", WRS_K_PROXY_FENCE, 0, 0, WRS_F_NEXT},
        {"BAR.SYNC.DEFER_BLOCKING", WRS_K_BARRIER, 0, 0, WRS_F_NEXT},
        {"BAR.RED.POPC.DEFER_BLOCKING", WRS_K_BARRIER, 0, 0, WRS_F_NEXT},
        {"BAR.ARV", WRS_K_BARRIER, 0, 0, WRS_F_NEXT},
        {"WARPSYNC", WRS_K_WARPSYNC, 0, 0, WRS_F_NEXT},
        {"WARPSYNC.ALL", WRS_K_WARPSYNC, 0, 0, WRS_F_NEXT},
        {"BRA", WRS_K_OTHER, 0, 0, WRS_F_BRANCH},
        {"BRA.U", WRS_K_OTHER, 0, 0, WRS_F_BRANCH},
        {"BRA.DIV", WRS_K_OTHER, 0, 0, WRS_F_BRANCH},
        {"BRX", WRS_K_OTHER, 0, 0, WRS_F_INDIRECT},
        {"JMX", WRS_K_OTHER, 0, 0, WRS_F_INDIRECT},
        {"EXIT", WRS_K_OTHER, 0, 0, WRS_F_EXIT},
        {"BPT.TRAP", WRS_K_OTHER, 0, 0, WRS_F_EXIT},
        {"RET.REL.NODEC", WRS_K_OTHER, 0, 0, WRS_F_RET},
        {"CALL.REL.NOINC", WRS_K_OTHER, 0, 0, WRS_F_CALL},
        {"BSSY", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
        {"BSYNC", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
        {"LDC.64", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
        {"ULDC.64", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
        {"CCTL.IVALL", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
        {"IMAD.MOV.U32", WRS_K_OTHER, 0, 0, WRS_F_NEXT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wrs_class c;
        wrs_classify_opcode(cases[i].opcode, &c);
        cr_expect_eq(c.kind, cases[i].kind, "%s: kind %s", cases[i].opcode, wrs_kind_name(c.kind));
        cr_expect_eq(c.flow, cases[i].flow, "%s: flow %u", cases[i].opcode, c.flow);
        if (c.kind == WRS_K_FENCE) {
            cr_expect_eq(c.scope, cases[i].scope, "%s: scope", cases[i].opcode);
            cr_expect_eq(c.order, cases[i].order, "%s: order", cases[i].opcode);
        }
        if (c.kind != WRS_K_LOAD && c.kind != WRS_K_STORE && c.kind != WRS_K_ATOMIC &&
            c.kind != WRS_K_RED)
            cr_expect_eq(c.space, WRS_SPACE_NONE, "%s: space", cases[i].opcode);
    }
}

/* Barrier modes (format 1.3) from the opcode alone.  An UCGABAR_ARV alone
 * releases nothing (barrier.cluster.arrive.relaxed is that instruction
 * with no fence before it); the context rule is tested on the sample. */
Test(sanitizer_classify, barrier_modes)
{
    const struct { const char *opcode; unsigned kind, scope, mode; } cases[] = {
        {"BAR.ARV", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_ARRIVE},
        {"BAR.SYNC", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.SYNC.DEFER_BLOCKING", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.SYNCALL", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.SYNCALL.DEFER_BLOCKING", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.RED.POPC.DEFER_BLOCKING", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.RED.AND.DEFER_BLOCKING", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        {"BAR.RED.OR", WRS_K_BARRIER, WR_SCOPE_BLOCK, WR_BARMODE_SYNC},
        /* not guessed */
        {"BAR.SCAN", WRS_K_BARRIER, WR_SCOPE_BLOCK, WRS_BARMODE_UNKNOWN},
        {"BAR", WRS_K_BARRIER, WR_SCOPE_BLOCK, WRS_BARMODE_UNKNOWN},
        {"UCGABAR_ARV", WRS_K_BARRIER, WR_SCOPE_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {"UCGABAR_ARV.SYNCALL", WRS_K_BARRIER, WR_SCOPE_CLUSTER, WR_BARMODE_ARRIVE_RELAXED},
        {"UCGABAR_WAIT", WRS_K_BARRIER, WR_SCOPE_CLUSTER, WR_BARMODE_WAIT},
        /* no barriers */
        {"UCGABAR_GET", WRS_K_OTHER, WR_SCOPE_NONE, 0},
        {"CGAERRBAR", WRS_K_OTHER, WR_SCOPE_NONE, 0},
        {"ERRBAR", WRS_K_OTHER, WR_SCOPE_NONE, 0},
        {"MEMBAR.ALL.GPU", WRS_K_FENCE, WR_SCOPE_DEVICE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wrs_class c;
        wrs_classify_opcode(cases[i].opcode, &c);
        cr_expect_eq(c.kind, cases[i].kind, "%s: kind %s", cases[i].opcode, wrs_kind_name(c.kind));
        cr_expect_eq(c.scope, cases[i].scope, "%s: scope %u", cases[i].opcode, c.scope);
        cr_expect_eq(c.barmode, cases[i].mode, "%s: mode %u", cases[i].opcode, c.barmode);
        cr_expect_eq(c.flow, WRS_F_NEXT, "%s: flow", cases[i].opcode);
        cr_expect_eq(c.space, WRS_SPACE_NONE, "%s: space", cases[i].opcode);
    }
}

/* ---- the nvdisasm sample ----------------------------------------------------- */

Test(sanitizer_parse, functions_and_pcs, .init = NULL, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    cr_assert_eq(M.nfns, 5);
    cr_expect_str_eq(M.fns[0].name, "_Z11mp_producerPiS_");
    cr_expect_str_eq(M.fns[1].name, "_Z11mp_consumerPiS_");
    cr_expect_eq(fn("_Z11mp_producerPiS_")->n, 14);
    cr_expect_eq(fn("_Z9opcodes_allPi")->n, 30);
    cr_expect_null(wrs_find_function(&M, "_Z6helperv"));
    cr_expect_null(wrs_find_insn(fn("_Z11mp_producerPiS_"), 0x08));
    cr_expect_str_eq(at("_Z11mp_producerPiS_", 0x70)->opcode, "STG.E");
    cr_expect_str_eq(at("_Z11mp_producerPiS_", 0xb0)->opcode, "ATOM.E.EXCH.STRONG.GPU");
    /* predicates */
    cr_expect(at("_Z11mp_producerPiS_", 0x40)->predicated);
    cr_expect(!at("_Z11mp_producerPiS_", 0x30)->predicated);
    cr_expect(at("_Z7diamondPii", 0xd0)->predicated);
}

Test(sanitizer_parse, classification_in_context, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    const char *f = "_Z9opcodes_allPi";
    cr_expect_eq(at(f, 0x0)->cls.atomic_op, WR_AOP_CAS);
    cr_expect_eq(at(f, 0x0)->cls.scope, WR_SCOPE_DEVICE);
    cr_expect_eq(at(f, 0x10)->cls.space, WR_SPACE_SHARED);
    cr_expect_eq(at(f, 0x20)->cls.kind, WRS_K_RED);
    cr_expect_eq(at(f, 0x30)->cls.op, WR_OP_LOAD);
    cr_expect_eq(at(f, 0x30)->cls.order, WR_ORDER_RELAXED);
    /* LDG.E.STRONG.GPU followed by CCTL.IVALL: an acquire load */
    cr_expect_eq(at(f, 0x40)->cls.op, WR_OP_ATOMIC_LOAD);
    cr_expect_eq(at(f, 0x40)->cls.order, WR_ORDER_ACQUIRE);
    cr_expect_eq(at(f, 0x60)->cls.op, WR_OP_ATOMIC_STORE);
    cr_expect_eq(at(f, 0x60)->cls.order, WR_ORDER_RELAXED);
    cr_expect_eq(at(f, 0x70)->cls.space, WRS_SPACE_GENERIC);
    cr_expect_eq(at(f, 0x70)->cls.size, 8);
    cr_expect_eq(at(f, 0x80)->cls.size, 1);
    cr_expect_eq(at(f, 0xc0)->cls.scope, WR_SCOPE_BLOCK);
    cr_expect_eq(at(f, 0x160)->cls.kind, WRS_K_FENCE);
    cr_expect_eq(at(f, 0x170)->cls.kind, WRS_K_PROXY_FENCE);
    cr_expect_eq(at(f, 0x180)->cls.kind, WRS_K_BARRIER);
    cr_expect_eq(at(f, 0x190)->cls.kind, WRS_K_BARRIER);
    cr_expect_eq(at(f, 0x1c0)->cls.atomic_op, WR_AOP_EXCH);
    cr_expect_eq(at(f, 0x1d0)->cls.flow, WRS_F_EXIT);
    /* the mp consumer's spin load is volatile */
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0x30)->cls.op, WR_OP_LOAD);
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0x30)->cls.order, WR_ORDER_RELAXED);
}

Test(sanitizer_parse, line_info, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    const wrs_insn *in = at("_Z11mp_producerPiS_", 0x70);
    cr_expect_str_eq(wrs_insn_file(&M, in), "/work/tests/gpu/litmus_mp.cu");
    cr_expect_eq(in->line, 13);
    cr_expect_eq(at("_Z11mp_producerPiS_", 0x0)->line, 10);
    cr_expect_eq(at("_Z11mp_producerPiS_", 0x20)->line, 10);
    cr_expect_eq(at("_Z11mp_producerPiS_", 0x40)->line, 12);
    /* inlined: the innermost (first) location */
    cr_expect_eq(at("_Z11mp_producerPiS_", 0xb0)->line, 15);
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0x30)->line, 21);
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0x70)->line, 23);
    /* line info does not leak into the next function */
    const wrs_insn *d = at("_Z7diamondPii", 0x10);
    cr_expect_null(wrs_insn_file(&M, d));
    cr_expect_eq(d->line, 0);
    cr_expect_eq(M.nfiles, 1);
}

/* nvdisasm -gi writes an instruction's frames as consecutive comments,
 * innermost first (as the H200's toolkit 13.0 did): an atomic of the
 * toolkit's headers inlined into a device function inlined into the
 * kernel takes the device function's line, the innermost frame outside
 * the toolkit; a frame of the program's own header keeps its line; the
 * frames of one instruction do not leak into the next; with -g (one
 * comment), or an inline part this parser does not know, the toolkit's
 * line stays. */
Test(sanitizer_parse, inlined_toolkit_frames_take_the_programs_line, .fini = unload)
{
#define TK "/usr/local/cuda/bin/../targets/x86_64-linux/include/"
    static const char text[] =
        "_Z4kernPi:\n"
        "\t//## File \"" TK "sm_60_atomic_functions.hpp\", line 552 inlined at \"/src/k.cu\", line 85\n"
        "\t//## File \"/src/k.cu\", line 85 inlined at \"/src/k.cu\", line 124\n"
        "\t//## File \"/src/k.cu\", line 124\n"
        "        /*0000*/                   ATOMG.E.CAS.STRONG.GPU PT, R0, [R2.64], R4, R5 ;\n"
        "\t//## File \"" TK "cooperative_groups/details/driver_abi.h\", line 83 inlined at \""
        TK "cooperative_groups/details/driver_abi.h\", line 66\n"
        "\t//## File \"" TK "cooperative_groups/details/driver_abi.h\", line 66 inlined at \""
        TK "cooperative_groups.h\", line 261\n"
        "\t//## File \"" TK "cooperative_groups.h\", line 261 inlined at \"/src/k.cu\", line 228\n"
        "\t//## File \"/src/k.cu\", line 228\n"
        "        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
        "\t//## File \"/src/helpers.cuh\", line 10 inlined at \"/src/k.cu\", line 20\n"
        "\t//## File \"/src/k.cu\", line 20\n"
        "        /*0020*/                   STG.E [R2.64], R5 ;\n"
        "\t//## File \"/src/k.cu\", line 21\n"
        "        /*0030*/                   STG.E [R2.64], R5 ;\n"
        "\t//## File \"" TK "device_atomic_functions.hpp\", line 202\n"
        "        /*0040*/                   STG.E [R2.64], R5 ;\n"
        "\t//## File \"" TK "device_atomic_functions.hpp\", line 127 inlined by \"/src/k.cu\", line 5\n"
        "        /*0050*/                   STG.E [R2.64], R5 ;\n"
        "        /*0060*/                   EXIT ;\n";
#undef TK
    char err[256];
    memset(&M, 0, sizeof M);
    cr_assert_eq(wrs_parse(text, strlen(text), &M, err, sizeof err), 0, "%s", err);
    static const struct {
        uint64_t pc;
        const char *file;
        uint32_t line;
    } want[] = {{0x0, "/src/k.cu", 85},           {0x10, "/src/k.cu", 228},
                {0x20, "/src/helpers.cuh", 10},   {0x30, "/src/k.cu", 21},
                {0x40, "device_atomic_functions.hpp", 202},
                {0x50, "device_atomic_functions.hpp", 127}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const wrs_insn *in = at("_Z4kernPi", want[i].pc);
        cr_expect(strstr(wrs_insn_file(&M, in), want[i].file), "pc 0x%llx: %s",
                  (unsigned long long)want[i].pc, wrs_insn_file(&M, in));
        cr_expect_eq(in->line, want[i].line, "pc 0x%llx", (unsigned long long)want[i].pc);
    }
}

/* File names as sites show them: "." and "dir/.." taken out (nvcc run
 * from a build directory names "/src/build/../k.cu"). */
Test(sanitizer_parse, file_names_are_cleaned, .fini = unload)
{
    static const struct {
        const char *raw, *clean;
    } cases[] = {
        {"/work/main/build/../tests/gpu/k.cu", "/work/main/tests/gpu/k.cu"},
        {"/usr/local/cuda/bin/../targets/x86_64-linux/include/a.hpp",
         "/usr/local/cuda/targets/x86_64-linux/include/a.hpp"},
        {"./a/./b/../c.cu", "a/c.cu"},
        {"../x/../../y.cu", "../../y.cu"},
        {"/../a.cu", "/a.cu"},
        {"a//b.cu", "a/b.cu"},
        {"a/../../b.cu", "../b.cu"},
        {"a/..", "."},
        {"k.cu", "k.cu"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "_Z1kv:\n\t//## File \"%s\", line 7\n        /*0000*/ EXIT ;\n", cases[i].raw);
        char err[256];
        memset(&M, 0, sizeof M);
        cr_assert_eq(wrs_parse(text, strlen(text), &M, err, sizeof err), 0, "%s", err);
        cr_expect_str_eq(wrs_insn_file(&M, at("_Z1kv", 0)), cases[i].clean, "%s", cases[i].raw);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

Test(sanitizer_parse, branch_targets, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0x50)->target, 0x30);
    cr_expect_eq(at("_Z11mp_consumerPiS_", 0xa0)->target, 0xa0);
    cr_expect_eq(at("_Z7diamondPii", 0x40)->target, 0x70);
    cr_expect_eq(at("_Z7diamondPii", 0x60)->target, 0x80);
    cr_expect_eq(at("_Z7diamondPii", 0x30)->target, -1);   /* BSSY is no jump */
    cr_expect_eq(at("_Z7diamondPii", 0xd0)->target, 0xf0);
    cr_expect_eq(at("_Z7diamondPii", 0x100)->target, 0x120);
    cr_expect(at("_Z7diamondPii", 0x100)->cond_operand);
    cr_expect(!at("_Z7diamondPii", 0x60)->cond_operand);
    cr_expect_eq(at("_Z8indirectPi", 0x10)->cls.flow, WRS_F_INDIRECT);
}

/* The barriers sample: ptxas 13.0's sequences for sm_90 (see its header). */
Test(sanitizer_parse, barrier_modes_in_context, .fini = unload)
{
    load("barriers_sm90.nvdisasm");
    cr_assert_eq(M.nfns, 5);
    const char *b = "_Z11split_blockPi";
    const struct { uint64_t pc; unsigned mode; } block[] = {
        {0x20, WR_BARMODE_ARRIVE}, {0x40, WR_BARMODE_SYNC},  {0x50, WR_BARMODE_SYNC},
        {0x60, WR_BARMODE_SYNC},   {0x70, WR_BARMODE_SYNC},  {0x80, WR_BARMODE_SYNC},
        {0x90, WRS_BARMODE_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof block / sizeof block[0]; i++) {
        const wrs_insn *in = at(b, block[i].pc);
        cr_expect_eq(in->cls.kind, WRS_K_BARRIER, "0x%llx", (unsigned long long)block[i].pc);
        cr_expect_eq(in->cls.scope, WR_SCOPE_BLOCK, "0x%llx", (unsigned long long)block[i].pc);
        cr_expect_eq(in->cls.barmode, block[i].mode, "0x%llx: %u",
                     (unsigned long long)block[i].pc, in->cls.barmode);
    }
    /* barrier.cluster.arrive: MEMBAR.ALL.GPU, ERRBAR, CGAERRBAR, UCGABAR_ARV */
    const char *rel = "_Z11cluster_relPi";
    cr_expect_eq(at(rel, 0xb0)->cls.scope, WR_SCOPE_CLUSTER);
    cr_expect_eq(at(rel, 0xb0)->cls.barmode, WR_BARMODE_ARRIVE);
    cr_expect_eq(at(rel, 0xf0)->cls.barmode, WR_BARMODE_WAIT);
    cr_expect_eq(at(rel, 0xf0)->cls.scope, WR_SCOPE_CLUSTER);
    /* the launch without clusters: a block barrier in the wait's place */
    cr_expect_eq(at(rel, 0x120)->cls.scope, WR_SCOPE_BLOCK);
    cr_expect_eq(at(rel, 0x120)->cls.barmode, WR_BARMODE_SYNC);
    /* every way to the arrive passes the fence, which the finisher also
     * inserts as a fence of its own */
    cr_expect_eq(wrs_fence_between(fn(rel), 0x60, 0xb0, WR_SCOPE_DEVICE, 0), WRS_YES);
    /* .relaxed: the same UCGABAR_ARV with nothing before it */
    cr_expect_eq(at("_Z15cluster_relaxedPi", 0x80)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    cr_expect_eq(at("_Z15cluster_relaxedPi", 0xc0)->cls.barmode, WR_BARMODE_WAIT);
    /* fence.acq_rel.cluster, then a relaxed arrive: the fence is not
     * directly before it (CCTL.IVALL, a branch between) */
    cr_expect_eq(at("_Z18fence_then_relaxedPi", 0xc0)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    /* a branch lands between fence and arrive; a predicated fence; a
     * block-scope fence; a system-scope SC fence directly before */
    const char *gap = "_Z14landing_in_gapPi";
    cr_expect_eq(at(gap, 0x0)->target, 0x20);
    cr_expect_eq(at(gap, 0x40)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    cr_expect_eq(at(gap, 0x60)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    cr_expect_eq(at(gap, 0x80)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    cr_expect_eq(at(gap, 0xa0)->cls.barmode, WR_BARMODE_ARRIVE);
}

/* ---- fence inference ------------------------------------------------------------ */

Test(sanitizer_fence, straight_line, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    wrs_function *p = fn("_Z11mp_producerPiS_");
    /* data store, MEMBAR.SC.GPU, flag exchange */
    cr_expect_eq(wrs_fence_between(p, 0x70, 0xb0, WR_SCOPE_DEVICE, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(p, 0x70, 0xb0, WR_SCOPE_BLOCK, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(p, 0x70, 0xb0, WR_SCOPE_DEVICE, 1), WRS_YES);
    cr_expect_eq(wrs_fence_between(p, 0x70, 0xb0, WR_SCOPE_SYSTEM, 0), WRS_NO);
    /* no fence between the consumer's two accesses */
    wrs_function *c = fn("_Z11mp_consumerPiS_");
    cr_expect_eq(wrs_fence_between(c, 0x70, 0x80, WR_SCOPE_BLOCK, 0), WRS_NO);
    /* backwards in straight-line code: no path */
    cr_expect_eq(wrs_fence_between(p, 0xb0, 0x70, WR_SCOPE_BLOCK, 0), WRS_UNREACHABLE);
    /* unknown PCs */
    cr_expect_eq(wrs_fence_between(p, 0x74, 0xb0, WR_SCOPE_BLOCK, 0), WRS_UNREACHABLE);
}

Test(sanitizer_fence, spin_loop, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    wrs_function *c = fn("_Z11mp_consumerPiS_");
    /* spin load -> data load: every exit of the loop passes MEMBAR.SC.GPU */
    cr_expect_eq(wrs_fence_between(c, 0x30, 0x70, WR_SCOPE_DEVICE, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(c, 0x30, 0x70, WR_SCOPE_SYSTEM, 0), WRS_NO);
    /* spin load -> spin load (next iteration): no fence */
    cr_expect_eq(wrs_fence_between(c, 0x30, 0x30, WR_SCOPE_BLOCK, 0), WRS_NO);
}

Test(sanitizer_fence, diamond, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    wrs_function *d = fn("_Z7diamondPii");
    /* one side MEMBAR.SC.CTA, the other MEMBAR.ALL.GPU */
    cr_expect_eq(wrs_fence_between(d, 0x10, 0x90, WR_SCOPE_BLOCK, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(d, 0x10, 0x90, WR_SCOPE_DEVICE, 0), WRS_NO);
    cr_expect_eq(wrs_fence_between(d, 0x10, 0x90, WR_SCOPE_BLOCK, 1), WRS_NO);
    /* a predicated branch skips MEMBAR.SC.SYS */
    cr_expect_eq(wrs_fence_between(d, 0xc0, 0xf0, WR_SCOPE_BLOCK, 0), WRS_NO);
    /* BRA.U !UP0 is conditional: it may skip MEMBAR.SC.GPU */
    cr_expect_eq(wrs_fence_between(d, 0xf0, 0x120, WR_SCOPE_BLOCK, 0), WRS_NO);
    /* the barrier and the warp sync are not fences */
    cr_expect_eq(wrs_fence_between(d, 0x90, 0xc0, WR_SCOPE_BLOCK, 0), WRS_NO);
}

Test(sanitizer_fence, indirect_branch, .fini = unload)
{
    load("litmus_sm90.nvdisasm");
    wrs_function *f = fn("_Z8indirectPi");
    cr_expect_eq(wrs_fence_between(f, 0x0, 0x30, WR_SCOPE_BLOCK, 0), WRS_UNKNOWN);
    /* after the indirect branch: straight line, no fence between */
    cr_expect_eq(wrs_fence_between(f, 0x30, 0x50, WR_SCOPE_BLOCK, 0), WRS_NO);
    cr_expect(f->has_indirect);
}

/* ---- the cuobjdump sample ---------------------------------------------------------- */

Test(sanitizer_parse, cuobjdump_format, .fini = unload)
{
    load("branches.cuobjdump");
    cr_assert_eq(M.nfns, 2);
    cr_expect_str_eq(M.fns[0].name, "_Z3fooPi");
    wrs_function *f = fn("_Z3fooPi");
    cr_expect_eq(f->n, 9);
    cr_expect_eq(at("_Z3fooPi", 0x20)->target, 0x50);
    cr_expect(at("_Z3fooPi", 0x20)->predicated);
    cr_expect_eq(at("_Z3fooPi", 0x40)->target, 0x60);
    /* GPU fence on one side, SYS on the other */
    cr_expect_eq(wrs_fence_between(f, 0x10, 0x60, WR_SCOPE_DEVICE, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(f, 0x10, 0x60, WR_SCOPE_SYSTEM, 0), WRS_NO);
}

Test(sanitizer_fence, loop_back_edge, .fini = unload)
{
    load("branches.cuobjdump");
    wrs_function *f = fn("_Z4loopPi");
    cr_expect_eq(wrs_fence_between(f, 0x0, 0x20, WR_SCOPE_DEVICE, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(f, 0x20, 0x0, WR_SCOPE_BLOCK, 0), WRS_NO);
    cr_expect_eq(wrs_fence_between(f, 0x0, 0x0, WR_SCOPE_DEVICE, 0), WRS_YES);
    cr_expect_eq(wrs_fence_between(f, 0x20, 0x20, WR_SCOPE_DEVICE, 0), WRS_YES);
}

/* ---- errors ---------------------------------------------------------------------- */

static int parse_str(const char *text, char *err, size_t errlen)
{
    wrs_module m;
    memset(&m, 0, sizeof m);
    int rc = wrs_parse(text, strlen(text), &m, err, errlen);
    wrs_module_free(&m);
    return rc;
}

Test(sanitizer_parse, errors)
{
    char err[256];
    cr_expect_eq(parse_str("        /*0000*/ EXIT ;\n", err, sizeof err), -1);
    cr_expect(strstr(err, "line 1") && strstr(err, "outside a function"), "%s", err);
    cr_expect_eq(parse_str("f:\n  /*00g0*/ EXIT ;\n", err, sizeof err), -1);
    cr_expect(strstr(err, "line 2") && strstr(err, "bad PC"), "%s", err);
    cr_expect_eq(parse_str("f:\n  //## File \"x.cu, line 3\n", err, sizeof err), -1);
    cr_expect(strstr(err, "unterminated"), "%s", err);
    cr_expect_eq(parse_str("f:\n  /*0000*/ ;\n", err, sizeof err), -1);
    cr_expect(strstr(err, "missing opcode"), "%s", err);
    cr_expect_eq(parse_str("f:\n /*0000*/ BRA `(.L_x_1 ;\n", err, sizeof err), -1);
    cr_expect_eq(parse_str("f:\n /*0000*/ EXIT ;\nf:\n /*0000*/ EXIT ;\n", err, sizeof err), -1);
    cr_expect(strstr(err, "defined twice"), "%s", err);
    /* found by fuzz_sass: one PC twice made the table ambiguous */
    cr_expect_eq(parse_str("f:\n /*0010*/ EXIT ;\n /*0010*/ NOP ;\n", err, sizeof err), -1);
    cr_expect(strstr(err, "line 3") && strstr(err, "PC 0x10 twice in function f"), "%s", err);
    /* empty input: no functions, no error */
    cr_expect_eq(parse_str("", err, sizeof err), 0);
}

/* ---- the real thing: nvdisasm -c -g of tests/gpu/gpu_litmus.cu built without
 * the device API (gpu_litmus_plain), as toolkit 13.0's nvdisasm printed it on
 * the H200 machine (scripts/gpu-session sass); the data above were written by
 * hand before any GPU session. */

Test(sanitizer_real, h200_disassembly_parses_and_classifies, .fini = unload)
{
    load("h200_litmus_plain_sm90.nvdisasm");
    cr_assert_eq(M.nfns, 38);
    /* named barriers: bar.sync 1, then bar.arrive 2, bar.sync 1 (consumer);
     * bar.arrive 1 (producer): what the API never reported */
    const char *pipe = "_Z10k_pipelineILb1EEvPi";
    const wrs_insn *sync1 = at(pipe, 0xa0), *arv = at(pipe, 0x120);
    cr_assert_str_eq(sync1->opcode, "BAR.SYNC.DEFER_BLOCKING");
    cr_assert_eq(sync1->cls.barmode, WR_BARMODE_SYNC);
    cr_assert_str_eq(arv->opcode, "BAR.ARV");
    cr_assert_eq(arv->cls.kind, WRS_K_BARRIER);
    cr_assert_eq(arv->cls.scope, WR_SCOPE_BLOCK);
    cr_assert_eq(arv->cls.barmode, WR_BARMODE_ARRIVE);
    /* cluster barriers: a releasing arrive after MEMBAR.ALL.GPU, and the
     * relaxed one of barrier.cluster.arrive.relaxed, told apart in context */
    const char *split = "_Z15k_cluster_splitILi1EEvPiS0_";
    cr_assert_str_eq(at(split, 0xb0)->opcode, "MEMBAR.ALL.GPU");
    cr_assert_eq(at(split, 0xe0)->cls.barmode, WR_BARMODE_ARRIVE);
    cr_assert_eq(at(split, 0xe0)->cls.scope, WR_SCOPE_CLUSTER);
    cr_assert_eq(at(split, 0x120)->cls.barmode, WR_BARMODE_WAIT);
    cr_assert_str_eq(at(split, 0x200)->opcode, "UCGABAR_ARV");
    cr_assert_eq(at(split, 0x200)->cls.barmode, WR_BARMODE_ARRIVE_RELAXED);
    /* a device-scope lock and a block-scope one */
    const wrs_insn *cas = at("_Z6k_lockILi1ELb1ELb1ELb1EEv4args", 0xc0);
    cr_assert_str_eq(cas->opcode, "ATOMG.E.CAS.STRONG.GPU");
    cr_assert_eq(cas->cls.atomic_op, WR_AOP_CAS);
    cr_assert_eq(cas->cls.scope, WR_SCOPE_DEVICE);
    const wrs_insn *bcas = at("_Z6k_lockILi0ELb1ELb1ELb1EEv4args", 0xc0);
    cr_assert_str_eq(bcas->opcode, "ATOMG.E.CAS.STRONG.SM");
    cr_assert_eq(bcas->cls.scope, WR_SCOPE_BLOCK);
    cr_assert_eq(at("_Z6k_lockILi1ELb1ELb1ELb1EEv4args", 0x130)->cls.kind, WRS_K_FENCE);
}

/* What the path cannot record is counted per function: the producer and
 * consumer's BAR.ARVs, an mbarrier pipeline's SYNCS.* instructions (init
 * as SYNCS.EXCH.64, arrive, try-wait), and nothing in a plain kernel. */
/* The H200's nvdisasm -c -gi of the same kernels (toolkit 13.0): every
 * atomic the toolkit's headers inline, and every cooperative-groups
 * instruction of grid.sync(), is attributed to a line of gpu_litmus.cu, the
 * line the source-level path names (WR_ATOMIC_* in a device function: that
 * function's line, not the kernel's call of it). */
static const wrs_insn *first_op(const char *fn_name, const char *prefix)
{
    const wrs_function *f = fn(fn_name);
    for (size_t i = 0; i < f->n; i++)
        if (!strncmp(f->insns[i].opcode, prefix, strlen(prefix)))
            return &f->insns[i];
    cr_assert_fail("%s: no %s", fn_name, prefix);
    return NULL;
}

Test(sanitizer_real, h200_inlining_frames_name_the_programs_lines, .fini = unload)
{
    load("h200_litmus_plain_sm90_gi.nvdisasm");
    size_t toolkit = 0, insns = 0;
    for (size_t f = 0; f < M.nfns; f++)
        for (size_t i = 0; i < M.fns[f].n; i++) {
            const char *file = wrs_insn_file(&M, &M.fns[f].insns[i]);
            insns += file != NULL;
            toolkit += file && strstr(file, "/targets/x86_64-linux/include/");
        }
    cr_assert_gt(insns, 1000);
    cr_assert_eq(toolkit, 0, "%zu of %zu instructions keep a toolkit header's line", toolkit,
                 insns);
    const wrs_insn *cas = first_op("_Z6k_lockILi0ELb1ELb1ELb1EEv4args", "ATOMG.E.CAS");
    cr_expect(strstr(wrs_insn_file(&M, cas), "tests/gpu/gpu_litmus.cu"));
    cr_expect_eq(cas->line, 85, "WR_ATOMIC_CAS in lock<S>");
    const wrs_insn *add = first_op("_Z6k_atomILi0ELi0ELb1EEv4args", "ATOMG");
    cr_expect_eq(add->line, 69);
    const wrs_insn *exch = first_op("_Z6k_lockILi0ELb1ELb1ELb1EEv4args", "ATOMG.E.EXCH");
    cr_expect_eq(exch->line, 107, "WR_ATOMIC_EXCH in unlock<S>");
}

Test(sanitizer_real, unrecorded_synchronisation_is_counted, .fini = unload)
{
    load("h200_litmus_plain_sm90.nvdisasm");
    wrs_unrecorded u;
    u = fn("_Z10k_pipelineILb1EEvPi")->unrecorded;
    cr_assert_eq(u.bar_arrive, 3);
    cr_assert_eq(u.mbarrier, 0);
    u = fn("_Z19k_mbarrier_pipelineILb1EEvPi")->unrecorded;
    cr_assert_eq(u.bar_arrive, 0);
    cr_assert_eq(u.mbarrier, 10);
    u = fn("_Z15k_cluster_splitILi1EEvPiS0_")->unrecorded;
    cr_assert_eq(u.bar_arrive + u.mbarrier, 0, "cluster barriers are recorded");
    u = fn("_Z6k_lockILi1ELb1ELb1ELb1EEv4args")->unrecorded;
    cr_assert_eq(u.bar_arrive + u.mbarrier, 0);
}

/* ---- operand text and mbarrier init counts ----------------------------------------- */

static void parse_text(const char *text)
{
    char err[256];
    memset(&M, 0, sizeof M);
    cr_assert_eq(wrs_parse(text, strlen(text), &M, err, sizeof err), 0, "%s", err);
}

/* wrs_mbarrier_init_count on f's instruction at pc: the count, or 0 */
static uint32_t init_count(const char *name, uint64_t pc)
{
    uint32_t count = 0xdeadu;
    int known = wrs_mbarrier_init_count(fn(name), pc, &count);
    if (!known) {
        cr_expect_eq(count, 0xdeadu, "count written though unknown");
        return 0;
    }
    cr_expect_neq(count, 0);
    return count;
}

Test(sanitizer_parse, operands_are_kept, .fini = unload)
{
    load("h200_litmus_plain_sm90.nvdisasm");
    const wrs_insn *arv = at("_Z10k_pipelineILb1EEvPi", 0x120);
    cr_assert_str_eq(arv->opcode, "BAR.ARV");
    cr_expect_str_eq(arv->operands, "0x2, 0x40");
    cr_expect_str_eq(arv->pred, "");
    wrs_module_free(&M);

    load("h200_litmus_plain_sm90_gi.nvdisasm");
    const char *mb = "_Z19k_mbarrier_pipelineILb0EEvPi";
    cr_expect_str_eq(at(mb, 0x130)->operands, "URZ, [UR6+0x8], UR4");
    cr_expect_str_eq(at(mb, 0x130)->pred, "!UP1");
    cr_expect_str_eq(at(mb, 0xd0)->operands, "UR4, -UR4, 0x100000, URZ");
    cr_expect_str_eq(at(mb, 0x340)->operands, "`(.L_x_8)");   /* "BRA `(.L_x_8);" */
    cr_expect_str_eq(at(mb, 0x350)->opcode, "NOP");
    cr_expect_str_eq(at(mb, 0x350)->operands, "");
    wrs_module_free(&M);

    /* long and odd lines: cut to fit, terminated; a long guard reads "?" */
    char text[1024];
    char longops[400];
    memset(longops, 'x', sizeof longops - 1);
    longops[sizeof longops - 1] = 0;
    snprintf(text, sizeof text,
             "f:\n"
             " /*0000*/ BAR.ARV 0x1, 0x40 ;\n"
             " /*0010*/ MOV R1, %s ;\n"
             " /*0020*/ @!UP0123 IADD3 R1 , R2,\tR3  , RZ   ;  /* 0x0001 */\n"
             " /*0030*/ EXIT\n"
             " /*0040*/ {  MOV R4, 0x1 ;\n"
             " /*0050*/ NOP ; ; ;\n",
             longops);
    parse_text(text);
    cr_expect_str_eq(at("f", 0)->operands, "0x1, 0x40");
    const wrs_insn *lng = at("f", 0x10);
    cr_expect_eq(strlen(lng->operands), sizeof lng->operands - 1);
    cr_expect(!strncmp(lng->operands, "R1, xxx", 7));
    cr_expect_str_eq(at("f", 0x20)->operands, "R1 , R2,\tR3  , RZ");
    cr_expect_str_eq(at("f", 0x20)->pred, "?");
    cr_expect(at("f", 0x20)->predicated);
    cr_expect_str_eq(at("f", 0x30)->operands, "");
    cr_expect_str_eq(at("f", 0x40)->opcode, "MOV");
    cr_expect_str_eq(at("f", 0x40)->operands, "R4, 0x1");
    cr_expect_str_eq(at("f", 0x50)->operands, "");
}

/* The H200's disassembly: both instances of k_mbarrier_pipeline init two
 * mbarriers with count 1 (UMOV UR4, 0x1, then the UIADD3 / USHF chain
 * under @!UP0), the second init under @!UP1, which the same VOTEU.ALL of
 * P0 computed; in the <true> instance P0 is redefined after that VOTEU. */
Test(sanitizer_mbarrier, h200_pipeline_inits, .fini = unload)
{
    load("h200_litmus_plain_sm90_gi.nvdisasm");
    const char *b0 = "_Z19k_mbarrier_pipelineILb0EEvPi", *b1 = "_Z19k_mbarrier_pipelineILb1EEvPi";
    cr_assert_str_eq(at(b0, 0x120)->opcode, "SYNCS.EXCH.64");
    cr_assert_str_eq(at(b0, 0x130)->opcode, "SYNCS.EXCH.64");
    cr_assert_str_eq(at(b1, 0x100)->opcode, "SYNCS.EXCH.64");
    cr_assert_str_eq(at(b1, 0x110)->opcode, "SYNCS.EXCH.64");
    cr_expect_eq(init_count(b0, 0x120), 1);
    cr_expect_eq(init_count(b0, 0x130), 1);
    cr_expect_eq(init_count(b1, 0x100), 1);
    cr_expect_eq(init_count(b1, 0x110), 1);
    /* no init: the chain, the barrier, an arrive, a try-wait, no instruction */
    cr_expect_eq(init_count(b0, 0xd0), 0);
    cr_expect_eq(init_count(b0, 0x140), 0);
    cr_expect_eq(init_count(b0, 0x2d0), 0);
    cr_expect_eq(init_count(b0, 0x1c0), 0);
    cr_expect_eq(init_count(b0, 0x124), 0);
    /* every SYNCS.EXCH.64 of the file is one of these four */
    size_t inits = 0;
    for (size_t f = 0; f < M.nfns; f++)
        for (size_t i = 0; i < M.fns[f].n; i++) {
            if (strcmp(M.fns[f].insns[i].opcode, "SYNCS.EXCH.64") != 0)
                continue;
            uint32_t c = 0;
            cr_expect(wrs_mbarrier_init_count(&M.fns[f], M.fns[f].insns[i].pc, &c));
            cr_expect_eq(c, 1);
            inits++;
        }
    cr_expect_eq(inits, 4);
}

Test(sanitizer_mbarrier, immediate_counts, .fini = unload)
{
    const struct { uint32_t count; const char *mov; } cases[] = {
        {2, "MOV R4, 0x1ffffc"},
        {3, "UMOV UR4, 0x1ffffa"},
        {128, "IMAD.MOV.U32 R4, RZ, RZ, 0x1fff00"},
        {1000, "MOV32I R4, 0x1ff830"},
        {1000, "MOV R4, 0x1ff830, 0xf"},
        {1000, "MOV R4, 2095152"},         /* decimal */
        {0xfffff, "UMOV UR4, 0x2"},         /* the largest count */
        {0, "MOV R4, 0x1ffffd"},            /* bit 0 set: no init value */
        {0, "MOV R4, RZ"},                  /* count 0x100000: out of range */
        {0, "MOV R4, 0x200000"},            /* the same, masked */
        {0, "MOV R4, 0x1ffffc, 0x3"},       /* some lanes only */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        int uniform = strstr(cases[i].mov, "UR4") != NULL;
        snprintf(text, sizeof text,
                 "_Z1kv:\n"
                 "        /*0000*/                   S2R R7, SR_TID.X ;\n"
                 "        /*0010*/                   %s ;\n"
                 "        /*0020*/                   MOV R5, 0x7ffff000 ;\n"
                 "        /*0030*/                   SYNCS.EXCH.64 URZ, [UR6], %s ;\n"
                 "        /*0040*/                   EXIT ;\n",
                 cases[i].mov, uniform ? "UR4" : "R4");
        parse_text(text);
        cr_expect_eq(init_count("_Z1kv", 0x30), cases[i].count, "%s", cases[i].mov);
        cr_expect_eq(init_count("_Z1kv", 0x10), 0, "not a SYNCS: %s", cases[i].mov);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

/* ptxas's chain: count -> 0x100000 - count -> << 1 (low), << 11 (high) */
Test(sanitizer_mbarrier, computed_chains, .fini = unload)
{
    const struct { uint32_t count; const char *text; } cases[] = {
        {128,
         "f:\n"
         " /*0000*/ MOV R2, 0x80 ;\n"
         " /*0010*/ S2R R0, SR_TID.X ;\n"
         " /*0020*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
         " /*0030*/ SHF.L.U32 R5, R4, 0xb, RZ ;\n"
         " /*0040*/ SHF.L.U32 R4, R4.reuse, 0x1, RZ ;\n"
         " /*0050*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {3,   /* R and UR mixed, IMAD.SHL, a carry-out predicate, a stray LDC.64 below */
         "f:\n"
         " /*0000*/ LDC.64 R2, c[0x0][0x210] ;\n"
         " /*0010*/ UMOV UR5, 0x3 ;\n"
         " /*0020*/ MOV R3, UR5 ;\n"
         " /*0030*/ IADD3 R4, P0, -R3, 0x100000, RZ ;\n"
         " /*0040*/ IMAD.SHL.U32 R4, R4, 0x2, RZ ;\n"
         " /*0050*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {1,   /* the H200's uniform chain, guards and all */
         "f:\n"
         " /*0000*/ UMOV UR4, 0x1 ;\n"
         " /*0010*/ ISETP.NE.AND P0, PT, R7, RZ, PT ;\n"
         " /*0020*/ VOTEU.ALL UP0, P0 ;\n"
         " /*0030*/ @!UP0 UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0040*/ @!UP0 USHF.L.U32 UR5, UR4, 0xb, URZ ;\n"
         " /*0050*/ @!UP0 USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0060*/ @!UP0 SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {64,  /* LOP3 clears bit 0; the table ignores its third operand */
         "f:\n"
         " /*0000*/ IMAD.MOV.U32 R2, RZ, RZ, 0x1fff81 ;\n"
         " /*0010*/ LOP3.LUT R4, R2, 0xfffffffe, R9, 0xc0, !PT ;\n"
         " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {2,   /* a logical right shift of the high word (its low word ignored) */
         "f:\n"
         " /*0000*/ MOV R4, 0x3ffff8 ;\n"
         " /*0010*/ SHF.R.U32.HI R4, R9, 0x1, R4 ;\n"
         " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {5,   /* a label no branch lands on, before the chain, and a branch target */
         "f:\n"
         " /*0000*/ @P1 BRA `(.L_x_1) ;\n"
         ".L_x_1:\n"
         " /*0010*/ UMOV UR4, 0x5 ;\n"
         ".L_x_2:\n"
         " /*0020*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0030*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parse_text(cases[i].text);
        const wrs_function *f = fn("f");
        cr_expect_eq(init_count("f", f->insns[f->n - 1].pc), cases[i].count, "case %zu", i);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

/* What the evaluator does not know: it says so (0), never a count. */
Test(sanitizer_mbarrier, unknown_counts, .fini = unload)
{
    static const char *const cases[] = {
        /* a count from a constant bank (a kernel parameter) */
        "f:\n"
        " /*0000*/ ULDC UR4, c[0x0][0x210] ;\n"
        " /*0010*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
        " /*0020*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
        " /*0030*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n",
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x210] ;\n"
        " /*0010*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
        " /*0020*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0030*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* ULDC.64 writes UR4 as the low half */
        "f:\n"
        " /*0000*/ UMOV UR4, 0x1ffffc ;\n"
        " /*0010*/ ULDC.64 UR4, c[0x0][0x210] ;\n"
        " /*0020*/ SYNCS.EXCH.64 URZ, [UR6], UR5 ;\n",
        /* IMAD.WIDE writes R3 and R4 */
        "f:\n"
        " /*0000*/ MOV R4, 0x1ffffc ;\n"
        " /*0010*/ IMAD.WIDE R3, R7, 0x4, R8 ;\n"
        " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a def across a branch target: two values meet there */
        "f:\n"
        " /*0000*/ UMOV UR4, 0x1 ;\n"
        " /*0010*/ @P0 BRA `(.L_x_1) ;\n"
        " /*0020*/ UMOV UR4, 0x2 ;\n"
        ".L_x_1:\n"
        " /*0030*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
        " /*0040*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
        " /*0050*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n",
        /* the init itself a branch target (a loop) */
        "f:\n"
        " /*0000*/ UMOV UR4, 0x1ffffc ;\n"
        ".L_x_1:\n"
        " /*0010*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"
        " /*0020*/ @P0 BRA `(.L_x_1) ;\n",
        /* a call between */
        "f:\n"
        " /*0000*/ MOV R4, 0x1ffffc ;\n"
        " /*0010*/ CALL.REL.NOINC `(g) ;\n"
        " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a predicated def with another predicate */
        "f:\n"
        " /*0000*/ ISETP.NE.AND P0, PT, R7, RZ, PT ;\n"
        " /*0010*/ ISETP.NE.AND P1, PT, R8, RZ, PT ;\n"
        " /*0020*/ @P1 MOV R4, 0x1ffffc ;\n"
        " /*0030*/ @P0 SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* the same text, negated the other way */
        "f:\n"
        " /*0000*/ @!P0 MOV R4, 0x1ffffc ;\n"
        " /*0010*/ @P0 SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a predicated def, an unpredicated init */
        "f:\n"
        " /*0000*/ @P0 MOV R4, 0x1ffffc ;\n"
        " /*0010*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* the same predicate name, rewritten between */
        "f:\n"
        " /*0000*/ ISETP.NE.AND P0, PT, R7, RZ, PT ;\n"
        " /*0010*/ @P0 MOV R4, 0x1ffffc ;\n"
        " /*0020*/ ISETP.GE.AND P0, PT, R7, 0x20, PT ;\n"
        " /*0030*/ @P0 SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* VOTEU of different sources */
        "f:\n"
        " /*0000*/ VOTEU.ALL UP0, P0 ;\n"
        " /*0010*/ VOTEU.ALL UP1, P1 ;\n"
        " /*0020*/ @!UP0 UMOV UR4, 0x1ffffc ;\n"
        " /*0030*/ @!UP1 SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n",
        /* no def in the function */
        "f:\n"
        " /*0000*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n",
        /* unsupported defs: a special register, a shift with a high word,
         * an add with carry in, a byte select */
        "f:\n"
        " /*0000*/ S2R R4, SR_TID.X ;\n"
        " /*0010*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        "f:\n"
        " /*0000*/ MOV R4, 0xffffe ;\n"
        " /*0010*/ SHF.L.U32 R4, R4, 0x1, R9 ;\n"
        " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        "f:\n"
        " /*0000*/ MOV R4, 0x1ffffc ;\n"
        " /*0010*/ IADD3.X R4, R4, RZ, RZ, P0, !PT ;\n"
        " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        "f:\n"
        " /*0000*/ MOV R2, 0x1ffffc ;\n"
        " /*0010*/ MOV R4, R2.B1 ;\n"
        " /*0020*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* an indirect branch anywhere in the function */
        "f:\n"
        " /*0000*/ MOV R4, 0x1ffffc ;\n"
        " /*0010*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"
        " /*0020*/ BRX R2 -0x30 ;\n",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parse_text(cases[i]);
        const wrs_function *f = fn("f");
        uint64_t pc = 0;
        for (size_t k = 0; k < f->n; k++)
            if (!strncmp(f->insns[k].opcode, "SYNCS", 5))
                pc = f->insns[k].pc;
        cr_expect_eq(init_count("f", pc), 0, "case %zu", i);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

/* The same predicate, not rewritten: known; and the look back is bounded. */
Test(sanitizer_mbarrier, guards_and_bounds, .fini = unload)
{
    parse_text("f:\n"
               " /*0000*/ ISETP.NE.AND P0, PT, R7, RZ, PT ;\n"
               " /*0010*/ @P0 MOV R4, 0x1ffffc ;\n"
               " /*0020*/ ISETP.GE.AND P1, PT, R7, 0x20, PT ;\n"
               " /*0030*/ @P0 SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n");
    cr_expect_eq(init_count("f", 0x30), 2);
    wrs_module_free(&M);

    /* 300 adds of 0 after the value: past the window, unknown */
    size_t cap = 64 * 1024, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    len += (size_t)snprintf(text + len, cap - len, "f:\n /*0000*/ MOV R4, 0x1ffffc ;\n");
    for (unsigned i = 1; i <= 300; i++)
        len += (size_t)snprintf(text + len, cap - len, " /*%04x*/ IADD3 R4, R4, RZ, RZ ;\n",
                                i * 16);
    len += (size_t)snprintf(text + len, cap - len,
                            " /*%04x*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n", 301 * 16);
    parse_text(text);
    cr_expect_eq(init_count("f", 301 * 16), 0);
    wrs_module_free(&M);

    /* six: within the window and the nesting (each add is one level deeper) */
    len = 0;
    len += (size_t)snprintf(text + len, cap - len, "f:\n /*0000*/ MOV R4, 0x1ffffc ;\n");
    for (unsigned i = 1; i <= 6; i++)
        len += (size_t)snprintf(text + len, cap - len, " /*%04x*/ IADD3 R4, R4, RZ, RZ ;\n",
                                i * 16);
    len += (size_t)snprintf(text + len, cap - len,
                            " /*%04x*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n", 7 * 16);
    parse_text(text);
    cr_expect_eq(init_count("f", 7 * 16), 2);
    wrs_module_free(&M);
    free(text);
    memset(&M, 0, sizeof M);
}

/* ---- counts from the launch geometry (wrs_mbarrier_init_count_in) ---------------- */

/* wrs_mbarrier_init_count_in on f's last SYNCS.EXCH.64: the count, or 0 */
static uint32_t init_count_geo(const uint32_t *geo)
{
    const wrs_function *f = fn("f");
    uint64_t pc = 0;
    for (size_t k = 0; k < f->n; k++)
        if (!strncmp(f->insns[k].opcode, "SYNCS", 5))
            pc = f->insns[k].pc;
    uint32_t count = 0xdeadu;
    if (!wrs_mbarrier_init_count_in(f, pc, geo, &count)) {
        cr_expect_eq(count, 0xdeadu, "count written though unknown");
        return 0;
    }
    cr_expect_neq(count, 0);
    return count;
}

/* blockDim = (256, 4, 2), gridDim = (80, 3, 1): synthetic sm_90 chains as
 * ptxas writes them for mbarrier.init(&bar, <a function of the launch>);
 * each reads the geometry, so without it (NULL) each is unknown. */
Test(sanitizer_mbarrier, geometry_counts, .fini = unload)
{
    static const uint32_t geo[6] = {256, 4, 2, 80, 3, 1};
    const struct { uint32_t count; const char *text; } cases[] = {
        {256,   /* blockDim.x, uniform */
         "f:\n"
         " /*0000*/ ULDC UR4, c[0x0][0x0] ;\n"
         " /*0010*/ S2R R0, SR_TID.X ;\n"
         " /*0020*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0030*/ USHF.L.U32 UR5, UR4, 0xb, URZ ;\n"
         " /*0040*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0050*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {256,   /* blockDim.x, under the H200's VOTEU guards */
         "f:\n"
         " /*0000*/ ULDC UR4, c[0x0][0x0] ;\n"
         " /*0010*/ ISETP.NE.AND P0, PT, R7, RZ, PT ;\n"
         " /*0020*/ VOTEU.ALL UP0, P0 ;\n"
         " /*0030*/ VOTEU.ALL UP1, P0 ;\n"
         " /*0040*/ @!UP0 UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0050*/ @!UP0 USHF.L.U32 UR5, UR4, 0xb, URZ ;\n"
         " /*0060*/ @!UP0 USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0070*/ @!UP1 SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {256,   /* blockDim.x, R registers */
         "f:\n"
         " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
         " /*0010*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
         " /*0020*/ SHF.L.U32 R5, R4, 0xb, RZ ;\n"
         " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {8,     /* blockDim.x / 32 */
         "f:\n"
         " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
         " /*0010*/ SHF.R.U32.HI R3, RZ, 0x5, R2 ;\n"
         " /*0020*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
         " /*0030*/ IMAD.SHL.U32 R4, R4, 0x2, RZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {8,     /* blockDim.x / 32, uniform */
         "f:\n"
         " /*0000*/ ULDC UR4, c[0x0][0x0] ;\n"
         " /*0010*/ USHF.R.U32.HI UR4, URZ, 0x5, UR4 ;\n"
         " /*0020*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0030*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {8,     /* (int)blockDim.x / 32: the signed division's rounding */
         "f:\n"
         " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
         " /*0010*/ SHF.R.S32.HI R3, RZ, 0x1f, R2 ;\n"
         " /*0020*/ LEA.HI R3, R3, R2, RZ, 0x5 ;\n"
         " /*0030*/ SHF.R.S32.HI R3, RZ, 0x5, R3 ;\n"
         " /*0040*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
         " /*0050*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0060*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {1024,  /* blockDim.x * blockDim.y: ULDC.64 into a pair, UIMAD */
         "f:\n"
         " /*0000*/ ULDC.64 UR4, c[0x0][0x0] ;\n"
         " /*0010*/ UIMAD UR4, UR4, UR5, URZ ;\n"
         " /*0020*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0030*/ USHF.L.U32 UR5, UR4, 0xb, URZ ;\n"
         " /*0040*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0050*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {1024,  /* the same with a constant operand */
         "f:\n"
         " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
         " /*0010*/ IMAD R2, R2, c[0x0][0x4], RZ ;\n"
         " /*0020*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
         " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {2048,  /* blockDim.x * blockDim.y * blockDim.z: two register sources */
         "f:\n"
         " /*0000*/ LDC.64 R2, c[0x0][0x0] ;\n"
         " /*0010*/ LDC R5, c[0x0][0x8] ;\n"
         " /*0020*/ IMAD R3, R2, R3, RZ ;\n"
         " /*0030*/ IMAD R3, R3, R5, RZ ;\n"
         " /*0040*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
         " /*0050*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0060*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {80,    /* LDC.64's second word: c[0x0][0xc] = gridDim.x */
         "f:\n"
         " /*0000*/ LDC.64 R2, c[0x0][0x8] ;\n"
         " /*0010*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
         " /*0020*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0030*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {2,     /* ... and its first: blockDim.z */
         "f:\n"
         " /*0000*/ LDC.64 R2, c[0x0][0x8] ;\n"
         " /*0010*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
         " /*0020*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0030*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {3,     /* gridDim.y */
         "f:\n"
         " /*0000*/ ULDC UR4, c[0x0][0x10] ;\n"
         " /*0010*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0020*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0030*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {1,     /* gridDim.z, the last word, via ULDC.64 of gridDim.y/z */
         "f:\n"
         " /*0000*/ ULDC.64 UR8, c[0x0][0x10] ;\n"
         " /*0010*/ UIADD3 UR4, -UR9, 0x100000, URZ ;\n"
         " /*0020*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0030*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {1028,  /* blockDim.x * 4 + blockDim.y: LEA with a carry-out */
         "f:\n"
         " /*0000*/ ULDC.64 UR4, c[0x0][0x0] ;\n"
         " /*0010*/ MOV R5, UR5 ;\n"
         " /*0020*/ LEA R3, P0, R5.reuse, R5, 0x8 ;\n"
         " /*0030*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
         " /*0040*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0050*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {1028,  /* the same, ULEA */
         "f:\n"
         " /*0000*/ ULDC.64 UR4, c[0x0][0x0] ;\n"
         " /*0010*/ ULEA UR4, UR4, UR5, 0x2 ;\n"
         " /*0020*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
         " /*0030*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n"},
        {512,   /* IMAD.WIDE.U32's low word */
         "f:\n"
         " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
         " /*0010*/ IMAD.WIDE.U32 R2, R2, 0x2, RZ ;\n"
         " /*0020*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
         " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
        {2,     /* the geometry read as a source by MOV, negated */
         "f:\n"
         " /*0000*/ MOV R4, c[0x0][0x4] ;\n"
         " /*0010*/ IADD3 R4, R4, 0xffffc, -c[0x0][0x8] ;\n"
         " /*0020*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
         " /*0030*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parse_text(cases[i].text);
        cr_expect_eq(init_count_geo(geo), cases[i].count, "case %zu", i);
        cr_expect_eq(init_count_geo(NULL), 0, "case %zu without geometry", i);
        const wrs_function *f = fn("f");
        uint32_t c = 0xdeadu;
        cr_expect(!wrs_mbarrier_init_count(f, f->insns[f->n - 1].pc, &c) && c == 0xdeadu,
                  "case %zu: the geometry-less form knows no geometry", i);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

/* Arithmetic and logical right shifts differ: S32 shifts the sign in
 * (0x80000000 >> 31 is -1, count 0xfffff), U32 does not (1, count 1). */
Test(sanitizer_mbarrier, right_shift_sign, .fini = unload)
{
    static const struct { uint32_t count; const char *shf; } cases[] = {
        {0xfffff, "SHF.R.S32.HI R3, RZ, 0x1f, R2"},
        {1, "SHF.R.U32.HI R3, RZ, 0x1f, R2"},
        {1, "SHF.R.U32 R3, R2, 0x1f, RZ"},
        {0, "SHF.R.U32 R3, R2, 0x1f, R9"},   /* the low word with a high: unknown */
        {0, "SHF.R.U32.HI R3, RZ, 0x20, R2"}, /* shifts of 32 and more: unknown */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "f:\n"
                 " /*0000*/ MOV R2, 0x80000000 ;\n"
                 " /*0010*/ %s ;\n"
                 " /*0020*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
                 " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
                 " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
                 cases[i].shf);
        parse_text(text);
        cr_expect_eq(init_count_geo(NULL), cases[i].count, "%s", cases[i].shf);
        wrs_module_free(&M);
    }
    memset(&M, 0, sizeof M);
}

/* With the geometry given, what stays unknown: kernel parameters, words
 * past the geometry, other banks, register offsets, other LDC forms,
 * misaligned pairs, and the rules of the straight line. */
Test(sanitizer_mbarrier, geometry_unknowns, .fini = unload)
{
    static const uint32_t geo[6] = {256, 4, 2, 80, 3, 1};
    static const char *const ldc[] = {
        "ULDC UR4, c[0x0][0x210]",        /* a kernel parameter */
        "ULDC UR4, c[0x0][0x18]",         /* past gridDim.z */
        "ULDC UR4, c[0x0][0x28]",         /* the stack's start */
        "ULDC UR4, c[0x3][0x0]",          /* another bank */
        "ULDC UR4, c[0x0][UR8]",          /* a register offset */
        "ULDC UR4, c[0x0][UR8+0x4]",
        "ULDC UR4, c[0x0][0x2]",          /* misaligned */
        "ULDC.U16 UR4, c[0x0][0x0]",      /* a narrower read */
        "ULDC.64 UR4, c[0x0][0x4]",       /* a pair, misaligned */
        "ULDC.64 UR3, c[0x0][0x14]",      /* misaligned; UR4 the word past gridDim.z */
        "ULDC.64 UR4, c[0x0][0x18]",      /* both words past */
        "ULDC.64 UR4, c[0x0][0x210]",     /* parameters, in a pair */
    };
    for (size_t i = 0; i < sizeof ldc / sizeof ldc[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "f:\n"
                 " /*0000*/ %s ;\n"
                 " /*0010*/ UIADD3 UR4, -UR4, 0x100000, URZ ;\n"
                 " /*0020*/ USHF.L.U32 UR4, UR4, 0x1, URZ ;\n"
                 " /*0030*/ SYNCS.EXCH.64 URZ, [UR6], UR4 ;\n",
                 ldc[i]);
        parse_text(text);
        cr_expect_eq(init_count_geo(geo), 0, "%s", ldc[i]);
        wrs_module_free(&M);
    }
    static const char *const cases[] = {
        /* the geometry across a branch target */
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ @P0 BRA `(.L_x_1) ;\n"
        " /*0020*/ MOV R2, 0x20 ;\n"
        ".L_x_1:\n"
        " /*0030*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
        " /*0040*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0050*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a guarded LDC, an unguarded init */
        "f:\n"
        " /*0000*/ MOV R2, 0x20 ;\n"
        " /*0010*/ @P0 LDC R2, c[0x0][0x0] ;\n"
        " /*0020*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
        " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a parameter as an IMAD source */
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ IMAD R2, R2, c[0x0][0x210], RZ ;\n"
        " /*0020*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
        " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* IMAD.WIDE's high word, IMAD.HI, LEA.HI.X with a carry in */
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ IMAD.WIDE.U32 R2, R2, 0x2, RZ ;\n"
        " /*0020*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
        " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ IMAD.HI R3, R2, 0x2, RZ ;\n"
        " /*0020*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
        " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ LEA.HI.X R3, R2, RZ, RZ, 0x5, P0 ;\n"
        " /*0020*/ IADD3 R4, -R3, 0x100000, RZ ;\n"
        " /*0030*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0040*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
        /* a thread-dependent count: blockDim.x - threadIdx.x */
        "f:\n"
        " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
        " /*0010*/ S2R R3, SR_TID.X ;\n"
        " /*0020*/ IADD3 R2, R2, -R3, RZ ;\n"
        " /*0030*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
        " /*0040*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
        " /*0050*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parse_text(cases[i]);
        cr_expect_eq(init_count_geo(geo), 0, "case %zu", i);
        wrs_module_free(&M);
    }
    /* a geometry whose count is out of range: 0x100000 threads */
    static const uint32_t big[6] = {0x100000, 1, 1, 1, 1, 1};
    parse_text("f:\n"
               " /*0000*/ LDC R2, c[0x0][0x0] ;\n"
               " /*0010*/ IADD3 R4, -R2, 0x100000, RZ ;\n"
               " /*0020*/ SHF.L.U32 R4, R4, 0x1, RZ ;\n"
               " /*0030*/ SYNCS.EXCH.64 RZ, [R6+URZ], R4 ;\n");
    cr_expect_eq(init_count_geo(big), 0);
    cr_expect_eq(init_count_geo(geo), 256);
    wrs_module_free(&M);
    memset(&M, 0, sizeof M);
}

/* The H200 file's constant inits give 1 with or without a geometry. */
Test(sanitizer_mbarrier, h200_inits_with_geometry, .fini = unload)
{
    static const uint32_t geo[6] = {128, 1, 1, 4, 1, 1};
    load("h200_litmus_plain_sm90_gi.nvdisasm");
    size_t inits = 0;
    for (size_t f = 0; f < M.nfns; f++)
        for (size_t i = 0; i < M.fns[f].n; i++) {
            if (strcmp(M.fns[f].insns[i].opcode, "SYNCS.EXCH.64") != 0)
                continue;
            uint32_t c = 0, d = 0;
            cr_expect(wrs_mbarrier_init_count_in(&M.fns[f], M.fns[f].insns[i].pc, geo, &c));
            cr_expect(wrs_mbarrier_init_count_in(&M.fns[f], M.fns[f].insns[i].pc, NULL, &d));
            cr_expect_eq(c, 1);
            cr_expect_eq(d, 1);
            inits++;
        }
    cr_expect_eq(inits, 4);
}

/* ---- names as reports show them ------------------------------------------- */

Test(sanitizer_names, bare_names_of_demangled_functions)
{
    static const char *const cases[][2] = {
        {"void k_grid_phases<true>(int*, int*)", "k_grid_phases"},
        {"mp_producer(int*, int*)", "mp_producer"},
        {"void ns::Foo<int>::bar<2>(float) const", "bar"},
        {"void k_lock<0, true, true, true>(args)", "k_lock"},
        {"(anonymous namespace)::k(int)", "k"},
        {"void f<(anonymous namespace)::T>(int (*)(int))", "f"},
        {"plain", "plain"},
        {"", ""},
    };
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wrs_bare_name(cases[i][0], out, sizeof out);
        cr_expect_str_eq(out, cases[i][1], "%s", cases[i][0]);
    }
    wrs_bare_name("void a_rather_long_kernel_name<int>(int)", out, 8);
    cr_expect_str_eq(out, "a_rathe", "cut to the buffer");
}

/* With a C++ runtime in the process (every CUDA program has one), a
 * kernel's site names it as __func__ would; an extern "C" name stays. */
Test(sanitizer_names, display_names_demangle, .fini = unload)
{
    if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL))
        cr_skip_test("no libstdc++ to demangle with");
    load("h200_litmus_plain_sm90_gi.nvdisasm");
    cr_expect_str_eq(wrs_display_name(fn("_Z13k_grid_phasesILb1EEvPiS0_")), "k_grid_phases");
    cr_expect_str_eq(wrs_display_name(fn("_Z10k_pipelineILb0EEvPi")), "k_pipeline");
    wrs_function plain = {.name = (char *)"extern_c_kernel"};
    cr_expect_str_eq(wrs_display_name(&plain), "extern_c_kernel");
    cr_expect_null(plain.display);
}

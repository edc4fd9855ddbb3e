/*
 * SASS classification for the binary-instrumentation recorder (pure C, no
 * CUDA).  SANITIZER.md explains where it is used; the summary:
 *
 *  - wrs_parse() reads disassembly text as printed by `nvdisasm -c -g`
 *    (function labels, `.L_x_N:` local labels, hex PC comments such as 0080 between comment delimiters,
 *    `//## File "x.cu", line 42` line-info comments, backquoted branch
 *    targets) or by `cuobjdump -sass` (`Function : NAME` headers, hex
 *    encodings in trailing comments, numeric branch targets) into one table
 *    per function: PC (offset from the function start) -> classified
 *    instruction with its file:line.
 *  - wrs_classify_opcode() classifies one opcode with its modifiers
 *    (`ATOM.E.CAS.STRONG.GPU`, `LDS.U16`, `MEMBAR.SC.GPU` ...) into the
 *    event model's terms: memory operation, atomic operation, scope,
 *    strength/order, address space (or "generic": resolved at run time by
 *    the callback that fires), size, for fences their scope and order, and
 *    for barriers (BAR.*, UCGABAR_*) the threads gathered and the mode
 *    (sync, arrive, relaxed arrive, wait: format 1.3).
 *  - wrs_fence_between() answers, from the function's control-flow graph,
 *    whether every path from one PC to another passes a fence of at least a
 *    given scope (a must-analysis); YES, NO, or UNKNOWN when an indirect
 *    branch (BRX/JMX/JMP through a register) is on the way.
 */
#ifndef WARPRACE_SASS_CLASSIFY_H
#define WARPRACE_SASS_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an instruction is, as far as recording goes. */
typedef enum wrs_kind {
    WRS_K_OTHER = 0,
    WRS_K_LOAD,          /* LDG LDS LDL LD LDSM */
    WRS_K_STORE,         /* STG STS STL ST */
    WRS_K_ATOMIC,        /* ATOM ATOMG ATOMS (returns a value) */
    WRS_K_RED,           /* RED REDG REDS (no return value) */
    WRS_K_FENCE,         /* MEMBAR: an inter-thread memory fence */
    WRS_K_PROXY_FENCE,   /* FENCE.VIEW.ASYNC.*: orders proxies, not threads */
    WRS_K_BARRIER,       /* BAR.SYNC / BAR.RED / BAR.ARV ..., UCGABAR_ARV / UCGABAR_WAIT */
    WRS_K_WARPSYNC,      /* WARPSYNC */
    WRS_K_KIND_MAX
} wrs_kind;

/* Control flow of an instruction. */
typedef enum wrs_flow {
    WRS_F_NEXT = 0,      /* falls through */
    WRS_F_BRANCH,        /* BRA / JMP with a known target */
    WRS_F_EXIT,          /* EXIT / KILL: the thread ends */
    WRS_F_RET,           /* RET: back to the caller */
    WRS_F_CALL,          /* CALL: returns to the next instruction */
    WRS_F_INDIRECT       /* BRX / JMX / JMP through a register: unknown targets */
} wrs_flow;

/* Address space beyond wr_space: generic instructions (LD/ST/ATOM/RED)
 * are resolved at run time by the callback that fires.  Above
 * WR_SPACE_MAX, so that no wr_space (DSMEM = 3 since format 1.2) reads as
 * generic; san_events.c compares concrete spaces only. */
#define WRS_SPACE_GENERIC 0xfeu
#define WRS_SPACE_NONE 0xffu

/* A barrier instruction whose mode the classifier does not know (a BAR
 * form other than SYNC, SYNCALL, RED, ARV): the finisher keeps what the
 * callback implies and counts it, rather than guess. */
#define WRS_BARMODE_UNKNOWN 0xffu

typedef struct wrs_class {
    uint8_t kind;        /* wrs_kind */
    uint8_t op;          /* wr_mem_op (memory instructions) */
    uint8_t atomic_op;   /* wr_atomic_op (ATOMIC / RED) */
    uint8_t scope;       /* wr_scope: atomics, strong accesses, fences */
    uint8_t order;       /* wr_order */
    uint8_t space;       /* wr_space, WRS_SPACE_GENERIC, or WRS_SPACE_NONE */
    uint8_t size;        /* bytes per lane (memory instructions), 0 = unknown */
    uint8_t flow;        /* wrs_flow */
    uint8_t barmode;     /* barriers: wr_barrier_mode or WRS_BARMODE_UNKNOWN; their
                            `scope` is the wr_scope of the threads gathered
                            (BLOCK for BAR.*, CLUSTER for UCGABAR_*) */
    uint8_t scope_implied; /* atomics: no scope printed, `scope` is the default */
} wrs_class;

typedef struct wrs_insn {
    uint64_t pc;         /* offset from the function start */
    char opcode[48];     /* opcode with its modifiers, e.g. "ATOM.E.CAS.STRONG.GPU" */
    char operands[64];   /* the text after the opcode up to ';', trimmed
                            ("URZ, [UR6+0x8], UR4"), cut to 63 characters: a
                            text of 63 may be cut (wrs_mbarrier_init_count then
                            does not trust it) */
    wrs_class cls;
    uint8_t predicated;  /* guarded by @P / @!P (not @PT) */
    uint8_t cond_operand;/* BRA.U/BRA.DIV with a predicate operand: conditional */
    char pred[5];        /* the guard's text without '@' ("!UP0", "P1"); "" when
                            unpredicated, "?" when longer than fits */
    int64_t target;      /* branch target offset, -1 = none / unknown */
    int32_t file;        /* index into wrs_module.files, -1 = no line info */
    uint32_t line;
    /* The line of the innermost inlining frame in cooperative groups'
     * details/sync.h (the grid barrier's implementation: grid.sync()),
     * 0 = none or no -gi frames. */
    uint32_t grid_sync_line;
    /* BAR.* with immediate operands: the barrier id and the thread count
     * (-1: a register operand, or none written) */
    int32_t bar_id, bar_count;
} wrs_insn;

/* What a function holds that this path cannot record (seen on an H200:
 * the API reports no BAR.ARV, and the mbarrier instructions (SYNCS.*)
 * reach no patch this path uses): counted per function when it is parsed,
 * so that a launch can say so. */
typedef struct wrs_unrecorded {
    size_t bar_arrive;   /* BAR.ARV: a block barrier's ARRIVE */
    size_t mbarrier;     /* SYNCS.*: mbarrier init, arrive, try-wait */
} wrs_unrecorded;

typedef struct wrs_function {
    char *name;
    wrs_insn *insns;     /* sorted by pc */
    size_t n, cap;
    /* CFG, built lazily by wrs_fence_between */
    int cfg_built;
    int has_indirect;
    uint32_t *succ;      /* 2 per instruction, UINT32_MAX = none */
    /* grid.sync()'s two barrier lines in details/sync.h, found lazily by
     * wrs_grid_sync_role: 0 not yet looked, 1 found, -1 not two lines */
    int grid_lines;
    uint32_t grid_arrive_line, grid_wait_line;
    int has_grid_sync;   /* some instruction has a sync.h frame (set when parsed) */
    /* wrs_arrives_after's answers per instruction, made when first asked:
     * arrive_n[i] = how many (-1: not asked yet); the rest 4 per instruction */
    int8_t *arrive_n;
    uint32_t *arrive_ids, *arrive_counts;
    uint64_t *arrive_pcs;
    /* wrs_arrives_uninferred's answer + 1 (0: not asked yet) */
    size_t arrives_uninferred_1;
    /* the name as a report shows it (wrs_display_name), made once */
    char *display;
    wrs_unrecorded unrecorded;
} wrs_function;

typedef struct wrs_module {
    wrs_function *fns;
    size_t nfns, capfns;
    char **files;
    size_t nfiles, capfiles;
} wrs_module;


/* Classifies one opcode with its modifiers (no predicate, no operands). */
void wrs_classify_opcode(const char *opcode, wrs_class *out);

/* Parses disassembly text into *m (which must be zeroed or freshly
 * freed).  Returns 0, or -1 with a message "line N: ..." in err. */
int wrs_parse(const char *text, size_t len, wrs_module *m, char *err, size_t errlen);
void wrs_module_free(wrs_module *m);

const wrs_function *wrs_find_function(const wrs_module *m, const char *name);
/* The instruction at pc, or NULL. */
const wrs_insn *wrs_find_insn(const wrs_function *f, uint64_t pc);
/* The file name of an instruction, or NULL. */
const char *wrs_insn_file(const wrs_module *m, const wrs_insn *in);

typedef enum wrs_answer {
    WRS_NO = 0,          /* some path passes no such fence */
    WRS_YES = 1,         /* every path passes one */
    WRS_UNKNOWN = 2,     /* an indirect branch is reachable on the way */
    WRS_UNREACHABLE = 3  /* no path from pc1 to pc2 (or a PC is unknown) */
} wrs_answer;

/* Does every path that leaves the instruction at pc1 and first arrives at
 * the instruction at pc2 pass a fence (WRS_K_FENCE) of scope >= `scope`
 * (wr_scope)?  With sc_only, only MEMBAR.SC fences count.  pc1 == pc2
 * asks about the paths around a loop.  Callees of CALL are not entered
 * (a fence inside one is not seen: the answer errs towards NO). */
wrs_answer wrs_fence_between(wrs_function *f, uint64_t pc1, uint64_t pc2, unsigned scope,
                             int sc_only);

/* The block barrier arrivals (BAR.ARV) a warp makes after the
 * instruction at pc before its next record: the API reports no BAR.ARV,
 * so the finisher emits them after the record at pc.  Every path that
 * leaves pc must reach one and the same unpredicated BAR.ARV with
 * immediate id and count before any instruction that may record
 * (memory, barrier, warp sync, SYNCS.*), a call, an exit or an indirect
 * branch; then the same is asked from that BAR.ARV, up to max times.
 * Fills ids[], counts[] and, unless NULL, pcs[] (the BAR.ARVs' PCs),
 * returns how many (0: none certain). */
int wrs_arrives_after(wrs_function *f, uint64_t pc, uint32_t *ids, uint32_t *counts,
                      uint64_t *pcs, int max);
/* How many of f's BAR.ARV instructions no record leads to for certain
 * (wrs_arrives_after from any instruction that may record never names
 * them): those the sanitizer path cannot record. */
size_t wrs_arrives_uninferred(wrs_function *f);

/* What the instruction at pc is to a grid.sync() (cooperative groups'
 * sync_grids, seen through its -gi inlining frames in details/sync.h):
 * WRS_GRID_NONE (not inside one, or no frames), WRS_GRID_ARRIVE_BAR (the
 * block barrier before the block's arrival), WRS_GRID_WAIT_BAR (the block
 * barrier after the wait for every block: where the grid barrier
 * completes), WRS_GRID_PART (its atomics, polling loads, fences and warp
 * syncs).  The two barriers are told apart by their line in sync.h (the
 * arrival's comes first); a function whose sync.h barriers sit on fewer
 * or more than two lines gives WRS_GRID_UNKNOWN for all of them. */
enum { WRS_GRID_NONE = 0, WRS_GRID_ARRIVE_BAR, WRS_GRID_WAIT_BAR, WRS_GRID_PART,
       WRS_GRID_UNKNOWN };
int wrs_grid_sync_role(wrs_function *f, uint64_t pc);

/* The function's name as the device API's sites name theirs (__func__):
 * the bare identifier of its demangled name (`void k<true>(int*)` ->
 * `k`), found with the C++ runtime's __cxa_demangle where the process has
 * one; else, or for a name that is not mangled, the name itself. */
const char *wrs_display_name(wrs_function *f);
/* The bare identifier of a demangled C++ function name (buffer out of
 * outlen); exposed for tests. */
void wrs_bare_name(const char *demangled, char *out, size_t outlen);

const char *wrs_kind_name(unsigned kind);

/* The arrival count of an mbarrier init, recovered statically.  On sm_90
 * `mbarrier.init [addr], count` is `SYNCS.EXCH.64 URZ, [addr], UR4` (or
 * with R registers), whose 64-bit value pair (low UR4, high UR5) holds
 * low = (0x100000 - count) << 1.  If the instruction at pc is such a
 * SYNCS.EXCH.64, the low register of its value operand is evaluated by a
 * small backward constant evaluation within the straight-line code before
 * it (at most 256 instructions back): the walk stops, unknown, at a branch
 * target (a PC some branch of f lands on, the init's own included), at a
 * CALL, at an unconditional branch / EXIT / RET, or at a def it cannot
 * evaluate; a function with an indirect branch (BRX, JMX) is unknown
 * throughout.  Defs it evaluates (32-bit, wrapping):
 *   MOV / UMOV / MOV32I d, src
 *   IMAD / IMAD.MOV / IMAD.SHL / IMAD.IADD [.U32], UIMAD: d, a, b, c = a * b + c
 *   IMAD.WIDE[.U32], UIMAD.WIDE[.U32]: the low word d only, a * b + c's low
 *   IADD3 / UIADD3 d, [carry predicates,] a, b, c
 *   SHF.L.U32 / USHF.L.U32 d, s, n, RZ|URZ       (n < 32)
 *   [U]SHF.R.U32.HI / [U]SHF.R.S32.HI d, x, n, s = s >> n, logical /
 *                                   arithmetic, x ignored (n < 32)
 *   [U]SHF.R.U32 / [U]SHF.R.S32 d, s, n, RZ|URZ = s >> n (n < 32)
 *   LEA / ULEA d, [carry-out,] a, b, n = (a << n) + b (n immediate, < 32)
 *   LEA.HI / ULEA.HI d, [carry-out,] a, b, c, n = b + high word of
 *                                   ({c:a} << n); not the .X / .SX32 forms
 *   LOP3.LUT / ULOP3.LUT d, a, b, c, lut, !PT|!UPT
 *   LDC / ULDC d, c[0x0][off]; LDC.64 / ULDC.64 d, c[0x0][off] (d, d+1 get
 *                                   the words at off, off + 4)
 * where a source is an immediate (hex or decimal, maybe negative), RZ /
 * URZ, a register evaluated the same way (8 levels at most), or a constant
 * c[0x0][off] (as LDC reads it), maybe written -x or ~x.  A constant is
 * known only within the launch geometry, off (aligned to its width) and
 * every word read in 0x0..0x17: c[0x0][0x0], [0x4], [0x8] = blockDim.x /
 * y / z (ntid), [0xc], [0x10], [0x14] = gridDim.x / y / z (nctaid), and
 * only when the geometry is given (wrs_mbarrier_init_count_in); kernel
 * parameters (c[0x0][0x210] on), other offsets, other banks and register
 * offsets stay unknown.  Any other instruction that writes the register
 * as a destination (with its width: .64 / WIDE 2, .128 4, .256 8, MMA all
 * above), or a higher word of a wide def other than LDC.64 / ULDC.64's,
 * makes it unknown: S2R, a load, IMAD.HI, IADD3.X.  A
 * def guarded by a predicate counts only where the init carries the same
 * guard: the same text and value (no write of the predicate between), or
 * predicates that the same VOTE / VOTEU of one source value computed
 * (`VOTEU.ALL UP0, P0` and `VOTEU.ALL UP1, P0`, as ptxas writes them).
 * The count is 0x100000 - ((low >> 1) & 0xfffff), valid only with
 * 1 <= count <= 0xfffff and bit 0 of low clear.  Returns 1 with *count
 * set when known; 0 when not (no SYNCS.EXCH.64 at pc, or any of the
 * above), *count then untouched.  Never a count of 0.  f is not modified.
 *
 * geometry: {blockDim.x, blockDim.y, blockDim.z, gridDim.x, gridDim.y,
 * gridDim.z} of the launch the init runs in, read only during the call;
 * NULL when unknown, where any count that reads the launch geometry is
 * unknown.  A count recovered with a geometry holds for that launch only
 * (the same code in a launch of other dimensions may give another). */
int wrs_mbarrier_init_count_in(const wrs_function *f, uint64_t pc, const uint32_t geometry[6],
                               uint32_t *count);

/* wrs_mbarrier_init_count_in with no geometry (NULL): counts that depend
 * on the launch are unknown. */
int wrs_mbarrier_init_count(const wrs_function *f, uint64_t pc, uint32_t *count);

#ifdef __cplusplus
}
#endif
#endif

/* libFuzzer target for the SASS parser of the sanitizer path
 * (recorder/sanitizer/sass_classify.h): any bytes either parse or are
 * refused with "line N: ..." naming a line inside the input; a parsed
 * module's functions hold their instructions sorted by PC with opcode,
 * operand and guard texts terminated, and every question the finisher asks
 * of a function (fences between two PCs, bar.arrive after a PC, its
 * unrecorded arrivals, grid.sync() roles, an mbarrier init's count, with
 * and without a launch geometry) answers within its contract.  Any broken
 * promise aborts, so libFuzzer keeps the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sass_classify.h"
#include "warprace/event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_sass: %s\n", what);
        abort();
    }
}

static int terminated(const char *s, size_t cap)
{
    return memchr(s, 0, cap) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wrs_module m;
    memset(&m, 0, sizeof m);
    char err[256] = "";
    unsigned lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (wrs_parse((const char *)data, size, &m, err, sizeof err) != 0) {
        check(!strncmp(err, "line ", 5), "a refusal that names no line");
        unsigned line = (unsigned)strtoul(err + 5, NULL, 10);
        check(line >= 1 && line <= lines, "a refusal naming a line outside the input");
        wrs_module_free(&m);
        return 0;
    }
    static const uint32_t geometry[6] = {256, 4, 2, 80, 3, 1};
    for (size_t i = 0; i < m.nfns; i++) {
        wrs_function *f = &m.fns[i];
        check(f->name && wrs_find_function(&m, f->name) != NULL, "a function not found by name");
        char bare[64];
        wrs_bare_name(f->name, bare, sizeof bare);
        check(terminated(bare, sizeof bare), "a bare name not terminated");
        size_t n = f->n < 64 ? f->n : 64;   /* the questions are per pair: bounded */
        for (size_t k = 0; k < f->n; k++) {
            const wrs_insn *in = &f->insns[k];
            check(k == 0 || f->insns[k - 1].pc < in->pc, "instructions not sorted by PC");
            check(wrs_find_insn(f, in->pc) == in, "an instruction not found by its PC");
            check(terminated(in->opcode, sizeof in->opcode) &&
                      terminated(in->operands, sizeof in->operands) &&
                      terminated(in->pred, sizeof in->pred),
                  "an instruction's text not terminated");
            check(in->file < 0 || (size_t)in->file < m.nfiles, "a file index out of range");
        }
        for (size_t a = 0; a < n; a++) {
            uint64_t pc = f->insns[a].pc;
            uint64_t pc2 = f->insns[(a * 7 + 3) % f->n].pc;
            wrs_answer w = wrs_fence_between(f, pc, pc2, WR_SCOPE_BLOCK, (int)(a & 1));
            check(w <= WRS_UNREACHABLE, "a fence answer out of range");
            uint32_t ids[4], counts[4];
            uint64_t pcs[4];
            int got = wrs_arrives_after(f, pc, ids, counts, pcs, 4);
            check(got >= 0 && got <= 4, "arrivals out of range");
            for (int j = 0; j < got; j++)
                check(counts[j] > 0 && wrs_find_insn(f, pcs[j]) != NULL,
                      "an arrival without a count or an instruction");
            int role = wrs_grid_sync_role(f, pc);
            check(role >= WRS_GRID_NONE && role <= WRS_GRID_UNKNOWN, "a grid role out of range");
            uint32_t count = 0;
            if (wrs_mbarrier_init_count(f, pc, &count))
                check(count >= 1 && count <= 0xfffff, "an mbarrier count out of range");
            count = 0;
            if (wrs_mbarrier_init_count_in(f, pc, geometry, &count))
                check(count >= 1 && count <= 0xfffff, "an mbarrier count out of range");
        }
        check(wrs_arrives_uninferred(f) <= f->unrecorded.bar_arrive + f->n,
              "more uninferred arrivals than instructions");
        check(wrs_find_insn(f, UINT64_MAX) == NULL, "an instruction at no PC");
    }
    wrs_module_free(&m);
    return 0;
}

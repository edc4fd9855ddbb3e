/* fsm: all 1200 rows of analyzer/fsm25-transitions.csv, read at test time,
 * against the compiled table and through the engine's step function (the
 * labels are computed from packed shadow words, not passed in). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fsm.h"
#include "fsm25_table.h"

#ifndef WR_FSM_CSV
#error "WR_FSM_CSV (path of analyzer/fsm25-transitions.csv) must be defined by meson"
#endif

static const char *ACC[4] = {"R", "W", "BA", "GA"};
static const char *SYN[3] = {"U", "W", "B"};
static const char *REL[4] = {"S", "W", "B", "G"};

static int idx(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

typedef struct row {
    int st, acc, syn, rel, next;
} row;

static int load(row *rows, int max)
{
    FILE *fp = fopen(WR_FSM_CSV, "r");
    cr_assert_not_null(fp, "cannot open %s", WR_FSM_CSV);
    char line[256];
    cr_assert_not_null(fgets(line, sizeof line, fp));
    cr_assert_str_eq(line, "state,access,sync,relation,next\n");
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line)
            continue;
        char *f[5];
        char *save = NULL;
        int k = 0;
        for (char *t = strtok_r(line, ",", &save); t && k < 5; t = strtok_r(NULL, ",", &save))
            f[k++] = t;
        cr_assert_eq(k, 5, "bad row %d", n);
        cr_assert_lt(n, max);
        row *r = &rows[n++];
        r->st = idx(wr_fsm25_state_names, WR_FSM25_STATES, f[0]);
        r->acc = idx(ACC, 4, f[1]);
        r->syn = idx(SYN, 3, f[2]);
        r->rel = idx(REL, 4, f[3]);
        r->next = idx(wr_fsm25_state_names, WR_FSM25_STATES, f[4]);
        cr_assert(r->st >= 0 && r->acc >= 0 && r->syn >= 0 && r->rel >= 0 && r->next >= 0,
                  "unknown label in row %d: %s %s %s %s %s", n, f[0], f[1], f[2], f[3], f[4]);
    }
    fclose(fp);
    return n;
}

Test(fsm_table, csv_matches_compiled_table_all_1200)
{
    static row rows[1300];
    int n = load(rows, 1300);
    cr_assert_eq(n, 1200);
    static unsigned char seen[WR_FSM25_STATES][4][3][4];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        cr_assert_eq(seen[r->st][r->acc][r->syn][r->rel], 0, "duplicate row %d", i);
        seen[r->st][r->acc][r->syn][r->rel] = 1;
        cr_assert_eq(wr_fsm25_next[r->st][r->acc][r->syn][r->rel], r->next,
                     "row %d: %s,%s,%s,%s -> %s but table has %s", i, wr_fsm25_state_names[r->st],
                     ACC[r->acc], SYN[r->syn], REL[r->rel], wr_fsm25_state_names[r->next],
                     wr_fsm25_state_names[wr_fsm25_next[r->st][r->acc][r->syn][r->rel]]);
    }
    cr_assert_str_eq(wr_fsm25_state_names[WR_FSM25_INIT], "INIT");
    cr_assert_str_eq(wr_fsm25_state_names[WR_FSM25_RACE], "RACE");
}

/* The stored accessor: block 5, warp 3, lane 7 with counters (bc0, wc0); the
 * current accessor is derived to produce the row's relation and sync. */
static void drive(const row *r, unsigned bc0, unsigned wc0)
{
    uint32_t e = 9;
    uint64_t old = r->st == WR_FSM25_INIT ? 0 : wr_fsm_pack((unsigned)r->st, e, 7, 3, 5, bc0, wc0);
    uint32_t lane = 7, warp = 3, block = 5;
    switch (r->rel) {
    case WR_FSM_REL_W: lane = 8; break;
    case WR_FSM_REL_B: warp = 4; break;
    case WR_FSM_REL_G: block = 6; break;
    default: break;
    }
    unsigned bc = bc0, wc = wc0;
    if (r->syn == WR_FSM_SYNC_B)
        bc = bc0 + 1;
    else if (r->syn == WR_FSM_SYNC_W)
        wc = wc0 + 3;
    uint64_t cur = wr_fsm_pack(0, e, lane, warp, block, bc, wc);
    if (old) {
        cr_assert_eq(wr_fsm_relation(old, cur), (unsigned)r->rel);
        cr_assert_eq(wr_fsm_sync(old, cur), (unsigned)r->syn);
    }
    uint64_t nw = wr_fsm_step(old, cur, (unsigned)r->acc);
    cr_assert_eq(wr_fsm_state(nw), (unsigned)r->next, "%s,%s,%s,%s: expected %s, step gave %s",
                 wr_fsm25_state_names[r->st], ACC[r->acc], SYN[r->syn], REL[r->rel],
                 wr_fsm25_state_names[r->next], wr_fsm25_state_names[wr_fsm_state(nw)]);
    /* the new word records the current accessor */
    cr_assert_eq(wr_fsm_lane(nw), lane);
    cr_assert_eq(wr_fsm_warp(nw), warp);
    cr_assert_eq(wr_fsm_block(nw), block);
    cr_assert_eq(wr_fsm_bc(nw), bc & 0x7ffu);
    cr_assert_eq(wr_fsm_wc(nw), wc & 0x3ffu);
}

Test(fsm_table, step_function_follows_all_1200_rows)
{
    static row rows[1300];
    int n = load(rows, 1300);
    cr_assert_eq(n, 1200);
    for (int i = 0; i < n; i++) {
        drive(&rows[i], 10, 20);
        /* counters about to wrap: the modular comparison must still see growth */
        drive(&rows[i], 0x7ff, 0x3ff);
    }
}

Test(fsm_table, labels)
{
    uint64_t a = wr_fsm_pack(1, 3, 4, 5, 6, 100, 200);
    cr_assert_eq(wr_fsm_relation(a, wr_fsm_pack(0, 3, 4, 5, 6, 0, 0)), WR_FSM_REL_S);
    cr_assert_eq(wr_fsm_relation(a, wr_fsm_pack(0, 3, 31, 5, 6, 0, 0)), WR_FSM_REL_W);
    cr_assert_eq(wr_fsm_relation(a, wr_fsm_pack(0, 3, 4, 0, 6, 0, 0)), WR_FSM_REL_B);
    cr_assert_eq(wr_fsm_relation(a, wr_fsm_pack(0, 3, 4, 5, 7, 0, 0)), WR_FSM_REL_G);
    cr_assert_eq(wr_fsm_relation(a, wr_fsm_pack(0, 3, 4, 5, WR_FSM_HOST_BLOCK, 0, 0)), WR_FSM_REL_G);
    /* B wins over W; a count that fell behind is not growth */
    cr_assert_eq(wr_fsm_sync(a, wr_fsm_pack(0, 3, 4, 5, 6, 101, 201)), WR_FSM_SYNC_B);
    cr_assert_eq(wr_fsm_sync(a, wr_fsm_pack(0, 3, 4, 5, 6, 100, 201)), WR_FSM_SYNC_W);
    cr_assert_eq(wr_fsm_sync(a, wr_fsm_pack(0, 3, 4, 5, 6, 100, 200)), WR_FSM_SYNC_U);
    cr_assert_eq(wr_fsm_sync(a, wr_fsm_pack(0, 3, 4, 5, 6, 99, 199)), WR_FSM_SYNC_U);
}

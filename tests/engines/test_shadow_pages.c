/*
 * A shadow page cleared whole (wr_shadow_clear_page), as fsm's and
 * lockset's sweeps do when every epoch a page may hold drops: every cell
 * and every packed line's rep becomes zero, the count returned is the
 * cells that were not (a live rep counting for its 32 words), and which
 * lines are expanded does not change.  wr_shadow_nonzero_cells counts the
 * same without clearing.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "shadow.h"
#include "xalloc.h"

/* 16-byte cells whose rep expands to the same cell in every word */
typedef struct cell16 {
    uint64_t a, b;
} cell16;

static void expand16(void *cells, const void *rep)
{
    for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
        memcpy((cell16 *)cells + i, rep, sizeof(cell16));
}

static void expand8(void *cells, const void *rep)
{
    for (unsigned i = 0; i < WR_SHADOW_LINE_WORDS; i++)
        memcpy((uint64_t *)cells + i, rep, sizeof(uint64_t));
}

static bool page_all_zero(const wr_shadow_map *m, wr_shadow_page *p)
{
    for (unsigned l = 0; l < WR_SHADOW_LINES; l++) {
        const unsigned char *bytes = wr_shadow_line_packed(p, l)
            ? wr_shadow_line_rep(m, p, l)
            : wr_shadow_cells_at(m, p, (uint64_t)l << WR_SHADOW_LINE_SHIFT);
        size_t n = wr_shadow_line_packed(p, l) ? m->cell_bytes
                                               : WR_SHADOW_LINE_WORDS * m->cell_bytes;
        for (size_t k = 0; k < n; k++)
            if (bytes[k])
                return false;
    }
    return true;
}

Test(shadow_pages, clear_counts_cells_and_live_reps_then_zeroes_them)
{
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    wr_shadow_page *p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 1, 0, 0));
    /* line 0: packed, live rep (32 words); line 1: packed, zero rep */
    *(uint64_t *)wr_shadow_line_rep(m, p, 0) = 0x1234;
    /* line 2: expanded with three live words; line 31: expanded from a live rep */
    uint64_t *c2 = wr_shadow_cell(m, p, 2 * 32 + 0);
    c2[0] = 1;
    c2[5] = 1ull << 63;
    c2[31] = 7;
    *(uint64_t *)wr_shadow_line_rep(m, p, 31) = 0x99;
    (void)wr_shadow_cell(m, p, 31 * 32);
    uint32_t expanded = p->expanded;
    cr_assert_eq(expanded, (1u << 2) | (1u << 31));
    cr_assert_eq(wr_shadow_nonzero_cells(m, p), 32 + 3 + 32);
    cr_assert(!page_all_zero(m, p), "counting changes nothing");
    cr_assert_eq(wr_shadow_clear_page(m, p), 32 + 3 + 32);
    cr_assert(page_all_zero(m, p));
    cr_assert_eq(p->expanded, expanded, "lines stay as they were");
    cr_assert_eq(wr_shadow_nonzero_cells(m, p), 0);
    cr_assert_eq(wr_shadow_clear_page(m, p), 0);
    wr_shadow_free(m);
}

Test(shadow_pages, a_wide_cell_is_live_when_any_of_its_bytes_is)
{
    wr_shadow_map *m = wr_shadow_new(sizeof(cell16), expand16);
    wr_shadow_page *p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 3, 9, 0));
    cell16 *cells = wr_shadow_cell(m, p, 40);   /* line 1 */
    cells -= 40 % WR_SHADOW_LINE_WORDS;
    cells[0].b = 1;           /* only the second half */
    cells[1].a = 1;           /* only the first half */
    cells[2] = (cell16){0, 0};
    cells[31] = (cell16){5, 5};
    cell16 rep = {0, 2};
    memcpy(wr_shadow_line_rep(m, p, 7), &rep, sizeof rep);
    cr_assert_eq(wr_shadow_clear_page(m, p), 3 + 32);
    cr_assert(page_all_zero(m, p));
    wr_shadow_free(m);
}

static void count_page(wr_shadow_page *p, void *ctx)
{
    (void)p;
    (*(unsigned *)ctx)++;
}

static bool present(wr_shadow_map *m, uint8_t space, uint32_t launch, uint32_t block,
                    uint64_t word)
{
    return wr_shadow_lookup_slow(m, wr_shadow_key(space, launch, block, word), false) != NULL;
}

/* wr_shadow_drop_block removes every shared page of that block, wherever
 * in its shared memory (pages 0 and 3 here), and nothing of another
 * block, another launch's same block or global memory. */
Test(shadow_pages, a_blocks_shared_pages_go_and_no_other)
{
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    for (uint32_t b = 0; b < 2; b++)
        for (uint64_t pg = 0; pg < 4; pg += 3)
            (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 1, b,
                                                 pg * WR_SHADOW_PAGE_WORDS));
    (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 2, 0, 0));
    (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, 0));
    unsigned n = 0;
    wr_shadow_drop_block(m, 1, 0, count_page, &n);
    cr_assert_eq(n, 2, "block 0's two pages, each once");
    cr_assert_eq(m->count, 4);
    for (unsigned i = 0; i < WR_SHADOW_RECENT; i++)
        cr_assert_null(m->recent[i], "the cache of recent pages is emptied");
    cr_assert(!present(m, WR_SPACE_SHARED, 1, 0, 3 * WR_SHADOW_PAGE_WORDS));
    cr_assert(present(m, WR_SPACE_SHARED, 1, 1, 0) &&
              present(m, WR_SPACE_SHARED, 1, 1, 3 * WR_SHADOW_PAGE_WORDS));
    cr_assert(present(m, WR_SPACE_SHARED, 2, 0, 0) && present(m, WR_SPACE_GLOBAL, 0, 0, 0));
    n = 0;
    wr_shadow_drop_block(m, 1, 0, count_page, &n);
    cr_assert_eq(n, 0, "gone already");
    wr_shadow_free(m);
}

/* wr_shadow_drop_launch removes the shared pages of that launch, every one
 * that is still there (some went before, as a block exit drops its own),
 * and nothing else; the list of shared keys sheds the removed pages' keys
 * when it would grow, so it follows the live shared pages. */
Test(shadow_pages, a_launchs_shared_pages_go_whole_and_no_other)
{
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    for (uint32_t b = 0; b < 100; b++) {
        (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 1, b, 0));
        (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 1, b, WR_SHADOW_PAGE_WORDS));
    }
    for (uint32_t b = 0; b < 3; b++)
        (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 2, b, 0));
    (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, 0));
    (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, 5000));
    for (uint32_t b = 0; b < 50; b++)   /* block exits */
        wr_shadow_remove(m, wr_shadow_key(WR_SPACE_SHARED, 1, b, 0));
    cr_assert_eq(m->count, 150 + 3 + 2);

    unsigned n = 0;
    wr_shadow_drop_launch(m, 1, count_page, &n);
    cr_assert_eq(n, 150, "the pages still there, each once");
    for (unsigned i = 0; i < WR_SHADOW_RECENT; i++)
        cr_assert_null(m->recent[i], "the cache of recent pages is emptied");
    cr_assert_eq(m->count, 3 + 2);
    for (uint32_t b = 0; b < 100; b++)
        cr_assert(!present(m, WR_SPACE_SHARED, 1, b, 0) &&
                  !present(m, WR_SPACE_SHARED, 1, b, WR_SHADOW_PAGE_WORDS));
    for (uint32_t b = 0; b < 3; b++)
        cr_assert(present(m, WR_SPACE_SHARED, 2, b, 0), "launch 2's block %u", b);
    cr_assert(present(m, WR_SPACE_GLOBAL, 0, 0, 0) && present(m, WR_SPACE_GLOBAL, 0, 0, 5000));

    wr_shadow_drop_launch(m, 2, NULL, NULL);
    cr_assert_eq(m->count, 2);
    cr_assert_eq(m->nshared_keys, 0);

    /* 1,000 pages removed one by one, then 2,000 new: the list holds the
     * live ones only */
    for (uint32_t b = 0; b < 1000; b++)
        (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 3, b, 0));
    for (uint32_t b = 0; b < 1000; b++)
        wr_shadow_remove(m, wr_shadow_key(WR_SPACE_SHARED, 3, b, 0));
    for (uint32_t b = 0; b < 2000; b++)
        (void)wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 4, b, 0));
    cr_assert_eq(m->nshared_keys, 2000);
    n = 0;
    wr_shadow_drop_launch(m, 4, count_page, &n);
    cr_assert_eq(n, 2000);
    cr_assert_eq(m->count, 2);
    wr_shadow_free(m);
}

/* A shared page's cells begin an OS page at word 256 (offset 0x400, where
 * sm_90 puts a block's shared memory), so a tile of up to 512 words there
 * makes one OS page of 8-byte cells resident; global pages' cells begin
 * one at word 0.  (Under ASan pages are heap blocks: no placement.) */
Test(shadow_pages, shared_cells_begin_an_os_page_at_word_256)
{
    if (WR_UNDER_ASAN)
        return;
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    for (uint32_t b = 0; b < 600; b++) {   /* more than one slab's worth */
        wr_shadow_page *p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 1, b, 256));
        cr_assert_eq((uintptr_t)wr_shadow_cells_at(m, p, 256) % 4096, 0, "block %u", b);
        wr_shadow_page *g = wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, (uint64_t)b << 10));
        cr_assert_eq((uintptr_t)wr_shadow_cells_at(m, g, 0) % 4096, 0, "global page %u", b);
    }
    /* pages given back are reused for their own kind */
    wr_shadow_drop_launch(m, 1, NULL, NULL);
    wr_shadow_page *p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 2, 0, 256));
    cr_assert_eq((uintptr_t)wr_shadow_cells_at(m, p, 256) % 4096, 0);
    wr_shadow_free(m);
}

/* Split words (shadow.h, "Sub-word accesses"): the first byte-cell request
 * copies the word's cell into its four byte cells through the engine's
 * split function, once; later requests return the same cells.  Byte pages
 * go with their word pages: removed with a word page, dropped with a
 * launch or a block, visited by wr_shadow_foreach. */
static unsigned splits;

static void split8(void *bytes, const void *word, wr_shadow_page *byte_page, void *ctx)
{
    (void)byte_page;
    (void)ctx;
    splits++;
    for (unsigned i = 0; i < 4; i++)
        memcpy((uint64_t *)bytes + i, word, sizeof(uint64_t));
}

Test(shadow_pages, a_split_word_copies_its_cell_into_four_byte_cells_once)
{
    splits = 0;
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    uint64_t word = 5 * 1024 + 700;   /* page 5, in its third byte page */
    wr_shadow_page *p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, word));
    *(uint64_t *)wr_shadow_cell(m, p, word) = 0xabc;
    cr_assert(!wr_shadow_page_split(p));
    cr_assert(!wr_shadow_word_split(p, word));
    wr_shadow_page *bp;
    uint64_t *b = wr_shadow_byte_cells(m, p, word, split8, NULL, &bp);
    cr_assert_eq(splits, 1);
    cr_assert(wr_shadow_word_split(p, word));
    cr_assert(!wr_shadow_word_split(p, word + 1));
    cr_assert(!wr_shadow_word_split(p, word - 1));
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(b[i], 0xabc);
    b[2] = 0x77;
    uint64_t *again = wr_shadow_byte_cells(m, p, word, split8, NULL, NULL);
    cr_assert_eq(splits, 1, "a split word is split once");
    cr_assert_eq(again, b);
    cr_assert_eq(again[2], 0x77);
    /* the next word's byte cells follow: bytes are indexed by address */
    uint64_t *next = wr_shadow_byte_cells(m, p, word + 1, split8, NULL, NULL);
    cr_assert_eq(next, b + 4);
    cr_assert_eq(bp->key, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, word << 2));
    unsigned pages = 0;
    wr_shadow_foreach(m, count_page, &pages);
    cr_assert_eq(pages, 2, "the word page and one byte page");
    /* removing the word page removes its byte pages */
    wr_shadow_remove(m, p->key);
    pages = 0;
    wr_shadow_foreach(m, count_page, &pages);
    cr_assert_eq(pages, 0);
    /* a page made again starts unsplit, and its bytes fresh */
    p = wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, word));
    cr_assert(!wr_shadow_page_split(p));
    b = wr_shadow_byte_cells(m, p, word, split8, NULL, NULL);
    cr_assert_eq(b[2], 0);
    wr_shadow_free(m);
}

Test(shadow_pages, a_blocks_and_a_launchs_byte_pages_drop_with_their_shared_words)
{
    wr_shadow_map *m = wr_shadow_new(8, expand8);
    /* shared word 4095 of blocks 1 and 2 of launch 3: the top byte page of
     * a block's fourth word page (shared page keys keep launch and block) */
    uint64_t word = 4095;
    wr_shadow_page *p1 = wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 3, 1, word));
    wr_shadow_page *bp1;
    *(uint64_t *)wr_shadow_byte_cells(m, p1, word, split8, NULL, &bp1) = 1;
    wr_shadow_page *p2 = wr_shadow_get(m, wr_shadow_key(WR_SPACE_SHARED, 3, 2, word));
    *(uint64_t *)wr_shadow_byte_cells(m, p2, word, split8, NULL, NULL) = 2;
    wr_shadow_page *g = wr_shadow_get(m, wr_shadow_key(WR_SPACE_GLOBAL, 0, 0, word));
    (void)wr_shadow_byte_cells(m, g, word, split8, NULL, NULL);
    cr_assert_eq(bp1->key, wr_shadow_key(WR_SPACE_SHARED, 3, 1, word << 2));
    unsigned pages = 0;
    wr_shadow_foreach(m, count_page, &pages);
    cr_assert_eq(pages, 6);
    unsigned before = 0;
    wr_shadow_drop_block(m, 3, 1, count_page, &before);
    cr_assert_eq(before, 2, "the block's word page and its byte page");
    wr_shadow_drop_launch(m, 3, count_page, &before);
    cr_assert_eq(before, 4);
    pages = 0;
    wr_shadow_foreach(m, count_page, &pages);
    cr_assert_eq(pages, 2, "the global word page and its byte page stay");
    wr_shadow_free(m);
}

/*
 * engine_vc: classic happens-before race detection with vector clocks and
 * FastTrack-style epochs, scope-oblivious (semantics in ENGINES.md, "vc").
 *
 * The clocks and the synchronization model live in vclock.c, the shadow
 * cells in hbcore.c; this file decides what a race is: two conflicting
 * accesses (one writes), not both atomic, not ordered by happens-before.
 */
#include "engine.h"
#include "hbcore.h"

static bool vc_decide(wr_hbe *e, const wr_hb_warp *w, const wr_hb_prev *prev,
                      const wr_hb_ctx *cur, unsigned lane, uint8_t *verdict)
{
    if (prev->atomic && cur->kind == WR_KIND_ATOMIC)
        return false;   /* two atomics never race */
    if (wr_hbe_ordered(e, w, WR_HB_OBL, prev, lane))
        return false;
    *verdict = WR_VERDICT_NONE;
    return true;
}

static const wr_hb_checker vc_checker = {
    .layers = 1,
    .prune_layer = WR_HB_OBL,
    .intra_verdict = WR_VERDICT_NONE,
    .atomic_pairs_free_from = WR_SCOPE_BLOCK,
    .decide = vc_decide,
};

static void *vc_create(const wr_engine_config *cfg) { return wr_hbe_new(cfg, &vc_checker); }

static void vc_on_event(void *self, const wr_event *ev) { wr_hbe_event(self, ev); }

static void vc_finish(void *self) { (void)self; }

static uint64_t vc_shadow_words(void *self) { return wr_hbe_words(self); }

static void vc_destroy(void *self) { wr_hbe_free(self); }

const wr_engine_ops wr_engine_vc = {
    .name = "vc",
    .description = "happens-before with vector clocks and epochs (scope-oblivious)",
    .create = vc_create,
    .on_event = vc_on_event,
    .finish = vc_finish,
    .shadow_words = vc_shadow_words,
    .destroy = vc_destroy,
    .create_pass = wr_hbe_create_pass,
    .pass_param = &vc_checker,
    /* the 30 M stencil and gather traces, one worker (BENCHMARKS.md) */
    .lane_ns = 5.3f,
    .gather_lane_ns = 44.5f,
};

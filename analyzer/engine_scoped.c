/*
 * engine_scoped: scoped happens-before after ScoRD and the PTX scopes
 * (semantics in ENGINES.md, "scoped").
 *
 * Three clock layers run side by side over the same events (vclock.h):
 * scope-oblivious, scoped (a synchronization joins only when its scopes hold
 * both parties; orderings compose transitively, HRF-indirect) and
 * barrier-only (the orderings that also order weak accesses).  A conflicting
 * pair is classified:
 *   - ordered scoped, a weak access, not ordered by barriers/program order:
 *     WEAK_ACCESS (ScoRD: fences order strong accesses only);
 *   - two atomics whose scopes do not both hold both parties, unordered:
 *     SCOPE_ATOMIC (not on flag / lock words, which carried a release: their
 *     narrow scope is reported on the data they order);
 *   - ordered scope-obliviously but not scoped: the too-narrow
 *     synchronization on the path decides (SCOPE_FENCE, SCOPE_ATOMIC or
 *     SCOPE_LOCK for the lock idiom CAS+fence / fence+exch);
 *   - unordered even obliviously: MISSING_SYNC.
 */
#include "engine.h"
#include "hbcore.h"

static bool scoped_decide(wr_hbe *e, const wr_hb_warp *w, const wr_hb_prev *prev,
                          const wr_hb_ctx *cur, unsigned lane, uint8_t *verdict)
{
    bool both_atomic = prev->atomic && cur->kind == WR_KIND_ATOMIC;
    /* two atomics whose scopes hold both threads never race, ordered or
     * not: decided before the clocks are asked (a histogram's bins) */
    if (both_atomic) {
        unsigned pscope = wr_hbe_ctx(e, prev->ctx)->scope;
        unsigned narrower = pscope < cur->scope ? pscope : cur->scope;
        /* only warps issue atomics, and two warps are at most device apart */
        if (narrower >= WR_SCOPE_DEVICE)
            return false;
        unsigned rel = prev->unit == cur->unit
                           ? WR_SCOPE_BLOCK
                           : wr_hb_relation(wr_hbe_hb(e), prev->unit, cur->unit);
        if (narrower >= rel)
            return false;
    }
    if (wr_hbe_ordered(e, w, WR_HB_SCOPED, prev, lane)) {
        if (both_atomic || !(prev->weak || cur->weak))
            return false;
        if (wr_hbe_ordered(e, w, WR_HB_BAR, prev, lane))
            return false;
        *verdict = WR_VERDICT_WEAK_ACCESS;
        return true;
    }
    if (both_atomic) {
        /* the flag / lock word itself: its too-narrow scope shows as the
         * scope-fence / scope-lock race on the data it was meant to order */
        if (wr_hbe_cur_sync_word(e))
            return false;
        *verdict = WR_VERDICT_SCOPE_ATOMIC;
        return true;
    }
    if (wr_hbe_ordered(e, w, WR_HB_OBL, prev, lane)) {
        *verdict = w->narrow ? w->narrow : WR_VERDICT_SCOPE_FENCE;
        return true;
    }
    *verdict = WR_VERDICT_MISSING_SYNC;
    return true;
}

static const wr_hb_checker scoped_checker = {
    .layers = 3,
    .prune_layer = WR_HB_BAR,
    .intra_verdict = WR_VERDICT_MISSING_SYNC,
    .atomic_pairs_free_from = WR_SCOPE_DEVICE,
    .decide = scoped_decide,
};

static void *scoped_create(const wr_engine_config *cfg) { return wr_hbe_new(cfg, &scoped_checker); }

static void scoped_on_event(void *self, const wr_event *ev) { wr_hbe_event(self, ev); }

static void scoped_finish(void *self) { (void)self; }

static uint64_t scoped_shadow_words(void *self) { return wr_hbe_words(self); }

static void scoped_destroy(void *self) { wr_hbe_free(self); }

const wr_engine_ops wr_engine_scoped = {
    .name = "scoped",
    .description = "scoped happens-before (ScoRD, PTX scopes, HRF-indirect), classified",
    .create = scoped_create,
    .on_event = scoped_on_event,
    .finish = scoped_finish,
    .shadow_words = scoped_shadow_words,
    .destroy = scoped_destroy,
    .create_pass = wr_hbe_create_pass,
    .pass_param = &scoped_checker,
    .lane_ns = 5.5f,
    .gather_lane_ns = 46.7f,
};

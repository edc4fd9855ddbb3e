/* wr_store_run_from_replay (store_sqlite.h): a finished replay -> run row
 * data.  Kept apart from store_sqlite.c so that the store itself depends on
 * SQLite only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite.h"

/* ---- from a replay -------------------------------------------------------- */

typedef struct run_storage {
    wr_store_engine engines[WR_REPLAY_MAX_ENGINES];
    char engine_list[WR_REPLAY_MAX_ENGINES * 16];
    wr_store_launch *launches;
    char **kernel_names;   /* allocated names for launches without one */
    char **site_names;     /* each launch's host call site, allocated */
    wr_alloc *allocs;
} run_storage;

void wr_store_run_from_replay(wr_store_run *run, const wr_replay *rp, const char *trace_path,
                              const wr_resolved_race *races, size_t nraces)
{
    run_storage *ps = calloc(1, sizeof *ps);
    if (!ps)
        abort();
    const wr_replay_stats *st = wr_replay_get_stats(rp);
    const wr_header *h = wr_replay_header(rp);
    const wr_catalog *cat = wr_replay_catalog(rp);
    const wr_engine_ops *const *table = wr_replay_table(rp);

    run->priv_ = ps;
    run->trace_path = trace_path;
    run->trace_hash = st->trace_hash;
    run->trace_bytes = st->trace_bytes;
    run->device = h && h->device ? h->device : "";
    run->producer = h && h->producer ? h->producer : "";
    run->recorded_command = h && h->command ? h->command : "";
    run->sm_arch = h ? h->sm_arch : 0;
    run->threads = st->threads;
    run->events = st->events;
    run->accesses = st->accesses;
    run->thread_accesses = st->thread_accesses;
    run->launches = st->launches;
    run->lost_events = st->lost_events;
    run->truncated = st->truncated;
    run->decode_seconds = st->decode_seconds;
    run->wall_seconds = st->wall_seconds;
    run->peak_rss_bytes = st->peak_rss_bytes;

    size_t len = 0;
    for (unsigned e = 0; e < st->engine_count; e++) {
        wr_store_engine *se = &ps->engines[e];
        unsigned idx = st->engine_index[e];
        se->name = table[idx]->name;
        se->seconds = st->engine_seconds[e];
        se->shadow_words = st->shadow_words[e];
        for (size_t i = 0; i < nraces; i++)
            if (races[i].engine == idx) {
                se->races++;
                se->occurrences += races[i].count;
            }
        len += (size_t)snprintf(ps->engine_list + len, sizeof ps->engine_list - len, "%s%s",
                                e ? "," : "", se->name);
        if (len >= sizeof ps->engine_list)
            len = sizeof ps->engine_list - 1;
    }
    run->engines = ps->engine_list;
    run->engine = ps->engines;
    run->nengines = st->engine_count;

    const wr_replay_launch *l;
    size_t nl = wr_replay_launches(rp, &l);
    ps->launches = calloc(nl ? nl : 1, sizeof *ps->launches);
    ps->kernel_names = calloc(nl ? nl : 1, sizeof *ps->kernel_names);
    ps->site_names = calloc(nl ? nl : 1, sizeof *ps->site_names);
    if (!ps->launches || !ps->kernel_names || !ps->site_names)
        abort();
    for (size_t i = 0; i < nl; i++) {
        wr_store_launch *sl = &ps->launches[i];
        sl->launch = l[i].launch.launch;
        const wr_kernel *k = wr_catalog_kernel(cat, l[i].launch.kernel);
        if (k && k->name && k->name[0]) {
            sl->kernel = k->name;
        } else {
            if (asprintf(&ps->kernel_names[i], "kernel#%u", l[i].launch.kernel) < 0)
                abort();
            sl->kernel = ps->kernel_names[i];
        }
        memcpy(sl->grid, l[i].launch.grid, sizeof sl->grid);
        memcpy(sl->block, l[i].launch.block_dim, sizeof sl->block);
        sl->shared_bytes = l[i].launch.shared_bytes;
        sl->stream = l[i].launch.stream;
        sl->analysed = l[i].selected;
        if (l[i].site)
            ps->site_names[i] = wr_replay_site_name(rp, l[i].site);
        sl->site = ps->site_names[i] ? ps->site_names[i] : "";
    }
    run->launch = ps->launches;
    run->nlaunches = nl;

    uint32_t na = wr_catalog_alloc_count(cat);
    ps->allocs = calloc(na ? na : 1, sizeof *ps->allocs);
    if (!ps->allocs)
        abort();
    size_t m = 0;
    for (uint32_t id = 1; id <= na; id++) {
        const wr_alloc *a = wr_catalog_alloc(cat, id);
        if (a)
            ps->allocs[m++] = *a;
    }
    run->alloc = ps->allocs;
    run->nallocs = m;
    run->race = races;
    run->nraces = nraces;
}

void wr_store_run_release(wr_store_run *run)
{
    run_storage *ps = run->priv_;
    if (!ps)
        return;
    for (size_t i = 0; i < run->nlaunches; i++) {
        free(ps->kernel_names[i]);
        free(ps->site_names[i]);
    }
    free(ps->kernel_names);
    free(ps->site_names);
    free(ps->launches);
    free(ps->allocs);
    free(ps);
    run->priv_ = NULL;
}

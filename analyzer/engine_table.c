/*
 * The engine table, in the fixed order vc, scoped, lockset, fsm (wr_race.engine
 * and the database name engines by it).  Adding an engine = its file
 * (engine_<name>.c, listed in meson.build) and one line here.
 */
#include <string.h>

#include "engine.h"

extern const wr_engine_ops wr_engine_vc;
extern const wr_engine_ops wr_engine_scoped;
extern const wr_engine_ops wr_engine_lockset;
extern const wr_engine_ops wr_engine_fsm;

const wr_engine_ops *const wr_engines[] = {
    &wr_engine_vc,
    &wr_engine_scoped,
    &wr_engine_lockset,
    &wr_engine_fsm,
};

const unsigned wr_engine_count = sizeof(wr_engines) / sizeof(wr_engines[0]);

int wr_engine_find(const char *name)
{
    for (unsigned i = 0; i < wr_engine_count; i++)
        if (!strcmp(wr_engines[i]->name, name))
            return (int)i;
    return -1;
}

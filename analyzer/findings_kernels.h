/*
 * Launch -> kernel map for the findings collector (an extension of
 * finding.h, used by the replay driver).
 *
 * Engines report races by launch.  Without a map the collector keys each
 * side of a race by its launch id, so N launches of one kernel that race the
 * same way make N groups.  With a map (wr_findings_use_kernels) a side whose
 * launch is known is keyed by its kernel id instead, as finding.h's identity
 * says, so the number of groups does not grow with the number of launches;
 * the example keeps its launch ids.  Each worker of the driver keeps its own
 * map, filled from the launch events in trace order before the engines see
 * the launch's accesses, so collectors of all shards key alike and merge.
 */
#ifndef WARPRACE_FINDINGS_KERNELS_H
#define WARPRACE_FINDINGS_KERNELS_H

#include <stdint.h>

#include "finding.h"

typedef struct wr_launch_kernels wr_launch_kernels;

wr_launch_kernels *wr_launch_kernels_new(void);
void wr_launch_kernels_free(wr_launch_kernels *m);
/* Records that launch (>= 1) runs kernel (>= 1). */
void wr_launch_kernels_set(wr_launch_kernels *m, uint32_t launch, uint32_t kernel);
/* The kernel of launch, or 0 when unknown. */
uint32_t wr_launch_kernels_get(const wr_launch_kernels *m, uint32_t launch);

/* Keys the collector's sides by kernel through m (which must outlive f and
 * may keep growing).  Call before the first report. */
void wr_findings_use_kernels(wr_findings *f, const wr_launch_kernels *m);

#endif

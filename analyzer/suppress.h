/*
 * suppress.h: suppression files, as sanitizers have them.
 *
 * A suppression file names races the user has looked at and accepts (a
 * benign race, a library's code): `warprace analyze --suppressions FILE`
 * neither prints them nor counts them in its exit status, and `raceq
 * --suppressions FILE` leaves them out of every report.  The database
 * keeps every race either way: a suppression is a way of looking at the
 * findings, not a change to them.
 *
 * One rule per line; blank lines and lines whose first non-blank character
 * is '#' are ignored; surrounding blanks are dropped:
 *
 *   kernel:PATTERN   either side's kernel name ("host" for a host copy)
 *   site:PATTERN     either side's site: "file:line:function", "file:line",
 *                    "pc:0x...", or "?" (a side whose site is not known)
 *   race:PATTERN     either side's kernel or site
 *
 * PATTERN is a shell glob (fnmatch(3), no flags: '*' also matches '/'),
 * matched against the whole name: `site:*thrust*`, `kernel:reduce_*`,
 * `site:histo.cu:42:*`.  A race is suppressed by the first rule that
 * matches it.  A line that is not a rule is an error naming the file and
 * line; nothing is suppressed then (the caller stops).
 *
 * This module knows nothing of SQLite, engines or traces: it matches
 * strings, so that analyze and raceq apply exactly the same rules.
 */
#ifndef WARPRACE_SUPPRESS_H
#define WARPRACE_SUPPRESS_H

#include <stddef.h>

typedef struct wr_suppressions wr_suppressions;

/* Reads `path`.  NULL on error, with a message ("PATH:LINE: why" or
 * "PATH: why") in err[0 .. errlen). */
wr_suppressions *wr_suppressions_load(const char *path, char *err, size_t errlen);

/* The same from text in memory; `name` stands for the file in messages. */
wr_suppressions *wr_suppressions_parse(const char *name, const char *text, size_t len, char *err,
                                       size_t errlen);

void wr_suppressions_free(wr_suppressions *s);

/* The index of the first rule that matches a race between kernels k0, k1
 * at sites s0, s1 (any of them may be NULL: it matches nothing), or -1. */
int wr_suppressions_match(const wr_suppressions *s, const char *k0, const char *k1, const char *s0,
                          const char *s1);

size_t wr_suppressions_count(const wr_suppressions *s);

/* Rule i as written ("site:*thrust*") and its line in the file. */
const char *wr_suppressions_rule(const wr_suppressions *s, size_t i, unsigned *line);

#endif

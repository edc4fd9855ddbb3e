/*
 * Kernel names for reading: a C++ kernel's symbol (_Z9histogramPKfPj) as
 * its source spells it (histogram(float const*, unsigned int*)).
 *
 * For reading and for --kernels: a race's identity, the database and the
 * trace keep the symbol, which is what every run of the same program
 * records.  The demangler is the C++ runtime's own (__cxa_demangle from
 * libstdc++: the process's where it has one, else loaded when first
 * needed); where there is none, names stay as recorded.
 */
#ifndef WARPRACE_DEMANGLE_H
#define WARPRACE_DEMANGLE_H

#include <regex.h>
#include <stdbool.h>

/* Names longer than this are not demangled. */
#define WR_DEMANGLE_MAX 4096

/* The readable form of name, malloc'd: demangled when name is a C++
 * symbol the demangler takes (and at most WR_DEMANGLE_MAX bytes), else a
 * copy of name.  NULL only when out of memory. */
char *wr_demangle(const char *name);

/* Whether a demangler was found (it is looked for once). */
bool wr_demangler_available(void);

/* Whether a --kernels expression matches a kernel: its name as recorded
 * (the symbol) or as wr_demangle reads it, so that '^histogram\(' and
 * '_Z9histogram' both select _Z9histogramPKfPj. */
bool wr_kernel_matches(const regex_t *re, const char *name);

#endif

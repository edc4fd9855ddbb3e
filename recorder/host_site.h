/*
 * Where the recorded program called the CUDA API that a recorder callback
 * is reporting: the host call site of a copy or memset, so that a race
 * between a kernel and a host copy names the program's line on both sides.
 *
 * The callback runs on the program's thread, inside the CUDA libraries, so
 * the calling thread's stack reads, innermost first: the recorder's own
 * frames, the CUDA libraries' (libcuda, libcupti, libcudart, ...), the
 * statically linked CUDA runtime inside the program (functions named
 * cuda*, __cudart*, cudart::*), then the program.  The site is the first
 * frame after the first CUDA library frame that is neither in a CUDA
 * library (a shared object whose name begins with libcu, libnv or
 * libsanitizer) nor a runtime function by name.  A stack with no CUDA
 * library frame has no site (0): the recorder never guesses.
 *
 * Names come from addr2line (WARPRACE_ADDR2LINE, else `addr2line` on
 * PATH), one coprocess per module kept open for the run: function, source
 * file and line where the module has debug line information (-g or
 * -lineinfo), the function alone from the symbol table otherwise.  Without
 * addr2line, the dynamic symbol table (dladdr) names what it exports.  The
 * site's pc is the call's address in its module (the offset in a shared
 * object or a position-independent executable), so that a site reads the
 * same in every run whatever the load address.
 *
 * WARPRACE_HOST_SITES=0 turns the lookups off (every site 0, no stack
 * walked, no addr2line started).
 *
 * Not thread-safe: the recorders call it under their lock.
 */
#ifndef WARPRACE_RECORDER_HOST_SITE_H
#define WARPRACE_RECORDER_HOST_SITE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wrr_host_site {
    uint64_t pc;            /* the call's address in its module */
    const char *file;       /* source file, or "" when the module has no line information */
    uint32_t line;          /* 0 when unknown */
    const char *function;   /* demangled where addr2line ran, "" when unknown */
    const char *module;     /* the module's file name (no directory) */
    uint32_t ordinal;       /* 1, 2, ... in order of first sight (wrr_host_site_at) */
    uint32_t site_id;       /* the trace's site id once defined (wrr_host_site_trace_id) */
} wrr_host_site;

typedef struct wrr_host_sites wrr_host_sites;

wrr_host_sites *wrr_host_sites_new(void);
/* Ends the addr2line coprocesses and frees every site. */
void wrr_host_sites_free(wrr_host_sites *hs);

/* The calling thread's host call site, or NULL when its stack shows no
 * CUDA library frame or nothing beyond the CUDA frames.  The pointer stays
 * valid, and the same for the same call site, until wrr_host_sites_free. */
wrr_host_site *wrr_host_site_here(wrr_host_sites *hs);

/* The call site of a kernel launch (kernel: its symbol, as the launch
 * names it): as wrr_host_site_here, and past the two functions nvcc
 * generates for the <<<>>> syntax, the host function of the kernel's own
 * name (found by its name, demangled by wr_demangle, warprace/demangle.h)
 * and its __device_stub_.  A return address is
 * classified once, the first time it is seen: the same call instruction
 * always launches the same kernel, so the wrapper it calls is that
 * kernel's. */
wrr_host_site *wrr_host_site_launching(wrr_host_sites *hs, const char *kernel);

/* The same for a stack already captured (backtrace(3) return addresses,
 * innermost first): what wrr_host_site_here does after the capture. */
wrr_host_site *wrr_host_site_of(wrr_host_sites *hs, void *const *frames, int count);

/* The site of that ordinal, or NULL. */
wrr_host_site *wrr_host_site_at(const wrr_host_sites *hs, uint32_t ordinal);

/* Defines a source site in the trace (a wrr_sink's `site`: catalog id or 0). */
typedef uint32_t (*wrr_site_define_fn)(void *ctx, const char *file, uint32_t line,
                                       const char *function, uint64_t pc);
/* The trace's site id of s, defined through define at its first use;
 * 0 for NULL or when define fails (asked again next time). */
uint32_t wrr_host_site_trace_id(wrr_host_site *s, wrr_site_define_fn define, void *ctx);

/* How many addr2line lookups failed or timed out (the sites then come from
 * the dynamic symbol table), for the recorder's summary. */
unsigned long wrr_host_sites_resolver_failures(const wrr_host_sites *hs);

#ifdef __cplusplus
}
#endif
#endif

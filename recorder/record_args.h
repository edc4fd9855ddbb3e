/* `warprace record` options: parsing (plain C, unit-tested) and the
 * environment contract between the command and the injection library. */
#ifndef WARPRACE_RECORDER_RECORD_ARGS_H
#define WARPRACE_RECORDER_RECORD_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* Environment variables the command sets for the recorded program (the
 * injection library reads them; RECORDER.md lists them). */
#define WRR_ENV_OUT "WARPRACE_OUT"          /* trace path */
#define WRR_ENV_KERNELS "WARPRACE_KERNELS"  /* POSIX extended regex */
#define WRR_ENV_NVTX "WARPRACE_NVTX"        /* NVTX range name */
#define WRR_ENV_BUFFER "WARPRACE_BUFFER"    /* ring bytes */
#define WRR_ENV_DROP "WARPRACE_DROP"        /* "1": drop mode */
#define WRR_ENV_STATS "WARPRACE_STATS"      /* where to write the summary */
#define WRR_ENV_COMMAND "WARPRACE_COMMAND"  /* the recorded command line */
#define WRR_ENV_INJECT "WARPRACE_INJECT"    /* override: injection library */
#define WRR_ENV_DRAIN_THREADS "WARPRACE_DRAIN_THREADS" /* 1..WRR_MAX_DRAIN_THREADS */

/* How kernels are instrumented (--mode).  api: the program was built with the
 * source-level device API (warprace/device.cuh) and the CUPTI library
 * records it; sanitizer: unmodified binaries, patched at module load through
 * the Compute Sanitizer API (sanitizer/SANITIZER.md); auto: api when the
 * program carries the device API's marker, else sanitizer. */
typedef enum wrr_mode { WRR_MODE_AUTO = 0, WRR_MODE_API = 1, WRR_MODE_SANITIZER = 2 } wrr_mode;

/* The device API's per-module variable (device_logger.cuh); its name is in
 * the host binary's registration strings whenever the API is compiled in. */
#define WRR_API_MARKER "warprace_state"

#define WRR_DEFAULT_BUFFER (64ull << 20)
#define WRR_MIN_BUFFER (1ull << 10)          /* 64 slots */
#define WRR_MAX_BUFFER (16ull << 30)         /* 2^30 slots */

#define WRR_MAX_DRAIN_THREADS 16

typedef struct wrr_record_opts {
    const char *out;
    const char *kernels;
    const char *nvtx;
    uint64_t buffer_bytes;       /* a power of two */
    int drop;
    unsigned drain_threads;      /* 0: chosen by the recorder (wrr_drain_threads) */
    int mode;                    /* wrr_mode */
    int help;
    int app_argc;
    char **app_argv;             /* NULL-terminated (points into argv) */
} wrr_record_opts;

/* Parses `record` arguments (argv[0] is "record").  Returns 0 (also for
 * --help, with opts->help set) or -1 with a message in err. */
int wrr_record_parse(int argc, char **argv, wrr_record_opts *opts, char *err, size_t errlen);

/* "64M", "1G", "4096", "512k": bytes, rounded DOWN to a power of two, in
 * [WRR_MIN_BUFFER, WRR_MAX_BUFFER].  Returns 0 or -1. */
int wrr_parse_size(const char *s, uint64_t *out);

/* 1 if the file at path contains WRR_API_MARKER, 0 if not, -1 if it cannot
 * be read.  Reads the file in bounded blocks. */
int wrr_file_has_api_marker(const char *path);

/* The drain's threads: `asked` (the option or the environment's value;
 * NULL or empty = choose) if it is a number in 1..WRR_MAX_DRAIN_THREADS,
 * else a quarter of the `cpus` online, 1 to 4.  The drain has this many
 * converting workers and the writer as many compressing threads (on top
 * of the drain's own thread).  Returns 0 when `asked` is not a valid
 * count (then the choice). */
unsigned wrr_drain_threads(const char *asked, long cpus, int *valid);

/* log2 of the ring's slot count for a buffer of `bytes`. */
uint32_t wrr_buffer_log2cap(uint64_t bytes);

extern const char wrr_record_usage[];

#endif

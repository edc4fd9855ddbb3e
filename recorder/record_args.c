/* `warprace record` argument parsing. */
#include "record_args.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_format.h"

const char wrr_record_usage[] =
    "usage: warprace record -o OUT.wrt [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the warprace recorder injected and writes the memory and\n"
    "synchronization trace of its kernels to OUT.wrt.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   trace to write (required)\n"
    "  --kernels REGEX     record only kernels whose name matches (POSIX ERE; the\n"
    "                      symbol or the demangled name: '^histogram\\(')\n"
    "  --nvtx RANGE        record only inside NVTX ranges named RANGE\n"
    "  --buffer SIZE       device ring buffer size, e.g. 64M (default), 1G;\n"
    "                      rounded down to a power of two, 1K..16G\n"
    "  --drop              bounded overhead: when the buffer is full, drop and\n"
    "                      count plain loads and stores (written as lost-events\n"
    "                      markers) instead of making the GPU wait; atomics,\n"
    "                      fences and barriers still wait\n"
    "  --drain-threads N   host threads that convert and compress the trace\n"
    "                      while the program runs, 1..16 (default: a quarter\n"
    "                      of the CPUs, 1 to 4), each for conversion and for\n"
    "                      compression\n"
    "  --mode MODE         how kernels are instrumented: api (built with the\n"
    "                      device API, warprace/device.cuh; CUPTI), sanitizer\n"
    "                      (unmodified binaries, Compute Sanitizer patching),\n"
    "                      auto (default: api if PROGRAM carries the device\n"
    "                      API, else sanitizer)\n"
    "  -h, --help          this text\n";

int wrr_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        end++;
        if (*end == 'i')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return -1;
    }
    if (v > (WRR_MAX_BUFFER >> shift))
        return -1;
    v <<= shift;
    if (v < WRR_MIN_BUFFER)
        return -1;
    uint64_t p = 1;
    while (p * 2 <= v)
        p *= 2;
    *out = p;
    return 0;
}

int wrr_file_has_api_marker(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    /* blocks overlap by the marker's length so a match across a boundary counts */
    enum { BLOCK = 1 << 16, KEEP = sizeof WRR_API_MARKER - 2 };
    char *buf = malloc(BLOCK + KEEP);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t have = 0, n;
    int found = 0;
    while (!found && (n = fread(buf + have, 1, BLOCK, f)) > 0) {
        have += n;
        found = memmem(buf, have, WRR_API_MARKER, sizeof WRR_API_MARKER - 1) != NULL;
        size_t keep = have < KEEP ? have : KEEP;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    int failed = ferror(f);
    fclose(f);
    free(buf);
    return failed ? -1 : found;
}

unsigned wrr_drain_threads(const char *asked, long cpus, int *valid)
{
    *valid = 1;
    if (asked && *asked) {
        char *end;
        errno = 0;
        long v = strtol(asked, &end, 10);
        if (!errno && !*end && v >= 1 && v <= WRR_MAX_DRAIN_THREADS && asked[0] != '+')
            return (unsigned)v;
        *valid = 0;
    }
    long n = cpus / 4;
    return n < 1 ? 1u : n > 4 ? 4u : (unsigned)n;
}

uint32_t wrr_buffer_log2cap(uint64_t bytes)
{
    uint32_t l = 0;
    while ((WRR_SLOT_BYTES << (l + 1)) <= bytes)
        l++;
    return l;
}

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

int wrr_record_parse(int argc, char **argv, wrr_record_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->buffer_bytes = WRR_DEFAULT_BUFFER;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = 1;
            return 0;
        }
        if (!strcmp(a, "--drop")) {
            o->drop = 1;
            continue;
        }
        /* options with a value: "--opt VALUE", "--opt=VALUE", "-oVALUE" */
        const char *names[] = {"--output", "--kernels", "--nvtx", "--buffer", "--mode",
                               "--drain-threads"};
        int which = -1;
        if (!strncmp(a, "-o", 2) && a[1] == 'o' && strncmp(a, "--", 2)) {
            which = 0;
            if (a[2])
                val = a + 2;
        } else {
            for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
                size_t n = strlen(names[k]);
                if (!strncmp(a, names[k], n) && (a[n] == 0 || a[n] == '=')) {
                    which = k;
                    if (a[n] == '=')
                        val = a + n + 1;
                }
            }
        }
        if (which < 0) {
            if (a[0] == '-')
                return ERR("record: unknown option '%s' (see 'warprace record --help')", a);
            break;          /* the program, without "--" */
        }
        if (!val) {
            if (i + 1 >= argc)
                return ERR("record: option '%s' needs a value", a);
            val = argv[++i];
        }
        switch (which) {
        case 0:
            if (!*val)
                return ERR("record: the output file name is empty");
            if (!strcmp(val, "-"))   /* the recorded program writes there too */
                return ERR("record: -o -: the trace cannot go to standard output, which the "
                           "program writes to; give a file (or a named pipe that "
                           "'warprace analyze' reads)");
            o->out = val;
            break;
        case 1: {
            regex_t re;
            int rc = regcomp(&re, val, REG_EXTENDED | REG_NOSUB);
            if (rc) {
                char msg[128];
                regerror(rc, &re, msg, sizeof msg);
                return ERR("record: --kernels '%s' is not a valid regular expression: %s", val, msg);
            }
            regfree(&re);
            o->kernels = val;
            break;
        }
        case 2:
            if (!*val)
                return ERR("record: the --nvtx range name is empty");
            o->nvtx = val;
            break;
        case 3:
            if (wrr_parse_size(val, &o->buffer_bytes) != 0)
                return ERR("record: --buffer '%s' is not a size between 1K and 16G "
                           "(a number with an optional K, M or G suffix)", val);
            break;
        case 4:
            if (!strcmp(val, "auto"))
                o->mode = WRR_MODE_AUTO;
            else if (!strcmp(val, "api"))
                o->mode = WRR_MODE_API;
            else if (!strcmp(val, "sanitizer"))
                o->mode = WRR_MODE_SANITIZER;
            else
                return ERR("record: --mode '%s' is not one of auto, api, sanitizer", val);
            break;
        case 5: {
            int valid;
            o->drain_threads = wrr_drain_threads(val, 1, &valid);
            if (!valid)
                return ERR("record: --drain-threads '%s' is not a number between 1 and %d", val,
                           WRR_MAX_DRAIN_THREADS);
            break;
        }
        }
    }
    if (!o->out)
        return ERR("record: no output file: give -o OUT.wrt");
    if (i >= argc)
        return ERR("record: no program to run: give it after '--' "
                   "(warprace record -o OUT.wrt -- ./app args)");
    o->app_argc = argc - i;
    o->app_argv = argv + i;
    return 0;
}

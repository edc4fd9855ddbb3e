/* `warprace info FILE`: what a trace holds and whether it is sound. */
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "format_internal.h"

static void info_usage(FILE *out)
{
    fprintf(out,
            "usage: warprace info [--kernels-max N] FILE.wrt\n\n"
            "Prints a trace's header (producer, device, host, time, command), its kernels\n"
            "and allocations, chunk and event counts (per kind), bytes per event, the\n"
            "compression ratio, lost events and the integrity status.\n\n"
            "  --kernels-max N   list at most N kernels / allocations (default 50)\n\n"
            "exit status: 0 sound, 1 truncated or corrupt, 2 usage error or unreadable file\n");
}

static void print_time(int64_t ns)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    char buf[64];
    if (gmtime_r(&s, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm))
        printf("%s.%09" PRId64 "Z", buf, ns % 1000000000 < 0 ? -(ns % 1000000000) : ns % 1000000000);
    else
        printf("%" PRId64 " ns", ns);
}

int wr_cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    unsigned long list_max = 50;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            info_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--kernels-max") && i + 1 < argc) {
            char *end;
            list_max = strtoul(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "warprace info: --kernels-max needs a number\n");
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "warprace info: unknown option '%s'\n", argv[i]);
            info_usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "warprace info: one trace at a time\n");
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        info_usage(stderr);
        return 2;
    }
    wr_error err = {0};
    wr_reader *r = wr_reader_open(path, &err);
    if (!r) {
        fprintf(stderr, "warprace info: %s\n", err.msg);
        /* a regular file that opens but does not read as a trace (a bad
         * header, a file ending inside it) is corrupt: 1, as verify says;
         * one that cannot be opened or read: 2 */
        struct stat sb;
        FILE *f = strcmp(path, "-") ? fopen(path, "rb") : NULL;
        bool corrupt = f && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode);
        if (f)
            fclose(f);
        return corrupt ? 1 : 2;
    }
    const wr_header *h = wr_reader_header(r);
    if (wr_reader_stats_get(r)->streamed)   /* its size is known at its end (below) */
        printf("file          %s (a stream)\n", wr_reader_path(r));
    else
        printf("file          %s (%" PRIu64 " bytes)\n", path, wr_reader_stats_get(r)->file_bytes);
    printf("format        %u.%u\n", h->version_major, h->version_minor);
    printf("producer      %s %s\n", h->producer, h->producer_version);
    printf("device        %s (sm_%u, warp %u, %u kHz)\n", h->device, h->sm_arch, h->warp_size,
           h->clock_khz);
    printf("host          %s\n", h->host);
    printf("recorded      ");
    print_time(h->time_unix_ns);
    printf("\ncommand       %s\n", h->command);

    /* Reading every chunk is the integrity check, and gives the counts. */
    wr_batch b;
    int rc;
    while ((rc = wr_reader_next(r, &b, &err)) == 1)
        wr_batch_release(&b);
    const wr_reader_stats *st = wr_reader_stats_get(r);
    wrf_reader_detail_stats d;
    wrf_reader_detail(r, &d);
    const wr_catalog *c = wr_reader_catalog(r);

    uint32_t nk = wr_catalog_kernel_count(c);
    printf("kernels       %u\n", nk);
    for (uint32_t id = 1; id <= nk && id <= list_max; id++)
        printf("  %-5u %s\n", id, wr_catalog_kernel(c, id)->name);
    if (nk > list_max)
        printf("  ... %lu more\n", (unsigned long)(nk - list_max));
    uint32_t na = wr_catalog_alloc_count(c);
    printf("allocations   %u\n", na);
    for (uint32_t id = 1; id <= na && id <= list_max; id++) {
        const wr_alloc *a = wr_catalog_alloc(c, id);
        printf("  %-5u %-6s 0x%012" PRIx64 " %12" PRIu64 " bytes  %s\n", id,
               wr_space_name(a->space), a->base, a->size, a->name[0] ? a->name : "-");
    }
    if (na > list_max)
        printf("  ... %lu more\n", (unsigned long)(na - list_max));
    printf("sites         %u\n", wr_catalog_site_count(c));
    printf("modules       %u\n", wr_catalog_module_count(c));
    printf("chunks        %" PRIu64 " (%" PRIu64 " event, %" PRIu64 " metadata%s",
           st->chunks, st->event_chunks, d.metadata_chunks, st->has_footer ? ", 1 index" : "");
    if (d.other_chunks)
        printf(", %" PRIu64 " of unknown types skipped", d.other_chunks);
    printf(")\n");
    if (st->streamed && rc == 0)
        printf("stream bytes  %" PRIu64 "\n", st->file_bytes);
    printf("events        %" PRIu64 "\n", st->events);
    for (unsigned k = 1; k <= WR_EV_KIND_MAX; k++)
        if (d.kind_counts[k])
            printf("  %-13s %" PRIu64 "\n", wr_event_kind_name(k), d.kind_counts[k]);
    if (st->events)
        printf("event bytes   %" PRIu64 " raw, %" PRIu64 " stored, %.1f raw bytes/event, "
               "%.2f stored bytes/event\n",
               d.event_raw_bytes, d.event_stored_bytes, (double)d.event_raw_bytes / (double)st->events,
               (double)d.event_stored_bytes / (double)st->events);
    printf("compression   %.2fx (%" PRIu64 " raw / %" PRIu64 " stored payload bytes, all chunks)\n",
           st->compressed_bytes ? (double)st->raw_bytes / (double)st->compressed_bytes : 1.0,
           st->raw_bytes, st->compressed_bytes);
    printf("lost events   %" PRIu64 "%s\n", st->lost_events,
           st->lost_events ? "  (the recorder dropped events: results may miss races)" : "");
    int status;
    if (rc < 0) {
        printf("integrity     CORRUPT: %s\n", err.msg);
        status = 1;
    } else if (st->truncated) {
        printf("integrity     TRUNCATED at offset %" PRIu64 " (%" PRIu64
               " bytes of incomplete tail%s); everything before is sound\n",
               st->truncated_at, st->truncated_bytes, st->truncated_bytes ? "" : ", no footer");
        status = 1;
    } else {
        printf("integrity     ok (every checksum verified, footer index matches)\n");
        status = 0;
    }
    wr_reader_close(r);
    return status;
}

/* warprace: record CUDA traces and find races in them.  Subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "warprace_version.h"

/* One line per command; each module adds its own. */
static const wr_command commands[] = {
    /* WR_COMMAND_TABLE */
    {"analyze", "replay a trace through the race engines, store the findings in SQLite", wr_cmd_analyze},
    {"asm", "assemble a text trace (formats/TEXT.md) into a .wrt file", wr_cmd_asm},
    {"check", "run a CUDA program, record it and print its races (record, then analyze)", wr_cmd_check},
    {"dump", "print a .wrt trace as text (formats/TEXT.md)", wr_cmd_dump},
    {"info", "header, kernels, allocations, chunks, sizes, integrity of a trace", wr_cmd_info},
    {"record", "run a CUDA program and record its trace (needs a CUDA build)", wr_cmd_record},
    {"verify", "check every byte of a trace; exit 0 only if it is sound", wr_cmd_verify},
};

static const size_t command_count = sizeof(commands) / sizeof(commands[0]);

static void usage(FILE *out)
{
    fprintf(out, "warprace %s: record CUDA memory traces, find data races in them\n\n"
                 "usage: warprace COMMAND [ARGS]\n       warprace COMMAND --help\n\ncommands:\n",
            WARPRACE_VERSION);
    for (size_t i = 0; i < command_count; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "  %-9s %s\n", "help", "this text");
    fprintf(out, "  %-9s %s\n", "version", "print the version");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
        if (argc > 2) {
            for (size_t i = 0; i < command_count; i++)
                if (!strcmp(commands[i].name, argv[2])) {
                    char help[] = "--help";
                    char *hargv[] = {argv[2], help, NULL};
                    return commands[i].run(2, hargv);
                }
            fprintf(stderr, "warprace: no command '%s'\n", argv[2]);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "version") || !strcmp(name, "--version")) {
        printf("warprace %s\n", WARPRACE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < command_count; i++)
        if (!strcmp(commands[i].name, name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "warprace: unknown command '%s' (try 'warprace help')\n", name);
    return 2;
}

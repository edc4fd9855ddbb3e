/*
 * The subcommands of the `warprace` program.  Each module implements its own
 * commands (formats: asm dump info verify; analyzer: analyze, and check,
 * which runs record then analyze; recorder: record); analyzer/warprace.c
 * dispatches.  A command returns the process
 * exit status: 0 success, 1 "found something" (races, corruption), 2 usage
 * or input error.  `argv[0]` is the subcommand name.
 */
#ifndef WARPRACE_COMMANDS_H
#define WARPRACE_COMMANDS_H

typedef struct wr_command {
    const char *name;
    const char *summary;            /* one line for `warprace help` */
    int (*run)(int argc, char **argv);
} wr_command;

int wr_cmd_asm(int argc, char **argv);
int wr_cmd_dump(int argc, char **argv);
int wr_cmd_info(int argc, char **argv);
int wr_cmd_verify(int argc, char **argv);
int wr_cmd_analyze(int argc, char **argv);
int wr_cmd_record(int argc, char **argv);
/* record, then analyze, one run of a program (analyzer/cmd_check.c) */
int wr_cmd_check(int argc, char **argv);

#endif

/*
 * SQL files embedded into the program by queries/embed_sql.py (see there).
 * Shared by the analyzer (schema) and raceq (reports).
 */
#ifndef WARPRACE_EMBEDDED_SQL_H
#define WARPRACE_EMBEDDED_SQL_H

#ifndef WR_SQL_FILE_DEFINED
#define WR_SQL_FILE_DEFINED
struct wr_sql_file {
    const char *name;   /* file name without directory and ".sql" */
    const char *text;   /* the file's bytes */
};
#endif

#define WR_SQL_FILES_DECLARE(sym) \
    extern const struct wr_sql_file sym[]; \
    extern const unsigned sym##_count

#endif

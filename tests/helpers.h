/* helpers.h -- what the test suites share: running pgcc in-process, files, parsing. */
#ifndef PGCC_TEST_HELPERS_H
#define PGCC_TEST_HELPERS_H

#include <check.h>
#include <stdlib.h>

#include "pgcc.h"

typedef struct {
  int status;
  char *out, *err; /* everything pgcc printed (malloc'd) */
} Run;

/* Runs pgcc_main with the given arguments (NULL-terminated), capturing its streams. */
Run run_pgcc(const char *arg, ...);
void run_free(Run *r);

/* The whole file, NUL-terminated (malloc'd); NULL if it cannot be read. */
char *slurp(const char *path, size_t *len);
bool file_exists(const char *path);

/* The index of the first nonzero byte of n at p, or n if all are zero.  Large
 * buffers are checked with this and one assertion, not an assertion per byte: each
 * passing Check assertion writes to a pipe, which under a sanitizer on a slow
 * machine turned a 4 MiB check into a timeout. */
size_t first_nonzero(const void *p, size_t n);

/* Parses text in the given dialect into a program; diagnostics go to *diags. */
typedef struct {
  PgArena *arena;
  PgProgram *prog;
  PgDiag diag;
  char *diags;
  size_t diags_len;
  FILE *stream;
} Parsed;
Parsed *parse_text(const char *name, const char *text);
void parsed_free(Parsed *p);

/* The node with this name, or NULL. */
PgNode *find_node(const PgProgram *p, const char *name);
/* Writes the program's .graph text into a malloc'd string. */
char *graph_text(const PgProgram *p);

Suite *arena_suite(void);
Suite *record_suite(void);
Suite *diag_suite(void);
Suite *dot_suite(void);
Suite *graph_suite(void);
Suite *verify_suite(void);
Suite *corpus_suite(void);
Suite *malformed_suite(void);
Suite *cli_suite(void);
Suite *partition_suite(void);
Suite *fuzz_suite(void);
Suite *signatures_suite(void);
Suite *safetensors_suite(void);
Suite *half_suite(void);
Suite *widen_suite(void);

#endif

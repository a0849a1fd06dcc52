/*
 * fuzz_pipeline.c -- libFuzzer target for the whole of pgcc short of code
 * generation: any bytes go through load checks, dialect detection, the frontend,
 * the verifier, the passes and every writer.  Built three ways (Makefile, `make
 * fuzz`): FUZZ_DIALECT=1 forces the DOT frontend, 2 the .graph one, 0 detects.
 *
 * Besides crashes, sanitizer reports and hangs, one property is checked: whatever
 * pgcc accepts, it writes as .graph text that reads back to the same text.  The C
 * emitter runs too, on whatever its check accepts.
 */
#include "fuzz_passes.h"
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_DIALECT
#define FUZZ_DIALECT 0
#endif

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static PgProgram *read_any(PgArena *a, PgDiag *d, const PgSource *src) {
  PgLoc where;
  PgDialect dialect = FUZZ_DIALECT == 1 ? PG_DIALECT_DOT : FUZZ_DIALECT == 2 ? PG_DIALECT_GRAPH
                                                                           : pg_detect_dialect(src, &where);
  if (dialect == PG_DIALECT_DOT) return pg_dot_read(a, d, src);
  if (dialect == PG_DIALECT_GRAPH) return pg_graph_read(a, d, src);
  return NULL;
}

static char *write_graph(const PgProgram *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  pg_graph_write(p, f, NULL);
  fclose(f);
  return buf;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size > 1 << 20) return 0;
  static FILE *devnull;
  if (!devnull) devnull = fopen("/dev/null", "w");
  char *text = fuzz_text(data, size);
  if (!text) return 0;

  PgArena *a = pg_arena_new();
  PgDiag d = {.out = devnull, .max_errors = 20};
  PgSource *src = pg_source_from_string(a, "fuzz", text);
  PgProgram *p = read_any(a, &d, src);
  if (p && d.errors == 0 && pg_verify(p, &d) == 0) {
    fuzz_passes(p, &d, true);
    PgReportInfo info = {"fuzz", &pg_profile_h200, 1000};
    pg_report_text(p, &info, devnull);
    pg_report_json(p, &info, devnull);
    pg_dot_write(p, devnull);
    PgDiag quiet = {.out = devnull};
    if (pg_c_check(p, &quiet) == 0) { /* the C emitter, on whatever it accepts */
      pg_emit_c(p, "fuzz", "fuzz", devnull);
      pg_emit_h(p, "fuzz", devnull);
    }

    /* the fixed point: written .graph text reads back and writes the same */
    size_t n1, n2;
    char *g1 = write_graph(p, &n1);
    PgArena *b = pg_arena_new();
    PgDiag d2 = {.out = stderr, .max_errors = 20};
    PgProgram *q = pg_graph_read(b, &d2, pg_source_from_string(b, "again", g1));
    if (!q || d2.errors || pg_verify(q, &d2)) PG_BUG("pgcc cannot read the .graph it wrote:\n%s", g1);
    char *g2 = write_graph(q, &n2);
    if (n1 != n2 || memcmp(g1, g2, n1) != 0) PG_BUG("writing the .graph again changed it:\n%s\n----\n%s", g1, g2);
    free(g1);
    free(g2);
    pg_arena_free(b);
  }
  pg_arena_free(a);
  free(text);
  return 0;
}

/*
 * fuzz_passes.h -- the passes pgcc's driver runs after the checks (compiler/driver.c), in
 * its order and with its defaults bar `device_update`, for the fuzz targets: a verifier
 * between them, where a pass that breaks a verified program is a bug (PG_BUG aborts, which
 * libFuzzer reports); and the input as text (fuzz_text).  Included by fuzz_pipeline.c
 * and fuzz_c.c.
 */
#ifndef FUZZ_PASSES_H
#define FUZZ_PASSES_H

#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated copy (the caller frees it), or NULL where it is not text
 * as pg_source_load insists: the same checks, on the bytes. */
static inline char *fuzz_text(const unsigned char *data, size_t size) {
  for (size_t i = 0; i < size; i++) {
    unsigned char c = data[i];
    if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f)
      return NULL;
  }
  char *text = malloc(size + 1);
  if (!text) return NULL;
  memcpy(text, data, size);
  text[size] = 0;
  return text;
}

static inline void fuzz_passes(PgProgram *p, PgDiag *d, bool device_update) {
  pg_stage_collectives(p);
  pg_classify(p);
  pg_rename(p);
  pg_schedule(p);
  if (pg_verify(p, d) > 0) PG_BUG("rename or schedule broke a verified program");
  pg_partition(p);
  pg_verify_regions(p, d);
  pg_cost(p, &pg_profile_h200, 1000, device_update);
  pg_memplan(p);
  if (pg_verify(p, d) > 0) PG_BUG("a pass broke a verified program");
  pg_widen(p, &pg_profile_h200);
  if (pg_verify(p, d) > 0) PG_BUG("widen broke a verified program");
  pg_prioritize(p, &pg_profile_h200); /* (--priorities: on every program here) */
}

#endif

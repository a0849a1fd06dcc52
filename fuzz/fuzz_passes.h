/*
 * fuzz_passes.h -- the passes pgcc's driver runs after the checks (compiler/driver.c), in
 * its order and with its defaults bar `device_update`, for the fuzz targets: a verifier
 * between them, where a pass that breaks a verified program is a bug (PG_BUG aborts, which
 * libFuzzer reports).  Included by fuzz_pipeline.c and fuzz_c.c.
 */
#ifndef FUZZ_PASSES_H
#define FUZZ_PASSES_H

#include "pgcc.h"

static inline void fuzz_passes(PgProgram *p, PgDiag *d, bool device_update) {
  pg_stage_collectives(p);
  pg_classify(p);
  pg_schedule(p);
  if (pg_verify(p, d) > 0) PG_BUG("schedule broke a verified program");
  pg_partition(p);
  pg_verify_regions(p, d);
  pg_cost(p, &pg_profile_h200, 1000, device_update);
  pg_memplan(p);
  if (pg_verify(p, d) > 0) PG_BUG("a pass broke a verified program");
  pg_widen(p, &pg_profile_h200);
  if (pg_verify(p, d) > 0) PG_BUG("widen broke a verified program");
}

#endif

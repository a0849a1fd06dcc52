/*
 * safetensors.c -- reads the header of a safetensors file of weights: eight bytes
 * of little-endian header length, then a JSON object mapping each tensor's name to
 * its dtype, shape and data offsets (after the header), then the data.  pgcc reads
 * only the header, to check each weight buffer against its tensor and to give the
 * generated C the tensor's place in the file; libpgrt reads the data at init.
 *
 * The JSON is read by runtime/st_header.h, the reader libpgrt uses too, so that pgcc
 * needs no library beyond libc.  pgcc keeps each tensor's dtype and data_offsets.
 */
#include "pgcc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/st_header.h"

#define HEADER_MAX (100u << 20) /* the format's own limit */

static const struct {
  const char *st;
  PgType t;
} dtypes[] = {{"F64", PG_T_F64}, {"F32", PG_T_F32}, {"F16", PG_T_F16}, {"BF16", PG_T_BF16}, {"I64", PG_T_I64},
              {"I32", PG_T_I32}, {"I16", PG_T_I16}, {"I8", PG_T_I8},   {"U64", PG_T_U64},   {"U32", PG_T_U32},
              {"U16", PG_T_U16}, {"U8", PG_T_U8},   {"BOOL", PG_T_BOOL}};

static PgType dtype_of(const char *s) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (strcmp(s, dtypes[i].st) == 0) return dtypes[i].t;
  return PG_T_BYTES; /* a dtype pgcc has no name for (F8_E4M3, ...): bytes */
}

typedef struct {
  PgArena *a;
  PgDiag *d;
  PgLoc loc;
  PgWeights *w;
} Reader;

/* One tensor's entry (st_parse's callback): into w->tensors, or a diagnostic and 1
 * (stop). */
static int take_tensor(void *ctx, const st_tensor *t) {
  Reader *r = ctx;
  if (!t->is_object) {
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' is not an object", r->w->path, t->name);
    return 1;
  }
  if (!t->dtype || t->n_offsets != 2) {
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' has no dtype or data_offsets [begin, end]", r->w->path,
             t->name);
    return 1;
  }
  uint64_t data_bytes = r->w->file_size - 8 - r->w->header_len;
  const int64_t *off = t->offsets;
  if (off[0] < 0 || off[1] < off[0] || (uint64_t)off[1] > data_bytes) {
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' has data_offsets [%lld, %lld] outside the %llu bytes of data",
             r->w->path, t->name, (long long)off[0], (long long)off[1], (unsigned long long)data_bytes);
    return 1;
  }
  PgTensorInfo *ti = pg_arena_alloc(r->a, sizeof *ti);
  ti->dtype = dtype_of(t->dtype);
  ti->begin = (uint64_t)off[0];
  ti->end = (uint64_t)off[1];
  pg_map_put(r->w->tensors, pg_arena_strdup(r->a, t->name), ti);
  return 0;
}

bool pg_safetensors_read(PgArena *a, PgDiag *d, PgLoc loc, PgWeights *w) {
  FILE *f = fopen(w->path, "rb");
  struct stat st;
  unsigned char len8[8];
  if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    pg_error(d, loc, "weights file '%s' cannot be read: %s", w->path, f ? "not a regular file" : strerror(errno));
    if (f) fclose(f);
    return false;
  }
  w->file_size = (uint64_t)st.st_size;
  if (fread(len8, 1, 8, f) != 8) {
    pg_error(d, loc, "weights file '%s' is too short for a safetensors header", w->path);
    fclose(f);
    return false;
  }
  w->header_len = 0;
  for (int i = 7; i >= 0; i--) w->header_len = w->header_len << 8 | len8[i];
  if (w->header_len > HEADER_MAX || w->header_len > w->file_size - 8) {
    pg_error(d, loc, "weights file '%s' is not a safetensors file: a header of %llu bytes in a file of %llu",
             w->path, (unsigned long long)w->header_len, (unsigned long long)w->file_size);
    fclose(f);
    return false;
  }
  char *text = malloc(w->header_len + 1);
  size_t got = text ? fread(text, 1, w->header_len, f) : 0;
  fclose(f);
  if (got != w->header_len) {
    pg_error(d, loc, "weights file '%s': short read of its header", w->path);
    free(text);
    return false;
  }
  Reader r = {a, d, loc, w};
  w->tensors = pg_map_new(a);
  char *scratch = malloc(w->header_len + 1);
  const char *err = NULL;
  size_t at = 0;
  int rc = scratch ? st_parse(text, w->header_len, scratch, take_tensor, &r, &err, &at) : -1;
  free(scratch);
  free(text);
  if (rc < 0)
    pg_error(d, loc, "weights file '%s': the header is not a JSON object: %s at byte %zu of the header", w->path,
             err ? err : "out of memory", at);
  return rc == 0;
}

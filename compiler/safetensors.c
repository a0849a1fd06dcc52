/*
 * safetensors.c -- reads the header of a safetensors file of weights: eight bytes
 * of little-endian header length, then a JSON object mapping each tensor's name to
 * its dtype, shape and data offsets (after the header), then the data.  pgcc reads
 * only the header, to check each weight buffer against its tensor and to give the
 * generated C the tensor's place in the file; libpgrt reads the data at init.
 * JSON through jansson.
 */
#include "pgcc.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* One tensor's entry; false (with a diagnostic) if it is malformed. */
static bool read_tensor(PgArena *a, PgDiag *d, PgLoc loc, PgWeights *w, const char *name, json_t *v) {
  json_t *dt = json_object_get(v, "dtype"), *off = json_object_get(v, "data_offsets");
  uint64_t data_bytes = w->file_size - 8 - w->header_len;
  if (!json_is_string(dt) || !json_is_array(off) || json_array_size(off) != 2 ||
      !json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1))) {
    pg_error(d, loc, "weights file '%s': tensor '%s' has no dtype or data_offsets [begin, end]", w->path, name);
    return false;
  }
  json_int_t b = json_integer_value(json_array_get(off, 0)), e = json_integer_value(json_array_get(off, 1));
  if (b < 0 || e < b || (uint64_t)e > data_bytes) {
    pg_error(d, loc, "weights file '%s': tensor '%s' has data_offsets [%lld, %lld] outside the %llu bytes of data",
             w->path, name, (long long)b, (long long)e, (unsigned long long)data_bytes);
    return false;
  }
  PgTensorInfo *t = pg_arena_alloc(a, sizeof *t);
  t->dtype = dtype_of(json_string_value(dt));
  t->begin = (uint64_t)b;
  t->end = (uint64_t)e;
  pg_map_put(w->tensors, pg_arena_strdup(a, name), t);
  return true;
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
  json_error_t err;
  json_t *root = got == w->header_len ? json_loadb(text, got, 0, &err) : NULL;
  free(text);
  if (!root || !json_is_object(root)) {
    pg_error(d, loc, "weights file '%s': the header is not a JSON object%s%s", w->path, root ? "" : ": ",
             root ? "" : (got == w->header_len ? err.text : "short read"));
    json_decref(root);
    return false;
  }
  w->tensors = pg_map_new(a);
  const char *key;
  json_t *v;
  bool ok = true;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0) continue;
    if (!json_is_object(v) || !read_tensor(a, d, loc, w, key, v)) {
      if (!json_is_object(v)) pg_error(d, loc, "weights file '%s': tensor '%s' is not an object", w->path, key);
      ok = false;
      break;
    }
  }
  json_decref(root);
  return ok;
}

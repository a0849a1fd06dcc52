/* helpers.c -- see helpers.h */
#include "helpers.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

Run run_pgcc(const char *arg, ...) {
  char *argv[64];
  int argc = 0;
  argv[argc++] = "pgcc";
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a && argc < 63; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
  va_end(ap);
  argv[argc] = NULL;
  Run r = {0};
  size_t on, en;
  FILE *out = open_memstream(&r.out, &on), *err = open_memstream(&r.err, &en);
  ck_assert_ptr_nonnull(out);
  ck_assert_ptr_nonnull(err);
  r.status = pgcc_main(argc, argv, out, err);
  fclose(out);
  fclose(err);
  return r;
}

void run_free(Run *r) {
  free(r->out);
  free(r->err);
}

char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (size_t got; (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n < 2) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

size_t first_nonzero(const void *p, size_t n) {
  static const unsigned char zero[4096];
  const unsigned char *b = p;
  size_t at = 0;
  while (at < n && memcmp(b + at, zero, n - at < sizeof zero ? n - at : sizeof zero) == 0) at += sizeof zero;
  for (; at < n; at++) /* within the first chunk that differs */
    if (b[at]) return at;
  return n;
}

/* On the heap: the diagnostics stream writes through pointers into it. */
Parsed *parse_text(const char *name, const char *text) {
  Parsed *p = calloc(1, sizeof *p);
  p->arena = pg_arena_new();
  p->stream = open_memstream(&p->diags, &p->diags_len);
  p->diag.out = p->stream;
  PgSource *src = pg_source_from_string(p->arena, name, text);
  PgLoc where;
  switch (pg_detect_dialect(src, &where)) {
  case PG_DIALECT_DOT: p->prog = pg_dot_read(p->arena, &p->diag, src); break;
  case PG_DIALECT_GRAPH: p->prog = pg_graph_read(p->arena, &p->diag, src); break;
  case PG_DIALECT_UNKNOWN: break;
  }
  if (p->prog && p->diag.errors == 0) pg_verify(p->prog, &p->diag);
  fflush(p->stream);
  return p;
}

void parsed_free(Parsed *p) {
  fclose(p->stream);
  free(p->diags);
  pg_arena_free(p->arena);
  free(p);
}

PgNode *find_node(const PgProgram *p, const char *name) {
  for (size_t g = 0; g < p->graphs.n; g++)
    for (size_t i = 0; i < p->graphs.v[g]->nodes.n; i++)
      if (strcmp(p->graphs.v[g]->nodes.v[i]->name, name) == 0) return p->graphs.v[g]->nodes.v[i];
  return NULL;
}

char *graph_text(const PgProgram *p) {
  char *buf;
  size_t n;
  FILE *f = open_memstream(&buf, &n);
  pg_graph_write(p, f, NULL);
  fclose(f);
  return buf;
}

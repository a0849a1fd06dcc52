/*
 * arena.c -- the memory policy.
 *
 * One arena per compilation.  Everything the compiler builds (source text, tokens
 * that survive parsing, IR objects, strings, the scanners' and parsers' own state)
 * is carved from it and freed in one call, pg_arena_free().  There is no per-object
 * free: an object that is dropped stays until the end, which is fine for a batch
 * compiler whose memory is dominated by the IR it keeps anyway.
 *
 * Blocks grow geometrically, so a 1M-node graph costs a few dozen mallocs.
 *
 * A second, scratch arena serves work whose results are copied out (the DOT
 * frontend interprets each node label in one); pg_arena_reset() rewinds it.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 16
#define FIRST_BLOCK (64 * 1024)

typedef struct Block Block;
struct Block {
  Block *prev;
  size_t size, used;
  _Alignas(ALIGN) unsigned char data[];
};

struct PgArena {
  Block *top;
  size_t total; /* bytes handed out */
};

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "pgcc: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

PgArena *pg_arena_new(void) {
  PgArena *a = xmalloc(sizeof *a);
  a->top = NULL;
  a->total = 0;
  return a;
}

void pg_arena_free(PgArena *a) {
  if (!a) return;
  for (Block *b = a->top, *prev; b; b = prev) {
    prev = b->prev;
    free(b);
  }
  free(a);
}

void *pg_arena_alloc(PgArena *a, size_t size) {
  size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  Block *b = a->top;
  if (!b || b->size - b->used < size) {
    size_t want = b ? b->size * 2 : FIRST_BLOCK;
    if (want < size) want = size;
    Block *nb = xmalloc(sizeof *nb + want);
    nb->prev = b;
    nb->size = want;
    nb->used = 0;
    a->top = b = nb;
  }
  void *p = b->data + b->used;
  b->used += size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

char *pg_arena_strndup(PgArena *a, const char *s, size_t n) {
  char *p = pg_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *pg_arena_strdup(PgArena *a, const char *s) {
  return pg_arena_strndup(a, s, strlen(s));
}

char *pg_arena_printf(PgArena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) PG_BUG("bad format '%s'", fmt);
  char *p = pg_arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

/* Doubles an array living in the arena; the old copy is left behind. */
void *pg_arena_grow(PgArena *a, void *v, size_t *cap, size_t elem) {
  size_t ncap = *cap ? *cap * 2 : 4;
  void *nv = pg_arena_alloc(a, ncap * elem);
  if (v) memcpy(nv, v, *cap * elem);
  *cap = ncap;
  return nv;
}

size_t pg_arena_used(const PgArena *a) { return a->total; }

/* s1 s2 s3 concatenated: the cheap way to build keys (no printf). */
char *pg_arena_cat(PgArena *a, const char *s1, const char *s2, const char *s3) {
  size_t n1 = strlen(s1), n2 = strlen(s2), n3 = strlen(s3);
  char *p = pg_arena_alloc(a, n1 + n2 + n3 + 1);
  memcpy(p, s1, n1);
  memcpy(p + n1, s2, n2);
  memcpy(p + n1 + n2, s3, n3);
  return p;
}

/* Forgets everything allocated, keeping the first block for reuse: a scratch arena
 * for work whose results are copied elsewhere (one DOT label at a time). */
void pg_arena_reset(PgArena *a) {
  Block *b = a->top;
  while (b && b->prev) {
    Block *prev = b->prev;
    free(b);
    b = prev;
  }
  if (b) b->used = 0;
  a->top = b;
  a->total = 0;
}

/*
 * arena.c -- the memory policy.
 *
 * One arena per compilation.  Everything the compiler builds (source text, tokens
 * that survive parsing, IR objects, strings, the scanners' and parsers' own state)
 * is carved from it and freed in one call, pg_arena_free().  There is no per-object
 * free: an object that is dropped stays until the end, which is fine for a batch
 * compiler whose memory is dominated by the IR it keeps anyway.
 *
 * Blocks grow geometrically, so a 1M-node graph costs a few dozen allocations.
 * Blocks of 2 MiB and more come straight from mmap: the kernel hands them out
 * zeroed, so memory the arena has not used yet needs no memset (each block keeps
 * how far it is known to be clean).  (Transparent huge pages, asked for until
 * 2026-11-26, cost more system time than the page faults they saved.)
 *
 * A second, scratch arena serves work whose results are copied out (the DOT
 * frontend interprets each node label in one); pg_arena_reset() rewinds it.
 *
 * Two more ways to touch less memory, which at a million nodes is most of the
 * cost (the kernel zeroes every page first touched):
 *  - pg_arena_grow() extends an array in place when it is the block's last
 *    allocation, so vectors that grow while nothing else is allocated (a graph's
 *    edges, read one after another) leave no abandoned copies behind;
 *  - pg_arena_map_file() maps a large input file instead of copying it, so its
 *    text is the page cache's own pages; the mapping is the arena's until it is
 *    freed.  (As for any compiler that maps its input, truncating the file while
 *    pgcc reads it is not supported.)  Once a frontend has built the IR it lets
 *    those pages go (pg_arena_release_file), and the .graph scanner lets go of
 *    what it has read as it goes (pg_arena_release_range): the passes hold the
 *    IR, not the text, and a diagnostic that quotes a line maps its page back
 *    from the file.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALIGN 16
#define FIRST_BLOCK (64 * 1024)
#define MAP_FROM (2u << 20) /* blocks this large are mapped, not malloc'd */

typedef struct Block Block;
struct Block {
  Block *prev;
  size_t size, used;
  size_t clean;  /* data[clean..size) is known to be zero */
  bool mapped;   /* from mmap (freed with munmap) */
  _Alignas(ALIGN) unsigned char data[];
};

typedef struct Mapping Mapping;
struct Mapping { /* a file mapped by pg_arena_map_file */
  Mapping *next;
  void *at;
  size_t bytes;
};

struct PgArena {
  Block *top;
  size_t total;      /* bytes handed out */
  void *last;        /* the last allocation, if it is the top block's last bytes */
  Mapping *mappings; /* files mapped into this arena (their records live in it) */
};

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "pgcc: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

/* Zeroed memory outside the arena, for the few large tables a pass builds, uses and
 * gives back (free) before the next: freed, they leave the compiler's peak. */
void *pg_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "pgcc: out of memory (%zu x %zu bytes)\n", n, size);
    abort();
  }
  return p;
}

PgArena *pg_arena_new(void) {
  PgArena *a = xmalloc(sizeof *a);
  a->top = NULL;
  a->total = 0;
  a->last = NULL;
  a->mappings = NULL;
  return a;
}

static Block *block_new(size_t size) {
  size_t bytes = sizeof(Block) + size;
  Block *b = NULL;
  if (bytes >= MAP_FROM) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      /* No MADV_HUGEPAGE: on the 2-core VM it made each fault zero 2 MiB (block tails
       * included) and, with the kernel's defrag=madvise, compact memory first; without
       * it a 1M-node verbose dump took 1.4-1.9 s less system time (0.36 s), about
       * 0.6-1 s less CPU in all, and a 1M-node .graph to C 0.1-0.6 s less. */
      b = p;
      b->mapped = true;
      b->clean = 0;
    }
  }
  if (!b) {
    b = xmalloc(bytes);
    b->mapped = false;
    b->clean = size;
  }
  b->size = size;
  b->used = 0;
  return b;
}

static void block_free(Block *b) {
  if (b->mapped)
    munmap(b, sizeof(Block) + b->size);
  else
    free(b);
}

void pg_arena_free(PgArena *a) {
  if (!a) return;
  for (Mapping *m = a->mappings; m; m = m->next) munmap(m->at, m->bytes);
  for (Block *b = a->top, *prev; b; b = prev) {
    prev = b->prev;
    block_free(b);
  }
  free(a);
}

/* size bytes at a multiple of align (a power of two, at most ALIGN) in the top block,
 * zeroed; a new block where they do not fit */
static void *carve(PgArena *a, size_t size, size_t align) {
  Block *b = a->top;
  size_t pad = b ? (align - b->used % align) % align : 0;
  if (!b || b->size - b->used < pad + size) {
    size_t want = b ? b->size * 2 : FIRST_BLOCK;
    if (want < size) want = size;
    Block *nb = block_new(want);
    nb->prev = b;
    a->top = b = nb;
    pad = 0;
  }
  b->used += pad, a->total += pad;
  void *p = b->data + b->used;
  if (b->used < b->clean) /* only what was used before (a reset arena) can be dirty */
    memset(p, 0, size < b->clean - b->used ? size : b->clean - b->used);
  b->used += size;
  if (b->used > b->clean) b->clean = b->used;
  a->total += size;
  a->last = p;
  return p;
}

void *pg_arena_alloc(PgArena *a, size_t size) {
  return carve(a, (size + ALIGN - 1) & ~(size_t)(ALIGN - 1), ALIGN);
}

void *pg_arena_alloc8(PgArena *a, size_t size) { return carve(a, (size + 7) & ~(size_t)7, 8); }

char *pg_arena_strndup(PgArena *a, const char *s, size_t n) {
  char *p = carve(a, n + 1, 1); /* (a million node names: 4 MiB less than at 16 bytes each) */
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

/* Doubles an array living in the arena: in place when it is the last allocation
 * and its block has room, else as a copy (the old one is left behind). */
void *pg_arena_grow(PgArena *a, void *v, size_t *cap, size_t elem) {
  size_t ncap = *cap ? *cap * 2 : 4;
  Block *b = a->top;
  if (v && v == a->last) {
    size_t old = (*cap * elem + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    size_t grown = (ncap * elem + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    unsigned char *end = (unsigned char *)v + old;
    size_t more = grown - old;
    if (end == b->data + b->used && b->size - b->used >= more) {
      if (b->used < b->clean) /* as in pg_arena_alloc: zeroed, like a fresh copy's tail */
        memset(end, 0, more < b->clean - b->used ? more : b->clean - b->used);
      b->used += more;
      if (b->used > b->clean) b->clean = b->used;
      a->total += more;
      *cap = ncap;
      return v;
    }
  }
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
    block_free(b);
    b = prev;
  }
  if (b) b->used = 0;
  a->top = b;
  a->total = 0;
  a->last = NULL;
}

/* The first len bytes of the regular file fd, mapped read-only and followed by
 * two NULs, as PgSource.text wants; NULL if it cannot be mapped (read it then). */
const char *pg_arena_map_file(PgArena *a, int fd, size_t len) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || len == 0) return NULL;
  size_t bytes = (len + 2 + (size_t)page - 1) / (size_t)page * (size_t)page;
  /* reserve room for the text and its NULs in zeroed anonymous memory, then lay the
   * file over the front: the rest of its last page reads as zero, and so does any
   * page past it */
  void *at = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (at == MAP_FAILED) return NULL;
  if (mmap(at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
    munmap(at, bytes);
    return NULL;
  }
  Mapping *m = pg_arena_alloc(a, sizeof *m);
  *m = (Mapping){a->mappings, at, bytes};
  a->mappings = m;
  return at;
}

/* As pg_arena_release_file, for the whole pages of text[from, to) only: a scanner
 * lets go of what lies behind it. */
void pg_arena_release_range(PgArena *a, const char *text, size_t from, size_t to) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  for (Mapping *m = a->mappings; m; m = m->next) {
    if (m->at != text) continue;
    size_t lo = (from + (size_t)page - 1) / (size_t)page * (size_t)page, hi = to / (size_t)page * (size_t)page;
    if (hi > m->bytes) hi = m->bytes;
    if (lo < hi) madvise((char *)m->at + lo, hi - lo, MADV_DONTNEED);
  }
}

/* The frontend is done with text, a file mapped by pg_arena_map_file: its pages
 * leave this process's memory (they stay in the page cache); reading the text
 * again (a diagnostic quoting its line) maps them back, unchanged.  Text that is
 * not mapped is left alone. */
void pg_arena_release_file(PgArena *a, const char *text) {
  for (Mapping *m = a->mappings; m; m = m->next)
    if (m->at == text) madvise(m->at, m->bytes, MADV_DONTNEED);
}

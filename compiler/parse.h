/*
 * parse.h -- what the two frontends share with their flex scanners and bison
 * parsers (grammar/dot.{l,y}, grammar/graph.{l,y}).  Private to the frontends.
 *
 * The scanners read the source through YY_INPUT in chunks, so flex keeps only a
 * small buffer; token values point into the source text itself (PgStr), which
 * lives in the arena for the whole compilation.  Nothing is copied until a
 * frontend decides to keep it.
 */
#ifndef PGCC_PARSE_H
#define PGCC_PARSE_H

#include "pgcc.h"

#include <string.h>

/* A slice of the source text: a token's value. */
typedef struct {
  const char *s;
  size_t len;
} PgStr;

/* Scanner position bookkeeping, one per scan (in the scanner's extra data). */
typedef struct {
  PgArena *arena;
  PgDiag *diag;
  const PgSource *src;
  size_t in_pos;  /* how far YY_INPUT has read */
  size_t released; /* the text before this offset is let go (pg_lex_read) */
  size_t off;     /* byte offset of the next token */
  int line, col;  /* location of the next token */
  bool lex_error; /* the scanner reported an error (suppresses the parser's echo) */
} PgLexState;

static inline void pg_lex_init(PgLexState *x, PgArena *a, PgDiag *d, const PgSource *src) {
  memset(x, 0, sizeof *x);
  x->arena = a, x->diag = d, x->src = src;
  x->line = x->col = 1;
}

/* How far behind the .graph scanner a large mapped input is let go, and in what
 * steps: the words of the statement being read point into the text (the pages
 * would come back if read, but need not). */
#define PG_LEX_RELEASE_BEHIND (4u << 20)

/* YY_INPUT: copy the next chunk of the source into flex's buffer (the .graph
 * scanner: it lets the text it has read go, as the IR keeps copies of what it
 * needs). */
static inline size_t pg_lex_read(PgLexState *x, char *buf, size_t max) {
  size_t n = x->src->len - x->in_pos;
  if (n > max) n = max;
  memcpy(buf, x->src->text + x->in_pos, n);
  x->in_pos += n;
  if (x->in_pos >= x->released + 2 * PG_LEX_RELEASE_BEHIND) {
    pg_arena_release_range(x->arena, x->src->text, x->released, x->in_pos - PG_LEX_RELEASE_BEHIND);
    x->released = x->in_pos - PG_LEX_RELEASE_BEHIND;
  }
  return n;
}

/* YY_INPUT of the DOT scanner: as pg_lex_read, but a chunk ends just after the next
 * '"', so that flex's buffer never holds a quoted string's body: pg_lex_string scans
 * that from the source itself. */
static inline size_t pg_lex_read_dot(PgLexState *x, char *buf, size_t max) {
  size_t n = x->src->len - x->in_pos;
  if (n > max) n = max;
  const char *at = x->src->text + x->in_pos, *quote = memchr(at, '"', n);
  if (quote) n = (size_t)(quote - at) + 1;
  memcpy(buf, at, n);
  x->in_pos += n;
  return n;
}

/* YY_USER_ACTION: the token just matched starts here; advance past it, a token with
 * no newline in it: the only rules that can match one (whitespace, DOT's block
 * comments) call pg_lex_lines after it. */
static inline void pg_lex_token(PgLexState *x, size_t len, PgLoc *loc, PgStr *val) {
  *loc = (PgLoc){x->src, x->line, x->col};
  /* the value in one 16-byte store: bison's parser reads it back whole at once, and a
   * load that two 8-byte stores must forward to stalls (a tenth of the parser's time) */
  typedef uint64_t Pair __attribute__((vector_size(16)));
  _Static_assert(sizeof(Pair) == sizeof(PgStr), "PgStr is a pointer and a length");
  Pair v = {(uint64_t)(uintptr_t)(x->src->text + x->off), (uint64_t)len};
  memcpy(val, &v, sizeof v);
  x->off += len;
  x->col += (int)len;
}

/* After pg_lex_token, for a token that may hold newlines: the lines it ends. */
static inline void pg_lex_lines(PgLexState *x, const char *text, size_t len) {
  const char *last = NULL, *end = text + len;
  for (const char *q = text; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) x->line++, last = q;
  if (last) x->col = (int)(end - last);
}

/* The same in one step, for text scanned outside the scanner (pg_lex_string). */
static inline void pg_lex_step(PgLexState *x, const char *text, size_t len, PgLoc *loc, PgStr *val) {
  *loc = (PgLoc){x->src, x->line, x->col};
  val->s = x->src->text + x->off;
  val->len = len;
  x->off += len;
  if (len < 16) { /* most tokens */
    for (size_t i = 0; i < len; i++) {
      if (text[i] == '\n')
        x->line++, x->col = 1;
      else
        x->col++;
    }
    return;
  }
  /* the newlines by memchr: a verbose dump's labels are hundreds of bytes, few lines */
  const char *last = NULL, *end = text + len;
  for (const char *q = text; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) x->line++, last = q;
  x->col = last ? (int)(end - last) : x->col + (int)len;
}

/* A DOT quoted string whose opening quote was just matched (and stepped over): its
 * body, up to the first '"' not escaped by a backslash, found in the source with
 * memchr rather than byte by byte by the scanner's automaton -- the bodies are most of
 * a verbose dump's bytes.  Steps over the body and the closing quote, and reading goes
 * on after them (the caller discards flex's buffer).  False, and nothing stepped: no
 * closing quote before the end. */
static inline bool pg_lex_string(PgLexState *x, PgStr *val) {
  const char *text = x->src->text, *body = text + x->off, *end = text + x->src->len, *q = body;
  for (;; q++) {
    if (!(q = memchr(q, '"', (size_t)(end - q)))) return false;
    size_t backslashes = 0; /* an odd run of them before the quote escapes it */
    while (q - backslashes > body && q[-1 - (ptrdiff_t)backslashes] == '\\') backslashes++;
    if (backslashes % 2 == 0) break;
  }
  val->s = body;
  val->len = (size_t)(q - body);
  PgLoc ignored;
  PgStr rest;
  pg_lex_step(x, body, val->len + 1, &ignored, &rest);
  x->in_pos = x->off;
  return true;
}

/* The digits of base `base` (8, 10 or 16) at *s, past them, into *v: false if their
 * value does not fit 64 bits (as strtoull reads them, without its locale, signs and
 * spaces: the frontends read millions of numbers). */
static inline bool pg_digits_u64(const char **s, unsigned base, uint64_t *v) {
  uint64_t x = 0;
  bool fits = true;
  const char *p = *s;
  for (;; p++) {
    unsigned d = (unsigned char)*p;
    d = d - '0' < 10 ? d - '0' : (d | 0x20) - 'a' < 6 ? (d | 0x20) - 'a' + 10 : 99;
    if (d >= base) break;
    /* x * base + d, wrapping as unsigned arithmetic does; fits no more once it wraps
     * (no division per digit) */
    bool wrapped = __builtin_mul_overflow(x, (uint64_t)base, &x);
    wrapped |= __builtin_add_overflow(x, (uint64_t)d, &x);
    if (wrapped) fits = false;
  }
  *s = p, *v = x;
  return fits;
}

static inline bool pg_str_eq(PgStr a, const char *b) {
  return a.len == strlen(b) && memcmp(a.s, b, a.len) == 0;
}

/* ---- DOT ---- */
typedef struct DotCtx DotCtx; /* dot_read.c */
void dot_subgraph_begin(DotCtx *c, const PgStr *id, PgLoc loc);
void dot_subgraph_end(DotCtx *c);
void dot_attr(DotCtx *c, PgStr key, PgStr val, PgLoc loc);
void dot_set(DotCtx *c, PgStr key, PgStr val); /* `key = value;` */
void dot_node_stmt(DotCtx *c, PgStr id, PgLoc loc);
void dot_edge_point(DotCtx *c, PgStr id, PgLoc loc);
void dot_edge_stmt(DotCtx *c);
void dot_attr_stmt(DotCtx *c);
PgDiag *dot_diag(DotCtx *c);

/* ---- .graph ---- */
typedef struct GfCtx GfCtx; /* graph_read.c */
#endif

/*
 * st_header.h -- the JSON header of a safetensors file, parsed.  One reader for both
 * users: pgcc, which checks weight buffers against the header (compiler/safetensors.c),
 * and libpgrt, which reads tensors into host memory (runtime/weights.c); neither links
 * a JSON library.  Header-only (static functions), so that each side builds it into
 * itself and the two libraries stay independent.
 *
 * The header is a JSON object: tensor name -> {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]}, plus an optional "__metadata__" (skipped).  The
 * reader is recursive descent over RFC 8259: strings with every escape (a \u0000 is
 * refused: it would cut a C string), numbers, literals, nesting up to
 * ST_DEPTH_MAX; any other member or value is checked and skipped.  What an entry
 * holds is reported as found, not judged: each caller decides what it needs.
 */
#ifndef ST_HEADER_H
#define ST_HEADER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ST_DEPTH_MAX 64 /* nesting followed before the reader gives up */
#define ST_MAX_DIMS 8

/* One tensor's entry, as st_parse hands it over (its strings live until the callback
 * returns). */
typedef struct {
  const char *name;
  int is_object;      /* 0: the entry is not an object, and nothing below is set */
  const char *dtype;  /* NULL: absent, or not a string */
  int ndim;           /* -1: no shape, or not a list of at most ST_MAX_DIMS integers */
  int64_t shape[ST_MAX_DIMS];
  int n_offsets;      /* how many integers data_offsets held; -1: absent, or not all integers */
  int64_t offsets[2];
} st_tensor;

/* The cursor, a scratch buffer for decoded strings (as long as the text: a decoded
 * string is never longer than its source), and the first error. */
typedef struct {
  const char *p, *end;
  char *scratch, *free_at;
  const char *err;
} st_reader;

static int st_fail(st_reader *j, const char *what) {
  if (!j->err) j->err = what;
  return 0;
}

static void st_ws(st_reader *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* The next non-blank character is c: consume it. */
static int st_eat(st_reader *j, char c) {
  st_ws(j);
  if (j->p < j->end && *j->p == c) return j->p++, 1;
  return 0;
}

/* Like st_eat, but a missing c is an error. */
static int st_expect(st_reader *j, char c, const char *what) { return st_eat(j, c) || st_fail(j, what); }

static int st_hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

static size_t st_utf8(char *o, unsigned cp) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
  if (cp < 0x10000)
    return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3f)), o[2] = (char)(0x80 | (cp & 0x3f)), 3;
  o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* string = '"' chars '"'.  Decoded into the scratch buffer when out is given, else
 * only checked and skipped. */
static int st_string(st_reader *j, const char **out) {
  if (!st_eat(j, '"')) return st_fail(j, "expected a string");
  const char *s = j->p;
  while (j->p < j->end && *j->p != '"') j->p += *j->p == '\\' && j->p + 1 < j->end ? 2 : 1;
  if (j->p >= j->end) return st_fail(j, "unterminated string");
  const char *e = j->p++;
  char *o = out ? j->free_at : NULL, *w = o;
  for (const char *q = s; q < e; q++) {
    unsigned char c = (unsigned char)*q;
    if (c < 0x20) return j->p = q, st_fail(j, "a control character in a string");
    if (c != '\\') {
      if (w) *w++ = (char)c;
      continue;
    }
    char x = *++q;
    unsigned cp;
    switch (x) {
    case '"': case '\\': case '/': cp = (unsigned char)x; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u': {
      int h = e - q > 4 ? st_hex4(q + 1) : -1;
      if (h < 0) return j->p = q, st_fail(j, "a bad \\u escape");
      q += 4;
      cp = (unsigned)h;
      if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low half must follow */
        int lo = e - q > 6 && q[1] == '\\' && q[2] == 'u' ? st_hex4(q + 3) : -1;
        if (lo < 0xdc00 || lo > 0xdfff) return j->p = q, st_fail(j, "an unpaired surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (unsigned)(lo - 0xdc00);
        q += 6;
      } else if (cp >= 0xdc00 && cp < 0xe000) {
        return j->p = q, st_fail(j, "an unpaired surrogate in a \\u escape");
      }
      if (cp == 0) return j->p = q, st_fail(j, "a NUL character in a string");
      break;
    }
    default: return j->p = q, st_fail(j, "a bad escape in a string");
    }
    if (w) w += st_utf8(w, cp);
  }
  if (w) *w++ = '\0', *out = o, j->free_at = w;
  return 1;
}

/* number = '-'? int frac? exp?.  *is_int: an integer that fits in an int64 (in *v). */
static int st_number(st_reader *j, int64_t *v, int *is_int) {
  st_ws(j);
  int neg = j->p < j->end && *j->p == '-';
  if (neg) j->p++;
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return st_fail(j, "expected a value");
  int fits = 1, frac = 0;
  uint64_t u = 0;
  if (*j->p == '0') j->p++;
  else
    for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
      unsigned d = (unsigned)(*j->p - '0');
      if (u > (UINT64_MAX - d) / 10) fits = 0;
      u = u * 10 + d;
    }
  if (j->p < j->end && *j->p == '.') {
    frac = 1;
    if (++j->p >= j->end || *j->p < '0' || *j->p > '9') return st_fail(j, "a number without digits after '.'");
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    frac = 1;
    if (++j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return st_fail(j, "a number without digits in its exponent");
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  *is_int = !frac && fits && u <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX);
  if (*is_int) *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return 1;
}

static int st_word(st_reader *j, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) return st_fail(j, "expected a value");
  j->p += n;
  return 1;
}

/* Any value, checked and skipped. */
static int st_skip(st_reader *j, int depth) {
  if (depth > ST_DEPTH_MAX) return st_fail(j, "nested too deeply");
  st_ws(j);
  if (j->p >= j->end) return st_fail(j, "expected a value");
  switch (*j->p) {
  case '"': return st_string(j, NULL);
  case 't': return st_word(j, "true");
  case 'f': return st_word(j, "false");
  case 'n': return st_word(j, "null");
  case '[':
  case '{': {
    int obj = *j->p++ == '{';
    char close = obj ? '}' : ']';
    if (st_eat(j, close)) return 1;
    do {
      if (obj && (!st_string(j, NULL) || !st_expect(j, ':', "expected ':'"))) return 0;
      if (!st_skip(j, depth + 1)) return 0;
    } while (st_eat(j, ','));
    return st_expect(j, close, obj ? "expected ',' or '}'" : "expected ',' or ']'");
  }
  default: {
    int64_t v;
    int is_int;
    return st_number(j, &v, &is_int);
  }
  }
}

/* A list of integers, at j (after the member's ':'): up to max into v, their count
 * into *n, -1 where the value is no list or holds anything else (or more). */
static int st_ints(st_reader *j, int64_t *v, int max, int *n) {
  st_ws(j);
  if (j->p >= j->end || *j->p != '[') return *n = -1, st_skip(j, 1);
  j->p++;
  *n = 0;
  if (st_eat(j, ']')) return 1;
  do {
    st_ws(j);
    int64_t x = 0;
    int is_int = 0;
    if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
      if (!st_number(j, &x, &is_int)) return 0;
    } else if (!st_skip(j, 2)) {
      return 0;
    }
    if (*n >= 0 && is_int && *n < max) v[(*n)++] = x;
    else *n = -1;
  } while (st_eat(j, ','));
  return st_expect(j, ']', "expected ',' or ']'");
}

/* A tensor's entry, at its value. */
static int st_entry(st_reader *j, st_tensor *t) {
  t->is_object = 0, t->dtype = NULL, t->ndim = -1, t->n_offsets = -1;
  if (!st_eat(j, '{')) return st_skip(j, 1);
  t->is_object = 1;
  if (st_eat(j, '}')) return 1;
  do {
    const char *key;
    if (!st_string(j, &key) || !st_expect(j, ':', "expected ':'")) return 0;
    st_ws(j);
    int ok;
    if (strcmp(key, "dtype") == 0 && j->p < j->end && *j->p == '"') ok = st_string(j, &t->dtype);
    else if (strcmp(key, "shape") == 0) ok = st_ints(j, t->shape, ST_MAX_DIMS, &t->ndim);
    else if (strcmp(key, "data_offsets") == 0) ok = st_ints(j, t->offsets, 2, &t->n_offsets);
    else ok = st_skip(j, 1);
    if (!ok) return 0;
  } while (st_eat(j, ','));
  return st_expect(j, '}', "expected ',' or '}'");
}

/* Parses text[0..len) (scratch: len + 1 bytes).  Calls each(ctx, t) for every tensor,
 * in order ("__metadata__" is skipped); each returns 0 to go on, or a nonzero value
 * that stops the reading and is returned.  Returns 0 at the end, or -1 for malformed
 * JSON, with *err and *at (the byte of the header) saying what and where. */
static int st_parse(const char *text, size_t len, char *scratch, int (*each)(void *, const st_tensor *), void *ctx,
                    const char **err, size_t *at) {
  st_reader r = {text, text + len, scratch, scratch, NULL}, *j = &r;
  int stop = 0;
  if (!st_expect(j, '{', "expected '{'")) goto bad;
  if (!st_eat(j, '}')) {
    do {
      st_tensor t;
      j->free_at = j->scratch; /* the strings of one entry at a time */
      if (!st_string(j, &t.name) || !st_expect(j, ':', "expected ':'")) goto bad;
      if (strcmp(t.name, "__metadata__") == 0) {
        if (!st_skip(j, 1)) goto bad;
        continue;
      }
      if (!st_entry(j, &t)) goto bad;
      if ((stop = each(ctx, &t)) != 0) return stop;
    } while (st_eat(j, ','));
    if (!st_expect(j, '}', "expected ',' or '}'")) goto bad;
  }
  st_ws(j);
  if (j->p == j->end) return 0;
  st_fail(j, "text after the header's object");
bad:
  *err = r.err ? r.err : "malformed";
  *at = (size_t)(r.p - text);
  return -1;
}

#endif

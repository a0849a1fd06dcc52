/*
 * safetensors.c -- reads the header of a safetensors file of weights: eight bytes
 * of little-endian header length, then a JSON object mapping each tensor's name to
 * its dtype, shape and data offsets (after the header), then the data.  pgcc reads
 * only the header, to check each weight buffer against its tensor and to give the
 * generated C the tensor's place in the file; libpgrt reads the data at init.
 *
 * The JSON is read here by a small recursive-descent reader (RFC 8259: strings with
 * every escape, numbers, literals, nesting up to a fixed depth), so that pgcc needs
 * no library beyond libc.  It keeps only what pgcc uses -- each tensor's dtype and
 * data_offsets -- and skips everything else (shapes, "__metadata__", unknown keys).
 */
#include "pgcc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HEADER_MAX (100u << 20) /* the format's own limit */
#define DEPTH_MAX 64            /* nesting the reader follows before it gives up */

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

/* ---- the JSON reader: a cursor over the header text, and the first error ---- */

typedef struct {
  const char *p, *end;
  const char *err; /* what is wrong, at p; NULL while all is well */
} Json;

static bool fail(Json *j, const char *what) {
  if (!j->err) j->err = what;
  return false;
}

static void skip_ws(Json *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* The next non-blank character is c: consume it. */
static bool eat(Json *j, char c) {
  skip_ws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return true;
  }
  return false;
}

/* Like eat, but a missing c is an error. */
static bool expect(Json *j, char c, const char *what) { return eat(j, c) || fail(j, what); }

static int hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
  if (cp < 0x10000)
    return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3f)), o[2] = (char)(0x80 | (cp & 0x3f)), 3;
  o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* string = '"' chars '"'.  Decoded into the arena when out is given (never longer
 * than its source), else only checked and skipped.  A NUL escape would cut a C
 * string short, so it is refused. */
static bool string(Json *j, PgArena *a, char **out) {
  if (!eat(j, '"')) return fail(j, "expected a string");
  const char *s = j->p;
  while (j->p < j->end && *j->p != '"') j->p += *j->p == '\\' && j->p + 1 < j->end ? 2 : 1;
  if (j->p >= j->end) return fail(j, "unterminated string");
  const char *e = j->p++;
  char *o = out ? pg_arena_alloc(a, (size_t)(e - s) + 1) : NULL, *w = o;
  for (const char *q = s; q < e; q++) {
    unsigned char c = (unsigned char)*q;
    if (c < 0x20) return j->p = q, fail(j, "a control character in a string");
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
      int h = e - q > 4 ? hex4(q + 1) : -1;
      if (h < 0) return j->p = q, fail(j, "a bad \\u escape");
      q += 4;
      cp = (unsigned)h;
      if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low half must follow */
        int lo = e - q > 6 && q[1] == '\\' && q[2] == 'u' ? hex4(q + 3) : -1;
        if (lo < 0xdc00 || lo > 0xdfff) return j->p = q, fail(j, "an unpaired surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (unsigned)(lo - 0xdc00);
        q += 6;
      } else if (cp >= 0xdc00 && cp < 0xe000) {
        return j->p = q, fail(j, "an unpaired surrogate in a \\u escape");
      }
      if (cp == 0) return j->p = q, fail(j, "a NUL character in a string");
      break;
    }
    default: return j->p = q, fail(j, "a bad escape in a string");
    }
    if (w) w += put_utf8(w, cp);
  }
  if (w) *w = '\0', *out = o;
  return true;
}

/* number = '-'? int frac? exp?.  *is_int tells whether it is an integer that fits
 * in 64 bits (then *v holds it). */
static bool number(Json *j, int64_t *v, bool *is_int) {
  skip_ws(j);
  bool neg = j->p < j->end && *j->p == '-';
  if (neg) j->p++;
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "expected a value");
  bool fits = true;
  uint64_t u = 0;
  if (*j->p == '0') j->p++;
  else
    for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
      unsigned d = (unsigned)(*j->p - '0');
      if (u > (UINT64_MAX - d) / 10) fits = false;
      u = u * 10 + d;
    }
  bool frac = false;
  if (j->p < j->end && *j->p == '.') {
    frac = true;
    if (++j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "a number without digits after '.'");
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    frac = true;
    if (++j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "a number without digits in its exponent");
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  }
  *is_int = !frac && fits && u <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX);
  if (*is_int) *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return true;
}

static bool word(Json *j, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) return fail(j, "expected a value");
  j->p += n;
  return true;
}

/* Any value, checked and skipped. */
static bool skip_value(Json *j, int depth) {
  if (depth > DEPTH_MAX) return fail(j, "nested too deeply");
  skip_ws(j);
  if (j->p >= j->end) return fail(j, "expected a value");
  switch (*j->p) {
  case '"': return string(j, NULL, NULL);
  case 't': return word(j, "true");
  case 'f': return word(j, "false");
  case 'n': return word(j, "null");
  case '[':
  case '{': {
    bool obj = *j->p++ == '{';
    char close = obj ? '}' : ']';
    if (eat(j, close)) return true;
    do {
      if (obj && (!string(j, NULL, NULL) || !expect(j, ':', "expected ':'"))) return false;
      if (!skip_value(j, depth + 1)) return false;
    } while (eat(j, ','));
    return expect(j, close, obj ? "expected ',' or '}'" : "expected ',' or ']'");
  }
  default: {
    int64_t v;
    bool is_int;
    return number(j, &v, &is_int);
  }
  }
}

/* ---- the header: { name: {"dtype": s, "shape": [...], "data_offsets": [b, e]}, ... } ---- */

typedef struct {
  PgArena *a;
  PgDiag *d;
  PgLoc loc;
  PgWeights *w;
} Reader;

/* A tensor's entry, at '{'.  Returns false with j->err set for bad JSON, or with
 * a diagnostic already given (*reported) for a well-formed but unusable entry. */
static bool read_tensor(Reader *r, Json *j, const char *name, bool *reported) {
  if (!eat(j, '{')) {
    if (!skip_value(j, 1)) return false;
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' is not an object", r->w->path, name);
    *reported = true;
    return false;
  }
  char *dtype = NULL;
  int64_t off[2];
  int n_off = -1; /* -1: no data_offsets; else how many integers it held (2 when right) */
  if (!eat(j, '}')) do {
      char *key;
      if (!string(j, r->a, &key) || !expect(j, ':', "expected ':'")) return false;
      skip_ws(j);
      if (strcmp(key, "dtype") == 0 && j->p < j->end && *j->p == '"') {
        if (!string(j, r->a, &dtype)) return false;
      } else if (strcmp(key, "data_offsets") == 0 && eat(j, '[')) {
        n_off = 0;
        if (!eat(j, ']')) do {
            skip_ws(j);
            int64_t v = 0;
            bool is_int = false;
            if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
              if (!number(j, &v, &is_int)) return false;
            } else if (!skip_value(j, 2)) {
              return false;
            }
            if (is_int && n_off < 2) off[n_off++] = v;
            else n_off = 3; /* not two integers */
          } while (eat(j, ','));
        if (!expect(j, ']', "expected ',' or ']'")) return false;
      } else if (!skip_value(j, 1)) {
        return false;
      }
    } while (eat(j, ','));
  if (!expect(j, '}', "expected ',' or '}'")) return false;
  *reported = true;
  if (!dtype || n_off != 2) {
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' has no dtype or data_offsets [begin, end]", r->w->path,
             name);
    return false;
  }
  uint64_t data_bytes = r->w->file_size - 8 - r->w->header_len;
  if (off[0] < 0 || off[1] < off[0] || (uint64_t)off[1] > data_bytes) {
    pg_error(r->d, r->loc, "weights file '%s': tensor '%s' has data_offsets [%lld, %lld] outside the %llu bytes of data",
             r->w->path, name, (long long)off[0], (long long)off[1], (unsigned long long)data_bytes);
    return false;
  }
  PgTensorInfo *t = pg_arena_alloc(r->a, sizeof *t);
  t->dtype = dtype_of(dtype);
  t->begin = (uint64_t)off[0];
  t->end = (uint64_t)off[1];
  pg_map_put(r->w->tensors, name, t);
  *reported = false;
  return true;
}

/* The whole header text: every tensor into w->tensors.  False after a diagnostic. */
static bool read_header(Reader *r, const char *text, size_t len) {
  Json j = {text, text + len, NULL};
  bool reported = false, ok = true;
  r->w->tensors = pg_map_new(r->a);
  if (!eat(&j, '{')) {
    fail(&j, "expected '{'");
    ok = false;
  } else if (!eat(&j, '}')) {
    do {
      char *key;
      if (!string(&j, r->a, &key) || !expect(&j, ':', "expected ':'")) {
        ok = false;
        break;
      }
      if (strcmp(key, "__metadata__") == 0 ? !skip_value(&j, 1) : !read_tensor(r, &j, key, &reported)) {
        ok = false;
        break;
      }
    } while (eat(&j, ','));
    if (ok) ok = expect(&j, '}', "expected ',' or '}'");
  }
  skip_ws(&j);
  if (ok && j.p != j.end) ok = fail(&j, "text after the header's object");
  if (!ok && !reported)
    pg_error(r->d, r->loc, "weights file '%s': the header is not a JSON object: %s at byte %zu of the header",
             r->w->path, j.err ? j.err : "malformed", (size_t)(j.p - text));
  return ok;
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
  bool ok = read_header(&r, text, got);
  free(text);
  return ok;
}

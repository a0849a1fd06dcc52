/*
 * record.c -- Graphviz record labels, the little language inside CUDA's verbose
 * DOT labels:
 *
 *   record := fields
 *   fields := field ('|' field)*
 *   field  := '{' fields '}' | text          text: anything but unescaped | { }
 *                                            a <port> inside text is dropped
 *
 * Backslash escapes (\< \{ \| \" ...) stand for the character itself; whitespace
 * around a text field is trimmed.  CUDA uses records as little tables, and
 * pg_record_pairs() turns those tables into "key" -> value pairs:
 *
 *   {k | v}                     k = v             {cooperative | 0}
 *   {k | v1 | v2}               k = v1, k.1 = v2  {ID | 0 (topoId: 13) | name<<<...>>>}
 *   {{k1 | k2} | {v1 | v2}}     k1 = v1, k2 = v2  {{node handle | func handle} | {0x.. | 0x..}}
 *   {p | {k1 | k2} | {v1 | v2}} p.k1 = v1 ...     {accessPolicyWindow | {base_ptr | ...} | {...}}
 *   {{a | b} | {k1 .. k2n} | {v1 .. v2n}}
 *                               a.k1 = v1 .. b.k2n = v2n, n >= 2 (memcpy's srcPtr/dstPtr)
 *   {p | {...}}                 the inner table, keys prefixed with "p."
 *   {x | {...} | ...}           otherwise: each group on its own
 *
 * A key group may nest: {poolProps | {allocType | {location | {type | id}}}} names
 * poolProps.allocType, poolProps.location.type, poolProps.location.id.
 */
#include "pgcc.h"

#include <string.h>

typedef struct {
  PgArena *a;
  PgDiag *d;
  const char *s;
  size_t i, n;
  PgLoc start;     /* location of s[0] */
  const size_t *nl; /* the positions of s's newlines, found once (a label has a few) */
  size_t nnl, k;   /* how many; how many lie before the last position asked for */
  char *buf;  /* room for the longest text (the whole label), decoded here, then copied */
  bool failed;
  int depth;
} RecParser;

/* The location of s[i], asked for only where a field starts: from the newlines
 * before it, not by walking the text again. */
static PgLoc loc_at(RecParser *r) {
  while (r->k < r->nnl && r->nl[r->k] < r->i) r->k++;
  while (r->k > 0 && r->nl[r->k - 1] >= r->i) r->k--;
  PgLoc loc = r->start;
  loc.line += (int)r->k;
  loc.col = r->k ? (int)(r->i - r->nl[r->k - 1]) : r->start.col + (int)r->i;
  return loc;
}

static void advance(RecParser *r) { r->i++; }

static PgRecField *new_field(RecParser *r, bool group, PgLoc loc) {
  PgRecField *f = pg_arena_alloc(r->a, sizeof *f);
  f->is_group = group;
  f->loc = loc;
  return f;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* text: up to the next unescaped | { } or the end; ports <...> are skipped. */
static PgRecField *parse_text(RecParser *r) {
  while (r->i < r->n && is_space(r->s[r->i])) advance(r);
  PgLoc loc = loc_at(r);
  char *buf = r->buf;
  const char *s = r->s;
  size_t len = 0, i = r->i, n = r->n; /* in locals: the loop stores nothing but the text */
  static const bool special[256] = {['|'] = 1, ['{'] = 1, ['}'] = 1, ['\\'] = 1, ['<'] = 1};
  while (i < n) {
    size_t j = i; /* a run of plain text, copied at once */
    while (j < n && !special[(unsigned char)s[j]]) j++;
    memcpy(buf + len, s + i, j - i);
    len += j - i;
    if ((i = j) >= n) break;
    char c = s[i];
    if (c == '|' || c == '{' || c == '}') break;
    if (c == '\\' && i + 1 < n) {
      c = s[++i];
      if (c == '\n') { /* line continuation */
        i++;
        continue;
      }
      if (c == 'n' || c == 'l' || c == 'r') c = '\n';
      buf[len++] = c;
      i++;
      continue;
    }
    if (c == '<') { /* a port name: not part of the text */
      while (i < n && s[i] != '>') i++;
      if (i < n) i++;
      continue;
    }
    buf[len++] = c;
    i++;
  }
  r->i = i;
  while (len > 0 && is_space(buf[len - 1])) len--;
  size_t lead = 0; /* a port before the text leaves space in front of it */
  while (lead < len && is_space(buf[lead])) lead++;
  PgRecField *f = pg_arena_alloc(r->a, sizeof *f + len - lead + 1); /* the text right after it */
  char *text = (char *)(f + 1);
  memcpy(text, buf + lead, len - lead);
  text[len - lead] = 0;
  f->loc = loc;
  f->text = text;
  return f;
}

static PgRecField *parse_fields(RecParser *r, PgLoc open);

static PgRecField *parse_field(RecParser *r) {
  while (r->i < r->n && is_space(r->s[r->i])) advance(r);
  if (r->i < r->n && r->s[r->i] == '{') {
    PgLoc open = loc_at(r);
    if (++r->depth > PG_MAX_NESTING) {
      pg_error(r->d, open, "record label nested deeper than %d levels", PG_MAX_NESTING);
      r->failed = true;
      return NULL;
    }
    advance(r);
    PgRecField *g = parse_fields(r, open);
    if (r->failed) return NULL;
    if (r->i >= r->n || r->s[r->i] != '}') {
      pg_error(r->d, open, "unbalanced '{' in record label");
      r->failed = true;
      return NULL;
    }
    advance(r);
    r->depth--;
    while (r->i < r->n && is_space(r->s[r->i])) advance(r);
    return g;
  }
  return parse_text(r);
}

static PgRecField *parse_fields(RecParser *r, PgLoc open) {
  PgRecField *g = new_field(r, true, open);
  for (;;) {
    PgRecField *f = parse_field(r);
    if (!f) return NULL;
    pg_vec_push(r->a, g->kids, f);
    if (r->i < r->n && r->s[r->i] == '|') {
      advance(r);
      continue;
    }
    return g;
  }
}

PgRecField *pg_record_parse(PgArena *a, PgDiag *d, const char *raw, PgLoc loc) {
  return pg_record_parse_n(a, d, raw, strlen(raw), loc);
}

PgRecField *pg_record_parse_n(PgArena *a, PgDiag *d, const char *raw, size_t n, PgLoc loc) {
  size_t nnl = 0;
  for (const char *q = raw; (q = memchr(q, '\n', (size_t)(raw + n - q))) != NULL; q++) nnl++;
  size_t *nl = pg_arena_alloc(a, (nnl ? nnl : 1) * sizeof *nl), k = 0;
  for (const char *q = raw; (q = memchr(q, '\n', (size_t)(raw + n - q))) != NULL; q++) nl[k++] = (size_t)(q - raw);
  RecParser r = {a, d, raw, 0, n, loc, nl, nnl, 0, pg_arena_alloc(a, n + 1), false, 0};
  PgRecField *g = parse_fields(&r, loc);
  if (!g) return NULL;
  if (r.i < r.n) { /* only an unmatched '}' stops the top level early */
    pg_error(d, loc_at(&r), "unbalanced '}' in record label");
    return NULL;
  }
  return g;
}

char *pg_label_unescape(PgArena *a, const char *raw, size_t len) {
  char *out = pg_arena_alloc(a, len + 1);
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    char c = raw[i];
    if (c == '\\' && i + 1 < len) {
      c = raw[++i];
      if (c == '\n') continue;
      if (c == 'n' || c == 'l' || c == 'r') c = '\n';
    }
    out[n++] = c;
  }
  out[n] = 0;
  return out;
}

/* ---- tables to pairs ---- */

static bool is_flat(const PgRecField *g) {
  if (!g->is_group) return false;
  for (size_t i = 0; i < g->kids.n; i++)
    if (g->kids.v[i]->is_group) return false;
  return true;
}

typedef PG_VEC(const char *) Keys;

/* prefix + text: text itself when there is no prefix (keys are only read) */
static const char *key_of(PgArena *a, const char *prefix, const char *text) {
  return *prefix ? pg_arena_cat(a, prefix, text, "") : text;
}

/* The key paths a key group names, in order: a group {p | {...}} of exactly a
 * leaf and a group prefixes the inner keys with "p."; any other group lists its
 * members' keys. */
static void keys_of(PgArena *a, const PgRecField *f, const char *prefix, Keys *out) {
  if (!f->is_group) {
    pg_vec_push(a, *out, key_of(a, prefix, f->text));
    return;
  }
  if (f->kids.n == 2 && !f->kids.v[0]->is_group && f->kids.v[1]->is_group) {
    keys_of(a, f->kids.v[1], pg_arena_cat(a, prefix, f->kids.v[0]->text, "."), out);
    return;
  }
  for (size_t i = 0; i < f->kids.n; i++) keys_of(a, f->kids.v[i], prefix, out);
}

static void pair(PgArena *a, PgRecPairs *out, const char *key, const PgRecField *val) {
  PgRecPair p = {key, val};
  pg_vec_push(a, *out, p);
}

static void zip(PgArena *a, PgRecPairs *out, const Keys *keys, const PgRecField *vals) {
  for (size_t i = 0; i < keys->n; i++) pair(a, out, keys->v[i], vals->kids.v[i]);
}

static void decode(PgArena *a, const PgRecField *g, const char *prefix, PgRecPairs *out) {
  size_t n = g->kids.n;
  PgRecField *const *k = g->kids.v;
  if (is_flat(g) && n >= 2) { /* {k | v} and {k | v1 | v2 ...} */
    pair(a, out, key_of(a, prefix, k[0]->text), k[1]);
    for (size_t i = 2; i < n; i++) {
      char num[24];
      snprintf(num, sizeof num, ".%zu", i - 1);
      pair(a, out, pg_arena_cat(a, prefix, k[0]->text, num), k[i]);
    }
    return;
  }
  if (n == 2 && k[0]->is_group && is_flat(k[1])) { /* {{keys} | {values}} */
    Keys keys = {0};
    keys_of(a, k[0], prefix, &keys);
    if (keys.n == k[1]->kids.n) {
      zip(a, out, &keys, k[1]);
      return;
    }
  }
  if (n == 3 && !k[0]->is_group && k[1]->is_group && is_flat(k[2])) { /* {p | {keys} | {values}} */
    Keys keys = {0};
    keys_of(a, k[1], pg_arena_cat(a, prefix, k[0]->text, "."), &keys);
    if (keys.n == k[2]->kids.n) {
      zip(a, out, &keys, k[2]);
      return;
    }
  }
  if (n == 3 && is_flat(k[0]) && is_flat(k[1]) && is_flat(k[2]) && k[0]->kids.n > 0 &&
      k[1]->kids.n == k[2]->kids.n && k[1]->kids.n % k[0]->kids.n == 0 && k[1]->kids.n >= 2 * k[0]->kids.n) {
    /* {{a | b} | {k1 .. k2n} | {v1 .. v2n}}: each of a, b owns n >= 2 consecutive keys
     * (with n = 1 this would be three {k | v} pairs, as in {{x | 0} | {y | 0} | {z | 0}}) */
    size_t per = k[1]->kids.n / k[0]->kids.n;
    for (size_t i = 0; i < k[1]->kids.n; i++)
      pair(a, out, pg_arena_cat(a, prefix, pg_arena_cat(a, k[0]->kids.v[i / per]->text, ".", ""), k[1]->kids.v[i]->text),
           k[2]->kids.v[i]);
    return;
  }
  if (n == 2 && !k[0]->is_group && k[1]->is_group) { /* {p | {...}} */
    decode(a, k[1], pg_arena_cat(a, prefix, k[0]->text, "."), out);
    return;
  }
  for (size_t i = 0; i < n; i++) /* a list of tables */
    if (k[i]->is_group) decode(a, k[i], prefix, out);
}

/* A record is a list of tables (after its header text, which the caller reads). */
void pg_record_pairs(PgArena *a, const PgRecField *rec, PgRecPairs *out) {
  for (size_t i = 0; i < rec->kids.n; i++)
    if (rec->kids.v[i]->is_group) decode(a, rec->kids.v[i], "", out);
}

const PgRecField *pg_record_get(const PgRecPairs *pairs, const char *key) {
  for (size_t i = 0; i < pairs->n; i++)
    if (strcmp(pairs->v[i].key, key) == 0) return pairs->v[i].val;
  return NULL;
}

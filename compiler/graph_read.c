/*
 * graph_read.c -- the .graph frontend: gives meaning to the statements that
 * grammar/graph.y recognises, as each one is reduced (docs/graph-format.md).
 *
 * A statement is a keyword, usually a name, then attributes: `key value` pairs
 * and bare flags, checked against a small table per statement (Spec).  Names are
 * declared before use, except body graphs (a child graph's block may follow its
 * parent's) and edge endpoints (resolved when their graph's block closes).
 */
#include "graph_read.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

int gf_parse(GfCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag); /* graph.y */

typedef struct {
  PgStr from, to;
  PgLoc from_loc, to_loc;
  PgEdgeKind kind;
} PendingEdge;

typedef struct {
  PgNode *node;
  const char *name;
  PgLoc loc;
} PendingBody;

typedef enum { IN_TOP, IN_GRAPH, IN_KERNEL, IN_SKIPPED } Block;

/* Edges are looked up this many at a time, so that the name table's cache misses
 * overlap (pg_map_get_many): at a million nodes they were a tenth of the run. */
#define EDGE_BATCH 256

struct GfCtx {
  PgArena *a;
  PgArena *parse; /* what only parsing needs (the node name table), freed after it */
  PgDiag *d;
  const PgSource *src;
  PgProgram *p;
  PG_VEC(GfWord) pool;
  bool seen_header, header_error;
  Block block;
  int depth;
  PgGraph *graph;
  PgKernel *kernel;
  PgMap *modules, *kernels, *values, *events, *graphs, *nodes, *weights; /* values: buffers and scalars */
  size_t node_words; /* "node" words in the file: at most its node count (count_node_words) */
  PgMap *is_scalar, *is_cond, *is_dim, *is_comm; /* which of `values` are scalars, conditions, dims, comms */
  PG_VEC(PendingEdge) edges;   /* deferred to the block's end: an endpoint was not declared yet */
  PendingEdge batch[EDGE_BATCH]; /* edges not looked up yet (flush_edges) */
  size_t nbatch;
  PG_VEC(PendingBody) bodies;
};

PgDiag *gf_diag(GfCtx *c) { return c->d; }

/* ---- the word pool (called by the parser) ---- */

static int push_word(GfCtx *c, GfWord w) {
  w.next = -1;
  pg_vec_push(c->a, c->pool, w);
  return (int)c->pool.n - 1;
}

int gf_word(GfCtx *c, GfWordKind kind, PgStr text, PgLoc loc) {
  /* `node NAME ...`: the name table's slot for NAME asked for now, so that the cache
   * miss of its insertion (stmt_node, once the statement ends) overlaps the parsing of
   * the rest of the statement: a million of them at a million nodes */
  if (c->pool.n == 1 && kind == GF_NAME && c->pool.v[0].kind == GF_NAME && pg_str_eq(c->pool.v[0].text, "node"))
    pg_map_prefetch(c->nodes, text.s, text.len);
  return push_word(c, (GfWord){.kind = kind, .text = text, .loc = loc, .first = -1});
}

int gf_ref(GfCtx *c, PgStr name, PgStr num, PgLoc loc) {
  return push_word(c, (GfWord){.kind = GF_REF, .text = name, .num = num, .loc = loc, .first = -1});
}

int gf_range(GfCtx *c, PgStr start, PgStr len, PgLoc loc) {
  return push_word(c, (GfWord){.kind = GF_RANGE, .text = start, .num = len, .loc = loc, .first = -1});
}

int gf_listword(GfCtx *c, GfList items, PgLoc loc) {
  return push_word(c, (GfWord){.kind = GF_LIST, .loc = loc, .first = items.head});
}

/* A list item: one word is itself; several are a phrase that holds them. */
int gf_phrase(GfCtx *c, GfList words) {
  if (words.head == words.tail) return words.head;
  return push_word(c, (GfWord){.kind = GF_PHRASE, .loc = c->pool.v[words.head].loc, .first = words.head});
}

GfList gf_list(GfCtx *c, int word) {
  (void)c;
  return (GfList){word, word};
}

GfList gf_append(GfCtx *c, GfList l, int word) {
  c->pool.v[l.tail].next = word;
  l.tail = word;
  return l;
}

void gf_words_reset(GfCtx *c) { c->pool.n = 0; }

static GfWord *W(GfCtx *c, int i) { return i < 0 ? NULL : &c->pool.v[i]; }

/* ---- reading words ---- */

static const char *kind_text(GfWordKind k) {
  static const char *const names[] = {"a name", "a number", "a string", "a reference", "a list", "a range",
                                      "a phrase"};
  return names[k];
}

static char *name_of(GfCtx *c, const GfWord *w) { return pg_arena_strndup(c->a, w->text.s, w->text.len); }

static bool word_is(const GfWord *w, const char *s) { return w->kind == GF_NAME && pg_str_eq(w->text, s); }

/* The value of a STRING word, unescaped; its length in *len when len is not NULL (an
 * escape `\x00` puts a NUL inside it). */
static char *string_of_n(GfCtx *c, const GfWord *w, size_t *len) {
  char *out = pg_arena_alloc(c->a, w->text.len);
  size_t n = 0;
  for (size_t i = 1; i + 1 < w->text.len; i++) {
    char ch = w->text.s[i];
    if (ch == '\\') {
      ch = w->text.s[++i];
      if (ch == 'n') ch = '\n';
      else if (ch == 't') ch = '\t';
      else if (ch == 'x' && i + 2 < w->text.len - 1 && isxdigit((unsigned char)w->text.s[i + 1]) &&
               isxdigit((unsigned char)w->text.s[i + 2])) {
        char hex[3] = {w->text.s[i + 1], w->text.s[i + 2], 0};
        ch = (char)strtol(hex, NULL, 16);
        i += 2;
      }
    }
    out[n++] = ch;
  }
  out[n] = 0;
  if (len) *len = n;
  return out;
}

static char *string_of(GfCtx *c, const GfWord *w) { return string_of_n(c, w, NULL); }

/* An unsigned integer: decimal, or hexadecimal with 0x. */
static bool u64_of(GfCtx *c, const GfWord *w, const char *what, uint64_t *out) {
  PgStr t = w->kind == GF_REF ? w->num : w->text;
  char buf[32];
  if ((w->kind == GF_NUMBER || w->kind == GF_REF) && t.len < sizeof buf && t.s[0] != '-') {
    memcpy(buf, t.s, t.len);
    buf[t.len] = 0;
    bool hex = t.len > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
    const char *end = hex ? buf + 2 : buf; /* (as strtoull with base 16 or 10 reads it) */
    uint64_t v;
    bool fits = pg_digits_u64(&end, hex ? 16 : 10, &v);
    if (fits && !*end) {
      *out = v;
      return true;
    }
    if (!fits) {
      pg_error(c->d, w->loc, "%s: %s is out of range (at most 2^64-1)", what, buf);
      return false;
    }
  }
  if (w->kind == GF_NUMBER || w->kind == GF_REF)
    pg_error(c->d, w->loc, "%s: expected a non-negative integer, found '%.*s'", what, (int)t.len, t.s);
  else
    pg_error(c->d, w->loc, "%s: expected a non-negative integer, found %s", what, kind_text(w->kind));
  return false;
}

static bool u32_of(GfCtx *c, const GfWord *w, const char *what, uint32_t *out) {
  uint64_t v;
  if (!u64_of(c, w, what, &v)) return false;
  if (v > UINT32_MAX) {
    pg_error(c->d, w->loc, "%s: %" PRIu64 " is too large", what, v);
    return false;
  }
  *out = (uint32_t)v;
  return true;
}

/* ---- attributes ---- */

typedef enum { A_U64, A_INT, A_REAL, A_NAME, A_STRING, A_REF, A_LIST, A_FLAG, A_NAMES } AttrType; /* NAMES: a name or a list */

typedef struct {
  const char *key;
  AttrType type;
  bool required;
} Spec;

#define MAX_ATTRS 16

/* Matches the words from `w` on against `spec`; found[i] is the value word of
 * spec[i] (the key itself for a flag), or NULL. */
static bool read_attrs(GfCtx *c, int w, const char *what, PgLoc loc, const Spec *spec, int nspec,
                       const GfWord **found) {
  bool ok = true;
  for (int i = 0; i < nspec; i++) found[i] = NULL;
  while (w >= 0) {
    const GfWord *key = W(c, w);
    if (key->kind != GF_NAME) {
      pg_error(c->d, key->loc, "%s: expected an attribute name, found %s", what, kind_text(key->kind));
      return false;
    }
    int i;
    for (i = 0; i < nspec; i++)
      if (pg_str_eq(key->text, spec[i].key)) break;
    if (i == nspec) {
      pg_error(c->d, key->loc, "%s has no attribute '%.*s'", what, (int)key->text.len, key->text.s);
      return false;
    }
    if (found[i]) {
      pg_error(c->d, key->loc, "%s: attribute '%s' given twice", what, spec[i].key);
      return false;
    }
    if (spec[i].type == A_FLAG) {
      found[i] = key;
      w = key->next;
      continue;
    }
    const GfWord *v = W(c, key->next);
    if (!v) {
      pg_error(c->d, key->loc, "%s: attribute '%s' needs a value", what, spec[i].key);
      return false;
    }
    bool fits = false;
    switch (spec[i].type) {
    case A_U64:
    case A_INT:
    case A_REAL: fits = v->kind == GF_NUMBER; break;
    case A_NAME: fits = v->kind == GF_NAME; break;
    case A_STRING: fits = v->kind == GF_STRING; break;
    case A_REF: fits = v->kind == GF_NAME || v->kind == GF_REF; break;
    case A_LIST: fits = v->kind == GF_LIST; break;
    case A_FLAG: fits = true; break;
    case A_NAMES: fits = v->kind == GF_NAME || v->kind == GF_LIST; break;
    }
    if (!fits) {
      static const char *const want[] = {"a number", "an integer", "a number", "a name", "a string",
                                         "a buffer reference", "a list", "", "a name or a list"};
      pg_error(c->d, v->loc, "%s: attribute '%s' expects %s, found %s", what, spec[i].key,
               want[spec[i].type], kind_text(v->kind));
      ok = false;
    }
    found[i] = v;
    w = v->next;
  }
  for (int i = 0; i < nspec; i++)
    if (spec[i].required && !found[i]) {
      pg_error(c->d, loc, "%s needs attribute '%s'", what, spec[i].key);
      ok = false;
    }
  return ok;
}

/* ---- declarations ---- */

/* A declaration refused for an error of its own (a bad dtype, a missing attribute) still
 * enters its name, as POISONED: uses of the name then fail without a word, instead of
 * each reporting "unknown buffer" for a declaration the user did write.  Only refused
 * programs hold it (the error was counted), and it never leaves the frontend. */
static char poison_mark;
#define POISONED ((void *)&poison_mark)

static bool poisoned(PgMap *m, const GfWord *name) {
  return pg_map_getn(m, name->text.s, name->text.len) == POISONED;
}

/* After a declaring statement: enter its name as POISONED if the statement declared
 * nothing.  It was refused with an error, or silently for naming a poisoned name. */
static void poison_if_refused(GfCtx *c, PgMap *m, const GfWord *name) {
  if (c->d->errors > 0 && !pg_map_getn(m, name->text.s, name->text.len))
    pg_map_put(m, name_of(c, name), POISONED);
}

static bool declare(GfCtx *c, PgMap *m, const GfWord *name, void *obj, const char *what) {
  char *n = name_of(c, name);
  if (pg_map_get(m, n)) {
    if (pg_map_get(m, n) != POISONED) pg_error(c->d, name->loc, "%s '%s' is already declared", what, n);
    return false;
  }
  pg_map_put(m, n, obj);
  return true;
}

/* The object declared under `name`; NULL with an error if there is none, NULL without
 * one if its declaration was refused. */
static void *lookup(GfCtx *c, PgMap *m, const GfWord *name, const char *what) {
  void *obj = pg_map_getn(m, name->text.s, name->text.len);
  if (obj == POISONED) return NULL;
  if (!obj) pg_error(c->d, name->loc, "unknown %s '%.*s'", what, (int)name->text.len, name->text.s);
  return obj;
}

/* A buffer reference: `name`, `name+offset` or `null`. */
static bool ptr_of(GfCtx *c, const GfWord *w, PgPtr *out) {
  if (word_is(w, "null")) {
    *out = (PgPtr){NULL, 0};
    return true;
  }
  if (w->kind != GF_NAME && w->kind != GF_REF) {
    pg_error(c->d, w->loc, "expected a buffer reference, found %s", kind_text(w->kind));
    return false;
  }
  PgBuffer *b = lookup(c, c->values, w, "buffer");
  if (!b) return false;
  if (pg_map_getn(c->is_scalar, w->text.s, w->text.len) || pg_map_getn(c->is_cond, w->text.s, w->text.len) ||
      pg_map_getn(c->is_dim, w->text.s, w->text.len) || pg_map_getn(c->is_comm, w->text.s, w->text.len)) {
    pg_error(c->d, w->loc, "'%.*s' is a %s, not a buffer", (int)w->text.len, w->text.s,
             pg_map_getn(c->is_cond, w->text.s, w->text.len)   ? "condition"
             : pg_map_getn(c->is_dim, w->text.s, w->text.len)  ? "dim"
             : pg_map_getn(c->is_comm, w->text.s, w->text.len) ? "comm"
                                                                 : "scalar");
    return false;
  }
  out->buf = b;
  out->offset = 0;
  return w->kind == GF_NAME || u64_of(c, w, "buffer offset", &out->offset);
}

static bool is_float_text(PgStr t) {
  if (t.len > 2 && t.s[0 + (t.s[0] == '-')] == '0' && (t.s[1 + (t.s[0] == '-')] | 0x20) == 'x') return false;
  for (size_t i = 0; i < t.len; i++)
    if (t.s[i] == '.' || t.s[i] == 'e' || t.s[i] == 'E') return true;
  return false;
}

static bool read_args(GfCtx *c, const GfWord *list, PgArgs *args) {
  bool ok = true;
  size_t count = 0; /* carved at its size: a million nodes' arguments, not their doublings */
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next)) count++;
  if (args->n == 0 && count > args->cap) {
    args->v = pg_arena_alloc(c->a, count * sizeof *args->v);
    args->cap = count;
  }
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next)) {
    PgArg a = {.loc = w->loc};
    switch (w->kind) {
    case GF_NUMBER:
      a.kind = is_float_text(w->text) ? PG_ARG_FLOAT : PG_ARG_INT;
      a.lit = name_of(c, w);
      break;
    case GF_NAME:
      if (!word_is(w, "null") && pg_map_getn(c->is_cond, w->text.s, w->text.len)) {
        a.kind = PG_ARG_COND;
        a.cond = pg_map_getn(c->values, w->text.s, w->text.len);
        break;
      }
      if (!word_is(w, "null") && pg_map_getn(c->is_scalar, w->text.s, w->text.len)) {
        a.kind = PG_ARG_SCALAR;
        a.scalar = pg_map_getn(c->values, w->text.s, w->text.len);
        break;
      }
      /* a buffer */
      a.kind = PG_ARG_PTR;
      ok = ptr_of(c, w, &a.ptr) && ok;
      break;
    case GF_REF:
      a.kind = PG_ARG_PTR;
      ok = ptr_of(c, w, &a.ptr) && ok;
      break;
    case GF_LIST: {
      a.kind = PG_ARG_BYTES;
      const GfWord *hex = W(c, w->first);
      if (!hex || hex->kind != GF_STRING) {
        pg_error(c->d, w->loc, "a by-value argument is [\"hex bytes\", pointers...]");
        ok = false;
        break;
      }
      a.lit = string_of(c, hex);
      for (const char *h = a.lit; *h; h++)
        if (!isxdigit((unsigned char)*h)) {
          pg_error(c->d, hex->loc, "by-value argument bytes must be hexadecimal digits");
          ok = false;
          break;
        }
      for (const GfWord *q = W(c, hex->next); q; q = W(c, q->next)) {
        PgPtr ptr;
        if (ptr_of(c, q, &ptr))
          pg_vec_push(c->a, a.ptrs, ptr);
        else
          ok = false;
      }
      break;
    }
    case GF_STRING:
    case GF_RANGE:
    case GF_PHRASE:
      pg_error(c->d, w->loc, "%s is not a kernel argument", w->kind == GF_STRING ? "a string" : kind_text(w->kind));
      ok = false;
      break;
    }
    pg_vec_push(c->a, *args, a);
  }
  return ok;
}

static bool dims_of(GfCtx *c, const GfWord *list, const char *what, uint32_t d[3]) {
  d[0] = d[1] = d[2] = 1;
  int i = 0;
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next), i++) {
    if (i == 3) {
      pg_error(c->d, w->loc, "%s has at most 3 dimensions", what);
      return false;
    }
    if (!u32_of(c, w, what, &d[i])) return false;
    if (d[i] == 0) {
      pg_error(c->d, w->loc, "%s dimensions must be at least 1", what);
      return false;
    }
  }
  if (i == 0) {
    pg_error(c->d, list->loc, "%s needs 1 to 3 dimensions", what);
    return false;
  }
  return true;
}

/* The module file, relative to the .graph file's directory: it must be a regular
 * file, and have the content hash the .graph gives. */
static char *beside_input(GfCtx *c, const char *file) {
  const char *dir = c->src->name, *slash = strrchr(dir, '/');
  return file[0] == '/' ? pg_arena_strdup(c->a, file)
         : slash        ? pg_arena_printf(c->a, "%.*s/%s", (int)(slash - dir), dir, file)
                        : pg_arena_strdup(c->a, file);
}

static bool check_module_file(GfCtx *c, PgModule *m, const GfWord *file, const GfWord *hash) {
  char *path = beside_input(c, m->file);
  struct stat st;
  if (stat(path, &st) != 0) {
    pg_error(c->d, file->loc, "module file '%s' cannot be read: %s", path, strerror(errno));
    return false;
  }
  if (!S_ISREG(st.st_mode) || st.st_size > (1 << 30)) {
    pg_error(c->d, file->loc, "module file '%s' is not a regular file of at most 1 GiB", path);
    return false;
  }
  char *abs = realpath(path, NULL);
  m->path = pg_arena_strdup(c->a, abs ? abs : path);
  free(abs);
  if (!hash) return true;
  FILE *f = fopen(path, "rb");
  char *buf = pg_arena_alloc(c->a, (size_t)st.st_size + 1);
  size_t got = f ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  if (f) fclose(f);
  if (!f || got != (size_t)st.st_size) {
    pg_error(c->d, file->loc, "module file '%s' cannot be read", path);
    return false;
  }
  char hex[65];
  pg_sha256_hex(buf, got, hex);
  if (strcasecmp(hex, m->sha256) != 0) {
    pg_error(c->d, hash->loc, "module file '%s' has sha256 %s, not the one given here", path, hex);
    return false;
  }
  return true;
}

static int hex_digit(char ch) {
  return ch >= '0' && ch <= '9'   ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                  : -1;
}

/* One global of a module's `globals` list: a phrase of two strings, the symbol's name
 * and its bytes in hexadecimal (`"WINDOW_SIZE" "03000000"`). */
static bool global_of(GfCtx *c, PgModule *m, PgMap *seen, const GfWord *w) {
  const GfWord *name = w->kind == GF_PHRASE ? W(c, w->first) : NULL, *hex = name ? W(c, name->next) : NULL;
  if (!hex || name->kind != GF_STRING || hex->kind != GF_STRING || hex->next >= 0) {
    pg_error(c->d, w->loc, "module '%s': a global is two strings, its symbol's name and its bytes in hexadecimal "
             "(\"WINDOW_SIZE\" \"03000000\")", m->name);
    return false;
  }
  PgGlobal g = {.loc = name->loc};
  size_t len;
  g.name = string_of_n(c, name, &len);
  if (len == 0) {
    pg_error(c->d, name->loc, "module '%s': a global's name is empty", m->name);
    return false;
  }
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)g.name[i] <= ' ' || g.name[i] == 0x7f) {
      pg_error(c->d, name->loc, "module '%s': global name %.*s is not a symbol (no spaces or control characters)",
               m->name, (int)name->text.len, name->text.s);
      return false;
    }
  void **first = pg_map_slot(seen, g.name); /* where the name was first given */
  if (*first) {
    pg_error(c->d, name->loc, "module '%s': global '%s' is given twice", m->name, g.name);
    pg_note(c->d, *(const PgLoc *)*first, "'%s' was first given here", g.name);
    return false;
  }
  PgLoc *at = pg_arena_alloc(c->a, sizeof *at);
  *at = g.loc;
  *first = at;
  const char *digits = string_of_n(c, hex, &len);
  bool ok = len % 2 == 0;
  for (size_t i = 0; i < len && ok; i++) ok = hex_digit(digits[i]) >= 0;
  if (!ok || len == 0) {
    pg_error(c->d, hex->loc, "module '%s': global '%s': %s", m->name, g.name,
             ok ? "no bytes (a global has at least one)" : "bytes are hexadecimal, two digits each (\"03000000\")");
    return false;
  }
  if (len / 2 > PG_MAX_GLOBAL_BYTES) {
    pg_error(c->d, hex->loc, "module '%s': global '%s' is %zu bytes, more than 1 MiB", m->name, g.name, len / 2);
    return false;
  }
  unsigned char *bytes = pg_arena_alloc(c->a, len / 2);
  for (size_t i = 0; i < len / 2; i++)
    bytes[i] = (unsigned char)(hex_digit(digits[2 * i]) << 4 | hex_digit(digits[2 * i + 1]));
  g.bytes = bytes;
  g.size = (uint32_t)(len / 2);
  pg_vec_push(c->a, m->globals, g);
  return true;
}

/* `globals [...]` (format version 2): what a code module's data objects hold after the
 * library that loaded it wrote them; each global is read on its own, so that every bad
 * one is reported. */
static void module_globals(GfCtx *c, PgModule *m, const GfWord *list) {
  if (m->kind == PG_MOD_LIBRARY) {
    pg_error(c->d, list->loc, "module '%s': a library module has no globals (only cubin, fatbin, ptx and cuda "
             "modules do)", m->name);
    return;
  }
  if (c->p->version < 2) {
    pg_error(c->d, list->loc, "module '%s': globals need .graph format version 2 ('pgcc 2;')", m->name);
    return;
  }
  if (list->first < 0) {
    pg_error(c->d, list->loc, "module '%s': 'globals' lists one or more globals, [\"NAME\" \"hex bytes\", ...]",
             m->name);
    return;
  }
  PgMap *seen = pg_map_new(c->a);
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next)) global_of(c, m, seen, w);
}

static void stmt_module(GfCtx *c, const GfWord *name, PgLoc loc) {
  const GfWord *kind = W(c, name->next);
  if (!kind || kind->kind != GF_NAME) {
    pg_error(c->d, kind ? kind->loc : name->loc, "module needs a kind (cubin, fatbin, ptx, cuda or library)");
    return;
  }
  PgModule *m = pg_arena_alloc(c->a, sizeof *m);
  int k;
  for (k = 0; k < PG_MOD_KIND_COUNT; k++)
    if (pg_str_eq(kind->text, pg_module_kind_names[k])) break;
  if (k == PG_MOD_KIND_COUNT) {
    pg_error(c->d, kind->loc, "unknown module kind '%.*s' (expected cubin, fatbin, ptx, cuda or library)",
             (int)kind->text.len, kind->text.s);
    return;
  }
  static const Spec spec[] = {{"file", A_STRING, false}, {"library", A_STRING, false}, {"sha256", A_STRING, false},
                              {"globals", A_LIST, false}};
  const GfWord *f[4];
  if (!read_attrs(c, kind->next, "module", loc, spec, 4, f)) return;
  m->kind = (PgModuleKind)k;
  m->name = name_of(c, name);
  m->loc = name->loc;
  if (f[0]) m->file = string_of(c, f[0]);
  if (f[1]) m->library = string_of(c, f[1]);
  if (f[2]) m->sha256 = string_of(c, f[2]);
  if (m->kind == PG_MOD_LIBRARY ? !m->library : !m->file) {
    pg_error(c->d, loc, "a %s module needs attribute '%s'", pg_module_kind_names[k],
             m->kind == PG_MOD_LIBRARY ? "library" : "file");
    return;
  }
  if (m->file && !check_module_file(c, m, f[0], f[2])) return;
  if (f[3]) module_globals(c, m, f[3]); /* a bad global is reported, and the module declared all the same */
  if (declare(c, c->modules, name, m, "module")) pg_vec_push(c->a, c->p->modules, m);
}

static void stmt_kernel(GfCtx *c, const GfWord *name, PgLoc loc, bool block) {
  static const Spec spec[] = {{"symbol", A_STRING, true}, {"module", A_NAME, false}, {"entry", A_U64, false}};
  const GfWord *f[3];
  if (!read_attrs(c, name->next, "kernel", loc, spec, 3, f)) return;
  PgKernel *k = pg_arena_alloc(c->a, sizeof *k);
  k->name = name_of(c, name);
  k->symbol = string_of(c, f[0]);
  k->loc = name->loc;
  k->has_layout = block;
  if (f[1] && !(k->module = lookup(c, c->modules, f[1], "module"))) return;
  if (f[2]) {
    if (!k->module || k->module->kind != PG_MOD_LIBRARY) {
      pg_error(c->d, f[2]->loc, "kernel '%s': 'entry' (a place in an installed library's fatbin) needs a library module",
               k->name);
      return;
    }
    if (!u64_of(c, f[2], "kernel entry", &k->entry)) return;
    k->has_entry = true;
  }
  if (!declare(c, c->kernels, name, k, "kernel")) return;
  pg_vec_push(c->a, c->p->kernels, k);
  if (block) c->block = IN_KERNEL, c->kernel = k;
}

/* One relocation of a `ptrs` list: `OFFSET` (a whole address, abs64) or
 * `KIND OFFSET` (version 2: abs64, lo32, hi32; the verifier checks the version). */
static bool reloc_of(GfCtx *c, const GfWord *w, PgParam *pa) {
  PgReloc r = {.kind = PG_RELOC_ABS64, .loc = w->loc};
  const GfWord *off = w;
  if (w->kind == GF_PHRASE) {
    const GfWord *kind = W(c, w->first);
    off = W(c, kind->next);
    if (c->p->version < 2) {
      pg_error(c->d, w->loc, "a relocation kind needs .graph format version 2 ('pgcc 2;'); version 1 has "
                             "only whole addresses, written as bare offsets");
      return false;
    }
    int k = PG_RELOC_KIND_COUNT;
    if (kind->kind == GF_NAME)
      for (k = 0; k < PG_RELOC_KIND_COUNT; k++)
        if (pg_str_eq(kind->text, pg_relocs[k].name)) break;
    if (k == PG_RELOC_KIND_COUNT) {
      if (kind->kind == GF_NAME)
        pg_error(c->d, kind->loc, "unknown relocation kind '%.*s' (expected abs64, lo32 or hi32)",
                 (int)kind->text.len, kind->text.s);
      else
        pg_error(c->d, kind->loc, "expected a relocation kind (abs64, lo32 or hi32), found %s", kind_text(kind->kind));
      return false;
    }
    if (off->next >= 0) {
      pg_error(c->d, W(c, off->next)->loc, "a relocation is 'OFFSET' or 'KIND OFFSET', e.g. 'lo32 56'");
      return false;
    }
    r.kind = (PgRelocKind)k;
  }
  if (!u32_of(c, off, "pointer offset", &r.offset)) return false;
  pg_vec_push(c->a, pa->ptrs, r);
  return true;
}

/* `r`, `w` or `rw` (an access word) into *out. */
static bool access_of(GfCtx *c, const GfWord *w, PgAccess *out) {
  int k = PG_ACCESS_COUNT;
  if (w->kind == GF_NAME)
    for (k = 1; k < PG_ACCESS_COUNT; k++)
      if (pg_str_eq(w->text, pg_access_names[k])) break;
  if (k == PG_ACCESS_COUNT) {
    if (w->kind == GF_NAME)
      pg_error(c->d, w->loc, "unknown access '%.*s' (expected r, w, rw or o)", (int)w->text.len, w->text.s);
    else
      pg_error(c->d, w->loc, "expected an access (r, w, rw or o), found %s", kind_text(w->kind));
    return false;
  }
  *out = (PgAccess)k;
  return true;
}

static void stmt_param(GfCtx *c, const GfWord *kw, PgLoc loc) {
  const GfWord *off = W(c, kw->next), *size = off ? W(c, off->next) : NULL, *type = size ? W(c, size->next) : NULL;
  if (!type || type->kind != GF_NAME) {
    pg_error(c->d, loc, "param needs an offset, a size and a type: 'param 0 8 ptr;'");
    return;
  }
  PgParam pa = {0};
  pa.loc = kw->loc;
  if (!u32_of(c, off, "param offset", &pa.offset) || !u32_of(c, size, "param size", &pa.size)) return;
  char *tn = name_of(c, type);
  if (!pg_type_from_name(tn, &pa.type)) {
    pg_error(c->d, type->loc, "unknown type '%s'", tn);
    return;
  }
  static const Spec spec[] = {{"ptrs", A_LIST, false}, {"dontcare", A_LIST, false}, {"access", A_NAMES, false}};
  const GfWord *f[3];
  if (!read_attrs(c, type->next, "param", loc, spec, 3, f)) return;
  if (f[2] && pa.type != PG_T_PTR && !(pa.type == PG_T_BYTES && f[0])) {
    pg_error(c->d, f[2]->loc, "only a 'ptr' parameter or a 'bytes' parameter with inner pointers has an access");
    return;
  }
  if (f[2] && f[2]->kind == GF_NAME) { /* `access r|w|rw`: a pointer's, or every pointer's inside a struct */
    if (!access_of(c, f[2], &pa.access)) return;
    pa.access_loc = f[2]->loc;
  }
  for (int i = 0; i < 2; i++)
    if (f[i] && pa.type != PG_T_BYTES) {
      pg_error(c->d, f[i]->loc, "only a 'bytes' parameter has %s", i ? "don't-care bytes" : "inner pointers");
      return;
    }
  if (f[0])
    for (const GfWord *w = W(c, f[0]->first); w; w = W(c, w->next))
      if (!reloc_of(c, w, &pa)) return;
  if (f[2] && f[2]->kind == GF_LIST) { /* `access [r, rw, ...]`: one per pointer of `ptrs`, in order */
    if (pa.type != PG_T_BYTES) {
      pg_error(c->d, f[2]->loc, "a list of accesses is a 'bytes' parameter's, one per inner pointer");
      return;
    }
    size_t q = 0;
    for (const GfWord *w = W(c, f[2]->first); w; w = W(c, w->next)) q++;
    if (q != pa.ptrs.n) {
      pg_error(c->d, f[2]->loc, "access: %zu access%s for %zu pointers in 'ptrs' (one each, in order)", q,
               q == 1 ? "" : "es", pa.ptrs.n);
      return;
    }
    q = 0;
    for (const GfWord *w = W(c, f[2]->first); w; w = W(c, w->next))
      if (!access_of(c, w, &pa.ptrs.v[q++].access)) return;
    pa.access_loc = f[2]->loc;
  }
  if (f[1] && c->p->version < 2) {
    pg_error(c->d, f[1]->loc, "don't-care bytes need .graph format version 2 ('pgcc 2;')");
    return;
  }
  if (f[1])
    for (const GfWord *w = W(c, f[1]->first); w; w = W(c, w->next)) {
      PgDontCare dc = {.loc = w->loc};
      if (w->kind != GF_RANGE) {
        pg_error(c->d, w->loc, "dontcare: expected a byte range 'OFFSET:LENGTH', found %s", kind_text(w->kind));
        return;
      }
      GfWord start = *w, len = *w; /* the two numbers of `start:length` */
      start.kind = len.kind = GF_NUMBER;
      len.text = w->num;
      len.loc = pg_loc_advance(w->loc, w->text.s, (size_t)(w->num.s - w->text.s));
      if (!u32_of(c, &start, "don't-care offset", &dc.offset) || !u32_of(c, &len, "don't-care length", &dc.size))
        return;
      pg_vec_push(c->a, pa.dontcare, dc);
    }
  pg_vec_push(c->a, c->kernel->params, pa);
}

/* `weights NAME file "w.safetensors";`: a safetensors file whose header pgcc reads now. */
static void stmt_weights(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"file", A_STRING, true}};
  const GfWord *f[1];
  if (!read_attrs(c, name->next, "weights", loc, spec, 1, f)) return;
  PgWeights *w = pg_arena_alloc(c->a, sizeof *w);
  w->name = name_of(c, name);
  w->loc = name->loc;
  w->file = string_of(c, f[0]);
  w->path = beside_input(c, w->file);
  if (!pg_safetensors_read(c->a, c->d, f[0]->loc, w)) return;
  char *abs = realpath(w->path, NULL);
  if (abs) w->path = pg_arena_strdup(c->a, abs);
  free(abs);
  if (declare(c, c->weights, name, w, "weights file")) pg_vec_push(c->a, c->p->weights, w);
}

/* A weight buffer read from a weights file: the tensor must be there, of the
 * buffer's size and (when the buffer gives one) its dtype. */
static bool buffer_tensor(GfCtx *c, PgBuffer *b, const GfWord *wf, const GfWord *tn, PgLoc loc) {
  if (!wf || !tn) {
    pg_error(c->d, loc, "buffer '%s': 'weights' and 'tensor' go together", b->name);
    return false;
  }
  if (b->role != PG_ROLE_WEIGHT) {
    pg_error(c->d, wf->loc, "buffer '%s': only a buffer of role weight is read from a weights file", b->name);
    return false;
  }
  if (!(b->weights = lookup(c, c->weights, wf, "weights file"))) return false;
  b->tensor = string_of(c, tn);
  const PgTensorInfo *t = pg_map_get(b->weights->tensors, b->tensor);
  if (!t) {
    pg_error(c->d, tn->loc, "weights file '%s' has no tensor '%s'", b->weights->file, b->tensor);
    return false;
  }
  if (t->end - t->begin != b->size) {
    pg_error(c->d, tn->loc, "tensor '%s' in '%s' is %llu bytes, buffer '%s' %llu", b->tensor, b->weights->file,
             (unsigned long long)(t->end - t->begin), b->name, (unsigned long long)b->size);
    return false;
  }
  if (b->has_dtype && t->dtype != b->dtype) {
    pg_error(c->d, tn->loc, "tensor '%s' in '%s' is %s, buffer '%s' %s", b->tensor, b->weights->file,
             t->dtype == PG_T_BYTES ? "of another dtype" : pg_type_names[t->dtype], b->name,
             pg_type_names[b->dtype]);
    return false;
  }
  b->data_offset = 8 + b->weights->header_len + t->begin;
  return true;
}

/* `shape [N, D, ...]`: numbers, or dims (a per-call buffer's entries that vary per call,
 * recorded at the dim's largest value, as the buffer's size is). */
static bool buffer_shape(GfCtx *c, PgBuffer *b, const GfWord *list) {
  size_t n = 0;
  const GfWord *first_dim = NULL;
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next)) n++;
  b->has_shape = true;
  for (const GfWord *w = W(c, list->first); w; w = W(c, w->next)) {
    uint64_t d;
    if (w->kind == GF_NAME) {
      PgDim *dim = pg_map_getn(c->is_dim, w->text.s, w->text.len);
      if (!dim) {
        if (!poisoned(c->values, w))
          pg_error(c->d, w->loc, "unknown dim '%.*s' in the shape of buffer '%s' (declare it first: 'dim %.*s values "
                 "[1, 2, 4] pad;')", (int)w->text.len, w->text.s, b->name, (int)w->text.len, w->text.s);
        return false;
      }
      if (!b->shape_dims) b->shape_dims = pg_arena_alloc(c->a, n * sizeof *b->shape_dims);
      b->shape_dims[b->shape.n] = dim;
      if (!first_dim) first_dim = w;
      pg_vec_push(c->a, b->shape, pg_dim_max(dim));
      continue;
    }
    if (!u64_of(c, w, "shape", &d)) return false;
    pg_vec_push(c->a, b->shape, (int64_t)d);
  }
  if (first_dim && b->role != PG_ROLE_INPUT && b->role != PG_ROLE_OUTPUT && b->role != PG_ROLE_UNKNOWN) {
    pg_error(c->d, first_dim->loc, "buffer '%s': a shape that names a dim ('%.*s') is a per-call buffer's (role "
             "input, output or unknown), not one of role %s", b->name, (int)first_dim->text.len, first_dim->text.s,
             pg_role_names[b->role]);
    return false;
  }
  return true;
}

static void stmt_buffer(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"size", A_U64, true},  {"align", A_U64, false}, {"role", A_NAME, false},
                              {"dtype", A_NAME, false}, {"shape", A_LIST, false}, {"addr", A_U64, false},
                              {"weights", A_NAME, false}, {"tensor", A_STRING, false},
                              {"increment", A_U64, false}};
  const GfWord *f[9];
  if (!read_attrs(c, name->next, "buffer", loc, spec, 9, f)) return;
  PgBuffer *b = pg_arena_alloc(c->a, sizeof *b);
  b->name = name_of(c, name);
  b->loc = name->loc;
  if (!u64_of(c, f[0], "buffer size", &b->size)) return;
  if (f[1] && !u64_of(c, f[1], "buffer alignment", &b->align)) return;
  if (f[2]) {
    int r;
    for (r = 0; r < PG_ROLE_COUNT; r++)
      if (pg_str_eq(f[2]->text, pg_role_names[r])) break;
    if (r == PG_ROLE_COUNT) {
      pg_error(c->d, f[2]->loc,
               "unknown buffer role '%.*s' (expected input, output, weight, intermediate, workspace, host, rng or "
               "unknown)",
               (int)f[2]->text.len, f[2]->text.s);
      return;
    }
    b->role = (PgRole)r;
  }
  if (f[3]) {
    char *t = name_of(c, f[3]);
    if (!pg_type_from_name(t, &b->dtype) || b->dtype == PG_T_PTR || b->dtype == PG_T_BYTES) {
      pg_error(c->d, f[3]->loc, "unknown dtype '%s'", t);
      return;
    }
    b->has_dtype = true;
  }
  if (f[4] && !buffer_shape(c, b, f[4])) return;
  if (f[5]) {
    if (!u64_of(c, f[5], "buffer address", &b->addr)) return;
    b->has_addr = true;
  }
  if ((f[6] || f[7]) && !buffer_tensor(c, b, f[6], f[7], loc)) return;
  if (f[8] && !u64_of(c, f[8], "Philox offset increment", &b->increment)) return;
  if (f[8] && b->role != PG_ROLE_RNG) {
    pg_error(c->d, f[8]->loc, "buffer '%s': only the random-number state (role rng) has an increment", b->name);
    return;
  }
  if (declare(c, c->values, name, b, "buffer or scalar")) pg_vec_push(c->a, c->p->buffers, b);
}

/* `scalar NAME type T [input] [value N] [from B] [callback];`: a read scalar (`from`, a
 * host buffer's first element; `callback`, the caller's function) is neither bound per
 * call nor a literal, and is one or the other. */
static void stmt_scalar(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"type", A_NAME, true}, {"input", A_FLAG, false}, {"value", A_INT, false},
                              {"from", A_NAME, false}, {"callback", A_FLAG, false}, {"bucket", A_NAME, false}};
  const GfWord *f[6];
  if (!read_attrs(c, name->next, "scalar", loc, spec, 6, f)) return;
  PgScalar *s = pg_arena_alloc(c->a, sizeof *s);
  s->name = name_of(c, name);
  s->loc = name->loc;
  char *t = name_of(c, f[0]);
  if (!pg_type_from_name(t, &s->type) || s->type == PG_T_BYTES) {
    pg_error(c->d, f[0]->loc, "unknown scalar type '%s'", t);
    return;
  }
  for (int read = 3; read <= 5; read++) /* `from`, `callback` or `bucket`: nothing else gives the value */
    for (int other = 1; other < read; other++)
      if (f[read] && f[other]) {
        pg_error(c->d, f[other]->loc, "scalar '%s' is %s, so it takes no '%s'", s->name,
                 read == 3   ? "read from a host buffer ('from')"
                 : read == 4 ? "given by a callback ('callback')"
                             : "a bucket's index ('bucket')",
                 spec[other].key);
        return;
      }
  if (f[5]) { /* the index of the bucket the call's size chose: an integer */
    if (!(s->bucket = pg_map_getn(c->is_dim, f[5]->text.s, f[5]->text.len))) {
      if (!poisoned(c->values, f[5]))
        pg_error(c->d, f[5]->loc, "unknown dim '%.*s' (declare it: 'dim NAME values [...] pad;')", (int)f[5]->text.len,
               f[5]->text.s);
      return;
    }
    if (s->type > PG_T_U64) {
      pg_error(c->d, f[0]->loc, "scalar '%s' holds a bucket's index: an integer type (i8 to u64), not %s", s->name,
               pg_type_names[s->type]);
      return;
    }
    s->read_loc = f[5]->loc;
  }
  s->is_input = f[1] != NULL;
  if (f[2]) s->value = name_of(c, f[2]);
  if (f[3]) {
    PgPtr ptr;
    if (!ptr_of(c, f[3], &ptr)) return;
    s->from = ptr.buf;
    s->read_loc = f[3]->loc;
  }
  if (f[4]) s->is_callback = true, s->read_loc = f[4]->loc;
  if (!declare(c, c->values, name, s, "buffer or scalar")) return;
  pg_map_put(c->is_scalar, s->name, s);
  pg_vec_push(c->a, c->p->scalars, s);
}

static void stmt_event(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"handle", A_U64, false}};
  const GfWord *f[1];
  if (!read_attrs(c, name->next, "event", loc, spec, 1, f)) return;
  PgEvent *e = pg_arena_alloc(c->a, sizeof *e);
  e->name = name_of(c, name);
  e->loc = name->loc;
  if (f[0]) {
    if (!u64_of(c, f[0], "event handle", &e->handle)) return;
    e->has_handle = true;
  }
  if (declare(c, c->events, name, e, "event")) pg_vec_push(c->a, c->p->events, e);
}

static void stmt_condition(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"default", A_U64, false}};
  const GfWord *f[1];
  if (!read_attrs(c, name->next, "condition", loc, spec, 1, f)) return;
  PgCondition *k = pg_arena_alloc(c->a, sizeof *k);
  k->name = name_of(c, name);
  k->loc = name->loc;
  if (f[0] && !u32_of(c, f[0], "condition default", &k->default_value)) return;
  if (!declare(c, c->values, name, k, "buffer, scalar or condition")) return;
  pg_map_put(c->is_cond, k->name, k);
  pg_vec_push(c->a, c->p->conditions, k);
}

/* `dim NAME values [V, ...] pad|exact;`: a size that varies per call, a bucket per value. */
static void stmt_dim(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"values", A_LIST, true}, {"pad", A_FLAG, false}, {"exact", A_FLAG, false}};
  const GfWord *f[3];
  if (!read_attrs(c, name->next, "dim", loc, spec, 3, f)) return;
  PgDim *d = pg_arena_alloc(c->a, sizeof *d);
  d->name = name_of(c, name);
  d->loc = name->loc;
  if (f[1] && f[2]) {
    bool later = f[1]->loc.line > f[2]->loc.line || (f[1]->loc.line == f[2]->loc.line && f[1]->loc.col > f[2]->loc.col);
    pg_error(c->d, (later ? f[1] : f[2])->loc, "dim '%s' is 'pad' or 'exact', not both", d->name);
    return;
  }
  if (!f[1] && !f[2]) {
    pg_error(c->d, loc, "dim '%s' needs 'pad' (a size between values runs the smallest bucket that holds it) or "
             "'exact' (only the values run)", d->name);
    return;
  }
  d->pad = f[1] != NULL;
  for (const GfWord *w = W(c, f[0]->first); w; w = W(c, w->next)) {
    uint64_t v = 0;
    if (d->values.n == 64) {
      pg_error(c->d, w->loc, "dim '%s' has more than 64 values", d->name);
      return;
    }
    if (w->kind == GF_NUMBER && w->text.s[0] == '-') { /* not u64_of's message: a size */
      pg_error(c->d, w->loc, "dim '%s': a value is a size, at least 1, not %.*s", d->name, (int)w->text.len,
               w->text.s);
      return;
    }
    if (!u64_of(c, w, "dim value", &v)) return;
    if (v < 1 || v > INT64_MAX) {
      pg_error(c->d, w->loc, "dim '%s': a value is a size, at least 1%s, not %" PRIu64, d->name,
               v ? " and at most 2^63-1" : "", v);
      return;
    }
    if (d->values.n && (int64_t)v <= d->values.v[d->values.n - 1]) {
      pg_error(c->d, w->loc, "dim '%s': values are strictly increasing, but %" PRIu64 " follows %" PRId64, d->name, v,
               d->values.v[d->values.n - 1]);
      return;
    }
    pg_vec_push(c->a, d->values, (int64_t)v);
  }
  if (!d->values.n) {
    pg_error(c->d, f[0]->loc, "dim '%s' needs 1 to 64 values", d->name);
    return;
  }
  if (!declare(c, c->values, name, d, "buffer, scalar, condition, dim or comm")) return;
  pg_map_put(c->is_dim, d->name, d);
  pg_vec_push(c->a, c->p->dims, d);
}

/* `comm NAME ranks N;`: the program runs as one rank of N; its collectives name it. */
static void stmt_comm(GfCtx *c, const GfWord *name, PgLoc loc) {
  static const Spec spec[] = {{"ranks", A_U64, true}};
  const GfWord *f[1];
  if (!read_attrs(c, name->next, "comm", loc, spec, 1, f)) return;
  PgComm *k = pg_arena_alloc(c->a, sizeof *k);
  k->name = name_of(c, name);
  k->loc = name->loc;
  uint64_t v = 0;
  if (f[0]->text.s[0] == '-' || (u64_of(c, f[0], "ranks", &v) && (v < 1 || v > INT32_MAX))) {
    pg_error(c->d, f[0]->loc, "comm '%s': ranks is the number of ranks, 1 to 2^31-1, not %.*s", k->name,
             (int)f[0]->text.len, f[0]->text.s);
    return;
  }
  if (!v) return; /* u64_of said why */
  k->ranks = (uint32_t)v;
  if (!declare(c, c->values, name, k, "buffer, scalar, condition, dim or comm")) return;
  pg_map_put(c->is_comm, k->name, k);
  pg_vec_push(c->a, c->p->comms, k);
}

static void stmt_graph(GfCtx *c, const GfWord *name, bool block) {
  if (!block) {
    pg_error(c->d, name->loc, "graph '%.*s' needs a body: graph NAME { ... }", (int)name->text.len, name->text.s);
    return;
  }
  if (name->next >= 0) {
    pg_error(c->d, W(c, name->next)->loc, "a graph has no attributes");
    return;
  }
  PgGraph *g = pg_graph_new(c->p, name_of(c, name), name->loc);
  if (!declare(c, c->graphs, name, g, "graph")) {
    c->p->graphs.n--;
    return;
  }
  if (c->p->graphs.n == 1 && c->node_words) { /* the root, most of the nodes: its vector at once, not grown */
    g->nodes.v = pg_arena_alloc(c->p->arena, c->node_words * sizeof *g->nodes.v);
    g->nodes.cap = c->node_words;
  }
  c->block = IN_GRAPH;
  c->graph = g;
  c->edges.n = 0;
}

/* ---- nodes ---- */

static void pend_body(GfCtx *c, PgNode *n, const GfWord *w) {
  PendingBody pb = {n, name_of(c, w), w->loc};
  pg_vec_push(c->a, c->bodies, pb);
}

/* A guard (`hostop op guard buffer B expect "hex"`): the host buffer it checks and the
 * bytes it expects there, two hex digits each; other host operations take neither. */
static void hostop_guard(GfCtx *c, PgNode *n, const GfWord *buf, const GfWord *expect, PgLoc loc) {
  if (strcmp(n->u.hostop.op, "guard") != 0) {
    if (buf || expect)
      pg_error(c->d, (buf ? buf : expect)->loc, "hostop node '%s': '%s' belongs to a guard ('op guard')", n->name,
               buf ? "buffer" : "expect");
    return;
  }
  if (!buf || !expect) {
    pg_error(c->d, loc, "a guard needs attribute '%s'", buf ? "expect" : "buffer");
    return;
  }
  PgPtr ptr;
  if (!ptr_of(c, buf, &ptr)) return;
  const char *hex = string_of(c, expect);
  size_t len = strlen(hex);
  for (size_t i = 0; i < len; i++)
    if (!isxdigit((unsigned char)hex[i])) len = 1; /* odd: refused below */
  if (len == 0 || len % 2) {
    pg_error(c->d, expect->loc, "guard '%s': 'expect' is bytes in hexadecimal, two digits each (\"0000803f\")",
             n->name);
    return;
  }
  n->u.hostop.buf = ptr.buf;
  n->u.hostop.expect = hex;
  n->u.hostop.expect_loc = expect->loc;
}

/* `bucket D` on a conditional: a switch with one body per value of D, body k for bucket k;
 * one switch per dim. */
static bool bucket_switch(GfCtx *c, PgNode *n, const GfWord *dw, const GfWord *bodies) {
  PgDim *dim = pg_map_getn(c->is_dim, dw->text.s, dw->text.len);
  size_t nb = 0;
  for (const GfWord *w = W(c, bodies->first); w; w = W(c, w->next)) nb++;
  if (n->u.cond.type != PG_COND_SWITCH) {
    pg_error(c->d, dw->loc, "node '%s': 'bucket' belongs to a switch ('type switch'), not to an %s node", n->name,
             pg_cond_names[n->u.cond.type]);
    return false;
  }
  if (!dim) {
    if (!poisoned(c->values, dw))
      pg_error(c->d, dw->loc, "unknown dim '%.*s' (declare it: 'dim NAME values [...] pad;')", (int)dw->text.len,
             dw->text.s);
    return false;
  }
  if (dim->node) {
    pg_error(c->d, dw->loc, "dim '%s' already picks its bucket with node '%s'", dim->name, dim->node->name);
    pg_note(c->d, dim->node->loc, "'%s' is here", dim->node->name);
    return false;
  }
  if (nb != dim->values.n) {
    pg_error(c->d, bodies->loc, "node '%s': %zu %s for the %zu buckets of dim '%s' (a body per value, in order)",
             n->name, nb, nb == 1 ? "body" : "bodies", dim->values.n, dim->name);
    return false;
  }
  dim->node = n;
  n->u.cond.dim = dim;
  return true;
}

/* A libcall node's NCCL attributes (f[2..7]: comm, send, recv, count, dtype, op): a
 * collective when its fn is one NCCL collective (pg_colls), which takes them instead of
 * `args`; any other fn takes none of them. */
static void libcall_collective(GfCtx *c, PgNode *n, const GfWord *const *f, PgLoc loc) {
  static const char *const keys[] = {"comm", "send", "recv", "count", "dtype", "op"};
  int k;
  for (k = 0; k < PG_COLL_COUNT; k++)
    if (strcmp(n->u.libcall.fn, pg_colls[k].fn) == 0) break;
  if (k == PG_COLL_COUNT) {
    for (int i = 2; i < 8; i++)
      if (f[i]) {
        pg_error(c->d, f[i]->loc, "libcall node '%s': '%s' belongs to an NCCL collective (fn \"ncclAllReduce\", \"ncclAllGather\" or "
                 "\"ncclReduceScatter\")", n->name, keys[i - 2]);
        return;
      }
    return;
  }
  const PgCollInfo *ci = &pg_colls[k];
  if (f[1]) {
    pg_error(c->d, f[1]->loc, "collective node '%s' (%s) takes named attributes (comm, send, recv, count, dtype%s), "
             "not 'args'", n->name, ci->fn, ci->has_op ? ", op" : "");
    return;
  }
  for (int i = 2; i < 7; i++)
    if (!f[i]) {
      pg_error(c->d, loc, "collective node '%s' (%s) needs attribute '%s'", n->name, ci->fn, keys[i - 2]);
      return;
    }
  if (ci->has_op && !f[7]) {
    pg_error(c->d, loc, "collective node '%s' (%s) needs attribute 'op' (sum, prod, max, min or avg)", n->name, ci->fn);
    return;
  }
  if (!ci->has_op && f[7]) {
    pg_error(c->d, f[7]->loc, "collective node '%s': %s takes no 'op' (a reduction belongs to ncclAllReduce and "
             "ncclReduceScatter)", n->name, ci->fn);
    return;
  }
  PgCollective *co = pg_arena_alloc(c->a, sizeof *co);
  co->kind = (PgCollKind)k;
  if (!(co->comm = pg_map_getn(c->is_comm, f[2]->text.s, f[2]->text.len))) {
    if (!poisoned(c->values, f[2]))
      pg_error(c->d, f[2]->loc, "unknown comm '%.*s' (declare it: 'comm NAME ranks N;')", (int)f[2]->text.len,
             f[2]->text.s);
    return;
  }
  if (!ptr_of(c, f[3], &co->send) || !ptr_of(c, f[4], &co->recv)) return;
  if (!co->send.buf || !co->recv.buf) {
    pg_error(c->d, (co->send.buf ? f[4] : f[3])->loc, "collective node '%s': its %s buffer is null", n->name,
             co->send.buf ? "recv" : "send");
    return;
  }
  co->send_loc = f[3]->loc, co->recv_loc = f[4]->loc;
  if (!u64_of(c, f[5], "count", &co->count)) return;
  char *dt = name_of(c, f[6]);
  if (!pg_type_from_name(dt, &co->dtype) || !pg_coll_dtype_ok(co->dtype)) {
    pg_error(c->d, f[6]->loc, "collective node '%s': dtype '%s' is not one NCCL has (i8, u8, i32, u32, i64, u64, f16, "
             "f32, f64, bf16)", n->name, dt);
    return;
  }
  if (f[7]) {
    int o;
    for (o = 0; o < PG_OP_COUNT; o++)
      if (pg_str_eq(f[7]->text, pg_redop_names[o])) break;
    if (o == PG_OP_COUNT) {
      pg_error(c->d, f[7]->loc, "collective node '%s': unknown reduction '%.*s' (expected sum, prod, max, min or avg)",
               n->name, (int)f[7]->text.len, f[7]->text.s);
      return;
    }
    co->op = (PgRedOp)o;
  }
  n->u.libcall.coll = co;
}

/* The node kind a name word names (as pg_kind_from_name, with no copy of the word:
 * it is asked once per node). */
static bool kind_of(const GfWord *w, PgNodeKind *out) {
  for (int k = 0; k < PG_NODE_KIND_COUNT; k++)
    if (pg_str_eq(w->text, pg_kinds[k].name)) {
      *out = (PgNodeKind)k;
      return true;
    }
  return false;
}

static void stmt_node(GfCtx *c, const GfWord *name, PgLoc loc) {
  const GfWord *kw = W(c, name->next);
  PgNodeKind kind;
  if (!kw || kw->kind != GF_NAME || !kind_of(kw, &kind)) {
    pg_error(c->d, kw ? kw->loc : name->loc, "node needs a kind (kernel, memcpy, memset, host, empty, child, "
                                             "event_record, event_wait, mem_alloc, mem_free, conditional, "
                                             "libcall, hostop or opaque)");
    return;
  }
  /* Each kind's attributes; every kind also takes `gpu_us`, `eager` and `origin`, last. */
  static const Spec specs[PG_NODE_KIND_COUNT][10] = {
      [PG_KERNEL] = {{"grid", A_LIST, false}, {"block", A_LIST, false},
                     {"smem", A_U64, false}, {"args", A_LIST, false}, {"cooperative", A_U64, false},
                     {"priority", A_INT, false}, {"cluster", A_LIST, false}},
      [PG_MEMCPY] = {{"dir", A_NAME, true}, {"src", A_REF, false}, {"dst", A_REF, false},
                     {"width", A_U64, true}, {"height", A_U64, false}, {"depth", A_U64, false},
                     {"src_pitch", A_U64, false}, {"dst_pitch", A_U64, false}, {"pageable", A_FLAG, false}},
      [PG_MEMSET] = {{"dst", A_REF, false}, {"value", A_U64, true}, {"elem", A_U64, false},
                     {"width", A_U64, true}, {"height", A_U64, false}, {"pitch", A_U64, false}},
      [PG_HOST] = {{"fn", A_U64, false}, {"data", A_U64, false}},
      [PG_CHILD] = {{"body", A_NAME, true}},
      [PG_EVENT_RECORD] = {{"event", A_NAME, false}},
      [PG_EVENT_WAIT] = {{"event", A_NAME, false}},
      [PG_MEM_ALLOC] = {{"buffer", A_NAME, false}},
      [PG_MEM_FREE] = {{"buffer", A_NAME, false}},
      [PG_CONDITIONAL] = {{"type", A_NAME, true}, {"handle", A_U64, false}, {"bodies", A_LIST, true},
                          {"condition", A_NAME, false}, {"bucket", A_NAME, false}},
      [PG_LIBCALL] = {{"fn", A_STRING, true}, {"args", A_LIST, false}, {"comm", A_NAME, false},
                      {"send", A_REF, false}, {"recv", A_REF, false}, {"count", A_U64, false},
                      {"dtype", A_NAME, false}, {"op", A_NAME, false}},
      [PG_HOSTOP] = {{"op", A_NAME, true}, {"reason", A_STRING, true}, {"buffer", A_NAME, false},
                     {"expect", A_STRING, false}},
      [PG_OPAQUE] = {{"what", A_STRING, true}},
  };
  Spec spec[13];
  int ns = 0;
  while (ns < 10 && specs[kind][ns].key) spec[ns] = specs[kind][ns], ns++;
  spec[ns++] = (Spec){"gpu_us", A_REAL, false};
  spec[ns++] = (Spec){"eager", A_STRING, false};
  spec[ns++] = (Spec){"origin", A_STRING, false};
  const GfWord *f[13];
  static const char *const whats[PG_NODE_KIND_COUNT] = {
#define X(e, name, graphable, cuda, cost) [PG_##e] = name " node",
      PG_NODE_KINDS(X)
#undef X
  };
  const char *what = whats[kind];
  const GfWord *kname = NULL; /* a kernel node names its kernel right after the kind */
  int attrs = kw->next;
  if (kind == PG_KERNEL) {
    kname = W(c, kw->next);
    if (!kname || kname->kind != GF_NAME) {
      pg_error(c->d, kname ? kname->loc : kw->loc, "a kernel node names its kernel: 'node n kernel K ...;'");
      return;
    }
    attrs = kname->next;
  }
  if (!read_attrs(c, attrs, what, loc, spec, ns, f)) return;

  char *nm = name_of(c, name);
  void **slot = pg_map_slot(c->nodes, nm);
  if (*slot == POISONED) return; /* an earlier statement for this name was refused */
  if (*slot) {
    pg_error(c->d, name->loc, "node '%s' is already declared", nm);
    pg_note(c->d, ((PgNode *)*slot)->loc, "'%s' was first declared here", nm);
    return;
  }
  PgNode *n = *slot = pg_node_new(c->p, c->graph, kind, nm, name->loc);
  if (f[ns - 1]) pg_node_notes(c->p->arena, n)->origin = string_of(c, f[ns - 1]);
  if (f[ns - 2]) pg_node_notes(c->p->arena, n)->eager = string_of(c, f[ns - 2]);
  if (f[ns - 3]) {
    char *t = name_of(c, f[ns - 3]), *end;
    double us = pg_node_notes(c->p->arena, n)->gpu_us = strtod(t, &end);
    if (*end || !(us >= 0) || us > 1e9)
      pg_error(c->d, f[ns - 3]->loc, "gpu_us: expected a time in microseconds, found '%s'", t);
  }

  switch (kind) {
  case PG_KERNEL:
    if (!(n->u.kernel.kernel = lookup(c, c->kernels, kname, "kernel"))) return;
    if (f[0] || f[1] || f[2]) {
      if (!f[0] || !f[1]) {
        pg_error(c->d, loc, "a kernel node gives grid and block together");
        return;
      }
      if (!dims_of(c, f[0], "grid", n->u.kernel.grid) || !dims_of(c, f[1], "block", n->u.kernel.block)) return;
      if (f[2] && !u32_of(c, f[2], "smem", &n->u.kernel.smem)) return;
    }
    if (f[3]) {
      n->u.kernel.has_args = true;
      read_args(c, f[3], &n->u.kernel.args);
    }
    if (f[4]) {
      uint32_t v;
      if (u32_of(c, f[4], "cooperative", &v)) n->u.kernel.cooperative = v != 0;
    }
    if (f[5]) n->u.kernel.priority = atoi(name_of(c, f[5]));
    if (f[6] && !dims_of(c, f[6], "cluster", n->u.kernel.cluster)) return;
    break;
  case PG_MEMCPY: {
    int d;
    for (d = 0; d < PG_DIR_COUNT; d++)
      if (pg_str_eq(f[0]->text, pg_dir_names[d])) break;
    if (d == PG_DIR_COUNT) {
      pg_error(c->d, f[0]->loc, "unknown copy direction '%.*s' (expected htod, dtoh, dtod, htoh or default)",
               (int)f[0]->text.len, f[0]->text.s);
      return;
    }
    n->u.memcpy.dir = (PgCopyDir)d;
    if (!f[1] != !f[2]) {
      pg_error(c->d, loc, "a memcpy node gives src and dst together");
      return;
    }
    if (f[1]) {
      n->u.memcpy.has_ptrs = true;
      if (!ptr_of(c, f[1], &n->u.memcpy.src) || !ptr_of(c, f[2], &n->u.memcpy.dst)) return;
    }
    n->u.memcpy.height = n->u.memcpy.depth = 1;
    u64_of(c, f[3], "width", &n->u.memcpy.width);
    if (f[4]) u64_of(c, f[4], "height", &n->u.memcpy.height);
    if (f[5]) u64_of(c, f[5], "depth", &n->u.memcpy.depth);
    if (f[6]) u64_of(c, f[6], "src_pitch", &n->u.memcpy.src_pitch);
    if (f[7]) u64_of(c, f[7], "dst_pitch", &n->u.memcpy.dst_pitch);
    n->u.memcpy.pageable = f[8] != NULL;
    break;
  }
  case PG_MEMSET:
    if (f[0]) {
      n->u.memset.has_dst = true;
      if (!ptr_of(c, f[0], &n->u.memset.dst)) return;
    }
    n->u.memset.height = 1;
    u32_of(c, f[1], "value", &n->u.memset.value);
    if (f[2]) u32_of(c, f[2], "elem", &n->u.memset.elem);
    u64_of(c, f[3], "width", &n->u.memset.width);
    if (f[4]) u64_of(c, f[4], "height", &n->u.memset.height);
    if (f[5]) u64_of(c, f[5], "pitch", &n->u.memset.pitch);
    break;
  case PG_HOST:
    if (f[0]) u64_of(c, f[0], "fn", &n->u.host.fn);
    if (f[1]) u64_of(c, f[1], "data", &n->u.host.data);
    break;
  case PG_CHILD: pend_body(c, n, f[0]); break;
  case PG_EVENT_RECORD:
  case PG_EVENT_WAIT:
    if (f[0]) n->u.event.event = lookup(c, c->events, f[0], "event");
    break;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE:
    if (f[0]) {
      PgPtr ptr;
      if (ptr_of(c, f[0], &ptr)) n->u.mem.buf = ptr.buf;
    }
    break;
  case PG_CONDITIONAL: {
    int t;
    for (t = 0; t < PG_COND_COUNT; t++)
      if (pg_str_eq(f[0]->text, pg_cond_names[t])) break;
    if (t == PG_COND_COUNT) {
      pg_error(c->d, f[0]->loc, "unknown conditional type '%.*s' (expected if, while or switch)",
               (int)f[0]->text.len, f[0]->text.s);
      return;
    }
    n->u.cond.type = (PgCondType)t;
    if (f[1]) n->u.cond.has_handle = u64_of(c, f[1], "handle", &n->u.cond.handle);
    if (f[3]) {
      if (!pg_map_getn(c->is_cond, f[3]->text.s, f[3]->text.len)) {
        if (!poisoned(c->values, f[3]))
          pg_error(c->d, f[3]->loc, "unknown condition '%.*s' (declare it: 'condition NAME default N;')",
                 (int)f[3]->text.len, f[3]->text.s);
        return;
      }
      PgCondition *k = pg_map_getn(c->values, f[3]->text.s, f[3]->text.len);
      if (k->node) {
        pg_error(c->d, f[3]->loc, "condition '%s' is already tested by node '%s'", k->name, k->node->name);
        pg_note(c->d, k->node->loc, "'%s' is here", k->node->name);
        return;
      }
      k->node = n;
      n->u.cond.condition = k;
    }
    if (f[4] && !bucket_switch(c, n, f[4], f[2])) return;
    for (const GfWord *w = W(c, f[2]->first); w; w = W(c, w->next)) {
      if (w->kind != GF_NAME) {
        pg_error(c->d, w->loc, "bodies: expected a graph name, found %s", kind_text(w->kind));
        return;
      }
      pend_body(c, n, w);
    }
    break;
  }
  case PG_LIBCALL:
    n->u.libcall.fn = string_of(c, f[0]);
    if (f[1]) read_args(c, f[1], &n->u.libcall.args);
    libcall_collective(c, n, f, loc);
    break;
  case PG_HOSTOP:
    n->u.hostop.op = name_of(c, f[0]);
    n->u.hostop.reason = string_of(c, f[1]);
    hostop_guard(c, n, f[2], f[3], loc);
    break;
  case PG_OPAQUE: n->u.opaque.what = string_of(c, f[0]); break;
  case PG_EMPTY: break;
  case PG_NODE_KIND_COUNT: PG_BUG("bad node kind");
  }
}

/* ---- statements ---- */

void gf_stmt(GfCtx *c, GfList words, bool opens_block) {
  const GfWord *kw = W(c, words.head);
  PgLoc loc = kw->loc;
  if (opens_block) c->depth++;
  if (opens_block && c->depth > 1) {
    if (c->block != IN_SKIPPED) pg_error(c->d, loc, "blocks do not nest: close the enclosing block first");
    c->block = IN_SKIPPED;
    goto done;
  }
  if (c->block == IN_SKIPPED) goto done;
  Block was = c->block;
  if (opens_block) c->block = IN_SKIPPED; /* until the header below is accepted */

  if (kw->kind != GF_NAME) {
    pg_error(c->d, loc, "a statement starts with a keyword, not %s", kind_text(kw->kind));
    goto done;
  }
  if (!c->seen_header) {
    uint64_t v;
    const GfWord *ver = W(c, kw->next);
    if (!word_is(kw, "pgcc") || !ver || ver->next >= 0 || opens_block) {
      if (!c->header_error) pg_error(c->d, loc, "a .graph file starts with 'pgcc %d;'", PG_GRAPH_FORMAT_VERSION);
      c->header_error = true;
      goto done;
    }
    c->seen_header = true;
    if (!u64_of(c, ver, "format version", &v)) goto done;
    if (v < 1 || v > PG_GRAPH_FORMAT_VERSION)
      pg_error(c->d, ver->loc, "unsupported .graph format version %" PRIu64 " (this pgcc reads versions 1 to %d)", v,
               PG_GRAPH_FORMAT_VERSION);
    else
      c->p->version = (int)v;
    goto done;
  }

  const GfWord *name = W(c, kw->next);
  bool named = name && name->kind == GF_NAME;
  if (was == IN_KERNEL) {
    if (!word_is(kw, "param") || opens_block)
      pg_error(c->d, loc, "a kernel block holds only 'param' statements");
    else
      stmt_param(c, kw, loc);
    goto done;
  }
  if (was == IN_GRAPH) {
    if (!word_is(kw, "node") || opens_block)
      pg_error(c->d, loc, "a graph holds only 'node' statements and edges 'a -> b;'");
    else if (!named)
      pg_error(c->d, name ? name->loc : loc, "node needs a name");
    else {
      stmt_node(c, name, loc);
      poison_if_refused(c, c->nodes, name);
    }
    goto done;
  }

  if (word_is(kw, "pgcc")) {
    pg_error(c->d, loc, "the 'pgcc' header appears twice");
  } else if (word_is(kw, "arch")) {
    if (!named || name->next >= 0)
      pg_error(c->d, loc, "arch takes one name, e.g. 'arch sm_90;'");
    else
      c->p->arch = name_of(c, name), c->p->arch_loc = name->loc;
  } else if (!named && (word_is(kw, "module") || word_is(kw, "kernel") || word_is(kw, "buffer") ||
                        word_is(kw, "scalar") || word_is(kw, "event") || word_is(kw, "condition") ||
                        word_is(kw, "weights") || word_is(kw, "dim") || word_is(kw, "comm") ||
                        word_is(kw, "graph"))) {
    pg_error(c->d, name ? name->loc : loc, "%.*s needs a name", (int)kw->text.len, kw->text.s);
  } else if (word_is(kw, "graph")) {
    stmt_graph(c, name, opens_block);
    poison_if_refused(c, c->graphs, name);
  } else if (word_is(kw, "kernel")) {
    stmt_kernel(c, name, loc, opens_block);
    poison_if_refused(c, c->kernels, name);
  } else if (opens_block) {
    /* `buffer x size 4 graph g {`: most likely a ';' went missing before a block statement */
    const GfWord *w = name;
    while (w && !word_is(w, "graph") && !word_is(w, "kernel")) w = W(c, w->next);
    if (w)
      pg_error(c->d, w->loc, "expected ';' before '%.*s'", (int)w->text.len, w->text.s);
    else
      pg_error(c->d, loc, "'%.*s' takes no block", (int)kw->text.len, kw->text.s);
  } else if (word_is(kw, "module")) {
    stmt_module(c, name, loc);
    poison_if_refused(c, c->modules, name);
  } else if (word_is(kw, "buffer")) {
    stmt_buffer(c, name, loc);
    poison_if_refused(c, c->values, name);
  } else if (word_is(kw, "weights")) {
    stmt_weights(c, name, loc);
    poison_if_refused(c, c->weights, name);
  } else if (word_is(kw, "scalar")) {
    stmt_scalar(c, name, loc);
    poison_if_refused(c, c->values, name);
  } else if (word_is(kw, "event")) {
    stmt_event(c, name, loc);
    poison_if_refused(c, c->events, name);
  } else if (word_is(kw, "condition")) {
    stmt_condition(c, name, loc);
    poison_if_refused(c, c->values, name);
  } else if (word_is(kw, "dim")) {
    stmt_dim(c, name, loc);
    poison_if_refused(c, c->values, name);
  } else if (word_is(kw, "comm")) {
    stmt_comm(c, name, loc);
    poison_if_refused(c, c->values, name);
  } else if (word_is(kw, "node")) {
    pg_error(c->d, loc, "a node belongs inside a graph block");
  } else {
    pg_error(c->d, loc, "unknown statement '%.*s'", (int)kw->text.len, kw->text.s);
  }
done:
  gf_words_reset(c);
}

/* The batched edges: those whose ends are both declared, in this graph, with
 * nothing deferred before them, are added now (the usual case: nodes come first),
 * in statement order.  The others wait for the end of the block, where later
 * declarations count and errors are reported.  Looking an edge up later than its
 * statement changes nothing: it is added in the same place either way. */
static void flush_edges(GfCtx *c) {
  const char *keys[2 * EDGE_BATCH];
  size_t lens[2 * EDGE_BATCH];
  void *ends[2 * EDGE_BATCH];
  for (size_t i = 0; i < c->nbatch; i++) {
    keys[2 * i] = c->batch[i].from.s, lens[2 * i] = c->batch[i].from.len;
    keys[2 * i + 1] = c->batch[i].to.s, lens[2 * i + 1] = c->batch[i].to.len;
  }
  pg_map_get_many(c->nodes, 2 * c->nbatch, keys, lens, ends);
  for (size_t i = 0; i < c->nbatch; i++) {
    PgNode *a = ends[2 * i], *b = ends[2 * i + 1];
    if (a == POISONED || b == POISONED) continue; /* an endpoint's statement was refused */
    if (!c->edges.n && a && b && a->graph == c->graph && b->graph == c->graph)
      pg_edge_add(c->p, c->graph, a, b, c->batch[i].kind, c->batch[i].from_loc);
    else
      pg_vec_push(c->a, c->edges, c->batch[i]);
  }
  c->nbatch = 0;
}

/* `A -> B;`, or `A -> B KIND;` (format version 3: KIND one of pg_edge_kinds). */
void gf_edge(GfCtx *c, PgStr from, PgLoc from_loc, PgStr to, PgLoc to_loc, const PgStr *kind, PgLoc kind_loc) {
  gf_words_reset(c);
  if (c->block == IN_SKIPPED) return;
  if (c->block != IN_GRAPH) {
    pg_error(c->d, from_loc, "an edge belongs inside a graph block");
    return;
  }
  PgEdgeKind k = PG_EDGE_FULL;
  if (kind) {
    for (k = PG_EDGE_FULL + 1; k < PG_EDGE_KIND_COUNT; k++)
      if (strlen(pg_edge_kinds[k]) == kind->len && memcmp(pg_edge_kinds[k], kind->s, kind->len) == 0) break;
    if (k == PG_EDGE_KIND_COUNT) {
      pg_error(c->d, kind_loc, "unknown edge kind '%.*s' (an edge is full, or 'programmatic' or 'launch_order')",
               (int)kind->len, kind->s);
      return;
    }
    if (c->p->version < 3) {
      pg_error(c->d, kind_loc, "an edge kind needs .graph format version 3 ('pgcc 3;')");
      return;
    }
  }
  c->batch[c->nbatch++] = (PendingEdge){from, to, from_loc, to_loc, k};
  if (c->nbatch == EDGE_BATCH) flush_edges(c);
}

void gf_block_end(GfCtx *c) {
  if (--c->depth > 0) return;
  if (c->block == IN_GRAPH) {
    flush_edges(c);
    for (size_t i = 0; i < c->edges.n; i++) {
      PendingEdge *e = &c->edges.v[i];
      PgNode *ends[2];
      PgStr names[2] = {e->from, e->to};
      PgLoc locs[2] = {e->from_loc, e->to_loc};
      for (int k = 0; k < 2; k++) {
        ends[k] = pg_map_getn(c->nodes, names[k].s, names[k].len);
        if (ends[k] == POISONED)
          ends[k] = NULL;
        else if (!ends[k])
          pg_error(c->d, locs[k], "edge endpoint '%.*s' is not a node", (int)names[k].len, names[k].s);
        else if (ends[k]->graph != c->graph) {
          pg_error(c->d, locs[k], "edge endpoint '%.*s' is a node of graph '%s', not of '%s'", (int)names[k].len,
                   names[k].s, ends[k]->graph->name, c->graph->name);
          ends[k] = NULL;
        }
      }
      if (ends[0] && ends[1]) pg_edge_add(c->p, c->graph, ends[0], ends[1], e->kind, e->from_loc);
    }
    c->edges.n = 0;
  }
  c->block = IN_TOP;
  c->graph = NULL;
  c->kernel = NULL;
}

/* "node" once per node statement (and maybe elsewhere): an upper bound on the nodes,
 * cheap to count -- sixteen places at a time where the compiler has SSE2 (an 'n' is
 * every few bytes of a large file: a memchr call per 'n' cost more than the rest). */
static size_t count_node_words(const char *text, size_t len) {
  size_t nodes = 0, i = 0;
#ifdef __SSE2__
  for (; i + 19 <= len; i += 16) {
    const __m128i *at = (const __m128i *)(const void *)(text + i);
    __m128i n = _mm_cmpeq_epi8(_mm_loadu_si128(at), _mm_set1_epi8('n'));
    __m128i o = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(text + i + 1)), _mm_set1_epi8('o'));
    __m128i dd = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(text + i + 2)), _mm_set1_epi8('d'));
    __m128i e = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(text + i + 3)), _mm_set1_epi8('e'));
    nodes += (size_t)__builtin_popcount((unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_and_si128(n, o), _mm_and_si128(dd, e))));
  }
#endif
  for (; i + 4 <= len; i++) nodes += text[i] == 'n' && text[i + 1] == 'o' && text[i + 2] == 'd' && text[i + 3] == 'e';
  return nodes;
}

PgProgram *pg_graph_read(PgArena *a, PgDiag *d, const PgSource *src) {
  GfCtx *c = pg_arena_alloc(a, sizeof *c);
  c->a = a;
  c->d = d;
  c->src = src;
  c->p = pg_program_new(a);
  c->modules = pg_map_new(a);
  c->weights = pg_map_new(a);
  c->kernels = pg_map_new(a);
  c->values = pg_map_new(a);
  c->is_scalar = pg_map_new(a);
  c->is_cond = pg_map_new(a);
  c->is_dim = pg_map_new(a);
  c->is_comm = pg_map_new(a);
  c->events = pg_map_new(a);
  c->graphs = pg_map_new(a);
  c->parse = pg_arena_new();
  c->nodes = pg_map_new(c->parse);
  c->node_words = count_node_words(src->text, src->len);
  pg_map_reserve(c->nodes, c->node_words);
  int errors = d->errors;
  int parsed = gf_parse(c, src, a, d);
  pg_arena_free(c->parse); /* the IR holds what the passes need */
  c->parse = NULL, c->nodes = NULL;
  pg_arena_release_file(a, src->text);
  if (parsed != 0 || d->errors > errors) return NULL;
  PgProgram *p = c->p;
  if (!c->seen_header || p->graphs.n == 0) { /* reported at the end of the file */
    PgLoc end = pg_loc_advance((PgLoc){src, 1, 1}, src->text, src->len);
    if (!c->seen_header)
      pg_error(d, end, "a .graph file starts with 'pgcc %d;'", PG_GRAPH_FORMAT_VERSION);
    else
      pg_error(d, end, "no graph in the file");
    return NULL;
  }
  for (size_t i = 0; i < c->bodies.n; i++) {
    PendingBody *b = &c->bodies.v[i];
    PgGraph *g = pg_map_get(c->graphs, b->name);
    if (g == POISONED) continue;
    if (!g) {
      pg_error(d, b->loc, "unknown graph '%s'", b->name);
      continue;
    }
    if (g == p->graphs.v[0]) {
      pg_error(d, b->loc, "graph '%s' is the root graph (the first one), so it cannot be a body", b->name);
      continue;
    }
    if (g->owner) {
      pg_error(d, b->loc, "graph '%s' is already the body of node '%s'", b->name, g->owner->name);
      continue;
    }
    g->owner = b->node;
    if (b->node->kind == PG_CHILD)
      b->node->u.child.body = g;
    else
      pg_vec_push(a, b->node->u.cond.bodies, g);
  }
  for (size_t i = 1; i < p->graphs.n; i++)
    if (!p->graphs.v[i]->owner && d->errors == errors)
      pg_error(d, p->graphs.v[i]->loc, "graph '%s' is not the body of any node (only the first graph is the root)",
               p->graphs.v[i]->name);
  if (d->errors > errors) return NULL;
  pg_program_link(p);
  return p;
}

/*
 * dot_read.c -- the DOT frontend: cudaGraphDebugDotPrint output -> IR.
 *
 * grammar/dot.y recognises DOT's structure and calls the dot_* hooks below for each
 * statement; they only record slices of the source.  pg_dot_read() then builds the
 * program in four steps:
 *
 *   1. graphs:  each `subgraph cluster_N { label="graph_N" ... }` becomes a graph;
 *   2. nodes:   each node statement's label is interpreted (plain labels are lines,
 *               shape=record labels are tables, see record.c) into a node of its kind;
 *   3. edges:   endpoints resolve to node statements of the same graph;
 *   4. bodies:  child-graph and conditional nodes find their body graphs by name,
 *               and the one graph that is nobody's body is the root.
 *
 * What a dump does not say stays unknown in the IR: kernel arguments (bound by the
 * caller at init), launch dimensions without the kernel-params flag, copy operands
 * without the memcpy-params flag.  Addresses a dump does show (copy operands,
 * graph allocations) become buffers named after the address, sized by their use.
 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
int dot_parse(DotCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag); /* dot.y */

typedef struct {
  PgStr key, val;
  PgLoc loc;
} DotAttr;

/* A field of a node's label: its text and where it is. */
typedef struct {
  const char *text;
  PgLoc loc;
} Field;
typedef PG_VEC(Field) Fields;

/* A slice of the source as its offset and length, a place in it as its line and
 * column: the statements below are kept, a million of each, until the IR is built,
 * and at half the size of a PgStr and a PgLoc they are half the pages to zero. */
typedef struct {
  uint32_t off, len; /* off NONE: not given (a source is at most 2 GiB) */
} Slice;
typedef struct {
  int line, col;
} Place;
#define NONE UINT32_MAX

typedef struct {
  Slice id;
  Place loc;
} DotPoint;

typedef struct DotCluster DotCluster;
struct DotCluster {
  PgStr id; /* s == NULL: anonymous */
  PgLoc loc;
  PgStr label;
  bool has_label;
  DotCluster *parent; /* the enclosing subgraph */
  DotCluster *owner;  /* the graph cluster its nodes belong to: itself, or for a
                         nested subgraph not labelled graph_N (pgcc's region
                         clusters), the enclosing one */
  PgGraph *graph;     /* graph clusters only */
  bool is_body;
};

/* A node statement as parsed: slices of the source, a million of them in a large
 * dump, so only what read_node() needs.  label, shape off NONE: not given. */
typedef struct {
  Slice id;
  Place loc;
  DotCluster *cluster;
  Slice label, shape; /* the values */
  Place label_loc;    /* where the label's value starts */
} DotNodeStmt;

typedef struct {
  DotPoint from, to;
} DotEdgeStmt;

/* A child or conditional node and the names of its body graphs, in label order. */
typedef struct {
  PgNode *node;
  Fields names;
} BodyRefs;

struct DotCtx {
  const PgSource *src;
  PgArena *a; /* the compilation's arena: what the IR keeps */
  PgArena *s; /* scratch, rewound after each node: labels, records, lines */
  PgDiag *d;
  PgProgram *p;
  PG_VEC(DotAttr) attrs;
  PG_VEC(DotPoint) chain;
  PG_VEC(DotCluster *) stack;
  PG_VEC(DotCluster *) clusters;
  PG_VEC(DotNodeStmt) nodes;
  PG_VEC(DotEdgeStmt) edges;
  PgMap *node_ids;   /* DOT node id -> PgNode */
  PgMap *graph_ids;  /* "graph_N" -> DotCluster */
  PgMap *kernels;    /* symbol -> PgKernel */
  PgMap *kernel_names;
  PgMap *names;      /* node and graph names given so far, to keep them unique */
  PgMap *buffers;    /* address -> PgBuffer */
  PgMap *events;     /* handle -> PgEvent */
  PG_VEC(BodyRefs) pending; /* child and conditional nodes, with the graphs they name */
};

PgDiag *dot_diag(DotCtx *c) { return c->d; }

static Slice slice_of(const DotCtx *c, PgStr s) { return (Slice){(uint32_t)(s.s - c->src->text), (uint32_t)s.len}; }
static PgStr str_of(const DotCtx *c, Slice s) {
  return s.off == NONE ? (PgStr){NULL, 0} : (PgStr){c->src->text + s.off, s.len};
}
static Place place_of(PgLoc l) { return (Place){l.line, l.col}; }
static PgLoc loc_of(const DotCtx *c, Place p) { return (PgLoc){c->src, p.line, p.col}; }

/* ---- parser hooks ---- */

static DotCluster *current(DotCtx *c) {
  for (size_t i = c->stack.n; i-- > 0;)
    if (c->stack.v[i]) return c->stack.v[i];
  return NULL;
}

void dot_subgraph_begin(DotCtx *c, const PgStr *id, PgLoc loc) {
  DotCluster *cl = pg_arena_alloc(c->a, sizeof *cl);
  if (id) cl->id = *id;
  cl->loc = loc;
  cl->parent = current(c);
  pg_vec_push(c->a, c->stack, cl);
  pg_vec_push(c->a, c->clusters, cl);
}

void dot_subgraph_end(DotCtx *c) {
  if (c->stack.n == 0) PG_BUG("subgraph stack underflow");
  c->stack.n--;
}

void dot_attr(DotCtx *c, PgStr key, PgStr val, PgLoc loc) {
  DotAttr at = {key, val, loc};
  pg_vec_push(c->a, c->attrs, at);
}

void dot_set(DotCtx *c, PgStr key, PgStr val) {
  DotCluster *cl = current(c);
  if (cl && pg_str_eq(key, "label")) {
    cl->label = val;
    cl->has_label = true;
  }
}

void dot_attr_stmt(DotCtx *c) { c->attrs.n = 0; }

void dot_node_stmt(DotCtx *c, PgStr id, PgLoc loc) {
  DotNodeStmt n = {.id = slice_of(c, id), .loc = place_of(loc), .cluster = current(c), .label = {NONE, 0},
                   .shape = {NONE, 0}};
  const DotAttr *label = NULL;
  for (size_t i = 0; i < c->attrs.n; i++) { /* a repeated attribute: the last one counts */
    if (pg_str_eq(c->attrs.v[i].key, "label")) label = &c->attrs.v[i];
    if (pg_str_eq(c->attrs.v[i].key, "shape")) n.shape = slice_of(c, c->attrs.v[i].val);
  }
  if (label) {
    n.label = slice_of(c, label->val);
    n.label_loc = place_of(pg_loc_advance(label->loc, label->key.s, (size_t)(label->val.s - label->key.s)));
  }
  c->attrs.n = 0;
  pg_vec_push(c->a, c->nodes, n);
}

void dot_edge_point(DotCtx *c, PgStr id, PgLoc loc) {
  DotPoint pt = {slice_of(c, id), place_of(loc)};
  pg_vec_push(c->a, c->chain, pt);
}

void dot_edge_stmt(DotCtx *c) {
  for (size_t i = 0; i + 1 < c->chain.n; i++) {
    DotEdgeStmt e = {c->chain.v[i], c->chain.v[i + 1]};
    pg_vec_push(c->a, c->edges, e);
  }
  c->chain.n = 0;
  c->attrs.n = 0;
}

/* ---- small helpers ---- */

static char *str_dup(DotCtx *c, PgStr s) { return pg_arena_strndup(c->a, s.s, s.len); }

/* Parses all of `s` as an unsigned number, as strtoull(s, &end, 0) with *end == 0
 * and no overflow: an optional '+', then decimal, 0x hex or 0 octal.  A million of
 * them in a verbose dump: no strtoull. */
static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || isspace((unsigned char)*s)) return false;
  if (*s == '+') s++;
  unsigned base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2]))
    s += 2, base = 16;
  else if (s[0] == '0')
    base = 8;
  if (!isxdigit((unsigned char)*s) || (base != 16 && !isdigit((unsigned char)*s))) return false;
  uint64_t v;
  if (!pg_digits_u64(&s, base, &v) || *s) return false;
  *out = v;
  return true;
}

static bool parse_u32(const char *s, uint32_t *out) {
  uint64_t v;
  if (!parse_u64(s, &v) || v > UINT32_MAX) return false;
  *out = (uint32_t)v;
  return true;
}

typedef struct {
  DotCtx *c;
  PgNode *node;
  bool record;
  PgRecPairs pairs; /* record labels */
  Fields lines; /* plain labels: the lines after the kind line */
  bool failed;
} Label;

/* "key" from a record table, or "key: value" from a plain label's lines. */
static bool label_get(Label *l, const char *key, Field *out) {
  if (l->record) { /* as pg_record_get (the first pair of that key), the first bytes compared inline */
    for (size_t i = 0; i < l->pairs.n; i++) {
      const PgRecPair *p = &l->pairs.v[i];
      if (p->key[0] == key[0] && strcmp(p->key, key) == 0) {
        *out = (Field){p->val->text, p->val->loc};
        return true;
      }
    }
    return false;
  }
  size_t kl = strlen(key);
  for (size_t i = 0; i < l->lines.n; i++) {
    const char *t = l->lines.v[i].text;
    if (strncmp(t, key, kl) == 0 && t[kl] == ':') {
      const char *v = t + kl + 1;
      while (*v == ' ') v++;
      *out = (Field){v, pg_loc_advance(l->lines.v[i].loc, t, (size_t)(v - t))};
      return true;
    }
  }
  return false;
}

static bool label_u64(Label *l, const char *key, uint64_t *out) {
  Field f;
  if (!label_get(l, key, &f)) return false;
  if (!parse_u64(f.text, out)) {
    pg_error(l->c->d, f.loc, "expected a number for '%s', found '%s'", key, f.text);
    l->failed = true;
    return false;
  }
  return true;
}

static bool label_u32(Label *l, const char *key, uint32_t *out) {
  uint64_t v;
  if (!label_u64(l, key, &v)) return false;
  if (v > UINT32_MAX) {
    Field f;
    label_get(l, key, &f);
    pg_error(l->c->d, f.loc, "'%s' is out of range: %s", key, f.text);
    l->failed = true;
    return false;
  }
  *out = (uint32_t)v;
  return true;
}

/* The first plain-label line starting with `prefix` ("(" or "<<<"). */
static const Field *label_line(Label *l, const char *prefix) {
  for (size_t i = 0; i < l->lines.n; i++)
    if (strncmp(l->lines.v[i].text, prefix, strlen(prefix)) == 0) return &l->lines.v[i];
  return NULL;
}

/* ---- buffers and events named by captured addresses ---- */

/* v in lower-case hex, as "%" PRIx64 writes it (tens of thousands of addresses in a
 * dump: no printf) */
static void hex_key(uint64_t v, char key[17]) {
  char digits[16];
  size_t n = 0;
  do digits[n++] = "0123456789abcdef"[v & 15];
  while (v >>= 4);
  for (size_t i = 0; i < n; i++) key[i] = digits[n - 1 - i];
  key[n] = 0;
}

static PgBuffer *buffer_at(DotCtx *c, uint64_t addr, uint64_t extent, PgLoc loc) {
  char key[17];
  hex_key(addr, key);
  PgBuffer *b = pg_map_get(c->buffers, key);
  if (!b) {
    b = pg_arena_alloc(c->a, sizeof *b);
    b->name = pg_arena_printf(c->a, "p%s", key);
    b->role = PG_ROLE_UNKNOWN;
    b->has_addr = true;
    b->addr = addr;
    b->loc = loc;
    pg_map_put(c->buffers, pg_arena_strdup(c->a, key), b);
    pg_vec_push(c->a, c->p->buffers, b);
  }
  if (extent > b->size) b->size = extent;
  return b;
}

static PgPtr ptr_at(DotCtx *c, uint64_t addr, uint64_t extent, PgLoc loc) {
  if (addr == 0) return (PgPtr){NULL, 0};
  return (PgPtr){buffer_at(c, addr, extent, loc), 0};
}

static PgEvent *event_at(DotCtx *c, uint64_t handle, PgLoc loc) {
  char key[17];
  hex_key(handle, key);
  PgEvent *e = pg_map_get(c->events, key);
  if (!e) {
    e = pg_arena_alloc(c->a, sizeof *e);
    e->name = pg_arena_printf(c->a, "ev%s", key);
    e->has_handle = true;
    e->handle = handle;
    e->loc = loc;
    pg_map_put(c->events, pg_arena_strdup(c->a, key), e);
    pg_vec_push(c->a, c->p->events, e);
  }
  return e;
}

/* ---- kernels ---- */

/* A short readable name from a symbol: the last one or two names of an Itanium
 * mangled name (_Z5scalePffi -> scale, _ZN8internal5gemvx6kernelI... -> gemvx_kernel),
 * or the symbol itself when it is already a plain identifier. */
static const char *short_name(PgArena *a, const char *sym) {
  const char *names[2] = {0};
  size_t lens[2] = {0};
  const char *s = sym;
  if (strncmp(s, "_Z", 2) == 0) {
    s += 2;
    if (*s == 'N') s++;
    while (*s == 'K' || *s == 'V') s++;
    while (isdigit((unsigned char)*s)) {
      char *end;
      unsigned long n = strtoul(s, &end, 10);
      if (n == 0 || strlen(end) < n) break;
      names[0] = names[1], lens[0] = lens[1];
      names[1] = end, lens[1] = n;
      s = end + n;
    }
    if (names[1]) {
      if (names[0])
        return pg_ident(a, "", pg_arena_printf(a, "%.*s_%.*s", (int)lens[0], names[0], (int)lens[1], names[1]));
      return pg_ident(a, "", pg_arena_strndup(a, names[1], lens[1]));
    }
  }
  if (strlen(sym) > 96) return pg_ident(a, "", pg_arena_strndup(a, sym, 64));
  return pg_ident(a, "", sym);
}

static PgKernel *kernel_for(DotCtx *c, const char *sym, PgLoc loc) {
  PgKernel *k = pg_map_get(c->kernels, sym);
  if (k) return k;
  k = pg_arena_alloc(c->a, sizeof *k);
  k->symbol = sym = pg_arena_strdup(c->a, sym); /* sym may live in the scratch arena */
  k->loc = loc;
  const char *base = short_name(c->a, sym), *name = base;
  for (int i = 2; pg_map_get(c->kernel_names, name); i++) name = pg_arena_printf(c->a, "%s_%d", base, i);
  k->name = name;
  pg_map_put(c->kernel_names, name, k);
  pg_map_put(c->kernels, sym, k);
  pg_vec_push(c->a, c->p->kernels, k);
  return k;
}

/* dim := N | {N} | {N,N} | {N,N,N} */
static const char *parse_dim(const char *s, uint32_t d[3]) {
  d[0] = d[1] = d[2] = 1;
  bool brace = *s == '{';
  if (brace) s++;
  for (int i = 0; i < 3; i++) {
    if (!isdigit((unsigned char)*s)) return NULL;
    uint64_t v;
    if (!pg_digits_u64(&s, 10, &v) || v == 0 || v > UINT32_MAX) return NULL;
    d[i] = (uint32_t)v;
    if (!brace || *s != ',') break;
    s++;
  }
  if (brace && *s++ != '}') return NULL;
  return s;
}

/* "<<<grid,block,smem>>>" as the whole of `s` */
static bool parse_launch(const char *s, PgNode *n) {
  if (strncmp(s, "<<<", 3) != 0) return false;
  s = parse_dim(s + 3, n->u.kernel.grid);
  if (!s || *s++ != ',') return false;
  s = parse_dim(s, n->u.kernel.block);
  if (!s || *s++ != ',') return false;
  if (!isdigit((unsigned char)*s)) return false;
  uint64_t smem;
  if (!pg_digits_u64(&s, 10, &smem) || smem > UINT32_MAX || strcmp(s, ">>>") != 0) return false;
  n->u.kernel.smem = (uint32_t)smem;
  return true;
}

static void read_kernel(Label *l, const char *name, PgLoc name_loc) {
  PgNode *n = l->node;
  DotCtx *c = l->c;
  const char *launch = strstr(name, "<<<");
  PgLoc launch_loc = name_loc;
  const char *sym = name;
  if (launch) {
    sym = pg_arena_strndup(c->s, name, (size_t)(launch - name));
  } else {
    const Field *f = label_line(l, "<<<");
    if (f) launch = f->text, launch_loc = f->loc;
  }
  if (!*sym) {
    pg_error(c->d, name_loc, "kernel node has no kernel name");
    l->failed = true;
    return;
  }
  n->u.kernel.kernel = kernel_for(c, sym, name_loc);
  if (launch && !parse_launch(launch, n)) {
    pg_error(c->d, launch_loc, "malformed launch dimensions '%s'; expected <<<grid,block,shared-bytes>>>",
             launch);
    l->failed = true;
  }
  uint32_t v;
  if (label_u32(l, "cooperative", &v)) n->u.kernel.cooperative = v != 0;
  if (label_u32(l, "priority", &v)) n->u.kernel.priority = (int)v;
}

/* ---- the other kinds ---- */

static bool copy_dir(const char *s, PgCopyDir *out) {
  static const struct {
    const char *word;
    PgCopyDir dir;
  } dirs[] = {{"HtoD", PG_DIR_HTOD}, {"DtoH", PG_DIR_DTOH}, {"DtoD", PG_DIR_DTOD},
              {"HtoH", PG_DIR_HTOH}, {"Default", PG_DIR_DEFAULT}};
  size_t len = strcspn(s, " ,)");
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (strlen(dirs[i].word) == len && strncmp(s, dirs[i].word, len) == 0) {
      *out = dirs[i].dir;
      return true;
    }
  return false;
}

/* "(a,b)" -> its two parts */
static bool parse_pair(DotCtx *c, const char *s, char **a, char **b) {
  size_t n = strlen(s);
  if (n < 5 || s[0] != '(' || s[n - 1] != ')') return false;
  const char *comma = strchr(s, ',');
  if (!comma) return false;
  *a = pg_arena_strndup(c->s, s + 1, (size_t)(comma - s - 1));
  *b = pg_arena_strndup(c->s, comma + 1, (size_t)(s + n - 1 - comma - 1));
  return true;
}

/* Which side of a copy a CUDA_MEMCPY3D memory type names: 'h', 'd', or 0 for
 * unified addressing (either). */
static char memory_side(const char *type) {
  if (strncmp(type, "HOST", 4) == 0) return 'h';
  if (strncmp(type, "DEVICE", 6) == 0) return 'd';
  return 0;
}

/* The other memcpy record, the driver's CUDA_MEMCPY3D fields (what a graph built
 * with cuGraphAddMemcpyNode prints): {{src | dst} | {MemoryType | Array | Host |
 * Device | XInBytes ...} | {...}} and {Extent | {WidthInBytes | Height | Depth}}. */
static void read_memcpy3d(Label *l) {
  PgNode *n = l->node;
  DotCtx *c = l->c;
  Field st, dt;
  if (!label_get(l, "src.MemoryType", &st) || !label_get(l, "dst.MemoryType", &dt)) {
    pg_error(c->d, n->loc, "memcpy record has neither 'kind' nor source and destination memory types");
    l->failed = true;
    return;
  }
  if (strncmp(st.text, "ARRAY", 5) == 0 || strncmp(dt.text, "ARRAY", 5) == 0) {
    pg_error(c->d, n->loc, "copies from or to CUDA arrays are not supported");
    l->failed = true;
    return;
  }
  char s = memory_side(st.text), d = memory_side(dt.text);
  n->u.memcpy.dir = !s || !d ? PG_DIR_DEFAULT : s == 'h' ? (d == 'h' ? PG_DIR_HTOH : PG_DIR_HTOD)
                                                          : (d == 'h' ? PG_DIR_DTOH : PG_DIR_DTOD);
  label_u64(l, "Extent.WidthInBytes", &n->u.memcpy.width);
  label_u64(l, "Extent.Height", &n->u.memcpy.height);
  label_u64(l, "Extent.Depth", &n->u.memcpy.depth);
  label_u64(l, "src.Pitch", &n->u.memcpy.src_pitch);
  label_u64(l, "dst.Pitch", &n->u.memcpy.dst_pitch);
  uint64_t src, dst, sx = 0, dx = 0;
  bool have = label_u64(l, s == 'h' ? "src.Host" : "src.Device", &src) &&
              label_u64(l, d == 'h' ? "dst.Host" : "dst.Device", &dst);
  if (!have) return;
  label_u64(l, "src.XInBytes", &sx);
  label_u64(l, "dst.XInBytes", &dx);
  uint64_t rows = n->u.memcpy.height * n->u.memcpy.depth;
  uint64_t sp = n->u.memcpy.src_pitch ? n->u.memcpy.src_pitch : n->u.memcpy.width;
  uint64_t dp = n->u.memcpy.dst_pitch ? n->u.memcpy.dst_pitch : n->u.memcpy.width;
  n->u.memcpy.src = ptr_at(c, src, sx + sp * (rows ? rows - 1 : 0) + n->u.memcpy.width, n->loc);
  n->u.memcpy.dst = ptr_at(c, dst, dx + dp * (rows ? rows - 1 : 0) + n->u.memcpy.width, n->loc);
  n->u.memcpy.src.offset = sx;
  n->u.memcpy.dst.offset = dx;
  n->u.memcpy.has_ptrs = true;
}

static void read_memcpy(Label *l) {
  PgNode *n = l->node;
  DotCtx *c = l->c;
  n->u.memcpy.height = n->u.memcpy.depth = 1;
  if (l->record) {
    Field kind;
    if (!label_get(l, "kind", &kind)) {
      read_memcpy3d(l);
      return;
    }
    if (!copy_dir(kind.text, &n->u.memcpy.dir)) {
      pg_error(c->d, kind.loc, "unknown memcpy kind '%s'", kind.text);
      l->failed = true;
      return;
    }
    n->u.memcpy.pageable = strstr(kind.text, "PAGEABLE") != NULL; /* "DtoH (DEVICE to HOST PAGEABLE)" */
    label_u64(l, "Extent.Width", &n->u.memcpy.width);
    label_u64(l, "Extent.Height", &n->u.memcpy.height);
    label_u64(l, "Extent.Depth", &n->u.memcpy.depth);
    label_u64(l, "srcPtr.pitch", &n->u.memcpy.src_pitch);
    label_u64(l, "dstPtr.pitch", &n->u.memcpy.dst_pitch);
    uint64_t src, dst, sx = 0, dx = 0;
    if (label_u64(l, "srcPtr.ptr", &src) && label_u64(l, "dstPtr.ptr", &dst)) {
      label_u64(l, "srcPos.x", &sx);
      label_u64(l, "dstPos.x", &dx);
      uint64_t rows = n->u.memcpy.height * n->u.memcpy.depth;
      uint64_t sp = n->u.memcpy.src_pitch ? n->u.memcpy.src_pitch : n->u.memcpy.width;
      uint64_t dp = n->u.memcpy.dst_pitch ? n->u.memcpy.dst_pitch : n->u.memcpy.width;
      n->u.memcpy.src = ptr_at(c, src, sx + sp * (rows - 1) + n->u.memcpy.width, n->loc);
      n->u.memcpy.dst = ptr_at(c, dst, dx + dp * (rows - 1) + n->u.memcpy.width, n->loc);
      n->u.memcpy.src.offset = sx;
      n->u.memcpy.dst.offset = dx;
      n->u.memcpy.has_ptrs = true;
    }
    return;
  }
  const Field *f = label_line(l, "(");
  char *dir, *bytes;
  if (!f) return; /* the dump did not say */
  if (!parse_pair(c, f->text, &dir, &bytes) || !copy_dir(dir, &n->u.memcpy.dir) ||
      !parse_u64(bytes, &n->u.memcpy.width)) {
    pg_error(c->d, f->loc, "malformed memcpy summary '%s'; expected (kind,bytes)", f->text);
    l->failed = true;
  }
}

static void read_memset(Label *l) {
  PgNode *n = l->node;
  DotCtx *c = l->c;
  n->u.memset.height = 1;
  if (l->record) {
    uint64_t dptr;
    label_u32(l, "value", &n->u.memset.value);
    label_u32(l, "elementSize", &n->u.memset.elem);
    label_u64(l, "width", &n->u.memset.width);
    label_u64(l, "height", &n->u.memset.height);
    label_u64(l, "pitch", &n->u.memset.pitch);
    if (label_u64(l, "dptr", &dptr)) {
      uint64_t row = n->u.memset.width * n->u.memset.elem;
      uint64_t pitch = n->u.memset.pitch ? n->u.memset.pitch : row;
      n->u.memset.dst = ptr_at(c, dptr, pitch * (n->u.memset.height - 1) + row, n->loc);
      n->u.memset.has_dst = true;
    }
    return;
  }
  const Field *f = label_line(l, "(");
  char *value, *bytes;
  if (!f) return;
  if (!parse_pair(c, f->text, &value, &bytes) || !parse_u32(value, &n->u.memset.value) ||
      !parse_u64(bytes, &n->u.memset.width)) {
    pg_error(c->d, f->loc, "malformed memset summary '%s'; expected (value,bytes)", f->text);
    l->failed = true;
  }
  /* The summary gives bytes; the element size is not in the dump. */
  n->u.memset.elem = 0;
}

static void read_event(Label *l) {
  uint64_t h;
  if (label_u64(l, "event", &h)) l->node->u.event.event = event_at(l->c, h, l->node->loc);
}

static void read_mem(Label *l, bool alloc) {
  uint64_t dptr, bytes = 0;
  if (alloc) label_u64(l, "bytesize", &bytes);
  if (!label_u64(l, "dptr", &dptr)) return;
  PgBuffer *b = buffer_at(l->c, dptr, bytes, l->node->loc);
  if (alloc) b->role = PG_ROLE_INTERMEDIATE; /* memory the graph owns */
  l->node->u.mem.buf = b;
}

/* Does s name a graph: CUDA's "graph_N", or the label of a graph cluster here? */
static bool is_graph_name(DotCtx *c, const char *s) {
  if (strncmp(s, "graph_", 6) != 0 || !s[6]) return false;
  if (pg_map_get(c->graph_ids, s)) return true;
  for (s += 6; *s; s++)
    if (!isdigit((unsigned char)*s)) return false;
  return true;
}

static void read_conditional(Label *l) {
  PgNode *n = l->node;
  DotCtx *c = l->c;
  Field f;
  if (label_get(l, "Conditional Type", &f)) {
    int t;
    for (t = 0; t < PG_COND_COUNT; t++)
      if (strcasecmp(f.text, pg_cond_names[t]) == 0) break;
    if (t == PG_COND_COUNT) {
      pg_error(c->d, f.loc, "unknown conditional type '%s'", f.text);
      l->failed = true;
      return;
    }
    n->u.cond.type = (PgCondType)t;
  }
  n->u.cond.has_handle = label_u64(l, "Conditional Handle", &n->u.cond.handle);
  /* bodies: every value naming a graph ("True|graph_4", one per case of a switch) */
  BodyRefs refs = {n, {0}};
  for (size_t i = 0; i < l->pairs.n; i++) {
    const PgRecField *v = l->pairs.v[i].val;
    if (is_graph_name(c, v->text)) {
      Field name = {pg_arena_strdup(c->a, v->text), v->loc};
      pg_vec_push(c->a, refs.names, name);
    }
  }
  pg_vec_push(c->a, c->pending, refs);
}

/* The kind a CUDA dump names with `word` (MEM_ALLOC): the node-kind table's CUDA
 * kinds, in upper case. */
static bool cuda_kind(const char *word, PgNodeKind *out) {
  for (int k = 0; k < PG_NODE_KIND_COUNT; k++) {
    const char *name = pg_kinds[k].name, *w = word;
    if (!pg_kinds[k].cuda) continue;
    while (*name && *w == toupper((unsigned char)*name)) name++, w++;
    if (!*name && !*w) {
      *out = (PgNodeKind)k;
      return true;
    }
  }
  return false;
}

static bool is_upper_word(const char *s) {
  if (!isupper((unsigned char)*s)) return false;
  for (; *s; s++)
    if (!isupper((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_') return false;
  return true;
}

/* Splits a plain label into lines: literal newlines and \n \l \r escapes end a line. */
static void split_lines(DotCtx *c, PgStr raw, PgLoc loc, Fields *out) {
  size_t start = 0;
  PgLoc start_loc = loc;
  for (size_t i = 0; i <= raw.len; i++) {
    bool end = i == raw.len, esc = false;
    if (!end && raw.s[i] == '\\' && i + 1 < raw.len && strchr("nlr", raw.s[i + 1])) esc = true;
    if (end || raw.s[i] == '\n' || esc) {
      char *t = pg_label_unescape(c->s, raw.s + start, i - start);
      size_t lead = strspn(t, " \t\r");
      Field f = {t + lead, pg_loc_advance(start_loc, raw.s + start, lead)};
      size_t n = strlen(f.text);
      while (n > 0 && strchr(" \t\r", f.text[n - 1])) ((char *)f.text)[--n] = 0;
      if (n > 0) pg_vec_push(c->s, *out, f);
      size_t next = i + (esc ? 2 : 1);
      if (next <= raw.len) start_loc = pg_loc_advance(start_loc, raw.s + start, next - start);
      start = next;
      if (esc) i++;
    }
  }
}

/* `base`, or base_2, base_3...: two DOT ids may sanitize to the same name. */
static const char *unique(DotCtx *c, const char *base) {
  void **slot = pg_map_slot(c->names, base); /* one probe in the usual case: a new name */
  if (!*slot) return *slot = (void *)base;
  const char *name = base;
  for (int i = 2; pg_map_get(c->names, name); i++) name = pg_arena_printf(c->a, "%s_%d", base, i);
  pg_map_put(c->names, name, (void *)name);
  return name;
}

/* The digits at s before end, up to 9 of them (an unsigned's worth), past them; NULL
 * if none. */
static const char *digits(const char *s, const char *end, size_t *n) {
  size_t k = 0;
  while (k < 9 && s + k < end && isdigit((unsigned char)s[k])) k++;
  *n = k;
  return k ? s + k : NULL;
}

/* CUDA's "graph_G_node_N" (len bytes at id, no leading zeros) -> "gG.nN" in out (22
 * bytes): its length, or 0 for any other id.  A million of them: no scanf, no printf. */
static size_t cuda_node_name(const char *id, size_t len, char *out) {
  const char *g = id + 6, *n, *end, *stop = id + len; /* nothing read at or past stop */
  size_t gl, nl;
  if (len < 14 || memcmp(id, "graph_", 6) != 0 || !(n = digits(g, stop, &gl)) || stop - n < 7 ||
      memcmp(n, "_node_", 6) != 0 || !(end = digits(n += 6, stop, &nl)) || end != stop || (g[0] == '0' && gl > 1) ||
      (n[0] == '0' && nl > 1))
    return 0;
  out[0] = 'g';
  memcpy(out + 1, g, gl);
  memcpy(out + 1 + gl, ".n", 2);
  memcpy(out + 3 + gl, n, nl);
  out[3 + gl + nl] = 0;
  return 3 + gl + nl;
}

/* A node's name: from CUDA's id, or the id sanitized to an identifier. */
static const char *node_name(DotCtx *c, const char *id) {
  char buf[24];
  size_t len = cuda_node_name(id, strlen(id), buf);
  if (len) return unique(c, pg_arena_strndup(c->a, buf, len));
  unsigned gn, nn;
  int used = 0;
  if (sscanf(id, "graph_%u_node_%u%n", &gn, &nn, &used) == 2 && id[used] == 0) /* leading zeros, long numbers */
    return unique(c, pg_arena_printf(c->a, "g%u.n%u", gn, nn));
  return unique(c, pg_ident(c->a, "", id));
}

/* ---- CUDA's usual records, read directly ----
 *
 * Most nodes of a verbose dump are kernels, and CUDA writes each kernel's record the
 * same way (and each memset's, and each memcpy's of the runtime API):
 *
 *   {KERNEL | {ID | N (topoId: T) | SYMBOL\<\<\<GRID,BLOCK,SMEM\>\>\>}
 *    | {{node handle | func handle} | {H | F}}
 *    | {accessPolicyWindow | {base_ptr | num_bytes | hitRatio | hitProp | missProp} | {V | V | V | V | V}}
 *    | {cooperative | C} | {priority | P}}
 *   {MEMSET | {{ID | node handle | dptr | pitch | value | elementSize | width | height} | {V | ... | V}}}
 *   {MEMCPY | {{ID | node handle} | {N (topoId: T) | H}} | {kind | K}
 *    | {{srcPtr | dstPtr} | {pitch | ptr | xsize | ysize | pitch | ptr | xsize | ysize} | {V | ... | V}}
 *    | {{srcPos | {{x | X} | {y | Y} | {z | Z}}} | {dstPos | {...}} | {Extent | {{Width | W} | {Height | H} | {Depth | D}}}}}
 *
 * usual_record() matches a label against exactly these shapes, field by field with
 * record.c's rules (whitespace, escapes, trimming), without building the record
 * tree: on a match it gives the kind word and the same pairs, in the same order,
 * with the same texts and locations, as pg_record_parse_n and pg_record_pairs would.
 * Anything else -- another CUDA's fields, a port, an empty field -- is no match, and
 * the label goes the general way (which reports any error). */

/* A shape, item by item: "{", "|" and "}" stand for themselves; "@KEY" for a text,
 * the value of the pair KEY (as record.c's table rules name it); any other item for
 * exactly that text (the kind word, the keys).  No text may be empty. */
static const char *const KERNEL_RECORD[] = {
    "{", "KERNEL", "|", "{", "ID", "|", "@ID", "|", "@ID.1", "}", "|",
    "{", "{", "node handle", "|", "func handle", "}", "|", "{", "@node handle", "|", "@func handle", "}", "}", "|",
    "{", "accessPolicyWindow", "|", "{", "base_ptr", "|", "num_bytes", "|", "hitRatio", "|", "hitProp", "|",
    "missProp", "}", "|", "{", "@accessPolicyWindow.base_ptr", "|", "@accessPolicyWindow.num_bytes", "|",
    "@accessPolicyWindow.hitRatio", "|", "@accessPolicyWindow.hitProp", "|", "@accessPolicyWindow.missProp", "}", "}",
    "|", "{", "cooperative", "|", "@cooperative", "}", "|", "{", "priority", "|", "@priority", "}", "}"};
static const char *const MEMSET_RECORD[] = {
    "{", "MEMSET", "|", "{", "{", "ID", "|", "node handle", "|", "dptr", "|", "pitch", "|", "value", "|",
    "elementSize", "|", "width", "|", "height", "}", "|", "{", "@ID", "|", "@node handle", "|", "@dptr", "|",
    "@pitch", "|", "@value", "|", "@elementSize", "|", "@width", "|", "@height", "}", "}", "}"};
static const char *const MEMCPY_RECORD[] = {
    "{", "MEMCPY", "|", "{", "{", "ID", "|", "node handle", "}", "|", "{", "@ID", "|", "@node handle", "}", "}", "|",
    "{", "kind", "|", "@kind", "}", "|",
    "{", "{", "srcPtr", "|", "dstPtr", "}", "|", "{", "pitch", "|", "ptr", "|", "xsize", "|", "ysize", "|", "pitch",
    "|", "ptr", "|", "xsize", "|", "ysize", "}", "|", "{", "@srcPtr.pitch", "|", "@srcPtr.ptr", "|", "@srcPtr.xsize",
    "|", "@srcPtr.ysize", "|", "@dstPtr.pitch", "|", "@dstPtr.ptr", "|", "@dstPtr.xsize", "|", "@dstPtr.ysize", "}",
    "}", "|",
    "{", "{", "srcPos", "|", "{", "{", "x", "|", "@srcPos.x", "}", "|", "{", "y", "|", "@srcPos.y", "}", "|", "{", "z",
    "|", "@srcPos.z", "}", "}", "}", "|", "{", "dstPos", "|", "{", "{", "x", "|", "@dstPos.x", "}", "|", "{", "y", "|",
    "@dstPos.y", "}", "|", "{", "z", "|", "@dstPos.z", "}", "}", "}", "|", "{", "Extent", "|", "{", "{", "Width", "|",
    "@Extent.Width", "}", "|", "{", "Height", "|", "@Extent.Height", "}", "|", "{", "Depth", "|", "@Extent.Depth", "}",
    "}", "}", "}", "}"};
#define SHAPE(items) {items, sizeof items / sizeof *items}
static const struct {
  const char *const *items;
  size_t n;
} USUAL_RECORDS[] = {SHAPE(KERNEL_RECORD), SHAPE(MEMCPY_RECORD), SHAPE(MEMSET_RECORD)};
#undef SHAPE
enum { MAX_USUAL_PAIRS = 20 };

typedef struct {
  const char *s;
  size_t i, n;
  PgLoc loc;   /* where s[at] is */
  size_t at;
  char *buf;   /* decoded texts, one after another */
} FastRec;

static bool rec_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

/* The location of s[i] (i only grows): as record.c's loc_at. */
static PgLoc fast_loc(FastRec *r) {
  const char *p = r->s + r->at, *end = r->s + r->i, *nl;
  while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) r->loc.line++, r->loc.col = 1, p = nl + 1;
  r->loc.col += (int)(end - p);
  r->at = r->i;
  return r->loc;
}

/* The text field at s[i] (spaces skipped), decoded as record.c's parse_text does
 * (plain runs copied at once): its text, NUL-ended in buf, and where it starts.
 * False: a port, which this path leaves to the general one. */
static bool fast_text(FastRec *r, const char **text, PgLoc *loc) {
  static const bool special[256] = {['|'] = 1, ['{'] = 1, ['}'] = 1, ['\\'] = 1, ['<'] = 1};
  *loc = fast_loc(r);
  const char *s = r->s;
  char *out = r->buf;
  size_t len = 0, i = r->i, n = r->n;
  while (i < n) {
    size_t j = i;
    while (j < n && !special[(unsigned char)s[j]]) j++;
    memcpy(out + len, s + i, j - i);
    len += j - i;
    if ((i = j) >= n) break;
    char ch = s[i];
    if (ch == '|' || ch == '{' || ch == '}') break;
    if (ch == '<') return false;
    if (i + 1 < n) { /* a backslash escape */
      ch = s[++i];
      i++;
      if (ch == '\n') continue;
      if (ch == 'n' || ch == 'l' || ch == 'r') ch = '\n';
      out[len++] = ch;
      continue;
    }
    out[len++] = ch; /* a backslash at the very end */
    i++;
  }
  r->i = i;
  while (len > 0 && rec_space(out[len - 1])) len--;
  size_t lead = 0;
  while (lead < len && rec_space(out[lead])) lead++;
  out[len] = 0;
  *text = out + lead;
  r->buf = out + len + 1;
  return true;
}

static bool record_shape(DotCtx *c, PgStr raw, PgLoc lloc, const char *const *shape, size_t items, Label *l,
                         const char **word, PgLoc *word_loc) {
  FastRec r = {raw.s, 0, raw.len, lloc, 0, pg_arena_alloc(c->s, raw.len + 1)};
  PgRecField vals[MAX_USUAL_PAIRS];
  PgRecPair pairs[MAX_USUAL_PAIRS];
  int npairs = 0;
  const char *first = NULL;
  PgLoc first_loc = lloc;
  for (size_t k = 0; k < items; k++) {
    const char *p = shape[k];
    while (r.i < r.n && rec_space(r.s[r.i])) r.i++;
    if (p[1] == 0 && (*p == '{' || *p == '|' || *p == '}')) {
      if (r.i == r.n || r.s[r.i] != *p) return false;
      r.i++;
      continue;
    }
    if (r.i < r.n && r.s[r.i] == '{') return false; /* a group where the shape has a text */
    if (*p != '@' && first) { /* a key: compared in place (one with escapes in it goes the general way) */
      size_t len = strlen(p), j = r.i + len;
      if (r.n - r.i < len || memcmp(r.s + r.i, p, len) != 0) return false;
      while (j < r.n && rec_space(r.s[j])) j++;
      if (j == r.n || (r.s[j] != '|' && r.s[j] != '}')) return false;
      r.i = j;
      continue;
    }
    const char *text;
    PgLoc loc;
    if (!fast_text(&r, &text, &loc) || !*text) return false;
    if (!first) first = text, first_loc = loc;
    if (*p == '@') {
      if (npairs == MAX_USUAL_PAIRS) PG_BUG("a record shape with more than %d pairs", MAX_USUAL_PAIRS);
      vals[npairs] = (PgRecField){.text = text, .loc = loc};
      pairs[npairs] = (PgRecPair){p + 1, NULL};
      npairs++;
    } else if (strcmp(text, p) != 0) {
      return false;
    }
  }
  while (r.i < r.n && rec_space(r.s[r.i])) r.i++;
  if (r.i != r.n) return false;
  PgRecField *kept = pg_arena_alloc(c->s, (size_t)npairs * sizeof *kept);
  if (l->pairs.n) PG_BUG("a usual record read after other pairs");
  l->pairs.v = pg_arena_alloc(c->s, (size_t)npairs * sizeof *l->pairs.v); /* (at once, not by doubling) */
  l->pairs.cap = (size_t)npairs;
  for (int k = 0; k < npairs; k++) {
    kept[k] = vals[k];
    pairs[k].val = &kept[k];
    l->pairs.v[l->pairs.n++] = pairs[k];
  }
  *word = first, *word_loc = first_loc;
  return true;
}

static bool usual_record(DotCtx *c, PgStr raw, PgLoc lloc, Label *l, const char **word, PgLoc *word_loc) {
  for (size_t i = 0; i < sizeof USUAL_RECORDS / sizeof *USUAL_RECORDS; i++)
    if (record_shape(c, raw, lloc, USUAL_RECORDS[i].items, USUAL_RECORDS[i].n, l, word, word_loc)) return true;
  return false;
}

static void read_node(DotCtx *c, const DotNodeStmt *st) {
  struct {
    PgStr id, label, shape;
    PgLoc loc, label_loc;
    DotCluster *cluster;
  } stmt = {str_of(c, st->id),    str_of(c, st->label),        str_of(c, st->shape),
            loc_of(c, st->loc), loc_of(c, st->label_loc), st->cluster},
    *s = &stmt;
  const char *id = pg_label_unescape(c->a, s->id.s, s->id.len);
  if (!s->cluster) {
    pg_error(c->d, s->loc, "node '%s' is outside any graph cluster (subgraph cluster_N)", id);
    return;
  }
  void **slot = pg_map_slot(c->node_ids, id); /* valid until node_ids' next insertion, below */
  PgNode *prev = *slot;
  if (prev) {
    pg_error(c->d, s->loc, "duplicate node '%s'", id);
    pg_note(c->d, prev->loc, "'%s' was first defined here", id);
    return;
  }
  if (!s->label.s) {
    pg_error(c->d, s->loc, "node '%s' has no label, so its kind is unknown", id);
    return;
  }
  PgLoc lloc = s->label_loc;
  PgStr raw = s->label;
  size_t lead = 0;
  while (lead < raw.len && strchr(" \t\r\n", raw.s[lead])) lead++;
  bool record = (lead < raw.len && raw.s[lead] == '{') ||
                (s->shape.s && (pg_str_eq(s->shape, "record") || pg_str_eq(s->shape, "Mrecord")));

  Label l = {.c = c, .record = record};
  const char *word = NULL; /* the kind word, kernel name or child graph name */
  PgLoc word_loc;
  if (record && usual_record(c, raw, lloc, &l, &word, &word_loc)) {
    /* (a usual kernel or memset record: its kind word and pairs, read directly) */
  } else if (record) {
    const PgRecField *rec = pg_record_parse_n(c->s, c->d, raw.s, raw.len, lloc);
    if (!rec) return;
    if (rec->kids.n == 1 && rec->kids.v[0]->is_group) rec = rec->kids.v[0];
    if (rec->kids.n == 0 || rec->kids.v[0]->is_group || !*rec->kids.v[0]->text) {
      pg_error(c->d, lloc, "record label of node '%s' does not start with a node kind", id);
      return;
    }
    word = rec->kids.v[0]->text;
    word_loc = rec->kids.v[0]->loc;
    pg_record_pairs(c->s, rec, &l.pairs);
  } else {
    split_lines(c, raw, lloc, &l.lines);
    if (l.lines.n < 2) {
      pg_error(c->d, lloc, "label of node '%s' has no node kind (expected \"ID\\nKIND...\")", id);
      return;
    }
    word = l.lines.v[1].text;
    word_loc = l.lines.v[1].loc;
    l.lines.v += 2, l.lines.n -= 2, l.lines.cap -= 2;
  }

  PgNodeKind kind;
  bool known = cuda_kind(word, &kind) && kind != PG_CHILD; /* a child is named by its body, graph_N */
  if (!known) kind = PG_KERNEL;
  bool octagon = s->shape.s && pg_str_eq(s->shape, "octagon");
  if (!known && is_graph_name(c, word)) kind = PG_CHILD, known = true;
  if (!known && !octagon && is_upper_word(word)) {
    pg_warning(c->d, word_loc, "unknown node kind '%s'; kept as an opaque node", word);
    kind = PG_OPAQUE;
  }
  PgGraph *g = s->cluster->owner->graph;
  PgNode *n = pg_node_new(c->p, g, kind, node_name(c, id), s->loc);
  pg_node_notes(c->p->arena, n)->origin = id;
  l.node = n;
  *slot = n;

  switch (kind) {
  case PG_KERNEL:
    if (record && strcmp(word, "KERNEL") == 0) {
      Field f;
      if (!label_get(&l, "ID.1", &f)) {
        pg_error(c->d, word_loc, "kernel record has no kernel name");
        return;
      }
      read_kernel(&l, f.text, f.loc);
    } else {
      read_kernel(&l, word, word_loc);
    }
    break;
  case PG_MEMCPY: read_memcpy(&l); break;
  case PG_MEMSET: read_memset(&l); break;
  case PG_HOST:
    label_u64(&l, "fn", &n->u.host.fn);
    label_u64(&l, "userData", &n->u.host.data);
    break;
  case PG_CHILD: {
    BodyRefs refs = {n, {0}};
    Field name = {pg_arena_strdup(c->a, word), word_loc};
    pg_vec_push(c->a, refs.names, name);
    pg_vec_push(c->a, c->pending, refs);
    break;
  }
  case PG_EVENT_RECORD:
  case PG_EVENT_WAIT: read_event(&l); break;
  case PG_MEM_ALLOC: read_mem(&l, true); break;
  case PG_MEM_FREE: read_mem(&l, false); break;
  case PG_CONDITIONAL: read_conditional(&l); break;
  case PG_OPAQUE: n->u.opaque.what = pg_arena_strdup(c->a, word); break;
  case PG_EMPTY: break;
  case PG_LIBCALL:
  case PG_HOSTOP:
  case PG_NODE_KIND_COUNT: PG_BUG("DOT has no %s nodes", pg_kinds[kind].name);
  }
}

/* Links child and conditional nodes to the body graphs their labels name. */
static void link_bodies(DotCtx *c) {
  for (size_t i = 0; i < c->pending.n; i++) {
    PgNode *n = c->pending.v[i].node;
    for (size_t k = 0; k < c->pending.v[i].names.n; k++) {
      const Field *ref = &c->pending.v[i].names.v[k];
      DotCluster *cl = pg_map_get(c->graph_ids, ref->text);
      if (!cl) {
        pg_error(c->d, ref->loc, "body graph '%s' is not in the dump", ref->text);
        continue;
      }
      if (cl->graph->owner) {
        pg_error(c->d, ref->loc, "graph '%s' is the body of more than one node", ref->text);
        continue;
      }
      cl->graph->owner = n;
      cl->is_body = true;
      if (n->kind == PG_CHILD)
        n->u.child.body = cl->graph;
      else
        pg_vec_push(c->a, n->u.cond.bodies, cl->graph);
    }
  }
}

static PgProgram *read_program(DotCtx *c, const PgSource *src);

PgProgram *pg_dot_read(PgArena *a, PgDiag *d, const PgSource *src) {
  DotCtx *c = pg_arena_alloc(a, sizeof *c);
  c->src = src;
  c->a = a;
  c->s = pg_arena_new();
  c->d = d;
  PgProgram *p = read_program(c, src);
  pg_arena_free(c->s);
  pg_arena_release_file(a, src->text); /* the IR holds what the passes need */
  return p;
}

/* Upper bounds on the node and edge statements, counted before parsing: every node
 * statement of a dump has an attribute list ('['), every edge an arrow ("->", "--").
 * The statement vectors are carved at these sizes once, instead of doubling (which
 * left each earlier copy behind in the arena: a quarter of a GiB at a million nodes);
 * a hand-written file that has more still grows them. */
static void reserve_statements(DotCtx *c, const PgSource *src) {
  size_t brackets = 0, arrows = 0;
  const char *end = src->text + src->len;
  for (const char *q = src->text; (q = memchr(q, '[', (size_t)(end - q))) != NULL; q++) brackets++;
  for (const char *q = src->text; (q = memchr(q, '-', (size_t)(end - q))) != NULL; q++)
    arrows += q + 1 < end && (q[1] == '>' || q[1] == '-');
  c->nodes.v = pg_arena_alloc(c->a, brackets * sizeof *c->nodes.v), c->nodes.cap = brackets;
  c->edges.v = pg_arena_alloc(c->a, arrows * sizeof *c->edges.v), c->edges.cap = arrows;
}

static PgProgram *read_program(DotCtx *c, const PgSource *src) {
  PgArena *a = c->a;
  PgDiag *d = c->d;
  int errors = d->errors;
  reserve_statements(c, src);
  if (dot_parse(c, src, a, d) != 0 || d->errors > errors) return NULL;

  PgProgram *p = c->p = pg_program_new(a);
  c->node_ids = pg_map_new(a);
  c->graph_ids = pg_map_new(a);
  c->kernels = pg_map_new(a);
  c->kernel_names = pg_map_new(a);
  c->names = pg_map_new(a);
  c->buffers = pg_map_new(a);
  c->events = pg_map_new(a);
  pg_map_reserve(c->node_ids, c->nodes.n); /* no rehashing, no tables left behind */
  pg_map_reserve(c->names, c->nodes.n + c->clusters.n);

  /* 1. graphs: top-level subgraphs and those labelled graph_N; a nested subgraph
   * with another label belongs to the graph around it (parents come first) */
  for (size_t i = 0; i < c->clusters.n; i++) {
    DotCluster *cl = c->clusters.v[i];
    const char *label = cl->has_label ? str_dup(c, cl->label) : cl->id.s ? str_dup(c, cl->id) : "graph";
    if (cl->parent && strncmp(label, "graph_", 6) != 0) {
      cl->owner = cl->parent->owner;
      continue;
    }
    cl->owner = cl;
    unsigned num;
    int used = 0;
    const char *name = sscanf(label, "graph_%u%n", &num, &used) == 1 && !label[used] ? pg_arena_printf(a, "g%u", num)
                       : strncmp(label, "graph_", 6) == 0 && label[6]                ? pg_ident(a, "", label + 6)
                                                                                      : pg_ident(a, "", label);
    if (pg_map_get(c->graph_ids, label)) {
      pg_error(d, cl->loc, "duplicate graph '%s'", label);
      continue;
    }
    pg_map_put(c->graph_ids, label, cl);
    cl->graph = pg_graph_new(p, unique(c, name), cl->loc);
  }
  if (d->errors > errors) return NULL;
  if (c->clusters.n == 0) {
    pg_error(d, (PgLoc){src, 1, 1}, "no graph in the dump (expected 'subgraph cluster_N { ... }')");
    return NULL;
  }

  if (p->graphs.n == 1) { /* (a large dump's usual case) every node and edge is the one graph's: its vectors
                            carved at their sizes once, not by doubling, which leaves copies behind */
    PgGraph *g = p->graphs.v[0];
    g->nodes.v = pg_arena_alloc(a, (c->nodes.n ? c->nodes.n : 1) * sizeof *g->nodes.v), g->nodes.cap = c->nodes.n;
    g->edges.v = pg_arena_alloc(a, (c->edges.n ? c->edges.n : 1) * sizeof *g->edges.v), g->edges.cap = c->edges.n;
  }

  /* 2. nodes; the table slots that node i + AHEAD will take are asked for ahead, so
   * that their cache misses overlap (an id with escapes is left to miss) */
  enum { AHEAD = 16 };
  for (size_t i = 0; i < c->nodes.n && !pg_too_many_errors(d); i++) {
    if (i + AHEAD < c->nodes.n) {
      PgStr id = str_of(c, c->nodes.v[i + AHEAD].id);
      char buf[24];
      size_t len;
      if (!memchr(id.s, '\\', id.len)) {
        pg_map_prefetch(c->node_ids, id.s, id.len);
        if ((len = cuda_node_name(id.s, id.len, buf))) pg_map_prefetch(c->names, buf, len);
      }
    }
    read_node(c, &c->nodes.v[i]);
    pg_arena_reset(c->s);
  }

  /* 3. edges: endpoints looked up EDGE_BATCH edges at a time, so that the id table's
   * cache misses overlap (pg_map_get_many); an id without escapes is its own key */
  enum { EDGE_BATCH = 256 };
  for (size_t at = 0; at < c->edges.n && !pg_too_many_errors(d); at += EDGE_BATCH) {
    size_t nb = c->edges.n - at < EDGE_BATCH ? c->edges.n - at : EDGE_BATCH;
    const char *keys[2 * EDGE_BATCH];
    size_t lens[2 * EDGE_BATCH];
    void *vals[2 * EDGE_BATCH];
    for (size_t i = 0; i < 2 * nb; i++) {
      const DotEdgeStmt *e = &c->edges.v[at + i / 2];
      PgStr id = str_of(c, i % 2 ? e->to.id : e->from.id);
      if (memchr(id.s, '\\', id.len)) id.s = pg_label_unescape(c->s, id.s, id.len), id.len = strlen(id.s);
      keys[i] = id.s, lens[i] = id.len;
    }
    pg_map_get_many(c->node_ids, 2 * nb, keys, lens, vals);
    for (size_t i = 0; i < nb && !pg_too_many_errors(d); i++) {
      DotEdgeStmt *e = &c->edges.v[at + i];
      const DotPoint *pts[2] = {&e->from, &e->to};
      PgNode *ends[2];
      for (int k = 0; k < 2; k++) {
        ends[k] = vals[2 * i + k];
        if (!ends[k])
          pg_error(d, loc_of(c, pts[k]->loc), "edge endpoint '%.*s' has no node statement", (int)lens[2 * i + k], keys[2 * i + k]);
      }
      if (!ends[0] || !ends[1]) continue;
      if (ends[0]->graph != ends[1]->graph) {
        pg_error(d, loc_of(c, e->from.loc), "edge from '%s' to '%s' crosses graphs", pg_node_origin(ends[0]), pg_node_origin(ends[1]));
        continue;
      }
      pg_edge_add(p, ends[0]->graph, ends[0], ends[1], PG_EDGE_FULL, loc_of(c, e->from.loc));
    }
    pg_arena_reset(c->s);
  }

  /* 4. bodies and the root */
  link_bodies(c);
  if (d->errors > errors) return NULL;
  PgGraph *root = NULL;
  for (size_t i = 0; i < p->graphs.n; i++) {
    PgGraph *g = p->graphs.v[i];
    if (g->owner) continue;

    if (root) {
      pg_error(d, g->loc, "graph '%s' is nobody's body, but '%s' is already the root graph", g->name,
               root->name);
      return NULL;
    }
    root = g;
  }
  if (!root) {
    pg_error(d, p->graphs.v[0]->loc, "no root graph: every graph is the body of a node");
    return NULL;
  }
  size_t r = 0; /* the root goes first; the others keep their order */
  while (p->graphs.v[r] != root) r++;
  memmove(p->graphs.v + 1, p->graphs.v, r * sizeof *p->graphs.v);
  p->graphs.v[0] = root;
  pg_program_link(p);
  return p;
}

/*
 * ir.c -- the tables behind pgcc.h's X-macros, and the constructors every frontend
 * and pass uses to build the IR.
 */
#include "pgcc.h"

#include <ctype.h>
#include <string.h>

const PgKindInfo pg_kinds[PG_NODE_KIND_COUNT] = {
#define X(e, name, graphable, cuda, cost) [PG_##e] = {name, graphable, cuda, cost},
    PG_NODE_KINDS(X)
#undef X
};
_Static_assert(PG_NODE_KIND_COUNT == 14, "node kinds: update docs/graph-format.md and the writers");
/* a million of them are most of a large program's memory: keep new fields off the
 * node (in its kind's payload, or on the side) */
_Static_assert(sizeof(PgNode) <= 152, "PgNode grew: a million of them are the IR's bulk (docs/benchmarks.md)");

const char *const pg_type_names[PG_TYPE_COUNT] = {
#define X(e, name, size) [PG_T_##e] = name,
    PG_TYPES(X)
#undef X
};
const unsigned pg_type_sizes[PG_TYPE_COUNT] = {
#define X(e, name, size) [PG_T_##e] = size,
    PG_TYPES(X)
#undef X
};
const PgRelocInfo pg_relocs[PG_RELOC_KIND_COUNT] = {
#define X(e, name, size, shift) [PG_RELOC_##e] = {name, size, shift},
    PG_RELOC_KINDS(X)
#undef X
};
const char *const pg_role_names[PG_ROLE_COUNT] = {
#define X(e, name) [PG_ROLE_##e] = name,
    PG_ROLES(X)
#undef X
};
const char *const pg_module_kind_names[PG_MOD_KIND_COUNT] = {"cubin", "fatbin", "ptx", "cuda",
                                                            "library"};
const char *const pg_dir_names[PG_DIR_COUNT] = {"htod", "dtoh", "dtod", "htoh", "default"};
const char *const pg_cond_names[PG_COND_COUNT] = {"if", "while", "switch"};

const PgCollInfo pg_colls[PG_COLL_COUNT] = {
#define X(e, fn, send, recv, op) [PG_COLL_##e] = {fn, send, recv, op},
    PG_COLLECTIVES(X)
#undef X
};
const char *const pg_redop_names[PG_OP_COUNT] = {
#define X(e, name) [PG_OP_##e] = name,
    PG_REDOPS(X)
#undef X
};

/* The dtypes NCCL has (ncclDataType_t): no i16, u16, bool, ptr or bytes. */
bool pg_coll_dtype_ok(PgType t) {
  return t == PG_T_I8 || t == PG_T_U8 || t == PG_T_I32 || t == PG_T_U32 || t == PG_T_I64 || t == PG_T_U64 ||
         t == PG_T_F16 || t == PG_T_F32 || t == PG_T_F64 || t == PG_T_BF16;
}

/* count * size * (1 or ranks), saturated at UINT64_MAX so that a huge count fails the
 * extent check instead of wrapping. */
uint64_t pg_coll_bytes(const PgCollective *c, bool recv) {
  unsigned mult = recv ? pg_colls[c->kind].recv_mult : pg_colls[c->kind].send_mult;
  uint64_t m = mult == PG_COLL_R ? c->comm->ranks : mult, size = pg_type_sizes[c->dtype];
  if (c->count && (size > UINT64_MAX / c->count || m > UINT64_MAX / (c->count * size))) return UINT64_MAX;
  return c->count * size * m;
}

bool pg_per_call(const PgBuffer *b) {
  return b->role != PG_ROLE_WEIGHT && b->role != PG_ROLE_INTERMEDIATE && b->role != PG_ROLE_WORKSPACE &&
         b->role != PG_ROLE_HOST && b->role != PG_ROLE_RNG;
}

const PgBuffer *pg_rng_of(const PgProgram *p) {
  for (size_t i = 0; i < p->buffers.n; i++)
    if (p->buffers.v[i]->role == PG_ROLE_RNG) return p->buffers.v[i];
  return NULL;
}

bool pg_in_arena(const PgBuffer *b) { return b->role == PG_ROLE_INTERMEDIATE || b->role == PG_ROLE_WORKSPACE; }

static void args_uses(const PgArgs *args, PgUseFn *fn, void *ctx) {
  for (size_t i = 0; i < args->n; i++) {
    if (args->v[i].kind == PG_ARG_PTR) fn(ctx, args->v[i].ptr.buf);
    if (args->v[i].kind == PG_ARG_BYTES)
      for (size_t k = 0; k < args->v[i].ptrs.n; k++) fn(ctx, args->v[i].ptrs.v[k].buf);
  }
}

void pg_node_uses(const PgNode *n, PgUseFn *fn, void *ctx) {
  switch (n->kind) {
  case PG_KERNEL: args_uses(&n->u.kernel.args, fn, ctx); break;
  case PG_LIBCALL:
    args_uses(&n->u.libcall.args, fn, ctx);
    if (n->u.libcall.coll) fn(ctx, n->u.libcall.coll->send.buf), fn(ctx, n->u.libcall.coll->recv.buf);
    break;
  case PG_MEMCPY:
    fn(ctx, n->u.memcpy.src.buf);
    fn(ctx, n->u.memcpy.dst.buf);
    break;
  case PG_MEMSET: fn(ctx, n->u.memset.dst.buf); break;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE: fn(ctx, n->u.mem.buf); break;
  default: break;
  }
}

PgProgram *pg_program_new(PgArena *a) {
  PgProgram *p = pg_arena_alloc(a, sizeof *p);
  p->arena = a;
  p->version = PG_GRAPH_FORMAT_VERSION;
  return p;
}

PgGraph *pg_graph_new(PgProgram *p, const char *name, PgLoc loc) {
  PgGraph *g = pg_arena_alloc(p->arena, sizeof *g);
  g->name = name;
  g->loc = loc;
  g->id = (uint32_t)p->graphs.n;
  pg_vec_push(p->arena, p->graphs, g);
  return g;
}

PgNode *pg_node_new(PgProgram *p, PgGraph *g, PgNodeKind kind, const char *name, PgLoc loc) {
  PgNode *n = pg_arena_alloc8(p->arena, sizeof *n);
  n->kind = kind;
  n->name = name;
  n->graph = g;
  n->index = (uint32_t)g->nodes.n;
  n->region = -1;
  n->loc = loc;
  pg_vec_push(p->arena, g->nodes, n);
  return n;
}

PgNodeNotes *pg_node_notes(PgArena *a, PgNode *n) {
  if (!n->notes) n->notes = pg_arena_alloc(a, sizeof *n->notes);
  return n->notes;
}

const char *const pg_edge_kinds[PG_EDGE_KIND_COUNT] = {"", "programmatic", "launch_order"};
const char *const pg_access_names[PG_ACCESS_COUNT] = {"", "r", "w", "rw", "o"};

bool pg_param_accesses(const PgParam *pa) {
  if (pa->access) return true;
  for (size_t q = 0; q < pa->ptrs.n; q++)
    if (pa->ptrs.v[q].access) return true;
  return false;
}

PgAccess pg_param_access(const PgParam *pa, long q) {
  if (q >= 0 && (size_t)q < pa->ptrs.n && pa->ptrs.v[q].access) return pa->ptrs.v[q].access;
  return pa->access ? pa->access : PG_ACCESS_RW;
}

void pg_edge_add(PgProgram *p, PgGraph *g, PgNode *from, PgNode *to, PgEdgeKind kind, PgLoc loc) {
  if (kind != PG_EDGE_FULL) { /* (the edges before it full, the kind its own) */
    while (g->edge_kinds.n < g->edges.n) pg_vec_push(p->arena, g->edge_kinds, (uint8_t)PG_EDGE_FULL);
    pg_vec_push(p->arena, g->edge_kinds, (uint8_t)kind);
  }
  PgEdge e = {from, to, loc};
  pg_vec_push(p->arena, g->edges, e);
}

PgEdgeKind pg_edge_kind(const PgGraph *g, size_t i) {
  return i < g->edge_kinds.n ? (PgEdgeKind)g->edge_kinds.v[i] : PG_EDGE_FULL;
}

PgEdgeKind pg_pred_kind(const PgGraph *g, const PgNode *n, size_t q) {
  return g->pred_kinds ? (PgEdgeKind)g->pred_kinds[pg_preds(n) + q - g->link_slots] : PG_EDGE_FULL;
}

/* Each node's preds and succs, in edge order.  Counted first, then carved from one
 * allocation per graph at their exact sizes: a million single-edge nodes would
 * otherwise hold two four-slot vectors each. */
void pg_program_link(PgProgram *p) {
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    PgGraph *g = p->graphs.v[gi];
    g->link_slots = NULL, g->pred_kinds = NULL;
    for (size_t i = 0; i < g->nodes.n; i++) g->nodes.v[i]->nsucc = g->nodes.v[i]->npred = 0;
    for (size_t i = 0; i < g->edges.n; i++) {
      g->edges.v[i].from->nsucc++;
      g->edges.v[i].to->npred++;
    }
    if (!g->edges.n) { /* nothing to carve (and no pointer arithmetic on NULL) */
      for (size_t i = 0; i < g->nodes.n; i++) g->nodes.v[i]->links = NULL;
      continue;
    }
    PgNode **slots = pg_arena_alloc(p->arena, 2 * g->edges.n * sizeof *slots);
    g->link_slots = slots;
    if (g->edge_kinds.n) g->pred_kinds = pg_arena_alloc(p->arena, 2 * g->edges.n);
    /* each node's succs, then its preds.  npred counts down the succs still to place
     * (the edges taken from the last, so the succs stay in edge order), which leaves it
     * 0 for counting up the preds: one sweep of the nodes fewer */
    for (size_t i = 0; i < g->nodes.n; i++) {
      PgNode *n = g->nodes.v[i];
      n->links = slots, slots += n->nsucc + n->npred, n->npred = n->nsucc;
    }
    for (size_t i = g->edges.n; i-- > 0;) g->edges.v[i].from->links[--g->edges.v[i].from->npred] = g->edges.v[i].to;
    for (size_t i = 0; i < g->edges.n; i++) {
      PgEdge *e = &g->edges.v[i];
      PgNode **pred = e->to->links + e->to->nsucc + e->to->npred++;
      if (g->pred_kinds) g->pred_kinds[pred - g->link_slots] = (uint8_t)pg_edge_kind(g, i);
      *pred = e->from;
    }
  }
}

/* Every edge runs from an earlier node to a later one, so the nodes' own order is
 * a topological order (and the graph has no cycle).  Frontends write nodes before
 * the edges that use them, so this is the usual case, and checking it is one
 * sequential pass where Kahn's algorithm chases pointers. */
bool pg_graph_in_order(const PgGraph *g) {
  for (size_t i = 0; i < g->edges.n; i++)
    if (g->edges.v[i].from->index >= g->edges.v[i].to->index) return false;
  return true;
}

bool pg_kind_from_name(const char *name, PgNodeKind *out) {
  for (int k = 0; k < PG_NODE_KIND_COUNT; k++)
    if (strcmp(pg_kinds[k].name, name) == 0) {
      *out = (PgNodeKind)k;
      return true;
    }
  return false;
}

bool pg_type_from_name(const char *name, PgType *out) {
  for (int t = 0; t < PG_TYPE_COUNT; t++)
    if (strcmp(pg_type_names[t], name) == 0) {
      *out = (PgType)t;
      return true;
    }
  return false;
}

/* prefix + s as a .graph name: [A-Za-z_][A-Za-z0-9_.]*, every other character
 * replaced by '_', and a '_' in front if it would not start with a letter. */
const char *pg_ident(PgArena *a, const char *prefix, const char *s) {
  size_t pl = strlen(prefix), n = strlen(s);
  char *r = pg_arena_alloc(a, pl + n + 2);
  memcpy(r + 1, prefix, pl);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    r[1 + pl + i] = (char)(isalnum(c) || c == '_' || c == '.' ? c : '_');
  }
  if (isalpha((unsigned char)r[1]) || r[1] == '_') return r + 1;
  r[0] = '_';
  return r;
}

PgStats pg_program_stats(const PgProgram *p) {
  PgStats s = {0};
  s.graphs = p->graphs.n;
  s.dims = p->dims.n;
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    s.nodes += g->nodes.n;
    s.edges += g->edges.n;
    for (size_t i = 0; i < g->nodes.n; i++) s.kernels += g->nodes.v[i]->kind == PG_KERNEL;
  }
  return s;
}

/*
 * ir_verify.c -- the IR's invariants, checked after the frontend and after every
 * pass (the driver runs it).  Errors are located at the node, edge or
 * declaration concerned.  Linear in the size of the program.
 *
 *   graphs: the first is the root and nobody's body; every other graph is the
 *           body of exactly one child or conditional node, which names it;
 *   nodes:  belong to their graph at their index; references resolve;
 *   edges:  join two nodes of one graph, no self-loops, no duplicates, no cycles; an edge
 *           that is not a full one (programmatic, launch_order) joins two kernels;
 *   kernels: parameters sorted, non-overlapping, of their type's size; inside a
 *           by-value parameter, relocations and don't-care bytes 4-byte aligned
 *           (relocations), inside it, not overlapping, and of a kind the file's
 *           format version has; arguments agree with the layout;
 *   pointers: inside their buffer;
 *   host reads: a read scalar's buffer and a guard's are host buffers (role host) that
 *           hold what is read; every kernel that takes a read scalar, and every guard,
 *           depends on a host synchronization that depends on a copy into its buffer
 *           (a callback scalar: on any synchronization), through the root graph's edges;
 *   buckets: a dim's values are 1 to 64 sizes, strictly increasing, each at least 1; a
 *           shape names a dim only in a per-call buffer (role input, output or unknown);
 *           a bucket scalar is an integer; a bucket switch is a switch with a body per
 *           value of its dim, and the only one of its dim;
 *   modules: globals (format version 2) only in code modules, not library ones, each
 *           with a name unique in its module and 1 byte to 1 MiB.
 */
#include "pgcc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const PgProgram *p;
  PgDiag *d;
  int errors;
} V;

#define FAIL(v, loc, ...) (pg_error((v)->d, (loc), __VA_ARGS__), (v)->errors++)

static void check_ptr(V *v, PgLoc loc, PgPtr p, uint64_t extent, const char *what) {
  if (!p.buf) return;
  if (p.offset > p.buf->size || extent > p.buf->size - p.offset)
    FAIL(v, loc, "%s: %s+%" PRIu64 " spans %" PRIu64 " bytes, past the end of the %" PRIu64 "-byte buffer", what,
         p.buf->name, p.offset, extent, p.buf->size);
}

/* A relocation or a run of don't-care bytes inside a by-value parameter. */
typedef struct {
  uint64_t begin, end;
  const char *what; /* "lo32", "don't-care" */
  PgLoc loc;
  size_t index; /* as written: ties keep it, so messages do not depend on qsort */
  bool bad;     /* misplaced (reported already): left out of the overlap check */
} Span;

static int span_order(const void *a, const void *b) {
  const Span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Parameter i's relocations and don't-care bytes: each of a kind its format version
 * has, a relocation 4-byte aligned, each inside the parameter, none overlapping
 * another (sorted by offset, each against the furthest-reaching one before it). */
static void check_inner(V *v, const PgKernel *k, size_t i, const PgParam *pa) {
  size_t n = pa->ptrs.n + pa->dontcare.n;
  Span *s = malloc(n * sizeof *s);
  if (!s) PG_BUG("out of memory");
  for (size_t q = 0; q < pa->ptrs.n; q++) {
    const PgReloc *r = &pa->ptrs.v[q];
    s[q] = (Span){r->offset, (uint64_t)r->offset + pg_relocs[r->kind].size, pg_relocs[r->kind].name, r->loc, q,
                  r->offset % 4 != 0};
    if (r->kind != PG_RELOC_ABS64 && v->p->version < 2)
      FAIL(v, r->loc, "kernel '%s': parameter %zu: a %s relocation needs .graph format version 2", k->name, i,
           pg_relocs[r->kind].name);
    if (r->offset % 4)
      FAIL(v, r->loc, "kernel '%s': parameter %zu: the %s relocation at %" PRIu32 " is not 4-byte aligned", k->name,
           i, pg_relocs[r->kind].name, r->offset);
  }
  for (size_t q = 0; q < pa->dontcare.n; q++) {
    const PgDontCare *dc = &pa->dontcare.v[q];
    s[pa->ptrs.n + q] = (Span){dc->offset, (uint64_t)dc->offset + dc->size, "don't-care", dc->loc, pa->ptrs.n + q,
                               dc->size == 0};
    if (v->p->version < 2)
      FAIL(v, dc->loc, "kernel '%s': parameter %zu: don't-care bytes need .graph format version 2", k->name, i);
    if (dc->size == 0) FAIL(v, dc->loc, "kernel '%s': parameter %zu: don't-care bytes of length 0", k->name, i);
  }
  for (size_t q = 0; q < n; q++)
    if (s[q].end > pa->size) {
      FAIL(v, s[q].loc, "kernel '%s': parameter %zu: %s bytes %" PRIu64 "..%" PRIu64 " lie past its %" PRIu32
           " bytes", k->name, i, s[q].what, s[q].begin, s[q].end, pa->size);
      s[q].bad = true;
    }
  size_t good = 0; /* the well-placed ones, sorted */
  for (size_t q = 0; q < n; q++)
    if (!s[q].bad) s[good++] = s[q];
  qsort(s, good, sizeof *s, span_order);
  for (size_t q = 1, far = 0; q < good; q++) {
    if (s[q].begin < s[far].end)
      FAIL(v, s[q].loc, "kernel '%s': parameter %zu: %s bytes %" PRIu64 "..%" PRIu64 " overlap %s bytes %" PRIu64
           "..%" PRIu64, k->name, i, s[q].what, s[q].begin, s[q].end, s[far].what, s[far].begin, s[far].end);
    if (s[q].end > s[far].end) far = q;
  }
  free(s);
}

static void check_layout(V *v, const PgKernel *k) {
  uint64_t end = 0;
  for (size_t i = 0; i < k->params.n; i++) {
    const PgParam *pa = &k->params.v[i];
    unsigned want = pg_type_sizes[pa->type];
    if (pa->offset < end)
      FAIL(v, k->loc, "kernel '%s': parameter %zu at offset %" PRIu32 " overlaps the one before it", k->name, i,
           pa->offset);
    if (want && pa->size != want)
      FAIL(v, k->loc, "kernel '%s': parameter %zu is %s, %u bytes, but its size is %" PRIu32, k->name, i,
           pg_type_names[pa->type], want, pa->size);
    if (pa->size == 0) FAIL(v, k->loc, "kernel '%s': parameter %zu has size 0", k->name, i);
    if (pa->ptrs.n || pa->dontcare.n) check_inner(v, k, i, pa);
    end = (uint64_t)pa->offset + pa->size;
  }
  if (end > 32764) /* CUDA's limit on kernel parameter space since 12.1 */
    FAIL(v, k->loc, "kernel '%s': parameters take %" PRIu64 " bytes, over CUDA's 32764", k->name, end);
}

static bool is_int_type(PgType t) { return t <= PG_T_U64 || t == PG_T_BOOL; }
static bool is_float_type(PgType t) { return t == PG_T_F16 || t == PG_T_BF16 || t == PG_T_F32 || t == PG_T_F64; }

static void check_args(V *v, const PgNode *n) {
  const PgKernel *k = n->u.kernel.kernel;
  const PgArgs *args = &n->u.kernel.args;
  if (!k->has_layout) {
    FAIL(v, n->loc, "node '%s' gives arguments, but kernel '%s' has no parameter layout", n->name, k->name);
    return;
  }
  if (args->n != k->params.n) {
    FAIL(v, n->loc, "node '%s' gives %zu arguments; kernel '%s' takes %zu", n->name, args->n, k->name,
         k->params.n);
    return;
  }
  for (size_t i = 0; i < args->n; i++) {
    const PgArg *a = &args->v[i];
    const PgParam *pa = &k->params.v[i];
    bool ok;
    switch (a->kind) {
    case PG_ARG_INT: ok = is_int_type(pa->type) || is_float_type(pa->type) || pa->type == PG_T_PTR; break;
    case PG_ARG_FLOAT: ok = is_float_type(pa->type); break;
    case PG_ARG_PTR: ok = pa->type == PG_T_PTR; break;
    case PG_ARG_SCALAR: ok = a->scalar->type == pa->type; break;
    case PG_ARG_BYTES: ok = pa->type == PG_T_BYTES; break;
    case PG_ARG_COND: ok = pa->type == PG_T_U64 || pa->type == PG_T_I64; break;
    default: ok = false;
    }
    if (!ok) {
      FAIL(v, a->loc, "argument %zu of node '%s' does not fit parameter %zu of kernel '%s' (%s, %" PRIu32 " bytes)",
           i, n->name, i, k->name, pg_type_names[pa->type], pa->size);
      continue;
    }
    if (a->kind == PG_ARG_PTR) check_ptr(v, a->loc, a->ptr, 0, "argument");
    if (a->kind == PG_ARG_COND && a->cond->node) { /* the handle lives in the conditional node's graph */
      const PgGraph *up = n->graph;
      for (int depth = 0; up && up != a->cond->node->graph && depth <= PG_MAX_NESTING; depth++)
        up = up->owner ? up->owner->graph : NULL;
      if (up != a->cond->node->graph)
        FAIL(v, a->loc, "node '%s' sets condition '%s', but is neither in the graph of its conditional node '%s' "
                        "nor inside that graph's bodies", n->name, a->cond->name, a->cond->node->name);
    }
    if (a->kind == PG_ARG_BYTES) {
      size_t hex = 0;
      while (a->lit[hex]) hex++;
      if (hex != 2 * (size_t)pa->size)
        FAIL(v, a->loc, "argument %zu of node '%s': %zu hex digits for a %" PRIu32 "-byte parameter", i, n->name,
             hex, pa->size);
      if (a->ptrs.n != pa->ptrs.n)
        FAIL(v, a->loc, "argument %zu of node '%s': %zu pointers for a parameter with %zu", i, n->name, a->ptrs.n,
             pa->ptrs.n);
      for (size_t q = 0; q < a->ptrs.n; q++) check_ptr(v, a->loc, a->ptrs.v[q], 0, "argument");
    }
  }
}

/* A guard checks a host buffer for at most the bytes it has. */
static void check_guard(V *v, const PgNode *n) {
  const PgBuffer *b = n->u.hostop.buf;
  if (!b) PG_BUG("guard '%s' without a buffer", n->name);
  if (b->role != PG_ROLE_HOST) {
    FAIL(v, n->loc, "guard '%s' checks buffer '%s', whose role is %s: a guard reads a host buffer (role host)",
         n->name, b->name, pg_role_names[b->role]);
    return;
  }
  size_t bytes = strlen(n->u.hostop.expect) / 2;
  if (bytes > b->size)
    FAIL(v, n->u.hostop.expect_loc, "guard '%s' expects %zu bytes, more than host buffer '%s' holds (%" PRIu64 ")",
         n->name, bytes, b->name, b->size);
}

/* A read scalar's buffer is a host buffer whose dtype says what its first element is. */
static void check_scalar(V *v, const PgScalar *s) {
  if (!s->from) return;
  const PgBuffer *b = s->from;
  if (b->role != PG_ROLE_HOST)
    FAIL(v, s->read_loc, "scalar '%s' reads buffer '%s', whose role is %s: a scalar is read from a host buffer "
         "(role host)", s->name, b->name, pg_role_names[b->role]);
  else if (!b->has_dtype)
    FAIL(v, s->read_loc, "scalar '%s' reads host buffer '%s', which has no dtype", s->name, b->name);
  else if (pg_type_sizes[b->dtype] > b->size)
    FAIL(v, s->read_loc, "scalar '%s' reads host buffer '%s', whose %" PRIu64 " bytes hold no %s", s->name, b->name,
         b->size, pg_type_names[b->dtype]);
  if (s->type == PG_T_PTR)
    FAIL(v, s->read_loc, "scalar '%s' is a ptr: a scalar read from a host buffer is a number", s->name);
}

/* The random-number state: 16 bytes (PyTorch's Philox seed and offset), an increment, at
 * most one per program. */
static void check_rng(V *v, const PgProgram *p) {
  const PgBuffer *first = NULL;
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role != PG_ROLE_RNG) continue;
    if (first)
      FAIL(v, b->loc, "buffer '%s': a second random-number state (role rng); the first is '%s'", b->name, first->name);
    first = first ? first : b;
    if (b->size != 16)
      FAIL(v, b->loc, "buffer '%s': the random-number state (role rng) is 16 bytes (a seed and an offset), not %" PRIu64,
           b->name, b->size);
    if (!b->increment)
      FAIL(v, b->loc, "buffer '%s': the random-number state (role rng) needs an increment (how far a call advances "
           "the Philox offset), at least 1", b->name);
    if (b->weights || b->has_shape)
      FAIL(v, b->loc, "buffer '%s': the random-number state (role rng) is libpgrt's: no weights, no shape", b->name);
  }
}

/* By name, then in the order written (they are one array): ties do not depend on qsort. */
static int by_name(const void *a, const void *b) {
  const PgGlobal *x = *(const PgGlobal *const *)a, *y = *(const PgGlobal *const *)b;
  int c = strcmp(x->name, y->name);
  return c ? c : x < y ? -1 : x > y;
}

/* A module's globals: of a code module in a version-2 program, named, sized, unique. */
static void check_globals(V *v, const PgModule *m) {
  size_t n = m->globals.n;
  if (!n) return;
  if (m->kind == PG_MOD_LIBRARY)
    FAIL(v, m->loc, "module '%s': a library module has no globals", m->name);
  if (v->p->version < 2) FAIL(v, m->loc, "module '%s': globals need .graph format version 2", m->name);
  const PgGlobal **s = malloc(n * sizeof *s);
  if (!s) PG_BUG("out of memory");
  for (size_t i = 0; i < n; i++) {
    const PgGlobal *g = s[i] = &m->globals.v[i];
    if (!g->name[0]) FAIL(v, g->loc, "module '%s': a global's name is empty", m->name);
    if (g->size < 1 || g->size > PG_MAX_GLOBAL_BYTES)
      FAIL(v, g->loc, "module '%s': global '%s' is %" PRIu32 " bytes (1 byte to 1 MiB)", m->name, g->name, g->size);
  }
  qsort(s, n, sizeof *s, by_name);
  for (size_t i = 1; i < n; i++)
    if (strcmp(s[i - 1]->name, s[i]->name) == 0)
      FAIL(v, s[i]->loc, "module '%s': global '%s' is given twice", m->name, s[i]->name);
  free(s);
}

/* Dims, the shapes and scalars that name them, and their switches. */
static void check_dims(V *v) {
  const PgProgram *p = v->p;
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    if (d->values.n < 1 || d->values.n > 64) FAIL(v, d->loc, "dim '%s' needs 1 to 64 values", d->name);
    for (size_t k = 0; k < d->values.n; k++)
      if (d->values.v[k] < 1 || (k && d->values.v[k] <= d->values.v[k - 1]))
        FAIL(v, d->loc, "dim '%s': values are sizes of at least 1, strictly increasing", d->name);
    const PgNode *n = d->node;
    if (!n) continue;
    if (n->kind != PG_CONDITIONAL || n->u.cond.dim != d) PG_BUG("dim '%s' and its switch disagree", d->name);
    if (n->u.cond.type != PG_COND_SWITCH)
      FAIL(v, n->loc, "node '%s' picks dim '%s''s bucket but is not a switch", n->name, d->name);
    if (n->u.cond.bodies.n != d->values.n)
      FAIL(v, n->loc, "node '%s': %zu bodies for the %zu buckets of dim '%s'", n->name, n->u.cond.bodies.n,
           d->values.n, d->name);
  }
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    for (size_t k = 0; b->shape_dims && k < b->shape.n; k++)
      if (b->shape_dims[k] && b->role != PG_ROLE_INPUT && b->role != PG_ROLE_OUTPUT && b->role != PG_ROLE_UNKNOWN) {
        FAIL(v, b->loc, "buffer '%s': a shape that names a dim is a per-call buffer's, not one of role %s", b->name,
             pg_role_names[b->role]);
        break;
      }
  }
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (s->bucket && (s->type > PG_T_U64 || s->is_input || s->value || pg_scalar_is_read(s)))
      FAIL(v, s->read_loc, "scalar '%s' holds a bucket's index: an integer, nothing else gives its value", s->name);
  }
}

static void check_node(V *v, const PgGraph *g, const PgNode *n, size_t i) {
  if (n->graph != g || n->index != i) PG_BUG("node '%s' is not at its place in graph '%s'", n->name, g->name);
  switch (n->kind) {
  case PG_KERNEL: {
    const uint32_t *gr = n->u.kernel.grid, *bl = n->u.kernel.block;
    if (!n->u.kernel.kernel) PG_BUG("kernel node '%s' without a kernel", n->name);
    bool known = gr[0] || gr[1] || gr[2] || bl[0] || bl[1] || bl[2];
    if (known && (!gr[0] || !gr[1] || !gr[2] || !bl[0] || !bl[1] || !bl[2]))
      FAIL(v, n->loc, "node '%s': launch dimensions must all be at least 1", n->name);
    if (known && (uint64_t)bl[0] * bl[1] * bl[2] > 1024)
      FAIL(v, n->loc, "node '%s': %" PRIu64 " threads per block, over CUDA's 1024", n->name,
           (uint64_t)bl[0] * bl[1] * bl[2]);
    if (known && (gr[0] > 2147483647u || gr[1] > 65535 || gr[2] > 65535 || bl[2] > 64))
      FAIL(v, n->loc, "node '%s': launch dimensions beyond CUDA's limits (grid 2^31-1 x 65535 x 65535, block z 64)",
           n->name);
    const uint32_t *cl = n->u.kernel.cluster;
    if (cl[0] && known && (gr[0] % cl[0] || gr[1] % cl[1] || gr[2] % cl[2]))
      FAIL(v, n->loc, "node '%s': the grid [%" PRIu32 ", %" PRIu32 ", %" PRIu32 "] is not a whole number of clusters [%"
           PRIu32 ", %" PRIu32 ", %" PRIu32 "]", n->name, gr[0], gr[1], gr[2], cl[0], cl[1], cl[2]);
    if (cl[0] && (uint64_t)cl[0] * cl[1] * cl[2] > 16)
      FAIL(v, n->loc, "node '%s': a cluster of %" PRIu64 " blocks, over the 16 CUDA allows", n->name,
           (uint64_t)cl[0] * cl[1] * cl[2]);
    if (cl[0] && v->p->version < 2)
      FAIL(v, n->loc, "node '%s': a thread block cluster needs .graph format version 2", n->name);
    if (n->u.kernel.smem > 232448)
      FAIL(v, n->loc, "node '%s': %" PRIu32 " bytes of dynamic shared memory, over the 227 KiB a block can have",
           n->name, n->u.kernel.smem);
    if (n->u.kernel.has_args) check_args(v, n);
    break;
  }
  case PG_MEMCPY: {
    uint64_t rows = n->u.memcpy.height * n->u.memcpy.depth;
    if (rows == 0 || n->u.memcpy.width == 0) {
      FAIL(v, n->loc, "node '%s': an empty copy", n->name);
      break;
    }
    uint64_t sp = n->u.memcpy.src_pitch ? n->u.memcpy.src_pitch : n->u.memcpy.width;
    uint64_t dp = n->u.memcpy.dst_pitch ? n->u.memcpy.dst_pitch : n->u.memcpy.width;
    if (n->u.memcpy.has_ptrs) {
      check_ptr(v, n->loc, n->u.memcpy.src, sp * (rows - 1) + n->u.memcpy.width, "copy source");
      check_ptr(v, n->loc, n->u.memcpy.dst, dp * (rows - 1) + n->u.memcpy.width, "copy destination");
    }
    break;
  }
  case PG_MEMSET: {
    uint32_t e = n->u.memset.elem;
    if (e != 0 && e != 1 && e != 2 && e != 4) FAIL(v, n->loc, "node '%s': memset element size must be 1, 2 or 4", n->name);
    uint64_t row = n->u.memset.width * (e ? e : 1);
    uint64_t pitch = n->u.memset.pitch ? n->u.memset.pitch : row;
    if (n->u.memset.height == 0 || row == 0) FAIL(v, n->loc, "node '%s': an empty memset", n->name);
    else if (n->u.memset.has_dst)
      check_ptr(v, n->loc, n->u.memset.dst, pitch * (n->u.memset.height - 1) + row, "memset destination");
    break;
  }
  case PG_CHILD:
    if (!n->u.child.body || n->u.child.body->owner != n) PG_BUG("child node '%s' and its body disagree", n->name);
    break;
  case PG_HOSTOP:
    if (pg_is_hostop(n, "guard")) check_guard(v, n);
    break;
  case PG_CONDITIONAL:
    if (n->u.cond.bodies.n == 0) FAIL(v, n->loc, "conditional node '%s' has no body graph", n->name);
    if (n->u.cond.type != PG_COND_SWITCH && n->u.cond.bodies.n > 2)
      FAIL(v, n->loc, "conditional node '%s': an %s has at most 2 bodies", n->name, pg_cond_names[n->u.cond.type]);
    for (size_t b = 0; b < n->u.cond.bodies.n; b++)
      if (n->u.cond.bodies.v[b]->owner != n) PG_BUG("conditional '%s' and its bodies disagree", n->name);
    if (n->u.cond.condition && n->u.cond.condition->node != n)
      PG_BUG("conditional '%s' and its condition disagree", n->name);
    if (n->u.cond.dim && n->u.cond.dim->node != n) PG_BUG("bucket switch '%s' and its dim disagree", n->name);
    break;
  case PG_LIBCALL:
    if (n->u.libcall.coll) { /* extents: count elements per rank, times the ranks where NCCL says so */
      const PgCollective *c = n->u.libcall.coll;
      if (c->comm->ranks < 1) PG_BUG("comm '%s' has no ranks", c->comm->name);
      if (c->count == 0) FAIL(v, n->loc, "collective node '%s': count is 0 (an empty collective)", n->name);
      check_ptr(v, c->send_loc, c->send, pg_coll_bytes(c, false), "collective send");
      check_ptr(v, c->recv_loc, c->recv, pg_coll_bytes(c, true), "collective recv");
    }
    break;
  default: break;
  }
}

/* Kahn's algorithm; on a cycle, walks it and reports it. */
static void check_acyclic(V *v, const PgGraph *g) {
  size_t n = g->nodes.n;
  uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg);
  uint32_t *queue = malloc((n ? n : 1) * sizeof *queue);
  if (!indeg || !queue) PG_BUG("out of memory");
  for (size_t i = 0; i < g->edges.n; i++) indeg[g->edges.v[i].to->index]++;
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < n; i++)
    if (!indeg[i]) queue[tail++] = (uint32_t)i;
  while (head < tail) {
    const PgNode *u = g->nodes.v[queue[head++]];
    for (size_t s = 0; s < u->nsucc; s++)
      if (--indeg[pg_succs(u)[s]->index] == 0) queue[tail++] = pg_succs(u)[s]->index;
  }
  if (tail < n) {
    /* Every node left has a predecessor that is left too, so walking predecessors
     * from any of them must repeat a node: the nodes from its first visit on,
     * reversed, are a cycle. */
    uint32_t *walk = malloc(n * sizeof *walk), *at = malloc(n * sizeof *at);
    if (!walk || !at) PG_BUG("out of memory");
    for (size_t i = 0; i < n; i++) at[i] = UINT32_MAX;
    const PgNode *u = NULL;
    for (size_t i = 0; i < n && !u; i++)
      if (indeg[i]) u = g->nodes.v[i];
    size_t len = 0;
    while (at[u->index] == UINT32_MAX) {
      at[u->index] = (uint32_t)len;
      walk[len++] = u->index;
      const PgNode *pred = NULL;
      for (size_t q = 0; q < u->npred && !pred; q++)
        if (indeg[pg_preds(u)[q]->index]) pred = pg_preds(u)[q];
      u = pred;
    }
    /* walk[a] is u and walk[k+1] a predecessor of walk[k], so the cycle runs
     * u -> walk[len-1] -> ... -> walk[a+1] -> u. */
    size_t a = at[u->index];
    char path[512];
    int used = snprintf(path, sizeof path, "'%s'", u->name);
    for (size_t k = len - 1; k > a && used < (int)sizeof path - 80; k--)
      used += snprintf(path + used, sizeof path - (size_t)used, " -> '%s'", g->nodes.v[walk[k]]->name);
    snprintf(path + used, sizeof path - (size_t)used, " -> '%s'", u->name);
    const PgNode *last = g->nodes.v[walk[a + 1 < len ? a + 1 : a]];
    PgLoc loc = u->loc;
    for (size_t e = 0; e < g->edges.n; e++)
      if (g->edges.v[e].from == last && g->edges.v[e].to == u) loc = g->edges.v[e].loc;
    FAIL(v, loc, "dependency cycle in graph '%s': %s", g->name, path);
    free(walk);
    free(at);
  }
  free(indeg);
  free(queue);
}

/* The edges; duplicates (dups: the node sweep saw one) reported node by node, stamp
 * (a zeroed uint32 per node) marking each successor with its source. */
static void check_edges(V *v, const PgGraph *g, bool dups, uint32_t *stamp) {
  bool forward = true; /* every edge from an earlier node to a later one: no cycle (pg_graph_in_order) */
  for (size_t i = 0; i < g->edges.n; i++) {
    const PgEdge *e = &g->edges.v[i];
    if (e->from->graph != g || e->to->graph != g) PG_BUG("edge outside its graph '%s'", g->name);
    if (e->from == e->to) FAIL(v, e->loc, "node '%s' depends on itself", e->from->name);
    PgEdgeKind k = pg_edge_kind(g, i);
    if (k != PG_EDGE_FULL && (e->from->kind != PG_KERNEL || e->to->kind != PG_KERNEL))
      FAIL(v, e->loc, "edge '%s' -> '%s' is %s: such an edge joins two kernel nodes, not a %s node and a %s node",
           e->from->name, e->to->name, pg_edge_kinds[k], pg_kinds[e->from->kind].name,
           pg_kinds[e->to->kind].name);
    forward = forward && e->from->index < e->to->index;
  }
  for (size_t i = 0; i < g->nodes.n && dups; i++) {
    const PgNode *u = g->nodes.v[i];
    for (size_t s = 0; s < u->nsucc; s++) {
      uint32_t t = pg_succs(u)[s]->index;
      if (stamp[t] == i + 1) FAIL(v, u->loc, "duplicate edge '%s' -> '%s'", u->name, pg_succs(u)[s]->name);
      stamp[t] = (uint32_t)i + 1;
    }
  }
  if (!forward) check_acyclic(v, g);
}

/* ---- host reads: what the host reads is there when it reads it ----
 *
 * A read scalar's value and a guard's bytes exist on the host only after a copy into
 * their host buffer and a synchronization after that copy.  Over the root graph in
 * topological order (a node inside a body counts as the root node that owns it):
 * written[v] holds the host buffers copied into by v or its ancestors; synced[v] those
 * copied into before a synchronization that v depends on, and one more bit, "after
 * some synchronization" (what a callback scalar needs).  One bit per host buffer, so
 * the time is the program's size times the sets' words. */

typedef struct {
  const PgBuffer **hb; /* the host buffers, sorted by address for bsearch */
  size_t nh, words;
  uint64_t *written, *synced; /* words per root node */
} HostSets;

static int by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const PgBuffer *const *)a, y = (uintptr_t) * (const PgBuffer *const *)b;
  return x < y ? -1 : x > y;
}

/* b's bit, or nh when it is no host buffer */
static size_t host_bit(const HostSets *h, const PgBuffer *b) {
  const PgBuffer **at = b ? bsearch(&b, h->hb, h->nh, sizeof *h->hb, by_address) : NULL;
  return at ? (size_t)(at - h->hb) : h->nh;
}

static bool has_bit(const uint64_t *set, size_t bit) { return set[bit / 64] >> (bit % 64) & 1; }

static const PgNode *top_of(const PgNode *n) {
  while (n->graph->owner) n = n->graph->owner;
  return n;
}

/* The kernel (or library call) n takes read scalars only after they are read. */
static void check_read_args(V *v, const HostSets *h, const PgNode *n, const PgArgs *args) {
  const uint64_t *synced = h->synced + top_of(n)->index * h->words;
  for (size_t i = 0; i < args->n; i++) {
    const PgArg *a = &args->v[i];
    if (a->kind != PG_ARG_SCALAR || !pg_scalar_is_read(a->scalar)) continue;
    const PgScalar *s = a->scalar;
    if (s->is_callback && !has_bit(synced, h->nh))
      FAIL(v, a->loc, "node '%s' takes callback scalar '%s' but depends on no host synchronization ('hostop op "
           "sync'): its callback is called after each one", n->name, s->name);
    size_t bit = s->from ? host_bit(h, s->from) : h->nh;
    if (s->from && bit < h->nh && !has_bit(synced, bit))
      FAIL(v, a->loc, "node '%s' takes scalar '%s', read from host buffer '%s', but depends on no host "
           "synchronization after a copy into '%s': the value would be read before it is there", n->name, s->name,
           s->from->name, s->from->name);
  }
}

/* guards: the node sweep saw a guard (pg_verify's sweep of every node) */
static void check_host_reads(V *v, bool guards) {
  const PgProgram *p = v->p;
  const PgGraph *root = p->graphs.v[0];
  bool any = guards;
  for (size_t i = 0; i < p->scalars.n && !any; i++) any = pg_scalar_is_read(p->scalars.v[i]);
  if (!any) return;
  HostSets h = {0};
  size_t n = root->nodes.n, head = 0, tail = 0;
  for (size_t i = 0; i < p->buffers.n; i++) h.nh += p->buffers.v[i]->role == PG_ROLE_HOST;
  h.words = h.nh / 64 + 1; /* and the bit "after some synchronization" */
  h.hb = malloc((h.nh ? h.nh : 1) * sizeof *h.hb);
  h.written = calloc((n ? n : 1) * h.words, sizeof *h.written);
  h.synced = calloc((n ? n : 1) * h.words, sizeof *h.synced);
  uint32_t *order = malloc((n ? n : 1) * sizeof *order), *indeg = calloc(n ? n : 1, sizeof *indeg);
  if (!h.hb || !h.written || !h.synced || !order || !indeg) PG_BUG("out of memory");
  for (size_t i = 0, k = 0; i < p->buffers.n; i++)
    if (p->buffers.v[i]->role == PG_ROLE_HOST) h.hb[k++] = p->buffers.v[i];
  qsort(h.hb, h.nh, sizeof *h.hb, by_address);
  for (size_t gi = 0; gi < p->graphs.n; gi++) /* the copies into host buffers, at their root nodes */
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *m = p->graphs.v[gi]->nodes.v[i];
      size_t bit = m->kind == PG_MEMCPY && m->u.memcpy.has_ptrs ? host_bit(&h, m->u.memcpy.dst.buf) : h.nh;
      if (bit < h.nh) h.written[top_of(m)->index * h.words + bit / 64] |= 1ull << (bit % 64);
    }
  for (size_t i = 0; i < n; i++) /* Kahn: a cycle is reported elsewhere */
    if (!(indeg[i] = (uint32_t)root->nodes.v[i]->npred)) order[tail++] = (uint32_t)i;
  while (head < tail) {
    const PgNode *u = root->nodes.v[order[head++]];
    uint64_t *w = h.written + u->index * h.words, *sy = h.synced + u->index * h.words;
    for (size_t q = 0; q < u->npred; q++)
      for (size_t k = 0; k < h.words; k++)
        w[k] |= h.written[pg_preds(u)[q]->index * h.words + k], sy[k] |= h.synced[pg_preds(u)[q]->index * h.words + k];
    if (pg_is_hostop(u, "sync")) {
      for (size_t k = 0; k < h.words; k++) sy[k] |= w[k];
      sy[h.nh / 64] |= 1ull << (h.nh % 64);
    }
    for (size_t s = 0; s < u->nsucc; s++)
      if (--indeg[pg_succs(u)[s]->index] == 0) order[tail++] = pg_succs(u)[s]->index;
  }
  for (size_t gi = 0; gi < p->graphs.n && tail == n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *m = p->graphs.v[gi]->nodes.v[i];
      if (m->kind == PG_KERNEL && m->u.kernel.has_args) check_read_args(v, &h, m, &m->u.kernel.args);
      if (m->kind == PG_LIBCALL) check_read_args(v, &h, m, &m->u.libcall.args);
      size_t bit = pg_is_hostop(m, "guard") ? host_bit(&h, m->u.hostop.buf) : h.nh;
      if (bit < h.nh && !has_bit(h.synced + top_of(m)->index * h.words, bit))
        FAIL(v, m->loc, "guard '%s' depends on no host synchronization after a copy into host buffer '%s': it would "
             "compare bytes not read back yet", m->name, m->u.hostop.buf->name);
    }
  free(h.hb), free(h.written), free(h.synced), free(order), free(indeg);
}

int pg_verify(const PgProgram *p, PgDiag *d) {
  V v = {p, d, 0};
  bool guards = false;
  if (p->graphs.n == 0) PG_BUG("a program without graphs");
  if (p->graphs.v[0]->owner) PG_BUG("the root graph has an owner");
  for (size_t i = 0; i < p->modules.n; i++) check_globals(&v, p->modules.v[i]);
  for (size_t i = 0; i < p->kernels.n; i++) check_layout(&v, p->kernels.v[i]);
  for (size_t i = 0; i < p->buffers.n; i++) /* no GPU has a terabyte */
    if (p->buffers.v[i]->size > (1ull << 40))
      FAIL(&v, p->buffers.v[i]->loc, "buffer '%s' is %" PRIu64 " bytes, more than 1 TiB", p->buffers.v[i]->name,
           p->buffers.v[i]->size);
  for (size_t i = 0; i < p->scalars.n; i++) check_scalar(&v, p->scalars.v[i]);
  check_rng(&v, p);
  check_dims(&v);
  for (size_t i = 0; i < p->conditions.n; i++) /* CUDA: a handle without its node fails to instantiate */
    if (!p->conditions.v[i]->node)
      FAIL(&v, p->conditions.v[i]->loc, "condition '%s' is tested by no conditional node", p->conditions.v[i]->name);
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    if (gi > 0 && !g->owner) PG_BUG("graph '%s' is nobody's body", g->name);
    /* bodies nest as a tree, at most PG_MAX_NESTING deep: walking owners up
     * reaches the root (a cycle of bodies would never end, and is caught too) */
    size_t depth = 0;
    for (const PgGraph *up = g; up->owner; up = up->owner->graph)
      if (++depth > PG_MAX_NESTING) {
        FAIL(&v, g->loc, "graph '%s' is nested more than %d bodies deep", g->name, PG_MAX_NESTING);
        break;
      }
    /* one sweep over the nodes (a million of them are 192 MB: a sweep is most of
     * this pass's time): each checked, and whether any has a duplicate successor (then
     * reported with the edges, in the order they always were) or is a guard */
    uint32_t *stamp = calloc(g->nodes.n ? g->nodes.n : 1, sizeof *stamp);
    if (!stamp) PG_BUG("out of memory");
    bool dups = false;
    size_t i = 0;
    for (; i < g->nodes.n && !pg_too_many_errors(d); i++) {
      const PgNode *n = g->nodes.v[i];
      check_node(&v, g, n, i);
      for (size_t s = 0; s < n->nsucc; s++) {
        uint32_t t = pg_succs(n)[s]->index;
        dups |= stamp[t] == i + 1;
        stamp[t] = (uint32_t)i + 1;
      }
      guards |= pg_is_hostop(n, "guard");
    }
    if (i < g->nodes.n) dups = true; /* (not all seen: let the edges' check look) */
    if (dups) memset(stamp, 0, (g->nodes.n ? g->nodes.n : 1) * sizeof *stamp);
    check_edges(&v, g, dups, stamp);
    free(stamp);
  }
  if (!pg_too_many_errors(d)) check_host_reads(&v, guards);
  return v.errors;
}

/* After partitioning: every root node is in exactly one region, graph regions hold
 * only graphable nodes, and every dependency runs forward through the schedule. */
int pg_verify_regions(const PgProgram *p, PgDiag *d) {
  (void)d;
  const PgGraph *g = p->graphs.v[0];
  size_t n = g->nodes.n, placed = 0;
  size_t *pos = malloc((n ? n : 1) * sizeof *pos);
  if (!pos) PG_BUG("out of memory");
  for (size_t i = 0; i < n; i++) pos[i] = SIZE_MAX;
  for (size_t ri = 0, at = 0; ri < p->regions.n; ri++) {
    const PgRegion *r = p->regions.v[ri];
    if (r->id != (int)ri || r->nodes.n == 0) PG_BUG("region %zu is malformed", ri);
    for (size_t k = 0; k < r->nodes.n; k++, at++) {
      const PgNode *v = r->nodes.v[k];
      if (v->graph != g || v->region != r->id || pos[v->index] != SIZE_MAX)
        PG_BUG("node '%s' is not in exactly one region", v->name);
      if (r->graphable && !v->graphable) PG_BUG("graph region %d holds node '%s', which cannot be in a graph", r->id, v->name);
      pos[v->index] = at;
      placed++;
    }
  }
  if (placed != n) PG_BUG("%zu of %zu root nodes are in no region", n - placed, n);
  for (size_t i = 0; i < g->edges.n; i++) {
    const PgEdge *e = &g->edges.v[i];
    if (pos[e->from->index] >= pos[e->to->index])
      PG_BUG("the schedule runs '%s' before '%s', which it depends on", e->to->name, e->from->name);
  }
  free(pos);
  return 0;
}

/*
 * schedule.c -- the root graph's nodes reordered so that intermediates die sooner.
 *
 * A captured program runs its nodes in the order it launched them, and that order can
 * keep memory live for nothing.  A training step is the case in point: a compiled
 * backward returns every gradient at once, and only then does autograd add each into
 * its parameter's .grad, so the whole set of new gradients is live at the end of the
 * backward, while eager PyTorch adds each as it is made.  This pass moves such nodes
 * up: a node that is the last use of some intermediate and the first use of none (a
 * *freeing* node) runs as soon as what it depends on has run.  Every other node keeps
 * its order.
 *
 * What a node depends on: the nodes before it that use a buffer it uses (as pgcc
 * knows a node's memory: the buffers its arguments point into; any use counts as a
 * write), the kernels before it of a module with data objects (module globals: their
 * state is the module's, not a buffer's), and the last *fixed* node before it.  Fixed:
 * everything whose memory pgcc does not know in full or whose place matters beyond it
 * -- host nodes and operations, events, allocations, conditionals, child graphs,
 * library calls, empty nodes, nodes that are not graphable, kernels without arguments
 * or a layout, kernels taking a conditional handle or a scalar read on the host, and
 * copies or memsets on an unknown or null address.  Nothing moves past a fixed node.
 *
 * Why the arena cannot grow: a freeing node allocates nothing, and where it moves to
 * every buffer it uses is already live (made before it, used after it, as it is the
 * last user of some and the first of none); so what is live where it lands is what
 * was live across that gap, and every buffer's live range shrinks or stays.  The
 * pass keeps the new order only where the most bytes live at once fell.
 *
 * It runs where the root graph is one chain in node order (a capture from one stream;
 * anything else keeps its order and says why in the report), before partitioning,
 * which then sees the new chain.  The chain's edges are rewritten; node names stay.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

/* ---- what a node touches ---- */

typedef struct {
  size_t *v; /* indices in p->buffers */
  size_t n, cap;
} Bufs;

typedef struct {
  PgProgram *p;
  PgNode **nodes; /* the chain */
  size_t n;
  Bufs *uses;     /* per node (by original index): the buffers it and its bodies touch */
  PgMap *ids;     /* buffer name -> 1 + its index in p->buffers */
} Ctx;

typedef struct {
  const Ctx *c;
  Bufs *s;
} Adding;

/* Adds b's index to the set (once). */
static void add(void *arg, PgBuffer *b) {
  const Adding *a = arg;
  if (!b) return;
  size_t id = (size_t)(uintptr_t)pg_map_get(a->c->ids, b->name) - 1;
  Bufs *s = a->s;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == id) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) PG_BUG("out of memory");
  }
  s->v[s->n++] = id;
}

/* Every buffer a node or its bodies use. */
static void touches(const Ctx *c, const PgNode *n, Bufs *s) {
  pg_node_uses(n, add, &(Adding){c, s});
  if (n->kind == PG_CHILD)
    for (size_t i = 0; i < n->u.child.body->nodes.n; i++) touches(c, n->u.child.body->nodes.v[i], s);
  if (n->kind == PG_CONDITIONAL)
    for (size_t b = 0; b < n->u.cond.bodies.n; b++)
      for (size_t i = 0; i < n->u.cond.bodies.v[b]->nodes.n; i++) touches(c, n->u.cond.bodies.v[b]->nodes.v[i], s);
}

/* A node that may move: its memory is the buffers its arguments name, and nothing
 * else orders it. */
bool pg_node_movable(const PgNode *n) {
  if (!n->graphable || n->eager) return false;
  switch (n->kind) {
  case PG_KERNEL:
    if (!n->u.kernel.has_args || !n->u.kernel.kernel->has_layout) return false;
    for (size_t i = 0; i < n->u.kernel.args.n; i++) {
      const PgArg *a = &n->u.kernel.args.v[i];
      if (a->kind == PG_ARG_COND || (a->kind == PG_ARG_SCALAR && pg_scalar_is_read(a->scalar))) return false;
    }
    return true;
  case PG_MEMCPY: return n->u.memcpy.has_ptrs && !n->u.memcpy.pageable && n->u.memcpy.src.buf && n->u.memcpy.dst.buf;
  case PG_MEMSET: return n->u.memset.has_dst && n->u.memset.dst.buf;
  default: return false;
  }
}

/* ---- the most bytes live at once, nodes in a given order ---- */

typedef struct {
  size_t first, last; /* positions of its first and last use */
  bool used;
} Range;

static void ranges(const Ctx *c, PgNode *const *order, Range *r) {
  memset(r, 0, c->p->buffers.n * sizeof *r);
  for (size_t i = 0; i < c->n; i++) {
    const Bufs *u = &c->uses[order[i]->index];
    for (size_t k = 0; k < u->n; k++) {
      Range *x = &r[u->v[k]];
      if (!x->used) x->first = i, x->used = true;
      x->last = i;
    }
  }
}

static uint64_t peak(const Ctx *c, PgNode *const *order) {
  Range *r = malloc((c->p->buffers.n + 1) * sizeof *r);
  int64_t *delta = calloc(c->n + 1, sizeof *delta);
  if (!r || !delta) PG_BUG("out of memory");
  ranges(c, order, r);
  for (size_t b = 0; b < c->p->buffers.n; b++)
    if (r[b].used && pg_in_arena(c->p->buffers.v[b])) {
      delta[r[b].first] += (int64_t)c->p->buffers.v[b]->size;
      delta[r[b].last + 1] -= (int64_t)c->p->buffers.v[b]->size;
    }
  int64_t live = 0, most = 0;
  for (size_t i = 0; i < c->n; i++)
    if ((live += delta[i]) > most) most = live;
  free(r), free(delta);
  return (uint64_t)most;
}

/* ---- the pass ---- */

typedef struct {
  size_t *v;
  size_t n, cap;
} Succs;

/* Node `to` waits for node `from` (SIZE_MAX: nothing); a pair once. */
static void depend(Succs *after, size_t *waits, size_t from, size_t to) {
  if (from == SIZE_MAX) return;
  Succs *s = &after[from];
  if (s->n && s->v[s->n - 1] == to) return; /* (the pairs of one node come together) */
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) PG_BUG("out of memory");
  }
  s->v[s->n++] = to;
  waits[to]++;
}

static int descending(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  return a < b ? 1 : a > b ? -1 : 0;
}

/* Why the root graph cannot be reordered, or NULL. */
const char *pg_not_a_chain(const PgGraph *g) {
  if (g->edge_kinds.n) return "it has programmatic edges";
  if (g->edges.n + 1 != g->nodes.n && g->nodes.n) return "it is not one chain";
  for (size_t i = 0; i + 1 < g->nodes.n; i++)
    if (g->nodes.v[i]->succs.n != 1 || g->nodes.v[i]->succs.v[0] != g->nodes.v[i + 1]) return "it is not one chain";
  return NULL;
}

void pg_schedule(PgProgram *p) {
  PgGraph *g = p->graphs.v[0];
  p->sched.why_not = pg_not_a_chain(g);
  if (p->sched.why_not || g->nodes.n < 3) return;
  for (size_t b = 0; b < p->buffers.n; b++)
    if (p->buffers.v[b]->role == PG_ROLE_UNKNOWN) {
      p->sched.why_not = "a buffer's role is unknown (it may alias another)";
      return;
    }

  Ctx c = {p, g->nodes.v, g->nodes.n, calloc(g->nodes.n, sizeof(Bufs)), pg_map_new(p->arena)};
  if (!c.uses) PG_BUG("out of memory");
  for (size_t b = 0; b < p->buffers.n; b++) pg_map_put(c.ids, p->buffers.v[b]->name, (void *)(uintptr_t)(b + 1));
  for (size_t i = 0; i < c.n; i++) touches(&c, c.nodes[i], &c.uses[i]);

  /* freeing nodes, from the original order's ranges */
  size_t nb = p->buffers.n;
  Range *r = malloc((nb + 1) * sizeof *r);
  bool *freeing = calloc(c.n, sizeof *freeing);
  if (!r || !freeing) PG_BUG("out of memory");
  ranges(&c, c.nodes, r);
  for (size_t i = 0; i < c.n; i++) {
    if (!pg_node_movable(c.nodes[i])) continue;
    bool frees = false, makes = false;
    for (size_t k = 0; k < c.uses[i].n; k++) {
      const PgBuffer *b = p->buffers.v[c.uses[i].v[k]];
      const Range *x = &r[c.uses[i].v[k]];
      if (!pg_in_arena(b)) continue;
      frees |= x->last == i && x->first != i;
      makes |= x->first == i;
    }
    freeing[i] = frees && !makes;
  }

  /* dependencies, as successor lists: the last earlier user of each buffer, the last
   * earlier kernel of a module with globals, the last fixed node (and a fixed node
   * waits for everything since the fixed node before it) */
  size_t *last_user = malloc((nb + 1) * sizeof *last_user), *waits = calloc(c.n, sizeof *waits);
  Succs *after = calloc(c.n, sizeof *after);
  PgMap *module_last = pg_map_new(p->arena);
  if (!last_user || !waits || !after) PG_BUG("out of memory");
  for (size_t b = 0; b < nb; b++) last_user[b] = SIZE_MAX;
  size_t last_fixed = SIZE_MAX;
  for (size_t i = 0; i < c.n; i++) {
    PgNode *n = c.nodes[i];
    if (!pg_node_movable(n)) {
      for (size_t j = last_fixed == SIZE_MAX ? 0 : last_fixed; j < i; j++) depend(after, waits, j, i);
      last_fixed = i;
    } else {
      depend(after, waits, last_fixed, i);
      for (size_t k = 0; k < c.uses[i].n; k++) depend(after, waits, last_user[c.uses[i].v[k]], i);
      if (n->kind == PG_KERNEL && n->u.kernel.kernel->module && n->u.kernel.kernel->module->globals.n) {
        void **at = pg_map_slot(module_last, n->u.kernel.kernel->module->name);
        if (*at) depend(after, waits, (size_t)(uintptr_t)*at - 1, i);
        *at = (void *)(uintptr_t)(i + 1);
      }
    }
    for (size_t k = 0; k < c.uses[i].n; k++) last_user[c.uses[i].v[k]] = i;
  }

  /* the walk: every node in its order, and a freeing node as soon as nothing it waits
   * for is left (those released at once run lowest index first) */
  PgNode **order = malloc(c.n * sizeof *order);
  bool *placed = calloc(c.n, sizeof *placed);
  size_t *stack = malloc(c.n * sizeof *stack), on = 0, k = 0;
  if (!order || !placed || !stack) PG_BUG("out of memory");
  for (size_t i = 0; i < c.n; i++) {
    if (placed[i]) continue;
    stack[on++] = i;
    while (on) {
      size_t u = stack[--on];
      placed[u] = true;
      order[k++] = c.nodes[u];
      size_t mark = on;
      for (size_t s = 0; s < after[u].n; s++) {
        size_t v = after[u].v[s];
        if (--waits[v] == 0 && freeing[v] && v > i) stack[on++] = v;
      }
      qsort(stack + mark, on - mark, sizeof *stack, descending); /* the top of the stack: the lowest */
    }
  }
  if (k != c.n) PG_BUG("schedule: %zu of %zu nodes placed", k, c.n);

  p->sched.live_before = peak(&c, c.nodes);
  uint64_t live_after = peak(&c, order);
  size_t moved = 0; /* nodes that now run earlier than they were captured */
  for (size_t i = 0; i < c.n; i++) moved += order[i]->index > i;
  if (moved && live_after < p->sched.live_before) {
    memcpy(g->nodes.v, order, c.n * sizeof *order);
    for (size_t i = 0; i < c.n; i++) g->nodes.v[i]->index = (uint32_t)i;
    for (size_t i = 0; i + 1 < c.n; i++) g->edges.v[i] = (PgEdge){g->nodes.v[i], g->nodes.v[i + 1], g->nodes.v[i + 1]->loc};
    pg_program_link(p);
    p->sched.moved = moved;
  }
  for (size_t i = 0; i < c.n; i++) free(c.uses[i].v), free(after[i].v);
  free(c.uses), free(after), free(r), free(freeing), free(last_user), free(waits), free(order), free(placed), free(stack);
}

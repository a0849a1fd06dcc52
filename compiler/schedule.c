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

/* ---- what a node touches ----
 *
 * Each node's buffers (their indices in p->buffers) are one run of a flat array,
 * node after node: uses[use_at[i] .. use_at[i + 1]).  At a million nodes a small
 * vector per node was most of the pass's memory (and the program's peak). */

typedef struct {
  PgProgram *p;
  PgNode **nodes;    /* the chain */
  size_t n;
  uint32_t *use_at;  /* per node (by original index), n + 1 of them: where its run starts */
  uint32_t *uses;    /* the buffers each node and its bodies touch, run after run */
  size_t nuses, cap;
  size_t run;        /* where the run being built starts */
  PgMap *ids;        /* buffer name -> 1 + its index in p->buffers */
} Ctx;

/* Adds b's index to the last node's run (once). */
static void add(void *arg, PgBuffer *b) {
  Ctx *c = arg;
  if (!b) return;
  uint32_t id = (uint32_t)((uintptr_t)pg_map_get(c->ids, b->name) - 1);
  for (size_t i = c->run; i < c->nuses; i++)
    if (c->uses[i] == id) return;
  if (c->nuses == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 1024;
    c->uses = realloc(c->uses, c->cap * sizeof *c->uses);
    if (!c->uses) PG_BUG("out of memory");
  }
  c->uses[c->nuses++] = id;
}

/* Every buffer a node or its bodies use, into the run being built. */
static void touches(Ctx *c, const PgNode *n) {
  pg_node_uses(n, add, c);
  if (n->kind == PG_CHILD)
    for (size_t i = 0; i < n->u.child.body->nodes.n; i++) touches(c, n->u.child.body->nodes.v[i]);
  if (n->kind == PG_CONDITIONAL)
    for (size_t b = 0; b < n->u.cond.bodies.n; b++)
      for (size_t i = 0; i < n->u.cond.bodies.v[b]->nodes.n; i++) touches(c, n->u.cond.bodies.v[b]->nodes.v[i]);
}

/* A node that may move: its memory is the buffers its arguments name, and nothing
 * else orders it. */
bool pg_node_movable(const PgNode *n) {
  if (!n->graphable || pg_node_eager(n)) return false;
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
    uint32_t at = order[i]->index;
    for (size_t k = c->use_at[at]; k < c->use_at[at + 1]; k++) {
      Range *x = &r[c->uses[k]];
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

/* The dependencies, as pairs in the order found (every pair into node `to` comes
 * while `to` is the node being looked at), then as successor lists: after[at[u] ..
 * at[u + 1]) are the nodes that wait for u. */
typedef struct {
  uint32_t (*pair)[2]; /* {from, to} */
  size_t n, cap;
  uint32_t *seen;      /* per node: 1 + the last `to` it was paired with */
  uint32_t *waits;     /* per node: how many it waits for */
} Deps;

/* Node `to` waits for node `from` (SIZE_MAX: nothing); a pair once. */
static void depend(Deps *d, size_t from, size_t to) {
  if (from == SIZE_MAX || d->seen[from] == to + 1) return;
  d->seen[from] = (uint32_t)to + 1;
  if (d->n == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 1024;
    d->pair = realloc(d->pair, d->cap * sizeof *d->pair);
    if (!d->pair) PG_BUG("out of memory");
  }
  d->pair[d->n][0] = (uint32_t)from, d->pair[d->n][1] = (uint32_t)to;
  d->n++;
  d->waits[to]++;
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
    if (g->nodes.v[i]->nsucc != 1 || pg_succs(g->nodes.v[i])[0] != g->nodes.v[i + 1]) return "it is not one chain";
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

  if (g->nodes.n >= UINT32_MAX || p->buffers.n >= UINT32_MAX) PG_BUG("schedule: too many nodes or buffers");
  Ctx c = {.p = p, .nodes = g->nodes.v, .n = g->nodes.n, .use_at = malloc((g->nodes.n + 1) * sizeof *c.use_at),
           .ids = pg_map_new(p->arena)};
  if (!c.use_at) PG_BUG("out of memory");
  for (size_t b = 0; b < p->buffers.n; b++) pg_map_put(c.ids, p->buffers.v[b]->name, (void *)(uintptr_t)(b + 1));
  for (size_t i = 0; i < c.n; i++) {
    c.use_at[i] = (uint32_t)(c.run = c.nuses);
    touches(&c, c.nodes[i]);
    if (c.nuses >= UINT32_MAX) PG_BUG("schedule: too many buffer uses");
  }
  c.use_at[c.n] = (uint32_t)c.nuses;

  /* freeing nodes, from the original order's ranges */
  size_t nb = p->buffers.n, nfreeing = 0;
  Range *r = malloc((nb + 1) * sizeof *r);
  bool *freeing = calloc(c.n, sizeof *freeing);
  if (!r || !freeing) PG_BUG("out of memory");
  ranges(&c, c.nodes, r);
  for (size_t i = 0; i < c.n; i++) {
    if (!pg_node_movable(c.nodes[i])) continue;
    bool frees = false, makes = false;
    for (size_t k = c.use_at[i]; k < c.use_at[i + 1]; k++) {
      const PgBuffer *b = p->buffers.v[c.uses[k]];
      const Range *x = &r[c.uses[k]];
      if (!pg_in_arena(b)) continue;
      frees |= x->last == i && x->first != i;
      makes |= x->first == i;
    }
    freeing[i] = frees && !makes;
    nfreeing += freeing[i];
  }
  p->sched.live_before = peak(&c, c.nodes);
  if (!nfreeing) { /* nothing moves: the walk below would give the captured order */
    free(c.use_at), free(c.uses), free(r), free(freeing);
    return;
  }

  /* dependencies: the last earlier user of each buffer, the last earlier kernel of a
   * module with globals, the last fixed node (and a fixed node waits for everything
   * since the fixed node before it) */
  size_t *last_user = malloc((nb + 1) * sizeof *last_user);
  Deps d = {.seen = calloc(c.n, sizeof *d.seen), .waits = calloc(c.n, sizeof *d.waits)};
  PgMap *module_last = pg_map_new(p->arena);
  if (!last_user || !d.seen || !d.waits) PG_BUG("out of memory");
  for (size_t b = 0; b < nb; b++) last_user[b] = SIZE_MAX;
  size_t last_fixed = SIZE_MAX;
  for (size_t i = 0; i < c.n; i++) {
    PgNode *n = c.nodes[i];
    if (!pg_node_movable(n)) {
      for (size_t j = last_fixed == SIZE_MAX ? 0 : last_fixed; j < i; j++) depend(&d, j, i);
      last_fixed = i;
    } else {
      depend(&d, last_fixed, i);
      for (size_t k = c.use_at[i]; k < c.use_at[i + 1]; k++) depend(&d, last_user[c.uses[k]], i);
      if (n->kind == PG_KERNEL && n->u.kernel.kernel->module && n->u.kernel.kernel->module->globals.n) {
        void **at = pg_map_slot(module_last, n->u.kernel.kernel->module->name);
        if (*at) depend(&d, (size_t)(uintptr_t)*at - 1, i);
        *at = (void *)(uintptr_t)(i + 1);
      }
    }
    for (size_t k = c.use_at[i]; k < c.use_at[i + 1]; k++) last_user[c.uses[k]] = i;
  }
  /* the pairs as successor lists, each in the order found (a counting sort) */
  uint32_t *at = calloc(c.n + 1, sizeof *at), *after = malloc((d.n ? d.n : 1) * sizeof *after);
  if (!at || !after) PG_BUG("out of memory");
  for (size_t e = 0; e < d.n; e++) at[d.pair[e][0] + 1]++;
  for (size_t i = 0; i < c.n; i++) at[i + 1] += at[i];
  uint32_t *fill = d.seen; /* (done with it) */
  memcpy(fill, at, c.n * sizeof *fill);
  for (size_t e = 0; e < d.n; e++) after[fill[d.pair[e][0]]++] = d.pair[e][1];
  free(d.pair);

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
      for (size_t s = at[u]; s < at[u + 1]; s++) {
        size_t v = after[s];
        if (--d.waits[v] == 0 && freeing[v] && v > i) stack[on++] = v;
      }
      qsort(stack + mark, on - mark, sizeof *stack, descending); /* the top of the stack: the lowest */
    }
  }
  if (k != c.n) PG_BUG("schedule: %zu of %zu nodes placed", k, c.n);

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
  free(c.use_at), free(c.uses), free(r), free(freeing), free(last_user), free(d.seen), free(d.waits), free(at), free(after);
  free(order), free(placed), free(stack);
}

/*
 * widen.c -- the root graph rebuilt from true data dependencies.
 *
 * A capture from one stream is one chain: each node waits for the one before, though
 * most of those edges order nothing.  pgcc knows every buffer a node touches, and,
 * where the .graph says so (`param ... access r|w|rw|o`, or one per pointer of a struct:
 * docs/graph-format.md), whether a kernel reads or writes through each pointer (`o`
 * writes); a memcpy reads its source's bytes and writes its destination's, a memset
 * writes its destination's.  This pass replaces the
 * chain's edges by the dependencies those sets imply, so that independent kernels (a
 * layer's q, k and v projections) may run at once.
 *
 * The dependencies.  Node j depends on an earlier node i when they touch overlapping
 * bytes of one memory and one of them writes them: read-after-write, write-after-read,
 * write-after-write.  A kernel's pointer covers its whole buffer (pgcc does not know
 * which elements a kernel indexes); a copy or memset covers the bytes its extent
 * reaches from its offset.  A pointer whose parameter has no access annotation is read
 * and written.  An intermediate that held several values one after another was split
 * before (rename.c), so that one value's nodes do not wait for another's.  Kernels of a
 * module with globals keep their order among themselves (the globals are the module's
 * state, no buffer's), as in schedule.c.  *Fixed* nodes
 * (schedule.c's pg_node_movable: host work, events, allocations, conditionals, child
 * graphs, library calls, kernels without a layout or taking a read scalar or a
 * conditional handle, copies on unknown addresses, anything not graphable) are
 * barriers: a fixed node waits for every node before it and every node after it waits
 * for it, as in the chain.  Then every edge implied by two others is removed
 * (transitive reduction, over the nodes in chain order: j keeps a dependency i only if
 * no later dependency of j already reaches i), so the graph is the smallest with the
 * same order.
 *
 * Memory.  Two nodes that may run at once must never share arena bytes that either
 * writes.  memplan.c first plans the arena on the serial order (the chain: buffers
 * whose lives are disjoint share bytes).  Two widened graphs are then built and
 * weighed:
 *
 *  - *over the serial plan*: the dependencies over planned addresses, an
 *    intermediate's bytes being arena bytes at its offset.  A buffer placed on bytes
 *    another used earlier is then the same bytes written again: its first writer waits
 *    (write-after-read, write-after-write) for every earlier node that touched the
 *    other buffer there.  The plan stays and the arena does not grow, but the reuse
 *    orders nodes: an MoE layer's experts, each reusing the bytes the one before it
 *    freed, stay one after another.
 *  - *with a plan of its own*: the dependencies over buffers alone (every buffer its
 *    own memory), then memplan.c again on that graph, where two buffers share bytes only
 *    where every node using one reaches every node using the other.  All the width the
 *    access sets allow, for more arena.
 *
 * The own plan's graph is kept where it beats the chain by more than the cost model's
 * error, is predicted faster than the serial plan's graph, and either its arena is at
 * most PG_WIDEN_ARENA_SLACK (10%) above the serial plan's or it also beats the serial
 * plan's graph by more than that error: memory is spent only for time the model can
 * see.  Else the serial plan's graph, where it beats
 * the chain by more than the error; else the chain (and the serial plan).  A program
 * where widening buys nothing so keeps its arena; one where it pays keeps its width.
 * Other memories (inputs, outputs, weights, host buffers) are each its own, distinct
 * from every other buffer, as schedule.c assumes: the pass does not run where a
 * buffer's role is unknown (it may alias another).
 *
 * Regions.  Partitioning ran on the chain, so each region is a run of the chain, and
 * region boundaries lie at fixed nodes (nodes that cannot be in a graph), which are
 * barriers here too; the emitted C keeps a region's inner edges and runs regions one
 * after another, and every path between two nodes of one region stays inside it.  An
 * eager region runs its nodes one after another whatever the edges say.
 *
 * The estimates (cost.c's).  Each node's in-graph GPU time t (pg_cost_node_us) gives
 * the chain's time, the sum, and a widened graph's critical path (an eager region's
 * nodes counted one after another).  Kernels running side by side share the GPU: a
 * kernel whose grid has as many blocks as the GPU has SMs fills it and gains nothing
 * from a neighbour, so the GPU's work, the sum of t times the share of the SMs each
 * node fills (pg_cost_occupancy), bounds the time too.  A widened graph's predicted
 * time is max(path, work); a gain counts only beyond the model's error (PG_COST_ERROR
 * of the chain's time).  The report gives, serial and for both widened graphs, the
 * width (the most nodes that may run at once: a largest antichain, by Dilworth's
 * theorem the nodes less a maximum matching of the reachability relation, matched per
 * stretch between barriers), the critical path, the arena and the edges, and which was
 * kept or why the chain stayed.
 *
 * It runs only where some kernel of the program carries an access annotation (today's
 * exports carry none, and keep their chain), where the root graph is one chain in node
 * order (schedule.c's test), and never with --keep-order (the driver skips it).
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

#define WIDEN_MAX_NODES 16384 /* the reachability bitsets: n * n bits */
#define MATCH_MAX 512         /* a stretch between barriers matched exactly up to this */

typedef struct {
  const void *space; /* the arena (the program), a buffer, or a module (its globals) */
  uint64_t lo, hi;   /* bytes [lo, hi) of that space */
  bool write;        /* written (else read only) */
} Access;

typedef struct {
  Access *v;
  size_t n, cap;
} Accesses;

static void push(Accesses *s, Access a) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) PG_BUG("out of memory");
  }
  s->v[s->n++] = a;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Bytes [off, off + len) of buffer b, read and/or written (len UINT64_MAX: the whole
 * buffer).  An arena buffer's bytes are the arena's, at its planned offset (p: the
 * program; NULL: every buffer its own memory, as if the arena shared no bytes). */
static void touch(const PgProgram *p, Accesses *s, const PgBuffer *b, uint64_t off, uint64_t len, PgAccess how) {
  if (!b) return;
  bool whole = len == UINT64_MAX;
  Access a = {b, whole ? 0 : off, whole ? (b->size ? b->size : 1) : sat_add(off, len), false};
  if (p && pg_in_arena(b) && b->planned)
    a.space = p, a.lo = sat_add(a.lo, b->offset), a.hi = sat_add(a.hi, b->offset);
  if (how != PG_ACCESS_WRITE && how != PG_ACCESS_OVERWRITE) push(s, a);
  if (how != PG_ACCESS_READ) a.write = true, push(s, a);
}

/* The bytes a 3-D copy's side spans: slices `height` rows apart, rows `pitch` apart. */
static uint64_t extent(uint64_t width, uint64_t height, uint64_t depth, uint64_t pitch) {
  if (!height) height = 1;
  if (!depth) depth = 1;
  if (!pitch) pitch = width;
  uint64_t rows = sat_add(sat_mul(depth - 1, height), height - 1);
  return sat_add(sat_mul(rows, pitch), width);
}

/* What a movable node reads and writes (p: as touch() takes it). */
static void accesses(const PgProgram *p, const PgNode *n, Accesses *s) {
  switch (n->kind) {
  case PG_KERNEL: {
    const PgKernel *k = n->u.kernel.kernel;
    for (size_t i = 0; i < n->u.kernel.args.n && i < k->params.n; i++) {
      const PgArg *a = &n->u.kernel.args.v[i];
      const PgParam *pa = &k->params.v[i];
      if (a->kind == PG_ARG_PTR) touch(p, s, a->ptr.buf, 0, UINT64_MAX, pg_param_access(pa, -1));
      if (a->kind == PG_ARG_BYTES)
        for (size_t q = 0; q < a->ptrs.n; q++)
          touch(p, s, a->ptrs.v[q].buf, 0, UINT64_MAX, pg_param_access(pa, (long)q));
    }
    if (k->module && k->module->globals.n) push(s, (Access){k->module, 0, 1, true});
    break;
  }
  case PG_MEMCPY: {
    uint64_t w = n->u.memcpy.width, h = n->u.memcpy.height, d = n->u.memcpy.depth;
    touch(p, s, n->u.memcpy.src.buf, n->u.memcpy.src.offset, extent(w, h, d, n->u.memcpy.src_pitch), PG_ACCESS_READ);
    touch(p, s, n->u.memcpy.dst.buf, n->u.memcpy.dst.offset, extent(w, h, d, n->u.memcpy.dst_pitch), PG_ACCESS_WRITE);
    break;
  }
  case PG_MEMSET: {
    uint64_t row = sat_mul(n->u.memset.width, n->u.memset.elem ? n->u.memset.elem : 1);
    touch(p, s, n->u.memset.dst.buf, n->u.memset.dst.offset, extent(row, n->u.memset.height, 1, n->u.memset.pitch),
          PG_ACCESS_WRITE);
    break;
  }
  default: PG_BUG("widen: node '%s' of kind %s is movable", n->name, pg_kinds[n->kind].name);
  }
}

/* Do two nodes' accesses conflict: overlapping bytes of one space, one of them a write? */
static bool conflict(const Accesses *x, const Accesses *y) {
  for (size_t i = 0; i < x->n; i++)
    for (size_t k = 0; k < y->n; k++) {
      const Access *a = &x->v[i], *b = &y->v[k];
      if (a->space == b->space && (a->write || b->write) && a->lo < b->hi && b->lo < a->hi) return true;
    }
  return false;
}

static bool annotated(const PgProgram *p) {
  for (size_t i = 0; i < p->kernels.n; i++)
    for (size_t j = 0; j < p->kernels.v[i]->params.n; j++)
      if (pg_param_accesses(&p->kernels.v[i]->params.v[j])) return true;
  return false;
}

/* ---- width: a largest antichain, per stretch between barriers ---- */

typedef struct {
  const uint64_t *anc; /* anc[v * words + u / 64]: u reaches v */
  size_t words, lo, hi; /* the stretch [lo, hi) */
  long *match;          /* match[v - lo]: the u matched to v, or -1 */
  bool *seen;
} Matching;

#define BIT(set, i) (((set)[(i) / 64] >> ((i) % 64)) & 1)

static bool augment(Matching *m, size_t u) {
  for (size_t v = u + 1; v < m->hi; v++) {
    if (m->seen[v - m->lo] || !BIT(m->anc + v * m->words, u)) continue;
    m->seen[v - m->lo] = true;
    if (m->match[v - m->lo] < 0 || augment(m, (size_t)m->match[v - m->lo])) {
      m->match[v - m->lo] = (long)u;
      return true;
    }
  }
  return false;
}

/* The largest antichain of nodes [lo, hi) (Dilworth: the nodes less a maximum matching
 * of u -> v where u reaches v); past MATCH_MAX nodes, the most nodes of one depth (a
 * lower bound), and *exact cleared. */
static size_t stretch_width(const uint64_t *anc, size_t words, size_t lo, size_t hi, const size_t *depth,
                            bool *exact) {
  size_t m = hi - lo;
  if (m <= 1) return m;
  if (m > MATCH_MAX) {
    *exact = false;
    size_t *count = pg_xcalloc(m + 1, sizeof *count), most = 0;
    for (size_t v = lo; v < hi; v++)
      if (++count[depth[v] < m ? depth[v] : m] > most) most = count[depth[v] < m ? depth[v] : m];
    free(count);
    return most;
  }
  Matching mt = {anc, words, lo, hi, pg_xcalloc(m, sizeof(long)), pg_xcalloc(m, sizeof(bool))};
  for (size_t v = 0; v < m; v++) mt.match[v] = -1;
  size_t matched = 0;
  for (size_t u = lo; u < hi; u++) {
    memset(mt.seen, 0, m * sizeof *mt.seen);
    matched += augment(&mt, u);
  }
  free(mt.match), free(mt.seen);
  return m - matched;
}

/* ---- the pass ---- */

/* The reduced dependencies: node j's are from[at[j]] to from[at[j + 1] - 1], the latest
 * first; anc[j * words ...]: every node that reaches j. */
typedef struct {
  size_t *from, *at, n, words;
  uint64_t *anc;
} Deps;

/* Candidates for j in descending order, each kept only if no kept one reaches it. */
static Deps dependencies(size_t n, const Accesses *acc, const bool *fixed) {
  Deps d = {NULL, pg_xcalloc(n + 1, sizeof(size_t)), 0, (n + 63) / 64, NULL};
  d.anc = pg_xcalloc(n * d.words, sizeof *d.anc);
  size_t cap = 0, last_fixed = SIZE_MAX;
  for (size_t j = 0; j < n; j++) {
    uint64_t *aj = d.anc + j * d.words;
    d.at[j] = d.n;
    for (size_t i = j; i-- > (last_fixed == SIZE_MAX ? 0 : last_fixed);) {
      if (BIT(aj, i)) continue; /* implied by a later one: no need to look */
      if (!fixed[j] && i != last_fixed && !conflict(&acc[i], &acc[j])) continue;
      if (d.n == cap) {
        cap = cap ? 2 * cap : 64;
        if (!(d.from = realloc(d.from, cap * sizeof *d.from))) PG_BUG("out of memory");
      }
      d.from[d.n++] = i;
      const uint64_t *ai = d.anc + i * d.words;
      for (size_t k = 0; k < d.words; k++) aj[k] |= ai[k];
      aj[i / 64] |= (uint64_t)1 << (i % 64);
    }
    if (fixed[j]) last_fixed = j;
  }
  d.at[n] = d.n;
  return d;
}

/* The critical path (an eager region's nodes one after another), and each node's depth. */
static double critical_path(const PgProgram *p, const PgGraph *g, const Deps *d, const double *t, size_t *depth) {
  size_t n = g->nodes.n;
  double *finish = pg_xcalloc(n, sizeof *finish), path = 0;
  for (size_t j = 0; j < n; j++) {
    const PgNode *v = g->nodes.v[j];
    double start = 0;
    depth[j] = 0;
    for (size_t q = d->at[j]; q < d->at[j + 1]; q++) {
      if (finish[d->from[q]] > start) start = finish[d->from[q]];
      if (depth[d->from[q]] + 1 > depth[j]) depth[j] = depth[d->from[q]] + 1;
    }
    bool eager = v->region >= 0 && (size_t)v->region < p->regions.n && !p->regions.v[v->region]->graph;
    if (eager && j && g->nodes.v[j - 1]->region == v->region && finish[j - 1] > start) start = finish[j - 1];
    finish[j] = start + t[j];
    if (finish[j] > path) path = finish[j];
  }
  free(finish);
  return path;
}

/* The largest antichain, per stretch between barriers (a barrier is ordered with everything). */
static size_t width(const Deps *d, const bool *fixed, size_t n, const size_t *depth, bool *exact) {
  size_t most = 0;
  *exact = true;
  for (size_t lo = 0; lo < n;) {
    if (fixed[lo]) {
      if (most < 1) most = 1;
      lo++;
      continue;
    }
    size_t hi = lo;
    while (hi < n && !fixed[hi]) hi++;
    size_t wd = stretch_width(d->anc, d->words, lo, hi, depth, exact);
    if (wd > most) most = wd;
    lo = hi;
  }
  return most;
}

/* The root graph's edges replaced by d's (each node's in chain order), linked. */
static void set_edges(PgProgram *p, PgGraph *g, const Deps *d) {
  g->edges.n = 0, g->edge_kinds.n = 0;
  for (size_t j = 0; j < g->nodes.n; j++)
    for (size_t q = d->at[j + 1]; q-- > d->at[j];)
      pg_edge_add(p, g, g->nodes.v[d->from[q]], g->nodes.v[j], PG_EDGE_FULL, g->nodes.v[j]->loc);
  pg_program_link(p);
}

/* Does d order every node after the one before it, and only after it? */
static bool is_chain(const Deps *d, size_t n) {
  for (size_t j = 1; j < n; j++)
    if (d->at[j + 1] - d->at[j] != 1 || d->from[d->at[j]] != j - 1) return false;
  return true;
}

/* A widened graph's numbers (depth: scratch). */
static PgWidened weigh(const PgProgram *p, const PgGraph *g, const Deps *d, const bool *fixed, const double *t,
                       double work, size_t *depth) {
  PgWidened x = {.edges = d->n};
  x.path_us = critical_path(p, g, d, t, depth);
  x.width = width(d, fixed, g->nodes.n, depth, &x.width_exact);
  x.predicted_us = x.path_us > work ? x.path_us : work;
  return x;
}

void pg_widen(PgProgram *p, const PgProfile *prof) {
  PgGraph *g = p->graphs.v[0];
  size_t n = g->nodes.n;
  PgWiden *w = &p->widen;
  *w = (PgWiden){.nodes = n, .edges_before = g->edges.n, .arena_bytes = p->mem.arena_bytes,
                 .serial_arena_bytes = p->mem.arena_bytes};
  if (!annotated(p)) {
    w->why_not = "no kernel carries access sets (`access` on its pointer parameters)";
    return;
  }
  if ((w->why_not = pg_not_a_chain(g))) return;
  if (n < 2) {
    w->why_not = "the root graph has fewer than two nodes";
    return;
  }
  if (n > WIDEN_MAX_NODES) {
    w->why_not = pg_arena_printf(p->arena, "the root graph has more than %d nodes", WIDEN_MAX_NODES);
    return;
  }
  for (size_t b = 0; b < p->buffers.n; b++)
    if (p->buffers.v[b]->role == PG_ROLE_UNKNOWN) {
      w->why_not = "a buffer's role is unknown (it may alias another)";
      return;
    }

  /* what each node touches, over the serial plan's arena and over buffers alone; the barriers */
  Accesses *acc = pg_xcalloc(n, sizeof *acc), *own = pg_xcalloc(n, sizeof *own);
  bool *fixed = pg_xcalloc(n, sizeof *fixed);
  for (size_t i = 0; i < n; i++) {
    fixed[i] = !pg_node_movable(g->nodes.v[i]);
    if (!fixed[i]) accesses(p, g->nodes.v[i], &acc[i]), accesses(NULL, g->nodes.v[i], &own[i]);
  }
  Deps d = dependencies(n, acc, fixed), own_d = dependencies(n, own, fixed);
  w->ran = true;

  /* the estimates: chain, work; each widened graph's path and width */
  double *t = pg_xcalloc(n, sizeof *t);
  size_t *depth = pg_xcalloc(n, sizeof *depth);
  for (size_t j = 0; j < n; j++) {
    t[j] = pg_cost_node_us(prof, g->nodes.v[j]);
    w->serial_us += t[j];
    w->work_us += t[j] * pg_cost_occupancy(prof, g->nodes.v[j]);
  }
  w->shared = weigh(p, g, &d, fixed, t, w->work_us, depth);
  w->shared.arena_bytes = w->serial_arena_bytes;
  w->own = weigh(p, g, &own_d, fixed, t, w->work_us, depth);

  /* the decision: the own plan's graph, the serial plan's, or the chain */
  double error = PG_COST_ERROR * w->serial_us, own_gain = w->serial_us - w->own.predicted_us,
         shared_gain = w->serial_us - w->shared.predicted_us;
  const Deps *kept = NULL;
  if (is_chain(&own_d, n)) {
    w->why_not = "every node depends on the one before it";
  } else if (!(own_gain > error)) {
    w->why_not = pg_arena_printf(p->arena,
                                 "the predicted gain, %.1f us of %.1f us, is within the cost model's error (%.0f%%)",
                                 own_gain > 0 ? own_gain : 0, w->serial_us, PG_COST_ERROR * 100);
  } else if (w->own.predicted_us < w->shared.predicted_us) {
    /* the own plan: the graph over buffers, planned; put back unless kept */
    PgEdge *edges = pg_xcalloc(g->edges.n, sizeof *edges);
    uint8_t *kinds = pg_xcalloc(g->edge_kinds.n, 1);
    size_t ne = g->edges.n, nk = g->edge_kinds.n;
    if (ne) memcpy(edges, g->edges.v, ne * sizeof *edges);
    if (nk) memcpy(kinds, g->edge_kinds.v, nk);
    uint64_t *offset = pg_xcalloc(p->buffers.n, sizeof *offset);
    bool *planned = pg_xcalloc(p->buffers.n, sizeof *planned);
    for (size_t b = 0; b < p->buffers.n; b++)
      offset[b] = p->buffers.v[b]->offset, planned[b] = p->buffers.v[b]->planned;
    PgMemPlan serial = p->mem;
    set_edges(p, g, &own_d);
    pg_memplan(p);
    w->own.arena_bytes = p->mem.arena_bytes;
    if (w->own.arena_bytes <= (1 + PG_WIDEN_ARENA_SLACK) * (double)w->serial_arena_bytes ||
        w->shared.predicted_us - w->own.predicted_us > error) {
      kept = &own_d, w->own_plan = true;
    } else {
      memcpy(g->edges.v, edges, ne * sizeof *edges), g->edges.n = ne;
      if (nk) memcpy(g->edge_kinds.v, kinds, nk);
      g->edge_kinds.n = nk;
      pg_program_link(p);
      for (size_t b = 0; b < p->buffers.n; b++)
        p->buffers.v[b]->offset = offset[b], p->buffers.v[b]->planned = planned[b];
      p->mem = serial;
      if (!is_chain(&d, n) && shared_gain > error) kept = &d;
      else
        w->why_not = pg_arena_printf(
            p->arena,
            "with a plan of its own the arena grows %.0f%% and the gain over the serial plan's graph is within the "
            "cost model's error (%.0f%%); over the serial plan's bytes the predicted gain, %.1f us of %.1f us, is "
            "within it too",
            100.0 * ((double)w->own.arena_bytes / (double)(w->serial_arena_bytes ? w->serial_arena_bytes : 1) - 1),
            PG_COST_ERROR * 100, shared_gain > 0 ? shared_gain : 0, w->serial_us);
    }
    free(edges), free(kinds), free(offset), free(planned);
  } else {
    kept = &d; /* as fast as the own plan's graph, on the serial plan's arena */
  }
  if (kept == &d) set_edges(p, g, &d);
  w->kept = kept != NULL;
  const Deps *shown = kept ? kept : &own_d;
  const PgWidened *x = shown == &d ? &w->shared : &w->own;
  w->edges_after = x->edges, w->width = x->width, w->width_exact = x->width_exact;
  w->path_us = x->path_us, w->predicted_us = x->predicted_us;
  w->arena_bytes = p->mem.arena_bytes;
  for (size_t j = 0; j < n; j++) /* each node's dependencies in chain order */
    for (size_t q = shown->at[j + 1]; q-- > shown->at[j];)
      pg_vec_push(p->arena, w->edges, ((PgEdge){g->nodes.v[shown->from[q]], g->nodes.v[j], g->nodes.v[j]->loc}));
  for (size_t i = 0; i < n; i++) free(acc[i].v), free(own[i].v);
  free(acc), free(own), free(fixed), free(t), free(depth);
  free(d.from), free(d.at), free(d.anc), free(own_d.from), free(own_d.at), free(own_d.anc);
}

/*
 * partition.c -- maximal graphable regions of the root graph.
 *
 * The schedule is a sequence of phases; phase k is a graph region (graphable
 * nodes) followed by eager work (nodes that cannot be in a graph).  Fewer phases
 * holding graphable nodes means fewer graph launches, so graphable nodes are moved
 * across eager nodes whenever their dependencies allow:
 *
 *  1. T: a topological order of the root graph (Kahn, lowest index first).
 *     Eager nodes keep their relative order: each depends on the eager node
 *     before it in T (an implied edge), since eager work can have effects the
 *     edges do not show.
 *  2. ASAP phase p(v): the most eager nodes on any path into v; an eager node is a
 *     barrier, so p(v) = max over predecessors u of p(u) + [u is eager].  Eager
 *     nodes stay at p(v).
 *  3. ALAP phase l(v) of a graphable node: the latest phase it can wait for, the
 *     min over successors w of l(w) (graphable w) or p(w) (eager w); at most one
 *     phase past the last eager node.
 *  4. Each graphable node may run in any phase of [p(v), l(v)].  The fewest phases
 *     that meet every interval are chosen greedily (earliest right end first,
 *     which is optimal for interval stabbing), and each node goes to the first
 *     chosen phase at or after p(v).  That keeps every dependency: for u -> v,
 *     p(u) <= p(v) so u's phase <= v's; a graphable u before an eager w has
 *     phase <= l(u) <= p(w); an eager u before v has p(u) < p(v) <= v's phase.
 *
 * Linear in nodes and edges.  Regions are emitted in phase order, nodes inside a
 * region in T order; consecutive eager phases form one eager region.
 */
#include "pgcc.h"

#include <stdlib.h>

const char *const pg_update_names[3] = {"none", "host", "device"};

/* Kahn's algorithm with a binary min-heap on the node index.  When every edge
 * already runs forward, that order is the nodes' own (the lowest index left is
 * always ready), so it is taken as it is. */
static void topo_order(const PgGraph *g, uint32_t *order) {
  size_t n = g->nodes.n, len = 0, k = 0;
  if (pg_graph_in_order(g)) {
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    return;
  }
  uint32_t *indeg = pg_xcalloc(n, sizeof *indeg), *heap = pg_xcalloc(n, sizeof *heap);
  for (size_t i = 0; i < g->edges.n; i++) indeg[g->edges.v[i].to->index]++;
#define PUSH(x)                                                     \
  do {                                                              \
    size_t c = len++;                                               \
    heap[c] = (x);                                                  \
    while (c && heap[(c - 1) / 2] > heap[c]) {                      \
      uint32_t t = heap[c];                                         \
      heap[c] = heap[(c - 1) / 2];                                  \
      heap[(c - 1) / 2] = t;                                        \
      c = (c - 1) / 2;                                              \
    }                                                               \
  } while (0)
  for (size_t i = 0; i < n; i++)
    if (!indeg[i]) PUSH((uint32_t)i);
  while (len) {
    uint32_t top = heap[0];
    heap[0] = heap[--len];
    for (size_t c = 0;;) { /* sift down */
      size_t l = 2 * c + 1, r = l + 1, m = c;
      if (l < len && heap[l] < heap[m]) m = l;
      if (r < len && heap[r] < heap[m]) m = r;
      if (m == c) break;
      uint32_t t = heap[c];
      heap[c] = heap[m];
      heap[m] = t;
      c = m;
    }
    order[k++] = top;
    const PgNode *u = g->nodes.v[top];
    for (size_t s = 0; s < u->nsucc; s++)
      if (--indeg[pg_succs(u)[s]->index] == 0) PUSH(pg_succs(u)[s]->index);
  }
#undef PUSH
  if (k != n) PG_BUG("partition: graph '%s' has a cycle the verifier missed", g->name);
  free(indeg);
  free(heap);
}

static PgRegion *new_region(PgProgram *p, bool graphable) {
  PgRegion *r = pg_arena_alloc(p->arena, sizeof *r);
  r->id = (int)p->regions.n;
  r->graphable = graphable;
  pg_vec_push(p->arena, p->regions, r);
  return r;
}

static void add(PgRegion *r, PgNode *n) {
  n->region = r->id;
  r->nodes.v[r->nodes.n++] = n;
  r->kernels += n->kind == PG_KERNEL;
}

void pg_partition(PgProgram *p) {
  PgGraph *g = p->graphs.v[0];
  size_t n = g->nodes.n;
  p->regions.n = 0;
  uint32_t *order = pg_xcalloc(n, sizeof *order), *asap = pg_xcalloc(n, sizeof *asap),
           *alap = pg_xcalloc(n, sizeof *alap), *phase = pg_xcalloc(n, sizeof *phase);
  bool *eager = pg_xcalloc(n, sizeof *eager); /* !graphable, read once: the passes below stay out of the nodes */
  for (size_t i = 0; i < n; i++) eager[i] = !g->nodes.v[i]->graphable;
  topo_order(g, order);

  /* 2. ASAP phases; prev_eager chains the eager nodes in T order */
  uint32_t last = 0;
  bool have_eager = false;
  for (size_t k = 0, prev_eager = SIZE_MAX; k < n; k++) {
    const PgNode *v = g->nodes.v[order[k]];
    uint32_t ph = 0;
    for (size_t q = 0; q < v->npred; q++) {
      const PgNode *u = pg_preds(v)[q];
      uint32_t c = asap[u->index] + eager[u->index];
      if (c > ph) ph = c;
    }
    if (eager[v->index]) {
      if (prev_eager != SIZE_MAX && asap[prev_eager] + 1 > ph) ph = asap[prev_eager] + 1;
      prev_eager = v->index;
      have_eager = true;
    }
    asap[v->index] = ph;
    if (ph > last) last = ph;
  }
  uint32_t max_phase = last + have_eager; /* room for a graph region after the last eager node */

  /* 3. ALAP phases of graphable nodes */
  for (size_t k = n; k-- > 0;) {
    if (eager[order[k]]) continue;
    const PgNode *v = g->nodes.v[order[k]];
    uint32_t ph = max_phase;
    for (size_t s = 0; s < v->nsucc; s++) {
      uint32_t w = pg_succs(v)[s]->index;
      uint32_t c = eager[w] ? asap[w] : alap[w];
      if (c < ph) ph = c;
    }
    alap[v->index] = ph;
  }

  /* 4. the fewest phases meeting every [asap, alap]: bucket by right end */
  size_t *bucket = pg_xcalloc((size_t)max_phase + 2, sizeof *bucket); /* counting sort by alap */
  uint32_t *by_alap = pg_xcalloc(n, sizeof *by_alap);
  size_t ng = 0;
  for (size_t i = 0; i < n; i++)
    if (!eager[i]) bucket[alap[i] + 1]++, ng++;
  for (uint32_t ph = 0; ph <= max_phase; ph++) bucket[ph + 1] += bucket[ph];
  for (size_t i = 0; i < n; i++)
    if (!eager[i]) by_alap[bucket[alap[i]]++] = (uint32_t)i;
  bool *chosen = pg_xcalloc((size_t)max_phase + 1, sizeof *chosen);
  int64_t point = -1;
  for (size_t k = 0; k < ng; k++) {
    uint32_t i = by_alap[k];
    if (point < (int64_t)asap[i]) chosen[point = alap[i]] = true;
  }
  free(bucket), free(by_alap); /* (each table given back once used: at a million nodes they are MiBs each) */
  /* next_chosen[ph]: the first chosen phase >= ph */
  uint32_t *next_chosen = pg_xcalloc((size_t)max_phase + 2, sizeof *next_chosen);
  next_chosen[max_phase + 1] = UINT32_MAX;
  for (uint32_t ph = max_phase + 1; ph-- > 0;) next_chosen[ph] = chosen[ph] ? ph : next_chosen[ph + 1];
  for (size_t i = 0; i < n; i++) {
    phase[i] = eager[i] ? asap[i] : next_chosen[asap[i]];
    if (phase[i] == UINT32_MAX || (!eager[i] && phase[i] > alap[i]))
      PG_BUG("partition: node '%s' has no phase", g->nodes.v[i]->name);
  }
  free(asap), free(alap), free(chosen), free(next_chosen);

  /* 5. regions: per phase, its graph region then its eager nodes; nodes in T order */
  /* a stable counting sort of T by the key 2*phase + eager */
  uint32_t *sorted = pg_xcalloc(n, sizeof *sorted);
  size_t *start = pg_xcalloc(2 * (size_t)max_phase + 3, sizeof *start);
  for (size_t k = 0; k < n; k++) {
    uint32_t i = order[k];
    start[2 * (size_t)phase[i] + eager[i] + 1]++;
  }
  for (size_t b = 0; b < 2 * (size_t)max_phase + 2; b++) start[b + 1] += start[b];
  for (size_t k = 0; k < n; k++) {
    uint32_t i = order[k];
    sorted[start[2 * (size_t)phase[i] + eager[i]]++] = i;
  }
  /* a new region at the first node, at each graphable node of a new phase, and at
   * the first eager node after graphable ones; each region's nodes are then carved
   * at their exact count */
  for (size_t k = 0, first = 0; k < n; first = k) {
    uint32_t i0 = sorted[k];
    for (k++; k < n; k++) {
      uint32_t i = sorted[k];
      if (eager[i] ? !eager[i0] : eager[i0] || phase[i] != phase[i0]) break;
    }
    PgRegion *r = new_region(p, !eager[i0]);
    r->nodes.v = pg_arena_alloc(p->arena, (k - first) * sizeof *r->nodes.v);
    r->nodes.cap = k - first;
    for (size_t q = first; q < k; q++) add(r, g->nodes.v[sorted[q]]);
  }
  free(order), free(phase), free(sorted), free(start), free(eager);
}

/*
 * memplan.c -- intermediates (role intermediate or workspace) become offsets in one
 * arena shared by graph and eager regions.
 *
 * Each buffer is live from its first use to its last in the schedule (regions in
 * order, nodes in region order; a use inside a child or conditional body counts at
 * its owner).  Nodes of an eager region run one after another, and so do the nodes
 * of a graph region that is a chain; in any other graph region nodes may run
 * concurrently, so a use there keeps the buffer live for the whole region.  Two
 * buffers whose live ranges are disjoint may share bytes.
 *
 * Placement is greedy: largest first, each at the lowest offset (aligned to
 * max(256, its alignment)) that overlaps no placed buffer live at the same time.
 *
 * For comparison: sum_bytes gives every intermediate its own allocation;
 * pools_bytes gives every graph region a private pool holding each intermediate it
 * touches (as per-graph memory pools do), plus the intermediates used only eagerly.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  PgBuffer *buf;
  size_t lo, hi;       /* live range in schedule positions */
  bool used;
  bool in_graph;       /* some graph region uses it */
  size_t pooled_in;    /* the last graph region that counted it for pools, +1 */
} Life;

typedef struct {
  PgMap *lives;        /* buffer name -> Life */
  size_t lo, hi;       /* the current use's range */
  bool region_graph;   /* the current region is a graph */
  size_t region;
  uint64_t pools;
} Walk;

static bool plannable(const PgBuffer *b) { return b->role == PG_ROLE_INTERMEDIATE || b->role == PG_ROLE_WORKSPACE; }

static void use(Walk *w, const PgProgram *p, PgBuffer *b) {
  (void)p;
  if (!b || !plannable(b)) return;
  Life *l = pg_map_get(w->lives, b->name);
  if (!l->used || w->lo < l->lo) l->lo = w->lo;
  if (!l->used || w->hi > l->hi) l->hi = w->hi;
  l->used = true;
  if (w->region_graph) {
    l->in_graph = true;
    if (l->pooled_in != w->region + 1) { /* once per graph region */
      l->pooled_in = w->region + 1;
      w->pools += b->size;
    }
  }
}

static void use_args(Walk *w, const PgProgram *p, const PgArgs *args) {
  for (size_t i = 0; i < args->n; i++) {
    if (args->v[i].kind == PG_ARG_PTR) use(w, p, args->v[i].ptr.buf);
    for (size_t k = 0; k < args->v[i].ptrs.n; k++) use(w, p, args->v[i].ptrs.v[k].buf);
  }
}

static void use_node(Walk *w, const PgProgram *p, const PgNode *n);

static void use_graph(Walk *w, const PgProgram *p, const PgGraph *g) {
  for (size_t i = 0; i < g->nodes.n; i++) use_node(w, p, g->nodes.v[i]);
}

static void use_node(Walk *w, const PgProgram *p, const PgNode *n) {
  switch (n->kind) {
  case PG_KERNEL: use_args(w, p, &n->u.kernel.args); break;
  case PG_LIBCALL: use_args(w, p, &n->u.libcall.args); break;
  case PG_MEMCPY:
    use(w, p, n->u.memcpy.src.buf);
    use(w, p, n->u.memcpy.dst.buf);
    break;
  case PG_MEMSET: use(w, p, n->u.memset.dst.buf); break;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE: use(w, p, n->u.mem.buf); break;
  case PG_CHILD: use_graph(w, p, n->u.child.body); break;
  case PG_CONDITIONAL:
    for (size_t b = 0; b < n->u.cond.bodies.n; b++) use_graph(w, p, n->u.cond.bodies.v[b]);
    break;
  default: break;
  }
}

static bool is_chain(const PgRegion *r) {
  for (size_t k = 0; k + 1 < r->nodes.n; k++) {
    const PgNode *a = r->nodes.v[k], *b = r->nodes.v[k + 1];
    bool linked = false;
    for (size_t s = 0; s < a->succs.n && !linked; s++) linked = a->succs.v[s] == b;
    if (!linked) return false;
  }
  return true;
}

static int by_size(const void *x, const void *y) {
  const Life *a = *(Life *const *)x, *b = *(Life *const *)y;
  if (a->buf->size != b->buf->size) return a->buf->size > b->buf->size ? -1 : 1;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return strcmp(a->buf->name, b->buf->name);
}

static int by_offset(const void *x, const void *y) {
  const Life *a = *(Life *const *)x, *b = *(Life *const *)y;
  return a->buf->offset < b->buf->offset ? -1 : a->buf->offset > b->buf->offset;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

void pg_memplan(PgProgram *p) {
  size_t nb = p->buffers.n;
  Walk w = {0};
  Life *life = calloc(nb ? nb : 1, sizeof *life);
  if (!life) PG_BUG("out of memory");
  w.lives = pg_map_new(p->arena);
  for (size_t i = 0; i < nb; i++) {
    p->buffers.v[i]->planned = false;
    p->buffers.v[i]->offset = 0;
    life[i].buf = p->buffers.v[i];
    pg_map_put(w.lives, p->buffers.v[i]->name, &life[i]);
  }

  size_t pos = 0;
  for (size_t ri = 0; ri < p->regions.n; ri++) {
    const PgRegion *r = p->regions.v[ri];
    bool whole = r->graph && !is_chain(r);
    size_t start = pos, end = pos + r->nodes.n - 1;
    w.region = ri;
    w.region_graph = r->graph;
    for (size_t k = 0; k < r->nodes.n; k++, pos++) {
      w.lo = whole ? start : pos;
      w.hi = whole ? end : pos;
      use_node(&w, p, r->nodes.v[k]);
    }
  }

  Life **todo = calloc(nb ? nb : 1, sizeof *todo), **live = calloc(nb ? nb : 1, sizeof *live);
  if (!todo || !live) PG_BUG("out of memory");
  size_t nt = 0;
  PgMemPlan plan = {0};
  for (size_t i = 0; i < nb; i++) {
    if (!life[i].used) continue;
    todo[nt++] = &life[i];
    plan.sum_bytes += life[i].buf->size;
    if (!life[i].in_graph) w.pools += life[i].buf->size;
  }
  qsort(todo, nt, sizeof *todo, by_size);
  for (size_t t = 0; t < nt; t++) {
    Life *l = todo[t];
    size_t nl = 0; /* placed buffers live at the same time, by offset */
    for (size_t q = 0; q < t; q++)
      if (todo[q]->lo <= l->hi && l->lo <= todo[q]->hi) live[nl++] = todo[q];
    qsort(live, nl, sizeof *live, by_offset);
    uint64_t align = l->buf->align > 256 ? l->buf->align : 256, at = 0;
    for (size_t q = 0; q < nl; q++) {
      if (align_up(at, align) + l->buf->size <= live[q]->buf->offset) break;
      uint64_t end = live[q]->buf->offset + live[q]->buf->size;
      if (end > at) at = end;
    }
    l->buf->offset = align_up(at, align);
    l->buf->planned = true;
    if (l->buf->offset + l->buf->size > plan.arena_bytes) plan.arena_bytes = l->buf->offset + l->buf->size;
  }
  plan.buffers = nt;
  plan.pools_bytes = w.pools;
  p->mem = plan;
  free(todo), free(live), free(life);
}

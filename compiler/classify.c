/*
 * classify.c -- which nodes can run inside a CUDA graph, and why the others cannot.
 *
 * Sets PgNode.graphable and, when false, PgNode.why: a reason a person understands.
 * A child or conditional node is graphable when everything in its bodies is.  The
 * input can also say so itself: `eager "reason"` on any node (an exporter that knows
 * a launch depends on the input's shape, say).
 */
#include "pgcc.h"

/* Why a body graph cannot be part of a graph: its first node that cannot. */
static const char *body_blocker(const PgGraph *g, PgArena *a) {
  for (size_t i = 0; i < g->nodes.n; i++) {
    const PgNode *m = g->nodes.v[i];
    if (!m->graphable) return pg_arena_printf(a, "its body graph '%s' holds node '%s': %s", g->name, m->name, pg_node_why(m));
  }
  return NULL;
}

static const char *why_not(const PgNode *n, PgArena *a) {
  if (pg_node_eager(n)) return pg_node_eager(n);
  if (!pg_kinds[n->kind].graphable) {
    if (pg_is_hostop(n, "guard"))
      return pg_arena_printf(a, "host operation 'guard' (host buffer '%s' must start with %s): %s",
                             n->u.hostop.buf->name, n->u.hostop.expect, n->u.hostop.reason);
    if (n->kind == PG_HOSTOP) return pg_arena_printf(a, "host operation '%s': %s", n->u.hostop.op, n->u.hostop.reason);
    if (n->kind == PG_OPAQUE) return pg_arena_printf(a, "unsupported node kind '%s'", n->u.opaque.what);
    return pg_arena_printf(a, "%s nodes cannot be in a graph", pg_kinds[n->kind].name);
  }
  switch (n->kind) {
  case PG_MEMCPY:
    if (n->u.memcpy.pageable)
      return n->u.memcpy.dir == PG_DIR_DTOH ? "device-to-host copy into pageable memory"
                                            : "copy from or to pageable host memory";
    return NULL;
  case PG_CHILD: return body_blocker(n->u.child.body, a);
  case PG_CONDITIONAL:
    for (size_t b = 0; b < n->u.cond.bodies.n; b++) {
      const char *why = body_blocker(n->u.cond.bodies.v[b], a);
      if (why) return why;
    }
    return NULL;
  default: return NULL;
  }
}

void pg_classify(PgProgram *p) {
  /* A body's verdict must be known before its owner's.  Rather than rely on the
   * order of graphs.v[], repeat until nothing changes: nesting depth + 1 rounds. */
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) p->graphs.v[gi]->nodes.v[i]->graphable = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t gi = p->graphs.n; gi-- > 0;) {
      const PgGraph *g = p->graphs.v[gi];
      for (size_t i = 0; i < g->nodes.n; i++) {
        PgNode *n = g->nodes.v[i];
        if (!n->graphable) continue;
        const char *why = why_not(n, p->arena);
        if (why) {
          n->graphable = false;
          pg_node_notes(p->arena, n)->why = why;
          changed = true;
        }
      }
    }
  }
}

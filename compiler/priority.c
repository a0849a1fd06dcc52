/*
 * priority.c -- the critical path's kernels launched first.
 *
 * A widened root graph (widen.c) lets independent kernels run at once.  When more are
 * ready than the GPU holds, its block scheduler picks among them, and a kernel off the
 * critical path can take the SMs a kernel on it waits for: the graph then takes longer
 * than its critical path.  CUDA orders such picks by each kernel node's launch priority
 * (CU_LAUNCH_ATTRIBUTE_PRIORITY; lower numbers first, 0 the default and the lowest),
 * honoured where the graph is instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
 * (libpgrt does so for a region with any priority).
 *
 * The pass.  Over the root graph's nodes in order (a topological order: every edge
 * points forward), with each node's in-graph time t from the cost model
 * (pg_cost_node_us): a node's earliest start `top` (the latest finish among its
 * predecessors) and its `bottom`, t plus the longest path after it.  The critical path's
 * length is the largest top + t; a node lies on it where top + bottom reaches that length
 * (to a millionth of it).  Every kernel on it that runs in a graph region and was captured
 * with no priority of its own gets PG_CRITICAL_PRIORITY; all others keep theirs.  An
 * eager region launches its nodes one after another in order: priorities would change
 * nothing there.
 *
 * It runs only with --priorities, after widen.c, and only where widen.c kept a wider
 * graph (a chain has one path: every node is on it).  Edges and memory are untouched: a
 * priority reorders nothing the dependencies fix.  What it gave is in the report
 * (`priorities:`; JSON "priority").  Not measured on a GPU yet (docs/compiler.md).
 */
#include "pgcc.h"

#include <stdlib.h>

void pg_prioritize(PgProgram *p, const PgProfile *prof) {
  PgPriority *r = &p->priority;
  *r = (PgPriority){0};
  if (!p->widen.kept) {
    r->why_not = p->widen.why_not ? p->widen.why_not : "the root graph was not widened";
    return;
  }
  PgGraph *g = p->graphs.v[0];
  size_t n = g->nodes.n;
  double *t = pg_xcalloc(n, sizeof *t), *top = pg_xcalloc(n, sizeof *top), *bottom = pg_xcalloc(n, sizeof *bottom);
  double path = 0;
  for (size_t j = 0; j < n; j++) {
    const PgNode *v = g->nodes.v[j];
    t[j] = pg_cost_node_us(prof, v);
    PgNode *const *pred = pg_preds(v);
    for (uint32_t q = 0; q < v->npred; q++) {
      size_t i = pred[q]->index;
      if (top[i] + t[i] > top[j]) top[j] = top[i] + t[i];
    }
    if (top[j] + t[j] > path) path = top[j] + t[j];
  }
  for (size_t j = n; j-- > 0;) {
    const PgNode *v = g->nodes.v[j];
    double after = 0;
    PgNode *const *succ = pg_succs(v);
    for (uint32_t q = 0; q < v->nsucc; q++)
      if (bottom[succ[q]->index] > after) after = bottom[succ[q]->index];
    bottom[j] = t[j] + after;
  }
  r->ran = true, r->path_us = path;
  for (size_t j = 0; j < n; j++) {
    PgNode *v = g->nodes.v[j];
    bool graphed = v->region >= 0 && (size_t)v->region < p->regions.n && p->regions.v[v->region]->graph;
    if (v->kind != PG_KERNEL || !graphed) continue;
    r->kernels++;
    if (top[j] + bottom[j] >= path * (1 - 1e-6) && v->u.kernel.priority == 0) {
      v->u.kernel.priority = PG_CRITICAL_PRIORITY;
      r->critical++;
    }
  }
  free(t), free(top), free(bottom);
}

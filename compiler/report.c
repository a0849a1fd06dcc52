/*
 * report.c -- the offline cost report: `pgcc --report` (a table for a terminal)
 * and `pgcc --report=json` (the same for programs).  Needs no GPU: everything
 * comes from the program, its partition, the cost model and the memory plan.
 */
#include "pgcc.h"

#include <inttypes.h>
#include <string.h>

typedef struct {
  double eager, planned;
  size_t graph_regions, graph_nodes, eager_regions, eager_nodes;
} Totals;

static Totals totals(const PgProgram *p) {
  Totals t = {0};
  for (size_t i = 0; i < p->regions.n; i++) {
    const PgRegion *r = p->regions.v[i];
    t.eager += r->est_eager_us;
    t.planned += r->graph ? r->est_graph_us : r->est_eager_us;
    if (r->graph)
      t.graph_regions++, t.graph_nodes += r->nodes.n;
    else
      t.eager_regions++, t.eager_nodes += r->nodes.n;
  }
  return t;
}

/* the memory plan's placements (PgPlacement), in the text and in the JSON */
static const char *const PLACEMENT_TEXT[PG_PLACE_COUNT] = {"in time order", "largest first", "longest-lived first"};
static const char *const PLACEMENT_JSON[PG_PLACE_COUNT] = {"time", "size", "life"};

static const char *plural(size_t n, const char *one, const char *many) { return n == 1 ? one : many; }

static const char *bytes(char *buf, size_t n, uint64_t b) {
  if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (1ull << 30));
  else if (b >= (1ull << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (1ull << 20));
  else if (b >= (1ull << 10)) snprintf(buf, n, "%.2f KiB", (double)b / (1ull << 10));
  else snprintf(buf, n, "%llu B", (unsigned long long)b);
  return buf;
}

/* Host reads: host buffers, the scalars read from them or given by callbacks, guards.
 * Each list in declaration (or node) order; the report prints them when there are any. */
typedef struct {
  size_t buffers, reads, callbacks, guards;
} HostCounts;

static HostCounts host_counts(const PgProgram *p) {
  HostCounts h = {0};
  for (size_t i = 0; i < p->buffers.n; i++) h.buffers += p->buffers.v[i]->role == PG_ROLE_HOST;
  for (size_t i = 0; i < p->scalars.n; i++)
    h.reads += p->scalars.v[i]->from != NULL, h.callbacks += p->scalars.v[i]->is_callback;
  for (size_t i = 0; i < p->graphs.v[0]->nodes.n; i++) h.guards += pg_is_hostop(p->graphs.v[0]->nodes.v[i], "guard");
  return h;
}

static void host_text(const PgProgram *p, FILE *f) {
  HostCounts h = host_counts(p);
  if (!h.buffers && !h.reads && !h.callbacks && !h.guards) return;
  char b[32];
  fputs("host reads:", f);
  const char *sep = " host buffers ";
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *hb = p->buffers.v[i];
    if (hb->role != PG_ROLE_HOST) continue;
    fprintf(f, "%s%s (%s%s%s)", sep, hb->name, hb->has_dtype ? pg_type_names[hb->dtype] : "",
            hb->has_dtype ? ", " : "", bytes(b, sizeof b, hb->size));
    sep = ", ";
  }
  sep = h.buffers ? "; read scalars " : " read scalars ";
  for (size_t i = 0; i < p->scalars.n; i++)
    if (p->scalars.v[i]->from)
      fprintf(f, "%s%s (%s from %s)", sep, p->scalars.v[i]->name, pg_type_names[p->scalars.v[i]->type],
              p->scalars.v[i]->from->name), sep = ", ";
  sep = h.buffers || h.reads ? "; callback scalars " : " callback scalars ";
  for (size_t i = 0; i < p->scalars.n; i++)
    if (p->scalars.v[i]->is_callback)
      fprintf(f, "%s%s (%s)", sep, p->scalars.v[i]->name, pg_type_names[p->scalars.v[i]->type]), sep = ", ";
  sep = h.buffers || h.reads || h.callbacks ? "; guards " : " guards ";
  for (size_t i = 0; i < p->graphs.v[0]->nodes.n; i++) {
    const PgNode *n = p->graphs.v[0]->nodes.v[i];
    if (pg_is_hostop(n, "guard"))
      fprintf(f, "%s%s (%s starts with %s)", sep, n->name, n->u.hostop.buf->name, n->u.hostop.expect), sep = ", ";
  }
  fputc('\n', f);
}

/* ---- shape buckets ---- */

static size_t nodes_in(const PgGraph *g) {
  size_t n = g->nodes.n;
  for (size_t i = 0; i < g->nodes.n; i++) {
    const PgNode *m = g->nodes.v[i];
    if (m->kind == PG_CHILD) n += nodes_in(m->u.child.body);
    if (m->kind == PG_CONDITIONAL)
      for (size_t b = 0; b < m->u.cond.bodies.n; b++) n += nodes_in(m->u.cond.bodies.v[b]);
  }
  return n;
}

/* The predicted time of a call that takes body b of switch c: the plan's, with c's
 * region's time (its costliest path) replaced by that of the path through body b, in the
 * form chosen (cost.c); inside a body, the plan's with body b's time in place of the
 * costliest one's. */
static double taking(const PgProgram *p, const PgNode *c, size_t b, double planned) {
  if (!c->graph->owner && c->region >= 0)
    return planned - p->regions.v[c->region]->est_graph_us + c->u.cond.bodies.v[b]->est_path_us;
  double most = 0;
  for (size_t k = 0; k < c->u.cond.bodies.n; k++)
    if (c->u.cond.bodies.v[k]->est_us > most) most = c->u.cond.bodies.v[k]->est_us;
  return planned - most + c->u.cond.bodies.v[b]->est_us;
}

/* The region that runs switch c as one graph per bucket, or could: NULL if none. */
static const PgRegion *bucket_region(const PgProgram *p, const PgNode *c) {
  if (c->graph->owner || c->region < 0 || p->regions.v[c->region]->bucket_switch != c) return NULL;
  return p->regions.v[c->region];
}

static uint64_t weight_bytes(const PgProgram *p) {
  uint64_t w = 0;
  for (size_t i = 0; i < p->buffers.n; i++) w += p->buffers.v[i]->role == PG_ROLE_WEIGHT ? p->buffers.v[i]->size : 0;
  return w;
}

/* Per dim, its values and the switch that picks its bucket; per bucket the body, its
 * nodes, the predicted time of a call that takes it and the arena it reaches; then what
 * the buckets share. */
static void buckets_text(const PgProgram *p, double planned, FILE *f) {
  char b[32], w[32];
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fprintf(f, "dim %s (%s:", d->name, d->pad ? "pad" : "exact");
    for (size_t k = 0; k < d->values.n; k++) fprintf(f, "%s %" PRId64, k ? "," : "", d->values.v[k]);
    if (!d->node) {
      fputs("): no switch picks its bucket\n", f);
      continue;
    }
    const PgRegion *r = bucket_region(p, d->node);
    fprintf(f, "): switch '%s'%s\n", d->node->name,
            !r                ? ""
            : r->bucket_graphs ? ", run as one graph per bucket (PGRT_BUCKETS=switch keeps the switch)"
                               : " (PGRT_BUCKETS=graphs runs one graph per bucket)");
    for (size_t k = 0; k < d->values.n; k++) {
      const PgGraph *g = d->node->u.cond.bodies.v[k];
      size_t n = nodes_in(g);
      fprintf(f, "  bucket %s=%" PRId64 ": body %s, %zu %s, %.1f us predicted per call, arena %s\n", d->name,
              d->values.v[k], g->name, n, plural(n, "node", "nodes"), taking(p, d->node, k, planned),
              bytes(b, sizeof b, pg_memplan_reach(p, d->node, k)));
    }
  }
  if (p->dims.n)
    fprintf(f, "shared by every bucket: arena %s, weights %s\n", bytes(b, sizeof b, p->mem.arena_bytes),
            bytes(w, sizeof w, weight_bytes(p)));
}

/* The bytes of a staged collective's staging buffers (stage.c): one for both ends in
 * place, else one per end staged; 0 when it is not staged. */
static uint64_t stage_bytes(const PgCollective *c) {
  const PgBuffer *in = c->stage_in ? c->stage_in->u.memcpy.dst.buf : NULL;
  const PgBuffer *out = c->stage_out ? c->stage_out->u.memcpy.src.buf : NULL;
  return (in ? in->size : 0) + (out && out != in ? out->size : 0);
}

/* The NCCL collectives of the root graph (the only place the C generator takes them), in
 * node order: each with its comm, its bytes and its predicted time, and where it is
 * staged, its staging buffers' bytes and the per-call buffers that made it so. */
static void collectives_text(const PgProgram *p, const PgProfile *pr, FILE *f) {
  const PgGraph *root = p->graphs.v[0];
  char b[32], sb[32];
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (n->kind != PG_LIBCALL || !n->u.libcall.coll) continue;
    const PgCollective *c = n->u.libcall.coll;
    fprintf(f, "collective %s: %s on comm %s (%" PRIu32 " %s), %" PRIu64 " %s per rank, %s sent, predicted %.1f us "
            "(region %d)", n->name, pg_colls[c->kind].fn, c->comm->name, c->comm->ranks,
            plural(c->comm->ranks, "rank", "ranks"), c->count, pg_type_names[c->dtype],
            bytes(b, sizeof b, pg_coll_bytes(c, false)), pg_node_gpu_us(n) > 0 ? pg_node_gpu_us(n) : pg_cost_collective_us(pr, c),
            n->region);
    if (c->stage_in || c->stage_out) {
      const PgBuffer *send = c->stage_in ? c->stage_in->u.memcpy.src.buf : NULL;
      const PgBuffer *recv = c->stage_out ? c->stage_out->u.memcpy.dst.buf : NULL;
      fprintf(f, ", staged through %s of arena (", bytes(sb, sizeof sb, stage_bytes(c)));
      if (send && recv && c->stage_in->u.memcpy.dst.buf == c->stage_out->u.memcpy.src.buf)
        fprintf(f, "in place on '%s', a per-call buffer)", recv->name);
      else if (send && recv)
        fprintf(f, "its send buffer '%s' and recv buffer '%s' are per call)", send->name, recv->name);
      else
        fprintf(f, "its %s buffer '%s' is per call)", send ? "send" : "recv", send ? send->name : recv->name);
    }
    fputc('\n', f);
  }
}

/* widen.c's result, where it ran (a program without access sets says nothing): serial,
 * and each widened graph, and which was kept. */
static void widen_text(const PgProgram *p, FILE *f) {
  const PgWiden *w = &p->widen;
  if (!w->ran) return;
  char a[32], b[32];
  fprintf(f, "dependencies: %zu %s rebuilt from access sets (GPU work %.1f us)\n", w->nodes,
          plural(w->nodes, "node", "nodes"), w->work_us);
  fprintf(f, "  %-24s width 1, critical path %.1f us, edges %zu, arena %s\n", "in order:", w->serial_us,
          w->edges_before, bytes(a, sizeof a, w->serial_arena_bytes));
  const PgWidened *x[2] = {&w->shared, &w->own};
  const char *what[2] = {"over the serial plan:", "with a plan of its own:"};
  for (int k = 0; k < 2; k++)
    fprintf(f, "  %-24s width %zu%s, critical path %.1f us, edges %zu, arena %s (predicted %.1f us)\n", what[k],
            x[k]->width, x[k]->width_exact ? "" : " (at least)", x[k]->path_us, x[k]->edges,
            k == 1 && !x[k]->arena_bytes ? "not planned" : bytes(b, sizeof b, x[k]->arena_bytes),
            x[k]->predicted_us);
  if (w->kept)
    fprintf(f, "  kept: %s (predicted %.1f us of %.1f us in order; arena %s)\n",
            w->own_plan ? "the graph with a plan of its own" : "the graph over the serial plan", w->predicted_us,
            w->serial_us, bytes(a, sizeof a, w->arena_bytes));
  else
    fprintf(f, "  the chain kept: %s\n", w->why_not);
  if (p->priority.ran)
    fprintf(f, "  priorities: %zu of the graph regions' %zu %s on the critical path (%.1f us) launched first "
            "(priority %d; priority.c)\n", p->priority.critical, p->priority.kernels,
            plural(p->priority.kernels, "kernel", "kernels"), p->priority.path_us, PG_CRITICAL_PRIORITY);
}

void pg_report_text(const PgProgram *p, const PgReportInfo *info, FILE *f) {
  PgStats st = pg_program_stats(p);
  Totals t = totals(p);
  fprintf(f, "pgcc report: %s\n", info->input);
  fprintf(f, "profile: %s; instantiation spread over %.0f calls\n\n", info->profile->name, info->calls);
  fprintf(f, "%6s  %-6s  %6s  %7s  %10s  %10s  %s\n", "region", "launch", "nodes", "kernels", "eager us", "graph us",
          "reasons");
  for (size_t i = 0; i < p->regions.n; i++) {
    const PgRegion *r = p->regions.v[i];
    fprintf(f, "%6d  %-6s  %6zu  %7zu  %10.1f  ", r->id, r->graph ? "graph" : "eager", r->nodes.n, r->kernels,
            r->est_eager_us);
    if (r->graphable)
      fprintf(f, "%10.1f  ", r->est_graph_us);
    else
      fprintf(f, "%10s  ", "-");
    for (size_t k = 0; k < r->reasons.n; k++) fprintf(f, "%s%s", k ? "; " : "", r->reasons.v[k]);
    fputc('\n', f);
  }
  fprintf(f, "\n%zu %s (%zu %s) in %zu %s; the root graph in %zu %s: %zu as %s (%zu %s), %zu eager (%zu %s)\n",
          st.nodes, plural(st.nodes, "node", "nodes"), st.kernels, plural(st.kernels, "kernel", "kernels"), st.graphs,
          plural(st.graphs, "graph", "graphs"), p->regions.n, plural(p->regions.n, "region", "regions"),
          t.graph_regions, plural(t.graph_regions, "a graph", "graphs"), t.graph_nodes,
          plural(t.graph_nodes, "node", "nodes"), t.eager_regions, t.eager_nodes,
          plural(t.eager_nodes, "node", "nodes"));
  fprintf(f, "predicted per call: %.1f us all eager, %.1f us as planned", t.eager, t.planned);
  if (t.planned > 0) fprintf(f, " (%.2fx)", t.eager / t.planned);
  fputc('\n', f);
  char a[32], s[32], q[32], l[32];
  fprintf(f,
          "memory: arena %s for %zu intermediates (at least %s live at once; placed %s%s); %s as separate "
          "allocations; %s with one pool per graph\n",
          bytes(a, sizeof a, p->mem.arena_bytes), p->mem.buffers, bytes(l, sizeof l, p->mem.live_bytes),
          PLACEMENT_TEXT[p->mem.placement],
          !p->mem.dag_regions          ? ""
          : p->mem.dag_regions == 1 ? ", bytes shared only along dependencies in the graph region that is no chain"
                                    : ", bytes shared only along dependencies in the graph regions that are no chain",
          bytes(s, sizeof s, p->mem.sum_bytes),
          bytes(q, sizeof q, p->mem.pools_bytes));
  if (p->rename.buffers)
    fprintf(f, "values: %zu %s held several values one after another, split into %zu more %s (rename.c)\n",
            p->rename.buffers, plural(p->rename.buffers, "intermediate", "intermediates"), p->rename.values,
            plural(p->rename.values, "buffer", "buffers"));
  if (p->sched.moved) {
    char b[32];
    fprintf(f, "order: %zu %s moved up to free intermediates sooner (%s live at once in the captured order)\n",
            p->sched.moved, plural(p->sched.moved, "node", "nodes"), bytes(b, sizeof b, p->sched.live_before));
  }
  widen_text(p, f);
  host_text(p, f);
  buckets_text(p, t.planned, f);
  collectives_text(p, info->profile, f);
  size_t kinds[PG_RELOC_KIND_COUNT] = {0}, runs = 0;
  uint64_t dc = 0;
  for (size_t i = 0; i < p->kernels.n; i++)
    for (size_t j = 0; j < p->kernels.v[i]->params.n; j++) {
      const PgParam *pa = &p->kernels.v[i]->params.v[j];
      for (size_t r = 0; r < pa->ptrs.n; r++) kinds[pa->ptrs.v[r].kind]++;
      for (size_t r = 0; r < pa->dontcare.n; r++) runs++, dc += pa->dontcare.v[r].size;
    }
  if (kinds[PG_RELOC_LO32] || kinds[PG_RELOC_HI32] || runs) { /* by-value parameters of format version 2 */
    fputs("relocations in by-value parameters (kernel layouts):", f);
    for (int k = 0; k < PG_RELOC_KIND_COUNT; k++) fprintf(f, "%s %zu %s", k ? "," : "", kinds[k], pg_relocs[k].name);
    fprintf(f, "; %zu %s of don't-care bytes (%" PRIu64 " bytes), never patched\n", runs, plural(runs, "run", "runs"),
            dc);
  }
}

/* ---- JSON ---- */

static void jstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void jnum(FILE *f, double v) { fprintf(f, "%.3f", v); }

void pg_report_json(const PgProgram *p, const PgReportInfo *info, FILE *f) {
  PgStats st = pg_program_stats(p);
  Totals t = totals(p);
  fputs("{\n  \"input\": ", f);
  jstr(f, info->input);
  fputs(",\n  \"profile\": ", f);
  jstr(f, info->profile->name);
  fprintf(f, ",\n  \"calls\": %.0f,\n  \"nodes\": %zu,\n  \"edges\": %zu,\n  \"graphs\": %zu,\n  \"kernels\": %zu,\n",
          info->calls, st.nodes, st.edges, st.graphs, st.kernels);
  fputs("  \"regions\": [", f);
  for (size_t i = 0; i < p->regions.n; i++) {
    const PgRegion *r = p->regions.v[i];
    fprintf(f, "%s\n    {\"id\": %d, \"decision\": \"%s\", \"graphable\": %s, \"nodes\": %zu, \"kernels\": %zu, ",
            i ? "," : "", r->id, r->graph ? "graph" : "eager", r->graphable ? "true" : "false", r->nodes.n,
            r->kernels);
    fputs("\"est_eager_us\": ", f);
    jnum(f, r->est_eager_us);
    fputs(", \"est_graph_us\": ", f);
    if (r->graphable)
      jnum(f, r->est_graph_us);
    else
      fputs("null", f);
    fprintf(f, ", \"patched\": %zu, \"update\": \"%s\", \"reasons\": [", r->patched, pg_update_names[r->update]);
    for (size_t k = 0; k < r->reasons.n; k++) {
      if (k) fputs(", ", f);
      jstr(f, r->reasons.v[k]);
    }
    fputs("], \"members\": [", f);
    for (size_t k = 0; k < r->nodes.n; k++) {
      if (k) fputs(", ", f);
      jstr(f, r->nodes.v[k]->name);
    }
    fputs("]}", f);
  }
  fputs("\n  ],\n  \"not_graphable\": [", f);
  const PgGraph *root = p->graphs.v[0];
  bool first = true;
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (n->graphable) continue;
    fprintf(f, "%s\n    {\"node\": ", first ? "" : ",");
    jstr(f, n->name);
    fprintf(f, ", \"kind\": \"%s\", \"reason\": ", pg_kinds[n->kind].name);
    jstr(f, pg_node_why(n));
    fputc('}', f);
    first = false;
  }
  fputs(first ? "],\n" : "\n  ],\n", f);
  fputs("  \"est_total_eager_us\": ", f);
  jnum(f, t.eager);
  fputs(",\n  \"est_total_us\": ", f);
  jnum(f, t.planned);
  fputs(",\n  \"speedup\": ", f);
  jnum(f, t.planned > 0 ? t.eager / t.planned : 1.0);
  fputs(",\n  \"host_buffers\": [", f);
  first = true;
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role != PG_ROLE_HOST) continue;
    fprintf(f, "%s{\"name\": ", first ? "" : ", ");
    jstr(f, b->name);
    fprintf(f, ", \"size\": %llu, \"dtype\": ", (unsigned long long)b->size);
    if (b->has_dtype) jstr(f, pg_type_names[b->dtype]);
    else fputs("null", f);
    fputc('}', f);
    first = false;
  }
  fputs("],\n  \"read_scalars\": [", f);
  first = true;
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (!pg_scalar_is_read(s)) continue;
    fprintf(f, "%s{\"name\": ", first ? "" : ", ");
    jstr(f, s->name);
    fprintf(f, ", \"type\": \"%s\", \"from\": ", pg_type_names[s->type]);
    if (s->from) jstr(f, s->from->name);
    else fputs("null", f);
    fprintf(f, ", \"callback\": %s}", s->is_callback ? "true" : "false");
    first = false;
  }
  fputs("],\n  \"guards\": [", f);
  first = true;
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (!pg_is_hostop(n, "guard")) continue;
    fprintf(f, "%s{\"node\": ", first ? "" : ", ");
    jstr(f, n->name);
    fputs(", \"buffer\": ", f);
    jstr(f, n->u.hostop.buf->name);
    fputs(", \"expect\": ", f);
    jstr(f, n->u.hostop.expect);
    fputs(", \"reason\": ", f);
    jstr(f, n->u.hostop.reason);
    fputc('}', f);
    first = false;
  }
  fputs("],\n  \"dims\": [", f);
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fprintf(f, "%s{\"name\": ", i ? ", " : "");
    jstr(f, d->name);
    fputs(", \"values\": [", f);
    for (size_t k = 0; k < d->values.n; k++) fprintf(f, "%s%" PRId64, k ? ", " : "", d->values.v[k]);
    fprintf(f, "], \"mode\": \"%s\", \"switch\": ", d->pad ? "pad" : "exact");
    if (d->node) jstr(f, d->node->name);
    else fputs("null", f);
    const PgRegion *r = d->node ? bucket_region(p, d->node) : NULL; /* how it runs, where it may run both ways */
    fprintf(f, ", \"form\": %s}", !d->node ? "null" : r && r->bucket_graphs ? "\"graphs\"" : "\"switch\"");
  }
  fputs("],\n  \"buckets\": [", f);
  first = true;
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    for (size_t k = 0; d->node && k < d->values.n; k++) {
      const PgGraph *g = d->node->u.cond.bodies.v[k];
      fprintf(f, "%s\n    {\"dim\": ", first ? "" : ",");
      jstr(f, d->name);
      fprintf(f, ", \"value\": %" PRId64 ", \"index\": %zu, \"switch\": ", d->values.v[k], k);
      jstr(f, d->node->name);
      fputs(", \"body\": ", f);
      jstr(f, g->name);
      fprintf(f, ", \"nodes\": %zu, \"est_us\": ", nodes_in(g));
      jnum(f, taking(p, d->node, k, t.planned));
      fprintf(f, ", \"arena_bytes\": %llu}", (unsigned long long)pg_memplan_reach(p, d->node, k));
      first = false;
    }
  }
  fputs(first ? "]" : "\n  ]", f);
  fprintf(f, ",\n  \"weights_bytes\": %llu", (unsigned long long)weight_bytes(p));
  fprintf(f, ",\n  \"arena_bytes\": %llu,\n  \"live_bytes\": %llu,\n  \"arena_placement\": \"%s\",\n  \"placements\": {",
          (unsigned long long)p->mem.arena_bytes, (unsigned long long)p->mem.live_bytes,
          PLACEMENT_JSON[p->mem.placement]);
  for (int k = 0; k < PG_PLACE_COUNT; k++) { /* null: not tried (memplan.c) */
    fprintf(f, k ? ", \"%s\": " : "\"%s\": ", PLACEMENT_JSON[k]);
    if (p->mem.tried[k]) fprintf(f, "%llu", (unsigned long long)p->mem.placed_bytes[k]);
    else fputs("null", f);
  }
  fprintf(f, "},\n  \"sum_bytes\": %llu,\n  \"pools_bytes\": %llu,\n  \"planned_buffers\": %zu",
          (unsigned long long)p->mem.sum_bytes, (unsigned long long)p->mem.pools_bytes, p->mem.buffers);
  fprintf(f, ",\n  \"regions_planned_by_reach\": %zu", p->mem.dag_regions);
  fprintf(f, ",\n  \"rename\": {\"buffers\": %zu, \"values\": %zu, \"why_not\": ", p->rename.buffers, p->rename.values);
  if (p->rename.why_not) jstr(f, p->rename.why_not);
  else fputs("null", f);
  fputc('}', f);
  fprintf(f, ",\n  \"schedule\": {\"moved\": %zu, \"live_bytes_captured\": %llu, \"why_not\": ", p->sched.moved,
          (unsigned long long)(p->sched.moved ? p->sched.live_before : p->mem.live_bytes)); /* (nothing moved: the same) */
  if (p->sched.why_not) jstr(f, p->sched.why_not);
  else fputs("null", f);
  fputc('}', f);
  const PgWiden *w = &p->widen; /* widen.c: numbers only where it ran */
  fprintf(f, ",\n  \"widen\": {\"ran\": %s, \"kept\": %s, \"why_not\": ", w->ran ? "true" : "false",
          w->kept ? "true" : "false");
  if (w->why_not) jstr(f, w->why_not);
  else fputs("null", f);
  if (w->ran) {
    fprintf(f, ", \"own_plan\": %s", w->own_plan ? "true" : "false");
    fprintf(f, ", \"nodes\": %zu, \"edges_before\": %zu, \"edges_after\": %zu, \"width\": %zu, \"width_exact\": %s",
            w->nodes, w->edges_before, w->edges_after, w->width, w->width_exact ? "true" : "false");
    fputs(", \"serial_us\": ", f), jnum(f, w->serial_us);
    fputs(", \"path_us\": ", f), jnum(f, w->path_us);
    fputs(", \"work_us\": ", f), jnum(f, w->work_us);
    fputs(", \"predicted_us\": ", f), jnum(f, w->predicted_us);
    fprintf(f, ", \"arena_bytes\": %llu, \"serial_arena_bytes\": %llu", (unsigned long long)w->arena_bytes,
            (unsigned long long)w->serial_arena_bytes);
    const PgWidened *x[2] = {&w->shared, &w->own};
    for (int k = 0; k < 2; k++) {
      fprintf(f, ", \"%s\": {\"width\": %zu, \"width_exact\": %s, \"edges\": %zu, \"path_us\": ",
              k ? "own_plan_graph" : "serial_plan_graph", x[k]->width, x[k]->width_exact ? "true" : "false",
              x[k]->edges);
      jnum(f, x[k]->path_us);
      fputs(", \"predicted_us\": ", f), jnum(f, x[k]->predicted_us);
      fprintf(f, ", \"arena_bytes\": %llu}", (unsigned long long)x[k]->arena_bytes);
    }
  }
  fputc('}', f);
  if (p->priority.ran) { /* (--priorities only) */
    fprintf(f, ",\n  \"priority\": {\"critical\": %zu, \"kernels\": %zu, \"level\": %d, \"path_us\": ",
            p->priority.critical, p->priority.kernels, PG_CRITICAL_PRIORITY);
    jnum(f, p->priority.path_us);
    fputc('}', f);
  }
  fputs(",\n  \"collectives\": [", f);
  first = true;
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (n->kind != PG_LIBCALL || !n->u.libcall.coll) continue;
    const PgCollective *c = n->u.libcall.coll;
    fprintf(f, "%s{\"node\": ", first ? "" : ", ");
    jstr(f, n->name);
    fprintf(f, ", \"fn\": \"%s\", \"comm\": ", pg_colls[c->kind].fn);
    jstr(f, c->comm->name);
    fprintf(f, ", \"ranks\": %" PRIu32 ", \"count\": %" PRIu64 ", \"dtype\": \"%s\", \"send_bytes\": %" PRIu64
            ", \"recv_bytes\": %" PRIu64 ", \"region\": %d, \"staged\": %s, \"stage_bytes\": %" PRIu64
            ", \"est_us\": ", c->comm->ranks, c->count, pg_type_names[c->dtype], pg_coll_bytes(c, false),
            pg_coll_bytes(c, true), n->region, c->stage_in || c->stage_out ? "true" : "false", stage_bytes(c));
    jnum(f, pg_node_gpu_us(n) > 0 ? pg_node_gpu_us(n) : pg_cost_collective_us(info->profile, c));
    fputc('}', f);
    first = false;
  }
  fputs("]", f);
  fputs("\n}\n", f);
}

/*
 * dot_write.c -- prints a program as DOT for Graphviz (`pgcc --emit=dot x | dot -Tsvg`).
 *
 * The layout follows cudaGraphDebugDotPrint's plain style (one cluster per graph,
 * node labels "ID\nKIND\n..."), so pgcc reads its own DOT back: the topology,
 * kinds, kernels and launch dimensions survive the round trip.  When the program
 * has been partitioned, the root graph's regions are drawn as coloured clusters.
 */
#include "pgcc.h"

#include <inttypes.h>

/* "4" for a graph named "g4" (it prints as graph_4), else the name itself. */
static const char *graph_id(const PgGraph *g, char *buf, size_t n) {
  const char *s = g->name;
  if (s[0] == 'g' && s[1] >= '0' && s[1] <= '9') s++;
  snprintf(buf, n, "%s", s);
  return buf;
}

static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\' || *s == '<' || *s == '>' || *s == '{' || *s == '}' || *s == '|') fputc('\\', f);
    fputc(*s, f);
  }
}

/* A conditional is a record, as CUDA prints it: its bodies are named in it. */
static void put_conditional(FILE *f, const PgNode *n, const char *gid) {
  static const char *const types[] = {"IF", "WHILE", "SWITCH"};
  fprintf(f, "\"graph_%s_node_%" PRIu32 "\"[style=\"bold\" shape=\"record\" label=\"{CONDITIONAL\n| {ID | %" PRIu32 "}",
          gid, n->index, n->index);
  if (n->u.cond.has_handle) fprintf(f, "\n| {Conditional Handle|%" PRIu64 "}", n->u.cond.handle);
  fprintf(f, "\n| {Conditional Type| %s}", types[n->u.cond.type]);
  for (size_t b = 0; b < n->u.cond.bodies.n; b++) {
    char key[32], body[64];
    if (n->u.cond.type == PG_COND_SWITCH)
      snprintf(key, sizeof key, "%zu", b);
    else
      snprintf(key, sizeof key, "%s", b ? "False" : "True");
    fprintf(f, "\n| {%s|graph_%s}", key, graph_id(n->u.cond.bodies.v[b], body, sizeof body));
  }
  fputs("\n}\"];\n", f);
}

static void put_node(FILE *f, const PgNode *n, const char *gid) {
  if (n->kind == PG_CONDITIONAL) {
    put_conditional(f, n, gid);
    return;
  }
  bool kernel = n->kind == PG_KERNEL;
  fprintf(f, "\"graph_%s_node_%" PRIu32 "\"[style=\"%s\" shape=\"%s\" label=\"%" PRIu32 "\n", gid, n->index,
          kernel ? "bold" : "solid", kernel ? "octagon" : "rectangle", n->index);
  char buf[64];
  switch (n->kind) {
  case PG_KERNEL:
    put_escaped(f, n->u.kernel.kernel->symbol);
    fputc('\n', f);
    if (n->u.kernel.grid[0]) {
      const uint32_t *gr = n->u.kernel.grid, *bl = n->u.kernel.block;
      fprintf(f,
              "\\<\\<\\<\\{%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\\},\\{%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\\},%" PRIu32
              "\\>\\>\\>",
              gr[0], gr[1], gr[2], bl[0], bl[1], bl[2], n->u.kernel.smem);
    }
    break;
  case PG_MEMCPY: {
    static const char *const dirs[] = {"HtoD", "DtoH", "DtoD", "HtoH", "Default"};
    fprintf(f, "MEMCPY\n(%s,%" PRIu64 ")\n", dirs[n->u.memcpy.dir],
            n->u.memcpy.width * n->u.memcpy.height * n->u.memcpy.depth);
    break;
  }
  case PG_MEMSET:
    fprintf(f, "MEMSET\n(%" PRIu32 ",%" PRIu64 ")\n", n->u.memset.value,
            n->u.memset.width * (n->u.memset.elem ? n->u.memset.elem : 1) * n->u.memset.height);
    break;
  case PG_CHILD: fprintf(f, "graph_%s\n", graph_id(n->u.child.body, buf, sizeof buf)); break;
  case PG_LIBCALL: fputs("LIBCALL\n", f), put_escaped(f, n->u.libcall.fn), fputc('\n', f); break;
  case PG_HOSTOP: /* the operation; a guard's buffer and bytes */
    fputs("HOSTOP\n", f), put_escaped(f, n->u.hostop.op);
    if (n->u.hostop.buf) fputs(" ", f), put_escaped(f, n->u.hostop.buf->name), fprintf(f, " == %s", n->u.hostop.expect);
    fputc('\n', f), put_escaped(f, n->u.hostop.reason), fputc('\n', f);
    break;
  case PG_OPAQUE: put_escaped(f, n->u.opaque.what), fputc('\n', f); break;
  default:
    for (const char *k = pg_kinds[n->kind].name; *k; k++) fputc(*k >= 'a' && *k <= 'z' ? *k - 32 : *k, f);
    fputc('\n', f);
  }
  fputs("\"];\n", f);
}

/* The partition: one cluster per region inside the root graph, graph regions
 * green, eager ones red.  pgcc reads such clusters back as part of their graph. */
static void put_regions(FILE *f, const PgProgram *p, const char *gid) {
  for (size_t ri = 0; ri < p->regions.n; ri++) {
    const PgRegion *r = p->regions.v[ri];
    fprintf(f, "subgraph cluster_region_%d {\nlabel=\"region %d: %s, %.1f us", r->id, r->id,
            r->graph ? "graph" : "eager", r->graph ? r->est_graph_us : r->est_eager_us);
    if (r->graph) fprintf(f, " (eager %.1f us)", r->est_eager_us);
    fprintf(f, "\" style=\"filled,rounded\" fillcolor=\"%s\" color=\"%s\";\n", r->graph ? "#e3f4e1" : "#fbe3e1",
            r->graph ? "#3c8d40" : "#c0392b");
    for (size_t k = 0; k < r->nodes.n; k++) put_node(f, r->nodes.v[k], gid);
    fputs("}\n", f);
  }
}

void pg_dot_write(const PgProgram *p, FILE *f) {
  fputs("digraph dot {\n", f);
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    char gid[64];
    graph_id(g, gid, sizeof gid);
    fprintf(f, "subgraph cluster_%s {\nlabel=\"graph_%s\" graph[style=\"dashed\"];\n", gid, gid);
    if (gi == 0 && p->regions.n)
      put_regions(f, p, gid);
    else
      for (size_t i = 0; i < g->nodes.n; i++) put_node(f, g->nodes.v[i], gid);
    for (size_t i = 0; i < g->edges.n; i++)
      fprintf(f, "\"graph_%s_node_%" PRIu32 "\" -> \"graph_%s_node_%" PRIu32 "\";\n", gid,
              g->edges.v[i].from->index, gid, g->edges.v[i].to->index);
    fputs("}\n", f);
  }
  fputs("}\n", f);
}

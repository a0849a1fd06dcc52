/*
 * dot_write.c -- prints a program as DOT for Graphviz (`pgcc --emit=dot x | dot -Tsvg`).
 *
 * The layout follows cudaGraphDebugDotPrint's plain style (one cluster per graph,
 * node labels "ID\nKIND\n..."), so pgcc reads its own DOT back: the topology,
 * kinds, kernels and launch dimensions survive the round trip.
 */
#include "pgcc.h"

#include <inttypes.h>

/* The number after the last 'g' in a graph name such as "g4", for "graph_4". */
static const char *graph_id(const PgGraph *g, char *buf, size_t n) {
  const char *s = g->name;
  if (s[0] == 'g' && s[1] >= '0' && s[1] <= '9') s++;
  snprintf(buf, n, "%s", s);
  return buf;
}

static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\' || *s == '<' || *s == '>' || *s == '{' || *s == '}' || *s == '|')
      fputc('\\', f);
    fputc(*s, f);
  }
}

void pg_dot_write(const PgProgram *p, FILE *f) {
  fputs("digraph dot {\n", f);
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    char gid[64], gid2[64];
    graph_id(g, gid, sizeof gid);
    fprintf(f, "subgraph cluster_%s {\nlabel=\"graph_%s\" graph[style=\"dashed\"];\n", gid, gid);
    for (size_t i = 0; i < g->nodes.n; i++) {
      const PgNode *n = g->nodes.v[i];
      bool kernel = n->kind == PG_KERNEL;
      char buf[64];
      if (n->kind == PG_CONDITIONAL) { /* a record, as CUDA prints it: the bodies are named in it */
        static const char *const types[] = {"IF", "WHILE", "SWITCH"};
        fprintf(f, "\"graph_%s_node_%zu\"[style=\"bold\" shape=\"record\" label=\"{CONDITIONAL\n| {ID | %zu}",
                gid, i, i);
        if (n->u.cond.has_handle) fprintf(f, "\n| {Conditional Handle|%" PRIu64 "}", n->u.cond.handle);
        fprintf(f, "\n| {Conditional Type| %s}", types[n->u.cond.type]);
        for (size_t b = 0; b < n->u.cond.bodies.n; b++)
          fprintf(f, "\n| {%s|graph_%s}",
                  n->u.cond.type == PG_COND_SWITCH ? (snprintf(buf, sizeof buf, "%zu", b), buf) : b ? "False" : "True",
                  graph_id(n->u.cond.bodies.v[b], gid2, sizeof gid2));
        fputs("\n}\"];\n", f);
        continue;
      }
      fprintf(f, "\"graph_%s_node_%zu\"[style=\"%s\" shape=\"%s\" label=\"%zu\n", gid, i, kernel ? "bold" : "solid",
              kernel ? "octagon" : "rectangle", i);
      switch (n->kind) {
      case PG_KERNEL:
        put_escaped(f, n->u.kernel.kernel->symbol);
        fputc('\n', f);
        if (n->u.kernel.grid[0]) {
          const uint32_t *gr = n->u.kernel.grid, *bl = n->u.kernel.block;
          fprintf(f, "\\<\\<\\<\\{%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\\},\\{%" PRIu32 ",%" PRIu32 ",%" PRIu32
                     "\\},%" PRIu32 "\\>\\>\\>",
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
      case PG_HOSTOP: fputs("HOSTOP\n", f), put_escaped(f, n->u.hostop.reason), fputc('\n', f); break;
      case PG_OPAQUE: put_escaped(f, n->u.opaque.what), fputc('\n', f); break;
      default: {
        for (const char *k = pg_kinds[n->kind].name; *k; k++) fputc(*k >= 'a' && *k <= 'z' ? *k - 32 : *k, f);
        fputc('\n', f);
      }
      }
      fputs("\"];\n", f);
    }
    for (size_t i = 0; i < g->edges.n; i++)
      fprintf(f, "\"graph_%s_node_%" PRIu32 "\" -> \"graph_%s_node_%" PRIu32 "\";\n", gid,
              g->edges.v[i].from->index, gid, g->edges.v[i].to->index);
    fputs("}\n", f);
  }
  fputs("}\n", f);
}

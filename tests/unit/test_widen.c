/* test_widen.c -- widen.c: the root chain rebuilt from true dependencies.  Each hazard
 * kind and barriers by hand; random chains with random access sets against an
 * oracle written here (the dependencies the sets imply, their closure, the arena
 * bytes two unordered nodes may share); order independence; the cost decision; the
 * golden q/k/v program through --emit=graph and the report; rename.c's split of a
 * reused intermediate into its values, which widening then runs side by side;
 * priority.c's choice of the critical path's kernels. */
#include <string.h>

#include "../helpers.h"

/* Parses and runs the pipeline as the driver does, widen last. */
static Parsed *widened(const char *text, const PgProfile *prof) {
  Parsed *p = parse_text("t.graph", text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  if (!prof) prof = &pg_profile_h200;
  pg_stage_collectives(p->prog);
  pg_classify(p->prog);
  pg_rename(p->prog);
  pg_schedule(p->prog);
  pg_partition(p->prog);
  pg_verify_regions(p->prog, &p->diag);
  pg_cost(p->prog, prof, 1000, false);
  pg_memplan(p->prog);
  pg_widen(p->prog, prof);
  ck_assert_int_eq(pg_verify(p->prog, &p->diag), 0);
  return p;
}

/* Is there an edge a -> b among the widened edges (kept or not)? */
static bool has_edge(const PgProgram *p, const char *a, const char *b) {
  for (size_t e = 0; e < p->widen.edges.n; e++)
    if (strcmp(p->widen.edges.v[e].from->name, a) == 0 && strcmp(p->widen.edges.v[e].to->name, b) == 0) return true;
  return false;
}

/* Reachability over the widened edges: r[i * n + j] when node i reaches node j (indices
 * in the root graph's order). */
static bool *reach_over(const PgProgram *p, const PgEdge *edges, size_t ne) {
  const PgGraph *g = p->graphs.v[0];
  size_t n = g->nodes.n;
  bool *r = calloc(n * n + 1, 1);
  for (size_t e = 0; e < ne; e++) r[edges[e].from->index * n + edges[e].to->index] = true;
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < n; i++)
      if (r[i * n + k])
        for (size_t j = 0; j < n; j++) r[i * n + j] |= r[k * n + j];
  return r;
}

static bool *reach(const PgProgram *p) { return reach_over(p, p->widen.edges.v, p->widen.edges.n); }

#define KERNELS                                                                                     \
  "pgcc 1;\n"                                                                                       \
  "kernel rw symbol \"rw\" { param 0 8 ptr access r; param 8 8 ptr access w; }\n"                  \
  "kernel rr symbol \"rr\" { param 0 8 ptr access r; param 8 8 ptr access r; }\n"                  \
  "kernel ww symbol \"ww\" { param 0 8 ptr access w; param 8 8 ptr access w; }\n"                  \
  "kernel uu symbol \"uu\" { param 0 8 ptr; param 8 8 ptr; }\n"                                     \
  "buffer x size 4096 role input;\nbuffer y size 4096 role output;\nbuffer z size 4096 role output;\n" \
  "buffer w size 4096 role weight;\n"

/* Two nodes, a chain; whether the second still waits for the first. */
static bool ordered(const char *first, const char *second) {
  char text[2048];
  snprintf(text, sizeof text, KERNELS "graph g {\n node a %s gpu_us 10;\n node b %s gpu_us 10;\n a -> b;\n}\n", first,
           second);
  Parsed *p = widened(text, NULL);
  ck_assert(p->prog->widen.ran);
  bool e = has_edge(p->prog, "a", "b");
  ck_assert_uint_eq(p->prog->widen.edges.n, e);
  ck_assert_uint_eq(p->prog->widen.width, e ? 1 : 2);
  parsed_free(p);
  return e;
}

START_TEST(each_hazard_kind) {
  ck_assert(ordered("kernel rw args [x, y]", "kernel rw args [y, z]"));  /* read after write */
  ck_assert(ordered("kernel rw args [y, z]", "kernel rw args [x, y]"));  /* write after read */
  ck_assert(ordered("kernel rw args [x, y]", "kernel rw args [w, y]"));  /* write after write */
  ck_assert(!ordered("kernel rw args [x, y]", "kernel rw args [x, z]")); /* read after read: none */
  ck_assert(!ordered("kernel rr args [x, w]", "kernel rr args [w, x]"));
  ck_assert(ordered("kernel uu args [x, w]", "kernel rr args [x, w]"));  /* no annotation: read and written */
  ck_assert(ordered("kernel rr args [x, w]", "kernel uu args [w, z]"));
  ck_assert(!ordered("kernel uu args [x, y]", "kernel rr args [w, w]"));
  ck_assert(!ordered("kernel rw args [x, null]", "kernel ww args [z, null]")); /* a null pointer touches nothing */
  /* copies and memsets: the bytes their extents reach */
  ck_assert(!ordered("memset dst y value 0 width 2048", "memset dst y+2048 value 0 width 2048"));
  ck_assert(ordered("memset dst y value 0 width 2049", "memset dst y+2048 value 0 width 2048"));
  ck_assert(!ordered("memset dst y value 0 elem 4 width 512", "memcpy dir dtod src x dst y+2048 width 2048"));
  ck_assert(ordered("memset dst y value 0 elem 4 width 513", "memcpy dir dtod src x dst y+2048 width 2048"));
  ck_assert(ordered("memcpy dir dtod src x dst y width 64", "memcpy dir dtod src y dst z width 64"));
  ck_assert(!ordered("memcpy dir dtod src x dst y width 64", "memcpy dir dtod src x dst z width 64"));
  /* 2-D: rows 1024 bytes apart, 3 rows of 16 bytes reach byte 2064 */
  ck_assert(ordered("memcpy dir dtod src x dst y width 16 height 3 dst_pitch 1024", "memset dst y+2063 value 0 width 1"));
  ck_assert(!ordered("memcpy dir dtod src x dst y width 16 height 3 dst_pitch 1024", "memset dst y+2064 value 0 width 1"));
  ck_assert(ordered("kernel rw args [x, y]", "memcpy dir dtod src y+4000 dst z width 8")); /* a kernel: the whole buffer */
}
END_TEST

START_TEST(barriers) {
  Parsed *p = widened(KERNELS "graph g {\n node a kernel rw args [x, y] gpu_us 10;\n node b kernel rw args [x, z] gpu_us 10;\n"
                              " node s hostop op sync reason \"r\";\n node c kernel rw args [w, y] gpu_us 10;\n"
                              " node d kernel rr args [w, x] gpu_us 10;\n a -> b;\n b -> s;\n s -> c;\n c -> d;\n}\n",
                      NULL);
  const PgProgram *g = p->prog;
  ck_assert(g->widen.ran);
  ck_assert(has_edge(g, "a", "s") && has_edge(g, "b", "s") && has_edge(g, "s", "c") && has_edge(g, "s", "d"));
  ck_assert(!has_edge(g, "a", "b") && !has_edge(g, "a", "c") && !has_edge(g, "c", "d"));
  ck_assert_uint_eq(g->widen.edges.n, 4);
  ck_assert_uint_eq(g->widen.width, 2);
  parsed_free(p);
  /* a kernel of a module with globals keeps its order with the module's other kernels */
  p = widened("pgcc 2;\nmodule m cuda file \"examples/saxpy.cu\" globals [\"G\" \"00\"];\n"
              "kernel k symbol \"k\" module m { param 0 8 ptr access r; param 8 8 ptr access w; }\n"
              "buffer x size 64 role input;\nbuffer y size 64 role output;\nbuffer z size 64 role output;\n"
              "graph g {\n node a kernel k args [x, y];\n node b kernel k args [x, z];\n a -> b;\n}\n",
              NULL);
  ck_assert(p->prog->widen.ran);
  ck_assert(has_edge(p->prog, "a", "b"));
  parsed_free(p);
}
END_TEST

/* Two intermediates on the same arena bytes (the plan on the chain): over the serial
 * plan, the second's writer waits for the first's last reader, though they share no
 * buffer; with a plan of its own the two branches run side by side on bytes of their
 * own, kept where that is worth the arena. */
#define TWO_BRANCHES(c, d, e)                                                                           \
  KERNELS "buffer t0 size 4096 role intermediate;\nbuffer t1 size 4096 role intermediate;\n"               \
          "buffer u size 4096 role output;\ngraph g {\n"                                                    \
          " node a kernel rw args [x, t0] grid [2] block [64] gpu_us 10;\n"                                 \
          " node b kernel rw args [t0, y] grid [2] block [64] gpu_us 10;\n"                                 \
          " node c kernel rw args [x, t1] grid [2] block [64] gpu_us " c ";\n"                              \
          " node d kernel rw args [t1, z] grid [2] block [64] gpu_us " d ";\n"                              \
          " node e kernel rw args [w, u] grid [2] block [64] gpu_us " e ";\n a -> b;\n b -> c;\n c -> d;\n" \
          " d -> e;\n}\n"

START_TEST(arena_reuse_is_an_edge) {
  /* e takes no time: the own plan's graph halves the path, at twice the arena */
  Parsed *p = widened(TWO_BRANCHES("10", "10", "0.001"), NULL);
  const PgProgram *g = p->prog;
  const PgBuffer *t0 = g->buffers.v[4], *t1 = g->buffers.v[5];
  const PgWiden *w = &g->widen;
  ck_assert_uint_eq(w->serial_arena_bytes, 4096); /* on the chain they shared bytes */
  ck_assert_uint_eq(w->shared.arena_bytes, 4096);
  ck_assert_uint_eq(w->shared.width, 2);          /* e beside the rest; a..d in one line */
  ck_assert_double_eq_tol(w->shared.path_us, 40, 1e-6);
  ck_assert_uint_eq(w->own.width, 3);
  ck_assert_double_eq_tol(w->own.path_us, 20, 1e-6);
  ck_assert_uint_eq(w->own.arena_bytes, 8192);
  ck_assert(w->kept && w->own_plan);
  ck_assert_uint_eq(w->arena_bytes, 8192);
  ck_assert_uint_eq(g->mem.arena_bytes, 8192);
  ck_assert_uint_eq(g->mem.dag_regions, 1);
  ck_assert(t0->planned && t1->planned && t0->offset != t1->offset); /* side by side: bytes of their own */
  ck_assert(has_edge(g, "a", "b") && has_edge(g, "c", "d") && !has_edge(g, "b", "c"));
  ck_assert_uint_eq(w->edges.n, 2);
  ck_assert_uint_eq(g->graphs.v[0]->edges.n, 2);
  parsed_free(p);
  /* e as long as a..d over the serial plan: the own plan's graph is no faster, so the
   * serial plan's is kept, and its arena */
  p = widened(TWO_BRANCHES("10", "10", "40"), NULL);
  w = &p->prog->widen;
  ck_assert(w->kept && !w->own_plan);
  ck_assert_uint_eq(w->own.arena_bytes, 0); /* not planned */
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 4096);
  ck_assert(has_edge(p->prog, "b", "c") && has_edge(p->prog, "a", "b") && has_edge(p->prog, "c", "d"));
  ck_assert_uint_eq(p->prog->buffers.v[4]->offset, p->prog->buffers.v[5]->offset);
  parsed_free(p);
  /* e of 35 us: the own plan's graph is 5 us faster (within the error of 18.75 us) for
   * twice the arena: the serial plan's graph is kept, its gain (35 us) beyond the error */
  p = widened(TWO_BRANCHES("10", "10", "35"), NULL);
  w = &p->prog->widen;
  ck_assert(w->kept && !w->own_plan);
  ck_assert_uint_eq(w->own.arena_bytes, 8192); /* planned, and put back */
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 4096);
  ck_assert_uint_eq(p->prog->mem.dag_regions, 0);
  ck_assert_uint_eq(p->prog->buffers.v[4]->offset, p->prog->buffers.v[5]->offset);
  ck_assert_uint_eq(w->width, 2);
  ck_assert(has_edge(p->prog, "b", "c"));
  parsed_free(p);
  /* c, d of 5 us, e of 10: over the serial plan 10 us of 40 (not beyond the error), with
   * its own plan 20 us, only 10 more, for twice the arena: the chain stays */
  p = widened(TWO_BRANCHES("5", "5", "10"), NULL);
  w = &p->prog->widen;
  ck_assert(w->ran && !w->kept);
  ck_assert_ptr_nonnull(strstr(w->why_not, "with a plan of its own the arena grows 100%"));
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 4096);
  ck_assert_uint_eq(p->prog->graphs.v[0]->edges.n, 4); /* the chain, as it was */
  ck_assert_uint_eq(p->prog->buffers.v[4]->offset, p->prog->buffers.v[5]->offset);
  parsed_free(p);
  /* on buffers of their own (an input and an output), the two halves are independent */
  p = widened(KERNELS "graph g {\n node a kernel rw args [x, y] gpu_us 10;\n node b kernel rw args [y, z] gpu_us 10;\n"
                      " node c kernel rw args [x, w] gpu_us 10;\n a -> b;\n b -> c;\n}\n",
              NULL);
  ck_assert(has_edge(p->prog, "a", "b") && !has_edge(p->prog, "b", "c") && !has_edge(p->prog, "a", "c"));
  parsed_free(p);
}
END_TEST

/* memplan.c on a graph region that is not a chain (a diamond, as read): two buffers
 * share bytes only where every node using one reaches every node using the other. */
START_TEST(memplan_by_reachability) {
  const char *text = KERNELS "buffer t0 size 1048576 role intermediate;\nbuffer t1 size 1048576 role intermediate;\n"
                             "buffer t2 size 1048576 role intermediate;\nbuffer t3 size 1048576 role intermediate;\n"
                             "graph g {\n node a kernel rw args [x, t0];\n node b kernel rw args [t0, t1];\n"
                             " node c kernel rw args [x, t2];\n node d kernel rw args [t1, t3];\n"
                             " node e kernel rw args [t2, t3];\n node f kernel rw args [t3, y];\n"
                             " a -> b;\n a -> c;\n b -> d;\n c -> e;\n d -> e;\n e -> f;\n}\n";
  Parsed *p = widened(text, NULL);
  const PgProgram *g = p->prog;
  ck_assert_uint_eq(g->regions.n, 1);
  ck_assert_uint_eq(g->mem.dag_regions, 1);
  ck_assert(!g->mem.tried[PG_PLACE_TIME]); /* the scan cannot see what runs at once */
  const PgBuffer *t0 = g->buffers.v[4], *t1 = g->buffers.v[5], *t2 = g->buffers.v[6], *t3 = g->buffers.v[7];
  /* t2 (c, e) may be written while t0 (a, b) and t1 (b, d) are in use: apart from both;
   * t3 (d, e, f) comes after every use of t0: it may take t0's bytes */
  ck_assert_uint_ne(t2->offset, t0->offset);
  ck_assert_uint_ne(t2->offset, t1->offset);
  ck_assert_uint_ne(t0->offset, t1->offset);
  ck_assert_uint_ne(t3->offset, t2->offset);
  ck_assert_uint_eq(g->mem.arena_bytes, 3 << 20); /* every use spanning the region: 4 MiB */
  parsed_free(p);
}
END_TEST

/* memplan.c on random DAGs as read (one graph region each, no chain): two buffers on
 * common arena bytes are used only by nodes that reach one another, every use of one
 * before every use of the other; and the plan shares bytes, often. */
START_TEST(memplan_random_dags_share_only_along_dependencies) {
  unsigned seed = 4242;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  static char text[1 << 16];
  int shared = 0, rounds = 0;
  for (int round = 0; round < 120; round++) {
    int n = 4 + (int)(RND() % 60), nbuf = 4 + (int)(RND() % 28), use[64][2];
    int len = snprintf(text, sizeof text, "pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n");
    for (int b = 0; b < nbuf; b++)
      len += snprintf(text + len, sizeof text - (size_t)len, "buffer t%d size %u role intermediate;\n", b,
                      256 * (1 + (unsigned)(RND() % 16)));
    len += snprintf(text + len, sizeof text - (size_t)len, "graph g {\n");
    static bool r[64][64];
    memset(r, 0, sizeof r);
    for (int i = 0; i < n; i++) {
      for (int a = 0; a < 2; a++) use[i][a] = (i * nbuf / n + (int)(RND() % 4)) % nbuf; /* short lives, mostly */
      len += snprintf(text + len, sizeof text - (size_t)len, " node n%d kernel k args [t%d, t%d];\n", i, use[i][0],
                      use[i][1]);
      for (int j = (i > 6 ? i - 6 : 0); j < i; j++) /* a few edges from recent nodes */
        if (RND() % 3 == 0) {
          len += snprintf(text + len, sizeof text - (size_t)len, " n%d -> n%d;\n", j, i);
          r[j][i] = true;
        }
    }
    snprintf(text + len, sizeof text - (size_t)len, "}\n");
    for (int k = 0; k < n; k++) /* the closure: r[a][b], a reaches b */
      for (int a = 0; a < n; a++)
        if (r[a][k])
          for (int b = 0; b < n; b++) r[a][b] |= r[k][b];
    Parsed *p = widened(text, NULL);
    const PgProgram *g = p->prog;
    if (g->regions.n != 1 || !g->mem.dag_regions) { /* (a chain after all, or a node too few) */
      parsed_free(p);
      continue;
    }
    rounds++;
    ck_assert(!g->mem.tried[PG_PLACE_TIME]);
    for (int x = 0; x < nbuf; x++)
      for (int y = x + 1; y < nbuf; y++) {
        const PgBuffer *X = g->buffers.v[x], *Y = g->buffers.v[y];
        if (!X->planned || !Y->planned || X->offset >= Y->offset + Y->size || Y->offset >= X->offset + X->size)
          continue;
        shared++;
        bool xy = true, yx = true; /* every use of x reaches every use of y, or the other way */
        for (int a = 0; a < n; a++)
          for (int b = 0; b < n; b++) {
            bool ua = use[a][0] == x || use[a][1] == x, ub = use[b][0] == y || use[b][1] == y;
            if (ua && ub) xy &= r[a][b], yx &= r[b][a];
          }
        ck_assert_msg(xy || yx, "round %d: t%d and t%d share bytes, their uses unordered\n%s", round, x, y, text);
      }
    parsed_free(p);
  }
#undef RND
  ck_assert_int_gt(rounds, 100);
  ck_assert_int_gt(shared, 200);
}
END_TEST

START_TEST(runs_only_where_it_may) {
  static const struct {
    const char *text, *why;
  } cases[] = {
      {"pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\nbuffer x size 64 role input;\n"
       "buffer y size 64 role output;\ngraph g {\n node a kernel k args [x, y];\n node b kernel k args [x, y];\n a -> b;\n}\n",
       "no kernel carries access sets (`access` on its pointer parameters)"},
      {KERNELS "graph g {\n node a kernel rw args [x, y];\n node b kernel rw args [x, z];\n node c kernel rw args [x, w];\n"
               " a -> c;\n b -> c;\n}\n",
       "it is not one chain"},
      {KERNELS "buffer u size 64;\ngraph g {\n node a kernel rw args [x, y];\n node b kernel rw args [u, z];\n a -> b;\n}\n",
       "a buffer's role is unknown (it may alias another)"},
      {KERNELS "graph g {\n node a kernel rw args [x, y];\n}\n", "the root graph has fewer than two nodes"},
      {KERNELS "graph g {\n node a kernel rw args [x, y];\n node b kernel rw args [y, z];\n a -> b;\n}\n",
       "every node depends on the one before it"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Parsed *p = widened(cases[i].text, NULL);
    ck_assert_ptr_nonnull(p->prog->widen.why_not);
    ck_assert_str_eq(p->prog->widen.why_not, cases[i].why);
    ck_assert(!p->prog->widen.kept);
    size_t chain = p->prog->graphs.v[0]->edges.n;
    ck_assert_uint_eq(chain, p->prog->widen.edges_before); /* the edges as they were */
    parsed_free(p);
  }
  /* --keep-order: the chain, and the report says why */
  Run r = run_pgcc("--report=json", "--keep-order", "tests/golden/qkv.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"widen\": {\"ran\": false, \"kept\": false, \"why_not\": \"--keep-order\"}"));
  run_free(&r);
}
END_TEST

/* The cost model decides: two branches of kernels that each fill the GPU gain nothing
 * (the work bound is the chain's time); small ones do; too small a gain is within the
 * model's error. */
START_TEST(the_cost_model_decides) {
  const char *fmt = KERNELS "graph g {\n node a kernel rw args [x, y] grid [%d] block [128] gpu_us %d;\n"
                            " node b kernel rw args [x, z] grid [%d] block [128] gpu_us 10;\n a -> b;\n}\n";
  char text[2048];
  snprintf(text, sizeof text, fmt, 132, 10, 132);
  Parsed *p = widened(text, NULL);
  ck_assert(p->prog->widen.ran && !p->prog->widen.kept);
  ck_assert_double_eq_tol(p->prog->widen.serial_us, 20, 1e-9);
  ck_assert_double_eq_tol(p->prog->widen.path_us, 10, 1e-9);
  ck_assert_double_eq_tol(p->prog->widen.work_us, 20, 1e-9);
  ck_assert_ptr_nonnull(strstr(p->prog->widen.why_not, "within the cost model's error"));
  ck_assert_uint_eq(p->prog->graphs.v[0]->edges.n, 1); /* the chain */
  parsed_free(p);
  snprintf(text, sizeof text, fmt, 8, 10, 8);
  p = widened(text, NULL);
  ck_assert(p->prog->widen.kept);
  ck_assert_ptr_null(p->prog->widen.why_not);
  ck_assert_double_eq_tol(p->prog->widen.predicted_us, 10, 1e-9);
  ck_assert_uint_eq(p->prog->graphs.v[0]->edges.n, 0);
  ck_assert_uint_eq(p->prog->widen.width, 2);
  parsed_free(p);
  snprintf(text, sizeof text, fmt, 8, 40, 8); /* 50 us serial, 40 us widened: 20%, within 25% */
  p = widened(text, NULL);
  ck_assert(p->prog->widen.ran && !p->prog->widen.kept);
  ck_assert_double_eq_tol(p->prog->widen.predicted_us, 40, 1e-9);
  parsed_free(p);
  /* a profile that does not know the SM count: every kernel fills the GPU */
  PgProfile prof = pg_profile_h200;
  prof.sms = 0;
  snprintf(text, sizeof text, fmt, 8, 10, 8);
  p = widened(text, &prof);
  ck_assert(p->prog->widen.ran && !p->prog->widen.kept);
  parsed_free(p);
}
END_TEST

/* priority.c: after widening, the kernels on the critical path (a then b, 80 us) get
 * PG_CRITICAL_PRIORITY; c beside them (60 us) does not, nor does a kernel captured with a
 * priority of its own; a chain kept gives none. */
START_TEST(priorities_for_the_critical_path) {
  const char *fmt = KERNELS "buffer t size 4096 role intermediate;\nbuffer v size 4096 role output;\n"
                            "graph g {\n node a kernel rw args [x, t] grid [8] block [128]%s gpu_us 40;\n"
                            " node b kernel rw args [t, y] grid [8] block [128] gpu_us 40;\n"
                            " node c kernel rw args [x, v] grid [8] block [128] gpu_us %d;\n a -> b;\n b -> c;\n}\n";
  char text[2048];
  snprintf(text, sizeof text, fmt, "", 60);
  Parsed *p = widened(text, NULL);
  ck_assert(p->prog->widen.kept);
  pg_prioritize(p->prog, &pg_profile_h200);
  const PgGraph *g = p->prog->graphs.v[0];
  ck_assert(p->prog->priority.ran);
  ck_assert_uint_eq(p->prog->priority.critical, 2);
  ck_assert_uint_eq(p->prog->priority.kernels, 3);
  ck_assert_double_eq_tol(p->prog->priority.path_us, 80, 1e-9);
  for (size_t i = 0; i < g->nodes.n; i++)
    ck_assert_int_eq(g->nodes.v[i]->u.kernel.priority, strcmp(g->nodes.v[i]->name, "c") ? PG_CRITICAL_PRIORITY : 0);
  parsed_free(p);
  snprintf(text, sizeof text, fmt, " priority 2", 60); /* a's own priority stays */
  p = widened(text, NULL);
  pg_prioritize(p->prog, &pg_profile_h200);
  g = p->prog->graphs.v[0];
  ck_assert_uint_eq(p->prog->priority.critical, 1);
  ck_assert_int_eq(g->nodes.v[0]->u.kernel.priority, 2);
  ck_assert_int_eq(g->nodes.v[1]->u.kernel.priority, PG_CRITICAL_PRIORITY);
  parsed_free(p);
  snprintf(text, sizeof text, fmt, "", 5); /* 85 us against 80: within the cost model's error, the chain kept */
  p = widened(text, NULL);
  ck_assert(!p->prog->widen.kept);
  pg_prioritize(p->prog, &pg_profile_h200);
  ck_assert(!p->prog->priority.ran);
  ck_assert_ptr_nonnull(strstr(p->prog->priority.why_not, "within the cost model's error"));
  g = p->prog->graphs.v[0];
  for (size_t i = 0; i < g->nodes.n; i++) ck_assert_int_eq(g->nodes.v[i]->u.kernel.priority, 0);
  parsed_free(p);
}
END_TEST

/* ---- random chains against an oracle ---- */

/* A node of a random chain: its text and what it touches, as this test sees it. */
typedef struct {
  bool barrier;
  char text[160];
  int nacc;
  struct {
    int buf;
    uint64_t lo, hi; /* bytes of the buffer */
    bool write;
  } acc[4];
} Model;

/* Do bytes [alo, ahi) of buffer a and [blo, bhi) of buffer b meet?  With `arena`, an
 * intermediate's bytes are the arena's, at its planned offset; else, as any other
 * buffer, its own memory. */
static bool overlap(const PgProgram *p, bool arena, int a, uint64_t alo, uint64_t ahi, int b, uint64_t blo,
                    uint64_t bhi) {
  const PgBuffer *A = p->buffers.v[a], *B = p->buffers.v[b];
  bool aa = arena && A->role == PG_ROLE_INTERMEDIATE, ba = arena && B->role == PG_ROLE_INTERMEDIATE;
  if (aa != ba || (!aa && a != b)) return false;
  if (aa) alo += A->offset, ahi += A->offset, blo += B->offset, bhi += B->offset;
  return alo < bhi && blo < ahi;
}

/* The dependency the sets imply between two nodes (either order). */
static bool implied(const PgProgram *p, bool arena, const Model *x, const Model *y) {
  if (x->barrier || y->barrier) return true;
  for (int i = 0; i < x->nacc; i++)
    for (int k = 0; k < y->nacc; k++)
      if ((x->acc[i].write || y->acc[k].write) &&
          overlap(p, arena, x->acc[i].buf, x->acc[i].lo, x->acc[i].hi, y->acc[k].buf, y->acc[k].lo, y->acc[k].hi))
        return true;
  return false;
}

/* Does node x touch buffer b? */
static bool touches(const Model *x, int b) {
  for (int i = 0; i < x->nacc; i++)
    if (x->acc[i].buf == b) return true;
  return false;
}

static void add_acc(Model *x, int buf, uint64_t lo, uint64_t hi, bool write) {
  x->acc[x->nacc].buf = buf, x->acc[x->nacc].lo = lo, x->acc[x->nacc].hi = hi, x->acc[x->nacc].write = write;
  x->nacc++;
}

#define MAXN 40
static const char *const ACC[3] = {"r", "w", "rw"};

/* Random buffers and nodes: kernels with every access pair (and none; and as a struct's
 * two pointers, an access each), copies and memsets
 * on random byte ranges, host synchronizations.  `arena`: some buffers are intermediates.
 * `local`: kernels only, on more buffers, each used by nodes near one another (short
 * lives, as in a forward pass: a plan on the chain reuses bytes, which orders nodes). */
static int random_nodes(unsigned *seed, bool arena, bool local, char *head, size_t cap, Model *m) {
#define RND() (*seed = *seed * 1103515245u + 12345u, (*seed >> 16) & 0x7fff)
  int len = snprintf(head, cap, "pgcc 1;\n");
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      len += snprintf(head + len, cap - (size_t)len,
                      "kernel k_%s_%s symbol \"k\" { param 0 8 ptr access %s; param 8 8 ptr access %s; }\n", ACC[a],
                      ACC[b], ACC[a], ACC[b]);
  for (int a = 0; a < 3; a++) /* the same, the two pointers inside one struct, an access each */
    for (int b = 0; b < 3; b++)
      len += snprintf(head + len, cap - (size_t)len,
                      "kernel s_%s_%s symbol \"k\" { param 0 16 bytes ptrs [0, 8] access [%s, %s]; }\n", ACC[a],
                      ACC[b], ACC[a], ACC[b]);
  len += snprintf(head + len, cap - (size_t)len, "kernel k_u symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n");
  int nbuf = local ? 8 + (int)(RND() % 9) : 2 + (int)(RND() % 6);
  uint64_t size[16];
  for (int b = 0; b < nbuf; b++) {
    size[b] = 256 * (1 + RND() % 8);
    const char *role = arena && RND() % (local ? 4 : 2) ? "intermediate" : RND() % 2 ? "input" : "output";
    len += snprintf(head + len, cap - (size_t)len, "buffer t%d size %llu role %s;\n", b, (unsigned long long)size[b], role);
  }
  int n = 2 + (int)(RND() % (MAXN - 2));
  for (int i = 0; i < n; i++) {
    Model *x = &m[i];
    memset(x, 0, sizeof *x);
    int kind = (int)(RND() % 12);
    if (local) kind = RND() % 4 ? 4 + (int)(RND() % 8) : 0 == RND() % 6 ? 0 : 4;
    int b0 = (int)(RND() % (unsigned)nbuf), b1 = (int)(RND() % (unsigned)nbuf);
    if (local) b0 = (i * nbuf / n + (int)(RND() % 3)) % nbuf, b1 = (i * nbuf / n + (int)(RND() % 3)) % nbuf;
    if (kind == 0) {
      x->barrier = true;
      snprintf(x->text, sizeof x->text, "hostop op sync reason \"r\"");
    } else if (kind <= 2) {
      uint64_t w = 1 + RND() % 256, so = RND() % (size[b0] - w + 1), d = RND() % (size[b1] - w + 1);
      add_acc(x, b0, so, so + w, false);
      add_acc(x, b1, d, d + w, true);
      snprintf(x->text, sizeof x->text, "memcpy dir dtod src t%d+%llu dst t%d+%llu width %llu gpu_us 5", b0,
               (unsigned long long)so, b1, (unsigned long long)d, (unsigned long long)w);
    } else if (kind == 3) {
      uint64_t w = 1 + RND() % 256, d = RND() % (size[b1] - w + 1);
      add_acc(x, b1, d, d + w, true);
      snprintf(x->text, sizeof x->text, "memset dst t%d+%llu value 0 width %llu gpu_us 5", b1, (unsigned long long)d,
               (unsigned long long)w);
    } else {
      int as[2] = {(int)(RND() % 3), (int)(RND() % 3)}, bs[2] = {b0, b1};
      if (kind == 11) as[0] = as[1] = 2; /* written k_u: no annotation */
      for (int q = 0; q < 2; q++) {
        if (as[q] != 1) add_acc(x, bs[q], 0, size[bs[q]], false);
        if (as[q] != 0) add_acc(x, bs[q], 0, size[bs[q]], true);
      }
      if (kind == 11) snprintf(x->text, sizeof x->text, "kernel k_u args [t%d, t%d] gpu_us 5", b0, b1);
      else if (kind == 10)
        snprintf(x->text, sizeof x->text, "kernel s_%s_%s args [[\"%032d\", t%d, t%d]] gpu_us 5", ACC[as[0]], ACC[as[1]],
                 0, b0, b1);
      else
        snprintf(x->text, sizeof x->text, "kernel k_%s_%s args [t%d, t%d] grid [2] block [64] gpu_us 5", ACC[as[0]], ACC[as[1]],
                 b0, b1);
    }
  }
#undef RND
  return n;
}

/* The program: the head, then the nodes in `order` (node i named n<i>), one chain. */
static void chain_text(char *text, size_t cap, const char *head, const Model *m, int n, const int *order) {
  int len = snprintf(text, cap, "%sgraph g {\n", head);
  for (int k = 0; k < n; k++) {
    len += snprintf(text + len, cap - (size_t)len, " node n%d %s;\n", order[k], m[order[k]].text);
    if (k) len += snprintf(text + len, cap - (size_t)len, " n%d -> n%d;\n", order[k - 1], order[k]);
  }
  snprintf(text + len, cap - (size_t)len, "}\n");
}

static int strcmp_ptr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The widened edges as a sorted list of "from>to" name pairs. */
static char *edge_names(const PgProgram *p) {
  size_t ne = p->widen.edges.n;
  char **v = calloc(ne + 1, sizeof *v);
  size_t len = 1;
  for (size_t e = 0; e < ne; e++) {
    v[e] = malloc(64);
    snprintf(v[e], 64, "%s>%s", p->widen.edges.v[e].from->name, p->widen.edges.v[e].to->name);
    len += strlen(v[e]) + 1;
  }
  qsort(v, ne, sizeof *v, strcmp_ptr);
  char *s = calloc(len, 1);
  for (size_t e = 0; e < ne; e++) strcat(strcat(s, v[e]), " "), free(v[e]);
  free(v);
  return s;
}

/* Random chains: the widened graph orders exactly what the access sets imply, closed
 * under transitivity (reachability equals the closure: every dependency kept, nothing
 * else ordered), over the serial plan's arena bytes for the graph that keeps it, over
 * buffers alone for the one with a plan of its own; every edge left is an implied one
 * (a barrier's included), and none is implied by two others; swapping two adjacent
 * nodes the sets leave free gives the same edges.  And the program as it runs (the
 * root graph's edges, widened or the chain, with the plan kept): every dependency the
 * sets imply over its arena is ordered, so no two nodes that may run at once touch
 * common bytes, arena bytes included, that either writes; and with a plan of its own,
 * no two such nodes touch two buffers that share arena bytes at all. */
START_TEST(random_chains_keep_exactly_the_implied_order) {
  unsigned seed = 20261127;
  static char head[1 << 14], text[1 << 16];
  Model m[MAXN];
  int order[MAXN], widened_rounds = 0, swapped = 0, shared_arena = 0, own_kept = 0, shared_kept = 0;
  for (int round = 0; round < 160; round++) {
    bool arena = round % 2;
    int n = random_nodes(&seed, arena, round % 4 != 3, head, sizeof head, m);
    for (int i = 0; i < n; i++) order[i] = i;
    chain_text(text, sizeof text, head, m, n, order);
    Parsed *p = widened(text, NULL);
    const PgProgram *g = p->prog;
    ck_assert_msg(g->widen.ran, "round %d: %s", round, g->widen.why_not);
    const PgGraph *root = g->graphs.v[0];
    ck_assert_uint_eq(root->nodes.n, (size_t)n);
    int id[MAXN]; /* position (after schedule.c) -> node number */
    for (int k = 0; k < n; k++) id[k] = atoi(root->nodes.v[k]->name + 1);
    bool over_arena = g->widen.kept && !g->widen.own_plan; /* the graph the edges show */
    static bool c[MAXN][MAXN];
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) c[a][b] = a < b && implied(g, over_arena, &m[id[a]], &m[id[b]]);
    for (int k = 0; k < n; k++)
      for (int a = 0; a < n; a++)
        if (c[a][k])
          for (int b = 0; b < n; b++) c[a][b] |= c[k][b];
    bool *r = reach(g);
    for (int a = 0; a < n; a++)
      for (int b = a + 1; b < n; b++) {
        ck_assert_msg(r[a * n + b] == c[a][b], "round %d: n%d -> n%d reachable %d, implied %d\n%s", round, id[a], id[b],
                      r[a * n + b], c[a][b], text);
        ck_assert(!r[b * n + a]);
      }
    for (size_t e = 0; e < g->widen.edges.n; e++) {
      int a = (int)g->widen.edges.v[e].from->index, b = (int)g->widen.edges.v[e].to->index;
      ck_assert_msg(implied(g, over_arena, &m[id[a]], &m[id[b]]), "round %d: edge n%d -> n%d implied by nothing", round, id[a], id[b]);
      for (int k = a + 1; k < b; k++)
        ck_assert_msg(!(r[a * n + k] && r[k * n + b]), "round %d: edge n%d -> n%d implied through n%d", round, id[a],
                      id[b], id[k]);
    }
    bool total = true;
    for (int a = 0; a + 1 < n; a++) total &= r[a * n + a + 1];
    ck_assert_uint_eq(g->widen.width == 1, total);
    ck_assert_uint_le(g->widen.width, (size_t)n);
    widened_rounds += !total;
    for (size_t x = 0; x < g->buffers.n; x++)
      for (size_t y = x + 1; y < g->buffers.n; y++) {
        const PgBuffer *X = g->buffers.v[x], *Y = g->buffers.v[y];
        shared_arena += X->planned && Y->planned && X->offset < Y->offset + Y->size && Y->offset < X->offset + X->size;
      }
    free(r);
    /* the program as it runs */
    own_kept += g->widen.kept && g->widen.own_plan, shared_kept += over_arena;
    ck_assert_uint_eq(root->edges.n, g->widen.kept ? g->widen.edges.n : (size_t)n - 1);
    r = reach_over(g, root->edges.v, root->edges.n);
    for (int a = 0; a < n; a++)
      for (int b = a + 1; b < n; b++)
        ck_assert_msg(r[a * n + b] || !implied(g, true, &m[id[a]], &m[id[b]]),
                      "round %d: n%d and n%d may run at once on common bytes, one writing", round, id[a], id[b]);
    for (int x = 0; x < (int)g->buffers.n && g->widen.own_plan; x++) /* the own plan: whole buffers apart */
      for (int y = 0; y < (int)g->buffers.n; y++) {
        const PgBuffer *X = g->buffers.v[x], *Y = g->buffers.v[y];
        if (x == y || !X->planned || !Y->planned || X->offset >= Y->offset + Y->size || Y->offset >= X->offset + X->size)
          continue;
        for (int a = 0; a < n; a++)
          for (int b = 0; b < n; b++)
            if (a != b && touches(&m[id[a]], x) && touches(&m[id[b]], y))
              ck_assert_msg(r[a * n + b] || r[b * n + a], "round %d: n%d (%s) and n%d (%s) may run at once on shared "
                            "arena bytes\n%s", round, id[a], X->name, id[b], Y->name, text);
      }
    free(r);
    /* order independence: swap free neighbours (no arena: the plan would move with the order) */
    if (!arena) {
      char *want = edge_names(g);
      for (int k = 0; k + 1 < n; k++) order[k] = id[k];
      for (int k = 0; k + 1 < n; k++)
        if (!implied(g, false, &m[order[k]], &m[order[k + 1]])) {
          int t = order[k];
          order[k] = order[k + 1], order[k + 1] = t;
          k++;
          swapped++;
        }
      chain_text(text, sizeof text, head, m, n, order);
      Parsed *q = widened(text, NULL);
      char *got = edge_names(q->prog);
      ck_assert_str_eq(got, want);
      free(got);
      parsed_free(q);
      free(want);
    }
    parsed_free(p);
  }
  ck_assert_int_gt(widened_rounds, 80); /* (the generator makes wide graphs) */
  ck_assert_int_gt(swapped, 100);
  ck_assert_int_gt(shared_arena, 10); /* and plans that reuse bytes */
  ck_assert_int_gt(own_kept, 10); /* both widened graphs kept, often */
  ck_assert_int_gt(shared_kept, 20);
}
END_TEST

/* The golden program: q, k and v side by side, through --emit=graph, back again, and the
 * report. */
START_TEST(golden_qkv) {
  Run r = run_pgcc("--emit=graph", "tests/golden/qkv.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  char *want = slurp("tests/golden/qkv_widened.graph", NULL);
  ck_assert_ptr_nonnull(want);
  ck_assert_str_eq(r.out, want);
  run_free(&r);
  r = run_pgcc("--emit=graph", "tests/golden/qkv_widened.graph", NULL); /* written, read, written: the same */
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, want);
  run_free(&r);
  free(want);
  r = run_pgcc("--report=json", "tests/golden/qkv.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"widen\": {\"ran\": true, \"kept\": true, \"why_not\": null, \"own_plan\": false, "
                                      "\"nodes\": 5, \"edges_before\": 4, \"edges_after\": 4, \"width\": 3, "
                                      "\"width_exact\": true, \"serial_us\": 60.000, \"path_us\": 40.000"));
  /* the own plan's graph is no faster (q, k and v live together on the chain): not planned */
  ck_assert_ptr_nonnull(strstr(r.out, "\"own_plan_graph\": {\"width\": 3, \"width_exact\": true, \"edges\": 4, "
                                      "\"path_us\": 40.000, \"predicted_us\": 40.000, \"arena_bytes\": 0}"));
  run_free(&r);
  r = run_pgcc("--report", "tests/golden/qkv.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "dependencies: 5 nodes rebuilt from access sets (GPU work 9.7 us)\n"
                                      "  in order:                width 1, critical path 60.0 us, edges 4, arena 256.00 KiB\n"
                                      "  over the serial plan:    width 3, critical path 40.0 us, edges 4, arena 256.00 KiB "
                                      "(predicted 40.0 us)\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "  kept: the graph over the serial plan (predicted 40.0 us of 60.0 us in order; "
                                      "arena 256.00 KiB)\n"));
  run_free(&r);
  /* the widened program read back: its graph region is no chain, planned by what
   * reaches what, in the same arena (q, k, v live together in any order) */
  r = run_pgcc("--report", "tests/golden/qkv_widened.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "memory: arena 256.00 KiB for 4 intermediates"));
  run_free(&r);
  /* a program without access sets: no word about it, its chain as it was */
  r = run_pgcc("--report", "tests/golden/relocs_v2.graph", NULL);
  ck_assert_ptr_null(strstr(r.out, "dependencies:"));
  run_free(&r);
}
END_TEST

/* A program's text as pgcc writes it, read back and written again: the same text. */
static void reads_back_the_same(const char *out) {
  Parsed *q = parse_text("t.graph", out);
  ck_assert_msg(q->prog && q->diag.errors == 0, "%s", q->diags);
  char *again = graph_text(q->prog);
  ck_assert_str_eq(again, out);
  free(again);
  parsed_free(q);
}

/* `access` on a struct's pointers: read, written back the same, and every pointer in it
 * counts so. */
START_TEST(access_on_a_struct_round_trips) {
  const char *text = "pgcc 1;\nkernel k symbol \"k\" {\n  param 0 16 bytes ptrs [0, 8] access r;\n  param 16 8 ptr access w;\n}\n"
                     "buffer x size 64 role input;\nbuffer u size 64 role input;\nbuffer y size 64 role output;\n"
                     "buffer z size 64 role output;\n"
                     "graph g {\n node a kernel k args [[\"00000000000000000000000000000000\", x, u], y] gpu_us 10;\n"
                     " node b kernel k args [[\"00000000000000000000000000000000\", u, x], z] gpu_us 10;\n"
                     " node c kernel k args [[\"00000000000000000000000000000000\", y, x], u] gpu_us 10;\n a -> b;\n b -> c;\n}\n";
  Parsed *p = widened(text, NULL);
  char *out = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(out, "  param 0 16 bytes ptrs [0, 8] access r;\n  param 16 8 ptr access w;\n"));
  ck_assert(!has_edge(p->prog, "a", "b"));                                     /* both only read x and u */
  ck_assert(has_edge(p->prog, "a", "c") && has_edge(p->prog, "b", "c"));      /* c reads y and writes u */
  reads_back_the_same(out);
  free(out);
  parsed_free(p);
}
END_TEST

/* `access [...]`, one per pointer of a struct (a library GEMM's parameters: its operands'
 * addresses in one by-value struct): q, k and v read x and their weights and write their
 * own outputs, so they wait for nothing; a pointer the list says is written orders the
 * nodes that touch its buffer.  Written back the same; a list of the wrong length, an
 * unknown word, or a list on a `ptr` parameter is refused where it stands. */
START_TEST(access_per_pointer) {
  const char *text =
      "pgcc 2;\nkernel gemm symbol \"nvjet\" {\n  param 0 32 bytes ptrs [0, 8, hi32 20, 24] access [r, r, rw, rw];\n}\n"
      "buffer x size 64 role input;\nbuffer wq size 64 role weight;\nbuffer wk size 64 role weight;\n"
      "buffer q size 64 role output;\nbuffer k size 64 role output;\nbuffer y size 64 role output;\n"
      "graph g {\n node a kernel gemm args [[\"%064d\", wq, x, q, q]] gpu_us 10;\n"
      " node b kernel gemm args [[\"%064d\", wk, x, k, k]] gpu_us 10;\n"
      " node c kernel gemm args [[\"%064d\", q, k, y, y]] gpu_us 10;\n"
      " node d kernel gemm args [[\"%064d\", y, wk, x, x]] gpu_us 10;\n a -> b;\n b -> c;\n c -> d;\n}\n";
  char prog[2048];
  snprintf(prog, sizeof prog, text, 0, 0, 0, 0);
  Parsed *p = widened(prog, NULL);
  char *out = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(out, "  param 0 32 bytes ptrs [0, 8, hi32 20, 24] access [r, r, rw, rw];\n"));
  ck_assert(!has_edge(p->prog, "a", "b"));                                /* both read x, write their own */
  ck_assert(has_edge(p->prog, "a", "c") && has_edge(p->prog, "b", "c")); /* c reads q and k */
  ck_assert(has_edge(p->prog, "c", "d"));                                 /* d reads y, writes x */
  ck_assert(!has_edge(p->prog, "a", "d") && !has_edge(p->prog, "b", "d")); /* (implied through c) */
  reads_back_the_same(out);
  free(out);
  parsed_free(p);
  /* refused where it stands */
  static const struct {
    const char *param, *error;
  } bad[] = {
      {"param 0 32 bytes ptrs [0, 8, hi32 20, 24] access [r, r, rw]", "3:52: error: access: 3 accesses for 4 pointers"},
      {"param 0 32 bytes ptrs [0, 8, hi32 20, 24] access [r, r, rx, w]", "3:59: error: unknown access 'rx'"},
      {"param 0 32 bytes ptrs [0, 8, hi32 20, 24] access [r, r, 1, w]", "3:59: error: expected an access (r, w, rw or o), "
                                                                      "found a number"},
      {"param 0 8 ptr access [r]", "3:24: error: a list of accesses is a 'bytes' parameter's"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char t[512];
    snprintf(t, sizeof t, "pgcc 2;\nkernel gemm symbol \"nvjet\" {\n  %s;\n}\n", bad[i].param);
    Parsed *e = parse_text("t.graph", t);
    ck_assert_msg(e->diag.errors > 0 && strstr(e->diags, bad[i].error), "%s: got %s", bad[i].param, e->diags);
    parsed_free(e);
  }
}
END_TEST

/* A mixture of experts as Inductor captures it: every expert's hidden activation in one
 * reused buffer h.  Each expert's first GEMM overwrites h (`o`), its SiLU reads and
 * writes it, its second GEMM reads it into the expert's own output. */
static const char *const MOE =
    "pgcc 2;\n"
    "kernel up symbol \"nvjet_up\" {\n  param 0 24 bytes ptrs [0, 8, 16] access [r, r, %s];\n}\n"
    "kernel silu symbol \"triton_silu\" {\n  param 0 8 ptr access rw;\n}\n"
    "kernel down symbol \"nvjet_down\" {\n  param 0 24 bytes ptrs [0, 8, 16] access [r, r, o];\n}\n"
    "buffer x size 2048 role input;\nbuffer h size 4096 role intermediate;\n"
    "buffer w0 size 8192 role weight;\nbuffer w1 size 8192 role weight;\nbuffer w2 size 8192 role weight;\n"
    "buffer y0 size 2048 role output;\nbuffer y1 size 2048 role output;\nbuffer y2 size 2048 role output;\n"
    "graph g {\n"
    " node u0 kernel up args [[\"%048d\", w0, x, h]] gpu_us 10;\n node s0 kernel silu args [h] gpu_us 5;\n"
    " node d0 kernel down args [[\"%048d\", w0, h, y0]] gpu_us 10;\n"
    " node u1 kernel up args [[\"%048d\", w1, x, h]] gpu_us 10;\n node s1 kernel silu args [h] gpu_us 5;\n"
    " node d1 kernel down args [[\"%048d\", w1, h, y1]] gpu_us 10;\n"
    " node u2 kernel up args [[\"%048d\", w2, x, h]] gpu_us 10;\n node s2 kernel silu args [h] gpu_us 5;\n"
    " node d2 kernel down args [[\"%048d\", w2, h, y2]] gpu_us 10;\n %s\n"
    " u0 -> s0;\n s0 -> d0;\n d0 -> u1;\n u1 -> s1;\n s1 -> d1;\n d1 -> u2;\n u2 -> s2;\n s2 -> d2;\n%s}\n";

static Parsed *moe(const char *up_access, const char *extra_node, const char *extra_edge) {
  static char text[4096];
  snprintf(text, sizeof text, MOE, up_access, 0, 0, 0, 0, 0, 0, extra_node, extra_edge);
  return widened(text, NULL);
}

/* The buffer node `name`'s argument `arg` (pointer q of a struct, or -1) points into. */
static const char *buffer_of(const PgProgram *p, const char *name, size_t arg, long q) {
  const PgGraph *g = p->graphs.v[0];
  for (size_t i = 0; i < g->nodes.n; i++)
    if (strcmp(g->nodes.v[i]->name, name) == 0) {
      const PgArg *a = &g->nodes.v[i]->u.kernel.args.v[arg];
      return q < 0 ? a->ptr.buf->name : a->ptrs.v[q].buf->name;
    }
  return NULL;
}

START_TEST(rename_splits_a_reused_buffer_into_its_values) {
  Parsed *p = moe("o", "", "");
  ck_assert_int_eq(p->prog->rename.buffers, 1);
  ck_assert_int_eq(p->prog->rename.values, 2);
  /* each expert's nodes on a value of their own: the one its first GEMM wrote */
  static const char *const want[3] = {"h", "h_v1", "h_v2"};
  for (int e = 0; e < 3; e++) {
    char u[16], s_[16], d[16];
    snprintf(u, sizeof u, "u%d", e), snprintf(s_, sizeof s_, "s%d", e), snprintf(d, sizeof d, "d%d", e);
    ck_assert_str_eq(buffer_of(p->prog, u, 0, 2), want[e]);
    ck_assert_str_eq(buffer_of(p->prog, s_, 0, -1), want[e]);
    ck_assert_str_eq(buffer_of(p->prog, d, 0, 1), want[e]);
  }
  /* and the experts side by side: nothing orders one expert's nodes after another's */
  ck_assert(p->prog->widen.ran && p->prog->widen.own.width == 3);
  ck_assert(!has_edge(p->prog, "d0", "u1") && !has_edge(p->prog, "d1", "u2"));
  char *out = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(out, "buffer h_v1 size 4096 "));
  reads_back_the_same(out); /* written out, read back */
  free(out);
  /* the report says it (text and JSON), for a program of the code-generation tests */
  Run r = run_pgcc("--report", "tests/gpu/codegen/reuse.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(
      strstr(r.out, "values: 1 intermediate held several values one after another, split into 1 more buffer (rename.c)\n"));
  run_free(&r);
  r = run_pgcc("--report=json", "--keep-order", "tests/gpu/codegen/reuse.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"rename\": {\"buffers\": 0, \"values\": 0, \"why_not\": \"--keep-order\"}"));
  run_free(&r);
  parsed_free(p);
}
END_TEST

START_TEST(rename_only_where_the_value_before_is_dead) {
  /* the first GEMM only writes h (`w`: some bytes, maybe): the value before may live on */
  Parsed *p = moe("w", "", "");
  ck_assert_int_eq(p->prog->rename.buffers, 0);
  ck_assert(has_edge(p->prog, "d0", "u1"));
  parsed_free(p);
  /* a copy out of h: h stays whole */
  p = moe("o", "node c memcpy dir dtod src h dst y2 width 16 gpu_us 1;", " d2 -> c;\n");
  ck_assert_int_eq(p->prog->rename.buffers, 0);
  parsed_free(p);
  /* a node that overwrites h through one pointer and reads it through another keeps h's value */
  static char text[4096];
  snprintf(text, sizeof text, MOE, "o", 0, 0, 0, 0, 0, 0, "", "");
  char *u1 = strstr(text, "w1, x, h]]");
  memcpy(u1, "w1, h, h]]", 10);
  p = widened(text, NULL);
  ck_assert_str_eq(buffer_of(p->prog, "u1", 0, 2), "h");
  ck_assert_str_eq(buffer_of(p->prog, "u2", 0, 2), "h_v1");
  ck_assert_int_eq(p->prog->rename.values, 1);
  parsed_free(p);
  /* not one chain: the order is not known, nothing split */
  snprintf(text, sizeof text, MOE, "o", 0, 0, 0, 0, 0, 0, "", "");
  char *edge = strstr(text, " d0 -> u1;\n");
  memcpy(edge, "           ", 11);
  p = widened(text, NULL);
  ck_assert_int_eq(p->prog->rename.buffers, 0);
  ck_assert_str_eq(p->prog->rename.why_not, "it is not one chain");
  parsed_free(p);
}
END_TEST

/* Random programs with overwrites: what every node reads, run in any order the final
 * root graph allows, with the intermediates where the memory plan put them (renamed
 * values and buffers sharing arena bytes), is what it reads on the captured chain with
 * every buffer its own.  Memory is simulated in 256-byte chunks, each holding the
 * number of the node that wrote it last; `w` writes the first chunk of its buffer only
 * (a write that need not cover the buffer), `rw` and `o` every chunk.  A chunk of an
 * intermediate nothing wrote yet may read anything. */
#define CHUNK 256
enum { SIM_NODES = 24, SIM_BUFS = 8 };
static const char *const ACC4[4] = {"r", "w", "rw", "o"};

typedef struct {
  int buf[2], acc[2]; /* per pointer: buffer index, index into ACC4 */
} SimNode;

/* Chunk values a node reads (pointers with r or rw, in order), into out; returns the count. */
static size_t sim_reads(const int *const mem[2], const size_t size[2], const int acc[2], int *out) {
  size_t n = 0;
  for (int q = 0; q < 2; q++)
    if (acc[q] == 0 || acc[q] == 2)
      for (size_t c = 0; c < size[q] / CHUNK; c++) out[n++] = mem[q][c];
  return n;
}

static void sim_writes(int *const mem[2], const size_t size[2], const int acc[2], int who) {
  for (int q = 0; q < 2; q++) {
    if (acc[q] == 0) continue;
    size_t chunks = acc[q] == 1 ? 1 : size[q] / CHUNK;
    for (size_t c = 0; c < chunks; c++) mem[q][c] = who;
  }
}

START_TEST(random_programs_with_overwrites_read_what_the_chain_reads) {
  unsigned seed = 20261127u;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  static char text[1 << 15];
  size_t renamed = 0, widened_kept = 0;
  for (int trial = 0; trial < 300; trial++) {
    int nb = 3 + (int)(RND() % (SIM_BUFS - 2)), n = 4 + (int)(RND() % (SIM_NODES - 3));
    size_t size[SIM_BUFS];
    bool inter[SIM_BUFS];
    int len = snprintf(text, sizeof text, "pgcc 2;\n");
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "kernel k_%s_%s symbol \"k\" { param 0 16 bytes ptrs [0, 8] access [%s, %s]; }\n", ACC4[a],
                        ACC4[b], ACC4[a], ACC4[b]);
    for (int b = 0; b < nb; b++) {
      size[b] = CHUNK * (1 + RND() % 4);
      inter[b] = RND() % 4 != 0;
      len += snprintf(text + len, sizeof text - (size_t)len, "buffer t%d size %zu role %s;\n", b, size[b],
                      inter[b] ? "intermediate" : RND() % 2 ? "input" : "output");
    }
    SimNode m[SIM_NODES];
    len += snprintf(text + len, sizeof text - (size_t)len, "graph g {\n");
    for (int i = 0; i < n; i++) {
      for (int q = 0; q < 2; q++) m[i].buf[q] = (int)(RND() % (unsigned)nb), m[i].acc[q] = (int)(RND() % 4);
      if (m[i].buf[0] == m[i].buf[1] && m[i].acc[0] != m[i].acc[1]) m[i].acc[1] = m[i].acc[0];
      unsigned grid = 1 + RND() % 132, us = 1 + RND() % 20;
      len += snprintf(text + len, sizeof text - (size_t)len,
                      " node n%d kernel k_%s_%s grid [%u] block [64] args [[\"%032d\", t%d, t%d]] gpu_us %u;\n", i,
                      ACC4[m[i].acc[0]], ACC4[m[i].acc[1]], grid, 0, m[i].buf[0], m[i].buf[1], us);
      if (i) len += snprintf(text + len, sizeof text - (size_t)len, " n%d -> n%d;\n", i - 1, i);
    }
    snprintf(text + len, sizeof text - (size_t)len, "}\n");

    /* the reference: the chain, each buffer its own memory, nothing written yet (-1) */
    static int ref_mem[SIM_BUFS][4], want[SIM_NODES][8];
    size_t nwant[SIM_NODES];
    for (int b = 0; b < nb; b++)
      for (int c = 0; c < 4; c++) ref_mem[b][c] = inter[b] ? -1 : -2 - b;
    for (int i = 0; i < n; i++) {
      int *mem[2] = {ref_mem[m[i].buf[0]], ref_mem[m[i].buf[1]]};
      size_t sz[2] = {size[m[i].buf[0]], size[m[i].buf[1]]};
      nwant[i] = sim_reads((const int *const *)mem, sz, m[i].acc, want[i]);
      sim_writes(mem, sz, m[i].acc, i);
    }

    Parsed *p = widened(text, NULL);
    const PgProgram *pr = p->prog;
    const PgGraph *g = pr->graphs.v[0];
    renamed += pr->rename.values;
    widened_kept += pr->widen.kept;
    /* memory as planned: the arena's chunks, then each other buffer's own */
    uint64_t arena = 0;
    for (size_t b = 0; b < pr->buffers.n; b++) {
      const PgBuffer *x = pr->buffers.v[b];
      if (pg_in_arena(x) && x->planned) { /* (a buffer no node uses is not planned) */
        ck_assert_int_eq(x->offset % CHUNK, 0);
        if (x->offset + x->size > arena) arena = x->offset + x->size;
      }
    }
    size_t total = arena / CHUNK + (size_t)nb * 4 + 1;
    int *mem = malloc(total * sizeof *mem);
    int *indeg = calloc((size_t)n, sizeof *indeg), *ready = malloc((size_t)n * sizeof *ready);
    for (int order = 0; order < 4; order++) {
      for (size_t c = 0; c < total; c++) mem[c] = -1;
      for (int b = 0; b < nb; b++)
        for (int c = 0; c < 4; c++) mem[arena / CHUNK + (size_t)b * 4 + (size_t)c] = inter[b] ? -1 : -2 - b;
      for (int i = 0; i < n; i++) indeg[i] = (int)g->nodes.v[i]->npred;
      int nready = 0, done = 0;
      for (int i = 0; i < n; i++)
        if (!indeg[i]) ready[nready++] = i;
      while (nready) { /* any node whose predecessors have all run: a random one */
        int pick = (int)(RND() % (unsigned)nready), i = ready[pick];
        ready[pick] = ready[--nready];
        const PgNode *node = g->nodes.v[i];
        int k = atoi(node->name + 1); /* (n<k>: the model's node k) */
        int *at[2];
        size_t sz[2];
        for (int q = 0; q < 2; q++) {
          const PgBuffer *x = node->u.kernel.args.v[0].ptrs.v[q].buf;
          sz[q] = x->size;
          ck_assert(!pg_in_arena(x) || x->planned);
          at[q] = pg_in_arena(x) ? mem + x->offset / CHUNK : mem + arena / CHUNK + (size_t)atoi(x->name + 1) * 4;
        }
        int got[8];
        size_t ngot = sim_reads((const int *const *)at, sz, m[k].acc, got);
        ck_assert_int_eq(ngot, nwant[k]);
        for (size_t v = 0; v < ngot; v++)
          ck_assert_msg(want[k][v] == -1 || got[v] == want[k][v],
                        "trial %d, order %d: node n%d read %d where the chain reads %d\n%s", trial, order, k, got[v],
                        want[k][v], text);
        sim_writes(at, sz, m[k].acc, k);
        done++;
        for (uint32_t s = 0; s < node->nsucc; s++)
          if (!--indeg[pg_succs(node)[s]->index]) ready[nready++] = (int)pg_succs(node)[s]->index;
      }
      ck_assert_int_eq(done, n);
    }
    free(mem), free(indeg), free(ready);
    parsed_free(p);
  }
#undef RND
  ck_assert_int_gt(renamed, 100);    /* values were split, often */
  ck_assert_int_gt(widened_kept, 50); /* and widened graphs kept */
}
END_TEST

Suite *widen_suite(void) {
  Suite *s = suite_create("widen");
  TCase *t = tcase_create("widen");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, each_hazard_kind);
  tcase_add_test(t, barriers);
  tcase_add_test(t, arena_reuse_is_an_edge);
  tcase_add_test(t, memplan_by_reachability);
  tcase_add_test(t, memplan_random_dags_share_only_along_dependencies);
  tcase_add_test(t, runs_only_where_it_may);
  tcase_add_test(t, the_cost_model_decides);
  tcase_add_test(t, random_chains_keep_exactly_the_implied_order);
  tcase_add_test(t, golden_qkv);
  tcase_add_test(t, access_on_a_struct_round_trips);
  tcase_add_test(t, access_per_pointer);
  tcase_add_test(t, rename_splits_a_reused_buffer_into_its_values);
  tcase_add_test(t, rename_only_where_the_value_before_is_dead);
  tcase_add_test(t, random_programs_with_overwrites_read_what_the_chain_reads);
  tcase_add_test(t, priorities_for_the_critical_path);
  suite_add_tcase(s, t);
  return s;
}

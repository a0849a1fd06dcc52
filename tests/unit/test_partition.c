/* test_partition.c -- classification, regions, the cost model, the memory plan, the report */
#include "../helpers.h"

#include <jansson.h>
#include <string.h>

/* Runs the passes on a .graph text with a profile, the root graph's order kept (sched
 * false) or scheduled as pgcc does; returns the parsed program. */
static Parsed *plan_as(const char *text, const char *profile_path, double calls, bool sched) {
  Parsed *p = parse_text("t.graph", text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  const PgProfile *prof = &pg_profile_h200;
  if (profile_path) {
    prof = pg_profile_load(p->arena, &p->diag, profile_path);
    ck_assert_ptr_nonnull(prof);
  }
  pg_stage_collectives(p->prog);
  pg_classify(p->prog);
  if (sched) {
    pg_schedule(p->prog);
    ck_assert_int_eq(pg_verify(p->prog, &p->diag), 0);
  }
  pg_partition(p->prog);
  pg_verify_regions(p->prog, &p->diag);
  pg_cost(p->prog, prof, calls, true);
  pg_memplan(p->prog);
  return p;
}

static Parsed *plan(const char *text, const char *profile_path, double calls) {
  return plan_as(text, profile_path, calls, false);
}

static const PgRegion *region_of(const PgProgram *prog, const char *node) {
  const PgNode *n = find_node(prog, node);
  ck_assert_ptr_nonnull(n);
  ck_assert_int_ge(n->region, 0);
  return prog->regions.v[n->region];
}

#define K "pgcc 1;\nkernel k symbol \"k\";\n"
#define ROUND "tests/profiles/round.profile"

START_TEST(classification_reasons) {
  Parsed *p = plan("pgcc 1;\nkernel k symbol \"k\";\nbuffer h size 64;\nbuffer d size 64;\n"
                   "graph g {\n"
                   "  node a kernel k;\n"
                   "  node cp memcpy dir dtoh src d dst h width 64 pageable;\n"
                   "  node pinned memcpy dir dtoh src d dst h width 64;\n"
                   "  node s hostop op sync reason \"stream synchronization\";\n"
                   "  node o opaque what \"BATCH_MEM_OP\";\n"
                   "  node dyn kernel k eager \"grid depends on the input's shape\";\n"
                   "  node ch child body inner;\n"
                   "  node ok child body fine;\n"
                   "}\n"
                   "graph inner { node cpu hostop op cpu reason \"CPU work\"; }\n"
                   "graph fine { node z kernel k; }\n",
                   NULL, 1000);
  struct {
    const char *node, *why;
  } want[] = {
      {"a", NULL},
      {"cp", "device-to-host copy into pageable memory"},
      {"pinned", NULL},
      {"s", "host operation 'sync': stream synchronization"},
      {"o", "unsupported node kind 'BATCH_MEM_OP'"},
      {"dyn", "grid depends on the input's shape"},
      {"ch", "its body graph 'inner' holds node 'cpu': host operation 'cpu': CPU work"},
      {"ok", NULL},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const PgNode *n = find_node(p->prog, want[i].node);
    ck_assert_msg(n->graphable == (want[i].why == NULL), "%s", want[i].node);
    if (want[i].why) ck_assert_str_eq(pg_node_why(n), want[i].why);
  }
  parsed_free(p);
}
END_TEST

START_TEST(reordering_merges_regions) {
  Parsed *p = plan(K "graph g {\n node c kernel k;\n node x hostop op sync reason \"r\";\n node b kernel k;\n"
                     " x -> b;\n}\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 2);
  ck_assert_ptr_eq(region_of(p->prog, "b"), region_of(p->prog, "c"));
  ck_assert(region_of(p->prog, "b")->graphable);
  ck_assert_int_lt(region_of(p->prog, "x")->id, region_of(p->prog, "b")->id);
  parsed_free(p);
}
END_TEST

START_TEST(dependencies_prevent_merging) {
  Parsed *p = plan(K "graph g {\n node a kernel k;\n node x hostop op sync reason \"r\";\n node b kernel k;\n"
                     " a -> x;\n x -> b;\n}\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 3);
  ck_assert_int_eq(region_of(p->prog, "a")->id, 0);
  ck_assert_int_eq(region_of(p->prog, "x")->id, 1);
  ck_assert_int_eq(region_of(p->prog, "b")->id, 2);
  parsed_free(p);
}
END_TEST

START_TEST(eager_nodes_keep_their_order) {
  /* y has no edges, but eager work keeps its input order: x before y */
  Parsed *p = plan(K "graph g {\n node x hostop op sync reason \"r\";\n node a kernel k;\n"
                     " node y hostop op cpu reason \"r\";\n x -> a;\n}\n",
                   NULL, 1000);
  const PgRegion *rx = region_of(p->prog, "x"), *ry = region_of(p->prog, "y");
  size_t px = 0, py = 0;
  for (size_t i = 0; i <= (size_t)ry->id; i++)
    for (size_t k = 0; k < p->prog->regions.v[i]->nodes.n; k++) {
      const char *nm = p->prog->regions.v[i]->nodes.v[k]->name;
      if (strcmp(nm, "x") == 0) px = i * 1000 + k;
      if (strcmp(nm, "y") == 0) py = i * 1000 + k;
    }
  ck_assert_uint_lt(px, py);
  ck_assert_int_le(rx->id, ry->id);
  /* and the one kernel forms one graph region */
  size_t graphs = 0;
  for (size_t i = 0; i < p->prog->regions.n; i++) graphs += p->prog->regions.v[i]->graphable;
  ck_assert_uint_eq(graphs, 1);
  parsed_free(p);
}
END_TEST

START_TEST(wide_dag_is_one_region) {
  /* 200 independent kernels and a diamond: all graphable, one region, one launch */
  char text[32768];
  int n = snprintf(text, sizeof text, K "graph g {\n");
  for (int i = 0; i < 200; i++) n += snprintf(text + n, sizeof text - (size_t)n, " node k%d kernel k;\n", i);
  n += snprintf(text + n, sizeof text - (size_t)n, " k0 -> k1;\n k0 -> k2;\n k1 -> k3;\n k2 -> k3;\n}\n");
  Parsed *p = plan(text, NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 1);
  ck_assert(p->prog->regions.v[0]->graph);
  ck_assert_uint_eq(p->prog->regions.v[0]->kernels, 200);
  parsed_free(p);
}
END_TEST

START_TEST(break_even_on_calls) {
  /* one kernel: eager, the host submits (4) then the GPU runs it (1): 5; as a graph
   * 2 + 1 + (5 + 10) / calls: equal at 7.5 calls, so eager there (never a graph
   * that is not faster) and a graph from 8 on */
  const char *one = K "graph g { node a kernel k; }\n";
  Parsed *p = plan(one, ROUND, 7.5);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_eager_us, 5.0, 1e-12);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_graph_us, 5.0, 1e-12);
  ck_assert(!p->prog->regions.v[0]->graph);
  ck_assert_ptr_nonnull(strstr(p->prog->regions.v[0]->reasons.v[0], "a graph would not pay"));
  parsed_free(p);
  p = plan(one, ROUND, 8);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_graph_us, 4.875, 1e-12);
  ck_assert(p->prog->regions.v[0]->graph);
  parsed_free(p);
}
END_TEST

START_TEST(eager_simulation_overlaps_launches) {
  /* a 20 us kernel then three tiny ones: while the long one runs the host submits
   * the rest (at 8, 12, 16), so they follow it back to back:
   * 4 + 20 + 3 * 1 = 27, not 4 + 20 + 3 * 4 */
  Parsed *p = plan(K "graph g {\n node a kernel k gpu_us 20;\n node b kernel k;\n node c kernel k;\n"
                     " node d kernel k;\n a -> b;\n b -> c;\n c -> d;\n}\n",
                   ROUND, 1000);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_eager_us, 27.0, 1e-12);
  parsed_free(p);
  /* tiny kernels only: launch-bound, 4 per kernel plus the last one's run */
  p = plan(K "graph g {\n node a kernel k;\n node b kernel k;\n node c kernel k;\n}\n", ROUND, 1000);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_eager_us, 13.0, 1e-12);
  parsed_free(p);
}
END_TEST

START_TEST(instantiation_not_amortized_stays_eager) {
  /* a 50 us kernel: eager 4 + 50 = 54; a graph saves the launch (2 + 50) but, run
   * once, pays instantiation and upload (15): 67 */
  Parsed *p = plan(K "graph g { node a kernel k gpu_us 50; }\n", ROUND, 1);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_eager_us, 54.0, 1e-12);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_graph_us, 67.0, 1e-9);
  ck_assert(!p->prog->regions.v[0]->graph);
  parsed_free(p);
  p = plan(K "graph g { node a kernel k gpu_us 50; }\n", ROUND, 1000);
  ck_assert(p->prog->regions.v[0]->graph);
  parsed_free(p);
}
END_TEST

/* n kernels, each reading an input buffer: n nodes patched per call */
static char *patched_program(int n) {
  static char text[8192];
  int len = snprintf(text, sizeof text,
                     "pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; }\nbuffer x size 64 role input;\n"
                     "buffer w size 64 role weight;\ngraph g {\n");
  for (int i = 0; i < n; i++) len += snprintf(text + len, sizeof text - (size_t)len, " node a%d kernel k args [x];\n", i);
  len += snprintf(text + len, sizeof text - (size_t)len, " node fixed kernel k args [w];\n}\n");
  return text;
}

START_TEST(update_method_boundary) {
  /* host patching costs 0.5 per node; a device batch 3, plus 0.25 per node on every
   * replay: host up to 12 nodes (6 against 6), the device from 13 (6.5 against 6.25) */
  Parsed *p = plan(patched_program(12), ROUND, 1e9);
  ck_assert_uint_eq(p->prog->regions.v[0]->patched, 12);
  ck_assert_int_eq(p->prog->regions.v[0]->update, PG_UPDATE_HOST);
  /* 13 kernels: graph 2 + 13 + 6.0 + ~0 */
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_graph_us, 2 + 13 + 6.0, 1e-6);
  parsed_free(p);
  p = plan(patched_program(13), ROUND, 1e9);
  ck_assert_uint_eq(p->prog->regions.v[0]->patched, 13);
  ck_assert_int_eq(p->prog->regions.v[0]->update, PG_UPDATE_DEVICE);
  ck_assert_double_eq_tol(p->prog->regions.v[0]->est_graph_us, 2 + 14 + 3.0 + 13 * 0.25, 1e-6);
  parsed_free(p);
}
END_TEST

#define MEM "pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n" \
            "buffer x size 1048576 role input;\nbuffer y size 1048576 role output;\n"      \
            "buffer t0 size 1048576 role intermediate;\nbuffer t1 size 1048576 role intermediate;\n" \
            "buffer t2 size 1048576 role intermediate;\n"

START_TEST(memplan_chain_reuses) {
  /* t0 [0,1], t1 [1,2], t2 [2,3]: t0 and t2 can share; the optimum is 2 MiB */
  Parsed *p = plan(MEM "graph g {\n node n1 kernel k args [x, t0];\n node n2 kernel k args [t0, t1];\n"
                       " node n3 kernel k args [t1, t2];\n node n4 kernel k args [t2, y];\n"
                       " n1 -> n2;\n n2 -> n3;\n n3 -> n4;\n}\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.buffers, 3);
  ck_assert_uint_eq(p->prog->mem.sum_bytes, 3 << 20);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20);
  ck_assert_uint_eq(p->prog->mem.pools_bytes, 3 << 20); /* one graph region holds all three */
  PgBuffer **b = p->prog->buffers.v;
  ck_assert(b[2]->planned && b[3]->planned && b[4]->planned);
  ck_assert(!b[0]->planned); /* inputs and outputs are the caller's */
  ck_assert_uint_ne(b[2]->offset, b[3]->offset); /* t0, t1 overlap in time */
  ck_assert_uint_ne(b[3]->offset, b[4]->offset);
  ck_assert_uint_eq(b[2]->offset % 256, 0);
  parsed_free(p);
}
END_TEST

START_TEST(memplan_overlapping_and_concurrent) {
  /* all three live at once: the sum is the optimum */
  Parsed *p = plan(MEM "graph g {\n node n1 kernel k args [t0, t1];\n node n2 kernel k args [t2, t0];\n"
                       " node n3 kernel k args [t1, t2];\n n1 -> n2;\n n2 -> n3;\n}\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 3 << 20);
  parsed_free(p);
  /* two independent branches in one graph may run concurrently: no sharing */
  p = plan(MEM "graph g {\n node n1 kernel k args [x, t0];\n node n2 kernel k args [t0, y];\n"
               " node n3 kernel k args [x, t1];\n node n4 kernel k args [t1, y];\n n1 -> n2;\n n3 -> n4;\n}\n",
           NULL, 1000);
  ck_assert(p->prog->regions.v[0]->graph);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20);
  parsed_free(p);
  /* a host operation splits two graphs: one pool each is 2 MiB, the arena reuses */
  p = plan(MEM "graph g {\n node n1 kernel k args [x, t0];\n node n2 kernel k args [t0, y];\n"
               " node s hostop op sync reason \"r\";\n node n3 kernel k args [x, t1];\n node n4 kernel k args [t1, y];\n"
               " n1 -> n2;\n n2 -> s;\n s -> n3;\n n3 -> n4;\n}\n",
           NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 3);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 1 << 20);
  ck_assert_uint_eq(p->prog->mem.pools_bytes, 2 << 20);
  parsed_free(p);
}
END_TEST

/* Where placing in time order leaves a hole too small for what comes next, placing the
 * largest first does not: t0 [0,0] and t1 [0,2] of 1 MiB, then t2 of 2 MiB [1,2].  In
 * time order t2 cannot take t0's 1 MiB and goes on top (4 MiB); largest first, t2 and
 * t0 share the bottom and the arena is the 3 MiB live at positions 1 and 2. */
START_TEST(memplan_largest_first_fills_holes) {
  Parsed *p = plan("pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n"
                   "buffer x size 64 role input;\nbuffer t0 size 1048576 role intermediate;\n"
                   "buffer t1 size 1048576 role intermediate;\nbuffer t2 size 2097152 role intermediate;\n"
                   "graph g {\n node n0 kernel k args [t0, t1];\n node n1 kernel k args [t2, x];\n"
                   " node n2 kernel k args [t1, t2];\n n0 -> n1;\n n1 -> n2;\n}\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.live_bytes, 3 << 20);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 3 << 20);
  ck_assert_int_eq(p->prog->mem.placement, PG_PLACE_SIZE);
  ck_assert_uint_eq(p->prog->mem.placed_bytes[PG_PLACE_TIME], 4 << 20);
  PgBuffer **b = p->prog->buffers.v; /* x, t0, t1, t2 */
  ck_assert_uint_eq(b[3]->offset, 0);
  ck_assert_uint_eq(b[1]->offset, 0);       /* t0 under t2: never live together */
  ck_assert_uint_eq(b[2]->offset, 2 << 20); /* t1 beside both */
  parsed_free(p);
  /* where both ways reach the least, the time order is kept */
  p = plan(MEM "graph g {\n node n1 kernel k args [x, t0];\n node n2 kernel k args [t0, t1];\n"
               " node n3 kernel k args [t1, t2];\n node n4 kernel k args [t2, y];\n"
               " n1 -> n2;\n n2 -> n3;\n n3 -> n4;\n}\n",
           NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, p->prog->mem.live_bytes);
  ck_assert_int_eq(p->prog->mem.placement, PG_PLACE_TIME);
  parsed_free(p);
}
END_TEST

/* The bodies of an if/else or a switch never run together: buffers used only inside one
 * body share bytes with those used only inside another. */
START_TEST(memplan_exclusive_bodies_share) {
  /* two bodies, a 1 MiB intermediate each: 1 MiB, at one offset */
  Parsed *p = plan(MEM "graph g { node c conditional type if bodies [one, two]; }\n"
                       "graph one { node n1 kernel k args [x, t0]; }\ngraph two { node n2 kernel k args [x, t1]; }\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.buffers, 2);
  ck_assert_uint_eq(p->prog->mem.sum_bytes, 2 << 20);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 1 << 20);
  ck_assert_uint_eq(p->prog->buffers.v[2]->offset, p->prog->buffers.v[3]->offset);
  parsed_free(p);
  /* t2, used by both bodies, spans them: shared with neither body's own */
  p = plan(MEM "graph g { node c conditional type switch bodies [one, two]; }\n"
               "graph one {\n node n1 kernel k args [x, t0];\n node n2 kernel k args [t0, t2];\n n1 -> n2;\n}\n"
               "graph two {\n node n3 kernel k args [x, t1];\n node n4 kernel k args [t1, t2];\n n3 -> n4;\n}\n",
           NULL, 1000);
  PgBuffer **b = p->prog->buffers.v;
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20);
  ck_assert_uint_eq(b[2]->offset, b[3]->offset);
  ck_assert_uint_ne(b[4]->offset, b[2]->offset);
  parsed_free(p);
  /* a buffer used before the conditional and in its first body, and one used only in the
   * second: the first is dead while the second body runs (the first never does then) */
  p = plan(MEM "graph g {\n node n0 kernel k args [x, t0];\n node c conditional type if bodies [one, two];\n"
               " n0 -> c;\n}\ngraph one { node n1 kernel k args [t0, y]; }\ngraph two { node n2 kernel k args [x, t1]; }\n",
           NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 1 << 20);
  parsed_free(p);
  /* ... but a buffer used after the conditional lives through every body */
  p = plan(MEM "graph g {\n node c conditional type if bodies [one, two];\n node n3 kernel k args [t0, y];\n"
               " c -> n3;\n}\ngraph one { node n1 kernel k args [x, t0]; }\ngraph two { node n2 kernel k args [x, t1]; }\n",
           NULL, 1000);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20);
  parsed_free(p);
  /* the bucket program: the largest bucket's intermediates (8 x 64 floats), not the sum */
  char *text = slurp("tests/golden/buckets.graph", NULL);
  Parsed *q = parse_text("b.graph", text);
  ck_assert_msg(q->prog, "%s", q->diags);
  pg_classify(q->prog);
  pg_partition(q->prog);
  pg_cost(q->prog, &pg_profile_h200, 1000, false);
  pg_memplan(q->prog);
  ck_assert_uint_eq(q->prog->mem.buffers, 4);
  ck_assert_uint_eq(q->prog->mem.sum_bytes, 256 + 512 + 1024 + 2048);
  ck_assert_uint_eq(q->prog->mem.arena_bytes, 2048);
  parsed_free(q);
  free(text);
}
END_TEST

/* A while body, or an if with one body, runs in the same launch as what surrounds it:
 * its uses count at its owner, as before, and two buffers of one body never share. */
START_TEST(memplan_single_bodies_unchanged) {
  static const char *const kinds[] = {"while", "if"};
  for (int i = 0; i < 2; i++) {
    char text[1024];
    snprintf(text, sizeof text, MEM "graph g {\n node n0 kernel k args [x, t2];\n node c conditional type %s "
             "bodies [one];\n n0 -> c;\n}\ngraph one {\n node n1 kernel k args [x, t0];\n"
             " node n2 kernel k args [x, t1];\n n1 -> n2;\n}\n", kinds[i]);
    Parsed *p = plan(text, NULL, 1000);
    PgBuffer **b = p->prog->buffers.v;
    ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20); /* t0 and t1 at the owner's position; t2 before */
    ck_assert_uint_ne(b[2]->offset, b[3]->offset);
    ck_assert_uint_eq(b[4]->offset, b[2]->offset); /* t2 died before the loop */
    parsed_free(p);
  }
}
END_TEST

/* In a graph region that is not a chain, two conditional nodes may run at once: their
 * bodies' buffers share nothing; with one such node, its bodies still share. */
START_TEST(memplan_exclusive_bodies_in_a_wide_region) {
  Parsed *p = plan(MEM "buffer t3 size 1048576 role intermediate;\n"
                       "graph g {\n node c conditional type if bodies [one, two];\n"
                       " node d conditional type if bodies [three, four];\n}\n"
                       "graph one { node n1 kernel k args [x, t0]; }\ngraph two { node n2 kernel k args [x, t1]; }\n"
                       "graph three { node n3 kernel k args [x, t2]; }\ngraph four { node n4 kernel k args [x, t3]; }\n",
                   NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 1);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 4 << 20);
  parsed_free(p);
  p = plan(MEM "graph g {\n node c conditional type if bodies [one, two];\n node a kernel k args [x, t2];\n}\n"
               "graph one { node n1 kernel k args [x, t0]; }\ngraph two { node n2 kernel k args [x, t1]; }\n",
           NULL, 1000);
  ck_assert_uint_eq(p->prog->regions.n, 1);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 2 << 20); /* t0 and t1 share; t2 runs beside either */
  ck_assert_uint_ne(p->prog->buffers.v[4]->offset, p->prog->buffers.v[2]->offset);
  parsed_free(p);
}
END_TEST

START_TEST(report_json_is_consistent) {
  Run r = run_pgcc("--report=json", "--profile=" ROUND, "--calls=100", "tests/partition/mixed.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  ck_assert_msg(j, "not JSON: %s\n%s", e.text, r.out);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "nodes")), 8);
  json_t *regions = json_object_get(j, "regions");
  ck_assert_uint_eq(json_array_size(regions), 3);
  double eager = 0, total = 0;
  size_t members = 0;
  for (size_t i = 0; i < json_array_size(regions); i++) {
    json_t *reg = json_array_get(regions, i);
    ck_assert_int_eq(json_integer_value(json_object_get(reg, "id")), (json_int_t)i);
    const char *d = json_string_value(json_object_get(reg, "decision"));
    double ee = json_real_value(json_object_get(reg, "est_eager_us"));
    json_t *eg = json_object_get(reg, "est_graph_us");
    eager += ee;
    if (strcmp(d, "graph") == 0) {
      ck_assert(json_real_value(eg) < ee); /* never a graph predicted slower */
      total += json_real_value(eg);
    } else {
      total += ee;
    }
    ck_assert(json_array_size(json_object_get(reg, "reasons")) > 0);
    members += json_array_size(json_object_get(reg, "members"));
    ck_assert_int_eq(json_integer_value(json_object_get(reg, "nodes")),
                     (json_int_t)json_array_size(json_object_get(reg, "members")));
  }
  ck_assert_uint_eq(members, 8);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "est_total_eager_us")), eager, 0.01);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "est_total_us")), total, 0.01);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "not_graphable")), 2);
  ck_assert(json_is_integer(json_object_get(j, "arena_bytes")));
  json_decref(j);
  run_free(&r);
}
END_TEST

/* Host reads in the report (tests/golden/hostread.graph): copies into pinned host
 * buffers stay in a graph region; the sync and the guard make an eager region, each
 * with its reason; the node that takes read scalars is patched from the host even
 * where the device-side update is allowed; the lists of host buffers, read scalars and
 * guards, in text and JSON. */
START_TEST(report_host_reads) {
  Run r = run_pgcc("--report=json", "--device-update", "--profile=" ROUND, "tests/golden/hostread.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  ck_assert_msg(j, "not JSON: %s\n%s", e.text, r.out);
  json_t *regions = json_object_get(j, "regions");
  ck_assert_uint_eq(json_array_size(regions), 3);
  json_t *r0 = json_array_get(regions, 0), *r1 = json_array_get(regions, 1), *r2 = json_array_get(regions, 2);
  ck_assert(json_is_true(json_object_get(r0, "graphable")));
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r0, "members"), 1)), "back");
  ck_assert_str_eq(json_string_value(json_object_get(r1, "decision")), "eager");
  json_t *why = json_object_get(r1, "reasons");
  ck_assert_str_eq(json_string_value(json_array_get(why, 0)), "host operation 'sync': m.max().item() at model.py:3");
  ck_assert_str_eq(json_string_value(json_array_get(why, 1)),
                   "host operation 'guard' (host buffer 'm_host' must start with 0000803f): the value read at "
                   "model.py:3 chose a branch");
  ck_assert_str_eq(json_string_value(json_object_get(r2, "update")), "host");
  json_t *r2why = json_object_get(r2, "reasons");
  ck_assert_str_eq(json_string_value(json_array_get(r2why, json_array_size(r2why) - 1)),
                   "1 node takes scalars read on the host ('mx' from 'm_host', 'half' from 'n_host', 'step' by "
                   "callback): patched from the host after each synchronization, never on the device");
  json_t *r0why = json_object_get(r0, "reasons");
  ck_assert_str_eq(json_string_value(json_array_get(r0why, json_array_size(r0why) - 1)),
                   "copies into host buffers (pinned, libpgrt's): 'c1' into 'm_host', 'c2' into 'n_host'");
  json_t *hb = json_object_get(j, "host_buffers"), *rs = json_object_get(j, "read_scalars"),
         *gd = json_object_get(j, "guards");
  ck_assert_uint_eq(json_array_size(hb), 2);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(hb, 1), "name")), "n_host");
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(hb, 1), "dtype")), "i32");
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(hb, 0), "size")), 8);
  ck_assert_uint_eq(json_array_size(rs), 3);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rs, 1), "from")), "n_host");
  ck_assert(json_is_null(json_object_get(json_array_get(rs, 2), "from")));
  ck_assert(json_is_true(json_object_get(json_array_get(rs, 2), "callback")));
  ck_assert_uint_eq(json_array_size(gd), 1);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(gd, 0), "expect")), "0000803f");
  json_decref(j);
  run_free(&r);
  r = run_pgcc("--report", "tests/golden/hostread.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "\nhost reads: host buffers m_host (f32, 8 B), n_host (i32, 4 B); read scalars mx "
                                      "(f32 from m_host), half (f16 from n_host); callback scalars step (i64); guards g "
                                      "(m_host starts with 0000803f)\n"));
  run_free(&r);
  /* a program without host reads: empty lists, no line */
  r = run_pgcc("--report=json", "tests/partition/mixed.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"host_buffers\": [],\n  \"read_scalars\": [],\n  \"guards\": [],"));
  run_free(&r);
  r = run_pgcc("--report", "tests/partition/mixed.graph", NULL);
  ck_assert_ptr_null(strstr(r.out, "host reads:"));
  run_free(&r);
}
END_TEST

/* Shape buckets in the report (tests/golden/buckets.graph): a line per bucket with its
 * body, nodes, the predicted time of a call that takes it and the arena it reaches, then
 * what the buckets share; the whole text is tests/golden/buckets.report. */
START_TEST(report_buckets) {
  Run r = run_pgcc("--report", "tests/golden/buckets.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *want = slurp("tests/golden/buckets.report", NULL);
  ck_assert_ptr_nonnull(want);
  ck_assert_str_eq(r.out, want);
  free(want);
  run_free(&r);
  r = run_pgcc("--report=json", "tests/golden/buckets.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  ck_assert_msg(j, "not JSON: %s\n%s", e.text, r.out);
  json_t *dims = json_object_get(j, "dims"), *buckets = json_object_get(j, "buckets");
  ck_assert_uint_eq(json_array_size(dims), 2);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(dims, 1), "mode")), "exact");
  ck_assert(json_is_null(json_object_get(json_array_get(dims, 1), "switch")));
  ck_assert_uint_eq(json_array_size(buckets), 4);
  static const int values[] = {1, 2, 4, 8};
  double last = 0;
  for (size_t k = 0; k < 4; k++) {
    json_t *b = json_array_get(buckets, k);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "value")), values[k]);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "index")), (json_int_t)k);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "arena_bytes")), 256 * values[k]);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "nodes")), 2);
    double us = json_real_value(json_object_get(b, "est_us"));
    ck_assert(us > last); /* larger buckets, longer kernels */
    last = us;
  }
  /* the largest bucket is the costliest body, the one the plan charged */
  ck_assert_double_eq_tol(last, json_real_value(json_object_get(j, "est_total_us")), 0.002);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "weights_bytes")), 16384 + 256);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "arena_bytes")), 2048);
  json_decref(j);
  run_free(&r);
  /* a program without dims: empty lists, no lines */
  r = run_pgcc("--report=json", "tests/partition/mixed.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"dims\": [],\n  \"buckets\": [],\n  \"weights_bytes\": "));
  run_free(&r);
  r = run_pgcc("--report", "tests/partition/mixed.graph", NULL);
  ck_assert_ptr_null(strstr(r.out, "bucket"));
  run_free(&r);
}
END_TEST

/* A region that holds only a bucket switch and its setter may run as one graph per
 * bucket: chosen over the switch when its instantiations (one per bucket) are spread
 * over enough calls; a region with anything else keeps the switch. */
static json_t *report_json(const char *calls, const char *path) {
  Run r = run_pgcc("--report=json", calls, path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_t *j = json_loads(r.out, 0, NULL);
  ck_assert_ptr_nonnull(j);
  run_free(&r);
  return j;
}

START_TEST(bucket_graphs_by_calls) {
  json_t *j = report_json("--calls=1000", "tests/gpu/codegen/buckets.graph");
  json_t *dim = json_array_get(json_object_get(j, "dims"), 0), *reg = json_array_get(json_object_get(j, "regions"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(dim, "form")), "graphs");
  json_t *why = json_object_get(reg, "reasons");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(why, json_array_size(why) - 1)),
                               "bucket switch 'pick' (dim B) as one graph per bucket"));
  /* each bucket's call: its own graph's launch and nodes, so smaller buckets cost less */
  json_t *b = json_object_get(j, "buckets");
  ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(b, 3), "est_us")),
                          json_real_value(json_object_get(reg, "est_graph_us")), 0.002);
  json_decref(j);
  j = report_json("--calls=1", "tests/gpu/codegen/buckets.graph");
  dim = json_array_get(json_object_get(j, "dims"), 0), reg = json_array_get(json_object_get(j, "regions"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(dim, "form")), "switch");
  why = json_object_get(reg, "reasons");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(why, json_array_size(why) - 1)),
                               "bucket switch 'pick' (dim B) kept as a switch"));
  json_decref(j);
  /* the golden program's root region also holds 'tail': the switch is the only form */
  j = report_json("--calls=1000000", "tests/golden/buckets.graph");
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "dims"), 0), "form")), "switch");
  reg = json_array_get(json_object_get(j, "regions"), 0);
  why = json_object_get(reg, "reasons");
  for (size_t k = 0; k < json_array_size(why); k++)
    ck_assert_ptr_null(strstr(json_string_value(json_array_get(why, k)), "one graph per bucket"));
  json_decref(j);
  /* a setter that takes anything else (here a buffer) may do more than set: the switch stays */
  Parsed *p = plan("pgcc 1;\nkernel s symbol \"s\" { param 0 8 u64; param 8 4 u32; param 16 8 ptr; }\n"
                   "kernel k symbol \"k\";\ndim B values [1, 2] pad;\nbuffer t size 4 role output;\n"
                   "scalar bi type u32 bucket B;\ncondition c;\ngraph g {\n"
                   " node set kernel s grid [1] block [1] args [c, bi, t];\n"
                   " node pick conditional type switch condition c bucket B bodies [one, two];\n set -> pick;\n}\n"
                   "graph one { node a kernel k; }\ngraph two { node b kernel k; }\n",
                   NULL, 1e6);
  ck_assert_ptr_null(p->prog->regions.v[0]->bucket_switch);
  ck_assert(!p->prog->regions.v[0]->bucket_graphs);
  parsed_free(p);
}
END_TEST

/* 20 kernels after a sync, each taking scalar v: with v per call the device-side update
 * wins by the profile's numbers (0.5 us per node on the host, 3 + 0.25 per node on the
 * device); with v read on the host it cannot be used (the updater runs before the sync). */
static const char *region_update(const char *scalar) {
  static char text[4096], update[16];
  int n = snprintf(text, sizeof text, "pgcc 2;\nkernel k symbol \"k\" { param 0 4 f32; }\n"
                   "buffer d size 4 role intermediate dtype f32;\nbuffer r size 4 role host dtype f32;\n"
                   "scalar v type f32 %s;\ngraph g {\n node c memcpy dir dtoh src d dst r width 4;\n"
                   " node s hostop op sync reason \"v.item()\";\n c -> s;\n", scalar);
  for (int i = 0; i < 20; i++) n += snprintf(text + n, sizeof text - (size_t)n, " node k%d kernel k grid [1] block [1] "
                                             "args [v];\n s -> k%d;\n", i, i);
  snprintf(text + n, sizeof text - (size_t)n, "}\n");
  system("mkdir -p build/test-out");
  FILE *f = fopen("build/test-out/late.graph", "w");
  fputs(text, f);
  fclose(f);
  Run r = run_pgcc("--report=json", "--device-update", "--profile=" ROUND, "build/test-out/late.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_t *j = json_loads(r.out, 0, NULL);
  ck_assert_ptr_nonnull(j);
  json_t *last = json_array_get(json_object_get(j, "regions"), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(last, "patched")), 20);
  snprintf(update, sizeof update, "%s", json_string_value(json_object_get(last, "update")));
  json_decref(j);
  run_free(&r);
  return update;
}

START_TEST(read_scalars_are_patched_from_the_host) {
  ck_assert_str_eq(region_update("input"), "device");
  ck_assert_str_eq(region_update("from r"), "host");
  ck_assert_str_eq(region_update("callback"), "host");
}
END_TEST

START_TEST(report_text_and_dot_clusters) {
  Run r = run_pgcc("--report", "tests/partition/merge.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "region  launch"));
  ck_assert_ptr_nonnull(strstr(r.out, "host operation 'sync': the host reads a flag"));
  ck_assert_ptr_nonnull(strstr(r.out, "the root graph in 2 regions: 1 as a graph (2 nodes), 1 eager (1 node)"));
  run_free(&r);
  r = run_pgcc("--emit=dot", "tests/partition/mixed.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "subgraph cluster_region_0 {"));
  ck_assert_ptr_nonnull(strstr(r.out, "subgraph cluster_region_2 {"));
  ck_assert_ptr_nonnull(strstr(r.out, "fillcolor=\"#fbe3e1\""));
  /* pgcc reads its partition picture back as the same graph */
  Parsed *p = parse_text("back.dot", r.out);
  ck_assert_msg(p->prog, "%s", p->diags);
  ck_assert_uint_eq(p->prog->graphs.n, 1);
  ck_assert_uint_eq(p->prog->graphs.v[0]->nodes.n, 8);
  parsed_free(p);
  run_free(&r);
}
END_TEST

START_TEST(profile_errors_are_located) {
  Run r = run_pgcc("--report", "--profile=tests/profiles/bad.profile", "tests/partition/merge.graph", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "bad.profile:3:1: error: unknown profile constant 'warp_us'"));
  ck_assert_ptr_nonnull(strstr(r.err, "bad.profile:4:17: error: 'graph_node_us' needs a time in microseconds"));
  ck_assert_ptr_nonnull(strstr(r.err, "error: profile does not set 'upload_us'"));
  run_free(&r);
  r = run_pgcc("--report=xml", "tests/partition/merge.graph", NULL);
  ck_assert_int_eq(r.status, 2);
  run_free(&r);
  r = run_pgcc("--report", "--emit=graph", "tests/partition/merge.graph", NULL);
  ck_assert_int_eq(r.status, 2);
  run_free(&r);
}
END_TEST

/* Random DAGs: the partition must respect every dependency (pg_verify_regions aborts
 * otherwise), graph regions hold only graphable nodes, and no graph is chosen that
 * is predicted slower. */
START_TEST(random_dags_hold_the_invariants) {
  unsigned seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  int backward_rounds = 0;
  for (int round = 0; round < 100; round++) {
    static char text[1 << 16];
    int n = 5 + (int)(RND() % 60), len = snprintf(text, sizeof text, K "graph g {\n");
    /* odd rounds declare the nodes in a shuffled order, so that edges run backwards
     * too and partition takes its heap path, not the node order as it is */
    int decl[64], at[64];
    for (int i = 0; i < n; i++) decl[i] = i;
    for (int i = n - 1; i > 0 && round % 2; i--) {
      int j = (int)(RND() % (unsigned)(i + 1)), t = decl[i];
      decl[i] = decl[j], decl[j] = t;
    }
    for (int k = 0; k < n; k++) {
      at[decl[k]] = k;
      if (RND() % 5 == 0)
        len += snprintf(text + len, sizeof text - (size_t)len, " node n%d hostop op sync reason \"r\";\n", decl[k]);
      else
        len += snprintf(text + len, sizeof text - (size_t)len, " node n%d kernel k gpu_us %u;\n", decl[k], RND() % 12);
    }
    bool forward = true;
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        if (RND() % 9 == 0) {
          len += snprintf(text + len, sizeof text - (size_t)len, " n%d -> n%d;\n", i, j);
          forward = forward && at[i] < at[j];
        }
    snprintf(text + len, sizeof text - (size_t)len, "}\n");
    Parsed *p = plan(text, NULL, 1 + RND() % 2000); /* pg_verify_regions aborts on an edge run backwards */
    ck_assert(pg_graph_in_order(p->prog->graphs.v[0]) == forward);
    backward_rounds += !forward;
    size_t eager_nodes = 0, graph_regions = 0;
    for (size_t i = 0; i < p->prog->regions.n; i++) {
      const PgRegion *r = p->prog->regions.v[i];
      for (size_t k = 0; k < r->nodes.n; k++) ck_assert(r->nodes.v[k]->graphable == r->graphable);
      if (r->graph) ck_assert(r->est_graph_us < r->est_eager_us);
      if (!r->graphable) eager_nodes += r->nodes.n;
      graph_regions += r->graphable;
    }
    /* graph regions sit between eager nodes: never more than one more than them */
    ck_assert_uint_le(graph_regions, eager_nodes + 1);
    parsed_free(p);
  }
  ck_assert_int_ge(backward_rounds, 25); /* the heap path ran */
#undef RND
}
END_TEST

/* Random chains over random-sized intermediates: buffers live at the same time never
 * share bytes, offsets are aligned, the arena is no larger than the sum and no smaller
 * than the most bytes live at one node (computed here), it is the smallest of the
 * placements' (those after one that reached that floor are not tried), and each
 * placement is kept in some rounds. */
START_TEST(memplan_random_never_overlaps_live_buffers) {
  unsigned seed = 777;
  int kept[PG_PLACE_COUNT] = {0};
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  for (int round = 0; round < 60; round++) {
    static char text[1 << 16];
    /* two rounds in three: few buffers used anywhere; the third: up to 128 used each in a
     * window of the chain (short lives, much reuse, as in a forward pass) */
    bool windowed = round % 3 == 2;
    int nbuf = windowed ? 16 + (int)(RND() % 113) : 2 + (int)(RND() % 20);
    int nk = windowed ? 2 * nbuf + (int)(RND() % 64) : 2 + (int)(RND() % 40);
    int len = snprintf(text, sizeof text, "pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n");
    unsigned size[128], align[128];
    for (int b = 0; b < nbuf; b++) {
      size[b] = 1 + RND() % 100000;
      align[b] = RND() % 3 == 0 ? 4096 : 0;
      len += snprintf(text + len, sizeof text - (size_t)len, "buffer t%d size %u%s role intermediate;\n", b, size[b],
                      align[b] ? " align 4096" : "");
    }
    int use[320][2], lo[128], hi[128];
    for (int b = 0; b < nbuf; b++) lo[b] = -1, hi[b] = -1;
    len += snprintf(text + len, sizeof text - (size_t)len, "graph g {\n");
    for (int i = 0; i < nk; i++) {
      for (int a = 0; a < 2; a++) {
        int b = use[i][a] = windowed ? (i * nbuf / nk + (int)(RND() % 6)) % nbuf : (int)(RND() % (unsigned)nbuf);
        if (lo[b] < 0) lo[b] = i;
        hi[b] = i;
      }
      len += snprintf(text + len, sizeof text - (size_t)len, " node n%d kernel k args [t%d, t%d];\n", i, use[i][0],
                      use[i][1]);
      if (i) len += snprintf(text + len, sizeof text - (size_t)len, " n%d -> n%d;\n", i - 1, i);
    }
    snprintf(text + len, sizeof text - (size_t)len, "}\n");
    Parsed *p = plan(text, ROUND, 1e6);
    ck_assert_uint_eq(p->prog->regions.n, 1); /* one chain: node order is the schedule */
    uint64_t sum = 0;
    for (int a = 0; a < nbuf; a++) {
      const PgBuffer *A = p->prog->buffers.v[a];
      if (lo[a] < 0) {
        ck_assert(!A->planned);
        continue;
      }
      sum += A->size;
      ck_assert(A->planned);
      ck_assert_uint_eq(A->offset % (align[a] ? align[a] : 256), 0);
      ck_assert_uint_le(A->offset + A->size, p->prog->mem.arena_bytes);
      for (int b = 0; b < a; b++) {
        const PgBuffer *B = p->prog->buffers.v[b];
        if (lo[b] < 0 || lo[a] > hi[b] || lo[b] > hi[a]) continue;
        ck_assert_msg(A->offset + A->size <= B->offset || B->offset + B->size <= A->offset,
                      "t%d and t%d are live together and overlap", a, b);
      }
    }
    ck_assert_uint_eq(p->prog->mem.sum_bytes, sum);
    ck_assert_uint_le(p->prog->mem.arena_bytes, sum + (uint64_t)nbuf * 4096);
    /* the most bytes live at one node: the floor */
    uint64_t most = 0;
    for (int i = 0; i < nk; i++) {
      uint64_t now = 0;
      for (int b = 0; b < nbuf; b++)
        if (lo[b] >= 0 && lo[b] <= i && i <= hi[b]) now += size[b];
      if (now > most) most = now;
    }
    ck_assert_uint_eq(p->prog->mem.live_bytes, most);
    ck_assert_uint_ge(p->prog->mem.arena_bytes, most);
    kept[p->prog->mem.placement]++;
    /* the smallest kept, the earliest on a tie; a way not tried only after one reached
     * the floor (these programs are far below PLACE_PAIRS) */
    ck_assert(p->prog->mem.tried[PG_PLACE_TIME]);
    for (int k = 0; k < PG_PLACE_COUNT; k++) {
      uint64_t b = p->prog->mem.placed_bytes[k];
      if (!p->prog->mem.tried[k]) {
        ck_assert_uint_eq(p->prog->mem.arena_bytes, most);
        continue;
      }
      ck_assert(b > p->prog->mem.arena_bytes || (b == p->prog->mem.arena_bytes && k >= (int)p->prog->mem.placement));
    }
    parsed_free(p);
  }
  for (int k = 0; k < PG_PLACE_COUNT; k++) /* every placement's offsets were checked */
    ck_assert_msg(kept[k] >= 3, "placement %d kept %d times of 60", k, kept[k]);
#undef RND
}
END_TEST

/* The staging pass (stage.c) on its own: one end staged at a time (send only: a copy in,
 * no copy out; recv only: the reverse), at the pointer's offset; names that are taken
 * (a node s_in, a scalar r_stage) get _2; the edges and the node order rewired; a
 * collective on host memory and one inside a body left for pg_c_check to refuse; a
 * second run stages nothing; the verifier and the memory plan take the result. */
START_TEST(stage_collectives_one_end_names_and_limits) {
  Parsed *p = parse_text("t.graph",
                         "pgcc 1;\ncomm world ranks 2;\nkernel k symbol \"k\" { param 0 8 ptr; }\n"
                         "buffer x size 4096 role input dtype f32;\nbuffer y size 4096 role output;\n"
                         "buffer u size 4096 dtype f32;\nbuffer t size 4096 role intermediate;\n"
                         "buffer w size 4096 role weight;\nbuffer h size 4096 role host;\n"
                         "scalar r_stage type i32 value 1;\n"
                         "graph main {\n"
                         "  node a kernel k grid [1] block [1] args [x];\n"
                         "  node b kernel k grid [1] block [1] args [t];\n"
                         "  node s libcall fn \"ncclAllReduce\" comm world send x+1024 recv t count 256 dtype f32 op sum;\n"
                         "  node s_in empty;\n"
                         "  node r libcall fn \"ncclAllReduce\" comm world send w recv u+512 count 256 dtype f32 op max;\n"
                         "  node hh libcall fn \"ncclAllReduce\" comm world send x recv h count 256 dtype f32 op sum;\n"
                         "  node c child body cb;\n"
                         "  node z kernel k grid [1] block [1] args [y];\n"
                         "  a -> s; b -> s; s -> r; s -> z; r -> z;\n"
                         "}\n"
                         "graph cb { node inner libcall fn \"ncclAllReduce\" comm world send x recv y count 256 dtype f32 op sum; }\n");
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  PgProgram *prog = p->prog;
  size_t buffers = prog->buffers.n;
  ck_assert_uint_eq(pg_stage_collectives(prog), 2);
  ck_assert_uint_eq(prog->buffers.n, buffers + 2);

  PgNode *s = find_node(prog, "s"), *sin = find_node(prog, "s_in_2"), *r = find_node(prog, "r"),
         *rout = find_node(prog, "r_out");
  ck_assert_ptr_nonnull(sin);
  ck_assert_ptr_nonnull(rout);
  ck_assert_ptr_null(find_node(prog, "s_out"));
  ck_assert_ptr_null(find_node(prog, "r_in"));
  const PgCollective *sc = s->u.libcall.coll, *rc = r->u.libcall.coll;
  ck_assert_ptr_eq(sc->stage_in, sin);
  ck_assert_ptr_null(sc->stage_out);
  ck_assert_ptr_null(rc->stage_in);
  ck_assert_ptr_eq(rc->stage_out, rout);
  /* send only: x+1024 -> s_stage, 1024 bytes; s reads s_stage, writes t as before */
  ck_assert_str_eq(sc->send.buf->name, "s_stage");
  ck_assert_uint_eq(sc->send.offset, 0);
  ck_assert_str_eq(sc->recv.buf->name, "t");
  ck_assert_uint_eq(sc->send.buf->size, 1024);
  ck_assert_int_eq(sc->send.buf->role, PG_ROLE_INTERMEDIATE);
  ck_assert(sc->send.buf->has_dtype && sc->send.buf->dtype == PG_T_F32);
  ck_assert(sc->send.buf->has_shape && sc->send.buf->shape.n == 1 && sc->send.buf->shape.v[0] == 256);
  ck_assert_int_eq(sc->send.buf->loc.line, s->loc.line);
  ck_assert_str_eq(sin->u.memcpy.src.buf->name, "x");
  ck_assert_uint_eq(sin->u.memcpy.src.offset, 1024);
  ck_assert_ptr_eq(sin->u.memcpy.dst.buf, sc->send.buf);
  ck_assert_uint_eq(sin->u.memcpy.width, 1024);
  ck_assert_int_eq(sin->u.memcpy.dir, PG_DIR_DTOD);
  ck_assert_int_eq(sin->loc.line, s->loc.line);
  ck_assert_int_eq(sin->loc.col, s->loc.col);
  /* recv only: r writes r_stage_2 (r_stage is a scalar's name), r_out copies it to u+512 */
  ck_assert_str_eq(rc->send.buf->name, "w");
  ck_assert_str_eq(rc->recv.buf->name, "r_stage_2");
  ck_assert_ptr_eq(rout->u.memcpy.src.buf, rc->recv.buf);
  ck_assert_str_eq(rout->u.memcpy.dst.buf->name, "u");
  ck_assert_uint_eq(rout->u.memcpy.dst.offset, 512);
  ck_assert_uint_eq(rout->u.memcpy.width, 1024);
  /* left alone */
  const PgCollective *hc = find_node(prog, "hh")->u.libcall.coll, *ic = find_node(prog, "inner")->u.libcall.coll;
  ck_assert(!hc->stage_in && !hc->stage_out && strcmp(hc->send.buf->name, "x") == 0 &&
            strcmp(hc->recv.buf->name, "h") == 0);
  ck_assert(!ic->stage_in && !ic->stage_out && strcmp(ic->send.buf->name, "x") == 0 &&
            strcmp(ic->recv.buf->name, "y") == 0);
  /* the node order and the edges */
  static const char *const order[] = {"a", "b", "s_in_2", "s", "s_in", "r", "r_out", "hh", "c", "z"};
  const PgGraph *g = prog->graphs.v[0];
  ck_assert_uint_eq(g->nodes.n, 10);
  for (size_t i = 0; i < 10; i++) {
    ck_assert_str_eq(g->nodes.v[i]->name, order[i]);
    ck_assert_uint_eq(g->nodes.v[i]->index, i);
  }
  ck_assert(pg_graph_in_order(g));
  ck_assert_uint_eq(sin->npred, 2);
  ck_assert_str_eq(pg_preds(sin)[0]->name, "a");
  ck_assert_str_eq(pg_preds(sin)[1]->name, "b");
  ck_assert_uint_eq(s->npred, 1);
  ck_assert_ptr_eq(pg_preds(s)[0], sin);
  ck_assert_uint_eq(s->nsucc, 2); /* nothing staged after s: its successors are its own */
  ck_assert_ptr_eq(pg_succs(s)[0], r);
  ck_assert_uint_eq(r->nsucc, 1);
  ck_assert_ptr_eq(pg_succs(r)[0], rout);
  ck_assert_uint_eq(rout->nsucc, 1);
  ck_assert_str_eq(pg_succs(rout)[0]->name, "z");
  ck_assert_uint_eq(find_node(prog, "z")->npred, 2); /* s and r_out */
  ck_assert_int_eq(pg_verify(prog, &p->diag), 0);
  ck_assert_uint_eq(pg_stage_collectives(prog), 0);
  ck_assert_uint_eq(g->nodes.n, 10);
  pg_classify(prog);
  pg_partition(prog);
  ck_assert_int_eq(pg_verify_regions(prog, &p->diag), 0);
  pg_cost(prog, &pg_profile_h200, 1000, false);
  pg_memplan(prog);
  ck_assert(sc->send.buf->planned && rc->recv.buf->planned);
  ck_assert_int_eq(pg_verify(prog, &p->diag), 0);
  parsed_free(p);
}
END_TEST

/* ---- schedule.c ---- */

#define GRADS "pgcc 3;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n"                        \
              "buffer x size 1048576 role input;\nbuffer w0 size 1048576 role input;\n"                    \
              "buffer w1 size 1048576 role input;\nbuffer w2 size 1048576 role input;\n"                   \
              "buffer g0 size 1048576 role intermediate;\nbuffer g1 size 1048576 role intermediate;\n"     \
              "buffer g2 size 1048576 role intermediate;\n"

/* The root graph's node names, in order, joined by spaces. */
static const char *order_of(const PgProgram *prog) {
  static char buf[4096];
  size_t len = 0;
  const PgGraph *g = prog->graphs.v[0];
  for (size_t i = 0; i < g->nodes.n; i++) {
    ck_assert_uint_eq(g->nodes.v[i]->index, i);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "", g->nodes.v[i]->name);
  }
  return buf;
}

START_TEST(schedule_frees_gradients_early) {
  /* a backward making three gradients, then adding each into its parameter's: each add
   * moves up to just after the gradient it reads is made, and one is live at a time */
  const char *text = GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
                           " node m2 kernel k args [x, g2];\n node a0 kernel k args [g0, w0];\n"
                           " node a1 kernel k args [g1, w1];\n node a2 kernel k args [g2, w2];\n"
                           " m0 -> m1;\n m1 -> m2;\n m2 -> a0;\n a0 -> a1;\n a1 -> a2;\n}\n";
  Parsed *kept = plan_as(text, NULL, 1000, false), *p = plan_as(text, NULL, 1000, true);
  ck_assert_uint_eq(kept->prog->mem.live_bytes, 3 << 20);
  ck_assert_str_eq(order_of(p->prog), "m0 a0 m1 a1 m2 a2");
  ck_assert_uint_eq(p->prog->sched.moved, 2); /* a0 and a1: a2 runs where it ran */
  ck_assert_uint_eq(p->prog->sched.live_before, 3 << 20);
  ck_assert_ptr_null(p->prog->sched.why_not);
  ck_assert_uint_eq(p->prog->mem.live_bytes, 1 << 20);
  ck_assert_uint_eq(p->prog->mem.arena_bytes, 1 << 20);
  const PgGraph *g = p->prog->graphs.v[0]; /* the edges are the new chain's */
  ck_assert_uint_eq(g->edges.n, 5);
  for (size_t i = 0; i + 1 < g->nodes.n; i++) {
    ck_assert_uint_eq(g->nodes.v[i]->nsucc, 1);
    ck_assert_ptr_eq(pg_succs(g->nodes.v[i])[0], g->nodes.v[i + 1]);
  }
  ck_assert_uint_eq(p->prog->regions.n, 1);
  ck_assert_ptr_eq(p->prog->regions.v[0]->nodes.v[1], find_node(p->prog, "a0"));
  parsed_free(kept);
  parsed_free(p);
}
END_TEST

START_TEST(schedule_keeps_what_orders_a_node) {
  /* a0 reads x, which m1 and m2 also use (every use counts as a write): it stays after m2 */
  Parsed *p = plan_as(GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
                            " node m2 kernel k args [g1, x];\n node a0 kernel k args [g0, x];\n"
                            " m0 -> m1;\n m1 -> m2;\n m2 -> a0;\n}\n",
                      NULL, 1000, true);
  ck_assert_str_eq(order_of(p->prog), "m0 m1 m2 a0");
  ck_assert_uint_eq(p->prog->sched.moved, 0);
  parsed_free(p);
  /* nothing moves past a fixed node: a host synchronization */
  p = plan_as(GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
                    " node s hostop op sync reason \"r\";\n node a0 kernel k args [g0, w0];\n"
                    " node a1 kernel k args [g1, w1];\n m0 -> m1;\n m1 -> s;\n s -> a0;\n a0 -> a1;\n}\n",
              NULL, 1000, true);
  ck_assert_str_eq(order_of(p->prog), "m0 m1 s a0 a1");
  ck_assert_uint_eq(p->prog->sched.moved, 0);
  parsed_free(p);
  /* a node that frees one buffer and makes another stays (it would lengthen the new one's life) */
  p = plan_as(GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
                    " node a0 kernel k args [g0, g2];\n node a1 kernel k args [g2, g1];\n"
                    " m0 -> m1;\n m1 -> a0;\n a0 -> a1;\n}\n",
              NULL, 1000, true);
  ck_assert_str_eq(order_of(p->prog), "m0 m1 a0 a1");
  parsed_free(p);
}
END_TEST

START_TEST(schedule_only_on_one_chain) {
  static const struct {
    const char *graph, *why;
  } cases[] = {
      {GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
             " node a0 kernel k args [g0, w0];\n node a1 kernel k args [g1, w1];\n m0 -> a0;\n m1 -> a1;\n}\n",
       "it is not one chain"},
      {GRADS "graph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [x, g1];\n"
             " node a0 kernel k args [g0, w0];\n m0 -> m1 programmatic;\n m1 -> a0;\n}\n",
       "it has programmatic edges"},
      {GRADS "buffer u size 64;\ngraph g {\n node m0 kernel k args [x, g0];\n node m1 kernel k args [u, g1];\n"
             " node a0 kernel k args [g0, w0];\n m0 -> m1;\n m1 -> a0;\n}\n",
       "a buffer's role is unknown (it may alias another)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Parsed *kept = plan_as(cases[i].graph, NULL, 1000, false);
    char before[4096];
    snprintf(before, sizeof before, "%s", order_of(kept->prog));
    Parsed *p = plan_as(cases[i].graph, NULL, 1000, true);
    ck_assert_str_eq(p->prog->sched.why_not, cases[i].why);
    ck_assert_uint_eq(p->prog->sched.moved, 0);
    ck_assert_str_eq(order_of(p->prog), before);
    ck_assert_uint_eq(p->prog->mem.arena_bytes, kept->prog->mem.arena_bytes);
    parsed_free(kept);
    parsed_free(p);
  }
}
END_TEST

START_TEST(schedule_on_the_command_line) {
  Run r = run_pgcc("--report=json", "tests/partition/grads.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"arena_bytes\": 1048576,"));
  ck_assert_ptr_nonnull(strstr(r.out, "\"schedule\": {\"moved\": 2, \"live_bytes_captured\": 3145728, \"why_not\": null}"));
  run_free(&r);
  r = run_pgcc("--report", "tests/partition/grads.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "order: 2 nodes moved up to free intermediates sooner (3.00 MiB live at once"));
  run_free(&r);
  r = run_pgcc("--report=json", "--keep-order", "tests/partition/grads.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"arena_bytes\": 3145728,"));
  ck_assert_ptr_nonnull(strstr(r.out, "\"schedule\": {\"moved\": 0, \"live_bytes_captured\": 3145728, \"why_not\": \"--keep-order\"}"));
  run_free(&r);
  r = run_pgcc("--emit=graph", "tests/partition/grads.graph", NULL); /* the new order, written */
  ck_assert_int_eq(r.status, 0);
  const char *m1 = strstr(r.out, "node m1 "), *a0 = strstr(r.out, "node a0 ");
  ck_assert(m1 && a0 && a0 < m1);
  ck_assert_ptr_nonnull(strstr(r.out, "m0 -> a0;"));
  run_free(&r);
}
END_TEST

/* Random chains of kernels over intermediates and inputs, host synchronizations among
 * them: scheduled, every buffer's users keep their order, every synchronization the
 * nodes before it, only freeing nodes run earlier, and the floor never rises (and is
 * what it was captured, when nothing moved). */
START_TEST(schedule_random_chains_hold_the_invariants) {
  unsigned seed = 4242;
  int moved_total = 0, lowered = 0;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  for (int round = 0; round < 80; round++) {
    static char text[1 << 16];
    int nbuf = 2 + (int)(RND() % 14), nk = 3 + (int)(RND() % 40);
    int len = snprintf(text, sizeof text, "pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; param 8 8 ptr; }\n");
    for (int b = 0; b < nbuf; b++) {
      unsigned size = 256 * (1 + RND() % 64);
      const char *role = RND() % 4 ? "intermediate" : "input";
      len += snprintf(text + len, sizeof text - (size_t)len, "buffer t%d size %u role %s;\n", b, size, role);
    }
    len += snprintf(text + len, sizeof text - (size_t)len, "graph g {\n");
    int use[64][2];
    bool sync[64];
    for (int i = 0; i < nk; i++) {
      sync[i] = RND() % 9 == 0;
      use[i][0] = (int)(RND() % (unsigned)nbuf);
      use[i][1] = (int)(RND() % (unsigned)nbuf);
      if (sync[i]) len += snprintf(text + len, sizeof text - (size_t)len, " node n%d hostop op sync reason \"r\";\n", i);
      else
        len += snprintf(text + len, sizeof text - (size_t)len, " node n%d kernel k args [t%d, t%d];\n", i, use[i][0],
                        use[i][1]);
      if (i) len += snprintf(text + len, sizeof text - (size_t)len, " n%d -> n%d;\n", i - 1, i);
    }
    snprintf(text + len, sizeof text - (size_t)len, "}\n");
    Parsed *kept = plan_as(text, NULL, 1000, false), *p = plan_as(text, NULL, 1000, true);
    const PgGraph *g = p->prog->graphs.v[0];
    ck_assert_uint_eq(g->nodes.n, (size_t)nk);
    int pos[64];
    for (size_t i = 0; i < g->nodes.n; i++) pos[atoi(g->nodes.v[i]->name + 1)] = (int)i;
    for (int a = 0; a < nk; a++)
      for (int b = a + 1; b < nk; b++) {
        bool shared = !sync[a] && !sync[b] &&
                      (use[a][0] == use[b][0] || use[a][0] == use[b][1] || use[a][1] == use[b][0] || use[a][1] == use[b][1]);
        if (shared || sync[a] || sync[b])
          ck_assert_msg(pos[a] < pos[b], "round %d: n%d and n%d changed order", round, a, b);
      }
    for (int i = 0; i < nk; i++)
      if (pos[i] < i) { /* ran earlier: it frees an intermediate and makes none */
        bool frees = false, makes = false;
        for (int k = 0; k < 2; k++) {
          int b = use[i][k];
          const PgBuffer *B = p->prog->buffers.v[b];
          if (B->role != PG_ROLE_INTERMEDIATE) continue;
          int first = nk, last = -1;
          for (int j = 0; j < nk; j++)
            if (!sync[j] && (use[j][0] == b || use[j][1] == b)) first = first < j ? first : j, last = j;
          frees |= last == i && first != i;
          makes |= first == i;
        }
        ck_assert_msg(frees && !makes, "round %d: n%d moved up but is no freeing node", round, i);
      }
    ck_assert_uint_eq(p->prog->sched.live_before, kept->prog->mem.live_bytes);
    ck_assert_uint_le(p->prog->mem.live_bytes, kept->prog->mem.live_bytes);
    if (p->prog->sched.moved) ck_assert_uint_lt(p->prog->mem.live_bytes, kept->prog->mem.live_bytes);
    else ck_assert_uint_eq(p->prog->mem.live_bytes, kept->prog->mem.live_bytes);
    moved_total += (int)p->prog->sched.moved;
    lowered += p->prog->mem.live_bytes < kept->prog->mem.live_bytes;
    parsed_free(kept);
    parsed_free(p);
  }
  ck_assert_int_gt(moved_total, 0); /* (the generator makes cases that move) */
  ck_assert_int_gt(lowered, 5);
#undef RND
}
END_TEST

START_TEST(built_in_profile_is_the_shipped_h200_profile) {
  PgArena *a = pg_arena_new();
  PgDiag d = {.out = stderr};
  PgProfile *f = pg_profile_load(a, &d, "profiles/h200.profile");
  ck_assert_ptr_nonnull(f);
#define X(field, doc) ck_assert_msg(f->field == pg_profile_h200.field, #field);
  PG_PROFILE_FIELDS(X)
#undef X
  ck_assert_ptr_nonnull(pg_profile_load(a, &d, "profiles/h100.profile"));
  pg_arena_free(a);
}
END_TEST

Suite *partition_suite(void) {
  Suite *s = suite_create("partition");
  TCase *t = tcase_create("partition");
  tcase_add_test(t, classification_reasons);
  tcase_add_test(t, reordering_merges_regions);
  tcase_add_test(t, dependencies_prevent_merging);
  tcase_add_test(t, eager_nodes_keep_their_order);
  tcase_add_test(t, wide_dag_is_one_region);
  tcase_add_test(t, break_even_on_calls);
  tcase_add_test(t, eager_simulation_overlaps_launches);
  tcase_add_test(t, instantiation_not_amortized_stays_eager);
  tcase_add_test(t, update_method_boundary);
  tcase_add_test(t, memplan_chain_reuses);
  tcase_add_test(t, memplan_overlapping_and_concurrent);
  tcase_add_test(t, memplan_exclusive_bodies_share);
  tcase_add_test(t, memplan_largest_first_fills_holes);
  tcase_add_test(t, memplan_single_bodies_unchanged);
  tcase_add_test(t, memplan_exclusive_bodies_in_a_wide_region);
  tcase_add_test(t, report_json_is_consistent);
  tcase_add_test(t, report_text_and_dot_clusters);
  tcase_add_test(t, report_host_reads);
  tcase_add_test(t, report_buckets);
  tcase_add_test(t, bucket_graphs_by_calls);
  tcase_add_test(t, read_scalars_are_patched_from_the_host);
  tcase_add_test(t, profile_errors_are_located);
  tcase_add_test(t, random_dags_hold_the_invariants);
  tcase_add_test(t, built_in_profile_is_the_shipped_h200_profile);
  tcase_add_test(t, stage_collectives_one_end_names_and_limits);
  tcase_add_test(t, memplan_random_never_overlaps_live_buffers);
  tcase_add_test(t, schedule_frees_gradients_early);
  tcase_add_test(t, schedule_keeps_what_orders_a_node);
  tcase_add_test(t, schedule_only_on_one_chain);
  tcase_add_test(t, schedule_on_the_command_line);
  tcase_add_test(t, schedule_random_chains_hold_the_invariants);
  suite_add_tcase(s, t);
  return s;
}

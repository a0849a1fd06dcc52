/*
 * test_corpus.c -- every real dump in tests/corpus reads, and reads right:
 *
 *  - torch captures: node and kernel counts equal the driver's own walk of the same
 *    graph (X_walk.json, from cuGraphGetNodes/cuGraphKernelNodeGetParams), node by
 *    node: kernel symbol, grid, block and dynamic shared memory; edge counts equal
 *    the "->" statements in the file;
 *  - CUDA's all-kinds graph under each of its 13 dump flags: the same 16 nodes of the
 *    kinds the dump was made with, in the same order;
 *  - DOT -> .graph -> .graph is a fixed point, and DOT -> DOT keeps the counts;
 *  - allkinds_verbose.dot gives exactly tests/golden/allkinds_verbose.graph;
 *  - pgrt/: graphs libpgrt built with cuGraphAdd*Node (tests/gpu/run_codegen.sh),
 *    whose memcpy records use the driver's CUDA_MEMCPY3D fields; and a stream
 *    capture (tests/gpu/dotin/capture.c) whose C lists its kernel nodes' origins.
 */
#include "../helpers.h"

#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const torch[] = {"mlp_compiled", "mlp_eager", "gpt2_compiled", "gpt2_eager", "mlp_train_eager"};
#define NTORCH (sizeof torch / sizeof torch[0])

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

START_TEST(torch_capture_matches_driver_walk) {
  const char *name = torch[_i];
  char path[256];
  snprintf(path, sizeof path, "tests/corpus/torch/%s.dot", name);
  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  snprintf(path, sizeof path, "tests/corpus/torch/%s_walk.json", name);
  json_error_t jerr;
  json_t *walk = json_load_file(path, 0, &jerr);
  ck_assert_msg(walk && json_is_array(walk), "%s: %s", path, jerr.text);

  Parsed *p = parse_text(name, text);
  ck_assert_msg(p->prog, "%s", p->diags);
  PgStats s = pg_program_stats(p->prog);
  size_t kernels = 0;
  for (size_t i = 0; i < json_array_size(walk); i++)
    kernels += strstr(json_string_value(json_object_get(json_array_get(walk, i), "type")), "KERNEL") != NULL;
  ck_assert_uint_eq(s.nodes, json_array_size(walk));
  ck_assert_uint_eq(s.kernels, kernels);
  ck_assert_uint_eq(s.edges, count(text, " -> "));

  const PgGraph *g = p->prog->graphs.v[0];
  ck_assert_uint_eq(g->nodes.n, json_array_size(walk));
  for (size_t i = 0; i < g->nodes.n; i++) {
    json_t *w = json_array_get(walk, i);
    const PgNode *n = g->nodes.v[i];
    ck_assert_int_eq(n->kind, PG_KERNEL);
    ck_assert_str_eq(n->u.kernel.kernel->symbol, json_string_value(json_object_get(w, "name")));
    for (int d = 0; d < 3; d++) {
      ck_assert_int_eq(n->u.kernel.grid[d], json_integer_value(json_array_get(json_object_get(w, "grid"), d)));
      ck_assert_int_eq(n->u.kernel.block[d], json_integer_value(json_array_get(json_object_get(w, "block"), d)));
    }
    ck_assert_int_eq(n->u.kernel.smem, json_integer_value(json_object_get(w, "smem")));
  }
  json_decref(walk);
  parsed_free(p);
  free(text);
}
END_TEST

/* The kinds of the all-kinds graph, as the program that dumped it built it. */
static const PgNodeKind allkinds[] = {PG_KERNEL,       PG_MEMCPY,     PG_MEMSET,   PG_KERNEL, PG_HOST,
                                      PG_EMPTY,        PG_CHILD,      PG_EVENT_RECORD, PG_EVENT_WAIT,
                                      PG_MEM_ALLOC,    PG_MEM_FREE,   PG_MEMCPY,   PG_KERNEL, PG_CONDITIONAL};

START_TEST(cuda_allkinds_under_every_flag) {
  DIR *dir = opendir("tests/corpus/cuda");
  ck_assert_ptr_nonnull(dir);
  int files = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (!strstr(e->d_name, ".dot")) continue;
    char path[512];
    snprintf(path, sizeof path, "tests/corpus/cuda/%s", e->d_name);
    char *text = slurp(path, NULL);
    Parsed *p = parse_text(e->d_name, text);
    ck_assert_msg(p->prog && p->diag.errors == 0 && p->diag.warnings == 0, "%s: %s", e->d_name, p->diags);
    PgStats s = pg_program_stats(p->prog);
    ck_assert_uint_eq(s.nodes, 16);
    ck_assert_uint_eq(s.edges, count(text, " -> "));
    ck_assert_uint_eq(s.graphs, 3);
    ck_assert_uint_eq(s.kernels, 5);
    const PgGraph *root = p->prog->graphs.v[0];
    ck_assert_uint_eq(root->nodes.n, sizeof allkinds / sizeof allkinds[0]);
    for (size_t i = 0; i < root->nodes.n; i++)
      ck_assert_msg(root->nodes.v[i]->kind == allkinds[i], "%s: node %zu is %s", e->d_name, i,
                    pg_kinds[root->nodes.v[i]->kind].name);
    const PgNode *child = root->nodes.v[6], *cond = root->nodes.v[13];
    ck_assert_str_eq(child->u.child.body->name, "g3");
    ck_assert_uint_eq(cond->u.cond.bodies.n, 1);
    ck_assert_str_eq(cond->u.cond.bodies.v[0]->name, "g4");
    ck_assert_str_eq(root->nodes.v[3]->u.kernel.kernel->symbol, "_Z5add3dPfPKfS1_i");
    parsed_free(p);
    free(text);
    files++;
  }
  closedir(dir);
  ck_assert_int_eq(files, 13);
}
END_TEST

static void fixed_point(const char *path) {
  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text(path, text);
  ck_assert_msg(p->prog, "%s", p->diags);
  char *a = graph_text(p->prog);
  Parsed *q = parse_text("a.graph", a);
  ck_assert_msg(q->prog, "%s: %s", path, q->diags);
  char *b = graph_text(q->prog);
  ck_assert_msg(strcmp(a, b) == 0, "%s: .graph -> .graph changed the text", path);
  PgStats s1 = pg_program_stats(p->prog), s2 = pg_program_stats(q->prog);
  ck_assert_uint_eq(s1.nodes, s2.nodes);
  ck_assert_uint_eq(s1.edges, s2.edges);
  /* DOT out and back in keeps the shape */
  char *dot;
  size_t n;
  FILE *f = open_memstream(&dot, &n);
  pg_dot_write(p->prog, f);
  fclose(f);
  Parsed *r = parse_text("back.dot", dot);
  ck_assert_msg(r->prog, "%s: %s", path, r->diags);
  PgStats s3 = pg_program_stats(r->prog);
  ck_assert_uint_eq(s1.nodes, s3.nodes);
  ck_assert_uint_eq(s1.edges, s3.edges);
  ck_assert_uint_eq(s1.graphs, s3.graphs);
  ck_assert_uint_eq(s1.kernels, s3.kernels);
  free(dot);
  free(a);
  free(b);
  free(text);
  parsed_free(p);
  parsed_free(q);
  parsed_free(r);
}

START_TEST(round_trips_are_fixed_points) {
  const char *const dirs[] = {"tests/corpus/cuda", "tests/corpus/torch", "tests/corpus/pgrt"};
  int files = 0;
  for (int d = 0; d < 3; d++) {
    DIR *dir = opendir(dirs[d]);
    ck_assert_ptr_nonnull(dir);
    for (struct dirent *e; (e = readdir(dir));) {
      size_t len = strlen(e->d_name);
      if (len < 4 || strcmp(e->d_name + len - 4, ".dot") != 0) continue;
      char path[512];
      snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
      fixed_point(path);
      files++;
    }
    closedir(dir);
  }
  ck_assert_int_eq(files, 25); /* a file fewer would be a file lost */
}
END_TEST

START_TEST(verbose_dump_golden_graph) {
  Run r = run_pgcc("--emit=graph", "tests/corpus/cuda/allkinds_verbose.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  char *want = slurp("tests/golden/allkinds_verbose.graph", NULL);
  ck_assert_ptr_nonnull(want);
  ck_assert_str_eq(r.out, want);
  free(want);
  run_free(&r);
}
END_TEST

/* .graph format 2: relocation kinds and don't-care bytes are read, written back to
 * the same bytes (tests/golden/relocs_v2.graph is pgcc's own output), and become
 * libpgrt relocation tables with their kinds; a version-1 file with by-value
 * pointers at 4-byte-aligned offsets reads and writes as it always did. */
/* A golden .graph that pgcc wrote: --emit=graph gives it back byte for byte.  Returns it
 * parsed (parsed_free it) and its text in *text (free it after). */
static Parsed *golden_round_trip(const char *path, char **text) {
  Run r = run_pgcc("--emit=graph", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(*text);
  ck_assert_str_eq(r.out, *text);
  run_free(&r);
  Parsed *p = parse_text(path, *text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  return p;
}

START_TEST(relocation_kinds_round_trip) {
  static const char *const files[] = {"tests/golden/relocs_v2.graph", "tests/golden/relocs_v1.graph"};
  for (int f = 0; f < 2; f++) {
    char *want;
    Parsed *p = golden_round_trip(files[f], &want);
    ck_assert_int_eq(p->prog->version, 2 - f);
    const PgKernel *k = p->prog->kernels.v[0];
    if (f == 0) {
      static const PgRelocKind kinds[] = {PG_RELOC_ABS64, PG_RELOC_ABS64, PG_RELOC_LO32, PG_RELOC_HI32,
                                          PG_RELOC_ABS64};
      static const uint32_t at[] = {0, 8, 56, 60, 20};
      ck_assert_uint_eq(k->params.v[0].ptrs.n, 5);
      for (int q = 0; q < 5; q++) {
        ck_assert_int_eq(k->params.v[0].ptrs.v[q].kind, kinds[q]);
        ck_assert_uint_eq(k->params.v[0].ptrs.v[q].offset, at[q]);
      }
      ck_assert_uint_eq(k->params.v[0].dontcare.n, 2);
      ck_assert_uint_eq(k->params.v[0].dontcare.v[1].offset, 28);
      ck_assert_uint_eq(k->params.v[0].dontcare.v[1].size, 8);
      k = p->prog->kernels.v[1]; /* the same layout as relocs_v1.graph's */
    }
    ck_assert_uint_eq(k->params.v[0].ptrs.n, 2);
    ck_assert_int_eq(k->params.v[0].ptrs.v[0].kind, PG_RELOC_ABS64);
    ck_assert_uint_eq(k->params.v[0].ptrs.v[0].offset, 4);
    ck_assert_uint_eq(k->params.v[0].dontcare.n, 0);
    parsed_free(p);
    free(want);
  }
  /* version 2 without its features is written as version 1, which every pgcc reads */
  Parsed *p = parse_text("v2.graph", "pgcc 2;\nkernel k symbol \"k\" { param 0 16 bytes ptrs [abs64 8]; }\n"
                                     "graph g { node a kernel k; }\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  char *text = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(text, "\npgcc 1;\n"));
  ck_assert_ptr_nonnull(strstr(text, "param 0 16 bytes ptrs [8];"));
  free(text);
  parsed_free(p);
  /* the C: each relocation with its kind and absolute offset; the don't-care bytes noted */
  Run r = run_pgcc("tests/golden/relocs_v2.graph", "-o", "-", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "{0, 0, 0, PGRT_RELOC_ABS64}, {8, 1, 0, PGRT_RELOC_ABS64}, "
                                      "{56, 1, 64, PGRT_RELOC_LO32}, {60, 1, 64, PGRT_RELOC_HI32}, "
                                      "{20, 0, 128, PGRT_RELOC_ABS64}, {72, 1, 64, PGRT_RELOC_ABS64}}"));
  ck_assert_ptr_nonnull(strstr(r.out, "/* don't care, never patched: bytes 28..36 (parameter 0) */"));
  ck_assert_ptr_nonnull(strstr(r.out, "{4, 0, 0, PGRT_RELOC_ABS64}, {24, 1, 0, PGRT_RELOC_ABS64}}"));
  /* node b runs in clusters of 2 blocks (read, written back above, and in its table) */
  ck_assert_ptr_nonnull(strstr(r.out, ".block = {256, 1, 1}, .cluster = {2, 1, 1}"));
  run_free(&r);
  /* and the report counts them */
  r = run_pgcc("--report", "tests/golden/relocs_v2.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "relocations in by-value parameters (kernel layouts): 5 abs64, 1 lo32, 1 hi32; "
                                      "2 runs of don't-care bytes (12 bytes), never patched\n"));
  run_free(&r);
}
END_TEST

START_TEST(driver_built_memcpy_records) {
  char *text = slurp("tests/corpus/pgrt/chain_region0.dot", NULL);
  Parsed *p = parse_text("r0.dot", text);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgNode *c = find_node(p->prog, "g1.n4");
  ck_assert_int_eq(c->kind, PG_MEMCPY);
  ck_assert_int_eq(c->u.memcpy.dir, PG_DIR_DEFAULT); /* unified addressing */
  ck_assert(c->u.memcpy.has_ptrs);
  ck_assert_uint_eq(c->u.memcpy.width, 16384);
  ck_assert_uint_eq(c->u.memcpy.src.buf->addr, 0x7F134BE10000ull);
  ck_assert_uint_eq(c->u.memcpy.dst.buf->addr, 0x7F134BE08000ull);
  parsed_free(p);
  free(text);
}
END_TEST

/* A graph libpgrt built (tests/gpu/codegen/loops.graph, on an H100): a child graph
 * and two conditional nodes, as the driver prints them, read back with their bodies. */
START_TEST(driver_built_child_and_conditional_nodes) {
  char *text = slurp("tests/corpus/pgrt/loops_region0.dot", NULL);
  Parsed *p = parse_text("loops.dot", text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  int child = 0, whiles = 0, ifs = 0;
  const PgGraph *root = p->prog->graphs.v[0];
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (n->kind == PG_CHILD) {
      child++;
      ck_assert_uint_eq(n->u.child.body->nodes.n, 2);
    }
    if (n->kind == PG_CONDITIONAL && n->u.cond.type == PG_COND_WHILE) {
      whiles++;
      ck_assert_uint_eq(n->u.cond.bodies.n, 1);
      ck_assert_uint_eq(n->u.cond.bodies.v[0]->nodes.n, 2);
    }
    if (n->kind == PG_CONDITIONAL && n->u.cond.type == PG_COND_IF) {
      ifs++;
      ck_assert_uint_eq(n->u.cond.bodies.n, 2);
    }
  }
  ck_assert_int_eq(child, 1);
  ck_assert_int_eq(whiles, 1);
  ck_assert_int_eq(ifs, 1);
  ck_assert_uint_eq(p->prog->graphs.n, 5);
  parsed_free(p);
  free(text);
}
END_TEST

/* tests/gpu/codegen/shapes.graph as libpgrt built it (H100): a 2-D copy between
 * intermediates as a memcpy node with its pitches, the copies and the memset whose
 * operands move as libpgrt's own kernels, and the host node. */
START_TEST(driver_built_pitched_copy_and_host_node) {
  char *text = slurp("tests/corpus/pgrt/shapes_region0.dot", NULL);
  Parsed *p = parse_text("shapes.dot", text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  const PgNode *c = find_node(p->prog, "g1.n5");
  ck_assert_int_eq(c->kind, PG_MEMCPY);
  ck_assert_uint_eq(c->u.memcpy.width, 192);
  ck_assert_uint_eq(c->u.memcpy.height, 64);
  ck_assert_uint_eq(c->u.memcpy.depth, 1);
  ck_assert_uint_eq(c->u.memcpy.src_pitch, 192);
  ck_assert_uint_eq(c->u.memcpy.dst_pitch, 256);
  ck_assert_int_eq(find_node(p->prog, "g1.n8")->kind, PG_HOST);
  int boxed = 0;
  const PgGraph *root = p->prog->graphs.v[0];
  for (size_t i = 0; i < root->nodes.n; i++) {
    const PgNode *n = root->nodes.v[i];
    if (n->kind == PG_KERNEL && strncmp(n->u.kernel.kernel->symbol, "pgrt_", 5) == 0) boxed++;
  }
  ck_assert_int_eq(boxed, 3);
  parsed_free(p);
  free(text);
}
END_TEST

/* Shape buckets (tests/golden/buckets.graph, pgcc's own output): dims with their values
 * and flags, shapes that name them, bucket scalars, a bucket switch; written back byte
 * for byte, in the version that says the rest (buckets raise no version). */
START_TEST(buckets_round_trip) {
  const char *path = "tests/golden/buckets.graph";
  char *want;
  Parsed *p = golden_round_trip(path, &want);
  const PgProgram *prog = p->prog;
  ck_assert_int_eq(prog->version, 1);
  ck_assert_int_eq(pg_graph_min_version(prog), 1);
  ck_assert_uint_eq(prog->dims.n, 2);
  const PgDim *B = prog->dims.v[0], *S = prog->dims.v[1];
  ck_assert_str_eq(B->name, "B");
  ck_assert(B->pad && !S->pad);
  ck_assert_uint_eq(B->values.n, 4);
  ck_assert_int_eq(B->values.v[3], 8);
  ck_assert_int_eq(pg_dim_max(S), 32);
  const PgNode *pick = find_node(prog, "pick");
  ck_assert_ptr_eq(B->node, pick);
  ck_assert_ptr_eq(pick->u.cond.dim, B);
  ck_assert_ptr_null(S->node); /* a dim no switch picks: only its scalar and a shape use it */
  const PgBuffer *x = prog->buffers.v[0], *w = prog->buffers.v[2], *seq = prog->buffers.v[4];
  ck_assert_ptr_nonnull(x->shape_dims);
  ck_assert_ptr_eq(x->shape_dims[0], B);
  ck_assert_ptr_null(x->shape_dims[1]);
  ck_assert_int_eq(x->shape.v[0], 8); /* the largest value, as the size says */
  ck_assert_ptr_null(w->shape_dims);
  ck_assert_ptr_eq(seq->shape_dims[0], S);
  ck_assert_ptr_eq(prog->scalars.v[0]->bucket, B);
  ck_assert_ptr_eq(prog->scalars.v[1]->bucket, S);
  ck_assert(!pg_scalar_is_read(prog->scalars.v[0]) && !prog->scalars.v[0]->is_input);
  ck_assert_uint_eq(pg_program_stats(prog).dims, 2);
  parsed_free(p);
  free(want);
  Run r = run_pgcc("--stats", path, NULL);
  ck_assert_str_eq(r.out, "nodes=11 edges=6 graphs=5 kernels=10 dims=2 \n");
  run_free(&r);
}
END_TEST

/* NCCL collectives (tests/golden/collectives.graph, pgcc's own output): a comm, the
 * three collectives with their attributes and a generic libcall beside them; written
 * back byte for byte, as version 1 (comms raise no version); the report names each
 * collective with its bytes and its predicted time. */
START_TEST(collectives_round_trip) {
  const char *path = "tests/golden/collectives.graph";
  char *want;
  Parsed *p = golden_round_trip(path, &want);
  const PgProgram *prog = p->prog;
  ck_assert_int_eq(pg_graph_min_version(prog), 1);
  ck_assert_uint_eq(prog->comms.n, 1);
  ck_assert_str_eq(prog->comms.v[0]->name, "world");
  ck_assert_uint_eq(prog->comms.v[0]->ranks, 2);
  const PgCollective *ar = find_node(prog, "ar0")->u.libcall.coll, *ag = find_node(prog, "ag")->u.libcall.coll,
                     *rs = find_node(prog, "rs")->u.libcall.coll;
  ck_assert_ptr_nonnull(ar);
  ck_assert_int_eq(ar->kind, PG_COLL_ALLREDUCE);
  ck_assert_ptr_eq(ar->comm, prog->comms.v[0]);
  ck_assert_uint_eq(ar->send.offset, 256);
  ck_assert_ptr_eq(ar->send.buf, ar->recv.buf);
  ck_assert_uint_eq(ar->count, 4096);
  ck_assert_int_eq(ar->dtype, PG_T_F32);
  ck_assert_int_eq(ar->op, PG_OP_SUM);
  ck_assert_uint_eq(pg_coll_bytes(ar, false), 16384);
  ck_assert_int_eq(ag->kind, PG_COLL_ALLGATHER); /* recv is count * ranks */
  ck_assert_uint_eq(pg_coll_bytes(ag, false), 8192);
  ck_assert_uint_eq(pg_coll_bytes(ag, true), 16384);
  ck_assert_int_eq(rs->kind, PG_COLL_REDUCESCATTER); /* send is count * ranks */
  ck_assert_uint_eq(pg_coll_bytes(rs, false), 16384);
  ck_assert_uint_eq(pg_coll_bytes(rs, true), 8192);
  ck_assert_int_eq(rs->op, PG_OP_AVG);
  const PgNode *mm = find_node(prog, "mm");
  ck_assert_ptr_null(mm->u.libcall.coll);
  ck_assert_uint_eq(mm->u.libcall.args.n, 3);
  parsed_free(p);
  free(want);
  Run r = run_pgcc("--report", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  /* the H200 profile's 10.78 us of latency and 2 * (2-1)/2 * 16384 bytes at 274.3 GB/s: 10.84 us */
  ck_assert_ptr_nonnull(strstr(r.out, "collective ar0: ncclAllReduce on comm world (2 ranks), 4096 f32 per rank, "
                                      "16.00 KiB sent, predicted 10.8 us (region 0)\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "collective rs: ncclReduceScatter on comm world (2 ranks), 2048 f32 per rank"));
  run_free(&r);
}
END_TEST

/* Module globals (tests/golden/module_globals.graph, pgcc's own output; make
 * check-codegen compiles its C): each module's globals in order, written back byte for
 * byte as version 2 (from its own directory, so that the module paths are the ones it
 * gives); the C holds each global's bytes and a table per module that the module's
 * entry points to.  A library module beside them has none, and the report counts no
 * relocations: globals are no by-value parameters. */
START_TEST(module_globals_round_trip) {
  const char *path = "tests/golden/module_globals.graph";
  char *want = slurp(path, NULL);
  ck_assert_ptr_nonnull(want);
  Parsed *p = parse_text(path, want);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  char *got;
  size_t n;
  FILE *f = open_memstream(&got, &n);
  pg_graph_write(p->prog, f, "tests/golden");
  fclose(f);
  ck_assert_str_eq(got, want);
  free(got);
  const PgProgram *prog = p->prog;
  ck_assert_int_eq(prog->version, 2);
  ck_assert_int_eq(pg_graph_min_version(prog), 2);
  ck_assert_uint_eq(prog->modules.n, 3);
  const PgModule *dw0 = prog->modules.v[0], *lt = prog->modules.v[1], *kn = prog->modules.v[2];
  ck_assert_uint_eq(dw0->globals.n, 3);
  ck_assert_str_eq(dw0->globals.v[1].name, "CONV_STRIDE_SIZE");
  ck_assert_uint_eq(dw0->globals.v[1].size, 4);
  ck_assert_uint_eq(dw0->globals.v[1].bytes[0], 2);
  ck_assert_uint_eq(dw0->globals.v[2].size, 24);
  ck_assert_uint_eq(dw0->globals.v[2].bytes[23], 0x80);
  ck_assert_uint_eq(lt->globals.n, 0);
  ck_assert_uint_eq(kn->globals.n, 1);
  ck_assert_str_eq(kn->globals.v[0].name, "scale");
  parsed_free(p);
  free(want);

  Run r = run_pgcc("-o", "-", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  static const char *const c[] = {
      "static const unsigned char module_globals_module_0_global_0[4] = {\n    0x03, 0x00, 0x00, 0x00\n};\n",
      "static const unsigned char module_globals_module_0_global_2[24] = {\n"
      "    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,\n"
      "    0x10, 0x11, 0x12, 0x13, 0xfd, 0xfe, 0xff, 0x80\n};\n",
      "static const pgrt_global module_globals_module_0_globals[3] = {\n"
      "    {.name = \"WINDOW_SIZE\", .bytes = module_globals_module_0_global_0, .size = sizeof "
      "module_globals_module_0_global_0},\n",
      "    {.name = \"_ZN5cudnn6detail6paramsE\", .bytes = module_globals_module_0_global_2, .size = sizeof "
      "module_globals_module_0_global_2},\n};\n",
      "{.name = \"dw0\", .kind = PGRT_MOD_CUBIN, .image = module_globals_module_0, .size = sizeof "
      "module_globals_module_0,\n     .globals = module_globals_module_0_globals, .global_count = 3},\n",
      "{.name = \"lt\", .kind = PGRT_MOD_LIBRARY, .library = \"libcublasLt.so.13\"},\n",
      "{.name = \"kernels\", .kind = PGRT_MOD_CUDA, .image = module_globals_module_2, .size = sizeof "
      "module_globals_module_2,\n     .globals = module_globals_module_2_globals, .global_count = 1},\n",
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) ck_assert_msg(strstr(r.out, c[i]), "no '%s' in the C", c[i]);
  run_free(&r);
  r = run_pgcc("--report", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_null(strstr(r.out, "relocations in by-value parameters"));
  run_free(&r);
}
END_TEST

/* A module's bytes as the generated C holds them (emit_c.c, string literals): decoded as C
 * reads them -- adjacent literals joined, three-digit octal escapes, every other byte as
 * it stands -- they are the module file's bytes, and no "??" appears in them (a trigraph
 * under -std=c11).  The module holds every byte value and those that need escaping
 * (tests/codegen/module_bytes.graph; check-codegen compiles its C with gcc and clang). */
START_TEST(module_bytes_literal) {
  size_t want_n;
  unsigned char *want = (unsigned char *)slurp("tests/modules/escapes.cubin", &want_n);
  ck_assert_ptr_nonnull(want);
  Run r = run_pgcc("-o", "-", "tests/codegen/module_bytes.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char decl[64];
  snprintf(decl, sizeof decl, "module_bytes_module_0[%zu] =", want_n);
  const char *at = strstr(r.out, decl);
  ck_assert_msg(at, "no '%s' in the C", decl);
  at += strlen(decl);
  unsigned char *got = malloc(want_n + 16);
  size_t n = 0;
  for (; *at && *at != ';'; at++) {
    if (*at != '"') continue; /* (between literals: white space) */
    for (at++; *at != '"'; at++) {
      ck_assert_msg(!(at[0] == '?' && at[1] == '?'), "a trigraph could begin at byte %zu", n);
      ck_assert_msg(*at != '\n' && *at, "a literal is not closed");
      ck_assert_uint_lt(n, want_n + 16);
      if (*at == '\\') {
        ck_assert_msg(at[1] >= '0' && at[1] <= '3' && at[2] >= '0' && at[2] <= '7' && at[3] >= '0' && at[3] <= '7',
                      "byte %zu: an escape other than three octal digits: %.6s", n, at);
        got[n++] = (unsigned char)((at[1] - '0') * 64 + (at[2] - '0') * 8 + (at[3] - '0'));
        at += 3;
      } else {
        got[n++] = (unsigned char)*at;
      }
    }
  }
  ck_assert_uint_eq(n, want_n);
  ck_assert_msg(memcmp(got, want, n) == 0, "the literal's bytes are not the module's");
  free(got);
  free(want);
  run_free(&r);
}
END_TEST

/* Staging (compiler/stage.c; tests/codegen/staged_*.graph, whose C make check-codegen
 * builds against libpgrt): a collective on a per-call buffer goes through arena buffers
 * of its own.  For each program: the report's line says it is staged, through how many
 * bytes and why, and the JSON says staged; the .graph pgcc writes holds the copies (dtod,
 * as wide as the collective reads and writes), the collective on the staging buffers,
 * the chain pred -> copy in -> collective -> copy out -> succ in the node order, and is
 * staged no further; the C copies between the caller's buffer and the arena buffer.  A
 * collective on the arena (tests/gpu/codegen/allreduce.graph) is not staged. */
typedef struct {
  const char *file, *node;
  const char *in_src, *in_dst, *out_src, *out_dst; /* the copies' buffers */
  uint64_t in_width, out_width;
  const char *pred, *succ; /* the collective's neighbours in the input, or NULL */
  const char *why;         /* the report line's end */
  uint64_t stage_bytes;
} StageCase;

static size_t buffer_index(const PgProgram *p, const char *name) {
  for (size_t i = 0; i < p->buffers.n; i++)
    if (strcmp(p->buffers.v[i]->name, name) == 0) return i;
  ck_abort_msg("no buffer '%s'", name);
  return 0;
}

START_TEST(staged_collectives) {
  static const StageCase cases[] = {
      {"tests/codegen/staged_allreduce.graph", "ar", "x", "ar_send", "ar_recv", "y", 16384, 16384, NULL, "k1",
       "staged through 32.00 KiB of arena (its send buffer 'x' and recv buffer 'y' are per call)\n", 32768},
      {"tests/codegen/staged_inplace.graph", "ar", "y", "ar_stage", "ar_stage", "y", 16384, 16384, "k0", "k1",
       "staged through 16.00 KiB of arena (in place on 'y', a per-call buffer)\n", 16384},
      {"tests/codegen/staged_allgather.graph", "ag", "x", "ag_send", "ag_recv", "g", 16384, 32768, NULL, "k1",
       "staged through 48.00 KiB of arena (its send buffer 'x' and recv buffer 'g' are per call)\n", 49152},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const StageCase *sc = &cases[i];
    char want[512];

    Run r = run_pgcc("--report", sc->file, NULL);
    ck_assert_msg(r.status == 0, "%s: %s", sc->file, r.err);
    snprintf(want, sizeof want, "\ncollective %s: ", sc->node);
    const char *line = strstr(r.out, want);
    ck_assert_msg(line, "%s: no collective line:\n%s", sc->file, r.out);
    const char *end = strchr(line + 1, '\n') + 1, *at = strstr(line, sc->why);
    ck_assert_msg(at && at + strlen(sc->why) == end, "%s: wanted the line to end '%s':\n%s", sc->file, sc->why, r.out);
    run_free(&r);

    r = run_pgcc("--report=json", sc->file, NULL);
    ck_assert_msg(r.status == 0, "%s: %s", sc->file, r.err);
    json_error_t jerr;
    json_t *root = json_loads(r.out, 0, &jerr), *colls = json_object_get(root, "collectives");
    ck_assert_msg(root && json_array_size(colls) == 1, "%s: %s", sc->file, jerr.text);
    json_t *c0 = json_array_get(colls, 0);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "node")), sc->node);
    ck_assert(json_is_true(json_object_get(c0, "staged")));
    ck_assert_int_eq(json_integer_value(json_object_get(c0, "stage_bytes")), (json_int_t)sc->stage_bytes);
    json_decref(root);
    run_free(&r);

    r = run_pgcc("--emit=graph", sc->file, NULL);
    ck_assert_msg(r.status == 0, "%s: %s", sc->file, r.err);
    Parsed *p = parse_text("staged.graph", r.out);
    ck_assert_msg(p->prog && p->diag.errors == 0, "%s: %s\n%s", sc->file, p->diags, r.out);
    const PgProgram *prog = p->prog;
    const PgGraph *g = prog->graphs.v[0];
    char name[64];
    const PgNode *n = find_node(prog, sc->node);
    snprintf(name, sizeof name, "%s_in", sc->node);
    const PgNode *in = find_node(prog, name);
    snprintf(name, sizeof name, "%s_out", sc->node);
    const PgNode *out = find_node(prog, name);
    ck_assert_msg(n && in && out, "%s:\n%s", sc->file, r.out);
    const PgNode *copies[2] = {in, out};
    const char *src[2] = {sc->in_src, sc->out_src}, *dst[2] = {sc->in_dst, sc->out_dst};
    const uint64_t width[2] = {sc->in_width, sc->out_width};
    for (int k = 0; k < 2; k++) {
      const PgNode *m = copies[k];
      ck_assert_int_eq(m->kind, PG_MEMCPY);
      ck_assert_int_eq(m->u.memcpy.dir, PG_DIR_DTOD);
      ck_assert(m->u.memcpy.has_ptrs && !m->u.memcpy.pageable);
      ck_assert_str_eq(m->u.memcpy.src.buf->name, src[k]);
      ck_assert_str_eq(m->u.memcpy.dst.buf->name, dst[k]);
      ck_assert_uint_eq(m->u.memcpy.src.offset, 0);
      ck_assert_uint_eq(m->u.memcpy.dst.offset, 0);
      ck_assert_uint_eq(m->u.memcpy.width, width[k]);
      ck_assert_uint_eq(m->u.memcpy.height * m->u.memcpy.depth, 1);
    }
    const PgCollective *c = n->u.libcall.coll;
    ck_assert_str_eq(c->send.buf->name, sc->in_dst);
    ck_assert_str_eq(c->recv.buf->name, sc->out_src);
    ck_assert_uint_eq(pg_coll_bytes(c, false), sc->in_width);
    ck_assert_uint_eq(pg_coll_bytes(c, true), sc->out_width);
    uint64_t total = 0;
    for (size_t b = 0; b < prog->buffers.n; b++) {
      const PgBuffer *buf = prog->buffers.v[b];
      if (buf != c->send.buf && buf != c->recv.buf) continue;
      ck_assert_int_eq(buf->role, PG_ROLE_INTERMEDIATE);
      ck_assert_int_eq(buf->dtype, c->dtype);
      total += buf->size;
    }
    ck_assert_uint_eq(total, sc->stage_bytes);
    /* the chain, in the node order and by the edges */
    ck_assert_uint_eq(in->index + 1, n->index);
    ck_assert_uint_eq(n->index + 1, out->index);
    ck_assert_uint_eq(in->nsucc, 1);
    ck_assert_ptr_eq(pg_succs(in)[0], n);
    ck_assert_uint_eq(n->npred, 1);
    ck_assert_uint_eq(n->nsucc, 1);
    ck_assert_ptr_eq(pg_succs(n)[0], out);
    ck_assert_uint_eq(out->npred, 1);
    ck_assert_uint_eq(in->npred, sc->pred ? 1 : 0);
    if (sc->pred) ck_assert_str_eq(pg_preds(in)[0]->name, sc->pred);
    ck_assert_uint_eq(out->nsucc, 1);
    ck_assert_str_eq(pg_succs(out)[0]->name, sc->succ);
    ck_assert(pg_graph_in_order(g));
    ck_assert_uint_eq(pg_stage_collectives(p->prog), 0); /* on the arena now: nothing more to stage */
    run_free(&r);

    /* the C: the staging buffers in the arena, the copies between them and the caller's */
    r = run_pgcc("-o", "-", sc->file, NULL);
    ck_assert_msg(r.status == 0, "%s: %s", sc->file, r.err);
    snprintf(want, sizeof want, "{.name = \"%s\", .size = %" PRIu64 ", .kind = PGRT_BUF_ARENA, ", sc->in_dst,
             c->send.buf->size);
    ck_assert_msg(strstr(r.out, want), "%s: no '%s'", sc->file, want);
    for (int k = 0; k < 2; k++) {
      snprintf(want, sizeof want, "{.kind = PGRT_NODE_MEMCPY, .origin = \"%s\", .src = %zu, .src_offset = 0, "
               ".dst = %zu, .dst_offset = 0, .bytes = %" PRIu64, copies[k]->name, buffer_index(prog, src[k]),
               buffer_index(prog, dst[k]), width[k]);
      const char *entry = strstr(r.out, want);
      ck_assert_msg(entry && strchr(",}", entry[strlen(want)]), "%s: no '%s'", sc->file, want);
    }
    snprintf(want, sizeof want, ".src = %zu, .src_offset = 0, .dst = %zu, .dst_offset = 0, .count = %" PRIu64,
             buffer_index(prog, sc->in_dst), buffer_index(prog, sc->out_src), c->count);
    ck_assert_msg(strstr(r.out, want), "%s: no '%s'", sc->file, want);
    run_free(&r);
    parsed_free(p);
  }

  Run r = run_pgcc("--report=json", "tests/gpu/codegen/allreduce.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "\"region\": 0, \"staged\": false, \"stage_bytes\": 0, "));
  run_free(&r);
  r = run_pgcc("--report", "tests/gpu/codegen/allreduce.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "collective ar0: "));
  ck_assert_ptr_null(strstr(r.out, "staged"));
  run_free(&r);
}
END_TEST

/* A stream capture of four launches on two streams (tests/gpu/dotin/capture.c, H100):
 * its C takes each kernel node's arguments at init, and says which node each is by
 * its DOT id, which numbers the nodes in capture order. */
START_TEST(captured_dot_lists_kernel_origins) {
  Run r = run_pgcc("--calls=1000000", "--module=tests/gpu/codegen/chain.cu", "-o", "-",
                   "tests/corpus/pgrt/captured.dot", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "enum { captured_KERNEL_ARG_NODES = 4 };"));
  const char *list = strstr(r.out, "captured_kernel_arg_origins[captured_KERNEL_ARG_NODES] = {");
  ck_assert_ptr_nonnull(list);
  const char *at[4];
  for (int k = 0; k < 4; k++) {
    char id[32];
    snprintf(id, sizeof id, "\"graph_1_node_%d\"", k);
    at[k] = strstr(list, id);
    ck_assert_msg(at[k], "%s is not listed", id);
  }
  ck_assert(at[3] > at[0] && at[3] > at[2] && at[2] > at[1]); /* the order they run in */
  run_free(&r);
}
END_TEST

/* The exports made on an H100 by tests/gpu/fixtures.py (bf16 Llama-style decoder,
 * cuDNN convnet): they read as format version 2, with don't-care bytes the exporter
 * proved irrelevant by replay, and library kernels: cuBLAS's GEMMs as module images
 * the exporter saw load (the decoder), cuDNN's from its library's fatbins (the
 * convnet). */
START_TEST(exported_fixtures_read) {
  static const char *const files[] = {"tests/corpus/export/llama_tiny_bf16/llama_tiny_bf16.graph",
                                      "tests/corpus/export/convnet_tiny/convnet_tiny.graph"};
  static const char *const libs[] = {NULL, "libcudnn_engines_precompiled.so.9"}; /* NULL: module images */
  for (int f = 0; f < 2; f++) {
    char *text = slurp(files[f], NULL);
    ck_assert_ptr_nonnull(text);
    Parsed *p = parse_text(files[f], text);
    ck_assert_msg(p->prog && p->diag.errors == 0, "%s: %s", files[f], p->diags);
    ck_assert_int_eq(p->prog->version, 2);
    size_t dontcare = 0, library = 0;
    for (size_t k = 0; k < p->prog->kernels.n; k++) {
      const PgKernel *kn = p->prog->kernels.v[k];
      for (size_t q = 0; q < kn->params.n; q++) dontcare += kn->params.v[q].dontcare.n;
      library += kn->module && (libs[f] ? kn->module->kind == PG_MOD_LIBRARY && strcmp(kn->module->library, libs[f]) == 0
                                        : strncmp(kn->module->name, "image_", 6) == 0);
    }
    ck_assert_msg(dontcare > 0 && library > 0, "%s: %zu don't-care runs, %zu kernels from %s", files[f], dontcare,
                  library, libs[f] ? libs[f] : "module images");
    parsed_free(p);
    Run r = run_pgcc("--emit=graph", files[f], NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "pgcc 2;\n"));
    ck_assert_ptr_nonnull(strstr(r.out, " dontcare ["));
    run_free(&r);
    free(text);
  }
}
END_TEST

/* The exports of programs that read a value back half-way (tests/gpu/breaks_export.py, made on
 * an H100).  item_mlp's kernel after the read takes the value (a scalar read from the
 * host buffer): its report shows the synchronisation as an eager region between two
 * graph regions.  branch's value only chose the path: both paths are in the export, an
 * IF/ELSE node whose condition a kernel sets on the device, all in one graph region. */
START_TEST(host_read_fixtures_report_their_regions) {
  Run r = run_pgcc("--report", "tests/corpus/export/item_mlp/item_mlp.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  const char *eager = strstr(r.out, "  eager ");
  ck_assert_msg(eager && strstr(eager, "host operation 'sync'"), "no eager region with the sync:\n%s", r.out);
  ck_assert_msg(strstr(r.out, "     0  graph ") && strstr(r.out, "     2  graph "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "read scalars v0_f64 (f64 from r0)"), "%s", r.out);
  run_free(&r);

  r = run_pgcc("--report", "tests/corpus/export/branch/branch.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "     0  graph ") && !strstr(r.out, "     1  "), "one graph region:\n%s", r.out);
  ck_assert_msg(strstr(r.out, "conditional node 'nif0' (if over 2 bodies): the device picks what runs"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "in 3 graphs") && !strstr(r.out, "sync"), "%s", r.out);
  run_free(&r);
}
END_TEST

/* The export of a 2-layer MLP with batch buckets 1, 2, 4 (tests/gpu/buckets_export.py, made on an
 * H100): one program whose root is the bucket switch and its setter, one body per
 * bucket with that bucket's own kernels; the report lists every bucket, and the arena
 * is the largest bucket's, not the buckets' sum. */
START_TEST(bucket_fixture_reports_every_bucket) {
  const char *path = "tests/corpus/export/mlp_tiny/mlp_tiny.graph";
  Run r = run_pgcc("--report", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  static const char *const lines[] = {"  bucket batch=1: body bucket_1, ", "  bucket batch=2: body bucket_2, ",
                                      "  bucket batch=4: body bucket_4, "};
  for (int k = 0; k < 3; k++) ck_assert_msg(strstr(r.out, lines[k]), "no line '%s':\n%s", lines[k], r.out);
  ck_assert_msg(strstr(r.out, "dim batch (pad: 1, 2, 4)") && !strstr(r.out, "bucket batch=8"), "%s", r.out);
  run_free(&r);

  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text(path, text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  PgProgram *prog = p->prog;
  ck_assert_uint_eq(prog->dims.n, 1);
  ck_assert_uint_eq(prog->graphs.v[0]->nodes.n, 2); /* the setter and the switch */
  uint64_t sum = 0, largest = 0;
  for (size_t i = 0; i < prog->buffers.n; i++) {
    const PgBuffer *b = prog->buffers.v[i];
    if (b->role != PG_ROLE_INTERMEDIATE && b->role != PG_ROLE_WORKSPACE) continue;
    sum += b->size;
    if (strncmp(b->name, "b4_", 3) == 0) largest += b->size;
  }
  Run j = run_pgcc("--report=json", path, NULL);
  ck_assert_msg(j.status == 0, "%s", j.err);
  const char *total = strstr(j.out, "\"weights_bytes\": "); /* the program's, after the buckets' own */
  ck_assert_ptr_nonnull(total);
  const char *arena = strstr(total, "\"arena_bytes\": ");
  ck_assert_ptr_nonnull(arena);
  unsigned long long planned = strtoull(arena + strlen("\"arena_bytes\": "), NULL, 10);
  ck_assert_msg(planned >= largest && planned < sum, "arena %llu: bucket 4's intermediates %llu, all %llu", planned,
                (unsigned long long)largest, (unsigned long long)sum);
  run_free(&j);
  parsed_free(p);
  free(text);
}
END_TEST

Suite *corpus_suite(void) {
  Suite *s = suite_create("corpus");
  TCase *t = tcase_create("corpus");
  tcase_add_loop_test(t, torch_capture_matches_driver_walk, 0, NTORCH);
  tcase_add_test(t, cuda_allkinds_under_every_flag);
  tcase_add_test(t, round_trips_are_fixed_points);
  tcase_add_test(t, verbose_dump_golden_graph);
  tcase_add_test(t, driver_built_child_and_conditional_nodes);
  tcase_add_test(t, driver_built_memcpy_records);
  tcase_add_test(t, relocation_kinds_round_trip);
  tcase_add_test(t, buckets_round_trip);
  tcase_add_test(t, driver_built_pitched_copy_and_host_node);
  tcase_add_test(t, collectives_round_trip);
  tcase_add_test(t, module_globals_round_trip);
  tcase_add_test(t, module_bytes_literal);
  tcase_add_test(t, staged_collectives);
  tcase_add_test(t, captured_dot_lists_kernel_origins);
  tcase_add_test(t, exported_fixtures_read);
  tcase_add_test(t, host_read_fixtures_report_their_regions);
  tcase_add_test(t, bucket_fixture_reports_every_bucket);
  suite_add_tcase(s, t);
  return s;
}

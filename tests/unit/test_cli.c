/* test_cli.c -- the command line: options, exit statuses, outputs */
#include "../helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(stats_line_exact) {
  Run r = run_pgcc("--stats", "tests/corpus/cuda/allkinds_verbose.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "nodes=16 edges=14 graphs=3 kernels=5 \n");
  ck_assert_str_eq(r.err, "");
  run_free(&r);
}
END_TEST

START_TEST(help_and_version) {
  Run r = run_pgcc("--help", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "usage: pgcc [options] INPUT"));
  run_free(&r);
  r = run_pgcc("-h", NULL);
  ck_assert_int_eq(r.status, 0);
  run_free(&r);
  r = run_pgcc("--version", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "pgcc " PGCC_VERSION " (.graph format 3)\n");
  run_free(&r);
}
END_TEST

START_TEST(usage_errors_exit_2) {
  static const char *const cases[][3] = {
      {"--bogus", "tests/corpus/cuda/allkinds_default.dot", "unknown option '--bogus'"},
      {"--emit=pdf", "tests/corpus/cuda/allkinds_default.dot", "unknown --emit kind 'pdf'"},
      {"--max-errors=x", "tests/corpus/cuda/allkinds_default.dot", "bad --max-errors 'x'"},
      {"--stats", NULL, "no input file"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Run r = run_pgcc(cases[i][0], cases[i][1], NULL);
    ck_assert_msg(r.status == 2, "%s: exit %d", cases[i][0], r.status);
    ck_assert_msg(strstr(r.err, cases[i][2]), "%s: %s", cases[i][0], r.err);
    run_free(&r);
  }
  Run r = run_pgcc("a.dot", "b.dot", NULL);
  ck_assert_int_eq(r.status, 2);
  run_free(&r);
  r = run_pgcc("-o", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "needs an argument"));
  run_free(&r);
}
END_TEST

START_TEST(emit_graph_to_file_and_stdout_agree) {
  Run a = run_pgcc("--emit=graph", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_int_eq(a.status, 0);
  system("mkdir -p build/test-out");
  Run b = run_pgcc("--emit=graph", "-o", "build/test-out/mlp.graph", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_int_eq(b.status, 0);
  ck_assert_str_eq(b.out, "");
  char *file = slurp("build/test-out/mlp.graph", NULL);
  ck_assert_str_eq(file, a.out);
  free(file);
  /* the .graph reads back with the same stats, detected by content */
  Run c = run_pgcc("--stats", "build/test-out/mlp.graph", NULL);
  ck_assert_str_eq(c.out, "nodes=16 edges=15 graphs=1 kernels=16 \n");
  run_free(&a);
  run_free(&b);
  run_free(&c);
}
END_TEST

START_TEST(emit_dot_renders_clusters) {
  Run r = run_pgcc("--emit=dot", "tests/corpus/cuda/allkinds_verbose.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "subgraph cluster_1 {"));
  ck_assert_ptr_nonnull(strstr(r.out, "subgraph cluster_4 {"));
  ck_assert_ptr_nonnull(strstr(r.out, "{True|graph_4}"));
  run_free(&r);
}
END_TEST

/* NAME_info and the self-describing header (make check-info compiles and runs the
 * tables too): each field's role, dtype, shape and offset, a weight's tensor. */
START_TEST(c_emission_info) {
  Run r = run_pgcc("tests/corpus/export/mlp_small/mlp_small.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "  CUdeviceptr in0; /* input: f32 [1, 256], 1024 bytes */\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "  CUdeviceptr w_layers_0_weight; /* weight: f32 [256, 256], 262144 bytes; tensor "
                                      "\"layers.0.weight\" of mlp_small.safetensors (mlp_small_load_w) */\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "const pgrt_program_info *mlp_small_info(void);\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "static const int64_t mlp_small_shape_a0[] = {1, 256};\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "    {.name = \"out0\", .role = PGRT_FIELD_OUTPUT, .dtype = \"f32\", .ndim = 2, "
                                      ".shape = mlp_small_shape_a1,\n     .offset = offsetof(mlp_small_args, out0), "
                                      ".size = 1024},\n"));
  ck_assert_ptr_nonnull(strstr(r.out, ".offset = offsetof(mlp_small_weights, w_layers_1_bias), .size = 1024, "
                                      ".tensor = \"layers.1.bias\"},\n"));
  ck_assert_ptr_nonnull(strstr(r.out, ".args_size = sizeof(mlp_small_args), .n_args = 2, .args = mlp_small_arg_fields,"));
  ck_assert_ptr_nonnull(strstr(r.out, ".n_weights = 4, .weights = mlp_small_weight_fields,"));
  ck_assert_ptr_nonnull(strstr(r.out, "const pgrt_program_info *mlp_small_info(void) { return &mlp_small_info_table; }"));
  run_free(&r);
  /* role unknown is inout; scalars and host functions; no fields: NULL */
  r = run_pgcc("tests/codegen/info_roles.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "{.name = \"t\", .role = PGRT_FIELD_INOUT, .dtype = \"\", .ndim = -1,\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "{.name = \"h\", .role = PGRT_FIELD_SCALAR, .dtype = \"f16\", .ndim = 0,\n"
                                      "     .offset = offsetof(info_roles_args, h), .size = 2},"));
  ck_assert_ptr_nonnull(strstr(r.out, "  uint16_t h; /* scalar: f16, by value on every call (its bits); argument of "
                                      "kernel node first, second, third */"));
  ck_assert_ptr_nonnull(strstr(r.out, ".role = PGRT_FIELD_HOST_FN, .dtype = \"\", .ndim = -1,\n     .offset = "
                                      "offsetof(info_roles_args, note), .size = sizeof(pgrt_host_fn)},"));
  run_free(&r);
  r = run_pgcc("tests/codegen/halves.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, ".weights_size = sizeof(halves_weights), .n_weights = 0, .weights = NULL,"));
  run_free(&r);
}
END_TEST

START_TEST(c_emission) {
  /* the default: C, with the API named after the input */
  Run r = run_pgcc("examples/saxpy.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "pgrt_status saxpy_run(pgrt_ctx *ctx, const saxpy_args *args, CUstream stream)"));
  /* each node's origin: its line in the input the file's header names */
  ck_assert_ptr_nonnull(strstr(r.out, "generated by pgcc " PGCC_VERSION " from examples/saxpy.graph."));
  ck_assert_ptr_nonnull(strstr(r.out, "/* 1, line 23 */"));
  run_free(&r);
  r = run_pgcc("--name=my_model", "examples/saxpy.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "my_model_init("));
  run_free(&r);
  r = run_pgcc("--name=9lives", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 2);
  run_free(&r);
  /* child graphs and conditional nodes: their bodies follow the root's nodes, the
   * kernels that set a condition carry its handle */
  r = run_pgcc("tests/gpu/codegen/loops.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "{.kind = PGRT_NODE_CHILD, .origin = \"feat\", .body = 0, .body_count = 1"));
  ck_assert_ptr_nonnull(strstr(r.out, ".kind = PGRT_NODE_CONDITIONAL, .origin = \"branch\", .cond_type = PGRT_COND_IF, "
                                      ".condition = 1,\n     .body = 2, .body_count = 2 /* double, negate */"));
  ck_assert_ptr_nonnull(strstr(r.out, "static const pgrt_cond_ref loops_conds_4[] = {{8, 1}};"));
  ck_assert_ptr_nonnull(strstr(r.out, "{.first = 6, .count = 2}, /* 0: graph features, body of feat */"));
  ck_assert_ptr_nonnull(strstr(r.out, "{.name = \"more\", .default_value = 1}, /* tested by loop */"));
  ck_assert_ptr_nonnull(strstr(r.out, ".nodes = loops_nodes, .node_count = 12,"));
  run_free(&r);
  /* DOT input without launch dimensions: located errors, no output */
  r = run_pgcc("tests/corpus/cuda/allkinds_default.dot", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_str_eq(r.out, "");
  ck_assert_ptr_nonnull(strstr(r.err, "tests/corpus/cuda/allkinds_default.dot:4:1: error: node 'g1.n0': no launch "
                                      "dimensions given"));
  run_free(&r);
  /* a real capture: its kernels' arguments come from the caller, their code from --module */
  r = run_pgcc("--module=tests/gpu/codegen/chain.cu", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "enum { mlp_compiled_KERNEL_ARG_NODES = 16 };"));
  ck_assert_ptr_nonnull(strstr(r.out, ".caller_args = 1"));
  ck_assert_ptr_nonnull(strstr(r.out, ".kind = PGRT_MOD_CUDA"));
  ck_assert_ptr_null(strstr(r.err, "warning")); /* there is a module to look in */
  run_free(&r);
  r = run_pgcc("--module=README.md", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "--module 'README.md': expected a .cubin, .fatbin, .ptx or .cu file"));
  run_free(&r);
}
END_TEST

/* Shape buckets in C (tests/golden/buckets.graph): a size field per dim, first in the
 * call's arguments, each dim's contract and its values as defines; buffers described at
 * the largest value; bucket scalars in the slots after the read ones, with the dim each
 * holds; NAME_run passes the sizes; the info tables name the dims. */
START_TEST(c_emission_buckets) {
  Run r = run_pgcc("tests/golden/buckets.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  static const char *const want[] = {
      "typedef struct {\n  int64_t B; /* size of dim B: 1..8; runs the smallest of the buckets 1, 2, 4, 8 that holds "
      "it (pad: pass inputs of the bucket's size, entries past B any finite values; outputs hold the bucket's size, "
      "the first B are the answer); another size fails with PGRT_ERR_BUCKET */\n  int64_t S; /* size of dim S: one of "
      "16, 32 (exact: the bucket of that size runs); another size fails with PGRT_ERR_BUCKET */\n",
      "  CUdeviceptr x; /* input: f32 [B, 64], 256 bytes per unit of B, 2048 at the largest bucket */",
      "  CUdeviceptr seq; /* inout (role unknown: read, written or both): f32 [S], 4 bytes per unit of S, 128 at the "
      "largest bucket */",
      " *   B: 1, 2, 4, 8 (pad: a size between them runs the smallest bucket that holds it;",
      " *   S: 16, 32 (exact: only these sizes run)",
      "#define buckets_DIM_B_VALUES {1, 2, 4, 8}\n#define buckets_DIM_B_BUCKETS 4\n"
      "#define buckets_DIM_S_VALUES {16, 32}\n#define buckets_DIM_S_BUCKETS 2\n",
      "static const pgrt_scalar_ref buckets_scalars_0[] = {{8, 4, 0}};", /* bi: slot 0, no per-call or read scalars */
      "static const pgrt_scalar_ref buckets_scalars_2[] = {{0, 4, 1}};", /* si */
      "static const int buckets_bucket_dims[] = {0 /* bi */, 1 /* si */};",
      "{.name = \"B\", .n_values = 4, .values = buckets_dim_values_0, .pad = 1}, /* picked by switch pick */",
      "{.name = \"S\", .n_values = 2, .values = buckets_dim_values_1, .pad = 0}, /* no switch */",
      ".dims = buckets_dims, .dim_count = 2,\n    .bucket_dims = buckets_bucket_dims, .bucket_count = 2,\n};",
      "  const int64_t sizes[2] = {args->B, args->S};\n  return pgrt_run(ctx, bound, NULL, NULL, NULL, sizes, stream);",
      " * PGRT_ERR_BUCKET: a size fits no bucket of its dim (see above); nothing was queued. */",
      "{.name = \"S\", .role = PGRT_FIELD_SIZE, .dtype = \"i64\", .ndim = 0,\n     .offset = offsetof(buckets_args, S), "
      ".size = 8},",
      "static const int buckets_shape_a2_dims[] = {1};",
      ".shape = buckets_shape_a0, .shape_dims = buckets_shape_a0_dims,",
      "    .n_dims = 2, .dims = buckets_dims,\n};",
      "#define buckets_ARENA_BYTES UINT64_C(2048)",
  };
  for (size_t k = 0; k < sizeof want / sizeof *want; k++) ck_assert_msg(strstr(r.out, want[k]), "missing: %s", want[k]);
  ck_assert_ptr_null(strstr(r.out, "args->bi")); /* a bucket scalar is no field */
  ck_assert_ptr_null(strstr(r.out, ".bucket_dim =")); /* its root region holds more than the switch and its setter */
  run_free(&r);
  /* a region of only the switch and its setter: marked, and run as a graph per bucket
   * where the cost model says so (--calls), as a switch otherwise */
  r = run_pgcc("tests/gpu/codegen/buckets.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "{.graph = 1, .first = 0, .count = 2,\n     .bucket_dim = 1, .bucket_graphs = 1}, "));
  ck_assert_ptr_nonnull(strstr(r.out, "; bucket switch pick: one graph per bucket ("));
  run_free(&r);
  r = run_pgcc("--calls=1", "tests/gpu/codegen/buckets.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "{.graph = 1, .first = 0, .count = 2,\n     .bucket_dim = 1}, "));
  ck_assert_ptr_nonnull(strstr(r.out, "; bucket switch pick: the switch ("));
  /* without dims: no sizes, no dims in the tables */
  run_free(&r);
  r = run_pgcc("examples/saxpy.graph", NULL);
  ck_assert_ptr_null(strstr(r.out, "PGRT_ERR_BUCKET"));
  ck_assert_ptr_null(strstr(r.out, ".dims"));
  run_free(&r);
}
END_TEST

/* Host reads in C (tests/codegen/hostreads.graph): host buffers are libpgrt's, not
 * fields; read scalars take the slots after the per-call ones, in a table that says
 * where each comes from; a callback scalar is a field, passed to pgrt_run; a guard
 * carries its buffer, bytes and reason; the header gives each host buffer's index. */
START_TEST(c_emission_host_reads) {
  Run r = run_pgcc("tests/codegen/hostreads.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  static const char *const want[] = {
      "{.name = \"flag_host\", .size = 4, .kind = PGRT_BUF_HOST, .slot = 1}, /* host: pinned, allocated by libpgrt */",
      "{.name = \"nflag\", .type = PGRT_DT_F32, .buffer = 5, .from = PGRT_DT_I32, .callback = -1}, /* slot 3: the "
      "first element of host buffer flag_host */",
      "{.name = \"bias\", .type = PGRT_DT_F32, .buffer = -1, .callback = 0}, /* slot 2: args->bias */",
      "{.name = \"h\", .type = PGRT_DT_F32, .buffer = 6, .from = PGRT_DT_BF16, .callback = -1},",
      ".reads = hostreads_reads, .read_count = 4, .callback_slots = 1,",
      ".scalar_slots = 1,",
      /* k2: count (per call), mx and bias (read); k3, in a child graph: h and nflag */
      "static const pgrt_scalar_ref hostreads_scalars_5[] = {{0, 4, 0}, {4, 4, 1}, {8, 4, 2}};",
      "static const pgrt_scalar_ref hostreads_scalars_9[] = {{0, 4, 0}, {4, 4, 4}, {8, 4, 3}};",
      "static const unsigned char hostreads_expect_4[4] = {0x01, 0x00, 0x00, 0x00};",
      "{.kind = PGRT_NODE_GUARD, .origin = \"g\", .buffer = 5 /* flag_host */, .expect = hostreads_expect_4, "
      ".expect_len = 4,\n     .reason = \"flag chose a branch at model.py:5\"",
      "{.kind = PGRT_NODE_SYNC, .origin = \"s2\"}",
      "  const pgrt_scalar_fn callbacks[1] = {args->bias};\n  return pgrt_run(ctx, bound, scalars, NULL, callbacks, NULL, stream);",
      "  pgrt_scalar_fn bias; /* callback scalar: f32; called after each host synchronization with the host buffers "
      "(hostreads_HOST_*), it writes the f32's bits into the low 4 bytes of *value and returns 0 (nonzero fails the "
      "call: PGRT_ERR_ARGUMENT); required; argument of kernel node k2 */",
      "#define hostreads_HOST_m_host 0 /* f32 [2], 8 bytes; scalar mx is its first element */\n"
      "#define hostreads_HOST_flag_host 1 /* i32 [], 4 bytes; scalar nflag is its first element; guard g expects "
      "01000000 */\n#define hostreads_HOST_h_host 2 /* bf16 [], 2 bytes; scalar h is its first element */\n"
      "#define hostreads_HOST_BUFFERS 3\n",
      " * PGRT_ERR_GUARD: a guard found that a value read on the host is not the one it was",
      "{.name = \"bias\", .role = PGRT_FIELD_SCALAR_FN, .dtype = \"f32\", .ndim = 0,\n     .offset = "
      "offsetof(hostreads_args, bias), .size = sizeof(pgrt_scalar_fn)},",
  };
  for (size_t k = 0; k < sizeof want / sizeof *want; k++) ck_assert_msg(strstr(r.out, want[k]), "missing: %s", want[k]);
  ck_assert_ptr_null(strstr(r.out, "CUdeviceptr m_host")); /* not a field */
  ck_assert_ptr_null(strstr(r.out, "args->mx"));
  run_free(&r);
  /* without host reads, no callbacks and no guard in the contract */
  r = run_pgcc("examples/saxpy.graph", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "return pgrt_run(ctx, bound, scalars, NULL, NULL, NULL, stream);"));
  ck_assert_ptr_null(strstr(r.out, "PGRT_ERR_GUARD"));
  ck_assert_ptr_null(strstr(r.out, "_HOST_BUFFERS"));
  run_free(&r);
}
END_TEST

/* f16 and bf16 literals: rounded to nearest, ties to even, as the GPU's cvt.rn does
 * (shapes.graph checks some of them against it on a GPU); bytes 4-7 of each node's
 * parameters are the f16 and the bf16, little-endian. */
START_TEST(half_literals_round_to_nearest_even) {
  Run r = run_pgcc("tests/codegen/halves.graph", "-o", "-", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  static const char *const want[] = {
      "0xcd, 0x34, 0xcd, 0x3d", /* 0.3, 0.1 */
      "0x00, 0x3c, 0x80, 0x3f", /* 1 + 2^-11 and 1 + 2^-8: halfway, to the even 1.0 */
      "0x02, 0x3c, 0x82, 0x3f", /* 1 + 3 * 2^-11 and 1 + 3 * 2^-8: halfway, up to the even one */
      "0x00, 0x7c, 0x80, 0x7f", /* 65520 and 3.4e38: past the largest finite: infinity */
      "0xff, 0x7b, 0x7e, 0xff", /* 65519: the largest f16; -3.38e38 */
      "0x01, 0x00, 0x01, 0x00", /* the least subnormals: 2^-24, 1e-40 */
      "0x00, 0x00, 0x00, 0x80", /* 2^-25: halfway to zero; -0.0 */
      "0x00, 0x04, 0x00, 0x40", /* (1023.5) * 2^-24: up to the least normal; 2 */
  };
  for (int k = 0; k < 8; k++) {
    char head[96];
    snprintf(head, sizeof head, "halves_params_%d[32] = {0x00, 0x00, 0x00, 0x00, %s,", k, want[k]);
    ck_assert_msg(strstr(r.out, head), "node %d: expected %s", k, head);
  }
  run_free(&r);
}
END_TEST

/* --arch names the target for input that names none; modules must run on it */
START_TEST(arch_option_checks_modules) {
  Run r = run_pgcc("--arch=sm_90", "--module=tests/modules/sm_90.cubin", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, ".arch = \"sm_90\""));
  run_free(&r);
  r = run_pgcc("--arch=sm_90", "--module=tests/modules/sm_80.cubin", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_str_eq(r.out, "");
  ck_assert_ptr_nonnull(strstr(r.err, "error: module 'module0': 'tests/modules/sm_80.cubin' holds code for sm_80 "
                                      "(SASS), none of which runs on sm_90"));
  run_free(&r);
  r = run_pgcc("--arch=sm_90", "--module=tests/modules/sm_80_ptx80.fatbin", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err); /* its PTX runs anywhere after sm_80 */
  run_free(&r);
  r = run_pgcc("--arch=sm_86", "--module=tests/modules/sm_80.cubin", "tests/corpus/torch/mlp_compiled.dot", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err); /* SASS runs on later minor versions */
  run_free(&r);
  r = run_pgcc("--arch=gfx90a", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 2);
  run_free(&r);
  r = run_pgcc("--arch=sm_80", "examples/saxpy.graph", NULL); /* saxpy.graph says sm_90 */
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "examples/saxpy.graph:4:6: error: the input's architecture is sm_90, but --arch "
                                      "says sm_80"));
  run_free(&r);
}
END_TEST

/* The output gets the mode any new file gets (0666 less the umask), not the
 * temporary file's 0600. */
START_TEST(output_file_mode) {
  char dir[] = "/tmp/pgcc-mode-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char out[64];
  snprintf(out, sizeof out, "%s/saxpy.c", dir);
  mode_t old = umask(022);
  Run r = run_pgcc("-o", out, "examples/saxpy.graph", NULL);
  umask(old);
  ck_assert_msg(r.status == 0, "%s", r.err);
  struct stat st;
  ck_assert_int_eq(stat(out, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0644);
  run_free(&r);
  unlink(out);
  snprintf(out, sizeof out, "%s/saxpy.h", dir);
  unlink(out);
  rmdir(dir);
}
END_TEST

START_TEST(max_errors_limits_output) {
  Run r = run_pgcc("--max-errors=1", "tests/malformed/graph_several_errors.graph", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "too many errors (1), stopping"));
  ck_assert_ptr_null(strstr(r.err, "sideways"));
  run_free(&r);
}
END_TEST

START_TEST(examples_read_and_are_honest) {
  Run r = run_pgcc("--stats", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "nodes=3 edges=2 graphs=1 kernels=1 \n");
  run_free(&r);
  r = run_pgcc("--stats", "examples/allkinds.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  run_free(&r);
  /* the module hash in saxpy.graph is the hash of saxpy.cu */
  FILE *p = popen("sha256sum examples/saxpy.cu", "r");
  ck_assert_ptr_nonnull(p);
  char hash[65] = {0};
  ck_assert_int_eq(fscanf(p, "%64s", hash), 1);
  pclose(p);
  char *text = slurp("examples/saxpy.graph", NULL);
  ck_assert_ptr_nonnull(strstr(text, hash));
  free(text);
}
END_TEST

/* -o to something that is not a regular file writes into it rather than renaming a
 * temporary over it (which, as root, would replace /dev/null with a file). */
START_TEST(output_to_a_device_or_fifo) {
  struct stat before, after;
  ck_assert_int_eq(stat("/dev/null", &before), 0);
  Run r = run_pgcc("--emit=graph", "-o", "/dev/null", "tests/corpus/cuda/allkinds_default.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_int_eq(stat("/dev/null", &after), 0);
  ck_assert(S_ISCHR(after.st_mode));
  ck_assert_uint_eq(after.st_ino, before.st_ino);
  run_free(&r);
  system("mkdir -p build/test-out");
  r = run_pgcc("--emit=graph", "-o", "build/test-out", "tests/corpus/cuda/allkinds_default.dot", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "is a directory"));
  run_free(&r);
}
END_TEST

/* Module files are found relative to the .graph file, and written relative to
 * where the new .graph goes, so that it reads back (hash included) from there. */
START_TEST(module_paths_follow_the_output) {
  Run r = run_pgcc("--emit=graph", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "module kernels cuda file \"examples/saxpy.cu\" sha256 \"81bd8d5c"));
  run_free(&r);
  system("mkdir -p build/test-out/deeper");
  r = run_pgcc("--emit=graph", "-o", "build/test-out/deeper/saxpy.graph", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  run_free(&r);
  char *text = slurp("build/test-out/deeper/saxpy.graph", NULL);
  ck_assert_ptr_nonnull(strstr(text, "file \"../../../examples/saxpy.cu\""));
  free(text);
  r = run_pgcc("--stats", "build/test-out/deeper/saxpy.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
}
END_TEST

/* ---- gcc's conventions: standard input, outputs that appear together or not at all ---- */

/* Runs pgcc with the file at `path` as its standard input (fd 0 and stdin). */
static Run run_with_stdin(const char *path, const char *a1, const char *a2, const char *a3, const char *a4) {
  int saved = dup(0), fd = open(path, O_RDONLY);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(dup2(fd, 0), 0);
  close(fd);
  Run r = run_pgcc(a1, a2, a3, a4, NULL);
  ck_assert_int_eq(dup2(saved, 0), 0);
  close(saved);
  return r;
}

/* How many entries of dir hold `part` in their names. */
static int entries_with(const char *dirname, const char *part) {
  DIR *dir = opendir(dirname);
  ck_assert_ptr_nonnull(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) n += strstr(e->d_name, part) != NULL;
  closedir(dir);
  return n;
}

/* `-` as INPUT is standard input, named <stdin> in diagnostics and the C; the API is
 * named after the output. */
START_TEST(dash_reads_standard_input) {
  Run r = run_with_stdin("tests/golden/buckets.graph", "--stats", "-", NULL, NULL);
  Run f = run_pgcc("--stats", "tests/golden/buckets.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_str_eq(r.out, f.out);
  run_free(&f);
  run_free(&r);
  r = run_with_stdin("tests/malformed/graph_duplicate_node.graph", "--stats", "-", NULL, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strncmp(r.err, "<stdin>:4:8: error: node 'a' is already declared\n", 49) == 0, "%s", r.err);
  run_free(&r);
  r = run_with_stdin("tests/corpus/torch/mlp_compiled.dot", "--module=tests/gpu/codegen/chain.cu", "-", NULL, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, " * stdin.c -- generated by pgcc " PGCC_VERSION " from <stdin>. Do not edit."));
  run_free(&r);
  system("mkdir -p build/test-out");
  r = run_with_stdin("tests/corpus/torch/mlp_compiled.dot", "--module=tests/gpu/codegen/chain.cu", "-o",
                     "build/test-out/from_stdin.c", "-");
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *c = slurp("build/test-out/from_stdin.c", NULL), *h = slurp("build/test-out/from_stdin.h", NULL);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_nonnull(h);
  ck_assert_ptr_nonnull(strstr(c, "pgrt_status from_stdin_run("));
  ck_assert_ptr_nonnull(strstr(h, "pgrt_status from_stdin_run("));
  free(c), free(h);
  run_free(&r);
}
END_TEST

/* `-o -` is standard output: the .graph there is the one written to a file, and no
 * file named '-' appears; the C there is one file (no header: the .c declares its API). */
START_TEST(dash_output_is_standard_output) {
  unlink("-");
  Run a = run_pgcc("--emit=graph", "-o", "-", "examples/saxpy.graph", NULL);
  Run b = run_pgcc("--emit=graph", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(a.status, 0);
  ck_assert_str_eq(a.out, b.out);
  ck_assert(!file_exists("-"));
  run_free(&a), run_free(&b);
  a = run_pgcc("-o", "-", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(a.status, 0);
  ck_assert_ptr_nonnull(strstr(a.out, "pgrt_status saxpy_run(pgrt_ctx *ctx, const saxpy_args *args, CUstream stream)"));
  ck_assert_ptr_null(strstr(a.out, "#ifndef saxpy_H"));
  ck_assert(!file_exists("-"));
  run_free(&a);
}
END_TEST

/* An output that cannot be written is named as the user gave it: -o X.c in a missing
 * directory names X.c (not the X.h beside it); a header that cannot be written is
 * named with the .c it goes beside, and then the .c does not appear either. */
START_TEST(write_errors_name_the_given_path) {
  Run r = run_pgcc("-o", "/nonexistent/dir/out.c", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_str_eq(r.err, "pgcc: error: cannot write '/nonexistent/dir/out.c': No such file or directory\n");
  run_free(&r);
  r = run_pgcc("--emit=graph", "-o", "/dev/full", "examples/saxpy.graph", NULL); /* a full disk */
  ck_assert_int_eq(r.status, 1);
  ck_assert_str_eq(r.err, "pgcc: error: cannot write '/dev/full': No space left on device\n");
  run_free(&r);
  char dir[] = "/tmp/pgcc-hdir-XXXXXX", c[64], h[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(c, sizeof c, "%s/p.c", dir);
  snprintf(h, sizeof h, "%s/p.h", dir);
  ck_assert_int_eq(mkdir(h, 0755), 0);
  r = run_pgcc("-o", c, "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "p.h' (the header beside '"));
  ck_assert_ptr_nonnull(strstr(r.err, "p.c'): is a directory"));
  ck_assert(!file_exists(c));
  ck_assert_int_eq(entries_with(dir, ".tmp."), 0);
  run_free(&r);
  rmdir(h), rmdir(dir);
}
END_TEST

/* The hook below makes X.c's rename fail: a directory appears at X.c after both
 * temporaries are written.  Then X.h, renamed first, is put back as it was. */
static char blocker[64];
static void block_the_c(void) { ck_assert_int_eq(mkdir(blocker, 0755), 0); }

START_TEST(outputs_appear_together_or_not_at_all) {
  char dir[] = "/tmp/pgcc-pair-XXXXXX", c[64], h[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(c, sizeof c, "%s/p.c", dir);
  snprintf(h, sizeof h, "%s/p.h", dir);
  snprintf(blocker, sizeof blocker, "%s", c);
  for (int old_header = 0; old_header < 2; old_header++) {
    if (old_header) {
      FILE *f = fopen(h, "w");
      fputs("old header\n", f);
      fclose(f);
    }
    pgcc_test_hook_before_rename = block_the_c;
    Run r = run_pgcc("-o", c, "examples/saxpy.graph", NULL);
    pgcc_test_hook_before_rename = NULL;
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "p.c': Is a directory"), "%s", r.err);
    char *text = slurp(h, NULL);
    if (old_header)
      ck_assert_str_eq(text, "old header\n"); /* the new X.h was undone */
    else
      ck_assert_ptr_null(text); /* there was none: there is none */
    free(text);
    ck_assert_int_eq(entries_with(dir, ".tmp."), 0);
    ck_assert_int_eq(entries_with(dir, ".old."), 0);
    run_free(&r);
    rmdir(c);
  }
  /* and without the hook both appear, replacing the old header */
  Run r = run_pgcc("-o", c, "examples/saxpy.graph", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *text = slurp(h, NULL);
  ck_assert_ptr_nonnull(strstr(text, "#ifndef saxpy_H"));
  free(text);
  ck_assert(file_exists(c));
  ck_assert_int_eq(entries_with(dir, ".old."), 0);
  run_free(&r);
  unlink(c), unlink(h), rmdir(dir);
}
END_TEST

/* SIGTERM or SIGINT while the temporaries exist removes them, and the process then
 * dies of the signal.  Deterministic: the child pgcc stops in the hook, after both
 * temporaries are written, and says so through a pipe before the signal is sent. */
static int ready_fd = -1;
static void stop_here(void) {
  ck_assert_int_eq(write(ready_fd, "r", 1), 1);
  for (;;) pause();
}

START_TEST(signal_removes_temporaries) {
  static const int sigs[] = {SIGTERM, SIGINT};
  for (int k = 0; k < 2; k++) {
    char dir[] = "/tmp/pgcc-sig-XXXXXX", c[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(c, sizeof c, "%s/p.c", dir);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      ready_fd = fds[1];
      signal(SIGINT, SIG_DFL); /* whatever the test runner's were */
      signal(SIGTERM, SIG_DFL);
      pgcc_test_hook_before_rename = stop_here;
      char *argv[] = {"pgcc", "-o", c, "tests/golden/buckets.graph", NULL};
      FILE *null = fopen("/dev/null", "w");
      _exit(pgcc_main(4, argv, null, null) + 100); /* not reached */
    }
    close(fds[1]);
    char byte;
    ck_assert_int_eq(read(fds[0], &byte, 1), 1);
    close(fds[0]);
    ck_assert_int_eq(entries_with(dir, ".tmp."), 2); /* p.c.tmp.* and p.h.tmp.* */
    ck_assert_int_eq(kill(pid, sigs[k]), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sigs[k], "status %#x", status);
    ck_assert_int_eq(entries_with(dir, "p."), 0); /* no temporary, no output */
    ck_assert_int_eq(rmdir(dir), 0);
  }
  /* in this process, after a run, the dispositions are what they were */
  struct sigaction before, after;
  sigaction(SIGTERM, NULL, &before);
  system("mkdir -p build/test-out");
  Run r = run_pgcc("-o", "build/test-out/sig.c", "examples/saxpy.graph", NULL);
  ck_assert_int_eq(r.status, 0);
  sigaction(SIGTERM, NULL, &after);
  ck_assert(after.sa_handler == before.sa_handler);
  run_free(&r);
}
END_TEST

Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *t = tcase_create("cli");
  tcase_add_test(t, stats_line_exact);
  tcase_add_test(t, help_and_version);
  tcase_add_test(t, usage_errors_exit_2);
  tcase_add_test(t, emit_graph_to_file_and_stdout_agree);
  tcase_add_test(t, emit_dot_renders_clusters);
  tcase_add_test(t, c_emission);
  tcase_add_test(t, c_emission_info);
  tcase_add_test(t, c_emission_host_reads);
  tcase_add_test(t, half_literals_round_to_nearest_even);
  tcase_add_test(t, max_errors_limits_output);
  tcase_add_test(t, arch_option_checks_modules);
  tcase_add_test(t, output_file_mode);
  tcase_add_test(t, examples_read_and_are_honest);
  tcase_add_test(t, c_emission_buckets);
  tcase_add_test(t, output_to_a_device_or_fifo);
  tcase_add_test(t, module_paths_follow_the_output);
  tcase_add_test(t, dash_reads_standard_input);
  tcase_add_test(t, dash_output_is_standard_output);
  tcase_add_test(t, write_errors_name_the_given_path);
  tcase_add_test(t, outputs_appear_together_or_not_at_all);
  tcase_add_test(t, signal_removes_temporaries);
  suite_add_tcase(s, t);
  return s;
}

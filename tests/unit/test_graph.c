/* test_graph.c -- the .graph reader and writer */
#include "../helpers.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A program that uses every statement and every kind of argument. */
static const char full[] =
    "# a test program\n"
    "pgcc 1;\n"
    "arch sm_90;\n"
    "module m cuda file \"examples/saxpy.cu\";\n"
    "module lt library library \"libcublasLt.so.13\";\n"
    "kernel scale symbol \"_Z5scalePffi\" module m {\n"
    "  param 0 8 ptr;\n  param 8 4 f32;\n  param 12 4 i32;\n  param 16 24 bytes ptrs [0, 16];\n}\n"
    "kernel gemv symbol \"gemv\" module lt;\n"
    "buffer x size 4096 align 256 role input dtype f32 shape [1, 1024];\n"
    "buffer graph size 4096 role output;\n" /* no reserved words: a buffer may be called graph */
    "buffer w size 8192 role weight;\n"
    "scalar n type i32 input;\n"
    "scalar alpha type f32 value 2.5;\n"
    "event e;\n"
    "graph main {\n"
    "  node k kernel scale grid [4] block [256, 1] smem 16 args [x+64, alpha, n, [\"" /* 24 bytes */
    "000000000000000001000000000000000000000000000000\", w, null]] origin \"graph_1_node_0\";\n"
    "  node node memcpy dir dtod src x dst graph width 4096;\n"
    "  node s memset dst w value 255 elem 4 width 1024 height 2;\n"
    "  node c child body sub;\n"
    "  node r event_record event e;\n"
    "  node q conditional type while handle 3 bodies [loop];\n"
    "  node l libcall fn \"cublasLtMatmul\" args [w, 1, -2.5e3];\n"
    "  node h hostop op sync reason \"the host reads \\\"y\\\"\";\n"
    "  node o opaque what \"BATCH_MEM_OP\";\n"
    "  k -> node;\n  node -> s;\n  s -> c;\n  c -> r;\n  r -> q;\n  q -> l;\n  l -> h;\n  h -> o;\n"
    "}\n"
    "graph sub { node g kernel gemv; }\n"
    "graph loop { node z empty; }\n";

START_TEST(reads_every_statement) {
  Parsed *p = parse_text("t.graph", full);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgProgram *prog = p->prog;
  ck_assert_str_eq(prog->arch, "sm_90");
  ck_assert_uint_eq(prog->modules.n, 2);
  ck_assert_int_eq(prog->modules.v[1]->kind, PG_MOD_LIBRARY);
  ck_assert_str_eq(prog->modules.v[1]->library, "libcublasLt.so.13");
  const PgKernel *k = prog->kernels.v[0];
  ck_assert(k->has_layout);
  ck_assert_uint_eq(k->params.n, 4);
  ck_assert_int_eq(k->params.v[3].type, PG_T_BYTES);
  ck_assert_uint_eq(k->params.v[3].ptrs.n, 2);
  ck_assert_uint_eq(k->params.v[3].ptrs.v[1].offset, 16);
  ck_assert_int_eq(k->params.v[3].ptrs.v[1].kind, PG_RELOC_ABS64);
  ck_assert(!prog->kernels.v[1]->has_layout);
  ck_assert_uint_eq(prog->buffers.v[0]->shape.n, 2);
  ck_assert_int_eq(prog->buffers.v[0]->shape.v[1], 1024);
  ck_assert(prog->scalars.v[0]->is_input);
  ck_assert_str_eq(prog->scalars.v[1]->value, "2.5");

  PgNode *n = find_node(prog, "k");
  ck_assert_uint_eq(n->u.kernel.block[1], 1);
  ck_assert_uint_eq(n->u.kernel.args.n, 4);
  ck_assert_int_eq(n->u.kernel.args.v[0].kind, PG_ARG_PTR);
  ck_assert_uint_eq(n->u.kernel.args.v[0].ptr.offset, 64);
  ck_assert_int_eq(n->u.kernel.args.v[1].kind, PG_ARG_SCALAR);
  ck_assert_int_eq(n->u.kernel.args.v[3].kind, PG_ARG_BYTES);
  ck_assert_ptr_null(n->u.kernel.args.v[3].ptrs.v[1].buf);
  ck_assert_str_eq(pg_node_origin(n), "graph_1_node_0");
  ck_assert_ptr_eq(find_node(prog, "node")->u.memcpy.dst.buf, prog->buffers.v[1]);
  ck_assert_ptr_eq(find_node(prog, "c")->u.child.body, prog->graphs.v[1]);
  ck_assert_int_eq(find_node(prog, "q")->u.cond.type, PG_COND_WHILE);
  ck_assert_int_eq(find_node(prog, "l")->u.libcall.args.v[2].kind, PG_ARG_FLOAT);
  ck_assert_str_eq(find_node(prog, "h")->u.hostop.reason, "the host reads \"y\"");
  PgStats s = pg_program_stats(prog);
  ck_assert_uint_eq(s.nodes, 11);
  ck_assert_uint_eq(s.edges, 8);
  ck_assert_uint_eq(s.graphs, 3);
  ck_assert_uint_eq(s.kernels, 2);
  parsed_free(p);
}
END_TEST

START_TEST(write_read_write_is_a_fixed_point) {
  Parsed *p = parse_text("t.graph", full);
  ck_assert_msg(p->prog, "%s", p->diags);
  char *a = graph_text(p->prog);
  Parsed *q = parse_text("t2.graph", a);
  ck_assert_msg(q->prog, "%s\n%s", q->diags, a);
  char *b = graph_text(q->prog);
  ck_assert_str_eq(a, b);
  ck_assert_ptr_nonnull(strstr(a, "  node k kernel scale grid [4, 1, 1] block [256, 1, 1] smem 16 args [x+64, alpha, n, "));
  free(a);
  free(b);
  parsed_free(p);
  parsed_free(q);
}
END_TEST

START_TEST(bodies_may_come_later_edges_anywhere) {
  Parsed *p = parse_text("t.graph", "pgcc 1;\ngraph a {\n  x -> y;\n  node x child body b;\n  node y empty;\n}\n"
                                   "graph b { node z empty; }\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  ck_assert_uint_eq(p->prog->graphs.v[0]->edges.n, 1);
  parsed_free(p);
}
END_TEST

/* Edges are looked up in batches; more edges than a batch, one of them naming a
 * node declared only after it, keep statement order in the graph's edge list. */
START_TEST(many_edges_keep_statement_order) {
  size_t cap = 1 << 16, len = 0;
  char *t = malloc(cap);
  len += (size_t)snprintf(t + len, cap - len, "pgcc 1;\ngraph g {\n");
  for (int i = 0; i < 700; i++) len += (size_t)snprintf(t + len, cap - len, " node n%d empty;", i);
  for (int i = 0; i < 600; i++) {
    int from = i == 300 ? 0 : i, to = i == 300 ? 700 : i + 1; /* n700 comes after its edge */
    len += (size_t)snprintf(t + len, cap - len, " n%d -> n%d;", from, to);
  }
  snprintf(t + len, cap - len, " node n700 empty;\n}\n");
  Parsed *p = parse_text("t.graph", t);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgGraph *g = p->prog->graphs.v[0];
  ck_assert_uint_eq(g->edges.n, 600);
  for (size_t i = 0; i < 600; i++) {
    ck_assert_uint_eq(g->edges.v[i].from->index, i == 300 ? 0 : i);
    ck_assert_uint_eq(g->edges.v[i].to->index, i == 300 ? 700 : i + 1);
  }
  parsed_free(p);
  free(t);
}
END_TEST

static void expect_error(const char *text, const char *msg) {
  Parsed *p = parse_text("e.graph", text);
  ck_assert_msg(!p->prog || p->diag.errors > 0, "accepted: %s", text);
  ck_assert_msg(strstr(p->diags, msg), "wanted '%s', got:\n%s", msg, p->diags);
  parsed_free(p);
}

START_TEST(statement_errors) {
  expect_error("pgcc 1;\nbuffer x role input;\ngraph g { node n empty; }\n",
               "e.graph:2:1: error: buffer needs attribute 'size'");
  expect_error("pgcc 1;\nbuffer x size 1 size 2;\ngraph g { node n empty; }\n",
               "e.graph:2:17: error: buffer: attribute 'size' given twice");
  expect_error("pgcc 1;\nbuffer x size \"big\";\ngraph g { node n empty; }\n",
               "e.graph:2:15: error: buffer: attribute 'size' expects a number, found a string");
  expect_error("pgcc 1;\ngraph g { node n warp; }\n", "e.graph:2:18: error: node needs a kind");
  expect_error("pgcc 1;\ngraph g { node n kernel nope; }\n", "e.graph:2:25: error: unknown kernel 'nope'");
  expect_error("pgcc 1;\ngraph g { node n empty; }\nnode m empty;\n",
               "e.graph:3:1: error: a node belongs inside a graph block");
  expect_error("pgcc 1;\ngraph g { graph h { } }\n", "e.graph:2:11: error: blocks do not nest");
  expect_error("pgcc 1;\nkernel k symbol \"f\" { param 0 8 vec4; }\ngraph g { node n empty; }\n",
               "e.graph:2:33: error: unknown type 'vec4'");
  expect_error("pgcc 1;\nscalar n type i32;\nbuffer n size 4;\ngraph g { node q empty; }\n",
               "e.graph:3:8: error: buffer or scalar 'n' is already declared");
  expect_error("pgcc 1;\ngraph g { node n conditional type maybe bodies [g]; }\n",
               "error: unknown conditional type 'maybe'");
  expect_error("pgcc 1;\ngraph g { node n child body g; }\n",
               "error: graph 'g' is the root graph (the first one), so it cannot be a body");
  expect_error("digraph {}", "e.graph:1:1: error: no graph in the dump");
  expect_error("pgcc 1;\n", "e.graph:2:1: error: no graph in the file");
  expect_error("pgcc 1;\ngraph g { node n memset value 1 width 4 height 1x; }\n", "malformed number '1x'");
}
END_TEST

/* Conditions: declared, tested by one conditional node, passed to kernels as u64;
 * written back as read. */
static const char *const COND_PROGRAM =
    "pgcc 1;\n"
    "kernel setc symbol \"setc\" {\n  param 0 8 u64;\n  param 8 4 u32;\n}\n"
    "condition more default 1;\n"
    "graph main {\n"
    "  node s kernel setc grid [1] block [1] smem 0 args [more, 3];\n"
    "  node loop conditional type while condition more bodies [body];\n"
    "  s -> loop;\n"
    "}\n"
    "graph body {\n"
    "  node again kernel setc grid [1] block [1] smem 0 args [more, 0];\n"
    "}\n";

START_TEST(conditions_read_and_write) {
  Parsed *p = parse_text("c.graph", COND_PROGRAM);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  ck_assert_uint_eq(p->prog->conditions.n, 1);
  PgCondition *k = p->prog->conditions.v[0];
  ck_assert_uint_eq(k->default_value, 1);
  ck_assert_ptr_eq(k->node, find_node(p->prog, "loop"));
  ck_assert_ptr_eq(find_node(p->prog, "loop")->u.cond.condition, k);
  PgNode *again = find_node(p->prog, "again");
  ck_assert_int_eq(again->u.kernel.args.v[0].kind, PG_ARG_COND);
  ck_assert_ptr_eq(again->u.kernel.args.v[0].cond, k);
  char *text = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(text, "condition more default 1;\n"));
  ck_assert_ptr_nonnull(strstr(text, "node loop conditional type while condition more bodies [body];"));
  ck_assert_ptr_nonnull(strstr(text, "args [more, 0]"));
  Parsed *q = parse_text("again.graph", text); /* and reads back to the same text */
  ck_assert_msg(q->prog && q->diag.errors == 0, "%s", q->diags);
  char *again_text = graph_text(q->prog);
  ck_assert_str_eq(text, again_text);
  free(text), free(again_text);
  parsed_free(q);
  parsed_free(p);
}
END_TEST

START_TEST(condition_errors) {
  expect_error("pgcc 1;\ncondition c default 1;\ngraph g { node n empty; }\n",
               "e.graph:2:11: error: condition 'c' is tested by no conditional node");
  expect_error("pgcc 1;\ngraph g { node n conditional type if condition c bodies [b]; }\ngraph b { node e empty; }\n",
               "e.graph:2:48: error: unknown condition 'c'");
  expect_error("pgcc 1;\ncondition c;\ngraph g {\n  node n conditional type if condition c bodies [b];\n"
               "  node m conditional type if condition c bodies [d];\n}\ngraph b { node e empty; }\n"
               "graph d { node f empty; }\n",
               "e.graph:5:40: error: condition 'c' is already tested by node 'n'");
  expect_error("pgcc 1;\nbuffer c size 4;\ncondition c;\ngraph g { node n empty; }\n",
               "e.graph:3:11: error: buffer, scalar or condition 'c' is already declared");
  /* a condition is a u64 argument, not a pointer */
  expect_error("pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; }\ncondition c;\n"
               "graph g {\n  node s kernel k grid [1] block [1] args [c];\n"
               "  node n conditional type if condition c bodies [b];\n}\ngraph b { node e empty; }\n",
               "e.graph:5:44: error: argument 0 of node 's' does not fit parameter 0 of kernel 'k' (ptr, 8 bytes)");
  /* the handle belongs to the conditional's graph: a kernel elsewhere cannot set it */
  expect_error("pgcc 1;\nkernel k symbol \"k\" { param 0 8 u64; }\ncondition c;\n"
               "graph g {\n  node n conditional type if condition c bodies [b];\n  node w child body x;\n}\n"
               "graph b { node e empty; }\ngraph x {\n  node i conditional type if condition d bodies [y];\n}\n"
               "graph y { node s kernel k grid [1] block [1] args [c]; }\ncondition d;\n",
               "unknown condition 'd'");
  expect_error("pgcc 1;\nkernel k symbol \"k\" { param 0 8 u64; }\ncondition c;\ncondition d;\n"
               "graph g {\n  node s kernel k grid [1] block [1] args [c];\n"
               "  node m conditional type if condition d bodies [y];\n}\n"
               "graph y { node n conditional type while condition c bodies [b]; }\ngraph b { node e empty; }\n",
               "e.graph:6:44: error: node 's' sets condition 'c', but is neither in the graph of its conditional "
               "node 'n' nor inside that graph's bodies");
}
END_TEST

/* Dims share the names of buffers, scalars and conditions, and are none of them. */
START_TEST(dim_errors) {
  expect_error("pgcc 1;\nbuffer B size 4;\ndim B values [1] pad;\ngraph g { node n empty; }\n",
               "e.graph:3:5: error: buffer, scalar, condition, dim or comm 'B' is already declared");
  expect_error("pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr; }\ndim B values [1, 2] exact;\n"
               "graph g { node n kernel k grid [1] block [1] args [B]; }\n",
               "e.graph:4:52: error: 'B' is a dim, not a buffer");
  expect_error("pgcc 1;\ndim B values [1, 2] pad;\nbuffer x size 8 role input shape [B, C];\n"
               "graph g { node n empty; }\n",
               "e.graph:3:38: error: unknown dim 'C' in the shape of buffer 'x'");
  expect_error("pgcc 1;\ndim B values [1, 2] pad;\nbuffer x size 8 role input shape [B, \"4\"];\n"
               "graph g { node n empty; }\n",
               "e.graph:3:38: error: shape: expected a non-negative integer, found a string");
  char many[1024];
  int n = snprintf(many, sizeof many, "pgcc 1;\ndim B values [");
  for (int i = 1; i <= 65; i++) n += snprintf(many + n, sizeof many - (size_t)n, "%s%d", i > 1 ? ", " : "", i);
  snprintf(many + n, sizeof many - (size_t)n, "] pad;\ngraph g { node n empty; }\n");
  expect_error(many, "error: dim 'B' has more than 64 values");
  /* a dim declared after a statement that uses it is unknown there, before it is fine */
  Parsed *p = parse_text("d.graph", "pgcc 1;\nbuffer x size 8 role output dtype f32 shape [B];\n"
                                     "graph g { node n empty; }\n");
  ck_assert_ptr_null(p->prog);
  parsed_free(p);
  p = parse_text("d.graph", "pgcc 1;\nkernel k symbol \"k\";\ndim B values [1, 2] pad;\n"
                            "buffer x size 8 role output dtype f32 shape [B];\ngraph g { node n empty; }\n");
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  char *text = graph_text(p->prog); /* written where pgcc writes dims: before the kernels */
  ck_assert_ptr_nonnull(strstr(text, "\ndim B values [1, 2] pad;\n\nkernel k symbol \"k\";\n"));
  free(text);
  parsed_free(p);
}
END_TEST

/* Where a tensor's data starts in a safetensors file, read here with jansson
 * directly (not through pgcc's reader). */
static uint64_t tensor_data_at(const char *path, const char *tensor, uint64_t *bytes) {
  size_t len;
  unsigned char *f = (unsigned char *)slurp(path, &len);
  ck_assert_ptr_nonnull(f);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--) hl = hl << 8 | f[i];
  json_t *h = json_loadb((const char *)f + 8, hl, 0, NULL);
  ck_assert_ptr_nonnull(h);
  json_t *off = json_object_get(json_object_get(h, tensor), "data_offsets");
  ck_assert_ptr_nonnull(off);
  uint64_t begin = (uint64_t)json_integer_value(json_array_get(off, 0));
  *bytes = (uint64_t)json_integer_value(json_array_get(off, 1)) - begin;
  json_decref(h);
  free(f);
  return 8 + hl + begin;
}

START_TEST(weights_and_library_kernels) {
  size_t len;
  char *text = slurp("tests/codegen/libweights.graph", &len);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text("tests/codegen/libweights.graph", text);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgProgram *prog = p->prog;
  ck_assert_uint_eq(prog->weights.n, 1);
  const PgKernel *k = prog->kernels.v[0];
  ck_assert(k->has_entry);
  ck_assert_uint_eq(k->entry, 123456);
  uint64_t bytes;
  for (size_t i = 0; i < prog->buffers.n; i++) {
    const PgBuffer *b = prog->buffers.v[i];
    if (b->role != PG_ROLE_WEIGHT) continue;
    ck_assert_ptr_eq(b->weights, prog->weights.v[0]);
    ck_assert_uint_eq(b->data_offset, tensor_data_at("tests/codegen/libweights.safetensors", b->tensor, &bytes));
    ck_assert_uint_eq(b->size, bytes);
  }
  char *a = graph_text(prog);
  ck_assert_ptr_nonnull(strstr(a, " module cublas entry 123456 {"));
  ck_assert_ptr_nonnull(strstr(a, "role weight dtype f32 shape [4] weights w tensor \"layer.bias\";"));
  free(a);
  free(text);
  parsed_free(p);
}
END_TEST

/* Module globals (format version 2): each a phrase of two strings, the symbol's name and
 * its bytes in hexadecimal, any case, read into bytes and written back in lower case, in
 * order; a program with them is written as version 2.  One global may hold 1 MiB. */
START_TEST(module_globals_read_and_write) {
  const char *text = "pgcc 2;\n"
                     "module m cuda file \"examples/saxpy.cu\" globals [\"WINDOW_SIZE\" \"03000000\", "
                     "\"\\x41B\" \"0aFf\", \"_ZN2ns5innerE\" \"80\"];\n"
                     "module c cubin file \"tests/modules/sm_90.cubin\" globals [\"WINDOW_SIZE\" \"05000000\"];\n"
                     "graph g { node n empty; }\n";
  Parsed *p = parse_text("t.graph", text);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgModule *m = p->prog->modules.v[0];
  ck_assert_uint_eq(m->globals.n, 3);
  static const char *const names[] = {"WINDOW_SIZE", "AB", "_ZN2ns5innerE"};
  static const unsigned char bytes[][4] = {{3, 0, 0, 0}, {0x0a, 0xff}, {0x80}};
  static const uint32_t sizes[] = {4, 2, 1};
  static const int cols[] = {49, 75, 91};
  for (int g = 0; g < 3; g++) {
    const PgGlobal *gl = &m->globals.v[g];
    ck_assert_str_eq(gl->name, names[g]);
    ck_assert_uint_eq(gl->size, sizes[g]);
    ck_assert_int_eq(memcmp(gl->bytes, bytes[g], sizes[g]), 0);
    ck_assert_int_eq(gl->loc.line, 2);
    ck_assert_int_eq(gl->loc.col, cols[g]);
  }
  ck_assert_uint_eq(p->prog->modules.v[1]->globals.n, 1); /* a name may recur in another module */
  ck_assert_int_eq(pg_graph_min_version(p->prog), 2);
  char *a = graph_text(p->prog);
  ck_assert_ptr_nonnull(strstr(a, "\npgcc 2;\n"));
  ck_assert_ptr_nonnull(strstr(a, "module m cuda file \"examples/saxpy.cu\" globals [\"WINDOW_SIZE\" \"03000000\", "
                                  "\"AB\" \"0aff\", \"_ZN2ns5innerE\" \"80\"];\n"));
  Parsed *q = parse_text("t2.graph", a);
  ck_assert_msg(q->prog, "%s\n%s", q->diags, a);
  char *b = graph_text(q->prog);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);
  parsed_free(q);
  parsed_free(p);

  /* 1 MiB is the most one global holds */
  size_t cap = 2 * (PG_MAX_GLOBAL_BYTES + 1) + 256;
  char *big = malloc(cap);
  for (int extra = 0; extra < 2; extra++) {
    int n = snprintf(big, cap, "pgcc 2;\nmodule m cuda file \"examples/saxpy.cu\" globals [\"big\" \"");
    size_t digits = 2 * ((size_t)PG_MAX_GLOBAL_BYTES + (size_t)extra);
    memset(big + n, '7', digits);
    snprintf(big + n + digits, cap - (size_t)n - digits, "\"];\ngraph g { node n empty; }\n");
    p = parse_text("big.graph", big);
    if (!extra) {
      ck_assert_msg(p->prog, "%s", p->diags);
      ck_assert_uint_eq(p->prog->modules.v[0]->globals.v[0].size, PG_MAX_GLOBAL_BYTES);
      ck_assert_uint_eq(p->prog->modules.v[0]->globals.v[0].bytes[PG_MAX_GLOBAL_BYTES - 1], 0x77);
    } else {
      ck_assert_ptr_null(p->prog);
      ck_assert_msg(strstr(p->diags, "big.graph:2:55: error: module 'm': global 'big' is 1048577 bytes, more than 1 MiB"),
                    "%s", p->diags);
    }
    parsed_free(p);
  }
  free(big);
}
END_TEST

/* The committed export of a torch.compile'd MLP (tests/corpus/export, made by
 * tools/pgcc-export on an H100): it reads, its weights account for every byte of
 * the weights file, its cuBLAS kernel carries the place it was found, and its
 * intermediates take what the capture used. */
START_TEST(a_real_export_reads) {
  const char *path = "tests/corpus/export/mlp_small/mlp_small.graph";
  size_t len, wlen;
  char *text = slurp(path, &len);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text(path, text);
  ck_assert_msg(p->prog, "%s", p->diags);
  const PgProgram *prog = p->prog;
  int library = 0, cubins = 0;
  for (size_t i = 0; i < prog->kernels.n; i++) {
    const PgKernel *k = prog->kernels.v[i];
    ck_assert_ptr_nonnull(k->module);
    if (k->module->kind == PG_MOD_LIBRARY) library++, ck_assert(k->has_entry);
    if (k->module->kind == PG_MOD_CUBIN) cubins++;
  }
  ck_assert_int_ge(library, 1);
  ck_assert_int_ge(cubins, 1);
  uint64_t weight_bytes = 0, bytes, intermediate_bytes = 0;
  for (size_t i = 0; i < prog->buffers.n; i++) {
    const PgBuffer *b = prog->buffers.v[i];
    if (b->role == PG_ROLE_INTERMEDIATE) intermediate_bytes += b->size;
    if (b->role != PG_ROLE_WEIGHT) continue;
    ck_assert_uint_eq(b->data_offset,
                      tensor_data_at("tests/corpus/export/mlp_small/mlp_small.safetensors", b->tensor, &bytes));
    weight_bytes += b->size;
  }
  /* the capture's own memory is cut at its last allocation: a 1x256 MLP's activations
   * are a few KiB, not the allocator's 2 MiB block (the exporter's first version) */
  ck_assert_uint_gt(intermediate_bytes, 0);
  ck_assert_uint_le(intermediate_bytes, 64 * 1024);
  char *w = slurp("tests/corpus/export/mlp_small/mlp_small.safetensors", &wlen);
  ck_assert_uint_eq(weight_bytes, wlen - 8 - prog->weights.v[0]->header_len);
  free(w);
  free(text);
  parsed_free(p);
}
END_TEST

/* Host reads (tests/golden/hostread.graph, pgcc's own output): host buffers, scalars read
 * from them or given by a callback, a guard, and copies into the host buffers inside a
 * child graph.  They read into the IR, and pgcc writes the file back byte for byte;
 * the DOT output names the guard's buffer and bytes. */
START_TEST(host_reads_read_and_write) {
  const char *path = "tests/golden/hostread.graph";
  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text(path, text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  const PgProgram *prog = p->prog;
  ck_assert_int_eq(prog->version, 1); /* host reads are optional attributes of either version */
  ck_assert_int_eq(prog->buffers.v[3]->role, PG_ROLE_HOST);
  ck_assert_str_eq(pg_role_names[PG_ROLE_HOST], "host");
  const PgScalar *mx = prog->scalars.v[0], *half = prog->scalars.v[1], *step = prog->scalars.v[2];
  ck_assert_ptr_eq(mx->from, prog->buffers.v[3]);
  ck_assert(!mx->is_input && !mx->is_callback && !mx->value && pg_scalar_is_read(mx));
  ck_assert_ptr_eq(half->from, prog->buffers.v[4]);
  ck_assert_int_eq(half->type, PG_T_F16);
  ck_assert(step->is_callback && !step->from && pg_scalar_is_read(step));
  ck_assert_int_eq(step->read_loc.line, 23);
  ck_assert_int_eq(step->read_loc.col, 22); /* the flag `callback` */
  const PgNode *g = find_node(prog, "g");
  ck_assert(pg_is_hostop(g, "guard") && !pg_is_hostop(g, "sync"));
  ck_assert_ptr_eq(g->u.hostop.buf, prog->buffers.v[3]);
  ck_assert_str_eq(g->u.hostop.expect, "0000803f");
  ck_assert_str_eq(g->u.hostop.reason, "the value read at model.py:3 chose a branch");
  ck_assert_ptr_null(find_node(prog, "s")->u.hostop.buf);
  ck_assert_int_eq(find_node(prog, "k2")->u.kernel.args.v[2].kind, PG_ARG_SCALAR);
  ck_assert_int_eq(pg_graph_min_version(prog), 1);
  parsed_free(p);
  Run r = run_pgcc("--emit=graph", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_str_eq(r.out, text);
  run_free(&r);
  r = run_pgcc("--emit=dot", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "HOSTOP\nguard m_host == 0000803f\nthe value read at model.py:3 chose a branch\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "HOSTOP\nsync\nm.max().item() at model.py:3\n"));
  run_free(&r);
  free(text);
  /* with a relocation kind, the same attributes in version 2 */
  Parsed *q = parse_text("h.graph", "pgcc 2;\nkernel k symbol \"k\" { param 0 8 bytes ptrs [lo32 0]; }\n"
                                    "buffer r size 4 role host;\ngraph g { node n empty; }\n");
  ck_assert_msg(q->prog && q->diag.errors == 0, "%s", q->diags);
  char *t = graph_text(q->prog);
  ck_assert_ptr_nonnull(strstr(t, "pgcc 2;\n"));
  ck_assert_ptr_nonnull(strstr(t, "buffer r size 4 role host;\n"));
  free(t);
  parsed_free(q);
}
END_TEST

Suite *graph_suite(void) {
  Suite *s = suite_create("graph");
  TCase *t = tcase_create("graph");
  tcase_add_test(t, reads_every_statement);
  tcase_add_test(t, write_read_write_is_a_fixed_point);
  tcase_add_test(t, bodies_may_come_later_edges_anywhere);
  tcase_add_test(t, many_edges_keep_statement_order);
  tcase_add_test(t, statement_errors);
  tcase_add_test(t, conditions_read_and_write);
  tcase_add_test(t, condition_errors);
  tcase_add_test(t, dim_errors);
  tcase_add_test(t, weights_and_library_kernels);
  tcase_add_test(t, module_globals_read_and_write);
  tcase_add_test(t, a_real_export_reads);
  tcase_add_test(t, host_reads_read_and_write);
  suite_add_tcase(s, t);
  return s;
}

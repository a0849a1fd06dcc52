/* test_dot.c -- the DOT frontend on the quirks of real dumps */
#include "../helpers.h"

#include <string.h>

#define CLUSTER(n, body) "subgraph cluster_" #n " {\nlabel=\"graph_" #n "\" graph[style=\"dashed\"];\n" body "}\n"

START_TEST(attributes_without_spaces_and_repeated) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1,
      "\"graph_1_node_0\"[style=\"solid\" style=\"bold\" shape=\"trapezium\"label=\"0\nMEMCPY\n(DtoH,4096)\n\"];\n"
      "\"graph_1_node_1\"[shape=\"rectangle\" label=\"1\nEMPTY\n\" label=\"1\nHOST\n\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  PgNode *c = find_node(p->prog, "g1.n0"), *h = find_node(p->prog, "g1.n1");
  ck_assert_int_eq(c->kind, PG_MEMCPY);
  ck_assert_int_eq(c->u.memcpy.dir, PG_DIR_DTOH);
  ck_assert_uint_eq(c->u.memcpy.width, 4096);
  ck_assert(!c->u.memcpy.has_ptrs);
  ck_assert_int_eq(h->kind, PG_HOST); /* the last label wins */
  parsed_free(p);
}
END_TEST

START_TEST(launch_dimensions_with_escaped_braces) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1,
      "\"graph_1_node_0\"[style=\"bold\" shape=\"octagon\" label=\"0\n_Z1fv\n\\<\\<\\<\\{2,3,4\\},\\{8,4,2\\},96\\>\\>\\>\"];\n"
      "\"graph_1_node_1\"[style=\"bold\" shape=\"octagon\" label=\"1\n_Z1fv\n\\<\\<\\<7,\\{32\\},0\\>\\>\\>\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  PgNode *a = find_node(p->prog, "g1.n0"), *b = find_node(p->prog, "g1.n1");
  ck_assert_uint_eq(a->u.kernel.grid[0], 2);
  ck_assert_uint_eq(a->u.kernel.grid[1], 3);
  ck_assert_uint_eq(a->u.kernel.grid[2], 4);
  ck_assert_uint_eq(a->u.kernel.block[0], 8);
  ck_assert_uint_eq(a->u.kernel.block[2], 2);
  ck_assert_uint_eq(a->u.kernel.smem, 96);
  ck_assert_uint_eq(b->u.kernel.grid[0], 7);
  ck_assert_uint_eq(b->u.kernel.grid[1], 1);
  ck_assert_uint_eq(b->u.kernel.block[0], 32);
  ck_assert_ptr_eq(a->u.kernel.kernel, b->u.kernel.kernel); /* one kernel per symbol */
  ck_assert_uint_eq(p->prog->kernels.n, 1);
  ck_assert_str_eq(p->prog->kernels.v[0]->name, "f");
  parsed_free(p);
}
END_TEST

START_TEST(long_mangled_names_and_short_names) {
  char sym[400] = "_ZN8internal5gemvx6kernelI";
  while (strlen(sym) < 300) strcat(sym, "iiffffLb0ELb1E");
  char text[2048];
  snprintf(text, sizeof text,
           "digraph dot {\n" CLUSTER(1, "\"graph_1_node_0\"[style=\"bold\" shape=\"record\" label=\"{KERNEL\n| {ID | 0 "
                                        "(topoId: 1) | %s\\<\\<\\<256,\\{32,4\\},528\\>\\>\\>}\n}\"];\n") "}\n",
           sym);
  Parsed *p = parse_text("t.dot", text);
  ck_assert_msg(p->prog, "%s", p->diags);
  ck_assert_str_eq(p->prog->kernels.v[0]->symbol, sym);
  ck_assert_str_eq(p->prog->kernels.v[0]->name, "gemvx_kernel");
  ck_assert_uint_eq(find_node(p->prog, "g1.n0")->u.kernel.smem, 528);
  parsed_free(p);
}
END_TEST

/* CUDA's kernel, memset and memcpy records are read without building the record (dot_read.c,
 * usual_record); the same record with one more field goes the general way.  Both
 * give the same node, kernel and diagnostics, locations included. */
#define KERNEL_RECORD(coop, extra)                                                                       \
  "\"graph_1_node_0\"[style=\"bold\" shape=\"record\" label=\"{KERNEL\n"                                 \
  "| {ID | 0 (topoId: 1) |  tmpl\\<int\\>\\ x\\<\\<\\<\\{2,1\\},\\{128,4\\},16\\>\\>\\>}\n"               \
  "| {{node handle | func handle} | {0x00005583510FF230 | 0x00005583510CC870}}\n"                         \
  "| {accessPolicyWindow | {base_ptr | num_bytes | hitRatio | hitProp | missProp} | "                    \
  "{0x0000000000000000 | 0 | 0.000000 | N | N}}\n" extra "|   {cooperative |\n  " coop "}\n| {priority | 3}\n}\"];\n"

START_TEST(kernel_records_read_directly_as_in_general) {
  Parsed *fast = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, KERNEL_RECORD("1", "")) "}\n");
  Parsed *slow = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, KERNEL_RECORD("1", "| {clusterDim | 1}\n")) "}\n");
  ck_assert_msg(fast->prog, "%s", fast->diags);
  ck_assert_msg(slow->prog, "%s", slow->diags);
  const PgNode *a = find_node(fast->prog, "g1.n0"), *b = find_node(slow->prog, "g1.n0");
  ck_assert_str_eq(a->u.kernel.kernel->symbol, "tmpl<int> x");
  ck_assert_str_eq(a->u.kernel.kernel->symbol, b->u.kernel.kernel->symbol);
  ck_assert_str_eq(a->u.kernel.kernel->name, b->u.kernel.kernel->name);
  ck_assert_int_eq(a->u.kernel.kernel->loc.line, b->u.kernel.kernel->loc.line);
  ck_assert_int_eq(a->u.kernel.kernel->loc.col, 26); /* the symbol, past the spaces */
  ck_assert_int_eq(a->u.kernel.kernel->loc.col, b->u.kernel.kernel->loc.col);
  for (int i = 0; i < 3; i++) {
    ck_assert_uint_eq(a->u.kernel.grid[i], b->u.kernel.grid[i]);
    ck_assert_uint_eq(a->u.kernel.block[i], b->u.kernel.block[i]);
  }
  ck_assert_uint_eq(a->u.kernel.grid[0], 2);
  ck_assert_uint_eq(a->u.kernel.smem, 16);
  ck_assert(a->u.kernel.cooperative && b->u.kernel.cooperative);
  ck_assert_int_eq(a->u.kernel.priority, 3);
  ck_assert_int_eq(b->u.kernel.priority, 3);
  parsed_free(fast);
  parsed_free(slow);
  /* a bad value: the same error at the same place (the next line, past the spaces) */
  fast = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, KERNEL_RECORD("x1", "")) "}\n");
  slow = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, KERNEL_RECORD("x1", "| {clusterDim | 1}\n")) "}\n");
  ck_assert(!fast->prog && !slow->prog);
  ck_assert_ptr_nonnull(strstr(fast->diags, ":9:3: error: expected a number for 'cooperative', found 'x1'"));
  ck_assert_ptr_nonnull(strstr(slow->diags, ":10:3: error: expected a number for 'cooperative', found 'x1'"));
  parsed_free(fast);
  parsed_free(slow);
}
END_TEST

#define MEMSET_RECORD(extra)                                                                              \
  "\"graph_1_node_0\"[style=\"solid\" style=\"solid\" shape=\"record\" label=\"{MEMSET\n"                \
  "| {{ID | node handle | dptr | pitch | value | elementSize | width | height} | "                      \
  "{0 (topoId: 1) | 0x00005583510FEAC8 | 0x00007F134BE08000 | 16384 | 7 | 4 | 4096 | 3}}" extra "}\"];\n"

START_TEST(memset_records_read_directly_as_in_general) {
  Parsed *fast = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, MEMSET_RECORD("")) "}\n");
  Parsed *slow = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, MEMSET_RECORD("\n| {x | 1}")) "}\n");
  ck_assert_msg(fast->prog, "%s", fast->diags);
  ck_assert_msg(slow->prog, "%s", slow->diags);
  const PgNode *a = find_node(fast->prog, "g1.n0"), *b = find_node(slow->prog, "g1.n0");
  ck_assert_int_eq(a->kind, PG_MEMSET);
  ck_assert_int_eq(b->kind, PG_MEMSET);
  ck_assert_uint_eq(a->u.memset.value, 7);
  ck_assert_uint_eq(a->u.memset.elem, 4);
  ck_assert_uint_eq(a->u.memset.width, 4096);
  ck_assert_uint_eq(a->u.memset.height, 3);
  ck_assert_uint_eq(a->u.memset.pitch, 16384);
  ck_assert_uint_eq(a->u.memset.value, b->u.memset.value);
  ck_assert_uint_eq(a->u.memset.elem, b->u.memset.elem);
  ck_assert_uint_eq(a->u.memset.width, b->u.memset.width);
  ck_assert_uint_eq(a->u.memset.height, b->u.memset.height);
  ck_assert_uint_eq(a->u.memset.pitch, b->u.memset.pitch);
  ck_assert(a->u.memset.has_dst && b->u.memset.has_dst);
  ck_assert_str_eq(a->u.memset.dst.buf->name, "p7f134be08000");
  ck_assert_str_eq(a->u.memset.dst.buf->name, b->u.memset.dst.buf->name);
  ck_assert_uint_eq(a->u.memset.dst.buf->size, b->u.memset.dst.buf->size);
  parsed_free(fast);
  parsed_free(slow);
}
END_TEST

#define MEMCPY_RECORD(extra)                                                                              \
  "\"graph_1_node_0\"[style=\"solid\" shape=\"record\" label=\"{\nMEMCPY\n"                              \
  "| {{ID | node handle} | {1 (topoId: 11) | 0x000055F11775FF18}}\n| {kind | DtoH (DEVICE to HOST PAGEABLE)}\n" \
  "| {{srcPtr | dstPtr} | {pitch | ptr | xsize | ysize | pitch | ptr | xsize | ysize} | "              \
  "{512 | 0x00007F9399E00000 | 0 | 0 | 0 | 0x00007F9399E01000 | 0 | 0}}\n"                              \
  "| {{srcPos | {{x | 16} | {y | 0} | {z | 0}}} | {dstPos | {{x | 8} | {y | 0} | {z | 0}}} | "          \
  "{Extent | {{Width | 256} | {Height | 2} | {Depth | 1}}}}" extra "\n}\"];\n"

START_TEST(memcpy_records_read_directly_as_in_general) {
  Parsed *fast = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, MEMCPY_RECORD("")) "}\n");
  Parsed *slow = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, MEMCPY_RECORD("\n| {x | 1}")) "}\n");
  ck_assert_msg(fast->prog, "%s", fast->diags);
  ck_assert_msg(slow->prog, "%s", slow->diags);
  const PgNode *a = find_node(fast->prog, "g1.n0"), *b = find_node(slow->prog, "g1.n0");
  ck_assert_int_eq(a->kind, PG_MEMCPY);
  ck_assert_int_eq(a->u.memcpy.dir, PG_DIR_DTOH);
  ck_assert(a->u.memcpy.pageable);
  ck_assert_uint_eq(a->u.memcpy.width, 256);
  ck_assert_uint_eq(a->u.memcpy.height, 2);
  ck_assert_uint_eq(a->u.memcpy.src_pitch, 512);
  ck_assert_uint_eq(a->u.memcpy.src.offset, 16);
  ck_assert_uint_eq(a->u.memcpy.dst.offset, 8);
  ck_assert_int_eq(a->u.memcpy.dir, b->u.memcpy.dir);
  ck_assert_int_eq(a->u.memcpy.pageable, b->u.memcpy.pageable);
  ck_assert_uint_eq(a->u.memcpy.width, b->u.memcpy.width);
  ck_assert_uint_eq(a->u.memcpy.height, b->u.memcpy.height);
  ck_assert_uint_eq(a->u.memcpy.depth, b->u.memcpy.depth);
  ck_assert_uint_eq(a->u.memcpy.src_pitch, b->u.memcpy.src_pitch);
  ck_assert_uint_eq(a->u.memcpy.dst_pitch, b->u.memcpy.dst_pitch);
  ck_assert_uint_eq(a->u.memcpy.src.offset, b->u.memcpy.src.offset);
  ck_assert_uint_eq(a->u.memcpy.dst.offset, b->u.memcpy.dst.offset);
  ck_assert(a->u.memcpy.has_ptrs && b->u.memcpy.has_ptrs);
  ck_assert_str_eq(a->u.memcpy.src.buf->name, b->u.memcpy.src.buf->name);
  ck_assert_str_eq(a->u.memcpy.dst.buf->name, "p7f9399e01000");
  ck_assert_str_eq(a->u.memcpy.dst.buf->name, b->u.memcpy.dst.buf->name);
  ck_assert_uint_eq(a->u.memcpy.src.buf->size, b->u.memcpy.src.buf->size);
  ck_assert_uint_eq(a->u.memcpy.dst.buf->size, b->u.memcpy.dst.buf->size);
  parsed_free(fast);
  parsed_free(slow);
}
END_TEST

START_TEST(graph_numbers_need_not_start_at_1) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(9,
      "\"graph_9_node_0\"[shape=\"rectangle\" label=\"0\ngraph_12\n\"];\n") CLUSTER(12,
      "\"graph_12_node_0\"[shape=\"rectangle\" label=\"0\nEMPTY\n\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  ck_assert_uint_eq(p->prog->graphs.n, 2);
  ck_assert_str_eq(p->prog->graphs.v[0]->name, "g9");
  PgNode *child = find_node(p->prog, "g9.n0");
  ck_assert_int_eq(child->kind, PG_CHILD);
  ck_assert_ptr_eq(child->u.child.body, p->prog->graphs.v[1]);
  ck_assert_ptr_eq(p->prog->graphs.v[1]->owner, child);
  parsed_free(p);
}
END_TEST

START_TEST(root_is_the_graph_nobody_owns_even_if_later) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(3,
      "\"graph_3_node_0\"[shape=\"rectangle\" label=\"0\nEMPTY\n\"];\n") CLUSTER(1,
      "\"graph_1_node_0\"[shape=\"rectangle\" label=\"0\ngraph_3\n\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  ck_assert_str_eq(p->prog->graphs.v[0]->name, "g1");
  ck_assert_str_eq(p->prog->graphs.v[1]->name, "g3");
  parsed_free(p);
}
END_TEST

START_TEST(conditional_with_two_bodies) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1,
      "\"graph_1_node_0\"[style=\"bold\" shape=\"record\" label=\"{\nCONDITIONAL\n| {ID | 0}\n| {Conditional "
      "Handle|7}\n| {Conditional Type| IF}\n| {True|graph_2}\n| {False|graph_3}\n}\n\"];\n")
      CLUSTER(2, "\"graph_2_node_0\"[label=\"0\nEMPTY\n\"];\n") CLUSTER(3, "\"graph_3_node_0\"[label=\"0\nEMPTY\n\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  PgNode *c = find_node(p->prog, "g1.n0");
  ck_assert_int_eq(c->u.cond.type, PG_COND_IF);
  ck_assert(c->u.cond.has_handle);
  ck_assert_uint_eq(c->u.cond.handle, 7);
  ck_assert_uint_eq(c->u.cond.bodies.n, 2);
  ck_assert_str_eq(c->u.cond.bodies.v[0]->name, "g2");
  ck_assert_str_eq(c->u.cond.bodies.v[1]->name, "g3");
  parsed_free(p);
}
END_TEST

START_TEST(unknown_kind_is_opaque_with_warning) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1,
      "\"graph_1_node_0\"[shape=\"rectangle\" label=\"0\nBATCH_MEM_OP\n\"];\n") "}\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  PgNode *n = find_node(p->prog, "g1.n0");
  ck_assert_int_eq(n->kind, PG_OPAQUE);
  ck_assert_str_eq(n->u.opaque.what, "BATCH_MEM_OP");
  ck_assert_int_eq(p->diag.warnings, 1);
  ck_assert_ptr_nonnull(strstr(p->diags, "t.dot:5:1: warning: unknown node kind 'BATCH_MEM_OP'"));
  parsed_free(p);
}
END_TEST

START_TEST(verbose_operands_become_buffers) {
  char *text = slurp("tests/corpus/cuda/allkinds_verbose.dot", NULL);
  ck_assert_ptr_nonnull(text);
  Parsed *p = parse_text("v.dot", text);
  ck_assert_msg(p->prog, "%s", p->diags);
  PgNode *cp = find_node(p->prog, "g1.n1"), *ms = find_node(p->prog, "g1.n2"), *al = find_node(p->prog, "g1.n9"),
         *fr = find_node(p->prog, "g1.n10"), *rec = find_node(p->prog, "g1.n7"), *wt = find_node(p->prog, "g1.n8"),
         *d2h = find_node(p->prog, "g1.n11"), *host = find_node(p->prog, "g1.n4");
  ck_assert(cp->u.memcpy.has_ptrs);
  ck_assert_uint_eq(cp->u.memcpy.src.buf->addr, 0x7F9399E00000ull);
  ck_assert_uint_eq(cp->u.memcpy.dst.buf->addr, 0x7F9399E01000ull);
  ck_assert_uint_eq(cp->u.memcpy.src.buf->size, 4096);
  ck_assert_uint_eq(ms->u.memset.elem, 4);
  ck_assert_uint_eq(ms->u.memset.width, 1024);
  ck_assert_ptr_eq(ms->u.memset.dst.buf, d2h->u.memcpy.src.buf); /* the same address is one buffer */
  ck_assert_int_eq(d2h->u.memcpy.dir, PG_DIR_DTOH);
  ck_assert_uint_eq(al->u.mem.buf->size, 1048576);
  ck_assert_int_eq(al->u.mem.buf->role, PG_ROLE_INTERMEDIATE);
  ck_assert_ptr_eq(al->u.mem.buf, fr->u.mem.buf);
  ck_assert_ptr_nonnull(rec->u.event.event);
  ck_assert_ptr_eq(rec->u.event.event, wt->u.event.event);
  ck_assert_uint_eq(host->u.host.fn, 0x55F0F9EADCCFull);
  ck_assert_uint_eq(p->prog->buffers.n, 5);
  parsed_free(p);
  free(text);
}
END_TEST

START_TEST(several_errors_in_one_run) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1,
      "\"graph_1_node_0\"[label=\"0\nEMPTY\n\"] = ;\n"
      "\"graph_1_node_1\"[label=\"1\nEMPTY\n\"];\n"
      "[ ;\n") "}\n");
  ck_assert_ptr_null(p->prog);
  ck_assert_int_eq(p->diag.errors, 2);
  ck_assert_ptr_nonnull(strstr(p->diags, "t.dot:6:4: error: syntax error, unexpected '='"));
  ck_assert_ptr_nonnull(strstr(p->diags, "t.dot:10:1: error: syntax error, unexpected '['"));
  parsed_free(p);
}
END_TEST

START_TEST(structural_errors) {
  Parsed *p = parse_text("t.dot", "digraph dot {\n\"a\"[label=\"0\nEMPTY\n\"];\n" CLUSTER(1, "") "}\n");
  ck_assert_ptr_null(p->prog);
  ck_assert_ptr_nonnull(strstr(p->diags, "t.dot:2:1: error: node 'a' is outside any graph cluster"));
  parsed_free(p);
  p = parse_text("t.dot", "digraph dot {\n}\n");
  ck_assert_ptr_null(p->prog);
  ck_assert_ptr_nonnull(strstr(p->diags, "t.dot:1:1: error: no graph in the dump"));
  parsed_free(p);
  p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, "\"graph_1_node_0\"[label=\"0\nEMPTY\n\"];\n")
      CLUSTER(2, "\"graph_2_node_0\"[label=\"0\nEMPTY\n\"];\n\"graph_2_node_0\" -> \"graph_1_node_0\";\n") "}\n");
  ck_assert_ptr_null(p->prog);
  ck_assert_ptr_nonnull(strstr(p->diags, "error: edge from 'graph_2_node_0' to 'graph_1_node_0' crosses graphs"));
  parsed_free(p);
  p = parse_text("t.dot", "digraph dot {\n" CLUSTER(1, "\"graph_1_node_0\"[shape=\"rectangle\"];\n") "}\n");
  ck_assert_ptr_null(p->prog);
  ck_assert_ptr_nonnull(strstr(p->diags, "has no label"));
  parsed_free(p);
}
END_TEST

Suite *dot_suite(void) {
  Suite *s = suite_create("dot");
  TCase *t = tcase_create("dot");
  tcase_add_test(t, attributes_without_spaces_and_repeated);
  tcase_add_test(t, launch_dimensions_with_escaped_braces);
  tcase_add_test(t, long_mangled_names_and_short_names);
  tcase_add_test(t, kernel_records_read_directly_as_in_general);
  tcase_add_test(t, memset_records_read_directly_as_in_general);
  tcase_add_test(t, memcpy_records_read_directly_as_in_general);
  tcase_add_test(t, graph_numbers_need_not_start_at_1);
  tcase_add_test(t, root_is_the_graph_nobody_owns_even_if_later);
  tcase_add_test(t, conditional_with_two_bodies);
  tcase_add_test(t, unknown_kind_is_opaque_with_warning);
  tcase_add_test(t, verbose_operands_become_buffers);
  tcase_add_test(t, several_errors_in_one_run);
  tcase_add_test(t, structural_errors);
  suite_add_tcase(s, t);
  return s;
}

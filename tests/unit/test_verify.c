/* test_verify.c -- the verifier's checks, one by one */
#include "../helpers.h"

#include <string.h>

static void expect(const char *text, const char *msg) {
  Parsed *p = parse_text("v.graph", text);
  if (!msg) {
    ck_assert_msg(p->prog && p->diag.errors == 0, "rejected:\n%s\n%s", text, p->diags);
  } else {
    ck_assert_msg(p->diag.errors > 0, "accepted: %s", text);
    ck_assert_msg(strstr(p->diags, msg), "wanted '%s', got:\n%s", msg, p->diags);
  }
  parsed_free(p);
}

#define K3 "pgcc 1;\nkernel k symbol \"f\" {\n  param 0 8 ptr;\n  param 8 4 f32;\n  param 12 4 i32;\n}\n" \
           "buffer x size 4096;\nscalar n type i32;\nscalar m type i64;\n"

START_TEST(acyclic_diamond_passes) {
  expect("pgcc 1;\ngraph g {\n node a empty;\n node b empty;\n node c empty;\n node d empty;\n"
         " a -> b;\n a -> c;\n b -> d;\n c -> d;\n}\n",
         NULL);
}
END_TEST

START_TEST(cycles_self_loops_and_duplicate_edges) {
  expect("pgcc 1;\ngraph g {\n node a empty;\n node b empty;\n a -> b;\n b -> a;\n}\n",
         "v.graph:6:2: error: dependency cycle in graph 'g': 'a' -> 'b' -> 'a'");
  expect("pgcc 1;\ngraph g {\n node a empty;\n a -> a;\n}\n", "v.graph:4:2: error: node 'a' depends on itself");
  expect("pgcc 1;\ngraph g {\n node a empty;\n node b empty;\n a -> b;\n a -> b;\n}\n",
         "error: duplicate edge 'a' -> 'b'");
}
END_TEST

START_TEST(arguments_must_fit_the_layout) {
  expect(K3 "graph g { node a kernel k grid [1] block [32] args [x, 1.5, n]; }\n", NULL);
  expect(K3 "graph g { node a kernel k grid [1] block [32] args [x, 2, 7]; }\n", NULL);
  expect(K3 "graph g { node a kernel k grid [1] block [32] args [1.5, 1.5, n]; }\n",
         "error: argument 0 of node 'a' does not fit parameter 0 of kernel 'k' (ptr, 8 bytes)");
  expect(K3 "graph g { node a kernel k grid [1] block [32] args [x, 1.5, m]; }\n",
         "v.graph:10:61: error: argument 2 of node 'a' does not fit parameter 2 of kernel 'k' (i32, 4 bytes)");
  expect(K3 "graph g { node a kernel k grid [1] block [32] args [x+4097, 1.5, n]; }\n",
         "argument: x+4097 spans 0 bytes, past the end of the 4096-byte buffer");
  expect("pgcc 1;\nkernel k symbol \"f\";\nbuffer x size 8;\ngraph g { node a kernel k args [x]; }\n",
         "gives arguments, but kernel 'k' has no parameter layout");
}
END_TEST

START_TEST(by_value_structs) {
  const char *ok = "pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [8]; }\nbuffer x size 64;\n"
                   "graph g { node a kernel k args [[\"00000000000000000000000000000000\", x+8]]; }\n";
  expect(ok, NULL);
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [8]; }\nbuffer x size 64;\n"
         "graph g { node a kernel k args [[\"0000\", x]]; }\n",
         "4 hex digits for a 16-byte parameter");
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [8]; }\nbuffer x size 64;\n"
         "graph g { node a kernel k args [[\"00000000000000000000000000000000\"]]; }\n",
         "0 pointers for a parameter with 1");
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [12]; }\ngraph g { node a kernel k; }\n",
         "v.graph:2:46: error: kernel 'k': parameter 0: abs64 bytes 12..20 lie past its 16 bytes");
}
END_TEST

/* Format version 2: relocation kinds and don't-care bytes, and their rules. */
#define K2(layout) "pgcc 2;\nkernel k symbol \"f\" { param 0 24 bytes " layout "; }\ngraph g { node a kernel k; }\n"

START_TEST(relocation_kinds) {
  expect(K2("ptrs [abs64 4, lo32 16, hi32 20] dontcare [12:4]"), NULL);
  expect(K2("ptrs [0, hi32 8, 16] dontcare [12:1, 13:3]"), NULL);
  expect(K2("ptrs [lo32 6]"), "v.graph:2:46: error: kernel 'k': parameter 0: the lo32 relocation at 6 is not 4-byte aligned");
  expect(K2("ptrs [hi32 24]"), "kernel 'k': parameter 0: hi32 bytes 24..28 lie past its 24 bytes");
  expect(K2("ptrs [abs64 20]"), "kernel 'k': parameter 0: abs64 bytes 20..28 lie past its 24 bytes");
  expect(K2("ptrs [0, lo32 4]"), "v.graph:2:49: error: kernel 'k': parameter 0: lo32 bytes 4..8 overlap abs64 bytes 0..8");
  expect(K2("ptrs [lo32 8, hi32 8]"), "hi32 bytes 8..12 overlap lo32 bytes 8..12");
  expect(K2("ptrs [16, 0] dontcare [4:8]"), "don't-care bytes 4..12 overlap abs64 bytes 0..8");
  expect(K2("dontcare [0:16, 8:4]"), "don't-care bytes 8..12 overlap don't-care bytes 0..16");
  expect(K2("dontcare [20:8]"), "don't-care bytes 20..28 lie past its 24 bytes");
  expect(K2("dontcare [8:0]"), "don't-care bytes of length 0");
  expect(K2("ptrs [lo32 8 9]"), "a relocation is 'OFFSET' or 'KIND OFFSET', e.g. 'lo32 56'");
  expect(K2("ptrs [lo64 8]"), "v.graph:2:46: error: unknown relocation kind 'lo64' (expected abs64, lo32 or hi32)");
  expect(K2("dontcare [8]"), "dontcare: expected a byte range 'OFFSET:LENGTH', found a number");
  expect(K2("dontcare [8:x]"), "syntax error");
  expect("pgcc 2;\nkernel k symbol \"f\" { param 0 8 u64 ptrs [lo32 0]; }\ngraph g { node a kernel k; }\n",
         "only a 'bytes' parameter has inner pointers");
  expect("pgcc 2;\nkernel k symbol \"f\" { param 0 8 ptr dontcare [0:4]; }\ngraph g { node a kernel k; }\n",
         "only a 'bytes' parameter has don't-care bytes");
  /* version 1 has whole addresses only, written as bare offsets */
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [0, lo32 8]; }\ngraph g { node a kernel k; }\n",
         "v.graph:2:49: error: a relocation kind needs .graph format version 2");
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 16 bytes dontcare [0:4]; }\ngraph g { node a kernel k; }\n",
         "v.graph:2:49: error: don't-care bytes need .graph format version 2");
  expect("pgcc 4;\ngraph g { node a empty; }\n", "unsupported .graph format version 4 (this pgcc reads versions 1 to 3)");
  /* arguments: one pointer per relocation, of any kind */
  expect("pgcc 2;\nkernel k symbol \"f\" { param 0 24 bytes ptrs [lo32 0, hi32 4, 8] dontcare [16:4]; }\n"
         "buffer x size 64;\ngraph g { node a kernel k args [[\"000000000000000000000000000000000000000000000000\", x, x, "
         "x+8]]; }\n",
         NULL);
  expect("pgcc 2;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [lo32 0, hi32 4]; }\n"
         "buffer x size 64;\ngraph g { node a kernel k args [[\"00000000000000000000000000000000\", x]]; }\n",
         "1 pointers for a parameter with 2");
}
END_TEST

/* The verifier holds a version-1 program to version 1, however it was built. */
START_TEST(version_1_programs_have_whole_addresses_only) {
  Parsed *p = parse_text("v.graph", "pgcc 2;\nkernel k symbol \"f\" { param 0 16 bytes ptrs [0, hi32 8] dontcare [12:4]; }\n"
                                    "graph g { node a kernel k; }\n");
  ck_assert_msg(p->prog, "%s", p->diags);
  PgProgram *prog = p->prog;
  ck_assert_int_eq(prog->version, 2);
  prog->version = 1;
  PgDiag d = {.out = NULL};
  char *buf;
  size_t n;
  d.out = open_memstream(&buf, &n);
  ck_assert_int_eq(pg_verify(prog, &d), 2);
  fclose(d.out);
  ck_assert_msg(strstr(buf, "v.graph:2:49: error: kernel 'k': parameter 0: a hi32 relocation needs .graph format version 2"), "%s", buf);
  ck_assert_ptr_nonnull(strstr(buf, "v.graph:2:67: error: kernel 'k': parameter 0: don't-care bytes need .graph format version 2"));
  free(buf);
  parsed_free(p);
}
END_TEST

/* Module globals hold, however the IR was built: a code module's, in a version-2
 * program, each named, of 1 byte to 1 MiB, once per module. */
static char *verify_text(const PgProgram *prog, int want_errors) {
  PgDiag d = {.out = NULL};
  char *buf;
  size_t n;
  d.out = open_memstream(&buf, &n);
  int errors = pg_verify(prog, &d);
  fclose(d.out);
  ck_assert_msg(errors == want_errors, "%d errors, not %d:\n%s", errors, want_errors, buf);
  return buf;
}

START_TEST(module_globals_are_checked) {
  Parsed *p = parse_text("v.graph", "pgcc 2;\nmodule m cuda file \"examples/saxpy.cu\" globals [\"a\" \"01\", "
                                    "\"b\" \"0203\", \"c\" \"04\"];\ngraph g { node n empty; }\n");
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  PgProgram *prog = p->prog;
  PgModule *m = prog->modules.v[0];
  free(verify_text(prog, 0));
  prog->version = 1;
  char *buf = verify_text(prog, 1);
  ck_assert_msg(strstr(buf, "v.graph:2:8: error: module 'm': globals need .graph format version 2"), "%s", buf);
  free(buf);
  prog->version = 2;
  m->kind = PG_MOD_LIBRARY;
  buf = verify_text(prog, 1);
  ck_assert_msg(strstr(buf, "v.graph:2:8: error: module 'm': a library module has no globals"), "%s", buf);
  free(buf);
  m->kind = PG_MOD_CUDA;
  m->globals.v[2].name = m->globals.v[0].name; /* "a" twice: the second is reported */
  m->globals.v[1].size = 0;
  buf = verify_text(prog, 2);
  ck_assert_msg(strstr(buf, "v.graph:2:71: error: module 'm': global 'a' is given twice"), "%s", buf);
  ck_assert_msg(strstr(buf, "v.graph:2:59: error: module 'm': global 'b' is 0 bytes (1 byte to 1 MiB)"), "%s", buf);
  free(buf);
  m->globals.v[2].name = "";
  m->globals.v[1].size = PG_MAX_GLOBAL_BYTES + 1;
  buf = verify_text(prog, 2);
  ck_assert_msg(strstr(buf, "v.graph:2:71: error: module 'm': a global's name is empty"), "%s", buf);
  ck_assert_msg(strstr(buf, "global 'b' is 1048577 bytes (1 byte to 1 MiB)"), "%s", buf);
  free(buf);
  parsed_free(p);
}
END_TEST

START_TEST(layouts_and_launches) {
  expect("pgcc 1;\nkernel k symbol \"f\" { param 0 4 f64; }\ngraph g { node a kernel k; }\n",
         "parameter 0 is f64, 8 bytes, but its size is 4");
  expect("pgcc 1;\nkernel k symbol \"f\";\ngraph g { node a kernel k grid [1] block [64, 32]; }\n",
         "2048 threads per block, over CUDA's 1024");
  expect("pgcc 1;\nbuffer x size 64;\ngraph g { node a memset dst x value 0 elem 3 width 4; }\n",
         "memset element size must be 1, 2 or 4");
  expect("pgcc 1;\nbuffer x size 64;\nbuffer y size 64;\ngraph g { node a memcpy dir dtod src x dst y width 16 "
         "height 4 dst_pitch 20; }\n",
         "copy destination: y+0 spans 76 bytes, past the end of the 64-byte buffer");
  expect("pgcc 1;\nbuffer x size 64;\nbuffer y size 64;\ngraph g { node a memcpy dir dtod src x dst y width 16 "
         "height 4; }\n",
         NULL);
}
END_TEST

/* Host reads: a kernel takes a read scalar, and a guard compares bytes, only after a
 * synchronization that follows a copy into the host buffer (root edges; a body's node
 * counts as its owner); a callback scalar after any synchronization. */
#define HR "pgcc 2;\nkernel k symbol \"k\" {\n  param 0 4 f32;\n}\n" \
           "buffer d size 8 role intermediate dtype f32 shape [2];\n"   \
           "buffer r size 4 role host dtype f32 shape [];\n"             \
           "buffer q size 4 role host dtype i32 shape [];\n"
#define COPY_SYNC " node c memcpy dir dtoh src d dst r width 4;\n node s hostop op sync reason \"read\";\n c -> s;\n"

START_TEST(host_reads_follow_a_sync_after_a_copy) {
  expect(HR "scalar v type f32 from r;\ngraph g {\n" COPY_SYNC " node a kernel k grid [1] block [1] args [v];\n s -> a;\n}\n",
         NULL);
  /* transitively, through an empty node and a guard */
  expect(HR "scalar v type f32 from r;\ngraph g {\n" COPY_SYNC " node e empty;\n node gd hostop op guard buffer r expect "
            "\"0000803f\" reason \"a branch\";\n node a kernel k grid [1] block [1] args [v];\n s -> e;\n e -> gd;\n"
            " gd -> a;\n}\n",
         NULL);
  /* the sync is after a copy, but into another host buffer */
  expect(HR "scalar v type f32 from q;\ngraph g {\n" COPY_SYNC " node a kernel k grid [1] block [1] args [v];\n s -> a;\n}\n",
         "v.graph:13:43: error: node 'a' takes scalar 'v', read from host buffer 'q', but depends on no host "
         "synchronization after a copy into 'q'");
  /* the copy comes after the sync */
  expect(HR "scalar v type f32 from r;\ngraph g {\n node s hostop op sync reason \"read\";\n node c memcpy dir dtoh src d "
            "dst r width 4;\n node a kernel k grid [1] block [1] args [v];\n s -> c;\n c -> a;\n}\n",
         "node 'a' takes scalar 'v', read from host buffer 'r', but depends on no host synchronization after a copy");
  /* a kernel inside a child graph counts as its owner; so does a copy inside one */
  expect(HR "scalar v type f32 from r;\ngraph g {\n" COPY_SYNC " node w child body b;\n s -> w;\n}\n"
            "graph b { node a kernel k grid [1] block [1] args [v]; }\n",
         NULL);
  expect(HR "scalar v type f32 from r;\ngraph g {\n" COPY_SYNC " node w child body b;\n c -> w;\n}\n"
            "graph b { node a kernel k grid [1] block [1] args [v]; }\n",
         "node 'a' takes scalar 'v', read from host buffer 'r', but depends on no host synchronization");
  expect(HR "scalar v type f32 from r;\ngraph g {\n node w child body b;\n node s hostop op sync reason \"read\";\n"
            " node a kernel k grid [1] block [1] args [v];\n w -> s;\n s -> a;\n}\n"
            "graph b { node c memcpy dir dtoh src d dst r width 4; }\n",
         NULL);
  /* a callback scalar: after any synchronization */
  expect(HR "scalar v type f32 callback;\ngraph g {\n node s hostop op sync reason \"read\";\n"
            " node a kernel k grid [1] block [1] args [v];\n s -> a;\n}\n",
         NULL);
  expect(HR "scalar v type f32 callback;\ngraph g {\n node s hostop op sync reason \"read\";\n"
            " node a kernel k grid [1] block [1] args [v];\n a -> s;\n}\n",
         "v.graph:11:43: error: node 'a' takes callback scalar 'v' but depends on no host synchronization ('hostop op "
         "sync'): its callback is called after each one");
  /* another host operation is no synchronization */
  expect(HR "scalar v type f32 callback;\ngraph g {\n node s hostop op cpu reason \"work\";\n"
            " node a kernel k grid [1] block [1] args [v];\n s -> a;\n}\n",
         "node 'a' takes callback scalar 'v' but depends on no host synchronization");
  /* guards */
  expect(HR "graph g {\n" COPY_SYNC " node gd hostop op guard buffer r expect \"0000\" reason \"a branch\";\n s -> gd;\n}\n",
         NULL);
  expect(HR "graph g {\n" COPY_SYNC " node gd hostop op guard buffer r expect \"0000\" reason \"a branch\";\n c -> gd;\n}\n",
         "v.graph:12:7: error: guard 'gd' depends on no host synchronization after a copy into host buffer 'r'");
  expect(HR "graph g {\n" COPY_SYNC " node gd hostop op guard buffer d expect \"0000\" reason \"a branch\";\n s -> gd;\n}\n",
         "guard 'gd' checks buffer 'd', whose role is intermediate: a guard reads a host buffer (role host)");
}
END_TEST

START_TEST(host_buffers_and_read_scalars) {
  expect(HR "scalar v type f32 from q;\ngraph g { node n empty; }\n", NULL); /* i32 to f32: converted */
  expect("pgcc 2;\nbuffer r size 4 role host;\nscalar v type f32 from r;\ngraph g { node n empty; }\n",
         "v.graph:3:24: error: scalar 'v' reads host buffer 'r', which has no dtype");
  expect("pgcc 2;\nbuffer r size 4 role host dtype f64;\nscalar v type f32 from r;\ngraph g { node n empty; }\n",
         "scalar 'v' reads host buffer 'r', whose 4 bytes hold no f64");
  expect(HR "scalar v type ptr from r;\ngraph g { node n empty; }\n",
         "scalar 'v' is a ptr: a scalar read from a host buffer is a number");
  expect(HR "scalar v type f32 from nowhere;\ngraph g { node n empty; }\n", "v.graph:8:24: error: unknown buffer 'nowhere'");
  expect(HR "scalar w type f32 input;\nscalar v type f32 from w;\ngraph g { node n empty; }\n",
         "'w' is a scalar, not a buffer");
  expect(HR "scalar v type f32 value 2 from r;\ngraph g { node n empty; }\n",
         "v.graph:8:25: error: scalar 'v' is read from a host buffer ('from'), so it takes no 'value'");
  expect(HR "scalar v type f32 callback input;\ngraph g { node n empty; }\n",
         "scalar 'v' is given by a callback ('callback'), so it takes no 'input'");
  expect(HR "scalar v type f32 from r callback;\ngraph g { node n empty; }\n",
         "scalar 'v' is given by a callback ('callback'), so it takes no 'from'");
  /* a guard's attributes */
  expect(HR "graph g { node gd hostop op guard buffer r reason \"x\"; }\n", "a guard needs attribute 'expect'");
  expect(HR "graph g { node gd hostop op guard expect \"00\" reason \"x\"; }\n", "a guard needs attribute 'buffer'");
  expect(HR "graph g { node gd hostop op guard buffer r expect \"0g\" reason \"x\"; }\n",
         "guard 'gd': 'expect' is bytes in hexadecimal, two digits each");
  expect(HR "graph g { node gd hostop op guard buffer r expect \"000\" reason \"x\"; }\n",
         "guard 'gd': 'expect' is bytes in hexadecimal, two digits each");
  expect(HR "graph g { node s hostop op sync buffer r reason \"x\"; }\n",
         "v.graph:8:40: error: hostop node 's': 'buffer' belongs to a guard ('op guard')");
  /* optional attributes: either format version has them */
  expect("pgcc 1;\nbuffer r size 4 role host dtype f32;\nscalar v type f32 from r;\nscalar w type f32 callback;\n"
         "graph g { node n empty; }\n",
         NULL);
}
END_TEST

Suite *verify_suite(void) {
  Suite *s = suite_create("verify");
  TCase *t = tcase_create("verify");
  tcase_add_test(t, acyclic_diamond_passes);
  tcase_add_test(t, cycles_self_loops_and_duplicate_edges);
  tcase_add_test(t, arguments_must_fit_the_layout);
  tcase_add_test(t, by_value_structs);
  tcase_add_test(t, relocation_kinds);
  tcase_add_test(t, version_1_programs_have_whole_addresses_only);
  tcase_add_test(t, module_globals_are_checked);
  tcase_add_test(t, layouts_and_launches);
  tcase_add_test(t, host_reads_follow_a_sync_after_a_copy);
  tcase_add_test(t, host_buffers_and_read_scalars);
  suite_add_tcase(s, t);
  return s;
}

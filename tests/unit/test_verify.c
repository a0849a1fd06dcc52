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
         "has an inner pointer at 12, past its 16 bytes");
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

Suite *verify_suite(void) {
  Suite *s = suite_create("verify");
  TCase *t = tcase_create("verify");
  tcase_add_test(t, acyclic_diamond_passes);
  tcase_add_test(t, cycles_self_loops_and_duplicate_edges);
  tcase_add_test(t, arguments_must_fit_the_layout);
  tcase_add_test(t, by_value_structs);
  tcase_add_test(t, layouts_and_launches);
  suite_add_tcase(s, t);
  return s;
}

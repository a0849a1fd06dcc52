/* test_signatures.c -- .graph layouts against the CUDA C declarations (libclang) */
#include "../helpers.h"

#include <string.h>
#include <sys/stat.h>

static const char source[] =
    "struct Params { int *ptr[4]; int dims[56]; };\n"
    "namespace ops {\n"
    "__global__ void by_value(Params q, double x, char c) {}\n"
    "}\n"
    "extern \"C\" __global__ void plain(int n, const float *x) {}\n"
    "__device__ int not_a_kernel(int a) { return a; }\n";

static Parsed *check(const char *layouts) {
  mkdir("build/test-out", 0755);
  FILE *f = fopen("build/test-out/sig.cu", "w");
  ck_assert_ptr_nonnull(f);
  fputs(source, f);
  fclose(f);
  char text[2048];
  snprintf(text, sizeof text, "pgcc 1;\nmodule m cuda file \"build/test-out/sig.cu\";\n%s\ngraph g { node n empty; }\n",
           layouts);
  Parsed *p = parse_text("t.graph", text);
  ck_assert_msg(p->prog && p->diag.errors == 0, "%s", p->diags);
  pg_check_signatures(p->prog, &p->diag);
  fflush(p->stream);
  return p;
}

START_TEST(layouts_match_their_source) {
  /* a 256-byte struct by value, then a double at 256, then a char at 264 */
  Parsed *p = check("kernel k1 symbol \"_ZN3ops8by_valueE6Paramsdc\" module m {\n param 0 256 bytes ptrs [0, 8];\n"
                    " param 256 8 f64;\n param 264 1 i8;\n}\n"
                    "kernel k2 symbol \"plain\" module m { param 0 4 i32; param 8 8 ptr; }\n");
#ifdef PGCC_HAVE_LIBCLANG
  ck_assert_msg(p->diag.errors == 0 && p->diag.warnings == 0, "%s", p->diags);
#else
  ck_assert_int_eq(p->diag.warnings, 1);
  ck_assert_ptr_nonnull(strstr(p->diags, "built without libclang"));
#endif
  parsed_free(p);
}
END_TEST

START_TEST(mismatches_are_located) {
  Parsed *p = check("kernel k1 symbol \"_ZN3ops8by_valueE6Paramsdc\" module m {\n param 0 256 bytes;\n"
                    " param 256 8 i64;\n param 264 1 i8;\n}\n"
                    "kernel k2 symbol \"plain\" module m { param 0 4 i32; }\n"
                    "kernel k3 symbol \"not_a_kernel\" module m { param 0 4 i32; }\n");
#ifdef PGCC_HAVE_LIBCLANG
  ck_assert_ptr_nonnull(strstr(p->diags, "t.graph:5:2: error: parameter 1 of kernel 'k1' is i64 here, but 'double x'"));
  ck_assert_ptr_nonnull(strstr(p->diags, "t.graph:8:8: error: kernel 'k2' has 1 parameters here, but "
                                         "build/test-out/sig.cu:5 declares 2"));
  ck_assert_ptr_nonnull(strstr(p->diags, "error: kernel 'k3': 'build/test-out/sig.cu' declares no __global__ function "
                                         "'not_a_kernel'"));
  ck_assert_int_eq(p->diag.errors, 3);
#else
  ck_assert_int_eq(p->diag.errors, 0);
#endif
  parsed_free(p);
}
END_TEST

Suite *signatures_suite(void) {
  Suite *s = suite_create("signatures");
  TCase *t = tcase_create("signatures");
  tcase_add_test(t, layouts_match_their_source);
  tcase_add_test(t, mismatches_are_located);
  suite_add_tcase(s, t);
  return s;
}

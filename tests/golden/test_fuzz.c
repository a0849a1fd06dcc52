/*
 * test_fuzz.c -- every input the fuzzers ever broke pgcc with (tests/fuzz/) runs
 * through the fuzz target itself (fuzz/fuzz_pipeline.c, linked in): the whole
 * pipeline, and the .graph fixed point on whatever pgcc accepts.  A failure
 * aborts, which Check reports for that input.
 */
#include "../helpers.h"

#include <dirent.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

START_TEST(fuzz_findings_stay_fixed) {
  DIR *dir = opendir("tests/fuzz");
  ck_assert_ptr_nonnull(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "tests/fuzz/%s", e->d_name);
    size_t len;
    char *data = slurp(path, &len);
    ck_assert_ptr_nonnull(data);
    LLVMFuzzerTestOneInput((const unsigned char *)data, len);
    free(data);
    n++;
  }
  closedir(dir);
  ck_assert_int_ge(n, 2);
}
END_TEST

Suite *fuzz_suite(void) {
  Suite *s = suite_create("fuzz");
  TCase *t = tcase_create("fuzz");
  tcase_add_test(t, fuzz_findings_stay_fixed);
  suite_add_tcase(s, t);
  return s;
}

/* run.c -- runs every suite and ends with one line: "N passed, N failed". */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>

/* Every test's time limit, in seconds: generous, so that no test passes or fails by
 * the machine's speed (a 2-core machine under ASan is many times slower than a
 * workstation), yet a hang still ends.  Tests are written to be fast instead: large
 * buffers are compared whole, not an assertion per byte.  CK_DEFAULT_TIMEOUT, if
 * set, still wins. */
#define TEST_TIMEOUT "300"

int main(void) {
  setenv("CK_DEFAULT_TIMEOUT", TEST_TIMEOUT, 0); /* read when each test case is created */
  SRunner *sr = srunner_create(arena_suite());
  srunner_add_suite(sr, record_suite());
  srunner_add_suite(sr, diag_suite());
  srunner_add_suite(sr, dot_suite());
  srunner_add_suite(sr, graph_suite());
  srunner_add_suite(sr, verify_suite());
  srunner_add_suite(sr, corpus_suite());
  srunner_add_suite(sr, malformed_suite());
  srunner_add_suite(sr, cli_suite());
  srunner_add_suite(sr, partition_suite());
  srunner_add_suite(sr, fuzz_suite());
  srunner_add_suite(sr, signatures_suite());
  srunner_add_suite(sr, safetensors_suite());
  srunner_add_suite(sr, half_suite());
  srunner_add_suite(sr, widen_suite());
  srunner_run_all(sr, CK_NORMAL);
  int run = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  printf("%d passed, %d failed\n", run - failed, failed);
  return failed == 0 && run > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

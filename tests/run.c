/* run.c -- runs every suite and ends with one line: "N passed, N failed". */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
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
  srunner_run_all(sr, CK_NORMAL);
  int run = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  printf("%d passed, %d failed\n", run - failed, failed);
  return failed == 0 && run > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * test_malformed.c -- the malformed-input suite: for each tests/malformed/X.err,
 * `pgcc --stats X` exits 1 and prints exactly the diagnostic lines in X.err
 * (the "file:line:col: severity: message" lines, without source and caret lines).
 * Also: an unreadable file, and no partial output file on failure.
 */
#include "../helpers.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The diagnostic lines of a run: those that start with the input's name or "pgcc:". */
static char *diagnostic_lines(const char *err, const char *input) {
  size_t cap = strlen(err) + 1, n = 0, il = strlen(input);
  char *out = malloc(cap);
  for (const char *line = err; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line + 1) : strlen(line);
    if ((strncmp(line, input, il) == 0 && line[il] == ':') || strncmp(line, "pgcc: ", 6) == 0) {
      memcpy(out + n, line, len);
      n += len;
    }
    line += len;
  }
  out[n] = 0;
  return out;
}

/* For each DIR/X.err: pgcc ARG X exits 1, prints nothing on stdout and exactly the
 * diagnostic lines of X.err on stderr.  Returns how many cases there were. */
static int check_dir(const char *dirname, const char *arg) {
  DIR *dir = opendir(dirname);
  ck_assert_ptr_nonnull(dir);
  int cases = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".err") != 0) continue;
    char input[512], errfile[512];
    snprintf(input, sizeof input, "%s/%.*s", dirname, (int)(len - 4), e->d_name);
    snprintf(errfile, sizeof errfile, "%s/%s", dirname, e->d_name);
    char *want = slurp(errfile, NULL);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(strlen(want) > 0, "%s is empty", errfile);
    Run r = run_pgcc(arg, input, NULL);
    ck_assert_msg(r.status == 1, "%s: exit %d", input, r.status);
    ck_assert_msg(strlen(r.out) == 0, "%s: printed output despite errors", input);
    char *got = diagnostic_lines(r.err, input);
    ck_assert_msg(strcmp(got, want) == 0, "%s:\nwanted:\n%sgot:\n%s", input, want, r.err);
    free(got);
    free(want);
    run_free(&r);
    cases++;
  }
  closedir(dir);
  return cases;
}

START_TEST(every_malformed_input_is_diagnosed) { ck_assert_int_ge(check_dir("tests/malformed", "--stats"), 20); }
END_TEST

/* Programs that are valid but cannot become C (CUDA's rules for bodies and
 * conditions): located errors from the C generator, no output. */
START_TEST(every_program_c_cannot_express_is_diagnosed) { ck_assert_int_ge(check_dir("tests/malformed_c", "--emit=c"), 5); }
END_TEST

START_TEST(every_malformed_input_has_expectations) {
  DIR *dir = opendir("tests/malformed");
  ck_assert_ptr_nonnull(dir);
  for (struct dirent *e; (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || (len > 4 && strcmp(e->d_name + len - 4, ".err") == 0)) continue;
    char errfile[512];
    snprintf(errfile, sizeof errfile, "tests/malformed/%s.err", e->d_name);
    ck_assert_msg(file_exists(errfile), "tests/malformed/%s has no .err file", e->d_name);
  }
  closedir(dir);
}
END_TEST

START_TEST(unreadable_file) {
  char path[] = "/tmp/pgcc-unreadable-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "digraph {}\n", 11), 11);
  close(fd);
  ck_assert_int_eq(chmod(path, 0), 0);
  /* root reads anything, so the child drops to nobody; the parent cleans up */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (getuid() == 0 && setuid(65534) != 0) _exit(2);
    Run r = run_pgcc("--stats", path, NULL);
    char want[256];
    snprintf(want, sizeof want, "pgcc: error: cannot read '%s': Permission denied\n", path);
    _exit(r.status == 1 && strcmp(r.err, want) == 0 ? 0 : 1);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  unlink(path);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unreadable file not diagnosed (child status %d)", st);
}
END_TEST

START_TEST(no_partial_output_on_error) {
  const char *out = "build/test-out/partial.graph";
  mkdir("build/test-out", 0755);
  unlink(out);
  Run r = run_pgcc("--emit=graph", "-o", out, "tests/malformed/cycle.dot", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert(!file_exists(out));
  run_free(&r);
  /* and on success: the file, and no temporary beside it */
  r = run_pgcc("--emit=graph", "-o", out, "tests/corpus/cuda/allkinds_default.dot", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert(file_exists(out));
  DIR *dir = opendir("build/test-out");
  for (struct dirent *e; (e = readdir(dir));) ck_assert_msg(!strstr(e->d_name, ".tmp."), "left %s", e->d_name);
  closedir(dir);
  run_free(&r);
  /* an output that cannot be written: error, exit 1, nothing left */
  r = run_pgcc("--emit=graph", "-o", "build/test-out/no/such/dir/x.graph", "tests/corpus/cuda/allkinds_default.dot",
               NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.err, "pgcc: error: cannot write 'build/test-out/no/such/dir/x.graph'"));
  run_free(&r);
}
END_TEST

Suite *malformed_suite(void) {
  Suite *s = suite_create("malformed");
  TCase *t = tcase_create("malformed");
  tcase_add_test(t, every_malformed_input_is_diagnosed);
  tcase_add_test(t, every_program_c_cannot_express_is_diagnosed);
  tcase_add_test(t, every_malformed_input_has_expectations);
  tcase_add_test(t, unreadable_file);
  tcase_add_test(t, no_partial_output_on_error);
  suite_add_tcase(s, t);
  return s;
}

/* test_diag.c -- diagnostics, source loading and dialect detection */
#include "../helpers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(error_has_location_line_and_caret) {
  PgArena *a = pg_arena_new();
  char *buf;
  size_t n;
  FILE *f = open_memstream(&buf, &n);
  PgDiag d = {.out = f};
  PgSource *src = pg_source_from_string(a, "x.dot", "digraph {\n\tfoo -> bar;\n}\n");
  pg_error(&d, (PgLoc){src, 2, 9}, "no node '%s'", "bar");
  pg_warning(&d, (PgLoc){src, 1, 1}, "careful");
  fclose(f);
  ck_assert_str_eq(buf, "x.dot:2:9: error: no node 'bar'\n"
                        " \tfoo -> bar;\n"
                        " \t       ^\n"
                        "x.dot:1:1: warning: careful\n"
                        " digraph {\n"
                        " ^\n");
  ck_assert_int_eq(d.errors, 1);
  ck_assert_int_eq(d.warnings, 1);
  free(buf);
  pg_arena_free(a);
}
END_TEST

START_TEST(too_many_errors_stops_reporting) {
  PgArena *a = pg_arena_new();
  char *buf;
  size_t n;
  FILE *f = open_memstream(&buf, &n);
  PgDiag d = {.out = f, .max_errors = 3};
  PgSource *src = pg_source_from_string(a, "x", "a\n");
  for (int i = 0; i < 10; i++) pg_error(&d, (PgLoc){src, 1, 1}, "e%d", i);
  fclose(f);
  ck_assert_int_eq(d.errors, 10);
  ck_assert(pg_too_many_errors(&d));
  ck_assert_ptr_nonnull(strstr(buf, "e2"));
  ck_assert_ptr_null(strstr(buf, "e3"));
  ck_assert_ptr_nonnull(strstr(buf, "too many errors (3), stopping"));
  free(buf);
  pg_arena_free(a);
}
END_TEST

START_TEST(loc_advance_counts_lines) {
  PgLoc l = pg_loc_advance((PgLoc){NULL, 3, 5}, "ab\ncd\nef", 7);
  ck_assert_int_eq(l.line, 5);
  ck_assert_int_eq(l.col, 2);
}
END_TEST

static PgDialect detect(const char *text, PgLoc *where) {
  PgArena *a = pg_arena_new();
  PgSource *src = pg_source_from_string(a, "x", text);
  PgDialect r = pg_detect_dialect(src, where);
  pg_arena_free(a);
  return r;
}

START_TEST(dialects_by_content) {
  PgLoc w;
  ck_assert_int_eq(detect("digraph dot {}", &w), PG_DIALECT_DOT);
  ck_assert_int_eq(detect("  // c\n/* x\n y */ Digraph {}", &w), PG_DIALECT_DOT);
  ck_assert_int_eq(w.line, 3);
  ck_assert_int_eq(w.col, 7);
  ck_assert_int_eq(detect("strict digraph {}", &w), PG_DIALECT_DOT);
  ck_assert_int_eq(detect("# comment\npgcc 1;", &w), PG_DIALECT_GRAPH);
  ck_assert_int_eq(detect("pgccx 1;", &w), PG_DIALECT_UNKNOWN);
  ck_assert_int_eq(detect("digraphs", &w), PG_DIALECT_UNKNOWN);
  ck_assert_int_eq(detect("", &w), PG_DIALECT_UNKNOWN);
}
END_TEST

START_TEST(blank_source) {
  PgArena *a = pg_arena_new();
  ck_assert(pg_source_is_blank(pg_source_from_string(a, "x", "  \n# only a comment\n")));
  ck_assert(!pg_source_is_blank(pg_source_from_string(a, "x", "  \nhello\n")));
  pg_arena_free(a);
}
END_TEST

/* Writes data to a file and loads it: whether pg_source_load took it, and what it
 * printed (malloc'd). */
static char *load_file(const char *data, size_t len, bool *loaded) {
  char path[] = "/tmp/pgcc-test-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
  close(fd);
  PgArena *a = pg_arena_new();
  char *buf;
  size_t n;
  FILE *f = open_memstream(&buf, &n);
  PgDiag d = {.out = f};
  *loaded = pg_source_load(a, &d, path) != NULL;
  fclose(f);
  pg_arena_free(a);
  unlink(path);
  return buf;
}

START_TEST(load_rejects_binary_with_location) {
  bool loaded;
  char *out = load_file("digraph {\n  a\x01", 14, &loaded);
  ck_assert(!loaded);
  ck_assert_ptr_nonnull(strstr(out, ":2:4: error: binary data (byte 0x01)"));
  free(out);
}
END_TEST

/* The check reads eight bytes at a time: a bad byte is found at every position
 * in a word, in the tail past the last whole word, right after a newline, and in a
 * file large enough to be mapped rather than read; 0x7f and 0x1f count, tab,
 * newline and bytes of 0x80 and up do not. */
START_TEST(load_finds_binary_anywhere) {
  size_t sizes[] = {70, (2u << 20) + 13};
  unsigned char bad[] = {0x00, 0x1f, 0x7f, 0x08, 0x0e}; /* and the bytes beside \t..\r */
  for (size_t z = 0; z < 2; z++) {
    size_t len = sizes[z];
    char *text = malloc(len);
    for (size_t i = 0; i < len; i++) /* 40-byte lines: whole words with no byte below 0x20 */
      text[i] = i % 40 == 39 ? '\n' : i % 40 == 3 ? '\t' : i % 40 == 5 ? (char)0xc3 : 'a';
    for (size_t pos = len - 36; pos < len; pos++) {
      char was = text[pos];
      unsigned char b = bad[pos % 5];
      text[pos] = (char)b;
      bool loaded;
      char *out = load_file(text, len, &loaded);
      char want[64];
      snprintf(want, sizeof want, ":%zu:%zu: error: binary data (byte 0x%02x)", pos / 40 + 1, pos % 40 + 1, b);
      ck_assert(!loaded);
      ck_assert_msg(strstr(out, want), "wanted '%s', got '%s'", want, out);
      free(out);
      text[pos] = was; /* the same file without it is text */
      out = load_file(text, len, &loaded);
      ck_assert_msg(loaded, "%s", out);
      free(out);
    }
    free(text);
  }
}
END_TEST

Suite *diag_suite(void) {
  Suite *s = suite_create("diag");
  TCase *t = tcase_create("diag");
  tcase_add_test(t, error_has_location_line_and_caret);
  tcase_add_test(t, too_many_errors_stops_reporting);
  tcase_add_test(t, loc_advance_counts_lines);
  tcase_add_test(t, dialects_by_content);
  tcase_add_test(t, blank_source);
  tcase_add_test(t, load_rejects_binary_with_location);
  tcase_add_test(t, load_finds_binary_anywhere);
  suite_add_tcase(s, t);
  return s;
}

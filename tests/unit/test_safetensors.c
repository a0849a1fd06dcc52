/* test_safetensors.c -- the safetensors header reader (compiler/safetensors.c) and
 * its small JSON reader: what it keeps from valid headers, and one diagnostic for
 * every kind of malformed one.  Each case writes a file: 8 bytes of header length,
 * the header, then `data` bytes. */
#include "../helpers.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  PgArena *a;
  PgWeights w;
  PgDiag d;
  char *msgs;
  size_t len;
  bool ok;
} Read;

static Read *read_header(const char *header, size_t data) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/pgcc-test-st-%d.safetensors", (int)getpid());
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  unsigned long long n = strlen(header);
  for (int i = 0; i < 8; i++) fputc((int)(n >> (8 * i) & 0xff), f);
  fputs(header, f);
  for (size_t i = 0; i < data; i++) fputc(0x5a, f);
  ck_assert_int_eq(fclose(f), 0);

  Read *r = calloc(1, sizeof *r);
  r->a = pg_arena_new();
  r->w.name = "w";
  r->w.path = path;
  FILE *out = open_memstream(&r->msgs, &r->len);
  r->d.out = out;
  r->ok = pg_safetensors_read(r->a, &r->d, (PgLoc){0}, &r->w);
  fclose(out);
  unlink(path);
  return r;
}

static void read_free(Read *r) {
  pg_arena_free(r->a);
  free(r->msgs);
  free(r);
}

static const PgTensorInfo *tensor(const Read *r, const char *name) { return pg_map_get(r->w.tensors, name); }

START_TEST(reads_what_pgcc_uses_and_skips_the_rest) {
  Read *r = read_header("{\"__metadata__\": {\"format\": \"pt\", \"nested\": {\"a\": [1, 2.5e-3, true, null]}},\n"
                        " \"layers.0.weight\" : {\"dtype\":\"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]},\n"
                        " \"b\": {\"data_offsets\": [24,32], \"shape\": [], \"dtype\": \"BF16\", \"extra\": {\"x\": -1}},"
                        " \"odd\": {\"dtype\": \"F8_E4M3\", \"shape\": [8], \"data_offsets\": [32, 40]}}  ",
                        40);
  ck_assert_msg(r->ok, "%s", r->msgs);
  ck_assert_int_eq(r->d.errors, 0);
  const PgTensorInfo *w = tensor(r, "layers.0.weight"), *b = tensor(r, "b"), *odd = tensor(r, "odd");
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(w->dtype, PG_T_F32);
  ck_assert_uint_eq(w->begin, 0);
  ck_assert_uint_eq(w->end, 24);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(b->dtype, PG_T_BF16);
  ck_assert_uint_eq(b->begin, 24);
  ck_assert_uint_eq(b->end, 32);
  ck_assert_int_eq(odd->dtype, PG_T_BYTES); /* a dtype pgcc has no name for */
  ck_assert_ptr_null(tensor(r, "__metadata__"));
  ck_assert_uint_eq(r->w.file_size, 8 + r->w.header_len + 40);
  read_free(r);
}
END_TEST

/* Names with every escape JSON has, decoded to UTF-8. */
START_TEST(escapes_in_names_are_decoded) {
  Read *r = read_header("{\"a\\\"b\\\\c\\/d\\n\\u00e9\\u20ac\\ud83d\\ude00\": {\"dtype\": \"U8\", \"data_offsets\": [0, 1]},"
                        " \"\": {\"dtype\": \"U8\", \"data_offsets\": [1, 1]}}",
                        1);
  ck_assert_msg(r->ok, "%s", r->msgs);
  ck_assert_ptr_nonnull(tensor(r, "a\"b\\c/d\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  ck_assert_ptr_nonnull(tensor(r, ""));
  ck_assert_uint_eq(tensor(r, "")->end, 1);
  read_free(r);
}
END_TEST

START_TEST(an_empty_header_has_no_tensors) {
  Read *r = read_header("{ }", 0);
  ck_assert(r->ok);
  ck_assert_ptr_null(tensor(r, "x"));
  read_free(r);
}
END_TEST

static const struct {
  const char *header;
  const char *message; /* a part of the one diagnostic expected */
} bad[] = {
    {"", "the header is not a JSON object: expected '{'"},
    {"[1, 2]", "the header is not a JSON object: expected '{'"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}", "expected ',' or '}'"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}} x", "text after the header's object"},
    {"{\"x\" {\"dtype\": \"F32\"}}", "expected ':'"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]},}", "expected a string"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]", "expected ',' or '}'"},
    {"{\"x", "unterminated string"},
    {"{\"x\\q\": 1}", "a bad escape in a string"},
    {"{\"x\\u12g4\": 1}", "a bad \\u escape"},
    {"{\"x\\ud83d\": 1}", "an unpaired surrogate"},
    {"{\"x\\udc00\": 1}", "an unpaired surrogate"},
    {"{\"x\\u0000\": 1}", "a NUL character"},
    {"{\"x\ty\": 1}", "a control character"},
    {"{\"__metadata__\": {\"a\": tru}}", "expected a value"},
    {"{\"__metadata__\": {\"a\": -}}", "expected a value"},
    {"{\"__metadata__\": {\"a\": 1.}}", "without digits after '.'"},
    {"{\"__metadata__\": {\"a\": 1e}}", "without digits in its exponent"},
    {"{\"x\": [0, 4]}", "tensor 'x' is not an object"},
    {"{\"x\": {\"data_offsets\": [0, 4]}}", "tensor 'x' has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": 3, \"data_offsets\": [0, 4]}}", "tensor 'x' has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": \"F32\"}}", "tensor 'x' has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4, 8]}}", "tensor 'x' has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4.0]}}", "tensor 'x' has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 99999999999999999999]}}", "has no dtype or data_offsets"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 5]}}", "data_offsets [0, 5] outside the 4 bytes of data"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [3, 2]}}", "data_offsets [3, 2] outside"},
    {"{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [-1, 2]}}", "data_offsets [-1, 2] outside"},
};

START_TEST(malformed_headers_get_one_diagnostic) {
  Read *r = read_header(bad[_i].header, 4);
  ck_assert_msg(!r->ok, "case %d read as valid: %s", _i, bad[_i].header);
  ck_assert_int_eq(r->d.errors, 1);
  ck_assert_msg(strstr(r->msgs, bad[_i].message), "case %d: wanted '%s' in: %s", _i, bad[_i].message, r->msgs);
  read_free(r);
}
END_TEST

/* Nesting deeper than the reader follows is an error, not a stack overflow. */
START_TEST(deep_nesting_is_refused) {
  enum { DEEP = 100000 };
  char *h = malloc(2 * DEEP + 64);
  size_t n = (size_t)sprintf(h, "{\"__metadata__\": ");
  for (int i = 0; i < DEEP; i++) h[n++] = '[';
  for (int i = 0; i < DEEP; i++) h[n++] = ']';
  strcpy(h + n, "}");
  Read *r = read_header(h, 0);
  ck_assert(!r->ok);
  ck_assert_int_eq(r->d.errors, 1);
  ck_assert_ptr_nonnull(strstr(r->msgs, "nested too deeply"));
  read_free(r);
  free(h);
}
END_TEST

/* Every prefix of a valid header is malformed (nothing is read past the end) and
 * gives exactly one diagnostic. */
START_TEST(every_truncation_is_one_error) {
  const char *full = "{\"__metadata__\": {\"k\": \"v\\u00e9\"}, \"t\": {\"dtype\": \"F16\", \"shape\": [2], "
                     "\"data_offsets\": [0, 4]}}";
  char buf[256];
  for (size_t n = 0; n < strlen(full); n++) {
    memcpy(buf, full, n);
    buf[n] = '\0';
    Read *r = read_header(buf, 4);
    ck_assert_msg(!r->ok && r->d.errors == 1, "prefix of %zu bytes: ok=%d errors=%d", n, r->ok, r->d.errors);
    read_free(r);
  }
}
END_TEST

Suite *safetensors_suite(void) {
  Suite *s = suite_create("safetensors");
  TCase *t = tcase_create("header");
  tcase_add_test(t, reads_what_pgcc_uses_and_skips_the_rest);
  tcase_add_test(t, escapes_in_names_are_decoded);
  tcase_add_test(t, an_empty_header_has_no_tensors);
  tcase_add_loop_test(t, malformed_headers_get_one_diagnostic, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(t, deep_nesting_is_refused);
  tcase_add_test(t, every_truncation_is_one_error);
  suite_add_tcase(s, t);
  return s;
}

/* test_record.c -- the record-label sub-parser and its tables */
#include "../helpers.h"

#include <string.h>

typedef struct {
  PgArena *a;
  PgDiag d;
  char *msgs;
  size_t len;
  FILE *f;
} Ctx;

static void ctx_open(Ctx *c) {
  memset(c, 0, sizeof *c);
  c->a = pg_arena_new();
  c->f = open_memstream(&c->msgs, &c->len);
  c->d.out = c->f;
}

static void ctx_close(Ctx *c) {
  fclose(c->f);
  free(c->msgs);
  pg_arena_free(c->a);
}

static const PgRecField *parse(Ctx *c, const char *label) {
  PgSource *src = pg_source_from_string(c->a, "t.dot", label);
  const PgRecField *r = pg_record_parse(c->a, &c->d, label, (PgLoc){src, 1, 1});
  fflush(c->f);
  return r;
}

static const char *get(Ctx *c, const PgRecField *rec, const char *key) {
  PgRecPairs pairs = {0};
  pg_record_pairs(c->a, rec, &pairs);
  const PgRecField *v = pg_record_get(&pairs, key);
  return v ? v->text : NULL;
}

START_TEST(record_structure_and_escapes) {
  Ctx c;
  ctx_open(&c);
  const PgRecField *r = parse(&c, "{KERNEL\n| {ID | 3 | _Z5add3dPfPKfS1_i\\<\\<\\<\\{2,2\\},\\{128,2\\},64\\>\\>\\>}}");
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->kids.n, 1);
  const PgRecField *top = r->kids.v[0];
  ck_assert(top->is_group);
  ck_assert_uint_eq(top->kids.n, 2);
  ck_assert_str_eq(top->kids.v[0]->text, "KERNEL"); /* trimmed of the newline */
  ck_assert_str_eq(get(&c, top, "ID"), "3");
  ck_assert_str_eq(get(&c, top, "ID.1"), "_Z5add3dPfPKfS1_i<<<{2,2},{128,2},64>>>");
  ctx_close(&c);
}
END_TEST

START_TEST(record_table_shapes) {
  Ctx c;
  ctx_open(&c);
  /* the memcpy record from CUDA's verbose dump */
  const PgRecField *r = parse(&c,
      "{\nMEMCPY\n| {{ID | node handle} | {1 (topoId: 11) | 0x000055F11775FF18}}\n"
      "| {kind | DtoD (DEVICE to DEVICE)}\n"
      "| {{srcPtr | dstPtr} | {pitch | ptr | xsize | ysize | pitch | ptr | xsize | ysize} | "
      "{0 | 0x00007F9399E00000 | 0 | 0 | 0 | 0x00007F9399E01000 | 0 | 0}}\n"
      "| {{srcPos | {{x | 0} | {y | 0} | {z | 0}}} | {dstPos | {{x | 8} | {y | 0} | {z | 0}}} | "
      "{Extent | {{Width | 4096} | {Height | 1} | {Depth | 1}}}}\n}");
  ck_assert_ptr_nonnull(r);
  const PgRecField *top = r->kids.v[0];
  ck_assert_str_eq(get(&c, top, "ID"), "1 (topoId: 11)");
  ck_assert_str_eq(get(&c, top, "node handle"), "0x000055F11775FF18");
  ck_assert_str_eq(get(&c, top, "kind"), "DtoD (DEVICE to DEVICE)");
  ck_assert_str_eq(get(&c, top, "srcPtr.ptr"), "0x00007F9399E00000");
  ck_assert_str_eq(get(&c, top, "dstPtr.ptr"), "0x00007F9399E01000");
  ck_assert_str_eq(get(&c, top, "dstPos.x"), "8");
  ck_assert_str_eq(get(&c, top, "Extent.Width"), "4096");
  ck_assert_ptr_null(get(&c, top, "Extent.Bogus"));
  /* nested key groups: the mem-alloc pool properties */
  r = parse(&c, "{MEM_ALLOC | {{{poolProps | {allocType | handleTypes | {location | {type | id}}}} | "
                "{PINNED | NONE | DEVICE | 0}}} | {{bytesize | dptr} | {1048576 | 0x0000000302000000}}}");
  ck_assert_ptr_nonnull(r);
  top = r->kids.v[0];
  ck_assert_str_eq(get(&c, top, "poolProps.allocType"), "PINNED");
  ck_assert_str_eq(get(&c, top, "poolProps.location.type"), "DEVICE");
  ck_assert_str_eq(get(&c, top, "poolProps.location.id"), "0");
  ck_assert_str_eq(get(&c, top, "bytesize"), "1048576");
  /* prefix + key group + value group */
  r = parse(&c, "{KERNEL | {accessPolicyWindow | {base_ptr | num_bytes} | {0x0 | 16}}}");
  ck_assert_str_eq(get(&c, r->kids.v[0], "accessPolicyWindow.num_bytes"), "16");
  ctx_close(&c);
}
END_TEST

START_TEST(record_ports_and_empty_fields) {
  Ctx c;
  ctx_open(&c);
  const PgRecField *r = parse(&c, "{<p0> head | | {\\| bar | x}}");
  ck_assert_ptr_nonnull(r);
  const PgRecField *top = r->kids.v[0];
  ck_assert_uint_eq(top->kids.n, 3);
  ck_assert_str_eq(top->kids.v[0]->text, "head");
  ck_assert_str_eq(top->kids.v[1]->text, "");
  ck_assert_str_eq(top->kids.v[2]->kids.v[0]->text, "| bar");
  ctx_close(&c);
}
END_TEST

START_TEST(record_unbalanced_is_located) {
  Ctx c;
  ctx_open(&c);
  ck_assert_ptr_null(parse(&c, "{A | {B | C}"));
  ck_assert_int_eq(c.d.errors, 1);
  ck_assert_ptr_nonnull(strstr(c.msgs, "t.dot:1:1: error: unbalanced '{' in record label"));
  ck_assert_ptr_null(parse(&c, "{A}\n | B}"));
  ck_assert_ptr_nonnull(strstr(c.msgs, "t.dot:2:5: error: unbalanced '}' in record label"));
  ctx_close(&c);
}
END_TEST

START_TEST(label_unescape) {
  PgArena *a = pg_arena_new();
  const char *raw = "\\<\\<\\<4,256,0\\>\\>\\> a\\nb \\\"q\\\"";
  ck_assert_str_eq(pg_label_unescape(a, raw, strlen(raw)), "<<<4,256,0>>> a\nb \"q\"");
  pg_arena_free(a);
}
END_TEST

Suite *record_suite(void) {
  Suite *s = suite_create("record");
  TCase *t = tcase_create("record");
  tcase_add_test(t, record_structure_and_escapes);
  tcase_add_test(t, record_table_shapes);
  tcase_add_test(t, record_ports_and_empty_fields);
  tcase_add_test(t, record_unbalanced_is_located);
  tcase_add_test(t, label_unescape);
  suite_add_tcase(s, t);
  return s;
}

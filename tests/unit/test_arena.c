/* test_arena.c -- the arena and the string map */
#include "../helpers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(arena_aligned_and_zeroed) {
  PgArena *a = pg_arena_new();
  for (size_t i = 1; i < 5000; i += 37) {
    unsigned char *p = pg_arena_alloc(a, i);
    ck_assert_uint_eq((uintptr_t)p % 16, 0);
    ck_assert_uint_eq(first_nonzero(p, i), i);
    memset(p, 0xab, i); /* must not disturb earlier blocks: checked below */
  }
  char *s = pg_arena_strdup(a, "kernel");
  ck_assert_str_eq(s, "kernel");
  ck_assert_uint_ge(pg_arena_used(a), 5000);
  pg_arena_free(a);
}
END_TEST

START_TEST(arena_large_and_printf) {
  PgArena *a = pg_arena_new();
  char *big = pg_arena_alloc(a, 10u << 20); /* larger than any block so far */
  big[(10u << 20) - 1] = 1;
  char *s = pg_arena_printf(a, "g%u.n%u", 4u, 15u);
  ck_assert_str_eq(s, "g4.n15");
  ck_assert_str_eq(pg_arena_strndup(a, "abcdef", 3), "abc");
  pg_arena_free(a);
}
END_TEST

/* A mapped block (2 MiB and more) is zero when fresh without a memset; after a reset
 * it holds old data, which the next allocations must not see. */
START_TEST(arena_reset_rezeroes_a_mapped_block) {
  PgArena *a = pg_arena_new();
  size_t big = 4u << 20;
  unsigned char *p = pg_arena_alloc(a, big);
  ck_assert_uint_eq(first_nonzero(p, big), big);
  memset(p, 0xcd, big);
  pg_arena_reset(a);
  unsigned char *q = pg_arena_alloc(a, 100), *r = pg_arena_alloc(a, big / 2);
  ck_assert_ptr_eq(q, p); /* the same block, from its start */
  ck_assert_uint_eq(first_nonzero(q, 100), 100);
  ck_assert_uint_eq(first_nonzero(r, big / 2), big / 2);
  pg_arena_free(a);
}
END_TEST

START_TEST(vec_grows_and_keeps_contents) {
  PgArena *a = pg_arena_new();
  PG_VEC(int) v = {0};
  for (int i = 0; i < 100000; i++) pg_vec_push(a, v, i * 3);
  ck_assert_uint_eq(v.n, 100000);
  int bad = -1;
  for (int i = 0; i < 100000 && bad < 0; i++)
    if (v.v[i] != i * 3) bad = i;
  ck_assert_int_eq(bad, -1);
  pg_arena_free(a);
}
END_TEST

/* A vector that is the arena's last allocation grows where it is: the arena uses
 * only the final size, not the sum of every doubling; once something else is
 * allocated it moves, keeping its contents, and new elements start zeroed. */
START_TEST(vec_grows_in_place_when_last) {
  PgArena *a = pg_arena_new();
  (void)pg_arena_alloc(a, 100);
  size_t before = pg_arena_used(a);
  PG_VEC(uint64_t) v = {0};
  for (uint64_t i = 0; i < 4096; i++) pg_vec_push(a, v, i + 1);
  ck_assert_uint_eq(v.cap, 4096);
  ck_assert_uint_eq(pg_arena_used(a) - before, 4096 * sizeof(uint64_t)); /* no copies left behind */
  uint64_t *at = v.v;
  char *other = pg_arena_strdup(a, "x");
  for (uint64_t i = 4096; i < 5000; i++) pg_vec_push(a, v, i + 1);
  ck_assert_ptr_ne(v.v, at); /* not the last any more: moved */
  ck_assert_str_eq(other, "x");
  uint64_t bad = 0;
  for (uint64_t i = 0; i < 5000 && !bad; i++)
    if (v.v[i] != i + 1) bad = i + 1;
  ck_assert_uint_eq(bad, 0);
  ck_assert_uint_eq(first_nonzero(v.v + v.n, (v.cap - v.n) * sizeof *v.v), (v.cap - v.n) * sizeof *v.v);
  /* in place after a reset, over bytes an earlier use left dirty */
  pg_arena_reset(a);
  unsigned char *dirty = pg_arena_alloc(a, 4096);
  memset(dirty, 0xab, 4096);
  pg_arena_reset(a);
  PG_VEC(unsigned char) w = {0};
  pg_vec_push(a, w, 1);
  while (w.cap < 2048) w.v = pg_arena_grow(a, w.v, &w.cap, 1);
  ck_assert_ptr_eq(w.v, dirty);
  ck_assert_uint_eq(w.v[0], 1);
  ck_assert_uint_eq(first_nonzero(w.v + 1, w.cap - 1), w.cap - 1);
  pg_arena_free(a);
}
END_TEST

/* A mapped file reads as its bytes followed by two NULs, also when its length is a
 * whole number of pages (the NULs are then on a page of their own). */
START_TEST(arena_maps_a_file_with_nuls_after) {
  long page = sysconf(_SC_PAGESIZE);
  size_t lens[] = {1, 5000, (size_t)page, 2 * (size_t)page - 1};
  for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
    char path[] = "/tmp/pgcc-map-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    char *want = malloc(lens[k]);
    for (size_t i = 0; i < lens[k]; i++) want[i] = "abcdefg"[i % 7];
    ck_assert_int_eq(write(fd, want, lens[k]), (ssize_t)lens[k]);
    PgArena *a = pg_arena_new();
    const char *t = pg_arena_map_file(a, fd, lens[k]);
    close(fd); /* the mapping outlives the descriptor */
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(memcmp(t, want, lens[k]), 0);
    free(want);
    ck_assert_int_eq(t[lens[k]], 0);
    ck_assert_int_eq(t[lens[k] + 1], 0);
    pg_arena_free(a);
  }
}
END_TEST

START_TEST(map_put_get_many) {
  PgArena *a = pg_arena_new();
  PgMap *m = pg_map_new(a);
  static int vals[20000];
  int bad = -1; /* the first key that misbehaves: one assertion for all of them */
  for (int i = 0; i < 20000 && bad < 0; i++)
    if (pg_map_put(m, pg_arena_printf(a, "graph_1_node_%d", i), &vals[i]) != NULL) bad = i;
  ck_assert_int_eq(bad, -1);
  for (int i = 0; i < 20000 && bad < 0; i++) {
    char k[64];
    snprintf(k, sizeof k, "graph_1_node_%d", i);
    if (pg_map_get(m, k) != &vals[i] || pg_map_getn(m, k, strlen(k)) != &vals[i]) bad = i;
  }
  ck_assert_int_eq(bad, -1);
  ck_assert_ptr_null(pg_map_get(m, "graph_1_node_20000"));
  ck_assert_ptr_null(pg_map_getn(m, "graph_1_node_1", 13)); /* a prefix is another key */
  pg_arena_free(a);
}
END_TEST

/* Batched lookups give what one-by-one lookups give, for batches shorter and
 * longer than the prefetch distance, with absent keys among them. */
START_TEST(map_get_many_matches_getn) {
  PgArena *a = pg_arena_new();
  PgMap *m = pg_map_new(a);
  static int vals[3000];
  for (int i = 0; i < 3000; i += 2) pg_map_put(m, pg_arena_printf(a, "g1.n%d", i), &vals[i]);
  size_t counts[] = {0, 1, 5, 16, 17, 3000};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
    size_t n = counts[c];
    const char **keys = malloc((n + 1) * sizeof *keys);
    size_t *lens = malloc((n + 1) * sizeof *lens);
    void **got = malloc((n + 1) * sizeof *got);
    for (size_t i = 0; i < n; i++) {
      keys[i] = pg_arena_printf(a, "g1.n%zu", (i * 7) % 3000); /* odd ones are absent */
      lens[i] = strlen(keys[i]);
      got[i] = &vals[0] + 1; /* must be overwritten */
    }
    pg_map_get_many(m, n, keys, lens, got);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++) {
      size_t k = (i * 7) % 3000;
      if (got[i] != (k % 2 ? NULL : (void *)&vals[k]) || got[i] != pg_map_getn(m, keys[i], lens[i])) bad = i;
    }
    ck_assert_uint_eq(bad, n);
    free(keys), free(lens), free(got);
  }
  pg_arena_free(a);
}
END_TEST

START_TEST(map_put_keeps_first) {
  PgArena *a = pg_arena_new();
  PgMap *m = pg_map_new(a);
  int x, y;
  ck_assert_ptr_null(pg_map_put(m, "k", &x));
  ck_assert_ptr_eq(pg_map_put(m, "k", &y), &x);
  ck_assert_ptr_eq(pg_map_get(m, "k"), &x);
  pg_arena_free(a);
}
END_TEST

START_TEST(map_slot_and_reserve) {
  PgArena *a = pg_arena_new();
  PgMap *m = pg_map_new(a);
  int x;
  void **slot = pg_map_slot(m, "n0");
  ck_assert_ptr_null(*slot); /* added, empty */
  *slot = &x;
  ck_assert_ptr_eq(pg_map_get(m, "n0"), &x);
  ck_assert_ptr_eq(*pg_map_slot(m, "n0"), &x); /* found, not added again */
  pg_map_reserve(m, 5000); /* entries survive the move to the bigger table */
  ck_assert_ptr_eq(pg_map_get(m, "n0"), &x);
  size_t before = pg_arena_used(a);
  static int vals[5000];
  for (int i = 1; i < 5000; i++) *pg_map_slot(m, pg_arena_printf(a, "n%d", i)) = &vals[i];
  int bad = 0;
  for (int i = 1; i < 5000 && !bad; i++)
    if (pg_map_get(m, pg_arena_printf(a, "n%d", i)) != &vals[i]) bad = i;
  ck_assert_int_eq(bad, 0);
  /* no table was allocated after the reservation: only the 4999 keys (16 bytes each) */
  ck_assert_uint_le(pg_arena_used(a) - before, 2 * 4999 * 16);
  pg_arena_free(a);
}
END_TEST

Suite *arena_suite(void) {
  Suite *s = suite_create("arena");
  TCase *t = tcase_create("arena");
  tcase_add_test(t, arena_aligned_and_zeroed);
  tcase_add_test(t, arena_large_and_printf);
  tcase_add_test(t, arena_reset_rezeroes_a_mapped_block);
  tcase_add_test(t, vec_grows_and_keeps_contents);
  tcase_add_test(t, vec_grows_in_place_when_last);
  tcase_add_test(t, arena_maps_a_file_with_nuls_after);
  tcase_add_test(t, map_put_get_many);
  tcase_add_test(t, map_get_many_matches_getn);
  tcase_add_test(t, map_put_keeps_first);
  tcase_add_test(t, map_slot_and_reserve);
  suite_add_tcase(s, t);
  return s;
}

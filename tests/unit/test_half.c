/* test_half.c -- runtime/half.h, the f16 and bf16 conversions pgcc (literals) and libpgrt
 * (pgrt_scalar_convert) share, against references computed here another way: every one of
 * the 65536 bit patterns of each format decoded with ldexp and round-tripped; every
 * midpoint between neighbours, and its two neighbouring doubles, rounded; random doubles
 * rounded to the nearest value found by bisecting the sorted table of all finite halves
 * (ties to the even pattern; past the largest finite value by half an ulp: infinity). */
#include "../helpers.h"
#include "../../runtime/half.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  const char *name;
  int ebits, mbits;
} Format;

static const Format formats[] = {{"f16", PG_HALF_F16}, {"bf16", PG_HALF_BF16}};

static int exp_of(uint16_t h, const Format *f) { return h >> f->mbits & ((1 << f->ebits) - 1); }
static int mant_of(uint16_t h, const Format *f) { return h & ((1 << f->mbits) - 1); }
static int is_nan(uint16_t h, const Format *f) { return exp_of(h, f) == (1 << f->ebits) - 1 && mant_of(h, f); }
static uint16_t sign_bit(const Format *f) { return (uint16_t)(1u << (f->ebits + f->mbits)); }
static uint16_t inf_of(const Format *f) { return (uint16_t)(((1u << f->ebits) - 1) << f->mbits); }

/* The value of h by the format's definition, with ldexp (not half.h's bit assembly). */
static double reference_value(uint16_t h, const Format *f) {
  int e = exp_of(h, f), m = mant_of(h, f), bias = (1 << (f->ebits - 1)) - 1;
  double v;
  if (e == (1 << f->ebits) - 1) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp((double)m, 1 - bias - f->mbits);
  else v = ldexp(1.0 + ldexp((double)m, -f->mbits), e - bias);
  return (h & sign_bit(f)) ? -v : v;
}

START_TEST(every_pattern_decodes_exactly_and_round_trips) {
  const Format *f = &formats[_i];
  int wrong_value = 0, wrong_trip = 0, first = -1;
  for (uint32_t u = 0; u < 65536; u++) {
    uint16_t h = (uint16_t)u;
    double got = pg_half_to_double(h, f->ebits, f->mbits), want = reference_value(h, f);
    uint16_t back = pg_half_from_double(got, f->ebits, f->mbits);
    if (is_nan(h, f)) { /* NaN: stays NaN, quiet, its sign kept */
      int ok = isnan(got) && !!signbit(got) == !!(h & sign_bit(f)) && is_nan(back, f) &&
               (back & (1u << (f->mbits - 1))) && (back & sign_bit(f)) == (h & sign_bit(f));
      wrong_trip += !ok;
      if (!ok && first < 0) first = (int)u;
      continue;
    }
    if (memcmp(&got, &want, sizeof got) != 0) wrong_value++, first = first < 0 ? (int)u : first;
    if (back != h) wrong_trip++, first = first < 0 ? (int)u : first;
  }
  ck_assert_msg(wrong_value == 0 && wrong_trip == 0, "%s: %d values and %d round trips wrong (first: 0x%04x)",
                f->name, wrong_value, wrong_trip, first);
}
END_TEST

/* The non-negative finite values of the format in increasing order, with their patterns,
 * then "infinity" as the value one ulp past the largest finite one (2^(emax+1)), which
 * is what rounding to nearest treats it as.  n: the count including that last entry. */
typedef struct {
  double v;
  uint16_t h;
} Entry;

static Entry *sorted_table(const Format *f, int *n) {
  int count = (int)inf_of(f) + 1; /* patterns 0 .. inf: increasing values, in that order */
  Entry *t = malloc(sizeof *t * (size_t)count);
  for (int i = 0; i < count - 1; i++) t[i] = (Entry){reference_value((uint16_t)i, f), (uint16_t)i};
  int bias = (1 << (f->ebits - 1)) - 1, emax = (1 << f->ebits) - 2 - bias;
  t[count - 1] = (Entry){ldexp(1.0, emax + 1), inf_of(f)};
  *n = count;
  return t;
}

/* The format's pattern for v by search: the nearest entry of the table, ties to the one
 * whose pattern is even. */
static uint16_t reference_round(double v, const Format *f, const Entry *t, int n) {
  uint16_t sign = signbit(v) ? sign_bit(f) : 0;
  double a = fabs(v);
  if (a >= t[n - 1].v) return sign | inf_of(f);
  int lo = 0, hi = n - 1; /* t[lo].v <= a < t[hi].v */
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (t[mid].v <= a) lo = mid;
    else hi = mid;
  }
  double below = a - t[lo].v, above = t[hi].v - a;
  uint16_t pick = below < above ? t[lo].h : above < below ? t[hi].h : (t[lo].h & 1) ? t[hi].h : t[lo].h;
  return sign | pick;
}

START_TEST(midpoints_round_to_even_and_their_neighbours_to_the_nearer) {
  const Format *f = &formats[_i];
  int n, wrong = 0;
  double first = 0;
  Entry *t = sorted_table(f, &n);
  for (int i = 0; i + 1 < n; i++) {
    double mid = (t[i].v + t[i + 1].v) / 2; /* exact: one bit more than the format has */
    uint16_t even = (t[i].h & 1) ? t[i + 1].h : t[i].h;
    for (int s = 0; s < 2; s++) {
      double sg = s ? -1.0 : 1.0;
      uint16_t sb = s ? sign_bit(f) : 0;
      int bad = pg_half_from_double(sg * mid, f->ebits, f->mbits) != (sb | even) ||
                pg_half_from_double(sg * nextafter(mid, 0), f->ebits, f->mbits) != (sb | t[i].h) ||
                pg_half_from_double(sg * nextafter(mid, INFINITY), f->ebits, f->mbits) != (sb | t[i + 1].h);
      if (bad && !wrong) first = sg * mid;
      wrong += bad;
    }
  }
  free(t);
  ck_assert_msg(wrong == 0, "%s: %d midpoints rounded wrongly (first: %a)", f->name, wrong, first);
}
END_TEST

START_TEST(random_doubles_round_as_the_search_says) {
  const Format *f = &formats[_i];
  int n, wrong = 0, bias = (1 << (f->ebits - 1)) - 1;
  double first = 0;
  Entry *t = sorted_table(f, &n);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 300000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    /* exponents from far below the least subnormal to past the largest finite value; a
     * quarter of them with their low mantissa bits clear, so that ties come up */
    int e = -bias - f->mbits - 4 + (int)(x >> 40) % (2 * bias + f->mbits + 8);
    uint64_t bits = (x & 0x800FFFFFFFFFFFFFull) | (uint64_t)(e + 1023) << 52;
    if (k % 4 == 0) bits &= ~((1ull << (52 - f->mbits - 1)) - 1);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (pg_half_from_double(v, f->ebits, f->mbits) != reference_round(v, f, t, n)) {
      if (!wrong) first = v;
      wrong++;
    }
  }
  free(t);
  ck_assert_msg(wrong == 0, "%s: %d of 300000 doubles rounded wrongly (first: %a)", f->name, wrong, first);
}
END_TEST

START_TEST(edges_of_both_formats) {
  const Format *h = &formats[0], *b = &formats[1];
  struct {
    const Format *f;
    double v;
    uint16_t want;
  } cases[] = {
      {h, 1.0, 0x3C00},           {h, -2.0, 0xC000},         {h, 65504.0, 0x7BFF},      {h, 65519.99, 0x7BFF},
      {h, 65520.0, 0x7C00},       {h, 1e300, 0x7C00},        {h, -INFINITY, 0xFC00},    {h, 0x1p-24, 0x0001},
      {h, 0x1p-25, 0x0000},       {h, 0x1.8p-25, 0x0001},    {h, -0x1p-26, 0x8000},     {h, 0x1.ffcp-15, 0x0400},
      {h, 0.0, 0x0000},           {h, -0.0, 0x8000},         {h, 0x1p-1074, 0x0000},    {h, -0x1p-1060, 0x8000},
      {b, 1.0, 0x3F80},           {b, 0x1.FEp127, 0x7F7F},   {b, 0x1.FFp127, 0x7F80},   {b, 0x1p-133, 0x0001},
      {b, 0x1p-134, 0x0000},      {b, 1.00390625, 0x3F80},   {b, 1.01171875, 0x3F82},   {b, -0.0, 0x8000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t got = pg_half_from_double(cases[i].v, cases[i].f->ebits, cases[i].f->mbits);
    ck_assert_msg(got == cases[i].want, "%s(%a) = 0x%04x, not 0x%04x", cases[i].f->name, cases[i].v, got,
                  cases[i].want);
  }
  ck_assert_uint_eq(pg_half_from_double(NAN, PG_HALF_F16) & 0x7E00, 0x7E00);
  ck_assert_uint_eq(pg_half_from_double(-NAN, PG_HALF_BF16) & 0xFFC0, 0xFFC0);
}
END_TEST

Suite *half_suite(void) {
  Suite *s = suite_create("half");
  TCase *t = tcase_create("f16 and bf16");
  tcase_add_loop_test(t, every_pattern_decodes_exactly_and_round_trips, 0, 2);
  tcase_add_loop_test(t, midpoints_round_to_even_and_their_neighbours_to_the_nearer, 0, 2);
  tcase_add_loop_test(t, random_doubles_round_as_the_search_says, 0, 2);
  tcase_add_test(t, edges_of_both_formats);
  suite_add_tcase(s, t);
  return s;
}

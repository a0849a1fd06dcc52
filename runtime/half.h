/*
 * half.h -- 16-bit floats (f16 and bf16) to and from double, one implementation for
 * pgcc (compiler/emit_c.c: a scalar literal's bytes) and libpgrt (runtime/scalars.c:
 * pgrt_scalar_convert), so that both round alike.  Integer arithmetic on the bits
 * only: no libm, no dependence on the floating-point rounding mode.  Not installed.
 *
 * A format has `ebits` exponent and `mbits` mantissa bits: f16 5 and 10 (IEEE
 * binary16), bf16 8 and 7 (PG_HALF_F16, PG_HALF_BF16 below).  To double: exact.  From
 * double: rounded to nearest, ties to even, in one step from the double's bits (no
 * double rounding through float), as CUDA's __float2half_rn and __float2bfloat16_rn
 * round: subnormal results where the value is below the least normal, signed zero
 * below half the least subnormal, infinity from the largest finite value plus half an
 * ulp up; NaN stays NaN (quiet, its sign kept); a signed zero keeps its sign.
 * tests/unit/test_half.c checks both directions against a brute-force search.
 */
#ifndef PG_HALF_H
#define PG_HALF_H

#include <stdint.h>
#include <string.h>

#define PG_HALF_F16 5, 10 /* ebits, mbits */
#define PG_HALF_BF16 8, 7

static inline double pg_half_from_bits_(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* The 16-bit float h as a double: exactly. */
static inline double pg_half_to_double(uint16_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t e = (uint32_t)h >> mbits & ((1u << ebits) - 1), m = h & ((1u << mbits) - 1);
  uint64_t sign = (uint64_t)(h >> (ebits + mbits) & 1) << 63;
  if (e == (1u << ebits) - 1) return pg_half_from_bits_(sign | 0x7ff0000000000000ull | (m ? 1ull << 51 : 0));
  int scale = (int)(e ? e : 1) - bias - mbits; /* in double's normal range for both formats */
  double v = (double)(e ? m | 1u << mbits : m) * pg_half_from_bits_((uint64_t)(scale + 1023) << 52);
  return sign ? -v : v;
}

/* v as a 16-bit float, rounded to nearest, ties to even; too large: infinity. */
static inline uint16_t pg_half_from_double(double v, int ebits, int mbits) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  uint32_t sign = (uint32_t)(u >> 63) << (ebits + mbits), inf = ((1u << ebits) - 1) << mbits;
  int dexp = (int)(u >> 52 & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  if (dexp == 0x7ff) return (uint16_t)(sign | inf | (mant ? 1u << (mbits - 1) : 0));
  if (dexp == 0) return (uint16_t)sign; /* zero, or a double subnormal: far below the least half */
  int bias = (1 << (ebits - 1)) - 1, e = dexp - 1023;
  uint64_t m = mant | 1ull << 52; /* v = m * 2^(e - 52) */
  int sub = e < 1 - bias;          /* a subnormal result: units of 2^(1 - bias - mbits) */
  int shift = 52 - mbits + (sub ? 1 - bias - e : 0);
  if (shift >= 64) return (uint16_t)sign;
  uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  if (sub) return (uint16_t)(sign | q); /* q == 2^mbits is the least normal */
  if (q == 1ull << (mbits + 1)) q >>= 1, e++;
  if (e + bias >= (1 << ebits) - 1) return (uint16_t)(sign | inf);
  return (uint16_t)(sign | (uint32_t)(e + bias) << mbits | (uint32_t)(q & ((1u << mbits) - 1)));
}

#endif

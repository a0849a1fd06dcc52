/* convert_main.c -- pgrt_scalar_convert, the conversion libpgrt applies to a scalar read
 * from a host buffer, against values worked out by hand (`make check-info`; no GPU: it
 * calls no CUDA).  Every mismatch is printed, and any fails it. */
#include "pgrt.h"

#include <stdio.h>
#include <string.h>

static int failures;

/* from's bytes (the low `size` bytes of `bits`) as `to`: want's bits */
static void check(int line, uint64_t bits, pgrt_dtype from, pgrt_dtype to, uint64_t want) {
  uint64_t got = pgrt_scalar_convert(&bits, from, to);
  if (got != want)
    printf("convert_main.c:%d: %d -> %d of %#llx: %#llx, expected %#llx\n", line, (int)from, (int)to,
           (unsigned long long)bits, (unsigned long long)got, (unsigned long long)want),
        failures++;
}
#define CHECK(bits, from, to, want) check(__LINE__, (bits), PGRT_DT_##from, PGRT_DT_##to, (want))

static uint64_t f32(float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  return b;
}
static uint64_t f64(double v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  return b;
}

int main(void) {
  /* the same type: the bits as they are, a NaN's payload too */
  CHECK(0x7fa00001, F32, F32, 0x7fa00001);
  CHECK(0x8000000000000001ull, PTR, U64, 0x8000000000000001ull);
  CHECK(0xabcd, BF16, BF16, 0xabcd);
  /* floating to floating */
  CHECK(f32(1.5f), F32, F64, f64(1.5));
  CHECK(f64(0.1), F64, F32, f32(0.1f));
  CHECK(f64(1e300), F64, F32, 0x7f800000); /* too large: infinity */
  /* integers to floating: rounded to nearest, ties to even, once */
  CHECK(16777217, I32, F32, f32(16777216.0f));
  CHECK(16777219, I32, F32, f32(16777220.0f));
  CHECK(0xffffffffffffffffull, U64, F32, 0x5f800000); /* 2^64 */
  CHECK((uint64_t)(int64_t)-3, I64, F64, f64(-3.0));
  /* floating to integers: toward zero, saturated; NaN is 0 */
  CHECK(f32(2.9f), F32, I32, 2);
  CHECK(f32(-2.9f), F32, I32, 0xfffffffe);
  CHECK(f32(1e10f), F32, I32, 0x7fffffff);
  CHECK(f32(-1e10f), F32, I32, 0x80000000);
  CHECK(0x7fc00000, F32, I32, 0);
  CHECK(f32(300.0f), F32, U8, 255);
  CHECK(f32(-5.0f), F32, U8, 0);
  CHECK(f32(-0.5f), F32, U32, 0);
  CHECK(f64(1e20), F64, U64, 0xffffffffffffffffull);
  CHECK(f64(-1e20), F64, I64, 0x8000000000000000ull);
  CHECK(f64(4294967295.75), F64, U32, 0xffffffff);
  /* integers to integers: modulo 2^bits */
  CHECK(300, I64, I8, 44);
  CHECK(0xffffffffffffffffull, I64, I8, 0xff);
  CHECK(0xffffffff, U32, I64, 0xffffffff);
  CHECK(0x80, I8, I32, 0xffffff80);
  CHECK(0x80, U8, I32, 0x80);
  /* bool: nonzero is 1 (NaN too); a bool is 0 or 1 */
  CHECK(f32(0.5f), F32, BOOL, 1);
  CHECK(0x80000000, F32, BOOL, 0); /* -0.0 */
  CHECK(0x7fc00000, F32, BOOL, 1);
  CHECK(2, I32, BOOL, 1);
  CHECK(0x200, I32, BOOL, 1); /* not the low byte */
  CHECK(7, BOOL, F32, f32(1.0f));
  /* f16 and bf16 to wider types: exactly */
  CHECK(0x3c00, F16, F32, f32(1.0f));
  CHECK(0x0001, F16, F64, f64(0x1p-24)); /* the least subnormal */
  CHECK(0x7bff, F16, F32, f32(65504.0f));
  CHECK(0xfc00, F16, F32, 0xff800000);
  CHECK(0x3f80, BF16, F32, f32(1.0f));
  CHECK(0x0001, BF16, F64, f64(0x1p-133));
  CHECK(0xc2f7, BF16, I32, 0xffffff85);                 /* -123.5 toward zero: -123 */
  /* to f16 and bf16: rounded to nearest, ties to even (as pgcc rounds literals) */
  CHECK(f32(0x1.002p0f), F32, F16, 0x3c00); /* 1 + 2^-11: halfway, to the even 1.0 */
  CHECK(f32(0x1.006p0f), F32, F16, 0x3c02); /* 1 + 3 * 2^-11: halfway, up to the even one */
  CHECK(f32(65520.0f), F32, F16, 0x7c00);       /* past the largest finite: infinity */
  CHECK(f32(65519.0f), F32, F16, 0x7bff);
  CHECK(f32(0x1p-25f), F32, F16, 0x0000);   /* halfway to zero */
  CHECK(f32(0x1p-24f), F32, F16, 0x0001);
  CHECK(f64(0x1.ffcp-15), F64, F16, 0x0400); /* 1023.5 * 2^-24: up to the least normal */
  CHECK(f32(0x1.01p0f), F32, BF16, 0x3f80); /* 1 + 2^-8: halfway, to the even 1.0 */
  CHECK(f32(0x1.03p0f), F32, BF16, 0x3f82); /* 1 + 3 * 2^-8 */
  CHECK(f32(3.4e38f), F32, BF16, 0x7f80);
  CHECK(0x7fc00000, F32, BF16, 0x7fc0);
  CHECK(f64(-0.0), F64, F16, 0x8000);
  CHECK(2049, I32, F16, 0x6800); /* 2048 + 1: halfway, to the even 2048 */
  CHECK(2051, I32, F16, 0x6802); /* 2052 */
  CHECK(0x3c00, F16, BF16, 0x3f80);
  printf("convert: %s\n", failures ? "FAILED" : "every conversion as expected");
  return failures != 0;
}

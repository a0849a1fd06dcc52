/*
 * scalars.c -- scalar types: their sizes, and pgrt_scalar_convert (pgrt.h), which gives
 * a read scalar its value from its host buffer's first element.  f16 and bf16 go
 * through half.h, the conversions pgcc uses for literals too.  Needs no GPU.
 */
#include "half.h"
#include "pgrt_impl.h"

#include <string.h>

unsigned pgrt_dtype_size(pgrt_dtype t) {
  switch (t) {
  case PGRT_DT_I8: case PGRT_DT_U8: case PGRT_DT_BOOL: return 1;
  case PGRT_DT_I16: case PGRT_DT_U16: case PGRT_DT_F16: case PGRT_DT_BF16: return 2;
  case PGRT_DT_I32: case PGRT_DT_U32: case PGRT_DT_F32: return 4;
  default: return 8;
  }
}

uint64_t pgrt_scalar_convert(const void *src, pgrt_dtype from, pgrt_dtype to) {
  uint64_t out = 0;
  unsigned size = pgrt_dtype_size(to);
  uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
  int u64ish = (from == PGRT_DT_U64 || from == PGRT_DT_PTR) && (to == PGRT_DT_U64 || to == PGRT_DT_PTR);
  if (from == to || u64ish) {
    memcpy(&out, src, pgrt_dtype_size(from)); /* little-endian: the low bytes */
    return out;
  }
  /* the value: a double (floating types) or a 64-bit integer (signed or not) */
  int floating = 0, sign = 0;
  double d = 0;
  int64_t i = 0;
  uint64_t n = 0;
  unsigned char b[8] = {0};
  memcpy(b, src, pgrt_dtype_size(from));
  switch (from) {
  case PGRT_DT_I8: { int8_t x; memcpy(&x, b, 1); i = x, sign = 1; break; }
  case PGRT_DT_I16: { int16_t x; memcpy(&x, b, 2); i = x, sign = 1; break; }
  case PGRT_DT_I32: { int32_t x; memcpy(&x, b, 4); i = x, sign = 1; break; }
  case PGRT_DT_I64: memcpy(&i, b, 8), sign = 1; break;
  case PGRT_DT_U8: n = b[0]; break;
  case PGRT_DT_BOOL: n = b[0] != 0; break;
  case PGRT_DT_U16: { uint16_t x; memcpy(&x, b, 2); n = x; break; }
  case PGRT_DT_U32: { uint32_t x; memcpy(&x, b, 4); n = x; break; }
  case PGRT_DT_U64: case PGRT_DT_PTR: memcpy(&n, b, 8); break;
  case PGRT_DT_F16: d = pg_half_to_double((uint16_t)(b[0] | b[1] << 8), PG_HALF_F16), floating = 1; break;
  case PGRT_DT_BF16: d = pg_half_to_double((uint16_t)(b[0] | b[1] << 8), PG_HALF_BF16), floating = 1; break;
  case PGRT_DT_F32: { float x; memcpy(&x, b, 4); d = x, floating = 1; break; }
  case PGRT_DT_F64: memcpy(&d, b, 8), floating = 1; break;
  }
  double v = floating ? d : sign ? (double)i : (double)n; /* for the floating targets */
  switch (to) {
  case PGRT_DT_F64: memcpy(&out, &v, 8); return out;
  case PGRT_DT_F32: { /* from an integer directly: one rounding */
    float x = floating ? (float)d : sign ? (float)i : (float)n;
    memcpy(&out, &x, 4);
    return out;
  }
  case PGRT_DT_F16: return pg_half_from_double(v, PG_HALF_F16);
  case PGRT_DT_BF16: return pg_half_from_double(v, PG_HALF_BF16);
  case PGRT_DT_BOOL: return floating ? d != 0 : sign ? i != 0 : n != 0;
  default: break;
  }
  /* an integer target */
  int signed_to = to == PGRT_DT_I8 || to == PGRT_DT_I16 || to == PGRT_DT_I32 || to == PGRT_DT_I64;
  if (!floating) return (sign ? (uint64_t)i : n) & mask; /* modulo 2^bits */
  if (d != d) return 0;
  if (signed_to) { /* truncated, saturated to [-2^(bits-1), 2^(bits-1) - 1] */
    int64_t hi = (int64_t)(mask >> 1), lo = -hi - 1;
    int64_t t = d >= 9223372036854775808.0 ? INT64_MAX : d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    t = t > hi ? hi : t < lo ? lo : t;
    return (uint64_t)t & mask;
  }
  uint64_t t = d >= 18446744073709551616.0 ? UINT64_MAX : d <= 0 ? 0 : (uint64_t)d;
  return t > mask ? mask : t;
}

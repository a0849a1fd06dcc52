/*
 * kernels.c -- host versions of the kernels the CPU double of the driver runs
 * (fakecuda.c): libpgrt's own (runtime/own_kernels.h) and those of the code-generation
 * test programs (the .cu files of tests/gpu/codegen), found by name.  Each runs every thread of
 * its launch, or what those threads together compute, as the CUDA source says, with
 * the same rounding where the GPU's is part of what a test checks (a fused multiply-
 * add where NVRTC contracts one; cvt.rn's conversions to f16 and bf16).
 */
#include "fakecuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef unsigned long long u64;

/* blockIdx.x * blockDim.x + threadIdx.x over a one-dimensional launch */
static u64 threads(const fake_launch *l) { return (u64)l->grid[0] * l->block[0]; }

/* ---- libpgrt's own ---- */

/* pgrt_update(const Entry *e, int n, Vals vals): each entry writes the low `size` bytes
 * of (vals[slot] + offset) >> shift into its node's parameters. */
typedef struct {
  void *node;
  unsigned at, size;
  int slot, shift;
  u64 offset;
} Entry;

static int pgrt_update(const fake_launch *l) {
  const Entry *e = FAKE_ARG(l, 0, const Entry *);
  int n = FAKE_ARG(l, 1, int);
  const u64 *vals = (const u64 *)l->args[2];
  if ((u64)n > threads(l)) {
    fprintf(stderr, "fakecuda: pgrt_update: %d entries, %llu threads\n", n, threads(l));
    return 1;
  }
  for (int j = 0; j < n; j++) {
    if (e[j].slot < 0 || e[j].slot >= 64 || e[j].size > 8 || e[j].shift < 0 || e[j].shift > 63) {
      fprintf(stderr, "fakecuda: pgrt_update: entry %d out of range (slot %d, size %u, shift %d)\n", j, e[j].slot,
              e[j].size, e[j].shift);
      return 1;
    }
    u64 x = (vals[e[j].slot] + e[j].offset) >> e[j].shift;
    if (fake_set_param(e[j].node, e[j].at, &x, e[j].size)) return 1;
  }
  return 0;
}

/* pgrt_rng(state, seed, offset): the random-number state for a call */
static int pgrt_rng(const fake_launch *l) {
  u64 *state = FAKE_ARG(l, 0, u64 *);
  state[0] = FAKE_ARG(l, 1, u64), state[1] = FAKE_ARG(l, 2, u64);
  return 0;
}

/* philox_probe(PhiloxState s, u64 *out) (tests/gpu/codegen/philox.cu): s is PyTorch's
 * PhiloxCudaState in a graph (seed pointer, offset pointer, u64 offset within the call,
 * bool captured); out[0] the seed, out[1] the offset plus the kernel's own */
static int philox_probe(const fake_launch *l) {
  const unsigned char *s = l->args[0];
  const u64 *seed, *offset;
  u64 intra;
  memcpy(&seed, s, 8), memcpy(&offset, s + 8, 8), memcpy(&intra, s + 16, 8);
  u64 *out = FAKE_ARG(l, 1, u64 *);
  out[0] = s[24] ? *seed : 0, out[1] = s[24] ? *offset + intra : 0;
  return 0;
}

/* pgrt_copy(src, dst, width, rows, spitch, dpitch); pgrt_set(dst, value, elem, width, rows, pitch):
 * grid-stride loops, so whatever the grid, every byte of the box */
static int pgrt_copy(const fake_launch *l) {
  const unsigned char *src = FAKE_ARG(l, 0, const unsigned char *);
  unsigned char *dst = FAKE_ARG(l, 1, unsigned char *);
  u64 width = FAKE_ARG(l, 2, u64), rows = FAKE_ARG(l, 3, u64), sp = FAKE_ARG(l, 4, u64), dp = FAKE_ARG(l, 5, u64);
  for (u64 r = 0; r < rows; r++) memcpy(dst + r * dp, src + r * sp, width);
  return 0;
}

static int pgrt_set(const fake_launch *l) {
  unsigned char *dst = FAKE_ARG(l, 0, unsigned char *);
  unsigned value = FAKE_ARG(l, 1, unsigned), elem = FAKE_ARG(l, 2, unsigned);
  u64 width = FAKE_ARG(l, 3, u64), rows = FAKE_ARG(l, 4, u64), pitch = FAKE_ARG(l, 5, u64);
  unsigned size = elem == 1 || elem == 2 ? elem : 4;
  for (u64 r = 0; r < rows; r++)
    for (u64 x = 0; x < width; x++) memcpy(dst + r * pitch + x * size, &value, size); /* its low bytes */
  return 0;
}

/* ---- chain.cu, loops.cu ---- */

static int mul(const fake_launch *l) { /* (n, x, w, y): y = x * w */
  int n = FAKE_ARG(l, 0, int);
  const float *x = FAKE_ARG(l, 1, const float *), *w = FAKE_ARG(l, 2, const float *);
  float *y = FAKE_ARG(l, 3, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = x[i] * w[i];
  return 0;
}

static int scale_add(const fake_launch *l) { /* (n, a, x, b, y): y = a * x + b + y */
  int n = FAKE_ARG(l, 0, int);
  float a = FAKE_ARG(l, 1, float);
  const float *x = FAKE_ARG(l, 2, const float *), *b = FAKE_ARG(l, 3, const float *);
  float *y = FAKE_ARG(l, 4, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = fmaf(a, x[i], b[i]) + y[i];
  return 0;
}

static int relu(const fake_launch *l) { /* (n, y) */
  int n = FAKE_ARG(l, 0, int);
  float *y = FAKE_ARG(l, 1, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
  return 0;
}

static int add_to(const fake_launch *l) { /* (n, x, acc): acc += x */
  int n = FAKE_ARG(l, 0, int);
  const float *x = FAKE_ARG(l, 1, const float *);
  float *acc = FAKE_ARG(l, 2, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) acc[i] += x[i];
  return 0;
}

static int count_down(const fake_launch *l) { /* (counter, loop): the loop goes on while --counter > 0 */
  int *counter = FAKE_ARG(l, 0, int *);
  int left = --counter[0];
  fake_set_conditional(FAKE_ARG(l, 1, u64), left > 0 ? 1u : 0u);
  return 0;
}

static int set_flag(const fake_launch *l) { /* (flag, branch) */
  fake_set_conditional(FAKE_ARG(l, 1, u64), FAKE_ARG(l, 0, unsigned));
  return 0;
}

static int copy_scale(const fake_launch *l) { /* (n, a, x, y): y = a * x */
  int n = FAKE_ARG(l, 0, int);
  float a = FAKE_ARG(l, 1, float);
  const float *x = FAKE_ARG(l, 2, const float *);
  float *y = FAKE_ARG(l, 3, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = a * x[i];
  return 0;
}

/* ---- buckets.cu ---- */

static int pgcc_bucket_set(const fake_launch *l) { /* (cond, index) */
  fake_set_conditional(FAKE_ARG(l, 0, u64), FAKE_ARG(l, 1, unsigned));
  return 0;
}

static int matmul(const fake_launch *l) { /* (rows, x, w, t): a block per row, a thread per column of 64 */
  int rows = FAKE_ARG(l, 0, int);
  const float *x = FAKE_ARG(l, 1, const float *), *w = FAKE_ARG(l, 2, const float *);
  float *t = FAKE_ARG(l, 3, float *);
  for (int r = 0; r < rows && (unsigned)r < l->grid[0]; r++)
    for (int c = 0; c < 64 && (unsigned)c < l->block[0]; c++) {
      float s = 0.0f;
      for (int k = 0; k < 64; k++) s = fmaf(x[r * 64 + k], w[k * 64 + c], s);
      t[r * 64 + c] = s;
    }
  return 0;
}

static int bias_relu(const fake_launch *l) { /* (rows, t, b, y) */
  int rows = FAKE_ARG(l, 0, int);
  const float *t = FAKE_ARG(l, 1, const float *), *b = FAKE_ARG(l, 2, const float *);
  float *y = FAKE_ARG(l, 3, float *);
  for (int r = 0; r < rows && (unsigned)r < l->grid[0]; r++)
    for (int c = 0; c < 64 && (unsigned)c < l->block[0]; c++) {
      float v = t[r * 64 + c] + b[c];
      y[r * 64 + c] = v > 0.0f ? v : 0.0f;
    }
  return 0;
}

/* ---- hostread.cu ---- */

static int stats(const fake_launch *l) { /* (n, x, m, flag): one block's reduction */
  int n = FAKE_ARG(l, 0, int);
  const float *x = FAKE_ARG(l, 1, const float *);
  float best = 0.0f;
  for (int i = 0; i < n; i++) best = fmaxf(best, fabsf(x[i]));
  *FAKE_ARG(l, 2, float *) = best;
  *FAKE_ARG(l, 3, int *) = x[0] >= 0.0f ? 1 : 0;
  return 0;
}

static int scale(const fake_launch *l) { /* (n, m, bias, x, y): y = x / m + bias */
  int n = FAKE_ARG(l, 0, int);
  float m = FAKE_ARG(l, 1, float), bias = FAKE_ARG(l, 2, float);
  const float *x = FAKE_ARG(l, 3, const float *);
  float *y = FAKE_ARG(l, 4, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = x[i] / m + bias;
  return 0;
}

/* ---- relocs.cu: (Params p, check, b), the struct as relocs.cu lays it out ---- */

static int axpy_split(const fake_launch *l) {
  const unsigned char *p = l->args[0];
  unsigned n, in_lo, in_hi, out_lo, out_hi, check_lo;
  float a;
  memcpy(&n, p, 4), memcpy(&in_lo, p + 4, 4), memcpy(&in_hi, p + 8, 4);
  memcpy(&out_lo, p + 16, 4), memcpy(&out_hi, p + 20, 4), memcpy(&a, p + 24, 4), memcpy(&check_lo, p + 28, 4);
  const float *in = (const float *)(uintptr_t)((u64)in_hi << 32 | in_lo);
  float *out = (float *)(uintptr_t)((u64)out_hi << 32 | out_lo);
  float *check = FAKE_ARG(l, 1, float *), b = FAKE_ARG(l, 2, float);
  uint32_t nan = 0x7fc00000;
  float qnan;
  memcpy(&qnan, &nan, 4);
  for (u64 i = 0; i < threads(l) && i < n; i++) {
    float v = in[i];
    out[i] = fmaf(a, v, b);
    check[i] = check_lo == (unsigned)(uintptr_t)check ? v * v : qnan;
  }
  return 0;
}

/* ---- shapes.cu ---- */

/* cvt.rn.f16.f32: round to nearest, ties to even; past the largest half, infinity */
static unsigned short to_f16(float f) {
  uint32_t x, ax;
  memcpy(&x, &f, 4);
  unsigned short sign = (unsigned short)(x >> 16 & 0x8000);
  ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fff;                    /* NaN: the canonical one */
  if (ax >= 0x477ff000u) return sign | 0x7c00;            /* 65520 and up: infinity */
  if (ax < 0x38800000u) {                                 /* below 2^-14: a subnormal half, in units of 2^-24 */
    float a;
    memcpy(&a, &ax, 4);
    return sign | (unsigned short)nearbyintf(a * 16777216.0f); /* exact scaling, then ties to even */
  }
  return (unsigned short)(sign | (((ax + 0x0fffu + (ax >> 13 & 1)) >> 13) - (112u << 10)));
}

static unsigned short to_bf16(float f) { /* cvt.rn.bf16.f32 */
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return (unsigned short)((x + 0x7fffu + (x >> 16 & 1)) >> 16);
}

static float from_f16(unsigned short h) {
  int e = h >> 10 & 0x1f;
  unsigned m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

static float from_bf16(unsigned short h) {
  uint32_t u = (uint32_t)h << 16;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

static int halves(const fake_launch *l) { /* (n, s, b, sf, bf, t, bits) */
  int n = FAKE_ARG(l, 0, int);
  unsigned short s = FAKE_ARG(l, 1, unsigned short), b = FAKE_ARG(l, 2, unsigned short);
  float sf = FAKE_ARG(l, 3, float), bf = FAKE_ARG(l, 4, float);
  float *t = FAKE_ARG(l, 5, float *);
  unsigned *bits = FAKE_ARG(l, 6, unsigned *);
  if (threads(l) > 0) bits[0] = s, bits[1] = to_f16(sf), bits[2] = b, bits[3] = to_bf16(bf);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) t[i] = fmaf(t[i], from_f16(s), from_bf16(b));
  return 0;
}

/* ---- pdl.cu: produce waits, consume waits on its grid dependency; here one runs after the other ---- */

static int produce(const fake_launch *l) { /* (n, a, x): x = 2a */
  int n = FAKE_ARG(l, 0, int);
  const float *a = FAKE_ARG(l, 1, const float *);
  float *x = FAKE_ARG(l, 2, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) x[i] = 2.0f * a[i];
  return 0;
}

static int consume(const fake_launch *l) { /* (n, x, y): y = x + y */
  int n = FAKE_ARG(l, 0, int);
  const float *x = FAKE_ARG(l, 1, const float *);
  float *y = FAKE_ARG(l, 2, float *);
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) y[i] = x[i] + y[i];
  return 0;
}

/* ---- globals.cu: (n, in, out), out = in * scale, a __device__ int of the module ---- */

static int scale_by(const fake_launch *l) {
  int n = FAKE_ARG(l, 0, int);
  const float *in = FAKE_ARG(l, 1, const float *);
  float *out = FAKE_ARG(l, 2, float *);
  const int *s = fake_global(l->lib, "scale");
  if (!s) {
    fprintf(stderr, "fakecuda: scale_by: its module has no global 'scale'\n");
    return 1;
  }
  for (u64 i = 0; i < threads(l) && i < (u64)(n > 0 ? n : 0); i++) out[i] = in[i] * (float)*s;
  return 0;
}

static const struct {
  const char *name;
  fake_kernel_fn fn;
} kernels[] = {
    {"pgrt_update", pgrt_update}, {"pgrt_copy", pgrt_copy},
    {"pgrt_set", pgrt_set},       {"mul", mul},
    {"scale_add", scale_add},     {"relu", relu},
    {"add_to", add_to},           {"count_down", count_down},
    {"set_flag", set_flag},       {"copy_scale", copy_scale},
    {"pgcc_bucket_set", pgcc_bucket_set}, {"matmul", matmul},
    {"bias_relu", bias_relu},     {"stats", stats},
    {"scale", scale},             {"axpy_split", axpy_split},
    {"halves", halves},           {"produce", produce},
    {"consume", consume},         {"scale_by", scale_by},
    {"pgrt_rng", pgrt_rng},       {"philox_probe", philox_probe},
};

fake_kernel_fn fake_kernel(const char *name) {
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
    if (strcmp(kernels[i].name, name) == 0) return kernels[i].fn;
  return NULL;
}

/*
 * gpu_check.h -- what the GPU test and benchmark programs share (tests/gpu/codegen,
 * tests/gpu/faults, bench/codegen): the one check macro for CUDA driver calls and its
 * twin for libpgrt calls (both report the call, __func__, file:line and the device,
 * then exit), the context they run on, a reproducible random number, and for the
 * programs that time things (they define _POSIX_C_SOURCE), a clock and a sort key.
 */
#ifndef PGCC_GPU_CHECK_H
#define PGCC_GPU_CHECK_H

#include "pgrt.h"

#include <stdio.h>
#include <stdlib.h>

static inline void gpu_fail(const char *call, const char *why, const char *func, const char *file, int line) {
  CUdevice d = -1;
  cuCtxGetDevice(&d);
  fprintf(stderr, "%s failed: %s (%s, %s:%d, device %d)\n", call, why, func, file, line, (int)d);
  exit(2);
}

#define CHECK(call)                                                                               \
  do {                                                                                            \
    CUresult r_ = (call);                                                                         \
    if (r_ != CUDA_SUCCESS) {                                                                     \
      const char *s_ = "?";                                                                       \
      cuGetErrorString(r_, &s_);                                                                  \
      gpu_fail(#call, s_, __func__, __FILE__, __LINE__);                                          \
    }                                                                                             \
  } while (0)

#define PGRT(call)                                                                                \
  do {                                                                                            \
    if ((call) != PGRT_OK) gpu_fail(#call, pgrt_error(), __func__, __FILE__, __LINE__);           \
  } while (0)

/* Device 0's primary context, made current; a stream on it that waits for the legacy
 * stream.  The tests upload inputs and poison outputs with cuMemcpyHtoD/cuMemsetD32, which
 * run on the legacy stream and may return before they are done: a non-blocking stream
 * raced them (the DOT-input test's third call read half-poisoned outputs on a busy GPU). */
static inline CUstream gpu_start(void) {
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  return s;
}

/* A float in [-1, 1) from a linear congruential generator: the same on every run. */
static inline float frand(unsigned *seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L
#include <time.h>

/* Microseconds on the monotonic clock. */
static inline double gpu_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* qsort's order for doubles (medians of timings). */
static inline int gpu_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
#endif

#endif

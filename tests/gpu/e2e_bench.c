/*
 * e2e_bench.c -- timing helper that tests/gpu/e2e.py links into each generated
 * program's shared library, so that host time per call is measured in C (not
 * through ctypes).  Calls alternate between two argument sets whose buffers sit
 * at different addresses, so every call patches what moved.
 */
#define _POSIX_C_SOURCE 199309L /* gpu_now_us: clock_gettime */
#include "gpu_check.h"

typedef int (*run_fn)(void *ctx, const void *args, CUstream stream);

/* Runs `iters` calls; returns host microseconds per call, *gpu_us the GPU time per
 * call (events around the whole loop), or a negative value if a call failed. */
double e2e_bench(run_fn run, void *ctx, const void *args_a, const void *args_b, CUstream s, int iters,
                 double *gpu_us) {
  CUevent e0, e1;
  CHECK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  CHECK(cuEventRecord(e0, s));
  double t0 = gpu_now_us();
  for (int i = 0; i < iters; i++)
    if (run(ctx, i % 2 ? args_b : args_a, s) != 0) return -1;
  double host = (gpu_now_us() - t0) / iters;
  CHECK(cuEventRecord(e1, s));
  CHECK(cuEventSynchronize(e1));
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, e0, e1));
  *gpu_us = (double)ms * 1e3 / iters;
  CHECK(cuEventDestroy(e0));
  CHECK(cuEventDestroy(e1));
  return host;
}

/*
 * run_main.c -- times NAME_run of a generated 200-kernel chain (bench/run_codegen.sh):
 * host time of the call (CLOCK_MONOTONIC around it) and GPU time of the step (CUDA
 * events around it), medians of 2000 calls after 100 warm-up calls, in three cases:
 *   fixed: the same x and y every call (nothing to patch: a plain graph launch);
 *   moving: x and y alternate between two allocations, so they are new every call.
 * Each is timed twice: one call at a time (the stream idle before each call, so the
 * host's patching is part of the step), and back to back (200 calls queued without
 * waiting, GPU time per step from events around them all, median of 20 rounds:
 * whether the GPU stays busy while the host patches the next call).
 */
#define _POSIX_C_SOURCE 199309L
#include BENCH_HEADER
#include "gpu_check.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const char *label = argc > 1 ? argv[1] : "?";
  CUstream s = gpu_start();
  CUevent e0, e1;
  CHECK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  BENCH_NAME_weights w;
  CHECK(cuMemAlloc(&w.b, 4096));
  CHECK(cuMemsetD32(w.b, 0, 1024));
  CUdeviceptr x[2], y[2];
  for (int i = 0; i < 2; i++) {
    CHECK(cuMemAlloc(&x[i], 4096));
    CHECK(cuMemAlloc(&y[i], 4096));
  }
  pgrt_ctx *pc;
  PGRT(BENCH_NAME_init(&pc, &w, NULL, 0));
  enum { WARM = 100, N = 2000 };
  static double host[N], gpu[N];
  for (int moving = 0; moving < 2; moving++) {
    int patched = 0, device = 0;
    for (int i = -WARM; i < N; i++) {
      BENCH_NAME_args a = {.x = x[moving ? i & 1 : 0], .y = y[moving ? i & 1 : 0]};
      CHECK(cuStreamSynchronize(s));
      CHECK(cuEventRecord(e0, s));
      double t0 = gpu_now_us();
      PGRT(BENCH_NAME_run(pc, &a, s));
      double t1 = gpu_now_us();
      CHECK(cuEventRecord(e1, s));
      CHECK(cuEventSynchronize(e1));
      float ms;
      CHECK(cuEventElapsedTime(&ms, e0, e1));
      if (i >= 0) host[i] = t1 - t0, gpu[i] = ms * 1e3;
      pgrt_run_stats st;
      pgrt_last_run(pc, &st);
      if (i >= 0) patched = st.nodes_patched, device = st.device_updated;
    }
    qsort(host, N, sizeof *host, gpu_cmp_double);
    qsort(gpu, N, sizeof *gpu, gpu_cmp_double);
    printf("%-12s %-6s  nodes patched per call: %3d host-side, %3d on the device  host %7.2f us  GPU %7.2f us  "
           "(medians of %d)\n", label, moving ? "moving" : "fixed", patched, device, host[N / 2], gpu[N / 2], N);
    enum { ROUNDS = 20, BATCH = 200 };
    static double step[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
      CHECK(cuStreamSynchronize(s));
      CHECK(cuEventRecord(e0, s));
      for (int i = 0; i < BATCH; i++) {
        BENCH_NAME_args a = {.x = x[moving ? i & 1 : 0], .y = y[moving ? i & 1 : 0]};
        PGRT(BENCH_NAME_run(pc, &a, s));
      }
      CHECK(cuEventRecord(e1, s));
      CHECK(cuEventSynchronize(e1));
      float ms;
      CHECK(cuEventElapsedTime(&ms, e0, e1));
      step[r] = ms * 1e3 / BATCH;
    }
    qsort(step, ROUNDS, sizeof *step, gpu_cmp_double);
    printf("%-12s %-6s  back to back: GPU %7.2f us per step (median of %d rounds of %d calls)\n", label,
           moving ? "moving" : "fixed", step[ROUNDS / 2], ROUNDS, BATCH);
  }
  BENCH_NAME_destroy(&pc);
  return 0;
}

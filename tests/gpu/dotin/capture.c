/*
 * capture.c -- the first half of the DOT-input test (tests/gpu/run_dotin.sh): a
 * program captures four launches of chain.cu's kernels on two streams, the way an
 * application would, and writes the captured graph with cudaGraphDebugDotPrint:
 *
 *   0  s0: t0 = x * w                (mul)
 *   1  s1: t1 = x * b                (mul, forked: independent of 0)
 *   2  s1: t1 = relu(t1)             (relu)
 *   3  s0: y = a * t0 + t1 + y       (scale_add, after both)
 *
 * pgcc turns that DOT into C (kernels found by name in chain.cu at init), and
 * captured_main.c runs it with the arguments of these launches.
 *
 *   capture CUBIN OUT.dot
 */
#include "gpu_check.h"

#include <stdint.h>

int main(int argc, char **argv) {
  if (argc != 3) return fprintf(stderr, "usage: capture CUBIN OUT.dot\n"), 2;
  CUstream s0 = gpu_start(), s1;
  CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CUmodule mod;
  CUfunction mul, relu, scale_add;
  CHECK(cuModuleLoad(&mod, argv[1]));
  CHECK(cuModuleGetFunction(&mul, mod, "mul"));
  CHECK(cuModuleGetFunction(&relu, mod, "relu"));
  CHECK(cuModuleGetFunction(&scale_add, mod, "scale_add"));
  int n = 4096;
  float a = 0.5f;
  CUdeviceptr x, w, b, t0, t1, y;
  CUdeviceptr *all[] = {&x, &w, &b, &t0, &t1, &y};
  for (int i = 0; i < 6; i++) CHECK(cuMemAlloc(all[i], sizeof(float) * (size_t)n));
  void *k0[] = {&n, &x, &w, &t0}, *k1[] = {&n, &x, &b, &t1}, *k2[] = {&n, &t1}, *k3[] = {&n, &a, &t0, &t1, &y};
  CUevent fork, join;
  CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
  CUgraph g;
  CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuEventRecord(fork, s0));
  CHECK(cuStreamWaitEvent(s1, fork, 0));
  CHECK(cuLaunchKernel(mul, 16, 1, 1, 256, 1, 1, 0, s0, k0, NULL));
  CHECK(cuLaunchKernel(mul, 16, 1, 1, 256, 1, 1, 0, s1, k1, NULL));
  CHECK(cuLaunchKernel(relu, 16, 1, 1, 256, 1, 1, 0, s1, k2, NULL));
  CHECK(cuEventRecord(join, s1));
  CHECK(cuStreamWaitEvent(s0, join, 0));
  CHECK(cuLaunchKernel(scale_add, 16, 1, 1, 256, 1, 1, 0, s0, k3, NULL));
  CHECK(cuStreamEndCapture(s0, &g));
  CHECK(cuGraphDebugDotPrint(g, argv[2], CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
  printf("captured 4 launches on 2 streams: %s\n", argv[2]);
  CHECK(cuGraphDestroy(g));
  for (int i = 0; i < 6; i++) CHECK(cuMemFree(*all[i]));
  return 0;
}

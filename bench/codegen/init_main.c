/*
 * init_main.c -- init time of a generated 200-kernel chain against building the
 * same graph by stream capture (bench/run_codegen.sh), both from the same cubin:
 *
 *   pgcc:    NAME_init (load the embedded cubin, lay out the arena, build the graph
 *            node by node, instantiate, upload) + synchronize
 *   capture: cuLibraryLoadData of the cubin, one allocation for the intermediates,
 *            200 cuLaunchKernel calls between cuStreamBeginCapture and
 *            cuStreamEndCapture, instantiate, upload + synchronize
 *
 * Medians of 30 rounds each, taken alternately; everything made is freed between
 * rounds.  The chain is bench/codegen/gen.py's `edges` program.
 *
 *   init_main CUBIN
 */
#define _POSIX_C_SOURCE 199309L
#include "chain_cubin.h"
#include "gpu_check.h"

#include <stdio.h>
#include <stdlib.h>

#define NODES 200
#define ROUNDS 30

/* The same chain by stream capture: k0 = mul(n, x, b, t0); ki = scale_add(n, 1, t(i-1), b, ti); y last. */
static double capture_once(const void *cubin, CUdeviceptr x, CUdeviceptr y, CUdeviceptr b, CUstream s) {
  double t0 = gpu_now_us();
  CUlibrary lib;
  CUkernel km, ks;
  CUfunction fm, fs;
  CHECK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CHECK(cuLibraryGetKernel(&km, lib, "mul"));
  CHECK(cuLibraryGetKernel(&ks, lib, "scale_add"));
  CHECK(cuKernelGetFunction(&fm, km));
  CHECK(cuKernelGetFunction(&fs, ks));
  CUdeviceptr arena;
  CHECK(cuMemAlloc(&arena, 4096 * NODES));
  int n = 1024;
  float one = 1.0f;
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < NODES; i++) {
    CUdeviceptr out = i == NODES - 1 ? y : arena + 4096 * (CUdeviceptr)i;
    CUdeviceptr in = arena + 4096 * (CUdeviceptr)(i ? i - 1 : 0);
    if (i == 0) {
      void *args[] = {&n, &x, &b, &out};
      CHECK(cuLaunchKernel(fm, 4, 1, 1, 256, 1, 1, 0, s, args, NULL));
    } else {
      void *args[] = {&n, &one, &in, &b, &out};
      CHECK(cuLaunchKernel(fs, 4, 1, 1, 256, 1, 1, 0, s, args, NULL));
    }
  }
  CUgraph g;
  CUgraphExec e;
  CHECK(cuStreamEndCapture(s, &g));
  CHECK(cuGraphInstantiate(&e, g, 0));
  CHECK(cuGraphUpload(e, s));
  CHECK(cuStreamSynchronize(s));
  double t1 = gpu_now_us();
  CHECK(cuGraphExecDestroy(e));
  CHECK(cuGraphDestroy(g));
  CHECK(cuMemFree(arena));
  CHECK(cuLibraryUnload(lib));
  return t1 - t0;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: init_main CUBIN\n"), 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror(argv[1]), 1;
  static char cubin[1 << 20];
  if (fread(cubin, 1, sizeof cubin, f) == 0) return fprintf(stderr, "%s: empty\n", argv[1]), 1;
  fclose(f);
  CUstream s = gpu_start();
  chain_cubin_weights w;
  CUdeviceptr x, y;
  CHECK(cuMemAlloc(&w.b, 4096));
  CHECK(cuMemAlloc(&x, 4096));
  CHECK(cuMemAlloc(&y, 4096));
  static double pg[ROUNDS], cap[ROUNDS];
  for (int r = -3; r < ROUNDS; r++) { /* three warm-up rounds of each */
    double t0 = gpu_now_us();
    pgrt_ctx *pc;
    if (chain_cubin_init(&pc, &w, NULL, 0) != PGRT_OK) return fprintf(stderr, "init: %s\n", pgrt_error()), 1;
    CHECK(cuCtxSynchronize());
    double t1 = gpu_now_us();
    chain_cubin_destroy(&pc);
    double c = capture_once(cubin, x, y, w.b, s);
    if (r >= 0) pg[r] = t1 - t0, cap[r] = c;
  }
  qsort(pg, ROUNDS, sizeof *pg, gpu_cmp_double);
  qsort(cap, ROUNDS, sizeof *cap, gpu_cmp_double);
  printf("init, %d kernels from one cubin: pgcc NAME_init %.0f us, stream capture %.0f us (ratio %.2f; medians of %d)\n",
         NODES, pg[ROUNDS / 2], cap[ROUNDS / 2], pg[ROUNDS / 2] / cap[ROUNDS / 2], ROUNDS);
  return 0;
}

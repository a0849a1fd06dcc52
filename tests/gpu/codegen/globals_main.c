/*
 * globals_main.c -- runs the C that pgcc generated from globals.graph (a module
 * global, .graph format 2), on a GPU, and checks it against a CPU computation:
 *
 *   y = 3 * x
 *
 * The kernel multiplies by `scale`, a __device__ variable of its module that is 1 in
 * the module's image: the result is right only if libpgrt wrote the global's 3 over it
 * after the module loaded.  Every call gets fresh x and y at new addresses; the last
 * call repeats the one before it (same buffers, new data).  Prints each call's max
 * error (2 * |x| where the global was not written), and writes each graph region as
 * DOT for the topology check (run_codegen.sh).
 *
 *   globals_main OUT_DIR
 */
#include "globals.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define CALLS 5 /* the last repeats the one before */

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  CUstream stream = gpu_start();
  pgrt_ctx *pc = NULL;
  PGRT(globals_init(&pc, NULL, NULL, 0));

  unsigned seed = 2024;
  static float x[N], y[N];
  double worst = 0;
  int failed = 0;
  CUdeviceptr keep[CALLS][2]; /* freed at the end, so every call's addresses are new */
  globals_args args;
  for (int call = 0; call < CALLS; call++) {
    if (call < CALLS - 1) {
      CHECK(cuMemAlloc(&args.x, sizeof x));
      CHECK(cuMemAlloc(&args.y, sizeof y));
    }
    keep[call][0] = args.x, keep[call][1] = args.y;
    for (int i = 0; i < N; i++) x[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */

    PGRT(globals_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));

    double err = 0;
    for (int i = 0; i < N; i++) {
      double e = fabs((double)y[i] - 3.0 * x[i]); /* 3 * x is exact in float, as the kernel's product is */
      if (!(e == e)) e = INFINITY;               /* NaN: an element nobody wrote */
      if (e > err) err = e;
    }
    printf("call %d: x=%#llx y=%#llx: max error %.3g against 3 * x\n", call, (unsigned long long)args.x,
           (unsigned long long)args.y, err);
    if (err != 0) failed = 1;
    if (err > worst) worst = err;
  }
  for (int r = 0; r < 4; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/globals_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  globals_destroy(&pc);
  if (pc) failed = 1;
  for (int c = 0; c < CALLS - 1; c++) /* the last call's buffers are the one before's */
    for (int k = 0; k < 2; k++) CHECK(cuMemFree(keep[c][k]));
  printf("%s: max error %.3g over %d calls (the module global written at init: y = 3 * x, not x)\n",
         failed ? "FAIL" : "PASS", worst, CALLS);
  return failed;
}

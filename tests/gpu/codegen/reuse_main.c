/*
 * reuse_main.c -- runs the C that pgcc generated from reuse.graph and checks it against
 * a CPU computation of the same function:
 *
 *   t0 = x * w;  y = a * t0 + b;  t0 = x * b;  z = a * t0 + w
 *
 * t0 holds two values one after another; pgcc gives the second a buffer of its own and
 * runs the two halves side by side (over the CPU double, in an order that respects every
 * dependency and no more: a value overwritten too soon fails the check).  Every call
 * gets fresh x, y, z at new addresses (y and z poisoned with NaN) and a new scalar a.
 *
 *   reuse_main
 */
#include "reuse.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>

#define N 4096
#define CALLS 4

int main(void) {
  CUstream stream = gpu_start();
  unsigned seed = 777;
  static float w[N], b[N], x[N], y[N], z[N];
  for (int i = 0; i < N; i++) w[i] = frand(&seed), b[i] = frand(&seed);
  reuse_weights weights;
  CHECK(cuMemAlloc(&weights.w, sizeof w));
  CHECK(cuMemAlloc(&weights.b, sizeof b));
  CHECK(cuMemcpyHtoD(weights.w, w, sizeof w));
  CHECK(cuMemcpyHtoD(weights.b, b, sizeof b));
  pgrt_ctx *pc = NULL;
  PGRT(reuse_init(&pc, &weights, NULL, 0));

  double worst = 0;
  CUdeviceptr keep[CALLS][3]; /* freed at the end, so every call's addresses are new */
  for (int call = 0; call < CALLS; call++) {
    reuse_args args;
    CHECK(cuMemAlloc(&args.x, sizeof x));
    CHECK(cuMemAlloc(&args.y, sizeof y));
    CHECK(cuMemAlloc(&args.z, sizeof z));
    keep[call][0] = args.x, keep[call][1] = args.y, keep[call][2] = args.z;
    args.a = 0.25f + (float)call;
    for (int i = 0; i < N; i++) x[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */
    CHECK(cuMemsetD32(args.z, 0x7fc00000, N));
    PGRT(reuse_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    CHECK(cuMemcpyDtoH(z, args.z, sizeof z));
    double err = 0;
    for (int i = 0; i < N; i++) { /* the reference, in double */
      double ry = (double)args.a * ((double)x[i] * w[i]) + b[i], rz = (double)args.a * ((double)x[i] * b[i]) + w[i];
      double e = fmax(fabs(y[i] - ry), fabs(z[i] - rz));
      if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
      if (e > err) err = e;
    }
    printf("call %d: a=%.2f: max error %.3g\n", call, args.a, err);
    if (err > worst) worst = err;
  }
  reuse_destroy(&pc);
  for (int c = 0; c < CALLS; c++)
    for (int k = 0; k < 3; k++) CHECK(cuMemFree(keep[c][k]));
  CHECK(cuMemFree(weights.w));
  CHECK(cuMemFree(weights.b));
  int failed = worst > 1e-5 || pc != NULL;
  printf("%s: max error %.3g over %d calls, t0's two values in buffers of their own, side by side\n",
         failed ? "FAIL" : "PASS", worst, CALLS);
  return failed;
}

/*
 * loops_main.c -- runs the C that pgcc generated from loops.graph (a child graph,
 * a while node and an if/else node), on a GPU, and checks it against a CPU
 * computation of the same function:
 *
 *   acc = relu(x * w) + 3 * x;   y = flag ? 2 * acc : -acc
 *
 * Every call gets fresh x and y at new addresses and flips flag: the nodes that
 * read them sit inside the child graph and the conditional bodies, and must be
 * patched there.  Prints each call's max error and what libpgrt did, and writes
 * the graph region as DOT for the topology check (run_codegen.sh).
 *
 *   loops_main OUT_DIR
 */
#include "loops.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define CALLS 6

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  CUstream stream = gpu_start();

  unsigned seed = 777;
  static float w[N], x[N], y[N];
  for (int i = 0; i < N; i++) w[i] = frand(&seed);
  loops_weights weights;
  CHECK(cuMemAlloc(&weights.w, sizeof w));
  CHECK(cuMemcpyHtoD(weights.w, w, sizeof w));

  pgrt_ctx *pc = NULL;
  PGRT(loops_init(&pc, &weights, NULL, 0));

  double worst = 0;
  int failed = 0;
  CUdeviceptr keep[CALLS][2]; /* freed at the end, so every call's addresses are new */
  for (int call = 0; call < CALLS; call++) {
    loops_args args;
    CHECK(cuMemAlloc(&args.x, sizeof x));
    CHECK(cuMemAlloc(&args.y, sizeof y));
    keep[call][0] = args.x, keep[call][1] = args.y;
    args.flag = (unsigned)(call % 2 == 0);
    for (int i = 0; i < N; i++) x[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */

    PGRT(loops_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));

    double err = 0;
    for (int i = 0; i < N; i++) { /* the reference, in double */
      double t = (double)x[i] * w[i];
      double acc = (t > 0 ? t : 0) + 3.0 * x[i];
      double want = args.flag ? 2 * acc : -acc;
      double e = fabs(y[i] - want);
      if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
      if (e > err) err = e;
    }
    printf("call %d: x=%#llx y=%#llx flag=%u: max error %.3g; %d graphs launched, %d nodes patched on the host, "
           "%d on the device, %d eager nodes\n",
           call, (unsigned long long)args.x, (unsigned long long)args.y, args.flag, err, st.graphs_launched,
           st.nodes_patched, st.device_updated, st.eager_nodes);
    if (err > 1e-5) failed = 1;
    if (err > worst) worst = err;
  }
  for (int r = 0; r < 8; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/loops_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  loops_destroy(&pc);
  if (pc) failed = 1;
  for (int c = 0; c < CALLS; c++)
    for (int k = 0; k < 2; k++) CHECK(cuMemFree(keep[c][k]));
  CHECK(cuMemFree(weights.w));
  printf("%s: max error %.3g over %d calls with new addresses each call (child graph, while and if/else nodes)\n",
         failed ? "FAIL" : "PASS", worst, CALLS);
  return failed;
}

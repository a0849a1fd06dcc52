/*
 * captured_main.c -- the second half of the DOT-input test (tests/gpu/run_codegen.sh):
 * runs the C that pgcc generated from capture.c's DOT dump.  The dump has no
 * kernel arguments, so this program gives each kernel node the arguments of the
 * launch it came from (captured_kernel_arg_origins: the DOT node ids, numbered in
 * capture order), on buffers of its own, and checks y against a CPU computation
 * over three calls with new data.
 */
#include "captured.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N 4096

int main(void) {
  CUstream stream = gpu_start();
  int n = N;
  float a = 0.5f;
  CUdeviceptr x, w, b, t0, t1, y;
  CUdeviceptr *all[] = {&x, &w, &b, &t0, &t1, &y};
  for (int i = 0; i < 6; i++) CHECK(cuMemAlloc(all[i], sizeof(float) * N));
  void *launch[4][5] = {{&n, &x, &w, &t0}, {&n, &x, &b, &t1}, {&n, &t1}, {&n, &a, &t0, &t1, &y}};
  void **kernel_args[captured_KERNEL_ARG_NODES];
  for (int k = 0; k < captured_KERNEL_ARG_NODES; k++) {
    const char *id = strrchr(captured_kernel_arg_origins[k], '_'); /* "graph_1_node_3": launch 3 */
    int which = id ? atoi(id + 1) : -1;
    if (which < 0 || which > 3) return fprintf(stderr, "FAIL: node %s is no launch of capture.c\n",
                                               captured_kernel_arg_origins[k]), 1;
    kernel_args[k] = launch[which];
    printf("kernel node %s: the arguments of launch %d\n", captured_kernel_arg_origins[k], which);
  }
  pgrt_ctx *pc = NULL;
  PGRT(captured_init(&pc, NULL, kernel_args, 0));
  captured_args args;
  memset(&args, 0, sizeof args);

  static float hx[N], hw[N], hb[N], hy[N];
  unsigned seed = 99;
  int failed = 0;
  double worst = 0;
  for (int call = 0; call < 3; call++) {
    for (int i = 0; i < N; i++) hx[i] = frand(&seed), hw[i] = frand(&seed), hb[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(x, hx, sizeof hx));
    CHECK(cuMemcpyHtoD(w, hw, sizeof hw));
    CHECK(cuMemcpyHtoD(b, hb, sizeof hb));
    CHECK(cuMemsetD32(y, 0, N));
    PGRT(captured_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(hy, y, sizeof hy));
    double err = 0;
    for (int i = 0; i < N; i++) {
      double r = (double)hx[i] * hb[i];
      double want = (double)a * ((double)hx[i] * hw[i]) + (r > 0 ? r : 0);
      double e = fabs(hy[i] - want);
      if (!(e == e)) e = INFINITY;
      if (e > err) err = e;
    }
    printf("call %d: max error %.3g; %d graphs launched, %d eager nodes\n", call, err, st.graphs_launched,
           st.eager_nodes);
    if (err > 1e-5 || st.graphs_launched != 1) failed = 1;
    if (err > worst) worst = err;
  }
  captured_destroy(&pc);
  for (int i = 0; i < 6; i++) CHECK(cuMemFree(*all[i]));
  printf("%s: C generated from a captured graph's DOT dump, max error %.3g over 3 calls\n", failed ? "FAIL" : "PASS",
         worst);
  return failed;
}

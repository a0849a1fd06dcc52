/*
 * pdl_main.c -- runs the C that pgcc generated from pdl.graph, on a GPU, twice: as
 * generated (consume depends on produce through a programmatic edge: it may start
 * while produce runs, and waits in griddepcontrol.wait) and with PGRT_PDL=off (every
 * dependency a full one).  Each way, every call gets fresh a and y at new addresses and
 * a poisoned (NaN) arena, and y must be exactly 2 * a + 1, checked on the CPU.  Then
 * the graph the driver holds is asked for its edges (pgrt_debug_edges: cuGraphGetEdges'
 * edge data, which cuGraphDebugDotPrint does not print): one of the two must be
 * programmatic as generated, none with PGRT_PDL=off.  Each way's graph is written as
 * DOT for the topology check (run_codegen.sh).
 *
 *   pdl_main OUT_DIR
 */
#define _POSIX_C_SOURCE 200112L /* setenv, unsetenv */

#include "pdl.h"
#include "gpu_check.h"

#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define CALLS 4

/* One way: CALLS calls at new addresses, checked; its graph's DOT into path. */
static int run_way(const char *how, CUstream stream, const char *path, int want_programmatic) {
  CUdeviceptr arena;
  CHECK(cuMemAlloc(&arena, pdl_ARENA_BYTES));
  pgrt_ctx *pc = NULL;
  pdl_weights weights = {0};
  PGRT(pdl_init(&pc, &weights, NULL, arena));
  unsigned seed = 7;
  static float a[N], y[N];
  int failed = 0;
  CUdeviceptr keep[CALLS][2];
  for (int call = 0; call < CALLS; call++) {
    pdl_args args;
    CHECK(cuMemAlloc(&args.a, sizeof a));
    CHECK(cuMemAlloc(&args.y, sizeof y));
    keep[call][0] = args.a, keep[call][1] = args.y;
    for (int i = 0; i < N; i++) a[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(args.a, a, sizeof a));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */
    CHECK(cuMemsetD32(arena, 0x7fc00000, pdl_ARENA_BYTES / 4));
    PGRT(pdl_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += y[i] != 2.0f * a[i] + 1.0f; /* exact in f32 */
    printf("%s, call %d: a=%#llx y=%#llx: %d of %d elements wrong\n", how, call, (unsigned long long)args.a,
           (unsigned long long)args.y, wrong, N);
    failed |= wrong != 0;
  }
  size_t edges = 0, programmatic = 0;
  PGRT(pgrt_debug_edges(pc, 0, &edges, &programmatic));
  printf("%s: the graph the driver holds has %zu edges, %zu of them programmatic\n", how, edges, programmatic);
  /* (2 edges; with PGRT_UPDATE=device, 2 more from the updater kernel) */
  failed |= edges < 2 || programmatic != (size_t)want_programmatic;
  PGRT(pgrt_debug_dot(pc, 0, path));
  pdl_destroy(&pc);
  for (int c = 0; c < CALLS; c++) {
    CHECK(cuMemFree(keep[c][0]));
    CHECK(cuMemFree(keep[c][1]));
  }
  CHECK(cuMemFree(arena));
  return failed;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  CUstream stream = gpu_start();
  char pdl_dot[512], full_dot[512];
  snprintf(pdl_dot, sizeof pdl_dot, "%s/pdl_region0.dot", out);
  snprintf(full_dot, sizeof full_dot, "%s/pdl_full_region0.dot", out);
  unsetenv("PGRT_PDL");
  int failed = run_way("programmatic edge", stream, pdl_dot, 1);
  setenv("PGRT_PDL", "off", 1);
  failed |= run_way("PGRT_PDL=off", stream, full_dot, 0);
  unsetenv("PGRT_PDL");
  printf("%s: y = 2a + 1 exactly on every call, both ways; the driver's graph holds one programmatic edge as "
         "generated and none with PGRT_PDL=off\n", failed ? "FAIL" : "PASS");
  return failed;
}

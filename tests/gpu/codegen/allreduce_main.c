/*
 * allreduce_main.c -- runs the C that pgcc generated from allreduce.graph as two ranks
 * of one NCCL comm, one process and one GPU each, and checks every rank's output
 * against a CPU computation of the sum over both ranks:
 *
 *   t0 = x_r * w_r;  t0 = t0 (rank 0) + t0 (rank 1)  (ncclAllReduce, in the arena);  y = t0 + 1
 *
 * The parent makes the NCCL id (pgrt_nccl_unique_id) before it forks, and touches no
 * CUDA; each child selects device = rank, makes its primary context current and calls
 * allreduce_init with the id and its rank.  Every call gets x and y at new addresses
 * (kept until the end, so no address repeats), y and the arena poisoned with NaN
 * first.  Each rank prints its max error per call and PASS or FAIL; the parent exits
 * nonzero if a child failed.  NVLink multicast (NVLS) is turned off before NCCL loads.
 *
 * allreduce_io.graph computes the same with the all-reduce on the input and output
 * themselves (x = x * w in place, then x -> y), which pgcc stages through the arena;
 * generated with --name=allreduce it has this API, and this program runs it unchanged
 * (tests/gpu/run_nccl.sh builds it against build/gpu/io/allreduce.h).
 *
 *   allreduce_main
 */
#define _POSIX_C_SOURCE 200809L
#include "allreduce.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096
#define CALLS 5
#define RANKS allreduce_COMM_RANKS

/* Rank r's weights and its input of call c: every rank can compute every rank's. */
static void fill(float *v, unsigned seed) {
  for (int i = 0; i < N; i++) v[i] = frand(&seed);
}
static unsigned w_seed(int r) { return 1000u + (unsigned)r; }
static unsigned x_seed(int r, int c) { return 7919u * (unsigned)(c + 1) + 104729u * (unsigned)(r + 1); }

static int run_rank(int rank, const pgrt_nccl_id *id) {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, rank));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  static float w[N], x[N], y[N], ref[N], other[N];
  fill(w, w_seed(rank));
  allreduce_weights weights;
  CHECK(cuMemAlloc(&weights.w, sizeof w));
  CHECK(cuMemcpyHtoD(weights.w, w, sizeof w));
  CUdeviceptr arena;
  CHECK(cuMemAlloc(&arena, allreduce_ARENA_BYTES));

  pgrt_ctx *pc = NULL;
  PGRT(allreduce_init(&pc, &weights, NULL, arena, id, rank));

  double worst = 0;
  CUdeviceptr keep[CALLS][2];
  for (int call = 0; call < CALLS; call++) {
    allreduce_args args;
    CHECK(cuMemAlloc(&args.x, sizeof x));
    CHECK(cuMemAlloc(&args.y, sizeof y));
    keep[call][0] = args.x, keep[call][1] = args.y;
    fill(x, x_seed(rank, call));
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32Async(args.y, 0x7fc00000, N, stream)); /* poison: NaN */
    CHECK(cuMemsetD32Async(arena, 0x7fc00000, allreduce_ARENA_BYTES / 4, stream));
    PGRT(allreduce_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));

    for (int i = 0; i < N; i++) ref[i] = 1.0f;
    for (int r = 0; r < RANKS; r++) { /* the sum over every rank, in double */
      static float xr[N];
      fill(other, w_seed(r));
      fill(xr, x_seed(r, call));
      for (int i = 0; i < N; i++) ref[i] = (float)((double)ref[i] + (double)xr[i] * other[i]);
    }
    double err = 0;
    for (int i = 0; i < N; i++) {
      double e = fabs((double)y[i] - ref[i]);
      if (!(e == e)) e = INFINITY; /* NaN: poison nobody overwrote */
      if (e > err) err = e;
    }
    printf("rank %d call %d: x=%#llx y=%#llx: max error %.3g; %d graphs launched, %d eager nodes\n", rank, call,
           (unsigned long long)args.x, (unsigned long long)args.y, err, st.graphs_launched, st.eager_nodes);
    if (err > worst) worst = err;
  }
  allreduce_destroy(&pc);
  for (int call = 0; call < CALLS; call++) {
    CHECK(cuMemFree(keep[call][0]));
    CHECK(cuMemFree(keep[call][1]));
  }
  CHECK(cuMemFree(arena));
  CHECK(cuMemFree(weights.w));
  int ok = worst <= 1e-5;
  printf("rank %d: %s: max error %.3g over %d calls with new addresses each call, the arena poisoned before each; "
         "ncclAllReduce (sum) over %d ranks\n", rank, ok ? "PASS" : "FAIL", worst, CALLS, RANKS);
  fflush(stdout);
  return ok ? 0 : 1;
}

int main(void) {
  setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off; NCCL reads it when it loads */
  pgrt_nccl_id id;
  PGRT(pgrt_nccl_unique_id(&id)); /* before fork, and no CUDA in this process */
  fflush(stdout);
  pid_t kids[RANKS];
  for (int r = 0; r < RANKS; r++) {
    kids[r] = fork();
    if (kids[r] < 0) {
      perror("fork");
      return 2;
    }
    if (kids[r] == 0) _exit(run_rank(r, &id));
  }
  int failed = 0;
  for (int r = 0; r < RANKS; r++) {
    int status = 0;
    if (waitpid(kids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status %d)\n", r, status);
      failed = 1;
    }
  }
  printf("%s: %d ranks\n", failed ? "FAIL" : "PASS", RANKS);
  return failed;
}

/*
 * buckets_main.c -- runs the C that pgcc generated from buckets.graph, a program exported
 * at batch sizes 1, 2, 4 and 8 (dim B, pad) whose variants ("buckets") are the bodies of
 * one CUDA switch node, on a GPU, and checks it against a CPU computation in double:
 *
 *   y = relu(x * w + b)        x [B, 64], w [64, 64], b [64], y [B, 64]
 *
 * Calls with B = 1, 3, 8, 2, 5, 4 and 4 again: each runs the smallest bucket that holds
 * B (1, 4, 8, 2, 8, 4, 4), with x of that bucket's rows (rows past B finite filler) and y
 * of 8 rows, both at new addresses every call (the last call repeats the one before:
 * same buffers and data, so nothing is patched).  Before each call y is poisoned with
 * NaN and so is the arena (the caller's): the first B rows must be the answer, the rows
 * up to the bucket's size the same function of the filler, and the rows past the bucket
 * must keep their poison (a larger bucket did not run).  pgrt_last_bucket must name the
 * bucket.  B = 9 (past the largest) and B = 0 must fail with PGRT_ERR_BUCKET before
 * anything runs (y keeps its poison, the last bucket stays); a call with B = 6 then runs
 * right.  NAME_ARENA_BYTES must be the largest bucket's intermediate (8 x 64 floats), not
 * the sum over buckets: buckets never run together.  Prints each call's max error and
 * what libpgrt did, writes the graph regions as DOT for the topology check, and ends
 * with PASS or FAIL (tests/gpu/run_codegen.sh).  The same program runs as the switch, or
 * as one graph per bucket launched by the host (the cost model's choice, or
 * PGRT_BUCKETS=switch|graphs); where the buckets' graphs do not instantiate
 * (PGRT_FAULT=instantiate), each bucket's nodes run eagerly.
 *
 *   buckets_main OUT_DIR
 */
#include "buckets.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 64
#define MAX_ROWS 8
#define CALLS 7
#define REPEAT 6 /* repeats call 5 */

static const int64_t values[] = buckets_DIM_B_VALUES;
#define NB ((int)(sizeof values / sizeof values[0]))

/* The bucket B runs in: the smallest value that holds it. */
static int bucket_of(int64_t n) {
  for (int k = 0; k < NB; k++)
    if (values[k] >= n) return k;
  return -1;
}

/* y = relu(x * w + b) for `rows` rows, in double */
static void reference(const float *x, const float *w, const float *b, int rows, double *want) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < COLS; c++) {
      double s = 0;
      for (int k = 0; k < COLS; k++) s += (double)x[r * COLS + k] * w[k * COLS + c];
      s += b[c];
      want[r * COLS + c] = s > 0 ? s : 0;
    }
}

static int all_poison(const float *y, int from, int to) {
  for (int i = from * COLS; i < to * COLS; i++)
    if (y[i] == y[i]) return 0;
  return 1;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  const char *mode = getenv("PGRT_BUCKETS");
  CUstream stream = gpu_start();
  int failed = 0;

  /* the arena holds the largest bucket's intermediate, not every bucket's */
  uint64_t sum = 0;
  for (int k = 0; k < NB; k++) sum += (uint64_t)values[k] * COLS * sizeof(float);
  if (buckets_ARENA_BYTES != (uint64_t)MAX_ROWS * COLS * sizeof(float)) failed = 1;
  printf("arena: %llu bytes (the largest bucket's intermediate: %llu; every bucket's: %llu)\n",
         (unsigned long long)buckets_ARENA_BYTES, (unsigned long long)MAX_ROWS * COLS * sizeof(float),
         (unsigned long long)sum);

  unsigned seed = 4242;
  static float w[COLS * COLS], b[COLS], x[MAX_ROWS * COLS], y[MAX_ROWS * COLS];
  static double want[MAX_ROWS * COLS];
  for (int i = 0; i < COLS * COLS; i++) w[i] = frand(&seed) * 0.25f;
  for (int i = 0; i < COLS; i++) b[i] = frand(&seed) * 0.5f;
  buckets_weights weights;
  CHECK(cuMemAlloc(&weights.w, sizeof w));
  CHECK(cuMemAlloc(&weights.b, sizeof b));
  CHECK(cuMemcpyHtoD(weights.w, w, sizeof w));
  CHECK(cuMemcpyHtoD(weights.b, b, sizeof b));
  CUdeviceptr arena;
  CHECK(cuMemAlloc(&arena, buckets_ARENA_BYTES));

  pgrt_ctx *pc = NULL;
  PGRT(buckets_init(&pc, &weights, NULL, arena));
  if (pgrt_last_bucket(pc, 0) != -1) printf("before any call: last bucket %d, not -1\n", pgrt_last_bucket(pc, 0)), failed = 1;

  static const int64_t sizes[CALLS] = {1, 3, 8, 2, 5, 4, 4};
  double worst = 0;
  CUdeviceptr keep[CALLS + 1][2]; /* freed at the end, so every call's addresses are new */
  int kept = 0;
  buckets_args args;
  memset(&args, 0, sizeof args);
  for (int call = 0; call < CALLS + 1; call++) {
    int64_t n = call < CALLS ? sizes[call] : 6; /* the last: after the refused sizes */
    int k = bucket_of(n), rows = (int)values[k];
    if (call != REPEAT) {
      CHECK(cuMemAlloc(&args.x, (size_t)rows * COLS * sizeof(float)));
      CHECK(cuMemAlloc(&args.y, sizeof y));
      keep[kept][0] = args.x, keep[kept][1] = args.y, kept++;
      for (int i = 0; i < rows * COLS; i++) x[i] = i < n * COLS ? frand(&seed) : 0.5f * frand(&seed); /* filler */
      CHECK(cuMemcpyHtoD(args.x, x, (size_t)rows * COLS * sizeof(float)));
    }
    args.B = n;
    CHECK(cuMemsetD32(args.y, 0x7fc00000, MAX_ROWS * COLS)); /* poison: NaN */
    CHECK(cuMemsetD32(arena, 0x7fc00000, buckets_ARENA_BYTES / 4));

    if (call == CALLS) { /* sizes no bucket holds: refused before anything runs */
      static const int64_t bad[] = {9, 0};
      for (int i = 0; i < 2; i++) {
        args.B = bad[i];
        pgrt_status st = buckets_run(pc, &args, stream);
        CHECK(cuStreamSynchronize(stream));
        CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
        int ok = st == PGRT_ERR_BUCKET && strstr(pgrt_error(), "dim 'B'") && all_poison(y, 0, MAX_ROWS) &&
                 pgrt_last_bucket(pc, 0) == bucket_of(sizes[CALLS - 1]);
        printf("B=%lld: status %d (%s); y untouched: %s; last bucket still %d: %s\n", (long long)bad[i], (int)st,
               pgrt_error(), all_poison(y, 0, MAX_ROWS) ? "yes" : "NO", pgrt_last_bucket(pc, 0), ok ? "ok" : "WRONG");
        if (!ok) failed = 1;
      }
      args.B = n;
    }

    PGRT(buckets_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));

    reference(x, w, b, rows, want);
    double err = 0, pad_err = 0;
    for (int i = 0; i < rows * COLS; i++) {
      double e = fabs(y[i] - want[i]);
      if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
      if (i < n * COLS && e > err) err = e;
      if (i >= n * COLS && e > pad_err) pad_err = e;
    }
    int beyond = all_poison(y, rows, MAX_ROWS), last = pgrt_last_bucket(pc, 0);
    int patched = st.nodes_patched + st.device_updated;
    printf("call %d: B=%lld -> bucket %d (B=%d), x=%#llx y=%#llx: max error %.3g (the bucket's other rows %.3g); "
           "rows past the bucket %s; last bucket %d; %d graphs launched, %d nodes patched on the host, %d on the "
           "device\n", call, (long long)n, k, rows, (unsigned long long)args.x, (unsigned long long)args.y, err,
           pad_err, beyond ? "untouched" : "WRITTEN", last, st.graphs_launched, st.nodes_patched, st.device_updated);
    if (err > 1e-4 || pad_err > 1e-4 || !beyond || last != k || (call == REPEAT && patched)) failed = 1;
    if (call == REPEAT && patched) printf("call %d repeats call %d, yet %d nodes were patched\n", call, call - 1, patched);
    if (err > worst) worst = err;
  }
  for (int r = 0; r < 8; r++) { /* a region run as one graph per bucket has no graph of its own */
    char path[512];
    snprintf(path, sizeof path, "%s/buckets_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  buckets_destroy(&pc);
  if (pc) failed = 1;
  for (int c = 0; c < kept; c++)
    for (int i = 0; i < 2; i++) CHECK(cuMemFree(keep[c][i]));
  CHECK(cuMemFree(arena));
  CHECK(cuMemFree(weights.w));
  CHECK(cuMemFree(weights.b));
  printf("%s: max error %.3g over %d calls with new addresses each call (the last size repeating), each running "
         "its bucket; sizes past the buckets refused%s%s\n", failed ? "FAIL" : "PASS", worst, CALLS + 1,
         mode ? "; PGRT_BUCKETS=" : "", mode ? mode : "");
  return failed;
}

/*
 * shapes_main.c -- runs the C that pgcc generated from shapes.graph, on a GPU, and
 * checks it against a CPU computation:
 *
 *   y[r][c] = x[r][c] * s + b for c < 48,  y[r][c] = -1 for 48 <= c < 80,  y_host = y
 *
 * where s and b are the f16 and bf16 literals of the .graph as pgcc encoded them.
 * The kernel reports their bits beside the GPU's own rounding of the same numbers
 * (cvt.rn.f16.f32, cvt.rn.bf16.f32): they must be equal, for a normal value, a
 * subnormal, an overflow to infinity and a value that rounds up to a power of two.
 * The reference uses the GPU's bits, decoded here.  The host node's function reads
 * y_host when the graph reaches it, so it sees the copy before it.
 *
 * Every call gets fresh x, y, y_host, bits and a fresh host-function record (new
 * user data); the last call repeats the one before it (nothing to patch).
 *
 *   shapes_main OUT_DIR
 */
#include "shapes.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROWS 64
#define COLS 48
#define XP 64 /* x: floats between rows */
#define YP 80 /* y */
#define CALLS 6

typedef struct {
  const float *y_host; /* what the host function reads */
  float first, pad;    /* y_host[0][0] and y_host[0][COLS] when it ran */
  int calls;
} seen;

static void CUDA_CB note(void *data) {
  seen *s = data;
  s->first = s->y_host[0];
  s->pad = s->y_host[COLS];
  s->calls++;
}

static float from_f16(unsigned h) { /* exact */
  int e = (int)(h >> 10 & 0x1f);
  unsigned m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

static float from_bf16(unsigned h) {
  unsigned u = h << 16;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  CUstream stream = gpu_start();
  pgrt_ctx *pc = NULL;
  PGRT(shapes_init(&pc, NULL, NULL, 0));

  unsigned seed = 777;
  static float x[ROWS * XP], y[ROWS * YP];
  unsigned bits[16];
  CUdeviceptr keep[CALLS][3];
  float *keep_host[CALLS];
  seen *keep_seen[CALLS];
  shapes_args args;
  memset(&args, 0, sizeof args);
  float *y_host = NULL;
  seen *s = NULL;
  int failed = 0;
  double worst = 0;
  for (int call = 0; call < CALLS; call++) {
    if (call < CALLS - 1) {
      CHECK(cuMemAlloc(&args.x, sizeof x));
      CHECK(cuMemAlloc(&args.y, sizeof y));
      CHECK(cuMemAlloc(&args.bits, sizeof bits));
      CHECK(cuMemHostAlloc((void **)&y_host, sizeof y, 0));
      args.y_host = (CUdeviceptr)(uintptr_t)y_host;
      s = calloc(1, sizeof *s);
      if (!s) return 2;
      s->y_host = y_host;
      args.note = (pgrt_host_fn){note, s};
    }
    keep[call][0] = args.x, keep[call][1] = args.y, keep[call][2] = args.bits;
    keep_host[call] = y_host, keep_seen[call] = s;
    for (int i = 0; i < ROWS * XP; i++) x[i] = frand(&seed);
    for (int i = 0; i < ROWS * YP; i++) y_host[i] = NAN;
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, ROWS * YP)); /* poison: NaN */
    CHECK(cuMemsetD32(args.bits, 0xffffffffu, 16));
    int calls_before = s->calls;

    PGRT(shapes_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    CHECK(cuMemcpyDtoH(bits, args.bits, sizeof bits));

    int bits_ok = 1;
    for (int k = 0; k < 12; k += 2) bits_ok &= bits[k] == bits[k + 1];
    float sv = from_f16(bits[1]), bv = from_bf16(bits[3]);
    double err = 0;
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < YP; c++) {
        double want = c < COLS ? (double)x[r * XP + c] * sv + bv : -1.0;
        double e = fmax(fabs(y[r * YP + c] - want), fabs(y_host[r * YP + c] - want));
        if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
        if (e > err) err = e;
      }
    int host_ok = s->calls == calls_before + 1 && s->first == y_host[0] && s->pad == -1.0f;
    printf("call %d: x=%#llx y=%#llx y_host=%p: max error %.3g; literal bits %s (f16 %#06x bf16 %#06x, "
           "%#06x %#06x, %#06x %#06x); host function %s; %d graphs launched, %d nodes patched, %d eager nodes\n",
           call, (unsigned long long)args.x, (unsigned long long)args.y, (void *)y_host, err,
           bits_ok ? "as the GPU rounds them" : "DIFFERENT from the GPU's", bits[0], bits[2], bits[4], bits[6], bits[8],
           bits[10], host_ok ? "ran once, after the copy" : "WRONG", st.graphs_launched, st.nodes_patched,
           st.eager_nodes);
    if (err > 1e-6 || !bits_ok || !host_ok) failed = 1;
    if (err > worst) worst = err;
  }
  char path[512];
  snprintf(path, sizeof path, "%s/shapes_region0.dot", out);
  if (pgrt_debug_dot(pc, 0, path) == PGRT_OK) printf("region 0: %s\n", path);

  /* a host node without a function is refused before anything runs */
  args.note.fn = NULL;
  pgrt_status refused = shapes_run(pc, &args, stream);
  printf("a call without the host function: %s (%s)\n", refused == PGRT_ERR_ARGUMENT ? "refused" : "NOT REFUSED",
         pgrt_error());
  if (refused != PGRT_ERR_ARGUMENT) failed = 1;

  shapes_destroy(&pc);
  for (int c = 0; c < CALLS - 1; c++) {
    for (int k = 0; k < 3; k++) CHECK(cuMemFree(keep[c][k]));
    CHECK(cuMemFreeHost(keep_host[c]));
    free(keep_seen[c]);
  }
  printf("%s: max error %.3g over %d calls with new addresses and host data each call (the last repeating the one "
         "before)\n", failed ? "FAIL" : "PASS", worst, CALLS);
  return failed;
}

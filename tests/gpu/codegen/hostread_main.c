/*
 * hostread_main.c -- runs the C that pgcc generated from hostread.graph, a program that
 * reads device values back to the host in the middle, on a GPU, and checks it against
 * a CPU computation:
 *
 *   m = max |x|            read back into host buffer m_host: scalar mx, by value to scale
 *   flag = x[0] >= 0       read back into flag_host: guard g expects 1
 *   bias = base + m / 4    a callback scalar: bias_cb reads m from the host buffers it gets
 *   y = x / m + bias
 *
 * Every call gets fresh x and y at new addresses, new data (so m changes) and a new
 * base; y is poisoned with NaN before each call.  Then:
 *   - a call that repeats the one before (same buffers, data and base): nothing is
 *     patched, and nothing read on the host changes (read_updated 0);
 *   - a call whose x[0] is negative: the guard fails with PGRT_ERR_GUARD, naming 'g' and
 *     its reason, and scale does not run (y keeps its poison);
 *   - a call whose callback returns nonzero: PGRT_ERR_ARGUMENT naming 'bias', y poisoned;
 *   - a call without the callback's function: refused before anything runs;
 *   - a last call at new addresses: right again.
 * The callback must be called once per call (one synchronization), with m as the GPU
 * computed it.  Run it as generated (graph regions), with PGRT_UPDATE=device and with
 * PGRT_FAULT=instantiate (every region eager): tests/gpu/run_codegen.sh.  Prints each
 * call's max error and what libpgrt did, and writes each graph region as DOT for the
 * topology check.
 *
 *   hostread_main OUT_DIR
 */
#include "hostread.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define CALLS 10
#define REPEAT 5   /* repeats call 4 */
#define GUARD 6    /* x[0] < 0: another path */
#define CB_FAILS 7 /* the callback returns nonzero */
#define NO_FN 8    /* no callback function */

typedef struct {
  float base;
  int calls, fail;
  float seen_m; /* m as the callback read it */
} Bias;

static int bias_cb(void *data, const void *const *host, uint64_t *value) {
  Bias *b = data;
  b->calls++;
  if (b->fail) return 7;
  b->seen_m = *(const float *)host[hostread_HOST_m_host];
  float v = b->base + 0.25f * b->seen_m;
  memcpy(value, &v, sizeof v); /* its bits in the low bytes: little-endian */
  return 0;
}

/* y still all poison: nothing wrote it */
static int untouched(const float *y) {
  for (int i = 0; i < N; i++)
    if (y[i] == y[i]) return 0;
  return 1;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  const char *fault = getenv("PGRT_FAULT");
  int eager = fault && strcmp(fault, "instantiate") == 0;
  CUstream stream = gpu_start();

  pgrt_ctx *pc = NULL;
  PGRT(hostread_init(&pc, NULL, NULL, 0));

  unsigned seed = 2024;
  static float x[N], y[N];
  CUdeviceptr keep[CALLS][2]; /* freed at the end, so every call's addresses are new */
  int kept = 0;
  Bias bias = {0};
  hostread_args args;
  args.bias.fn = bias_cb;
  args.bias.data = &bias;
  double worst = 0;
  int failed = 0;
  for (int call = 0; call < CALLS; call++) {
    if (call != REPEAT) {
      CHECK(cuMemAlloc(&args.x, sizeof x));
      CHECK(cuMemAlloc(&args.y, sizeof y));
      keep[kept][0] = args.x, keep[kept][1] = args.y, kept++;
      float scale = 0.5f + (float)call; /* so that m moves */
      for (int i = 0; i < N; i++) x[i] = scale * frand(&seed);
      x[0] = call == GUARD ? -fabsf(x[0]) - 0.25f : fabsf(x[0]);
      CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
      bias.base = 0.125f * (float)call;
    }
    bias.fail = call == CB_FAILS;
    args.bias.fn = call == NO_FN ? NULL : bias_cb;
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */
    CHECK(cuCtxSynchronize());
    int calls_before = bias.calls;

    pgrt_status st = hostread_run(pc, &args, stream);
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    pgrt_run_stats rs;
    pgrt_last_run(pc, &rs);
    const char *why = pgrt_error();
    if (call == GUARD || call == CB_FAILS || call == NO_FN) {
      int ok = call == GUARD    ? st == PGRT_ERR_GUARD && strstr(why, "guard 'g'") &&
                                   strstr(why, "took another path than the one exported") &&
                                   strstr(why, "model.py:8 chose a branch") && bias.calls == calls_before + 1
               : call == CB_FAILS ? st == PGRT_ERR_ARGUMENT && strstr(why, "'bias'") && bias.calls == calls_before + 1
                                  : st == PGRT_ERR_ARGUMENT && strstr(why, "'bias' has no function") &&
                                        bias.calls == calls_before;
      ok = ok && untouched(y);
      printf("call %d: %s: status %d (%s); callback called %d times; y %s\n", call,
             call == GUARD ? "x[0] < 0, the guard's flag flips" : call == CB_FAILS ? "the callback fails"
                                                                                   : "no callback function",
             (int)st, why, bias.calls - calls_before, untouched(y) ? "untouched" : "WRITTEN");
      if (!ok) printf("call %d: FAILED: not refused as expected\n", call), failed = 1;
      continue;
    }
    if (st != PGRT_OK) {
      printf("call %d: FAILED: %s\n", call, why);
      failed = 1;
      continue;
    }
    float m = 0; /* the reference, m in float as the GPU's max finds it exactly */
    for (int i = 0; i < N; i++) m = fmaxf(m, fabsf(x[i]));
    float b = bias.base + 0.25f * m;
    double err = 0;
    for (int i = 0; i < N; i++) {
      double e = fabs(y[i] - ((double)x[i] / m + b));
      if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
      if (e > err) err = e;
    }
    int patched_ok = call != REPEAT || (rs.nodes_patched == 0 && rs.device_updated == 0 && rs.read_updated == 0);
    int read_ok = call == REPEAT || rs.read_updated == 1; /* scale's m and bias changed */
    int launched_ok = eager ? rs.graphs_launched == 0 && rs.eager_nodes == 6 : rs.graphs_launched == 2;
    int cb_ok = bias.calls == calls_before + 1 && bias.seen_m == m;
    printf("call %d: x=%#llx y=%#llx m=%g bias=%g: max error %.3g; %d graphs launched, %d nodes patched on the "
           "host, %d on the device, %d rewritten after the sync, %d eager nodes; callback saw m=%g\n",
           call, (unsigned long long)args.x, (unsigned long long)args.y, (double)m, (double)b, err, rs.graphs_launched,
           rs.nodes_patched, rs.device_updated, rs.read_updated, rs.eager_nodes, (double)bias.seen_m);
    if (!patched_ok) printf("call %d: FAILED: a repeated call patched or read something new\n", call);
    if (!read_ok) printf("call %d: FAILED: scale was not rewritten with the values read\n", call);
    if (!launched_ok) printf("call %d: FAILED: not launched as expected\n", call);
    if (!cb_ok) printf("call %d: FAILED: the callback was not called once with m\n", call);
    if (err > 1e-5 || !patched_ok || !read_ok || !launched_ok || !cb_ok) failed = 1;
    if (err > worst) worst = err;
  }
  for (int r = 0; r < 3; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/hostread_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  hostread_destroy(&pc);
  if (pc) failed = 1;
  for (int k = 0; k < kept; k++) {
    CHECK(cuMemFree(keep[k][0]));
    CHECK(cuMemFree(keep[k][1]));
  }
  printf("%s: max error %.3g over %d calls with new addresses and values read on the host each call (the guard, a "
         "failing callback and a missing one refused)%s\n",
         failed ? "FAIL" : "PASS", worst, CALLS, eager ? ", every region eager" : "");
  return failed;
}

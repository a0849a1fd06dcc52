/*
 * chain_main.c -- runs the C that pgcc generated from chain.graph, on a GPU, and
 * checks it against a CPU computation of the same function:
 *
 *   t0 = x * w;  t1 = relu(a * t0 + b);  y = t1;  y_host = y;  z = 2 * y + b
 *
 * Every call gets fresh x, y, z (device) and y_host (pinned host) at new addresses
 * and a new scalar a: results must stay right without re-capture.  The last call
 * repeats the one before it (same buffers and scalar, new data): nothing is patched,
 * and what earlier calls patched (on the host or the device) must still hold.  Prints the max
 * error of each call, what libpgrt did (graphs launched, nodes patched), and writes
 * each graph region as DOT for the topology check (run_codegen.sh).
 *
 *   chain_main OUT_DIR
 */
#include "chain.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define CALLS 7 /* the last repeats the one before */

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  CUstream stream = gpu_start();

  unsigned seed = 12345;
  static float w[N], b[N], x[N], y[N], z[N], ry[N], rz[N];
  for (int i = 0; i < N; i++) w[i] = frand(&seed), b[i] = frand(&seed);
  chain_weights weights;
  CHECK(cuMemAlloc(&weights.w, sizeof w));
  CHECK(cuMemAlloc(&weights.b, sizeof b));
  CHECK(cuMemcpyHtoD(weights.w, w, sizeof w));
  CHECK(cuMemcpyHtoD(weights.b, b, sizeof b));

  pgrt_ctx *pc = NULL;
  PGRT(chain_init(&pc, &weights, NULL, 0));
  pgrt_init_stats is;
  pgrt_last_init(pc, &is); /* run_codegen.sh reads this line: which way libpgrt's own kernels came */
  printf("init: %.1f ms, own kernels %.1f ms: prebuilt %d, nvrtc %d, cached %d\n", is.total_ns / 1e6, is.own_ns / 1e6,
         is.prebuilt, is.nvrtc_compiles, is.cache_hits);
  printf("libraries: %d fatbins, %d threads loading them, %lld bytes\n", is.library_fatbins, is.library_threads,
         is.library_bytes);

  double worst = 0;
  int failed = 0;
  CUdeviceptr keep[CALLS][3]; /* freed at the end, so every call's addresses are new */
  float *keep_host[CALLS];
  chain_args args;
  float *y_host = NULL;
  for (int call = 0; call < CALLS; call++) {
    if (call < CALLS - 1) {
      CHECK(cuMemAlloc(&args.x, sizeof x));
      CHECK(cuMemAlloc(&args.y, sizeof y));
      CHECK(cuMemAlloc(&args.z, sizeof z));
      CHECK(cuMemHostAlloc((void **)&y_host, sizeof y, 0));
      args.y_host = (CUdeviceptr)(uintptr_t)y_host;
      args.a = 0.5f + (float)call;
    }
    keep[call][0] = args.x, keep[call][1] = args.y, keep[call][2] = args.z, keep_host[call] = y_host;
    for (int i = 0; i < N; i++) x[i] = frand(&seed), y_host[i] = NAN;
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, 0x7fc00000, N)); /* poison: NaN */
    CHECK(cuMemsetD32(args.z, 0x7fc00000, N));

    PGRT(chain_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    CHECK(cuMemcpyDtoH(z, args.z, sizeof z));

    double err = 0;
    for (int i = 0; i < N; i++) { /* the reference, in double */
      double t = (double)args.a * ((double)x[i] * w[i]) + b[i];
      ry[i] = (float)(t > 0 ? t : 0);
      rz[i] = (float)(2.0 * ry[i] + b[i]);
      double e = fmax(fabs(y[i] - ry[i]), fmax(fabs(z[i] - rz[i]), fabs(y_host[i] - ry[i])));
      if (!(e == e)) e = INFINITY; /* NaN: an element nobody wrote */
      if (e > err) err = e;
    }
    printf("call %d: x=%#llx y=%#llx z=%#llx y_host=%p a=%.1f: max error %.3g; %d graphs launched, "
           "%d nodes patched on the host, %d on the device, %d eager nodes\n",
           call, (unsigned long long)args.x, (unsigned long long)args.y, (unsigned long long)args.z, (void *)y_host,
           args.a, err, st.graphs_launched, st.nodes_patched, st.device_updated, st.eager_nodes);
    if (err > 1e-5) failed = 1;
    if (err > worst) worst = err;
  }
  { /* the weights saved and restored from C (pgrt_weights_save/restore: a checkpoint) */
    static float w2[N], b2[N];
    char path[512], other[512];
    snprintf(path, sizeof path, "%s/chain_state.safetensors", out);
    snprintf(other, sizeof other, "%s/chain_other.safetensors", out);
    PGRT(pgrt_weights_save(path, chain_info(), &weights));
    CHECK(cuMemsetD8(weights.w, 0, sizeof w));
    CHECK(cuMemsetD8(weights.b, 0xff, sizeof b));
    PGRT(pgrt_weights_restore(path, chain_info(), &weights));
    CHECK(cuMemcpyDtoH(w2, weights.w, sizeof w));
    CHECK(cuMemcpyDtoH(b2, weights.b, sizeof b));
    pgrt_host_tensor t;
    PGRT(pgrt_tensor_read(path, "b", &t));
    int same = !memcmp(w2, w, sizeof w) && !memcmp(b2, b, sizeof b) && !strcmp(t.dtype, "F32") && t.ndim == 1 &&
               t.shape[0] == N && !memcmp(t.data, b, sizeof b);
    /* a file without every weight changes nothing and says which is missing */
    pgrt_host_tensor only_w = {.name = "w", .dtype = "F32", .ndim = 1, .shape = {N}, .size = sizeof w, .data = b};
    PGRT(pgrt_tensors_write(other, &only_w, 1));
    pgrt_status bad = pgrt_weights_restore(other, chain_info(), &weights);
    const char *why = pgrt_error();
    CHECK(cuMemcpyDtoH(w2, weights.w, sizeof w));
    int refused = bad == PGRT_ERR_ARGUMENT && strstr(why, "'b'") && !memcmp(w2, w, sizeof w);
    printf("weights saved to %s and restored: %s; a file without 'b' %s (%s)\n", path, same ? "the same" : "DIFFERENT",
           refused ? "changes nothing" : "WAS NOT REFUSED", why);
    /* nor does one whose 'b' has the size but another dtype */
    pgrt_host_tensor both[2] = {only_w, {.name = "b", .dtype = "I32", .ndim = 1, .shape = {N}, .size = sizeof b,
                                          .data = w}};
    PGRT(pgrt_tensors_write(other, both, 2));
    bad = pgrt_weights_restore(other, chain_info(), &weights);
    why = pgrt_error();
    CHECK(cuMemcpyDtoH(w2, weights.w, sizeof w));
    int refused_dtype = bad == PGRT_ERR_ARGUMENT && strstr(why, "I32") && !memcmp(w2, w, sizeof w);
    printf("a file whose 'b' is I32 %s (%s)\n", refused_dtype ? "changes nothing" : "WAS NOT REFUSED", why);
    refused = refused && refused_dtype;
    pgrt_host_tensor_free(&t);
    if (!same || !refused) failed = 1;
  }
  for (int r = 0; r < 8; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/chain_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  chain_destroy(&pc);
  if (pc) failed = 1;
  for (int c = 0; c < CALLS - 1; c++) { /* the last call's buffers are the one before's */
    for (int k = 0; k < 3; k++) CHECK(cuMemFree(keep[c][k]));
    CHECK(cuMemFreeHost(keep_host[c]));
  }
  CHECK(cuMemFree(weights.w));
  CHECK(cuMemFree(weights.b));
  printf("%s: max error %.3g over %d calls with new addresses each call (the last repeating the one before)\n",
         failed ? "FAIL" : "PASS", worst, CALLS);
  return failed;
}

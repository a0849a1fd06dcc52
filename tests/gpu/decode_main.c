/*
 * decode_main.c -- greedy generation driven from C: the decode step exported with batch
 * buckets (tests/models/decode_models.py, tests/gpu/decode_export.py), its generated C linked in, no
 * Python.  For each bucket B of DIM_batch: the prompt (B x P tokens) is fed one token per
 * call, then NEW tokens are generated, each call's output token buffer the next call's
 * input (nothing copied), the position a device tensor whose address moves every call
 * (one slot of a table 0, 1, 2, ...), the KV caches the same buffers throughout.  The
 * tokens are compared with PyTorch's (the compiled step's, token for token: REFS holds
 * prompt_B and tokens_B); then the same generation is timed, NEW x B tokens over the
 * loop's wall time, the median of 5.
 *
 *   decode_main EXPORT_DIR REFS        (exit status 0: every bucket matched)
 *
 * Correctness pass: the arena (ours) is filled with 0xff before every call and the
 * caches zeroed; timing passes: caches zeroed, nothing else.
 */
#define _POSIX_C_SOURCE 199309L
#include "decode.h"
#include "gpu_check.h"

#include <stdint.h>
#include <string.h>

#define NEW 128
#define RUNS 5

static const int64_t BUCKETS[] = decode_DIM_batch_VALUES;

typedef struct {
  CUdeviceptr prompt, gen, scratch, pos, kc, vc;
  int64_t b, p;
} Seq;

/* One generation: P - 1 + NEW calls; with poison, the arena is filled first each call. */
static void generate(pgrt_ctx *ctx, const Seq *s, CUdeviceptr arena, CUstream st, int poison) {
  size_t cache = 0;
  for (int i = 0; i < decode_info()->n_args; i++)
    if (strcmp(decode_info()->args[i].name, "in2") == 0)
      cache = decode_info()->args[i].size / (size_t)BUCKETS[decode_DIM_batch_BUCKETS - 1] * (size_t)s->b;
  CHECK(cuMemsetD8Async(s->kc, 0, cache, st));
  CHECK(cuMemsetD8Async(s->vc, 0, cache, st));
  CUdeviceptr tok = s->prompt; /* column 0 of the prompt, stored position-major */
  for (int64_t i = 0; i < s->p + NEW - 1; i++) {
    int64_t k = i - (s->p - 1); /* the new token this call makes, from k = 0 */
    decode_args a = {.batch = s->b,
                     .in0 = tok,
                     .in1 = s->pos + 8 * (CUdeviceptr)i,
                     .in2 = s->kc,
                     .in3 = s->vc,
                     .out0 = k >= 0 ? s->gen + 8 * (CUdeviceptr)(k * s->b) : s->scratch};
    if (poison) CHECK(cuMemsetD8Async(arena, 0xff, decode_ARENA_BYTES, st));
    PGRT(decode_run(ctx, &a, st));
    tok = k >= 0 ? a.out0 : s->prompt + 8 * (CUdeviceptr)((i + 1) * s->b);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s EXPORT_DIR REFS\n", argv[0]);
    return 2;
  }
  CUstream st = gpu_start();
  char path[4096];
  snprintf(path, sizeof path, "%s/decode.safetensors", argv[1]);
  decode_weights w;
  CUdeviceptr block = 0, arena = 0;
  PGRT(decode_load_w(path, &w, &block));
  CHECK(cuMemAlloc(&arena, decode_ARENA_BYTES ? decode_ARENA_BYTES : 1));
  pgrt_ctx *ctx = NULL;
  PGRT(decode_init(&ctx, &w, NULL, arena));
  int failed = 0;
  for (int bi = 0; bi < decode_DIM_batch_BUCKETS; bi++) {
    int64_t b = BUCKETS[bi];
    char name[64];
    pgrt_host_tensor prompt, want;
    snprintf(name, sizeof name, "prompt_%lld", (long long)b);
    PGRT(pgrt_tensor_read(argv[2], name, &prompt));
    snprintf(name, sizeof name, "tokens_%lld", (long long)b);
    PGRT(pgrt_tensor_read(argv[2], name, &want));
    Seq s = {.b = b, .p = prompt.shape[1]};
    int64_t n = s.p + NEW, *host = malloc(sizeof *host * (size_t)(n * b));
    size_t cache = 0;
    for (int i = 0; i < decode_info()->n_args; i++)
      if (strcmp(decode_info()->args[i].name, "in2") == 0)
        cache = decode_info()->args[i].size / (size_t)BUCKETS[decode_DIM_batch_BUCKETS - 1] * (size_t)b;
    CHECK(cuMemAlloc(&s.prompt, 8 * (size_t)(s.p * b)));
    CHECK(cuMemAlloc(&s.gen, 8 * (size_t)(NEW * b)));
    CHECK(cuMemAlloc(&s.scratch, 8 * (size_t)b));
    CHECK(cuMemAlloc(&s.pos, 8 * (size_t)n));
    CHECK(cuMemAlloc(&s.kc, cache));
    CHECK(cuMemAlloc(&s.vc, cache));
    const int64_t *pr = prompt.data;
    for (int64_t t = 0; t < s.p; t++) /* position-major: each call's B tokens side by side */
      for (int64_t q = 0; q < b; q++) host[t * b + q] = pr[q * s.p + t];
    CHECK(cuMemcpyHtoD(s.prompt, host, 8 * (size_t)(s.p * b)));
    for (int64_t i = 0; i < n; i++) host[i] = i;
    CHECK(cuMemcpyHtoD(s.pos, host, 8 * (size_t)n));
    CHECK(cuMemsetD8(s.gen, 0xff, 8 * (size_t)(NEW * b)));

    generate(ctx, &s, arena, st, 1);
    CHECK(cuStreamSynchronize(st));
    if (pgrt_last_bucket(ctx, 0) != bi) {
      printf("batch %lld: ran bucket %d, not %d\n", (long long)b, pgrt_last_bucket(ctx, 0), bi);
      failed = 1;
    }
    CHECK(cuMemcpyDtoH(host, s.gen, 8 * (size_t)(NEW * b)));
    const int64_t *ref = want.data;
    int64_t same = 0, first_diff = -1;
    for (int64_t q = 0; q < b; q++)
      for (int64_t k = 0; k < NEW; k++) {
        int eq = host[k * b + q] == ref[q * NEW + k];
        same += eq;
        if (!eq && first_diff < 0) first_diff = q * NEW + k;
      }
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
      double t0 = gpu_now_us();
      generate(ctx, &s, arena, st, 0);
      CHECK(cuStreamSynchronize(st));
      t[r] = gpu_now_us() - t0;
    }
    qsort(t, RUNS, sizeof *t, gpu_cmp_double);
    printf("batch %lld: %lld of %lld tokens equal to PyTorch's (compiled step)%s; first %lld %lld %lld %lld; from C: "
           "%.0f tokens/s (median of %d generations, %.1f us per call, spread %.1f%%)\n",
           (long long)b, (long long)same, (long long)(NEW * b), same == NEW * b ? ", token for token" : "",
           (long long)host[0], (long long)host[b], (long long)host[2 * b], (long long)host[3 * b],
           (double)(NEW * b) / (t[RUNS / 2] * 1e-6), RUNS, t[RUNS / 2] / (double)(s.p + NEW - 1),
           100.0 * (t[RUNS - 1] - t[0]) / t[RUNS / 2]);
    if (same != NEW * b) {
      printf("batch %lld: first difference at sequence %lld, token %lld\n", (long long)b,
             (long long)(first_diff / NEW), (long long)(first_diff % NEW));
      failed = 1;
    }
    free(host);
    pgrt_host_tensor_free(&prompt);
    pgrt_host_tensor_free(&want);
    CHECK(cuMemFree(s.prompt));
    CHECK(cuMemFree(s.gen));
    CHECK(cuMemFree(s.scratch));
    CHECK(cuMemFree(s.pos));
    CHECK(cuMemFree(s.kc));
    CHECK(cuMemFree(s.vc));
  }
  decode_destroy(&ctx);
  CHECK(cuMemFree(arena));
  CHECK(cuMemFree(block));
  printf(failed ? "FAIL\n" : "PASS: every bucket's generation from C equals PyTorch's, token for token\n");
  return failed;
}

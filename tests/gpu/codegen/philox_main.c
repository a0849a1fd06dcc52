/*
 * philox_main.c -- runs the C that pgcc generated from philox.graph (a program that
 * draws random numbers: its random-number state, role rng), and checks the seed and
 * offset each of its two kernels reads on every call against the ones PyTorch's
 * generator would give them:
 *
 *   call k: kernel j reads seed S and offset O + 4 * j, where O advances by 8 a call
 *
 * from the default seed and offset 0; after pgrt_rng_set(ctx, 42, 1000), seed 42 and
 * offsets from 1000; an offset that is no multiple of 4 refused; the state read back
 * with pgrt_rng_get; NAME_info's rng_increment.  Every call's outputs are new buffers,
 * poisoned first.  Writes each graph region as DOT for the topology check
 * (run_codegen.sh).
 *
 *   philox_main OUT_DIR
 */
#include "philox.h"
#include "gpu_check.h"

#include <inttypes.h>
#include <stdio.h>

#define CALLS 5 /* the third after pgrt_rng_set */

int main(int argc, char **argv) {
  CUstream stream = gpu_start();
  pgrt_ctx *pc = NULL;
  PGRT(philox_init(&pc, NULL, NULL, 0));
  int failed = philox_info()->rng_increment != philox_RNG_INCREMENT || philox_RNG_INCREMENT != 8;
  if (failed) printf("info: rng_increment %" PRIu64 ", expected 8\n", philox_info()->rng_increment);

  uint64_t seed = PGRT_DEFAULT_SEED, offset = 0, got_seed, got_offset;
  PGRT(pgrt_rng_get(pc, &got_seed, &got_offset));
  if (got_seed != seed || got_offset != 0) {
    printf("the state at init: seed %" PRIu64 ", offset %" PRIu64 "; expected PyTorch's default seed, 0\n",
           got_seed, got_offset);
    failed = 1;
  }
  if (pgrt_rng_set(pc, 1, 3) != PGRT_ERR_ARGUMENT) {
    printf("pgrt_rng_set took offset 3, which is no multiple of 4\n");
    failed = 1;
  }
  CUdeviceptr keep[CALLS][2];
  for (int call = 0; call < CALLS; call++) {
    if (call == 2) {
      seed = 42, offset = 1000;
      PGRT(pgrt_rng_set(pc, seed, offset));
    }
    philox_args args;
    CHECK(cuMemAlloc(&args.a, 16));
    CHECK(cuMemAlloc(&args.b, 16));
    keep[call][0] = args.a, keep[call][1] = args.b;
    CHECK(cuMemsetD32(args.a, 0xdeadbeef, 4)); /* poison */
    CHECK(cuMemsetD32(args.b, 0xdeadbeef, 4));
    PGRT(philox_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    uint64_t a[2], b[2];
    CHECK(cuMemcpyDtoH(a, args.a, sizeof a));
    CHECK(cuMemcpyDtoH(b, args.b, sizeof b));
    int ok = a[0] == seed && a[1] == offset && b[0] == seed && b[1] == offset + 4;
    printf("call %d: kernel 0 read seed %" PRIu64 " offset %" PRIu64 ", kernel 1 seed %" PRIu64 " offset %" PRIu64
           "; expected %" PRIu64 ", %" PRIu64 " and %" PRIu64 "%s\n", call, a[0], a[1], b[0], b[1], seed, offset,
           offset + 4, ok ? "" : "  WRONG");
    failed |= !ok;
    offset += 8;
    PGRT(pgrt_rng_get(pc, &got_seed, &got_offset));
    if (got_seed != seed || got_offset != offset) {
      printf("after call %d: pgrt_rng_get gives %" PRIu64 ", %" PRIu64 "; expected %" PRIu64 ", %" PRIu64 "\n", call,
             got_seed, got_offset, seed, offset);
      failed = 1;
    }
  }
  for (int r = 0; r < 2; r++) { /* for the topology check (run_codegen.sh) */
    char path[512];
    snprintf(path, sizeof path, "%s/philox_region%d.dot", argc > 1 ? argv[1] : ".", r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  philox_destroy(&pc);
  for (int c = 0; c < CALLS; c++) {
    CHECK(cuMemFree(keep[c][0]));
    CHECK(cuMemFree(keep[c][1]));
  }
  printf("%s: %d calls drew from the seed and offsets PyTorch's generator would give them\n",
         failed ? "FAIL" : "PASS", CALLS);
  return failed;
}

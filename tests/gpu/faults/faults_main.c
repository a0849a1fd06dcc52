/*
 * faults_main.c -- libpgrt under faults, on a GPU (tests/gpu/run_faults.sh):
 *
 *   oom:        an arena larger than the GPU: init fails with PGRT_ERR_MEMORY and
 *               leaves device memory as it found it;
 *   badmodule:  a cubin for another GPU (sm_80): PGRT_ERR_MODULE, nothing leaked;
 *   badsource:  CUDA C that does not compile: PGRT_ERR_MODULE with NVRTC's log;
 *   badglobal, badglobalsize: a module global the module lacks, or has at another
 *               size: PGRT_ERR_MODULE naming the module and the global, nothing leaked;
 *   arguments:  null weights at init, a null buffer at run: PGRT_ERR_ARGUMENT;
 *   leaks:      init, 100 calls at new addresses, destroy; then 20 more init/run/destroy
 *               cycles must leave free device memory where the first left it.
 *
 * Prints one line per check and "N passed, M failed"; exits non-zero on failure.
 */
#include "badglobal.h"
#include "badglobalsize.h"
#include "badmodule.h"
#include "badsource.h"
#include "chain.h"
#include "oom.h"
#include "gpu_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
  ok ? passed++ : failed++;
}

static size_t free_memory(void) {
  size_t f, t;
  CHECK(cuCtxSynchronize());
  CHECK(cuMemGetInfo(&f, &t));
  return f;
}

/* Device memory is back within 2 MiB (the driver's own bookkeeping moves a little). */
static int same_memory(size_t before) {
  size_t after = free_memory();
  return after + (2u << 20) >= before;
}

int main(void) {
  gpu_start(); /* runs on the default stream */
  CUdeviceptr w, b, x, y, z;
  CHECK(cuMemAlloc(&w, 16384));
  CHECK(cuMemAlloc(&b, 16384));
  pgrt_ctx *pc = NULL;
  char detail[256];

  size_t before = free_memory();
  oom_weights ow = {.w = w};
  pgrt_status st = oom_init(&pc, &ow, NULL, 0);
  snprintf(detail, sizeof detail, "status %d, '%.150s'", (int)st, pgrt_error());
  check(st == PGRT_ERR_MEMORY && pc == NULL && strstr(pgrt_error(), "the arena"), "oom: init fails", detail);
  check(same_memory(before), "oom: nothing leaked", NULL);

  before = free_memory();
  badmodule_weights bw = {.w = w};
  st = badmodule_init(&pc, &bw, NULL, 0);
  snprintf(detail, sizeof detail, "status %d, '%.150s'", (int)st, pgrt_error());
  check(st == PGRT_ERR_MODULE && pc == NULL, "badmodule: init fails", detail);
  check(same_memory(before), "badmodule: nothing leaked", NULL);

  badsource_weights sw = {.w = w};
  st = badsource_init(&pc, &sw, NULL, 0);
  snprintf(detail, sizeof detail, "status %d, '%.120s'", (int)st, pgrt_error());
  check(st == PGRT_ERR_MODULE && strstr(pgrt_error(), "does not compile") && strstr(pgrt_error(), "error"),
        "badsource: init fails with NVRTC's log", detail);

  before = free_memory();
  st = badglobal_init(&pc, NULL, NULL, 0);
  snprintf(detail, sizeof detail, "status %d, '%.150s'", (int)st, pgrt_error());
  check(st == PGRT_ERR_MODULE && pc == NULL && strstr(pgrt_error(), "module 'kernels' has no global 'nonesuch'"),
        "badglobal: init fails naming the module and the global", detail);
  st = badglobalsize_init(&pc, NULL, NULL, 0);
  snprintf(detail, sizeof detail, "status %d, '%.150s'", (int)st, pgrt_error());
  check(st == PGRT_ERR_MODULE && pc == NULL &&
            strstr(pgrt_error(), "module 'kernels': global 'scale' is 4 bytes there, the program gives 8"),
        "badglobalsize: init fails naming the global and both sizes", detail);
  check(same_memory(before), "badglobal, badglobalsize: nothing leaked", NULL);

  st = chain_init(&pc, NULL, NULL, 0);
  check(st == PGRT_ERR_ARGUMENT && pc == NULL && strstr(pgrt_error(), "needs its weights"), "arguments: null weights",
        pgrt_error());

  before = free_memory();
  chain_weights cw = {.w = w, .b = b};
  st = chain_init(&pc, &cw, NULL, 0);
  check(st == PGRT_OK, "leaks: init", st ? pgrt_error() : NULL);
  float *host;
  CHECK(cuMemHostAlloc((void **)&host, 16384, 0));
  chain_args a = {.a = 1.0f, .y_host = (CUdeviceptr)(uintptr_t)host};
  a.x = 0;
  CHECK(cuMemAlloc(&y, 16384));
  CHECK(cuMemAlloc(&z, 16384));
  a.y = y, a.z = z;
  st = chain_run(pc, &a, 0);
  check(st == PGRT_ERR_ARGUMENT && strstr(pgrt_error(), "'x'"), "arguments: a null buffer at run", pgrt_error());
  int ok = 1;
  for (int i = 0; i < 100 && ok; i++) {
    CHECK(cuMemAlloc(&x, 16384));
    CHECK(cuMemsetD32(x, 0, 4096));
    a.x = x;
    ok = chain_run(pc, &a, 0) == PGRT_OK;
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(x));
  }
  check(ok, "leaks: 100 calls at new addresses", ok ? NULL : pgrt_error());
  chain_destroy(&pc);
  CHECK(cuMemFree(y));
  CHECK(cuMemFree(z));
  check(pc == NULL, "leaks: destroy clears the context", NULL);
  /* The first cycle may leave memory the driver keeps for the context (device-side
   * graph update needs some): said, not judged.  Twenty more cycles must not grow. */
  size_t settled = free_memory();
  printf("info: the first init/run/destroy cycle left %.2f MiB less free device memory\n",
         ((double)before - (double)settled) / (1 << 20));
  ok = 1;
  for (int cycle = 0; cycle < 20 && ok; cycle++) {
    ok = chain_init(&pc, &cw, NULL, 0) == PGRT_OK;
    for (int i = 0; i < 10 && ok; i++) {
      CHECK(cuMemAlloc(&x, 16384));
      CHECK(cuMemAlloc(&y, 16384));
      CHECK(cuMemAlloc(&z, 16384));
      a.x = x, a.y = y, a.z = z;
      ok = chain_run(pc, &a, 0) == PGRT_OK;
      CHECK(cuCtxSynchronize());
      CHECK(cuMemFree(x));
      CHECK(cuMemFree(y));
      CHECK(cuMemFree(z));
    }
    chain_destroy(&pc);
  }
  snprintf(detail, sizeof detail, "free device memory changed by %.2f MiB",
           ((double)free_memory() - (double)settled) / (1 << 20));
  check(ok && same_memory(settled), "leaks: 20 more init/run/destroy cycles leave device memory as it was", detail);
  CHECK(cuMemFreeHost(host));
  CHECK(cuMemFree(w));
  CHECK(cuMemFree(b));

  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}

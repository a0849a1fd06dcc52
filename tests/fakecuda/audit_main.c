/*
 * audit_main.c -- the CPU double's audit of launch parameters (fakecuda.c, audit): a
 * launch whose parameters hold an address in freed memory faults, as a pointer libpgrt
 * failed to replace would; 8 bytes that straddle two parameters are not an address and
 * never fault.
 *
 *   FAKECUDA_KERNELS=skip audit CASE      (tests/fakecuda/run.sh runs every case)
 *
 * Each case frees a block A (the double keeps it in quarantine) and launches one kernel
 * with A's bytes placed as the case says; it exits 0 when the launch does what the case
 * expects and 1 otherwise, one case a process (a fault is sticky, as on a GPU):
 *   pointer   A as a pointer parameter                    -> faults
 *   halves    A as two 32-bit parameters side by side     -> faults
 *   struct    A inside a struct parameter, 4-byte aligned -> faults
 *   straddle  A's halves as the high half of one pointer and the low half of the
 *             next (fuzz_c's campaign-6 report, likeliest cause) -> runs
 */
#include "gpu_check.h"

#include <nvrtc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char source[] =
    "struct Pair { unsigned a; unsigned long long p; unsigned b; };\n"
    "extern \"C\" __global__ void four(int n, float *x, float *w, float *t) {}\n"
    "extern \"C\" __global__ void halves(unsigned lo, unsigned hi) {}\n"
    "extern \"C\" __global__ void in_struct(Pair s) {}\n";

static void *cubin(size_t *size) {
  nvrtcProgram p;
  const char *opts[] = {"-arch=sm_90"};
  if (nvrtcCreateProgram(&p, source, "audit.cu", 0, NULL, NULL) != NVRTC_SUCCESS ||
      nvrtcCompileProgram(p, 1, opts) != NVRTC_SUCCESS || nvrtcGetCUBINSize(p, size) != NVRTC_SUCCESS) {
    fprintf(stderr, "audit: NVRTC did not compile the kernels\n");
    exit(2);
  }
  void *b = malloc(*size);
  if (!b || nvrtcGetCUBIN(p, b) != NVRTC_SUCCESS) exit(2);
  nvrtcDestroyProgram(&p);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: audit pointer|halves|struct|straddle\n");
    return 2;
  }
  const char *c = argv[1];
  CUstream stream = gpu_start();
  size_t n;
  void *image = cubin(&n);
  CUlibrary lib;
  CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
  CUdeviceptr a;
  CHECK(cuMemAlloc(&a, 4096));
  CHECK(cuMemFree(a)); /* quarantined: its addresses are freed memory from now on */
  uint32_t lo = (uint32_t)a, hi = (uint32_t)(a >> 32);
  CUkernel k;
  CUfunction f;
  CUresult r;
  int expect_fault;
  if (strcmp(c, "pointer") == 0 || strcmp(c, "straddle") == 0) {
    int count = 1;
    /* four(n, x, w, t): x at bytes 8..16, w at 16..24.  straddle: bytes 12..20 (x's high
     * half, w's low half) spell a; no parameter holds it */
    uint64_t x = strcmp(c, "pointer") == 0 ? a : (uint64_t)lo << 32 | 0x100, w = 0x7f0000000000ull | hi, t = 0x1000;
    void *params[] = {&count, &x, &w, &t};
    CHECK(cuLibraryGetKernel(&k, lib, "four"));
    CHECK(cuKernelGetFunction(&f, k));
    r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
    expect_fault = strcmp(c, "pointer") == 0;
  } else if (strcmp(c, "halves") == 0) {
    void *params[] = {&lo, &hi};
    CHECK(cuLibraryGetKernel(&k, lib, "halves"));
    CHECK(cuKernelGetFunction(&f, k));
    r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
    expect_fault = 1;
  } else if (strcmp(c, "struct") == 0) {
    unsigned char s[24] = {0}; /* struct Pair: a at 0, p at 8, b at 16 */
    memcpy(s + 8, &a, 8);
    void *params[] = {s};
    CHECK(cuLibraryGetKernel(&k, lib, "in_struct"));
    CHECK(cuKernelGetFunction(&f, k));
    r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
    expect_fault = 1;
  } else {
    fprintf(stderr, "audit: no case '%s'\n", c);
    return 2;
  }
  int faulted = r == CUDA_ERROR_ILLEGAL_ADDRESS;
  if (!faulted && r != CUDA_SUCCESS) {
    fprintf(stderr, "audit: %s: the launch failed otherwise (%d)\n", c, (int)r);
    return 1;
  }
  if (!faulted) { /* (after a fault the context is sticky: nothing more can be freed) */
    CHECK(cuLibraryUnload(lib));
    CHECK(cuStreamDestroy(stream));
  }
  free(image);
  if (faulted != expect_fault) {
    printf("audit: %s: the launch %s; it should have %s\n", c, faulted ? "faulted" : "run",
           expect_fault ? "faulted" : "run");
    return 1;
  }
  printf("audit: %s: the launch %s, as it should\n", c, faulted ? "faulted" : "ran");
  return 0;
}

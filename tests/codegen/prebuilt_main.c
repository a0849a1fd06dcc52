/* prebuilt_main.c -- the cubins of libpgrt's own kernels that its build compiled
 * (runtime/own_kernels.h, runtime/tool/prebuild.c), checked against NVRTC compiling the
 * same sources here (`make check-info`; no GPU: it calls no CUDA).  The table has one
 * cubin per source and architecture NVRTC supports, each a CUDA ELF for that
 * architecture whose symbols name the source's kernels, byte-identical to what NVRTC
 * gives for the source with libpgrt's options -- the cubin init would otherwise
 * compile.  Every mismatch is printed, and any fails it. */
#include "own_kernels.h"

#include <nvrtc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(cond, ...)                                                                  \
  do {                                                                                     \
    if (!(cond)) printf("prebuilt_main.c:%d: %s: ", __LINE__, #cond), printf(__VA_ARGS__), \
                 printf("\n"), failures++;                                                 \
  } while (0)

/* what each source must define, written here apart from own_kernels.h's table (which
 * modules.c looks its functions up by): a kernel renamed in one place only fails */
static const char *const kernels[PGRT_OWN_COUNT][3] = {{"pgrt_update"}, {"pgrt_copy", "pgrt_set"}, {"pgrt_rng"}};

static const pgrt_prebuilt *find(int own, int sm) {
  const pgrt_prebuilt *hit = NULL;
  for (int i = 0; i < pgrt_prebuilt_count; i++)
    if (pgrt_prebuilt_cubins[i].own == own && pgrt_prebuilt_cubins[i].sm == sm) {
      EXPECT(!hit, "source %d for sm_%d is in the table twice", own, sm);
      hit = &pgrt_prebuilt_cubins[i];
    }
  return hit;
}

/* NVRTC's cubin of source `own` for sm_<sm>, with the options libpgrt gives it */
static char *compile(int own, int sm, size_t *size) {
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm);
  const char *opts[] = {arch, PGRT_NVRTC_OPTS[0], PGRT_NVRTC_OPTS[1]};
  nvrtcProgram p;
  char *cubin = NULL;
  if (nvrtcCreateProgram(&p, pgrt_own[own].source, "own", 0, NULL, NULL) != NVRTC_SUCCESS) return NULL;
  if (nvrtcCompileProgram(p, 3, opts) == NVRTC_SUCCESS && nvrtcGetCUBINSize(p, size) == NVRTC_SUCCESS &&
      (cubin = malloc(*size)) && nvrtcGetCUBIN(p, cubin) != NVRTC_SUCCESS)
    free(cubin), cubin = NULL;
  nvrtcDestroyProgram(&p);
  return cubin;
}

static int contains(const unsigned char *hay, size_t n, const char *needle) {
  size_t k = strlen(needle) + 1; /* with its NUL: a whole name in the string table */
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(hay + i, needle, k) == 0) return 1;
  return 0;
}

int main(void) {
  int narch = 0, major = 0, minor = 0;
  if (nvrtcGetNumSupportedArchs(&narch) != NVRTC_SUCCESS || narch <= 0 || nvrtcVersion(&major, &minor))
    return printf("NVRTC lists no architectures\n"), 1;
  int *archs = calloc((size_t)narch, sizeof *archs);
  if (!archs) return 1;
  nvrtcGetSupportedArchs(archs);
  EXPECT(pgrt_prebuilt_nvrtc == major * 1000 + minor * 10, "built by NVRTC %d, this is %d.%d", pgrt_prebuilt_nvrtc,
         major, minor);
  EXPECT(pgrt_prebuilt_count == PGRT_OWN_COUNT * narch, "%d cubins for %d sources and %d architectures",
         pgrt_prebuilt_count, PGRT_OWN_COUNT, narch);
  int checked = 0;
  for (int own = 0; own < PGRT_OWN_COUNT; own++)
    for (int a = 0; a < narch; a++) {
      const pgrt_prebuilt *pb = find(own, archs[a]);
      EXPECT(pb, "no cubin of source %d for sm_%d", own, archs[a]);
      if (!pb) continue;
      const unsigned char *e = pb->cubin;
      EXPECT(pb->size > 64 && memcmp(e, "\177ELF", 4) == 0 && e[4] == 2 && (e[18] | e[19] << 8) == 190,
             "source %d for sm_%d is not a 64-bit CUDA ELF", own, archs[a]);
      EXPECT(((uintptr_t)e & 63) == 0, "source %d for sm_%d is not aligned", own, archs[a]);
      int named = 0;
      for (int k = 0; k < 3 && kernels[own][k]; k++, named++) {
        EXPECT(contains(e, pb->size, kernels[own][k]), "source %d for sm_%d lacks %s", own, archs[a], kernels[own][k]);
        EXPECT(k < pgrt_own[own].kernel_count && strcmp(pgrt_own[own].kernels[k], kernels[own][k]) == 0,
               "own_kernels.h names source %d's kernel %d otherwise", own, k);
      }
      EXPECT(named == pgrt_own[own].kernel_count, "own_kernels.h names %d kernels of source %d", pgrt_own[own].kernel_count,
             own);
      size_t n = 0;
      char *fresh = compile(own, archs[a], &n);
      EXPECT(fresh, "NVRTC does not compile source %d for sm_%d", own, archs[a]);
      EXPECT(!fresh || (n == pb->size && memcmp(fresh, pb->cubin, n) == 0),
             "source %d for sm_%d: the table's %zu bytes are not NVRTC's %zu", own, archs[a], pb->size, n);
      free(fresh);
      checked++;
    }
  free(archs);
  printf("prebuilt_main: %d cubins of libpgrt's own kernels (NVRTC %d.%d), %d mismatches\n", checked, major, minor,
         failures);
  return failures != 0;
}

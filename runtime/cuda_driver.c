/*
 * cuda_driver.c -- the CUDA driver, loaded at run time (pgrt.h, "The CUDA driver, loaded at
 * run time"; pgrt_driver.h lists its functions).
 *
 * libpgrt does not link libcuda, so a program built against it starts (and can read and
 * write its files) on a machine without the driver, and links without the driver's
 * stub.  The first call that needs the driver loads it here, once per process
 * (pthread_once): dlopen of the path in PGRT_LIBCUDA if set (tests, unusual installs),
 * else "libcuda.so.1" as the dynamic linker finds it -- the copy already in the process
 * when there is one, PyTorch's say, since a soname loads once -- then the driver's
 * cuGetProcAddress (dlsym, under the name cuda.h gives it) resolves every function of
 * PGRT_DRIVER_FUNCS into pgrt_cu, each for CUDA_VERSION, the version libpgrt was built
 * against: the versions cuda.h's macros would have linked.  A function the driver lacks
 * fails the load, naming it, rather than a call later.  The library is never unloaded.
 * This file calls no other of libpgrt's: the message of a failed load is returned to
 * its callers, which report it (PGRT_ERR_DRIVER).
 */
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PGRT_STR_(x) #x
#define PGRT_STR(x) PGRT_STR_(x) /* after expansion: cuGetProcAddress -> "cuGetProcAddress_v2" */

pgrt_driver pgrt_cu;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failed[1024]; /* written once, by load(); empty: loaded */

/* Resolves one function into *slot (its object representation: sizeof a function pointer). */
static void resolve(__typeof__(cuGetProcAddress) *gpa, const char *lib, const char *name, void *slot, size_t size) {
  void *f = NULL;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = gpa(name, &f, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && f) {
    memcpy(slot, &f, size);
    return;
  }
  snprintf(failed, sizeof failed,
           "the CUDA driver (%s) could not be loaded: it has no %s for CUDA %d.%d (cuGetProcAddress: CUresult %d, "
           "%s)", lib, name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, (int)r,
           found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "the driver is older than that"
                                                              : "the symbol is not found");
}

static void load(void) {
  const char *env = getenv("PGRT_LIBCUDA");
  char lib[600];
  const char *path = env && *env ? env : "libcuda.so.1";
  if (env && *env) snprintf(lib, sizeof lib, "%s, from PGRT_LIBCUDA", env);
  else snprintf(lib, sizeof lib, "libcuda.so.1");
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    snprintf(failed, sizeof failed, "the CUDA driver (%s) could not be loaded: %s", lib, why ? why : "no reason given");
    return;
  }
  void *sym = dlsym(dl, PGRT_STR(cuGetProcAddress));
  if (!sym) {
    snprintf(failed, sizeof failed, "the CUDA driver (%s) could not be loaded: it has no %s (a driver older than "
             "CUDA 12.0?)", lib, PGRT_STR(cuGetProcAddress));
    return;
  }
  __typeof__(cuGetProcAddress) *gpa;
  memcpy(&gpa, &sym, sizeof gpa); /* a function pointer through its object representation: dlsym's contract */
  char symbol[64];
#define PGRT_DRIVER_RESOLVE(f) \
  if (!failed[0]) resolve(gpa, lib, PGRT_DRIVER_SYMBOL(f, symbol), &pgrt_cu.f, sizeof pgrt_cu.f);
  PGRT_DRIVER_FUNCS(PGRT_DRIVER_RESOLVE)
#undef PGRT_DRIVER_RESOLVE
  if (failed[0]) memset(&pgrt_cu, 0, sizeof pgrt_cu);
}

const char *pgrt_driver_open(void) {
  pthread_once(&once, load);
  return failed[0] ? failed : NULL;
}

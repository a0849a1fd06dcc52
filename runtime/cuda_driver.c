/*
 * cuda_driver.c -- the CUDA driver, loaded at run time (pgrt.h, "The CUDA driver, loaded at
 * run time"; pgrt_driver.h lists its functions).
 *
 * libpgrt does not link libcuda, so a program built against it starts (and can read and
 * write its files) on a machine without the driver, and links without the driver's
 * stub.  The first call that needs the driver loads it here, once per process
 * (pthread_once): dlopen of the path in PGRT_LIBCUDA if set (tests, unusual installs),
 * else "libcuda.so.1" as the dynamic linker finds it -- the copy already in the process
 * when there is one, PyTorch's say, since a soname loads once -- then dlsym resolves
 * every function of PGRT_DRIVER_FUNCS into pgrt_cu under the symbol a program linked
 * against libcuda would call: cuda.h's name with its macros expanded (cuMemAlloc is
 * cuMemAlloc_v2, cuGraphInstantiate is cuGraphInstantiateWithFlags, cuCtxGetDevice is
 * cuCtxGetDevice).  Not the driver's cuGetProcAddress: asked for a name at CUDA_VERSION,
 * it gives that version's newest function of the name, whose signature need not be
 * cuda.h's (CUDA 13's "cuCtxGetDevice" is cuCtxGetDevice_v2, which takes a context too,
 * and its "cuGraphInstantiate" the five-argument one: called as cuda.h declares them,
 * both crashed on an H200).  A function the driver lacks fails the load, naming it,
 * rather than a call later.  The library is never unloaded.
 * This file calls no other of libpgrt's: the message of a failed load is returned to
 * its callers, which report it (PGRT_ERR_DRIVER).
 */
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PGRT_STR_(x) #x
#define PGRT_STR(x) PGRT_STR_(x) /* after expansion: cuMemAlloc -> "cuMemAlloc_v2" */

pgrt_driver pgrt_cu;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failed[1024]; /* written once, by load(); empty: loaded */

/* Resolves one function, by its symbol, into *slot (its object representation: sizeof a
 * function pointer, dlsym's contract). */
static void resolve(void *dl, const char *lib, const char *symbol, void *slot, size_t size) {
  void *f = dlsym(dl, symbol);
  if (f) {
    memcpy(slot, &f, size);
    return;
  }
  snprintf(failed, sizeof failed, "the CUDA driver (%s) could not be loaded: it has no %s (a driver older than the "
           "CUDA %d.%d headers libpgrt was built with?)", lib, symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
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
#define PGRT_DRIVER_RESOLVE(f) \
  if (!failed[0]) resolve(dl, lib, PGRT_STR(f), &pgrt_cu.f, sizeof pgrt_cu.f);
  PGRT_DRIVER_FUNCS(PGRT_DRIVER_RESOLVE)
#undef PGRT_DRIVER_RESOLVE
  if (failed[0]) memset(&pgrt_cu, 0, sizeof pgrt_cu);
}

const char *pgrt_driver_open(void) {
  pthread_once(&once, load);
  return failed[0] ? failed : NULL;
}

/*
 * modules.c -- a program's modules and libpgrt's own kernels, loaded at init.
 *
 * cubin, fatbin and PTX modules load through cuLibraryLoadData; CUDA C is compiled by
 * NVRTC for the GPU at hand first, or its cubin taken from the cache of compiled
 * cubins (cache.c); a LIBRARY module's kernels are found in its library's fatbins
 * (libraries.c).  After a module loads, the globals the program gives it are written
 * (module globals, pgrt.h).  Then every kernel is resolved to a function, and a kernel
 * that some node launches with over 48 KiB of dynamic shared memory gets the
 * attribute that allows it.  libpgrt's own kernels (own_kernels.h: the updater,
 * pgrt_copy and pgrt_set) come from the cubins its build compiled, else the same way
 * as CUDA C.
 *
 * NVRTC is not linked either: it is loaded the first time a CUDA source is compiled or
 * looked up in the cache (whose key holds NVRTC's version), so a program whose modules
 * are all binaries runs where there is no NVRTC.  The file is shlib.c's choice for
 * libnvrtc.so.MAJOR, MAJOR the CUDA major version libpgrt was built against: the copy
 * already in the process (PyTorch's, from its wheels), else PGRT_LIB_NVRTC, else the
 * soname; its functions are found by name, once per process (pthread_once).
 */
#include "own_kernels.h"
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NVRTC_FUNCS(X)                                                                                  \
  X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)                \
  X(nvrtcGetProgramLog) X(nvrtcGetErrorString) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcDestroyProgram)

static struct {
#define NVRTC_MEMBER(f) __typeof__(f) *f;
  NVRTC_FUNCS(NVRTC_MEMBER)
#undef NVRTC_MEMBER
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static char nv_failed[6144]; /* written once, by nv_load(); empty: loaded */

static void nv_load(void) {
  char soname[32];
  snprintf(soname, sizeof soname, "libnvrtc.so.%d", CUDA_VERSION / 1000);
  pgrt_shlib lib;
  pgrt_shlib_open(&lib, soname, NULL, RTLD_NOW | RTLD_LOCAL);
  if (!lib.dl) {
    snprintf(nv_failed, sizeof nv_failed, "NVRTC does not load from '%s' (%s; %s): set %s to its path or put %s "
             "where the dynamic linker finds it", lib.path, lib.why, lib.said, lib.env, soname);
    return;
  }
  void *f;
#define NVRTC_RESOLVE(fn)                                                                               \
  if (!nv_failed[0]) {                                                                                  \
    if ((f = dlsym(lib.dl, #fn)) != NULL) memcpy(&nv.fn, &f, sizeof f); /* dlsym's contract */         \
    else snprintf(nv_failed, sizeof nv_failed, "NVRTC from '%s' has no %s", lib.path, #fn);             \
  }
  NVRTC_FUNCS(NVRTC_RESOLVE)
#undef NVRTC_RESOLVE
}

/* NVRTC's functions, loaded if they are not yet; PGRT_ERR_MODULE for module m where they
 * do not load. */
static pgrt_status nvrtc_open(const pgrt_module *m) {
  pthread_once(&nv_once, nv_load);
  return nv_failed[0] ? pgrt_fail(PGRT_ERR_MODULE, "module '%s' is CUDA C, and %s", m->name, nv_failed) : PGRT_OK;
}

static pgrt_status compile_nvrtc(const pgrt_module *m, const char *arch, void **cubin, size_t *size) {
  const char *opts[] = {arch, PGRT_NVRTC_OPTS[0], PGRT_NVRTC_OPTS[1]};
  nvrtcProgram p;
  if (nv.nvrtcCreateProgram(&p, (const char *)m->image, m->name, 0, NULL, NULL) != NVRTC_SUCCESS)
    return pgrt_fail(PGRT_ERR_MODULE, "module '%s': nvrtcCreateProgram failed", m->name);
  nvrtcResult r = nv.nvrtcCompileProgram(p, 3, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nv.nvrtcGetProgramLogSize(p, &n);
    char *log = pgrt_zalloc(n + 1);
    nv.nvrtcGetProgramLog(p, log);
    pgrt_fail(PGRT_ERR_MODULE, "module '%s' does not compile (%s):\n%s", m->name, nv.nvrtcGetErrorString(r), log);
    free(log);
    nv.nvrtcDestroyProgram(&p);
    return PGRT_ERR_MODULE;
  }
  nv.nvrtcGetCUBINSize(p, size);
  *cubin = pgrt_zalloc(*size);
  nv.nvrtcGetCUBIN(p, *cubin);
  nv.nvrtcDestroyProgram(&p);
  return PGRT_OK;
}

/* A CUDA source's cubin for the current GPU: from the cache (cache.c) when it holds one
 * for this source, GPU architecture and NVRTC (not when `fresh`), else compiled by NVRTC
 * and kept there; *cached says which.  Timed into the init's statistics. */
static pgrt_status compile_cuda(const pgrt_module *m, CUdevice dev, void **cubin, size_t *size,
                                pgrt_init_stats *stats, int fresh, int *cached) {
  pgrt_status st = nvrtc_open(m);
  if (st != PGRT_OK) return st;
  long long t0 = pgrt_mono_ns();
  int major = 0, minor = 0, nv_major = 0, nv_minor = 0;
  pgrt_cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  pgrt_cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  nv.nvrtcVersion(&nv_major, &nv_minor);
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *text = (const char *)m->image; /* (size 0: a table written by hand, the text ends at its NUL) */
  size_t src = m->size ? strnlen(text, m->size) : strlen(text), head = 256, key_len = head + src;
  char *key = pgrt_zalloc(key_len);
  if (!key) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  snprintf(key, head, "nvrtc %d.%d %s %s %s", nv_major, nv_minor, arch, PGRT_NVRTC_OPTS[0], PGRT_NVRTC_OPTS[1]);
  memcpy(key + head, text, src);
  *cached = !fresh && pgrt_cache_get(key, key_len, cubin, size);
  if (*cached) {
    stats->cache_hits++;
  } else if ((st = compile_nvrtc(m, arch, cubin, size)) == PGRT_OK) {
    stats->nvrtc_compiles++;
    pgrt_cache_put(key, key_len, *cubin, *size);
  }
  free(key);
  stats->nvrtc_ns += pgrt_mono_ns() - t0;
  return st;
}

/* A CUDA source compiled (or its cubin taken from the cache) and loaded into *lib; a
 * kept cubin that does not load is compiled again, and the cache's copy replaced.
 * Returns the load's result; *st says whether compiling failed first. */
static CUresult load_cuda(const pgrt_module *m, CUdevice dev, CUlibrary *lib, pgrt_init_stats *stats,
                          pgrt_status *st) {
  void *cubin = NULL;
  size_t size = 0;
  int cached = 0;
  CUresult r = CUDA_SUCCESS;
  if ((*st = compile_cuda(m, dev, &cubin, &size, stats, 0, &cached)) != PGRT_OK) return r;
  r = pgrt_cu.cuLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
  if (r != CUDA_SUCCESS && cached) {
    free(cubin);
    cubin = NULL;
    if ((*st = compile_cuda(m, dev, &cubin, &size, stats, 1, &cached)) != PGRT_OK) return CUDA_SUCCESS;
    r = pgrt_cu.cuLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
  }
  free(cubin);
  return r;
}

/* The program's modules other than LIBRARY ones (whose fatbins load with their
 * kernels), each followed by its globals: its data objects as the library that loaded it
 * at export time left them (init's last synchronization waits for the copies). */
static pgrt_status load_images(pgrt_ctx *c, CUdevice dev) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  for (int i = 0; i < pr->module_count; i++) {
    const pgrt_module *m = &pr->modules[i];
    if (m->kind == PGRT_MOD_LIBRARY) continue;
    CUresult r = m->kind == PGRT_MOD_CUDA ? load_cuda(m, dev, &c->libs[i], &c->init_stats, &st)
                                          : pgrt_cu.cuLibraryLoadData(&c->libs[i], m->image, NULL, NULL, 0, NULL, NULL, 0);
    if (st != PGRT_OK) goto out;
    if (r != CUDA_SUCCESS) {
      const char *s = "?";
      pgrt_cu.cuGetErrorString(r, &s);
      return pgrt_fail(PGRT_ERR_MODULE, "module '%s' does not load: %s", m->name, s);
    }
    for (int g = 0; g < m->global_count; g++) {
      const pgrt_global *gl = &m->globals[g];
      CUdeviceptr at;
      size_t size = 0;
      r = pgrt_cu.cuLibraryGetGlobal(&at, &size, c->libs[i], gl->name);
      if (r != CUDA_SUCCESS) {
        const char *s = "?";
        pgrt_cu.cuGetErrorString(r, &s);
        return pgrt_fail(PGRT_ERR_MODULE, "module '%s' has no global '%s': %s", m->name, gl->name, s);
      }
      if (size != gl->size)
        return pgrt_fail(PGRT_ERR_MODULE, "module '%s': global '%s' is %zu bytes there, the program gives %zu",
                         m->name, gl->name, size, gl->size);
      CU(pgrt_cu.cuMemcpyHtoD(at, gl->bytes, gl->size), gl->name);
    }
  }
out:
  return st;
}

/* Every kernel's function: from its library's fatbins (prefetched on threads first),
 * from its module, or by symbol from any module. */
static pgrt_status resolve_kernels(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  long long t_prefetch = pgrt_mono_ns();
  st = pgrt_library_prefetch(&c->libset, pr);
  c->init_stats.library_ns += pgrt_mono_ns() - t_prefetch;
  if (st != PGRT_OK) goto out;
  for (int k = 0; k < pr->kernel_count; k++) {
    const pgrt_kernel *kn = &pr->kernels[k];
    CUkernel kernel;
    int found = 0;
    if (kn->module >= 0 && pr->modules[kn->module].kind == PGRT_MOD_LIBRARY) {
      long long t0 = pgrt_mono_ns();
      st = pgrt_library_kernel(&c->libset, &pr->modules[kn->module], kn, &kernel);
      c->init_stats.library_ns += pgrt_mono_ns() - t0;
      if (st != PGRT_OK) goto out;
      found = 1;
    } else if (kn->module >= 0) {
      found = pgrt_cu.cuLibraryGetKernel(&kernel, c->libs[kn->module], kn->symbol) == CUDA_SUCCESS;
      if (!found)
        return pgrt_fail(PGRT_ERR_MODULE, "kernel '%s' (%s) is not in module '%s', or the module is not valid code",
                    kn->name, kn->symbol, pr->modules[kn->module].name);
    }
    for (int m = 0; kn->module < 0 && m < pr->module_count && !found; m++) /* by name, in any module */
      found = c->libs[m] && pgrt_cu.cuLibraryGetKernel(&kernel, c->libs[m], kn->symbol) == CUDA_SUCCESS;
    if (!found) return pgrt_fail(PGRT_ERR_MODULE, "kernel '%s' (%s) is in none of the modules", kn->name, kn->symbol);
    CU(pgrt_cu.cuKernelGetFunction(&c->funcs[k], kernel), kn->name);
  }
out:
  return st;
}

/* Over 48 KiB of dynamic shared memory is allowed only up to the function's
 * attribute, which the library that launched it set in its own process: set it
 * here to the most any node of the kernel asks for. */
static pgrt_status allow_shared_memory(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  for (int k = 0; k < pr->kernel_count; k++) {
    unsigned most = 0;
    for (int i = 0; i < pr->node_count; i++)
      if (pr->nodes[i].kind == PGRT_NODE_KERNEL && pr->nodes[i].kernel == k && pr->nodes[i].smem > most)
        most = pr->nodes[i].smem;
    if (most > 48u << 10)
      CU(pgrt_cu.cuFuncSetAttribute(c->funcs[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)most),
         pr->kernels[k].name);
  }
out:
  return st;
}

pgrt_status pgrt_load_modules(pgrt_ctx *c) {
  pgrt_status st = PGRT_OK;
  CUdevice dev;
  CU(pgrt_cu.cuCtxGetDevice(&dev), "the current context");
  if ((st = load_images(c, dev)) != PGRT_OK || (st = resolve_kernels(c)) != PGRT_OK) goto out;
  st = allow_shared_memory(c);
out:
  return st;
}

/* The cubin of libpgrt's own source `own` that the build compiled for dev's
 * architecture (own_kernels.h), or NULL: none for it, or PGRT_PREBUILT=off. */
static const pgrt_prebuilt *prebuilt_for(int own, CUdevice dev) {
  const char *env = getenv("PGRT_PREBUILT");
  if (env && strcmp(env, "off") == 0) return NULL;
  int major = 0, minor = 0;
  pgrt_cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  pgrt_cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  for (int i = 0; i < pgrt_prebuilt_count; i++)
    if (pgrt_prebuilt_cubins[i].own == own && pgrt_prebuilt_cubins[i].sm == major * 10 + minor)
      return &pgrt_prebuilt_cubins[i];
  return NULL;
}

/* Kernels of libpgrt's own (the updater, the box kernels), loaded once, and only when
 * the program needs them: the cubin the build compiled for this GPU, else (none for
 * it, or the driver refuses it) compiled now, or taken from the cache. */
pgrt_status pgrt_load_own(int own, CUlibrary *lib, CUfunction *funcs, pgrt_init_stats *stats) {
  pgrt_status st = PGRT_OK;
  CUdevice dev;
  const char *name = pgrt_own[own].name;
  const pgrt_module m = {.name = name, .kind = PGRT_MOD_CUDA, .image = pgrt_own[own].source};
  CU(pgrt_cu.cuCtxGetDevice(&dev), name);
  const pgrt_prebuilt *pb = prebuilt_for(own, dev);
  CUresult r = pb ? pgrt_cu.cuLibraryLoadData(lib, pb->cubin, NULL, NULL, 0, NULL, NULL, 0) : CUDA_ERROR_NOT_FOUND;
  if (r == CUDA_SUCCESS) {
    stats->prebuilt++;
  } else {
    r = load_cuda(&m, dev, lib, stats, &st);
    if (st != PGRT_OK) goto out;
  }
  CU(r, name);
  for (int k = 0; k < pgrt_own[own].kernel_count; k++) {
    const char *kernel = pgrt_own[own].kernels[k];
    CUkernel kn;
    CU(pgrt_cu.cuLibraryGetKernel(&kn, *lib, kernel), kernel);
    CU(pgrt_cu.cuKernelGetFunction(&funcs[k], kn), kernel);
  }
out:
  return st;
}


/*
 * pgrt.c -- libpgrt: builds and launches the program that pgcc's generated C
 * describes (see pgrt.h).
 *
 * init: load every module (cubin, fatbin and PTX through cuLibraryLoadData; CUDA C
 *       through NVRTC for this device first) and write its globals, resolve
 *       kernels, place buffers (weights from the caller, intermediates in one
 *       arena, per-call buffers on a placeholder until the first call), copy each
 *       kernel node's parameter block and fill in its pointers and scalars, then
 *       build one CUDA graph per graph region with explicit cuGraphAdd*Node calls,
 *       instantiate and upload it.  A region whose instantiation fails is launched
 *       eagerly instead (a warning).
 * run:  compare this call's addresses and scalars with the last call's, rewrite
 *       the parameters of the nodes that use what changed, patch those nodes in
 *       their graph (cuGraphExec*SetParams), and launch the regions in order.  After
 *       each synchronization, read the scalars read on the host anew (host buffers,
 *       callbacks) and rewrite the nodes that take them; those in graphs are patched
 *       just before their graph launches.  A guard compares a host buffer with what
 *       the program was exported with, and stops the call where they differ.  Before
 *       all that, each dim's size picks its bucket, whose index the bucket scalars
 *       take (a size that fits none stops the call before anything runs).
 * comms: a program with comms loads NCCL before any CUDA call (nccl.c), makes one
 *       communicator per comm, and captures each collective once, at init, into a
 *       child graph of its region's graph (eager regions call NCCL on the stream).
 *
 * Memory: everything init allocates is recorded in the context and freed by
 * pgrt_destroy (which a failed init calls itself).
 */
#include "own_kernels.h"
#include "pgrt_impl.h"

#include <nvrtc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char last_error[1024];

long long pgrt_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

const char *pgrt_error(void) { return last_error; }

pgrt_status pgrt_fail(pgrt_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

#define UPD_SLOTS 64 /* per-call addresses and scalars an updater can carry (own_kernels.h) */
enum { BOX_COPY, BOX_SET };
enum { BUCKETS_SWITCH, BUCKETS_GRAPHS, BUCKETS_EAGER }; /* how a bucket region runs */
#define BOX_PARAM_BYTES 48 /* six 8-byte words: pgrt_set's value and elem share the second */

typedef struct { /* as the updater reads it */
  CUgraphDeviceNode node;
  uint32_t at, size;
  int32_t slot, shift;
  uint64_t offset;
} upd_entry;

/* A relocation writes the low reloc_size bytes of its address >> reloc_shift. */
static uint32_t reloc_size(pgrt_reloc_kind k) { return k == PGRT_RELOC_ABS64 ? 8 : 4; }
static int32_t reloc_shift(pgrt_reloc_kind k) { return k == PGRT_RELOC_HI32 ? 32 : 0; }

typedef struct {
  CUgraphNode node;       /* the updater kernel, first in its region's graph */
  CUdeviceptr table;      /* its entries, count of them */
  int count, nodes;       /* entries; kernel nodes they update */
  int enabled;            /* the updater runs in this launch (only after something changed) */
  unsigned char params[16 + 8 * UPD_SLOTS]; /* (entries, count, this call's values) */
  void *argv[3];
} updater;

struct pgrt_ctx {
  const pgrt_program *prog;
  CUcontext cu;
  CUlibrary *libs;
  pgrt_libset *libset;      /* the installed libraries that LIBRARY modules name */
  CUfunction *funcs;
  CUdeviceptr arena, placeholder;
  int own_arena;
  CUdeviceptr *addr;        /* per buffer: where it is now */
  CUdeviceptr *bound_prev;  /* last call's per-call addresses */
  uint64_t *scalar_prev;
  unsigned char **params;   /* per kernel node: its parameter block */
  void ***args;             /* per kernel node: pointers to each parameter, for the driver */
  CUgraph *graphs;          /* per region */
  CUgraphExec *execs;       /* per region; NULL: launched eagerly */
  CUgraphNode *gnodes;      /* per node */
  int *region_of;           /* per node: the region it runs in (a body's: its owner's) */
  CUgraphConditionalHandle *conds; /* per condition, created with its region's graph */
  CUlibrary upd_lib;        /* the updater kernel, when some region updates on the device */
  CUfunction upd_func;
  CUlibrary box_lib;        /* pgrt_copy and pgrt_set, when some node is built as one */
  CUfunction box_funcs[PGRT_OWN_MAX_KERNELS];
  char *boxed;              /* per node: a copy or memset built as a kernel (own_kernels.h) */
  updater *upd;             /* per region; upd[r].count 0: host-side patching */
  int any_updater;          /* some region has one */
  char *devupd;             /* per node: patched by its region's updater */
  CUevent *events;          /* event_count of them */
  pgrt_host_fn *hosts;      /* per host slot: what its nodes call now */
  int *movable;             /* the nodes that use a per-call buffer, scalar or host function */
  int movable_count;
  void **host;              /* per host buffer (its slot): its pinned memory */
  int host_count;
  uint64_t *svals;          /* the scalars' values: the caller's (scalar_slots), the read ones, the buckets' */
  int *bucket_next;         /* per dim: the bucket this call runs (picked before anything runs) */
  int *bucket_last;         /* per dim: the bucket the last successful call ran, -1 before any */
  char *bmode;              /* per region: BUCKETS_GRAPHS or BUCKETS_EAGER for a bucket region run a graph
                               per bucket (or, where those did not instantiate, its bodies eagerly) */
  CUgraph **bgraphs;        /* per such region: a graph per bucket, */
  CUgraphExec **bexecs;     /* and its executable */
  int *bucket_of;           /* per node: the bucket whose own graph it is in (-1: none) */
  char *unbuilt;            /* per node: the setter and the switch of a region run a graph per bucket */
  int *late;                /* the kernel nodes that take a read scalar: rewritten after each sync, */
  int late_count;           /* patched from the host, never by an updater */
  char *is_late;            /* per node */
  char *pending;            /* per node: a late node's bytes changed and its graph is not patched yet */
  pgrt_nccl *nccl;          /* NCCL's functions, for a program with comms (else NULL) */
  void **ncomms;            /* per comm: its NCCL communicator (ncclComm_t) */
  CUstream cap;             /* the stream collectives are captured on, at init */
  const pgrt_scalar_fn *callbacks; /* this call's, during pgrt_run */
  int calls;
  int full_deps;            /* PGRT_PDL=off: every dependency built as a full one */
  pgrt_run_stats stats;
  pgrt_init_stats init_stats;
};


/* The executable graph node i runs in: its region's, or its bucket's own (a bucket region
 * run a graph per bucket); NULL where it runs eagerly. */
static CUgraphExec exec_of(const pgrt_ctx *c, int i) {
  int r = c->region_of[i];
  if (c->bucket_of[i] >= 0) return c->bexecs[r] ? c->bexecs[r][c->bucket_of[i]] : NULL;
  return c->execs[r];
}

/* ---- modules ---- */

static pgrt_status compile_nvrtc(const pgrt_module *m, const char *arch, void **cubin, size_t *size) {
  const char *opts[] = {arch, PGRT_NVRTC_OPTS[0], PGRT_NVRTC_OPTS[1]};
  nvrtcProgram p;
  if (nvrtcCreateProgram(&p, (const char *)m->image, m->name, 0, NULL, NULL) != NVRTC_SUCCESS)
    return pgrt_fail(PGRT_ERR_MODULE, "module '%s': nvrtcCreateProgram failed", m->name);
  nvrtcResult r = nvrtcCompileProgram(p, 3, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    char *log = pgrt_zalloc(n + 1);
    nvrtcGetProgramLog(p, log);
    pgrt_fail(PGRT_ERR_MODULE, "module '%s' does not compile (%s):\n%s", m->name, nvrtcGetErrorString(r), log);
    free(log);
    nvrtcDestroyProgram(&p);
    return PGRT_ERR_MODULE;
  }
  nvrtcGetCUBINSize(p, size);
  *cubin = pgrt_zalloc(*size);
  nvrtcGetCUBIN(p, *cubin);
  nvrtcDestroyProgram(&p);
  return PGRT_OK;
}

/* A CUDA source's cubin for the current GPU: from the cache (cache.c) when it holds one
 * for this source, GPU architecture and NVRTC (not when `fresh`), else compiled by NVRTC
 * and kept there; *cached says which.  Timed into the init's statistics. */
static pgrt_status compile_cuda(const pgrt_module *m, CUdevice dev, void **cubin, size_t *size,
                                pgrt_init_stats *stats, int fresh, int *cached) {
  long long t0 = pgrt_mono_ns();
  int major = 0, minor = 0, nv_major = 0, nv_minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  nvrtcVersion(&nv_major, &nv_minor);
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *text = (const char *)m->image; /* (size 0: a table written by hand, the text ends at its NUL) */
  size_t src = m->size ? strnlen(text, m->size) : strlen(text), head = 256, key_len = head + src;
  char *key = pgrt_zalloc(key_len);
  if (!key) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  snprintf(key, head, "nvrtc %d.%d %s %s %s", nv_major, nv_minor, arch, PGRT_NVRTC_OPTS[0], PGRT_NVRTC_OPTS[1]);
  memcpy(key + head, text, src);
  pgrt_status st = PGRT_OK;
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
  r = cuLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
  if (r != CUDA_SUCCESS && cached) {
    free(cubin);
    cubin = NULL;
    if ((*st = compile_cuda(m, dev, &cubin, &size, stats, 1, &cached)) != PGRT_OK) return CUDA_SUCCESS;
    r = cuLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
  }
  free(cubin);
  return r;
}

static pgrt_status load_modules(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  CUdevice dev;
  CU(cuCtxGetDevice(&dev), "the current context");
  for (int i = 0; i < pr->module_count; i++) {
    const pgrt_module *m = &pr->modules[i];
    if (m->kind == PGRT_MOD_LIBRARY) continue; /* its fatbins load with their kernels, below */
    CUresult r = m->kind == PGRT_MOD_CUDA ? load_cuda(m, dev, &c->libs[i], &c->init_stats, &st)
                                          : cuLibraryLoadData(&c->libs[i], m->image, NULL, NULL, 0, NULL, NULL, 0);
    if (st != PGRT_OK) goto out;
    if (r != CUDA_SUCCESS) {
      const char *s = "?";
      cuGetErrorString(r, &s);
      return pgrt_fail(PGRT_ERR_MODULE, "module '%s' does not load: %s", m->name, s);
    }
    /* its data objects as the library that loaded it at export time left them (init's
     * last synchronization waits for the copies) */
    for (int g = 0; g < m->global_count; g++) {
      const pgrt_global *gl = &m->globals[g];
      CUdeviceptr at;
      size_t size = 0;
      r = cuLibraryGetGlobal(&at, &size, c->libs[i], gl->name);
      if (r != CUDA_SUCCESS) {
        const char *s = "?";
        cuGetErrorString(r, &s);
        return pgrt_fail(PGRT_ERR_MODULE, "module '%s' has no global '%s': %s", m->name, gl->name, s);
      }
      if (size != gl->size)
        return pgrt_fail(PGRT_ERR_MODULE, "module '%s': global '%s' is %zu bytes there, the program gives %zu",
                         m->name, gl->name, size, gl->size);
      CU(cuMemcpyHtoD(at, gl->bytes, gl->size), gl->name);
    }
  }
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
      found = cuLibraryGetKernel(&kernel, c->libs[kn->module], kn->symbol) == CUDA_SUCCESS;
      if (!found)
        return pgrt_fail(PGRT_ERR_MODULE, "kernel '%s' (%s) is not in module '%s', or the module is not valid code",
                    kn->name, kn->symbol, pr->modules[kn->module].name);
    }
    for (int m = 0; kn->module < 0 && m < pr->module_count && !found; m++) /* by name, in any module */
      found = c->libs[m] && cuLibraryGetKernel(&kernel, c->libs[m], kn->symbol) == CUDA_SUCCESS;
    if (!found) return pgrt_fail(PGRT_ERR_MODULE, "kernel '%s' (%s) is in none of the modules", kn->name, kn->symbol);
    CU(cuKernelGetFunction(&c->funcs[k], kernel), kn->name);
  }
  /* Over 48 KiB of dynamic shared memory is allowed only up to the function's
   * attribute, which the library that launched it set in its own process: set it
   * here to the most any node of the kernel asks for. */
  for (int k = 0; k < pr->kernel_count; k++) {
    unsigned most = 0;
    for (int i = 0; i < pr->node_count; i++)
      if (pr->nodes[i].kind == PGRT_NODE_KERNEL && pr->nodes[i].kernel == k && pr->nodes[i].smem > most)
        most = pr->nodes[i].smem;
    if (most > 48u << 10)
      CU(cuFuncSetAttribute(c->funcs[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)most),
         pr->kernels[k].name);
  }
out:
  return st;
}

/* The cubin of libpgrt's own source `own` that the build compiled for dev's
 * architecture (own_kernels.h), or NULL: none for it, or PGRT_PREBUILT=off. */
static const pgrt_prebuilt *prebuilt_for(int own, CUdevice dev) {
  const char *env = getenv("PGRT_PREBUILT");
  if (env && strcmp(env, "off") == 0) return NULL;
  int major = 0, minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  for (int i = 0; i < pgrt_prebuilt_count; i++)
    if (pgrt_prebuilt_cubins[i].own == own && pgrt_prebuilt_cubins[i].sm == major * 10 + minor)
      return &pgrt_prebuilt_cubins[i];
  return NULL;
}

/* Loads kernels of libpgrt's own (the updater, the box kernels), once, and only when
 * the program needs them: the cubin the build compiled for this GPU, else (none for
 * it, or the driver refuses it) compiled now, or taken from the cache. */
static pgrt_status load_own(int own, CUlibrary *lib, CUfunction *funcs, pgrt_init_stats *stats) {
  pgrt_status st = PGRT_OK;
  CUdevice dev;
  const char *name = pgrt_own[own].name;
  const pgrt_module m = {.name = name, .kind = PGRT_MOD_CUDA, .image = pgrt_own[own].source};
  CU(cuCtxGetDevice(&dev), name);
  const pgrt_prebuilt *pb = prebuilt_for(own, dev);
  CUresult r = pb ? cuLibraryLoadData(lib, pb->cubin, NULL, NULL, 0, NULL, NULL, 0) : CUDA_ERROR_NOT_FOUND;
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
    CU(cuLibraryGetKernel(&kn, *lib, kernel), kernel);
    CU(cuKernelGetFunction(&funcs[k], kn), kernel);
  }
out:
  return st;
}

/* ---- parameters ---- */

/* Writes this call's pointers and scalars into a kernel node's parameters;
 * returns whether anything changed. */
static int fill_params(pgrt_ctx *c, int i, const uint64_t *scalars) {
  const pgrt_node *n = &c->prog->nodes[i];
  unsigned char *p = c->params[i];
  int changed = 0;
  for (int r = 0; r < n->reloc_count; r++) { /* the address, truncated by the kind: its low bytes (little-endian) */
    const pgrt_reloc *rl = &n->relocs[r];
    uint64_t v = (uint64_t)(c->addr[rl->buffer] + rl->offset) >> reloc_shift(rl->kind);
    if (memcmp(p + rl->at, &v, reloc_size(rl->kind)) != 0) memcpy(p + rl->at, &v, reloc_size(rl->kind)), changed = 1;
  }
  for (int k = 0; k < n->cond_ref_count; k++)
    memcpy(p + n->cond_refs[k].at, &c->conds[n->cond_refs[k].condition], sizeof(CUgraphConditionalHandle));
  for (int s = 0; scalars && s < n->scalar_count; s++) {
    const pgrt_scalar_ref *ref = &n->scalars[s];
    if (memcmp(p + ref->at, &scalars[ref->slot], ref->size) != 0)
      memcpy(p + ref->at, &scalars[ref->slot], ref->size), changed = 1;
  }
  return changed;
}

/* ---- read scalars: a host buffer's first element, converted ---- */

static unsigned dtype_size(pgrt_dtype t) {
  switch (t) {
  case PGRT_DT_I8: case PGRT_DT_U8: case PGRT_DT_BOOL: return 1;
  case PGRT_DT_I16: case PGRT_DT_U16: case PGRT_DT_F16: case PGRT_DT_BF16: return 2;
  case PGRT_DT_I32: case PGRT_DT_U32: case PGRT_DT_F32: return 4;
  default: return 8;
  }
}

static double from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* 2^e, for e in double's normal range (no libm) */
static double pow2(int e) { return from_bits((uint64_t)(e + 1023) << 52); }

/* A 16-bit float of ebits exponent and mbits mantissa bits (f16: 5, 10; bf16: 8, 7)
 * as a double: exactly. */
static double from_half(uint16_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t e = (uint32_t)h >> mbits & ((1u << ebits) - 1), m = h & ((1u << mbits) - 1);
  uint64_t sign = (uint64_t)(h >> (ebits + mbits) & 1) << 63;
  if (e == (1u << ebits) - 1) return from_bits(sign | 0x7ff0000000000000ull | (m ? 1ull << 51 : 0));
  double v = (double)(e ? m | 1u << mbits : m) * pow2((int)(e ? e : 1) - bias - mbits);
  return sign ? -v : v;
}

/* v in that format, rounded to nearest, ties to even, from its bits (no double
 * rounding through float); too large: infinity. */
static uint16_t to_half(double v, int ebits, int mbits) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  uint32_t sign = (uint32_t)(u >> 63) << (ebits + mbits), inf = ((1u << ebits) - 1) << mbits;
  int dexp = (int)(u >> 52 & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  if (dexp == 0x7ff) return (uint16_t)(sign | inf | (mant ? 1u << (mbits - 1) : 0));
  if (dexp == 0) return (uint16_t)sign; /* zero, or a double subnormal: far below the least half */
  int bias = (1 << (ebits - 1)) - 1, e = dexp - 1023;
  uint64_t m = mant | 1ull << 52; /* v = m * 2^(e - 52) */
  int sub = e < 1 - bias;          /* a subnormal result: units of 2^(1 - bias - mbits) */
  int shift = 52 - mbits + (sub ? 1 - bias - e : 0);
  if (shift >= 64) return (uint16_t)sign;
  uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  if (sub) return (uint16_t)(sign | q); /* q == 2^mbits is the least normal */
  if (q == 1ull << (mbits + 1)) q >>= 1, e++;
  if (e + bias >= (1 << ebits) - 1) return (uint16_t)(sign | inf);
  return (uint16_t)(sign | (uint32_t)(e + bias) << mbits | (uint32_t)(q & ((1u << mbits) - 1)));
}

uint64_t pgrt_scalar_convert(const void *src, pgrt_dtype from, pgrt_dtype to) {
  uint64_t out = 0;
  unsigned size = dtype_size(to);
  uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
  int u64ish = (from == PGRT_DT_U64 || from == PGRT_DT_PTR) && (to == PGRT_DT_U64 || to == PGRT_DT_PTR);
  if (from == to || u64ish) {
    memcpy(&out, src, dtype_size(from)); /* little-endian: the low bytes */
    return out;
  }
  /* the value: a double (floating types) or a 64-bit integer (signed or not) */
  int floating = 0, sign = 0;
  double d = 0;
  int64_t i = 0;
  uint64_t n = 0;
  unsigned char b[8] = {0};
  memcpy(b, src, dtype_size(from));
  switch (from) {
  case PGRT_DT_I8: { int8_t x; memcpy(&x, b, 1); i = x, sign = 1; break; }
  case PGRT_DT_I16: { int16_t x; memcpy(&x, b, 2); i = x, sign = 1; break; }
  case PGRT_DT_I32: { int32_t x; memcpy(&x, b, 4); i = x, sign = 1; break; }
  case PGRT_DT_I64: memcpy(&i, b, 8), sign = 1; break;
  case PGRT_DT_U8: n = b[0]; break;
  case PGRT_DT_BOOL: n = b[0] != 0; break;
  case PGRT_DT_U16: { uint16_t x; memcpy(&x, b, 2); n = x; break; }
  case PGRT_DT_U32: { uint32_t x; memcpy(&x, b, 4); n = x; break; }
  case PGRT_DT_U64: case PGRT_DT_PTR: memcpy(&n, b, 8); break;
  case PGRT_DT_F16: d = from_half((uint16_t)(b[0] | b[1] << 8), 5, 10), floating = 1; break;
  case PGRT_DT_BF16: d = from_half((uint16_t)(b[0] | b[1] << 8), 8, 7), floating = 1; break;
  case PGRT_DT_F32: { float x; memcpy(&x, b, 4); d = x, floating = 1; break; }
  case PGRT_DT_F64: memcpy(&d, b, 8), floating = 1; break;
  }
  double v = floating ? d : sign ? (double)i : (double)n; /* for the floating targets */
  switch (to) {
  case PGRT_DT_F64: memcpy(&out, &v, 8); return out;
  case PGRT_DT_F32: { /* from an integer directly: one rounding */
    float x = floating ? (float)d : sign ? (float)i : (float)n;
    memcpy(&out, &x, 4);
    return out;
  }
  case PGRT_DT_F16: return to_half(v, 5, 10);
  case PGRT_DT_BF16: return to_half(v, 8, 7);
  case PGRT_DT_BOOL: return floating ? d != 0 : sign ? i != 0 : n != 0;
  default: break;
  }
  /* an integer target */
  int signed_to = to == PGRT_DT_I8 || to == PGRT_DT_I16 || to == PGRT_DT_I32 || to == PGRT_DT_I64;
  if (!floating) return (sign ? (uint64_t)i : n) & mask; /* modulo 2^bits */
  if (d != d) return 0;
  if (signed_to) { /* truncated, saturated to [-2^(bits-1), 2^(bits-1) - 1] */
    int64_t hi = (int64_t)(mask >> 1), lo = -hi - 1;
    int64_t t = d >= 9223372036854775808.0 ? INT64_MAX : d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    t = t > hi ? hi : t < lo ? lo : t;
    return (uint64_t)t & mask;
  }
  uint64_t t = d >= 18446744073709551616.0 ? UINT64_MAX : d <= 0 ? 0 : (uint64_t)d;
  return t > mask ? mask : t;
}

static CUDA_KERNEL_NODE_PARAMS kernel_params(const pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->funcs[n->kernel];
  kp.gridDimX = n->grid[0], kp.gridDimY = n->grid[1], kp.gridDimZ = n->grid[2];
  kp.blockDimX = n->block[0], kp.blockDimY = n->block[1], kp.blockDimZ = n->block[2];
  kp.sharedMemBytes = n->smem;
  kp.kernelParams = c->args[i];
  return kp;
}

static uint64_t at_least_1(uint64_t v) { return v ? v : 1; }

static CUDA_MEMCPY3D copy_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_MEMCPY3D m;
  memset(&m, 0, sizeof m);
  /* unified addressing: either side may be device memory or pinned host memory */
  m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  m.srcDevice = c->addr[n->src] + n->src_offset;
  m.dstDevice = c->addr[n->dst] + n->dst_offset;
  m.WidthInBytes = n->bytes;
  m.Height = at_least_1(n->height);
  m.Depth = at_least_1(n->depth);
  m.srcPitch = n->src_pitch ? n->src_pitch : n->bytes;
  m.dstPitch = n->dst_pitch ? n->dst_pitch : n->bytes;
  m.srcHeight = m.dstHeight = m.Height; /* slices: height rows apart */
  return m;
}

static CUDA_MEMSET_NODE_PARAMS set_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_MEMSET_NODE_PARAMS m;
  memset(&m, 0, sizeof m);
  m.dst = c->addr[n->dst] + n->dst_offset;
  m.value = n->value;
  m.elementSize = n->elem;
  m.width = n->bytes / n->elem;
  m.height = at_least_1(n->height);
  m.pitch = n->dst_pitch ? n->dst_pitch : n->bytes;
  return m;
}

/* A copy or memset built as pgrt_copy or pgrt_set: its arguments from this call's
 * addresses, one thread per byte or element of a row, a row per block row. */
static CUDA_KERNEL_NODE_PARAMS box_params(const pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  unsigned char *p = c->params[i];
  uint64_t w[6];
  if (n->kind == PGRT_NODE_MEMCPY) {
    CUDA_MEMCPY3D m = copy_params(c, n);
    w[0] = m.srcDevice, w[1] = m.dstDevice, w[2] = m.WidthInBytes, w[3] = m.Height * m.Depth;
    w[4] = m.srcPitch, w[5] = m.dstPitch;
    memcpy(p, w, sizeof w);
  } else {
    CUDA_MEMSET_NODE_PARAMS m = set_params(c, n);
    uint64_t row = (uint64_t)m.width * m.elementSize;
    if (m.elementSize < 4 && (m.dst | row | (m.height > 1 ? m.pitch : 0)) % 4 == 0) { /* whole words */
      m.value = m.elementSize == 1 ? (m.value & 0xFFu) * 0x01010101u : (m.value & 0xFFFFu) * 0x00010001u;
      m.elementSize = 4, m.width = row / 4;
    }
    uint32_t ve[2] = {m.value, m.elementSize};
    w[0] = m.dst, w[2] = m.width, w[3] = m.height, w[4] = m.pitch;
    memcpy(p, &w[0], 8), memcpy(p + 8, ve, 8), memcpy(p + 16, &w[2], 24);
  }
  uint64_t units = w[2], rows = w[3]; /* bytes or elements of a row */
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->box_funcs[n->kind == PGRT_NODE_MEMCPY ? BOX_COPY : BOX_SET];
  kp.gridDimY = (unsigned)(rows < 65535 ? rows : 65535), kp.gridDimZ = 1;
  uint64_t across = 4096 / kp.gridDimY ? 4096 / kp.gridDimY : 1; /* at most 4096 blocks in all */
  if (across > 1024) across = 1024;
  kp.gridDimX = (unsigned)((units + 255) / 256 < across ? (units + 255) / 256 : across);
  kp.blockDimX = 256, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = c->args[i];
  return kp;
}

/* A host node's function until the first call binds the caller's (pgrt_run checks
 * that every one is bound before anything is launched). */
static void CUDA_CB unbound_host(void *data) { (void)data; }

static CUDA_HOST_NODE_PARAMS host_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_HOST_NODE_PARAMS h;
  h.fn = c->hosts[n->host].fn ? c->hosts[n->host].fn : unbound_host;
  h.userData = c->hosts[n->host].data;
  return h;
}

/* ---- init ---- */

static pgrt_status build_nodes(pgrt_ctx *c, CUgraph g, int first, int count);

/* A child graph: built in a graph of its own, then moved into its node (not
 * cloned), so the nodes built here are the ones patched on every call. */
static pgrt_status add_child(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  const pgrt_body *b = &c->prog->bodies[n->body];
  pgrt_status st = PGRT_OK;
  CUgraph body = NULL;
  CUgraphNodeParams np;
  CU(cuGraphCreate(&body, 0), n->origin);
  if ((st = build_nodes(c, body, b->first, b->count)) != PGRT_OK) goto out;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_GRAPH;
  np.graph.graph = body;
  np.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  CU(cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np), n->origin);
  body = NULL; /* the parent owns it now */
out:
  if (body) cuGraphDestroy(body);
  return st;
}

/* A conditional node: CUDA creates its body graphs, which are filled here. */
static pgrt_status add_conditional(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  static const CUgraphConditionalNodeType types[] = {CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE,
                                                     CU_GRAPH_COND_TYPE_SWITCH};
  pgrt_status st = PGRT_OK;
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = c->conds[n->condition];
  np.conditional.type = types[n->cond_type];
  np.conditional.size = (unsigned)n->body_count;
  np.conditional.ctx = c->cu;
  CU(cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np), n->origin);
  for (int k = 0; k < n->body_count; k++) {
    const pgrt_body *b = &c->prog->bodies[n->body + k];
    if ((st = build_nodes(c, np.conditional.phGraph_out[k], b->first, b->count)) != PGRT_OK) goto out;
  }
out:
  return st;
}

/* A collective in a graph: NCCL's call captured on libpgrt's own stream into a graph
 * (relaxed mode: NCCL makes calls of its own that a global capture would refuse), which
 * becomes a child graph node, moved in like a child graph's body; where the move is
 * refused, the node takes a clone and the captured graph is destroyed.  Its buffers are
 * weights or in the arena, whose addresses hold for the context's life: captured once. */
static pgrt_status add_collective(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  pgrt_status st = PGRT_OK;
  CUgraph body = NULL;
  CUgraphNodeParams np;
  if (!c->cap) CU(cuStreamCreate(&c->cap, CU_STREAM_NON_BLOCKING), "the capture stream for collectives");
  CU(cuStreamBeginCapture(c->cap, CU_STREAM_CAPTURE_MODE_RELAXED), n->origin);
  st = pgrt_nccl_collective(c->nccl, n, c->addr[n->src] + n->src_offset, c->addr[n->dst] + n->dst_offset,
                            c->ncomms[n->comm], c->cap);
  CUresult er = cuStreamEndCapture(c->cap, &body); /* always: the stream leaves capture mode */
  if (st != PGRT_OK) goto out;
  CU(er, n->origin);
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_GRAPH;
  np.graph.graph = body;
  np.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  if (cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np) == CUDA_SUCCESS) {
    body = NULL; /* the parent owns it now */
  } else {
    CU(cuGraphAddChildGraphNode(&c->gnodes[i], g, deps, (size_t)nd, body), n->origin);
  }
out:
  if (body) cuGraphDestroy(body);
  return st;
}

/* Whether node n's cluster must be given at launch: it has one, and its kernel was not
 * compiled with one (a kernel with __cluster_dims__ refuses a launch that sets it:
 * CUDA_ERROR_CLUSTER_MISCONFIGURATION, seen with cuDNN's ResNet-50 kernels). */
static int cluster_attr(const pgrt_ctx *c, const pgrt_node *n) {
  int compiled = 0;
  if (!n->cluster[0]) return 0;
  if (cuFuncGetAttribute(&compiled, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, c->funcs[n->kernel]) != CUDA_SUCCESS)
    compiled = 0;
  return compiled == 0;
}

/* Adds nodes[first .. first+count) to graph g, with explicit cuGraphAdd*Node calls. */
static pgrt_status build_nodes(pgrt_ctx *c, CUgraph g, int first, int count) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  CUgraphNode deps[65], early[64];
  CUgraphEdgeData early_data[64];
  for (int i = first; i < first + count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    int nd = 0, ne = 0; /* full dependencies; a kernel's programmatic ones, added after the node */
    if (n->dep_count > 64) return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s' has more than 64 dependencies", n->origin);
    for (int d = 0; d < n->dep_count; d++) {
      int kind = n->dep_kinds && n->kind == PGRT_NODE_KERNEL && !c->full_deps ? n->dep_kinds[d] : PGRT_DEP_FULL;
      if (kind == PGRT_DEP_FULL) {
        deps[nd++] = c->gnodes[n->deps[d]];
        continue;
      }
      memset(&early_data[ne], 0, sizeof early_data[ne]);
      early_data[ne].from_port = kind == PGRT_DEP_LAUNCH_ORDER ? CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER
                                                               : CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      early_data[ne].type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      early[ne++] = c->gnodes[n->deps[d]];
    }
    switch (n->kind) {
    case PGRT_NODE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS kp = kernel_params(c, i);
      if (c->devupd[i]) deps[nd++] = c->upd[c->region_of[i]].node; /* after the updater */
      CU(cuGraphAddKernelNode(&c->gnodes[i], g, deps, (size_t)nd, &kp), n->origin);
      if (cluster_attr(c, n)) {
        CUkernelNodeAttrValue v;
        memset(&v, 0, sizeof v);
        v.clusterDim.x = n->cluster[0], v.clusterDim.y = n->cluster[1], v.clusterDim.z = n->cluster[2];
        if (n->cluster[0] * n->cluster[1] * n->cluster[2] > 8) /* past the portable 8 blocks */
          CU(cuFuncSetAttribute(kp.func, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), n->origin);
        CUresult r = cuGraphKernelNodeSetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
        if (r != CUDA_SUCCESS) {
          const char *s = "unknown error";
          cuGetErrorString(r, &s);
          return pgrt_fail(PGRT_ERR_CUDA, "node '%s': its cluster [%u, %u, %u] (grid [%u, %u, %u], %u bytes of "
                           "dynamic shared memory) is refused: %s", n->origin, n->cluster[0], n->cluster[1],
                           n->cluster[2], n->grid[0], n->grid[1], n->grid[2], n->smem, s);
        }
      }
      if (c->devupd[i]) {
        CUkernelNodeAttrValue v;
        memset(&v, 0, sizeof v);
        v.deviceUpdatableKernelNode.deviceUpdatable = 1;
        CU(cuGraphKernelNodeSetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v),
           n->origin);
      }
      for (int d = 0; d < ne; d++) /* (the table's dep_kinds: only kernels depend so, on kernels) */
        CU(cuGraphAddDependencies(g, &early[d], &c->gnodes[i], &early_data[d], 1), n->origin);
      break;
    }
    case PGRT_NODE_MEMCPY:
    case PGRT_NODE_MEMSET:
      if (c->boxed[i]) {
        CUDA_KERNEL_NODE_PARAMS kp = box_params(c, i);
        CU(cuGraphAddKernelNode(&c->gnodes[i], g, deps, (size_t)nd, &kp), n->origin);
      } else if (n->kind == PGRT_NODE_MEMCPY) {
        CUDA_MEMCPY3D m = copy_params(c, n);
        CU(cuGraphAddMemcpyNode(&c->gnodes[i], g, deps, (size_t)nd, &m, c->cu), n->origin);
      } else {
        CUDA_MEMSET_NODE_PARAMS m = set_params(c, n);
        CU(cuGraphAddMemsetNode(&c->gnodes[i], g, deps, (size_t)nd, &m, c->cu), n->origin);
      }
      break;
    case PGRT_NODE_HOST: {
      CUDA_HOST_NODE_PARAMS h = host_params(c, n);
      CU(cuGraphAddHostNode(&c->gnodes[i], g, deps, (size_t)nd, &h), n->origin);
      break;
    }
    case PGRT_NODE_EMPTY: CU(cuGraphAddEmptyNode(&c->gnodes[i], g, deps, (size_t)nd), n->origin); break;
    case PGRT_NODE_SYNC: return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a synchronization cannot be in a graph", n->origin);
    case PGRT_NODE_GUARD: return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a guard cannot be in a graph", n->origin);
    case PGRT_NODE_EVENT_RECORD:
      CU(cuGraphAddEventRecordNode(&c->gnodes[i], g, deps, (size_t)nd, c->events[n->event]), n->origin);
      break;
    case PGRT_NODE_EVENT_WAIT:
      CU(cuGraphAddEventWaitNode(&c->gnodes[i], g, deps, (size_t)nd, c->events[n->event]), n->origin);
      break;
    case PGRT_NODE_CHILD:
      if ((st = add_child(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    case PGRT_NODE_CONDITIONAL:
      if ((st = add_conditional(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    case PGRT_NODE_COLLECTIVE:
      if ((st = add_collective(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    }
  }
out:
  return st;
}

/* Does region r hold a conditional node (which cannot run eagerly)? */
static int has_conditional(const pgrt_ctx *c, int r) {
  for (int i = 0; i < c->prog->node_count; i++)
    if (c->region_of[i] == r && c->prog->nodes[i].kind == PGRT_NODE_CONDITIONAL) return 1;
  return 0;
}

/* The updater's launch: one thread per entry, its arguments in u->params. */
static CUDA_KERNEL_NODE_PARAMS updater_params(const pgrt_ctx *c, updater *u) {
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->upd_func;
  kp.gridDimX = (unsigned)(u->count + 127) / 128, kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 128, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = u->argv;
  return kp;
}

static pgrt_status build_graph(pgrt_ctx *c, int r) {
  const pgrt_program *pr = c->prog;
  const pgrt_region *rg = &pr->regions[r];
  pgrt_status st = PGRT_OK;
  updater *u = &c->upd[r];
  upd_entry *entries = NULL;
  if (u->count) { /* the updater first: the nodes it patches depend on it */
    CU(cuMemAlloc(&u->table, sizeof(upd_entry) * (size_t)u->count), "the updater's table");
    memcpy(u->params, &u->table, 8);
    memcpy(u->params + 8, &u->count, sizeof u->count);
    u->argv[0] = u->params, u->argv[1] = u->params + 8, u->argv[2] = u->params + 16;
    CUDA_KERNEL_NODE_PARAMS kp = updater_params(c, u);
    CU(cuGraphAddKernelNode(&u->node, c->graphs[r], NULL, 0, &kp), "the updater");
    u->enabled = 1;
  }
  if ((st = build_nodes(c, c->graphs[r], rg->first, rg->count)) != PGRT_OK) goto out;
  /* PGRT_FAULT=instantiate makes every instantiation fail: how the tests reach the
   * eager fallback (tests/gpu/faults/) */
  const char *fault = getenv("PGRT_FAULT");
  CUresult ir = fault && strcmp(fault, "instantiate") == 0 ? CUDA_ERROR_NOT_SUPPORTED
                                                           : cuGraphInstantiate(&c->execs[r], c->graphs[r], 0);
  if (ir != CUDA_SUCCESS) {
    if (c->execs[r]) cuGraphExecDestroy(c->execs[r]);
    c->execs[r] = NULL;
    if (has_conditional(c, r)) {
      const char *s = "?";
      cuGetErrorString(ir, &s);
      return pgrt_fail(PGRT_ERR_CUDA, "graph region %d of '%s' does not instantiate (%s), and its conditional nodes cannot "
                                 "run eagerly", r, pr->name, s);
    }
    fprintf(stderr, "pgrt: warning: graph region %d of '%s' does not instantiate; it runs eagerly\n", r, pr->name);
    return PGRT_OK;
  }
  if (u->count) { /* the entries: which bytes of which node take which value */
    entries = calloc((size_t)u->count, sizeof *entries);
    if (!entries) {
      st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
      goto out;
    }
    int e = 0;
    for (int i = rg->first; i < rg->first + rg->count; i++) {
      if (!c->devupd[i]) continue;
      const pgrt_node *n = &pr->nodes[i];
      CUkernelNodeAttrValue v;
      CU(cuGraphKernelNodeGetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v), n->origin);
      for (int k = 0; k < n->reloc_count; k++) {
        const pgrt_buffer *b = &pr->buffers[n->relocs[k].buffer];
        if (b->kind != PGRT_BUF_BOUND) continue;
        entries[e++] = (upd_entry){v.deviceUpdatableKernelNode.devNode, n->relocs[k].at,
                                   reloc_size(n->relocs[k].kind), b->slot, reloc_shift(n->relocs[k].kind),
                                   n->relocs[k].offset};
      }
      for (int k = 0; k < n->scalar_count; k++) /* the values: addresses, the caller's scalars, the buckets' */
        entries[e++] = (upd_entry){v.deviceUpdatableKernelNode.devNode, n->scalars[k].at, n->scalars[k].size,
                                   pr->bound_slots + n->scalars[k].slot -
                                       (n->scalars[k].slot >= pr->scalar_slots ? pr->read_count : 0),
                                   0, 0};
    }
    CU(cuMemcpyHtoD(u->table, entries, sizeof *entries * (size_t)u->count), "the updater's table");
  }
  CU(cuGraphUpload(c->execs[r], 0), "a graph region");
out:
  free(entries);
  return st;
}

/* Which bucket regions run a graph per bucket: the table's choice, or PGRT_BUCKETS's, where
 * the region is what the table says it is (the setter, then a switch with a body per value
 * of its dim; no other conditional node, no other node taking a condition).  Their setters
 * and switches are never built; each body node (nested ones too) is its bucket's. */
static void bucket_modes(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  const char *env = getenv("PGRT_BUCKETS");
  int force_switch = env && strcmp(env, "switch") == 0, force_graphs = env && strcmp(env, "graphs") == 0;
  for (int i = 0; i < pr->node_count; i++) c->bucket_of[i] = -1;
  for (int r = 0; r < pr->region_count; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (!rg->bucket_dim || !rg->graph || force_switch || !(rg->bucket_graphs || force_graphs)) continue;
    int d = rg->bucket_dim - 1, set = rg->first, sw = rg->first + 1;
    int ok = d < pr->dim_count && rg->count == 2 && pr->nodes[set].kind == PGRT_NODE_KERNEL &&
             pr->nodes[sw].kind == PGRT_NODE_CONDITIONAL && pr->nodes[sw].cond_type == PGRT_COND_SWITCH &&
             pr->nodes[sw].body_count == pr->dims[d].n_values;
    for (int i = 0; ok && i < pr->node_count; i++)
      if (c->region_of[i] == r && i != set && i != sw)
        ok = pr->nodes[i].kind != PGRT_NODE_CONDITIONAL && pr->nodes[i].cond_ref_count == 0;
    if (!ok) {
      fprintf(stderr, "pgrt: warning: region %d of '%s' is not a bucket switch and its setter alone; it keeps the "
              "switch\n", r, pr->name);
      continue;
    }
    c->bmode[r] = BUCKETS_GRAPHS;
    c->unbuilt[set] = c->unbuilt[sw] = 1;
    for (int k = 0; k < pr->nodes[sw].body_count; k++) {
      const pgrt_body *b = &pr->bodies[pr->nodes[sw].body + k];
      for (int j = b->first; j < b->first + b->count; j++) c->bucket_of[j] = k;
    }
  }
  for (int i = 0; i < pr->node_count; i++) /* child graphs inside bodies: their bodies follow them */
    if (c->bucket_of[i] >= 0 && pr->nodes[i].kind == PGRT_NODE_CHILD)
      for (int b = pr->nodes[i].body; b < pr->nodes[i].body + pr->nodes[i].body_count; b++)
        for (int j = pr->bodies[b].first; j < pr->bodies[b].first + pr->bodies[b].count; j++)
          c->bucket_of[j] = c->bucket_of[i];
}

static void free_buckets(pgrt_ctx *c, int r) {
  if (!c->bgraphs[r] && !(c->bexecs && c->bexecs[r])) return;
  int nb = c->prog->nodes[c->prog->regions[r].first + 1].body_count;
  for (int k = 0; k < nb; k++) {
    if (c->bexecs && c->bexecs[r] && c->bexecs[r][k]) cuGraphExecDestroy(c->bexecs[r][k]);
    if (c->bgraphs[r] && c->bgraphs[r][k]) cuGraphDestroy(c->bgraphs[r][k]);
  }
  free(c->bgraphs[r]), c->bgraphs[r] = NULL;
  if (c->bexecs) free(c->bexecs[r]), c->bexecs[r] = NULL;
}

/* A bucket region run a graph per bucket: each body built, instantiated and uploaded as a
 * graph of its own.  Where one does not instantiate, the region runs its buckets' nodes
 * eagerly (with a warning): without the switch, nothing needs a graph. */
static pgrt_status build_buckets(pgrt_ctx *c, int r) {
  const pgrt_program *pr = c->prog;
  const pgrt_node *sw = &pr->nodes[pr->regions[r].first + 1];
  pgrt_status st = PGRT_OK;
  c->bgraphs[r] = pgrt_zalloc(sizeof **c->bgraphs * (size_t)sw->body_count);
  c->bexecs[r] = pgrt_zalloc(sizeof **c->bexecs * (size_t)sw->body_count);
  if (!c->bgraphs[r] || !c->bexecs[r]) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  const char *fault = getenv("PGRT_FAULT"); /* as build_graph */
  for (int k = 0; k < sw->body_count; k++) {
    const pgrt_body *b = &pr->bodies[sw->body + k];
    CU(cuGraphCreate(&c->bgraphs[r][k], 0), sw->origin);
    if ((st = build_nodes(c, c->bgraphs[r][k], b->first, b->count)) != PGRT_OK) goto out;
    CUresult ir = fault && strcmp(fault, "instantiate") == 0 ? CUDA_ERROR_NOT_SUPPORTED
                                                             : cuGraphInstantiate(&c->bexecs[r][k], c->bgraphs[r][k], 0);
    if (ir != CUDA_SUCCESS) {
      fprintf(stderr, "pgrt: warning: bucket %d of '%s' (switch '%s') does not instantiate; its region runs the "
              "buckets eagerly\n", k, pr->name, sw->origin);
      free_buckets(c, r);
      c->bmode[r] = BUCKETS_EAGER;
      return PGRT_OK;
    }
    CU(cuGraphUpload(c->bexecs[r][k], 0), sw->origin);
  }
out:
  return st;
}

pgrt_status pgrt_init(pgrt_ctx **out_ctx, const pgrt_program *pr, const CUdeviceptr *weights, void **const *kernel_args,
                      CUdeviceptr arena) {
  if (pr && pr->version == PGRT_VERSION && pr->comm_count)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' has comms: it needs an NCCL id and this process's rank "
                     "(pgrt_init_comm; the generated NAME_init takes them)", pr->name);
  return pgrt_init_comm(out_ctx, pr, weights, kernel_args, arena, NULL, 0);
}

/* A program's comms and collectives, before anything is loaded: the rank fits every comm,
 * each collective names a comm and buffers whose addresses do not change per call. */
static pgrt_status check_comms(const pgrt_program *pr, const pgrt_nccl_id *id, int rank) {
  if (!id) return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' has comms: it needs the NCCL id rank 0 made "
                            "(pgrt_nccl_unique_id)", pr->name);
  for (int k = 0; k < pr->comm_count; k++)
    if (pr->comms[k].ranks < 1 || rank < 0 || rank >= pr->comms[k].ranks)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "comm '%s' has %d ranks: rank %d is not one of them", pr->comms[k].name,
                       pr->comms[k].ranks, rank);
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_COLLECTIVE) continue;
    if (n->comm < 0 || n->comm >= pr->comm_count || n->src < 0 || n->src >= pr->buffer_count || n->dst < 0 ||
        n->dst >= pr->buffer_count)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "collective '%s': its comm or buffers are not the program's", n->origin);
    int s = pr->buffers[n->src].kind, d = pr->buffers[n->dst].kind;
    if (s == PGRT_BUF_BOUND || s == PGRT_BUF_HOST || d == PGRT_BUF_BOUND || d == PGRT_BUF_HOST)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "collective '%s': its buffers must be weights or in the arena (captured "
                       "once, at init)", n->origin);
  }
  return PGRT_OK;
}

pgrt_status pgrt_init_comm(pgrt_ctx **out_ctx, const pgrt_program *pr, const CUdeviceptr *weights,
                           void **const *kernel_args, CUdeviceptr arena, const pgrt_nccl_id *id, int rank) {
  long long t_init = pgrt_mono_ns();
  if (!out_ctx || !pr) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_init: null context or program");
  *out_ctx = NULL;
  if (pr->version != PGRT_VERSION)
    return pgrt_fail(PGRT_ERR_VERSION, "program '%s' was generated for libpgrt tables version %d, this is %d", pr->name,
                pr->version, PGRT_VERSION);
  if (pr->weight_slots && !weights) return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' needs its weights", pr->name);
  if (pr->caller_arg_nodes && !kernel_args)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' needs the arguments of its %d kernel nodes", pr->name,
                pr->caller_arg_nodes);
  pgrt_status st = PGRT_OK;
  if (pr->comm_count && (st = check_comms(pr, id, rank)) != PGRT_OK) return st;
  pgrt_ctx *c = pgrt_zalloc(sizeof *c);
  if (!c) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  c->prog = pr;
  c->libs = pgrt_zalloc(sizeof *c->libs * (size_t)pr->module_count);
  c->funcs = pgrt_zalloc(sizeof *c->funcs * (size_t)pr->kernel_count);
  c->addr = pgrt_zalloc(sizeof *c->addr * (size_t)pr->buffer_count);
  c->bound_prev = pgrt_zalloc(sizeof *c->bound_prev * (size_t)pr->bound_slots);
  c->scalar_prev = pgrt_zalloc(sizeof *c->scalar_prev * (size_t)pr->scalar_slots);
  c->params = pgrt_zalloc(sizeof *c->params * (size_t)pr->node_count);
  c->args = pgrt_zalloc(sizeof *c->args * (size_t)pr->node_count);
  c->graphs = pgrt_zalloc(sizeof *c->graphs * (size_t)pr->region_count);
  c->execs = pgrt_zalloc(sizeof *c->execs * (size_t)pr->region_count);
  c->gnodes = pgrt_zalloc(sizeof *c->gnodes * (size_t)pr->node_count);
  c->events = pgrt_zalloc(sizeof *c->events * (size_t)pr->event_count);
  c->region_of = pgrt_zalloc(sizeof *c->region_of * (size_t)pr->node_count);
  c->conds = pgrt_zalloc(sizeof *c->conds * (size_t)pr->condition_count);
  c->upd = pgrt_zalloc(sizeof *c->upd * (size_t)pr->region_count);
  c->devupd = pgrt_zalloc((size_t)pr->node_count);
  c->hosts = pgrt_zalloc(sizeof *c->hosts * (size_t)pr->host_slots);
  c->boxed = pgrt_zalloc((size_t)pr->node_count);
  c->svals = pgrt_zalloc(sizeof *c->svals * (size_t)(pr->scalar_slots + pr->read_count + pr->bucket_count));
  c->bucket_next = pgrt_zalloc(sizeof *c->bucket_next * (size_t)pr->dim_count);
  c->bucket_last = pgrt_zalloc(sizeof *c->bucket_last * (size_t)pr->dim_count);
  c->bmode = pgrt_zalloc((size_t)pr->region_count);
  c->bgraphs = pgrt_zalloc(sizeof *c->bgraphs * (size_t)pr->region_count);
  c->bexecs = pgrt_zalloc(sizeof *c->bexecs * (size_t)pr->region_count);
  c->bucket_of = pgrt_zalloc(sizeof *c->bucket_of * (size_t)pr->node_count);
  c->unbuilt = pgrt_zalloc((size_t)pr->node_count);
  c->late = pgrt_zalloc(sizeof *c->late * (size_t)pr->node_count);
  c->is_late = pgrt_zalloc((size_t)pr->node_count);
  c->pending = pgrt_zalloc((size_t)pr->node_count);
  for (int b = 0; b < pr->buffer_count; b++) c->host_count += pr->buffers[b].kind == PGRT_BUF_HOST;
  c->host = pgrt_zalloc(sizeof *c->host * (size_t)c->host_count);
  if (!c->libs || !c->funcs || !c->addr || !c->bound_prev || !c->scalar_prev || !c->params || !c->args ||
      !c->graphs || !c->execs || !c->gnodes || !c->events || !c->region_of || !c->conds ||
      !c->upd || !c->devupd || !c->hosts || !c->boxed || !c->svals || !c->late || !c->is_late || !c->pending ||
      !c->host || !c->bucket_next || !c->bucket_last || !c->bmode || !c->bgraphs || !c->bexecs || !c->bucket_of ||
      !c->unbuilt) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    goto out;
  }
  for (int d = 0; d < pr->dim_count; d++) { /* the tables pgcc wrote; checked once */
    const pgrt_dim *dm = &pr->dims[d];
    int ok = dm->n_values >= 1 && dm->values;
    for (int k = 0; ok && k < dm->n_values; k++) ok = dm->values[k] >= 1 && (!k || dm->values[k] > dm->values[k - 1]);
    c->bucket_last[d] = -1;
    if (!ok) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "dim '%s': its values are not sizes in increasing order", pr->dims[d].name);
      goto out;
    }
  }
  for (int k = 0; k < pr->bucket_count; k++)
    if (pr->bucket_dims[k] < 0 || pr->bucket_dims[k] >= pr->dim_count) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "bucket scalar %d: dim %d is not one of %d", k, pr->bucket_dims[k],
                     pr->dim_count);
      goto out;
    }
  if (pr->comm_count) { /* NCCL before any CUDA call: where it is missing, nothing else is touched */
    c->nccl = pgrt_zalloc(sizeof *c->nccl);
    c->ncomms = pgrt_zalloc(sizeof *c->ncomms * (size_t)pr->comm_count);
    if (!c->nccl || !c->ncomms) {
      st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
      goto out;
    }
    if ((st = pgrt_nccl_load(c->nccl)) != PGRT_OK) goto out;
  }
  CU(cuCtxGetCurrent(&c->cu), "init");
  if (!c->cu) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_init: no current CUDA context");
    goto out;
  }
  long long t_modules = pgrt_mono_ns();
  st = load_modules(c);
  c->init_stats.modules_ns = pgrt_mono_ns() - t_modules;
  c->init_stats.library_fatbins = pgrt_libset_fatbins(c->libset);
  c->init_stats.library_threads = pgrt_libset_threads(c->libset);
  c->init_stats.library_bytes = (long long)pgrt_libset_bytes(c->libset);
  if (st != PGRT_OK) goto out;
  for (int k = 0; k < pr->comm_count; k++) { /* on this context's device; every rank joins, in this order */
    int r = c->nccl->comm_init_rank(&c->ncomms[k], pr->comms[k].ranks, *id, rank);
    if (r != 0) {
      c->ncomms[k] = NULL;
      st = pgrt_fail(PGRT_ERR_NCCL, "ncclCommInitRank failed for comm '%s' (rank %d of %d): %s (%d)",
                     pr->comms[k].name, rank, pr->comms[k].ranks, c->nccl->get_error_string(r), r);
      goto out;
    }
  }
  for (int e = 0; e < pr->event_count; e++) CU(cuEventCreate(&c->events[e], CU_EVENT_DISABLE_TIMING), "an event");

  /* which region each node runs in: bodies follow the nodes that own them */
  for (int r = 0; r < pr->region_count; r++)
    for (int i = pr->regions[r].first; i < pr->regions[r].first + pr->regions[r].count; i++) c->region_of[i] = r;
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_CHILD && n->kind != PGRT_NODE_CONDITIONAL) continue;
    for (int b = n->body; b < n->body + n->body_count; b++)
      for (int j = pr->bodies[b].first; j < pr->bodies[b].first + pr->bodies[b].count; j++)
        c->region_of[j] = c->region_of[i];
  }
  bucket_modes(c);
  /* graph regions' graphs, and the conditional handles that belong to them, before
   * any parameter block is filled (kernels take the handles as arguments) */
  for (int r = 0; r < pr->region_count; r++)
    if (pr->regions[r].graph && !c->bmode[r]) CU(cuGraphCreate(&c->graphs[r], 0), "a graph region");
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_CONDITIONAL || c->unbuilt[i]) continue;
    if (!c->graphs[c->region_of[i]]) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a conditional node must be in a graph region", n->origin);
      goto out;
    }
    CU(cuGraphConditionalHandleCreate(&c->conds[n->condition], c->graphs[c->region_of[i]], c->cu,
                                      pr->conditions[n->condition].default_value, CU_GRAPH_COND_ASSIGN_DEFAULT),
       n->origin);
  }

  /* buffers: per-call ones sit on a placeholder until the first call */
  uint64_t bound_max = 1;
  for (int b = 0; b < pr->buffer_count; b++)
    if (pr->buffers[b].kind == PGRT_BUF_BOUND && pr->buffers[b].size > bound_max) bound_max = pr->buffers[b].size;
  CU(cuMemAlloc(&c->placeholder, bound_max), "the placeholder for per-call buffers");
  if (arena) {
    c->arena = arena;
  } else if (pr->arena_bytes) {
    CU(cuMemAlloc(&c->arena, pr->arena_bytes), "the arena");
    c->own_arena = 1;
  }
  for (int b = 0; b < pr->buffer_count; b++) {
    const pgrt_buffer *buf = &pr->buffers[b];
    if (buf->kind == PGRT_BUF_HOST) { /* pinned and mapped: copies and kernels reach it by its address */
      if (buf->slot < 0 || buf->slot >= c->host_count || c->host[buf->slot]) {
        st = pgrt_fail(PGRT_ERR_ARGUMENT, "host buffer '%s': slot %d is not one of %d", buf->name, buf->slot,
                       c->host_count);
        goto out;
      }
      CU(cuMemHostAlloc(&c->host[buf->slot], buf->size ? buf->size : 1,
                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), buf->name);
      memset(c->host[buf->slot], 0, buf->size);
      CU(cuMemHostGetDevicePointer(&c->addr[b], c->host[buf->slot], 0), buf->name);
    }
    if (buf->kind == PGRT_BUF_ARENA) c->addr[b] = c->arena + buf->offset;
    if (buf->kind == PGRT_BUF_BOUND) c->addr[b] = c->placeholder;
    if (buf->kind == PGRT_BUF_WEIGHT) {
      c->addr[b] = weights[buf->slot];
      if (!c->addr[b]) {
        st = pgrt_fail(PGRT_ERR_ARGUMENT, "weight '%s' is a null pointer", buf->name);
        goto out;
      }
    }
  }

  /* parameter blocks; nodes with caller_args use the caller's arrays as they are */
  for (int i = 0, given = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_KERNEL) continue;
    if (n->caller_args) {
      c->args[i] = (void **)kernel_args[given++];
      if (!c->args[i]) {
        st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': its arguments are a null pointer", n->origin);
        goto out;
      }
      continue;
    }
    uint32_t bytes = pr->kernels[n->kernel].param_bytes;
    c->params[i] = pgrt_zalloc(bytes);
    c->args[i] = pgrt_zalloc(sizeof(void *) * (size_t)n->param_count);
    if (!c->params[i] || !c->args[i]) {
      st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
      goto out;
    }
    memcpy(c->params[i], n->params, bytes);
    for (int q = 0; q < n->param_count; q++) c->args[i][q] = c->params[i] + n->param_offsets[q];
    fill_params(c, i, NULL);
  }

  /* the read scalars' tables, and the kernel nodes that take them */
  for (int k = 0; k < pr->read_count; k++) {
    const pgrt_read_scalar *rd = &pr->reads[k];
    int from_host = rd->buffer >= 0 && rd->buffer < pr->buffer_count && pr->buffers[rd->buffer].kind == PGRT_BUF_HOST;
    if (rd->buffer >= 0 ? !from_host || dtype_size(rd->from) > pr->buffers[rd->buffer].size
                        : rd->callback < 0 || rd->callback >= pr->callback_slots) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "read scalar '%s': neither a host buffer that holds its value nor a callback",
                     rd->name);
      goto out;
    }
  }
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    for (int k = 0; n->kind == PGRT_NODE_KERNEL && !n->caller_args && k < n->scalar_count && !c->is_late[i]; k++)
      if (n->scalars[k].slot >= pr->scalar_slots && n->scalars[k].slot < pr->scalar_slots + pr->read_count)
        c->is_late[i] = 1, c->late[c->late_count++] = i;
  }
  for (int i = 0; i < pr->node_count; i++)
    if (pr->nodes[i].kind == PGRT_NODE_GUARD &&
        (pr->nodes[i].buffer < 0 || pr->nodes[i].buffer >= pr->buffer_count ||
         pr->buffers[pr->nodes[i].buffer].kind != PGRT_BUF_HOST ||
         pr->nodes[i].expect_len > pr->buffers[pr->nodes[i].buffer].size)) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "guard '%s': its buffer is not a host buffer that holds what it expects",
                     pr->nodes[i].origin);
      goto out;
    }

  /* the nodes a call can change: only these are looked at on every call */
  c->movable = pgrt_zalloc(sizeof *c->movable * (size_t)pr->node_count);
  if (!c->movable) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    goto out;
  }
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    int uses = n->scalar_count > 0;
    for (int r = 0; r < n->reloc_count; r++) uses |= pr->buffers[n->relocs[r].buffer].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_MEMCPY) uses |= pr->buffers[n->src].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_MEMCPY || n->kind == PGRT_NODE_MEMSET) uses |= pr->buffers[n->dst].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_HOST) uses = 1;
    if (uses) c->movable[c->movable_count++] = i;
  }

  const char *pdl = getenv("PGRT_PDL"); /* off: programmatic dependencies built as full ones */
  c->full_deps = pdl && (strcmp(pdl, "off") == 0 || strcmp(pdl, "0") == 0);

  /* device-side update: the kernel nodes directly in such a region that use what a
   * call binds (not those inside bodies, not those whose arguments the caller gave,
   * not those that take read scalars) */
  /* PGRT_UPDATE=host|device overrides the tables: every region patches from the host,
   * or on the device where it can (benchmarks and tests compare the two) */
  const char *how = getenv("PGRT_UPDATE");
  int force_host = how && strcmp(how, "host") == 0, force_device = how && strcmp(how, "device") == 0;
  for (int r = 0; r < pr->region_count && !force_host; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (!rg->graph || c->bmode[r] || !(rg->device_update || force_device) ||
        pr->bound_slots + pr->scalar_slots + pr->bucket_count > UPD_SLOTS)
      continue;
    for (int m = 0; m < c->movable_count; m++) {
      int i = c->movable[m];
      const pgrt_node *n = &pr->nodes[i];
      if (i < rg->first || i >= rg->first + rg->count || n->kind != PGRT_NODE_KERNEL || n->caller_args ||
          c->is_late[i]) /* the updater runs before the sync that reads their scalars */
        continue;
      c->devupd[i] = 1;
      c->upd[r].nodes++;
      c->upd[r].count += n->scalar_count;
      for (int k = 0; k < n->reloc_count; k++) c->upd[r].count += pr->buffers[n->relocs[k].buffer].kind == PGRT_BUF_BOUND;
    }
    c->any_updater |= c->upd[r].count > 0;
  }
  long long t_own = pgrt_mono_ns();
  if (c->any_updater &&
      (st = load_own(PGRT_OWN_UPDATER, &c->upd_lib, &c->upd_func, &c->init_stats)))
    goto out;
  int any_boxed = 0;
  /* Copies and memsets in graphs whose memory moves are built as kernels: CUDA patches
   * a copy or memset node only where it stays one-dimensional and its memory keeps its
   * mapping, and refuses (CUDA_ERROR_INVALID_VALUE, seen on an H100) a caller's memory
   * from the virtual memory API -- PyTorch's expandable segments -- in place of
   * cuMemAlloc'd memory; a kernel's arguments may point at any of it (pinned host
   * memory included: unified addressing). */
  for (int m = 0; m < c->movable_count; m++) {
    int i = c->movable[m];
    const pgrt_node *n = &pr->nodes[i];
    if ((n->kind == PGRT_NODE_MEMCPY || n->kind == PGRT_NODE_MEMSET) && pr->regions[c->region_of[i]].graph)
      c->boxed[i] = 1;
  }
  /* Memsets in graphs are built as kernels, moving or not: every memset node made a
   * graph's launch cost the host about 0.7 us from an idle GPU, and back to back the
   * launch waited for the GPU, while a kernel node costs a launch no measurable time
   * (bench/launch_cost.cu, H100, driver 580).  PGRT_MEMSET=node keeps them nodes. */
  const char *memset_env = getenv("PGRT_MEMSET");
  if (!memset_env || strcmp(memset_env, "node") != 0)
    for (int i = 0; i < pr->node_count; i++)
      if (pr->nodes[i].kind == PGRT_NODE_MEMSET && pr->regions[c->region_of[i]].graph) c->boxed[i] = 1;
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (!c->boxed[i]) continue;
    any_boxed = 1;
    c->params[i] = pgrt_zalloc(BOX_PARAM_BYTES);
    c->args[i] = pgrt_zalloc(sizeof(void *) * 6);
    if (!c->params[i] || !c->args[i]) {
      st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
      goto out;
    }
    static const int copy_at[6] = {0, 8, 16, 24, 32, 40}, set_at[6] = {0, 8, 12, 16, 24, 32};
    for (int q = 0; q < 6; q++) c->args[i][q] = c->params[i] + (n->kind == PGRT_NODE_MEMCPY ? copy_at : set_at)[q];
  }
  if (any_boxed &&
      (st = load_own(PGRT_OWN_BOX, &c->box_lib, c->box_funcs, &c->init_stats)))
    goto out;

  c->init_stats.own_ns = pgrt_mono_ns() - t_own;
  long long t_graphs = pgrt_mono_ns();
  for (int r = 0; r < pr->region_count; r++)
    if (pr->regions[r].graph && (st = c->bmode[r] ? build_buckets(c, r) : build_graph(c, r)) != PGRT_OK) goto out;
  for (int r = 0; r < pr->region_count; r++) /* regions that fell back to eager launch keep no graph */
    if (c->graphs[r] && !c->execs[r]) cuGraphDestroy(c->graphs[r]), c->graphs[r] = NULL;
  CU(cuCtxSynchronize(), "init");
  c->init_stats.graphs_ns = pgrt_mono_ns() - t_graphs;
  c->init_stats.total_ns = pgrt_mono_ns() - t_init;
out:
  if (st != PGRT_OK) {
    pgrt_destroy(&c);
    return st;
  }
  *out_ctx = c;
  return PGRT_OK;
}

/* ---- run ---- */

/* After a synchronization: every read scalar's value anew (its host buffer's first
 * element, or its callback's), and the parameters of the nodes that take them.  Those
 * in graphs are patched just before their graph launches (pending): once per call,
 * whatever moved before the sync and whatever was read at it. */
static pgrt_status refresh(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  for (int k = 0; k < pr->read_count; k++) {
    const pgrt_read_scalar *rd = &pr->reads[k];
    uint64_t v = 0;
    if (rd->buffer < 0) {
      const pgrt_scalar_fn *cb = &c->callbacks[rd->callback];
      int r = cb->fn(cb->data, (const void *const *)c->host, &v);
      if (r != 0)
        return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: the callback of scalar '%s' failed (it returned %d)", rd->name,
                         r);
      if (dtype_size(rd->type) < 8) v &= (1ull << (8 * dtype_size(rd->type))) - 1; /* its low bytes */
    } else {
      v = pgrt_scalar_convert(c->host[pr->buffers[rd->buffer].slot], rd->from, rd->type);
    }
    c->svals[pr->scalar_slots + k] = v;
  }
  for (int m = 0; m < c->late_count; m++) {
    int i = c->late[m];
    if (!fill_params(c, i, c->svals)) continue;
    c->stats.read_updated++;
    if (exec_of(c, i)) c->pending[i] = 1;
  }
  return PGRT_OK;
}

static pgrt_status launch_eager(pgrt_ctx *c, int i, CUstream s) {
  const pgrt_node *n = &c->prog->nodes[i];
  pgrt_status st = PGRT_OK;
  switch (n->kind) {
  case PGRT_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(c, i);
    CUlaunchAttribute cluster;
    memset(&cluster, 0, sizeof cluster);
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = n->cluster[0], cluster.value.clusterDim.y = n->cluster[1];
    cluster.value.clusterDim.z = n->cluster[2];
    CUlaunchConfig cfg = {kp.gridDimX, kp.gridDimY, kp.gridDimZ, kp.blockDimX, kp.blockDimY, kp.blockDimZ,
                          kp.sharedMemBytes, s, &cluster, cluster_attr(c, n) ? 1u : 0u};
    CU(cuLaunchKernelEx(&cfg, kp.func, kp.kernelParams, NULL), n->origin);
    break;
  }
  case PGRT_NODE_MEMCPY:
    if (at_least_1(n->height) * at_least_1(n->depth) == 1) {
      CU(cuMemcpyAsync(c->addr[n->dst] + n->dst_offset, c->addr[n->src] + n->src_offset, n->bytes, s), n->origin);
    } else {
      CUDA_MEMCPY3D m = copy_params(c, n);
      CU(cuMemcpy3DAsync(&m, s), n->origin);
    }
    break;
  case PGRT_NODE_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = set_params(c, n);
    if (m.elementSize == 1) CU(cuMemsetD2D8Async(m.dst, m.pitch, (unsigned char)m.value, m.width, m.height, s), n->origin);
    else if (m.elementSize == 2)
      CU(cuMemsetD2D16Async(m.dst, m.pitch, (unsigned short)m.value, m.width, m.height, s), n->origin);
    else CU(cuMemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, s), n->origin);
    break;
  }
  case PGRT_NODE_HOST: {
    CUDA_HOST_NODE_PARAMS h = host_params(c, n);
    CU(cuLaunchHostFunc(s, h.fn, h.userData), n->origin);
    break;
  }
  case PGRT_NODE_EMPTY: break;
  case PGRT_NODE_SYNC:
    CU(cuStreamSynchronize(s), n->origin);
    if (c->prog->read_count && (st = refresh(c)) != PGRT_OK) goto out;
    break;
  case PGRT_NODE_GUARD: { /* the sync before it made the host buffer current */
    const unsigned char *have = c->host[c->prog->buffers[n->buffer].slot];
    if (memcmp(have, n->expect, n->expect_len) != 0) {
      char got[2 * 16 + 4] = "", want[2 * 16 + 4] = "";
      for (uint32_t b = 0; b < n->expect_len && b < 16; b++)
        snprintf(got + 2 * b, 3, "%02x", have[b]), snprintf(want + 2 * b, 3, "%02x", n->expect[b]);
      if (n->expect_len > 16) strcat(got, "..."), strcat(want, "...");
      return pgrt_fail(PGRT_ERR_GUARD, "guard '%s': the program took another path than the one exported (%s); the "
                       "outputs of this call are not valid (host buffer '%s' holds %s, not %s)", n->origin,
                       n->reason ? n->reason : "a value read on the host changed", c->prog->buffers[n->buffer].name,
                       got, want);
    }
    break;
  }
  case PGRT_NODE_EVENT_RECORD: CU(cuEventRecord(c->events[n->event], s), n->origin); break;
  case PGRT_NODE_EVENT_WAIT: CU(cuStreamWaitEvent(s, c->events[n->event], 0), n->origin); break;
  case PGRT_NODE_CHILD: {
    const pgrt_body *b = &c->prog->bodies[n->body];
    for (int j = b->first; j < b->first + b->count; j++)
      if ((st = launch_eager(c, j, s)) != PGRT_OK) goto out;
    break;
  }
  case PGRT_NODE_CONDITIONAL:
    return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a conditional node cannot run eagerly", n->origin);
  case PGRT_NODE_COLLECTIVE:
    if ((st = pgrt_nccl_collective(c->nccl, n, c->addr[n->src] + n->src_offset, c->addr[n->dst] + n->dst_offset,
                                   c->ncomms[n->comm], s)) != PGRT_OK)
      goto out;
    break;
  }
  c->stats.eager_nodes++;
out:
  return st;
}

/* Patches node i in the executable graph it is in (its region's, or its bucket's). */
static pgrt_status patch(pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  CUgraphExec ex = exec_of(c, i);
  pgrt_status st = PGRT_OK;
  if (c->boxed[i]) {
    CUDA_KERNEL_NODE_PARAMS kp = box_params(c, i);
    CU(cuGraphExecKernelNodeSetParams(ex, c->gnodes[i], &kp), n->origin);
    c->stats.nodes_patched++;
    return st;
  }
  switch (n->kind) {
  case PGRT_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(c, i);
    CU(cuGraphExecKernelNodeSetParams(ex, c->gnodes[i], &kp), n->origin);
    break;
  }
  case PGRT_NODE_MEMCPY: {
    CUDA_MEMCPY3D m = copy_params(c, n);
    CU(cuGraphExecMemcpyNodeSetParams(ex, c->gnodes[i], &m, c->cu), n->origin);
    break;
  }
  case PGRT_NODE_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = set_params(c, n);
    CU(cuGraphExecMemsetNodeSetParams(ex, c->gnodes[i], &m, c->cu), n->origin);
    break;
  }
  case PGRT_NODE_HOST: {
    CUDA_HOST_NODE_PARAMS h = host_params(c, n);
    CU(cuGraphExecHostNodeSetParams(ex, c->gnodes[i], &h), n->origin);
    break;
  }
  case PGRT_NODE_EMPTY:
  case PGRT_NODE_SYNC:
  case PGRT_NODE_GUARD:
  case PGRT_NODE_EVENT_RECORD:
  case PGRT_NODE_EVENT_WAIT:
  case PGRT_NODE_CHILD:
  case PGRT_NODE_CONDITIONAL:
  case PGRT_NODE_COLLECTIVE: break;
  }
  c->stats.nodes_patched++;
out:
  return st;
}

/* A bucket region run a graph per bucket: the graph of this call's bucket, after patching
 * its nodes that changed since it last ran; or, eagerly, the bucket's nodes. */
static pgrt_status launch_bucket(pgrt_ctx *c, int r, CUstream s) {
  const pgrt_program *pr = c->prog;
  const pgrt_region *rg = &pr->regions[r];
  const pgrt_node *sw = &pr->nodes[rg->first + 1];
  int k = c->bucket_next[rg->bucket_dim - 1];
  pgrt_status st = PGRT_OK;
  if (c->bmode[r] == BUCKETS_EAGER) {
    const pgrt_body *b = &pr->bodies[sw->body + k];
    for (int j = b->first; j < b->first + b->count && st == PGRT_OK; j++) st = launch_eager(c, j, s);
    return st;
  }
  for (int m = 0; m < c->movable_count; m++) {
    int i = c->movable[m];
    if (c->pending[i] && c->region_of[i] == r && c->bucket_of[i] == k) {
      if ((st = patch(c, i)) != PGRT_OK) return st;
      c->pending[i] = 0;
    }
  }
  long long t = pgrt_mono_ns();
  CU(cuGraphLaunch(c->bexecs[r][k], s), sw->origin);
  c->stats.launch_ns += pgrt_mono_ns() - t;
  c->stats.graphs_launched++;
out:
  return st;
}

/* Each dim's bucket for this call's sizes, into c->bucket_next; PGRT_ERR_BUCKET where a
 * size fits none (nothing has changed yet). */
static pgrt_status pick_buckets(pgrt_ctx *c, const int64_t *sizes) {
  const pgrt_program *pr = c->prog;
  for (int d = 0; d < pr->dim_count; d++) {
    const pgrt_dim *dm = &pr->dims[d];
    int k = 0;
    while (k < dm->n_values && dm->values[k] < sizes[d]) k++;
    if (sizes[d] >= 1 && k < dm->n_values && (dm->pad || dm->values[k] == sizes[d])) {
      c->bucket_next[d] = k;
      continue;
    }
    char list[512];
    size_t used = 0;
    for (int v = 0; v < dm->n_values && used < sizeof list - 32; v++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld", v ? ", " : "", (long long)dm->values[v]);
    if (used >= sizeof list - 32) snprintf(list + used, sizeof list - used, ", ...");
    return pgrt_fail(PGRT_ERR_BUCKET, dm->pad ? "dim '%s': size %lld fits no bucket (%s)"
                                              : "dim '%s': size %lld is not one of the exact sizes (%s)",
                     dm->name, (long long)sizes[d], list);
  }
  return PGRT_OK;
}

pgrt_status pgrt_run(pgrt_ctx *c, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                     const pgrt_scalar_fn *callbacks, const int64_t *sizes, CUstream s) {
  if (!c) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: null context");
  long long t_start = pgrt_mono_ns();
  const pgrt_program *pr = c->prog;
  if (pr->bound_slots && !bound) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its buffers", pr->name);
  if (pr->scalar_slots && !scalars) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its scalars", pr->name);
  if (pr->host_slots && !hosts)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its host functions", pr->name);
  for (int k = 0; k < pr->host_slots; k++) /* checked before this call changes anything */
    if (!hosts[k].fn)
      for (int i = 0; i < pr->node_count; i++)
        if (pr->nodes[i].kind == PGRT_NODE_HOST && pr->nodes[i].host == k)
          return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: host node '%s' has no function", pr->nodes[i].origin);
  if (pr->callback_slots && !callbacks)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its callback scalars", pr->name);
  for (int k = 0; k < pr->read_count; k++)
    if (pr->reads[k].buffer < 0 && !callbacks[pr->reads[k].callback].fn)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: callback scalar '%s' has no function", pr->reads[k].name);
  if (pr->dim_count && !sizes) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its sizes", pr->name);
  pgrt_status st = pick_buckets(c, sizes);
  if (st != PGRT_OK) return st;
  for (int b = 0; b < pr->buffer_count; b++) /* before anything changes */
    if (pr->buffers[b].kind == PGRT_BUF_BOUND && !bound[pr->buffers[b].slot])
      return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: buffer '%s' is a null pointer", pr->buffers[b].name);
  memset(&c->stats, 0, sizeof c->stats);

  /* what changed since the last call */
  int any = c->calls == 0;
  for (int b = 0; b < pr->buffer_count; b++) {
    const pgrt_buffer *buf = &pr->buffers[b];
    if (buf->kind != PGRT_BUF_BOUND) continue;
    if (c->addr[b] != bound[buf->slot]) c->addr[b] = bound[buf->slot], any = 1;
  }
  for (int k = 0; k < pr->scalar_slots; k++)
    if (c->scalar_prev[k] != scalars[k] || c->calls == 0) c->scalar_prev[k] = scalars[k], any = 1;
  if (pr->scalar_slots) memcpy(c->svals, scalars, sizeof *c->svals * (size_t)pr->scalar_slots);
  uint64_t *buckets = c->svals + pr->scalar_slots + pr->read_count; /* the bucket scalars' values */
  for (int k = 0; k < pr->bucket_count; k++) {
    uint64_t v = (uint64_t)c->bucket_next[pr->bucket_dims[k]];
    if (buckets[k] != v || c->calls == 0) buckets[k] = v, any = 1;
  }
  c->callbacks = callbacks;
  for (int k = 0; k < pr->host_slots; k++)
    if (c->hosts[k].fn != hosts[k].fn || c->hosts[k].data != hosts[k].data) c->hosts[k] = hosts[k], any = 1;
  /* kernels: did their bytes change; copies, memsets and host nodes: patched
   * whenever anything moved.  Nodes in graphs are patched there (inside bodies too); eager ones read
   * their parameters when launched.  Nodes that take read scalars hold last call's values
   * until the sync: they are patched before their graph launches, once. */
  for (int m = 0; any && m < c->movable_count; m++) {
    int i = c->movable[m];
    if (c->unbuilt[i]) continue;
    int dirty = pr->nodes[i].kind == PGRT_NODE_KERNEL ? fill_params(c, i, c->svals) : 1;
    int lazy = c->is_late[i] || c->bucket_of[i] >= 0; /* patched before their graph launches, if it does */
    if (dirty && exec_of(c, i) && lazy) c->pending[i] = 1;
    else if (dirty && exec_of(c, i) && !c->devupd[i] && (st = patch(c, i)) != PGRT_OK) return st;
  }
  /* device-side update: the updaters' arguments are this call's addresses and
   * scalars.  When nothing changed, an updater is skipped: its nodes keep what it
   * wrote last. */
  unsigned char vals[8 * UPD_SLOTS];
  size_t used = 8 * (size_t)(pr->bound_slots + pr->scalar_slots + pr->bucket_count);
  if (any && c->any_updater) {
    for (int b = 0; b < pr->buffer_count; b++)
      if (pr->buffers[b].kind == PGRT_BUF_BOUND) memcpy(vals + 8 * pr->buffers[b].slot, &c->addr[b], 8);
    if (pr->scalar_slots) memcpy(vals + 8 * pr->bound_slots, scalars, 8 * (size_t)pr->scalar_slots);
    if (pr->bucket_count) memcpy(vals + 8 * (pr->bound_slots + pr->scalar_slots), buckets, 8 * (size_t)pr->bucket_count);
  }
  for (int r = 0; r < pr->region_count && c->any_updater; r++) {
    updater *u = &c->upd[r];
    if (!u->count || !c->execs[r]) continue;
    if (u->enabled != any) CU(cuGraphNodeSetEnabled(c->execs[r], u->node, (unsigned)any), "the updater");
    u->enabled = any;
    if (!any) continue;
    memcpy(u->params + 16, vals, used);
    CUDA_KERNEL_NODE_PARAMS kp = updater_params(c, u);
    CU(cuGraphExecKernelNodeSetParams(c->execs[r], u->node, &kp), "the updater");
    c->stats.device_updated += u->nodes;
  }

  c->stats.prepare_ns = pgrt_mono_ns() - t_start;
  for (int r = 0; r < pr->region_count; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (c->bmode[r]) {
      if ((st = launch_bucket(c, r, s)) != PGRT_OK) return st;
      continue;
    }
    if (c->execs[r]) {
      for (int m = 0; m < c->late_count; m++) { /* what the last sync read, or what moved */
        int i = c->late[m];
        if (c->pending[i] && c->region_of[i] == r) {
          if ((st = patch(c, i)) != PGRT_OK) return st;
          c->pending[i] = 0;
        }
      }
      long long t = pgrt_mono_ns();
      CU(cuGraphLaunch(c->execs[r], s), "a graph region");
      c->stats.launch_ns += pgrt_mono_ns() - t;
      c->stats.graphs_launched++;
    } else {
      for (int i = rg->first; i < rg->first + rg->count; i++)
        if ((st = launch_eager(c, i, s)) != PGRT_OK) return st;
    }
  }
  c->calls++;
  for (int d = 0; d < pr->dim_count; d++) c->bucket_last[d] = c->bucket_next[d];
out:
  c->stats.host_ns = pgrt_mono_ns() - t_start;
  return st;
}

int pgrt_last_bucket(const pgrt_ctx *c, int dim) {
  return c && dim >= 0 && dim < c->prog->dim_count ? c->bucket_last[dim] : -1;
}

pgrt_status pgrt_debug_dot(const pgrt_ctx *c, int region, const char *path) {
  if (!c || !path || region < 0 || region >= c->prog->region_count || !c->graphs[region])
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_dot: region %d is not a graph", region);
  pgrt_status st = PGRT_OK;
  CU(cuGraphDebugDotPrint(c->graphs[region], path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE), path);
out:
  return st;
}

pgrt_status pgrt_debug_edges(const pgrt_ctx *c, int region, size_t *edges, size_t *programmatic) {
  if (!c || !edges || !programmatic || region < 0 || region >= c->prog->region_count || !c->graphs[region])
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_edges: region %d is not a graph", region);
  pgrt_status st = PGRT_OK;
  size_t n = 0;
  CUgraphNode *from = NULL, *to = NULL;
  CUgraphEdgeData *data = NULL;
  CU(cuGraphGetEdges(c->graphs[region], NULL, NULL, NULL, &n), "pgrt_debug_edges");
  *edges = n, *programmatic = 0;
  if (!n) goto out;
  from = malloc(n * sizeof *from), to = malloc(n * sizeof *to), data = calloc(n, sizeof *data);
  if (!from || !to || !data) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "pgrt_debug_edges: out of memory");
    goto out;
  }
  CU(cuGraphGetEdges(c->graphs[region], from, to, data, &n), "pgrt_debug_edges");
  for (size_t e = 0; e < n; e++) *programmatic += data[e].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
out:
  free(from), free(to), free(data);
  return st;
}

pgrt_status pgrt_debug_node(const pgrt_ctx *c, int node, const char **origin, CUfunction *func) {
  if (!c || node < 0 || node >= c->prog->node_count || !origin || !func)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_node: no node %d", node);
  const pgrt_node *n = &c->prog->nodes[node];
  *origin = n->origin;
  *func = n->kind == PGRT_NODE_KERNEL ? c->funcs[n->kernel] : NULL;
  return PGRT_OK;
}

void pgrt_last_run(const pgrt_ctx *c, pgrt_run_stats *out) {
  if (c && out) *out = c->stats;
}

void pgrt_last_init(const pgrt_ctx *c, pgrt_init_stats *out) {
  if (c && out) *out = c->init_stats;
}

void pgrt_destroy(pgrt_ctx **pc) {
  if (!pc || !*pc) return;
  pgrt_ctx *c = *pc;
  const pgrt_program *pr = c->prog;
  for (int r = 0; c->execs && r < pr->region_count; r++) {
    if (c->execs[r]) cuGraphExecDestroy(c->execs[r]);
    if (c->graphs[r]) cuGraphDestroy(c->graphs[r]);
  }
  for (int r = 0; c->bgraphs && r < pr->region_count; r++) free_buckets(c, r);
  for (int k = 0; c->ncomms && k < pr->comm_count; k++) /* after the graphs that captured their work */
    if (c->ncomms[k]) c->nccl->comm_destroy(c->ncomms[k]);
  if (c->cap) cuStreamDestroy(c->cap);
  free(c->nccl), free(c->ncomms);
  for (int i = 0; c->params && i < pr->node_count; i++) {
    free(c->params[i]);
    if (!pr->nodes[i].caller_args) free(c->args[i]);
  }
  for (int m = 0; c->libs && m < pr->module_count; m++)
    if (c->libs[m]) cuLibraryUnload(c->libs[m]);
  for (int e = 0; c->events && e < pr->event_count; e++)
    if (c->events[e]) cuEventDestroy(c->events[e]);
  for (int r = 0; c->upd && r < pr->region_count; r++)
    if (c->upd[r].table) cuMemFree(c->upd[r].table);
  if (c->upd_lib) cuLibraryUnload(c->upd_lib);
  if (c->box_lib) cuLibraryUnload(c->box_lib);
  pgrt_libset_free(c->libset);
  if (c->own_arena && c->arena) cuMemFree(c->arena);
  if (c->placeholder) cuMemFree(c->placeholder);
  for (int k = 0; c->host && k < c->host_count; k++)
    if (c->host[k]) cuMemFreeHost(c->host[k]);
  free(c->libs), free(c->funcs), free(c->addr), free(c->bound_prev), free(c->scalar_prev), free(c->params);
  free(c->args), free(c->graphs), free(c->execs), free(c->gnodes), free(c->movable), free(c->events);
  free(c->region_of), free(c->conds), free(c->upd), free(c->devupd), free(c->hosts), free(c->boxed);
  free(c->svals), free(c->late), free(c->is_late), free(c->pending), free(c->host);
  free(c->bucket_next), free(c->bucket_last), free(c->bmode), free(c->bgraphs), free(c->bexecs), free(c->bucket_of);
  free(c->unbuilt);
  free(c);
  *pc = NULL;
}

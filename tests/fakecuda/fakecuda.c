/*
 * fakecuda.c -- a CPU double of the CUDA driver API, built as libcuda.so.1, so that
 * libpgrt and the C that pgcc generates run on a machine without a GPU
 * (tests/fakecuda/run.sh runs the code-generation test programs of tests/gpu/codegen
 * over it).  It implements the calls libpgrt and those programs make, no others:
 * libpgrt loads it through PGRT_LIBCUDA and finds its functions with dlsym, the
 * programs link it.
 *
 * What it is:
 *   - device memory is host memory: an address is a host pointer.  cuMemAlloc fills
 *     what it hands out with 0xff bytes (a NaN in every float), as unwritten device
 *     memory holds garbage; the virtual memory calls reserve and map host pages at
 *     the same addresses (mmap, mprotect), so a test can place buffers 4 GiB apart.
 *   - everything runs at once, on the calling thread, in call order: a stream or an
 *     event is only a name, a synchronization does nothing.
 *   - a kernel runs as the host function of its name (kernels.c).  Its parameters are
 *     copied, when a node is added or set or a kernel launched, as the driver copies
 *     them, in the layout its cubin declares (.nv.info's KPARAM_INFO entries): a
 *     parameter libpgrt forgot to patch keeps its old bytes here as on a GPU.
 *   - a graph is its nodes and their dependencies.  Instantiation copies it whole
 *     (child graphs, conditional bodies), and a launch runs the copy's enabled nodes
 *     in an order that respects every dependency and no more (of the nodes ready, the
 *     one added last: a missing dependency shows), conditional nodes included (if,
 *     while, switch on a handle that kernels set).
 * What it checks, as the driver does (or where the driver's documentation says so):
 *   handles; a cubin's architecture against the device's (sm_90 here); a kernel's
 *   name in its cubin; the node kinds of the SetParams calls, and that the node is
 *   in the executable graph; copies and memsets patched in a graph only when one-
 *   dimensional; the node kinds conditional bodies may hold; a device-side parameter
 *   update only on a device-updatable node, inside its parameters; memory: 80 GiB
 *   of device memory, or FAKECUDA_DEVICE_MEMORY bytes (cuMemGetInfo counts it), and
 *   none left allocated (or a virtual memory handle unreleased) at exit
 *   (the process then exits with status 4, saying how much); no launch with a
 *   parameter that points into freed memory (freed memory waits in a quarantine, so
 *   its addresses are not handed out again): a pointer libpgrt failed to replace.
 *   With FAKECUDA_KERNELS=skip, a kernel without a host version runs as nothing (its
 *   parameters still audited): a real export's kernels run through libpgrt so, with
 *   no result to check but the audit.  FAKECUDA_KERNELS=own runs only libpgrt's own
 *   kernels (pgrt_*) and every other kernel as nothing: the fuzzer's programs, whose
 *   kernels' arguments need not fit what their code reaches.  A refusal prints
 *   "fakecuda: " and why on stderr.  A kernel that touches memory nobody mapped stops
 *   the process, naming the kernel.
 *   Threads: each call holds one lock for its whole length (a host function it runs
 *   included), so calls from several threads are safe and run one at a time; the
 *   current context is per thread, as the driver's.
 * What it does not do: concurrency (nodes run one at a time, so only an order that a
 *   missing dependency allows can show, not a race; calls from threads take turns),
 *   timing, PTX, compressed fatbin
 *   entries (fatbins of plain cubins load: run.sh makes a library of them), stream
 *   capture, the real libraries' kernels (cuBLAS, cuDNN), NCCL, the driver's DOT format
 *   (cuGraphDebugDotPrint writes nodes and edges only).  It proves nothing about a
 *   GPU: what runs here is libpgrt's host side and the generated C.
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_SM 90   /* the device: compute capability 9.0 */
#define MAX_PARAMS 64

static CUresult refuse(CUresult r, const char *call, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- contexts, devices, errors ---- */

struct CUctx_st {
  int device;
};
static struct CUctx_st the_ctx;
static _Thread_local CUcontext current; /* per thread, as the driver's */
static int initialized;
static int loads_without_context; /* cuLibraryLoadData calls from a thread with no current context (atomic) */
static int prioritized_graphs;    /* graphs instantiated with USE_NODE_PRIORITY (a priority on a kernel node) */
static CUresult sticky; /* a fault in a kernel: every later call returns it, as on a GPU */
static int skip_unknown; /* FAKECUDA_KERNELS=skip: a kernel without a host version does nothing */
static int own_only;     /* FAKECUDA_KERNELS=own: as skip, and only libpgrt's own kernels (pgrt_*) have one */
static long skipped;     /* launches so skipped */
static const char *running_kernel;

static CUresult refuse(CUresult r, const char *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fakecuda: %s: ", call);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return r;
}

/* Threads: every call holds one lock from its first statement to its return (the
 * variable's cleanup), recursive, since a call may make others (cuLibraryLoadData's
 * unload, a host function's, a kernel's device-runtime calls).  Calls from several
 * threads are so safe, and run one at a time. */
static pthread_mutex_t big_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void unlock_big(int *held) {
  (void)held;
  pthread_mutex_unlock(&big_lock);
}
#define LOCK() __attribute__((cleanup(unlock_big), unused)) int big_held_ = pthread_mutex_lock(&big_lock)

/* The checks every call starts with, its lock taken first. */
#define ENTER()                                                                                    \
  LOCK();                                                                                          \
  do {                                                                                             \
    if (sticky) return sticky;                                                                     \
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;                                           \
  } while (0)
#define NEED_CTX()                                                                                 \
  LOCK();                                                                                          \
  do {                                                                                             \
    if (sticky) return sticky;                                                                     \
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;                                           \
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;                                               \
  } while (0)

static void on_segv(int sig) {
  static const char head[] = "fakecuda: a memory fault (an address no allocation holds)";
  (void)sig;
  if (write(2, head, sizeof head - 1) < 0) _exit(3);
  if (running_kernel) {
    if (write(2, " in kernel ", 11) < 0 || write(2, running_kernel, strlen(running_kernel)) < 0) _exit(3);
  }
  if (write(2, "\n", 1) < 0) _exit(3);
  _exit(3);
}

/* the double's device: 80 GiB, as an H100's, or FAKECUDA_DEVICE_MEMORY bytes (the fuzz
 * target's smaller device, where a table's huge size fails at once instead of being
 * allocated and poisoned) */
static unsigned long long device_memory = 80ull << 30;
#define DEVICE_MEMORY device_memory

CUresult cuInit(unsigned int flags) {
  LOCK();
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  const char *k = getenv("FAKECUDA_KERNELS");
  own_only = k && strcmp(k, "own") == 0;
  skip_unknown = own_only || (k && strcmp(k, "skip") == 0);
  const char *m = getenv("FAKECUDA_DEVICE_MEMORY");
  if (m && *m) {
    char *end;
    unsigned long long bytes = strtoull(m, &end, 0);
    if (*end || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    device_memory = bytes;
  }
  initialized = 1;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

/* The driver's private tables, which NVRTC asks for when it loads libcuda: none here,
 * as the driver's stub answers. */
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  if (table) *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  ENTER();
  if (!device || ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  ENTER();
  if (!pctx || dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = &the_ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  ENTER();
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  ENTER();
  if (ctx && ctx != &the_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  ENTER();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  NEED_CTX();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  NEED_CTX();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  ENTER();
  if (!pi || dev != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = FAKE_SM / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = FAKE_SM % 10; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
  default: return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetAttribute", "attribute %d is not modelled", (int)attrib);
  }
  return CUDA_SUCCESS;
}

static const struct {
  CUresult r;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].r == error) return *pStr = errors[i].text, CUDA_SUCCESS;
  *pStr = "unknown error (fakecuda)";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].r == error) return *pStr = errors[i].name, CUDA_SUCCESS;
  *pStr = "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

/* ---- memory ---- */

typedef struct Alloc {
  void *p;
  size_t size;
  int host; /* cuMemHostAlloc's */
  struct Alloc *next;
} Alloc;
static Alloc *allocs;
static size_t device_bytes; /* allocated now: cuMemAlloc's and cuMemCreate's */
typedef struct Phys { /* a handle of the virtual memory calls (below) */
  size_t size;
  CUdeviceptr at; /* where it is mapped, 0 if nowhere */
  struct Phys *next;
} Phys;
static Phys *handles; /* cuMemCreate's, not yet released */

/* An allocation's bytes.  Device memory is mapped from the system, its end (rounded
 * up to 256 bytes) against a page that faults: a kernel reaching past it stops there; pinned
 * host memory, which host code touches, comes from malloc, whose redzones ASan
 * checks.  Neither device blocks nor the quarantine's records below are malloc'd: the
 * fuzz targets' leak check runs after every input that kept more blocks than it freed,
 * and scanned the whole heap (NVRTC's among it) each time. */
static size_t page_bytes(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) / page * page;
}
static void *block_alloc(size_t n, int host) {
  if (host) return aligned_alloc(256, n);
  size_t mapped = page_bytes(n) + page_bytes(1);
  char *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (mprotect(p + page_bytes(n), page_bytes(1), PROT_NONE)) return munmap(p, mapped), NULL;
  return p + page_bytes(n) - n; /* n is a multiple of 256: so is this */
}
static void block_free(void *p, size_t n, int host) {
  if (host) free(p);
  else munmap((char *)p + n - page_bytes(n), page_bytes(n) + page_bytes(1));
}

static CUresult alloc(void **p, size_t size, int host) {
  if (!host && size > DEVICE_MEMORY - device_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  if (host && size > DEVICE_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY; /* the host's pinned memory: as much (and
                                                                         no wrap to a small block below) */
  Alloc *a = calloc(1, sizeof *a);
  size_t rounded = (size + 255) / 256 * 256;
  if (!rounded) rounded = 256;
  if (!a || !(a->p = block_alloc(rounded, host))) return free(a), CUDA_ERROR_OUT_OF_MEMORY;
  memset(a->p, 0xff, rounded);
  a->size = size, a->host = host, a->next = allocs, allocs = a;
  if (!host) device_bytes += size;
  *p = a->p;
  return CUDA_SUCCESS;
}

/* Freed memory waits in a quarantine (its bytes 0xfe) before it goes back to the host,
 * so that a later allocation does not get its addresses: a kernel parameter that
 * still points into it is a pointer libpgrt failed to replace (audit, below).  The
 * quarantine is a ring of the last QUARANTINE_COUNT blocks freed, at most
 * QUARANTINE_BYTES of them (a smaller device's, less). */
typedef struct Freed {
  void *p;
  size_t size; /* as asked */
  int host;
} Freed;
enum { QUARANTINE_COUNT = 1024 };
#define QUARANTINE_BYTES (device_memory < (1ull << 30) ? device_memory / 4 : 256u << 20)
static Freed quarantine[QUARANTINE_COUNT];
static unsigned quarantine_first, quarantine_count; /* the oldest, and how many */
static size_t quarantined;

static size_t rounded_bytes(size_t size) { return size ? (size + 255) / 256 * 256 : 256; }

static void quarantine_drop_oldest(void) {
  Freed *f = &quarantine[quarantine_first];
  block_free(f->p, rounded_bytes(f->size), f->host);
  quarantined -= f->size;
  quarantine_first = (quarantine_first + 1) % QUARANTINE_COUNT, quarantine_count--;
}

static CUresult release(void *p, int host, const char *call) {
  for (Alloc **a = &allocs; *a; a = &(*a)->next)
    if ((*a)->p == p && (*a)->host == host) {
      Alloc *dead = *a;
      *a = dead->next;
      if (!host) device_bytes -= dead->size;
      memset(dead->p, 0xfe, dead->size);
      if (quarantine_count == QUARANTINE_COUNT) quarantine_drop_oldest();
      quarantine[(quarantine_first + quarantine_count++) % QUARANTINE_COUNT] = (Freed){dead->p, dead->size, host};
      quarantined += dead->size;
      free(dead);
      while (quarantined > QUARANTINE_BYTES && quarantine_count > 1) quarantine_drop_oldest();
      return CUDA_SUCCESS;
    }
  return refuse(CUDA_ERROR_INVALID_VALUE, call, "%p was not allocated so", p);
}

/* The freed block holding address v, NULL if none. */
static const Freed *freed_at(uint64_t v) {
  for (unsigned i = 0; i < quarantine_count; i++) {
    const Freed *f = &quarantine[(quarantine_first + i) % QUARANTINE_COUNT];
    if (v >= (uintptr_t)f->p && v - (uintptr_t)f->p < f->size) return f;
  }
  return NULL;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  NEED_CTX();
  void *p;
  if (!dptr || !bytesize) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = alloc(&p, bytesize, 0);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  NEED_CTX();
  return dptr ? release((void *)(uintptr_t)dptr, 0, "cuMemFree") : CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (!pp || !bytesize) return CUDA_ERROR_INVALID_VALUE;
  return alloc(pp, bytesize, 1);
}

CUresult cuMemFreeHost(void *p) {
  NEED_CTX();
  return release(p, 1, "cuMemFreeHost");
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags) {
  NEED_CTX();
  if (!pdptr || flags) return CUDA_ERROR_INVALID_VALUE;
  for (Alloc *a = allocs; a; a = a->next)
    if (a->host && (char *)p >= (char *)a->p && (char *)p < (char *)a->p + a->size)
      return *pdptr = (CUdeviceptr)(uintptr_t)p, CUDA_SUCCESS;
  return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer", "%p is not pinned host memory", p);
}

/* Device memory not yet allocated. */
CUresult cuMemGetInfo(size_t *free_bytes, size_t *total) {
  NEED_CTX();
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  *free_bytes = DEVICE_MEMORY - device_bytes, *total = DEVICE_MEMORY;
  return CUDA_SUCCESS;
}

/* Memory still allocated when the process ends is a leak, the test program's or
 * libpgrt's (each test program frees what it allocated): reported, and the process
 * exits with status 4. */
__attribute__((destructor)) static void fake_exit(void) {
  size_t n = 0, bytes = 0;
  for (Alloc *a = allocs; a; a = a->next) n++, bytes += a->size;
  for (Phys *ph = handles; ph; ph = ph->next) n++, bytes += ph->size;
  while (quarantine_count) quarantine_drop_oldest();
  if (skipped) fprintf(stderr, "fakecuda: %ld launches of kernels without a host version skipped (FAKECUDA_KERNELS=%s)\n", skipped,
                       own_only ? "own" : "skip");
  if (loads_without_context)
    fprintf(stderr, "fakecuda: %d libraries loaded on threads with no current context\n", loads_without_context);
  if (prioritized_graphs) /* (what tests/fakecuda/run.sh checks of a program given --priorities) */
    fprintf(stderr, "fakecuda: %d graphs instantiated to honour their kernel nodes' priorities\n", prioritized_graphs);
  if (!n) return;
  fprintf(stderr, "fakecuda: at exit, %zu allocations (%zu bytes, device and pinned host) never freed\n", n, bytes);
  fflush(NULL);
  _exit(4);
}

#define DEV(a) ((void *)(uintptr_t)(a))

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  NEED_CTX();
  memcpy(DEV(dst), src, n);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  NEED_CTX();
  memcpy(dst, DEV(src), n);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  NEED_CTX();
  (void)s;
  memmove(DEV(dst), DEV(src), n);
  return CUDA_SUCCESS;
}

static void set2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem, size_t width, size_t height) {
  for (size_t y = 0; y < height && width; y++) { /* (no elements: nothing, however many rows) */
    unsigned char *row = (unsigned char *)DEV(dst) + y * pitch;
    for (size_t x = 0; x < width; x++) memcpy(row + x * elem, &value, elem); /* little-endian: its low bytes */
  }
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char uc, size_t n) {
  NEED_CTX();
  memset(DEV(dst), uc, n);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32(CUdeviceptr dst, unsigned int ui, size_t n) {
  NEED_CTX();
  set2d(dst, 4 * n, ui, 4, n, 1);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD32(dst, ui, n);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  (void)s;
  set2d(dst, pitch, v, 1, w, h);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  (void)s;
  set2d(dst, pitch, v, 2, w, h);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  (void)s;
  set2d(dst, pitch, v, 4, w, h);
  return CUDA_SUCCESS;
}

static CUresult copy3d(const CUDA_MEMCPY3D *m, const char *call) {
  if (m->srcMemoryType == CU_MEMORYTYPE_ARRAY || m->dstMemoryType == CU_MEMORYTYPE_ARRAY || m->srcLOD || m->dstLOD)
    return refuse(CUDA_ERROR_NOT_SUPPORTED, call, "arrays are not modelled");
  const unsigned char *src = m->srcMemoryType == CU_MEMORYTYPE_HOST ? m->srcHost : DEV(m->srcDevice);
  unsigned char *dst = m->dstMemoryType == CU_MEMORYTYPE_HOST ? m->dstHost : DEV(m->dstDevice);
  size_t h = m->Height ? m->Height : 1, d = m->Depth ? m->Depth : 1;
  if (!src || !dst) return refuse(CUDA_ERROR_INVALID_VALUE, call, "a null source or destination");
  if ((h > 1 || d > 1) && (m->srcPitch < m->WidthInBytes || m->dstPitch < m->WidthInBytes))
    return refuse(CUDA_ERROR_INVALID_VALUE, call, "a pitch below the width");
  if (d > 1 && (m->srcHeight < h || m->dstHeight < h))
    return refuse(CUDA_ERROR_INVALID_VALUE, call, "a slice height below the copy's");
  if (!m->WidthInBytes) return CUDA_SUCCESS; /* no bytes, however many rows (a billion took the fuzzer 50 s) */
  for (size_t z = 0; z < d; z++)
    for (size_t y = 0; y < h; y++)
      memmove(dst + ((z + m->dstZ) * m->dstHeight + y + m->dstY) * m->dstPitch + m->dstXInBytes,
              src + ((z + m->srcZ) * m->srcHeight + y + m->srcY) * m->srcPitch + m->srcXInBytes, m->WidthInBytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *m, CUstream s) {
  NEED_CTX();
  (void)s;
  return m ? copy3d(m, "cuMemcpy3DAsync") : CUDA_ERROR_INVALID_VALUE;
}

/* The virtual memory calls: a reservation is host address space nobody may touch
 * (PROT_NONE); mapping a handle there fills the range with 0xff bytes (garbage, as
 * fresh device memory holds), and cuMemSetAccess makes it readable and writable.  The
 * double keeps no memory for a handle apart from its mapping, so a handle is mapped
 * at one place at a time (the driver allows more; nothing here needs it). */
#define GRANULE (2u << 20)


CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags o) {
  NEED_CTX();
  (void)o;
  if (!g || !prop) return CUDA_ERROR_INVALID_VALUE;
  *g = GRANULE;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
  NEED_CTX();
  if (!ptr || !size || size % GRANULE || addr || flags) return CUDA_ERROR_INVALID_VALUE;
  if (align < GRANULE) align = GRANULE;
  void *p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return refuse(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAddressReserve", "mmap of %zu bytes failed", size);
  uintptr_t start = ((uintptr_t)p + align - 1) / align * align;
  if (start > (uintptr_t)p) munmap(p, start - (uintptr_t)p); /* keep exactly [start, start + size) */
  if ((uintptr_t)p + size + align > start + size) munmap((void *)(start + size), (uintptr_t)p + size + align - start - size);
  *ptr = start;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  NEED_CTX();
  return munmap(DEV(ptr), size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
  NEED_CTX();
  if (!handle || !prop || !size || size % GRANULE || flags) return CUDA_ERROR_INVALID_VALUE;
  if (size > DEVICE_MEMORY - device_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  Phys *ph = calloc(1, sizeof *ph);
  if (!ph) return CUDA_ERROR_OUT_OF_MEMORY;
  ph->size = size, ph->next = handles, handles = ph, device_bytes += size;
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  NEED_CTX();
  Phys **at = &handles;
  while (*at && *at != (Phys *)(uintptr_t)handle) at = &(*at)->next;
  if (!*at || (*at)->at) return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemRelease", "no such handle, or one still mapped");
  Phys *ph = *at;
  *at = ph->next, device_bytes -= ph->size;
  free(ph);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  NEED_CTX();
  Phys *ph = (Phys *)(uintptr_t)handle;
  if (!ph || offset || flags || size != ph->size || ptr % GRANULE || ph->at) return CUDA_ERROR_INVALID_VALUE;
  if (mprotect(DEV(ptr), size, PROT_READ | PROT_WRITE) != 0)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemMap", "%#llx + %zu is not reserved", (unsigned long long)ptr, size);
  memset(DEV(ptr), 0xff, size);
  mprotect(DEV(ptr), size, PROT_NONE); /* until cuMemSetAccess */
  ph->at = ptr;
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  NEED_CTX();
  if (!desc || count != 1) return CUDA_ERROR_INVALID_VALUE;
  int prot = desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
             : desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                               : PROT_NONE;
  if (mprotect(DEV(ptr), size, prot) != 0)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemSetAccess", "%#llx + %zu is not reserved", (unsigned long long)ptr, size);
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  NEED_CTX();
  Phys *ph = handles;
  while (ph && ph->at != ptr) ph = ph->next;
  if (!ph || ph->size != size) return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemUnmap", "no handle mapped at %#llx", (unsigned long long)ptr);
  if (madvise(DEV(ptr), size, MADV_DONTNEED) != 0 || mprotect(DEV(ptr), size, PROT_NONE) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  ph->at = 0;
  return CUDA_SUCCESS;
}

/* ---- streams, events ---- */

struct CUstream_st {
  int unused;
};
struct CUevent_st {
  int unused;
};

/* Streams come from a table, as a driver keeps them: one never destroyed (a test's
 * for its whole run) is not a leak. */
static struct CUstream_st streams[64];
static int stream_used[64];

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  for (int k = 0; k < 64; k++)
    if (!stream_used[k]) return stream_used[k] = 1, *s = &streams[k], CUDA_SUCCESS;
  return refuse(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate", "more than 64 streams");
}

CUresult cuStreamDestroy(CUstream s) {
  NEED_CTX();
  if (!s || s < streams || s >= streams + 64 || !stream_used[s - streams]) return CUDA_ERROR_INVALID_HANDLE;
  stream_used[s - streams] = 0;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
  NEED_CTX();
  (void)s;
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  (void)s, (void)mode;
  return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuStreamBeginCapture", "stream capture is not modelled");
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g) {
  (void)s, (void)g;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  return e && (*e = calloc(1, sizeof **e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuEventDestroy(CUevent e) {
  NEED_CTX();
  free(e);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  NEED_CTX();
  (void)s;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  NEED_CTX();
  (void)s;
  return e && !flags ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
  NEED_CTX();
  (void)s;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  fn(data);
  return CUDA_SUCCESS;
}

/* ---- libraries, kernels ---- */

typedef struct {
  char *name;
  void *at;
  size_t size;
} Global;

struct CUfunc_st {
  struct CUkern_st *kernel;
};

struct CUkern_st {
  struct CUlib_st *lib;
  char *name;
  fake_kernel_fn fn;
  int nparams;
  uint32_t offset[MAX_PARAMS], size[MAX_PARAMS];
  uint32_t bytes; /* the parameter block's size */
  struct CUfunc_st func;
  struct CUkern_st *next;
};

struct CUlib_st {
  unsigned char *image;
  size_t size;
  int borrowed;     /* CU_LIBRARY_BINARY_IS_PRESERVED: image is the caller's, until the unload */
  struct CUkern_st *kernels;
  Global *globals;
  int nglobals;
};

static uint16_t le16(const unsigned char *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t le32(const unsigned char *b) { return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t le64(const unsigned char *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

typedef struct {
  const unsigned char *b;
  size_t n;
  uint64_t shoff;
  unsigned shnum, shstrndx;
} Elf;

static const unsigned char *section(const Elf *e, unsigned i, uint32_t *type, uint64_t *off, uint64_t *size,
                                    uint32_t *link) {
  const unsigned char *s = e->b + e->shoff + 64 * (uint64_t)i;
  *type = le32(s + 4), *off = le64(s + 24), *size = le64(s + 32), *link = le32(s + 40);
  if (*type != 8 /* NOBITS */ && (*off > e->n || *size > e->n - *off)) return NULL;
  return s;
}

static const char *section_name(const Elf *e, unsigned i) {
  uint32_t type, link;
  uint64_t off, size, str_off, str_size;
  const unsigned char *s = section(e, i, &type, &off, &size, &link);
  if (!s || !section(e, e->shstrndx, &type, &str_off, &str_size, &link)) return "";
  uint32_t name = le32(s);
  if (name >= str_size || !memchr(e->b + str_off + name, 0, str_size - name)) return "";
  return (const char *)e->b + str_off + name;
}

static int find_section(const Elf *e, const char *name) {
  for (unsigned i = 0; i < e->shnum; i++)
    if (strcmp(section_name(e, i), name) == 0) return (int)i;
  return -1;
}

/* A kernel's parameters from its .nv.info.NAME section: KPARAM_INFO (attribute 0x17,
 * 12 bytes: index, ordinal, offset, flags whose bits 18-31 are the size). */
static int read_params(const Elf *e, struct CUkern_st *k) {
  char name[512];
  snprintf(name, sizeof name, ".nv.info.%s", k->name);
  int s = find_section(e, name);
  uint32_t type, link;
  uint64_t off, size;
  if (s < 0 || !section(e, (unsigned)s, &type, &off, &size, &link)) return 0; /* a kernel without parameters */
  for (uint64_t i = 0; i + 2 <= size;) {
    const unsigned char *a = e->b + off + i;
    unsigned fmt = a[0], attr = a[1];
    if (fmt == 4) { /* EIFMT_SVAL: a 16-bit size, then the value */
      if (i + 4 > size) return -1;
      unsigned len = le16(a + 2);
      if (i + 4 + len > size) return -1;
      if (attr == 0x17 && len == 12) {
        unsigned ordinal = le16(a + 8), offset = le16(a + 10), bytes = le32(a + 12) >> 18 & 0x3fff;
        if (ordinal >= MAX_PARAMS) return -1;
        k->offset[ordinal] = offset, k->size[ordinal] = bytes;
        if ((int)ordinal + 1 > k->nparams) k->nparams = (int)ordinal + 1;
        if (offset + bytes > k->bytes) k->bytes = offset + bytes;
      }
      i += 4 + len;
    } else if (fmt == 1 || fmt == 2 || fmt == 3) { /* no value, a byte, a 16-bit value: in two bytes after the head */
      i += 4;
    } else {
      return -1;
    }
  }
  for (int p = 0; p < k->nparams; p++)
    if (!k->size[p]) return -1; /* an ordinal with no entry */
  return 0;
}

/* The architecture a CUDA ELF image was compiled for (arch.c's rule), 0 if none. */
static unsigned elf_arch(const unsigned char *b, size_t n) {
  if (n < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 || le16(b + 18) != 190) return 0;
  return b[8] >= 8 ? le32(b + 48) >> 8 & 0xff : le32(b + 48) & 0xff;
}

/* An ELF image's size: the end of its section table or of its last section. */
static size_t elf_size(const unsigned char *b) {
  uint64_t shoff = le64(b + 40), end = shoff + 64 * (uint64_t)le16(b + 60);
  if (le64(b + 32) + 56 * (uint64_t)le16(b + 56) > end) end = le64(b + 32) + 56 * (uint64_t)le16(b + 56);
  for (unsigned i = 0; i < le16(b + 60); i++) {
    const unsigned char *s = b + shoff + 64 * (uint64_t)i;
    if (le32(s + 4) != 8 && le64(s + 24) + le64(s + 32) > end) end = le64(s + 24) + le64(s + 32);
  }
  return (size_t)end;
}

/* Module globals: each object symbol of .nv.global.init (its bytes from the image) or
 * .nv.global (zeros) gets host memory of its own. */
static CUresult read_globals(const Elf *e, struct CUlib_st *lib) {
  int symtab = find_section(e, ".symtab");
  uint32_t type, link;
  uint64_t off, size, str_off, str_size;
  if (symtab < 0 || !section(e, (unsigned)symtab, &type, &off, &size, &link) ||
      !section(e, link, &type, &str_off, &str_size, &link))
    return CUDA_SUCCESS;
  for (uint64_t i = 0; i + 24 <= size; i += 24) {
    const unsigned char *sym = e->b + off + i;
    unsigned shndx = le16(sym + 6), kind = sym[4] & 0xf;
    uint64_t value = le64(sym + 8), bytes = le64(sym + 16);
    uint32_t name = le32(sym);
    if (kind != 1 /* OBJECT */ || !bytes || shndx >= e->shnum || name >= str_size) continue;
    const char *sec = section_name(e, shndx);
    int init = strcmp(sec, ".nv.global.init") == 0;
    if (!init && strcmp(sec, ".nv.global") != 0) continue;
    uint32_t stype, slink;
    uint64_t soff, ssize;
    if (!section(e, shndx, &stype, &soff, &ssize, &slink) || value + bytes > ssize) return CUDA_ERROR_INVALID_IMAGE;
    Global *grown = realloc(lib->globals, (size_t)(lib->nglobals + 1) * sizeof *grown);
    if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
    lib->globals = grown;
    Global *g = &lib->globals[lib->nglobals++];
    g->name = strdup((const char *)e->b + str_off + name);
    g->size = (size_t)bytes;
    g->at = calloc(1, (size_t)bytes);
    if (!g->name || !g->at) return CUDA_ERROR_OUT_OF_MEMORY;
    if (init) memcpy(g->at, e->b + soff + value, (size_t)bytes);
  }
  return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary lib) {
  ENTER(); /* (context-independent, as cuLibraryLoadData) */
  if (!lib) return CUDA_ERROR_INVALID_HANDLE;
  for (struct CUkern_st *k = lib->kernels, *next; k; k = next) next = k->next, free(k->name), free(k);
  for (int g = 0; g < lib->nglobals; g++) free(lib->globals[g].name), free(lib->globals[g].at);
  /* the driver may read a preserved image until the unload: it must still be there */
  int gone = lib->borrowed && memcmp(lib->image, "\177ELF", 4) != 0;
  if (!lib->borrowed) free(lib->image);
  free(lib->globals), free(lib);
  if (gone) return refuse(CUDA_ERROR_INVALID_VALUE, "cuLibraryUnload", "the preserved image changed before its unload");
  return CUDA_SUCCESS;
}

/* The cubin for this device in a fatbin (a 16-byte header, then entries: kind u16, header
 * size u32 at +4, payload size u64 at +8, SM version u32 at +28, flags u64 at +40), or
 * NULL with *why set.  Compressed entries (flag 0x2000 or 0x8000) are not modelled. */
static const unsigned char *fatbin_cubin(const unsigned char *b, const char **why) {
  uint64_t end = le16(b + 6) + le64(b + 8);
  *why = "no cubin for the device";
  for (uint64_t e = le16(b + 6); e + 64 <= end; e += le32(b + e + 4) + le64(b + e + 8)) {
    const unsigned char *h = b + e;
    unsigned sm = le32(h + 28);
    if (le32(h + 4) < 64) return *why = "an entry header under 64 bytes", NULL;
    if (le16(h) != 2 || sm / 10 != FAKE_SM / 10 || sm % 10 > FAKE_SM % 10) continue;
    if (le64(h + 40) & 0xa000) return *why = "a compressed cubin (not modelled)", NULL;
    return h + le32(h + 4);
  }
  return NULL;
}

/* Context-independent, as the driver's: a thread with no current context may load (libpgrt
 * loads libraries' fatbins on threads of its own).  Library options: only
 * CU_LIBRARY_BINARY_IS_PRESERVED, which makes the image the caller's until the unload. */
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jo, void **jv, unsigned int njo,
                           CUlibraryOption *lo, void **lv, unsigned int nlo) {
  ENTER();
  (void)jo, (void)jv;
  if (!library || !code || njo) return CUDA_ERROR_INVALID_VALUE;
  int preserved = 0;
  for (unsigned i = 0; i < nlo; i++) {
    if (!lo || lo[i] != CU_LIBRARY_BINARY_IS_PRESERVED) return CUDA_ERROR_INVALID_VALUE;
    preserved = lv && lv[i] != NULL;
  }
  if (!current) __atomic_fetch_add(&loads_without_context, 1, __ATOMIC_RELAXED);
  const unsigned char *b = code;
  if (le32(b) == 0xBA55ED50u) { /* a fatbin: its cubin for the device */
    const char *why;
    if (!(b = fatbin_cubin(b, &why))) return refuse(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLibraryLoadData", "a fatbin with %s", why);
  }
  if (memcmp(b, "\177ELF", 4) != 0)
    return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuLibraryLoadData", "only cubins and fatbins of cubins are modelled (not PTX)");
  unsigned arch = elf_arch(b, 64);
  if (arch / 10 != FAKE_SM / 10 || arch % 10 > FAKE_SM % 10)
    return refuse(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLibraryLoadData", "a cubin for sm_%u on an sm_%u device", arch,
                  FAKE_SM);
  struct CUlib_st *lib = calloc(1, sizeof *lib);
  if (!lib) return CUDA_ERROR_OUT_OF_MEMORY;
  lib->size = elf_size(b);
  if (preserved) lib->image = (unsigned char *)b, lib->borrowed = 1;
  else if (!(lib->image = malloc(lib->size))) return free(lib), CUDA_ERROR_OUT_OF_MEMORY;
  else memcpy(lib->image, b, lib->size);
  Elf e = {lib->image, lib->size, le64(b + 40), le16(b + 60), le16(b + 62)};
  if (e.shoff + 64 * (uint64_t)e.shnum > e.n || e.shstrndx >= e.shnum) {
    cuLibraryUnload(lib);
    return refuse(CUDA_ERROR_INVALID_IMAGE, "cuLibraryLoadData", "a section table past the image");
  }
  CUresult r = read_globals(&e, lib);
  if (r != CUDA_SUCCESS) return cuLibraryUnload(lib), r;
  *library = lib;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary lib, const char *name) {
  NEED_CTX();
  if (!out || !lib || !name) return CUDA_ERROR_INVALID_VALUE;
  for (struct CUkern_st *k = lib->kernels; k; k = k->next)
    if (strcmp(k->name, name) == 0) return *out = k, CUDA_SUCCESS;
  Elf e = {lib->image, lib->size, le64(lib->image + 40), le16(lib->image + 60), le16(lib->image + 62)};
  char text[512];
  snprintf(text, sizeof text, ".text.%s", name);
  if (find_section(&e, text) < 0) return CUDA_ERROR_NOT_FOUND;
  struct CUkern_st *k = calloc(1, sizeof *k);
  if (!k || !(k->name = strdup(name))) return free(k), CUDA_ERROR_OUT_OF_MEMORY;
  if (read_params(&e, k) != 0) {
    free(k->name), free(k);
    return refuse(CUDA_ERROR_INVALID_IMAGE, "cuLibraryGetKernel", "kernel '%s': its parameter table does not read", name);
  }
  k->lib = lib, k->fn = own_only && strncmp(name, "pgrt_", 5) != 0 ? NULL : fake_kernel(name), k->func.kernel = k;
  k->next = lib->kernels, lib->kernels = k;
  *out = k;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) {
  NEED_CTX();
  if (!f || !k) return CUDA_ERROR_INVALID_HANDLE;
  *f = &k->func;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name) {
  NEED_CTX();
  if (!lib || !name) return CUDA_ERROR_INVALID_VALUE;
  for (int g = 0; g < lib->nglobals; g++)
    if (strcmp(lib->globals[g].name, name) == 0) {
      if (dptr) *dptr = (CUdeviceptr)(uintptr_t)lib->globals[g].at;
      if (bytes) *bytes = lib->globals[g].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

void *fake_global(CUlibrary lib, const char *name) {
  for (int g = 0; lib && g < lib->nglobals; g++)
    if (strcmp(lib->globals[g].name, name) == 0) return lib->globals[g].at;
  return NULL;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
  NEED_CTX();
  (void)attrib, (void)value;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f) {
  NEED_CTX();
  if (!pi || !f) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = 0; return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; return CUDA_SUCCESS;
  default: return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuFuncGetAttribute", "attribute %d is not modelled", (int)attrib);
  }
}

/* A kernel's parameters copied into a block of its layout, from kernelParams (a
 * pointer per parameter) or extra (the block itself). */
static CUresult pack(const struct CUkern_st *k, void **params, void **extra, unsigned char **out, const char *call) {
  unsigned char *block = calloc(1, k->bytes ? k->bytes : 1);
  if (!block) return CUDA_ERROR_OUT_OF_MEMORY;
  if (extra) {
    void *buf = NULL;
    size_t size = 0;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *(size_t *)extra[i + 1];
    }
    if (!buf || size < k->bytes) return free(block), refuse(CUDA_ERROR_INVALID_VALUE, call, "kernel '%s': a parameter buffer of %zu bytes, not %u", k->name, size, k->bytes);
    memcpy(block, buf, k->bytes);
  } else {
    if (k->nparams && !params)
      return free(block), refuse(CUDA_ERROR_INVALID_VALUE, call, "kernel '%s': no parameters given", k->name);
    for (int p = 0; p < k->nparams; p++) {
      if (!params[p]) return free(block), refuse(CUDA_ERROR_INVALID_VALUE, call, "kernel '%s': parameter %d is null", k->name, p);
      memcpy(block + k->offset[p], params[p], k->size[p]);
    }
  }
  *out = block;
  return CUDA_SUCCESS;
}

/* Every launch's parameters are audited: no 8 bytes that can hold an address may hold
 * one in freed memory.  Those are the 8 bytes at each 4-byte-aligned offset inside one
 * parameter (a pointer, or one inside a struct, whole or split in two 32-bit halves, as
 * cuDNN's are), and two 4-byte parameters side by side (a pointer passed as its halves).
 * Never 8 bytes across a parameter's end: those join the high half of one pointer, or a
 * padding, to the low half of the next -- numbers no kernel reads, which can equal a
 * freed address (the likeliest cause of fuzz_c's campaign-6 report, docs/fuzzing.md:
 * under AddressSanitizer heap addresses are 0x6000_0000_0000 up, so a pointer whose low
 * half is 0x61xx spells one with the high half before it).  (A scalar that happens to
 * equal a freed address is not impossible, only unlikely: heap addresses are 47-bit
 * numbers.) */
static int audit_at(const struct CUkern_st *k, const unsigned char *params, uint32_t at) {
  uint64_t v;
  memcpy(&v, params + at, 8);
  const Freed *a = freed_at(v);
  if (!a) return 0;
  fprintf(stderr, "fakecuda: kernel '%s': parameter bytes %u..%u hold %#llx, inside %zu bytes at %p that were freed "
          "(an address from an earlier call, not replaced)\n", k->name, at, at + 8, (unsigned long long)v, a->size, a->p);
  return 1;
}
static int audit(const struct CUkern_st *k, const unsigned char *params) {
  for (int p = 0; p < k->nparams; p++) {
    uint32_t off = k->offset[p], size = k->size[p];
    for (uint32_t at = off; at + 8 <= off + size; at += 4)
      if (audit_at(k, params, at)) return 1;
    if (size == 4 && p + 1 < k->nparams && k->size[p + 1] == 4 && k->offset[p + 1] == off + 4 && off % 4 == 0 &&
        audit_at(k, params, off))
      return 1;
  }
  return 0;
}

static CUresult run_kernel(const struct CUkern_st *k, const unsigned grid[3], const unsigned block[3],
                           unsigned char *params) {
  void *args[MAX_PARAMS];
  if (audit(k, params)) return sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  if (!k->fn && skip_unknown) return skipped++, CUDA_SUCCESS;
  if (!k->fn) {
    sticky = CUDA_ERROR_LAUNCH_FAILED;
    return refuse(sticky, "a launch", "kernel '%s' has no host version (tests/fakecuda/kernels.c; "
                  "FAKECUDA_KERNELS=skip runs none of those)", k->name);
  }
  for (int p = 0; p < k->nparams; p++) args[p] = params + k->offset[p];
  fake_launch l = {k->name, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, args, k->lib};
  /* a fault names the kernel (only while one runs: NVRTC takes faults of its own) */
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigaction(SIGSEGV, &sa, &old_segv), sigaction(SIGBUS, &sa, &old_bus);
  running_kernel = k->name;
  int fault = k->fn(&l);
  running_kernel = NULL;
  sigaction(SIGSEGV, &old_segv, NULL), sigaction(SIGBUS, &old_bus, NULL);
  if (fault) sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  return sticky;
}

static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3], void **params, void **extra) {
  unsigned char *block_bytes;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2] ||
      (unsigned long long)block[0] * block[1] * block[2] > 1024)
    return refuse(CUDA_ERROR_INVALID_VALUE, "a launch", "kernel '%s': grid or block out of range", f->kernel->name);
  CUresult r = pack(f->kernel, params, extra, &block_bytes, "a launch");
  if (r != CUDA_SUCCESS) return r;
  r = run_kernel(f->kernel, grid, block, block_bytes);
  free(block_bytes);
  return r;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream s, void **params, void **extra) {
  NEED_CTX();
  (void)smem, (void)s;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(f, grid, block, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
  NEED_CTX();
  if (!cfg) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
  const unsigned block[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
  return launch(f, grid, block, params, extra);
}

/* ---- graphs ---- */

typedef struct {
  unsigned value, dflt;
  int assign_default;
  CUgraph graph;
} Cond;
static Cond *conds;
static size_t ncond;

struct CUgraphDeviceUpdatableNode_st {
  struct CUgraphNode_st *node;
};

struct CUgraphNode_st {
  CUgraphNodeType type;
  CUgraph graph;               /* the graph it is in */
  struct CUgraphNode_st *orig; /* in an instantiated copy: the node it copies */
  int enabled;
  struct CUgraphNode_st **deps;
  CUgraphEdgeData *dep_data;
  size_t ndeps;
  /* a kernel */
  CUfunction func;
  unsigned grid[3], block[3];
  unsigned char *params;
  int device_updatable;
  int priority; /* CU_LAUNCH_ATTRIBUTE_PRIORITY; 0: none */
  struct CUgraphDeviceUpdatableNode_st dev; /* its handle for device-side updates (a copy's) */
  struct CUgraphNode_st *last_copy;         /* its copy in the graph's latest instantiation */
  /* a copy, a memset, a host call */
  CUDA_MEMCPY3D copy;
  CUDA_MEMSET_NODE_PARAMS set;
  CUDA_HOST_NODE_PARAMS host;
  /* a child graph; a conditional node's bodies */
  CUgraph child;
  CUgraphConditionalHandle cond;
  CUgraphConditionalNodeType cond_type;
  unsigned nbodies;
  CUgraph *bodies;
  int done; /* in the current run */
};

struct CUgraph_st {
  struct CUgraphNode_st **nodes;
  size_t n;
  CUgraphExec exec; /* an instantiated copy: its executable graph */
};

struct CUgraphExec_st {
  CUgraph copy; /* the graph it runs */
  CUgraph from;
};

static void graph_free(CUgraph g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode n = g->nodes[i];
    if (!n) continue;
    free(n->deps), free(n->dep_data), free(n->params);
    graph_free(n->child);
    for (unsigned b = 0; b < n->nbodies; b++) graph_free(n->bodies[b]);
    free(n->bodies), free(n);
  }
  free(g->nodes), free(g);
}

CUresult cuGraphCreate(CUgraph *g, unsigned int flags) {
  NEED_CTX();
  if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
  return (*g = calloc(1, sizeof **g)) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphDestroy(CUgraph g) {
  NEED_CTX();
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  graph_free(g);
  return CUDA_SUCCESS;
}

static int in_graph(CUgraph g, CUgraphNode n) {
  for (size_t i = 0; i < g->n; i++)
    if (g->nodes[i] == n) return 1;
  return 0;
}

static CUresult add_deps(CUgraphNode n, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t count,
                         const char *call) {
  CUgraphNode *d = realloc(n->deps, (n->ndeps + count) * sizeof *d);
  CUgraphEdgeData *dd = d ? realloc(n->dep_data, (n->ndeps + count) * sizeof *dd) : NULL;
  if (d) n->deps = d;
  if (!dd) return CUDA_ERROR_OUT_OF_MEMORY;
  n->dep_data = dd;
  for (size_t i = 0; i < count; i++) {
    if (!deps[i] || !in_graph(n->graph, deps[i]))
      return refuse(CUDA_ERROR_INVALID_VALUE, call, "a dependency on a node of another graph");
    for (size_t j = 0; j < n->ndeps; j++)
      if (n->deps[j] == deps[i]) return refuse(CUDA_ERROR_INVALID_VALUE, call, "a dependency given twice");
    n->deps[n->ndeps] = deps[i];
    if (data) n->dep_data[n->ndeps] = data[i];
    else memset(&n->dep_data[n->ndeps], 0, sizeof *n->dep_data);
    n->ndeps++;
  }
  return CUDA_SUCCESS;
}

static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t nd,
                         CUgraphNodeType type, CUgraphNode *made, const char *call) {
  if (!out || !g || (nd && !deps)) return CUDA_ERROR_INVALID_VALUE;
  if (g->exec) return refuse(CUDA_ERROR_INVALID_VALUE, call, "a node added to an executable graph's copy");
  CUgraphNode n = calloc(1, sizeof *n);
  CUgraphNode *grown = n ? realloc(g->nodes, (g->n + 1) * sizeof *grown) : NULL;
  if (!grown) return free(n), CUDA_ERROR_OUT_OF_MEMORY;
  g->nodes = grown;
  n->type = type, n->graph = g, n->enabled = 1;
  CUresult r = add_deps(n, deps, data, nd, call);
  if (r != CUDA_SUCCESS) return free(n->deps), free(n->dep_data), free(n), r;
  g->nodes[g->n++] = n;
  *out = *made = n;
  return CUDA_SUCCESS;
}

static CUresult set_kernel(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p, const char *call) {
  unsigned char *params;
  if (!p || !p->func) return refuse(CUDA_ERROR_INVALID_VALUE, call, "no function");
  if (p->kern || p->ctx) return refuse(CUDA_ERROR_NOT_SUPPORTED, call, "kern and ctx are not modelled");
  if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY || !p->blockDimZ)
    return refuse(CUDA_ERROR_INVALID_VALUE, call, "kernel '%s': an empty grid or block", p->func->kernel->name);
  CUresult r = pack(p->func->kernel, p->kernelParams, p->extra, &params, call);
  if (r != CUDA_SUCCESS) return r;
  free(n->params);
  n->params = params, n->func = p->func;
  n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
  n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                              const CUDA_KERNEL_NODE_PARAMS *p) {
  NEED_CTX();
  struct CUgraphNode_st k;
  CUgraphNode n;
  memset(&k, 0, sizeof k);
  CUresult r = set_kernel(&k, p, "cuGraphAddKernelNode");
  if (r == CUDA_SUCCESS && (r = add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_KERNEL, &n, "cuGraphAddKernelNode")))
    free(k.params);
  if (r != CUDA_SUCCESS) return r;
  n->func = k.func, n->params = k.params;
  memcpy(n->grid, k.grid, sizeof k.grid), memcpy(n->block, k.block, sizeof k.block);
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd, const CUDA_MEMCPY3D *m,
                              CUcontext ctx) {
  NEED_CTX();
  CUgraphNode n;
  if (!m || ctx != current) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_MEMCPY, &n, "cuGraphAddMemcpyNode");
  if (r == CUDA_SUCCESS) n->copy = *m;
  return r;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                              const CUDA_MEMSET_NODE_PARAMS *m, CUcontext ctx) {
  NEED_CTX();
  CUgraphNode n;
  if (!m || ctx != current || (m->elementSize != 1 && m->elementSize != 2 && m->elementSize != 4))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_MEMSET, &n, "cuGraphAddMemsetNode");
  if (r == CUDA_SUCCESS) n->set = *m;
  return r;
}

CUresult cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                            const CUDA_HOST_NODE_PARAMS *h) {
  NEED_CTX();
  CUgraphNode n;
  if (!h || !h->fn) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_HOST, &n, "cuGraphAddHostNode");
  if (r == CUDA_SUCCESS) n->host = *h;
  return r;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd) {
  NEED_CTX();
  CUgraphNode n;
  return add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_EMPTY, &n, "cuGraphAddEmptyNode");
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd, CUevent e) {
  NEED_CTX();
  CUgraphNode n;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &n, "cuGraphAddEventRecordNode");
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd, CUevent e) {
  NEED_CTX();
  CUgraphNode n;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_WAIT_EVENT, &n, "cuGraphAddEventWaitNode");
}

static CUgraph graph_clone(CUgraph g, int link);

CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd, CUgraph child) {
  NEED_CTX();
  CUgraphNode n;
  if (!child) return CUDA_ERROR_INVALID_VALUE;
  CUgraph copy = graph_clone(child, 0); /* a clone: the child's own nodes are not the node's */
  if (!copy) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = add_node(out, g, deps, NULL, nd, CU_GRAPH_NODE_TYPE_GRAPH, &n, "cuGraphAddChildGraphNode");
  if (r != CUDA_SUCCESS) return graph_free(copy), r;
  n->child = copy;
  return CUDA_SUCCESS;
}

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx, unsigned dflt,
                                        unsigned flags) {
  NEED_CTX();
  if (!out || !g || ctx != current || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT)) return CUDA_ERROR_INVALID_VALUE;
  Cond *grown = realloc(conds, (ncond + 1) * sizeof *grown);
  if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
  conds = grown;
  conds[ncond] = (Cond){dflt, dflt, (flags & CU_GRAPH_COND_ASSIGN_DEFAULT) != 0, g};
  *out = ++ncond; /* handle k names conds[k - 1] */
  return CUDA_SUCCESS;
}

void fake_set_conditional(unsigned long long handle, unsigned value) {
  if (!handle || handle > ncond) {
    fprintf(stderr, "fakecuda: cudaGraphSetConditional: no handle %llu\n", handle);
    sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    return;
  }
  conds[handle - 1].value = value;
}

CUresult cuGraphAddNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t nd,
                        CUgraphNodeParams *p) {
  NEED_CTX();
  CUgraphNode n;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->type == CU_GRAPH_NODE_TYPE_GRAPH) {
    CUgraph child = p->graph.graph;
    if (!child) return CUDA_ERROR_INVALID_VALUE;
    if (p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
      if (!(child = graph_clone(child, 0))) return CUDA_ERROR_OUT_OF_MEMORY;
    } else if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = add_node(out, g, deps, data, nd, CU_GRAPH_NODE_TYPE_GRAPH, &n, "cuGraphAddNode");
    if (r != CUDA_SUCCESS) {
      if (child != p->graph.graph) graph_free(child);
      return r;
    }
    n->child = child; /* moved: the caller's graph is the node's now, its nodes too */
    return CUDA_SUCCESS;
  }
  if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    CUDA_CONDITIONAL_NODE_PARAMS *c = &p->conditional;
    if (!c->handle || c->handle > ncond || conds[c->handle - 1].graph != g || c->ctx != current)
      return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphAddNode", "a conditional handle not created on this graph");
    int ok = c->type == CU_GRAPH_COND_TYPE_IF ? c->size == 1 || c->size == 2
             : c->type == CU_GRAPH_COND_TYPE_WHILE ? c->size == 1
             : c->type == CU_GRAPH_COND_TYPE_SWITCH ? c->size >= 1
                                                     : 0;
    if (!ok) return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphAddNode", "a conditional node of type %d with %u bodies", (int)c->type, c->size);
    CUresult r = add_node(out, g, deps, data, nd, CU_GRAPH_NODE_TYPE_CONDITIONAL, &n, "cuGraphAddNode");
    if (r != CUDA_SUCCESS) return r;
    n->cond = c->handle, n->cond_type = c->type, n->nbodies = c->size;
    if (!(n->bodies = calloc(c->size, sizeof *n->bodies))) return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned b = 0; b < c->size; b++)
      if (!(n->bodies[b] = calloc(1, sizeof *n->bodies[b]))) return CUDA_ERROR_OUT_OF_MEMORY;
    c->phGraph_out = n->bodies;
    return CUDA_SUCCESS;
  }
  return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddNode", "node type %d is not modelled", (int)p->type);
}

CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *data,
                                size_t count) {
  NEED_CTX();
  if (!g || (count && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    if (!to[i] || to[i]->graph != g) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = add_deps(to[i], &from[i], data ? &data[i] : NULL, 1, "cuGraphAddDependencies");
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *data, size_t *count) {
  NEED_CTX();
  if (!g || !count) return CUDA_ERROR_INVALID_VALUE;
  size_t k = 0;
  for (size_t i = 0; i < g->n; i++)
    for (size_t d = 0; d < g->nodes[i]->ndeps; d++, k++) {
      if (!from) continue;
      if (k >= *count) return CUDA_ERROR_INVALID_VALUE;
      from[k] = g->nodes[i]->deps[d], to[k] = g->nodes[i];
      if (data) data[k] = g->nodes[i]->dep_data[d];
    }
  *count = k;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode n, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue *v) {
  NEED_CTX();
  if (!n || !v || n->type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE) {
    n->device_updatable = v->deviceUpdatableKernelNode.deviceUpdatable != 0;
    return CUDA_SUCCESS;
  }
  if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) return CUDA_SUCCESS; /* blocks run one after another here */
  if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY) { /* (order changes nothing here; instantiation checks the flag) */
    n->priority = v->priority;
    return CUDA_SUCCESS;
  }
  return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuGraphKernelNodeSetAttribute", "attribute %d is not modelled", (int)attr);
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode n, CUkernelNodeAttrID attr, CUkernelNodeAttrValue *v) {
  NEED_CTX();
  if (!n || !v || n->type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  if (attr != CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
    return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuGraphKernelNodeGetAttribute", "attribute %d is not modelled", (int)attr);
  memset(v, 0, sizeof *v);
  v->deviceUpdatableKernelNode.deviceUpdatable = n->device_updatable;
  if (n->device_updatable && !n->last_copy)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphKernelNodeGetAttribute",
                  "a device-updatable node's handle asked for before its graph was instantiated");
  v->deviceUpdatableKernelNode.devNode = n->device_updatable ? &n->last_copy->dev : NULL;
  return CUDA_SUCCESS;
}

/* A copy of graph g: every node, its parameters, child graphs and bodies.  link: the
 * copy is an instantiation, whose nodes name the nodes they copy. */
static CUgraph graph_clone(CUgraph g, int link) {
  CUgraph c = calloc(1, sizeof *c);
  if (!c || !(c->nodes = calloc(g->n ? g->n : 1, sizeof *c->nodes))) return free(c), NULL;
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode o = g->nodes[i], n = malloc(sizeof *n);
    if (!n) goto fail;
    *n = *o;
    n->graph = c, n->orig = link ? o : NULL, n->last_copy = NULL, n->dev.node = n;
    n->deps = NULL, n->dep_data = NULL, n->params = NULL, n->child = NULL, n->bodies = NULL, n->nbodies = 0;
    c->nodes[c->n++] = n;
    if (o->ndeps && (!(n->deps = malloc(o->ndeps * sizeof *n->deps)) ||
                     !(n->dep_data = malloc(o->ndeps * sizeof *n->dep_data))))
      goto fail;
    if (o->params) {
      size_t bytes = o->func->kernel->bytes ? o->func->kernel->bytes : 1;
      if (!(n->params = malloc(bytes))) goto fail;
      memcpy(n->params, o->params, bytes);
    }
    if (o->child && !(n->child = graph_clone(o->child, link))) goto fail;
    if (o->nbodies) {
      if (!(n->bodies = calloc(o->nbodies, sizeof *n->bodies))) goto fail;
      n->nbodies = o->nbodies;
      for (unsigned b = 0; b < o->nbodies; b++)
        if (!(n->bodies[b] = graph_clone(o->bodies[b], link))) goto fail;
    }
    if (link) o->last_copy = n;
  }
  for (size_t i = 0; i < g->n; i++) /* every dependency is on a node of the same graph */
    for (size_t d = 0; d < g->nodes[i]->ndeps; d++) {
      size_t at = 0;
      while (g->nodes[at] != g->nodes[i]->deps[d]) at++;
      c->nodes[i]->deps[d] = c->nodes[at], c->nodes[i]->dep_data[d] = g->nodes[i]->dep_data[d];
    }
  return c;
fail:
  graph_free(c);
  return NULL;
}

/* What CUDA lets a conditional body hold: kernels, empty nodes, child graphs, memsets,
 * copies and conditional nodes, at any depth. */
static const char *body_refuses(CUgraph g) {
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode n = g->nodes[i];
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_MEMCPY: break;
    case CU_GRAPH_NODE_TYPE_GRAPH: {
      const char *why = body_refuses(n->child);
      if (why) return why;
      break;
    }
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      for (unsigned b = 0; b < n->nbodies; b++) {
        const char *why = body_refuses(n->bodies[b]);
        if (why) return why;
      }
      break;
    case CU_GRAPH_NODE_TYPE_HOST: return "a host node";
    default: return "an event node";
    }
  }
  return NULL;
}

static const char *graph_refuses(CUgraph g) {
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode n = g->nodes[i];
    const char *why = n->child ? graph_refuses(n->child) : NULL;
    for (unsigned b = 0; !why && b < n->nbodies; b++) why = body_refuses(n->bodies[b]);
    if (why) return why;
  }
  return NULL;
}

CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, unsigned long long flags) {
  NEED_CTX();
  if (!out || !g || (flags & ~(unsigned long long)CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
    return CUDA_ERROR_INVALID_VALUE;
  int prioritized = 0;
  for (size_t i = 0; i < g->n; i++) prioritized = prioritized || g->nodes[i]->priority;
  if (prioritized != !!(flags & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)) /* (CUDA would ignore them) */
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate", "%s", prioritized
                  ? "a kernel node has a priority, and the graph is not instantiated to honour it"
                  : "USE_NODE_PRIORITY on a graph none of whose nodes has a priority");
  prioritized_graphs += prioritized;
  const char *why = graph_refuses(g);
  if (why) return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate", "a conditional body holds %s", why);
  CUgraphExec e = calloc(1, sizeof *e);
  if (!e || !(e->copy = graph_clone(g, 1))) return free(e), CUDA_ERROR_OUT_OF_MEMORY;
  e->from = g, e->copy->exec = e;
  *out = e;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec e) {
  NEED_CTX();
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  graph_free(e->copy), free(e);
  return CUDA_SUCCESS;
}

CUresult cuGraphUpload(CUgraphExec e, CUstream s) {
  NEED_CTX();
  (void)s;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The copy of node `orig` in graph g (nested graphs included), NULL if none. */
static CUgraphNode copy_of(CUgraph g, CUgraphNode orig) {
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode n = g->nodes[i], found = NULL;
    if (n->orig == orig) return n;
    if (n->child && (found = copy_of(n->child, orig))) return found;
    for (unsigned b = 0; b < n->nbodies; b++)
      if ((found = copy_of(n->bodies[b], orig))) return found;
  }
  return NULL;
}

static CUresult exec_node(CUgraphExec e, CUgraphNode orig, CUgraphNodeType type, CUgraphNode *out, const char *call) {
  if (!e || !orig) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode n = copy_of(e->copy, orig);
  if (!n) return refuse(CUDA_ERROR_INVALID_VALUE, call, "the node is not in this executable graph");
  if (n->type != type) return refuse(CUDA_ERROR_INVALID_VALUE, call, "a node of type %d, not %d", (int)n->type, (int)type);
  *out = n;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p) {
  NEED_CTX();
  CUgraphNode n;
  CUresult r = exec_node(e, node, CU_GRAPH_NODE_TYPE_KERNEL, &n, "cuGraphExecKernelNodeSetParams");
  if (r != CUDA_SUCCESS) return r;
  if (p && p->func != n->func && n->device_updatable)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphExecKernelNodeSetParams", "a device-updatable node's function changed");
  return set_kernel(n, p, "cuGraphExecKernelNodeSetParams");
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_MEMCPY3D *m, CUcontext ctx) {
  NEED_CTX();
  CUgraphNode n;
  CUresult r = exec_node(e, node, CU_GRAPH_NODE_TYPE_MEMCPY, &n, "cuGraphExecMemcpyNodeSetParams");
  if (r != CUDA_SUCCESS) return r;
  if (!m || ctx != current) return CUDA_ERROR_INVALID_VALUE;
  if (m->Height > 1 || m->Depth > 1 || n->copy.Height > 1 || n->copy.Depth > 1)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphExecMemcpyNodeSetParams", "the copy must be 1-dimensional");
  n->copy = *m;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *m,
                                        CUcontext ctx) {
  NEED_CTX();
  CUgraphNode n;
  CUresult r = exec_node(e, node, CU_GRAPH_NODE_TYPE_MEMSET, &n, "cuGraphExecMemsetNodeSetParams");
  if (r != CUDA_SUCCESS) return r;
  if (!m || ctx != current) return CUDA_ERROR_INVALID_VALUE;
  if (m->height > 1 || n->set.height > 1)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphExecMemsetNodeSetParams", "the memset must be 1-dimensional");
  n->set = *m;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *h) {
  NEED_CTX();
  CUgraphNode n;
  CUresult r = exec_node(e, node, CU_GRAPH_NODE_TYPE_HOST, &n, "cuGraphExecHostNodeSetParams");
  if (r != CUDA_SUCCESS) return r;
  if (!h || !h->fn) return CUDA_ERROR_INVALID_VALUE;
  n->host = *h;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode node, unsigned int enabled) {
  NEED_CTX();
  if (!e || !node) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode n = copy_of(e->copy, node);
  if (!n) return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphNodeSetEnabled", "the node is not in this executable graph");
  if (n->type != CU_GRAPH_NODE_TYPE_KERNEL && n->type != CU_GRAPH_NODE_TYPE_MEMCPY && n->type != CU_GRAPH_NODE_TYPE_MEMSET)
    return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphNodeSetEnabled", "only kernel, copy and memset nodes");
  n->enabled = enabled != 0;
  return CUDA_SUCCESS;
}

int fake_set_param(void *dev_node, size_t offset, const void *value, size_t size) {
  struct CUgraphDeviceUpdatableNode_st *d = dev_node;
  CUgraphNode n = d ? d->node : NULL;
  if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL || !n->device_updatable || !n->orig) {
    fprintf(stderr, "fakecuda: cudaGraphKernelNodeSetParam: not a device-updatable node of an executable graph\n");
    return 1;
  }
  if (offset + size > n->func->kernel->bytes) {
    fprintf(stderr, "fakecuda: cudaGraphKernelNodeSetParam: bytes %zu..%zu past kernel '%s''s %u bytes of parameters\n",
            offset, offset + size, n->func->kernel->name, n->func->kernel->bytes);
    return 1;
  }
  memcpy(n->params + offset, value, size);
  return 0;
}

static CUresult run_graph(CUgraph g);

static CUresult run_node(CUgraphNode n) {
  switch (n->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL: return run_kernel(n->func->kernel, n->grid, n->block, n->params);
  case CU_GRAPH_NODE_TYPE_MEMCPY: return copy3d(&n->copy, "a copy node");
  case CU_GRAPH_NODE_TYPE_MEMSET:
    set2d(n->set.dst, n->set.pitch, n->set.value, n->set.elementSize, n->set.width, n->set.height ? n->set.height : 1);
    return CUDA_SUCCESS;
  case CU_GRAPH_NODE_TYPE_HOST: n->host.fn(n->host.userData); return CUDA_SUCCESS;
  case CU_GRAPH_NODE_TYPE_GRAPH: return run_graph(n->child);
  case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
    Cond *c = &conds[n->cond - 1];
    CUresult r = CUDA_SUCCESS;
    if (n->cond_type == CU_GRAPH_COND_TYPE_IF) {
      if (c->value) r = run_graph(n->bodies[0]);
      else if (n->nbodies == 2) r = run_graph(n->bodies[1]);
    } else if (n->cond_type == CU_GRAPH_COND_TYPE_WHILE) {
      for (long k = 0; r == CUDA_SUCCESS && c->value; k++) {
        if (k == 1000000) return refuse(sticky = CUDA_ERROR_LAUNCH_FAILED, "a while node", "a million iterations");
        r = run_graph(n->bodies[0]);
      }
    } else if (c->value < n->nbodies) {
      r = run_graph(n->bodies[c->value]);
    }
    return r;
  }
  default: return CUDA_SUCCESS; /* empty, events */
  }
}

/* Runs every node once, each after all it depends on: of the nodes ready, always the
 * one added last, so that nodes without a dependency between them run in the
 * reverse of their program order, and a dependency libpgrt failed to add shows. */
static CUresult run_graph(CUgraph g) {
  for (size_t i = 0; i < g->n; i++) g->nodes[i]->done = 0;
  for (size_t left = g->n; left; left--) {
    CUgraphNode next = NULL;
    for (size_t i = g->n; i-- > 0 && !next;) {
      CUgraphNode n = g->nodes[i];
      int ready = !n->done;
      for (size_t d = 0; ready && d < n->ndeps; d++) ready = n->deps[d]->done;
      if (ready) next = n;
    }
    if (!next) return refuse(CUDA_ERROR_INVALID_VALUE, "a graph launch", "the dependencies hold a cycle");
    if (next->enabled) {
      CUresult r = run_node(next);
      if (r != CUDA_SUCCESS) return r;
    }
    next->done = 1;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  NEED_CTX();
  (void)s;
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < ncond; k++) /* the graph's handles start at their defaults */
    if (conds[k].graph == e->from && conds[k].assign_default) conds[k].value = conds[k].dflt;
  return run_graph(e->copy);
}

/* A DOT file of the graph's own nodes (not what child graphs or bodies hold) and its
 * edges, named by type: not the driver's format, which the topology check reads. */
CUresult cuGraphDebugDotPrint(CUgraph g, const char *path, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (!g || !path) return CUDA_ERROR_INVALID_VALUE;
  FILE *f = fopen(path, "w");
  if (!f) return refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphDebugDotPrint", "cannot write %s", path);
  fprintf(f, "digraph fakecuda {\n");
  for (size_t i = 0; i < g->n; i++) {
    CUgraphNode n = g->nodes[i];
    fprintf(f, "  n%zu [label=\"%d%s%s\"];\n", i, (int)n->type, n->func ? " " : "", n->func ? n->func->kernel->name : "");
    for (size_t d = 0; d < n->ndeps; d++) {
      size_t at = 0;
      while (g->nodes[at] != n->deps[d]) at++;
      fprintf(f, "  n%zu -> n%zu%s;\n", at, i, n->dep_data[d].type ? " [label=programmatic]" : "");
    }
  }
  fprintf(f, "}\n");
  return fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- libpgrt's list: every function libpgrt calls is here ----
 *
 * libpgrt loads this library with dlopen (PGRT_LIBCUDA, or libcuda.so.1) and looks each
 * function of runtime/pgrt_driver.h up with dlsym, under the symbol cuda.h names it by
 * (cuMemAlloc_v2): the symbols this file defines, compiled against the same cuda.h.  The
 * table below refers to each of them, so that one libpgrt calls and the double lacks
 * fails its build (-Wl,--no-undefined). */
#include "pgrt_driver.h"

typedef void (*fake_fn)(void);
#define FAKE_LISTED(f) (fake_fn)f,
__attribute__((used)) static const fake_fn fake_listed[] = {PGRT_DRIVER_FUNCS(FAKE_LISTED)};
#undef FAKE_LISTED

/*
 * pgrt_impl.h -- libpgrt's private header: the one CUDA check macro, the context
 * every stage shares, and a section of prototypes per file.  Not installed.
 *
 * libpgrt is split by lifecycle, one file per job, in layers.  A file calls functions
 * of files in lower layers only: never one of its own layer's other files, never one
 * above it (its static helpers are its own).  tests/runtime_layers.py reads the table
 * below and checks every call from one runtime C file to another against it, that every
 * C file of runtime/ is in it, that runtime's #include graph has no cycle, and that no C
 * file of runtime/ is longer than 700 lines (`make check-layers`, part of `make check`).
 *
 *   layer 4  init.c       pgrt_init, pgrt_init_comm and pgrt_destroy: the steps of init
 *            run.c        pgrt_run (pick buckets, patch what moved, launch), the debug and
 *                         statistics calls
 *   layer 3  build.c      graph building: each node's cuGraphAdd*Node, a region's graph, its
 *                         updater's table, a graph per bucket
 *   layer 2  modules.c    modules: loading, NVRTC, module globals, libpgrt's own kernels
 *            params.c     parameter blocks and each node kind's CUDA parameters
 *   layer 1  scalars.c    scalar conversion (pgrt_scalar_convert), dtype sizes
 *            threads.c    a program's one call at a time (its in-use flag), its CUDA context
 *                         made current for a call, what a finished call leaves for the queries
 *            cache.c      cubins NVRTC compiled, on disk
 *            libraries.c  kernels inside installed libraries' fatbins
 *            nccl.c       NCCL, loaded with dlopen
 *            weights.c    safetensors files: weights to the device, tensors in host memory
 *   layer 0  status.c     the error record (pgrt_fail, pgrt_error), the clock
 *            cuda_driver.c the CUDA driver, loaded with dlopen into pgrt_cu (pgrt_driver.h)
 *            shlib.c      which file a library opened by soname is (pgrt.h, "Libraries, opened
 *                         by soname")
 *
 * Headers, included by any file, include only these (none includes a .c file or one
 * of the files above it): pgrt_impl.h -> pgrt.h -> pgrt_relocs.h, pgrt_driver.h; half.h, st_header.h
 * and own_kernels.h include no runtime header.  half.h, st_header.h and pgrt_relocs.h
 * are shared with pgcc (compiler/).
 */
#ifndef PGRT_IMPL_H
#define PGRT_IMPL_H

#include "pgrt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- status.c: errors and the clock ---- */

/* Records the message pgrt_error() returns (per thread); returns s. */
pgrt_status pgrt_fail(pgrt_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* CLOCK_MONOTONIC in ns. */
long long pgrt_mono_ns(void);

/* ---- cuda_driver.c: the CUDA driver (pgrt_driver.h) ---- */

/* Every driver function libpgrt calls, resolved once by pgrt_driver_open: call them as
 * pgrt_cu.cuMemAlloc(...), never by their own names (libpgrt does not link libcuda). */
extern pgrt_driver pgrt_cu;
/* Loads the driver the first time (thread-safe); NULL once it is loaded, else why it is
 * not (the same message every time), for the caller to report as PGRT_ERR_DRIVER.
 * Every entry point that may make the first CUDA call calls it first. */
const char *pgrt_driver_open(void);

/* The one CUDA check: the call, where, the node concerned; sets `st` and jumps to `out`.
 * The call is written pgrt_cu.cuX(...); the message names it cuX(...). */
#define CU(call, what)                                                                                \
  do {                                                                                                \
    CUresult r_ = (call);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                         \
      const char *s_ = "unknown error", *c_ = #call;                                                  \
      pgrt_cu.cuGetErrorString(r_, &s_);                                                              \
      st = pgrt_fail(r_ == CUDA_ERROR_OUT_OF_MEMORY ? PGRT_ERR_MEMORY : PGRT_ERR_CUDA,                \
                     "%s failed: %s (%s:%d, %s)", c_ + (strncmp(c_, "pgrt_cu.", 8) ? 0 : 8), s_,      \
                     __FILE__, __LINE__, (what));                                                     \
      goto out;                                                                                       \
    }                                                                                                 \
  } while (0)

static inline void *pgrt_zalloc(size_t n) { return calloc(n ? n : 1, 1); }

/* ---- shlib.c: libraries opened by soname ---- */

typedef enum {
  PGRT_SHLIB_MAPPED, /* a copy already mapped in the process */
  PGRT_SHLIB_ENV,    /* the path in PGRT_LIB_<NAME> (or the caller's older variable) */
  PGRT_SHLIB_BESIDE, /* beside a mapped library of its family */
  PGRT_SHLIB_SONAME  /* the soname, as the dynamic linker finds it */
} pgrt_shlib_how;
typedef struct {
  void *dl;           /* dlopen's handle; NULL where it failed (why says why) */
  pgrt_shlib_how from;
  char path[4096];    /* what dlopen was given */
  char env[96];       /* the variable that names its path: PGRT_LIB_<NAME>, or the older one used */
  char said[160];      /* where path came from, for messages */
  char why[512];
} pgrt_shlib;
/* Opens the library of this soname with dlopen(path, flags), the path picked as shlib.c
 * says; alias: an older variable that names it too (NULL: none). */
void pgrt_shlib_open(pgrt_shlib *l, const char *soname, const char *alias, int flags);
/* PGRT_LIB_<NAME> for this soname. */
void pgrt_shlib_env(const char *soname, char *env, size_t size);

/* ---- scalars.c: scalar types ---- */

/* The bytes of a value of type t. */
unsigned pgrt_dtype_size(pgrt_dtype t);

/* ---- threads.c: a program from several threads (pgrt.h, "Threads") ---- */

/* Takes the program's in-use flag for this thread: PGRT_ERR_BUSY, naming `call`, where
 * a call is in progress (another thread's, or this thread's own, from a callback);
 * pgrt_ctx_leave gives it back. */
pgrt_status pgrt_ctx_enter(pgrt_ctx *c, const char *call);
void pgrt_ctx_leave(pgrt_ctx *c);
/* Makes the program's CUDA context current in this thread for a call, where it is not;
 * pgrt_ctx_unbind restores what was (nothing, where nothing was switched). */
typedef struct {
  CUcontext prev;
  int switched;
} pgrt_binding;
pgrt_status pgrt_ctx_bind(const pgrt_ctx *c, pgrt_binding *b);
void pgrt_ctx_unbind(const pgrt_binding *b);
/* At the end of a call: its statistics, and (ran: it succeeded) the buckets it ran, for
 * pgrt_last_run and pgrt_last_bucket, which read them under c->done_lock. */
void pgrt_ctx_publish(pgrt_ctx *c, int ran);

/* ---- cache.c: cubins NVRTC compiled, on disk by key (the whole key is checked) ---- */

/* get: 1 and a malloc'd copy on a hit, 0 on a miss or where there is no cache; put:
 * silent where it cannot write. */
int pgrt_cache_get(const void *key, size_t key_len, void **cubin, size_t *size);
void pgrt_cache_put(const void *key, size_t key_len, const void *cubin, size_t size);

/* ---- libraries.c: kernels inside installed libraries ---- */

/* A set of opened libraries and of the fatbins loaded from them, shared by one
 * context's kernels. */
typedef struct pgrt_libset pgrt_libset;
pgrt_status pgrt_library_kernel(pgrt_libset **set, const pgrt_module *m, const pgrt_kernel *k, CUkernel *out);
void pgrt_libset_free(pgrt_libset *set);
/* Loads the fatbins that the program's library kernels were found in at export, on
 * several threads at once (libraries.c says why); pgrt_library_kernel then finds them
 * loaded.  A fatbin that does not load is left to pgrt_library_kernel to report. */
pgrt_status pgrt_library_prefetch(pgrt_libset **set, const pgrt_program *pr);
/* How many fatbins the set has loaded; the most threads that loaded them at once (0:
 * none prefetched); their bytes, as the libraries hold them. */
int pgrt_libset_fatbins(const pgrt_libset *set);
int pgrt_libset_threads(const pgrt_libset *set);
size_t pgrt_libset_bytes(const pgrt_libset *set);

/* ---- nccl.c: NCCL, loaded with dlopen (pgrt.h, "NCCL, loaded at run time") ---- */

/* NCCL's enums travel as ints and its communicator as a pointer: the ABI of the
 * functions below. */
typedef struct {
  void *lib;
  int (*get_unique_id)(pgrt_nccl_id *id);
  int (*comm_init_rank)(void **comm, int nranks, pgrt_nccl_id id, int rank);
  int (*comm_destroy)(void *comm);
  int (*all_reduce)(const void *send, void *recv, size_t count, int dtype, int op, void *comm, CUstream s);
  int (*all_gather)(const void *send, void *recv, size_t count, int dtype, void *comm, CUstream s);
  int (*reduce_scatter)(const void *send, void *recv, size_t count, int dtype, int op, void *comm, CUstream s);
  const char *(*get_error_string)(int result);
  int (*get_version)(int *version);
} pgrt_nccl;
/* Loads NCCL into *n (shlib.c: the copy in the process, PGRT_LIB_NCCL or PGRT_NCCL, else
 * libnccl.so.2) and resolves every function above;
 * PGRT_ERR_NCCL naming the library and dlerror() where it cannot.  No CUDA call. */
pgrt_status pgrt_nccl_load(pgrt_nccl *n);
/* Queues node `node`'s collective on stream s, between send and recv, on comm. */
pgrt_status pgrt_nccl_collective(const pgrt_nccl *n, const pgrt_node *node, CUdeviceptr send, CUdeviceptr recv,
                                 void *comm, CUstream s);

/* ---- weights.c: pgrt_weights_load, pgrt_tensor_read, pgrt_tensors_write (pgrt.h) ---- */

/* ---- the context: what init builds, run patches and launches, destroy frees ---- */

#define PGRT_UPD_SLOTS 64 /* per-call addresses and scalars an updater can carry (own_kernels.h) */
enum { PGRT_BOX_COPY, PGRT_BOX_SET }; /* box_funcs[]: pgrt_copy and pgrt_set */
enum { PGRT_BUCKETS_SWITCH, PGRT_BUCKETS_GRAPHS, PGRT_BUCKETS_EAGER }; /* how a bucket region runs */
#define PGRT_BOX_PARAM_BYTES 48 /* six 8-byte words: pgrt_set's value and elem share the second */

typedef struct { /* one entry of an updater's table, as the updater reads it */
  CUgraphDeviceNode node;
  uint32_t at, size;
  int32_t slot, shift;
  uint64_t offset;
} pgrt_upd_entry;

typedef struct {
  CUgraphNode node;       /* the updater kernel, first in its region's graph */
  CUdeviceptr table;      /* its entries, count of them */
  int count, nodes;       /* entries; kernel nodes they update */
  int enabled;            /* the updater runs in this launch (only after something changed) */
  unsigned char params[16 + 8 * PGRT_UPD_SLOTS]; /* (entries, count, this call's values) */
  void *argv[3];
} pgrt_updater;

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
  CUfunction box_funcs[2];  /* PGRT_BOX_COPY, PGRT_BOX_SET (own_kernels.h: PGRT_OWN_BOX's kernels) */
  char *boxed;              /* per node: a copy or memset built as a kernel (own_kernels.h) */
  CUlibrary rng_lib;        /* pgrt_rng, when the program draws random numbers */
  CUfunction rng_func;
  CUdeviceptr rng;          /* its PGRT_BUF_RNG buffer (0: none) */
  uint64_t rng_seed, rng_offset; /* what the next call writes there (pgrt_rng_set) */
  pgrt_updater *upd;        /* per region; upd[r].count 0: host-side patching */
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
  int *bucket_last;         /* per dim: the bucket the last successful call ran, -1 before any (done_lock) */
  char *bmode;              /* per region: PGRT_BUCKETS_GRAPHS or _EAGER for a bucket region run a graph per
                               bucket (or, where those did not instantiate, its bodies eagerly) */
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
  /* threads (threads.c): */
  _Atomic uintptr_t running; /* 0, or the thread inside pgrt_run or pgrt_destroy (pgrt_ctx_enter) */
  pthread_mutex_t done_lock; /* guards done_stats and bucket_last, which a finished call publishes */
  pgrt_run_stats done_stats; /* the last finished call's statistics (stats: the call in progress) */
  int full_deps;            /* PGRT_PDL=off: every dependency built as a full one */
  pgrt_run_stats stats;
  pgrt_init_stats init_stats;
};

/* ---- modules.c: modules and libpgrt's own kernels ---- */

/* Loads every module of the program into c->libs (CUDA C through NVRTC or the cache),
 * writes its globals, and resolves every kernel into c->funcs (library kernels through
 * libraries.c); times it into c->init_stats. */
pgrt_status pgrt_load_modules(pgrt_ctx *c);
/* Loads libpgrt's own source `own` (own_kernels.h: PGRT_OWN_UPDATER, PGRT_OWN_BOX) into
 * *lib and its kernels' functions into funcs: the cubin the build compiled for this
 * GPU, else compiled now or taken from the cache. */
pgrt_status pgrt_load_own(int own, CUlibrary *lib, CUfunction *funcs, pgrt_init_stats *stats);

/* ---- params.c: parameter blocks and each node kind's CUDA parameters ---- */

/* A relocation writes the low pgrt_reloc_size bytes of its address >> pgrt_reloc_shift. */
uint32_t pgrt_reloc_size(pgrt_reloc_kind k);
int32_t pgrt_reloc_shift(pgrt_reloc_kind k);
/* Writes this call's pointers and scalars (scalars: NULL at init) into kernel node i's
 * parameters; returns whether anything changed. */
int pgrt_fill_params(pgrt_ctx *c, int i, const uint64_t *scalars);
/* Node i's (or n's) parameters as CUDA takes them, from the context's addresses now. */
CUDA_KERNEL_NODE_PARAMS pgrt_kernel_params(const pgrt_ctx *c, int i);
CUDA_MEMCPY3D pgrt_copy_params(const pgrt_ctx *c, const pgrt_node *n);
CUDA_MEMSET_NODE_PARAMS pgrt_set_params(const pgrt_ctx *c, const pgrt_node *n);
CUDA_HOST_NODE_PARAMS pgrt_host_params(const pgrt_ctx *c, const pgrt_node *n);
/* A copy or memset built as pgrt_copy or pgrt_set: its block rewritten, its launch. */
CUDA_KERNEL_NODE_PARAMS pgrt_box_params(const pgrt_ctx *c, int i);
/* The updater's launch: one thread per entry, its arguments in u->params. */
CUDA_KERNEL_NODE_PARAMS pgrt_updater_params(const pgrt_ctx *c, pgrt_updater *u);
/* Whether node n's cluster must be given at launch (its kernel was not compiled with one). */
int pgrt_cluster_attr(const pgrt_ctx *c, const pgrt_node *n);

/* ---- build.c: graphs ---- */

/* Which bucket regions run a graph per bucket (c->bmode, c->unbuilt, c->bucket_of). */
void pgrt_bucket_modes(pgrt_ctx *c);
/* Graph region r: its updater, its nodes, instantiated and uploaded (or, where it does
 * not instantiate, left to run eagerly, with a warning). */
pgrt_status pgrt_build_graph(pgrt_ctx *c, int r);
/* A bucket region run a graph per bucket: each body its own graph. */
pgrt_status pgrt_build_buckets(pgrt_ctx *c, int r);
/* Frees region r's graphs per bucket, if it has them. */
void pgrt_free_buckets(pgrt_ctx *c, int r);

#endif

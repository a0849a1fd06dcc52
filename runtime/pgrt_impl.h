/*
 * pgrt_impl.h -- what libpgrt's own files share: the error record and the one
 * CUDA check macro.  Not installed.
 */
#ifndef PGRT_IMPL_H
#define PGRT_IMPL_H

#include "pgrt.h"

#include <stdlib.h>

/* Records the message pgrt_error() returns; returns s. */
pgrt_status pgrt_fail(pgrt_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one CUDA check: the call, where, the node concerned; sets `st` and jumps to `out`. */
#define CU(call, what)                                                                                \
  do {                                                                                                \
    CUresult r_ = (call);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                         \
      const char *s_ = "unknown error";                                                               \
      cuGetErrorString(r_, &s_);                                                                      \
      st = pgrt_fail(r_ == CUDA_ERROR_OUT_OF_MEMORY ? PGRT_ERR_MEMORY : PGRT_ERR_CUDA,                \
                     "%s failed: %s (%s:%d, %s)", #call, s_, __FILE__, __LINE__, (what));             \
      goto out;                                                                                       \
    }                                                                                                 \
  } while (0)

static inline void *pgrt_zalloc(size_t n) { return calloc(n ? n : 1, 1); }

/* loaders.c: kernels inside installed libraries.  A set of opened libraries and of
 * the fatbins loaded from them, shared by one context's kernels. */
typedef struct pgrt_libset pgrt_libset;
pgrt_status pgrt_library_kernel(pgrt_libset **set, const pgrt_module *m, const pgrt_kernel *k, CUkernel *out);
void pgrt_libset_free(pgrt_libset *set);
/* Loads the fatbins that the program's library kernels were found in at export, on
 * several threads at once (loaders.c says why); pgrt_library_kernel then finds them
 * loaded.  A fatbin that does not load is left to pgrt_library_kernel to report. */
pgrt_status pgrt_library_prefetch(pgrt_libset **set, const pgrt_program *pr);
/* How many fatbins the set has loaded; the most threads that loaded them at once (0:
 * none prefetched); their bytes, as the libraries hold them. */
int pgrt_libset_fatbins(const pgrt_libset *set);
int pgrt_libset_threads(const pgrt_libset *set);
size_t pgrt_libset_bytes(const pgrt_libset *set);
/* cache.c: cubins NVRTC compiled, on disk by key (the whole key is checked).  get: 1
 * and a malloc'd copy on a hit, 0 on a miss or where there is no cache; put: silent
 * where it cannot write. */
int pgrt_cache_get(const void *key, size_t key_len, void **cubin, size_t *size);
void pgrt_cache_put(const void *key, size_t key_len, const void *cubin, size_t size);
/* CLOCK_MONOTONIC in ns. */
long long pgrt_mono_ns(void);

/* nccl.c: NCCL, loaded with dlopen (pgrt.h, "NCCL, loaded at run time").  NCCL's enums
 * travel as ints and its communicator as a pointer: the ABI of the functions below. */
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
/* Loads NCCL into *n (PGRT_NCCL, else libnccl.so.2) and resolves every function above;
 * PGRT_ERR_NCCL naming the library and dlerror() where it cannot.  No CUDA call. */
pgrt_status pgrt_nccl_load(pgrt_nccl *n);
/* Queues node `node`'s collective on stream s, between send and recv, on comm. */
pgrt_status pgrt_nccl_collective(const pgrt_nccl *n, const pgrt_node *node, CUdeviceptr send, CUdeviceptr recv,
                                 void *comm, CUstream s);

#endif

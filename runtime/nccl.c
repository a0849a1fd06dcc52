/*
 * nccl.c -- NCCL for libpgrt, loaded at run time (pgrt.h, "NCCL, loaded at run time").
 *
 * libpgrt neither includes nccl.h nor links libnccl: a program with comms loads it here
 * with dlopen (shlib.c: the copy already in the process, PyTorch's say, else the path in
 * PGRT_LIB_NCCL or PGRT_NCCL, else "libnccl.so.2"), and resolves the few functions it
 * calls by name.  The library is never unloaded: ncclGetUniqueId leaves NCCL's
 * bootstrap thread running in the process that made the id, and a communicator's
 * threads live until it is destroyed, so dlclose could pull code from under them
 * (dlopen counts references: loading it again is cheap).
 */
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

pgrt_status pgrt_nccl_load(pgrt_nccl *n) {
  pgrt_shlib lib; /* the copy already in the process, PGRT_LIB_NCCL or PGRT_NCCL, or the soname (shlib.c) */
  pgrt_shlib_open(&lib, "libnccl.so.2", "PGRT_NCCL", RTLD_NOW | RTLD_LOCAL);
  const char *path = lib.path;
  memset(n, 0, sizeof *n);
  n->lib = lib.dl;
  if (!n->lib)
    return pgrt_fail(PGRT_ERR_NCCL, "NCCL does not load from '%s' (%s; %s): a program with comms needs it; set "
                     "PGRT_LIB_NCCL (or PGRT_NCCL) to the library's path or put libnccl.so.2 where the dynamic linker "
                     "finds it", path, lib.why, lib.said);
  static const struct {
    const char *name;
    size_t offset;
  } syms[] = {
      {"ncclGetUniqueId", offsetof(pgrt_nccl, get_unique_id)},
      {"ncclCommInitRank", offsetof(pgrt_nccl, comm_init_rank)},
      {"ncclCommDestroy", offsetof(pgrt_nccl, comm_destroy)},
      {"ncclAllReduce", offsetof(pgrt_nccl, all_reduce)},
      {"ncclAllGather", offsetof(pgrt_nccl, all_gather)},
      {"ncclReduceScatter", offsetof(pgrt_nccl, reduce_scatter)},
      {"ncclGetErrorString", offsetof(pgrt_nccl, get_error_string)},
      {"ncclGetVersion", offsetof(pgrt_nccl, get_version)},
  };
  for (size_t k = 0; k < sizeof syms / sizeof syms[0]; k++) {
    void *f = dlsym(n->lib, syms[k].name);
    if (!f) {
      const char *why = dlerror();
      return pgrt_fail(PGRT_ERR_NCCL, "NCCL from '%s' has no %s (%s)", path, syms[k].name,
                       why ? why : "no reason given");
    }
    /* a function pointer through its object representation: POSIX's dlsym contract */
    memcpy((char *)n + syms[k].offset, &f, sizeof f);
  }
  return PGRT_OK;
}

pgrt_status pgrt_nccl_unique_id(pgrt_nccl_id *out) {
  if (!out) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_nccl_unique_id: null id");
  pgrt_nccl n;
  pgrt_status st = pgrt_nccl_load(&n);
  if (st != PGRT_OK) return st;
  int r = n.get_unique_id(out);
  if (r != 0) return pgrt_fail(PGRT_ERR_NCCL, "ncclGetUniqueId failed: %s (%d)", n.get_error_string(r), r);
  return PGRT_OK;
}

pgrt_status pgrt_nccl_collective(const pgrt_nccl *n, const pgrt_node *node, CUdeviceptr send, CUdeviceptr recv,
                                 void *comm, CUstream s) {
  const void *sp = (const void *)(uintptr_t)send;
  void *rp = (void *)(uintptr_t)recv;
  int r;
  const char *fn;
  switch (node->coll) {
  case PGRT_COLL_ALLREDUCE:
    fn = "ncclAllReduce";
    r = n->all_reduce(sp, rp, (size_t)node->count, (int)node->nccl_dtype, (int)node->nccl_op, comm, s);
    break;
  case PGRT_COLL_ALLGATHER:
    fn = "ncclAllGather";
    r = n->all_gather(sp, rp, (size_t)node->count, (int)node->nccl_dtype, comm, s);
    break;
  case PGRT_COLL_REDUCESCATTER:
    fn = "ncclReduceScatter";
    r = n->reduce_scatter(sp, rp, (size_t)node->count, (int)node->nccl_dtype, (int)node->nccl_op, comm, s);
    break;
  default: return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': collective kind %d is not one libpgrt knows", node->origin,
                            (int)node->coll);
  }
  if (r != 0)
    return pgrt_fail(PGRT_ERR_NCCL, "%s failed: %s (%d) (node '%s')", fn, n->get_error_string(r), r, node->origin);
  return PGRT_OK;
}

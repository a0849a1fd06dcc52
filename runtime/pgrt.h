/*
 * pgrt.h -- libpgrt, the runtime that pgcc's generated C links against.
 *
 * The generated code describes a launch program as constant tables (modules,
 * kernels with parameter layouts, buffers, nodes, regions) and calls three
 * functions: pgrt_init builds it (loads modules, lays out the arena, creates,
 * instantiates and uploads one CUDA graph per graph region), pgrt_run launches it
 * with this call's buffers and scalars (patching only what changed), pgrt_destroy
 * frees everything.  Buffers bound per call may sit at new addresses on every call:
 * no copies, no re-capture, no re-instantiation.
 *
 * Errors: every function returns a pgrt_status; pgrt_error() says what failed, the
 * CUDA call, file:line and the node concerned.  A failed init frees everything it
 * made.  A graph region whose instantiation fails runs eagerly, with a warning (the
 * environment variable PGRT_FAULT=instantiate forces that, for tests).
 *
 * Patching: a region whose generated table asks for it (device_update) patches its
 * kernel nodes on the device, with one updater kernel at the start of its graph;
 * others, and nodes inside child and conditional bodies, are patched from the host.
 * PGRT_UPDATE=host makes every region patch from the host, PGRT_UPDATE=device every
 * graph region on the device where it can (to compare the two, and to test both).
 *
 * Copies and memsets: in a graph region, a copy whose memory moves from call to call,
 * and every memset, is built as a kernel of libpgrt's own (pgrt_copy, pgrt_set):
 * CUDA patches copy and memset nodes only in some cases, and a memset node costs
 * every launch of its graph host time that a kernel node does not.
 * PGRT_MEMSET=node builds the memsets whose memory stays as memset nodes.
 *
 * libpgrt's own kernels were compiled when libpgrt was built, for every GPU
 * architecture its NVRTC knows (runtime/own_kernels.h); init loads the cubin for its
 * GPU (PGRT_PREBUILT=off: never, as for a GPU the build did not know).  Other CUDA
 * sources (a program's CUDA modules; libpgrt's own kernels where no built cubin
 * serves) are compiled by NVRTC at init, for the GPU at hand, and the cubins kept on
 * disk for the next init (runtime/cache.c): in $PGRT_CACHE, else
 * $XDG_CACHE_HOME/pgrt, else $HOME/.cache/pgrt; PGRT_CACHE=off compiles every time
 * and keeps nothing.
 *
 * Kernels inside installed libraries (cuBLAS, cuDNN, PyTorch's own): init loads the
 * fatbins the program names on up to 8 threads at once, each read in place from the
 * library's mapped file (runtime/libraries.c); PGRT_LIBLOAD=serial loads them one by
 * one, PGRT_LIBLOAD=serial,copy also lets the driver copy each first (how libpgrt did
 * it before; bench/zoo_timing.py compares the three).
 *
 * Libraries, opened by soname: the installed libraries whose fatbins hold a program's
 * kernels (a LIBRARY module's soname), NCCL (libnccl.so.2) and NVRTC (libnvrtc.so.13,
 * for CUDA 13; PGRT_LIB_NVRTC).  (The CUDA driver is not one of them: see "The CUDA
 * driver, loaded at run time", below.)  In a process that runs
 * PyTorch beside libpgrt, PyTorch has its own copies, from its pip wheels
 * (site-packages/nvidia/NAME/lib), and a second copy of a library in one process breaks
 * it (cuDNN: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH).  So libpgrt opens, first match
 * wins: (1) the copy already mapped in the process, a loaded object whose file name or
 * DT_SONAME is the soname; (2) the path in the environment variable PGRT_LIB_<NAME>, NAME
 * being the soname without "lib" and from ".so" on, upper case, other characters '_'
 * (libcublasLt.so.13: PGRT_LIB_CUBLASLT; libcudnn_engines_precompiled.so.9:
 * PGRT_LIB_CUDNN_ENGINES_PRECOMPILED; NCCL: PGRT_LIB_NCCL, else PGRT_NCCL); (3) the file
 * of that name in the directory of a mapped library of its family (libcudnn.so.9's
 * directory for libcudnn_engines_precompiled.so.9, libcublas.so.12's for
 * libcublasLt.so.12: where PyTorch's copy would come from); (4) the soname, as the
 * dynamic linker finds it.  So a program loaded after PyTorch uses PyTorch's libraries;
 * one loaded before it, in a process that will load PyTorch's copies from its wheels,
 * should name them with PGRT_LIB_<NAME> (or import torch first).  pgrt_error() says which
 * path failed and where it came from.
 *
 * Host reads: a program may copy device values into host buffers (pinned memory that
 * init allocates), synchronize, and go on with kernels that take what it read as
 * scalars (`.item()` in the PyTorch program it came from).  After every SYNC node
 * libpgrt reads those scalars anew (from the host buffers, or from the caller's
 * callbacks), and the nodes that take them are patched from the host before they run
 * (never by the updater: it runs before the synchronization).  A GUARD node compares
 * a host buffer with the bytes the program was exported with and stops the call with
 * PGRT_ERR_GUARD when they differ.
 *
 * Shape buckets: a program exported at several sizes of a dim (a batch size, say) holds a
 * variant per size, a *bucket*, as the bodies of one CUDA switch node; buckets never run
 * together, so they share the arena.  pgrt_run takes one size per dim and, before it
 * queues anything, picks each dim's bucket: the smallest value that holds the size (a
 * `pad` dim: the caller's inputs are padded to it) or the value equal to it (`exact`);
 * none is PGRT_ERR_BUCKET.  The bucket's index goes into the program's bucket scalars,
 * which the kernel that sets the switch's condition takes: patched like any scalar that
 * changed.  A region that holds only the switch and that kernel may instead run as one
 * graph per bucket: each body is built, instantiated and uploaded as a graph of its own
 * at init, and a call launches the one its size picks, patching only that graph's nodes
 * (the others when they next run).  The generated table chooses (bucket_graphs, the cost
 * model's choice); PGRT_BUCKETS=switch or =graphs overrides it for every such region.
 * Where a bucket's graph does not instantiate, the region runs the bucket's nodes
 * eagerly, with a warning (a switch has no eager form).
 */
#ifndef PGRT_H
#define PGRT_H

#include "pgrt_driver.h"
#include "pgrt_relocs.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PGRT_VERSION 12 /* the table layout below; generated code checks it (5: relocation kinds; 7: host
                           buffers, read scalars, guards, pgrt_run's callbacks; 8: dims and their
                           buckets, pgrt_run's sizes; 9: comms and NCCL collectives; 10: module
                           globals; 11: dependency kinds; 12: the random-number state) */

typedef enum {
  PGRT_OK = 0,
  PGRT_ERR_ARGUMENT, /* a null pointer, a missing buffer, a size that does not fit */
  PGRT_ERR_CUDA,     /* a CUDA call failed */
  PGRT_ERR_MODULE,   /* a module did not load or compile, or a kernel is not in it, or a global the
                        program writes is not in it or of another size */
  PGRT_ERR_MEMORY,   /* out of host or device memory */
  PGRT_ERR_VERSION,  /* the generated code is for another libpgrt */
  PGRT_ERR_GUARD,    /* a guard found that a value read on the host differs from the one the program
                        was exported with: the program took another path, and this call stopped at
                        the guard; its outputs are not valid (pgrt_error() names the guard) */
  PGRT_ERR_BUCKET,   /* a size fits no bucket of its dim (below 1, past a pad dim's largest value, or
                        none of an exact dim's values): nothing ran (pgrt_error() names the dim) */
  PGRT_ERR_NCCL,     /* NCCL did not load (the copy in the process, PGRT_LIB_NCCL or PGRT_NCCL, else libnccl.so.2:
                        pgrt_error() names the library and gives dlerror()), lacks a function libpgrt needs,
                        or an NCCL call failed */
  PGRT_ERR_DRIVER,   /* the CUDA driver did not load (PGRT_LIBCUDA, else libcuda.so.1: pgrt_error() gives
                        dlerror()), or lacks a function libpgrt needs */
  PGRT_ERR_BUSY,     /* pgrt_run on a program already inside a call (another thread's, or its own callback's):
                        refused before anything was touched; that call goes on ("Threads", below) */
} pgrt_status;

/* ---- Threads ----
 *
 * Several programs (contexts) run on several threads at once: each pgrt_ctx is
 * independent, and what they share is thread-safe -- the CUDA driver's and NVRTC's
 * tables (loaded once, pthread_once), the cache of compiled cubins (whole files, written
 * under names of their own and renamed), the installed libraries each context opens
 * (the dynamic linker's reference counts), and pgrt_error(), which is per thread: it
 * says what the last failure of a call made on this thread was, never another thread's.
 * pgrt_init and pgrt_init_comm may run on several threads at once too, each on its own
 * thread's current CUDA context.
 *
 * One program takes one call at a time.  pgrt_run on a program that is inside a call
 * already -- on another thread, or from that call's own callback scalar or host
 * function -- returns PGRT_ERR_BUSY at once ("pgrt_run: program 'NAME' is already
 * running on another thread: one program takes one call at a time; give each thread
 * its own program, or wait for that call to return"), having read and written nothing of
 * the program; the call in progress goes on undisturbed, and the program serves the
 * next call as before.  An in-use flag, taken at entry with one atomic
 * compare-exchange and given back at exit, decides: never a race, never a wait.
 * pgrt_destroy of a program inside a call is refused the same way: it frees nothing,
 * leaves *ctx as it is, and says so on stderr (and in pgrt_error()).  Destroy it after
 * the call returns; a call made after pgrt_destroy (on any thread) uses freed memory,
 * as in one thread.
 *
 * One program may be used from different threads one after another: the calls must
 * be ordered by the caller (a call that starts after the other returned, as a mutex, a
 * join or a queue orders them), or the later one is refused as above.  pgrt_run,
 * pgrt_destroy and the debug calls make the CUDA context the program was built on
 * current in the calling thread for their length, where it is not (a thread PyTorch or
 * the caller started may have none), and give the thread back what it had; the caller
 * need not.  pgrt_init builds on the calling thread's current context, and
 * pgrt_weights_load needs one too.  Calls share the program's arena, one after another
 * on the GPU: successive calls from different threads should use the same stream, or
 * streams the caller orders, as one thread's would.  A program's callback scalars are
 * called on the thread that called pgrt_run, during the call; its host functions as
 * CUDA calls host functions (on a driver thread, on a GPU).
 *
 * The queries read what init built or what the last finished call left (published
 * whole when a call ends): pgrt_last_run, pgrt_last_bucket, pgrt_last_init and
 * pgrt_debug_node may be called from any thread, while another runs the program, and
 * answer for the last call that finished.  pgrt_debug_dot and pgrt_debug_edges read a
 * region's CUDA graph, which calls never touch (they patch its executable), but CUDA
 * does not synchronize two threads on one graph: not two of those at once on one program.
 *
 * libpgrt reads its environment variables (PGRT_*) with getenv during init and calls;
 * a program that changes its environment (setenv) while another thread calls libpgrt
 * races, as with any library that reads it. */

/* ---- The CUDA driver, loaded at run time ----
 *
 * libpgrt does not link libcuda (a program built against it needs neither the driver
 * nor its stub to link, and starts without them): it loads the driver with dlopen the
 * first time it needs it -- pgrt_init, pgrt_init_comm, pgrt_weights_load (NAME_load_W),
 * pgrt_cuda -- once per process: the path in the environment variable PGRT_LIBCUDA if
 * set, else "libcuda.so.1" as the dynamic linker finds it (the copy already in the
 * process, if one is).  Every function it calls (pgrt_driver.h) is resolved then under
 * the symbol cuda.h's names would have linked (cuMemAlloc: cuMemAlloc_v2).  Where the driver does not load, or lacks one of them, that
 * call fails with PGRT_ERR_DRIVER: "the CUDA driver (libcuda.so.1) could not be loaded:
 * <dlerror()>".  Functions that need no GPU (pgrt_tensor_read, pgrt_tensors_write,
 * pgrt_scalar_convert, NAME_info) never load it. */

/* The driver's functions as libpgrt loaded them, for a program that calls the driver
 * itself and so need not link libcuda either (examples/deploy: drv->cuInit(0), ...).
 * Loads the driver if it is not yet; PGRT_ERR_DRIVER if it does not load. */
pgrt_status pgrt_cuda(const pgrt_driver **drv);

/* ---- NCCL, loaded at run time ----
 *
 * A program with comms runs as one rank of each comm; its collectives call NCCL.
 * libpgrt does not link NCCL: it loads it with dlopen when a program with comms is
 * initialized (or pgrt_nccl_unique_id is called) -- the copy already in the process, else
 * the path in the environment variable PGRT_LIB_NCCL or PGRT_NCCL if set, else
 * "libnccl.so.2" as the dynamic linker finds it ("Libraries, opened by soname", above) --
 * and never unloads it (NCCL's threads may outlive a context).  A program without comms
 * never touches NCCL.  The types and values below are NCCL's own (nccl.h), declared
 * here so that neither libpgrt nor generated code needs nccl.h to build; a CPU test
 * compares them with nccl.h. */
typedef struct {
  char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} pgrt_nccl_id;
typedef enum { /* ncclDataType_t */
  PGRT_NCCL_INT8 = 0, PGRT_NCCL_UINT8 = 1, PGRT_NCCL_INT32 = 2, PGRT_NCCL_UINT32 = 3, PGRT_NCCL_INT64 = 4,
  PGRT_NCCL_UINT64 = 5, PGRT_NCCL_FLOAT16 = 6, PGRT_NCCL_FLOAT32 = 7, PGRT_NCCL_FLOAT64 = 8, PGRT_NCCL_BFLOAT16 = 9
} pgrt_nccl_dtype;
typedef enum { /* ncclRedOp_t */
  PGRT_NCCL_SUM = 0, PGRT_NCCL_PROD = 1, PGRT_NCCL_MAX = 2, PGRT_NCCL_MIN = 3, PGRT_NCCL_AVG = 4
} pgrt_nccl_op;

/* Makes the id that every rank's init takes (ncclGetUniqueId): rank 0 calls it and shares
 * the 128 bytes with the other ranks (through MPI, a file, a socket, or a fork, as NCCL's
 * own examples do).  Touches no CUDA itself.  PGRT_ERR_NCCL when NCCL does not load or fails. */
pgrt_status pgrt_nccl_unique_id(pgrt_nccl_id *out);

/* ---- the tables generated code fills (all constant) ---- */

typedef enum { PGRT_MOD_CUBIN, PGRT_MOD_FATBIN, PGRT_MOD_PTX, PGRT_MOD_CUDA, PGRT_MOD_LIBRARY } pgrt_module_kind;

/* A module global: a data object of a module (a __device__ or __constant__ variable)
 * that the library which loaded the module wrote after loading it, as cuDNN does with
 * its kernels' configuration.  pgrt_init writes `bytes` over it right after the module
 * loads (cuLibraryGetGlobal, then cuMemcpyHtoD), before anything runs; a global the
 * module lacks, or whose size there is not `size`, fails init with PGRT_ERR_MODULE. */
typedef struct {
  const char *name;  /* its symbol in the module */
  const void *bytes;
  size_t size;
} pgrt_global;

/* A LIBRARY module is an installed shared library (cuBLAS, PyTorch's CUDA library)
 * whose kernels are loaded from its own .nv_fatbin section: libpgrt finds the file
 * the way the dynamic linker does (dlopen of the soname) and loads the fatbin that
 * holds each kernel. */
typedef struct {
  const char *name;
  pgrt_module_kind kind;
  const void *image; /* the module's bytes (CUDA C and PTX: NUL-terminated text) */
  size_t size;
  const char *library; /* LIBRARY: its soname, e.g. "libcublas.so.13" */
  const pgrt_global *globals; /* not LIBRARY: written after the module loads, in order */
  int global_count;
} pgrt_module;

typedef struct {
  const char *name;
  const char *symbol; /* its name in the module (mangled) */
  int module;         /* index into modules; -1: found by symbol in any of them */
  uint32_t param_bytes;
  uint64_t entry;     /* LIBRARY modules: 1 + the offset, in the library's .nv_fatbin section,
                         of the fatbin that held the kernel when it was exported (0: unknown).
                         A hint: where it misses (another build of the library), libpgrt
                         searches the whole section. */
} pgrt_kernel;

typedef enum {
  PGRT_BUF_BOUND,  /* the caller passes its address on every call (inputs, outputs) */
  PGRT_BUF_WEIGHT, /* the caller passes its address at init */
  PGRT_BUF_ARENA,  /* an intermediate at `offset` in the arena */
  PGRT_BUF_HOST,   /* pinned host memory libpgrt allocates at init (zeroed) and frees at destroy;
                      copies reach it by unified addressing, the host reads it after a SYNC */
  PGRT_BUF_RNG,    /* the random-number state, 16 bytes of device memory libpgrt allocates at init:
                      the Philox seed and offset (u64 each), written at the start of every call
                      (pgrt_rng_set); at most one, in a program whose rng_increment is not 0 */
} pgrt_buffer_kind;

typedef struct {
  const char *name;
  pgrt_buffer_kind kind;
  uint64_t size;
  uint64_t offset; /* PGRT_BUF_ARENA */
  int slot;        /* PGRT_BUF_BOUND, PGRT_BUF_WEIGHT: index into the caller's address array;
                      PGRT_BUF_HOST: index into the host buffers' array (.graph order) */
} pgrt_buffer;

/* Scalar types, in pgcc's order (pgcc.h's PG_TYPES): a read scalar's and its host buffer's. */
typedef enum {
  PGRT_DT_I8, PGRT_DT_I16, PGRT_DT_I32, PGRT_DT_I64, PGRT_DT_U8, PGRT_DT_U16, PGRT_DT_U32, PGRT_DT_U64,
  PGRT_DT_F16, PGRT_DT_BF16, PGRT_DT_F32, PGRT_DT_F64, PGRT_DT_BOOL, PGRT_DT_PTR
} pgrt_dtype;

/* A scalar read during a call, after each SYNC node: the first element of host buffer
 * `buffer` (a PGRT_BUF_HOST), of dtype `from`, converted to `type` as
 * pgrt_scalar_convert says; or, where buffer is -1, what the caller's callback in slot
 * `callback` of pgrt_run's `callbacks` gives.  Read scalar k takes slot scalar_slots + k
 * in the scalar values that pgrt_scalar_ref.slot indexes. */
typedef struct {
  const char *name;
  pgrt_dtype type;
  int buffer;      /* -1: a callback scalar */
  pgrt_dtype from; /* the host buffer's dtype */
  int callback;    /* -1: read from the host buffer */
} pgrt_read_scalar;

/* What of an address a relocation writes: pgrt_relocs.h's table (pgcc's too), in its
 * order: PGRT_RELOC_ABS64 all 8 bytes; PGRT_RELOC_LO32 its low 4 bytes; PGRT_RELOC_HI32
 * its high 4 bytes. */
typedef enum {
#define PGRT_RELOC_ENUM_(e, name, size, shift) PGRT_RELOC_##e,
  PG_RELOC_KINDS(PGRT_RELOC_ENUM_)
#undef PGRT_RELOC_ENUM_
} pgrt_reloc_kind;

/* A pointer written into a node's parameters at byte `at`: the address
 * buffer + offset, truncated as `kind` says. */
typedef struct {
  uint32_t at;
  int buffer;
  uint64_t offset;
  pgrt_reloc_kind kind;
} pgrt_reloc;

/* A scalar written into a node's parameters from the scalar values, at `at`. */
typedef struct {
  uint32_t at;
  uint32_t size;
  int slot; /* index into the scalar values (each 8 bytes, low bytes used): the caller's scalar
               array (0 .. scalar_slots), then the read scalars (reads[slot - scalar_slots]), then
               the bucket scalars (bucket_dims[slot - scalar_slots - read_count]) */
} pgrt_scalar_ref;

/* A dim: a size that varies per call, and its buckets, one per value (strictly increasing,
 * each at least 1).  pad: a size between values runs the smallest bucket that holds it;
 * else only the values run. */
typedef struct {
  const char *name;
  int n_values;
  const int64_t *values;
  int pad;
} pgrt_dim;

/* A conditional handle written into a node's parameters at `at` (a kernel that
 * sets the condition with cudaGraphSetConditional). */
typedef struct {
  uint32_t at;
  int condition;
} pgrt_cond_ref;

/* A conditional node's handle; libpgrt creates it on the node's graph, and every
 * launch of that graph starts it at default_value. */
typedef struct {
  const char *name;
  unsigned default_value;
} pgrt_condition;

typedef enum { PGRT_COND_IF, PGRT_COND_WHILE, PGRT_COND_SWITCH } pgrt_cond_type;

/* The nodes of a child graph or of a conditional body: nodes[first .. first+count),
 * in execution order; their deps are indices of nodes of the same body. */
typedef struct {
  int first, count;
} pgrt_body;

/* SYNC (eager regions only): the host waits for the stream, e.g. before reading a
 * result on the CPU; then libpgrt reads the read scalars anew.  GUARD (eager regions
 * only): host buffer `buffer`'s first expect_len bytes must be `expect`, or the call
 * stops with PGRT_ERR_GUARD. */
/* EVENT_RECORD, EVENT_WAIT: on event `event` (libpgrt creates event_count of them). */
typedef enum {
  PGRT_NODE_KERNEL,
  PGRT_NODE_MEMCPY,
  PGRT_NODE_MEMSET,
  PGRT_NODE_EMPTY,
  PGRT_NODE_SYNC,
  PGRT_NODE_EVENT_RECORD,
  PGRT_NODE_EVENT_WAIT,
  PGRT_NODE_CHILD,       /* runs body `body` */
  PGRT_NODE_CONDITIONAL, /* runs bodies body .. body+body_count-1 as `condition` says */
  PGRT_NODE_HOST,        /* calls the caller's host function in slot `host` (bound per call) */
  PGRT_NODE_GUARD,       /* checks host buffer `buffer` against `expect` */
  PGRT_NODE_COLLECTIVE,  /* an NCCL collective on comm `comm`: in a graph, captured at init into a child
                            graph; eagerly, called on the stream */
} pgrt_node_kind;

/* A comm: the program runs as one rank of `ranks`; libpgrt makes one NCCL communicator per
 * comm per context. */
typedef struct {
  const char *name;
  int ranks;
} pgrt_comm;
typedef enum { PGRT_COLL_ALLREDUCE, PGRT_COLL_ALLGATHER, PGRT_COLL_REDUCESCATTER } pgrt_coll_kind;

/* A host function and its user data, as cuLaunchHostFunc takes them. */
typedef struct {
  CUhostFn fn;
  void *data;
} pgrt_host_fn;

/* A callback scalar's function and its user data.  libpgrt calls fn after each SYNC node
 * of a call (on the calling thread, inside pgrt_run), with `data`, and `host`: the
 * addresses of the program's host buffers in .graph order (the generated header's
 * NAME_HOST_X indices), whose contents the synchronization has just made current.
 * fn writes the scalar's bits into the low bytes of *value (little-endian: a float's
 * four bytes are the low four; *value is 0 when fn is called) and returns 0; a nonzero
 * return fails pgrt_run with PGRT_ERR_ARGUMENT, naming the scalar. */
typedef int (*pgrt_scalar_cb)(void *data, const void *const *host, uint64_t *value);
typedef struct {
  pgrt_scalar_cb fn;
  void *data;
} pgrt_scalar_fn;

typedef struct {
  pgrt_node_kind kind;
  const char *origin; /* for messages: the node's name in the .graph */
  /* kernel */
  int kernel;
  unsigned grid[3], block[3], smem;
  unsigned cluster[3]; /* thread block cluster dimensions; all 0: none given */
  int priority;        /* CUDA's launch priority (lower runs first); 0: none given.  A region's
                          graph with one is instantiated to honour them */
  int caller_args; /* 1: the caller gives this node's arguments at init (DOT input: the
                      layout is unknown); params, offsets, relocs and scalars unused */
  const unsigned char *params; /* the constant bytes of the parameter block */
  const uint32_t *param_offsets; /* offset of each parameter; param_count of them */
  int param_count;
  const pgrt_reloc *relocs;
  int reloc_count;
  const pgrt_scalar_ref *scalars;
  int scalar_count;
  const pgrt_cond_ref *cond_refs;
  int cond_ref_count;
  /* memcpy: src -> dst (either may be pinned host memory: unified addressing), a
   * box of `bytes` per row, `height` rows, `depth` slices; rows src_pitch and
   * dst_pitch bytes apart, slices height rows apart.  memset: dst, value, elem,
   * `bytes` per row, `height` rows dst_pitch apart.  0 for height or depth is 1; 0
   * for a pitch is `bytes` (rows back to back). */
  int src, dst;
  uint64_t src_offset, dst_offset, bytes;
  uint64_t height, depth, src_pitch, dst_pitch;
  uint32_t value, elem;
  /* host */
  int host;
  /* guard: buffers[buffer] (a host buffer) must start with expect[0 .. expect_len);
   * reason says what the value chose, for the message */
  int buffer;
  const unsigned char *expect;
  uint32_t expect_len;
  const char *reason;
  /* event record / wait */
  int event;
  /* collective: coll on comms[comm], from buffers[src] + src_offset (send) to buffers[dst] +
   * dst_offset (recv), count elements per rank as NCCL counts them, of nccl_dtype; nccl_op for
   * AllReduce and ReduceScatter.  Its buffers have fixed addresses (weights, the arena). */
  pgrt_coll_kind coll;
  int comm;
  uint64_t count;
  pgrt_nccl_dtype nccl_dtype;
  pgrt_nccl_op nccl_op;
  /* child, conditional: bodies[body .. body+body_count); conditional: its type and
   * its handle, conditions[condition] */
  int body, body_count;
  pgrt_cond_type cond_type;
  int condition;
  /* dependencies: indices of nodes of the same region (or body); dep_kinds, where not NULL,
   * the pgrt_dep_kind of each (a kernel's programmatic dependencies on kernels) */
  const int *deps;
  int dep_count;
  const unsigned char *dep_kinds;
} pgrt_node;

/* What a node waits for of a node it depends on, in a graph (CUDA's edge data).  A
 * programmatic dependency lets a kernel start while the one it waits for still runs:
 * the kernel itself waits, with griddepcontrol.wait (cudaGridDependencySynchronize),
 * for that one's completion and writes; the other may let it start early with
 * griddepcontrol.launch_dependents, else it starts as that one's blocks end
 * (programmatic dependent launch; only kernels built for it, as Inductor's Triton kernels
 * with torch._inductor.config.triton.enable_pdl, wait so, and only they get such edges).
 * Eager regions launch every node after the one before it has finished.  PGRT_PDL=off
 * makes every dependency a full one (benchmarks compare the two). */
typedef enum {
  PGRT_DEP_FULL = 0,         /* the node's completion, its writes visible */
  PGRT_DEP_PROGRAMMATIC = 1, /* a kernel's trigger (CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC) */
  PGRT_DEP_LAUNCH_ORDER = 2  /* every block of a kernel started (CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER) */
} pgrt_dep_kind;

typedef struct {
  int graph; /* 1: launch as a CUDA graph; 0: eagerly */
  int first, count; /* nodes[first .. first+count), in execution order */
  int device_update; /* 1: its kernel nodes that change per call are patched on the device,
                        by one updater kernel at the start of the graph (else host-side) */
  int bucket_dim;    /* 1 + the dim whose bucket switch the region holds, alone with the kernel that
                        sets its condition (first, then the switch): it may run as one graph per
                        bucket instead, the host launching the one this call's size picks (no setter,
                        no conditional node); 0: no such region */
  int bucket_graphs; /* 1: run it so by default (the cost model's choice); PGRT_BUCKETS=switch|graphs
                        overrides */
} pgrt_region;

/* The node table holds the root graph's nodes region by region, then the nodes of
 * every body, each body's nodes together; a body comes after the node that owns it. */

typedef struct {
  int version; /* PGRT_VERSION */
  const char *name;
  const pgrt_module *modules;
  int module_count;
  const pgrt_kernel *kernels;
  int kernel_count;
  const pgrt_buffer *buffers;
  int buffer_count;
  const pgrt_node *nodes;
  int node_count;
  const pgrt_region *regions;
  int region_count;
  const pgrt_body *bodies;
  int body_count;
  const pgrt_condition *conditions;
  int condition_count;
  const pgrt_read_scalar *reads; /* read and callback scalars */
  int read_count;
  int callback_slots;   /* callback scalars the caller binds on every call */
  uint64_t arena_bytes;
  int bound_slots, weight_slots, scalar_slots;
  int caller_arg_nodes; /* kernel nodes whose arguments the caller gives at init */
  int host_slots;       /* host functions the caller binds on every call */
  int event_count;
  const char *arch; /* "sm_90": for NVRTC */
  const pgrt_dim *dims; /* pgrt_run's sizes give one size per dim, in this order */
  int dim_count;
  const int *bucket_dims; /* per bucket scalar: the dim whose bucket's index it holds, set by
                             pgrt_run (the scalar values' slots after the read scalars') */
  int bucket_count;
  const pgrt_comm *comms; /* pgrt_init_comm makes one NCCL communicator per comm */
  int comm_count;
  uint64_t rng_increment; /* a program that draws random numbers (its one PGRT_BUF_RNG buffer): how far
                             a call advances the Philox offset; 0: it draws none */
} pgrt_program;

/* ---- weights from a safetensors file ---- */

/* Where one weight's bytes are in its file (pgcc read the header). */
typedef struct {
  uint64_t offset, size;
} pgrt_tensor;

typedef struct {
  uint64_t header_len, file_size; /* the file pgcc read: libpgrt checks it has not changed shape */
  const pgrt_tensor *tensors;
  int count;
} pgrt_weights_file;

/* Reads every tensor of `file` from `path` into one new device allocation, *block
 * (each tensor 256-byte aligned; the caller frees it with cuMemFree), and sets
 * addrs[i] to tensor i's address.  Needs a current CUDA context. */
pgrt_status pgrt_weights_load(const char *path, const pgrt_weights_file *file, CUdeviceptr *block,
                              CUdeviceptr *addrs);

/* ---- tensors of a safetensors file in host memory (inputs, expected outputs) ---- */

#define PGRT_MAX_DIMS 8

/* One tensor: its name, dtype as safetensors spells it ("F32", "BF16", "I64",
 * "BOOL"...; pgcc's dtype names are the same letters in lower case), shape and
 * bytes. */
typedef struct {
  const char *name;
  char dtype[16];
  int ndim;
  int64_t shape[PGRT_MAX_DIMS];
  uint64_t size; /* bytes */
  void *data;
} pgrt_host_tensor;

/* Reads tensor `name` of the safetensors file at `path` into *out, its bytes into
 * new host memory, out->data (malloc'd: pgrt_host_tensor_free frees it); out->name
 * points at `name`.  PGRT_ERR_ARGUMENT when the file cannot be read, is not a
 * safetensors file, or holds no tensor of that name (pgrt_error() says which);
 * PGRT_ERR_MEMORY.  Needs no GPU. */
pgrt_status pgrt_tensor_read(const char *path, const char *name, pgrt_host_tensor *out);

/* Frees t->data and sets it to NULL. */
void pgrt_host_tensor_free(pgrt_host_tensor *t);

/* Writes `count` tensors as one safetensors file at `path` (replacing it), in that
 * order; names must differ and be JSON-safe (no '"', '\\' or control characters).
 * PGRT_ERR_ARGUMENT for a bad tensor or a failed write.  Needs no GPU. */
pgrt_status pgrt_tensors_write(const char *path, const pgrt_host_tensor *tensors, int count);

/* ---- what a generated program's arguments are: NAME_info() ---- */

/* A field of NAME_args or NAME_weights.  INPUT buffers are read, OUTPUT written,
 * INOUT bound per call without a known direction (role 'unknown' in the .graph:
 * read, written or both); SCALAR a per-call scalar; WEIGHT a NAME_weights field;
 * HOST_FN a host node's pgrt_host_fn; SCALAR_FN a callback scalar's pgrt_scalar_fn; SIZE
 * a dim's size for this call (an int64_t named after the dim).  A scalar has ndim 0
 * (shape NULL); a host function has dtype "", ndim -1 and the size of a pgrt_host_fn; a
 * callback scalar has its scalar's dtype, ndim 0 and the size of a pgrt_scalar_fn; a size
 * has dtype "i64", ndim 0 and size 8.  A buffer whose shape names dims has shape_dims,
 * its size and shape at the dims' largest values.  A table with no fields is NULL (n_args
 * or n_weights 0). */
typedef enum {
  PGRT_FIELD_INPUT, PGRT_FIELD_OUTPUT, PGRT_FIELD_INOUT, PGRT_FIELD_SCALAR, PGRT_FIELD_WEIGHT, PGRT_FIELD_HOST_FN,
  PGRT_FIELD_SCALAR_FN, PGRT_FIELD_SIZE
} pgrt_field_role;
typedef struct {
  const char *name;     /* the field's name in NAME_args or NAME_weights */
  pgrt_field_role role;
  const char *dtype;    /* "f32", "bf16", ... as in the .graph; "" where unknown */
  int ndim;             /* -1 where the shape is unknown */
  const int64_t *shape; /* ndim entries */
  size_t offset;        /* offsetof(NAME_args or NAME_weights, field) */
  size_t size;          /* bytes of the buffer, or of the scalar */
  const char *tensor;   /* a weight's tensor name in its safetensors file; NULL otherwise */
  const int *shape_dims; /* ndim entries: -1 a fixed size, else the index in info.dims of the dim this
                            entry is (shape[i] then holds its largest value); NULL when no entry is a dim */
} pgrt_field;
typedef struct {
  const char *name;          /* the program's name (NAME) */
  size_t args_size;          /* sizeof(NAME_args) */
  int n_args;
  const pgrt_field *args;
  size_t weights_size;       /* sizeof(NAME_weights) */
  int n_weights;
  const pgrt_field *weights;
  uint64_t arena_bytes;
  int n_dims;                /* the program's dims, .graph order (NAME_run's sizes, fields of role SIZE) */
  const pgrt_dim *dims;      /* NULL when n_dims is 0 */
  int n_comms;               /* the program's comms (NAME_init's id and rank are for them) */
  const pgrt_comm *comms;    /* NULL when n_comms is 0 */
  uint64_t rng_increment;    /* not 0: the program draws random numbers, and each call advances the
                                Philox offset by this much (pgrt_rng_set) */
} pgrt_program_info;

/* ---- a program's weights saved and restored: a training step's state, a checkpoint ---- */

/* Writes every weight of a program (info: NAME_info(); weights: its NAME_weights, the
 * device buffers the program updates in place) as one safetensors file at `path`, each
 * under its tensor's name in the export's weights file (a field without one, under the
 * field's name), with its dtype and shape (bytes, U8, where the .graph gives none):
 * a file pgcc.load's weights and pgrt_weights_restore read.  Waits for the context's
 * work first (cuCtxSynchronize); the file is written whole, then renamed into place.
 * PGRT_ERR_ARGUMENT for a null pointer or a failed write; PGRT_ERR_CUDA. */
pgrt_status pgrt_weights_save(const char *path, const pgrt_program_info *info, const void *weights);

/* Reads every weight of a program from the safetensors file at `path` (by the names
 * pgrt_weights_save writes) into the device buffers of `weights`.  Every tensor is read
 * and checked first -- present, of the weight's size and dtype -- so a file that does not
 * fit changes nothing (PGRT_ERR_ARGUMENT, pgrt_error() says which); then copied, after
 * the context's work.  Between calls, never during one. */
pgrt_status pgrt_weights_restore(const char *path, const pgrt_program_info *info, const void *weights);

/* ---- the calls ---- */

typedef struct pgrt_ctx pgrt_ctx;

/* Builds the program on the current CUDA context.  weights: weight_slots device
 * addresses.  kernel_args: for each node with caller_args, in node order, its
 * kernelParams array as cuLaunchKernel takes it (kept by the caller until destroy);
 * NULL when there are none.  arena: caller-owned device memory of arena_bytes, or 0
 * to let libpgrt allocate it. */
pgrt_status pgrt_init(pgrt_ctx **ctx, const pgrt_program *prog, const CUdeviceptr *weights, void **const *kernel_args,
                      CUdeviceptr arena);
/* pgrt_init for a program with comms (pgrt_init refuses one): this process is rank `rank` of
 * every comm, which must be below each comm's ranks; `id` is what rank 0's
 * pgrt_nccl_unique_id made, the same for every rank.  NCCL is loaded first, before any CUDA
 * call (PGRT_ERR_NCCL where it does not load); then, on the current context's device, one
 * communicator per comm (ncclCommInitRank, which waits for every rank to join), destroyed
 * by pgrt_destroy.  With no comms, id and rank are not looked at. */
pgrt_status pgrt_init_comm(pgrt_ctx **ctx, const pgrt_program *prog, const CUdeviceptr *weights,
                           void **const *kernel_args, CUdeviceptr arena, const pgrt_nccl_id *id, int rank);

/* One call: bound holds bound_slots device addresses, scalars scalar_slots values,
 * hosts host_slots host functions, callbacks callback_slots callback scalars' functions,
 * sizes dim_count sizes, one per dim in the program's order (each NULL when there are
 * none; callbacks are called only during this call).  PGRT_ERR_BUCKET: a size fits no
 * bucket of its dim, and nothing ran.  PGRT_ERR_GUARD: a guard failed, and the call
 * stopped there.  PGRT_ERR_BUSY: the program is inside another call, which goes on, and
 * this one did nothing ("Threads").  Any thread may call it, one call at a time; it runs
 * on the CUDA context the program was built on. */
pgrt_status pgrt_run(pgrt_ctx *ctx, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                     const pgrt_scalar_fn *callbacks, const int64_t *sizes, CUstream stream);

/* Random numbers.  A program that draws them (rng_increment not 0: dropout, rand,
 * bernoulli, multinomial, rrelu, Inductor's own random) draws them as PyTorch's CUDA
 * generator does, with Philox from a seed and an offset: a call uses the offsets from
 * the current one up, and advances it by rng_increment, as PyTorch's generator advances
 * over a graph replay.  So for the same seed and offset a call draws, bit for bit, what
 * the exported callable drew for that generator state.  pgrt_init starts at seed
 * PGRT_DEFAULT_SEED (PyTorch's CUDA generator's before any manual_seed) and offset 0.
 * pgrt_rng_set sets both for the next call (PGRT_ERR_ARGUMENT for a program that draws
 * none, or an offset that is not a multiple of 4, which PyTorch's never is;
 * PGRT_ERR_BUSY while a call runs); pgrt_rng_get reads what the next call will use. */
#define PGRT_DEFAULT_SEED UINT64_C(67280421310721)
pgrt_status pgrt_rng_set(pgrt_ctx *ctx, uint64_t seed, uint64_t offset);
pgrt_status pgrt_rng_get(pgrt_ctx *ctx, uint64_t *seed, uint64_t *offset);

/* The index of the bucket that the last successful pgrt_run ran for dim `dim` (0 for its
 * first value, ...); -1 before any, or for a dim the program does not have.  (During a
 * call on another thread: the last one that finished.) */
int pgrt_last_bucket(const pgrt_ctx *ctx, int dim);

/* The value at `src`, of type `from`, as type `to`: its bits in the low bytes of the
 * result (what a read scalar gets from its host buffer).  The same type: the bits as
 * they are.  Otherwise C's conversions, except where C leaves them undefined: a
 * floating value converts to an integer type truncated toward zero and saturated to
 * its range (NaN: 0); to bool, nonzero is 1 (NaN too); f16 and bf16 convert exactly to
 * a wider type and round to nearest, ties to even, from a wider one (out of range:
 * infinity); integers convert to narrower integers modulo 2^bits, to floating types
 * rounded to nearest.  PTR is a u64.  Needs no GPU. */
uint64_t pgrt_scalar_convert(const void *src, pgrt_dtype from, pgrt_dtype to);

/* Frees everything and sets *ctx to NULL.  Refused while the program is inside a call
 * ("Threads"): then it frees nothing, leaves *ctx, and warns on stderr. */
void pgrt_destroy(pgrt_ctx **ctx);

/* What the last failure in this thread was: the call, file:line, the node.  Per thread:
 * another thread's failure never overwrites it. */
const char *pgrt_error(void);

/* Writes graph region `region`'s CUDA graph as DOT (cuGraphDebugDotPrint, verbose):
 * pgcc reads it back, which is how the tests check the topology that was built.
 * PGRT_ERR_ARGUMENT if that region is launched eagerly. */
pgrt_status pgrt_debug_dot(const pgrt_ctx *ctx, int region, const char *path);

/* The edges of graph region `region`'s CUDA graph as the driver holds them: how many
 * (*edges), and how many of those are not full dependencies (*programmatic: CUDA's
 * programmatic type, pgrt_dep_kind's programmatic and launch order), which
 * cuGraphDebugDotPrint does not show.  PGRT_ERR_ARGUMENT if that region is launched
 * eagerly. */
pgrt_status pgrt_debug_edges(const pgrt_ctx *ctx, int region, size_t *edges, size_t *programmatic);

/* Node `node` (0 .. the program's node_count - 1) as libpgrt holds it: its name in the
 * .graph (*origin) and, for a kernel node, the function it launches (*func; NULL for
 * other nodes).  pgcc.diagnose runs exported nodes through these to tell a kernel's
 * code from its arguments.  PGRT_ERR_ARGUMENT for a node out of range. */
pgrt_status pgrt_debug_node(const pgrt_ctx *ctx, int node, const char **origin, CUfunction *func);

/* Statistics of the last pgrt_run (of the last that finished, during a call on another
 * thread; a call refused before it started, for its arguments or PGRT_ERR_BUSY, leaves
 * them), for tests and benchmarks. */
typedef struct {
  int graphs_launched, eager_nodes;
  int nodes_patched;  /* host-side, with cuGraphExec*SetParams */
  int device_updated; /* kernel nodes a device-side updater rewrote in this call */
  int read_updated;   /* kernel nodes whose parameters the scalars read after a SYNC changed (a node
                         once per SYNC; in a graph, patched once, before its graph launched) */
  /* Host time of the call (CLOCK_MONOTONIC, ns): all of it, from its checks to its
   * return; inside cuGraphLaunch; and in what came before the first launch (finding
   * what moved, host-side patches, the updaters' arguments).  bench/launch.py. */
  long long host_ns, launch_ns, prepare_ns;
} pgrt_run_stats;
void pgrt_last_run(const pgrt_ctx *ctx, pgrt_run_stats *out);

/* Where pgrt_init's time went (CLOCK_MONOTONIC, ns), for benchmarks: all of it; the
 * program's modules and kernels (of which: the kernels found in libraries' fatbins);
 * libpgrt's own kernels (the updater, pgrt_copy and pgrt_set); building and
 * instantiating the graph regions; and, across the program's CUDA modules and
 * libpgrt's own, CUDA sources made into cubins: how long, how many NVRTC compiled, how
 * many came from the cache of compiled cubins (PGRT_CACHE, see the top of this
 * file).  How many fatbins the libraries gave; how many of libpgrt's own sources
 * were loaded as the cubins the build compiled (none compiled at init); how many
 * threads loaded the libraries' fatbins at once (0: one by one, with their kernels;
 * PGRT_LIBLOAD, libraries.c), and those fatbins' bytes as the libraries hold them
 * (compressed). */
typedef struct {
  long long total_ns, modules_ns, library_ns, own_ns, graphs_ns, nvrtc_ns;
  int nvrtc_compiles, cache_hits, library_fatbins, prebuilt;
  int library_threads;
  long long library_bytes;
} pgrt_init_stats;
void pgrt_last_init(const pgrt_ctx *ctx, pgrt_init_stats *out);

#ifdef __cplusplus
}
#endif
#endif

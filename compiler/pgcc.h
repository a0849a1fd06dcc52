/*
 * pgcc.h -- the whole compiler on one screen: the IR, the node-kind table, and one
 * section of prototypes per source file.
 *
 * A Program is what a .graph file describes: an architecture, modules, kernels with
 * their parameter layouts, buffers, scalars, events, and a tree of graphs (the root,
 * child graphs, conditional bodies) made of nodes and dependency edges.  Both
 * frontends (DOT and .graph) build a Program; every pass reads and edits it; the
 * verifier checks it between passes; the writers print it.
 *
 * Memory: everything a compilation allocates lives in one Arena, freed in one call
 * (arena.c).  Names and strings are arena copies.  Nothing in the IR is freed alone.
 *
 * Errors: user errors go through diag.c (counted, located, printed with a caret);
 * internal bugs call pg_bug() and abort.  Only main() decides to exit.
 */
#ifndef PGCC_H
#define PGCC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PGCC_VERSION "0.1.0"
#define PG_GRAPH_FORMAT_VERSION 3 /* the newest .graph format this pgcc reads (it reads 1 and 2 too) */

/* Limits on hostile input: nesting that recursion would follow. */
#define PG_MAX_NESTING 64 /* record-label braces; child/conditional bodies inside bodies */

/* ------------------------------------------------------------------------------ */
/* Node kinds, listed once.
 *
 *   X(ENUM, "name in .graph", graphable, cuda, cost)
 *
 *   graphable: a node of this kind can be part of a CUDA graph at all (classify.c;
 *              a particular node may still not be, e.g. a pageable copy).
 *   cuda:      CUDA has a graph node of this kind, and its DOT dumps name it in
 *              upper case (MEM_ALLOC); the others are pgcc's own: library calls
 *              (captured into child graphs), host operations, unknown kinds.
 *   cost:      how the cost model charges it (cost.c).
 */
#define PG_NODE_KINDS(X)                                                  \
  X(KERNEL,       "kernel",       1, 1, PG_COST_LAUNCH)                   \
  X(MEMCPY,       "memcpy",       1, 1, PG_COST_COPY)                     \
  X(MEMSET,       "memset",       1, 1, PG_COST_COPY)                     \
  X(HOST,         "host",         1, 1, PG_COST_HOST)                     \
  X(EMPTY,        "empty",        1, 1, PG_COST_NONE)                     \
  X(CHILD,        "child",        1, 1, PG_COST_BODY)                     \
  X(EVENT_RECORD, "event_record", 1, 1, PG_COST_STREAM)                   \
  X(EVENT_WAIT,   "event_wait",   1, 1, PG_COST_STREAM)                   \
  X(MEM_ALLOC,    "mem_alloc",    1, 1, PG_COST_STREAM)                   \
  X(MEM_FREE,     "mem_free",     1, 1, PG_COST_STREAM)                   \
  X(CONDITIONAL,  "conditional",  1, 1, PG_COST_BODY)                     \
  X(LIBCALL,      "libcall",      1, 0, PG_COST_LAUNCH)                   \
  X(HOSTOP,       "hostop",       0, 0, PG_COST_HOSTOP)                   \
  X(OPAQUE,       "opaque",       0, 0, PG_COST_HOSTOP)

typedef enum {
  PG_COST_NONE,   /* no work at all */
  PG_COST_STREAM, /* a stream operation without GPU work (events, allocations) */
  PG_COST_LAUNCH, /* a kernel launch */
  PG_COST_COPY,   /* a copy-engine or memset operation */
  PG_COST_HOST,   /* a host function run by the stream or graph */
  PG_COST_BODY,   /* what its body graphs cost */
  PG_COST_HOSTOP, /* host work that waits for the GPU first */
} PgCost;

typedef enum {
#define X(e, name, graphable, cuda, cost) PG_##e,
  PG_NODE_KINDS(X)
#undef X
  PG_NODE_KIND_COUNT
} PgNodeKind;

typedef struct {
  const char *name;
  bool graphable;
  bool cuda;
  PgCost cost;
} PgKindInfo;

extern const PgKindInfo pg_kinds[PG_NODE_KIND_COUNT];

/* ------------------------------------------------------------------------------ */
/* Locations and the arena */

typedef struct PgSource PgSource;

typedef struct {
  const PgSource *src; /* NULL: no location (synthesized) */
  int line, col;       /* 1-based; col counts bytes */
} PgLoc;

typedef struct PgArena PgArena;

/* A growable array inside an arena: `PG_VEC(T) v` gives v.v, v.n, v.cap. */
#define PG_VEC(T) struct { T *v; size_t n, cap; }
#define pg_vec_push(arena, vec, x)                                                   \
  do {                                                                              \
    if ((vec).n == (vec).cap)                                                       \
      (vec).v = pg_arena_grow((arena), (vec).v, &(vec).cap, sizeof *(vec).v);       \
    (vec).v[(vec).n++] = (x);                                                       \
  } while (0)

/* ------------------------------------------------------------------------------ */
/* Types of scalars and kernel parameters */

#define PG_TYPES(X) \
  X(I8, "i8", 1)    \
  X(I16, "i16", 2)  \
  X(I32, "i32", 4)  \
  X(I64, "i64", 8)  \
  X(U8, "u8", 1)    \
  X(U16, "u16", 2)  \
  X(U32, "u32", 4)  \
  X(U64, "u64", 8)  \
  X(F16, "f16", 2)  \
  X(BF16, "bf16", 2) \
  X(F32, "f32", 4)  \
  X(F64, "f64", 8)  \
  X(BOOL, "bool", 1) \
  X(PTR, "ptr", 8)  \
  X(BYTES, "bytes", 0)

typedef enum {
#define X(e, name, size) PG_T_##e,
  PG_TYPES(X)
#undef X
  PG_TYPE_COUNT
} PgType;

extern const char *const pg_type_names[PG_TYPE_COUNT];
extern const unsigned pg_type_sizes[PG_TYPE_COUNT]; /* 0: variable (bytes) */

/* ------------------------------------------------------------------------------ */
/* Program-level objects */

typedef enum {
  PG_MOD_CUBIN,
  PG_MOD_FATBIN,
  PG_MOD_PTX,
  PG_MOD_CUDA,    /* CUDA C source, compiled with NVRTC */
  PG_MOD_LIBRARY, /* a kernel inside an installed library's own fatbin */
  PG_MOD_KIND_COUNT
} PgModuleKind;
extern const char *const pg_module_kind_names[PG_MOD_KIND_COUNT];

/* A module global (`globals ["NAME" "hex", ...]`, format version 2): a data object of the
 * module (a `__device__` or `__constant__` variable) that the library which loaded it
 * wrote after loading it (cuDNN's kernels read their configuration so).  libpgrt writes
 * these bytes over it after the module loads, before anything runs; its size in the
 * module must be `size`. */
#define PG_MAX_GLOBAL_BYTES (1u << 20) /* per global */
typedef struct {
  const char *name;           /* its symbol in the module, as cuLibraryGetGlobal takes it */
  const unsigned char *bytes; /* size bytes, in the arena */
  uint32_t size;              /* 1 to PG_MAX_GLOBAL_BYTES */
  PgLoc loc;
} PgGlobal;

typedef struct {
  const char *name;
  PgModuleKind kind;
  const char *file;   /* cubin/fatbin/ptx/cuda: path relative to the .graph file */
  const char *path;   /* the same file, absolute (checked to exist when read) */
  const char *sha256; /* hex, optional */
  const char *library;/* library: soname, e.g. "libcublasLt.so.13" */
  PG_VEC(PgGlobal) globals; /* not library modules; in the order written, names unique */
  PgLoc loc;
} PgModule;

/* Relocation kinds, listed once for pgcc, libpgrt and the exporter: what of an address
 * a relocation writes into a by-value parameter, as a linker's relocation types say it
 * (abs64, lo32, hi32).  The table, PG_RELOC_KINDS(X) with X(ENUM, "name in .graph",
 * bytes written, shift), is runtime/pgrt_relocs.h's: pgrt.h expands it too. */
#include "../runtime/pgrt_relocs.h"

typedef enum {
#define X(e, name, size, shift) PG_RELOC_##e,
  PG_RELOC_KINDS(X)
#undef X
  PG_RELOC_KIND_COUNT
} PgRelocKind;

typedef struct {
  const char *name;
  unsigned size;  /* bytes it writes */
  unsigned shift; /* the address is shifted right this much before its low bytes are written */
} PgRelocInfo;

extern const PgRelocInfo pg_relocs[PG_RELOC_KIND_COUNT];

/* What a kernel does with the memory a pointer parameter points into (`access r`, `w`,
 * `rw`, `o`; optional): read it, write it, or both; `o` (overwrite) writes every byte of
 * the buffer and reads none of it first, so the value it held is dead from there on
 * (rename.c).  UNKNOWN (no annotation) counts as both.  A `bytes` parameter's access is
 * that of every pointer inside it, or one per pointer (`access [r, rw, ...]`,
 * PgReloc.access; widen.c). */
typedef enum {
  PG_ACCESS_UNKNOWN,
  PG_ACCESS_READ,
  PG_ACCESS_WRITE,
  PG_ACCESS_RW,
  PG_ACCESS_OVERWRITE,
  PG_ACCESS_COUNT
} PgAccess;
extern const char *const pg_access_names[PG_ACCESS_COUNT]; /* "", "r", "w", "rw", "o" */

/* A relocation inside a by-value parameter: pg_relocs[kind].size bytes at `offset`,
 * relative to the parameter's start (4-byte aligned; the verifier checks). */
typedef struct {
  uint32_t offset;
  PgRelocKind kind;
  PgAccess access; /* what the kernel does through this pointer (`access [...]`, one per
                      relocation); UNKNOWN: the parameter's access, else read and written */
  PgLoc loc;
} PgReloc;

/* Bytes of a by-value parameter that change between captures but were proven not
 * to matter (`dontcare [O:N]`): never patched, kept as the argument gives them. */
typedef struct {
  uint32_t offset, size;
  PgLoc loc;
} PgDontCare;


/* One kernel parameter: `size` bytes at `offset`.  A PTR parameter is one
 * relocatable pointer (a whole address, 8 bytes); a BYTES parameter is a by-value
 * struct whose relocations sit at ptrs[] and whose don't-care bytes at dontcare[],
 * both relative to the parameter's start. */
typedef struct {
  uint32_t offset, size;
  PgType type;
  PG_VEC(PgReloc) ptrs;
  PG_VEC(PgDontCare) dontcare;
  PgAccess access; /* PTR, or BYTES with ptrs: what the kernel does through it */
  PgLoc loc;
  PgLoc access_loc;
} PgParam;
/* Whether a parameter says what its kernel does through it: its own access, or one of its
 * inner pointers' (ir.c). */
bool pg_param_accesses(const PgParam *pa);
/* What the kernel does through inner pointer q of a `bytes` parameter (q < 0: a `ptr`
 * parameter's pointer): the pointer's access, else the parameter's, else read and written. */
PgAccess pg_param_access(const PgParam *pa, long q);

typedef struct {
  const char *name;   /* pgcc's name for it */
  const char *symbol; /* the symbol in the module (mangled) */
  PgModule *module;   /* NULL: resolved by name at init (DOT input) */
  bool has_layout;    /* false: parameter layout unknown (DOT input) */
  bool has_entry;     /* library modules: where in the library's fatbin section the */
  uint64_t entry;     /* kernel was found (a hint: libpgrt searches all when it misses) */
  PG_VEC(PgParam) params;
  PgLoc loc;
} PgKernel;

/* Buffer roles.  HOST is pinned host memory that libpgrt allocates at init (zeroed) and
 * frees at destroy: a program's host-side reads of device values (`.item()`) are
 * copied into it, and read scalars and guards read it after a host synchronization.
 * It is not in the arena, nor a field of NAME_args.  RNG is the random-number state of a
 * program that draws random numbers (PyTorch's Philox seed and offset, 16 bytes): libpgrt
 * allocates it, writes it at the start of every call and advances the offset by the
 * buffer's `increment`; at most one per program. */
#define PG_ROLES(X)                 \
  X(UNKNOWN, "unknown")             \
  X(INPUT, "input")                 \
  X(OUTPUT, "output")               \
  X(WEIGHT, "weight")               \
  X(INTERMEDIATE, "intermediate")   \
  X(WORKSPACE, "workspace")         \
  X(HOST, "host")                   \
  X(RNG, "rng")

typedef enum {
#define X(e, name) PG_ROLE_##e,
  PG_ROLES(X)
#undef X
  PG_ROLE_COUNT
} PgRole;
extern const char *const pg_role_names[PG_ROLE_COUNT];

/* A safetensors file of weights (`weights NAME file "w.safetensors";`).  pgcc reads
 * its header when it reads the .graph; libpgrt reads the tensors at init. */
typedef struct PgMap PgMap; /* string -> pointer, in the arena */
typedef struct {
  const char *name;
  const char *file;    /* as written: relative to the .graph file */
  const char *path;    /* the same file, as pgcc opened it */
  uint64_t header_len; /* the JSON header's length (the file's first 8 bytes) */
  uint64_t file_size;
  PgMap *tensors;      /* tensor name -> PgTensorInfo */
  PgLoc loc;
} PgWeights;

typedef struct {
  PgType dtype;     /* PG_T_BYTES where pgcc has no type of that name */
  uint64_t begin, end; /* data offsets, after the header */
} PgTensorInfo;

/* A dim (`dim B values [1, 2, 4, 8] pad;`): a size that varies per call.  The program
 * holds a variant per value, a *bucket*; a per-call size picks one: the smallest value
 * that holds it (`pad`: the caller pads its inputs to that size) or exactly one of the
 * values (`exact`).  A bucket switch (a conditional node of type switch with `bucket D`)
 * runs body k for bucket k; a bucket scalar holds the index of the bucket chosen. */
typedef struct PgNode PgNode;
typedef struct {
  const char *name;
  PG_VEC(int64_t) values; /* 1 to 64 of them, strictly increasing, each at least 1 */
  bool pad;               /* pad (true) or exact */
  PgNode *node;           /* the switch that picks its bucket, or NULL */
  PgLoc loc;
} PgDim;

static inline int64_t pg_dim_max(const PgDim *d) { return d->values.v[d->values.n - 1]; }

typedef struct {
  const char *name;
  uint64_t size, align; /* a shape that names a dim: the size at the dim's largest value */
  PgRole role;
  PgWeights *weights; /* a weight read from a safetensors file, or NULL */
  const char *tensor; /* its tensor name there */
  uint64_t data_offset; /* its data's offset in the file */
  bool has_dtype;
  PgType dtype;
  bool has_shape; /* a shape was given ([] for a 0-dimensional tensor) */
  PG_VEC(int64_t) shape; /* an entry that is a dim holds its largest value */
  PgDim **shape_dims;    /* NULL: every entry a number; else shape.n entries, a dim or NULL */
  bool has_addr;
  uint64_t addr; /* the address it had when captured (DOT input) */
  uint64_t increment; /* role rng: how far a call advances the Philox offset (`increment N`) */
  PgLoc loc;
  bool planned;    /* memplan.c placed it in the arena */
  uint64_t offset; /* its offset there */
} PgBuffer;

/* A scalar kernel argument.  Its value is a literal (`value`), the caller's on every
 * call (`input`), or learned on the host during the call, after each host
 * synchronization: the first element of a host buffer, converted to the scalar's type
 * (`from B`), or what the caller's callback returns (`callback`).  The last two are
 * "read scalars" (pg_scalar_is_read); the verifier makes every kernel that takes one
 * depend on a synchronization (after a copy into B).  A *bucket scalar* (`bucket D`,
 * an integer) is the index of the bucket the call's size for dim D chose: libpgrt sets
 * it on every call, before anything runs; it is no field of the call's arguments. */
typedef struct {
  const char *name;
  PgType type;
  bool is_input;    /* bound per call */
  bool is_callback; /* `callback`: a NAME_args field, a function called after each sync */
  PgBuffer *from;   /* `from B`: read from host buffer B; NULL otherwise */
  PgDim *bucket;    /* `bucket D`: the index of the bucket chosen for D on each call; NULL otherwise */
  const char *value; /* default value as written (number text), or NULL */
  PgLoc loc;
  PgLoc read_loc;   /* where `from` or `callback` is written */
} PgScalar;

static inline bool pg_scalar_is_read(const PgScalar *s) { return s->from || s->is_callback; }

typedef struct {
  const char *name;
  bool has_handle;
  uint64_t handle; /* captured handle (DOT input) */
  PgLoc loc;
} PgEvent;

/* A conditional handle (`condition NAME default N;`): the variable a conditional
 * node tests.  Kernels take it as a u64 argument and set it on the device
 * (cudaGraphSetConditional); each launch of the graph starts it at `default`. */
typedef struct {
  const char *name;
  uint32_t default_value;
  PgNode *node; /* the conditional node that tests it (the verifier checks: exactly one) */
  PgLoc loc;
} PgCondition;

/* A pointer into a buffer: buf + offset.  buf == NULL is the null pointer. */
typedef struct {
  PgBuffer *buf;
  uint64_t offset;
} PgPtr;

/* A communicator (`comm NAME ranks N;`): the program runs as one rank of N, and its
 * collectives (libcall nodes that name it) move data between the ranks through NCCL. */
typedef struct {
  const char *name;
  uint32_t ranks; /* at least 1 */
  PgLoc loc;
} PgComm;

/* NCCL collectives a libcall node can be, listed once.
 *
 *   X(ENUM, "fn in .graph", send elements per `count`, recv elements per `count`, takes an op)
 *
 * The multipliers are 1 or R, the comm's ranks: AllGather sends count and receives
 * count*R; ReduceScatter sends count*R and receives count. */
#define PG_COLL_R 0 /* "the comm's ranks" in the table below */
#define PG_COLLECTIVES(X)                            \
  X(ALLREDUCE,     "ncclAllReduce",     1, 1, 1)     \
  X(ALLGATHER,     "ncclAllGather",     1, PG_COLL_R, 0) \
  X(REDUCESCATTER, "ncclReduceScatter", PG_COLL_R, 1, 1)

typedef enum {
#define X(e, fn, send, recv, op) PG_COLL_##e,
  PG_COLLECTIVES(X)
#undef X
  PG_COLL_COUNT
} PgCollKind;

typedef struct {
  const char *fn;     /* NCCL's function name */
  unsigned send_mult; /* 1, or PG_COLL_R: the comm's ranks */
  unsigned recv_mult;
  bool has_op;        /* takes a reduction */
} PgCollInfo;
extern const PgCollInfo pg_colls[PG_COLL_COUNT];

/* Reductions, in NCCL's order (ncclRedOp_t: ncclSum = 0 ... ncclAvg = 4). */
#define PG_REDOPS(X) X(SUM, "sum") X(PROD, "prod") X(MAX, "max") X(MIN, "min") X(AVG, "avg")
typedef enum {
#define X(e, name) PG_OP_##e,
  PG_REDOPS(X)
#undef X
  PG_OP_COUNT
} PgRedOp;
extern const char *const pg_redop_names[PG_OP_COUNT];

/* A libcall node that is an NCCL collective (`fn "ncclAllReduce" comm C send B recv B
 * count N dtype T op O`): count is elements per rank as NCCL counts them. */
typedef struct {
  PgCollKind kind;
  PgComm *comm;
  PgPtr send, recv;
  uint64_t count;
  PgType dtype; /* one NCCL has: pg_coll_dtype_ok */
  PgRedOp op;   /* valid when pg_colls[kind].has_op */
  PgLoc send_loc, recv_loc;
  /* stage.c: where send (recv) was a per-call buffer, the copy into (out of) the arena
   * buffer the collective now uses instead; NULL where that end was not staged */
  PgNode *stage_in, *stage_out;
} PgCollective;
/* Bytes a collective's send (recv) buffer spans: count * dtype size * its multiplier. */
uint64_t pg_coll_bytes(const PgCollective *c, bool recv);
bool pg_coll_dtype_ok(PgType t);

/* A kernel or library-call argument. */
typedef enum {
  PG_ARG_INT,    /* integer literal (text kept in `lit` as written) */
  PG_ARG_FLOAT,  /* floating literal */
  PG_ARG_PTR,    /* buffer + offset, or null */
  PG_ARG_SCALAR, /* a named scalar */
  PG_ARG_BYTES,  /* by-value struct: hex bytes plus a pointer per layout ptr */
  PG_ARG_COND,   /* a conditional handle (a u64 parameter) */
} PgArgKind;

typedef struct {
  PgArgKind kind;
  PgLoc loc;
  union { /* the members for `kind` are valid (three million arguments are 100 MB less this way) */
    PgPtr ptr;           /* PTR */
    PgScalar *scalar;    /* SCALAR */
    PgCondition *cond;   /* COND */
    struct {
      const char *lit;     /* INT, FLOAT: the literal's text; BYTES: the hex string */
      PG_VEC(PgPtr) ptrs;  /* BYTES: one per PgParam.ptrs */
    };
  };
} PgArg;

typedef PG_VEC(PgArg) PgArgs;

/* ------------------------------------------------------------------------------ */
/* Graphs, nodes, edges */

typedef struct PgGraph PgGraph;

typedef enum { PG_DIR_HTOD, PG_DIR_DTOH, PG_DIR_DTOD, PG_DIR_HTOH, PG_DIR_DEFAULT, PG_DIR_COUNT } PgCopyDir;
extern const char *const pg_dir_names[PG_DIR_COUNT];

typedef enum { PG_COND_IF, PG_COND_WHILE, PG_COND_SWITCH, PG_COND_COUNT } PgCondType;
extern const char *const pg_cond_names[PG_COND_COUNT];

/* What few nodes carry, kept out of PgNode (pg_node_notes() makes them on first use;
 * pg_node_origin() and the like read them): a million nodes are the bulk of the IR. */
typedef struct {
  const char *origin; /* where it came from (a DOT node id), or NULL */
  const char *eager;  /* input says: run eagerly, for this reason (`eager "..."`) */
  const char *why;    /* classify.c: why it cannot be in a graph */
  double gpu_us;      /* measured GPU time of one execution, 0: unknown (`gpu_us N`) */
} PgNodeNotes;

struct PgNode { /* 152 bytes, 8-aligned (pg_node_new): a million of them are the bulk of the IR */
  PgNodeKind kind;
  uint32_t index;         /* position in graph->nodes */
  int region;             /* partition region, -1 before partitioning */
  uint32_t nsucc, npred;  /* pg_program_link(): how many successors and predecessors (pg_succs(), pg_preds()) */
  bool graphable;         /* set by classify.c */
  const char *name;       /* unique within the program */
  PgGraph *graph;         /* the graph it belongs to */
  PgLoc loc;
  PgNodeNotes *notes;     /* NULL: none */
  PgNode **links;         /* pg_program_link(): its successors then its predecessors, in edge order (a
                             slice of its graph's link_slots, carved at its exact size) */
  union { /* the member named after `kind` is valid; EMPTY and OPAQUE use none */
    struct {
      PgKernel *kernel;
      uint32_t grid[3], block[3], smem;
      uint32_t cluster[3]; /* thread block cluster dimensions; all 0: no cluster attribute */
      bool has_args; /* false: arguments supplied by the caller at init */
      bool cooperative;
      int priority;
      PgArgs args;
    } kernel;
    struct {
      PgCopyDir dir;
      bool has_ptrs; /* false: operands supplied by the caller at init */
      bool pageable; /* the host side is pageable memory (not capturable) */
      PgPtr src, dst;
      uint64_t width, height, depth; /* bytes per row, rows, slices */
      uint64_t src_pitch, dst_pitch;
    } memcpy;
    struct {
      bool has_dst; /* false: destination supplied by the caller at init */
      PgPtr dst;
      uint32_t value;
      uint32_t elem; /* 1, 2 or 4 bytes; 0: unknown, and width counts bytes */
      uint64_t width, height, pitch; /* elements per row, rows, bytes between rows */
    } memset;
    struct {
      uint64_t fn, data; /* captured host function and user data */
    } host;
    struct {
      PgGraph *body;
    } child;
    struct {
      PgEvent *event; /* NULL: unknown (not in the dump) */
    } event;
    struct {
      PgBuffer *buf; /* MEM_ALLOC allocates buf (buf->size bytes); MEM_FREE frees it */
    } mem;
    struct {
      PgCondType type;
      bool has_handle;
      uint64_t handle;         /* captured handle (DOT input) */
      PgCondition *condition;  /* the handle it tests, when the input declares it */
      PgDim *dim;              /* a bucket switch (`bucket D`): body k runs for D's bucket k */
      PG_VEC(PgGraph *) bodies;
    } cond;
    struct {
      const char *fn; /* e.g. "cublasLtMatmul" */
      PgArgs args;    /* the generic form; empty for a collective */
      PgCollective *coll; /* an NCCL collective (named attributes), or NULL */
    } libcall;
    struct {
      const char *op;     /* sync, guard, dtoh, htod, cpu, ... */
      const char *reason; /* why it cannot be part of a graph */
      PgBuffer *buf;      /* guard: the host buffer it checks */
      const char *expect; /* guard: the bytes expected at the buffer's start, hex as written */
      PgLoc expect_loc;
    } hostop;
    struct {
      const char *what; /* the kind as the input named it */
    } opaque;
  } u;
};

/* What the later node of an edge waits for (CUDA's edge data: the earlier kernel's
 * port and the edge's type).  Named in .graph by pg_edge_kinds (format version 3).
 * Kept beside the edges, not in them (PgGraph.edge_kinds): a million edges stay 32
 * bytes each. */
typedef enum {
  PG_EDGE_FULL,         /* the earlier node's completion, its writes visible: every edge until version 3 */
  PG_EDGE_PROGRAMMATIC, /* programmatic dependent launch, between two kernels: the later one may start once
                           the earlier one triggers (griddepcontrol.launch_dependents, else as its blocks
                           end); its griddepcontrol.wait waits for the earlier one's completion and writes */
  PG_EDGE_LAUNCH_ORDER, /* the same, triggered once every block of the earlier kernel has started */
  PG_EDGE_KIND_COUNT
} PgEdgeKind;

extern const char *const pg_edge_kinds[PG_EDGE_KIND_COUNT]; /* "" (written as nothing), "programmatic", ... */

typedef struct {
  PgNode *from, *to;
  PgLoc loc;
} PgEdge; /* its kind: pg_edge_kind */

struct PgGraph {
  const char *name;
  uint32_t id;   /* its position in PgProgram.graphs */
  PgNode *owner; /* the child/conditional node whose body this is; NULL for the root */
  PG_VEC(PgNode *) nodes;
  PG_VEC(PgEdge) edges;
  PG_VEC(uint8_t) edge_kinds; /* the PgEdgeKind of edges.v[i] for i < edge_kinds.n, the others full; empty
                                 while every edge is full (pg_edge_add, pg_edge_kind) */
  PgNode **link_slots;        /* pg_program_link: the block its nodes' succs and preds are carved from, */
  uint8_t *pred_kinds;        /* and, where some edge has a kind, each pred's kind at its slot's place in
                                 that block (pg_pred_kind); NULL otherwise */
  PgLoc loc;
  double est_us;      /* cost.c, a conditional's body: its GPU time in a graph, each time it runs */
  double est_path_us; /* cost.c, a body of a root graph's conditional: the predicted time of its region
                         in a call that takes it, in the form chosen */
};

/* A region: nodes of the root graph launched together, as one CUDA graph or
 * eagerly, in schedule order (partition.c).  A graphable region may still be
 * launched eagerly when the cost model says a graph would not pay (cost.c). */
typedef enum { PG_UPDATE_NONE, PG_UPDATE_HOST, PG_UPDATE_DEVICE } PgUpdate;
extern const char *const pg_update_names[3];

typedef struct {
  int id;
  bool graphable;    /* every node can be in a graph */
  bool graph;        /* decision: launch as a graph (true) or eagerly */
  PG_VEC(PgNode *) nodes; /* in a valid execution order */
  size_t kernels;
  size_t patched;    /* nodes whose parameters change on every call */
  PgUpdate update;   /* how they are patched */
  double est_eager_us, est_graph_us;
  PG_VEC(const char *) reasons;
  /* cost.c: a region that holds only a bucket switch and the kernel that sets its condition
   * may instead run one graph per bucket, the host launching the one the call's size picks */
  PgNode *bucket_switch;    /* that switch, when the region is one; else NULL */
  bool bucket_graphs;       /* decision: one graph per bucket (libpgrt's PGRT_BUCKETS overrides) */
  double est_switch_us, est_bucket_graphs_us; /* both forms, a call taking the costliest bucket */
} PgRegion;

/* The memory plan (memplan.c): intermediates at offsets in one arena, placed each way
 * below, the smallest arena kept (the earlier way on a tie). */
typedef enum {
  PG_PLACE_TIME, /* a linear scan in time, best fit, as an allocator knowing the future */
  PG_PLACE_SIZE, /* largest first, each into the smallest gap beside what it lives with */
  PG_PLACE_LIFE, /* the same, the longest-lived first */
  PG_PLACE_COUNT
} PgPlacement;

typedef struct {
  uint64_t arena_bytes;  /* the planned arena */
  uint64_t sum_bytes;    /* every intermediate in its own allocation */
  uint64_t pools_bytes;  /* one private pool per graph region, plus eager regions' peak */
  uint64_t live_bytes;   /* the most bytes live at one position: no arena is smaller */
  size_t buffers;        /* how many were planned */
  PgPlacement placement; /* the way kept */
  bool tried[PG_PLACE_COUNT];            /* each way run (memplan.c says when one is not) */
  uint64_t placed_bytes[PG_PLACE_COUNT]; /* the arena each way tried reached */
  size_t dag_regions;    /* graph regions that are not chains, planned by what reaches what */
} PgMemPlan;

/* What schedule.c did to the root graph's order. */
typedef struct {
  size_t moved;          /* nodes moved up to just after what they wait for (0: the order kept) */
  uint64_t live_before;  /* the most bytes live at once in the captured order */
  const char *why_not;   /* why the order could not change at all, or NULL */
} PgSchedule;

/* What rename.c did: intermediates that hold several values one after another, split
 * into a buffer per value. */
typedef struct {
  size_t buffers;       /* buffers split */
  size_t values;        /* buffers made for their later values */
  const char *why_not;  /* why it could not run, or NULL */
} PgRename;

/* What widen.c did to the root graph: its chain's edges replaced by true dependencies
 * (or not, and why).  Two widened graphs are weighed: over the serial plan's arena
 * (its reuse of bytes orders nodes too; the arena stays) and over the buffers alone,
 * with a plan of its own (memplan.c on the widened graph: more arena, more width).
 * Times are cost.c's in-graph estimates, microseconds. */
typedef struct {
  size_t width;         /* the most nodes that may run at once (a largest antichain) */
  bool width_exact;     /* false: a lower bound (a segment too large to match exactly) */
  size_t edges;         /* edges after transitive reduction */
  double path_us;       /* the critical path */
  double predicted_us;  /* max(path_us, the GPU's work) */
  uint64_t arena_bytes; /* its arena (the own plan's: 0 where it was not made) */
} PgWidened;

typedef struct {
  bool ran;             /* the dependencies were computed (else why_not says why not) */
  bool kept;            /* a widened graph replaced the chain (else why_not says why not) */
  bool own_plan;        /* the one kept is the own plan's */
  const char *why_not;  /* NULL when kept */
  size_t nodes;         /* nodes of the root graph */
  size_t edges_before;  /* the chain's edges */
  double serial_us;     /* every node one after another: the chain's GPU time */
  double work_us;       /* the GPU's work: each node's time times the share of the SMs it fills */
  uint64_t serial_arena_bytes; /* the plan on the serial order */
  PgWidened shared;     /* over the serial plan's arena bytes */
  PgWidened own;        /* over the buffers alone, with a plan of its own */
  /* the graph kept (where none: the own one, the most the access sets allow) */
  size_t edges_after, width;
  bool width_exact;
  double path_us, predicted_us;
  uint64_t arena_bytes; /* the arena the program runs with */
  PG_VEC(PgEdge) edges; /* that graph's edges, kept or not (each node's in chain order) */
} PgWiden;

/* priority.c's account: the critical path's kernels of a widened root graph given a
 * launch priority above the others' (--priorities). */
typedef struct {
  bool ran;            /* priorities were given (else why_not says why not) */
  const char *why_not; /* NULL when ran */
  size_t critical;     /* kernels of graph regions on the critical path, given PG_CRITICAL_PRIORITY */
  size_t kernels;      /* kernels of graph regions in the root graph */
  double path_us;      /* the critical path (cost.c's estimates) */
} PgPriority;

/* CUDA's launch priority (lower runs first; 0, the default, is the lowest) that
 * priority.c gives the critical path's kernels: one step above the rest. */
#define PG_CRITICAL_PRIORITY (-1)

/* The arena a widened graph's own plan may take beyond the serial plan's, as a share of
 * it, without a gain beyond the cost model's error over the graph that keeps the serial
 * plan (widen.c). */
#define PG_WIDEN_ARENA_SLACK 0.10

typedef struct {
  PgArena *arena;
  int version;      /* the .graph format version it was read from (DOT: the newest) */
  const char *arch; /* "sm_90"; NULL if unknown */
  PgLoc arch_loc;   /* where it was named */
  PG_VEC(PgModule *) modules;
  PG_VEC(PgKernel *) kernels;
  PG_VEC(PgBuffer *) buffers;
  PG_VEC(PgScalar *) scalars;
  PG_VEC(PgEvent *) events;
  PG_VEC(PgCondition *) conditions;
  PG_VEC(PgWeights *) weights;
  PG_VEC(PgDim *) dims;
  PG_VEC(PgComm *) comms;
  PG_VEC(PgGraph *) graphs; /* graphs.v[0] is the root */
  PG_VEC(PgRegion *) regions;
  PgRename rename;
  PgSchedule sched;
  PgMemPlan mem;
  PgWiden widen;
  PgPriority priority;
} PgProgram;

/* ------------------------------------------------------------------------------ */
/* arena.c */
PgArena *pg_arena_new(void);
void pg_arena_free(PgArena *a);
void *pg_arena_alloc(PgArena *a, size_t size); /* zeroed, 16-byte aligned */
void *pg_arena_alloc8(PgArena *a, size_t size); /* zeroed, 8-byte aligned: objects needing no more */
void *pg_xcalloc(size_t n, size_t size); /* zeroed, outside the arena: the caller frees it */
char *pg_arena_strdup(PgArena *a, const char *s);
char *pg_arena_strndup(PgArena *a, const char *s, size_t n);
char *pg_arena_printf(PgArena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *pg_arena_grow(PgArena *a, void *v, size_t *cap, size_t elem);
size_t pg_arena_used(const PgArena *a);
char *pg_arena_cat(PgArena *a, const char *s1, const char *s2, const char *s3);
void pg_arena_reset(PgArena *a);
const char *pg_arena_map_file(PgArena *a, int fd, size_t len); /* read-only, two NULs after; NULL: read it */
void pg_arena_release_file(PgArena *a, const char *text); /* a frontend is done with it (it reads back) */
void pg_arena_release_range(PgArena *a, const char *text, size_t from, size_t to); /* whole pages inside */

/* map.c: an open-addressing hash map from string to pointer */
PgMap *pg_map_new(PgArena *a);
void *pg_map_get(const PgMap *m, const char *key);
void *pg_map_getn(const PgMap *m, const char *key, size_t len);
/* n lookups at once (vals[i]: keys[i]'s value or NULL), their cache misses overlapped. */
void pg_map_get_many(const PgMap *m, size_t n, const char *const *keys, const size_t *lens, void **vals);
/* Asks for the cache line where key's slot is, for a lookup or insertion soon after
 * (valid until the table grows: reserve it first). */
void pg_map_prefetch(const PgMap *m, const char *key, size_t len);
/* Inserts key -> val; returns the previous value (and keeps it) if key was present. */
void *pg_map_put(PgMap *m, const char *key, void *val);
/* The place of key's value, key added with a NULL value if absent (one probe for both). */
void **pg_map_slot(PgMap *m, const char *key);
/* Room for n entries, so that inserting them never rehashes. */
void pg_map_reserve(PgMap *m, size_t n);

/* diag.c */
struct PgSource {
  const char *name; /* as given on the command line */
  const char *text; /* NUL-terminated, followed by a second NUL */
  size_t len;
};

typedef struct {
  FILE *out;       /* where diagnostics go (stderr in pgcc) */
  int errors, warnings;
  int max_errors;  /* stop reporting (and parsing) after this many; 0: no limit */
} PgDiag;

/* Reads a whole file into the arena ("-": standard input, named PG_STDIN_NAME).
 * Reports unreadable files, directories and binary data as errors. Returns NULL on
 * failure. */
#define PG_STDIN_NAME "<stdin>"
PgSource *pg_source_load(PgArena *a, PgDiag *d, const char *path);
PgSource *pg_source_from_string(PgArena *a, const char *name, const char *text);
void pg_error(PgDiag *d, PgLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void pg_warning(PgDiag *d, PgLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void pg_note(PgDiag *d, PgLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool pg_too_many_errors(const PgDiag *d);
_Noreturn void pg_bug(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define PG_BUG(...) pg_bug(__FILE__, __LINE__, __VA_ARGS__)
/* The location of byte `offset` of a token that starts at `start` in the source. */
PgLoc pg_loc_advance(PgLoc start, const char *text, size_t offset);

/* ir.c: building the IR */
PgProgram *pg_program_new(PgArena *a);
PgGraph *pg_graph_new(PgProgram *p, const char *name, PgLoc loc);
PgNode *pg_node_new(PgProgram *p, PgGraph *g, PgNodeKind kind, const char *name, PgLoc loc);
void pg_edge_add(PgProgram *p, PgGraph *g, PgNode *from, PgNode *to, PgEdgeKind kind, PgLoc loc);
/* The kind of g's edge i; the kind of the edge from node n's q-th pred (after pg_program_link). */
PgEdgeKind pg_edge_kind(const PgGraph *g, size_t i);
PgEdgeKind pg_pred_kind(const PgGraph *g, const PgNode *n, size_t q);
/* Fills every node's links (its succs and preds) from the edge lists (and the graphs' pred_kinds). */
void pg_program_link(PgProgram *p);
/* n's notes, made (zeroed) on first use; what they say, NULL or 0 where n has none. */
PgNodeNotes *pg_node_notes(PgArena *a, PgNode *n);
static inline const char *pg_node_origin(const PgNode *n) { return n->notes ? n->notes->origin : NULL; }
static inline const char *pg_node_eager(const PgNode *n) { return n->notes ? n->notes->eager : NULL; }
static inline const char *pg_node_why(const PgNode *n) { return n->notes ? n->notes->why : NULL; }
static inline double pg_node_gpu_us(const PgNode *n) { return n->notes ? n->notes->gpu_us : 0; }
/* A linked node's successors and predecessors (nsucc and npred of them). */
static inline PgNode *const *pg_succs(const PgNode *n) { return n->links; }
static inline PgNode *const *pg_preds(const PgNode *n) { return n->links + n->nsucc; }
/* Every edge goes from an earlier node to a later one: the node order is topological. */
bool pg_graph_in_order(const PgGraph *g);
bool pg_kind_from_name(const char *name, PgNodeKind *out);
/* n is a host operation of this op (`hostop op sync`, `op guard`).  Inline: passes ask
 * it of every node, and almost every node is no host operation. */
static inline bool pg_is_hostop(const PgNode *n, const char *op) {
  return n->kind == PG_HOSTOP && strcmp(n->u.hostop.op, op) == 0;
}
/* A buffer bound on every call (a member of NAME_args, its address new on each): not a
 * weight, not in the arena (intermediate, workspace), not a host buffer (libpgrt's own
 * pinned memory).  Roles input, output and unknown. */
bool pg_per_call(const PgBuffer *b);
/* A buffer the memory plan places in the arena: roles intermediate and workspace. */
bool pg_in_arena(const PgBuffer *b);
/* The program's random-number state (its buffer of role rng), or NULL: it draws none. */
const PgBuffer *pg_rng_of(const PgProgram *p);
/* The buffers node n itself uses (not its bodies'), each passed to fn: every pointer
 * argument's, a by-value struct's relocations', a copy's two ends, a memset's, an
 * allocation's, a collective's send and recv.  A buffer may come more than once;
 * NULL for a null pointer. */
typedef void PgUseFn(void *ctx, PgBuffer *b);
void pg_node_uses(const PgNode *n, PgUseFn *fn, void *ctx);
bool pg_type_from_name(const char *name, PgType *out);
const char *pg_ident(PgArena *a, const char *prefix, const char *s); /* a safe identifier */

typedef struct {
  size_t nodes, edges, graphs, kernels, dims;
} PgStats;
PgStats pg_program_stats(const PgProgram *p);

/* record.c: Graphviz record labels ("{a | {b | c}}"), the sub-language of DOT labels */
typedef struct PgRecField PgRecField;
struct PgRecField {
  bool is_group;
  const char *text;  /* leaf: the field's text, unescaped and trimmed */
  PgLoc loc;         /* where the field starts */
  PG_VEC(PgRecField *) kids; /* group: the fields inside the braces */
};
PgRecField *pg_record_parse(PgArena *a, PgDiag *d, const char *raw, PgLoc loc);
PgRecField *pg_record_parse_n(PgArena *a, PgDiag *d, const char *raw, size_t len, PgLoc loc); /* no NUL needed */
/* Flattens a parsed record into "key" -> leaf pairs (see record.c for the table shapes). */
typedef struct {
  const char *key;
  const PgRecField *val;
} PgRecPair;
typedef PG_VEC(PgRecPair) PgRecPairs;
void pg_record_pairs(PgArena *a, const PgRecField *rec, PgRecPairs *out);
const PgRecField *pg_record_get(const PgRecPairs *pairs, const char *key);
/* Unescapes a Graphviz label fragment (\<, \{, \n ...) into the arena. */
char *pg_label_unescape(PgArena *a, const char *raw, size_t len);

/* sha256.c */
void pg_sha256_hex(const void *data, size_t len, char out[65]);

/* safetensors.c: reads w->path's header into w (tensors, header_len, file_size) */
bool pg_safetensors_read(PgArena *a, PgDiag *d, PgLoc loc, PgWeights *w);

/* dot_read.c: DOT as written by cudaGraphDebugDotPrint -> IR (grammar/dot.y parses) */
PgProgram *pg_dot_read(PgArena *a, PgDiag *d, const PgSource *src);

/* graph_read.c: .graph -> IR (grammar/graph.y parses) */
PgProgram *pg_graph_read(PgArena *a, PgDiag *d, const PgSource *src);

/* graph_write.c, dot_write.c.  pg_graph_write writes module paths relative to
 * out_dir (NULL: the working directory), where the .graph being written will be,
 * in the oldest format version that can say the program (pg_graph_min_version). */
void pg_graph_write(const PgProgram *p, FILE *out, const char *out_dir);
int pg_graph_min_version(const PgProgram *p);
void pg_dot_write(const PgProgram *p, FILE *out);

/* emit_c.c: --emit=c.  pg_c_check reports what cannot be generated (the count of
 * errors); pg_emit_c and pg_emit_h write the C and its header. */
int pg_c_check(const PgProgram *p, PgDiag *d);
void pg_emit_c(const PgProgram *p, const char *name, const char *input, FILE *out);
void pg_emit_h(const PgProgram *p, const char *name, FILE *out);

/* ir_verify.c: structural checks, run after the frontend and after every pass.
 * Returns the number of errors reported. */
int pg_verify(const PgProgram *p, PgDiag *d);
/* After partitioning: every root node in one region, regions in dependency order. */
int pg_verify_regions(const PgProgram *p, PgDiag *d);

/* A machine profile: the constants of the cost model (cost.c, profiles/). */
#define PG_PROFILE_FIELDS(X)                                                                 \
  X(eager_launch_us, "host time to submit one kernel launch eagerly")                       \
  X(eager_copy_us, "host time to submit one memcpy or memset eagerly")                      \
  X(eager_host_us, "one host function launched into the stream")                            \
  X(eager_gap_us, "GPU time an eager kernel or copy costs beyond its time in a graph")      \
  X(hostop_us, "one non-graphable host operation (synchronization, CPU work)")              \
  X(graph_launch_us, "host time of one graph launch, fixed part")                           \
  X(graph_launch_node_us, "host time of one graph launch, per node")                        \
  X(graph_node_us, "GPU time per node on replay when launch-bound")                         \
  X(kernel_us, "GPU time of a kernel whose time is unknown")                                \
  X(copy_us, "GPU time of a copy or memset whose time is unknown")                          \
  X(host_node_us, "a host node inside a graph")                                             \
  X(update_host_node_us, "host-side parameter update, per node")                            \
  X(update_device_us, "one device-side batched parameter update, per call that changes something") \
  X(update_device_node_us, "GPU time a device-updatable kernel node adds to every replay")  \
  X(instantiate_node_us, "graph instantiation, per node")                                   \
  X(upload_us, "graph upload, per graph")                                                   \
  X(coll_us, "GPU time of one NCCL collective beyond its bytes (latency)")                  \
  X(coll_gbps, "GB/s a collective moves per rank (NCCL's bus bandwidth)")                  \
  X(sms, "the GPU's streaming multiprocessors (optional; 0: unknown, every kernel fills it)")

typedef struct {
  const char *name;
#define X(f, doc) double f;
  PG_PROFILE_FIELDS(X)
#undef X
} PgProfile;

/* signatures.c: kernels of CUDA C modules have the layouts the .graph gives them
 * (read with libclang when pgcc is built with it).  Returns the errors reported. */
int pg_check_signatures(const PgProgram *p, PgDiag *d);

/* arch.c: every cubin, PTX and fatbin module is one, and holds code that runs on the
 * program's architecture (when it names one).  Returns the errors reported. */
int pg_check_arch(PgProgram *p, PgDiag *d);

/* stage.c: every collective of the root graph on a per-call buffer (pg_per_call) goes
 * through arena buffers of its own: a device-to-device copy in before it, a copy out
 * after it (libpgrt captures a collective once, at init, on addresses that never move).
 * Returns how many collectives it staged. */
size_t pg_stage_collectives(PgProgram *p);

/* classify.c: which nodes can be in a graph, and why not */
void pg_classify(PgProgram *p);

/* schedule.c: in a root graph that is one chain, each node that frees an intermediate
 * and makes none runs as soon as what it waits for has run (the order kept where that
 * does not lower the most bytes live at once) */
void pg_schedule(PgProgram *p);
/* rename.c: where a kernel overwrites an intermediate (`access o`), the nodes from it on
 * point into a buffer of their own (the root graph one chain; not with --keep-order). */
void pg_rename(PgProgram *p);
/* Why the root graph is not one chain in node order, or NULL (schedule.c's test, shared
 * with widen.c). */
const char *pg_not_a_chain(const PgGraph *g);
/* A node whose memory pgcc knows in full (the buffers its arguments name) and which
 * nothing else orders: not *fixed* (schedule.c's opening comment).  Fixed nodes are
 * barriers to schedule.c and widen.c alike. */
bool pg_node_movable(const PgNode *n);

/* partition.c: maximal graphable regions of the root graph, in schedule order */
void pg_partition(PgProgram *p);

/* cost.c: the cost model and machine profiles */
extern const PgProfile pg_profile_h200;
PgProfile *pg_profile_load(PgArena *a, PgDiag *d, const char *path);
/* allow_device: may a region patch on the device (pgcc --device-update)?  Off by
 * default: it saves host time but costs GPU time on every replay (docs/cost-model.md). */
void pg_cost(PgProgram *p, const PgProfile *prof, double calls, bool allow_device);
/* An NCCL collective's predicted GPU time (docs/cost-model.md). */
double pg_cost_collective_us(const PgProfile *pr, const PgCollective *c);
/* A node's predicted GPU time in a graph (bodies included), as a region's graph sum counts it. */
double pg_cost_node_us(const PgProfile *pr, const PgNode *n);
/* The share of the GPU's SMs a node keeps busy while it runs, 0 to 1: a kernel's blocks
 * over the profile's SMs (1 when that is unknown); every other node 1. */
double pg_cost_occupancy(const PgProfile *pr, const PgNode *n);
/* The model's error bound (docs/cost-model.md: predictions within 25%): a predicted gain
 * smaller than this share of the time it is a gain on is no gain. */
#define PG_COST_ERROR 0.25

/* widen.c: where the root graph is one chain and the program's kernels carry access sets,
 * the chain's edges become the true dependencies (read-after-write, write-after-read,
 * write-after-write on overlapping bytes; fixed nodes are barriers), transitively reduced,
 * kept where the cost model predicts a gain beyond its error.  Runs after memplan, and
 * plans the arena again (pg_memplan) for a widened graph over the buffers alone. */
void pg_widen(PgProgram *p, const PgProfile *prof);

/* priority.c: where widen.c kept a wider root graph, the kernels of graph regions on its
 * critical path (cost.c's estimates) get PG_CRITICAL_PRIORITY, unless captured with a
 * priority of their own (--priorities). */
void pg_prioritize(PgProgram *p, const PgProfile *prof);

/* memplan.c: intermediates into one arena */
void pg_memplan(PgProgram *p);
/* The arena bytes a call reaches when conditional node c runs body `body`: the end of
 * the furthest planned buffer that body, or any node outside c's bodies, uses. */
uint64_t pg_memplan_reach(const PgProgram *p, const PgNode *c, size_t body);

/* report.c: the offline cost report */
typedef struct {
  const char *input;
  const PgProfile *profile;
  double calls;
} PgReportInfo;
void pg_report_text(const PgProgram *p, const PgReportInfo *info, FILE *out);
void pg_report_json(const PgProgram *p, const PgReportInfo *info, FILE *out);

/* detect.c: which dialect a source is written in */
typedef enum { PG_DIALECT_UNKNOWN, PG_DIALECT_DOT, PG_DIALECT_GRAPH } PgDialect;
PgDialect pg_detect_dialect(const PgSource *src, PgLoc *where);
bool pg_source_is_blank(const PgSource *src);

/* driver.c: the command line; returns the exit status (0 ok, 1 input errors, 2 usage) */
int pgcc_main(int argc, char **argv, FILE *out, FILE *err);
/* Tests only (NULL otherwise): called once every output is written to its temporary,
 * before any is renamed into place. */
extern void (*pgcc_test_hook_before_rename)(void);

#endif

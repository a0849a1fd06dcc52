/*
 * own_kernels.h -- libpgrt's own CUDA kernels: their sources, the NVRTC options they
 * are compiled with, and the cubins compiled from them when libpgrt was built.
 *
 * The build runs runtime/tool/prebuild.c, which compiles each source below with
 * NVRTC, with these options, for every GPU architecture that NVRTC supports, and
 * writes the cubins as a C table (pgrt_prebuilt_cubins) that is linked into libpgrt.  init
 * loads the cubin for its GPU from that table, and compiles at run time (modules.c,
 * compile_cuda, with its disk cache) only for a GPU the table lacks, or where the
 * driver refuses the table's cubin.  Included by modules.c, init.c and the tool; no CUDA
 * header needed.  Not installed.
 */
#ifndef PGRT_OWN_KERNELS_H
#define PGRT_OWN_KERNELS_H

#include <stddef.h>

/* NVRTC's options after --gpu-architecture, at build time and at run time alike */
static const char *const PGRT_NVRTC_OPTS[] = {"--std=c++17", "-default-device"};
#define PGRT_NVRTC_OPT_COUNT 2
_Static_assert(sizeof PGRT_NVRTC_OPTS / sizeof *PGRT_NVRTC_OPTS == PGRT_NVRTC_OPT_COUNT, "PGRT_NVRTC_OPT_COUNT");

/* The device-side update: a graph region whose kernel nodes change on every call
 * makes them device-updatable and starts with one updater kernel that rewrites
 * their parameters, one thread per node, with cudaGraphKernelNodeSetParam.  An
 * entry writes the low `size` bytes of (value + offset) >> shift: a whole address
 * (8, 0), its low half (4, 0) or its high half (4, 32), or a scalar (its size, 0).
 * A call then patches one node from the host (the updater's own arguments: this
 * call's addresses and scalars) instead of every node that uses them.  The entries
 * of one node are together in the table, and one thread writes them all: updates of
 * one node from several threads at once lost some of them (the e2e MLP, whose
 * GEMV nodes take three moving pointers in one parameter struct).  NVRTC does
 * not declare the device runtime, so the declaration is here; the driver resolves
 * it when the module loads. */
static const char pgrt_updater_source[] =
    "struct CUgraphDeviceUpdatableNode_st;\n"
    "extern \"C\" __device__ __attribute__((cudart_builtin)) int cudaGraphKernelNodeSetParam(\n"
    "    CUgraphDeviceUpdatableNode_st *node, unsigned long offset, const void *value, unsigned long size);\n"
    "struct Entry { CUgraphDeviceUpdatableNode_st *node; unsigned at, size; int slot, shift; unsigned long long offset; };\n"
    "struct Vals { unsigned long long v[64]; };\n"
    "extern \"C\" __global__ void pgrt_update(const Entry *e, int n, Vals vals) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n || (i > 0 && e[i - 1].node == e[i].node)) return;\n"
    "  for (int j = i; j < n && e[j].node == e[i].node; j++) { /* one thread per node */\n"
    "    unsigned long long x = (vals.v[e[j].slot] + e[j].offset) >> e[j].shift; /* little-endian: low bytes first */\n"
    "    cudaGraphKernelNodeSetParam(e[j].node, e[j].at, &x, e[j].size);\n"
    "  }\n"
    "}\n";

/* Copies and memsets whose operands move.  CUDA patches memcpy and memset nodes of
 * an instantiated graph only when they are one-dimensional
 * (cuGraphExecMemcpyNodeSetParams, ...SetParams: "must be 1-dimensional") and their
 * memory keeps its mapping (memory of the virtual memory API is refused), so in a
 * graph such a node is built as one of these kernels,
 * whose parameters can be patched like any kernel's.  Rows are `pitch` bytes apart;
 * a 3-D box is height x depth rows (slices are height rows apart).  Either side may
 * be pinned host memory (unified addressing). */
static const char pgrt_box_source[] =
    "typedef unsigned long long u64;\n"
    "extern \"C\" __global__ void pgrt_copy(const unsigned char *src, unsigned char *dst, u64 width, u64 rows,\n"
    "                                     u64 spitch, u64 dpitch) {\n"
    "  for (u64 r = blockIdx.y; r < rows; r += gridDim.y)\n"
    "    for (u64 x = blockIdx.x * (u64)blockDim.x + threadIdx.x; x < width; x += (u64)gridDim.x * blockDim.x)\n"
    "      dst[r * dpitch + x] = src[r * spitch + x];\n"
    "}\n"
    "extern \"C\" __global__ void pgrt_set(unsigned char *dst, unsigned value, unsigned elem, u64 width, u64 rows,\n"
    "                                    u64 pitch) {\n"
    "  for (u64 r = blockIdx.y; r < rows; r += gridDim.y)\n"
    "    for (u64 x = blockIdx.x * (u64)blockDim.x + threadIdx.x; x < width; x += (u64)gridDim.x * blockDim.x) {\n"
    "      unsigned char *row = dst + r * pitch;\n"
    "      if (elem == 1) row[x] = (unsigned char)value;\n"
    "      else if (elem == 2) ((unsigned short *)row)[x] = (unsigned short)value;\n"
    "      else ((unsigned *)row)[x] = value;\n"
    "    }\n"
    "}\n";
/* The random-number state of a program that draws random numbers (a buffer of kind
 * PGRT_BUF_RNG: PyTorch's Philox seed, then its offset), written at the start of every
 * call from the values pgrt_rng_set gave, as PyTorch's graph replay fills its
 * generator's seed and offset tensors.  The values go by value, in the launch's
 * parameters: no host memory that a later call could overwrite while the copy waits. */
static const char pgrt_rng_source[] =
    "extern \"C\" __global__ void pgrt_rng(unsigned long long *state, unsigned long long seed,\n"
    "                                    unsigned long long offset) {\n"
    "  state[0] = seed;\n"
    "  state[1] = offset;\n"
    "}\n";

/* The sources by number (pgrt_prebuilt's `own` is an index here), each with the name
 * messages give it and its kernels, in the order libpgrt keeps their functions
 * (pgrt_impl.h: PGRT_BOX_COPY, PGRT_BOX_SET). */
enum { PGRT_OWN_UPDATER, PGRT_OWN_BOX, PGRT_OWN_RNG, PGRT_OWN_COUNT };
#define PGRT_OWN_MAX_KERNELS 2
static const struct {
  const char *name, *source;
  int kernel_count;
  const char *kernels[PGRT_OWN_MAX_KERNELS];
} pgrt_own[PGRT_OWN_COUNT] = {
    {"the updater", pgrt_updater_source, 1, {"pgrt_update"}},
    {"the box kernels", pgrt_box_source, 2, {"pgrt_copy", "pgrt_set"}},
    {"the random-number state writer", pgrt_rng_source, 1, {"pgrt_rng"}},
};

/* A cubin compiled when libpgrt was built: source `own` for sm_<sm> (major * 10 + minor). */
typedef struct {
  int own, sm;
  const unsigned char *cubin;
  size_t size;
} pgrt_prebuilt;
extern const pgrt_prebuilt pgrt_prebuilt_cubins[];
extern const int pgrt_prebuilt_count;
extern const int pgrt_prebuilt_nvrtc; /* the NVRTC that compiled them: major * 1000 + minor * 10 */

#endif

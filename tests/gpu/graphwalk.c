/*
 * graphwalk.c -- measures a captured CUDA graph two ways, from C, for the cost-model
 * validation (tests/gpu/cost_validate.py loads it with ctypes):
 *
 *   eager: every node launched as a stream operation in topological order, with the
 *          parameters captured in it (cuLaunchKernel, cuMemcpy3DAsync,
 *          cuMemsetD2D*Async) -- what pgcc's eager regions do;
 *   graph: the graph instantiated and replayed with cuGraphLaunch.
 *
 * Both are timed with CUDA events around one whole pass, median over `reps`.
 * Built on the GPU machine:  gcc -O2 -shared -fPIC -I/usr/local/cuda/include \
 *                                graphwalk.c -o graphwalk.so -lcuda
 */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The one check: the failing call, where, and the device. */
#define CK(call)                                                                                  \
  do {                                                                                            \
    CUresult r_ = (call);                                                                         \
    if (r_ != CUDA_SUCCESS) {                                                                     \
      const char *s_ = "?";                                                                       \
      CUdevice d_ = -1;                                                                           \
      cuGetErrorString(r_, &s_);                                                                  \
      cuCtxGetDevice(&d_);                                                                        \
      fprintf(stderr, "graphwalk: %s failed: %s (%s:%d, %s, device %d)\n", #call, s_, __FILE__, __LINE__, \
              __func__, (int)d_);                                                                 \
      return (int)r_;                                                                             \
    }                                                                                             \
  } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* One node, as an eager stream operation: a kernel, a copy or a memset. */
typedef struct {
  CUgraphNodeType type;
  CUDA_KERNEL_NODE_PARAMS k;
  CUDA_MEMCPY3D c;
  CUDA_MEMSET_NODE_PARAMS m;
} Op;

static int get_op(CUgraphNode node, Op *op) {
  CK(cuGraphNodeGetType(node, &op->type));
  switch (op->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    CK(cuGraphKernelNodeGetParams(node, &op->k));
    if (!op->k.func) CK(cuKernelGetFunction(&op->k.func, op->k.kern));
    return 0;
  case CU_GRAPH_NODE_TYPE_MEMCPY: CK(cuGraphMemcpyNodeGetParams(node, &op->c)); return 0;
  case CU_GRAPH_NODE_TYPE_MEMSET: CK(cuGraphMemsetNodeGetParams(node, &op->m)); return 0;
  default: fprintf(stderr, "graphwalk: a node of type %d cannot be launched eagerly here\n", (int)op->type); return -2;
  }
}

static int launch_op(const Op *op, CUstream s) {
  const CUDA_MEMSET_NODE_PARAMS *m = &op->m;
  switch (op->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    CK(cuLaunchKernel(op->k.func, op->k.gridDimX, op->k.gridDimY, op->k.gridDimZ, op->k.blockDimX, op->k.blockDimY,
                      op->k.blockDimZ, op->k.sharedMemBytes, s, op->k.kernelParams, op->k.extra));
    return 0;
  case CU_GRAPH_NODE_TYPE_MEMCPY: CK(cuMemcpy3DAsync(&op->c, s)); return 0;
  case CU_GRAPH_NODE_TYPE_MEMSET: {
    size_t pitch = m->height > 1 ? m->pitch : m->width * m->elementSize;
    if (m->elementSize == 1) CK(cuMemsetD2D8Async(m->dst, pitch, (unsigned char)m->value, m->width, m->height, s));
    else if (m->elementSize == 2) CK(cuMemsetD2D16Async(m->dst, pitch, (unsigned short)m->value, m->width, m->height, s));
    else CK(cuMemsetD2D32Async(m->dst, pitch, m->value, m->width, m->height, s));
    return 0;
  }
  default: return -2;
  }
}

/* out[0] eager GPU us, out[1] graph GPU us, out[2] eager host us per pass,
 * out[3] graph host us per launch, out[4] nodes, out[5] kernel nodes.
 * Returns 0 or an error. */
int pgw_measure(unsigned long long graph_handle, int reps, double *out) {
  CUgraph g = (CUgraph)(uintptr_t)graph_handle;
  CUcontext ctx = NULL;
  CK(cuCtxGetCurrent(&ctx));
  if (!ctx) {
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
  }
  size_t n = 0, ne = 0;
  CK(cuGraphGetNodes(g, NULL, &n));
  CUgraphNode *nodes = calloc(n, sizeof *nodes);
  CK(cuGraphGetNodes(g, nodes, &n));
  CK(cuGraphGetEdges(g, NULL, NULL, NULL, &ne));
  CUgraphNode *from = calloc(ne + 1, sizeof *from), *to = calloc(ne + 1, sizeof *to);
  CK(cuGraphGetEdges(g, from, to, NULL, &ne));

  /* topological order (Kahn), stable in node order */
  size_t *indeg = calloc(n, sizeof *indeg), *order = calloc(n, sizeof *order), k = 0;
  char *done = calloc(n, 1);
  for (size_t e = 0; e < ne; e++)
    for (size_t i = 0; i < n; i++)
      if (nodes[i] == to[e]) indeg[i]++;
  while (k < n) {
    size_t i;
    for (i = 0; i < n && (done[i] || indeg[i]); i++) {}
    if (i == n) {
      fprintf(stderr, "graphwalk: the graph has a cycle\n");
      return -1;
    }
    done[i] = 1;
    order[k++] = i;
    for (size_t e = 0; e < ne; e++)
      if (from[e] == nodes[i])
        for (size_t j = 0; j < n; j++)
          if (nodes[j] == to[e]) indeg[j]--;
  }

  Op *ops = calloc(n, sizeof *ops);
  size_t kernels = 0;
  for (size_t i = 0; i < n; i++) {
    int rc = get_op(nodes[i], &ops[i]);
    if (rc) return rc;
    kernels += ops[i].type == CU_GRAPH_NODE_TYPE_KERNEL;
  }

  CUstream s;
  CUevent e0, e1;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  double *eg = calloc((size_t)reps, sizeof *eg), *eh = calloc((size_t)reps, sizeof *eh);
  double *gg = calloc((size_t)reps, sizeof *gg), *gh = calloc((size_t)reps, sizeof *gh);
  for (int r = -3; r < reps; r++) { /* eager; 3 warm-up passes */
    CK(cuStreamSynchronize(s));
    CK(cuEventRecord(e0, s));
    double t0 = now_us();
    for (size_t q = 0; q < n; q++) {
      int rc = launch_op(&ops[order[q]], s);
      if (rc) return rc;
    }
    double t1 = now_us();
    CK(cuEventRecord(e1, s));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    if (r >= 0) eg[r] = ms * 1e3, eh[r] = t1 - t0;
  }
  CUgraphExec exec;
  CK(cuGraphInstantiate(&exec, g, 0));
  CK(cuGraphUpload(exec, s));
  for (int r = -3; r < reps; r++) { /* graph */
    CK(cuStreamSynchronize(s));
    CK(cuEventRecord(e0, s));
    double t0 = now_us();
    CK(cuGraphLaunch(exec, s));
    double t1 = now_us();
    CK(cuEventRecord(e1, s));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    if (r >= 0) gg[r] = ms * 1e3, gh[r] = t1 - t0;
  }
  out[0] = median(eg, reps);
  out[1] = median(gg, reps);
  out[2] = median(eh, reps);
  out[3] = median(gh, reps);
  out[4] = (double)n;
  out[5] = (double)kernels;
  CK(cuGraphExecDestroy(exec));
  CK(cuEventDestroy(e0));
  CK(cuEventDestroy(e1));
  CK(cuStreamDestroy(s));
  free(nodes), free(from), free(to), free(indeg), free(order), free(done), free(ops);
  free(eg), free(eh), free(gg), free(gh);
  return 0;
}

/* out[i]: GPU time of kernel node i (cuGraphGetNodes order) when it runs by itself,
 * inside a graph of `copies` launches of it, per launch.  Returns 0 or an error. */
int pgw_node_times(unsigned long long graph_handle, int copies, int reps, double *out, int max_nodes) {
  CUgraph g = (CUgraph)(uintptr_t)graph_handle;
  size_t n = 0;
  CK(cuGraphGetNodes(g, NULL, &n));
  if ((int)n > max_nodes) return -3;
  CUgraphNode *nodes = calloc(n, sizeof *nodes);
  CK(cuGraphGetNodes(g, nodes, &n));
  CUstream s;
  CUevent e0, e1;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  double *t = calloc((size_t)reps, sizeof *t);
  CUcontext ctx;
  CK(cuCtxGetCurrent(&ctx));
  for (size_t i = 0; i < n; i++) {
    Op op;
    int rc = get_op(nodes[i], &op);
    if (rc) return rc;
    CUgraph one;
    CK(cuGraphCreate(&one, 0));
    CUgraphNode prev = NULL, cur;
    for (int c = 0; c < copies; c++) {
      const CUgraphNode *dep = prev ? &prev : NULL;
      size_t nd = prev ? 1 : 0;
      if (op.type == CU_GRAPH_NODE_TYPE_KERNEL) CK(cuGraphAddKernelNode(&cur, one, dep, nd, &op.k));
      if (op.type == CU_GRAPH_NODE_TYPE_MEMCPY) CK(cuGraphAddMemcpyNode(&cur, one, dep, nd, &op.c, ctx));
      if (op.type == CU_GRAPH_NODE_TYPE_MEMSET) CK(cuGraphAddMemsetNode(&cur, one, dep, nd, &op.m, ctx));
      prev = cur;
    }
    CUgraphExec exec;
    CK(cuGraphInstantiate(&exec, one, 0));
    CK(cuGraphUpload(exec, s));
    for (int r = -2; r < reps; r++) {
      CK(cuEventRecord(e0, s));
      CK(cuGraphLaunch(exec, s));
      CK(cuEventRecord(e1, s));
      CK(cuEventSynchronize(e1));
      float ms;
      CK(cuEventElapsedTime(&ms, e0, e1));
      if (r >= 0) t[r] = ms * 1e3 / copies;
    }
    out[i] = median(t, reps);
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(one));
  }
  CK(cuEventDestroy(e0));
  CK(cuEventDestroy(e1));
  CK(cuStreamDestroy(s));
  free(nodes), free(t);
  return 0;
}

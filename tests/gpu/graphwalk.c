/*
 * graphwalk.c -- measures a captured CUDA graph two ways, from C, for the cost-model
 * validation (tests/gpu/cost_validate.py loads it with ctypes):
 *
 *   eager: every kernel node launched with cuLaunchKernel, in topological order,
 *          with the parameters captured in it -- what pgcc's eager regions do;
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

/* out[0] eager GPU us, out[1] graph GPU us, out[2] eager host us per pass,
 * out[3] graph host us per launch, out[4] kernel nodes.  Returns 0 or an error. */
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

  CUDA_KERNEL_NODE_PARAMS *p = calloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType type;
    CK(cuGraphNodeGetType(nodes[i], &type));
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) {
      fprintf(stderr, "graphwalk: node %zu is not a kernel (type %d)\n", i, (int)type);
      return -2;
    }
    CK(cuGraphKernelNodeGetParams(nodes[i], &p[i]));
    if (!p[i].func) CK(cuKernelGetFunction(&p[i].func, p[i].kern));
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
      const CUDA_KERNEL_NODE_PARAMS *kp = &p[order[q]];
      CK(cuLaunchKernel(kp->func, kp->gridDimX, kp->gridDimY, kp->gridDimZ, kp->blockDimX, kp->blockDimY,
                        kp->blockDimZ, kp->sharedMemBytes, s, kp->kernelParams, kp->extra));
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
  CK(cuGraphExecDestroy(exec));
  CK(cuEventDestroy(e0));
  CK(cuEventDestroy(e1));
  CK(cuStreamDestroy(s));
  free(nodes), free(from), free(to), free(indeg), free(order), free(done), free(p);
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
  for (size_t i = 0; i < n; i++) {
    CUDA_KERNEL_NODE_PARAMS p;
    CK(cuGraphKernelNodeGetParams(nodes[i], &p));
    CUgraph one;
    CK(cuGraphCreate(&one, 0));
    CUgraphNode prev = NULL, cur;
    for (int c = 0; c < copies; c++) {
      CK(cuGraphAddKernelNode(&cur, one, prev ? &prev : NULL, prev ? 1 : 0, &p));
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

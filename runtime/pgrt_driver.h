/*
 * pgrt_driver.h -- every CUDA driver function libpgrt calls, listed once, and the table
 * they are loaded into.  Installed with pgrt.h, which includes it.
 *
 * libpgrt does not link libcuda: it loads the driver with dlopen at its first use
 * (pgrt.h, "The CUDA driver, loaded at run time") and looks each function below up
 * (dlsym) under the symbol cuda.h's macros give it, the one a program linked against
 * libcuda calls (cuMemAlloc: cuMemAlloc_v2; cuda_driver.c says why not cuGetProcAddress).  Each member has the type and the
 * (macro-expanded) name of cuda.h's declaration: drv->cuMemAlloc(&p, n) is called as
 * cuMemAlloc(&p, n) would be.  The last group is what a program around libpgrt needs
 * to run one (examples/deploy: a device, its primary context, its buffers), so that it
 * need not link libcuda either.
 */
#ifndef PGRT_DRIVER_H
#define PGRT_DRIVER_H

#include <cuda.h>
#include <stddef.h>
#include <string.h>

#define PGRT_DRIVER_FUNCS(X)                                                                            \
  /* errors, devices, contexts */                                                                       \
  X(cuGetErrorString) X(cuDeviceGetAttribute) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize)  \
  /* memory */                                                                                          \
  X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer)             \
  X(cuMemcpyHtoD) X(cuMemcpyAsync) X(cuMemcpy3DAsync) X(cuMemsetD2D8Async) X(cuMemsetD2D16Async)         \
  X(cuMemsetD2D32Async)                                                                                 \
  /* libraries, kernels, functions */                                                                   \
  X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuLibraryGetGlobal)                   \
  X(cuKernelGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute)                                    \
  /* streams, events, launches */                                                                       \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)                      \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)      \
  X(cuLaunchKernelEx) X(cuLaunchHostFunc)                                                               \
  /* graphs */                                                                                          \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddNode) X(cuGraphAddKernelNode) X(cuGraphAddMemcpyNode)   \
  X(cuGraphAddMemsetNode) X(cuGraphAddHostNode) X(cuGraphAddEventRecordNode)                            \
  X(cuGraphAddEventWaitNode) X(cuGraphAddEmptyNode) X(cuGraphAddChildGraphNode)                         \
  X(cuGraphAddDependencies) X(cuGraphGetEdges) X(cuGraphConditionalHandleCreate)                        \
  X(cuGraphKernelNodeGetAttribute) X(cuGraphKernelNodeSetAttribute) X(cuGraphDebugDotPrint)             \
  X(cuGraphInstantiate) X(cuGraphUpload) X(cuGraphLaunch) X(cuGraphExecDestroy)                         \
  X(cuGraphExecKernelNodeSetParams) X(cuGraphExecMemcpyNodeSetParams) X(cuGraphExecMemsetNodeSetParams) \
  X(cuGraphExecHostNodeSetParams) X(cuGraphNodeSetEnabled)                                              \
  /* for the program around libpgrt */                                                                  \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)  \
  X(cuMemcpyDtoH) X(cuMemsetD8)

/* One pointer per function: cuda.h's type, under cuda.h's name (a macro there, such as
 * cuMemAlloc -> cuMemAlloc_v2, names the member the same way at every use). */
typedef struct {
#define PGRT_DRIVER_MEMBER(f) __typeof__(f) *f;
  PGRT_DRIVER_FUNCS(PGRT_DRIVER_MEMBER)
#undef PGRT_DRIVER_MEMBER
} pgrt_driver;

/* The name the driver's cuGetProcAddress knows function f by: cuda.h's name for it with its
 * macros expanded, less a version suffix "_vN" (which the CUDA version asked for picks).
 * Not f's own spelling: cuda.h makes cuGraphInstantiate cuGraphInstantiateWithFlags, and
 * the driver's "cuGraphInstantiate" is the older function of five arguments (asked for by
 * that name, it was called with three and crashed).  PGRT_DRIVER_SYMBOL(f, buf) writes it
 * into char buf[64]. */
#define PGRT_DRIVER_STR_(x) #x
#define PGRT_DRIVER_STR(x) PGRT_DRIVER_STR_(x)
#define PGRT_DRIVER_SYMBOL(f, buf) pgrt_driver_symbol(PGRT_DRIVER_STR(f), buf, sizeof buf)
static inline const char *pgrt_driver_symbol(const char *expanded, char *out, size_t size) {
  size_t n = strlen(expanded);
  size_t end = n;
  while (end > 0 && expanded[end - 1] >= '0' && expanded[end - 1] <= '9') end--;
  if (end < n && end >= 2 && expanded[end - 1] == 'v' && expanded[end - 2] == '_') n = end - 2;
  if (n >= size) n = size - 1;
  memcpy(out, expanded, n);
  out[n] = 0;
  return out;
}

#endif

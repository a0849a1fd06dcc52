/*
 * pgrt_driver.h -- every CUDA driver function libpgrt calls, listed once, and the table
 * they are loaded into.  Installed with pgrt.h, which includes it.
 *
 * libpgrt does not link libcuda: it loads the driver with dlopen at its first use
 * (pgrt.h, "The CUDA driver, loaded at run time") and asks the driver's
 * cuGetProcAddress for each function below, for the CUDA version libpgrt was built
 * against (CUDA_VERSION), so each name resolves to the version cuda.h's macros give it
 * at compile time (cuMemAlloc: cuMemAlloc_v2).  Each member has the type and the
 * (macro-expanded) name of cuda.h's declaration: drv->cuMemAlloc(&p, n) is called as
 * cuMemAlloc(&p, n) would be.  The last group is what a program around libpgrt needs
 * to run one (examples/deploy: a device, its primary context, its buffers), so that it
 * need not link libcuda either.
 */
#ifndef PGRT_DRIVER_H
#define PGRT_DRIVER_H

#include <cuda.h>

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

#endif

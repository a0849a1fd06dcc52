/*
 * fakecuda.h -- between the CPU double of the CUDA driver (fakecuda.c) and the host
 * versions of the kernels it runs (kernels.c).  See fakecuda.c for what the double
 * is and is not.
 */
#ifndef PGCC_FAKECUDA_H
#define PGCC_FAKECUDA_H

#include <cuda.h>
#include <stddef.h>

/* One launch of a kernel: its grid and block, and a pointer to each of its parameters
 * (in the layout its cubin declares), as a kernel's threads would see them. */
typedef struct {
  const char *name;
  unsigned grid[3], block[3];
  void **args;
  CUlibrary lib; /* the library it came from: its module globals */
} fake_launch;

/* A kernel's host version: runs every thread of the launch.  Returns 0, or nonzero
 * for a fault (the message printed), which becomes the context's sticky error. */
typedef int (*fake_kernel_fn)(const fake_launch *l);

/* kernels.c: the host version of the kernel of this name, NULL where there is none */
fake_kernel_fn fake_kernel(const char *name);

/* fakecuda.c, for kernels.c: what the device runtime's calls do */
void fake_set_conditional(unsigned long long handle, unsigned value);           /* cudaGraphSetConditional */
int fake_set_param(void *dev_node, size_t offset, const void *value, size_t size); /* cudaGraphKernelNodeSetParam */
void *fake_global(CUlibrary lib, const char *name);                             /* a __device__ variable */

#define FAKE_ARG(l, k, type) (*(type *)(l)->args[k])

#endif

// rt_check.h -- the one check macro of the benchmarks written against the CUDA runtime API
// (launch_cost.cu, patch_upload.cu, priority_flag.cu): the call, the error, file:line, then
// exit 1.  (The driver-API programs share tests/gpu/gpu_check.h.)
#ifndef PGCC_BENCH_RT_CHECK_H
#define PGCC_BENCH_RT_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                      \
  do {                                                                                                   \
    cudaError_t err_ = (call);                                                                           \
    if (err_ != cudaSuccess) {                                                                           \
      fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(err_), __FILE__, __LINE__); \
      exit(1);                                                                                           \
    }                                                                                                    \
  } while (0)

#endif

// pgcc-export: sets a SWITCH node's condition to the index of the bucket this call
// runs, which libpgrt computes from the caller's size and passes as `index`.
#ifdef __CUDACC_RTC__
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif
extern "C" __global__ void pgcc_bucket_set(unsigned long long cond, unsigned int index) {
  cudaGraphSetConditional(cond, index);
}

// pgcc-export: sets a conditional node's condition on the device: 1 when the n bytes
// at v equal `expect` (little-endian), else 0.  The value the program read back on the
// host when it was exported chose the then-body; any other value, the else-body.
#ifdef __CUDACC_RTC__
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif
extern "C" __global__ void pgcc_cond_equal(unsigned long long cond, const unsigned char *v, unsigned long long expect,
                                           unsigned int n) {
  unsigned long long x = 0;
  for (unsigned int i = 0; i < n && i < 8; i++) x |= (unsigned long long)v[i] << (8 * i);
  cudaGraphSetConditional(cond, x == expect ? 1u : 0u);
}

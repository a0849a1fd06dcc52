/* Kernels of shapes.graph (tests/gpu/run_codegen.sh), compiled by NVRTC at init.
 * halves: t = t * s + b with an f16 s and a bf16 b, the literals pgcc encoded (as
 * their 16 bits: NVRTC finds no CUDA headers for __half).  Its thread 0 also writes
 * their bits beside the GPU's own rounding of the same values given as floats (sf,
 * bf; cvt.rn.f16.f32 and cvt.rn.bf16.f32), which is what the test compares them with. */
__device__ unsigned short to_f16(float v) {
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
}
__device__ unsigned short to_bf16(float v) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
}
__device__ float from_f16(unsigned short h) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
}
__device__ float from_bf16(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

extern "C" __global__ void halves(int n, unsigned short s, unsigned short b, float sf, float bf, float *t,
                                  unsigned *bits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) bits[0] = s, bits[1] = to_f16(sf), bits[2] = b, bits[3] = to_bf16(bf);
  if (i < n) t[i] = t[i] * from_f16(s) + from_bf16(b);
}

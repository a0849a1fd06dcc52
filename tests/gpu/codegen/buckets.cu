// Kernels of the bucket test program (buckets.graph), compiled by libpgrt with NVRTC at
// init: y = relu(x * w + b) over rows of 64 floats, one variant per batch size, and the
// setter that picks the variant on the device (the switch's condition is its handle).

#ifdef __CUDACC_RTC__
// NVRTC does not declare the device runtime; this is cuda_device_runtime_api.h's
// declaration (the compiler knows the function: nothing is linked).
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif

// The bucket switch runs body `index`: libpgrt writes the index of this call's bucket.
extern "C" __global__ void pgcc_bucket_set(unsigned long long cond, unsigned int index) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(cond, index);
}

// t = x * w: x [rows, 64], w [64, 64], t [rows, 64]; a block per row, a thread per column.
extern "C" __global__ void matmul(int rows, const float *x, const float *w, float *t) {
  int r = blockIdx.x, c = threadIdx.x;
  if (r >= rows || c >= 64) return;
  float s = 0.0f;
  for (int k = 0; k < 64; k++) s += x[r * 64 + k] * w[k * 64 + c];
  t[r * 64 + c] = s;
}

// y = relu(t + b): t and y [rows, 64], b [64].
extern "C" __global__ void bias_relu(int rows, const float *t, const float *b, float *y) {
  int r = blockIdx.x, c = threadIdx.x;
  if (r >= rows || c >= 64) return;
  float v = t[r * 64 + c] + b[c];
  y[r * 64 + c] = v > 0.0f ? v : 0.0f;
}

// Kernels of the host-read test program (hostread.graph), compiled by libpgrt with
// NVRTC at init.  stats: m = max |x| and flag = (x[0] >= 0), one block; scale: the
// kernel after the host read, y = x / m + bias, with m and bias by value.
extern "C" __global__ void stats(int n, const float *x, float *m, int *flag) {
  __shared__ float best[256];
  float b = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) b = fmaxf(b, fabsf(x[i]));
  best[threadIdx.x] = b;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) best[threadIdx.x] = fmaxf(best[threadIdx.x], best[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *m = best[0];
    *flag = x[0] >= 0.0f ? 1 : 0;
  }
}

extern "C" __global__ void scale(int n, float m, float bias, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / m + bias;
}

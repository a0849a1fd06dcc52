// Kernels of the 2-rank NCCL test program (allreduce.graph), compiled by libpgrt with
// NVRTC at init.
extern "C" __global__ void mul(int n, const float *x, const float *w, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * w[i];
}

extern "C" __global__ void add1(int n, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

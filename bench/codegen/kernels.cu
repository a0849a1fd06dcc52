// Kernels of the code-generation test program (chain.graph), compiled by libpgrt
// with NVRTC at init.
extern "C" __global__ void mul(int n, const float *x, const float *w, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * w[i];
}

extern "C" __global__ void scale_add(int n, float a, const float *x, const float *b, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b[i] + y[i];
}

extern "C" __global__ void relu(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

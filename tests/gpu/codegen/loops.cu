// Kernels of the child-graph and conditional-node test program (loops.graph),
// compiled by libpgrt with NVRTC at init.  Two of them set a conditional node's
// condition on the device: its handle is their last argument.

#ifdef __CUDACC_RTC__
// NVRTC does not declare the device runtime; this is cuda_device_runtime_api.h's
// declaration (the compiler knows the function: nothing is linked).
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif
extern "C" __global__ void mul(int n, const float *x, const float *w, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * w[i];
}

extern "C" __global__ void relu(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

extern "C" __global__ void add_to(int n, const float *x, float *acc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += x[i];
}

// One iteration of a while loop: the loop goes on while the counter stays positive.
extern "C" __global__ void count_down(int *counter, unsigned long long loop) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int left = --counter[0];
    cudaGraphSetConditional(loop, left > 0 ? 1u : 0u);
  }
}

extern "C" __global__ void set_flag(unsigned flag, unsigned long long branch) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(branch, flag);
}

extern "C" __global__ void copy_scale(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

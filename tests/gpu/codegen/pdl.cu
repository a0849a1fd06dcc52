// Kernels of the programmatic-dependent-launch test program (pdl.graph), compiled by
// libpgrt with NVRTC at init.  produce is slow on purpose: each block waits about
// 20 µs before it stores, so that consume, launched early through the programmatic
// edge, reads x only because its griddepcontrol.wait waited for produce to finish.
extern "C" __global__ void produce(int n, const float *a, float *x) {
  long long t0 = clock64();
  while (clock64() - t0 < 40000) {
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * a[i];
}

extern "C" __global__ void consume(int n, const float *x, float *y) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + y[i];
}

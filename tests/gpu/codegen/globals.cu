// The kernel of the module-globals test program (globals.graph), compiled by libpgrt
// with NVRTC at init.  `scale` is a data object of the module (4 bytes in
// .nv.global.init, 1 in the module's image), read through memory as cuDNN's depthwise
// convolution reads WINDOW_SIZE; the .graph's `globals` makes libpgrt write 3 over it
// once the module has loaded.  A variable of the global namespace keeps its name in
// C++ (only names inside namespaces or classes are mangled), so the cubin NVRTC makes
// of this file names it `scale`, as cuLibraryGetGlobal is asked for it: no extern "C".
__device__ int scale = 1;

extern "C" __global__ void scale_by(int n, const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * scale;
}

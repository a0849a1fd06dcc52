// The kernel of the random-number test program (philox.graph), compiled by libpgrt with
// NVRTC at init.  It takes its seed and offset as PyTorch's Philox kernels take them
// inside a CUDA graph: a by-value PhiloxCudaState of pointers to the generator's seed and
// offset, the kernel's own offset within the call, and `captured` (true: read them
// through the pointers).  It writes what such a kernel would draw from: the seed, and the
// offset plus its own.
struct PhiloxState {
  const unsigned long long *seed, *offset;
  unsigned long long intragraph;
  bool captured;
};

extern "C" __global__ void philox_probe(PhiloxState s, unsigned long long *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out[0] = s.captured ? *s.seed : 0;
    out[1] = s.captured ? *s.offset + s.intragraph : 0;
  }
}

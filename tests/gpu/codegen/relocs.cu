// The kernel of the relocation test program (relocs.graph), compiled by libpgrt with
// NVRTC at init.  Its by-value struct is 4-byte aligned, so the whole address `in`
// sits at offset 4, not 8; `out` comes in two halves (lo32, hi32 relocations) and is
// reassembled here; `check_lo` is the low half of the address also passed whole as
// `check` (as cuDNN's nchwToNhwcKernel takes one); `junk` changes between captures
// and is never read (a don't-care word).
struct Params {          // 32 bytes
  unsigned n;            //  0
  unsigned in_lo, in_hi; //  4: abs64, a whole address at a 4-byte-aligned offset
  unsigned junk;         // 12: don't care
  unsigned out_lo;       // 16: lo32 of out
  unsigned out_hi;       // 20: hi32 of out
  float a;               // 24
  unsigned check_lo;     // 28: lo32 of check
};

extern "C" __global__ void axpy_split(Params p, float *check, float b) {
  const float *in = (const float *)((unsigned long long)p.in_hi << 32 | p.in_lo);
  float *out = (float *)((unsigned long long)p.out_hi << 32 | p.out_lo);
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.n) return;
  float v = in[i];
  out[i] = p.a * v + b;
  check[i] = p.check_lo == (unsigned)(unsigned long long)check ? v * v : __int_as_float(0x7fc00000);
}

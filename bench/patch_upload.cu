// patch_upload -- what patching a graph's kernel nodes costs the GPU, and whether an
// upload ahead, into a second executable graph, takes it off the GPU's path.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/patch_upload.cu -o build/patch_upload
//   build/patch_upload [NODES] [US] [ROUNDS]     (default 60 nodes of 5 us, 7 rounds)
//
// pgcc's convnets run 0.3-0.5% above their floor with arguments that move from call to
// call, and at it with arguments fixed (docs/compiler.md): a call patches the one or two
// nodes that take the inputs (cudaGraphExecKernelNodeSetParams), and the launch uploads
// their parameters before they run.  Here a chain of NODES kernels, each spinning US
// microseconds, of which P take a pointer that changes every call, is replayed 20 times
// back to back (the host ahead of the GPU, as in a loop of calls) and the GPU's time per
// replay taken with events, each way in turn, round by round:
//   fixed     the same parameters every call (the floor)
//   patched   P nodes patched, then launched                       (what libpgrt does)
//   uploaded  P nodes patched, cudaGraphUpload on the launch stream, then launched
//   two       two executable graphs used in turn, each patched for its call, then launched
//   ahead     two executable graphs in turn; the one for this call patched and uploaded
//             on a side stream (cudaGraphUpload), the launch stream waiting for that
//             upload by an event: the upload may overlap the other graph's run
// Medians over rounds, spread = (max - min) / median, and each way's ratio to fixed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rt_check.h"

// Spins for `cycles` clock cycles and writes one word where it is pointed: a pointer
// that must be right (the check at the end reads what each buffer got).
__global__ void spin(int *p, long long cycles, int tag) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) p[tag] += 1;
}

struct Chain {
  cudaGraph_t g;
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaKernelNodeParams> params;
  std::vector<void *> args;  // (three per node: pointer, cycles, tag)
  std::vector<int *> ptrs;
  std::vector<long long> cycles;
  std::vector<int> tags;
};

static void build(Chain &c, int n, long long cycles, int *fixed) {
  CHECK(cudaGraphCreate(&c.g, 0));
  c.nodes.resize(n);
  c.params.resize(n);
  c.ptrs.assign(n, fixed);
  c.cycles.assign(n, cycles);
  c.tags.resize(n);
  c.args.resize(3 * (size_t)n);
  for (int i = 0; i < n; i++) {
    c.tags[i] = i;
    c.args[3 * i] = &c.ptrs[i];
    c.args[3 * i + 1] = &c.cycles[i];
    c.args[3 * i + 2] = &c.tags[i];
    cudaKernelNodeParams &kp = c.params[i];
    kp = {};
    kp.func = (void *)spin;
    kp.gridDim = dim3(132);
    kp.blockDim = dim3(128);
    kp.kernelParams = &c.args[3 * i];
    CHECK(cudaGraphAddKernelNode(&c.nodes[i], c.g, i ? &c.nodes[i - 1] : nullptr, i ? 1 : 0, &kp));
  }
}

// The nodes that take the moving pointer: the first P, spread over the chain as a
// convnet's input and output nodes are (first and last).
static std::vector<int> moving(int n, int p) {
  std::vector<int> m;
  for (int k = 0; k < p; k++) m.push_back(k % 2 == 0 ? k / 2 : n - 1 - k / 2);
  return m;
}

static void patch(Chain &c, cudaGraphExec_t ex, const std::vector<int> &m, int *ptr) {
  for (int i : m) {
    c.ptrs[i] = ptr;
    CHECK(cudaGraphExecKernelNodeSetParams(ex, c.nodes[i], &c.params[i]));
  }
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 60;
  double us = argc > 2 ? atof(argv[2]) : 5.0;
  int rounds = argc > 3 ? atoi(argv[3]) : 7;
  const int iters = 20, nbuf = 4;
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  long long cycles = (long long)(us * clock_khz / 1000.0);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int drv = 0, rt = 0;
  CHECK(cudaDriverGetVersion(&drv));
  CHECK(cudaRuntimeGetVersion(&rt));
  printf("# %s, driver API %d, runtime %d; %d nodes of %.1f us, %d replays a round, %d rounds\n", prop.name, drv, rt,
         n, us, iters, rounds);

  int *bufs[nbuf + 1];
  for (int b = 0; b <= nbuf; b++) {
    CHECK(cudaMalloc(&bufs[b], sizeof(int) * n));
    CHECK(cudaMemset(bufs[b], 0, sizeof(int) * n));
  }
  cudaStream_t s, side;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, up[2];
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (auto &e : up) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));

  const char *ways[] = {"fixed", "patched", "uploaded", "two", "ahead"};
  const int nways = 5;
  const int ps[] = {1, 2, 8};
  for (int p : ps) {
    Chain c;
    build(c, n, cycles, bufs[nbuf]);
    cudaGraphExec_t ex[2];
    for (auto &x : ex) {
      CHECK(cudaGraphInstantiate(&x, c.g, 0));
      CHECK(cudaGraphUpload(x, s));
    }
    std::vector<int> m = moving(n, p);
    std::vector<std::vector<double>> t(nways);
    long long calls = 0;
    for (int r = 0; r < rounds; r++) {
      for (int w = 0; w < nways; w++) {
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaEventRecord(e0, s));
        for (int it = 0; it < iters; it++, calls++) {
          int *ptr = bufs[calls % nbuf];
          cudaGraphExec_t x = ex[0];
          if (w == 1 || w == 2) patch(c, x, m, ptr);
          if (w == 2) CHECK(cudaGraphUpload(x, s));
          if (w == 3 || w == 4) {
            x = ex[it % 2];
            patch(c, x, m, ptr);
          }
          if (w == 4) {
            CHECK(cudaGraphUpload(x, side));
            CHECK(cudaEventRecord(up[it % 2], side));
            CHECK(cudaStreamWaitEvent(s, up[it % 2], 0));
          }
          CHECK(cudaGraphLaunch(x, s));
        }
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t[w].push_back(1000.0 * ms / iters);
      }
    }
    CHECK(cudaDeviceSynchronize());
    // Every pointer reached its buffer: each buffer's words sum to what was written.
    long long got = 0;
    for (int b = 0; b <= nbuf; b++) {
      std::vector<int> h(n);
      CHECK(cudaMemcpy(h.data(), bufs[b], sizeof(int) * n, cudaMemcpyDeviceToHost));
      for (int v : h) got += v;
      CHECK(cudaMemset(bufs[b], 0, sizeof(int) * n));
    }
    long long want = (long long)rounds * nways * iters * n;
    if (got != want) {
      fprintf(stderr, "patch_upload: the kernels wrote %lld times, not %lld\n", got, want);
      return 1;
    }
    double base = median(t[0]);
    printf("\n%d of %d nodes patched a call: GPU us per replay, median of %d rounds (spread), ratio to fixed\n", p,
           n, rounds);
    for (int w = 0; w < nways; w++) {
      double md = median(t[w]);
      double sp = (*std::max_element(t[w].begin(), t[w].end()) - *std::min_element(t[w].begin(), t[w].end())) / md;
      printf("  %-9s %9.2f  (%.4f)  %.4fx\n", ways[w], md, sp, md / base);
    }
    for (auto &x : ex) CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(c.g));
  }
  return 0;
}

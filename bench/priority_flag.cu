// priority_flag -- what `pgcc --priorities` changes in a widened graph: the kernels' launch
// priority, or the instantiate flag that makes CUDA honour it.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/priority_flag.cu -o build/priority_flag
//   build/priority_flag [ROUNDS]          (default 9 rounds of 20 replays)
//
// `--priorities` gives the kernels on a widened graph's critical path launch priority -1
// and instantiates the graph with cudaGraphInstantiateFlagUseNodePriority.  On the Llama
// layer every kernel is on the critical path, all get -1, and the layer ran 2.1% faster
// (docs/compiler.md): no kernel is preferred over another there, so either the flag
// itself or a priority above the launch stream's changes something.  Here a graph of W
// chains side by side (one long, the others shorter; each kernel spinning on half the
// SMs, so that not every ready kernel fits at once), and a plain chain, are replayed
// back to back, the GPU time per replay taken with events, four ways in turn:
//   plain     instantiated without the flag, no priorities
//   flag      instantiated with the flag, every kernel at the default priority 0
//   all       the flag, every kernel at -1 (the Llama layer's case)
//   critical  the flag, the long chain's kernels at -1, the others at 0
// Medians over rounds, spread = (max - min) / median, each way's ratio to plain.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rt_check.h"

__global__ void spin(long long cycles, int *p) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}

struct Graph {
  cudaGraph_t g;
  std::vector<cudaGraphNode_t> nodes;
  std::vector<int> critical;  // (1 for the long chain's kernels)
  std::vector<long long> cycles;
  std::vector<int *> ptrs;
  std::vector<void *> args;
};

// chains[c] kernels of `us` microseconds each, chain c side by side with the others,
// all from one root kernel and into one join kernel; blocks per kernel.
static void build(Graph &G, const std::vector<int> &chains, double us, int blocks, int clock_khz, int *count) {
  int total = 2;
  for (int n : chains) total += n;
  G.cycles.assign(total, (long long)(us * clock_khz / 1000.0));
  G.ptrs.assign(total, count);
  G.args.resize(2 * (size_t)total);
  G.nodes.resize(total);
  G.critical.assign(total, 1);
  CHECK(cudaGraphCreate(&G.g, 0));
  auto add = [&](int i, const std::vector<cudaGraphNode_t> &deps) {
    G.args[2 * i] = &G.cycles[i];
    G.args[2 * i + 1] = &G.ptrs[i];
    cudaKernelNodeParams kp = {};
    kp.func = (void *)spin;
    kp.gridDim = dim3(blocks);
    kp.blockDim = dim3(128);
    kp.kernelParams = &G.args[2 * i];
    CHECK(cudaGraphAddKernelNode(&G.nodes[i], G.g, deps.data(), deps.size(), &kp));
  };
  add(0, {});
  int i = 1;
  std::vector<cudaGraphNode_t> tails;
  for (size_t c = 0; c < chains.size(); c++) {
    cudaGraphNode_t prev = G.nodes[0];
    for (int k = 0; k < chains[c]; k++, i++) {
      add(i, {prev});
      G.critical[i] = c == 0;  // (the first chain is the longest)
      prev = G.nodes[i];
    }
    tails.push_back(prev);
  }
  add(i, tails);
}

static cudaGraphExec_t instantiate(Graph &G, int way) {
  for (size_t i = 0; i < G.nodes.size(); i++) {
    cudaLaunchAttributeValue v = {};
    v.priority = way == 2 ? -1 : way == 3 && G.critical[i] ? -1 : 0;
    CHECK(cudaGraphKernelNodeSetAttribute(G.nodes[i], cudaLaunchAttributePriority, &v));
  }
  cudaGraphExec_t ex;
  CHECK(cudaGraphInstantiateWithFlags(&ex, G.g, way == 0 ? 0 : cudaGraphInstantiateFlagUseNodePriority));
  return ex;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  const int iters = 20;
  int clock_khz = 0, sms = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int lo = 0, hi = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  printf("# %s, %d SMs, stream priorities %d (lowest) to %d (highest); %d replays a round, %d rounds\n", prop.name,
         sms, lo, hi, iters, rounds);
  int *count;
  CHECK(cudaMalloc(&count, sizeof(int)));
  CHECK(cudaMemset(count, 0, sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  struct Shape {
    const char *what;
    std::vector<int> chains;
    double us;
    int blocks;
  } shapes[] = {
      {"4 chains (12, 6, 6, 6 kernels of 3 us), half the SMs each", {12, 6, 6, 6}, 3.0, sms / 2},
      {"6 chains (8, 4 x 5 kernels of 2 us), a third of the SMs each", {8, 4, 4, 4, 4, 4}, 2.0, sms / 3},
      {"1 chain (16 kernels of 2 us), all SMs", {16}, 2.0, sms},
  };
  const char *ways[] = {"plain", "flag", "all", "critical"};
  long long launched = 0, kernels = 0;
  for (auto &sh : shapes) {
    Graph G;
    build(G, sh.chains, sh.us, sh.blocks, clock_khz, count);
    cudaGraphExec_t ex[4];
    for (int w = 0; w < 4; w++) {
      ex[w] = instantiate(G, w);
      CHECK(cudaGraphUpload(ex[w], s));
    }
    std::vector<std::vector<double>> t(4);
    for (int r = 0; r < rounds; r++)
      for (int w = 0; w < 4; w++) {
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaEventRecord(e0, s));
        for (int it = 0; it < iters; it++) CHECK(cudaGraphLaunch(ex[w], s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t[w].push_back(1000.0 * ms / iters);
        launched += iters;
      }
    kernels += (long long)G.nodes.size() * rounds * 4 * iters;
    printf("\n%s: GPU us per replay, median of %d rounds (spread), ratio to plain\n", sh.what, rounds);
    double base = median(t[0]);
    for (int w = 0; w < 4; w++) {
      double md = median(t[w]);
      double sp = (*std::max_element(t[w].begin(), t[w].end()) - *std::min_element(t[w].begin(), t[w].end())) / md;
      printf("  %-9s %8.2f  (%.4f)  %.4fx\n", ways[w], md, sp, md / base);
    }
    for (auto x : ex) CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(G.g));
  }
  int got = 0;
  CHECK(cudaMemcpy(&got, count, sizeof(int), cudaMemcpyDeviceToHost));
  if (got != kernels) {
    fprintf(stderr, "priority_flag: %d kernels ran, not %lld\n", got, kernels);
    return 1;
  }
  return 0;
}

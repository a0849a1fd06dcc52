// launch_cost -- what a graph's launch costs the host, by what its nodes are.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/launch_cost.cu -lcuda -o build/launch_cost
//   build/launch_cost [N] [ROUNDS]          (default 100 nodes, 15 rounds)
//
// The zoo's graphs cost the host 30-110 us a cudaGraphLaunch (bench/zoo_timing.py's floor:
// a bare replay of the compiled program's capture), while a chain of 100 tiny
// kernels costs 2 us (../shared/MEASUREMENTS.md).  Here each graph is a chain of N
// nodes of one kind only -- the same tiny kernel; each node its own function;
// parameter blocks of 1.5 KiB (as cuBLASLt's and cuDNN's kernels take); 100 KiB of
// dynamic shared memory; thread block clusters; many blocks; memsets; copies --
// captured from a stream, instantiated and uploaded, then launched on a stream of
// its own (one row: on the legacy default stream, as PyTorch's current stream is by
// default).  Host time of one cudaGraphLaunch (CLOCK_MONOTONIC around the call):
// "idle", the GPU idle and the stream empty before it; "busy", in a run of 50
// launches back to back.  The kinds are interleaved round by round; medians over
// all samples, spread = (p90 - p10) / median.  The GPU time of one replay is given
// too (events, 20 replays).  What it found: memset nodes cost ~0.7 us each, no kind
// of kernel node anything measurable (docs/e2e.md, "What a launch costs the host").
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "rt_check.h"

__global__ void tiny(int *p) {
  if (p && threadIdx.x == 1024) *p = 0;  // never true
}

template <int I>
__global__ void each(int *p) {
  if (p && threadIdx.x == 1024) *p = I;
}

struct Big {
  int *p;
  unsigned char pad[1528];
};  // 1536 bytes, like nvjet's packed arguments

__global__ void big(Big b) {
  if (b.p && threadIdx.x == 1024) *b.p = b.pad[7];
}

__global__ void smem(int *p) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (p && threadIdx.x == 1024) *p = s[3];
}

__global__ void __cluster_dims__(2, 1, 1) cluster(int *p) {
  if (p && threadIdx.x == 1024) *p = 0;
}

constexpr int kMaxEach = 128;
template <int... I>
static void each_table(void (**t)(int *), std::integer_sequence<int, I...>) {
  void (*f[])(int *) = {each<I>...};
  for (int i = 0; i < (int)sizeof...(I); i++) t[i] = f[i];
}

static double now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

struct Kind {
  const char *name;
  void (*enqueue)(int i, cudaStream_t s);
  bool legacy;  // launched on the legacy default stream (captured on another)
};

static int *dev;  // 1 MiB of scratch
static cudaStream_t side;  // what the graphs are captured on and launched on
static void (*table[kMaxEach])(int *);

static const Kind kinds[] = {
    {"same tiny kernel", [](int, cudaStream_t s) { tiny<<<1, 32, 0, s>>>(nullptr); }},
    {"same tiny kernel, legacy stream", [](int, cudaStream_t s) { tiny<<<1, 32, 0, s>>>(nullptr); }, true},
    {"a function per node", [](int i, cudaStream_t s) { table[i % kMaxEach]<<<1, 32, 0, s>>>(nullptr); }},
    {"1.5 KiB parameters", [](int, cudaStream_t s) { big<<<1, 32, 0, s>>>(Big{}); }},
    {"100 KiB dynamic smem", [](int, cudaStream_t s) { smem<<<1, 32, 100 << 10, s>>>(nullptr); }},
    {"clusters of 2", [](int, cudaStream_t s) { cluster<<<2, 32, 0, s>>>(nullptr); }},
    {"528 blocks of 256", [](int, cudaStream_t s) { tiny<<<528, 256, 0, s>>>(nullptr); }},
    {"memset 4 KiB", [](int i, cudaStream_t s) { CHECK(cudaMemsetAsync(dev + 1024 * (i % 64), 0, 4096, s)); }},
    {"copy 4 KiB d2d", [](int i, cudaStream_t s) {
       CHECK(cudaMemcpyAsync(dev + 1024 * (i % 64), dev + 1024 * ((i + 1) % 64), 4096, cudaMemcpyDeviceToDevice, s));
     }},
    {"kernel, memset alternating", [](int i, cudaStream_t s) {
       if (i % 2)
         CHECK(cudaMemsetAsync(dev, 0, 4096, s));
       else
         tiny<<<1, 32, 0, s>>>(nullptr);
     }},
};
constexpr int kKinds = sizeof kinds / sizeof kinds[0];

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
static double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[(size_t)(q * (v.size() - 1))];
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100, rounds = argc > 2 ? atoi(argv[2]) : 15;
  if (n < 1 || rounds < 1) {
    fprintf(stderr, "usage: launch_cost [N>0] [ROUNDS>0]\n");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int drv = 0, rt = 0;
  CHECK(cudaDriverGetVersion(&drv));
  CHECK(cudaRuntimeGetVersion(&rt));
  printf("%s, driver API %d, runtime %d, %d nodes a graph, %d rounds\n", prop.name, drv, rt, n, rounds);
  CHECK(cudaMalloc(&dev, 1 << 20));
  CHECK(cudaFuncSetAttribute(smem, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10));
  each_table(table, std::make_integer_sequence<int, kMaxEach>{});
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaGraphExec_t ex[kKinds];
  for (int k = 0; k < kKinds; k++) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; i++) kinds[k].enqueue(i, side);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamEndCapture(side, &g));
    CHECK(cudaGraphInstantiate(&ex[k], g, 0));
    CHECK(cudaGraphUpload(ex[k], side));
    CHECK(cudaGraphDestroy(g));
    for (int w = 0; w < 5; w++) CHECK(cudaGraphLaunch(ex[k], side));
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<double> idle[kKinds], busy[kKinds], gpu[kKinds];
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < kKinds; k++) {
      cudaStream_t s = kinds[k].legacy ? cudaStreamLegacy : side;
      for (int i = 0; i < 20; i++) {  // from idle
        CHECK(cudaStreamSynchronize(s));
        double t0 = now_us();
        CHECK(cudaGraphLaunch(ex[k], s));
        idle[k].push_back(now_us() - t0);
      }
      CHECK(cudaStreamSynchronize(s));
      for (int i = 0; i < 50; i++) {  // back to back
        double t0 = now_us();
        CHECK(cudaGraphLaunch(ex[k], s));
        busy[k].push_back(now_us() - t0);
      }
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaEventRecord(e0, s));
      for (int i = 0; i < 20; i++) CHECK(cudaGraphLaunch(ex[k], s));
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      gpu[k].push_back(ms * 1e3 / 20);
    }
  printf("\n| %d nodes of | host us, idle (spread) | host us, busy (spread) | GPU us a replay |\n|---|---|---|---|\n", n);
  for (int k = 0; k < kKinds; k++) {
    double mi = median(idle[k]), mb = median(busy[k]);
    printf("| %s | %.2f (%.2f) | %.2f (%.2f) | %.1f |\n", kinds[k].name, mi,
           (pct(idle[k], 0.9) - pct(idle[k], 0.1)) / mi, mb, (pct(busy[k], 0.9) - pct(busy[k], 0.1)) / mb,
           median(gpu[k]));
  }
  for (int k = 0; k < kKinds; k++) CHECK(cudaGraphExecDestroy(ex[k]));
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(dev));
  return 0;
}

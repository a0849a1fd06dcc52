// pgcc-calibrate -- measures the cost model's constants on the GPU it runs on and
// writes a machine profile for `pgcc --profile=FILE` (see compiler/cost.c).
//
//   pgcc-calibrate [-o FILE]        (default: standard output)
//
// Every figure is the median of repeated measurements of many operations, after a
// warm-up; GPU times come from CUDA events, host times from CLOCK_MONOTONIC.  The
// work is tiny on purpose (1-block kernels, 256-byte copies): the profile describes
// launch overheads, and a kernel's own time comes from the program (gpu_us).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

// The one check: the failing call, where, and the device.
#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t err_ = (call);                                                                   \
    if (err_ != cudaSuccess) {                                                                   \
      int dev_ = -1;                                                                             \
      cudaGetDevice(&dev_);                                                                      \
      fprintf(stderr, "pgcc-calibrate: %s failed: %s (%s:%d, %s, device %d)\n", #call,           \
              cudaGetErrorString(err_), __FILE__, __LINE__, __func__, dev_);                     \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

// Two kernels that do nothing, launched alternately: real programs switch kernels on
// every launch and pass parameter blocks of 50 to 650 bytes (library kernels take
// structs), and both cost more than relaunching one kernel with one pointer.
struct Params {
  int *ptr[4];
  int dims[56];
};  // 256 bytes, like a GEMM's parameter struct

__global__ void empty_kernel(int *p) {
  if (p && threadIdx.x == 1024) *p = 0;  // never true: keeps the parameter alive
}

__global__ void struct_kernel(Params q) {
  if (q.ptr[0] && threadIdx.x == 1024) *q.ptr[0] = q.dims[3];
}

static Params params;

// Busy for about `cycles` clock ticks: long enough that the host is never the
// bottleneck, so what a launch costs the GPU shows.
__global__ void spin_kernel(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}



static void launch_pair(int i, cudaStream_t s) {
  if (i & 1)
    struct_kernel<<<1, 32, 0, s>>>(params);
  else
    empty_kernel<<<1, 32, 0, s>>>(nullptr);
}

static void noop_host(void *) {}

static double now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static cudaStream_t stream;
static cudaEvent_t ev0, ev1;
static const int REPS = 9;

static float gpu_ms() {
  float ms;
  CHECK(cudaEventSynchronize(ev1));
  CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
  return ms;
}

// Eager launches: host time per launch, and GPU time per launch of a launch-bound chain.
static void eager_launch(double *host_us, double *gpu_us) {
  const int n = 1000;
  std::vector<double> host, gpu;
  for (int r = 0; r < REPS + 1; r++) {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaEventRecord(ev0, stream));
    double t0 = now_us();
    for (int i = 0; i < n; i++) launch_pair(i, stream);
    double t1 = now_us();
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev1, stream));
    double g = gpu_ms() * 1e3 / n;
    if (r) host.push_back((t1 - t0) / n), gpu.push_back(g);  // round 0 warms up
  }
  *host_us = median(host);
  *gpu_us = median(gpu);
}

// Eager stream operations of other kinds: GPU time per operation of a chain.
static double eager_copy(void *a, void *b) {
  const int n = 1000;
  std::vector<double> gpu;
  for (int r = 0; r < REPS + 1; r++) {
    CHECK(cudaEventRecord(ev0, stream));
    for (int i = 0; i < n; i++) CHECK(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, 256, cudaMemcpyDeviceToDevice, stream));
    CHECK(cudaEventRecord(ev1, stream));
    double g = gpu_ms() * 1e3 / n;
    if (r) gpu.push_back(g);
  }
  return median(gpu);
}

static double eager_host_func() {
  const int n = 200;
  std::vector<double> gpu;
  for (int r = 0; r < REPS + 1; r++) {
    CHECK(cudaEventRecord(ev0, stream));
    for (int i = 0; i < n; i++) CHECK(cudaLaunchHostFunc(stream, noop_host, nullptr));
    CHECK(cudaEventRecord(ev1, stream));
    double g = gpu_ms() * 1e3 / n;
    if (r) gpu.push_back(g);
  }
  return median(gpu);
}

// A host round trip: launch, then wait for the stream (what a synchronization costs).
static double host_round_trip(double launch_host_us) {
  const int n = 200;
  std::vector<double> host;
  for (int r = 0; r < REPS + 1; r++) {
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
      empty_kernel<<<1, 32, 0, stream>>>(nullptr);
      CHECK(cudaStreamSynchronize(stream));
    }
    double t = (now_us() - t0) / n;
    if (r) host.push_back(t);
  }
  return std::max(0.0, median(host) - launch_host_us);
}

// GPU time a stream-launched kernel costs beyond the same kernel in a graph.
static double eager_gap() {
  const int n = 200;
  const long long cycles = 20000;  // about 10 us
  std::vector<double> eager, graph;
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; i++) spin_kernel<<<1, 32, 0, stream>>>(cycles);
  CHECK(cudaStreamEndCapture(stream, &g));
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  for (int r = 0; r < REPS + 1; r++) {
    CHECK(cudaEventRecord(ev0, stream));
    for (int i = 0; i < n; i++) spin_kernel<<<1, 32, 0, stream>>>(cycles);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev1, stream));
    double te = gpu_ms() * 1e3 / n;
    CHECK(cudaEventRecord(ev0, stream));
    CHECK(cudaGraphLaunch(e, stream));
    CHECK(cudaEventRecord(ev1, stream));
    double tg = gpu_ms() * 1e3 / n;
    if (r) eager.push_back(te), graph.push_back(tg);
  }
  CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaGraphDestroy(g));
  return std::max(0.0, median(eager) - median(graph));
}

enum NodeKind { KERNELS, COPIES, HOSTS };

// A chain of n nodes of one kind, built by stream capture.
static cudaGraph_t chain(int n, NodeKind kind, void *a, void *b) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; i++) {
    if (kind == KERNELS) launch_pair(i, stream);
    if (kind == COPIES) CHECK(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, 256, cudaMemcpyDeviceToDevice, stream));
    if (kind == HOSTS) CHECK(cudaLaunchHostFunc(stream, noop_host, nullptr));
  }
  CHECK(cudaStreamEndCapture(stream, &g));
  return g;
}

struct GraphCosts {
  double instantiate_us, upload_us, launch_host_us, replay_gpu_us;
};

static GraphCosts graph_costs(cudaGraph_t g) {
  GraphCosts c;
  std::vector<double> inst, upload, host, gpu;
  for (int r = 0; r < 5; r++) {
    cudaGraphExec_t e;
    double t0 = now_us();
    CHECK(cudaGraphInstantiate(&e, g, 0));
    double t1 = now_us();
    CHECK(cudaGraphUpload(e, stream));
    CHECK(cudaStreamSynchronize(stream));
    double t2 = now_us();
    inst.push_back(t1 - t0), upload.push_back(t2 - t1);
    CHECK(cudaGraphExecDestroy(e));
  }
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphUpload(e, stream));
  for (int r = 0; r < 50; r++) {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaEventRecord(ev0, stream));
    double t0 = now_us();
    CHECK(cudaGraphLaunch(e, stream));
    double t1 = now_us();
    CHECK(cudaEventRecord(ev1, stream));
    double ms = gpu_ms();
    if (r >= 3) host.push_back(t1 - t0), gpu.push_back(ms * 1e3);
  }
  CHECK(cudaGraphExecDestroy(e));
  c.instantiate_us = median(inst);
  c.upload_us = median(upload);
  c.launch_host_us = median(host);
  c.replay_gpu_us = median(gpu);
  return c;
}

// Host-side parameter updates of every kernel node of an instantiated chain.
static double update_per_node(cudaGraph_t g, int n) {
  std::vector<cudaGraphNode_t> nodes(n);
  size_t count = n;
  CHECK(cudaGraphGetNodes(g, nodes.data(), &count));
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  std::vector<double> per;
  int *dev_ptr = nullptr;
  CHECK(cudaMalloc(&dev_ptr, sizeof(int)));
  for (int r = 0; r < REPS + 1; r++) {
    double t0 = now_us();
    for (size_t i = 0; i < count; i++) {
      cudaKernelNodeParams p;
      CHECK(cudaGraphKernelNodeGetParams(nodes[i], &p));
      int *arg = (r & 1) ? dev_ptr : nullptr;
      Params q = params;
      q.ptr[0] = arg;
      void *args[] = {p.func == (void *)empty_kernel ? (void *)&arg : (void *)&q};
      p.kernelParams = args;
      CHECK(cudaGraphExecKernelNodeSetParams(e, nodes[i], &p));
    }
    double t = (now_us() - t0) / count;
    if (r) per.push_back(t);
  }
  CHECK(cudaGraphLaunch(e, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaFree(dev_ptr));
  return median(per);
}

int main(int argc, char **argv) {
  const char *out_path = nullptr;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out_path = argv[++i];
    else {
      fprintf(stderr, "usage: pgcc-calibrate [-o FILE]\n");
      return 2;
    }
  }
  int dev = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop;
  CHECK(cudaSetDevice(dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&ev0));
  CHECK(cudaEventCreate(&ev1));
  void *a, *b;
  CHECK(cudaMalloc(&a, 4096));
  CHECK(cudaMalloc(&b, 4096));

  double launch_host, launch_gpu;
  eager_launch(&launch_host, &launch_gpu);
  double copy_gpu = eager_copy(a, b);
  double host_func = eager_host_func();
  double round_trip = host_round_trip(launch_host);
  double gap = eager_gap();

  const int small = 10, large = 1000;
  cudaGraph_t gs = chain(small, KERNELS, a, b), gl = chain(large, KERNELS, a, b);
  GraphCosts cs = graph_costs(gs), cl = graph_costs(gl);
  double launch_node = (cl.launch_host_us - cs.launch_host_us) / (large - small);
  double launch_fixed = std::max(0.0, cs.launch_host_us - small * launch_node);
  double node_gpu = (cl.replay_gpu_us - cs.replay_gpu_us) / (large - small);
  double inst_node = cl.instantiate_us / large;
  double update_node = update_per_node(gl, large);

  cudaGraph_t gc = chain(large, COPIES, a, b), gh = chain(100, HOSTS, a, b);
  double copy_node = graph_costs(gc).replay_gpu_us / large;
  double host_node = graph_costs(gh).replay_gpu_us / 100;

  CHECK(cudaGraphDestroy(gs));
  CHECK(cudaGraphDestroy(gl));
  CHECK(cudaGraphDestroy(gc));
  CHECK(cudaGraphDestroy(gh));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));

  FILE *f = out_path ? fopen(out_path, "w") : stdout;
  if (!f) {
    perror(out_path);
    return 1;
  }
  time_t t = time(nullptr);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  fprintf(f, "# pgcc machine profile, measured by pgcc-calibrate on %s\n", date);
  fprintf(f, "# %s, %d SMs; driver %d.%d, CUDA runtime %d.%d\n", prop.name, prop.multiProcessorCount, driver / 1000,
          driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  fprintf(f, "# medians of repeated runs; see compiler/cost.c for how each constant is used\n");
  fprintf(f, "name \"%s (pgcc-calibrate %s)\"\n", prop.name, date);
  fprintf(f, "eager_launch_us      %.3f   # GPU time per launch of a launch-bound chain of two alternating\n"
             "                             # kernels, one taking a 256-byte struct (host: %.3f)\n",
          std::max(launch_gpu, launch_host), launch_host);
  fprintf(f, "eager_copy_us        %.3f   # 256-byte device copies, GPU time per copy of a chain\n", copy_gpu);
  fprintf(f, "eager_host_us        %.3f   # cudaLaunchHostFunc, GPU time per call of a chain\n", host_func);
  fprintf(f, "eager_gap_us         %.3f   # GPU time per ~10 us kernel, eager minus in a graph\n", gap);
  fprintf(f, "hostop_us            %.3f   # a stream synchronization round trip, beyond the launch\n", round_trip);
  fprintf(f, "graph_launch_us      %.3f   # cudaGraphLaunch host time, fixed (fit over %d and %d nodes)\n",
          launch_fixed, small, large);
  fprintf(f, "graph_launch_node_us %.4f  # cudaGraphLaunch host time, per node\n", std::max(0.0, launch_node));
  fprintf(f, "graph_node_us        %.3f   # GPU time per kernel node on replay\n", node_gpu);
  fprintf(f, "kernel_us            %.3f   # an unmeasured kernel counts as a tiny one\n", node_gpu);
  fprintf(f, "copy_us              %.3f   # GPU time per 256-byte copy node on replay\n", copy_node);
  fprintf(f, "host_node_us         %.3f   # GPU time per host node on replay\n", host_node);
  fprintf(f, "update_host_node_us  %.3f   # cudaGraphExecKernelNodeSetParams, per node\n", update_node);
  fprintf(f, "update_device_us     6.900   # not measured here: bench/run_codegen.sh on an H100 (the updater\n"
             "                             # call's GPU time; its host time is 4.6)\n");
  fprintf(f, "update_device_node_us 0.314  # not measured here: bench/run_codegen.sh on an H100, GPU time a\n"
             "                             # device-updatable node adds to every replay\n");
  fprintf(f, "instantiate_node_us  %.3f   # cudaGraphInstantiate, per node of a %d-node chain\n", inst_node, large);
  fprintf(f, "upload_us            %.3f   # cudaGraphUpload of a %d-node chain\n", cs.upload_us, small);
  if (out_path && fclose(f) != 0) {
    perror(out_path);
    return 1;
  }
  return 0;
}

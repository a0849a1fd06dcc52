/*
 * relocs_main.c -- runs the C that pgcc generated from relocs.graph (.graph format
 * 2's relocation kinds), on a GPU, and checks it against a CPU computation:
 *
 *   y[64:] = 2 * x + b;   c1 = x * x;   w = 0.5 * y[64:] + b;   c2 = y[64:] * y[64:]
 *
 * Each node's struct holds a whole address at a 4-byte-aligned offset (abs64), the
 * low and high halves of the address it writes through (lo32, hi32, put together by
 * the kernel), and the low half of an address that it also gets whole (lo32: a wrong
 * half makes c1 or c2 NaN).  Every call gets its buffers at new addresses with a
 * new scalar b.  Call 0 uses cuMemAlloc; the others map memory (cuMemMap) 4 GiB
 * further each time, so the high halves change too, with y placed 256 bytes below a
 * 4 GiB boundary: y+256, the address the kernels use, has y's high half plus one
 * (the addend is added before the address is cut in halves).  y's first 64 floats
 * must keep their poison.  The last call repeats the one before it (same buffers and
 * scalar, new data): nothing is patched, and what was patched must still hold.
 *
 * Run it with PGRT_UPDATE=host and PGRT_UPDATE=device (tests/gpu/run_codegen.sh):
 * it checks that libpgrt patched the two kernel nodes from the host, or on the
 * device, on every call that moved something.  Prints each call's max error, and
 * writes each graph region as DOT for the topology check.
 *
 *   relocs_main OUT_DIR
 */
#include "relocs.h"
#include "gpu_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define HEAD 64           /* y's floats before y+256: never written */
#define CALLS 7           /* the last repeats the one before */
#define GIB4 (1ull << 32) /* a high half's step */

static const uint32_t poison = 0x7fc00000u; /* a NaN */

typedef struct {
  CUdeviceptr x, y, w, c1, c2;
} Bufs;

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : ".";
  const char *how = getenv("PGRT_UPDATE");
  int want_host = how && strcmp(how, "host") == 0, want_device = how && strcmp(how, "device") == 0;
  CUstream stream = gpu_start();
  CUdevice dev;
  CHECK(cuCtxGetDevice(&dev));

  /* mapped memory: a granule pair per call, 4 GiB apart, each straddling a 4 GiB
   * boundary at its middle (y ends 256 bytes before that boundary's other side) */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = (int)dev;
  size_t gran = 0;
  CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  if (gran < (1u << 20)) gran = 1u << 20;
  size_t half = gran, chunk = 2 * gran; /* the boundary lies `half` into each chunk */
  size_t reserve = (CALLS + 2) * GIB4;
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, reserve, gran, 0, 0));
  CUdeviceptr base = (va + GIB4 - 1) / GIB4 * GIB4; /* the first 4 GiB boundary in the reservation */
  CUmemGenericAllocationHandle handles[CALLS];
  CUdeviceptr mapped[CALLS];
  int nmapped = 0;
  CUdeviceptr plain[CALLS][5];
  int nplain = 0;

  unsigned seed = 4242;
  static float x[N], y[HEAD + N], w[N], c1[N], c2[N];
  pgrt_ctx *pc = NULL;
  PGRT(relocs_init(&pc, NULL, NULL, 0));

  double worst = 0;
  int failed = 0;
  relocs_args args;
  memset(&args, 0, sizeof args);
  for (int call = 0; call < CALLS; call++) {
    Bufs b;
    if (call == CALLS - 1) { /* the one before's buffers and scalar */
      b = (Bufs){args.x, args.y, args.w, args.c1, args.c2};
    } else if (call == 0) {
      CHECK(cuMemAlloc(&b.x, sizeof x));
      CHECK(cuMemAlloc(&b.y, sizeof y));
      CHECK(cuMemAlloc(&b.w, sizeof w));
      CHECK(cuMemAlloc(&b.c1, sizeof c1));
      CHECK(cuMemAlloc(&b.c2, sizeof c2));
      CUdeviceptr *p = plain[nplain++];
      p[0] = b.x, p[1] = b.y, p[2] = b.w, p[3] = b.c1, p[4] = b.c2;
    } else {
      CUdeviceptr g = base + (CUdeviceptr)call * GIB4 - half; /* the boundary at base + call * 4 GiB */
      if (g < va || g + chunk > va + reserve) {
        fprintf(stderr, "call %d: mapping outside the reservation\n", call);
        return 2;
      }
      CHECK(cuMemCreate(&handles[nmapped], chunk, &prop, 0));
      CHECK(cuMemMap(g, chunk, 0, handles[nmapped], 0));
      CUmemAccessDesc acc;
      memset(&acc, 0, sizeof acc);
      acc.location = prop.location;
      acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      CHECK(cuMemSetAccess(g, chunk, &acc, 1));
      mapped[nmapped++] = g;
      CUdeviceptr boundary = g + half;
      b.x = g;                             /* below the boundary */
      b.y = boundary - 4 * HEAD;           /* y+256 is the boundary itself */
      b.w = boundary + (64u << 10);        /* above it */
      b.c1 = boundary + (128u << 10);
      b.c2 = g + half / 2;                 /* below it again */
    }
    args.x = b.x, args.y = b.y, args.w = b.w, args.c1 = b.c1, args.c2 = b.c2;
    if (call < CALLS - 1) args.b = 0.25f * (float)call - 0.5f;
    for (int i = 0; i < N; i++) x[i] = frand(&seed);
    CHECK(cuMemcpyHtoD(args.x, x, sizeof x));
    CHECK(cuMemsetD32(args.y, poison, HEAD + N));
    CHECK(cuMemsetD32(args.w, poison, N));
    CHECK(cuMemsetD32(args.c1, poison, N));
    CHECK(cuMemsetD32(args.c2, poison, N));

    PGRT(relocs_run(pc, &args, stream));
    CHECK(cuStreamSynchronize(stream));
    pgrt_run_stats st;
    pgrt_last_run(pc, &st);
    CHECK(cuMemcpyDtoH(y, args.y, sizeof y));
    CHECK(cuMemcpyDtoH(w, args.w, sizeof w));
    CHECK(cuMemcpyDtoH(c1, args.c1, sizeof c1));
    CHECK(cuMemcpyDtoH(c2, args.c2, sizeof c2));

    double err = 0;
    int head_written = 0;
    for (int i = 0; i < HEAD; i++) {
      uint32_t bits;
      memcpy(&bits, &y[i], 4);
      head_written += bits != poison;
    }
    for (int i = 0; i < N; i++) { /* the reference, in double */
      double ry = 2.0 * x[i] + args.b, rw = 0.5 * (float)ry + args.b;
      double e = fmax(fmax(fabs(y[HEAD + i] - ry), fabs(w[i] - rw)),
                      fmax(fabs(c1[i] - (double)x[i] * x[i]), fabs(c2[i] - (double)(float)ry * (float)ry)));
      if (!(e == e)) e = INFINITY; /* NaN: unwritten, or a lo32 half was wrong */
      if (e > err) err = e;
    }
    /* what libpgrt did: both kernel nodes patched on a call that moved something */
    int moved = call < CALLS - 1, want = moved ? 2 : 0;
    int patched_ok = want_host     ? st.nodes_patched == want && st.device_updated == 0
                     : want_device ? st.device_updated == want && st.nodes_patched == 0
                                   : st.nodes_patched + st.device_updated == want;
    int launch_ok = st.graphs_launched == 1 && st.eager_nodes == 0;
    printf("call %d: x=%#llx y=%#llx (y+256=%#llx) w=%#llx c1=%#llx c2=%#llx b=%.2f: max error %.3g; "
           "%d graphs launched, %d nodes patched on the host, %d on the device, %d eager nodes%s%s%s\n",
           call, (unsigned long long)args.x, (unsigned long long)args.y, (unsigned long long)(args.y + 256),
           (unsigned long long)args.w, (unsigned long long)args.c1, (unsigned long long)args.c2, args.b, err,
           st.graphs_launched, st.nodes_patched, st.device_updated, st.eager_nodes,
           head_written ? "; y's head WRITTEN" : "", patched_ok ? "" : "; UNEXPECTED patch counts",
           launch_ok ? "" : "; NOT one graph launch");
    if (err > 1e-5 || head_written || !patched_ok || !launch_ok) failed = 1;
    if (err > worst) worst = err;
  }
  for (int r = 0; r < 8; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/relocs_region%d.dot", out, r);
    if (pgrt_debug_dot(pc, r, path) == PGRT_OK) printf("region %d: %s\n", r, path);
  }
  relocs_destroy(&pc);
  if (pc) failed = 1;
  for (int k = 0; k < nmapped; k++) {
    CHECK(cuMemUnmap(mapped[k], chunk));
    CHECK(cuMemRelease(handles[k]));
  }
  CHECK(cuMemAddressFree(va, reserve));
  for (int c = 0; c < nplain; c++)
    for (int k = 0; k < 5; k++) CHECK(cuMemFree(plain[c][k]));
  printf("%s: max error %.3g over %d calls (%s update) with new addresses each call, high halves included (the "
         "last repeating the one before)\n",
         failed ? "FAIL" : "PASS", worst, CALLS, want_host ? "host" : want_device ? "device" : "default");
  return failed;
}

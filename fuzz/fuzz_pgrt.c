/*
 * fuzz_pgrt.c -- libFuzzer target for libpgrt's host side: the tables of one
 * generated program (tests/gpu/codegen/chain.graph's C from pgcc, #included as
 * FUZZ_PROGRAM_C) are copied and edited as the input says, then go through
 * pgrt_init, two pgrt_run calls and pgrt_destroy over the CPU double of the CUDA
 * driver (tests/fakecuda, loaded through PGRT_LIBCUDA).  The property: init either
 * succeeds or fails with a pgrt status -- never a crash, a hang, a sanitizer report
 * or a leak; with the tables unedited every call succeeds.
 *
 * Each 8-byte record of the input is one edit: table (nodes, buffers, regions,
 * kernels, relocs, the program's counts), entry, field, and a 32-bit value, biased
 * to small numbers and their neighbours (-1, counts, count+1) where indices break.
 * Edits no table could be checked for (a kernel's parameter layout, what a kernel
 * reaches) are not made, or not run: docs/fuzzing.md says which.
 */
#include FUZZ_PROGRAM_C

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define P chain_program
enum { MAXN = 64, PARAM_MAX = 4096 };

static CUstream stream;
static CUdeviceptr dev[3], weights[2];
static void *host_buf;

/* what Initialize allocated, freed at exit: the double fails a process that leaks */
static void release(void) {
  for (int i = 0; i < 3; i++) cuMemFree(dev[i]);
  for (int i = 0; i < 2; i++) cuMemFree(weights[i]);
  cuMemFreeHost(host_buf);
  cuStreamDestroy(stream);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  if (!getenv("PGRT_LIBCUDA")) { fprintf(stderr, "fuzz_pgrt: set PGRT_LIBCUDA to the fake driver\n"); exit(2); }
  CUdevice d;
  CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
      cuStreamCreate(&stream, CU_STREAM_DEFAULT))
    exit(2);
  for (int i = 0; i < 3; i++)
    if (cuMemAlloc(&dev[i], 1 << 16)) exit(2);
  for (int i = 0; i < 2; i++)
    if (cuMemAlloc(&weights[i], 1 << 16)) exit(2);
  if (cuMemHostAlloc(&host_buf, 1 << 16, 0)) exit(2);
  atexit(release);
  return 0;
}

/* a value from 4 bytes: mostly small, sometimes the raw 32 bits */
static int64_t value_of(const unsigned char *b) {
  uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  switch (b[3] >> 6) {
  case 0: return (int64_t)(b[0] % 20) - 2;      /* -2 .. 17: indices and counts around the tables' */
  case 1: return (int64_t)(v & 0xffff);          /* sizes and offsets */
  case 2: return (int32_t)v;                     /* anything an int holds */
  default: return (int64_t)(v & 0x3fffff) << 8;  /* large sizes */
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size > 8 * 64) return 0;
  pgrt_program pr = P;
  pgrt_node nodes[MAXN];
  pgrt_buffer buffers[MAXN];
  pgrt_region regions[MAXN];
  pgrt_kernel kernels[MAXN];
  pgrt_reloc relocs[MAXN][8];
  int deps[MAXN][8];
  /* a node's constant parameter bytes are as long as its kernel's param_bytes: a contract
   * no table records, so each node's copy is as long as any parameter block may be */
  static unsigned char params[MAXN][PARAM_MAX];
  memset(relocs, 0, sizeof relocs);
  memset(deps, 0, sizeof deps);
  memcpy(nodes, P.nodes, sizeof *nodes * (size_t)P.node_count);
  memcpy(buffers, P.buffers, sizeof *buffers * (size_t)P.buffer_count);
  memcpy(regions, P.regions, sizeof *regions * (size_t)P.region_count);
  memcpy(kernels, P.kernels, sizeof *kernels * (size_t)P.kernel_count);
  for (int i = 0; i < P.node_count; i++) {
    if (nodes[i].reloc_count) memcpy(relocs[i], nodes[i].relocs, sizeof **relocs * (size_t)nodes[i].reloc_count);
    if (nodes[i].dep_count) memcpy(deps[i], nodes[i].deps, sizeof **deps * (size_t)nodes[i].dep_count);
    memset(params[i], 0, sizeof params[i]);
    if (nodes[i].kind == PGRT_NODE_KERNEL && nodes[i].params)
      memcpy(params[i], nodes[i].params, P.kernels[nodes[i].kernel].param_bytes);
    nodes[i].params = params[i];
    nodes[i].relocs = relocs[i];
    nodes[i].deps = deps[i];
  }
  pr.nodes = nodes, pr.buffers = buffers, pr.regions = regions, pr.kernels = kernels;
  /* blind: an edit after which the tables may be whole while a kernel reaches past its
   * buffers (a relocation, a kernel, a node's kind, a buffer's place): what a kernel
   * touches is its code's, which libpgrt cannot see, so such tables go through init and
   * destroy only; the double faults on a stray address */
  int edited = 0, blind = 0;
  for (size_t at = 0; at + 8 <= size; at += 8, edited++) {
    const unsigned char *r = data + at;
    int64_t v = value_of(r + 4);
    int iv = (int)v;
    unsigned which = r[2];
    switch (r[0] % 6) {
    case 0: { /* a node */
      pgrt_node *n = &nodes[r[1] % P.node_count];
      switch (which % 16) {
      case 0: n->kind = (pgrt_node_kind)(iv & 15), blind = 1; break;
      case 1: /* another kernel of the program takes other parameters, which only its code says:
                 an index out of range, or none */
        if (iv < 0 || iv >= P.kernel_count) n->kernel = iv;
        break;
      case 2: n->src = iv; break;
      case 3: n->dst = iv; break;
      case 4: n->src_offset = (uint64_t)v; break;
      case 5: n->dst_offset = (uint64_t)v; break;
      case 6: n->bytes = (uint64_t)v; break;
      case 7: n->event = iv; break;
      case 8: n->dep_count = iv < 0 || iv > 8 ? n->dep_count : iv; break;
      case 9: deps[n - nodes][r[3] % 8] = iv; break;
      case 10: n->reloc_count = iv < 0 || iv > 8 ? n->reloc_count : iv, blind = 1; break;
      case 11: n->grid[r[3] % 3] = (unsigned)v; break;
      case 12: n->block[r[3] % 3] = (unsigned)v; break;
      case 13: n->height = (uint64_t)v; break;
      case 14: n->elem = (uint32_t)v; break;
      default: n->buffer = iv; break;
      }
      break;
    }
    case 1: { /* a buffer */
      pgrt_buffer *b = &buffers[r[1] % P.buffer_count];
      blind = 1;
      switch (which % 4) {
      case 0: b->kind = (pgrt_buffer_kind)(iv & 7); break;
      case 1: /* not between 2 GiB and the double's 80 GiB: allocated, past libFuzzer's malloc limit */
        if ((uint64_t)v <= 1ull << 31 || (uint64_t)v > 80ull << 30) b->size = (uint64_t)v;
        break;
      case 2: b->offset = (uint64_t)v; break;
      default: b->slot = iv; break;
      }
      break;
    }
    case 2: { /* a region */
      pgrt_region *g = &regions[r[1] % P.region_count];
      switch (which % 4) {
      case 0: g->graph = iv & 1; break;
      case 1: g->first = iv; break;
      case 2: g->count = iv; break;
      default: g->device_update = iv & 1; break;
      }
      break;
    }
    case 3: { /* a kernel */
      pgrt_kernel *k = &kernels[r[1] % P.kernel_count];
      blind = 1;
      if (which & 1) k->module = iv;
      else if ((uint32_t)v % PARAM_MAX >= k->param_bytes) /* fewer would cut a parameter only its code knows */
        k->param_bytes = (uint32_t)v % PARAM_MAX;
      break;
    }
    case 4: { /* a relocation of a kernel node */
      pgrt_node *n = &nodes[r[1] % P.node_count];
      pgrt_reloc *rl = &relocs[n - nodes][r[3] % 8];
      blind = 1;
      switch (which % 4) {
      case 0: rl->at = (uint32_t)v; break;
      case 1: rl->buffer = iv; break;
      case 2: rl->offset = (uint64_t)v; break;
      default: rl->kind = (pgrt_reloc_kind)(iv & 3); break;
      }
      break;
    }
    default: /* the program's counts */
      switch (which % 6) {
      case 0: pr.node_count = iv < 0 || iv > P.node_count ? pr.node_count : iv; break;
      case 1: blind = 1, pr.buffer_count = iv < 0 || iv > P.buffer_count ? pr.buffer_count : iv; break;
      case 2: pr.region_count = iv < 0 || iv > P.region_count ? pr.region_count : iv; break;
      case 3: pr.kernel_count = iv < 0 || iv > P.kernel_count ? pr.kernel_count : iv; break;
      case 4: pr.arena_bytes = (uint64_t)v; break;
      /* events: libpgrt makes as many as the table says (a count, like the arrays', that it
       * takes as given), so a few more or fewer; not the slots: the caller's arrays hold
       * what the real ones say */
      default: pr.event_count = iv < 20 ? iv : pr.event_count; break;
      }
    }
  }
  pgrt_ctx *ctx = NULL;
  pgrt_status st = pgrt_init(&ctx, &pr, weights, NULL, 0);
  if (st != PGRT_OK) {
    if (ctx) abort(); /* a failed init leaves nothing */
    if (!edited) abort(); /* the real tables must init */
    return 0;
  }
  const CUdeviceptr bound[4] = {dev[0], dev[1], dev[2], (CUdeviceptr)(uintptr_t)host_buf};
  float a = 1.5f;
  uint64_t scalars[1] = {0};
  memcpy(scalars, &a, sizeof a);
  for (int call = 0; call < 2 && !blind; call++) {
    st = pgrt_run(ctx, bound, scalars, NULL, NULL, NULL, stream);
    if (st != PGRT_OK && !edited) abort();
    if (st == PGRT_OK) cuStreamSynchronize(stream);
  }
  pgrt_destroy(&ctx);
  if (ctx) abort();
  return 0;
}

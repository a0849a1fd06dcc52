/*
 * params.c -- what each node hands CUDA: a kernel node's parameter block, with this
 * call's pointers (relocations, truncated by their kind: pgrt_relocs.h) and scalars
 * written into it, and the parameters of each node kind as cuGraphAdd*Node,
 * cuGraphExec*SetParams and the eager launches take them, from the context's addresses
 * as they are now.  Copies and memsets in graphs are built as libpgrt's own kernels
 * (pgrt_copy, pgrt_set: own_kernels.h); pgrt_box_params writes their arguments.
 */
#include "pgrt_impl.h"

#include <string.h>

static const struct {
  uint32_t size;
  int32_t shift;
} relocs[] = {
#define X(e, name, size, shift) [PGRT_RELOC_##e] = {size, shift},
    PG_RELOC_KINDS(X)
#undef X
};

uint32_t pgrt_reloc_size(pgrt_reloc_kind k) { return relocs[k].size; }
int32_t pgrt_reloc_shift(pgrt_reloc_kind k) { return relocs[k].shift; }

int pgrt_fill_params(pgrt_ctx *c, int i, const uint64_t *scalars) {
  const pgrt_node *n = &c->prog->nodes[i];
  unsigned char *p = c->params[i];
  int changed = 0;
  for (int r = 0; r < n->reloc_count; r++) { /* the address, truncated by the kind: its low bytes (little-endian) */
    const pgrt_reloc *rl = &n->relocs[r];
    uint64_t v = (uint64_t)(c->addr[rl->buffer] + rl->offset) >> pgrt_reloc_shift(rl->kind);
    uint32_t size = pgrt_reloc_size(rl->kind);
    if (memcmp(p + rl->at, &v, size) != 0) memcpy(p + rl->at, &v, size), changed = 1;
  }
  for (int k = 0; k < n->cond_ref_count; k++)
    memcpy(p + n->cond_refs[k].at, &c->conds[n->cond_refs[k].condition], sizeof(CUgraphConditionalHandle));
  for (int s = 0; scalars && s < n->scalar_count; s++) {
    const pgrt_scalar_ref *ref = &n->scalars[s];
    if (memcmp(p + ref->at, &scalars[ref->slot], ref->size) != 0)
      memcpy(p + ref->at, &scalars[ref->slot], ref->size), changed = 1;
  }
  return changed;
}

CUDA_KERNEL_NODE_PARAMS pgrt_kernel_params(const pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->funcs[n->kernel];
  kp.gridDimX = n->grid[0], kp.gridDimY = n->grid[1], kp.gridDimZ = n->grid[2];
  kp.blockDimX = n->block[0], kp.blockDimY = n->block[1], kp.blockDimZ = n->block[2];
  kp.sharedMemBytes = n->smem;
  kp.kernelParams = c->args[i];
  return kp;
}

static uint64_t at_least_1(uint64_t v) { return v ? v : 1; }

CUDA_MEMCPY3D pgrt_copy_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_MEMCPY3D m;
  memset(&m, 0, sizeof m);
  /* unified addressing: either side may be device memory or pinned host memory */
  m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  m.srcDevice = c->addr[n->src] + n->src_offset;
  m.dstDevice = c->addr[n->dst] + n->dst_offset;
  m.WidthInBytes = n->bytes;
  m.Height = at_least_1(n->height);
  m.Depth = at_least_1(n->depth);
  m.srcPitch = n->src_pitch ? n->src_pitch : n->bytes;
  m.dstPitch = n->dst_pitch ? n->dst_pitch : n->bytes;
  m.srcHeight = m.dstHeight = m.Height; /* slices: height rows apart */
  return m;
}

CUDA_MEMSET_NODE_PARAMS pgrt_set_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_MEMSET_NODE_PARAMS m;
  memset(&m, 0, sizeof m);
  m.dst = c->addr[n->dst] + n->dst_offset;
  m.value = n->value;
  m.elementSize = n->elem;
  m.width = n->bytes / n->elem;
  m.height = at_least_1(n->height);
  m.pitch = n->dst_pitch ? n->dst_pitch : n->bytes;
  return m;
}

/* A copy or memset built as pgrt_copy or pgrt_set: its arguments from this call's
 * addresses, one thread per byte or element of a row, a row per block row. */
CUDA_KERNEL_NODE_PARAMS pgrt_box_params(const pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  unsigned char *p = c->params[i];
  uint64_t w[6];
  if (n->kind == PGRT_NODE_MEMCPY) {
    CUDA_MEMCPY3D m = pgrt_copy_params(c, n);
    w[0] = m.srcDevice, w[1] = m.dstDevice, w[2] = m.WidthInBytes, w[3] = m.Height * m.Depth;
    w[4] = m.srcPitch, w[5] = m.dstPitch;
    memcpy(p, w, sizeof w);
  } else {
    CUDA_MEMSET_NODE_PARAMS m = pgrt_set_params(c, n);
    uint64_t row = (uint64_t)m.width * m.elementSize;
    if (m.elementSize < 4 && (m.dst | row | (m.height > 1 ? m.pitch : 0)) % 4 == 0) { /* whole words */
      m.value = m.elementSize == 1 ? (m.value & 0xFFu) * 0x01010101u : (m.value & 0xFFFFu) * 0x00010001u;
      m.elementSize = 4, m.width = row / 4;
    }
    uint32_t ve[2] = {m.value, m.elementSize};
    w[0] = m.dst, w[2] = m.width, w[3] = m.height, w[4] = m.pitch;
    memcpy(p, &w[0], 8), memcpy(p + 8, ve, 8), memcpy(p + 16, &w[2], 24);
  }
  uint64_t units = w[2], rows = w[3]; /* bytes or elements of a row */
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->box_funcs[n->kind == PGRT_NODE_MEMCPY ? PGRT_BOX_COPY : PGRT_BOX_SET];
  kp.gridDimY = (unsigned)(rows < 65535 ? rows : 65535), kp.gridDimZ = 1;
  uint64_t across = 4096 / kp.gridDimY ? 4096 / kp.gridDimY : 1; /* at most 4096 blocks in all */
  if (across > 1024) across = 1024;
  kp.gridDimX = (unsigned)((units + 255) / 256 < across ? (units + 255) / 256 : across);
  kp.blockDimX = 256, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = c->args[i];
  return kp;
}

/* A host node's function until the first call binds the caller's (pgrt_run checks
 * that every one is bound before anything is launched). */
static void CUDA_CB unbound_host(void *data) { (void)data; }

CUDA_HOST_NODE_PARAMS pgrt_host_params(const pgrt_ctx *c, const pgrt_node *n) {
  CUDA_HOST_NODE_PARAMS h;
  h.fn = c->hosts[n->host].fn ? c->hosts[n->host].fn : unbound_host;
  h.userData = c->hosts[n->host].data;
  return h;
}

/* The updater's launch: one thread per entry, its arguments in u->params. */
CUDA_KERNEL_NODE_PARAMS pgrt_updater_params(const pgrt_ctx *c, pgrt_updater *u) {
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = c->upd_func;
  kp.gridDimX = (unsigned)(u->count + 127) / 128, kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 128, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = u->argv;
  return kp;
}

/* Whether node n's cluster must be given at launch: it has one, and its kernel was not
 * compiled with one (a kernel with __cluster_dims__ refuses a launch that sets it:
 * CUDA_ERROR_CLUSTER_MISCONFIGURATION, seen with cuDNN's ResNet-50 kernels). */
int pgrt_cluster_attr(const pgrt_ctx *c, const pgrt_node *n) {
  int compiled = 0;
  if (!n->cluster[0]) return 0;
  if (pgrt_cu.cuFuncGetAttribute(&compiled, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, c->funcs[n->kernel]) != CUDA_SUCCESS)
    compiled = 0;
  return compiled == 0;
}


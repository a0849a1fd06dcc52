/*
 * init.c -- pgrt_init and pgrt_init_comm, which build a program on the current CUDA
 * context, and pgrt_destroy, which frees it; init's steps in the order it takes them.
 *
 * The program's tables are checked first; a program with comms loads NCCL before any
 * CUDA call (nccl.c: where it is missing, nothing else is touched), then the CUDA
 * driver is loaded if it is not yet (cuda_driver.c).  Then: the modules
 * and kernels (modules.c); one NCCL communicator per comm; the events; which region
 * each node runs in, and which bucket regions run a graph per bucket; the graph
 * regions' graphs and their conditional handles (before any parameter block: kernels
 * take the handles as arguments); the buffers (weights from the caller, intermediates
 * in one arena, per-call buffers on a placeholder until the first call, host buffers
 * pinned); each kernel node's parameter block; the nodes that take scalars read on the
 * host; the nodes a call can change; which of those the updaters patch on the device,
 * and which copies and memsets are built as kernels (libpgrt's own kernels loaded for
 * them); last, every graph region's graph (build.c).
 *
 * Memory: everything init allocates is recorded in the context and freed by
 * pgrt_destroy, which a failed init calls itself.
 */
#include "own_kernels.h"
#include "pgrt_impl.h"

#include <stdio.h>
#include <string.h>

_Static_assert(sizeof ((pgrt_ctx *)0)->box_funcs / sizeof(CUfunction) >= PGRT_OWN_MAX_KERNELS,
               "pgrt_ctx.box_funcs holds libpgrt's own kernels of one source");

pgrt_status pgrt_init(pgrt_ctx **out_ctx, const pgrt_program *pr, const CUdeviceptr *weights, void **const *kernel_args,
                      CUdeviceptr arena) {
  if (pr && pr->version == PGRT_VERSION && pr->comm_count)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' has comms: it needs an NCCL id and this process's rank "
                     "(pgrt_init_comm; the generated NAME_init takes them)", pr->name);
  return pgrt_init_comm(out_ctx, pr, weights, kernel_args, arena, NULL, 0);
}

/* A program's comms and collectives, before anything is loaded: the rank fits every comm,
 * each collective names a comm and buffers whose addresses do not change per call. */
static pgrt_status check_comms(const pgrt_program *pr, const pgrt_nccl_id *id, int rank) {
  if (!id) return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' has comms: it needs the NCCL id rank 0 made "
                            "(pgrt_nccl_unique_id)", pr->name);
  for (int k = 0; k < pr->comm_count; k++)
    if (pr->comms[k].ranks < 1 || rank < 0 || rank >= pr->comms[k].ranks)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "comm '%s' has %d ranks: rank %d is not one of them", pr->comms[k].name,
                       pr->comms[k].ranks, rank);
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_COLLECTIVE) continue;
    if (n->comm < 0 || n->comm >= pr->comm_count || n->src < 0 || n->src >= pr->buffer_count || n->dst < 0 ||
        n->dst >= pr->buffer_count)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "collective '%s': its comm or buffers are not the program's", n->origin);
    int s = pr->buffers[n->src].kind, d = pr->buffers[n->dst].kind;
    if (s == PGRT_BUF_BOUND || s == PGRT_BUF_HOST || d == PGRT_BUF_BOUND || d == PGRT_BUF_HOST)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "collective '%s': its buffers must be weights or in the arena (captured "
                       "once, at init)", n->origin);
  }
  return PGRT_OK;
}

/* The context and its tables, all zeroed: NULL where out of host memory. */
static pgrt_ctx *new_context(const pgrt_program *pr) {
  pgrt_ctx *c = pgrt_zalloc(sizeof *c);
  if (!c) return NULL;
  c->prog = pr;
  atomic_init(&c->running, 0);
  pthread_mutex_init(&c->done_lock, NULL); /* (cannot fail: default attributes) */
  c->libs = pgrt_zalloc(sizeof *c->libs * (size_t)pr->module_count);
  c->funcs = pgrt_zalloc(sizeof *c->funcs * (size_t)pr->kernel_count);
  c->addr = pgrt_zalloc(sizeof *c->addr * (size_t)pr->buffer_count);
  c->bound_prev = pgrt_zalloc(sizeof *c->bound_prev * (size_t)pr->bound_slots);
  c->scalar_prev = pgrt_zalloc(sizeof *c->scalar_prev * (size_t)pr->scalar_slots);
  c->params = pgrt_zalloc(sizeof *c->params * (size_t)pr->node_count);
  c->args = pgrt_zalloc(sizeof *c->args * (size_t)pr->node_count);
  c->graphs = pgrt_zalloc(sizeof *c->graphs * (size_t)pr->region_count);
  c->execs = pgrt_zalloc(sizeof *c->execs * (size_t)pr->region_count);
  c->gnodes = pgrt_zalloc(sizeof *c->gnodes * (size_t)pr->node_count);
  c->events = pgrt_zalloc(sizeof *c->events * (size_t)pr->event_count);
  c->region_of = pgrt_zalloc(sizeof *c->region_of * (size_t)pr->node_count);
  c->conds = pgrt_zalloc(sizeof *c->conds * (size_t)pr->condition_count);
  c->upd = pgrt_zalloc(sizeof *c->upd * (size_t)pr->region_count);
  c->devupd = pgrt_zalloc((size_t)pr->node_count);
  c->hosts = pgrt_zalloc(sizeof *c->hosts * (size_t)pr->host_slots);
  c->boxed = pgrt_zalloc((size_t)pr->node_count);
  c->svals = pgrt_zalloc(sizeof *c->svals * (size_t)(pr->scalar_slots + pr->read_count + pr->bucket_count));
  c->bucket_next = pgrt_zalloc(sizeof *c->bucket_next * (size_t)pr->dim_count);
  c->bucket_last = pgrt_zalloc(sizeof *c->bucket_last * (size_t)pr->dim_count);
  c->bmode = pgrt_zalloc((size_t)pr->region_count);
  c->bgraphs = pgrt_zalloc(sizeof *c->bgraphs * (size_t)pr->region_count);
  c->bexecs = pgrt_zalloc(sizeof *c->bexecs * (size_t)pr->region_count);
  c->bucket_of = pgrt_zalloc(sizeof *c->bucket_of * (size_t)pr->node_count);
  c->unbuilt = pgrt_zalloc((size_t)pr->node_count);
  c->late = pgrt_zalloc(sizeof *c->late * (size_t)pr->node_count);
  c->is_late = pgrt_zalloc((size_t)pr->node_count);
  c->pending = pgrt_zalloc((size_t)pr->node_count);
  c->movable = pgrt_zalloc(sizeof *c->movable * (size_t)pr->node_count);
  for (int b = 0; b < pr->buffer_count; b++) c->host_count += pr->buffers[b].kind == PGRT_BUF_HOST;
  c->host = pgrt_zalloc(sizeof *c->host * (size_t)c->host_count);
  if (pr->comm_count) {
    c->nccl = pgrt_zalloc(sizeof *c->nccl);
    c->ncomms = pgrt_zalloc(sizeof *c->ncomms * (size_t)pr->comm_count);
  }
  if (!c->libs || !c->funcs || !c->addr || !c->bound_prev || !c->scalar_prev || !c->params || !c->args ||
      !c->graphs || !c->execs || !c->gnodes || !c->events || !c->region_of || !c->conds ||
      !c->upd || !c->devupd || !c->hosts || !c->boxed || !c->svals || !c->late || !c->is_late || !c->pending ||
      !c->host || !c->bucket_next || !c->bucket_last || !c->bmode || !c->bgraphs || !c->bexecs || !c->bucket_of ||
      !c->unbuilt || !c->movable || (pr->comm_count && (!c->nccl || !c->ncomms))) {
    pgrt_destroy(&c);
    return NULL;
  }
  return c;
}

/* The dims' values and the bucket scalars' dims, as pgcc wrote them; checked once. */
static pgrt_status check_dims(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  for (int d = 0; d < pr->dim_count; d++) {
    const pgrt_dim *dm = &pr->dims[d];
    int ok = dm->n_values >= 1 && dm->values;
    for (int k = 0; ok && k < dm->n_values; k++) ok = dm->values[k] >= 1 && (!k || dm->values[k] > dm->values[k - 1]);
    c->bucket_last[d] = -1;
    if (!ok) return pgrt_fail(PGRT_ERR_ARGUMENT, "dim '%s': its values are not sizes in increasing order", dm->name);
  }
  for (int k = 0; k < pr->bucket_count; k++)
    if (pr->bucket_dims[k] < 0 || pr->bucket_dims[k] >= pr->dim_count)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "bucket scalar %d: dim %d is not one of %d", k, pr->bucket_dims[k],
                       pr->dim_count);
  return PGRT_OK;
}

/* The modules and kernels, timed into the init's statistics. */
static pgrt_status load_modules(pgrt_ctx *c) {
  long long t_modules = pgrt_mono_ns();
  pgrt_status st = pgrt_load_modules(c);
  c->init_stats.modules_ns = pgrt_mono_ns() - t_modules;
  c->init_stats.library_fatbins = pgrt_libset_fatbins(c->libset);
  c->init_stats.library_threads = pgrt_libset_threads(c->libset);
  c->init_stats.library_bytes = (long long)pgrt_libset_bytes(c->libset);
  return st;
}

/* One NCCL communicator per comm, on this context's device; every rank joins, in this order. */
static pgrt_status join_comms(pgrt_ctx *c, const pgrt_nccl_id *id, int rank) {
  const pgrt_program *pr = c->prog;
  for (int k = 0; k < pr->comm_count; k++) {
    int r = c->nccl->comm_init_rank(&c->ncomms[k], pr->comms[k].ranks, *id, rank);
    if (r != 0) {
      c->ncomms[k] = NULL;
      return pgrt_fail(PGRT_ERR_NCCL, "ncclCommInitRank failed for comm '%s' (rank %d of %d): %s (%d)",
                       pr->comms[k].name, rank, pr->comms[k].ranks, c->nccl->get_error_string(r), r);
    }
  }
  return PGRT_OK;
}

/* Which region each node runs in (bodies follow the nodes that own them), which bucket
 * regions run a graph per bucket; the graph regions' graphs, and the conditional handles
 * that belong to them. */
static pgrt_status make_graphs(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  for (int r = 0; r < pr->region_count; r++)
    for (int i = pr->regions[r].first; i < pr->regions[r].first + pr->regions[r].count; i++) c->region_of[i] = r;
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_CHILD && n->kind != PGRT_NODE_CONDITIONAL) continue;
    for (int b = n->body; b < n->body + n->body_count; b++)
      for (int j = pr->bodies[b].first; j < pr->bodies[b].first + pr->bodies[b].count; j++)
        c->region_of[j] = c->region_of[i];
  }
  pgrt_bucket_modes(c);
  for (int r = 0; r < pr->region_count; r++)
    if (pr->regions[r].graph && !c->bmode[r]) CU(pgrt_cu.cuGraphCreate(&c->graphs[r], 0), "a graph region");
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_CONDITIONAL || c->unbuilt[i]) continue;
    if (!c->graphs[c->region_of[i]])
      return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a conditional node must be in a graph region", n->origin);
    CU(pgrt_cu.cuGraphConditionalHandleCreate(&c->conds[n->condition], c->graphs[c->region_of[i]], c->cu,
                                      pr->conditions[n->condition].default_value, CU_GRAPH_COND_ASSIGN_DEFAULT),
       n->origin);
  }
out:
  return st;
}

/* Every buffer's address: per-call ones on a placeholder until the first call,
 * intermediates in the arena (the caller's, or one allocated here), weights the
 * caller's, host buffers pinned and mapped (copies and kernels reach them by address). */
static pgrt_status place_buffers(pgrt_ctx *c, const CUdeviceptr *weights, CUdeviceptr arena) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  uint64_t bound_max = 1;
  for (int b = 0; b < pr->buffer_count; b++)
    if (pr->buffers[b].kind == PGRT_BUF_BOUND && pr->buffers[b].size > bound_max) bound_max = pr->buffers[b].size;
  CU(pgrt_cu.cuMemAlloc(&c->placeholder, bound_max), "the placeholder for per-call buffers");
  if (arena) {
    c->arena = arena;
  } else if (pr->arena_bytes) {
    CU(pgrt_cu.cuMemAlloc(&c->arena, pr->arena_bytes), "the arena");
    c->own_arena = 1;
  }
  for (int b = 0; b < pr->buffer_count; b++) {
    const pgrt_buffer *buf = &pr->buffers[b];
    if (buf->kind == PGRT_BUF_HOST) {
      if (buf->slot < 0 || buf->slot >= c->host_count || c->host[buf->slot])
        return pgrt_fail(PGRT_ERR_ARGUMENT, "host buffer '%s': slot %d is not one of %d", buf->name, buf->slot,
                         c->host_count);
      CU(pgrt_cu.cuMemHostAlloc(&c->host[buf->slot], buf->size ? buf->size : 1,
                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), buf->name);
      memset(c->host[buf->slot], 0, buf->size);
      CU(pgrt_cu.cuMemHostGetDevicePointer(&c->addr[b], c->host[buf->slot], 0), buf->name);
    }
    if (buf->kind == PGRT_BUF_RNG) {
      CU(pgrt_cu.cuMemAlloc(&c->rng, 16), buf->name);
      c->addr[b] = c->rng;
      c->rng_seed = PGRT_DEFAULT_SEED, c->rng_offset = 0;
    }
    if (buf->kind == PGRT_BUF_ARENA) c->addr[b] = c->arena + buf->offset;
    if (buf->kind == PGRT_BUF_BOUND) c->addr[b] = c->placeholder;
    if (buf->kind == PGRT_BUF_WEIGHT) {
      c->addr[b] = weights[buf->slot];
      if (!c->addr[b]) return pgrt_fail(PGRT_ERR_ARGUMENT, "weight '%s' is a null pointer", buf->name);
    }
  }
out:
  return st;
}

/* Each kernel node's parameter block, filled; nodes with caller_args use the caller's
 * arrays as they are. */
static pgrt_status make_params(pgrt_ctx *c, void **const *kernel_args) {
  const pgrt_program *pr = c->prog;
  for (int i = 0, given = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (n->kind != PGRT_NODE_KERNEL) continue;
    if (n->caller_args) {
      c->args[i] = (void **)kernel_args[given++];
      if (!c->args[i]) return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': its arguments are a null pointer", n->origin);
      continue;
    }
    uint32_t bytes = pr->kernels[n->kernel].param_bytes;
    c->params[i] = pgrt_zalloc(bytes);
    c->args[i] = pgrt_zalloc(sizeof(void *) * (size_t)n->param_count);
    if (!c->params[i] || !c->args[i]) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    memcpy(c->params[i], n->params, bytes);
    for (int q = 0; q < n->param_count; q++) c->args[i][q] = c->params[i] + n->param_offsets[q];
    pgrt_fill_params(c, i, NULL);
  }
  return PGRT_OK;
}

/* The read scalars' and the guards' tables, checked; the kernel nodes that take read
 * scalars (late: rewritten after each sync); the nodes a call can change (movable:
 * only these are looked at on every call). */
static pgrt_status find_changing(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  for (int k = 0; k < pr->read_count; k++) {
    const pgrt_read_scalar *rd = &pr->reads[k];
    int from_host = rd->buffer >= 0 && rd->buffer < pr->buffer_count && pr->buffers[rd->buffer].kind == PGRT_BUF_HOST;
    if (rd->buffer >= 0 ? !from_host || pgrt_dtype_size(rd->from) > pr->buffers[rd->buffer].size
                        : rd->callback < 0 || rd->callback >= pr->callback_slots)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "read scalar '%s': neither a host buffer that holds its value nor a callback",
                       rd->name);
  }
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    for (int k = 0; n->kind == PGRT_NODE_KERNEL && !n->caller_args && k < n->scalar_count && !c->is_late[i]; k++)
      if (n->scalars[k].slot >= pr->scalar_slots && n->scalars[k].slot < pr->scalar_slots + pr->read_count)
        c->is_late[i] = 1, c->late[c->late_count++] = i;
  }
  for (int i = 0; i < pr->node_count; i++)
    if (pr->nodes[i].kind == PGRT_NODE_GUARD &&
        (pr->nodes[i].buffer < 0 || pr->nodes[i].buffer >= pr->buffer_count ||
         pr->buffers[pr->nodes[i].buffer].kind != PGRT_BUF_HOST ||
         pr->nodes[i].expect_len > pr->buffers[pr->nodes[i].buffer].size))
      return pgrt_fail(PGRT_ERR_ARGUMENT, "guard '%s': its buffer is not a host buffer that holds what it expects",
                       pr->nodes[i].origin);
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    int own = n->kind == PGRT_NODE_KERNEL && !n->caller_args; /* only these have relocs and scalars */
    int uses = own && n->scalar_count > 0;
    for (int r = 0; own && r < n->reloc_count; r++) uses |= pr->buffers[n->relocs[r].buffer].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_MEMCPY) uses |= pr->buffers[n->src].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_MEMCPY || n->kind == PGRT_NODE_MEMSET) uses |= pr->buffers[n->dst].kind == PGRT_BUF_BOUND;
    if (n->kind == PGRT_NODE_HOST) uses = 1;
    if (uses) c->movable[c->movable_count++] = i;
  }
  return PGRT_OK;
}

/* Device-side update: the kernel nodes directly in such a region that use what a call
 * binds (not those inside bodies, not those whose arguments the caller gave, not those
 * that take read scalars: the updater runs before the sync that reads them).
 * PGRT_UPDATE=host|device overrides the tables: every region patches from the host, or
 * on the device where it can (benchmarks and tests compare the two). */
static void plan_updaters(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  const char *how = getenv("PGRT_UPDATE");
  int force_host = how && strcmp(how, "host") == 0, force_device = how && strcmp(how, "device") == 0;
  for (int r = 0; r < pr->region_count && !force_host; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (!rg->graph || c->bmode[r] || !(rg->device_update || force_device) ||
        pr->bound_slots + pr->scalar_slots + pr->bucket_count > PGRT_UPD_SLOTS)
      continue;
    for (int m = 0; m < c->movable_count; m++) {
      int i = c->movable[m];
      const pgrt_node *n = &pr->nodes[i];
      if (i < rg->first || i >= rg->first + rg->count || n->kind != PGRT_NODE_KERNEL || n->caller_args ||
          c->is_late[i])
        continue;
      c->devupd[i] = 1;
      c->upd[r].nodes++;
      c->upd[r].count += n->scalar_count;
      for (int k = 0; k < n->reloc_count; k++) c->upd[r].count += pr->buffers[n->relocs[k].buffer].kind == PGRT_BUF_BOUND;
    }
    c->any_updater |= c->upd[r].count > 0;
  }
}

/* Copies and memsets in graphs built as kernels (pgrt_copy, pgrt_set), with their
 * parameter blocks; returns whether there are any, or -1 out of host memory.
 *
 * Those whose memory moves: CUDA patches a copy or memset node only where it stays
 * one-dimensional and its memory keeps its mapping, and refuses (CUDA_ERROR_INVALID_VALUE,
 * seen on an H100) a caller's memory from the virtual memory API -- PyTorch's expandable
 * segments -- in place of cuMemAlloc'd memory; a kernel's arguments may point at any of
 * it (pinned host memory included: unified addressing).  And memsets, moving or not:
 * every memset node made a graph's launch cost the host about 0.7 us from an idle GPU,
 * and back to back the launch waited for the GPU, while a kernel node costs a launch no
 * measurable time (bench/launch_cost.cu, H100, driver 580).  PGRT_MEMSET=node keeps
 * them nodes. */
static int plan_boxes(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  int any = 0;
  for (int m = 0; m < c->movable_count; m++) {
    int i = c->movable[m];
    const pgrt_node *n = &pr->nodes[i];
    if ((n->kind == PGRT_NODE_MEMCPY || n->kind == PGRT_NODE_MEMSET) && pr->regions[c->region_of[i]].graph)
      c->boxed[i] = 1;
  }
  const char *memset_env = getenv("PGRT_MEMSET");
  if (!memset_env || strcmp(memset_env, "node") != 0)
    for (int i = 0; i < pr->node_count; i++)
      if (pr->nodes[i].kind == PGRT_NODE_MEMSET && pr->regions[c->region_of[i]].graph) c->boxed[i] = 1;
  for (int i = 0; i < pr->node_count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (!c->boxed[i]) continue;
    any = 1;
    c->params[i] = pgrt_zalloc(PGRT_BOX_PARAM_BYTES);
    c->args[i] = pgrt_zalloc(sizeof(void *) * 6);
    if (!c->params[i] || !c->args[i]) return -1;
    static const int copy_at[6] = {0, 8, 16, 24, 32, 40}, set_at[6] = {0, 8, 12, 16, 24, 32};
    for (int q = 0; q < 6; q++) c->args[i][q] = c->params[i] + (n->kind == PGRT_NODE_MEMCPY ? copy_at : set_at)[q];
  }
  return any;
}

/* libpgrt's own kernels the program needs: the updater, the box kernels, the writer of
 * the random-number state. */
static pgrt_status load_own_kernels(pgrt_ctx *c) {
  pgrt_status st = PGRT_OK;
  const char *pdl = getenv("PGRT_PDL"); /* off: programmatic dependencies built as full ones */
  c->full_deps = pdl && (strcmp(pdl, "off") == 0 || strcmp(pdl, "0") == 0);
  plan_updaters(c);
  long long t_own = pgrt_mono_ns();
  if (c->any_updater && (st = pgrt_load_own(PGRT_OWN_UPDATER, &c->upd_lib, &c->upd_func, &c->init_stats)))
    return st;
  int boxes = plan_boxes(c);
  if (boxes < 0) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  if (boxes && (st = pgrt_load_own(PGRT_OWN_BOX, &c->box_lib, c->box_funcs, &c->init_stats))) return st;
  if (c->rng && (st = pgrt_load_own(PGRT_OWN_RNG, &c->rng_lib, &c->rng_func, &c->init_stats))) return st;
  c->init_stats.own_ns = pgrt_mono_ns() - t_own;
  return PGRT_OK;
}

/* Every graph region's graph (regions that fell back to eager launch keep none), then
 * a synchronization: the module globals' copies and the uploads are done. */
static pgrt_status build_graphs(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  long long t_graphs = pgrt_mono_ns();
  for (int r = 0; r < pr->region_count; r++)
    if (pr->regions[r].graph && (st = c->bmode[r] ? pgrt_build_buckets(c, r) : pgrt_build_graph(c, r)) != PGRT_OK)
      goto out;
  for (int r = 0; r < pr->region_count; r++)
    if (c->graphs[r] && !c->execs[r]) pgrt_cu.cuGraphDestroy(c->graphs[r]), c->graphs[r] = NULL;
  CU(pgrt_cu.cuCtxSynchronize(), "init");
  c->init_stats.graphs_ns = pgrt_mono_ns() - t_graphs;
out:
  return st;
}

/* x + y <= limit, with no overflow (sizes and offsets of the tables are unsigned). */
static int fits(uint64_t x, uint64_t y, uint64_t limit) { return x <= limit && y <= limit - x; }

/* A copy's or a set's extent at dst (or src): `rows` rows `pitch` apart, `bytes` each,
 * from `offset`, inside a buffer of `size` bytes. */
static int box_fits(uint64_t offset, uint64_t bytes, uint64_t rows, uint64_t pitch, uint64_t size) {
  if (!pitch) pitch = bytes;
  if (rows > 1 && pitch > (UINT64_MAX - bytes) / (rows - 1)) return 0;
  return fits(offset, (rows - 1) * pitch + bytes, size);
}

#define TABLE_OK(count, array) ((count) >= 0 && ((count) == 0 || (array)))
#define BAD(...) return pgrt_fail(PGRT_ERR_ARGUMENT, __VA_ARGS__)

/* One kernel node's parameter table: its kernel, and every byte it writes inside the
 * kernel's parameter block. */
static pgrt_status check_kernel_node(const pgrt_program *pr, const pgrt_node *n) {
  if (n->kernel < 0 || n->kernel >= pr->kernel_count) BAD("node '%s': kernel %d is not one of %d", n->origin,
                                                           n->kernel, pr->kernel_count);
  if (n->caller_args) return PGRT_OK;
  uint32_t pb = pr->kernels[n->kernel].param_bytes;
  if ((pb && !n->params) || !TABLE_OK(n->param_count, n->param_offsets) || !TABLE_OK(n->reloc_count, n->relocs) ||
      !TABLE_OK(n->scalar_count, n->scalars) || !TABLE_OK(n->cond_ref_count, n->cond_refs))
    BAD("node '%s': its parameter tables are not whole", n->origin);
  for (int q = 0; q < n->param_count; q++)
    if (n->param_offsets[q] >= pb) BAD("node '%s': parameter %d is past its %u bytes", n->origin, q, pb);
  for (int r = 0; r < n->reloc_count; r++) {
    const pgrt_reloc *rl = &n->relocs[r];
    if (rl->buffer < 0 || rl->buffer >= pr->buffer_count || (unsigned)rl->kind > PGRT_RELOC_HI32 ||
        !fits(rl->at, pgrt_reloc_size(rl->kind), pb))
      BAD("node '%s': relocation %d is not a buffer's address inside its %u parameter bytes", n->origin, r, pb);
  }
  for (int k = 0; k < n->scalar_count; k++) {
    const pgrt_scalar_ref *sr = &n->scalars[k];
    if (sr->slot < 0 || sr->slot >= pr->scalar_slots + pr->read_count + pr->bucket_count || sr->size > 8 ||
        !fits(sr->at, sr->size, pb))
      BAD("node '%s': scalar %d is not a scalar value inside its %u parameter bytes", n->origin, k, pb);
  }
  for (int k = 0; k < n->cond_ref_count; k++)
    if (n->cond_refs[k].condition < 0 || n->cond_refs[k].condition >= pr->condition_count ||
        !fits(n->cond_refs[k].at, sizeof(CUgraphConditionalHandle), pb))
      BAD("node '%s': conditional handle %d is not a condition's inside its %u parameter bytes", n->origin, k, pb);
  return PGRT_OK;
}

/* One node's own indices and extents. */
static pgrt_status check_node(const pgrt_program *pr, const pgrt_node *n) {
  const pgrt_buffer *b = pr->buffers;
  uint64_t rows = (n->height ? n->height : 1) * (n->depth ? n->depth : 1);
  if (n->height > UINT32_MAX || n->depth > UINT32_MAX) BAD("node '%s': too many rows", n->origin);
  switch (n->kind) {
  case PGRT_NODE_KERNEL: return check_kernel_node(pr, n);
  case PGRT_NODE_MEMCPY:
    if (n->src < 0 || n->src >= pr->buffer_count || n->dst < 0 || n->dst >= pr->buffer_count ||
        !box_fits(n->src_offset, n->bytes, rows, n->src_pitch, b[n->src].size) ||
        !box_fits(n->dst_offset, n->bytes, rows, n->dst_pitch, b[n->dst].size))
      BAD("node '%s': its copy is not inside its buffers", n->origin);
    return PGRT_OK;
  case PGRT_NODE_MEMSET:
    if (n->dst < 0 || n->dst >= pr->buffer_count || (n->elem != 1 && n->elem != 2 && n->elem != 4) ||
        n->bytes % n->elem || !box_fits(n->dst_offset, n->bytes, n->height ? n->height : 1, n->dst_pitch, b[n->dst].size))
      BAD("node '%s': its set is not whole elements inside its buffer", n->origin);
    return PGRT_OK;
  case PGRT_NODE_EVENT_RECORD:
  case PGRT_NODE_EVENT_WAIT:
    if (n->event < 0 || n->event >= pr->event_count) BAD("node '%s': event %d is not one of %d", n->origin, n->event,
                                                         pr->event_count);
    return PGRT_OK;
  case PGRT_NODE_CONDITIONAL:
  case PGRT_NODE_CHILD:
    if (n->kind == PGRT_NODE_CONDITIONAL &&
        (n->condition < 0 || n->condition >= pr->condition_count || (unsigned)n->cond_type > PGRT_COND_SWITCH))
      BAD("node '%s': condition %d is not one of %d", n->origin, n->condition, pr->condition_count);
    if (n->body < 0 || n->body_count < 1 || n->body > pr->body_count - n->body_count)
      BAD("node '%s': bodies %d..%lld are not the program's %d", n->origin, n->body, (long long)n->body + n->body_count - 1,
          pr->body_count);
    return PGRT_OK;
  case PGRT_NODE_HOST:
    if (n->host < 0 || n->host >= pr->host_slots) BAD("node '%s': host function %d is not one of %d", n->origin,
                                                      n->host, pr->host_slots);
    return PGRT_OK;
  case PGRT_NODE_GUARD:
    if (n->expect_len && !n->expect) BAD("guard '%s': nothing to expect", n->origin);
    return PGRT_OK;
  case PGRT_NODE_EMPTY:
  case PGRT_NODE_SYNC:
  case PGRT_NODE_COLLECTIVE: return PGRT_OK; /* collectives: check_comms */
  }
  BAD("node '%s': kind %d is not a node kind", n->origin, (int)n->kind);
}

/* The whole program's tables, before anything is allocated from them: counts and
 * arrays, every index in range, every buffer where it can be, every node in one region
 * or body, every dependency on an earlier node of its own. */
static pgrt_status check_tables(const pgrt_program *pr) {
  if (!TABLE_OK(pr->module_count, pr->modules) || !TABLE_OK(pr->kernel_count, pr->kernels) ||
      !TABLE_OK(pr->buffer_count, pr->buffers) || !TABLE_OK(pr->node_count, pr->nodes) ||
      !TABLE_OK(pr->region_count, pr->regions) || !TABLE_OK(pr->body_count, pr->bodies) ||
      !TABLE_OK(pr->condition_count, pr->conditions) || !TABLE_OK(pr->read_count, pr->reads) ||
      !TABLE_OK(pr->dim_count, pr->dims) || !TABLE_OK(pr->bucket_count, pr->bucket_dims) ||
      !TABLE_OK(pr->comm_count, pr->comms) || pr->callback_slots < 0 || pr->bound_slots < 0 || pr->weight_slots < 0 ||
      pr->scalar_slots < 0 || pr->caller_arg_nodes < 0 || pr->host_slots < 0 || pr->event_count < 0)
    BAD("program '%s': its tables are not whole (a negative count, or a missing array)", pr->name);
  int rngs = 0;
  if ((int64_t)pr->bound_slots + pr->scalar_slots + pr->read_count + pr->bucket_count > INT32_MAX / 8)
    BAD("program '%s': more slots and scalars than an index holds", pr->name); /* their sums index below */
  for (int k = 0; k < pr->kernel_count; k++)
    if (pr->kernels[k].module < -1 || pr->kernels[k].module >= pr->module_count)
      BAD("kernel '%s': module %d is not one of %d", pr->kernels[k].name, pr->kernels[k].module, pr->module_count);
  for (int k = 0; k < pr->buffer_count; k++) {
    const pgrt_buffer *b = &pr->buffers[k];
    int ok = b->kind == PGRT_BUF_BOUND    ? b->slot >= 0 && b->slot < pr->bound_slots
             : b->kind == PGRT_BUF_WEIGHT ? b->slot >= 0 && b->slot < pr->weight_slots
             : b->kind == PGRT_BUF_ARENA  ? fits(b->offset, b->size, pr->arena_bytes)
             : b->kind == PGRT_BUF_RNG    ? b->size == 16 && pr->rng_increment && !rngs++
                                          : b->kind == PGRT_BUF_HOST;
    if (!ok) BAD("buffer '%s': not a slot the caller fills, nor inside the arena, nor a host buffer, nor the one "
                 "16-byte random-number state of a program that draws random numbers", b->name);
  }
  if (pr->rng_increment && !rngs)
    BAD("program '%s': it draws random numbers (rng_increment %llu) but has no random-number state", pr->name,
        (unsigned long long)pr->rng_increment);
  int *lo = pgrt_zalloc(sizeof *lo * (size_t)(pr->node_count + 1)); /* 1 + the first node of each node's graph */
  if (!lo) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  pgrt_status st = PGRT_OK;
  int caller_args = 0;
  for (int r = 0; r < pr->region_count + pr->body_count && st == PGRT_OK; r++) {
    int first = r < pr->region_count ? pr->regions[r].first : pr->bodies[r - pr->region_count].first;
    int count = r < pr->region_count ? pr->regions[r].count : pr->bodies[r - pr->region_count].count;
    if (first < 0 || count < 0 || first > pr->node_count - count ||
        (r < pr->region_count && (pr->regions[r].bucket_dim < 0 || pr->regions[r].bucket_dim > pr->dim_count))) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "%s %d: nodes %d..%lld are not the program's %d", r < pr->region_count ? "region"
                     : "body", r < pr->region_count ? r : r - pr->region_count, first, (long long)first + count - 1, pr->node_count);
      break;
    }
    for (int i = first; i < first + count && st == PGRT_OK; i++)
      if (lo[i]) st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s' is in two regions or bodies", pr->nodes[i].origin);
      else lo[i] = 1 + first;
  }
  for (int i = 0; i < pr->node_count && st == PGRT_OK; i++) {
    const pgrt_node *n = &pr->nodes[i];
    if (!lo[i]) st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s' is in no region or body", n->origin);
    else if (!TABLE_OK(n->dep_count, n->deps)) st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': no deps", n->origin);
    for (int d = 0; st == PGRT_OK && d < n->dep_count; d++)
      if (n->deps[d] < lo[i] - 1 || n->deps[d] >= i || (n->dep_kinds && n->dep_kinds[d] > PGRT_DEP_LAUNCH_ORDER))
        st = pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': dependency %d is not on an earlier node of its graph",
                       n->origin, d);
    if (st == PGRT_OK) st = check_node(pr, n);
    caller_args += n->kind == PGRT_NODE_KERNEL && n->caller_args;
  }
  if (st == PGRT_OK && caller_args != pr->caller_arg_nodes)
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s': %d kernel nodes take the caller's arguments, not %d", pr->name,
                   caller_args, pr->caller_arg_nodes);
  free(lo);
  return st;
}
#undef BAD
#undef TABLE_OK

/* What a program must be for init to start: this libpgrt's tables, its weights and
 * kernel arguments given, its comms and collectives sound. */
static pgrt_status check_program(const pgrt_program *pr, const CUdeviceptr *weights, void **const *kernel_args,
                                 const pgrt_nccl_id *id, int rank) {
  if (pr->version != PGRT_VERSION)
    return pgrt_fail(PGRT_ERR_VERSION, "program '%s' was generated for libpgrt tables version %d, this is %d", pr->name,
                     pr->version, PGRT_VERSION);
  if (pr->weight_slots && !weights) return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' needs its weights", pr->name);
  if (pr->caller_arg_nodes && !kernel_args)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "program '%s' needs the arguments of its %d kernel nodes", pr->name,
                     pr->caller_arg_nodes);
  pgrt_status st = check_tables(pr);
  if (st != PGRT_OK) return st;
  return pr->comm_count ? check_comms(pr, id, rank) : PGRT_OK;
}

pgrt_status pgrt_init_comm(pgrt_ctx **out_ctx, const pgrt_program *pr, const CUdeviceptr *weights,
                           void **const *kernel_args, CUdeviceptr arena, const pgrt_nccl_id *id, int rank) {
  long long t_init = pgrt_mono_ns();
  if (!out_ctx || !pr) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_init: null context or program");
  *out_ctx = NULL;
  pgrt_status st = check_program(pr, weights, kernel_args, id, rank);
  if (st != PGRT_OK) return st;
  pgrt_ctx *c = new_context(pr);
  if (!c) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  if ((st = check_dims(c)) != PGRT_OK) goto out;
  if (pr->comm_count && (st = pgrt_nccl_load(c->nccl)) != PGRT_OK) goto out; /* before any CUDA call */
  const char *why = pgrt_driver_open(); /* the first CUDA call may be this one's (cuda_driver.c) */
  if (why) {
    st = pgrt_fail(PGRT_ERR_DRIVER, "%s", why);
    goto out;
  }
  CU(pgrt_cu.cuCtxGetCurrent(&c->cu), "init");
  if (!c->cu) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_init: no current CUDA context");
    goto out;
  }
  if ((st = load_modules(c)) != PGRT_OK || (st = join_comms(c, id, rank)) != PGRT_OK) goto out;
  for (int e = 0; e < pr->event_count; e++) CU(pgrt_cu.cuEventCreate(&c->events[e], CU_EVENT_DISABLE_TIMING), "an event");
  if ((st = make_graphs(c)) != PGRT_OK || (st = place_buffers(c, weights, arena)) != PGRT_OK ||
      (st = make_params(c, kernel_args)) != PGRT_OK || (st = find_changing(c)) != PGRT_OK ||
      (st = load_own_kernels(c)) != PGRT_OK || (st = build_graphs(c)) != PGRT_OK)
    goto out;
  c->init_stats.total_ns = pgrt_mono_ns() - t_init;
out:
  if (st != PGRT_OK) {
    pgrt_destroy(&c);
    return st;
  }
  *out_ctx = c;
  return PGRT_OK;
}

/* Here rather than in cuda_driver.c, which reports to no other file (status.c is its layer's). */
pgrt_status pgrt_cuda(const pgrt_driver **drv) {
  if (!drv) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_cuda: null table");
  const char *why = pgrt_driver_open();
  *drv = why ? NULL : &pgrt_cu;
  return why ? pgrt_fail(PGRT_ERR_DRIVER, "%s", why) : PGRT_OK;
}

/* Refused, where a call of the program is in progress (threads.c): nothing freed, *pc
 * kept, a warning on stderr (the caller of a void function may not look at pgrt_error()).
 * Otherwise on the program's CUDA context, made current for it where it is not. */
void pgrt_destroy(pgrt_ctx **pc) {
  if (!pc || !*pc) return;
  pgrt_ctx *c = *pc;
  const pgrt_program *pr = c->prog;
  if (pgrt_ctx_enter(c, "pgrt_destroy") != PGRT_OK) {
    fprintf(stderr, "pgrt: warning: %s; not destroyed\n", pgrt_error());
    return;
  }
  pgrt_binding bound;
  pgrt_ctx_bind(c, &bound); /* (where that fails, the frees below fail too, and are ignored, as ever) */
  for (int r = 0; c->execs && r < pr->region_count; r++) {
    if (c->execs[r]) pgrt_cu.cuGraphExecDestroy(c->execs[r]);
    if (c->graphs[r]) pgrt_cu.cuGraphDestroy(c->graphs[r]);
  }
  for (int r = 0; c->bgraphs && r < pr->region_count; r++) pgrt_free_buckets(c, r);
  for (int k = 0; c->ncomms && k < pr->comm_count; k++) /* after the graphs that captured their work */
    if (c->ncomms[k]) c->nccl->comm_destroy(c->ncomms[k]);
  if (c->cap) pgrt_cu.cuStreamDestroy(c->cap);
  free(c->nccl), free(c->ncomms);
  for (int i = 0; c->params && i < pr->node_count; i++) {
    free(c->params[i]);
    if (c->args && !pr->nodes[i].caller_args) free(c->args[i]);
  }
  for (int m = 0; c->libs && m < pr->module_count; m++)
    if (c->libs[m]) pgrt_cu.cuLibraryUnload(c->libs[m]);
  for (int e = 0; c->events && e < pr->event_count; e++)
    if (c->events[e]) pgrt_cu.cuEventDestroy(c->events[e]);
  for (int r = 0; c->upd && r < pr->region_count; r++)
    if (c->upd[r].table) pgrt_cu.cuMemFree(c->upd[r].table);
  if (c->upd_lib) pgrt_cu.cuLibraryUnload(c->upd_lib);
  if (c->box_lib) pgrt_cu.cuLibraryUnload(c->box_lib);
  if (c->rng_lib) pgrt_cu.cuLibraryUnload(c->rng_lib);
  if (c->rng) pgrt_cu.cuMemFree(c->rng);
  pgrt_libset_free(c->libset);
  if (c->own_arena && c->arena) pgrt_cu.cuMemFree(c->arena);
  if (c->placeholder) pgrt_cu.cuMemFree(c->placeholder);
  for (int k = 0; c->host && k < c->host_count; k++)
    if (c->host[k]) pgrt_cu.cuMemFreeHost(c->host[k]);
  free(c->libs), free(c->funcs), free(c->addr), free(c->bound_prev), free(c->scalar_prev), free(c->params);
  free(c->args), free(c->graphs), free(c->execs), free(c->gnodes), free(c->movable), free(c->events);
  free(c->region_of), free(c->conds), free(c->upd), free(c->devupd), free(c->hosts), free(c->boxed);
  free(c->svals), free(c->late), free(c->is_late), free(c->pending), free(c->host);
  free(c->bucket_next), free(c->bucket_last), free(c->bmode), free(c->bgraphs), free(c->bexecs), free(c->bucket_of);
  free(c->unbuilt);
  pthread_mutex_destroy(&c->done_lock);
  free(c);
  pgrt_ctx_unbind(&bound);
  *pc = NULL;
}

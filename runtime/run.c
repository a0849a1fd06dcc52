/*
 * run.c -- pgrt_run: one call of a built program, and what a caller may ask of a built
 * context (its buckets, its graphs' topology, its nodes, the statistics).
 *
 * A call checks its arguments and picks each dim's bucket before it changes anything
 * (a size that fits no bucket stops it there); compares its addresses, scalars and host
 * functions with the last call's, rewrites the parameters of the nodes that use what
 * changed and patches those nodes in their graph (cuGraphExec*SetParams), or gives the
 * updaters this call's values; then launches the regions in order.  After each
 * synchronization it reads the scalars read on the host anew (host buffers, callbacks)
 * and rewrites the nodes that take them; those in graphs are patched just before their
 * graph launches.  A guard compares a host buffer with what the program was exported
 * with, and stops the call where they differ.
 */
#include "pgrt_impl.h"

#include <stdio.h>
#include <string.h>

/* The executable graph node i runs in: its region's, or its bucket's own (a bucket region
 * run a graph per bucket); NULL where it runs eagerly. */
static CUgraphExec exec_of(const pgrt_ctx *c, int i) {
  int r = c->region_of[i];
  if (c->bucket_of[i] >= 0) return c->bexecs[r] ? c->bexecs[r][c->bucket_of[i]] : NULL;
  return c->execs[r];
}

/* After a synchronization: every read scalar's value anew (its host buffer's first
 * element, or its callback's), and the parameters of the nodes that take them.  Those
 * in graphs are patched just before their graph launches (pending): once per call,
 * whatever moved before the sync and whatever was read at it. */
static pgrt_status refresh(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  for (int k = 0; k < pr->read_count; k++) {
    const pgrt_read_scalar *rd = &pr->reads[k];
    uint64_t v = 0;
    if (rd->buffer < 0) {
      const pgrt_scalar_fn *cb = &c->callbacks[rd->callback];
      int r = cb->fn(cb->data, (const void *const *)c->host, &v);
      if (r != 0)
        return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: the callback of scalar '%s' failed (it returned %d)", rd->name,
                         r);
      if (pgrt_dtype_size(rd->type) < 8) v &= (1ull << (8 * pgrt_dtype_size(rd->type))) - 1; /* its low bytes */
    } else {
      v = pgrt_scalar_convert(c->host[pr->buffers[rd->buffer].slot], rd->from, rd->type);
    }
    c->svals[pr->scalar_slots + k] = v;
  }
  for (int m = 0; m < c->late_count; m++) {
    int i = c->late[m];
    if (!pgrt_fill_params(c, i, c->svals)) continue;
    c->stats.read_updated++;
    if (exec_of(c, i)) c->pending[i] = 1;
  }
  return PGRT_OK;
}

static pgrt_status launch_eager(pgrt_ctx *c, int i, CUstream s) {
  const pgrt_node *n = &c->prog->nodes[i];
  pgrt_status st = PGRT_OK;
  switch (n->kind) {
  case PGRT_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS kp = pgrt_kernel_params(c, i);
    CUlaunchAttribute attrs[2];
    unsigned na = 0;
    memset(attrs, 0, sizeof attrs);
    if (pgrt_cluster_attr(c, n)) {
      attrs[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[na].value.clusterDim.x = n->cluster[0], attrs[na].value.clusterDim.y = n->cluster[1];
      attrs[na++].value.clusterDim.z = n->cluster[2];
    }
    if (n->priority) attrs[na].id = CU_LAUNCH_ATTRIBUTE_PRIORITY, attrs[na++].value.priority = n->priority;
    CUlaunchConfig cfg = {kp.gridDimX, kp.gridDimY, kp.gridDimZ, kp.blockDimX, kp.blockDimY, kp.blockDimZ,
                          kp.sharedMemBytes, s, attrs, na};
    CU(pgrt_cu.cuLaunchKernelEx(&cfg, kp.func, kp.kernelParams, NULL), n->origin);
    break;
  }
  case PGRT_NODE_MEMCPY:
    if ((n->height ? n->height : 1) * (n->depth ? n->depth : 1) == 1) {
      CU(pgrt_cu.cuMemcpyAsync(c->addr[n->dst] + n->dst_offset, c->addr[n->src] + n->src_offset, n->bytes, s), n->origin);
    } else {
      CUDA_MEMCPY3D m = pgrt_copy_params(c, n);
      CU(pgrt_cu.cuMemcpy3DAsync(&m, s), n->origin);
    }
    break;
  case PGRT_NODE_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = pgrt_set_params(c, n);
    if (m.elementSize == 1)
      CU(pgrt_cu.cuMemsetD2D8Async(m.dst, m.pitch, (unsigned char)m.value, m.width, m.height, s), n->origin);
    else if (m.elementSize == 2)
      CU(pgrt_cu.cuMemsetD2D16Async(m.dst, m.pitch, (unsigned short)m.value, m.width, m.height, s), n->origin);
    else CU(pgrt_cu.cuMemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, s), n->origin);
    break;
  }
  case PGRT_NODE_HOST: {
    CUDA_HOST_NODE_PARAMS h = pgrt_host_params(c, n);
    CU(pgrt_cu.cuLaunchHostFunc(s, h.fn, h.userData), n->origin);
    break;
  }
  case PGRT_NODE_EMPTY: break;
  case PGRT_NODE_SYNC:
    CU(pgrt_cu.cuStreamSynchronize(s), n->origin);
    if (c->prog->read_count && (st = refresh(c)) != PGRT_OK) goto out;
    break;
  case PGRT_NODE_GUARD: { /* the sync before it made the host buffer current */
    const unsigned char *have = c->host[c->prog->buffers[n->buffer].slot];
    if (memcmp(have, n->expect, n->expect_len) != 0) {
      char got[2 * 16 + 4] = "", want[2 * 16 + 4] = "";
      for (uint32_t b = 0; b < n->expect_len && b < 16; b++)
        snprintf(got + 2 * b, 3, "%02x", have[b]), snprintf(want + 2 * b, 3, "%02x", n->expect[b]);
      if (n->expect_len > 16) strcat(got, "..."), strcat(want, "...");
      return pgrt_fail(PGRT_ERR_GUARD, "guard '%s': the program took another path than the one exported (%s); the "
                       "outputs of this call are not valid (host buffer '%s' holds %s, not %s)", n->origin,
                       n->reason ? n->reason : "a value read on the host changed", c->prog->buffers[n->buffer].name,
                       got, want);
    }
    break;
  }
  case PGRT_NODE_EVENT_RECORD: CU(pgrt_cu.cuEventRecord(c->events[n->event], s), n->origin); break;
  case PGRT_NODE_EVENT_WAIT: CU(pgrt_cu.cuStreamWaitEvent(s, c->events[n->event], 0), n->origin); break;
  case PGRT_NODE_CHILD: {
    const pgrt_body *b = &c->prog->bodies[n->body];
    for (int j = b->first; j < b->first + b->count; j++)
      if ((st = launch_eager(c, j, s)) != PGRT_OK) goto out;
    break;
  }
  case PGRT_NODE_CONDITIONAL:
    return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a conditional node cannot run eagerly", n->origin);
  case PGRT_NODE_COLLECTIVE:
    if ((st = pgrt_nccl_collective(c->nccl, n, c->addr[n->src] + n->src_offset, c->addr[n->dst] + n->dst_offset,
                                   c->ncomms[n->comm], s)) != PGRT_OK)
      goto out;
    break;
  }
  c->stats.eager_nodes++;
out:
  return st;
}

/* Patches node i in the executable graph it is in (its region's, or its bucket's). */
static pgrt_status patch(pgrt_ctx *c, int i) {
  const pgrt_node *n = &c->prog->nodes[i];
  CUgraphExec ex = exec_of(c, i);
  pgrt_status st = PGRT_OK;
  if (c->boxed[i]) {
    CUDA_KERNEL_NODE_PARAMS kp = pgrt_box_params(c, i);
    CU(pgrt_cu.cuGraphExecKernelNodeSetParams(ex, c->gnodes[i], &kp), n->origin);
    c->stats.nodes_patched++;
    return st;
  }
  switch (n->kind) {
  case PGRT_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS kp = pgrt_kernel_params(c, i);
    CU(pgrt_cu.cuGraphExecKernelNodeSetParams(ex, c->gnodes[i], &kp), n->origin);
    break;
  }
  case PGRT_NODE_MEMCPY: {
    CUDA_MEMCPY3D m = pgrt_copy_params(c, n);
    CU(pgrt_cu.cuGraphExecMemcpyNodeSetParams(ex, c->gnodes[i], &m, c->cu), n->origin);
    break;
  }
  case PGRT_NODE_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = pgrt_set_params(c, n);
    CU(pgrt_cu.cuGraphExecMemsetNodeSetParams(ex, c->gnodes[i], &m, c->cu), n->origin);
    break;
  }
  case PGRT_NODE_HOST: {
    CUDA_HOST_NODE_PARAMS h = pgrt_host_params(c, n);
    CU(pgrt_cu.cuGraphExecHostNodeSetParams(ex, c->gnodes[i], &h), n->origin);
    break;
  }
  case PGRT_NODE_EMPTY:
  case PGRT_NODE_SYNC:
  case PGRT_NODE_GUARD:
  case PGRT_NODE_EVENT_RECORD:
  case PGRT_NODE_EVENT_WAIT:
  case PGRT_NODE_CHILD:
  case PGRT_NODE_CONDITIONAL:
  case PGRT_NODE_COLLECTIVE: break;
  }
  c->stats.nodes_patched++;
out:
  return st;
}

/* A bucket region run a graph per bucket: the graph of this call's bucket, after patching
 * its nodes that changed since it last ran; or, eagerly, the bucket's nodes. */
static pgrt_status launch_bucket(pgrt_ctx *c, int r, CUstream s) {
  const pgrt_program *pr = c->prog;
  const pgrt_region *rg = &pr->regions[r];
  const pgrt_node *sw = &pr->nodes[rg->first + 1];
  int k = c->bucket_next[rg->bucket_dim - 1];
  pgrt_status st = PGRT_OK;
  if (c->bmode[r] == PGRT_BUCKETS_EAGER) {
    const pgrt_body *b = &pr->bodies[sw->body + k];
    for (int j = b->first; j < b->first + b->count && st == PGRT_OK; j++) st = launch_eager(c, j, s);
    return st;
  }
  for (int m = 0; m < c->movable_count; m++) {
    int i = c->movable[m];
    if (c->pending[i] && c->region_of[i] == r && c->bucket_of[i] == k) {
      if ((st = patch(c, i)) != PGRT_OK) return st;
      c->pending[i] = 0;
    }
  }
  long long t = pgrt_mono_ns();
  CU(pgrt_cu.cuGraphLaunch(c->bexecs[r][k], s), sw->origin);
  c->stats.launch_ns += pgrt_mono_ns() - t;
  c->stats.graphs_launched++;
out:
  return st;
}

/* Each dim's bucket for this call's sizes, into c->bucket_next; PGRT_ERR_BUCKET where a
 * size fits none (nothing has changed yet). */
static pgrt_status pick_buckets(pgrt_ctx *c, const int64_t *sizes) {
  const pgrt_program *pr = c->prog;
  for (int d = 0; d < pr->dim_count; d++) {
    const pgrt_dim *dm = &pr->dims[d];
    int k = 0;
    while (k < dm->n_values && dm->values[k] < sizes[d]) k++;
    if (sizes[d] >= 1 && k < dm->n_values && (dm->pad || dm->values[k] == sizes[d])) {
      c->bucket_next[d] = k;
      continue;
    }
    char list[512];
    size_t used = 0;
    for (int v = 0; v < dm->n_values && used < sizeof list - 32; v++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld", v ? ", " : "", (long long)dm->values[v]);
    if (used >= sizeof list - 32) snprintf(list + used, sizeof list - used, ", ...");
    return pgrt_fail(PGRT_ERR_BUCKET, dm->pad ? "dim '%s': size %lld fits no bucket (%s)"
                                              : "dim '%s': size %lld is not one of the exact sizes (%s)",
                     dm->name, (long long)sizes[d], list);
  }
  return PGRT_OK;
}

/* The arguments of a call, checked before it changes anything; each dim's bucket for its
 * sizes, into c->bucket_next (PGRT_ERR_BUCKET where a size fits none). */
static pgrt_status check_call(pgrt_ctx *c, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                              const pgrt_scalar_fn *callbacks, const int64_t *sizes) {
  const pgrt_program *pr = c->prog;
  if (pr->bound_slots && !bound) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its buffers", pr->name);
  if (pr->scalar_slots && !scalars) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its scalars", pr->name);
  if (pr->host_slots && !hosts)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its host functions", pr->name);
  for (int k = 0; k < pr->host_slots; k++)
    if (!hosts[k].fn)
      for (int i = 0; i < pr->node_count; i++)
        if (pr->nodes[i].kind == PGRT_NODE_HOST && pr->nodes[i].host == k)
          return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: host node '%s' has no function", pr->nodes[i].origin);
  if (pr->callback_slots && !callbacks)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its callback scalars", pr->name);
  for (int k = 0; k < pr->read_count; k++)
    if (pr->reads[k].buffer < 0 && !callbacks[pr->reads[k].callback].fn)
      return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: callback scalar '%s' has no function", pr->reads[k].name);
  if (pr->dim_count && !sizes) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: '%s' needs its sizes", pr->name);
  pgrt_status st = pick_buckets(c, sizes);
  if (st != PGRT_OK) return st;
  for (int b = 0; b < pr->buffer_count; b++)
    if (pr->buffers[b].kind == PGRT_BUF_BOUND && !bound[pr->buffers[b].slot])
      return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: buffer '%s' is a null pointer", pr->buffers[b].name);
  return PGRT_OK;
}

/* Takes this call's addresses, scalars, bucket scalars and host functions; returns
 * whether any differs from the last call's (the first call: always). */
static int take_call(pgrt_ctx *c, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                     const pgrt_scalar_fn *callbacks) {
  const pgrt_program *pr = c->prog;
  int any = c->calls == 0;
  for (int b = 0; b < pr->buffer_count; b++) {
    const pgrt_buffer *buf = &pr->buffers[b];
    if (buf->kind != PGRT_BUF_BOUND) continue;
    if (c->addr[b] != bound[buf->slot]) c->addr[b] = bound[buf->slot], any = 1;
  }
  for (int k = 0; k < pr->scalar_slots; k++)
    if (c->scalar_prev[k] != scalars[k] || c->calls == 0) c->scalar_prev[k] = scalars[k], any = 1;
  if (pr->scalar_slots) memcpy(c->svals, scalars, sizeof *c->svals * (size_t)pr->scalar_slots);
  uint64_t *buckets = c->svals + pr->scalar_slots + pr->read_count; /* the bucket scalars' values */
  for (int k = 0; k < pr->bucket_count; k++) {
    uint64_t v = (uint64_t)c->bucket_next[pr->bucket_dims[k]];
    if (buckets[k] != v || c->calls == 0) buckets[k] = v, any = 1;
  }
  c->callbacks = callbacks;
  for (int k = 0; k < pr->host_slots; k++)
    if (c->hosts[k].fn != hosts[k].fn || c->hosts[k].data != hosts[k].data) c->hosts[k] = hosts[k], any = 1;
  return any;
}

/* Kernels: did their bytes change; copies, memsets and host nodes: patched whenever
 * anything moved.  Nodes in graphs are patched there (inside bodies too); eager ones
 * read their parameters when launched.  Nodes that take read scalars hold last call's
 * values until the sync, and nodes of a bucket's own graph may not run: both are
 * patched before their graph launches, if it does, once. */
static pgrt_status patch_moved(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  for (int m = 0; m < c->movable_count; m++) {
    int i = c->movable[m];
    if (c->unbuilt[i]) continue;
    int dirty = pr->nodes[i].kind == PGRT_NODE_KERNEL ? pgrt_fill_params(c, i, c->svals) : 1;
    int lazy = c->is_late[i] || c->bucket_of[i] >= 0;
    if (dirty && exec_of(c, i) && lazy) c->pending[i] = 1;
    else if (dirty && exec_of(c, i) && !c->devupd[i] && (st = patch(c, i)) != PGRT_OK) return st;
  }
  return st;
}

/* Device-side update: the updaters' arguments are this call's addresses and scalars.
 * When nothing changed, an updater is skipped: its nodes keep what it wrote last. */
static pgrt_status update_on_device(pgrt_ctx *c, int any) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  unsigned char vals[8 * PGRT_UPD_SLOTS];
  size_t used = 8 * (size_t)(pr->bound_slots + pr->scalar_slots + pr->bucket_count);
  if (any) {
    for (int b = 0; b < pr->buffer_count; b++)
      if (pr->buffers[b].kind == PGRT_BUF_BOUND) memcpy(vals + 8 * pr->buffers[b].slot, &c->addr[b], 8);
    if (pr->scalar_slots) memcpy(vals + 8 * pr->bound_slots, c->svals, 8 * (size_t)pr->scalar_slots);
    if (pr->bucket_count)
      memcpy(vals + 8 * (pr->bound_slots + pr->scalar_slots), c->svals + pr->scalar_slots + pr->read_count,
             8 * (size_t)pr->bucket_count);
  }
  for (int r = 0; r < pr->region_count; r++) {
    pgrt_updater *u = &c->upd[r];
    if (!u->count || !c->execs[r]) continue;
    if (u->enabled != any) CU(pgrt_cu.cuGraphNodeSetEnabled(c->execs[r], u->node, (unsigned)any), "the updater");
    u->enabled = any;
    if (!any) continue;
    memcpy(u->params + 16, vals, used);
    CUDA_KERNEL_NODE_PARAMS kp = pgrt_updater_params(c, u);
    CU(pgrt_cu.cuGraphExecKernelNodeSetParams(c->execs[r], u->node, &kp), "the updater");
    c->stats.device_updated += u->nodes;
  }
out:
  return st;
}

/* Every region in order: a graph (its late nodes patched first), a bucket's graph, or
 * its nodes eagerly. */
static pgrt_status launch_regions(pgrt_ctx *c, CUstream s) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  for (int r = 0; r < pr->region_count; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (c->bmode[r]) {
      if ((st = launch_bucket(c, r, s)) != PGRT_OK) return st;
      continue;
    }
    if (c->execs[r]) {
      for (int m = 0; m < c->late_count; m++) { /* what the last sync read, or what moved */
        int i = c->late[m];
        if (c->pending[i] && c->region_of[i] == r) {
          if ((st = patch(c, i)) != PGRT_OK) return st;
          c->pending[i] = 0;
        }
      }
      long long t = pgrt_mono_ns();
      CU(pgrt_cu.cuGraphLaunch(c->execs[r], s), "a graph region");
      c->stats.launch_ns += pgrt_mono_ns() - t;
      c->stats.graphs_launched++;
    } else {
      for (int i = rg->first; i < rg->first + rg->count; i++)
        if ((st = launch_eager(c, i, s)) != PGRT_OK) return st;
    }
  }
out:
  return st;
}

/* One call, the program this thread's alone and its CUDA context current. */
static pgrt_status run_call(pgrt_ctx *c, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                            const pgrt_scalar_fn *callbacks, const int64_t *sizes, CUstream s, long long t_start) {
  pgrt_status st = check_call(c, bound, scalars, hosts, callbacks, sizes);
  if (st != PGRT_OK) return st;
  memset(&c->stats, 0, sizeof c->stats);
  int any = take_call(c, bound, scalars, hosts, callbacks);
  if (any && (st = patch_moved(c)) != PGRT_OK) goto out;
  if (c->any_updater && (st = update_on_device(c, any)) != PGRT_OK) goto out;
  if (c->rng) { /* the random-number state for this call, before anything that reads it */
    void *rng_args[] = {&c->rng, &c->rng_seed, &c->rng_offset};
    CUlaunchConfig one = {1, 1, 1, 1, 1, 1, 0, s, NULL, 0};
    CU(pgrt_cu.cuLaunchKernelEx(&one, c->rng_func, rng_args, NULL), "the random-number state");
  }
  c->stats.prepare_ns = pgrt_mono_ns() - t_start;
  if ((st = launch_regions(c, s)) != PGRT_OK) goto out;
  c->rng_offset += c->prog->rng_increment; /* (a call that failed drew nothing the caller gets) */
  c->calls++;
out:
  c->stats.host_ns = pgrt_mono_ns() - t_start;
  pgrt_ctx_publish(c, st == PGRT_OK);
  return st;
}

/* A call that finds the program in use is refused before it touches it (threads.c). */
pgrt_status pgrt_run(pgrt_ctx *c, const CUdeviceptr *bound, const uint64_t *scalars, const pgrt_host_fn *hosts,
                     const pgrt_scalar_fn *callbacks, const int64_t *sizes, CUstream s) {
  if (!c) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_run: null context");
  long long t_start = pgrt_mono_ns();
  pgrt_status st = pgrt_ctx_enter(c, "pgrt_run");
  if (st != PGRT_OK) return st;
  pgrt_binding b;
  if ((st = pgrt_ctx_bind(c, &b)) == PGRT_OK) {
    st = run_call(c, bound, scalars, hosts, callbacks, sizes, s, t_start);
    pgrt_ctx_unbind(&b);
  }
  pgrt_ctx_leave(c);
  return st;
}

pgrt_status pgrt_rng_set(pgrt_ctx *c, uint64_t seed, uint64_t offset) {
  if (!c) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_rng_set: null context");
  if (!c->rng) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_rng_set: program '%s' draws no random numbers", c->prog->name);
  if (offset % 4)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_rng_set: offset %llu is not a multiple of 4 (PyTorch's Philox offsets are)",
                     (unsigned long long)offset);
  pgrt_status st = pgrt_ctx_enter(c, "pgrt_rng_set");
  if (st != PGRT_OK) return st;
  c->rng_seed = seed, c->rng_offset = offset;
  pgrt_ctx_leave(c);
  return PGRT_OK;
}

pgrt_status pgrt_rng_get(pgrt_ctx *c, uint64_t *seed, uint64_t *offset) {
  if (!c || !seed || !offset) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_rng_get: a null pointer");
  if (!c->rng) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_rng_get: program '%s' draws no random numbers", c->prog->name);
  pgrt_status st = pgrt_ctx_enter(c, "pgrt_rng_get");
  if (st != PGRT_OK) return st;
  *seed = c->rng_seed, *offset = c->rng_offset;
  pgrt_ctx_leave(c);
  return PGRT_OK;
}

/* The queries below read what init built, or, under done_lock, what the last finished
 * call published: safe while another thread runs the program.  (done_lock is the one
 * member they write, through a const context: a context is never a const object.) */
int pgrt_last_bucket(const pgrt_ctx *c, int dim) {
  if (!c || dim < 0 || dim >= c->prog->dim_count) return -1;
  pthread_mutex_lock((pthread_mutex_t *)&c->done_lock);
  int k = c->bucket_last[dim];
  pthread_mutex_unlock((pthread_mutex_t *)&c->done_lock);
  return k;
}

pgrt_status pgrt_debug_dot(const pgrt_ctx *c, int region, const char *path) {
  if (!c || !path || region < 0 || region >= c->prog->region_count || !c->graphs[region])
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_dot: region %d is not a graph", region);
  pgrt_binding b;
  pgrt_status st = pgrt_ctx_bind(c, &b);
  if (st != PGRT_OK) return st;
  CU(pgrt_cu.cuGraphDebugDotPrint(c->graphs[region], path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE), path);
out:
  pgrt_ctx_unbind(&b);
  return st;
}

pgrt_status pgrt_debug_edges(const pgrt_ctx *c, int region, size_t *edges, size_t *programmatic) {
  if (!c || !edges || !programmatic || region < 0 || region >= c->prog->region_count || !c->graphs[region])
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_edges: region %d is not a graph", region);
  size_t n = 0;
  CUgraphNode *from = NULL, *to = NULL;
  CUgraphEdgeData *data = NULL;
  pgrt_binding b;
  pgrt_status st = pgrt_ctx_bind(c, &b);
  if (st != PGRT_OK) return st;
  CU(pgrt_cu.cuGraphGetEdges(c->graphs[region], NULL, NULL, NULL, &n), "pgrt_debug_edges");
  *edges = n, *programmatic = 0;
  if (!n) goto out;
  from = malloc(n * sizeof *from), to = malloc(n * sizeof *to), data = calloc(n, sizeof *data);
  if (!from || !to || !data) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "pgrt_debug_edges: out of memory");
    goto out;
  }
  CU(pgrt_cu.cuGraphGetEdges(c->graphs[region], from, to, data, &n), "pgrt_debug_edges");
  for (size_t e = 0; e < n; e++) *programmatic += data[e].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
out:
  free(from), free(to), free(data);
  pgrt_ctx_unbind(&b);
  return st;
}

pgrt_status pgrt_debug_node(const pgrt_ctx *c, int node, const char **origin, CUfunction *func) {
  if (!c || node < 0 || node >= c->prog->node_count || !origin || !func)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_debug_node: no node %d", node);
  const pgrt_node *n = &c->prog->nodes[node];
  *origin = n->origin;
  *func = n->kind == PGRT_NODE_KERNEL ? c->funcs[n->kernel] : NULL;
  return PGRT_OK;
}

void pgrt_last_run(const pgrt_ctx *c, pgrt_run_stats *out) {
  if (!c || !out) return;
  pthread_mutex_lock((pthread_mutex_t *)&c->done_lock);
  *out = c->done_stats;
  pthread_mutex_unlock((pthread_mutex_t *)&c->done_lock);
}

void pgrt_last_init(const pgrt_ctx *c, pgrt_init_stats *out) {
  if (c && out) *out = c->init_stats;
}


/*
 * build.c -- the CUDA graphs of a program's graph regions, built at init with explicit
 * cuGraphAdd*Node calls (never captured, except a collective: NCCL's call is captured
 * into a child graph once).
 *
 * A region's graph starts with its updater, where it has one (the kernel nodes it
 * patches on the device depend on it), then its nodes in order, each with its
 * dependencies (full ones, and a kernel's programmatic ones: pgrt.h, pgrt_dep_kind);
 * child and conditional nodes get their bodies built the same way.  The graph is
 * instantiated and uploaded; one that does not instantiate is left to run eagerly,
 * with a warning (PGRT_FAULT=instantiate forces that, for the tests), unless it holds a
 * conditional node.  Then the updater's table is written: which bytes of which device
 * node take which of a call's values.  A bucket region may instead run as a graph per
 * bucket (pgrt.h, "Shape buckets"): each body built, instantiated and uploaded alone.
 */
#include "pgrt_impl.h"

#include <stdio.h>
#include <string.h>

static pgrt_status build_nodes(pgrt_ctx *c, CUgraph g, int first, int count);

/* A child graph: built in a graph of its own, then moved into its node (not
 * cloned), so the nodes built here are the ones patched on every call. */
static pgrt_status add_child(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  const pgrt_body *b = &c->prog->bodies[n->body];
  pgrt_status st = PGRT_OK;
  CUgraph body = NULL;
  CUgraphNodeParams np;
  CU(pgrt_cu.cuGraphCreate(&body, 0), n->origin);
  if ((st = build_nodes(c, body, b->first, b->count)) != PGRT_OK) goto out;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_GRAPH;
  np.graph.graph = body;
  np.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  CU(pgrt_cu.cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np), n->origin);
  body = NULL; /* the parent owns it now */
out:
  if (body) pgrt_cu.cuGraphDestroy(body);
  return st;
}

/* A conditional node: CUDA creates its body graphs, which are filled here. */
static pgrt_status add_conditional(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  static const CUgraphConditionalNodeType types[] = {CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE,
                                                     CU_GRAPH_COND_TYPE_SWITCH};
  pgrt_status st = PGRT_OK;
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = c->conds[n->condition];
  np.conditional.type = types[n->cond_type];
  np.conditional.size = (unsigned)n->body_count;
  np.conditional.ctx = c->cu;
  CU(pgrt_cu.cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np), n->origin);
  for (int k = 0; k < n->body_count; k++) {
    const pgrt_body *b = &c->prog->bodies[n->body + k];
    if ((st = build_nodes(c, np.conditional.phGraph_out[k], b->first, b->count)) != PGRT_OK) goto out;
  }
out:
  return st;
}

/* A collective in a graph: NCCL's call captured on libpgrt's own stream into a graph
 * (relaxed mode: NCCL makes calls of its own that a global capture would refuse), which
 * becomes a child graph node, moved in like a child graph's body; where the move is
 * refused, the node takes a clone and the captured graph is destroyed.  Its buffers are
 * weights or in the arena, whose addresses hold for the context's life: captured once. */
static pgrt_status add_collective(pgrt_ctx *c, CUgraph g, int i, const CUgraphNode *deps, int nd) {
  const pgrt_node *n = &c->prog->nodes[i];
  pgrt_status st = PGRT_OK;
  CUgraph body = NULL;
  CUgraphNodeParams np;
  if (!c->cap) CU(pgrt_cu.cuStreamCreate(&c->cap, CU_STREAM_NON_BLOCKING), "the capture stream for collectives");
  CU(pgrt_cu.cuStreamBeginCapture(c->cap, CU_STREAM_CAPTURE_MODE_RELAXED), n->origin);
  st = pgrt_nccl_collective(c->nccl, n, c->addr[n->src] + n->src_offset, c->addr[n->dst] + n->dst_offset,
                            c->ncomms[n->comm], c->cap);
  CUresult er = pgrt_cu.cuStreamEndCapture(c->cap, &body); /* always: the stream leaves capture mode */
  if (st != PGRT_OK) goto out;
  CU(er, n->origin);
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_GRAPH;
  np.graph.graph = body;
  np.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  if (pgrt_cu.cuGraphAddNode(&c->gnodes[i], g, deps, NULL, (size_t)nd, &np) == CUDA_SUCCESS) {
    body = NULL; /* the parent owns it now */
  } else {
    CU(pgrt_cu.cuGraphAddChildGraphNode(&c->gnodes[i], g, deps, (size_t)nd, body), n->origin);
  }
out:
  if (body) pgrt_cu.cuGraphDestroy(body);
  return st;
}

/* A kernel node: after the updater where it patches it, with its cluster where its
 * kernel has none compiled in, device-updatable where the updater patches it, and its
 * programmatic dependencies added after it (only kernels depend so, on kernels). */
static pgrt_status add_kernel(pgrt_ctx *c, CUgraph g, int i, CUgraphNode *deps, int nd, const CUgraphNode *early,
                              const CUgraphEdgeData *early_data, int ne) {
  const pgrt_node *n = &c->prog->nodes[i];
  pgrt_status st = PGRT_OK;
  CUDA_KERNEL_NODE_PARAMS kp = pgrt_kernel_params(c, i);
  if (c->devupd[i]) deps[nd++] = c->upd[c->region_of[i]].node; /* (deps has room for it) */
  CU(pgrt_cu.cuGraphAddKernelNode(&c->gnodes[i], g, deps, (size_t)nd, &kp), n->origin);
  if (pgrt_cluster_attr(c, n)) {
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof v);
    v.clusterDim.x = n->cluster[0], v.clusterDim.y = n->cluster[1], v.clusterDim.z = n->cluster[2];
    if (n->cluster[0] * n->cluster[1] * n->cluster[2] > 8) /* past the portable 8 blocks */
      CU(pgrt_cu.cuFuncSetAttribute(kp.func, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), n->origin);
    CUresult r = pgrt_cu.cuGraphKernelNodeSetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
    if (r != CUDA_SUCCESS) {
      const char *s = "unknown error";
      pgrt_cu.cuGetErrorString(r, &s);
      return pgrt_fail(PGRT_ERR_CUDA, "node '%s': its cluster [%u, %u, %u] (grid [%u, %u, %u], %u bytes of "
                       "dynamic shared memory) is refused: %s", n->origin, n->cluster[0], n->cluster[1],
                       n->cluster[2], n->grid[0], n->grid[1], n->grid[2], n->smem, s);
    }
  }
  if (n->priority) {
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof v);
    v.priority = n->priority;
    CU(pgrt_cu.cuGraphKernelNodeSetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_PRIORITY, &v), n->origin);
  }
  if (c->devupd[i]) {
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof v);
    v.deviceUpdatableKernelNode.deviceUpdatable = 1;
    CU(pgrt_cu.cuGraphKernelNodeSetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v), n->origin);
  }
  for (int d = 0; d < ne; d++)
    CU(pgrt_cu.cuGraphAddDependencies(g, &early[d], &c->gnodes[i], &early_data[d], 1), n->origin);
out:
  return st;
}

/* Adds nodes[first .. first+count) to graph g, with explicit cuGraphAdd*Node calls. */
static pgrt_status build_nodes(pgrt_ctx *c, CUgraph g, int first, int count) {
  const pgrt_program *pr = c->prog;
  pgrt_status st = PGRT_OK;
  CUgraphNode deps[65], early[64];
  CUgraphEdgeData early_data[64];
  for (int i = first; i < first + count; i++) {
    const pgrt_node *n = &pr->nodes[i];
    int nd = 0, ne = 0; /* full dependencies; a kernel's programmatic ones, added after the node */
    if (n->dep_count > 64) return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s' has more than 64 dependencies", n->origin);
    for (int d = 0; d < n->dep_count; d++) {
      int kind = n->dep_kinds && n->kind == PGRT_NODE_KERNEL && !c->full_deps ? n->dep_kinds[d] : PGRT_DEP_FULL;
      if (kind == PGRT_DEP_FULL) {
        deps[nd++] = c->gnodes[n->deps[d]];
        continue;
      }
      memset(&early_data[ne], 0, sizeof early_data[ne]);
      early_data[ne].from_port = kind == PGRT_DEP_LAUNCH_ORDER ? CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER
                                                               : CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      early_data[ne].type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      early[ne++] = c->gnodes[n->deps[d]];
    }
    switch (n->kind) {
    case PGRT_NODE_KERNEL:
      if ((st = add_kernel(c, g, i, deps, nd, early, early_data, ne)) != PGRT_OK) goto out;
      break;
    case PGRT_NODE_MEMCPY:
    case PGRT_NODE_MEMSET:
      if (c->boxed[i]) {
        CUDA_KERNEL_NODE_PARAMS kp = pgrt_box_params(c, i);
        CU(pgrt_cu.cuGraphAddKernelNode(&c->gnodes[i], g, deps, (size_t)nd, &kp), n->origin);
      } else if (n->kind == PGRT_NODE_MEMCPY) {
        CUDA_MEMCPY3D m = pgrt_copy_params(c, n);
        CU(pgrt_cu.cuGraphAddMemcpyNode(&c->gnodes[i], g, deps, (size_t)nd, &m, c->cu), n->origin);
      } else {
        CUDA_MEMSET_NODE_PARAMS m = pgrt_set_params(c, n);
        CU(pgrt_cu.cuGraphAddMemsetNode(&c->gnodes[i], g, deps, (size_t)nd, &m, c->cu), n->origin);
      }
      break;
    case PGRT_NODE_HOST: {
      CUDA_HOST_NODE_PARAMS h = pgrt_host_params(c, n);
      CU(pgrt_cu.cuGraphAddHostNode(&c->gnodes[i], g, deps, (size_t)nd, &h), n->origin);
      break;
    }
    case PGRT_NODE_EMPTY: CU(pgrt_cu.cuGraphAddEmptyNode(&c->gnodes[i], g, deps, (size_t)nd), n->origin); break;
    case PGRT_NODE_SYNC: return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a synchronization cannot be in a graph", n->origin);
    case PGRT_NODE_GUARD: return pgrt_fail(PGRT_ERR_ARGUMENT, "node '%s': a guard cannot be in a graph", n->origin);
    case PGRT_NODE_EVENT_RECORD:
      CU(pgrt_cu.cuGraphAddEventRecordNode(&c->gnodes[i], g, deps, (size_t)nd, c->events[n->event]), n->origin);
      break;
    case PGRT_NODE_EVENT_WAIT:
      CU(pgrt_cu.cuGraphAddEventWaitNode(&c->gnodes[i], g, deps, (size_t)nd, c->events[n->event]), n->origin);
      break;
    case PGRT_NODE_CHILD:
      if ((st = add_child(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    case PGRT_NODE_CONDITIONAL:
      if ((st = add_conditional(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    case PGRT_NODE_COLLECTIVE:
      if ((st = add_collective(c, g, i, deps, nd)) != PGRT_OK) goto out;
      break;
    }
  }
out:
  return st;
}

/* Does region r hold a conditional node (which cannot run eagerly)? */
static int has_conditional(const pgrt_ctx *c, int r) {
  for (int i = 0; i < c->prog->node_count; i++)
    if (c->region_of[i] == r && c->prog->nodes[i].kind == PGRT_NODE_CONDITIONAL) return 1;
  return 0;
}

/* The updater first in region r's graph: the nodes it patches depend on it. */
static pgrt_status add_updater(pgrt_ctx *c, int r) {
  pgrt_updater *u = &c->upd[r];
  pgrt_status st = PGRT_OK;
  CU(pgrt_cu.cuMemAlloc(&u->table, sizeof(pgrt_upd_entry) * (size_t)u->count), "the updater's table");
  memcpy(u->params, &u->table, 8);
  memcpy(u->params + 8, &u->count, sizeof u->count);
  u->argv[0] = u->params, u->argv[1] = u->params + 8, u->argv[2] = u->params + 16;
  CUDA_KERNEL_NODE_PARAMS kp = pgrt_updater_params(c, u);
  CU(pgrt_cu.cuGraphAddKernelNode(&u->node, c->graphs[r], NULL, 0, &kp), "the updater");
  u->enabled = 1;
out:
  return st;
}

/* The updater's entries, once its graph is instantiated (the device nodes exist then):
 * which bytes of which node take which value of a call's. */
static pgrt_status write_updater_table(pgrt_ctx *c, int r) {
  const pgrt_program *pr = c->prog;
  const pgrt_region *rg = &pr->regions[r];
  pgrt_updater *u = &c->upd[r];
  pgrt_status st = PGRT_OK;
  pgrt_upd_entry *entries = calloc((size_t)u->count, sizeof *entries);
  if (!entries) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  int e = 0;
  for (int i = rg->first; i < rg->first + rg->count; i++) {
    if (!c->devupd[i]) continue;
    const pgrt_node *n = &pr->nodes[i];
    CUkernelNodeAttrValue v;
    CU(pgrt_cu.cuGraphKernelNodeGetAttribute(c->gnodes[i], CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v), n->origin);
    for (int k = 0; k < n->reloc_count; k++) {
      const pgrt_buffer *b = &pr->buffers[n->relocs[k].buffer];
      if (b->kind != PGRT_BUF_BOUND) continue;
      entries[e++] = (pgrt_upd_entry){v.deviceUpdatableKernelNode.devNode, n->relocs[k].at,
                                      pgrt_reloc_size(n->relocs[k].kind), b->slot,
                                      pgrt_reloc_shift(n->relocs[k].kind), n->relocs[k].offset};
    }
    for (int k = 0; k < n->scalar_count; k++) /* the values: addresses, the caller's scalars, the buckets' */
      entries[e++] = (pgrt_upd_entry){v.deviceUpdatableKernelNode.devNode, n->scalars[k].at, n->scalars[k].size,
                                      pr->bound_slots + n->scalars[k].slot -
                                          (n->scalars[k].slot >= pr->scalar_slots ? pr->read_count : 0),
                                      0, 0};
  }
  CU(pgrt_cu.cuMemcpyHtoD(u->table, entries, sizeof *entries * (size_t)u->count), "the updater's table");
out:
  free(entries);
  return st;
}

/* PGRT_FAULT=instantiate makes every instantiation fail: how the tests reach the eager
 * fallback (tests/gpu/faults/).  A region whose kernels carry priorities is instantiated
 * to honour them (CUDA ignores node priorities otherwise). */
static CUresult instantiate(const pgrt_ctx *c, int first, int count, CUgraphExec *exec, CUgraph g) {
  const char *fault = getenv("PGRT_FAULT");
  if (fault && strcmp(fault, "instantiate") == 0) return CUDA_ERROR_NOT_SUPPORTED;
  unsigned long long flags = 0;
  for (int i = first; i < first + count; i++)
    if (c->prog->nodes[i].kind == PGRT_NODE_KERNEL && c->prog->nodes[i].priority)
      flags = CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  return pgrt_cu.cuGraphInstantiate(exec, g, flags);
}

pgrt_status pgrt_build_graph(pgrt_ctx *c, int r) {
  const pgrt_program *pr = c->prog;
  const pgrt_region *rg = &pr->regions[r];
  pgrt_status st = PGRT_OK;
  if (c->upd[r].count && (st = add_updater(c, r)) != PGRT_OK) goto out;
  if ((st = build_nodes(c, c->graphs[r], rg->first, rg->count)) != PGRT_OK) goto out;
  CUresult ir = instantiate(c, rg->first, rg->count, &c->execs[r], c->graphs[r]);
  if (ir != CUDA_SUCCESS) {
    if (c->execs[r]) pgrt_cu.cuGraphExecDestroy(c->execs[r]);
    c->execs[r] = NULL;
    if (has_conditional(c, r)) {
      const char *s = "?";
      pgrt_cu.cuGetErrorString(ir, &s);
      return pgrt_fail(PGRT_ERR_CUDA, "graph region %d of '%s' does not instantiate (%s), and its conditional nodes "
                       "cannot run eagerly", r, pr->name, s);
    }
    fprintf(stderr, "pgrt: warning: graph region %d of '%s' does not instantiate; it runs eagerly\n", r, pr->name);
    return PGRT_OK;
  }
  if (c->upd[r].count && (st = write_updater_table(c, r)) != PGRT_OK) goto out;
  CU(pgrt_cu.cuGraphUpload(c->execs[r], 0), "a graph region");
out:
  return st;
}

/* Which bucket regions run a graph per bucket: the table's choice, or PGRT_BUCKETS's, where
 * the region is what the table says it is (the setter, then a switch with a body per value
 * of its dim; no other conditional node, no other node taking a condition).  Their setters
 * and switches are never built; each body node (nested ones too) is its bucket's. */
void pgrt_bucket_modes(pgrt_ctx *c) {
  const pgrt_program *pr = c->prog;
  const char *env = getenv("PGRT_BUCKETS");
  int force_switch = env && strcmp(env, "switch") == 0, force_graphs = env && strcmp(env, "graphs") == 0;
  for (int i = 0; i < pr->node_count; i++) c->bucket_of[i] = -1;
  for (int r = 0; r < pr->region_count; r++) {
    const pgrt_region *rg = &pr->regions[r];
    if (!rg->bucket_dim || !rg->graph || force_switch || !(rg->bucket_graphs || force_graphs)) continue;
    int d = rg->bucket_dim - 1, set = rg->first, sw = rg->first + 1;
    int ok = d < pr->dim_count && rg->count == 2 && pr->nodes[set].kind == PGRT_NODE_KERNEL &&
             pr->nodes[sw].kind == PGRT_NODE_CONDITIONAL && pr->nodes[sw].cond_type == PGRT_COND_SWITCH &&
             pr->nodes[sw].body_count == pr->dims[d].n_values;
    for (int i = 0; ok && i < pr->node_count; i++)
      if (c->region_of[i] == r && i != set && i != sw)
        ok = pr->nodes[i].kind != PGRT_NODE_CONDITIONAL && pr->nodes[i].cond_ref_count == 0;
    if (!ok) {
      fprintf(stderr, "pgrt: warning: region %d of '%s' is not a bucket switch and its setter alone; it keeps the "
              "switch\n", r, pr->name);
      continue;
    }
    c->bmode[r] = PGRT_BUCKETS_GRAPHS;
    c->unbuilt[set] = c->unbuilt[sw] = 1;
    for (int k = 0; k < pr->nodes[sw].body_count; k++) {
      const pgrt_body *b = &pr->bodies[pr->nodes[sw].body + k];
      for (int j = b->first; j < b->first + b->count; j++) c->bucket_of[j] = k;
    }
  }
  for (int i = 0; i < pr->node_count; i++) /* child graphs inside bodies: their bodies follow them */
    if (c->bucket_of[i] >= 0 && pr->nodes[i].kind == PGRT_NODE_CHILD)
      for (int b = pr->nodes[i].body; b < pr->nodes[i].body + pr->nodes[i].body_count; b++)
        for (int j = pr->bodies[b].first; j < pr->bodies[b].first + pr->bodies[b].count; j++)
          c->bucket_of[j] = c->bucket_of[i];
}

void pgrt_free_buckets(pgrt_ctx *c, int r) {
  if (!c->bgraphs[r] && !(c->bexecs && c->bexecs[r])) return;
  int nb = c->prog->nodes[c->prog->regions[r].first + 1].body_count;
  for (int k = 0; k < nb; k++) {
    if (c->bexecs && c->bexecs[r] && c->bexecs[r][k]) pgrt_cu.cuGraphExecDestroy(c->bexecs[r][k]);
    if (c->bgraphs[r] && c->bgraphs[r][k]) pgrt_cu.cuGraphDestroy(c->bgraphs[r][k]);
  }
  free(c->bgraphs[r]), c->bgraphs[r] = NULL;
  if (c->bexecs) free(c->bexecs[r]), c->bexecs[r] = NULL;
}

/* A bucket region run a graph per bucket: each body built, instantiated and uploaded as a
 * graph of its own.  Where one does not instantiate, the region runs its buckets' nodes
 * eagerly (with a warning): without the switch, nothing needs a graph. */
pgrt_status pgrt_build_buckets(pgrt_ctx *c, int r) {
  const pgrt_program *pr = c->prog;
  const pgrt_node *sw = &pr->nodes[pr->regions[r].first + 1];
  pgrt_status st = PGRT_OK;
  c->bgraphs[r] = pgrt_zalloc(sizeof **c->bgraphs * (size_t)sw->body_count);
  c->bexecs[r] = pgrt_zalloc(sizeof **c->bexecs * (size_t)sw->body_count);
  if (!c->bgraphs[r] || !c->bexecs[r]) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  for (int k = 0; k < sw->body_count; k++) {
    const pgrt_body *b = &pr->bodies[sw->body + k];
    CU(pgrt_cu.cuGraphCreate(&c->bgraphs[r][k], 0), sw->origin);
    if ((st = build_nodes(c, c->bgraphs[r][k], b->first, b->count)) != PGRT_OK) goto out;
    CUresult ir = instantiate(c, b->first, b->count, &c->bexecs[r][k], c->bgraphs[r][k]);
    if (ir != CUDA_SUCCESS) {
      fprintf(stderr, "pgrt: warning: bucket %d of '%s' (switch '%s') does not instantiate; its region runs the "
              "buckets eagerly\n", k, pr->name, sw->origin);
      pgrt_free_buckets(c, r);
      c->bmode[r] = PGRT_BUCKETS_EAGER;
      return PGRT_OK;
    }
    CU(pgrt_cu.cuGraphUpload(c->bexecs[r][k], 0), sw->origin);
  }
out:
  return st;
}


/*
 * cost.c -- the cost model: per region, the predicted time of one call launched
 * eagerly and as a CUDA graph, from a machine profile; then the decision.
 *
 * Eager, the host submits one operation after another while the GPU runs them in
 * order; two clocks are simulated through the region:
 *
 *   host += submit(n);  gpu = max(host, gpu) + gpu(n) + gap   eager = gpu at the end
 *
 * (gap: a stream-launched kernel costs the GPU more than the same kernel in a graph,
 * about a microsecond on Hopper),
 * so short work is launch-bound (the GPU waits for the host), and while a long
 * kernel runs the host gets ahead and later short kernels run back to back.  A
 * host operation (a synchronization, CPU work) first waits for the GPU.
 *
 * As a graph, the host pays one launch and the GPU pays each node's time with the
 * much smaller in-graph gap; parameters that change every call are patched, and
 * instantiation and upload are paid once, spread over --calls:
 *
 *   graph = graph_launch_us + graph_launch_node_us * N + sum over nodes of
 *           max(graph_node_us, gpu(n)) + update + (instantiate_node_us * N + upload_us) / calls
 *
 * gpu(n) is the node's measured time when the input gives one (gpu_us), else the
 * profile's default for its kind.  update is the cheaper of patching each changed
 * node from the host (update_host_node_us each) and one device-side batched update
 * (update_device_us, plus update_device_node_us per node: a device-updatable node
 * costs the GPU that much on every replay).  A graphable region runs
 * as a graph only when that is predicted faster; never a graph predicted slower.
 *
 * Shape buckets: a region that holds only a bucket switch and the kernel that sets its
 * condition may run as one graph per bucket instead, the host launching the one the
 * call's size picks.  That form saves each call the setter kernel and the conditional
 * node, launches only the bucket's nodes and patches only them; it pays an
 * instantiation and an upload per bucket at init, over --calls:
 *
 *   bucket k = graph_launch_us + graph_launch_node_us * N_k + gpu(body k) + updates of body k
 *              + (instantiate_node_us * sum of N_k + upload_us * buckets) / calls
 *
 * and is chosen when its costliest bucket is predicted faster than the switch's.
 *
 * An NCCL collective (a libcall node with `comm`) costs the GPU a latency plus the
 * bytes each rank moves over the bus bandwidth, as nccl-tests counts its "bus
 * bandwidth": with R ranks, an AllReduce of B bytes moves 2(R-1)/R * B; an AllGather
 * or a ReduceScatter whose gathered side is B bytes moves (R-1)/R * B:
 *
 *   collective = coll_us + moved bytes / (coll_gbps * 1000)      (B/us = GB/s * 1000)
 *
 * The same time eagerly and in a graph (a collective captured into a child graph),
 * plus the eager launch's costs.  The H200's figures are bench/collectives_timing.py's on two
 * H200s (an all-reduce's GPU time in a graph: the line misses its 4 KiB to 64 MiB
 * measurements by up to 28%, NCCL changing protocols between them); profiles that do
 * not set coll_us and coll_gbps get the defaults below, assumed, not measured.
 *
 * Profiles are text files of `key value` lines (profiles/, written by
 * pgcc-calibrate); the H200's is built in.
 */
#include "pgcc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A collective's constants where the profile has none: assumptions for NVLink 4 on an
 * H100 or H200 (NVLink 4 carries 450 GB/s each way; NCCL reaches less), not measured. */
#define COLL_US_DEFAULT 15.0
#define COLL_GBPS_DEFAULT 300.0

/* profiles/h200.profile, measured by pgcc-calibrate on an H200 (driver 580.159.04,
 * CUDA 13.0); a test keeps the two equal. */
const PgProfile pg_profile_h200 = {
    .name = "NVIDIA H200 (built in: profiles/h200.profile)",
    .eager_launch_us = 4.748,
    .eager_copy_us = 5.530,
    .eager_host_us = 2.676,
    .eager_gap_us = 0.794,
    .hostop_us = 5.142,
    .graph_launch_us = 2.519,
    .graph_launch_node_us = 0.0025,
    .graph_node_us = 0.682,
    .kernel_us = 0.682,
    .copy_us = 0.974,
    .host_node_us = 2.631,
    .update_host_node_us = 0.773,
    .update_device_us = 5.640,      /* bench/run_codegen.sh (see profiles/h200.profile) */
    .update_device_node_us = 0.322, /* likewise */
    .instantiate_node_us = 1.902,
    .upload_us = 25.617,
    .coll_us = 10.78,               /* bench/collectives_timing.py on two H200s (see profiles/h200.profile) */
    .coll_gbps = 274.3,             /* likewise */
    .sms = 132,                     /* the H200's streaming multiprocessors */
};

/* ---- loading a profile ---- */

static const struct {
  const char *key;
  size_t offset;
} fields[] = {
#define X(f, doc) {#f, offsetof(PgProfile, f)},
    PG_PROFILE_FIELDS(X)
#undef X
};
#define NFIELDS (sizeof fields / sizeof fields[0])

PgProfile *pg_profile_load(PgArena *a, PgDiag *d, const char *path) {
  PgSource *src = pg_source_load(a, d, path);
  if (!src) return NULL;
  PgProfile *prof = pg_arena_alloc(a, sizeof *prof);
  bool seen[NFIELDS] = {0};
  int errors = d->errors, line = 0;
  for (const char *s = src->text; *s;) {
    line++;
    const char *end = strchr(s, '\n');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char *text = pg_arena_strndup(a, s, len);
    s += len + (end != NULL);
    char *hash = strchr(text, '#');
    if (hash) *hash = 0;
    char *key = text;
    while (isspace((unsigned char)*key)) key++;
    if (!*key) continue;
    char *val = key;
    while (*val && !isspace((unsigned char)*val)) val++;
    if (*val) *val++ = 0;
    while (isspace((unsigned char)*val)) val++;
    for (char *e = val + strlen(val); e > val && isspace((unsigned char)e[-1]);) *--e = 0;
    PgLoc kloc = {src, line, (int)(key - text) + 1}, vloc = {src, line, (int)(val - text) + 1};
    if (strcmp(key, "name") == 0) {
      size_t vl = strlen(val);
      if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') val[vl - 1] = 0, val++;
      prof->name = val;
      continue;
    }
    size_t f;
    for (f = 0; f < NFIELDS; f++)
      if (strcmp(fields[f].key, key) == 0) break;
    if (f == NFIELDS) {
      pg_error(d, kloc, "unknown profile constant '%s'", key);
      continue;
    }
    char *num_end;
    errno = 0;
    double v = strtod(val, &num_end);
    if (!*val || *num_end || errno || !(v >= 0) || v > 1e6) {
      pg_error(d, vloc, "'%s' needs a time in microseconds, found '%s'", key, val);
      continue;
    }
    if (seen[f]) pg_warning(d, kloc, "'%s' is set twice; the last value counts", key);
    seen[f] = true;
    *(double *)((char *)prof + fields[f].offset) = v;
  }
  for (size_t f = 0; f < NFIELDS; f++) /* the collective's constants and the SM count are optional */
    if (!seen[f] && fields[f].offset == offsetof(PgProfile, sms)) prof->sms = 0;
    else if (!seen[f] && fields[f].offset == offsetof(PgProfile, coll_us)) prof->coll_us = COLL_US_DEFAULT;
    else if (!seen[f] && fields[f].offset == offsetof(PgProfile, coll_gbps)) prof->coll_gbps = COLL_GBPS_DEFAULT;
    else if (!seen[f]) pg_error(d, pg_loc_advance((PgLoc){src, 1, 1}, src->text, src->len), "profile does not set '%s'", fields[f].key);
  if (!prof->name) prof->name = path;
  return d->errors > errors ? NULL : prof;
}

/* ---- the model ---- */

typedef struct {
  const PgProfile *pr;
  double host, gpu; /* the eager simulation's two clocks */
  double graph;     /* the graph's GPU time, summed over nodes */
  size_t nodes, patched;
  size_t late;      /* of the patched, those taking read scalars: patched from the host after a sync */
} Sum;

/* An eager stream operation: the host spends `submit`, the GPU `gpu` once both it
 * and the operation before it are done. */
static void submit(Sum *s, double submit_us, double gpu_us) {
  s->host += submit_us;
  s->gpu = fmax(s->host, s->gpu) + gpu_us;
}

/* Host work that waits for the GPU first (a synchronization, CPU work). */
static void host_wait(Sum *s, double us) {
  s->host = fmax(s->host, s->gpu) + us;
  s->gpu = s->host;
}

double pg_cost_collective_us(const PgProfile *pr, const PgCollective *c) {
  double r = c->comm->ranks, b = (double)pg_coll_bytes(c, c->kind == PG_COLL_ALLGATHER);
  double moved = (c->kind == PG_COLL_ALLREDUCE ? 2.0 : 1.0) * (r - 1) / r * b;
  return pr->coll_us + (pr->coll_gbps > 0 ? moved / (pr->coll_gbps * 1000.0) : 0);
}

static double gpu_time(const PgProfile *pr, const PgNode *n) {
  if (pg_node_gpu_us(n) > 0) return pg_node_gpu_us(n);
  if (n->kind == PG_LIBCALL && n->u.libcall.coll) return pg_cost_collective_us(pr, n->u.libcall.coll);
  return n->kind == PG_MEMCPY || n->kind == PG_MEMSET ? pr->copy_us : pr->kernel_us;
}

/* Is this pointer bound anew on every call? */
static bool per_call(PgPtr p) {
  return p.buf && (p.buf->role == PG_ROLE_INPUT || p.buf->role == PG_ROLE_OUTPUT);
}

/* Does a kernel take a scalar read on the host during the call (from a host buffer or
 * a callback)?  libpgrt patches it from the host after the synchronization. */
static bool args_read(const PgArgs *args) {
  for (size_t i = 0; i < args->n; i++)
    if (args->v[i].kind == PG_ARG_SCALAR && pg_scalar_is_read(args->v[i].scalar)) return true;
  return false;
}

static bool reads_late(const PgNode *n) {
  return (n->kind == PG_KERNEL && n->u.kernel.has_args && args_read(&n->u.kernel.args)) ||
         (n->kind == PG_LIBCALL && args_read(&n->u.libcall.args));
}

static bool args_change(const PgArgs *args) {
  for (size_t i = 0; i < args->n; i++) {
    const PgArg *a = &args->v[i];
    if (a->kind == PG_ARG_PTR && per_call(a->ptr)) return true;
    if (a->kind == PG_ARG_SCALAR && (a->scalar->is_input || pg_scalar_is_read(a->scalar) || a->scalar->bucket))
      return true;
    if (a->kind == PG_ARG_BYTES)
      for (size_t k = 0; k < a->ptrs.n; k++)
        if (per_call(a->ptrs.v[k])) return true;
  }
  return false;
}

static bool changes_per_call(const PgNode *n) {
  switch (n->kind) {
  case PG_KERNEL: return n->u.kernel.has_args && args_change(&n->u.kernel.args);
  case PG_LIBCALL:
    if (n->u.libcall.coll) return per_call(n->u.libcall.coll->send) || per_call(n->u.libcall.coll->recv);
    return args_change(&n->u.libcall.args);
  case PG_MEMCPY: return n->u.memcpy.has_ptrs && (per_call(n->u.memcpy.src) || per_call(n->u.memcpy.dst));
  case PG_MEMSET: return n->u.memset.has_dst && per_call(n->u.memset.dst);
  default: return false;
  }
}

static void add_graph(Sum *s, const PgGraph *g);

/* One node: its eager and in-graph costs, into s, by its kind's cost class. */
static void add_node(Sum *s, const PgNode *n) {
  const PgProfile *pr = s->pr;
  s->nodes++;
  s->patched += changes_per_call(n);
  s->late += reads_late(n);
  switch (pg_kinds[n->kind].cost) {
  case PG_COST_NONE: break;
  case PG_COST_STREAM: /* one stream operation; in a graph, an edge's worth */
    submit(s, pr->eager_copy_us, 0);
    break;
  case PG_COST_LAUNCH:
    submit(s, pr->eager_launch_us, gpu_time(pr, n) + pr->eager_gap_us);
    s->graph += fmax(pr->graph_node_us, gpu_time(pr, n));
    break;
  case PG_COST_COPY:
    submit(s, pr->eager_copy_us, gpu_time(pr, n) + pr->eager_gap_us);
    s->graph += fmax(pr->graph_node_us, gpu_time(pr, n));
    break;
  case PG_COST_HOST:
    submit(s, pr->eager_host_us, pr->eager_host_us + pg_node_gpu_us(n));
    s->graph += pr->host_node_us + pg_node_gpu_us(n);
    break;
  case PG_COST_BODY:
    if (n->kind == PG_CHILD) {
      add_graph(s, n->u.child.body);
      break;
    }
    /* a conditional: eagerly the host reads the condition (a round trip), then runs
     * the costlier body; in a graph the device decides, and the costliest body's time in
     * a graph is charged.  Each body's is kept (est_us: what a call taking it costs the
     * GPU there, which the report gives per shape bucket). */
    host_wait(s, pr->hostop_us);
    {
      Sum worst = *s;
      worst.gpu = -1;
      double most = 0;
      for (size_t b = 0; b < n->u.cond.bodies.n; b++) {
        Sum body = *s;
        body.graph = 0;
        add_graph(&body, n->u.cond.bodies.v[b]);
        n->u.cond.bodies.v[b]->est_us = body.graph;
        if (body.gpu > worst.gpu) worst = body;
        most = fmax(most, body.graph);
        s->nodes = body.nodes;     /* every body's nodes count */
        s->patched = body.patched;
        s->late = body.late;
      }
      s->host = worst.host, s->gpu = worst.gpu;
      s->graph += pr->graph_node_us + most;
    }
    break;
  case PG_COST_HOSTOP:
    host_wait(s, pr->hostop_us + pg_node_gpu_us(n));
    s->graph += pr->hostop_us + pg_node_gpu_us(n); /* never in a graph; kept for the sums */
    break;
  }
}

double pg_cost_node_us(const PgProfile *pr, const PgNode *n) {
  Sum s = {.pr = pr};
  add_node(&s, n);
  return s.graph;
}

double pg_cost_occupancy(const PgProfile *pr, const PgNode *n) {
  if (n->kind != PG_KERNEL || !(pr->sms >= 1)) return 1;
  double blocks = (double)n->u.kernel.grid[0] * (n->u.kernel.grid[1] ? n->u.kernel.grid[1] : 1) *
                  (n->u.kernel.grid[2] ? n->u.kernel.grid[2] : 1);
  return blocks >= 1 ? fmin(1, blocks / pr->sms) : 1;
}

static void add_graph(Sum *s, const PgGraph *g) {
  for (size_t i = 0; i < g->nodes.n; i++) add_node(s, g->nodes.v[i]);
}

static void reason(PgProgram *p, PgRegion *r, const char *text) { pg_vec_push(p->arena, r->reasons, text); }

/* Does graph g hold a conditional node, or a node that takes condition k? */
static bool holds_conditions(const PgGraph *g, const PgCondition *k) {
  for (size_t i = 0; i < g->nodes.n; i++) {
    const PgNode *n = g->nodes.v[i];
    if (n->kind == PG_CONDITIONAL) return true;
    for (size_t a = 0; n->kind == PG_KERNEL && n->u.kernel.has_args && a < n->u.kernel.args.n; a++)
      if (n->u.kernel.args.v[a].kind == PG_ARG_COND && n->u.kernel.args.v[a].cond == k) return true;
    if (n->kind == PG_CHILD && holds_conditions(n->u.child.body, k)) return true;
  }
  return false;
}

/* The bucket switch of a region that holds only it and the kernel that sets its
 * condition (whose arguments are that condition and bucket scalars of its dim), with
 * no conditional node inside its bodies; NULL for any other region. */
static PgNode *bucket_region(const PgRegion *r) {
  if (r->nodes.n != 2 || !r->graphable) return NULL;
  PgNode *set = r->nodes.v[0], *sw = r->nodes.v[1];
  if (set->kind != PG_KERNEL || !set->u.kernel.has_args || sw->kind != PG_CONDITIONAL || !sw->u.cond.dim ||
      !sw->u.cond.condition)
    return NULL;
  bool sets = false;
  for (size_t a = 0; a < set->u.kernel.args.n; a++) {
    const PgArg *arg = &set->u.kernel.args.v[a];
    if (arg->kind == PG_ARG_COND && arg->cond == sw->u.cond.condition) sets = true;
    else if (arg->kind != PG_ARG_SCALAR || arg->scalar->bucket != sw->u.cond.dim) return NULL;
  }
  for (size_t b = 0; sets && b < sw->u.cond.bodies.n; b++)
    if (holds_conditions(sw->u.cond.bodies.v[b], sw->u.cond.condition)) return NULL;
  return sets ? sw : NULL;
}

/* The predicted time of region r in a call that takes each body of its root conditional
 * nodes (est_path_us); for a bucket region, both forms, and the choice. */
static void paths(PgProgram *p, PgRegion *r, const PgProfile *pr, double calls) {
  for (size_t i = 0; i < r->nodes.n; i++) {
    const PgNode *c = r->nodes.v[i];
    double most = 0;
    for (size_t b = 0; c->kind == PG_CONDITIONAL && b < c->u.cond.bodies.n; b++)
      most = fmax(most, c->u.cond.bodies.v[b]->est_us);
    for (size_t b = 0; c->kind == PG_CONDITIONAL && b < c->u.cond.bodies.n; b++)
      c->u.cond.bodies.v[b]->est_path_us = r->est_graph_us - most + c->u.cond.bodies.v[b]->est_us;
  }
  PgNode *sw = r->bucket_switch = bucket_region(r);
  r->bucket_graphs = false;
  if (!sw) return;
  size_t nb = sw->u.cond.bodies.n, all = 0; /* at most 64: a dim's values */
  Sum body[64];
  for (size_t b = 0; b < nb; b++) {
    body[b] = (Sum){pr, 0, 0, 0, 0, 0, 0};
    add_graph(&body[b], sw->u.cond.bodies.v[b]);
    all += body[b].nodes;
  }
  double once = (pr->instantiate_node_us * (double)all + pr->upload_us * (double)nb) / calls, worst = 0, t[64];
  for (size_t b = 0; b < nb; b++) {
    t[b] = pr->graph_launch_us + pr->graph_launch_node_us * (double)body[b].nodes + body[b].graph +
           (double)body[b].patched * pr->update_host_node_us + once;
    worst = fmax(worst, t[b]);
  }
  r->est_switch_us = r->est_graph_us;
  r->est_bucket_graphs_us = worst;
  r->bucket_graphs = worst < r->est_switch_us;
  if (r->bucket_graphs) {
    r->est_graph_us = worst;
    for (size_t b = 0; b < nb; b++) sw->u.cond.bodies.v[b]->est_path_us = t[b];
  }
  reason(p, r, pg_arena_printf(p->arena, r->bucket_graphs
      ? "bucket switch '%s' (dim %s) as one graph per bucket, the host launching the one the size picks: %.1f us "
        "against %.1f us as a switch, whose setter kernel and conditional node run every call (%zu instantiations "
        "at init: %.1f us per call over %.0f calls)"
      : "bucket switch '%s' (dim %s) kept as a switch: %.1f us against %.1f us as one graph per bucket (%zu "
        "instantiations at init: %.1f us per call over %.0f calls)",
      sw->name, sw->u.cond.dim->name, r->bucket_graphs ? worst : r->est_switch_us,
      r->bucket_graphs ? r->est_switch_us : worst, nb, once, calls));
}

/* The distinct reasons why a region's nodes cannot be in a graph, with counts. */
static void eager_reasons(PgProgram *p, PgRegion *r) {
  for (size_t i = 0; i < r->nodes.n; i++) {
    const char *why = pg_node_why(r->nodes.v[i]);
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = strcmp(pg_node_why(r->nodes.v[k]), why) == 0;
    if (seen) continue;
    size_t count = 0;
    for (size_t k = i; k < r->nodes.n; k++) count += strcmp(pg_node_why(r->nodes.v[k]), why) == 0;
    reason(p, r, count > 1 ? pg_arena_printf(p->arena, "%s (%zu nodes)", why, count) : why);
  }
}

/* What a region does with host reads, for the report: its copies into host buffers,
 * and its nodes that take read scalars (the first few of each, in node order; a body's
 * nodes with their owner). */
typedef struct {
  PgArena *a;
  char *copies, *scalars;
  size_t ncopies, nscalars;
} HostWords;

static void add_word(HostWords *h, char **list, size_t *n, const char *word) {
  if (*list && strstr(*list, word)) return; /* listed once */
  if (++*n <= 4) *list = pg_arena_printf(h->a, "%s%s%s", *list ? *list : "", *list ? ", " : "", word);
  else if (*n == 5) *list = pg_arena_printf(h->a, "%s, ...", *list);
}

static void host_words(HostWords *h, const PgNode *n) {
  if (n->kind == PG_MEMCPY && n->u.memcpy.has_ptrs && n->u.memcpy.dst.buf && n->u.memcpy.dst.buf->role == PG_ROLE_HOST)
    add_word(h, &h->copies, &h->ncopies, pg_arena_printf(h->a, "'%s' into '%s'", n->name, n->u.memcpy.dst.buf->name));
  const PgArgs *args = n->kind == PG_KERNEL && n->u.kernel.has_args ? &n->u.kernel.args
                       : n->kind == PG_LIBCALL                      ? &n->u.libcall.args
                                                                    : NULL;
  for (size_t i = 0; args && i < args->n; i++) {
    const PgScalar *sc = args->v[i].kind == PG_ARG_SCALAR ? args->v[i].scalar : NULL;
    if (sc && sc->from)
      add_word(h, &h->scalars, &h->nscalars, pg_arena_printf(h->a, "'%s' from '%s'", sc->name, sc->from->name));
    else if (sc && sc->is_callback)
      add_word(h, &h->scalars, &h->nscalars, pg_arena_printf(h->a, "'%s' by callback", sc->name));
  }
  const PgGraph *const *bodies = n->kind == PG_CHILD ? (const PgGraph *const *)&n->u.child.body
                                 : n->kind == PG_CONDITIONAL ? (const PgGraph *const *)n->u.cond.bodies.v
                                                             : NULL;
  size_t nb = n->kind == PG_CHILD ? 1 : n->kind == PG_CONDITIONAL ? n->u.cond.bodies.n : 0;
  for (size_t b = 0; b < nb; b++)
    for (size_t i = 0; i < bodies[b]->nodes.n; i++) host_words(h, bodies[b]->nodes.v[i]);
}

static void reason(PgProgram *p, PgRegion *r, const char *text);

/* The reasons that name host buffers and read scalars. */
static void host_reasons(PgProgram *p, PgRegion *r, size_t late) {
  HostWords h = {p->arena, NULL, NULL, 0, 0};
  for (size_t i = 0; i < r->nodes.n; i++) host_words(&h, r->nodes.v[i]);
  if (h.copies)
    reason(p, r, pg_arena_printf(p->arena, "copies into host buffers (pinned, libpgrt's): %s", h.copies));
  if (h.scalars)
    reason(p, r, pg_arena_printf(p->arena, "%zu %s scalars read on the host (%s): patched from the host after "
                                           "each synchronization, never on the device", late,
                                 late == 1 ? "node takes" : "nodes take", h.scalars));
}

void pg_cost(PgProgram *p, const PgProfile *pr, double calls, bool allow_device) {
  if (calls < 1) calls = 1;
  for (size_t ri = 0; ri < p->regions.n; ri++) {
    PgRegion *r = p->regions.v[ri];
    Sum s = {pr, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < r->nodes.n; i++) add_node(&s, r->nodes.v[i]);
    r->est_eager_us = fmax(s.host, s.gpu);
    r->reasons.n = 0;
    if (!r->graphable) {
      r->graph = false;
      r->est_graph_us = r->est_eager_us;
      r->patched = 0;
      r->update = PG_UPDATE_NONE;
      eager_reasons(p, r);
      host_reasons(p, r, s.late);
      continue;
    }
    /* nodes that take read scalars are patched from the host, after the synchronization */
    size_t early = s.patched - s.late;
    double host_update = (double)s.patched * pr->update_host_node_us, update = 0;
    double device_update = (double)s.late * pr->update_host_node_us +
                           (early ? pr->update_device_us + (double)early * pr->update_device_node_us : 0);
    r->patched = s.patched;
    r->update = PG_UPDATE_NONE;
    if (s.patched) {
      r->update = !allow_device || host_update <= device_update ? PG_UPDATE_HOST : PG_UPDATE_DEVICE;
      update = r->update == PG_UPDATE_HOST ? host_update : device_update;
    }
    double once = (pr->instantiate_node_us * (double)s.nodes + pr->upload_us) / calls;
    r->est_graph_us = pr->graph_launch_us + pr->graph_launch_node_us * (double)s.nodes + s.graph + update + once;
    r->graph = r->est_graph_us < r->est_eager_us;
    for (size_t i = 0; i < r->nodes.n; i++)
      if (r->nodes.v[i]->kind == PG_CONDITIONAL) {
        const PgNode *c = r->nodes.v[i];
        reason(p, r, pg_arena_printf(p->arena, "conditional node '%s' (%s over %zu bodies): the device picks what "
                                     "runs, with no host round trip%s", c->name, pg_cond_names[c->u.cond.type],
                                     c->u.cond.bodies.n, r->graph ? "" : "; it runs only inside a CUDA graph"));
        r->graph = true; /* the device decides: there is no eager way to run it */
      }
    if (r->est_graph_us < r->est_eager_us)
      reason(p, r, pg_arena_printf(p->arena, "%zu nodes in one graph launch: saves %.1f us per call", s.nodes,
                                   r->est_eager_us - r->est_graph_us));
    else
      reason(p, r, pg_arena_printf(p->arena,
                                   "a graph would not pay: %.1f us against %.1f us eager (instantiation %.1f us "
                                   "per call over %.0f calls)",
                                   r->est_graph_us, r->est_eager_us, once, calls));
    if (s.patched)
      reason(p, r, pg_arena_printf(p->arena, "%zu nodes patched per call, %s update: %.1f us", s.patched,
                                   pg_update_names[r->update], update));
    host_reasons(p, r, s.late);
    paths(p, r, pr, calls);
  }
}

/*
 * stage.c -- NCCL collectives on per-call buffers go through arena buffers of their own.
 *
 * libpgrt captures each collective once, at init, into a child graph (runtime/build.c),
 * so the addresses it reads and writes must never move: weights and the arena keep
 * theirs, but a per-call buffer (an input, an output, a buffer of unknown role:
 * pg_per_call) is the caller's, at a new address on every call.  Such a collective of
 * the root graph is staged, as CUDA Graph Trees do for a graph's inputs: it gets an
 * intermediate of its own, a device-to-device copy into it before and a copy out of it
 * after.  The copies are ordinary memcpy nodes, which libpgrt patches per call like any
 * node; the collective itself now sees only the arena.
 *
 *   preds -> N_in (send -> N_stage) -> N (on N_stage) -> N_out (N_stage -> recv) -> succs
 *
 *   send and recv the same pointer (in place):  one buffer N_stage, both copies;
 *   both per-call, not the same pointer:        N_send and N_recv (the collective runs
 *                                               out of place: an overlap of the two,
 *                                               an in-place all-gather, reads send whole
 *                                               before recv is written);
 *   one end per-call:                           N_stage, and that end's copy only.
 *
 * A staging buffer spans what the collective reads or writes there (pg_coll_bytes; an
 * in-place one the larger of the two), typed with the collective's dtype.  Every edge
 * into N now ends at its first node (N_in, or N), every edge out of N leaves its last
 * (N_out, or N), and the new nodes sit beside N in the node order, so an order that was
 * topological stays so.  Names that are taken get _2, _3 ...; the new nodes and
 * buffers carry N's location.
 *
 * It runs before classify, partition, cost and memplan, which see the copies as any
 * other node and plan the staging buffers in the arena.  Left as they are, for
 * pg_c_check to refuse with a located error: collectives inside bodies, and those with
 * an end in host memory.
 */
#include "pgcc.h"

#include <string.h>

typedef struct {
  PgProgram *p;
  PgMap *values; /* names of buffers, scalars, conditions, dims and comms: one namespace in .graph */
  PgMap *nodes;  /* node names, every graph's */
} Stage;

/* base + suffix, or base + suffix + "_K" for the first K from 2 not in `taken`; then taken. */
static const char *fresh(Stage *s, PgMap *taken, const char *base, const char *suffix) {
  const char *name = pg_arena_cat(s->p->arena, base, suffix, "");
  for (unsigned k = 2; pg_map_get(taken, name); k++) name = pg_arena_printf(s->p->arena, "%s%s_%u", base, suffix, k);
  pg_map_put(taken, name, (void *)name);
  return name;
}

static PgBuffer *stage_buffer(Stage *s, const PgNode *n, const char *suffix, uint64_t bytes) {
  const PgCollective *c = n->u.libcall.coll;
  PgBuffer *b = pg_arena_alloc(s->p->arena, sizeof *b);
  b->name = fresh(s, s->values, n->name, suffix);
  b->size = bytes;
  b->role = PG_ROLE_INTERMEDIATE;
  b->has_dtype = true;
  b->dtype = c->dtype;
  b->has_shape = true;
  pg_vec_push(s->p->arena, b->shape, (int64_t)(bytes / pg_type_sizes[c->dtype]));
  b->loc = n->loc;
  pg_vec_push(s->p->arena, s->p->buffers, b);
  return b;
}

/* A memcpy node as the reader makes one for `memcpy dir dtod src S dst D width W`,
 * appended to n's graph (stage() puts it in its place). */
static PgNode *stage_copy(Stage *s, const PgNode *n, const char *suffix, PgPtr src, PgPtr dst, uint64_t bytes) {
  PgNode *m = pg_node_new(s->p, n->graph, PG_MEMCPY, fresh(s, s->nodes, n->name, suffix), n->loc);
  m->u.memcpy.dir = PG_DIR_DTOD;
  m->u.memcpy.has_ptrs = true;
  m->u.memcpy.src = src;
  m->u.memcpy.dst = dst;
  m->u.memcpy.width = bytes;
  m->u.memcpy.height = m->u.memcpy.depth = 1;
  return m;
}

/* Collective node n: its staging buffers and copies, n moved onto the buffers. */
static void stage(Stage *s, PgNode *n) {
  PgCollective *c = n->u.libcall.coll;
  uint64_t sb = pg_coll_bytes(c, false), rb = pg_coll_bytes(c, true);
  bool in = pg_per_call(c->send.buf), out = pg_per_call(c->recv.buf);
  if (in && out && c->send.buf == c->recv.buf && c->send.offset == c->recv.offset) { /* in place */
    PgPtr st = {stage_buffer(s, n, "_stage", sb > rb ? sb : rb), 0};
    c->stage_in = stage_copy(s, n, "_in", c->send, st, sb);
    c->stage_out = stage_copy(s, n, "_out", st, c->recv, rb);
    c->send = c->recv = st;
    return;
  }
  if (in) {
    PgPtr st = {stage_buffer(s, n, out ? "_send" : "_stage", sb), 0};
    c->stage_in = stage_copy(s, n, "_in", c->send, st, sb);
    c->send = st;
  }
  if (out) {
    PgPtr st = {stage_buffer(s, n, in ? "_recv" : "_stage", rb), 0};
    c->stage_out = stage_copy(s, n, "_out", st, c->recv, rb);
    c->recv = st;
  }
}

static bool wants_staging(const PgNode *n) {
  if (n->kind != PG_LIBCALL || !n->u.libcall.coll) return false;
  const PgCollective *c = n->u.libcall.coll;
  if (!c->send.buf || !c->recv.buf || c->send.buf->role == PG_ROLE_HOST || c->recv.buf->role == PG_ROLE_HOST)
    return false;
  return pg_per_call(c->send.buf) || pg_per_call(c->recv.buf);
}

/* A collective staged by this run: its copies were appended after the first `before` nodes. */
static bool staged_now(const PgNode *n, size_t before) {
  if (n->kind != PG_LIBCALL || !n->u.libcall.coll) return false;
  const PgCollective *c = n->u.libcall.coll;
  return (c->stage_in && c->stage_in->index >= before) || (c->stage_out && c->stage_out->index >= before);
}

size_t pg_stage_collectives(PgProgram *p) {
  PgGraph *g = p->graphs.v[0];
  size_t before = g->nodes.n, staged = 0;
  for (size_t i = 0; i < before && !staged; i++) staged = wants_staging(g->nodes.v[i]);
  if (!staged) return 0; /* the usual case: no name maps built */

  Stage s = {p, pg_map_new(p->arena), pg_map_new(p->arena)};
  for (size_t i = 0; i < p->buffers.n; i++) pg_map_put(s.values, p->buffers.v[i]->name, p->buffers.v[i]);
  for (size_t i = 0; i < p->scalars.n; i++) pg_map_put(s.values, p->scalars.v[i]->name, p->scalars.v[i]);
  for (size_t i = 0; i < p->conditions.n; i++) pg_map_put(s.values, p->conditions.v[i]->name, p->conditions.v[i]);
  for (size_t i = 0; i < p->dims.n; i++) pg_map_put(s.values, p->dims.v[i]->name, p->dims.v[i]);
  for (size_t i = 0; i < p->comms.n; i++) pg_map_put(s.values, p->comms.v[i]->name, p->comms.v[i]);
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++)
      pg_map_put(s.nodes, p->graphs.v[gi]->nodes.v[i]->name, p->graphs.v[gi]->nodes.v[i]);

  staged = 0;
  for (size_t i = 0; i < before; i++)
    if (wants_staging(g->nodes.v[i])) stage(&s, g->nodes.v[i]), staged++;

  /* edges into a staged collective now end at its copy in, edges out of it leave its
   * copy out; then the chain copy in -> collective -> copy out */
  size_t edges = g->edges.n;
  for (size_t i = 0; i < edges; i++) {
    PgEdge *e = &g->edges.v[i];
    if (staged_now(e->to, before) && e->to->u.libcall.coll->stage_in) e->to = e->to->u.libcall.coll->stage_in;
    if (staged_now(e->from, before) && e->from->u.libcall.coll->stage_out) e->from = e->from->u.libcall.coll->stage_out;
  }
  for (size_t i = 0; i < before; i++) {
    PgNode *n = g->nodes.v[i];
    if (!staged_now(n, before)) continue;
    const PgCollective *c = n->u.libcall.coll;
    if (c->stage_in) pg_edge_add(p, g, c->stage_in, n, PG_EDGE_FULL, n->loc);
    if (c->stage_out) pg_edge_add(p, g, n, c->stage_out, PG_EDGE_FULL, n->loc);
  }

  /* the copies beside their collective in the node order */
  size_t total = g->nodes.n, k = 0;
  PgNode **v = pg_arena_alloc(p->arena, total * sizeof *v);
  for (size_t i = 0; i < before; i++) {
    PgNode *n = g->nodes.v[i];
    bool now = staged_now(n, before);
    if (now && n->u.libcall.coll->stage_in) v[k++] = n->u.libcall.coll->stage_in;
    v[k++] = n;
    if (now && n->u.libcall.coll->stage_out) v[k++] = n->u.libcall.coll->stage_out;
  }
  if (k != total) PG_BUG("staging placed %zu of %zu nodes", k, total);
  for (size_t i = 0; i < total; i++) v[i]->index = (uint32_t)i;
  g->nodes.v = v;
  g->nodes.n = g->nodes.cap = total;
  pg_program_link(p);
  return staged;
}

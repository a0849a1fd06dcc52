/*
 * rename.c -- an intermediate that holds several values, one after another, split into
 * a buffer per value.
 *
 * Memory is reused for values whose lives do not overlap: Inductor's wrapper hands a
 * dead buffer to the next of its size (`buf5 = buf2; del buf2  # reuse`), and the caching
 * allocator gives a freed block to the next tensor that fits.  Captured, that is one
 * buffer holding a run of values, and every node of one value touches the bytes every
 * node of the next touches.  On the captured chain it costs nothing; in a widened graph
 * (widen.c) it orders the values' nodes as if each depended on the last: a mixture of
 * experts whose eight hidden activations live in one buffer keeps its experts in single
 * file.  Where a kernel *overwrites* the buffer -- `access o`: it writes every byte and
 * reads none first (access_probe.py measures it for library GEMMs) -- the value before is
 * dead from that node on.  The buffer is split there, as a compiler renames a register:
 * that node and the ones after it point into a new buffer of the same size, alignment
 * and role, named NAME_vK.  memplan.c then plans each value on its own: on the chain
 * their lives are disjoint and they may share bytes as before; in a widened graph they
 * need not, and widen.c weighs the arena that costs.
 *
 * Only intermediates are split, and only where every node that uses the buffer is a
 * kernel of the root graph (a copy, a memset, a library call, an allocation or a node in
 * a child graph or conditional body keeps it whole), and a node starts a new value only
 * where every pointer it has into the buffer overwrites it.  Runs where the root graph
 * is one chain in node order (its order is the program's), before schedule.c, and only
 * where some kernel parameter says `o`.
 */
#include "pgcc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool says_overwrite(const PgProgram *p) {
  for (size_t i = 0; i < p->kernels.n; i++)
    for (size_t j = 0; j < p->kernels.v[i]->params.n; j++) {
      const PgParam *pa = &p->kernels.v[i]->params.v[j];
      if (pa->access == PG_ACCESS_OVERWRITE) return true;
      for (size_t q = 0; q < pa->ptrs.n; q++)
        if (pa->ptrs.v[q].access == PG_ACCESS_OVERWRITE) return true;
    }
  return false;
}

/* Buffers that may be split: intermediates used only by the root graph's kernels. */
typedef struct {
  PgMap *index;   /* buffer name -> its index in p->buffers, plus one */
  bool *kept;     /* per buffer: not to be split */
  bool in_kernel; /* the node being looked at is a root-graph kernel */
} Uses;

static size_t index_of(const Uses *u, const PgBuffer *b) { return (size_t)(uintptr_t)pg_map_get(u->index, b->name) - 1; }

static void note_use(void *ctx, PgBuffer *b) {
  Uses *u = ctx;
  if (b && !u->in_kernel) u->kept[index_of(u, b)] = true;
}

/* One pass over the root graph: per buffer that may be split (by its index), the buffer
 * its current value lives in and how many values it has had; per node, which of those
 * the node touches and whether only by overwriting. */
typedef struct {
  const Uses *u;
  PgProgram *p;
  PgMap *names;     /* every buffer's name, the values' too */
  PgBuffer **cur;   /* the buffer its current value lives in */
  bool *used;       /* a node has touched it */
  size_t *values;   /* values made after the first */
  size_t *noted;    /* the node (1 + its index) whose pointers were last noted for it */
  size_t *moved;    /* the node whose pointers were last moved to its current value */
  bool *overwrites; /* every pointer of that node into it overwrites it */
} Pass;

typedef void PtrFn(Pass *s, PgBuffer **slot, PgAccess how, size_t node);

/* Each of kernel node n's pointers with what the kernel does through it, to fn. */
static void each_ptr(PgNode *n, PtrFn *fn, Pass *s, size_t node) {
  const PgKernel *k = n->u.kernel.kernel;
  for (size_t i = 0; i < n->u.kernel.args.n && i < k->params.n; i++) {
    PgArg *a = &n->u.kernel.args.v[i];
    if (a->kind == PG_ARG_PTR && a->ptr.buf) fn(s, &a->ptr.buf, pg_param_access(&k->params.v[i], -1), node);
    if (a->kind == PG_ARG_BYTES)
      for (size_t q = 0; q < a->ptrs.n; q++)
        if (a->ptrs.v[q].buf) fn(s, &a->ptrs.v[q].buf, pg_param_access(&k->params.v[i], (long)q), node);
  }
}

static void note_ptr(Pass *s, PgBuffer **slot, PgAccess how, size_t node) {
  size_t b = index_of(s->u, *slot);
  if (s->u->kept[b]) return;
  if (s->noted[b] != node) s->noted[b] = node, s->overwrites[b] = true;
  s->overwrites[b] &= how == PG_ACCESS_OVERWRITE;
}

/* A new buffer like b for its value number k, under a name no buffer has. */
static PgBuffer *value_of(Pass *s, const PgBuffer *b, size_t k) {
  PgBuffer *v = pg_arena_alloc(s->p->arena, sizeof *v);
  *v = *b;
  v->planned = false, v->offset = 0;
  size_t len = strlen(b->name) + 32;
  char *name = pg_arena_alloc(s->p->arena, len);
  snprintf(name, len, "%s_v%zu", b->name, k);
  while (pg_map_get(s->names, name)) { /* (NAME_vK taken: NAME_vK_, ...) */
    char *longer = pg_arena_alloc(s->p->arena, strlen(name) + 2);
    snprintf(longer, strlen(name) + 2, "%s_", name);
    name = longer;
  }
  v->name = name;
  pg_map_put(s->names, name, v);
  pg_vec_push(s->p->arena, s->p->buffers, v);
  return v;
}

/* The node's pointer into a buffer that may be split points into its current value; the
 * node's first such pointer starts a new value where the node only overwrites it. */
static void move_ptr(Pass *s, PgBuffer **slot, PgAccess how, size_t node) {
  (void)how;
  size_t b = index_of(s->u, *slot);
  if (s->u->kept[b]) return;
  if (s->moved[b] != node) {
    s->moved[b] = node;
    if (s->used[b] && s->overwrites[b]) s->cur[b] = value_of(s, *slot, ++s->values[b]);
    s->used[b] = true;
  }
  *slot = s->cur[b];
}

void pg_rename(PgProgram *p) {
  PgGraph *g = p->graphs.v[0];
  if (!says_overwrite(p)) return;
  if ((p->rename.why_not = pg_not_a_chain(g)) != NULL) return;
  size_t nb = p->buffers.n;
  Uses u = {pg_map_new(p->arena), calloc(nb + 1, sizeof(bool)), false};
  Pass s = {&u,
            p,
            pg_map_new(p->arena),
            calloc(nb + 1, sizeof(PgBuffer *)),
            calloc(nb + 1, sizeof(bool)),
            calloc(nb + 1, sizeof(size_t)),
            calloc(nb + 1, sizeof(size_t)),
            calloc(nb + 1, sizeof(size_t)),
            calloc(nb + 1, sizeof(bool))};
  if (!u.kept || !s.cur || !s.used || !s.values || !s.noted || !s.moved || !s.overwrites) PG_BUG("out of memory");
  for (size_t b = 0; b < nb; b++) {
    pg_map_put(u.index, p->buffers.v[b]->name, (void *)(uintptr_t)(b + 1));
    pg_map_put(s.names, p->buffers.v[b]->name, p->buffers.v[b]);
    u.kept[b] = p->buffers.v[b]->role != PG_ROLE_INTERMEDIATE;
    s.cur[b] = p->buffers.v[b];
  }
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *n = p->graphs.v[gi]->nodes.v[i];
      u.in_kernel = gi == 0 && n->kind == PG_KERNEL;
      pg_node_uses(n, note_use, &u);
    }
  for (size_t i = 0; i < g->nodes.n; i++) { /* in the chain's order, which is the program's */
    PgNode *n = g->nodes.v[i];
    if (n->kind != PG_KERNEL) continue;
    each_ptr(n, note_ptr, &s, i + 1);
    each_ptr(n, move_ptr, &s, i + 1);
  }
  for (size_t b = 0; b < nb; b++) {
    p->rename.buffers += s.values[b] > 0;
    p->rename.values += s.values[b];
  }
  free(u.kept);
  free(s.cur), free(s.used), free(s.values), free(s.noted), free(s.moved), free(s.overwrites);
}

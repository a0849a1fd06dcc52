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

/* Whether kernel node n touches b, and whether every pointer it has into b overwrites it. */
static void into(const PgNode *n, const PgBuffer *b, bool *touches, bool *overwrites) {
  const PgKernel *k = n->u.kernel.kernel;
  *touches = false, *overwrites = true;
  for (size_t i = 0; i < n->u.kernel.args.n && i < k->params.n; i++) {
    const PgArg *a = &n->u.kernel.args.v[i];
    const PgParam *pa = &k->params.v[i];
    if (a->kind == PG_ARG_PTR && a->ptr.buf == b)
      *touches = true, *overwrites &= pg_param_access(pa, -1) == PG_ACCESS_OVERWRITE;
    if (a->kind == PG_ARG_BYTES)
      for (size_t q = 0; q < a->ptrs.n; q++)
        if (a->ptrs.v[q].buf == b) *touches = true, *overwrites &= pg_param_access(pa, (long)q) == PG_ACCESS_OVERWRITE;
  }
}

static void point_to(PgNode *n, const PgBuffer *from, PgBuffer *to) {
  for (size_t i = 0; i < n->u.kernel.args.n; i++) {
    PgArg *a = &n->u.kernel.args.v[i];
    if (a->kind == PG_ARG_PTR && a->ptr.buf == from) a->ptr.buf = to;
    if (a->kind == PG_ARG_BYTES)
      for (size_t q = 0; q < a->ptrs.n; q++)
        if (a->ptrs.v[q].buf == from) a->ptrs.v[q].buf = to;
  }
}

/* A new buffer like b for its value number k, under a name no buffer has. */
static PgBuffer *value_of(PgProgram *p, PgMap *names, const PgBuffer *b, size_t k) {
  PgBuffer *v = pg_arena_alloc(p->arena, sizeof *v);
  *v = *b;
  v->planned = false, v->offset = 0;
  size_t len = strlen(b->name) + 32;
  char *name = pg_arena_alloc(p->arena, len);
  snprintf(name, len, "%s_v%zu", b->name, k);
  while (pg_map_get(names, name)) { /* (NAME_vK taken: NAME_vK_, ...) */
    char *longer = pg_arena_alloc(p->arena, strlen(name) + 2);
    snprintf(longer, strlen(name) + 2, "%s_", name);
    name = longer;
  }
  v->name = name;
  pg_map_put(names, name, v);
  return v;
}

void pg_rename(PgProgram *p) {
  PgGraph *g = p->graphs.v[0];
  if (!says_overwrite(p)) return;
  if ((p->rename.why_not = pg_not_a_chain(g)) != NULL) return;
  size_t nb = p->buffers.n;
  Uses u = {pg_map_new(p->arena), calloc(nb + 1, sizeof(bool)), false};
  if (!u.kept) PG_BUG("out of memory");
  PgMap *names = pg_map_new(p->arena);
  for (size_t b = 0; b < nb; b++) {
    pg_map_put(u.index, p->buffers.v[b]->name, (void *)(uintptr_t)(b + 1));
    pg_map_put(names, p->buffers.v[b]->name, p->buffers.v[b]);
    u.kept[b] = p->buffers.v[b]->role != PG_ROLE_INTERMEDIATE;
  }
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *n = p->graphs.v[gi]->nodes.v[i];
      u.in_kernel = gi == 0 && n->kind == PG_KERNEL;
      pg_node_uses(n, note_use, &u);
    }
  for (size_t b = 0; b < nb; b++) {
    if (u.kept[b]) continue;
    PgBuffer *orig = p->buffers.v[b], *cur = orig;
    bool used = false;
    size_t values = 0;
    for (size_t i = 0; i < g->nodes.n; i++) {
      PgNode *n = g->nodes.v[i];
      if (n->kind != PG_KERNEL) continue;
      bool touches, overwrites;
      into(n, orig, &touches, &overwrites);
      if (!touches) continue;
      if (used && overwrites) {
        cur = value_of(p, names, orig, ++values);
        pg_vec_push(p->arena, p->buffers, cur);
      }
      if (cur != orig) point_to(n, orig, cur);
      used = true;
    }
    p->rename.buffers += values > 0;
    p->rename.values += values;
  }
  free(u.kept);
}

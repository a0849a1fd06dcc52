/*
 * memplan.c -- intermediates (role intermediate or workspace) become offsets in one
 * arena shared by graph and eager regions.
 *
 * Each buffer is live from its first use to its last in the schedule (regions in
 * order, nodes in region order; a use inside a child or conditional body counts at
 * its owner).  Nodes of an eager region run one after another, and so do the nodes
 * of a graph region that is a chain.  Two buffers whose live ranges are disjoint may
 * share bytes.
 *
 * Graph regions that are not chains (a root graph widened from its dependencies,
 * widen.c, or read so): there nodes may run at once, and two buffers may share bytes
 * only where every node using one *reaches* every node using the other through the
 * region's edges (happens before it).  Each node takes a position of its own, in a
 * topological order, so that live ranges that overlap still interfere; and two buffers
 * whose ranges do not overlap interfere too where some use of the earlier does not
 * reach some use of the later (they may run at once).  Per node, bitsets of the nodes
 * that reach it and that it reaches (2 n^2 bits per region).  The buffers a buffer B
 * may run at once with are found through them: those used at a node before B's first
 * use that does not reach all of B's uses, or after its last that not all of them
 * reach -- a scan over bits, not over pairs of buffers.  The linear scan in time
 * cannot see that second kind of interference, so where such a region exists only the
 * placements in an order run, each taking into account, beside the buffers whose lives
 * overlap its own, those it may run at once with.  Past DAG_NODES nodes in one region,
 * or in a region holding an exclusive conditional node (below), a use keeps the buffer
 * live for the whole region instead: nodes there may run at once and nothing shares.

 * Exclusive bodies: the bodies of a conditional node with two or more (if/else, a
 * switch: a shape bucket each) never run in one launch, so the node takes a schedule
 * position per body, one after another, and a use inside body k counts at the k-th.
 * A buffer used only inside one body then lives apart from one used only inside
 * another, and they share bytes: a bucket program's arena is its largest bucket's,
 * not the sum.  A buffer used in two bodies, or in a body and outside, spans the
 * positions between and shares with neither.  (Nested bodies count at their
 * outermost exclusive body; a while or one-body if counts at its owner.)  In a graph
 * region that is not a chain, where the other nodes' uses span the whole region,
 * this holds only for a region with one such conditional node: two of them might run
 * at once.
 *
 * Placement: three ways, and the smallest arena is kept (offsets aligned to max(256,
 * the buffer's alignment) every way).  A linear scan in time, as an allocator would
 * run but knowing the future: at each buffer's first use the buffers that died
 * before it are freed, and it goes best-fit into a hole of the arena or at its top;
 * O(B log B) plus the free-list walks, which stay short because only live buffers
 * fragment the arena.  And in an order, largest first or longest-lived first, each
 * into the smallest gap among the buffers placed that live at the same time as it
 * (O(B log B) plus O(log B) per pair of buffers that live together); these win where
 * the scan leaves holes too small for what comes later, as with many buffers of mixed
 * sizes (an export's regions split into the allocations they use).  The ways are
 * tried in that order and stop at one whose arena is the floor: the most bytes live
 * at one position, reported beside the arena, which no placement gets below.  Past
 * PLACE_PAIRS pairs of buffers living together, only the scan runs.
 * bench/memplan.py compares them.
 *
 * For comparison: sum_bytes gives every intermediate its own allocation;
 * pools_bytes gives every graph region a private pool holding each intermediate it
 * touches (as per-graph memory pools do), plus the intermediates used only eagerly.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

#define DAG_NODES 16384 /* a region's reachability bitsets: 2 n^2 bits */

/* A use in a region that is not a chain: the region (an index into Dags) and the node's
 * topological index there. */
typedef struct {
  uint32_t dag, node;
} DagUse;

typedef struct {
  PgBuffer *buf;
  size_t lo, hi;       /* live range in schedule positions */
  bool used;
  bool in_graph;       /* some graph region uses it */
  size_t pooled_in;    /* the last graph region that counted it for pools, +1 */
  DagUse *uses;        /* its uses in regions that are not chains */
  size_t nuses, cap;
} Life;

/* A graph region that is not a chain: anc[k * words ...] is the set of its nodes (by
 * topological index) that reach node k, desc[k * words ...] those node k reaches;
 * users[at[k]] to users[at[k + 1] - 1]: the buffers (todo indices) node k uses. */
typedef struct {
  size_t n, words;
  uint64_t *anc, *desc;
  size_t *at, *users;
  size_t stamp; /* the last query that walked it, + 1 */
} Dag;

typedef struct {
  Dag *v;
  size_t n;
} Dags;

typedef struct {
  PgMap *lives;        /* buffer name -> Life */
  size_t lo, hi;       /* the current use's range */
  bool region_graph;   /* the current region is a graph */
  size_t region;
  uint64_t pools;
  long dag;            /* the current region's Dag, or -1 */
  uint32_t node;       /* the current node's topological index there */
} Walk;

static void use(Walk *w, PgBuffer *b) {
  if (!b || !pg_in_arena(b)) return;
  Life *l = pg_map_get(w->lives, b->name);
  if (!l->used || w->lo < l->lo) l->lo = w->lo;
  if (!l->used || w->hi > l->hi) l->hi = w->hi;
  l->used = true;
  if (w->dag >= 0) {
    if (l->nuses == l->cap) {
      l->cap = l->cap ? 2 * l->cap : 4;
      if (!(l->uses = realloc(l->uses, l->cap * sizeof *l->uses))) PG_BUG("out of memory");
    }
    l->uses[l->nuses++] = (DagUse){(uint32_t)w->dag, w->node};
  }
  if (w->region_graph) {
    l->in_graph = true;
    if (l->pooled_in != w->region + 1) { /* once per graph region */
      l->pooled_in = w->region + 1;
      w->pools += b->size;
    }
  }
}

static void use_cb(void *w, PgBuffer *b) { use(w, b); }

static void use_node(Walk *w, const PgNode *n);

static void use_graph(Walk *w, const PgGraph *g) {
  for (size_t i = 0; i < g->nodes.n; i++) use_node(w, g->nodes.v[i]);
}

/* A conditional node whose bodies exclude each other: two or more of them. */
static bool exclusive(const PgNode *n) { return n->kind == PG_CONDITIONAL && n->u.cond.bodies.n >= 2; }

/* An exclusive node's bodies, body k at position at + k. */
static void use_bodies(Walk *w, const PgNode *n, size_t at) {
  for (size_t b = 0; b < n->u.cond.bodies.n; b++) {
    w->lo = w->hi = at + b;
    use_graph(w, n->u.cond.bodies.v[b]);
  }
}

static void use_node(Walk *w, const PgNode *n) {
  pg_node_uses(n, use_cb, w);
  if (n->kind == PG_CHILD) use_graph(w, n->u.child.body);
  if (n->kind == PG_CONDITIONAL)
    for (size_t b = 0; b < n->u.cond.bodies.n; b++) use_graph(w, n->u.cond.bodies.v[b]);
}

static bool is_chain(const PgRegion *r) {
  for (size_t k = 0; k + 1 < r->nodes.n; k++) {
    const PgNode *a = r->nodes.v[k], *b = r->nodes.v[k + 1];
    bool linked = false;
    for (size_t s = 0; s < a->nsucc && !linked; s++) linked = pg_succs(a)[s] == b;
    if (!linked) return false;
  }
  return true;
}

#define BIT(set, i) (((set)[(i) / 64] >> ((i) % 64)) & 1)

/* Region r's nodes (of the root graph, whose size is nroot) in a topological order
 * (Kahn's, ties in region order) into order[], and the Dag of what reaches what; false
 * (nothing made) past DAG_NODES nodes.  rank[]: per root node index, scratch. */
static bool make_dag(const PgRegion *r, size_t *rank, const PgNode **order, Dag *d) {
  size_t n = r->nodes.n;
  if (n > DAG_NODES) return false;
  size_t *indeg = calloc(n ? n : 1, sizeof *indeg), *queue = calloc(n ? n : 1, sizeof *queue), head = 0, tail = 0;
  if (!indeg || !queue) PG_BUG("out of memory");
  for (size_t k = 0; k < n; k++) rank[r->nodes.v[k]->index] = k + 1; /* in the region: position + 1 */
#define IN(x_) ((x_)->graph == r->nodes.v[0]->graph && rank[(x_)->index])
  for (size_t k = 0; k < n; k++)
    for (size_t q = 0; q < r->nodes.v[k]->npred; q++) indeg[k] += IN(pg_preds(r->nodes.v[k])[q]);
  for (size_t k = 0; k < n; k++)
    if (!indeg[k]) queue[tail++] = k;
  while (head < tail) {
    const PgNode *v = r->nodes.v[queue[head++]];
    for (size_t q = 0; q < v->nsucc; q++) {
      const PgNode *s = pg_succs(v)[q];
      if (IN(s) && !--indeg[rank[s->index] - 1]) queue[tail++] = rank[s->index] - 1;
    }
  }
  if (tail != n) PG_BUG("memplan: region %d has a cycle", r->id);
  *d = (Dag){.n = n, .words = (n + 63) / 64};
  if (!(d->anc = calloc(n * d->words + 1, sizeof *d->anc))) PG_BUG("out of memory");
  for (size_t t = 0; t < n; t++) order[t] = r->nodes.v[queue[t]];
  for (size_t t = 0; t < n; t++) rank[order[t]->index] = t + 1; /* now: topological index + 1 */
  if (!(d->desc = calloc(n * d->words + 1, sizeof *d->desc))) PG_BUG("out of memory");
  for (size_t t = 0; t < n; t++) {
    uint64_t *at = d->anc + t * d->words;
    for (size_t q = 0; q < order[t]->npred; q++) {
      const PgNode *pu = pg_preds(order[t])[q];
      if (!IN(pu)) continue;
      size_t u = rank[pu->index] - 1;
      const uint64_t *au = d->anc + u * d->words;
      for (size_t k = 0; k < d->words; k++) at[k] |= au[k];
      at[u / 64] |= (uint64_t)1 << (u % 64);
    }
  }
  for (size_t t = n; t-- > 0;) {
    uint64_t *dt = d->desc + t * d->words;
    for (size_t q = 0; q < order[t]->nsucc; q++) {
      const PgNode *sv = pg_succs(order[t])[q];
      if (!IN(sv)) continue;
      size_t v = rank[sv->index] - 1;
      const uint64_t *dv = d->desc + v * d->words;
      for (size_t k = 0; k < d->words; k++) dt[k] |= dv[k];
      dt[v / 64] |= (uint64_t)1 << (v % 64);
    }
  }
#undef IN
  for (size_t k = 0; k < n; k++) rank[r->nodes.v[k]->index] = 0;
  free(indeg), free(queue);
  return true;
}

/* Where placed buffers sit: [off, end) each. */
typedef struct {
  uint64_t off, end;
} Span;

typedef struct {
  Span *v;
  size_t n, cap;
} SpanVec;

static void span_push(SpanVec *x, Span sp) {
  if (x->n == x->cap) {
    x->cap = x->cap ? 2 * x->cap : 64;
    if (!(x->v = realloc(x->v, x->cap * sizeof *x->v))) PG_BUG("out of memory");
  }
  x->v[x->n++] = sp;
}

/* What a placement asks of the regions that are not chains: the buffers (todo indices)
 * placed that buffer l may run at once with, their spans appended to out once each
 * (seen: per buffer, the last query that listed it).  For each such region l uses: the
 * nodes before l's first use there that do not reach all of l's uses there (r: the
 * nodes that reach them all), and those after its last that not all of them reach (d:
 * the nodes they all reach); every buffer used at one of those nodes. */
typedef struct {
  Dags *dags;
  const bool *placed;
  size_t *seen;
  uint64_t *r, *d; /* scratch: a region's words each */
} DagQuery;

static void dag_users(const DagQuery *q, const Dag *g, size_t node, size_t query, Life **todo, const uint64_t *at,
                      SpanVec *out) {
  for (size_t k = g->at[node]; k < g->at[node + 1]; k++) {
    size_t i = g->users[k];
    if (q->placed[i] && q->seen[i] != query)
      q->seen[i] = query, span_push(out, (Span){at[i], at[i] + todo[i]->buf->size});
  }
}

static void dag_query(DagQuery *q, const Life *l, size_t query, Life **todo, const uint64_t *at, SpanVec *out) {
  for (size_t u = 0; u < l->nuses; u++) {
    Dag *g = &q->dags->v[l->uses[u].dag];
    if (g->stamp == query + 1) continue;
    g->stamp = query + 1;
    size_t lo = SIZE_MAX, hi = 0;
    memset(q->r, 0xff, g->words * sizeof *q->r), memset(q->d, 0xff, g->words * sizeof *q->d);
    for (size_t v = 0; v < l->nuses; v++) {
      if (l->uses[v].dag != l->uses[u].dag) continue;
      size_t k = l->uses[v].node;
      if (k < lo) lo = k;
      if (k > hi) hi = k;
      for (size_t w = 0; w < g->words; w++) q->r[w] &= g->anc[k * g->words + w], q->d[w] &= g->desc[k * g->words + w];
    }
    for (size_t w = 0; w * 64 < lo; w++) { /* before: [0, lo) not in r */
      uint64_t bits = ~q->r[w];
      if ((w + 1) * 64 > lo) bits &= ((uint64_t)1 << (lo % 64)) - 1;
      for (; bits; bits &= bits - 1) dag_users(q, g, w * 64 + (size_t)__builtin_ctzll(bits), query, todo, at, out);
    }
    for (size_t w = (hi + 1) / 64; w < g->words; w++) { /* after: (hi, n) not in d */
      uint64_t bits = ~q->d[w];
      if (w == (hi + 1) / 64) bits &= ~(((uint64_t)1 << ((hi + 1) % 64)) - 1);
      if ((w + 1) * 64 > g->n) bits &= g->n % 64 ? ((uint64_t)1 << (g->n % 64)) - 1 : ~(uint64_t)0;
      for (; bits; bits &= bits - 1) dag_users(q, g, w * 64 + (size_t)__builtin_ctzll(bits), query, todo, at, out);
    }
  }
}

/* Allocation order: by first use, larger first among equals, then by name. */
static int by_start(const void *x, const void *y) {
  const Life *a = *(Life *const *)x, *b = *(Life *const *)y;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->buf->size != b->buf->size) return a->buf->size > b->buf->size ? -1 : 1;
  return strcmp(a->buf->name, b->buf->name);
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The arena's free space below its top, as blocks sorted by offset. */
typedef struct {
  uint64_t off, size;
} Block;

typedef struct {
  Block *v;
  size_t n, cap;
  uint64_t top; /* everything at or above is free */
} FreeList;

static void fl_insert(FreeList *fl, size_t at, Block b) {
  if (fl->n == fl->cap) {
    fl->cap = fl->cap ? 2 * fl->cap : 16;
    fl->v = realloc(fl->v, fl->cap * sizeof *fl->v);
    if (!fl->v) PG_BUG("out of memory");
  }
  memmove(fl->v + at + 1, fl->v + at, (fl->n - at) * sizeof *fl->v);
  fl->v[at] = b;
  fl->n++;
}

static void fl_remove(FreeList *fl, size_t at) {
  memmove(fl->v + at, fl->v + at + 1, (fl->n - at - 1) * sizeof *fl->v);
  fl->n--;
}

/* Best fit among the free blocks, else at the top. */
static uint64_t fl_alloc(FreeList *fl, uint64_t size, uint64_t align) {
  size_t best = SIZE_MAX;
  uint64_t best_waste = UINT64_MAX;
  for (size_t i = 0; i < fl->n; i++) {
    uint64_t start = align_up(fl->v[i].off, align), end = fl->v[i].off + fl->v[i].size;
    if (start + size <= end && end - start - size < best_waste) best = i, best_waste = end - start - size;
  }
  if (best == SIZE_MAX) { /* no hole fits: grow the top, starting in a hole that touches it */
    bool touching = fl->n && fl->v[fl->n - 1].off + fl->v[fl->n - 1].size == fl->top;
    uint64_t from = touching ? fl->v[fl->n - 1].off : fl->top, at = align_up(from, align);
    if (touching) fl_remove(fl, fl->n - 1);
    if (at > from) fl_insert(fl, fl->n, (Block){from, at - from}); /* the alignment gap stays free */
    fl->top = at + size;
    return at;
  }
  Block b = fl->v[best];
  uint64_t start = align_up(b.off, align), end = b.off + b.size;
  fl_remove(fl, best);
  if (end > start + size) fl_insert(fl, best, (Block){start + size, end - start - size});
  if (start > b.off) fl_insert(fl, best, (Block){b.off, start - b.off});
  return start;
}

/* Returns [off, off+size) to the free list, merging with its neighbours. */
static void fl_free(FreeList *fl, uint64_t off, uint64_t size) {
  size_t at = 0;
  while (at < fl->n && fl->v[at].off < off) at++;
  fl_insert(fl, at, (Block){off, size});
  if (at + 1 < fl->n && fl->v[at].off + fl->v[at].size == fl->v[at + 1].off) {
    fl->v[at].size += fl->v[at + 1].size;
    fl_remove(fl, at + 1);
  }
  if (at > 0 && fl->v[at - 1].off + fl->v[at - 1].size == fl->v[at].off) {
    fl->v[at - 1].size += fl->v[at].size;
    fl_remove(fl, at);
  }
}

#define PLACE_PAIRS 4000000 /* buffers living together, at most, for the placements in an order */

static uint64_t slot_align(const Life *l) { return l->buf->align > 256 ? l->buf->align : 256; }

/* Linear scan in time over todo (sorted by first use), as an allocator would run but
 * knowing the future: at each buffer's first use, free what died before it, then
 * place it best-fit in the arena's holes or at its top.  Offsets into at[], in
 * todo's order; returns the arena's top. */
static uint64_t place_scan(Life **todo, size_t nt, uint64_t *at) {
  FreeList fl = {0};
  uint64_t top = 0;
  size_t nl = 0, *live = calloc(nt ? nt : 1, sizeof *live); /* live buffers (todo indices), a min-heap on hi */
  if (!live) PG_BUG("out of memory");
#define HI(k) (todo[live[k]]->hi)
#define SWAP(a, b) \
  do {                \
    size_t t_ = live[a]; \
    live[a] = live[b];   \
    live[b] = t_;        \
  } while (0)
  for (size_t t = 0; t < nt; t++) {
    const Life *l = todo[t];
    while (nl && HI(0) < l->lo) { /* pop the earliest death */
      fl_free(&fl, at[live[0]], todo[live[0]]->buf->size);
      live[0] = live[--nl];
      for (size_t c = 0;;) {
        size_t a = 2 * c + 1, b = a + 1, m = c;
        if (a < nl && HI(a) < HI(m)) m = a;
        if (b < nl && HI(b) < HI(m)) m = b;
        if (m == c) break;
        SWAP(c, m);
        c = m;
      }
    }
    at[t] = fl_alloc(&fl, l->buf->size, slot_align(l));
    if (fl.top > top) top = fl.top;
    size_t c = nl++; /* push */
    live[c] = t;
    while (c && HI((c - 1) / 2) > HI(c)) {
      SWAP(c, (c - 1) / 2);
      c = (c - 1) / 2;
    }
  }
#undef SWAP
#undef HI
  free(fl.v), free(live);
  return top;
}

/* Placement in a given order (as TensorFlow Lite's greedy planners): each buffer into
 * the smallest gap that fits it among the buffers already placed whose lives overlap
 * its own, else above them all.  Largest first, big buffers leave no holes that only
 * small ones could have filled; longest-lived first, the buffers that span the
 * program sit together at the bottom, out of the way of the short-lived.  The placed
 * buffers are found by time (TimeTree), so a placement costs O(B log B) plus, per
 * pair of buffers that live together, O(log B). */
typedef struct {
  const Life *l;
  size_t i; /* in todo */
} Ranked;

/* Largest first; then by first use, then by name. */
static int by_size_first(const void *x, const void *y) {
  const Life *a = ((const Ranked *)x)->l, *b = ((const Ranked *)y)->l;
  if (a->buf->size != b->buf->size) return a->buf->size > b->buf->size ? -1 : 1;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return strcmp(a->buf->name, b->buf->name);
}

/* Longest-lived first; then largest first. */
static int by_life_first(const void *x, const void *y) {
  const Life *a = ((const Ranked *)x)->l, *b = ((const Ranked *)y)->l;
  size_t la = a->hi - a->lo, lb = b->hi - b->lo;
  if (la != lb) return la > lb ? -1 : 1;
  return by_size_first(x, y);
}

static int by_span_off(const void *x, const void *y) {
  uint64_t a = ((const Span *)x)->off, b = ((const Span *)y)->off;
  return a < b ? -1 : a > b;
}

/* The placed buffers by time: a segment tree over (compressed) schedule positions,
 * each placed buffer listed at the O(log P) nodes whose ranges together make its life.
 * A node's list is a chain through one pool of entries. */
typedef struct {
  uint32_t *head;   /* per node: its first entry + 1 (0: none) */
  uint32_t *listed; /* per node: buffers listed in its subtree */
  struct {
    uint32_t next; /* the node's next entry + 1 (0: none) */
    uint32_t item; /* a todo index */
  } *pool;
  size_t used, cap;
  size_t leaves; /* positions */
} TimeTree;

static void tt_insert(TimeTree *tt, size_t v, size_t nl, size_t nr, size_t lo, size_t hi, size_t item) {
  if (hi < nl || nr < lo) return;
  tt->listed[v]++;
  if (lo <= nl && nr <= hi) {
    if (tt->used == tt->cap) {
      tt->cap = tt->cap ? 2 * tt->cap : 1024;
      if (!(tt->pool = realloc(tt->pool, tt->cap * sizeof *tt->pool))) PG_BUG("out of memory");
    }
    tt->pool[tt->used].next = tt->head[v];
    tt->pool[tt->used].item = (uint32_t)item;
    tt->head[v] = (uint32_t)++tt->used;
    return;
  }
  size_t mid = nl + (nr - nl) / 2;
  tt_insert(tt, 2 * v, nl, mid, lo, hi, item);
  tt_insert(tt, 2 * v + 1, mid + 1, nr, lo, hi, item);
}

/* Appends to out where each buffer placed whose life overlaps [lo, hi] sits (at[],
 * its size), once (seen: per buffer, the last query that listed it). */
static void tt_query(const TimeTree *tt, size_t v, size_t nl, size_t nr, size_t lo, size_t hi, size_t query,
                     size_t *seen, Life **todo, const uint64_t *at, SpanVec *out) {
  if (hi < nl || nr < lo || !tt->listed[v]) return;
  for (uint32_t e = tt->head[v]; e; e = tt->pool[e - 1].next) {
    size_t i = tt->pool[e - 1].item;
    if (seen[i] != query) seen[i] = query, span_push(out, (Span){at[i], at[i] + todo[i]->buf->size});
  }
  if (nl == nr) return;
  size_t mid = nl + (nr - nl) / 2;
  tt_query(tt, 2 * v, nl, mid, lo, hi, query, seen, todo, at, out);
  tt_query(tt, 2 * v + 1, mid + 1, nr, lo, hi, query, seen, todo, at, out);
}

/* Compressed times: the distinct first and last uses, in order, so that the tree has
 * at most 2B leaves however long the schedule.  Overlap depends only on how the ends
 * compare, which the compression keeps. */
typedef struct {
  size_t *lo, *hi; /* per todo index */
  size_t leaves;
} Times;

static int by_size_t(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  return a < b ? -1 : a > b;
}

static size_t rank_of(const size_t *sorted, size_t n, size_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static Times compress_times(Life **todo, size_t nt) {
  Times tm = {malloc((nt ? nt : 1) * sizeof *tm.lo), malloc((nt ? nt : 1) * sizeof *tm.hi), 0};
  size_t *ends = malloc((2 * nt + 1) * sizeof *ends);
  if (!tm.lo || !tm.hi || !ends) PG_BUG("out of memory");
  for (size_t t = 0; t < nt; t++) ends[2 * t] = todo[t]->lo, ends[2 * t + 1] = todo[t]->hi;
  qsort(ends, 2 * nt, sizeof *ends, by_size_t);
  size_t n = 0;
  for (size_t i = 0; i < 2 * nt; i++)
    if (n == 0 || ends[n - 1] != ends[i]) ends[n++] = ends[i];
  for (size_t t = 0; t < nt; t++) tm.lo[t] = rank_of(ends, n, todo[t]->lo), tm.hi[t] = rank_of(ends, n, todo[t]->hi);
  tm.leaves = n ? n : 1;
  free(ends);
  return tm;
}

static uint64_t place_ranked(Life **todo, size_t nt, const Times *tm, int (*order_by)(const void *, const void *),
                             Dags *dags, uint64_t *at) {
  Ranked *order = malloc((nt ? nt : 1) * sizeof *order);
  size_t *seen = malloc((nt ? nt : 1) * sizeof *seen), leaves = tm->leaves;
  bool *placed = calloc(nt ? nt : 1, sizeof *placed);
  size_t words = 1;
  for (size_t r = 0; r < dags->n; r++) {
    dags->v[r].stamp = 0;
    if (dags->v[r].words > words) words = dags->v[r].words;
  }
  DagQuery dq = {dags, placed, seen, calloc(words, sizeof(uint64_t)), calloc(words, sizeof(uint64_t))};
  if (!order || !seen || !placed || !dq.r || !dq.d) PG_BUG("out of memory");
  for (size_t t = 0; t < nt; t++) order[t] = (Ranked){todo[t], t}, seen[t] = SIZE_MAX;
  qsort(order, nt, sizeof *order, order_by);
  TimeTree tt = {.head = calloc(4 * leaves, sizeof *tt.head), .listed = calloc(4 * leaves, sizeof *tt.listed),
                 .leaves = leaves};
  if (!tt.head || !tt.listed) PG_BUG("out of memory");
  SpanVec beside = {0};
  uint64_t top = 0;
  for (size_t t = 0; t < nt; t++) {
    const Life *l = order[t].l;
    size_t lo = tm->lo[order[t].i], hi = tm->hi[order[t].i];
    beside.n = 0;
    tt_query(&tt, 1, 0, leaves - 1, lo, hi, t, seen, todo, at, &beside);
    dag_query(&dq, l, t, todo, at, &beside); /* and those it may run at once with */
    if (beside.n > 1) qsort(beside.v, beside.n, sizeof *beside.v, by_span_off);
    uint64_t size = l->buf->size, align = slot_align(l), reach = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (size_t k = 0; k < beside.n; k++) { /* reach: the end of those below so far */
      const Span *q = &beside.v[k];
      uint64_t start = align_up(reach, align);
      if (q->off >= start + size && q->off - reach < best_gap) best = start, best_gap = q->off - reach;
      if (q->end > reach) reach = q->end;
    }
    at[order[t].i] = best != UINT64_MAX ? best : align_up(reach, align);
    if (at[order[t].i] + size > top) top = at[order[t].i] + size;
    tt_insert(&tt, 1, 0, leaves - 1, lo, hi, order[t].i);
    placed[order[t].i] = true;
  }
  free(tt.head), free(tt.listed), free(tt.pool), free(beside.v), free(order), free(seen), free(placed);
  free(dq.r), free(dq.d);
  return top;
}

/* A buffer's birth or death on the schedule, for lives(). */
typedef struct {
  size_t at;
  uint64_t bytes;
  bool birth;
} Event;

/* By position; deaths (at hi + 1) before births at the same position. */
static int by_event(const void *x, const void *y) {
  const Event *a = x, *b = y;
  if (a->at != b->at) return a->at < b->at ? -1 : 1;
  return (int)a->birth - (int)b->birth;
}

/* The most bytes live at one schedule position (no placement's arena is smaller), and
 * how many pairs of buffers live together (what placing in an order costs). */
static uint64_t lives(Life **todo, size_t nt, uint64_t *pairs) {
  Event *ev = malloc((2 * nt + 1) * sizeof *ev);
  if (!ev) PG_BUG("out of memory");
  for (size_t t = 0; t < nt; t++) {
    ev[2 * t] = (Event){todo[t]->lo, todo[t]->buf->size, true};
    ev[2 * t + 1] = (Event){todo[t]->hi + 1, todo[t]->buf->size, false};
  }
  qsort(ev, 2 * nt, sizeof *ev, by_event);
  uint64_t now = 0, most = 0, count = 0;
  *pairs = 0;
  for (size_t i = 0; i < 2 * nt; i++) {
    if (ev[i].birth) {
      *pairs += count++;
      if ((now += ev[i].bytes) > most) most = now;
    } else {
      now -= ev[i].bytes, count--;
    }
  }
  free(ev);
  return most;
}

/* Every buffer's live range, and its uses in graph regions that are not chains, each
 * such region made a Dag (into dags) where it can be (else a use there spans it). */
static void walk(PgProgram *p, Life *life, Walk *w, Dags *dags) {
  for (size_t i = 0; i < p->buffers.n; i++) {
    free(life[i].uses);
    life[i] = (Life){.buf = p->buffers.v[i]};
  }
  w->pools = 0;
  size_t nroot = p->graphs.n ? p->graphs.v[0]->nodes.n : 0, pos = 0;
  size_t *rank = calloc(nroot + 1, sizeof *rank);
  const PgNode **order = calloc(nroot + 1, sizeof *order);
  dags->v = calloc(p->regions.n + 1, sizeof *dags->v);
  dags->n = 0;
  if (!rank || !order || !dags->v) PG_BUG("out of memory");
  for (size_t ri = 0; ri < p->regions.n; ri++) {
    const PgRegion *r = p->regions.v[ri];
    bool whole = r->graph && !is_chain(r);
    size_t width = 0, exclusives = 0; /* positions: one per node, one per body of an exclusive node */
    for (size_t k = 0; k < r->nodes.n; k++) exclusives += exclusive(r->nodes.v[k]);
    bool dag = whole && !exclusives && make_dag(r, rank, order, &dags->v[dags->n]);
    if (dag) whole = false, dags->n++;
    bool split = !whole || exclusives == 1;
    for (size_t k = 0; k < r->nodes.n; k++)
      width += split && exclusive(r->nodes.v[k]) ? r->nodes.v[k]->u.cond.bodies.n : 1;
    size_t start = pos, end = pos + width - 1;
    w->region = ri;
    w->region_graph = r->graph;
    w->dag = dag ? (long)dags->n - 1 : -1;
    for (size_t k = 0; k < r->nodes.n; k++) {
      const PgNode *n = dag ? order[k] : r->nodes.v[k];
      w->node = (uint32_t)k;
      if (split && exclusive(n)) {
        use_bodies(w, n, pos);
        pos += n->u.cond.bodies.n;
        continue;
      }
      w->lo = whole ? start : pos;
      w->hi = whole ? end : pos;
      use_node(w, n);
      pos++;
    }
  }
  free(rank), free(order);
}

static size_t nroot_of(const PgProgram *p) { return p->graphs.n ? p->graphs.v[0]->nodes.n : 0; }

static void free_dags(Dags *dags) {
  for (size_t r = 0; r < dags->n; r++)
    free(dags->v[r].anc), free(dags->v[r].desc), free(dags->v[r].at), free(dags->v[r].users);
  free(dags->v);
  *dags = (Dags){0};
}

void pg_memplan(PgProgram *p) {
  size_t nb = p->buffers.n;
  Walk w = {0};
  Life *life = calloc(nb ? nb : 1, sizeof *life);
  Life **todo = calloc(nb ? nb : 1, sizeof *todo);
  if (!life || !todo) PG_BUG("out of memory");
  w.lives = pg_map_new(p->arena);
  for (size_t i = 0; i < nb; i++) {
    p->buffers.v[i]->planned = false;
    p->buffers.v[i]->offset = 0;
    pg_map_put(w.lives, p->buffers.v[i]->name, &life[i]);
  }

  PgMemPlan plan = {0};
  Dags dags = {0};
  walk(p, life, &w, &dags);
  size_t nt = 0;
  for (size_t i = 0; i < nb; i++) {
    if (!life[i].used) continue;
    todo[nt++] = &life[i];
    plan.sum_bytes += life[i].buf->size;
    if (!life[i].in_graph) w.pools += life[i].buf->size;
  }
  qsort(todo, nt, sizeof *todo, by_start);
  for (size_t r = 0; r < dags.n; r++) { /* each region's node -> the buffers it uses */
    Dag *g = &dags.v[r];
    if (!(g->at = calloc(g->n + 1, sizeof *g->at))) PG_BUG("out of memory");
  }
  for (size_t t = 0; t < nt; t++)
    for (size_t u = 0; u < todo[t]->nuses; u++) dags.v[todo[t]->uses[u].dag].at[todo[t]->uses[u].node + 1]++;
  for (size_t r = 0; r < dags.n; r++) {
    Dag *g = &dags.v[r];
    for (size_t k = 0; k < g->n; k++) g->at[k + 1] += g->at[k];
    if (!(g->users = calloc(g->at[g->n] + 1, sizeof *g->users))) PG_BUG("out of memory");
  }
  size_t *fill = calloc(nroot_of(p) + 1, sizeof *fill);
  if (!fill) PG_BUG("out of memory");
  for (size_t r = 0; r < dags.n; r++) {
    Dag *g = &dags.v[r];
    memset(fill, 0, (g->n + 1) * sizeof *fill);
    for (size_t t = 0; t < nt; t++)
      for (size_t u = 0; u < todo[t]->nuses; u++)
        if (todo[t]->uses[u].dag == r) {
          size_t k = todo[t]->uses[u].node;
          g->users[g->at[k] + fill[k]++] = t;
        }
  }
  free(fill);
  uint64_t pairs;
  plan.live_bytes = lives(todo, nt, &pairs);
  /* Every way; the smallest arena wins (the earlier way on a tie).  The ways in an order
   * cost O(log B) per pair of buffers that live together: past PLACE_PAIRS (buffers
   * alive all at once by the thousand, as in a wide graph region, where the scan
   * reuses nothing anyway) only the scan runs.  Where a region is a Dag, the scan would
   * miss what may run at once: only the ways in an order run. */
  uint64_t *at[PG_PLACE_COUNT];
  for (int k = 0; k < PG_PLACE_COUNT; k++)
    if (!(at[k] = calloc(nt ? nt : 1, sizeof *at[k]))) PG_BUG("out of memory");
  if (!dags.n) {
    plan.placed_bytes[PG_PLACE_TIME] = place_scan(todo, nt, at[PG_PLACE_TIME]);
    plan.tried[PG_PLACE_TIME] = true;
  }
  /* a way that reaches the floor cannot be beaten: the later ones are not tried */
  if (dags.n || (pairs <= PLACE_PAIRS && plan.placed_bytes[PG_PLACE_TIME] > plan.live_bytes)) {
    Times tm = compress_times(todo, nt);
    plan.placed_bytes[PG_PLACE_SIZE] = place_ranked(todo, nt, &tm, by_size_first, &dags, at[PG_PLACE_SIZE]);
    plan.tried[PG_PLACE_SIZE] = true;
    if (plan.placed_bytes[PG_PLACE_SIZE] > plan.live_bytes) {
      plan.placed_bytes[PG_PLACE_LIFE] = place_ranked(todo, nt, &tm, by_life_first, &dags, at[PG_PLACE_LIFE]);
      plan.tried[PG_PLACE_LIFE] = true;
    }
    free(tm.lo), free(tm.hi);
  }
  int best = -1;
  for (int k = 0; k < PG_PLACE_COUNT; k++)
    if (plan.tried[k] && (best < 0 || plan.placed_bytes[k] < plan.placed_bytes[best])) best = k;
  plan.placement = (PgPlacement)best;
  for (size_t t = 0; t < nt; t++) {
    todo[t]->buf->offset = at[plan.placement][t];
    todo[t]->buf->planned = true;
  }
  plan.arena_bytes = plan.placed_bytes[plan.placement];
  for (int k = 0; k < PG_PLACE_COUNT; k++) free(at[k]);
  plan.buffers = nt;
  plan.pools_bytes = w.pools;
  plan.dag_regions = dags.n;
  p->mem = plan;
  for (size_t i = 0; i < nb; i++) free(life[i].uses);
  free_dags(&dags);
  free(todo), free(life);
}

/* ---- what one path through a conditional reaches ---- */

static void reach_cb(void *ctx, PgBuffer *b) {
  uint64_t *top = ctx;
  if (b && b->planned && b->offset + b->size > *top) *top = b->offset + b->size;
}

/* Which body of conditional node c node n runs in (-1: none of c's). */
static int body_of(const PgNode *c, const PgNode *n) {
  for (const PgGraph *g = n->graph; g->owner; g = g->owner->graph)
    if (g->owner == c)
      for (size_t b = 0; b < c->u.cond.bodies.n; b++)
        if (c->u.cond.bodies.v[b] == g) return (int)b;
  return -1;
}

uint64_t pg_memplan_reach(const PgProgram *p, const PgNode *c, size_t body) {
  uint64_t top = 0;
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *n = p->graphs.v[gi]->nodes.v[i];
      int b = body_of(c, n);
      if (b < 0 || (size_t)b == body) pg_node_uses(n, reach_cb, &top);
    }
  return top;
}

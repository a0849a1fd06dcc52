/*
 * emit_c.c -- `pgcc --emit=c`: C that builds and launches the program through
 * libpgrt (runtime/pgrt.h).
 *
 * The output is data and three small functions.  Module images are embedded (so
 * the deployed binary needs no files); every buffer, kernel and node becomes one
 * table entry written with designated initializers and a comment naming where it
 * came from; kernel parameters are their constant bytes plus the places where this
 * call's pointers and scalars go (relocations).  NAME_init, NAME_run and
 * NAME_destroy only pack their arguments for pgrt_init, pgrt_run and pgrt_destroy.
 * The same input gives the same bytes.
 *
 * pg_c_check() runs first and reports, located, whatever this generator cannot
 * express yet; pg_emit_c() then cannot fail.
 */
#include "pgcc.h"
#include "../runtime/half.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


/* A scalar that is a member of NAME_args: bound per call, or a callback. */
static bool arg_scalar(const PgScalar *s) { return s->is_input || s->is_callback; }

/* ---- what can be generated ---- */

/* A collective is captured once, at init (docs/codegen.md): its buffers must keep their
 * addresses for the context's life (weights, the arena; pg_stage_collectives put those of
 * the root graph's collectives that were per-call buffers into the arena), be device
 * memory, and it runs in the root graph. */
static bool fits_collective(PgDiag *d, const PgNode *n) {
  const PgCollective *c = n->u.libcall.coll;
  const PgPtr ends[2] = {c->send, c->recv};
  const PgLoc locs[2] = {c->send_loc, c->recv_loc};
  for (int k = 0; k < 2; k++)
    if (ends[k].buf->role == PG_ROLE_HOST) {
      pg_error(d, locs[k], "node '%s': a collective's %s buffer '%s' is host memory; C generation wants device "
               "memory: an intermediate, a workspace or a weight (captured once, at init), or an input or output "
               "(staged through the arena)", n->name, k ? "recv" : "send", ends[k].buf->name);
      return false;
    }
  if (n->graph->owner) {
    pg_error(d, n->loc, "node '%s': a collective runs in the root graph, not inside the body of '%s'", n->name,
             n->graph->owner->name);
    return false;
  }
  for (int k = 0; k < 2; k++)
    if (pg_per_call(ends[k].buf))
      PG_BUG("collective '%s': its %s buffer '%s' is a per-call buffer (pg_stage_collectives stages those)", n->name,
             k ? "recv" : "send", ends[k].buf->name);
  return true;
}

static bool fits_c(PgDiag *d, const PgNode *n) {
  switch (n->kind) {
  case PG_KERNEL:
    /* without arguments (DOT input) the caller gives them at init */
    if (!n->u.kernel.grid[0]) {
      pg_error(d, n->loc, "node '%s': no launch dimensions given (a DOT dump has them with the kernel-params or "
                          "verbose flags)", n->name);
      return false;
    }
    return true;
  case PG_MEMCPY:
    if (!n->u.memcpy.has_ptrs) {
      pg_error(d, n->loc, "node '%s': the copy's operands are not known (a DOT dump has them with the verbose or "
                          "memcpy-params flags)", n->name);
      return false;
    }
    if (!n->u.memcpy.src.buf || !n->u.memcpy.dst.buf) {
      pg_error(d, n->loc, "node '%s': a copy from or to a null pointer", n->name);
      return false;
    }
    if (n->u.memcpy.src_pitch && n->u.memcpy.src_pitch < n->u.memcpy.width) {
      pg_error(d, n->loc, "node '%s': source rows %" PRIu64 " bytes apart overlap rows of %" PRIu64 " bytes", n->name,
               n->u.memcpy.src_pitch, n->u.memcpy.width);
      return false;
    }
    if (n->u.memcpy.dst_pitch && n->u.memcpy.dst_pitch < n->u.memcpy.width) {
      pg_error(d, n->loc, "node '%s': destination rows %" PRIu64 " bytes apart overlap rows of %" PRIu64 " bytes",
               n->name, n->u.memcpy.dst_pitch, n->u.memcpy.width);
      return false;
    }
    return true;
  case PG_MEMSET:
    if (!n->u.memset.has_dst || !n->u.memset.dst.buf || !n->u.memset.elem) {
      pg_error(d, n->loc, "node '%s': only memsets of a known buffer with a known element size can be generated", n->name);
      return false;
    }
    if (n->u.memset.pitch && n->u.memset.pitch < n->u.memset.width * n->u.memset.elem) {
      pg_error(d, n->loc, "node '%s': rows %" PRIu64 " bytes apart overlap rows of %" PRIu64 " bytes", n->name,
               n->u.memset.pitch, n->u.memset.width * n->u.memset.elem);
      return false;
    }
    return true;
  case PG_HOST: return true; /* the caller binds the function on every call */
  case PG_EMPTY: return true;
  case PG_EVENT_RECORD:
  case PG_EVENT_WAIT:
    if (n->u.event.event) return true;
    pg_error(d, n->loc, "node '%s': the event is not known (the dump was made without event handles)", n->name);
    return false;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE: /* the memory plan put the buffer in the arena: only the ordering is left */
    if (n->u.mem.buf && n->u.mem.buf->planned) return true;
    pg_error(d, n->loc, "node '%s': the allocation's buffer is not known", n->name);
    return false;
  case PG_CHILD: return true;
  case PG_CONDITIONAL:
    if (n->u.cond.condition) return true;
    pg_error(d, n->loc, "node '%s': the conditional's condition is not known (declare one with 'condition NAME "
                        "default N;', name it with 'condition NAME', and pass it to the kernel that sets it)", n->name);
    return false;
  case PG_LIBCALL:
    if (!n->u.libcall.coll) {
      pg_error(d, n->loc, "node '%s': library call '%s' cannot be generated (only the NCCL collectives "
                          "ncclAllReduce, ncclAllGather and ncclReduceScatter)", n->name, n->u.libcall.fn);
      return false;
    }
    return fits_collective(d, n);
  case PG_HOSTOP:
    if (pg_is_hostop(n, "sync") || pg_is_hostop(n, "guard")) return true;
    pg_error(d, n->loc, "node '%s': host operation '%s' cannot be generated (only 'sync' and 'guard')", n->name,
             n->u.hostop.op);
    return false;
  default:
    pg_error(d, n->loc, "node '%s': %s nodes cannot be generated yet", n->name, pg_kinds[n->kind].name);
    return false;
  }
}

/* CUDA's rules for what a body may hold. */
static void fits_body(PgDiag *d, const PgNode *n) {
  const PgNode *owner = n->graph->owner;
  if (n->kind == PG_HOSTOP) {
    pg_error(d, n->loc, "node '%s': a host operation cannot be inside the body of '%s'", n->name, owner->name);
    return;
  }
  if (owner->kind == PG_CONDITIONAL && (n->kind == PG_EVENT_RECORD || n->kind == PG_EVENT_WAIT || n->kind == PG_HOST)) {
    pg_error(d, n->loc, "node '%s': a conditional body holds no %s nodes (CUDA: only kernels, copies, memsets, "
                        "empty, child and conditional nodes)", n->name, n->kind == PG_HOST ? "host" : "event");
    return;
  }
  if (n->kind == PG_CONDITIONAL)
    for (const PgNode *up = owner; up; up = up->graph->owner)
      if (up->kind == PG_CHILD) {
        pg_error(d, n->loc, "node '%s': a conditional node cannot be inside a child graph ('%s'); CUDA allows it "
                            "only in the root graph and in conditional bodies", n->name, up->name);
        return;
      }
}

/* A host node is a member of NAME_args, beside the per-call buffers and scalars. */
static void fits_args(PgDiag *d, const PgProgram *p, const PgNode *n) {
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (pg_per_call(b) && strcmp(b->name, n->name) == 0)
      pg_error(d, n->loc, "host node '%s' has the name of a buffer, and both would be members of the call's "
                          "arguments: rename one", n->name);
  }
  for (size_t i = 0; i < p->scalars.n; i++)
    if (arg_scalar(p->scalars.v[i]) && strcmp(p->scalars.v[i]->name, n->name) == 0)
      pg_error(d, n->loc, "host node '%s' has the name of a scalar, and both would be members of the call's "
                          "arguments: rename one", n->name);
  for (size_t i = 0; i < p->dims.n; i++)
    if (strcmp(p->dims.v[i]->name, n->name) == 0)
      pg_error(d, n->loc, "host node '%s' has the name of a dim, and both would be members of the call's "
                          "arguments: rename one", n->name);
}

/* The root node under which n runs (n itself in the root graph). */
static const PgNode *top_of(const PgNode *n) {
  while (n->graph->owner) n = n->graph->owner;
  return n;
}

/* A kernel that sets a condition must run in the same CUDA graph as the
 * conditional node: the handle belongs to that graph. */
static void fits_condition_args(PgDiag *d, const PgProgram *p, const PgNode *n) {
  for (size_t i = 0; i < n->u.kernel.args.n; i++) {
    const PgArg *a = &n->u.kernel.args.v[i];
    if (a->kind != PG_ARG_COND) continue;
    const PgNode *mine = top_of(n), *theirs = top_of(a->cond->node);
    if (mine->region != theirs->region || !p->regions.v[mine->region]->graph)
      pg_error(d, a->loc, "node '%s' sets condition '%s' but does not run in the same CUDA graph as '%s'", n->name,
               a->cond->name, a->cond->node->name);
  }
}

int pg_c_check(const PgProgram *p, PgDiag *d) {
  int errors = d->errors;
  if (p->comms.n > 1) /* one id per communicator: NAME_init takes one */
    pg_error(d, p->comms.v[1]->loc, "comm '%s': C generation takes one comm per program for now (NAME_init takes one "
             "NCCL id), and '%s' is the first", p->comms.v[1]->name, p->comms.v[0]->name);
  for (size_t i = 0; i < p->kernels.n; i++) /* found by name at init, among the modules there are */
    if (!p->kernels.v[i]->module && !p->modules.n)
      pg_warning(d, p->kernels.v[i]->loc,
                 "kernel '%s' names no module and there are none (--module=FILE): its init will not find it",
                 p->kernels.v[i]->name);
  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    for (size_t i = 0; i < g->nodes.n && !pg_too_many_errors(d); i++) {
      const PgNode *n = g->nodes.v[i];
      if (!fits_c(d, n)) continue;
      if (gi > 0) fits_body(d, n);
      if (gi == 0 && n->kind == PG_CONDITIONAL && !p->regions.v[n->region]->graph)
        pg_error(d, n->loc, "node '%s': a conditional node runs only inside a CUDA graph, and its region is eager",
                 n->name);
      if (gi > 0 && n->kind == PG_CONDITIONAL && n->u.cond.dim) /* libpgrt picks buckets in the root's launches */
        pg_error(d, n->loc, "node '%s': a bucket switch (dim '%s') belongs in the root graph, not inside the body "
                            "of '%s'", n->name, n->u.cond.dim->name, n->graph->owner->name);
      if (n->kind == PG_KERNEL && n->u.kernel.has_args) fits_condition_args(d, p, n);
      if (n->kind == PG_HOST) fits_args(d, p, n);
    }
  }
  return d->errors - errors;
}

/* ---- writing ---- */

typedef struct {
  const PgProgram *p;
  FILE *f;
  const char *name;
  const char *input;  /* the input's name, as the file's first comment gives it */
  PgMap *buffers, *kernels, *scalars, *conds; /* name -> index + 1 (scalars: slot + 1: the per-call
                                                 ones, then the read ones) */
  int **pos;       /* by graph id, then node index: position in the node table */
  int *body_at;    /* by graph id: position in the body table (bodies only) */
  PG_VEC(const PgNode *) order;  /* the node table: root regions, then bodies */
  PG_VEC(const PgGraph *) bodies;
  PG_VEC(int) body_first;        /* where each body's nodes start in `order` */
  size_t deps_at;                /* the next node's first entry in NAME_deps */
  bool dep_kinds;                /* NAME_dep_kinds is written: some kept dependency is not a full one */
  size_t caller_args, host_nodes; /* kernel nodes without arguments; host nodes (plan_tables) */
  int host_next;                 /* the next host node's slot in NAME_args (emit_node) */
  char *line;                    /* the hot path's text, written with one fwrite (lput...) */
  size_t line_len, line_cap;
} W;

/* The per-node text of a large program is most of the output: it is assembled here
 * without printf, then written at once. */
static void lgrow(W *w, size_t n);
static inline void lputn(W *w, const char *s, size_t n) {
  if (w->line_len + n > w->line_cap) lgrow(w, n);
  memcpy(w->line + w->line_len, s, n);
  w->line_len += n;
}
/* inline, so that a literal's strlen is folded */
static inline void lput(W *w, const char *s) { lputn(w, s, strlen(s)); }
static void lgrow(W *w, size_t n) {
  size_t cap = w->line_cap ? w->line_cap : 4096;
  while (cap < w->line_len + n) cap *= 2;
  char *nl = realloc(w->line, cap);
  if (!nl) PG_BUG("out of memory for %zu bytes of output", cap);
  w->line = nl, w->line_cap = cap;
}
static void lnum(W *w, uint64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  char d[24], *e = d + sizeof d, *q = e;
  for (; v >= 100; v /= 100) q -= 2, memcpy(q, pairs + 2 * (v % 100), 2); /* two digits a division */
  if (v >= 10)
    q -= 2, memcpy(q, pairs + 2 * v, 2);
  else
    *--q = (char)('0' + v);
  lputn(w, q, (size_t)(e - q));
}
static void lint(W *w, int64_t v) {
  if (v < 0) lputn(w, "-", 1);
  lnum(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}
static void lflush(W *w) {
  if (!w->line_len) return;
  fwrite(w->line, 1, w->line_len, w->f);
  w->line_len = 0;
}

static int idx(PgMap *m, const char *name) { return (int)(intptr_t)pg_map_get(m, name) - 1; }
static int node_at(const W *w, const PgNode *n) { return w->pos[n->graph->id][n->index]; }
static int body_at(const W *w, const PgGraph *g) { return w->body_at[g->id]; }

/* A body graph's nodes in a valid execution order (Kahn's algorithm, first come
 * first served, so the order is deterministic). */
static void push_body(W *w, const PgGraph *g) {
  PgArena *a = w->p->arena;
  size_t n = g->nodes.n, head = 0;
  uint32_t *indeg = pg_xcalloc(n ? n : 1, sizeof *indeg);
  w->body_at[g->id] = (int)w->bodies.n;
  pg_vec_push(a, w->bodies, g);
  pg_vec_push(a, w->body_first, (int)w->order.n);
  size_t start = w->order.n;
  for (size_t i = 0; i < n; i++) indeg[i] = (uint32_t)g->nodes.v[i]->npred;
  for (size_t i = 0; i < n; i++)
    if (!indeg[i]) pg_vec_push(a, w->order, g->nodes.v[i]);
  for (head = start; head < w->order.n; head++) {
    const PgNode *u = w->order.v[head];
    for (size_t s = 0; s < u->nsucc; s++)
      if (--indeg[pg_succs(u)[s]->index] == 0) pg_vec_push(a, w->order, pg_succs(u)[s]);
  }
  if (w->order.n - start != n) PG_BUG("body graph '%s' has a cycle after verification", g->name);
  for (size_t i = start; i < w->order.n; i++) w->pos[g->id][w->order.v[i]->index] = (int)i;
  free(indeg);
}

/* The node table: the root's nodes region by region, then every body after the
 * node that owns it (a conditional's bodies one after another).  Its order and
 * positions are malloc'd and given back by free_tables at the end of the file they
 * serve: the .h and the .c each plan them, and at a million nodes two arena copies
 * were 23 MiB of the compiler's peak. */
static void plan_tables(W *w) {
  const PgProgram *p = w->p;
  PgArena *a = p->arena;
  w->pos = pg_xcalloc(p->graphs.n, sizeof *w->pos);
  w->body_at = pg_arena_alloc(a, p->graphs.n * sizeof *w->body_at);
  size_t all = 0;
  for (size_t g = 0; g < p->graphs.n; g++) {
    w->pos[g] = pg_xcalloc(p->graphs.v[g]->nodes.n + 1, sizeof **w->pos);
    all += p->graphs.v[g]->nodes.n;
  }
  w->order.v = pg_xcalloc(all ? all : 1, sizeof *w->order.v); /* every node, once */
  w->order.cap = all ? all : 1;
  for (size_t r = 0; r < p->regions.n; r++)
    for (size_t k = 0; k < p->regions.v[r]->nodes.n; k++) {
      const PgNode *n = p->regions.v[r]->nodes.v[k];
      w->pos[0][n->index] = (int)w->order.n;
      pg_vec_push(a, w->order, n);
    }
  for (size_t i = 0; i < w->order.n; i++) { /* grows as bodies are added */
    const PgNode *n = w->order.v[i];
    w->caller_args += n->kind == PG_KERNEL && !n->u.kernel.has_args;
    w->host_nodes += n->kind == PG_HOST;
    if (n->kind == PG_CHILD) push_body(w, n->u.child.body);
    if (n->kind == PG_CONDITIONAL)
      for (size_t b = 0; b < n->u.cond.bodies.n; b++) push_body(w, n->u.cond.bodies.v[b]);
  }
}

/* What plan_tables malloc'd. */
static void free_tables(W *w) {
  for (size_t g = 0; g < w->p->graphs.n; g++) free(w->pos[g]);
  free(w->pos);
  free(w->order.v);
}

typedef PG_VEC(char *) Strs;

/* A kernel node's parameter block: its constant bytes into blk (param_bytes of
 * them), and the initializers of its pointer relocations and per-call scalars. */
static uint32_t param_bytes(const PgKernel *k) {
  uint32_t bytes = 0;
  for (size_t q = 0; q < k->params.n; q++)
    if (k->params.v[q].offset + k->params.v[q].size > bytes) bytes = k->params.v[q].offset + k->params.v[q].size;
  return bytes;
}

static void encode(const char *lit, PgType t, unsigned size, unsigned char *out);

/* libpgrt's names of pgcc's relocation kinds (pgrt.h's pgrt_reloc_kind, same order) */
static const char *const reloc_names[PG_RELOC_KIND_COUNT] = {
#define X(e, name, size, shift) [PG_RELOC_##e] = "PGRT_RELOC_" #e,
    PG_RELOC_KINDS(X)
#undef X
};

static void kernel_block(W *w, const PgNode *n, unsigned char *blk, Strs *relocs, Strs *scalars, Strs *conds) {
  const PgKernel *k = n->u.kernel.kernel;
  PgArena *a = w->p->arena;
  for (size_t q = 0; q < k->params.n; q++) {
    const PgParam *pa = &k->params.v[q];
    const PgArg *arg = &n->u.kernel.args.v[q];
    switch (arg->kind) {
    case PG_ARG_INT:
    case PG_ARG_FLOAT: encode(arg->lit, pa->type, pa->size, blk + pa->offset); break;
    case PG_ARG_PTR:
      if (arg->ptr.buf)
        pg_vec_push(a, *relocs, pg_arena_printf(a, "{%" PRIu32 ", %d, %" PRIu64 ", %s}", pa->offset,
                                                idx(w->buffers, arg->ptr.buf->name), arg->ptr.offset,
                                                reloc_names[PG_RELOC_ABS64]));
      break;
    case PG_ARG_SCALAR:
      if (arg->scalar->is_input || pg_scalar_is_read(arg->scalar) || arg->scalar->bucket)
        pg_vec_push(a, *scalars, pg_arena_printf(a, "{%" PRIu32 ", %" PRIu32 ", %d}", pa->offset, pa->size,
                                                 idx(w->scalars, arg->scalar->name)));
      else if (arg->scalar->value)
        encode(arg->scalar->value, pa->type, pa->size, blk + pa->offset);
      break;
    case PG_ARG_COND:
      pg_vec_push(a, *conds, pg_arena_printf(a, "{%" PRIu32 ", %d}", pa->offset, idx(w->conds, arg->cond->name)));
      break;
    case PG_ARG_BYTES:
      for (uint32_t b = 0; b < pa->size && arg->lit[2 * b]; b++) {
        char hex[3] = {arg->lit[2 * b], arg->lit[2 * b + 1], 0};
        blk[pa->offset + b] = (unsigned char)strtoul(hex, NULL, 16);
      }
      for (size_t r = 0; r < arg->ptrs.n; r++)
        if (arg->ptrs.v[r].buf)
          pg_vec_push(a, *relocs, pg_arena_printf(a, "{%" PRIu32 ", %d, %" PRIu64 ", %s}",
                                                  pa->offset + pa->ptrs.v[r].offset,
                                                  idx(w->buffers, arg->ptrs.v[r].buf->name), arg->ptrs.v[r].offset,
                                                  reloc_names[pa->ptrs.v[r].kind]));
      break;
    }
  }
}

static void cname(FILE *f, const char *s) { /* a .graph name as a C identifier */
  for (; *s; s++) fputc(*s == '.' ? '_' : *s, f);
}

static void cstring(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n\"\n    \"", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\%03o", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* s as a C string literal, through the line buffer (cstring() when it needs escapes) */
static void lquoted(W *w, const char *s) {
  for (const char *c = s; *c; c++)
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
      lflush(w), cstring(w->f, s);
      return;
    }
  lput(w, "\""), lput(w, s), lput(w, "\"");
  if (w->line_len > 65536) lflush(w);
}

static const char *ctype(PgType t) {
  switch (t) {
  case PG_T_I8: return "int8_t";
  case PG_T_I16: return "int16_t";
  case PG_T_I32: return "int32_t";
  case PG_T_I64: return "int64_t";
  case PG_T_U8: case PG_T_BOOL: return "uint8_t";
  case PG_T_U16: case PG_T_F16: case PG_T_BF16: return "uint16_t";
  case PG_T_U32: return "uint32_t";
  case PG_T_U64: return "uint64_t";
  case PG_T_F32: return "float";
  case PG_T_F64: return "double";
  case PG_T_PTR: return "CUdeviceptr";
  default: return "uint64_t";
  }
}

/* The bytes of a literal of type t, little-endian, into out. */
static void encode(const char *lit, PgType t, unsigned size, unsigned char *out) {
  if (t == PG_T_F16 || t == PG_T_BF16) {
    /* rounded to nearest, ties to even, as CUDA's __float2half_rn and __float2bfloat16_rn
     * round, and as libpgrt converts (runtime/half.h) */
    double d = strtod(lit, NULL);
    uint16_t v = t == PG_T_F16 ? pg_half_from_double(d, PG_HALF_F16) : pg_half_from_double(d, PG_HALF_BF16);
    out[0] = (unsigned char)v, out[1] = (unsigned char)(v >> 8);
  } else if (t == PG_T_F32) {
    float v = (float)strtod(lit, NULL);
    memcpy(out, &v, 4);
  } else if (t == PG_T_F64) {
    double v = strtod(lit, NULL);
    memcpy(out, &v, 8);
  } else {
    bool neg = lit[0] == '-';
    bool hex = lit[neg] == '0' && (lit[neg + 1] == 'x' || lit[neg + 1] == 'X');
    uint64_t v = neg ? (uint64_t)strtoll(lit, NULL, hex ? 16 : 10) : strtoull(lit, NULL, hex ? 16 : 10);
    if (strchr(lit, '.') || (!hex && (strchr(lit, 'e') || strchr(lit, 'E')))) v = (uint64_t)(int64_t)strtod(lit, NULL);
    for (unsigned i = 0; i < size && i < 8; i++) out[i] = (unsigned char)(v >> (8 * i));
  }
}

/* len bytes as the initializer of an unsigned char array of exactly len: string literals
   of 96 source characters or so a line, printable bytes as they are and the rest (with '"',
   '\\' and '?', which could begin a trigraph under -std=c11) as three-digit octal escapes,
   which no digit after them can extend.  A compiler reads such a literal several times
   faster than a list of numbers (1.9 MB of modules: 0.3 s against 2.8 s with gcc 12); the
   array has no room for the literal's terminating null, which C leaves out then. */
static void emit_byte_string(FILE *f, const unsigned char *data, size_t len) {
  size_t col = 0;
  for (size_t k = 0; k < len; k++) {
    if (col == 0) fputs("\n    \"", f);
    unsigned char c = data[k];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') fputc(c, f), col++;
    else fprintf(f, "\\%03o", c), col += 4;
    if (col >= 96 || k + 1 == len) fputc('"', f), col = 0;
  }
}

static void emit_module(W *w, size_t i) {
  const PgModule *m = w->p->modules.v[i];
  FILE *f = w->f;
  size_t len = 0;
  char *data = NULL;
  if (m->kind == PG_MOD_LIBRARY) { /* nothing to embed: libpgrt opens the library at init */
    fprintf(f, "/* module %s: kernels inside the installed library \"%s\" */\n\n", m->name, m->library);
    return;
  }
  FILE *in = fopen(m->path, "rb");
  if (in) {
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    data = malloc((size_t)(n > 0 ? n : 0) + 1);
    len = data ? fread(data, 1, (size_t)n, in) : 0;
    fclose(in);
  }
  if (!data) PG_BUG("module '%s' was checked when read but cannot be read now", m->name);
  data[len] = 0;
  fprintf(f, "/* module %s: %s \"%s\"%s%s%s */\n", m->name, pg_module_kind_names[m->kind], m->file,
          m->sha256 ? " (sha256 " : "", m->sha256 ? m->sha256 : "", m->sha256 ? ")" : "");
  if (m->kind == PG_MOD_CUDA || m->kind == PG_MOD_PTX) {
    fprintf(f, "static const char %s_module_%zu[] =\n    ", w->name, i);
    cstring(f, data);
    fputs(";\n\n", f);
  } else if (len) {
    fprintf(f, "static const unsigned char %s_module_%zu[%zu] =", w->name, i, len);
    emit_byte_string(f, (const unsigned char *)data, len);
    fputs(";\n\n", f);
  } else {
    fprintf(f, "static const unsigned char %s_module_%zu[1] = {0};\n\n", w->name, i);
  }
  free(data);
  if (!m->globals.n) return;
  fprintf(f, "/* module %s: the bytes libpgrt writes over its globals once it has loaded */\n", m->name);
  for (size_t g = 0; g < m->globals.n; g++) {
    const PgGlobal *gl = &m->globals.v[g];
    fprintf(f, "static const unsigned char %s_module_%zu_global_%zu[%" PRIu32 "] = {", w->name, i, g, gl->size);
    for (uint32_t k = 0; k < gl->size; k++)
      fprintf(f, "%s0x%02x", k % 16 ? ", " : k ? ",\n    " : "\n    ", gl->bytes[k]);
    fputs("\n};\n", f);
  }
  fprintf(f, "static const pgrt_global %s_module_%zu_globals[%zu] = {\n", w->name, i, m->globals.n);
  for (size_t g = 0; g < m->globals.n; g++) {
    fputs("    {.name = ", f);
    cstring(f, m->globals.v[g].name);
    fprintf(f, ", .bytes = %s_module_%zu_global_%zu, .size = sizeof %s_module_%zu_global_%zu},\n", w->name, i, g,
            w->name, i, g);
  }
  fputs("};\n\n", f);
}

static void emit_kernel_tables(W *w, const PgNode *n, int at) {
  const PgKernel *k = n->u.kernel.kernel;
  FILE *f = w->f;
  uint32_t bytes = param_bytes(k), size = bytes ? bytes : 1;
  unsigned char *blk = calloc(size, 1);
  if (!blk) PG_BUG("out of memory");
  Strs relocs = {0}, scalars = {0}, conds = {0};
  kernel_block(w, n, blk, &relocs, &scalars, &conds);
  fprintf(f, "/* node %s: kernel %s <<<{%u, %u, %u}, {%u, %u, %u}, %u>>> */\n", n->name, k->name, n->u.kernel.grid[0],
          n->u.kernel.grid[1], n->u.kernel.grid[2], n->u.kernel.block[0], n->u.kernel.block[1], n->u.kernel.block[2],
          n->u.kernel.smem);
  fprintf(f, "static const unsigned char %s_params_%d[%" PRIu32 "] = {", w->name, at, size);
  for (uint32_t b = 0; b < size; b++) fprintf(f, "%s0x%02x", b ? ", " : "", blk[b]);
  fprintf(f, "};\nstatic const uint32_t %s_offsets_%d[] = {", w->name, at);
  for (size_t q = 0; q < k->params.n; q++) fprintf(f, "%s%" PRIu32, q ? ", " : "", k->params.v[q].offset);
  if (!k->params.n) fputc('0', f);
  fputs("};\n", f);
  if (relocs.n) {
    fprintf(f, "static const pgrt_reloc %s_relocs_%d[] = {", w->name, at);
    for (size_t r = 0; r < relocs.n; r++) fprintf(f, "%s%s", r ? ", " : "", relocs.v[r]);
    fputs("};\n", f);
  }
  for (size_t q = 0; q < k->params.n; q++) /* the .graph's don't-care bytes: in the block as captured */
    for (size_t d = 0; d < k->params.v[q].dontcare.n; d++)
      fprintf(f, "/* don't care, never patched: bytes %" PRIu32 "..%" PRIu32 " (parameter %zu) */\n",
              k->params.v[q].offset + k->params.v[q].dontcare.v[d].offset,
              k->params.v[q].offset + k->params.v[q].dontcare.v[d].offset + k->params.v[q].dontcare.v[d].size, q);
  if (scalars.n) {
    fprintf(f, "static const pgrt_scalar_ref %s_scalars_%d[] = {", w->name, at);
    for (size_t r = 0; r < scalars.n; r++) fprintf(f, "%s%s", r ? ", " : "", scalars.v[r]);
    fputs("};\n", f);
  }
  if (conds.n) {
    fprintf(f, "static const pgrt_cond_ref %s_conds_%d[] = {", w->name, at);
    for (size_t r = 0; r < conds.n; r++) fprintf(f, "%s%s", r ? ", " : "", conds.v[r]);
    fputs("};\n", f);
  }
  free(blk);
}

static int event_index(const PgProgram *p, const PgEvent *e) {
  for (size_t i = 0; i < p->events.n; i++)
    if (p->events.v[i] == e) return (int)i;
  PG_BUG("event '%s' is not in the program", e->name);
}

/* A dependency the tables keep: inside a body, all of them; in the root graph,
 * those inside the node's own graph region (regions run one after another, and an
 * eager region runs in table order). */
static bool dep_kept(const W *w, const PgNode *pred, const PgNode *n) {
  if (n->graph != w->p->graphs.v[0]) return true;
  return pred->region == n->region && w->p->regions.v[n->region]->graph;
}

static size_t deps_kept(const W *w, const PgNode *n) {
  size_t k = 0;
  for (size_t q = 0; q < n->npred; q++) k += dep_kept(w, pg_preds(n)[q], n);
  return k;
}

/* Whether a dependency the tables keep is not a full one (programmatic dependent launch). */
static bool kinded_deps(const W *w, const PgNode *n) {
  for (size_t q = 0; n->graph->pred_kinds && q < n->npred; q++)
    if (pg_pred_kind(n->graph, n, q) != PG_EDGE_FULL && dep_kept(w, pg_preds(n)[q], n)) return true;
  return false;
}

/* The node's position and origin: the input's line when it came from the input named
 * at the top.  (Its name is the entry's .origin.) */
static void lorigin(W *w, const PgNode *n, int at) {
  lput(w, "    /* "), lint(w, at);
  if (pg_node_origin(n)) lput(w, " (from "), lput(w, pg_node_origin(n)), lput(w, ")");
  if (n->loc.src) {
    if (w->input && (n->loc.src->name == w->input || strcmp(n->loc.src->name, w->input) == 0))
      lput(w, ", line ");
    else
      lput(w, ", "), lput(w, n->loc.src->name), lput(w, ":");
    lint(w, n->loc.line);
  }
  lput(w, " */\n    {");
}

static void ldims(W *w, const char *field, const uint32_t d[3]) {
  lput(w, field), lnum(w, d[0]), lput(w, ", "), lnum(w, d[1]), lput(w, ", "), lnum(w, d[2]), lput(w, "}");
}

/* A kernel node's fields: launch dimensions, then its tables or the caller's arguments. */
static void kernel_fields(W *w, const PgNode *n, int at) {
  lput(w, ".kind = PGRT_NODE_KERNEL, .origin = \""), lput(w, n->name), lput(w, "\", .kernel = ");
  lint(w, idx(w->kernels, n->u.kernel.kernel->name));
  lput(w, n->u.kernel.has_args ? ",\n" : ", .caller_args = 1,\n");
  ldims(w, "     .grid = {", n->u.kernel.grid), ldims(w, ", .block = {", n->u.kernel.block);
  if (n->u.kernel.smem) lput(w, ", .smem = "), lnum(w, n->u.kernel.smem);
  if (n->u.kernel.cluster[0]) ldims(w, ", .cluster = {", n->u.kernel.cluster);
  if (n->u.kernel.priority) lput(w, ", .priority = "), lint(w, n->u.kernel.priority);
  if (!n->u.kernel.has_args) return;
  unsigned char *blk = calloc(param_bytes(n->u.kernel.kernel) + 1, 1);
  Strs rel = {0}, sc = {0}, cr = {0};
  kernel_block(w, n, blk, &rel, &sc, &cr);
  free(blk);
  size_t nrel = rel.n, nsc = sc.n, ncr = cr.n;
  lflush(w);
  FILE *f = w->f;
  fprintf(f, ",\n     .params = %s_params_%d, .param_offsets = %s_offsets_%d, .param_count = %zu", w->name, at, w->name,
          at, n->u.kernel.kernel->params.n);
  if (nrel) fprintf(f, ",\n     .relocs = %s_relocs_%d, .reloc_count = %zu", w->name, at, nrel);
  if (nsc) fprintf(f, ",\n     .scalars = %s_scalars_%d, .scalar_count = %zu", w->name, at, nsc);
  if (ncr) fprintf(f, ",\n     .cond_refs = %s_conds_%d, .cond_ref_count = %zu", w->name, at, ncr);
}

/* One node table entry.  Kernel nodes, the many, go through the line buffer; the
 * other kinds are printed after it is flushed.  The caller flushes after the last. */
/* NCCL's name for a dtype (pgrt.h's pgrt_nccl_dtype, nccl.h's values). */
static const char *nccl_dtype(PgType t) {
  switch (t) {
  case PG_T_I8: return "PGRT_NCCL_INT8";
  case PG_T_U8: return "PGRT_NCCL_UINT8";
  case PG_T_I32: return "PGRT_NCCL_INT32";
  case PG_T_U32: return "PGRT_NCCL_UINT32";
  case PG_T_I64: return "PGRT_NCCL_INT64";
  case PG_T_U64: return "PGRT_NCCL_UINT64";
  case PG_T_F16: return "PGRT_NCCL_FLOAT16";
  case PG_T_F32: return "PGRT_NCCL_FLOAT32";
  case PG_T_F64: return "PGRT_NCCL_FLOAT64";
  case PG_T_BF16: return "PGRT_NCCL_BFLOAT16";
  default: PG_BUG("dtype %s is not one NCCL has", pg_type_names[t]);
  }
}

static void emit_node(W *w, const PgNode *n, int at) {
  FILE *f = w->f;
  lorigin(w, n, at);
  if (n->kind != PG_KERNEL) lflush(w);
  switch (n->kind) {
  case PG_KERNEL: kernel_fields(w, n, at); break;
  case PG_CHILD:
    fprintf(f, ".kind = PGRT_NODE_CHILD, .origin = \"%s\", .body = %d, .body_count = 1 /* %s */", n->name,
            body_at(w, n->u.child.body), n->u.child.body->name);
    break;
  case PG_CONDITIONAL: {
    static const char *const types[PG_COND_COUNT] = {"PGRT_COND_IF", "PGRT_COND_WHILE", "PGRT_COND_SWITCH"};
    fprintf(f, ".kind = PGRT_NODE_CONDITIONAL, .origin = \"%s\", .cond_type = %s, .condition = %d,\n     .body = %d, "
               ".body_count = %zu /* ", n->name, types[n->u.cond.type], idx(w->conds, n->u.cond.condition->name),
            body_at(w, n->u.cond.bodies.v[0]), n->u.cond.bodies.n);
    for (size_t b = 0; b < n->u.cond.bodies.n; b++) fprintf(f, "%s%s", b ? ", " : "", n->u.cond.bodies.v[b]->name);
    fputs(" */", f);
    break;
  }
  case PG_MEMCPY:
    fprintf(f, ".kind = PGRT_NODE_MEMCPY, .origin = \"%s\", .src = %d, .src_offset = %" PRIu64 ", .dst = %d, "
               ".dst_offset = %" PRIu64 ", .bytes = %" PRIu64,
            n->name, idx(w->buffers, n->u.memcpy.src.buf->name), n->u.memcpy.src.offset,
            idx(w->buffers, n->u.memcpy.dst.buf->name),
            n->u.memcpy.dst.offset, n->u.memcpy.width);
    if (n->u.memcpy.height * n->u.memcpy.depth > 1)
      fprintf(f, ",\n     .height = %" PRIu64 ", .depth = %" PRIu64 ", .src_pitch = %" PRIu64 ", .dst_pitch = %" PRIu64,
              n->u.memcpy.height, n->u.memcpy.depth, n->u.memcpy.src_pitch, n->u.memcpy.dst_pitch);
    break;
  case PG_MEMSET:
    fprintf(f, ".kind = PGRT_NODE_MEMSET, .origin = \"%s\", .dst = %d, .dst_offset = %" PRIu64 ", .value = %" PRIu32
               ", .elem = %" PRIu32 ", .bytes = %" PRIu64,
            n->name, idx(w->buffers, n->u.memset.dst.buf->name), n->u.memset.dst.offset, n->u.memset.value,
            n->u.memset.elem,
            n->u.memset.width * n->u.memset.elem);
    if (n->u.memset.height > 1)
      fprintf(f, ", .height = %" PRIu64 ", .dst_pitch = %" PRIu64, n->u.memset.height, n->u.memset.pitch);
    break;
  case PG_HOST:
    fprintf(f, ".kind = PGRT_NODE_HOST, .origin = \"%s\", .host = %d /* args->", n->name, w->host_next++);
    cname(f, n->name), fputs(" */", f);
    break;
  case PG_EMPTY: fprintf(f, ".kind = PGRT_NODE_EMPTY, .origin = \"%s\"", n->name); break;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE: /* the buffer lives in the arena */
    fprintf(f, ".kind = PGRT_NODE_EMPTY, .origin = \"%s\" /* %s %s: in the arena at %" PRIu64 " */", n->name,
            pg_kinds[n->kind].name, n->u.mem.buf->name, n->u.mem.buf->offset);
    break;
  case PG_EVENT_RECORD:
  case PG_EVENT_WAIT:
    fprintf(f, ".kind = %s, .origin = \"%s\", .event = %d /* %s */",
            n->kind == PG_EVENT_RECORD ? "PGRT_NODE_EVENT_RECORD" : "PGRT_NODE_EVENT_WAIT", n->name,
            event_index(w->p, n->u.event.event), n->u.event.event->name);
    break;
  case PG_HOSTOP:
    if (!pg_is_hostop(n, "guard")) {
      fprintf(f, ".kind = PGRT_NODE_SYNC, .origin = \"%s\"", n->name);
      break;
    }
    fprintf(f, ".kind = PGRT_NODE_GUARD, .origin = \"%s\", .buffer = %d /* %s */, .expect = %s_expect_%d, "
               ".expect_len = %zu,\n     .reason = ", n->name, idx(w->buffers, n->u.hostop.buf->name),
            n->u.hostop.buf->name, w->name, at, strlen(n->u.hostop.expect) / 2);
    cstring(f, n->u.hostop.reason);
    break;
  case PG_LIBCALL: {
    static const char *const kinds[PG_COLL_COUNT] = {"PGRT_COLL_ALLREDUCE", "PGRT_COLL_ALLGATHER",
                                                     "PGRT_COLL_REDUCESCATTER"};
    static const char *const ops[PG_OP_COUNT] = {"PGRT_NCCL_SUM", "PGRT_NCCL_PROD", "PGRT_NCCL_MAX", "PGRT_NCCL_MIN",
                                                 "PGRT_NCCL_AVG"};
    const PgCollective *c = n->u.libcall.coll;
    size_t comm = 0;
    while (w->p->comms.v[comm] != c->comm) comm++;
    fprintf(f, ".kind = PGRT_NODE_COLLECTIVE, .origin = \"%s\", .coll = %s, .comm = %zu /* %s */,\n     .src = %d, "
               ".src_offset = %" PRIu64 ", .dst = %d, .dst_offset = %" PRIu64 ", .count = %" PRIu64
               ", .nccl_dtype = %s", n->name, kinds[c->kind], comm, c->comm->name, idx(w->buffers, c->send.buf->name),
            c->send.offset, idx(w->buffers, c->recv.buf->name), c->recv.offset, c->count, nccl_dtype(c->dtype));
    if (pg_colls[c->kind].has_op) fprintf(f, ", .nccl_op = %s", ops[c->op]);
    fprintf(f, " /* %s */", pg_colls[c->kind].fn);
    break;
  }
  default: PG_BUG("node '%s' passed pg_c_check", n->name);
  }
  size_t nd = deps_kept(w, n);
  if (nd) {
    bool short_line = n->kind == PG_KERNEL && !n->u.kernel.has_args; /* ends with its launch dimensions */
    lput(w, short_line ? ", .deps = DEPS(" : ",\n     .deps = DEPS("), lnum(w, w->deps_at);
    lput(w, "), .dep_count = "), lnum(w, nd);
    if (kinded_deps(w, n)) lput(w, ", .dep_kinds = DEP_KINDS("), lnum(w, w->deps_at), lput(w, ")");
    w->deps_at += nd;
  }
  lput(w, "},\n");
  if (w->line_len > 65536) lflush(w);
}

/* NAME_load_W: the tensors' places in the file, checked against its header by
 * libpgrt, then one pgrt_weights_load call. */
static void emit_weights_loader(W *w, const PgWeights *wf) {
  FILE *f = w->f;
  const PgProgram *p = w->p;
  fprintf(f, "pgrt_status %s_load_%s(const char *path, %s_weights *weights, CUdeviceptr *block) {\n", w->name,
          wf->name, w->name);
  fputs("  static const pgrt_tensor tensors[] = {\n", f);
  size_t n = 0, used = 0;
  for (size_t i = 0; i < p->buffers.n; i++) used += p->buffers.v[i]->weights == wf;
  if (!used) fputs("      {0}, /* no buffer reads this file */\n", f);
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->weights != wf) continue;
    fprintf(f, "      {.offset = UINT64_C(%" PRIu64 "), .size = UINT64_C(%" PRIu64 ")}, /* %s: ", b->data_offset,
            b->size, b->name);
    for (const char *c = b->tensor; *c; c++) fputc(*c == '*' || *c == '/' ? '_' : *c, f); /* no comment end */
    fputs(" */\n", f);
    n++;
  }
  fprintf(f, "  };\n  static const pgrt_weights_file file = {.header_len = UINT64_C(%" PRIu64
             "), .file_size = UINT64_C(%" PRIu64 "), .tensors = tensors, .count = %zu};\n",
          wf->header_len, wf->file_size, n);
  fprintf(f, "  CUdeviceptr at[%zu];\n", n ? n : 1);
  fputs("  if (!weights || !block) return pgrt_weights_load(path, &file, NULL, NULL);\n", f);
  fputs("  pgrt_status st = pgrt_weights_load(path, &file, block, at);\n  if (st != PGRT_OK) return st;\n", f);
  size_t k = 0;
  for (size_t i = 0; i < p->buffers.n; i++)
    if (p->buffers.v[i]->weights == wf) fprintf(f, "  weights->"), cname(f, p->buffers.v[i]->name), fprintf(f, " = at[%zu];\n", k++);
  fputs("  return PGRT_OK;\n}\n\n", f);
}

/* The API: the argument structs, each field described, and the functions'
 * prototypes with their contracts.  The header lists the kernel nodes whose
 * arguments the caller gives (list_caller_args); the C file marks them in its node
 * table instead (.caller_args = 1), which keeps a million-node program's C from
 * carrying the list twice. */
#define LISTED_CALLER_ARGS 64 /* the header lists the first ones for people; programs read the array */

/* Text inside a C comment: a name cannot end it. */
static void ccomment(FILE *f, const char *s) {
  for (; *s; s++) fputc((s[0] == '*' && s[1] == '/') || (s[0] == '/' && s[1] == '*') ? '_' : *s, f);
}

/* "f32 [1, 256], 1024 bytes": what the .graph says of a buffer.  A shape that names a dim:
 * "f32 [B, 64], 256 bytes per unit of B, 2048 at the largest bucket". */
static void describe_buffer(FILE *f, const PgBuffer *b) {
  if (b->has_dtype) fprintf(f, "%s%s", pg_type_names[b->dtype], b->has_shape ? " " : ", ");
  const PgDim *one = NULL; /* the dim the shape names, if it names just one, once */
  size_t named = 0;
  if (b->has_shape) {
    fputc('[', f);
    for (size_t j = 0; j < b->shape.n; j++) {
      fputs(j ? ", " : "", f);
      if (b->shape_dims && b->shape_dims[j]) fputs(b->shape_dims[j]->name, f), one = b->shape_dims[j], named++;
      else fprintf(f, "%" PRId64, b->shape.v[j]);
    }
    fputs("], ", f);
  }
  if (!named) fprintf(f, "%" PRIu64 " bytes", b->size);
  else if (named == 1 && b->size % (uint64_t)pg_dim_max(one) == 0)
    fprintf(f, "%" PRIu64 " bytes per unit of %s, %" PRIu64 " at the largest bucket", b->size / (uint64_t)pg_dim_max(one),
            one->name, b->size);
  else
    fprintf(f, "%" PRIu64 " bytes at the largest buckets", b->size);
}

static unsigned ctype_size(PgType t) {
  switch (t) {
  case PG_T_I8: case PG_T_U8: case PG_T_BOOL: return 1;
  case PG_T_I16: case PG_T_U16: case PG_T_F16: case PG_T_BF16: return 2;
  case PG_T_I32: case PG_T_U32: case PG_T_F32: return 4;
  default: return 8; /* the rest are 8-byte types in ctype() */
  }
}

/* The kernel nodes that take scalar s as an argument: the first few by name. */
static void scalar_users(FILE *f, const PgProgram *p, const PgScalar *s) {
  size_t users = 0;
  for (size_t gi = 0; gi < p->graphs.n; gi++)
    for (size_t i = 0; i < p->graphs.v[gi]->nodes.n; i++) {
      const PgNode *n = p->graphs.v[gi]->nodes.v[i];
      if (n->kind != PG_KERNEL || !n->u.kernel.has_args) continue;
      for (size_t q = 0; q < n->u.kernel.args.n; q++)
        if (n->u.kernel.args.v[q].kind == PG_ARG_SCALAR && n->u.kernel.args.v[q].scalar == s) {
          if (users < 3) fprintf(f, "%s%s", users ? ", " : "; argument of kernel node ", n->name);
          users++;
          break;
        }
    }
  if (users > 3) fprintf(f, " and %zu more", users - 3);
}

/* The host buffers: their indices in the array a callback scalar gets, with what the
 * .graph says of each and who reads it. */
static void emit_host_buffers(W *w) {
  FILE *f = w->f;
  const PgProgram *p = w->p;
  int k = 0;
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role != PG_ROLE_HOST) continue;
    if (!k)
      fprintf(f, "/* The host buffers: pinned host memory that %s_init allocates (zeroed) and %s_destroy\n"
                 " * frees.  The program copies device values into them and reads them on the host after its\n"
                 " * synchronizations; a callback scalar gets their addresses, in this order (host[%s_HOST_X]). */\n",
              w->name, w->name, w->name);
    fprintf(f, "#define %s_HOST_", w->name), cname(f, b->name), fprintf(f, " %d /* ", k++);
    describe_buffer(f, b);
    for (size_t q = 0; q < p->scalars.n; q++)
      if (p->scalars.v[q]->from == b) fprintf(f, "; scalar %s is its first element", p->scalars.v[q]->name);
    for (size_t q = 0; q < p->graphs.v[0]->nodes.n; q++) {
      const PgNode *n = p->graphs.v[0]->nodes.v[q];
      if (pg_is_hostop(n, "guard") && n->u.hostop.buf == b) fprintf(f, "; guard %s expects %s", n->name, n->u.hostop.expect);
    }
    fputs(" */\n", f);
  }
  if (k) fprintf(f, "#define %s_HOST_BUFFERS %d\n\n", w->name, k);
}

/* The values of dim d, "1, 2, 4, 8". */
static void dim_values(FILE *f, const PgDim *d) {
  for (size_t k = 0; k < d->values.n; k++) fprintf(f, "%s%" PRId64, k ? ", " : "", d->values.v[k]);
}

/* The contract of a program with dims: what its buckets are, what a call gets. */
static void emit_dims(W *w) {
  FILE *f = w->f;
  const PgProgram *p = w->p;
  if (!p->dims.n) return;
  fprintf(f, "/* Shape buckets: this program holds a variant (a bucket) per value of %s, and\n"
             " * each call runs the variant its size%s pick%s (the %s of %s_args):\n",
          p->dims.n == 1 ? "its dim" : "each of its dims", p->dims.n == 1 ? "" : "s", p->dims.n == 1 ? "s" : "",
          p->dims.n == 1 ? "int64_t field" : "int64_t fields", w->name);
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fprintf(f, " *   %s: ", d->name), dim_values(f, d);
    if (d->pad)
      fprintf(f, " (pad: a size between them runs the smallest bucket that holds it;\n"
                 " *      pass inputs of that bucket's size along %s, entries past the size any finite\n"
                 " *      values; outputs hold the bucket's size, the first %s along it are the answer)\n",
              d->name, d->name);
    else
      fprintf(f, " (exact: only these sizes run)\n");
  }
  fprintf(f, " * A size that fits no bucket fails the call with PGRT_ERR_BUCKET before anything runs.\n"
             " * Buffers whose shapes name a dim are described, and sized, at its largest value.\n"
             " * Buckets never run together: they share the arena, which holds the largest one's\n"
             " * intermediates. */\n");
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fprintf(f, "#define %s_DIM_", w->name), cname(f, d->name), fputs("_VALUES {", f), dim_values(f, d), fputs("}\n", f);
    fprintf(f, "#define %s_DIM_", w->name), cname(f, d->name), fprintf(f, "_BUCKETS %zu\n", d->values.n);
  }
  fputc('\n', f);
}

static void emit_api(W *w, bool list_caller_args) {
  FILE *f = w->f;
  const PgProgram *p = w->p;
  const char *nm = w->name;
  emit_dims(w);
  fprintf(f, "/* This call's %sbuffers (device addresses; they may move on every call) and scalars.\n"
             " * %s_info() describes each field for programs. */\n", p->dims.n ? "sizes, " : "", nm);
  fprintf(f, "typedef struct {\n");
  int fields = 0;
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fputs("  int64_t ", f), cname(f, d->name);
    if (d->pad) {
      fprintf(f, "; /* size of dim %s: 1..%" PRId64 "; runs the smallest of the buckets ", d->name, pg_dim_max(d));
      dim_values(f, d);
      fprintf(f, " that holds it (pad: pass inputs of the bucket's size, entries past %s any finite values; outputs "
                 "hold the bucket's size, the first %s are the answer); another size fails with PGRT_ERR_BUCKET */\n",
              d->name, d->name);
    } else {
      fprintf(f, "; /* size of dim %s: one of ", d->name), dim_values(f, d);
      fputs(" (exact: the bucket of that size runs); another size fails with PGRT_ERR_BUCKET */\n", f);
    }
    fields++;
  }
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (!pg_per_call(b)) continue;
    fprintf(f, "  CUdeviceptr "), cname(f, b->name);
    fprintf(f, "; /* %s: ", b->role == PG_ROLE_UNKNOWN ? "inout (role unknown: read, written or both)"
                                                        : pg_role_names[b->role]);
    describe_buffer(f, b);
    fputs(" */\n", f);
    fields++;
  }
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (!s->is_input) continue;
    fprintf(f, "  %s ", ctype(s->type)), cname(f, s->name);
    fprintf(f, "; /* scalar: %s, by value on every call", pg_type_names[s->type]);
    if (s->type == PG_T_F16 || s->type == PG_T_BF16) fprintf(f, " (its bits)");
    scalar_users(f, p, s);
    fputs(" */\n", f);
    fields++;
  }
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (!s->is_callback) continue;
    fputs("  pgrt_scalar_fn ", f), cname(f, s->name);
    fprintf(f, "; /* callback scalar: %s; called after each host synchronization with the host buffers "
               "(%s_HOST_*), it writes the %s's bits into the low %u bytes of *value and returns 0 (nonzero "
               "fails the call: PGRT_ERR_ARGUMENT); required", pg_type_names[s->type], nm, pg_type_names[s->type],
            pg_type_sizes[s->type]);
    scalar_users(f, p, s);
    fputs(" */\n", f);
    fields++;
  }
  for (size_t i = 0; i < w->order.n && w->host_nodes; i++) {
    const PgNode *n = w->order.v[i];
    if (n->kind != PG_HOST) continue;
    fputs("  pgrt_host_fn ", f), cname(f, n->name);
    fprintf(f, "; /* host node %s: called with its data where the graph reaches it; required */\n", n->name);
    fields++;
  }
  if (!fields) fputs("  int unused;\n", f);
  fprintf(f, "} %s_args;\n\n/* The weights, bound once at init (device addresses, kept valid until %s_destroy). */\n"
             "typedef struct {\n", nm, nm);
  fields = 0;
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role != PG_ROLE_WEIGHT) continue;
    fprintf(f, "  CUdeviceptr "), cname(f, b->name), fputs("; /* weight: ", f);
    describe_buffer(f, b);
    if (b->weights) {
      fputs("; tensor \"", f), ccomment(f, b->tensor), fputs("\" of ", f), ccomment(f, b->weights->file);
      fprintf(f, " (%s_load_%s)", nm, b->weights->name);
    }
    fputs(" */\n", f);
    fields++;
  }
  if (!fields) fputs("  int unused;\n", f);
  fprintf(f, "} %s_weights;\n\n", nm);
  emit_host_buffers(w);
  fprintf(f, "/* Every function that returns a pgrt_status returns PGRT_OK (0) on success, else one of\n"
             " * the PGRT_ERR_* values of pgrt.h; pgrt_error() then says, for this thread, what failed\n"
             " * (the CUDA call, file:line, the node).  %s_init runs on the CUDA context current in its\n"
             " * thread (a primary context: cuDevicePrimaryCtxRetain, cuCtxSetCurrent); the other calls\n"
             " * make that context current for themselves, from any thread (pgrt.h, \"Threads\"). */\n\n", nm);
  for (size_t i = 0; i < p->weights.n; i++) {
    fprintf(f, "/* Reads the weights that come from %s (a safetensors file; path: where it is now) into\n"
               " * one device allocation, *block (cuMemFree it after %s_destroy), and sets their fields\n"
               " * in *weights.  The file must be the one the program was compiled against (its size and\n"
               " * header length are checked).  PGRT_ERR_ARGUMENT: a null argument, a file that cannot be\n"
               " * read or is another one; PGRT_ERR_MEMORY, PGRT_ERR_CUDA: the allocation or a copy\n"
               " * failed.  On failure *block is 0 and nothing stays allocated.  Synchronous. */\n",
            p->weights.v[i]->file, nm);
    fprintf(f, "pgrt_status %s_load_%s(const char *path, %s_weights *weights, CUdeviceptr *block);\n\n", nm,
            p->weights.v[i]->name, nm);
  }
  /* a macro, not an enum: an arena may pass INT_MAX bytes */
  fprintf(f, "#define %s_ARENA_BYTES UINT64_C(%" PRIu64 ") /* device memory for intermediates */\n\n", nm,
          p->mem.arena_bytes);
  size_t caller = w->caller_args;
  if (caller) {
    fprintf(f, "/* The input did not say these kernel nodes' arguments: NAME_init takes, in this order, each\n"
               " * one's kernelParams array (as cuLaunchKernel takes it; kept alive until destroy). */\n");
    fprintf(f, "enum { %s_KERNEL_ARG_NODES = %zu };\n", nm, caller);
    fprintf(f, "/* Where each came from, in this order: the DOT node's id (cudaGraphDebugDotPrint numbers\n"
               " * a graph's nodes in the order they were added, e.g. the order of a stream capture). */\n");
    fprintf(f, "extern const char *const %s_kernel_arg_origins[%s_KERNEL_ARG_NODES];\n", nm, nm);
    size_t k = 0;
    if (!list_caller_args) fprintf(f, "/* (listed in %s.h; marked '.caller_args = 1' in the node table below) */\n", nm);
    for (size_t i = 0; i < w->order.n && list_caller_args && k < LISTED_CALLER_ARGS; i++) {
      const PgNode *n = w->order.v[i];
      if (n->kind != PG_KERNEL || n->u.kernel.has_args) continue;
      const char *sym = n->u.kernel.kernel->symbol;
      size_t len = strlen(sym);
      lput(w, "/*   ["), lnum(w, k++), lput(w, "] "), lput(w, n->name), lput(w, ": ");
      lputn(w, sym, len > 60 ? 60 : len), lput(w, len > 60 ? "... */\n" : " */\n");
    }
    if (list_caller_args && caller > k)
      lput(w, "/*   ... and "), lnum(w, caller - k), lput(w, " more: "), lput(w, nm),
          lput(w, "_kernel_arg_origins says which each is */\n");
    lflush(w);
    fputc('\n', f);
  }
  fprintf(f, "/* Builds the program on the current CUDA context: loads its modules (library kernels from\n"
             " * the installed libraries, CUDA C through NVRTC), places its intermediates in the arena,\n"
             " * builds, instantiates and uploads its CUDA graphs.  weights: every field set (NULL only\n"
             " * for a program without weights).  kernel_args: %s.  arena:\n"
             " * %s_ARENA_BYTES of device memory that the caller owns and keeps until %s_destroy, or 0\n"
             " * for libpgrt to allocate it.  On success *ctx is the new context; on failure *ctx is NULL\n"
             " * and everything init made is freed.  PGRT_ERR_ARGUMENT: a null ctx, missing weights or\n"
             " * kernel arguments, a null weight, no current context; PGRT_ERR_MODULE: a module does not\n"
             " * load or compile, or a kernel is not in it, or a global it writes is not in it or of\n"
             " * another size (another library version, a GPU the code is not for); PGRT_ERR_MEMORY;\n"
             " * PGRT_ERR_CUDA; PGRT_ERR_VERSION: libpgrt is not the one this code was generated for.  A\n"
             " * graph region that does not instantiate runs eagerly, with a warning on stderr.\n"
             " * Synchronous. */\n",
          caller ? "see above" : "NULL (every kernel's arguments are known)", nm, nm);
  if (p->comms.n) {
    const PgComm *c = p->comms.v[0];
    fprintf(f, "/* Comm '%s': this program runs as one rank of %" PRIu32 " (%s_COMM_RANKS).  Rank 0 makes an NCCL\n"
               " * id with pgrt_nccl_unique_id and shares its 128 bytes with the other ranks; every rank\n"
               " * calls %s_init with that id and its own rank (0 .. %" PRIu32 "), on the device it runs on\n"
               " * (the current context's), and init waits until every rank has joined.  NCCL is loaded\n"
               " * at init with dlopen (PGRT_NCCL, else libnccl.so.2) before any CUDA call: where it does\n"
               " * not load, init fails with PGRT_ERR_NCCL and pgrt_error() names the library and why.\n"
               " * Every rank must call %s_run the same number of times in the same order: each call's\n"
               " * collectives wait for the other ranks' (they are part of the work queued on the\n"
               " * stream, which finishes only when every rank's has run). */\n",
            c->name, c->ranks, nm, nm, c->ranks - 1, nm);
    fprintf(f, "#define %s_COMM_RANKS %" PRIu32 "\n", nm, c->ranks);
    fprintf(f, "pgrt_status %s_init(pgrt_ctx **ctx, const %s_weights *weights, void **const *kernel_args, "
               "CUdeviceptr arena,\n    const pgrt_nccl_id *id, int rank);\n\n", nm, nm);
  } else {
    fprintf(f, "pgrt_status %s_init(pgrt_ctx **ctx, const %s_weights *weights, void **const *kernel_args, "
               "CUdeviceptr arena);\n\n", nm, nm);
  }
  if (pg_rng_of(p))
    fprintf(f, "/* Random numbers: this program draws them as PyTorch's CUDA generator does (Philox, a seed\n"
               " * and an offset), each call from the current offset up, advancing it by %s_RNG_INCREMENT.\n"
               " * It starts at seed PGRT_DEFAULT_SEED, offset 0; pgrt_rng_set(ctx, seed, offset) and\n"
               " * pgrt_rng_get set and read them (pgrt.h): for the generator state PyTorch had, a call\n"
               " * draws what the exported callable drew. */\n"
               "#define %s_RNG_INCREMENT UINT64_C(%" PRIu64 ")\n\n", nm, nm, pg_rng_of(p)->increment);
  bool sync = false, guard = false, reads = false, callbacks = false;
  for (size_t i = 0; i < p->graphs.v[0]->nodes.n; i++)
    sync |= pg_is_hostop(p->graphs.v[0]->nodes.v[i], "sync"), guard |= pg_is_hostop(p->graphs.v[0]->nodes.v[i], "guard");
  for (size_t i = 0; i < p->scalars.n; i++) reads |= pg_scalar_is_read(p->scalars.v[i]), callbacks |= p->scalars.v[i]->is_callback;
  fprintf(f, "/* One call, queued on `stream` and asynchronous: it returns once the work is queued%s.\n"
             " * args: this call's %sbuffers (none null) and scalars.  Buffers may sit at new addresses on\n"
             " * every call: only what changed is patched; nothing is copied, re-captured or\n"
             " * re-instantiated.  The buffers must stay valid, and the inputs unchanged, until the\n"
             " * stream has run the call; the outputs are ready after that (cuStreamSynchronize, or an\n"
             " * event).  Intermediates live in the arena and carry nothing from one call to the next:\n"
             " * its contents may be overwritten (poisoned) between calls.  One ctx takes one call at a\n"
             " * time, from any thread (a call while another thread's runs: PGRT_ERR_BUSY), on one\n"
             " * stream (or on streams the caller orders): the calls share the arena.\n"
             " * PGRT_ERR_ARGUMENT: a null ctx or args, a null buffer%s;\n"
             " * PGRT_ERR_CUDA: a patch or a launch failed.  Faults of the work itself appear later, at\n"
             " * the stream's synchronization (a CUresult).%s%s%s */\n",
          sync ? " (its host synchronization, 'sync', waits for the stream where the program has it)" : "",
          p->dims.n ? "sizes, " : "",
          w->host_nodes && callbacks ? ", a host node or callback scalar without a function"
          : w->host_nodes            ? ", a host node without a function"
          : callbacks                ? ", a callback scalar without a function"
                                     : "",
          reads ? "\n * Scalars read on the host (from host buffers, and callback scalars: a callback that\n"
                  " * returns nonzero fails the call with PGRT_ERR_ARGUMENT) are read anew after each host\n"
                  " * synchronization, and the nodes that take them are patched before they run."
                : "",
          guard ? "\n * PGRT_ERR_GUARD: a guard found that a value read on the host is not the one it was\n"
                  " * exported with, so the program took another path than the exported one; the call stops\n"
                  " * there (pgrt_error() names the guard and its reason), and its outputs are not valid."
                : "",
          p->dims.n ? "\n * PGRT_ERR_BUCKET: a size fits no bucket of its dim (see above); nothing was queued." : "");
  fprintf(f, "pgrt_status %s_run(pgrt_ctx *ctx, const %s_args *args, CUstream stream);\n\n", nm, nm);
  fprintf(f, "/* Frees what %s_init made (not the weights' block, nor a caller's arena) and sets *ctx\n"
             " * to NULL; a null ctx or *ctx does nothing.  Synchronize the last call's stream first. */\n", nm);
  fprintf(f, "void %s_destroy(pgrt_ctx **ctx);\n\n", nm);
  fprintf(f, "/* What the fields of %s_args and %s_weights are (name, role, dtype, shape, offset,\n"
             " * size, a weight's tensor), for programs that bind them by name; constant data, no\n"
             " * GPU needed, never NULL. */\n", nm, nm);
  fprintf(f, "const pgrt_program_info *%s_info(void);\n", nm);
}

/* NAME_info: the fields of NAME_args and NAME_weights, in their order, as constant
 * tables with offsetof. */
static void emit_field(W *w, const char *strct, const char *fieldname_src, const char *role, const char *dtype, int ndim,
                       const char *shape, const char *size, const PgBuffer *buf) {
  FILE *f = w->f;
  fputs("    {.name = \"", f), cname(f, fieldname_src), fprintf(f, "\", .role = %s, .dtype = \"%s\", .ndim = %d,", role, dtype, ndim);
  if (shape) fprintf(f, " .shape = %s,", shape);
  if (shape && buf && buf->shape_dims) fprintf(f, " .shape_dims = %s_dims,", shape); /* beside its shape (emit_shape) */
  fprintf(f, "\n     .offset = offsetof(%s_%s, ", w->name, strct), cname(f, fieldname_src);
  fprintf(f, "), .size = %s", size);
  if (buf && buf->weights) fputs(", .tensor = ", f), cstring(f, buf->tensor);
  fputs("},\n", f);
}

static int dim_index(const PgProgram *p, const PgDim *d) {
  for (size_t i = 0; i < p->dims.n; i++)
    if (p->dims.v[i] == d) return (int)i;
  PG_BUG("dim '%s' is not in the program", d->name);
}

/* A field's shape, and where it names dims, which entries are which (NAME_shape_X_dims). */
static void emit_shape(W *w, const PgBuffer *b, const char *kind, size_t at, char *name, size_t cap) {
  if (!b->shape.n) {
    name[0] = 0;
    return;
  }
  snprintf(name, cap, "%s_shape_%s%zu", w->name, kind, at);
  fprintf(w->f, "static const int64_t %s[] = {", name);
  for (size_t j = 0; j < b->shape.n; j++) fprintf(w->f, "%s%" PRId64, j ? ", " : "", b->shape.v[j]);
  fputs("};\n", w->f);
  if (!b->shape_dims) return;
  fprintf(w->f, "static const int %s_dims[] = {", name);
  for (size_t j = 0; j < b->shape.n; j++)
    fprintf(w->f, "%s%d", j ? ", " : "", b->shape_dims[j] ? dim_index(w->p, b->shape_dims[j]) : -1);
  fputs("}; /* -1: a fixed size; else the dim (info.dims) whose largest value the entry holds */\n", w->f);
}

static void emit_info(W *w) {
  const PgProgram *p = w->p;
  FILE *f = w->f;
  const char *nm = w->name;
  size_t nargs = 0, nweights = 0, cap = strlen(nm) + 48;
  char *shape = malloc(cap), size[32];
  if (!shape) PG_BUG("out of memory");
  fprintf(f, "/* What %s_args and %s_weights hold, for %s_info(). */\n", nm, nm, nm);

  for (size_t i = 0, k = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (pg_per_call(b)) emit_shape(w, b, "a", k++, shape, cap);
  }
  for (size_t i = 0, k = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role == PG_ROLE_WEIGHT) emit_shape(w, b, "w", k++, shape, cap);
  }
  for (size_t i = 0; i < p->dims.n; i++) { /* the sizes, first in NAME_args */
    if (!nargs) fprintf(f, "static const pgrt_field %s_arg_fields[] = {\n", nm);
    emit_field(w, "args", p->dims.v[i]->name, "PGRT_FIELD_SIZE", "i64", 0, NULL, "8", NULL);
    nargs++;
  }
  for (size_t i = 0, k = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (!pg_per_call(b)) continue;
    if (!nargs) fprintf(f, "static const pgrt_field %s_arg_fields[] = {\n", nm);
    const char *role = b->role == PG_ROLE_INPUT ? "PGRT_FIELD_INPUT" : b->role == PG_ROLE_OUTPUT ? "PGRT_FIELD_OUTPUT"
                                                                                                : "PGRT_FIELD_INOUT";
    snprintf(shape, cap, "%s_shape_a%zu", nm, k++);
    snprintf(size, sizeof size, "%" PRIu64, b->size);
    emit_field(w, "args", b->name, role, b->has_dtype ? pg_type_names[b->dtype] : "", b->has_shape ? (int)b->shape.n : -1,
               b->shape.n ? shape : NULL, size, b);
    nargs++;
  }
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (!s->is_input) continue;
    if (!nargs) fprintf(f, "static const pgrt_field %s_arg_fields[] = {\n", nm);
    snprintf(size, sizeof size, "%u", ctype_size(s->type));
    emit_field(w, "args", s->name, "PGRT_FIELD_SCALAR", pg_type_names[s->type], 0, NULL, size, NULL);
    nargs++;
  }
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    if (!s->is_callback) continue;
    if (!nargs) fprintf(f, "static const pgrt_field %s_arg_fields[] = {\n", nm);
    emit_field(w, "args", s->name, "PGRT_FIELD_SCALAR_FN", pg_type_names[s->type], 0, NULL, "sizeof(pgrt_scalar_fn)",
               NULL);
    nargs++;
  }
  for (size_t i = 0; i < w->order.n && w->host_nodes; i++) {
    const PgNode *n = w->order.v[i];
    if (n->kind != PG_HOST) continue;
    if (!nargs) fprintf(f, "static const pgrt_field %s_arg_fields[] = {\n", nm);
    emit_field(w, "args", n->name, "PGRT_FIELD_HOST_FN", "", -1, NULL, "sizeof(pgrt_host_fn)", NULL);
    nargs++;
  }
  if (nargs) fputs("};\n", f);
  for (size_t i = 0, k = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    if (b->role != PG_ROLE_WEIGHT) continue;
    if (!nweights) fprintf(f, "static const pgrt_field %s_weight_fields[] = {\n", nm);
    snprintf(shape, cap, "%s_shape_w%zu", nm, k++);
    snprintf(size, sizeof size, "%" PRIu64, b->size);
    emit_field(w, "weights", b->name, "PGRT_FIELD_WEIGHT", b->has_dtype ? pg_type_names[b->dtype] : "",
               b->has_shape ? (int)b->shape.n : -1, b->shape.n ? shape : NULL, size, b);
    nweights++;
  }
  if (nweights) fputs("};\n", f);
  fprintf(f, "static const pgrt_program_info %s_info_table = {\n    .name = \"%s\",\n", nm, nm);
  fprintf(f, "    .args_size = sizeof(%s_args), .n_args = %zu, .args = ", nm, nargs);
  if (nargs) fprintf(f, "%s_arg_fields,\n", nm);
  else fputs("NULL,\n", f);
  fprintf(f, "    .weights_size = sizeof(%s_weights), .n_weights = %zu, .weights = ", nm, nweights);
  if (nweights) fprintf(f, "%s_weight_fields,\n", nm);
  else fputs("NULL,\n", f);
  fprintf(f, "    .arena_bytes = UINT64_C(%" PRIu64 "),\n", p->mem.arena_bytes);
  if (p->dims.n) fprintf(f, "    .n_dims = %zu, .dims = %s_dims,\n", p->dims.n, nm);
  if (p->comms.n) fprintf(f, "    .n_comms = %zu, .comms = %s_comms,\n", p->comms.n, nm);
  if (pg_rng_of(p)) fprintf(f, "    .rng_increment = %" PRIu64 ",\n", pg_rng_of(p)->increment);
  fputs("};\n\n", f);
  fprintf(f, "const pgrt_program_info *%s_info(void) { return &%s_info_table; }\n", nm, nm);
  free(shape);
}

void pg_emit_h(const PgProgram *p, const char *name, FILE *f) {
  W w = {.p = p, .f = f, .name = name};
  plan_tables(&w);
  fprintf(f, "/* %s.h -- generated by pgcc %s: the launch program's API. Do not edit. */\n", name, PGCC_VERSION);
  fprintf(f, "#ifndef %s_H\n#define %s_H\n\n#include \"pgrt.h\"\n\n", name, name);
  emit_api(&w, true);
  fputs("\n#endif\n", f);
  free(w.line);
  free_tables(&w);
}

void pg_emit_c(const PgProgram *p, const char *name, const char *input, FILE *f) {
  W w = {.p = p, .f = f, .name = name, .input = input, .buffers = pg_map_new(p->arena),
         .kernels = pg_map_new(p->arena), .scalars = pg_map_new(p->arena), .conds = pg_map_new(p->arena)};
  const PgGraph *g = p->graphs.v[0];
  plan_tables(&w);
  for (size_t i = 0; i < p->conditions.n; i++)
    pg_map_put(w.conds, p->conditions.v[i]->name, (void *)(intptr_t)(i + 1));
  for (size_t i = 0; i < p->buffers.n; i++) pg_map_put(w.buffers, p->buffers.v[i]->name, (void *)(intptr_t)(i + 1));
  for (size_t i = 0; i < p->kernels.n; i++) pg_map_put(w.kernels, p->kernels.v[i]->name, (void *)(intptr_t)(i + 1));
  int slot = 0, reads = 0, callbacks = 0; /* the caller's scalars' slots, then the read ones' */
  for (size_t i = 0; i < p->scalars.n; i++)
    if (p->scalars.v[i]->is_input) pg_map_put(w.scalars, p->scalars.v[i]->name, (void *)(intptr_t)(++slot));
  for (size_t i = 0; i < p->scalars.n; i++)
    if (pg_scalar_is_read(p->scalars.v[i]))
      pg_map_put(w.scalars, p->scalars.v[i]->name, (void *)(intptr_t)(slot + ++reads));
  int buckets = 0; /* the bucket scalars' slots, after the read ones */
  for (size_t i = 0; i < p->scalars.n; i++)
    if (p->scalars.v[i]->bucket)
      pg_map_put(w.scalars, p->scalars.v[i]->name, (void *)(intptr_t)(slot + reads + ++buckets));
  size_t graph_regions = 0;
  for (size_t r = 0; r < p->regions.n; r++) graph_regions += p->regions.v[r]->graph;

  fprintf(f, "/*\n * %s.c -- generated by pgcc %s from %s. Do not edit.\n *\n", name, PGCC_VERSION, input);
  fprintf(f, " * %zu nodes (%zu of them in child and conditional bodies) in %zu regions, %zu of them\n"
             " * launched as CUDA graphs; build with libpgrt:\n", w.order.n, w.order.n - g->nodes.n, p->regions.n,
          graph_regions);
  fprintf(f, " *   cc -c %s.c $(pkg-config --cflags pgrt) && cc ... $(pkg-config --libs pgrt)\n */\n", name);
  fputs("#include \"pgrt.h\"\n\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n", f);
  fputs("#ifdef __GNUC__ /* the modules' bytes are string literals longer than ISO C's 4095 (gcc, clang) */\n"
        "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n\n", f);
  emit_api(&w, false);
  fputc('\n', f);

  for (size_t i = 0; i < p->modules.n; i++) emit_module(&w, i);

  fprintf(f, "static const pgrt_module %s_modules[] = {\n", name);
  for (size_t i = 0; i < p->modules.n; i++) {
    static const char *const kinds[] = {"PGRT_MOD_CUBIN", "PGRT_MOD_FATBIN", "PGRT_MOD_PTX", "PGRT_MOD_CUDA",
                                        "PGRT_MOD_LIBRARY"};
    const PgModule *m = p->modules.v[i];
    if (m->kind == PG_MOD_LIBRARY) {
      fprintf(f, "    {.name = \"%s\", .kind = PGRT_MOD_LIBRARY, .library = ", m->name);
      cstring(f, m->library);
      fputs("},\n", f);
      continue;
    }
    fprintf(f, "    {.name = \"%s\", .kind = %s, .image = %s_module_%zu, .size = sizeof %s_module_%zu", m->name,
            kinds[m->kind], name, i, name, i);
    if (m->globals.n)
      fprintf(f, ",\n     .globals = %s_module_%zu_globals, .global_count = %zu", name, i, m->globals.n);
    fputs("},\n", f);
  }
  if (!p->modules.n) fputs("    {0},\n", f);
  fprintf(f, "};\n\nstatic const pgrt_kernel %s_kernels[] = {\n", name);
  for (size_t i = 0; i < p->kernels.n; i++) {
    const PgKernel *k = p->kernels.v[i];
    uint32_t bytes = 0;
    for (size_t q = 0; q < k->params.n; q++)
      if (k->params.v[q].offset + k->params.v[q].size > bytes) bytes = k->params.v[q].offset + k->params.v[q].size;
    int mod = -1;
    for (size_t m = 0; m < p->modules.n; m++)
      if (p->modules.v[m] == k->module) mod = (int)m;
    fprintf(f, "    {.name = \"%s\", .symbol = ", k->name);
    cstring(f, k->symbol);
    fprintf(f, ", .module = %d, .param_bytes = %" PRIu32, mod, bytes);
    if (k->has_entry) fprintf(f, ", .entry = UINT64_C(%" PRIu64 ")", k->entry + 1);
    fprintf(f, "},%s\n", mod < 0 ? " /* found by name in the modules at init */" : "");
  }
  if (!p->kernels.n) fputs("    {0},\n", f);
  fprintf(f, "};\n\nstatic const pgrt_buffer %s_buffers[] = {\n", name);
  int bound = 0, weights = 0, hosts = 0;
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    fprintf(f, "    {.name = \"%s\", .size = %" PRIu64 ", ", b->name, b->size);
    if (b->role == PG_ROLE_WEIGHT)
      fprintf(f, ".kind = PGRT_BUF_WEIGHT, .slot = %d}, /* weight */\n", weights++);
    else if (b->role == PG_ROLE_HOST)
      fprintf(f, ".kind = PGRT_BUF_HOST, .slot = %d}, /* host: pinned, allocated by libpgrt */\n", hosts++);
    else if (b->role == PG_ROLE_RNG)
      fprintf(f, ".kind = PGRT_BUF_RNG}, /* the random-number state, libpgrt's: Philox seed, offset */\n");
    else if (pg_in_arena(b))
      fprintf(f, ".kind = PGRT_BUF_ARENA, .offset = %" PRIu64 "}, /* %s */\n", b->offset, pg_role_names[b->role]);
    else
      fprintf(f, ".kind = PGRT_BUF_BOUND, .slot = %d}, /* %s, bound per call */\n", bound++, pg_role_names[b->role]);
  }
  if (!p->buffers.n) fputs("    {0},\n", f);
  fputs("};\n\n", f);

  /* nodes in table order: their argument tables, their dependencies, then the node table */
  for (size_t i = 0; i < w.order.n; i++) {
    const PgNode *n = w.order.v[i];
    if (n->kind == PG_KERNEL && n->u.kernel.has_args) emit_kernel_tables(&w, n, (int)i);
    if (pg_is_hostop(n, "guard")) { /* the bytes it expects */
      const char *hex = n->u.hostop.expect;
      fprintf(f, "/* node %s: guard on %s */\nstatic const unsigned char %s_expect_%zu[%zu] = {", n->name,
              n->u.hostop.buf->name, name, i, strlen(hex) / 2);
      for (size_t b = 0; hex[2 * b]; b++) fprintf(f, "%s0x%c%c", b ? ", " : "", hex[2 * b], hex[2 * b + 1]);
      fputs("};\n", f);
    }
  }
  size_t deps = 0;
  for (size_t i = 0; i < w.order.n; i++) deps += deps_kept(&w, w.order.v[i]);
  if (deps) {
    fprintf(f, "/* The nodes' dependencies (positions in %s_nodes), node after node; each node's\n"
               " * entry points at its own run of them. */\nstatic const int %s_deps[] = {", name, name);
    size_t k = 0;
    for (size_t i = 0; i < w.order.n; i++) {
      const PgNode *n = w.order.v[i];
      for (size_t q = 0; q < n->npred; q++)
        if (dep_kept(&w, pg_preds(n)[q], n)) {
          lput(&w, !k ? "\n    " : k % 16 ? ", " : ",\n    "), lint(&w, node_at(&w, pg_preds(n)[q]));
          k++;
          if (w.line_len > 65536) lflush(&w);
        }
    }
    lput(&w, "\n};\n"), lflush(&w);
  }
  for (size_t i = 0; i < w.order.n && !w.dep_kinds; i++) w.dep_kinds = kinded_deps(&w, w.order.v[i]);
  if (w.dep_kinds) { /* beside NAME_deps, entry for entry: where any is not a full dependency */
    fprintf(f, "/* Each dependency's kind, as in %s_deps (pgrt_dep_kind: 0 full, 1 programmatic, 2 launch\n"
               " * order): kernels that may start before the one they wait for has finished. */\n"
               "static const unsigned char %s_dep_kinds[] = {", name, name);
    size_t k = 0;
    for (size_t i = 0; i < w.order.n; i++) {
      const PgNode *n = w.order.v[i];
      for (size_t q = 0; q < n->npred; q++)
        if (dep_kept(&w, pg_preds(n)[q], n)) {
          lput(&w, !k ? "\n    " : k % 32 ? ", " : ",\n    "), lint(&w, pg_pred_kind(n->graph, n, q));
          k++;
          if (w.line_len > 65536) lflush(&w);
        }
    }
    lput(&w, "\n};\n"), lflush(&w);
    fprintf(f, "#define DEP_KINDS(at) (%s_dep_kinds + (at))", name);
  }
  if (deps) fprintf(f, "\n#define DEPS(at) (%s_deps + (at)) /* a node's run of dependencies */", name);
  fprintf(f, "\nstatic const pgrt_node %s_nodes[] = {\n", name);
  for (size_t i = 0; i < w.order.n; i++) {
    if (i == (size_t)g->nodes.n && w.bodies.n) lput(&w, "    /* the bodies of child and conditional nodes */\n");
    emit_node(&w, w.order.v[i], (int)i);
  }
  lflush(&w);
  if (!w.order.n) fputs("    {0},\n", f);
  fputs(deps ? "};\n#undef DEPS\n" : "};\n", f);
  fputs(w.dep_kinds ? "#undef DEP_KINDS\n\n" : "\n", f);
  if (w.bodies.n) {
    fprintf(f, "static const pgrt_body %s_bodies[] = {\n", name);
    for (size_t b = 0; b < w.bodies.n; b++)
      fprintf(f, "    {.first = %d, .count = %zu}, /* %zu: graph %s, body of %s */\n", w.body_first.v[b],
              w.bodies.v[b]->nodes.n, b, w.bodies.v[b]->name, w.bodies.v[b]->owner->name);
    fputs("};\n\n", f);
  }
  if (p->conditions.n) {
    fprintf(f, "static const pgrt_condition %s_conditions[] = {\n", name);
    for (size_t k = 0; k < p->conditions.n; k++)
      fprintf(f, "    {.name = \"%s\", .default_value = %" PRIu32 "}, /* tested by %s */\n", p->conditions.v[k]->name,
              p->conditions.v[k]->default_value, p->conditions.v[k]->node->name);
    fputs("};\n\n", f);
  }
  if (reads) {
    static const char *const dtypes[PG_TYPE_COUNT] = { /* pgrt.h's pgrt_dtype */
#define X(e, tname, size) [PG_T_##e] = "PGRT_DT_" #e,
        PG_TYPES(X)
#undef X
    };
    fprintf(f, "/* The scalars read during a call, after each host synchronization, in the slots after the\n"
               " * caller's %d. */\nstatic const pgrt_read_scalar %s_reads[] = {\n", slot, name);
    for (size_t i = 0, k = 0; i < p->scalars.n; i++) {
      const PgScalar *s = p->scalars.v[i];
      if (!pg_scalar_is_read(s)) continue;
      fprintf(f, "    {.name = \"%s\", .type = %s, ", s->name, dtypes[s->type]);
      if (s->from)
        fprintf(f, ".buffer = %d, .from = %s, .callback = -1}, /* slot %zu: the first element of host buffer %s */\n",
                idx(w.buffers, s->from->name), dtypes[s->from->dtype], slot + k, s->from->name);
      else
        fprintf(f, ".buffer = -1, .callback = %d}, /* slot %zu: args->%s */\n", callbacks++, slot + k, s->name);
      k++;
    }
    fputs("};\n\n", f);
  }
  if (p->dims.n) {
    fprintf(f, "/* The dims: pgrt_run's sizes, one per dim in this order, pick a bucket of each. */\n");
    for (size_t i = 0; i < p->dims.n; i++) {
      fprintf(f, "static const int64_t %s_dim_values_%zu[] = {", name, i);
      dim_values(f, p->dims.v[i]);
      fputs("};\n", f);
    }
    fprintf(f, "static const pgrt_dim %s_dims[] = {\n", name);
    for (size_t i = 0; i < p->dims.n; i++) {
      const PgDim *d = p->dims.v[i];
      fprintf(f, "    {.name = \"%s\", .n_values = %zu, .values = %s_dim_values_%zu, .pad = %d}, /* ", d->name,
              d->values.n, name, i, d->pad);
      if (d->node) fprintf(f, "picked by switch %s */\n", d->node->name);
      else fputs("no switch */\n", f);
    }
    fputs("};\n\n", f);
  }
  if (buckets) {
    fprintf(f, "/* The bucket scalars, in the slots after the read ones (%d): the dim whose bucket's index each\n"
               " * holds. */\nstatic const int %s_bucket_dims[] = {", slot + reads, name);
    for (size_t i = 0, k = 0; i < p->scalars.n; i++)
      if (p->scalars.v[i]->bucket)
        fprintf(f, "%s%d /* %s */", k++ ? ", " : "", dim_index(p, p->scalars.v[i]->bucket), p->scalars.v[i]->name);
    fputs("};\n\n", f);
  }
  fprintf(f, "static const pgrt_region %s_regions[] = {\n", name);
  int at = 0;
  for (size_t r = 0; r < p->regions.n; r++) {
    const PgRegion *rg = p->regions.v[r];
    bool device = rg->graph && rg->update == PG_UPDATE_DEVICE;
    fprintf(f, "    {.graph = %d, .first = %d, .count = %zu%s", rg->graph, at, rg->nodes.n,
            device ? ", .device_update = 1" : "");
    if (rg->bucket_switch)
      fprintf(f, ",\n     .bucket_dim = %d%s", dim_index(p, rg->bucket_switch->u.cond.dim) + 1,
              rg->bucket_graphs ? ", .bucket_graphs = 1" : "");
    fprintf(f, "}, /* %s: %.1f us predicted, %.1f us eager%s", rg->graph ? "a CUDA graph" : "eager",
            rg->graph ? rg->est_graph_us : rg->est_eager_us, rg->est_eager_us, device ? "; patched on the device" : "");
    if (rg->bucket_switch)
      fprintf(f, "; bucket switch %s: %s (%.1f us; %.1f us the other way)", rg->bucket_switch->name,
              rg->bucket_graphs ? "one graph per bucket" : "the switch",
              rg->bucket_graphs ? rg->est_bucket_graphs_us : rg->est_switch_us,
              rg->bucket_graphs ? rg->est_switch_us : rg->est_bucket_graphs_us);
    fputs(" */\n", f);
    at += (int)rg->nodes.n;
  }
  if (!p->regions.n) fputs("    {0},\n", f);
  fputs("};\n\n", f);
  if (p->comms.n) {
    fprintf(f, "/* The comms: this process is one rank of each (NAME_init's id and rank). */\n"
               "static const pgrt_comm %s_comms[] = {\n", name);
    for (size_t i = 0; i < p->comms.n; i++)
      fprintf(f, "    {\"%s\", %" PRIu32 "},\n", p->comms.v[i]->name, p->comms.v[i]->ranks);
    fputs("};\n\n", f);
  }
  fprintf(f, "static const pgrt_program %s_program = {\n", name);
  fprintf(f, "    .version = PGRT_VERSION, .name = \"%s\",\n", name);
  fprintf(f, "    .modules = %s_modules, .module_count = %zu,\n", name, p->modules.n);
  fprintf(f, "    .kernels = %s_kernels, .kernel_count = %zu,\n", name, p->kernels.n);
  fprintf(f, "    .buffers = %s_buffers, .buffer_count = %zu,\n", name, p->buffers.n);
  fprintf(f, "    .nodes = %s_nodes, .node_count = %zu,\n", name, w.order.n);
  fprintf(f, "    .regions = %s_regions, .region_count = %zu,\n", name, p->regions.n);
  if (w.bodies.n) fprintf(f, "    .bodies = %s_bodies, .body_count = %zu,\n", name, w.bodies.n);
  if (p->conditions.n) fprintf(f, "    .conditions = %s_conditions, .condition_count = %zu,\n", name, p->conditions.n);
  if (reads)
    fprintf(f, "    .reads = %s_reads, .read_count = %d, .callback_slots = %d,\n", name, reads, callbacks);
  fprintf(f, "    .arena_bytes = %" PRIu64 ", .bound_slots = %d, .weight_slots = %d, .scalar_slots = %d,\n",
          p->mem.arena_bytes, bound, weights, slot);
  fprintf(f, "    .caller_arg_nodes = %zu, .event_count = %zu,", w.caller_args, p->events.n);
  if (w.host_nodes) fprintf(f, " .host_slots = %zu,", w.host_nodes);
  fputc('\n', f);
  fprintf(f, "    .arch = \"%s\",\n", p->arch ? p->arch : "");
  if (p->dims.n) fprintf(f, "    .dims = %s_dims, .dim_count = %zu,\n", name, p->dims.n);
  if (buckets) fprintf(f, "    .bucket_dims = %s_bucket_dims, .bucket_count = %d,\n", name, buckets);
  if (p->comms.n) fprintf(f, "    .comms = %s_comms, .comm_count = %zu,\n", name, p->comms.n);
  if (pg_rng_of(p)) fprintf(f, "    .rng_increment = %" PRIu64 ",\n", pg_rng_of(p)->increment);
  fputs("};\n\n", f);

  /* the three functions */
  /* a program with comms: pgrt_init_comm, with the id and this process's rank */
  const char *init = p->comms.n ? "pgrt_init_comm" : "pgrt_init", *comm_args = p->comms.n ? ", id, rank" : "";
  fprintf(f, "pgrt_status %s_init(pgrt_ctx **ctx, const %s_weights *weights, void **const *kernel_args, "
             "CUdeviceptr arena%s) {\n", name, name, p->comms.n ? ",\n    const pgrt_nccl_id *id, int rank" : "");
  if (weights) {
    fprintf(f, "  if (!weights) /* libpgrt says what is missing */\n    return %s(ctx, &%s_program, NULL, "
               "kernel_args, arena%s);\n", init, name, comm_args);
    fprintf(f, "  const CUdeviceptr w[%d] = {", weights);
    int k = 0;
    for (size_t i = 0; i < p->buffers.n; i++)
      if (p->buffers.v[i]->role == PG_ROLE_WEIGHT) fprintf(f, "%sweights->", k++ ? ", " : ""), cname(f, p->buffers.v[i]->name);
    fprintf(f, "};\n  return %s(ctx, &%s_program, w, kernel_args, arena%s);\n}\n\n", init, name, comm_args);
  } else {
    fprintf(f, "  (void)weights;\n  return %s(ctx, &%s_program, NULL, kernel_args, arena%s);\n}\n\n", init, name,
            comm_args);
  }
  for (size_t i = 0; i < p->weights.n; i++) emit_weights_loader(&w, p->weights.v[i]);
  if (w.caller_args) {
    fprintf(f, "const char *const %s_kernel_arg_origins[%s_KERNEL_ARG_NODES] = {", name, name);
    size_t k = 0;
    for (size_t i = 0; i < w.order.n; i++) {
      const PgNode *n = w.order.v[i];
      if (n->kind != PG_KERNEL || n->u.kernel.has_args) continue;
      lput(&w, k == 0 ? "\n    " : k % 4 ? ", " : ",\n    "), k++;
      lquoted(&w, pg_node_origin(n) ? pg_node_origin(n) : n->name);
    }
    lput(&w, "\n};\n\n"), lflush(&w);
  }
  fprintf(f, "pgrt_status %s_run(pgrt_ctx *ctx, const %s_args *args, CUstream stream) {\n", name, name);
  fprintf(f, "  if (!args) return pgrt_run(ctx, NULL, NULL, NULL, NULL, NULL, stream); /* libpgrt says what is missing */\n");
  if (bound) {
    fprintf(f, "  const CUdeviceptr bound[%d] = {", bound);
    int k = 0;
    for (size_t i = 0; i < p->buffers.n; i++) {
      const PgBuffer *b = p->buffers.v[i];
      if (!pg_per_call(b)) continue;
      fprintf(f, "%sargs->", k++ ? ", " : ""), cname(f, b->name);
    }
    fputs("};\n", f);
  }
  if (slot) {
    fprintf(f, "  uint64_t scalars[%d] = {0};\n", slot);
    int k = 0;
    for (size_t i = 0; i < p->scalars.n; i++)
      if (p->scalars.v[i]->is_input) {
        fprintf(f, "  memcpy(&scalars[%d], &args->", k++), cname(f, p->scalars.v[i]->name);
        fprintf(f, ", sizeof args->"), cname(f, p->scalars.v[i]->name), fputs(");\n", f);
      }
  }
  if (w.host_nodes) {
    fprintf(f, "  const pgrt_host_fn hosts[%zu] = {", w.host_nodes);
    int k = 0;
    for (size_t i = 0; i < w.order.n; i++)
      if (w.order.v[i]->kind == PG_HOST) fprintf(f, "%sargs->", k++ ? ", " : ""), cname(f, w.order.v[i]->name);
    fputs("};\n", f);
  }
  if (callbacks) {
    fprintf(f, "  const pgrt_scalar_fn callbacks[%d] = {", callbacks);
    int k = 0;
    for (size_t i = 0; i < p->scalars.n; i++)
      if (p->scalars.v[i]->is_callback) fprintf(f, "%sargs->", k++ ? ", " : ""), cname(f, p->scalars.v[i]->name);
    fputs("};\n", f);
  }
  if (p->dims.n) {
    fprintf(f, "  const int64_t sizes[%zu] = {", p->dims.n);
    for (size_t i = 0; i < p->dims.n; i++) fprintf(f, "%sargs->", i ? ", " : ""), cname(f, p->dims.v[i]->name);
    fputs("};\n", f);
  }
  fprintf(f, "  return pgrt_run(ctx, %s, %s, %s, %s, %s, stream);\n}\n\n", bound ? "bound" : "NULL",
          slot ? "scalars" : "NULL", w.host_nodes ? "hosts" : "NULL", callbacks ? "callbacks" : "NULL",
          p->dims.n ? "sizes" : "NULL");
  fprintf(f, "void %s_destroy(pgrt_ctx **ctx) { pgrt_destroy(ctx); }\n\n", name);
  emit_info(&w);
  free(w.line);
  free_tables(&w);
}

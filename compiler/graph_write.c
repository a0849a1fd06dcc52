/*
 * graph_write.c -- prints a program in pgcc's .graph format (docs/graph-format.md).
 *
 * The output is deterministic (declaration order, one statement per line) so that
 * it diffs well, and graph_read.c reads it back to the same program: writing,
 * reading and writing again gives the same bytes.
 */
#include "pgcc.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `path` relative to the directory `dir`, both absolute and normalized (realpath):
 * /w/m/k.cubin from /w/m is k.cubin; from /w/out it is ../m/k.cubin. */
static void put_relative(FILE *f, const char *path, const char *dir) {
  size_t dl = strlen(dir);
  if (strcmp(dir, "/") == 0) {
    fputs(path + 1, f);
    return;
  }
  if (strncmp(path, dir, dl) == 0 && path[dl] == '/') { /* below dir */
    fputs(path + dl + 1, f);
    return;
  }
  size_t common = 0; /* the last '/' of the directories both start with */
  for (size_t i = 0; path[i] && path[i] == dir[i]; i++)
    if (path[i] == '/') common = i;
  for (const char *d = dir + common; *d; d++) /* up out of each of dir's own directories */
    if (*d == '/') fputs("../", f);
  fputs(path + common + 1, f);
}

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_ptr(FILE *f, PgPtr p) {
  if (!p.buf) fputs("null", f);
  else if (p.offset) fprintf(f, "%s+%" PRIu64, p.buf->name, p.offset);
  else fputs(p.buf->name, f);
}

static void put_dims(FILE *f, const char *key, const uint32_t d[3]) {
  fprintf(f, " %s [%" PRIu32 ", %" PRIu32 ", %" PRIu32 "]", key, d[0], d[1], d[2]);
}

static void put_args(FILE *f, const PgArgs *args) {
  fputs(" args [", f);
  for (size_t i = 0; i < args->n; i++) {
    const PgArg *a = &args->v[i];
    if (i) fputs(", ", f);
    switch (a->kind) {
    case PG_ARG_INT:
    case PG_ARG_FLOAT: fputs(a->lit, f); break;
    case PG_ARG_PTR: put_ptr(f, a->ptr); break;
    case PG_ARG_SCALAR: fputs(a->scalar->name, f); break;
    case PG_ARG_COND: fputs(a->cond->name, f); break;
    case PG_ARG_BYTES:
      fputc('[', f);
      put_string(f, a->lit);
      for (size_t k = 0; k < a->ptrs.n; k++) {
        fputs(", ", f);
        put_ptr(f, a->ptrs.v[k]);
      }
      fputc(']', f);
      break;
    }
  }
  fputc(']', f);
}

static void put_node(FILE *f, const PgNode *n) {
  fprintf(f, "  node %s %s", n->name, pg_kinds[n->kind].name);
  switch (n->kind) {
  case PG_KERNEL:
    fprintf(f, " %s", n->u.kernel.kernel->name);
    if (n->u.kernel.grid[0]) {
      put_dims(f, "grid", n->u.kernel.grid);
      put_dims(f, "block", n->u.kernel.block);
      fprintf(f, " smem %" PRIu32, n->u.kernel.smem);
    }
    if (n->u.kernel.cooperative) fputs(" cooperative 1", f);
    if (n->u.kernel.priority) fprintf(f, " priority %d", n->u.kernel.priority);
    if (n->u.kernel.cluster[0])
      fprintf(f, " cluster [%u, %u, %u]", n->u.kernel.cluster[0], n->u.kernel.cluster[1], n->u.kernel.cluster[2]);
    if (n->u.kernel.has_args) put_args(f, &n->u.kernel.args);
    break;
  case PG_MEMCPY:
    fprintf(f, " dir %s", pg_dir_names[n->u.memcpy.dir]);
    if (n->u.memcpy.has_ptrs) {
      fputs(" src ", f);
      put_ptr(f, n->u.memcpy.src);
      fputs(" dst ", f);
      put_ptr(f, n->u.memcpy.dst);
    }
    fprintf(f, " width %" PRIu64, n->u.memcpy.width);
    if (n->u.memcpy.height != 1) fprintf(f, " height %" PRIu64, n->u.memcpy.height);
    if (n->u.memcpy.depth != 1) fprintf(f, " depth %" PRIu64, n->u.memcpy.depth);
    if (n->u.memcpy.src_pitch) fprintf(f, " src_pitch %" PRIu64, n->u.memcpy.src_pitch);
    if (n->u.memcpy.dst_pitch) fprintf(f, " dst_pitch %" PRIu64, n->u.memcpy.dst_pitch);
    if (n->u.memcpy.pageable) fputs(" pageable", f);
    break;
  case PG_MEMSET:
    if (n->u.memset.has_dst) {
      fputs(" dst ", f);
      put_ptr(f, n->u.memset.dst);
    }
    fprintf(f, " value %" PRIu32, n->u.memset.value);
    if (n->u.memset.elem) fprintf(f, " elem %" PRIu32, n->u.memset.elem);
    fprintf(f, " width %" PRIu64, n->u.memset.width);
    if (n->u.memset.height != 1) fprintf(f, " height %" PRIu64, n->u.memset.height);
    if (n->u.memset.pitch) fprintf(f, " pitch %" PRIu64, n->u.memset.pitch);
    break;
  case PG_HOST:
    fprintf(f, " fn 0x%" PRIx64 " data 0x%" PRIx64, n->u.host.fn, n->u.host.data);
    break;
  case PG_CHILD: fprintf(f, " body %s", n->u.child.body->name); break;
  case PG_EVENT_RECORD:
  case PG_EVENT_WAIT:
    if (n->u.event.event) fprintf(f, " event %s", n->u.event.event->name);
    break;
  case PG_MEM_ALLOC:
  case PG_MEM_FREE:
    if (n->u.mem.buf) fprintf(f, " buffer %s", n->u.mem.buf->name);
    break;
  case PG_CONDITIONAL:
    fprintf(f, " type %s", pg_cond_names[n->u.cond.type]);
    if (n->u.cond.has_handle) fprintf(f, " handle %" PRIu64, n->u.cond.handle);
    if (n->u.cond.condition) fprintf(f, " condition %s", n->u.cond.condition->name);
    if (n->u.cond.dim) fprintf(f, " bucket %s", n->u.cond.dim->name);
    fputs(" bodies [", f);
    for (size_t i = 0; i < n->u.cond.bodies.n; i++)
      fprintf(f, "%s%s", i ? ", " : "", n->u.cond.bodies.v[i]->name);
    fputc(']', f);
    break;
  case PG_LIBCALL:
    fputs(" fn ", f);
    put_string(f, n->u.libcall.fn);
    if (n->u.libcall.coll) {
      const PgCollective *c = n->u.libcall.coll;
      fprintf(f, " comm %s send ", c->comm->name);
      put_ptr(f, c->send);
      fputs(" recv ", f);
      put_ptr(f, c->recv);
      fprintf(f, " count %" PRIu64 " dtype %s", c->count, pg_type_names[c->dtype]);
      if (pg_colls[c->kind].has_op) fprintf(f, " op %s", pg_redop_names[c->op]);
    } else {
      put_args(f, &n->u.libcall.args);
    }
    break;
  case PG_HOSTOP:
    fprintf(f, " op %s", n->u.hostop.op);
    if (n->u.hostop.buf) fprintf(f, " buffer %s expect ", n->u.hostop.buf->name), put_string(f, n->u.hostop.expect);
    fputs(" reason ", f);
    put_string(f, n->u.hostop.reason);
    break;
  case PG_OPAQUE:
    fputs(" what ", f);
    put_string(f, n->u.opaque.what);
    break;
  case PG_EMPTY: break;
  case PG_NODE_KIND_COUNT: PG_BUG("bad node kind");
  }
  if (pg_node_gpu_us(n) > 0) fprintf(f, " gpu_us %.9g", pg_node_gpu_us(n));
  if (pg_node_eager(n)) {
    fputs(" eager ", f);
    put_string(f, pg_node_eager(n));
  }
  if (pg_node_origin(n)) {
    fputs(" origin ", f);
    put_string(f, pg_node_origin(n));
  }
  fputs(";\n", f);
}

/* ` file "..."`: where the file is, seen from the output's directory when known. */
static void put_file(FILE *f, const char *file, const char *path, const char *dir) {
  if (!path || !dir) {
    fputs(" file ", f), put_string(f, file);
    return;
  }
  char *rel;
  size_t n;
  FILE *mem = open_memstream(&rel, &n);
  put_relative(mem, path, dir);
  fclose(mem);
  fputs(" file ", f), put_string(f, rel);
  free(rel);
}

/* The oldest format version that says everything p holds: 3 for edge kinds; 2 for
 * relocations other than whole addresses, for don't-care bytes, for thread block
 * clusters and for module globals; else 1, which every pgcc reads.  (Host reads and buckets are optional
 * statements and attributes of either version.) */
int pg_graph_min_version(const PgProgram *p) {
  for (size_t g = 0; g < p->graphs.n; g++)
    for (size_t i = 0; i < p->graphs.v[g]->edge_kinds.n; i++)
      if (p->graphs.v[g]->edge_kinds.v[i] != PG_EDGE_FULL) return 3;
  for (size_t i = 0; i < p->modules.n; i++)
    if (p->modules.v[i]->globals.n) return 2;
  for (size_t g = 0; g < p->graphs.n; g++)
    for (size_t i = 0; i < p->graphs.v[g]->nodes.n; i++) {
      const PgNode *n = p->graphs.v[g]->nodes.v[i];
      if (n->kind == PG_KERNEL && n->u.kernel.cluster[0]) return 2;
    }
  for (size_t i = 0; i < p->kernels.n; i++)
    for (size_t j = 0; j < p->kernels.v[i]->params.n; j++) {
      const PgParam *pa = &p->kernels.v[i]->params.v[j];
      if (pa->dontcare.n) return 2;
      for (size_t q = 0; q < pa->ptrs.n; q++)
        if (pa->ptrs.v[q].kind != PG_RELOC_ABS64) return 2;
    }
  return 1;
}

void pg_graph_write(const PgProgram *p, FILE *f, const char *out_dir) {
  char cwd[PATH_MAX], *dir = NULL;
  if (out_dir) dir = realpath(out_dir, NULL);
  if (!dir && getcwd(cwd, sizeof cwd)) dir = strdup(cwd);
  fprintf(f, "# pgcc launch program (written by pgcc %s)\n", PGCC_VERSION);
  fprintf(f, "pgcc %d;\n", pg_graph_min_version(p));
  if (p->arch) fprintf(f, "arch %s;\n", p->arch);

  if (p->modules.n) fputc('\n', f);
  for (size_t i = 0; i < p->modules.n; i++) {
    const PgModule *m = p->modules.v[i];
    fprintf(f, "module %s %s", m->name, pg_module_kind_names[m->kind]);
    if (m->file) put_file(f, m->file, m->path, dir);
    if (m->library) fputs(" library ", f), put_string(f, m->library);
    if (m->sha256) fputs(" sha256 ", f), put_string(f, m->sha256);
    if (m->globals.n) {
      fputs(" globals [", f);
      for (size_t g = 0; g < m->globals.n; g++) {
        const PgGlobal *gl = &m->globals.v[g];
        fputs(g ? ", " : "", f);
        put_string(f, gl->name);
        fputs(" \"", f);
        for (uint32_t b = 0; b < gl->size; b++) fprintf(f, "%02x", gl->bytes[b]);
        fputc('"', f);
      }
      fputc(']', f);
    }
    fputs(";\n", f);
  }

  if (p->weights.n) fputc('\n', f);
  for (size_t i = 0; i < p->weights.n; i++) {
    fprintf(f, "weights %s", p->weights.v[i]->name);
    put_file(f, p->weights.v[i]->file, p->weights.v[i]->path, dir);
    fputs(";\n", f);
  }

  if (p->dims.n) fputc('\n', f);
  for (size_t i = 0; i < p->dims.n; i++) {
    const PgDim *d = p->dims.v[i];
    fprintf(f, "dim %s values [", d->name);
    for (size_t k = 0; k < d->values.n; k++) fprintf(f, "%s%" PRId64, k ? ", " : "", d->values.v[k]);
    fprintf(f, "] %s;\n", d->pad ? "pad" : "exact");
  }

  if (p->comms.n) fputc('\n', f);
  for (size_t i = 0; i < p->comms.n; i++) fprintf(f, "comm %s ranks %" PRIu32 ";\n", p->comms.v[i]->name, p->comms.v[i]->ranks);

  if (p->kernels.n) fputc('\n', f);
  for (size_t i = 0; i < p->kernels.n; i++) {
    const PgKernel *k = p->kernels.v[i];
    fprintf(f, "kernel %s symbol ", k->name);
    put_string(f, k->symbol);
    if (k->module) fprintf(f, " module %s", k->module->name);
    if (k->has_entry) fprintf(f, " entry %" PRIu64, k->entry);
    if (!k->has_layout) {
      fputs(";\n", f);
      continue;
    }
    fputs(" {\n", f);
    for (size_t j = 0; j < k->params.n; j++) {
      const PgParam *pa = &k->params.v[j];
      fprintf(f, "  param %" PRIu32 " %" PRIu32 " %s", pa->offset, pa->size, pg_type_names[pa->type]);
      if (pa->type == PG_T_BYTES && pa->ptrs.n) { /* a whole address is a bare offset, as in version 1 */
        fputs(" ptrs [", f);
        for (size_t q = 0; q < pa->ptrs.n; q++) {
          const PgReloc *r = &pa->ptrs.v[q];
          fputs(q ? ", " : "", f);
          if (r->kind != PG_RELOC_ABS64) fprintf(f, "%s ", pg_relocs[r->kind].name);
          fprintf(f, "%" PRIu32, r->offset);
        }
        fputc(']', f);
      }
      if (pa->type == PG_T_BYTES && pa->dontcare.n) {
        fputs(" dontcare [", f);
        for (size_t q = 0; q < pa->dontcare.n; q++)
          fprintf(f, "%s%" PRIu32 ":%" PRIu32, q ? ", " : "", pa->dontcare.v[q].offset, pa->dontcare.v[q].size);
        fputc(']', f);
      }
      if (pa->access) fprintf(f, " access %s", pg_access_names[pa->access]);
      else if (pa->type == PG_T_BYTES && pg_param_accesses(pa)) { /* one per pointer (unknown: both) */
        fputs(" access [", f);
        for (size_t q = 0; q < pa->ptrs.n; q++)
          fprintf(f, "%s%s", q ? ", " : "", pg_access_names[pa->ptrs.v[q].access ? pa->ptrs.v[q].access : PG_ACCESS_RW]);
        fputc(']', f);
      }
      fputs(";\n", f);
    }
    fputs("}\n", f);
  }

  if (p->buffers.n) fputc('\n', f);
  for (size_t i = 0; i < p->buffers.n; i++) {
    const PgBuffer *b = p->buffers.v[i];
    fprintf(f, "buffer %s size %" PRIu64, b->name, b->size);
    if (b->align) fprintf(f, " align %" PRIu64, b->align);
    fprintf(f, " role %s", pg_role_names[b->role]);
    if (b->has_dtype) fprintf(f, " dtype %s", pg_type_names[b->dtype]);
    if (b->has_shape) {
      fputs(" shape [", f);
      for (size_t j = 0; j < b->shape.n; j++) {
        fputs(j ? ", " : "", f);
        if (b->shape_dims && b->shape_dims[j]) fputs(b->shape_dims[j]->name, f);
        else fprintf(f, "%" PRId64, b->shape.v[j]);
      }
      fputc(']', f);
    }
    if (b->has_addr) fprintf(f, " addr 0x%" PRIx64, b->addr);
    if (b->weights) fprintf(f, " weights %s tensor ", b->weights->name), put_string(f, b->tensor);
    if (b->role == PG_ROLE_RNG) fprintf(f, " increment %" PRIu64, b->increment);
    fputs(";\n", f);
  }

  if (p->scalars.n) fputc('\n', f);
  for (size_t i = 0; i < p->scalars.n; i++) {
    const PgScalar *s = p->scalars.v[i];
    fprintf(f, "scalar %s type %s", s->name, pg_type_names[s->type]);
    if (s->is_input) fputs(" input", f);
    if (s->value) fprintf(f, " value %s", s->value);
    if (s->from) fprintf(f, " from %s", s->from->name);
    if (s->is_callback) fputs(" callback", f);
    if (s->bucket) fprintf(f, " bucket %s", s->bucket->name);
    fputs(";\n", f);
  }

  if (p->events.n) fputc('\n', f);
  for (size_t i = 0; i < p->events.n; i++) {
    const PgEvent *e = p->events.v[i];
    fprintf(f, "event %s", e->name);
    if (e->has_handle) fprintf(f, " handle 0x%" PRIx64, e->handle);
    fputs(";\n", f);
  }

  if (p->conditions.n) fputc('\n', f);
  for (size_t i = 0; i < p->conditions.n; i++)
    fprintf(f, "condition %s default %" PRIu32 ";\n", p->conditions.v[i]->name, p->conditions.v[i]->default_value);

  for (size_t gi = 0; gi < p->graphs.n; gi++) {
    const PgGraph *g = p->graphs.v[gi];
    fprintf(f, "\ngraph %s {\n", g->name);
    for (size_t i = 0; i < g->nodes.n; i++) put_node(f, g->nodes.v[i]);
    for (size_t i = 0; i < g->edges.n; i++) {
      const PgEdge *e = &g->edges.v[i];
      PgEdgeKind k = pg_edge_kind(g, i);
      fprintf(f, "  %s -> %s%s%s;\n", e->from->name, e->to->name, k ? " " : "", pg_edge_kinds[k]);
    }
    fputs("}\n", f);
  }
  free(dir);
}

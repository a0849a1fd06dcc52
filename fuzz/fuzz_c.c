/*
 * fuzz_c.c -- libFuzzer target for the .graph-to-C path through libpgrt's host side:
 * the input is .graph text, which goes through what `pgcc --emit=c` does (read,
 * verify, kernel signatures, architectures, every pass, the C check) and, when the C
 * check accepts it, the generated C is compiled in this process by libtcc against
 * runtime/pgrt.h and the CUDA headers, relocated, and its entry points taken
 * (NAME_info, NAME_init, NAME_run, NAME_destroy, and the program table through an
 * accessor appended to the C).  The program then goes through NAME_init, two NAME_run
 * calls (the second with every buffer moved) and NAME_destroy over the CPU double of
 * the CUDA driver (tests/fakecuda, loaded through PGRT_LIBCUDA, FAKECUDA_KERNELS=own:
 * only libpgrt's own kernels run, the program's launch as nothing).
 *
 * The property: C that pgcc generates compiles, and libpgrt inits and runs it or
 * returns a pgrt status -- no crash, sanitizer report, hang or leak (device memory is
 * counted after every input); a failed init leaves no context; after a call the
 * double's context has no sticky fault.  What is only compiled, or only initialised,
 * and why: docs/fuzzing.md.  Module paths resolve from the working directory (the
 * repository root); FUZZ_C_EXPECT_OK=1 (seeds) makes every step's failure a finding.
 */
#include "fuzz_passes.h"
#include "pgcc.h"
#include "pgrt.h"

#include <cuda.h>
#include <libtcc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_RUNTIME_INCLUDE
#define FUZZ_RUNTIME_INCLUDE "runtime"
#endif
#ifndef FUZZ_CUDA_INCLUDE
#define FUZZ_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

enum { MAX_BYTES = 64 << 20 }; /* a program needing more (arena, buffers, weights) is only compiled */

static CUstream stream;
static FILE *devnull;
static int expect_ok; /* FUZZ_C_EXPECT_OK=1: every input must generate, compile, init and run */
static long generated, executed, inited, ran; /* inputs that got so far, said at exit */

static void release(void) {
  cuStreamDestroy(stream);
  fclose(devnull);
  fprintf(stderr, "fuzz_c: %ld inputs generated C and compiled, %ld went to init, %ld inited, %ld ran both calls\n",
          generated, executed, inited, ran);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  if (!getenv("PGRT_LIBCUDA")) { fprintf(stderr, "fuzz_c: set PGRT_LIBCUDA to the fake driver\n"); exit(2); }
  setenv("FAKECUDA_KERNELS", "own", 1);
  const char *e = getenv("FUZZ_C_EXPECT_OK");
  expect_ok = e && strcmp(e, "1") == 0;
  CUdevice d;
  CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
      cuStreamCreate(&stream, CU_STREAM_DEFAULT))
    exit(2);
  if (!(devnull = fopen("/dev/null", "w"))) exit(2);
  atexit(release);
  return 0;
}

/* a step that must not fail: a finding, with what the program was */
#define FINDING(...) (fprintf(stderr, "fuzz_c: " __VA_ARGS__), fputc('\n', stderr), abort())

/* the C that pgcc generates for the program, or NULL where its checks refuse it */
static char *generate(const char *text, size_t *len) {
  PgArena *a = pg_arena_new();
  PgDiag d = {.out = expect_ok ? stderr : devnull, .max_errors = 20};
  PgProgram *p = pg_graph_read(a, &d, pg_source_from_string(a, "fuzz", text));
  char *c = NULL;
  if (p && d.errors == 0 && pg_verify(p, &d) == 0 && pg_check_signatures(p, &d) == 0 && d.errors == 0 &&
      pg_check_arch(p, &d) == 0) {
    /* the passes as pgcc_main runs them, with its defaults */
    fuzz_passes(p, &d, false);
    if (pg_c_check(p, &d) == 0) {
      FILE *f = open_memstream(&c, len);
      pg_emit_c(p, "fuzz", "fuzz.graph", f);
      /* the program table, static in the C, for the harness to look at */
      fputs("\nconst pgrt_program *fuzz_c_table(void) { return &fuzz_program; }\n", f);
      fclose(f);
    }
  }
  if (expect_ok && !c) FINDING("a seed that pgcc does not generate C for");
  pg_arena_free(a);
  return c;
}

static void tcc_error(void *opaque, const char *msg) {
  fprintf(stderr, "fuzz_c: tcc: %s\n", msg);
  *(int *)opaque = 1;
}

/* the generated program, compiled and relocated in memory */
typedef struct {
  TCCState *s;
  const pgrt_program_info *(*info)(void);
  const pgrt_program *(*table)(void);
  pgrt_status (*init)(pgrt_ctx **, const void *, void **const *, CUdeviceptr);
  pgrt_status (*run)(pgrt_ctx *, const void *, CUstream);
  void (*destroy)(pgrt_ctx **);
} Compiled;

static void compile(const char *c, Compiled *out) {
  int failed = 0;
  TCCState *s = tcc_new();
  if (!s) FINDING("tcc_new failed");
  tcc_set_error_func(s, &failed, tcc_error);
  tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
  tcc_add_include_path(s, FUZZ_RUNTIME_INCLUDE);
  tcc_add_include_path(s, FUZZ_CUDA_INCLUDE);
  /* libpgrt, linked into this process: the generated code calls it */
  tcc_add_symbol(s, "pgrt_init", (const void *)pgrt_init);
  tcc_add_symbol(s, "pgrt_init_comm", (const void *)pgrt_init_comm);
  tcc_add_symbol(s, "pgrt_run", (const void *)pgrt_run);
  tcc_add_symbol(s, "pgrt_destroy", (const void *)pgrt_destroy);
  tcc_add_symbol(s, "pgrt_error", (const void *)pgrt_error);
  if (tcc_compile_string(s, c) != 0 || failed) FINDING("the generated C does not compile:\n%s", c);
  if (tcc_relocate(s, TCC_RELOCATE_AUTO) < 0 || failed) FINDING("the generated C does not link:\n%s", c);
  *out = (Compiled){s, tcc_get_symbol(s, "fuzz_info"), tcc_get_symbol(s, "fuzz_c_table"),
                    tcc_get_symbol(s, "fuzz_init"), tcc_get_symbol(s, "fuzz_run"), tcc_get_symbol(s, "fuzz_destroy")};
  if (!out->info || !out->table || !out->init || !out->run || !out->destroy)
    FINDING("the generated C lacks an entry point");
}

/* the callbacks a program's host nodes and callback scalars get: nothing, and 0 */
static void host_nothing(void *data) { (void)data; }
static int scalar_zero(void *data, const void *const *host, uint64_t *value) {
  (void)data, (void)host, (void)value;
  return 0;
}

static size_t device_free(void) {
  size_t f = 0, t = 0;
  if (cuMemGetInfo(&f, &t) != CUDA_SUCCESS) FINDING("the double's context has a sticky fault");
  return f;
}

/* a while node's end is its body's kernels' doing, which the double does not run */
static int has_while(const pgrt_program *pr) {
  for (int i = 0; i < pr->node_count; i++)
    if (pr->nodes[i].kind == PGRT_NODE_CONDITIONAL && pr->nodes[i].cond_type == PGRT_COND_WHILE) return 1;
  return 0;
}

/* one call's arguments: device memory of each buffer field's size (kept in mem), the
 * dims' largest sizes, zero scalars, callbacks that do nothing */
static void fill(const pgrt_program_info *info, const pgrt_field *fields, int n, unsigned char *st,
                 CUdeviceptr *mem) {
  for (int i = 0; i < n; i++) {
    const pgrt_field *f = &fields[i];
    unsigned char *at = st + f->offset;
    mem[i] = 0;
    switch (f->role) {
    case PGRT_FIELD_INPUT:
    case PGRT_FIELD_OUTPUT:
    case PGRT_FIELD_INOUT:
    case PGRT_FIELD_WEIGHT:
      if (cuMemAlloc(&mem[i], f->size ? f->size : 1) != CUDA_SUCCESS) FINDING("cuMemAlloc of %zu bytes", f->size);
      memcpy(at, &mem[i], sizeof mem[i]);
      break;
    case PGRT_FIELD_HOST_FN: {
      pgrt_host_fn h = {host_nothing, NULL};
      memcpy(at, &h, sizeof h);
      break;
    }
    case PGRT_FIELD_SCALAR_FN: {
      pgrt_scalar_fn cb = {scalar_zero, NULL};
      memcpy(at, &cb, sizeof cb);
      break;
    }
    case PGRT_FIELD_SIZE: {
      int64_t v = 1;
      for (int k = 0; k < info->n_dims; k++)
        if (strcmp(info->dims[k].name, f->name) == 0 && info->dims[k].n_values > 0)
          v = info->dims[k].values[info->dims[k].n_values - 1];
      memcpy(at, &v, sizeof v);
      break;
    }
    default: break; /* a scalar: zero */
    }
  }
}

static void unfill(CUdeviceptr *mem, int n) {
  for (int i = 0; i < n; i++)
    if (mem[i]) cuMemFree(mem[i]);
}

static uint64_t bytes_of(const pgrt_field *fields, int n) {
  uint64_t sum = 0;
  for (int i = 0; i < n; i++)
    if (fields[i].role <= PGRT_FIELD_INOUT || fields[i].role == PGRT_FIELD_WEIGHT) sum += fields[i].size;
  return sum;
}

static void execute(const Compiled *cp) {
  const pgrt_program_info *info = cp->info();
  const pgrt_program *pr = cp->table();
  if (info->n_comms > 0) return; /* NCCL, which the double does not stand in for */
  if (info->arena_bytes > MAX_BYTES || bytes_of(info->args, info->n_args) > MAX_BYTES ||
      bytes_of(info->weights, info->n_weights) > MAX_BYTES)
    return;
  executed++;
  size_t before = device_free();
  unsigned char *weights = calloc(1, info->weights_size + 1), *args = calloc(1, info->args_size + 1);
  CUdeviceptr *wmem = calloc((size_t)info->n_weights + 1, sizeof *wmem);
  CUdeviceptr *amem = calloc((size_t)info->n_args + 1, sizeof *amem);
  if (!weights || !args || !wmem || !amem) FINDING("out of memory");
  fill(info, info->weights, info->n_weights, weights, wmem);
  pgrt_ctx *ctx = NULL;
  pgrt_status st = cp->init(&ctx, info->n_weights ? weights : NULL, NULL, 0);
  if (st != PGRT_OK) {
    if (ctx) FINDING("a failed init left a context");
    if (expect_ok) FINDING("init failed: %s", pgrt_error());
  } else if (inited++, !has_while(pr)) {
    int ok = 0;
    for (int call = 0; call < 2; call++) {
      fill(info, info->args, info->n_args, args, amem); /* new addresses on every call */
      st = cp->run(ctx, args, stream);
      if (st != PGRT_OK && expect_ok) FINDING("call %d failed: %s", call, pgrt_error());
      ok += st == PGRT_OK;
      if (cuStreamSynchronize(stream) != CUDA_SUCCESS) FINDING("call %d faulted on the double", call);
      unfill(amem, info->n_args);
    }
    ran += ok == 2;
  }
  cp->destroy(&ctx);
  if (ctx) FINDING("destroy left its context");
  unfill(wmem, info->n_weights);
  if (device_free() != before) FINDING("device memory left allocated: %zu bytes", before - device_free());
  free(weights), free(args), free(wmem), free(amem);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size > 1 << 16) return 0;
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  size_t len = 0;
  char *c = generate(text, &len);
  free(text);
  if (!c) return 0;
  Compiled cp;
  compile(c, &cp);
  generated++;
  execute(&cp);
  tcc_delete(cp.s);
  free(c);
  return 0;
}

/*
 * deploy.c -- run a pgcc export from C: weights from its safetensors file, inputs
 * from its NAME.io.safetensors, outputs to a safetensors file, and with --expect a
 * comparison against the outputs PyTorch gave.  Copy it with its Makefile; it knows
 * the program only through the generated header and NAME_info(), so it fits any
 * export (`make EXPORT=dir NAME=name` builds it for one).
 *
 *   deploy [--expect] [--tol T] [--calls N] [--dry-run] WEIGHTS IO OUT
 *
 * WEIGHTS: the export's NAME.safetensors ("-" for a program without weights).
 * IO: a safetensors file holding a tensor per input, named as the NAME_args field
 * (pgcc-export's NAME.io.safetensors: in0, in1, ..., and the expected out0, ...);
 * per-call scalars are read from it too (a tensor of one element), and so is a dim's
 * size (an i64; absent: the dim's largest value, the size the fields are described at,
 * so a program with shape buckets runs its largest).  OUT: the outputs
 * (and buffers of unknown role) are written there, named as their fields.
 * --expect compares them with the tensors of the same names in IO, prints the
 * largest error and fails when one is off by more than T * (1 + |expected|)
 * (T: 1e-5, or 1e-2 for f16 and bf16).  --calls N runs the program N times, as a
 * serving loop would, each call on buffers at new addresses (the last call's freed
 * first): nothing is copied or captured again; the last call's outputs are the ones
 * written and compared.  --dry-run does everything but the GPU (the
 * "outputs" are the expected ones): the file handling, on a machine without one.
 *
 * Built with -DPGRT_NAME=name -DPGRT_HEADER='"name.h"' and, when the program has
 * weights, -DPGRT_WEIGHTS=w (its loader is name_load_w); the Makefile does that.
 */
#include PGRT_HEADER

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(suffix) CAT(PGRT_NAME, suffix) /* API(_run) is name_run */

/* The CUDA driver's functions, as libpgrt loaded them (pgrt_cuda): deploy does not link
 * libcuda, so it starts, and --dry-run runs, on a machine without the driver. */
static const pgrt_driver *drv;

/* What deploy holds of the GPU (the weights' block, the program, the buffers, the
 * stream, the context), released on every way out, the failures' too. */
static struct {
  CUdeviceptr block, *dptr;
  int n;
  pgrt_ctx *ctx;
  CUstream stream;
  CUcontext cu;
  CUdevice dev;
} held;
static void release(void) {
  if (!drv) return; /* the driver never loaded: nothing was had */
  API(_destroy)(&held.ctx);
  for (int i = 0; held.dptr && i < held.n; i++)
    if (held.dptr[i]) drv->cuMemFree(held.dptr[i]), held.dptr[i] = 0;
  if (held.block) drv->cuMemFree(held.block), held.block = 0;
  if (held.stream) drv->cuStreamDestroy(held.stream), held.stream = NULL;
  if (held.cu) drv->cuDevicePrimaryCtxRelease(held.dev), held.cu = NULL;
}

/* The one check: a CUDA call or a libpgrt call, the call's text, where, and why. */
static void check_cu(CUresult r, const char *call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char *s = "unknown error";
  drv->cuGetErrorString(r, &s);
  fprintf(stderr, "deploy: %s failed (deploy.c:%d): CUresult %d, %s\n", call, line, (int)r, s);
  release();
  exit(1);
}
static void check_pg(pgrt_status st, const char *call, int line) {
  if (st == PGRT_OK) return;
  fprintf(stderr, "deploy: %s failed (deploy.c:%d): status %d: %s\n", call, line, (int)st, pgrt_error());
  release();
  exit(1);
}
#define CHECK(call) _Generic((call), CUresult: check_cu, pgrt_status: check_pg)((call), #call, __LINE__)

static void die(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "deploy: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  release();
  exit(1);
}

/* pgcc's dtype names are safetensors' in lower case ("bf16", "BF16"). */
static int same_dtype(const char *pgcc, const char *st) {
  for (; *pgcc && toupper((unsigned char)*pgcc) == *st; pgcc++, st++) continue;
  return !*pgcc && !*st;
}

/* A tensor of IO for field f, checked against it; 0 if IO has none of that name. */
static int read_for(const char *io, const pgrt_field *f, pgrt_host_tensor *t) {
  pgrt_host_tensor probe;
  if (pgrt_tensor_read(io, f->name, &probe) != PGRT_OK) {
    if (strstr(pgrt_error(), "no tensor named")) return 0;
    CHECK(pgrt_tensor_read(io, f->name, t)); /* the real reason, and exit */
  }
  *t = probe;
  if (t->size != f->size) {
    char sizes[64];
    snprintf(sizes, sizeof sizes, "%llu bytes, the field %llu", (unsigned long long)t->size,
             (unsigned long long)f->size);
    die("tensor '%s' of the io file is %s", f->name, sizes);
  }
  if (f->dtype[0] && !same_dtype(f->dtype, t->dtype)) die("tensor '%s' of the io file is not %s", f->name, f->dtype);
  return 1;
}

/* Element i of a tensor as a double, for the comparison (0 for a dtype it does not know). */
static double element(const pgrt_host_tensor *t, uint64_t i) {
  const unsigned char *p = t->data;
  const char *d = t->dtype;
  uint32_t bits;
  float v;
  if (!strcmp(d, "F32")) return memcpy(&v, p + 4 * i, 4), v;
  if (!strcmp(d, "F64")) {
    double x;
    return memcpy(&x, p + 8 * i, 8), x;
  }
  if (!strcmp(d, "BF16")) {
    bits = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
    return memcpy(&v, &bits, 4), v;
  }
  if (!strcmp(d, "F16")) {
    unsigned h = (unsigned)(p[2 * i] | p[2 * i + 1] << 8), e = h >> 10 & 31, m = h & 1023;
    double x = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, (int)e - 25);
    return h & 0x8000 ? -x : x;
  }
  if (!strcmp(d, "I64")) {
    int64_t x;
    return memcpy(&x, p + 8 * i, 8), (double)x;
  }
  if (!strcmp(d, "I32")) {
    int32_t x;
    return memcpy(&x, p + 4 * i, 4), x;
  }
  if (!strcmp(d, "U8") || !strcmp(d, "BOOL")) return p[i];
  return 0;
}

static unsigned elem_bytes(const char *d) {
  if (!strcmp(d, "F64") || !strcmp(d, "I64")) return 8;
  if (!strcmp(d, "F32") || !strcmp(d, "I32")) return 4;
  if (!strcmp(d, "F16") || !strcmp(d, "BF16")) return 2;
  if (!strcmp(d, "U8") || !strcmp(d, "BOOL")) return 1;
  return 0;
}

/* got against want: the largest absolute error; *bad counts elements off by more
 * than tol * (1 + |want|).  Other dtypes are compared byte for byte. */
static double compare(const pgrt_host_tensor *got, const pgrt_host_tensor *want, double tol, uint64_t *bad) {
  unsigned eb = elem_bytes(want->dtype);
  double worst = 0;
  *bad = 0;
  if (!eb || strcmp(got->dtype, want->dtype) != 0 || got->size != want->size) {
    *bad = got->size != want->size || memcmp(got->data, want->data, (size_t)want->size) != 0;
    return *bad ? INFINITY : 0;
  }
  for (uint64_t i = 0; i < want->size / eb; i++) {
    double a = element(got, i), b = element(want, i), e = fabs(a - b);
    if (isnan(a) && isnan(b)) continue;
    if (isnan(e) || e > tol * (1 + fabs(b))) ++*bad;
    if (isnan(e) || e > worst) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}

int main(int argc, char **argv) {
  int expect = 0, dry = 0, calls = 1;
  double tol = -1;
  const char *paths[3];
  int np = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--expect")) expect = 1;
    else if (!strcmp(argv[i], "--dry-run")) dry = 1;
    else if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atof(argv[++i]);
    else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
    else if ((argv[i][0] == '-' && argv[i][1]) || np == 3) np = 4;
    else paths[np++] = argv[i];
  }
  if (np != 3 || calls < 1) {
    fprintf(stderr, "usage: %s [--expect] [--tol T] [--calls N] [--dry-run] WEIGHTS IO OUT\n", argv[0]);
    return 2;
  }
  const char *wpath = paths[0], *io = paths[1], *out_path = paths[2];
  const pgrt_program_info *info = API(_info)();

  /* the host side first: every field bound from the io file, before any GPU work */
  int n = info->n_args;
  pgrt_host_tensor *in = calloc((size_t)n + 1, sizeof *in), *want = calloc((size_t)n + 1, sizeof *want);
  pgrt_host_tensor *got = calloc((size_t)n + 1, sizeof *got);
  int *have_want = calloc((size_t)n + 1, sizeof *have_want);
  API(_args) args;
  memset(&args, 0, sizeof args);
  if (!in || !want || !got || !have_want) die("%s%s", "out of memory", "");
  for (int i = 0; i < n; i++) {
    const pgrt_field *f = &info->args[i];
    switch (f->role) {
    case PGRT_FIELD_INPUT:
      if (!read_for(io, f, &in[i])) die("the io file has no tensor '%s' for input field '%s'", f->name, f->name);
      break;
    case PGRT_FIELD_INOUT: /* role unknown: given if the io file has it, else zeros */
      if (!read_for(io, f, &in[i])) {
        in[i].size = f->size;
        if (!(in[i].data = calloc(1, f->size ? f->size : 1))) die("%s%s", "out of memory", "");
        fprintf(stderr, "deploy: warning: buffer '%s' (role unknown) starts as zeros\n", f->name);
      }
      break;
    case PGRT_FIELD_OUTPUT:
      have_want[i] = read_for(io, f, &want[i]);
      if (expect && !have_want[i]) die("--expect: the io file has no tensor '%s'%s", f->name, " to compare with");
      break;
    case PGRT_FIELD_SCALAR:
      if (!read_for(io, f, &in[i])) die("scalar '%s': the io file has no tensor of that name%s", f->name, "");
      memcpy((char *)&args + f->offset, in[i].data, f->size);
      break;
    case PGRT_FIELD_HOST_FN:
      die("the program calls a host function ('%s'), which this example cannot know%s", f->name, "");
      break;
    case PGRT_FIELD_SCALAR_FN:
      die("the program takes a callback scalar ('%s'), which this example cannot know%s", f->name, "");
      break;
    case PGRT_FIELD_SIZE: /* a dim's size; absent: its largest value, at which the buffers are sized */
      if (read_for(io, f, &in[i])) {
        memcpy((char *)&args + f->offset, in[i].data, f->size);
      } else {
        int64_t most = 0;
        for (int d = 0; d < info->n_dims; d++)
          if (strcmp(info->dims[d].name, f->name) == 0) most = info->dims[d].values[info->dims[d].n_values - 1];
        memcpy((char *)&args + f->offset, &most, sizeof most);
      }
      break;
    case PGRT_FIELD_WEIGHT: break;
    }
  }

  CUdeviceptr *dptr = held.dptr = calloc((size_t)n + 1, sizeof *dptr);
  held.n = n;
  if (!dptr) die("%s%s", "out of memory", "");
  if (dry) {
    for (int i = 0; i < n; i++) /* the file handling without a GPU: outputs as expected */
      if (have_want[i]) got[i] = want[i], got[i].data = malloc(want[i].size ? want[i].size : 1),
                        memcpy(got[i].data, want[i].data, want[i].size);
    (void)wpath;
  } else {
    CHECK(pgrt_cuda(&drv)); /* loads the driver: PGRT_LIBCUDA, else libcuda.so.1 */
    CHECK(drv->cuInit(0));
    CHECK(drv->cuDeviceGet(&held.dev, 0));
    CHECK(drv->cuDevicePrimaryCtxRetain(&held.cu, held.dev));
    CHECK(drv->cuCtxSetCurrent(held.cu));
    API(_weights) weights;
    memset(&weights, 0, sizeof weights);
#ifdef PGRT_WEIGHTS
    CHECK(CAT(API(_load_), PGRT_WEIGHTS)(wpath, &weights, &held.block));
#endif
    CHECK(API(_init)(&held.ctx, &weights, NULL, 0));
    CHECK(drv->cuStreamCreate(&held.stream, CU_STREAM_NON_BLOCKING));
    for (int call = 0; call < calls; call++) {
      for (int i = 0; i < n; i++) {
        const pgrt_field *f = &info->args[i];
        if (f->role != PGRT_FIELD_INPUT && f->role != PGRT_FIELD_INOUT && f->role != PGRT_FIELD_OUTPUT) continue;
        CUdeviceptr last = dptr[i]; /* held until the new one is had: the addresses differ */
        CHECK(drv->cuMemAlloc(&dptr[i], f->size ? f->size : 1));
        if (last) CHECK(drv->cuMemFree(last));
        if (in[i].data) CHECK(drv->cuMemcpyHtoD(dptr[i], in[i].data, f->size));
        else CHECK(drv->cuMemsetD8(dptr[i], 0xff, f->size)); /* NaN: an output never written shows */
        memcpy((char *)&args + f->offset, &dptr[i], sizeof dptr[i]);
      }
      CHECK(API(_run)(held.ctx, &args, held.stream));
      CHECK(drv->cuStreamSynchronize(held.stream));
    }
    for (int i = 0; i < n; i++) {
      const pgrt_field *f = &info->args[i];
      if (f->role != PGRT_FIELD_INOUT && f->role != PGRT_FIELD_OUTPUT) continue;
      got[i].size = f->size;
      if (!(got[i].data = malloc(f->size ? f->size : 1))) die("%s%s", "out of memory", "");
      CHECK(drv->cuMemcpyDtoH(got[i].data, dptr[i], f->size));
    }
    CHECK(drv->cuStreamDestroy(held.stream));
    held.stream = NULL;
  }

  /* the outputs, named as their fields, with the dtype and shape the program gives */
  pgrt_host_tensor *outs = calloc((size_t)n + 1, sizeof *outs);
  int nout = 0;
  if (!outs) die("%s%s", "out of memory", "");
  for (int i = 0; i < n; i++) {
    const pgrt_field *f = &info->args[i];
    if (!got[i].data) continue;
    pgrt_host_tensor *t = &outs[nout++];
    *t = got[i];
    t->name = f->name;
    if (f->dtype[0] && f->ndim >= 0 && f->ndim <= PGRT_MAX_DIMS) {
      for (size_t c = 0; f->dtype[c] && c + 1 < sizeof t->dtype; c++) t->dtype[c] = (char)toupper(f->dtype[c]);
      t->ndim = f->ndim;
      for (int d = 0; d < f->ndim; d++) t->shape[d] = f->shape[d];
    } else { /* unknown: bytes */
      strcpy(t->dtype, "U8");
      t->ndim = 1, t->shape[0] = (int64_t)f->size;
    }
    got[i] = *t;
  }
  CHECK(pgrt_tensors_write(out_path, outs, nout));
  printf("%s: %d outputs written to %s%s", info->name, nout, out_path, dry ? " (dry run: no GPU)" : "");
  if (!dry && calls > 1) printf(" (the last of %d calls, each at new addresses)", calls);
  printf("\n");

  int failed = 0;
  for (int i = 0; expect && i < n; i++) {
    if (!have_want[i] || !got[i].data) continue;
    double t = tol >= 0 ? tol : !strcmp(want[i].dtype, "F16") || !strcmp(want[i].dtype, "BF16") ? 1e-2 : 1e-5;
    uint64_t bad;
    double err = compare(&got[i], &want[i], t, &bad);
    printf("%s: max error %.3g (%s, tolerance %g): %s\n", info->args[i].name, err, want[i].dtype, t,
           bad ? "MISMATCH" : "ok");
    if (bad) printf("%s: %llu elements off\n", info->args[i].name, (unsigned long long)bad), failed = 1;
  }
  if (expect) printf("%s\n", failed ? "FAIL" : "PASS");

  release();
  for (int i = 0; i < n; i++)
    pgrt_host_tensor_free(&in[i]), pgrt_host_tensor_free(&want[i]), pgrt_host_tensor_free(&got[i]);
  free(in), free(want), free(got), free(have_want), free(dptr), free(outs);
  return failed;
}

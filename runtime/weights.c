/*
 * weights.c -- safetensors files: a program's weights read into one device
 * allocation (pgrt_weights_load: the offsets pgcc read from the header, checked against
 * the file's size and header length), and tensors read into and written from host
 * memory (pgrt_tensor_read, pgrt_tensors_write: inputs, expected outputs; the header
 * parsed by st_header.h, the reader pgcc uses too).  See pgrt.h.
 */
#include "pgrt_impl.h"
#include "st_header.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* n bytes at p, little-endian */
static uint64_t rd(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

#define CHUNK (8u << 20)

pgrt_status pgrt_weights_load(const char *path, const pgrt_weights_file *file, CUdeviceptr *block,
                              CUdeviceptr *addrs) {
  if (!path || !file || !block || !addrs)
    return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_weights_load: null path, file, block or addresses");
  *block = 0;
  pgrt_status st = PGRT_OK;
  unsigned char *buf = NULL, len8[8];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "weights file '%s' cannot be read: %s", path, strerror(errno));
    goto out;
  }
  if ((uint64_t)sb.st_size != file->file_size || pread(fd, len8, 8, 0) != 8 || rd(len8, 8) != file->header_len) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT,
                   "weights file '%s' is not the one the program was compiled against (%llu bytes, header %llu)",
                   path, (unsigned long long)file->file_size, (unsigned long long)file->header_len);
    goto out;
  }
  uint64_t total = 0;
  for (int i = 0; i < file->count; i++) total += (file->tensors[i].size + 255) & ~(uint64_t)255;
  if (!(buf = malloc(CHUNK))) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    goto out;
  }
  const char *why = pgrt_driver_open(); /* the program's first CUDA call may be this one's (cuda_driver.c) */
  if (why) {
    st = pgrt_fail(PGRT_ERR_DRIVER, "%s", why);
    goto out;
  }
  CU(pgrt_cu.cuMemAlloc(block, total ? total : 1), path);
  uint64_t at = 0;
  for (int i = 0; i < file->count; i++) {
    const pgrt_tensor *t = &file->tensors[i];
    addrs[i] = *block + at;
    for (uint64_t done = 0; done < t->size;) {
      size_t n = t->size - done < CHUNK ? (size_t)(t->size - done) : CHUNK;
      if (pread(fd, buf, n, (off_t)(t->offset + done)) != (ssize_t)n) {
        st = pgrt_fail(PGRT_ERR_ARGUMENT, "weights file '%s': short read at %llu", path,
                       (unsigned long long)(t->offset + done));
        goto out;
      }
      CU(pgrt_cu.cuMemcpyHtoD(addrs[i] + done, buf, n), path);
      done += n;
    }
    at += (t->size + 255) & ~(uint64_t)255;
  }
out:
  if (st != PGRT_OK && *block) pgrt_cu.cuMemFree(*block), *block = 0;
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}

/* ---- tensors of a safetensors file in host memory ----
 *
 * A safetensors file is 8 bytes (the header's length, little-endian), a JSON
 * object (tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}, and an
 * optional "__metadata__" of strings), then the tensors' bytes, offsets counted
 * from the end of the header.  libpgrt has no JSON library: st_header.h, the reader
 * pgcc uses too, reads the header. */

#define MAX_HEADER (100u << 20)

/* What pgrt_tensor_read looks for, and what it found (st_parse's callback). */
typedef struct {
  const char *name;
  pgrt_host_tensor *out;
  int64_t offsets[2];
  int complete; /* the entry has a dtype, a shape and two data offsets */
} wanted;

static int find_tensor(void *ctx, const st_tensor *t) {
  wanted *w = ctx;
  if (strcmp(t->name, w->name) != 0) return 0;
  w->complete = t->is_object && t->dtype && strlen(t->dtype) < sizeof w->out->dtype && t->ndim >= 0 &&
                t->ndim <= PGRT_MAX_DIMS && t->n_offsets == 2;
  if (w->complete) {
    strcpy(w->out->dtype, t->dtype);
    w->out->ndim = t->ndim;
    memcpy(w->out->shape, t->shape, sizeof t->shape[0] * (size_t)t->ndim);
    memcpy(w->offsets, t->offsets, sizeof w->offsets);
  }
  return 1; /* found: stop */
}

static unsigned dtype_bytes(const char *d) {
  static const struct {
    const char *name;
    unsigned bytes;
  } t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
           {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(t[i].name, d) == 0) return t[i].bytes;
  return 0;
}

void pgrt_host_tensor_free(pgrt_host_tensor *t) {
  if (!t) return;
  free(t->data);
  t->data = NULL;
}

pgrt_status pgrt_tensor_read(const char *path, const char *name, pgrt_host_tensor *out) {
  if (!path || !name || !out) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_tensor_read: null path, name or tensor");
  memset(out, 0, sizeof *out);
  out->name = name;
  pgrt_status st = PGRT_OK;
  char *hdr = NULL, *key = NULL;
  unsigned char len8[8];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "tensor file '%s' cannot be read: %s", path, strerror(errno));
    goto out;
  }
  uint64_t fsize = (uint64_t)sb.st_size, hlen = 0;
  if (fsize < 8 || pread(fd, len8, 8, 0) != 8 || (hlen = rd(len8, 8)) > fsize - 8 || hlen > MAX_HEADER || hlen < 2) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s' is not a safetensors file (its header's length is wrong)", path);
    goto out;
  }
  hdr = malloc((size_t)hlen + 1), key = malloc((size_t)hlen + 1); /* key: st_parse's scratch */
  if (!hdr || !key) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    goto out;
  }
  if (pread(fd, hdr, (size_t)hlen, 8) != (ssize_t)hlen) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "tensor file '%s': short read of its header", path);
    goto out;
  }
  wanted w = {name, out, {0, 0}, 0};
  const char *err = NULL;
  size_t at = 0;
  int found = st_parse(hdr, (size_t)hlen, key, find_tensor, &w, &err, &at);
  if (found < 0) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s': the safetensors header is not what it should be near byte %zu: %s", path,
                   8 + at, err);
    goto out;
  }
  if (!found) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s' holds no tensor named '%s'", path, name);
    goto out;
  }
  if (!w.complete) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s': tensor '%s' has no dtype, shape (of at most %d dimensions) or "
                   "data_offsets [begin, end]", path, name, PGRT_MAX_DIMS);
    goto out;
  }
  int64_t *offs = w.offsets;
  uint64_t data = fsize - 8 - hlen;
  if (offs[0] < 0 || offs[1] < offs[0] || (uint64_t)offs[1] > data) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s': tensor '%s' has data offsets outside the file", path, name);
    goto out;
  }
  out->size = (uint64_t)(offs[1] - offs[0]);
  uint64_t elems = 1;
  for (int i = 0; i < out->ndim; i++) elems = out->shape[i] < 0 ? UINT64_MAX : elems * (uint64_t)out->shape[i];
  unsigned eb = dtype_bytes(out->dtype);
  if (eb && elems * eb != out->size) {
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s': tensor '%s' is %llu bytes, but its dtype and shape say otherwise", path,
                   name, (unsigned long long)out->size);
    goto out;
  }
  if (!(out->data = malloc(out->size ? (size_t)out->size : 1))) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory for tensor '%s' (%llu bytes)", name,
                   (unsigned long long)out->size);
    goto out;
  }
  for (uint64_t done = 0; done < out->size;) {
    ssize_t r = pread(fd, (char *)out->data + done, (size_t)(out->size - done), (off_t)(8 + hlen + (uint64_t)offs[0] + done));
    if (r <= 0) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "tensor file '%s': short read of tensor '%s'", path, name);
      goto out;
    }
    done += (uint64_t)r;
  }
out:
  if (st != PGRT_OK) pgrt_host_tensor_free(out);
  if (fd >= 0) close(fd);
  free(hdr), free(key);
  return st;
}

static int json_safe(const char *s) {
  for (; *s; s++)
    if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
  return 1;
}

pgrt_status pgrt_tensors_write(const char *path, const pgrt_host_tensor *t, int count) {
  if (!path || count < 0 || (count && !t)) return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_tensors_write: null path or tensors");
  size_t cap = 64, len = 0;
  for (int i = 0; i < count; i++) {
    const pgrt_host_tensor *x = &t[i];
    if (!x->name || !json_safe(x->name) || !x->dtype[0] || !json_safe(x->dtype) || x->ndim < 0 ||
        x->ndim > PGRT_MAX_DIMS || (x->size && !x->data))
      return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_tensors_write: tensor %d ('%s') has a bad name, dtype, shape or data", i,
                       x->name && json_safe(x->name) ? x->name : "?");
    for (int k = 0; k < i; k++)
      if (strcmp(t[k].name, x->name) == 0)
        return pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_tensors_write: two tensors named '%s'", x->name);
    cap += strlen(x->name) + strlen(x->dtype) + 64 + (size_t)x->ndim * 22 + 2 * 22;
  }
  char *h = malloc(cap + 8);
  if (!h) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  uint64_t at = 0;
  len += (size_t)snprintf(h + len, cap - len, "{");
  for (int i = 0; i < count; i++) {
    const pgrt_host_tensor *x = &t[i];
    len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", x->name, x->dtype);
    for (int d = 0; d < x->ndim; d++) len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? "," : "", (long long)x->shape[d]);
    len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                            (unsigned long long)(at + x->size));
    at += x->size;
  }
  len += (size_t)snprintf(h + len, cap - len, "}");
  while (len % 8) h[len++] = ' '; /* the data 8-byte aligned, as safetensors writes it */
  pgrt_status st = PGRT_OK;
  FILE *f = fopen(path, "wb");
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)len >> (8 * i));
  int ok = f && fwrite(len8, 1, 8, f) == 8 && fwrite(h, 1, len, f) == len;
  for (int i = 0; ok && i < count; i++) ok = !t[i].size || fwrite(t[i].data, 1, (size_t)t[i].size, f) == t[i].size;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) st = pgrt_fail(PGRT_ERR_ARGUMENT, "cannot write '%s': %s", path, strerror(errno));
  free(h);
  return st;
}

/* A .graph dtype ("f32", "bf16", "bool") as safetensors spells it ("F32", "BF16",
 * "BOOL") into out; 0 where it is none libpgrt knows the size of. */
static int st_dtype(const char *d, char out[16]) {
  size_t n = d ? strlen(d) : 0;
  if (!n || n >= 16) return 0;
  for (size_t i = 0; i <= n; i++) out[i] = (char)(d[i] >= 'a' && d[i] <= 'z' ? d[i] - 'a' + 'A' : d[i]);
  return dtype_bytes(out) != 0;
}

/* The device address of weight field f in a program's NAME_weights. */
static CUdeviceptr weight_at(const void *weights, const pgrt_field *f) {
  CUdeviceptr p;
  memcpy(&p, (const char *)weights + f->offset, sizeof p);
  return p;
}

/* The tensor a weight field is saved as: its name in the weights file (else its field's
 * name), dtype and shape as the .graph gives them; bytes (U8, one dimension) where they
 * do not describe its size. */
static void weight_tensor(const pgrt_field *f, pgrt_host_tensor *t) {
  t->name = f->tensor ? f->tensor : f->name;
  uint64_t elems = 1;
  int known = st_dtype(f->dtype, t->dtype) && f->ndim >= 0 && f->ndim <= PGRT_MAX_DIMS;
  for (int d = 0; known && d < f->ndim; d++) elems *= f->shape[d] < 0 ? 0 : (uint64_t)f->shape[d];
  if (known && elems * dtype_bytes(t->dtype) == f->size) {
    t->ndim = f->ndim;
    for (int d = 0; d < f->ndim; d++) t->shape[d] = f->shape[d];
  } else {
    strcpy(t->dtype, "U8");
    t->ndim = 1, t->shape[0] = (int64_t)f->size;
  }
  t->size = f->size;
}

/* What pgrt_weights_save and _restore check first: their arguments, and the driver. */
static pgrt_status weights_file_args(const char *who, const char *path, const pgrt_program_info *info,
                                     const void *weights) {
  if (!path || !info || (info->n_weights && !weights))
    return pgrt_fail(PGRT_ERR_ARGUMENT, "%s: null path, program info or weights", who);
  const char *why = pgrt_driver_open();
  return why ? pgrt_fail(PGRT_ERR_DRIVER, "%s", why) : PGRT_OK;
}

pgrt_status pgrt_weights_save(const char *path, const pgrt_program_info *info, const void *weights) {
  pgrt_status st = weights_file_args("pgrt_weights_save", path, info, weights);
  if (st != PGRT_OK) return st;
  int n = info->n_weights;
  char *tmp = malloc(strlen(path) + 32);
  pgrt_host_tensor *t = calloc(n ? (size_t)n : 1, sizeof *t);
  if (!tmp || !t) {
    st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    goto out;
  }
  CU(pgrt_cu.cuCtxSynchronize(), "the calls before pgrt_weights_save");
  for (int i = 0; i < n; i++) {
    const pgrt_field *f = &info->weights[i];
    weight_tensor(f, &t[i]);
    CUdeviceptr p = weight_at(weights, f);
    if (f->size && !p) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_weights_save: weight '%s' is a null pointer", f->name);
      goto out;
    }
    if (!(t[i].data = malloc(f->size ? f->size : 1))) {
      st = pgrt_fail(PGRT_ERR_MEMORY, "out of host memory for weight '%s' (%zu bytes)", f->name, f->size);
      goto out;
    }
    if (f->size) CU(pgrt_cu.cuMemcpyDtoH(t[i].data, p, f->size), f->name);
  }
  /* written whole, then renamed over path: a checkpoint is never half a file */
  snprintf(tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
  st = pgrt_tensors_write(tmp, t, n);
  if (st == PGRT_OK && rename(tmp, path) != 0)
    st = pgrt_fail(PGRT_ERR_ARGUMENT, "cannot write '%s': %s", path, strerror(errno));
  if (st != PGRT_OK) unlink(tmp);
out:
  for (int i = 0; t && i < n; i++) free(t[i].data);
  free(t), free(tmp);
  return st;
}

pgrt_status pgrt_weights_restore(const char *path, const pgrt_program_info *info, const void *weights) {
  pgrt_status st = weights_file_args("pgrt_weights_restore", path, info, weights);
  if (st != PGRT_OK) return st;
  int n = info->n_weights;
  pgrt_host_tensor *t = calloc(n ? (size_t)n : 1, sizeof *t);
  if (!t) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  /* every tensor read and checked first: a file that does not fit changes nothing */
  for (int i = 0; i < n; i++) {
    const pgrt_field *f = &info->weights[i];
    pgrt_host_tensor want;
    weight_tensor(f, &want);
    if ((st = pgrt_tensor_read(path, want.name, &t[i])) != PGRT_OK) goto out;
    if (t[i].size != f->size || strcmp(t[i].dtype, want.dtype) != 0) { /* (as pgrt_weights_save writes it) */
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "'%s': tensor '%s' is %llu bytes of %s, the program's weight %zu bytes of %s",
                     path, want.name, (unsigned long long)t[i].size, t[i].dtype, f->size, want.dtype);
      goto out;
    }
    if (f->size && !weight_at(weights, f)) {
      st = pgrt_fail(PGRT_ERR_ARGUMENT, "pgrt_weights_restore: weight '%s' is a null pointer", f->name);
      goto out;
    }
  }
  CU(pgrt_cu.cuCtxSynchronize(), "the calls before pgrt_weights_restore");
  for (int i = 0; i < n; i++)
    if (t[i].size) CU(pgrt_cu.cuMemcpyHtoD(weight_at(weights, &info->weights[i]), t[i].data, t[i].size), t[i].name);
out:
  for (int i = 0; i < n; i++) pgrt_host_tensor_free(&t[i]);
  free(t);
  return st;
}

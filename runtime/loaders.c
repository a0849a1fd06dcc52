/*
 * loaders.c -- what libpgrt reads from files: kernels inside installed libraries,
 * and weights from safetensors files.
 *
 * Library kernels.  cuBLAS, cuBLASLt and PyTorch's CUDA library keep their device
 * code in an ELF section, .nv_fatbin: fatbins one after another, each a 16-byte
 * header (magic 0xBA55ED50, version, header size, size) and its entries.  The
 * library is found the way the dynamic linker finds it (dlopen of its soname), its
 * file mapped read-only, and the fatbin that holds a kernel loaded with
 * cuLibraryLoadData.  The generated code says where that fatbin was when the
 * program was exported (pgrt_kernel.entry); where that misses -- another build of
 * the library -- every fatbin of the section is tried, with a warning, since that
 * takes seconds for a library of thousands of them.
 *
 * What a fatbin costs to load is mostly the driver decompressing the cubin for this
 * GPU (the libraries ship them compressed: a 0.8 MB entry of cuBLASLt's is 9 MB of
 * ELF), so pgrt_library_prefetch loads the fatbins the program's kernels name on
 * several threads at once before the kernels are looked up.  The driver reads each
 * fatbin in place (CU_LIBRARY_BINARY_IS_PRESERVED: the file stays mapped until the
 * fatbin is unloaded) instead of copying it first.  PGRT_LIBLOAD=serial loads them one
 * by one, =copy lets the driver copy them: the ways bench/zoo_timing.py compares.
 */
#define _GNU_SOURCE /* dlinfo */
#include "pgrt_impl.h"
#include "st_header.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FATBIN_MAGIC 0xBA55ED50u

typedef struct {
  const char *soname;
  void *dl;                 /* keeps the library loaded while its file is mapped */
  const unsigned char *map; /* the file */
  size_t map_size;
  const unsigned char *sec; /* its .nv_fatbin section */
  size_t sec_size;
} libfile;

typedef struct {
  int file;
  size_t offset; /* in the section */
  CUlibrary lib;
} loaded;

struct pgrt_libset {
  libfile *files;
  int nfiles;
  loaded *fatbins;
  int nfatbins, capfatbins;
  int threads;        /* the threads pgrt_library_prefetch loaded fatbins on (0: none) */
  size_t bytes;       /* the loaded fatbins' sizes, as the libraries hold them */
};

/* PGRT_LIBLOAD, a comma-separated list: "serial" (no prefetching threads), "copy"
 * (the driver copies each fatbin). */
static int libload_has(const char *word) {
  const char *v = getenv("PGRT_LIBLOAD");
  size_t n = strlen(word);
  for (const char *p = v; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

static CUresult load_fatbin(CUlibrary *lib, const unsigned char *image) {
  CUlibraryOption opt[1] = {CU_LIBRARY_BINARY_IS_PRESERVED};
  void *val[1] = {(void *)(uintptr_t)1};
  unsigned n = libload_has("copy") ? 0 : 1;
  return cuLibraryLoadData(lib, image, NULL, NULL, 0, n ? opt : NULL, n ? val : NULL, n);
}

static uint64_t rd(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The .nv_fatbin section of a mapped ELF64 file, or NULL. */
static const unsigned char *fatbin_section(const unsigned char *m, size_t n, size_t *size) {
  if (n < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG) != 0 || m[EI_CLASS] != ELFCLASS64) return NULL;
  uint64_t shoff = rd(m + offsetof(Elf64_Ehdr, e_shoff), 8);
  uint64_t shnum = rd(m + offsetof(Elf64_Ehdr, e_shnum), 2), shstr = rd(m + offsetof(Elf64_Ehdr, e_shstrndx), 2);
  if (shoff > n || shnum > (n - shoff) / sizeof(Elf64_Shdr) || shstr >= shnum) return NULL;
  const unsigned char *sh = m + shoff;
  uint64_t stroff = rd(sh + shstr * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_offset), 8);
  uint64_t strsize = rd(sh + shstr * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), 8);
  if (stroff > n || strsize > n - stroff) return NULL;
  for (uint64_t i = 0; i < shnum; i++) {
    const unsigned char *s = sh + i * sizeof(Elf64_Shdr);
    uint64_t name = rd(s + offsetof(Elf64_Shdr, sh_name), 4), off = rd(s + offsetof(Elf64_Shdr, sh_offset), 8);
    uint64_t sz = rd(s + offsetof(Elf64_Shdr, sh_size), 8);
    if (name + sizeof ".nv_fatbin" > strsize || memcmp(m + stroff + name, ".nv_fatbin", sizeof ".nv_fatbin") != 0)
      continue;
    if (off > n || sz > n - off) return NULL;
    *size = sz;
    return m + off;
  }
  return NULL;
}

static pgrt_status open_library(libfile *f, const char *soname) {
  f->soname = soname;
  f->dl = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (!f->dl) return pgrt_fail(PGRT_ERR_MODULE, "library '%s' cannot be opened: %s", soname, dlerror());
  struct link_map *lm = NULL;
  if (dlinfo(f->dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || !lm->l_name[0])
    return pgrt_fail(PGRT_ERR_MODULE, "library '%s': the dynamic linker does not say where its file is", soname);
  int fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    return pgrt_fail(PGRT_ERR_MODULE, "library '%s' (%s) cannot be read: %s", soname, lm->l_name, strerror(errno));
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return pgrt_fail(PGRT_ERR_MODULE, "library '%s' (%s) cannot be mapped", soname, lm->l_name);
  f->map = m;
  f->map_size = (size_t)st.st_size;
  f->sec = fatbin_section(f->map, f->map_size, &f->sec_size);
  if (!f->sec) return pgrt_fail(PGRT_ERR_MODULE, "library '%s' (%s) has no .nv_fatbin section", soname, lm->l_name);
  return PGRT_OK;
}

/* The size of the fatbin at `off` in the section, or 0 if there is none there. */
static size_t fatbin_at(const libfile *f, size_t off) {
  if (off % 8 || off > f->sec_size || f->sec_size - off < 16 || rd(f->sec + off, 4) != FATBIN_MAGIC) return 0;
  uint64_t total = rd(f->sec + off + 6, 2) + rd(f->sec + off + 8, 8);
  return total <= f->sec_size - off ? (size_t)total : 0;
}

/* Keeps `lib`, the fatbin at `off` in file `file`, in the set; 0 where that takes memory there is not. */
static int keep(pgrt_libset *s, int file, size_t off, CUlibrary lib) {
  if (s->nfatbins == s->capfatbins) {
    int cap = s->capfatbins ? 2 * s->capfatbins : 8;
    loaded *v = realloc(s->fatbins, sizeof *v * (size_t)cap);
    if (!v) return 0;
    s->fatbins = v, s->capfatbins = cap;
  }
  s->fatbins[s->nfatbins++] = (loaded){file, off, lib};
  s->bytes += fatbin_at(&s->files[file], off);
  return 1;
}

static loaded *loaded_at(pgrt_libset *s, int file, size_t off) {
  for (int i = 0; i < s->nfatbins; i++)
    if (s->fatbins[i].file == file && s->fatbins[i].offset == off) return &s->fatbins[i];
  return NULL;
}

/* Loads the fatbin at `off` (once per set) and looks the kernel up in it. */
static int try_fatbin(pgrt_libset *s, int file, size_t off, const char *symbol, CUkernel *out) {
  loaded *l = loaded_at(s, file, off);
  if (!l) {
    CUlibrary lib;
    if (!fatbin_at(&s->files[file], off) || load_fatbin(&lib, s->files[file].sec + off) != CUDA_SUCCESS)
      return 0; /* not a fatbin, or none for this GPU */
    if (cuLibraryGetKernel(out, lib, symbol) != CUDA_SUCCESS || !keep(s, file, off, lib)) {
      cuLibraryUnload(lib); /* keep only the fatbins that are used */
      return 0;
    }
    return 1;
  }
  return cuLibraryGetKernel(out, l->lib, symbol) == CUDA_SUCCESS;
}

/* The set's index of the library of this soname, opened now if it is not yet. */
static pgrt_status library_file(pgrt_libset **set, const char *soname, int *file) {
  pgrt_libset *s = *set ? *set : (*set = pgrt_zalloc(sizeof **set));
  if (!s) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  for (int i = 0; i < s->nfiles; i++)
    if (strcmp(s->files[i].soname, soname) == 0) return *file = i, PGRT_OK;
  libfile *v = realloc(s->files, sizeof *v * (size_t)(s->nfiles + 1));
  if (!v) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  s->files = v;
  memset(&v[s->nfiles], 0, sizeof v[0]);
  *file = s->nfiles++;
  return open_library(&v[*file], soname);
}

/* ---- loading fatbins on several threads ---- */

#define PREFETCH_THREADS 8

typedef struct {
  int file;
  size_t off;
  const unsigned char *image;
  CUlibrary lib;
  CUresult r;
} job;

typedef struct {
  job *jobs;
  int n, next; /* next: the first job no thread has taken (atomic) */
} queue;

static void *worker(void *arg) {
  queue *q = arg;
  for (int i; (i = __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED)) < q->n;)
    q->jobs[i].r = load_fatbin(&q->jobs[i].lib, q->jobs[i].image);
  return NULL;
}

pgrt_status pgrt_library_prefetch(pgrt_libset **set, const pgrt_program *pr) {
  job *jobs = pgrt_zalloc(sizeof *jobs * (size_t)pr->kernel_count);
  if (!jobs) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  int n = 0;
  pgrt_status st = PGRT_OK;
  for (int k = 0; k < pr->kernel_count && st == PGRT_OK; k++) {
    const pgrt_kernel *kn = &pr->kernels[k];
    if (kn->module < 0 || pr->modules[kn->module].kind != PGRT_MOD_LIBRARY || !kn->entry) continue;
    int file;
    if ((st = library_file(set, pr->modules[kn->module].library, &file)) != PGRT_OK) break;
    size_t off = (size_t)(kn->entry - 1);
    int seen = loaded_at(*set, file, off) != NULL;
    for (int j = 0; j < n && !seen; j++) seen = jobs[j].file == file && jobs[j].off == off;
    if (!seen && fatbin_at(&(*set)->files[file], off))
      jobs[n++] = (job){file, off, (*set)->files[file].sec + off, NULL, CUDA_ERROR_UNKNOWN};
  }
  if (st != PGRT_OK || n < 2 || libload_has("serial")) { /* (one fatbin loads as fast with its kernel) */
    free(jobs);
    return st;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int want = n < PREFETCH_THREADS ? n : PREFETCH_THREADS, started = 0;
  if (cpus > 0 && want > cpus) want = (int)cpus;
  queue q = {jobs, n, 0};
  pthread_t tid[PREFETCH_THREADS];
  while (started < want && pthread_create(&tid[started], NULL, worker, &q) == 0) started++;
  if (!started) worker(&q); /* no thread would start: this one loads them all */
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  (*set)->threads = started;
  for (int j = 0; j < n; j++) /* (one that fails to load is the lookup's to report) */
    if (jobs[j].r == CUDA_SUCCESS && !keep(*set, jobs[j].file, jobs[j].off, jobs[j].lib)) cuLibraryUnload(jobs[j].lib);
  free(jobs);
  return PGRT_OK;
}

pgrt_status pgrt_library_kernel(pgrt_libset **set, const pgrt_module *m, const pgrt_kernel *k, CUkernel *out) {
  int file;
  pgrt_status st = library_file(set, m->library, &file);
  if (st != PGRT_OK) return st;
  pgrt_libset *s = *set;
  const libfile *f = &s->files[file];
  if (k->entry && try_fatbin(s, file, (size_t)(k->entry - 1), k->symbol, out)) return PGRT_OK;
  for (int i = 0; i < s->nfatbins; i++) /* a fatbin already loaded for another kernel */
    if (s->fatbins[i].file == file && cuLibraryGetKernel(out, s->fatbins[i].lib, k->symbol) == CUDA_SUCCESS)
      return PGRT_OK;
  if (k->entry)
    fprintf(stderr, "pgrt: warning: kernel '%s' is not where it was in %s: searching the whole library\n", k->name,
            m->library);
  for (size_t off = 0; off + 16 <= f->sec_size; off += 8) {
    size_t n = fatbin_at(f, off);
    if (!n) continue;
    if (try_fatbin(s, file, off, k->symbol, out)) return PGRT_OK;
    off += (n - 1) & ~(size_t)7; /* to the next 8-byte boundary past it, less the loop's step */
  }
  return pgrt_fail(PGRT_ERR_MODULE, "kernel '%s' (%s) is in none of the fatbins of %s that load on this GPU", k->name,
                   k->symbol, m->library);
}

int pgrt_libset_fatbins(const pgrt_libset *s) { return s ? s->nfatbins : 0; }
int pgrt_libset_threads(const pgrt_libset *s) { return s ? s->threads : 0; }
size_t pgrt_libset_bytes(const pgrt_libset *s) { return s ? s->bytes : 0; }

void pgrt_libset_free(pgrt_libset *s) {
  if (!s) return;
  for (int i = 0; i < s->nfatbins; i++) cuLibraryUnload(s->fatbins[i].lib);
  for (int i = 0; i < s->nfiles; i++) {
    if (s->files[i].map) munmap((void *)s->files[i].map, s->files[i].map_size);
    if (s->files[i].dl) dlclose(s->files[i].dl);
  }
  free(s->fatbins), free(s->files), free(s);
}

/* ---- weights ---- */

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
  CU(cuMemAlloc(block, total ? total : 1), path);
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
      CU(cuMemcpyHtoD(addrs[i] + done, buf, n), path);
      done += n;
    }
    at += (t->size + 255) & ~(uint64_t)255;
  }
out:
  if (st != PGRT_OK && *block) cuMemFree(*block), *block = 0;
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

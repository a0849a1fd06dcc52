/*
 * libraries.c -- kernels inside installed libraries.
 *
 * cuBLAS, cuBLASLt and PyTorch's CUDA library keep their device
 * code in an ELF section, .nv_fatbin: fatbins one after another, each a 16-byte
 * header (magic 0xBA55ED50, version, header size, size) and its entries.  The
 * library is opened by its soname (shlib.c: the copy already in the process first,
 * then PGRT_LIB_<NAME>, then as the dynamic linker finds it), its file mapped read-only, and the fatbin that holds a kernel loaded with
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
  return pgrt_cu.cuLibraryLoadData(lib, image, NULL, NULL, 0, n ? opt : NULL, n ? val : NULL, n);
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
  pgrt_shlib lib; /* the copy already in the process, PGRT_LIB_<NAME>, or the soname (shlib.c) */
  pgrt_shlib_open(&lib, soname, NULL, RTLD_LAZY | RTLD_LOCAL);
  f->dl = lib.dl;
  if (!f->dl)
    return pgrt_fail(PGRT_ERR_MODULE, "library '%s' cannot be opened from '%s' (%s): %s", soname, lib.path,
                     lib.said, lib.why);
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
    if (pgrt_cu.cuLibraryGetKernel(out, lib, symbol) != CUDA_SUCCESS || !keep(s, file, off, lib)) {
      pgrt_cu.cuLibraryUnload(lib); /* keep only the fatbins that are used */
      return 0;
    }
    return 1;
  }
  return pgrt_cu.cuLibraryGetKernel(out, l->lib, symbol) == CUDA_SUCCESS;
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
    if (jobs[j].r == CUDA_SUCCESS && !keep(*set, jobs[j].file, jobs[j].off, jobs[j].lib))
      pgrt_cu.cuLibraryUnload(jobs[j].lib);
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
    if (s->fatbins[i].file == file && pgrt_cu.cuLibraryGetKernel(out, s->fatbins[i].lib, k->symbol) == CUDA_SUCCESS)
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
  for (int i = 0; i < s->nfatbins; i++) pgrt_cu.cuLibraryUnload(s->fatbins[i].lib);
  for (int i = 0; i < s->nfiles; i++) {
    if (s->files[i].map) munmap((void *)s->files[i].map, s->files[i].map_size);
    if (s->files[i].dl) dlclose(s->files[i].dl);
  }
  free(s->fatbins), free(s->files), free(s);
}

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
 */
#define _GNU_SOURCE /* dlinfo */
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
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
};

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

/* Loads the fatbin at `off` (once per set) and looks the kernel up in it. */
static int try_fatbin(pgrt_libset *s, int file, size_t off, const char *symbol, CUkernel *out) {
  loaded *l = NULL;
  for (int i = 0; i < s->nfatbins && !l; i++)
    if (s->fatbins[i].file == file && s->fatbins[i].offset == off) l = &s->fatbins[i];
  if (!l) {
    CUlibrary lib;
    if (!fatbin_at(&s->files[file], off) ||
        cuLibraryLoadData(&lib, s->files[file].sec + off, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS)
      return 0; /* not a fatbin, or none for this GPU */
    if (cuLibraryGetKernel(out, lib, symbol) != CUDA_SUCCESS) { /* keep only the fatbins that are used */
      cuLibraryUnload(lib);
      return 0;
    }
    if (s->nfatbins == s->capfatbins) {
      int cap = s->capfatbins ? 2 * s->capfatbins : 8;
      loaded *v = realloc(s->fatbins, sizeof *v * (size_t)cap);
      if (!v) {
        cuLibraryUnload(lib);
        return 0;
      }
      s->fatbins = v, s->capfatbins = cap;
    }
    s->fatbins[s->nfatbins++] = (loaded){file, off, lib};
    return 1;
  }
  return cuLibraryGetKernel(out, l->lib, symbol) == CUDA_SUCCESS;
}

pgrt_status pgrt_library_kernel(pgrt_libset **set, const pgrt_module *m, const pgrt_kernel *k, CUkernel *out) {
  pgrt_libset *s = *set ? *set : (*set = pgrt_zalloc(sizeof **set));
  if (!s) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
  int file = -1;
  for (int i = 0; i < s->nfiles && file < 0; i++)
    if (strcmp(s->files[i].soname, m->library) == 0) file = i;
  if (file < 0) {
    libfile *v = realloc(s->files, sizeof *v * (size_t)(s->nfiles + 1));
    if (!v) return pgrt_fail(PGRT_ERR_MEMORY, "out of host memory");
    s->files = v;
    memset(&v[s->nfiles], 0, sizeof v[0]);
    file = s->nfiles++;
    pgrt_status st = open_library(&v[file], m->library);
    if (st != PGRT_OK) return st;
  }
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

/*
 * shlib.c -- which file a library libpgrt opens by soname is (pgrt.h, "Libraries,
 * opened by soname"): the installed libraries whose fatbins hold a program's kernels
 * (libraries.c) and NCCL (nccl.c).
 *
 * A process that runs PyTorch beside libpgrt has PyTorch's own copies of cuBLAS, cuDNN
 * and NCCL, from its pip wheels (site-packages/nvidia/NAME/lib), which the dynamic
 * linker's search does not find.  dlopen of the soname from libpgrt could then load a
 * second copy, from the system, and two copies of cuDNN in one process fail
 * (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: cuDNN loads its sublibraries by soname, and
 * gets the other copy's).  So the file is, first match wins:
 *
 *   1. a copy already mapped in the process: a loaded object whose file name or DT_SONAME
 *      is the soname (dl_iterate_phdr, in load order);
 *   2. the path in PGRT_LIB_<NAME> (NAME: the soname without "lib" and from ".so" on,
 *      upper case, other characters '_': libcublasLt.so.13 is PGRT_LIB_CUBLASLT), or in
 *      the older variable a caller names (NCCL: PGRT_NCCL);
 *   3. a file of that name in the directory of a mapped library of the same family (its
 *      name up to ".so" a prefix of the soname's, or the soname's of its, ending at '_',
 *      an upper-case letter or the end: libcudnn.so.9 for libcudnn_engines_precompiled.so.9,
 *      libcublas.so.12 for libcublasLt.so.12), where PyTorch's copy of that library would
 *      come from;
 *   4. the soname, as the dynamic linker finds it.
 *
 * Calls no other file of libpgrt (layer 0).
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *base_of(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* The length of a library file name's stem: up to ".so" (or all of it). */
static size_t stem_len(const char *name) {
  const char *so = strstr(name, ".so");
  return so ? (size_t)(so - name) : strlen(name);
}

/* A loaded object's DT_SONAME, or NULL. */
static const char *soname_of(const struct dl_phdr_info *info) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return NULL;
  ElfW(Addr) strtab = 0;
  ElfW(Xword) at = 0;
  int has = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_STRTAB) strtab = dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_SONAME) at = dyn->d_un.d_val, has = 1;
  }
  if (!has || !strtab) return NULL;
  if (strtab < info->dlpi_addr) strtab += info->dlpi_addr; /* where the loader did not relocate it in place */
  return (const char *)strtab + at;
}

/* Whether libraries a and b are of one family (the opening comment's rule 3). */
static int same_family(const char *a, const char *b) {
  size_t la = stem_len(a), lb = stem_len(b), n = la < lb ? la : lb;
  if (n < 4 || strncmp(a, b, n) != 0) return 0;
  char next = la > lb ? a[n] : lb > la ? b[n] : 0;
  return next == 0 || next == '_' || (next >= 'A' && next <= 'Z');
}

typedef struct {
  const char *soname;
  int beside; /* 0: rule 1; 1: rule 3 */
  char *path;
  size_t size;
  int found;
} search;

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  search *s = arg;
  const char *name = info->dlpi_name;
  if (!name || !name[0]) return 0; /* the executable */
  if (!s->beside) {
    const char *so = soname_of(info);
    if (strcmp(base_of(name), s->soname) != 0 && !(so && strcmp(so, s->soname) == 0)) return 0;
    s->found = snprintf(s->path, s->size, "%s", name) < (int)s->size;
    return s->found;
  }
  const char *base = base_of(name);
  if (base == name || !same_family(base, s->soname)) return 0;
  int w = snprintf(s->path, s->size, "%.*s%s", (int)(base - name), name, s->soname);
  s->found = w > 0 && (size_t)w < s->size && access(s->path, R_OK) == 0;
  return s->found;
}

static int find_mapped(const char *soname, int beside, char *path, size_t size) {
  search s = {soname, beside, path, size, 0};
  dl_iterate_phdr(visit, &s);
  return s.found;
}

void pgrt_shlib_env(const char *soname, char *env, size_t size) {
  const char *stem = strncmp(soname, "lib", 3) == 0 ? soname + 3 : soname;
  size_t n = stem_len(stem), w = (size_t)snprintf(env, size, "PGRT_LIB_");
  for (size_t i = 0; i < n && w + 1 < size; i++) {
    char ch = stem[i];
    if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
    else if (!(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9')) ch = '_';
    env[w++] = ch;
  }
  env[w < size ? w : size - 1] = 0;
}

void pgrt_shlib_open(pgrt_shlib *l, const char *soname, const char *alias, int flags) {
  memset(l, 0, sizeof *l);
  pgrt_shlib_env(soname, l->env, sizeof l->env);
  const char *v = getenv(l->env);
  if (!(v && *v) && alias) { /* the older variable, where the new one is not set */
    v = getenv(alias);
    if (v && *v) snprintf(l->env, sizeof l->env, "%s", alias);
  }
  if (find_mapped(soname, 0, l->path, sizeof l->path)) {
    l->from = PGRT_SHLIB_MAPPED;
  } else if (v && *v) {
    l->from = PGRT_SHLIB_ENV;
    snprintf(l->path, sizeof l->path, "%s", v);
  } else if (find_mapped(soname, 1, l->path, sizeof l->path)) {
    l->from = PGRT_SHLIB_BESIDE;
  } else {
    l->from = PGRT_SHLIB_SONAME;
    snprintf(l->path, sizeof l->path, "%s", soname);
  }
  switch (l->from) {
  case PGRT_SHLIB_MAPPED: snprintf(l->said, sizeof l->said, "the copy already in the process"); break;
  case PGRT_SHLIB_ENV: snprintf(l->said, sizeof l->said, "the path in %s", l->env); break;
  case PGRT_SHLIB_BESIDE:
    snprintf(l->said, sizeof l->said, "beside a library of its family in the process; %s names another", l->env);
    break;
  case PGRT_SHLIB_SONAME:
    snprintf(l->said, sizeof l->said, "as the dynamic linker finds it; %s names another", l->env);
    break;
  }
  l->dl = dlopen(l->path, flags);
  if (!l->dl) {
    const char *why = dlerror();
    snprintf(l->why, sizeof l->why, "%s", why ? why : "no reason given");
  }
}

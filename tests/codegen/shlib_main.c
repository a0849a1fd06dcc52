/* shlib_main.c -- which file libpgrt opens for a library it opens by soname
 * (runtime/shlib.c; pgrt.h, "Libraries, opened by soname"), without a GPU (make
 * check-info; it calls no CUDA):
 *
 *   shlib_main DIR_A DIR_B
 *
 * DIR_A and DIR_B each hold a copy of shlib_fake.c as libpgfake_beside.so.1 and as
 * libnccl.so.2, each copy giving another number (pgfake_which; NCCL's version); DIR_A
 * also holds libpgfake_beside_extra.so.1 (of its family) and libpgfakeother.so.1 (not).
 * Neither directory is on the dynamic linker's path.  What this process has mapped
 * changes as it goes, so the order of the checks matters: nothing mapped, libpgrt takes
 * PGRT_LIB_<NAME>'s path, else the soname (which the dynamic linker does not find
 * here); once this process has opened DIR_A's copy itself (as PyTorch opens its wheels'
 * copies, by path), libpgrt reuses that one whatever the environment says, and finds a
 * library of its family beside it; NCCL the same, through pgrt_nccl_load (PGRT_NCCL
 * pointing at DIR_B's copy).  Every mismatch is printed, and any fails it. */
#define _GNU_SOURCE
#include "pgrt_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(cond)                                                                \
  do {                                                                              \
    if (!(cond)) printf("shlib_main.c:%d: %s\n", __LINE__, #cond), failures++;      \
  } while (0)

/* The copy a handle is: its pgfake_which, or -1. */
static int which(void *dl) {
  const int *w = dl ? dlsym(dl, "pgfake_which") : NULL;
  return w ? *w : -1;
}

static void env_name(const char *soname, const char *want) {
  char env[96];
  pgrt_shlib_env(soname, env, sizeof env);
  if (strcmp(env, want) != 0) printf("shlib_main.c: %s's variable is %s, not %s\n", soname, env, want), failures++;
}

int main(int argc, char **argv) {
  if (argc != 3) return fprintf(stderr, "usage: shlib_main DIR_A DIR_B\n"), 2;
  char a[4096], b[4096], extra[4096], nccl_a[4096], nccl_b[4096];
  snprintf(a, sizeof a, "%s/libpgfake_beside.so.1", argv[1]);
  snprintf(b, sizeof b, "%s/libpgfake_beside.so.1", argv[2]);
  snprintf(extra, sizeof extra, "%s/libpgfake_beside_extra.so.1", argv[1]);
  snprintf(nccl_a, sizeof nccl_a, "%s/libnccl.so.2", argv[1]);
  snprintf(nccl_b, sizeof nccl_b, "%s/libnccl.so.2", argv[2]);
  pgrt_shlib l;

  env_name("libcublasLt.so.13", "PGRT_LIB_CUBLASLT");
  env_name("libcudnn_engines_precompiled.so.9", "PGRT_LIB_CUDNN_ENGINES_PRECOMPILED");
  env_name("libnccl.so.2", "PGRT_LIB_NCCL");
  env_name("libpgfake_beside.so.1", "PGRT_LIB_PGFAKE_BESIDE");
  env_name("libfoo-bar.so", "PGRT_LIB_FOO_BAR");

  /* nothing mapped, nothing in the environment: the soname, which is not on the path */
  unsetenv("PGRT_LIB_PGFAKE_BESIDE");
  pgrt_shlib_open(&l, "libpgfake_beside.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_SONAME && !l.dl && strcmp(l.path, "libpgfake_beside.so.1") == 0 && l.why[0]);

  /* nothing mapped: PGRT_LIB_<NAME>'s path */
  setenv("PGRT_LIB_PGFAKE_BESIDE", b, 1);
  pgrt_shlib_open(&l, "libpgfake_beside.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_ENV && strcmp(l.path, b) == 0 && which(l.dl) == 2);
  EXPECT(strcmp(l.env, "PGRT_LIB_PGFAKE_BESIDE") == 0);
  if (l.dl) dlclose(l.dl); /* unmapped again: its only reference */

  /* a family member, while no member of the family is mapped: not found beside anything */
  pgrt_shlib_open(&l, "libpgfake_beside_extra.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_SONAME && !l.dl);

  /* this process opens DIR_A's copy by path, as PyTorch opens its wheels' copies: libpgrt
   * reuses it, although the environment names DIR_B's */
  void *torch = dlopen(a, RTLD_NOW | RTLD_LOCAL);
  EXPECT(which(torch) == 1);
  pgrt_shlib_open(&l, "libpgfake_beside.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_MAPPED && strcmp(l.path, a) == 0 && l.dl == torch && which(l.dl) == 1);
  if (l.dl) dlclose(l.dl);

  /* its family's other library: from DIR_A, beside it; another name: not */
  pgrt_shlib_open(&l, "libpgfake_beside_extra.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_BESIDE && strcmp(l.path, extra) == 0 && which(l.dl) == 3);
  if (l.dl) dlclose(l.dl);
  pgrt_shlib_open(&l, "libpgfakeother.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_SONAME && !l.dl);
  /* ... unless the environment names it: the environment before a neighbour */
  setenv("PGRT_LIB_PGFAKE_BESIDE_EXTRA", b, 1);
  pgrt_shlib_open(&l, "libpgfake_beside_extra.so.1", NULL, RTLD_NOW | RTLD_LOCAL);
  EXPECT(l.from == PGRT_SHLIB_ENV && which(l.dl) == 2);
  if (l.dl) dlclose(l.dl);

  /* NCCL: PGRT_NCCL names DIR_B's copy, but this process has DIR_A's */
  setenv("PGRT_NCCL", nccl_b, 1);
  unsetenv("PGRT_LIB_NCCL");
  void *torch_nccl = dlopen(nccl_a, RTLD_NOW | RTLD_LOCAL);
  pgrt_nccl n;
  int version = 0;
  pgrt_status st = pgrt_nccl_load(&n);
  EXPECT(st == PGRT_OK && n.lib == torch_nccl && n.get_version(&version) == 0 && version == 5);
  if (st != PGRT_OK) printf("shlib_main.c: pgrt_nccl_load: %s\n", pgrt_error());

  dlclose(torch);
  printf("shlib: %s\n", failures ? "FAIL" : "a library already in the process is reused, else PGRT_LIB_<NAME>'s "
                                           "path, a neighbour of its family, the soname");
  return failures != 0;
}

/*
 * cache.c -- cubins NVRTC compiled at init, kept on disk for the next init.
 *
 * libpgrt compiles CUDA sources at init: its own kernels (the updater, pgrt_copy and
 * pgrt_set) and a program's CUDA modules (a condition's or a bucket's setter).  NVRTC
 * takes 18-25 ms a source on an H100 machine, most of the init of a small program; the
 * same source for the same GPU gives the same cubin, so it is kept.  The directory is
 * $PGRT_CACHE, else $XDG_CACHE_HOME/pgrt, else $HOME/.cache/pgrt; PGRT_CACHE=off keeps
 * nothing.  A file is named by a hash of its key (the source, the GPU's architecture,
 * NVRTC's options and version) and holds the whole key: a file whose key differs is a
 * miss, never a wrong cubin.  It is written to a temporary name of its own (the process
 * and a count of the process's writes: threads that compile one source at once each
 * write their own) and renamed, so that processes and threads that init at once read
 * whole files only.  Any failure to read or write is
 * a miss, silent: the cache can only save time; a kept cubin the driver refuses to load
 * is compiled again, and replaced (modules.c, load_cuda).
 */
#include "pgrt_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'P', 'G', 'R', 'T', 'C', 'U', 'B', '1'};

/* The cache's directory into buf, or 0 when it is off or there is none. */
static int cache_dir(char *buf, size_t n) {
  const char *env = getenv("PGRT_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int w;
  if (env && (strcmp(env, "off") == 0 || strcmp(env, "0") == 0)) return 0;
  if (env && *env) w = snprintf(buf, n, "%s", env);
  else if (xdg && *xdg) w = snprintf(buf, n, "%s/pgrt", xdg);
  else if (home && *home) w = snprintf(buf, n, "%s/.cache/pgrt", home);
  else return 0;
  return w > 0 && (size_t)w < n;
}

/* The file for a key into buf: DIR/HASH.cubin (FNV-1a, 64 bits). */
static int cache_file(char *buf, size_t n, const void *key, size_t key_len) {
  char dir[4096];
  if (!cache_dir(dir, sizeof dir)) return 0;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < key_len; i++) h = (h ^ ((const unsigned char *)key)[i]) * 1099511628211ull;
  int w = snprintf(buf, n, "%s/%016llx.cubin", dir, (unsigned long long)h);
  return w > 0 && (size_t)w < n;
}

/* mkdir -p of path's directory part. */
static int make_dirs(const char *path) {
  char p[4200];
  if (strlen(path) >= sizeof p) return 0;
  memcpy(p, path, strlen(path) + 1);
  char *slash = strrchr(p, '/');
  if (!slash) return 1;
  *slash = 0;
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) return 0;
      *s = '/';
    }
  return mkdir(p, 0755) == 0 || errno == EEXIST;
}

int pgrt_cache_get(const void *key, size_t key_len, void **cubin, size_t *size) {
  char path[4200];
  *cubin = NULL;
  *size = 0;
  if (!cache_file(path, sizeof path, key, key_len)) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char magic[8];
  uint64_t klen = 0, clen = 0;
  int ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, MAGIC, 8) == 0 && fread(&klen, 8, 1, f) == 1 &&
           klen == key_len;
  unsigned char *k = ok ? malloc(key_len ? key_len : 1) : NULL;
  ok = ok && k && fread(k, 1, key_len, f) == key_len && memcmp(k, key, key_len) == 0 && fread(&clen, 8, 1, f) == 1 &&
       clen > 0 && clen < (1ull << 32);
  free(k);
  unsigned char *c = ok ? malloc((size_t)clen) : NULL;
  ok = ok && c && fread(c, 1, (size_t)clen, f) == clen && fgetc(f) == EOF;
  fclose(f);
  if (!ok) {
    free(c);
    return 0;
  }
  *cubin = c;
  *size = (size_t)clen;
  return 1;
}

void pgrt_cache_put(const void *key, size_t key_len, const void *cubin, size_t size) {
  char path[4200], tmp[4300];
  if (!cache_file(path, sizeof path, key, key_len) || !make_dirs(path)) return;
  static atomic_uint seq; /* threads of one process writing one key at once: a temporary file each */
  snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&seq, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    unlink(tmp);
    return;
  }
  uint64_t klen = key_len, clen = size;
  int ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(&klen, 8, 1, f) == 1 && fwrite(key, 1, key_len, f) == key_len &&
           fwrite(&clen, 8, 1, f) == 1 && fwrite(cubin, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

/* cache_main.c -- libpgrt's cache of compiled cubins (runtime/cache.c) in a directory of
 * its own (`make check-info`; no GPU: it calls no CUDA).  A cubin put is got back
 * whole; another key, a file cut short, a file holding another key of the same name,
 * PGRT_CACHE=off and a directory that cannot be made are misses.  Every mismatch is
 * printed, and any fails it. */
#define _DEFAULT_SOURCE
#include "pgrt_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond)                                                       \
  do {                                                                     \
    if (!(cond)) printf("cache_main.c:%d: %s\n", __LINE__, #cond), failures++; \
  } while (0)

static int get(const char *key, void **cubin, size_t *size) { return pgrt_cache_get(key, strlen(key), cubin, size); }

int main(void) {
  char dir[] = "/tmp/pgrt-cache-XXXXXX";
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  char root[64];
  snprintf(root, sizeof root, "%s/a/b", dir); /* made on the first put */
  setenv("PGRT_CACHE", root, 1);
  void *c = NULL;
  size_t n = 0;
  const unsigned char cubin[5] = {0x7f, 'E', 'L', 'F', 0};

  EXPECT(!get("nvrtc 13.0 sm_90 source", &c, &n) && !c && n == 0);
  pgrt_cache_put("nvrtc 13.0 sm_90 source", 23, cubin, sizeof cubin);
  EXPECT(get("nvrtc 13.0 sm_90 source", &c, &n) && n == sizeof cubin && memcmp(c, cubin, n) == 0);
  free(c);
  EXPECT(!get("nvrtc 13.0 sm_80 source", &c, &n)); /* another GPU */

  /* the one file there, cut short by a byte: a miss */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "f=$(ls %s/*.cubin) && truncate -s -1 \"$f\"", root);
  EXPECT(system(cmd) == 0);
  EXPECT(!get("nvrtc 13.0 sm_90 source", &c, &n) && !c);
  /* put again, then the file given another key's contents under this key's name */
  pgrt_cache_put("nvrtc 13.0 sm_90 source", 23, cubin, sizeof cubin);
  pgrt_cache_put("nvrtc 13.0 sm_90 other!", 23, cubin, sizeof cubin);
  snprintf(cmd, sizeof cmd, "cd %s && set -- $(ls -S *.cubin) && [ $# = 2 ] && cat \"$2\" > \"$1\"", root);
  EXPECT(system(cmd) == 0);
  int hits = get("nvrtc 13.0 sm_90 source", &c, &n);
  free(c);
  hits += get("nvrtc 13.0 sm_90 other!", &c, &n);
  free(c);
  EXPECT(hits == 1);

  /* off: nothing kept, nothing found */
  setenv("PGRT_CACHE", "off", 1);
  pgrt_cache_put("kept?", 5, cubin, sizeof cubin);
  EXPECT(!get("kept?", &c, &n));
  /* a directory that cannot be made: silent misses */
  setenv("PGRT_CACHE", "/proc/pgrt-cache", 1);
  pgrt_cache_put("kept?", 5, cubin, sizeof cubin);
  EXPECT(!get("kept?", &c, &n));
  /* no temporary files left behind */
  snprintf(cmd, sizeof cmd, "! ls %s/*.tmp >/dev/null 2>&1", root);
  EXPECT(system(cmd) == 0);

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("cache_main.c: %s failed\n", cmd);
  if (failures) return printf("cache_main.c: %d failures\n", failures), 1;
  printf("cache_main.c: the cubin cache passes\n");
  return 0;
}

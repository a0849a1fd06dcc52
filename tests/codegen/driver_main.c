/* driver_main.c -- libpgrt without the CUDA driver (runtime/cuda_driver.c; `make
 * check-info`, where no driver is: PGRT_LIBCUDA names no file).  The program links no
 * libcuda and starts; pgrt_cuda fails with PGRT_ERR_DRIVER and dlerror()'s reason, the
 * same from 8 threads at once and again later (one load per process); a weights file
 * is checked before the driver is needed (a wrong one: PGRT_ERR_ARGUMENT), and the
 * right one then fails for the driver.  Every mismatch is printed, and any fails it.
 *
 *   PGRT_LIBCUDA=/nonexistent/libcuda.so.1 driver_main WEIGHTS.safetensors */
#include "pgrt.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int failures;
#define EXPECT(cond)                                                                 \
  do {                                                                               \
    if (!(cond)) printf("driver_main.c:%d: %s\n", __LINE__, #cond), failures++;     \
  } while (0)

#define WANT "the CUDA driver (/nonexistent/libcuda.so.1, from PGRT_LIBCUDA) could not be loaded: " \
             "/nonexistent/libcuda.so.1: cannot open shared object file"

/* One thread's pgrt_cuda: its status, whether it left the table NULL, its message. */
typedef struct {
  pgrt_status st;
  int null;
  char why[512];
} attempt;

static const pgrt_driver not_loaded;

static void *try_load(void *arg) {
  attempt *a = arg;
  const pgrt_driver *drv = &not_loaded; /* not NULL: pgrt_cuda must clear it */
  a->st = pgrt_cuda(&drv);
  a->null = drv == NULL;
  snprintf(a->why, sizeof a->why, "%s", pgrt_error()); /* pgrt_error() is per thread */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: driver_main WEIGHTS.safetensors\n"), 2;
  attempt at[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) EXPECT(pthread_create(&t[i], NULL, try_load, &at[i]) == 0);
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    EXPECT(at[i].st == PGRT_ERR_DRIVER && at[i].null);
    EXPECT(strncmp(at[i].why, WANT, strlen(WANT)) == 0);
  }
  attempt again;
  try_load(&again);
  EXPECT(again.st == PGRT_ERR_DRIVER && again.null && strcmp(again.why, at[0].why) == 0);
  EXPECT(pgrt_cuda(NULL) == PGRT_ERR_ARGUMENT);

  /* the weights file is checked first: a wrong size is the file's error, with no driver */
  struct stat sb;
  unsigned char len8[8] = {0};
  FILE *f = fopen(argv[1], "rb");
  EXPECT(f && stat(argv[1], &sb) == 0 && fread(len8, 1, 8, f) == 8);
  if (f) fclose(f);
  uint64_t header = 0;
  for (int i = 7; i >= 0; i--) header = header << 8 | len8[i];
  pgrt_tensor one = {0, 4};
  pgrt_weights_file wrong = {header, (uint64_t)sb.st_size + 1, &one, 1}, right = {header, (uint64_t)sb.st_size, &one, 1};
  CUdeviceptr block = 1, addr = 0;
  EXPECT(pgrt_weights_load(argv[1], &wrong, &block, &addr) == PGRT_ERR_ARGUMENT && block == 0);
  EXPECT(strstr(pgrt_error(), "is not the one the program was compiled against") != NULL);
  EXPECT(pgrt_weights_load(argv[1], &right, &block, &addr) == PGRT_ERR_DRIVER && block == 0);
  EXPECT(strncmp(pgrt_error(), WANT, strlen(WANT)) == 0);

  /* the names asked of the driver's cuGetProcAddress: cuda.h's, macros expanded, less "_vN" */
  char name[64];
  EXPECT(strcmp(PGRT_DRIVER_SYMBOL(cuGraphInstantiate, name), "cuGraphInstantiateWithFlags") == 0);
  EXPECT(strcmp(PGRT_DRIVER_SYMBOL(cuMemAlloc, name), "cuMemAlloc") == 0);
  EXPECT(strcmp(PGRT_DRIVER_SYMBOL(cuMemcpyHtoD, name), "cuMemcpyHtoD") == 0);
  EXPECT(strcmp(PGRT_DRIVER_SYMBOL(cuLaunchKernelEx, name), "cuLaunchKernelEx") == 0);
  EXPECT(strcmp(pgrt_driver_symbol("cuFoo_v12", name, sizeof name), "cuFoo") == 0);
  EXPECT(strcmp(pgrt_driver_symbol("cuFoo_x2", name, sizeof name), "cuFoo_x2") == 0);
  EXPECT(strcmp(pgrt_driver_symbol("cuv2", name, sizeof name), "cuv2") == 0);

  if (failures) return printf("driver_main: %d failures\n", failures), 1;
  printf("driver: no driver, no libcuda linked: pgrt_cuda and pgrt_weights_load fail with PGRT_ERR_DRIVER and "
         "dlerror()'s reason, from 8 threads and again; a wrong weights file is still the file's error\n");
  return 0;
}

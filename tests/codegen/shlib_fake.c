/* shlib_fake.c -- a library for shlib_main.c, built several times with WHICH (a number
 * that tells the copies apart) under several sonames: libpgfake_beside.so.1 and its
 * family, and libnccl.so.2 (NCCL's functions libpgrt resolves, doing nothing but
 * ncclGetVersion, which gives WHICH). */
#include <stddef.h>

int pgfake_which = WHICH;

typedef struct {
  char internal[128];
} fake_id;

int ncclGetUniqueId(fake_id *id);
int ncclCommInitRank(void **comm, int nranks, fake_id id, int rank);
int ncclCommDestroy(void *comm);
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *stream);
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
const char *ncclGetErrorString(int result);
int ncclGetVersion(int *version);

int ncclGetUniqueId(fake_id *id) { return id ? 0 : 1; }
int ncclCommInitRank(void **comm, int nranks, fake_id id, int rank) { return (void)comm, (void)nranks, (void)id, (void)rank, 1; }
int ncclCommDestroy(void *comm) { return (void)comm, 0; }
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream) {
  return (void)s, (void)r, (void)n, (void)dt, (void)op, (void)comm, (void)stream, 1;
}
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *stream) {
  return (void)s, (void)r, (void)n, (void)dt, (void)comm, (void)stream, 1;
}
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream) {
  return (void)s, (void)r, (void)n, (void)dt, (void)op, (void)comm, (void)stream, 1;
}
const char *ncclGetErrorString(int result) { return result ? "fake error" : "no error"; }
int ncclGetVersion(int *version) { return *version = WHICH, 0; }

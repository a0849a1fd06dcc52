/*
 * threads_main.c -- libpgrt from several threads (runtime/pgrt.h, "Threads"), over the C
 * pgcc generates for tests/gpu/codegen/hostread.graph: y = x / max|x| + bias, where
 * max|x| is read back to the host mid-call and bias is a callback scalar that reads it
 * there.  The callback runs on the calling thread inside pgrt_run, which is what makes
 * every overlap below deterministic: a thread parked in it is inside its call.
 *
 *   1. Programs of their own, at once: THREADS threads each build their own program
 *      (at once: NVRTC, the cache of compiled cubins), then run CALLS calls each, new
 *      data and buffers alternating on every call; every thread's first call waits in
 *      its callback until all THREADS calls are inside pgrt_run together (a hang, not a
 *      pass, if libpgrt serialized them: a timeout fails the test).  Every result is
 *      checked.  Then each thread fails a call of its own (a tensor file named after
 *      it) and, once all have, finds its own message in pgrt_error().
 *   2. One program, two threads at once: thread A's call waits in its callback, where
 *      it first calls the program again (PGRT_ERR_BUSY, "on this thread"); then thread
 *      B, with no CUDA context, calls it (PGRT_ERR_BUSY, "on another thread", its
 *      callback not called, its output untouched), reads the last finished call's
 *      statistics, and tries to destroy it (refused, the context kept); then A's call
 *      finishes, right, and the program serves the next call, right.
 *   3. One program, threads one after another: three threads with no current CUDA
 *      context call it in turn (libpgrt makes the program's context current, and the
 *      thread has none again after), one that has it current keeps it, and a thread
 *      with none destroys it (the double refuses a free without a context, and counts
 *      leaks at exit).
 *
 * Runs over the CPU double of the driver (tests/fakecuda/run.sh: also under the
 * sanitizers, and under ThreadSanitizer with libpgrt built into it) and on a GPU.
 *
 *   threads_main
 */
#define _POSIX_C_SOURCE 200809L
#include "hostread.h"
#include "gpu_check.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 4096
#define THREADS 4
#define CALLS 12
#define WAIT_S 120 /* only a deadlock waits this long: the test fails, saying so */

static CUcontext ctx; /* device 0's primary context */
static int failed;
static pthread_mutex_t say_lock = PTHREAD_MUTEX_INITIALIZER;

static int expect(int ok, const char *what, const char *cond, long k) {
  if (ok) return 1;
  pthread_mutex_lock(&say_lock);
  printf("FAILED: %s (%ld): %s\n", what, k, cond);
  failed = 1;
  pthread_mutex_unlock(&say_lock);
  return 0;
}
#define EXPECT(cond, what, k) expect(!!(cond), what, #cond, (long)(k))

/* ---- a counter threads wait on, with a timeout ---- */

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t cv;
  int count;
} gate;
#define GATE {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

static void gate_add(gate *g) {
  pthread_mutex_lock(&g->m);
  g->count++;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->m);
}

/* Waits until the count reaches n; 0 on the timeout. */
static int gate_wait(gate *g, int n) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += WAIT_S;
  int r = 0;
  pthread_mutex_lock(&g->m);
  while (g->count < n && r != ETIMEDOUT) r = pthread_cond_timedwait(&g->cv, &g->m, &until);
  int ok = g->count >= n;
  pthread_mutex_unlock(&g->m);
  return ok;
}

/* ---- one call's data, its callback and its check ---- */

typedef struct {
  float base;      /* bias = base + max|x| / 4 */
  int calls;       /* the callback's */
  float seen_m;
  gate *meet;      /* not NULL: the callback adds itself, then waits for meet_n */
  int meet_n;
  pgrt_ctx *again; /* not NULL: the callback calls this program first (and records the status) */
  pgrt_status again_st;
  char again_why[1024];
  gate *inside, *release; /* not NULL: the callback says it is inside, then waits for release */
} bias_state;

static int bias_cb(void *data, const void *const *host, uint64_t *value) {
  bias_state *b = data;
  b->calls++;
  b->seen_m = *(const float *)host[hostread_HOST_m_host];
  if (b->again) {
    hostread_args args; /* refused before anything is read: a null call will do */
    memset(&args, 0, sizeof args);
    b->again_st = hostread_run(b->again, &args, NULL);
    snprintf(b->again_why, sizeof b->again_why, "%s", pgrt_error());
    b->again = NULL;
  }
  if (b->meet) {
    gate_add(b->meet);
    if (!gate_wait(b->meet, b->meet_n)) return 90; /* fails the call, saying the callback failed */
    b->meet = NULL;
  }
  if (b->inside) {
    gate_add(b->inside);
    if (!gate_wait(b->release, 1)) return 91;
    b->inside = NULL;
  }
  float v = b->base + 0.25f * b->seen_m;
  memcpy(value, &v, sizeof v);
  return 0;
}

typedef struct {
  CUdeviceptr x, y;
  float host_x[N], host_y[N];
  bias_state bias;
  hostread_args args;
} job;

/* New data in x (scaled by `scale`, so that max|x| moves; x[0] >= 0, as the guard
 * expects), y poisoned, base set; the args point at them. */
static void job_fill(job *j, unsigned *seed, float scale, float base) {
  for (int i = 0; i < N; i++) j->host_x[i] = scale * frand(seed);
  j->host_x[0] = fabsf(j->host_x[0]);
  CHECK(cuMemcpyHtoD(j->x, j->host_x, sizeof j->host_x));
  CHECK(cuMemsetD32(j->y, 0x7fc00000, N)); /* NaN */
  CHECK(cuCtxSynchronize());
  j->bias.base = base;
  j->args.x = j->x, j->args.y = j->y;
  j->args.bias.fn = bias_cb, j->args.bias.data = &j->bias;
}

static void job_alloc(job *j) {
  CHECK(cuMemAlloc(&j->x, sizeof j->host_x));
  CHECK(cuMemAlloc(&j->y, sizeof j->host_y));
}

static void job_free(job *j) {
  CHECK(cuMemFree(j->x));
  CHECK(cuMemFree(j->y));
}

/* The worst error of y against the CPU's x / m + bias (inf where y is NaN), after the
 * stream has run the call; -1 where y is all poison still. */
static double job_error(job *j, CUstream s) {
  CHECK(cuStreamSynchronize(s));
  CHECK(cuMemcpyDtoH(j->host_y, j->y, sizeof j->host_y));
  float m = 0;
  int poison = 1;
  for (int i = 0; i < N; i++) m = fmaxf(m, fabsf(j->host_x[i])), poison &= j->host_y[i] != j->host_y[i];
  if (poison) return -1;
  float b = j->bias.base + 0.25f * m;
  double err = 0;
  for (int i = 0; i < N; i++) {
    double e = fabs(j->host_y[i] - ((double)j->host_x[i] / m + b));
    if (!(e == e)) e = INFINITY;
    if (e > err) err = e;
  }
  return err;
}

/* ---- 1. programs of their own, at once ---- */

static gate built = GATE, inside_first = GATE, erred = GATE;

static void *own_program(void *arg) {
  long k = (long)(intptr_t)arg;
  CUstream s;
  CHECK(cuCtxSetCurrent(ctx)); /* init builds on the thread's current context */
  CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  pgrt_ctx *p = NULL;
  pgrt_status st = hostread_init(&p, NULL, NULL, 0);
  gate_add(&built);
  if (!EXPECT(st == PGRT_OK, "init on a thread of its own", k)) {
    printf("thread %ld: %s\n", k, pgrt_error());
    return NULL;
  }
  EXPECT(gate_wait(&built, THREADS), "every thread built its program before any runs", k);
  job *two = calloc(2, sizeof *two);
  job_alloc(&two[0]), job_alloc(&two[1]);
  unsigned seed = 1000u + (unsigned)k;
  double worst = 0;
  for (int call = 0; call < CALLS; call++) {
    job *j = &two[call % 2]; /* new addresses every call */
    job_fill(j, &seed, 0.5f + (float)call + (float)k, 0.125f * (float)(call + 7 * k));
    j->bias.meet = call == 0 ? &inside_first : NULL, j->bias.meet_n = THREADS;
    int before = j->bias.calls;
    st = hostread_run(p, &j->args, s);
    if (!EXPECT(st == PGRT_OK, "a call while the other threads run theirs", k)) printf("thread %ld: %s\n", k, pgrt_error());
    double err = job_error(j, s);
    EXPECT(err >= 0 && err < 1e-5, "right results", k);
    EXPECT(j->bias.calls == before + 1, "the callback called once", k);
    if (err > worst) worst = err;
  }
  pgrt_run_stats rs;
  pgrt_last_run(p, &rs);
  int launched = rs.graphs_launched + rs.eager_nodes;
  /* pgrt_error() is per thread: each thread's failure, then everyone's look at their own */
  char path[64], mine[64];
  snprintf(path, sizeof path, "/nonexistent/thread-%ld.safetensors", k);
  pgrt_host_tensor t;
  EXPECT(pgrt_tensor_read(path, "x", &t) == PGRT_ERR_ARGUMENT, "a failure of this thread's own", k);
  gate_add(&erred);
  EXPECT(gate_wait(&erred, THREADS), "every thread failed a call", k);
  snprintf(mine, sizeof mine, "thread-%ld.", k);
  EXPECT(strstr(pgrt_error(), mine) != NULL, "pgrt_error() says this thread's failure, not another's", k);
  hostread_destroy(&p);
  EXPECT(p == NULL, "destroyed", k);
  job_free(&two[0]), job_free(&two[1]);
  free(two);
  CHECK(cuStreamDestroy(s));
  pthread_mutex_lock(&say_lock);
  printf("thread %ld: its own program, %d calls at once with %d other threads: max error %.3g (%d launches in its "
         "last call)\n", k, CALLS, THREADS - 1, worst, launched);
  pthread_mutex_unlock(&say_lock);
  return NULL;
}

static void programs_at_once(void) {
  pthread_t t[THREADS];
  for (long k = 0; k < THREADS; k++) {
    int r = pthread_create(&t[k], NULL, own_program, (void *)(intptr_t)k);
    if (r) printf("pthread_create: %s\n", strerror(r)), exit(2);
  }
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  EXPECT(inside_first.count == THREADS, "all first calls were inside pgrt_run at once", inside_first.count);
  /* a program built after them finds the module's cubin they compiled (NVRTC, into an
   * empty cache when run.sh gives one: THREADS writes of one file at once) */
  pgrt_ctx *p = NULL;
  PGRT(hostread_init(&p, NULL, NULL, 0));
  pgrt_init_stats is;
  pgrt_last_init(p, &is);
  const char *cache = getenv("PGRT_CACHE");
  int cached = !(cache && (strcmp(cache, "off") == 0 || strcmp(cache, "0") == 0));
  if (cached)
    EXPECT(is.nvrtc_compiles == 0 && is.cache_hits == 1, "the cubin the threads compiled is in the cache, whole",
           is.nvrtc_compiles);
  hostread_destroy(&p);
  printf("1. %d programs, each on its own thread, built at once and run %d calls each at once: right; pgrt_error() "
         "per thread; %s\n", THREADS, CALLS,
         cached ? "the cubin compiled at once is in the cache" : "PGRT_CACHE=off: the cache not looked at");
}

/* ---- 2. one program, two threads at once ---- */

typedef struct {
  pgrt_ctx *p;
  job *j;
  CUstream s;
  pgrt_status st;
  pgrt_ctx *destroyed; /* B: what pgrt_destroy left */
  char why[1024], destroy_why[1024];
  pgrt_run_stats rs;
  CUcontext had;
} side;

static gate a_inside = GATE, b_done = GATE;

static void *thread_a(void *arg) {
  side *a = arg;
  a->st = hostread_run(a->p, &a->j->args, a->s);
  snprintf(a->why, sizeof a->why, "%s", pgrt_error());
  return NULL;
}

static void *thread_b(void *arg) {
  side *b = arg;
  CHECK(cuCtxGetCurrent(&b->had)); /* none: this thread makes no CUDA call of its own */
  if (gate_wait(&a_inside, 1)) {
    b->st = hostread_run(b->p, &b->j->args, b->s);
    snprintf(b->why, sizeof b->why, "%s", pgrt_error());
    pgrt_last_run(b->p, &b->rs);
    b->destroyed = b->p;
    hostread_destroy(&b->destroyed);
    snprintf(b->destroy_why, sizeof b->destroy_why, "%s", pgrt_error());
  } else {
    b->st = PGRT_OK; /* fails below */
  }
  gate_add(&b_done);
  return NULL;
}

static void one_program_two_threads(CUstream s) {
  pgrt_ctx *p = NULL;
  PGRT(hostread_init(&p, NULL, NULL, 0));
  job *ja = calloc(1, sizeof *ja), *jb = calloc(1, sizeof *jb);
  job_alloc(ja), job_alloc(jb);
  unsigned seed = 77;
  job_fill(ja, &seed, 3.0f, 0.5f);
  PGRT(hostread_run(p, &ja->args, s)); /* a first call: the statistics B should read */
  EXPECT(job_error(ja, s) < 1e-5, "a first call", 0);
  pgrt_run_stats first;
  pgrt_last_run(p, &first);

  job_fill(ja, &seed, 5.0f, 1.5f);
  job_fill(jb, &seed, 7.0f, 2.5f);
  int a_before = ja->bias.calls;
  ja->bias.again = p;
  ja->bias.inside = &a_inside, ja->bias.release = &b_done;
  side a = {.p = p, .j = ja, .s = s}, b = {.p = p, .j = jb, .s = s};
  pthread_t ta, tb;
  if (pthread_create(&ta, NULL, thread_a, &a) || pthread_create(&tb, NULL, thread_b, &b))
    printf("pthread_create failed\n"), exit(2);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);

  EXPECT(ja->bias.again_st == PGRT_ERR_BUSY && strstr(ja->bias.again_why, "program 'hostread' is already running on this thread"),
         "a call from inside the program's own callback: PGRT_ERR_BUSY", ja->bias.again_st);
  EXPECT(b.had == NULL, "B had no current CUDA context", 0);
  EXPECT(b.st == PGRT_ERR_BUSY, "B's call while A's runs: PGRT_ERR_BUSY", b.st);
  EXPECT(strstr(b.why, "pgrt_run: program 'hostread' is already running on another thread: one program takes one call "
                       "at a time; give each thread its own program") != NULL,
         "B's message says why", 0);
  EXPECT(jb->bias.calls == 0, "B's callback never called", jb->bias.calls);
  EXPECT(job_error(jb, s) == -1, "B's output untouched", 0);
  EXPECT(b.rs.graphs_launched == first.graphs_launched && b.rs.eager_nodes == first.eager_nodes &&
             b.rs.read_updated == first.read_updated && b.rs.host_ns == first.host_ns && first.host_ns > 0,
         "B read the last finished call's statistics", 0);
  EXPECT(b.destroyed == p && strstr(b.destroy_why, "pgrt_destroy: program 'hostread' is already running on another "
                                                   "thread"),
         "pgrt_destroy during A's call: refused, the context kept", 0);
  EXPECT(a.st == PGRT_OK, "A's call, undisturbed", a.st);
  if (a.st != PGRT_OK) printf("A: %s\n", a.why);
  EXPECT(ja->bias.calls == a_before + 1 && job_error(ja, s) < 1e-5, "A's results right", ja->bias.calls);

  /* the program serves the next call, from this thread, at B's buffers */
  job_fill(jb, &seed, 9.0f, 3.5f);
  PGRT(hostread_run(p, &jb->args, s));
  EXPECT(jb->bias.calls == 1 && job_error(jb, s) < 1e-5, "the next call, right", jb->bias.calls);
  hostread_destroy(&p);
  EXPECT(p == NULL, "destroyed after", 0);
  job_free(ja), job_free(jb);
  free(ja), free(jb);
  printf("2. one program, two threads at once: the second call refused with PGRT_ERR_BUSY (\"%s\"), a call from its "
         "own callback too, pgrt_destroy refused during it; the first call right, and the next\n", b.why);
}

/* ---- 3. one program, threads one after another ---- */

typedef struct {
  pgrt_ctx *p;
  job *j;
  CUstream s;
  int set_ctx; /* make the context current first */
  pgrt_status st;
  CUcontext before, after;
  int destroy;
} turn;

static void *take_turn(void *arg) {
  turn *t = arg;
  if (t->set_ctx) CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuCtxGetCurrent(&t->before));
  if (t->destroy) hostread_destroy(&t->p), t->st = t->p ? PGRT_ERR_ARGUMENT : PGRT_OK;
  else t->st = hostread_run(t->p, &t->j->args, t->s);
  if (t->st != PGRT_OK) printf("turn: %s\n", pgrt_error());
  CHECK(cuCtxGetCurrent(&t->after));
  return NULL;
}

static void threads_in_turn(CUstream s) {
  pgrt_ctx *p = NULL;
  PGRT(hostread_init(&p, NULL, NULL, 0));
  job *j = calloc(1, sizeof *j);
  job_alloc(j);
  unsigned seed = 99;
  for (int k = 0; k < 5; k++) {
    turn t = {.p = p, .j = j, .s = s, .set_ctx = k == 3, .destroy = k == 4};
    if (!t.destroy) job_fill(j, &seed, 2.0f + (float)k, 0.25f * (float)k);
    int before = j->bias.calls;
    pthread_t th;
    if (pthread_create(&th, NULL, take_turn, &t)) printf("pthread_create failed\n"), exit(2);
    pthread_join(th, NULL);
    CUcontext had = t.set_ctx ? ctx : NULL;
    EXPECT(t.st == PGRT_OK, t.destroy ? "destroyed from a thread with no CUDA context" : "a turn", k);
    EXPECT(t.before == had && t.after == had, "the thread's current context as it was", k);
    if (t.destroy) break;
    EXPECT(j->bias.calls == before + 1 && job_error(j, s) < 1e-5, "a turn's results right", k);
  }
  job_free(j);
  free(j);
  printf("3. one program, five threads one after another: three with no CUDA context, one with it current, a last "
         "that destroyed it: right, each thread's context as it was\n");
}

int main(void) {
  CUstream s = gpu_start();
  CHECK(cuCtxGetCurrent(&ctx));
  programs_at_once();
  one_program_two_threads(s);
  threads_in_turn(s);
  CHECK(cuStreamDestroy(s));
  printf("%s: libpgrt from threads (%d programs at once; one program from two threads at once, refused; one from "
         "threads in turn)\n", failed ? "FAIL" : "PASS", THREADS);
  return failed;
}

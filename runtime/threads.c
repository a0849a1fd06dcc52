/*
 * threads.c -- what libpgrt does about threads (pgrt.h, "Threads"): one program takes
 * one call at a time, each call runs on the CUDA context the program was built on, and
 * what a finished call leaves for the queries is read whole.
 *
 * pgrt_run and pgrt_destroy take the program's in-use flag at entry with one
 * compare-exchange (pgrt_ctx_enter) and give it back at exit (pgrt_ctx_leave).  A call
 * that finds it taken -- another thread inside pgrt_run on the same program, or a
 * callback of the call in progress calling back into it -- is refused with
 * PGRT_ERR_BUSY before it reads or writes anything of the program: never a race.  The
 * flag holds the identity of the thread inside (the address of a thread-local byte,
 * unique among live threads), so the message can say which of the two it is.
 *
 * A thread the caller or PyTorch started may have no current CUDA context, or another
 * one: pgrt_ctx_bind makes the program's current for the length of the call, and
 * pgrt_ctx_unbind gives the thread back what it had.  Where the program's is current
 * already (the usual case) that costs one cuCtxGetCurrent.
 *
 * The statistics of the last call and the buckets it ran (pgrt_last_run,
 * pgrt_last_bucket) are published under the program's mutex when a call ends
 * (pgrt_ctx_publish), and read under it: a thread that asks while another runs the
 * program gets the last finished call's, whole.
 */
#include "pgrt_impl.h"

#include <stdio.h>

static _Thread_local char self; /* its address names this thread */

pgrt_status pgrt_ctx_enter(pgrt_ctx *c, const char *call) {
  uintptr_t me = (uintptr_t)&self, none = 0;
  if (atomic_compare_exchange_strong_explicit(&c->running, &none, me, memory_order_acquire, memory_order_relaxed))
    return PGRT_OK;
  if (none == me)
    return pgrt_fail(PGRT_ERR_BUSY, "%s: program '%s' is already running on this thread (called from inside its own "
                     "call, by a callback scalar or a host function): one program takes one call at a time",
                     call, c->prog->name);
  return pgrt_fail(PGRT_ERR_BUSY, "%s: program '%s' is already running on another thread: one program takes one call "
                   "at a time; give each thread its own program, or wait for that call to return", call,
                   c->prog->name);
}

void pgrt_ctx_leave(pgrt_ctx *c) { atomic_store_explicit(&c->running, 0, memory_order_release); }

pgrt_status pgrt_ctx_bind(const pgrt_ctx *c, pgrt_binding *b) {
  pgrt_status st = PGRT_OK;
  b->prev = NULL;
  b->switched = 0;
  if (!c->cu) return PGRT_OK; /* an init that failed before it had one: nothing to bind */
  CU(pgrt_cu.cuCtxGetCurrent(&b->prev), c->prog->name);
  if (b->prev != c->cu) {
    CU(pgrt_cu.cuCtxSetCurrent(c->cu), c->prog->name);
    b->switched = 1;
  }
out:
  return st;
}

void pgrt_ctx_unbind(const pgrt_binding *b) {
  if (b->switched) pgrt_cu.cuCtxSetCurrent(b->prev);
}

void pgrt_ctx_publish(pgrt_ctx *c, int ran) {
  pthread_mutex_lock(&c->done_lock);
  c->done_stats = c->stats;
  for (int d = 0; ran && d < c->prog->dim_count; d++) c->bucket_last[d] = c->bucket_next[d];
  pthread_mutex_unlock(&c->done_lock);
}

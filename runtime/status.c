/*
 * status.c -- what every other file of libpgrt reports through: the error record
 * (pgrt_fail writes it, pgrt_error reads it; one per thread) and the clock init's and
 * run's statistics use.  The one CUDA check macro, CU, is in pgrt_impl.h.
 */
#include "pgrt_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static _Thread_local char last_error[1024];

long long pgrt_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

const char *pgrt_error(void) { return last_error; }

pgrt_status pgrt_fail(pgrt_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

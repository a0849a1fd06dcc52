/*
 * nccl_main.c -- libpgrt's NCCL declarations and its loading, without a GPU
 * (make check-info):
 *
 *   - pgrt.h's NCCL types and values are nccl.h's (libpgrt declares them itself so
 *     that nothing needs nccl.h to build; the library it loads must agree);
 *   - a program with comms (tests/gpu/codegen/allreduce.graph) whose NCCL is missing
 *     (PGRT_NCCL=/nonexistent) fails NAME_init with PGRT_ERR_NCCL and a message naming
 *     the library and dlerror()'s reason, before any CUDA call (the driver here is the
 *     stub, which would fail any), and so does pgrt_nccl_unique_id;
 *   - a missing id, a rank outside the comm and pgrt_init without comm arguments are
 *     refused with PGRT_ERR_ARGUMENT, also before CUDA;
 *   - NAME_info names the comm.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "allreduce.h"

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(pgrt_nccl_id) == sizeof(ncclUniqueId), "pgrt_nccl_id is ncclUniqueId");
_Static_assert(sizeof(pgrt_nccl_id) == NCCL_UNIQUE_ID_BYTES, "128 bytes");
_Static_assert(sizeof(pgrt_nccl_dtype) == sizeof(ncclDataType_t), "an int, as NCCL passes it");
_Static_assert(sizeof(pgrt_nccl_op) == sizeof(ncclRedOp_t), "an int, as NCCL passes it");
_Static_assert((int)PGRT_NCCL_INT8 == (int)ncclInt8 && (int)PGRT_NCCL_UINT8 == (int)ncclUint8 && (int)PGRT_NCCL_INT32 == (int)ncclInt32 &&
                   (int)PGRT_NCCL_UINT32 == (int)ncclUint32 && (int)PGRT_NCCL_INT64 == (int)ncclInt64 && (int)PGRT_NCCL_UINT64 == (int)ncclUint64 &&
                   (int)PGRT_NCCL_FLOAT16 == (int)ncclFloat16 && (int)PGRT_NCCL_FLOAT32 == (int)ncclFloat32 &&
                   (int)PGRT_NCCL_FLOAT64 == (int)ncclFloat64 && (int)PGRT_NCCL_BFLOAT16 == (int)ncclBfloat16,
               "pgrt_nccl_dtype is ncclDataType_t");
_Static_assert((int)PGRT_NCCL_SUM == (int)ncclSum && (int)PGRT_NCCL_PROD == (int)ncclProd && (int)PGRT_NCCL_MAX == (int)ncclMax &&
                   (int)PGRT_NCCL_MIN == (int)ncclMin && (int)PGRT_NCCL_AVG == (int)ncclAvg,
               "pgrt_nccl_op is ncclRedOp_t");
_Static_assert(ncclSuccess == 0, "libpgrt takes 0 as success");

static int failures;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) failures++;
}

int main(void) {
  setenv("PGRT_NCCL", "/nonexistent/libnccl.so.2", 1);
  pgrt_nccl_id id;
  memset(&id, 0, sizeof id);
  pgrt_ctx *ctx = (pgrt_ctx *)&id; /* init sets it to NULL on failure */
  allreduce_weights w = {.w = 256};

  pgrt_status st = allreduce_init(&ctx, &w, NULL, 0, &id, 0);
  printf("      %s\n", pgrt_error());
  expect(st == PGRT_ERR_NCCL && !ctx, "NCCL missing: init fails with PGRT_ERR_NCCL, no context");
  expect(strstr(pgrt_error(), "'/nonexistent/libnccl.so.2'") && strstr(pgrt_error(), "No such file"),
         "the message names the library and gives dlerror()'s reason");
  st = pgrt_nccl_unique_id(&id);
  expect(st == PGRT_ERR_NCCL && strstr(pgrt_error(), "/nonexistent/libnccl.so.2"),
         "NCCL missing: pgrt_nccl_unique_id fails with PGRT_ERR_NCCL");

  st = allreduce_init(&ctx, &w, NULL, 0, NULL, 0);
  expect(st == PGRT_ERR_ARGUMENT && strstr(pgrt_error(), "NCCL id"), "no id: PGRT_ERR_ARGUMENT");
  st = allreduce_init(&ctx, &w, NULL, 0, &id, 2);
  printf("      %s\n", pgrt_error());
  expect(st == PGRT_ERR_ARGUMENT && strstr(pgrt_error(), "rank 2"), "rank 2 of 2: PGRT_ERR_ARGUMENT");
  st = allreduce_init(&ctx, &w, NULL, 0, &id, -1);
  expect(st == PGRT_ERR_ARGUMENT, "rank -1: PGRT_ERR_ARGUMENT");

  const pgrt_program_info *info = allreduce_info();
  expect(info->n_comms == 1 && strcmp(info->comms[0].name, "world") == 0 && info->comms[0].ranks == 2 &&
             allreduce_COMM_RANKS == 2,
         "allreduce_info names comm 'world' of 2 ranks");

  printf("%d failed\n", failures);
  return failures != 0;
}

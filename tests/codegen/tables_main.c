/* tables_main.c -- the tables pgcc (compiler/pgcc.h) and libpgrt (runtime/pgrt.h) each
 * declare, checked against each other when this compiles (make check-info): pgrt.h says
 * its scalar types, module kinds, condition types, collectives and reductions are pgcc's,
 * in pgcc's order, and emit_c.c writes pgrt.h's names from arrays in pgcc's order.  The
 * relocation kinds are one table (runtime/pgrt_relocs.h); the rest is checked here, enum
 * by enum, until each is one table too. */
#include "pgcc.h"
#include "pgrt.h"

#include <stdio.h>

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " and " #b " differ")

/* scalar types: pgrt_dtype is PgType without BYTES (a parameter, never a scalar's type) */
SAME(PG_T_I8, PGRT_DT_I8);
SAME(PG_T_I16, PGRT_DT_I16);
SAME(PG_T_I32, PGRT_DT_I32);
SAME(PG_T_I64, PGRT_DT_I64);
SAME(PG_T_U8, PGRT_DT_U8);
SAME(PG_T_U16, PGRT_DT_U16);
SAME(PG_T_U32, PGRT_DT_U32);
SAME(PG_T_U64, PGRT_DT_U64);
SAME(PG_T_F16, PGRT_DT_F16);
SAME(PG_T_BF16, PGRT_DT_BF16);
SAME(PG_T_F32, PGRT_DT_F32);
SAME(PG_T_F64, PGRT_DT_F64);
SAME(PG_T_BOOL, PGRT_DT_BOOL);
SAME(PG_T_PTR, PGRT_DT_PTR);
SAME(PG_T_BYTES, PGRT_DT_PTR + 1);
SAME(PG_TYPE_COUNT, PGRT_DT_PTR + 2);

SAME(PG_MOD_CUBIN, PGRT_MOD_CUBIN);
SAME(PG_MOD_FATBIN, PGRT_MOD_FATBIN);
SAME(PG_MOD_PTX, PGRT_MOD_PTX);
SAME(PG_MOD_CUDA, PGRT_MOD_CUDA);
SAME(PG_MOD_LIBRARY, PGRT_MOD_LIBRARY);
SAME(PG_MOD_KIND_COUNT, PGRT_MOD_LIBRARY + 1);

SAME(PG_COND_IF, PGRT_COND_IF);
SAME(PG_COND_WHILE, PGRT_COND_WHILE);
SAME(PG_COND_SWITCH, PGRT_COND_SWITCH);
SAME(PG_COND_COUNT, PGRT_COND_SWITCH + 1);

#define X(e, fn, send, recv, op) SAME(PG_COLL_##e, PGRT_COLL_##e);
PG_COLLECTIVES(X)
#undef X
SAME(PG_COLL_COUNT, PGRT_COLL_REDUCESCATTER + 1);

#define X(e, name) SAME(PG_OP_##e, PGRT_NCCL_##e);
PG_REDOPS(X)
#undef X
SAME(PG_OP_COUNT, PGRT_NCCL_AVG + 1);

#define X(e, name, size, shift) SAME(PG_RELOC_##e, PGRT_RELOC_##e);
PG_RELOC_KINDS(X)
#undef X

int main(void) {
  printf("tables: pgcc's and libpgrt's scalar types, module kinds, condition types, collectives, reductions and "
         "relocation kinds agree\n");
  return 0;
}

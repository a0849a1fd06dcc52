/* info_main.c -- NAME_info()'s tables against the generated structs and the .graph
 * files (`make check-info`; no GPU: nothing here calls CUDA).  Built with the C that
 * pgcc generates from tests/corpus/export/mlp_small/mlp_small.graph,
 * tests/codegen/info_roles.graph and tests/golden/buckets.graph (as buckets_golden: dims,
 * their size fields and the shapes that name them); every mismatch is printed, and any
 * fails it. */
#include "buckets_golden.h"
#include "info_roles.h"
#include "mlp_small.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                                \
  do {                                                                              \
    if (!(cond)) printf("info_main.c:%d: expected %s\n", __LINE__, #cond), failures++; \
  } while (0)

/* One field: name, role, dtype, shape (ndim entries of dims), offset, size, tensor, and
 * which shape entries are dims (sdims: ndim entries, -1 a fixed size; NULL: none is). */
static void field_dims(const pgrt_field *f, const char *name, pgrt_field_role role, const char *dtype, int ndim,
                       const int64_t *dims, size_t offset, size_t size, const char *tensor, const int *sdims) {
  if (strcmp(f->name, name) != 0) {
    printf("field '%s': expected '%s'\n", f->name, name), failures++;
    return;
  }
  if (f->role != role || strcmp(f->dtype, dtype) != 0 || f->ndim != ndim || f->offset != offset || f->size != size)
    printf("field '%s': role %d dtype '%s' ndim %d offset %zu size %zu; expected %d '%s' %d %zu %zu\n", name,
           (int)f->role, f->dtype, f->ndim, f->offset, f->size, (int)role, dtype, ndim, offset, size),
        failures++;
  for (int i = 0; i < ndim && f->ndim == ndim; i++)
    if (!f->shape || f->shape[i] != dims[i]) printf("field '%s': dimension %d differs\n", name, i), failures++;
  if ((tensor == NULL) != (f->tensor == NULL) || (tensor && strcmp(tensor, f->tensor) != 0))
    printf("field '%s': tensor '%s', expected '%s'\n", name, f->tensor ? f->tensor : "(null)",
           tensor ? tensor : "(null)"),
        failures++;
  if ((sdims == NULL) != (f->shape_dims == NULL)) printf("field '%s': shape_dims %s\n", name, sdims ? "missing" : "given"), failures++;
  for (int i = 0; sdims && f->shape_dims && i < ndim; i++)
    if (f->shape_dims[i] != sdims[i]) printf("field '%s': shape entry %d is dim %d, not %d\n", name, i, f->shape_dims[i], sdims[i]), failures++;
}

static void field(const pgrt_field *f, const char *name, pgrt_field_role role, const char *dtype, int ndim,
                  const int64_t *dims, size_t offset, size_t size, const char *tensor) {
  field_dims(f, name, role, dtype, ndim, dims, offset, size, tensor, NULL);
}

/* The golden bucket program: dim B (1, 2, 4, 8, pad), dim S (16, 32, exact); the sizes
 * first in NAME_args; x and y [B, 64], seq [S] at the largest values. */
static int buckets(void) {
  const pgrt_program_info *b = buckets_golden_info();
  int roles = 0;
  EXPECT(strcmp(b->name, "buckets_golden") == 0);
  EXPECT(b->args_size == sizeof(buckets_golden_args) && b->weights_size == sizeof(buckets_golden_weights));
  EXPECT(b->arena_bytes == buckets_golden_ARENA_BYTES && b->arena_bytes == 2048); /* the largest bucket's */
  EXPECT(b->n_dims == 2 && b->dims);
  static const int64_t bv[] = buckets_golden_DIM_B_VALUES, sv[] = buckets_golden_DIM_S_VALUES;
  EXPECT(buckets_golden_DIM_B_BUCKETS == 4 && buckets_golden_DIM_S_BUCKETS == 2);
  if (b->n_dims == 2) {
    EXPECT(strcmp(b->dims[0].name, "B") == 0 && b->dims[0].n_values == 4 && b->dims[0].pad == 1);
    EXPECT(strcmp(b->dims[1].name, "S") == 0 && b->dims[1].n_values == 2 && b->dims[1].pad == 0);
    for (int k = 0; k < 4 && b->dims[0].n_values == 4; k++) EXPECT(b->dims[0].values[k] == bv[k]);
    for (int k = 0; k < 2 && b->dims[1].n_values == 2; k++) EXPECT(b->dims[1].values[k] == sv[k]);
  }
  EXPECT(b->n_args == 5 && b->n_weights == 2);
  static const int64_t io[] = {8, 64}, seq[] = {32};
  static const int io_dims[] = {0, -1}, seq_dims[] = {1};
  if (b->n_args == 5) {
    field(&b->args[0], "B", PGRT_FIELD_SIZE, "i64", 0, NULL, offsetof(buckets_golden_args, B), 8, NULL);
    field(&b->args[1], "S", PGRT_FIELD_SIZE, "i64", 0, NULL, offsetof(buckets_golden_args, S), 8, NULL);
    field_dims(&b->args[2], "x", PGRT_FIELD_INPUT, "f32", 2, io, offsetof(buckets_golden_args, x), 2048, NULL, io_dims);
    field_dims(&b->args[3], "y", PGRT_FIELD_OUTPUT, "f32", 2, io, offsetof(buckets_golden_args, y), 2048, NULL, io_dims);
    field_dims(&b->args[4], "seq", PGRT_FIELD_INOUT, "f32", 1, seq, offsetof(buckets_golden_args, seq), 128, NULL,
               seq_dims);
    EXPECT(sizeof(((buckets_golden_args *)0)->B) == 8);
  }
  static const int64_t sq[] = {64, 64}, vec[] = {64};
  if (b->n_weights == 2) {
    field(&b->weights[0], "w", PGRT_FIELD_WEIGHT, "f32", 2, sq, offsetof(buckets_golden_weights, w), 16384, NULL);
    field(&b->weights[1], "b", PGRT_FIELD_WEIGHT, "f32", 1, vec, offsetof(buckets_golden_weights, b), 256, NULL);
  }
  for (int i = 0; i < b->n_args; i++) roles |= 1 << b->args[i].role;
  return roles;
}

int main(void) {
  const pgrt_program_info *m = mlp_small_info();
  EXPECT(m && m == mlp_small_info());
  EXPECT(strcmp(m->name, "mlp_small") == 0);
  EXPECT(m->args_size == sizeof(mlp_small_args) && m->weights_size == sizeof(mlp_small_weights));
  EXPECT(m->arena_bytes == mlp_small_ARENA_BYTES);
  EXPECT(m->n_args == 2 && m->n_weights == 4);
  static const int64_t io[] = {1, 256}, sq[] = {256, 256}, vec[] = {256};
  if (m->n_args == 2) {
    field(&m->args[0], "in0", PGRT_FIELD_INPUT, "f32", 2, io, offsetof(mlp_small_args, in0), 1024, NULL);
    field(&m->args[1], "out0", PGRT_FIELD_OUTPUT, "f32", 2, io, offsetof(mlp_small_args, out0), 1024, NULL);
  }
  if (m->n_weights == 4) {
    field(&m->weights[0], "w_layers_0_weight", PGRT_FIELD_WEIGHT, "f32", 2, sq,
          offsetof(mlp_small_weights, w_layers_0_weight), 262144, "layers.0.weight");
    field(&m->weights[1], "w_layers_0_bias", PGRT_FIELD_WEIGHT, "f32", 1, vec,
          offsetof(mlp_small_weights, w_layers_0_bias), 1024, "layers.0.bias");
    field(&m->weights[2], "w_layers_1_weight", PGRT_FIELD_WEIGHT, "f32", 2, sq,
          offsetof(mlp_small_weights, w_layers_1_weight), 262144, "layers.1.weight");
    field(&m->weights[3], "w_layers_1_bias", PGRT_FIELD_WEIGHT, "f32", 1, vec,
          offsetof(mlp_small_weights, w_layers_1_bias), 1024, "layers.1.bias");
  }

  const pgrt_program_info *r = info_roles_info();
  EXPECT(strcmp(r->name, "info_roles") == 0);
  EXPECT(r->args_size == sizeof(info_roles_args) && r->weights_size == sizeof(info_roles_weights));
  EXPECT(r->arena_bytes == info_roles_ARENA_BYTES && r->arena_bytes >= 256);
  EXPECT(r->n_args == 9 && r->n_weights == 1);
  static const int64_t bits[] = {2, 2}, w[] = {4, 8};
  if (r->n_args == 9) {
    field(&r->args[0], "t", PGRT_FIELD_INOUT, "", -1, NULL, offsetof(info_roles_args, t), 4, NULL);
    field(&r->args[1], "bits", PGRT_FIELD_OUTPUT, "u32", 2, bits, offsetof(info_roles_args, bits), 16, NULL);
    field(&r->args[2], "i", PGRT_FIELD_SCALAR, "i32", 0, NULL, offsetof(info_roles_args, i), 4, NULL);
    field(&r->args[3], "h", PGRT_FIELD_SCALAR, "f16", 0, NULL, offsetof(info_roles_args, h), 2, NULL);
    field(&r->args[4], "b", PGRT_FIELD_SCALAR, "bf16", 0, NULL, offsetof(info_roles_args, b), 2, NULL);
    field(&r->args[5], "wide", PGRT_FIELD_SCALAR, "i64", 0, NULL, offsetof(info_roles_args, wide), 8, NULL);
    field(&r->args[6], "u", PGRT_FIELD_SCALAR, "u8", 0, NULL, offsetof(info_roles_args, u), 1, NULL);
    field(&r->args[7], "cb", PGRT_FIELD_SCALAR_FN, "f32", 0, NULL, offsetof(info_roles_args, cb),
          sizeof(pgrt_scalar_fn), NULL);
    field(&r->args[8], "note", PGRT_FIELD_HOST_FN, "", -1, NULL, offsetof(info_roles_args, note),
          sizeof(pgrt_host_fn), NULL);
    for (int i = 2; i < 7; i++) /* a scalar's size is its member's */
      EXPECT(r->args[i].offset + r->args[i].size <= sizeof(info_roles_args));
  }
  /* every role a field can have is in these tables (PGRT_FIELD_SIZE is the last) */
  int roles = buckets();
  for (int i = 0; i < r->n_args; i++) roles |= 1 << r->args[i].role;
  for (int i = 0; i < r->n_weights; i++) roles |= 1 << r->weights[i].role;
  for (int i = 0; i < m->n_args; i++) roles |= 1 << m->args[i].role;
  EXPECT(roles == (1 << (PGRT_FIELD_SIZE + 1)) - 1);
  /* the host buffer is no field, but the header gives its index in a callback's array */
  EXPECT(info_roles_HOST_r == 0 && info_roles_HOST_BUFFERS == 1);
  if (r->n_weights == 1)
    field(&r->weights[0], "w", PGRT_FIELD_WEIGHT, "bf16", 2, w, offsetof(info_roles_weights, w), 64, NULL);

  printf("info: %s\n", failures ? "FAILED" : "mlp_small, info_roles and buckets_golden tables as expected");
  return failures != 0;
}

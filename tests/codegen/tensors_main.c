/* tensors_main.c -- libpgrt's safetensors reader and writer in host memory
 * (pgrt_tensor_read, pgrt_tensors_write; `make check-info`, no GPU).  Reads the
 * committed fixture tests/corpus/export/mlp_small/mlp_small.io.safetensors (written
 * by Python's safetensors through pgcc-export) and checks its bytes against the file
 * read by hand; writes tensors, reads them back; and checks the refusals. */
#include "pgrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                                      \
  do {                                                                                    \
    if (!(cond)) printf("tensors_main.c:%d: expected %s (%s)\n", __LINE__, #cond, pgrt_error()), failures++; \
  } while (0)

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len);
  *n = b ? fread(b, 1, (size_t)len, f) : 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  const char *io = "tests/corpus/export/mlp_small/mlp_small.io.safetensors";
  const char *tmp = argc > 1 ? argv[1] : "build/gen/tensors_test.safetensors";
  size_t n = 0;
  unsigned char *file = slurp(io, &n);
  EXPECT(file && n > 8);
  if (!file) return 1;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | file[i];

  /* the header says in0 is bytes [0, 1024) and out0 [1024, 2048) after it */
  pgrt_host_tensor in = {0}, out = {0};
  EXPECT(pgrt_tensor_read(io, "in0", &in) == PGRT_OK);
  EXPECT(pgrt_tensor_read(io, "out0", &out) == PGRT_OK);
  EXPECT(strcmp(in.dtype, "F32") == 0 && in.ndim == 2 && in.shape[0] == 1 && in.shape[1] == 256 && in.size == 1024);
  EXPECT(strcmp(out.name, "out0") == 0 && out.size == 1024);
  EXPECT(in.data && memcmp(in.data, file + 8 + hlen, 1024) == 0);
  EXPECT(out.data && memcmp(out.data, file + 8 + hlen + 1024, 1024) == 0);

  /* refusals: no such tensor, not a safetensors file, a header cut short */
  pgrt_host_tensor none = {0};
  EXPECT(pgrt_tensor_read(io, "in1", &none) == PGRT_ERR_ARGUMENT && !none.data);
  EXPECT(strstr(pgrt_error(), "no tensor named 'in1'"));
  EXPECT(pgrt_tensor_read("README.md", "in0", &none) == PGRT_ERR_ARGUMENT);
  EXPECT(pgrt_tensor_read("no/such/file", "in0", &none) == PGRT_ERR_ARGUMENT);
  FILE *f = fopen(tmp, "wb");
  EXPECT(f && fwrite(file, 1, 8 + hlen / 2, f) == 8 + hlen / 2);
  if (f) fclose(f);
  EXPECT(pgrt_tensor_read(tmp, "in0", &none) == PGRT_ERR_ARGUMENT);

  /* written and read back: names, dtypes, shapes, bytes; a scalar (0-d) and an
   * empty tensor too; "__metadata__" and escapes in a file written by hand */
  uint16_t halves[6] = {1, 2, 3, 4, 5, 0xffff};
  int64_t one = -7;
  pgrt_host_tensor w[4] = {
      {.name = "out0", .dtype = "F32", .ndim = 2, .shape = {1, 256}, .size = out.size, .data = out.data},
      {.name = "layers.0.h", .dtype = "BF16", .ndim = 2, .shape = {2, 3}, .size = sizeof halves, .data = halves},
      {.name = "step", .dtype = "I64", .ndim = 0, .size = 8, .data = &one},
      {.name = "empty", .dtype = "F32", .ndim = 1, .shape = {0}, .size = 0, .data = NULL},
  };
  EXPECT(pgrt_tensors_write(tmp, w, 4) == PGRT_OK);
  for (int i = 0; i < 4; i++) {
    pgrt_host_tensor r = {0};
    EXPECT(pgrt_tensor_read(tmp, w[i].name, &r) == PGRT_OK);
    EXPECT(strcmp(r.dtype, w[i].dtype) == 0 && r.ndim == w[i].ndim && r.size == w[i].size);
    for (int d = 0; d < r.ndim && r.ndim == w[i].ndim; d++) EXPECT(r.shape[d] == w[i].shape[d]);
    EXPECT(!r.size || memcmp(r.data, w[i].data, (size_t)r.size) == 0);
    pgrt_host_tensor_free(&r);
    EXPECT(r.data == NULL);
  }
  size_t wn = 0;
  unsigned char *written = slurp(tmp, &wn);
  EXPECT(written && wn > 8 && (written[0] | written[1] << 8) % 8 == 0); /* data 8-byte aligned */
  free(written);
  pgrt_host_tensor dup[2] = {w[0], w[0]};
  EXPECT(pgrt_tensors_write(tmp, dup, 2) == PGRT_ERR_ARGUMENT);
  pgrt_host_tensor bad = w[0];
  bad.name = "a\"b";
  EXPECT(pgrt_tensors_write(tmp, &bad, 1) == PGRT_ERR_ARGUMENT);
  bad = w[0], bad.dtype[0] = 0;
  EXPECT(pgrt_tensors_write(tmp, &bad, 1) == PGRT_ERR_ARGUMENT);
  bad = w[0], bad.shape[1] = 255; /* shape and size disagree: the reader refuses it */
  EXPECT(pgrt_tensors_write(tmp, &bad, 1) == PGRT_OK);
  EXPECT(pgrt_tensor_read(tmp, "out0", &none) == PGRT_ERR_ARGUMENT);

  static const char hand[] = "{\"__metadata__\": {\"format\": \"pt\", \"x\": [1, {\"y\": null}]},\n"
                             " \"caf\\u00e9 \\\"q\\\"\" : { \"data_offsets\" : [ 1 , 2 ], \"shape\": [], \"dtype\": \"U8\"}}";
  f = fopen(tmp, "wb");
  unsigned char len8[8] = {(unsigned char)(sizeof hand - 1)};
  EXPECT(f && fwrite(len8, 1, 8, f) == 8 && fwrite(hand, 1, sizeof hand - 1, f) == sizeof hand - 1 &&
         fwrite("abcd", 1, 4, f) == 4);
  if (f) fclose(f);
  pgrt_host_tensor r = {0};
  EXPECT(pgrt_tensor_read(tmp, "caf\xc3\xa9 \"q\"", &r) == PGRT_OK); /* shape []: one U8 */
  EXPECT(r.ndim == 0 && r.size == 1 && r.data && *(char *)r.data == 'b');
  pgrt_host_tensor_free(&r);
  remove(tmp);

  pgrt_host_tensor_free(&in), pgrt_host_tensor_free(&out);
  free(file);
  printf("tensors: %s\n", failures ? "FAILED" : "read, written, read back and refused as expected");
  return failures != 0;
}

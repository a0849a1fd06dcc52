/*
 * arch.c -- does each module's code run on the program's architecture?
 *
 * The program names its target (`arch sm_90;`, or --arch); a module holds machine
 * code (SASS) for some architectures and PTX for others:
 *   cubin   a CUDA ELF file: its architecture is in e_flags (bits 8-15 from ELF
 *           ABI version 8 on, the low byte before);
 *   PTX     text: `.target sm_XY`;
 *   fatbin  a container (magic 0xba55ed50) of cubins and PTX, each entry headed
 *           by its kind (1 PTX, 2 ELF) and architecture.
 * SASS for sm_XY runs on sm_XZ with Z >= Y (the same major version); PTX for sm_XY
 * is compiled by the driver for any later architecture.  CUDA C is compiled at init
 * for the device at hand, and library modules are the library's business.
 *
 * Reported, located at the module: a file that is not what its kind says, and
 * (when the program names its target) code that runs nowhere on the target.
 */
#include "pgcc.h"

#include <stdlib.h>
#include <string.h>

#define FATBIN_MAGIC 0xba55ed50u
#define EM_CUDA 190

typedef struct {
  unsigned arch; /* 90 for sm_90 */
  bool ptx;      /* PTX (compiled by the driver) rather than SASS */
} Code;

typedef PG_VEC(Code) Codes;

/* "sm_90", "sm_90a", "compute_90" -> 90; 0 if it is none of those. */
static unsigned parse_arch(const char *s) {
  const char *p = strncmp(s, "sm_", 3) == 0 ? s + 3 : strncmp(s, "compute_", 8) == 0 ? s + 8 : NULL;
  if (!p || *p < '1' || *p > '9') return 0;
  char *end;
  unsigned long v = strtoul(p, &end, 10);
  if (v < 10 || v > 999 || (*end && strcmp(end, "a") != 0 && strcmp(end, "f") != 0)) return 0;
  return (unsigned)v;
}

static bool runs_on(Code c, unsigned target) {
  if (c.ptx) return c.arch <= target;
  return c.arch / 10 == target / 10 && c.arch % 10 <= target % 10;
}

static uint32_t le32(const unsigned char *b) { return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t le64(const unsigned char *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

/* The architecture of a CUDA ELF image, 0 if it is not one. */
static unsigned elf_arch(const unsigned char *b, size_t n) {
  if (n < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 || (b[18] | b[19] << 8) != EM_CUDA) return 0;
  uint32_t flags = le32(b + 48);
  return b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

/* `.target sm_XY` in PTX text, 0 if there is none. */
static unsigned ptx_arch(const char *text) {
  for (const char *t = strstr(text, ".target"); t; t = strstr(t + 1, ".target")) {
    t += 7;
    while (*t == ' ' || *t == '\t') t++;
    char word[16] = {0};
    for (size_t i = 0; i < sizeof word - 1 && (t[i] == '_' || (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9')); i++)
      word[i] = t[i];
    if (parse_arch(word)) return parse_arch(word);
  }
  return 0;
}

/* The entries of a fatbin; false if the container is malformed. */
static bool fatbin_codes(PgArena *a, const unsigned char *b, size_t n, Codes *out) {
  if (n < 16 || le32(b) != FATBIN_MAGIC) return false;
  size_t at = 0;
  while (at + 16 <= n && le32(b + at) == FATBIN_MAGIC) { /* a fatbin may hold several containers */
    uint32_t hsize = b[at + 6] | b[at + 7] << 8;
    uint64_t size = le64(b + at + 8);
    if (hsize < 16 || size > n - at - hsize) return false;
    size_t e = at + hsize, end = at + hsize + (size_t)size;
    while (e + 32 <= end) {
      unsigned kind = b[e] | b[e + 1] << 8;
      uint32_t ehsize = le32(b + e + 4);
      uint64_t esize = le64(b + e + 8);
      if (ehsize < 32 || ehsize > end - e || esize > end - e - ehsize) return false;
      if (kind == 1 || kind == 2) pg_vec_push(a, *out, ((Code){le32(b + e + 28), kind == 1}));
      e += ehsize + (size_t)esize;
    }
    at = end;
    while (at < n && at % 8) at++; /* containers are 8-byte aligned */
  }
  return out->n > 0;
}

static unsigned char *load(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = len >= 0 ? malloc((size_t)len + 1) : NULL;
  *n = b ? fread(b, 1, (size_t)len, f) : 0;
  if (b) b[*n] = 0;
  fclose(f);
  return b;
}

static void check_module(PgProgram *p, PgDiag *d, const PgModule *m, unsigned target /* 0: none named */) {
  size_t n = 0;
  unsigned char *b = load(m->path, &n);
  if (!b) {
    pg_error(d, m->loc, "module '%s': '%s' cannot be read", m->name, m->file);
    return;
  }
  Codes codes = {0};
  const char *kind = pg_module_kind_names[m->kind];
  bool ok = true;
  switch (m->kind) {
  case PG_MOD_CUBIN: {
    unsigned arch = elf_arch(b, n);
    if (arch) pg_vec_push(p->arena, codes, ((Code){arch, false}));
    else ok = false;
    break;
  }
  case PG_MOD_PTX: {
    unsigned arch = strlen((char *)b) == n ? ptx_arch((char *)b) : 0;
    if (arch) pg_vec_push(p->arena, codes, ((Code){arch, true}));
    else ok = false;
    break;
  }
  case PG_MOD_FATBIN: ok = fatbin_codes(p->arena, b, n, &codes); break;
  default: break;
  }
  free(b);
  if (!ok) {
    pg_error(d, m->loc, "module '%s': '%s' is not a %s (%s)", m->name, m->file, kind,
             m->kind == PG_MOD_CUBIN  ? "a CUDA ELF file"
             : m->kind == PG_MOD_PTX ? "PTX text with a .target directive"
                                     : "a fatbinary container");
    return;
  }
  for (size_t i = 0; i < codes.n; i++)
    if (!target || runs_on(codes.v[i], target)) return;
  char held[256] = "";
  size_t used = 0;
  for (size_t i = 0; i < codes.n && used < sizeof held - 32; i++)
    used += (size_t)snprintf(held + used, sizeof held - used, "%s%s_%u (%s)", i ? ", " : "",
                             codes.v[i].ptx ? "compute" : "sm", codes.v[i].arch, codes.v[i].ptx ? "PTX" : "SASS");
  pg_error(d, m->loc, "module '%s': '%s' holds code for %s, none of which runs on %s", m->name, m->file, held,
           p->arch);
}

int pg_check_arch(PgProgram *p, PgDiag *d) {
  int errors = d->errors;
  unsigned target = p->arch ? parse_arch(p->arch) : 0;
  if (p->arch && (!target || strncmp(p->arch, "sm_", 3) != 0)) {
    pg_error(d, p->arch_loc, "unknown architecture '%s' (expected sm_XY, e.g. sm_90)", p->arch);
    return d->errors - errors;
  }
  for (size_t i = 0; i < p->modules.n && !pg_too_many_errors(d); i++) {
    const PgModule *m = p->modules.v[i];
    if (m->path && (m->kind == PG_MOD_CUBIN || m->kind == PG_MOD_PTX || m->kind == PG_MOD_FATBIN))
      check_module(p, d, m, target);
  }
  return d->errors - errors;
}

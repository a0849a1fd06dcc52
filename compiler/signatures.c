/*
 * signatures.c -- the parameter layouts a .graph gives for kernels in CUDA C modules
 * must be the kernels' own: each module is read with libclang and every kernel's
 * declared parameters (size, alignment, kind) are laid out as the CUDA ABI does
 * (each at the next multiple of its alignment) and compared with the .graph, so a
 * wrong layout is a located error before anything runs.
 *
 * libclang is optional at build time (PGCC_HAVE_LIBCLANG: its header was found) and
 * is loaded with dlopen only when a CUDA C module is to be checked, so that the
 * LLVM libraries cost nothing to the runs that do not need them.  Without it the
 * check is skipped with one warning.  CUDA's own headers are not needed: __global__ is
 * defined as clang's attribute and function bodies are skipped; clang 14 parses for
 * sm_80, which does not change parameter layouts.
 */
#include "pgcc.h"

#include <inttypes.h>
#include <string.h>

#ifdef PGCC_HAVE_LIBCLANG
#include <clang-c/Index.h>
#include <dlfcn.h>

#ifndef PGCC_LIBCLANG
#define PGCC_LIBCLANG "libclang.so.1"
#endif

/* The libclang functions used here, found with dlsym. */
#define CLANG_FUNCTIONS(X)                                                                            \
  X(clang_getCString) X(clang_disposeString) X(clang_getCursorKind) X(clang_visitChildren)               \
  X(clang_getCursorSpelling) X(clang_Cursor_getMangling) X(clang_getSpellingLocation)                     \
  X(clang_getCursorLocation) X(clang_Cursor_getNumArguments) X(clang_Cursor_getArgument)                 \
  X(clang_getCanonicalType) X(clang_getCursorType) X(clang_getTypeSpelling) X(clang_Type_getSizeOf)      \
  X(clang_Type_getAlignOf) X(clang_createIndex) X(clang_parseTranslationUnit) X(clang_disposeIndex)      \
  X(clang_getTranslationUnitCursor) X(clang_disposeTranslationUnit)

static struct {
#define X(f) __typeof__(&f) f;
  CLANG_FUNCTIONS(X)
#undef X
} lc;

/* Loads libclang once; false if it cannot be had. */
static bool load_libclang(void) {
  static int state; /* 0: not tried, 1: loaded, -1: failed */
  if (state) return state > 0;
  void *h = dlopen(PGCC_LIBCLANG, RTLD_NOW | RTLD_LOCAL);
  state = -1;
  if (!h) return false;
#define X(f) if (!(*(void **)&lc.f = dlsym(h, #f))) return false;
  CLANG_FUNCTIONS(X)
#undef X
  state = 1;
  return true;
}

typedef struct {
  long long size, align;
  enum CXTypeKind kind;
  char *spelling; /* "const float *x" */
} Param;

typedef struct {
  char *name, *mangled;
  int line;
  PG_VEC(Param) params;
} Decl;

typedef struct {
  PgArena *a;
  PG_VEC(Decl) decls;
} Scan;

static char *take(PgArena *a, CXString s) {
  char *r = pg_arena_strdup(a, lc.clang_getCString(s) ? lc.clang_getCString(s) : "");
  lc.clang_disposeString(s);
  return r;
}

static enum CXChildVisitResult find_global(CXCursor c, CXCursor parent, CXClientData found) {
  (void)parent;
  if (lc.clang_getCursorKind(c) == CXCursor_CUDAGlobalAttr) {
    *(bool *)found = true;
    return CXChildVisit_Break;
  }
  return CXChildVisit_Continue;
}

static enum CXChildVisitResult collect(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  Scan *s = data;
  enum CXCursorKind k = lc.clang_getCursorKind(c);
  if (k == CXCursor_LinkageSpec || k == CXCursor_Namespace || k == CXCursor_UnexposedDecl)
    return CXChildVisit_Recurse; /* extern "C" (clang 14 shows it as an unexposed declaration), namespaces */
  if (k != CXCursor_FunctionDecl) return CXChildVisit_Continue;
  bool global = false;
  lc.clang_visitChildren(c, find_global, &global);
  if (!global) return CXChildVisit_Continue;
  Decl d = {take(s->a, lc.clang_getCursorSpelling(c)), take(s->a, lc.clang_Cursor_getMangling(c)), 0, {0}};
  unsigned line;
  lc.clang_getSpellingLocation(lc.clang_getCursorLocation(c), NULL, &line, NULL, NULL);
  d.line = (int)line;
  for (int i = 0; i < lc.clang_Cursor_getNumArguments(c); i++) {
    CXCursor arg = lc.clang_Cursor_getArgument(c, i);
    CXType t = lc.clang_getCanonicalType(lc.clang_getCursorType(arg));
    char *type = take(s->a, lc.clang_getTypeSpelling(lc.clang_getCursorType(arg)));
    char *name = take(s->a, lc.clang_getCursorSpelling(arg));
    Param pa = {lc.clang_Type_getSizeOf(t), lc.clang_Type_getAlignOf(t), t.kind, pg_arena_printf(s->a, "%s %s", type, name)};
    pg_vec_push(s->a, d.params, pa);
  }
  pg_vec_push(s->a, s->decls, d);
  return CXChildVisit_Continue;
}

/* Does a .graph type fit a C type kind? */
static bool kind_fits(PgType t, enum CXTypeKind k) {
  switch (t) {
  case PG_T_PTR: return k == CXType_Pointer;
  case PG_T_F32: return k == CXType_Float;
  case PG_T_F64: return k == CXType_Double;
  case PG_T_F16: case PG_T_BF16: return k == CXType_Half || k == CXType_Float16 || k == CXType_Record || k == CXType_UShort;
  case PG_T_BYTES: return true; /* a struct, an array, anything passed by value */
  default: /* integers and bool */
    return k == CXType_Bool || k == CXType_Char_U || k == CXType_UChar || k == CXType_Char_S || k == CXType_SChar ||
           k == CXType_UShort || k == CXType_Short || k == CXType_UInt || k == CXType_Int || k == CXType_ULong ||
           k == CXType_Long || k == CXType_ULongLong || k == CXType_LongLong || k == CXType_Enum;
  }
}

static void check_kernel(PgDiag *d, const PgModule *m, const PgKernel *k, const Decl *decl) {
  if (decl->params.n != k->params.n) {
    pg_error(d, k->loc, "kernel '%s' has %zu parameters here, but %s:%d declares %zu", k->name, k->params.n, m->file,
             decl->line, decl->params.n);
    return;
  }
  long long end = 0;
  for (size_t i = 0; i < k->params.n; i++) {
    const Param *c = &decl->params.v[i];
    const PgParam *g = &k->params.v[i];
    if (c->size <= 0 || c->align <= 0) {
      pg_error(d, g->loc, "parameter %zu of kernel '%s': libclang cannot size '%s' (%s:%d)", i, k->name, c->spelling,
               m->file, decl->line);
      return;
    }
    long long at = (end + c->align - 1) / c->align * c->align;
    end = at + c->size;
    if (at != g->offset || c->size != g->size)
      pg_error(d, g->loc, "parameter %zu of kernel '%s' is %" PRIu32 " bytes at offset %" PRIu32 " here, but '%s' (%s:%d) "
                          "is %lld bytes at offset %lld",
               i, k->name, g->size, g->offset, c->spelling, m->file, decl->line, c->size, at);
    else if (!kind_fits(g->type, c->kind))
      pg_error(d, g->loc, "parameter %zu of kernel '%s' is %s here, but '%s' (%s:%d)", i, k->name,
               pg_type_names[g->type], c->spelling, m->file, decl->line);
  }
}

static void warn_unchecked(const PgProgram *p, PgDiag *d, const char *why) {
  static bool warned;
  for (size_t k = 0; k < p->kernels.n && !warned; k++)
    if (p->kernels.v[k]->module && p->kernels.v[k]->module->kind == PG_MOD_CUDA && p->kernels.v[k]->has_layout) {
      pg_warning(d, p->kernels.v[k]->loc, "%s: CUDA C kernel layouts are not checked against their source", why);
      warned = true;
    }
}

int pg_check_signatures(const PgProgram *p, PgDiag *d) {
  int errors = d->errors;
  bool any = false;
  for (size_t k = 0; k < p->kernels.n; k++)
    any |= p->kernels.v[k]->module && p->kernels.v[k]->module->kind == PG_MOD_CUDA && p->kernels.v[k]->has_layout;
  if (!any) return 0;
  if (!load_libclang()) {
    warn_unchecked(p, d, "libclang (" PGCC_LIBCLANG ") cannot be loaded");
    return 0;
  }
  for (size_t mi = 0; mi < p->modules.n; mi++) {
    const PgModule *m = p->modules.v[mi];
    if (m->kind != PG_MOD_CUDA || !m->path) continue;
    bool wanted = false;
    for (size_t k = 0; k < p->kernels.n; k++) wanted |= p->kernels.v[k]->module == m && p->kernels.v[k]->has_layout;
    if (!wanted) continue;
    static const char *const args[] = {"-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
                                       "--cuda-gpu-arch=sm_80", "-std=c++17", "-D__global__=__attribute__((global))",
                                       "-Wno-unknown-cuda-version"};
    CXIndex index = lc.clang_createIndex(0, 0);
    CXTranslationUnit tu = lc.clang_parseTranslationUnit(index, m->path, args, sizeof args / sizeof args[0], NULL, 0,
                                                      CXTranslationUnit_SkipFunctionBodies);
    if (!tu) {
      pg_error(d, m->loc, "module '%s': libclang cannot read '%s'", m->name, m->file);
      lc.clang_disposeIndex(index);
      continue;
    }
    PgArena *a = pg_arena_new();
    Scan s = {a, {0}};
    lc.clang_visitChildren(lc.clang_getTranslationUnitCursor(tu), collect, &s);
    for (size_t k = 0; k < p->kernels.n; k++) {
      const PgKernel *kn = p->kernels.v[k];
      if (kn->module != m || !kn->has_layout) continue;
      const Decl *found = NULL;
      for (size_t i = 0; i < s.decls.n && !found; i++)
        if (strcmp(s.decls.v[i].mangled, kn->symbol) == 0 || strcmp(s.decls.v[i].name, kn->symbol) == 0)
          found = &s.decls.v[i];
      if (!found)
        pg_error(d, kn->loc, "kernel '%s': '%s' declares no __global__ function '%s'", kn->name, m->file, kn->symbol);
      else
        check_kernel(d, m, kn, found);
    }
    pg_arena_free(a);
    lc.clang_disposeTranslationUnit(tu);
    lc.clang_disposeIndex(index);
  }
  return d->errors - errors;
}

#else /* without libclang */

int pg_check_signatures(const PgProgram *p, PgDiag *d) {
  static bool warned;
  for (size_t k = 0; k < p->kernels.n && !warned; k++)
    if (p->kernels.v[k]->module && p->kernels.v[k]->module->kind == PG_MOD_CUDA && p->kernels.v[k]->has_layout) {
      pg_warning(d, p->kernels.v[k]->loc,
                 "this pgcc was built without libclang: CUDA C kernel layouts are not checked against their source");
      warned = true;
    }
  return 0;
}

#endif

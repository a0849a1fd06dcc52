/* graph_read.h -- the word pool shared by grammar/graph.y and graph_read.c. */
#ifndef PGCC_GRAPH_READ_H
#define PGCC_GRAPH_READ_H

#include "parse.h"

typedef enum { GF_NAME, GF_NUMBER, GF_STRING, GF_REF, GF_LIST, GF_RANGE, GF_PHRASE } GfWordKind;

/* One word of a statement.  Words are linked through `next` (an index into the
 * pool, -1 at the end); a list's items start at `first`, and so do the words of a
 * phrase (a list item of several words, `lo32 56`). */
typedef struct {
  GfWordKind kind;
  PgStr text; /* NAME, NUMBER, STRING (with its quotes), REF: the name; RANGE: its start */
  PgStr num;  /* REF: the offset; RANGE: its length (`start:length`) */
  PgLoc loc;
  int next, first;
} GfWord;

typedef struct {
  int head, tail;
} GfList;

int gf_word(GfCtx *c, GfWordKind kind, PgStr text, PgLoc loc);
int gf_ref(GfCtx *c, PgStr name, PgStr num, PgLoc loc);
int gf_range(GfCtx *c, PgStr start, PgStr len, PgLoc loc);
int gf_listword(GfCtx *c, GfList items, PgLoc loc);
int gf_phrase(GfCtx *c, GfList words);
GfList gf_list(GfCtx *c, int word);
GfList gf_append(GfCtx *c, GfList l, int word);
void gf_words_reset(GfCtx *c);
void gf_stmt(GfCtx *c, GfList words, bool opens_block);
void gf_block_end(GfCtx *c);
void gf_edge(GfCtx *c, PgStr from, PgLoc from_loc, PgStr to, PgLoc to_loc, const PgStr *kind, PgLoc kind_loc);
PgDiag *gf_diag(GfCtx *c);

#endif

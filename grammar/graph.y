/*
 * graph.y -- the grammar of pgcc's .graph format: statements made of words,
 * ended by ';' or opening a block, and dependency edges.
 *
 *   file   := stmt*
 *   stmt   := word+ ';'  |  word+ '{' stmt* '}'  |  NAME '->' NAME NAME? ';'
 *             (the last NAME an edge's kind, format version 3: `k1 -> k2 programmatic;`)
 *   word   := NAME | NAME '+' NUMBER | NUMBER | NUMBER ':' NUMBER | STRING
 *           | '[' (item (',' item)*)? ']'
 *   item   := word+                  (two or more words: a phrase, `lo32 56`)
 *
 * There are no reserved words: what a statement means (`buffer x size 4096 ...;`)
 * is decided by graph_read.c as each statement is reduced, so any name can be used
 * anywhere and errors name the statement they are about.  Words live in a pool
 * that is reused for every statement (GfWords), which keeps parsing linear in
 * time and constant in extra memory.
 */
%define api.pure full
%define api.prefix {gf}
%define api.location.type {PgLoc}
%define parse.error detailed
%locations
%expect 0
%param {void *scanner}
%parse-param {GfCtx *ctx}

%code requires {
#include "parse.h"
#include "graph_read.h"
}

%union {
  PgStr str;
  int word;      /* index into the statement's word pool */
  GfList list;
}

%code provides {
int gflex(GFSTYPE *yylval, PgLoc *yylloc, void *scanner);
int gf_parse(GfCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag);
}

%code {
#include "graph.lex.h"

#define YYLLOC_DEFAULT(Cur, Rhs, N) ((Cur) = (N) ? YYRHSLOC(Rhs, 1) : YYRHSLOC(Rhs, 0))

static void gferror(PgLoc *loc, void *scanner, GfCtx *ctx, const char *msg) {
  if (gfget_extra(scanner)->lex_error) return;
  if (strcmp(msg, "memory exhausted") == 0) /* bison's stack: YYMAXDEPTH */
    msg = "nested too deeply for the parser (more than 10000 levels)";
  pg_error(gf_diag(ctx), *loc, "%s", msg);
}
}

%token <str> NAME "name" NUMBER "number" STRING "string" ARROW "'->'"
%type <word> word
%type <list> words items
%type <word> item

%%

file
  : stmts
  ;

stmts
  : %empty
  | stmts stmt
  ;

stmt
  : words ';'                   { gf_stmt(ctx, $1, false); }
  | words '{'                   { gf_stmt(ctx, $1, true); }
      stmts '}'                 { gf_block_end(ctx); }
  | NAME ARROW NAME ';'         { gf_edge(ctx, $1, @1, $3, @3, NULL, @3); }
  | NAME ARROW NAME NAME ';'    { gf_edge(ctx, $1, @1, $3, @3, &$4, @4); }
  | error ';'                   {
                                  yyerrok;
                                  gf_words_reset(ctx);
                                  if (pg_too_many_errors(gf_diag(ctx))) YYABORT;
                                }
  ;

words
  : word                        { $$ = gf_list(ctx, $1); }
  | words word                  { $$ = gf_append(ctx, $1, $2); }
  ;

word
  : NAME                        { $$ = gf_word(ctx, GF_NAME, $1, @1); }
  | NAME '+' NUMBER             { $$ = gf_ref(ctx, $1, $3, @1); }
  | NUMBER                      { $$ = gf_word(ctx, GF_NUMBER, $1, @1); }
  | NUMBER ':' NUMBER           { $$ = gf_range(ctx, $1, $3, @1); }
  | STRING                      { $$ = gf_word(ctx, GF_STRING, $1, @1); }
  | '[' ']'                     { $$ = gf_listword(ctx, (GfList){-1, -1}, @1); }
  | '[' items ']'               { $$ = gf_listword(ctx, $2, @1); }
  ;

items
  : item                        { $$ = gf_list(ctx, $1); }
  | items ',' item              { $$ = gf_append(ctx, $1, $3); }
  ;

item
  : words                       { $$ = gf_phrase(ctx, $1); }
  ;

%%

int gf_parse(GfCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag) {
  PgLexState x;
  pg_lex_init(&x, arena, diag, src);
  yyscan_t scanner;
  if (gflex_init_extra(&x, &scanner) != 0) PG_BUG("cannot start the .graph scanner");
  int r = gfparse(scanner, ctx);
  gflex_destroy(scanner);
  return r;
}

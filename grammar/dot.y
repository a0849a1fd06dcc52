/*
 * dot.y -- the DOT grammar: a pure parser with locations and a context struct,
 * no globals.  It recognises the structure (graphs, subgraphs, node, edge and
 * attribute statements) and hands each statement to dot_read.c, which gives it
 * meaning.  Errors recover at statement boundaries (';').
 */
%define api.pure full
%define api.prefix {dot}
%define api.value.type {PgStr}
%define api.location.type {PgLoc}
%define parse.error detailed
%locations
%expect 0
%param {void *scanner}
%parse-param {DotCtx *ctx}

%code requires {
#include "parse.h"
}

%code provides {
int dotlex(PgStr *yylval, PgLoc *yylloc, void *scanner);
int dot_parse(DotCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag);
}

%code {
#include "dot.lex.h"

#define YYLLOC_DEFAULT(Cur, Rhs, N) ((Cur) = (N) ? YYRHSLOC(Rhs, 1) : YYRHSLOC(Rhs, 0))

static void doterror(PgLoc *loc, void *scanner, DotCtx *ctx, const char *msg) {
  PgLexState *x = dotget_extra(scanner);
  if (x->lex_error) return;
  if (strcmp(msg, "memory exhausted") == 0) /* bison's stack: YYMAXDEPTH */
    msg = "nested too deeply for the parser (more than 10000 levels)";
  pg_error(dot_diag(ctx), *loc, "%s", msg);
}
}

%token STRICT "strict" DIGRAPH "digraph" GRAPH "graph" SUBGRAPH "subgraph"
%token NODE "node" EDGE "edge" ARROW "'->'" ID "identifier" STRING "string"

%%

file
  : header '{' stmts '}'
  ;

header
  : strict_opt graph_kw
  | strict_opt graph_kw id
  ;

strict_opt
  : %empty
  | STRICT
  ;

graph_kw
  : DIGRAPH
  | GRAPH
  ;

stmts
  : %empty
  | stmts stmt
  ;

stmt
  : node_stmt semi_opt
  | edge_stmt semi_opt
  | attr_stmt semi_opt
  | ID '=' ID semi_opt          { dot_set(ctx, $1, $3); }
  | ID '=' STRING semi_opt      { dot_set(ctx, $1, $3); }
  | subgraph semi_opt
  | error ';'                   {
                                  yyerrok;
                                  if (pg_too_many_errors(dot_diag(ctx))) YYABORT;
                                }
  ;

semi_opt
  : %empty
  | ';'
  ;

node_stmt
  : id attr_lists_opt           { dot_node_stmt(ctx, $1, @1); }
  ;

edge_stmt
  : edge_chain attr_lists_opt   { dot_edge_stmt(ctx); }
  ;

edge_chain
  : id ARROW id                 { dot_edge_point(ctx, $1, @1); dot_edge_point(ctx, $3, @3); }
  | edge_chain ARROW id         { dot_edge_point(ctx, $3, @3); }
  ;

attr_stmt
  : GRAPH attr_lists            { dot_attr_stmt(ctx); }
  | NODE attr_lists             { dot_attr_stmt(ctx); }
  | EDGE attr_lists             { dot_attr_stmt(ctx); }
  ;

attr_lists_opt
  : %empty
  | attr_lists
  ;

attr_lists
  : '[' attrs ']'
  | attr_lists '[' attrs ']'
  ;

attrs
  : %empty
  | attrs attr sep_opt
  ;

attr
  : ID '=' ID                   { dot_attr(ctx, $1, $3, @1); }
  | ID '=' STRING               { dot_attr(ctx, $1, $3, @1); }
  | STRING '=' ID              { dot_attr(ctx, $1, $3, @1); }
  | STRING '=' STRING          { dot_attr(ctx, $1, $3, @1); }
  | ID                          { /* a bare attribute: an empty value, just after it in the source */
                                  dot_attr(ctx, $1, (PgStr){$1.s + $1.len, 0}, @1); }
  ;

sep_opt
  : %empty
  | ';'
  | ','
  ;

subgraph
  : SUBGRAPH id '{'             { dot_subgraph_begin(ctx, &$2, @1); }
      stmts '}'                 { dot_subgraph_end(ctx); }
  | SUBGRAPH '{'                { dot_subgraph_begin(ctx, NULL, @1); }
      stmts '}'                 { dot_subgraph_end(ctx); }
  ;

id
  : ID
  | STRING
  ;

%%

int dot_parse(DotCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag) {
  PgLexState x;
  pg_lex_init(&x, arena, diag, src);
  yyscan_t scanner;
  if (dotlex_init_extra(&x, &scanner) != 0) PG_BUG("cannot start the DOT scanner");
  int r = dotparse(scanner, ctx);
  dotlex_destroy(scanner);
  return r;
}

/* A Bison parser, made by GNU Bison 3.8.2.  */

/* Bison interface for Yacc-like parsers in C

   Copyright (C) 1984, 1989-1990, 2000-2015, 2018-2021 Free Software Foundation,
   Inc.

   This program is free software: you can redistribute it and/or modify
   it under the terms of the GNU General Public License as published by
   the Free Software Foundation, either version 3 of the License, or
   (at your option) any later version.

   This program is distributed in the hope that it will be useful,
   but WITHOUT ANY WARRANTY; without even the implied warranty of
   MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
   GNU General Public License for more details.

   You should have received a copy of the GNU General Public License
   along with this program.  If not, see <https://www.gnu.org/licenses/>.  */

/* As a special exception, you may create a larger work that contains
   part or all of the Bison parser skeleton and distribute that work
   under terms of your choice, so long as that work isn't itself a
   parser generator using the skeleton or a modified version thereof
   as a parser skeleton.  Alternatively, if you modify or redistribute
   the parser skeleton itself, you may (at your option) remove this
   special exception, which will cause the skeleton and the resulting
   Bison output files to be licensed under the GNU General Public
   License without this special exception.

   This special exception was added by the Free Software Foundation in
   version 2.2 of Bison.  */

/* DO NOT RELY ON FEATURES THAT ARE NOT DOCUMENTED in the manual,
   especially those whose name start with YY_ or yy_.  They are
   private implementation details that can be changed or removed.  */

#ifndef YY_DOT_GRAMMAR_GEN_DOT_TAB_H_INCLUDED
# define YY_DOT_GRAMMAR_GEN_DOT_TAB_H_INCLUDED
/* Debug traces.  */
#ifndef DOTDEBUG
# if defined YYDEBUG
#if YYDEBUG
#   define DOTDEBUG 1
#  else
#   define DOTDEBUG 0
#  endif
# else /* ! defined YYDEBUG */
#  define DOTDEBUG 0
# endif /* ! defined YYDEBUG */
#endif  /* ! defined DOTDEBUG */
#if DOTDEBUG
extern int dotdebug;
#endif
/* "%code requires" blocks.  */
#line 17 "grammar/dot.y"

#include "parse.h"

#line 61 "grammar/gen/dot.tab.h"

/* Token kinds.  */
#ifndef DOTTOKENTYPE
# define DOTTOKENTYPE
  enum dottokentype
  {
    DOTEMPTY = -2,
    DOTEOF = 0,                    /* "end of file"  */
    DOTerror = 256,                /* error  */
    DOTUNDEF = 257,                /* "invalid token"  */
    STRICT = 258,                  /* "strict"  */
    DIGRAPH = 259,                 /* "digraph"  */
    GRAPH = 260,                   /* "graph"  */
    SUBGRAPH = 261,                /* "subgraph"  */
    NODE = 262,                    /* "node"  */
    EDGE = 263,                    /* "edge"  */
    ARROW = 264,                   /* "'->'"  */
    ID = 265,                      /* "identifier"  */
    STRING = 266                   /* "string"  */
  };
  typedef enum dottokentype dottoken_kind_t;
#endif

/* Value type.  */
#if ! defined DOTSTYPE && ! defined DOTSTYPE_IS_DECLARED
typedef PgStr DOTSTYPE;
# define DOTSTYPE_IS_TRIVIAL 1
# define DOTSTYPE_IS_DECLARED 1
#endif

/* Location type.  */
typedef PgLoc DOTLTYPE;




int dotparse (void *scanner, DotCtx *ctx);

/* "%code provides" blocks.  */
#line 21 "grammar/dot.y"

int dotlex(PgStr *yylval, PgLoc *yylloc, void *scanner);
int dot_parse(DotCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag);

#line 106 "grammar/gen/dot.tab.h"

#endif /* !YY_DOT_GRAMMAR_GEN_DOT_TAB_H_INCLUDED  */

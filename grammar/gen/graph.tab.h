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

#ifndef YY_GF_GRAMMAR_GEN_GRAPH_TAB_H_INCLUDED
# define YY_GF_GRAMMAR_GEN_GRAPH_TAB_H_INCLUDED
/* Debug traces.  */
#ifndef GFDEBUG
# if defined YYDEBUG
#if YYDEBUG
#   define GFDEBUG 1
#  else
#   define GFDEBUG 0
#  endif
# else /* ! defined YYDEBUG */
#  define GFDEBUG 0
# endif /* ! defined YYDEBUG */
#endif  /* ! defined GFDEBUG */
#if GFDEBUG
extern int gfdebug;
#endif
/* "%code requires" blocks.  */
#line 27 "grammar/graph.y"

#include "parse.h"
#include "graph_read.h"

#line 62 "grammar/gen/graph.tab.h"

/* Token kinds.  */
#ifndef GFTOKENTYPE
# define GFTOKENTYPE
  enum gftokentype
  {
    GFEMPTY = -2,
    GFEOF = 0,                     /* "end of file"  */
    GFerror = 256,                 /* error  */
    GFUNDEF = 257,                 /* "invalid token"  */
    NAME = 258,                    /* "name"  */
    NUMBER = 259,                  /* "number"  */
    STRING = 260,                  /* "string"  */
    ARROW = 261                    /* "'->'"  */
  };
  typedef enum gftokentype gftoken_kind_t;
#endif

/* Value type.  */
#if ! defined GFSTYPE && ! defined GFSTYPE_IS_DECLARED
union GFSTYPE
{
#line 32 "grammar/graph.y"

  PgStr str;
  int word;      /* index into the statement's word pool */
  GfList list;

#line 91 "grammar/gen/graph.tab.h"

};
typedef union GFSTYPE GFSTYPE;
# define GFSTYPE_IS_TRIVIAL 1
# define GFSTYPE_IS_DECLARED 1
#endif

/* Location type.  */
typedef PgLoc GFLTYPE;




int gfparse (void *scanner, GfCtx *ctx);

/* "%code provides" blocks.  */
#line 38 "grammar/graph.y"

int gflex(GFSTYPE *yylval, PgLoc *yylloc, void *scanner);
int gf_parse(GfCtx *ctx, const PgSource *src, PgArena *arena, PgDiag *diag);

#line 113 "grammar/gen/graph.tab.h"

#endif /* !YY_GF_GRAMMAR_GEN_GRAPH_TAB_H_INCLUDED  */

/*
 * detect.c -- which dialect an input is written in, from its first word:
 * `pgcc` starts a .graph file; `digraph`, `graph` or `strict` a DOT file.
 * Comments and blank space before it are skipped (both dialects allow #
 * comments; DOT also // and C-style block comments).
 */
#include "pgcc.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

PgDialect pg_detect_dialect(const PgSource *src, PgLoc *where) {
  const char *s = src->text, *end = s + src->len;
  PgLoc loc = {src, 1, 1};
  for (;;) {
    const char *start = s;
    while (s < end && isspace((unsigned char)*s)) s++;
    if (s + 1 < end && s[0] == '/' && s[1] == '/') {
      while (s < end && *s != '\n') s++;
    } else if (s < end && *s == '#') {
      while (s < end && *s != '\n') s++;
    } else if (s + 1 < end && s[0] == '/' && s[1] == '*') {
      const char *close = strstr(s + 2, "*/");
      s = close ? close + 2 : end;
    }
    loc = pg_loc_advance(loc, start, (size_t)(s - start));
    if (s == start) break;
  }
  *where = loc;
  if (s == end) return PG_DIALECT_UNKNOWN;
  size_t n = 0;
  while (s + n < end && (isalnum((unsigned char)s[n]) || s[n] == '_')) n++;
  if (n == 4 && strncmp(s, "pgcc", 4) == 0) return PG_DIALECT_GRAPH;
  if ((n == 7 && strncasecmp(s, "digraph", 7) == 0) || (n == 5 && strncasecmp(s, "graph", 5) == 0) ||
      (n == 6 && strncasecmp(s, "strict", 6) == 0))
    return PG_DIALECT_DOT;
  return PG_DIALECT_UNKNOWN;
}

/* Nothing but blank space and comments. */
bool pg_source_is_blank(const PgSource *src) {
  PgLoc where;
  return pg_detect_dialect(src, &where) == PG_DIALECT_UNKNOWN &&
         pg_loc_advance((PgLoc){src, 1, 1}, src->text, src->len).line == where.line &&
         pg_loc_advance((PgLoc){src, 1, 1}, src->text, src->len).col == where.col;
}

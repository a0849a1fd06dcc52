/*
 * diag.c -- source files and diagnostics.
 *
 * Every user-facing message is "FILE:LINE:COL: error: message", then the source
 * line and a caret under the column, the way C compilers print them.  Errors are
 * counted; the caller decides what to do about them.  pg_bug() is for internal
 * invariants only: it aborts.
 */
#include "pgcc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Inputs past this size are refused before reading: a sanity limit, far above any
 * real capture (a 1M-node verbose dump is about 500 MB). */
#define MAX_INPUT_BYTES ((size_t)2 << 30)
#define MAP_INPUT_FROM (1 << 20) /* inputs this large are mapped, not read */

PgSource *pg_source_from_string(PgArena *a, const char *name, const char *text) {
  PgSource *s = pg_arena_alloc(a, sizeof *s);
  size_t n = strlen(text);
  char *buf = pg_arena_alloc(a, n + 2); /* two NULs: flex's yy_scan_buffer wants them */
  memcpy(buf, text, n);
  s->name = pg_arena_strdup(a, name);
  s->text = buf;
  s->len = n;
  return s;
}

/* Standard input stays open: it is the process's, not ours. */
static void close_input(FILE *f, bool from_stdin) {
  if (!from_stdin) fclose(f);
}

/* An input that cannot be read at all has no line to point at. */
static void file_error(PgDiag *d, const char *path, const char *what) {
  fprintf(d->out, "pgcc: error: cannot read '%s': %s\n", path, what);
  d->errors++;
}

PgSource *pg_source_load(PgArena *a, PgDiag *d, const char *path) {
  bool from_stdin = strcmp(path, "-") == 0;
  if (from_stdin) path = PG_STDIN_NAME;
  if (from_stdin) clearerr(stdin); /* read to its end before, in the same process */
  FILE *f = from_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    file_error(d, path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    file_error(d, path, strerror(errno));
    close_input(f, from_stdin);
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    file_error(d, path, "is a directory, not a graph description");
    close_input(f, from_stdin);
    return NULL;
  }
  if (S_ISREG(st.st_mode) && (size_t)st.st_size > MAX_INPUT_BYTES) {
    file_error(d, path, "input is larger than 2 GiB");
    close_input(f, from_stdin);
    return NULL;
  }
  /* A large regular file is mapped, not copied (pg_arena_map_file); anything else
   * is read to EOF (works for pipes too), growing as needed. */
  size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : 65536, len = 0;
  const char *mapped = S_ISREG(st.st_mode) && st.st_size >= MAP_INPUT_FROM && !from_stdin
                           ? pg_arena_map_file(a, fileno(f), (size_t)st.st_size)
                           : NULL;
  char *buf = mapped ? NULL : pg_arena_alloc(a, cap);
  if (mapped) len = (size_t)st.st_size;
  while (!mapped) {
    if (cap - len < 2) {
      size_t ncap = cap * 2;
      char *nb = pg_arena_alloc(a, ncap);
      memcpy(nb, buf, len);
      buf = nb, cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len - 2, f);
    len += got;
    if (got == 0) break;
    if (len > MAX_INPUT_BYTES) {
      file_error(d, path, "input is larger than 2 GiB");
      close_input(f, from_stdin);
      return NULL;
    }
  }
  if (ferror(f)) {
    file_error(d, path, strerror(errno ? errno : EIO));
    close_input(f, from_stdin);
    return NULL;
  }
  close_input(f, from_stdin);
  if (!mapped) buf[len] = buf[len + 1] = 0;
  const char *text = mapped ? mapped : buf;

  PgSource *s = pg_arena_alloc(a, sizeof *s);
  s->name = pg_arena_strdup(a, path);
  s->text = text;
  s->len = len;

  /* Text only: a NUL or a control byte other than whitespace means this is not a
   * graph description (a cubin, a core file, random bytes). */
  static const bool binary[256] = { /* NUL, control bytes but whitespace, DEL */
      [0] = 1, [1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1, [8] = 1, [14] = 1,
      [15] = 1, [16] = 1, [17] = 1, [18] = 1, [19] = 1, [20] = 1, [21] = 1, [22] = 1, [23] = 1,
      [24] = 1, [25] = 1, [26] = 1, [27] = 1, [28] = 1, [29] = 1, [30] = 1, [31] = 1, [127] = 1};
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull, lows = 0x7f * ones;
  for (size_t i = 0; i < len; i++) {
#ifdef __SSE2__
    /* Sixteen bytes at a time while none is binary (the usual case): a byte of 0x1f or
     * less but not \t..\r (byte - 9 at most 4, unsigned), or 0x7f. */
    for (; i + 16 <= len; i += 16) {
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(text + i)), x9 = _mm_sub_epi8(x, _mm_set1_epi8(9));
      __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
      __m128i space = _mm_cmpeq_epi8(_mm_min_epu8(x9, _mm_set1_epi8(4)), x9);
      __m128i bad = _mm_or_si128(_mm_andnot_si128(space, control), _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7f)));
      if (_mm_movemask_epi8(bad)) break;
    }
#endif
    /* Eight bytes at a time while none is binary (the usual case).  Per byte, exactly:
     * ((x & 0x7f) + (0x80 - n)) | x has its high bit set when the byte is n or more. */
#define AT_LEAST(x, n) ((((x) & lows) + (0x80 - (n)) * ones) | (x))
    for (uint64_t x; i + 8 <= len; i += 8) {
      memcpy(&x, text + i, 8);
      uint64_t control = ~AT_LEAST(x, 0x20), space = AT_LEAST(x, 9) & ~AT_LEAST(x, 14), del = ~AT_LEAST(x ^ lows, 1);
      if (((control & ~space) | del) & highs) break; /* a control byte but \t..\r, or 0x7f */
    }
#undef AT_LEAST
    if (i >= len) break;
    unsigned char c = (unsigned char)text[i];
    if (binary[c]) {
      PgLoc start = {s, 1, 1};
      pg_error(d, pg_loc_advance(start, text, i),
               "binary data (byte 0x%02x) in input; expected a DOT or .graph text file", c);
      return NULL;
    }
  }
  return s;
}

PgLoc pg_loc_advance(PgLoc loc, const char *text, size_t offset) {
  for (size_t i = 0; i < offset; i++) {
    if (text[i] == '\n') {
      loc.line++;
      loc.col = 1;
    } else {
      loc.col++;
    }
  }
  return loc;
}

/* Prints the source line of `loc` and a caret under its column. */
static void show_line(FILE *out, PgLoc loc) {
  const PgSource *s = loc.src;
  if (!s || loc.line < 1) return;
  const char *p = s->text, *end = s->text + s->len;
  for (int line = 1; line < loc.line && p < end; p++)
    if (*p == '\n') line++;
  if (p >= end && loc.line > 1) return;
  const char *e = memchr(p, '\n', (size_t)(end - p));
  if (!e) e = end;
  int len = (int)(e - p);
  if (len > 0 && p[len - 1] == '\r') len--;
  /* Very long lines (mangled names, one-line files): show a window around the column. */
  int from = 0, width = 160;
  if (len > width && loc.col > width / 2) from = loc.col - 1 - width / 2;
  int shown = len - from < width ? len - from : width;
  for (int i = from; i < from + shown; i++) { /* never echo binary data to a terminal */
    unsigned char c = (unsigned char)p[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return;
  }
  fprintf(out, " %s%.*s%s\n ", from ? "..." : "", shown, p + from, from + shown < len ? "..." : "");
  if (from) fputs("   ", out);
  for (int i = from; i < loc.col - 1 && i < len; i++) fputc(p[i] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

static void report(PgDiag *d, const char *sev, PgLoc loc, const char *fmt, va_list ap) {
  if (loc.src)
    fprintf(d->out, "%s:%d:%d: %s: ", loc.src->name, loc.line, loc.col, sev);
  else
    fprintf(d->out, "pgcc: %s: ", sev);
  vfprintf(d->out, fmt, ap);
  fputc('\n', d->out);
  show_line(d->out, loc);
}

bool pg_too_many_errors(const PgDiag *d) { return d->max_errors > 0 && d->errors >= d->max_errors; }

void pg_error(PgDiag *d, PgLoc loc, const char *fmt, ...) {
  if (pg_too_many_errors(d)) {
    d->errors++;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  report(d, "error", loc, fmt, ap);
  va_end(ap);
  if (++d->errors == d->max_errors && d->max_errors > 0)
    fprintf(d->out, "pgcc: too many errors (%d), stopping\n", d->max_errors);
}

void pg_warning(PgDiag *d, PgLoc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(d, "warning", loc, fmt, ap);
  va_end(ap);
  d->warnings++;
}

void pg_note(PgDiag *d, PgLoc loc, const char *fmt, ...) {
  if (pg_too_many_errors(d)) return;
  va_list ap;
  va_start(ap, fmt);
  report(d, "note", loc, fmt, ap);
  va_end(ap);
}

void pg_bug(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pgcc: internal error at %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

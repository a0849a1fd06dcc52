/*
 * driver.c -- the command line and the pipeline, as a flat list:
 *
 *   load -> detect dialect -> frontend -> verify -> signatures, arch -> stage
 *   collectives -> classify -> schedule -> verify -> partition -> verify regions -> cost ->
 *   memory plan -> verify -> widen -> verify -> report or emit
 *
 * pgcc_main() returns the exit status; it never calls exit(), so tests run it
 * in-process with their own streams.  Outputs are written to a temporary file
 * beside the destination and renamed into place only when complete.
 */
#include "pgcc.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

typedef enum { EMIT_NONE, EMIT_C, EMIT_GRAPH, EMIT_DOT } Emit;

typedef enum { REPORT_NONE, REPORT_TEXT, REPORT_JSON } Report;

typedef struct {
  const char *input;
  const char *output; /* NULL or "-": standard output */
  Emit emit;
  Report report;
  bool stats;
  int max_errors;
  const char *profile; /* NULL: the built-in H200 profile */
  double calls;
  bool time_passes;
  bool device_update; /* --device-update: the cost model may choose device-side patching */
  bool keep_order;    /* --keep-order: no schedule pass */
  bool priorities;    /* --priorities: the critical path's kernels launched first (priority.c) */
  const char *name; /* --name: the generated API's prefix */
  const char *modules[64]; /* --module: code to find kernels in by name */
  int nmodules;
  const char *arch; /* --arch: the target, for input that names none */
} Options;

/* --time-passes: seconds since the last mark, printed per pass, and the arena's size */
typedef struct {
  FILE *err;
  bool on;
  struct timespec last;
  const PgArena *arena;
} Timer;

static void mark(Timer *t, const char *pass) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (t->on && pass) {
    struct rusage ru; /* the peak so far: a pass's own tables come and go between two marks */
    getrusage(RUSAGE_SELF, &ru);
    fprintf(t->err, "pgcc: time: %-9s %8.3f s  (arena %zu MiB, peak %ld MiB)\n", pass,
            (double)(now.tv_sec - t->last.tv_sec) + (double)(now.tv_nsec - t->last.tv_nsec) * 1e-9,
            pg_arena_used(t->arena) >> 20, ru.ru_maxrss >> 10);
  }
  t->last = now;
}

static const char usage_text[] =
    "usage: pgcc [options] INPUT\n"
    "\n"
    "Reads a captured GPU graph (a .graph file, or DOT written by cudaGraphDebugDotPrint)\n"
    "and writes what --emit asks for.  INPUT '-' is standard input.\n"
    "\n"
    "options:\n"
    "  -o FILE            write the output to FILE ('-', the default: standard output)\n"
    "  --emit=KIND        c: C launch code for libpgrt (the default; with -o X.c\n"
    "                     also X.h, the two written together or not at all; to\n"
    "                     standard output the .c alone, which declares its API);\n"
    "                     graph: pgcc's .graph format; dot: DOT for Graphviz\n"
    "  --name=NAME        prefix of the generated API (default: the input's name)\n"
    "  --module=FILE      a .cubin, .fatbin, .ptx or .cu file whose kernels the C finds by\n"
    "                     name at init (for kernels the input names no module for)\n"
    "  --arch=sm_XY       the target architecture, for input that names none (a DOT\n"
    "                     dump); modules must hold code that runs on it\n"
    "  --report[=FORMAT]  the cost report: text (default) or json\n"
    "  --profile=FILE     machine profile for the cost model (default: built-in H200)\n"
    "  --calls=N          calls to spread graph instantiation over (default 1000)\n"
    "  --device-update    let the cost model patch regions on the device where that\n"
    "                     saves host time (it costs GPU time on every replay)\n"
    "  --keep-order       run the root graph's nodes in the order captured (by default\n"
    "                     a node that frees memory and makes none runs as soon as it can,\n"
    "                     and a chain whose kernels carry access sets is rebuilt from its\n"
    "                     true dependencies where the cost model predicts a gain)\n"
    "  --priorities       in a root graph so rebuilt, launch the critical path's kernels\n"
    "                     first (a CUDA node priority; not measured on a GPU yet)\n"
    "  --stats            print 'nodes=N edges=E graphs=G kernels=K ' (and 'dims=D ')\n"
    "  --max-errors=N     stop after N errors (default 20; 0: no limit)\n"
    "  --time-passes      print the time each pass takes\n"
    "  -h, --help         show this help\n"
    "  --version          show the version\n"
    "\n"
    "The input dialect is detected from its content.  Exit status: 0 success,\n"
    "1 errors in the input, 2 usage errors.\n";

static int usage_error(FILE *err, const char *fmt, const char *arg) {
  fputs("pgcc: error: ", err);
  fprintf(err, fmt, arg);
  fputs("\nTry 'pgcc --help' for more information.\n", err);
  return EXIT_USAGE;
}

/* Returns -1 when the options are good, else the exit status. */
static int parse_options(int argc, char **argv, Options *o, FILE *out, FILE *err) {
  static const struct option longs[] = {
      {"output", required_argument, 0, 'o'}, {"emit", required_argument, 0, 'e'},
      {"stats", no_argument, 0, 's'},        {"max-errors", required_argument, 0, 'm'},
      {"report", optional_argument, 0, 'r'}, {"profile", required_argument, 0, 'p'},
      {"calls", required_argument, 0, 'c'},  {"time-passes", no_argument, 0, 't'},
      {"name", required_argument, 0, 'n'},   {"module", required_argument, 0, 'M'},
      {"help", no_argument, 0, 'h'},         {"version", no_argument, 0, 'V'},
      {"arch", required_argument, 0, 'a'},     {"device-update", no_argument, 0, 'D'},
      {"keep-order", no_argument, 0, 'K'},   {"priorities", no_argument, 0, 'P'},
      {0, 0, 0, 0},
  };
  *o = (Options){.max_errors = 20, .calls = 1000};
  optind = 0; /* reset getopt: pgcc_main may run many times in one process */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
    switch (c) {
    case 'o': o->output = optarg; break;
    case 'e':
      if (strcmp(optarg, "c") == 0) o->emit = EMIT_C;
      else if (strcmp(optarg, "graph") == 0) o->emit = EMIT_GRAPH;
      else if (strcmp(optarg, "dot") == 0) o->emit = EMIT_DOT;
      else return usage_error(err, "unknown --emit kind '%s' (expected c, graph or dot)", optarg);
      break;
    case 's': o->stats = true; break;
    case 'r':
      if (!optarg || strcmp(optarg, "text") == 0) o->report = REPORT_TEXT;
      else if (strcmp(optarg, "json") == 0) o->report = REPORT_JSON;
      else return usage_error(err, "unknown --report format '%s' (expected text or json)", optarg);
      break;
    case 'p': o->profile = optarg; break;
    case 'a':
      if (strncmp(optarg, "sm_", 3) != 0 || !isdigit((unsigned char)optarg[3]))
        return usage_error(err, "bad --arch '%s' (expected sm_XY, e.g. sm_90)", optarg);
      o->arch = optarg;
      break;
    case 't': o->time_passes = true; break;
    case 'D': o->device_update = true; break;
    case 'K': o->keep_order = true; break;
    case 'P': o->priorities = true; break;
    case 'M':
      if (o->nmodules == 64) return usage_error(err, "more than 64 --module files (at '%s')", optarg);
      o->modules[o->nmodules++] = optarg;
      break;
    case 'n':
      for (const char *q = optarg; *q; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_') || (q == optarg && isdigit((unsigned char)*q)))
          return usage_error(err, "--name '%s' is not a C identifier", optarg);
      if (!*optarg) return usage_error(err, "--name needs a name%s", "");
      o->name = optarg;
      break;
    case 'c': {
      char *end;
      double n = strtod(optarg, &end);
      if (*end || !(n >= 1) || n > 1e12) return usage_error(err, "bad --calls '%s' (a count of at least 1)", optarg);
      o->calls = n;
      break;
    }
    case 'm': {
      char *end;
      long n = strtol(optarg, &end, 10);
      if (*end || n < 0 || n > 1000000) return usage_error(err, "bad --max-errors '%s'", optarg);
      o->max_errors = (int)n;
      break;
    }
    case 'h': fputs(usage_text, out); return 0;
    case 'V': fprintf(out, "pgcc %s (.graph format %d)\n", PGCC_VERSION, PG_GRAPH_FORMAT_VERSION); return 0;
    case ':': return usage_error(err, "option '%s' needs an argument", argv[optind - 1]);
    default: return usage_error(err, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind == argc) return usage_error(err, "no input file%s", "");
  if (argc - optind > 1) return usage_error(err, "more than one input file ('%s' ...)", argv[optind + 1]);
  o->input = argv[optind];
  if (o->report && o->emit != EMIT_NONE)
    return usage_error(err, "--report and --emit%s both write the output: choose one", "");
  if (o->emit == EMIT_NONE && !o->stats && !o->report) o->emit = EMIT_C;
  if (o->emit == EMIT_NONE && !o->report && o->output)
    return usage_error(err, "-o '%s' given, but nothing to emit", o->output);
  return -1;
}

typedef void (*Writer)(const PgProgram *, const void *ctx, FILE *);

/* ctx: the directory the output goes to (module paths are written relative to it) */
static void write_graph(const PgProgram *p, const void *ctx, FILE *f) { pg_graph_write(p, f, ctx); }
static void write_dot(const PgProgram *p, const void *ctx, FILE *f) { (void)ctx, pg_dot_write(p, f); }
typedef struct {
  const char *name, *input;
} CInfo;
static void write_c(const PgProgram *p, const void *ctx, FILE *f) {
  const CInfo *ci = ctx;
  pg_emit_c(p, ci->name, ci->input, f);
}
static void write_h(const PgProgram *p, const void *ctx, FILE *f) { pg_emit_h(p, ((const CInfo *)ctx)->name, f); }

/* The API prefix from the input's name: "models/gpt2-small.graph" -> gpt2_small; for
 * standard input ("-"), from the output's ("-o model.c" -> model), else "stdin". */
static char *default_name(const char *input, const char *output) {
  if (strcmp(input, "-") == 0) input = output && strcmp(output, "-") != 0 ? output : "stdin";
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  size_t n = strcspn(base, ".");
  char *name = malloc(n + 2);
  if (!name) PG_BUG("out of memory");
  size_t k = 0;
  if (n == 0 || isdigit((unsigned char)base[0])) name[k++] = '_';
  for (size_t i = 0; i < n; i++) name[k++] = isalnum((unsigned char)base[i]) ? base[i] : '_';
  name[k] = 0;
  return name;
}

static void write_report_text(const PgProgram *p, const void *ctx, FILE *f) { pg_report_text(p, ctx, f); }
static void write_report_json(const PgProgram *p, const void *ctx, FILE *f) { pg_report_json(p, ctx, f); }

/* ---- outputs ----
 *
 * gcc's conventions: every output is written in full to a temporary file beside its
 * destination ("X.tmp.XXXXXX"), and only when all of them are complete are they
 * renamed into place, one after the other with SIGINT, SIGTERM and SIGHUP held back,
 * so that X.c and X.h appear together or not at all; if the second rename fails,
 * the first is undone (the file it replaced is put back).  A signal that arrives
 * while temporaries exist removes them (the cleanup list below, read by the handler)
 * and then takes its usual course.  Errors name the output as the user gave it.
 * Standard output ("-") and files that exist and are not regular (a device such as
 * /dev/null, a FIFO) are written directly: renaming over them would replace them. */

/* The temporaries and backups that exist now, for the signal handler: fixed slots
 * (the handler may neither allocate nor free), each published by setting `used`
 * after its path is written, with the signals blocked while the list changes. */
#define CLEANUP_SLOTS 8
static char cleanup_path[CLEANUP_SLOTS][PATH_MAX];
static volatile sig_atomic_t cleanup_used[CLEANUP_SLOTS];
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSIGNALS (int)(sizeof cleanup_signals / sizeof cleanup_signals[0])
static struct sigaction cleanup_old[NSIGNALS]; /* the dispositions to restore */
static int cleanup_installed;

void (*pgcc_test_hook_before_rename)(void); /* tests only: NULL in the pgcc command */

static void cleanup_handler(int sig) {
  int saved = errno;
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (cleanup_used[i]) unlink(cleanup_path[i]), cleanup_used[i] = 0;
  for (int k = 0; k < NSIGNALS; k++) /* the process's own disposition again, then the signal */
    if (cleanup_signals[k] == sig) sigaction(sig, &cleanup_old[k], NULL);
  raise(sig); /* delivered when this handler returns: the signal is blocked inside it */
  errno = saved;
}

static void block_signals(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (int k = 0; k < NSIGNALS; k++) sigaddset(&set, cleanup_signals[k]);
  sigprocmask(SIG_BLOCK, &set, old);
}

/* With the signals blocked: the handler goes in with the first temporary, out with the
 * last.  A signal the process ignores stays ignored (nohup pgcc ...). */
static void cleanup_add(const char *path) {
  int i = 0;
  while (i < CLEANUP_SLOTS && cleanup_used[i]) i++;
  if (i == CLEANUP_SLOTS || strlen(path) >= PATH_MAX) PG_BUG("cleanup list full");
  strcpy(cleanup_path[i], path);
  cleanup_used[i] = 1;
  if (cleanup_installed++ == 0)
    for (int k = 0; k < NSIGNALS; k++) {
      struct sigaction sa = {.sa_handler = cleanup_handler};
      sigemptyset(&sa.sa_mask);
      for (int j = 0; j < NSIGNALS; j++) sigaddset(&sa.sa_mask, cleanup_signals[j]);
      sigaction(cleanup_signals[k], NULL, &cleanup_old[k]);
      if (cleanup_old[k].sa_handler != SIG_IGN) sigaction(cleanup_signals[k], &sa, NULL);
    }
}

static void cleanup_remove(const char *path) {
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (cleanup_used[i] && strcmp(cleanup_path[i], path) == 0) {
      cleanup_used[i] = 0;
      if (--cleanup_installed == 0)
        for (int k = 0; k < NSIGNALS; k++)
          if (cleanup_old[k].sa_handler != SIG_IGN) sigaction(cleanup_signals[k], &cleanup_old[k], NULL);
      return;
    }
}

typedef struct {
  const char *path;  /* NULL or "-": standard output */
  const char *shown;  /* how errors name it: the path as given; NULL: standard output */
  const char *beside; /* for X.h: X.c, the output the user named */
  Writer w;
  const void *ctx;
  char *tmp;    /* the temporary written, NULL while none (or written directly) */
  char *backup; /* a link to the file the rename replaces, to undo it; NULL: none was there */
  bool replaced;
} Output;

static int cannot_write(FILE *err, const Output *o, const char *why) {
  if (!o->shown)
    fprintf(err, "pgcc: error: cannot write standard output: %s\n", why);
  else if (o->beside)
    fprintf(err, "pgcc: error: cannot write '%s' (the header beside '%s'): %s\n", o->shown, o->beside, why);
  else
    fprintf(err, "pgcc: error: cannot write '%s': %s\n", o->shown, why);
  return EXIT_INPUT;
}

/* Writes to a stream; 0 or EXIT_INPUT. */
static int write_stream(Output *o, const PgProgram *p, FILE *f, FILE *err) {
  o->w(p, o->ctx, f);
  if (fflush(f) == 0 && !ferror(f)) return 0;
  return cannot_write(err, o, strerror(errno ? errno : EIO));
}

/* Removes o's temporary (and backup), if any. */
static void drop_temporary(Output *o) {
  sigset_t old;
  block_signals(&old);
  if (o->tmp) unlink(o->tmp), cleanup_remove(o->tmp);
  if (o->backup) unlink(o->backup), cleanup_remove(o->backup);
  sigprocmask(SIG_SETMASK, &old, NULL);
  free(o->tmp), free(o->backup);
  o->tmp = o->backup = NULL;
}

/* stdio's buffer is a disk block: a million-node program would take 65,000 write
 * calls.  A larger one (owned by the stream until fclose) makes them a few hundred. */
#define OUTPUT_BUFFER (1 << 20)

/* Writes o in full: to its temporary (o->tmp), or directly where it is standard output
 * or an existing file that is not regular.  0 or EXIT_INPUT. */
static int write_one(Output *o, const PgProgram *p, FILE *out, FILE *err) {
  if (!o->path || strcmp(o->path, "-") == 0) return write_stream(o, p, out, err);
  struct stat st;
  if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return cannot_write(err, o, "is a directory");
    FILE *f = fopen(o->path, "w");
    if (!f) return cannot_write(err, o, strerror(errno));
    int status = write_stream(o, p, f, err);
    return fclose(f) == 0 ? status : EXIT_INPUT;
  }
  size_t n = strlen(o->path);
  char *tmp = malloc(n + 16);
  if (!tmp) PG_BUG("out of memory");
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", o->path);
  sigset_t old;
  block_signals(&old); /* created and listed at once */
  int fd = mkstemp(tmp);
  int saved = errno;
  if (fd >= 0) cleanup_add(tmp), o->tmp = tmp;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (fd < 0) {
    free(tmp);
    return cannot_write(err, o, strerror(saved));
  }
  mode_t mask = umask(0); /* mkstemp makes it 0600: give it the mode fopen would (0666 less the umask) */
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  FILE *f = fdopen(fd, "w");
  if (!f) {
    saved = errno;
    close(fd);
    drop_temporary(o);
    return cannot_write(err, o, strerror(saved));
  }
  char *buf = malloc(OUTPUT_BUFFER);
  if (buf) setvbuf(f, buf, _IOFBF, OUTPUT_BUFFER);
  errno = 0;
  o->w(p, o->ctx, f);
  bool ok = !ferror(f);
  saved = ok ? 0 : errno; /* a write that failed (a full disk), or else the last flush: */
  if (fclose(f) != 0) {
    if (ok) saved = errno;
    ok = false;
  }
  free(buf);
  if (!ok) {
    drop_temporary(o);
    return cannot_write(err, o, strerror(saved ? saved : EIO));
  }
  return 0;
}

/* Puts every written temporary in place, or none: with the signals held back, each
 * replaced file is first linked to a backup name, each temporary renamed over its
 * destination; on a failure the renames done are undone.  0 or EXIT_INPUT. */
static int rename_all(Output *o, int n, FILE *err) {
  sigset_t old;
  block_signals(&old);
  int failed = -1, why = 0;
  for (int i = 0; i < n && failed < 0; i++) {
    if (!o[i].tmp) continue;
    struct stat st;
    if (lstat(o[i].path, &st) == 0) { /* keep what it replaces until all are in place */
      size_t len = strlen(o[i].path) + 16;
      o[i].backup = malloc(len);
      if (!o[i].backup) PG_BUG("out of memory");
      snprintf(o[i].backup, len, "%s.old.XXXXXX", o[i].path);
      int fd = mkstemp(o[i].backup);
      if (fd >= 0) close(fd), unlink(o[i].backup);
      if (fd >= 0 && link(o[i].path, o[i].backup) == 0)
        cleanup_add(o[i].backup);
      else /* no hard links here: the rename cannot be undone, only reported */
        free(o[i].backup), o[i].backup = NULL;
    }
    if (rename(o[i].tmp, o[i].path) == 0) {
      cleanup_remove(o[i].tmp);
      free(o[i].tmp), o[i].tmp = NULL;
      o[i].replaced = true;
    } else {
      failed = i, why = errno;
    }
  }
  for (int i = 0; failed >= 0 && i < failed; i++) { /* undo: the old file back, or none */
    if (!o[i].replaced) continue;
    if (o[i].backup ? rename(o[i].backup, o[i].path) == 0 : unlink(o[i].path) == 0) {
      if (o[i].backup) cleanup_remove(o[i].backup), free(o[i].backup), o[i].backup = NULL;
    } else if (o[i].backup) { /* the old file stays where it is, for the user to put back */
      fprintf(err, "pgcc: error: '%s' was replaced and cannot be put back (%s): the old one is '%s'\n", o[i].shown,
              strerror(errno), o[i].backup);
      cleanup_remove(o[i].backup), free(o[i].backup), o[i].backup = NULL;
    } else {
      fprintf(err, "pgcc: error: '%s' was written and cannot be removed again: %s\n", o[i].shown, strerror(errno));
    }
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  for (int i = 0; i < n; i++) drop_temporary(&o[i]);
  return failed < 0 ? 0 : cannot_write(err, &o[failed], strerror(why));
}

/* Writes every output, then puts them in place together.  0 or EXIT_INPUT. */
static int write_outputs(Output *o, int n, const PgProgram *p, FILE *out, FILE *err) {
  int status = 0;
  for (int i = 0; i < n && status == 0; i++) status = write_one(&o[i], p, out, err);
  if (status == 0 && pgcc_test_hook_before_rename) pgcc_test_hook_before_rename();
  if (status == 0) return rename_all(o, n, err);
  for (int i = 0; i < n; i++) drop_temporary(&o[i]);
  return status;
}

static int write_output(const char *path, Writer w, const PgProgram *p, const void *ctx, FILE *out, FILE *err) {
  Output o = {.path = path, .shown = path && strcmp(path, "-") != 0 ? path : NULL, .w = w, .ctx = ctx};
  return write_outputs(&o, 1, p, out, err);
}

/* --module files join the program's modules; the kind comes from the extension. */
static bool add_modules(PgProgram *p, PgDiag *d, const Options *o) {
  static const struct {
    const char *ext;
    PgModuleKind kind;
  } exts[] = {{".cubin", PG_MOD_CUBIN}, {".fatbin", PG_MOD_FATBIN}, {".ptx", PG_MOD_PTX}, {".cu", PG_MOD_CUDA}};
  for (int i = 0; i < o->nmodules; i++) {
    const char *path = o->modules[i], *dot = strrchr(path, '.');
    size_t e;
    for (e = 0; e < sizeof exts / sizeof exts[0]; e++)
      if (dot && strcmp(dot, exts[e].ext) == 0) break;
    struct stat st;
    if (e == sizeof exts / sizeof exts[0]) {
      fprintf(d->out, "pgcc: error: --module '%s': expected a .cubin, .fatbin, .ptx or .cu file\n", path);
      d->errors++;
    } else if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      fprintf(d->out, "pgcc: error: --module '%s': not a readable regular file\n", path);
      d->errors++;
    } else {
      PgModule *m = pg_arena_alloc(p->arena, sizeof *m);
      m->name = pg_arena_printf(p->arena, "module%d", i);
      m->kind = exts[e].kind;
      m->file = path;
      char *abs = realpath(path, NULL);
      m->path = pg_arena_strdup(p->arena, abs ? abs : path);
      free(abs);
      pg_vec_push(p->arena, p->modules, m);
    }
  }
  return d->errors == 0;
}

static PgProgram *read_input(PgArena *a, PgDiag *d, const char *path) {
  PgSource *src = pg_source_load(a, d, path);
  if (!src) return NULL;
  PgLoc where;
  switch (pg_detect_dialect(src, &where)) {
  case PG_DIALECT_DOT: return pg_dot_read(a, d, src);
  case PG_DIALECT_GRAPH: return pg_graph_read(a, d, src);
  case PG_DIALECT_UNKNOWN:
    if (pg_source_is_blank(src))
      pg_error(d, where, "empty input; expected a DOT graph or a .graph file");
    else
      pg_error(d, where, "unrecognised input: expected 'digraph' (DOT) or 'pgcc' (.graph)");
    return NULL;
  }
  return NULL;
}

int pgcc_main(int argc, char **argv, FILE *out, FILE *err) {
#ifdef __GLIBC__
  /* The passes' large temporary arrays (tens of MiB at a million nodes) from mmap
   * and back to the system when freed: glibc otherwise raises its mmap threshold
   * after the first such free, serves the next ones from the heap and keeps their
   * pages for the rest of the run (the peak of a million-node .graph to C). */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  Options o;
  int status = parse_options(argc, argv, &o, out, err);
  if (status >= 0) return status;

  PgArena *arena = pg_arena_new();
  PgDiag diag = {.out = err, .max_errors = o.max_errors};
  const PgProfile *profile = &pg_profile_h200;
  if (o.profile && !(profile = pg_profile_load(arena, &diag, o.profile))) {
    pg_arena_free(arena);
    return EXIT_INPUT;
  }

  /* the pipeline */
  Timer t = {err, o.time_passes, {0, 0}, arena};
  mark(&t, NULL);
  /* the input as diagnostics and the outputs name it */
  const char *input = strcmp(o.input, "-") == 0 ? PG_STDIN_NAME : o.input;
  PgProgram *p = read_input(arena, &diag, o.input);
  mark(&t, "read");
  if (p && diag.errors == 0) pg_verify(p, &diag);
  mark(&t, "verify");
  if (p && diag.errors == 0) pg_check_signatures(p, &diag);
  mark(&t, "signatures");
  if (p && o.arch && p->arch && strcmp(p->arch, o.arch) != 0)
    pg_error(&diag, p->arch_loc, "the input's architecture is %s, but --arch says %s", p->arch, o.arch);
  if (p && o.arch && !p->arch) p->arch = o.arch;
  if (!p || diag.errors > 0 || !add_modules(p, &diag, &o) || pg_check_arch(p, &diag) > 0) {
    pg_arena_free(arena);
    return EXIT_INPUT;
  }
  mark(&t, "arch");
  pg_stage_collectives(p);
  mark(&t, "stage");
  pg_classify(p);
  mark(&t, "classify");
  if (o.keep_order) p->rename.why_not = "--keep-order";
  else {
    size_t before = p->buffers.n;
    pg_rename(p);
    mark(&t, "rename");
    if (p->buffers.n != before && pg_verify(p, &diag) > 0) PG_BUG("rename broke the program");
  }
  if (o.keep_order) p->sched.why_not = "--keep-order";
  else pg_schedule(p);
  mark(&t, "schedule");
  if (p->sched.moved) { /* (a schedule that kept the order changed nothing to verify again) */
    if (pg_verify(p, &diag) > 0) PG_BUG("schedule broke the program");
    mark(&t, "verify");
  }
  pg_partition(p);
  pg_verify_regions(p, &diag);
  mark(&t, "partition");
  pg_cost(p, profile, o.calls, o.device_update);
  mark(&t, "cost");
  pg_memplan(p);
  mark(&t, "memplan");
  if (pg_verify(p, &diag) > 0) PG_BUG("a pass broke the program");
  mark(&t, "verify");
  if (o.keep_order) p->widen.why_not = "--keep-order";
  else pg_widen(p, profile);
  mark(&t, "widen");
  if (p->widen.ran) { /* (nor did a widening that never ran: no access sets, --keep-order) */
    if (pg_verify(p, &diag) > 0) PG_BUG("widen broke the program");
    mark(&t, "verify");
  }
  if (!o.priorities) p->priority.why_not = "not asked for (--priorities)";
  else {
    pg_prioritize(p, profile);
    mark(&t, "priority");
  }

  status = 0;
  if (o.stats) {
    PgStats s = pg_program_stats(p);
    fprintf(out, "nodes=%zu edges=%zu graphs=%zu kernels=%zu ", s.nodes, s.edges, s.graphs, s.kernels);
    if (s.dims) fprintf(out, "dims=%zu ", s.dims); /* only where there are: the line as before otherwise */
    fputc('\n', out);
  }
  PgReportInfo info = {input, profile, o.calls};
  if (o.report == REPORT_TEXT) status = write_output(o.output, write_report_text, p, &info, out, err);
  if (o.report == REPORT_JSON) status = write_output(o.output, write_report_json, p, &info, out, err);
  mark(&t, o.report ? "report" : NULL);
  switch (o.emit) {
  case EMIT_NONE: break;
  case EMIT_GRAPH: {
    char *dir = NULL; /* the output's directory; NULL for standard output: the working directory */
    if (o.output && strcmp(o.output, "-") != 0) {
      const char *slash = strrchr(o.output, '/');
      dir = slash ? strndup(o.output, (size_t)(slash - o.output + (slash == o.output))) : strdup(".");
    }
    status = write_output(o.output, write_graph, p, dir, out, err);
    free(dir);
    break;
  }
  case EMIT_DOT: status = write_output(o.output, write_dot, p, NULL, out, err); break;
  case EMIT_C: {
    if (pg_c_check(p, &diag) > 0) {
      status = EXIT_INPUT;
      break;
    }
    char *name = o.name ? strdup(o.name) : default_name(o.input, o.output);
    CInfo ci = {name, input};
    size_t len = o.output ? strlen(o.output) : 0;
    Output outs[2] = {{.path = o.output, .shown = len && strcmp(o.output, "-") != 0 ? o.output : NULL,
                       .w = write_c, .ctx = &ci}};
    char *h = NULL;
    if (len > 2 && strcmp(o.output + len - 2, ".c") == 0) { /* X.c: also X.h */
      h = strdup(o.output);
      h[len - 1] = 'h';
      outs[1] = (Output){.path = h, .shown = h, .beside = o.output, .w = write_h, .ctx = &ci};
    }
    status = write_outputs(outs, h ? 2 : 1, p, out, err);
    free(h);
    free(name);
    break;
  }
  }
  mark(&t, o.emit != EMIT_NONE ? "emit" : NULL);
  pg_arena_free(arena);
  return status;
}

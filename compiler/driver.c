/*
 * driver.c -- the command line and the pipeline, as a flat list:
 *
 *   load -> detect dialect -> frontend -> verify -> signatures, arch -> stage
 *   collectives -> classify -> partition -> verify regions -> cost -> memory plan ->
 *   verify -> report or emit
 *
 * pgcc_main() returns the exit status; it never calls exit(), so tests run it
 * in-process with their own streams.  Outputs are written to a temporary file
 * beside the destination and renamed into place only when complete.
 */
#include "pgcc.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
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
  if (t->on && pass)
    fprintf(t->err, "pgcc: time: %-9s %8.3f s  (arena %zu MiB)\n", pass,
            (double)(now.tv_sec - t->last.tv_sec) + (double)(now.tv_nsec - t->last.tv_nsec) * 1e-9,
            pg_arena_used(t->arena) >> 20);
  t->last = now;
}

static const char usage_text[] =
    "usage: pgcc [options] INPUT\n"
    "\n"
    "Reads a captured GPU graph (a .graph file, or DOT written by cudaGraphDebugDotPrint)\n"
    "and writes what --emit asks for.\n"
    "\n"
    "options:\n"
    "  -o FILE            write the output to FILE (default: standard output)\n"
    "  --emit=KIND        c: C launch code for libpgrt (the default; with -o X.c\n"
    "                     also X.h); graph: pgcc's .graph format; dot: DOT for Graphviz\n"
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
    "                     a node that frees memory and makes none runs as soon as it can)\n"
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
      {"keep-order", no_argument, 0, 'K'},
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

/* The API prefix from the input's name: "models/gpt2-small.graph" -> gpt2_small. */
static char *default_name(const char *input) {
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

/* Writes to a stream; 0 or EXIT_INPUT. */
static int write_stream(const char *path, Writer w, const PgProgram *p, const void *ctx, FILE *f, FILE *err) {
  w(p, ctx, f);
  if (fflush(f) == 0 && !ferror(f)) return 0;
  fprintf(err, "pgcc: error: cannot write '%s': %s\n", path ? path : "standard output", strerror(errno));
  return EXIT_INPUT;
}

/* Writes a regular file through a temporary file renamed into place, so that no
 * partial output is ever left behind.  Anything else that exists (a device such as
 * /dev/null, a FIFO) is written directly: renaming over it would replace it. */
#define OUTPUT_BUFFER (1 << 20)

static int write_output(const char *path, Writer w, const PgProgram *p, const void *ctx, FILE *out, FILE *err) {
  if (!path || strcmp(path, "-") == 0) return write_stream(NULL, w, p, ctx, out, err);
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      fprintf(err, "pgcc: error: cannot write '%s': is a directory\n", path);
      return EXIT_INPUT;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
      fprintf(err, "pgcc: error: cannot write '%s': %s\n", path, strerror(errno));
      return EXIT_INPUT;
    }
    int status = write_stream(path, w, p, ctx, f, err);
    return fclose(f) == 0 ? status : EXIT_INPUT;
  }
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp) PG_BUG("out of memory");
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd >= 0) { /* mkstemp makes it 0600: give it the mode fopen would (0666 less the umask) */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
  }
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    fprintf(err, "pgcc: error: cannot write '%s': %s\n", path, strerror(errno));
    if (fd >= 0) close(fd), unlink(tmp);
    free(tmp);
    return EXIT_INPUT;
  }
  /* stdio's buffer is a disk block: a million-node program would take 65,000 write
   * calls.  A larger one (owned by the stream until fclose) makes them a few hundred. */
  char *buf = malloc(OUTPUT_BUFFER);
  if (buf) setvbuf(f, buf, _IOFBF, OUTPUT_BUFFER);
  w(p, ctx, f);
  bool ok = !ferror(f);
  ok = fclose(f) == 0 && ok;
  free(buf);
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) {
    fprintf(err, "pgcc: error: cannot write '%s': %s\n", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return ok ? 0 : EXIT_INPUT;
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
  if (o.keep_order) p->sched.why_not = "--keep-order";
  else pg_schedule(p);
  mark(&t, "schedule");
  if (pg_verify(p, &diag) > 0) PG_BUG("schedule broke the program");
  mark(&t, "verify");
  pg_partition(p);
  pg_verify_regions(p, &diag);
  mark(&t, "partition");
  pg_cost(p, profile, o.calls, o.device_update);
  mark(&t, "cost");
  pg_memplan(p);
  mark(&t, "memplan");
  if (pg_verify(p, &diag) > 0) PG_BUG("a pass broke the program");
  mark(&t, "verify");

  status = 0;
  if (o.stats) {
    PgStats s = pg_program_stats(p);
    fprintf(out, "nodes=%zu edges=%zu graphs=%zu kernels=%zu ", s.nodes, s.edges, s.graphs, s.kernels);
    if (s.dims) fprintf(out, "dims=%zu ", s.dims); /* only where there are: the line as before otherwise */
    fputc('\n', out);
  }
  PgReportInfo info = {o.input, profile, o.calls};
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
    char *name = o.name ? strdup(o.name) : default_name(o.input);
    CInfo ci = {name, o.input};
    size_t len = o.output ? strlen(o.output) : 0;
    if (len > 2 && strcmp(o.output + len - 2, ".c") == 0) { /* X.c: also X.h */
      char *h = strdup(o.output);
      h[len - 1] = 'h';
      status = write_output(h, write_h, p, &ci, out, err);
      free(h);
    }
    if (status == 0) status = write_output(o.output, write_c, p, &ci, out, err);
    free(name);
    break;
  }
  }
  mark(&t, o.emit != EMIT_NONE ? "emit" : NULL);
  pg_arena_free(arena);
  return status;
}

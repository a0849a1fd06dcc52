#!/usr/bin/env python3
"""libpgrt's layout, checked (`make check-layers`, part of `make check`):

    python3 tests/runtime_layers.py [ROOT]

runtime/pgrt_impl.h's opening comment draws libpgrt's files in layers ("layer N  file.c
..."); a file may call functions of files in lower layers only.  This reads that table
and checks, over runtime/ (C files directly in it):

  - every C file is in the table, and every file the table names exists;
  - no C file is longer than 700 lines;
  - every call from one file to a function another defines goes down a layer or more
    (never within a layer, never up), and no function is defined by two files;
  - every function a file exports is either libpgrt's API (declared in pgrt.h) or
    declared in pgrt_impl.h in that file's section ("/* ---- FILE.c: ... */");
  - runtime's #include graph (quoted includes among runtime's files) has no cycle and
    no file includes a C file.

Then it proves it can fail: in a copy of runtime/ it puts a call up a layer, a call
within one, an include cycle, a file too long, a file outside the table and an
undeclared export, one at a time, and expects each to be reported.  Exit status 1 with
one line per problem ("runtime/FILE.c:LINE: ..."), else 0 and a summary line.
"""
import glob
import os
import re
import shutil
import sys
import tempfile

MAX_LINES = 700


def strip_c(text):
    """text with comments and string and character literals blanked (newlines kept, so
    offsets and line numbers stay those of the file)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


DEF = re.compile(r"^(static\s+)?(?:inline\s+)?[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(([^;{}()]|\([^;{}()]*\))*\)\s*\{",
                 re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_table(impl):
    """{file: layer} from pgrt_impl.h's opening comment."""
    head = impl[:impl.find("*/")]
    layers, current = {}, None
    for line in head.splitlines():
        m = re.match(r"\s*\*\s+layer\s+(\d+)\s+(\w+\.c)\b", line)
        if m:
            current = int(m.group(1))
            layers[m.group(2)] = current
            continue
        m = re.match(r"\s*\*\s+(\w+\.c)\s", line)
        if m and current is not None:
            layers[m.group(1)] = current
    return layers


def impl_sections(impl):
    """{function: file} for the prototypes of pgrt_impl.h, by the section they are in."""
    text = strip_c_keep_sections(impl)
    where, current = {}, None
    for line in text.splitlines():
        m = re.match(r"/\* ---- (\w+\.c):", line)
        if m:
            current = m.group(1)
            continue
        if line.startswith("/*"):
            continue
        m = re.match(r"^(?!static\b)(?!#)[A-Za-z_][\w \t*]*?\b(pgrt_\w+)\s*\(", line)
        if m and current:
            where[m.group(1)] = current
    return where


def strip_c_keep_sections(impl):
    """pgrt_impl.h with comments blanked except the section headers "/* ---- FILE.c: ..."."""
    keep = re.compile(r"/\* ---- \w+\.c:[^\n]*?\*/")
    marks = {m.start(): m.group(0) for m in keep.finditer(impl)}
    stripped = strip_c(impl)
    for at, s in marks.items():
        stripped = stripped[:at] + s + stripped[at + len(s):]
    return stripped


def check(root):
    rt = os.path.join(root, "runtime")
    problems = []
    impl_path = os.path.join(rt, "pgrt_impl.h")
    impl = open(impl_path).read()
    layers = layer_table(impl)
    if not layers:
        return [f"runtime/pgrt_impl.h: no layer table in its opening comment"]
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(rt, "*.c")))
    for f in files:
        if f not in layers:
            problems.append(f"runtime/{f}:1: not in runtime/pgrt_impl.h's layer table")
    for f in sorted(layers):
        if f not in files:
            problems.append(f"runtime/pgrt_impl.h:1: its layer table names {f}, which runtime/ does not have")
    texts = {f: open(os.path.join(rt, f)).read() for f in files}
    for f, t in texts.items():
        n = t.count("\n") + (0 if t.endswith("\n") or not t else 1)
        if n > MAX_LINES:
            problems.append(f"runtime/{f}:{MAX_LINES + 1}: {n} lines, more than {MAX_LINES}")

    # definitions
    stripped = {f: strip_c(t) for f, t in texts.items()}
    local, exported = {}, {}
    for f, t in stripped.items():
        local[f] = set()
        for m in DEF.finditer(t):
            name = m.group(2)
            if name in ("if", "for", "while", "switch", "return", "sizeof"):
                continue
            local[f].add(name)
            if not m.group(1):
                if name in exported and exported[name][0] != f:
                    problems.append(f"runtime/{f}:{line_of(t, m.start())}: {name} is defined in "
                                    f"runtime/{exported[name][0]} too")
                exported[name] = (f, line_of(t, m.start()))

    # calls
    for f, t in stripped.items():
        if f not in layers:
            continue
        for m in CALL.finditer(t):
            name = m.group(1)
            if name in local[f] or name not in exported:
                continue
            owner = exported[name][0]
            if owner not in layers or layers[owner] < layers[f]:
                continue
            how = "in its own layer" if layers[owner] == layers[f] else "in a higher layer"
            problems.append(f"runtime/{f}:{line_of(t, m.start())}: calls {name} of runtime/{owner}, {how} "
                            f"({owner}: layer {layers[owner]}, {f}: layer {layers[f]}; runtime/pgrt_impl.h)")

    # exports: the API, or pgrt_impl.h's section of their file
    api = set(re.findall(r"\b(pgrt_\w+)\s*\(", strip_c(open(os.path.join(rt, "pgrt.h")).read())))
    declared = impl_sections(impl)
    for name, (f, line) in sorted(exported.items()):
        if name in api:
            continue
        if name not in declared:
            problems.append(f"runtime/{f}:{line}: {name} is neither in pgrt.h nor declared in pgrt_impl.h")
        elif declared[name] != f:
            problems.append(f"runtime/{f}:{line}: {name} is declared in pgrt_impl.h's section of {declared[name]}, "
                            f"not of {f}")

    # the include graph
    graph = {}
    for path in sorted(glob.glob(os.path.join(rt, "*.c")) + glob.glob(os.path.join(rt, "*.h"))):
        name = os.path.basename(path)
        text = open(path).read()
        graph[name] = []
        for m in INCLUDE.finditer(strip_c_includes(text)):
            inc = os.path.basename(m.group(1))
            if not os.path.isfile(os.path.join(rt, inc)):
                continue  # not runtime's (a generated or system header)
            if inc.endswith(".c"):
                problems.append(f"runtime/{name}:{line_of(text, m.start())}: includes a C file, {inc}")
            graph[name].append(inc)
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                problems.append(f"runtime/{node}:1: an #include cycle: {' -> '.join(cycle)}")
            elif not state.get(nxt):
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in graph:
        if not state.get(node):
            visit(node, [node])
    return problems


def strip_c_includes(text):
    """text with comments blanked, string literals kept (an #include's name is one)."""
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def selftest(root):
    """Each violation, put into a copy of runtime/, must be reported."""
    cases = {
        "a call up a layer": ("status.c", "long long pgrt_mono_ns(void) {",
                              "long long pgrt_mono_ns(void) {\n  pgrt_load_modules(0);", "calls pgrt_load_modules"),
        "a call within a layer": ("cache.c", "int pgrt_cache_get(const void *key, size_t key_len, void **cubin, "
                                  "size_t *size) {", None, "in its own layer"),
        "an include cycle": ("pgrt.h", '#include "pgrt_relocs.h"', '#include "pgrt_relocs.h"\n#include "pgrt_impl.h"',
                             "#include cycle"),
        "a file too long": ("status.c", None, "\n" * (MAX_LINES + 1), "more than 700"),
        "a file outside the table": ("extra.c", None, "int pgrt_extra(void);\n", "not in runtime/pgrt_impl.h"),
        "an undeclared export": ("status.c", None, "int pgrt_undeclared(void) { return 0; }\n",
                                 "pgrt_undeclared is neither"),
    }
    failures = []
    for what, (f, old, new, expect) in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(os.path.join(root, "runtime"), os.path.join(tmp, "runtime"))
            path = os.path.join(tmp, "runtime", f)
            if what == "a call within a layer":  # cache.c calls nccl.c's loader (both layer 1)
                text = open(path).read()
                assert old in text, f"selftest: {f} has no '{old}'"
                text = text.replace(old, old + "\n  pgrt_nccl_load(0);")
            elif old is None:
                text = (open(path).read() if os.path.exists(path) else "") + new
            else:
                text = open(path).read()
                assert old in text, f"selftest: {f} has no '{old}'"
                text = text.replace(old, new, 1)
            with open(path, "w") as fh:
                fh.write(text)
            got = check(tmp)
            if not any(expect in p for p in got):
                failures.append(f"selftest: {what} ({f}) was not reported; got {got}")
    return failures, len(cases)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    failures, n = selftest(root)
    for p in failures:
        print(p)
    if problems or failures:
        return 1
    rt = os.path.join(root, "runtime")
    layers = layer_table(open(os.path.join(rt, "pgrt_impl.h")).read())
    longest = max((open(f).read().count("\n"), os.path.basename(f)) for f in glob.glob(os.path.join(rt, "*.c")))
    print(f"runtime layers: {len(layers)} files in {len(set(layers.values()))} layers, every call down a layer, "
          f"no #include cycle, longest {longest[1]} ({longest[0]} lines); the {n} kinds of violation are caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())

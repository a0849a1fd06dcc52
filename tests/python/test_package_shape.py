"""The shape of the pgcc package (python/pgcc), read from its modules' source: no import
cycle among its modules (imports at the top or inside functions, `from .x import`,
`from pgcc.x import`, `import pgcc.x`, `from . import x`), no module over 600 lines,
the run side importing nothing from the export side, every module with an opening
docstring and __all__, no import inside a function but torch's, and every module
importing without torch (torch is imported where it is used, so that the package and
its CPU tests need none); and, in the package, the benchmarks and the tests, no name
used that nothing binds (pyflakes)."""
import ast
import os
import subprocess
import sys

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "python", "pgcc")
MAX_LINES = 600
# What a deployment imports to load and call an export (pgcc.load): these import only
# each other -- never the exporter's modules, nor torch at their top.
RUN_SIDE = {"loader", "toolchain", "call_args", "errors", "cuda", "structure", "aliases", "program_info", "fastcall",
            "nccl_id"}


def sources(root=PACKAGE):
    """{module name: source} of the package's modules (its .py files)."""
    out = {}
    for f in sorted(os.listdir(root)):
        if f.endswith(".py"):
            with open(os.path.join(root, f)) as fh:
                out[f[:-3]] = fh.read()
    return out


def imported(tree, modules, package="pgcc"):
    """[(module imported, line, at the module's top)] for every import of one of
    `modules` in the AST, at any depth."""
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 1 or (node.level == 0 and (base == package or base.startswith(package + "."))):
                rel = base if node.level == 1 else base[len(package) + 1:]
                if rel:
                    names.append(rel.split(".")[0])
                else:  # from . import x / from pgcc import x: x may be a module
                    names += [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name.split(".")[1] for a in node.names if a.name.startswith(package + ".")]
        out += [(n, node.lineno, id(node) in top) for n in names if n in modules]
    return out


def import_graph(srcs):
    """{module: {modules it imports}} of {module name: source}."""
    return {m: {n for n, _, _ in imported(ast.parse(s), srcs)} - {m} for m, s in srcs.items()}


def cycles(graph):
    """The import cycles of a graph {module: {modules}}: each strongly connected component
    of more than one module (Tarjan), as a sorted list; a module importing itself counts."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles():
    srcs = {"a": "from .b import f\n", "b": "def f():\n    from pgcc.c import g\n", "c": "import pgcc.a\n",
            "d": "from . import a\n", "e": "from pgcc import d\n"}
    graph = import_graph(srcs)
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"d"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]] and cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    found = cycles(import_graph(sources()))
    assert found == [], f"import cycles among python/pgcc modules: {found}"


def test_no_module_over_600_lines():
    long = {m: s.count("\n") for m, s in sources().items() if s.count("\n") > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def test_the_run_side_imports_nothing_from_the_export_side():
    srcs = sources()
    assert RUN_SIDE <= set(srcs), f"run-side modules missing: {RUN_SIDE - set(srcs)}"
    graph = import_graph(srcs)
    crossing = {m: sorted(graph[m] - RUN_SIDE) for m in RUN_SIDE if graph[m] - RUN_SIDE}
    assert crossing == {}, f"run-side modules importing export-side ones: {crossing}"


def test_imports_at_the_top_but_torch():
    late = []
    for m, s in sources().items():
        tree = ast.parse(s)
        top = {id(n) for n in tree.body}  # and an optional dependency's `try: import x / except ImportError`
        top |= {id(n) for t in tree.body if isinstance(t, ast.Try) for n in t.body + [h for e in t.handlers
                                                                                    for h in e.body]}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
                if not all(n == "torch" or n.startswith("torch.") for n in names):
                    late.append(f"{m}.py:{node.lineno}: {', '.join(names)}")
    assert late == [], "imports inside functions (only torch may be): " + "; ".join(late)


def test_every_module_has_a_docstring_and_all():
    missing = []
    for m, s in sources().items():
        tree = ast.parse(s)
        if not ast.get_docstring(tree):
            missing.append(f"{m}: no docstring")
        if not any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
                   for n in tree.body):
            missing.append(f"{m}: no __all__")
    assert missing == []


def test_every_module_imports_without_torch():
    names = sorted(m for m in sources() if m != "__main__")
    code = ("import importlib, sys; "
            "[importlib.import_module('pgcc.' + m) for m in sys.argv[1:]]; "
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code] + names, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"  # (torch is imported inside the functions that use it)


def test_the_tests_import_this_trees_package():
    import pgcc
    assert os.path.dirname(os.path.abspath(pgcc.__file__)) == PACKAGE, pgcc.__file__


def undefined_names(paths):
    """pyflakes' findings of names used and never bound (a NameError when the line runs:
    code only a GPU reaches goes untested here), as 'file:line: message'."""
    from pyflakes import api, messages, reporter

    class Collect(reporter.Reporter):
        def __init__(self):
            super().__init__(sys.stderr, sys.stderr)
            self.found = []

        def flake(self, m):
            if isinstance(m, (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)):
                self.found.append(f"{m.filename}:{m.lineno}: {m.message % m.message_args}")

    r = Collect()
    for p in paths:
        api.checkRecursive([p], r)
    return r.found


def test_the_undefined_name_finder_finds_one(tmp_path):
    (tmp_path / "m.py").write_text("def f(xs):\n    try:\n        pass\n    finally:\n        for g in grads:\n"
                                   "            pass\n")
    assert undefined_names([str(tmp_path)]) == [f"{tmp_path / 'm.py'}:5: undefined name 'grads'"]


def test_no_undefined_names():
    """The package, the benchmarks and the tests' Python (an export step with buckets once
    restored `grads` it never had: only a GPU run would have raised)."""
    assert undefined_names([PACKAGE, os.path.join(ROOT, "bench"), os.path.join(ROOT, "tests")]) == []

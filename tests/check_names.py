"""File names and imports across the tree, checked on the CPU (`make check-names`):

- no file under tests/, bench/ or tools/ edits the module path (sys.path): the scripts
  import pgcc and the model definitions (tests.models) by name, with the path set once
  by whoever runs them (PYTHONPATH=python:. from the root; tests/gpu/run_all.sh and
  run_e2e.sh set it).  ALLOWED lists the exceptions with their reasons; an exception
  that no longer edits the path is a finding too, so that the list only shrinks;
- no two *.py or *.c files in the tree share a file name, but __init__.py and
  conftest.py (names Python and pytest give): a file's name says what it holds
  wherever it is read alone -- a traceback, a diagnostic, an editor's tab, a grep.

    python3 tests/check_names.py [ROOT]      (exit status 1 on a finding, each printed as PATH:LINE: ...)

The tree is git's files (tracked and untracked, not ignored), or without git every
file outside build/ and hidden folders.  Before the tree, the checks run on a made-up
one holding one finding of each kind, which they must report.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

SCANNED = ("tests/", "bench/", "tools/")
# sys.path edited: assigned, sliced into, or changed by a list method; and site.addsitedir
EDIT = re.compile(r"\bsys\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\s*\(|\[[^\]\n]*\]\s*=|\+?=(?!=))"
                  r"|\bsite\.addsitedir\s*\(")
ALLOWED = {
    "tools/pgcc-export": "the in-tree shim of an installed command: it runs from any directory, so it puts "
                         "the package beside it on the path",
}
SAME_NAME_OK = {"__init__.py", "conftest.py"}


def tree_files(root):
    """The tree's files, relative to root, with / separators."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and not (d == root and x == "build"))
            files += [os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/") for n in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))  # (a deleted file git still lists: gone)


def is_python_or_shell(root, path):
    if path.endswith((".py", ".sh", ".mk")):
        return True
    try:
        with open(os.path.join(root, path), "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and (b"python" in first or b"sh" in first)


def path_edits(root, files, allowed):
    """Findings: each edit of sys.path under SCANNED outside `allowed`, and each allowed
    file with none."""
    found, seen = [], set()
    for path in files:
        if not path.startswith(SCANNED) or path == "tests/check_names.py" or not is_python_or_shell(root, path):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if EDIT.search(line):
                    seen.add(path)
                    if path not in allowed:
                        found.append(f"{path}:{n}: edits the module path ({line.strip()[:100]}); import by name, "
                                     "with PYTHONPATH=python:. set by whoever runs it")
    for path in sorted(set(allowed) - seen):
        if path in files:
            found.append(f"{path}:1: allowed to edit sys.path (tests/check_names.py ALLOWED) but no longer does: "
                         "take it off the list")
    return found


def same_names(files):
    """Findings: each *.py or *.c file name held by more than one file."""
    by_name = collections.defaultdict(list)
    for path in files:
        name = path.rsplit("/", 1)[-1]
        if name.endswith((".py", ".c")) and name not in SAME_NAME_OK:
            by_name[name].append(path)
    return [f"{paths[0]}:1: {name} is also {', '.join(paths[1:])}: name each for what it holds"
            for name, paths in sorted(by_name.items()) if len(paths) > 1]


def check(root, allowed):
    files = tree_files(root)
    return path_edits(root, files, allowed) + same_names(files)


def self_test():
    """The checks on a made-up tree (no git) with one finding of each kind, and what
    they must not report: a sentence about sys.path, a read of it, __init__.py twice."""
    tree = {
        "tests/models/zoo.py": "import sys\n# this module never edits sys.path\nprint(sys.path[0])\n",
        "tests/gpu/zoo.py": "import sys\nsys.path[:0] = ['python']\n",
        "tests/gpu/__init__.py": "",
        "bench/__init__.py": "",
        "bench/run.sh": "#!/usr/bin/env bash\nPYTHONPATH=python python3 -c 'import sys; sys.path.append(\"x\")'\n",
        "tools/shim": "#!/usr/bin/env python3\nimport sys\nsys.path.insert(0, 'python')\n",
        "tools/gone": "#!/usr/bin/env python3\nimport pgcc\n",
        "compiler/zoo.c": "int zoo;\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for path, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        got = check(root, {"tools/shim": "a shim", "tools/gone": "no longer edits it"})
    want = ["bench/run.sh:2: ", "tests/gpu/zoo.py:2: ", "tools/gone:1: allowed", "tests/gpu/zoo.py:1: zoo.py is also "
            "tests/models/zoo.py"]
    ok = len(got) == len(want) and all(g.startswith(w) for g, w in zip(got, want))
    if not ok:
        print("check_names: the self-test's made-up tree gave\n  " + "\n  ".join(got)
              + "\nexpected findings starting\n  " + "\n  ".join(want), file=sys.stderr)
    return ok


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    if not self_test():
        return 1
    found = check(root, ALLOWED)
    for f in found:
        print(f, file=sys.stderr)
    files = tree_files(root)
    print(f"check_names: {len(files)} files, {len(found)} findings "
          f"({len(ALLOWED)} files allowed to edit sys.path: {', '.join(sorted(ALLOWED))})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

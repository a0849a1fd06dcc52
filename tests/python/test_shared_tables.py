"""The exporter's relocation kinds are runtime/pgrt_relocs.h's, the one table pgcc and
libpgrt expand (X(ENUM, "name", bytes, shift)).  Pure: reads sources, imports nothing
of pgcc (no torch).

The Python side's set of kind names is found where it is declared: a constant whose name
says so (RELOC_KINDS, RelocKind...: a tuple, list, set, frozenset or dict of the names, or
an Enum of them) in any module of python/pgcc.  Until the exporter declares one, its
kinds are the string literals of python/pgcc that look like a linker's relocation kinds
(abs64, lo32, hi32, rel32, pc32...): every kind of the header must be one of them, and
none of them may be missing from the header."""
import ast
import glob
import os
import re

import pytest

from conftest import ROOT

HEADER = os.path.join(ROOT, "runtime", "pgrt_relocs.h")
PACKAGE = os.path.join(ROOT, "python", "pgcc")
NAME = re.compile(r"reloc\w*kind|relockind", re.I)
LOOKS_LIKE_A_KIND = re.compile(r"^(abs|lo|hi|rel|pc|got|plt)\d+$")


def header_kinds():
    text = open(HEADER).read()
    body = re.search(r"#define PG_RELOC_KINDS\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    assert body, f"{HEADER}: no PG_RELOC_KINDS(X) table"
    rows = re.findall(r'X\(\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*(\d+)\s*,\s*(\d+)\s*\)', body.group(1))
    assert rows, f"{HEADER}: PG_RELOC_KINDS(X) has no rows X(ENUM, \"name\", bytes, shift)"
    return rows


def modules():
    for path in sorted(glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)):
        with open(path) as f:
            yield path, ast.parse(f.read(), path)


def strings_of(node):
    """The names a constant's value holds: a literal collection of strings, its keys for a
    dict, through frozenset(...)/set(...)/tuple(...)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
            node.func.id in ("frozenset", "set", "tuple", "list"):
        return strings_of(node.args[0])
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def declared_kinds():
    """[(where, names)] for every constant of python/pgcc that declares relocation kinds."""
    found = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and NAME.search(t.id) and node.value is not None:
                        names = strings_of(node.value)
                        if names:
                            found.append((f"{os.path.relpath(path, ROOT)}:{node.lineno} {t.id}", names))
            elif isinstance(node, ast.ClassDef) and NAME.search(node.name):
                names = {s.value.value for s in node.body if isinstance(s, ast.Assign) and
                         isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)}
                if names:
                    found.append((f"{os.path.relpath(path, ROOT)}:{node.lineno} class {node.name}", names))
    return found


def literal_kinds():
    """{name: [where]} for the string literals of python/pgcc that look like relocation kinds."""
    seen = {}
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and LOOKS_LIKE_A_KIND.match(node.value):
                seen.setdefault(node.value, []).append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    return seen


def test_header_table_is_well_formed():
    rows = header_kinds()
    names = [r[1] for r in rows]
    assert len(set(names)) == len(names), f"{HEADER}: a kind name twice: {names}"
    for enum, name, size, shift in rows:
        assert enum.lower() == name, f"{HEADER}: {enum} is named '{name}'"
        assert int(size) in (4, 8) and int(shift) in (0, 32), f"{HEADER}: {name} writes {size} bytes >> {shift}"
    assert names[0] == "abs64", "abs64 (format version 1's only kind) must stay first: the enums' values"


def test_the_exporter_knows_exactly_the_header_kinds():
    want = {r[1] for r in header_kinds()}
    declared = declared_kinds()
    if declared:
        for where, names in declared:
            assert names == want, (f"{where} declares the relocation kinds {sorted(names)}, but "
                                   f"runtime/pgrt_relocs.h's table has {sorted(want)}")
        return
    seen = literal_kinds()
    missing = want - set(seen)
    extra = {k: v for k, v in seen.items() if k not in want}
    assert not missing and not extra, (
        "python/pgcc declares no relocation-kind constant (RELOC_KINDS or a RelocKind enum: this test then "
        "compares it with runtime/pgrt_relocs.h), and its string literals disagree with the header: "
        + (f"kinds it never names: {sorted(missing)}" if missing else "")
        + ("; " if missing and extra else "")
        + (f"kinds the header lacks: " + ", ".join(f"'{k}' at {v[0]}" for k, v in sorted(extra.items()))
           if extra else ""))


@pytest.mark.parametrize("case", ["missing", "extra", "declared"])
def test_a_disagreement_is_reported(case, tmp_path, monkeypatch):
    """The comparison fails where the two sides differ (on a copy of the package)."""
    import shutil
    import sys
    me = sys.modules[__name__]
    pkg = tmp_path / "pgcc"
    shutil.copytree(PACKAGE, pkg)
    if case == "missing":  # the header gains a kind the exporter never names
        hdr = tmp_path / "pgrt_relocs.h"
        text = open(HEADER).read().replace('X(HI32,  "hi32",  4, 32)', 'X(HI32,  "hi32",  4, 32) \\\n  X(REL32, "rel32", 4, 0)')
        assert "rel32" in text
        hdr.write_text(text)
        monkeypatch.setattr(me, "HEADER", str(hdr))
    elif case == "extra":  # the exporter writes a kind the header lacks
        (pkg / "zz_extra.py").write_text('KIND = "pc32"\n')
    else:  # a declared constant that disagrees
        (pkg / "zz_model.py").write_text('RELOC_KINDS = ("abs64", "lo32")\n')
    monkeypatch.setattr(me, "PACKAGE", str(pkg))
    with pytest.raises(AssertionError):
        test_the_exporter_knows_exactly_the_header_kinds()

"""The docs a user reads, checked (pure: pgcc, bash, pkg-config and Graphviz; no torch, no GPU):

- nothing in docs/*.md or README.md narrates when work was done: no commit hashes, issue
  numbers, sessions or rounds, no dates (docs/results.md, generated, carries its
  measurements' date and commit as provenance: only those two are allowed there);
- the .graph format version README.md and docs/graph-format.md state is the one
  `pgcc --version` names;
- every `$ COMMAND` of README.md's tour runs, from a folder that sees the tree's build/,
  examples/, tests/ and runtime/, and prints what README shows (a line `...` stands for
  any lines);
- every option `pgcc --help` lists is in docs/guide.md's table;
- docs/python.md's table of the package names every module of it and no other."""
import glob
import os
import re
import subprocess

import pytest

from conftest import ROOT

DOCS = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]
GENERATED = {os.path.join(ROOT, "docs", "results.md")}  # (provenance: a date and a commit per table)

ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
NARRATION = [
    ("an issue number", re.compile(r"\bissues?\s*#?\d+", re.I)),
    ("a session", re.compile(r"\bsessions?\b", re.I)),
    ("an ordinal round", re.compile(rf"\b(the|a|an|this|that|its)\s+({ORDINALS})\s+(session|round|run|version|try)\b",
                                    re.I)),
    ("this round of work", re.compile(r"\b(in|of|since|until|before|after) (this|that|the last|an earlier) "
                                      r"(session|round|run of work)\b", re.I)),
]
PROVENANCE = [
    ("a date", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    # a commit: 7 to 40 hex digits with a digit and a letter among them, standing alone (not part of
    # an address such as 0x7f93..., a name, a path or a hex string in quotes)
    ("a commit hash", re.compile(r"(?<![\w./\"'-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/\"'-])")),
]


def narration(text, generated=False):
    """[(line number, what, the match)] for every narrating phrase in text."""
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        for what, rx in NARRATION + ([] if generated else PROVENANCE):
            for m in rx.finditer(line):
                found.append((no, what, m.group(0)))
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_docs_do_not_narrate_history(path):
    with open(path) as f:
        found = narration(f.read(), generated=path in GENERATED)
    assert not found, f"{os.path.relpath(path, ROOT)} narrates history (git keeps it): " + "; ".join(
        f"line {no}: {what} '{m}'" for no, what, m in found[:20])


def test_the_narration_check_catches_what_it_should():
    bad = ["Since the seventh session the box kernels are built", "issue 16's targets", "Issue #18",
           "at commit 8e53aa2 (tenth session)", "the exporter as in e0901ad", "measured 2026-11-23",
           "in this session", "full hash 60848c0b17c31bb5c2e85aef3f61a20c3bc727ea here",
           "the first round of work did it"]
    for line in bad:
        assert narration(line), line
    good = ["node g1.n1 memcpy dst p7f9399e01000 width 4096", "0x7fd000062000", "sha256 \"81bd8d5c...\"",
            "the first call's peak", "a second capture", "kernels/image_3f2a.cubin", "deadbeef",
            "version 3 adds edge kinds", "round by round"]
    for line in good:
        assert not narration(line), (line, narration(line))
    assert narration("2026-11-23", generated=True) == [] and narration("a session", generated=True)


def pgcc_version_format(pgcc_bin):
    out = subprocess.run([pgcc_bin, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.graph format (\d+)", out)
    assert m, out
    return int(m.group(1))


def test_format_version_stated_is_pgccs(pgcc_bin):
    version = pgcc_version_format(pgcc_bin)
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    stated = re.findall(r"format\s+version\s+(\d+)", readme)
    assert stated and set(map(int, stated)) == {version}, (stated, version)
    with open(os.path.join(ROOT, "docs", "graph-format.md")) as f:
        title = f.readline()
    assert title.strip() == f"# The .graph format, version {version}", title


def tour(readme):
    """[(command, [expected lines])] of README's indented `$ ` commands."""
    steps, cur, lines = [], None, readme.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("    $ "):
            cur = (line[6:], [])
            steps.append(cur)
        elif cur is not None and line.startswith("    ") and line.strip():
            cur[1].append(line[4:].rstrip())
        elif cur is not None and not line.strip() and i + 1 < len(lines) and lines[i + 1].startswith("    ") \
                and not lines[i + 1].startswith("    $ "):
            cur[1].append("")  # a blank line inside the output
        else:
            cur = None
    return steps


def matches(got, want):
    """got's lines against want's, where a line '...' takes any number of lines."""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(got[i:], want[1:]) for i in range(len(got) + 1))
    return bool(got) and got[0] == want[0] and matches(got[1:], want[1:])


def test_readme_tour_runs_as_shown(pgcc_bin, tmp_path):
    with open(os.path.join(ROOT, "README.md")) as f:
        steps = tour(f.read())
    assert len(steps) >= 8, steps
    os.makedirs(tmp_path / "build")
    os.symlink(pgcc_bin, tmp_path / "build" / "pgcc")
    for d in ("examples", "tests", "runtime"):
        os.symlink(os.path.join(ROOT, d), tmp_path / d)
    for cmd, want in steps:
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        got = [l.rstrip() for l in (r.stdout + r.stderr).splitlines()]
        assert matches(got, want), f"README's `{cmd}` printed:\n" + "\n".join(got) + "\nREADME shows:\n" + \
            "\n".join(want)
    # the tour's outputs are there, and what it says of allkinds.dot holds: it is refused
    for f in ("allkinds.graph", "saxpy.c", "saxpy.h", "saxpy.svg"):
        assert (tmp_path / f).stat().st_size > 0, f
    assert not (tmp_path / "allkinds.c").exists()


def test_guide_lists_every_option(pgcc_bin):
    out = subprocess.run([pgcc_bin, "--help"], capture_output=True, text=True).stdout
    options = set(re.findall(r"^\s+(-o|--[a-z-]+)", out, re.M))
    assert {"-o", "--emit", "--report", "--version"} <= options, options
    with open(os.path.join(ROOT, "docs", "guide.md")) as f:
        guide = f.read()
    missing = [o for o in sorted(options) if not re.search(rf"^\| `{re.escape(o)}[ =`\[]", guide, re.M)]
    assert not missing, f"docs/guide.md's option table lacks {missing}"


def test_the_package_table_names_every_module_and_no_other():
    """docs/python.md's table of the package names each module of python/pgcc (its .py
    files and _fastcall.c), and none that is gone."""
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        text = f.read()
    table = text[text.index("## The package"):]
    table = table[:table.index("\n\n", table.index("| module |"))]
    named = set(re.findall(r"`(\w+\.(?:py|c))`", table))
    here = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "python", "pgcc", "*.py"))}
    here |= {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "python", "pgcc", "*.c"))}
    assert named == here, f"not in the table: {sorted(here - named)}; in it, not in the package: {sorted(named - here)}"

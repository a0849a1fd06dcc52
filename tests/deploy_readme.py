#!/usr/bin/env python3
"""examples/deploy/README.md's commands, run as it writes them (`make check-deploy`):

    python3 tests/deploy_readme.py

Reads the README's "## Two commands" section: its indented blocks are commands (a block
whose first line starts with `make ` or `examples/deploy/deploy`; a line ending in a
backslash goes on) or what the command before prints ("..." stands for any text).  It
expects three commands -- the build, the run on a GPU, the dry run -- and three outputs:
the GPU run's, the GPU run's on a machine without the CUDA driver, the dry run's.  From
the root of the tree, with a fresh examples/deploy, it runs each command with the
environment a new user's shell has (no LIBRARY_PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH,
PGRT_* or make's variables: the driver's stub is not on the linker's path), and checks:
the build exits 0 and `deploy` links neither libcuda nor NVRTC (ldd); the GPU run
prints the first output and exits 0 where libcuda.so.1 loads, else prints the second
and exits 1; the dry run prints the third, exits 0, and writes the outputs IO holds.
Exit status 1 with the reason on the first difference.
"""
import ctypes
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "examples", "deploy", "README.md")
CLEAN = ("LIBRARY_PATH", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


def fail(msg):
    print(f"deploy: {README}: {msg}")
    sys.exit(1)


def blocks():
    """The section's indented blocks, in order: (is_command, [lines])."""
    text = open(README).read()
    m = re.search(r"^## Two commands\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        fail("no '## Two commands' section")
    out, cur = [], []
    for line in m.group(1).splitlines() + [""]:
        if line.startswith("    "):
            cur.append(line[4:])
        elif cur:
            out.append((cur[0].startswith(("make ", "examples/deploy/deploy")), cur))
            cur = []
    return out


def commands(lines):
    """A command block's commands, continuation lines joined."""
    cmds, cur = [], ""
    for line in lines:
        cur += line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip() + " "
        else:
            cmds.append(cur)
            cur = ""
    return cmds


def matches(want, got, what):
    """got's lines are want's, "..." standing for any text."""
    got = got.rstrip("\n").split("\n") if got.strip() else []
    pats = ["^" + re.escape(w).replace(re.escape("..."), ".*") + "$" for w in want]
    if len(got) != len(pats) or not all(re.match(p, g) for p, g in zip(pats, got)):
        fail(f"{what} printed\n" + "\n".join("  " + g for g in got) + "\nnot, as the README shows,\n" +
             "\n".join("  " + w for w in want))


def run(cmd, env):
    return subprocess.run(cmd, shell=True, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def main():
    cmds, outs = [], []
    for is_cmd, lines in blocks():
        if is_cmd:
            cmds.extend(commands(lines))
        else:
            outs.append(lines)
    if len(cmds) != 3 or len(outs) != 3 or not cmds[0].startswith("make ") or "--dry-run" not in cmds[2]:
        fail(f"expected the build, the run and the dry run, and three outputs; found commands {cmds} and "
             f"{len(outs)} outputs")
    env = {k: v for k, v in os.environ.items() if k not in CLEAN and not k.startswith("PGRT_")}
    subprocess.run(["rm", "-rf", "examples/deploy/gen", "examples/deploy/deploy", "out.safetensors"], cwd=ROOT,
                   check=True)
    try:
        r = run(cmds[0], env)
        if r.returncode != 0:
            fail(f"`{cmds[0]}` exits {r.returncode}:\n{r.stdout}{r.stderr}")
        ldd = subprocess.run(["ldd", os.path.join(ROOT, "examples/deploy/deploy")], stdout=subprocess.PIPE,
                             text=True).stdout
        if re.search(r"libcuda|libnvrtc", ldd):
            fail(f"examples/deploy/deploy links the driver or NVRTC:\n{ldd}")
        try:
            ctypes.CDLL("libcuda.so.1")
            driver = True
        except OSError:
            driver = False
        r = run(cmds[1], env)
        if r.returncode != (0 if driver else 1):
            fail(f"`{cmds[1]}` exits {r.returncode} ({'with' if driver else 'without'} the driver here):\n"
                 f"{r.stdout}{r.stderr}")
        matches(outs[0] if driver else outs[1], r.stdout + r.stderr,
                f"`{cmds[1]}` ({'with' if driver else 'without'} the driver)")
        r = run(cmds[2], env)
        if r.returncode != 0:
            fail(f"`{cmds[2]}` exits {r.returncode}:\n{r.stdout}{r.stderr}")
        matches(outs[2], r.stdout + r.stderr, f"`{cmds[2]}`")
        io = open(os.path.join(ROOT, "tests/corpus/export/mlp_small/mlp_small.io.safetensors"), "rb").read()
        got = open(os.path.join(ROOT, "out.safetensors"), "rb").read()
        if got[-1024:] != io[-1024:]:
            fail("the dry run's out.safetensors does not end in the bytes of out0 that IO holds")
    finally:
        subprocess.run(["rm", "-rf", "examples/deploy/gen", "examples/deploy/deploy", "out.safetensors"], cwd=ROOT)
    print(f"deploy: README's 3 commands run as it shows them, with a new user's environment (deploy links no libcuda "
          f"or NVRTC; {'a GPU run' if driver else 'no driver here: the GPU run stops at loading it'}; the dry run "
          f"PASSes)")


if __name__ == "__main__":
    main()

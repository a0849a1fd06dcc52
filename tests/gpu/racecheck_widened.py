"""compute-sanitizer over exported programs, widened ones among them: each export folder's
program loaded by pgcc.load and called on its example inputs (NAME.io.safetensors) in a
child process run under `compute-sanitizer --tool TOOL`.

    PYTHONPATH=python:. python3 tests/gpu/racecheck_widened.py [--tool racecheck] [--calls 2] [--timeout 600] EXPORT ...

EXPORT: export folders (bench/widen_timing.py --work DIR leaves MODEL and MODEL_floor
there), or eager:MODEL for a model of tests/models/branchy_models.py run by PyTorch eagerly
(the same kernels' report without pgcc: a hazard inside a library's kernel that eager
PyTorch's run reports too is the library's, not the widening's).  What racecheck checks is each kernel's *shared* memory (hazards between a
block's threads, inside one kernel), for every kernel the graphs launch; two kernels of
a widened graph touching the same global memory at once is not among what it can see
(that is proven by the verification against the compiled callable and by the CPU
tests, docs/compiler.md).  memcheck (--tool memcheck) checks every access is inside an
allocation.  Prints one line per export with the tool's summary and the kernels its
hazards are in; exits nonzero where a run reports an error, fails or runs past
--timeout.  Needs a GPU, PyTorch, safetensors and compute-sanitizer on PATH or under
CUDA_HOME.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

SUMMARY = re.compile(r"(RACECHECK SUMMARY|ERROR SUMMARY): .*")
RACE = re.compile(r"Race reported between \w+ access at (\S+?)\+0x[0-9a-f]+")


def hazard_kernels(text):
    """The kernels compute-sanitizer's report names a race in (racecheck reports hazards
    inside one kernel), each once, in the order first named."""
    return list(dict.fromkeys(m.group(1) for m in RACE.finditer(text)))


def child(folder, calls):
    import torch
    if folder.startswith("eager:"):
        from tests.models.branchy_models import build
        fn, inputs, _ = build(folder[len("eager:"):])
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
        print(f"CALLED {folder}: {calls} calls", flush=True)
        return
    from safetensors.torch import load_file

    import pgcc
    graph, = glob.glob(os.path.join(folder, "*.graph"))
    name = os.path.basename(graph)[:-len(".graph")]
    io = load_file(os.path.join(folder, name + ".io.safetensors"), device="cuda")
    inputs = [io[f"in{i}"] for i in range(sum(k.startswith("in") for k in io))]
    prog = pgcc.load(folder)
    for _ in range(calls):
        prog(*inputs)
    torch.cuda.synchronize()
    print(f"CALLED {name}: {calls} calls", flush=True)


def sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    path = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer")
    if not os.path.exists(path):
        sys.exit("no compute-sanitizer on PATH or under CUDA_HOME")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exports", nargs="+")
    ap.add_argument("--tool", default="racecheck", choices=("racecheck", "memcheck", "synccheck", "initcheck"))
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per export under the tool")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.exports[0], args.calls)
    bad = 0
    for folder in args.exports:
        cmd = [sanitizer(), "--tool", args.tool, "--error-exitcode", "9", "--target-processes", "all",
               sys.executable, os.path.abspath(__file__), "--child", "--calls", str(args.calls), folder]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            bad += 1
            print(f"FAIL  {args.tool} {folder}: over {args.timeout} s under the tool", flush=True)
            continue
        text = r.stdout + r.stderr
        called = "CALLED" in text
        summary = "; ".join(m.group(0) for m in SUMMARY.finditer(text)) or "no summary"
        kernels = hazard_kernels(text)
        if kernels:
            summary += f"; in {len(kernels)} kernel(s): {', '.join(kernels)}"
        ok = r.returncode == 0 and called
        bad += not ok
        print(f"{'CLEAN' if ok else 'FAIL '} {args.tool} {folder}: exit {r.returncode}, {summary}", flush=True)
        if not ok:
            print("\n".join(text.splitlines()[-40:]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

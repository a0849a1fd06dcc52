"""A training step's device memory, eager PyTorch against pgcc's program (issue 36's
memory goal: at most +5% over eager's peak).

    PYTHONPATH=python:. python3 bench/train_memory.py [--jobs N] [--timeout S] [--out DIR] [KEY ...]

KEY: steps of the training suite (tests/training/training_steps.py; default: all), each
built as bench/zoo_timing.py builds it (SuiteStep: stepped once eagerly, its optimizers
made capturable).  Each runs in a child process of its own (memory is counted per
process, so children may run side by side):

  eager peak     torch.cuda.max_memory_allocated() over three more eager steps: the
                 step's whole footprint -- parameters, optimizer state, gradients,
                 activations, and the libraries' workspaces the step made (PyTorch's
                 cuBLAS workspaces, one per handle and stream)
  cuBLAS ws      what torch._C._cuda_clearCublasWorkspaces() then frees: eager's peak
                 less it is the footprint without them (pgcc's arena holds only the
                 bytes of a workspace its kernels write)
  pgcc           the loaded program's own device memory: its state (the weights block,
                 NAME_weights) and its arena (activations, gradients a step makes anew,
                 workspaces), after pgcc.export(step, batch, out, state=...) and pgcc.load

The table gives both and their ratios; one JSON line per step (MEM {...}) from each
child, train_memory.json and each child's log (KEY.memory.log) under --out.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TAG = "MEM "


def child(key, out):
    import torch

    from bench.zoo_timing import SuiteStep
    s = SuiteStep(key)
    state = sum(t.numel() * t.element_size() for t in {t.data_ptr(): t for t in s.weights.values()}.values())
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        s(*s.inputs)
    torch.cuda.synchronize()
    rec = {"model": f"training:{key}", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "state_bytes": state, "eager_peak_bytes": torch.cuda.max_memory_allocated()}
    held = torch.cuda.memory_allocated()
    torch._C._cuda_clearCublasWorkspaces()
    rec["cublas_workspace_bytes"] = held - torch.cuda.memory_allocated()
    s(*s.inputs)  # (the workspaces made again, as a user's process holds them when it exports)
    torch.cuda.synchronize()
    import pgcc  # (after torch, as users import it)
    t0 = time.time()
    r = pgcc.export(s, tuple(s.inputs), os.path.join(out, key), state=s.state,
                    quiet=not os.environ.get("PGCC_TRAIN_VERBOSE"))  # (=1: the export's account in the log)
    rec["export_s"], rec["verified"] = round(time.time() - t0, 1), str(r.verified)[:160]
    p = pgcc.load(os.path.join(out, key))
    rec["pgcc_weights_bytes"] = sum(f.size for f in p.weight_fields)
    rec["pgcc_arena_bytes"] = p.arena_bytes
    p.close()
    print(TAG + json.dumps(rec), flush=True)
    return 0


def run_one(key, args, work):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(work, key, "inductor"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT, os.environ.get("PYTHONPATH", "")]))
    try:
        p = subprocess.run([sys.executable, __file__, "--child", key, "--child-out", os.path.join(work, key)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
        if args.out:  # (the child's log: what a failed step said, whole)
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, key + ".memory.log"), "w") as f:
                f.write(p.stdout + "\n---- stderr ----\n" + p.stderr)
        got = [json.loads(ln[len(TAG):]) for ln in p.stdout.splitlines() if ln.startswith(TAG)]
        rec = got[-1] if got else {"model": f"training:{key}",
                                   "failed": " | ".join((p.stdout + p.stderr).strip().splitlines()[-2:])[:300]}
    except subprocess.TimeoutExpired:
        rec = {"model": f"training:{key}", "failed": f"over {args.timeout} s"}
    print(json.dumps(rec), flush=True)
    return rec


def table(recs):
    """The markdown table of the records (MiB; ratios pgcc / eager)."""
    mib = lambda n: f"{n / 2**20:.1f}"  # noqa: E731
    out = ["| step | state | eager peak | cuBLAS ws | eager peak less ws | pgcc state + arena | pgcc / eager peak "
           "| pgcc / eager less ws |", "|---" * 8 + "|"]
    for r in recs:
        if "failed" in r:
            out.append(f"| {r['model']} | FAILED: {r['failed'][:120]} |" + " |" * 6)
            continue
        eager, ws = r["eager_peak_bytes"], r["cublas_workspace_bytes"]
        mine = r["pgcc_weights_bytes"] + r["pgcc_arena_bytes"]
        out.append(f"| {r['model']} | {mib(r['state_bytes'])} | {mib(eager)} | {mib(ws)} | {mib(eager - ws)} | "
                   f"{mib(r['pgcc_weights_bytes'])} + {mib(r['pgcc_arena_bytes'])} | {mine / eager:.2f}x | "
                   f"{mine / (eager - ws):.2f}x |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("keys", nargs="*")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=400)
    ap.add_argument("--out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.child_out)
    from tests.training.training_steps import PROGRAMS
    keys = args.keys or list(PROGRAMS)
    unknown = [k for k in keys if k not in PROGRAMS]
    if unknown:
        print(f"train_memory: no step {unknown}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="pgcc-memory-")
    with ThreadPoolExecutor(args.jobs) as pool:
        recs = list(pool.map(lambda k: run_one(k, args, work), keys))
    print()
    print(table(recs))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "train_memory.json"), "w") as f:
            json.dump(recs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

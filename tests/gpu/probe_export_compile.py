"""Where a training step's export spends its compile: one step of tests/training's suite
built and stepped eagerly once (as its author did), then pgcc.export, with Dynamo's own
timers printed after (torch._dynamo.utils.compile_times: build_guards, the AOT and
Inductor phases) and the export's report of its longest steps.

    PYTHONPATH=python:. python3 tests/gpu/probe_export_compile.py [--user-compiles-first]
        [--profile-guards] [--no-verify] [PROGRAM]

PROGRAM: a name of tests/training/training_steps.py's PROGRAMS (default
vit_gradscaler_fp16).  --user-compiles-first: the user compiles the step and calls it
three times before the export (each call's time printed, and the timers after it);
--profile-guards: each of Dynamo's guard buildings (CheckFunctionManager) that takes over
2 s profiled with cProfile, its top functions printed.  Set TORCHINDUCTOR_CACHE_DIR to a
new folder for a cold compile.  Evidence for docs/training.md ("Export"); needs a GPU,
PyTorch and the suite's libraries (timm, transformers).
"""
import argparse
import cProfile
import io
import json
import pstats
import time

from tests.training.training_steps import PROGRAMS


def timers(tag):
    from torch._dynamo.utils import compile_times, counters
    print(f"== {tag}: Dynamo's timers", flush=True)
    print(compile_times(repr="str", aggregate=True), flush=True)
    print(f"== {tag}: {dict(counters['stats'])}", flush=True)


def profile_guards():
    """CheckFunctionManager.__init__ wrapped: its time printed, and its profile where over 2 s."""
    import torch._dynamo.guards as guards
    original = guards.CheckFunctionManager.__init__

    def wrapped(self, *a, **kw):
        prof, t0 = cProfile.Profile(), time.time()
        prof.enable()
        try:
            return original(self, *a, **kw)
        finally:
            prof.disable()
            took = time.time() - t0
            print(f"GUARDS built in {took:.1f} s", flush=True)
            if took > 2:
                out = io.StringIO()
                stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
                stats.print_stats(25)
                stats.sort_stats("tottime").print_stats(10)
                print(out.getvalue(), flush=True)
    guards.CheckFunctionManager.__init__ = wrapped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program", nargs="?", default="vit_gradscaler_fp16", choices=sorted(PROGRAMS))
    ap.add_argument("--user-compiles-first", action="store_true")
    ap.add_argument("--profile-guards", action="store_true")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--out", default="/tmp/probe_export_compile")
    args = ap.parse_args()
    import torch
    torch.manual_seed(0)
    p = PROGRAMS[args.program]()
    torch.manual_seed(1)
    p.step(*p.batch(1000))  # (the author's eager step: the optimizer makes its state)
    torch.cuda.synchronize()
    if args.profile_guards:
        profile_guards()
    if args.user_compiles_first:
        compiled = torch.compile(p.step)
        for i in range(3):
            t0 = time.time()
            compiled(*p.batch(i))
            torch.cuda.synchronize()
            print(f"the user's compiled call {i}: {time.time() - t0:.1f} s", flush=True)
        timers("after the user's compile")
    import pgcc  # (after torch, as users import it)
    t0 = time.time()
    r = pgcc.export(p.step, p.batch(1000), args.out, quiet=True, verify=not args.no_verify,
                    **({"state": p.state} if p.state else {}))
    print(f"EXPORT {args.program}: {time.time() - t0:.1f} s; {r.verified}", flush=True)
    print(json.dumps(r.report.get("time")), flush=True)
    timers("after the export")


if __name__ == "__main__":
    main()

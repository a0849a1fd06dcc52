"""Widening timed: programs with parallel branches at batch 1, and two without
(tests/models/branchy_models.py), each exported once by pgcc.export and run four ways
side by side: torch.compile(mode="reduce-overhead") (CUDA Graph Trees); pgcc's floor,
the export with its access sets taken off its .graph (pgcc then keeps the captured
chain, as with --keep-order: no widening); pgcc widened, the export as written (pgcc
rebuilds the chain from the access sets where its cost model predicts a gain); and the
same built with pgcc --priorities (the critical path's kernels launched first).

    PYTHONPATH=python:. python3 bench/widen_timing.py [--rounds 7] [--iters 50] [--out FILE] [--cache DIR]
        [--work DIR] [MODEL ...]

MODEL: names of branchy_models.MODELS (default: all, the branchy ones first).  Each
model runs in a child process of its own (bench/children.py), one after another.  In
a child: the model compiled and warmed up, exported (its verification runs the
widened program against the compiled callable), the floor's copy of the export
written, both loaded (load and init timed: init is libpgrt's, graph instantiation
included), reduce-overhead warmed up; then the floor's and the widened program's
outputs compared on four input sets (max |widened - floor| and whether they are the
same bits; and max |widened - compiled| over max |compiled|); then `rounds`
interleaved rounds, each timing every way once: `iters` calls between two CUDA events
(GPU time per call), then HOST_CALLS calls from an idle GPU timed by the host
(host time per call).  The table gives medians over the rounds, the spread (max - min
over the median), the ratios widened / floor (the median of the ratios round by
round) and widened / reduce-overhead, the arena of both plans (the floor's is the plan
on the captured order; the widened one's is the serial plan's or a plan of its own,
pgcc --report's "widen" says which), the widened graph's width and predicted critical
path against the serial time, and how many kernels carry access sets.  One JSON line
per model on stdout (BENCH {...}), the table at the end, every record in --out (JSON).
Needs a GPU, PyTorch, transformers and torchvision (imported in the children).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HOST_CALLS = 8  # host time: calls per timing, from an idle GPU (well inside the launch queue)
WAYS = ("reduce-overhead", "pgcc floor", "pgcc widened", "pgcc prioritized")
ACCESS = re.compile(r" access (?:rw|r|w|o|\[[rwo, ]*\]);")  # (one access, or one per pointer of a struct)


def floor_copy(exp, dest, name):
    """A copy of export exp in dest whose .graph has no access sets (its build left out)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(exp, dest, ignore=shutil.ignore_patterns("build"))
    path = os.path.join(dest, name + ".graph")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(ACCESS.sub(";", text))
    return len(ACCESS.findall(text))


def pgcc_report(pgcc_bin, exp, name, flags=()):
    """pgcc --report=json on the export's .graph: its widen, priority and memory figures."""
    r = subprocess.run([pgcc_bin, "--report=json", *flags, name + ".graph"], cwd=exp, capture_output=True, text=True)
    if r.returncode:
        return {"failed": r.stderr.strip()[-300:]}
    rep = json.loads(r.stdout)
    return {"widen": rep.get("widen"), "priority": rep.get("priority"), "arena_bytes": rep.get("arena_bytes"),
            "schedule": rep.get("schedule")}


def leaves(torch, out):
    """The tensors of an output (a tensor, or a pytree of them), in order."""
    from torch.utils._pytree import tree_leaves
    return [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]


def child(key, rounds, iters, work):
    import torch

    import pgcc
    from pgcc.toolchain import find_pgcc
    from tests.models import branchy_models

    watch = pgcc.ModuleWatch()  # (before the model first runs: the libraries' kernels loaded in its view)
    fn, inputs, weights = branchy_models.build(key)
    pool = [[x.clone() for x in inputs] for _ in range(4)]  # inputs at other addresses, call by call
    rec = {"model": key, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    setup = {}
    compiled = torch.compile(fn)
    for _ in range(3):
        compiled(*inputs)

    print("PHASE export", flush=True)
    exp, floor = os.path.join(work, key), os.path.join(work, key + "_floor")
    t0 = time.perf_counter()
    res = pgcc.export(compiled, tuple(inputs), exp, name=key, weights=weights, compile=False, quiet=True,
                      watch=watch, warmup=1)
    rec["export_s"] = round(time.perf_counter() - t0, 2)
    rec["verified"] = str(res.verified)
    watch.close()
    rec["access_params"] = floor_copy(exp, floor, key)
    pgcc_bin = find_pgcc()
    rec["report_widened"], rec["report_floor"] = pgcc_report(pgcc_bin, exp, key), pgcc_report(pgcc_bin, floor, key)
    rec["report_prioritized"] = pgcc_report(pgcc_bin, exp, key, ["--priorities"])

    steps, programs = {}, {}

    def calls(f):
        state = {"k": 0}

        def step():
            state["k"] = (state["k"] + 1) % len(pool)
            return f(*pool[state["k"]])
        return step

    for way, d, kw in (("pgcc floor", floor, {}), ("pgcc widened", exp, {}),
                       ("pgcc prioritized", exp, {"build_dir": os.path.join(exp, "build-prio"),
                                                  "pgcc_flags": ["--priorities"]})):
        print(f"PHASE load of {way}", flush=True)
        t0 = time.perf_counter()
        p = pgcc.load(d, **kw)
        setup[way] = time.perf_counter() - t0
        programs[way] = p
        outs = p.new_outputs()
        steps[way] = calls(lambda *xs, p=p, outs=outs: p(*xs, out=outs))
        rec[way] = {"load_ms": round(p.load_s * 1e3, 2), "init_ms": round(p.init_s * 1e3, 2),
                    "init_parts": p.init_stats(), "arena_bytes": p.arena_bytes}

    print("PHASE reduce-overhead", flush=True)
    ro = torch.compile(fn, mode="reduce-overhead")
    t0 = time.perf_counter()
    for _ in range(3):
        ro(*inputs)
    torch.cuda.synchronize()
    setup["reduce-overhead"] = time.perf_counter() - t0
    steps["reduce-overhead"] = calls(ro)

    print("PHASE results compared", flush=True)
    err, same, ref_err, prio_same = 0.0, True, 0.0, True
    for xs in pool:
        got = {}
        for way in ("pgcc floor", "pgcc widened", "pgcc prioritized"):
            outs = programs[way].new_outputs()
            programs[way](*xs, out=outs)
            got[way] = outs
        want = leaves(torch, compiled(*xs))
        torch.cuda.synchronize()
        for a, b, c, d in zip(got["pgcc floor"], got["pgcc widened"], want, got["pgcc prioritized"]):
            same &= bool(torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))
            prio_same &= bool(torch.equal(d.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))
            if a.is_floating_point():
                err = max(err, (b.double() - a.double()).abs().max().item())
                scale = c.double().abs().max().item() or 1.0
                ref_err = max(ref_err, (b.double() - c.double()).abs().max().item() / scale)
    rec["max_err_widened_vs_floor"], rec["bit_identical"] = err, same
    rec["max_rel_err_widened_vs_compiled"] = ref_err
    rec["prioritized_bit_identical"] = prio_same
    print(f"max |widened - floor| = {err:g} ({'the same bits' if same else 'NOT the same bits'}); "
          f"max |widened - compiled| / max |compiled| = {ref_err:g}", flush=True)

    for w in WAYS:  # warm, each way synchronized: a fault is then the way's that made it
        print(f"PHASE warm-up of {w}", flush=True)
        for _ in range(5):
            steps[w]()
        torch.cuda.synchronize()
    gpu, host = {w: [] for w in WAYS}, {w: [] for w in WAYS}
    print("PHASE timing", flush=True)
    for _ in range(rounds):
        for w in WAYS:  # interleaved: every way once per round
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            for _ in range(iters):
                steps[w]()
            e1.record()
            e1.synchronize()
            gpu[w].append(e0.elapsed_time(e1) / iters * 1e3)
            torch.cuda.synchronize()  # the host's own time: from an idle GPU, inside the launch queue
            t0 = time.perf_counter()
            for _ in range(HOST_CALLS):
                steps[w]()
            host[w].append((time.perf_counter() - t0) / HOST_CALLS * 1e6)
            torch.cuda.synchronize()
    med = statistics.median
    rec["ways"] = {w: {"gpu_us": round(med(gpu[w]), 2), "spread": round((max(gpu[w]) - min(gpu[w])) / med(gpu[w]), 3),
                       "gpu_us_rounds": [round(x, 2) for x in gpu[w]], "host_us": round(med(host[w]), 2),
                       "setup_s": round(setup[w], 3)} for w in WAYS}
    rec["widened_over_floor"] = round(med([a / b for a, b in zip(gpu["pgcc widened"], gpu["pgcc floor"])]), 3)
    rec["widened_over_ro"] = round(med([a / b for a, b in zip(gpu["pgcc widened"], gpu["reduce-overhead"])]), 3)
    rec["floor_over_ro"] = round(med([a / b for a, b in zip(gpu["pgcc floor"], gpu["reduce-overhead"])]), 3)
    rec["prioritized_over_widened"] = round(med([a / b for a, b in zip(gpu["pgcc prioritized"],
                                                                        gpu["pgcc widened"])]), 3)
    print("BENCH " + json.dumps(rec), flush=True)
    for p in programs.values():
        p.close()


def prioritized(r):
    """The prioritized way's cell: GPU µs, its ratio to the widened way, and how many kernels
    --priorities marked (none where the root graph was not widened)."""
    w, pr = (r.get("ways") or {}).get("pgcc prioritized"), (r.get("report_prioritized") or {}).get("priority")
    if not w:
        return "—"
    marked = f"{pr['critical']} of {pr['kernels']}" if pr else "none: not widened"
    same = "" if r.get("prioritized_bit_identical", True) else ", DIFFERENT bits"
    return f"{w['gpu_us']:.1f}, {r['prioritized_over_widened']:.3f}x ({marked}{same})"


def table(recs):
    lines = ["| model | RO µs | floor µs | widened µs | widened / floor | widened / RO | spread RO, floor, widened | "
             "host µs/call RO, floor, widened | init ms floor, widened | arena floor, widened (plan) | width, "
             "predicted path / serial µs | access params | widened vs floor | rel. err vs compiled | "
             "prioritized µs, / widened (critical kernels) |",
             "|---" * 15 + "|"]
    for r in recs:
        w = r.get("ways")
        if not w:
            lines.append(f"| {r['model']} | FAIL: {r.get('failed', '?')[:100]} |" + " |" * 13)
            continue
        wid = (r.get("report_widened") or {}).get("widen") or {}
        kib = lambda n: f"{n / 1024:.0f} KiB" if isinstance(n, (int, float)) else "—"
        plan = "own plan" if wid.get("own_plan") else "serial plan" if wid.get("kept") else "chain kept"
        path = (f"{wid.get('width', '—')}, {wid.get('predicted_us', 0):.1f} / {wid.get('serial_us', 0):.1f}"
                if wid.get("ran") else f"not run: {wid.get('why_not', '?')}")
        lines.append(
            f"| {r['model']} | {w['reduce-overhead']['gpu_us']:.1f} | {w['pgcc floor']['gpu_us']:.1f} | "
            f"{w['pgcc widened']['gpu_us']:.1f} | {r['widened_over_floor']:.3f}x | {r['widened_over_ro']:.3f}x | "
            f"{w['reduce-overhead']['spread']}, {w['pgcc floor']['spread']}, {w['pgcc widened']['spread']} | "
            f"{w['reduce-overhead']['host_us']:.1f}, {w['pgcc floor']['host_us']:.1f}, "
            f"{w['pgcc widened']['host_us']:.1f} | {r['pgcc floor']['init_ms']:.1f}, {r['pgcc widened']['init_ms']:.1f} | "
            f"{kib(r['pgcc floor']['arena_bytes'])}, {kib(r['pgcc widened']['arena_bytes'])} ({plan}) | {path} | "
            f"{r.get('access_params', '—')} | "
            f"{r['max_err_widened_vs_floor']:g}{' (same bits)' if r['bit_identical'] else ' (DIFFERENT bits)'} | "
            f"{r['max_rel_err_widened_vs_compiled']:.1e} | {prioritized(r)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="names of tests/models/branchy_models.py's MODELS (default: all)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per model")
    ap.add_argument("--out", help="a JSON file for the records")
    ap.add_argument("--cache", help="a folder for the models' Inductor caches, kept between runs")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", help="a folder for the exports (MODEL, MODEL_floor) and the children's logs "
                    "(default: a new temporary folder)")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.rounds, args.iters, args.work)
    from bench import children
    from tests.models import branchy_models
    keys = args.models or list(branchy_models.BRANCHY + branchy_models.CHAINS)
    unknown = [k for k in keys if k not in branchy_models.MODELS]
    if unknown:
        ap.error(f"no such models: {unknown} (there are {sorted(branchy_models.MODELS)})")
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="pgcc-widen-")
    os.makedirs(work, exist_ok=True)
    cache = os.path.abspath(args.cache) if args.cache else os.path.join(work, "inductor")
    recs = []
    for key in keys:  # (one child each, its own Inductor cache)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, key)
        recs += children.run(os.path.abspath(__file__), [key], ["--rounds", str(args.rounds), "--iters",
                                                                str(args.iters), "--work", work], "BENCH",
                             args.timeout, os.path.join(work, "logs"), "widen")
        if args.out:  # after every model: a run cut short keeps what it measured
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(recs, f, indent=1)
    print(f"\nthe children's logs: {os.path.join(work, 'logs')}\n")
    print(table(recs))


if __name__ == "__main__":
    sys.exit(main())

"""Shape buckets side by side: each program of tests/models/buckets_models.py exported once with
all its buckets (pgcc.export(..., buckets=)) and run from C, against
torch.compile(mode="reduce-overhead", dynamic=False) -- CUDA Graph Trees recording one
graph per shape -- at every bucket's size.

    PYTHONPATH=python:. python3 bench/buckets_timing.py [--rounds 5] [--iters 50] [--out DIR] NAME ...

Each program runs in a child process of its own.  Set-up: pgcc's export (all buckets,
verified), then its load (the weights) and init (every bucket's graph), timed, twice:
as one executable graph per bucket (PGRT_BUCKETS=graphs) and as one graph whose SWITCH
node picks the bucket on the device (PGRT_BUCKETS=switch); reduce-overhead's first
three calls at each size, timed per size.  Then `rounds` interleaved rounds, each
timing every (way, size) once: `iters` steps between two CUDA events (GPU time per
step) and the host's perf_counter (host time per call), inputs at one of four
addresses in turn; the table gives medians, the spread (max - min over the median)
and the ratio pgcc / RO per size.  Memory: the weights; what eager steps at the
largest size allocate at their peak beyond them, in a process of their own that runs
nothing else first (its first two calls: the cuBLAS workspace the first makes stays allocated as long as
the process lives, as pgcc's arena does, so it is counted; the table also gives a later
call's peak, which leaves it out); reduce-overhead's private pool segments after
every size ran; pgcc's arena; and the device memory pgcc's first load and init (a
graph per bucket) took as the driver counts it (torch.cuda.mem_get_info before and
after, in 2 MiB steps: its copy of the weights, the arena, modules and graphs).
"pgcc above eager" is by bytes: the weights and pgcc's arena against the weights and
eager's peak with its workspaces.
One JSON line per program on stdout (BENCH {...}), the table at the end,
buckets_bench.json under --out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def eager_child(name):
    """Eager's memory, in a process of its own that runs nothing else first: the
    allocator's peak over two steps at the largest size beyond the weights and inputs
    (the cuBLAS workspace the first step makes stays allocated as long as the process
    lives, as pgcc's arena does, so it is counted).  (Not in the bench's child: eager's
    cuDNN attention there, run before the export, loads a second module with a kernel
    of the same name, which the export then refuses as ambiguous.)"""
    import torch

    from pgcc.shape_buckets import inputs_at
    from tests.models.buckets_models import PROGRAMS

    fn, inputs, _, values, dim, _ = PROGRAMS[name]()
    xs = inputs_at(torch, inputs, dim, inputs[0].shape[dim], values[-1])
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        for _ in range(2):
            fn(*xs)
    torch.cuda.synchronize()
    print(f"EAGER {torch.cuda.max_memory_allocated() - base}", flush=True)


def child(name, rounds, iters, out_dir):
    import torch

    import pgcc
    from pgcc.shape_buckets import inputs_at
    from tests.models.buckets_models import PROGRAMS

    fn, inputs, weights, values, dim, _ = PROGRAMS[name]()
    wbytes = sum(t.numel() * t.element_size() for t in {t.data_ptr(): t for t in weights.values()}.values())
    rec = {"program": name, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "values": values,
           "weights_bytes": wbytes}
    n0 = inputs[0].shape[dim]
    at = {v: [inputs_at(torch, [x * (1 + 0.01 * j) if x.is_floating_point() else x.clone() for x in inputs], dim, n0,
                        v) for j in range(4)] for v in values}

    watch = pgcc.ModuleWatch()
    # pgcc: the export, then the load and init, measured by the driver
    exp = os.path.join(out_dir, name)
    t0 = time.perf_counter()
    res = pgcc.export(fn, inputs, exp, name=name, weights=weights, watch=watch, buckets=values, dim=dim, quiet=True)
    watch.close()
    rec["pgcc_export_s"] = round(time.perf_counter() - t0, 2)
    rec["pgcc_verified"] = str(res.verified)
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    os.environ["PGRT_BUCKETS"] = "graphs"  # (read at init)
    p = pgcc.load(exp)
    torch.cuda.synchronize()
    rec["pgcc_device_bytes"] = free0 - torch.cuda.mem_get_info()[0]
    os.environ["PGRT_BUCKETS"] = "switch"
    p_switch = pgcc.load(exp)
    del os.environ["PGRT_BUCKETS"]
    rec["pgcc_load_ms"], rec["pgcc_init_ms"] = round(p.load_s * 1e3, 2), round(p.init_s * 1e3, 2)
    rec["pgcc_arena_bytes"] = p.arena_bytes

    # reduce-overhead, static shapes: one recording per size
    ro = torch.compile(fn, mode="reduce-overhead", dynamic=False)
    before = pool_segments(torch)
    rec["ro_setup_s"] = {}
    for v in values:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            ro(*at[v][0])
        torch.cuda.synchronize()
        rec["ro_setup_s"][v] = round(time.perf_counter() - t0, 2)
    rec["ro_pool_bytes"] = sum(n for a, n in pool_segments(torch).items() if a not in before)

    with torch.no_grad():
        fn(*at[values[-1]][0])  # (once before: this peak leaves out the workspaces made on a first call)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        fn(*at[values[-1]][0])
    torch.cuda.synchronize()
    rec["eager_peak_bytes"] = torch.cuda.max_memory_allocated() - base

    def stepper(f, v):
        state = {"k": 0}

        def step():
            state["k"] = (state["k"] + 1) % 4
            return f(*at[v][state["k"]])
        return step
    outs = {}

    def pg(prog, v):
        o = prog.new_outputs([values.index(v)])
        outs[(prog, v)] = o
        return stepper(lambda *xs: prog(*xs, out=o), v)
    steps = {("reduce-overhead", v): stepper(ro, v) for v in values}
    steps.update({("pgcc", v): pg(p, v) for v in values})
    steps.update({("pgcc switch", v): pg(p_switch, v) for v in values})
    for s in steps.values():
        for _ in range(5):
            s()
    torch.cuda.synchronize()
    gpu = {k: [] for k in steps}
    host = {k: [] for k in steps}
    for _ in range(rounds):
        for k, s in steps.items():
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            t0 = time.perf_counter()
            for _ in range(iters):
                s()
            host[k].append((time.perf_counter() - t0) / iters * 1e6)
            e1.record()
            e1.synchronize()
            gpu[k].append(e0.elapsed_time(e1) / iters * 1e3)
    rec["sizes"] = {}
    for v in values:
        r = {}
        for w in ("reduce-overhead", "pgcc", "pgcc switch"):
            g = gpu[(w, v)]
            r[w] = {"gpu_us": round(statistics.median(g), 1), "host_us": round(statistics.median(host[(w, v)]), 1),
                    "spread": round((max(g) - min(g)) / statistics.median(g), 3)}
        rec["sizes"][v] = r
    print("BENCH " + json.dumps(rec), flush=True)
    p.close()
    p_switch.close()


def pool_segments(torch):
    """{address: size} of the caching allocator's segments in private pools (CUDA graphs')."""
    return {seg["address"]: seg["total_size"] for seg in torch.cuda.memory_snapshot()
            if tuple(seg.get("segment_pool_id") or (0, 0)) != (0, 0)}


def table(recs):
    mib = lambda b: f"{b / 2**20:.1f}"
    lines = ["| program | size | RO µs/step (spread) | pgcc, a graph per bucket: µs/step (spread) | pgcc / RO | "
             "pgcc, one SWITCH graph: µs/step (spread) | host µs/call: pgcc, SWITCH, RO |", "|---" * 7 + "|"]
    for r in recs:
        for v, s in r.get("sizes", {}).items():
            ro, pg, sw = s["reduce-overhead"], s["pgcc"], s["pgcc switch"]
            lines.append(f"| {r['program']} | {v} | {ro['gpu_us']} ({ro['spread']:.1%}) | {pg['gpu_us']} "
                         f"({pg['spread']:.1%}) | {pg['gpu_us'] / ro['gpu_us']:.2f}x | {sw['gpu_us']} "
                         f"({sw['spread']:.1%}) | {pg['host_us']}, {sw['host_us']}, {ro['host_us']} |")
    lines += ["", "| program | set-up: pgcc export, load + init; RO per size (s) | weights MiB | eager peak MiB: "
              "workspaces in, out | RO pools MiB | pgcc arena MiB | pgcc above eager (bytes) | "
              "pgcc device MiB (driver: load + init) |", "|---" * 8 + "|"]
    for r in recs:
        if "pgcc_device_bytes" not in r:
            lines.append(f"| {r['program']} | failed: {r.get('failed', '?')} |")
            continue
        over = (r["weights_bytes"] + r["pgcc_arena_bytes"]) / (r["weights_bytes"] + r["eager_first_bytes"]) - 1
        lines.append(f"| {r['program']} | {r['pgcc_export_s']} s, {r['pgcc_load_ms'] + r['pgcc_init_ms']:.0f} ms; "
                     f"{', '.join(f'{v}: {s}' for v, s in r['ro_setup_s'].items())} | {mib(r['weights_bytes'])} | "
                     f"{mib(r['eager_first_bytes'])}, {mib(r['eager_peak_bytes'])} | {mib(r['ro_pool_bytes'])} | "
                     f"{mib(r['pgcc_arena_bytes'])} | {over:+.1%} | {mib(r['pgcc_device_bytes'])} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default="build/bench-buckets")
    ap.add_argument("--child")
    ap.add_argument("--eager-child")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        child(a.child, a.rounds, a.iters, a.out)
        return 0
    if a.eager_child:
        eager_child(a.eager_child)
        return 0
    names = a.names or ["mlp", "llama_bf16"]
    recs = []
    for n in names:
        e = subprocess.run([sys.executable, __file__, "--eager-child", n], capture_output=True, text=True)
        eager = next((int(ln[6:]) for ln in e.stdout.splitlines() if ln.startswith("EAGER ")), None)
        r = subprocess.run([sys.executable, __file__, "--child", n, "--rounds", str(a.rounds), "--iters",
                            str(a.iters), "--out", a.out], capture_output=True, text=True)
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH ")), None)
        if line and eager is not None:
            recs.append(dict(json.loads(line[6:]), eager_first_bytes=eager))
            print(line, flush=True)
        else:
            bad = r if not line else e
            recs.append({"program": n, "failed": (bad.stderr.strip().splitlines() or ["?"])[-1][:200]})
            print(bad.stdout[-2000:], bad.stderr[-4000:], flush=True)
    with open(os.path.join(a.out, "buckets_bench.json"), "w") as f:
        json.dump(recs, f, indent=1)
    print(table(recs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

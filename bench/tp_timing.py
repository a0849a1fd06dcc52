"""Tensor parallel on two GPUs, side by side: each program of tests/models/tp_models.py exported per
rank by pgcc and run from C (pgcc.load), against torch.compile(mode="reduce-overhead")
(CUDA Graph Trees, its all-reduces captured in its graph) and torch.compile's default
mode, on the same two GPUs, one process per rank, NVLink multicast off.

    PYTHONPATH=python:. python3 bench/tp_timing.py [--rounds 7] [--iters 50] [--out DIR] [NAME ...]   (default: llama)

Each program runs in a pair of fresh processes (one per rank), which first count the
device memory torch.distributed's NCCL communicator takes (the driver's count over
init_process_group and a barrier).  Then, first of all on the allocator, eager's
memory: the allocator's peak over two eager steps beyond the weights (the first step
included: the cuBLAS workspace it makes there stays allocated as long as the process
lives, so it is eager's memory as pgcc's arena is pgcc's).  Eager runs before the export
in the same process here; bench/buckets_timing.py gives eager a process of its own, since
eager's cuDNN attention there loaded a kernel under a name the compiled program's
shares.  The programs here export after it (their compiled forms take no cuDNN kernel),
but another program might not.  Then pgcc's export (verified), load and init, with the device memory
they took as the driver counts it (its copy of the weights, the arena, modules, graphs
and its own NCCL communicator), and reduce-overhead's first calls and its pool.  Then
`rounds` interleaved rounds, each timing every way once: `iters` steps between two
CUDA events (GPU time per step) and the host's perf_counter (host time per call),
inputs at one of four addresses in turn, every rank timing the same way at once.  The
table gives each rank's medians, spreads (max - min over the median) and pgcc / RO.
One JSON line per rank and program (BENCH {...}) and tp_bench.json under --out.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def bench_program(name, rank, world, rounds, iters, out_dir):
    import torch
    import torch.distributed as dist
    import pgcc
    from tests.models import tp_models

    prog = tp_models.program(name, rank, world)
    weights = {t.data_ptr(): t for t in prog.weights.values()}.values()
    rec = {"program": name, "rank": rank, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "weights_bytes": sum(t.numel() * t.element_size() for t in weights)}

    # eager's memory: first, before anything else in this process made a workspace (the
    # watch before it: the modules eager loads hold kernels the export needs)
    watch = pgcc.ModuleWatch()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    for _ in range(2):
        prog.step(*prog.inputs)
    torch.cuda.synchronize()
    rec["eager_peak_bytes"] = torch.cuda.max_memory_allocated() - base

    exp = os.path.join(out_dir, f"{name}_rank{rank}")
    t0 = time.perf_counter()
    res = pgcc.export(prog.step, prog.inputs, exp, name=name, weights=prog.weights, watch=watch, quiet=True)
    watch.close()
    rec["pgcc_export_s"], rec["pgcc_verified"] = round(time.perf_counter() - t0, 1), str(res.verified)
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    p = pgcc.load(exp, name=name)
    torch.cuda.synchronize()
    rec["pgcc_device_bytes"] = free0 - torch.cuda.mem_get_info()[0]
    rec["pgcc_arena_bytes"] = p.arena_bytes
    rec["pgcc_init_ms"] = round((p.load_s + p.init_s) * 1e3, 1)

    xs = [[x.clone() if not x.is_floating_point() else x * (1 + 0.01 * j) for x in prog.inputs] for j in range(4)]
    ro = torch.compile(prog.step, mode="reduce-overhead")
    before = {s["address"] for s in torch.cuda.memory_snapshot()}
    t0 = time.perf_counter()
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        ro(*xs[0])
    torch.cuda.synchronize()
    rec["ro_setup_s"] = round(time.perf_counter() - t0, 2)
    rec["ro_pool_bytes"] = sum(s["total_size"] for s in torch.cuda.memory_snapshot()
                               if s["address"] not in before and tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0))
    compiled = torch.compile(prog.step)
    outs = p.new_outputs()

    def stepper(f):
        state = {"k": 0}

        def step():
            state["k"] = (state["k"] + 1) % 4
            return f(*xs[state["k"]])
        return step

    def ro_call(*a):
        torch.compiler.cudagraph_mark_step_begin()
        return ro(*a)
    ways = {"reduce-overhead": stepper(ro_call), "pgcc": stepper(lambda *a: p(*a, out=outs)),
            "compile": stepper(compiled)}
    for s in ways.values():
        for _ in range(5):
            s()
    torch.cuda.synchronize()
    gpu = {w: [] for w in ways}
    host = {w: [] for w in ways}
    for _ in range(rounds):
        for w, s in ways.items():
            torch.cuda.synchronize()
            dist.barrier()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            t0 = time.perf_counter()
            for _ in range(iters):
                s()
            host[w].append((time.perf_counter() - t0) / iters * 1e6)
            e1.record()
            e1.synchronize()
            gpu[w].append(e0.elapsed_time(e1) / iters * 1e3)
    rec["ways"] = {w: {"gpu_us": round(statistics.median(gpu[w]), 1), "host_us": round(statistics.median(host[w]), 1),
                       "spread": round((max(gpu[w]) - min(gpu[w])) / statistics.median(gpu[w]), 3)} for w in ways}
    p.close()
    return rec


def rank_main(rank, world, name, rounds, iters, out_dir, port, results):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    torch.zeros(1, device="cuda")  # (the context, before the communicator is counted)
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank),
                            timeout=datetime.timedelta(seconds=180))
    dist.barrier()
    torch.cuda.synchronize()
    comm_bytes = free0 - torch.cuda.mem_get_info()[0]
    try:
        rec = bench_program(name, rank, world, rounds, iters, out_dir)
        rec["torch_comm_bytes"] = comm_bytes
        print("BENCH " + json.dumps(rec), flush=True)
        results[rank] = rec
    except Exception:  # noqa: BLE001 -- the parent reports a rank without results
        import traceback
        traceback.print_exc()
    sys.stdout.flush()
    os._exit(0)  # (as tests/gpu/tp_export.py: no destroy_process_group with captured NCCL work alive)


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("names", nargs="*", default=["llama"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from tests.models.tp_models import run_ranks
    recs = []
    for k, name in enumerate(a.names):  # (a pair of fresh processes per program: eager's workspaces are its own)
        with tempfile.TemporaryDirectory() as tmp:
            results = run_ranks(rank_main, (name, a.rounds, a.iters, tmp, 29517 + k), timeout=400)
            recs += [results[r] for r in sorted(results)]
    with open(os.path.join(a.out, "tp_bench.json"), "w") as f:
        json.dump(recs, f, indent=1)
    if len(recs) != 2 * len(a.names):
        print(f"FAIL: {len(recs)} results of {2 * len(a.names)} (a rank died or hung)")
        return 1
    print("| program | rank | RO µs/step (spread) | pgcc µs/step (spread) | pgcc / RO | compile µs/step | "
          "host µs/call: pgcc, RO |")
    print("|---|---|---|---|---|---|---|")
    for r in sorted(recs, key=lambda r: (r["program"], r["rank"])):
        w = r["ways"]
        print(f"| {r['program']} | {r['rank']} | {w['reduce-overhead']['gpu_us']} ({w['reduce-overhead']['spread']:.1%})"
              f" | {w['pgcc']['gpu_us']} ({w['pgcc']['spread']:.1%}) | "
              f"{w['pgcc']['gpu_us'] / w['reduce-overhead']['gpu_us']:.2f}x | {w['compile']['gpu_us']} | "
              f"{w['pgcc']['host_us']}, {w['reduce-overhead']['host_us']} |")
    print("\n| program | rank | weights | eager peak (workspaces in) | pgcc arena | pgcc over eager (bytes) | "
          "RO pool | pgcc load + init: ms, device memory (driver) | torch's NCCL communicator (driver) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(recs, key=lambda r: (r["program"], r["rank"])):
        over = (r["weights_bytes"] + r["pgcc_arena_bytes"]) / (r["weights_bytes"] + r["eager_peak_bytes"]) - 1
        print(f"| {r['program']} | {r['rank']} | {mib(r['weights_bytes'])} | {mib(r['eager_peak_bytes'])} | "
              f"{mib(r['pgcc_arena_bytes'])} | {over:+.1%} | {mib(r['ro_pool_bytes'])} | {r['pgcc_init_ms']}, "
              f"{mib(r['pgcc_device_bytes'])} | {mib(r['torch_comm_bytes'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

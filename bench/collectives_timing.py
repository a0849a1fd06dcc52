"""An NCCL all-reduce's GPU time inside a CUDA graph, on two GPUs of one host, for the
cost model's collective constants (compiler/cost.c: collective = coll_us + moved bytes
/ (coll_gbps * 1000), moved = 2 (R - 1) / R x bytes for an all-reduce over R ranks).

    PYTHONPATH=python:. python3 bench/collectives_timing.py [--rounds 7] [--out DIR]

One process per rank (NCCL through torch.distributed, NVLink multicast off).  For each
size from 4 KiB to 64 MiB (fp32): 20 all-reduces captured back to back into one CUDA
graph (torch.cuda.graph), the graph replayed 10 times between two CUDA events; the GPU
time per all-reduce is that over 200, its median over `rounds` rounds, sizes
interleaved within a round.  coll_us is the smallest size's time (latency-bound),
coll_gbps the largest size's moved bytes over its time beyond coll_us; the worst miss of
that line over every size is printed.  Prints the table and the fit;
collectives_bench.json under --out.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
PER_GRAPH, REPLAYS = 20, 10


def rank_main(rank, world, rounds, port, results):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank),
                            timeout=datetime.timedelta(seconds=120))
    try:
        graphs = {}
        for n in SIZES:
            x = torch.ones(n // 4, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                dist.all_reduce(x)  # (warm-up: NCCL sets up its channels outside the capture)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(PER_GRAPH):
                    dist.all_reduce(x)
            graphs[n] = (g, x)
        times = {n: [] for n in SIZES}
        for _ in range(rounds):
            for n, (g, x) in graphs.items():
                torch.cuda.synchronize()
                dist.barrier()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(REPLAYS):
                    g.replay()
                e1.record()
                e1.synchronize()
                times[n].append(e0.elapsed_time(e1) * 1e3 / (PER_GRAPH * REPLAYS))
        g0, x0 = graphs[SIZES[0]]
        x0.fill_(1.0)
        g0.replay()  # 20 sums over 2 ranks of ones: 2^20 (a check that the graph reduces)
        torch.cuda.synchronize()
        results[rank] = {"times": {n: t for n, t in times.items()}, "check": x0[0].item(),
                         "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                         "nccl": ".".join(map(str, torch.cuda.nccl.version()))}
    except Exception:  # noqa: BLE001 -- the parent reports a rank without results
        import traceback
        traceback.print_exc()
    sys.stdout.flush()
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default="build/bench")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from tests.models.tp_models import run_ranks
    world = 2
    res = run_ranks(rank_main, (a.rounds, 29541), world=world, timeout=300)
    if len(res) != world:
        print(f"FAIL: {len(res)} of {world} ranks gave results")
        return 1
    want = float(world ** PER_GRAPH)
    if any(r["check"] != want for r in res.values()):
        print(f"FAIL: the captured all-reduces gave {[r['check'] for r in res.values()]}, not {want}")
        return 1
    print(f"{res[0]['gpu']} x {world}, torch {res[0]['torch']}, NCCL {res[0]['nccl']}; all-reduce of fp32 in a "
          f"CUDA graph, GPU time per all-reduce (median of {a.rounds} rounds; spread over rounds)")
    print("| bytes | moved bytes | rank 0 µs (spread) | rank 1 µs (spread) |")
    print("|---|---|---|---|")
    pts = []
    for n in SIZES:
        moved = 2 * (world - 1) / world * n
        cells = []
        for r in range(world):
            t = res[r]["times"][n]
            med = statistics.median(t)
            cells.append(f"{med:.1f} ({(max(t) - min(t)) / med:.1%})")
            pts.append((moved, med))
        print(f"| {n} | {int(moved)} | {' | '.join(cells)} |")
    # two points: the latency is the smallest size's time (its bytes take well under a
    # microsecond at any NVLink bandwidth), the bandwidth the largest size's beyond it
    lat = statistics.fmean(y for x, y in pts if x == pts[0][0])
    big = max(x for x, _ in pts)
    t_big = statistics.fmean(y for x, y in pts if x == big)
    coll_us, coll_gbps = lat, big / (t_big - lat) / 1000.0
    worst = max(abs(coll_us + x / (coll_gbps * 1000.0) - y) / y for x, y in pts)
    print(f"fit: coll_us {coll_us:.2f}  coll_gbps {coll_gbps:.1f}  (worst relative miss {worst:.1%})")
    with open(os.path.join(a.out, "collectives_bench.json"), "w") as f:
        json.dump({"results": res, "coll_us": coll_us, "coll_gbps": coll_gbps, "worst_miss": worst}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

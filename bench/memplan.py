#!/usr/bin/env python3
"""The memory plan's placements against the floor (docs/benchmarks.md, "Memory
plan"): random one-stream programs shaped like an Inductor forward pass, each node
writing a new intermediate and reading two live ones, most intermediates dying within
a few nodes and some living to the end; sizes either mixed (bytes to 16 MiB, as an
export whose regions are split into the allocations they use) or whole MiB (as
activations).  For each, `pgcc --report=json` gives the floor (the most bytes live at
once), the arena in time order, largest first and longest-lived first, and the one
kept (the smallest).  pgcc tries the ways in that order and stops at one that reaches
the floor; a way's cell is over the programs it was tried on (how many, after the
slash, where fewer than all).  The figures are
bytes, not times: the same on every machine.

    python3 bench/memplan.py [--seeds N]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PGCC = os.path.join(TOP, "build", "pgcc")


def program(seed, nodes, sizes):
    """A .graph text: `nodes` kernels in one chain over random intermediates."""
    r = random.Random(seed)
    bufs, uses, live = [], [], []  # live: [name, nodes it has left]
    for _ in range(nodes):
        if sizes == "mixed":
            size = r.choice([r.randint(1, 4096), r.randint(1, 1 << 16), r.randint(1 << 16, 1 << 22),
                             r.randint(1 << 20, 1 << 24)])
        else:
            size = r.choice([1, 3, 4]) * r.choice([1, 1, 2]) << 20
        name = f"t{len(bufs)}"
        bufs.append((name, size))
        reads = [b for b, _ in r.sample(live, min(2, len(live)))]
        uses.append(([name] + reads + [name, name])[:3])
        live = [[b, n - 1] for b, n in live if n > 1]
        live.append([name, r.choice([1, 1, 2, 3, 5, 20]) if r.random() < 0.9 else nodes])
    text = ['pgcc 1;', 'kernel k symbol "k" { param 0 8 ptr; param 8 8 ptr; param 16 8 ptr; }']
    text += [f"buffer {b} size {s} role intermediate;" for b, s in bufs]
    text.append("graph g {")
    for i, args in enumerate(uses):
        text.append(f" node n{i} kernel k args [{', '.join(args)}];")
        if i:
            text.append(f" n{i - 1} -> n{i};")
    text.append("}")
    return "\n".join(text) + "\n"


def plan(path):
    r = subprocess.run([PGCC, "--report=json", path], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"pgcc failed on {path}:\n{r.stderr}")
    j = json.loads(r.stdout)
    return j["live_bytes"], j["placements"], j["arena_bytes"], j["arena_placement"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="programs per row (default 10)")
    args = ap.parse_args()
    if not os.path.exists(PGCC):
        sys.exit("build pgcc first: make build/pgcc")
    ways = ("time", "size", "life")
    print("| sizes | nodes | programs | time order / floor | largest first / floor | longest-lived first / floor "
          "| kept / floor | kept: time, size, life |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.graph")
        for sizes in ("mixed", "MiB"):
            for nodes in (50, 400, 2000):
                ratios = {k: [] for k in ways + ("kept",)}
                kept_by = {k: 0 for k in ways}
                for seed in range(args.seeds):
                    with open(path, "w") as f:
                        f.write(program(seed, nodes, sizes))
                    floor, placed, kept, way = plan(path)
                    for k in ways:
                        if placed[k] is not None:
                            ratios[k].append(placed[k] / floor)
                    ratios["kept"].append(kept / floor)
                    kept_by[way] += 1
                cell = {k: (f"{statistics.median(v):.3f} ({max(v):.3f})" if v else "not tried")
                        + (f" / {len(v)}" if 0 < len(v) < args.seeds else "") for k, v in ratios.items()}
                print(f"| {sizes} | {nodes} | {args.seeds} | {cell['time']} | {cell['size']} | {cell['life']} | "
                      f"{cell['kept']} | {', '.join(str(kept_by[k]) for k in ways)} |")
    print("\n(each cell: the median over the programs, the largest in brackets)")

if __name__ == "__main__":
    main()

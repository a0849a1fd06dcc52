#!/usr/bin/env python3
"""What widening costs in arena memory (docs/compiler.md, "Planning"): for each export's
.graph, `pgcc --report=json` as pgcc plans it by default (the root graph widened where
the cost model keeps it) and with --keep-order (the captured chain: the serial plan; it
skips the rename and the schedule too, so the JSON also keeps widening's own two plans),
side by side -- whether widening was kept, its width, the root graph's predicted time widened
and serial, both arenas and their ratio.  Bytes and predictions, not timings: the
same on every machine, no GPU needed, only the exports (tests/gpu/zoo_export.py
--keep-graphs writes them under OUT/graphs/MODEL).

    python3 bench/widen_arena.py [--json OUT.json] [--pgcc PATH] GRAPH_OR_DIR ...

A directory stands for every .graph under it.  Exits 1 where pgcc fails on a graph.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PGCC = os.path.join(TOP, "build", "pgcc")


def report(graph, *flags, pgcc=PGCC):
    """pgcc --report=json of graph with flags, parsed."""
    r = subprocess.run([pgcc, "--report=json", *flags, graph], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"pgcc {' '.join(flags)} {graph}: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def row(graph, pgcc=PGCC):
    """One graph's record: widened (default) against the serial plan (--keep-order)."""
    wide, serial = report(graph, pgcc=pgcc), report(graph, "--keep-order", pgcc=pgcc)
    w = wide.get("widen") or {}
    kept = bool(w.get("kept"))
    return {"graph": os.path.relpath(graph), "nodes": wide.get("nodes"), "widen_ran": bool(w.get("ran")),
            "widen_kept": kept, "why_not": None if kept else w.get("why_not"), "width": w.get("width"),
            "arena_serial": serial["arena_bytes"], "arena_default": wide["arena_bytes"],
            "ratio": wide["arena_bytes"] / serial["arena_bytes"] if serial["arena_bytes"] else 1.0,
            "path_us": w.get("predicted_us"), "serial_us": w.get("serial_us"),
            # widening's own two plans (after the rename and the schedule, which --keep-order also skips)
            "widen_serial_arena": w.get("serial_arena_bytes"), "widen_arena": w.get("arena_bytes")}


def graphs_of(paths):
    out = []
    for p in paths:
        out += sorted(glob.glob(os.path.join(p, "**", "*.graph"), recursive=True)) if os.path.isdir(p) else [p]
    return out


def kib(n):
    return f"{n / 1024:.0f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", help="write the records here")
    ap.add_argument("--pgcc", default=PGCC, help="the pgcc binary (default: build/pgcc)")
    args = ap.parse_args(argv)
    rows, failed = [], 0
    for g in graphs_of(args.paths):
        try:
            rows.append(row(g, args.pgcc))
        except (RuntimeError, ValueError, KeyError) as e:
            print(f"{g}: {e}", file=sys.stderr)
            failed += 1
    print("| graph | nodes | widened | width | arena serial | arena default | default / serial | root graph "
          "predicted µs: widened (serial) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['nodes']} | {'yes' if r['widen_kept'] else 'no: ' + str(r['why_not'])[:60]} | "
              f"{r['width'] or '-'} | {kib(r['arena_serial'])} | {kib(r['arena_default'])} | {r['ratio']:.3f}x | "
              f"{r['path_us'] if r['widen_kept'] else '-'} ({r['serial_us'] if r['widen_ran'] else '-'}) |")
    if rows:
        worst = max(rows, key=lambda r: r["ratio"])
        print(f"\n{len(rows)} graphs, {sum(r['widen_kept'] for r in rows)} widened; the largest arena against the "
              f"serial plan's: {worst['ratio']:.3f}x ({worst['graph']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

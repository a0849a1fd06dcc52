#!/usr/bin/env python3
"""docs/results.md from the JSON the GPU commands write, and nothing else.

    python3 tools/results_page.py [--dir docs/results] [--out docs/results.md]
    python3 tools/results_page.py --provenance DIR/provenance.json --for zoo.json --command "CMD"
                                                          (on the GPU machine, after CMD)

It reads, from --dir:

- zoo.json: `PYTHONPATH=python:. python3 tests/gpu/zoo_export.py --out DIR` (a list of records: model, status
  PASS/FAIL/CRASH/TIMEOUT, detail, seconds, nodes {kind: count}, arena_bytes, ...);
- zoo_bench.json: `PYTHONPATH=python:. python3 bench/zoo_timing.py --out DIR` (a list of records: model, gpu,
  torch, weights_bytes, ways {way: {gpu_us, host_us, loop_us, spread, gpu_us_rounds,
  setup_s}}, eager_peak_bytes, eager_kept_bytes, ro_pool_bytes, pgcc_arena_bytes,
  pgcc_export_s, pgcc_load_ms, pgcc_init_ms and pgcc_init_{warm,serial,copied,unbuilt}_ms,
  or failed / pgcc_failed);
- provenance.json: where they were measured: {"gpu", "driver", "cuda", "torch", "triton",
  "date", "commit", "commands": {"zoo.json": CMD, "zoo_bench.json": CMD}}, and per file
  overrides under "by_file": {"zoo.json": {...}}.  `--provenance FILE --for NAME --command CMD`
  writes it on the machine that ran CMD (nvidia-smi, torch, triton, git), keeping the
  other files' commands of a FILE already there.

A file that is missing makes its sections say "not measured"; every number on the page
comes from the JSON.  Pure Python, no torch: tests/python/test_results_page.py.
"""
import argparse
import json
import os
import subprocess
import sys

__all__ = ["load", "render", "main", "provenance_here"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FILES = ("zoo.json", "zoo_bench.json", "provenance.json")
WAYS = ("eager", "compile", "reduce-overhead", "manual capture", "pgcc")
INITS = (("cold", "pgcc_init_ms"), ("warm", "pgcc_init_warm_ms"), ("libraries serial", "pgcc_init_serial_ms"),
         ("serial, copied", "pgcc_init_copied_ms"), ("own kernels compiled", "pgcc_init_unbuilt_ms"))
REGENERATE = "python3 tools/results_page.py --dir docs/results --out docs/results.md"


def load(directory):
    """{file name: parsed JSON or None} for the files this page reads; a file that is
    there but cannot be read is an error naming it (ValueError)."""
    got = {}
    for name in FILES:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            got[name] = None
            continue
        try:
            with open(path) as f:
                got[name] = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None
    for name in ("zoo.json", "zoo_bench.json"):
        if got[name] is not None and not (isinstance(got[name], list)
                                          and all(isinstance(r, dict) and "model" in r for r in got[name])):
            raise ValueError(f"{os.path.join(directory, name)}: expected a list of records with a 'model'")
    if got["provenance.json"] is not None and not isinstance(got["provenance.json"], dict):
        raise ValueError(f"{os.path.join(directory, 'provenance.json')}: expected an object")
    return got


def _cell(x):
    return "—" if x is None or x == "" else str(x).replace("|", "\\|").replace("\n", " ")


def _us(x):
    return f"{x:.1f}" if isinstance(x, (int, float)) else "—"


def _mib(x):
    return f"{x / 2**20:.2f}" if isinstance(x, (int, float)) else "—"


def _ratio(a, b):
    return f"{a / b:.2f}x" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "—"


def _provenance(prov, name, records_say=None):
    """The lines that say where a file's figures come from; what is not known says so."""
    p = dict(prov or {})
    p.update((p.get("by_file") or {}).get(name) or {})
    command = (p.get("commands") or {}).get(name) or p.get("command")
    fields = [("GPU", "gpu"), ("driver", "driver"), ("CUDA", "cuda"), ("PyTorch", "torch"), ("Triton", "triton"),
              ("date", "date"), ("commit", "commit")]
    line = "; ".join(f"{label} {p.get(key) if p.get(key) else 'not recorded'}" for label, key in fields)
    out = [f"Measured with: {line}.", "", "Command: " + (f"`{command}`" if command else "not recorded") + "."]
    for key, label in (("gpu", "GPU"), ("torch", "PyTorch")):
        seen = sorted({str(r[key]) for r in records_say or [] if r.get(key)})
        if seen and (p.get(key) is None or seen != [str(p.get(key))]):
            out += ["", f"The records themselves name {label} " + ", ".join(seen) + "."]
    return out


def _zoo(recs, prov):
    out = ["## Export and verification, per model", "",
           "Each model of tests/models/zoo_models.py exported by `pgcc.export` and verified against the compiled "
           "program (tests/gpu/zoo_export.py).", ""]
    if recs is None:
        return out + ["Not measured yet: docs/results/zoo.json is absent."]
    out += _provenance(prov, "zoo.json", recs) + [""]
    passed = sum(r.get("status") == "PASS" for r in recs)
    out += [f"{passed} of {len(recs)} models pass.", "",
            "| model | result | nodes | arena MiB | export s | detail |", "|---|---|---|---|---|---|"]
    for r in recs:
        nodes = r.get("nodes")
        n = sum(nodes.values()) if isinstance(nodes, dict) else None
        detail = str(r.get("detail") or "")
        out.append(f"| {_cell(r['model'])} | {_cell(r.get('status'))} | {_cell(n)} | {_mib(r.get('arena_bytes'))} | "
                   f"{_cell(r.get('seconds'))} | {_cell(detail[:200] + ('…' if len(detail) > 200 else ''))} |")
    return out


def _round_ratios(w, a, b):
    """min-max over the rounds of way a's GPU time over way b's, the same round's."""
    ra, rb = (w.get(a) or {}).get("gpu_us_rounds"), (w.get(b) or {}).get("gpu_us_rounds")
    if not ra or not rb or len(ra) != len(rb) or not all(rb):
        return "—"
    rs = [x / y for x, y in zip(ra, rb)]
    return f"{min(rs):.2f}-{max(rs):.2f}x"


def _bench(recs, prov):
    out = ["## Step time per way", "",
           "bench/zoo_timing.py: each model one step eagerly, under torch.compile, under reduce-overhead (RO), as a "
           "manual capture of the compiled program replayed (the floor: the same kernels in one graph, nothing "
           "moving) and through pgcc from C, interleaved round by round.  GPU µs per step: the median over the "
           "rounds; spread: (max - min) / median of the rounds' GPU times; round ratios: pgcc over RO, round by "
           "round, lowest and highest.", ""]
    if recs is None:
        none = ["Not measured yet: docs/results/zoo_bench.json is absent."]
        return (out + none + ["", "## Host time per call", ""] + none + ["", "## Memory", ""] + none
                + ["", "## Set-up and init", ""] + none)
    out += _provenance(prov, "zoo_bench.json", recs) + [""]
    out += ["| model | eager | compile | RO | manual capture | pgcc | pgcc / RO | pgcc / RO by round | pgcc / floor | "
            "spread pgcc (RO) |", "|---" * 10 + "|"]
    failed = []
    for r in recs:
        w = r.get("ways") or {}
        g = {k: (w.get(k) or {}).get("gpu_us") for k in WAYS}
        if r.get("failed") or r.get("pgcc_failed"):
            failed.append((r["model"], r.get("failed") or r.get("pgcc_failed")))
        if not w:
            continue
        out.append(f"| {_cell(r['model'])} | " + " | ".join(_us(g[k]) for k in WAYS) + " | "
                   f"{_ratio(g['pgcc'], g['reduce-overhead'])} | {_round_ratios(w, 'pgcc', 'reduce-overhead')} | "
                   f"{_ratio(g['pgcc'], g['manual capture'])} | {_cell((w.get('pgcc') or {}).get('spread'))} "
                   f"({_cell((w.get('reduce-overhead') or {}).get('spread'))}) |")
    if failed:
        out += ["", "Failed:", ""] + [f"- {_cell(m)}: {_cell(str(why)[:300])}" for m, why in failed]
    pdl = [r for r in recs if "pgcc, full edges" in (r.get("ways") or {})]
    if pdl:  # bench/zoo_timing.py --pdl: pgcc's programmatic edges kept, and made full (PGRT_PDL=off)
        out += ["", "With `--pdl`, pgcc's export timed twice in the same rounds: its programmatic edges kept, and "
                "made full ones (PGRT_PDL=off).", "",
                "| model | programmatic edges | pgcc | pgcc, full edges | kept / full |", "|---" * 5 + "|"]
        for r in pdl:
            g = {k: v.get("gpu_us") for k, v in r["ways"].items()}
            out.append(f"| {_cell(r['model'])} | {_cell(r.get('pgcc_programmatic_edges'))} | {_us(g.get('pgcc'))} | "
                       f"{_us(g.get('pgcc, full edges'))} | {_ratio(g.get('pgcc'), g.get('pgcc, full edges'))} |")
    out += ["", "## Host time per call", "",
            "µs of the host's own time per call, from an idle GPU (host_us), and per call in the timed loop "
            "(loop_us, which grows towards the GPU time once the host waits for room in the launch queue).", "",
            "| model | " + " | ".join(WAYS) + " | pgcc in the loop | RO in the loop |", "|---" * 8 + "|"]
    for r in recs:
        w = r.get("ways") or {}
        if w:
            out.append(f"| {_cell(r['model'])} | " + " | ".join(_us((w.get(k) or {}).get("host_us")) for k in WAYS)
                       + f" | {_us((w.get('pgcc') or {}).get('loop_us'))} | "
                       f"{_us((w.get('reduce-overhead') or {}).get('loop_us'))} |")
    out += ["", "## Memory", "",
            "MiB: the weights; what an eager step allocates at its peak beyond them, and what eager's first call "
            "made and keeps (libraries' workspaces); the private pools reduce-overhead made; pgcc's arena.", "",
            "| model | weights | eager peak | eager kept | RO pools | pgcc arena |", "|---" * 6 + "|"]
    for r in recs:
        out.append(f"| {_cell(r['model'])} | " + " | ".join(
            _mib(r.get(k)) for k in ("weights_bytes", "eager_peak_bytes", "eager_kept_bytes", "ro_pool_bytes",
                                     "pgcc_arena_bytes")) + " |")
    out += ["", "## Set-up and init", "",
            "pgcc's export with its verification (s), `pgcc.load` (ms) and `NAME_init` (ms, the median of the "
            "rounds): cold (libpgrt's cache of compiled cubins empty), warm (what the cold init kept), the "
            "libraries' fatbins loaded one by one (PGRT_LIBLOAD=serial), and copied by the driver first "
            "(serial,copy), and libpgrt's own kernels compiled by NVRTC (PGRT_PREBUILT=off).  Set-up of the "
            "other ways: their first three calls (s).", "",
            "| model | export s | load ms | " + " | ".join(f"init {n}" for n, _ in INITS)
            + " | set-up s: eager, compile, RO, manual capture |", "|---" * (4 + len(INITS)) + "|"]
    for r in recs:
        w = r.get("ways") or {}
        setups = ", ".join(_cell((w.get(k) or {}).get("setup_s")) for k in WAYS[:4])
        out.append(f"| {_cell(r['model'])} | {_cell(r.get('pgcc_export_s'))} | {_cell(r.get('pgcc_load_ms'))} | "
                   + " | ".join(_cell(r.get(k)) for _, k in INITS) + f" | {setups} |")
    return out


def render(data):
    """The page's text from load()'s result."""
    prov = data.get("provenance.json")
    head = ["# Results", "",
            "Generated by tools/results_page.py from the JSON in docs/results/ (zoo.json, zoo_bench.json, "
            "provenance.json); do not edit by hand.  To regenerate after a GPU run:", "",
            f"    {REGENERATE}", "",
            "How to run each benchmark: docs/benchmarks.md.", ""]
    if prov is None:
        head += ["docs/results/provenance.json is absent: where the figures below were measured is not recorded.",
                 ""]
    body = _zoo(data.get("zoo.json"), prov) + [""] + _bench(data.get("zoo_bench.json"), prov)
    return "\n".join(head + body) + "\n"


def provenance_here(command, directory=ROOT, commit=None):
    """Where this machine would measure: the GPU and driver (nvidia-smi), CUDA, torch and
    Triton (imported when installed), the UTC date and the commit (given, else the
    checkout's: a tree copied to a GPU machine without its history can name a stale one)."""
    import datetime

    def run(*cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=directory, timeout=60)
            return r.stdout.strip() if r.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            return None
    smi = run("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader")
    gpu, driver = ([s.strip() for s in smi.splitlines()[0].split(",", 1)] + [None])[:2] if smi else (None, None)
    p = {"gpu": gpu, "driver": driver, "cuda": None, "torch": None, "triton": None,
         "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
         "commit": commit or run("git", "rev-parse", "HEAD"), "command": command}
    try:
        import torch
        p["torch"], p["cuda"] = torch.__version__, torch.version.cuda
    except ImportError:
        pass
    try:
        import triton
        p["triton"] = triton.__version__
    except ImportError:
        pass
    return p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(ROOT, "docs", "results"), help="the JSON's folder")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "results.md"), help="the page ('-': stdout)")
    ap.add_argument("--provenance", metavar="FILE", help="write this machine's provenance to FILE instead")
    ap.add_argument("--command", help="with --provenance: the command that measured")
    ap.add_argument("--for", dest="for_file", choices=FILES[:2], help="with --provenance: the file CMD wrote")
    ap.add_argument("--commit", help="with --provenance: the commit measured (default: git rev-parse HEAD)")
    args = ap.parse_args(argv)
    if args.provenance:
        p = {}
        if os.path.exists(args.provenance):
            with open(args.provenance) as f:
                p = json.load(f)
        here = provenance_here(args.command, commit=args.commit)
        if args.for_file:
            p.setdefault("commands", {})[args.for_file] = here.pop("command")
        p.update(here)
        with open(args.provenance, "w") as f:
            json.dump(p, f, indent=1)
            f.write("\n")
        return 0
    try:
        text = render(load(args.dir))
    except ValueError as e:
        print(f"results_page: error: {e}", file=sys.stderr)
        return 1
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

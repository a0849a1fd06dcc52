"""The zoo on a GPU: export every model of tests/models/zoo_models.py with pgcc.export (which
verifies the export: pgcc, C, run at new addresses, compared with PyTorch), and
tabulate what exported and verified and what stands in the way.

    PYTHONPATH=python:. python3 tests/gpu/zoo_export.py [--jobs N] [--timeout S] [--repeat R]
        [--out DIR [--keep-graphs]] [--cache DIR] [PATTERN ...]

Each model runs in a child process of its own (a fresh Inductor cache, a crash or
hang cannot take the others with it), N at a time.  A child prints one JSON line:
the model, PASS or FAIL, the seconds it took, the verification's max error or the
first lines of what stopped the export; for an export, its node kinds, its arena, and
what became of capture A's memory (regions split into slots, kept whole or cut, or all
undone after a failed verification: export.place_intermediates).  The table goes to stdout and, with --out,
zoo.json and one log per model there.  --repeat R exports each model R times, in
separate children (an export that passes only sometimes -- stale bytes in parameter
memory differ from process to process -- is a failure).  --cache DIR keeps each
model's Inductor cache under DIR/MODEL (bench/zoo_timing.py --cache reads the same folders);
without it every child starts from an empty one.  With TORCHINDUCTOR_ENABLE_PDL=1 in
the environment, Inductor builds its Triton kernels for programmatic dependent launch,
and the exports keep the programmatic edges they were captured with (the JSON counts
them).  --keep-graphs copies each export's .graph, report and kernels to DIR/graphs/MODEL,
with its weights files as sparse copies (header, then zeros: `tar -S` packs them small), for
pgcc to plan and report on again without a GPU.  Exit status 1 unless every run passed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def child(key, out_dir):
    """Runs in the child: build, export with verification, one JSON line on stdout."""
    import torch

    import pgcc
    from tests.models import zoo_models

    t0 = time.time()
    rec = {"model": key}
    watch = pgcc.ModuleWatch()  # before anything runs: library kernels outside .nv_fatbin
    try:
        fn, inputs, weights = zoo_models.ZOO[key]()
        res = pgcc.export(fn, tuple(inputs), os.path.join(out_dir, "export"), name=key.replace(":", "_"),
                          weights=weights, verify=True, quiet=False, watch=watch)
        rec.update(status="PASS", detail=str(getattr(res, "verified", "") or ""),
                   programmatic_edges=(res.report or {}).get("programmatic_edges", 0),
                   nodes=node_kinds(os.path.join(out_dir, "export", key.replace(":", "_") + ".graph")),
                   **memory(pgcc, res, os.path.join(out_dir, "export"), key.replace(":", "_")))
    except Exception as e:  # noqa: BLE001 -- the table reports every failure
        import traceback
        traceback.print_exc()
        lines = [l for l in f"{type(e).__name__}: {e}".splitlines() if l.strip()]
        rec.update(status="FAIL", detail=" | ".join(lines[:6])[:900])
        if str(e).startswith("verify"):
            rec["diagnosis"] = diagnose(torch, pgcc, os.path.join(out_dir, "export"), key.replace(":", "_"), fn,
                                        inputs)
    finally:
        watch.close()
    rec["seconds"] = round(time.time() - t0, 1)
    rec["torch"] = torch.__version__
    print("ZOO " + json.dumps(rec), flush=True)


def memory(pgcc, res, export_dir, name):
    """The export's arena (bytes), and what became of capture A's regions
    (export.place_intermediates): split into how many slots, of how many bytes against
    the regions' own, which were kept whole and why, whether a failed verification
    undid it all, where the nodes were placed in the allocator's trace from (seen or
    inferred), and which outputs are written in place instead of copied out at the end."""
    done = (res.report or {}).get("intermediates") or {}
    # (after an undone split, the program verified is the one built apart: the first is loaded)
    p = pgcc.load(export_dir, name=name, build_dir=os.path.join(export_dir, "build-whole") if done.get("undone") else None)
    try:
        arena = p.arena_bytes
    finally:
        p.close()
    split = done.get("split", {})
    # pgcc's memory plan: the arena's floor (the most bytes live at once) and which placement won
    from pgcc import toolchain
    r = subprocess.run([toolchain.find_pgcc(), "--report=json", os.path.join(export_dir, name + ".graph")],
                       capture_output=True, text=True)
    plan = json.loads(r.stdout) if r.returncode == 0 else {"arena_placement": f"(pgcc --report failed: {r.stderr[:200]})"}
    sched = plan.get("schedule") or {}
    return {"arena_bytes": arena, "live_bytes": plan.get("live_bytes"), "placement": plan.get("arena_placement"),
            "moved": sched.get("moved"), "live_bytes_captured": sched.get("live_bytes_captured"),
            "regions_split": len(split), "slots": sum(x[1] for x in split.values()),
            "region_bytes": sum(x[0] for x in split.values()), "slot_bytes": sum(x[2] for x in split.values()),
            "regions_whole": done.get("whole", {}), "regions_cut": done.get("cut", {}),
            "regions_undone": done.get("undone"), "regions_timed": done.get("timed"),
            "outputs_in_place": done.get("in_place", [])}


def node_kinds(path):
    """{kind: count} of an export's .graph nodes (kernel, memset, memcpy, ...)."""
    kinds = {}
    with open(path) as f:
        for line in f:
            w = line.split(None, 3)
            if len(w) > 2 and w[0] == "node":
                kinds[w[2]] = kinds.get(w[2], 0) + 1
    return kinds


def diagnose(torch, pgcc, export_dir, name, fn, inputs):
    """After a failed verification: what the export found (its report), and the error of
    the C program against the callable with the arena filled with zeros and with 0xff
    bytes (the same error twice: wrong data; different: a node reads memory nothing in
    the call wrote), and with PGCC_DIAGNOSE=1 set, the first node whose buffers differ
    as captured and as exported (pgcc/diagnose.py)."""
    from pgcc.verify_export import rel_err
    out = {}
    try:
        with open(os.path.join(export_dir, name + ".export.json")) as f:
            rep = json.load(f)
        out["report"] = {k: rep.get(k) for k in ("nodes", "relocations", "packed_arguments", "address_bits_differ",
                                                "allocations", "host_memory_read", "library_candidates")}
        out["dontcare_nodes"] = [d["node"] for d in rep.get("dontcare", [])]
        if rep.get("diagnosis"):  # PGCC_DIAGNOSE: the nodes one by one, as captured and as exported
            out["node_by_node"] = rep["diagnosis"]
        if getattr(fn, "train", False) is True:
            return out  # (another call would take a step)
        p = pgcc.load(export_dir, name=name)
        with torch.no_grad():
            ref = fn(*inputs)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        for byte in (0x00, 0xFF):
            p.fill_arena(byte)
            got = p(*inputs)
            got = got[0] if isinstance(got, tuple) else got
            torch.cuda.synchronize()
            out[f"arena 0x{byte:02x}"] = rel_err(got, ref)
        p.close()
    except Exception as e:  # noqa: BLE001 -- a diagnosis never hides the failure it explains
        out["diagnosis failed"] = f"{type(e).__name__}: {e}"[:300]
    return out


def keep_graph(export_dir, name, dest):
    """The export's .graph, report and kernels copied to dest, with each .safetensors file
    as a sparse copy (its header, then zeros to its size): what pgcc needs to read, plan
    and report on the export again without a GPU, the weights at a few kilobytes on disk
    (tar -S)."""
    import shutil
    os.makedirs(dest, exist_ok=True)
    for f in sorted(os.listdir(export_dir)):
        src = os.path.join(export_dir, f)
        if f in (name + ".graph", name + ".export.json"):
            shutil.copyfile(src, os.path.join(dest, f))
        elif f == "kernels":
            shutil.copytree(src, os.path.join(dest, f), dirs_exist_ok=True)
        elif f.endswith(".safetensors"):
            with open(src, "rb") as i, open(os.path.join(dest, f), "wb") as o:
                head = i.read(8)
                o.write(head + i.read(int.from_bytes(head, "little")))
                o.truncate(os.path.getsize(src))


def run_one(run, args, root_out):
    key, label = run.split("#")[0], run.replace(":", "_").replace("#", "_run")
    out = os.path.join(root_out, label)
    os.makedirs(out, exist_ok=True)
    cache = os.path.join(os.path.abspath(args.cache), key.replace(":", "_")) if args.cache else os.path.join(out, "inductor")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONUNBUFFERED="1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, __file__, "--child", key, "--child-out", out], env=env,
                           capture_output=True, text=True, timeout=args.timeout)
        log = p.stdout + p.stderr
        recs = [json.loads(l[4:]) for l in p.stdout.splitlines() if l.startswith("ZOO ")]
        rec = recs[-1] if recs else {"model": run, "status": "CRASH",
                                     "detail": f"exit {p.returncode}: " + " | ".join(log.strip().splitlines()[-3:])}
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        rec = {"model": run, "status": "TIMEOUT", "detail": f"over {args.timeout} s"}
    rec["model"] = run
    rec.setdefault("seconds", round(time.time() - t0, 1))
    if args.out:
        with open(os.path.join(args.out, label + ".log"), "w") as f:
            f.write(log)
        export_dir, name = os.path.join(out, "export"), key.replace(":", "_")
        if args.keep_graphs and os.path.exists(os.path.join(export_dir, name + ".graph")):
            keep_graph(export_dir, name, os.path.join(args.out, "graphs", label))
    print(f"{rec['status']:8} {run:32} {rec['seconds']:7.1f} s  {rec.get('detail', '')[:160]}", flush=True)
    if "arena_bytes" in rec:
        print(f"         arena {rec['arena_bytes']} bytes (floor {rec.get('live_bytes')}, placed by "
              f"{rec.get('placement')}; {rec.get('moved')} nodes moved up, floor as captured "
              f"{rec.get('live_bytes_captured')}); {rec['regions_split']} regions ({rec['region_bytes']} "
              f"bytes) split into {rec['slots']} slots ({rec['slot_bytes']} bytes); whole: "
              f"{json.dumps(rec['regions_whole'])[:300]}; cut: {json.dumps(rec['regions_cut'])[:200]}; "
              f"nodes timed: {rec.get('regions_timed')}"
              + (f"; UNDONE: {rec['regions_undone'][:300]}" if rec["regions_undone"] else ""), flush=True)
    if "diagnosis" in rec:
        print(f"         diagnosis: {json.dumps(rec['diagnosis'])[:1500]}", flush=True)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", help="fnmatch patterns over 'family:variant' (default: all)")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=420)
    ap.add_argument("--repeat", type=int, default=1, help="export each model this many times")
    ap.add_argument("--cache", help="a folder for the models' Inductor caches, kept between runs")
    ap.add_argument("--out", help="a folder for zoo.json and the per-model logs")
    ap.add_argument("--keep-graphs", action="store_true",
                    help="also copy each export's .graph, report, kernels and sparse weights files to OUT/graphs/MODEL")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.child_out)
    from tests.models import zoo_models
    keys = zoo_models.select(args.patterns)
    if args.repeat > 1:
        keys = [f"{k}#{r + 1}" for r in range(args.repeat) for k in keys]
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pgcc-zoo-")
    print(f"zoo: {len(keys)} models, {args.jobs} at a time, in {work}", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        recs = list(pool.map(lambda k: run_one(k, args, work), keys))
    passed = sum(r["status"] == "PASS" for r in recs)
    print(f"\nzoo: {passed} of {len(recs)} exported and verified")
    if args.out:
        with open(os.path.join(args.out, "zoo.json"), "w") as f:
            json.dump(recs, f, indent=1)
    return 0 if passed == len(recs) else 1


if __name__ == "__main__":
    sys.exit(main())

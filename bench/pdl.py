"""Programmatic dependent launch (PDL), measured on the zoo: does a graph of the same
model run faster when its kernels may start before the one they wait for has finished?

    PYTHONPATH=python:. python3 bench/pdl.py [--rounds 7] [--iters 50] [--out DIR] PATTERN ...

Per model, in a child process of its own: the model is compiled twice, with Inductor's
Triton kernels plain and built for PDL (torch._inductor.config.triton.enable_pdl: each
kernel waits on its grid dependency, `griddepcontrol.wait`, before it reads what an
earlier kernel wrote, and is launched with programmatic stream serialization), each
warmed up and captured whole (pgcc.capture.Capture, which reads the
captured graph's edges and their types through the driver).  Printed per model: nodes,
edges, programmatic edges (the edges a PDL kernel launch made), kernels and how many
are Triton's (the library kernels, cuBLASLt's and cuDNN's, are launched as they are
either way); then both graphs' replays
timed side by side (interleaved rounds, `iters` replays between two CUDA events per
round: medians and spreads), and their outputs compared bit for bit after a replay
on the same inputs.  One JSON line per model (PDL {...}), the table at the end,
pdl.json under --out.
"""
import argparse
import json
import statistics


def child(key, rounds, iters):
    import torch

    from pgcc.capture import Capture
    from tests.models import zoo_models

    rec = {"model": key, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    ways, keep = {}, []
    for pdl in (False, True):
        torch._dynamo.reset()
        torch._inductor.config.triton.enable_pdl = pdl
        fn, inputs, _ = zoo_models.ZOO[key]()
        run = torch.compile(fn)
        way = "PDL" if pdl else "plain"
        print(f"PHASE warm-up, {way}", flush=True)
        for _ in range(3):
            run(*inputs)
        torch.cuda.synchronize()
        print(f"PHASE capture, {way}", flush=True)
        cap = Capture(torch, run, inputs)
        cap.replay()
        torch.cuda.synchronize()
        kernels = [n for n in cap.nodes if n.get("name")]
        ways[pdl] = cap
        keep.append((fn, run))  # (the model's weights: the graph reads them)
        rec["pdl" if pdl else "plain"] = {"nodes": len(cap.nodes), "edges": len(cap.edges),
                                          "programmatic_edges": cap.special_edges, "kernels": len(kernels),
                                          "triton_kernels": sum(n["name"].startswith("triton_") for n in kernels)}
    print("PHASE timing", flush=True)
    times = {False: [], True: []}
    for _ in range(rounds):
        for pdl, cap in ways.items():
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            for _ in range(iters):
                cap.replay()
            e1.record()
            e1.synchronize()
            times[pdl].append(e0.elapsed_time(e1) / iters * 1e3)
    for pdl, cap in ways.items():
        t = times[pdl]
        rec["pdl" if pdl else "plain"].update(
            us=round(statistics.median(t), 1), spread=round((max(t) - min(t)) / statistics.median(t), 3))
    # the same inputs' values in both (each graph reads its own copies), one replay each
    plain, pdl = ways[False], ways[True]
    for a, b in zip(plain.inputs, pdl.inputs):
        b.copy_(a)
    plain.replay()
    pdl.replay()
    torch.cuda.synchronize()
    rec["bit_identical"] = all(torch.equal(a, b) for a, b in zip(plain.outputs, pdl.outputs)
                               if torch.is_tensor(a))
    rec["ratio"] = round(rec["pdl"]["us"] / rec["plain"]["us"], 3)
    print("PDL " + json.dumps(rec), flush=True)


def table(recs):
    lines = ["| model | nodes | programmatic edges | kernels (Triton's) | plain µs (spread) | "
             "PDL µs (spread) | PDL / plain | outputs |", "|---" * 8 + "|"]
    for r in recs:
        if "failed" in r:
            lines.append(f"| {r['model']} | FAIL: {r['failed'][:120]} |" + " |" * 6)
            continue
        p, q = r["plain"], r["pdl"]
        lines.append(f"| {r['model']} | {p['nodes']}, {q['nodes']} | {p['programmatic_edges']}, "
                     f"{q['programmatic_edges']} | {q['kernels']} ({q['triton_kernels']}) | "
                     f"{p['us']} ({p['spread']}) | {q['us']} ({q['spread']}) | {r['ratio']:.3f}x | "
                     f"{'bit-identical' if r['bit_identical'] else 'DIFFER'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", help="fnmatch patterns over the zoo's 'family:variant' (inference ones)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.rounds, args.iters)
    from bench import children
    from tests.models import zoo_models
    keys = [k for k in zoo_models.select(args.patterns) if not k.startswith("train_")]
    recs = children.run(__file__, keys, ["--rounds", str(args.rounds), "--iters", str(args.iters)], "PDL", args.timeout,
                        args.out, "pdl")
    print()
    print(table(recs))


if __name__ == "__main__":
    main()

"""Greedy generation with a static KV cache (tests/models/decode_models.py), tokens per second
side by side: the export with batch buckets 1, 2, 4, 8 run from C through pgcc.load;
torch.compile(mode="reduce-overhead", dynamic=False), each step's token copied out of
its graph's output (the next replay overwrites it) and the caches marked static
addresses (torch._dynamo.mark_static_address, as transformers' StaticCache does: CUDA
Graph Trees skip a graph whose inputs it mutates otherwise); plain
torch.compile(dynamic=False); and the export driven from C (tests/gpu/decode_main.c,
its generated C linked in, no Python per call), which runs once per round as a program
of its own and gives its median of 5 generations per batch size (it checks its tokens
against reduce-overhead's first).

    PYTHONPATH=python:. python3 bench/decode_timing.py [--rounds 5] [--new 128] [--out DIR]

Per batch size: an 8-token prompt, then `new` tokens, each step's output the next one's
input, the caches the same tensors every generation (zeroed before each).  Rounds
interleave the ways and the batch sizes; each way's set-up (its first generation: the
export and load for pgcc, the compiles and recordings for the others) is not timed.
The table: median tokens per second (batch x new over the whole generation's wall time,
prompt steps included), the spread (max - min over the median) and pgcc / RO, and the
host's time per step (a generation's wall time until its last step was launched: no
step waits for the GPU), which says whether a way is bound by the host.  One JSON
line (BENCH {...}), the table, decode_bench.json under --out.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUCKETS, PROMPT = [1, 2, 4, 8], 8


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--out", default="build/bench-decode")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch

    import pgcc
    from tests.models import decode_models

    m, step, weights = decode_models.model()
    rec = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "new": a.new, "prompt": PROMPT}
    exp = os.path.join(a.out, "decode")
    watch = pgcc.ModuleWatch()
    t0 = time.perf_counter()
    res = pgcc.export(step, decode_models.example(1), exp, name="decode", weights=weights, watch=watch, quiet=True,
                      buckets=[decode_models.example(b) for b in BUCKETS])
    watch.close()
    rec["pgcc_export_s"], rec["pgcc_verified"] = round(time.perf_counter() - t0, 1), str(res.verified)
    p = pgcc.load(exp)
    rec["pgcc_init_ms"] = round((p.load_s + p.init_s) * 1e3, 1)

    caches = {b: decode_models.caches(b) for b in BUCKETS}
    for kc, vc in caches.values():
        torch._dynamo.mark_static_address(kc)
        torch._dynamo.mark_static_address(vc)
    ro = torch.compile(step, mode="reduce-overhead", dynamic=False)

    def ro_step(*xs):  # (its output is overwritten by the next replay: the next step's input, kept, is a copy)
        torch.compiler.cudagraph_mark_step_begin()
        return ro(*xs).clone()
    ways = {"pgcc": p, "reduce-overhead": ro_step, "compile": torch.compile(step, dynamic=False)}
    g = torch.Generator(device="cuda").manual_seed(5)
    prompts = {b: torch.randint(0, decode_models.VOCAB, (b, PROMPT), device="cuda", generator=g) for b in BUCKETS}
    positions = [torch.tensor([i], device="cuda") for i in range(PROMPT + a.new)]

    def generate(f, b):
        return decode_models.generate(f, prompts[b], a.new, kv=caches[b], positions=positions)

    firsts = {}
    for w, f in ways.items():  # set-up, untimed; and the tokens, which must agree
        for b in BUCKETS:
            for _ in range(2):
                firsts[(w, b)] = generate(f, b)
    torch.cuda.synchronize()
    rec["same_tokens_as_ro"] = {b: torch.equal(firsts[("pgcc", b)], firsts[("reduce-overhead", b)]) for b in BUCKETS}
    # the same generations driven from C (tests/gpu/decode_main.c): no Python per call
    refs = []
    for b in BUCKETS:
        refs += [(f"prompt_{b}", "i64", [b, PROMPT], prompts[b].cpu().numpy().tobytes()),
                 (f"tokens_{b}", "i64", [b, a.new], firsts[("reduce-overhead", b)].cpu().numpy().tobytes())]
    driver = decode_models.build_driver(ROOT, exp, refs) if a.new == 128 else None  # (decode_main.c makes 128)
    tps = {(w, b): [] for w in list(ways) + (["pgcc from C"] if driver else []) for b in BUCKETS}
    rec["c_matches_ro"] = True
    host = {(w, b): [] for w in ways for b in BUCKETS}
    for _ in range(a.rounds):
        if driver:  # its own median of 5 generations per batch size, each round
            r = subprocess.run([driver[0], exp, driver[1]], capture_output=True, text=True)
            rec["c_matches_ro"] = rec["c_matches_ro"] and r.returncode == 0
            for m in re.finditer(r"^batch (\d+): .* from C: (\d+) tokens/s", r.stdout, re.M):
                tps[("pgcc from C", int(m.group(1)))].append(float(m.group(2)))
            # Untimed, after the other process: in a first try without this, the first
            # generations timed after it were up to 2x slower (reduce-overhead's spread
            # 93% against 1% in a run without the C driver)
            for b in BUCKETS:
                for f in ways.values():
                    generate(f, b)
        for b in BUCKETS:
            for w, f in ways.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                generate(f, b)
                t1 = time.perf_counter()  # (nothing in a generation waits for the GPU: the host's own time)
                torch.cuda.synchronize()
                tps[(w, b)].append(b * a.new / (time.perf_counter() - t0))
                host[(w, b)].append((t1 - t0) / (PROMPT + a.new - 1) * 1e6)
    rec["tokens_per_s"] = {w: {b: {"median": round(statistics.median(tps[(w, b)])),
                                   "spread": round((max(tps[(w, b)]) - min(tps[(w, b)])) /
                                                   statistics.median(tps[(w, b)]), 3)}
                               for b in BUCKETS if tps[(w, b)]} for w in {w for w, _ in tps}}
    rec["host_us_per_step"] = {w: {b: round(statistics.median(host[(w, b)]), 1) for b in BUCKETS} for w in ways}
    print("BENCH " + json.dumps(rec), flush=True)
    with open(os.path.join(a.out, "decode_bench.json"), "w") as f:
        json.dump(rec, f, indent=1)
    t = rec["tokens_per_s"]
    c = t.get("pgcc from C", {})
    print("| batch | pgcc from Python tok/s (spread) | pgcc from C tok/s (spread) | reduce-overhead tok/s (spread) | "
          "compile tok/s | pgcc / RO: Python, C | same tokens as RO: Python, C | host µs/step: pgcc Python, RO |")
    print("|---|---|---|---|---|---|---|---|")
    for b in BUCKETS:
        ro = t["reduce-overhead"][b]["median"]
        cc = f"{c[b]['median']} ({c[b]['spread']:.1%})" if b in c else "—"
        print(f"| {b} | {t['pgcc'][b]['median']} ({t['pgcc'][b]['spread']:.1%}) | {cc} | {ro} "
              f"({t['reduce-overhead'][b]['spread']:.1%}) | {t['compile'][b]['median']} | "
              f"{t['pgcc'][b]['median'] / ro:.2f}x, {c[b]['median'] / ro if b in c else float('nan'):.2f}x | "
              f"{rec['same_tokens_as_ro'][b]}, {rec['c_matches_ro']} | {rec['host_us_per_step']['pgcc'][b]}, "
              f"{rec['host_us_per_step']['reduce-overhead'][b]} |")
    p.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

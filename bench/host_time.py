"""Where a pgcc call's host time goes, from Python (issue 18's host-time target).

    PYTHONPATH=python:. python3 bench/host_time.py [--rounds 7] [--iters 200] [EXPORT_DIR ...]

For each export (default: the committed CI fixtures mlp_small and llama_tiny_bf16),
built and loaded with pgcc.load, the host time of one call is taken seven ways, in
interleaved rounds (each round times every way once, `iters` calls, wall clock;
medians over rounds, and the spread max - min over the median):

  call          prog(*xs, out=outs): the call in C where the program has one
                (fastcall.py: the tensors checked, NAME_args written, NAME_run, in C)
  call, ctypes  the same call the general way: checks in Python, NAME_args packed, NAME_run
                through ctypes (what a program without the call in C does)
  args+run      prog.args(...) then prog.run(args): the general way, split
  run           prog.run(args) on arguments packed once
  run, moving   prog.run on 4 packed argument sets in turn (inputs at other addresses
                every call: what libpgrt patches), the way bench/zoo_timing.py calls pgcc
  C only        NAME_run through ctypes with the stream handle cached
  C, stream looked up   the same, the stream looked up with torch.cuda.current_stream
                (what Program.run did before it used torch's raw getter)

The stream is synchronized only at the end of each timed loop: this is host time,
with the GPU kept busy; every call is a real launch.
"""
import argparse
import os
import statistics
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exports", nargs="*", default=[os.path.join(ROOT, "tests/corpus/export", n)
                                                   for n in ("mlp_small", "llama_tiny_bf16")])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    import ctypes as C

    import torch

    import pgcc
    from pgcc.call_args import torch_dtype
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for d in args.exports:
        p = pgcc.load(d)

        def fresh():
            xs = []
            for f in p.inputs:
                dt = torch_dtype(f.dtype)
                if dt is not None and dt.is_floating_point:
                    xs.append(torch.randn(f.shape, dtype=dt, device="cuda"))
                else:
                    xs.append(torch.zeros(f.shape, dtype=dt or torch.int64, device="cuda"))
            return xs
        sets = [fresh() for _ in range(4)]
        outs = p.new_outputs()
        packed = [p.args(xs, outs) for xs in sets]
        stream = torch.cuda.current_stream().cuda_stream
        raw = C.c_void_p(stream)
        k = {"i": 0}

        def moving():
            k["i"] = (k["i"] + 1) % 4
            p.run(packed[k["i"]])
        ways = {"call": lambda: p(*sets[0], out=outs),
                "call, ctypes": lambda: p._call(sets[0], outs),
                "args+run": lambda: p.run(p.args(sets[0], outs)),
                "run": lambda: p.run(packed[0]),
                "run, moving": moving,
                "C only": lambda: p.run_fn(p.ctx, packed[0], raw),
                "C, stream looked up": lambda: p.run_fn(p.ctx, packed[0],
                                                        C.c_void_p(torch.cuda.current_stream(p.device).cuda_stream))}
        for f in ways.values():  # warm
            for _ in range(20):
                f()
        torch.cuda.synchronize()
        times = {w: [] for w in ways}
        for _ in range(args.rounds):
            for w, f in ways.items():
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    f()
                times[w].append((time.perf_counter() - t0) / args.iters * 1e6)
                torch.cuda.synchronize()
        print(f"\n{p.name}: {len(p.inputs)} inputs, {len(p.outputs)} outputs, the call in C "
              f"{'made' if p._caller is not None else 'not made'} (median µs per call over {args.rounds} "
              f"rounds of {args.iters}; spread)")
        for w, ts in times.items():
            m = statistics.median(ts)
            print(f"  {w:20s} {m:8.1f}   {(max(ts) - min(ts)) / m:.3f}")
        p.close()


if __name__ == "__main__":
    main()

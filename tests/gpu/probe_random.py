"""How random numbers look in a capture: evidence for exporting programs that draw them.

    PYTHONPATH=python:. python3 tests/gpu/probe_random.py [--out DIR]

For each small program that draws random numbers (Inductor's own random under
torch.compile, ATen's dropout, bernoulli_, multinomial, rrelu, rand), run the way a user
runs it: compiled, called once; then the CUDA generator's seed and offset around one more
call (how far a call advances it), and one capture through pgcc's own walker: each kernel
node's name and, for every 8-byte-aligned word of its parameters that points into device
memory, what it points at (8 bytes read after the capture) and the four words after it.
PyTorch's PhiloxCudaState, as captured, is {seed pointer, offset pointer, u32 offset within
the graph, bool captured}; the probe prints where such a pattern is, so the exporter's
detection is written against what the driver shows, not against a header.
"""
import argparse
import json
import os
import struct


def programs(torch):
    F = torch.nn.functional
    return {
        "inductor_dropout": (lambda x: F.dropout(x, 0.5, training=True) * 2, (torch.randn(4096, device="cuda"),), True),
        "inductor_rand": (lambda x: x + torch.rand_like(x), (torch.randn(4096, device="cuda"),), True),
        "aten_bernoulli": (lambda x: torch.bernoulli(x.sigmoid()), (torch.randn(4096, device="cuda"),), False),
        "aten_multinomial": (lambda p: torch.multinomial(p.softmax(-1), 4, replacement=True),
                             (torch.randn(8, 1000, device="cuda"),), False),
        "aten_rrelu": (lambda x: F.rrelu(x, training=True), (torch.randn(4096, device="cuda"),), False),
        "aten_dropout": (lambda x: F.dropout(x, 0.3, training=True), (torch.randn(4096, device="cuda"),), False),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch
    import pgcc  # noqa: F401  (after torch, as users import it)
    from pgcc.capture import Capture
    from pgcc.cuda import read_device

    torch.cuda.init()
    gen = torch.cuda.default_generators[0]
    results = {}
    for name, (fn, inputs, compiled) in programs(torch).items():
        f = torch.compile(fn) if compiled else fn
        f(*inputs)
        torch.cuda.synchronize()
        o0 = gen.get_offset()
        f(*inputs)
        torch.cuda.synchronize()
        o1 = gen.get_offset()
        cap = Capture(torch, f, inputs)
        o2 = gen.get_offset()
        info = {"seed": gen.initial_seed(), "offset_before": o0, "per_call": o1 - o0, "after_capture": o2 - o1,
                "kernels": []}
        for n in cap.nodes:
            if "bytes" not in n:
                continue
            b = n["bytes"]
            words = []
            for off in range(0, len(b) - 7, 8):
                (w,) = struct.unpack_from("<Q", b, off)
                if w > (1 << 40) and w < (1 << 48):
                    try:
                        pointee = struct.unpack("<q", read_device(w, 8))[0]
                    except Exception as e:  # (not device memory)
                        pointee = f"unreadable: {e}"
                    tail = b[off + 16:off + 24].hex() if off + 24 <= len(b) else None
                    words.append({"off": off, "ptr": hex(w), "pointee": pointee, "next16": tail})
            info["kernels"].append({"name": n["name"][:90], "layout": n["layout"], "bytes": len(b),
                                    "ptr_words": words})
        results[name] = info
        print("PROBE", name, json.dumps(info)[:3000], flush=True)
        del cap
    # What the exporter makes of one of them today.
    for name in ("inductor_dropout", "aten_bernoulli"):
        fn, inputs, compiled = programs(torch)[name]
        try:
            r = pgcc.export(fn, inputs, f"/tmp/probe_random_{name}", compile=compiled, quiet=True)
            print("EXPORT", name, r.verified, flush=True)
        except pgcc.ExportError as e:
            print("EXPORT", name, "ExportError:", str(e)[:1500], flush=True)
        try:
            rep = json.load(open(f"/tmp/probe_random_{name}/{name if False else 'lambda'}.export.json"))
        except OSError:
            rep = None
        if rep is None:
            for f_ in os.listdir(f"/tmp/probe_random_{name}"):
                if f_.endswith(".export.json"):
                    rep = json.load(open(f"/tmp/probe_random_{name}/{f_}"))
        if rep:
            print("REPORT", name, json.dumps({k: rep.get(k) for k in ("relocations", "dontcare", "host_memory_read",
                                                                       "problems", "workspaces")})[:3000])
    if args.out:
        with open(os.path.join(args.out, "probe_random.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

"""Programs that draw random numbers, exported and run the way users run them: each
built and run eagerly first, `import pgcc` after torch, `pgcc.export` with no watch,
then `pgcc.load`.  For each, after torch.manual_seed(s) the loaded program's calls must
give, bit for bit, what the compiled callable's calls give after the same seed, two
calls must differ (fresh numbers every call), and the generator must end where the
callable leaves it.  Then a sampling decode loop (multinomial over a small LM head's
logits, one token a step) gives PyTorch's tokens for the same seed.

    PYTHONPATH=python:. python3 tests/gpu/random_export.py [--out DIR] [NAME ...]

Prints one line per program (PASS/FAIL with the max error) and exits nonzero on any
failure; with --out, writes DIR/random_export.json.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class DropoutMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.fc2 = nn.Linear(256, 512), nn.Dropout(0.2), nn.Linear(512, 256)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x))))


class Sampler(nn.Module):
    """One decode step's sampling: the next token from a small LM head's logits at a
    temperature, as generate(do_sample=True) draws it."""

    def __init__(self, vocab=1000, dim=128):
        super().__init__()
        self.emb, self.head = nn.Embedding(vocab, dim), nn.Linear(dim, vocab)

    def forward(self, tokens):
        logits = self.head(torch.tanh(self.emb(tokens))) / 0.8
        return torch.multinomial(logits.softmax(-1), 1).squeeze(-1)


def programs():
    """name -> (callable, example inputs, compile): each as a user writes it."""
    dev = "cuda"
    mlp = DropoutMLP().to(dev).train()  # (a forward in training mode: dropout on)
    return {
        "dropout_module_train": (mlp, (torch.randn(32, 256, device=dev),), True),
        "rand_like": (lambda x: x * torch.rand_like(x), (torch.randn(64, 1024, device=dev),), True),
        "bernoulli": (lambda p: torch.bernoulli(p.sigmoid()), (torch.randn(4096, device=dev),), True),
        "randn_noise": (lambda x: x + 0.1 * torch.randn(x.shape, device=x.device), (torch.randn(8, 512, device=dev),),
                        True),
        "rrelu_train": (lambda x: F.rrelu(x, training=True), (torch.randn(4096, device=dev),), True),
        "multinomial": (lambda p: torch.multinomial(p.softmax(-1), 4, replacement=True),
                        (torch.randn(8, 1000, device=dev),), True),
        "dropout_eager": (lambda x: F.dropout(x, 0.3, training=True), (torch.randn(4096, device=dev),), False),
    }


def same_draws(name, fn, prog, inputs, compiled, seed=1234, calls=3):
    """The callable's and the program's calls from the same seed: (max error, calls
    differ from each other, offsets after)."""
    fn = torch.compile(fn) if compiled else fn
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    torch.manual_seed(seed)
    ref = [fn(*inputs) for _ in range(calls)]
    ref_offset = gen.get_offset()
    torch.manual_seed(seed)
    got = [prog(*inputs) for _ in range(calls)]
    got_offset = gen.get_offset()
    torch.cuda.synchronize()
    worst = max((g.double() - r.double()).abs().max().item() if g.numel() else 0.0 for g, r in zip(got, ref))
    fresh = not torch.equal(got[0], got[1])
    return worst, fresh, ref_offset, got_offset


def decode_loop(pgcc, out, steps=16, seed=7):
    """Tokens sampled one step at a time from the same seed, PyTorch's compiled sampler
    against the exported one: the lists must be equal."""
    sampler = Sampler().cuda().eval()
    tokens = torch.randint(0, 1000, (4,), device="cuda")
    sampler(tokens)  # (eagerly first, as a user checks it)
    pgcc.export(sampler, (tokens,), out, quiet=True)
    prog = pgcc.load(out)
    compiled = torch.compile(sampler)

    def run(step_fn):
        torch.manual_seed(seed)
        t, seen = tokens.clone(), []
        with torch.no_grad():
            for _ in range(steps):
                t = step_fn(t)
                seen.append(t.tolist())
        return seen
    return run(compiled), run(prog)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    progs = programs()
    for name, (fn, inputs, compiled) in progs.items():  # (eagerly first, before pgcc is imported)
        if not args.names or name in args.names:
            fn(*inputs)
    torch.cuda.synchronize()
    import pgcc  # (after torch, as users import it)

    rows, failed = [], 0
    work = tempfile.mkdtemp(prefix="pgcc-random-")
    for name, (fn, inputs, compiled) in progs.items():
        if args.names and name not in args.names:
            continue
        t0 = time.perf_counter()
        row = {"program": name}
        try:
            r = pgcc.export(fn, inputs, os.path.join(work, name), compile=compiled, quiet=True)
            row["export_s"] = round(time.perf_counter() - t0, 1)
            row["verified"] = r.verified
            prog = pgcc.load(os.path.join(work, name))
            row["rng_increment"] = prog.rng_increment
            worst, fresh, ref_off, got_off = same_draws(name, fn, prog, inputs, compiled)
            row.update(max_error=worst, fresh=fresh, offsets=[ref_off, got_off])
            ok = worst == 0 and fresh and ref_off == got_off and prog.rng_increment > 0
            row["status"] = "PASS" if ok else "FAIL"
            print(f"{row['status']} {name}: max error {worst:.3g} over 3 calls from one seed (bit-identical to the "
                  f"compiled callable's: {worst == 0}); calls differ: {fresh}; generator offset after: {got_off} "
                  f"(callable's {ref_off}); increment {prog.rng_increment}; export {row['export_s']} s", flush=True)
            prog.close()
        except Exception as e:  # noqa: BLE001 -- reported per program
            row.update(status="FAIL", error=f"{type(e).__name__}: {e}"[:2000])
            print(f"FAIL {name}: {row['error']}", flush=True)
        failed += row["status"] != "PASS"
        rows.append(row)
    if not args.names or "decode" in args.names:
        try:
            ref, got = decode_loop(pgcc, os.path.join(work, "sampler"))
            ok = ref == got and len({tuple(t) for t in ref}) > 1
            print(f"{'PASS' if ok else 'FAIL'} decode: {len(ref)} sampled steps from one seed, the program's tokens "
                  f"{'are' if ref == got else 'are NOT'} PyTorch's (first steps {ref[:2]} / {got[:2]})", flush=True)
            rows.append({"program": "decode", "status": "PASS" if ok else "FAIL", "tokens": [ref, got]})
            failed += not ok
        except Exception as e:  # noqa: BLE001
            print(f"FAIL decode: {type(e).__name__}: {e}"[:2000], flush=True)
            rows.append({"program": "decode", "status": "FAIL", "error": str(e)[:2000]})
            failed += 1
    if args.out:
        with open(os.path.join(args.out, "random_export.json"), "w") as f:
            json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    print(f"{len(rows) - failed} of {len(rows)} passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

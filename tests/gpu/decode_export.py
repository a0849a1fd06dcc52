"""A decode step with a static KV cache (tests/models/decode_models.py), exported with batch
buckets 1, 2, 4, 8 and run from the generated C (through pgcc.load) on a GPU.

The export verifies every bucket (and the sizes between, padded) against the compiled
step.  Then, for every bucket, a greedy generation of 128 tokens after an 8-token prompt
(fresh random prompts; the prompt fed one token per step, each step's output the next
one's input, the position a device tensor that moves every call) runs three ways from
the same empty caches: through the export, through the compiled step
(torch.compile(dynamic=False), the same kernels) and eagerly.  The export's tokens must
equal the compiled step's, token for token, and its caches after the last step must be
the compiled step's bit for bit.  Against eager PyTorch, whose bf16 rounding differs
from the compiled kernels', a sequence parts at the first near tie of its logits (this
randomly initialised model has many: seen after 1 to 43 tokens): how many tokens agree
is printed, and the first of every sequence must.  Then the same generations driven from C (decode_main.c, the
export's generated C linked in, no Python): token for token PyTorch's, and their tokens
per second.

    PYTHONPATH=python:. python3 tests/gpu/decode_export.py        (exit status 0: every check passed)
"""
import os
import subprocess
import sys
import tempfile

import torch

import pgcc
from tests.models import decode_models

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

BUCKETS, PROMPT, NEW = [1, 2, 4, 8], 8, 128


def generate_keeping(step, prompt):
    """decode_models.generate, also returning the caches after the last step."""
    seen = {}

    def spy(tok, pos, kc, vc):
        seen["kv"] = (kc, vc)
        return step(tok, pos, kc, vc)
    toks = decode_models.generate(spy, prompt, NEW)
    return toks, seen["kv"]


def from_c(out, refs):
    """The generation driven from C (tests/gpu/decode_main.c, the export's generated C
    linked in): every bucket's tokens against the compiled step's; its tokens per
    second printed.  Returns the failures."""
    try:
        binary, refs_path = decode_models.build_driver(ROOT, out, refs)
    except RuntimeError as e:
        return [f"from C: {e}"]
    r = subprocess.run([binary, out, refs_path], capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    return [] if r.returncode == 0 else [f"from C: decode_main exited {r.returncode}"]


def main():
    failures = []
    m, step, weights = decode_models.model()
    with tempfile.TemporaryDirectory() as out:
        watch = pgcc.ModuleWatch()
        try:
            res = pgcc.export(step, decode_models.example(1), out, name="decode", weights=weights, watch=watch,
                              buckets=[decode_models.example(b) for b in BUCKETS])
        finally:
            watch.close()
        print(f"decode: {res.verified}")
        print(f"decode: padding {res.report['dim']}")
        compiled = torch.compile(step, dynamic=False)
        p = pgcc.load(out, name="decode")
        refs = []
        try:
            g = torch.Generator(device="cuda").manual_seed(1234)
            for b in BUCKETS:
                prompt = torch.randint(0, decode_models.VOCAB, (b, PROMPT), device="cuda", generator=g)
                got, (kc, vc) = generate_keeping(p, prompt)
                ref, (rk, rv) = generate_keeping(compiled, prompt)
                refs += [(f"prompt_{b}", "i64", [b, PROMPT], prompt.cpu().numpy().tobytes()),
                         (f"tokens_{b}", "i64", [b, NEW], ref.cpu().numpy().tobytes())]
                eager = decode_models.generate(step, prompt, NEW)
                torch.cuda.synchronize()
                same = torch.equal(got, ref)
                caches = torch.equal(kc, rk) and torch.equal(vc, rv)
                agree = [(got[i] == eager[i]).int().cumprod(0).sum().item() for i in range(b)]
                print(f"decode: batch {b}: {NEW} tokens per sequence; export == compiled step: "
                      f"{'token for token' if same else f'{(got == ref).sum().item()} of {got.numel()} tokens'}, "
                      f"caches {'bit-identical' if caches else 'DIFFER'}; tokens equal to eager PyTorch's before the "
                      f"first difference, per sequence: {agree}; first tokens {got[0, :8].tolist()}")
                if not same:
                    failures.append(f"batch {b}: the export's tokens differ from the compiled step's")
                if not caches:
                    failures.append(f"batch {b}: the caches differ from the compiled step's")
                if min(agree) < 1:
                    failures.append(f"batch {b}: a sequence's first token is not eager PyTorch's ({agree})")
                if len(set(got[0].tolist())) < 4:
                    failures.append(f"batch {b}: the tokens barely vary ({got[0, :16].tolist()}): a weak test")
        finally:
            p.close()
        failures += from_c(out, refs)
    for f in failures:
        print("FAIL decode:", f)
    print("PASS" if not failures else f"FAIL: {len(failures)} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

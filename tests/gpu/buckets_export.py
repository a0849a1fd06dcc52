"""Programs exported with shape buckets (tests/models/buckets_models.py), run from the generated C
(through pgcc.load) on a GPU.

For each: pgcc.export(..., buckets=) -- which verifies every bucket, and for padded
buckets a size between two, against the compiled callable (bit for bit, or the dtype's
tolerance), with the arena poisoned -- and then, with fresh inputs at every size from
1 to the largest bucket (exact buckets: at each bucket), the program against the
compiled callable on the same inputs padded with zeros (bit for bit) and against eager
PyTorch at the exact size (max error printed; within the zoo's tolerance for the
dtype); the padding found must be the one expected; a size past the largest bucket must
be refused; `pgcc --report` must list a line per bucket; and the arena must be the
largest bucket's, not the sum (the bodies of the SWITCH share it).

    PYTHONPATH=python:. python3 tests/gpu/buckets_export.py [NAME ...]      (exit status 0: every check passed)

With BUCKETS_FIXTURES=DIR, the mlp_tiny export is packed into
DIR/buckets_fixtures.tar.gz (as tests/corpus/export/mlp_tiny/...: the CI fixture).
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

import torch

import pgcc
from pgcc.call_args import choose, pad_to
from pgcc.verify_export import compare
from tests.models.buckets_models import PROGRAMS
from tests.models.zoo_models import TOLERANCE

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def check(name, out, failures, watch):
    fn, inputs, weights, values, dim, want_pad = PROGRAMS[name]()
    res = pgcc.export(fn, inputs, out, name=name, weights=weights, watch=watch, buckets=values, dim=dim)
    print(f"{name}: {res.verified}")
    d = res.report["dim"]
    print(f"{name}: buckets {d['values']} {'padded' if d['pad'] else 'exact'}; inputs' dimension at {d['in_positions']}"
          f", outputs' at {d['out_positions']}")
    if d["pad"] != want_pad:
        failures.append(f"{name}: padding {d['pad']}, expected {want_pad}")
    report = subprocess.run([os.path.join(ROOT, "build", "pgcc"), "--report", res.graph], capture_output=True,
                            text=True)
    print(report.stdout + report.stderr)
    lines = [ln for ln in report.stdout.splitlines() if re.search(rf"\bbucket {d['name']}=\d+", ln)]
    if report.returncode != 0 or len(lines) != len(values):
        failures.append(f"{name}: pgcc --report does not list {len(values)} buckets")
    js = subprocess.run([os.path.join(ROOT, "build", "pgcc"), "--report=json", res.graph], capture_output=True,
                        text=True)
    per = [b["arena_bytes"] for b in json.loads(js.stdout).get("buckets", [])] if js.returncode == 0 else []
    compiled = torch.compile(fn, dynamic=False)
    p = pgcc.load(out, name=name)
    try:
        arena = p.arena_bytes
        print(f"{name}: arena {arena} bytes; each bucket's own: {per}")
        if len(per) != len(values):
            failures.append(f"{name}: pgcc --report=json lists {len(per)} buckets")
        if per and (arena != max(per) or len(per) > 1 and arena >= sum(per)):
            failures.append(f"{name}: the arena ({arena}) is not the largest bucket's ({max(per)})")
        in_pos, out_pos = d["in_positions"], d["out_positions"]
        sizes = range(1, values[-1] + 1) if d["pad"] else values
        gen = torch.Generator(device="cuda").manual_seed(7)
        for n in sizes:
            k = choose(values, n, d["pad"])
            if k is None:
                continue
            xs = []
            for x, q in zip(inputs, in_pos):
                shape = list(x.shape)
                if q is not None:
                    shape[q] = n
                if x.is_floating_point():
                    xs.append(torch.randn(shape, generator=gen, device="cuda", dtype=x.dtype))
                else:
                    xs.append(torch.randint(0, int(x.max()) + 1, shape, generator=gen, device="cuda", dtype=x.dtype))
            p.fill_arena(0xFF)
            got = p(*xs)
            got = list(got) if isinstance(got, tuple) else [got]
            ref = compiled(*[pad_to(torch, x, q, values[k]) for x, q in zip(xs, in_pos)])  # (fn: no_grad inside)
            eager = fn(*xs)
            ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
            ref = [r if q is None else r.narrow(q, 0, n) for r, q in zip(ref, out_pos)]
            torch.cuda.synchronize()
            for i, (g, r, e) in enumerate(zip(got, ref, eager)):
                same, err, tol = compare(g, r)
                _, err_e, _ = compare(g, e)
                tol_e = TOLERANCE["bf16" if g.dtype == torch.bfloat16 else "fp32"]
                print(f"{name}: {d['name']}={n} (bucket {values[k]}): output {i} "
                      f"{'bit-identical to' if same else f'max error {err:.3g} against'} the compiled callable, "
                      f"max error {err_e:.3g} against eager PyTorch at {d['name']}={n}")
                if not same and err > tol:
                    failures.append(f"{name}: {d['name']}={n}: max error {err:.3g} against the compiled callable")
                if err_e > tol_e:
                    failures.append(f"{name}: {d['name']}={n}: max error {err_e:.3g} against eager PyTorch")
        big = [pad_to(torch, x, q, values[-1] + 1) for x, q in zip(inputs, in_pos)]
        try:
            p(*big)
            failures.append(f"{name}: {d['name']}={values[-1] + 1} ran")
        except ValueError as e:
            print(f"{name}: {d['name']}={values[-1] + 1}: refused ({e})")
    finally:
        p.close()


def main():
    names = sys.argv[1:] or list(PROGRAMS)
    failures = []
    keep = os.environ.get("BUCKETS_FIXTURES")
    # one watch for the process, before anything runs: libraries load a kernel once, and
    # a later program that uses it finds it loaded already
    watch = pgcc.ModuleWatch()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = os.path.join(tmp, name)
            try:
                check(name, out, failures, watch)
            except Exception as e:  # noqa: BLE001 -- one program's failure is reported, the rest run
                import traceback
                traceback.print_exc()
                failures.append(f"{name}: {type(e).__name__}: {e}")
            if keep and name == "mlp_tiny" and os.path.isdir(out):
                os.makedirs(keep, exist_ok=True)
                with tarfile.open(os.path.join(keep, "buckets_fixtures.tar.gz"), "w:gz") as t:
                    for f in sorted(os.listdir(out)):
                        if f != "build":
                            t.add(os.path.join(out, f), arcname=f"tests/corpus/export/mlp_tiny/{f}")
    for f in failures:
        print("FAIL", f)
    print("PASS" if not failures else f"FAIL: {len(failures)} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

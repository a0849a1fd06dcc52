"""Programs that read values back to the host half-way (tests/models/breaks_models.py), exported
by pgcc.export with torch.compile and run from the generated C (through pgcc.load) on a
GPU:

- item_mlp: `.item()` of the largest activation divides the rest; compiled again with
  its scalars traced (`capture_scalar_outputs`, docs/guide.md), Inductor fuses the value
  into the kernel that uses it and the program reads nothing back: no read may be left,
  and fresh inputs -- other values -- give PyTorch's result;
- host_math: the value read goes through host arithmetic torch.compile does not trace
  (exp(-m)) before a kernel takes it: a callback scalar, whose function the test gives
  pgcc.load; fresh inputs give PyTorch's result;
- branch: `if h.sum() > 0:` picks one of two heads; the export holds both, in an
  IF/ELSE node whose condition a kernel sets from the value on the device: fresh inputs
  on either path give PyTorch's result;
- cond: torch.cond on a device predicate (compiled: Inductor reads the predicate with
  .item() between the branches), exported as branch is;
- generate: greedy generation from a tiny recurrent LM, reading after every token
  whether to stop (end-of-sequence or max_new): one WHILE node; fresh prompts, which
  stop after other numbers of tokens, give PyTorch's tokens;
- scaler_step: an fp16 autocast SGD step with torch.amp.GradScaler, whose step() reads
  found_inf with .item(): verified over 3 steps (losses and every state tensor); a
  batch with an inf takes the other path in C as in PyTorch: the optimizer step
  skipped, the scale lowered, every state tensor as PyTorch's.

Each: the export's own verify (4 calls plus 2 on other values), then 4 calls on fresh
inputs with the arena poisoned, compared with the compiled callable (bit for bit) and
eager PyTorch (max error printed); `pgcc --report` on the .graph must show the sync in
an eager region, or the conditional node.

    PYTHONPATH=python:. python3 tests/gpu/breaks_export.py [NAME ...]      (exit status 0: every check passed)

With BREAKS_FIXTURES=DIR, the exports are also packed into DIR/breaks_fixtures.tar.gz
(as tests/corpus/export/NAME/...: the CI fixtures with an eager region and a
conditional node).
"""
import os
import subprocess
import sys
import tempfile

import torch

import pgcc
from pgcc.verify_export import compare
from tests.models.breaks_models import PROGRAMS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

EXPECT = {"item_mlp": {"reads": 0, "conditional": 0}, "host_math": {"reads": 1, "conditional": 0, "callbacks": 1}, "branch": {"reads": 1, "conditional": 1},
          "cond": {"reads": 1, "conditional": 1}, "scaler_step": {"reads": 1, "conditional": 1},
          "generate": {"loop": True}}


def check(name, out, failures):
    watch = pgcc.ModuleWatch()  # before the program first runs: cuBLASLt loads its kernels lazily
    try:
        fn, inputs, weights, other = PROGRAMS[name]()
        compiled = torch.compile(fn)
        callbacks = getattr(fn, "callbacks", None)
        res = pgcc.export(fn, inputs, out, name=name, weights=weights, watch=watch, callbacks=callbacks)
    finally:
        watch.close()
    print(f"{name}: {res.verified}")
    reads = res.report["host_reads"]
    print(f"{name}: host reads {reads}")
    want = EXPECT[name]
    conditional = sum(1 for r in reads if r.get("conditional"))
    if want.get("loop"):
        if len(reads) < 3 or not all(r.get("loop") for r in reads):
            failures.append(f"{name}: its {len(reads)} reads did not become a loop")
    elif len(reads) != want["reads"] or conditional != want["conditional"] or any(r["guarded"] for r in reads):
        failures.append(f"{name}: {len(reads)} reads, {conditional} conditional, "
                        f"{sum(r['guarded'] for r in reads)} guarded; expected {want}, none guarded")
    report = subprocess.run([os.path.join(ROOT, "build", "pgcc"), "--report", res.graph], capture_output=True,
                            text=True)
    print(report.stdout + report.stderr)
    wanted = "conditional node" if want.get("conditional") or want.get("loop") else \
        "host operation 'sync'" if want["reads"] else "pgcc report"
    if report.returncode != 0 or wanted not in report.stdout or (not want.get("reads", 1) and "'sync'" in report.stdout):
        failures.append(f"{name}: pgcc --report fails or does not say {wanted!r}")
    got_cb = sorted({c for r in reads for c in r.get("callbacks", [])})
    if len(got_cb) != want.get("callbacks", 0):
        failures.append(f"{name}: callback scalars {got_cb}, expected {want.get('callbacks', 0)}")
    p = pgcc.load(out, name=name, callbacks=callbacks)
    if getattr(fn, "train", False) is True:
        try:
            check_training_branch(name, fn, p, other, failures)
        finally:
            p.close()
        return
    try:
        for call in range(4):
            run_and_compare(name, p, other(100 + call, True), compiled, fn, f"call {call} on fresh inputs",
                            want.get("loop"), failures)
        if want.get("conditional"):  # the other side of the branch, chosen on the device
            for call in range(2):
                run_and_compare(name, p, other(200 + call, False), compiled, fn, f"the other path, call {call}",
                                False, failures)
    finally:
        p.close()


def run_and_compare(name, p, xs, compiled, fn, what, tokens, failures):
    """One call of the program on xs (arena poisoned) against the compiled callable (bit
    for bit, or the dtype's tolerance) and eager PyTorch (max error printed)."""
    p.fill_arena(0xFF)
    got = p(*xs)
    with torch.no_grad():
        ref, eager = compiled(*xs), fn.model(*xs)
    torch.cuda.synchronize()
    same, err, tol = compare(got, ref)
    _, err_eager, _ = compare(got, eager)
    made = f" ({int((got >= 0).sum())} tokens)" if tokens else ""
    print(f"{name}: {what}{made}: {'bit-identical to' if same else f'max error {err:.3g} against'} the compiled "
          f"callable, max error {err_eager:.3g} against eager PyTorch")
    if not same and err > tol:
        failures.append(f"{name}: {what}: max error {err:.3g} against the compiled callable")


def check_training_branch(name, step, p, other, failures):
    """A batch with an inf: the exported step takes the other path on the device as
    PyTorch does (GradScaler skips the optimizer step, update() lowers the scale): every
    parameter, momentum buffer and the scaler's state after it, against PyTorch's step
    from the same state on the same batch."""
    xs = other(400, False)
    scale = p.weight("scaler.scale", like=step.scaler._scale).clone()
    p(*xs)
    torch.cuda.synchronize()
    step(*xs)  # PyTorch, eagerly, from the same state (verify put it back as exported)
    torch.cuda.synchronize()
    names = [n for n in step.weights if not n.startswith("grad.")]  # (the gradients hold the inf)
    bad = [n for n in names if not torch.equal(p.weight(n, like=step.weights[n]), step.weights[n])]
    after = p.weight("scaler.scale", like=step.scaler._scale)
    print(f"{name}: a batch with an inf: the scale {scale.item():g} -> {after.item():g} in C, "
          f"{step.scaler._scale.item():g} in PyTorch; state tensors that differ: {bad or 'none'} of {len(names)}")
    if bad:
        failures.append(f"{name}: after the inf batch, {bad} differ from PyTorch's")
    if not after.item() < scale.item():
        failures.append(f"{name}: the inf batch did not lower the scale in C")


def main():
    names = sys.argv[1:] or list(PROGRAMS)
    failures = []
    pack = os.environ.get("BREAKS_FIXTURES")
    if pack:
        os.makedirs(os.path.join(pack, "export"), exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory() as out:
            try:
                check(name, out, failures)
                if pack:  # (what pgcc.load built is left out)
                    import shutil
                    keep = os.path.join(pack, "export", name)
                    shutil.copytree(out, keep, ignore=shutil.ignore_patterns("*.so", "build*", "*.c", "*.h", "*.o"))
            except Exception as e:  # noqa: BLE001 -- any exception is a failure of this program
                import traceback
                traceback.print_exc()
                failures.append(f"{name}: {type(e).__name__}: {e}")
    if pack:
        import tarfile
        with tarfile.open(os.path.join(pack, "breaks_fixtures.tar.gz"), "w:gz") as t:
            t.add(os.path.join(pack, "export"), arcname="tests/corpus/export")
    for f in failures:
        print("FAIL " + f)
    print(f"PASS: {len(names)} programs with host reads" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

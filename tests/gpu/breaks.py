"""Programs that read values back to the host half-way (tests/e2e/breaks.py), exported
by pgcc.export with torch.compile and run from the generated C (through pgcc.load) on a
GPU:

- item_mlp: `.item()` of the largest activation divides the rest; the exporter must
  find that the kernel after the read takes the value (a scalar `from` the read), so
  that fresh inputs -- other values read -- give PyTorch's result;
- branch: `if h.sum() > 0:` picks one of two heads; the export holds the path the
  example inputs took, guarded: fresh inputs on that path give PyTorch's result, inputs
  on the other path stop with PGRT_ERR_GUARD, and the program runs again after that;
- scaler_step: an fp16 autocast SGD step with torch.amp.GradScaler, whose step() reads
  found_inf with .item(): verified over 3 steps (losses and every state tensor); a
  batch with an inf stops at the guard before the optimizer step, the parameters
  untouched (PyTorch skips the step too, and also lowers the scale, which the C does
  not: that needs a conditional node).

Each: the export's own verify (4 calls plus 2 on other values), then 4 calls on fresh
inputs with the arena poisoned, compared with the compiled callable (bit for bit) and
eager PyTorch (max error printed); `pgcc --report` on the .graph must show the sync in
an eager region.

    python3 tests/gpu/breaks.py [NAME ...]      (exit status 0: every check passed)

With BREAKS_FIXTURES=DIR, the exports are also packed into DIR/breaks_fixtures.tar.gz
(as tests/corpus/export/NAME/...: the CI fixtures with an eager region and a guard).
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import torch  # noqa: E402

import pgcc  # noqa: E402
from breaks import PROGRAMS  # noqa: E402
from pgcc.verify import compare  # noqa: E402

EXPECT = {"item_mlp": {"reads": 1, "guarded": 0}, "branch": {"reads": 1, "guarded": 1},
          "scaler_step": {"reads": 1, "guarded": 1}}


def check(name, out, failures):
    watch = pgcc.ModuleWatch()  # before the program first runs: cuBLASLt loads its kernels lazily
    try:
        fn, inputs, weights, other = PROGRAMS[name]()
        compiled = torch.compile(fn)
        res = pgcc.export(fn, inputs, out, name=name, weights=weights, watch=watch)
    finally:
        watch.close()
    print(f"{name}: {res.verified}")
    reads = res.report["host_reads"]
    print(f"{name}: host reads {reads}")
    want = EXPECT[name]
    if len(reads) != want["reads"] or sum(r["guarded"] for r in reads) != want["guarded"]:
        failures.append(f"{name}: {len(reads)} reads, {sum(r['guarded'] for r in reads)} guarded; expected {want}")
    report = subprocess.run([os.path.join(ROOT, "build", "pgcc"), "--report", res.graph], capture_output=True,
                            text=True)
    print(report.stdout + report.stderr)
    if report.returncode != 0 or "sync" not in report.stdout:
        failures.append(f"{name}: pgcc --report fails or shows no sync")
    p = pgcc.load(out, name=name)
    if getattr(fn, "train", False) is True:
        try:
            check_training_guard(name, fn, p, other, failures)
        finally:
            p.close()
        return
    try:
        for call in range(4):
            xs = other(100 + call, True)
            p.fill_arena(0xFF)
            got = p(*xs)
            with torch.no_grad():
                ref, eager = compiled(*xs), fn.model(*xs)
            torch.cuda.synchronize()
            same, err, tol = compare(got, ref)
            _, err_eager, _ = compare(got, eager)
            print(f"{name}: call {call} on fresh inputs: {'bit-identical to' if same else f'max error {err:.3g} against'}"
                  f" the compiled callable, max error {err_eager:.3g} against eager PyTorch")
            if not same and err > tol:
                failures.append(f"{name}: call {call}: max error {err:.3g} against the compiled callable")
        if want["guarded"]:
            xs = other(200, False)
            try:
                p(*xs)
                torch.cuda.synchronize()
                failures.append(f"{name}: inputs on the other path ran instead of stopping at the guard")
            except RuntimeError as e:
                print(f"{name}: inputs on the other path: {e}")
                if "guard" not in str(e):
                    failures.append(f"{name}: the other path failed, but not at a guard: {e}")
            xs = other(300, True)
            got = p(*xs)
            same, err, tol = compare(got, compiled(*xs))
            print(f"{name}: after the guard stopped a call, the next call: max error {err:.3g}")
            if not same and err > tol:
                failures.append(f"{name}: the call after a guard stopped one is wrong (max error {err:.3g})")
    finally:
        p.close()


def check_training_guard(name, step, p, other, failures):
    """An inf batch stops the exported step at the guard, before the optimizer's update:
    the program's parameters are as they were."""
    params = dict(step.model.named_parameters())
    before = {n: p.weight(n, like=t).clone() for n, t in params.items()}
    try:
        p(*other(400, False))
        torch.cuda.synchronize()
        failures.append(f"{name}: a batch with an inf ran through instead of stopping at the guard")
    except RuntimeError as e:
        print(f"{name}: a batch with an inf: {e}")
        if "guard" not in str(e):
            failures.append(f"{name}: the inf batch failed, but not at a guard: {e}")
    changed = [n for n, t in params.items() if not torch.equal(p.weight(n, like=t), before[n])]
    print(f"{name}: parameters changed by the stopped call: {changed or 'none'}")
    if changed:
        failures.append(f"{name}: the stopped call changed {changed}")


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

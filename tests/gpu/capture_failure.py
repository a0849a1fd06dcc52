"""A callable that cannot be captured whole, on a GPU: an MLP that reads
`h.abs().amax(0).tolist()` half-way (a host read the exporter does not split at: it
splits at one-element reads, tests/gpu/breaks_export.py).  pgcc.export must fail with an ExportError that says
what stands in the way and names the line of the host read, and leave the process
usable: torch.randn works after it (PyTorch 2.11 left its CUDA generator believing a
capture was under way), and an ordinary model exports and verifies in the same process.
Eagerly and under torch.compile (where the .item() is a graph break).

    PYTHONPATH=python:. python3 tests/gpu/capture_failure.py          (exit status 0: every check passed)
"""
import sys
import tempfile

import torch

import pgcc
from pgcc.errors import ExportError


class ReadsHalfWay(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)

    def forward(self, x):
        h = torch.relu(self.a(x))
        scale = max(h.abs().amax(0).tolist())  # THE HOST READ
        return self.b(h / (scale + 1.0))


LINE = next(i for i, line in enumerate(open(__file__), 1) if "# THE HOST READ" in line and "scale =" in line)


def main():
    failures = []
    torch.manual_seed(0)
    for compile_ in (False, True):
        how = "torch.compile" if compile_ else "eager"
        model = ReadsHalfWay().cuda().eval()
        x = torch.randn(8, 64, device="cuda")
        with tempfile.TemporaryDirectory() as out:
            try:
                pgcc.export(model, (x,), out, compile=compile_, quiet=True)
                failures.append(f"{how}: the export of a callable with a host read succeeded")
            except ExportError as e:
                msg = str(e)
                print(f"{how}: ExportError: {msg}")
                if "waits for the GPU" not in msg:
                    failures.append(f"{how}: the error does not say the callable waits for the GPU")
                if f"capture_failure.py:{LINE}" not in msg:
                    failures.append(f"{how}: the error does not name line {LINE} of the host read")
            except Exception as e:  # noqa: BLE001 -- any other exception is the failure tested for
                failures.append(f"{how}: {type(e).__name__} instead of an ExportError: {e}")
        try:  # the process is usable
            y = torch.randn(4, device="cuda") * 2
            torch.cuda.synchronize()
            print(f"{how}: torch.randn after the failed export: {y.sum().item():.4f}")
        except RuntimeError as e:
            failures.append(f"{how}: torch.randn fails after the failed export: {e}")
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)).cuda().eval()
    with tempfile.TemporaryDirectory() as out:
        try:
            res = pgcc.export(mlp, (torch.randn(8, 64, device="cuda"),), out, name="after", quiet=True)
            print(f"an ordinary model after them: {res.verified}")
            if not str(res.verified).startswith("PASS"):
                failures.append("the ordinary model did not verify")
        except Exception as e:  # noqa: BLE001
            failures.append(f"an ordinary model does not export after the failures: {type(e).__name__}: {e}")
    for f in failures:
        print("FAIL " + f)
    print("PASS: capture failures end cleanly" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""pgcc beside PyTorch in one process: libpgrt opens the cuDNN, cuBLAS and cuBLASLt
(and NCCL) that PyTorch has, from its pip wheels, never a second copy (runtime/shlib.c;
pgrt.h, "Libraries, opened by soname"), in either order, and loading and closing an
export gives back its device memory.

    PYTHONPATH=python:. python3 tests/gpu/pytorch_beside.py [--cycles N] [--keep DIR]

The parent exports a small model whose program holds cuDNN's and cuBLAS's kernels (two
convolutions, a linear layer; fp32) into a directory, in a child process, then runs a
fresh child process per check:

  load-first   pgcc.load and a call of the export before PyTorch has run any cuDNN or
               cuBLAS work in the process (`import torch` has mapped PyTorch's libcudnn
               and libcublas; cuDNN's sublibraries load on first use), then the model in
               PyTorch eagerly and under torch.compile (convolutions in cuDNN, the linear
               layer in cuBLAS), then the export again;
  torch-first  the other order: eager and torch.compile first, then the export;
  cycles       N (default 100) load / call / close cycles of the export after one warm-up
               cycle: the device's free memory (cuMemGetInfo, after emptying PyTorch's
               cache) is back where it started, to the byte;
  two          a second export (the model at batch 2) loaded beside the first, the two
               called in turn three times, each against PyTorch's eager output.

Each of the first two checks that every output agrees with PyTorch's eager output on the
same inputs (fp32, TF32 off: relative max error at most 1e-4; the export, eager and
compiled printed with their errors), that no library of the families libcudnn*,
libcublas*, libnccl* is mapped from two files (/proc/self/maps: one directory per
library), and that each library module of the export (its .graph's `library "SONAME"`)
is mapped from the directory PyTorch's copy of its family is.  Exit status 1 on the first
failure, naming it; a line "pytorch_beside: PASS ..." at the end otherwise.  Needs a GPU,
PyTorch with CUDA from its pip wheels, and pgcc's build dependencies (pgcc.load builds the
export).  Run on a GPU (docs/codegen.md has its result); not run by `make check`.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAMILIES = re.compile(r"^lib(cudnn|cublas|nccl)[\w]*\.so")
NAME = "beside"


def model(batch=8):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
            self.fc = torch.nn.Linear(16 * 16 * 16, 64)

        def forward(self, x):
            y = torch.relu(self.c1(x))
            y = torch.relu(self.c2(y))
            return self.fc(y.flatten(1))

    torch.manual_seed(0)
    net = Net().cuda().eval()
    x = torch.randn(batch, 3, 16, 16, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    return net, x


def strict_fp32():
    import torch
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def mapped_libraries():
    """{file name stem (up to .so): {directory}} of the cuDNN, cuBLAS and NCCL files this
    process maps."""
    seen = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            path = parts[5].strip()
            base = os.path.basename(path)
            if FAMILIES.match(base):
                seen.setdefault(base[:base.index(".so")], set()).add(os.path.dirname(path))
    return seen


def export_libraries(out):
    """The sonames of the export's library modules."""
    with open(os.path.join(out, NAME + ".graph")) as f:
        return sorted(set(re.findall(r'\blibrary\s+"([^"]+)"', f.read())))


def check_mapping(out, when):
    maps = mapped_libraries()
    twice = {stem: sorted(dirs) for stem, dirs in maps.items() if len(dirs) > 1}
    assert not twice, f"{when}: libraries mapped from two files: {twice}"
    for soname in export_libraries(out):
        stem = soname[:soname.index(".so")] if ".so" in soname else soname
        assert stem in maps, f"{when}: the export's library {soname} is not mapped"
        family = [s for s in maps if s != stem and (stem.startswith(s) or s.startswith(stem))]
        others = {d for s in family for d in maps[s]}
        assert not others or maps[stem] <= others, (f"{when}: {soname} is mapped from {sorted(maps[stem])}, its family "
                                                    f"({', '.join(family)}) from {sorted(others)}")
    print(f"{when}: one file per library: " + ", ".join(f"{s} ({next(iter(d))})" for s, d in sorted(maps.items())))


def compare(got, want, what):
    err = (got.float() - want.float()).abs().max().item()
    scale = max(want.float().abs().max().item(), 1e-30)
    print(f"  {what}: max error {err:.3g} (relative {err / scale:.3g})")
    assert err / scale <= 1e-4, f"{what}: relative max error {err / scale:.3g} over 1e-4"


def child_export(out, batch=8):
    import pgcc
    net, x = model(batch)
    strict_fp32()
    pgcc.export(net, (x,), out, name=NAME, verify=True, quiet=True)
    libs = export_libraries(out)
    print(f"export: {out}, library modules: {', '.join(libs) or 'none'}")
    assert any("cudnn" in s for s in libs) and any("cublas" in s for s in libs), (
        f"the export's program holds no cuDNN or no cuBLAS kernel ({libs}): it would not test what it is for")


def run_torch(net, x):
    import torch
    with torch.no_grad():
        eager = net(x)
        compiled = torch.compile(net)(x)
    torch.cuda.synchronize()
    return eager, compiled


def child_order(out, load_first):
    import torch
    import pgcc
    strict_fp32()
    net, x = model()
    when = "load-first" if load_first else "torch-first"
    if load_first:
        program = pgcc.load(out)
        first = program(x.clone())
        torch.cuda.synchronize()
        check_mapping(out, f"{when}, after the export's first call")
        eager, compiled = run_torch(net, x)
    else:
        eager, compiled = run_torch(net, x)
        check_mapping(out, f"{when}, after PyTorch's eager and compiled calls")
        program = pgcc.load(out)
        first = program(x.clone())
    again = program(x.clone())
    torch.cuda.synchronize()
    print(f"{when}:")
    compare(compiled, eager, "torch.compile against eager")
    compare(first, eager, "the export's first call against eager")
    compare(again, eager, "the export's last call against eager")
    check_mapping(out, f"{when}, at the end")
    program.close()


def child_two(out, out2):
    """Two exports loaded together (the model at batch 8 and at batch 2: two programs, one
    libpgrt, the same libraries), called in turn, each against eager, then PyTorch again."""
    import torch
    import pgcc
    strict_fp32()
    (net, x), (_, x2) = model(8), model(2)
    a, b = pgcc.load(out), pgcc.load(out2)
    got = [(a(x.clone()), b(x2.clone())) for _ in range(3)]
    torch.cuda.synchronize()
    eager, _ = run_torch(net, x)
    eager2, _ = run_torch(net, x2)
    print("two exports:")
    for k, (ya, yb) in enumerate(got):
        compare(ya, eager, f"call {k} of the batch-8 export against eager")
        compare(yb, eager2, f"call {k} of the batch-2 export against eager")
    check_mapping(out, "two exports, at the end")
    a.close(), b.close()


def free_memory():
    cuda = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    r = cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    assert r == 0, f"cuMemGetInfo failed: {r}"
    return free.value


def child_cycles(out, cycles):
    import gc
    import torch
    import pgcc
    strict_fp32()
    _, x = model()

    def cycle():
        program = pgcc.load(out)
        y = program(x.clone())
        torch.cuda.synchronize()
        program.close()
        del program, y
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()

    cycle()  # warm-up: the driver's and PyTorch's first-use allocations
    start = free_memory()
    for k in range(cycles):
        cycle()
        if (k + 1) % 25 == 0:
            print(f"cycles: {k + 1}: free memory {free_memory() - start:+d} bytes from the start")
    end = free_memory()
    assert end == start, f"cycles: after {cycles} load/close cycles the device has {start - end} bytes less free"
    maps = mapped_libraries()
    assert all(len(d) == 1 for d in maps.values()), f"cycles: libraries mapped from two files: {maps}"
    print(f"cycles: {cycles} load/call/close cycles, free memory back to the byte ({start} bytes)")


def run_child(*args):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), *args], text=True)
    if r.returncode != 0:
        print(f"pytorch_beside: FAIL ({' '.join(args[:2])})")
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--keep", help="export into this directory (kept) instead of a temporary one")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--out2", help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=8, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child == "export":
        return child_export(a.out, a.batch)
    if a.child == "two":
        return child_two(a.out, a.out2)
    if a.child in ("load-first", "torch-first"):
        return child_order(a.out, a.child == "load-first")
    if a.child == "cycles":
        return child_cycles(a.out, a.cycles)
    with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or os.path.join(tmp, "export")
        os.makedirs(out, exist_ok=True)
        run_child("--child", "export", "--out", out)
        run_child("--child", "load-first", "--out", out)
        run_child("--child", "torch-first", "--out", out)
        run_child("--child", "cycles", "--out", out, "--cycles", str(a.cycles))
        out2 = os.path.join(a.keep or tmp, "export2")
        os.makedirs(out2, exist_ok=True)
        run_child("--child", "export", "--out", out2, "--batch", "2")
        run_child("--child", "two", "--out", out, "--out2", out2)
    print(f"pytorch_beside: PASS (export then PyTorch, PyTorch then export: one copy of each library, outputs "
          f"agree; {a.cycles} load/close cycles give back their memory; two exports loaded together agree)")


if __name__ == "__main__":
    main()

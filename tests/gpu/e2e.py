"""End to end on a GPU: torch.compile -> pgcc.export -> pgcc -> C -> run, checked
against PyTorch, then timed side by side with PyTorch's ways of running the model.

    PYTHONPATH=python:. python3 tests/gpu/e2e.py [--bench] [--fixture DIR] [MODEL ...]   (tests/gpu/run_e2e.sh)

For each model of tests/models/e2e_models.py: export the torch.compile'd forward with the
pgcc package (python/pgcc), load it with pgcc.load (which compiles the .graph with
pgcc, builds the C with libpgrt and this directory's timing helper into a shared
library and loads the weights from the exported safetensors file), and run it on
fresh inputs at new addresses on every call, its outputs also at new addresses.
Each call's output is compared with eager PyTorch and with the torch.compile'd
model on the same input (max error relative to the largest reference value), with
the C program's arena filled with NaN bytes before the call.  A training step
(a builder's fn with `train`) is checked step by step against an eager copy of the
model: the losses, and at the end every weight.  After a failure, diagnose() says
which bytes of the arena a node read before the step wrote them.
"""
import argparse
import ctypes as C
import gc
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# a fresh Inductor cache: the exporter finds this run's Triton cubins there
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="pgcc-e2e-inductor-"))
import torch  # noqa: E402

import pgcc  # noqa: E402
from pgcc.graphfile import ident  # noqa: E402
from pgcc.module_watch import ModuleWatch  # noqa: E402
from tests.models import e2e_models  # noqa: E402

TOL = 1e-5  # fp32 with TF32 off


def arena_buffers(c_path):
    """The intermediates' places in the arena, from the generated C's buffer table: (name, offset, size).
    (Only diagnose() needs them; NAME_info gives the program's fields, not its arena plan.)"""
    return [(m.group(1), int(m.group(3)), int(m.group(2))) for m in re.finditer(
        r'\{\.name = "(\w+)", \.size = (\d+), \.kind = PGRT_BUF_ARENA, \.offset = (\d+)\}', open(c_path).read())]


def load_program(out, name):
    """The generated C of one model, built with the timing helper e2e_bench.c (strict
    warnings, as the C must compile cleanly), loaded and initialised by pgcc.load.  Its
    arena is a torch tensor that the tests fill with 0xff bytes (NaN as floats) before
    every call: a node that reads an intermediate before anything wrote it then shows up
    as a wrong result, however the memory happened to be left by earlier work in the
    process."""
    prog = pgcc.load(out, name=name, build_dir=os.path.join(out, "build-e2e"),  # (verify's is build/)
                     extra_sources=[f"{ROOT}/tests/gpu/e2e_bench.c"],
                     extra_flags=["-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{ROOT}/tests/gpu"])
    prog.buffers = arena_buffers(prog.so_path[:-3] + ".c")
    return prog


def rel_err(got, ref):
    e = ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    return e if e == e else float("inf")  # NaN: as wrong as it gets (max() would drop it)


def fresh_like(xs):
    """New values at new addresses: floats from N(0, 1), integers (token ids) in the example's range."""
    return [torch.randn_like(x) if x.is_floating_point() else torch.randint_like(x, 0, int(x.max()) + 1) for x in xs]


def as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def copy_dtod(dst, src, size):
    from pgcc.cuda import check, cu
    torch.cuda.synchronize()
    check(cu().MemcpyDtoD(dst, src, size), f"cuMemcpyDtoD(0x{dst:x}, 0x{src:x}, {size})")


def weight_tensor(prog, field, like):
    """A copy of one of the C program's weights (its device memory, by the weights struct)."""
    t = torch.empty_like(like)
    copy_dtod(t.data_ptr(), prog.weight_ptr(field), t.numel() * t.element_size())
    return t


def set_weight(prog, field, t):
    copy_dtod(prog.weight_ptr(field), t.data_ptr(), t.numel() * t.element_size())


def diagnose(prog, run_err):
    """After a failure: which bytes of the arena some node reads before anything in the step
    wrote them.  run_err() runs one step from the same state on the same inputs and returns
    its error.  Poison one intermediate at a time (the rest zero), then 4 KiB pieces of the
    ones that matter; and try other fill patterns, to tell data reads from control reads."""

    def err_after(fill):
        fill()
        return run_err()

    def poison(off, size):
        def fill():
            prog.arena.zero_()
            prog.arena[off:off + size].fill_(0xFF)
        return fill

    for byte in (0x00, 0x3F, 0x7F, 0xFF):
        e = err_after(lambda: prog.arena.fill_(byte))
        print(f"  diagnosis: arena filled with 0x{byte:02x} bytes: error {e:.3g}")
    culprits = [b for b in prog.buffers if not err_after(poison(b[1], b[2])) <= TOL]
    print(f"  diagnosis: {len(culprits)} of {len(prog.buffers)} intermediates are read before they are written")
    for bname, off, size in culprits:
        bad = [k for k in range(0, size, 4096) if not err_after(poison(off + k, min(4096, size - k))) <= TOL]
        ranges = []
        for k in bad:
            if ranges and ranges[-1][1] == k:
                ranges[-1][1] = k + 4096
            else:
                ranges.append([k, k + 4096])
        print(f"    {bname} (+{off}, {size} bytes): read before written in " +
              ", ".join(f"{bname}+{a}..{min(b, size)}" for a, b in ranges))


def forward_err(prog, fn, inputs, ref_out):
    ref = as_list(fn(*inputs))

    def run_err():
        outs = [torch.empty_like(r) for r in ref_out]
        prog.run(prog.args(inputs, outs))
        torch.cuda.synchronize()
        return max(rel_err(o, r) for o, r in zip(outs, ref))
    return run_err


def export(cfn, inputs, weights, out, name, watch):
    """The package's export of a callable already compiled and warmed up (here)."""
    pgcc.export(cfn, inputs, out, name=name, weights=weights, compile=False, verify=False, warmup=0, watch=watch)


def check(name, out, models, watch, calls=6):
    fn, inputs, weights = models.BUILDERS[name]()
    if getattr(fn, "train", False) is True:  # (an nn.Module has a train() method)
        return check_train(name, out, fn, inputs, weights, watch, calls)
    cfn = torch.compile(fn)
    t0 = time.perf_counter()
    if watch:
        watch.paused = False  # this model's first run loads its library modules
    for _ in range(3):
        cfn(*inputs)
    export(cfn, inputs, weights, out, name, watch)
    export_s = time.perf_counter() - t0
    prog = load_program(out, name)
    ref_out = as_list(fn(*inputs))
    keep, seen, worst_eager, worst_compiled = [], set(), 0.0, 0.0
    for call in range(calls):
        xs = fresh_like(inputs)
        outs = [torch.empty_like(r) for r in ref_out]
        addrs = tuple(t.data_ptr() for t in xs + outs)
        assert not seen.intersection(addrs), "an address repeated: the test would not show that moving works"
        seen.update(addrs)
        keep += xs + outs  # alive, so that the next call's buffers are elsewhere
        prog.fill_arena(0xFF)
        prog.run(prog.args(xs, outs))
        torch.cuda.synchronize()
        eager = as_list(fn(*xs))
        compiled = as_list(cfn(*xs))
        e = max(rel_err(o, r) for o, r in zip(outs, eager))
        c = max(rel_err(o, r) for o, r in zip(outs, compiled))
        worst_eager, worst_compiled = max(worst_eager, e), max(worst_compiled, c)
        print(f"  {name} call {call}: inputs/outputs at new addresses, arena poisoned; max relative error {e:.3g} "
              f"vs eager, {c:.3g} vs torch.compile")
    ok = worst_eager <= TOL and worst_compiled <= TOL
    print(f"{'PASS' if ok else 'FAIL'} {name}: {calls} calls, max relative error {worst_eager:.3g} vs eager, "
          f"{worst_compiled:.3g} vs torch.compile (tolerance {TOL}); export {export_s:.2f} s, weights "
          f"{prog.load_s * 1e3:.1f} ms, init {prog.init_s * 1e3:.1f} ms")
    if not ok:
        diagnose(prog, forward_err(prog, fn, inputs, ref_out))
    else:  # the package's own check (pgcc/verify.py) on the same export: it must agree
        try:
            from pgcc.verify_export import verify
            print("  " + verify(out, cfn, inputs))
        except pgcc.ExportError as e:
            print(f"FAIL {name}: pgcc.verify: {e}")
            ok = False
    return ok, prog, fn, cfn, inputs, ref_out, weights


def train_err(prog, step, inputs, start):
    """One training step from the exported weights, C against eager: the worst error in the
    loss and the weights after it."""
    ref = step.fresh()
    with torch.no_grad():
        for n, w in ref.weights.items():
            w.copy_(start[n])
    loss = as_list(ref(*inputs))
    fields = {"w_" + ident(n): (w, start[n]) for n, w in ref.weights.items()}

    def run_err():
        for f, (_, w0) in fields.items():
            set_weight(prog, f, w0)
        outs = [torch.empty_like(r) for r in loss]
        prog.run(prog.args(inputs, outs))
        torch.cuda.synchronize()
        e = max(rel_err(o, r) for o, r in zip(outs, loss))
        return max([e] + [rel_err(weight_tensor(prog, f, w), w) for f, (w, _) in fields.items()])
    return run_err


def check_train(name, out, step, inputs, weights, watch, calls):
    """A training step: its state is the weights, which the C program keeps and updates.
    The reference is an eager copy of the model taken at export time; both take the same
    steps on fresh batches, and the losses and, at the end, every weight must agree."""
    cstep = torch.compile(step.__call__)
    t0 = time.perf_counter()
    if watch:
        watch.paused = False
    for _ in range(3):
        cstep(*inputs)
    ref = step.fresh()  # the weights as exported (the captures below do not run)
    start = {n: w.detach().clone() for n, w in ref.weights.items()}
    export(cstep, inputs, weights, out, name, watch)
    export_s = time.perf_counter() - t0
    prog = load_program(out, name)
    fields = {"w_" + ident(n): w for n, w in ref.weights.items()}  # (the exporter's buffer names)
    have = {f.name for f in prog.weight_fields}
    missing = [f for f in fields if f not in have]
    assert not missing, f"weights the C program does not have: {missing}"
    worst_loss = 0.0
    keep = []
    for call in range(calls):
        xs = fresh_like(inputs)
        expect = as_list(ref(*xs))
        outs = [torch.empty_like(r) for r in expect]
        keep += xs + outs
        prog.fill_arena(0xFF)
        prog.run(prog.args(xs, outs))
        torch.cuda.synchronize()
        e = max(rel_err(o, r) for o, r in zip(outs, expect))
        worst_loss = max(worst_loss, e)
        print(f"  {name} step {call}: fresh batch at new addresses, arena poisoned; loss {outs[0].item():.6f} "
              f"(eager {expect[0].item():.6f}), relative error {e:.3g}")
    worst_w = max(rel_err(weight_tensor(prog, f, w), w) for f, w in fields.items())
    ok = worst_loss <= TOL and worst_w <= TOL
    print(f"{'PASS' if ok else 'FAIL'} {name}: {calls} training steps, max relative error {worst_loss:.3g} in the "
          f"loss, {worst_w:.3g} in the {len(fields)} weights after the last step (tolerance {TOL}); export "
          f"{export_s:.2f} s, init {prog.init_s * 1e3:.1f} ms")
    if not ok:
        diagnose(prog, train_err(prog, step, inputs, start))
    return ok, prog, step, cstep, inputs, expect, weights


# ---- side-by-side timing ---------------------------------------------------------------

def time_steps(step, iters=100, reps=15):
    """Median GPU time per step (events around `iters` steps) and host time per step."""
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    gpu, host = [], []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        host.append((time.perf_counter() - t0) / iters * 1e6)
        e1.record()
        e1.synchronize()
        gpu.append(e0.elapsed_time(e1) / iters * 1e3)
    return statistics.median(gpu), statistics.median(host)


def nbytes(ts):
    seen, n = set(), 0
    for t in ts:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            n += t.numel() * t.element_size()
    return n


def private_pool_segments():
    """{segment address: size} of the caching allocator's segments in private pools (a
    CUDA graph's memory: torch.cuda.graph's, CUDA Graph Trees')."""
    return {seg["address"]: seg["total_size"] for seg in torch.cuda.memory_snapshot()
            if tuple(seg.get("segment_pool_id") or (0, 0)) != (0, 0)}


class Row:
    """One way of running the model, in the table: step time (GPU and host, µs), set-up
    time, and the device memory it needs beyond weights, inputs and outputs: what a step
    allocates at its peak (activations; a training step's gradients), plus the private
    pools it made (a CUDA graph's memory), plus what it keeps (static copies of the
    inputs).  Library workspaces, made once per stream and shared by all the PyTorch
    ways, are not counted for any of them."""

    def __init__(self, label, gpu=float("nan"), host=float("nan"), setup_s=float("nan"), peak=0, pools=0, keeps=0,
                 failed=None):
        self.label, self.gpu, self.host, self.setup_s = label, gpu, host, setup_s
        self.peak, self.pools, self.keeps, self.failed = peak, pools, keeps, failed

    @property
    def extra(self):
        return float("nan") if self.failed else self.peak + self.pools + self.keeps


def measure(label, make, clear=lambda: None):
    """Sets a way up (make() returns its step; it is called 3 times: compiling, warming
    up, capturing), times it, and measures its memory (Row)."""
    torch.cuda.synchronize()
    clear()
    before = private_pool_segments()
    t0 = time.perf_counter()
    try:
        step = make()
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    except Exception as e:  # reported with the table; the other ways are still timed
        import traceback
        torch.cuda.synchronize()
        return Row(label, setup_s=time.perf_counter() - t0,
                   failed=f"{type(e).__name__}: {e}\n" + "".join(traceback.format_tb(e.__traceback__)[-4:]))
    setup_s = time.perf_counter() - t0
    gpu, host = time_steps(step)
    torch.cuda.synchronize()
    clear()
    gc.collect()
    a0 = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return Row(label, gpu, host, setup_s, peak=torch.cuda.max_memory_allocated() - a0,
               pools=sum(size for addr, size in private_pool_segments().items() if addr not in before),
               keeps=getattr(step, "keeps", 0))


def profiled_kernel_us(step, n=20):
    """The GPU time of the kernels (and copies) that n calls of step run, summed, per call."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    return sum(e.self_device_time_total for e in events) / n, sum(e.count for e in events) / n


def bench(name, prog, fn, inputs, ref_out, weights):
    clear = lambda: None
    if getattr(fn, "train", False) is True:
        # gradients are a step's own memory: none before a variant starts, so that they count
        clear = lambda opt=fn.opt: opt.zero_grad(set_to_none=True)
        fn = fn.__call__  # a training step: torch.compile takes it as a function (it updates the weights)
    xs_a, xs_b = fresh_like(inputs), fresh_like(inputs)
    variants = [measure("eager", lambda: lambda: fn(*xs_a), clear)]

    def manual():
        static = [x.clone() for x in inputs]
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # as in PyTorch's whole-network example: warm up on a side stream
            for _ in range(3):
                fn(*static)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            fn(*static)
        step = lambda: ([st.copy_(x) for st, x in zip(static, xs_a)], g.replay())
        step.keeps = nbytes(static)  # the static inputs it copies into
        return step
    # before torch.compile has touched anything (a capture that fails can leave the CUDA
    # generator thinking a capture is still under way)
    variants.append(measure("manual torch.cuda.graph (copy inputs in)", manual, clear))
    cdef = torch.compile(fn)
    variants.append(measure("torch.compile default", lambda: lambda: cdef(*xs_a), clear))
    floor_default, launches_default = profiled_kernel_us(lambda: cdef(*xs_a))  # before the reset below
    torch._dynamo.reset()
    try:  # CUDA Graph Trees keep one pool per device for every graph: a fresh one for this model
        from torch._inductor.cudagraph_trees import reset_cudagraph_trees
        reset_cudagraph_trees()
    except ImportError:
        pass
    gc.collect()
    torch.cuda.empty_cache()
    cro = torch.compile(fn, mode="reduce-overhead")
    variants.append(measure("torch.compile reduce-overhead", lambda: lambda: cro(*xs_a), clear))
    variants = [variants[0], variants[2], variants[3], variants[1]]  # the order of the tables

    outs_a, outs_b = [torch.empty_like(r) for r in ref_out], [torch.empty_like(r) for r in ref_out]
    a, b = prog.args(xs_a, outs_a), prog.args(xs_b, outs_b)
    prog.lib.e2e_bench.restype = C.c_double
    prog.lib.e2e_bench.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p, C.c_int,
                                   C.POINTER(C.c_double)]
    stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    fnp = C.cast(prog.run_fn, C.c_void_p)

    def pgcc_steps(first, second):
        gpu, host = [], []
        for _ in range(15):
            gus = C.c_double()
            h = prog.lib.e2e_bench(fnp, prog.ctx, C.byref(first), C.byref(second), stream, 100, C.byref(gus))
            assert h >= 0, prog.err()
            gpu.append(gus.value)
            host.append(h)
        return gpu, host
    # the same addresses on every call as well: what patching the moved nodes costs
    g_same, h_same = pgcc_steps(a, a)
    gpu, host = pgcc_steps(a, b)
    arena = prog.arena_bytes
    # blocks from outside the captures whose bytes matter (the exporter's t<N>, role weight,
    # tensor __static_N) are weights of the program that eager does not have as weights: they count here
    kept = sum(f.size for f in prog.weight_fields if (f.tensor or "").startswith("__static_"))
    variants.append(Row("pgcc C (new addresses every call)", statistics.median(gpu), statistics.median(host),
                        prog.init_s + prog.load_s, pools=arena, keeps=kept))
    variants.append(Row("pgcc C (same addresses every call)", statistics.median(g_same), statistics.median(h_same),
                        pools=arena, keeps=kept))  # the same program: its memory too
    # The floor: the GPU time of the very kernels pgcc launches, summed per step (CUPTI sees
    # every kernel in the process, whoever launched it).  torch.compile default's profile is
    # printed beside it: it is a different set of kernels where the step has graph breaks.
    turn = [a, b]
    floor, launches = profiled_kernel_us(lambda: (prog.run(turn[0]), turn.reverse()))
    if launches == 0:
        print("  the profiler saw no kernels of the pgcc program: its floor is torch.compile default's")
        floor = floor_default

    io = nbytes(list(xs_a) + list(outs_a))
    wb = nbytes(list(weights.values()))
    eager_total = wb + io + variants[0].extra
    ro = variants[2].gpu
    print(f"\n{name}: median of 15 x 100 steps, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"  {'':42s} {'step us':>8s} {'host us':>8s} {'vs RO':>7s} {'vs floor':>8s} {'mem MiB':>8s} "
          f"{'vs eager':>9s} {'set-up ms':>9s}")
    for v in variants:
        if v.failed:
            print(f"  {v.label:42s} failed: {v.failed[:2000]}")
            continue
        above = (v.extra - variants[0].extra) / eager_total
        print(f"  {v.label:42s} {v.gpu:8.1f} {v.host:8.1f} {v.gpu / ro:6.2f}x {v.gpu / floor:7.2f}x "
              f"{v.extra / 2**20:8.2f} {above:+8.1%} {v.setup_s * 1e3:9.1f}   (step peak {v.peak / 2**20:.2f}, "
              f"pools {v.pools / 2**20:.2f}, kept {v.keeps / 2**20:.2f} MiB)")
    print(f"  floor: the pgcc program's kernels' own GPU time per step, profiled: {floor:.1f} us "
          f"({launches:.0f} kernels and copies per step); torch.compile default's: {floor_default:.1f} us "
          f"({launches_default:.0f} per step)")
    print(f"  memory: beyond weights ({wb / 2**20:.2f} MiB), inputs and outputs ({io / 2**20:.2f} MiB); 'vs eager' "
          f"is the difference over eager's total ({eager_total / 2**20:.2f} MiB); pgcc's is its arena (as its pool); set-up for "
          f"pgcc is NAME_init plus reading the weights")
    return variants


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=["mlp"])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "e2e"))
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--fixture", help="copy the exports of the models into DIR (the CI fixtures)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:  # before any model runs: library modules load on first use
        watch = ModuleWatch()
    except pgcc.ExportError as e:
        print(f"warning: {e}")
        watch = None
    failed, done = 0, []
    for name in a.models:
        out = os.path.join(a.out, name)
        shutil.rmtree(out, ignore_errors=True)
        try:
            ok, prog, fn, cfn, inputs, ref_out, weights = check(name, out, e2e_models, watch)
        except Exception as e:  # report and go on to the next model
            import traceback
            traceback.print_exc()
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1
            continue
        failed += not ok
        done.append((name, prog, fn, inputs, ref_out, weights))
        if a.fixture:
            shutil.copytree(out, os.path.join(a.fixture, name), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.so", "*.c", "*.h", "build", "build-e2e"))
    if watch:
        watch.close()  # the benchmark's profiler needs CUPTI to itself
    for name, prog, fn, inputs, ref_out, weights in done:
        if a.bench:
            bench(name, prog, fn, inputs, ref_out, weights)
        prog.close()
    print(f"e2e: {len(a.models) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

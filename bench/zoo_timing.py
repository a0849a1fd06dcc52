"""The zoo side by side: for each model of tests/models/zoo_models.py, one step run eagerly, under
torch.compile, under torch.compile(mode="reduce-overhead") (CUDA Graph Trees), as a
manual capture of the compiled program replayed (the same kernels in one graph with
nothing moving: the floor), and as pgcc's export run from C through libpgrt.

    PYTHONPATH=python:. python3 bench/zoo_timing.py [--rounds 5] [--iters 50] [--out DIR] [--cache DIR]
        [--setup-jobs N] PATTERN ...

PATTERN "breaks:*" takes the programs with host reads of tests/models/breaks_models.py (no manual
capture for those: they cannot be captured whole; reduce-overhead runs them as several
graphs with the read between); "wild:timm:*" and the like, programs of the wild suite
(tests/wild; those whose inputs are tensors); "training:*", steps of the training suite
(tests/training, SuiteStep: their optimizers made capturable in every way).

Each model runs in a child process of its own, one after another (never two timings
at once).  In a child: the ways are set up (set-up time: the first three calls, the
export and its verification for pgcc, the load), then timed in `rounds` interleaved
rounds (each round times every way once: `iters` steps between two CUDA events for
the GPU time per step, then, from an idle GPU, HOST_CALLS calls timed by the host's
perf_counter for its own time per call (the loop's wall time per call, loop_us in the
JSON, is not that: once the GPU falls behind, the host waits for room in the launch
queue, and its time per call grows towards the GPU's); the table
gives medians over the rounds (the JSON each round's GPU time too, gpu_us_rounds, for
ratios round by round), the spread (max - min over the median) of the GPU time,
ratios to reduce-overhead and to the floor, and memory: weights, what an eager step
allocates at its peak beyond them (libraries' workspaces, made once, not counted),
the private pool segments reduce-overhead made, pgcc's arena (pgcc holds its own copy
of the weights besides: a deployment has no PyTorch model beside it), and what eager's
first call made and keeps (its libraries' workspaces: eager_kept_bytes; the table's
"eager kept").  pgcc's init is timed five ways, INIT_ROUNDS rounds of the five in turn
(the table gives medians, the JSON every init): cold, with libpgrt's cache of compiled
cubins empty (PGRT_CACHE, a new directory: libpgrt's own kernels are the cubins its
build compiled, anything else NVRTC compiles); warm, with what the round's cold init
kept there; serial, cold with the libraries' fatbins loaded one by one
(PGRT_LIBLOAD=serial) instead of on several threads; copied, the same with the driver
copying each fatbin first (PGRT_LIBLOAD=serial,copy: how libpgrt loaded them until
2026-11-23); and unbuilt, cold without the
cubins libpgrt's build compiled (PGRT_PREBUILT=off: NVRTC compiles libpgrt's own
kernels too, as before libpgrt shipped them).  pgcc_init_parts and pgcc_init_WAY_parts
in the JSON say where the median init's time went.
The export comes right after torch.compile's set-up, before the other ways run
(an eager call makes cuDNN compile attention kernels under the names of the compiled
program's, which the export cannot tell apart).  Every way but the manual capture gets
inputs at other addresses from call to call, four sets in turn (pgcc and eager read
them in place; reduce-overhead copies them into its static inputs); the manual capture
replays on the inputs it was captured on.  A training step's manual capture,
reduce-overhead and eager ways each step a copy of their own (TrainStep.fresh).  With --kernels, one step of reduce-overhead,
the manual capture and pgcc is also profiled kernel by kernel (torch.profiler): the GPU
time each way's kernels, copies and memsets take, side by side per name.  One JSON line per model
on stdout (BENCH {...}), the table at the end, zoo_bench.json under --out.  --cache
keeps each model's Inductor cache under DIR/MODEL (tests/gpu/zoo_export.py --cache fills the
same folders): a later run skips Triton's compiling and autotuning, which is most of a
model's set-up; the set-up times in the table are then a warm cache's.  --setup-jobs N
sets every model up first, N at a time and untimed (the compile, reduce-overhead's, the
export from a cold cache: its time is the table's export time, beside N-1 other set-ups),
so that the timed children, one after another, start from warm caches and load the
export that pass made and verified instead of exporting again.  --pdl builds
Inductor's Triton kernels for programmatic dependent launch in every way
(torch._inductor.config.triton.enable_pdl: the captures of reduce-overhead, the manual
capture and pgcc's export hold programmatic edges), and times the same pgcc export a
second way, its programmatic edges made full ones (PGRT_PDL=off), with a table of the two.
--ctypes-call times the same export a second way too, called through ctypes with its
arguments checked in Python (fastcall.py's call in C turned off), with a table of the two.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HOST_CALLS = 8  # host time: calls per timing, from an idle GPU (well inside the launch queue)
WAYS = ("eager", "compile", "reduce-overhead", "manual capture", "pgcc", "pgcc, full edges", "pgcc, ctypes call")
INIT_ROUNDS = 3
INIT_WAYS = {  # pgcc's init, in this order: way -> (environment, libpgrt's cache of compiled cubins: "cold", the
    # round's cache that the cold init starts empty; "new", an empty one of the way's own)
    "cold": ({}, "cold"),  # the round's cold cache, empty
    "warm": ({}, "cold"),  # the same, with what the cold init kept there
    "serial": ({"PGRT_LIBLOAD": "serial"}, "new"),  # the libraries' fatbins loaded one by one, with their kernels
    "copied": ({"PGRT_LIBLOAD": "serial,copy"}, "new"),  # and each copied by the driver first: libpgrt until now
    "unbuilt": ({"PGRT_PREBUILT": "off"}, "new"),  # libpgrt's own kernels compiled by NVRTC, not its build's cubins
}


def load_with(pgcc, exp, env):
    """pgcc.load(exp) with these environment variables set for its init (libpgrt reads them then)."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return pgcc.load(exp)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def child(key, rounds, iters, out_dir, kernels=False, pdl=False, setup_only=False, reuse=None, ctypes_call=False):
    import torch

    import pgcc
    from pgcc.loader import read_report
    if pdl:  # Inductor's Triton kernels built and launched for programmatic dependent launch, in every way
        torch._inductor.config.triton.enable_pdl = True

    watch = pgcc.ModuleWatch()
    fn, inputs, weights = build(key)
    train = getattr(fn, "train", False) is True
    wbytes = sum(t.numel() * t.element_size() for t in {t.data_ptr(): t for t in weights.values()}.values())
    pool = [[x.clone() for x in inputs] for _ in range(4)]  # inputs at other addresses, call by call
    rec = {"model": key, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "weights_bytes": wbytes}
    steps, setup = {}, {}

    def timed_setup(name, make):
        print(f"PHASE set-up of {name}", flush=True)  # (what a child that dies was doing: main reports it)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        steps[name] = make()
        torch.cuda.synchronize()
        setup[name] = time.perf_counter() - t0

    def calls(f):
        state = {"k": 0}

        def step():
            state["k"] = (state["k"] + 1) % len(pool)
            return f(*pool[state["k"]])
        return step

    compiled = torch.compile(fn)

    def make_compiled():
        for _ in range(3):
            compiled(*inputs)
        return calls(compiled)
    try:
        timed_setup("compile", make_compiled)
    except Exception as e:  # noqa: BLE001 -- a step torch.compile cannot run (a double backward): pgcc
        import traceback  # exports it as it runs eagerly, and the floor is that step captured
        traceback.print_exc()
        rec["compile_failed"] = f"{type(e).__name__}: {e}"[:300]
        steps.pop("compile", None)
        compiled = fn
        torch.cuda.synchronize()

    def make_pgcc():
        name = key.replace(":", "_")
        exp = os.path.join(out_dir, name)
        if reuse and os.path.exists(os.path.join(reuse, name)):
            exp = os.path.join(reuse, name)  # (the set-up pass's export, verified there)
            report = read_report(exp, name)
        else:
            t0 = time.perf_counter()
            given = {"state": fn.state} if isinstance(fn, SuiteStep) else {"weights": weights}
            res = pgcc.export(compiled, tuple(inputs), exp, name=name, compile=False,
                              quiet=True, watch=watch, warmup=1, **given)
            rec["pgcc_export_s"] = round(time.perf_counter() - t0, 2)
            rec["pgcc_verified"] = str(res.verified)
            report = res.report or {}
        if setup_only:
            return None
        # init, INIT_ROUNDS rounds of every INIT_WAYS way in turn: the first cold init's
        # program is the one timed below
        p, inits = None, {w: [] for w in INIT_WAYS}
        for _ in range(INIT_ROUNDS):
            cold = tempfile.mkdtemp(prefix="pgrt-cache-")
            for way, (env, cache_of) in INIT_WAYS.items():
                cache = cold if cache_of == "cold" else tempfile.mkdtemp(prefix="pgrt-cache-")
                q = load_with(pgcc, exp, dict(env, PGRT_CACHE=cache))
                inits[way].append((q.init_s * 1e3, q.init_stats()))
                if p is None:
                    p = q
                else:
                    q.close()
                if cache != cold:
                    shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(cold, ignore_errors=True)
        for way, got in inits.items():
            ms = [m for m, _ in got]
            name = "pgcc_init" if way == "cold" else f"pgcc_init_{way}"
            rec[name + "_ms"] = round(statistics.median(ms), 2)
            rec[name + "_all_ms"] = [round(m, 2) for m in ms]
            rec[name + "_parts"] = sorted(got, key=lambda g: g[0])[len(got) // 2][1]  # the median init's
        rec["pgcc_load_ms"] = round(p.load_s * 1e3, 2)
        rec["pgcc_arena_bytes"] = p.arena_bytes
        rec["pgcc_programmatic_edges"] = report.get("programmatic_edges", 0)
        outs = p.new_outputs()
        steps["_program"] = p
        if pdl:  # the same export with every dependency a full one (libpgrt reads PGRT_PDL at init)
            t0 = time.perf_counter()
            os.environ["PGRT_PDL"] = "off"
            try:
                q = pgcc.load(exp)
            finally:
                del os.environ["PGRT_PDL"]
            outs_q = q.new_outputs()
            steps["_program_full"] = q
            steps["pgcc, full edges"] = calls(lambda *xs: q(*xs, out=outs_q))
            setup["pgcc, full edges"] = time.perf_counter() - t0
        rec["pgcc_call_in_c"] = p._caller is not None  # (fastcall.py: the call checked and made in C)
        if ctypes_call:  # the same export called the way it was before the call in C: checks in Python, ctypes
            t0 = time.perf_counter()
            r = pgcc.load(exp)
            r._caller = None
            outs_r = r.new_outputs()
            steps["_program_ctypes"] = r
            steps["pgcc, ctypes call"] = calls(lambda *xs: r(*xs, out=outs_r))
            setup["pgcc, ctypes call"] = time.perf_counter() - t0
        return calls(lambda *xs: p(*xs, out=outs))
    try:
        timed_setup("pgcc", make_pgcc)
    except Exception as e:  # noqa: BLE001 -- the table says what failed
        import traceback
        traceback.print_exc()  # (into the model's .bench.log)
        rec["pgcc_failed"] = f"{type(e).__name__}: {e}"[:300]
    watch.close()
    if setup_only:  # (the caches warmed: reduce-overhead's compile too; nothing timed)
        ro = torch.compile(fn, mode="reduce-overhead")
        for _ in range(3 if "compile_failed" not in rec else 0):
            if train:
                torch.compiler.cudagraph_mark_step_begin()
            ro(*inputs)
        torch.cuda.synchronize()
        rec["setup_s"] = {k: round(v, 3) for k, v in setup.items()}
        print("SETUP " + json.dumps(rec), flush=True)
        return

    # A training step's ways each get a copy of their own (TrainStep.fresh), at the state
    # it had before pgcc's export: a capture bakes the addresses of the state it updates,
    # and ways sharing one model and optimizer would update each other's state.  A step
    # marked as the guide marks one (a function with .train = True, a wild program) has no
    # copy to give: its ways share its state (its gradients accumulate across them, which
    # changes the values, not the work)
    own = (lambda: fn.fresh()) if train and hasattr(fn, "fresh") else (lambda: fn)
    if "compile_failed" in rec:  # (the step as pgcc exported it: eagerly)
        compiled_m = own() if train else fn
    else:
        compiled_m = torch.compile(own()) if train else compiled

    def make_manual():  # (before reduce-overhead, whose trees keep a training step's autograd nodes alive)
        # warmed up and captured on one side stream: a training step's AccumulateGrad nodes
        # take the stream of their first backward, and one made on the default stream
        # makes the capture fail ("would make the legacy stream depend on a capturing
        # blocking stream")
        import gc
        g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # (the first compiles; what a later call compiles must not be captured)
                compiled_m(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        gc.collect()
        # the libraries' workspaces made again inside the capture, in its pool:
        # reduce-overhead, set up next, frees PyTorch's cuBLAS workspaces (CUDA Graph Trees
        # clear them around their warm-ups), which a graph that captured the ones made
        # before would go on writing into
        torch._C._cuda_clearCublasWorkspaces()
        with torch.cuda.graph(g, stream=side):
            compiled_m(*inputs)
        g.replay()  # (a fault here is the capture's own)
        torch.cuda.synchronize()
        return g.replay
    if not key.startswith("breaks:"):  # (a program with host reads cannot be captured whole)
        try:
            timed_setup("manual capture", make_manual)
        except Exception as e:  # noqa: BLE001 -- a wild program that reads values back, or uses a side stream:
            import traceback  # no floor for it, the other ways still timed (the JSON says why)
            traceback.print_exc()
            rec["manual_failed"] = f"{type(e).__name__}: {e}"[:300]
            steps.pop("manual capture", None)
            torch.cuda.synchronize()

    ro = torch.compile(own(), mode="reduce-overhead")
    pools_before = pool_segments(torch)

    def ro_step(*xs):
        if train:  # (a step with graph breaks at backward(): PyTorch's advice for training loops)
            torch.compiler.cudagraph_mark_step_begin()
        return ro(*xs)

    def make_ro():
        for _ in range(3):
            ro_step(*inputs)
        return calls(ro_step)
    try:
        timed_setup("reduce-overhead", make_ro)
    except Exception as e:  # noqa: BLE001 -- the same step: reduce-overhead compiles it too
        import traceback
        traceback.print_exc()
        rec["ro_failed"] = f"{type(e).__name__}: {e}"[:300]
        steps.pop("reduce-overhead", None)
        torch.cuda.synchronize()
    rec["ro_pool_bytes"] = sum(n for a, n in pool_segments(torch).items() if a not in pools_before)

    # eager, last (an eager call makes cuDNN compile variants of the compiled program's
    # kernels under the same names, which an export after it could not tell apart), and
    # the peak of its second call beyond weights and inputs: libraries' workspaces, made
    # once per process and stream, are not counted (reduce-overhead frees PyTorch's
    # cuBLAS workspaces, and the first eager call makes them again); the first call's
    # peak is kept beside it
    eager = own()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    eager(*inputs)
    torch.cuda.synchronize()
    rec["eager_first_peak_bytes"] = torch.cuda.max_memory_allocated() - base
    rec["eager_kept_bytes"] = torch.cuda.memory_allocated() - base  # what the first call made and keeps: workspaces
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    eager(*inputs)
    torch.cuda.synchronize()
    rec["eager_peak_bytes"] = torch.cuda.max_memory_allocated() - base
    timed_setup("eager", lambda: calls(eager))

    ways = [w for w in WAYS if w in steps]
    for w in ways:  # warm, each way synchronized: a fault is then the way's that made it
        print(f"PHASE warm-up of {w}", flush=True)
        for _ in range(5):
            steps[w]()
        torch.cuda.synchronize()
    gpu = {w: [] for w in ways}
    host = {w: [] for w in ways}
    loop = {w: [] for w in ways}
    print("PHASE timing", flush=True)
    for _ in range(rounds):
        for w in ways:  # interleaved: every way once per round
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            t0 = time.perf_counter()
            for _ in range(iters):
                steps[w]()
            loop[w].append((time.perf_counter() - t0) / iters * 1e6)
            e1.record()
            e1.synchronize()
            gpu[w].append(e0.elapsed_time(e1) / iters * 1e3)
            # the host's own time: HOST_CALLS calls from an idle GPU, fewer than the launch
            # queue holds (in the loop above the host waits for room in the queue once the
            # GPU falls behind, and its time per call grows towards the GPU's)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(HOST_CALLS):
                steps[w]()
            host[w].append((time.perf_counter() - t0) / HOST_CALLS * 1e6)
            torch.cuda.synchronize()
    rec["train"] = train
    rec["ways"] = {w: {"gpu_us": round(statistics.median(gpu[w]), 1), "host_us": round(statistics.median(host[w]), 1),
                       "loop_us": round(statistics.median(loop[w]), 1),
                       "spread": round((max(gpu[w]) - min(gpu[w])) / statistics.median(gpu[w]), 3),
                       "gpu_us_rounds": [round(x, 1) for x in gpu[w]],  # (round by round: ratios per round)
                       "setup_s": round(setup[w], 3)} for w in ways}
    if kernels:
        rec["kernels"] = kernel_profile(torch, {w: steps[w] for w in ("reduce-overhead", "manual capture", "pgcc")
                                               if w in steps})
    rec["pdl"] = pdl
    print("BENCH " + json.dumps(rec), flush=True)
    for k in ("_program", "_program_full", "_program_ctypes"):
        if k in steps:
            steps[k].close()


class SuiteStep:
    """A step of the training suite (tests/training/training_steps.py) as the bench times
    it: built from its seed, stepped once eagerly (its optimizer makes its state), its
    optimizers made capturable (their step counts on the GPU: without that neither a
    manual capture nor reduce-overhead graphs the update, and pgcc's export makes them so
    anyway), so that every way runs the same update.  `state`: the objects for
    pgcc.export's state=; `weights`: every state tensor; fresh(): another at the state
    this one was built with.  A step whose batch is one dict of tensors is called with
    the dict's values in its order (the bench's ways take tensors), and the dict made
    again inside the call."""

    train = True

    def __init__(self, name):
        import torch

        from pgcc.train_state import capturable, discover, state_objects, state_weights
        from tests.training.training_steps import PROGRAMS
        self.name = name
        torch.manual_seed(0)
        self.program = PROGRAMS[name]()
        self.inputs, self.keys = self.program.batch(1000), None
        if isinstance(self.inputs, tuple) and len(self.inputs) == 1 and isinstance(self.inputs[0], dict):
            self.keys = list(self.inputs[0])
            self.inputs = tuple(self.inputs[0].values())
        if not isinstance(self.inputs, tuple) or not all(isinstance(x, torch.Tensor) for x in self.inputs):
            raise TypeError(f"training:{name}: the bench takes steps whose arguments are tensors, or one dict of them")
        torch.manual_seed(1)
        self.program.step(*self.program.batch(1000))
        objs = (state_objects(torch, self.program.state) if self.program.state is not None
                else discover(torch, self.program.step))
        capturable(torch, objs)
        self.state = tuple(o for _, o in objs)
        self.weights = state_weights(torch, objs)
        torch.cuda.synchronize()

    def __call__(self, *xs):
        if self.keys is not None:
            return self.program.step(dict(zip(self.keys, xs)))
        return self.program.step(*xs)

    def fresh(self):
        return SuiteStep(self.name)


def build(key):
    """fn, inputs, weights of a zoo model, of a program with host reads
    ("breaks:NAME", tests/models/breaks_models.py), of a wild program ("wild:KEY",
    tests/wild: a module in eval mode run under no_grad, as pgcc.export runs it; its
    inputs must be tensors), or of a training step ("training:KEY", SuiteStep)."""
    if key.startswith("training:"):
        step = SuiteStep(key[len("training:"):])
        return step, list(step.inputs), step.weights
    if key.startswith("wild:"):
        import torch

        from tests.wild import wild_programs
        torch.manual_seed(0)
        model, inputs = wild_programs.builder(key[len("wild:"):])()
        weights, fn = {}, model
        if isinstance(model, torch.nn.Module):
            weights = dict(model.named_parameters())
            weights.update(model.named_buffers())
            if not model.training:
                def fn(*xs):
                    with torch.no_grad():
                        return model(*xs)
        return fn, list(inputs), weights
    if key.startswith("breaks:"):
        from tests.models import breaks_models
        fn, inputs, weights, _ = breaks_models.PROGRAMS[key[len("breaks:"):]]()
        return fn, inputs, weights
    from tests.models import zoo_models
    return zoo_models.ZOO[key]()


def kernel_profile(torch, steps, iters=20):
    """What each way runs on the GPU, profiled (torch.profiler, CUPTI): {way: {name: [launches
    per step, µs per step]}} over `iters` steps, kernels, copies and memsets alike."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    out = {}
    for w, step in steps.items():
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                step()
            torch.cuda.synchronize()
        per = {}
        for e in prof.events():
            if e.device_type == DeviceType.CUDA:
                c = per.setdefault(e.name, [0, 0.0])
                c[0] += 1
                c[1] += e.time_range.elapsed_us()
        out[w] = {n: [round(c / iters, 2), round(t / iters, 2)] for n, (c, t) in per.items()}
    return out


def kernel_table(recs):
    """Per model: the GPU work of one step of reduce-overhead and of pgcc, profiled: the sum,
    launches, the kernels one runs and the other does not, the largest differences."""
    lines = ["| model | RO: µs, launches | pgcc: µs, launches | floor: µs | pgcc ÷ RO | only RO runs | only pgcc runs | "
             "largest differences (pgcc - RO, µs per step) |", "|---" * 8 + "|"]
    for r in recs:
        k = r.get("kernels")
        if not k or "reduce-overhead" not in k or "pgcc" not in k:
            continue
        ro, pg, fl = k["reduce-overhead"], k["pgcc"], k.get("manual capture")
        tot = lambda d: (sum(v[1] for v in d.values()), sum(v[0] for v in d.values()))
        (rt, rn), (pt, pn) = tot(ro), tot(pg)
        short = lambda n: (n[:50] + "…") if len(n) > 51 else n
        only_ro = sorted(set(ro) - set(pg), key=lambda n: -ro[n][1])
        only_pg = sorted(set(pg) - set(ro), key=lambda n: -pg[n][1])
        diff = sorted(((pg.get(n, [0, 0])[1] - ro.get(n, [0, 0])[1], n) for n in set(ro) | set(pg)),
                      key=lambda d: -abs(d[0]))[:3]
        lines.append(f"| {r['model']} | {rt:.1f}, {rn:g} | {pt:.1f}, {pn:g} | "
                     f"{tot(fl)[0]:.1f} | {pt / rt:.2f}x | " if fl else
                     f"| {r['model']} | {rt:.1f}, {rn:g} | {pt:.1f}, {pn:g} | — | {pt / rt:.2f}x | ")
        lines[-1] += (", ".join(f"{short(n)} ({ro[n][1]:.1f})" for n in only_ro[:3]) or "—") + " | "
        lines[-1] += (", ".join(f"{short(n)} ({pg[n][1]:.1f})" for n in only_pg[:3]) or "—") + " | "
        lines[-1] += ", ".join(f"{short(n)} {d:+.1f}" for d, n in diff) + " |"
    return "\n".join(lines)


def ctypes_table(recs):
    """With --ctypes-call: pgcc called through its call in C and through ctypes, beside the floor."""
    lines = ["| model | manual capture (floor) | pgcc | pgcc, ctypes call | pgcc / floor | ctypes call / floor | "
             "host µs/call from idle: pgcc (ctypes call; floor) |", "|---" * 7 + "|"]
    for r in recs:
        w = r.get("ways", {})
        if "pgcc" not in w or "pgcc, ctypes call" not in w:
            continue
        g = {k: v["gpu_us"] for k, v in w.items()}
        ratio = lambda a, b: f"{g[a] / g[b]:.2f}x" if a in g and b in g else "—"
        fl = w.get("manual capture", {})
        lines.append(f"| {r['model']} | {fl.get('gpu_us', '—')} µs | {g['pgcc']:.1f} µs | "
                     f"{g['pgcc, ctypes call']:.1f} µs | {ratio('pgcc', 'manual capture')} | "
                     f"{ratio('pgcc, ctypes call', 'manual capture')} | {w['pgcc']['host_us']} "
                     f"({w['pgcc, ctypes call']['host_us']}; {fl.get('host_us', '—')}) |")
    return "\n".join(lines)


def pdl_table(recs):
    """With --pdl: pgcc's programmatic edges kept and made full (PGRT_PDL=off), side by side."""
    lines = ["| model | programmatic edges | pgcc | pgcc, full edges | PDL gain | pgcc / RO | pgcc / floor |",
             "|---" * 7 + "|"]
    for r in recs:
        g = {k: v["gpu_us"] for k, v in r.get("ways", {}).items()}
        if "pgcc" not in g or "pgcc, full edges" not in g:
            continue
        ratio = lambda a, b: f"{g[a] / g[b]:.2f}x" if a in g and b in g else "—"
        lines.append(f"| {r['model']} | {r.get('pgcc_programmatic_edges', '—')} | {g['pgcc']:.1f} µs | "
                     f"{g['pgcc, full edges']:.1f} µs | {ratio('pgcc', 'pgcc, full edges')} | "
                     f"{ratio('pgcc', 'reduce-overhead')} | {ratio('pgcc', 'manual capture')} |")
    return "\n".join(lines)


def pool_segments(torch):
    """{address: size} of the caching allocator's segments in private pools (CUDA graphs')."""
    return {seg["address"]: seg["total_size"] for seg in torch.cuda.memory_snapshot()
            if tuple(seg.get("segment_pool_id") or (0, 0)) != (0, 0)}


def table(recs):
    lines = ["| model | eager | compile | reduce-overhead | manual capture (floor) | pgcc | pgcc / RO | "
             "pgcc / floor | host µs/call pgcc (RO; floor): from idle, in the loop | spread pgcc (RO) | "
             "pgcc set-up: export, init cold (warm; libraries serial; serial and copied; own kernels compiled) | "
             "memory: weights, eager peak (eager kept), RO pools, pgcc arena |",
             "|---" * 12 + "|"]
    for r in recs:
        w = r.get("ways", {})
        g = {k: v["gpu_us"] for k, v in w.items()}
        def f(k):
            return f"{g[k]:.1f} µs" if k in g else "—"
        ratio = lambda a, b: f"{g[a] / g[b]:.2f}x" if a in g and b in g else "—"
        mib = lambda n: f"{n / 2**20:.1f}" if isinstance(n, (int, float)) else "—"
        p = w.get("pgcc", {})
        ro = w.get("reduce-overhead", {})
        fl = w.get("manual capture", {})
        lines.append(
            f"| {r['model']} | {f('eager')} | {f('compile')} | {f('reduce-overhead')} | {f('manual capture')} | "
            f"{f('pgcc') if 'pgcc' in g else 'FAIL: ' + r.get('pgcc_failed', r.get('failed', '?'))[:80]} | "
            f"{ratio('pgcc', 'reduce-overhead')} | {ratio('pgcc', 'manual capture')} | "
            f"{p.get('host_us', '—')} ({ro.get('host_us', '—')}; {fl.get('host_us', '—')}), {p.get('loop_us', '—')} "
            f"({ro.get('loop_us', '—')}; {fl.get('loop_us', '—')}) | {p.get('spread', '—')} ({ro.get('spread', '—')}) | "
            f"{export_cell(r)}, {r.get('pgcc_init_ms', '—')} ms ({r.get('pgcc_init_warm_ms', '—')}; "
            f"{r.get('pgcc_init_serial_ms', '—')}; {r.get('pgcc_init_copied_ms', '—')}; "
            f"{r.get('pgcc_init_unbuilt_ms', '—')} ms) | "
            f"{mib(r.get('weights_bytes'))}, {mib(r.get('eager_peak_bytes'))} ({mib(r.get('eager_kept_bytes'))}), "
            f"{mib(r.get('ro_pool_bytes'))}, "
            f"{mib(r.get('pgcc_arena_bytes'))} MiB |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", help="fnmatch patterns over 'family:variant' (default: all)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--out", help="a folder for zoo_bench.json")
    ap.add_argument("--cache", help="a folder for the models' Inductor caches, kept between runs")
    ap.add_argument("--pdl", action="store_true",
                    help="Inductor's Triton kernels built for programmatic dependent launch in every way "
                         "(torch._inductor.config.triton.enable_pdl), and pgcc also timed with full edges")
    ap.add_argument("--ctypes-call", action="store_true",
                    help="also time pgcc called through ctypes, its arguments checked in Python (the call before "
                         "fastcall.py), with a table of the two")
    ap.add_argument("--kernels", action="store_true",
                    help="also profile one step of reduce-overhead, the manual capture and pgcc kernel by kernel")
    ap.add_argument("--setup-jobs", type=int, default=0, metavar="N",
                    help="first set every model up (compiles, export) N at a time, untimed, then time them one "
                         "by one from the caches that filled")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--setup-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reuse", help=argparse.SUPPRESS)  # (a folder of the set-up pass's exports)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.rounds, args.iters, args.child_out, args.kernels, args.pdl, args.setup_only,
                     args.reuse, args.ctypes_call)
    import fnmatch

    from tests.models import breaks_models, zoo_models
    from tests.wild import wild_programs
    from tests.training.training_steps import PROGRAMS as TRAINING
    mine = [p for p in args.patterns if not p.startswith(("breaks:", "wild:", "training:"))]
    keys = zoo_models.select(mine) if mine or not args.patterns else []
    keys += [f"breaks:{n}" for n in breaks_models.PROGRAMS
             if any(fnmatch.fnmatch(f"breaks:{n}", p) for p in args.patterns)]
    keys += [f"wild:{k}" for k in wild_programs.keys() if any(fnmatch.fnmatch(f"wild:{k}", p) for p in args.patterns)]
    keys += [f"training:{k}" for k in TRAINING if any(fnmatch.fnmatch(f"training:{k}", p) for p in args.patterns)]
    # (in the order of the patterns that name them: a run cut short has timed the first named)
    first = {k: min([i for i, p in enumerate(args.patterns) if fnmatch.fnmatch(k, p)] or [len(args.patterns)])
             for k in keys}
    keys.sort(key=lambda k: first[k])
    work = tempfile.mkdtemp(prefix="pgcc-bench-")

    def env_of(key):
        return dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(
            os.path.abspath(args.cache) if args.cache else os.path.join(work, "inductor"), key.replace(":", "_")))
    setups = set_up(keys, args, env_of, work) if args.setup_jobs > 0 else {}
    recs = []
    for key in keys:
        env = env_of(key)
        try:
            p = subprocess.run([sys.executable, __file__, "--child", key, "--child-out", work, "--rounds",
                                str(args.rounds), "--iters", str(args.iters)] + (["--kernels"] if args.kernels else [])
                               + (["--pdl"] if args.pdl else [])
                               + (["--ctypes-call"] if args.ctypes_call else [])
                               + (["--reuse", os.path.join(work, "setup")]
                                  if str(setups.get(key, {}).get("pgcc_verified", "")).startswith("PASS") else []),
                               env=env, capture_output=True,
                               text=True, timeout=args.timeout)
            log = p.stdout + p.stderr
            got = [json.loads(l[6:]) for l in p.stdout.splitlines() if l.startswith("BENCH ")]
            phase = ([l[6:] for l in p.stdout.splitlines() if l.startswith("PHASE ")] or ["start"])[-1]
            rec = got[-1] if got else {"model": key, "failed": f"in the {phase}: " + " | ".join(
                [l for l in p.stderr.splitlines() if "Error" in l][-2:] or log.strip().splitlines()[-3:])[:400]}
        except subprocess.TimeoutExpired as e:
            log = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
            rec = {"model": key, "failed": f"over {args.timeout} s"}
        if key in setups:  # (the export from a cold cache, beside N-1 other set-ups)
            rec["setup_pass"] = setups[key]
        recs.append(rec)
        print(json.dumps(rec), flush=True)
        if args.out:  # after every model: a run cut short keeps what it measured
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "zoo_bench.json"), "w") as f:
                json.dump(recs, f, indent=1)
            with open(os.path.join(args.out, key.replace(":", "_") + ".bench.log"), "w") as f:
                f.write(log)
    print()
    print(table(recs))
    if args.pdl:
        print()
        print(pdl_table(recs))
    if args.ctypes_call:
        print()
        print(ctypes_table(recs))
    if args.kernels:
        print()
        print(kernel_table(recs))


def export_cell(r):
    """The export's time: the set-up pass's, from a cold cache, where there was one."""
    cold = (r.get("setup_pass") or {}).get("pgcc_export_s")
    return f"{cold} s" if cold is not None else f"{r.get('pgcc_export_s', '—')} s"


def set_up(keys, args, env_of, work):
    """The untimed set-up pass (--setup-jobs N): every model's child with --setup-only, N at
    a time, each filling its Inductor cache (the compile, reduce-overhead's) and exporting
    from it cold; {key: what it printed (its export time, verification, set-up times) or
    "failed"}.  The timed children then start from those caches."""
    from concurrent.futures import ThreadPoolExecutor

    def one(key):
        cmd = [sys.executable, __file__, "--child", key, "--child-out", os.path.join(work, "setup"), "--setup-only"]
        cmd += ["--pdl"] if args.pdl else []
        try:
            p = subprocess.run(cmd, env=env_of(key), capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return key, {"failed": f"over {args.timeout} s"}
        got = [json.loads(line[6:]) for line in p.stdout.splitlines() if line.startswith("SETUP ")]
        if not got:
            return key, {"failed": " | ".join((p.stdout + p.stderr).strip().splitlines()[-2:])[:300]}
        rec = got[-1]
        return key, {k: rec[k] for k in ("pgcc_export_s", "pgcc_verified", "pgcc_failed", "setup_s") if k in rec}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.setup_jobs) as pool:
        done = dict(pool.map(one, keys))
    print(f"set-up pass: {len(keys)} models, {args.setup_jobs} at a time, {time.perf_counter() - t0:.0f} s",
          flush=True)
    return done


if __name__ == "__main__":
    main()

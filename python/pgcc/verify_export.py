"""Checking an export after it is written: build it (pgcc, libpgrt), load it, run it on
the example inputs and on copies of them at new addresses -- the last call's in memory
far away, whose addresses differ in the high 32 bits too (farmem.py) -- with its
outputs at new addresses too and its arena filled with 0xff bytes before every call,
and compare
each output with the callable's own on copies of the same inputs, and each input
tensor after the call with the callable's copy after its call (an input changed in
place: x.add_(1)).  Bit-identical passes; else
the largest difference over the reference's largest magnitude must be within the
dtype's tolerance (TOL).  Prints `PASS NAME: max error X (bit-identical|within tol)`
or raises ExportError naming the output.

A callable whose calls change its state (a training step: fn.train is True) is
verified by verify_training: the program and the callable take several steps from the
same state on the same fresh batches, and each step's outputs (the loss) and, after the
last, every weight and optimizer state tensor are compared; the callable's state is
put back as it was.

Assumes a GPU, PyTorch, and a toolchain (toolchain.py).  compare() is pure over tensors.
"""
import contextlib

from .call_args import choose, pad_to
from .errors import ExportError, RunError
from .example_inputs import input_copy
from .farmem import far
from .hostreads import perturbed
from .loader import load
from .progress import Progress
from .random_state import rewound

__all__ = ["beyond_noise", "compare", "copies", "judge", "judge_call", "NOISE_FACTOR", "outputs", "rel_err", "spread",
           "TOL", "verify", "verify_buckets", "verify_training"]

TOL = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 1e-3, "float64": 1e-12}


def rel_err(got, ref):
    """max |got - ref| / max |ref| (NaN counts as infinite; exact for non-floats)."""
    import torch
    if not ref.is_floating_point():
        return 0.0 if torch.equal(got, ref) else float("inf")
    g, r = got.double(), ref.double()
    if r.numel() == 0:
        return 0.0
    e = ((g - r).abs().max() / r.abs().max().clamp_min(1e-30)).item()
    return e if e == e else float("inf")


def compare(got, ref):
    """(bit-identical, relative error, tolerance) of one output against its reference."""
    import torch
    same = got.shape == ref.shape and got.dtype == ref.dtype and torch.equal(
        got.reshape(-1).view(torch.uint8) if got.numel() else got,
        ref.reshape(-1).view(torch.uint8) if ref.numel() else ref)  # (a 0-dimensional loss too)
    tol = TOL.get(str(ref.dtype)[6:], 0.0)
    return same, (0.0 if same else rel_err(got, ref)), tol


def outputs(name, got, ref):
    """The program's outputs and the callable's, as two lists of the same length (after
    the GPU finished both)."""
    import torch
    got = list(got) if isinstance(got, tuple) else [got]
    ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    torch.cuda.synchronize()
    if len(ref) != len(got):
        raise ExportError(f"verify {name}: the program has {len(got)} outputs, the callable {len(ref)}")
    return got, ref


def judge(name, got, ref, identical, worst, where, what="output {i} (out{i})"):
    """Each output against the callable's: (still bit-identical, worst error so far);
    raises ExportError naming the output (what, formatted with its index i) and `where`
    (the call) when one is outside its dtype's tolerance."""
    for i, (g, r) in enumerate(zip(got, ref)):
        same, err, tol = compare(g, r.detach())
        identical, worst = identical and same, max(worst, err)
        if not same and not err <= tol:
            raise ExportError(f"verify {name}: {what.format(i=i)} differs from the callable's {where}: max error "
                              f"{err:.3g} relative to its largest value, tolerance {tol:g} for {r.dtype}")
    return identical, worst


def tensors(torch, xs):
    """The tensors among a call's inputs (numbers left out), in order."""
    return [x for x in xs if isinstance(x, torch.Tensor)]


def copies(torch, xs):
    """The inputs again, each tensor cloned (its strides kept): the callable's own inputs
    beside the program's, since either may change its inputs in place (x.add_(1))."""
    return [input_copy(x) if isinstance(x, torch.Tensor) else x for x in xs]


# Each call's floating inputs scaled by these, in turn, where not 1 also mirrored along
# their last dimension: the first call takes the example inputs as given, later ones
# other values too (a program that kept reading the example's memory, not the call's,
# would pass on copies of the same values; a scale alone, batch normalisation cannot
# tell from the example: hence the mirror).
SCALES = (1.0, 1.25, 1.0, 0.8)
TRAINING_SCALES = (1.0, 1.25, 0.8)  # (a training step's steps)


def other_values(torch, xs, scale):
    """Copies of xs (strides kept), floating tensors mirrored along their last dimension and
    scaled by `scale` where it is not 1; the others as they are (token ids, masks, labels:
    other values could change what the program does)."""
    out = copies(torch, xs)
    if scale != 1.0:
        for x in out:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                with torch.no_grad():  # (a leaf that requires grad, as the input was: changed in place)
                    if x.dim() and x.shape[-1] > 1:
                        x.copy_(x.flip(-1))
                    x.mul_(scale)
    return out


def judge_call(name, torch, got, ref, xs, refs, identical, worst, where):
    """judge() of a call's outputs, then of its inputs after it: an input the callable
    changes in place must be changed by the program the same way."""
    identical, worst = judge(name, got, ref, identical, worst, where)
    return judge(name, tensors(torch, xs), tensors(torch, refs), identical, worst, where,
                 "input tensor {i} after the call")


def verify(result, fn, inputs, calls=3, progress=None, build_dir=None, callbacks=None):
    """result: an ExportResult (or the export's directory); fn: the callable as exported
    (compiled, if it was); inputs: the example inputs.  Returns the PASS line."""
    import torch

    prog = progress or Progress(prefix="pgcc-export")
    out_dir = getattr(result, "out_dir", result)
    name = getattr(result, "name", None)
    prog.status("verify: building the export with pgcc and libpgrt")
    p = load(out_dir, name=name, build_dir=build_dir, callbacks=callbacks)
    name = p.name
    worst, identical, keep, far_high = 0.0, True, [], False
    reads = (getattr(result, "report", None) or {}).get("host_reads") or []
    try:
        for call in range(calls + 1):
            prog.status(f"verify: call {call + 1}/{calls + 1}")
            where = far(torch) if call == calls else contextlib.nullcontext()
            # new addresses after the first call, and other values (but where values read back choose a path:
            # those calls come below)
            scale = 1.0 if reads else SCALES[call % len(SCALES)]
            with where as memory:  # the last call's inputs and outputs far away: other high address bits
                xs = list(inputs) if call == 0 else other_values(torch, inputs, scale)
                refs = copies(torch, xs)  # (the callable's: taken before the program may change xs in place)
                p.fill_arena(0xFF)
                with rewound(p):  # (the callable then draws the numbers the program drew)
                    got = p(*xs)
            keep += xs + refs + [memory]  # alive: the next call's are elsewhere
            if call == calls:
                far_high = all(x.data_ptr() >> 32 != y.data_ptr() >> 32 for x, y in
                               zip(tensors(torch, xs), tensors(torch, inputs)) if x.numel())
            with torch.no_grad():
                got, ref = outputs(name, got, fn(*refs))
            keep += got
            identical, worst = judge_call(name, torch, got, ref, xs, refs, identical, worst, f"on call {call} (inputs "
                                          f"{'as given' if call == 0 else 'copied to new addresses'}"
                                          f"{f', scaled by {scale:g}' if scale != 1.0 else ''}"
                                          f"{', far away: other high address bits' if call == calls else ''}, arena "
                                          "poisoned)")
        # A program that reads values back: calls on other input values too, whose reads
        # the C makes at run time (a guarded read stops the call: PGRT_ERR_GUARD)
        others, stopped = 0, 0
        for scale in (1.5, 0.75) if reads else ():
            xs = perturbed(torch, inputs, scale)
            refs = copies(torch, xs)
            p.fill_arena(0xFF)
            try:
                with rewound(p):
                    got = p(*xs)
            except RuntimeError as e:  # (Program's run failed)
                if "guard" not in str(e) or not any(r["guarded"] for r in reads):
                    raise
                stopped += 1
                continue
            with torch.no_grad():
                got, ref = outputs(name, got, fn(*refs))
            keep += xs + refs + got
            others += 1
            identical, worst = judge_call(name, torch, got, ref, xs, refs, identical, worst,
                                          f"on the inputs scaled by {scale} (other values read back)")
    finally:
        prog.done()
        p.close()
    line = (f"PASS {name}: max error {worst:.3g} ({'bit-identical' if identical else 'within tol'}; {calls + 1} calls"
            f"{'' if reads else ', two on other input values'}, "
            f"the last {'at addresses with other high 32 bits' if far_high else 'NOT far away (high bits the same)'}"
            + (f"; {others} on other input values, {stopped} stopped by a guard" if reads else "") + ")")
    prog.log(line)
    return line


NOISE_FACTOR = 4  # a step whose callable is not deterministic: the program's error at most this times its spread
# runs of the callable beside the first, at most, to measure its spread: one pair of runs of a step
# with atomic adds may happen to agree far better than most (BERT's twins: 3.9e-5 in one run, 0.0114
# in another), and a spread from one pair refused correct programs
AGAIN = 3


def beyond_noise(name, bad, noise, runs=2):
    """What fails, for the worst of bad [(what, bit-identical, error, tolerance, dtype)]
    (the results outside their tolerance), or None where noise -- the largest error
    between two of the callable's `runs` runs of the same steps -- covers every one: at
    most NOISE_FACTOR times it.  A deterministic callable (noise 0) covers nothing."""
    what, _same, err, tol, dtype = max(bad, key=lambda f: f[2] / max(f[3], 1e-30))
    if noise and max(f[2] for f in bad) <= NOISE_FACTOR * noise:
        return None
    return (f"verify {name}: {what} differs from the callable's: max error {err:.3g} relative to its largest value, "
            f"tolerance {tol:g} for {dtype}" + (f" (the callable differs from itself by up to {noise:.3g} over "
                                                f"{runs} runs of the same steps: more than {NOISE_FACTOR}x that is "
                                                "pgcc's)" if noise else ""))


def spread(name, bad, first, reference, judged, status=None):
    """How far the callable differs from itself: reference() run again (up to AGAIN times)
    after its first run `first`, until two runs agree exactly (deterministic: no run will
    differ) or their largest difference covers bad (beyond_noise).  judged(run, run) lists
    (what, bit-identical, error, ...) between two runs.  Returns (the spread, how many runs
    were counted, the first among them)."""
    runs, noise = [first], 0.0
    for k in range(AGAIN):
        if status:
            status(k)
        again = reference()
        noise = max([noise] + [max((f[2] for f in judged(*again, *r)), default=0.0) for r in runs])
        runs.append(again)
        if not noise or beyond_noise(name, bad, noise) is None:
            break
    return noise, len(runs)


def verify_training(result, fn, inputs, weights, steps=3, progress=None, build_dir=None):
    """A training step: result is its export, fn the callable as exported (compiled, if it
    was), weights {name: tensor} its state, which the export left as it wrote it.  The
    program and fn take `steps` steps on the same fresh batches (copies of the inputs at
    new addresses; the program's arena poisoned before each); each step's outputs, then
    every state tensor the program holds, must be bit-identical or within the dtype's
    tolerance.  Where some are not, fn takes the same steps again from the same state and
    draws (up to AGAIN times, until its spread covers the program's error): a callable that
    is not deterministic (atomic adds: an embedding's backward) differs from itself, and its
    updates carry the difference into every later step.  The program then passes where its
    largest error is at most NOISE_FACTOR times the largest difference between two of fn's
    runs, and the PASS line says so.  fn's state is restored afterwards.
    Returns the PASS line."""
    import torch

    prog = progress or Progress(prefix="pgcc-export")
    out_dir = getattr(result, "out_dir", result)
    prog.status("verify: building the export with pgcc and libpgrt")
    p = load(out_dir, name=getattr(result, "name", None), build_dir=build_dir)
    name = p.name
    saved = {n: w.detach().clone() for n, w in weights.items()}
    held = []
    for n, w in weights.items():
        try:
            held.append((n, w, p.weight_field(n)))
        except KeyError:
            pass  # a state tensor the step does not use
    batches = [other_values(torch, inputs, TRAINING_SCALES[step % 3]) for step in range(steps)]

    def reference():
        """fn's steps from the state in `saved` (what the program started from) and
        generator states `draws`: (each step's outputs, the state after)."""
        outs = []
        with torch.no_grad():
            for n, w in weights.items():
                w.detach().copy_(saved[n])
        for step, xs in enumerate(batches):
            torch.cuda.set_rng_state(draws[step])
            ref = fn(*xs)
            outs.append([r.detach().clone() for r in (ref if isinstance(ref, (tuple, list)) else [ref])])
        return outs, {w_name: w.detach().clone() for w_name, w, _ in held}

    def judged(got_outs, got_state, ref_outs, ref_state):
        """[(what, bit-identical, error, tolerance, dtype)] of every output and state tensor."""
        found = []
        for step, (got, ref) in enumerate(zip(got_outs, ref_outs)):
            for i, (g, r) in enumerate(zip(got, ref)):
                found.append((f"output {i} (out{i}) of step {step + 1}",) + compare(g, r) + (r.dtype,))
        for w_name, _w, _ in held:
            found.append((f"state tensor {w_name} after {steps} steps",) + compare(got_state[w_name], ref_state[w_name])
                         + (ref_state[w_name].dtype,))
        return found

    try:
        with torch.no_grad():  # the same state to start from (no noise yet: outside tolerance fails at once)
            start = [(f"weight {w_name} before the first step",) + compare(p.weight(w_name, w), w.detach()) +
                     (w.dtype,) for w_name, w, _ in held]
        bad = [f for f in start if not f[1] and not f[2] <= f[3]]
        if bad:
            raise ExportError(beyond_noise(name, bad, 0.0))
        mine, ref_outs, draws = [], [], []
        for step, xs in enumerate(batches):
            prog.status(f"verify: training step {step + 1}/{steps}")
            draws.append(torch.cuda.get_rng_state())
            p.fill_arena(0xFF)
            try:
                with rewound(p):
                    got = p(*xs)
            except RunError as e:
                if "guard" not in str(e):
                    raise
                raise ExportError(f"cannot export {name}: on training step {step + 1} of the verification (a fresh "
                                  f"batch) the program stopped at a guard: {e}.  Such steps stop every call of "
                                  "this program; the export's warnings say why that read's other path was not "
                                  "exported beside it") from e
            got, ref = outputs(name, got, fn(*xs))
            mine.append([g.detach().clone() for g in got])
            ref_outs.append([r.detach().clone() for r in ref])
        with torch.no_grad():
            mine_state = {w_name: p.weight(w_name, w) for w_name, w, _ in held}
        ref_state = {w_name: w.detach().clone() for w_name, w, _ in held}
        found = judged(mine, mine_state, ref_outs, ref_state)
        bad = [f for f in found if not f[1] and not f[2] <= f[3]]
        found += start
        noise = None
        if bad:  # fn again, up to AGAIN times: its spread is the largest difference between two of its runs
            noise, runs = spread(name, bad, (ref_outs, ref_state), reference, judged, lambda k: prog.status(
                f"verify: the callable's steps again ({k + 1} of at most {AGAIN}), from the same state "
                "(is it deterministic?)"))
            why = beyond_noise(name, bad, noise, runs)
            if why:
                raise ExportError(why)
        worst = max((f[2] for f in found), default=0.0)
        identical = all(f[1] for f in found)
    finally:
        with torch.no_grad():
            for n, w in weights.items():
                w.detach().copy_(saved[n])
        torch.cuda.synchronize()
        prog.done()
        p.close()
    how = "bit-identical" if identical else "within tol" if noise is None else \
        f"the callable not deterministic: its runs of the same steps differ by up to {noise:.3g}, pgcc within " \
        f"{NOISE_FACTOR}x that"
    line = (f"PASS {name}: max error {worst:.3g} ({how}; {steps} training steps on fresh batches (other values) at "
            f"new addresses, the outputs of each and {len(held)} state tensors after the last)")
    prog.log(line)
    return line


def verify_buckets(result, run, b, progress=None, build_dir=None):
    """Runs the export (result: an ExportResult) at every bucket of b (export_buckets'
    answer), inputs at new addresses and the arena poisoned, and, for padded buckets, at
    the size below each, against the callable `run` on the same inputs padded with
    zeros; then a size past the largest bucket, which must be refused.  Returns the
    PASS line."""
    import torch

    values, examples, in_pos, out_pos, pad, dim_name = b.values, b.examples, b.in_pos, b.out_pos, b.pad, b.dim_name
    p = load(result.out_dir, name=result.name, build_dir=build_dir)
    worst, identical, keep, calls = 0.0, True, [], []
    try:
        sizes = list(values)
        if pad:
            sizes += [v - 1 for v, u in zip(values[1:], values) if v - 1 > u]
        for n in sizes:
            k = choose(values, n, pad)
            ex = examples[k]
            xs = [x if q is None else x.narrow(q, 0, n).clone() for x, q in zip(ex, in_pos)]
            p.fill_arena(0xFF)
            got = p(*xs)
            keep += xs
            # the reference: the callable at the bucket's size on the same inputs padded
            # with zeros (the loader pads so), cut to n
            padded = [pad_to(torch, x, q, values[k]) for x, q in zip(xs, in_pos)]
            got, ref = outputs(result.name, got, run(*padded))
            ref = [r if q is None else r.narrow(q, 0, n) for r, q in zip(ref, out_pos)]
            identical, worst = judge(result.name, got, ref, identical, worst,
                                     f"at {dim_name}={n} (bucket {values[k]}; inputs at new addresses, arena "
                                     "poisoned)")
            calls.append(n)
        try:
            p(*[x if q is None else pad_to(torch, x, q, values[-1] + 1) for x, q in zip(examples[-1], in_pos)])
            raise ExportError(f"verify {result.name}: a size past the largest bucket ran")
        except (RuntimeError, ValueError) as e:
            if "bucket" not in str(e):
                raise
    finally:
        p.close()
    line = (f"PASS {result.name}: max error {worst:.3g} ({'bit-identical' if identical else 'within tol'}; "
            f"{dim_name} = {', '.join(map(str, calls))}; buckets {values} {'padded' if pad else 'exact'}; "
            f"{dim_name}={values[-1] + 1} refused)")
    (progress.log if progress else print)(line)
    return line

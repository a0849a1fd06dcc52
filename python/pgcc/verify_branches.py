"""The other side of each branch a program holds as an IF/ELSE node, proven.

The export's verification (verify_export.py) runs the side its calls take -- for a
GradScaler's found_inf, the steps that did not overflow -- so the other side, exported
from a capture with the value read flipped and joined to this one with its memory put on
this side's (branches.py: as captured, by a shift, or allocation by allocation through
the allocator traces), would go unchecked until a user's call took it.  Here a copy of
the export with the IF node's two bodies swapped is built and called once on the example
inputs at new addresses (its arena poisoned), from the state the export wrote, against
the callable on copies of the same inputs with the value it reads there flipped
(hostreads.HostReads, as the export captured that side): every output, and a training
step's every state tensor after the call, compared as verify_export compares them (a
callable that is not deterministic judged against its own spread).  The swapped copy
takes the other side where the value read is the one read at export, as it is on the
example inputs from that state.

swapped_graph and conditional_reads are pure; other_sides needs a GPU, PyTorch and a
toolchain.

    line = other_sides(result, fn, inputs, weights, training, progress)   # None: no IF
"""
import contextlib
import os
import re
import shutil
import tempfile

from .errors import ExportError
from .hostreads import FlipRead, HostReads
from .loader import load
from .progress import Progress
from .random_state import rewound
from .verify_export import beyond_noise, compare, copies, outputs, spread

__all__ = ["conditional_reads", "other_sides", "swapped_graph"]


def conditional_reads(report):
    """The indices of the reads a report's program holds as an IF/ELSE node (not a loop's)."""
    return [k for k, r in enumerate(report.get("host_reads", []))
            if r.get("conditional") and not r.get("loop") and not r.get("guarded")]


def swapped_graph(text, k):
    """The .graph text with read k's IF node's two bodies in the other order, so that the
    value read at export runs the other path's body; ValueError where the file holds no
    such node with two bodies, or more than one."""
    pat = re.compile(r"(node nif%d conditional type if condition c%d bodies \[)(\w+), (\w+)(\];)" % (k, k))
    found = pat.findall(text)
    if len(found) != 1:
        raise ValueError(f"{len(found)} IF nodes of read {k} with two bodies (node nif{k}) in the .graph")
    return pat.sub(r"\1\3, \2\4", text)


def other_sides(result, fn, inputs, weights, training, progress=None, callbacks=None):
    """Each IF node of the export (result: an ExportResult) checked on its other side, as
    above; fn the callable as exported, inputs its flat example inputs, weights {name:
    tensor} (a training step's state, put back as it was), callbacks as verify_export.verify
    takes them.  Returns a line saying what was
    checked, or None for a program with no IF node; raises ExportError where a side
    differs."""
    import torch
    prog = progress or Progress(prefix="pgcc-export")
    reads = conditional_reads(result.report)
    if not reads:
        return None
    name = result.name
    saved = {n: w.detach().clone() for n, w in weights.items()} if training else {}
    worst, identical = 0.0, True
    for k in reads:
        where = result.report["host_reads"][k].get("where", f"read {k}")
        prog.status(f"verify: the other side of the branch at {where[:60]}")
        tmp = tempfile.mkdtemp(prefix="pgcc-other-side-")
        try:
            with open(os.path.join(result.out_dir, name + ".graph")) as f:
                try:
                    text = swapped_graph(f.read(), k)
                except ValueError as e:
                    raise ExportError(f"verify {name}: the other side of the branch at {where} cannot be run: "
                                      f"{e}") from e
            for entry in os.listdir(result.out_dir):  # (the export's files, not its builds)
                src = os.path.join(result.out_dir, entry)
                if entry.startswith(name + ".") or entry == "kernels":
                    (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(tmp, entry))
            with open(os.path.join(tmp, name + ".graph"), "w") as f:
                f.write(text)
            p = load(tmp, name=name, build_dir=os.path.join(tmp, "build"), callbacks=callbacks)
            found, noise, runs = _check_side(torch, p, fn, inputs, weights, saved, k, where, training)
        finally:
            if training:
                with torch.no_grad():
                    for n, w in weights.items():
                        w.detach().copy_(saved[n])
            torch.cuda.synchronize()
            shutil.rmtree(tmp, ignore_errors=True)
        bad = [f for f in found if not f[1] and not f[2] <= f[3]]
        why = bad and beyond_noise(name, bad, noise, runs)
        if why:
            raise ExportError(f"{why}, on the other side of the branch at {where} (the program's IF/ELSE bodies "
                              "swapped, the callable given the value it read there flipped); PGCC_JOIN_BY_TRACE=0 "
                              "exports the read guarded where that side was joined through the allocator traces")
        err = max((f[2] for f in found), default=0.0)
        worst, identical = max(worst, err), identical and all(f[1] for f in found)
        result.report["host_reads"][k]["other_side"] = f"max error {err:.3g}" + (
            " (bit-identical)" if all(f[1] for f in found) else "")
    prog.done()
    line = (f"PASS {name}, the other side of {len(reads)} branch{'es' if len(reads) > 1 else ''}: max error "
            f"{worst:.3g} ({'bit-identical' if identical else 'within tol'}; the IF/ELSE bodies swapped against "
            "the callable with the value read flipped, on the example inputs at new addresses"
            f"{', the outputs and every state tensor after the step' if training else ''})")
    prog.log(line)
    return line


def _check_side(torch, p, fn, inputs, weights, saved, k, where, training):
    """One call of p (the swapped copy, loaded) against fn flipped at read k, from the
    same state and generator: ([(what, bit-identical, error, tolerance, dtype)], the
    callable's spread over its runs, how many runs)."""
    try:
        held = []
        for n, w in (weights.items() if training else ()):
            try:
                held.append((n, w, p.weight_field(n)))
            except KeyError:
                pass  # (a state tensor the step does not use)
        rng = torch.cuda.get_rng_state()
        p.fill_arena(0xFF)
        with rewound(p):
            got = p(*copies(torch, inputs))
        got = list(got) if isinstance(got, tuple) else [got]
        mine = [g.detach().clone() for g in got]
        with torch.no_grad():
            mine_state = {n: p.weight(n, w).clone() for n, w, _ in held}

        def reference():
            with torch.no_grad():
                for n, w in weights.items() if training else ():
                    w.detach().copy_(saved[n])
            torch.cuda.set_rng_state(rng)
            flip = FlipRead(k)
            with contextlib.nullcontext() if training else torch.no_grad(), HostReads(flip):
                out = fn(*copies(torch, inputs))
            if flip.value is None:
                raise ExportError(f"verify {p.name}: the callable made no read {k} ({where}) on the example inputs")
            _, ref = outputs(p.name, mine, out)
            return [r.detach().clone() for r in ref], {n: w.detach().clone() for n, w, _ in held}

        def judged(outs, state, ref_outs, ref_state):
            found = [(f"output {i} (out{i})",) + compare(g, r) + (r.dtype,) for i, (g, r) in enumerate(zip(outs,
                                                                                                          ref_outs))]
            return found + [(f"state tensor {n} after the step",) + compare(state[n], ref_state[n]) +
                            (ref_state[n].dtype,) for n in state]
        first = reference()
        found = judged(mine, mine_state, *first)
        bad = [f for f in found if not f[1] and not f[2] <= f[3]]
        noise, runs = spread(p.name, bad, first, reference, judged) if bad else (0.0, 1)
        return found, noise, runs
    finally:
        p.close()

"""The captures of one analysis, taken one after the other (take_captures): one thrown
away, A on the example inputs, B on copies at other addresses, C on copies in memory
far away (farmem.py), and, for a callable that reads values back to the host, D on
other input values; each checked against A.  A torch.distributed program's collectives
are recorded, not run (collectives.Recorder).

    caps = take_captures(torch, fn, inputs, weights, "mlp", prog, watch, split=False, force=None)
    caps.capA.nodes        # capture A's nodes (capture.Capture)

Assumes PyTorch with CUDA (passed in as `torch`: importing this module needs none).
"""
import contextlib

from .capture import Capture
from .collectives import Recorder
from .cuda import NODE_NAMES
from .errors import CapturesDiffer
from .example_inputs import input_copy, leaf_grads
from .farmem import far
from .hostreads import perturbed
from .model import CaptureSet
from .warmup import restore_state, saved_state

__all__ = ["capA_outputs", "capture_far", "outputs_of", "take_captures"]


def take_captures(torch, fn, inputs, weights, name, prog, watch, split, force):
    """The captures (model.CaptureSet) of fn on inputs, the weights' state put back after
    each where split (the callable reads values back, and capture D is taken too); force:
    {read index: True}, reads whose value the program is given flipped (branches.py).
    Raises CapturesDiffer where B or C differ from A in their nodes (count, kinds), edges,
    collectives or values read."""
    # A first capture, thrown away: libraries allocate what they keep (cuBLASLt's
    # workspace) the first time they are captured, which would shift every later
    # allocation of capture A against capture B (seen with GPT-2).
    state = saved_state(torch, weights) if split else None
    count = 5 if split else 4

    # a torch.distributed program: its collectives are recorded, not run, in the captures
    # (collectives.py), so that this rank exports on its own
    tp = torch.distributed.is_available() and torch.distributed.is_initialized()

    def recording(cap_fn):
        rec = Recorder(torch) if tp else None
        with rec or contextlib.nullcontext():
            got = cap_fn()
        cap = got[1] if isinstance(got, tuple) else got
        cap.recorder = rec  # (alive as long as the capture: replays write its marker)
        cap.collectives = rec.calls if rec else []
        return got

    def capture(i, what, xs, **kw):
        prog.status(f"{name}: capture {i}/{count} ({what})")
        for x, _ in leaf_grads(torch, xs):  # (each capture's inputs as fresh as B's copies: a step that
            x.grad = None                     # accumulates into x.grad adds there in one capture, not the next)
        cap = recording(lambda: Capture(torch, fn, xs, split=split, force=force, **kw))
        restore_state(state)
        return cap
    capture(1, "thrown away", inputs).reset()
    capA = capture(2, "A, the example inputs", inputs, watch=watch)  # (its nodes placed in its trace: slots.py)
    inputs_b = [input_copy(x) for x in inputs]  # the same values at other addresses
    capB = capture(3, "B, the inputs at other addresses", inputs_b)
    prog.status(f"{name}: capture 4/{count} (C, far away: other high address bits)")
    inputs_c, capC = recording(lambda: capture_far(torch, fn, inputs, prog, split, force))
    restore_state(state)
    caps = [capA, capB, capC]
    for c, cap in enumerate(caps[1:], 1):
        if len(cap.nodes) != len(capA.nodes) or cap.edges != capA.edges or cap.edge_kinds != capA.edge_kinds or \
                [n["type"] for n in cap.nodes] != [n["type"] for n in capA.nodes]:
            raise CapturesDiffer(f"captures A and {'ABC'[c]} differ in their nodes or edges: the callable is not "
                                 f"deterministic ({first_difference(capA, cap, 'ABC'[c])})")
        if [(x["fn"], x["count"], x["dtype"], x["op"]) for x in cap.collectives] != \
                [(x["fn"], x["count"], x["dtype"], x["op"]) for x in capA.collectives]:
            raise CapturesDiffer(f"captures A and {'ABC'[c]} made other collectives")
        if [r["value"] for r in cap.reads] != [r["value"] for r in capA.reads]:
            raise CapturesDiffer(f"captures A and {'ABC'[c]} read other values back to the host on the same inputs: "
                                 "the callable is not deterministic")
    capD = capture(5, "D, the inputs at other values", perturbed(torch, inputs)) if split else None
    if capA.special_edges:
        prog.warn("edges that are not full dependencies, of a kind not known, are exported as full ones",
                  f"{capA.special_edges} of the capture's {len(capA.edges)} edges")
    if capA.edge_kinds:
        prog.log(f"  {len(capA.edge_kinds)} of the capture's {len(capA.edges)} edges are programmatic dependent launch's: "
                 "kept (.graph format 3)")
    return CaptureSet(capA, capB, capC, capD, inputs_b, inputs_c)


def capture_far(torch, fn, inputs, prog, split=False, force=None):
    """Capture C, with its inputs and its own pool in memory far from A's and B's
    (farmem.py), so that their addresses differ in the high 32 bits too."""
    with far(torch) as where:
        if where.pool is None:
            prog.warn("PyTorch has no allocator setting for expandable segments", "capture C at ordinary addresses")
        inputs_c = [input_copy(x) for x in inputs]
    cap = Capture(torch, fn, inputs_c, far=lambda: far(torch, pool=False), split=split, force=force)
    cap.inputs_memory = where  # as long as the capture
    return inputs_c, cap


def capA_outputs(torch, cap):
    """The outputs of capture A, after one replay on the example inputs."""
    cap.replay()
    torch.cuda.synchronize()
    return cap.outputs


def outputs_of(torch, fn, inputs, capA, comms):
    """The outputs of capture A on the example inputs, copied; for a torch.distributed
    program (comms), a real call's (capture A's collectives were stand-ins: every rank's
    at once).  The replay's updates to the weights (a training step's) are undone by the
    caller's Replayer."""
    outputs = [o.clone() for o in capA_outputs(torch, capA)]
    if comms:  # (capture A's collectives were stand-ins: the outputs are a real call's, every rank's at once)
        out = fn(*inputs)
        outputs = [o.detach().clone() for o in (out if isinstance(out, (tuple, list)) else [out])]
    return outputs


def first_difference(a, b, letter):
    """Where two captures' graphs first differ, for a message: the node counts, the first
    node whose kind or kernel differs, else the first edge."""
    def what(n):
        return n.get("name", "")[:60] or NODE_NAMES.get(n["type"], f"node type {n['type']}")
    say = f"{len(a.nodes)} nodes in A, {len(b.nodes)} in {letter}"
    for i, (x, y) in enumerate(zip(a.nodes, b.nodes)):
        if x["type"] != y["type"] or x.get("name") != y.get("name"):
            return f"{say}; node {i} is {what(x)} in A, {what(y)} in {letter}"
    if len(a.nodes) != len(b.nodes):
        i = min(len(a.nodes), len(b.nodes))
        longer, extra = ("A", a.nodes[i]) if len(a.nodes) > i else (letter, b.nodes[i])
        return f"{say}; node {i}, {what(extra)}, is in {longer} only, after the nodes both have"
    for i, (x, y) in enumerate(zip(a.edges, b.edges)):
        if x != y:
            return f"{say}; edge {i} is {x} in A, {y} in {letter}"
    if len(a.edges) != len(b.edges):
        return f"{say}; {len(a.edges)} edges in A, {len(b.edges)} in {letter}"
    return f"{say}; the edges' kinds differ"

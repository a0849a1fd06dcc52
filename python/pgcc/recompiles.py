"""torch.compile's recompilations of the exported callable during the export.  Dynamo
records, for each function it compiled, why a guard of its compiled code failed and it
compiled the function again (torch._dynamo.utils.guard_failures: code object -> the
reasons, each naming the Python value the guard checked: `L['sched'].last_epoch == 1`).
A guard that fails between two of the export's calls names a Python value the
callable changes from call to call and its compiled code depends on -- an LR
scheduler's step count, say.  The C program replays the GPU work of the calls it
captured, so where such a value decides that work it cannot follow it: the refusal of
captures that differ (errors.CapturesDiffer) names these reasons.  (Captures that agree
are not judged by them: the other path of a branch on a value read back recompiles too,
on purpose -- branches.warm_other_path.)

    seen = mark(torch)       # before the export's first call
    ...
    found = since(torch, seen)   # [(where, reason)]
    explain(found)
"""

__all__ = ["explain", "mark", "since"]


def _failures(torch):
    """Dynamo's record of failed guards, or None where this PyTorch keeps none."""
    try:
        failures = torch._dynamo.utils.guard_failures
    except AttributeError:
        return None
    return failures if hasattr(failures, "items") else None


def mark(torch):
    """How many reasons Dynamo holds for each function now: {code: count}."""
    failures = _failures(torch)
    return {} if failures is None else {code: len(reasons) for code, reasons in list(failures.items())}


def where(code):
    """A code object as `function (file:line)`; str() of anything else."""
    name, file, line = (getattr(code, a, None) for a in ("co_name", "co_filename", "co_firstlineno"))
    return f"{name} ({file}:{line})" if name and file else str(code)


def since(torch, marked):
    """The guards that failed after mark() gave `marked`: [(where, reason)], each reason's
    first line, each pair once, in the order recorded."""
    failures = _failures(torch)
    found = []
    for code, reasons in list((failures or {}).items()):
        for r in list(reasons)[marked.get(code, 0):]:
            text = next((ln.strip() for ln in str(r).splitlines() if ln.strip()), "") or "a guard of its compiled code"
            pair = (where(code), text)
            if pair not in found:
                found.append(pair)
    return found


def explain(found, limit=3):
    """The words the refusal of captures that differ adds for found (since()'s answer): ''
    where empty."""
    if not found:
        return ""
    said = "; ".join(f"{w}: {r}" for w, r in found[:limit]) + (f"; and {len(found) - limit} more"
                                                                 if len(found) > limit else "")
    return ("torch.compile compiled the callable again between the export's calls, as guards of its compiled code "
            f"failed ({said}): a Python value the callable changes from call to call decides what its compiled "
            "code runs.  The program replays the GPU work of the calls it captured and cannot follow such a value; "
            "keep it in a tensor on the GPU, or do that work outside the exported callable (an LR scheduler: "
            "scheduler.step() outside the step, the program's rate set from it -- docs/guide.md)")

"""A training step's state saved and restored from the loaded program (a checkpoint):
an AdamW step with gradient clipping, built and stepped eagerly first, `import pgcc`
after torch, exported with state=, loaded; two steps, then prog.save_weights (libpgrt's
pgrt_weights_save), two more steps; then prog.restore_weights and the same two steps
again must give the same losses and the same state bit for bit.  The saved file must
hold every weight under the export's names, equal to the program's state at the save
(read back with safetensors' own reader, an independent one).  A file missing a
tensor must be refused and change nothing.

    PYTHONPATH=python:. python3 tests/gpu/checkpoint.py [--out DIR]

Prints PASS or FAIL with what differed; exits nonzero on failure.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    out = ap.parse_args().out or tempfile.mkdtemp(prefix="pgcc-checkpoint-")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    batches = [(torch.randn(32, 64, device="cuda"), torch.randint(0, 10, (32,), device="cuda")) for _ in range(5)]
    step(*batches[4])  # (the user checks it eagerly: the optimizer makes its state)
    import pgcc
    from safetensors.torch import load_file
    prog = pgcc.load(pgcc.export(step, batches[4], os.path.join(out, "step"), quiet=True, state=(model, opt)))
    names = [f.tensor or f.name for f in prog.weight_fields]
    for b in batches[:2]:
        prog(*b)
    ckpt = os.path.join(out, "state.safetensors")
    prog.save_weights(ckpt)
    at_save = {n: prog.weight(n).clone() for n in names}
    first = [prog(*b).detach().clone() for b in batches[2:4]]
    state_after = {n: prog.weight(n).clone() for n in names}
    saved = load_file(ckpt, device="cuda")
    problems = []
    if sorted(saved) != sorted(names):
        problems.append(f"the file holds {sorted(saved)[:5]}..., the program {sorted(names)[:5]}...")
    for n in names:
        if n in saved and not torch.equal(saved[n].contiguous().reshape(-1).view(torch.uint8), at_save[n]):
            problems.append(f"saved tensor {n} is not the program's state at the save")
    prog.restore_weights(ckpt)
    again = [prog(*b).detach().clone() for b in batches[2:4]]
    for k, (a, b) in enumerate(zip(first, again)):
        if not torch.equal(a, b):
            problems.append(f"step {k + 3} after the restore: loss {b.item()} against {a.item()}")
    for n in names:
        if not torch.equal(prog.weight(n), state_after[n]):
            problems.append(f"state {n} after the restore and two steps differs")
    # a file without one tensor: refused, nothing changed
    partial = os.path.join(out, "partial.safetensors")
    from safetensors.torch import save_file
    save_file({n: t for n, t in list(saved.items())[1:]}, partial)
    before = {n: prog.weight(n).clone() for n in names}
    try:
        prog.restore_weights(partial)
        problems.append("a file without a tensor was not refused")
    except pgcc.ArgumentError as e:
        print(f"refused as it should be: {e}")
    if any(not torch.equal(prog.weight(n), before[n]) for n in names):
        problems.append("the refused restore changed the state")
    losses = ", ".join(f"{x.item():.6f}" for x in first)
    print(("FAIL: " + "; ".join(problems)) if problems else
          f"PASS checkpoint: {len(names)} state tensors saved, restored, and the two steps after it repeated bit for "
          f"bit (losses {losses})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

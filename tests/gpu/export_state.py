"""An export leaves the caller's process usable: after pgcc.export of a zoo training
step (captures A, B, C, D, replays, verification), the step's state tensors are the
same tensors at the same addresses with the values they had, and the step still runs
eagerly and under torch.compile -- its losses equal those of an independent copy
taken before the export (TrainStep.fresh), run the same way, bit for bit.

    PYTHONPATH=python:. python3 tests/gpu/export_state.py [MODEL ...]   (default: train_sgd_momentum:fp32)

Exit status 1 on the first model where that fails.
"""
import sys
import tempfile


def main():
    import torch

    import pgcc
    from tests.models import zoo_models
    for key in sys.argv[1:] or ["train_sgd_momentum:fp32"]:
        watch = pgcc.ModuleWatch()
        fn, inputs, weights = zoo_models.ZOO[key]()
        twin = fn.fresh()  # the reference: never exported
        before = {n: (t.data_ptr(), t.detach().clone()) for n, t in weights.items()}
        with tempfile.TemporaryDirectory() as out:
            pgcc.export(fn, tuple(inputs), out, name="state", weights=weights, verify=True, quiet=True, watch=watch)
            program = pgcc.load(out)  # (as the bench does: the program runs in the same process)
            program(*[x.clone() for x in inputs], out=program.new_outputs())
        watch.close()
        torch.cuda.synchronize()
        after = fn.weights
        moved = [n for n in before if n not in after or after[n].data_ptr() != before[n][0]]
        changed = [n for n in before if n in after and not torch.equal(after[n], before[n][1])]
        assert not moved and not changed, f"{key}: state tensors moved {moved[:5]} or changed {changed[:5]}"
        compiled, twin_compiled = torch.compile(fn), torch.compile(twin)
        for step in range(4):
            how, f, ref = ("eager", fn, twin) if step < 2 else ("compiled", compiled, twin_compiled)
            xs = [x.clone() for x in inputs]
            got, want = f(*xs), ref(*xs)
            torch.cuda.synchronize()
            assert torch.equal(got, want), f"{key}: {how} step {step + 1}: loss {got.item()} against {want.item()}"
            print(f"{key}: {how} step {step + 1} after the export: loss {got.item():.6f}, the copy's the same")
        program.close()
        print(f"export_state {key}: PASS (state tensors in place and unchanged, the step runs on)")


if __name__ == "__main__":
    main()

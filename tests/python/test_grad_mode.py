"""export.in_grad_mode: verify's reference runs in the grad mode the export was called
in (as the captures ran), though verify_export calls it under no_grad -- a training
step that calls loss.backward() unmarked (the wild suite's cg:forward_backward) needs
grad enabled.  With a stand-in torch whose grad mode is a flag."""
import contextlib

from pgcc.export import in_grad_mode


class Torch:
    grad = True

    @staticmethod
    @contextlib.contextmanager
    def set_grad_enabled(mode):
        before, Torch.grad = Torch.grad, mode
        try:
            yield
        finally:
            Torch.grad = before

    no_grad = staticmethod(lambda: Torch.set_grad_enabled(False))


def test_the_reference_runs_in_the_exports_grad_mode_under_no_grad():
    seen = []

    def step(x, y):
        seen.append(Torch.grad)
        return x + y
    call = in_grad_mode(Torch, step, True)
    with Torch.no_grad():
        assert call(1, 2) == 3
        assert Torch.grad is False  # (the caller's mode back after the call)
    assert in_grad_mode(Torch, step, False)(3, 4) == 7
    assert seen == [True, False] and Torch.grad is True

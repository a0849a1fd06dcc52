"""verify_export's comparison of a call: the outputs, then the input tensors after the
call (an input the callable changes in place, x.mul_(2), must be changed so by the
program), the callable running on its own copies of the inputs taken before the
program's call -- with numpy arrays standing in for tensors."""
import numpy as np
import pytest

from pgcc import verify_export as V
from pgcc.errors import ExportError


class FakeTorch:
    Tensor = np.ndarray  # (Detached below is one)


def np_compare(got, ref):
    same = got.shape == ref.shape and got.dtype == ref.dtype and got.tobytes() == ref.tobytes()
    err = 0.0 if same else float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    return same, err, 1e-5


class Detached(np.ndarray):
    requires_grad = False

    def detach(self):
        return self

    def clone(self):
        return self.copy()


def arr(a):
    return np.asarray(a, dtype=np.float32).view(Detached)


def inplace_callable(x, y):  # (wild_cudagraph.inplace_input)
    x *= 2
    x += y
    return ((x * y).sum(axis=1),)


def check(program, monkeypatch):
    monkeypatch.setattr(V, "compare", np_compare)
    rng = np.random.default_rng(0)
    xs = [arr(rng.standard_normal((8, 32))), arr(rng.standard_normal((8, 32)))]
    refs = V.copies(FakeTorch, xs)
    got = program(*xs)  # the program first, as verify calls them
    ref = inplace_callable(*refs)
    return V.judge_call("f", FakeTorch, list(got), list(ref), xs, refs, True, 0.0, "on call 0")


def test_an_input_changed_in_place_as_the_callable_does_passes(monkeypatch):
    identical, worst = check(inplace_callable, monkeypatch)
    assert identical and worst == 0.0


def test_the_callable_on_the_programs_changed_inputs_would_differ(monkeypatch):
    """What verify did before: the callable ran on the inputs the program had changed."""
    monkeypatch.setattr(V, "compare", np_compare)
    xs = [arr(np.ones((2, 4))), arr(np.full((2, 4), 3.0))]
    got = inplace_callable(*xs)
    with pytest.raises(ExportError, match=r"output 0 \(out0\)"):
        V.judge_call("f", FakeTorch, list(got), list(inplace_callable(*xs)), xs, xs, True, 0.0, "on call 0")


def test_a_program_that_leaves_the_input_unchanged_is_refused(monkeypatch):
    def forgets(x, y):
        return (((2 * x + y) * y).sum(axis=1),)  # the right output, x not written back
    with pytest.raises(ExportError, match=r"input tensor 0 after the call differs"):
        check(forgets, monkeypatch)


def test_copies_clone_tensors_and_keep_numbers():
    x = arr(np.ones(3))
    got = V.copies(type("T", (), {"Tensor": Detached}), [x, 2.5])
    assert got[1] == 2.5 and got[0] is not x and got[0].tobytes() == x.tobytes()


def test_a_training_steps_errors_within_the_callables_own_spread_pass():
    """verify_training's judgement where the callable is not deterministic (beyond_noise):
    errors past the tolerance pass only within NOISE_FACTOR times the callable's error
    against itself; against a deterministic callable (noise 0), never."""
    from pgcc.verify_export import NOISE_FACTOR, beyond_noise
    bad = [("state tensor w after 3 steps", False, 9e-4, 1e-5, "torch.float32"),
           ("output 0 (out0) of step 3", False, 2e-5, 1e-5, "torch.float32")]
    assert beyond_noise("m", bad, 3e-4) is None
    assert beyond_noise("m", bad, 9e-4 / NOISE_FACTOR) is None
    why = beyond_noise("m", bad, 9e-4 / NOISE_FACTOR / 1.01)
    assert why.startswith("verify m: state tensor w after 3 steps differs") and "differs from itself" in why
    assert "over 2 runs" in why and "over 4 runs" in beyond_noise("m", bad, 1e-5, 4)
    why = beyond_noise("m", bad, 0.0)
    assert "state tensor w" in why and "itself" not in why


def test_an_input_copy_is_a_leaf_as_the_input_is():
    """example_inputs.input_copy: a copy with no history back to its input (detached
    first), requiring grad where the input does; scaled where asked."""
    from pgcc.example_inputs import input_copy

    class T:
        def __init__(self, v, requires_grad=False, history=()):
            self.v, self.requires_grad, self.history = v, requires_grad, history

        def detach(self):
            return T(self.v)

        def clone(self):
            return T(self.v, self.requires_grad, self.history + ("clone",))

        def __mul__(self, k):
            return T(self.v * k, self.requires_grad, self.history + ("mul",))

        def requires_grad_(self, on=True):
            self.requires_grad = on
            return self
    x = T(2.0, requires_grad=True, history=("made by the step",))
    y = input_copy(x)
    assert y is not x and y.requires_grad and y.history == ("clone",) and y.v == 2.0
    z = input_copy(x, 1.5)
    assert z.requires_grad and z.history == ("mul",) and z.v == 3.0
    assert not input_copy(T(1.0)).requires_grad


def test_leaf_grads_are_the_leaves_grads():
    """example_inputs.leaf_grads: (tensor, its .grad) of the leaves among the inputs, numbers
    and non-leaves left out."""
    from pgcc.example_inputs import leaf_grads

    class T:
        def __init__(self, leaf, grad=None):
            self.is_leaf, self.grad = leaf, grad
    a, b, c = T(True, "g"), T(False), T(True)
    assert leaf_grads(type("torch", (), {"Tensor": T}), [a, 3, b, c]) == [(a, "g"), (c, None)]


def test_spread_runs_the_callable_again_until_its_runs_cover_the_error_or_agree():
    """verify_export.spread: a deterministic callable is run once more (two runs alike);
    a noisy one until the largest difference between two runs covers the error, at most
    AGAIN more times."""
    from pgcc.verify_export import AGAIN, NOISE_FACTOR, spread
    bad = [("state tensor w", False, 1.0, 1e-5, "bfloat16")]

    def judged(x, _sx, y, _sy):
        return [("out", x == y, abs(x - y), 1e-5, "bfloat16")]
    runs = iter([(5.0, None)] * 9)
    assert spread("m", bad, (5.0, None), lambda: next(runs), judged) == (0.0, 2)
    wide = iter([(5.0 + 1.0 / NOISE_FACTOR, None), (5.0, None)])
    assert spread("m", bad, (5.0, None), lambda: next(wide), judged) == (1.0 / NOISE_FACTOR, 2)
    close = iter([(5.0 + 1e-6 * k, None) for k in range(1, 9)])
    noise, n = spread("m", bad, (5.0, None), lambda: next(close), judged)
    assert n == AGAIN + 1 and noise > 0  # (never enough: every run made, the largest spread kept)

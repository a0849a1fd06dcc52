"""warmup.compiled_or_eager over a stand-in torch.compile: when an export runs its
callable eagerly."""
from types import SimpleNamespace


def test_compiled_or_eager_falls_back_once_on_double_backward_only():
    """warmup.compiled_or_eager: torch.compile's callable until it raises AOTAutograd's
    double-backward error; then the callable itself, that call made again, and every
    later one; any other error is the caller's."""
    from pgcc.warmup import compiled_or_eager
    calls, warned = [], []

    def step(x):
        calls.append(("eager", x))
        return x + 1

    def compiled(x):
        calls.append(("compiled", x))
        if x == 2:
            raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")
        if x == 9:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return x + 1
    torch = SimpleNamespace(compile=lambda fn: compiled)
    run = compiled_or_eager(torch, step, lambda *a: warned.append(a))
    assert run(1) == 2 and run.why is None
    try:
        run(9)
    except RuntimeError as e:
        assert "illegal memory access" in str(e) and run.why is None
    assert run(2) == 3 and "double backward" in run.why and len(warned) == 1
    assert run(9) == 10  # (eager from here on)
    assert calls == [("compiled", 1), ("compiled", 9), ("compiled", 2), ("eager", 2), ("eager", 9)]

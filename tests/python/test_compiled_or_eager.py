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


def test_scalars_on_device_compiles_a_copy_of_the_code_and_calls_under_the_setting():
    """scalars_on_device: torch.compile gets a function of its own code object (TorchDynamo
    keeps its graphs per code object: none of a compile without the setting are reused),
    the same behaviour; each call runs inside dynamo's config patch, and only then."""
    import contextlib
    from pgcc.warmup import compiled_or_eager, own_code
    state = {"patched": False, "seen": []}

    @contextlib.contextmanager
    def patch(**kw):
        assert kw == {"capture_scalar_outputs": True}
        state["patched"] = True
        try:
            yield
        finally:
            state["patched"] = False
    compiled = []

    def compile_(fn):
        compiled.append(fn)

        def call(*a):
            state["seen"].append(state["patched"])
            return fn(*a)
        return call
    torch = SimpleNamespace(compile=compile_, _dynamo=SimpleNamespace(config=SimpleNamespace(patch=patch)))

    def scale(x, k=2, *, b=1):
        return x * k + b
    run = compiled_or_eager(torch, scale, lambda *a: None, scalars_on_device=True)
    assert run(3) == 7 and state["seen"] == [True] and not state["patched"]
    assert compiled[0] is not scale and compiled[0].__code__ is not scale.__code__
    assert compiled[0].__code__ == scale.__code__ and compiled[0].__name__ == "scale"
    plain = compiled_or_eager(torch, scale, lambda *a: None)
    assert plain(3) == 7 and state["seen"] == [True, False] and compiled[1] is scale
    bound = SimpleNamespace(f=len).f  # (not a plain function: compiled as it is)
    assert own_code(bound) is bound

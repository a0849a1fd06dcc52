"""export.scalars_on_device: the compile with traced scalars is kept only where a call
then reads fewer values back; a compile that fails with it leaves the plain one, the
caller's state written back and a warning.  Its warm-up and compile stood in for."""
import importlib

import pytest

from pgcc.progress import Progress

EXPORT = importlib.import_module("pgcc.export")  # (the module: pgcc.export is also the function it exports)


@pytest.fixture
def stand_ins(monkeypatch):
    seen = {"restored": [], "compiled": []}

    class Compiled:
        def __init__(self, torch, fn, warn, scalars_on_device=False):
            self.fn, self.scalars_on_device = fn, scalars_on_device
            seen["compiled"].append(scalars_on_device)

    monkeypatch.setattr(EXPORT, "compiled_or_eager", Compiled)
    monkeypatch.setattr(EXPORT, "FlatCall", lambda torch, call, spec, weights: ("run", call))
    monkeypatch.setattr(EXPORT, "restore_state", lambda state: seen["restored"].append(state))
    monkeypatch.setattr(EXPORT, "stuck_error", lambda: None)
    return seen


def call(result_of_warm_up, monkeypatch, prog):
    def warm_up(*args, **kwargs):
        if isinstance(result_of_warm_up, Exception):
            raise result_of_warm_up
        return result_of_warm_up
    monkeypatch.setattr(EXPORT, "warm_up", warm_up)
    plain = ("plain call", "plain run", 1, 0)
    return plain, EXPORT.scalars_on_device(None, lambda x: x, None, (), {}, 3, "f", prog, "saved state", None, plain)


def test_fewer_reads_keeps_the_traced_compile(stand_ins, monkeypatch):
    prog = Progress(quiet=True)
    plain, got = call((0, 4), monkeypatch, prog)
    call_, run, per_call, drawn = got
    assert call_.scalars_on_device and run == ("run", call_) and (per_call, drawn) == (0, 4)
    assert stand_ins["compiled"] == [True] and stand_ins["restored"] == []


def test_as_many_reads_keeps_the_plain_compile(stand_ins, monkeypatch):
    plain, got = call((1, 0), monkeypatch, Progress(quiet=True))
    assert got is plain and stand_ins["restored"] == []


def test_a_failed_traced_compile_keeps_the_plain_one_with_a_warning(stand_ins, monkeypatch):
    prog = Progress(quiet=True)
    plain, got = call(RuntimeError("Could not guard on data-dependent expression u0 > 0"), monkeypatch, prog)
    assert got is plain and stand_ins["restored"] == ["saved state"]  # (the failed warm-up's steps undone)
    (kind,) = prog.warnings
    assert "capture_scalar_outputs" in kind and "data-dependent" in prog.warnings[kind][1][0]


def test_a_fault_is_not_swallowed(stand_ins, monkeypatch):
    monkeypatch.setattr(EXPORT, "stuck_error", lambda: "CUDA error 700")
    with pytest.raises(RuntimeError, match="illegal"):
        call(RuntimeError("an illegal memory access"), monkeypatch, Progress(quiet=True))

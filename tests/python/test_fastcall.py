"""fastcall.py and _fastcall.c on the CPU, with no GPU and no torch: the extension builds
and imports; a Caller given stand-ins (a tensor class with torch.Tensor's attributes, a
ctypes function as NAME_run that records the NAME_args bytes and the stream it got)
writes each tensor's address at its field's offset -- the arena's for a tensor without
elements -- and returns NAME_run's status; it runs nothing and returns -1 for any
argument its field does not take (another dtype, shape, device, a CPU or strided tensor,
not a tensor, too few, an attribute that raises, other strides), and gives back every
reference it takes; caller_for makes none where a program is not all tensors of known
dtype and shape."""
import ctypes as C
import struct
from types import SimpleNamespace

import pytest

from pgcc import fastcall

pytestmark = pytest.mark.slow  # (builds C)

F32, F16 = object(), object()  # (stand-ins for torch dtypes: compared by identity)
ARENA = 0xA0000


class Tensor:
    def __init__(self, ptr, shape, dtype=F32, cuda=True, device=0, contiguous=True, stride=None):
        self.ptr, self.shape, self.dtype, self.is_cuda = ptr, shape, dtype, cuda
        self.device, self.contiguous, self.strides = device, contiguous, stride

    def stride(self):
        return self.strides

    def get_device(self):
        return self.device

    def is_contiguous(self):
        return self.contiguous

    def data_ptr(self):
        return self.ptr


class Raising(Tensor):
    @property
    def dtype(self):
        raise RuntimeError("no dtype here")

    @dtype.setter
    def dtype(self, v):
        pass


RUN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_void_p)


@pytest.fixture
def made():
    """(caller, calls, status): a Caller over NAME_args of 32 bytes, fields in at 16 ([2, 3] f32,
    contiguous) and out at 0 ([4] f16, every other element: strides (2,)); calls records (ctx, NAME_args bytes, stream) per NAME_run call,
    which returns status[0]."""
    mod = fastcall.module()
    assert mod is not None, fastcall.why_not()
    calls, status = [], [0]

    def run(ctx, args, stream):
        calls.append((ctx, C.string_at(args, 32), stream))
        return status[0]
    fn = RUN(run)
    caller = mod.Caller(C.cast(fn, C.c_void_p).value, 0xC7, 32, ARENA, 0, Tensor, lambda dev: 0x5000 + dev,
                        [(16, F32, (2, 3), None), (0, F16, (4,), (2,))])
    made.keep = fn  # (alive while the caller is)
    return caller, calls, status


def test_a_call_writes_each_address_at_its_offset(made):
    caller, calls, status = made
    assert caller((Tensor(0x1000, (2, 3)),), [Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))]) == 0
    (ctx, args, stream), = calls
    assert ctx == 0xC7 and stream == 0x5000
    assert struct.unpack("<QQQQ", args) == (0x2000, 0, 0x1000, 0)


def test_a_tensor_without_elements_gets_the_arena(made):
    caller, calls, status = made
    assert caller([Tensor(0, (2, 3))], (Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,)),)) == 0
    assert struct.unpack("<QQQQ", calls[0][1])[2] == ARENA


def test_the_status_of_the_run_is_returned(made):
    caller, calls, status = made
    status[0] = 7
    assert caller((Tensor(0x1000, (2, 3)),), [Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))]) == 7 and len(calls) == 1


@pytest.mark.parametrize("bad", [
    Tensor(0x1000, (2, 3), F16),                # another dtype
    Tensor(0x1000, (3, 2)),                     # another shape
    Tensor(0x1000, (2, 3), device=1),           # another device
    Tensor(0x1000, (2, 3), cuda=False),         # on the CPU
    Tensor(0x1000, (2, 3), contiguous=False),   # strided
    Raising(0x1000, (2, 3)),                    # an attribute that raises
    1.5,                                        # not a tensor
])
def test_an_argument_its_field_does_not_take_runs_nothing(made, bad):
    caller, calls, status = made
    assert caller((bad,), [Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))]) == -1
    assert caller((Tensor(0x1000, (2, 3)),), [bad]) == -1
    assert calls == []


@pytest.mark.parametrize("stride", [(1,), (4,), None])
def test_an_output_of_other_strides_runs_nothing(made, stride):
    caller, calls, status = made
    assert caller((Tensor(0x1000, (2, 3)),), [Tensor(0x2000, (4,), F16, stride=stride)]) == -1
    assert calls == []


def test_too_few_or_too_many_arguments_run_nothing(made):
    caller, calls, status = made
    assert caller((), [Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))]) == -1
    assert caller((Tensor(0x1000, (2, 3)), Tensor(0x1000, (2, 3))), [Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))]) == -1
    assert calls == []


def test_a_slot_outside_the_args_is_refused():
    mod = fastcall.module()
    with pytest.raises(ValueError, match="outside NAME_args"):
        mod.Caller(1, 0, 16, 0, 0, Tensor, lambda d: 0, [(12, F32, (1,), None)])
    with pytest.raises(TypeError, match="stride must be a tuple or None"):
        mod.Caller(1, 0, 16, 0, 0, Tensor, lambda d: 0, [(0, F32, (1,), [1])])


def program():
    f = SimpleNamespace(offset=0, torch_dtype=F32, shape=(4,), stride=None)
    p = SimpleNamespace(torch=SimpleNamespace(_C=SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0),
                                              Tensor=Tensor),
                        _packed=(None, [0], ARENA), inputs=[f], outputs=[],
                        args_size=8, device=SimpleNamespace(index=0), arena=Tensor(ARENA, (1,)), ctx=C.c_void_p(1),
                        run_fn=RUN(lambda *a: 0))
    return p


@pytest.mark.parametrize("what", ["scalars", "no raw stream getter", "unknown shape", "unknown dtype"])
def test_no_caller_where_a_program_is_not_all_contiguous_tensors(what):
    p = program()
    if what == "scalars":
        p._packed = None
    elif what == "no raw stream getter":
        p.torch = SimpleNamespace(_C=SimpleNamespace(), Tensor=Tensor)
    elif what == "unknown shape":
        p.inputs[0].shape = None
    else:
        p.inputs[0].torch_dtype = None
    assert fastcall.caller_for(p) is None
    assert fastcall.caller_for(program()) is not None


def test_pgcc_fastcall_0_turns_it_off(monkeypatch):
    monkeypatch.setattr(fastcall, "_state", {})
    monkeypatch.setenv("PGCC_FASTCALL", "0")
    assert fastcall.module() is None and fastcall.why_not() == "PGCC_FASTCALL=0"
    assert fastcall.caller_for(program()) is None


def test_calls_take_and_give_back_every_reference(made):
    """1,000 calls that run and 1,000 that do not leave every object's reference count as it was."""
    import sys
    caller, calls, status = made
    x, y = Tensor(0x1000, (2, 3)), Tensor(0x2000, (4,), F16, contiguous=False, stride=(2,))
    bad = Tensor(0x1000, (3, 2))
    ins, outs = (x,), [y]
    watched = [x, y, bad, F32, F16, ins, outs, x.shape, y.shape, y.strides, bad.shape]
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(1000):
        assert caller(ins, outs) == 0
        assert caller((bad,), outs) == -1
    assert [sys.getrefcount(o) for o in watched] == before and len(calls) == 1000


def test_pgcc_fastcall_so_names_the_build_to_import(monkeypatch, tmp_path):
    built = fastcall.module().__file__
    monkeypatch.setattr(fastcall, "_state", {})
    monkeypatch.setenv("PGCC_FASTCALL_SO", built)
    assert fastcall.module().__file__ == built and fastcall.why_not() is None
    monkeypatch.setattr(fastcall, "_state", {})
    monkeypatch.setenv("PGCC_FASTCALL_SO", str(tmp_path / "none.so"))
    assert fastcall.module() is None and "no such file" in fastcall.why_not()

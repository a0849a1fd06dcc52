"""A loaded program's call refuses what it does not take with pgcc's own exceptions
(errors.py: ArgumentError, also a TypeError and a ValueError; RunError, also a
RuntimeError; both ExportErrors), never a raw struct or ctypes error; and a
0-dimensional input or a scalar takes a Python number or a 0-d CPU tensor (the
export's own 0-d CPU tensor input).  loader.Program.args with stand-ins for torch
(test_call_layouts')."""
import struct

import pytest

from pgcc.call_args import as_number
from pgcc.errors import ArgumentError, CallError, ExportError, RunError
from test_call_layouts import F, FakeTorch, T, program, ptrs


class Cpu0d:
    """A stand-in 0-dimensional CPU tensor (a temperature)."""

    def __init__(self, v):
        self.v, self.shape, self.dtype, self.is_cuda, self.layout = v, (), "f32", False, "strided"
        self.device = type("D", (), {"type": "cpu", "index": None})()

    def dim(self):
        return 0

    def item(self):
        return self.v


class Torch(FakeTorch):
    Tensor = (T, Cpu0d)  # (for isinstance: both stand-ins are tensors)
    full_made = []

    @staticmethod
    def full(shape, v, dtype, device):
        t = T(shape, ptr=0x7000, dtype=dtype)
        t.value = v
        Torch.full_made.append(t)
        return t



def test_the_kinds_are_pgccs_own_and_pythons():
    assert issubclass(ArgumentError, CallError) and issubclass(RunError, CallError) and issubclass(CallError, ExportError)
    assert issubclass(ArgumentError, TypeError) and issubclass(ArgumentError, ValueError)
    assert issubclass(RunError, RuntimeError)


def test_as_number():
    assert as_number(Torch, 0.7) == 0.7 and as_number(Torch, True) is True
    assert as_number(Torch, Cpu0d(2)) == 2
    assert as_number(Torch, T((), ptr=0x10)) is None  # (a CUDA tensor: not a number)
    assert as_number(Torch, "0.7") is None


def scalar(name, offset, dtype="f32", size=4):
    f = F(name, offset, (), role="scalar")
    f.dtype, f.size, f.torch_dtype = dtype, size, None
    return f


def test_a_0d_input_takes_a_number_or_a_cpu_tensor_copied_to_the_device_once_per_number():
    p = program([F("in0", 0, (4,)), F("in1", 8, ())], [])
    p.torch = Torch
    x = T((4,), ptr=0x1000)
    Torch.full_made.clear()
    buf = p.args([x, Cpu0d(0.7)], [])
    assert ptrs(buf, 2) == [0x1000, 0x7000] and Torch.full_made[0].value == 0.7
    assert buf.keep == [Torch.full_made[0]]  # (alive until the call is queued)
    p.args([x, 2.5], [])
    assert Torch.full_made[-1].value == 2.5 and Torch.full_made[-1].shape == ()
    # the same number again: the tensor made for it (the program only reads it); another: a new one
    assert ptrs(p.args([x, 2.5], []), 2)[1] == 0x7000 and len(Torch.full_made) == 2
    p.args([x, Cpu0d(0.7)], [])
    assert len(Torch.full_made) == 3 and Torch.full_made[-1].value == 0.7
    p.args([x, 1], [])  # (1 == 1.0, but an int: made again, as full would make it of that number)
    assert len(Torch.full_made) == 4


def test_a_scalar_takes_a_number_or_a_cpu_tensor_and_refuses_the_rest():
    p = program([scalar("s0", 0), scalar("s1", 8, "i32")], [])
    p.torch = Torch
    buf = p.args([Cpu0d(1.5), 7], [])
    assert struct.unpack_from("<f", buf, 0)[0] == 1.5 and struct.unpack_from("<i", buf, 8)[0] == 7
    with pytest.raises(ArgumentError, match=r"argument 1 \(s1\) is 4294967296: a i32 scalar cannot hold it"):
        p.args([1.0, 2 ** 32], [])
    with pytest.raises(ArgumentError, match=r"m: argument 0 \(s0\) is a scalar: give a number .*not str"):
        p.args(["1.0", 1], [])
    with pytest.raises(ArgumentError, match=r"not a .* tensor of shape \[2\]"):
        p.args([T((2,)), 1], [])


def test_wrong_tensors_and_counts_are_argument_errors():
    p = program([F("in0", 0, (2, 3))], [F("out0", 8, (4,), role="output")])
    with pytest.raises(ArgumentError, match=r"argument 0 \(in0\) must have shape \[2, 3\] \(got \[3, 3\]\)"):
        p.args([T((3, 3))], [T((4,))])
    with pytest.raises(TypeError, match=r"takes 1 inputs \(in0\), got 2"):  # (a TypeError, as Python's own)
        p.args([T((2, 3)), T((2, 3))], [T((4,))])
    with pytest.raises(ArgumentError, match=r"must be a CUDA tensor, got list"):
        p.args([[1, 2]], [T((4,))])
    with pytest.raises(ExportError, match=r"out\[0\] \(out0\) must have shape \[4\]"):
        p.args([T((2, 3))], [T((5,))])


def test_a_failed_run_is_a_run_error_with_libpgrts_message():
    p = program([], [])
    p.run_fn = lambda ctx, args, stream: 7
    p.ctx, p.err = None, lambda: "guard 0 failed: the value read is not the one captured"
    with pytest.raises(RunError, match=r"m_run: guard 0 failed") as e:
        p.run(b"", stream=0)
    assert isinstance(e.value, RuntimeError)

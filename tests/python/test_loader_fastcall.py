"""loader.Program's call with its Caller (fastcall.py), on the CPU with stand-ins for torch
(test_call_layouts') and ctypes functions standing for NAME_run: tensors as recorded go
through the Caller; one it does not take (other strides) runs once, through the general
path, which copies it; a 0-dimensional input given as a number is made a CUDA tensor once
per value and then goes through the Caller; a failed NAME_run is a RunError; a program
that draws random numbers advances its generator once per call, whichever path runs it."""
import ctypes as C
import struct
from types import SimpleNamespace

import pytest

from pgcc import fastcall
from pgcc.errors import RunError
from test_call_layouts import F, FakeTorch, T, program

pytestmark = pytest.mark.slow  # (builds the extension)

RUN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_void_p)


class Torch(FakeTorch):
    _C = SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x5000)
    full_made = []

    @staticmethod
    def full(shape, v, dtype, device):
        t = T(shape, ptr=0x7000 + 0x100 * len(Torch.full_made), dtype=dtype)
        Torch.full_made.append(t)
        return t


class Generator:
    def __init__(self):
        self.offset, self.seeds = 100, []

    def get_offset(self):
        return self.offset

    def set_offset(self, v):
        self.offset = v

    def initial_seed(self):
        return 7


def loaded(inputs, outputs, status=0):
    """A Program over stand-ins whose Caller and general path each record (ctx, NAME_args
    bytes, stream) in calls["c"] and calls["ctypes"]; both return status."""
    mod = fastcall.module()
    assert mod is not None, fastcall.why_not()
    calls = {"c": [], "ctypes": []}
    size = 8 * (len(inputs) + len(outputs))

    def recorder(key):
        def run(ctx, args, stream):
            calls[key].append((ctx, C.string_at(args, size), stream))
            return status
        return RUN(run)
    p = program(inputs, outputs)
    p.torch, p.structure, p.aliases, p.ctx = Torch, None, None, C.c_void_p(0xC7)
    p._numbers_at = [i for i, f in enumerate(inputs) if f.shape == ()]
    p._n_fast, p.err = len(inputs), lambda: "a guard failed"
    c_run, p.run_fn = recorder("c"), recorder("ctypes")
    p._caller = mod.Caller(C.cast(c_run, C.c_void_p).value, 0xC7, size, 0xA000, 0, T, Torch._C._cuda_getCurrentRawStream,
                           [(f.offset, f.torch_dtype, f.shape, f.stride) for f in inputs + outputs])
    p._keep = c_run
    return p, calls


def addresses(raw, n):
    return list(struct.unpack(f"<{n}Q", raw))


def test_tensors_as_recorded_go_through_the_caller():
    p, calls = loaded([F("in0", 0, (2, 3))], [F("out0", 8, (4,), role="output")])
    x, y = T((2, 3), ptr=0x1000), T((4,), ptr=0x2000)
    assert p(x, out=y) is y
    assert calls["ctypes"] == [] and [(ctx, addresses(a, 2), s) for ctx, a, s in calls["c"]] == \
        [(0xC7, [0x1000, 0x2000], 0x5000)]


def test_a_tensor_of_other_strides_runs_once_through_the_general_path():
    p, calls = loaded([F("in0", 0, (2, 3))], [F("out0", 8, (4,), role="output")])
    T.made.clear()
    x = T((2, 3), stride=(1, 2), ptr=0x1000)  # (column-major: copied into the recorded layout)
    p(x, out=T((4,), ptr=0x2000))
    assert calls["c"] == [] and len(calls["ctypes"]) == 1
    assert addresses(calls["ctypes"][0][1], 2) == [0x9000, 0x2000] and T.made[0].copied_from is x


def test_a_number_for_a_0d_input_is_made_a_cuda_tensor_once_per_value():
    p, calls = loaded([F("x", 0, (4,)), F("temperature", 8, ())], [F("out0", 16, (4,), role="output")])
    Torch.full_made.clear()
    x, y = T((4,), ptr=0x1000), T((4,), ptr=0x2000)
    for v in (0.7, 0.7, 0.5):
        p(x, v, out=y)
    assert calls["ctypes"] == [] and len(Torch.full_made) == 2
    assert [addresses(a, 3)[1] for _, a, _ in calls["c"]] == [0x7000, 0x7000, 0x7100]


def test_a_failed_run_is_a_run_error():
    p, _ = loaded([F("in0", 0, (2, 3))], [F("out0", 8, (4,), role="output")], status=3)
    with pytest.raises(RunError, match="m_run: a guard failed"):
        p(T((2, 3)), out=T((4,)))


@pytest.mark.parametrize("stride", [None, (1, 2)])  # (through the Caller; through the general path)
def test_a_random_program_advances_its_generator_once_per_call(stride):
    p, calls = loaded([F("in0", 0, (2, 3))], [F("out0", 8, (4,), role="output")])
    p.rng_increment, p.generator = 4, Generator()
    p.lib = SimpleNamespace(pgrt_rng_set=lambda ctx, seed, offset: p.generator.seeds.append((seed, offset)) or 0)
    p(T((2, 3), stride=stride), out=T((4,)))
    p(T((2, 3), stride=stride), out=T((4,)))
    assert p.generator.offset == 108 and p.generator.seeds[-1] == (7, 104)
    assert len(calls["c" if stride is None else "ctypes"]) == 2

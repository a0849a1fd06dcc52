"""call_args.scalar_callbacks (a loaded Program's callback scalars) on the CPU: a Python function of the values read back
becomes the pgrt_scalar_cb libpgrt calls after a sync.  Called here as libpgrt calls it
(the host buffers' addresses, a pointer to the value), with no GPU and no torch: the
value read is decoded by its host buffer's dtype, the result written as the scalar's
dtype in the low bytes; a failing function makes it return nonzero; a program whose
callback scalar has no function does not load."""
import ctypes as C
import math
import struct
from types import SimpleNamespace

import pytest

from pgcc.errors import ExportError
from pgcc.call_args import scalar_callbacks


def callbacks(tmp_path, given, dtype="f64"):
    """scalar_callbacks for a program p with host buffers f32 and bool and one callback scalar cb0."""
    (tmp_path / "p.graph").write_text("pgcc 1;\nbuffer r0 size 4 role host dtype f32 shape [];\n"
                                      "buffer r1 size 1 role host dtype bool shape [];\n")
    field = SimpleNamespace(name="cb0", role="scalar callback", dtype=dtype)
    return scalar_callbacks("p", [field], str(tmp_path / "p.graph"), given)


def call(fn, *host):
    """fn as libpgrt calls it: (data, the host buffers' addresses, &value) -> status."""
    bufs = [C.create_string_buffer(b, len(b)) for b in host]
    addrs = (C.c_void_p * len(bufs))(*[C.addressof(b) for b in bufs])
    value = C.c_uint64(0xDEADBEEF)
    return fn(None, addrs, C.byref(value)), value.value


def test_the_function_gets_the_values_read_and_gives_the_scalar(tmp_path):
    seen = []

    def damping(m, flag):
        seen.append((m, flag))
        return math.exp(-m)
    (f, fn, at), = callbacks(tmp_path, {"cb0": damping})
    assert f.name == "cb0" and at == C.cast(fn, C.c_void_p).value
    status, value = call(fn, struct.pack("<f", 1.5), b"\x01")
    assert status == 0 and seen == [(1.5, True)]
    assert value == struct.unpack("<Q", struct.pack("<d", math.exp(-1.5)))[0]


def test_a_narrow_scalar_fills_the_low_bytes(tmp_path):
    (_, fn, _), = callbacks(tmp_path, {"cb0": lambda m, flag: -int(m * 4)}, "i32")
    status, value = call(fn, struct.pack("<f", 2.0), b"\x00")
    assert status == 0 and value == struct.unpack("<I", struct.pack("<i", -8))[0]


def test_a_failing_function_fails_the_call(tmp_path):
    (_, fn, _), = callbacks(tmp_path, {"cb0": lambda m, flag: 1 / 0})
    assert call(fn, struct.pack("<f", 1.0), b"\x00")[0] != 0


def test_a_callback_scalar_without_its_function_does_not_load(tmp_path):
    with pytest.raises(ExportError, match=r"callback scalars \['cb0'\] need a function"):
        callbacks(tmp_path, {})

"""snapshots.Snapshot over host memory standing in for the device (no GPU): copies taken
on the "device" and in host memory restore the same bytes, compare equal exactly where
the bytes are the same, range by range and sliced as the replays' proofs compare them,
and a copy the device has no room for is kept in host memory."""
import ctypes as C

import numpy as np
import pytest

from pgcc import snapshots
from pgcc.snapshots import Snapshot


class Buf:
    """A uint8 array standing in for a CUDA tensor: data_ptr, slicing, cpu().numpy()."""

    def __init__(self, a):
        self.a = a

    def data_ptr(self):
        return self.a.ctypes.data

    def __getitem__(self, k):
        return Buf(self.a[k])

    def cpu(self):
        return self

    def numpy(self):
        return self.a


class FakeTorch:
    uint8 = "uint8"

    def __init__(self, free):
        self.free, self.made = free, 0
        outer = self

        class Cuda:
            @staticmethod
            def synchronize():
                pass

            @staticmethod
            def mem_get_info():
                return outer.free, 1 << 40
        self.cuda = Cuda

    def empty(self, n, dtype, device):
        assert dtype == "uint8" and device == "cuda"
        self.made += 1
        return Buf(np.zeros(n, dtype=np.uint8))

    @staticmethod
    def equal(x, y):
        return x.a.shape == y.a.shape and bool((x.a == y.a).all())


@pytest.fixture
def memory(monkeypatch):
    """Three ranges of "device" memory (host buffers) and copies through memmove."""
    class Driver:
        @staticmethod
        def MemcpyDtoD(dst, src, n):
            C.memmove(dst, src, n)
            return 0
    monkeypatch.setattr(snapshots, "cu", lambda: Driver)
    monkeypatch.setattr(snapshots, "read_device", lambda a, n: C.string_at(a, n))
    monkeypatch.setattr(snapshots, "write_device", lambda a, data: C.memmove(a, data, len(data)))
    bufs = [C.create_string_buffer(bytes(range(k, k + n)), n) for k, n in ((0, 16), (50, 0), (100, 40))]
    return bufs, [(C.addressof(b), len(b)) for b in bufs]


@pytest.mark.parametrize("free", [1 << 40, 0], ids=["on the device", "no room: host memory"])
def test_take_restore_compare(memory, free):
    bufs, ranges = memory
    torch = FakeTorch(free + snapshots.HEADROOM if free else 0)
    first = Snapshot.take(torch, ranges)
    assert (first.buf is not None) == bool(free) and torch.made == (1 if free else 0)
    assert first.bytes() == [bytes(range(0, 16)), b"", bytes(range(100, 140))]
    same = Snapshot.take(torch, ranges)
    assert first == same and not first != same and list(first) == list(same)
    bufs[2][5] = 0xFF  # a byte of the third range changes
    changed = Snapshot.take(torch, ranges)
    assert changed != first and changed[:2] == first[:2] and changed[2] != first[2]
    assert next(k for k, (g, want) in enumerate(zip(changed, first)) if g != want) == 2
    assert len(changed) == 3 and changed[-1] != first[-1] and changed[1:] != first[1:]
    first.restore()
    assert Snapshot.take(torch, ranges) == first and bufs[2][5] == bytes([105])


def test_mixed_and_mismatched(memory):
    _, ranges = memory
    on_device = Snapshot.take(FakeTorch(1 << 40), ranges)
    on_host = Snapshot.take(FakeTorch(0), ranges)
    assert on_device == on_host  # (compared as bytes)
    assert on_device[:2] != on_host  # (other ranges: never equal)
    assert on_device.__eq__([b""]) is NotImplemented
    with pytest.raises(IndexError):
        on_device[3]
    with pytest.raises(ValueError):
        on_device[::2]

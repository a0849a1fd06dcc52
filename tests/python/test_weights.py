"""weights.py: safetensors written here and read back by the safetensors package."""
import numpy as np
from safetensors.numpy import load_file

from pgcc.weights import read_safetensors, write_safetensors


def test_round_trip_through_safetensors(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([1, -2, 3], dtype=np.int64)
    c = np.frombuffer(b"\x01\x02\x03", dtype=np.uint8)
    h = np.array([0.5, -1.25], dtype=np.float16)
    path = tmp_path / "w.safetensors"
    write_safetensors(path, [("layer.a", "f32", [3, 4], a.tobytes()), ("b", "i64", [3], b.tobytes()),
                             ("__static_0", "u8", [3], c.tobytes()), ("h", "f16", [2], h.tobytes()),
                             ("empty", "f32", [0], b"")])
    got = load_file(str(path))
    assert set(got) == {"layer.a", "b", "__static_0", "h", "empty"}
    np.testing.assert_array_equal(got["layer.a"], a)
    np.testing.assert_array_equal(got["b"], b)
    np.testing.assert_array_equal(got["__static_0"], c)
    np.testing.assert_array_equal(got["h"], h)
    assert got["empty"].shape == (0,)
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    assert header_len % 8 == 0
    mine = read_safetensors(path)
    assert list(mine) == ["layer.a", "b", "__static_0", "h", "empty"]
    assert mine["layer.a"] == ("f32", [3, 4], a.tobytes())
    assert mine["h"][0] == "f16"


def test_memory_order_reads_a_channels_last_weight_as_it_lies_in_memory():
    """A channels_last conv weight (as nn.Module.to(memory_format=channels_last) makes):
    its bytes in memory are NHWC, which the captured kernels read at its address; the
    contiguous copy (NCHW), which the weights file held before, is another order."""
    from pgcc.weights import memory_order
    nhwc = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 4, 5, 3)  # memory: N, H, W, C
    w = nhwc.transpose(0, 3, 1, 2)  # the NCHW view, channels_last strides
    shape, stride = w.shape, tuple(s // 4 for s in w.strides)
    assert stride == (60, 1, 15, 3)
    size, step = memory_order(shape, stride)
    flat = np.lib.stride_tricks.as_strided(w, shape=size, strides=tuple(s * 4 for s in step))
    assert flat.tobytes() == nhwc.tobytes()
    assert np.ascontiguousarray(w).tobytes() != nhwc.tobytes()
    assert memory_order((3, 4), (4, 1)) == ((12,), (1,))  # contiguous: the same bytes
    assert memory_order((4, 3), (1, 4)) == ((12,), (1,))  # a transpose
    assert memory_order((1, 8, 1, 1), (8, 1, 8, 8)) == ((8,), (1,))  # sizes 1: any stride


def test_memory_order_leaves_gaps_and_shared_elements_to_the_contiguous_copy():
    from pgcc.weights import memory_order
    assert memory_order((3, 4), (8, 1)) is None  # a slice of wider rows: gaps
    assert memory_order((3, 4), (0, 1)) is None  # expanded: rows share elements
    assert memory_order((0, 4), (4, 1)) is None  # no elements
    assert memory_order((4, 3), (2, 1)) is None  # overlapping rows, span below numel

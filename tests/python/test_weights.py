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

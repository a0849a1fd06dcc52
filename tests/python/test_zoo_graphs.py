"""tests/gpu/zoo_export.py --keep-graphs: an export's .graph, report and kernels copied, its
weights files as sparse copies that pgcc reads as it read the originals."""
import importlib.util
import json
import os
import struct

spec = importlib.util.spec_from_file_location(
    "gpu_zoo", os.path.join(os.path.dirname(__file__), "..", "gpu", "zoo_export.py"))
gpu_zoo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_zoo)


def safetensors(path, data):
    head = json.dumps({"w": {"dtype": "U8", "shape": [len(data)], "data_offsets": [0, len(data)]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + data)
    return 8 + len(head)


def test_the_export_is_kept_without_its_weights_bytes(tmp_path):
    src, dest = tmp_path / "export", tmp_path / "kept"
    (src / "kernels").mkdir(parents=True)
    (src / "build").mkdir()
    (src / "m.graph").write_text("graph m\n")
    (src / "m.export.json").write_text("{}")
    (src / "kernels" / "k.cubin").write_bytes(b"\x7fELF" + bytes(60))
    (src / "build" / "m.o").write_bytes(b"object")
    head = safetensors(src / "m.safetensors", bytes(range(1, 201)) * 50)
    safetensors(src / "m.io.safetensors", b"\xa5" * 64)
    gpu_zoo.keep_graph(str(src), "m", str(dest))
    assert sorted(os.listdir(dest)) == ["kernels", "m.export.json", "m.graph", "m.io.safetensors", "m.safetensors"]
    assert (dest / "m.graph").read_text() == "graph m\n"
    assert (dest / "kernels" / "k.cubin").read_bytes() == (src / "kernels" / "k.cubin").read_bytes()
    kept, orig = (dest / "m.safetensors").read_bytes(), (src / "m.safetensors").read_bytes()
    assert len(kept) == len(orig) and kept[:head] == orig[:head] and kept[head:] == bytes(len(orig) - head)
    assert len((dest / "m.io.safetensors").read_bytes()) == len((src / "m.io.safetensors").read_bytes())

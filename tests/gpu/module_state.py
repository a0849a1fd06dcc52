"""Module state on a GPU: what the exporter does for a library that writes a module's
data objects after loading it (cuDNN's depthwise convolution reads WINDOW_SIZE and
CONV_STRIDE_SIZE from __device__ variables it sets), on the fixture cubins of
tests/python/fixtures:

- pgcc.module_watch.ModuleFingerprints.images_for tells, from a function alone, which of
  several images its module was loaded from (globals.cubin, not scale.cubin);
- globals_of gives the data objects whose bytes the "library" changed, and refuses
  one that holds a device address;
- LibraryFunctions.load_image with those globals runs the kernel as the library's
  own module does (compared with a CPU computation), and without them it does not;
- pgcc.cuda.placed puts bytes at an address with chosen low 32 bits (how the export
  tells a host address a kernel reads through from a word it takes as a value).

    PYTHONPATH=python:. python3 tests/gpu/module_state.py        (exit status 0: every check passed)
"""
import ctypes as C
import os
import struct

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "python", "fixtures")


def main():
    import torch
    from pgcc.cuda import check, cu, write_device
    from pgcc.diagnose import launch
    from pgcc.errors import ExportError
    from pgcc.kernel_search import LibraryFunctions
    from pgcc.module_watch import ModuleFingerprints

    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context, current
    images = {n: open(os.path.join(FIX, n + ".cubin"), "rb").read() for n in ("scale", "globals")}
    d = cu()
    # the "library": loads globals.cubin and sets its table, as cuDNN sets its variables
    mod, func = C.c_void_p(), C.c_void_p()
    image = C.create_string_buffer(images["globals"], len(images["globals"]))
    check(d.ModuleLoadData(C.byref(mod), image), "cuModuleLoadData")
    check(d.ModuleGetFunction(C.byref(func), mod, b"weigh"), "cuModuleGetFunction")
    at, size = C.c_uint64(), C.c_size_t()
    check(d.ModuleGetGlobal(C.byref(at), C.byref(size), mod, b"table"), "cuModuleGetGlobal")
    table = struct.pack("<4f", 5.0, 6.0, 7.0, 8.0)
    write_device(at.value, table)

    prints = ModuleFingerprints()
    fits = prints.images_for(func.value, [images["scale"], images["globals"]])
    assert fits == [images["globals"]], f"images_for: {len(fits)} images, expected globals.cubin only"
    changed = prints.globals_of(func.value, images["globals"])
    assert changed == [("table", table)], f"globals_of: {changed}"
    print(f"fingerprint: the module fits globals.cubin only; changed data objects: {[n for n, _ in changed]}")

    def run(globals_):
        funcs = LibraryFunctions()
        try:
            f = funcs.load_image(images["globals"], "weigh", globals_)
            x = torch.ones(8, device="cuda")
            launch({"func": f, "layout": [(0, 8), (8, 4)], "grid": [1, 1, 1], "block": [8, 1, 1], "smem": 0},
                   struct.pack("<Qi", x.data_ptr(), 8))
            torch.cuda.synchronize()
            return x.cpu().tolist()
        finally:
            funcs.close()

    want = [5.0, 6.0, 7.0, 8.0] * 2  # the CPU's: ones times the table the library set
    got = run(changed)
    err = max(abs(a - b) for a, b in zip(got, want))
    print(f"loaded with its globals: {got}; max error {err}")
    assert err == 0, "the kernel loaded with the module's globals does not compute what the library's module does"
    bare = run(())
    print(f"loaded without them: {bare}")
    assert bare != want, "without the globals the kernel should use the image's own table"

    # a data object holding a device address cannot be carried
    buf = torch.empty(16, device="cuda")
    write_device(at.value, struct.pack("<QQ", buf.data_ptr(), 0))
    try:
        prints.globals_of(func.value, images["globals"])
    except ExportError as e:
        print(f"a device address in a data object is refused: {e}")
    else:
        raise AssertionError("globals_of took a data object holding a device address")
    check(d.ModuleUnload(mod), "cuModuleUnload")

    # placed copies (export.host_copy_check): the bytes at an address with chosen low 32 bits
    from pgcc.cuda import placed, read_device
    data = bytes(range(256))
    for low in (0x4F000000, 0xCF000000, 0x7FFFFFF8, 0xFFFFFF80, 0x00000010):  # aligned, across a granule, at 4 GiB
        with placed(data, low) as addr:
            assert addr & 0xFFFFFFFF == low and read_device(addr, len(data)) == data, f"placed at 0x{addr:x}"
            around = read_device(addr - 4096, 4096) + read_device(addr + len(data), 4096)
            assert around == bytes(8192), f"placed at 0x{addr:x}: the bytes around the copy are not zeros"
            print(f"placed: 256 bytes at 0x{addr:x}, zeros 4 KiB either side")
    print("module_state: PASS")


if __name__ == "__main__":
    main()

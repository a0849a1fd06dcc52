"""Probe (issue 16, MobileNet): does a library kernel depend on module state its library
set after loading it?  The zoo's MobileNet fails at cuDNN's depthwise kernel
(conv2d_c1_k1_nhwc): run through the function cuDNN launched, the export reproduces
the capture; through the same kernel loaded from its fatbin, it does not.

    python3 tests/gpu/probe_module_globals.py [VARIANT] [SYMBOL-PART]   (default fp32 conv2d_c1_k1)

Captures the compiled MobileNetV3-small with pgcc's Capture, takes every kernel node
whose name holds SYMBOL-PART, and for each: the module cuDNN's function lives in
(cuFuncGetModule); the images the process loaded (pgcc.ModuleWatch, CUPTI: ELF) that
hold its code; the image's data objects (ELF symbols of type OBJECT) and which of them the kernel's code
refers to (.rel(a).text.SYMBOL); each object's bytes in cuDNN's live module
(cuModuleGetGlobal) against the image's initial bytes (zeros for NOBITS sections).
Prints what differs.  Then, per function, which of those images its module could have
been loaded from, told without the load calls (fingerprints(): the module's kernels and
their attributes; its data objects' bytes) -- what an export could use to take each
function's code from its own image.  The fingerprints have not run yet (written
2026-11-23 after the device time was spent).  A diagnostic, not a test: exit status 0
when it ran.
"""
import ctypes as C
import os
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "e2e")]


def elf_symbols(image):
    """[(name, type, section index, value, size)] of a 64-bit ELF's .symtab, and the
    section headers [(name, type, offset, size)]."""
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx]
    shstr = image[names[4]:names[4] + names[5]]

    def cstr(tab, at):
        return tab[at:tab.find(b"\0", at)].decode(errors="replace")
    secs = [(cstr(shstr, h[0]), h[1], h[4], h[5], h[6]) for h in heads]  # name, type, off, size, link
    syms = []
    for name, kind, off, size, link in secs:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = image[secs[link][2]:secs[link][2] + secs[link][3]]
        for k in range(size // 24):
            n, info, other, shndx, value, sz = struct.unpack_from("<IBBHQQ", image, off + 24 * k)
            syms.append((cstr(strtab, n), info & 0xF, shndx, value, sz))
    return syms, secs


def relocated_symbols(image, symbol, syms, secs):
    """Names of the symbols the code of `symbol` is relocated against."""
    out = set()
    for name, kind, off, size, _ in secs:
        if name in (f".rel.text.{symbol}", f".rela.text.{symbol}"):
            ent = 16 if name.startswith(".rel.") else 24
            for k in range(size // ent):
                info, = struct.unpack_from("<Q", image, off + ent * k + 8)
                idx = info >> 32
                if idx < len(syms):
                    out.add(syms[idx][0])
    return out


def main():
    import torch
    import zoo
    from pgcc.capture import Capture
    from pgcc.cuda import read_device

    variant = sys.argv[1] if len(sys.argv) > 1 else "fp32"
    part = sys.argv[2] if len(sys.argv) > 2 else "conv2d_c1_k1"
    import pgcc
    watch = pgcc.ModuleWatch()  # (before anything runs: the images cuDNN loads, as ELF)
    fn, inputs, _ = zoo.INFERENCE["mobilenet"](variant)[:3]
    compiled = torch.compile(fn)
    for _ in range(3):
        compiled(*inputs)
    torch.cuda.synchronize()
    cap = Capture(torch, compiled, inputs)
    cap.walk_all()
    nodes = [n for n in cap.nodes if n.get("name") and part in n["name"]]
    print(f"{len(cap.nodes)} nodes; {len(nodes)} named *{part}*")
    lib = C.CDLL("libcuda.so.1")
    lib.cuFuncGetModule.argtypes = [C.POINTER(C.c_void_p), C.c_void_p]
    lib.cuMemGetAddressRange_v2.argtypes = [C.POINTER(C.c_uint64), C.c_void_p, C.c_uint64]
    lib.cuModuleGetGlobal_v2.argtypes = [C.POINTER(C.c_uint64), C.POINTER(C.c_size_t), C.c_void_p, C.c_char_p]
    seen = set()
    for n in nodes:
        sym = n["name"]
        mod = C.c_void_p()
        r = lib.cuFuncGetModule(C.byref(mod), C.c_void_p(n["func"]))
        key = (sym, mod.value)
        if key in seen:
            continue
        seen.add(key)
        print(f"== {sym}: function {n['func']:#x}, module {mod.value and hex(mod.value)} (cuFuncGetModule {r})")
        images = [("watched", img) for img in watch.images.values()
                  if img[:4] == b"\x7fELF" and f".text.{sym}".encode() in img]
        print(f"   {len(images)} images the process loaded (CUPTI) hold .text.{sym}; the watch: image_of "
              f"{watch.image_of(n['func'])}, parent {watch.parent.get(n['func'])}, module in loaded_by "
              f"{mod.value in watch.loaded_by} ({watch.loaded_by.get(mod.value)}), "
              f"parent in loaded_by {watch.parent.get(n['func']) in watch.loaded_by}")
        if len(seen) == 1:
            from pgcc.fatbin import elf_sections, same_kernel_code
            import hashlib
            for _, img in images:
                secs = elf_sections(img)
                print(f"   image {hashlib.sha256(img).hexdigest()[:12]}: {len(img)} B, text "
                      f"{hashlib.sha256(secs.get('.text.' + sym, b'')).hexdigest()[:12]}, constant0 "
                      f"{hashlib.sha256(secs.get('.nv.constant0.' + sym, b'')).hexdigest()[:12]}, sections about it "
                      f"{sorted(k for k in secs if sym in k)}")
            print(f"   same code in all: {same_kernel_code([i for _, i in images], sym)}")
        for path, image in images[:1]:
            if image[:4] != b"\x7fELF":
                print("   (not an ELF image: compressed?)")
                continue
            syms, secs = elf_symbols(image)
            objects = [s for s in syms if s[1] == 1]
            used = relocated_symbols(image, sym, syms, secs)
            print(f"   {len(objects)} data objects in the cubin; the kernel's code refers to {sorted(used)[:20]}")
            for name, _, shndx, value, size in objects:
                if name not in used and len(objects) > 40:
                    continue
                sname, kind, off, ssize, _ = secs[shndx] if shndx < len(secs) else ("?", 0, 0, 0, 0)
                init = bytes(size) if kind == 8 else image[off + value:off + value + size]
                ptr, got = C.c_uint64(), C.c_size_t()
                r = lib.cuModuleGetGlobal_v2(C.byref(ptr), C.byref(got), mod, name.encode())
                if r != 0:
                    print(f"   {name} ({sname}, {size} B): cuModuleGetGlobal {r}")
                    continue
                live = read_device(ptr.value, min(got.value, 1 << 20))
                diff = sum(1 for a, b in zip(live, init) if a != b)
                words = [struct.unpack_from("<Q", live, i)[0] for i in range(0, len(live) - 7, 8)]
                base = C.c_uint64()
                pointers = sum(1 for w in words if w and lib.cuMemGetAddressRange_v2(C.byref(base), None,
                                                                                       C.c_uint64(w)) == 0)
                print(f"   {name} ({sname}, {size} B, live {got.value} B at {ptr.value:#x}): {diff} bytes differ from "
                      f"the cubin's; words that are device addresses: {pointers}; live head {live[:32].hex()}")
    fingerprints(lib, nodes, watch)
    watch.close()
    sys.stdout.flush()
    os._exit(0)


def fingerprints(lib, nodes, watch):
    """Which of the images holding a node's kernel its module was loaded from, told two
    ways without the load calls: (a) every kernel of the image is in the module
    (cuModuleGetFunction) with the attributes a fresh load of the image gives it; (b) the
    module's data objects hold the image's initial bytes.  Prints, per function, the
    images each way accepts: one image each way is what an export could rely on."""
    import hashlib
    from pgcc.cuda import read_device
    from pgcc.kernels import func_attrs
    lib.cuModuleLoadData.argtypes = [C.POINTER(C.c_void_p), C.c_char_p]
    lib.cuModuleGetFunction.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p]
    lib.cuModuleUnload.argtypes = [C.c_void_p]
    print("== fingerprints: per function, the images (a) its module's kernels and attributes and (b) its data "
          "objects' bytes agree with")
    cache = {}
    for n in nodes:
        sym = n["name"]
        mod = C.c_void_p()
        lib.cuFuncGetModule(C.byref(mod), C.c_void_p(n["func"]))
        by_kernels, by_data = [], []
        for img in [i for i in watch.images.values() if i[:4] == b"\x7fELF" and f".text.{sym}".encode() in i]:
            tag = hashlib.sha256(img).hexdigest()[:12]
            if tag not in cache:
                syms, secs = elf_symbols(img)
                names = [nm[len(".text."):] for nm, *_ in secs if nm.startswith(".text.")]
                fresh = C.c_void_p()
                attrs = {}
                if lib.cuModuleLoadData(C.byref(fresh), img) == 0:
                    for k in names:
                        f = C.c_void_p()
                        if lib.cuModuleGetFunction(C.byref(f), fresh, k.encode()) == 0:
                            attrs[k] = func_attrs(f)
                    lib.cuModuleUnload(fresh)
                objects = []
                for name, kind, shndx, value, size in syms:
                    if kind == 1 and 0 < shndx < len(secs) and size:
                        _, stype, off, _, _ = secs[shndx]
                        objects.append((name, bytes(size) if stype == 8 else img[off + value:off + value + size]))
                cache[tag] = (attrs, objects)
            attrs, objects = cache[tag]
            ok = bool(attrs)
            for k, a in attrs.items():
                f = C.c_void_p()
                if lib.cuModuleGetFunction(C.byref(f), mod, k.encode()) != 0 or func_attrs(f) != a:
                    ok = False
                    break
            if ok:
                by_kernels.append(tag)
            same = 0
            for name, init in objects:
                ptr, got = C.c_uint64(), C.c_size_t()
                if lib.cuModuleGetGlobal_v2(C.byref(ptr), C.byref(got), mod, name.encode()) != 0 or got.value != len(init):
                    same = -1
                    break
                same += read_device(ptr.value, len(init)) == init
            if objects and same == len(objects):
                by_data.append(tag)
        print(f"   function {n['func']:#x} (module {mod.value:#x}): (a) {by_kernels}; (b) {by_data}")


if __name__ == "__main__":
    main()

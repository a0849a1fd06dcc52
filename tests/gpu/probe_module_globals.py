"""Probe (issue 16, MobileNet): does a library kernel depend on module state its library
set after loading it?  The zoo's MobileNet fails at cuDNN's depthwise kernel
(conv2d_c1_k1_nhwc): run through the function cuDNN launched, the export reproduces
the capture; through the same kernel loaded from its fatbin, it does not.

    PYTHONPATH=python:. python3 tests/gpu/probe_module_globals.py [VARIANT] [SYMBOL-PART]   (default fp32 conv2d_c1_k1)

Captures the compiled MobileNetV3-small with pgcc's Capture, takes every kernel node
whose name holds SYMBOL-PART, and for each: the module cuDNN's function lives in
(cuFuncGetModule); the images the process loaded (pgcc.ModuleWatch, CUPTI: ELF) that
hold its code; the data objects (pgcc.fatbin.elf_data_objects) of the image its module
fits, each object's bytes in the function's module (cuModuleGetGlobal) against that
image's initial bytes.  (A first version compared with the first image holding the
kernel; the variants differ in their initial WINDOW_SIZE and CONV_STRIDE_SIZE, which
read as cuDNN writing module state.  Compared with its own image, no object differs on
MobileNet's runs so far -- H100, 2026-11-23: the exporter's module globals stayed empty.)
Prints what differs.  Then, per function, which of those images its module could have
been loaded from, as the exporter tells it (pgcc.module_watch.ModuleFingerprints), and the
driver and runtime calls the process made about modules, libraries and functions (how
cuDNN loads them).  A diagnostic, not a test: exit status 0 when it ran.
"""
import ctypes as C
import json
import os
import struct
import sys


def main():
    import torch

    from pgcc.capture import Capture
    from pgcc.cuda import read_device
    from pgcc.fatbin import elf_data_objects
    from tests.models import zoo_models

    variant = sys.argv[1] if len(sys.argv) > 1 else "fp32"
    part = sys.argv[2] if len(sys.argv) > 2 else "conv2d_c1_k1"
    import pgcc
    watch = pgcc.ModuleWatch(trace=True)  # (before anything runs: the images cuDNN loads, as ELF)
    fn, inputs, _ = zoo_models.INFERENCE["mobilenet"](variant)[:3]
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
        from pgcc.module_watch import ModuleFingerprints
        own = ModuleFingerprints().images_for(n["func"], [i for _, i in images])
        for image in own[:1]:  # (its own image: another's initial bytes differ by variant, WINDOW_SIZE among them)
            objects = elf_data_objects(image)
            print(f"   {len(objects)} data objects in the image its module fits (the module's __constant__ and __device__ "
                  "variables: a kernel reaches them through constant banks, with no relocation in its code)")
            differ = 0
            for name, sname, init in objects:
                ptr, got = C.c_uint64(), C.c_size_t()
                if lib.cuModuleGetGlobal_v2(C.byref(ptr), C.byref(got), mod, name.encode()) != 0:
                    print(f"   {name} ({sname}, {len(init)} B): not in the function's module")
                    continue
                live = read_device(ptr.value, min(got.value, 1 << 20))
                if live == init:
                    continue
                differ += 1
                words = [struct.unpack_from("<Q", live, i)[0] for i in range(0, len(live) - 7, 8)]
                base = C.c_uint64()
                pointers = sum(1 for w in words if w and lib.cuMemGetAddressRange_v2(C.byref(base), None,
                                                                                       C.c_uint64(w)) == 0)
                if differ <= 10:
                    print(f"   {name} ({sname}, {len(init)} B): {sum(a != b for a, b in zip(live, init))} bytes "
                          f"differ from the image's; words that are device addresses: {pointers}")
            print(f"   {differ} of {len(objects)} objects hold other bytes in the function's module than the image "
                  "starts them with")
    fingerprints(nodes, watch)
    calls = {k: v for k, v in (watch.calls or {}).items() if any(w in k for w in ("Module", "Library", "Kernel", "Func", "Fat", "Register", "Link"))}
    print("== API calls (driver and runtime, by name) about modules, libraries, kernels and functions: " + json.dumps(calls))
    watch.close()
    sys.stdout.flush()
    os._exit(0)


def fingerprints(nodes, watch):
    """Per function, the images holding its kernel that its module fits, as the exporter
    tells them (pgcc.module_watch.ModuleFingerprints: the module's kernels, their attributes,
    its data objects' names and sizes, then their bytes), and whether those agree on the
    kernel's code: what export.own_images relies on."""
    import hashlib
    from pgcc.fatbin import same_kernel_code
    from pgcc.module_watch import ModuleFingerprints
    prints = ModuleFingerprints()
    print("== fingerprints: per function, the images its module fits (best first), and whether they agree on the code")
    for n in nodes:
        sym = n["name"]
        held = [i for i in watch.images.values() if i[:4] == b"\x7fELF" and f".text.{sym}".encode() in i]
        fits = prints.images_for(n["func"], held)
        print(f"   function {n['func']:#x}: fits {[hashlib.sha256(i).hexdigest()[:12] for i in fits]} of {len(held)}; "
              f"one code: {bool(fits) and same_kernel_code(fits, sym)}")


if __name__ == "__main__":
    main()

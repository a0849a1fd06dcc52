"""Kernel code: where each captured kernel's code is, and proof that it is the code that
ran.  find_kernel_code() looks for each kernel's code -- Triton's cubins by the very
function handle the graph launches, then the caches; library kernels by name and
attributes in the loaded libraries' fatbins (kernel_search.py); the rest among the
module images the process loaded (module_watch.ModuleWatch) -- and writes the images
it takes under kernels/ (set_image).  own_images() takes a library kernel whose name
several loaded images hold with different code from the image its own module fits;
prove_code() runs the program node by node (diagnose.Harness) with the library code
found, and tries the other places holding a kernel's name where its launch is the
first to differ.  What neither the fatbins nor the watch hold is looked for among the
cubins libraries keep compressed in their own data (embedded.py: cuBLASLt's CUTLASS
GEMMs), matched by name and attributes the same way.

    problems = []
    find_kernel_code(torch, kernels, "out", "mlp", prog, watch, problems)
    kernels[func].module   # {"name", "kind": "cubin" | "fatbin" | "library" | ..., ...}

Assumes the driver and PyTorch with CUDA (passed in as `torch`).
"""
import hashlib
import os

from .diagnose import Harness, describe_node
from .embedded import embedded_cubins
from .fatbin import image_kind, same_kernel_code
from .graphfile import ident
from .kernel_search import (LibraryFunctions, cache_roots, driver_version, find_in_images, find_in_libraries,
                            library_candidates, loaded_libraries, same_kernel, triton_cubins, triton_images)
from .module_watch import ModuleFingerprints
from .search_cache import library_facts

__all__ = ["find_in_embedded", "find_kernel_code", "own_images", "prove_code", "set_image"]


def find_kernel_code(torch, kernels, out_dir, name, prog, watch, problems):
    """Where each kernel's code is (module, and entry or image, set on each model.Kernel),
    its images written under out_dir/kernels; a kernel whose code is found nowhere, or in
    several places with different code, adds a problem."""
    log = prog.log
    prog.status(f"{name}: finding the code of {len(kernels)} kernels")
    roots = cache_roots()
    library_wanted = {}
    launched = triton_images(roots, log)
    log(f"  {sum(1 for f in kernels if f in launched)} of {len(kernels)} kernels are Triton's, found by their "
        f"function handle among the {len(launched)} kernels Triton loaded")
    for func, k in kernels.items():
        image = launched.get(func)
        if image is None:  # not a kernel Triton launched in this process: the caches, if unambiguous
            found = {}
            for path in triton_cubins(k.symbol, roots):
                with open(path, "rb") as fh:
                    data = fh.read()
                if same_kernel(data, k.symbol, k.attrs):
                    found[hashlib.sha256(data).hexdigest()] = data
            if len(found) > 1:
                problems.append(f"kernel {k.symbol[:100]}: {len(found)} different cubins in the caches match "
                                "it (autotuned variants, or kernels of other graphs with its name)")
                continue
            image = next(iter(found.values()), None)
        if image is not None:
            digest = hashlib.sha256(image).hexdigest()
            mname = ident(k.symbol)[:48] + "_" + digest[:8]  # names cut short may collide
            rel_path = os.path.join("kernels", mname + ".cubin")
            with open(os.path.join(out_dir, rel_path), "wb") as f:
                f.write(image)
            k.module = {"name": mname, "kind": "cubin", "file": rel_path, "sha256": digest}
        else:
            library_wanted[k.symbol] = k.attrs
    if library_wanted:
        major, minor = torch.cuda.get_device_capability()
        found = find_in_libraries(library_wanted, log, sm=10 * major + minor, progress=prog.status)
        for func, k in kernels.items():
            if k.symbol in found:
                path, off = found[k.symbol]
                k.module = {"name": ident(os.path.basename(path).split(".so")[0]), "kind": "library",
                               "library": os.path.basename(path)}
                k.entry = off
        rest = {s: a for s, a in library_wanted.items() if s not in found}
        if watch:
            own_images(kernels, watch, log, out_dir)
        if rest and watch:
            prog.status(f"{name}: searching {len(watch.images)} module images for {len(rest)} kernels")
            images = find_in_images(rest, list(watch.images.values()), log, problems)
            for func, k in kernels.items():
                if k.symbol in images and k.image is None:
                    set_image(k, images[k.symbol], out_dir)
                    own = watch.images.get(watch.image_of(func) or "")
                    if k.symbol in find_in_images.alternatives and own and same_kernel(own, k.symbol,
                                                                                         k.attrs):
                        set_image(k, own, out_dir)  # the image this very function was taken from
                    elif k.symbol in find_in_images.alternatives:
                        # Not tried by running them: one such variant of cuDNN's attention
                        # kernel, run on another's arguments, stopped the GPU (an illegal
                        # instruction) and left the process's CUDA context unusable.
                        problems.append(f"kernel {k.symbol[:100]}: "
                                        f"{len(find_in_images.alternatives[k.symbol])} different module images "
                                        "the process loaded hold a kernel of this name and these attributes, with "
                                        "different code; which one ran cannot be told")
        still = {k.symbol: k.attrs for k in kernels.values() if k.module is None and k.symbol in rest}
        if still:
            prog.status(f"{name}: searching the libraries' compressed images for {len(still)} kernels")
            find_in_embedded(kernels, still, 10 * major + minor, log, problems, out_dir)
    for func, k in kernels.items():
        if k.module is None:
            problems.append(f"kernel {k.symbol[:100]}: its code is neither a Triton cubin in "
                            f"{roots or 'no cache directory'} nor in a loaded library's fatbins"
                            + (" (the module holding it was loaded before pgcc started watching: make a "
                               "pgcc.ModuleWatch() before the model first runs and pass it as watch=)"))


def find_in_embedded(kernels, wanted, sm, log, problems, out_dir):
    """Kernels of wanted ({symbol: attrs}) found in the cubins for this GPU (sm) that the
    loaded libraries keep compressed in their data sections: each written as an image of
    its own; a name held there by several cubins with different code is a problem."""
    images = []
    for path in loaded_libraries():
        facts = library_facts(path, sm, driver_version())  # (the frames' names, from an earlier search)
        images += [image for _, _, image in embedded_cubins(path, sm, wanted, index=facts.frames)]
        facts.save()
    found = find_in_images(wanted, images, log, problems)
    for k in kernels.values():
        if k.module is not None or k.symbol not in found:
            continue
        if k.symbol in find_in_images.alternatives:
            problems.append(f"kernel {k.symbol[:100]}: {len(find_in_images.alternatives[k.symbol])} compressed "
                            "images in the loaded libraries hold a kernel of this name and these attributes, "
                            "with different code; which one ran cannot be told")
            continue
        set_image(k, found[k.symbol], out_dir)


def set_image(k, image, out_dir, globals_=()):
    """Kernel k's code is a module image of its own, written under kernels/; globals_:
    [(name, bytes)] of its data objects to write after loading it (a module per image
    and set of values: ModuleFingerprints.globals_of)."""
    kind, digest = image_kind(image), hashlib.sha256(image).hexdigest()
    mname = "image_" + digest[:12]
    rel_path = os.path.join("kernels", f"{mname}.{kind}")
    with open(os.path.join(out_dir, rel_path), "wb") as f:
        f.write(image)
    k.module, k.image = {"name": mname, "kind": kind, "file": rel_path, "sha256": digest}, image
    if globals_:
        k.module["globals"] = list(globals_)
        k.module["name"] += "_" + hashlib.sha256(repr(list(globals_)).encode()).hexdigest()[:8]


def own_images(kernels, watch, log, out_dir):
    """Library kernels whose name the process loaded in several module images with
    different code (cuDNN's depthwise convolution: one name, variants in several of its
    fatbins, loaded lazily inside the CUDA runtime, where ModuleWatch.image_of sees no
    call): each function's code is taken from the image its own module fits
    (ModuleFingerprints), with the data objects its library wrote after loading it,
    where the images it fits agree on the kernel's code; where they do not, they are
    kept in k.fits, for prove_code to try first.  Kernels of Triton's, and names
    held by one image only (or by several with one code), are left as found."""
    prints, holders = ModuleFingerprints(), {}
    for func, k in kernels.items():
        if k.module is not None and k.module["kind"] != "library":
            continue
        sym = k.symbol
        if sym not in holders:
            held = [i for i in watch.images.values() if i[:4] == b"\x7fELF" and f".text.{sym}".encode() in i]
            holders[sym] = held if len(held) > 1 and not same_kernel_code(held, sym) else []
        if not holders[sym]:
            continue
        fits = prints.images_for(func, holders[sym])
        if len(fits) == 1 or fits and same_kernel_code(fits, sym):
            globals_ = prints.globals_of(func, fits[0])
            set_image(k, fits[0], out_dir, globals_)
            k.entry = None
            log(f"  kernel {sym[:60]} (function {func:#x}): {len(holders[sym])} loaded images hold it with "
                f"different code; its module fits {len(fits)}" + (", with one code" if len(fits) > 1 else "")
                + ": taken from there"
                + (f", with {len(globals_)} data objects as its library set them ("
                   + ", ".join(n for n, _ in globals_)[:120] + ")" if globals_ else ""))
        elif fits:
            k.fits = fits
            log(f"  kernel {sym[:60]} (function {func:#x}): its module fits {len(fits)} of the {len(holders[sym])} "
                "loaded images holding it, with different code: left to the node-by-node proof")
        else:
            log(f"  kernel {sym[:60]} (function {func:#x}): {len(holders[sym])} loaded images hold it with different "
                "code, and its module fits none of them: left as found")


def prove_code(torch, cap, bufs, nodes, edges, kernels, replayer, log, warn, out_dir, watch=None):
    """Library kernels are found by name and attributes, and a library may hold several
    kernels of one name with different code (cuDNN's depthwise convolution, one per data
    type); cuDNN compiles kernels at run time, one name for several variants, which
    ModuleWatch sees as several images.  The program is run node by node in this process,
    as captured and as exported with the code found (diagnose.Harness); where a library
    kernel's launch is the first to differ, the image its function was taken from (where
    the ModuleWatch saw it), the other module images this process loaded, and then every
    other fatbin holding a kernel of that name compiled for this GPU are tried, and the
    one with which the program runs further is kept.  A kernel nothing proves right is
    left as found, with a warning: verify.py has the last word."""
    judged = {f: k for f, k in kernels.items() if k.module["kind"] == "library" or k.image is not None}
    h = Harness(torch, cap, bufs, nodes, edges)
    try:
        _prove_code(torch, h, bufs, nodes, kernels, judged, replayer, log, warn, out_dir, watch)
    except RuntimeError as e:  # a fault or a refused launch: the node it stopped at (from host memory)
        if h.running is not None:
            n = h.by_index[h.running]
            c = h.captured[h.running]
            msg = str(e)  # ("node N (kernel: NAME), as exported: CUDA error ...": the side and the error)
            if msg.startswith(f"node {h.running} (") and "), " in msg:
                msg = msg.split("), ", 1)[1]
            log(f"  the run node by node stopped at node {h.running} ({msg[:160]})" + (
                f"; grid {c['grid']}, block {c['block']}" if "grid" in c else "") + "; its parameters:")
            for line in describe_node(n, c, bufs, cap.blocks()):
                log("    " + line)
        raise


def _prove_code(torch, h, bufs, nodes, kernels, judged, replayer, log, warn, out_dir, watch):
    cap = h.cap
    replayer.restore()
    first, _ = h.compare()
    if first:  # the arguments already differ: no run can judge the code (PGCC_DIAGNOSE tells more)
        warn("the library kernels' code was not proven: the exported program differs from the capture in this "
             "process already", first[1])
        for line in describe_node(h.by_index[first[0]], h.captured[first[0]], bufs, cap.blocks()):
            log("    " + line)
        return
    paths = {os.path.basename(p): p for p in loaded_libraries()}
    major, minor = torch.cuda.get_device_capability()
    loaded = LibraryFunctions()
    pos = {i: n for n, i in enumerate(h.seq)}

    prints = ModuleFingerprints()

    def load(k):
        if k.module["kind"] == "library":
            return loaded.load(paths[k.module["library"]], k.entry, k.symbol)
        return loaded.load_image(k.image, k.symbol, k.module.get("globals", ()))

    def candidates(func, k):
        """(how to load it, how to keep it) of each other place holding k's name: the
        images this process loaded first (the function's own first), then the fatbins
        (searched only if need be)."""
        if k.module["kind"] != "library":
            return
        images = list(watch.images.values()) if watch else []
        own = watch.images.get(watch.image_of(func) or "") if watch else None
        first = (k.fits or []) + ([own] if own else [])
        for img in first + [i for i in images if all(i is not f for f in first)]:
            if any(img is f for f in first) or same_kernel(img, k.symbol, k.attrs):
                g = prints.globals_of(func, img) if any(img is f for f in k.fits or ()) else ()
                yield (lambda img=img, g=g: loaded.load_image(img, k.symbol, g),
                       lambda img=img, g=g: (set_image(k, img, out_dir, g), setattr(k, "entry", None)))
        here, entry = paths[k.module["library"]], k.entry

        def keep(path, at):
            k.module = {"name": ident(os.path.basename(path).split(".so")[0]), "kind": "library",
                           "library": os.path.basename(path)}
            k.entry = at
        for p, a in library_candidates(k.symbol, k.attrs, 10 * major + minor,
                                       [here] + [p for p in paths.values() if p != here]):
            if (p, a) != (here, entry):
                yield (lambda p=p, a=a: loaded.load(p, a, k.symbol), lambda p=p, a=a: keep(p, a))

    try:
        chosen = {f: load(k) for f, k in judged.items()}

        def run():
            replayer.restore()
            return h.compare({n.index: chosen[n.func] for n in nodes if n.func in chosen})[0]

        first, tried = run(), set()
        while first:
            func = h.by_index[first[0]].func
            if func not in judged or func in tried:
                warn("a kernel's launch differs from the capture's with the code found for it", first[1])
                return
            tried.add(func)
            k = judged[func]
            was = f"{k.module.get('library', 'a module image')}" + (f" (fatbin at {k.entry})" if k.entry is not None
                                                                       else "")
            count = 0
            for load_it, keep in candidates(func, k):
                count += 1
                chosen[func] = load_it()
                again = run()
                if again is None or pos[again[0]] > pos[first[0]]:
                    keep()
                    log(f"  kernel {k.symbol[:80]}: the code found in {was} does not reproduce the capture; "
                        f"{k.module.get('library', 'another image')}"
                        + (f" (fatbin at {k.entry})" if k.entry is not None else "") + " does")
                    first = again
                    break
            else:
                warn(f"kernel {k.symbol[:80]}: neither the code found nor any of {count} other places "
                     "holding a kernel of that name reproduces the capture's launch", first[1])
                return
        log(f"  the code of {len(judged)} library kernels reproduces the capture, node by node"
            + (f" (less {len(h.unsteady)} nodes whose captured launch itself is not deterministic)" if h.unsteady
               else ""))
        for what in h.unsteady.values():
            log("    " + what)
    finally:
        loaded.close()

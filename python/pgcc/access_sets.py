"""Access sets: what a kernel does with the memory each of its pointer parameters points
into, read ("r"), written ("w") or both ("rw"), written on the .graph's `param` lines
(docs/graph-format.md, "Access sets") so that pgcc may rebuild a chain from its true
dependencies (compiler/widen.c).  Only where it is known for sure: a Triton kernel that
Inductor generated (named `triton_...`) names its arguments by what it does with them -- `in_ptr` is only
read, `out_ptr` written, `in_out_ptr` both -- and its `triton_meta` gives the signature
in order (name -> type; "constexpr" arguments are compiled in, not passed).  Every other
pointer (a library's kernel, a Triton template's `arg_A`, a kernel written by hand) gets
no annotation: read and written, as before.

    access_of({"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
              [(0, 8), (8, 8), (16, 4), (24, 8), (32, 8)])      # {0: "r", 8: "w"}
    signatures_in_source(open("output_code.py").read())         # {kernel name: (signature, constants)}
    triton_signatures()                                          # {CUfunction handle: (signature, constants)}

The signature's arguments map to the kernel's parameters (its layout, as the driver
gives it) in order, less the constexpr ones and those among the constants; Triton may
append up to two 8-byte parameters after them (its global and profile scratch pointers,
null unless the kernel asks for scratch), which get no annotation.  Any other mismatch
-- a count, a size, a type whose size is not known (a tensor descriptor) -- gives no
annotation for the kernel at all.

Pure but for triton_signatures, which walks the objects the garbage collector holds
(Inductor's kernel launchers, CachingAutotuner: triton_meta and the compiled kernels'
`function` handles); nothing here imports torch or triton.
"""
import ast
import gc
import re
from collections.abc import Mapping

__all__ = ["ACCESS", "access_of", "mark_access", "signatures_in_source", "triton_signatures"]

# an argument's name -> what the kernel does with the memory it points into
ACCESS = ((re.compile(r"in_out_ptr\d+"), "rw"), (re.compile(r"in_ptr\d+"), "r"), (re.compile(r"out_ptr\d+"), "w"))

# the bytes a scalar of each Triton type takes as a kernel parameter
SCALAR_BYTES = {"i1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "fp16": 2, "bf16": 2, "i32": 4, "u32": 4, "fp32": 4,
                "i64": 8, "u64": 8, "fp64": 8}
SCRATCH = 2  # trailing 8-byte parameters Triton may add: global_scratch, profile_scratch


def access_of(signature, layout, constants=()):
    """{parameter offset: "r" | "w" | "rw"} for a Triton kernel's pointer parameters whose
    argument names say it, given its signature ({name: type}, in order) and layout
    ([(offset, size)] of its parameters); {} where the two do not match exactly."""
    passed = [(n, t) for n, t in signature.items() if t != "constexpr" and n not in constants]
    extra = len(layout) - len(passed)
    if not 0 <= extra <= SCRATCH or any(size != 8 for _, size in layout[len(passed):]):
        return {}
    out = {}
    for (name, ty), (off, size) in zip(passed, layout):
        want = 8 if isinstance(ty, str) and ty.startswith("*") else SCALAR_BYTES.get(ty)
        if want is None or size != want:
            return {}
        if want == 8 and ty.startswith("*"):
            how = next((a for pat, a in ACCESS if pat.fullmatch(str(name))), None)
            if how:
                out[off] = how
    return out


def signatures_in_source(text):
    """{kernel name: (signature, constants)} of the Triton kernels in a module Inductor
    generated (its output code, or a kernel's own file in its cache): each kernel's
    decorator's `triton_meta={'signature': {...}, ..., 'constants': {...}}` and the name
    of the `def` after it.  A name found twice with different signatures is left out."""
    out, clash = {}, set()
    for m in re.finditer(r"triton_meta=\{'signature': (\{[^{}]*\})", text):
        d = re.compile(r"^def (\w+)\(", re.M).search(text, m.end())
        if d is None:
            continue
        try:
            sig = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        c = re.compile(r"'constants': (\{[^{}]*\})").search(text, m.end(), d.start())
        try:
            consts = tuple(ast.literal_eval(c.group(1))) if c else ()
        except (ValueError, SyntaxError):
            continue
        got = (sig, consts)
        if d.group(1) in out and out[d.group(1)] != got:
            clash.add(d.group(1))
        out[d.group(1)] = got
    return {k: v for k, v in out.items() if k not in clash}


def _handles(o, depth=0):
    """The CUfunction handles an Inductor launcher or compiled kernel object holds."""
    f = getattr(o, "function", None)
    if isinstance(f, int) and not isinstance(f, bool) and f:
        yield f
    if depth < 1:
        for name in ("bin", "kernel"):
            inner = getattr(o, name, None)
            if inner is not None:
                yield from _handles(inner, depth + 1)


def triton_signatures():
    """{CUfunction handle: (signature, constants)} for every Triton kernel Inductor has
    loaded in this process: its kernel objects (CachingAutotuner: triton_meta, and the
    launchers and compile results holding the compiled kernels' handles).  Signatures
    keyed by argument position (older Inductor) are named from the JITFunction's
    arg_names.  A handle found with two different signatures is left out."""
    out, clash = {}, set()
    for o in gc.get_objects():
        try:
            d = getattr(o, "__dict__", None)
            if not isinstance(d, dict) or not isinstance(d.get("triton_meta"), Mapping):
                continue
            meta = d["triton_meta"]
            sig = meta.get("signature")
            if not isinstance(sig, Mapping):
                continue
            if sig and all(isinstance(k, int) for k in sig):
                names = getattr(d.get("fn"), "arg_names", None)
                if not names:
                    continue
                sig = {names[i]: t for i, t in sorted(sig.items())}
            consts = tuple(meta.get("constants") or ())
            got = (dict(sig), consts)
            for holder in list(d.get("launchers") or ()) + list(d.get("compile_results") or ()):
                for f in _handles(holder):
                    if f in out and out[f] != got:
                        clash.add(f)
                    out[f] = got
        except Exception:  # whatever gc holds: some objects do not like being asked
            continue
    return {f: v for f, v in out.items() if f not in clash}


def mark_access(kernels, signatures, log=None):
    """Sets each model.Kernel's access ({parameter offset: access}) in kernels ({function
    handle: Kernel}) whose handle signatures ({handle: (signature, constants)}) knows and
    whose name is one Inductor gives the kernels it generates (`triton_poi_...`,
    `triton_red_...`: a user's own Triton kernel, launched through Inductor too, keeps its
    own name and its argument names say nothing for sure); returns how many kernels got
    some."""
    marked = 0
    for func, k in kernels.items():
        if func in signatures and k.symbol.startswith("triton_"):
            sig, consts = signatures[func]
            k.access = access_of(sig, k.layout, consts)
            marked += bool(k.access)
            if not k.access and log:
                log(f"  kernel {k.symbol[:80]}: its Triton signature does not match its parameters: no access sets")
    if log:
        log(f"  access sets for {marked} of {len(kernels)} kernels (Inductor's Triton kernels' argument names)")
    return marked

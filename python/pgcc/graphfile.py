"""Writing the .graph text (docs/graph-format.md) from what the export found: modules,
kernels with their parameter layouts, buffers with roles, dtypes and shapes, and the
graph's nodes and edges.

Pure: plain data in (the kernels, buffers and nodes -- model.Node -- of model.py, as node_mapping.py and
relocate.py build them), text out.  Assumes every kernel has its "module" and every pointer
argument a buffer; a parameter that is a pointer in one launch and a constant in
another is an ExportError.
"""
import re
from dataclasses import replace

from .call_args import decode
from .errors import ExportError
from .model import PtrWord, Relocation

__all__ = ["access_text", "consistent_words", "ctype_of", "dontcare", "graph_text", "launch_relocations", "ident", "literal", "map_places", "node_buffers", "node_refs", "ref",
           "relocations", "remap", "text", "value_of", "write_graph"]


def ident(s):
    """s as a C identifier (and a .graph name)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    return s if re.match(r"[A-Za-z_]", s) else "_" + s


def ref(b, off):
    return b.name + (f"+{off}" if off else "")


def ctype_of(size):
    return {1: "u8", 2: "u16", 4: "u32", 8: "u64"}.get(size, "bytes")


def value_of(raw):
    if len(raw) in (1, 2, 4, 8):
        return str(int.from_bytes(raw, "little"))
    return "[" + f'"{raw.hex()}"' + "]"


def literal(raw, dtype):
    """A constant argument's bytes as a literal of a scalar parameter's type (a parameter
    that takes a value read back in other launches, hostvalues.py)."""
    v = decode(raw, dtype)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ExportError(f"a constant {v} for a parameter of type {dtype}, which .graph cannot write")
        text = repr(v)
        return text if any(c in text for c in ".e") else text + ".0"
    return str(int(v))


def measured(n):
    """A node's measured GPU time as the .graph writes it (` gpu_us T`), or nothing."""
    return f" gpu_us {n.gpu_us:g}" if n.gpu_us else ""


def text(s):
    """s as a .graph string's contents: printable ASCII, no quotes or backslashes."""
    return "".join(c if " " <= c <= "~" and c not in "\\\"" else "'" if c == '"' else "?" for c in s)


def map_places(n, f):
    """Node n (a copy) with every place it refers to, (buffer, offset), replaced by f(buffer,
    offset, bytes), called in the order node_refs gives them: bytes the extent a memset or
    copy covers from there (0 for a kernel's pointer, whose reach the export does not
    know, and for a collective's).  A conditional node's bodies are walked too."""
    n = replace(n)
    if n.kind == "kernel":
        args = []
        for a in n.args:
            if a[0] == "ptr":
                a = ("ptr", *f(a[1], a[2], 0))
            elif a[0] == "bytes":
                a = ("bytes", a[1], [Relocation(r[0], *f(r[1], r[2], 0), r[3]) for r in a[2]])
            args.append(a)
        n.args = args
    elif n.kind == "memset":
        n.dst = f(n.dst[0], n.dst[1], n.width * (n.elem or 1))
    elif n.kind in ("memcpy", "read"):
        n.src = f(n.src[0], n.src[1], n.width)
        n.dst = f(n.dst[0], n.dst[1], n.width)
    elif n.kind == "libcall":  # (an NCCL collective: collectives.py)
        n.send = f(n.send[0], n.send[1], 0)
        n.recv = f(n.recv[0], n.recv[1], 0)
    elif n.kind in ("if", "while", "switch"):  # (a conditional node: its bodies' nodes)
        n.bodies = [(name, [map_places(m, f) for m in body], edges) for name, body, edges in n.bodies]
    return n


def node_refs(n):
    """The places a node refers to: (buffer, offset, bytes), as map_places walks them."""
    out = []

    def see(b, off, width):
        out.append((b, off, width))
        return b, off
    map_places(n, see)
    return out


def node_buffers(n):
    """The buffers a node refers to."""
    for b, _, _ in node_refs(n):
        yield b


def remap(n, fmap):
    """Node n (a copy) with its buffers mapped by fmap (id of a buffer -> buffer); those
    fmap does not name stay."""
    return map_places(n, lambda b, off, width: (fmap.get(id(b), b), off))


def relocations(k, off):
    """The relocations of kernel k's parameter at off: sorted (offset inside it, kind)."""
    return sorted((at, kind) for o, at, kind in k.ptr_words if o == off)


def consistent_words(k):
    """Makes kernel k's relocations (its ptr_words, the union over its launches) one layout
    that pgcc accepts, in place: where one launch has a whole address at byte w of a
    parameter and another only its low half there or its high half at w + 4 (cuDNN's
    kernels carry a truncated copy of an address; seen on an H200: `328, hi32 332`), the
    word is a low half at w and a high half at w + 4 for every launch -- the same 8
    little-endian bytes of one address (launch_relocations splits each launch's whole
    address to match).  Relocations that still overlap are an ExportError naming the
    kernel: a .graph pgcc would refuse is never written."""
    words = {PtrWord(*w) for w in k.ptr_words}
    for w in sorted(words):
        if w.kind == "abs64" and ((w.param, w.at, "lo32") in words or (w.param, w.at + 4, "hi32") in words):
            words.discard(w)
            words |= {PtrWord(w.param, w.at, "lo32"), PtrWord(w.param, w.at + 4, "hi32")}
    spans = sorted((w.param, w.at, w.at + (8 if w.kind == "abs64" else 4), w.kind) for w in words)
    for (p, a, end, kind), (q, b, _, kind2) in zip(spans, spans[1:]):
        if p == q and b < end:
            raise ExportError(f"kernel {k.symbol[:120]}: parameter at {p}: its launches carry a {kind} address at "
                              f"byte {a} and a {kind2} one at byte {b}, which overlap: no one layout of the "
                              "parameter holds both (not exported)")
    k.ptr_words = words
    return words


def launch_relocations(k, off, relocs):
    """One launch's relocations of kernel k's parameter at off, in the kernel's layout
    (consistent_words): a whole address where the kernel has a low half there becomes its
    low and high halves."""
    out = []
    for r in relocs:
        at, b, o, kind = r
        if kind == "abs64" and (off, at, "abs64") not in k.ptr_words and (off, at, "lo32") in k.ptr_words:
            out += [Relocation(at, b, o, "lo32"), Relocation(at + 4, b, o, "hi32")]
        else:
            out.append(r)
    return out


def access_text(k, off, inner):
    """Kernel k's parameter at off's ` access ...` (or ""): its access (k.access[off]), or one
    per pointer inside it (k.access[(off, at)], "rw" where one has none)."""
    if off in k.access:
        return f" access {k.access[off]}"
    each = [k.access.get((off, at)) for at, _kind in inner]
    if not any(each):
        return ""
    if len(set(each)) == 1:
        return f" access {each[0]}"
    return " access [" + ", ".join(a or "rw" for a in each) + "]"


def dontcare(k, off, inner):
    """The don't-care byte ranges of kernel k's parameter at off, (offset inside it, length),
    merged, less the bytes of its relocations (a word that is an address in one launch
    is patched there, and written as given elsewhere)."""
    reloc = {at + i for at, kind in inner for i in range(8 if kind == "abs64" else 4)}
    bytes_ = sorted({at + i for o, at, n in k.dontcare if o == off for i in range(n)} - reloc)
    out = []
    for b in bytes_:
        if out and out[-1][0] + out[-1][1] == b:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((b, 1))
    return out


def graph_text(name, kernels, bufs, used, nodes, edges, arch, origin="a capture", scalars=(), conditions=(),
               dims=(), comms=(), edge_kinds=None):
    """The .graph file's text.  kernels: {func: model.Kernel} (its symbol, layout,
    ptr_words, dontcare, module -- with "globals" [(name, bytes)] to write after loading
    it, if any -- entry, scalar_types; each gets its name and valued here); bufs: Buffers (or anything with .list); used:
    ids of the buffers nodes refer to; arch: "sm_90"; origin: words for the header comment;
    scalars: values read back that kernels take ({"name", "type", "from"}: hostvalues.py)
    or that the host computes from them ({"name", "type", "callback": True}),
    whose parameters are typed as the scalar in scalar_types {param offset: type} of
    their kernel.  nodes: [model.Node].  A host read is a "read" node (a copy into a host
    buffer) and a "sync" node, with its guard (the bytes read at export) where the value
    only chose the path; conditions: [{"name"}] of conditional nodes ("if" or "while" nodes
    with a condition and bodies [(graph name, nodes, edges)], branches.py), whose handles kernels take as
    ("cond", condition) arguments; dims: [{"name", "values", "pad"}] of shape buckets
    (shape_buckets.py): a buffer's shape may name one, a scalar {"name", "type", "bucket": dim}
    is the index of the bucket a call runs, and a "switch" node with its bucket picks
    the body of that index; comms: [{"name", "ranks"}] of NCCL communicators, which
    "libcall" nodes (collectives.py) name.  edge_kinds: {(a, b): "programmatic" or
    "launch_order"} of root edges that are not full dependencies (programmatic dependent
    launch, as captured: format version 3); one whose ends are not both kernel nodes is
    written as a full one."""
    for k in kernels.values():
        consistent_words(k)
    # version 2 only where a relocation is not a whole address at an 8-byte-aligned place
    v2 = any(kind != "abs64" or at % 8 for k in kernels.values() for _, at, kind in k.ptr_words)
    def all_nodes(ns):
        for n in ns:
            yield n
            for _, body, _ in n.bodies or ():
                yield from all_nodes(body)
    v2 = v2 or any(k.dontcare or k.module.get("globals") for k in kernels.values()) \
        or any(n.cluster for n in all_nodes(nodes))
    # A parameter that is one whole address in some launches of a kernel and a constant
    # (not null) in another -- cuBLASLt's split-K reduction, seen in an AdamW training
    # step -- is declared as an 8-byte struct with one relocation: that launch's bytes
    # stay as it has them, its relocation `null`.
    for n in all_nodes(nodes):
        if n.kind == "kernel":
            k = kernels[n.func]
            for (off, size), a in zip(k.layout, n.args):
                if size == 8 and a[0] == "value" and any(a[1]) and relocations(k, off) == [(0, "abs64")]:
                    k.valued.add(off)
    is_kernel = {n.index for n in nodes if n.kind == "kernel"}
    kinds = {e: k for e, k in (edge_kinds or {}).items() if e[0] in is_kernel and e[1] in is_kernel}
    version = 3 if kinds else 2 if v2 else 1
    out = [f"# {name}: exported by pgcc-export from {origin}", f"pgcc {version};", f"arch {arch};", ""]
    mods = {}
    for k in kernels.values():
        m = k.module
        if m["name"] in mods:
            continue
        mods[m["name"]] = m
        if m["kind"] == "library":
            out.append(f'module {m["name"]} library library "{m["library"]}";')
        else:
            line = f'module {m["name"]} {m["kind"]} file "{m["file"]}" sha256 "{m["sha256"]}"'
            if m.get("globals"):  # data objects its library wrote after loading it
                line += " globals [" + ", ".join(f'"{n}" "{b.hex()}"' for n, b in m["globals"]) + "]"
            out.append(line + ";")
    out += ["", f'weights w file "{name}.safetensors";', ""]
    for d in dims:
        out.append(f'dim {d["name"]} values [{", ".join(map(str, d["values"]))}] {"pad" if d["pad"] else "exact"};')
    out += [f'comm {c["name"]} ranks {c["ranks"]};' for c in comms]
    if dims or comms:
        out.append("")
    names = set()
    for i, k in enumerate(kernels.values()):
        kn = ident(k.symbol) if len(k.symbol) <= 60 else f"k{i}"
        while kn in names:
            kn += "_"
        names.add(kn)
        k.name = kn
        head = f'kernel {kn} symbol "{k.symbol}" module {k.module["name"]}'
        if k.entry is not None:
            head += f' entry {k.entry}'
        out.append(head + " {")
        for off, size in k.layout:
            inner = relocations(k, off)
            care = dontcare(k, off, inner)
            acc = access_text(k, off, inner)  # (access_sets.py, access_probe.py)
            if off in k.scalar_types:
                out.append(f"  param {off} {size} {k.scalar_types[off]};")
            elif size == 8 and inner == [(0, "abs64")] and not care and off not in k.valued:
                out.append(f"  param {off} 8 ptr{acc};")
            elif inner or care:
                line = f"  param {off} {size} bytes"
                if inner:
                    line += " ptrs [" + ", ".join(str(at) if kind == "abs64" else f"{kind} {at}"
                                                  for at, kind in inner) + "]"
                if care:
                    line += " dontcare [" + ", ".join(f"{a}:{n}" for a, n in care) + "]"
                out.append(line + (acc if inner else "") + ";")
            else:
                out.append(f"  param {off} {size} {ctype_of(size)};")
        out.append("}")
    out.append("")
    for b in bufs.list:
        if id(b) not in used and b.role not in ("input", "output"):
            continue
        line = f'buffer {b.name} size {b.size} align 256 role {b.role}'
        if b.dtype:
            line += f' dtype {b.dtype}'
        if b.shape is not None:  # ([] for a 0-dimensional tensor, a loss)
            line += f' shape [{", ".join(map(str, b.shape))}]'
        if b.role == "weight":
            line += f' weights w tensor "{b.tensor}"'
        if b.role == "host":  # (pinned host memory libpgrt allocates: no alignment to ask)
            line = line.replace(" align 256", "")
        if b.role == "rng":  # (the random-number state, libpgrt's)
            line = line.replace(" align 256", "") + f" increment {b.increment}"
        out.append(line + ";")
    if scalars:
        out.append("")
    out += [f'scalar {s["name"]} type {s["type"]} callback;' if s.get("callback") else
            f'scalar {s["name"]} type {s["type"]} bucket {s["bucket"]};' if s.get("bucket") else
            f'scalar {s["name"]} type {s["type"]} from {s["from"]};' for s in scalars]
    out += [f'condition {c["name"]} default 0;' for c in conditions]
    out += ["", "graph main {"]
    renamed = {}  # a guarded sync's successors wait for its guard

    def graph(nodes, edges, kinds=None):
        for n in nodes:
            node(n)
        kept = {n.index for n in nodes}
        out.extend(f"  {renamed.get(a, f'n{a}')} -> n{b}{' ' + kinds[a, b] if (a, b) in (kinds or {}) else ''};"
                   for a, b in edges if a in kept and b in kept)
        out.append("}")

    def node(n):
        i = n.index
        if n.kind == "kernel":
            k = kernels[n.func]
            args = []
            for (off, size), a in zip(k.layout, n.args):
                inner = relocations(k, off)
                care = dontcare(k, off, inner)
                if size == 8 and inner == [(0, "abs64")] and not care and off not in k.valued:
                    # a pointer parameter
                    if a[0] == "ptr":
                        args.append(ref(a[1], a[2]))
                    elif not any(a[1]):
                        args.append("null")
                    else:
                        raise ExportError(f"node {i}: parameter {off} is a pointer in other launches of "
                                          f"{k.symbol[:80]}, a constant 0x{a[1].hex()} here")
                elif inner or care or off in k.valued:  # a struct with relocations or don't-care bytes
                    if a[0] == "value":  # (a constant where other launches have an address)
                        a = ("bytes", a[1], [])
                    if a[0] == "ptr":  # a whole address here; a struct with more in other launches
                        a = ("bytes", bytes(size), [Relocation(0, a[1], a[2], "abs64")])
                    # A relocation no pointer of this launch fills (the place is an address in
                    # other launches of the kernel) is `null`: its bytes stay as the launch has
                    # them, a constant the captures agreed on -- zeros, or a stale word in a
                    # slot the launch leaves unused (multi_tensor_apply's address table, seen
                    # in GradScaler's unscale: only the first slots are this launch's tensors)
                    mine = launch_relocations(k, off, a[2] if a[0] == "bytes" else [])
                    got = {r[0]: ref(r[1], r[2]) for r in mine}
                    # The launch's own bytes, don't-care ones too: the ranges are the kernel's,
                    # proven for the launches whose bytes there changed (those the exporter
                    # already wrote as zeros); another launch may hold a value there that it reads.
                    ptrs = [got.get(at, "null") for at, _ in inner]
                    args.append("[" + ", ".join([f'"{bytes(a[1]).hex()}"'] + ptrs) + "]")
                elif a[0] in ("scalar", "cond"):
                    args.append(a[-1]["name"])
                elif off in k.scalar_types:
                    args.append(literal(a[1], k.scalar_types[off]))
                else:
                    args.append(value_of(a[1]))
            g, bl, cl = n.grid, n.block, n.cluster
            extra = f' cluster [{cl[0]}, {cl[1]}, {cl[2]}]' if cl else ""
            extra += f' priority {n.priority}' if n.priority else ""
            out.append(f'  node n{i} kernel {k.name} grid [{g[0]}, {g[1]}, {g[2]}] block [{bl[0]}, {bl[1]}, {bl[2]}] '
                       f'smem {n.smem}{extra} args [{", ".join(args)}]{measured(n)};')
        elif n.kind == "libcall":
            op = f' op {n.op}' if n.op else ""
            out.append(f'  node n{i} libcall fn "{n.fn}" comm {n.comm["name"]} send {ref(*n.send)} '
                       f'recv {ref(*n.recv)} count {n.count} dtype {n.dtype}{op};')
        elif n.kind == "memset":
            out.append(f'  node n{i} memset dst {ref(*n.dst)} value {n.value} elem {n.elem} width {n.width}'
                       f'{measured(n)};')
        elif n.kind == "memcpy":
            out.append(f'  node n{i} memcpy dir dtod src {ref(*n.src)} dst {ref(*n.dst)} width {n.width}'
                       f'{measured(n)};')
        elif n.kind == "read":
            out.append(f'  node n{i} memcpy dir dtoh src {ref(*n.src)} dst {ref(*n.dst)} width {n.width};')
        elif n.kind in ("if", "while", "switch"):
            bucket = f' bucket {n.bucket}' if n.bucket else ""
            out.append(f'  node n{i} conditional type {n.kind} condition {n.condition["name"]}{bucket} bodies '
                       f'[{", ".join(g for g, _, _ in n.bodies)}];')
        elif n.kind == "sync":
            out.append(f'  node n{i} hostop op sync reason "{text(n.where)}: a value read back to the host";')
            if n.guard is not None:
                out.append(f'  node n{i}g hostop op guard buffer r{n.read} expect "{n.guard.hex()}" '
                           f'reason "the value read at {text(n.where)} chose what ran next";')
                out.append(f"  n{i} -> n{i}g;")
                renamed[i] = f"n{i}g"
        else:
            out.append(f"  node n{i} empty;")
    graph(nodes, edges, kinds)
    for n in nodes:  # the bodies of conditional nodes, after the graph that uses them
        for gname, body, body_edges in n.bodies or ():
            out += ["", f"graph {gname} {{"]
            graph(body, body_edges)
    return "\n".join(out) + "\n"


def write_graph(path, *args, **kw):
    """graph_text, written to path."""
    text = graph_text(*args, **kw)
    with open(path, "w") as f:
        f.write(text)

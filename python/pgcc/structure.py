"""The structure of a call's inputs and outputs (pytrees) as plain JSON, loadable without
pickle: what export() records (NAME.export.json's "structure") so that pgcc.load(out)
takes the inputs and returns the outputs as the callable did -- a tensor, a tuple, a
list, a dict, a namedtuple or a mapping class (transformers' ModelOutput, an
OrderedDict whose None fields are left out), None and Python numbers, nested.

    leaves, spec = flatten({"a": x, "b": (y, None, 2)})   # [x, y], ["dict", [...]]
    unflatten(spec, [x2, y2])                             # {"a": x2, "b": (y2, None, 2)}

A spec is ["leaf"] (the next of the leaves: a tensor), ["none"], ["const", number] (an
output that is a Python number: returned as it was), ["tuple" | "list", [spec...]],
["dict", [[key, spec]...]], ["class", "module.QualName", "mapping" | "namedtuple",
[[key, spec]...]] (rebuilt by importing the class and calling it with the keys) or
["object", "module.QualName", [[attribute, spec]...]]: a transformers cache (a class of
transformers.cache_utils or one derived from it: DynamicCache, its layers,
EncoderDecoderCache), flattened as its attributes -- the layers' keys and values
tensors leaves, the rest kept as values: ["value", JSON value], ["type",
"module.QualName"], ["dtype", "float32"], ["device", "cuda:0"], ["pairs", [[key, spec]...]]
(a dict with keys other than str), ["list"]/["tuple"] of them -- and rebuilt as the same
class with the same attributes (cls.__new__, no __init__: its constructor's arguments
differ between transformers' versions).  A cache with an attribute of any other kind,
or holding a cache or layer with one (an offloading cache's stream, a factory
function), is given in transformers' legacy format instead, as its to_legacy_cache()
gives it: a tuple of one tuple per layer of its tensors (keys, values; an
EncoderDecoderCache's self-attention keys and values, then cross-attention's).
builder(spec) reads a spec once into a function of the leaves (a loaded program's
call rebuilds its outputs with it).  leaf_paths(spec) names each leaf as Python reaches it
(output['past_key_values'].layers[0].keys).  flat_as_called(structure) tells a
structure a flat call gives already.  A run-side module (loader.py imports it); pure:
no torch (is_leaf is given; torch is imported only to rebuild a cache's dtype or
device).
"""
import dataclasses
import importlib
from collections.abc import Mapping

from .errors import ExportError

__all__ = ["builder", "class_path", "flat_as_called", "flatten", "import_class", "is_cache", "leaf_paths", "unflatten"]

NUMBERS = (bool, int, float)
CACHE_MODULE = "transformers.cache_utils"  # (where transformers defines its caches and their layers)


def is_cache(x):
    """Whether x is a transformers cache or cache layer: an object of a class of
    transformers.cache_utils, or of a class derived from one (found by module name:
    transformers is not imported)."""
    return not isinstance(x, type) and any(getattr(c, "__module__", None) == CACHE_MODULE
                                           for c in type(x).__mro__)


def class_path(cls):
    """`module.QualName` of a class that can be imported again, else None (a class made
    inside a function)."""
    path = f"{cls.__module__}.{cls.__qualname__}"
    try:
        return path if import_class(path) is cls else None
    except (ImportError, AttributeError, ValueError):
        return None


def import_class(path):
    """The class at `module.QualName` (the longest importable module prefix)."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(f"no module for {path}")


def flatten(obj, is_leaf, numbers="const", where="output", caches=True):
    """(leaves, spec) of obj: leaves the objects is_leaf(x) is true of, in order (and,
    with numbers="leaf", Python numbers too: an input's scalars); spec as the module
    says.  Anything else is an ExportError naming where it is (where: "output",
    "output['logits'][0]", ...); so is a transformers cache where caches is False (the
    inputs: the callable would update a copy, not the caller's cache)."""
    leaves = []

    def walk(x, at):
        if is_leaf(x) or (numbers == "leaf" and isinstance(x, NUMBERS)):
            leaves.append(x)
            return ["leaf"]
        if x is None:
            return ["none"]
        if isinstance(x, NUMBERS):
            return ["const", x]
        if isinstance(x, Mapping):
            items = list(x.items())
            bad = [k for k, _ in items if not isinstance(k, (str, int)) or isinstance(k, bool)]
            if bad:
                raise ExportError(f"{at} is a {type(x).__name__} with a key {bad[0]!r}: only str and int keys are "
                                  "exported")
            kids = [[k, walk(v, f"{at}[{k!r}]")] for k, v in items]
            path = None if type(x) is dict else class_path(type(x))
            if path and all(isinstance(k, str) for k, _ in items):
                return ["class", path, "mapping", kids]
            return ["dict", kids]
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):  # a namedtuple
            kids = [[k, walk(v, f"{at}.{k}")] for k, v in zip(type(x)._fields, x)]
            path = class_path(type(x))
            return ["class", path, "namedtuple", kids] if path else ["tuple", [s for _, s in kids]]
        if isinstance(x, (tuple, list)):
            return ["tuple" if isinstance(x, tuple) else "list", [walk(v, f"{at}[{i}]") for i, v in enumerate(x)]]
        if is_cache(x) and not caches:
            raise ExportError(f"{at} is a {type(x).__module__}.{type(x).__qualname__}: a transformers cache is "
                              "exported among the outputs, not the inputs (the program would update a copy of it); "
                              "pass its layers' tensors, or let the callable make the cache")
        if is_cache(x):
            n = len(leaves)
            try:
                return record(x, at)
            except ExportError:
                if not hasattr(type(x), "__iter__"):  # (a layer alone)
                    raise
                del leaves[n:]  # (the legacy format instead: a tuple of each layer's tensors)
                return walk(tuple(tuple(layer) for layer in x), at)
        raise ExportError(f"{at} is a {type(x).__module__}.{type(x).__qualname__}: an export takes and returns "
                          "tensors, Python numbers, None, and tuples, lists, dicts and ModelOutput-like mappings of "
                          "them")

    def record(x, at):
        """The spec of a cache or layer as an object; ExportError where it cannot be."""
        path, attrs = class_path(type(x)), getattr(x, "__dict__", None)
        if path is None or attrs is None:
            raise ExportError(f"{at} is a {type(x).__qualname__} that cannot be imported again by its name, or has "
                              "no attributes of its own (__slots__)")
        return ["object", path, [[k, attribute(v, f"{at}.{k}")] for k, v in attrs.items()]]

    def attribute(v, at):
        """The spec of a cache's attribute: a tensor, a cache or layer (an attribute it
        cannot record fails the cache that holds it), or a plain value."""
        if is_cache(v):
            return record(v, at)
        if is_leaf(v):
            return walk(v, at)
        if v is None or isinstance(v, (str,) + NUMBERS):
            return ["value", v]
        if isinstance(v, type):
            path = class_path(v)
            if path:
                return ["type", path]
        kind = f"{type(v).__module__}.{type(v).__qualname__}"
        if kind in ("torch.dtype", "torch.device"):
            return [kind[6:], str(v).replace("torch.", "") if kind == "torch.dtype" else str(v)]
        if isinstance(v, (list, tuple)):
            return ["tuple" if isinstance(v, tuple) else "list", [attribute(e, f"{at}[{i}]") for i, e in enumerate(v)]]
        if type(v) is dict and all(isinstance(k, (str,) + NUMBERS) for k in v):  # (EncoderDecoderCache's is_updated)
            return ["pairs", [[k, attribute(e, f"{at}[{k!r}]")] for k, e in v.items()]]
        raise ExportError(f"{at} is a {kind}: a transformers cache is exported as its tensors and plain attributes "
                          "(numbers, strings, dtypes, devices, classes, lists and dicts of them), not this")
    spec = walk(obj, where)
    return leaves, spec


def leaf_paths(spec, root="output"):
    """The name of each leaf of spec, in order, as Python reaches it from root
    (output['logits'], output[1][0], output['past_key_values'].layers[0].keys)."""
    out = []

    def walk(s, at):
        kind = s[0]
        if kind == "leaf":
            out.append(at)
        elif kind in ("tuple", "list"):
            for i, k in enumerate(s[1]):
                walk(k, f"{at}[{i}]")
        elif kind in ("dict", "pairs"):
            for k, v in s[1]:
                walk(v, f"{at}[{k!r}]")
        elif kind == "class":
            for k, v in s[3]:
                walk(v, f"{at}.{k}" if s[2] == "namedtuple" else f"{at}[{k!r}]")
        elif kind == "object":
            for k, v in s[2]:
                walk(v, f"{at}.{k}")
    walk(spec, root)
    return out


def unflatten(spec, leaves):
    """The object spec describes, its leaves taken in order from leaves (a sequence);
    ExportError where their count is not the spec's."""
    return builder(spec)(leaves)


def builder(spec):
    """A function of the leaves (a sequence) giving the object spec describes, as
    unflatten does: the spec read and its classes imported once, so that a loaded
    program's call spends microseconds rebuilding its outputs (transformers' ModelOutput
    constructor alone took 40 of a Llama call's 146 µs of host time).  A spec of
    containers, numbers and leaves only is one expression over the leaves (_source),
    compiled once; others are built part by part.  A mapping class that is a dataclass
    over a dict (ModelOutput) is filled in directly -- its fields set, those not None as
    items in field order, what its __post_init__ does -- once the first call has shown,
    against the constructor, that the two give the same."""
    if _plain(spec):
        env = {}
        expr, n = _source(spec, env, 0)
        make = eval(f"lambda o: {expr}", env)  # (names of its own and o[i] only: every value is in env)

        def plain(leaves):
            if len(leaves) != n:
                raise ExportError("the program gave more values than the structure recorded holds" if len(leaves) > n
                                  else "the structure recorded holds more values than the program gave")
            return make(leaves)
        return plain
    build = _part(spec)

    def run(leaves):
        it = iter(leaves)
        out = build(it)
        if next(it, it) is not it:
            raise ExportError("the program gave more values than the structure recorded holds")
        return out
    return run


CONTAINERS = ("tuple", "list", "dict", "pairs")


def _plain(s, depth=0):
    """Whether spec s holds containers, numbers, None and leaves only, nested at most 32 deep."""
    if s[0] in ("leaf", "none", "const", "value"):
        return True
    if s[0] not in CONTAINERS or depth > 32:
        return False
    return all(_plain(k if s[0] in ("tuple", "list") else k[1], depth + 1) for k in s[1])


def _source(s, env, at):
    """(a Python expression building plain spec s from leaves o[at], o[at + 1], ...; the
    index after the last leaf it takes): each number and key a name bound in env."""
    kind = s[0]
    if kind == "leaf":
        return f"o[{at}]", at + 1
    if kind in ("none", "const", "value"):
        name = f"c{len(env)}"
        env[name] = None if kind == "none" else s[1]
        return name, at
    parts = []
    for k in s[1]:
        if kind in ("tuple", "list"):
            e, at = _source(k, env, at)
        else:
            name = f"c{len(env)}"
            env[name] = k[0]
            e, at = _source(k[1], env, at)
            e = f"{name}: {e}"
        parts.append(e)
    body = ", ".join(parts)
    if kind == "tuple":
        return (f"({body},)" if parts else "()"), at
    return (f"[{body}]" if kind == "list" else "{" + body + "}"), at


def _load(path, what):
    try:
        return import_class(path)
    except (ImportError, AttributeError) as e:
        raise ExportError(f"the outputs' {what} {path} cannot be imported here: {e}") from e


def _leaf(it):
    try:
        return next(it)
    except StopIteration:
        raise ExportError("the structure recorded holds more values than the program gave") from None


def _part(s):
    """The builder of one spec node: a function of the leaves' iterator."""
    kind = s[0]
    if kind == "leaf":
        return _leaf
    if kind in ("none", "const", "value"):
        v = None if kind == "none" else s[1]
        return lambda it: v
    if kind in ("tuple", "list"):
        kids = [_part(k) for k in s[1]]
        if kind == "tuple":
            return lambda it: tuple([k(it) for k in kids])
        return lambda it: [k(it) for k in kids]
    if kind in ("dict", "pairs"):
        kids = [(k, _part(v)) for k, v in s[1]]
        return lambda it: {k: b(it) for k, b in kids}
    if kind == "class":
        cls = _load(s[1], "class")
        names = [k for k, _ in s[3]]
        kids = [_part(v) for _, v in s[3]]
        if s[2] != "mapping":
            return lambda it: cls(*[b(it) for b in kids])
        return _mapping(cls, names, kids)
    if kind == "object":  # (a transformers cache: its attributes set as they were, no __init__)
        cls = _load(s[1], "cache")
        kids = [(k, _part(v)) for k, v in s[2]]

        def obj(it):
            o = cls.__new__(cls)
            o.__dict__.update((k, b(it)) for k, b in kids)
            return o
        return obj
    if kind == "type":
        t = _load(s[1], "class")
        return lambda it: t
    if kind in ("dtype", "device"):
        import torch
        v = getattr(torch, s[1]) if kind == "dtype" else torch.device(s[1])
        return lambda it: v
    raise ExportError(f"an unknown structure {kind!r} in the export's record")


def _mapping(cls, names, kids):
    """The builder of a mapping class called with keyword arguments; for a dataclass
    over a dict, filled in directly once shown the same as its constructor (builder)."""
    def values(it):
        return {k: b(it) for k, b in zip(names, kids)}
    base = next((c for c in cls.__mro__ if c is dict or (c.__module__, c.__name__) == ("collections", "OrderedDict")),
                None)
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else None
    if fields is None or base is None or not set(names) <= set(fields):
        return lambda it: cls(**values(it))
    defaults = {}
    for f, field in fields.items():
        if field.default is not dataclasses.MISSING:
            defaults[f] = field.default
        elif f not in names:
            return lambda it: cls(**values(it))  # (a field with no default the record does not give)
    order = list(fields)  # (dataclasses.fields: the instance fields, in order; no ClassVar)
    setitem, set_attribute = base.__setitem__, object.__setattr__

    def filled(vals):
        vals = dict(defaults, **vals)
        o = cls.__new__(cls)
        for f in order:
            set_attribute(o, f, vals[f])
        for f in order:
            if vals[f] is not None:
                setitem(o, f, vals[f])
        return o
    state = {"filled": None}  # None: not yet compared with the constructor

    def run(it):
        vals = values(it)
        if state["filled"] is None:
            made = cls(**vals)
            mine = filled(vals)
            state["filled"] = same_mapping(made, mine)
            return made
        return filled(vals) if state["filled"] else cls(**vals)
    return run


def same_mapping(a, b):
    """Whether two mapping objects are alike: one class, the same items and attributes
    (the same objects, in the same order)."""
    return (type(a) is type(b) and list(a.keys()) == list(b.keys()) and all(a[k] is b[k] for k in a.keys())
            and list(vars(a)) == list(vars(b)) and all(vars(a)[k] is vars(b)[k] for k in vars(a)))


def flat_as_called(structure):
    """Whether a recorded structure is what a flat call takes and gives already: tensors
    and numbers as arguments, one tensor or a tuple of two or more returned (then calls
    skip flattening: a program's host time is microseconds)."""
    ins, outs = structure.get("inputs"), structure.get("outputs")
    flat_in = ins is not None and ins[0] == "tuple" and all(s == ["leaf"] for s in ins[1])
    flat_out = outs == ["leaf"] or (outs is not None and outs[0] == "tuple" and len(outs[1]) >= 2
                                    and all(s == ["leaf"] for s in outs[1]))
    return flat_in and flat_out

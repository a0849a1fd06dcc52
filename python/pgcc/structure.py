"""The structure of a call's inputs and outputs (pytrees) as plain JSON, loadable without
pickle: what export() records (NAME.export.json's "structure") so that pgcc.load(out)
takes the inputs and returns the outputs as the callable did -- a tensor, a tuple, a
list, a dict, a namedtuple or a mapping class (transformers' ModelOutput, an
OrderedDict whose None fields are left out), None and Python numbers, nested.

    leaves, spec = flatten({"a": x, "b": (y, None, 2)})   # [x, y], ["dict", [...]]
    unflatten(spec, [x2, y2])                             # {"a": x2, "b": (y2, None, 2)}

A spec is ["leaf"] (the next of the leaves: a tensor), ["none"], ["const", number] (an
output that is a Python number: returned as it was), ["tuple" | "list", [spec...]],
["dict", [[key, spec]...]] or ["class", "module.QualName", "mapping" | "namedtuple",
[[key, spec]...]] (rebuilt by importing the class and calling it with the keys).  A
run-side module (loader.py imports it); pure: no torch (is_leaf is given).
"""
import importlib
from collections.abc import Mapping

from .errors import ExportError

__all__ = ["class_path", "flatten", "import_class", "unflatten"]

NUMBERS = (bool, int, float)


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


def flatten(obj, is_leaf, numbers="const", where="output"):
    """(leaves, spec) of obj: leaves the objects is_leaf(x) is true of, in order (and,
    with numbers="leaf", Python numbers too: an input's scalars); spec as the module
    says.  Anything else is an ExportError naming where it is (where: "output",
    "output['logits'][0]", ...)."""
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
        raise ExportError(f"{at} is a {type(x).__module__}.{type(x).__qualname__}: an export takes and returns "
                          "tensors, Python numbers, None, and tuples, lists, dicts and ModelOutput-like mappings of "
                          "them")
    spec = walk(obj, where)
    return leaves, spec


def unflatten(spec, leaves):
    """The object spec describes, its leaves taken in order from leaves (a sequence);
    ExportError where their count is not the spec's."""
    it = iter(leaves)

    def build(s):
        kind = s[0]
        if kind == "leaf":
            try:
                return next(it)
            except StopIteration:
                raise ExportError("the structure recorded holds more values than the program gave") from None
        if kind == "none":
            return None
        if kind == "const":
            return s[1]
        if kind in ("tuple", "list"):
            kids = [build(k) for k in s[1]]
            return tuple(kids) if kind == "tuple" else kids
        if kind == "dict":
            return {k: build(v) for k, v in s[1]}
        if kind == "class":
            try:
                cls = import_class(s[1])
            except (ImportError, AttributeError) as e:
                raise ExportError(f"the outputs' class {s[1]} cannot be imported here: {e}") from e
            kids = [(k, build(v)) for k, v in s[3]]
            return cls(**dict(kids)) if s[2] == "mapping" else cls(*[v for _, v in kids])
        raise ExportError(f"an unknown structure {kind!r} in the export's record")
    out = build(spec)
    if next(it, it) is not it:
        raise ExportError("the program gave more values than the structure recorded holds")
    return out


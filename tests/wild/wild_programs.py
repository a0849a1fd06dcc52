"""The wild suite's registry: which programs there are and where each is built, read
without importing torch or the family modules (the runner's parent process and its
CPU tests list the keys; only a child imports its program's module).

Each family module (FAMILIES) ends with `PROGRAMS = {"family:name": build, ...}`, a
dict literal whose values are the names of functions in the module; build() returns
(model_or_callable, example_inputs_tuple).  keys() reads those literals with ast;
builder(key) imports the one module that holds the key.
"""
import ast
import importlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# family modules, in the order the table lists them
FAMILIES = ("wild_vision", "wild_hf", "wild_pyg", "wild_cudagraph", "wild_rnn")


def registered(module, here=HERE):
    """[(key, function name)] of a family module's PROGRAMS literal, in source order;
    ValueError (file:line) where PROGRAMS is missing or not a literal of string keys to
    names."""
    path = os.path.join(here, module + ".py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROGRAMS" for t in node.targets):
            if not isinstance(node.value, ast.Dict):
                raise ValueError(f"{path}:{node.lineno}: PROGRAMS is not a dict literal")
            out = []
            for k, v in zip(node.value.keys, node.value.values):
                if not (isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name)):
                    raise ValueError(f"{path}:{getattr(k, 'lineno', node.lineno)}: a PROGRAMS entry is not "
                                     "\"family:name\": function")
                out.append((k.value, v.id))
            return out
    raise ValueError(f"{path}:1: no PROGRAMS dict")


def functions(module, here=HERE):
    """The names of the top-level functions a family module defines (read with ast)."""
    path = os.path.join(here, module + ".py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def table():
    """{key: family module} over every family, in order."""
    out = {}
    for m in FAMILIES:
        for key, _ in registered(m):
            if key in out:
                raise ValueError(f"{os.path.join(HERE, m + '.py')}: key {key!r} also in {out[key]}.py")
            out[key] = m
    return out


def keys():
    return list(table())


def builder(key):
    """The build function of `key` (imports its family module, and with it torch)."""
    module = table().get(key)
    if module is None:
        raise KeyError(f"no wild program {key!r}")
    return importlib.import_module("tests.wild." + module).PROGRAMS[key]

"""structure.py and example_inputs.py: a call's inputs and outputs as pytrees (a
ModelOutput-like OrderedDict subclass, dicts, namedtuples, nested tuples and lists, None,
Python numbers) flattened to their tensors and a JSON spec, rebuilt from the spec alone
(after a JSON round trip: no pickle); the example inputs checked before anything runs,
with stand-ins for torch's tensors."""
import dataclasses
import json
from collections import OrderedDict, namedtuple

import pytest

from pgcc.errors import ArgumentError, ExportError
from pgcc.call_args import contiguous_strides
from pgcc.example_inputs import FlatCall, as_exported, check_inputs, flat_inputs, overlapping
from pgcc.structure import builder, class_path, flatten, unflatten


class T:
    """A stand-in tensor: layout, device, shape, strides, as torch's has them."""

    def __init__(self, name, device="cuda:0", shape=(2, 3), layout="strided", stride=None, sparse=False):
        self.name, self.layout, self.is_sparse, self.shape = name, layout, sparse, tuple(shape)
        self.device = Device(device)
        self._stride = stride or tuple(3 if i == 0 else 1 for i in range(len(shape)))
        self.dtype, self.requires_grad = "torch.float32", False

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._stride

    def storage_offset(self):
        return 0

    def to(self, device):  # (a copy on another device, as torch's)
        return T(self.name + "@" + str(device), device=str(device), shape=self.shape)

    def contiguous(self):
        return T(self.name + "+c", device=str(self.device), shape=self.shape,
                 stride=tuple(contiguous_strides(self.shape)))

    def untyped_storage(self):  # (its own storage: no stand-in is a view of another)
        return type("S", (), {"data_ptr": lambda s, a=id(self): a})()

    def __repr__(self):
        return f"T({self.name})"


class Device:
    def __init__(self, s):
        self.s, self.type = s, s.split(":")[0]

    def __eq__(self, other):
        return self.s == other.s

    def __str__(self):
        return self.s


class FakeTorch:
    Tensor = T
    strided = "strided"


class Output(OrderedDict):
    """Like transformers' ModelOutput: an OrderedDict subclass built from keywords, whose
    None fields are not among its items."""

    def __init__(self, **kw):
        super().__init__((k, v) for k, v in kw.items() if v is not None)


Pair = namedtuple("Pair", "first second")


def is_t(x):
    return isinstance(x, T)


def test_a_model_output_round_trips_through_json():
    a, b, c = T("a"), T("b"), T("c")
    out = Output(last_hidden_state=a, pooler_output=None, hidden_states=(b, c))
    leaves, spec = flatten(out, is_t)
    assert leaves == [a, b, c]
    spec = json.loads(json.dumps(spec))
    assert spec == ["class", f"{__name__}.Output", "mapping",
                    [["last_hidden_state", ["leaf"]], ["hidden_states", ["tuple", [["leaf"], ["leaf"]]]]]]
    x, y, z = T("x"), T("y"), T("z")
    back = unflatten(spec, [x, y, z])
    assert type(back) is Output and list(back.items()) == [("last_hidden_state", x), ("hidden_states", (y, z))]


def test_dicts_lists_namedtuples_none_and_numbers():
    a, b = T("a"), T("b")
    out = {"loss": a, "parts": [Pair(b, None), 3, 0.5, True], "n": None}
    leaves, spec = flatten(out, is_t)
    assert leaves == [a, b]
    back = unflatten(json.loads(json.dumps(spec)), ["A", "B"])
    assert back == {"loss": "A", "parts": [Pair("B", None), 3, 0.5, True], "n": None}
    assert type(back["parts"][0]) is Pair and type(back["parts"][3]) is bool


def test_a_bare_tensor_and_a_class_that_cannot_be_imported():
    a = T("a")
    assert flatten(a, is_t) == ([a], ["leaf"])

    class Local(OrderedDict):  # (made inside a function: its import path leads nowhere)
        pass
    assert class_path(Local) is None
    assert flatten(Local(x=a), is_t)[1] == ["dict", [["x", ["leaf"]]]]


def test_what_is_not_a_pytree_is_refused_where_it_is():
    with pytest.raises(ExportError, match=r"output\['a'\]\[1\] is a builtins\.str"):
        flatten({"a": (T("a"), "text")}, is_t)
    with pytest.raises(ExportError, match="more values"):
        unflatten(["tuple", [["leaf"]]], [1, 2])
    with pytest.raises(ExportError, match="holds more"):
        unflatten(["tuple", [["leaf"], ["leaf"]]], [1])


def test_inputs_are_checked_before_anything_runs():
    torch = FakeTorch
    check_inputs(torch, [T("a"), T("s", device="cpu", shape=())])  # (a 0-d CPU tensor: as_exported moves it)
    with pytest.raises(ExportError, match=r"example input 1 is on meta, shape \[\]"):
        check_inputs(torch, [T("a"), T("s", device="meta", shape=())])
    with pytest.raises(ExportError, match=r"example input 0 is on cpu, shape \[2, 3\]"):
        check_inputs(torch, [T("a", device="cpu")])
    with pytest.raises(ExportError, match=r"example input 0 is a sparse_coo tensor"):
        check_inputs(torch, [T("a", layout="sparse_coo", sparse=True)])
    with pytest.raises(ExportError, match=r"example input 1 is on cuda:1, example input 0 on cuda:0"):
        check_inputs(torch, [T("a"), T("b", device="cuda:1")])
    with pytest.raises(ExportError, match=r"example input 1 is a str"):
        check_inputs(torch, [T("a"), "text"])
    check_inputs(torch, [T("a"), 3, 0.5, T("b", shape=(0, 3))])


def test_nested_inputs_are_flattened_and_the_callable_gets_them_rebuilt():
    torch = FakeTorch
    a, m, b = T("a"), T("m"), T("b")
    leaves, spec = flat_inputs(torch, (a, {"mask": m, "extra": [b, 2]}))
    assert leaves == [a, m, b, 2]
    seen = []

    def fn(x, d):
        seen.append((x, d))
        return Output(logits=x, attentions=None, hidden=(d["mask"], 1.5))
    run = FlatCall(torch, fn, spec)
    assert run(*leaves) == (a, m)
    assert seen == [(a, {"mask": m, "extra": [b, 2]})]
    st = run.structure(leaves)
    assert st["outputs"] == ["class", f"{__name__}.Output", "mapping",
                             [["logits", ["leaf"]], ["hidden", ["tuple", [["leaf"], ["const", 1.5]]]]]]
    assert st["input_layouts"] == [{"shape": [2, 3], "stride": [3, 1], "offset": 0}] * 3 + [None]
    assert st["output_layouts"] == [{"shape": [2, 3], "stride": [3, 1], "offset": 0}] * 2
    assert st["input_paths"] == ["args[0]", "args[1]['mask']", "args[1]['extra'][0]", "args[1]['extra'][1]"]
    assert st["output_paths"] == ["output['logits']", "output['hidden'][0]"]
    assert unflatten(st["outputs"], ["L", "H"]) == Output(logits="L", hidden=("H", 1.5))
    assert flat_inputs(torch, a) == ([a], ["tuple", [["leaf"]]])  # (one tensor: one argument)


def test_outputs_must_keep_their_structure_and_be_dense_cuda_tensors():
    torch = FakeTorch
    calls = iter([(T("a"), 1), (T("a"), 2)])
    run = FlatCall(torch, lambda: next(calls), ["tuple", []])
    run()
    with pytest.raises(ExportError, match="changed its structure between calls"):
        run()
    with pytest.raises(ExportError, match=r"output tensor 0 is a sparse_csr tensor"):
        FlatCall(torch, lambda: {"x": T("s", layout="sparse_csr")}, ["tuple", []])()
    with pytest.raises(ExportError, match=r"output tensor 1 is on cpu"):
        FlatCall(torch, lambda: [T("a"), T("c", device="cpu")], ["tuple", []])()


def test_export_refuses_a_cpu_tensor_before_anything_runs_or_is_written(tmp_path, monkeypatch):
    """pgcc.export with a stand-in torch: the inputs are checked first -- nothing is
    called, no directory is made -- and the refusal is an ExportError that says what to
    pass instead."""
    import sys
    import types
    import pgcc
    fake = types.ModuleType("torch")
    fake.Tensor, fake.strided = T, "strided"
    fake.nn = types.SimpleNamespace(Module=type("Module", (), {}))
    monkeypatch.setitem(sys.modules, "torch", fake)
    called = []
    out = tmp_path / "out"
    with pytest.raises(ExportError, match=r"example input 1 is on cpu, shape \[3\]: .*\(x\.cuda\(\)\)"):
        pgcc.export(lambda *xs: called.append(xs), (T("x"), T("s", device="cpu", shape=(3,))), out)
    assert called == [] and not out.exists()


def test_a_loaded_program_takes_and_returns_the_recorded_structure():
    """Program.__call__ with a structure (pgcc.load's default): the arguments flattened as
    recorded, the flat call's outputs rebuilt -- a ModelOutput-like class imported again,
    a constant output given back as the number it was."""
    from pgcc.loader import Program
    p = Program.__new__(Program)
    p.torch, p.name = FakeTorch, "m"
    args_spec = flatten((T("x"), {"mask": T("m")}), is_t, numbers="leaf")[1]
    out_spec = flatten(Output(logits=T("a"), hidden=None, n=3), is_t)[1]
    p.use_structure(json.loads(json.dumps({"inputs": args_spec, "outputs": out_spec})))
    seen = []

    def flat_call(inputs, out=None):
        seen.append(list(inputs))
        return T("y")  # (one output: the flat call gives the tensor itself)
    p._call = flat_call
    x, m = T("x2"), T("m2")
    got = p(x, {"mask": m})
    assert seen == [[x, m]]
    assert type(got) is Output and list(got) == ["logits", "n"] and got["n"] == 3 and got["logits"].name == "y"
    with pytest.raises(TypeError, match="takes arguments structured as"):
        p(x, m)
    with pytest.raises(ArgumentError, match=r"m: the arguments\[1\] is a builtins\.str"):
        p(x, "mask")


def test_flat_arguments_go_straight_to_the_flat_call():
    """Arguments recorded as a flat tuple of tensors and numbers are passed as they are
    (no flattening per call); anything else still gets the structured check's error."""
    from pgcc.loader import Program
    p = Program.__new__(Program)
    p.torch, p.name = FakeTorch, "m"
    args_spec = flatten((T("x"), 2.0), is_t, numbers="leaf")[1]
    out_spec = flatten({"a": T("a"), "b": [T("b")]}, is_t)[1]
    p.use_structure(json.loads(json.dumps({"inputs": args_spec, "outputs": out_spec})))
    seen = []

    def flat_call(inputs, out=None):
        seen.append(inputs)
        return T("y"), T("z")
    p._call = flat_call
    x = T("x2")
    got = p(x, 3)
    assert seen == [(x, 3)] and got["a"].name == "y" and got["b"][0].name == "z"
    with pytest.raises(ArgumentError, match="takes arguments structured as"):
        p(x, (3,))  # (a tuple where a number was recorded)
    with pytest.raises(ArgumentError, match="takes arguments structured as"):
        p(x)
    assert len(seen) == 1


def test_overlapping_layouts():
    assert overlapping((16, 64), (0, 1))  # (a row expanded: the cg:expanded_input program)
    assert overlapping((4, 3), (1, 1)) and overlapping((2, 2, 2), (4, 2, 3))
    assert not overlapping((16, 64), (64, 1)) and not overlapping((64, 16), (1, 64))  # (contiguous, transposed)
    assert not overlapping((1, 3, 4, 4), (48, 1, 12, 3))  # (channels_last)
    assert not overlapping((4, 10), (20, 1))  # (rows sliced out of a wider buffer)
    assert not overlapping((1, 64), (0, 1)) and not overlapping((0, 5), (0, 0)) and not overlapping((), ())


def test_inputs_as_exported_a_0d_cpu_tensor_moved_an_expanded_one_copied():
    """A 0-d CPU tensor (a temperature) becomes a CUDA tensor on the other inputs'
    device; an expanded input a contiguous copy; the rest, numbers too, stay."""
    torch = FakeTorch
    x, t = T("x", device="cuda:1", shape=(4, 64), stride=(64, 1)), T("t", device="cpu", shape=())
    e = T("bias", device="cuda:1", shape=(16, 64), stride=(0, 1))
    w = T("w", device="cuda:1", shape=(64, 4), stride=(1, 64))
    got = as_exported(torch, [x, t, 0.5, e, w])
    assert got[0] is x and got[2] == 0.5 and got[4] is w
    assert (got[1].name, str(got[1].device), got[1].shape) == ("t@cuda:1", "cuda:1", ())
    assert (got[3].name, got[3].stride()) == ("bias+c", (64, 1))
    assert as_exported(torch, [t])[0].name == "t@cuda"  # (no CUDA input: the current device)
    leaves, spec = flat_inputs(torch, (x, {"temperature": t}))
    assert [v.name for v in leaves] == ["x", "t@cuda:1"] and spec == ["tuple", [["leaf"], ["dict", [
        ["temperature", ["leaf"]]]]]]


@dataclasses.dataclass
class DataOutput(OrderedDict):
    """Like transformers' ModelOutput to the letter: a dataclass over an OrderedDict whose
    __post_init__ makes its fields that are not None its items, and whose item and
    attribute writes go to both.  made: how many times its constructor ran."""
    logits: object = None
    past_key_values: object = None
    hidden_states: object = None
    made = 0

    def __post_init__(self):
        type(self).made += 1
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)


@dataclasses.dataclass
class OddOutput(DataOutput):
    """One whose constructor does more than fill its fields: an extra item."""

    def __post_init__(self):
        super().__post_init__()
        self["extra"] = 1


def test_a_dataclass_mapping_is_filled_in_once_shown_the_same_as_its_constructor():
    spec = json.loads(json.dumps(flatten(DataOutput(logits=T("l"), past_key_values=(T("k"), T("v"))), is_t)[1]))
    build = builder(spec)
    DataOutput.made = 0
    leaves = [[T(f"l{i}"), T(f"k{i}"), T(f"v{i}")] for i in range(3)]
    got = [build(ls) for ls in leaves]
    assert DataOutput.made == 1  # (the first call, compared with the filled-in one; then no constructor)
    for (l, k, v), o in zip(leaves, got):
        assert type(o) is DataOutput and list(o.keys()) == ["logits", "past_key_values"]
        assert o.logits is l and o["logits"] is l and o.past_key_values == (k, v) and o["past_key_values"] == (k, v)
        assert o.hidden_states is None and "hidden_states" not in o


def test_a_mapping_whose_constructor_differs_keeps_its_constructor():
    build = builder(["class", f"{__name__}.OddOutput", "mapping", [["logits", ["leaf"]]]])
    got = [build([T(str(i))]) for i in range(3)]
    assert all(list(o.keys()) == ["logits", "extra"] for o in got)


def test_a_builder_counts_its_leaves():
    build = builder(["tuple", [["leaf"], ["none"], ["list", [["leaf"]]]]])
    assert build("ab") == ("a", None, ["b"])
    with pytest.raises(ExportError, match="more values than the program gave"):
        build("a")
    with pytest.raises(ExportError, match="the program gave more values"):
        build("abc")


@pytest.mark.parametrize("spec", [
    ["leaf"],
    ["tuple", []],
    ["tuple", [["leaf"]]],
    ["dict", [["hidden", ["leaf"]], ["stats", ["dict", [["mean", ["leaf"]], ["n", ["const", 3]]]]],
              ["parts", ["tuple", [["leaf"], ["list", [["leaf"], ["none"], ["leaf"]]]]]]]],
    ["pairs", [[0, ["leaf"]], [2.5, ["list", []]], ["k", ["value", "text"]]]],
    ["list", [["tuple", [["leaf"], ["list", [["tuple", [["leaf"]]]]]]]]],
])
def test_a_plain_spec_is_built_as_part_by_part_and_as_unflatten(spec):
    from pgcc.structure import _part, _plain
    assert _plain(spec)
    leaves = [T(f"t{i}") for i in range(8)]
    n = json.dumps(spec).count('"leaf"')
    want = unflatten(spec, leaves[:n])
    got = builder(spec)(leaves[:n])
    it = iter(leaves[:n])
    assert got == want == _part(spec)(it) and type(got) is type(want)
    with pytest.raises(ExportError):
        builder(spec)(leaves[:n + 1])


def test_a_spec_too_deep_or_with_a_class_is_built_part_by_part():
    from pgcc.structure import _plain
    deep = ["leaf"]
    for _ in range(40):
        deep = ["tuple", [deep]]
    assert not _plain(deep) and not _plain(["tuple", [["type", "builtins.int"]]])
    x = T("x")
    got = builder(deep)([x])
    for _ in range(40):
        got, = got
    assert got is x

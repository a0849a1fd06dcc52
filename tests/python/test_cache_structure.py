"""structure.py on transformers' caches, with stand-ins for transformers.cache_utils and
torch: a DynamicCache (its layers' keys and values tensors) and an EncoderDecoderCache
inside a ModelOutput-like output flatten to their tensors and a JSON spec, and are
rebuilt from the spec alone as the same classes with the same attributes (dtype,
device, a class, a dict with int keys); a cache with an attribute of another kind is
given in transformers' legacy format (a tuple of each layer's tensors); leaf_paths
names each tensor as Python reaches it."""
import json
import sys
import types
from collections import OrderedDict

import pytest

from pgcc.errors import ExportError
from pgcc.structure import flatten, is_cache, leaf_paths, unflatten


class T:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"T({self.name})"


def is_t(x):
    return isinstance(x, T)


class dtype:  # (torch.dtype, by module and name)
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class device:
    def __init__(self, s):
        self.s = s

    def __str__(self):
        return self.s

    def __eq__(self, other):
        return isinstance(other, device) and other.s == self.s


@pytest.fixture
def cache_utils(monkeypatch):
    """A stand-in transformers.cache_utils (and torch, for dtype and device)."""
    mod = types.ModuleType("transformers.cache_utils")
    pkg = types.ModuleType("transformers")
    pkg.cache_utils = mod
    torch = types.ModuleType("torch")
    dtype.__module__ = device.__module__ = "torch"
    torch.float16, torch.device = dtype("float16"), device
    for m in (pkg, mod, torch):
        monkeypatch.setitem(sys.modules, m.__name__, m)
    src = '''
class Cache:
    def __init__(self, *a, **k):
        raise AssertionError("rebuilt without __init__")

    def __iter__(self):  # (transformers' legacy format: (keys, values) per layer)
        for layer in self.layers:
            yield layer.keys, layer.values

class DynamicLayer:
    def __init__(self, k, v, dtype, device):
        self.keys, self.values, self.is_initialized, self.dtype, self.device = k, v, True, dtype, device

class DynamicSlidingWindowLayer(DynamicLayer):
    pass

class DynamicCache(Cache):
    def __init__(self, layers):
        self.layers, self.layer_class_to_replicate, self.offloading = layers, DynamicLayer, False

class EncoderDecoderCache(Cache):
    def __init__(self, a, b):
        self.self_attention_cache, self.cross_attention_cache, self.is_updated = a, b, {0: True, 1: False}

    def __iter__(self):
        for a, b in zip(self.self_attention_cache.layers, self.cross_attention_cache.layers):
            yield a.keys, a.values, b.keys, b.values
'''
    exec(compile(src, "cache_utils", "exec"), mod.__dict__)
    for name in ("Cache", "DynamicLayer", "DynamicSlidingWindowLayer", "DynamicCache", "EncoderDecoderCache"):
        getattr(mod, name).__module__ = mod.__name__
    return mod


class Output(OrderedDict):
    def __init__(self, **kw):
        super().__init__((k, v) for k, v in kw.items() if v is not None)


def make_dynamic(cu, names):
    """A DynamicCache as a model makes it (its __init__ is not what a test calls)."""
    c = cu.DynamicCache.__new__(cu.DynamicCache)
    c.layers = [cu.DynamicLayer(T(k), T(v), dtype("float16"), device("cuda:0")) for k, v in names]
    c.layer_class_to_replicate, c.offloading = cu.DynamicLayer, False
    return c


def test_a_dynamic_cache_in_a_model_output_round_trips(cache_utils):
    cu = cache_utils
    logits = T("logits")
    out = Output(logits=logits, past_key_values=make_dynamic(cu, [("k0", "v0"), ("k1", "v1")]))
    assert is_cache(out["past_key_values"]) and not is_cache(cu.DynamicCache) and not is_cache(logits)
    leaves, spec = flatten(out, is_t)
    assert [t.name for t in leaves] == ["logits", "k0", "v0", "k1", "v1"]
    spec = json.loads(json.dumps(spec))
    assert leaf_paths(spec) == ["output['logits']", "output['past_key_values'].layers[0].keys",
                                "output['past_key_values'].layers[0].values",
                                "output['past_key_values'].layers[1].keys",
                                "output['past_key_values'].layers[1].values"]
    back = unflatten(spec, [T("L"), T("a"), T("b"), T("c"), T("d")])
    cache = back["past_key_values"]
    assert type(back) is Output and type(cache) is cu.DynamicCache
    assert cache.layer_class_to_replicate is cu.DynamicLayer and cache.offloading is False
    assert [type(x) for x in cache.layers] == [cu.DynamicLayer] * 2
    assert [(x.keys.name, x.values.name) for x in cache.layers] == [("a", "b"), ("c", "d")]
    layer = cache.layers[1]
    assert layer.is_initialized is True and str(layer.dtype) == "torch.float16" and layer.device == device("cuda:0")


def test_an_encoder_decoder_cache_round_trips_with_its_int_keyed_dict(cache_utils):
    cu = cache_utils
    a, b = make_dynamic(cu, [("sk", "sv")]), make_dynamic(cu, [("ck", "cv")])
    b.layers = [cu.DynamicSlidingWindowLayer(T("ck"), T("cv"), dtype("float16"), device("cuda:0"))]
    b.layers[0].sliding_window = 4
    enc = cu.EncoderDecoderCache.__new__(cu.EncoderDecoderCache)
    enc.self_attention_cache, enc.cross_attention_cache, enc.is_updated = a, b, {0: True, 1: False}
    leaves, spec = flatten((T("x"), enc), is_t)
    assert [t.name for t in leaves] == ["x", "sk", "sv", "ck", "cv"]
    back = unflatten(json.loads(json.dumps(spec)), [T(n) for n in "xabcd"])
    got = back[1]
    assert type(got) is cu.EncoderDecoderCache and got.is_updated == {0: True, 1: False}
    layer = got.cross_attention_cache.layers[0]
    assert type(layer) is cu.DynamicSlidingWindowLayer and layer.sliding_window == 4 and layer.keys.name == "c"
    assert leaf_paths(spec, "out")[3] == "out[1].cross_attention_cache.layers[0].keys"


def test_a_cache_with_an_attribute_of_another_kind_is_given_in_the_legacy_format(cache_utils):
    """An offloading cache's stream cannot be recorded: the cache is given as
    to_legacy_cache() gives it, a tuple of (keys, values) per layer; an EncoderDecoderCache
    holding it, as its four tensors per layer; a layer alone is refused by name."""
    cu = cache_utils
    c = make_dynamic(cu, [("k0", "v0"), ("k1", "v1")])
    c.offloading, c.prefetch_stream = True, object()
    leaves, spec = flatten({"pkv": c, "x": T("x")}, is_t)
    assert [t.name for t in leaves] == ["k0", "v0", "k1", "v1", "x"]
    assert spec == ["dict", [["pkv", ["tuple", [["tuple", [["leaf"], ["leaf"]]]] * 2]], ["x", ["leaf"]]]]
    enc = cu.EncoderDecoderCache.__new__(cu.EncoderDecoderCache)
    enc.self_attention_cache, enc.cross_attention_cache, enc.is_updated = make_dynamic(cu, [("sk", "sv")]), c, {}
    leaves, spec = flatten(enc, is_t)
    assert [t.name for t in leaves] == ["sk", "sv", "k0", "v0"]
    assert unflatten(spec, "abcd") == (("a", "b", "c", "d"),)
    layer = c.layers[0]
    layer.hook = object()
    with pytest.raises(ExportError, match=r"output\.hook is a builtins\.object: a transformers cache"):
        flatten(layer, is_t)


def test_an_object_of_another_library_is_still_refused(cache_utils):
    class Other:
        def __init__(self):
            self.keys = T("k")
    with pytest.raises(ExportError, match=r"output\[0\] is a .*Other: an export takes"):
        flatten([Other()], is_t)


def test_leaf_paths_of_plain_structures():
    spec = flatten({"a": (T("x"), None, [T("y")]), 3: T("z")}, is_t)[1]
    assert leaf_paths(spec) == ["output['a'][0]", "output['a'][2][0]", "output[3]"]
    assert leaf_paths(["leaf"], "in") == ["in"]


def test_a_cache_among_the_inputs_is_refused(cache_utils):
    """As an input, the callable would update a copy of the cache, not the caller's."""
    c = make_dynamic(cache_utils, [("k", "v")])
    with pytest.raises(ExportError, match=r"example_inputs\[1\]\['past_key_values'\] is a transformers\.cache_utils"
                                          r"\.DynamicCache: a transformers cache is exported among the outputs"):
        flatten((T("ids"), {"past_key_values": c}), is_t, numbers="leaf", where="example_inputs", caches=False)

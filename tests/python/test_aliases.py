"""aliases.py: outputs that are an input, an earlier output or a weight, or views of
them (wild_cudagraph's output_is_input, outputs_alias_each_other, same_output_twice,
output_is_parameter_view, dict_outputs), found on the export's example call and rebuilt
over the tensors of a later call -- with numpy-backed stand-ins for torch's tensors
(a storage, an offset, sizes and strides in elements)."""
import json

import numpy as np

from pgcc.aliases import describe, find, rebuild, recorded


class Storage:
    def __init__(self, n):
        self.a = np.arange(n, dtype=np.float32) * 0.5 + np.float32(np.random.default_rng(n).random())

    def data_ptr(self):
        return id(self)


class V:
    """A strided view of a Storage, as a torch tensor is one."""
    dtype = "torch.float32"

    def __init__(self, st, off, shape, stride):
        self.st, self.off, self.shape, self._stride = st, off, tuple(shape), tuple(stride)

    @classmethod
    def new(cls, *shape):
        n = int(np.prod(shape))
        stride = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        return cls(Storage(n), 0, shape, stride)

    def untyped_storage(self):
        return self.st

    def storage_offset(self):
        return self.off

    def stride(self):
        return self._stride

    def as_strided(self, shape, stride, off):
        return V(self.st, off, shape, stride)

    def values(self):
        return np.lib.stride_tricks.as_strided(self.st.a[self.off:], self.shape, tuple(4 * s for s in self._stride))

    def new_empty_strided(self, shape, stride):
        span = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
        return V(Storage(span), 0, shape, stride)

    def copy_(self, src):
        self.values()[...] = src.values()
        return self

    def t(self):
        return V(self.st, self.off, self.shape[::-1], self._stride[::-1])

    def rows(self, lo):
        return V(self.st, self.off + lo * self._stride[0], (self.shape[0] - lo,) + self.shape[1:], self._stride)

    def cols(self, n):
        return V(self.st, self.off, self.shape[:-1] + (n,), self._stride)

    def flat(self):
        return V(self.st, self.off, (int(np.prod(self.shape)),), (1,))

    def clone(self):
        c = V.new(*self.shape)
        c.values()[...] = self.values()
        return c


def recorded_again(entries):
    """The entries as a loaded program reads them: from NAME.export.json (JSON), through recorded."""
    return recorded({"output_aliases": json.loads(json.dumps(entries))}, len(entries))


def test_an_output_that_is_an_input_is_the_callers_input_and_a_view_is_its_view():
    x, y = V.new(16, 32), V.new(32, 16)
    z = V.new(16, 16)  # x @ y: new memory
    entries = recorded_again(find([describe(t) for t in (x, y.cols(4), z)], [describe(x), describe(y)], []))
    assert [e and (e["of"], e["index"], e["same"]) for e in entries] == [("input", 0, True), ("input", 1, False),
                                                                        None]
    x2, y2 = V.new(16, 32), V.new(32, 16)  # a later call's inputs, elsewhere
    assert rebuild(entries[0], x2) is x2
    view = rebuild(entries[1], y2)
    assert view.st is y2.st and np.array_equal(view.values(), y2.values()[:, :4])


def test_outputs_of_one_result_are_that_output_again_or_its_views():
    y, x = V.new(8, 16), V.new(8, 16)
    outs = [y, y.flat(), y.rows(1), y.t(), y]
    entries = recorded_again(find([describe(t) for t in outs], [describe(x)], []))
    assert entries[0] is None
    assert [(e["of"], e["index"], e["same"]) for e in entries[1:]] == [("output", 0, False), ("output", 0, False),
                                                                       ("output", 0, False), ("output", 0, True)]
    y2 = V.new(8, 16)  # the program's out0 of a later call
    got = [y2] + [rebuild(e, y2) for e in entries[1:]]
    assert got[4] is y2
    assert np.array_equal(got[1].values(), y2.values().reshape(-1))
    assert np.array_equal(got[2].values(), y2.values()[1:])
    assert np.array_equal(got[3].values(), y2.values().T)


def test_a_view_of_a_weight_is_rebuilt_over_the_weights_memory():
    w, x, h, other = V.new(32, 32), V.new(4, 32), V.new(4, 32), V.new(3)  # (alive: their ids are their addresses)
    entries = recorded_again(find([describe(h), describe(w.t())], [describe(x)],
                                  [("other", describe(other)), ("lin.weight", describe(w))]))
    assert entries[0] is None and entries[1]["of"] == "weight" and entries[1]["name"] == "lin.weight"
    raw = V(Storage(1024), 0, (1024,), (1,))  # the program's copy of the weight, from its first element
    raw.st.a[:] = w.values().reshape(-1)
    got = rebuild(entries[1], raw, flat=True)
    assert got.st is raw.st and np.array_equal(got.values(), w.values().T)


def test_an_input_given_in_other_strides_is_viewed_in_the_layout_the_export_saw():
    y = V.new(6, 8)
    e = recorded_again(find([describe(y.cols(4))], [describe(y)], []))[0]
    y2 = V.new(8, 6).t()  # the same shape, column-major
    got = rebuild(e, y2)
    assert np.array_equal(got.values(), y2.values()[:, :4])


def test_other_memory_another_dtype_or_elements_outside_are_no_alias():
    x = V.new(4, 4)
    other = V.new(4, 4)
    ints = V(x.st, 0, (4, 4), (4, 1))
    ints.dtype = "torch.int32"  # x.view(torch.int32)
    wider = V(x.st, 0, (5, 4), (4, 1))  # (past x's elements: x a view of a larger storage)
    assert find([describe(other), describe(ints), describe(wider)], [describe(x), None], []) == [None] * 3
    assert find([describe(V(x.st, 0, (0, 4), (4, 1)))], [describe(x)], []) == [None]  # no elements


def test_recorded_entries_are_used_only_where_some_output_is_aliased_and_the_counts_agree():
    e = {"of": "output", "index": 0}
    assert recorded({"output_aliases": [None, e]}, 2) == [None, e]
    assert recorded({"output_aliases": [None, None]}, 2) is None
    assert recorded({"output_aliases": [None, e]}, 3) is None
    assert recorded({}, 2) is None and recorded(None, 1) is None


def test_the_loaded_program_returns_the_callers_input_and_views_instead_of_its_copies():
    """Program._aliased, as a call of the program of f(x, y) -> (x, y[:, :4], x @ y, (x @ y).t())
    gives its outputs: out0, out1 and out3 are the program's copies, replaced."""
    from types import SimpleNamespace

    from pgcc.loader import Program
    x, y, z = V.new(16, 32), V.new(32, 16), V.new(16, 16)
    entries = recorded_again(find([describe(t) for t in (x, y.cols(4), z, z.t())], [describe(x), describe(y)], []))
    program = SimpleNamespace(aliases=entries, torch=SimpleNamespace(Tensor=V))
    x2, y2 = V.new(16, 32), V.new(32, 16)
    copies = [V.new(16, 32), V(Storage(500), 0, (32, 4), (16, 1)), V.new(16, 16), V(Storage(256), 0, (16, 16),
                                                                                       (1, 16))]
    got = Program._aliased(program, [x2, y2], copies)
    assert got[0] is x2 and got[2] is copies[2]
    assert got[1].st is y2.st and np.array_equal(got[1].values(), y2.values()[:, :4])
    assert got[3].st is copies[2].st and np.array_equal(got[3].values(), copies[2].values().T)


def test_the_programs_copies_of_aliased_outputs_are_one_tensor_for_every_call():
    """Program.new_outputs: an output the call replaces by an alias (its copy unused) is
    made once, the others fresh every call."""
    from types import SimpleNamespace

    from pgcc.loader import Program
    made = []

    def maker(f):
        return (lambda shape: made.append(V.new(*shape)) or made[-1]), (f.shape,), {}
    fields = [SimpleNamespace(shape=(4, 4)), SimpleNamespace(shape=(4, 4))]
    program = SimpleNamespace(dims=None, _makers=None, outputs=fields, _maker=maker, torch=None,
                              aliases=[None, {"of": "output", "index": 0}])
    a, b = Program.new_outputs(program), Program.new_outputs(program)
    assert a[0] is not b[0] and a[1] is b[1] and len(made) == 3


def test_an_alias_that_cannot_be_made_returns_the_programs_copy_in_memory_of_its_own():
    """Program._aliased: the export saw output 0 as input 0 itself; a later call gives a
    number there, so the program's copy stands -- cloned, since new_outputs made that copy
    one tensor for every call; with out= given, the caller's tensor itself."""
    from types import SimpleNamespace

    from pgcc.loader import Program
    x = V.new(4, 4)
    program = SimpleNamespace(aliases=recorded_again(find([describe(x)], [describe(x)], [])),
                              torch=SimpleNamespace(Tensor=V))
    copy = V.new(4, 4)
    got = Program._aliased(program, [2.0], [copy])
    assert got[0] is not copy and got[0].st is not copy.st and np.array_equal(got[0].values(), copy.values())
    assert Program._aliased(program, [2.0], [copy], made=False)[0] is copy
    y = V.new(4, 4)
    assert Program._aliased(program, [y], [copy])[0] is y

"""What a call of a loaded export does with its tensors' layouts (call_args.py and
loader.Program.args, with stand-ins for torch): a tensor of the strides the export
captured (a channels_last input) is passed as it is, one of other strides is copied into
the captured layout (torch.empty_strided + copy_) rather than refused, a tensor of no
elements is given the arena's address instead of null (libpgrt refuses null), and the
strides come from NAME.export.json's record."""
import struct

from pgcc.call_args import contiguous_strides, layouts, same_layout
from pgcc.loader import Program


def test_contiguous_strides_and_same_layout():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()
    nhwc = (150528, 1, 672, 3)  # (a [1, 3, 224, 224] channels_last input, as seen on an H200)
    assert same_layout((1, 3, 224, 224), nhwc, nhwc)
    assert not same_layout((1, 3, 224, 224), nhwc, None)
    assert same_layout((1, 3, 224, 224), (1, 1, 672, 3), nhwc)  # (a dimension of size 1: any stride)
    assert same_layout((0, 3), (1, 1), None)  # (no elements: no layout)
    assert not same_layout((2, 3), (3,), None)


def test_layouts_read_from_the_report():
    report = {"structure": {"input_layouts": [{"shape": [2, 3], "stride": [1, 2], "offset": 0}, None],
                            "output_layouts": [{"shape": [4], "stride": [1], "offset": 8}]}}
    assert layouts(report, 2, 1) == ([(1, 2), None], [(1,)])
    assert layouts(report, 3, 1) == ([None] * 3, [(1,)])  # (counts that disagree: nothing believed)
    assert layouts({}, 1, 2) == ([None], [None, None])


class Dev:
    def __init__(self, index=0):
        self.index, self.type = index, "cuda"

    def __eq__(self, other):
        return isinstance(other, Dev) and other.index == self.index


class T:
    """A stand-in CUDA tensor."""
    made = []

    def __init__(self, shape, stride=None, ptr=0x1000, dtype="f32"):
        self.shape, self._stride = tuple(shape), tuple(stride or contiguous_strides(shape))
        self.ptr, self.dtype, self.device, self.is_cuda, self.layout = ptr, dtype, Dev(), True, "strided"
        self.copied_from = None

    def stride(self):
        return self._stride

    def is_contiguous(self):
        return same_layout(self.shape, self._stride, None)

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return 4

    def data_ptr(self):
        return self.ptr if self.numel() else 0

    def get_device(self):
        return 0

    def copy_(self, src):
        self.copied_from = src
        return self


class FakeTorch:
    Tensor = T
    strided = "strided"

    @staticmethod
    def empty_strided(shape, stride, dtype, device):
        t = T(shape, stride, ptr=0x9000, dtype=dtype)
        T.made.append(t)
        return t


class F:
    def __init__(self, name, offset, shape, stride=None, role="input"):
        self.name, self.offset, self.shape, self.stride, self.role = name, offset, tuple(shape), stride, role
        self.dims, self.dtype, self.torch_dtype, self.size = (), "f32", "f32", 4 * max(1, len(shape))


class Arena:
    def data_ptr(self):
        return 0xA000


def program(inputs, outputs):
    p = Program.__new__(Program)
    p.torch, p.name, p.device, p.arena = FakeTorch, "m", Dev(), Arena()
    p.inputs, p.outputs, p.size_fields, p.callbacks = inputs, outputs, [], []
    p.args_size, p.dims, p._numbers = 8 * (len(inputs) + len(outputs)), [], {}
    return p


def ptrs(buf, n):
    return [struct.unpack_from("<Q", buf, 8 * i)[0] for i in range(n)]


def test_a_tensor_of_the_captured_strides_is_passed_as_it_is_another_copied():
    nhwc = (12, 1, 6, 3)
    p = program([F("in0", 0, (1, 3, 2, 2), nhwc)], [F("out0", 8, (4,), role="output")])
    x, out = T((1, 3, 2, 2), nhwc, ptr=0x1000), T((4,), ptr=0x2000)
    assert ptrs(p.args([x], [out]), 2) == [0x1000, 0x2000]
    T.made.clear()
    y = T((1, 3, 2, 2), ptr=0x3000)  # contiguous, where the export captured channels_last: copied
    buf = p.args([y], [out])
    assert ptrs(buf, 2) == [0x9000, 0x2000]
    assert [(t.shape, t.stride(), t.copied_from) for t in T.made] == [((1, 3, 2, 2), nhwc, y)]
    assert buf.keep == [T.made[0]]  # (the copy lives as long as the arguments)


def test_without_a_record_a_strided_tensor_is_made_contiguous():
    p = program([F("in0", 0, (2, 3))], [])
    T.made.clear()
    x = T((2, 3), (1, 2), ptr=0x1000)
    assert ptrs(p.args([x], []), 1) == [0x9000]
    assert T.made[0].stride() == (3, 1) and T.made[0].copied_from is x


def test_a_tensor_of_no_elements_gets_a_valid_address():
    p = program([F("in0", 0, (0, 3)), F("in1", 8, (2,))], [F("out0", 16, (0,), role="output")])
    buf = p.args([T((0, 3)), T((2,), ptr=0x1000)], [T((0,))])
    assert ptrs(buf, 3) == [0xA000, 0x1000, 0xA000]


def test_an_expanded_layout_is_not_made_by_a_copy_but_refused():
    """The export captured an expanded input (stride 0): a tensor of other strides cannot be
    copied into that layout (its elements share memory), so the call says what it needs."""
    import pytest
    p = program([F("in0", 0, (4, 3), (0, 1))], [])
    assert ptrs(p.args([T((4, 3), (0, 1), ptr=0x1000)], []), 1) == [0x1000]
    with pytest.raises(ValueError, match=r"argument 0 \(in0\) must have strides \[0, 1\] \(got strides \[3, 1\]\)"):
        p.args([T((4, 3), ptr=0x1000)], [])


def test_a_structure_a_flat_call_gives_already_is_skipped():
    from pgcc.loader import flat_as_called
    leaf = ["leaf"]
    assert flat_as_called({"inputs": ["tuple", [leaf, leaf]], "outputs": leaf})
    assert flat_as_called({"inputs": ["tuple", []], "outputs": ["tuple", [leaf, leaf]]})
    assert not flat_as_called({"inputs": ["tuple", [leaf]], "outputs": ["tuple", [leaf]]})  # (a 1-tuple returned)
    assert not flat_as_called({"inputs": ["tuple", [leaf]], "outputs": ["list", [leaf, leaf]]})
    assert not flat_as_called({"inputs": ["tuple", [["dict", [["a", leaf]]]]], "outputs": leaf})
    assert not flat_as_called({"inputs": ["tuple", [leaf]], "outputs": ["tuple", [leaf, ["const", 2]]]})


def test_arguments_of_addresses_only_are_packed_in_one_step_as_field_by_field():
    """packed_layout: a program whose NAME_args holds addresses only (fields out of offset
    order, padding between them) packs them in one step, the same bytes as args' field by
    field; a tensor not as recorded (strides) still goes field by field (and is copied);
    a program with a scalar field has no such packing."""
    from pgcc.call_args import packed_layout
    ins = [F("in1", 16, (2, 3)), F("in0", 0, (4,))]
    outs = [F("out0", 32, (4,), role="output")]
    p = program(ins, outs)
    p.fields, p.args_size = ins + outs, 48
    fast = packed_layout(p)
    assert fast is not None and fast[1] == [1, 0, 2]
    xs, o = [T((2, 3), ptr=0x1000), T((4,), ptr=0x2000)], T((4,), ptr=0x3000)
    slow = bytes(p.args(xs, [o]))
    p._packed = fast
    got = p.args(xs, [o], made=True)
    assert isinstance(got, bytes) and got == slow and len(got) == 48
    assert [struct.unpack_from("<Q", got, at)[0] for at in (0, 16, 32)] == [0x2000, 0x1000, 0x3000]
    assert struct.unpack_from("<Q", p.args([xs[0], T((4,), ptr=0)], [o]), 0)[0] == 0xA000  # (no address: the arena's)
    T.made.clear()
    strided = p.args([T((2, 3), (1, 2), ptr=0x1000), xs[1]], [o])
    assert not isinstance(strided, bytes) and struct.unpack_from("<Q", strided, 16)[0] == 0x9000 and T.made
    q = program([F("s", 0, ()), F("in0", 8, (4,))], [])
    q.inputs[0].role = "scalar"
    q.fields = q.inputs
    assert packed_layout(q) is None

"""replay.prove_irrelevant and narrow over a stand-in replayer (no GPU): a "kernel" whose
results depend on chosen parameter bytes of chosen nodes; and host_words.words_hex, and
read_host on a word that points at this process's memory (its check, a replay, stood in
for); close_unless_stuck, which writes the caller's state back only where the CUDA
context is not stuck in a fault."""
import ctypes as C
import struct
from types import SimpleNamespace

import pytest

from pgcc.host_words import (HOST_WINDOW, MANY_COPIES, device_values, holds_word, host_found, launch_time_bytes,
                             library_hint, read_host, values_together, words_hex)
from pgcc.model import Kernel, Node
from pgcc.relocate import FOREIGN, Buffers
from pgcc.replay import POISON, close_unless_stuck, narrow, prove_irrelevant


class FakeReplayer:
    """Capture A's nodes with 64 parameter bytes each; the results are the bytes that
    `reads` ({node: [offset]}) name, so a change there changes them.  `together`: bytes
    that only change the results when all of them change (an interaction)."""

    def __init__(self, reads, together=(), nodes=3):
        self.cap = SimpleNamespace(nodes=[{"bytes": bytes(range(i * 64 + 1, i * 64 + 65)), "name": f"k{i}"}
                                          for i in range(nodes)])
        self.reads, self.together, self.calls = reads, together, 0
        self.labels = ["output 0", "weight w"]

    def base(self, i):
        return self.cap.nodes[i]["bytes"]

    def replay_params(self, changed):
        self.calls += 1
        blob = {i: changed.get(i, n["bytes"]) for i, n in enumerate(self.cap.nodes)}
        seen = [blob[i][o] for i, offs in sorted(self.reads.items()) for o in offs]
        joint = all(blob[i][o] != self.cap.nodes[i]["bytes"][o] for i, o in self.together)
        return [bytes(seen), bytes([joint and bool(self.together)])]


def ranges(*offs):
    return [(o, 4, "changes between the captures") for o in offs]


def test_irrelevant_bytes_pass():
    r = FakeReplayer({0: [0]})
    assert prove_irrelevant(r, {0: ranges(8, 16), 1: ranges(32)}, lambda i: f"k{i}") == []


def test_a_read_range_is_named_alone_with_its_words_and_result():
    r = FakeReplayer({1: [20]})
    sus = {1: ranges(4, 8, 12, 16, 20, 24, 28, 32)}
    words = lambda i, at, n: f"A {words_hex(r.cap.nodes[i]['bytes'], at, n)}"  # noqa: E731
    bad = prove_irrelevant(r, sus, lambda i: f"k{i}", words=words)
    assert len(bad) == 1
    assert "node 1 (k1): bytes 20..24" in bad[0] and "bytes 16..20" not in bad[0]
    assert "of its 8 such ranges" in bad[0] and "zeroed" in bad[0] and "result 0 (output 0)" in bad[0]
    assert "[A 0x58575655]" in bad[0]  # bytes 85..88 of node 1, little-endian


def test_poison_is_tried_when_zeros_pass():
    r = FakeReplayer({0: [8]})
    r.cap.nodes[0]["bytes"] = bytes(64)  # the read byte is zero already: zeroing changes nothing
    bad = prove_irrelevant(r, {0: ranges(8)}, lambda i: "k0")
    assert len(bad) == 1 and "poisoned" in bad[0]


def test_an_interaction_between_nodes_is_a_problem():
    r = FakeReplayer({}, together=[(0, 8), (2, 40)])
    bad = prove_irrelevant(r, {0: ranges(8), 2: ranges(40)}, lambda i: f"k{i}")
    assert len(bad) == 1 and "together changes the results" in bad[0] and "node 0" in bad[0] and "node 2" in bad[0]


def test_narrow_halves_to_the_range_that_matters():
    r = FakeReplayer({0: [44]})
    rs = ranges(*range(0, 64, 4))
    reference = r.replay_params({})
    r.calls = 0
    assert narrow(r, 0, rs, POISON, reference) == [(44, 4, "changes between the captures")]
    assert r.calls <= 2 * 4  # two tries per halving of 16 ranges


def test_narrow_keeps_both_halves_when_neither_alone_matters():
    r = FakeReplayer({}, together=[(0, 0), (0, 60)])
    rs = ranges(0, 60)
    assert narrow(r, 0, rs, 0x00, r.replay_params({})) == rs


@pytest.mark.parametrize("at,n,want", [(0, 8, "0x0807060504030201"), (0, 12, "0x0807060504030201,0x0c0b0a09"),
                                       (4, 4, "0x08070605")])
def test_words_hex(at, n, want):
    assert words_hex(bytes(range(1, 17)), at, n) == want


def test_training_step_seen_through_torch_compile():
    """A training step is known by its `train` attribute, also through the wrappers
    torch.compile makes (a function whose _torchdynamo_orig_callable is the bound
    __call__ of a callable object; a module's _orig_mod); an nn.Module's train is a
    method, not True."""
    from pgcc.warmup import training_step

    class Step:
        train = True

        def __call__(self):
            pass

    class Module:
        def train(self, mode=True):
            return self

    def compiled(f):
        def wrapper():
            pass
        wrapper._torchdynamo_orig_callable = f
        return wrapper

    def wraps(f):  # as torch._dynamo.external_utils.wrap_inline wraps a callable object
        import functools

        @functools.wraps(f)
        def inner():
            pass
        return inner

    step = Step()
    assert training_step(step)
    assert training_step(compiled(wraps(step)))
    assert not hasattr(wraps(step), "train")  # (wraps copies the object's __dict__, not its class's)
    assert training_step(compiled(step.__call__))
    assert training_step(compiled(compiled(step.__call__)))
    assert training_step(SimpleNamespace(_orig_mod=step))
    assert not training_step(Module())
    assert not training_step(compiled(Module().train))
    assert not training_step(compiled(lambda: None))


def host_word_node():
    """A node whose parameter 8 holds the address of host memory (cuBLAS's alpha), and
    its capture A record."""
    alpha = C.create_string_buffer(struct.pack("<f", 0.5) + bytes(300))
    addr = C.addressof(alpha)
    blob = struct.pack("<QQ", 0, addr)
    cap = SimpleNamespace(nodes=[{"name": "gemm", "func": 7, "bytes": blob}])
    node = Node(kind="kernel", index=0, func=7, args=[("value", bytes(8)), ("value", blob[8:])])
    kernel = Kernel(symbol="gemm", layout=[(0, 8), (8, 8)])
    return alpha, addr, cap, node, kernel, [(addr - 4096, addr + 4096, "[heap]")]


def test_a_host_word_read_through_points_at_a_copy():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    bufs, done, kept, problems = Buffers(), {}, [], []
    assert read_host(0, [(8, 8, "changes")], cap, maps, bufs, [node], {7: kernel}, done, lambda i, found: "read",
                     kept, problems)
    (copy,) = bufs.list
    assert copy.role == "weight" and copy.static and copy.host[:4] == struct.pack("<f", 0.5)
    assert copy.size == min(HOST_WINDOW, 4096) and done == {addr: copy}
    assert node.args == [("value", bytes(8)), ("ptr", copy, 0)] and kernel.ptr_words == {(8, 0, "abs64")}
    assert kept == [] and problems == []


def test_a_host_word_taken_as_a_value_is_kept_as_captured():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    node.args[1] = ("value", bytes(8))  # (zeroed as a suspect)
    bufs, kept, problems = Buffers(), [], []
    assert read_host(0, [(8, 8, "changes")], cap, maps, bufs, [node], {7: kernel}, {}, lambda i, found: "value",
                     kept, problems)
    assert node.args[1] == ("value", struct.pack("<Q", addr)) and bufs.list == [] and kernel.ptr_words == set()
    assert kept == [(0, 8, addr)] and problems == []


def test_a_word_outside_host_memory_is_not_a_host_word():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    assert not read_host(0, [(8, 8, "changes")], cap, [(0, 4096, "x")], Buffers(), [node], {7: kernel}, {},
                         lambda i, found: "read", [], [])
    assert node.args[1] == ("value", struct.pack("<Q", addr))


def test_a_host_word_neither_read_nor_a_value_is_a_problem_with_the_librarys_settings():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    cap.nodes[0]["name"] = "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb0E"
    problems = []
    assert read_host(0, [(8, 8, "changes")], cap, maps, Buffers(), [node], {7: kernel}, {},
                     lambda i, found: None, [], problems)
    (p,) = problems
    assert f"0x{addr:x}, host memory of this process" in p and "split-K" in p and "DISABLE_ADDMM_CUDA_LT=1" in p
    cap.nodes[0]["name"] = "gemm"
    problems = []
    read_host(0, [(8, 8, "changes")], cap, maps, Buffers(), [node], {7: kernel}, {}, lambda i, found: None, [],
              problems)
    assert len(problems) == 1 and "split-K" not in problems[0] and library_hint("gemm") == ""


def test_a_host_word_no_replay_explains_gets_the_bytes_as_launched():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    launched = struct.pack("<ff", 1.0, 0.0) + bytes(8)
    cap.host_seen = {addr: [launched, launched]}  # (two launches, the same bytes: this node's)
    bufs, done, problems = Buffers(), {}, []
    assert read_host(0, [(8, 8, "changes")], cap, maps, bufs, [node], {7: kernel}, done, lambda i, found: None,
                     [], problems)
    (copy,) = bufs.list
    assert problems == [] and copy.host == launched and copy.host != C.string_at(addr, len(launched))
    assert node.args[1] == ("ptr", copy, 0) and done == {(addr, launched): copy}


def test_bytes_as_launched_by_node_where_the_launches_differ():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    word = struct.pack("<Q", addr)
    cap.nodes = [{"name": "a", "func": 7, "bytes": bytes(8) + word}, {"name": "b", "func": 7, "bytes": word},
                 {"name": "c", "func": 7, "bytes": bytes(16)}]
    cap.host_seen = {addr: [b"first", b"second"]}
    assert launch_time_bytes(cap, 0, [(8, addr, 16)]) == {addr: b"first"}
    assert launch_time_bytes(cap, 1, [(0, addr, 16)]) == {addr: b"second"}
    cap.host_seen = {addr: [b"first", b"second", b"third"]}  # (more launches than nodes: which is whose?)
    assert launch_time_bytes(cap, 0, [(8, addr, 16)]) is None
    assert launch_time_bytes(cap, 0, [(8, addr + 8, 16)]) is None  # (never seen at a launch)
    assert holds_word(word, addr) and not holds_word(b"x" + word[:-1], addr)


def test_replays_that_already_differ_cannot_prove_bytes_irrelevant():
    class Noisy(FakeReplayer):
        def replay_params(self, changed):
            got = super().replay_params(changed)
            return got + [bytes([self.calls % 256])]  # (an atomic add's order: another result each replay)
    r = Noisy({0: [0]})
    (problem,) = prove_irrelevant(r, {1: ranges(8)}, lambda i: f"k{i}")
    assert "two plain replays of the graph already differ" in problem
    assert "use_deterministic_algorithms(True)" in problem


class Closing:
    """A replayer whose close writes back (closed) or, its context stuck, raises as the first copy would."""

    def __init__(self, stuck):
        self.stuck, self.closed = stuck, False

    def close(self):
        if self.stuck:
            raise RuntimeError("cuMemcpyHtoD: CUDA error 700 (an illegal memory access was encountered)")
        self.closed = True


def test_a_replayer_is_closed_unless_the_context_is_stuck():
    ok = Closing(False)
    assert close_unless_stuck(ok, stuck=lambda: None) is None and ok.closed
    stuck = Closing(True)
    err = "CUDA error 700 (an illegal memory access was encountered)"
    assert close_unless_stuck(stuck, stuck=lambda: err) == err and not stuck.closed


def test_after_a_fault_the_error_that_says_where_is_the_one_raised():
    from pgcc.errors import ExportError
    r = Closing(True)
    with pytest.raises(ExportError, match="a kernel reads memory it was not given"):
        try:
            raise ExportError("replaying ... failed: a kernel reads memory it was not given")
        finally:
            close_unless_stuck(r, stuck=lambda: "CUDA error 700")  # (a plain r.close() here raised its own)


def test_host_found_only_where_every_range_is_a_host_word():
    alpha, addr, cap, node, kernel, maps = host_word_node()
    blob = cap.nodes[0]["bytes"]
    assert host_found(blob, [(8, 8, "changes")], maps) == [(8, addr, min(HOST_WINDOW, addr + 4096 - addr))]
    assert host_found(blob, [(0, 8, "changes"), (8, 8, "changes")], maps) is None  # (word 0 is 0: no host address)
    assert host_found(blob, [(8, 4, "changes")], maps) is None  # (half a word)
    assert host_found(blob, [], maps) is None


class GroupCheck:
    """check(i, found) over words whose kind is known: "value", "read" where any word
    is read through; each call counted (a replay each)."""

    def __init__(self, read=()):
        self.read, self.calls = set(read), []

    def __call__(self, i, found):
        self.calls.append(i)
        return "read" if any(addr in self.read for _, addr, _ in found) else "value"


def words(*addrs):
    return [(8 * k, a, 64) for k, a in enumerate(addrs)]


def test_values_together_proves_a_nodes_words_at_once_where_all_are_values():
    check = GroupCheck(read={0x50})
    assert values_together(check, 3, words(0x10, 0x20, 0x30)) and check.calls == [3]
    assert not values_together(check, 9, words(0x40, 0x50, 0x60)) and check.calls == [3, 9]  # (word by word then)
    assert not values_together(check, 7, words(0x30)) and check.calls == [3, 9]  # (one word: read_host's alone)


def test_values_together_bounds_the_copies_one_replay_makes():
    check = GroupCheck()
    assert not values_together(check, 1, words(*range(0x1000, 0x1000 + 8 * (MANY_COPIES + 1), 8)))
    assert check.calls == []
    assert values_together(check, 1, words(*([0x10] * (MANY_COPIES + 1))))  # (one address many times: one copy)


def test_a_constant_word_into_foreign_device_memory_proven_a_value_is_kept():
    """CUTLASS's split-K reduction: an int (1) beside stale bytes of an old pointer read
    0x00007f1900000001, inside a library's own device allocation; the relocator zeroed it
    as an address the export does not own.  Where the check calls it a value, the word is
    written back as captured and listed; a word it calls read stays a suspect, and so do
    words in no allocation and words of another kind."""
    word = 0x7F19_0000_0001
    blob = struct.pack("<QQQ", 5, word, word + 8)
    cap = SimpleNamespace(nodes=[{"name": "ReduceSplitK", "func": 7, "bytes": blob}])
    node = Node(kind="kernel", index=0, func=7, args=[("value", blob[:8]), ("value", bytes(8)), ("value", bytes(8))])
    kernel = Kernel(symbol="ReduceSplitK", layout=[(0, 8), (8, 8), (16, 8)])
    asked = []

    def check(i, found, device=False):
        asked.append((i, found, device))
        return "value" if found[0][0] == 8 else "read"
    spans = {word: (0x7F19_0000_0000, 1 << 21), word + 8: (0x7F19_0000_0000, 1 << 21)}
    kept = []
    ranges = [(8, 8, FOREIGN), (16, 8, FOREIGN), (0, 8, "changes between the captures")]
    proven = device_values(0, ranges, cap, [node], {7: kernel}, check, spans.get, kept)
    assert proven == [(8, 8, FOREIGN)] and kept == [(0, 8, word)]
    assert node.args[1] == ("value", struct.pack("<Q", word)) and node.args[2] == ("value", bytes(8))
    assert [(f[0][:2], d) for _, f, d in asked] == [((8, word), True), ((16, word + 8), True)]
    assert asked[0][1][0][2] == min(HOST_WINDOW, (1 << 21) - 1)  # (the copy stays inside the allocation)
    assert device_values(0, ranges, cap, [node], {7: kernel}, check, lambda a: None, []) == []

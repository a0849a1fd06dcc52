"""alone.Alone -- a node's parameter bytes judged by running it alone -- over a stand-in
device (a bytearray, kernels written in Python), and replay.prove_irrelevant on a graph
whose replays are not deterministic (a stand-in replayer with noise), where the node run
alone decides."""
import itertools
from types import SimpleNamespace

from pgcc.alone import LIMIT, Alone, merged, outside
from pgcc.model import Buffer, Kernel, Node, Relocation
from pgcc.replay import prove_irrelevant
from standin_device import BASE, Memory

def buf(name, at, size=64, **kw):
    ranges = kw.pop("ranges", {0: BASE + at})
    return Buffer(name=name, size=size, role=kw.pop("role", "intermediate"), ranges=ranges, **kw)


def setup(kernel, out_kw=None):
    """Node 0: x (an input) and out in a 24-byte struct with 8 bytes of its own at 16;
    kernel(memory, blob, x, out) is what it does."""
    dev = Memory(1 << 14)
    x, out = buf("x", 0, role="input"), buf("out", 0x100, **(out_kw or {}))
    dev.write(x.ranges[0], bytes(range(64)))
    n = Node(kind="kernel", index=0, func=1,
             args=[("bytes", bytes(24), [Relocation(0, x, 0, "abs64"), Relocation(8, out, 0, "abs64")])])
    dev.kernels[0] = lambda d, blob: kernel(d, blob, x, out)
    return dev, Alone(dev, [n], {1: Kernel(symbol="k", layout=[(0, 24)])}), x, out


def blobs(at=16):
    base = bytes(24)
    return base, {"zeroed": base[:at] + bytes(8), "poisoned": base[:at] + b"\xa5" * 8}


def double(d, blob, x, out):  # out = 2 x, whatever its own bytes hold
    d.write(out.ranges[0], bytes((2 * v) & 0xFF for v in d.read(x.ranges[0], 64)))


def test_bytes_the_kernel_ignores_are_proven_and_the_buffers_put_back():
    dev, alone, x, out = setup(double)
    dev.write(out.ranges[0], b"\x07" * 64)
    base, changed = blobs()
    assert alone.problem(0, base, changed, "k") is None and alone.proven == [0]
    assert len(dev.launched) == 4 and dev.blobs[2:] == list(changed.values())
    assert dev.read(out.ranges[0], 64) == b"\x07" * 64  # as it was before
    assert dev.read(x.ranges[0], 64) == bytes(range(64))


def test_bytes_the_kernel_reads_are_named():
    def scaled(d, blob, x, out):  # out = x times its byte 16
        d.write(out.ranges[0], bytes((blob[16] * v) & 0xFF for v in d.read(x.ranges[0], 64)))
    dev, alone, *_ = setup(scaled)
    base, changed = blobs()
    base = base[:16] + b"\x03" + base[17:]
    why = alone.problem(0, base, changed, "k")
    assert "with them zeroed, it writes other bytes" in why and alone.proven == []


def test_each_run_starts_from_the_same_bytes():
    def accumulate(d, blob, x, out):  # out += x: a second run from what the first left would differ
        d.write(out.ranges[0], bytes((a + b) & 0xFF for a, b in zip(d.read(out.ranges[0], 64),
                                                                       d.read(x.ranges[0], 64))))
    dev, alone, *_ = setup(accumulate)
    assert alone.problem(0, *blobs(), "k") is None


def test_a_kernel_that_is_not_deterministic_alone_is_not_judged():
    count = itertools.count()

    def racy(d, blob, x, out):
        d.write(out.ranges[0], bytes([next(count) & 0xFF]) * 64)
    dev, alone, *_ = setup(racy)
    assert "it is not deterministic" in alone.problem(0, *blobs(), "k")


def test_nodes_that_cannot_run_alone_say_why():
    dev, alone, *_ = setup(double, {"host": b"\x00" * 64})  # (a word into host memory: not compared)
    assert alone.spans(0) == [(BASE, 64)]
    dev, alone, *_ = setup(double, {"ranges": {1: BASE + 0x100}})
    assert "cannot be run alone (a pointer into out, no memory of capture A)" in alone.problem(0, *blobs(), "k")
    dev, alone, *_ = setup(double, {"size": LIMIT + 1})
    assert f"over {LIMIT >> 20} MiB" in alone.problem(0, *blobs(), "k")
    assert "no kernel node" in alone.problem(5, *blobs(), "k")
    assert dev.launched == []


def test_merged_joins_overlapping_spans():
    assert merged([(10, 5), (0, 4), (12, 10), (22, 1), (30, 2)]) == [(0, 4), (10, 13), (30, 2)]


def test_outside_cuts_a_block_out_of_spans():
    assert outside([(0, 100)], 40, 20) == [(0, 40), (60, 40)]
    assert outside([(0, 10), (50, 10)], 20, 5) == [(0, 10), (50, 10)]
    assert outside([(0, 100), (200, 8)], 0, 100) == [(200, 8)]


class NoisyReplayer:
    """Results: the byte at offset 8 of node 0 (what node 0 reads) and a noisy result --
    a sum of atomic adds whose order changes -- that differs on the replays noise() picks."""

    def __init__(self, noise, reads=True):
        self.cap = SimpleNamespace(nodes=[{"bytes": bytes(range(1, 65)), "name": "k0"},
                                          {"bytes": bytes(range(65, 129)), "name": "k1"}])
        self.noise, self.reads, self.calls = noise, reads, 0
        self.labels = ["output 0", "weight embedding"]

    def base(self, i):
        return self.cap.nodes[i]["bytes"]

    def replay_params(self, changed):
        self.calls += 1
        blob = changed.get(0, self.cap.nodes[0]["bytes"])
        return [bytes([blob[8] if self.reads else 0]), bytes([self.noise(self.calls)])]


class Judge:
    """alone.Alone's stand-in: which nodes it was asked of, and what it says."""

    def __init__(self, says=None):
        self.asked, self.says = [], says

    def problem(self, i, base, changed, name):
        self.asked.append((i, sorted(changed)))
        return self.says


SUSPECTS = {0: [(40, 4, "changes between the captures")], 1: [(4, 2, "changes between the captures")]}


def test_a_noisy_graph_is_judged_node_by_node_alone():
    r = NoisyReplayer(lambda call: call)  # every replay differs
    assert "two plain replays of the graph already differ" in prove_irrelevant(r, SUSPECTS, lambda i: f"k{i}")[0]
    judge = Judge()
    assert prove_irrelevant(r, SUSPECTS, lambda i: f"k{i}", alone=judge) == []
    assert judge.asked == [(0, ["poisoned", "zeroed"]), (1, ["poisoned", "zeroed"])]
    (bad,) = prove_irrelevant(r, {1: SUSPECTS[1]}, lambda i: f"k{i}", alone=Judge("it reads them"))
    assert bad.startswith("node 1 (k1): bytes 4..6") and "not deterministic, and it reads them" in bad


def test_one_noisy_replay_is_not_taken_for_a_read():
    """The graph's noise on the poisoned replay only (plain replays agreed): that replay made
    again gives the reference, so the bytes are irrelevant, with no node run alone."""
    r = NoisyReplayer(lambda call: call == 4)  # 1, 2: plain; 3: zeroed together; 4: poisoned together
    judge = Judge("it reads them")
    assert prove_irrelevant(r, SUSPECTS, lambda i: f"k{i}", alone=judge) == [] and judge.asked == []


def test_noise_on_repeated_replays_leaves_it_to_the_node_alone():
    r = NoisyReplayer(lambda call: call if call > 3 else 0)
    judge = Judge()
    assert prove_irrelevant(r, SUSPECTS, lambda i: f"k{i}", alone=judge) == [] and len(judge.asked) == 2


def test_a_read_the_replays_repeat_is_a_problem_though_alone_says_otherwise():
    """Node 0's byte 8 changes the result the same way on both replays: a read, whatever the
    node run alone would say (it is never asked)."""
    r = NoisyReplayer(lambda call: 0)
    judge = Judge()
    bad = prove_irrelevant(r, {0: [(8, 4, "changes between the captures")]}, lambda i: f"k{i}", alone=judge)
    assert len(bad) == 1 and "node 0 (k0): bytes 8..12" in bad[0] and "result 0 (output 0)" in bad[0]
    assert judge.asked == []




def test_a_random_kernel_runs_alone_on_the_generators_seed_and_offset():
    """A node drawing random numbers points into the buffer rng, which has no memory of its
    own in capture A: its two words are the generator's seed and offset tensors there
    (random_state.rng_buffer's places), run alone like any buffer (a dropout kernel beside
    stale padding bytes, in a graph whose replays are not deterministic)."""
    dev = Memory(1 << 14)
    out = buf("out", 0x100)
    rng = Buffer(name="rng", size=16, role="rng", places={0: {BASE + 0x40: 0, BASE + 0x80: 8}, 1: {BASE: 0}})
    dev.write(BASE + 0x40, (1234).to_bytes(8, "little"))
    dev.write(BASE + 0x80, (5).to_bytes(8, "little"))
    n = Node(kind="kernel", index=0, func=1,
             args=[("bytes", bytes(32), [Relocation(0, rng, 0, "abs64"), Relocation(8, rng, 8, "abs64"),
                                        Relocation(16, out, 0, "abs64")])])

    def draw(d, blob):  # out = a hash of the seed and offset it reads, whatever its bytes 24.. hold
        seed, offset = (int.from_bytes(d.read(a, 8), "little") for a in (BASE + 0x40, BASE + 0x80))
        d.write(out.ranges[0], bytes(((seed * 31 + offset) >> k) & 0xFF for k in range(64)))
    dev.kernels[0] = draw
    alone = Alone(dev, [n], {1: Kernel(symbol="k", layout=[(0, 32)])})
    assert alone.spans(0) == [(BASE + 0x40, 8), (BASE + 0x80, 8), (BASE + 0x100, 64)]
    assert alone.problem(0, bytes(32), {"zeroed": bytes(32), "poisoned": bytes(24) + b"\xa5" * 8}, "k") is None
    assert int.from_bytes(dev.read(BASE + 0x80, 8), "little") == 5  # (put back)
    stray = Buffer(name="rng", size=16, role="rng", places={1: {BASE: 0}})  # (none in capture A)
    n.args = [("bytes", bytes(32), [Relocation(0, stray, 0, "abs64")])]
    assert alone.spans(0) == "a pointer into rng, no memory of capture A"


def ws_setup(kernel):
    """Node 0 points at x (an input), out and ws, a block from outside the captures;
    kernel(memory, x, out, ws) is what it does."""
    dev = Memory(1 << 14)
    x, out = buf("x", 0, role="input"), buf("out", 0x100)
    ws = buf("ws", 0x200, size=256, role="weight", static=True)
    dev.write(x.ranges[0], bytes(range(64)))
    dev.write(ws.ranges[0], b"\x11" * 256)
    n = Node(kind="kernel", index=0, func=1, args=[("ptr", x, 0), ("ptr", out, 0), ("ptr", ws, 0)])
    dev.kernels[0] = lambda d, blob: kernel(d, x, out, ws)
    return dev, Alone(dev, [n], {1: Kernel(symbol="gemm", layout=[(0, 8), (8, 8), (16, 8)])}), ws


def test_a_workspace_the_kernel_fills_before_reading_is_ignored():
    def gemm(d, x, out, ws):  # partial sums into 40 bytes of ws, then out from them
        d.write(ws.ranges[0], bytes((2 * v) & 0xFF for v in d.read(x.ranges[0], 40)))
        d.write(out.ranges[0], d.read(ws.ranges[0], 40) + bytes(24))
    dev, alone, ws = ws_setup(gemm)
    why, wrote = alone.block_ignored([0], (ws.ranges[0], ws.size), str)
    assert why is None and wrote == 40 and len(dev.launched) == 4
    assert dev.read(ws.ranges[0], 256) == b"\x11" * 256  # (put back)


def test_a_block_the_kernel_reads_is_not_ignored_and_an_index_block_never_sees_0xff():
    def offsets(d, x, out, ws):  # out[k] = x[ws[k]]: ws holds indices; 0xff would be out of bounds
        idx = d.read(ws.ranges[0], 64)
        assert 0xFF not in idx, "ran out of bounds"
        d.write(out.ranges[0], bytes(d.read(x.ranges[0], 64)[k % 64] for k in idx))
    dev, alone, ws = ws_setup(offsets)
    why, _ = alone.block_ignored([0], (ws.ranges[0], ws.size), str)
    assert why.endswith("all 0x00, they write other bytes: they read them") and len(dev.launched) == 3


def test_a_noisy_graphs_workspace_is_judged_by_its_kernels_alone():
    from pgcc.replay import scratch_blocks

    def gemm(d, x, out, ws):
        d.write(ws.ranges[0], b"\x05" * 100)
        d.write(out.ranges[0], bytes(64))
    dev, alone, ws = ws_setup(gemm)
    noise = itertools.count()
    replayer = SimpleNamespace(cap=SimpleNamespace(outputs=[0]), replay=lambda: [bytes([next(noise)])])
    nodes = list(alone.nodes.values())
    logged = []
    scratch_blocks(replayer, SimpleNamespace(list=[ws]), nodes, logged.append, alone=alone)
    assert ws.role == "workspace" and ws.size == 256 and not ws.static  # (100 bytes written, rounded to 256)
    assert "a workspace" in logged[0]
    dev2, alone2, ws2 = ws_setup(lambda d, x, out, ws: d.write(out.ranges[0], d.read(ws.ranges[0], 64)))
    scratch_blocks(replayer, SimpleNamespace(list=[ws2]), list(alone2.nodes.values()), logged.append, alone=alone2)
    assert ws2.role == "weight" and ws2.static  # (read by its kernel: kept with its bytes)
    _, alone3, ws3 = ws_setup(gemm)
    scratch_blocks(replayer, SimpleNamespace(list=[ws3]), list(alone3.nodes.values()), logged.append, alone=None)
    assert ws3.role == "weight"  # (no node may be run alone: nothing proven)


def test_a_split_k_workspace_one_kernel_fills_and_the_next_reads_is_ignored():
    """cuBLASLt's split-K: the GEMM (node 0) writes partial sums into the workspace, its
    reduction (node 1) sums them into out.  Alone, node 1 reads the block; run after node
    0, what it reads is node 0's, whatever the block held."""
    dev = Memory(1 << 14)
    x, out = buf("x", 0, role="input"), buf("out", 0x100)
    ws = buf("ws", 0x200, size=256, role="weight", static=True)
    dev.write(x.ranges[0], bytes(range(64)))
    dev.write(ws.ranges[0], b"\x11" * 256)
    gemm = Node(kind="kernel", index=0, func=1, args=[("ptr", x, 0), ("ptr", ws, 0)])
    reduce = Node(kind="kernel", index=1, func=1, args=[("ptr", ws, 0), ("ptr", out, 0)])
    dev.kernels[0] = lambda d, blob: d.write(ws.ranges[0], bytes((3 * v) & 0xFF for v in d.read(x.ranges[0], 64)))
    dev.kernels[1] = lambda d, blob: d.write(out.ranges[0], bytes((v + 1) & 0xFF for v in d.read(ws.ranges[0], 64)))
    alone = Alone(dev, [gemm, reduce], {1: Kernel(symbol="k", layout=[(0, 8), (8, 8)])})
    assert alone.block_ignored([0, 1], (ws.ranges[0], ws.size), str) == (None, 64)
    assert "they read them" in alone.block_ignored([1], (ws.ranges[0], ws.size), str)[0]
    assert "they read them" in alone.block_ignored([1, 0], (ws.ranges[0], ws.size), str)[0]  # (order matters)
    assert dev.read(ws.ranges[0], 256) == b"\x11" * 256 and dev.read(out.ranges[0], 64) == bytes(64)

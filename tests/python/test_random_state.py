"""random_state.py's pure parts and the random-number state's relocations: which
parameters are a captured PhiloxCudaState, and the words pointing at the generator's
seed and offset tensors resolved to the buffer `rng` (its seed at 0, its offset at 8) in
every capture, capture C (paired through its allocations) included."""
import struct

from pgcc.graphfile import graph_text
from pgcc.random_state import PHILOX_BYTES, candidates
from pgcc.relocate import Allocations, Buffers, Relocator

SEED, OFFSET = 0x7ff7_c000_0000, 0x7ff7_c000_0200  # the generator's two tensors: outside the captures


def philox(seed=SEED, offset=OFFSET, intra=8, captured=1, pad=b"\0" * 7):
    return struct.pack("<QQQB", seed, offset, intra, captured) + pad


def test_a_captured_philox_state_is_a_candidate():
    # ATen's fused dropout: three 216-byte structs, two u32s, then the state at 656 (as probed on an H200)
    blob = bytes(656) + philox()
    layout = [(0, 216), (216, 216), (432, 216), (648, 4), (652, 4), (656, 32)]
    assert candidates(blob, layout) == [(SEED, OFFSET)]
    assert PHILOX_BYTES == 32


def test_what_is_not_a_captured_philox_state():
    layout = [(0, 32)]
    assert candidates(philox(captured=0), layout) == []  # eager: seed and offset by value
    assert candidates(philox(seed=0), layout) == []
    assert candidates(philox(offset=SEED), layout) == []
    assert candidates(philox(intra=1 << 50), layout) == []  # no offset within a graph is that large
    assert candidates(philox(), [(0, 24), (24, 8)]) == []  # not one 32-byte parameter
    assert candidates(philox()[:31], layout) == []  # (bytes cut short)
    assert candidates(philox(pad=b"\xab" * 7), layout) == [(SEED, OFFSET)]  # padding is anything


def rng_setup(paired_c=True):
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges={0: 0x7000_0000_0000, 1: 0x7000_0010_0000})
    rng = bufs.add(name="rng", size=16, role="rng", places={c: {SEED: 0, OFFSET: 8} for c in range(3)})
    pool = [0x7300_0000_0000, 0x7300_0100_0000]
    blocks = [[(p, 4096), (SEED, 512), (OFFSET, 512)] for p in pool] + [[(0x19_5000_0000, 1 << 21)]]
    regions = [[(p, 4096)] for p in pool] + [[(0x19_5000_0000, 1 << 21)]]
    paired = {2: Allocations([(0x19_5000_0000, 1024)], [(pool[0], 1024)])}
    return bufs, rng, Relocator(bufs, blocks, regions, paired=paired)


def test_the_generator_tensors_are_the_rng_buffer_in_every_capture():
    bufs, rng, rel = rng_setup()
    assert rel.resolve((SEED, SEED, SEED), "node 3") == (rng, 0)
    assert rel.resolve((OFFSET, OFFSET, OFFSET), "node 3") == (rng, 8)
    assert rel.at(2, rng, 8) == {OFFSET} and rel.at(2, rng, 0) == {SEED}
    assert rel.problems == [] and [b.name for b in bufs.list] == ["in0", "rng"]  # no static block t0 made


def test_a_capture_whose_word_is_elsewhere_disagrees():
    bufs, rng, rel = rng_setup()
    assert rel.resolve((SEED, SEED, OFFSET), "node 3") is None
    assert len(rel.problems) == 1 and "node 3" in rel.problems[0]


def test_the_graph_names_the_state_with_its_increment():
    bufs = Buffers()
    rng = bufs.add(name="rng", size=16, role="rng", places={0: {SEED: 0, OFFSET: 8}}, increment=12)
    text = graph_text("m", {}, bufs, {id(rng)}, [], [], "sm_90")
    assert "buffer rng size 16 role rng increment 12;" in text

"""relocate.py on synthetic captures: the words of two or three captures of one program,
with its buffers at different addresses, solved to (buffer, offset); and the cases
that must fail."""
import struct

from pgcc.model import PtrWord, Relocation
from pgcc.relocate import Allocations, Buffers, Relocator, used_extent

# where things are in each capture (capture 0, 1, 2)
IN = [0x7000_0000_0000, 0x7000_0010_0000, 0x7000_0020_0000]
OUT = [0x7100_0000_0000, 0x7100_0010_0000, 0x7100_0020_0000]
W = 0x7200_0000_0000  # a weight: the same in every capture
POOL = [0x7300_0000_0000, 0x7300_0100_0000, 0x7300_0200_0000]  # each capture's private pool segment
WORKSPACE = 0x7400_0000_0000  # allocated before the captures: the same everywhere


def setup(n=2, regions=True, foreign=None):
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges={c: IN[c] for c in range(n)})
    bufs.add(name="out0", size=1024, role="output", ranges={c: OUT[c] for c in range(n)})
    bufs.add(name="w_a", size=4096, role="weight", ranges={c: W for c in range(n)})
    blocks = [sorted([(POOL[c], 2048), (POOL[c] + 2048, 1024), (WORKSPACE, 1 << 20)]) for c in range(n)]
    regs = [[(POOL[c], 4096)] for c in range(n)] if regions else None
    return bufs, Relocator(bufs, blocks, regs, foreign=foreign)


def words(*vals):
    return b"".join(struct.pack("<Q", v) for v in vals)


def test_known_buffers_and_intermediates_two_captures():
    bufs, rel = setup()
    b, off = rel.resolve((IN[0] + 16, IN[1] + 16), "w")
    assert (b.name, off) == ("in0", 16)
    b, off = rel.resolve((W + 8, W + 8), "w")
    assert (b.name, off) == ("w_a", 8)
    # an intermediate: a region of each capture's pool, one buffer however many words reach it
    t, off = rel.resolve((POOL[0] + 2100, POOL[1] + 2100), "w")
    assert (t.name, t.role, t.size, off) == ("t0", "intermediate", 4096, 2100)
    again, off = rel.resolve((POOL[0], POOL[1]), "w")
    assert again is t and off == 0
    assert rel.problems == []


def test_three_captures_agree():
    bufs, rel = setup(n=3)
    b, off = rel.resolve(tuple(OUT[c] + 4 for c in range(3)), "w")
    assert (b.name, off) == ("out0", 4)
    t, off = rel.resolve(tuple(POOL[c] + 8 for c in range(3)), "w")
    assert t.ranges == {0: POOL[0], 1: POOL[1], 2: POOL[2]} and off == 8
    assert rel.problems == []


def test_three_captures_one_disagrees():
    bufs, rel = setup(n=3)
    assert rel.resolve((IN[0] + 16, IN[1] + 16, IN[2] + 32), "node 3") is None
    assert len(rel.problems) == 1
    assert "node 3" in rel.problems[0] and "in0+32 in capture C" in rel.problems[0]


def test_pointer_into_different_buffers():
    bufs, rel = setup()
    assert rel.resolve((IN[0], OUT[1]), "node 1") is None
    assert "in0+0 in capture A, out0+0 in capture B" in rel.problems[0]


def test_changing_word_that_points_nowhere_fails():
    bufs, rel = setup()
    assert rel.resolve((1234, 5678), "node 2, parameter bytes 0..8") is None
    assert len(rel.problems) == 1 and "points into no allocation" in rel.problems[0]


def test_intermediate_moved_within_region_fails():
    bufs, rel = setup()
    rel.resolve((POOL[0] + 64, POOL[1] + 64), "a")
    assert rel.resolve((POOL[0] + 128, POOL[1] + 256), "b") is None
    assert "t0+128 in capture A, t0+256 in capture B" in rel.problems[0]


def test_regions_of_different_sizes_fail():
    bufs = Buffers()
    blocks = [[(POOL[0], 4096)], [(POOL[1], 4096)]]
    rel = Relocator(bufs, blocks, [[(POOL[0], 4096)], [(POOL[1], 2048)]])
    assert rel.resolve((POOL[0], POOL[1]), "x") is None
    assert "regions of different sizes" in rel.problems[0]


def test_without_regions_the_allocator_block_is_the_buffer():
    bufs, rel = setup(regions=False)
    t, off = rel.resolve((POOL[0] + 2050, POOL[1] + 2050), "w")
    assert (t.size, off, t.ranges) == (1024, 2, {0: POOL[0] + 2048, 1: POOL[1] + 2048})


def test_static_block_and_constants_and_foreign_words():
    foreign = {0x5555_0000_1000: "host memory of this process (stack)"}
    bufs, rel = setup(foreign=foreign.get)
    t, off = rel.resolve((WORKSPACE + 64, WORKSPACE + 64), "w")
    assert (t.role, t.static, t.tensor, off) == ("weight", True, "__static_0", 64)
    assert rel.resolve((42, 42), "w") is None  # a constant
    assert rel.resolve((0x5555_0000_1000, 0x5555_0000_1000), "node 7") is None
    assert rel.foreign_words == ["node 7: 0x555500001000, host memory of this process (stack)"]
    assert rel.problems == []


def test_memory_allocated_while_capture_a_ran_and_used_again_is_static():
    # A library allocates its workspace from capture A's pool (the first capture that
    # needs it) and keeps it: B and C use it again, at the same address, inside A's region.
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges={c: IN[c] for c in range(3)})
    lib = POOL[0] + 2048  # the library's block, in A's segment after A's own allocation
    allocs = [[(POOL[0], 2048), (lib, 1024)], [(POOL[1], 2048)], [(POOL[2], 2048)]]
    blocks = [sorted({(POOL[c], 2048), (lib, 1024)}) for c in range(3)]
    paired = {c: Allocations(allocs[c], allocs[0]) for c in (1, 2)}
    rel = Relocator(bufs, blocks, [[(POOL[0], 3072)], [(POOL[1], 2048)], [(POOL[2], 2048)]], paired=paired)
    t, off = rel.resolve(tuple(POOL[c] + 8 for c in range(3)), "a")  # A's own intermediate
    assert (t.role, off) == ("intermediate", 8)
    s, off = rel.resolve((lib + 16,) * 3, "b")
    assert (s.role, s.static, s.size, off) == ("weight", True, 1024, 16)
    assert rel.resolve((lib,) * 3, "c")[0] is s  # the same block again, though A's region holds it
    assert rel.resolve(tuple(POOL[c] + 8 for c in range(3)), "d")[0] is t
    assert rel.problems == []


def test_kernel_args():
    foreign = {0x5555_0000_1000: "host memory"}
    bufs, rel = setup(foreign=foreign.get)
    layout = [(0, 8), (8, 4), (16, 24), (40, 8)]
    # a pointer; an int; a struct {ptr into the pool, int64 7, host pointer}; a constant u64
    a = words(IN[0] + 8) + struct.pack("<I", 5) + b"\0" * 4 + words(POOL[0] + 16, 7, 0x5555_0000_1000) + words(99)
    b = words(IN[1] + 8) + struct.pack("<I", 5) + b"\0" * 4 + words(POOL[1] + 16, 7, 0x5555_0000_1000) + words(99)
    ptr_words = set()
    args = rel.kernel_args(layout, [a, b], "node 0", ptr_words)
    assert args[0][0] == "ptr" and args[0][1].name == "in0" and args[0][2] == 8
    assert args[1] == ("value", struct.pack("<I", 5))
    kind, raw, ptrs = args[2]
    assert kind == "bytes" and [(at, p.name, off, k) for at, p, off, k in ptrs] == [(0, "t0", 16, "abs64")]
    assert raw[16:24] == b"\0" * 8  # the host pointer, written as null
    assert args[3] == ("value", words(99))
    assert ptr_words == {(0, 0, "abs64"), (16, 0, "abs64")}
    assert rel.problems == [] and len(rel.foreign_words) == 1
    # the relocations are the model's records, their fields named
    assert all(isinstance(w, PtrWord) for w in ptr_words) and {(w.param, w.kind) for w in ptr_words} == \
        {(0, "abs64"), (16, "abs64")}
    assert isinstance(ptrs[0], Relocation) and (ptrs[0].buffer.name, ptrs[0].offset) == ("t0", 16)


def test_kernel_args_seed_that_changes_fails():
    bufs, rel = setup()
    args = rel.kernel_args([(0, 4)], [struct.pack("<I", 1), struct.pack("<I", 2)], "node 9", set())
    assert args == [("value", struct.pack("<I", 1))]
    assert rel.problems == ["node 9: parameter at 0 (4 bytes) differs between the captures and holds no "
                            "pointer (a seed or a counter?)"]


# ---- relocation kinds, from three captures whose buffers differ in low and high bits

IN3 = [0x7000_1234_5600, 0x7000_2234_9a00, 0x7005_0230_0100]  # C past a spacer: other high bits
OUT3 = [0x7100_0000_0000, 0x7100_0040_0000, 0x7106_0000_8000]


def setup3():
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges=dict(enumerate(IN3)))
    bufs.add(name="out0", size=1024, role="output", ranges=dict(enumerate(OUT3)))
    bufs.add(name="w_a", size=4096, role="weight", ranges={c: W for c in range(3)})
    blocks = [[(WORKSPACE, 1 << 20)]] * 3
    return bufs, Relocator(bufs, blocks, None)


def blobs_of(make):
    return [make(c) for c in range(3)]


def test_kinds_whole_at_4_low_and_high_halves():
    """cuDNN-like: a 40-byte struct with a whole address at offset 4 (4-byte aligned), the
    low half of out0+64 at 16 and its high half at 24 (split, an int between), the low
    half of in0+8 at 28 (truncated, its whole address not in the struct), and an int at
    32.  (Halves side by side in order are a whole address: abs64.)"""
    bufs, rel = setup3()

    def make(c):
        b = bytearray(40)
        struct.pack_into("<Q", b, 4, IN3[c])
        struct.pack_into("<III", b, 16, (OUT3[c] + 64) & 0xFFFFFFFF, 9, (OUT3[c] + 64) >> 32)
        struct.pack_into("<I", b, 28, (IN3[c] + 8) & 0xFFFFFFFF)
        struct.pack_into("<I", b, 32, 7)
        return bytes(b)

    ptr_words, suspects = set(), []
    args = rel.kernel_args([(0, 40)], blobs_of(make), "node 1", ptr_words, suspects)
    kind, raw, ptrs = args[0]
    assert kind == "bytes"
    got = [(at, p.name, off, k) for at, p, off, k in ptrs]
    assert got == [(4, "in0", 0, "abs64"), (16, "out0", 64, "lo32"), (24, "out0", 64, "hi32"), (28, "in0", 8, "lo32")]
    assert ptr_words == {(0, 4, "abs64"), (0, 16, "lo32"), (0, 24, "hi32"), (0, 28, "lo32")}
    assert suspects == [] and rel.problems == []


def test_a_high_half_alone_is_not_believed():
    """The high half of an address with no low half or whole address beside it names no
    place (every buffer in the same 4 GiB shares it): a suspect, not a relocation."""
    bufs, rel = setup3()
    ptr_words, suspects = set(), []
    args = rel.kernel_args([(0, 8)], blobs_of(lambda c: struct.pack("<II", 5, OUT3[c] >> 32)), "node 2", ptr_words,
                           suspects)
    # (0x7100, 0x7100, 0x7106: only byte 4 changes) that byte zeroed, the constant 0x71 kept
    assert args == [("value", struct.pack("<II", 5, 0x7100))]
    assert ptr_words == set()
    assert [(a, n) for a, n, _ in suspects] == [(4, 1)]


def test_a_low_half_that_fits_no_buffer_is_a_suspect():
    bufs, rel = setup3()
    suspects = []
    args = rel.kernel_args([(0, 4)], blobs_of(lambda c: struct.pack("<I", 0x1000 + 16 * c)), "node 3", set(),
                           suspects)
    # 0x1000, 0x1010, 0x1020: byte 0 changes, byte 1 (0x10) does not and keeps its value
    assert args == [("value", struct.pack("<I", 0x1000))] and suspects == [(0, 1, suspects[0][2])]
    assert "changes between the captures" in suspects[0][2] and rel.problems == []


def test_a_constant_byte_beside_changing_ones_keeps_its_value():
    """ATen's multi-tensor and reduce kernels on a GPU (the AdamW steps): a 4-byte word
    whose first byte is a field the kernel reads (20, in every capture) and whose next
    byte is padding holding what the host's stack held (0x7f in one capture, 0 in the
    others).  Only the changing byte is a suspect; the field keeps its 20 in the export
    (and in the replays that prove the padding irrelevant), where zeroing the whole word
    made the kernel read 0."""
    bufs, rel = setup3()
    suspects = []
    args = rel.kernel_args([(0, 8)], [struct.pack("<II", 7, 0x7F14), struct.pack("<II", 7, 0x14),
                                      struct.pack("<II", 7, 0x14)], "node 4", set(), suspects)
    assert args == [("value", struct.pack("<II", 7, 0x14))]
    assert [(a, n) for a, n, _ in suspects] == [(5, 1)] and rel.problems == []


def test_a_coincidence_in_two_captures_is_refused_by_the_third():
    """A word that equals in0's low half in captures A and B but not in C: no relocation."""
    bufs, rel = setup3()
    vals = [IN3[0] & 0xFFFFFFFF, IN3[1] & 0xFFFFFFFF, 0x1234]
    suspects = []
    rel.kernel_args([(0, 4)], [struct.pack("<I", v) for v in vals], "node 4", set(), suspects)
    assert len(suspects) == 1


def test_foreign_words_become_suspects():
    """A constant word that is an address of this process (not of the export) is a suspect,
    zeroed, to be proven irrelevant by replay, not a silent null."""
    bufs = Buffers()
    rel = Relocator(bufs, [[], [], []], None, foreign={0x5555_0000_1000: "host memory"}.get)
    suspects = []
    args = rel.kernel_args([(0, 16)], [words(0x5555_0000_1000, 3)] * 3, "node 5", set(), suspects)
    assert args == [("value", words(0, 3))]
    assert [(a, n) for a, n, _ in suspects] == [(0, 8)] and "this process owns" in suspects[0][2]


# ---- capture C in memory laid out otherwise: checked through its allocations

def paired_setup():
    """A and B: one pool segment each (regions); C: its allocations elsewhere, packed
    otherwise (an expandable segment), paired with A's by order: two allocations of
    1024 and 512 bytes, the second reusing nothing."""
    from pgcc.relocate import Allocations
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges={0: IN[0], 1: IN[1], 2: 0x19_4800_0000})
    allocs_a = [(POOL[0], 1024), (POOL[0] + 1024, 512)]
    allocs_c = [(0x19_5000_0000, 1024), (0x19_5000_2000, 512)]  # 8 KiB apart, not 1 KiB
    blocks = [[(POOL[c], 1536)] for c in range(2)] + [[(0x19_5000_0000, 1 << 21)]]
    regions = [[(POOL[0], 1536)], [(POOL[1], 1536)], [(0x19_5000_0000, 1 << 21)]]
    return bufs, Relocator(bufs, blocks, regions, paired={2: Allocations(allocs_c, allocs_a)})


def test_capture_c_through_its_allocations():
    bufs, rel = paired_setup()
    # the second allocation, 16 bytes in: A and B through their regions, C through pairing
    t, off = rel.resolve((POOL[0] + 1024 + 16, POOL[1] + 1024 + 16, 0x19_5000_2000 + 16), "w")
    assert (t.name, off) == ("t0", 1040) and 2 not in t.ranges
    assert rel.at(2, t, off) == {0x19_5000_2010}
    # a known buffer: C's range directly
    assert rel.resolve((IN[0], IN[1], 0x19_4800_0000), "w")[0].name == "in0"
    assert rel.problems == []


def test_capture_c_at_another_allocation_fails():
    bufs, rel = paired_setup()
    # C's word is in the first allocation while A's is in the second
    assert rel.resolve((POOL[0] + 1024 + 16, POOL[1] + 1024 + 16, 0x19_5000_0000 + 16), "node 2") is None
    assert len(rel.problems) == 1 and "capture C" in rel.problems[0] and "node 2" in rel.problems[0]


def test_low_half_of_an_intermediate_checked_in_capture_c():
    bufs, rel = paired_setup()
    t, off = rel.resolve((POOL[0] + 1024, POOL[1] + 1024, 0x19_5000_2000), "w")  # makes t0
    lo = [(POOL[0] + 1024 + 64) & 0xFFFFFFFF, (POOL[1] + 1024 + 64) & 0xFFFFFFFF, (0x19_5000_2000 + 64) & 0xFFFFFFFF]
    assert rel.truncated(lo, "lo32") == (t, 1088)
    lo[2] ^= 0x100  # not where C's allocation is
    assert rel.truncated(lo, "lo32") is None


def test_allocations_pair_only_the_same_program():
    from pgcc.relocate import Allocations
    assert Allocations.pairable([(1, 8), (9, 4)], [(100, 8), (200, 4)])
    assert not Allocations.pairable([(1, 8), (9, 4)], [(100, 8), (200, 8)])
    assert not Allocations.pairable(None, [(100, 8)])
    # capture 0 with allocations the other has not (seen: two more, in every model): aligned by size
    a = Allocations([(1, 8), (9, 4), (13, 16)], [(500, 64), (100, 8), (200, 4), (300, 16), (600, 64)])
    assert a.pairs == [((1, 8), (100, 8)), ((9, 4), (200, 4)), ((13, 16), (300, 16))] and a.unpaired == 0
    assert a.to_first(10) == {201} and a.from_first(305) == {18}
    assert a.to_first(600) == set()  # in no allocation: never guessed


def test_stale_word_that_looks_like_a_pointer_in_one_capture_is_a_suspect():
    """ATen's multi-tensor metadata: unused slots hold stale stack bytes, which in one
    capture happened to be an address of the pool and in the others were not.  With
    suspects collected, that is a suspect for the replay proof, not a problem."""
    bufs, rel = paired_setup()
    blobs = [words(POOL[0] + 1024), words(0xF3CF3BFFF1567800), words(0)]
    suspects = []
    args = rel.kernel_args([(0, 8)], blobs, "node 0", set(), suspects)
    # bytes 1..7 differ between the captures; byte 0 is 0 in all three and stays so
    assert args == [("value", bytes(8))] and [(a, n) for a, n, _ in suspects] == [(1, 7)]
    assert rel.problems == []
    # without suspects (the strict, two-capture behaviour) it is a problem, as before
    rel.resolve((POOL[0] + 1024, 0xF3CF3BFFF1567800, 0), "node 0")
    assert len(rel.problems) == 1


def test_an_output_whose_memory_held_another_tensor_first_is_the_regions():
    # ViT in bf16: capture A's output (4000 bytes) was allocated where a 151 KB
    # intermediate had been; a kernel writing that intermediate points at the output's
    # address.  Mapping it to the output would write 151 KB into 4000 bytes.
    from pgcc.node_mapping import reused
    allocs = [(POOL[0], 151296), (POOL[0] + 151552, 1024), (POOL[0], 4000)]
    assert reused(allocs, POOL[0], 4000)
    assert not reused(allocs, POOL[0] + 151552, 1024)
    assert not reused([(POOL[0] + 8192, 64)], POOL[0], 4000)
    bufs = Buffers()
    out = bufs.add(name="out0", size=4000, role="output", ranges={c: POOL[c] for c in range(2)}, aliased=True)
    rel = Relocator(bufs, [[(POOL[c], 1 << 20)] for c in range(2)], [[(POOL[c], 1 << 20)] for c in range(2)])
    t, off = rel.resolve((POOL[0] + 16, POOL[1] + 16), "w")
    assert t is not out and (t.role, off) == ("intermediate", 16)
    assert rel.problems == []


# ---- how much of a region the program uses (slot_layout.place_intermediates, where a region is not split) -----------------

REGION = 0x7F0000000000
# capture A's allocations in the region: two tensors, then a 1 MiB one no node points into
ALLOCS = [(REGION, 8192), (REGION + 8192, 512), (REGION + 8704, 1 << 20)]


def test_a_region_ends_with_the_last_allocation_pointed_into():
    size = 8704 + (1 << 20)
    assert used_extent(REGION, size, ALLOCS, [(0, 0), (8192, 0)]) == 8704
    assert used_extent(REGION, size, ALLOCS, [(0, 0)]) == 8192
    assert used_extent(REGION, size, ALLOCS, [(9000, 0)]) == size  # (a pointer into the big one keeps it)


def test_an_allocation_reaches_to_its_end_from_anywhere_inside():
    """A kernel given a pointer into an allocation may touch all of it."""
    assert used_extent(REGION, 8704 + (1 << 20), ALLOCS, [(100, 0)]) == 8192


def test_what_a_copy_or_memset_covers_counts_and_sizes_round_up():
    allocs = [(REGION, 1000), (REGION + 1024, 4096)]
    assert used_extent(REGION, 8192, allocs, [(0, 0)]) == 1024  # 1000 bytes, rounded as the allocator does
    assert used_extent(REGION, 8192, allocs, [(1024, 3000)]) == 5120


def test_a_pointer_at_an_allocations_end_counts_as_in_it():
    assert used_extent(REGION, 8704 + (1 << 20), ALLOCS, [(8192, 0)]) == 8704  # (also the next one's start)
    allocs = [(REGION, 4096)]
    assert used_extent(REGION, 8192, allocs, [(4096, 0)]) == 4096


def test_what_the_trace_does_not_explain_is_kept():
    allocs = [(REGION, 4096)]
    assert used_extent(REGION, 16384, allocs, [(0, 0), (8192, 0)]) == 16384  # a pointer in no allocation
    assert used_extent(REGION, 16384, allocs, []) == 16384  # no reference at all
    assert used_extent(REGION, 2048, [(REGION, 4096)], [(0, 0)]) == 2048  # never more than the region


def test_allocations_outside_the_region_do_not_count():
    allocs = [(REGION - 8192, 8192), (REGION + 512, 512)]  # (one ends where the region starts)
    assert used_extent(REGION, 8192, allocs, [(600, 0)]) == 1024
    assert used_extent(REGION, 8192, [(REGION + 8192, 4096)], [(0, 0)]) == 8192  # (after it: no allocation holds it)


def _linear_pairs(alloc, side, v):  # (Allocations' lookups as they were: a scan of every pair)
    return {(m, f) for m, f in alloc.pairs if (m, f)[side][0] <= v <= (m, f)[side][0] + (m, f)[side][1]}


def test_indexes_give_what_the_linear_searches_give():
    """BufferIndex, Spans and Allocations' lookups are searches by bisection that stand in
    for scans of every buffer, block and pair: on random layouts with overlapping
    buffers, aliased outputs, buffers whose bytes lie apart, buffers added after the
    index was built and allocations reused in turn, each answers every address as the
    scan does (the first match in list order)."""
    import random
    from pgcc.relocate import BufferIndex, Spans, block_of
    rng = random.Random(7)
    for trial in range(40):
        bufs, index = Buffers(), None
        for k in range(rng.randrange(1, 120)):
            base = 0x1000 * rng.randrange(64)
            if rng.random() < 0.05:  # bytes apart: only the addresses listed
                b = bufs.add(name=f"r{k}", size=16, role="rng", ranges={})
                b.places = {0: {base + 8: 0, base + 0x40: 8}, 1: {base: 0}}
            else:
                b = bufs.add(name=f"b{k}", size=rng.choice([0, 16, 0x800, 0x1000, 0x5000]), role="weight",
                             ranges={0: base + rng.randrange(0, 64, 8), 1: base})
            b.aliased = rng.random() < 0.1
            if k == 30:
                index = BufferIndex(bufs)  # built before the rest are added
        index = index or BufferIndex(bufs)
        for _ in range(300):
            cap, addr = rng.randrange(2), rng.randrange(-0x100, 66 * 0x1000)
            assert index.find(cap, addr) == bufs.find(cap, addr), (trial, cap, hex(addr))
        blocks = sorted((0x100 * rng.randrange(400), rng.choice([0x10, 0x100, 0x800]))
                        for _ in range(rng.randrange(60)))
        spans = Spans(blocks)
        for addr in range(-0x10, 0x100 * 410, 0x3f):
            assert spans.holding(addr) == block_of(blocks, addr), (trial, hex(addr))
        first = [(0x100 * rng.randrange(200), 0x100 * rng.randrange(1, 8)) for _ in range(rng.randrange(1, 80))]
        mine = [(a + 0x10000, s) for a, s in first]
        alloc = Allocations(mine, first)
        for v in range(0, 0x100 * 210, 0x40):
            assert alloc.from_first(v) == {m[0] + (v - f[0]) for m, f in _linear_pairs(alloc, 1, v)}
            assert alloc.to_first(v + 0x10000) == {f[0] + (v + 0x10000 - m[0]) for m, f in
                                                   _linear_pairs(alloc, 0, v + 0x10000)}

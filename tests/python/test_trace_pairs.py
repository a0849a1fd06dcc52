"""trace_pairs.py: the allocations two captures made before their reads, paired through
their allocator traces; where each place the other path uses after the read goes."""
import pytest

from pgcc.trace_pairs import Pairing, read_index


def test_the_read_cuts_the_trace_where_its_counts_are_reached():
    trace = [("alloc", 1, 8), ("alloc", 2, 8), ("free_requested", 1, 8), ("free_completed", 1, 8), ("alloc", 3, 8)]
    assert read_index(trace, (2, 1)) == 3
    assert read_index(trace, (0, 0)) == 0 and read_index(trace, (3, 1)) == 5
    with pytest.raises(ValueError, match="fewer than the read's"):
        read_index(trace, (4, 0))


def paths():
    """This path: two 8-byte tensors only it makes, P at 0x1000, Q at 0x2000, P freed, Z
    in P's block; the other path: P' at 0x9000, Q' at 0xa000, P' freed, Z' in P''s block,
    an extra tensor at 0xc000 only it makes, and after its read one at 0xb000."""
    ta = [("alloc", 0x100, 8), ("alloc", 0x200, 8), ("alloc", 0x1000, 512), ("alloc", 0x2000, 512),
          ("free_requested", 0x1000, 512), ("alloc", 0x3000, 256), ("alloc", 0x5000, 64)]
    tb = [("alloc", 0x9000, 512), ("alloc", 0xa000, 512), ("free_requested", 0x9000, 512),
          ("alloc", 0x9000, 256), ("alloc", 0xc000, 128), ("alloc", 0xb000, 64)]
    return ta, tb


def test_allocations_are_paired_by_their_place_in_the_aligned_traces():
    ta, tb = paths()
    p = Pairing(ta, 6, tb, 5)
    assert p.agrees(0x9000, 0x1000) and p.agrees(0x9000, 0x3000)  # (P' then Z': both in that block, in turn)
    assert p.agrees(0xa010, 0x2010) and not p.agrees(0xa010, 0x2020) and not p.agrees(0xc000, 0x100)
    assert p.at_read(0x9010) == ("moved", 0x3010)  # (Z', live at the read: where this path put Z)
    assert p.at_read(0xa1ff) == ("moved", 0x21ff)
    assert p.at_read(0xb000) == ("own", None) and p.at_read(0x9100) == ("own", None)
    with pytest.raises(ValueError, match="has no counterpart"):
        p.at_read(0xc010)


def test_a_live_tensor_whose_bytes_are_taken_again_after_the_read_is_refused():
    ta, tb = paths()
    tb.append(("alloc", 0xa100, 64))  # (after the read: inside Q''s bytes, freed and reused)
    p = Pairing(ta, 6, tb, 5)
    with pytest.raises(ValueError, match="allocated again after the read"):
        p.at_read(0xa000)
    assert p.at_read(0x9000) == ("moved", 0x3000)

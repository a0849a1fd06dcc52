"""capture_set.first_difference: where two captures of one callable differ, for the
message that refuses it."""
from types import SimpleNamespace


def test_two_captures_first_difference_is_named():
    from pgcc.capture_set import first_difference

    def cap(names, edges):
        return SimpleNamespace(nodes=[{"type": 0, "name": n} if n else {"type": 2} for n in names], edges=edges)
    a = cap(["gemm", None, "relu"], [(0, 1), (1, 2)])
    assert first_difference(a, cap(["gemm", "relu", None], [(0, 1), (1, 2)]), "B") == \
        "3 nodes in A, 3 in B; node 1 is memset in A, relu in B"
    assert first_difference(a, cap(["gemm", None, "relu", "add"], [(0, 1), (1, 2)]), "C") == \
        "3 nodes in A, 4 in C; node 3, add, is in C only, after the nodes both have"
    assert first_difference(a, cap(["gemm", None, "relu"], [(0, 2), (1, 2)]), "B").endswith(
        "edge 0 is (0, 1) in A, (0, 2) in B")


def test_two_captures_allocator_traces_first_difference_is_named():
    """capture.first_trace_difference: the first event whose action or size differs,
    addresses aside, for the log of paths that do not join."""
    from pgcc.capture import first_trace_difference

    def cap(events, base):
        return SimpleNamespace(trace=[(act, base + k * 4096, size) for k, (act, size) in enumerate(events)])
    a = cap([("alloc", 512), ("alloc", 1024), ("free_requested", 512), ("alloc", 256)], 0x1000)
    b = cap([("alloc", 512), ("alloc", 1024), ("alloc", 2048)], 0x9000)
    said = first_trace_difference(a, b)
    assert "(4 and 3 events): first differ at event 2: ('free_requested', 512) against the other's ('alloc', 2048)" \
        in said and "after [('alloc', 512), ('alloc', 1024)]" in said
    assert first_trace_difference(a, cap([e[::2] for e in a.trace], 0)) == \
        "allocator traces: the same 4 events (actions and sizes)"
    assert first_trace_difference(a, SimpleNamespace(trace=None)) == "allocator traces: not recorded"

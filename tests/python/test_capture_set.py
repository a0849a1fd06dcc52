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


def test_two_captures_allocator_traces_differences_are_named():
    """capture.first_trace_difference: the stretches of events whose actions or sizes
    differ, aligned, addresses aside, for the log of paths that do not join."""
    from pgcc.capture import first_trace_difference

    def cap(events, base):
        return SimpleNamespace(trace=[(act, base + k * 4096, size) for k, (act, size) in enumerate(events)])
    common = [("alloc", 512), ("alloc", 1024), ("free_requested", 512), ("alloc", 256)]
    a = cap(common + [("alloc", 64)], 0x1000)
    b = cap([("free_requested", 768)] + common + [("alloc", 128)], 0x9000)
    said = first_trace_difference(a, b)
    assert said.startswith("allocator traces (5 and 6 events) differ in 2 places: ")
    assert "insert at 0/0: [] against [free_requested 768]" in said
    assert "replace at 4/5: [alloc 64] against [alloc 128]" in said
    assert first_trace_difference(a, cap([e[::2] for e in a.trace], 0)) == \
        "allocator traces: the same 5 events (actions and sizes)"
    assert first_trace_difference(a, SimpleNamespace(trace=None)) == "allocator traces: not recorded"


def test_where_each_allocator_event_was_made_is_named():
    """capture.trace_where: each kept event's innermost frame, and the innermost outside
    torch's files where that is another; first_trace_difference shows them where a
    capture has them (PGCC_TRACE_STACKS=1)."""
    from pgcc.capture import first_trace_difference, trace_where
    torch_file = "/venv/lib/python3.12/site-packages/torch/amp/grad_scaler.py".replace("/", __import__("os").sep)
    entries = [{"action": "alloc", "addr": 1, "size": 8,
                "frames": [{"filename": torch_file, "line": 290, "name": "unscale_"},
                           {"filename": "/work/steps.py", "line": 124, "name": "step"}]},
               {"action": "segment_alloc", "addr": 0, "size": 2 << 20},
               {"action": "free_requested", "addr": 1, "size": 8,
                "frames": [{"filename": "/tmp/torchinductor_u/ab/cabc.py", "line": 77, "name": "call"}]},
               {"action": "alloc", "addr": 2, "size": 16}]
    assert trace_where(entries) == ["grad_scaler.py:290 < steps.py:124", "cabc.py:77", None]
    a = SimpleNamespace(trace=[("alloc", 1, 8), ("alloc", 2, 16)], trace_where=["steps.py:3", None])
    b = SimpleNamespace(trace=[("alloc", 9, 16)], trace_where=[None])
    assert "delete at 0/0: [alloc 8 at steps.py:3] against []" in first_trace_difference(a, b)


def test_an_empty_stretch_between_two_reads_walks(monkeypatch):
    """Capture.walk_all over stretches with no nodes (two reads in a row, as a generation
    loop's capture has): read, sync, read, sync, each waiting for the one before."""
    import pgcc.capture as capture

    class Driver:
        def GraphGetNodes(self, _g, arr, n):  # noqa: N802 -- (the driver's name)
            assert arr is None  # (an empty graph: the count alone is asked for)
            n._obj.value = 0
            return 0
    monkeypatch.setattr(capture, "cu", Driver)
    cap = capture.Capture.__new__(capture.Capture)
    cap.segments = [SimpleNamespace(raw_cuda_graph=lambda: 0x1000) for _ in range(3)]
    cap.reads = [{"op": "item"}, {"op": "item"}]
    assert cap.walk(0x1000) == ([], [], 0, [], {})
    cap.walk_all()
    assert [n["type"] for n in cap.nodes] == ["read", "sync", "read", "sync"]
    assert cap.edges == [(0, 1), (1, 2), (2, 3)]

"""slots.py: capture regions split into the allocations the nodes use, from the
allocator's trace and the capture's order (no GPU needed)."""
from pgcc.slots import chain_order, clock_times, lifetimes, matched_times, split, up

BASE = 0x7F0000000000
R = "r"  # the one region's key


def trace(*events):
    """Events as (action, offset in the region, size)."""
    return [(a, BASE + off, size) for a, off, size in events]


def run(events, uses, size=1 << 20):
    t = trace(*events)
    return split({R: (BASE, size)}, lifetimes(t), [[(R, off, w) for off, w in u] for u in uses], len(t))[:3]


def test_lifetimes_pair_frees_with_the_allocation_live_there():
    t = trace(("alloc", 0, 100), ("alloc", 512, 100), ("free_requested", 0, 100), ("free_completed", 0, 100),
              ("alloc", 0, 200), ("segment_alloc", 0, 2 << 20))
    assert lifetimes(t) == [[BASE, 100, 0, 2], [BASE + 512, 100, 1, 6], [BASE, 200, 4, 6]]
    # a free the trace lost: the place is taken again, so the first allocation ended there
    assert lifetimes(trace(("alloc", 0, 8), ("alloc", 0, 8)))[0][3] == 1


def test_chain_order_follows_the_edges_not_the_numbering():
    assert chain_order(3, [(2, 0), (0, 1)]) == [2, 0, 1]
    assert chain_order(1, []) == [0]
    assert chain_order(0, []) == []
    assert chain_order(3, [(0, 1), (0, 2)]) is None  # a fork
    assert chain_order(3, [(0, 2), (1, 2)]) is None  # a join
    assert chain_order(4, [(0, 1), (2, 3)]) is None  # two pieces
    assert chain_order(2, [(0, 1), (1, 0)]) is None  # a cycle


def test_allocations_used_apart_become_slots_of_their_own():
    slots, at, whole = run([("alloc", 0, 4096), ("alloc", 4096, 1000), ("alloc", 8192, 4096)],
                           [[(0, 0), (4096, 0)], [(4100, 0), (8192, 0)]])
    assert whole == {}
    assert slots[R] == [(0, 4096), (4096, 1024), (8192, 4096)]  # (sizes rounded as the allocator rounds)
    assert at == {(0, 0): (0, 0), (0, 1): (1, 0), (1, 0): (1, 4), (1, 1): (2, 0)}


def test_memory_reused_is_told_apart_by_when_the_node_was_captured():
    # X at 0 is freed and Y made there; Z and W pin the nodes' times
    events = [("alloc", 0, 4096),                # 0: X
              ("alloc", 4096, 4096),             # 1: Z
              ("free_requested", 0, 4096),       # 2
              ("free_requested", 4096, 4096),    # 3
              ("alloc", 0, 4096),                # 4: Y, where X was
              ("alloc", 8192, 4096)]             # 5: W
    slots, at, whole = run(events, [[(0, 0), (4096, 0)],      # X and Z: captured after event 1, before 3
                                    [(0, 0), (8192, 0)]])     # at 0 with W: after event 5, so Y
    assert whole == {}
    assert slots[R] == [(0, 4096), (0, 4096), (4096, 4096), (8192, 4096)]
    x, y = at[0, 0][0], at[1, 0][0]
    assert x != y  # two buffers: pgcc may place them apart or together, as their uses allow
    assert at == {(0, 0): (0, 0), (0, 1): (2, 0), (1, 0): (1, 0), (1, 1): (3, 0)}
    # where a node's time is not pinned, the allocations that held its place are one slot
    slots, at, whole = run(events, [[(0, 0), (4096, 0)], [(0, 0)]])
    assert slots[R] == [(0, 4096), (4096, 4096)] and at[0, 0] == at[1, 0] == (0, 0)
    # Z freed only after Y is made: node 0 may be as late as Y, and X and Y are one slot
    events[2:5] = [("free_requested", 0, 4096), ("alloc", 0, 4096), ("free_requested", 4096, 4096)]
    slots, at, whole = run(events, [[(0, 0), (4096, 0)], [(0, 0), (8192, 0)]])
    assert slots[R] == [(0, 4096), (4096, 4096), (8192, 4096)] and at[0, 0] == at[1, 0] == (0, 0)


def test_a_pointer_is_in_the_allocation_it_starts_not_the_one_it_ends():
    slots, at, whole = run([("alloc", 0, 4096), ("alloc", 4096, 4096)], [[(0, 0)], [(4096, 0)]])
    assert slots[R] == [(0, 4096), (4096, 4096)] and at[1, 0] == (1, 0)
    # one past an allocation, where none starts: its end
    slots, at, whole = run([("alloc", 0, 4096), ("alloc", 8192, 4096)], [[(0, 0), (4096, 0)]])
    assert slots[R] == [(0, 4096)] and at[0, 1] == (0, 4096)


def test_a_place_the_trace_does_not_explain_keeps_the_region_whole():
    slots, at, whole = run([("alloc", 0, 4096)], [[(0, 0)], [(20000, 0)]])
    assert slots == {} and at == {}
    assert whole == {R: "node 1 points at offset 20000, which no allocation of the trace holds"}
    # a memset running past its allocation
    slots, at, whole = run([("alloc", 0, 4096), ("alloc", 4096, 4096)], [[(0, 8192)]])
    assert R in whole and "(8192 bytes)" in whole[R]
    # a memset inside one is that allocation's
    slots, at, whole = run([("alloc", 0, 4096), ("alloc", 4096, 4096)], [[(4096, 4096)]])
    assert slots[R] == [(4096, 4096)] and at[0, 0] == (0, 0)


def test_a_trace_whose_order_contradicts_the_nodes_splits_nothing():
    # node 0 uses Y, made after X was freed; node 1 uses X again
    events = [("alloc", 0, 4096), ("free_requested", 0, 4096), ("alloc", 8192, 4096)]
    slots, at, whole = run(events, [[(8192, 0)], [(0, 0)]])
    assert slots == {} and at == {}
    assert "node 1's places are not all live at any point of the allocator's trace after node 0's" in whole[R]
    # a node pointing at two allocations never live together
    slots, at, whole = run(events, [[(0, 0), (8192, 0)]])
    assert whole[R] == "node 0's places are not all live at any point of the allocator's trace"


def test_regions_are_split_each_on_its_own():
    t = trace(("alloc", 0, 4096), ("alloc", 1 << 21, 4096), ("alloc", (1 << 21) + 4096, 512))
    regions = {"a": (BASE, 8192), "b": (BASE + (1 << 21), 8192)}
    uses = [[("a", 0, 0), ("b", 4096, 0)], [("b", 100, 0), ("b", 8192 - 4096, 4)]]
    slots, at, whole, how = split(regions, lifetimes(t), uses, len(t))
    assert slots == {"a": [(0, 4096)], "b": [(0, 4096), (4096, 512)]}
    assert at == {(0, 0): (0, 0), (0, 1): (1, 0), (1, 0): (0, 100), (1, 1): (1, 0)}


def test_the_trace_keeps_allocations_and_frees_only():
    from pgcc.capture import trace_events
    entries = [{"action": "segment_alloc", "addr": 0, "size": 2 << 20}, {"action": "alloc", "addr": 0, "size": 8},
               {"action": "free_requested", "addr": 0, "size": 8}, {"action": "free_completed", "addr": 0, "size": 8},
               {"action": "snapshot", "addr": 0, "size": 0}]
    assert trace_events(entries) == [("alloc", 0, 8), ("free_requested", 0, 8), ("free_completed", 0, 8)]


def test_clock_times_place_each_count_in_the_trace():
    t = trace(("alloc", 0, 8), ("alloc", 512, 8), ("free_requested", 0, 8), ("free_completed", 0, 8),
              ("alloc", 0, 8))
    # (allocations, frees) made before each node: none; two; two and a free; three and a free
    assert clock_times(t, [(0, 0), (2, 0), (2, 1), (3, 1)]) == [0, 2, 3, 5]
    assert clock_times(t, [(4, 1)]) is None  # past the trace: the counts are not its
    assert clock_times(t, [(1, 1)]) is None  # no such point: a free before the second allocation
    assert clock_times(t, None) is None


# an Inductor-like step: X, the first kernel's input, is freed after it, and Z, the
# second kernel's output, is made in its place
REUSE = [("alloc", 0, 4096),              # 0: X
         ("alloc", 4096, 4096),           # 1: W, the first kernel's output
         ("free_requested", 0, 4096),     # 2: X's last use was the first kernel
         ("alloc", 0, 4096)]              # 3: Z
REUSE_USES = [[(0, 0), (4096, 0)],        # kernel 1: reads X, writes W
              [(4096, 0), (0, 0)]]        # kernel 2: reads W, writes Z


def test_without_times_a_place_reused_at_once_is_one_slot():
    t = trace(*REUSE)
    slots, at, whole, how = split({R: (BASE, 8192)}, lifetimes(t), [[(R, o, w) for o, w in u] for u in REUSE_USES],
                                  len(t))
    assert how == "inferred" and slots[R] == [(0, 4096), (4096, 4096)]  # X and Z together
    assert at[0, 0] == at[1, 1] == (0, 0)


def test_times_seen_tell_a_place_reused_at_once_apart():
    t = trace(*REUSE)
    uses = [[(R, o, w) for o, w in u] for u in REUSE_USES]
    times = clock_times(t, [(2, 0), (3, 1)])  # kernel 1 after X and W were made; kernel 2 after Z
    slots, at, whole, how = split({R: (BASE, 8192)}, lifetimes(t), uses, len(t), times=times)
    assert how == "seen" and whole == {}
    assert slots[R] == [(0, 4096), (0, 4096), (4096, 4096)]  # X, Z, W
    assert at[0, 0][0] != at[1, 1][0] and at[0, 1] == at[1, 0]
    # times that contradict the trace (kernel 1 seen before W was made) are not used
    slots, at, whole, how = split({R: (BASE, 8192)}, lifetimes(t), uses, len(t), times=[1, 4])
    assert how.startswith("inferred: node 0's places were not all live") and len(slots[R]) == 2
    # times that run backwards neither
    slots, at, whole, how = split({R: (BASE, 8192)}, lifetimes(t), uses, len(t), times=[4, 2])
    assert how.startswith("inferred") and len(slots[R]) == 2
    # a node without a time (a copy the export added) is inferred among the others
    uses.append([(R, 0, 4096)])
    slots, at, whole, how = split({R: (BASE, 8192)}, lifetimes(t), uses, len(t), times=times + [None])
    assert how == "seen" and at[2, 0] == at[1, 1]  # (Z: X was freed before kernel 2)


def inductor_like(n=400, seed=2):
    """A chain of n kernels as Inductor's code runs them, through a best-fit allocator:
    each kernel's output made just before it, each tensor freed right after its last
    use (one to six kernels on), so that freed memory is taken again at once.  Returns
    (trace, uses, clocks): clocks, the (allocations, frees) made before each kernel, as
    Capture.node_clock reads them."""
    import random
    rng = random.Random(seed)
    free, trace, uses, clocks, live = [(0, 1 << 30)], [], [], [], []

    def alloc(size):
        size = up(size)
        best = min((i for i, (_, s) in enumerate(free) if s >= size), key=lambda i: free[i][1])
        a, s = free[best]
        free[best] = (a + size, s - size)
        return a

    def release(a, size):
        merged = []
        for x in sorted(free + [(a, up(size))]):
            if merged and merged[-1][0] + merged[-1][1] == x[0]:
                merged[-1] = (merged[-1][0], merged[-1][1] + x[1])
            else:
                merged.append(x)
        free[:] = merged

    for k in range(n):
        size = rng.choice([4096, 65536, 262144])
        a = alloc(size)
        trace.append(("alloc", BASE + a, size))
        ins = rng.sample(live[-4:], min(len(live[-4:]), 2))
        live.append((a, size, k + rng.randint(1, 6)))
        uses.append([(R, a, 0)] + [(R, x[0], 0) for x in ins])
        clocks.append((sum(e[0] == "alloc" for e in trace), sum(e[0] == "free_requested" for e in trace)))
        for x in [x for x in live if x[2] <= k]:
            live.remove(x)
            trace.append(("free_requested", BASE + x[0], x[1]))
            release(x[0], x[1])
    return trace, uses, clocks


def test_an_inductor_like_chain_is_one_slot_per_allocation_only_with_the_times_seen():
    """The figures docs/e2e.md and slots.py quote: 400 allocations, 49 slots by the
    chain's order alone, 400 with the times capture A sees."""
    t, uses, clocks = inductor_like()
    regions = {R: (BASE, 1 << 30)}
    assert sum(e[0] == "alloc" for e in t) == 400
    slots, at, whole, how = split(regions, lifetimes(t), uses, len(t))
    assert how == "inferred" and whole == {} and len(slots[R]) == 49
    slots, at, whole, how = split(regions, lifetimes(t), uses, len(t), times=clock_times(t, clocks))
    assert how == "seen" and whole == {} and len(slots[R]) == 400


def test_calls_that_made_no_node_are_matched_away_by_kind():
    # a memset call that made no node between two kernels: both kernels' times are known
    assert matched_times([1, 2, 3], ["kernel", "memset", "kernel"], ["kernel", "kernel"]) == [1, 3]
    # an extra kernel call: the first node is call 0 or 1, the second call 1 or 2
    assert matched_times([1, 1, 3], ["kernel"] * 3, ["kernel", "kernel"]) == [1, None]
    assert matched_times([1, 3, 3], ["kernel"] * 3, ["kernel", "kernel"]) == [None, 3]
    # a node no call makes (an event's record) takes no call and no time
    assert matched_times([1, 2], ["kernel", "memcpy"], ["kernel", None, "memcpy"]) == [1, None, 2]
    # no matching: a node of a kind not seen, more nodes than calls, kinds not given
    assert matched_times([1, 2], ["kernel", "kernel"], ["kernel", "memset"]) is None
    assert matched_times([1], ["kernel"], ["kernel", "kernel"]) is None
    assert matched_times([1, 2], None, ["kernel"]) is None


def test_a_time_matched_is_the_nodes_own():
    """Random chains of nodes made by calls, with calls that made no node mixed in: every
    time matched_times gives is the time of the call that made the node, and where the
    extra calls are of no kind the chain has, every node's time is given."""
    import random
    rng = random.Random(7)
    for trial in range(300):
        n = rng.randint(1, 30)
        kinds = [rng.choice(["kernel", "kernel", "memset", "memcpy", None]) for _ in range(n)]
        calls, own = [], {}  # (kind, node or None)
        for k, kind in enumerate(kinds):
            for _ in range(rng.choice([0, 0, 0, 1, 2])):
                calls.append((rng.choice(["kernel", "memset", "host"]), None))
            if kind is not None:
                own[k] = len(calls)
                calls.append((kind, k))
        times, t = [], 0
        for _ in calls:
            t += rng.choice([0, 0, 1, 3])
            times.append(t)
        got = matched_times(times, [c for c, _ in calls], kinds)
        assert got is not None and len(got) == n
        for k, x in enumerate(got):
            assert x is None or x == times[own[k]], (trial, k)
            assert kinds[k] is not None or x is None
        if all(c == "host" for c, node in calls if node is None):
            assert all(got[k] == times[own[k]] for k in own)

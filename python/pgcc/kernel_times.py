"""Each kernel, copy and memset node's GPU time, measured in capture A's own graphs: the
.graph's `gpu_us`, which pgcc's cost model takes for the node's time in place of its
profile's one kernel time (compiler/cost.c), when it decides whether a widened graph is
worth its width.  GoogLeNet's kernels take 3.4 us on average where the profile says 0.7:
without the times its chain is predicted at a fifth of what it takes (docs/compiler.md).

Our executable of each of capture A's stretches (replay.Replayer.own_execs) is replayed
with every such node disabled (cuGraphNodeSetEnabled: it runs as an empty node, its edges
kept) -- the baseline -- and then with one node enabled at a time.  A node's time is its
replays' time less the baseline's, each the GPU time of REPEAT replays back to back (CUDA
events), queued behind a kernel that keeps the GPU busy (torch.cuda._sleep) while the host
launches them: a graph's launch costs the host tens of microseconds, and without the wait
the events time the host (GoogLeNet's kernels then came out at 26 us, not 3).  The
baseline is taken before, between and after the nodes (their median).  A stretch is
replayed whole first, so that the buffers every node reads hold what the call computes,
and timed whole too: where the nodes' times add up to more than SANE times the whole
stretch's, the timing is not trusted and no time is kept.  Running a node again in place
changes what it writes: the caller's Replayer puts the weights and inputs back.

Not on by default: PGCC_TIMES=on measures (docs/compiler.md says what it changed).

node_times and one_by_one are pure: the times from the raw replay timings, and the order
of the replays and of the nodes disabled and enabled, given the timing and the switch.

    times = measure(torch, replayer, log)        # {capture A node index: us}
"""
import ctypes as C
import os
import statistics

from .cuda import NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, check, cu

__all__ = ["measure", "node_times", "one_by_one", "REPEAT"]

REPEAT = 5  # replays timed together, per node and per baseline
HOLD_CYCLES = 4_000_000  # the GPU's wait before each timed batch, while the host queues it (2 ms at 2 GHz)
SANE = 1.5  # the nodes' times may add up to at most this times their stretch's
TIMED = (NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET)  # (the node types a graph executable can disable)


def node_times(baselines, with_node):
    """{node: us} from the baseline replays' times (us) and each node's {node: us}: the
    node's replay less the baselines' median, never below zero (a node as short as the
    timing's noise), rounded to 0.01 us."""
    base = statistics.median(baselines)
    return {i: round(max(0.0, t - base), 2) for i, t in with_node.items()}


def one_by_one(nodes, timed, enable):
    """The replays' order: timed() the graph whole, then with every node of `nodes`
    disabled (enable(i, False)), then with each enabled alone, the baseline again between
    and after; every node enabled again at the end, also where a call fails.  Returns
    (the whole graph's time, [baselines], {node: time with it alone})."""
    try:
        whole = timed()
        for i in nodes:
            enable(i, False)
        baselines, raw = [timed()], {}
        for j, i in enumerate(nodes):
            enable(i, True)
            raw[i] = timed()
            enable(i, False)
            if j == len(nodes) // 2:
                baselines.append(timed())
        baselines.append(timed())
        return whole, baselines, raw
    finally:
        for i in nodes:
            enable(i, True)


def measure(torch, replayer, log, status=None):
    """{capture A node index: its GPU time in us} for the kernel, copy and memset nodes of
    replayer's capture A, as above; {} unless PGCC_TIMES=on.  status(text): the step shown."""
    if os.environ.get("PGCC_TIMES") != "on":
        return {}
    if status:
        status("timing each node alone in its graph")
    cap, d = replayer.cap, cu()
    execs = replayer.own_execs()
    stream = torch.cuda.current_stream()
    s = C.c_void_p(stream.cuda_stream)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, wholes = {}, 0.0
    try:
        for k, e in enumerate(execs):
            mine = [i for i, seg in enumerate(cap.segment_of) if seg == k and cap.nodes[i]["type"] in TIMED]
            if not mine:
                continue

            def timed():
                torch.cuda._sleep(HOLD_CYCLES)  # (the GPU busy while the host queues the replays)
                start.record(stream)
                for _ in range(REPEAT):
                    check(d.GraphLaunch(e, s), "cuGraphLaunch")
                end.record(stream)
                end.synchronize()
                return start.elapsed_time(end) * 1000.0 / REPEAT

            def enable(i, on):
                check(d.GraphNodeSetEnabled(e, C.c_void_p(cap.handles[i]), 1 if on else 0),
                      "cuGraphNodeSetEnabled")
            replayer.replay_params({})  # (every buffer as the call leaves it)
            try:
                whole, baselines, raw = one_by_one(mine, timed, enable)
            finally:
                check(d.StreamSynchronize(s), "cuStreamSynchronize")
            wholes += whole
            got = node_times(baselines, raw)
            if sum(got.values()) > SANE * whole:
                log(f"  the GPU times of stretch {k}'s nodes add up to {sum(got.values()):.1f} us, its whole "
                    f"replay takes {whole:.1f}: not trusted, not kept")
                continue
            times.update(got)
    finally:
        replayer.replay_params({})  # (the outputs as the whole call leaves them, for what reads them next)
    if times:
        log(f"  the GPU time of {len(times)} nodes, each run alone in its graph: {sum(times.values()):.1f} us in all, "
            f"{statistics.median(times.values()):.2f} us the median, the graph whole {wholes:.1f} us (the .graph's "
            "gpu_us)")
    return times

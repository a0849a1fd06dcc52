"""kernel_times.node_times: a node's time is its replays' less the baselines' median."""
from pgcc.kernel_times import node_times, one_by_one


def test_a_node_time_is_its_replay_less_the_baselines_median():
    assert node_times([10.0, 10.4, 30.0], {3: 13.5, 7: 10.1, 9: 9.0}) == {3: 3.1, 7: 0.0, 9: 0.0}
    assert node_times([5.0], {0: 5.004}) == {0: 0.0}  # (rounded to 0.01 us)
    assert node_times([5.0, 6.0], {0: 9.0}) == {0: 3.5}  # (two baselines: their mean, as statistics.median has it)


class Graph:
    """A graph of nodes with known times on a GPU that costs `base` us a replay: timed()
    is what events would give, enable() what cuGraphNodeSetEnabled does."""

    def __init__(self, times, base=7.0, fail_at=None):
        self.times, self.base, self.on, self.fail_at, self.calls = times, base, set(times), fail_at, 0

    def timed(self):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("a launch failed")
        return self.base + sum(self.times[i] for i in self.on)

    def enable(self, i, on):
        (self.on.add if on else self.on.discard)(i)


def test_one_by_one_recovers_each_node_and_leaves_every_node_enabled():
    g = Graph({0: 3.0, 4: 0.5, 9: 12.25})
    whole, baselines, raw = one_by_one([0, 4, 9], g.timed, g.enable)
    assert whole == 7.0 + 15.75 and baselines == [7.0, 7.0, 7.0]
    assert node_times(baselines, raw) == {0: 3.0, 4: 0.5, 9: 12.25}
    assert g.on == {0, 4, 9}


def test_one_by_one_enables_every_node_again_when_a_replay_fails():
    import pytest
    g = Graph({0: 3.0, 4: 0.5, 9: 12.25}, fail_at=3)
    with pytest.raises(RuntimeError, match="a launch failed"):
        one_by_one([0, 4, 9], g.timed, g.enable)
    assert g.on == {0, 4, 9}

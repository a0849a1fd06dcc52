"""kernel_times.node_times: a node's time is its replays' less the baselines' median."""
from pgcc.kernel_times import node_times


def test_a_node_time_is_its_replay_less_the_baselines_median():
    assert node_times([10.0, 10.4, 30.0], {3: 13.5, 7: 10.1, 9: 9.0}) == {3: 3.1, 7: 0.0, 9: 0.0}
    assert node_times([5.0], {0: 5.004}) == {0: 0.0}  # (rounded to 0.01 us)
    assert node_times([5.0, 6.0], {0: 9.0}) == {0: 3.5}  # (two baselines: their mean, as statistics.median has it)

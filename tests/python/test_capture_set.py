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

"""recompiles.py on a stand-in of Dynamo's record of failed guards (no torch here): what
failed after a mark, each reason's first line once, and the words the export adds to
captures that differ."""
import types

from pgcc.recompiles import explain, mark, since


def step():
    pass


def stand_in(failures):
    return types.SimpleNamespace(_dynamo=types.SimpleNamespace(utils=types.SimpleNamespace(guard_failures=failures)))


def test_only_the_guards_failed_after_the_mark_are_named():
    code = step.__code__
    failures = {code: ["L['x'].size()[0] == 4"]}
    torch = stand_in(failures)
    seen = mark(torch)
    assert since(torch, seen) == []
    failures[code] += ["L['sched'].last_epoch == 1\nmore lines", "L['sched'].last_epoch == 1"]
    found = since(torch, seen)
    assert found == [(f"step ({code.co_filename}:{code.co_firstlineno})", "L['sched'].last_epoch == 1")]
    words = explain(found)
    assert "L['sched'].last_epoch == 1" in words and "compiled the callable again" in words
    assert explain([]) == ""


def test_a_torch_without_the_record_names_nothing():
    torch = types.SimpleNamespace()
    assert mark(torch) == {} and since(torch, {}) == []
    assert since(stand_in(None), {}) == []

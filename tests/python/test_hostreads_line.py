"""hostreads.user_line: the user's line that made a read, found by walking the stack --
the innermost frame outside pgcc, torch and Python's own ("<...>") files -- the same line
traceback's frames give, and cheap enough to run for every element a tensor's repr reads."""
import functools
import operator
import sys
import textwrap
import traceback
import types

from pgcc import hostreads


def _user_module(tmp_path, name="user_prog"):
    """A module of the 'user' outside pgcc and torch, whose read(fn) returns fn()."""
    src = tmp_path / f"{name}.py"
    src.write_text(textwrap.dedent("""\
        def read(fn):
            return fn()   # the user's read
        """))
    spec_globals = {"__file__": str(src), "__name__": name}
    exec(compile(src.read_text(), str(src), "exec"), spec_globals)  # pylint: disable=exec-used
    return spec_globals["read"], src


def test_user_line_names_the_users_frame(tmp_path, monkeypatch):
    fake = types.ModuleType("torch")
    fake.__file__ = str(tmp_path / "site" / "torch" / "__init__.py")
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(hostreads, "_OURS", [])
    monkeypatch.setattr(hostreads, "_OUTSIDE", {})
    read, src = _user_module(tmp_path)
    # called from the user's frame: that line is named
    got = read(hostreads.user_line)
    assert got == f"{src}:2: return fn()   # the user's read", got
    # the same line from traceback's frames (an error raised below the user's frame, as
    # capture.py gives them)
    try:
        read(functools.partial(operator.truediv, 1, 0))
    except ZeroDivisionError as e:
        frames = traceback.extract_tb(e.__traceback__)
    assert hostreads.user_line(frames) == got
    # a stack with only pgcc's and Python's own frames: nothing to name
    assert hostreads.user_line([traceback.FrameSummary(hostreads.__file__, 3, "f"),
                                traceback.FrameSummary("<frozen runpy>", 1, "g")]) == ""


def test_user_line_skips_torchs_frames(tmp_path, monkeypatch):
    torch_dir = tmp_path / "site" / "torch"
    torch_dir.mkdir(parents=True)
    fake = types.ModuleType("torch")
    fake.__file__ = str(torch_dir / "__init__.py")
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(hostreads, "_OURS", [])
    monkeypatch.setattr(hostreads, "_OUTSIDE", {})
    # a 'torch' function between the user's frame and the read
    lib = torch_dir / "_tensor_str.py"
    lib.write_text("def fmt(fn):\n    return fn()\n")
    g = {"__file__": str(lib)}
    exec(compile(lib.read_text(), str(lib), "exec"), g)  # pylint: disable=exec-used
    read, src = _user_module(tmp_path)
    # (functools.partial: no frame of this test's file between them)
    assert read(functools.partial(g["fmt"], hostreads.user_line)) == f"{src}:2: return fn()   # the user's read"


def test_user_line_is_cheap_per_read(tmp_path, monkeypatch):
    """Not a timing test of the machine: the walk must not read files or stat them per
    call (traceback.extract_stack did both, for every frame)."""
    fake = types.ModuleType("torch")
    fake.__file__ = str(tmp_path / "torch" / "__init__.py")
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(hostreads, "_OURS", [])
    monkeypatch.setattr(hostreads, "_OUTSIDE", {})
    read, _ = _user_module(tmp_path)
    read(hostreads.user_line)
    judged = dict(hostreads._OUTSIDE)  # pylint: disable=protected-access
    calls = []
    monkeypatch.setattr(hostreads.os.path, "abspath", lambda p: calls.append(p) or p)
    for _ in range(100):
        read(hostreads.user_line)
    assert calls == [] and hostreads._OUTSIDE == judged  # pylint: disable=protected-access


def test_flip_read_flips_the_kth_read_and_keeps_its_value():
    from pgcc.hostreads import FlipRead
    flip = FlipRead(1)
    assert flip(None, "item", "a.py:1") is None  # (read 0: as it is)
    after = flip(None, "item", "a.py:2")
    assert after(0.0) == 1.0 and flip.value == 0.0  # (a zero flag: found_inf)
    assert flip(None, "__bool__", "a.py:3") is None and flip.reads == 3
    bools = FlipRead(0)
    assert bools(None, "__bool__", "b.py:1")(True) is False and bools.value is True
    failed = FlipRead(0)
    assert failed(None, "item", "c.py:1")(None) is None and failed.value is None

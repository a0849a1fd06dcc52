"""pgcc-export (python/pgcc/cli.py) without torch or a GPU: every error is one line,
`pgcc-export: error: REASON`, with exit status 1 -- a missing model file, no torch, a
model file that fails or defines no build(), an export that fails with several
problems -- and the traceback only with --debug.  The export itself and torch are
stand-ins (monkeypatched into cli)."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from pgcc import cli
from pgcc.errors import ExportError


class Watch:
    closed = False

    def close(self):
        Watch.closed = True


def error_lines(capsys):
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if line.strip()]


def model(tmp_path, text):
    path = tmp_path / "m.py"
    path.write_text(text)
    return str(path)


def test_a_missing_model_file_is_one_line(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.py"), "-o", str(tmp_path / "out")]) == 1
    lines = error_lines(capsys)
    assert lines == [f"pgcc-export: error: {tmp_path / 'nope.py'}: no such model file"]


def test_the_command_says_so_in_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-m", "pgcc", str(tmp_path / "nope.py"), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [f"pgcc-export: error: {tmp_path / 'nope.py'}: no such model file"]


def test_no_torch_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "torch_available", lambda: False)
    assert cli.main([model(tmp_path, "def build():\n    pass\n"), "-o", str(tmp_path / "out")]) == 1
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("pgcc-export: error: PyTorch is not installed")


def test_a_failing_model_file_is_one_line_and_a_traceback_with_debug(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "torch_available", lambda: True)
    path = model(tmp_path, "raise RuntimeError('no GPU here\\nsecond line')\n")
    assert cli.main([path, "-o", str(tmp_path / "out")]) == 1
    assert error_lines(capsys) == ["pgcc-export: error: RuntimeError: no GPU here second line"]
    with pytest.raises(RuntimeError, match="no GPU here"):
        cli.main([path, "-o", str(tmp_path / "out"), "--debug"])


def test_a_model_file_without_build(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "torch_available", lambda: True)
    assert cli.main([model(tmp_path, "x = 1\n"), "-o", str(tmp_path / "out")]) == 1
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].endswith("defines no build() -> (fn, inputs, weights)")


def test_an_export_with_several_problems_is_one_line(tmp_path, capsys, monkeypatch):
    def export(*args, **kw):
        raise ExportError("cannot export; what stands in the way:\n  node 3: a memset\n  kernel k: no code")
    monkeypatch.setattr(cli, "torch_available", lambda: True)
    monkeypatch.setattr(cli, "ModuleWatch", Watch)
    monkeypatch.setattr(cli, "export", export)
    Watch.closed = False
    path = model(tmp_path, "def build():\n    return (lambda x: x), (1,), {}\n")
    assert cli.main([path, "-o", str(tmp_path / "out")]) == 1
    assert error_lines(capsys) == ["pgcc-export: error: cannot export; what stands in the way: node 3: a memset; "
                                   "kernel k: no code"]
    assert Watch.closed  # (the watch closed on the way out)
    with pytest.raises(ExportError, match="node 3"):
        cli.main([path, "-o", str(tmp_path / "out"), "--debug"])


def test_a_good_run_exports_with_the_options_given(tmp_path, capsys, monkeypatch):
    got = {}

    def export(fn, inputs, out, **kw):
        got.update(fn=fn, inputs=inputs, out=out, **kw)
    monkeypatch.setattr(cli, "torch_available", lambda: True)
    monkeypatch.setattr(cli, "ModuleWatch", Watch)
    monkeypatch.setattr(cli, "export", export)
    path = model(tmp_path, "def build():\n    return abs, (-2,), {'w': 3}\n")
    assert cli.main([path, "-o", str(tmp_path / "out"), "--eager", "--no-verify", "--name", "mine"]) == 0
    assert got["fn"] is abs and got["inputs"] == (-2,) and got["out"] == str(tmp_path / "out")
    assert got["name"] == "mine" and got["weights"] == {"w": 3} and got["compile"] is False and got["verify"] is False
    assert error_lines(capsys) == []

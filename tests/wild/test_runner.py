"""The wild suite's runner and registry on the CPU, without torch: argument parsing,
selection, classification of what a child reports, the tables, the registry read
from the family modules' source, and the parent's process handling with stand-in
children (a line, a crash, a hang).

    PYTHONPATH=python:. python3 -m pytest -q -p no:cacheprovider tests/wild/test_runner.py
"""
import json
import os
import sys
import time

import pytest

from tests.wild import run_wild, wild_programs


# ---- arguments and selection ----

def test_parse_args_defaults_and_values():
    a = run_wild.parse_args([])
    assert (a.jobs, a.timeout, a.patterns, a.child) == (4, 600, [], None)
    a = run_wild.parse_args(["--jobs", "8", "--timeout", "90", "--out", "d", "hf:*", "cg:a*"])
    assert (a.jobs, a.timeout, a.out, a.patterns) == (8, 90, "d", ["hf:*", "cg:a*"])


@pytest.mark.parametrize("bad", [["--jobs", "0"], ["--timeout", "-3"], ["--jobs", "two"]])
def test_parse_args_rejects_non_positive(bad, capsys):
    with pytest.raises(SystemExit) as e:
        run_wild.parse_args(bad)
    assert e.value.code == 2
    assert "positive whole number" in capsys.readouterr().err


def test_select():
    keys = ["timm:a", "hf:bert", "hf:t5", "cg:x"]
    assert run_wild.select(keys, []) == keys
    assert run_wild.select(keys, ["cg:*", "hf:b*"]) == ["hf:bert", "cg:x"]  # the keys' order
    assert run_wild.select(keys, ["hf:*", "hf:t5"]) == ["hf:bert", "hf:t5"]  # each once
    with pytest.raises(ValueError, match="'nope:\\*', 'zz'"):
        run_wild.select(keys, ["hf:*", "nope:*", "zz"])


def test_main_unmatched_pattern_exits_2(capsys):
    assert run_wild.main(["no-such-program"]) == 2
    assert "no program matches 'no-such-program'" in capsys.readouterr().err


def test_list_prints_every_key(capsys):
    assert run_wild.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == wild_programs.keys()


# ---- tolerance and classification ----

def test_tolerance():
    assert run_wild.tolerance("float32") == run_wild.tolerance("torch.float32") == 1e-4
    assert run_wild.tolerance("torch.float16") == run_wild.tolerance("bfloat16") == 2e-2
    assert run_wild.tolerance("torch.int64") == run_wild.tolerance("torch.bool") == 0.0


def test_first_line():
    assert run_wild.first_line("\n  \n  reason here \nmore") == "reason here"
    assert run_wild.first_line("") == ""


FRAMES = [("/home/u/tests/wild/run_wild.py", 200, "child"),
          ("/repo/python/pgcc/export.py", 150, "export"),
          ("/repo/python/pgcc/capture.py", 77, "capture"),
          ("/usr/lib/python3/site-packages/torch/cuda/graphs.py", 12, "capture_end")]


def test_last_own_frame():
    assert run_wild.last_own_frame(FRAMES) == "python/pgcc/capture.py:77 in capture"
    assert run_wild.last_own_frame(FRAMES[:1]) == "tests/wild/run_wild.py:200 in child"
    assert run_wild.last_own_frame(FRAMES[3:]) is None


def test_classify():
    assert run_wild.classify(True, "ExportError", "\nthe call reads the host\n at node 3", FRAMES) == \
        ("REFUSED", "the call reads the host")
    status, detail = run_wild.classify(False, "RuntimeError", "CUDA error: illegal address\nmore", FRAMES)
    assert status == "ERROR"
    assert detail == "RuntimeError: CUDA error: illegal address (at python/pgcc/capture.py:77 in capture)"
    assert run_wild.classify(False, "KeyError", "'x'", FRAMES[3:]) == ("ERROR", "KeyError: 'x'")


# ---- the child's report ----

def line(**rec):
    return run_wild.TAG + json.dumps(rec)


def test_parse_child_takes_the_last_line():
    out = "\n".join(["progress...", line(status="ERROR", detail="first"), "WILD {not json",
                     line(status="VERIFIED", max_error=3e-7, stage="compare", seconds=4.5), "bye"])
    rec = run_wild.parse_child("hf:t5", out, 0, False, 60, 9.0)
    assert (rec["key"], rec["status"], rec["max_error"], rec["seconds"]) == ("hf:t5", "VERIFIED", 3e-7, 4.5)
    assert rec["pgcc_vs_eager"] is None and rec["compiled_vs_eager"] is None  # (not in the line: None)


def test_parse_child_timeout_and_crash():
    rec = run_wild.parse_child("k", "half a log\n", None, True, 60, 60.2)
    assert (rec["status"], rec["detail"], rec["seconds"], rec["max_error"]) == ("TIMEOUT", "over 60 s", 60.2, None)
    rec = run_wild.parse_child("k", "a\nb\nSegmentation fault\n", -11, False, 60, 3.0)
    assert rec["status"] == "CRASH" and rec["detail"] == "killed by signal 11: b | Segmentation fault"
    rec = run_wild.parse_child("k", "", 134, False, 60, 3.0)
    assert (rec["status"], rec["detail"]) == ("CRASH", "exit 134")
    # a line whose status is none of the table's is the child's failure too
    rec = run_wild.parse_child("k", line(status="PASS"), 0, False, 60, 3.0)
    assert rec["status"] == "CRASH" and "'PASS'" in rec["detail"]


# ---- tables ----

RECS = [{"key": "hf:a", "status": "VERIFIED", "stage": "compare", "seconds": 10.0, "max_error": 1.5e-6,
         "pgcc_vs_eager": 2.1e-3, "compiled_vs_eager": 2.1e-3, "detail": "PASS"},
        {"key": "cg:b", "status": "REFUSED", "stage": "export", "seconds": 3.25, "max_error": None,
         "detail": "a|b"},
        {"key": "cg:c", "status": "REFUSED", "stage": "export", "seconds": 1.0, "max_error": None, "detail": "x"},
        {"key": "cg:d", "status": "TIMEOUT", "stage": None, "seconds": 60.0, "max_error": None,
         "detail": "over 60 s"}]


def test_counts_name_every_status():
    c = run_wild.counts(RECS)
    assert list(c) == list(run_wild.STATUSES)
    assert c == {"VERIFIED": 1, "WRONG": 0, "REFUSED": 2, "ERROR": 0, "TIMEOUT": 1, "CRASH": 0}


def test_markdown():
    md = run_wild.markdown(RECS, "torch 9.9")
    lines = md.splitlines()
    head = lines.index("| VERIFIED | WRONG | REFUSED | ERROR | TIMEOUT | CRASH | total |")
    assert lines[head + 2] == "| 1 | 0 | 2 | 0 | 1 | 0 | 4 |"
    assert "torch 9.9" in lines
    rows = [l for l in lines if l.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == ["hf:a", "cg:b", "cg:c", "cg:d"]
    assert "| `cg:b` | REFUSED | export | 3.2 | - | - | - | a\\|b |" in rows  # a pipe in a detail escaped
    assert "| 10.0 | 1.5e-06 | 0.0021 | 0.0021 | PASS |" in rows[0]  # (vs compiled, then each against eager)
    assert "| program | status | stage | seconds | vs compiled | pgcc vs eager | compiled vs eager | detail |" in lines


def test_judged_against_the_compiled_callable_not_eager():
    """pgcc is judged against the compiled callable: bit-identical to it but 2e-3 off
    eager (a convnet under cuDNN's TF32) verifies; off the compiled callable is WRONG,
    with both errors against eager in the reason."""
    same, off_eager = (0.0, "out0", None), (2e-3, "out0", "out0 differs from the eager call's: ...")
    assert run_wild.judged(same, off_eager, off_eager) == ("VERIFIED", None)
    status, why = run_wild.judged((0.5, "out0", "out0 differs from the compiled callable's: max error 0.5"),
                                  (0.5, "out0", "x"), (1e-7, "out0", None))
    assert status == "WRONG" and why == ("out0 differs from the compiled callable's: max error 0.5 (against eager: "
                                         "pgcc 0.5, compiled 1e-07)")
    assert run_wild.judged((None, None, "the loaded program gives 1 tensors, the compiled callable 3"),
                           (None, None, "n"), (0.0, None, None))[0] == "WRONG"


def test_text_table():
    t = run_wild.text_table(RECS)
    assert t.splitlines()[-1] == "wild: 4 programs: 1 VERIFIED, 0 WRONG, 2 REFUSED, 0 ERROR, 1 TIMEOUT, 0 CRASH"
    assert len([l for l in t.splitlines() if l.startswith(("hf:", "cg:"))]) == 4


def test_label():
    assert run_wild.label("hf:bert_padding_mask") == "hf_bert_padding_mask"
    assert run_wild.label("a/b c") == "a_b_c"


def test_child_env():
    env = run_wild.child_env({"PYTHONPATH": "/x:/y", "HOME": "/h"}, "/r", "/c", jobs=8, cpus=16)
    assert env["PYTHONPATH"].split(os.pathsep) == ["/r/python", "/r", "/x", "/y"]
    assert (env["TORCHINDUCTOR_CACHE_DIR"], env["TORCHINDUCTOR_COMPILE_THREADS"], env["HOME"]) == ("/c", "2", "/h")
    env = run_wild.child_env({"TORCHINDUCTOR_COMPILE_THREADS": "5"}, "/r", "/c", jobs=32, cpus=16)
    assert env["PYTHONPATH"].split(os.pathsep) == ["/r/python", "/r"]
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "5"  # the caller's
    assert run_wild.child_env({}, "/r", "/c", jobs=32, cpus=16)["TORCHINDUCTOR_COMPILE_THREADS"] == "1"


# ---- the registry ----

def test_registry_size_and_keys():
    keys = wild_programs.keys()
    assert len(keys) >= 40 and len(set(keys)) == len(keys)
    families = {}
    for k in keys:
        family, _, name = k.partition(":")
        assert family and name and name == run_wild.label(name), k
        families[family] = families.get(family, 0) + 1
    assert families.get("hf", 0) >= 10
    assert {"timm", "tv", "hf", "pyg", "cg", "vllm", "rnn"} <= set(families)
    assert {"pyg:gcn", "pyg:gat", "rnn:lstm", "rnn:bilstm_tagger", "cg:torch_cond", "cg:dropout_train"} <= set(keys)


def test_registry_names_functions_of_its_module():
    for m in wild_programs.FAMILIES:
        defined = wild_programs.functions(m)
        for key, fn in wild_programs.registered(m):
            assert fn in defined, f"{m}.py: {key} -> {fn}, which the module does not define"


def test_registry_errors_are_located(tmp_path):
    (tmp_path / "none.py").write_text("x = 1\n")
    (tmp_path / "call.py").write_text("import os\n\nPROGRAMS = dict(a=1)\n")
    (tmp_path / "bad.py").write_text("PROGRAMS = {\n    'a:b': f,\n    3: g,\n}\n")
    with pytest.raises(ValueError, match=r"none\.py:1: no PROGRAMS"):
        wild_programs.registered("none", str(tmp_path))
    with pytest.raises(ValueError, match=r"call\.py:3: PROGRAMS is not a dict literal"):
        wild_programs.registered("call", str(tmp_path))
    with pytest.raises(ValueError, match=r"bad\.py:3: a PROGRAMS entry"):
        wild_programs.registered("bad", str(tmp_path))


def test_builder_unknown_key():
    with pytest.raises(KeyError, match="no wild program 'zz:top'"):
        wild_programs.builder("zz:top")


# ---- the parent, with stand-in children ----

STAND_INS = {
    "t:ok": "print('noise'); print('WILD ' + json.dumps({'status': 'VERIFIED', 'max_error': 0.0, "
            "'seconds': 1.0}))",
    "t:crash": "import os, signal; print('dying', flush=True); os.kill(os.getpid(), signal.SIGKILL)",
    # a child that hangs, with a grandchild (as Inductor's compile workers are; this one
    # away from the pipes, so that only a kill of the group ends it), its pid left in OUT
    "t:hang": "import os, subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
              "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "open(os.path.join(sys.argv[1], 'grandchild'), 'w').write(str(p.pid))\n"
              "time.sleep(60)",
    # a child that reports and exits, leaving a grandchild that holds its stdout
    "t:linger": "import os, subprocess, sys\n"
                "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                "open(os.path.join(sys.argv[1], 'grandchild'), 'w').write(str(p.pid))\n"
                "print('WILD ' + json.dumps({'status': 'REFUSED', 'detail': 'no'}))",
}


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.setattr(run_wild, "child_command",
                        lambda key, out: [sys.executable, "-c", "import json\n" + STAND_INS[key], out])
    monkeypatch.setattr(wild_programs, "keys", lambda: list(STAND_INS))


def test_parent_runs_children_and_writes_the_table(stand_ins, tmp_path, capsys):
    out = tmp_path / "o"
    assert run_wild.main(["--jobs", "3", "--timeout", "3", "--out", str(out)]) == 0  # a measurement: 0
    recs = json.loads((out / "wild.json").read_text())
    assert [(r["key"], r["status"]) for r in recs] == [("t:ok", "VERIFIED"), ("t:crash", "CRASH"),
                                                       ("t:hang", "TIMEOUT"), ("t:linger", "REFUSED")]
    assert recs[1]["detail"] == "killed by signal 9: dying"
    assert "| 1 | 0 | 1 | 0 | 1 | 1 | 4 |" in (out / "wild.md").read_text()
    assert "noise" in (out / "logs" / "t_ok.log").read_text()
    printed = capsys.readouterr().out
    assert "1 VERIFIED, 0 WRONG, 1 REFUSED, 0 ERROR, 1 TIMEOUT, 1 CRASH" in printed
    work = printed.split(" in ", 1)[1].split()[0]  # the temporary folder, named first
    assert os.path.isdir(work) and os.listdir(work) == []  # each child's folder removed after its run
    os.rmdir(work)


def running(pid):
    """Whether pid is a live process (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("key,status", [("t:hang", "TIMEOUT"), ("t:linger", "REFUSED")])
def test_the_childs_process_group_is_killed(stand_ins, tmp_path, key, status):
    """After a timeout, and after a child that exited: nothing of its group is left."""
    args = run_wild.parse_args(["--timeout", "2", "--keep", "--out", str(tmp_path)])
    os.makedirs(tmp_path / "logs")
    rec = run_wild.run_one(key, args, str(tmp_path / "work"))
    assert rec["status"] == status
    pid = int((tmp_path / "work" / run_wild.label(key) / "grandchild").read_text())
    for _ in range(100):  # (SIGKILL is delivered, not waited for)
        if not running(pid):
            break
        time.sleep(0.05)
    alive = running(pid)
    if alive:
        os.kill(pid, 9)  # (the test's own grandchild)
    assert not alive, "the child's grandchild still runs"


def test_markdown_makes_the_repositorys_paths_relative():
    where = os.path.join(run_wild.ROOT, "tests", "wild", "wild_pyg.py")
    md = run_wild.markdown([{"key": "pyg:gcn", "status": "REFUSED", "stage": "export", "seconds": 2.0,
                             "detail": f"the callable waits (at {where}:26: x = conv(x))"}], "torch 9.9")
    assert "(at tests/wild/wild_pyg.py:26: x = conv(x)) |" in md and run_wild.ROOT not in md

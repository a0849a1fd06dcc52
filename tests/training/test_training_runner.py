"""run_training.py's pure parts on the CPU (no torch): the program list, a key it does
not know, and the table it writes from the children's records."""
import os

from tests.training import run_training
from tests.training.training_steps import PROGRAMS


def test_list_names_every_program(capsys):
    assert run_training.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == list(PROGRAMS)
    assert len(PROGRAMS) >= 12


def test_an_unknown_key_exits_2(capsys):
    assert run_training.main(["no_such_step"]) == 2
    assert "no_such_step" in capsys.readouterr().err


def test_markdown_counts_and_errors():
    recs = [{"program": "a", "status": "PASS", "export_s": 3.5, "detail": "ok",
             "loss_err": {"compiled": 0.0, "eager": 1e-6}, "state_err": {"compiled": 0.0, "eager": 2e-6}},
            {"program": "b", "status": "REFUSED", "detail": "cannot export | here"},
            {"program": "c", "status": "REFUSED", "expected": True, "detail": "an LR scheduler"}]
    md = run_training.markdown(recs, "cmd")
    assert "| 1 | 0 | 2 | 0 | 0 | 0 | 3 |" in md
    assert "| `c` | REFUSED (as it must) |" in md and "| `b` | REFUSED |" in md
    assert "| `a` | PASS | 3.5 | 0 | 0 | 2e-06 | ok |" in md
    assert "cannot export \\| here" in md  # (a table cell's bar escaped)


def test_markdown_makes_the_repositorys_paths_relative():
    where = os.path.join(run_training.ROOT, "tests", "training", "training_steps.py")
    md = run_training.markdown([{"program": "s", "status": "REFUSED", "expected": True,
                                 "detail": f"the step steps 'sched' at {where}:198: its rate"}], "cmd")
    assert "at tests/training/training_steps.py:198: its rate |" in md and run_training.ROOT not in md

"""bench/train_memory.py's pure parts (no torch): its help, and the table's sums and ratios."""
import subprocess
import sys

from bench import train_memory

MiB = 2**20


def test_help_needs_no_torch():
    p = subprocess.run([sys.executable, "bench/train_memory.py", "--help"], capture_output=True, text=True,
                       cwd=train_memory.ROOT)
    assert p.returncode == 0 and "eager" in p.stdout


def test_the_table_compares_pgccs_state_and_arena_with_eagers_peak():
    recs = [{"model": "training:a", "state_bytes": 100 * MiB, "eager_peak_bytes": 200 * MiB,
             "cublas_workspace_bytes": 40 * MiB, "pgcc_weights_bytes": 60 * MiB, "pgcc_arena_bytes": 20 * MiB},
            {"model": "training:b", "failed": "over 400 s"}]
    rows = train_memory.table(recs).splitlines()
    assert rows[2] == ("| training:a | 100.0 | 200.0 | 40.0 | 160.0 | 60.0 + 20.0 | 0.40x | 0.50x |")
    assert rows[3].startswith("| training:b | FAILED: over 400 s |") and rows[3].count("|") == rows[0].count("|")


def test_an_unknown_step_exits_2(capsys):
    assert train_memory.main(["no_such_step"]) == 2
    assert "no_such_step" in capsys.readouterr().err

"""bench/children.py: one child per model; a record per child, failed ones said so."""
import json

from bench import children

CHILD = '''import sys, time
key = sys.argv[2]
if key == "ok":
    print("noise")
    print("T " + '{"model": "ok", "us": 1.5}')
elif key == "dies":
    print("half way", flush=True)
    raise SystemExit("the model would not export")
else:
    time.sleep(3600)
'''


def test_records_and_failures(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = tmp_path / "out"
    recs = children.run(str(script), ["ok", "dies"], [], "T", 300, str(out), "probe")
    assert recs[0] == {"model": "ok", "us": 1.5}
    assert recs[1]["model"] == "dies" and "the model would not export" in recs[1]["failed"]
    assert json.loads((out / "probe.json").read_text()) == recs
    assert "half way" in (out / "dies.probe.log").read_text()


def test_a_child_out_of_time(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    recs = children.run(str(script), ["slow:x"], [], "T", 1, str(tmp_path), "probe")
    assert recs == [{"model": "slow:x", "failed": "over 1 s"}]
    assert (tmp_path / "slow_x.probe.log").exists()

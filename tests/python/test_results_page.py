"""tools/results_page.py on the fixture JSON of tests/python/fixtures/results (pure: no torch):
every figure on the page comes from the JSON, a missing file says "not measured", a file that
is not the records it should be is an error naming it, and docs/results.md is what the script
makes of docs/results/."""
import importlib.util
import json
import os
import shutil

import pytest

from conftest import FIXTURES, ROOT

spec = importlib.util.spec_from_file_location("results_page", os.path.join(ROOT, "tools", "results_page.py"))
results_page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_page)

DATA = os.path.join(FIXTURES, "results")


def page(directory):
    return results_page.render(results_page.load(directory))


def rows(text, first_cell):
    """The table rows of text whose first cell is first_cell, split into cells."""
    return [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in text.splitlines()
            if line.startswith(f"| {first_cell} |")]


def section(text, title):
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_zoo_table_from_the_records():
    text = page(DATA)
    zoo = section(text, "Export and verification, per model")
    assert "1 of 3 models pass." in zoo
    assert rows(zoo, "mlp:fp32") == [["mlp:fp32", "PASS", "16", "3.00", "21.5",
                                      "PASS mlp_fp32: max error 0 (bit-identical)"]]
    # a '|' in a detail is escaped, not a new cell
    assert rows(zoo, "resnet50:bf16")[0][1] == "FAIL"
    assert rows(zoo, "resnet50:bf16")[0][-1] == "ExportError: verify: out0 max error 0.5 \\| over tolerance"
    assert rows(zoo, "t5:fp16")[0][1:3] == ["TIMEOUT", "—"]


def test_provenance_says_gpu_versions_and_command():
    zoo = section(page(DATA), "Export and verification, per model")
    for said in ("GPU Fixture GPU 1", "driver 999.1", "CUDA 99.0", "PyTorch 9.9.0+fixture", "Triton 9.8.7",
                 "date 2000-01-02 03:04 UTC", "commit 0123456789abcdef0123456789abcdef01234567",
                 "`PYTHONPATH=python:. python3 tests/gpu/zoo_export.py --jobs 8 --out OUT`"):
        assert said in zoo
    bench = section(page(DATA), "Step time per way")
    assert "`PYTHONPATH=python:. python3 bench/zoo_timing.py --out OUT`" in bench


def test_step_times_ratios_and_spreads():
    bench = section(page(DATA), "Step time per way")
    (mlp,) = rows(bench, "mlp:fp32")
    assert mlp == ["mlp:fp32", "400.0", "200.0", "100.0", "40.0", "44.0", "0.44x", "0.40-0.45x", "1.10x",
                   "0.05 (0.1)"]
    (vit,) = rows(bench, "vit:fp16")
    assert vit[5:9] == ["—", "—", "—", "—"]  # pgcc failed: no time, no ratio
    assert "- vit:fp16: ExportError: fixture failure" in bench
    assert "- llama:bf16: over 300 s" in bench


def test_pdl_table_only_with_its_way(tmp_path):
    assert "programmatic edges kept" not in page(DATA)
    with open(os.path.join(DATA, "zoo_bench.json")) as f:
        recs = json.load(f)
    recs[0]["pgcc_programmatic_edges"] = 28
    recs[0]["ways"]["pgcc, full edges"] = {"gpu_us": 50.0}
    (tmp_path / "zoo_bench.json").write_text(json.dumps(recs))
    bench = section(page(str(tmp_path)), "Step time per way")
    assert rows(bench, "mlp:fp32")[-1] == ["mlp:fp32", "28", "44.0", "50.0", "0.88x"]


def test_memory_and_init():
    text = page(DATA)
    assert rows(section(text, "Memory"), "mlp:fp32") == [["mlp:fp32", "1.00", "3.00", "1.00", "34.00", "2.00"]]
    assert rows(section(text, "Set-up and init"), "mlp:fp32") == [
        ["mlp:fp32", "12.5", "55.5", "40.0", "20.0", "60.0", "70.0", "300.0", "0.01, 3.5, 6.0, 0.2"]]


def test_missing_files_say_not_measured(tmp_path):
    text = page(str(tmp_path))
    assert text.count("Not measured yet") == 5
    assert "provenance.json is absent" in text
    assert "| mlp:fp32" not in text
    shutil.copy(os.path.join(DATA, "zoo.json"), tmp_path)
    text = page(str(tmp_path))
    assert "1 of 3 models pass." in text
    assert "Measured with: GPU not recorded" in text  # no provenance: not invented
    assert text.count("Not measured yet: docs/results/zoo_bench.json is absent.") == 4


def test_records_that_disagree_with_the_provenance_are_named(tmp_path):
    for f in ("zoo_bench.json", "provenance.json"):
        shutil.copy(os.path.join(DATA, f), tmp_path)
    with open(tmp_path / "zoo_bench.json") as f:
        recs = json.load(f)
    recs[0]["gpu"] = "Other GPU"
    (tmp_path / "zoo_bench.json").write_text(json.dumps(recs))
    assert "The records themselves name GPU Fixture GPU 1, Other GPU." in page(str(tmp_path))


def test_bad_json_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "zoo.json").write_text('{"model": "not a list"}')
    with pytest.raises(ValueError, match="zoo.json: expected a list of records"):
        results_page.load(str(tmp_path))
    (tmp_path / "zoo.json").write_text("[{")
    with pytest.raises(ValueError, match="zoo.json"):
        results_page.load(str(tmp_path))
    assert results_page.main(["--dir", str(tmp_path), "--out", str(tmp_path / "r.md")]) == 1
    assert not (tmp_path / "r.md").exists()


def test_docs_results_page_is_the_scripts():
    """docs/results.md is regenerated, never edited: it is what the script makes of docs/results/."""
    with open(os.path.join(ROOT, "docs", "results.md")) as f:
        have = f.read()
    assert have == page(os.path.join(ROOT, "docs", "results")), \
        "docs/results.md is stale: run " + results_page.REGENERATE

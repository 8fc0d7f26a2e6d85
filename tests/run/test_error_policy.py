"""Issue 15, defect 9: one error policy.  A sample that failed outside the
model is excluded from every metric and counted in ``errors`` per task,
per breakdown value and per group; the table marks tasks with errors."""
from __future__ import annotations

import json

import pytest

from avhb.run.results import RunResults
from tests.conftest import run_cli


def test_failed_samples_are_excluded_and_counted_everywhere(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    easy = [{"id": f"e{i}", "q": f"easy {i}", "a": f"a{i}", "kind": "x" if i < 3 else "y"} for i in range(6)]
    hard = [{"id": f"h{i}", "q": f"hard {i}", "a": f"a{i}", "kind": "x", "know": i != 0} for i in range(3)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in easy))
    (data / "hard.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hard))
    out = tmp_path / "run"
    # the backend fails the prompt of "easy 1" (a failure outside the model)
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo,fail_on=easy 1", "--data", f"qa={data}",
                   "--output-dir", str(out), "--no-report", "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())
    e = res["results"]["testpack/qa_easy"]
    assert e["errors"] == 1 and e["samples"] == 6
    assert e["exact"] == 1.0 and e["exact_n"] == 5  # never scored 0
    bx = res["breakdowns"]["testpack/qa_easy"]["kind"]["x"]
    by = res["breakdowns"]["testpack/qa_easy"]["kind"]["y"]
    assert (bx["samples"], bx["errors"], bx["exact_n"], bx["exact"]) == (3, 1, 2, 1.0)
    assert (by["samples"], by["errors"], by["exact_n"]) == (3, 0, 3)
    h = res["results"]["testpack/qa_hard"]
    assert h["errors"] == 0 and h["exact"] == pytest.approx(2 / 3)  # an unusable answer ("?") is still wrong
    g = res["groups"]["testpack/qa_all"]
    assert g["errors"] == 1 and g["samples"] == 9
    assert g["exact"] == pytest.approx((5 * 1.0 + 3 * 2 / 3) / 8)  # weighted by scored samples
    table = proc.stdout
    assert "testpack/qa_easy *" in table and "testpack/qa_hard *" not in table and "testpack/qa_all *" in table
    assert "excluded from the metrics" in table
    # the reader keeps the counts (the report and `avhb report` use it)
    typed = RunResults.from_json(res)
    assert typed.tasks["testpack/qa_easy"].breakdown_counts["kind"]["x"] == {"samples": 3, "errors": 1}
    assert typed.group_counts["testpack/qa_all"] == {"samples": 9, "errors": 1}
    assert RunResults.from_json(typed.to_json()).to_json() == typed.to_json()

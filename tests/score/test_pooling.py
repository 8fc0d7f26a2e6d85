"""`avhb score RUN --pool OTHER`: conciseness cut points pooled over runs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_cli


def test_pooled_conciseness_across_two_runs(testpack, tmp_path):
    runs = []
    for words in (1, 6):
        out = tmp_path / f"run{words}"
        proc = run_cli("--tasks", "testpack/qa_concise", "--model", f"testpack/echo,repeat_words={words}",
                       "--sample-data", "--output-dir", str(out), "--no-report")
        assert proc.returncode == 0, proc.stderr
        runs.append(out)
    proc = run_cli("score", str(runs[0]), "--pool", str(runs[1]))
    assert proc.returncode == 0, proc.stderr
    pooled = json.loads((runs[0] / "pooled.json").read_text())["results"]["testpack/qa_concise"]
    counts = [[json.loads(l)["scores"]["conciseness_tokens"] for l in (r / "samples" / "testpack__qa_concise.jsonl").open()]
              for r in runs]
    cuts = np.percentile(counts[0] + counts[1], [20, 40, 60, 80])
    expect = [np.mean([5 - int(np.searchsorted(cuts, c, side="left")) for c in run]) for run in counts]
    values = [cell["conciseness_pooled"] for cell in pooled.values()]
    assert values == pytest.approx(expect)
    assert values[0] > values[1]  # the terse run scores higher once cut points are shared
    within = [json.loads((r / "results.json").read_text())["results"]["testpack/qa_concise"]["conciseness"] for r in runs]
    assert within[0] == within[1]  # within one run both spread over the same scale
    # a line of another run's samples file that is not a sample refuses the pool, naming file and line
    path = runs[1] / "samples" / "testpack__qa_concise.jsonl"
    n = len(path.read_text().splitlines())
    with path.open("a") as fh:
        fh.write('{"id": "torn')
    proc = run_cli("score", str(runs[0]), "--pool", str(runs[1]))
    assert proc.returncode == 2, proc.stderr
    assert f"{path} line {n + 1}: not JSON (pooled numbers need every sample of each run)" in proc.stderr
    assert "Traceback" not in proc.stderr

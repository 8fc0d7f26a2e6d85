"""CURVE's cluster key (``cluster_key: video_id`` in _base.yaml) through a
real run: results.json carries the standard error clustered by video.

Every task of the sample pack holds one video (one locale, one category
each), and a clustered standard error needs two clusters, so the test runs
one category task over the sample pack's records all filed under one
category: the sample's 10 questions on its 4 videos.  The scripted model
names each question's video and the scripted judge rates by video (the
German and Tamil videos' questions 2, the Korean and Arabic ones 0): the
scores are identical within a video, the case where the per-question
standard error understates the uncertainty."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from avhb.tasks.curve import hooks
from tests.conftest import run_cli

SAMPLE = Path(hooks.__file__).resolve().parent / "sample"
RIGHT_VIDEOS = {"avhbGerman1", "avhbTamil01"}  # rated 2; the others 0


def _cluster_robust_se(values: list[float], clusters: list[str]) -> float:
    """CR1 for a mean: sqrt(G/(G-1) * sum over clusters of (sum of residuals)^2) / n."""
    mean = sum(values) / len(values)
    residuals: dict[str, float] = {}
    for x, c in zip(values, clusters):
        residuals[c] = residuals.get(c, 0.0) + (x - mean)
    g = len(residuals)
    return math.sqrt(g / (g - 1) * sum(r * r for r in residuals.values())) / len(values)


def test_curve_run_records_standard_errors_clustered_by_video(tmp_path):
    records = json.loads((SAMPLE / hooks.JSON_NAME).read_text(encoding="utf-8"))
    data = tmp_path / "curve"
    data.mkdir()
    (data / "videos").symlink_to(SAMPLE / "videos")
    (data / hooks.JSON_NAME).write_text(json.dumps([{**r, "category": "Sports"} for r in records],
                                                   ensure_ascii=False), encoding="utf-8")
    model = [{"id": r["key"], "reply": f"about {hooks.youtube_id(r['video_id'])}"} for r in records]
    judge = [{"match": f"about {v}", "reply": "2" if v in RIGHT_VIDEOS else "0"}
             for v in sorted({hooks.youtube_id(r["video_id"]) for r in records})]
    (tmp_path / "model.json").write_text(json.dumps(model), encoding="utf-8")
    (tmp_path / "judge.json").write_text(json.dumps(judge), encoding="utf-8")
    out = tmp_path / "run"
    proc = run_cli("--tasks", "curve_cat_Sports", "--data", f"curve_cat_Sports={data}",
                   "--model", f"scripted,replies={tmp_path / 'model.json'}",
                   "--judge", f"scorer=scripted,replies={tmp_path / 'judge.json'}",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "not found in" not in proc.stderr  # every sample had its video_id
    task = json.loads((out / "results.json").read_text())["results"]["curve_cat_Sports"]
    lines = [json.loads(line) for line in (out / "samples" / "curve_cat_Sports.jsonl").read_text().splitlines()]
    videos = [line["doc"]["video_id"] for line in lines]
    scores = [line["scores"]["accuracy"] for line in lines]

    distinct = {r["video_id"] for r in records}
    assert len(lines) == len(records) == 10 and len(distinct) == 4
    assert task["accuracy_n"] == 10 and task["accuracy_clusters"] == len(distinct)
    assert task["accuracy"] == pytest.approx(0.6)  # 6 of 10 questions on the two videos rated 2
    # the clustered standard error is CR1 over videos, computed here from the logged scores:
    # residual sums 3 * 0.4 (twice) and 2 * -0.6 (twice) -> sqrt(4/3 * 4 * 1.44) / 10
    assert task["accuracy_stderr_clustered"] == pytest.approx(_cluster_robust_se(scores, videos))
    assert task["accuracy_stderr_clustered"] == pytest.approx(math.sqrt(4 / 3 * 4 * 1.44) / 10)
    # the per-question one treats the 10 answers as independent: sqrt(0.24 * 10/9 / 10)
    assert task["accuracy_stderr"] == pytest.approx(math.sqrt(0.24 / 9))
    assert task["accuracy_stderr_clustered"] > task["accuracy_stderr"] + 0.1

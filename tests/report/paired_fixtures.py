"""Run folders whose results.json is what a run writes from its samples
(each metric the mean of its samples' scores, with the uncertainty the
summary adds), for the paired comparison's tests."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from avhb.runfolder.results import RunResults, TaskResult
from avhb.score.aggregate import Aggregate, mean_stderr
from avhb.score.clusters import ClusterKey
from avhb.score.metric import HEADLINE, MetricInfo, SampleRecord
from avhb.score.uncertainty import add_uncertainty, power_of


def write_run(root: Path, model: str, tasks: dict[str, list[dict[str, Any]]], *,
              configs: dict[str, dict[str, Any]] | None = None, extra: dict[str, dict[str, Aggregate]] | None = None,
              directions: dict[str, bool | None] | None = None, repeats: int = 1,
              groups: dict[str, tuple[list[str], list[str], bool]] | None = None) -> Path:
    """``tasks``: task -> sample lines ({"id", "repeat", "doc", "scores", "error"}).
    ``extra``: task -> numbers that are no mean of the samples' scores (a
    pair statistic) added to its results.  ``groups``: group -> (member
    tasks, metrics, weight_by_size), aggregated as a run aggregates them."""
    root = Path(root)
    (root / "samples").mkdir(parents=True, exist_ok=True)
    configs = configs or {}
    results = RunResults(model=model)
    for task, lines in tasks.items():
        with (root / "samples" / f"{task}.jsonl").open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps({"repeat": 0, "doc": {}, "error": None, **line}) + "\n")
        records = [SampleRecord(id=str(x["id"]), doc=x.get("doc") or {}, repeat=x.get("repeat", 0),
                                error=x.get("error"), scores=x.get("scores") or {}) for x in lines]
        names = list(dict.fromkeys(k for r in records for k in r.scores))
        cells = {m: mean_stderr([r.scores.get(m) for r in records if r.error is None]) for m in names}
        info = {m: MetricInfo(HEADLINE, (directions or {}).get(m, True), m) for m in names}
        key = ClusterKey.of(configs.get(task, {}), repeats)
        scores, _ = add_uncertainty(cells, records, key, info, items=repeats > 1)
        result = TaskResult(cells, samples=len(records), errors=sum(1 for r in records if r.error), info=info)
        result.power = power_of(cells, scores, info, repeats)
        for name, agg in ((extra or {}).get(task) or {}).items():
            result.metrics[name] = agg
            result.info[name] = MetricInfo(HEADLINE, True, name)
        results.tasks[task] = result
    for group, (members, metrics, by_size) in (groups or {}).items():
        spec = {"aggregate": [{"metric": m, "weight_by_size": by_size} for m in metrics]}
        results.aggregate_groups({group: spec}, lambda g, members=members: members)
    run = {"model": {"kind": "test", "name": model}, "created": "2026-01-01T00:00:00+00:00", "avhb_version": "0.1.0",
           "repeats": repeats if repeats > 1 else None,
           "tasks": {t: {"hash": "h", "config": {"task": t, **configs.get(t, {})}} for t in tasks}}
    (root / "run.json").write_text(json.dumps(run, indent=2))
    (root / "results.json").write_text(json.dumps(results.to_json(), indent=2))
    return root


def lines_of(scores: dict[str, list[float | None]], docs: list[dict[str, Any]] | None = None,
             ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Sample lines from per-metric score columns (equal lengths)."""
    n = len(next(iter(scores.values())))
    ids = ids or [f"s{i:03d}" for i in range(n)]
    return [{"id": ids[i], "doc": (docs[i] if docs else {"q": i}),
             "scores": {m: col[i] for m, col in scores.items() if col[i] is not None}} for i in range(n)]

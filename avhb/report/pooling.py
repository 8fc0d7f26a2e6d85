"""``avhb score RUN_DIR --pool OTHER_RUN...``: metrics whose statistic spans
several runs (they define ``Metric.pool``), computed over the runs' sample
files and written to ``RUN_DIR/pooled.json``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.score.metric import SampleRecord
from avhb.registry import get_registry
from avhb.runfolder.folder import write_json_atomic
from avhb.run.task import Task
from avhb.taskdef.index import build_index, load_task


def _records(run_dir: Path, task: str) -> list[SampleRecord]:
    path = run_dir / "samples" / f"{task.replace('/', '__')}.jsonl"
    if not path.is_file():
        raise UserError(f"{run_dir}: no samples for task {task!r} (pooled runs must share their tasks)")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        out.append(SampleRecord(id=d["id"], doc=d.get("doc") or {}, target=d.get("target"), response=d.get("response"),
                                extracted=d.get("extracted"), error=d.get("error"), repeat=d.get("repeat", 0),
                                scores=d.get("scores") or {}, judgements=d.get("judgements") or {},
                                trajectory=d.get("trajectory") or [], outputs=d.get("outputs") or {}))
    return out


def _label(run_dir: Path) -> str:
    run = json.loads((run_dir / "run.json").read_text())
    model = run.get("model") or {}
    return f"{model.get('kind')}:{model.get('name')} ({run_dir.name})"


def pool_runs(run_dirs: list[Path]) -> dict[str, Any]:
    for d in run_dirs:
        if not (d / "run.json").is_file():
            raise UserError(f"{d}: no run.json (not a run folder)")
    main = run_dirs[0]
    run = json.loads((main / "run.json").read_text())
    index, registry = build_index(), get_registry()
    labels = [f"{_label(d)} #{i}" if [_label(x) for x in run_dirs].count(_label(d)) > 1 else _label(d)
              for i, d in enumerate(run_dirs)]
    results: dict[str, Any] = {}
    for name in run.get("tasks", {}):
        task = Task(load_task(index, name), registry)
        poolable = [m for m in task.metrics() if hasattr(m, "pool")]
        if not poolable:
            continue
        runs = [_records(d, name) for d in run_dirs]
        cells: dict[str, dict[str, Any]] = {label: {} for label in labels}
        for metric in poolable:
            for label, aggs in zip(labels, metric.pool(runs)):
                for key, agg in aggs.items():
                    cells[label].update({key: agg.value, f"{key}_stderr": agg.stderr, f"{key}_n": agg.n})
        results[name] = cells
    if not results:
        raise UserError("none of the run's metrics pools across runs (e.g. conciseness)")
    out = {"runs": [str(d) for d in run_dirs], "results": results}
    write_json_atomic(main / "pooled.json", out)
    return out

"""``avhb score RUN_DIR --pool OTHER_RUN...``: metrics whose statistic spans
several runs (they define ``Metric.pool``), computed over the runs' sample
files and written to ``RUN_DIR/pooled.json``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.score.metric import SampleRecord
from avhb.registry import get_registry
from avhb.runfolder.folder import write_json_atomic
from avhb.runfolder.layout import pooled_file
from avhb.runfolder.manifest import read_manifest
from avhb.runfolder.samples import SamplesFile, sample_record
from avhb.run.task import Task
from avhb.taskdef.index import build_index, load_task


def _records(run_dir: Path, task: str) -> list[SampleRecord]:
    source = SamplesFile.of(run_dir, task)
    records = [sample_record(row) for row in source.rows()]
    if source.missing:
        raise UserError(f"{run_dir}: no samples for task {task!r} (pooled runs must share their tasks)")
    if source.bad:
        raise UserError(f"{source.bad_summary()} (pooled numbers need every sample of each run)")
    return records


def _label(run: dict[str, Any], run_dir: Path) -> str:
    model = run.get("model") or {}
    return f"{model.get('kind')}:{model.get('name')} ({run_dir.name})"


def pool_runs(run_dirs: list[Path]) -> dict[str, Any]:
    manifests = [read_manifest(d) for d in run_dirs]
    main, run = run_dirs[0], manifests[0]
    names = [_label(m, d) for m, d in zip(manifests, run_dirs)]
    labels = [f"{name} #{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
    index, registry = build_index(), get_registry()
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
    write_json_atomic(pooled_file(main), out)
    return out

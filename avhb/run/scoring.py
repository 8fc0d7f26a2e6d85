"""The score phase: filters (answer extraction) then metrics (judges
through the same call path as the model) per sample, then the task's
aggregates, per breakdown value and per repeat."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from avhb.errors import EnvironmentFailure, SampleError, UserError
from avhb.call.caller import NotInJournal
from avhb.run.generate import run_bounded
from avhb.run.progress import Progress
from avhb.run.results import TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.judges import TaskJudges
from avhb.score.metric import Metric, SampleRecord, ScoreContext
from avhb.run.task import Task

SCORING_IN_FLIGHT = 64


async def score(task: Task, records: list[SampleRecord], metrics: list[Metric], judges: TaskJudges,
                cost_of: Callable[[], float] = lambda: 0.0, root: Path | None = None) -> None:
    """Fill ``record.extracted`` and ``record.scores``; a filter or metric
    that raises fails its sample (recorded), not the run.  ``root``: the
    task's data root, for metrics that send a sample's media to a judge."""
    ctx = ScoreContext(judges=judges, task=task.name, root=root)
    filters = task.filters()
    crashed: list[str] = []
    with Progress(f"{task.name}: scoring", len(records)) as bar:
        seen = [cost_of()]

        async def one(record: SampleRecord) -> None:
            if record.error is None:
                try:
                    value: Any = record.response
                    for f in filters:
                        value = await f.apply(value, record, ctx)
                    record.extracted = value
                    for m in metrics:
                        record.scores.update(await m.score(record, ctx))
                except SampleError as exc:  # e.g. a sample whose target is not among its options
                    record.error = f"scoring: {exc}"
                    record.scores = {}
                except (UserError, AssertionError, EnvironmentFailure, NotInJournal):
                    raise
                except Exception as exc:  # a metric/filter bug fails this sample, not the run
                    record.error = f"scoring failed: {type(exc).__name__}: {exc}"
                    record.scores = {}
                    crashed.append(record.error)
            spent = cost_of() - seen[0]
            seen[0] += spent
            bar.update(1, error=record.error is not None, cost=spent)

        await run_bounded(records, one, SCORING_IN_FLIGHT)
    if crashed:
        print(f"avhb: warning: {task.name}: scoring failed on {len(crashed)} samples (recorded as errors); "
              f"first: {crashed[0]}", file=sys.stderr)


def _cells(metrics: list[Metric], records: list[SampleRecord],
           owners: dict[str, Metric] | None = None) -> dict[str, Aggregate]:
    """Every metric's aggregates; ``owners`` (when given) learns which
    metric reported each number."""
    out: dict[str, Aggregate] = {}
    for m in metrics:
        cells = m.aggregate(records)
        out.update(cells)
        if owners is not None:
            owners.update(dict.fromkeys(cells, m))
    return out


def summarize(task: Task, records: list[SampleRecord], metrics: list[Metric], judges: TaskJudges,
              repeats: int) -> TaskResult:
    """The task's ``TaskResult``: every metric over all records; with
    ``repeats > 1`` also each repeat's value (``Aggregate.runs``); one cell
    per value of each ``breakdown`` field, with its ``samples`` and
    ``errors``.  A multi-valued field (a list, or a string split at the
    breakdown's ``separator``) puts a record in the cell of each of its
    values, so those cells overlap.  Failed records (``errors``) are left to
    each metric's ``aggregate``, which excludes them (docs/errors.md)."""
    owners: dict[str, Metric] = {}
    result = TaskResult(_cells(metrics, records, owners), samples=len(records),
                        errors=sum(1 for r in records if r.error), judge_failures=sum(judges.failures.values()))
    result.info = {key: m.describe(key) for key, m in owners.items()}
    if repeats > 1 and metrics:
        per_run = [_cells(metrics, [r for r in records if r.repeat == k]) for k in range(repeats)]
        for name, agg in result.metrics.items():
            agg.runs = [run[name].value if name in run else None for run in per_run]
    if metrics:
        for axis in task.breakdown:
            values: dict[str, list[SampleRecord]] = {}
            for r in records:
                for key in axis.values(r.doc):
                    values.setdefault(key, []).append(r)
            result.breakdowns[axis.field] = {value: _cells(metrics, subset) for value, subset in sorted(values.items())}
            result.breakdown_counts[axis.field] = {value: {"samples": len(subset),
                                                           "errors": sum(1 for r in subset if r.error)}
                                                   for value, subset in sorted(values.items())}
    return result

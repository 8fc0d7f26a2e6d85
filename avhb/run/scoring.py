"""The score phase: filters (answer extraction) then metrics (judges
through the same call path as the model) per sample, then the task's
aggregates, per breakdown value and per repeat."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from avhb.errors import SampleError, UserError
from avhb.model.caller import NotInJournal
from avhb.run.generate import run_bounded
from avhb.run.progress import Progress
from avhb.run.results import TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.judges import TaskJudges
from avhb.score.metric import Metric, SampleRecord, ScoreContext
from avhb.taskdef.task import Task

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
                except (UserError, AssertionError, NotInJournal):
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


def _cells(metrics: list[Metric], records: list[SampleRecord]) -> dict[str, Aggregate]:
    out: dict[str, Aggregate] = {}
    for m in metrics:
        out.update(m.aggregate(records))
    return out


def summarize(task: Task, records: list[SampleRecord], metrics: list[Metric], judges: TaskJudges,
              repeats: int) -> TaskResult:
    """The task's ``TaskResult``: every metric over all records; with
    ``repeats > 1`` also each repeat's value (``Aggregate.runs``); one cell
    per value of each ``breakdown`` field."""
    result = TaskResult(_cells(metrics, records), samples=len(records),
                        errors=sum(1 for r in records if r.error), judge_failures=sum(judges.failures.values()))
    if repeats > 1 and metrics:
        per_run = [_cells(metrics, [r for r in records if r.repeat == k]) for k in range(repeats)]
        for name, agg in result.metrics.items():
            agg.runs = [run[name].value if name in run else None for run in per_run]
    if metrics:
        for dim in task.breakdown:
            values: dict[str, list[SampleRecord]] = {}
            for r in records:
                key = r.doc.get(dim)
                values.setdefault("(none)" if key is None else str(key), []).append(r)
            result.breakdowns[dim] = {value: _cells(metrics, subset) for value, subset in sorted(values.items())}
    return result

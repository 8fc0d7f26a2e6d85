"""The score phase: filters (answer extraction) then metrics (judges
through the same call path as the model) per sample, then the task's
aggregates, per breakdown value and per repeat."""
from __future__ import annotations

import sys
from array import array
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from avhb.errors import EnvironmentFailure, SampleError, UserError
from avhb.call.caller import NotInJournal
from avhb.run.generate_phase import run_bounded
from avhb.run.progress import Progress
from avhb.run.reduced import take
from avhb.runfolder.results import TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.clusters import ClusterKey
from avhb.score.judges import TaskJudges
from avhb.score.metric import Metric, SampleRecord, ScoreContext
from avhb.score.uncertainty import add_uncertainty, power_of
from avhb.run.task import Task

SCORING_IN_FLIGHT = 64


def score_bar(task: Task, total: int) -> Progress:
    """The scoring stage's progress over ``total`` records."""
    return Progress(f"{task.name}: scoring", total)


async def score(task: Task, records: list[SampleRecord], metrics: list[Metric], judges: TaskJudges,
                cost_of: Callable[[], float] = lambda: 0.0, root: Path | None = None,
                bar: Progress | None = None) -> list[str]:
    """Fill ``record.extracted`` and ``record.scores``; a filter or metric
    that raises fails its sample (recorded), not the run: the errors of
    those that raised are returned (the caller says them once a task).  ``root``: the
    task's data root, for metrics that send a sample's media to a judge.
    ``records`` hold every repeat of their samples (lm-eval's pipelines
    filter them together); ``bar``: as :func:`avhb.run.generate_phase.generate`'s."""
    ctx = ScoreContext(judges=judges, task=task.name, root=root)
    filters = task.filters()
    pipelines = task.filter_pipelines()
    repeats = _by_sample(records) if pipelines is not None else {}
    crashed: list[str] = []
    with nullcontext(bar) if bar is not None else score_bar(task, len(records)) as bar:
        seen = [cost_of()]

        async def one(record: SampleRecord) -> None:
            if record.error is None:
                try:
                    if pipelines is None:
                        value: Any = record.response
                        for f in filters:
                            value = await f.apply(value, record, ctx)
                        record.extracted = value
                        scored = True
                    else:  # a later repeat is scored within its first repeat, as lm-eval scores a doc once
                        scored = await _filter_repeats(record, repeats[record.id], pipelines, ctx)
                    for m in metrics if scored else ():
                        view = record if m.filter_key is None else replace(record, extracted=record.extracted[m.filter_key])
                        record.scores.update(await m.score(view, ctx))
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
    return crashed


def _by_sample(records: list[SampleRecord]) -> dict[str, list[SampleRecord]]:
    """Each sample's records, by repeat."""
    out: dict[str, list[SampleRecord]] = {}
    for r in records:
        out.setdefault(r.id, []).append(r)
    return {k: sorted(v, key=lambda r: r.repeat) for k, v in out.items()}


async def _filter_repeats(record: SampleRecord, group: list[SampleRecord], pipelines: list, ctx: ScoreContext) -> bool:
    """lm-eval's filter pipelines over one sample's answers to every repeat
    (a list, as lm-eval's filters take it): their results land in the first
    repeat's ``extracted`` ({pipeline: value}) and only that record is
    scored (True).  A later repeat is marked and left unscored (False); when
    any repeat failed the sample fails, as lm-eval needs every answer."""
    if record is not group[0]:
        record.meta["scored_with_repeat"] = group[0].repeat
        return False
    failed = next((r for r in group if r.error is not None), None)
    if failed is not None:
        raise SampleError(f"repeat {failed.repeat} failed ({' '.join(str(failed.error).split())[:200]}); lm-eval's "
                          "filters take every repeat's answer")
    extracted = {}
    for name, steps in pipelines:
        value: Any = [r.response for r in group]
        for f in steps:
            value = await f.apply_all(value, record, ctx)
        extracted[name] = value
    record.extracted = extracted
    return True


def _cells(metrics: list[Metric], records: Sequence[SampleRecord],
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


def summarize(task: Task, records: Sequence[SampleRecord], metrics: list[Metric], judges: TaskJudges,
              repeats: int) -> TaskResult:
    """The task's ``TaskResult``: every metric over all records; with
    ``repeats > 1`` also each repeat's value (``Aggregate.runs``); one cell
    per value of each ``breakdown`` field, with its ``samples`` and
    ``errors``.  A multi-valued field (a list, or a string split at the
    breakdown's ``separator``) puts a record in the cell of each of its
    values, so those cells overlap.  Failed records (``errors``) are left to
    each metric's ``aggregate``, which excludes them (docs/errors.md).
    Every number then gets its uncertainty (``avhb.score.uncertainty``:
    clustered standard errors by the task's ``cluster_key``, intervals;
    per headline metric its power)."""
    owners: dict[str, Metric] = {}
    result = TaskResult(_cells(metrics, records, owners), samples=len(records),
                        errors=sum(1 for r in records if r.error), judge_failures=sum(judges.failures.values()))
    result.info = {key: m.describe(key) for key, m in owners.items()}
    by = cluster_key(task, repeats)
    rates = frozenset(k for k, m in owners.items() if k == m.name and m.rate)
    scores, missing = add_uncertainty(result.metrics, records, by, result.info, items=repeats > 1, rates=rates)
    result.power = power_of(result.metrics, scores, result.info, repeats, rates)
    said = missing.message(task.name, by)
    if said:
        print(f"avhb: warning: {said}", file=sys.stderr)
    if repeats > 1 and metrics and not any(m.filter_key for m in metrics):  # lm-eval pipelines score a sample once
        by_repeat: dict[int, array] = {}
        for i, r in enumerate(records):
            by_repeat.setdefault(r.repeat, array("q")).append(i)
        per_run = [_cells(metrics, take(records, by_repeat.get(k, ()))) for k in range(repeats)]
        for name, agg in result.metrics.items():
            agg.runs = [run[name].value if name in run else None for run in per_run]
    if metrics:
        for axis in task.breakdown:
            where: dict[str, array] = {}
            for i, r in enumerate(records):
                for key in axis.values(r.doc):
                    where.setdefault(key, array("q")).append(i)
            subsets = {value: take(records, where[value]) for value in sorted(where)}
            result.breakdowns[axis.field] = {value: _cells(metrics, subset) for value, subset in subsets.items()}
            for value, subset in subsets.items():
                add_uncertainty(result.breakdowns[axis.field][value], subset, by, result.info, rates=rates)
            result.breakdown_counts[axis.field] = {value: {"samples": len(subset),
                                                           "errors": sum(1 for r in subset if r.error)}
                                                   for value, subset in subsets.items()}
    return result


def cluster_key(task: Task, repeats: int) -> ClusterKey:
    """What the task's samples cluster by (:class:`avhb.score.clusters.ClusterKey`)."""
    return ClusterKey.of(task.cfg, repeats, where=f"{task.cfg.file}: task {task.name}")

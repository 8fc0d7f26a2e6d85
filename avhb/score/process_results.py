"""lm-eval's and lmms-eval's ``process_results: !function utils.fn``: the
task scores each sample itself, ``fn(doc, results) -> {metric: value}``,
and its ``metric_list`` names the keys to report, each with its
``aggregation`` (``mean`` by default, a name of
:mod:`avhb.score.aggregations` or a hook over the list of values) and
``higher_is_better``.

``results`` is what those harnesses pass: ``[answer]`` for a generated
answer (the filtered one when the task filters; lmms-eval conventions strip
it first, as lmms-eval does), ``[(loglikelihood, is_greedy), ...]`` one per
choice for ``multiple_choice``, ``[(loglikelihood, is_greedy)]`` for
``loglikelihood`` and ``[loglikelihood]`` for ``loglikelihood_rolling``.

A returned key the metric_list does not name is kept in the sample log but
not reported (lm-eval fails on it); a named key the hook did not return is
missing for that sample (excluded from its aggregate).  Values are kept as
the hook returns them (lmms-eval aggregations take dicts), made JSON-able
for the sample log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from avhb.errors import SampleError
from avhb.score.aggregate import Aggregate
from avhb.score.aggregations import Aggregation
from avhb.score.metric import HEADLINE, Metric, MetricInfo, SampleRecord, ScoreContext


@dataclass
class Reported:
    """One metric_list entry of a process_results task."""

    key: str  # the key process_results returns
    aggregation: Aggregation
    higher_is_better: bool | None = True


class ProcessResults(Metric):
    """Scores each sample with the task's ``process_results`` hook (module docstring)."""
    reads = frozenset()  # what aggregate() reads (Metric.reads)

    name = "process_results"

    def __init__(self, call: Callable[[dict[str, Any], list[Any]], Any], results_of: Callable[[SampleRecord], list[Any]],
                 reported: list[Reported], hook: str, filter_key: str | None = None):
        super().__init__(None)
        self.call, self.results_of, self.reported, self.hook = call, results_of, reported, hook
        self.filter_key = filter_key
        self.suffix = f",{filter_key}" if filter_key else ""

    def key(self, entry: Reported) -> str:
        return entry.key + self.suffix

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        out = self.call(record.doc, self.results_of(record))
        if not isinstance(out, dict):
            raise SampleError(f"process_results hook {self.hook} returned {type(out).__name__}, not a mapping of "
                              "metric names to values")
        return {k + self.suffix: _jsonable(v) for k, v in out.items()}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = [r for r in records if r.error is None]
        return {self.key(e): e.aggregation.aggregate([r.scores.get(self.key(e)) for r in ok]) for e in self.reported}

    def describe(self, key: str) -> MetricInfo:
        for e in self.reported:
            if self.key(e) == key:
                how = "mean" if e.aggregation.fn is None else e.aggregation.name
                return MetricInfo(HEADLINE, e.higher_is_better, f"{e.key} from {self.hook} ({how} over samples)")
        return super().describe(key)


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists; tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return value

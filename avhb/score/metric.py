"""The metric and filter protocols.

A metric scores one sample (possibly asking judges) and aggregates many.
Options come from the task YAML's ``metric_list`` entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avhb.score.aggregate import Aggregate, mean_stderr

if TYPE_CHECKING:  # pragma: no cover
    from avhb.score.judges import TaskJudges


@dataclass
class SampleRecord:
    """One sample as metrics see it; also one line of samples/<task>.jsonl."""

    id: str
    doc: dict[str, Any]
    target: Any = None
    response: str | None = None  # raw model text (None when the sample failed)
    extracted: Any = None  # after the filter chain
    error: str | None = None
    repeat: int = 0
    scores: dict[str, Any] = field(default_factory=dict)
    judgements: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)  # media used, adaptations, unparsed flags
    trajectory: list[dict[str, Any]] = field(default_factory=list)  # a multi-step sample's steps
    outputs: dict[str, Any] = field(default_factory=dict)  # extra fields a driver returned, for metrics


@dataclass
class ScoreContext:
    judges: "TaskJudges"
    task: str
    root: Path | None = None  # the task's data root (media paths in a sample are relative to it)

    def media_path(self, path: str) -> str:
        """A sample's media path, resolved against the data root."""
        p = Path(path)
        return str(p if p.is_absolute() or self.root is None else self.root / p)


class Metric:
    """Override ``score``; override ``aggregate`` for pair/group metrics."""

    name: str = ""
    higher_is_better: bool = True
    needs_judges: tuple[str, ...] = ()
    requires: tuple[tuple[str, str], ...] = ()  # optional packages: (module, avhb extra), checked up front

    def __init__(self, name: str | None = None, **options: Any):
        if name:
            self.name = name
        self.options = options

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        """Per-sample values; by convention ``{self.name: float | None}``.
        None means 'not scorable' (excluded from the mean and counted)."""
        raise NotImplementedError

    def group_key(self, record: SampleRecord) -> Any:
        """The unit (pair, group) this metric scores ``record`` in, for a
        metric whose aggregate needs every member of a unit together:
        ``--shard`` keeps the samples of one key in one shard
        (:mod:`avhb.run.shard`).  Read only ``record.id``, ``record.doc``
        and ``record.target``: it is asked before any model call.  None
        (the default): the sample is scored on its own."""
        return None

    def aggregate(self, records: list[SampleRecord]) -> dict[str, Aggregate]:
        return {self.name: mean_stderr([r.scores.get(self.name) for r in records if r.error is None] +
                                       [0.0 for r in records if r.error is not None and self.options.get("errors_count_as_wrong", True)])}


# A metric may also define ``pool(runs: list[list[SampleRecord]]) ->
# list[dict[str, Aggregate]]``: statistics computed across several runs (e.g.
# conciseness cut points pooled over every model), used by
# ``avhb score RUN_DIR --pool OTHER_RUN...``.


class Filter:
    """One step of answer extraction: value in, value out."""

    name: str = ""

    def __init__(self, **options: Any):
        self.options = options

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        raise NotImplementedError

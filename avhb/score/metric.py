"""The metric and filter protocols.

A metric scores one sample (possibly asking judges) and aggregates many.
Options come from the task YAML's ``metric_list`` entry.

Error policy (docs/errors.md): a sample that failed for a reason outside
the model (``record.error``: missing or corrupt media, a hook or data error,
a backend that never answered) is never a wrong answer.  It is not scored,
is excluded from every aggregate, and is counted in the task's ``errors``
(per breakdown value and per group too).  An answer the model gave that is
unusable (empty, unparsable) is scored by each metric's own rule.
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
        if "errors_count_as_wrong" in options:
            from avhb.errors import UserError

            raise UserError(f"metric {self.name!r}: option errors_count_as_wrong was removed: a sample that failed "
                            "outside the model is excluded and counted in 'errors' (docs/errors.md)")
        self.options = options

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        """Per-sample values; by convention ``{self.name: float | None}``.
        None means 'not scorable' (excluded from the mean and counted)."""
        raise NotImplementedError

    def aggregate(self, records: list[SampleRecord]) -> dict[str, Aggregate]:
        """The mean of the per-sample values over samples that did not fail
        (``None`` values excluded too)."""
        return {self.name: mean_stderr([r.scores.get(self.name) for r in records if r.error is None])}


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

"""The metric and filter protocols.

A metric scores one sample (possibly asking judges) and aggregates many.
Options come from the task YAML's ``metric_list`` entry.

Every number a metric reports is one of three kinds (:class:`MetricInfo`),
which the results table and the report read:

* ``headline``: the benchmark's numbers, shown first, with ± stderr and n;
* ``diagnostic``: numbers that explain the headline (a yes-ratio, per-judge
  kappas), shown after it; a chart of diagnostics that are all zero or
  missing is not drawn;
* ``count``: tallies (unparsed replies, judge failures, skipped pairs),
  shown as integer columns, never as a metric row or a bar.

A metric declares the options it reads in one place, ``accepts`` (option
-> one line; a subclass adds to its bases'; ``{}``: none; the key ``"*"``
accepts any other option, e.g. keyword arguments passed on to a library).
Any other option is refused when the metric is built (``UserError`` naming
the metric, the option and the valid ones) and by ``avhb validate``, which
reads ``accepts`` without running a pack's code: keep it a literal dict.
A plugin metric written before ``accepts`` existed (no class below
``Metric`` declares it) keeps working: its options are passed unchecked,
said once per class on stderr.

A metric declares the kind of its own value (``kind``, default headline,
with ``higher_is_better``) and of its other outputs (``outputs``: the
suffix after ``<name>_``, or a glob of it, -> kind or (kind, description));
an output it does not declare is a diagnostic.  Its one-line description is
``description``, else the first line of its class docstring; a task's YAML
may override ``kind``, ``higher_is_better`` and ``description`` of the
metric's own value.
Error policy (docs/errors.md): a sample that failed for a reason outside
the model (``record.error``: missing or corrupt media, a hook or data error,
a backend that never answered) is never a wrong answer.  It is not scored,
is excluded from every aggregate, and is counted in the task's ``errors``
(per breakdown value and per group too).  An answer the model gave that is
unusable (empty, unparsable) is scored by each metric's own rule.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from avhb.score.aggregate import Aggregate, mean_stderr

if TYPE_CHECKING:  # pragma: no cover
    from avhb.score.judges import TaskJudges


HEADLINE, DIAGNOSTIC, COUNT = "headline", "diagnostic", "count"
KINDS = (HEADLINE, DIAGNOSTIC, COUNT)


@dataclass(frozen=True)
class MetricInfo:
    """What one reported number is: its kind, its direction (None: neither
    way is better) and a one-line description."""

    kind: str = HEADLINE
    higher_is_better: bool | None = True
    description: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "higher_is_better": self.higher_is_better, "description": self.description}

    @classmethod
    def from_dict(cls, d: Any) -> "MetricInfo | None":
        if not isinstance(d, dict) or d.get("kind") not in KINDS:
            return None
        hib = d.get("higher_is_better")
        return cls(d["kind"], hib if isinstance(hib, bool) else None, str(d.get("description") or ""))


_UNDECLARED_SAID: set[type] = set()  # metric classes whose unchecked options were said


def option_problem(accepted: dict[str, str] | set[str] | frozenset[str], options: Any) -> str | None:
    """The one-line complaint about the first option not in ``accepted``
    (``"*"`` there accepts anything), with a close spelling and the valid
    options; None when every option is accepted."""
    import difflib

    if "*" in accepted:
        return None
    valid = sorted(accepted)
    for key in options:
        if key not in accepted:
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listed = ", ".join(valid) if valid else "none"
            return f"unknown option {key!r}{hint} (its options: {listed})"
    return None


def first_sentence(doc: str | None, limit: int = 160) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    text = " ".join((doc or "").strip().split("\n\n")[0].split())
    head = text.split(". ")[0].rstrip(".")
    return (head[: limit - 1] + "…") if len(head) > limit else head


@dataclass(slots=True)
class SampleRecord:
    """One sample as metrics see it; also one line of samples/<task>.jsonl.
    Slotted: a run holds one per sample (and repeat) of each of its tasks."""

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
    kind: str = HEADLINE
    higher_is_better: bool | None = True
    description: str = ""  # one line; default: the first line of the class docstring
    outputs: dict[str, Any] = {}  # other outputs: suffix (glob) -> kind or (kind, description)
    # the metric's own value is a share of units, in [0, 1] (a pair accuracy, an F1): without per-sample
    # scores to read (avhb.score.uncertainty) its interval is then Wilson's at its effective size, inside [0, 1]
    rate: bool = False
    needs_judges: tuple[str, ...] = ()
    requires: tuple[tuple[str, str], ...] = ()  # optional packages: (module, avhb extra), checked up front
    accepts: dict[str, str] = {}  # the options this class reads -> what each does (module docstring)
    # lm-eval's metric_list ``aggregation`` (avhb.score.aggregations.Aggregation; None: the mean), set
    # from the YAML.  A class that overrides aggregate() takes one only if it sets
    # ``takes_aggregation = True`` itself (its aggregate() calls this one for its own value)
    aggregation: Any = None
    # the lm-eval filter pipeline (filter_list ``name``) whose answer this metric scores; its reported
    # name is then lm-eval's ``metric,filter`` (None: the task's one answer)
    filter_key: str | None = None
    # the SampleRecord fields aggregate() reads besides id, repeat, error and scores (which every
    # record keeps): "doc", "target", "response", "extracted", "judgements", "meta", "trajectory",
    # "outputs".  A task's records are reduced to these once written (avhb.run.stream).  Declared by
    # the class that defines aggregate() or one below it (reads_of); a class that overrides aggregate()
    # without declaring reads has its records kept whole
    reads: frozenset[str] = frozenset()

    def __init__(self, name: str | None = None, **options: Any):
        if name:
            self.name = name
        if "errors_count_as_wrong" in options:
            from avhb.errors import UserError

            raise UserError(f"metric {self.name!r}: option errors_count_as_wrong was removed: a sample that failed "
                            "outside the model is excluded and counted in 'errors' (docs/errors.md)")
        accepted = type(self).accepted_options()
        problem = option_problem(accepted, options) if accepted is not None else None
        if problem:
            from avhb.errors import UserError

            raise UserError(f"metric {self.name!r}: {problem}")
        if accepted is None and options and type(self) not in _UNDECLARED_SAID:
            import sys

            _UNDECLARED_SAID.add(type(self))
            print(f"avhb: warning: metric {self.name!r} ({type(self).__module__}.{type(self).__qualname__}) does not "
                  f"declare the options it reads (Metric.accepts): {', '.join(map(repr, options))} not checked",
                  file=sys.stderr)
        self.options = options

    @classmethod
    def accepted_options(cls) -> dict[str, str] | None:
        """Every option the metric reads: ``accepts`` of the class and its
        bases; None when no class below ``Metric`` declares it (module
        docstring)."""
        out: dict[str, str] = {}
        declared = False
        for klass in reversed(cls.__mro__):
            if klass is not Metric and "accepts" in vars(klass):
                declared = True
                out.update(vars(klass)["accepts"] or {})
        return out if declared else None

    def describe(self, key: str) -> MetricInfo:
        """The kind, direction and description of one output (module docstring)."""
        if key == self.name:
            return MetricInfo(self.kind, self.higher_is_better, self.description or first_sentence(type(self).__doc__))
        suffix = key[len(self.name) + 1:] if key.startswith(self.name + "_") else key
        for pattern, spec in self.outputs.items():
            if fnmatch.fnmatchcase(suffix, pattern):
                kind, text = (spec, "") if isinstance(spec, str) else spec
                hib = False if kind == COUNT else None if kind == DIAGNOSTIC else self.higher_is_better
                return MetricInfo(kind, hib, text or suffix.replace("_", " "))
        return MetricInfo(DIAGNOSTIC, None, suffix.replace("_", " "))

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        """Per-sample values; by convention ``{self.name: float | None}``.
        None means 'not scorable' (excluded from the mean and counted)."""
        raise NotImplementedError

    def group_key(self, record: SampleRecord) -> Any:
        """The unit (pair, group) this metric scores ``record`` in, for a
        metric whose aggregate needs every member of a unit together:
        ``--shard`` keeps the samples of one key in one shard
        (:mod:`avhb.cluster.shard`).  Read only ``record.id``, ``record.doc``
        and ``record.target``: it is asked before any model call.  None
        (the default): the sample is scored on its own."""
        return None

    def declares(self, key: str) -> bool:
        """Whether ``key`` is this metric's value or one of its declared ``outputs``."""
        if key == self.name:
            return True
        suffix = key[len(self.name) + 1:] if key.startswith(self.name + "_") else key
        return any(fnmatch.fnmatchcase(suffix, pattern) for pattern in self.outputs)

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        """Over samples that did not fail: the mean of the per-sample values
        of ``self.name`` (or the YAML's ``aggregation`` of them) and of each
        declared output the samples report (``None`` values excluded), a
        ``count`` output summed (n = those samples).  Per-sample keys the
        metric does not declare are its own business (an override reads
        them)."""
        # passes over the records' scores, none holding them (a long task's are read from columns: usable_scores)
        ok = 0
        seen: dict[str, bool] = {self.name: False}  # every score key met, in order -> whether it is an output here
        for scores in usable_scores(records):
            ok += 1
            for k in scores:
                if k not in seen:
                    seen[k] = self.declares(k)
        values = _Values(records, self.name)
        out = {self.name: self.aggregation.aggregate(list(values)) if self.aggregation is not None else mean_stderr(values)}
        keys = [k for k, declared in seen.items() if declared]
        for key in keys:
            numbers: list[Any] = [v for scores in usable_scores(records) if _is_number(v := scores.get(key))]
            if self.describe(key).kind == COUNT:
                out[key] = Aggregate(float(sum(numbers)), None, ok)
            elif numbers:
                out[key] = mean_stderr(numbers)
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))  # a bool counts as 0/1


def usable_scores(records: Sequence[SampleRecord]) -> Iterator[Mapping[str, Any]]:
    """The scores of the records that did not fail (``error`` None), in
    order.  A sequence that holds its records as columns (a long task's:
    avhb.run.reduced) reads them there, building no record."""
    read = getattr(records, "usable_scores", None)
    return read() if read is not None else (r.scores for r in records if r.error is None)


class _Values:
    """One score of the records that did not fail, read again on every pass
    (:func:`mean_stderr` makes three): a million samples' values are not held."""

    def __init__(self, records: Sequence[SampleRecord], name: str):
        self.records, self.name = records, name

    def __iter__(self) -> Iterator[Any]:
        name = self.name
        return (scores.get(name) for scores in usable_scores(self.records))


RECORD_FIELDS = frozenset({"doc", "target", "response", "extracted", "judgements", "meta", "trajectory", "outputs"})


def reads_of(metric: Metric) -> frozenset[str] | None:
    """The record fields ``metric.aggregate`` reads (``Metric.reads``): the
    declaration of the class that defines its ``aggregate``, or of a class
    below it; None (keep records whole) when that class and those below it
    declare none.  A name that is not a record field is refused."""
    for klass in type(metric).__mro__:
        declared = vars(klass).get("reads")
        if declared is not None:
            unknown = sorted(set(declared) - RECORD_FIELDS)
            if unknown:
                from avhb.errors import UserError

                raise UserError(f"metric {metric.name!r} ({klass.__module__}.{klass.__qualname__}): reads names "
                                f"{', '.join(map(repr, unknown))}, not record fields ({', '.join(sorted(RECORD_FIELDS))})")
            return frozenset(declared)
        if "aggregate" in vars(klass):
            return None
    return None


def takes_aggregation(cls: type) -> bool:
    """Whether a metric class honours a YAML ``aggregation`` (see Metric.aggregation)."""
    for klass in cls.__mro__:
        if klass is Metric:
            return True
        if "aggregate" in vars(klass):
            return vars(klass).get("takes_aggregation") is True
    return False


# A metric may also define ``pool(runs: list[list[SampleRecord]]) ->
# list[dict[str, Aggregate]]``: statistics computed across several runs (e.g.
# conciseness cut points pooled over every model), used by
# ``avhb score RUN_DIR --pool OTHER_RUN...``.
#
# And ``prepare() -> str | None``: for ``avhb prepare``, a metric that fetches
# files when built (an ``evaluate`` module from the Hub) says what it fetched
# and where offline runs find it.


class Filter:
    """One step of answer extraction: value in, value out.

    In an lm-eval filter pipeline (``filter_list: [{name, filter: [...]}]``)
    a step receives what lm-eval's filters receive: a sample's answers to
    every repeat, as a list (``apply_all``); the default maps ``apply`` over
    the list (a value that is no longer a list, after a selection such as
    ``take_first``, is given to ``apply`` as it is).  Selections override it."""

    name: str = ""

    def __init__(self, **options: Any):
        self.options = options

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        raise NotImplementedError

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if isinstance(values, list):
            return [await self.apply(v, record, ctx) for v in values]
        return await self.apply(values, record, ctx)

"""Judge-rated scales: a Likert mean (1-5) per facet and the 0/1/2 scorer.

Definitions
-----------
Likert facet (``likert``): one judge role rates each sample on a closed
scale (default 1..5).  With a judge panel the Verdict's ``value`` is already
the panel's combined rating (e.g. the mean of the members' ratings) and the
members' own ratings sit in ``per_judge`` (kept for agreement statistics).
The facet score is the mean of the valid ratings over samples; a reply that
never parsed (``ok`` False) or a value off the scale is *excluded from the
mean and counted* in ``<name>_judge_failures`` — never guessed.

Valid value: a single judge's rating (``per_judge`` with at most one entry)
must be a whole number on the scale (option ``integer``, default True for
both metrics); a panel's combined value (``len(per_judge) > 1``) may be any
number on the closed scale, since the mean of the members' ratings (1 and 2
-> 1.5) need not be whole.  Panel members whose own reply failed (None in
``per_judge``) are counted in ``<name>_member_failures`` (summed over
samples); the sample still counts when the panel's value is valid.

0/1/2 scorer (``judge_012``): the judge gives 0 (wrong), 1 (partly right) or
2 (right); a panel's combined value lies on [0, 2].  Per-sample score =
value / 2, so the aggregate equals
mean(score) / 2 (CURVE's accuracy).  As with the Likert facets, and as the
paper counts it, a failed judge reply is excluded and counted in
``<name>_judge_failures``; option ``failures_as_zero: true`` scores it 0
instead (still counted).

Samples that failed outside the model (``record.error``) are not sent to
the judge; both metrics exclude them (docs/errors.md) and count them in
``<name>_errors``.

Both metrics pass the judge the fields configured by the ``fields`` option
(field name -> spec, see ``avhb.score.metric_helpers.resolve``), by default
``{"question": "doc.question", "reference": "target", "response": "extracted"}``
(``extracted`` falls back to the raw response when no filter ran).

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

from typing import Any, Sequence

from avhb import COUNT, DIAGNOSTIC, Aggregate, Metric, SampleRecord, ScoreContext, mean_stderr
from avhb.score.metric_helpers import count, judge_fields, usable, verdict_log


DEFAULT_FIELDS = {"question": "doc.question", "reference": "target", "response": "extracted"}


def valid_rating(value: Any, low: float, high: float, integer: bool = False) -> float | None:
    """``value`` as a float if it is a number on ``[low, high]`` (and whole
    when ``integer``), else None.  Booleans are not ratings."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    if not (low <= v <= high) or (integer and v != int(v)):
        return None
    return v


def likert_mean(ratings: list[Any], low: float = 1, high: float = 5) -> tuple[Aggregate, int]:
    """Mean of the valid ratings and the number of invalid ones."""
    valid = [valid_rating(r, low, high) for r in ratings]
    return mean_stderr(valid), sum(v is None for v in valid)


def is_panel(verdict_or_log: Any) -> bool:
    """True when the value was combined from several judges
    (``len(per_judge) > 1``); accepts a Verdict or its log dict."""
    per = (verdict_or_log.get("per_judge") if isinstance(verdict_or_log, dict)
           else getattr(verdict_or_log, "per_judge", None))
    return len(per or []) > 1


def member_failures(verdict_or_log: Any) -> int:
    """Number of panel members whose own reply failed (None in ``per_judge``)."""
    per = (verdict_or_log.get("per_judge") if isinstance(verdict_or_log, dict)
           else getattr(verdict_or_log, "per_judge", None))
    return sum(v is None for v in (per or []))


def score_012(values: list[Any], failures_as_zero: bool = False, integer: bool = True) -> tuple[Aggregate, int]:
    """Accuracy = mean(score)/2 over the valid values on [0, 2] (whole
    numbers only when ``integer``), and the number of invalid values
    (excluded, or scored 0 with ``failures_as_zero``)."""
    scores: list[float | None] = []
    failures = 0
    for v in values:
        r = valid_rating(v, 0, 2, integer=integer)
        if r is None:
            failures += 1
            scores.append(0.0 if failures_as_zero else None)
        else:
            scores.append(r / 2)
    return mean_stderr(scores), failures


class _JudgedScale(Metric):
    default_role = ""
    low: float = 1
    high: float = 5
    accepts = {"role": "the judge role", "fields": "judge field -> field spec (default question, response, reference)",
               "integer": "a single judge's rating must be whole (default true)"}

    @property
    def role(self) -> str:
        return self.options.get("role", self.default_role)

    @property
    def integer(self) -> bool:
        """Whether a single judge's value must be a whole number."""
        return bool(self.options.get("integer", True))

    async def _ask(self, record: SampleRecord, ctx: ScoreContext) -> float | None:
        specs = dict(self.options.get("fields") or DEFAULT_FIELDS)
        fields = judge_fields(record, specs)
        if specs.get("response") == "extracted" and record.extracted is None:
            fields["response"] = record.response or ""
        verdict = await ctx.judges.ask(self.role, fields)
        record.judgements[self.name] = verdict_log(self.role, verdict)
        whole = self.integer and not is_panel(verdict)
        value = valid_rating(verdict.value, self.low, self.high, whole) if verdict.ok else None
        if value is None:
            record.meta.setdefault("judge_failures", []).append(self.name)
        return value

    def _member_failures(self, records: Sequence[SampleRecord]) -> Aggregate:
        ok = usable(records)
        return count(sum(member_failures(r.judgements.get(self.name) or {}) for r in ok), len(ok))


class LikertFacet(_JudgedScale):
    """Options: ``role`` (judge role, default "cot_judge"), ``fields``,
    ``scale`` ([low, high], default [1, 5]), ``integer`` (True: a single
    judge's rating must be whole)."""
    reads = frozenset({"judgements"})  # what aggregate() reads (Metric.reads)

    name = "likert"
    description = "mean judge rating on the scale (a panel: the mean of its members' valid ratings)"
    accepts = {"scale": "[low, high] (default [1, 5])"}
    outputs = {"judge_failures": (COUNT, "judge replies that never parsed (excluded)"),
               "member_failures": (COUNT, "panel members whose reply never parsed"),
               "errors": (COUNT, "samples that failed before the judge")}
    default_role = "cot_judge"

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.low, self.high = (float(x) for x in options.get("scale", (1, 5)))

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.role,)

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {self.name: await self._ask(record, ctx)}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        values = [r.scores.get(self.name) for r in ok]
        return {
            self.name: mean_stderr(values),
            f"{self.name}_judge_failures": count(sum(v is None for v in values), len(ok)),
            f"{self.name}_member_failures": self._member_failures(records),
            f"{self.name}_errors": count(len(records) - len(ok), len(records)),
        }


class Judge012(_JudgedScale):
    """Options: ``role`` (default "scorer"), ``fields``,
    ``failures_as_zero`` (False),
    ``integer`` (True: a single judge's value must be 0, 1 or 2)."""
    reads = frozenset({"judgements"})  # what aggregate() reads (Metric.reads)

    name = "judge_012"
    description = "mean 0/1/2 judge rating / 2"
    accepts = {"failures_as_zero": "a reply that never parsed scores 0 instead of being excluded (default false)"}
    outputs = {"raw": (DIAGNOSTIC, "mean 0/1/2 rating"),
               "judge_failures": (COUNT, "judge replies that never parsed (excluded)"),
               "member_failures": (COUNT, "panel members whose reply never parsed"),
               "errors": (COUNT, "samples that failed before the judge")}
    default_role = "scorer"
    low, high = 0, 2

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.role,)

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        value = await self._ask(record, ctx)
        return {self.name: None if value is None else value / 2, f"{self.name}_raw": value}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        # ``score`` already applied the single-judge/panel rule (a rejected
        # value has score None and raw None), so any raw value on [0, 2] is
        # accepted here.
        ok = usable(records)
        raw = [r.scores.get(f"{self.name}_raw") if r.scores.get(self.name) is not None else None for r in ok]
        agg, failures = score_012(raw, bool(self.options.get("failures_as_zero", False)), integer=False)
        n_err = len(records) - len(ok)
        return {
            self.name: agg,
            f"{self.name}_judge_failures": count(failures, len(ok)),
            f"{self.name}_member_failures": self._member_failures(records),
            f"{self.name}_errors": count(n_err, len(records)),
        }

"""Generic pair / group scoring: all-members-right unit accuracy and macro F1.

Definitions
-----------
``unit_accuracy``: records are grouped into units by ``key_fn`` (records
whose key is None belong to no unit).  ``correct_fn`` says per member
True / False / None (unknown: no usable answer).  Then, per unit:

* incomplete units (fewer than ``expected_size`` members, e.g. a pair with
  one side missing): excluded and counted (``incomplete="exclude"``,
  default), scored wrong (``"wrong"``) or scored on the members present
  (``"score"``);
* ``unknown="exclude"`` (default): unknown members are dropped; a unit with
  no known member is excluded and counted; otherwise the unit is right iff
  every known member is right.  ``unknown="wrong"``: an unknown member
  makes the unit wrong.

unit accuracy = right units / scored units (stderr: closed form of a mean
of 0/1 unit scores).

A unit with a member that failed outside the model (``record.error``) is
excluded and counted (``<name>_error_units``): whether every member is
right cannot be known (docs/errors.md).  ``macro_f1`` drops failed records.

``macro_f1``: per label F1 = 2TP / (2TP + FP + FN) (0 when the label never
occurs in gold or prediction), averaged over ``labels`` (default: every
label seen in gold or prediction).  An unknown prediction (None) is a miss
of its gold label (FN only, ``unknown="wrong"``, default) or dropped
(``unknown="exclude"``).  Stderr by bootstrap over items.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from avhb import COUNT, Aggregate, Metric, SampleRecord, ScoreContext, UserError, bootstrap_stderr, mean_stderr
from avhb.score.metric_helpers import count, resolve

from .choice import normalize_text


@dataclass
class UnitStats:
    unit_scores: list[float] = field(default_factory=list)  # one 0/1 per scored unit
    excluded_units: int = 0  # no known member
    incomplete_units: int = 0  # fewer members than expected (whatever their fate)
    unknown_members: int = 0

    @property
    def correct(self) -> int:
        return int(sum(self.unit_scores))

    @property
    def total(self) -> int:
        return len(self.unit_scores)

    def aggregate(self) -> Aggregate:
        return mean_stderr(self.unit_scores)


def group_units(records: Iterable[Any], key_fn: Callable[[Any], Hashable | None]) -> dict[Hashable, list[Any]]:
    """Records by unit key, in first-seen order; None keys are skipped."""
    units: dict[Hashable, list[Any]] = {}
    for r in records:
        k = key_fn(r)
        if k is not None:
            units.setdefault(k, []).append(r)
    return units


def unit_accuracy(
    records: Iterable[Any],
    key_fn: Callable[[Any], Hashable | None],
    correct_fn: Callable[[Any], bool | None],
    unknown: str = "exclude",
    expected_size: int | None = None,
    incomplete: str = "exclude",
) -> UnitStats:
    """Share of units whose every member is right (see module docstring)."""
    if unknown not in ("exclude", "wrong"):
        raise ValueError(f"unknown must be 'exclude' or 'wrong', not {unknown!r}")
    if incomplete not in ("exclude", "wrong", "score"):
        raise ValueError(f"incomplete must be 'exclude', 'wrong' or 'score', not {incomplete!r}")
    stats = UnitStats()
    for members in group_units(records, key_fn).values():
        verdicts = [correct_fn(m) for m in members]
        stats.unknown_members += sum(v is None for v in verdicts)
        if expected_size is not None and len(members) < expected_size:
            stats.incomplete_units += 1
            if incomplete == "exclude":
                continue
            if incomplete == "wrong":
                stats.unit_scores.append(0.0)
                continue
        if unknown == "wrong":
            stats.unit_scores.append(float(all(v is True for v in verdicts)))
            continue
        known = [v for v in verdicts if v is not None]
        if not known:
            stats.excluded_units += 1
            continue
        stats.unit_scores.append(float(all(known)))
    return stats


def macro_f1(preds: Sequence[Any], golds: Sequence[Any], labels: Sequence[Any] | None = None,
             unknown: str = "wrong") -> float | None:
    """Macro-averaged F1 over labels (see module docstring); None when
    there is no item."""
    if len(preds) != len(golds):
        raise ValueError("preds and golds differ in length")
    if unknown not in ("exclude", "wrong"):
        raise ValueError(f"unknown must be 'exclude' or 'wrong', not {unknown!r}")
    items = [(p, g) for p, g in zip(preds, golds) if not (unknown == "exclude" and p is None)]
    if not items:
        return None
    labs = list(labels) if labels is not None else sorted({g for _, g in items} | {p for p, _ in items if p is not None}, key=str)
    tp: Counter[Any] = Counter()  # per label: true positives, false positives, false negatives
    fp: Counter[Any] = Counter()
    fn: Counter[Any] = Counter()
    for p, g in items:
        if p == g:
            tp[g] += 1
        else:
            fn[g] += 1
            if p is not None:
                fp[p] += 1
    scores = [(2 * tp[c] / (2 * tp[c] + fp[c] + fn[c])) if (tp[c] + fp[c] + fn[c]) else 0.0 for c in labs]
    return sum(scores) / len(scores) if scores else None


# ---------------------------------------------------------------- metrics

def _norm(value: Any) -> Any:
    return normalize_text(value) if isinstance(value, str) else value


class UnitAccuracy(Metric):
    """Options: ``key`` (list of field specs forming the unit key, e.g.
    ``[doc.id, doc.qa_group]``; required), ``correct`` (field spec of a
    per-sample 1/0/None value, e.g. ``scores.exact_match``; default: the
    extracted answer equals the target after strip/lower-case, unknown when
    nothing was extracted), ``unknown``, ``expected_size``, ``incomplete``
    (see ``unit_accuracy``).  A unit with a failed member is excluded and
    counted in ``<name>_error_units``."""

    name = "unit_accuracy"
    description = "share of units (pairs, groups) whose members are all right"
    accepts = {"key": "field specs forming the unit key (required)",
               "correct": "field spec of a per-sample 1/0/None value (default: extracted equals target)",
               "unknown": "exclude (default) or wrong: a member with no answer",
               "expected_size": "members a complete unit has", "incomplete": "exclude (default) or wrong"}
    outputs = {"excluded_units": COUNT, "incomplete_units": COUNT, "unknown_members": COUNT}
    default_size: int | None = None

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {}

    def _key(self, record: SampleRecord) -> Hashable | None:
        specs = self.options.get("key")
        if not specs:
            raise ValueError(f"{self.name}: option 'key' (list of field specs) is required")
        parts = tuple(resolve(record, s) for s in ([specs] if isinstance(specs, str) else specs))
        return None if any(p is None for p in parts) else tuple(str(p) for p in parts)

    def group_key(self, record: SampleRecord) -> Hashable | None:
        """The unit key, for ``--shard``: only key fields known before the
        model answers (``doc.*``, ``id``, ``target``) can keep a unit in
        one shard."""
        specs = self.options.get("key") or []
        for spec in [specs] if isinstance(specs, str) else specs:
            if not (spec in ("id", "target") or spec.startswith(("doc.", "literal:"))):
                raise UserError(f"metric {self.name}: key field {spec!r} is known only after the model answers, "
                                "so a shard cannot keep its units together (use doc.* fields, id or target)")
        return self._key(record)

    def _correct(self, record: SampleRecord) -> bool | None:
        spec = self.options.get("correct")
        if spec:
            v = resolve(record, spec)
            return None if v is None else bool(v)
        if record.extracted is None:
            return None
        return _norm(record.extracted) == _norm(record.target)

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        units = group_units(records, self._key)
        failed = {k for k, members in units.items() if any(m.error is not None for m in members)}
        kept = [r for r in records if self._key(r) not in failed]
        stats = unit_accuracy(kept, self._key, self._correct, self.options.get("unknown", "exclude"),
                              self.options.get("expected_size", self.default_size),
                              self.options.get("incomplete", "exclude"))
        return {
            self.name: stats.aggregate(),
            f"{self.name}_excluded_units": count(stats.excluded_units, len(units)),
            f"{self.name}_incomplete_units": count(stats.incomplete_units, len(units)),
            f"{self.name}_unknown_members": count(stats.unknown_members, len(kept)),
            f"{self.name}_error_units": count(len(failed), len(units)),
        }


class PairAccuracy(UnitAccuracy):
    """``unit_accuracy`` with ``expected_size`` 2 by default."""

    name = "pair_accuracy"
    description = "share of pairs whose two members are both right"
    default_size = 2


def _f1_from_codes(p: np.ndarray, g: np.ndarray, k: int) -> float | None:
    """Macro F1 over label codes 0..k-1; code k = a label outside the list,
    -1 = unknown prediction (a miss)."""
    if p.size == 0 or k == 0:
        return None
    hit = p == g
    tp = np.bincount(g[hit], minlength=k + 1)[:k]
    fn = np.bincount(g[~hit], minlength=k + 1)[:k]
    fp = np.bincount(p[~hit & (p >= 0)], minlength=k + 1)[:k]
    den = 2 * tp + fp + fn
    return float(np.where(den > 0, 2 * tp / np.maximum(den, 1), 0.0).mean())


class MacroF1(Metric):
    """Macro F1 of ``record.extracted`` against ``record.target`` (strings
    compared after strip/lower-case).  Options: ``labels``, ``unknown``
    ("wrong" | "exclude"), ``bootstrap_iters`` (1000).  None extractions
    are unknown; failed records (``record.error``) are dropped."""
    reads = frozenset({"extracted", "target"})  # what aggregate() reads (Metric.reads)

    name = "macro_f1"
    description = "macro F1 over the labels (seen in gold or prediction)"
    accepts = {"labels": "the labels averaged over (default those seen)",
               "unknown": "wrong (default) or exclude: a sample with no extraction",
               "bootstrap_iters": "resamples for the standard error (1000)"}
    outputs = {"unknown": COUNT}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = [r for r in records if r.error is None]
        items = [(_norm(r.extracted), _norm(r.target)) for r in ok]
        n_unknown = sum(p is None for p, _ in items)
        if self.options.get("unknown", "wrong") == "exclude":
            items = [(p, g) for p, g in items if p is not None]
        labels = self.options.get("labels")
        if labels is not None:
            labels = [_norm(x) for x in labels]
        else:  # fixed for every bootstrap draw
            labels = sorted({g for _, g in items} | {p for p, _ in items if p is not None}, key=str)
        index = {lab: i for i, lab in enumerate(labels)}
        k = len(labels)
        p = np.array([-1 if x is None else index.get(x, k) for x, _ in items], dtype=int)
        g = np.array([index.get(y, k) for _, y in items], dtype=int)

        def stat(sample: Sequence[int]) -> float | None:
            idx = np.asarray(sample, dtype=int)
            return _f1_from_codes(p[idx], g[idx], k)

        iters = int(self.options.get("bootstrap_iters", 1000))
        return {
            self.name: Aggregate(_f1_from_codes(p, g, k), bootstrap_stderr(list(range(len(items))), stat, iters=iters), len(items)),
            f"{self.name}_unknown": count(n_unknown, len(ok)),
        }

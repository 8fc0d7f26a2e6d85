"""Temporal and spatial grounding scores (no upstream code exists; these are
avhb's definitions).

Intervals are ``(start, end)`` seconds with ``start <= end`` (given as a
pair of finite numbers or ``{"start", "end"}``; text is never an interval);
``end < start`` is invalid (ValueError).  In the metrics an invalid
*reference* makes the sample not scorable (None, counted in
``<name>_bad_reference``) while an unreadable or invalid *prediction*
scores 0 (counted in ``<name>_unparsed``).  ``|X|`` is the length
(Lebesgue measure) of the union of a set of intervals; overlapping or
touching intervals are merged first, so nothing is counted twice.

* ``interval_iou(a, b)`` = |a ∩ b| / (|a| + |b| − |a ∩ b|).  Zero-length
  cases: if the union has length 0 (both are points) the IoU is 1 when the
  points coincide and 0 otherwise; a point against a real interval is 0.
* ``cover(X, Y)`` — how much of X lies in Y:
  |X ∩ Y| / |X| when |X| > 0; when X is non-empty but has length 0 (points
  only), the share of X's points that lie in some closed interval of Y;
  undefined (None) when X is empty.
* ``temporal_prf(pred, gold)``: precision = cover(pred, gold), recall =
  cover(gold, pred), F1 = 2PR/(P+R) (0 when both are 0).  An empty
  prediction scores P = R = F1 = 0 (a missing answer is a miss, not an
  abstention); an empty gold set is not scorable (None).
  So a predicted instant inside the gold span has precision 1, recall 0.
* Boxes are ``(x, y, w, h)`` with top-left origin and ``w, h >= 0`` (given
  as a 4-sequence or ``{"x", "y", "width"|"w", "height"|"h"}``).
  ``box_iou`` = intersection area / union area; when the union area is 0
  (both degenerate) it is 1 for identical boxes, else 0.
* ``share_at_least(ious, t=0.5)`` = share of IoUs >= t.

Metric aggregation: ``temporal`` reports the mean over samples of P, R and
F1 (macro) and, since published tables often give F1 of the mean P and R,
``<name>_f1_of_means`` = 2·P̄·R̄/(P̄+R̄) with a bootstrap standard error.
``box_iou`` pairs predicted and gold boxes (dicts by key, e.g. frame index,
lists by position, or one box each; a gold box with no prediction or an
unreadable one scores 0) and reports the mean IoU over all pairs and the
share >= the threshold (option ``threshold``, 0.5); its standard error is
closed-form when every sample has one pair, else bootstrapped over samples.
All three exclude samples that failed outside the model (``record.error``;
docs/errors.md) and report ``<name>_bad_reference`` and ``<name>_unparsed``.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from avhb import (COUNT, DIAGNOSTIC, HEADLINE, Aggregate, Metric, SampleRecord, ScoreContext, bootstrap_stderr,
                  mean_stderr)
from avhb.score.metric_helpers import count, resolve, usable


Interval = tuple[float, float]
Box = tuple[float, float, float, float]


# ---------------------------------------------------------------- intervals

def _number(x: Any) -> float:
    """A finite number; text is never read as a number here (a string such
    as "35" would otherwise unpack into two digits)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"not a number: {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"not a finite number: {x!r}")
    return v


def as_interval(value: Any) -> Interval:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"not an interval: {value!r}")
    if isinstance(value, dict):
        s, e = _number(value["start"]), _number(value["end"])
    else:
        s, e = (_number(x) for x in value)
    if e < s:
        raise ValueError(f"interval ends before it starts: ({s}, {e})")
    return s, e


def as_intervals(value: Any) -> list[Interval]:
    """One interval or a list of them."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        raise TypeError(f"not an interval list: {value!r}")
    if isinstance(value, dict) or (isinstance(value, (list, tuple)) and len(value) == 2
                                   and all(isinstance(x, (int, float)) for x in value)):
        return [as_interval(value)]
    return [as_interval(v) for v in value]


def one_interval(value: Any) -> Interval:
    """One interval, also when given as a list holding just one."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    return as_interval(value)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Union of intervals as sorted disjoint intervals of positive length;
    points (zero length) are dropped here, see ``points``."""
    out: list[list[float]] = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(intervals: Iterable[Interval]) -> float:
    return sum(e - s for s, e in merge(intervals))


def overlap(a: Iterable[Interval], b: Iterable[Interval]) -> float:
    """|union(a) ∩ union(b)|."""
    ma, mb = merge(a), merge(b)
    total, i, j = 0.0, 0, 0
    while i < len(ma) and j < len(mb):
        lo, hi = max(ma[i][0], mb[j][0]), min(ma[i][1], mb[j][1])
        total += max(0.0, hi - lo)
        if ma[i][1] < mb[j][1]:
            i += 1
        else:
            j += 1
    return total


def interval_iou(a: Any, b: Any) -> float:
    (s1, e1), (s2, e2) = one_interval(a), one_interval(b)
    inter = max(0.0, min(e1, e2) - max(s1, s2))
    union = (e1 - s1) + (e2 - s2) - inter
    if union == 0:
        return float(s1 == s2)
    return inter / union


def _contains(intervals: list[Interval], t: float) -> bool:
    return any(s <= t <= e for s, e in intervals)


def cover(x: list[Interval], y: list[Interval]) -> float | None:
    """How much of X lies in Y (see module docstring)."""
    if not x:
        return None
    lx = length(x)
    if lx > 0:
        return overlap(x, y) / lx
    return sum(_contains(y, s) for s, _ in x) / len(x)


def temporal_prf(pred: Any, gold: Any) -> tuple[float, float, float] | None:
    """(precision, recall, F1) of predicted against gold seconds."""
    p_iv, g_iv = as_intervals(pred), as_intervals(gold)
    if not g_iv:
        return None
    if not p_iv:
        return 0.0, 0.0, 0.0
    p, r = cover(p_iv, g_iv), cover(g_iv, p_iv)
    assert p is not None and r is not None
    return p, r, (0.0 if p + r == 0 else 2 * p * r / (p + r))


# ---------------------------------------------------------------- boxes

def as_box(value: Any) -> Box:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"not a box: {value!r}")
    if isinstance(value, dict):
        x, y = _number(value["x"]), _number(value["y"])
        w = _number(value["width"] if "width" in value else value["w"])
        h = _number(value["height"] if "height" in value else value["h"])
    else:
        x, y, w, h = (_number(v) for v in value)
    if w < 0 or h < 0:
        raise ValueError(f"box with negative size: {(x, y, w, h)}")
    return x, y, w, h


def box_iou(a: Any, b: Any) -> float:
    x1, y1, w1, h1 = as_box(a)
    x2, y2, w2, h2 = as_box(b)
    iw = max(0.0, min(x1 + w1, x2 + w2) - max(x1, x2))
    ih = max(0.0, min(y1 + h1, y2 + h2) - max(y1, y2))
    inter = iw * ih
    union = w1 * h1 + w2 * h2 - inter
    if union == 0:
        return float((x1, y1, w1, h1) == (x2, y2, w2, h2))
    return inter / union


def share_at_least(ious: Sequence[float], threshold: float = 0.5) -> float | None:
    return sum(i >= threshold for i in ious) / len(ious) if ious else None


def _is_box(value: Any) -> bool:
    return (isinstance(value, dict) and "x" in value) or (
        isinstance(value, (list, tuple)) and len(value) == 4 and all(isinstance(v, (int, float)) for v in value))


@dataclass
class BoxMatch:
    """IoU per gold box and the reasons some predictions were unreadable."""

    ious: list[float]
    unreadable: list[str] = field(default_factory=list)


def gold_boxes(gold: Any) -> list[tuple[str | int, Box]]:
    """The reference boxes with their keys: ``(str key, box)`` for a dict
    keyed by e.g. frame index, ``(position, box)`` for a list or a single
    box.  None gives []; an invalid box raises ValueError/TypeError/KeyError."""
    if gold is None:
        return []
    if isinstance(gold, dict) and not _is_box(gold):
        return [(str(k), as_box(g)) for k, g in gold.items()]
    if _is_box(gold):
        return [(0, as_box(gold))]
    if isinstance(gold, (str, bytes)) or not isinstance(gold, (list, tuple)):
        raise TypeError(f"not a box or list of boxes: {gold!r}")
    return [(i, as_box(g)) for i, g in enumerate(gold)]


def match_boxes(pred: Any, gold: Any) -> BoxMatch:
    """IoU of each gold box with its prediction.  A gold box with no
    prediction (missing key/position or None) scores 0; so does one whose
    prediction is unreadable (not a valid box), and the reason is listed in
    ``unreadable``.  A prediction of the wrong shape altogether (text, a
    number, a list for keyed gold...) or None makes every pair 0 and is
    unreadable.  An invalid gold raises (see ``gold_boxes``)."""
    golds = gold_boxes(gold)
    if not golds:
        return BoxMatch([])
    keyed = isinstance(golds[0][0], str)
    lookup: dict[Any, Any] = {}
    unreadable: list[str] = []
    if pred is None:
        unreadable.append("no prediction")
    elif keyed:
        if isinstance(pred, dict) and not _is_box(pred):
            lookup = {str(k): v for k, v in pred.items()}
        else:
            unreadable.append(f"expected boxes keyed like the reference, got {pred!r}")
    elif _is_box(pred):
        lookup = {0: pred}
    elif isinstance(pred, (list, tuple)):
        lookup = dict(enumerate(pred))
    else:
        unreadable.append(f"not a box or list of boxes: {pred!r}")
    ious = []
    for k, g in golds:
        p = lookup.get(k)
        if p is None:
            ious.append(0.0)
            continue
        try:
            ious.append(box_iou(p, g))
        except (ValueError, TypeError, KeyError) as exc:
            unreadable.append(f"{k}: {exc}")
            ious.append(0.0)
    return BoxMatch(ious, unreadable)


def box_pairs(pred: Any, gold: Any) -> list[float]:
    """IoU of each gold box with its prediction (0 when it has none or it is
    unreadable); see ``match_boxes``."""
    return match_boxes(pred, gold).ious


# ---------------------------------------------------------------- metrics

class _Grounding(Metric):
    """Shared reading of prediction and reference.  Per sample, the
    reference is checked first: a missing or invalid reference makes the
    sample not scorable (None; flagged ``meta["<name>_bad_reference"]``,
    counted in ``<name>_bad_reference``).  Then an unreadable prediction
    (None, text, malformed or invalid values) scores 0 (flagged
    ``meta["<name>_unparsed"]``, counted in ``<name>_unparsed``).  Failed
    samples (``record.error``) are excluded."""

    accepts = {"pred": "field spec of the prediction (default extracted)",
               "gold": "field spec of the reference (default target)"}

    def _pred_gold(self, record: SampleRecord) -> tuple[Any, Any]:
        pred = resolve(record, self.options.get("pred", "extracted"))
        gold = resolve(record, self.options.get("gold", "target"))
        return pred, gold

    def _reset(self, record: SampleRecord) -> None:
        record.meta.pop(f"{self.name}_bad_reference", None)
        record.meta.pop(f"{self.name}_unparsed", None)

    def _bad_reference(self, record: SampleRecord, why: str) -> None:
        record.meta[f"{self.name}_bad_reference"] = why

    def _unparsed(self, record: SampleRecord, why: str) -> None:
        record.meta[f"{self.name}_unparsed"] = why

    def _counts(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        return {
            f"{self.name}_bad_reference": count(sum(f"{self.name}_bad_reference" in r.meta for r in ok), len(ok)),
            f"{self.name}_unparsed": count(sum(f"{self.name}_unparsed" in r.meta for r in ok), len(ok)),
        }


class TemporalGrounding(_Grounding):
    """Options: ``pred`` (field spec, "extracted"), ``gold`` ("target").
    An explicit empty prediction ([])
    is a miss (0) but not unparsed; None is unparsed."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "temporal"
    description = "temporal precision, recall and F1 of the predicted intervals against the gold ones"
    outputs = {"precision": HEADLINE, "recall": HEADLINE, "f1": HEADLINE, "f1_of_means": DIAGNOSTIC,
               "bad_reference": COUNT, "unparsed": COUNT}

    def _prf(self, record: SampleRecord) -> tuple[float, float, float] | None:
        self._reset(record)
        pred, gold = self._pred_gold(record)
        try:
            g_iv = as_intervals(gold)
        except (ValueError, TypeError, KeyError) as exc:
            self._bad_reference(record, str(exc))
            return None
        if not g_iv:
            self._bad_reference(record, "no reference interval")
            return None
        if pred is None:
            self._unparsed(record, "no prediction")
            return 0.0, 0.0, 0.0
        try:
            p_iv = as_intervals(pred)
        except (ValueError, TypeError, KeyError) as exc:
            self._unparsed(record, str(exc))
            return 0.0, 0.0, 0.0
        return temporal_prf(p_iv, g_iv)

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        prf = self._prf(record)
        keys = [f"{self.name}_{k}" for k in ("precision", "recall", "f1")]
        return dict(zip(keys, prf if prf is not None else (None, None, None)))

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        both = [(r.scores.get(f"{self.name}_precision"), r.scores.get(f"{self.name}_recall")) for r in ok]
        rows = [(p, r) for p, r in both if p is not None and r is not None]  # score() sets both or neither
        out = {}
        for part in ("precision", "recall", "f1"):
            key = f"{self.name}_{part}"
            out[key] = mean_stderr([r.scores.get(key) for r in ok])

        def f1_of_means(units: Sequence[tuple[float, float]]) -> float | None:
            if not units:
                return None
            p = sum(u[0] for u in units) / len(units)
            r = sum(u[1] for u in units) / len(units)
            return 0.0 if p + r == 0 else 2 * p * r / (p + r)

        out[f"{self.name}_f1_of_means"] = Aggregate(f1_of_means(rows), bootstrap_stderr(rows, f1_of_means), len(rows))
        out.update(self._counts(records))
        return out


class TemporalIoU(_Grounding):
    """IoU of one predicted and one gold interval per sample.  Options:
    ``pred``, ``gold``."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "temporal_iou"
    outputs = {"bad_reference": COUNT, "unparsed": COUNT}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        self._reset(record)
        pred, gold = self._pred_gold(record)
        if gold is None:
            self._bad_reference(record, "no reference interval")
            return {self.name: None}
        try:
            one_interval(gold)
        except (ValueError, TypeError, KeyError) as exc:
            self._bad_reference(record, str(exc))
            return {self.name: None}
        if pred is None:
            self._unparsed(record, "no prediction")
            return {self.name: 0.0}
        try:
            return {self.name: interval_iou(pred, gold)}
        except (ValueError, TypeError, KeyError) as exc:
            self._unparsed(record, str(exc))
            return {self.name: 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        out = {self.name: mean_stderr([r.scores.get(self.name) for r in ok])}
        out.update(self._counts(records))
        return out


class BoxIoU(_Grounding):
    """Options: ``pred``, ``gold``, ``threshold`` (0.5).  Reports ``<name>`` (mean IoU over box pairs) and
    ``<name>_at_<threshold>``."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "box_iou"
    description = "mean IoU of the predicted and gold boxes over (sample, frame) pairs"
    accepts = {"threshold": "the IoU of <name>_at_<threshold> (default 0.5)"}
    outputs = {"bad_reference": COUNT, "unparsed": COUNT}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        self._reset(record)
        pred, gold = self._pred_gold(record)
        try:
            golds = gold_boxes(gold)
        except (ValueError, TypeError, KeyError) as exc:
            self._bad_reference(record, str(exc))
            return {self.name: None, f"{self.name}_pairs": None}
        if not golds:
            self._bad_reference(record, "no reference box")
            return {self.name: None, f"{self.name}_pairs": None}
        match = match_boxes(pred, gold)
        if match.unreadable:
            self._unparsed(record, "; ".join(match.unreadable))
        return {self.name: sum(match.ious) / len(match.ious), f"{self.name}_pairs": match.ious}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        t = float(self.options.get("threshold", 0.5))
        samples = [s for r in usable(records) if (s := r.scores.get(f"{self.name}_pairs"))]
        flat = [x for s in samples for x in s]
        name_at = f"{self.name}_at_{t:g}"
        counts = self._counts(records)
        if all(len(s) == 1 for s in samples):
            return {self.name: mean_stderr(flat), name_at: mean_stderr([float(x >= t) for x in flat]), **counts}

        def micro(units: Sequence[list[float]], f=lambda x: x) -> float | None:
            xs = [f(x) for u in units for x in u]
            return sum(xs) / len(xs) if xs else None

        def at(units: Sequence[list[float]]) -> float | None:
            return micro(units, lambda x: float(x >= t))

        return {
            self.name: Aggregate(micro(samples), bootstrap_stderr(samples, micro), len(flat)),
            name_at: Aggregate(at(samples), bootstrap_stderr(samples, at), len(flat)),
            **counts,
        }

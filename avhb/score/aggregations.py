"""lm-eval's ``metric_list`` aggregations by name: how a metric's
per-sample values become the task's number.

``mean`` is every metric's default (value and sample stderr, as lm-eval
reports it).  The others take the list of per-sample values lm-eval's
aggregation of that name takes, and give the same number:

* ``median`` — ``sorted(values)[n // 2]`` (the upper median of an even n);
* ``nanmean`` — the mean of the values that are not NaN (NaN if none);
* ``perplexity`` — ``exp(-mean(loglikelihoods))``;
* ``weighted_perplexity`` — values ``(loglikelihood, weight)``:
  ``exp(-sum(ll) / sum(weight))``;
* ``bits_per_byte`` — values ``(loglikelihood, bytes)``:
  ``-sum(ll) / sum(bytes) / ln 2``;
* ``f1`` — values ``(gold, pred)`` class indices: binary F1 of class 1
  (scikit-learn's default, which lm-eval calls; labels other than 0 and 1
  are an error);
* ``matthews_corrcoef`` — values ``(gold, pred)``: multiclass Matthews
  correlation from the confusion matrix (0 when undefined, as
  scikit-learn);
* ``brier_score`` — values ``(gold, probabilities)``: mean over samples of
  ``sum_k (p_k - [k == gold])^2``;
* ``bypass`` — 999 (lm-eval's placeholder for predict-only runs);
* ``bleu``, ``chrf``, ``chrf++``, ``ter`` — values ``(references, prediction)``:
  sacrebleu's corpus score over every sample (``corpus_bleu``,
  ``corpus_chrf``, ``corpus_chrf`` with ``word_order=2``, ``corpus_ter``),
  each sample's references one stream each (lm-eval's layout); needs the
  ``sacrebleu`` package;
* a hook (``aggregation: !function utils.agg``): ``agg(values) -> number``.

Only ``mean`` has a standard error here: lm-eval bootstraps the others
(100,000 resamples by default); avhb reports none for them rather than a
number from another procedure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from avhb.errors import UserError
from avhb.score.aggregate import Aggregate, mean_stderr


def _median(values: Sequence[Any]) -> float:
    return sorted(values)[len(values) // 2]


def _nanmean(values: Sequence[Any]) -> float:
    xs = [float(v) for v in values if not math.isnan(float(v))]
    return sum(xs) / len(xs) if xs else math.nan


def _perplexity(values: Sequence[Any]) -> float:
    return math.exp(-sum(values) / len(values))


def _weighted(values: Sequence[Any]) -> float:
    lls, weights = zip(*values)
    return sum(lls) / sum(weights)


def _weighted_perplexity(values: Sequence[Any]) -> float:
    return math.exp(-_weighted(values))


def _bits_per_byte(values: Sequence[Any]) -> float:
    return -_weighted(values) / math.log(2)


def _f1(values: Sequence[Any]) -> float:
    golds, preds = zip(*values)
    labels = set(golds) | set(preds)
    if not labels <= {0, 1}:
        raise UserError(f"f1 aggregation: lm-eval's f1 is binary (classes 0 and 1); got classes {sorted(labels)} "
                        "(use mcc, or acc)")
    tp = sum(1 for g, p in values if g == 1 and p == 1)
    fp = sum(1 for g, p in values if g != 1 and p == 1)
    fn = sum(1 for g, p in values if g == 1 and p != 1)
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def _mcc(values: Sequence[Any]) -> float:
    golds, preds = zip(*values)
    classes = sorted(set(golds) | set(preds), key=repr)
    n = len(values)
    correct = sum(1 for g, p in values if g == p)
    true_counts = [sum(1 for g in golds if g == c) for c in classes]
    pred_counts = [sum(1 for p in preds if p == c) for c in classes]
    cov = correct * n - sum(t * p for t, p in zip(true_counts, pred_counts))
    den = math.sqrt((n * n - sum(p * p for p in pred_counts)) * (n * n - sum(t * t for t in true_counts)))
    return cov / den if den else 0.0


def _brier(values: Sequence[Any]) -> float:
    total = 0.0
    width = None
    for gold, probs in values:
        probs = [float(p) for p in probs]
        if width is None:
            width = len(probs)
        elif len(probs) != width:
            raise UserError("brier_score aggregation: every sample needs the same number of choices "
                            f"({width} and {len(probs)} seen)")
        total += sum((p - (1.0 if k == gold else 0.0)) ** 2 for k, p in enumerate(probs))
    return total / len(values)


def _sacrebleu(kind: str) -> Callable[[Sequence[Any]], float]:
    def corpus(values: Sequence[Any]) -> float:
        try:
            import sacrebleu
        except ImportError:
            raise UserError(f"aggregation {kind!r} needs the sacrebleu package: pip install sacrebleu") from None
        refs = [r if isinstance(r, (list, tuple)) else [r] for r, _ in values]
        preds = [p[0] if isinstance(p, (list, tuple)) else p for _, p in values]
        if len({len(r) for r in refs}) != 1:
            raise UserError(f"{kind} aggregation: every sample needs the same number of references")
        streams = [list(stream) for stream in zip(*refs)]
        if kind == "bleu":
            return float(sacrebleu.corpus_bleu(preds, streams).score)
        if kind == "ter":
            return float(sacrebleu.corpus_ter(preds, streams).score)
        return float(sacrebleu.corpus_chrf(preds, streams, word_order=2 if kind == "chrf++" else 0).score)

    return corpus


NAMED: dict[str, Callable[[Sequence[Any]], float]] = {
    "median": _median, "nanmean": _nanmean, "perplexity": _perplexity,
    "weighted_perplexity": _weighted_perplexity, "bits_per_byte": _bits_per_byte, "f1": _f1,
    "matthews_corrcoef": _mcc, "brier_score": _brier, "bypass": lambda values: 999,
    "bleu": _sacrebleu("bleu"), "chrf": _sacrebleu("chrf"), "chrf++": _sacrebleu("chrf++"), "ter": _sacrebleu("ter"),
}
NAMES = ("mean", *NAMED)

# lm-eval's registered metrics: the aggregation and direction a metric_list entry (or a key a
# process_results hook returns) gets when it names neither (its get_metric_aggregation and
# is_higher_better); any other name: mean, higher is better
METRIC_DEFAULTS: dict[str, tuple[str, bool]] = {
    "acc": ("mean", True), "acc_norm": ("mean", True), "acc_mutual_info": ("mean", True), "acc_bytes": ("mean", True),
    "acc_all": ("mean", True), "exact_match": ("mean", True), "likelihood": ("mean", True),
    "perplexity": ("perplexity", False), "word_perplexity": ("weighted_perplexity", False),
    "byte_perplexity": ("weighted_perplexity", False), "bits_per_byte": ("bits_per_byte", False),
    "bypass": ("bypass", True), "mcc": ("matthews_corrcoef", True), "f1": ("f1", True),
    "brier_score": ("brier_score", False), "bleu": ("bleu", True), "chrf": ("chrf", True), "chrf++": ("chrf++", True),
    "ter": ("ter", False),
}


def default_aggregation(metric: str) -> str:
    """The aggregation lm-eval gives ``metric`` when its entry names none."""
    return METRIC_DEFAULTS.get(metric, ("mean", True))[0]


def default_higher_is_better(metric: str) -> bool:
    """Whether higher is better for ``metric`` when its entry does not say (lm-eval's registry)."""
    return METRIC_DEFAULTS.get(metric, ("mean", True))[1]


@dataclass
class Aggregation:
    """One ``aggregation:`` of a metric_list entry: a name, or a hook (``fn``
    with its dotted ``name``)."""

    name: str
    fn: Callable[[Sequence[Any]], Any] | None = None  # None: mean

    @classmethod
    def named(cls, name: str) -> "Aggregation":
        if name == "mean":
            return cls("mean")
        if name not in NAMED:
            raise UserError(f"unknown aggregation {name!r} (known: {', '.join(NAMES)}, or !function module.fn)")
        return cls(name, NAMED[name])

    def aggregate(self, values: Sequence[Any]) -> Aggregate:
        """The aggregate of the per-sample values (None values left out)."""
        xs = [v for v in values if v is not None]
        if self.fn is None:
            return mean_stderr(xs)
        if not xs:
            return Aggregate(None, None, 0)
        try:
            out = self.fn(xs)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"aggregation {self.name} failed: {type(exc).__name__}: {exc}") from None
        if out is None:  # a hook that only writes a submission file (lmms-eval's *_for_submission): no number
            return Aggregate(None, None, len(xs))
        try:
            value = float(out)
        except (TypeError, ValueError):
            raise UserError(f"aggregation {self.name} returned {type(out).__name__} {str(out)[:80]!r}, "
                            "not a number") from None
        return Aggregate(value, None, len(xs))

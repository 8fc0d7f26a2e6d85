"""lm-eval's metrics over token log-likelihoods (``output_type:
multiple_choice | loglikelihood | loglikelihood_rolling``), defined as
lm-eval's ``ConfigurableTask.process_results`` computes them from the
backend's ``[loglikelihood, is_greedy]`` per continuation
(``record.outputs["loglikelihoods"]``).

multiple_choice (``outputs["gold"]``: the right choice's index, or a list
of indices for several right ones; ``outputs["choices"]``):

* ``acc`` — 1 when the choice with the highest log-likelihood is right
  (the first of equal ones, as ``numpy.argmax``);
* ``acc_norm`` — the same over log-likelihood / the choice's length in
  characters; ``acc_bytes`` — over its length in UTF-8 bytes;
* ``acc_mutual_info`` — over log-likelihood minus the choice's log-likelihood
  with no context (the request then carries those too);
* ``exact_match`` — the right choice is what greedy decoding would give
  (``is_greedy``; see choice.py's ExactMatch);
* ``brier_score`` — value ``(gold, softmax(log-likelihoods))``, aggregated
  by lm-eval's ``brier_score``; ``f1`` / ``mcc`` — value ``(gold, pred)``,
  aggregated by ``f1`` / ``matthews_corrcoef``.

loglikelihood: ``perplexity`` (value: the log-likelihood; aggregation
``exp(-mean)``), ``acc`` (``is_greedy``).

loglikelihood_rolling: ``word_perplexity`` / ``byte_perplexity`` (value
``(loglikelihood, words or bytes of the target)``, aggregation
``weighted_perplexity``), ``bits_per_byte`` (aggregation ``bits_per_byte``);
words are ``re.split(r"\\s+", target)``, as lm-eval counts them.

A target that is not one of the choices fails its sample (lm-eval scores
it 0 with a warning; avhb excludes it and counts it as an error).

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import math
import re
from typing import Any

from avhb import Aggregation, Metric, SampleError, SampleRecord, ScoreContext


def _argmax(values: list[float]) -> int:
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def _per(ll: float, size: float) -> float:
    """``ll / size``, an empty choice as numpy divides by zero (signed infinity)."""
    if size:
        return ll / size
    return -math.inf if ll < 0 else math.inf if ll > 0 else -math.inf


def _softmax(values: list[float]) -> list[float]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


def loglikelihoods(record: SampleRecord, name: str) -> list[tuple[float, bool]]:
    found = record.outputs.get("loglikelihoods")
    if not isinstance(found, list) or not found:
        raise SampleError(f"sample {record.id}: {name} needs the backend's log-likelihoods (output_type "
                          "multiple_choice, loglikelihood or loglikelihood_rolling); the response has none")
    return [(float(ll), bool(greedy)) for ll, greedy in found]


def choice_results(record: SampleRecord, name: str) -> tuple[list[float], list[bool], list[str], Any, list[float] | None]:
    """(log-likelihoods, is_greedy, choices, gold, unconditional log-likelihoods or None) of a multiple_choice sample."""
    pairs = loglikelihoods(record, name)
    choices = list(record.outputs.get("choices") or [])
    if not choices:
        raise SampleError(f"sample {record.id}: {name} is a multiple_choice metric; the task is not one")
    unconditional = None
    if len(pairs) == 2 * len(choices):
        unconditional = [ll for ll, _ in pairs[len(choices):]]
        pairs = pairs[:len(choices)]
    gold = record.outputs.get("gold")
    golds = gold if isinstance(gold, list) else [gold]
    if not golds or any(not isinstance(g, int) or not 0 <= g < len(choices) for g in golds):
        raise SampleError(f"sample {record.id}: the target {record.target!r} is not one of the {len(choices)} choices")
    return [ll for ll, _ in pairs], [g for _, g in pairs], choices, gold, unconditional


def _hit(pred: int, gold: Any) -> float:
    return float(pred in gold) if isinstance(gold, list) else float(pred == gold)


class Accuracy(Metric):
    """1 when the most likely choice is right (multiple_choice), or when the
    continuation is what greedy decoding gives (loglikelihood)."""

    name = "acc"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        if record.outputs.get("choices"):
            lls, _, _, gold, _ = choice_results(record, self.name)
            return {self.name: _hit(_argmax(lls), gold)}
        (_, greedy), = loglikelihoods(record, self.name)[:1]
        return {self.name: float(greedy)}


class AccNorm(Metric):
    """1 when the choice most likely per character is right."""

    name = "acc_norm"
    per = "chars"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        lls, _, choices, gold, _ = choice_results(record, self.name)
        sizes = [float(len(c)) if self.per == "chars" else float(len(c.encode("utf-8"))) for c in choices]
        return {self.name: _hit(_argmax([_per(ll, n) for ll, n in zip(lls, sizes)]), gold)}


class AccBytes(AccNorm):
    """1 when the choice most likely per UTF-8 byte is right."""

    name = "acc_bytes"
    per = "bytes"


class AccMutualInfo(Metric):
    """1 when the choice with the highest log-likelihood gain over its
    context-free log-likelihood is right."""

    name = "acc_mutual_info"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        lls, _, _, gold, unconditional = choice_results(record, self.name)
        if unconditional is None:
            raise SampleError(f"sample {record.id}: acc_mutual_info needs the choices' context-free "
                              "log-likelihoods, which the request did not carry")
        return {self.name: _hit(_argmax([c - u for c, u in zip(lls, unconditional)]), gold)}


class _CorpusMetric(Metric):
    """A metric whose value is computed over the whole task by lm-eval's
    ``corpus`` aggregation (avhb.score.aggregations), not as a mean."""

    corpus: str  # the aggregation's name: each subclass sets it

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.aggregation = Aggregation.named(self.corpus)


class BrierScore(_CorpusMetric):
    """Mean squared distance of the choices' softmax from the right one (lower is better)."""

    name = "brier_score"
    higher_is_better = False
    corpus = "brier_score"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        lls, _, _, gold, _ = choice_results(record, self.name)
        return {self.name: [gold, _softmax(lls)]}


class _PairMetric(_CorpusMetric):
    """Value ``(gold, pred)``, aggregated over the task (f1, mcc)."""

    corpus = "f1"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        lls, _, _, gold, _ = choice_results(record, self.name)
        return {self.name: [gold, _argmax(lls)]}


class F1(_PairMetric):
    """F1 of class 1 over (right choice, most likely choice) pairs."""

    name = "f1"
    corpus = "f1"


class MCC(_PairMetric):
    """Matthews correlation of the right and the most likely choices."""

    name = "mcc"
    corpus = "matthews_corrcoef"


class Perplexity(_CorpusMetric):
    """exp(-mean log-likelihood) of the target after its context (lower is better)."""

    name = "perplexity"
    higher_is_better = False
    corpus = "perplexity"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {self.name: loglikelihoods(record, self.name)[0][0]}


class _Rolling(_CorpusMetric):
    """Weighted over the task: (log-likelihood of the whole text, its units)."""

    higher_is_better = False
    units = "words"
    corpus = "weighted_perplexity"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        text = str(record.target)
        weight = len(re.split(r"\s+", text)) if self.units == "words" else len(text.encode("utf-8"))
        return {self.name: [loglikelihoods(record, self.name)[0][0], weight]}


class WordPerplexity(_Rolling):
    """exp(-log-likelihood per word), over the whole task (lower is better)."""

    name = "word_perplexity"


class BytePerplexity(_Rolling):
    """exp(-log-likelihood per byte), over the whole task (lower is better)."""

    name = "byte_perplexity"
    units = "bytes"


class BitsPerByte(_Rolling):
    """-log2-likelihood per byte, over the whole task (lower is better)."""

    name = "bits_per_byte"
    units = "bytes"
    corpus = "bits_per_byte"

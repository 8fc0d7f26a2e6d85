"""lm-eval's log-likelihood metrics and its tokenization of log-likelihood
requests, on hand-computed cases (issue 24, item 3)."""
from __future__ import annotations

import math

import pytest

from avhb.errors import SampleError
from avhb.model_backends.lm_eval_tokens import encode_pair, move_spaces, rolling_windows, truncated
from avhb.plugins.metrics.choice import ExactMatch
from avhb.plugins.metrics.loglik import (AccBytes, AccMutualInfo, AccNorm, Accuracy, BitsPerByte, BrierScore,
                                         BytePerplexity, F1, MCC, Perplexity, WordPerplexity)
from avhb.score.metric import SampleRecord, ScoreContext

CTX = ScoreContext(None, "t")


def mc(lls, greedy=None, choices=("a", "bbbb", "cc"), gold=1, target=None) -> SampleRecord:
    greedy = greedy or [False] * len(lls)
    return SampleRecord(id="1", doc={}, target=target, outputs={
        "loglikelihoods": [[ll, g] for ll, g in zip(lls, greedy)], "choices": list(choices), "gold": gold})


async def value(metric, record):
    return (await metric.score(record, CTX))[metric.name]


async def test_multiple_choice_accuracies():
    # raw: -2 (a) beats -3 (bbbb), -4 (cc); per char: -2, -0.75, -2 -> bbbb; per byte the same here
    r = mc([-2.0, -3.0, -4.0], gold=1)
    assert await value(Accuracy(), r) == 0.0
    assert await value(AccNorm(), r) == 1.0
    assert await value(AccBytes(), r) == 1.0
    # bytes differ from characters: "é" is 2 bytes
    r = mc([-2.0, -2.5], choices=("éé", "xx"), gold=0)  # per char -1, -1.25 -> éé; per byte -0.5, -1.25 -> éé
    assert await value(AccNorm(), r) == 1.0 and await value(AccBytes(), r) == 1.0
    r = mc([-2.2, -2.0], choices=("éé", "xx"), gold=0)  # per char -1.1 vs -1.0 -> xx; per byte -0.55 vs -1.0 -> éé
    assert await value(AccNorm(), r) == 0.0 and await value(AccBytes(), r) == 1.0
    # ties: the first, as numpy.argmax
    assert await value(Accuracy(), mc([-1.0, -1.0, -5.0], gold=0)) == 1.0
    # several right choices
    assert await value(Accuracy(), mc([-1.0, -3.0, -5.0], gold=[0, 2])) == 1.0
    # exact_match of a multiple_choice sample: the right choice is the greedy continuation
    assert await value(ExactMatch(), mc([-1.0, -3.0, -5.0], greedy=[True, False, True], gold=2)) == 1.0
    assert await value(ExactMatch(), mc([-1.0, -3.0, -5.0], greedy=[True, False, True], gold=1)) == 0.0
    with pytest.raises(SampleError, match="not one of the 3 choices"):
        await value(Accuracy(), mc([-1.0, -2.0, -3.0], gold=-1, target="zz"))


async def test_mutual_info_brier_f1_mcc():
    # conditional -2, -3; unconditional -4, -1: gains 2, -2 -> choice 0
    r = mc([-2.0, -3.0, -4.0, -1.0], choices=("x", "y"), gold=0)
    assert await value(AccMutualInfo(), r) == 1.0
    assert await value(Accuracy(), r) == 1.0  # only the conditional ones count
    with pytest.raises(SampleError, match="context-free"):
        await value(AccMutualInfo(), mc([-2.0, -3.0], choices=("x", "y"), gold=0))
    gold, probs = await value(BrierScore(), mc([math.log(0.25), math.log(0.75)], choices=("x", "y"), gold=1))
    assert gold == 1 and [round(p, 12) for p in probs] == [0.25, 0.75]
    assert await value(F1(), mc([-1.0, -2.0], choices=("x", "y"), gold=1)) == [1, 0]
    assert await value(MCC(), mc([-3.0, -2.0], choices=("x", "y"), gold=1)) == [1, 1]
    brier = BrierScore()
    assert math.isclose(brier.aggregation.aggregate([[1, [0.25, 0.75]], [0, [1.0, 0.0]]]).value, (0.125 + 0) / 2)


async def test_loglikelihood_and_rolling_metrics():
    r = SampleRecord(id="1", doc={}, target=" Paris", outputs={"loglikelihoods": [[-1.5, True]]})
    assert await value(Perplexity(), r) == -1.5 and await value(Accuracy(), r) == 1.0
    assert math.isclose(Perplexity().aggregation.aggregate([-1.0, -2.0]).value, math.exp(1.5))
    text = "two  words\nthree"  # re.split(r"\s+") -> 3 words; 16 bytes
    r = SampleRecord(id="1", doc={}, target=text, outputs={"loglikelihoods": [[-8.0, False]]})
    assert await value(WordPerplexity(), r) == [-8.0, 3]
    assert await value(BytePerplexity(), r) == [-8.0, 16]
    assert await value(BitsPerByte(), r) == [-8.0, 16]
    assert math.isclose(WordPerplexity().aggregation.aggregate([[-8.0, 3], [-4.0, 1]]).value, math.exp(3.0))
    assert math.isclose(BitsPerByte().aggregation.aggregate([[-8.0, 16]]).value, 0.5 / math.log(2))
    with pytest.raises(SampleError, match="needs the backend's log-likelihoods"):
        await value(Perplexity(), SampleRecord(id="1", doc={}, response="text"))


def test_lm_eval_tokenization():
    def encode(text):
        return [ord(c) for c in text]

    assert move_spaces("Answer: ", "Paris") == ("Answer:", " Paris")
    assert move_spaces("A:\n \n", "x") == ("A:", "\n \nx")
    ctx, cont = encode_pair(encode, "Q? A: ", "B", prefix=0)
    assert ctx == encode("Q? A:") and cont == encode(" B")
    assert encode_pair(encode, "", "hi", prefix=0) == ([0], encode("hi"))
    assert encode_pair(encode, "", "hi", prefix=ord("h")) == ([ord("h")], [ord("i")])  # starts with the prefix
    with pytest.raises(ValueError):
        encode_pair(encode, "", "hi", prefix=None)
    assert truncated([1, 2, 3], [4, 5], 10) == ([1, 2, 3, 4, 5], 3)
    assert truncated([1, 2, 3], [4, 5], 4) == ([2, 3, 4, 5], 2)  # left-truncated: the context loses its first
    # rolling: 7 tokens, windows of 3 scored tokens after the prefix 0
    assert rolling_windows([1, 2, 3, 4, 5, 6, 7], 0, 3) == [([0], [1, 2, 3]), ([3], [4, 5, 6]), ([4, 5, 6], [7])]
    assert rolling_windows([1, 2], 0, 3) == [([0], [1, 2])]
    assert rolling_windows([], 0, 3) == []

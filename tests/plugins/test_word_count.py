"""``word_perplexity``'s words (plugins/metrics/loglik.py): lm-eval counts
``len(re.split(r"\\s+", target))`` (``ConfigurableTask.count_words``), so
white space at either end of the target adds an empty word, where
``str.split()`` would not count it; each count below is worked out by
hand from that rule."""
from __future__ import annotations

import pytest

from avhb.plugins.metrics.loglik import WordPerplexity
from avhb.score.metric import SampleRecord, ScoreContext


@pytest.mark.parametrize("target, words", [
    ("one", 1), ("two  words\nthree", 3),
    (" The cat  sat\n", 5),  # '', 'The', 'cat', 'sat', ''
    ("\tword", 2), ("word ", 2), (" ", 2), ("", 1), ("a\u00a0b", 2),
])
async def test_words_are_counted_as_lm_eval_counts_them(target, words):
    record = SampleRecord(id="1", doc={}, target=target, outputs={"loglikelihoods": [[-6.0, False]]})
    assert (await WordPerplexity().score(record, ScoreContext(None, "t")))["word_perplexity"] == [-6.0, words]


def test_perplexities_and_bits_per_byte_are_lower_is_better():
    from avhb.plugins.metrics.loglik import BitsPerByte, BytePerplexity

    assert [m.higher_is_better for m in (WordPerplexity(), BytePerplexity(), BitsPerByte())] == [False] * 3

"""Field specs: where a metric option reads a value from a sample record."""
import pytest

from avhb.plugins.metrics._common import resolve
from avhb.score.metric import SampleRecord


def test_field_specs():
    r = SampleRecord(id="7", doc={"q": {"text": "hi"}}, target={"spans": [[1, 2]]}, response="raw",
                     extracted={"intervals": [[0, 1]], "boxes": {"1": [0, 0, 2, 2]}},
                     outputs={"gold_boxes": {"1": [0, 0, 1, 1]}, "n": 3})
    r.meta["m"] = 1
    r.scores["s"] = 0.5
    assert resolve(r, "response") == "raw" and resolve(r, "id") == "7"
    assert resolve(r, "doc.q.text") == "hi" and resolve(r, "meta.m") == 1 and resolve(r, "scores.s") == 0.5
    assert resolve(r, "outputs.gold_boxes") == {"1": [0, 0, 1, 1]} and resolve(r, "outputs.n") == 3
    assert resolve(r, "extracted.intervals") == [[0, 1]] and resolve(r, "extracted.boxes.1") == [0, 0, 2, 2]
    assert resolve(r, "target.spans") == [[1, 2]] and resolve(r, "extracted") == r.extracted
    assert resolve(r, "outputs.missing") is None and resolve(r, "literal:x") == "x"
    r.extracted = None  # an unparsed reply: every key under it is absent
    assert resolve(r, "extracted.intervals") is None
    with pytest.raises(ValueError):
        resolve(r, "nowhere.key")

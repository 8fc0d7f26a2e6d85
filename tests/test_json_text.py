"""avhb.json_text.dumps writes what json.dumps writes (the journal's and the
samples file's lines, call keys), with one encoder kept per set of options."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from avhb import json_text
from avhb.json_text import dumps

OBJECTS = [
    {"b": 1, "a": [1, 2.5, None, True, False], "c": {"z": "é日\n\"\\", "y": -0.0}},
    [float("nan"), float("inf"), -float("inf"), 10 ** 30, -(10 ** 30), 1e-320],
    "top-level string \u2028 with a line separator",
    17,
    None,
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    ("a", "tuple"),
    {"path": Path("/tmp/x"), "set": {3}},
    {"deep": [[[[[[{"x": [1]}]]]]]]},
    {},
    [],
]


@pytest.mark.parametrize("obj", OBJECTS, ids=range(len(OBJECTS)))
@pytest.mark.parametrize("sort_keys", [False, True])
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_the_text_is_json_dumps(obj, sort_keys, ensure_ascii):
    try:
        want = json.dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=str)
    except TypeError as exc:  # mixed key types do not sort
        with pytest.raises(TypeError, match=str(exc)):
            dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=str)
        return
    assert dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=str) == want


def test_errors_are_json_dumps_errors():
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps({"s": {1}})
    circular: dict = {}
    circular["me"] = circular
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(circular)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        dumps(deep)
    assert math.isnan(json.loads(dumps(float("nan"))))


def test_one_encoder_per_set_of_options():
    """Building an encoder per call is what json.dumps pays for; the kept
    ones are reused, also by the redacted lines (one guard per default)."""
    from avhb.redact import redacted_json
    from avhb.runfolder.folder import _default

    for _ in range(50):
        dumps({"a": 1}, sort_keys=True, default=str)
        redacted_json({"response": "A"})
        redacted_json({"scores": {"x": 1.0}}, default=_default)
    before = len(json_text._ENCODERS)
    for _ in range(50):
        dumps({"a": 1}, sort_keys=True, default=str)
        redacted_json({"response": "A"})
        redacted_json({"scores": {"x": 1.0}}, default=_default)
    assert len(json_text._ENCODERS) == before

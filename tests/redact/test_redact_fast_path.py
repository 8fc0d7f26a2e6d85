"""The line redaction's fast path (avhb/redact.py, ``_clean``) on the lines
only one of its checks can catch, each line free of every other trigger:
"key" outside the journal's own key (``?key=``, ``x-api-key:``), and a
secret value that JSON escapes (a quote, a backslash), which the line
holds only in its escaped form."""
from __future__ import annotations

import json

import pytest

from avhb.redact import MASK, redact, redacted_json


def _walked(obj) -> str:
    return json.dumps(redact(obj), ensure_ascii=False)


@pytest.mark.parametrize("text, secret", [
    ("GET /v1/models?key=qwe123rty456&alt=sse", "qwe123rty456"),
    ("x-api-key: qwe123rty456", "qwe123rty456"),
    ("X-Api-Key=qwe123rty456", "qwe123rty456"),
    ("?KEY=qwe123rty456", "qwe123rty456"),
])
def test_key_outside_the_journals_own_key_takes_the_walk(text, secret):
    obj = {"key": "ab" * 32, "task": "t", "response": f"the server said {text} then"}
    line, kept = redacted_json(obj)
    assert line == _walked(obj) and secret not in line and MASK in kept["response"]


@pytest.mark.parametrize("value", ['q"u\\o-zx81vm', 'back\\slash-zx81vm', 'dq"only-zx81vm'])
def test_a_secret_json_escapes_is_found_in_its_escaped_form(monkeypatch, value):
    monkeypatch.setenv("MY_APP_TOKEN", value)
    obj = {"key": "ab" * 32, "response": f"echo {value} back"}
    assert json.dumps(value)[1:-1] in json.dumps(obj, ensure_ascii=False)  # the line holds the escaped form
    line, kept = redacted_json(obj)
    assert line == _walked(obj) and kept["response"] == f"echo {MASK} back"
    assert json.dumps(value)[1:-1] not in line

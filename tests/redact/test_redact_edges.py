"""The redaction's edges (avhb/redact.py), each a case its mutation run left
open: the shortest string any rule can change, values under credential
names that are no credential, a longer secret that holds a shorter one,
the secret sets kept as one list object until they change (the line's
fast path re-encodes them only then), the lines the fast path proves
clean without a walk, and the forms an added credential is kept in."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import avhb.redact as R
from avhb.redact import MASK, add_arg_secrets, add_secret, env_secrets, redact, redact_text, redacted_json, secrets


def test_six_characters_is_the_shortest_string_a_rule_changes():
    # "?key=" and one character: the shortest match of any pattern, in a value and in a dict key
    assert redact({"u": "?key=a"}) == {"u": f"?key={MASK}"}
    assert redact({"?key=a": 1}) == {f"?key={MASK}": 1}
    assert redact({"u": "?key="}) == {"u": "?key="}  # nothing after "=": nothing to mask


def test_numbers_flags_and_nothing_under_credential_names_are_kept():
    data = {"password": 0, "auth_token": True, "api_key": 12345678, "secret": 2.5, "token": None, "access_token": ""}
    assert redact(data) == data
    assert redact({"password": b"x", "token": ["a"], "secret": {"k": 1}, "api_key": ("v",)}) == {
        "password": MASK, "token": MASK, "secret": MASK, "api_key": MASK}


def test_a_longer_secret_holding_a_shorter_one_is_masked_whole(monkeypatch):
    monkeypatch.setenv("SHORT_API_KEY", "zx81-spectrum")
    monkeypatch.setenv("LONG_API_KEY", "zx81-spectrum-128k-plus")
    found = env_secrets()
    assert found.index("zx81-spectrum-128k-plus") < found.index("zx81-spectrum")
    assert redact_text("k zx81-spectrum-128k-plus ; zx81-spectrum") == f"k {MASK} ; {MASK}"
    # extra values, and added credentials beside the environment's, longest first too
    assert redact("v qwerty-uiop-asdf-ghjk", extra=["qwerty-uiop", "qwerty-uiop-asdf-ghjk"]) == f"v {MASK}"
    add_secret("zx81-spectrum-128k")
    assert redact("w zx81-spectrum-128k-plus") == f"w {MASK}"
    values = secrets()
    assert values == sorted(values, key=len, reverse=True)


def test_the_sets_are_one_list_object_until_they_change(monkeypatch):
    monkeypatch.setenv("STABLE_API_KEY", "stable-secret-0001")
    assert env_secrets() is env_secrets() and secrets() is secrets() and R._escaped_secrets() is R._escaped_secrets()
    before = secrets()
    add_secret("a-new-credential-42")
    assert secrets() is not before and "a-new-credential-42" in secrets()
    monkeypatch.setenv("STABLE_API_KEY", "stable-secret-0002")
    assert "stable-secret-0002" in env_secrets() and "stable-secret-0001" not in env_secrets()


def test_a_secret_outside_ascii_is_found_in_the_line(monkeypatch):
    monkeypatch.setenv("MY_APP_TOKEN", "m\u00f6t\u00f6rhead-zx81")  # no trigger word, nothing JSON escapes
    obj = {"key": "ab" * 32, "response": "echo m\u00f6t\u00f6rhead-zx81 back"}
    line, kept = redacted_json(obj)
    assert kept["response"] == f"echo {MASK} back" and line == json.dumps(redact(obj), ensure_ascii=False)


@dataclass
class _Shape:
    side: int = 1


def _no_walk(monkeypatch):
    def walked(*args, **kwargs):
        raise AssertionError("walked")

    monkeypatch.setattr(R, "redact", walked)


@pytest.mark.parametrize("obj", [
    {"key": "ab" * 32, "note": "a passage on ghosts and ghouls"},  # "gh" without a GitHub token
    {"key": "ab" * 32, "path": Path("/data/clip.mp4")},  # a value json cannot encode, not a dataclass
    {"key": "ab" * 32, "kind": str},
    {"key": "ab" * 32, "kind": _Shape},  # a dataclass's class, not an instance: encoded by its name
])
def test_lines_the_fast_path_writes_without_a_walk(monkeypatch, obj):
    want = json.dumps(obj, ensure_ascii=False, default=str)
    _no_walk(monkeypatch)
    assert redacted_json(obj)[0] == want


def test_a_string_without_a_trigger_is_not_read_by_the_patterns(monkeypatch):
    monkeypatch.setattr(R, "_PATTERNS", [(__import__("re").compile("o"), lambda m: "0")])
    assert R._redact_patterns("no trigger in here at all") == "no trigger in here at all"
    assert R._redact_patterns("a token here") == "a t0ken here"  # a trigger: the patterns run


def test_an_added_credential_of_8_characters_is_kept_and_of_7_is_not():
    add_secret("x7-abcde")  # 8
    add_secret("y7-abcd")  # 7
    assert "x7-abcde" in secrets() and "y7-abcd" not in secrets()
    assert redact_text("x7-abcde y7-abcd") == f"{MASK} y7-abcd"


def test_the_forms_kept_for_a_credential():
    value = "a+b/c d?e"  # what URL encoding and base64's URL-safe alphabet change
    forms = R.secret_forms(value)
    assert "a%2Bb%2Fc%20d%3Fe" in forms and "a%2Bb%2Fc+d%3Fe" in forms  # quote, quote_plus
    assert "YStiL2MgZD9l" in forms  # base64 of the value (9 bytes: no padding)
    # at each alignment the characters that hold only the value's bits, in both alphabets
    for shift in (1, 2):
        encoded = __import__("base64").b64encode(bytes(shift) + value.encode()).decode()
        inner = encoded[-(-8 * shift // 6):8 * (shift + 9) // 6]
        assert inner in forms and inner.replace("+", "-").replace("/", "_") in forms
        assert encoded[-(-8 * shift // 6) - 1:8 * (shift + 9) // 6] not in forms  # one more would hold a zero's bits
    assert forms == sorted(forms, key=lambda f: (-len(f), f))


def test_backend_arguments_without_credentials_add_nothing(monkeypatch):
    before = list(secrets())
    monkeypatch.delenv("NO_SUCH_VARIABLE", raising=False)
    add_arg_secrets({"base_url": "http://127.0.0.1:9/v1", "note": "me@example.org", "api_key_env": "NO_SUCH_VARIABLE",
                     "user_only": "http://just-a-user@127.0.0.1:9/v1", "number": 5, "empty": ""})
    add_arg_secrets({"api_key_env": ""})
    add_arg_secrets({"api_key_env": 5})  # a YAML scalar that names no variable
    assert secrets() == before
    add_arg_secrets({"base_url": "  http://u:pw-9911aa@127.0.0.1:9/v1  "})  # spaces around, as a flag may give it
    assert "pw-9911aa" in secrets()


def test_every_argument_is_read_whatever_comes_before_it():
    add_arg_secrets({"a": "plain", "b": 3, "c": "http://[bad@x", "d": "http://u:after-bad-77@h/v1",
                     "e": "//u:no-scheme-78@h/v1"})
    assert "after-bad-77" in secrets() and "no-scheme-78" in secrets()

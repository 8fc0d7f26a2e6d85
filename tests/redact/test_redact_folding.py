"""One case folding for redaction and its fast path (avhb/redact.py:
``fold``): the patterns fold case as ``re.IGNORECASE`` does, which reads
``ſ`` as ``s``, the Kelvin sign as ``k``, ``İ`` and ``ı`` as ``i``;
``str.lower`` does not, so the trigger checks and the fast path used to
miss what a pattern matches ("baſic XXXXXXXX" kept; the line and the
walk disagreeing).  The fuzz below draws records from an alphabet of those
letters and the triggers' words and holds the line to ``redact``."""
from __future__ import annotations

import json
import random
import re
import string

import pytest

from avhb.redact import MASK, _clean, fold, redact, redacted_json


def test_fold_reads_every_character_as_the_patterns_do():
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    letters = set(re.findall("[a-z]", everything, re.IGNORECASE))  # what IGNORECASE matches to some ASCII letter
    assert letters - set(string.ascii_letters) == {"\u017f", "\u212a", "\u0130", "\u0131"}  # this Python's regex engine
    for char in letters:
        assert {x for x in string.ascii_lowercase if re.fullmatch(x, char, re.IGNORECASE)} == {fold(char)}, char
    rest = "".join(c for c in everything if c not in letters)
    assert fold(rest) == rest.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass") == rest


@pytest.mark.parametrize("text", [
    "baſic XXXXXXXXXX", "Bearer abcdefgh", "BEARER abcdefgh", "authorİzation: abcdefgh", "AUTHORIZATION=abcdefgh",
    "GET /x?\u212aey=abcdefgh", "x-api-\u212aey: abcdefgh123", "my_paſſword=abcdefgh", "to\u212aen=abcdefgh",
    "access_to\u212aen=zzzzzzzz",
])
def test_what_a_pattern_matches_is_masked_by_the_line_and_the_walk(text):
    for obj in ({"response": text}, {"response": f"token {text}"}, {"note": "a token", "r": [text]}):
        line, _ = redacted_json(obj)
        assert line == json.dumps(redact(obj), ensure_ascii=False)
        assert MASK in line and "abcdefgh" not in line and "XXXXXXXXXX" not in line and "zzzzzzzz" not in line


def test_credential_names_fold_alike():
    for name in ("paſſword", "api_\u212aey", "SECRET", "to\u212aen", "x-api-\u212aey"):
        obj = {"meta": {name: "hunter2hunter2"}}
        line, _ = redacted_json(obj)
        assert line == json.dumps(redact(obj), ensure_ascii=False) and "hunter2hunter2" not in line, name


# pieces of lines: the triggers' words, each letter of which may be drawn as its other cases, and the
# characters around them in JSON (quotes, backslashes, ": ", "=") and outside ASCII
_WORDS = ["basic ", "bearer ", "authorization: ", "?key=", "&token=", "x-api-key: ", "api_key=", "password=",
          "passwd", "secret", "token", "tokens", "cookie", "sk-", "hf_", "ghp_", "aiza", "xoxb-", "://u:", "@h/",
          "key", '"key": ', "token\": "]
_OTHER = ["abcdefgh12", "zz", " ", '"', "\\", ": ", "=", "é", "日本", "\u00a0", "\u017f", "\u212a", "\u0130", "\u0131", "\n", ","]
_CASES = {"s": "sS\u017f", "k": "kK\u212a", "i": "iI\u0130\u0131"}


def _drawn(rng: random.Random, word: str) -> str:
    return "".join(rng.choice(_CASES.get(c, c + c.upper())) if rng.random() < 0.35 else c for c in word)


def _text(rng: random.Random) -> str:
    return "".join(_drawn(rng, rng.choice(_WORDS)) if rng.random() < 0.4 else rng.choice(_OTHER)
                   for _ in range(rng.randrange(6)))


def _value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return rng.choice([_text(rng), _text(rng), 1, None])
    if roll < 0.8:
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]


def test_fuzzed_records_the_line_and_the_walk_agree():
    rng = random.Random(37)
    differences, passed_but_changed, masked = [], [], 0
    for _ in range(20_000):
        obj = {"key": "ab" * 8, **{_text(rng): _value(rng) for _ in range(rng.randrange(1, 4))}}
        line, _ = redacted_json(obj)
        walked = json.dumps(redact(obj), ensure_ascii=False)
        plain = json.dumps(obj, ensure_ascii=False)
        masked += walked != plain
        if line != walked:
            differences.append((line, walked))
        if _clean(plain) and walked != plain:  # a line the fast path passes must be one redact leaves alone
            passed_but_changed.append((plain, walked))
    assert masked > 2000  # the records hold credentials often enough to test the paths
    assert (len(differences), len(passed_but_changed)) == (0, 0), (differences + passed_but_changed)[0]

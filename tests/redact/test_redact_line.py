"""The one-line redaction the journal and the samples file use
(``avhb.redact.redacted_json``): the line it writes is exactly
``json.dumps(redact(obj), ensure_ascii=False, default=...)`` for every form
of secret (issue 26: the walk was skipped, never the strictness)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

import numpy as np
import pytest

from avhb.redact import MASK, redact, redacted_json
from avhb.runfolder.folder import _default
from avhb.runfolder.journal import Journal

ENV = {"MY_SERVICE_API_KEY": "abcdef0123456789", "SOME_TOKEN": 'q"uo\\te-\u00e9\u65e5-secret', "DB_PASSWORD":
       "line\nbreak-secret"}


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


@dataclass
class Meta:
    note: str
    count: int = 1


def _reference(obj, default=str):
    return json.dumps(redact(obj), ensure_ascii=False, default=default)


RECORDS = {
    "plain journal entry": {"key": "ab" * 32, "task": "tputpack/tput_text", "id": "q00001", "repeat": 0,
                            "response": "A", "error": None, "usage": {"prompt_tokens": 20, "completion_tokens": 1},
                            "cost": 0.0, "media": None, "adaptations": [], "response_meta": {"finish_reason": "stop"}},
    "env secret in a value": {"response": "the key is abcdef0123456789, ok"},
    "env secret with quote, backslash, non-ASCII": {"error": f"echo {ENV['SOME_TOKEN']} back"},
    "env secret with a newline": {"response": ["x", f"p={ENV['DB_PASSWORD']}"]},
    "env secret in a key": {"meta": {"abcdef0123456789": 1}},
    "short key holding a secret": {f"k{ENV['MY_SERVICE_API_KEY']}": 1},
    "token-shaped strings": {"response": "use sk-proj-AbCdEf0123456789xyz or hf_abcdefghijklmnopqrstuvwxyz12 or "
                                         "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
    "google key and slack token": {"a": ["AIzaSyA1234567890abcdefghijklmnopqrstu", "xoxb-1234567890-abcdef"]},
    "authorization header": {"error": "401 for Authorization: Bearer abc.def-123456"},
    "query key": {"url": "https://host/v1beta/models/m:generate?key=AIzaXYZ123&alt=sse"},
    "password in a URL": {"base": "postgres://user:hunter2hunter2@db:5432/x"},
    "command-line argument": {"cmd": "--model_args pretrained=x,hf_token=abcdefgh1234"},
    "credential-named keys": {"api_key": "anything", "Authorization": "Bearer x", "X-Api-Key": "v", "password": "p",
                              "client_secret": "c", "hf_token": "h", "cookie": "session=1", "Set-Cookie": "a=b",
                              "nested": [{"access_token": "a"}, ("tuple", {"refresh_token": ["l"]})]},
    "counts and tokenizer fields survive": {"max_tokens": 16, "prompt_tokens": 3, "eos_token": "</s>", "token": None,
                                            "api_key": ""},
    "a key that looks like JSON": {'a": "sk-abcdefghijklmnop': 1, "b": 'x": "y'},
    "a value that looks like a key": {"v": 'z", "api_key": "sk-abcdefghijklmnop'},
    "a dataclass (redact makes it a dict)": {"meta": Meta("Bearer qwertyuiop123")},
    "a clean dataclass": {"meta": Meta("fine")},
    "non-JSON values": {"path": __import__("pathlib").Path("/tmp/x"), "s": {1, 2}},
    "numbers keyed by ints": {1: 2, 3.5: [None, True, float("inf")]},
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_the_line_is_what_redact_then_dumps_write(name):
    obj = RECORDS[name]
    text, kept = redacted_json(obj)
    assert text == _reference(obj)
    assert json.dumps(kept, ensure_ascii=False, default=str) == text
    if isinstance(obj, dict) and not any(isinstance(v, (Meta, set)) for v in obj.values()):
        assert kept == redact(obj)


def test_no_secret_reaches_the_line():
    text = "\n".join(redacted_json(obj)[0] for obj in RECORDS.values())
    for value in ENV.values():
        assert value not in text and json.dumps(value, ensure_ascii=False)[1:-1] not in text
    for leaked in ("AbCdEf0123456789xyz", "abc.def-123456", "AIzaXYZ123", "hunter2hunter2", "abcdefgh1234",
                   "anything", "session=1", "qwertyuiop123"):
        assert leaked not in text
    assert MASK in text


def test_the_samples_file_default_too():
    obj = {"scores": np.array([1.0, 2.0]), "doc": {"note": "Bearer qwertyuiop123"}, "m": Meta("x")}
    assert redacted_json(obj, default=_default)[0] == _reference(obj, _default)


def test_varied_records_match_the_walk():
    rng = random.Random(26)
    pieces = ["", "a", "key", "token", "Bearer zzzzzzzzzz", "abcdef0123456789", ENV["SOME_TOKEN"], '"', "\\", ": ",
              '", "', "sk-abcdefghijklmnop", "prompt_tokens", "api_key", "é", "\n", "cookie", "://", "=", "_token",
              "-Token", "tokens", "access_token=abcdefgh", "Authorization"]

    def text():
        return "".join(rng.choice(pieces) for _ in range(rng.randrange(4)))

    def value(depth=0):
        roll = rng.random()
        if depth > 2 or roll < 0.4:
            return rng.choice([text(), 1, 2.5, None, True])
        if roll < 0.7:
            return {text(): value(depth + 1) for _ in range(rng.randrange(4))}
        return [value(depth + 1) for _ in range(rng.randrange(3))]

    for _ in range(2000):
        obj = {text(): value() for _ in range(rng.randrange(5))}
        assert redacted_json(obj)[0] == _reference(obj)


def test_the_journal_keeps_and_writes_the_redacted_entry(tmp_path):
    journal = Journal(tmp_path)
    kept = journal.put("responses", "k1", {"response": "echo abcdef0123456789", "usage": {"prompt_tokens": 3}})
    journal.close()
    line = (tmp_path / "responses.jsonl").read_text()
    assert "abcdef0123456789" not in line and kept["response"] == f"echo {MASK}"
    assert Journal(tmp_path).get("responses", "k1") == kept


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
def test_every_github_token_form_is_redacted_by_the_line(prefix):
    obj = {"response": f"though high: {prefix}abcdefghijklmnopqrstuvwxyz0123456789"}
    text, _ = redacted_json(obj)
    assert text == _reference(obj) and "abcdefghijklmnopqrstuvwxyz0123456789" not in text


@pytest.mark.parametrize("name", ["password", "passwd", "Client_Secret", "Set-Cookie", "authorization", "x_api_key",
                                  "refresh_token", "hf_token", "Auth-Token", "TOKEN", "id_token"])
def test_every_credential_name_takes_the_walk(name):
    obj = {"meta": {name: "hunter2hunter2"}, "note": "a passage on ghosts"}  # no other trigger in the line
    text, _ = redacted_json(obj)
    assert text == _reference(obj) and "hunter2hunter2" not in text


def test_a_secret_set_in_the_environment_mid_run_is_redacted_from_the_next_line(monkeypatch):
    obj = {"response": "the new value is zyxwvutsrq987654"}
    assert redacted_json(obj)[0] == _reference(obj) and "zyxwvutsrq987654" in redacted_json(obj)[0]
    monkeypatch.setenv("LATE_API_KEY", "zyxwvutsrq987654")
    text, _ = redacted_json(obj)
    assert text == _reference(obj) and "zyxwvutsrq987654" not in text


def test_token_counts_and_prose_about_tokens_take_no_walk(monkeypatch):
    """The fast path proves these lines clean: "token" that neither ends a
    key nor comes before "=" cannot be changed by redact (a walk here would
    cost every line of a run its time, not its strictness)."""
    import avhb.redact as redact_module

    obj = {"key": "ab" * 32, "response": "Tokenizers split text into tokens; max_tokens bounds them.",
           "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21}, "meta": {"my_tokens": 3}}
    want = _reference(obj)

    def no_walk(*args, **kwargs):
        raise AssertionError("walked")

    monkeypatch.setattr(redact_module, "redact", no_walk)
    assert redacted_json(obj)[0] == want
    for walked in ({"t": "token=abcdefgh"}, {"x_token": "abcdefgh"}):
        with pytest.raises(AssertionError, match="walked"):
            redacted_json(walked)

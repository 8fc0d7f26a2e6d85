"""Secrets never reach logs or files: avhb.redact."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from avhb.redact import MASK, env_secrets, redact, redact_text, secret_key


def test_env_values_with_secret_names_are_removed(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdef0123456789")
    monkeypatch.setenv("SOME_TOKEN", "tok-zzzzzzzzzz")
    monkeypatch.setenv("DB_SECRET", "s3cr3t-value")
    monkeypatch.setenv("PLAIN_SETTING", "abcdefghijklmnop")  # name is not secret-like
    text = "k=abcdef0123456789 t=tok-zzzzzzzzzz s=s3cr3t-value p=abcdefghijklmnop"
    assert redact(text) == f"k={MASK} t={MASK} s={MASK} p=abcdefghijklmnop"


def test_short_and_path_values_are_not_secrets(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("HF_TOKEN_PATH", "/root/.cache/huggingface/token")
    found = env_secrets()
    assert "false" not in found and "/root/.cache/huggingface/token" not in found
    assert redact("set to false in /root/.cache/huggingface/token") == "set to false in /root/.cache/huggingface/token"
    assert env_secrets({"X_KEY": "1234567", "Y_KEY": "12345678"}) == ["12345678"]


def test_env_cache_follows_changes(monkeypatch):
    monkeypatch.setenv("ROTATING_KEY", "first-secret-1")
    assert redact("first-secret-1") == MASK
    monkeypatch.setenv("ROTATING_KEY", "second-secret-2")
    assert redact("first-secret-1 second-secret-2") == f"first-secret-1 {MASK}"


def test_token_shaped_strings():
    assert redact_text("key sk-proj-AbCdEf0123456789xyz used", []) == f"key sk-{MASK} used"
    assert redact_text("hf_abcdefghijklmnopqrstuvwxyz12", []) == f"hf_{MASK}"
    assert redact_text("AIzaSyA1234567890abcdefghijklmnopqrstu", []) == MASK
    assert redact_text("ghp_abcdefghijklmnopqrstuvwxyz0123456789", []) == MASK
    # ordinary words that merely look similar survive
    assert redact_text("task-123 sk-short hf_x basic idea", []) == "task-123 sk-short hf_x basic idea"


def test_authorization_headers_and_query_keys():
    assert redact_text("Authorization: Bearer abc.def-123456", []) == f"Authorization: Bearer {MASK}"
    assert redact_text('{"authorization": "Basic dXNlcjpwYXNz"}', []) == '{"authorization": "Basic ' + MASK + '"}'
    assert redact_text("curl -H 'x-api-key: 9f8e7d6c5b4a'", []) == f"curl -H 'x-api-key: {MASK}'"
    url = "https://host/v1beta/models/m:generate?key=AIzaXYZ123&alt=sse"
    assert redact_text(url, []) == f"https://host/v1beta/models/m:generate?key={MASK}&alt=sse"
    assert redact_text("sent bearer  qwertyuiop", []) == f"sent bearer {MASK}"


def test_dicts_by_key_name_keep_counts_and_tokenizer_fields():
    data = {
        "api_key": "anything", "Authorization": "Bearer x", "X-Api-Key": "v", "password": "p",
        "client_secret": "c", "hf_token": "h", "max_tokens": 16, "prompt_tokens": 3,
        "eos_token": "</s>", "key": "3fa9c1", "api_key_env": "OPENAI_API_KEY", "token": None,
        "nested": [{"access_token": "a"}, ("sk-abcdefghijklmnop",)],
    }
    out = redact(data)
    for k in ("api_key", "Authorization", "X-Api-Key", "password", "client_secret", "hf_token"):
        assert out[k] == MASK, k
    assert out["max_tokens"] == 16 and out["prompt_tokens"] == 3 and out["eos_token"] == "</s>"
    assert out["key"] == "3fa9c1"  # a request hash, not a credential
    assert out["api_key_env"] == "OPENAI_API_KEY"  # the variable's name is not its value
    assert out["token"] is None
    assert out["nested"] == [{"access_token": MASK}, (f"sk-{MASK}",)]
    assert data["api_key"] == "anything"  # input untouched


def test_secret_key_names():
    assert secret_key("api-key") and secret_key("OPENAI_API_KEY") and secret_key("refresh_token")
    assert not secret_key("max_tokens") and not secret_key("pad_token") and not secret_key("key")


def test_extra_values_arrays_and_dataclasses(monkeypatch):
    @dataclass
    class Info:
        note: str
        n: int

    arr = np.arange(3)
    out = redact({"a": arr, "i": Info("uses my-private-value", 2), "s": "my-private-value"},
                 extra=["my-private-value"])
    assert out["a"] is arr
    assert out["i"] == {"note": f"uses {MASK}", "n": 2}
    assert out["s"] == MASK
    assert MASK in json.dumps(out, default=str)


def test_command_lines_lose_url_passwords_and_secret_arguments():
    argv = ["--judge", "*=openai:gpt-4o,base_url=http://bob:s3cretpassw0rd@127.0.0.1:9/v1",
            "--model-args", "password=hunter2hunter2,max_tokens=64,hf_token=abc123456789,tokens_per_frame=3,"
            "api_key_env=OPENAI_API_KEY", "http://127.0.0.1:8000/v1"]
    out = redact(argv)
    assert "s3cretpassw0rd" not in str(out) and "hunter2hunter2" not in str(out) and "abc123456789" not in str(out)
    assert "http://bob:***@127.0.0.1:9/v1" in out[1]
    assert "max_tokens=64" in out[3] and "tokens_per_frame=3" in out[3] and "api_key_env=OPENAI_API_KEY" in out[3]
    assert out[4] == "http://127.0.0.1:8000/v1"


def test_a_reply_echoing_the_api_key_never_reaches_the_journal(testpack, tmp_path):
    """Issue 15, defect 11: the journal is redacted like the samples file."""
    from tests.conftest import run_cli
    from tests.servers.openai_server import ScriptedServer

    key = "sk-echoedsecret0123456789"
    with ScriptedServer(reply=lambda body: f"ANSWER: a0 (your key is {key})") as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/qa_easy", "--model", f"openai:m,base_url={srv.base_url}", "--sample-data",
                       "--output-dir", str(out), env={"OPENAI_API_KEY": key}, timeout=120)
        assert proc.returncode == 0, proc.stderr
    journal = (out / "journal" / "responses.jsonl").read_text()
    assert key not in journal and "your key is ***" in journal
    for path in out.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    # a resumed run replays the redacted reply: same samples, no call
    before = (out / "samples" / "testpack__qa_easy.jsonl").read_text()
    proc = run_cli("score", str(out), env={"OPENAI_API_KEY": key})
    assert proc.returncode == 0 and (out / "samples" / "testpack__qa_easy.jsonl").read_text() == before

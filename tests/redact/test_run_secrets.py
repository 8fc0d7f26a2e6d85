"""The run's one set of secrets (avhb/redact.py: ``add_secret``,
``add_arg_secrets``, ``secrets``): every credential a backend or judge uses
-- a URL's password and the Basic token made of it, the value an
``api_key_env`` names -- with the forms a reply can echo it in (base64 at
any alignment, URL-encoded), removed by every writer of the run folder.
End to end against the suite's local OpenAI-compatible server, whose
replies echo each of them."""
from __future__ import annotations

import base64
import gzip
import json
import re
from urllib.parse import quote, quote_plus

from avhb.redact import MASK, add_arg_secrets, add_secret, redact, redact_text, redacted_json, secret_forms, secrets
from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_an_added_secret_and_its_forms_are_masked_everywhere():
    value = "Zr7:q u/ix+9"  # a password with characters URL encoding and base64 change
    add_secret(value)
    assert {value, quote(value, safe=""), quote_plus(value, safe=""), _b64(value)} <= set(secret_forms(value))
    for text in (f"echo {value}", f"p={quote(value, safe='')}", f"p={quote_plus(value, safe='')}",
                 f"b={_b64(value)}", f"u={base64.urlsafe_b64encode(value.encode()).decode()}"):
        assert redact_text(text).endswith(MASK), text
        obj = {"response": text}
        line, kept = redacted_json(obj)  # the fast path and the walk agree
        assert line == json.dumps(redact(obj), ensure_ascii=False) and kept["response"].endswith(MASK)
    # inside a longer base64 text (user:password), at each of base64's three alignments: what holds only the
    # password's bits is masked
    for user in ("", "a", "ab", "abc", "alice"):
        token = _b64(f"{user}:{value}")
        masked = redact_text(token)
        assert MASK in masked and len(masked) < len(token) - 8, (user, masked)


def test_values_and_forms_under_8_characters_are_not_kept():
    """As for the environment's secrets: masking them would mask ordinary words in the answers (which are
    scored as journaled); a short URL password still has its Basic token kept."""
    # base64 whole, unpadded, and the 10 characters that hold only its bits at each of the three alignments
    assert secret_forms("passw0rd") == ["cGFzc3cwcmQ=", "cGFzc3cwcmQ", "Bhc3N3MHJk", "cGFzc3cwcm", "wYXNzdzByZ",
                                        "passw0rd"]
    for short in ("PASS", "EMPTY", "", None):
        add_secret(short)
    add_arg_secrets({"base_url": "http://alice:PASS@127.0.0.1:9/v1"})
    known = secrets()
    assert "PASS" not in known and "EMPTY" not in known and _b64("alice:PASS") in known
    assert redact_text("the answer is PASS, EMPTY otherwise") == "the answer is PASS, EMPTY otherwise"


def test_backend_arguments_add_their_credentials(monkeypatch):
    monkeypatch.setenv("SERVICE_CRED", "cred-value-7788")  # a name redaction would not guess
    add_arg_secrets({"base_url": "http://svc%20user:p%40ss-4242@127.0.0.1:9/v1", "api_key_env": "SERVICE_CRED",
                     "note": "mail me @ http://x"})
    known = secrets()
    assert {"p@ss-4242", _b64("svc user:p@ss-4242"), "cred-value-7788"} <= set(known)
    add_arg_secrets({"base_url": "http://[::1:bad@x"})  # not a URL: nothing, no error


# ---------------------------------------------------------------- end to end


# passwords URL encoding changes (written encoded in the URL, as a URL must hold them)
MODEL_PASSWORD, JUDGE_PASSWORD, JUDGE_KEY = "m0del Pw+31337", "judge/Pw@90210", "jk-8f3a9c71d2"


def _echoes() -> dict[str, str]:
    forms = {}
    for name, user, password in (("model", "alice", MODEL_PASSWORD), ("judge", "bob", JUDGE_PASSWORD)):
        forms[f"{name} password"] = password
        forms[f"{name} password base64"] = _b64(password)
        forms[f"{name} Basic token"] = _b64(f"{user}:{password}")
        forms[f"{name} password URL-encoded"] = quote(password, safe="")
        forms[f"{name} password form-encoded"] = quote_plus(password, safe="")
    forms["judge key"] = JUDGE_KEY
    forms["judge key base64"] = _b64(JUDGE_KEY)
    return forms


def _reply(body: dict) -> str:
    echo = " ".join(_echoes().values())
    if body["model"] == "m":
        return f"ans0 (server saw: {echo})"
    return '{"score": 2}\n' + f"(server saw: {echo})"


def _files_text(out) -> dict[str, str]:
    texts = {}
    for path in out.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(out))] = path.read_text(errors="replace")
    html = texts.get("report.html", "")
    m = re.search(r'<script type="application/json" id="avhb-samples" data-encoding="([^"]+)">(.*?)</script>', html,
                  re.S)
    assert m, "the report embeds no samples"
    texts["report.html (its samples)"] = (gzip.decompress(base64.b64decode(m.group(2))).decode()
                                          if m.group(1) == "gzip+base64" else m.group(2))
    return texts


def test_no_credential_of_the_model_or_a_judge_reaches_the_run_folder(testpack, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(reply=_reply) as srv:
        host = srv.base_url.split("://", 1)[1]
        proc = run_cli("--tasks", "testpack/qa_judged", "--sample-data",
                       "--model", f"openai:m,base_url=http://alice:{quote(MODEL_PASSWORD, safe='')}@{host}",
                       "--judge", f"scorer=openai:j,base_url=http://bob:{quote(JUDGE_PASSWORD, safe='')}@{host},"
                       "api_key_env=JUDGE_CRED",
                       "--output-dir", str(out), env={"JUDGE_CRED": JUDGE_KEY}, unset=("OPENAI_API_KEY",))
        assert proc.returncode == 0, proc.stderr
        sent = {r.body["model"]: r.headers.get("Authorization") for r in srv.completions()}
    assert sent == {"m": "Basic " + _b64(f"alice:{MODEL_PASSWORD}"), "j": "Basic " + _b64(f"bob:{JUDGE_PASSWORD}")}
    texts = _files_text(out)
    assert {"journal/responses.jsonl", "journal/judges.jsonl", "samples/testpack__qa_judged.jsonl", "run.json",
            "results.json", "report.html"} <= set(texts)
    leaks = [(name, form) for name, text in texts.items() for form, value in _echoes().items() if value in text]
    assert leaks == []
    assert "(server saw: " in texts["journal/judges.jsonl"] and MASK in texts["journal/judges.jsonl"]
    assert "(server saw: " in texts["report.html (its samples)"]
    assert all(value not in proc.stderr for value in _echoes().values())
    results = json.loads(texts["results.json"])["results"]["testpack/qa_judged"]
    assert results["Judged_n"] == 6  # the verdicts were read through the echoes

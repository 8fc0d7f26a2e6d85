"""The litellm backend against the real local OpenAI-compatible server
(LiteLLM's ``openai/`` provider with ``api_base``).  LiteLLM is a declared
test dependency (``avhb[litellm]``); its import takes a few seconds, paid
once per module."""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from avhb.model.backend import parse_backend_spec
from avhb.errors import UserError
from avhb.model.messages import Message, Request, TextPart, VideoPart, text_request
from tests.backends.retried import Retried
from tests.servers.openai_server import ScriptedServer, echo_last_user

KEY = "sk-litellmtest-9876543210abcdef"


@pytest.fixture(scope="module")
def litellm_cls():
    from avhb.model_backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend


@pytest.fixture
def server():
    with ScriptedServer(reply=echo_last_user) as srv:
        yield srv


def _backend(cls, srv, model="openai/fake", **args):
    extra = "".join(f",{k}={v}" for k, v in args.items())
    b = cls(parse_backend_spec(f"litellm:{model},api_base={srv.base_url}{extra}"))
    b.retry_policy.base_delay = 0.01
    return Retried(b)


async def test_request_usage_and_key(litellm_cls, server, monkeypatch):
    monkeypatch.setenv("AVHB_LITELLM_CRED", KEY)
    b = _backend(litellm_cls, server, api_key_env="AVHB_LITELLM_CRED")
    r = await b.generate(text_request("hello there", max_new_tokens=5, temperature=0))
    assert r.error is None and r.text == "hello there"
    assert r.usage["completion_tokens"] == 2 and r.usage["prompt_tokens"] > 0
    sent = server.completions()[-1]
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "fake" and sent.body["max_tokens"] == 5 and sent.body["temperature"] == 0
    assert KEY not in json.dumps(b.describe()) + json.dumps(b.identity)
    assert server.count == 1


async def test_cost_from_the_local_cost_map(litellm_cls, server):
    import litellm

    b = _backend(litellm_cls, server, model="openai/gpt-4o-mini")
    r = await b.generate(text_request("one two three"))
    price = litellm.model_cost["gpt-4o-mini"]
    expected = r.usage["prompt_tokens"] * price["input_cost_per_token"] + \
        r.usage["completion_tokens"] * price["output_cost_per_token"]
    assert r.cost == pytest.approx(expected) and r.cost > 0
    unknown = await _backend(litellm_cls, server).generate(text_request("x"))
    assert unknown.cost == 0.0 and unknown.error is None


async def test_429_and_500_retried_by_us_only(litellm_cls, server):
    b = _backend(litellm_cls, server)
    server.fail_next(2, status=429, retry_after="0.05")
    r = await b.generate(text_request("a"))
    assert r.text == "a" and r.meta["attempts"] == 3 and server.count == 3  # LiteLLM made no retries of its own
    assert b.limiter.decreases == 2 and b.limiter.limit == 8  # two 429s in a row: 32 -> 16 -> 8
    server.fail_next(1, status=500)
    assert (await b.generate(text_request("b"))).text == "b"
    assert server.count == 5


async def test_timeout_retried_and_bound_recorded(litellm_cls, server):
    b = _backend(litellm_cls, server, timeout=0.5, max_retries=2)
    server.hang_next(1, 1.5)
    r = await b.generate(text_request("slow"))
    assert r.text == "slow" and r.meta["attempts"] == 2
    server.state.queue.clear()
    server.fail_next(5, status=503)
    r = await b.generate(text_request("x"))
    assert r.text == "" and "gave up after 3 attempts" in r.error
    server.state.queue.clear()
    server.fail_next(1, status=400, body=json.dumps({"error": {"message": "bad request body"}}))
    before = server.count
    r = await b.generate(text_request("y"))
    assert r.error and server.count == before + 1


def test_gemini_capabilities_and_native_video(litellm_cls, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaFakeFakeFakeFakeFakeFakeFakeFake123")
    b = litellm_cls(parse_backend_spec("litellm:gemini/gemini-2.5-flash"))
    caps = b.capabilities
    assert caps.video and caps.audio and caps.images == 3000 and caps.max_context == 1048576  # its preset's
    clip = tmp_path / "v.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42data")
    kwargs, _ = b.build_kwargs(Request(messages=[Message("user", [TextPart("What happens?"), VideoPart(path=str(clip))])]))
    part = kwargs["messages"][0]["content"][1]
    assert part == {"type": "file", "file": {"file_data": "data:video/mp4;base64," + base64.b64encode(clip.read_bytes()).decode()}}
    assert kwargs["num_retries"] == 0 and kwargs["max_retries"] == 0 and "api_key" not in kwargs
    # with video=false the evaluator sends frames; frames always go as images
    b = litellm_cls(parse_backend_spec("litellm:gemini/gemini-2.5-flash,video=false"))
    assert not b.capabilities.video
    frames = [np.zeros((4, 4, 3), np.uint8)]
    kwargs, _ = b.build_kwargs(Request(messages=[Message("user", [VideoPart(path="v.mp4", frames=frames, timestamps=[2.0])])]))
    assert [c["type"] for c in kwargs["messages"][0]["content"]] == ["text", "image_url"]
    assert "AIza" not in json.dumps(b.describe())


def test_argument_errors(litellm_cls, monkeypatch):
    with pytest.raises(UserError, match="api_key_env"):
        litellm_cls(parse_backend_spec(f"litellm:openai/x,api_key={KEY}"))
    with pytest.raises(UserError, match="unknown argument"):
        litellm_cls(parse_backend_spec("litellm:openai/x,temprature=0"))
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    with pytest.raises(UserError, match="NOPE_NOT_SET"):
        litellm_cls(parse_backend_spec("litellm:openai/x,api_key_env=NOPE_NOT_SET"))


# -- parameters a provider does not take ---------------------------------------

class _AnthropicStub:
    """A local stand-in for the Anthropic messages endpoint: records each
    POST (path, JSON body) and answers with one text block."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stub = self
        self.posts: list[tuple[str, dict]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                stub.posts.append((self.path, body))
                payload = json.dumps({
                    "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                    "content": [{"type": "text", "text": "bonjour"}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 7, "output_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


async def test_anthropic_call_drops_seed_and_reports_it(litellm_cls, monkeypatch):
    """The evaluator always sets ``seed``; Anthropic takes none, and LiteLLM
    refuses the whole call unless the parameter is left out."""
    monkeypatch.setenv("AVHB_ANTHROPIC_CRED", "sk-ant-test-0123456789")
    with _AnthropicStub() as stub:
        b = litellm_cls(parse_backend_spec(f"litellm:anthropic/claude-3-5-sonnet-20240620,api_base={stub.base_url},"
                                           "api_key_env=AVHB_ANTHROPIC_CRED,max_retries=0"))
        r = await b.generate(text_request("Say hello in French", max_new_tokens=8, temperature=0, seed=1234,
                                          top_k=5, num_beams=2))
        assert r.error is None and r.text == "bonjour"
        assert sorted(r.meta["ignored_generation_keys"]) == ["num_beams", "seed"]
        assert r.usage == {"prompt_tokens": 7, "completion_tokens": 1}
        [(path, body)] = stub.posts
        assert path.endswith("/messages") and "seed" not in body
        assert body["max_tokens"] == 8 and body["temperature"] == 0 and body["top_k"] == 5


def test_filter_params_keeps_provider_keys_and_openai_keeps_seed(litellm_cls):
    from avhb.model_backends.litellm_backend import filter_params

    standard = frozenset({"seed", "temperature", "stop", "logprobs"})
    assert filter_params({"seed": 1, "temperature": 0, "top_k": 3}, {"temperature"}, standard) == \
        ({"temperature": 0, "top_k": 3}, ["seed"])
    assert filter_params({"seed": 1}, None, standard) == ({"seed": 1}, [])  # provider unknown: nothing dropped
    b = litellm_cls(parse_backend_spec("litellm:openai/fake,api_base=http://127.0.0.1:9"))
    kwargs, dropped = b.build_kwargs(text_request("x", seed=7, logprobs=True))
    assert kwargs["seed"] == 7 and kwargs["logprobs"] is True and dropped == []


# -- settings a model refuses (issue 23, item 6) --------------------------------

async def test_litellm_own_rule_for_a_reasoning_model_is_followed_and_said(litellm_cls, server):
    # LiteLLM refuses temperature=0 for o-series models before sending (UnsupportedParamsError): read once,
    # sent without it (not LiteLLM's silent drop_params), listed on every request it changed
    from tests.servers.openai_server import refuse_settings

    server.set_fault(refuse_settings(r"^o\d"))
    b = _backend(litellm_cls, server, model="openai/o3-mini")
    requests = [text_request(f"q{i}", temperature=0, max_tokens=7) for i in range(3)]
    for request in requests:
        r = await b.generate(request)
        assert r.error is None, r.error
    sent = server.completions()
    assert [c.status for c in sent] == [200, 200, 200]  # nothing reached the server with temperature 0
    assert all("temperature" not in c.body and c.body["max_completion_tokens"] == 7 for c in sent)
    assert all(len(r.adaptations) == 1 and r.adaptations[0].startswith("temperature=0 not sent")
               and "LiteLLM's rule for the model" in r.adaptations[0] for r in requests)


async def test_litellm_a_provider_refusal_is_read_once(litellm_cls, server):
    from tests.servers.openai_server import refuse_settings

    server.set_fault(refuse_settings("house-reasoner"))
    b = _backend(litellm_cls, server, model="openai/house-reasoner")  # a model LiteLLM has no rule for
    first = text_request("one", temperature=0)
    r = await b.generate(first)
    assert r.error is None and r.text == "one"
    assert [c.status for c in server.completions()] == [400, 200]
    assert "refused it: Unsupported value: 'temperature' does not support 0" in first.adaptations[0]
    second = text_request("two", temperature=0)
    r = await b.generate(second)
    assert r.error is None and [c.status for c in server.completions()] == [400, 200, 200]
    assert second.adaptations == first.adaptations

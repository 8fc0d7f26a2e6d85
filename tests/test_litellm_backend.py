"""The litellm backend against the real local OpenAI-compatible server
(LiteLLM's ``openai/`` provider with ``api_base``).  LiteLLM is a declared
test dependency (``avhb[litellm]``); its import takes a few seconds, paid
once per module."""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from avhb.backend import parse_backend_spec
from avhb.errors import UserError
from avhb.messages import Message, Request, TextPart, VideoPart, text_request
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
    b.resilient.policy.base_delay = 0.01
    return b


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
    assert caps.video and caps.audio and caps.images == 32 and caps.max_context == 1048576
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

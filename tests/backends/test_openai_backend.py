"""The retry/concurrency code (avhb.model.resilience), message encoding, and the
openai backend against a real local OpenAI-compatible server."""
from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import time
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from avhb.model.backend import parse_backend_spec
from avhb.errors import UserError
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart, text_request
from avhb.model_backends.encode_messages import encode_messages, frame_label
from avhb.model_backends.openai_backend import OpenAIBackend, map_generation
from avhb.model.resilience import (AdaptiveLimiter, HTTPStatusFailure, MalformedReply, Resilient, RetryPolicy,
                             backoff_delay, classify_exception, parse_retry_after)
from tests.backends.retried import Retried
from tests.servers.openai_server import Fault, ScriptedServer, echo_last_user

KEY = "sk-avhbtest-0123456789abcdefXYZ"


# -- resilience: pure functions ------------------------------------------

def test_parse_retry_after_seconds_and_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("") is None
    assert parse_retry_after("soon") is None and parse_retry_after("nan") is None
    # Wed, 21 Oct 2015 07:28:00 GMT = 1445412480
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 10) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 + 99) == 0.0


def test_full_jitter_backoff_ceilings():
    policy = RetryPolicy(base_delay=0.5, max_delay=30)
    assert [backoff_delay(k, policy, lambda: 1.0) for k in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert [backoff_delay(k, policy, lambda: 0.25) for k in (1, 3)] == [0.125, 0.5]
    assert backoff_delay(4, policy, lambda: 0.0) == 0.0


def test_classification():
    f = classify_exception(HTTPStatusFailure(429, "slow down", {"Retry-After": "2"}))
    assert (f.retryable, f.rate_limited, f.status, f.retry_after) == (True, True, 429, 2.0)
    for status in (408, 409, 425, 500, 502, 503, 504, 599):
        assert classify_exception(HTTPStatusFailure(status)).retryable, status
    for status in (400, 401, 403, 404, 422):
        assert not classify_exception(HTTPStatusFailure(status)).retryable, status
    assert classify_exception(asyncio.TimeoutError()).retryable
    assert classify_exception(ConnectionResetError()).retryable
    assert classify_exception(MalformedReply("x")).retryable
    assert not classify_exception(ValueError("bad")).retryable

    class APITimeoutError(Exception):  # a client library's own type, matched by name
        pass

    class _Resp:
        headers = {"retry-after": "7"}

    class SDKError(Exception):
        status_code = 429
        response = _Resp()

    assert classify_exception(APITimeoutError()).retryable
    f = classify_exception(SDKError())
    assert f.rate_limited and f.retry_after == 7.0


class _Script:
    """An async callable failing with the scripted exceptions, then 'ok'."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def _resilient(max_attempts=6, rng=lambda: 1.0):
    """A Resilient whose waits (its own and the limiter's) run on a fake clock."""
    sleeps: list[float] = []
    now = [0.0]

    async def fake_sleep(s):
        sleeps.append(s)
        now[0] += s

    limiter = AdaptiveLimiter(4, clock=lambda: now[0], sleep=fake_sleep)
    r = Resilient(RetryPolicy(max_attempts=max_attempts), limiter, sleep=fake_sleep, rng=rng)
    return r, sleeps


async def test_retry_after_is_honoured_then_success():
    r, sleeps = _resilient()
    fn = _Script(HTTPStatusFailure(429, headers={"Retry-After": "1.5"}), HTTPStatusFailure(429, headers={"Retry-After": "1.5"}))
    out = await r.call(fn)
    assert out.ok and out.value == "ok" and out.attempts == 3 and fn.calls == 3
    assert sleeps == [1.5, 1.5] and out.retry_wait == 3.0


async def test_bounded_attempts_give_a_recorded_error():
    r, sleeps = _resilient(max_attempts=6)
    fn = _Script(*[HTTPStatusFailure(500, "boom")] * 10)
    out = await r.call(fn)
    assert not out.ok and out.value is None and fn.calls == 6 and out.attempts == 6
    assert sleeps == [0.5, 1, 2, 4, 8]  # full-jitter ceilings with rng = 1
    assert "HTTP 500" in out.error and "gave up after 6 attempts" in out.error


async def test_non_retryable_fails_at_once_and_retry_after_is_capped():
    r, sleeps = _resilient()
    out = await r.call(_Script(HTTPStatusFailure(401, "bad key")))
    assert out.attempts == 1 and sleeps == [] and "401" in out.error and "gave up" not in out.error
    r, sleeps = _resilient()
    out = await r.call(_Script(HTTPStatusFailure(503, headers={"Retry-After": "9999"})))
    assert out.ok and sleeps == [120.0]


async def test_cancellation_is_not_swallowed():
    limiter = AdaptiveLimiter(2)
    r = Resilient(RetryPolicy(), limiter)

    async def forever():
        await asyncio.sleep(10)

    task = asyncio.create_task(r.call(forever))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert limiter.in_flight == 0


def test_aimd_halves_once_per_epoch_and_grows_by_one():
    lim = AdaptiveLimiter(8, increase_after=3)
    assert lim.limit == 8
    lim.on_rate_limited(0)
    assert lim.limit == 4 and lim.epoch == 1
    lim.on_rate_limited(0)  # granted before the decrease: already counted
    assert lim.limit == 4
    lim.on_rate_limited(1)
    assert lim.limit == 2
    lim.on_rate_limited(2)
    lim.on_rate_limited(3)
    assert lim.limit == 1  # floor
    for _ in range(2):
        lim.on_success()
    assert lim.limit == 1
    lim.on_success()
    assert lim.limit == 2
    lim.on_success()
    lim.on_success()
    lim.on_rate_limited(lim.epoch)  # a 429 resets the success streak
    lim.on_success()
    lim.on_success()
    assert lim.limit == 1
    for _ in range(100):
        lim.on_success()
    assert lim.limit == 8  # capped at max


async def test_limiter_bounds_in_flight_and_wakes_waiters():
    lim = AdaptiveLimiter(3)
    current = peak = 0

    async def work():
        nonlocal current, peak
        await lim.acquire()
        current += 1
        peak = max(peak, current)
        await asyncio.sleep(0.001)
        current -= 1
        lim.release()

    await asyncio.gather(*(work() for _ in range(30)))
    assert peak == 3 and lim.in_flight == 0 and lim.max_seen_in_flight == 3


async def test_limiter_pauses_after_retry_after_with_fake_clock():
    now = [100.0]
    slept: list[float] = []

    async def fake_sleep(s):
        slept.append(s)
        now[0] += s

    lim = AdaptiveLimiter(4, clock=lambda: now[0], sleep=fake_sleep)
    epoch = await lim.acquire()
    lim.release()
    lim.on_rate_limited(epoch, retry_after=5.0)
    await lim.acquire()
    assert slept == [5.0] and now[0] == 105.0 and lim.limit == 2


# -- encoding ---------------------------------------------------------------

def _decode_data_url(url: str) -> bytes:
    head, _, data = url.partition(",")
    assert head.endswith(";base64")
    return base64.b64decode(data)


def test_frame_label():
    assert frame_label(12.5) == "Frame at 12.5s:"
    assert frame_label(0) == "Frame at 0s:"
    assert frame_label(3.0) == "Frame at 3s:"
    assert frame_label(1.256) == "Frame at 1.26s:"


def test_text_only_messages_are_plain_strings():
    req = text_request("What?", system="Be brief.")
    req.messages[1].parts.append(TextPart("Answer A or B."))
    assert encode_messages(req) == [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "What?\nAnswer A or B."}]


def test_an_image_is_sent_lossless_unless_it_is_jpeg_or_pixels_sent_as_jpeg(tmp_path):
    """A JPEG or PNG file goes as its own bytes; another format's pixels as
    PNG; pixels (a video frame, an array) as JPEG unless the part asks for
    PNG (a PIL image from a peer's hook: both peers send PNG)."""
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 3
    Image.fromarray(pixels).save(tmp_path / "a.jpg", quality=95)
    Image.fromarray(pixels).save(tmp_path / "a.webp", lossless=True)
    parts = [ImagePart(path=str(tmp_path / "a.jpg")), ImagePart(path=str(tmp_path / "a.webp")),
             ImagePart(array=pixels, encoding="png"), ImagePart(array=pixels)]
    content = encode_messages(Request(messages=[Message("user", parts)]))[0]["content"]
    urls = [c["image_url"]["url"] for c in content]
    assert _decode_data_url(urls[0]) == (tmp_path / "a.jpg").read_bytes()
    for url in urls[1:3]:
        assert url.startswith("data:image/png;base64,")
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(_decode_data_url(url)))), pixels)
    assert urls[3].startswith("data:image/jpeg;base64,")


def test_image_video_and_audio_parts(tmp_path):
    red = np.zeros((8, 6, 3), np.uint8)
    red[..., 0] = 255
    png = tmp_path / "blue.png"
    Image.new("RGB", (5, 7), (0, 0, 255)).save(png)
    frames = [np.full((4, 4, 3), v, np.uint8) for v in (10, 240)]
    req = Request(messages=[Message("user", [
        TextPart("Look:"),
        ImagePart(array=red, label="[1]"),
        ImagePart(path=str(png)),
        VideoPart(path="v.mp4", frames=frames, timestamps=[0.0, 12.5]),
        AudioPart(transcript="hello there"),
    ])])
    content = encode_messages(req)[0]["content"]
    kinds = [(c["type"], c.get("text")) for c in content]
    assert kinds == [("text", "Look:"), ("text", "[1]"), ("image_url", None), ("image_url", None),
                     ("text", "Frame at 0s:"), ("image_url", None), ("text", "Frame at 12.5s:"),
                     ("image_url", None), ("text", "Audio transcript: hello there")]
    urls = [c["image_url"]["url"] for c in content if c["type"] == "image_url"]
    # pixels (frames, an array) go as JPEG; a PNG file as its own bytes
    assert [u.split(";", 1)[0] for u in urls] == ["data:image/jpeg", "data:image/png", "data:image/jpeg",
                                                  "data:image/jpeg"]
    img = Image.open(io.BytesIO(_decode_data_url(urls[0])))
    assert img.format == "JPEG" and img.size == (6, 8)
    r, g, b = img.convert("RGB").getpixel((3, 4))
    assert r > 240 and g < 15 and b < 15
    assert _decode_data_url(urls[1]) == png.read_bytes()
    assert abs(np.asarray(Image.open(io.BytesIO(_decode_data_url(urls[3])))).mean() - 240) < 2


def test_audio_needs_support_and_encodes_wav():
    wave = (0.5 * np.sin(np.arange(1600) / 5)).astype(np.float32)
    req = Request(messages=[Message("user", [AudioPart(array=wave, rate=16000)])])
    with pytest.raises(Exception, match="audio"):
        encode_messages(req, audio=False)
    part = encode_messages(req, audio=True)[0]["content"][0]
    assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"
    data, rate = sf.read(io.BytesIO(base64.b64decode(part["input_audio"]["data"])), dtype="float32")
    assert rate == 16000 and data.shape == (1600,)
    assert np.max(np.abs(data - wave)) < 1e-4  # 16-bit quantisation


def test_video_without_frames(tmp_path):
    clip = tmp_path / "c.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42fake")
    req = Request(messages=[Message("user", [VideoPart(path=str(clip))])])
    with pytest.raises(Exception, match="no sampled frames"):
        encode_messages(req)
    part = encode_messages(req, video=True)[0]["content"][0]
    assert part["type"] == "video_url" and part["video_url"]["url"].startswith("data:video/mp4;base64,")
    assert _decode_data_url(part["video_url"]["url"]) == clip.read_bytes()
    part = encode_messages(req, video=True, video_style="file")[0]["content"][0]
    assert part == {"type": "file", "file": {"file_data": "data:video/mp4;base64," + base64.b64encode(clip.read_bytes()).decode()}}
    with pytest.raises(Exception, match="inline limit"):
        encode_messages(req, video=True, max_inline_mb=0.000001)


def test_generation_mapping():
    params, dropped = map_generation({"max_new_tokens": 7, "temperature": 0.2, "top_p": 0.9, "seed": 3,
                                      "until": ["\n\n", ""], "num_beams": 2, "do_sample": False})
    assert params == {"max_tokens": 7, "temperature": 0.2, "top_p": 0.9, "seed": 3, "stop": ["\n\n"]}
    assert dropped == ["num_beams"]
    params, _ = map_generation({"do_sample": False, "max_tokens": 5, "stop": "END"}, "max_completion_tokens")
    assert params == {"temperature": 0.0, "max_completion_tokens": 5, "stop": ["END"]}
    # thinking switches (MMLongCite's think / non-think): passed on as they are
    params, dropped = map_generation({"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": False}})
    assert params == {"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": False}} and not dropped


# -- the backend against a real local server ---------------------------------

@pytest.fixture
def server():
    with ScriptedServer(reply=echo_last_user) as srv:
        yield srv


def _backend(srv, fast_backoff=True, **args) -> Any:
    extra = ",".join(f"{k}={v}" for k, v in args.items())
    spec = parse_backend_spec(f"openai:fake,base_url={srv.base_url}" + (f",{extra}" if extra else ""))
    b = OpenAIBackend(spec)
    if fast_backoff:
        b.retry_policy.base_delay = 0.01
    return Retried(b)


async def test_plain_request_usage_and_generation(server):
    b = _backend(server)
    try:
        r = await b.generate(text_request("hello world", max_new_tokens=9, temperature=0, until=["Q:"]))
    finally:
        await b.aclose()
    assert r.error is None and r.text == "hello world"
    assert r.usage["completion_tokens"] == 2 and r.usage["prompt_tokens"] > 0
    body = server.completions()[-1].body
    assert body == {"model": "fake", "messages": [{"role": "user", "content": "hello world"}],
                    "max_tokens": 9, "temperature": 0, "stop": ["Q:"]}


async def test_429_with_retry_after_then_success(server):
    b = _backend(server, fast_backoff=False)  # no computed backoff: only Retry-After waits
    server.fail_next(3, status=429, retry_after="0.1")
    t0 = time.perf_counter()
    r = await b.generate(text_request("x"))
    elapsed = time.perf_counter() - t0
    await b.aclose()
    assert r.error is None and r.text == "x" and r.meta["attempts"] == 4
    assert server.count == 4 and elapsed >= 0.3
    assert b.limiter.decreases >= 1


async def test_500s_timeouts_and_malformed_replies_are_retried(server):
    b = _backend(server, timeout=0.3)
    server.fail_next(2, status=500)
    assert (await b.generate(text_request("a"))).text == "a"
    assert server.count == 3
    server.hang_next(1, 1.0)
    r = await b.generate(text_request("b"))
    assert r.text == "b" and r.meta["attempts"] == 2
    server.malformed_next(1)
    r = await b.generate(text_request("c"))
    assert r.text == "c" and r.meta["attempts"] == 2
    await b.aclose()


async def test_error_recorded_after_the_bound(server):
    b = _backend(server, max_retries=2)
    server.fail_next(10, status=503)
    r = await b.generate(text_request("x"))
    assert r.text == "" and r.error is not None and "503" in r.error and "gave up after 3 attempts" in r.error
    assert server.count == 3 and r.meta["attempts"] == 3
    server.state.queue.clear()  # 7 scripted 503s were never used
    server.fail_next(1, status=400, body=json.dumps({"error": {"message": "unknown model fake"}}))
    r = await b.generate(text_request("y"))
    assert "unknown model fake" in r.error and server.count == 4  # not retried
    # the run goes on: the next request works
    assert (await b.generate(text_request("z"))).text == "z"
    await b.aclose()


async def test_concurrency_limit_is_respected(server):
    server.state.delay = 0.03
    b = _backend(server, concurrency=4)
    rs = await b.generate_batch([text_request(f"q{i}") for i in range(40)])
    await b.aclose()
    assert [r.text for r in rs] == [f"q{i}" for i in range(40)]
    assert server.max_in_flight == 4  # reached, never exceeded


async def test_adaptive_limit_shrinks_on_429_and_recovers(server):
    server.state.delay = 0.02
    b = _backend(server, concurrency=8)
    server.set_fault(lambda i, body: Fault(status=429, retry_after="0") if i < 8 else None)
    rs = await b.generate_batch([text_request(f"a{i}") for i in range(8)])
    assert all(r.error is None for r in rs)
    assert b.limiter.decreases == 1 and b.limiter.limit == 4  # one halving for the whole burst
    server.set_fault(None)
    server.reset_counters()
    rs = await b.generate_batch([text_request(f"b{i}") for i in range(60)])
    await b.aclose()
    assert all(r.error is None for r in rs)
    assert b.limiter.limit == 8  # +1 per 10 successes, back to the max
    assert server.max_in_flight <= 8


async def test_media_request_reaches_the_server_as_the_api_expects(server):
    b = _backend(server, audio="true")
    frames = [np.full((4, 4, 3), 200, np.uint8)] * 2
    wave = np.zeros(800, np.float32)
    req = Request(messages=[Message("user", [TextPart("Describe."),
                                             VideoPart(path="v.mp4", frames=frames, timestamps=[1.0, 2.5]),
                                             AudioPart(array=wave, rate=8000)])])
    r = await b.generate(req)
    await b.aclose()
    assert r.error is None and r.text == "Describe.\nFrame at 1s:\nFrame at 2.5s:"
    content = server.completions()[-1].body["messages"][0]["content"]
    assert [c["type"] for c in content] == ["text", "text", "image_url", "text", "image_url", "input_audio"]
    assert content[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert content[5]["input_audio"]["format"] == "wav"


async def test_unencodable_sample_is_an_error_not_a_crash(server):
    b = _backend(server)  # no audio support
    r = await b.generate(Request(messages=[Message("user", [AudioPart(array=np.zeros(10, np.float32), rate=8000)])]))
    await b.aclose()
    assert r.text == "" and "audio" in r.error and server.count == 0


async def test_api_key_sent_but_never_described_or_logged(server, monkeypatch, caplog, capsys, tmp_path):
    monkeypatch.setenv("AVHB_TEST_CRED", KEY)
    caplog.set_level(logging.DEBUG)
    b = _backend(server, api_key_env="AVHB_TEST_CRED", max_retries=1)
    assert (await b.generate(text_request("hi"))).text == "hi"
    assert server.completions()[-1].headers["Authorization"] == f"Bearer {KEY}"
    # a gateway that echoes the key in its error body
    server.fail_next(2, status=401, body=json.dumps({"error": {"message": f"invalid key {KEY}"}}))
    r = await b.generate(text_request("again"))
    await b.aclose()
    assert r.error and "401" in r.error and KEY not in r.error
    described = json.dumps(b.describe()) + json.dumps(b.identity) + repr(b.spec.args)
    assert KEY not in described and "AVHB_TEST_CRED" in json.dumps(b.describe())
    out = capsys.readouterr()
    logged = caplog.text + out.out + out.err
    assert KEY not in logged
    dump = tmp_path / "response.json"
    dump.write_text(json.dumps(r.__dict__))
    assert KEY not in dump.read_text()


async def test_no_key_means_no_authorization_header(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    b = _backend(server)
    await b.generate(text_request("x"))
    await b.aclose()
    assert "Authorization" not in server.completions()[-1].headers


def test_bad_arguments_are_user_errors(monkeypatch):
    with pytest.raises(UserError, match="api_key_env"):
        OpenAIBackend(parse_backend_spec(f"openai:m,base_url=http://x/v1,api_key={KEY}"))
    with pytest.raises(UserError, match="unknown argument"):
        OpenAIBackend(parse_backend_spec("openai:m,base_url=http://x/v1,concurency=3"))
    with pytest.raises(UserError, match="concurrency"):
        OpenAIBackend(parse_backend_spec("openai:m,base_url=http://x/v1,concurrency=0"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIBackend(parse_backend_spec("openai:gpt-4.1-mini"))


def test_capability_overrides():
    b = OpenAIBackend(parse_backend_spec(
        "openai:m,base_url=http://x/v1,images_per_request=0,video=false,audio=yes,max_context=4096"))
    caps = b.capabilities
    assert (caps.images, caps.video, caps.audio, caps.max_context, caps.sees_pixels) == (0, False, True, 4096, False)
    assert b.describe()["capabilities"]["audio"] is True
    assert "concurrency" not in b.identity["args"]  # runtime knobs do not change answers


def test_server_models_endpoint(server):
    import urllib.request

    with urllib.request.urlopen(server.base_url + "/models") as resp:
        data = json.loads(resp.read())
    assert data["data"][0]["id"] == "fake"


def test_server_logs_requests_to_a_file(tmp_path):
    import urllib.request

    log = tmp_path / "requests.jsonl"
    with ScriptedServer(reply=lambda body: "B", log_path=str(log)) as srv:
        req = urllib.request.Request(srv.base_url + "/chat/completions", method="POST",
                                     data=json.dumps({"model": "m", "messages": []}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as resp:
            assert json.loads(resp.read())["choices"][0]["message"]["content"] == "B"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["body"]["model"] == "m" and lines[0]["status"] == 200


# -- Azure OpenAI's URL shape, organisation/project headers, URL credentials --

async def test_azure_url_shape_api_key_header_and_deployment(server, monkeypatch):
    monkeypatch.setenv("AVHB_TEST_AZURE_CRED", KEY)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    b = OpenAIBackend_azure(f"azure:gpt4o-prod,base_url={server.endpoint},api_version=2024-10-21,"
                            "api_key_env=AVHB_TEST_AZURE_CRED")
    try:
        r = await b.generate(text_request("hello azure", max_tokens=3))
    finally:
        await b.aclose()
    assert r.error is None and r.text == "hello azure"
    rec = server.completions()[-1]
    assert rec.path == "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"
    assert rec.deployment == "gpt4o-prod" and rec.query == {"api-version": "2024-10-21"}
    assert rec.headers["api-key"] == KEY and "Authorization" not in rec.headers
    assert rec.body["messages"] == [{"role": "user", "content": "hello azure"}] and rec.body["max_tokens"] == 3
    assert KEY not in json.dumps(b.describe()) + json.dumps(b.identity)
    assert b.identity["args"]["api_version"] == "2024-10-21"  # the API version can change answers


async def test_azure_deployment_argument_and_errors(server, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    with pytest.raises(UserError, match="api_version"):
        OpenAIBackend_azure(f"azure:d1,base_url={server.endpoint}")
    with pytest.raises(UserError, match="base_url"):
        OpenAIBackend_azure("azure:d1,api_version=2024-10-21")
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.endpoint + "/")
    b = OpenAIBackend_azure("azure:gpt-4o,deployment=team-a/eu", max_retries=0)
    r = await b.generate(text_request("x"))
    await b.aclose()
    # no key: Azure (here, the local server speaking its shape) answers 401, recorded as the sample's error
    assert r.text == "" and "401" in r.error and "subscription key" in r.error
    assert b._url == (server.endpoint + "/openai/deployments/team-a%2Feu/chat/completions"
                      "?api-version=2025-01-01-preview")


async def test_azure_endpoint_given_with_the_deployment_path(server, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    b = OpenAIBackend_azure(f"azure:ignored,base_url={server.endpoint}/openai/deployments/dep7,api_version=v1")
    assert (await b.generate(text_request("y"))).text == "y"
    await b.aclose()
    assert server.completions()[-1].deployment == "dep7"


def OpenAIBackend_azure(text: str, max_retries: int | None = None):
    from avhb.model_backends.openai_backend import AzureOpenAIBackend

    spec = parse_backend_spec(text + (f",max_retries={max_retries}" if max_retries is not None else ""))
    return Retried(AzureOpenAIBackend(spec))


async def test_organization_and_project_headers(server, monkeypatch):
    monkeypatch.delenv("OPENAI_ORG_ID", raising=False)
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_env")
    b = _backend(server, organization="org-abc")
    await b.generate(text_request("x"))
    await b.aclose()
    headers = server.completions()[-1].headers
    assert headers["OpenAI-Organization"] == "org-abc" and headers["OpenAI-Project"] == "proj_env"
    assert b.describe()["runtime"]["organization"] == "org-abc"
    assert "organization" not in b.identity["args"]  # which account pays does not change the answers
    monkeypatch.delenv("OPENAI_PROJECT_ID")
    b = _backend(server)
    await b.generate(text_request("y"))
    await b.aclose()
    assert "OpenAI-Project" not in server.completions()[-1].headers
    assert "OpenAI-Organization" not in server.completions()[-1].headers


async def test_userinfo_url_and_api_key_one_source_wins_said_once(server, monkeypatch, capsys):
    """Hardening defect 11 (second half): with ``user:pass@`` in base_url and
    OPENAI_API_KEY set, aiohttp refused every request ("Cannot combine
    AUTHORIZATION header with AUTH argument or credentials encoded in URL").
    Now the URL's credentials are sent as Basic auth, the key is not, and
    this is said once."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = server.base_url.replace("http://", "http://gateway-user:s3cr%40t-pass@")
    b = OpenAIBackend(parse_backend_spec(f"openai:fake,base_url={url},max_retries=0"))
    try:
        rs = await b.generate_batch([text_request(f"q{i}") for i in range(3)])
    finally:
        await b.aclose()
    assert [r.error for r in rs] == [None] * 3 and [r.text for r in rs] == ["q0", "q1", "q2"]
    for rec in server.completions():
        assert rec.headers["Authorization"] == "Basic " + base64.b64encode(b"gateway-user:s3cr@t-pass").decode()
        assert KEY not in json.dumps(dict(rec.headers))
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "OPENAI_API_KEY" in err and "Basic" in err
    assert KEY not in err and "s3cr" not in err
    described = json.dumps(b.describe()) + json.dumps(b.identity)
    assert "s3cr" not in described and "gateway-user" not in described
    assert b.identity["args"]["base_url"] == server.base_url


async def test_userinfo_url_without_key_is_basic_auth_silently(server, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = server.base_url.replace("http://", "http://u:p@")
    b = OpenAIBackend(parse_backend_spec(f"openai:fake,base_url={url}"))
    assert (await b.generate(text_request("z"))).text == "z"
    await b.aclose()
    assert server.completions()[-1].headers["Authorization"] == "Basic " + base64.b64encode(b"u:p").decode()
    assert "warning" not in capsys.readouterr().err


def test_azure_routes_refuse_what_azure_refuses(server):
    import urllib.error
    import urllib.request

    def post(path, headers):
        req = urllib.request.Request(server.endpoint + path, method="POST", headers=headers,
                                     data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert post("/openai/deployments/d/chat/completions", {"api-key": "k"})[0] == 404
    assert post("/openai/deployments/d/chat/completions?api-version=1", {})[0] == 401
    status, data = post("/openai/deployments/d/chat/completions?api-version=1", {"api-key": "k"})
    assert status == 200 and data["choices"][0]["message"]["content"] == "hi"  # the echo fixture
    assert post("/openai/chat/completions?api-version=1", {"api-key": "k"})[0] == 404


# -- settings a model refuses (issue 23, item 6; model_backends/accepted_settings.py) --

async def test_a_known_reasoning_model_is_sent_only_what_it_accepts(server):
    from tests.servers.openai_server import refuse_settings

    server.set_fault(refuse_settings(r"^o\d|^gpt-5"))
    for name in ("o3-mini", "o1-2024-12-17", "gpt-5-nano"):
        b = OpenAIBackend(parse_backend_spec(f"openai:{name},base_url={server.base_url}"))
        request = text_request("is it supported?", temperature=0.0, top_p=0.9, max_tokens=256, seed=3)
        try:
            r = await b.generate(request)
        finally:
            await b.aclose()
        assert r.error is None, (name, r.error)
        body = server.completions()[-1].body
        assert server.completions()[-1].status == 200
        assert {k: v for k, v in body.items() if k != "messages"} == {"model": name, "max_completion_tokens": 256,
                                                                      "seed": 3}
        assert request.adaptations == [
            "temperature=0.0 not sent: the model's default applies (OpenAI reasoning models accept only the default, 1)",
            "top_p=0.9 not sent: the model's default applies (OpenAI reasoning models accept only the default, 1)",
            "max_tokens sent as max_completion_tokens (OpenAI reasoning models take only the latter)"]
    server.set_fault(None)
    for name in ("gpt-5-chat-latest", "gpt-5.1", "gpt-4o", "o3-mini-like-custom"):  # no rule for these
        b = OpenAIBackend(parse_backend_spec(f"openai:{name},base_url={server.base_url}"))
        request = text_request("q", temperature=0.0, max_tokens=5)
        try:
            await b.generate(request)
        finally:
            await b.aclose()
        assert server.completions()[-1].body["temperature"] == 0.0 and not request.adaptations


async def test_a_refused_setting_is_read_once_and_remembered_for_the_model(server):
    from tests.servers.openai_server import refuse_settings

    server.set_fault(refuse_settings("judge-deployment"))
    b = OpenAIBackend(parse_backend_spec(f"openai:judge-deployment,base_url={server.base_url}"))
    try:
        first = text_request("one", temperature=0, max_tokens=8)
        r = await b.generate(first)
        assert r.error is None and r.text == "one"
        assert [c.status for c in server.completions()] == [400, 400, 200]  # max_tokens, then temperature
        assert len(first.adaptations) == 2 and "refused it: Unsupported value: 'temperature'" in first.adaptations[1]
        later = text_request("two", temperature=0, max_tokens=8)
        r = await b.generate(later)  # learned: sent adapted at once
        assert r.error is None and [c.status for c in server.completions()][3:] == [200]
        assert later.adaptations == first.adaptations
        assert "temperature" not in server.completions()[-1].body
    finally:
        await b.aclose()


async def test_a_400_that_names_no_setting_of_the_request_is_an_error_as_before(server):
    b = _backend(server)
    other = json.dumps({"error": {"message": "Unsupported value: 'logit_bias' is not allowed.", "param": "logit_bias",
                                  "code": "unsupported_value"}})
    plain = json.dumps({"error": {"message": "Invalid value for 'messages'.", "param": "messages", "code": None}})
    try:
        for body in (other, plain):
            server.reset_counters()
            server.fail_next(1, status=400, body=body)
            request = text_request("x", temperature=0)
            r = await b.generate(request)
            assert r.error is not None and "HTTP 400" in r.error and server.count == 1  # not sent again
            assert not request.adaptations
        server.reset_counters()
        server.fail_next(1, status=401, body=json.dumps({"error": {"message": "Unsupported value: 'temperature'",
                                                                   "param": "temperature"}}))
        r = await b.generate(text_request("x", temperature=0))  # only a 400 is read as a refused setting
        assert r.error is not None and "HTTP 401" in r.error and server.count == 1
    finally:
        await b.aclose()


async def test_azure_deployment_refusing_temperature_is_adapted(server, monkeypatch):
    from tests.servers.openai_server import refuse_settings

    monkeypatch.setenv("AVHB_TEST_AZURE_CRED", KEY)
    server.set_fault(refuse_settings("prod-judge"))
    b = OpenAIBackend_azure(f"azure:prod-judge,base_url={server.endpoint},api_version=2024-10-21,"
                            "api_key_env=AVHB_TEST_AZURE_CRED")
    try:
        r = await b.generate(text_request("hello azure", temperature=0, max_tokens=3))
    finally:
        await b.aclose()
    assert r.error is None and r.text == "hello azure"
    assert [c.status for c in server.completions()] == [400, 400, 200]
    assert server.completions()[-1].deployment == "prod-judge"


async def test_requests_name_avhb_as_their_user_agent(server):
    import avhb

    b = _backend(server)
    await b.generate(text_request("x"))
    await b.generate(text_request("y"))
    await b.aclose()
    assert [r.headers["User-Agent"] for r in server.completions()[-2:]] == [f"avhb/{avhb.__version__}"] * 2

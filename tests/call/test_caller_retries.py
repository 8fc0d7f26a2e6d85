"""Issue 25, item 2: one retry policy, applied by the caller to every
backend.  A backend makes one attempt and only says what a failure is
(``Backend.classify``); ``Caller.send`` retries it (backoff, Retry-After,
the AIMD limiter, every attempt counted by the circuit breaker), and the
attempts are journaled.  Here a plugin backend with no retry code of its
own talks HTTP to the scripted server (tests/servers/), so the retries
seen are the caller's."""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp

from avhb.call.caller import Caller
from avhb.errors import SampleError
from avhb.model.backend import Backend, BackendSpec
from avhb.model.messages import Response, text_request
from avhb.model.resilience import CircuitBreaker, RetryPolicy
from avhb.runfolder.journal import Journal
from tests.servers.openai_server import ScriptedServer, echo_last_user


class PlainHTTP(Backend):
    """A third-party plugin backend as one would write it: one POST per
    ``generate``, ``raise_for_status`` on a bad reply, no retries."""

    def __init__(self, url: str, attempts: int = 4):
        super().__init__(BackendSpec("plainhttp", "m", {"url": url}))
        self.url = url
        self.retry_policy = RetryPolicy(max_attempts=attempts, base_delay=0.01, max_delay=0.05)
        self.calls = 0

    async def generate(self, request):
        self.calls += 1
        if "unreadable" in request.messages[0].text:
            raise SampleError("this sample's file is unreadable")
        body = {"model": "m", "messages": [{"role": "user", "content": request.messages[0].text}]}
        async with aiohttp.ClientSession() as session:
            async with session.post(self.url + "/chat/completions", json=body) as resp:
                resp.raise_for_status()  # aiohttp.ClientResponseError: status + headers, classified by the caller
                data = await resp.json()
        return Response(text=data["choices"][0]["message"]["content"])


def _entries(tmp_path):
    return [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()]


async def test_a_plugin_backend_without_retries_is_retried_by_the_caller_and_the_attempts_journaled(tmp_path):
    with ScriptedServer(reply=echo_last_user) as server:
        backend = PlainHTTP(server.base_url)
        journal = Journal(tmp_path)
        caller = Caller(journal, "responses", backend)
        server.fail_next(2, status=503)
        call = await caller.call(text_request("hello"))
        assert call.error is None and call.text == "hello"
        assert server.count == 3 and backend.calls == 3  # two 503s, then the answer
        assert call.meta["attempts"] == 3
        assert caller.retrier.retries == 2
        journal.close()
    assert _entries(tmp_path)[0]["response_meta"]["attempts"] == 3


async def test_retry_after_is_honoured_and_the_limiter_halves_on_429(tmp_path):
    with ScriptedServer(reply=echo_last_user) as server:
        backend = PlainHTTP(server.base_url)
        backend.concurrency = 4
        caller = Caller(Journal(tmp_path), "responses", backend)
        server.fail_next(1, status=429, retry_after="0.4")
        start = time.perf_counter()
        call = await caller.call(text_request("slow down"))
        assert call.text == "slow down" and server.count == 2
        assert time.perf_counter() - start >= 0.4  # the server's Retry-After, not the 0.01 s backoff
        assert caller.retrier.limiter.decreases == 1 and caller.retrier.limiter.limit == 2
        server.fail_next(1, status=503, retry_after="0.4")  # not rate limiting: the policy's own wait
        start = time.perf_counter()
        call = await caller.call(text_request("busy"))
        assert call.text == "busy" and server.count == 4
        assert time.perf_counter() - start >= 0.4


async def test_fatal_failures_and_sample_errors_are_not_retried(tmp_path):
    with ScriptedServer(reply=echo_last_user) as server:
        backend = PlainHTTP(server.base_url)
        journal = Journal(tmp_path)
        caller = Caller(journal, "responses", backend)
        server.fail_next(1, status=400)
        call = await caller.call(text_request("bad request"))
        assert server.count == 1 and "400" in call.error and "gave up" not in call.error
        call = await caller.call(text_request("unreadable sample"))
        assert call.error == "this sample's file is unreadable" and backend.calls == 2
        assert caller.breaker.streak == 1  # the 400 counted; the sample's own error did not
        server.fail_next(9, status=500)
        call = await caller.call(text_request("keeps failing"))
        assert "gave up after 4 attempts" in call.error and server.count == 1 + 4
        assert call.meta["attempts"] == 4
        journal.close()
    assert [e["response_meta"] for e in _entries(tmp_path)] == [{"attempts": 1}, None, {"attempts": 4}]


async def test_the_breaker_counts_every_attempt_of_any_backend_and_stops_its_retries(tmp_path):
    with ScriptedServer(reply=echo_last_user) as server:
        backend = PlainHTTP(server.base_url, attempts=50)
        caller = Caller(Journal(tmp_path), "responses", backend)
        caller.breaker = CircuitBreaker(threshold=5, quiet=0)
        server.fail_next(100, status=502)
        call = await caller.call(text_request("dead"))
        assert caller.breaker.open and server.count == 5  # 5 attempts of one call opened it: no 50
        assert call.error.startswith("not sent: the backend stopped answering (ClientResponseError: 502")
        assert call.meta["attempts"] == 5 and not call.not_attempted  # sent 5 times: journaled as failed
        after = await caller.call(text_request("next"))
        assert after.not_attempted and server.count == 5


async def test_a_wrapping_backend_retries_as_its_inner_one(tmp_path):
    """The cascade (and the Ray pool) make one attempt of the inner backend
    and classify as it does: the caller retries them under its policy."""
    from avhb.model_backends.cascade import CascadeBackend

    with ScriptedServer(reply=echo_last_user) as server:
        inner = PlainHTTP(server.base_url)
        cascade = CascadeBackend(BackendSpec("cascade", "plainhttp:m", {"asr": "whisper-base"}), inner=inner)
        assert cascade.retry_policy is inner.retry_policy
        caller = Caller(Journal(tmp_path), "responses", cascade)
        server.fail_next(1, status=503)
        call = await caller.call(text_request("no audio here"))
        assert call.text == "no audio here" and server.count == 2


async def test_the_cascade_transcribes_a_request_once_across_the_callers_retries(tmp_path, monkeypatch):
    """Two 503s from the inner backend: three attempts, one transcription
    (Whisper is not run again for each retry)."""
    import numpy as np

    from avhb.model.messages import AudioPart, Message, Request, TextPart
    from avhb.model_backends import cascade as cascade_module
    from avhb.model_backends.asr import Transcript

    transcribed = []
    monkeypatch.setattr(cascade_module, "transcribe_part", lambda part, model, language=None: transcribed.append(
        part) or Transcript(text="the fox", segments=[(0.0, 1.0, "the fox")], model=model, seconds=0.5))
    with ScriptedServer(reply=echo_last_user) as server:
        inner = PlainHTTP(server.base_url)
        cascade = cascade_module.CascadeBackend(BackendSpec("cascade", "plainhttp:m", {"asr": "whisper-base"}),
                                                inner=inner)
        caller = Caller(Journal(tmp_path), "responses", cascade)
        server.fail_next(2, status=503)
        audio = AudioPart(array=np.zeros(1600, dtype=np.float32), rate=16000)
        call = await caller.call(Request(messages=[Message("user", [audio, TextPart("what is said?")])]))
        assert call.error is None and "[0.0-1.0] the fox" in call.text and "what is said?" in call.text
        assert server.count == 3 and len(transcribed) == 1
        assert call.adaptations == ["audio -> transcript: 1 part(s) transcribed by whisper-base"]  # noted once
        assert call.meta["attempts"] == 3 and call.meta["asr_seconds"] == 0.5
        other = await caller.call(Request(messages=[Message("user", [audio, TextPart("and now?")])]))
        assert other.error is None and len(transcribed) == 2  # another request is transcribed for itself
        assert not cascade._prepared  # an answered request's transcribed copy (and its media) is not held


def test_caller_retries_are_async_safe_under_many_calls(tmp_path):
    async def main():
        with ScriptedServer(reply=echo_last_user) as server:
            backend = PlainHTTP(server.base_url)
            backend.concurrency = 8
            caller = Caller(Journal(tmp_path), "responses", backend)
            server.fail_next(10, status=503)
            calls = await asyncio.gather(*(caller.call(text_request(f"q{i}")) for i in range(20)))
            assert [c.text for c in calls] == [f"q{i}" for i in range(20)]
            assert server.count == 30

    asyncio.run(main())


class LocalEngine(Backend):
    """A local engine as the built-ins are (no retry policy of its own: the
    Backend default) that reads a sample's file, or fails to reach a device."""

    def __init__(self, error: BaseException):
        super().__init__(BackendSpec("localengine", "m", {}))
        self.error = error
        self.calls = 0

    async def generate(self, request):
        self.calls += 1
        raise self.error


async def test_a_missing_or_unreadable_file_is_the_samples_failure_tried_once(tmp_path):
    for error in (FileNotFoundError(2, "No such file or directory", "/data/img_17.png"),
                  PermissionError(13, "Permission denied", "/data/clip.mp4"), IsADirectoryError(21, "Is a directory"),
                  NotADirectoryError(20, "Not a directory", "/data/clip.mp4/frame")):
        backend = LocalEngine(error)
        caller = Caller(Journal(tmp_path / type(error).__name__), "responses", backend)
        call = await caller.call(text_request("describe the image"))
        assert backend.calls == 1 and type(error).__name__ in call.error and "gave up" not in call.error
        assert caller.breaker.streak == 0  # a sample's file is not the backend failing


async def test_another_os_error_is_still_retried(tmp_path):
    backend = LocalEngine(OSError(5, "Input/output error"))
    backend.retry_policy = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0)
    caller = Caller(Journal(tmp_path), "responses", backend)
    call = await caller.call(text_request("x"))
    assert backend.calls == 3 and "gave up after 3 attempts" in call.error

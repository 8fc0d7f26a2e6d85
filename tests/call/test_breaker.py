"""Issue 15, defect 8: a dead backend is detected.  One circuit breaker per
backend, shared by all its calls, opens after N same-kind failures in a row
and stops sending; a dead server stops a 500-sample run in seconds with
exit 1 naming its URL."""
from __future__ import annotations

import asyncio
import json
import socket
import time

from avhb.model.backend import Backend, BackendSpec
from avhb.call.caller import Caller
from avhb.model.messages import Message, Request, Response, TextPart
from avhb.model.resilience import (BREAKER_THRESHOLD, AdaptiveLimiter, CircuitBreaker, Resilient, RetryPolicy,
                                   failure_kind)
from avhb.runfolder.journal import Journal
from tests.conftest import run_cli


def test_breaker_opens_after_n_failures_of_one_kind_and_a_success_resets_it():
    b = CircuitBreaker(threshold=3, quiet=0)
    b.failure("HTTP 503", "HTTP 503: busy")
    b.failure("HTTP 503", "HTTP 503: busy")
    b.success()
    b.failure("HTTP 503", "HTTP 503: busy")
    b.failure("TimeoutError", "TimeoutError")
    b.failure("HTTP 503", "HTTP 503: busy")
    assert not b.open
    b.failure("HTTP 503", "HTTP 503: still busy")
    assert b.open and b.opened_with == "HTTP 503: still busy"
    assert failure_kind("ClientConnectorError: Cannot connect to host", None) == "ClientConnectorError"
    assert failure_kind("whatever 12 went wrong 34") == "whatever # went wrong #"
    assert failure_kind("whatever 12 went wrong 34", 500) == "HTTP 500"


def test_a_burst_of_failures_does_not_open_it_until_nothing_answered_for_the_quiet_time():
    now = [100.0]
    b = CircuitBreaker(threshold=10, quiet=5, clock=lambda: now[0])
    for _ in range(30):  # thirty time-outs arrive at once (a fault storm), each sent a second ago
        b.failure("TimeoutError", "TimeoutError", started=99.0)
    assert not b.open
    b.success()  # other requests still answer
    now[0] = 104.0
    for _ in range(30):
        b.failure("TimeoutError", "TimeoutError", started=103.0)
    assert not b.open
    now[0] = 108.5  # nothing has answered since the attempts sent at 103.0
    b.failure("TimeoutError", "TimeoutError", started=107.0)
    assert b.open and b.silent_for == 5.5


async def test_resilient_stops_retrying_every_call_once_the_breaker_opens():
    attempts = 0

    async def refused():
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0)
        raise ConnectionRefusedError("Connection refused")

    breaker = CircuitBreaker(threshold=5, quiet=0)
    resilient = Resilient(RetryPolicy(max_attempts=6, base_delay=0.05), AdaptiveLimiter(4), breaker=breaker)

    async def one():
        return await resilient.call(refused)

    start = time.perf_counter()
    outcomes = await asyncio.gather(*(one() for _ in range(20)))
    assert breaker.open and "Connection refused" in breaker.opened_with
    assert all(o.error for o in outcomes)
    # 20 calls x 6 attempts would be 120; the breaker stops at its threshold plus what was already in flight
    assert attempts <= 5 + 4
    assert time.perf_counter() - start < 2  # a backoff sleep wakes when the breaker opens


class Failing(Backend):
    def __init__(self):
        super().__init__(BackendSpec("failing", "x"))
        self.calls = 0

    async def generate(self, request):
        self.calls += 1
        return Response(text="", error="RuntimeError: engine died")


async def test_caller_refuses_calls_once_open_and_does_not_journal_them(tmp_path):
    backend = Failing()
    journal = Journal(tmp_path)
    caller = Caller(journal, "responses", backend, label="failing:x")
    caller.breaker = CircuitBreaker(quiet=0)
    calls = []
    for i in range(BREAKER_THRESHOLD + 5):
        request = Request(messages=[Message("user", [TextPart(f"q{i}")])])
        calls.append(await caller.call(request))
    assert backend.calls == BREAKER_THRESHOLD
    assert [c.not_attempted for c in calls] == [False] * BREAKER_THRESHOLD + [True] * 5
    assert calls[-1].error.startswith("not attempted: failing:x stopped answering (RuntimeError: engine died)")
    journal.close()
    assert len((tmp_path / "responses.jsonl").read_text().splitlines()) == BREAKER_THRESHOLD
    assert caller.stop_message().startswith("stopped sending to failing:x: 10 failed attempts and no answer for")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dead_server_stops_the_run_fast_with_exit_1(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"id": f"s{i}", "q": f"question {i}", "a": f"a{i}"} for i in range(500)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = f"http://user:hunter2secret@127.0.0.1:{_dead_port()}/v1"
    out = tmp_path / "run"
    start = time.perf_counter()
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", f"openai:m,base_url={url}", "--data", f"testpack/qa={data}",
                   "--output-dir", str(out), "--no-report", timeout=120, unset=("OPENAI_API_KEY",))
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert elapsed < 30, elapsed
    errors = [line for line in proc.stderr.splitlines() if line.startswith("avhb: error")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    line = errors[0]
    # The transport keeps the URL's user and password for its auth header; the line names the endpoint without them.
    assert "stopped sending to openai:m at http://127.0.0.1:" in line and "hunter2secret" not in line
    assert "failed attempts and no answer for" in line and "(last: ClientConnectorError" in line
    assert "re-running the command retries them" in line
    res = json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]
    assert res["samples"] == 500 and res["errors"] == 500 and res["exact_n"] == 0
    samples = [json.loads(x) for x in (out / "samples" / "testpack__qa_easy.jsonl").read_text().splitlines()]
    not_attempted = sum("not attempted: " in (s["error"] or "") for s in samples)
    assert not_attempted >= 400 and f"{not_attempted} samples not attempted" in line
    # only calls actually sent are journaled: a re-run retries the rest
    journal = (out / "journal" / "responses.jsonl").read_text().splitlines()
    assert len(journal) == 500 - not_attempted
    print(f"dead server: stopped in {elapsed:.1f}s, {not_attempted} of 500 not attempted")

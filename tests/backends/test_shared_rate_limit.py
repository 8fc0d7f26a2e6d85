"""Many clients against one endpoint (issue 17): two shards' ``openai``
backends, each with its own AIMD limiter (``avhb.model.resilience``), share
a server that answers 429 (with Retry-After) whenever more than CAPACITY
requests are in flight.  Expected (docs/cluster.md, "One API endpoint,
many shards"): every request eventually succeeds, each shard backs off on
its own (its limit halves at least once, from 16 towards the capacity), and
the rejected share stays small because the shards' limits settle below the
server's capacity instead of hammering it."""
from __future__ import annotations

import asyncio
import threading

from avhb.model.backend import parse_backend_spec
from avhb.model.messages import text_request
from avhb.model_backends.openai_backend import OpenAIBackend
from tests.backends.retried import Retried
from tests.servers.openai_server import Fault, ScriptedServer

CAPACITY = 6
PER_SHARD = 120


async def test_two_shards_share_one_endpoints_rate_limit(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    lock = threading.Lock()
    state = {"busy": 0, "peak": 0, "rejected": 0}

    def fault(index: int, body: dict) -> Fault | None:
        with lock:
            if state["busy"] >= CAPACITY:
                state["rejected"] += 1
                return Fault(status=429, retry_after="0.05")
            state["busy"] += 1
            state["peak"] = max(state["peak"], state["busy"])
        return Fault(sleep=0.02)  # status 0: answered normally after the sleep

    def done(body: dict) -> str:
        with lock:
            state["busy"] -= 1
        return "ok"

    with ScriptedServer(reply=done, fault=fault, record=False) as server:
        shards = [Retried(OpenAIBackend(parse_backend_spec(f"openai:fake,base_url={server.base_url},concurrency=16,"
                                                           "max_retries=12"))) for _ in range(2)]
        try:
            replies = await asyncio.gather(*(
                asyncio.gather(*(b.generate(text_request(f"shard {k} question {i}", max_tokens=2))
                                 for i in range(PER_SHARD)))
                for k, b in enumerate(shards)))
        finally:
            for b in shards:
                await b.aclose()
    assert all(r.error is None and r.text == "ok" for shard in replies for r in shard)
    # the scripted server refuses above its capacity by construction; the shards did fill it
    assert state["peak"] == CAPACITY
    for b in shards:  # each shard backed off on its own, and kept below its own ceiling
        assert b.limiter.decreases >= 1 and b.limiter.limit < 16
    # AIMD: after the first halvings the shards' limits sum to about the capacity, so most
    # requests are answered the first time (a limiter without back-off would have ~2/3 rejected)
    assert state["rejected"] < 0.5 * 2 * PER_SHARD, state

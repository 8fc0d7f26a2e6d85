"""A backend as the caller sends to it: every failed attempt retried by the
one retry loop (``avhb.call.caller.Caller.send``: the backend's retry
policy and limiter, the caller's breaker).  Backends retry nothing
themselves, so a test of a backend's retries goes through this."""
from __future__ import annotations

import asyncio
from typing import Any

from avhb.call.caller import Caller
from avhb.model.messages import Request, Response


class Retried:
    """``generate``/``generate_batch`` through :meth:`Caller.send`; every
    other attribute is the backend's."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.caller = Caller(None, "responses", backend)

    async def generate(self, request: Request) -> Response:
        response = await self.caller.send(request)
        assert response is not None, "the breaker refused the call"
        return response

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        return list(await asyncio.gather(*(self.generate(r) for r in requests)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

"""The official ``openai`` SDK as the ``openai`` backend's transport, for
``benchmarks/throughput.py`` to measure against the backend's own aiohttp
transport.  Not shipped: the measurement decided against it (docs/design.md,
"Transport").

``SdkOpenAIBackend`` is :class:`OpenAIBackend` with one thing replaced: the
attempt (``_post``) goes through ``AsyncOpenAI`` (``max_retries=0``, the
backend's timeout, key, organisation/project headers).  Everything above it
is avhb's: request encoding, the caller's retries/backoff/Retry-After and
AIMD limiter (``Caller.send``), redaction, ``build_response``.  The SDK is used
in its cheapest form: ``with_raw_response`` (no pydantic model built for the
reply; the JSON is parsed once, as the aiohttp path does), every parameter
other than ``model``/``messages`` in ``extra_body`` (sent as given).

Argument ``sdk_http``: ``httpx`` (the SDK's default HTTP client) or
``aiohttp`` (``openai.DefaultAioHttpClient``, the SDK's aiohttp-based client).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from avhb.errors import UserError
from avhb.model.backend import Argument, BackendSpec
from avhb.model.resilience import MalformedReply
from avhb.model_backends.openai_backend import OpenAIBackend


class SdkOpenAIBackend(OpenAIBackend):
    arguments = {**OpenAIBackend.arguments,
                 "sdk_http": Argument("httpx | aiohttp", "httpx", "the SDK's HTTP client")}
    usage = "openai_sdk:MODEL,base_url=...,sdk_http=httpx|aiohttp"

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        self.sdk_http = str(spec.args.get("sdk_http", "httpx"))
        if self.sdk_http not in ("httpx", "aiohttp"):
            raise UserError(f"sdk_http={self.sdk_http!r}: use httpx or aiohttp")
        self._sdk: Any = None
        self._sdk_loop: Any = None

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["runtime"]["transport"] = f"openai SDK ({self.sdk_http})"
        return out

    def _client_sdk(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            import openai

            http = openai.DefaultAioHttpClient() if self.sdk_http == "aiohttp" else openai.DefaultAsyncHttpxClient()
            extra = {k: v for k, v in self._headers.items() if k.lower() not in ("content-type", "accept")}
            key = self.settings.api_key()
            if key:
                extra.pop("Authorization", None)
            self._sdk = openai.AsyncOpenAI(api_key=key or "unused", base_url=self.base_url, max_retries=0,
                                           timeout=self.settings.timeout, default_headers=extra, http_client=http)
            self._sdk_loop = loop
        return self._sdk

    async def _post(self, body: dict[str, Any], payload: bytes) -> Any:
        client = self._client_sdk()
        params = dict(body)
        model, messages = params.pop("model"), params.pop("messages")
        raw = await client.chat.completions.with_raw_response.create(model=model, messages=messages,
                                                                     extra_body=params)
        content = raw.http_response.content
        try:
            return json.loads(content)
        except ValueError:
            raise MalformedReply(f"reply is not JSON ({len(content)} bytes)") from None

    async def aclose(self) -> None:
        client, self._sdk = self._sdk, None
        if client is not None:
            await client.close()
        await super().aclose()

"""OpenAI-compatible chat completions (OpenAI, vLLM serve, llama.cpp server,
gateways): ``openai:MODEL,base_url=http://host:8000/v1``; Azure OpenAI:
``azure:DEPLOYMENT,base_url=https://RESOURCE.openai.azure.com,api_version=2024-10-21``.

Arguments (all optional; each with its type, default and one line in
``OPENAI_ARGUMENTS`` below, which ``avhb list backends`` prints and
docs/backends.md is made from):

- ``base_url``: default ``$OPENAI_BASE_URL`` or the official endpoint (Azure:
  the resource endpoint, default ``$AZURE_OPENAI_ENDPOINT``);
- ``api_key_env``: the *name* of the environment variable holding the key
  (default ``OPENAI_API_KEY``; Azure: ``AZURE_OPENAI_API_KEY``).  The key
  itself is never stored in identity/describe or written anywhere; passing
  ``api_key=`` is refused.  Without a key, a custom ``base_url`` is called
  with no Authorization header;
- ``organization``, ``project`` (default ``$OPENAI_ORG_ID``,
  ``$OPENAI_PROJECT_ID``): sent as ``OpenAI-Organization`` / ``OpenAI-Project``;
- ``concurrency`` (32): the most requests in flight; the adaptive limiter
  halves it on 429 and grows it back (``avhb.model.resilience``);
- ``timeout`` (120 s per attempt), ``max_retries`` (5; so 6 attempts);
- capabilities: ``images_per_request`` (32), ``video`` (False: sends
  sampled frames; True: a file without frames goes as ``video_url``),
  ``audio`` (False), ``max_context`` (128000), ``tokens_per_frame``.  A model
  the preset catalogue knows (``avhb list models``: by preset name, Hub id or
  alias, e.g. ``gpt-4o-audio-preview``, ``Qwen/Qwen2.5-Omni-7B`` behind a
  vLLM server) takes its defaults from its preset, said once at the start of
  the run; an argument on the spec always wins;
- ``max_tokens_param`` (``max_tokens``; use ``max_completion_tokens`` for
  models that refuse the former), ``extra_body`` (a dict merged into every
  request body);
- Azure only: ``api_version`` (required; default ``$OPENAI_API_VERSION``),
  ``deployment`` (default: the model name).  Requests go to
  ``{base_url}/openai/deployments/{deployment}/chat/completions?api-version=...``
  with the key in the ``api-key`` header, as Azure's own clients send it.

Credentials: a ``base_url`` with ``user:password@`` is sent as HTTP Basic
auth (the userinfo is taken out of the URL).  A URL's credentials and an API
key cannot both go in one ``Authorization`` header: the URL's win (they were
written for this endpoint; the key variable is often set for another), the
key is not sent, and the backend says so once on stderr.  The password, the
key and the credential header's value join the run's secrets
(:func:`avhb.redact.add_secret`) when the backend is built, so a reply that
echoes one (or its base64 or URL-encoded form) reaches no log or file.

Settings the model refuses: OpenAI's reasoning models take only their
default temperature and ``max_completion_tokens``; known ones are adapted
before sending, and a 400 naming an unsupported parameter is read once,
the request sent again without it, and the change kept for the run, said
once (``model_backends/accepted_settings.py``).

Transport: aiohttp, measured against the official ``openai`` SDK
(``AsyncOpenAI``, retries off, under the same limiter) by
``benchmarks/throughput.py``: the SDK is several times slower end to end
(see docs/design.md, "Transport"), so it is not used.
"""
from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from avhb import (AdaptiveLimiter, Argument, Backend, BackendSpec, Capabilities, Failure, HTTPStatusFailure,
                  MalformedReply, Request, Response, RetryPolicy, SampleError, UserError, __version__,
                  classify_exception)
from avhb.json_text import dumps
from avhb.model.presets import find_preset
from avhb.redact import add_secret, redact

from .accepted_settings import AcceptedSettings, read_refusal
from .arguments import check_arguments
from .encode_messages import encode_messages

OFFICIAL_URL = "https://api.openai.com/v1"

# keys of Request.generation understood here; everything else is reported
_MAX_TOKENS_KEYS = ("max_tokens", "max_new_tokens", "max_gen_toks", "max_completion_tokens")
_PASS_THROUGH = ("temperature", "top_p", "seed", "frequency_penalty", "presence_penalty", "logprobs",
                 "top_logprobs", "response_format", "reasoning_effort", "top_k", "min_p",
                 "repetition_penalty", "chat_template_kwargs")  # the last: vLLM/SGLang (e.g. enable_thinking)
# identity leaves out what does not change the answers
_RUNTIME_ARGS = frozenset({"api_key_env", "concurrency", "timeout", "max_retries", "organization", "project"})

# Every argument the API backends take, with its one line (``avhb list backends``, docs/backends.md): the one
# declaration; the unknown-argument check, the listing and the docs read it.  The capability defaults are
# the ``parse_api_settings`` defaults (a test builds a backend and compares).
RUNTIME_ARGUMENTS = {
    "api_key_env": Argument("str", "OPENAI_API_KEY", "the NAME of the environment variable holding the key "
                            "(never the key itself: api_key= is refused)"),
    "concurrency": Argument("int >= 1", "32", "the most requests in flight; halved on HTTP 429, grown back after"),
    "timeout": Argument("float (s)", "120", "seconds one attempt may take"),
    "max_retries": Argument("int >= 0", "5", "attempts after the first (retryable failures: 429, 5xx, time-outs)"),
}
_PRESET = "the model preset's, else "
CAPABILITY_ARGUMENTS = {
    "images_per_request": Argument("int >= 0", _PRESET + "32", "the most images (or sampled video frames) one "
                                   "request carries; 0: the model sees no pixels"),
    "video": Argument("bool", _PRESET + "false", "true: a video file the task sends unsampled goes whole as "
                      "video_url; false: the video goes as sampled frames (images)"),
    "audio": Argument("bool", _PRESET + "false", "true: the model hears audio (sent as input_audio parts); "
                      "false: audio becomes a transcript first (transcriber: avhb[asr])"),
    "max_context": Argument("int >= 1", _PRESET + "128000", "the model's context in tokens (the frame budget "
                            "checks it)"),
    "tokens_per_frame": Argument("int >= 1", _PRESET + "256", "tokens one image or frame costs, for the budget "
                                 "check"),
}
# capability -> the model argument that sets it (an argument on the spec wins over a preset)
CAPABILITY_ARGUMENT_OF = {"images": "images_per_request", "video": "video", "audio": "audio",
                          "max_context": "max_context", "tokens_per_frame": "tokens_per_frame"}
OPENAI_ARGUMENTS = {
    "base_url": Argument("URL", "$OPENAI_BASE_URL, else OpenAI's", "the server (.../v1); user:password@ in it "
                         "is sent as Basic auth"),
    **RUNTIME_ARGUMENTS,
    "organization": Argument("str", "$OPENAI_ORG_ID", "sent as the OpenAI-Organization header"),
    "project": Argument("str", "$OPENAI_PROJECT_ID", "sent as the OpenAI-Project header"),
    **CAPABILITY_ARGUMENTS,
    "max_tokens_param": Argument("str", "max_tokens", "the body key the token limit goes in "
                                 "(max_completion_tokens for models that refuse max_tokens)"),
    "extra_body": Argument("mapping", "{}", "merged into every request body (server options: "
                           "extra_body={top_k: 20})"),
}
AZURE_ARGUMENTS = {
    **OPENAI_ARGUMENTS,
    "base_url": Argument("URL", "$AZURE_OPENAI_ENDPOINT", "the resource endpoint "
                         "(https://RESOURCE.openai.azure.com; required)"),
    "api_key_env": dataclasses.replace(RUNTIME_ARGUMENTS["api_key_env"], default="AZURE_OPENAI_API_KEY"),
    "api_version": Argument("str (date)", "$OPENAI_API_VERSION", "Azure's api-version (required), e.g. 2024-10-21"),
    "deployment": Argument("str", "the model name", "the deployment the requests go to"),
}


@dataclass
class ApiSettings:
    """Arguments shared by the API backends, parsed and checked."""

    concurrency: int = 32
    timeout: float = 120.0
    max_retries: int = 5
    api_key_env: str = "OPENAI_API_KEY"
    capabilities: Capabilities = dataclasses.field(default_factory=Capabilities)

    def api_key(self) -> str:
        """The key, read from the environment at each use; never stored."""
        return os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.lower() in ("true", "yes", "1")
    raise UserError(f"model argument {name}={value!r} must be true or false")


def _as_number(value: Any, name: str, kind: type, minimum: float) -> Any:
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise UserError(f"model argument {name}={value!r} must be a {kind.__name__}") from None
    if out < minimum:
        raise UserError(f"model argument {name}={value!r} must be >= {minimum}")
    return out


def parse_api_settings(spec: BackendSpec, *, default_key_env: str | None, images: int = 32,
                       video: bool = False, audio: bool = False, max_context: int = 128000,
                       tokens_per_frame: int | None = None) -> ApiSettings:
    args = spec.args
    for forbidden in ("api_key", "key", "token"):
        if forbidden in args:
            raise UserError(f"model argument {forbidden}= would put the key in logs; "
                            "put it in an environment variable and pass api_key_env=NAME")
    caps = Capabilities(
        text=True,
        images=_as_number(args.get("images_per_request", images), "images_per_request", int, 0),
        video=_as_bool(args.get("video", video), "video"),
        audio=_as_bool(args.get("audio", audio), "audio"),
        multi_turn=True,
        max_context=_as_number(args.get("max_context", max_context), "max_context", int, 1),
    )
    if "tokens_per_frame" in args or tokens_per_frame is not None:
        caps.tokens_per_frame = _as_number(args.get("tokens_per_frame", tokens_per_frame), "tokens_per_frame",
                                           int, 1)
    caps.sees_pixels = caps.images > 0 or caps.video
    return ApiSettings(
        concurrency=_as_number(args.get("concurrency", 32), "concurrency", int, 1),
        timeout=_as_number(args.get("timeout", 120), "timeout", float, 0.001),
        max_retries=_as_number(args.get("max_retries", 5), "max_retries", int, 0),
        api_key_env=str(args.get("api_key_env", default_key_env or "")),
        capabilities=caps,
    )


@dataclass
class PresetDefaults:
    """The capability defaults a known model's preset gives an API backend
    (``parse_api_settings``' keywords), and which preset gave them."""

    preset: str | None = None
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)

    def note(self, spec: BackendSpec, caps: Capabilities) -> list[str]:
        """The run's note (said once at its start) naming the preset and
        what it supplied: each capability no argument on the spec gave that
        the backend kept as the preset says."""
        kept = {"images": caps.images, "video": caps.video, "audio": caps.audio, "max_context": caps.max_context,
                "tokens_per_frame": caps.tokens_per_frame}
        supplied = [k for k, v in self.defaults.items() if CAPABILITY_ARGUMENT_OF[k] not in spec.args and kept[k] == v]
        if self.preset is None or not supplied:
            return []
        shown = {"images": f"images {caps.images}", "video": f"video {'yes' if caps.video else 'no'}",
                 "audio": f"audio {'yes' if caps.audio else 'no'}", "max_context": f"context {caps.max_context}",
                 "tokens_per_frame": f"{caps.tokens_per_frame} tokens per frame"}
        said = ", ".join(shown[k] for k in supplied)
        return [f"{spec.label}: what the model takes is model preset {self.preset}'s ({said}; avhb list models); "
                "an argument on the spec overrides it (audio=, video=, images_per_request=)"]


def preset_defaults(kind: str, *names: str) -> PresetDefaults:
    """The defaults of the preset the first of ``names`` matches
    (:func:`avhb.model.presets.find_preset`) as backend ``kind`` takes them;
    empty when none matches."""
    preset = find_preset(*names)
    if preset is None:
        return PresetDefaults()
    caps = preset.capabilities_for(kind)
    defaults: dict[str, Any] = {k: caps[k] for k in ("images", "video", "audio") if k in caps}
    if preset.context:
        defaults["max_context"] = preset.context
    if preset.tokens_per_frame:
        defaults["tokens_per_frame"] = preset.tokens_per_frame
    return PresetDefaults(preset.name, defaults)


def map_generation(generation: dict[str, Any], max_tokens_param: str = "max_tokens",
                   max_stops: int | None = 4) -> tuple[dict[str, Any], list[str]]:
    """``Request.generation`` -> chat-completions parameters, plus the keys
    that were not used.  ``until`` (lm-eval's name) means ``stop``, keeping
    the first ``max_stops`` (the chat API takes at most 4; None: all);
    ``do_sample=False`` without a temperature means temperature 0."""
    out: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in generation.items():
        if value is None:
            continue
        if key in _MAX_TOKENS_KEYS:
            out[max_tokens_param] = int(value)
        elif key in ("stop", "until"):
            stops = [value] if isinstance(value, str) else [s for s in value if s]
            if stops:
                out["stop"] = stops if max_stops is None else stops[:max_stops]
        elif key in _PASS_THROUGH:
            out[key] = value
        elif key == "do_sample":
            if value is False and "temperature" not in generation:
                out["temperature"] = 0.0
        else:
            dropped.append(key)
    return out, dropped


def build_response(data: Any, *, attempts: int, dropped: list[str]) -> Response:
    """A parsed chat-completions reply -> Response; raises MalformedReply if
    it has no choices (some gateways answer 200 with an error object)."""
    if not isinstance(data, dict) or not data.get("choices"):
        err = data.get("error") if isinstance(data, dict) else None
        raise MalformedReply(f"reply without choices{': ' + str(err)[:300] if err else ''}")
    choice = data["choices"][0]
    message = choice.get("message") or {}
    text = message.get("content")
    if isinstance(text, list):  # some servers return content parts
        text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
    usage = data.get("usage") or {}
    meta: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
    if attempts > 1:
        meta["attempts"] = attempts
    if dropped:
        meta["ignored_generation_keys"] = dropped
    return Response(
        text=text or "",
        usage={k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens") if isinstance(usage.get(k), (int, float))},
        meta=meta,
    )


def check_spec(spec: BackendSpec, known: Mapping[str, Argument], usage: str) -> None:
    """A model name is given and every argument is known (the key-like
    ones reach parse_api_settings, which refuses them with a clear message)."""
    if not spec.name:
        raise UserError(f"{spec.kind} backend needs a model: {usage}")
    check_arguments(spec, known, also={"api_key", "key", "token"}, hint="; request options go in extra_body")


def extra_body(spec: BackendSpec) -> dict[str, Any]:
    extra = spec.args.get("extra_body") or {}
    if not isinstance(extra, dict):
        raise UserError("model argument extra_body must be a mapping, e.g. extra_body={top_k: 20}")
    return extra


class OpenAIBackend(Backend):
    """See the module docstring."""

    default_key_env = "OPENAI_API_KEY"
    arguments = OPENAI_ARGUMENTS
    usage = "openai:MODEL"

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_spec(spec, self.arguments, self.usage)
        self.known = preset_defaults(spec.kind, spec.name)
        self.settings = parse_api_settings(spec, default_key_env=self.default_key_env, **self.known.defaults)
        self.capabilities = self.settings.capabilities
        self.concurrency = self.settings.concurrency
        self.base_url, user_auth = split_userinfo(self._base_url())
        self.max_tokens_param = str(spec.args.get("max_tokens_param", "max_tokens"))
        self.accepted = AcceptedSettings(spec.name)
        self.extra_body = extra_body(spec)
        self.limiter = AdaptiveLimiter(self.settings.concurrency)  # shared by every caller of this backend
        self.retry_policy = RetryPolicy(max_attempts=self.settings.max_retries + 1)
        self._url = self._endpoint()
        self.prices = self._prices()
        self._session: Any = None
        self._session_loop: Any = None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for header, arg, env in (("OpenAI-Organization", "organization", "OPENAI_ORG_ID"),
                                 ("OpenAI-Project", "project", "OPENAI_PROJECT_ID")):
            value = str(spec.args.get(arg) or os.environ.get(env, "")).strip()
            if value:
                self._headers[header] = value
        key = self.settings.api_key()
        add_secret(key)  # sent or not, the value is a credential (the variable's name may not say so)
        if user_auth is not None:  # one source wins: the URL's credentials
            token = base64.b64encode(":".join(user_auth).encode()).decode()
            self._headers["Authorization"] = "Basic " + token
            add_secret(user_auth[1])
            add_secret(token)
            if key:
                print(f"avhb: warning: {spec.kind} backend: base_url carries user:password credentials, sent as "
                      f"Basic auth; ${self.settings.api_key_env} is set too and is not sent (one Authorization "
                      "header holds one credential)", file=sys.stderr)
        elif key:
            self._headers.update(self._key_header(key))
        elif self._needs_key():
            raise UserError(f"no API key: set the environment variable {self.settings.api_key_env} "
                            "(or name another with api_key_env=NAME)")

    @property
    def notes(self) -> list[str]:
        """Said once at the start of the run: the preset that supplied what the model takes."""
        return self.known.note(self.spec, self.capabilities)

    # -- endpoint and credentials (the Azure flavour overrides these) ------
    def _base_url(self) -> str:
        return str(self.spec.args.get("base_url") or os.environ.get("OPENAI_BASE_URL") or OFFICIAL_URL).rstrip("/")

    def _endpoint(self) -> str:
        return self.base_url + "/chat/completions"

    def _key_header(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def _needs_key(self) -> bool:
        return self.base_url == OFFICIAL_URL

    def _prices(self) -> Any:
        """OpenAI's own prices (LiteLLM's map) when talking to OpenAI; a
        self-hosted or gateway server's are unknown."""
        from avhb.model.prices import litellm_map_prices

        return litellm_map_prices(self.spec.name) if self.base_url == OFFICIAL_URL else None

    # -- metadata (never the key) ------------------------------------------
    @property
    def identity(self) -> dict[str, Any]:
        args = {k: v for k, v in self.spec.args.items() if k not in _RUNTIME_ARGS}
        args["base_url"] = self.base_url
        return redact({"kind": self.spec.kind, "name": self.spec.name, "args": args})

    def describe(self) -> dict[str, Any]:
        runtime = {"api_key_env": self.settings.api_key_env, "concurrency": self.settings.concurrency,
                   "timeout": self.settings.timeout, "max_retries": self.settings.max_retries,
                   "transport": "aiohttp"}
        for header, name in (("OpenAI-Organization", "organization"), ("OpenAI-Project", "project")):
            if header in self._headers:
                runtime[name] = self._headers[header]
        return redact({**self.identity, "runtime": runtime, "capabilities": dict(self.capabilities.__dict__)})

    # -- requests -----------------------------------------------------------
    def build_body(self, request: Request) -> tuple[dict[str, Any], list[str]]:
        """The request body as the model accepts it (known and learned
        changes applied, listed in ``request.adaptations``) and the
        generation keys not used."""
        params, dropped = map_generation(request.generation, self.max_tokens_param)
        body = {"model": self.spec.name,
                "messages": encode_messages(request, audio=self.capabilities.audio, video=self.capabilities.video)}
        body.update(params)
        body.update(self.extra_body)
        body, changed = self._accepted(body)
        request.adaptations.extend(changed)
        return body, dropped

    def _accepted(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        params, changed = self.accepted.adapt({k: v for k, v in body.items() if k not in ("model", "messages")})
        if not changed:  # every change is said: none said, the body as it was
            return body, changed
        return {"model": body["model"], "messages": body["messages"], **params}, changed

    async def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop or self._session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.settings.concurrency, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=_use_proxy_env(self.base_url),  # HTTP(S)_PROXY/NO_PROXY, as other clients do
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout),
                # a User-Agent of our own: aiohttp's skip_auto_headers would rebuild the header set per request
                headers={"User-Agent": f"avhb/{__version__}", **self._headers},
            )
            self._session_loop = loop
        return self._session

    async def _post(self, body: dict[str, Any], payload: bytes) -> Any:
        """One attempt: the request (``body``, already serialised as
        ``payload``) -> the reply's JSON.  Raises for a non-2xx reply or a
        body that is not JSON; retries are the caller's (``avhb.call.caller``)."""
        session = await self._client()
        async with session.post(self._url, data=payload) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise HTTPStatusFailure(resp.status, _error_text(raw), dict(resp.headers), _error_detail(raw))
        try:
            return json.loads(raw)
        except ValueError:
            raise MalformedReply(f"reply is not JSON ({len(raw)} bytes)") from None

    async def generate(self, request: Request) -> Response:
        """One attempt (the caller retries: ``avhb.call.caller``)."""
        try:
            body, dropped = self.build_body(request)
        except SampleError as exc:  # this sample cannot be encoded; the run goes on
            raise SampleError(f"encode: {exc}") from exc
        return await self._parse(_Sending(body, request), dropped)

    def classify(self, exc: BaseException) -> Failure:
        failure = classify_exception(exc)
        failure.message = redact(failure.message)
        return failure

    async def _parse(self, sending: "_Sending", dropped: list[str]) -> Response:
        """One attempt.  A 400 that names a parameter of the body as
        unsupported is read once per parameter: the change is learned for
        the run and the body sent again without it (module docstring)."""
        tried: set[str] = set()
        while True:
            try:
                return build_response(await self._post(sending.body, sending.payload), attempts=1, dropped=dropped)
            except HTTPStatusFailure as exc:
                change = read_refusal(str(exc), exc.detail, sending.body) if exc.status_code == 400 else None
                if change is None or change.param in tried:
                    raise
                tried.add(change.param)
                self.accepted.learn(change)
                body, changed = self._accepted(sending.body)
                sending.update(body, changed)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is None or session.closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is self._session_loop:
            await session.close()
        elif session.connector is not None:  # its loop is gone: drop the sockets without awaiting
            try:
                session.connector._close()
            except Exception:  # best effort on a dead loop
                pass


class AzureOpenAIBackend(OpenAIBackend):
    """Azure OpenAI: ``azure:DEPLOYMENT,base_url=https://RESOURCE.openai.azure.com,api_version=...``
    (see the module docstring)."""

    default_key_env = "AZURE_OPENAI_API_KEY"
    arguments = AZURE_ARGUMENTS
    usage = "azure:DEPLOYMENT,base_url=https://RESOURCE.openai.azure.com,api_version=YYYY-MM-DD"

    def __init__(self, spec: BackendSpec):
        version = spec.args.get("api_version")
        if isinstance(version, (datetime.date, datetime.datetime)):  # model arguments are read as YAML scalars
            spec = dataclasses.replace(spec, args={**spec.args, "api_version": version.isoformat()})
        super().__init__(spec)

    def _base_url(self) -> str:
        url = str(self.spec.args.get("base_url") or os.environ.get("AZURE_OPENAI_ENDPOINT") or "").rstrip("/")
        if not url:
            raise UserError(f"azure backend needs base_url= (or $AZURE_OPENAI_ENDPOINT): {self.usage}")
        return url

    def _endpoint(self) -> str:
        version = str(self.spec.args.get("api_version") or os.environ.get("OPENAI_API_VERSION") or "").strip()
        if not version:
            raise UserError(f"azure backend needs api_version= (or $OPENAI_API_VERSION): {self.usage}")
        deployment = str(self.spec.args.get("deployment") or self.spec.name)
        base = self.base_url
        if "/openai/deployments/" not in base:  # the resource endpoint, as Azure's portal shows it
            base = (base if base.endswith("/openai") else base + "/openai") + "/deployments/" + quote(deployment, safe="")
        return f"{base}/chat/completions?api-version={quote(version, safe='')}"

    def _key_header(self, key: str) -> dict[str, str]:
        return {"api-key": key}

    def _needs_key(self) -> bool:
        return False  # a gateway in front of Azure may take none; Azure itself answers 401


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``https://user:pass@host/v1`` -> (``https://host/v1``, (user, pass));
    a URL without userinfo comes back as it is, with None."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        raise UserError(f"base_url has a bad port: {redact(url)}") from None
    netloc = host + (f":{port}" if port is not None else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username or ""), unquote(parts.password or ""))


def _use_proxy_env(url: str) -> bool:
    """Honour proxy variables only when some are set (aiohttp then looks them
    up per request) and the server is not on this machine."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "::1") or host.startswith("127."):
        return False
    return any(os.environ.get(v) for v in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                            "http_proxy", "https_proxy", "all_proxy"))


class _Sending:
    """The body one call sends (it changes when the API refuses a setting)
    and its serialised form; changes are listed on the call's request."""

    def __init__(self, body: dict[str, Any], request: Request):
        self.request = request
        self.update(body, [])

    def update(self, body: dict[str, Any], changed: list[str]) -> None:
        self.body = body
        self.payload = dumps(body).encode()  # json.dumps(body), its encoder built once
        self.request.adaptations.extend(c for c in changed if c not in self.request.adaptations)


def _error_detail(raw: bytes) -> dict[str, Any]:
    """The reply's error object (``{"message", "type", "param", "code"}``), or {}."""
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    err = data.get("error", data) if isinstance(data, dict) else None
    return err if isinstance(err, dict) else {}


def _error_text(raw: bytes) -> str:
    """The server's error message, short."""
    try:
        data = json.loads(raw)
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message", err) if isinstance(err, dict) else err
        text = str(msg)
    except ValueError:
        text = raw.decode("utf-8", "replace")
    return text.strip()[:300]

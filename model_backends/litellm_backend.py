"""Any provider LiteLLM knows: ``litellm:gemini/gemini-2.5-flash``,
``litellm:anthropic/claude-...``, ``litellm:openai/NAME,api_base=http://...``.

Same arguments, retries, adaptive concurrency and redaction as the
``openai`` backend (``concurrency``, ``timeout``, ``max_retries``,
``images_per_request``, ``video``, ``audio``, ``max_context``,
``extra_body``), plus:

- ``api_base`` (or ``base_url``): the endpoint, for gateways and local servers;
- ``api_key_env``: the name of the variable holding the key; unset, LiteLLM
  reads the provider's own variable (``GEMINI_API_KEY``...); an ``openai/``
  model with ``api_base`` and no key at all gets the placeholder ``EMPTY``
  (keyless local servers such as vLLM);
- ``max_inline_mb`` (20): the largest video file sent inline.

LiteLLM's own retries are switched off (``num_retries=0, max_retries=0``)
so that ``avhb.model.resilience`` sees every 429.  It is imported on first use
with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (otherwise its import fetches the
cost map from the network); importing it takes several seconds.

Capabilities, where no argument gives them: a model the preset catalogue
knows (``avhb list models``; the name, or the name without its
``provider/`` prefix: ``openai/gpt-4o-audio-preview``) takes its preset's,
said once at the start of the run; else LiteLLM's local model map's where it
knows the model (``max_input_tokens``, ``supports_vision``,
``supports_audio_input``); else 32 images, no audio, 128k tokens.  Gemini
(``gemini/``, ``vertex_ai/``) takes video natively (through another provider
a video goes as sampled frames, whatever the preset says): a video without sampled frames is sent whole as
``{"type": "file", "file": {"file_data": "data:video/mp4;base64,..."}}``,
which LiteLLM turns into a Gemini ``inline_data`` part (the inline request
limit is about 20 MB: bigger files, or segments, fail that sample asking for
frames, i.e. ``video=false``; the Files API is not used).  With ``video=false``
the evaluator samples frames and they go as timestamped images.

Generation settings map as in the ``openai`` backend; then the standard
OpenAI parameters the provider does not take (``seed`` for Anthropic, say;
LiteLLM would refuse the call) are dropped, using LiteLLM's
``get_supported_openai_params``, and listed with the other unused keys in
``Response.meta["ignored_generation_keys"]``.  Provider-specific keys
(``top_k``...) are passed on as they are.

Settings the model refuses: LiteLLM's own rules refuse some before
anything is sent (``UnsupportedParamsError``: OpenAI's reasoning models take
only temperature 1), and a provider may answer 400 naming a parameter; either
is read once, the parameter dropped, the request sent again, and the change
kept for the run and said (``model_backends/accepted_settings.py``), rather
than LiteLLM's ``drop_params``, which drops settings without a word.

Cost: LiteLLM's ``response_cost`` for the reply (from its local map), 0.0
when the model is not in the map.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any
from urllib.parse import urlsplit

from avhb import (AdaptiveLimiter, Argument, Backend, BackendSpec, Failure, MalformedReply, Request, Response,
                  RetryPolicy, SampleError, UserError, classify_exception)
from avhb.model.prices import from_model_info
from avhb.redact import add_secret, redact

from .accepted_settings import AcceptedSettings, read_litellm_refusal, read_refusal
from .encode_messages import encode_messages
from .openai_backend import (_RUNTIME_ARGS, CAPABILITY_ARGUMENTS, RUNTIME_ARGUMENTS, check_spec, extra_body,
                             map_generation, parse_api_settings, preset_defaults)

_NATIVE_VIDEO_PROVIDERS = ("gemini/", "vertex_ai/", "vertex_ai_beta/")
_MAP = ", else what LiteLLM's model map says"
_PRESET = "the model preset's, else "
ARGUMENTS = {
    "api_base": Argument("URL", "the provider's", "the endpoint, for gateways and local servers"),
    "base_url": Argument("URL", "", "the same as api_base (the openai backend's name for it)"),
    **RUNTIME_ARGUMENTS,
    "api_key_env": dataclasses.replace(RUNTIME_ARGUMENTS["api_key_env"], default="the provider's (GEMINI_API_KEY...)"),
    **CAPABILITY_ARGUMENTS,
    "images_per_request": dataclasses.replace(CAPABILITY_ARGUMENTS["images_per_request"],
                                              default=_PRESET + "32; 0 for a model the map says sees no images"),
    "video": dataclasses.replace(CAPABILITY_ARGUMENTS["video"], default="for gemini/, vertex_ai/: "
                                 + _PRESET + "true; else false",
                                 help="true: a video file the task sends unsampled goes whole, inline "
                                      "(up to max_inline_mb); false: it goes as sampled frames (images)"),
    "audio": dataclasses.replace(CAPABILITY_ARGUMENTS["audio"], default=_PRESET + "true where the map says the "
                                 "model takes audio input, and for gemini/, vertex_ai/; else false"),
    "max_context": dataclasses.replace(CAPABILITY_ARGUMENTS["max_context"], default=_PRESET + "128000" + _MAP),
    "extra_body": Argument("mapping", "{}", "merged into every call's keyword arguments (provider options)"),
    "max_inline_mb": Argument("float (MB)", "20", "the largest video file sent inline (a bigger one fails its "
                              "sample asking for frames)"),
}


def import_litellm() -> Any:
    """Import LiteLLM offline-safe and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def supported_params(litellm: Any, model: str) -> set[str] | None:
    """The OpenAI parameters LiteLLM accepts for ``model`` with its provider,
    or None when LiteLLM cannot tell (unknown provider: nothing is dropped)."""
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        params = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:  # not a provider LiteLLM knows; its call will say so
        return None
    return set(params) if params is not None else None


def standard_params(litellm: Any) -> frozenset[str]:
    """The OpenAI chat parameter names LiteLLM checks against a provider's
    supported list (others are passed on to the provider untouched)."""
    names = set(getattr(litellm, "OPENAI_CHAT_COMPLETION_PARAMS", None) or ())
    try:
        from litellm.constants import DEFAULT_CHAT_COMPLETION_PARAM_VALUES

        names.update(DEFAULT_CHAT_COMPLETION_PARAM_VALUES)
    except ImportError:  # older LiteLLM: the list above is the same set
        pass
    return frozenset(names)


def filter_params(params: dict[str, Any], supported: set[str] | None,
                  standard: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    """(params the provider takes, names dropped): a standard OpenAI
    parameter outside ``supported`` is dropped; anything else is kept."""
    if supported is None:
        return dict(params), []
    kept, dropped = {}, []
    for key, value in params.items():
        if key in standard and key not in supported:
            dropped.append(key)
        else:
            kept[key] = value
    return kept, dropped


def _model_info(litellm: Any, model: str) -> dict[str, Any]:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:  # not in the local map: defaults apply
        return {}


class LiteLLMBackend(Backend):
    requires = (("litellm", "litellm"),)
    """See the module docstring."""
    arguments = ARGUMENTS

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_spec(spec, ARGUMENTS, "litellm:PROVIDER/MODEL")
        self._litellm = import_litellm()
        info = _model_info(self._litellm, spec.name)
        native_video = spec.name.startswith(_NATIVE_VIDEO_PROVIDERS)
        self.known = preset_defaults(spec.kind, spec.name, spec.name.partition("/")[2])
        defaults = {"images": 0 if info.get("supports_vision") is False else 32, "video": native_video,
                    "audio": bool(info.get("supports_audio_input")) or native_video,
                    "max_context": int(info.get("max_input_tokens") or 128000), **self.known.defaults}
        defaults["video"] = native_video and bool(defaults["video"])  # only a Gemini file part carries a video
        self.settings = parse_api_settings(spec, default_key_env=None, **defaults)
        self.capabilities = self.settings.capabilities
        self.notes = self.known.note(spec, self.capabilities)
        self.concurrency = self.settings.concurrency
        self.prices = from_model_info(info, spec.name)
        self.api_base = spec.args.get("api_base") or spec.args.get("base_url")
        add_secret(self.settings.api_key())  # the run's secrets (avhb.redact): the key, a URL's password
        if self.api_base:
            add_secret(urlsplit(str(self.api_base)).password)
        self.max_inline_mb = float(spec.args.get("max_inline_mb", 20))
        self.extra = extra_body(spec)
        self._supported = supported_params(self._litellm, spec.name)
        self._standard = standard_params(self._litellm)
        self.accepted = AcceptedSettings(spec.name, rules=False)  # what LiteLLM or the provider refused, learned
        self.limiter = AdaptiveLimiter(self.settings.concurrency)  # shared by every caller of this backend
        self.retry_policy = RetryPolicy(max_attempts=self.settings.max_retries + 1)
        if self.settings.api_key_env and not self.settings.api_key():
            raise UserError(f"no API key: the environment variable {self.settings.api_key_env} is not set")

    @property
    def identity(self) -> dict[str, Any]:
        args = {k: v for k, v in self.spec.args.items() if k not in _RUNTIME_ARGS}
        return redact({"kind": self.spec.kind, "name": self.spec.name, "args": args})

    def describe(self) -> dict[str, Any]:
        runtime = {"api_key_env": self.settings.api_key_env or "(provider default)",
                   "concurrency": self.settings.concurrency, "timeout": self.settings.timeout,
                   "max_retries": self.settings.max_retries,
                   "litellm": getattr(self._litellm, "__version__", None) or _dist_version("litellm")}
        return redact({**self.identity, "runtime": runtime, "capabilities": dict(self.capabilities.__dict__)})

    def build_kwargs(self, request: Request) -> tuple[dict[str, Any], list[str]]:
        mapped, dropped = map_generation(request.generation)
        params, unsupported = filter_params(mapped, self._supported, self._standard)
        dropped = dropped + unsupported
        params, changed = self.accepted.adapt({**params, **self.extra})
        request.adaptations.extend(changed)
        return self._kwargs(request, params), dropped

    def _kwargs(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.spec.name,
            "messages": encode_messages(request, audio=self.capabilities.audio, video=self.capabilities.video,
                                        video_style="file", max_inline_mb=self.max_inline_mb),
            "timeout": self.settings.timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        key = self.settings.api_key()
        if key:
            kwargs["api_key"] = key
        elif self.api_base and self.spec.name.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            kwargs["api_key"] = "EMPTY"  # a keyless local server; the SDK insists on some key
        kwargs.update(params)
        return kwargs

    async def generate(self, request: Request) -> Response:
        """One attempt (the caller retries: ``avhb.call.caller``)."""
        try:
            kwargs, dropped = self.build_kwargs(request)
        except SampleError as exc:  # this sample cannot be encoded; the run goes on
            raise SampleError(f"encode: {exc}") from exc
        return await self._call(request, kwargs, dropped)

    def classify(self, exc: BaseException) -> Failure:
        failure = classify_exception(exc)
        failure.message = redact(failure.message[:1000])
        return failure

    async def _call(self, request: Request, kwargs: dict[str, Any], dropped: list[str]) -> Response:
        """One attempt; a setting LiteLLM or the provider refuses is read
        once per parameter, learned and the request sent without it."""
        tried: set[str] = set()
        while True:
            try:
                reply = await self._litellm.acompletion(**kwargs)
                break
            except Exception as exc:
                change = self._refusal(exc, kwargs)
                if change is None or change.param in tried:
                    raise
                tried.add(change.param)
                self.accepted.learn(change)
                params, changed = self.accepted.adapt({k: v for k, v in kwargs.items() if k not in self._fixed(kwargs)})
                kwargs = {**{k: kwargs[k] for k in self._fixed(kwargs)}, **params}
                request.adaptations.extend(c for c in changed if c not in request.adaptations)
        return self._response(reply, dropped)

    @staticmethod
    def _fixed(kwargs: dict[str, Any]) -> list[str]:
        """Keys of the call that are not generation settings."""
        return [k for k in ("model", "messages", "timeout", "num_retries", "max_retries", "api_base", "api_key")
                if k in kwargs]

    def _refusal(self, exc: BaseException, kwargs: dict[str, Any]) -> Any:
        params = {k: v for k, v in kwargs.items() if k not in self._fixed(kwargs)}
        if type(exc).__name__ == "UnsupportedParamsError":
            return read_litellm_refusal(str(exc), params)
        if getattr(exc, "status_code", None) == 400:
            return read_refusal(str(exc), None, params)
        return None

    def _response(self, reply: Any, dropped: list[str]) -> Response:
        choices = getattr(reply, "choices", None)
        if not choices:
            raise MalformedReply("reply without choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(reply, "usage", None)
        counts = {}
        for k in ("prompt_tokens", "completion_tokens"):
            v = getattr(usage, k, None)
            if isinstance(v, (int, float)):
                counts[k] = int(v)
        meta: dict[str, Any] = {"finish_reason": getattr(choice, "finish_reason", None)}
        if dropped:
            meta["ignored_generation_keys"] = dropped
        return Response(text=text if isinstance(text, str) else str(text), usage=counts,
                        cost=self._cost(reply), meta=meta)

    def _cost(self, reply: Any) -> float:
        hidden = getattr(reply, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if cost is None:
            try:
                cost = self._litellm.completion_cost(completion_response=reply)
            except Exception:  # model not in the cost map
                cost = None
        return float(cost) if isinstance(cost, (int, float)) else 0.0


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None

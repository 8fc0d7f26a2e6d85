"""What every model backend provides, and how a backend spec is parsed."""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from avhb.errors import UserError
from avhb.model.messages import Request, Response
from avhb.model.resilience import AdaptiveLimiter, Failure, RetryPolicy, classify_exception


@dataclass
class Capabilities:
    text: bool = True
    images: int = 0  # images per request; 0 = none
    video: bool = False  # takes a video file/frames natively (with timestamps)
    audio: bool = False  # takes audio natively
    multi_turn: bool = True
    max_context: int = 8192  # tokens
    tokens_per_frame: int = 256  # estimate used by the budget check (also per image)
    sees_pixels: bool = True  # False for text-only backends; recorded in run.json
    default_frames: int | None = None  # frames per video when the task sets neither frames nor fps
    loglikelihood: bool = False  # answers Request.loglikelihood (token log-probabilities of continuations)

    @property
    def takes_images(self) -> bool:
        """Whether image parts reach the model (as images, or as frames of a
        native video input)."""
        return self.sees_pixels and (self.images > 0 or self.video)


@dataclass
class BackendSpec:
    """``openai:gpt-4.1-mini`` plus ``k=v`` arguments."""

    kind: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind


def parse_kv(text: str | None) -> dict[str, Any]:
    """``a=1,b=x`` -> {"a": 1, "b": "x"}; values are parsed as YAML scalars."""
    out: dict[str, Any] = {}
    if not text:
        return out
    for item in _split_top_level(text):
        if not item:
            continue
        if "=" not in item:
            raise UserError(f"argument {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = _scalar(value.strip())
    return out


def _split_top_level(text: str) -> list[str]:
    # commas inside [...] or {...} belong to the value
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items]


_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _scalar(value: str) -> Any:
    """A YAML scalar; numbers in exponent form without a dot (``1e9``),
    which YAML 1.1 reads as strings, are numbers too."""
    import yaml

    try:
        out = yaml.safe_load(value) if value else ""
    except yaml.YAMLError:
        return value
    if isinstance(out, str) and _FLOAT.fullmatch(out.strip()):
        return float(out)
    return out


def parse_backend_spec(text: str, extra_args: str | None = None) -> BackendSpec:
    """``vllm:Qwen3-VL``, ``local``, ``openai:gpt-4.1,base_url=http://...``.
    The name may be written ``model=NAME`` (``vllm:model=/ckpt,dtype=half``
    is ``vllm:/ckpt,dtype=half``); a ``model=`` name with a ``model``
    argument as well is refused (which one is meant?)."""
    head, _, inline = text.partition(",")
    kind, _, name = head.partition(":")
    if not kind:
        raise UserError(f"model spec {text!r} must look like BACKEND:NAME")
    args = parse_kv(inline)
    args.update(parse_kv(extra_args))
    key, eq, value = name.partition("=")
    if eq and key.strip() == "model":
        if "model" in args:
            raise UserError(f"model spec {text!r} names the model twice (model={value.strip()} and "
                            f"model={args['model']}): write BACKEND:NAME or BACKEND:model=NAME, not both")
        name = value
    return BackendSpec(kind=kind.strip(), name=name.strip(), args=args)


@dataclass(frozen=True)
class Argument:
    """One model argument a backend takes (``--model KIND:NAME,ARG=VALUE``):
    its ``type`` and ``default`` as a user reads them (``"int >= 1"``,
    ``"32"``; ``""``: none) and ``help``, one line on what it does.  A
    backend's :attr:`Backend.arguments` maps each name it takes to one: the
    one place they are declared, so the error for a misspelt argument,
    ``avhb list backends`` and docs/backends.md say the same.  ``ignored``:
    taken (a spec shared with a sibling backend stays valid) but without
    effect here."""

    type: str
    default: str
    help: str
    ignored: bool = False


class Backend:
    """Base class for model backends.

    Subclasses set ``capabilities`` and implement ``generate`` (async, one
    request) or override ``generate_batch`` (engines that batch).  The
    evaluator limits concurrency to ``concurrency`` in-flight requests.

    ``generate`` is *one attempt*: a failed attempt raises (an HTTP error,
    a time-out, a reply that is not JSON...), and the caller
    (:mod:`avhb.call.caller`) retries it under ``retry_policy`` and the
    ``limiter``; a backend never retries by itself.  It only says what a
    failure is (:meth:`classify`: retryable, rate-limited with its
    Retry-After, fatal, or this sample's own problem).  A ``Response``
    with an ``error`` is a final answer (not retried).
    """

    capabilities = Capabilities()
    concurrency: int = 1
    # Optional packages the backend imports when it runs: (module, avhb extra).
    # ``create_backend`` checks them before any model call is made.
    requires: tuple[tuple[str, str], ...] = ()
    # The speech-to-text model that turns audio into text inside the backend
    # (``local``, ``cascade``), said once at the start of a run; None: none.
    transcribes: str | None = None
    # The generation settings the backend reads; others are dropped (said once
    # at the start of a run).  None: every setting is passed on.
    generation_keys: frozenset[str] | None = None
    # Independent instances a run should use (vLLM's data_parallel_size): more than one needs a
    # cluster executor (--executor ray), which runs one instance per worker.
    replicas: int = 1
    # USD per prompt / completion token (avhb.model.prices); None: unknown.  Read by the estimate a run
    # prints before its first call, by --max-cost, and to cost replies that report usage but no cost.
    prices: Any = None
    # How the caller retries this backend's failed attempts (avhb.model.resilience); the class default is
    # shared by every backend that keeps it: assign an instance of its own to change it, never mutate this one.
    retry_policy: RetryPolicy = RetryPolicy()
    # The AIMD concurrency limit every attempt runs under; None: the caller makes one of ``concurrency``.
    # A backend that talks to a rate-limited API keeps its own (shared by every caller of the backend).
    limiter: AdaptiveLimiter | None = None
    # The model arguments the backend takes, each with its type, default and one line on what it does
    # (``Argument``); ``avhb list backends`` prints them and docs/backends.md is made from them.  None: not
    # declared (every argument reaches the backend unchecked).
    arguments: Mapping[str, Argument] | None = None
    # The argument naming another backend that gets every argument not in ``arguments`` (``cascade``: llm).
    arguments_pass_on: str | None = None

    def __init__(self, spec: BackendSpec):
        self.spec = spec

    @property
    def identity(self) -> dict[str, Any]:
        """What makes two backends answer the same; part of the cache key.
        Never include secrets."""
        safe = {k: v for k, v in self.spec.args.items() if not _secret(k)}
        return {"kind": self.spec.kind, "name": self.spec.name, "args": safe}

    def describe(self) -> dict[str, Any]:
        """Metadata written to run.json."""
        return {**self.identity, "capabilities": self.capabilities.__dict__}

    def resources(self) -> dict[str, float]:
        """What one instance occupies on a cluster (``--executor ray``):
        Ray resource amounts such as ``{"num_gpus": 2}``.  Default: one CPU."""
        return {"num_cpus": 1}

    def check_media(self, media: Any, task: str) -> None:
        """Refuse, before any call, a task's media settings (``MediaSpec``)
        this backend cannot take (``UserError``); vLLM checks frames per
        prompt and context.  Default: anything goes."""
        return None

    def classify(self, exc: BaseException) -> Failure:
        """What a failed attempt (the exception ``generate`` raised) is:
        retryable, rate-limited (with the server's Retry-After), fatal, or
        a sample error.  Default: :func:`classify_exception` (HTTP status,
        time-outs, connection errors, ``SampleError``).  Override to
        redact the message or to read a client library's errors."""
        return classify_exception(exc)

    async def generate(self, request: Request) -> Response:
        raise NotImplementedError

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        return list(await asyncio.gather(*(self.generate(r) for r in requests)))

    async def aclose(self) -> None:
        return None


def _secret(key: str) -> bool:
    from avhb.redact import secret_key

    return secret_key(key)


def create_backend(spec: BackendSpec) -> Backend:
    """Instantiate a backend (or a judge kind) by its registered name."""
    from avhb.registry import get_registry
    from avhb.requirements import check_requirements

    registry = get_registry()
    for kind in ("backends", "judges"):
        if spec.kind in registry.entries[kind]:
            cls = registry.load(kind, spec.kind)
            check_requirements(spec.label, getattr(cls, "requires", ()))  # before any model call
            return cls(spec)
    raise UserError(unknown_kind(spec.kind, registry))


def unknown_kind(kind: str, registry: Any) -> str:
    """The line for a backend (or judge) kind nothing installed registers:
    a namespaced one (``kw/keyword``) names its plugin, which may not be
    installed (or not let in by ``AVHB_PLUGINS``)."""
    known = ", ".join(registry.names("backends") + registry.names("judges")) or "none"
    namespace, slash, _ = kind.partition("/")
    if not slash:
        return f"unknown backend {kind!r} (known: {known})"
    plugin = next((p for p in registry.plugins if p.name == namespace), None)
    if plugin is None and any(f.partition(" ")[0] == namespace for f in registry.failed):
        return (f"unknown backend {kind!r}: plugin {namespace!r} is installed but failed to load (the warning "
                "above says why)")
    if plugin is None:
        return (f"unknown backend {kind!r}: plugin {namespace!r} not installed? (no installed plugin is named "
                f"{namespace!r}: pip install the package that provides it, and if AVHB_PLUGINS is set, name it "
                f"there; `avhb list plugins`; known: {known})")
    mine = ", ".join(n for k in ("backends", "judges") for n in registry.names(k) if n.startswith(namespace + "/"))
    return (f"unknown backend {kind!r}: plugin {namespace!r} ({plugin.distribution} {plugin.version}) registers "
            f"no backend or judge by that name (it registers: {mine or 'none'})")


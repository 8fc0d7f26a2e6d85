"""THE model call.  The model's generation, every judge call, every step of
a multi-step sample and any pack command (CURVE's diagnosis) go through
:meth:`Caller.call`; nothing else builds request keys or writes the journal.

    request -> key -> journal hit? -> media materialised (ablations, budget,
    capability adaptation) -> concurrency limit -> backend attempts, retried
    here (:meth:`Caller.send`) -> journal entry -> Call (text, error, usage, cost, media log)

Key (:func:`request_key`): a hash of the backend's identity, the messages
with every media part by *content* (video, audio and image files: their
content fingerprint, :mod:`avhb.media.fingerprints`, with the segment,
sampling and label; in-memory images: the pixels' hash), never by path,
the generation settings, the answer choices, the request's fields, and
the call's context (repeat, step, attempt, the task's media settings and
ablations).  A corrected ``clip.mp4`` under the same name is therefore
asked again, while a resumed run still knows a call is done without
decoding anything: fingerprints are computed once per file and cached by
the file's stat (hashed off the event loop, in a thread, the first time).
``KEY_SCHEME`` names this scheme in ``run.json`` (``call_keys``); a journal
recorded under another scheme (1: video and audio by path) still answers
its text-only calls, and its media calls are sent again
(:mod:`avhb.resume.decide` says so).

Journal: one ``Caller`` per backend, writing one journal kind (``responses``
for the model under test, ``judges`` for judges).  An entry holds the
caller's ``log`` fields (task, id, repeat, step...), the response, error,
usage (tokens), cost, media log, adaptations and response meta; a call that
was sent also ``latency_s`` (:meth:`Caller._send`) and ``priced`` (whether
its cost is known: a backend without prices journals cost 0.0 with
``priced: false``).  ``avhb.run.usage`` sums them for results.json's
``usage``, reading an entry without them as not timed, and as priced when
its cost is above 0; no key depends on an entry's fields.  A recorded entry with an
error is not a finished call: a normal run calls again; a replaying caller
(``avhb score``: no backend at all) returns it as the failure it was, and
raises :class:`NotInJournal` for a call that was never made.

Circuit breaker: each caller owns one :class:`CircuitBreaker` for its
backend (:mod:`avhb.model.resilience`).  Once it opens (the backend failed
``BREAKER_THRESHOLD`` times the same way, with no success, for at least
``BREAKER_QUIET`` seconds), calls are no longer
sent: they return at once with a "not attempted" error and are not
journaled, so a re-run sends them.  The evaluator stops the run after the
task in progress and names the backend (:meth:`Caller.stop_message`).  A
stop signal opens every breaker the same way (``CircuitBreaker.stop``,
:mod:`avhb.process.interrupt`), naming the signal instead.
"""
from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from avhb.errors import SampleError
from avhb.json_text import dumps
from avhb.media.materialize import needs_materializing
from avhb.model.backend import Backend, Capabilities
from avhb.model.messages import AudioPart, ImagePart, Request, Response, TextPart, VideoPart, prompt_text, reference_copy
from avhb.model.resilience import AdaptiveLimiter, CircuitBreaker, Resilient, RetryPolicy, classify_exception

if TYPE_CHECKING:
    from avhb.media.materialize import MediaPlan


@dataclass
class Usage:
    """Calls and tokens of one caller (or several, summed)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def add(self, response: Response) -> None:
        self.calls += 1
        self.prompt_tokens += int(response.usage.get("prompt_tokens", 0) or 0)
        self.completion_tokens += int(response.usage.get("completion_tokens", 0) or 0)
        self.cost += float(response.cost or 0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached": self.cached, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost": round(self.cost, 6)}


@dataclass
class Call:
    """What one model call returned (from the backend or the journal)."""

    key: str
    text: str
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    media: dict[str, Any] | None = None
    adaptations: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    prompt: str = ""  # the request's text, as sent (for the sample log)
    not_attempted: bool = False  # refused by an open circuit breaker: never sent, not journaled
    latency_s: float | None = None  # seconds from the first attempt to the answer (None: nothing was sent)


@dataclass
class SpendLimit:
    """``--max-cost``: once the run's callers together spent ``max_cost``
    (USD), no further call is sent (each returns "not attempted", is not
    journaled, and a re-run sends it); the run stops after the task in
    progress, its results written."""

    max_cost: float
    usages: list[Usage] = field(default_factory=list)

    @property
    def spent(self) -> float:
        return sum(u.cost for u in self.usages)

    @property
    def reached(self) -> bool:
        return self.spent >= self.max_cost

    def message(self) -> str:
        return f"--max-cost {self.max_cost:g} USD reached ({self.spent:.4f} USD spent)"


_SPENT = Response(text="", error="--max-cost reached")  # _send's answer when the spend limit refused the call


class CallJournal(Protocol):
    """Where a caller files its calls: one entry per key and kind
    (:class:`avhb.runfolder.journal.Journal`, the run's append-only journal)."""

    def get(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def put(self, kind: str, key: str, record: dict[str, Any]) -> dict[str, Any]: ...


class NotInJournal(Exception):
    """A replaying caller was asked for a call the journal does not hold."""


KEY_SCHEME = 2  # 2: media parts by content fingerprint; 1: video and audio by path


def _file_content(path: str | None) -> str:
    """A media file's part of a key: its content fingerprint."""
    if not path:
        return "-"
    from avhb.media.fingerprints import fingerprint

    try:
        return fingerprint(path)
    except (SampleError, OSError):
        return "missing"  # the call fails when the file is read; the key stays computable


def _image_content(part: ImagePart) -> str:
    if part.array is not None:
        import numpy as np

        return "pixels:" + hashlib.sha256(np.ascontiguousarray(part.array).tobytes()).hexdigest()[:32]
    return _file_content(part.path)


def part_reference(part: Any) -> list[Any]:
    """What a part contributes to a request key: media by content, never by
    path, and never decoded."""
    if isinstance(part, TextPart):
        return ["text", part.text]
    if isinstance(part, VideoPart):
        return ["video", _file_content(part.path), part.segment] + ([part.sampling] if part.sampling else []) + \
            ([] if part.labelled else ["unlabelled"])
    if isinstance(part, AudioPart):
        return (["audio", _file_content(part.path), part.segment, part.transcript]
                + ([part.language] if part.language else []))
    if isinstance(part, ImagePart):
        return ["image", part.label, _image_content(part)] + ([part.encoding] if part.encoding else [])
    return [type(part).__name__]


def media_files(request: Request) -> list[str]:
    """The paths of the request's media files (video, audio, image parts)."""
    return [p.path for m in request.messages for p in m.parts
            if isinstance(p, (VideoPart, AudioPart, ImagePart)) and p.path]


def _key_json(payload: Any) -> str:
    """The key's encoding: what ``json.dumps(payload, sort_keys=True, default=str)`` writes
    (tests/call/test_call_key_pinned.py pins the keys)."""
    return dumps(payload, sort_keys=True, default=str)


def request_key(identity: dict[str, Any], request: Request, context: dict[str, Any] | None = None) -> str:
    """The journal key of a call (module docstring): the SHA-256 of the
    payload ``{backend, choices, context, fields, generation, messages}``
    (plus ``loglikelihood``, ``prompt``, ``rolling`` when set), encoded as
    ``json.dumps(payload, sort_keys=True, default=str)``.  The identity is
    encoded once per caller and put in front of the rest (:func:`_key_of`),
    which gives the same bytes: every existing journal keeps answering."""
    return _key_of(_key_json(identity), request, context)


def _key_of(backend: str, request: Request, context: dict[str, Any] | None) -> str:
    """:func:`request_key` with the backend's identity already encoded.
    The rest of the payload is one dict encoded once: ``"backend"`` sorts
    before every other field, so the identity's encoding goes in front of
    it, and the bytes are those of the whole payload sorted."""
    payload: dict[str, Any] = {
        "choices": request.choices, "context": context or {}, "fields": request.fields,
        "generation": request.generation,
        "messages": [[m.role, [part_reference(p) for p in m.parts]] for m in request.messages]}
    if request.loglikelihood is not None:  # added only when set: every other key stays as it was
        payload["loglikelihood"] = [list(pair) for pair in request.loglikelihood]
        payload["rolling"] = request.rolling
    if request.prompt is not None and request.prompt != "".join(m.text for m in request.messages):
        payload["prompt"] = request.prompt  # the plain text says more than the messages
    rest = _key_json(payload)
    return hashlib.sha256(f'{{"backend": {backend}, {rest[1:]}'.encode()).hexdigest()


class Caller:
    """The logged call path for one backend (module docstring).

    ``backend=None`` with ``identity`` makes a replaying caller: every
    answer comes from the journal and nothing is ever sent."""

    def __init__(self, journal: CallJournal, kind: str, backend: Backend | None = None, *,
                 identity: dict[str, Any] | None = None, usage: Usage | None = None,
                 decode_limit: asyncio.Semaphore | None = None, label: str = ""):
        if backend is None and identity is None:
            raise ValueError("a caller needs a backend, or the identity of a recorded one to replay")
        self.journal = journal
        self.kind = kind
        self.backend = backend
        self.identity = backend.identity if backend is not None else dict(identity or {})
        self.usage = usage or Usage()
        self._identity_json: tuple[dict[str, Any], str] | None = None  # (identity, its key encoding): Caller.key
        self.label = label or str(self.identity.get("name") or self.identity.get("kind") or "")
        self._limit = asyncio.Semaphore(max(1, int(getattr(backend, "concurrency", 1) or 1))) if backend else None
        self._decode_limit = decode_limit or asyncio.Semaphore(2)
        self.spend: SpendLimit | None = None  # --max-cost, shared by the run's callers
        # the one retry loop, for every backend: its policy, limiter and classification, this caller's breaker
        self.retrier = None if backend is None else Resilient(
            getattr(backend, "retry_policy", None) or RetryPolicy(),
            getattr(backend, "limiter", None) or AdaptiveLimiter(self.concurrency),
            classify=getattr(backend, "classify", classify_exception))
        self.breaker = CircuitBreaker()

    @property
    def breaker(self) -> CircuitBreaker:
        """This caller's circuit breaker (module docstring), the one its
        retry loop reports every attempt to."""
        return self._breaker

    @breaker.setter
    def breaker(self, breaker: CircuitBreaker) -> None:
        self._breaker = breaker
        if self.retrier is not None:
            self.retrier.breaker = breaker

    @property
    def replaying(self) -> bool:
        return self.backend is None

    @property
    def concurrency(self) -> int:
        """Calls this caller sends at once (its backend's ``concurrency``)."""
        return max(1, int(getattr(self.backend, "concurrency", 1) or 1)) if self.backend is not None else 1

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities if self.backend is not None else Capabilities()

    async def call(self, request: Request, *, plan: MediaPlan | None = None, context: dict[str, Any] | None = None,
                   log: dict[str, Any] | None = None) -> Call:
        """One logged call.  ``plan``: the task's ``MediaPlan`` (media
        settings and ablations; also part of the key); ``context``: more key
        material (repeat, step, attempt...); ``log``: extra fields for the
        journal entry (task, sample id, role...)."""
        files = media_files(request)
        if files:
            from avhb.media.fingerprints import known

            unknown = [f for f in files if not known(f)]
            if unknown:  # hashed once per file, off the event loop (a 2-hour video takes seconds)
                await asyncio.to_thread(lambda: [_file_content(f) for f in unknown])
        key = self.key(request, plan, context)
        done = self.journal.get(self.kind, key)
        if done is not None and (done.get("error") is None or self.replaying):
            self.usage.cached += 1
            return _from_entry(key, done, prompt_text(request))
        if self.replaying:
            raise NotInJournal(key)
        if self.breaker.open:
            return self._not_attempted(key, request)
        if self.spend is not None and self.spend.reached:
            return self._not_attempted(key, request, self.spend.message())
        decode = needs_materializing(request, self.capabilities)
        # the caller's own copy when media is decoded: the driver's history keeps references
        sent = reference_copy(request) if decode else request
        call = Call(key=key, text="", prompt=prompt_text(request))
        try:
            if decode:
                call.media = await self._materialize(sent, plan)
        except SampleError as exc:
            call.error = f"media: {exc}"
        else:
            response, call.latency_s = await self._send(sent)
            if response is None or response is _SPENT:  # the breaker opened (or --max-cost was reached) while
                sent.messages = []                        # this call waited: nothing was sent
                return self._not_attempted(key, request, self.spend.message() if response is _SPENT and self.spend else None)
            prices = getattr(self.backend, "prices", None)
            if not response.cost and prices is not None and response.usage:  # usage but no cost: priced here
                response.cost = prices.cost(int(response.usage.get("prompt_tokens", 0) or 0),
                                            int(response.usage.get("completion_tokens", 0) or 0))
            self.usage.add(response)
            call.text, call.error, call.usage, call.cost, call.meta = (
                response.text, response.error, dict(response.usage), response.cost, dict(response.meta or {}))
        call.adaptations = list(sent.adaptations)
        if decode:
            sent.messages = []  # decoded frames and audio are not kept past their call
        entry = {**(log or {}), "response": call.text, "error": call.error, "usage": call.usage, "cost": call.cost,
                 "media": call.media, "adaptations": call.adaptations, "response_meta": call.meta or None}
        if call.latency_s is not None:  # added fields (the key is not made from the entry: resume keeps answering)
            entry["latency_s"] = round(call.latency_s, 6)
            entry["priced"] = prices is not None or bool(call.cost)  # False: cost 0.0 means "not known"
        kept = self.journal.put(self.kind, key, entry)
        if isinstance(kept, dict):  # as journaled (redacted): a live run sees what a resumed one replays
            call.text, call.error = kept.get("response") or "", kept.get("error")
        return call

    def key(self, request: Request, plan: MediaPlan | None = None, context: dict[str, Any] | None = None) -> str:
        """The journal key :meth:`call` files this request under."""
        context = dict(context or {})
        if plan is not None:
            context.update(plan.key())
        if self._identity_json is None or self._identity_json[0] is not self.identity:  # encoded once
            self._identity_json = (self.identity, _key_json(self.identity))
        return _key_of(self._identity_json[1], request, context)

    def answered(self, key: str) -> bool:
        """Whether the journal holds a finished answer for ``key`` (a call
        that would cost nothing)."""
        done = self.journal.get(self.kind, key)
        return done is not None and done.get("error") is None

    async def _materialize(self, request: Request, plan: MediaPlan | None) -> dict[str, Any] | None:
        from avhb.media.materialize import MediaPlan, has_media, materialize
        from avhb.media.spec import MediaSpec

        plan = plan or MediaPlan(MediaSpec())
        caps = self.capabilities
        if not has_media(request):
            materialize(request, plan, caps)  # adaptations only (a flattened conversation); no decoding
            return None
        async with self._decode_limit:
            return await asyncio.to_thread(materialize, request, plan, caps)

    def _not_attempted(self, key: str, request: Request, why: str | None = None) -> Call:
        self.breaker.not_attempted += 1
        why = why or self.breaker.stopped_by or f"{self.label} stopped answering ({self.breaker.opened_with})"
        return Call(key=key, text="", prompt=prompt_text(request), not_attempted=True, error=f"not attempted: {why}")

    async def _send(self, request: Request) -> tuple[Response | None, float | None]:
        """The backend's response, its failed attempts retried
        (:meth:`send`), and its latency: the seconds from the first
        attempt to the answer, retries and their backoff included, the wait
        for a concurrency slot and media decoding not (the journal entry's
        ``latency_s``).  The response is None when the breaker refused the
        call before anything was sent (latency None)."""
        assert self.backend is not None and self._limit is not None
        async with self._limit:
            if self.breaker.open:
                return None, None
            if self.spend is not None and self.spend.reached:
                return _SPENT, None
            start = time.perf_counter()
            response = await self.send(request)
            return response, (None if response is None else time.perf_counter() - start)

    async def send(self, request: Request) -> Response | None:
        """THE retry: ``backend.generate`` (one attempt) under the
        backend's retry policy and limiter, each attempt counted by the
        breaker (:class:`Resilient`); None when the breaker was open before
        the first attempt."""
        backend = self.backend
        assert backend is not None and self.retrier is not None
        outcome = await self.retrier.call(lambda: backend.generate(request), error_of=_error_of)
        if outcome.refused:
            return None
        if outcome.value is not None:
            response = outcome.value
            if outcome.attempts > 1:
                response.meta["attempts"] = outcome.attempts
            return response
        if outcome.failure is not None and outcome.failure.sample:  # this sample's problem: one try, no count
            return Response(text="", error=outcome.error)
        return Response(text="", error=outcome.error, meta={"attempts": outcome.attempts})

    @property
    def endpoint(self) -> str:
        """Where the backend sends (its URL, redacted), else its label."""
        from avhb.redact import redact_text

        args = raw if isinstance(raw := self.identity.get("args"), dict) else {}
        for value in (getattr(self.backend, "base_url", None), getattr(self.backend, "api_base", None),
                      args.get("base_url"), args.get("api_base")):
            if isinstance(value, str) and value:
                return redact_text(value)
        return self.label

    def stop_message(self) -> str | None:
        """One line naming the backend and its last error, once its breaker
        opened (None otherwise)."""
        b = self.breaker
        if not b.open:
            return None
        if b.stopped_by:
            return b.stopped_by
        where = self.endpoint
        name = self.label if where == self.label else f"{self.label} at {where}"
        return (f"stopped sending to {name}: {b.streak} failed attempts and no answer for {b.silent_for:.1f}s "
                f"(last: {(b.last_error or '')[:300]})")

    async def aclose(self) -> None:
        if self.backend is not None:
            await self.backend.aclose()


def _error_of(response: Response) -> str | None:
    return response.error


def _from_entry(key: str, entry: dict[str, Any], prompt: str) -> Call:
    return Call(key=key, text=entry.get("response") or "", error=entry.get("error"), usage=entry.get("usage") or {},
                cost=float(entry.get("cost") or 0.0), media=entry.get("media"),
                adaptations=list(entry.get("adaptations") or []), meta=entry.get("response_meta") or {},
                cached=True, prompt=prompt,
                latency_s=latency if isinstance(latency := entry.get("latency_s"), (int, float)) else None)

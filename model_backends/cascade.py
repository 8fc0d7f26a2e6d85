"""The ASR + text cascade: ``cascade:asr=whisper-base,llm=openai:gpt-4.1``.

Every :class:`~avhb.model.messages.AudioPart` of a request is replaced by a text
part holding its transcript, one timestamped segment per line::

    Audio transcript (whisper-base):
    [0.0-2.5] The quick brown fox jumps over the lazy dog.

and the rewritten request goes to an inner backend built from the ``llm`` spec
through the plugin registry.  Other parts (text, images, video) pass through
unchanged, so the inner backend's own capabilities still apply to them; the
cascade adds ``audio=True``.

Arguments: ``asr`` (default ``whisper-base``; or ``whisper-tiny.en``),
``llm`` (required; a backend spec such as ``openai:gpt-4.1`` or ``local``;
it may also be given as the name, ``cascade:openai:gpt-4.1,asr=...``),
``language`` (Whisper language code; default: detected), ``timestamps``
(default true).  Any other argument is passed on to the inner backend.

An AudioPart whose ``transcript`` is already set (the evaluator transcribed it)
is used as is.  Audio with no speech becomes "(no speech detected)".
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from typing import Any

from avhb import (Argument, AudioPart, Backend, BackendSpec, Failure, ImagePart, Message, Request, Response, TextPart,
                  UserError, VideoPart, create_backend, parse_backend_spec, parse_kv)

from .asr import Transcript, transcribe_part
from .offline_models import ASR_MODELS, asr_model_name

# The cascade's own arguments (``avhb list backends``, docs/backends.md); any other goes to the llm backend.
ARGUMENTS = {
    "llm": Argument("backend spec", "(required)", "the backend that gets the transcripts: openai:gpt-4.1, local... "
                    "(or as the name: cascade:openai:gpt-4.1)"),
    "asr": Argument(" | ".join(ASR_MODELS) + " | a CTranslate2 folder", ASR_MODELS[0],
                    "the Whisper model that transcribes each audio part"),
    "language": Argument("str (a Whisper language code)", "detected", "the speech's language"),
    "timestamps": Argument("bool", "true", "one [start-end] line per transcript segment; false: the text alone"),
}
OWN_ARGS = tuple(ARGUMENTS)
NO_SPEECH = "(no speech detected)"


def transcript_block(transcript: Transcript | str, model: str, timestamps: bool = True) -> str:
    """The text that stands in for one audio part."""
    if isinstance(transcript, str):
        body = transcript.strip()
    elif timestamps and transcript.segments:
        body = transcript.timestamped()
    else:
        body = transcript.text
    header = f"Audio transcript ({model}):" if model else "Audio transcript:"
    return f"{header}\n{body or NO_SPEECH}"


def replace_audio(request: Request, model: str = "whisper-base", *, timestamps: bool = True,
                  language: str | None = None) -> tuple[Request, list[Transcript | str]]:
    """A copy of ``request`` with every AudioPart replaced by its transcript
    text, and the transcripts in order.  Blocking (runs Whisper): call it from
    a worker thread.  The original request's messages are not modified; the
    notes on what was transcribed are added to its ``adaptations`` too (once),
    so the evaluator's sample log records them."""
    transcripts: list[Transcript | str] = []
    messages = []
    for message in request.messages:
        parts: list[TextPart | ImagePart | VideoPart | AudioPart] = []
        for part in message.parts:
            if isinstance(part, AudioPart):
                if part.transcript is not None:
                    tr: Transcript | str = part.transcript
                    label = ""
                else:
                    tr = transcribe_part(part, model, language)
                    label = model
                transcripts.append(tr)
                parts.append(TextPart(transcript_block(tr, label, timestamps)))
            else:
                parts.append(part)
        messages.append(Message(message.role, parts))
    if not transcripts:
        return request, []
    computed = sum(1 for t in transcripts if isinstance(t, Transcript))
    notes = list(request.adaptations)
    if computed:
        langs = sorted({t.language for t in transcripts if isinstance(t, Transcript) and t.language})
        said = f" (language {', '.join(langs)})" if langs else ""
        notes.append(f"audio -> transcript: {computed} part(s) transcribed by {model}{said}")
    if computed < len(transcripts):
        notes.append(f"audio -> transcript: {len(transcripts) - computed} part(s) used a given transcript")
    for note in notes[len(request.adaptations):]:
        if note not in request.adaptations:
            request.adaptations.append(note)
    return dataclasses.replace(request, messages=messages, adaptations=notes), transcripts


def transcript_texts(transcripts: list[Transcript | str]) -> list[str]:
    """What each audio part became (timestamped where segments exist), for logs."""
    return [t if isinstance(t, str) else (t.timestamped() or t.text) for t in transcripts]


def split_cascade_args(spec: BackendSpec) -> tuple[dict[str, Any], BackendSpec]:
    """(the cascade's own arguments, the inner backend's spec)."""
    args = dict(spec.args)
    if spec.name:
        if "=" in spec.name:  # cascade:asr=whisper-base,llm=...
            args = {**parse_kv(spec.name), **args}
        elif "llm" not in args:  # cascade:openai:gpt-4.1,asr=...
            args["llm"] = spec.name
    own = {k: args.pop(k) for k in OWN_ARGS if k in args}
    llm = own.get("llm")
    if not llm or not isinstance(llm, str):
        raise UserError("cascade backend needs llm=BACKEND[:NAME], e.g. cascade:asr=whisper-base,llm=openai:gpt-4.1")
    inner = parse_backend_spec(llm)
    if inner.kind == "cascade":
        raise UserError("cascade backend: llm must not itself be a cascade")
    inner.args.update(args)
    return own, inner


class CascadeBackend(Backend):
    """Whisper transcripts in place of audio, then an inner text backend."""

    arguments = ARGUMENTS
    arguments_pass_on = "llm"  # an argument not in ``arguments`` goes to the llm backend

    def __init__(self, spec: BackendSpec, inner: Backend | None = None):
        super().__init__(spec)
        own, inner_spec = split_cascade_args(spec)
        self.asr = asr_model_name(str(own.get("asr", "whisper-base")))
        self.transcribes = self.asr
        self.language = own.get("language")
        self.timestamps = bool(own.get("timestamps", True))
        if inner is None:
            inner = create_backend(inner_spec)
        self.inner = inner
        self.inner_label = inner.spec.label  # e.g. "openai:gpt-4.1"
        self.capabilities = dataclasses.replace(inner.capabilities, audio=True)
        self.concurrency = inner.concurrency
        self.prices = inner.prices  # the local ASR is free; the inner model's calls are what cost
        self.retry_policy, self.limiter = inner.retry_policy, inner.limiter  # the caller retries as the inner's
        # request -> its transcribed copy, for the caller's retries of the same request (generate is one
        # attempt; Whisper runs once per request, not once per attempt).  Dropped when an attempt answers;
        # a request whose retries gave up stays until newer ones push it out: at most twice the calls in
        # flight (the caller holds its concurrency slot across a call's retries)
        self._prepared: OrderedDict[int, tuple[Request, tuple[Request, list[Transcript | str]]]] = OrderedDict()
        self._keep = 2 * max(1, int(self.concurrency or 1))

    def classify(self, exc: BaseException) -> Failure:
        return self.inner.classify(exc)

    @property
    def identity(self) -> dict[str, Any]:
        """kind, name (the inner spec, ``openai:gpt-4.1``), args (the
        cascade's own), and ``llm``: the inner backend's whole identity."""
        return {"kind": "cascade", "name": self.inner_label,
                "args": {"asr": self.asr, "language": self.language, "timestamps": self.timestamps},
                "llm": self.inner.identity}

    def describe(self) -> dict[str, Any]:
        return {**self.identity, "capabilities": self.capabilities.__dict__,
                "llm": self.inner.describe(), "note": f"audio via ASR ({self.asr}); the LLM never hears audio"}

    async def _prepare(self, request: Request) -> tuple[Request, list[Transcript | str]]:
        """``request`` with its audio transcribed; a request transcribed by
        an earlier attempt is not transcribed again (a fresh copy of its
        transcribed form each attempt: the inner backend notes its changes
        on it)."""
        held = self._prepared.get(id(request))
        if held is None or held[0] is not request:
            prepared = await asyncio.to_thread(replace_audio, request, self.asr,
                                               timestamps=self.timestamps, language=self.language)
            held = self._prepared[id(request)] = (request, prepared)  # held: its id stays this request's
            while len(self._prepared) > self._keep:
                self._prepared.popitem(last=False)
        self._prepared.move_to_end(id(request))
        transcribed, transcripts = held[1]
        return dataclasses.replace(transcribed, adaptations=list(transcribed.adaptations)), transcripts

    async def generate(self, request: Request) -> Response:
        new_request, transcripts = await self._prepare(request)
        response = await self.inner.generate(new_request)  # a failed attempt raises: the copy stays for the retry
        self._prepared.pop(id(request), None)  # answered: no further attempt (its media is not held past the call)
        return _annotate(response, new_request, transcripts)

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        prepared = [await self._prepare(r) for r in requests]
        responses = await self.inner.generate_batch([r for r, _ in prepared])
        for request in requests:
            self._prepared.pop(id(request), None)
        return [_annotate(resp, r, t) for resp, (r, t) in zip(responses, prepared)]

    async def aclose(self) -> None:
        await self.inner.aclose()


def _annotate(response: Response, request: Request, transcripts: list[Transcript | str]) -> Response:
    if transcripts:
        response.meta["adaptations"] = list(request.adaptations)
        response.meta["asr_seconds"] = round(sum(t.seconds for t in transcripts if isinstance(t, Transcript)), 3)
        response.meta["transcripts"] = transcript_texts(transcripts)
    return response

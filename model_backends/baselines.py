"""Baseline and test backends: ``random`` and ``scripted``.

``random`` (``--model random,seed=0``)
    The chance baseline.  For a request with ``choices`` it answers one of
    them uniformly at random; otherwise "yes" or "no" with probability 1/2
    each.  The draw is a pure function of ``seed`` (default 0) and the
    request's ``key`` (the evaluator's content hash; the prompt text and
    choices when the key is empty), so a rerun or a resumed run gives the same
    answers.  It reads no media and says so (``sees_pixels=False``).

``scripted`` (``--model scripted,replies=PATH``)
    Canned replies for tests.  ``PATH`` is a JSON or YAML file, either a
    mapping ``{pattern: reply}`` or a list of rules::

        - {id: "color_0049_neg", reply: "no"}         # sample id (Request.fields) or request key, exact
        - {match: "capital of France", reply: "Paris"} # substring of the prompt text
        - {match: "overloaded", error: "HTTP 503"}     # reply with an error instead

    A mapping key counts as both an id and a substring.  Id rules are tried
    first, then substring rules in file order; the first that matches wins.  A
    request that matches nothing gets a Response whose ``error`` says so: the
    backend never makes an answer up.  Every request received is kept in
    ``ScriptedBackend.requests`` so tests can inspect what a backend was sent.
    Capabilities default to text only; ``images=N``, ``video=true``,
    ``audio=true`` declare more (the scripted replies ignore media either way).

"Prompt text" is the text parts of all messages joined by newlines.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avhb import FREE, Argument, Backend, BackendSpec, Capabilities, Request, Response, TextPart, UserError

from .arguments import check_arguments

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LABELLED = re.compile(r"^\s*[\(\[]?([A-Z])[\)\]]?\s*[.:)]\s*\S")


def prompt_text(request: Request) -> str:
    """The text parts of every message, joined by newlines."""
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


def option_replies(request: Request) -> list[str]:
    """The reply that names each of ``request.choices``.

    The option letter (A, B, ...) when the options are lettered — each choice
    appears in the prompt on its own line after its letter (``A. red``,
    ``(B) blue``, ``(C). green``, ``D: ...``), or the choices themselves start
    with consecutive letters (``"A. red"``) — else the option text itself
    (``"yes"``/``"no"``).
    """
    choices = list(request.choices or [])
    if not choices:
        return []
    if len(choices) <= len(LETTERS):
        own = [_LABELLED.match(c) for c in choices]
        if all(m and m.group(1) == LETTERS[i] for i, m in enumerate(own)):
            return list(LETTERS[: len(choices)])
        text = prompt_text(request)
        if all(_lettered_in(text, LETTERS[i], c) for i, c in enumerate(choices)):
            return list(LETTERS[: len(choices)])
    return choices


def option_line(letter: str, choice: str) -> re.Pattern[str]:
    """Matches a prompt line that offers ``choice`` under ``letter``
    (``A. red``, ``(A) red``, ``(A). red``, ``A: red``), up to the line's end."""
    return re.compile(rf"(?m)^\s*[\(\[]?{letter}[\)\]]?\s*[.:)]?\s*[.:]?\s*{re.escape(choice.strip())}[^\n]*$")


def _lettered_in(text: str, letter: str, choice: str) -> bool:
    return option_line(letter, choice).search(text) is not None


RANDOM_ARGUMENTS = {
    "seed": Argument("int", "0", "the draw is a function of the seed and the request (reruns answer the same)"),
}
SCRIPTED_ARGUMENTS = {
    "replies": Argument("path", "the name (scripted:PATH)", "the JSON or YAML file of rules (id / match -> "
                        "reply / error)"),
    "images": Argument("int >= 0", "0", "images per request the backend says it takes (replies ignore media)"),
    "video": Argument("bool", "false", "say it takes video"),
    "audio": Argument("bool", "false", "say it hears audio (false: audio becomes a transcript first)"),
    "sees_pixels": Argument("bool", "true when images > 0 or video", "say it sees pixels"),
}


class RandomBackend(Backend):
    """Uniform random answers, deterministic in (seed, request key)."""

    arguments = RANDOM_ARGUMENTS

    capabilities = Capabilities(text=True, images=1024, video=True, audio=True, max_context=1 << 30,
                                tokens_per_frame=0, sees_pixels=False)
    concurrency = 64
    prices = FREE

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_arguments(spec, RANDOM_ARGUMENTS)
        seed = spec.args.get("seed", 0)
        if not isinstance(seed, int):
            raise UserError(f"random backend: seed must be an integer, got {seed!r}")
        self.seed = seed

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "note": "chance baseline: ignores all media and the question"}

    def draw(self, request: Request) -> tuple[str, int, int]:
        """(reply, index drawn, number of options)."""
        options = option_replies(request) or ["yes", "no"]
        key = request.key or prompt_text(request) + "\x1f" + "\x1f".join(request.choices or [])
        digest = hashlib.sha256(f"{self.seed}\x00{key}".encode()).digest()
        index = random.Random(int.from_bytes(digest[:16], "big")).randrange(len(options))
        return options[index], index, len(options)

    async def generate(self, request: Request) -> Response:
        reply, index, n = self.draw(request)
        return Response(text=reply, meta={"baseline": "random", "index": index, "options": n})


@dataclass
class Rule:
    reply: str | None
    error: str | None
    ids: tuple[str, ...] = ()
    match: str | None = None


def load_rules(path: str | Path) -> list[Rule]:
    """Parse a replies file (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"scripted backend: replies file not found: {p}")
    raw_text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(raw_text)
        else:
            import yaml

            data = yaml.safe_load(raw_text)
    except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError
        raise UserError(f"scripted backend: cannot parse {p}: {exc}".splitlines()[0]) from None
    if isinstance(data, dict):
        return [Rule(reply=_text(v, p, k), error=None, ids=(str(k),), match=str(k)) for k, v in data.items()]
    if not isinstance(data, list):
        raise UserError(f"scripted backend: {p} must hold a mapping or a list of rules")
    rules = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not ({"id", "match"} & item.keys()) or not ({"reply", "error"} & item.keys()):
            raise UserError(f"scripted backend: {p} rule {i} needs 'id' or 'match', and 'reply' or 'error'")
        unknown = set(item) - {"id", "match", "reply", "error"}
        if unknown:
            raise UserError(f"scripted backend: {p} rule {i} has unknown key(s) {sorted(unknown)}")
        ids = item.get("id")
        id_tuple = tuple(str(x) for x in ids) if isinstance(ids, list) else ((str(ids),) if ids is not None else ())
        rules.append(Rule(
            reply=_text(item["reply"], p, i) if "reply" in item else None,
            error=str(item["error"]) if "error" in item else None,
            ids=id_tuple,
            match=str(item["match"]) if "match" in item else None,
        ))
    return rules


def _text(value: Any, path: Path, where: Any) -> str:
    if isinstance(value, (dict, list)) or value is None:
        raise UserError(f"scripted backend: {path} entry {where!r}: the reply must be a string")
    return str(value)


class ScriptedBackend(Backend):
    """Replies read from a file; see the module docstring."""

    concurrency = 16
    prices = FREE
    arguments = SCRIPTED_ARGUMENTS

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_arguments(spec, SCRIPTED_ARGUMENTS)
        path = spec.args.get("replies") or spec.name
        if not path:
            raise UserError("scripted backend needs replies=PATH (a JSON or YAML file)")
        self.path = str(path)
        self.rules = load_rules(self.path)
        images = int(spec.args.get("images", 0))
        video = bool(spec.args.get("video", False))
        self.capabilities = Capabilities(
            text=True, images=images, video=video, audio=bool(spec.args.get("audio", False)),
            sees_pixels=bool(spec.args.get("sees_pixels", images > 0 or video)),
        )
        self.requests: list[Request] = []

    @property
    def identity(self) -> dict[str, Any]:
        ident = super().identity
        ident["replies_sha256"] = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        return ident

    def find(self, request: Request) -> Rule | None:
        """The first rule that applies (ids before substrings), or None."""
        ids = {str(i) for i in (request.key, request.fields.get("sample_id")) if i}
        for rule in self.rules:
            if ids.intersection(rule.ids):
                return rule
        text = prompt_text(request)
        for rule in self.rules:
            if rule.match is not None and rule.match in text:
                return rule
        return None

    async def generate(self, request: Request) -> Response:
        self.requests.append(request)
        rule = self.find(request)
        if rule is None:
            head = " ".join(prompt_text(request).split())[:80]
            return Response(text="", error=f"scripted backend: no reply in {self.path} matches the request "
                                           f"(key={request.key!r}, prompt starts {head!r})")
        if rule.error is not None:
            return Response(text="", error=rule.error)
        return Response(text=rule.reply or "", meta={"scripted": True})

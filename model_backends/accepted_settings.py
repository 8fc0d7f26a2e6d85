"""Generation settings a model accepts, adapted once per run and said.

Judges are sent ``temperature: 0``; OpenAI's reasoning models (the o-series,
``gpt-5``/``-mini``/``-nano``) accept only their default temperature and
refuse every such request with HTTP 400 (``Unsupported value: 'temperature'
does not support 0 with this model. Only the default (1) value is
supported.``, ``param: temperature``, ``code: unsupported_value``), and
``max_tokens`` with ``Use 'max_completion_tokens' instead``.  A backend
holds one :class:`AcceptedSettings` for its model:

* **known rules** (:func:`known_changes`): for those model names, a
  ``temperature``/``top_p`` other than 1, a ``presence_penalty`` /
  ``frequency_penalty`` other than 0 and ``logprobs``/``top_logprobs`` are
  not sent (the model's default applies), ``max_tokens`` is sent as
  ``max_completion_tokens``;
* **the API's own refusal** (:func:`read_refusal`): a 400 whose error names
  a parameter of the request as unsupported (``code`` ``unsupported_value``
  / ``unsupported_parameter``, or a message ``Unsupported value:
  'NAME'`` / ``Unsupported parameter: 'NAME'``) is read once: the parameter
  is dropped (or renamed when the message says ``Use 'OTHER' instead``),
  the request is sent again, and the change holds for that model for the
  rest of the run.

Each change is listed on every request it changed (``Request.adaptations``:
the journal entry, the sample log; a judge's in its verdict) and said once
per run and judge (stderr, ``run.json`` ``notes``: :mod:`avhb.run.notes`).
It never fails a run.  The journal key is made from the request as asked
(``temperature: 0``), so a resumed run, ``avhb score`` and a rerun replay
the same entries, which record the adaptation.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

# OpenAI reasoning models: the o-series and gpt-5 / -mini / -nano / -pro (not gpt-5-chat, not gpt-5.1+,
# whose default reasoning effort is "none" and which take a temperature), with or without a date suffix
_REASONING = re.compile(r"^(?:o[1-9](?:-mini|-pro|-preview|-deep-research)?|gpt-5(?:-mini|-nano|-pro|-codex)?)"
                        r"(?:-\d{4}-\d{2}-\d{2})?$")
_ONLY_DEFAULT = {"temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0}
_NOT_TAKEN = ("logprobs", "top_logprobs")
_UNSUPPORTED = re.compile(r"Unsupported (value|parameter):\s*'([A-Za-z_][A-Za-z0-9_.]*)'")
_INSTEAD = re.compile(r"Use\s+'([A-Za-z_][A-Za-z0-9_]*)'\s+instead")
_FIXED = frozenset({"model", "messages"})


@dataclass(frozen=True)
class Change:
    """One setting changed for a model: ``param`` dropped (``rename`` None)
    or sent as ``rename``; ``why`` says on what grounds."""

    param: str
    rename: str | None
    why: str

    def line(self, value: Any) -> str:
        """The request's adaptation line (sample log)."""
        if self.rename:
            return f"{self.param} sent as {self.rename} ({self.why})"
        return f"{self.param}={value!r} not sent: the model's default applies ({self.why})"


@functools.lru_cache(maxsize=256)  # asked for every request; a run names a few models
def reasoning_model(name: str) -> bool:
    """An OpenAI reasoning model by name (a provider prefix such as
    ``openai/`` or ``azure/`` is ignored)."""
    return bool(_REASONING.match(name.rsplit("/", 1)[-1].lower()))


def known_changes(model: str, params: Mapping[str, Any]) -> list[Change]:
    """The changes the known rules make to ``params`` (chat-completions
    parameters) for ``model`` (module docstring)."""
    if not reasoning_model(model):
        return []
    why = "OpenAI reasoning models accept only the default"
    out = []
    for key, default in _ONLY_DEFAULT.items():
        if key in params and params[key] is not None and float(params[key]) != default:
            out.append(Change(key, None, f"{why}, {default}"))
    out += [Change(k, None, "OpenAI reasoning models do not return logprobs") for k in _NOT_TAKEN if k in params]
    if "max_tokens" in params:
        out.append(Change("max_tokens", "max_completion_tokens", "OpenAI reasoning models take only the latter"))
    return out


_LITELLM_REFUSAL = re.compile(r"(?:do(?:es)?n'?t|does not|do not) support ([a-z_]+)=")


def read_litellm_refusal(message: str, params: Mapping[str, Any]) -> Change | None:
    """The change LiteLLM's own model rules ask for: its
    ``UnsupportedParamsError`` (raised before anything is sent: ``O-series
    models don't support temperature=0. Only temperature=1 is supported``)."""
    m = _LITELLM_REFUSAL.search(message or "")
    if not m or m.group(1) not in params or m.group(1) in _FIXED:
        return None
    first = re.split(r"(?<=\.)\s", re.sub(r"^litellm\.\w+:\s*", "", message.strip()), maxsplit=1)[0][:160]
    return Change(m.group(1), None, f"LiteLLM's rule for the model: {first}")


def read_refusal(message: str, detail: Mapping[str, Any] | None, params: Mapping[str, Any]) -> Change | None:
    """The change a 400 asks for, when its error names a parameter of
    ``params`` as unsupported (module docstring); None otherwise."""
    detail = detail or {}
    m = _UNSUPPORTED.search(message or "") or _UNSUPPORTED.search(str(detail.get("message") or ""))
    param = detail.get("param") if isinstance(detail.get("param"), str) else None
    code = str(detail.get("code") or "")
    if param is None and m:
        param = m.group(2)
    if not param or (m is None and code not in ("unsupported_value", "unsupported_parameter")):
        return None
    if param in _FIXED or param not in params:
        return None
    text = str(detail.get("message") or message or "")
    said = _UNSUPPORTED.search(text)
    text = text[said.start():] if said else text  # without a client's prefix ("litellm.BadRequestError: ...")
    instead = _INSTEAD.search(text)
    rename = instead.group(1) if instead and instead.group(1) != param and instead.group(1) not in params else None
    first = re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0][:160]
    return Change(param, rename, f"the API refused it: {first}")


class AcceptedSettings:
    """What one model accepts, for the run (module docstring)."""

    def __init__(self, model: str, rules: bool = True):
        self.model = model
        self.rules = rules  # apply known_changes (LiteLLM backends: LiteLLM's own rules apply instead)
        self.learned: dict[str, Change] = {}

    def adapt(self, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """(``params`` as the model accepts them, one adaptation line per
        change made).  Learned changes win over the known rules."""
        changes = {c.param: c for c in known_changes(self.model, params)} if self.rules else {}
        changes.update({p: c for p, c in self.learned.items() if p in params})
        out = dict(params)
        lines = []
        for param, change in changes.items():
            value = out.pop(param)
            if change.rename:
                out[change.rename] = value
            lines.append(change.line(value))
        return out, lines

    def learn(self, change: Change) -> bool:
        """Remember ``change`` for the rest of the run; False when it was
        already known."""
        if self.learned.get(change.param) == change:
            return False
        self.learned[change.param] = change
        return True

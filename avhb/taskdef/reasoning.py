"""lmms-eval's reasoning keys: which reasoning blocks (``<think>…</think>``)
are removed from a model's answers, and where.

* ``reasoning_tags``: the ``[open, close]`` tag pairs removed after the
  task's filters, before its metrics (lmms-eval strips every filter
  pipeline's result); a list, or a JSON string of one; ``none``, false
  or null strips nothing.  Unset on a task under lmms-eval's conventions,
  lmms-eval's command-line default applies (:data:`LMMS_DEFAULT_TAGS`).
* ``auto_strip_thinking: true``: ``<think>`` and ``<thinking>`` blocks
  removed before the task's filters, only when no ``reasoning_tags`` are
  in effect (lmms-eval skips it then).

Reads only the config; the filter step is ``strip_thinking`` (or ``strip``
for an empty list of pairs: lmms-eval then strips white space only)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# lmms-eval 0.7.3's `--reasoning_tags` default, in effect for every task of an lmms-eval command line
LMMS_DEFAULT_TAGS: list[list[str]] = [["<think>", "</think>"], ["<analysis>", "</analysis>"]]


def tag_pairs(value: Any) -> list[list[str]] | None:
    """The tag pairs a ``reasoning_tags`` value names; None when it strips
    nothing (``none``, false, null).  ``ValueError`` saying why for any
    other shape."""
    if value is None or value is False or value == "none":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"{value!r} is neither 'none' nor a JSON list of [open, close] tag pairs") from None
    if not isinstance(value, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(tag, str) and tag for tag in pair)
            for pair in value):
        raise ValueError(f"{value!r} is not a list of [open, close] tag pairs (e.g. [[\"<think>\", \"</think>\"]])")
    return value


@dataclass(frozen=True)
class ReasoningSteps:
    """Where a task strips reasoning blocks: ``before`` its filters
    (auto_strip_thinking) and ``after`` them (reasoning_tags' pairs);
    None where nothing is stripped."""

    before: bool
    after: list[list[str]] | None


def reasoning_steps(config: dict[str, Any], lmms: bool) -> ReasoningSteps:
    """The task's reasoning steps (module docstring); ``lmms``: whether the
    task is run under lmms-eval's conventions.  ``ValueError`` for a bad
    ``reasoning_tags``."""
    value = config["reasoning_tags"] if "reasoning_tags" in config else (LMMS_DEFAULT_TAGS if lmms else None)
    after = tag_pairs(value)
    return ReasoningSteps(before=after is None and config.get("auto_strip_thinking") is True, after=after)

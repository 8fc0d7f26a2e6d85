"""Strict parsers for judge replies.  Each returns the parsed value or None;
None means 'unparsable' (the judge is re-asked, then the failure is counted).
Nothing here guesses."""
from __future__ import annotations

import json
import re
from typing import Any, Callable

_RATING_JSON = re.compile(r'^\s*\{[^{}]*"rating"\s*:\s*"?(-?\d+)"?[^{}]*\}')
_LEADING_INT = re.compile(r"^\s*(-?\d+)\b")
_TAG = re.compile(r"\[\[([ /a-zA-Z]+)\]\]")
_LETTER = re.compile(r"^\s*(?:answer\s*[:\-]?\s*)?\(?([A-Za-z])\)?\s*[.)]?\s*$", re.IGNORECASE)
_SCORE_JSON = re.compile(r'"score"\s*:\s*"?(\d+)"?')


def _in_range(value: int, options: dict[str, Any]) -> int | None:
    lo, hi = options.get("min"), options.get("max")
    if lo is not None and value < lo:
        return None
    if hi is not None and value > hi:
        return None
    return value


def rating_json(reply: str, options: dict[str, Any]) -> int | None:
    """ANCHOR's rule: the first line is JSON ``{"rating": k}``; failing that,
    a leading integer.  ``min``/``max`` bound k (default 1..5)."""
    opts = {"min": 1, "max": 5, **options}
    first = reply.strip().splitlines()[0] if reply.strip() else ""
    m = _RATING_JSON.match(first) or _LEADING_INT.match(first)
    return _in_range(int(m.group(1)), opts) if m else None


def integer(reply: str, options: dict[str, Any]) -> int | None:
    m = _LEADING_INT.match(reply) or re.match(r'^\s*\{[^{}]*"(?:score|rating)"\s*:\s*"?(-?\d+)', reply)
    return _in_range(int(m.group(1)), options) if m else None


def score_0_2(reply: str, options: dict[str, Any]) -> int | None:
    """A 0/1/2 score: a bare leading digit, ``Score: k`` or JSON ``{"score": k}``."""
    text = reply.strip()
    m = re.match(r"^(?:\**\s*score\s*\**\s*[:=]\s*)?([0-2])\b", text, re.IGNORECASE) or _SCORE_JSON.search(text[:200])
    if not m:
        return None
    return _in_range(int(m.group(1)), {"min": 0, "max": 2})


def tag(reply: str, options: dict[str, Any]) -> Any:
    """``[[Fully supported]]``-style tags; ``values`` maps a tag (lower-case)
    to its value, and only listed tags are accepted."""
    values = {str(k).lower(): v for k, v in (options.get("values") or {}).items()}
    found = _TAG.findall(reply)
    for raw in reversed(found):
        key = raw.strip().lower()
        if not values:
            return key
        if key in values:
            return values[key]
    return None


def yes_no(reply: str, options: dict[str, Any]) -> str | None:
    """'yes' or 'no' as the first word (after markdown, quotes and
    punctuation); ``[[yes]]`` tags too.  Anything else is unparsable."""
    text = reply.strip().lower()
    m = re.match(r"^[\s*_\"'`\[(]*(yes|no)\b", text)
    if m:
        return m.group(1)
    t = tag(reply, {})
    return t if t in ("yes", "no") else None


def letter(reply: str, options: dict[str, Any]) -> str | None:
    """One option letter, alone (``B``, ``(B)``, ``B.``, ``Answer: B``).
    ``letters`` restricts the allowed set (default A-Z); ``none`` names the
    'no option matches' letter (e.g. Z), returned as is."""
    m = _LETTER.match(reply.strip().splitlines()[0] if reply.strip() else "")
    if not m:
        return None
    got = m.group(1).upper()
    allowed = options.get("letters")
    if allowed and got not in allowed and got != options.get("none"):
        return None
    return got


BUILTIN: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "rating_json": rating_json,
    "integer": integer,
    "score_0_2": score_0_2,
    "tag": tag,
    "yes_no": yes_no,
    "letter": letter,
}

rating_json.format_hint = 'Reply with the JSON {"rating": k} on the first line.'  # type: ignore[attr-defined]
integer.format_hint = "Reply with the integer only."  # type: ignore[attr-defined]
score_0_2.format_hint = "Reply with a single digit: 0, 1 or 2."  # type: ignore[attr-defined]
tag.format_hint = "Reply with your verdict in double brackets, e.g. [[Yes]]."  # type: ignore[attr-defined]
yes_no.format_hint = "Reply with Yes or No first."  # type: ignore[attr-defined]
letter.format_hint = "Reply with the option letter only."  # type: ignore[attr-defined]


def get_parser(name: str) -> Callable[[str, dict[str, Any]], Any]:
    """A built-in parser, or one a plugin registers (``avhb_judge_parsers``)."""
    if name in BUILTIN:
        return BUILTIN[name]
    from avhb.registry import get_registry

    return get_registry().load("judge_parsers", name)


def parser_names() -> list[str]:
    from avhb.registry import get_registry

    return sorted(set(BUILTIN) | set(get_registry().names("judge_parsers")))


def format_hint(name: str) -> str:
    return getattr(get_parser(name), "format_hint", None) or "Reply in the format the instructions ask for."


def parse_json_lenient(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def answer_space(parser: str, options: dict[str, Any]) -> list[str] | None:
    """The closed set of valid replies for a parser, when it has one.  Sent as
    ``Request.choices`` so that option-scoring judges (log-likelihood models,
    baselines) pick a valid reply; chat APIs ignore it.  A plugin parser may
    define ``answer_space(options)``."""
    if parser not in BUILTIN:
        own = getattr(get_parser(parser), "answer_space", None)
        return own(options) if own else None
    if parser == "score_0_2":
        return ["0", "1", "2"]
    if parser == "yes_no":
        return ["Yes", "No"]
    if parser == "rating_json":
        lo, hi = options.get("min", 1), options.get("max", 5)
        return [f'{{"rating": {k}}}' for k in range(lo, hi + 1)]
    if parser == "integer" and options.get("min") is not None and options.get("max") is not None:
        return [str(k) for k in range(options["min"], options["max"] + 1)]
    if parser == "letter" and options.get("letters"):
        return list(options["letters"]) + ([options["none"]] if options.get("none") else [])
    if parser == "tag" and options.get("values"):
        return [f"[[{k}]]" for k in options["values"]]
    return None

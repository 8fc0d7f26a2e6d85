"""Strict parsers for judge replies.  Each returns the parsed value or None;
None means 'unparsable' (the judge is re-asked with the parser's
``format_hint``, then the failure is counted).  Nothing here guesses.

Reply forms read by the scale parsers (``rating_json``, ``integer``,
``score_0_2``), tried in this order; the first form found decides:

1. a JSON object anywhere in the reply (a ```json fence or prose around it
   is fine): the first object that has one of the parser's keys (compared
   without case), e.g. ``{"rating": 4}`` spread over several lines;
2. a ``Label: value`` form anywhere: one of the parser's labels, optionally
   after ``final``/``overall``, in quotes or markdown emphasis, then ``:`` or
   ``=`` (``**Score:** 2``, ``Rating: 2``, ``"rating": 4`` in broken JSON);
3. a bare number on the first line, in markdown emphasis or not (``2``,
   ``**2**``, ``2 - correct``).  ``score_0_2`` and ``integer`` do not read a
   first line such as ``1. The response ...`` (a numbered list as often as a
   score); ``rating_json`` does, as ANCHOR's upstream ``extract_score`` reads
   a leading digit.

The value must be a whole number on the scale: ``0.5``, ``4.5`` or ``7`` on
a 1-5 scale is a failure, never truncated or clipped; ``4.0`` is 4; ``k/N``
is read only when ``N`` is the scale's maximum.  A JSON value may be a
number or a string holding one; booleans are not numbers.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable

_NUM = r"[-+]?\d+(?:[.,]\d+)?"
_TAG = re.compile(r"\[\[([ /a-zA-Z]+)\]\]")
_DECOR = "*_`#>\"'[(\u201c\u201d"
_LEADING = re.compile(rf"^[\s{re.escape(_DECOR)}]*({_NUM})\s*(?:/\s*(\d+))?(?P<rest>.*)$")
_LETTER_LABEL = r"(?:(?:the\s+)?(?:final\s+|correct\s+|best\s+)?(?:answer|option|letter|choice)(?:\s+is)?\s*[:\-=]?\s*)"
_LETTER = re.compile(rf"^\s*{_LETTER_LABEL}?[{re.escape(_DECOR)}\s]*([A-Za-z])[*_`\"'\u201d]*"
                     rf"(?:[.):\]][*_`]*(?:\s+\S.*)?)?[*_`\s.!]*$", re.IGNORECASE)
_YES_NO_LABEL = re.compile(r"^[\s*_\"'`#>]*[A-Za-z][A-Za-z ]{0,30}?[*_]*\s*[:=]\s*[\s*_\"'`\[(]*(yes|no)\b", re.IGNORECASE)


def _in_range(value: int, options: dict[str, Any]) -> int | None:
    lo, hi = options.get("min"), options.get("max")
    if lo is not None and value < lo:
        return None
    if hi is not None and value > hi:
        return None
    return value


def whole_number(value: Any, options: dict[str, Any], denominator: Any = None) -> int | None:
    """``value`` (a number, or a string holding one) as an int on the scale
    ``options`` (``min``/``max``); None when it is fractional, off the
    scale, a boolean, not a number, or written ``k/N`` with ``N`` other than
    the scale's maximum."""
    if isinstance(value, bool) or value is None:
        return None
    if denominator is not None and (options.get("max") is None or int(denominator) != int(options["max"])):
        return None
    if isinstance(value, str):
        text = value.strip().strip("*_` ")
        if not re.fullmatch(_NUM, text):
            return None
        value = float(text.replace(",", "."))
    if not isinstance(value, (int, float)) or value != value:  # NaN
        return None
    if float(value) != int(value):
        return None
    return _in_range(int(value), options)


def json_objects(text: str) -> Iterable[dict[str, Any]]:
    """Every JSON object in ``text``, in order of its opening brace (nested
    objects too, after the object that holds them)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def first_json_value(text: str, keys: Iterable[str]) -> tuple[bool, Any]:
    """(found, value) of the first JSON object in ``text`` that has one of
    ``keys`` (case-insensitive); the first listed key wins inside it."""
    wanted = [k.lower() for k in keys]
    for obj in json_objects(text):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for k in wanted:
            if k in lowered:
                return True, lowered[k]
    return False, None


def _label_pattern(labels: Iterable[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(label) for label in labels)
    return re.compile(rf"(?<![A-Za-z])[\"']?(?:final\s+|overall\s+)?(?:{alts})[\"']?\s*(?:\([^)\n]*\))?[*_]*\s*[:=]"
                      rf"[\s*_`\"'\[(]*({_NUM})\s*(?:/\s*(\d+))?(?![\d.,]*\d)", re.IGNORECASE)


def read_scale(reply: str, options: dict[str, Any], keys: tuple[str, ...], labels: tuple[str, ...],
               numbered_ok: bool = False) -> int | None:
    """A whole number on the scale, by the forms of the module docstring
    (``numbered_ok``: a first line ``4. text`` reads as 4)."""
    text = reply or ""
    found, value = first_json_value(text, keys)
    if found:
        return whole_number(value, options)
    m = _label_pattern(labels).search(text)
    if m:
        return whole_number(m.group(1), options, m.group(2))
    first = next((line for line in text.splitlines() if line.strip()), "")
    m = _LEADING.match(first)
    if not m:
        return None
    rest, denominator = m.group("rest"), m.group(2)
    of = re.match(r"^\s*(?:out\s+of|of)\s+(\d+)", rest, re.IGNORECASE)
    if of and denominator is None:
        denominator = of.group(1)
    elif rest[:1].isalnum() or re.match(r"^[.,]\d", rest) or (not numbered_ok and re.match(r"^[*_`\s]*[.)]\s*\S", rest)):
        return None  # "2nd", and unless numbered_ok "1. The response ...", "1) ..."
    return whole_number(m.group(1), options, denominator)


def rating_json(reply: str, options: dict[str, Any]) -> int | None:
    """ANCHOR's judge reply: JSON ``{"rating": k}`` (anywhere; upstream
    anchors it at the start), else ``Rating: k``, else a leading ``k`` on the
    first line (``4``, ``**4**``, ``4. Faithful``, as upstream's leading
    digit).  ``min``/``max`` bound k (default 1..5)."""
    return read_scale(reply, {"min": 1, "max": 5, **options}, ("rating",), ("rating",), numbered_ok=True)


def integer(reply: str, options: dict[str, Any]) -> int | None:
    """A whole number: JSON ``{"score": k}`` / ``{"rating": k}``,
    ``Score: k`` / ``Rating: k``, or a bare ``k`` on the first line;
    ``min``/``max`` bound it when given."""
    return read_scale(reply, options, ("score", "rating"), ("score", "rating", "grade"))


def score_0_2(reply: str, options: dict[str, Any]) -> int | None:
    """A 0/1/2 score: JSON ``{"score": k}``, ``Score: k`` (also
    ``Rating``/``Grade``), or a bare digit on the first line."""
    return read_scale(reply, {"min": 0, "max": 2}, ("score", "rating"), ("score", "rating", "grade"))


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
    punctuation), or after a leading label (``Answer: Yes``,
    ``**Verdict:** no``); ``[[yes]]`` tags too.  Anything else is unparsable."""
    text = reply.strip().lower()
    m = re.match(r"^[\s*_\"'`\[(]*(yes|no)\b", text) or _YES_NO_LABEL.match(text)
    if m:
        return m.group(1)
    t = tag(reply, {})
    return t if t in ("yes", "no") else None


def letter(reply: str, options: dict[str, Any]) -> str | None:
    """One option letter, alone on the first line (``B``, ``(B)``, ``[B]``,
    ``**B**``, ``B.``, ``Answer: B``, ``The answer is **B**``), or a JSON
    ``{"answer": "B"}`` (also ``letter``/``choice``/``option``).  ``letters``
    restricts the allowed set (default A-Z); ``none`` names the 'no option
    matches' letter (e.g. Z), returned as is."""
    text = reply.strip() if reply else ""
    found, value = first_json_value(text, ("answer", "letter", "choice", "option"))
    if found:
        got = str(value).strip().strip("()[]*. ").upper() if isinstance(value, str) else ""
        if len(got) != 1 or not got.isalpha():
            return None
    else:
        m = _LETTER.match(text.splitlines()[0] if text else "")
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

rating_json.format_hint = ('Reply with the JSON object {"rating": k}, where k is a whole number '  # type: ignore[attr-defined]
                           'on the scale you were given (no fractions).')
integer.format_hint = "Reply with one whole number on the scale you were given, first, on its own line."  # type: ignore[attr-defined]
score_0_2.format_hint = "Reply with a single digit, 0, 1 or 2, on the first line (no fractions)."  # type: ignore[attr-defined]
tag.format_hint = "Reply with your verdict in double brackets, e.g. [[Yes]]."  # type: ignore[attr-defined]
yes_no.format_hint = "Reply with Yes or No first."  # type: ignore[attr-defined]
letter.format_hint = "Reply with the option letter only, on the first line."  # type: ignore[attr-defined]


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

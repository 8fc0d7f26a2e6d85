"""Built-in answer-extraction filters (one step each; chained by the task).

* ``strip`` (also ``remove_whitespace``, lm-eval's name) — surrounding
  whitespace removed.
* ``lowercase`` / ``uppercase`` — lower- / upper-cased.
* ``regex`` — avhb's options: ``pattern`` (required), ``group`` (default 1
  when the pattern has a group, else 0), ``select`` ("first" | "last"
  match, default "first"), ``ignore_case`` (False); no match gives None and
  appends "regex" to ``record.meta["filter_misses"]``.  Without ``pattern``
  it is lm-eval's regex: ``regex_pattern`` (default ``#### (\\-?[0-9\\.\\,]+)``),
  ``group_select`` (0; an index into every match, negative from the end),
  ``fallback`` ("[invalid]"): the selected match (of a pattern with groups,
  its first non-empty group), stripped, else the fallback (a miss is
  recorded as above).
* ``map`` — lm-eval's: ``mapping_dict`` value of the answer, else
  ``default_value`` (None).
* ``take_first``, ``take_first_k`` (``k``), ``majority_vote`` — lm-eval's
  selections over a sample's answers to every repeat (``apply_all``):
  the first, the first k, ``[the most common]`` (ties: the one seen first).
  On one answer (an avhb filter chain), take_first keeps it.
* ``custom`` — lm-eval's: ``filter_fn`` (a hook ``fn(resps, docs)``) over
  this sample's answers.
* ``multi_choice_regex`` — lm-eval's: the lm-eval regex (``regex_pattern``,
  ``group_select``, ``fallback``); without a match, the first of the
  sample's ``choices`` (its doc field) found in the answer, as ``(A)``,
  ``(B)``... (``ignore_case``, ``ignore_punctuation``, ``regexes_to_ignore``
  apply to that search; the longest choice text is tried first), then a
  letter after a colon (``: B`` -> ``(B)``); else the fallback.
* ``regex_pos`` — lm-eval's: the part-of-speech tags of the answer's
  ``('token', 'TAG')`` pairs, a list (``fallback``: ``["invalid"]``).
* ``format_span`` — lm-eval's, for named-entity answers: label words
  (person, location, organization, per, loc, org, date, time and a few
  synonyms) before a colon become PER/LOC/ORG/DATE, then each
  ``LABEL: a, b`` becomes ``label: a $ label: b`` (``none`` dropped),
  joined by `` $ ``; the answer is lower-cased first.
* ``strip_thinking`` — lmms-eval's: reasoning blocks (``tag_pairs``,
  default ``<think>…</think>`` and ``<thinking>…</thinking>``) removed; an
  answer holding only a closing tag keeps what follows its last one;
  stripped.
* ``final_answer`` — the text after the last (``occurrence: first`` for the
  first) match of ``(?i)final\\s+answer\\s*[:\\-]?\\s*``, with leading markdown
  emphasis/heading marks and one bullet removed.  Without a match: the
  whole text stripped (``fallback: whole``, default; sets
  ``meta["final_answer_missing"]``) or None (``fallback: none``).
* ``choice_letter`` — option letter by the rule parser (``parser``:
  ``single``, the default, commits only when exactly one option is
  indicated; ``mmmu``, MMMU's rule), then the ``answer_matcher`` judge (see
  ``choice.py``); None when unparsed, with ``meta["unparsed"] = True``.
  Options as ``ChoiceAccuracy``.

Every filter passes None through unchanged.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from avhb import Filter, SampleError, SampleRecord, ScoreContext
from avhb.score.metric_helpers import as_text

from .choice import check_parser, record_options, resolve_choice

FINAL_ANSWER = re.compile(r"(?i)final\s+answer\s*[:\-]?\s*")


class Strip(Filter):
    name = "strip"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value.strip() if isinstance(value, str) else value


class RemoveWhitespace(Strip):
    """lm-eval's name for ``strip``."""

    name = "remove_whitespace"


class Lowercase(Filter):
    name = "lowercase"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value.lower() if isinstance(value, str) else value


class Uppercase(Filter):
    name = "uppercase"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value.upper() if isinstance(value, str) else value


AVHB_REGEX = ("pattern", "group", "select", "ignore_case")
LM_EVAL_REGEX = {"regex_pattern": r"#### (\-?[0-9\.\,]+)", "group_select": 0, "fallback": "[invalid]"}


class Regex(Filter):
    name = "regex"

    def __init__(self, **options: Any):
        super().__init__(**options)
        ours, theirs = sorted(set(options) & set(AVHB_REGEX)), sorted(set(options) & set(LM_EVAL_REGEX))
        unknown = sorted(set(options) - set(AVHB_REGEX) - set(LM_EVAL_REGEX))
        if unknown:
            raise ValueError(f"regex filter: unknown option(s) {', '.join(unknown)}")
        self.lm_eval = "pattern" not in options
        if self.lm_eval:
            if ours:
                raise ValueError(f"regex filter: {', '.join(ours)} need 'pattern' (avhb's regex); lm-eval's takes "
                                 "regex_pattern, group_select and fallback")
            settings = {**LM_EVAL_REGEX, **options}
            self.pattern = re.compile(str(settings["regex_pattern"]))
            self.group_select, self.fallback = int(settings["group_select"]), settings["fallback"]
            return
        if theirs:
            raise ValueError(f"regex filter: give either pattern (avhb's options) or regex_pattern (lm-eval's), "
                             f"not both ({', '.join(theirs)})")
        if not options.get("pattern"):
            raise ValueError("regex filter: option 'pattern' is required")
        self.pattern = re.compile(options["pattern"], re.I if options.get("ignore_case") else 0)
        self.group = options.get("group", 1 if self.pattern.groups else 0)
        self.select = options.get("select", "first")
        if self.select not in ("first", "last"):
            raise ValueError(f"regex filter: select must be 'first' or 'last', not {self.select!r}")

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if value is None:
            return None
        if self.lm_eval:
            return self._lm_eval(value, record)
        matches = list(self.pattern.finditer(str(value)))
        if not matches:
            record.meta.setdefault("filter_misses", []).append(self.name)
            return None
        return (matches[0] if self.select == "first" else matches[-1]).group(self.group)

    def _lm_eval(self, value: Any, record: SampleRecord) -> Any:
        found = self.pattern.findall(value if isinstance(value, str) else "")
        if not found:
            record.meta.setdefault("filter_misses", []).append(self.name)
            return self.fallback
        match = found[self.group_select]  # an index past the matches fails the sample, as lm-eval fails
        if isinstance(match, tuple):
            match = next((m for m in match if m), self.fallback)
        return match.strip()


class Map(Filter):
    """lm-eval's ``map``: the answer looked up in ``mapping_dict``."""

    name = "map"

    def __init__(self, mapping_dict: dict | None = None, default_value: Any = None):
        super().__init__(mapping_dict=mapping_dict, default_value=default_value)
        if mapping_dict is not None and not isinstance(mapping_dict, dict):
            raise ValueError("map filter: mapping_dict must be a mapping")
        self.mapping, self.default = dict(mapping_dict or {}), default_value

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        try:
            return self.mapping.get(value, self.default)
        except TypeError:  # an unhashable answer maps to nothing
            return self.default


class TakeFirst(Filter):
    """lm-eval's ``take_first``: the answer to the first repeat."""

    name = "take_first"

    def __init__(self) -> None:
        super().__init__()

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return values[0]


class TakeFirstK(Filter):
    """lm-eval's ``take_first_k``: the answers to the first ``k`` repeats."""

    name = "take_first_k"

    def __init__(self, k: int):
        super().__init__(k=k)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"take_first_k filter: k must be a whole number >= 1, not {k!r}")
        self.k = k

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return [value][: self.k]

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        from avhb import UserError

        if len(values) < self.k:
            raise UserError(f"take_first_k filter: k={self.k} needs at least {self.k} answers per sample, "
                            f"got {len(values)}: raise the task's repeats")
        return values[: self.k]


class MajorityVote(Filter):
    """lm-eval's ``majority_vote``: ``[the most common answer]`` (a tie goes
    to the answer seen first)."""

    name = "majority_vote"

    def __init__(self) -> None:
        super().__init__()

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return [value]

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        from collections import Counter

        return [Counter(values).most_common(1)[0][0]]


class Custom(Filter):
    """lm-eval's ``custom``: ``filter_fn(resps, docs)`` (a hook the task
    resolves) over this sample's answers; its first result."""

    name = "custom"

    def __init__(self, filter_fn: Any):
        super().__init__()
        if not callable(filter_fn):
            raise ValueError("custom filter: filter_fn must be a function (filter_fn: !function module.fn)")
        self.fn = filter_fn

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return list(self.fn([[value]], [record.doc]))[0]

    async def apply_all(self, values: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return list(self.fn([values], [record.doc]))[0]


class MultiChoiceRegex(Regex):
    """lm-eval's ``multi_choice_regex`` (module docstring)."""

    name = "multi_choice_regex"

    def __init__(self, regex_pattern: str = r"#### (\-?[0-9\.\,]+)", group_select: int = 0,
                 fallback: Any = "[invalid]", ignore_case: bool = False, ignore_punctuation: bool = False,
                 regexes_to_ignore: list[str] | None = None):
        super().__init__(regex_pattern=regex_pattern, group_select=group_select, fallback=fallback)
        self.options.update(ignore_case=ignore_case, ignore_punctuation=ignore_punctuation,
                            regexes_to_ignore=regexes_to_ignore)
        self.ignore_case, self.ignore_punctuation = bool(ignore_case), bool(ignore_punctuation)
        self.ignores = [re.compile(p) for p in regexes_to_ignore or []]

    def _clean(self, text: str) -> str:
        for pattern in self.ignores:
            text = pattern.sub("", text)
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
        return text

    def _first(self, pattern: re.Pattern, text: str, convert: dict[str, str] | None = None) -> str:
        found = pattern.findall(text)
        if not found:
            return ""
        match = found[self.group_select]
        if isinstance(match, tuple):
            match = next((m for m in match if m), "")
        match = match.strip()
        return (convert or {}).get(match, match) if match else match

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        text = value if isinstance(value, str) else ""
        match = self._first(self.pattern, text)
        if not match:
            letters = [chr(ord("A") + i) for i in range(len(record.doc.get("choices") or []))]
            by_text = {self._clean(str(c).strip()): f"({letter})"
                       for c, letter in zip(record.doc.get("choices") or [], letters)}
            if by_text:
                texts = re.compile("|".join(sorted((re.escape(t) for t in by_text), key=len, reverse=True)))
                match = self._first(texts, self._clean(text), by_text)
            if not match and letters:
                match = self._first(re.compile(rf":[\s]*({'|'.join(letters)})"), text,
                                    {letter: f"({letter})" for letter in letters})
        if not match:
            record.meta.setdefault("filter_misses", []).append(self.name)
            return self.fallback
        return match


class RegexPos(Filter):
    """lm-eval's ``regex_pos`` (module docstring)."""

    name = "regex_pos"
    PAIRS = re.compile(r"\('([^']*)', '([^']*)'\)")

    def __init__(self, regex_pattern: str = r"\['(.*?)'\]", group_select: int = 0, fallback: Any = None):
        super().__init__(regex_pattern=regex_pattern, group_select=group_select, fallback=fallback)
        self.fallback = ["invalid"] if fallback is None else fallback

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        pairs = self.PAIRS.findall(value) if isinstance(value, str) else list(value or [])
        tags = [tag for _, tag in pairs]
        return tags or self.fallback


SPAN_LABELS = {"person": "PER", "location": "LOC", "organization": "ORG", "counties": "LOC", "places": "LOC",
               "people": "PER", "persons": "PER", "company": "ORG", "country": "LOC", "continent": "LOC",
               "time": "DATE", "date": "DATE", "per": "PER", "loc": "LOC", "org": "ORG"}
SPAN_ENTITY = re.compile(r"\b(PER|LOC|ORG|DATE):\s*([^$]+)")


def format_span(text: str) -> str:
    """``format_span``'s reading of one answer (module docstring)."""
    text = text.lower()
    for word, label in SPAN_LABELS.items():  # in this order: a later word may rewrite an earlier label's text
        text = re.sub(rf"\b{re.escape(word)}\s*:", f"{label}:", text)
    text = text.replace("$$", "$").rstrip("$")
    text = text.replace("\n", "$").strip()
    entities = [f"{label.lower()}: {entity.strip()}" for label, values in SPAN_ENTITY.findall(text)
                for entity in values.split(",") if entity.strip().lower() != "none"]
    return " $ ".join(entities)


class FormatSpan(Filter):
    """lm-eval's ``format_span`` (module docstring)."""

    name = "format_span"

    def __init__(self) -> None:
        super().__init__()

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return format_span(value) if isinstance(value, str) else value


THINKING_TAGS = [["<think>", "</think>"], ["<thinking>", "</thinking>"]]


def strip_reasoning(text: str, tag_pairs: list) -> str:
    """``text`` without its reasoning blocks (``strip_thinking``, module docstring)."""
    for start_tag, end_tag in tag_pairs:
        while start_tag in text and end_tag in text:
            start = text.find(start_tag)
            end = text.find(end_tag, start)
            if end == -1:
                break
            text = text[:start] + text[end + len(end_tag):]
        if end_tag in text and start_tag not in text:
            text = text.rsplit(end_tag, 1)[-1]
    return text.strip()


class StripThinking(Filter):
    """lmms-eval's ``strip_thinking`` (module docstring)."""

    name = "strip_thinking"

    def __init__(self, tag_pairs: list | None = None):
        super().__init__(tag_pairs=tag_pairs)
        self.tag_pairs = tag_pairs or THINKING_TAGS

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return strip_reasoning(value, self.tag_pairs) if isinstance(value, str) else value


def final_answer(text: str, occurrence: str = "last") -> str | None:
    """Text after the final-answer marker, or None without a marker."""
    matches = list(FINAL_ANSWER.finditer(text))
    if not matches:
        return None
    rest = text[(matches[-1] if occurrence == "last" else matches[0]).end():]
    rest = re.sub(r"^[\s*#_]+", "", rest)
    rest = re.sub(r"^[-\u2022]\s+", "", rest)
    return rest.strip()


class FinalAnswer(Filter):
    name = "final_answer"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if value is None:
            return None
        found = final_answer(str(value), self.options.get("occurrence", "last"))
        if found is not None:
            return found
        record.meta["final_answer_missing"] = True
        return None if self.options.get("fallback", "whole") == "none" else str(value).strip()


class ChoiceLetter(Filter):
    name = "choice_letter"

    def __init__(self, **options: Any):
        super().__init__(**options)
        check_parser(options.get("parser", "single"))

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if value is None:
            record.meta["unparsed"] = True
            record.meta["choice"] = {"letter": None, "by": None, "judge_failed": False}
            return None
        o = self.options
        options = record_options(record, o.get("options_field", "options"), o.get("question_field", "question"))
        if not options:
            raise SampleError(f"sample {record.id}: no answer options found")
        question = as_text(record.doc.get(o.get("question_field", "question")))
        res = await resolve_choice(str(value), options, question, ctx, o.get("use_judge", True), o.get("role", "answer_matcher"),
                                   o.get("parser", "single"))
        record.meta["choice"] = res.as_meta()
        if res.judgement is not None:
            record.judgements[self.name] = res.judgement
        if res.letter is None:
            record.meta["unparsed"] = True
        return res.letter

"""Built-in answer-extraction filters (one step each; chained by the task).

* ``strip`` — surrounding whitespace removed.
* ``lowercase`` — lower-cased.
* ``regex`` — options ``pattern`` (required), ``group`` (default 1 when the
  pattern has a group, else 0), ``select`` ("first" | "last" match,
  default "first"), ``ignore_case`` (False).  No match gives None and
  appends "regex" to ``record.meta["filter_misses"]``.
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
"""
from __future__ import annotations

import re
from typing import Any

from avhb import Filter, SampleError, SampleRecord, ScoreContext
from avhb.score.metric_helpers import as_text

from .choice import check_parser, record_options, resolve_choice

FINAL_ANSWER = re.compile(r"(?i)final\s+answer\s*[:\-]?\s*")


class Strip(Filter):
    name = "strip"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value.strip() if isinstance(value, str) else value


class Lowercase(Filter):
    name = "lowercase"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        return value.lower() if isinstance(value, str) else value


class Regex(Filter):
    name = "regex"

    def __init__(self, **options: Any):
        super().__init__(**options)
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
        matches = list(self.pattern.finditer(str(value)))
        if not matches:
            record.meta.setdefault("filter_misses", []).append(self.name)
            return None
        return (matches[0] if self.select == "first" else matches[-1]).group(self.group)


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

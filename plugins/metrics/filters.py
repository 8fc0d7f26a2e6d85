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

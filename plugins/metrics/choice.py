"""Multiple-choice answer matching and exact match.

Definitions
-----------
``parse_choice(reply, options)`` follows the MMMU rule parser, minus its
random fallback:

1. strip each of ``, . ! ? ; : '`` once from both ends (in that order) and
   pad the reply with one space on each side;
2. candidates = letters L whose ``"(L)"`` occurs in the reply (case-sensitive);
3. if none: letters whose ``" L "`` occurs;
4. if none and the reply has more than 5 whitespace tokens: letters whose
   option text occurs in the reply (case-insensitive; empty texts ignored);
5. several candidates: the one whose match starts last wins (``rfind`` of the
   form that produced the candidates); a tie goes to the earlier option;
6. no candidate: ``None`` — avhb never guesses.

``resolve_choice`` applies the rules and, when they fail, asks the
``answer_matcher`` judge role with fields ``question``, ``options``
(``"A. text"`` lines) and ``response``; the judge's value must be one of the
option letters, anything else (``None``, ``"Z"``, an unknown letter) leaves
the reply unparsed.  A judge reply that never parsed (``ok`` False) is a
judge failure, also unparsed.  Unparsed replies score 0 and are counted.

``exact_match(pred, gold)``: 1.0 iff the normalised strings are equal
(strip, collapse whitespace, optionally lower-case and drop punctuation);
a list of golds matches if any does; ``None`` never matches.
"""
from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any

from avhb.score.aggregate import Aggregate
from avhb.errors import SampleError
from avhb.score.metric import COUNT, Metric, SampleRecord, ScoreContext

from ._common import as_text, count, usable, verdict_log

_EDGE_PUNCT = [",", ".", "!", "?", ";", ":", "'"]
_INLINE_OPTION = re.compile(r"^\s*\(?([A-Z])\s*[\).:]\.?\s+(\S.*?)\s*$")


# ---------------------------------------------------------------- options

def options_from(value: Any) -> dict[str, str]:
    """Normalise options given as a dict ``{letter: text}``, a list of texts
    (letters A, B, ... in order) or a JSON string of either."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return inline_options(value)
    if isinstance(value, dict):
        return {str(k).strip(): as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return {chr(ord("A") + i): as_text(v) for i, v in enumerate(value)}
    return {}


def inline_options(text: str) -> dict[str, str]:
    """Options written one per line inside a question: ``A. x``, ``(A) x``,
    ``(A). x``, ``A) x`` or ``A: x``.  Needs at least two consecutive letters
    starting at A, otherwise returns ``{}``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _INLINE_OPTION.match(line)
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    letters = sorted(found)
    expected = [chr(ord("A") + i) for i in range(len(letters))]
    if len(letters) < 2 or letters != expected:
        return {}
    return found


def format_options(options: dict[str, str]) -> str:
    """``"A. text"`` lines, as sent to the ``answer_matcher`` judge."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def gold_letter(target: Any, options: dict[str, str]) -> str | None:
    """The option letter a target names: the letter itself (any case) or
    the exact option text (case-insensitive)."""
    if target is None:
        return None
    text = str(target).strip()
    by_upper = {k.upper(): k for k in options}
    if text.upper() in by_upper:
        return by_upper[text.upper()]
    for k, v in options.items():
        if v.strip().lower() == text.lower() and text:
            return k
    return None


# ---------------------------------------------------------------- parsing

def parse_choice(reply: str | None, options: dict[str, str]) -> str | None:
    """MMMU rule parser without a random fallback (see module docstring)."""
    if not reply or not options:
        return None
    text = reply
    for ch in _EDGE_PUNCT:
        text = text.strip(ch)
    text = f" {text} "
    letters = list(options)
    cands = [L for L in letters if f"({L})" in text]
    form = "bracket"
    if not cands:
        cands = [L for L in letters if f" {L} " in text]
        form = "bare"
    if not cands and len(text.split()) > 5:
        low = text.lower()
        cands = [L for L in letters if options[L].strip() and options[L].strip().lower() in low]
        form = "content"
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0]

    def start(L: str) -> int:
        if form == "bracket":
            return text.rfind(f"({L})")
        if form == "bare":
            return text.rfind(f" {L} ")
        return text.lower().rfind(options[L].strip().lower())

    best = max(range(len(cands)), key=lambda i: (start(cands[i]), -i))
    return cands[best]


@dataclass
class ChoiceResolution:
    letter: str | None
    by: str | None  # "rules" | "judge" | None
    judge_failed: bool = False
    judgement: dict[str, Any] | None = None

    def as_meta(self) -> dict[str, Any]:
        return {"letter": self.letter, "by": self.by, "judge_failed": self.judge_failed}


async def resolve_choice(
    reply: str | None,
    options: dict[str, str],
    question: str,
    ctx: ScoreContext | None,
    use_judge: bool = True,
    role: str = "answer_matcher",
) -> ChoiceResolution:
    """Rules first; then the matcher judge (when enabled and the reply is
    not blank); else unparsed."""
    letter = parse_choice(reply, options)
    if letter is not None:
        return ChoiceResolution(letter, "rules")
    judges = getattr(ctx, "judges", None)
    if not use_judge or judges is None or not reply or not reply.strip():
        return ChoiceResolution(None, None)
    verdict = await judges.ask(role, {"question": question, "options": format_options(options), "response": reply})
    log = verdict_log(role, verdict)
    if not verdict.ok:
        return ChoiceResolution(None, "judge", judge_failed=True, judgement=log)
    picked = gold_letter(verdict.value, options) if isinstance(verdict.value, str) and len(verdict.value.strip()) == 1 else None
    return ChoiceResolution(picked, "judge" if picked else None, judgement=log)


def record_options(record: SampleRecord, options_field: str = "options", question_field: str = "question") -> dict[str, str]:
    """Options of a record: ``meta["options"]`` (set by a task hook), else
    ``doc[options_field]``, else options written inline in the question."""
    for value in (record.meta.get("options"), record.doc.get(options_field)):
        opts = options_from(value)
        if opts:
            return opts
    return inline_options(as_text(record.doc.get(question_field)))


# ---------------------------------------------------------------- exact match

def normalize_text(text: str, ignore_case: bool = True, ignore_punctuation: bool = False) -> str:
    out = " ".join(text.split())
    if ignore_case:
        out = out.lower()
    if ignore_punctuation:
        out = out.translate(str.maketrans("", "", string.punctuation)).strip()
        out = " ".join(out.split())
    return out


def exact_match(pred: Any, gold: Any, ignore_case: bool = True, ignore_punctuation: bool = False) -> float:
    """1.0 iff ``pred`` equals ``gold`` (or any gold of a list) after
    normalisation; None never matches."""
    if pred is None or gold is None:
        return 0.0
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    p = normalize_text(str(pred), ignore_case, ignore_punctuation)
    return float(any(p == normalize_text(str(g), ignore_case, ignore_punctuation) for g in golds if g is not None))


# ---------------------------------------------------------------- metrics

class ExactMatch(Metric):
    """Options: ``ignore_case`` (True), ``ignore_punctuation`` (False).
    Compares ``record.extracted`` (or the raw response when no filter ran)
    with ``record.target``."""

    name = "exact_match"
    description = "1 when the answer equals the target after normalisation (case, white space), else 0"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        pred = record.extracted if record.extracted is not None else record.response
        return {self.name: exact_match(pred, record.target, self.options.get("ignore_case", True),
                                       self.options.get("ignore_punctuation", False))}


class ChoiceAccuracy(Metric):
    """Accuracy of a multiple-choice answer.

    Options: ``options_field`` ("options"), ``question_field`` ("question"),
    ``use_judge`` (True), ``role`` ("answer_matcher").  Uses the letter the
    ``choice_letter`` filter already resolved (``record.meta["choice"]``)
    when present, else resolves ``record.extracted`` (a string) or the raw
    response.  Unparsed replies score 0, get ``meta["unparsed"] = True`` and
    are counted in ``<name>_unparsed``; judge failures additionally in
    ``<name>_judge_failures``.  A target that is not an option is a
    :class:`SampleError`.
    """

    name = "choice_accuracy"
    description = "share of answers naming the right option (rules, then the answer_matcher judge; never a guess)"
    outputs = {"unparsed": (COUNT, "replies no rule or judge could map to an option (scored 0)"),
               "judge_failures": (COUNT, "answer_matcher replies that never parsed")}

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.options.get("role", "answer_matcher"),) if self.options.get("use_judge", True) else ()

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        o = self.options
        options = record_options(record, o.get("options_field", "options"), o.get("question_field", "question"))
        if not options:
            raise SampleError(f"sample {record.id}: no answer options found")
        gold = gold_letter(record.target, options)
        if gold is None:
            raise SampleError(f"sample {record.id}: target {record.target!r} is not one of the options {sorted(options)}")
        prior = record.meta.get("choice")
        if isinstance(prior, dict) and "letter" in prior:
            letter = prior["letter"]
        else:
            text = record.extracted if isinstance(record.extracted, str) and record.extracted.strip() else record.response
            question = as_text(record.doc.get(o.get("question_field", "question")))
            res = await resolve_choice(text, options, question, ctx, o.get("use_judge", True), o.get("role", "answer_matcher"))
            record.meta["choice"] = res.as_meta()
            if res.judgement is not None:
                record.judgements[self.name] = res.judgement
            letter = res.letter
        if letter is None:
            record.meta["unparsed"] = True
        return {self.name: float(letter == gold)}

    def aggregate(self, records: list[SampleRecord]) -> dict[str, Aggregate]:
        out = super().aggregate(records)
        ok = usable(records)
        out[f"{self.name}_unparsed"] = count(sum(bool(r.meta.get("unparsed")) for r in ok), len(ok))
        out[f"{self.name}_judge_failures"] = count(
            sum(bool((r.meta.get("choice") or {}).get("judge_failed")) for r in ok), len(ok))
        return out

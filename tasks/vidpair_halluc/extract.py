"""Answer extraction: the upstream scoring scripts' rules, and avhb's.

* ``extract_yes_no`` (evaluate/videoqa.py, clipqa.py; mode ``upstream``): a
  non-string is ``unknown``; ``strip().lower()``; one of ``INVALID`` ->
  ``unknown``; then a reply starting with ``yes`` / ``no``; then one
  *containing* ``yes`` / ``no`` (no word boundary: "I don't know" -> no,
  "I am not sure" -> no, "It is unknown" -> no, "her eyes" -> yes); else
  ``unknown``.
* ``extract_yes_no_avhb`` (mode ``avhb``, the default): a hedge is not an
  answer.  After ``INVALID``: a reply whose first word (markdown and quotes
  skipped) is ``yes`` / ``no`` is that answer ("No, it is black.",
  "**Yes**"), except "yes and no" / "yes or no" and the adverb "no doubt";
  else a reply holding one of ``HEDGES`` ("not sure", "cannot tell",
  "unknown", "maybe", ...) is ``unknown``; else the whole *words* yes / no:
  exactly one of the two -> it ("The answer is yes."), both or neither ->
  ``unknown`` ("her eyes" holds neither).
* ``yes_no_extractor(mode)``: the one of the two a mode uses.
* ``valid_for_pairing`` (videoqa.py ``has_paired_videos_*``): the shorter
  list ``SHORT_INVALID``; "Maybe" or "error" count as valid there although
  they extract to ``unknown``.
* ``valid_clip`` (clipqa.py ``is_valid_prediction``): not in
  ``CLIP_INVALID`` and containing ``yes`` or ``no``.
* ``first_letter`` (evaluate_mcq.py ``extract_answer_letter``): the first
  alphabetic character upper-cased ("The answer is B" -> ``T``); with none,
  the stripped reply; a non-string is returned unchanged.
* ``letter_sequence`` (``extract_answer_sequence``): upper-cased with all
  whitespace removed (clip-order answers such as ``ABC``).
* ``is_sequence_answer(gold, letters)``: a clip-order gold is two or more
  characters (whitespace removed, upper-cased), every one an option letter;
  an ordinary gold such as ``red`` or ``No`` is not one.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

INVALID = ("", "unknown", "文件未找到", "file not found", "video not found", "error", "无法处理", "cannot process")
SHORT_INVALID = ("", "unknown", "文件未找到", "file not found", "video not found")
CLIP_INVALID = INVALID + ("推理失败", "inference failed")
UNKNOWN = "unknown"


def extract_yes_no(answer: Any) -> str:
    """'yes', 'no' or 'unknown' (see module docstring)."""
    if not isinstance(answer, str):
        return UNKNOWN
    a = answer.strip().lower()
    if a in INVALID:
        return UNKNOWN
    if a.startswith("yes"):
        return "yes"
    if a.startswith("no"):
        return "no"
    if "yes" in a:
        return "yes"
    if "no" in a:
        return "no"
    return UNKNOWN


HEDGES = ("not sure", "unsure", "uncertain", "not certain", "cannot tell", "can't tell", "cannot say", "can't say",
          "cannot be determined", "can't be determined", "cannot determine", "can't determine", "unclear",
          "unknown", "don't know", "do not know", "not possible to tell", "impossible to tell", "hard to tell",
          "hard to say", "difficult to say", "maybe", "perhaps", "possibly")
_LEAD = re.compile(r"^[\W_]*(yes|no)\b(?!\s+(?:and|or)\s+(?:yes|no)\b)(?!\s+doubt\b)")
_WORD = re.compile(r"\b(yes|no)\b")


def extract_yes_no_avhb(answer: Any) -> str:
    """'yes', 'no' or 'unknown', a hedge being unknown (module docstring)."""
    if not isinstance(answer, str):
        return UNKNOWN
    a = answer.strip().lower()
    if a in INVALID:
        return UNKNOWN
    lead = _LEAD.match(a)
    if lead:
        return lead.group(1)
    if any(h in a for h in HEDGES):
        return UNKNOWN
    words = set(_WORD.findall(a.replace("no doubt", "")))
    return words.pop() if len(words) == 1 else UNKNOWN


def yes_no_extractor(mode: str) -> Callable[[Any], str]:
    """``extract_yes_no`` for mode ``upstream``, ``extract_yes_no_avhb`` otherwise."""
    return extract_yes_no if mode == "upstream" else extract_yes_no_avhb


def valid_for_pairing(answer: Any) -> bool:
    """videoqa.py's validity test used only to skip a sample."""
    return isinstance(answer, str) and answer.strip().lower() not in SHORT_INVALID


def valid_clip(answer: Any) -> bool:
    """clipqa.py's ``is_valid_prediction``."""
    if answer is None:
        return False
    a = str(answer).strip().lower()
    return a not in CLIP_INVALID and ("yes" in a or "no" in a)


def first_letter(answer: Any) -> Any:
    """Upstream MCQ letter (see module docstring)."""
    if not isinstance(answer, str):
        return answer
    for ch in answer.strip():
        if ch.isalpha():
            return ch.upper()
    return answer.strip()


def letter_sequence(answer: Any) -> Any:
    """Upstream clip-level MCQ normalisation (see module docstring)."""
    if not isinstance(answer, str):
        return answer
    return "".join(answer.strip().upper().split())


def is_sequence_answer(gold: Any, letters: Iterable[str]) -> bool:
    """A clip-order gold answer: two or more characters once whitespace is
    removed and upper-cased, each one of the option ``letters``."""
    s = letter_sequence(gold)
    allowed = {str(x).strip().upper() for x in letters}
    return isinstance(s, str) and len(s) > 1 and all(c in allowed for c in s)

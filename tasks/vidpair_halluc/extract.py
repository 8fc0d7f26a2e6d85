"""Answer extraction, exactly as the upstream scoring scripts do it.

* ``extract_yes_no`` (evaluate/videoqa.py, clipqa.py): a non-string is
  ``unknown``; ``strip().lower()``; one of ``INVALID`` -> ``unknown``; then a
  reply starting with ``yes`` / ``no``; then one *containing* ``yes`` /
  ``no`` (no word boundary: "I don't know" -> no, "her eyes" -> yes);
  else ``unknown``.
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

from typing import Any, Iterable

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

"""From a similarity to a reply in a judge role's closed answer space.

The answer space is ``Request.choices`` as avhb builds it from the role's
parser (``avhb.score.judge_replies.answer_space``).  Two kinds can be mapped:

yes/no
    Choices ``["Yes", "No"]`` (any case, any order).  One threshold t:
    the reply is the yes choice iff ``sim >= t``.

ordered scale
    Choices that are all integers (``["0", "1", "2"]`` for ``score_0_2``,
    ``integer`` with min/max) or all JSON ratings (``{"rating": k}`` for
    ``rating_json``).  Sorted by their value they are levels
    ``0 .. n-1``; n-1 ascending thresholds ``t_1 <= ... <= t_{n-1}`` cut the
    similarity axis, and the level is the number of thresholds ``<= sim``:
    ``sim < t_1`` gives the lowest value, ``t_i <= sim < t_{i+1}`` the
    (i+1)-th, ``sim >= t_{n-1}`` the highest.

Default thresholds (when the judge is given none):

- yes/no: ``[0.7]``;
- a 3-level scale (``score_0_2``): ``[0.5, 0.8]``;
- any other n-level scale: linear bins over [0, 1], ``t_i = i / n``
  (1..5 ratings: 0.2, 0.4, 0.6, 0.8).

Any other answer space (option letters, tags, none at all) cannot be
answered by similarity: the caller replies with an error, never a guess.
"""
from __future__ import annotations

import json
import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Sequence

YES_NO_DEFAULT = (0.7,)
THREE_LEVEL_DEFAULT = (0.5, 0.8)


class MappingError(ValueError):
    """The answer space or the thresholds do not fit; the message says why."""


@dataclass(frozen=True)
class AnswerSpace:
    """A mappable answer space.  ``replies`` are ordered from the lowest
    level to the highest (for yes/no: the no reply, then the yes reply)."""

    kind: str  # "yes_no" or "scale"
    replies: tuple[str, ...]

    @property
    def levels(self) -> int:
        return len(self.replies)


def _scale_value(choice: str) -> int | None:
    """The integer a scale choice stands for: ``"2"`` -> 2,
    ``'{"rating": 4}'`` -> 4; None when it is neither."""
    text = choice.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and set(data) == {"rating"} and isinstance(data["rating"], int) \
            and not isinstance(data["rating"], bool):
        return data["rating"]
    return None


def answer_space_of(choices: Sequence[str] | None) -> AnswerSpace:
    """Classify ``Request.choices``; raises MappingError for a missing or
    unmappable answer space."""
    if not choices:
        raise MappingError("embed/minilm needs a closed answer space (a judge role whose parser is "
                           "score_0_2, yes_no, rating_json or integer with min and max); this role has none")
    lowered = [str(c).strip().lower() for c in choices]
    if len(choices) == 2 and set(lowered) == {"yes", "no"}:
        no, yes = (choices[0], choices[1]) if lowered[0] == "no" else (choices[1], choices[0])
        return AnswerSpace("yes_no", (no, yes))
    values = [_scale_value(str(c)) for c in choices]
    if len(choices) >= 2 and all(v is not None for v in values) and len(set(values)) == len(values):
        ordered = sorted(zip(values, choices))
        return AnswerSpace("scale", tuple(c for _, c in ordered))
    shown = ", ".join(repr(c) for c in list(choices)[:6]) + (", ..." if len(choices) > 6 else "")
    raise MappingError(f"embed/minilm cannot map a similarity onto the answer space [{shown}]: "
                       "it answers yes/no roles and ordered integer or rating scales only")


def default_thresholds(space: AnswerSpace) -> tuple[float, ...]:
    """The documented defaults (module docstring)."""
    if space.kind == "yes_no":
        return YES_NO_DEFAULT
    n = space.levels
    if n == 3:
        return THREE_LEVEL_DEFAULT
    return tuple(i / n for i in range(1, n))


def parse_thresholds(value: Any) -> tuple[float, ...] | None:
    """The ``thresholds`` judge argument: None, one number or a list of
    numbers, ascending.  Raises MappingError otherwise."""
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
            raise MappingError(f"thresholds must be numbers, got {value!r}")
        out.append(float(item))
    if not out:
        raise MappingError("thresholds must not be empty")
    if any(b < a for a, b in zip(out, out[1:])):
        raise MappingError(f"thresholds must be ascending, got {list(out)}")
    return tuple(out)


def resolve_thresholds(space: AnswerSpace, given: tuple[float, ...] | None) -> tuple[float, ...]:
    """The thresholds for this answer space: the given ones (exactly
    ``levels - 1`` of them) or the defaults."""
    if given is None:
        return default_thresholds(space)
    if len(given) != space.levels - 1:
        raise MappingError(f"{len(given)} threshold(s) {list(given)} do not fit an answer space of "
                           f"{space.levels} replies {list(space.replies)}: give {space.levels - 1}")
    return given


def level_of(similarity: float, thresholds: Sequence[float]) -> int:
    """The number of thresholds ``<= similarity`` (0 .. len(thresholds))."""
    if math.isnan(similarity):
        raise MappingError("similarity is NaN")
    return bisect_right(list(thresholds), similarity)


def reply_for(similarity: float, space: AnswerSpace, thresholds: Sequence[float]) -> str:
    """The reply string (one of the choices) for this similarity."""
    return space.replies[level_of(similarity, thresholds)]

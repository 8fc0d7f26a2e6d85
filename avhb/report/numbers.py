"""Reading metric cells out of a ``results.json`` mapping and formatting them.

A task's (or group's, or breakdown value's) mapping holds, per metric ``m``,
``m`` (value), ``m_stderr`` (standard error or null) and ``m_n`` (count);
task mappings also hold the bookkeeping counts ``samples``, ``errors`` and
``judge_failures``. A key is a metric unless it is bookkeeping or the
``_stderr``/``_n`` companion of another key present in the same mapping.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

BOOKKEEPING = ("samples", "errors", "judge_failures")


@dataclass(frozen=True)
class Cell:
    """One reported number: value, standard error and count (any may be None)."""

    value: float | None
    stderr: float | None
    n: int | None


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _count(x: Any) -> int | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return int(x)


def is_metric_key(key: str, mapping: Mapping[str, Any]) -> bool:
    """True when ``key`` names a metric (see module docstring)."""
    if key in BOOKKEEPING:
        return False
    if key.endswith("_stderr") and key[: -len("_stderr")] in mapping:
        return False
    if key.endswith("_n") and key[: -len("_n")] in mapping:
        return False
    value = mapping[key]
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def metric_names(mapping: Mapping[str, Any] | None) -> list[str]:
    """Metric names of one results mapping, in file order."""
    if not isinstance(mapping, Mapping):
        return []
    return [k for k in mapping if isinstance(k, str) and is_metric_key(k, mapping)]


def cell(mapping: Mapping[str, Any], metric: str) -> Cell:
    """The (value, stderr, n) of ``metric`` in ``mapping``."""
    return Cell(
        _number(mapping.get(metric)),
        _number(mapping.get(metric + "_stderr")),
        _count(mapping.get(metric + "_n")),
    )


def count(mapping: Mapping[str, Any] | None, key: str) -> int | None:
    """A bookkeeping count (``samples``, ``errors``...) or None when absent."""
    if not isinstance(mapping, Mapping):
        return None
    return _count(mapping.get(key))


def fmt_number(x: float | None, digits: int = 4) -> str:
    """Fixed-point with ``digits`` decimals; integers stay integers; None is '-'."""
    if x is None:
        return "-"
    if float(x).is_integer() and abs(x) >= 1e4:
        return str(int(x))
    if abs(x) >= 1e4:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def fmt_cell(c: Cell, digits: int = 4) -> str:
    """``value ± stderr`` (stderr omitted when unknown)."""
    if c.value is None:
        return "-"
    if c.stderr is None:
        return fmt_number(c.value, digits)
    return f"{fmt_number(c.value, digits)} ± {fmt_number(c.stderr, digits)}"

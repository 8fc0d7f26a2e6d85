"""Formatting reported numbers.  Reading them out of ``results.json`` is
:class:`avhb.runfolder.results.RunResults`' job; a number is an
:class:`avhb.score.aggregate.Aggregate` (value, stderr, n)."""
from __future__ import annotations

from avhb.score.aggregate import Aggregate


def fmt_number(x: float | None, digits: int = 4) -> str:
    """Fixed-point with ``digits`` decimals; integers stay integers; None is '-'."""
    if x is None:
        return "-"
    if float(x).is_integer() and abs(x) >= 1e4:
        return str(int(x))
    if abs(x) >= 1e4:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def fmt_cell(c: Aggregate, digits: int = 4) -> str:
    """``value ± stderr`` (stderr omitted when unknown)."""
    if c.value is None:
        return "-"
    if c.stderr is None:
        return fmt_number(c.value, digits)
    return f"{fmt_number(c.value, digits)} ± {fmt_number(c.stderr, digits)}"

"""The error budget (``--max-errors``, ``RunOptions.max_errors``): the share
of a run's samples that may fail outside the model.  The run applies it
(:meth:`avhb.run.evaluator.Evaluator.run`): a run whose failed share is
over it raises :class:`OverBudget` once its results, samples and report
are written, through ``avhb run``, ``avhb score`` and :func:`avhb.evaluate`
alike; the CLI turns that into exit status 1.  ``avhb merge`` holds the
merged counts to the shards' budget with the same check (:func:`over_budget`)."""
from __future__ import annotations

from typing import Any

from avhb.errors import RunStopped
from avhb.run.options import parse_error_budget


class OverBudget(RunStopped):
    """The run finished with more failed samples than ``--max-errors``
    allows (the message says how many and why); ``results`` is
    results.json's content, written before it was raised."""


def over_budget(results: dict[str, Any], flag: str) -> str | None:
    """The error-budget line when the share of failed samples in
    ``results`` (results.json's content) exceeds ``flag`` (``5%``,
    ``0.05``: :func:`avhb.run.options.parse_error_budget`); None within it."""
    budget = parse_error_budget(flag)
    rows = [r for r in (results.get("results") or {}).values() if isinstance(r, dict)]
    samples = sum(int(r.get("samples") or 0) for r in rows)
    errors = sum(int(r.get("errors") or 0) for r in rows)
    if not samples or errors / samples <= budget:
        return None
    judges = given if isinstance(given := results.get("judge_errors"), dict) else {}
    named = "".join(f"; judge {name} did not answer {cell.get('failed')} question{'' if cell.get('failed') == 1 else 's'} "
                    f"(last: {' '.join(str(cell.get('last_error') or '').split())[:300]})"
                    for name, cell in judges.items() if isinstance(cell, dict))
    return (f"{errors} of {samples} samples failed ({100 * errors / samples:.1f}% > --max-errors {flag}){named}; "
            "they are excluded from the metrics and listed in samples/*.jsonl; re-running the command retries them")

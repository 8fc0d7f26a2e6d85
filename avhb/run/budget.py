"""The error budget (``--max-errors``, ``RunOptions.max_errors``): the share
of a run's samples that may fail outside the model.  The run applies it
(:meth:`avhb.run.evaluator.Evaluator.run`): a run whose failed share is
over it raises :class:`OverBudget` once its results, samples and report
are written, through ``avhb run``, ``avhb score`` and :func:`avhb.evaluate`
alike; the CLI turns that into exit status 1.  ``avhb merge`` holds the
merged counts to the shards' budget with the same check (:func:`over_budget`)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from avhb.errors import RunStopped
from avhb.options import parse_error_budget


class OverBudget(RunStopped):
    """The run finished with more failed samples than ``--max-errors``
    allows (the message says how many and why); ``results`` is
    results.json's content, written before it was raised."""


def error_cause(error: str, sample_id: str) -> str:
    """A failed sample's error as the cause it shares with others: its own
    sample id taken out (``sample s3: ``), white space collapsed, at most
    300 characters."""
    for named in (f"sample {sample_id}: ", f"sample {sample_id!r}: "):
        error = error.replace(named, "")
    return " ".join(error.split())[:300]


def most_common(causes: Counter[str]) -> str:
    """``; most common error (7 of them): CAUSE`` for the commonest of
    ``causes`` (cause -> samples; :func:`error_cause`), "" when empty."""
    if not causes:
        return ""
    cause, count = causes.most_common(1)[0]
    return f"; most common error ({count} of them): {cause}"


def over_budget(results: dict[str, Any], flag: str, causes: Counter[str] | None = None) -> str | None:
    """The error-budget line when the share of failed samples in
    ``results`` (results.json's content) exceeds ``flag`` (``5%``,
    ``0.05``: :func:`avhb.options.parse_error_budget`); None within it.
    ``causes``: the failed samples' errors by :func:`error_cause` (those the
    run saw); the line ends with the commonest and its count."""
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
            "they are excluded from the metrics and listed in samples/*.jsonl; re-running the command retries them"
            + most_common(causes or Counter()))

"""Helpers for writing a metric (public API: ``from avhb.score.metric_helpers
import ...``): reading values out of a sample record, turning a judge verdict
into its sample-log entry, count aggregates, the records a metric scores.
The built-in metrics and every pack use them.

Field specs (used in YAML options such as ``fields:``) name where a value
comes from in a :class:`avhb.score.metric.SampleRecord`:

* ``response``, ``extracted``, ``target``, ``id`` — the record attribute
  (``extracted.<key>`` / ``target.<key>`` go into a mapping the filters or
  the target made);
* ``doc.<key>`` — a key of the sample document (dotted paths go deeper);
* ``meta.<key>`` — a key of ``record.meta``;
* ``scores.<key>`` — a per-sample value another metric already wrote;
* ``outputs.<key>`` — a field a multi-step driver returned with its response;
* ``literal:<text>`` — the text itself.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from avhb.score.aggregate import Aggregate
from avhb.score.metric import SampleRecord

__all__ = ["as_text", "count", "judge_fields", "resolve", "usable", "verdict_log"]

_ATTRS = ("response", "extracted", "target", "id")


def resolve(record: SampleRecord, spec: str) -> Any:
    """The value a field spec points at (None when absent)."""
    if spec.startswith("literal:"):
        return spec[len("literal:"):]
    if spec in _ATTRS:
        return getattr(record, spec)
    head, _, rest = spec.partition(".")
    if head == "doc":
        obj: Any = record.doc
    elif head == "meta":
        obj = record.meta
    elif head == "scores":
        obj = record.scores
    elif head == "outputs":
        obj = record.outputs
    elif head in ("extracted", "target"):
        obj = getattr(record, head)
    else:
        raise ValueError(f"unknown field spec {spec!r} (use response, extracted, target, id, doc.KEY, "
                         "meta.KEY, scores.KEY, outputs.KEY or literal:TEXT)")
    for part in rest.split(".") if rest else []:
        if isinstance(obj, Mapping):  # a reduced record's mappings are read-only ones
            obj = obj.get(part)
        else:
            return None
    return obj


def as_text(value: Any) -> str:
    """Render a value as judge-prompt text: strings as is, None as "",
    a list of ``{"type": "text", "text": ...}`` parts as their joined text,
    anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and "text" in v for v in value):
        return "\n".join(str(v["text"]) for v in value)
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def judge_fields(record: SampleRecord, specs: dict[str, str]) -> dict[str, str]:
    """Build the ``fields`` dict of a judge call from ``{field: spec}``."""
    return {name: as_text(resolve(record, spec)) for name, spec in specs.items()}


def verdict_log(role: str, verdict: Any) -> dict[str, Any]:
    """A JSON-able record of one judge verdict for ``record.judgements``."""
    return {
        "role": role,
        "value": getattr(verdict, "value", None),
        "ok": bool(getattr(verdict, "ok", False)),
        "raw": getattr(verdict, "raw", None),
        "per_judge": list(getattr(verdict, "per_judge", None) or []),
        **({"adaptations": list(verdict.adaptations)} if getattr(verdict, "adaptations", None) else {}),
    }


def count(value: int, n: int) -> Aggregate:
    """A count reported next to a metric (unparsed replies, judge failures...).
    A count is not an estimate, so it carries no standard error; ``n`` is the
    number of records it was counted over."""
    return Aggregate(float(value), None, n)


def usable(records: Sequence[SampleRecord]) -> list[SampleRecord]:
    """Records whose model call did not fail."""
    return [r for r in records if r.error is None]

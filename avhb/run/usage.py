"""The model's usage, as results.json's ``usage`` records it::

    "usage": {"model": {"total": CELL, "tasks": {task: CELL}}}

    CELL = {"calls": n, "failed": k, "prompt_tokens": p, "completion_tokens": c,
            "cost_usd": x | null, "latency_s": {"p50": s, "p95": s, "n": m} | null}

Read from the run folder's ``journal/responses.jsonl`` (what
:class:`avhb.call.caller.Caller` wrote for the model under test) once,
a line at a time, when the run's results are written for the last time
(:meth:`avhb.run.evaluator.Evaluator._finish`; ``avhb score`` and ``avhb
merge`` too, the latter over the shards' union).  A resume that keeps every
task whole (each finished earlier with the same settings) sends nothing and
its results are the previous ones, so it keeps the previous results.json's
``usage["model"]`` as it is, without reading the journal again.

**Which calls count: those this run's results rest on.**  A journal entry
counts when

- its ``task`` has results in this results.json, and its sample (``id``,
  ``repeat``) is one of that task's samples as ``samples/<task>.jsonl``
  records them (a lowered ``--limit``, another ``--samples``: entries of
  samples no longer in the results are left out), and
- it is the newest entry of its key: the one ``Journal.get`` returns, so
  the one a resume, ``avhb score`` or a report reads.  A call that failed
  and was sent again on a re-run has two entries; only the second counts
  (the failed attempt cost a request but no result rests on it).

Calls answered from the journal on a resume count like calls made in this
invocation: the numbers describe what the results cost, not what the last
command sent (a finished run resumed with nothing to do reports the same
usage as the run that made it).  Every step of a multi-step sample is an
entry of its own and counts (``step``).  Not journaled, so not counted:
calls an open breaker or ``--max-cost`` never sent.  ``calls`` counts the
counted entries with an answer, ``failed`` those with an error (the model
or the backend failed that sample); tokens, cost and latency sum or span
both.  Left as a known limit: entries a task's earlier configuration made
for the same samples (``--allow-config-change``) also count.  A key with an
answer is never asked again (``Caller.call`` returns the journal's answer),
so only failed entries are held until the end of the file (their key, to
see a later answer); everything else is summed as it is read, latencies
kept as 8-byte floats (the quantiles need them all).

``cost_usd``: the counted entries' cost, or null when none of them is
priced (``priced`` in an entry; an entry from before that field counts as
priced when its cost is above 0): a backend without prices journals cost
0.0, which must not read as "free".

``latency_s``: over the counted entries that recorded one (``latency_s``:
the seconds from the call's first attempt to its answer, retries included,
the wait for a concurrency slot not); null when none did (entries written
before latency was recorded).  ``p50`` and ``p95`` by the *nearest-rank*
method (:func:`nearest_rank`): the sorted values' ``ceil(q * n)``-th (1-based),
so always one of the recorded values; ``n`` the values they come from.
"""
from __future__ import annotations

import math
from array import array
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping

from avhb.runfolder.hash_index import HashIndex, key_hash
from avhb.runfolder.journal import entries
from avhb.runfolder.samples import SamplesFile


def nearest_rank(values: Iterable[float], q: float) -> float | None:
    """The ``q`` quantile (0 < q <= 1) of ``values`` by nearest rank: sorted
    ascending, the value at 1-based rank ``ceil(q * n)`` (rank 1 for a
    ``q * n`` below 1).  None for no values.  Ties need no rule: equal
    values are the same value whichever rank is taken."""
    ordered = sorted(values)
    if not ordered:
        return None
    if not 0 < q <= 1:
        raise ValueError(f"a quantile is in (0, 1], not {q}")
    rank = max(1, math.ceil(Fraction(str(q)) * len(ordered)))  # exact: 0.95 * 20 is 19.000000000000004 in floats
    return ordered[rank - 1]


class _Cell:
    """One task's (or the total's) sums while the journal is read."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost = 0.0
        self.priced = False
        self.latencies = array("d")

    def add(self, entry: Mapping[str, Any]) -> None:
        if entry.get("error") is None:
            self.calls += 1
        else:
            self.failed += 1
        usage = given if isinstance(given := entry.get("usage"), Mapping) else {}
        self.prompt_tokens += _int(usage.get("prompt_tokens"))
        self.completion_tokens += _int(usage.get("completion_tokens"))
        cost = entry.get("cost")
        cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0
        self.cost += cost
        priced = entry.get("priced")
        self.priced = self.priced or (priced is True) or (priced is None and cost > 0)
        latency = entry.get("latency_s")
        if isinstance(latency, (int, float)) and not isinstance(latency, bool) and latency >= 0:
            self.latencies.append(float(latency))

    def merge(self, other: "_Cell") -> None:
        self.calls += other.calls
        self.failed += other.failed
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.priced = self.priced or other.priced
        self.latencies.extend(other.latencies)

    def as_json(self) -> dict[str, Any]:
        latency = None
        if self.latencies:
            latency = {"p50": nearest_rank(self.latencies, 0.50), "p95": nearest_rank(self.latencies, 0.95),
                       "n": len(self.latencies)}
        return {"calls": self.calls, "failed": self.failed, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": round(self.cost, 6) if self.priced else None, "latency_s": latency}


def _int(x: Any) -> int:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0


def _sample_hash(task: str, sample_id: Any, repeat: Any) -> int:
    return key_hash(f"{task}\x00{sample_id}\x00{repeat}")


def _samples_of(samples: Mapping[str, Path]) -> HashIndex:
    """(task, id, repeat) of every sample the results rest on, as 44-bit
    hashes (about 8 bytes a sample; a false match is about 1 in 10^7 at a
    million samples).  A samples-file line that is not a sample holds none
    (the report lists it: :mod:`avhb.runfolder.samples`)."""
    index = HashIndex()
    for task, path in samples.items():
        for row in SamplesFile(path).rows():
            if "id" in row:
                index.add(_sample_hash(task, row.get("id"), row.get("repeat", 0)), 0)
    return index


def model_usage(journal: Path, samples: Mapping[str, Path]) -> dict[str, Any]:
    """results.json's ``usage["model"]`` (module docstring): ``journal``
    the model's journal file (``journal/responses.jsonl``), ``samples``
    each task with results -> its samples file.  Every task in
    ``samples`` has a cell (zeros when none of its calls is journaled)."""
    chosen = _samples_of(samples)
    cells = {task: _Cell() for task in samples}
    pending: dict[str, Mapping[str, Any]] = {}  # key -> its newest entry so far, while that one failed
    for entry in entries(journal):
        task = entry.get("task")
        if task not in cells or not chosen.values_of(_sample_hash(task, entry.get("id"), entry.get("repeat", 0))):
            continue
        key = entry["key"]
        pending.pop(key, None)  # an older failed entry of this key: superseded
        if entry.get("error") is None:
            cells[task].add(entry)
        else:
            pending[key] = entry
    for failed in pending.values():  # failures nothing answered later: the results rest on them
        cells[str(failed.get("task"))].add(failed)
    total = _Cell()
    for cell in cells.values():
        total.merge(cell)
    return {"total": total.as_json(), "tasks": {task: cell.as_json() for task, cell in cells.items()}}


def usage_line(model: Mapping[str, Any]) -> str | None:
    """The printed table's line: ``model usage: N calls, P prompt + C
    completion tokens, $X, p50 Ys / p95 Zs`` (None without a total)."""
    total = model.get("total") if isinstance(model, Mapping) else None
    if not isinstance(total, Mapping):
        return None
    calls = _int(total.get("calls"))
    failed = _int(total.get("failed"))
    cost = total.get("cost_usd")
    latency = total.get("latency_s")
    parts = [f"{calls:,} calls" + (f" ({failed:,} failed)" if failed else ""),
             f"{_int(total.get('prompt_tokens')):,} prompt + {_int(total.get('completion_tokens')):,} completion tokens",
             f"${cost:.4f}" if isinstance(cost, (int, float)) else "cost unknown (no prices)"]
    if isinstance(latency, Mapping) and isinstance(latency.get("p50"), (int, float)):
        parts.append(f"p50 {fmt_seconds(latency['p50'])} / p95 {fmt_seconds(latency.get('p95'))}")
    else:
        parts.append("latency not recorded")
    return "model usage: " + ", ".join(parts)


def fmt_seconds(x: Any) -> str:
    """Seconds as read: 2.41s, 12.3s; under 10 ms in milliseconds (0.012ms), not 0.00s."""
    if not isinstance(x, (int, float)):
        return "-"
    if x < 0.01:
        return f"{x * 1000:.2g}ms"
    return f"{x:.2f}s" if x < 10 else f"{x:.1f}s"


def without_timings(results: Mapping[str, Any]) -> dict[str, Any]:
    """A results.json document without the model's latencies
    (``usage["model"]``'s ``latency_s`` cells): what two runs with the same
    results share (a sharded run merged and the unsharded one, a run on
    Ray and one in-process), since latencies are measured, not computed."""
    out = dict(results)
    usage = out.get("usage")
    model = usage.get("model") if isinstance(usage, Mapping) else None
    if isinstance(usage, Mapping) and isinstance(model, Mapping):
        cells = {"total": model.get("total"), **(model.get("tasks") or {})}
        stripped = {name: {k: v for k, v in cell.items() if k != "latency_s"} if isinstance(cell, Mapping) else cell
                    for name, cell in cells.items()}
        out["usage"] = {**usage, "model": {**model, "total": stripped.pop("total"), "tasks": stripped}}
    return out

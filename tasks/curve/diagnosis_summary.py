"""The statistics of a CURVE diagnosis: over a set of diagnosed samples
(:func:`summarize`, :func:`brief` per value of a field), low- vs
high-resource locales, and the run's accuracy per locale."""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Callable

from avhb import RunResults

from . import locales
from .error_isolation import ERROR_KINDS, SampleDiagnosis


def _family(kind: str | None) -> str:
    return "perception" if (kind or "").startswith("perception/") else (kind or "?")


def summarize(diagnoses: list[SampleDiagnosis], max_rounds: int = 5) -> dict[str, Any]:
    """Counts and distributions for a set of diagnosed samples.

    Over samples with a graph: ``mean_nodes``; ``mean_depth`` and
    ``depth_std`` (σ, population standard deviation; depth = nodes on the
    longest root-to-answer path); ``mean_paths``; ``timestamp_share`` (nodes
    with a timestamp / all nodes).  Over all samples: ``status``,
    ``finished_share`` (status complete: isolated within the round limit) and
    ``finished_by_round`` (share complete after at most r rounds).  Errors:
    ``errors`` by kind, ``errors_by_family``, ``error_distribution`` (share of
    each kind among all errors), ``divergence_share`` = divergences /
    (divergences + errors), ``errors_round1`` / ``errors_after_round1`` and
    ``extra_errors_vs_round1`` = after / round 1, ``perception_errors_per_item``
    (perception errors / samples with a graph), ``masked_reasoning_errors``
    (module docstring)."""
    status = Counter(d.status for d in diagnoses)
    labels: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    round1 = later = stamped = total_nodes = masked = 0
    node_counts, depths, paths = [], [], []
    graphs = [(d, d.graph) for d in diagnoses if d.graph is not None]
    for d, graph in graphs:
        node_counts.append(len(graph.nodes))
        depths.append(graph.depth())
        paths.append(len(graph.paths()))
        masked += len(d.masked())
        for n in graph.nodes:
            total_nodes += 1
            stamped += bool(n.timestamp)
            labels[n.label or "unvisited"] += 1
            if n.label == "error":
                kinds[n.error_type or "?"] += 1
                if n.round == 1:
                    round1 += 1
                else:
                    later += 1
    n_err, n_div = sum(kinds.values()), labels["divergence"]
    perception = sum(v for k, v in kinds.items() if _family(k) == "perception")
    done_rounds = [len(d.rounds) for d in diagnoses if d.status == "complete"]
    return {
        "samples": len(diagnoses),
        "status": dict(sorted(status.items())),
        "finished_share": (status["complete"] / len(diagnoses)) if diagnoses else None,
        "finished_by_round": {str(r): sum(1 for x in done_rounds if x <= r) / len(diagnoses)
                              for r in range(1, max_rounds + 1)} if diagnoses else {},
        "mean_nodes": statistics.fmean(node_counts) if node_counts else None,
        "mean_depth": statistics.fmean(depths) if depths else None,
        "depth_std": statistics.pstdev(depths) if depths else None,
        "mean_paths": statistics.fmean(paths) if paths else None,
        "timestamp_share": stamped / total_nodes if total_nodes else None,
        "mean_rounds": statistics.fmean(len(d.rounds) for d, _ in graphs) if graphs else None,
        "nodes": {k: labels.get(k, 0) for k in ("match", "divergence", "error", "unvisited")},
        "errors": {k: kinds.get(k, 0) for k in ERROR_KINDS},
        "errors_by_family": {"perception": perception, "knowledge": kinds.get("knowledge", 0),
                             "reasoning": kinds.get("reasoning", 0)},
        "error_distribution": {k: kinds.get(k, 0) / n_err for k in ERROR_KINDS} if n_err else {},
        "divergence_share": n_div / (n_div + n_err) if (n_div + n_err) else None,
        "errors_round1": round1,
        "errors_after_round1": later,
        "extra_errors_vs_round1": later / round1 if round1 else None,
        "perception_errors_per_item": perception / len(graphs) if graphs else None,
        "masked_reasoning_errors": masked,
    }


def brief(diagnoses: list[SampleDiagnosis]) -> dict[str, Any]:
    """The compact cell of a breakdown (by skill, by subcategory)."""
    full = summarize(diagnoses)
    return {k: full[k] for k in ("samples", "errors_by_family", "error_distribution", "perception_errors_per_item")}


def by_field(diagnoses: list[SampleDiagnosis], values: Callable[[SampleDiagnosis], list[str]]) -> dict[str, Any]:
    """``brief`` per value; a multi-valued field puts a sample in each of its cells."""
    cells: dict[str, list[SampleDiagnosis]] = {}
    for d in diagnoses:
        for v in values(d) or ["(none)"]:
            cells.setdefault(v, []).append(d)
    return {v: brief(ds) for v, ds in sorted(cells.items())}


def resource_split(diagnoses: list[SampleDiagnosis], low: set[str]) -> dict[str, Any]:
    """Low- vs high-resource locales: perception errors per diagnosed item
    (with a graph) in each, and their ratio low / high (the paper: 1.4x)."""
    out: dict[str, Any] = {}
    for name, pick in (("low", lambda d: d.locale in low), ("high", lambda d: d.locale not in low)):
        ds = [d for d in diagnoses if pick(d)]
        stats = summarize(ds)
        out[name] = {"locales": sorted({d.locale for d in ds}), "samples": stats["samples"],
                     "perception_errors": stats["errors_by_family"]["perception"],
                     "perception_errors_per_item": stats["perception_errors_per_item"]}
    lo, hi = out["low"]["perception_errors_per_item"], out["high"]["perception_errors_per_item"]
    out["perception_ratio_low_vs_high"] = lo / hi if lo is not None and hi else None
    return out


def accuracy_by_locale(results: RunResults | dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """Each locale task's ``accuracy`` from the run's results
    (``RunResults.read``, or a results.json document), and the lowest and
    highest locale (the paper reports ta-IN at 31.60 %)."""
    res = results if isinstance(results, RunResults) else RunResults.from_json(results)
    per: dict[str, float] = {}
    for name in tasks:
        agg = res.tasks[name].metrics.get("accuracy") if name in res.tasks else None
        loc = locales.find(name.removeprefix("curve_"))
        if agg is not None and agg.value is not None and loc is not None:
            per[loc.code] = agg.value
    if not per:
        return {"locales": {}, "min": None, "max": None}
    lo, hi = min(per, key=per.__getitem__), max(per, key=per.__getitem__)
    return {"locales": dict(sorted(per.items())), "min": {"locale": lo, "accuracy": per[lo]},
            "max": {"locale": hi, "accuracy": per[hi]}}

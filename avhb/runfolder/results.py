"""A run's results, typed until they are written.

A task's results are :class:`TaskResult` (metric -> ``Aggregate``, the
bookkeeping counts, breakdowns); groups are metric -> ``Aggregate``.  Only
:meth:`RunResults.to_json` flattens them into ``results.json``::

    {"results": {task: {m: value, m_stderr: ..., m_n: ...,
                        [m_runs: [...], m_run_std: ...,]
                        [m_stderr_clustered: ..., m_clusters: ...,]  # the samples cluster
                        [m_ci: [low, high],]                         # the 95 % interval
                        samples, errors, judge_failures}},
     "groups": {group: {m: ..., m_stderr: ..., m_n: ..., samples, errors}},
     "breakdowns": {task: {field: {value: {m: ..., m_stderr: ..., m_n: ...,
                                           samples, errors}}}},
     "partial_groups": {group: "2/18 tasks run"}, "model": ..., "judge_usage": {...},
     ["usage": {"model": {"total": {...}, "tasks": {task: {...}}}},]   # the model's calls (avhb.run.usage)
     "judge_errors": {judge: {"failed": n, "last_error": "..."}},   # only when a judge did not answer
     ["absent_tasks": {task: "its data (PATH) has no samples"},
      "absent_members": {group: [task, ...]},]
     "metrics": {task: {m: {"kind": "headline" | "diagnostic" | "count",
                            "higher_is_better": true | false | null, "description": "...",
                            ["interval": "wilson" | "wilson_effective_n" | "normal"]}}},
     ["power": {task: {m: {"n", "clusters", "stderr", "mde", "unit", "alpha", "power", ["repeats": {...}]}}},]
     ["group_members": {group: [task, ...]}]}   # the tasks a group's numbers combine (avhb report pairs on them)

and :meth:`RunResults.from_json` is the one reader of that flat form (the
report and the printed table use it).  A key of a flat mapping is a metric
unless it is a bookkeeping count or the ``_stderr`` / ``_n`` / ``_runs`` /
``_run_std`` / ``_stderr_clustered`` / ``_clusters`` / ``_ci`` companion of
another key in the same mapping.

The uncertainty keys (``avhb.score.uncertainty``, docs/statistics.md):
``_stderr_clustered`` and ``_clusters`` when the task's samples cluster
(``cluster_key``, or repeats), ``_ci`` the 95 % interval, made as the
metric's ``interval`` says (``avhb.score.stats.INTERVALS``); ``power`` per
task and headline metric (:class:`avhb.score.uncertainty.Power`).  A
group's come from its members' (``group_uncertainty``).

``errors`` counts samples that failed outside the model (excluded from
every metric, docs/errors.md): per task, per breakdown value, and per group
(summed over its member tasks).  ``judge_errors`` names each judge that did
not answer some questions (an HTTP error...: those samples failed) with its
last error.

A group member whose data has no samples (a locale the user's copy of the
data lacks) is *absent*, not unfinished: the run skipped it with a note, it
is listed in ``absent_tasks`` with the reason, and each group holding it
aggregates over its other members and lists it under ``absent_members``.
A member that has data but did not run (left out of ``--tasks``, a stopped
run) still makes the group partial.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from avhb.runfolder.json_file import JsonFile, read_json_file
from avhb.runfolder.layout import results_file
from avhb.score.aggregate import Aggregate, pooled_mean, weighted_mean
from avhb.score.metric import COUNT, DIAGNOSTIC, HEADLINE, MetricInfo
from avhb.score.uncertainty import Power, group_uncertainty

BOOKKEEPING = ("samples", "errors", "judge_failures")
_COMPANIONS = ("_stderr", "_n", "_runs", "_run_std", "_stderr_clustered", "_clusters", "_ci")


@dataclass
class TaskResult:
    metrics: dict[str, Aggregate] = field(default_factory=dict)
    samples: int = 0
    errors: int = 0
    judge_failures: int = 0
    breakdowns: dict[str, dict[str, dict[str, Aggregate]]] = field(default_factory=dict)
    info: dict[str, MetricInfo] = field(default_factory=dict)  # metric -> kind, direction, description
    # field -> value -> {"samples": n, "errors": k}
    breakdown_counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    power: dict[str, Power] = field(default_factory=dict)  # headline metric -> what a comparison could see

    def counts(self) -> dict[str, int]:
        return {"samples": self.samples, "errors": self.errors, "judge_failures": self.judge_failures}

    def kind(self, metric: str) -> str:
        """headline / diagnostic / count; a results.json without the
        ``metrics`` block reads every number as a headline."""
        info = self.info.get(metric)
        return info.kind if info else HEADLINE

    def ordered(self, kinds: tuple[str, ...] = (HEADLINE, DIAGNOSTIC)) -> dict[str, Aggregate]:
        """The metrics of the given kinds, headline first, in file order within a kind."""
        return {k: a for kind in kinds for k, a in self.metrics.items() if self.kind(k) == kind}

    def count_cells(self) -> dict[str, int]:
        """The count outputs as integers (None values left out)."""
        return {k: int(round(a.value)) for k, a in self.metrics.items()
                if self.kind(k) == COUNT and a.value is not None}


@dataclass
class RunResults:
    tasks: dict[str, TaskResult] = field(default_factory=dict)
    groups: dict[str, dict[str, Aggregate]] = field(default_factory=dict)
    partial_groups: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    judge_usage: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other top-level keys, kept as they are
    group_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> {"samples", "errors"}
    judge_errors: dict[str, dict[str, Any]] = field(default_factory=dict)  # judge -> {"failed", "last_error"}
    absent: dict[str, str] = field(default_factory=dict)  # task -> why it has no results (its data has no samples)
    absent_members: dict[str, list[str]] = field(default_factory=dict)  # group -> its absent member tasks
    group_members: dict[str, list[str]] = field(default_factory=dict)  # group -> the tasks it combines
    usage: dict[str, Any] = field(default_factory=dict)  # {"model": ...}: avhb.run.usage (empty: not written)

    def add_judge_errors(self, errors: Mapping[str, int], last: Mapping[str, str]) -> None:
        """Count the questions each judge did not answer (summed over tasks)."""
        for judge, n in errors.items():
            cell = self.judge_errors.setdefault(judge, {"failed": 0, "last_error": None})
            cell["failed"] += int(n)
            cell["last_error"] = last.get(judge, cell["last_error"])

    def undefined_headlines(self) -> list[str]:
        """One line per task whose headline metrics have no value, and why
        (every verdict failed, every sample failed, nothing scored): an
        empty cell must not be the only trace (docs/errors.md)."""
        out = []
        for name, r in self.tasks.items():
            empty = [m for m, a in r.metrics.items() if r.kind(m) == HEADLINE and a.value is None]
            if not empty or not r.samples:
                continue
            if r.errors >= r.samples:
                why = f"every sample failed ({_plural(r.errors, 'error')})"
            elif r.judge_failures:
                why = f"no judge verdict could be read ({_plural(r.judge_failures, 'judge failure')}"
                why += f", {_plural(r.errors, 'failed sample')})" if r.errors else ")"
            else:
                why = "no sample could be scored"
            out.append(f"{name}: {', '.join(empty)} undefined: {why}")
        return out

    # ------------------------------------------------------------ groups
    def aggregate_groups(self, groups: Mapping[str, Mapping[str, Any]], members_of, entries_of=None) -> None:
        """Score every group whose member tasks all have results; a group
        with only some of them is listed in ``partial_groups`` instead (a
        number from a subset would read as the benchmark's headline).
        ``members_of(group)`` lists a group's tasks (subgroups flattened);
        ``entries_of(group)`` its direct members as ``("task"|"group", name)``
        (needed for ``aggregate_over: members``).

        What a group's metric combines: by default (``aggregate_over:
        tasks``) the results of every task under it, subgroups flattened;
        with ``aggregate_over: members`` each direct member's score, a
        subgroup counting as one member (its own aggregate).  Per metric:
        ``weight_by_size: true`` pools the members' units (``pooled_mean``:
        the mean over all units, its stderr from the pooled units, so a
        member with one scored sample still gives a stderr; lm-eval's
        default); ``weight_by_size: false`` the plain mean of the members'
        values, stderr propagated assuming independence (``weighted_mean``;
        None when a member has none).  An entry's ``filter_list`` (lm-eval's)
        names the members' ``metric,filter`` numbers to combine ("none": the
        plain metric).
        Members in ``absent`` (no samples in their data) are left out of
        both the check and the aggregate, and listed in ``absent_members``."""
        done: dict[str, dict[str, Aggregate] | None] = {}

        def expected(group: str) -> list[str]:
            return [t for t in members_of(group) if t not in self.absent]

        def score(group: str, seen: frozenset = frozenset()) -> dict[str, Aggregate] | None:
            if group in done:
                return done[group]
            info = groups.get(group) or {}
            members_all = expected(group)
            members = [t for t in members_all if t in self.tasks]
            if not members or len(members) < len(members_all):
                done[group] = None
                return None
            if info.get("aggregate_over", "tasks") == "members" and entries_of is not None:
                units = []
                for kind, name in entries_of(group):
                    if kind == "group" and name not in seen:
                        units.append(score(name, seen | {group}) or {})
                    elif kind == "task" and name not in self.absent:
                        units.append(self.tasks[name].metrics)
            else:
                units = [self.tasks[t].metrics for t in members]
            cell: dict[str, Aggregate] = {}
            for spec in info.get("aggregate") or []:
                names = group_metric_names(spec)
                if spec.get("filter_list") is None:  # lm-eval: every filter the members report it under
                    names += sorted({k for u in units for k in u if k.startswith(f"{spec['metric']},")})
                for metric in names:
                    parts = [u[metric] for u in units if metric in u and u[metric].value is not None]
                    if not parts and spec.get("filter_list") is not None:
                        continue  # a filter no member reports
                    by_size = bool(spec.get("weight_by_size", True))
                    if by_size:
                        cell[metric] = pooled_mean(parts)
                    else:
                        cell[metric] = weighted_mean([(Aggregate(a.value, a.stderr, a.n or 0), 1.0) for a in parts])
                    group_uncertainty(cell[metric], parts, by_size)
            done[group] = cell
            return cell

        for group in groups:
            members_all = expected(group)
            members = [t for t in members_all if t in self.tasks]
            absent = [t for t in members_of(group) if t in self.absent]
            if absent:
                self.absent_members[group] = absent
            else:
                self.absent_members.pop(group, None)
            if not members:
                continue
            if len(members) < len(members_all):
                self.partial_groups[group] = f"{len(members)}/{len(members_all)} tasks run" + (
                    f" ({len(absent)} absent: no samples)" if absent else "")
                self.groups.pop(group, None)
                self.group_counts.pop(group, None)
                self.group_members.pop(group, None)
                continue
            self.partial_groups.pop(group, None)
            self.groups[group] = score(group) or {}
            self.group_members[group] = list(members)
            self.group_counts[group] = {"samples": sum(self.tasks[t].samples for t in members),
                                        "errors": sum(self.tasks[t].errors for t in members)}

    # ------------------------------------------------------------ flat form
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": {name: {**flat_cells(r.metrics), **r.counts()} for name, r in self.tasks.items()},
            "groups": {name: {**flat_cells(cells), **self.group_counts.get(name, {})}
                       for name, cells in self.groups.items()},
            "breakdowns": {name: {dim: {value: {**flat_cells(cells), **r.breakdown_counts.get(dim, {}).get(value, {})}
                                        for value, cells in values.items()}
                                  for dim, values in r.breakdowns.items()}
                           for name, r in self.tasks.items() if r.breakdowns},
            "metrics": {name: {k: _info(i, r.metrics.get(k)) for k, i in r.info.items()}
                        for name, r in self.tasks.items() if r.info},
        }
        power = {name: {k: p.to_json() for k, p in r.power.items()} for name, r in self.tasks.items() if r.power}
        if power:
            out["power"] = power
        if self.partial_groups:
            out["partial_groups"] = dict(self.partial_groups)
        if self.absent:
            out["absent_tasks"] = dict(self.absent)
        if self.absent_members:
            out["absent_members"] = {g: list(ts) for g, ts in self.absent_members.items()}
        members = {g: list(ts) for g, ts in self.group_members.items() if g in self.groups}
        if members:
            out["group_members"] = members
        out["model"] = self.model
        out["judge_usage"] = dict(self.judge_usage)
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.judge_errors:
            out["judge_errors"] = {k: dict(v) for k, v in self.judge_errors.items()}
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def read(cls, run_dir: Path | str) -> "RunResults | None":
        """``RUN/results.json`` (:meth:`from_json`); None when the folder
        has none, or one that cannot be read as a JSON object (a killed
        write, a hand edit).  With :func:`results_document`, the one reader
        of the file."""
        data = results_document(run_dir).data
        return None if data is None else cls.from_json(data)

    @property
    def stopped(self) -> str | None:
        """Why the run ended before its end (a breaker, a stop signal,
        ``--max-cost``), as results.json records it; None for a whole run."""
        why = self.extra.get("stopped")
        return str(why) if why else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "RunResults":
        """Read a ``results.json`` document (tolerant: a run in progress, a
        hand-edited file).  A bare ``{task: {metric: ...}}`` mapping is read
        as the ``results`` block."""
        data = data if isinstance(data, Mapping) else {}
        inner = data.get("results")
        if not (isinstance(inner, Mapping) and all(isinstance(v, Mapping) for v in inner.values())):
            inner, data = data, {}
        tasks: dict[str, TaskResult] = {}
        breakdowns = given if isinstance(given := data.get("breakdowns"), Mapping) else {}
        for name, mapping in inner.items():
            if not isinstance(mapping, Mapping):
                continue
            counts = {k: _count(mapping.get(k)) or 0 for k in BOOKKEEPING}
            result = TaskResult(cells_of(mapping), counts["samples"], counts["errors"], counts["judge_failures"])
            dims = given if isinstance(given := breakdowns.get(name), Mapping) else {}
            for dim, values in dims.items():
                if isinstance(values, Mapping):
                    cells = {str(v): c for v, c in values.items() if isinstance(c, Mapping)}
                    result.breakdowns[str(dim)] = {v: cells_of(c) for v, c in cells.items()}
                    result.breakdown_counts[str(dim)] = {v: _counts_of(c) for v, c in cells.items() if _counts_of(c)}
            infos = (data.get("metrics") or {}).get(name) if isinstance(data.get("metrics"), Mapping) else None
            for key, d in (infos or {}).items() if isinstance(infos, Mapping) else ():
                info = MetricInfo.from_dict(d)
                if info is not None:
                    result.info[str(key)] = info
                    cell = result.metrics.get(str(key))
                    if cell is not None and isinstance(d.get("interval"), str):
                        cell.ci_method = d["interval"]
            powers = (data.get("power") or {}).get(name) if isinstance(data.get("power"), Mapping) else None
            for key, d in (powers or {}).items() if isinstance(powers, Mapping) else ():
                if (power := Power.from_json(d)) is not None:
                    result.power[str(key)] = power
            tasks[str(name)] = result
        groups_raw = given if isinstance(given := data.get("groups"), Mapping) else {}
        groups = {str(g): cells_of(c) for g, c in groups_raw.items() if isinstance(c, Mapping)}
        group_counts = {str(g): _counts_of(c) for g, c in groups_raw.items() if isinstance(c, Mapping) and _counts_of(c)}
        known = {"results", "groups", "breakdowns", "partial_groups", "model", "judge_usage", "metrics", "judge_errors",
                 "absent_tasks", "absent_members", "power", "group_members", "usage"}
        partial = given if isinstance(given := data.get("partial_groups"), Mapping) else {}
        usage = given if isinstance(given := data.get("judge_usage"), Mapping) else {}
        model = given if isinstance(given := data.get("model"), str) else None
        raw_errors = given if isinstance(given := data.get("judge_errors"), Mapping) else {}
        judge_errors = {str(k): dict(v) for k, v in raw_errors.items() if isinstance(v, Mapping)}
        absent = given if isinstance(given := data.get("absent_tasks"), Mapping) else {}
        absent_members = given if isinstance(given := data.get("absent_members"), Mapping) else {}
        group_members = given if isinstance(given := data.get("group_members"), Mapping) else {}
        run_usage = given if isinstance(given := data.get("usage"), Mapping) else {}
        return cls(tasks, groups, dict(partial), model, dict(usage),
                   {k: v for k, v in data.items() if k not in known}, group_counts, judge_errors,
                   {str(t): str(why) for t, why in absent.items()},
                   {str(g): [str(t) for t in ts] for g, ts in absent_members.items() if isinstance(ts, list)},
                   {str(g): [str(t) for t in ts] for g, ts in group_members.items() if isinstance(ts, list)},
                   dict(run_usage))


def results_document(run_dir: Path | str) -> JsonFile:
    """``RUN/results.json`` as written (the flat form): its object,
    missing, or why not (:class:`JsonFile`)."""
    return read_json_file(results_file(run_dir))


def _plural(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _counts_of(mapping: Mapping[str, Any]) -> dict[str, int]:
    return {k: n for k in ("samples", "errors") if (n := _count(mapping.get(k))) is not None}


def group_metric_names(spec: Mapping[str, Any]) -> list[str]:
    """The member metrics a group's aggregate entry combines: its metric,
    or with lm-eval's ``filter_list`` one ``metric,filter`` per filter
    ("none" is the plain metric)."""
    metric = str(spec["metric"])
    filters = spec.get("filter_list")
    if filters is None:
        return [metric]
    filters = [filters] if isinstance(filters, str) else list(filters)
    return [metric if f == "none" else f"{metric},{f}" for f in filters]


def flat_cells(cells: Mapping[str, Aggregate]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, agg in cells.items():
        out.update({name: agg.value, f"{name}_stderr": agg.stderr, f"{name}_n": agg.n})
        if agg.runs is not None:
            out[f"{name}_runs"] = list(agg.runs)
            out[f"{name}_run_std"] = agg.run_std
        if agg.clusters is not None:
            out[f"{name}_stderr_clustered"] = agg.stderr_clustered
            out[f"{name}_clusters"] = agg.clusters
        if agg.ci is not None:
            out[f"{name}_ci"] = [agg.ci[0], agg.ci[1]]
    return out


def _info(info: MetricInfo, cell: Aggregate | None) -> dict[str, Any]:
    """A metric's entry in the ``metrics`` block: its info, and how its interval was made."""
    out = info.as_dict()
    if cell is not None and cell.ci_method is not None:
        out["interval"] = cell.ci_method
    return out


def is_metric_key(key: str, mapping: Mapping[str, Any]) -> bool:
    """True when ``key`` of a flat mapping names a metric (module docstring)."""
    if key in BOOKKEEPING:
        return False
    for suffix in _COMPANIONS:
        if key.endswith(suffix) and key[: -len(suffix)] in mapping:
            return False
    value = mapping[key]
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def cells_of(mapping: Mapping[str, Any]) -> dict[str, Aggregate]:
    """The metric cells of one flat mapping, in file order."""
    out: dict[str, Aggregate] = {}
    for key in mapping:
        if isinstance(key, str) and is_metric_key(key, mapping):
            runs = mapping.get(f"{key}_runs")
            ci = mapping.get(f"{key}_ci")
            ends = [_number(x) for x in ci] if isinstance(ci, list) and len(ci) == 2 else []
            interval = (ends[0], ends[1]) if len(ends) == 2 and ends[0] is not None and ends[1] is not None else None
            out[key] = Aggregate(_number(mapping.get(key)), _number(mapping.get(f"{key}_stderr")),
                                 _count(mapping.get(f"{key}_n")),
                                 [_number(v) for v in runs] if isinstance(runs, list) else None,
                                 _number(mapping.get(f"{key}_stderr_clustered")),
                                 _count(mapping.get(f"{key}_clusters")),
                                 interval)
    return out


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _count(x: Any) -> int | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return int(x)

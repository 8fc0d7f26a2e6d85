"""Two runs' scores on the samples both scored, and the test of their
difference (``avhb report A B``; the estimators: ``avhb.score.stats``).

A run's per-sample scores come from its ``samples/<task>.jsonl`` (a
metric's score: its value under its own name in a line's ``scores``, a
number or a dict's ``score_key``, as :mod:`avhb.score.clusters` reads it),
or, for a baseline given as lmms-eval's samples file
(``<date>_samples_<task>.jsonl``, ``--log_samples``), from each line's
metric keys (``doc_id`` is the sample id: avhb numbers a task's samples the
same way when it has no ``doc_id`` field; lmms-eval logs one line per
document, paired with repeat 0).

Pairs are (task, sample id, repeat) that both runs scored (the score is a
number in both, the sample did not fail in either); the rest is left out
and counted.  A metric is compared on its pairs when in both runs its
value is the mean of its samples' scores (checked as
``avhb.score.uncertainty`` checks it: the same number, or 100 times it);
otherwise (a pair or corpus statistic, a group) the two aggregates are
compared through their standard errors, and the test says so.

Clusters: the task's ``cluster_key`` (the baseline's, else the other
run's), read from the baseline's line and else the run's; with repeats
in either run a sample's repeats are one cluster at least.

A group (results.json ``group_members``: the same tasks in both runs) is
compared on its member tasks' samples together (a pair is then (task,
sample id, repeat)), each sample's cluster found by its own task's key;
when its value is the pooled mean of those scores (``weight_by_size``),
else through the standard errors.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Iterator, Mapping

from avhb.errors import UserError
from avhb.runfolder.samples import SamplesFile
from avhb.score.aggregate import Aggregate
from avhb.score.clusters import MISSING, ClusterKey
from avhb.score.stats import UNPAIRED_Z, Difference, paired_test, plain_se, unpaired_test

Key = tuple[str, int]  # (sample id, repeat)
LMMS_SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")


UNRESOLVED: Any = object()  # a line whose cluster its task's key finds when it is compared


@dataclass
class Line:
    """What the comparison reads of one scored sample; ``cluster``: found
    already (a group's lines, each by its own task's key)."""

    doc: Mapping[str, Any]
    scores: Mapping[str, Any]
    cluster: Any = UNRESOLVED


@dataclass
class TaskLines:
    """One task's scored samples in one run, by (id, repeat); ``total``:
    every line read, ``failed``: lines with an error.  ``clustered``: for a
    group's lines (clusters found per line), whether any member clusters."""

    lines: dict[Key, Line] = field(default_factory=dict)
    total: int = 0
    failed: int = 0
    source: str = ""
    clustered: bool | None = None  # None: a task's lines (clusters found by the task's key)


def group_lines(members: list[tuple[str, TaskLines, ClusterKey]], metric: str) -> TaskLines:
    """A group's members' lines as one set, keyed (task + sample id, repeat),
    each line's cluster found by its own task's key for ``metric``."""
    out = TaskLines(source="+".join(task for task, _, _ in members), clustered=any(k.active for _, _, k in members))
    for task, lines, key in members:
        out.total += lines.total
        out.failed += lines.failed
        for (sid, rep), line in lines.lines.items():
            cluster = key.of_line(sid, line.doc, line.scores.get(metric)) if key.active else None
            if cluster is MISSING:
                cluster = ("missing", task, sid)
            out.lines[(f"{task}\x1f{sid}", rep)] = Line(line.doc, line.scores,
                                                         None if cluster is None else (task, cluster))
    return out


def read_samples_file(path: Path, id_key: str = "id") -> TaskLines:
    """Every line of a samples file (:class:`avhb.runfolder.samples.SamplesFile`)
    that did not fail (an ``error`` set); a file with a line that is not a
    sample is a UserError naming the file and line (a comparison made from
    part of a file would be silently wrong), as is a sample without
    ``id_key`` and a file that is not there."""
    out = TaskLines(source=str(path))
    source = SamplesFile(path)
    for line in source.lines():
        row = line.row
        if id_key not in row:
            raise UserError(f"{path} line {line.lineno}: not a sample line (no {id_key!r})")
        out.total += 1
        if row.get("error"):
            out.failed += 1
            continue
        repeat = row.get("repeat", 0)
        key = (str(row[id_key]), int(repeat) if isinstance(repeat, int) else 0)
        doc = given if isinstance(given := row.get("doc"), dict) else {}
        scores = given if isinstance(given := row.get("scores"), dict) else row
        out.lines[key] = Line(doc, scores)
    if source.missing:
        raise UserError(f"{path}: no such samples file")
    if source.bad:
        raise UserError(f"{source.bad_summary()} (a samples file half written? finish the run first)")
    return out


def read_lmms_samples(path: Path, metrics: list[str]) -> TaskLines:
    """An lmms-eval samples file as lines keyed (doc_id, 0), each line's
    scores the avhb metrics' values (``metrics``: avhb's names; lmms-eval
    logs ``metric,filter`` as ``metric``)."""
    raw = read_samples_file(path, id_key="doc_id")
    out = TaskLines(total=raw.total, failed=raw.failed, source=raw.source)
    for k, line in raw.lines.items():
        scores = {m: line.scores[lmms_metric(m)] for m in metrics if lmms_metric(m) in line.scores}
        out.lines[(k[0], 0)] = Line({}, scores)
    return out


def lmms_task_of(path: Path) -> str | None:
    """The task an lmms-eval samples file holds, from its name."""
    m = LMMS_SAMPLES.match(path.name)
    return m.group("task") if m else None


@dataclass
class Pairing:
    """One metric compared: the test (None when none could be made, ``why``
    then says why), what was paired and what was left out, and ``scale``
    (100 when the value is its scores' mean in percent)."""

    test: Difference | None
    why: str = ""
    paired: int = 0
    left_out_run: int = 0  # scored by the run, not by the baseline
    left_out_base: int = 0  # scored by the baseline, not by the run
    clusters_by: str = ""
    scale: float = 1.0
    bounded: bool = False  # the scores lie in [0, 1]: differences read as points

    @property
    def mde(self) -> float | None:
        return self.test.mde if self.test is not None else None


@dataclass
class _Column:
    values: dict[Key, float]
    mean: float | None
    bounded: bool


def _column(lines: TaskLines, metric: str, key: ClusterKey) -> _Column:
    values: dict[Key, float] = {}
    for k, line in lines.lines.items():
        x = key.score(line.scores.get(metric))
        if x is not None:
            values[k] = x
    xs = list(values.values())
    mean = math.fsum(xs) / len(xs) if xs else None
    return _Column(values, mean, bool(xs) and min(xs) >= 0.0 and max(xs) <= 1.0)


def _scale(agg: Aggregate | None, col: _Column) -> float | None:
    """1 or 100 when ``agg`` is the mean of the column's scores (or in percent)."""
    if agg is None or agg.value is None or col.mean is None or agg.n != len(col.values):
        return None
    for scale in (1.0, 100.0):
        if math.isclose(scale * col.mean, agg.value, rel_tol=1e-9, abs_tol=1e-12):
            return scale
    return None


def compare_metric(metric: str, run_cell: Aggregate | None, base_cell: Aggregate | None,
                   run_lines: TaskLines | None, base_lines: TaskLines | None,
                   run_key: ClusterKey, base_key: ClusterKey) -> Pairing:
    """The comparison of one metric of one task (module docstring)."""
    if run_cell is None or base_cell is None or run_cell.value is None or base_cell.value is None:
        return Pairing(None, "not in both runs")
    cols = None
    if run_lines is not None and base_lines is not None:
        run_col, base_col = _column(run_lines, metric, run_key), _column(base_lines, metric, base_key)
        scale = _scale(run_cell, run_col)
        if scale is not None and _scale(base_cell, base_col) == scale:
            cols = (run_col, base_col, scale)
    if cols is None:
        test = unpaired_test(run_cell.value, run_cell.best_stderr, base_cell.value, base_cell.best_stderr)
        why = "" if test is not None else "no per-sample scores and no standard error in both runs"
        return Pairing(test, why)
    run_col, base_col, scale = cols
    assert run_lines is not None and base_lines is not None
    keys = [k for k in base_col.values if k in run_col.values]
    spec = base_key.spec if base_key.spec is not None else run_key.spec
    key = ClusterKey(spec, base_key.score_key, base_key.by_sample or run_key.by_sample)
    clusters: list[Hashable] | None = None
    if base_lines.clustered is not None:  # a group's lines: each cluster found by its task's key
        clustered = bool(base_lines.clustered or run_lines.clustered)
        clusters = [_found(k, base_lines, run_lines) for k in keys] if clustered else None
        by = "each member task's cluster key" if clustered else ""
    elif key.active:
        clusters = [_cluster(key, k, metric, base_lines, run_lines) for k in keys]
        by = key.describe
    else:
        by = ""
    a = [run_col.values[k] for k in keys]
    b = [base_col.values[k] for k in keys]
    test = paired_test(a, b, clusters)
    out = Pairing(None, "", len(keys), len(run_col.values) - len(keys), len(base_col.values) - len(keys),
                  by, scale, run_col.bounded and base_col.bounded)
    if test is None:
        out.why = f"{len(keys)} pairs" + (" in fewer than two clusters" if clusters and len(keys) >= 2 else "")
        return out
    if scale != 1.0:
        test = _scaled(test, scale)
    out.test = test
    return out


def _found(k: Key, *sources: TaskLines) -> Hashable:
    for lines in sources:
        cluster = lines.lines[k].cluster
        if cluster is not None and cluster is not UNRESOLVED:
            return cluster
    return ("sample", k[0])


def _cluster(key: ClusterKey, k: Key, metric: str, *sources: TaskLines) -> Hashable:
    for lines in sources:
        line = lines.lines[k]
        found = key.of_line(k[0], line.doc, line.scores.get(metric))
        if found is not MISSING:
            return found
    return ("missing", k[0])


def _scaled(t: Difference, s: float) -> Difference:
    return Difference(t.method, s * t.difference, None if t.stderr is None else s * t.stderr,
                      None if t.ci is None else (s * t.ci[0], s * t.ci[1]), t.p, t.n, t.clusters, t.discordant,
                      t.correlation, t.df)


def lmms_cells(lines: TaskLines, metrics: list[str], key: ClusterKey) -> dict[str, Aggregate]:
    """An lmms-eval baseline's numbers: each metric's mean of its samples'
    scores, with their plain standard error."""
    out: dict[str, Aggregate] = {}
    for metric in metrics:
        xs = list(_column(lines, metric, key).values.values())
        if xs:
            out[metric] = Aggregate(math.fsum(xs) / len(xs), plain_se(xs), len(xs))
    return out


def lmms_metric(avhb_metric: str) -> str:
    """The key lmms-eval logs a metric under: avhb's ``metric,filter`` is
    lmms-eval's ``metric`` (its samples file is one filter's)."""
    return avhb_metric.partition(",")[0]


def iter_tests(pairings: Mapping[Any, Pairing]) -> Iterator[tuple[Any, Difference]]:
    for where, p in pairings.items():
        if p.test is not None:
            yield where, p.test


def is_unpaired(p: Pairing) -> bool:
    return p.test is not None and p.test.method == UNPAIRED_Z

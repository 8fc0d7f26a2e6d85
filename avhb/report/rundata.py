"""Loading a run folder (``run.json``, ``results.json``, ``samples/*.jsonl``,
read through :mod:`avhb.runfolder`) for reporting. Every part is optional:
a run in progress may lack ``results.json`` or have results for some tasks
only, and a samples file may hold lines that are not samples (a torn or
corrupt line: skipped). Problems are collected and listed, not raised;
only a missing run folder is a user error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.runfolder.json_file import JsonFile
from avhb.runfolder.layout import samples_files, task_of_samples_file
from avhb.runfolder.manifest import manifest_file
from avhb.runfolder.results import RunResults, results_document
from avhb.runfolder.samples import SampleLine, SamplesFile, SamplesUnreadable


@dataclass
class TaskSamples:
    """Samples of one task as kept for the report: each kept row parsed,
    and its samples-file line (the JSON the page embeds)."""

    rows: list[dict[str, Any]]
    total: int  # samples in the file
    shown: int  # len(rows)
    lines: list[str] = field(default_factory=list)  # rows[i] as JSON text (the file's own line)


@dataclass
class RunData:
    path: Path
    run: dict[str, Any]
    results: dict[str, Any]
    samples: dict[str, TaskSamples]
    problems: list[str] = field(default_factory=list)

    @cached_property
    def typed(self) -> RunResults:
        """``results.json`` read once into typed results."""
        return RunResults.from_json(self.results)

    @property
    def report_hints(self) -> dict[str, dict[str, Any]]:
        """Each task's YAML ``report`` block (how its charts are drawn), from run.json."""
        tasks = given if isinstance(given := self.run.get("tasks"), dict) else {}
        out = {}
        for name, info in tasks.items():
            hint = ((info or {}).get("config") or {}).get("report") if isinstance(info, dict) else None
            if isinstance(hint, dict):
                out[name] = hint
        return out

    @property
    def task_results(self) -> dict[str, Any]:
        return self.typed.tasks

    @property
    def task_names(self) -> list[str]:
        """Tasks in results order, then tasks only configured in run.json,
        then tasks that only have samples."""
        names = list(self.task_results)
        tasks = self.run.get("tasks")
        if isinstance(tasks, dict):
            names += [t for t in tasks if t not in names]
        names += [t for t in self.samples if t not in names]
        return names

    @property
    def label(self) -> str:
        """The model label: results.json ``model``, else run.json model name,
        else the folder name."""
        label = self.results.get("model")
        if isinstance(label, str) and label:
            return label
        model = self.run.get("model")
        if isinstance(model, dict) and isinstance(model.get("name"), str) and model["name"]:
            return model["name"]
        return self.path.name


def _document(got: JsonFile, problems: list[str]) -> dict[str, Any]:
    """A run folder's JSON file for the report: {} when missing; one that
    cannot be read is a problem listed, and {}."""
    if got.problem is not None:
        problems.append(f"{got.path.name}: {got.problem}")
    return got.data or {}


def _needs_attention(row: dict[str, Any]) -> bool:
    if row.get("error"):
        return True
    judgements = row.get("judgements")
    if isinstance(judgements, dict):
        return any(isinstance(j, dict) and j.get("ok") is False for j in judgements.values())
    return False


# An "error" or "ok" key whose value is not plain null / true: the line may
# need attention, so it is parsed.  A JSON string cannot hold an unescaped
# quote, so these can only match keys.
_MAYBE_FLAGGED = re.compile(rb'"error"\s*:(?!\s*null\b)|"ok"\s*:(?!\s*true\b)')


def read_samples(path: Path, limit: int | None, problems: list[str]) -> TaskSamples:
    """Read one ``samples/<task>.jsonl`` (:class:`avhb.runfolder.samples.SamplesFile`;
    its bad lines are listed in ``problems``). With ``limit``, keep every
    sample with an error or a failed judgement, then fill up to ``limit``
    with the others in file order (errors always stay findable).  Once
    ``limit`` ordinary samples are kept, a whole line with no error and no
    failed judgement is counted without being parsed."""
    parsed = 0
    others_kept = 0
    flagged: list[SampleLine] = []
    ordinary: list[SampleLine] = []
    maybe_flagged = _MAYBE_FLAGGED.search
    cap = limit or 0

    def parse(raw: bytes) -> bool:  # ``limit`` ordinary samples kept: the rest parsed only when maybe flagged
        return others_kept < cap or maybe_flagged(raw) is not None

    source = SamplesFile(path)
    try:
        for line in source.lines(parse=None if limit is None else parse):
            parsed += 1
            if _needs_attention(line.row):
                flagged.append(line)
            elif limit is None or others_kept < limit:
                ordinary.append(line)
                others_kept += 1
    except SamplesUnreadable as exc:
        problems.append(f"samples/{path.name}: unreadable ({exc.reason})")
        return TaskSamples([], 0, 0)
    finally:
        problems.extend(f"samples/{path.name} line {bad.lineno}: {bad.why} (skipped)" for bad in source.bad)
    total = parsed + source.passed_over
    if limit is not None:
        room = max(limit - len(flagged), 0)
        ordinary = ordinary[:room]
    kept = sorted(flagged + ordinary, key=lambda line: line.lineno)
    return TaskSamples([line.row for line in kept], total, len(kept), [line.text for line in kept])


def load_run(run_dir: Path, *, with_samples: bool = True, max_samples_per_task: int | None = None) -> RunData:
    """Read whatever of a run folder exists."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    problems: list[str] = []
    run = _document(manifest_file(run_dir), problems)
    results = _document(results_document(run_dir), problems)
    samples: dict[str, TaskSamples] = {}
    if with_samples:
        known = [*((results.get("results") or {}) if isinstance(results.get("results"), dict) else {}),
                 *((run.get("tasks") or {}) if isinstance(run.get("tasks"), dict) else {})]
        for path in samples_files(run_dir):
            samples[task_of_samples_file(path, known)] = read_samples(path, max_samples_per_task, problems)
    return RunData(run_dir, run, results, samples, problems)

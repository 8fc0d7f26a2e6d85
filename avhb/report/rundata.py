"""Loading a run folder (``run.json``, ``results.json``, ``samples/*.jsonl``)
for reporting. Every part is optional: a run in progress may lack
``results.json`` or have results for some tasks only, and the last line of
a samples file may be half written. Problems are collected, not raised;
only a missing run folder is a user error.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.runfolder.results import RunResults


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


def _read_json(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name}: not a JSON object")
        return {}
    return data


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
_MAYBE_FLAGGED = re.compile(r'"error"\s*:(?!\s*null\b)|"ok"\s*:(?!\s*true\b)')


def read_samples(path: Path, limit: int | None, problems: list[str]) -> TaskSamples:
    """Parse one ``samples/<task>.jsonl``. With ``limit``, keep every sample
    with an error or a failed judgement, then fill up to ``limit`` with the
    others in file order (errors always stay findable).  Once ``limit``
    ordinary samples are kept, a whole line (``{...}`` and its newline) with
    no error and no failed judgement is counted without being parsed."""
    total = 0
    others_kept = 0
    flagged: list[tuple[int, dict[str, Any], str]] = []
    ordinary: list[tuple[int, dict[str, Any], str]] = []
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        problems.append(f"samples/{path.name}: unreadable ({exc})")
        return TaskSamples([], 0, 0)
    maybe_flagged = _MAYBE_FLAGGED.search
    with fh:
        for lineno, line in enumerate(fh, 1):
            if limit is not None and others_kept >= limit and line[:1] == "{" and line[-2:] == "}\n" \
                    and not maybe_flagged(line):
                total += 1
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                problems.append(f"samples/{path.name} line {lineno}: not JSON (skipped)")
                continue
            if not isinstance(row, dict):
                problems.append(f"samples/{path.name} line {lineno}: not an object (skipped)")
                continue
            total += 1
            if _needs_attention(row):
                flagged.append((total, row, line))
            elif limit is None or others_kept < limit:
                ordinary.append((total, row, line))
                others_kept += 1
    if limit is not None:
        room = max(limit - len(flagged), 0)
        ordinary = ordinary[:room]
    kept = sorted(flagged + ordinary, key=lambda t: t[0])
    return TaskSamples([r for _, r, _ in kept], total, len(kept), [line.rstrip() for _, _, line in kept])


def load_run(run_dir: Path, *, with_samples: bool = True, max_samples_per_task: int | None = None) -> RunData:
    """Read whatever of a run folder exists."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    problems: list[str] = []
    run = _read_json(run_dir / "run.json", problems)
    results = _read_json(run_dir / "results.json", problems)
    samples: dict[str, TaskSamples] = {}
    sdir = run_dir / "samples"
    if with_samples and sdir.is_dir():
        known = [*((results.get("results") or {}) if isinstance(results.get("results"), dict) else {}),
                 *((run.get("tasks") or {}) if isinstance(run.get("tasks"), dict) else {})]
        for path in sorted(sdir.glob("*.jsonl")):
            samples[task_of_file(path.stem, known)] = read_samples(path, max_samples_per_task, problems)
    return RunData(run_dir, run, results, samples, problems)


def task_of_file(stem: str, known: list[str]) -> str:
    """The task a ``samples/<stem>.jsonl`` file holds: the run folder writes
    ``mypack/shapes_color`` as ``mypack__shapes_color``."""
    for name in known:
        if name.replace("/", "__") == stem:
            return name
    return stem

"""A run folder in lm-evaluation-harness's output shape, so the scripts and
viewers written for lm-eval (leaderboard tables, ``make_table``, the Zeno
uploader, Hub "details" datasets) read avhb runs.

    <out>/<model_name_sanitized>/results_<date>.json
    <out>/<model_name_sanitized>/samples_<task>_<date>.jsonl

as lm-eval 0.4.13's ``EvaluationTracker`` lays them out under
``--output_path``: ``<date>`` is an ISO time with ``:`` spelled ``-``
(here the run's last update, in UTC, so exporting the same run twice gives
the same names), the model folder is the model's name with lm-eval's
``sanitize_model_name`` applied.  ``results.json`` stays as it is; this is
a second view of the same numbers.

What the results document holds (lm-eval's ``EvalResults`` keys):
``results`` (tasks and groups: ``alias``, ``name``, ``sample_len``,
``<metric>,<filter>`` and ``<metric>_stderr,<filter>``; ``none`` is the
filter of a metric avhb reports without one; a stderr avhb does not have is
``"N/A"``, as lm-eval writes it; a metric with no value is left out),
``groups``, ``group_subtasks``, ``configs`` (the resolved avhb task config,
its ``metric_list`` given as lm-eval entries ``{metric, higher_is_better}``
of the reported metrics, ``output_type`` defaulting to ``generate_until``),
``versions`` (``metadata.version``), ``n-shot`` (``num_fewshot``, else 0),
``higher_is_better``, ``n-samples`` (``original``: the task's documents,
``effective``: those run), ``config`` (model, model args with secrets
redacted, batch size, limit, generation settings, seeds), ``date``,
``task_hashes`` (lm-eval's definition: the hash of every exported sample's
``doc_hash + prompt_hash + target_hash``), ``model_source``, ``model_name``,
``model_name_sanitized``, ``system_instruction`` and its sha,
``fewshot_as_multiturn``, ``total_evaluation_time_seconds``.  Counts
(``samples``, ``errors``, ``judge_failures``, count outputs) are not
metrics in lm-eval's sense and stay in ``results.json``.

A samples line (lm-eval's ``SampleResult``): ``doc_id`` (the sample's
position in the task, 0-based), ``doc``, ``target`` (a string),
``arguments`` (``{"gen_args_0": {"arg_0": prompt, "arg_1": generation
settings}}``), ``resps`` (``[[reply of each repeat]]``), ``filtered_resps``
(the reply after avhb's filters, one per repeat), ``filter`` (``none``),
``metrics`` and each metric's per-sample value (the mean over repeats; a
metric computed over the whole task, such as a pair accuracy, has ``null``
here), ``doc_hash``, ``prompt_hash``, ``target_hash`` (SHA-256 as lm-eval
computes them).  A sample that failed outside the model (excluded from
avhb's metrics, counted in ``errors``) is left out; ``samples/<task>.jsonl``
keeps it.  A task named with a plugin namespace (``mypack/task``) is
``mypack__task`` in every key and file name (a file name holds no ``/``;
lm-eval's tools match the two), its ``alias`` the original name.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from avhb.errors import UserError
from avhb.redact import redact
from avhb.runfolder.folder import write_atomic, write_json_atomic
from avhb.runfolder.results import RunResults, results_document
from avhb.runfolder.samples import SamplesFile
from avhb.score.metric import DIAGNOSTIC, HEADLINE

NO_FILTER = "none"


@dataclass
class LmEvalExport:
    results: dict[str, Any]  # the results_<date>.json document
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # task (file form) -> lines
    model_dir: str = ""  # model_name_sanitized
    date_id: str = ""

    def paths(self, out: Path) -> dict[str, Path]:
        """Where each file goes under ``out`` ("results", then one per task)."""
        folder = Path(out) / self.model_dir
        return {"results": folder / f"results_{self.date_id}.json",
                **{task: folder / f"samples_{task}_{self.date_id}.jsonl" for task in self.samples}}


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``sanitize_model_name``: path-unsafe runs become ``__``."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def task_key(name: str) -> str:
    """A task or group name as the export spells it (no ``/``)."""
    return name.replace("/", "__")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def metric_key(metric: str, suffix: str = "") -> str:
    """``exact_match`` -> ``exact_match,none``; a name that already names
    its filter (``exact_match,strict-match``) keeps it."""
    name, sep, filt = metric.partition(",")
    return f"{name}{suffix},{filt if sep else NO_FILTER}"


def build_export(run_dir: Path, with_samples: bool = True) -> LmEvalExport:
    """The lm-eval view of a finished (or partly finished) run folder."""
    from avhb.runfolder.manifest import read_manifest

    run_dir = Path(run_dir)
    run = read_manifest(run_dir)
    got = results_document(run_dir)
    if got.missing:
        raise UserError(f"{run_dir}: no results.json (not a finished run folder)")
    if got.data is None:
        raise UserError(f"{got.path} is not valid JSON")
    raw = got.data
    typed = RunResults.from_json(raw)
    tasks_info = given if isinstance(given := run.get("tasks"), dict) else {}
    model = given if isinstance(given := run.get("model"), dict) else {}
    name = str(model.get("name") or model.get("kind") or "model")
    gen_kwargs = run.get("gen_kwargs") or {}

    samples: dict[str, list[dict[str, Any]]] = {}
    hashes: dict[str, str] = {}
    effective: dict[str, int] = {}
    per_sample: dict[str, set[str]] = {}
    for task in typed.tasks:
        config = (tasks_info.get(task) or {}).get("config") or {}
        rows = _rows(run_dir, task)
        lines = list(_sample_lines(rows, config, gen_kwargs))
        per_sample[task] = {m for line in lines for m in line["metrics"]}
        effective[task] = len({str(r.get("id")) for r in rows})
        hashes[task_key(task)] = sha256("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines))
        if with_samples:
            samples[task_key(task)] = lines

    results: dict[str, Any] = {}
    higher: dict[str, dict[str, bool | None]] = {}
    configs: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    n_shot: dict[str, int] = {}
    n_samples: dict[str, dict[str, int]] = {}
    for task, result in typed.tasks.items():
        key = task_key(task)
        cells = {m: a for m, a in result.ordered((HEADLINE, DIAGNOSTIC)).items() if a.value is not None}
        results[key] = _cell_block(key, task, effective[task], cells)
        higher[key] = {m.partition(",")[0]: (result.info[m].higher_is_better if m in result.info else None)
                       for m in cells}
        info = tasks_info.get(task) or {}
        config = dict(info.get("config") or {})
        config["metric_list"] = [{"metric": m.partition(",")[0], "higher_is_better": higher[key][m.partition(",")[0]],
                                  **({"aggregation": "mean"} if m in per_sample.get(task, ()) else {})}
                                 for m in dict.fromkeys(cells)]
        config.setdefault("output_type", "generate_until")
        configs[key] = config
        for line in samples.get(key, []):  # every listed metric has a per-sample column (None: task-level only)
            for entry in config["metric_list"]:
                line.setdefault(entry["metric"], None)
        versions[key] = (config.get("metadata") or {}).get("version") if isinstance(config.get("metadata"), dict) else None
        n_shot[key] = int(config.get("num_fewshot") or 0)
        original = info.get("docs")
        n_samples[key] = {"original": int(original) if isinstance(original, int) else effective[task],
                          "effective": effective[task]}
    groups: dict[str, Any] = {}
    subtasks = _group_members(run, list(typed.groups))
    for group, cells_all in typed.groups.items():
        key = task_key(group)
        cells = {m: a for m, a in cells_all.items() if a.value is not None}
        members = [task_key(t) for t in subtasks.get(group, [])]
        block = _cell_block(key, group, sum(results[m]["sample_len"] for m in members if m in results), cells)
        groups[key] = block
        results[key] = block
        member_dirs = [higher[m] for m in members if m in higher]
        higher[key] = {m.partition(",")[0]: _agreed([d.get(m.partition(",")[0]) for d in member_dirs]) for m in cells}
        shots = {n_shot[m] for m in members if m in n_shot}
        if len(shots) == 1:
            n_shot[key] = shots.pop()
        versions[key] = None

    created, updated = _time(run.get("created")), _time(run.get("updated"))
    seeds = given if isinstance(given := run.get("seeds"), list) and len(given) == 4 else [run.get("seed")] * 4
    system = run.get("system_instruction")
    document: dict[str, Any] = {
        "results": results,
        **({"groups": groups} if groups else {}),
        "group_subtasks": {task_key(g): [task_key(t) for t in ts] for g, ts in subtasks.items()},
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted(versions.items())),
        "n-shot": dict(sorted(n_shot.items())),
        "higher_is_better": dict(sorted(higher.items())),
        "n-samples": n_samples,
        "config": {
            "model": str(model.get("kind") or ""), "model_args": redact(dict(model.get("args") or {})),
            "batch_size": run.get("batch_size"), "batch_sizes": [], "device": None, "use_cache": None,
            "limit": run.get("limit"), "gen_kwargs": gen_kwargs, "random_seed": seeds[0], "numpy_seed": seeds[1],
            "torch_seed": seeds[2], "fewshot_seed": seeds[3],
        },
        "date": created.timestamp() if created else None,
        "task_hashes": hashes,
        "model_source": str(model.get("kind") or ""),
        "model_name": name,
        "model_name_sanitized": sanitize_model_name(name),
        "system_instruction": system,
        "system_instruction_sha": sha256(system) if system else None,
        "fewshot_as_multiturn": run.get("fewshot_as_multiturn"),
        "chat_template": None,
        "chat_template_sha": None,
        "total_evaluation_time_seconds": str((updated - created).total_seconds()) if created and updated else None,
    }
    when = (updated or created or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(tzinfo=None)
    date_id = when.isoformat(timespec="microseconds").replace(":", "-")
    return LmEvalExport(document, samples, sanitize_model_name(name), date_id)


def write_export(export: LmEvalExport, out: Path, replace: bool = False) -> list[Path]:
    """Write the files under ``out``; ``replace`` first removes earlier
    exports in the same model folder (used inside a run folder, which keeps
    one export of itself; elsewhere exports accumulate, newest last, as
    lm-eval's do)."""
    paths = export.paths(out)
    folder = paths["results"].parent
    if replace and folder.is_dir():
        for old in [*folder.glob("results_*.json"), *folder.glob("samples_*.jsonl")]:
            if old not in paths.values():
                old.unlink()
    write_json_atomic(paths["results"], export.results)
    for task, lines in export.samples.items():
        write_atomic(paths[task], lambda fh: fh.writelines(  # called at once: this task's lines
            json.dumps(redact(line), ensure_ascii=False, default=str) + "\n" for line in lines))
    return list(paths.values())


def export_run(run_dir: Path, out: Path | None = None) -> list[Path]:
    """``avhb export RUN --format lm-eval [--output DIR]``; inside the run
    folder by default."""
    run_dir = Path(run_dir)
    target = Path(out) if out is not None else run_dir
    return write_export(build_export(run_dir), target, replace=target.resolve() == run_dir.resolve())


# ---------------------------------------------------------------- pieces
def _cell_block(key: str, alias: str, n: int, cells: dict) -> dict[str, Any]:
    block: dict[str, Any] = {"alias": alias, "name": key, "sample_len": int(n)}
    for metric, agg in cells.items():
        block[metric_key(metric)] = agg.value
        block[metric_key(metric, "_stderr")] = "N/A" if agg.stderr is None else agg.stderr
    return block


def _agreed(values: list[bool | None]) -> bool | None:
    """A group's direction: its members' when they agree (lm-eval's rule)."""
    known = {v for v in values}
    return known.pop() if len(known) == 1 else None


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def _rows(run_dir: Path, task: str) -> list[dict[str, Any]]:
    """The task's samples; a line that is not a sample refuses the export
    (its files would leave that sample out while its numbers count it)."""
    source = SamplesFile.of(run_dir, task)
    rows = list(source.rows())
    if source.bad:
        raise UserError(f"{source.bad_summary()} (the lm-eval files would leave that sample out; rerun the run's "
                        "command to write its samples file again)")
    return rows


def _sample_lines(samples: list[dict[str, Any]], config: dict[str, Any],
                  gen_kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One lm-eval samples line per sample (its repeats together), in the
    samples file's order; failed samples left out."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    order: dict[str, int] = {}
    for row in samples:
        sid = str(row.get("id"))
        order.setdefault(sid, len(order))
        by_id.setdefault(sid, []).append(row)
    generation = {**(config.get("generation_kwargs") or {}), **gen_kwargs}
    for sid, rows in by_id.items():
        if any(r.get("error") for r in rows):
            continue
        rows.sort(key=lambda r: int(r.get("repeat") or 0))
        first = rows[0]
        prompt = str(first.get("prompt") or "")
        target = first.get("target")
        doc = given if isinstance(given := first.get("doc"), dict) else {}
        scores: dict[str, list[float]] = {}
        for r in rows:
            for m, v in (r.get("scores") or {}).items():
                if isinstance(v, (int, float)):  # bools too: a per-sample hit counts as 1.0
                    scores.setdefault(m, []).append(float(v))
        line = {
            "doc_id": order[sid],
            "doc": doc,
            "target": "" if target is None else str(target),
            "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": generation}},
            "resps": [[str(r.get("response") or "") for r in rows]],
            "filtered_resps": [_filtered(r) for r in rows],
            "filter": NO_FILTER,
            "metrics": list(scores),
            "doc_hash": sha256(json.dumps(doc, indent=2, default=str, ensure_ascii=False)),
            "prompt_hash": sha256(prompt),
            "target_hash": sha256("" if target is None else str(target)),
        }
        for m, values in scores.items():
            line[m] = sum(values) / len(values)
        yield line


def _filtered(row: dict[str, Any]) -> str:
    extracted = row.get("extracted")
    if extracted is None:
        return str(row.get("response") or "")
    return extracted if isinstance(extracted, str) else json.dumps(extracted, ensure_ascii=False, default=str)


def _group_members(run: dict[str, Any], groups: list[str]) -> dict[str, list[str]]:
    """Each scored group's member tasks, from the task index (the run's
    ``--include_path`` folders added first)."""
    if not groups:
        return {}
    from avhb.taskdef.include_path import add_include_path
    from avhb.taskdef.index import build_index

    for folder in run.get("include_paths") or []:
        add_include_path(folder)
    index = build_index()
    return {g: index.group_members(g) if g in index.groups else [] for g in groups}

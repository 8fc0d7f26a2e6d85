"""``run.json``: the command, the resolved configuration, versions, task
hashes and notes; what ``avhb score`` and pack commands read back."""
from __future__ import annotations

import hashlib
import json
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from avhb.errors import UserError
from avhb.options import DEFAULT_MAX_ERRORS, DEFAULT_SEED, RunOptions, SampleSlice
from avhb.runfolder.json_file import JsonFile, read_json_file
from avhb.runfolder.layout import run_file
from avhb.version import __version__


def task_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build_manifest(existing: dict[str, Any] | None, options: Any, tasks: list[Any], sources: dict[str, Any],
                   plans: dict[str, Any], model: dict[str, Any] | None, judges: dict[str, list[str]],
                   plugins: dict[str, str], notes: list[str],
                   judge_identities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run.json document.  ``model`` is the backend's description with
    its identity (``None`` under ``avhb score``: the recorded one is kept);
    ``judge_identities``: each judge's identity by label (what ``avhb merge``
    replays judges under).  A folder that holds another shard is refused;
    other settings are compared by :mod:`avhb.resume.setting_kinds` (the evaluator's
    ``_settle``)."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    info = {
        "command": options.command,
        "created": (existing or {}).get("created") or now,
        "updated": now,
        "avhb_version": __version__,
        "model": model if model is not None else (existing or {}).get("model"),
        "judges": judges,
        "judge_args": options.judge_args,
        "tasks": {t.name: {"hash": task_hash(t.cfg.config), "file": str(t.cfg.file),
                           "data": sources[t.name].to_json(),
                           "media": plans[t.name].spec.to_key(),
                           "config": t.cfg.config} for t in tasks},
        "plugins": plugins,
        "versions": versions(),
        "seed": options.seed, "limit": options.limit, "samples": options.samples, "repeats": options.repeats,
        "ablations": list(options.ablations), "predict_only": options.predict_only,
        "media": options.media, "gen_kwargs": options.gen_kwargs,
        "data": {k: str(v) for k, v in options.data.items()}, "sample_data": options.sample_data,
        "include_paths": list(options.include_paths),
        # avhb score sends nothing: the batch size the calls were made with stays recorded
        "batch_size": (existing or {}).get("batch_size") if options.score_only else options.batch_size,
        "max_errors": options.max_errors,
        "num_fewshot": options.num_fewshot, "fewshot_as_multiturn": options.fewshot_as_multiturn,
        "fewshot_seed": options.fewshot_seed,
        "notes": notes,
    }
    shard = getattr(options, "shard", None)
    if shard is not None:
        info["shard"] = shard.to_json()
    identities = {**((existing or {}).get("judge_identities") or {}), **(judge_identities or {})}
    if identities:
        info["judge_identities"] = identities
    for key in ("merged_from", "finished", "previous", "invocations"):  # kept across resumes (finished: avhb.resume.finished)
        if existing is not None and key in existing:
            info[key] = existing[key]
    before_shard = (existing or {}).get("shard")
    if existing and (before_shard or None) != (info.get("shard") or None):
        was = f"shard {before_shard['index']}/{before_shard['count']}" if before_shard else "an unsharded run"
        now = f"shard {shard.label}" if shard is not None else "an unsharded run"
        raise UserError(f"{options.output_dir} holds {was}, not {now}; use another --output-dir")
    return info


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("numpy", "av", "decord", "datasets", "openai", "litellm", "vllm", "faster-whisper", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def manifest_file(run_dir: Path | str) -> JsonFile:
    """``RUN/run.json`` read: its object, missing, or why not (:class:`JsonFile`)."""
    return read_json_file(run_file(run_dir))


def read_manifest(run_dir: Path | str) -> dict[str, Any]:
    """A run folder's ``run.json`` (a ``UserError`` when there is none or
    it cannot be read)."""
    got = manifest_file(run_dir)
    if got.missing:
        raise UserError(f"{run_dir}: no run.json (not a run folder)")
    if got.data is None:
        raise UserError(f"{got.path} is not valid JSON")
    return got.data


def recorded_manifest(run_dir: Path | str) -> dict[str, Any] | None:
    """``run.json`` as a re-run reads it: None when the folder has none or
    one that cannot be read (a run into it starts afresh and writes a new one)."""
    return manifest_file(run_dir).data


def options_from_run(run_dir: Path, judge_args: list[str] | None = None, score_only: bool = True,
                     shard_from_json: Callable[[Any], SampleSlice | None] | None = None) -> RunOptions:
    """The options a finished run was made with, as its run.json records
    them (``judge_args`` replaces its ``--judge`` flags when given): what
    ``avhb score`` and pack commands (CURVE's diagnosis) run under.
    ``shard_from_json`` reads the recorded ``--shard`` back
    (:meth:`avhb.cluster.shard.Shard.from_json`, given by ``avhb score``);
    without it the options have none, and a run into a shard's folder is
    refused (:func:`avhb.runfolder.manifest.build_manifest`)."""
    from avhb.model.backend import parse_backend_spec
    from avhb.score.judges import parse_judge_bindings

    run = read_manifest(run_dir)
    from avhb.taskdef.include_path import add_include_path

    for folder in run.get("include_paths") or []:  # the run's --include_path folders, again
        add_include_path(folder)
    model = run.get("model") or {}
    judge_args = list(judge_args or run.get("judge_args") or [])
    return RunOptions(
        tasks=list(run.get("tasks") or {}), model=parse_backend_spec(f"{model.get('kind')}:{model.get('name')}"),
        output_dir=Path(run_dir), judges=parse_judge_bindings(judge_args), judge_args=judge_args,
        data={k: Path(v) for k, v in (run.get("data") or {}).items()}, sample_data=bool(run.get("sample_data")),
        limit=run.get("limit"), samples=run.get("samples"), seed=int(run.get("seed", DEFAULT_SEED)), repeats=run.get("repeats"),
        ablations=tuple(run.get("ablations") or ()), media=run.get("media") or {}, gen_kwargs=run.get("gen_kwargs") or {},
        score_only=score_only, command=run.get("command", []), include_paths=list(run.get("include_paths") or []),
        shard=shard_from_json(run.get("shard")) if shard_from_json else None, system_instruction=run.get("system_instruction"),
        seeds=tuple(run["seeds"]) if isinstance(run.get("seeds"), list) else None,
        max_errors=str(run.get("max_errors") or DEFAULT_MAX_ERRORS), num_fewshot=run.get("num_fewshot"),
        fewshot_as_multiturn=run.get("fewshot_as_multiturn", True), fewshot_seed=run.get("fewshot_seed"))

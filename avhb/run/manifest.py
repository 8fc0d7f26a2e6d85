"""``run.json``: the command, the resolved configuration, versions, task
hashes and notes; what ``avhb score`` and pack commands read back."""
from __future__ import annotations

import hashlib
import json
import platform
import sys
from datetime import datetime, timezone
from typing import Any

from avhb.version import __version__
from avhb.errors import UserError


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
    other settings are compared by :mod:`avhb.run.settings` (the evaluator's
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
    for key in ("merged_from", "finished", "previous", "invocations"):  # kept across resumes (finished: avhb.run.finished)
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

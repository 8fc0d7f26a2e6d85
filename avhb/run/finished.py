"""A finished task is not run again.

When every sample of a task finished without an error (and no judge
verdict failed), the evaluator records in ``run.json`` (``finished``) the
task's *fingerprint*: a hash of everything its samples and results depend
on — the task's config and its pack's files (hooks, bases, prompts: size, mtime), the data
(kind, root, revision, and the size and mtime of every file under the
root), the model's and the judges' identities, the options that select and
shape samples (limit, samples, seed, repeats, shard, ablations, media,
generation settings, predict-only) and the avhb and plugin versions — with
the size and mtime of the task's samples file.

Re-running the same command finds the fingerprint unchanged and the samples
file untouched: it keeps that task's results from ``results.json``, sends
nothing and reads no journal.  The run still loads each task's samples
before it checks (they are read before any model call, for the run's
notes), so resuming a finished 100,000-sample run takes about 3 s, not
start-up alone (``benchmarks/scale.py``).  Any change
(another judge, an edited data file or hook, another avhb) runs the task
again, through the journal, which still answers every call already made.  A
task with failed samples is never recorded, so a re-run retries them;
``avhb score`` and ``avhb merge`` always score again.  A data folder with
more than ``MAX_DATA_FILES`` files is not fingerprinted (its tasks always
run again through the journal).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

MAX_DATA_FILES = 200_000


def _tree(root: Path) -> list[Any] | None:
    """(relative path, size, mtime) of every file under ``root`` (or of
    ``root`` itself); None past ``MAX_DATA_FILES``."""
    try:
        st = root.stat()
    except OSError:
        return ["missing"]
    if not root.is_dir():
        return [[root.name, st.st_size, st.st_mtime_ns]]
    out: list[Any] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=True):
                    stack.append(Path(entry.path))
                    continue
                info = entry.stat()
            except OSError:
                continue
            out.append([os.path.relpath(entry.path, root), info.st_size, info.st_mtime_ns])
            if len(out) > MAX_DATA_FILES:
                return None
    return out


# the pack files a task's behaviour can depend on: hook modules (any depth), YAML bases, prompt files
_PACK_SUFFIXES = (".py", ".yaml", ".yml", ".txt", ".j2", ".jinja", ".json", ".md")
_PACK_SKIP = {"__pycache__", "sample"}  # byte code; sample data (fingerprinted as data when it is the data)


def _pack_files(pack_dir: Path) -> list[Any]:
    """[relative path, size, mtime_ns] of the pack's own files, so that an
    edited hook, base or judge prompt anywhere in the pack re-runs the task."""
    out = []
    for path in sorted(Path(pack_dir).rglob("*")):
        rel = path.relative_to(pack_dir)
        if path.suffix not in _PACK_SUFFIXES or _PACK_SKIP.intersection(rel.parts):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        out.append([str(rel), st.st_size, st.st_mtime_ns])
    return out


def fingerprint(task: Any, source: Any, plan: Any, options: Any, model: dict[str, Any],
                judges: dict[str, Any], versions: dict[str, str]) -> str | None:
    """The task's fingerprint (module docstring); None when it cannot be
    taken (a data folder too large to list)."""
    from avhb import __version__
    from avhb.run.manifest import task_hash

    data = _tree(Path(source.root))
    if data is None:
        return None
    shard = getattr(options, "shard", None)
    payload = {
        "task": task_hash(task.cfg.config), "pack": _pack_files(task.pack_dir),
        "data": [source.kind, str(source.root), source.revision, data],
        "model": model, "judges": judges, "media": plan.key(),
        "options": [options.limit, options.samples, options.seed, options.repeats, options.predict_only,
                    options.gen_kwargs, shard.label if shard else None,  # media and ablations: in plan.key()
                    *([options.system_instruction] if getattr(options, "system_instruction", None) else [])],
        "versions": [__version__, versions],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def file_stamp(path: Path) -> list[int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def is_finished(recorded: dict[str, Any], task: str, fp: str | None, samples: Path) -> bool:
    """Whether ``run.json``'s ``finished`` entry for ``task`` matches."""
    entry = (recorded.get("finished") or {}).get(task)
    if fp is None or not isinstance(entry, dict) or entry.get("fingerprint") != fp:
        return False
    stamp = file_stamp(samples)
    return stamp is not None and entry.get("samples") == stamp

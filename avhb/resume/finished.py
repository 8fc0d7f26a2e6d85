"""A finished task is not run again.

When every sample of a task finished without an error (and no judge
verdict failed), the evaluator records in ``run.json`` (``finished``) the
task's *inputs*: one digest per part of what its samples and results
depend on, and their hash, the task's digest --

* ``task``: its resolved config;
* ``pack``: its pack's files (hooks at any depth, YAML bases, prompt files);
* ``data``: the data source (kind, root, revision) and every file under the
  folder its media paths resolve in (the data folder, or a data file's
  folder), each by size, mtime and ctime -- so a media file corrected in
  place with its old size and mtime put back (its ctime cannot be) runs the
  task again, and its call keys, which follow content, send it again;
* ``model``, ``judges``: their identities;
* ``media``: the task's media settings and the ablations;
* ``options``: every run option of kind calls, scoring or selection that
  no other part holds (:func:`avhb.resume.setting_kinds.fingerprinted_options`,
  derived from the settings table): limit, samples, shard, seed and
  seeds, repeats, predict-only, generation settings, the system
  instruction, the few-shot settings (``num_fewshot``,
  ``fewshot_as_multiturn``, the few-shot seed); each by its value when
  it is not RunOptions' default, so an option added at its default
  leaves the fingerprints of finished tasks as they were;
* ``versions``: avhb's and the plugins' versions and the call-key scheme

-- with the size and mtime of the task's samples file.

Re-running the same command finds every part unchanged and the samples
file untouched: it keeps that task's results from ``results.json``, sends
nothing and reads no journal.  The run still loads each task's samples
before it checks (they are read before any model call, for the run's
notes), so resuming a finished run costs a read of its samples, not
start-up alone (``benchmarks/scale.py``'s finished rerun; benchmarks/README.md).  Any change runs the task again,
through the journal, which still answers every call already made, and
:func:`why_not` names the parts that changed (the run says so in one line,
and keeps the results it replaces: :mod:`avhb.resume.setting_kinds`).  A task with
failed samples is never recorded, so a re-run retries them; ``avhb score``
and ``avhb merge`` always score again.  A data folder with more than
``MAX_DATA_FILES`` files is not fingerprinted, nor is a task that may read
media outside its data folder (``allow_outside_root``): their tasks always
run again through the journal.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from avhb.options import RunOptions
from avhb.resume.setting_kinds import fingerprinted_options

MAX_DATA_FILES = 200_000


def _tree(root: Path, skip: frozenset[str] = frozenset()) -> list[Any] | None:
    """(relative path, size, mtime, ctime) of every file under ``root`` (or
    of ``root`` itself), leaving out the folders in ``skip`` (real paths:
    the run folder and avhb's cache, when they lie inside it); None past
    ``MAX_DATA_FILES``."""
    try:
        st = root.stat()
    except OSError:
        return ["missing"]
    if not root.is_dir():
        return [[root.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns]]
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
                    if not skip or os.path.realpath(entry.path) not in skip:
                        stack.append(Path(entry.path))
                    continue
                info = entry.stat()
            except OSError:
                continue
            out.append([os.path.relpath(entry.path, root), info.st_size, info.st_mtime_ns, info.st_ctime_ns])
            if len(out) > MAX_DATA_FILES:
                return None
    return out


# the pack files a task's behaviour can depend on: hook modules (any depth), YAML bases, prompt files
_PACK_SUFFIXES = (".py", ".yaml", ".yml", ".txt", ".j2", ".jinja", ".json", ".md")
_PACK_SKIP = {"__pycache__", "sample"}  # byte code; sample data (fingerprinted as data when it is the data)


def _pack_files(pack_dir: Path) -> list[Any]:
    """[relative path, size, mtime_ns, ctime_ns] of the pack's own files, so
    that an edited hook, base or judge prompt anywhere in the pack re-runs
    the task."""
    out = []
    for path in sorted(Path(pack_dir).rglob("*")):
        rel = path.relative_to(pack_dir)
        if path.suffix not in _PACK_SUFFIXES or _PACK_SKIP.intersection(rel.parts):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        out.append([str(rel), st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return out


# what each part of a task's inputs is, as the run says it when one changed
PARTS = {"task": "its task config", "pack": "its pack's files (hooks, bases, prompts)",
         "data": "its data files or media", "model": "the model", "judges": "its judges",
         "media": "its media settings or ablations",
         "options": "its sample selection, seeds, repeats, generation or few-shot settings",
         "versions": "avhb's or a plugin's version"}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def inputs(task: Any, source: Any, plan: Any, options: Any, model: dict[str, Any],
           judges: dict[str, Any], versions: dict[str, str]) -> dict[str, str] | None:
    """The task's inputs, one digest per part (module docstring); None when
    they cannot be taken (a data folder too large to list, media allowed
    outside the data folder)."""
    from avhb.version import __version__
    from avhb.call.caller import KEY_SCHEME
    from avhb.runfolder.manifest import task_hash

    if task.cfg.get("allow_outside_root", False):
        return None
    from avhb.paths import cache_dir

    skip = frozenset(os.path.realpath(p) for p in (options.output_dir, cache_dir()))
    data = _tree(Path(source.media_root), skip)
    if data is None:
        return None
    parts = {
        "task": task_hash(task.cfg.config), "pack": _pack_files(task.pack_dir),
        "data": [source.kind, str(source.root), source.revision, data],
        "model": model, "judges": judges, "media": plan.key(),
        "options": options_part(options),
        "versions": [__version__, versions, KEY_SCHEME],
    }
    return {name: _digest(value) for name, value in parts.items()}


_NO_DEFAULT = object()
_DEFAULTS: dict[str, Any] = {
    f.name: f.default if f.default is not dataclasses.MISSING
    else f.default_factory() if f.default_factory is not dataclasses.MISSING else _NO_DEFAULT
    for f in dataclasses.fields(RunOptions)}


def options_part(options: Any) -> dict[str, Any]:
    """The ``options`` part before it is digested: each option of
    :func:`avhb.resume.setting_kinds.fingerprinted_options` that is not at
    RunOptions' default (an options object without the attribute holds the
    default), by its value; ``--shard`` by its JSON form."""
    out: dict[str, Any] = {}
    for name in fingerprinted_options():
        default = _DEFAULTS.get(name, _NO_DEFAULT)
        value = getattr(options, name, default)
        if value is _NO_DEFAULT or (default is not _NO_DEFAULT and value == default):
            continue
        out[name] = value.to_json() if hasattr(value, "to_json") else value
    return out


def task_digest(parts: dict[str, str] | None) -> str | None:
    """The task's digest: the hash of its inputs."""
    return None if parts is None else _digest(parts)


def file_stamp(path: Path) -> list[int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def is_finished(recorded: dict[str, Any], task: str, parts: dict[str, str] | None, samples: Path) -> bool:
    """Whether ``run.json``'s ``finished`` entry for ``task`` matches."""
    return why_not(recorded, task, parts, samples) is None


def why_not(recorded: dict[str, Any], task: str, parts: dict[str, str] | None, samples: Path) -> str | None:
    """None when the task finished with these inputs; else why it runs
    again ("its judges changed", "it did not finish"...)."""
    entry = (recorded.get("finished") or {}).get(task)
    if not isinstance(entry, dict):
        return "it did not finish"
    if parts is None:
        return "its inputs cannot be fingerprinted (a data folder too large to list, or media allowed outside it)"
    if entry.get("fingerprint") != task_digest(parts):
        before = entry.get("inputs")
        if not isinstance(before, dict):
            return "it was recorded by an earlier avhb"
        changed = [PARTS[name] for name in PARTS if before.get(name) != parts.get(name)]
        return (" and ".join(changed) or "its inputs") + " changed"
    stamp = file_stamp(samples)
    if stamp is None or entry.get("samples") != stamp:
        return "its samples file changed"
    return None

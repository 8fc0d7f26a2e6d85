"""The task index: every task and group name with the file that defines it.

Cached on disk per task package (``task-index/<package>.json``), one entry
per YAML file keyed by its path, mtime and size and by the same of every
include base and hook module it names, so ``avhb list tasks`` after the
first call reads one small file per package and stats the files: no YAML
parsing, no hooks, no backends, no torch.  Touching a file re-reads it and
the files that depend on it, nothing else; a plugin's version (and the
validator's own code) keys only that plugin's entries.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.paths import cache_dir
from avhb.registry import Registry, get_registry

INDEX_VERSION = 2

@dataclass
class TaskIndex:
    tasks: dict[str, dict[str, Any]]  # name -> {file, root, package, namespace, tags, benchmark, output_type}
    groups: dict[str, dict[str, Any]]  # name -> {file, tasks: [...], aggregate: [...]}
    errors: list[str] = field(default_factory=list)
    from_cache: bool = False  # True: no YAML file was read (every entry was fresh)
    refreshed: list[str] = field(default_factory=list)  # the YAML files read this time

    def resolve(self, names: list[str]) -> tuple[list[str], list[str]]:
        """Expand group, tag and glob names to task names (order kept);
        returns (tasks, groups asked for)."""
        tasks: list[str] = []
        groups: list[str] = []
        for name in names:
            if name in self.tasks:
                found = [name]
            elif name in self.groups:
                groups.append(name)
                found = self.group_members(name)
            else:
                found = [t for t, info in self.tasks.items() if name in info.get("tags", [])]
                if not found and any(ch in name for ch in "*?["):
                    found = sorted(fnmatch.filter(self.tasks, name))
            if not found:
                close = [t for t in list(self.tasks) + list(self.groups) if name.split("_")[0] in t][:5]
                hint = f"; did you mean {', '.join(close)}?" if close else "; see `avhb list tasks`"
                raise UserError(f"unknown task or group {name!r}{hint}")
            tasks.extend(t for t in found if t not in tasks)
        return tasks, groups

    def groups_of(self, task: str) -> list[str]:
        """The groups that contain a task (directly or through a subgroup)."""
        return [g for g in self.groups if task in self.group_members(g)]

    def group_members(self, group: str, _seen: frozenset = frozenset()) -> list[str]:
        out: list[str] = []
        for entry in self.groups[group]["tasks"]:
            if entry in self.groups and entry not in _seen:
                members = self.group_members(entry, _seen | {group})
            elif any(ch in entry for ch in "*?["):
                members = sorted(fnmatch.filter(self.tasks, entry))
            else:
                members = [entry] if entry in self.tasks else []
            out.extend(m for m in members if m not in out)
        return out


_SKIP_DIRS = ("sample", "sample_data", "data")
_HERE = Path(__file__).resolve().parent
# the code and schema whose verdicts the entries hold: editing them (a checkout) re-validates
_VALIDATOR_FILES = [_HERE / "index.py", _HERE / "config.py", _HERE / "checker.py", _HERE / "schema" / "task.schema.json"]


def _yaml_files(root: Path) -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every task YAML under root, in a stable
    order.  Include bases (``_*.yaml``) and hook modules are not tasks: they
    count for freshness as the dependencies each entry records."""
    out = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            name = e.name
            if e.is_dir():
                if not name.startswith((".", "_")) and name not in _SKIP_DIRS:
                    subdirs.append(e.path)
            elif name.endswith((".yaml", ".yml")) and not name.startswith("_"):
                try:
                    st = e.stat()
                except OSError:
                    continue
                out.append((e.path, st.st_mtime_ns, st.st_size))
        stack.extend(reversed(subdirs))
    return out


def _roots(registry: Registry) -> list[tuple[str, str, Path]]:
    roots = []
    for namespace, package in registry.task_packages:
        folder = registry.package_dirs.get(package)
        if folder is None:
            import sys

            print(f"avhb: warning: task package {package!r} not found", file=sys.stderr)
            continue
        roots.append((namespace, package, Path(folder)))
    return roots


def _part_key(registry: Registry, package: str) -> str:
    """What a package's entries depend on besides its files: the plugin that
    ships it (name, distribution, version) and the validator's code."""
    plugin = next((p for p in registry.plugins if package in p.provides.get("task_packages", [])), None)
    parts = [str(INDEX_VERSION), f"{plugin.name}={plugin.distribution}:{plugin.version}" if plugin else "?"]
    for f in _VALIDATOR_FILES:
        try:
            st = os.stat(f)
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _part_file(namespace: str, package: str, root: Path) -> Path:
    name = hashlib.sha256(f"{namespace}|{package}|{root}".encode()).hexdigest()[:24]
    return cache_dir() / "task-index" / f"{package}-{name}.json"


@dataclass
class _Part:
    """One task package's entries: file path -> [mtime_ns, size, dep ids,
    tasks, groups, errors]; ``deps``: [path, mtime_ns, size] (None, None: missing)."""

    files: dict[str, list]
    deps: list[list]
    refreshed: list[str]


def build_index(registry: Registry | None = None, use_cache: bool = True) -> TaskIndex:
    from avhb.taskdef.config import Sources

    registry = registry or get_registry()
    sources = Sources()  # each include base and hook module read once in this build
    parts = []
    for namespace, package, root in _roots(registry):
        cache_file = _part_file(namespace, package, root)
        key = _part_key(registry, package)
        old = _read_part(cache_file, key) if use_cache else None
        part = _refresh(namespace, package, root, old, sources)
        if use_cache and (part.refreshed or old is None or len(old.files) != len(part.files)):
            _write_part(cache_file, key, part)
        parts.append(part)
    return _merge(parts)


def _read_part(cache_file: Path, key: str) -> _Part | None:
    try:
        data = json.loads(cache_file.read_bytes())
        if data.get("key") == key:
            return _Part(data["files"], data["deps"], [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _refresh(namespace: str, package: str, root: Path, old: _Part | None, sources) -> _Part:
    """Keep every entry whose file and dependencies are unchanged; resolve the rest."""
    stale: set[int] = set()
    if old is not None:
        for i, (path, mtime, size) in enumerate(old.deps):
            now = sources.stat(path)
            if (now is None) != (mtime is None) or (now is not None and now != [mtime, size]):
                stale.add(i)
    files: dict[str, list] = {}
    deps: list[list] = []
    dep_ids: dict[str, int] = {}
    refreshed: list[str] = []
    for path, mtime, size in _yaml_files(root):
        entry = old.files.get(path) if old is not None else None
        if entry is not None and entry[0] == mtime and entry[1] == size and not stale.intersection(entry[2]):
            consulted = {old.deps[i][0]: old.deps[i][1:] for i in entry[2]}
        else:
            consulted, entry = _resolve(path, mtime, size, root, package, namespace, sources)
            refreshed.append(path)
        ids = []
        for dep, seen in consulted.items():
            if dep not in dep_ids:
                dep_ids[dep] = len(deps)
                deps.append([dep, *(seen if seen is not None and seen[0] is not None else (None, None))])
            ids.append(dep_ids[dep])
        files[path] = [mtime, size, ids, *entry[3:]]
    return _Part(files, deps, refreshed)


def _resolve(path: str, mtime: int, size: int, root: Path, package: str, namespace: str, sources):
    """Resolve one file: (the bases and hook modules it consulted, its entry)."""
    from avhb.taskdef.config import resolve_file

    sources.consulted = {}
    tasks: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    try:
        task_cfgs, group_cfgs = resolve_file(Path(path), root, package, namespace, sources=sources)
    except UserError as exc:
        errors.append(str(exc))
    else:
        for t in task_cfgs:
            if t.name in tasks:
                errors.append(f"{path}:1: task {t.name!r} is also defined in {path}")
                continue
            tags = t.get("tag") or []
            tasks[t.name] = {
                "file": path, "root": str(root), "package": package, "namespace": namespace,
                "benchmark": t.benchmark, "tags": [tags] if isinstance(tags, str) else list(tags),
                "output_type": t.get("output_type", "generate_until"),
                "dataset_path": t.get("dataset_path"),
            }
        for g in group_cfgs:
            groups[g.name] = {"file": path, "tasks": g.tasks, "aggregate": g.aggregate}
    consulted, sources.consulted = sources.consulted, {}
    return consulted, [mtime, size, [], tasks, groups, errors]


def _merge(parts: list[_Part]) -> TaskIndex:
    """All packages' entries in one index: a name defined twice and a group
    member that is nothing are errors (named at the later file)."""
    tasks: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    refreshed: list[str] = []
    for part in parts:
        refreshed += part.refreshed
        for path, (_, _, _, file_tasks, file_groups, file_errors) in part.files.items():
            errors += file_errors
            for name, info in file_tasks.items():
                if name in tasks:
                    errors.append(f"{path}:1: task {name!r} is also defined in {tasks[name]['file']}")
                else:
                    tasks[name] = info
            groups.update(file_groups)
    for name, info in groups.items():
        for entry in info["tasks"]:
            if entry not in tasks and entry not in groups and not any(ch in entry for ch in "*?["):
                errors.append(f"{info['file']}:1: group {name!r} lists {entry!r}, which is no task or group")
    return TaskIndex(tasks, groups, errors, from_cache=not refreshed, refreshed=refreshed)


def _write_part(cache_file: Path, key: str, part: _Part) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f".{cache_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "deps": part.deps, "files": part.files}, separators=(",", ":")))
        os.replace(tmp, cache_file)
        for old in cache_file.parent.parent.glob("task-index-*.json"):  # the single-file index of version 1
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home still works, just without the cache


def load_task(index: TaskIndex, name: str):
    """Fully resolve one task (parses its YAML; imports no hooks)."""
    from avhb.taskdef.config import resolve_file

    info = index.tasks.get(name)
    if info is None:
        raise UserError(f"unknown task {name!r}; see `avhb list tasks`")
    task_cfgs, _ = resolve_file(Path(info["file"]), Path(info["root"]), info["package"], info["namespace"])
    for t in task_cfgs:
        if t.name == name:
            return t
    raise UserError(f"task {name!r} no longer defined in {info['file']} (stale index)")

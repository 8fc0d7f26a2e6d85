"""The task index: every task and group name with the file that defines it.

Cached on disk as JSON, keyed by the installed plugins' versions and each
YAML file's path, mtime and size, so ``avhb list tasks`` after the first call
reads one small file: no YAML parsing, no hooks, no backends, no torch.
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
    from_cache: bool = False
    broken: dict[str, str] = field(default_factory=dict)  # YAML file -> its error (file:line: key: message)
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # task -> every file that defines it

    def resolve(self, names: list[str]) -> tuple[list[str], list[str]]:
        """Expand group, tag and glob names to task names (order kept);
        returns (tasks, groups asked for).  A name that matches nothing
        because the file defining it is broken gets that file's error; a
        task defined in two files is refused, naming both."""
        tasks: list[str] = []
        groups: list[str] = []
        if not names:
            raise UserError("--tasks names no task (give comma-separated task, group or tag names)")
        for name in names:
            if name in self.tasks:
                found = [name]
            elif name in self.groups:
                if name in self.duplicates:
                    raise UserError(f"group {name!r} is defined twice: in {' and in '.join(self.duplicates[name])} "
                                    "(rename one)")
                groups.append(name)
                found = self.group_members(name)
            else:
                found = [t for t, info in self.tasks.items() if name in info.get("tags", [])]
                if not found and any(ch in name for ch in "*?["):
                    found = sorted(fnmatch.filter(self.tasks, name))
            if not found:
                problem = self.broken_file_for(name)
                if problem:
                    raise UserError(f"task {name!r} cannot be loaded: {problem}")
                close = [t for t in list(self.tasks) + list(self.groups) if name.split("_")[0] in t][:5]
                hint = f"; did you mean {', '.join(close)}?" if close else "; see `avhb list tasks`"
                if self.broken:
                    first = next(iter(self.broken.values()))
                    hint += f" ({len(self.broken)} task file(s) have errors, see `avhb validate`; first: {first})"
                raise UserError(f"unknown task or group {name!r}{hint}")
            for t in found:
                if t in self.duplicates:
                    raise UserError(f"task {t!r} is defined twice: in {' and in '.join(self.duplicates[t])} "
                                    "(rename one)")
            tasks.extend(t for t in found if t not in tasks)
        return tasks, groups

    def broken_file_for(self, name: str) -> str | None:
        """The error of a broken YAML file that seems to define ``name``:
        a ``task:``/``group:`` line names it (``${var}`` matching anything),
        or the file is named after it."""
        import re

        bare = name.rpartition("/")[2]
        for path, error in self.broken.items():
            p = Path(path)
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            declared = re.findall(r"^\s*(?:task|group)\s*:\s*['\"]?([^'\"\s#\[]+)", text, flags=re.M)
            patterns = [re.escape(d).replace(r"\$\{", "${").replace(r"\}", "}") for d in declared]
            patterns = [re.sub(r"\$\{[^}]*\}", ".+", d) for d in patterns]
            if p.stem == bare or any(re.fullmatch(d, bare) for d in patterns):
                return error
        return None

    def groups_of(self, task: str) -> list[str]:
        """The groups that contain a task (directly or through a subgroup)."""
        return [g for g in self.groups if task in self.group_members(g)]

    def group_entries(self, group: str) -> list[tuple[str, str]]:
        """A group's direct members as ``("group", name)`` or ``("task",
        name)`` (globs expanded to tasks), in file order."""
        out: list[tuple[str, str]] = []
        for entry in self.groups[group]["tasks"]:
            if entry in self.groups:
                found = [("group", entry)]
            elif any(ch in entry for ch in "*?["):
                found = [("task", t) for t in sorted(fnmatch.filter(self.tasks, entry))]
            else:
                found = [("task", entry)] if entry in self.tasks else []
            out.extend(f for f in found if f not in out)
        return out

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


def _yaml_files(root: Path) -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every task YAML under root, in a stable order,
    plus the hook modules (.py) next to them, which count for freshness:
    the index records hook errors."""
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
            if e.is_dir():
                if not e.name.startswith((".", "_")) and e.name not in _SKIP_DIRS:
                    subdirs.append(e.path)
            elif e.name.endswith((".yaml", ".yml", ".py")):  # include bases (_*.yaml) count for freshness too
                st = e.stat()
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
    from avhb.taskdef.include import include_roots

    return roots + include_roots()


def _fingerprint(registry: Registry, files: list[tuple[str, str, Path, list[Path]]]) -> str:
    h = hashlib.sha256()
    h.update(str(INDEX_VERSION).encode())
    for plugin in registry.plugins:
        h.update(f"{plugin.name}={plugin.distribution}:{plugin.version};".encode())
    for namespace, package, root, paths in files:
        h.update(f"{namespace}|{package}|{root}\n".encode())
        h.update("".join(f"{p}|{m}|{sz}\n" for p, m, sz in paths).encode())
    return h.hexdigest()


def build_index(registry: Registry | None = None, use_cache: bool = True) -> TaskIndex:
    registry = registry or get_registry()
    files = [(ns, pkg, root, _yaml_files(root)) for ns, pkg, root in _roots(registry)]
    key = _fingerprint(registry, files)
    cache_file = cache_dir() / f"task-index-{key[:24]}.json"
    if use_cache and cache_file.is_file():
        try:
            data = json.loads(cache_file.read_text())
            return TaskIndex(data["tasks"], data["groups"], data.get("errors", []), from_cache=True,
                             broken=data.get("broken", {}), duplicates=data.get("duplicates", {}))
        except (OSError, ValueError, KeyError):
            pass
    index = _scan(files, known_names(registry))
    if use_cache:
        _write_cache(cache_file, index)
    return index


def known_names(registry: Registry):
    """The registered metric and filter names a task file may name."""
    from avhb.taskdef.config import KnownNames

    return KnownNames(frozenset(registry.entries.get("metrics", {})), frozenset(registry.entries.get("filters", {})))


def _scan(files, known=None) -> TaskIndex:
    from avhb.taskdef.config import ConfigErrors, resolve_file

    tasks: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    broken: dict[str, str] = {}
    duplicates: dict[str, list[str]] = {}
    for namespace, package, root, entries in files:
        for path, _, _ in entries:
            path = Path(path)
            if path.name.startswith("_") or path.suffix == ".py":
                continue
            try:
                task_cfgs, group_cfgs = resolve_file(path, root, package, namespace, known)
            except ConfigErrors as exc:
                errors.extend(exc.messages)
                continue
            except UserError as exc:
                errors.append(str(exc))
                broken[str(path)] = str(exc)
                continue
            for t in task_cfgs:
                if t.name in tasks:
                    errors.append(f"{path}:1: task {t.name!r} is also defined in {tasks[t.name]['file']}")
                    duplicates.setdefault(t.name, [tasks[t.name]["file"]]).append(str(path))
                    continue
                tasks[t.name] = {
                    "file": str(path), "root": str(root), "package": package, "namespace": namespace,
                    "benchmark": t.benchmark, "tags": t.tags,
                    "output_type": t.get("output_type", "generate_until"),
                    "dataset_path": t.get("dataset_path"),
                    "judges": sorted(t.get("judges") or {}),
                }
            for g in group_cfgs:
                if g.name in groups:
                    other = groups[g.name]["file"]
                    errors.append(f"{path}:1: group {g.name!r} is also defined in {other}")
                    duplicates.setdefault(g.name, [str(other)]).append(str(path))
                    continue
                groups[g.name] = {"file": str(path), "tasks": g.tasks, "aggregate": g.aggregate,
                                  "aggregate_over": g.aggregate_over}
    for name, info in groups.items():
        for entry in info["tasks"]:
            if entry not in tasks and entry not in groups and not any(ch in entry for ch in "*?["):
                errors.append(f"{info['file']}:1: group {name!r} lists {entry!r}, which is no task or group")
    return TaskIndex(tasks, groups, errors, broken=broken, duplicates=duplicates)


def _write_cache(cache_file: Path, index: TaskIndex) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"tasks": index.tasks, "groups": index.groups, "errors": index.errors,
                                   "broken": index.broken, "duplicates": index.duplicates}))
        os.replace(tmp, cache_file)
        for old in cache_file.parent.glob("task-index-*.json"):
            if old != cache_file:
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

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
import itertools
import json
import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.atomic import write_atomic
from avhb.errors import EnvironmentFailure, UserError
from avhb.paths import cache_dir
from avhb.registry import Registry, get_registry
from avhb.taskdef.filestats import FileStats

INDEX_VERSION = 5

@dataclass
class TaskIndex:
    tasks: dict[str, dict[str, Any]]  # name -> {file, root, package, namespace, tags, benchmark, output_type}
    groups: dict[str, dict[str, Any]]  # name -> {file, tasks: [...], aggregate: [...]}
    errors: list[str] = field(default_factory=list)
    from_cache: bool = False  # True: no YAML file was read (every entry was fresh)
    refreshed: list[str] = field(default_factory=list)  # the YAML files read this time
    broken: dict[str, str] = field(default_factory=dict)  # YAML file -> its error (file:line: key: message)
    notes: dict[str, list[str]] = field(default_factory=dict)  # YAML file -> its notes (file:line: note: ...)
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # task or group -> every file that defines it
    _by_tag: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

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
                if not found:
                    listed = ", ".join(self.groups[name]["tasks"][:5]) or "nothing"
                    raise UserError(f"group {name!r} ({self.groups[name]['file']}) has no task to run: it lists "
                                    f"{listed}, which name no task, group or tag here")
            else:
                found = [t for t, info in self.tasks.items() if name in info.get("tags", [])]
                if not found and any(ch in name for ch in "*?["):
                    found = sorted(fnmatch.filter(self.tasks, name))
            if not found:
                problem = self.broken_file_for(name)
                if problem:
                    raise UserError(f"task {name!r} cannot be loaded: {problem}")
                noted = self.notes_for(name)
                if noted:
                    raise UserError(f"unknown task or group {name!r}; {noted[0]}")
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

    def notes_for(self, name: str) -> list[str]:
        """The notes of the task files named after ``name`` (a file whose
        ``task:`` was given twice defines another name)."""
        bare = name.rpartition("/")[2]
        return [n for path, lines in self.notes.items() if Path(path).stem == bare for n in lines]

    def groups_of(self, task: str) -> list[str]:
        """The groups that contain a task (directly or through a subgroup)."""
        return [g for g in self.groups if task in self.group_members(g)]

    def tagged(self, tag: str) -> list[str]:
        """The tasks carrying ``tag``, in index order."""
        if self._by_tag is None:
            by_tag: dict[str, list[str]] = {}
            for name, info in self.tasks.items():
                for t in info.get("tags") or []:
                    by_tag.setdefault(t, []).append(name)
            self._by_tag = by_tag
        return self._by_tag.get(tag, [])

    def _member_tasks(self, entry: str) -> list[str]:
        """A group entry that is no group: a task, a glob over tasks, or a
        tag (lm-eval's mmlu_stem lists the tag mmlu_stem_tasks); its tasks
        in the order lm-eval builds them (a tag's sorted)."""
        if entry in self.tasks:
            return [entry]
        if any(ch in entry for ch in "*?["):
            return sorted(fnmatch.filter(self.tasks, entry))
        return sorted(self.tagged(entry))

    def group_entries(self, group: str) -> list[tuple[str, str]]:
        """A group's direct members as ``("group", name)`` or ``("task",
        name)`` (globs and tags expanded to tasks), in file order."""
        out: list[tuple[str, str]] = []
        for entry in self.groups[group]["tasks"]:
            found = [("group", entry)] if entry in self.groups else [("task", t) for t in self._member_tasks(entry)]
            out.extend(f for f in found if f not in out)
        return out

    def group_members(self, group: str, _seen: frozenset = frozenset()) -> list[str]:
        out: list[str] = []
        for entry in self.groups[group]["tasks"]:
            if entry in self.groups and entry not in _seen:
                members = self.group_members(entry, _seen | {group})
            else:
                members = self._member_tasks(entry)
            out.extend(m for m in members if m not in out)
        return out


_SKIP_DIRS = ("sample", "sample_data", "data")
_HERE = os.path.dirname(os.path.abspath(__file__))
# the code and schema whose verdicts the entries hold: editing them (a checkout) re-validates
_VALIDATOR_FILES = [os.path.join(_HERE, f) for f in ("index.py", "config.py", "yaml_file.py", "schema_check.py",
                                                     "yaml_include.py", "task_checks.py", "filestats.py", "schema_compiled.py",
                                                     "templates.py", "include_path.py", "hook_names.py",
                                                     "reasoning.py", "metric_keys.py", "schema/task.schema.json")]
_NCOLS = 2  # task columns: name, profile id (a profile: benchmark, tags, output_type, dataset_path, judge roles)


# A folder's listing is reused when its mtime is the one recorded: creating,
# removing or renaming an entry changes it.  Editing a file does not, so
# every file is still stat'ed, every time.  A folder modified within this
# many ns before the walk is listed again next time (a file system with
# coarse timestamps may give a later change the same mtime).
_RACY_NS = 2_000_000_000


def _yaml_files(root: Path, known: dict[str, list] | None = None) -> tuple[list[str], list[int], list[int], dict]:
    """Paths relative to root, mtimes (ns) and sizes of every task YAML under
    root, in a stable order, and the folders walked (``{rel: [mtime_ns or
    None, yaml names, subfolder names]}``).  ``known``: the folders of the
    last walk; one whose mtime is unchanged is not listed again, its files
    are stat'ed by name.  Include bases (``_*.yaml``) and hook modules are
    not tasks: they count for freshness as the dependencies each entry
    records."""
    rels: list[str] = []
    mtimes: list[int] = []
    sizes: list[int] = []
    folders: dict[str, list] = {}
    known = known or {}
    top = str(root)
    recent = time.time_ns() - _RACY_NS
    stack = [""]
    stat = os.stat
    while stack:
        rel = stack.pop()
        path = top + os.sep + rel if rel else top
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            mtime = os.fstat(fd).st_mtime_ns  # before listing: a change after this moves it
            last = known.get(rel)
            if last is not None and last[0] == mtime:
                names, subdirs = last[1], last[2]
            else:
                names, subdirs = _list_folder(path)
            trusted = mtime < recent
            prefix = rel + os.sep if rel else ""
            for name in names:
                try:
                    st = stat(name, dir_fd=fd)
                except OSError:
                    trusted = False  # listed but gone: list the folder again next time
                    continue
                rels.append(prefix + name)
                mtimes.append(st.st_mtime_ns)
                sizes.append(st.st_size)
        finally:
            os.close(fd)
        folders[rel] = [mtime if trusted else None, names, subdirs]
        stack.extend(prefix + d for d in reversed(subdirs))
    return rels, mtimes, sizes, folders


def _list_folder(path: str) -> tuple[list[str], list[str]]:
    """A folder's task YAML names and the subfolders the walk enters, sorted."""
    try:
        entries = sorted(os.scandir(path), key=_name)
    except OSError:
        return [], []
    names, subdirs = [], []
    for e in entries:
        name = e.name
        if e.is_dir():
            if not name.startswith((".", "_")) and name not in _SKIP_DIRS:
                subdirs.append(name)
        elif name.endswith((".yaml", ".yml")):  # a _*.yaml file may be a group (lm-eval's _mmlu_stem.yaml) or a base
            names.append(name)
    return names, subdirs


def _name(entry: os.DirEntry) -> str:
    return entry.name


def _roots(registry: Registry) -> list[tuple[str, str, Path]]:
    roots = []
    for namespace, package in registry.task_packages:
        folder = registry.package_dirs.get(package)
        if folder is None:
            import sys

            print(f"avhb: warning: task package {package!r} not found", file=sys.stderr)
            continue
        roots.append((namespace, package, Path(folder)))
    from avhb.taskdef.include_path import include_roots

    return roots + include_roots()


def _part_key(registry: Registry, namespace: str, package: str, root: Path) -> str:
    """What a package's entries depend on besides its files: where it is, the
    plugin that ships it (name, distribution, version), the validator's code
    and the registered metric and filter names (a file may name them)."""
    plugin = next((p for p in registry.plugins if package in p.provides.get("task_packages", [])), None)
    parts = [str(INDEX_VERSION), namespace, package, str(root),
             f"{plugin.name}={plugin.distribution}:{plugin.version}" if plugin else "?", _names_key(registry)]
    for f in _VALIDATOR_FILES:
        try:
            st = os.stat(f)
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _names_key(registry: Registry) -> str:
    names = "\n".join(sorted(registry.entries.get("metrics", {}))) + "\0" + "\n".join(
        sorted(registry.entries.get("filters", {})))
    return f"{zlib.crc32(names.encode()):08x}"


def _part_file(namespace: str, package: str, root: Path) -> Path:
    # crc32 only names the file (the key inside is compared whole); hashlib would load OpenSSL
    return cache_dir() / "task-index" / f"{package}-{zlib.crc32(f'{namespace}|{root}'.encode()):08x}.json"


# A package's cache file ("part"), columns so that reading it makes few objects:
#   rels, mtimes, sizes   the task YAML files at the last build, in walk order
#   folders               {rel folder: [mtime_ns or None, yaml names, subfolders]} of that walk
#   deps                  [path, mtime_ns, size] of every include base and hook module a file
#                         names ([path, None, None]: it was missing)
#   depsets               lists of dep ids; file_depset[i]: the one file i depends on
#   file_count            tasks defined by file i (its rows follow those of file i-1: a row's file)
#   file_groups, file_errors, file_notes   {str(i): ...} for the files that define groups, have errors
#                         or notes (keys given twice, hooks a static read cannot decide)
#   tasks                 columns name and profile id
#   profiles              [benchmark, tags, output_type, dataset_path, judge roles]: what a task
#                         lists besides its name, shared by the tasks that have the same
#   dups                  rows naming a task an earlier file of the package defines
#   errors                the package's errors in file order
_COLUMNS = ("rels", "mtimes", "sizes", "folders", "deps", "depsets", "file_depset", "file_count", "file_groups",
            "file_errors", "file_notes", "tasks", "profiles", "dups", "errors")


def build_index(registry: Registry | None = None, use_cache: bool = True) -> TaskIndex:
    registry = registry or get_registry()
    stats = FileStats()
    sources: list = []  # the one filestats.Sources of this build, made at the first file to read (warm: none)
    parts = []
    refreshed: list[str] = []
    for namespace, package, root in _roots(registry):
        cache_file = _part_file(namespace, package, root)
        key = _part_key(registry, namespace, package, root)
        old = _read_part(cache_file, key) if use_cache else None
        part, changed = _refresh(namespace, package, root, old, stats, sources, refreshed, registry)
        if use_cache and changed:
            _write_part(cache_file, key, part)
        parts.append((namespace, package, str(root), part))
    return _merge(parts, refreshed)


def known_names(registry: Registry):
    """The registered metric and filter names a task file may name."""
    from avhb.taskdef.task_checks import KnownNames

    return KnownNames(frozenset(registry.entries.get("metrics", {})), frozenset(registry.entries.get("filters", {})))


def _read_part(cache_file: Path, key: str) -> dict | None:
    """The cached part if it is for this key and whole: a damaged file is rebuilt, never half used."""
    try:
        data = json.loads(cache_file.read_bytes())
        if data.get("key") != key or not all(c in data for c in _COLUMNS):
            return None
        n, tasks, file_depset = len(data["rels"]), data["tasks"], data["file_depset"]
        if (len(data["mtimes"]) == len(data["sizes"]) == len(file_depset) == len(data["file_count"]) == n
                and len(tasks) == _NCOLS and all(len(col) == sum(data["file_count"]) for col in tasks)
                and _within(file_depset, len(data["depsets"])) and _within(tasks[1], len(data["profiles"]))
                and _folders_ok(data["folders"])
                and all(isinstance(p, list) and len(p) == 5 for p in data["profiles"])
                and all(_within(ids, len(data["deps"])) for ids in data["depsets"])):
            return data
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        pass
    return None


def _folders_ok(folders: Any) -> bool:
    """Every folder record is [mtime_ns or None, names, subfolder names] (a damaged one is not walked on)."""
    return isinstance(folders, dict) and all(
        isinstance(f, list) and len(f) == 3 and (f[0] is None or type(f[0]) is int)
        and isinstance(f[1], list) and isinstance(f[2], list) and all(type(x) is str for x in f[1])
        and all(type(x) is str for x in f[2]) for f in folders.values())


def _within(ids: list, size: int) -> bool:
    """Every id indexes a list of ``size`` (min and max run in C: the warm path stays cheap)."""
    return not ids or (min(ids) >= 0 and max(ids) < size)


def _refresh(namespace: str, package: str, root: Path, old: dict | None, stats: FileStats, sources: list,
             refreshed: list[str], registry: Registry) -> tuple[dict, bool]:
    """The package's part now: the old one if no file or dependency changed
    (no per-file work), else the unchanged files' entries kept and the rest
    resolved.  Returns (part, whether it changed)."""
    rels, mtimes, sizes, folders = _yaml_files(root, old["folders"] if old is not None else None)
    stale: set[int] = set()
    if old is not None:
        stale = {i for i, (path, mtime, size) in enumerate(old["deps"])
                 if stats(path) != (None if mtime is None else [mtime, size])}
        if not stale and old["rels"] == rels and old["mtimes"] == mtimes and old["sizes"] == sizes:
            if old["folders"] == folders:
                return old, False
            return {**old, "folders": folders}, True  # the same files; a folder's record settled
    old_pos = {rel: i for i, rel in enumerate(old["rels"])} if old is not None else {}
    old_first = list(itertools.accumulate(old["file_count"], initial=0)) if old is not None else []
    deps: list[list] = old["deps"] if old is not None else []
    dep_ids = {d[0]: i for i, d in enumerate(deps)}
    depsets: list[list[int]] = old["depsets"] if old is not None else []
    depset_ids = {tuple(d): i for i, d in enumerate(depsets)}
    profiles: list = old["profiles"] if old is not None else []
    profile_ids = {_profile_key(p): i for i, p in enumerate(profiles)}
    new: dict[str, Any] = {"rels": rels, "mtimes": mtimes, "sizes": sizes, "folders": folders, "deps": deps, "depsets": depsets, "file_depset": [],
           "file_count": [], "file_groups": {}, "file_errors": {}, "file_notes": {}, "tasks": [[] for _ in range(_NCOLS)],
           "profiles": profiles, "dups": [], "errors": []}
    columns = new["tasks"]
    top = str(root) + os.sep
    for fid, rel in enumerate(rels):
        i = old_pos.get(rel)
        if (i is not None and old is not None and old["mtimes"][i] == mtimes[fid] and old["sizes"][i] == sizes[fid]
                and stale.isdisjoint(old["depsets"][old["file_depset"][i]])):
            depset = old["file_depset"][i]
            lo, hi = old_first[i], old_first[i + 1]
            rows = [col[lo:hi] for col in old["tasks"]]
            groups, errors = old["file_groups"].get(str(i)), old["file_errors"].get(str(i))
            notes = old["file_notes"].get(str(i))
        else:
            path = top + rel
            consulted, rows, groups, errors, notes = _resolve(path, root, package, namespace, stats, sources,
                                                              registry)
            ids_of_profiles = []
            for profile in rows[1]:
                key = _profile_key(profile)
                pid = profile_ids.get(key)
                if pid is None:
                    profile_ids[key] = pid = len(profiles)
                    profiles.append(profile)
                ids_of_profiles.append(pid)
            rows[1] = ids_of_profiles
            ids = []
            for dep, seen in consulted.items():
                row = [dep, None, None] if seen is None else [dep, *seen]
                d = dep_ids.get(dep)
                if d is None:
                    dep_ids[dep] = d = len(deps)
                    deps.append(row)
                else:
                    deps[d] = row  # the newest look wins: an entry kept on an older one is re-read next time
                ids.append(d)
            ids_key = tuple(sorted(set(ids)))
            depset = depset_ids.get(ids_key)
            if depset is None:
                depset_ids[ids_key] = depset = len(depsets)
                depsets.append(list(ids_key))
            refreshed.append(path)
        new["file_depset"].append(depset)
        new["file_count"].append(len(rows[0]))
        for col, cells in zip(columns, rows):
            col.extend(cells)
        if groups:
            new["file_groups"][str(fid)] = groups
        if errors:
            new["file_errors"][str(fid)] = errors
        if notes:
            new["file_notes"][str(fid)] = notes
    _package_errors(new, top)
    return new, True


def _profile_key(profile: list) -> str:
    """A profile as a dict key: its repr (strings, None and lists of strings, and whatever YAML gave
    dataset_path: two equal mappings written in different orders only make two profiles)."""
    return repr(profile)


def _row_files(file_count: list[int]) -> list[int]:
    """The file id of each task row (the rows of file i follow those of file i - 1)."""
    return list(itertools.chain.from_iterable(itertools.repeat(fid, n) for fid, n in enumerate(file_count)))


def _package_errors(part: dict, top: str) -> None:
    """The files' errors and the names a package defines twice, in file order."""
    names, fids = part["tasks"][0], _row_files(part["file_count"])
    first: dict[str, int] = {}
    dups_at: dict[int, list[str]] = {}
    for row, (name, fid) in enumerate(zip(names, fids)):
        if name in first:
            part["dups"].append(row)
            earlier = top + part["rels"][fids[first[name]]]
            dups_at.setdefault(fid, []).append(f"{top + part['rels'][fid]}:1: task {name!r} is also defined in {earlier}")
        else:
            first[name] = row
    for fid in range(len(part["rels"])):
        part["errors"] += part["file_errors"].get(str(fid), []) + dups_at.get(fid, [])


def _resolve(path: str, root: Path, package: str, namespace: str, stats: FileStats, sources: list,
             registry: Registry):
    """Resolve one file: (the bases and hook modules it consulted, its task
    columns, its groups, its errors, its notes)."""
    from avhb.taskdef.config import resolve_file
    from avhb.taskdef.filestats import Sources
    from avhb.taskdef.yaml_file import ConfigErrors

    if not sources:
        sources.append(Sources(stats=stats))
        sources.append(known_names(registry))
    src = sources[0]
    src.consulted = {}
    rows: list[list] = [[] for _ in range(_NCOLS)]
    groups: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    try:
        task_cfgs, group_cfgs = resolve_file(Path(path), root, package, namespace, sources[1], sources=src)
    except ConfigErrors as exc:
        errors.extend(exc.messages)
    except UserError as exc:
        errors.append(str(exc))
    else:
        for t in task_cfgs:
            rows[0].append(t.name)
            rows[1].append([t.benchmark, t.tags, t.get("output_type", "generate_until"), t.get("dataset_path"),
                            sorted(t.get("judges") or {})])
        for g in group_cfgs:
            groups[g.name] = {"file": path, "tasks": g.tasks, "aggregate": g.aggregate,
                              "aggregate_over": g.aggregate_over, "overrides": g.overrides, "aliases": g.aliases}
    consulted, src.consulted = src.consulted, {}
    notes = src.notes.get(str(src.resolve(Path(path))), [])
    return consulted, rows, groups, errors, notes


def _merge(parts: list[tuple[str, str, str, dict]], refreshed: list[str]) -> TaskIndex:
    """All packages in one index: a name another package already defines and
    a group member that is nothing are errors."""
    tasks: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    broken: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    duplicates: dict[str, list[str]] = {}
    for namespace, package, root, part in parts:
        top = root + os.sep
        paths = [top + rel for rel in part["rels"]]
        profiles = part["profiles"]
        fids = _row_files(part["file_count"])

        names = part["tasks"][0]
        # each row's entry in one comprehension, no call per task (the warm path builds them all here)
        entries = [{"file": paths[fid], "root": root, "package": package, "namespace": namespace, "benchmark": p[0],
                    "tags": p[1], "output_type": p[2], "dataset_path": p[3], "judges": p[4]}
                   for fid, p in zip(fids, map(profiles.__getitem__, part["tasks"][1]))]
        infos = dict(zip(names, entries))
        if part["dups"] or not tasks.keys().isdisjoint(infos):
            infos = _first_definitions(names, fids, entries, paths, tasks, duplicates, errors)
        errors += part["errors"]
        tasks.update(infos)
        for fid_text, messages in part["file_errors"].items():
            broken[paths[int(fid_text)]] = _file_error(messages)
        for fid_text, messages in part["file_notes"].items():
            notes[paths[int(fid_text)]] = messages
        for fid_text in sorted(part["file_groups"], key=int):
            for name, info in part["file_groups"][fid_text].items():
                if name in groups:
                    other = groups[name]["file"]
                    errors.append(f"{info['file']}:1: group {name!r} is also defined in {other}")
                    files = duplicates.setdefault(name, [other])
                    files.append(info["file"])
                    continue
                groups[name] = info
    tags = {t for info in tasks.values() for t in info.get("tags") or []}
    for name, info in groups.items():
        for entry in info["tasks"]:
            if entry not in tasks and entry not in groups and entry not in tags and not any(ch in entry for ch in "*?["):
                errors.append(f"{info['file']}:1: group {name!r} lists {entry!r}, which is no task, group or tag")
    return TaskIndex(tasks, groups, errors, from_cache=not refreshed, refreshed=refreshed, broken=broken,
                     duplicates=duplicates, notes=notes)


def _first_definitions(names: list[str], fids: list[int], entries: list[dict], paths: list[str], tasks: dict,
                       duplicates: dict, errors: list[str]) -> dict:
    """A package's tasks when some name is defined twice (in the package, or
    by an earlier package): the first definition kept, every file recorded
    in ``duplicates``, an error for a name an earlier package defines (the
    package's own repeats are among its errors already)."""
    kept: dict[str, dict[str, Any]] = {}
    for name, fid, entry in zip(names, fids, entries):
        if name in kept or name in tasks:
            first = (kept.get(name) or tasks[name])["file"]
            files = duplicates.setdefault(name, [first])
            if paths[fid] not in files:
                files.append(paths[fid])
            if name not in kept:
                errors.append(f"{paths[fid]}:1: task {name!r} is also defined in {first}")
            continue
        kept[name] = entry
    return kept


def _file_error(messages: list[str]) -> str:
    """A broken file's one-line error: its problems, or the first three and their count (yaml_file.listed)."""
    from avhb.taskdef.yaml_file import ConfigErrors

    return str(ConfigErrors(messages))


def _write_part(cache_file: Path, key: str, part: dict) -> None:
    _compact(part)
    try:
        text = json.dumps({"key": key, **part}, separators=(",", ":"))
        write_atomic(cache_file, lambda fh: fh.write(text), durable=False)
        for old in cache_file.parent.parent.glob("task-index-*.json"):  # the single-file index of earlier versions
            old.unlink(missing_ok=True)
    except (OSError, EnvironmentFailure):
        pass  # a read-only home still works, just without the cache


def _compact(part: dict) -> None:
    """Drop the profiles, dependency sets and dependencies no file names any more."""
    used_profiles = sorted(set(part["tasks"][1]))
    if len(used_profiles) != len(part["profiles"]):
        renumber = {old: new for new, old in enumerate(used_profiles)}
        part["profiles"] = [part["profiles"][i] for i in used_profiles]
        part["tasks"][1] = [renumber[i] for i in part["tasks"][1]]
    used_sets = sorted(set(part["file_depset"]))
    if len(used_sets) != len(part["depsets"]):
        renumber = {old: new for new, old in enumerate(used_sets)}
        part["depsets"] = [part["depsets"][i] for i in used_sets]
        part["file_depset"] = [renumber[i] for i in part["file_depset"]]
    used = sorted({d for ids in part["depsets"] for d in ids})
    if len(used) != len(part["deps"]):
        renumber = {old: new for new, old in enumerate(used)}
        part["deps"] = [part["deps"][i] for i in used]
        part["depsets"] = [[renumber[d] for d in ids] for ids in part["depsets"]]


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

"""Plugin discovery: one pluggy PluginManager over the entry-point group
``avhb``.  Built-ins come through the same group as third parties.

``AVHB_PLUGINS`` picks the third-party plugins that load (reproducible runs,
tests): ``AVHB_PLUGINS=mypack,other`` loads those two and no other
third-party plugin; the built-ins (the ``avhb`` distribution's own entry
points: ``tasks``, ``metrics``, ``backends``) always load unless named out
with a ``-``: ``AVHB_PLUGINS=mypack,-tasks`` (mypack, without the built-in
task packs).  Only ``-`` entries (``AVHB_PLUGINS=-embed``) keep every other
plugin; unset or empty, every installed plugin loads.
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import AbstractSet, Any, cast

from avhb.atomic import write_atomic
from avhb.errors import EnvironmentFailure, UserError

GROUP = "avhb"
KINDS = ("backends", "metrics", "filters", "judges", "commands", "transcribers", "judge_parsers")


@dataclass
class PluginInfo:
    name: str  # entry-point name; the namespace of a third-party plugin
    module: str
    distribution: str
    version: str
    builtin: bool
    provides: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Registry:
    plugins: list[PluginInfo]
    # kind -> public name -> "module:attr"
    entries: dict[str, dict[str, str]]
    # (namespace or "", package) for task packs
    task_packages: list[tuple[str, str]]
    preset_files: list[str]
    failed: list[str] = field(default_factory=list)
    package_dirs: dict[str, str] = field(default_factory=dict)  # task package -> folder

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries.get(kind, {}))

    def path(self, kind: str, name: str) -> str:
        table = self.entries.get(kind, {})
        if name in table:
            return table[name]
        singular = kind.rstrip("s")
        known = ", ".join(sorted(table)) or "none"
        raise UserError(f"unknown {singular} {name!r} (known: {known})")

    def load(self, kind: str, name: str) -> Any:
        return import_path(self.path(kind, name))

    def versions(self) -> dict[str, str]:
        return {p.name: f"{p.distribution} {p.version}" for p in self.plugins}


def import_path(path: str) -> Any:
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class PluginFilter:
    """``AVHB_PLUGINS`` read (module docstring): the third-party plugins
    named in (None: every one) and the plugins named out."""

    named: frozenset[str] | None = None
    named_out: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls) -> "PluginFilter":
        raw = os.environ.get("AVHB_PLUGINS") or ""
        names = [p.strip() for p in raw.split(",") if p.strip()]
        out = frozenset(n[1:].strip() for n in names if n.startswith("-"))
        named = frozenset(n for n in names if not n.startswith("-"))
        return cls(named or None, out)

    def loads(self, name: str, builtin: bool) -> bool:
        if name in self.named_out:
            return False
        return builtin or self.named is None or name in self.named


def _cache_key() -> str:
    """What entry-point discovery reads: the distributions (``*.dist-info``
    and ``*.egg-info`` folders, each with its mtime: an install, upgrade or
    uninstall adds, renames or rewrites one) in every sys.path folder, the
    plugin filter and the interpreter.  Other files in those folders do not
    count (``python -m`` puts the working folder on sys.path, and it changes
    all the time).  Kept whole in the cache file and compared exactly."""
    parts = [sys.version, str(os.environ.get("AVHB_PLUGINS"))]
    for entry in sys.path:
        parts.append(f"@{entry}")
        try:
            with os.scandir(entry or ".") as found:
                parts += sorted(f"{e.name}|{e.stat().st_mtime_ns}" for e in found
                                if e.name.endswith((".dist-info", ".egg-info")))
        except NotADirectoryError:  # a zip on sys.path: its own mtime
            parts.append(f"zip|{os.stat(entry).st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "\n".join(parts)


def _files_fresh(files: dict[str, int]) -> bool:
    try:
        return all(os.stat(path).st_mtime_ns == mtime for path, mtime in files.items())
    except OSError:
        return False


@lru_cache(maxsize=1)
def get_registry() -> Registry:
    """The registry, from the on-disk cache when nothing installed changed
    (no plugin module is imported then), else by loading the entry points."""
    import json
    import zlib  # loaded with the interpreter already; hashlib would load OpenSSL

    from avhb.paths import cache_dir

    key = _cache_key()
    cache_file = cache_dir() / f"registry-{zlib.crc32(key.encode()):08x}.json"
    try:
        data = json.loads(cache_file.read_text())
        if data.get("key") == key and _files_fresh(data["files"]):
            return Registry([PluginInfo(**p) for p in data["plugins"]], data["entries"],
                            [tuple(t) for t in data["task_packages"]], data["preset_files"], [], data["package_dirs"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    before = set(sys.modules)
    registry = _load_registry()
    if not registry.failed:
        _save(cache_file, key, registry, set(sys.modules) - before)
    return registry


def _save(cache_file, key: str, registry: Registry, loaded: AbstractSet[str] = frozenset()) -> None:
    """Write the cache.  It stays fresh while the files it was made from
    keep their mtime: each plugin's entry module, and the modules of the
    plugin's own package that loading it imported (``loaded``; the packs'
    ``plugin.py`` files the built-in ``tasks`` plugin gathers)."""
    import json

    files = {}
    own = tuple(p.module.rpartition(".")[0] + "." for p in registry.plugins if "." in p.module)
    names = [p.module for p in registry.plugins] + sorted(n for n in loaded if n.startswith(own))
    for name in names:
        module = sys.modules.get(name)
        if module is not None and (file := getattr(module, "__file__", None)):
            files[file] = os.stat(file).st_mtime_ns
    for folder in registry.package_dirs.values():
        init = os.path.join(folder, "__init__.py")
        if os.path.exists(init):
            files[init] = os.stat(init).st_mtime_ns
    data = {"key": key, "plugins": [p.__dict__ for p in registry.plugins], "entries": registry.entries,
            "task_packages": registry.task_packages, "preset_files": registry.preset_files,
            "package_dirs": registry.package_dirs, "files": files}
    try:
        text = json.dumps(data)
        write_atomic(cache_file, lambda fh: fh.write(text), durable=False)
        stale = sorted(cache_file.parent.glob("registry-*.json"), key=lambda p: p.stat().st_mtime)[:-8]
        for old in stale:  # keep a few: several environments may share one cache folder
            old.unlink(missing_ok=True)
    except (OSError, EnvironmentFailure):  # a cache that cannot be written is skipped: the next run loads again
        pass


def _package_dir(package: str) -> str | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _load_registry() -> Registry:
    from importlib.metadata import entry_points

    import pluggy

    from avhb import hookspecs

    allowed = PluginFilter.from_env()
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    plugins: list[PluginInfo] = []
    entries: dict[str, dict[str, str]] = {k: {} for k in KINDS}
    task_packages: list[tuple[str, str]] = []
    presets: list[str] = []
    failed: list[str] = []
    seen: dict[str, tuple[str, str]] = {}  # entry-point name -> (distribution, import path)
    eps = sorted(entry_points(group=GROUP), key=lambda e: (e.dist.name != "avhb" if e.dist else True, e.name))
    for ep in eps:
        dist = ep.dist.name if ep.dist else "?"
        if not allowed.loads(ep.name, builtin=dist == "avhb"):
            continue
        if ep.name in seen:
            if seen[ep.name] != (dist, ep.value):  # not just the same distribution seen twice on sys.path
                print(f"avhb: warning: two plugins are named {ep.name!r}: {seen[ep.name][0]} ({seen[ep.name][1]}) "
                      f"and {dist} ({ep.value}); only the first is loaded: rename one entry point", file=sys.stderr)
                failed.append(f"{ep.name} ({dist}: duplicate name)")
            continue
        seen[ep.name] = (dist, ep.value)
        version = ep.dist.version if ep.dist else "?"
        builtin = dist == "avhb"
        try:
            module = ep.load()
            pm.register(module, name=ep.name)
        except Exception as exc:  # a broken plugin must not break the others
            print(f"avhb: warning: plugin {ep.name!r} ({dist}) failed to load: {exc}", file=sys.stderr)
            failed.append(ep.name)
            continue
        plugins.append(PluginInfo(ep.name, ep.value, dist, version, builtin))
    by_name = {p.name: p for p in plugins}

    def prefix(plugin_name: str) -> str:
        return "" if by_name[plugin_name].builtin else f"{plugin_name}/"

    owner: dict[tuple[str, str], str] = {}
    for kind in KINDS:
        for impl in getattr(pm.hook, f"avhb_{kind}").get_hookimpls():
            table = impl.function() or {}
            names = [prefix(impl.plugin_name) + n for n in table]
            for name, path in zip(names, table.values()):
                if name in entries[kind] and entries[kind][name] != path:
                    print(f"avhb: warning: {kind[:-1]} {name!r} is registered by plugins {owner[(kind, name)]!r} "
                          f"({entries[kind][name]}) and {impl.plugin_name!r} ({path}); the latter wins",
                          file=sys.stderr)
                entries[kind][name] = path
                owner[(kind, name)] = impl.plugin_name
            by_name[impl.plugin_name].provides[kind] = sorted(names)
    for impl in pm.hook.avhb_task_packages.get_hookimpls():
        pkgs = list(cast("list[str]", impl.function()) or [])  # the hookspec's return type (pluggy: object)
        namespace = prefix(impl.plugin_name).rstrip("/")
        task_packages.extend((namespace, p) for p in pkgs)
        by_name[impl.plugin_name].provides["task_packages"] = pkgs
    for impl in pm.hook.avhb_model_presets.get_hookimpls():
        presets.extend(cast("list[str]", impl.function()) or [])  # the hookspec's return type (pluggy: object)
    package_dirs = {pkg: d for _, pkg in task_packages if (d := _package_dir(pkg))}
    return Registry(plugins, entries, task_packages, presets, failed, package_dirs)

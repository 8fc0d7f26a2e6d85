"""The registry cache: kept while only unrelated files change on sys.path
(the working folder of `python -m`), dropped when a distribution appears,
changes or goes."""
from __future__ import annotations

import os
import time

from avhb import registry


def _loads(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = registry._load_registry

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(registry, "_load_registry", counting)
    return calls


def _fresh():
    registry.get_registry.cache_clear()
    return registry.get_registry()


def test_unrelated_files_on_sys_path_keep_the_cache(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = _loads(monkeypatch)
    _fresh()
    assert calls == [1]
    (tmp_path / "results.json").write_text("{}")  # a run writing next to where avhb was started
    (tmp_path / "runs").mkdir()
    os.utime(tmp_path, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    _fresh()
    assert calls == [1]


def test_a_new_or_removed_distribution_reloads(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = _loads(monkeypatch)
    _fresh()
    dist = tmp_path / "late_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: late-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[avhb]\nlate = late_plugin_mod\n")
    (tmp_path / "late_plugin_mod.py").write_text("")
    reg = _fresh()
    assert calls == [1, 1] and "late" in {p.name for p in reg.plugins}
    assert _fresh() is not None and calls == [1, 1]
    for f in dist.iterdir():
        f.unlink()
    dist.rmdir()
    reg = _fresh()  # the same distributions as at first: that state's cache file answers, without the plugin
    assert "late" not in {p.name for p in reg.plugins} and "late/x" not in str(reg.entries)
    registry.get_registry.cache_clear()


def test_a_module_the_plugin_gathers_from_is_watched(tmp_path, monkeypatch):
    """A plugin whose entry module gathers registrations from its package's
    other modules (as the built-in ``tasks`` plugin does from each pack's
    ``plugin.py``): editing one of those reloads the registry."""
    import sys

    monkeypatch.syspath_prepend(str(tmp_path))
    dist = tmp_path / "gathering-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gathering\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[avhb]\ngathering = gathering_pkg.plugin\n")
    pkg = tmp_path / "gathering_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text("from avhb import hookimpl\n\n\n@hookimpl\ndef avhb_commands():\n"
                                   "    from . import part\n    return dict(part.COMMANDS)\n")
    part = pkg / "part.py"
    part.write_text('COMMANDS = {"one": "gathering_pkg.part:main"}\n')
    calls = _loads(monkeypatch)
    assert "gathering/one" in _fresh().entries["commands"]
    for name in [m for m in sys.modules if m.startswith("gathering_pkg")]:
        monkeypatch.delitem(sys.modules, name)
    part.write_text('COMMANDS = {"one": "gathering_pkg.part:main", "two": "gathering_pkg.part:main"}\n')
    os.utime(part, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    assert "gathering/two" in _fresh().entries["commands"] and calls == [1, 1]
    registry.get_registry.cache_clear()


def test_a_cache_folder_that_cannot_be_written_is_skipped_not_fatal(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("AVHB_CACHE_DIR", str(blocked))
    calls = _loads(monkeypatch)
    first = _fresh()
    assert calls == [1] and first.entries  # loaded from the entry points; the cache write failed quietly
    _fresh()
    assert calls == [1, 1]  # nothing was cached: the next start loads again
    registry.get_registry.cache_clear()

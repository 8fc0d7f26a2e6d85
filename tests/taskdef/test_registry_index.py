"""Plugin discovery through entry points, namespacing, the env filter, a
broken plugin, and the on-disk task index with its invalidation."""
from __future__ import annotations

import os
import time

from avhb.registry import get_registry
from avhb.taskdef.index import build_index
from tests.conftest import run_cli


def test_installed_plugin_is_discovered_and_namespaced(testpack):
    reg = get_registry()
    names = {p.name: p for p in reg.plugins}
    assert names["testpack"].distribution == "avhb-testpack" and names["testpack"].version == "0.1"
    assert not names["testpack"].builtin and names["tasks"].builtin
    assert "testpack/echo" in reg.entries["backends"]
    assert "testpack/exact" in reg.entries["metrics"]
    assert "testpack/keyword" in reg.entries["judges"]
    index = build_index(reg)
    assert {"testpack/qa_easy", "testpack/qa_hard", "testpack/qa_judged"} <= set(index.tasks)
    assert index.group_members("testpack/qa_all") == ["testpack/qa_easy", "testpack/qa_hard"]


def test_env_restricts_plugins(testpack, monkeypatch):
    monkeypatch.setenv("AVHB_PLUGINS", "tasks,metrics,backends")
    get_registry.cache_clear()
    reg = get_registry()
    assert "testpack" not in {p.name for p in reg.plugins}
    assert "testpack/echo" not in reg.entries["backends"]


def test_broken_plugin_warns_once_and_others_work(testpack, tmp_path):
    dist = tmp_path / "broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[avhb]\nbroken = broken_plugin_mod\n")
    (tmp_path / "broken_plugin_mod.py").write_text("raise RuntimeError('boom at import')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(testpack)])}
    proc = run_cli("list", "plugins", env=env)
    assert proc.returncode == 0
    warnings = [line for line in proc.stderr.splitlines() if "broken" in line]
    assert len(warnings) == 1 and "boom at import" in warnings[0]
    assert "testpack" in proc.stdout and "broken\tFAILED TO LOAD" in proc.stdout


def test_index_is_cached_and_invalidated_by_file_change(testpack_copy):
    first = build_index()
    assert not first.from_cache
    second = build_index()
    assert second.from_cache and second.tasks == first.tasks
    qa = testpack_copy / "avhb_testpack" / "tasks" / "qa" / "qa.yaml"
    original = qa.read_text()
    qa.write_text(original.replace("split: [easy, hard]", "split: [easy, hard, extra]"))
    os.utime(qa, (time.time() + 5, time.time() + 5))
    third = build_index()
    assert not third.from_cache
    assert "testpack/qa_extra" in third.tasks
    qa.write_text(original)
    os.utime(qa, (time.time() + 10, time.time() + 10))
    assert "testpack/qa_extra" not in build_index().tasks


def test_list_tasks_imports_no_hooks_or_heavy_modules(testpack):
    code = ("import sys; from avhb.cli import main; main(['list','tasks']); "
            "bad=[m for m in ('avhb_testpack.tasks.qa.hooks','torch','datasets','jsonschema','numpy','openai',"
            "'avhb.run.evaluator') if m in sys.modules]; "
            "print('IMPORTED', bad)")
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(testpack))
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)  # warm the index
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "IMPORTED []" in proc.stdout, proc.stdout + proc.stderr


def test_list_plugins_cli_shows_versions_and_provides(testpack):
    proc = run_cli("list", "plugins")
    assert proc.returncode == 0
    assert "testpack\tavhb-testpack 0.1\tthird-party" in proc.stdout
    assert "backends: testpack/echo" in proc.stdout


def test_index_invalidated_by_included_base_change(testpack_copy):
    assert "via_base" not in build_index().tasks["testpack/qa_judged"]["tags"]
    base = testpack_copy / "avhb_testpack" / "tasks" / "qa" / "_base.yaml"
    base.write_text(base.read_text() + "tag: via_base\n")
    os.utime(base, (time.time() + 5, time.time() + 5))
    index = build_index()
    assert not index.from_cache
    assert "testpack/via_base" in index.tasks["testpack/qa_judged"]["tags"]  # namespaced like task names


def test_two_plugins_with_one_name_warn_naming_both(testpack, tmp_path):
    """Issue 15, defect 5: the second plugin of one entry-point name was dropped silently."""
    dist = tmp_path / "other_pack-2.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: other-pack\nVersion: 2.0\n")
    (dist / "entry_points.txt").write_text("[avhb]\ntestpack = other_pack_mod\n")
    (tmp_path / "other_pack_mod.py").write_text("")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(testpack)])}
    proc = run_cli("list", "plugins", env=env)
    assert proc.returncode == 0
    warnings = [line for line in proc.stderr.splitlines() if "two plugins are named 'testpack'" in line]
    assert len(warnings) == 1, proc.stderr
    assert "avhb-testpack (avhb_testpack.plugin)" in warnings[0] and "other-pack (other_pack_mod)" in warnings[0]

"""The incremental task index: an entry per YAML file keyed by the file and
by the include bases and hook modules it names.  Files read are counted by
the interpreter itself (an audit hook on ``open`` in a fresh process), not by
the index's own bookkeeping."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from avhb.errors import UserError

ONLY_INCR = "incr,-tasks"  # the test plugin's tasks alone: the built-in packs named out

# Build the index in a fresh process and report what it opened under the plugin folder.
_PROBE = textwrap.dedent("""
    import json, os, sys
    root = os.path.realpath(sys.argv[1])
    opened, listed = [], []
    def audit(event, args):
        if event == "os.scandir" and isinstance(args[0], str):
            path = os.path.realpath(args[0])
            if path.startswith(root + os.sep):
                listed.append(os.path.relpath(path, root))
        if event == "open" and isinstance(args[0], str):
            path = os.path.realpath(args[0])
            if (path.startswith(root + os.sep) and not path.endswith((".pyc", "METADATA", "entry_points.txt"))
                    and not os.path.isdir(path)):  # folders are opened to stat their files, not read
                opened.append(os.path.relpath(path, root))
    from avhb.registry import get_registry
    from avhb.taskdef.index import build_index
    from avhb.taskdef.index import build_index
    registry = get_registry()  # plugins imported first: only what the index opens is counted
    sys.addaudithook(audit)
    index = build_index(registry)
    print(json.dumps({"opened": sorted(set(opened)), "listed": sorted(listed), "from_cache": index.from_cache,
                      "errors": index.errors,
                      "tasks": {n: i["tags"] for n, i in index.tasks.items()}, "groups": sorted(index.groups),
                      "refreshed": [os.path.relpath(os.path.realpath(p), root) for p in index.refreshed]}))
""")


def _plugin(site: Path, name: str, version: str = "1.0") -> Path:
    """A task plugin ``name`` installed as a distribution folder under ``site``; returns its task folder."""
    pkg = site / f"{name}_pkg"
    tasks = pkg / "tasks"
    tasks.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (tasks / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text("from avhb.hookspecs import hookimpl\n\n@hookimpl\n"
                                   f"def avhb_task_packages():\n    return ['{name}_pkg.tasks']\n")
    _dist(site, name, version)
    return tasks


def _dist(site: Path, name: str, version: str) -> None:
    dist = site / f"{name}_pkg-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-pkg\nVersion: {version}\n")
    (dist / "entry_points.txt").write_text(f"[avhb]\n{name} = {name}_pkg.plugin\n")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    _bump(path)
    return path


def _bump(path: Path) -> None:
    """A new mtime even on a file system with coarse timestamps."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, max(st.st_mtime_ns, time.time_ns()) + 2_000_000_000))


def _probe(site: Path, plugins: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
               AVHB_PLUGINS=plugins)
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(site)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def site(tmp_path):
    """One plugin: a folder with an include chain, a hook module and a family, and an unrelated folder."""
    site = tmp_path / "site"
    tasks = _plugin(site, "incr")
    a = tasks / "alpha"
    _write(a / "__init__.py", "")
    _write(a / "_defaults.yaml", "metadata: {version: 1}\n")
    _write(a / "_base.yaml", """
        include: _defaults.yaml
        doc_to_text: "{{q}}"
        doc_to_target: a
        """)
    _write(a / "hooks.py", "def prep(docs):\n    return docs\n\n\ndef other(docs):\n    return docs\n")
    _write(a / "t1.yaml", "include: _base.yaml\ntask: t1\n")
    _write(a / "fam.yaml", """
        include: _base.yaml
        task: fam_${x}
        expand:
          x: [a, b, c]
        """)
    _write(a / "t3.yaml", 'task: t3\ndoc_to_text: "{{q}}"\nprocess_docs: !function hooks.prep\n')
    _write(a / "t4.yaml", 'task: t4\ndoc_to_text: "{{q}}"\nprocess_docs: !function hooks.other\n')
    _write(a / "plain.yaml", 'task: plain\ndoc_to_text: "{{q}}"\n')
    b = tasks / "beta"
    _write(b / "__init__.py", "")
    _write(b / "_base.yaml", 'doc_to_text: "{{q}}"\n')
    _write(b / "t5.yaml", "include: _base.yaml\ntask: t5\n")
    _write(b / "group.yaml", "group: both\ntask: [t1, t5, fam_a]\n")
    return site


def test_editing_a_base_and_a_hook_module_rereads_their_dependents_only(site):
    alpha = "incr_pkg/tasks/alpha/"
    cold = _probe(site, ONLY_INCR)
    assert not cold["errors"], cold["errors"]
    assert set(cold["tasks"]) == {"incr/t1", "incr/fam_a", "incr/fam_b", "incr/fam_c", "incr/t3", "incr/t4",
                                  "incr/plain", "incr/t5"}
    # every file read once: each base and the hook module once, not once per task
    assert {alpha + f for f in ("_defaults.yaml", "_base.yaml", "hooks.py", "t1.yaml", "fam.yaml")} <= set(cold["opened"])

    warm = _probe(site, ONLY_INCR)
    assert warm["from_cache"] and warm["opened"] == [] and warm["tasks"] == cold["tasks"]

    tasks = site / "incr_pkg" / "tasks" / "alpha"
    _write(tasks / "_defaults.yaml", "metadata: {version: 1}\ntag: [edited]\n")  # two levels below t1 and fam
    _write(tasks / "hooks.py", "def prep2(docs):\n    return docs\n\n\ndef other(docs):\n    return docs\n")
    after = _probe(site, ONLY_INCR)
    # the edited files and the files that name them (directly or through the include chain): nothing else
    # (the bases are index entries too: a _*.yaml file may define a group, as lm-eval's do)
    assert after["opened"] == sorted(alpha + f for f in ("_defaults.yaml", "_base.yaml", "hooks.py", "t1.yaml",
                                                          "fam.yaml", "t3.yaml", "t4.yaml"))
    assert sorted(after["refreshed"]) == sorted(alpha + f for f in ("_defaults.yaml", "_base.yaml", "t1.yaml",
                                                                    "fam.yaml", "t3.yaml", "t4.yaml"))
    assert after["tasks"]["incr/t1"] == ["incr/edited"] and after["tasks"]["incr/fam_c"] == ["incr/edited"]
    assert after["tasks"]["incr/t5"] == [] and "incr/t4" in after["tasks"]
    # the hook t3 names is gone: its file:line error, and t3 leaves the index
    assert "incr/t3" not in after["tasks"]
    assert after["errors"] == [f"{(tasks / 't3.yaml').resolve()}:3: process_docs: hook function 'prep' not defined in hooks.py"]

    again = _probe(site, ONLY_INCR)
    assert again["from_cache"] and again["opened"] == [] and again["errors"] == after["errors"]

    _write(tasks / "hooks.py", "def prep(docs):\n    return docs\n\n\ndef other(docs):\n    return docs\n")
    fixed = _probe(site, ONLY_INCR)
    assert fixed["opened"] == sorted(alpha + f for f in ("hooks.py", "t3.yaml", "t4.yaml")) and not fixed["errors"]
    assert "incr/t3" in fixed["tasks"]


def _age(folder: Path, seconds: float = 60) -> None:
    """Date a folder's mtime back (a folder that has not changed for a while)."""
    past = time.time_ns() - int(seconds * 1e9)
    os.utime(folder, ns=(past, past))


def test_a_file_edited_in_place_is_seen_though_its_folder_did_not_change(site):
    """The walk reuses a folder's listing while the folder's mtime is the
    one recorded, but editing a file's text does not change its folder's
    mtime: the file itself must still be looked at."""
    tasks = site / "incr_pkg" / "tasks"
    alpha = tasks / "alpha"
    for folder in (tasks, alpha, tasks / "beta"):
        _age(folder)
    _probe(site, ONLY_INCR)
    warm = _probe(site, ONLY_INCR)
    assert warm["from_cache"] and warm["listed"] == [] and warm["opened"] == []  # no folder listed again
    folder_mtime = alpha.stat().st_mtime_ns
    t1 = alpha / "t1.yaml"
    text = t1.read_text()
    with open(t1, "r+") as fh:  # in place: same inode, same size, no entry of the folder changes
        fh.write(text.replace("task: t1", "task: tX"))
    _bump(t1)
    assert alpha.stat().st_mtime_ns == folder_mtime and t1.stat().st_size == len(text)
    edited = _probe(site, ONLY_INCR)
    assert edited["refreshed"] == ["incr_pkg/tasks/alpha/t1.yaml"] and edited["listed"] == []
    assert "incr/tX" in edited["tasks"] and "incr/t1" not in edited["tasks"]
    # a new file changes the folder's mtime: that folder, and only it, is listed again
    _write(alpha / "t6.yaml", 'task: t6\ndoc_to_text: "{{q}}"\n')
    _age(alpha)
    added = _probe(site, ONLY_INCR)
    assert added["listed"] == ["incr_pkg/tasks/alpha"] and added["refreshed"] == ["incr_pkg/tasks/alpha/t6.yaml"]
    assert "incr/t6" in added["tasks"]
    (alpha / "t6.yaml").unlink()
    _age(alpha, 30)
    removed = _probe(site, ONLY_INCR)
    assert removed["listed"] == ["incr_pkg/tasks/alpha"] and "incr/t6" not in removed["tasks"]
    # a new subfolder changes its parent's mtime; the subfolder is listed on its first walk
    _write(alpha / "deeper" / "t7.yaml", 'task: t7\ndoc_to_text: "{{q}}"\n')
    _age(alpha, 20)
    _age(alpha / "deeper")
    deeper = _probe(site, ONLY_INCR)
    assert deeper["listed"] == ["incr_pkg/tasks/alpha", "incr_pkg/tasks/alpha/deeper"] and "incr/t7" in deeper["tasks"]


def test_a_folder_changed_just_before_a_walk_is_listed_again_next_time(site):
    """On a file system with coarse timestamps a folder changed right after
    it was listed can keep the mtime recorded: a folder whose mtime is not
    older than the walk by 2 s is not trusted, and is listed again."""
    tasks = site / "incr_pkg" / "tasks"
    alpha = tasks / "alpha"
    for folder in (tasks, alpha, tasks / "beta"):
        _age(folder)
    _probe(site, ONLY_INCR)
    soon = time.time_ns() + 60_000_000_000  # as recent as can be: modified "during" the next walk
    os.utime(alpha, ns=(soon, soon))
    first = _probe(site, ONLY_INCR)
    assert first["listed"] == ["incr_pkg/tasks/alpha"]
    (alpha / "sneaky.yaml").write_text('task: sneaky\ndoc_to_text: "{{q}}"\n')
    os.utime(alpha, ns=(soon, soon))  # the same mtime as the walk recorded: only the rule above sees the file
    second = _probe(site, ONLY_INCR)
    assert second["listed"] == ["incr_pkg/tasks/alpha"] and "incr/sneaky" in second["tasks"]
    _age(alpha)
    _probe(site, ONLY_INCR)
    assert _probe(site, ONLY_INCR)["listed"] == []  # settled: an old mtime is trusted again


def test_missing_base_or_module_is_watched_until_it_appears(site):
    tasks = site / "incr_pkg" / "tasks" / "alpha"
    _write(tasks / "late.yaml", 'include: _late.yaml\ntask: late\n')
    _write(tasks / "late_hook.yaml", 'task: late_hook\ndoc_to_text: "{{q}}"\nprocess_docs: !function later.prep\n')
    first = _probe(site, ONLY_INCR)
    assert any("late.yaml:1: include: included file '_late.yaml' not found" in e for e in first["errors"])
    assert any("late_hook.yaml:3: process_docs: hook module 'later' not found" in e for e in first["errors"])
    assert _probe(site, ONLY_INCR)["from_cache"]
    _write(tasks / "_late.yaml", 'doc_to_text: "{{q}}"\n')
    _write(tasks / "later.py", "def prep(docs):\n    return docs\n")
    now = _probe(site, ONLY_INCR)
    assert {"incr/late", "incr/late_hook"} <= set(now["tasks"]) and not now["errors"]
    assert sorted(now["refreshed"]) == ["incr_pkg/tasks/alpha/_late.yaml", "incr_pkg/tasks/alpha/late.yaml",
                                        "incr_pkg/tasks/alpha/late_hook.yaml"]


def test_plugin_version_change_rebuilds_only_that_plugins_entries(site):
    other = _plugin(site, "other")
    _write(other / "x" / "__init__.py", "")
    _write(other / "x" / "o1.yaml", 'task: o1\ndoc_to_text: "{{q}}"\n')
    _write(other / "x" / "o2.yaml", 'task: o2\ndoc_to_text: "{{q}}"\n')
    first = _probe(site, ONLY_INCR + ",other")
    assert {"other/o1", "other/o2", "incr/t1"} <= set(first["tasks"])
    assert _probe(site, ONLY_INCR + ",other")["from_cache"]
    # an upgrade as pip does it: the old dist-info removed, the new one written
    for f in (site / "other_pkg-1.0.dist-info").iterdir():
        f.unlink()
    (site / "other_pkg-1.0.dist-info").rmdir()
    _dist(site, "other", "2.0")
    upgraded = _probe(site, ONLY_INCR + ",other")
    assert sorted(upgraded["refreshed"]) == ["other_pkg/tasks/x/o1.yaml", "other_pkg/tasks/x/o2.yaml"]
    assert all(p.startswith("other_pkg/") for p in upgraded["opened"])
    assert upgraded["tasks"] == first["tasks"]


def test_deleted_added_and_duplicate_files(site):
    tasks = site / "incr_pkg" / "tasks"
    _probe(site, ONLY_INCR)
    dup = _write(tasks / "beta" / "zz_dup.yaml", 'task: t5\ndoc_to_text: "{{other}}"\n')
    with_dup = _probe(site, ONLY_INCR)
    assert with_dup["refreshed"] == ["incr_pkg/tasks/beta/zz_dup.yaml"]
    assert any(e.startswith(f"{tasks / 'beta' / 'zz_dup.yaml'}:1: task 'incr/t5' is also defined in") for e in with_dup["errors"])
    (tasks / "beta" / "t5.yaml").unlink()
    (tasks / "beta").touch()
    gone = _probe(site, ONLY_INCR)
    # the first definition went away: the second stands, read from its cached entry, no longer an error
    assert gone["refreshed"] == [] and gone["opened"] == [] and "incr/t5" in gone["tasks"]
    assert not any("also defined" in e for e in gone["errors"])
    dup.unlink()
    assert "incr/t5" not in _probe(site, ONLY_INCR)["tasks"]


def test_errors_keep_file_and_line_from_the_cache(site):
    tasks = site / "incr_pkg" / "tasks" / "alpha"
    _write(tasks / "_base.yaml", 'include: _defaults.yaml\ndoc_to_text: "{{q}}"\nmedia:\n  frames: many\n')
    first = _probe(site, ONLY_INCR)
    base = tasks.resolve() / "_base.yaml"
    # the base's own file and line, for the base (an index entry itself) and each file that includes it
    assert sorted(e for e in first["errors"] if e.startswith(str(base))) == \
        [f"{base}:4: media.frames: expected integer, got str 'many'"] * 3
    assert _probe(site, ONLY_INCR)["errors"] == first["errors"]


def test_index_api_in_process(site, monkeypatch):
    """The same entry points, in this process: build_index, load_task, from_cache."""
    from avhb.registry import get_registry
    from avhb.taskdef.index import build_index
    from avhb.taskdef.index import load_task

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("AVHB_PLUGINS", ONLY_INCR)
    get_registry.cache_clear()
    try:
        first = build_index()
        assert not first.from_cache and len(first.refreshed) == 10  # 7 task files, 3 bases
        second = build_index()
        assert second.from_cache and second.tasks == first.tasks and second.groups == first.groups
        task = load_task(second, "incr/fam_b")
        assert task.config["doc_to_text"] == "{{q}}" and task.lines[("task",)] == 2
        assert second.group_members("incr/both") == ["incr/t1", "incr/t5", "incr/fam_a"]
    finally:
        get_registry.cache_clear()


def test_family_members_share_no_mutable_part(tmp_path):
    from avhb.taskdef.yaml_include import expand_family

    members = expand_family({"task": "t_${a}", "expand": {"a": ["1", "2"]}, "dataset_kwargs": {"k": ["v"]},
                             "generation_kwargs": {"max_tokens": 4}})
    members[0]["dataset_kwargs"]["k"].append("changed")
    members[0]["generation_kwargs"]["max_tokens"] = 8
    assert members[1]["dataset_kwargs"] == {"k": ["v"]} and members[1]["generation_kwargs"] == {"max_tokens": 4}


def test_base_read_once_per_build_but_afresh_without_sources(tmp_path):
    """Within one build a base is parsed once; a plain resolve_file (a run's load_task) always reads afresh."""
    from avhb.taskdef import config, yaml_include
    from avhb.taskdef.filestats import Sources

    pack = tmp_path / "pack"
    _write(pack / "_base.yaml", 'doc_to_text: "{{q}}"\n')
    for i in range(3):
        _write(pack / f"t{i}.yaml", f"include: _base.yaml\ntask: t{i}\n")
    reads: list[str] = []
    real = yaml_include.read_yaml

    def counting(path):
        reads.append(Path(path).name)
        return real(path)

    yaml_include.read_yaml = counting
    try:
        sources = Sources()
        for i in range(3):
            config.resolve_file(pack / f"t{i}.yaml", pack, "pack", "", sources=sources)
        assert sorted(reads) == ["_base.yaml", "t0.yaml", "t1.yaml", "t2.yaml"]
        reads.clear()
        config.resolve_file(pack / "t0.yaml", pack, "pack", "")
        config.resolve_file(pack / "t1.yaml", pack, "pack", "")
        assert sorted(reads) == ["_base.yaml", "_base.yaml", "t0.yaml", "t1.yaml"]
    finally:
        yaml_include.read_yaml = real


def test_yaml_error_line_comes_from_the_marked_parse(tmp_path):
    from avhb.taskdef.yaml_file import read_yaml

    path = _write(tmp_path / "t.yaml", "task: t1\ndoc_to_text: x\nmetric_list:\n  - metric: a\n   bad: [\n")
    with pytest.raises(UserError) as exc:
        read_yaml(path)
    assert str(exc.value).startswith(f"{path}:5: YAML error: ")


def test_damaged_cache_file_is_rebuilt_not_trusted(site, monkeypatch):
    from avhb.paths import cache_dir
    from avhb.registry import get_registry
    from avhb.taskdef.index import build_index

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("AVHB_PLUGINS", ONLY_INCR)
    get_registry.cache_clear()
    try:
        first = build_index()
        (part,) = (cache_dir() / "task-index").glob("incr_pkg.tasks-*.json")
        data = json.loads(part.read_text())
        for damage in (lambda d: d["tasks"][0].pop(), lambda d: d["tasks"][1].__setitem__(0, 10**6),
                       lambda d: d["depsets"].clear(), lambda d: d["mtimes"].pop(), lambda d: d["profiles"][0].pop(),
                       lambda d: d["folders"].__setitem__("alpha", [0, "t1.yaml", []])):
            broken = json.loads(json.dumps(data))
            damage(broken)
            part.write_text(json.dumps(broken))
            again = build_index()
            assert not again.from_cache and again.tasks == first.tasks and again.errors == first.errors
        part.write_text("{not json")
        assert build_index().tasks == first.tasks
    finally:
        get_registry.cache_clear()


def test_a_judge_prompt_file_and_a_metric_plugin_key_the_entries_they_decide(testpack_copy, monkeypatch):
    """A task naming a missing prompt file is broken; the file appearing
    mends it on the next build (it is a recorded dependency).  The set of
    registered metric names keys the package: a name that became known is
    no longer an error."""
    from avhb.registry import get_registry
    from avhb.taskdef.index import build_index

    folder = testpack_copy / "avhb_testpack" / "tasks" / "qa"
    yaml_file = folder / "prompted.yaml"
    yaml_file.write_text(
        "include: _base.yaml\ntask: qa_prompted\nmetric_list:\n  - function: hooks.Judged\n"
        "judges:\n  scorer:\n    default: testpack/keyword\n    prompt_file: prompts/scorer.txt\n    parser: score_0_2\n")
    index = build_index()
    assert "testpack/qa_prompted" not in index.tasks
    assert "prompt file 'prompts/scorer.txt' not found" in index.broken[str(yaml_file.resolve())]
    (folder / "prompts").mkdir()
    (folder / "prompts" / "scorer.txt").write_text("Question: {{question}}\nResponse: {{response}}\nScore 0-2.")
    index = build_index()
    assert index.refreshed == [str(yaml_file.resolve())] and "testpack/qa_prompted" in index.tasks
    assert not index.broken and index.tasks["testpack/qa_prompted"]["judges"] == ["scorer"]

    (folder / "custom.yaml").write_text("include: _base.yaml\ntask: qa_custom\nmetric_list:\n  - metric: testpack/later\n")
    index = build_index()
    assert "unknown metric 'testpack/later'" in index.broken[str((folder / "custom.yaml").resolve())]
    registry = get_registry()
    monkeypatch.setitem(registry.entries["metrics"], "testpack/later", "avhb_testpack.plugin:Exact")
    index = build_index(registry)
    assert "testpack/qa_custom" in index.tasks and not index.from_cache and not index.broken


def test_a_task_defined_twice_keeps_its_first_definition_and_names_both_files(testpack_copy):
    from avhb.taskdef.index import build_index

    folder = testpack_copy / "avhb_testpack" / "tasks" / "qa"
    first = build_index().tasks["testpack/qa_easy"]
    again = folder / "zz_again.yaml"
    again.write_text("include: _base.yaml\ntask: qa_easy\ntag: later_tag\n")
    index = build_index()
    kept = index.tasks["testpack/qa_easy"]
    assert kept["file"] == first["file"] and kept["tags"] == first["tags"] and "testpack/later_tag" not in kept["tags"]
    assert index.duplicates["testpack/qa_easy"] == [first["file"], str(again.resolve())]
    with pytest.raises(UserError, match="'testpack/qa_easy' is defined twice"):
        index.resolve(["testpack/qa_easy"])
    assert build_index().tasks["testpack/qa_easy"] == kept  # the same from the cached part


def test_the_index_cache_is_keyed_on_every_module_the_index_runs():
    """Editing a module whose verdicts the cached index holds re-validates:
    every taskdef module the index imports, directly or through another
    (imports inside functions too), is one of the files it is keyed on."""
    import ast
    import os

    from avhb.taskdef import index

    here = Path(index.__file__).parent
    listed = {os.path.relpath(f, here) for f in index._VALIDATOR_FILES}

    def imported(name: str) -> set[str]:
        out = set()
        for node in ast.walk(ast.parse((here / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("avhb.taskdef"):
                sub = node.module.removeprefix("avhb.taskdef").lstrip(".")
                out |= {sub.replace(".", "/") + ".py"} if sub else {a.name + ".py" for a in node.names}
        return {f for f in out if (here / f).is_file()}

    seen, todo = set(), ["index.py"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += imported(name)
    assert sorted(seen - listed) == [] and "schema/task.schema.json" in listed

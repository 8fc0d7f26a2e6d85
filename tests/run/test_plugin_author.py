"""Plugins, from the author's side: ``AVHB_PLUGINS`` picks third-party
plugins and keeps the built-ins (unless named out with ``-``); a judge
whose plugin is missing stops the run before any sample with one line
naming the task, the role and the plugin; ``avhb list`` counts what can
judge; ``--help`` says how a model hears audio and where to look."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import _clear_registry, run_cli

KW_TASK = """task: graded
data_loader: !function hooks.load
doc_id: id
doc_to_text: "{{q}}"
doc_to_target: a
metric_list:
  - metric: judge_012
judges:
  scorer:
    default: kw/keyword
    prompt: "Question {{question}} Reference {{reference}} Answer {{response}}"
    parser: score_0_2
"""


@pytest.fixture
def plugins_env(monkeypatch):
    """Sets AVHB_PLUGINS for this process and reads the registry afresh."""
    from avhb.registry import get_registry

    def load(value: str):
        monkeypatch.setenv("AVHB_PLUGINS", value)
        _clear_registry()
        return get_registry()

    yield load
    monkeypatch.delenv("AVHB_PLUGINS", raising=False)
    _clear_registry()


def _names(registry) -> set[str]:
    return {p.name for p in registry.plugins}


def test_avhb_plugins_names_third_party_plugins_and_keeps_the_built_ins(plugins_env):
    builtins = {"tasks", "metrics", "backends"}
    only_example = plugins_env("example")
    assert _names(only_example) == builtins | {"example"}
    assert "judge_012" in only_example.entries["metrics"] and "random" in only_example.entries["backends"]
    assert _names(plugins_env("example,-tasks")) == {"metrics", "backends", "example"}
    assert _names(plugins_env("-embed")) == builtins | {"example"}  # only names out: every other plugin loads
    assert _names(plugins_env("tasks,metrics,backends")) == builtins  # the built-ins alone


def test_a_pack_plugin_alone_still_runs_on_built_in_metrics_and_backends(tmp_path):
    """The issue's case: ``AVHB_PLUGINS=mypack`` dropped the built-in
    metrics and backends; the example task runs on the built-in ``random``
    baseline and judge pool with only its own plugin named."""
    proc = run_cli("--tasks", "example/capitals", "--model", "random,seed=3", "--sample-data",
                   "--judge", "overlap=example/overlap_judge", "--output-dir", str(tmp_path / "run"), "--no-report",
                   env={"AVHB_PLUGINS": "example"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["results"]["example/capitals"]["token_f1_n"] == 5


@pytest.fixture
def kw_pack(tmp_path):
    pack = tmp_path / "kwpack"
    pack.mkdir()
    (pack / "graded.yaml").write_text(KW_TASK)
    (pack / "hooks.py").write_text("def load(root, config):\n    return [{'id': 's1', 'q': 'Capital of France?', "
                                   "'a': 'Paris'}]\n")
    (tmp_path / "model.json").write_text(json.dumps({"Capital": "Paris"}))
    return tmp_path, pack


def _run_kw(kw_pack, *extra: str):
    root, pack = kw_pack
    return run_cli("--include_path", str(pack), "--tasks", "kwpack/graded", "--model",
                   f"scripted,replies={root / 'model.json'}", "--data", f"kwpack={root}",
                   "--output-dir", str(root / "run"), "--no-report", *extra)


def test_a_judge_whose_plugin_is_missing_names_task_role_and_plugin_before_any_sample(kw_pack):
    root = kw_pack[0]
    proc = _run_kw(kw_pack)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("avhb: error: task kwpack/graded: judge role 'scorer' (kw/keyword): unknown backend "
                           "'kw/keyword': plugin 'kw' not installed? (no installed plugin is named 'kw': pip "
                           "install the package that provides it"), line
    assert "Traceback" not in proc.stderr
    journal = root / "run" / "journal"
    assert not journal.exists() or not any(p.stat().st_size for p in journal.rglob("*") if p.is_file())


def test_a_plugin_that_registers_no_such_judge_says_what_it_registers(kw_pack):
    proc = _run_kw(kw_pack, "--judge", "scorer=example/nope")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert ("task kwpack/graded: judge role 'scorer' (example/nope): unknown backend 'example/nope': plugin "
            "'example' (avhb-example-plugin 0.1.0) registers no backend or judge by that name (it registers: "
            "example/overlap_judge)") in line, line


def test_list_alone_counts_every_kind_of_judge():
    """``avhb list`` counted only judge plugins ("judges 0" without one);
    any backend judges a role, so the count is judge kinds plus backends."""
    counts = {}
    for env in ({"AVHB_PLUGINS": "-embed,-example"}, {}):
        proc = run_cli("list", env=env, unset=() if env else ("AVHB_PLUGINS",))
        assert proc.returncode == 0, proc.stderr
        rows = dict(line.split("\t") for line in proc.stdout.splitlines())
        counts[bool(env)] = rows
    without, every = counts[True], counts[False]
    assert int(without["avhb list judges"]) == int(without["avhb list backends"]) > 0
    assert int(every["avhb list judges"]) == int(every["avhb list backends"]) + 2  # embed/minilm, example/overlap_judge


def _options(*command: str) -> dict[str, str]:
    """``--help``'s options: each one's first flag -> its whole entry
    (flags and help), whitespace collapsed."""
    proc = run_cli(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    entries: dict[str, str] = {}
    flag = None
    for line in proc.stdout.splitlines():
        if re.match(r"^  -", line):
            flag = line.split()[0].rstrip(",")
            entries[flag] = line.strip()
        elif flag and line.startswith("    "):
            entries[flag] += " " + line.strip()
        else:
            flag = None
    return entries


def test_help_says_how_a_model_or_judge_hears_audio_and_where_to_look():
    run = _options("run")
    model = run["--model"]
    assert "audio=true" in model and "`avhb list models`" in model and "`avhb list backends`" in model, model
    args = run["--model-args"]
    assert "audio=true" in args and "`avhb list backends NAME`" in args, args
    judge = run["--judge"]
    assert "audio=true" in judge and "`avhb list backends`" in judge, judge
    score = _options("score")["--judge"]
    assert "re-score" in score and "replace the run's own --judge flags" in score, score


def test_a_plugin_that_failed_to_load_is_not_called_missing():
    from avhb.model.backend import unknown_kind
    from avhb.registry import Registry

    registry = Registry(plugins=[], entries={"backends": {"openai": "x:y"}, "judges": {}}, task_packages=[],
                        preset_files=[], failed=["kw"])
    assert unknown_kind("kw/keyword", registry) == ("unknown backend 'kw/keyword': plugin 'kw' is installed but "
                                                    "failed to load (the warning above says why)")
    assert "not installed?" in unknown_kind("other/keyword", registry)
    assert unknown_kind("opena", registry) == "unknown backend 'opena' (known: openai)"

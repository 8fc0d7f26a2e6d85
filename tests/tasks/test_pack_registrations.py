"""Each built-in pack registers its own judge parsers and commands
(``tasks/<pack>/plugin.py``, gathered by ``tasks/plugin.py`` into the
``tasks`` plugin); the names users type are unchanged."""
from __future__ import annotations

import types

import pytest

from avhb import hookimpl
from avhb.registry import get_registry
from avhb.tasks import plugin as tasks_plugin
from tests.conftest import run_cli

COMMANDS = {"diagnose": "curve", "anchor-difficulty": "anchor", "anchor-compare": "anchor",
            "mmlongcite-build": "mmlongcite"}
PARSERS = {"curve_evidence_graph": "curve", "curve_hint": "curve"}


def test_every_pack_registers_its_own_names():
    modules = tasks_plugin.pack_plugins()
    owners = {}
    for module in modules:
        pack = module.__name__.split(".")[2]
        for hook in tasks_plugin.GATHERED:
            owners.update({name: pack for name in (getattr(module, hook, lambda: {})() or {})})
    assert owners == {**COMMANDS, **PARSERS}
    for name, path in tasks_plugin.avhb_commands().items():  # one naming pattern: <pack>/commands.py
        assert path.startswith(f"avhb.tasks.{COMMANDS[name]}.commands:"), path


def test_registered_names_load_and_run():
    registry = get_registry()
    for name in COMMANDS:
        assert callable(registry.load("commands", name))
    for name in PARSERS:
        parse = registry.load("judge_parsers", name)
        assert callable(parse) and parse.format_hint
    for name in COMMANDS:
        proc = run_cli(name, "--help")
        assert proc.returncode == 0 and f"usage: avhb {name}" in proc.stdout, proc.stderr


def _pack(name: str) -> types.ModuleType:
    return types.ModuleType(f"avhb.tasks.{name}.plugin")


def test_a_name_two_packs_register_is_an_error():
    a = _pack("a")
    a.avhb_commands = hookimpl(lambda: {"go": "x:main"})
    b = _pack("b")
    b.avhb_commands = hookimpl(lambda: {"go": "y:main"})
    with pytest.raises(RuntimeError, match="'go' is registered by avhb.tasks.a.plugin and by avhb.tasks.b.plugin"):
        tasks_plugin.gathered("avhb_commands", [a, b])
    b.avhb_commands = hookimpl(lambda: {"stop": "y:main"})
    assert tasks_plugin.gathered("avhb_commands", [a, b]) == {"go": "x:main", "stop": "y:main"}


def test_a_hook_the_tasks_plugin_does_not_gather_is_an_error():
    module = _pack("c")
    module.avhb_metrics = hookimpl(lambda: {"m": "x:M"})
    with pytest.raises(RuntimeError, match="avhb.tasks.c.plugin implements avhb_metrics, which tasks/plugin.py"):
        tasks_plugin.check_gathered(module)
    del module.avhb_metrics
    assert tasks_plugin.check_gathered(module) is module


@pytest.mark.parametrize("argv", [["diagnose", "{d}"], ["anchor-difficulty", "{d}"], ["anchor-compare", "{d}", "{d}"]],
                         ids=["diagnose", "anchor-difficulty", "anchor-compare"])
def test_a_pack_command_refuses_a_folder_that_is_not_a_run(tmp_path, argv):
    """The commands read their runs through the run-folder reader (avhb.ReopenedRun):
    a folder without run.json is refused in one line, exit 2, and nothing is written into it."""
    folder = tmp_path / "not_a_run"
    folder.mkdir()
    proc = run_cli(*(a.format(d=folder) for a in argv))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"avhb: error: {folder}: no run.json (not a run folder)"]
    assert list(folder.iterdir()) == []

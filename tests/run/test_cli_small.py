"""The small things a new user trips over (issue 24, item 8): listing tags,
``avhb list`` alone, a closed stdout, a failed command's run folder, the
README's API-server line and the plugin docs at the judge boundary."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_list_tags_prints_each_tag_with_its_tasks():
    proc = run_cli("list", "tags")
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split("\t") for line in proc.stdout.splitlines())
    assert lines["vidpair_halluc_tasks"].endswith(" tasks") and int(lines["vidpair_halluc_tasks"].split()[0]) >= 7
    assert "curve_locales" in lines
    as_json = json.loads(run_cli("list", "tags", "--json").stdout)
    assert "vidpair_binary" in as_json["vidpair_halluc_tasks"]


def test_list_alone_names_what_can_be_listed():
    proc = run_cli("list")
    assert proc.returncode == 0, proc.stderr
    counts = dict(line.split("\t") for line in proc.stdout.splitlines())
    assert set(counts) == {f"avhb list {w}" for w in ("tasks", "groups", "tags", "models", "metrics", "filters",
                                                      "judges", "backends", "commands", "plugins")}
    assert int(counts["avhb list tasks"]) > 10 and int(counts["avhb list tags"]) > 0
    assert int(counts["avhb list models"]) > 0  # presets, not registry entries


def test_a_reader_that_closes_stdout_gets_no_traceback():
    cmd = f"{shlex.quote(sys.executable)} -m avhb.cli show curve_ta_IN | true; echo rc=${{PIPESTATUS[0]}} >&2"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert "rc=0" in proc.stderr


def test_a_command_that_fails_before_starting_leaves_no_run_folder(tmp_path):
    out = tmp_path / "runs" / "new"
    proc = run_cli("--tasks", "no_such_task", "--model", "scripted", "--output-dir", str(out))
    assert proc.returncode == 2 and "unknown task or group 'no_such_task'" in proc.stderr
    assert not out.exists() and not out.parent.exists()
    # a folder that was there before is left as it was (only the lock file, emptied)
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    proc = run_cli("--tasks", "no_such_task", "--model", "scripted", "--output-dir", str(out))
    assert proc.returncode == 2 and (out / "notes.txt").read_text() == "mine"


def _readme_api_line() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("**Against an API server**", 1)[1]
    return re.search(r"```\n\s*(.+?)\n\s*```", block, re.S).group(1).strip()


def test_the_readme_api_server_line_runs_against_a_local_server(tmp_path):
    """The quick start's one line, as printed, against a local OpenAI-compatible server
    (its URL in place of localhost:8000, the install step dropped)."""
    from tests.servers.openai_server import ScriptedServer

    line = _readme_api_line()
    assert line.startswith("pip install . && avhb ") and "base_url=http://localhost:8000/v1" in line
    args = shlex.split(line.split("&& avhb ", 1)[1])
    with ScriptedServer(reply=lambda body: "yes") as srv:
        args = [a.replace("http://localhost:8000/v1", srv.base_url) for a in args]
        i = args.index("--output-dir")
        args[i + 1] = str(tmp_path / "api")
        proc = run_cli(*args, "--no-report", env={"OPENAI_API_KEY": ""})
        sent = srv.count
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "api" / "results.json").read_text())["results"]["vidpair_binary"]
    assert results["samples"] == sent > 0 and results["errors"] == 0
    assert "avhb: estimate:" in proc.stderr  # said before the first call


def test_docs_link_nothing_outside_the_repository():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert "../shared" not in doc.read_text(encoding="utf-8"), doc


def test_plugins_md_documents_the_verdict_a_judge_returns():
    import dataclasses

    from avhb.score.judges import Verdict

    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("### Asking a judge from a metric", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert documented == [f.name for f in dataclasses.fields(Verdict)]
    for needed in ("ctx.judges.ask(", "record.judgements[", "verdict_log", "<data-B>", "avhb_judges", "Request.choices"):
        assert needed in section, needed


def test_hook_specs_name_classes_that_exist():
    import importlib

    from avhb import hookspecs

    named = re.findall(r"``(avhb(?:\.\w+)+)\.([A-Z]\w+)``", Path(hookspecs.__file__).read_text(encoding="utf-8"))
    assert ("avhb.score.metric", "Filter") in named
    for module, cls in named:
        assert hasattr(importlib.import_module(module), cls), f"{module}.{cls}"

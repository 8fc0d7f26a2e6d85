"""Throw-away task packs for tests: a real plugin distribution (a
``.dist-info`` folder with an ``avhb`` entry point) written under a temp
folder, whose task package holds whatever YAML, hooks and data a test needs.

    env = make_pack(tmp_path, {"t.yaml": "...", "hooks.py": "...", "data/x.jsonl": "..."})
    run_cli("--tasks", "bad/t", ..., env=env)

Task names are namespaced by the plugin (``bad/<task>``).  The test plugin
(``testpack``: the ``testpack/echo`` backend, ``testpack/exact`` metric) is
on the path too.
"""
from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import TESTPACK

BASE_YAML = """\
task: {name}
doc_id: id
doc_to_text: "Q: {{{{q}}}} ANSWER: {{{{a}}}}"
doc_to_target: a
metric_list:
  - metric: testpack/exact
"""


def task_yaml(name: str, **extra: str) -> str:
    """A minimal valid task (extra top-level lines appended verbatim)."""
    return BASE_YAML.format(name=name) + "".join(f"{k}: {v}\n" for k, v in extra.items())


def make_pack(root: Path, files: dict[str, str | bytes], *, plugin: str = "bad", package: str = "bad_tasks",
              version: str = "1.0") -> dict[str, str]:
    """Write the plugin under ``root`` and return the environment that
    makes it (and the test plugin) importable."""
    root = Path(root)
    pkg = root / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for rel, content in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    module = f"{plugin}_plugin"
    (root / f"{module}.py").write_text(
        "from avhb.hookspecs import hookimpl\n\n\n@hookimpl\ndef avhb_task_packages():\n"
        f"    return [{package!r}]\n")
    dist = root / f"{plugin}_plugin-{version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {plugin}-plugin\nVersion: {version}\n")
    (dist / "entry_points.txt").write_text(f"[avhb]\n{plugin} = {module}\n")
    return {"PYTHONPATH": os.pathsep.join([str(root), str(TESTPACK), os.environ.get("PYTHONPATH", "")])}


def jsonl(rows: list[dict]) -> str:
    import json

    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


QA_ROWS = [{"id": f"s{i}", "q": f"question {i}", "a": f"a{i}"} for i in range(4)]

"""An ``evaluate``-backed metric in a task YAML, through the CLI, offline: its
value and stderr in results.json; a Hub metric that is not cached is one line
before any model call; ``avhb prepare`` caches it from a (local) Hub so the
offline run works."""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

from avhb.score.aggregate import bootstrap_stderr
from tests.conftest import run_cli
from tests.plugins.hf_metric_modules import TOKEN_F1, token_f1, write_modules
from tests.servers.hub_server import FakeHub

ROWS = [("q0", "the cat sat on the mat", "the cat sat"), ("q1", "Paris", "paris"), ("q2", "the dog", "a dog"),
        ("q3", "blue sky", "Blue sky"), ("q4", "Rome", "Rome")]  # id, target, the model's reply


def make_pack(root: Path, metric_list: str) -> Path:
    """A task pack installed as a real distribution under ``root``."""
    pkg = root / "avhb_evpack"
    task_dir = pkg / "tasks" / "ev"
    (task_dir / "sample").mkdir(parents=True)
    for folder in (pkg, pkg / "tasks", task_dir):
        (folder / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text("from avhb.hookspecs import hookimpl\n\n\n@hookimpl\n"
                                   "def avhb_task_packages():\n    return ['avhb_evpack.tasks']\n")
    write_modules(task_dir)
    (task_dir / "ev.yaml").write_text(textwrap.dedent("""\
        task: ev
        sample_data: sample
        doc_id: id
        dataset_kwargs:
          data_files: rows.jsonl
        doc_to_text: "{{question}}"
        doc_to_target: answer
        metric_list:
        """) + textwrap.indent(textwrap.dedent(metric_list), "  "))
    with open(task_dir / "sample" / "rows.jsonl", "w") as fh:
        for sid, answer, _ in ROWS:
            fh.write(json.dumps({"id": sid, "question": f"question {sid}", "answer": answer}) + "\n")
    dist = root / "avhb_evpack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: avhb-evpack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[avhb]\nevpack = avhb_evpack.plugin\n")
    replies = root / "replies.yaml"
    replies.write_text(json.dumps([{"id": sid, "reply": reply} for sid, _, reply in ROWS]))
    return root


def _env(root: Path, **extra: str) -> dict[str, str]:
    import os

    return {"PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
            "HF_HOME": str(root / "hf_home"), "HF_HUB_OFFLINE": "1", **extra}


def test_evaluate_metrics_in_a_task_yaml_reach_results_json_offline(tmp_path):
    root = make_pack(tmp_path, """\
        - metric: exact_match
          ignore_case: true
        - metric: evaluate/metrics/exact_match
          name: hf_exact_match
          ignore_case: true
        - metric: metrics/token_f1.py
          keys: f1
          bootstrap_iters: 200
        """)
    out = tmp_path / "run"
    proc = run_cli("run", "--tasks", "evpack/ev", "--model", f"scripted,replies={root / 'replies.yaml'}",
                   "--sample-data", "--output-dir", str(out), "--no-report", env=_env(root), timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())["results"]["evpack/ev"]
    # avhb's exact_match and the evaluate module's, same records: 3 of 5 ignoring case
    assert res["exact_match"] == res["hf_exact_match"] == 0.6
    assert res["hf_exact_match_n"] == 5 and res["hf_exact_match_stderr"] > 0
    pairs = [(reply, answer) for _, answer, reply in ROWS]
    assert math.isclose(res["token_f1"], token_f1(pairs)["f1"])
    expected = bootstrap_stderr(list(range(5)), lambda idx: token_f1([pairs[i] for i in idx])["f1"], iters=200)
    assert math.isclose(res["token_f1_stderr"], expected, rel_tol=1e-12)


def test_hub_metric_offline_and_not_cached_is_one_line_before_any_call(tmp_path):
    root = make_pack(tmp_path, "- metric: rouge\n")
    out = tmp_path / "run"
    proc = run_cli("run", "--tasks", "evpack/ev", "--model", f"scripted,replies={root / 'replies.yaml'}",
                   "--sample-data", "--output-dir", str(out), "--no-report", env=_env(root), timeout=240)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [x for x in proc.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "'rouge'" in lines[0] and "evpack/ev" in lines[0] and "avhb prepare TASK" in lines[0]
    assert not (out / "journal").exists() or not any((out / "journal").rglob("*.jsonl"))


def test_prepare_caches_a_hub_metric_module_for_offline_runs(tmp_path):
    root = make_pack(tmp_path, "- metric: evaluate/token_overlap\n  keys: recall\n")
    hub = FakeHub()
    hub.publish("evaluate-metric/token_overlap", {"token_overlap.py": TOKEN_F1.encode()}, repo_type="space")
    with hub.serve() as url:
        proc = run_cli("prepare", "evpack/ev", env=_env(root, HF_ENDPOINT=url, HF_HUB_OFFLINE="0"),
                       timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "evaluate module 'token_overlap' ready" in proc.stdout
    assert [r.path for r in hub.downloads()][-1].endswith("/spaces/evaluate-metric/token_overlap/resolve/main/token_overlap.py")
    # the Hub is gone; offline, the run reads the cached module
    out = tmp_path / "run"
    proc = run_cli("run", "--tasks", "evpack/ev", "--model", f"scripted,replies={root / 'replies.yaml'}",
                   "--sample-data", "--output-dir", str(out), "--no-report", env=_env(root), timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())["results"]["evpack/ev"]
    pairs = [(reply, answer) for _, answer, reply in ROWS]
    assert math.isclose(res["token_overlap"], token_f1(pairs)["recall"]) and res["token_overlap_stderr"] > 0

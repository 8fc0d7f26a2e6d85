"""lm-eval's flags as aliases, ``--include_path``, ``--version``, the
nearest-flag hint, and the notes a run says once at its start."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli

SHAPES = [("circle", "red"), ("square", "blue"), ("triangle", "green"), ("star", "red"), ("moon", "blue"),
          ("heart", "green"), ("cross", "red"), ("ring", "blue"), ("arrow", "green"), ("drop", "red")]


@pytest.fixture
def mytasks(tmp_path) -> Path:
    """A task folder a researcher writes without packaging: YAML, a hook
    module, a sample pack of real PNG images."""
    from PIL import Image

    folder = tmp_path / "mytasks"
    sample = folder / "sample"
    (sample / "images").mkdir(parents=True)
    rows = []
    for i, (shape, color) in enumerate(SHAPES):
        Image.new("RGB", (32, 24), color).save(sample / "images" / f"s{i}.png")
        rows.append({"id": f"s{i}", "shape": shape, "image": f"images/s{i}.png", "answer": color})
    (sample / "shapes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "hooks.py").write_text(textwrap.dedent('''
        def add_prompt(docs):
            return [{**d, "prompt": f"What colour is the {d['shape']}?"} for d in docs]
        '''))
    (folder / "shapes.yaml").write_text(textwrap.dedent('''
        task: shapes_color
        tag: shapes_tasks
        sample_data: sample
        dataset_kwargs: {data_files: shapes.jsonl}
        doc_id: id
        process_docs: !function hooks.add_prompt
        doc_to_text: "{{prompt}}"
        doc_to_target: answer
        media:
          images: image
        metric_list:
          - metric: exact_match
        '''))
    return folder


@pytest.fixture
def replies(tmp_path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps({f"colour is the {shape}": color for shape, color in SHAPES}))
    return path


def _run_json(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


def test_lm_eval_spellings_include_path_and_notes(mytasks, replies, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "mytasks/shapes_color", "--include_path", str(mytasks), "--model", "scripted",
                   "--model_args", f"replies={replies}", "--sample_data", "--output_path", str(out),
                   "--limit", "0.3", "--gen_kwargs", "max_tokens=5", "--log_samples", "--batch_size", "4",
                   "--apply_chat_template", "--ablate", "no_audio", "--no_report")
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())["results"]["mytasks/shapes_color"]
    assert results["samples"] == 3 and results["exact_match"] == 1.0  # ceil(10 x 0.3) samples, the hook ran
    run = _run_json(out)
    assert run["gen_kwargs"] == {"max_tokens": 5} and run["limit"] == 0.3 and run["batch_size"] == 4
    assert run["include_paths"] == [str(mytasks.resolve())]
    notes = run["notes"]
    expected = [
        "--log_samples: accepted; avhb always logs every sample",
        "--apply_chat_template: accepted; chat templates are always applied",
        "--batch_size 4: at most 4 requests in flight to scripted",
        "mytasks/shapes_color: images not sent to scripted — the backend sees no pixels; scores reflect text only",
        "--ablate no_audio changes nothing for mytasks/shapes_color: it sends no audio",
    ]
    for start in expected:
        assert sum(n.startswith(start) for n in notes) == 1, (start, notes)
        assert sum(line.startswith(f"avhb: note: {start}") for line in proc.stderr.splitlines()) == 1, proc.stderr
    # the images reached the sample log, with their sizes, though the backend could not see them
    sample = json.loads((out / "samples" / "mytasks__shapes_color.jsonl").read_text().splitlines()[0])
    assert sample["media"]["images"][0]["sent"] is False
    # `avhb score` finds the include path again through run.json
    again = run_cli("score", str(out))
    assert again.returncode == 0 and "mytasks/shapes_color" in again.stdout, again.stderr


def test_include_path_is_a_namespaced_pack(mytasks, replies, tmp_path):
    listed = run_cli("list", "tasks", "--include_path", str(mytasks))
    assert listed.returncode == 0 and "mytasks/shapes_color\t\tmytasks/shapes_tasks" in listed.stdout, listed
    data = mytasks / "sample"
    out = tmp_path / "run"
    # --data and tags are namespaced like task names
    proc = run_cli("--tasks", "mytasks/shapes_tasks", "--include-path", str(mytasks), "--model",
                   f"scripted,replies={replies}", "--data", f"mytasks={data}", "--output-dir", str(out), "--no-report",
                   "--samples", "s1,nope")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "results.json").read_text())["results"]["mytasks/shapes_color"]["samples"] == 1
    assert "avhb: note: --samples nope: no task of this run has these ids" in proc.stderr
    none = run_cli("--tasks", "mytasks/shapes_color", "--include_path", str(mytasks), "--model",
                   f"scripted,replies={replies}", "--sample-data", "--output-dir", str(tmp_path / "r2"),
                   "--samples", "nope,nada")
    assert none.returncode == 2 and "no task of this run has a sample with any of these ids" in none.stderr
    bad = mytasks.parent / "broken"
    bad.mkdir()
    (bad / "t.yaml").write_text("task: t\ndoc_to_text: '{{ q.__class__ }}'\nprocess_docs: !function hooks.nope\n")
    shown = run_cli("validate", "--include_path", str(bad))
    assert shown.returncode == 1 and "'__class__'" in shown.stdout and "hook module 'hooks' not found" in shown.stdout


def test_version_and_nearest_flag():
    from avhb import __version__

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"avhb {__version__}")
    typo = run_cli("--tasks", "x", "--modle", "local")
    assert typo.returncode == 2 and "unknown flag --modle; did you mean --model?" in typo.stderr
    typo = run_cli("--tasks", "x", "--output_pth", "/tmp/x")
    assert typo.returncode == 2 and "did you mean --output_path?" in typo.stderr
    bad = run_cli("--tasks", "x", "--limit", "1.5")
    assert bad.returncode == 2 and "a fraction must be below 1" in bad.stderr


def test_list_judges_on_a_base_install_and_show_a_group():
    base = {"AVHB_PLUGINS": "tasks,metrics,backends"}  # the built-ins only: no judge plugin
    proc = run_cli("list", "judges", env=base)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no judge plugins installed; any backend can judge")
    assert "scorer\t" in proc.stdout and "answer_matcher\t" in proc.stdout and "score_0_2" in proc.stdout
    shown = run_cli("show", "vidpair_halluc", env=base)
    assert shown.returncode == 0 and "resolved_tasks:\n- vidpair_binary" in shown.stdout, shown.stderr


def test_hub_progress_bars_stay_out_of_the_output(tmp_path):
    """A local parquet folder read by `datasets` prints no "Generating split" bar."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "pq" / "data"
    data.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a", "b"], "q": ["x?", "y?"], "a": ["x", "y"]}), data / "test-00000.parquet")
    pack = tmp_path / "pqtasks"
    pack.mkdir()
    (pack / "t.yaml").write_text('task: pq\ndoc_id: id\ndoc_to_text: "{{q}}"\ndoc_to_target: a\n'
                                 "metric_list:\n  - metric: exact_match\n")
    replies = tmp_path / "r.json"
    replies.write_text(json.dumps({"x?": "x", "y?": "y"}))
    proc = run_cli("--tasks", "pqtasks/pq", "--include_path", str(pack), "--data", f"pqtasks={tmp_path / 'pq'}",
                   "--model", f"scripted,replies={replies}", "--output-dir", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "Generating" not in proc.stderr and "examples/s" not in proc.stderr, proc.stderr
    assert "| pqtasks/pq | exact_match | 1.0000" in proc.stdout

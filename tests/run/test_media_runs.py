"""Media through whole runs: an over-budget image sample fails alone; a
judge role that sends images refuses a judge that sees none, before any
model call."""
from __future__ import annotations

import json

from tests.conftest import run_cli


def test_over_budget_image_sample_fails_alone(testpack, tmp_path):
    out = tmp_path / "run"
    # 3 images x 300 tokens > 700: sample "many" fails; "one" (300 + text) fits
    proc = run_cli("--tasks", "testpack/images", "--model", "testpack/echo,max_context=700,tokens_per_frame=300",
                   "--sample-data", "--output-dir", str(out), "--no-report", "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())["results"]["testpack/images"]
    assert res["errors"] == 1 and res["samples"] == 2
    lines = {l["id"]: l for l in map(json.loads, (out / "samples" / "testpack__images.jsonl").read_text().splitlines())}
    assert lines["many"]["error"].startswith("media: task testpack/images: 3 images x 300 tokens")
    assert lines["one"]["error"] is None
    assert lines["one"]["media"]["images"] == [{"path": str(lines["one"]["media"]["images"][0]["path"]), "label": None,
                                                "size": [64, 48]}]


def test_text_only_judge_for_an_image_role_is_refused_before_any_call(testpack, tmp_path):
    calls = tmp_path / "calls.txt"
    proc = run_cli("--tasks", "testpack/image_judged", "--model", f"testpack/echo,calls={calls}", "--sample-data",
                   "--output-dir", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 2
    assert "judge role 'seer' sends image to its judge, but testpack/keyword sees no images" in proc.stderr
    assert "Traceback" not in proc.stderr and not calls.exists()


def test_data_file_flag_resolves_media_under_the_files_folder(testpack, tmp_path):
    """Issue 15, defect 10: with --data NAME=FILE.jsonl, relative media paths
    resolve under the file's folder; a path leaving it fails that sample."""
    import shutil

    data = tmp_path / "copy"
    shutil.copytree(testpack / "avhb_testpack" / "tasks" / "steps" / "sample", data)
    rows = [json.loads(x) for x in (data / "images.jsonl").read_text().splitlines()]
    rows.append({"id": "escape", "q": "one image", "a": "red", "images": ["../../outside/private.png"]})
    (data / "images.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/images", "--model", "testpack/echo", "--data",
                   f"testpack/images={data / 'images.jsonl'}", "--output-dir", str(out), "--no-report",
                   "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    lines = {l["id"]: l for l in map(json.loads, (out / "samples" / "testpack__images.jsonl").read_text().splitlines())}
    assert lines["one"]["error"] is None and lines["one"]["media"]["images"][0]["path"] == str(data / "images/0.png")
    assert "outside/private.png' is outside the data root" in lines["escape"]["error"]

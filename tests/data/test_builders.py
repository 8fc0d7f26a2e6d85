"""Issue 24, item 1: ``dataset_path`` as a ``datasets`` builder reading
local files (json, csv, parquet, text...), ``data_files`` as a path, a list
or split -> paths, ``data_dir``; relative paths resolved where ``datasets``
resolves them for lm-eval (the working directory, or data_dir); ``avhb
prepare`` says no preparation is needed; ``--include_path`` on every
subcommand that takes tasks."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli

ROWS = [{"q": f"capital of c{i}", "a": f"city{i}"} for i in range(6)]


def _replies(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps({f"capital of c{i}": (f"city{i}" if i % 2 == 0 else "wrong") for i in range(6)}))
    return path


def _folder(tmp_path: Path, yaml_text: str) -> Path:
    folder = tmp_path / "lmtasks"
    (folder / "data").mkdir(parents=True)
    (folder / "t.yaml").write_text(textwrap.dedent(yaml_text))
    return folder


def _run(folder: Path, tmp_path: Path, *extra: str, cwd: Path | None = None, name: str = "run"):
    out = tmp_path / name
    proc = run_cli("--tasks", "lmtasks/t", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={_replies(tmp_path)}", "--output_path", str(out), "--no_report", *extra, cwd=cwd)
    return proc, out


def test_json_builder_reads_relative_data_files_from_the_working_directory(tmp_path):
    folder = _folder(tmp_path, """
        task: t
        dataset_path: json
        dataset_kwargs: {data_files: {test: data/test.jsonl, train: data/train.jsonl}}
        test_split: test
        doc_to_text: "{{q}}"
        doc_to_target: a
        metric_list: [{metric: exact_match}]
        """)
    (folder / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "data" / "train.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    proc, out = _run(folder, tmp_path, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "results.json").read_text())["results"]["lmtasks/t"]
    assert result["samples"] == 6 and result["exact_match"] == 0.5
    data = json.loads((out / "run.json").read_text())["tasks"]["lmtasks/t"]["data"]
    assert data["kind"] == "builder" and data["builder"] == "json" and data["base"] == str(folder)
    # avhb score from another folder reads the same files (the recorded base)
    again = run_cli("score", str(out), "--no-report", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # from elsewhere the relative path is not found, and the message says where it looked and where it is
    proc, _ = _run(folder, tmp_path, cwd=tmp_path, name="run2")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("avhb: error: task 'lmtasks/t': data file 'data/test.jsonl' not found under the working "
                          f"directory {tmp_path}") and f"the task's folder has it ({folder / 'data/test.jsonl'})" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("kind", ["csv", "parquet", "text"])
def test_other_builders_and_data_dir(tmp_path, kind):
    folder = _folder(tmp_path, f"""
        task: t
        dataset_path: {kind}
        dataset_kwargs: {{data_dir: data, data_files: "part-*.{kind if kind != 'text' else 'txt'}"}}
        test_split: train
        doc_to_text: "{{{{{'text' if kind == 'text' else 'q'}}}}}"
        doc_to_target: "{'{{text}}' if kind == 'text' else 'a'}"
        metric_list: [{{metric: exact_match}}]
        """)
    data = folder / "data"
    halves = [ROWS[:3], ROWS[3:]]
    for i, rows in enumerate(halves):
        if kind == "csv":
            import csv

            with open(data / f"part-{i}.csv", "w", newline="") as fh:
                writer = csv.DictWriter(fh, ["q", "a"])
                writer.writeheader()
                writer.writerows(rows)
        elif kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows), data / f"part-{i}.parquet")
        else:
            (data / f"part-{i}.txt").write_text("".join(r["q"] + "\n" for r in rows))
    proc, out = _run(folder, tmp_path, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "results.json").read_text())["results"]["lmtasks/t"]
    assert result["samples"] == 6
    # the text builder's target is the line itself ("capital of cN"), never a reply: 0; the others: every other one
    assert result["exact_match"] == (0.0 if kind == "text" else 0.5)


def test_a_split_the_files_lack_and_a_missing_data_dir(tmp_path):
    folder = _folder(tmp_path, """
        task: t
        dataset_path: json
        dataset_kwargs: {data_files: data/x.jsonl}
        test_split: test
        doc_to_text: "{{q}}"
        """)
    (folder / "data" / "x.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    proc, _ = _run(folder, tmp_path, cwd=folder)
    assert proc.returncode == 2
    assert "split 'test' is not in its json data (splits: train; a single data_files entry is the 'train' split)" \
        in proc.stderr
    (folder / "t.yaml").write_text(textwrap.dedent("""
        task: t
        dataset_path: json
        dataset_kwargs: {data_dir: nowhere}
        doc_to_text: "{{q}}"
        """))
    proc, _ = _run(folder, tmp_path, cwd=folder, name="r2")
    assert proc.returncode == 2 and "dataset_kwargs.data_dir 'nowhere' is not a folder" in proc.stderr


def test_prepare_and_include_path_on_every_task_subcommand(tmp_path):
    folder = _folder(tmp_path, """
        task: t
        dataset_path: json
        dataset_kwargs: {data_files: data/test.jsonl}
        test_split: train
        doc_to_text: "{{q}}"
        """)
    (folder / "data" / "test.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    proc = run_cli("prepare", "lmtasks/t", "--include_path", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("lmtasks/t: no preparation needed: datasets' 'json' builder reads its local files "
                                   "(data/test.jsonl) when the task runs")
    for args in (["list", "tasks"], ["show", "lmtasks/t"], ["validate"]):
        shown = run_cli(*args, "--include_path", str(folder))
        assert shown.returncode == 0, (args, shown.stderr)
    # a flag another subcommand has is named as such, never "did you mean" itself
    proc = run_cli("merge", "a", "b", "--include_path", str(folder))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "avhb: error: --include_path is not a flag of `avhb merge` (see `avhb merge --help`)"


def test_imagefolder_rows_reach_doc_to_visual_as_pixels(tmp_path):
    """``dataset_path: imagefolder`` (images with a metadata.jsonl): datasets
    decodes each row's image to PIL, lmms-eval's ``doc_to_visual: image``
    sends it as the sample's pixels."""
    from PIL import Image

    from avhb.data.sources import builder_source
    from avhb.media.spec import MediaSpec
    from avhb.model.messages import ImagePart
    from avhb.taskdef.config import TaskConfig
    from avhb.taskdef.requests import build_request
    from avhb.run.task import Task

    folder = tmp_path / "imgs"
    (folder / "test").mkdir(parents=True)
    rows = []
    for i, colour in enumerate([(255, 0, 0), (0, 0, 255)]):
        Image.new("RGB", (6, 4), colour).save(folder / "test" / f"{i}.png")
        rows.append({"file_name": f"{i}.png", "question": "Which colour?", "answer": ["red", "blue"][i]})
    (folder / "test" / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "", {
        "dataset_path": "imagefolder", "dataset_kwargs": {"data_dir": str(folder)}, "test_split": "test",
        "doc_to_visual": "image", "doc_to_text": "{{question}}", "doc_to_target": "answer"})
    task = Task(cfg, None)  # type: ignore[arg-type]
    source = builder_source(cfg, tmp_path)
    docs = task.load_docs(source)
    assert [d["answer"] for d in docs] == ["red", "blue"]
    request = build_request(task, docs[1], source.media_root, "1", MediaSpec())
    image, text = request.messages[0].parts
    assert isinstance(image, ImagePart) and image.array.shape == (4, 6, 3) and tuple(image.array[0, 0]) == (0, 0, 255)
    assert text.text == "Which colour?"


def test_data_flag_points_a_builder_task_at_another_copy(tmp_path):
    """``--data TASK=FOLDER`` for a builder task: its data_files are read
    under that folder (from any working directory)."""
    folder = _folder(tmp_path, """
        task: t
        dataset_path: json
        dataset_kwargs: {data_files: {test: data/test.jsonl}}
        test_split: test
        doc_to_text: "{{q}}"
        doc_to_target: a
        metric_list: [{metric: exact_match}]
        """)
    copy = tmp_path / "elsewhere"
    (copy / "data").mkdir(parents=True)
    (copy / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[:4]))
    proc, out = _run(folder, tmp_path, "--data", f"lmtasks/t={copy}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "results.json").read_text())["results"]["lmtasks/t"]
    assert result["samples"] == 4 and result["exact_match"] == 0.5
    assert json.loads((out / "run.json").read_text())["tasks"]["lmtasks/t"]["data"]["kind"] == "local"

"""What the reader chooses of a .jsonl task, read a window at a time
(avhb.run.records): --samples then --limit in the file's order, ids by the
document's position when the task names no doc_id field, a sample whose
target cannot be read failed before any call (not counted in the estimate,
not shown by --write_out, in its own shard only)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import avhb
from avhb.cluster.shard import Shard
from avhb.model.backend import parse_backend_spec

ROWS = [{"q": f"question {i}", "a": f"ans{i}"} for i in range(16)]
ROWS[0] = {"q": "question 0"}  # no answer: its target cannot be read


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("reader") / "lazyqa"  # one include path named lazyqa for the module
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "lazyqa.yaml").write_text(textwrap.dedent("""\
        task: lazyqa
        dataset_path: local/lazyqa
        dataset_kwargs:
          data_files: rows.jsonl
        doc_to_text: "{{q}}"
        doc_to_target: a
        metric_list:
          - metric: exact_match
        """))
    return folder


def _run(folder: Path, out: Path, name: str = "lazyqa", **options) -> tuple[dict, list[dict]]:
    task = f"{name}/{name}"
    result = avhb.evaluate(avhb.RunOptions(tasks=[task], model=parse_backend_spec("testpack/echo"),
                                           output_dir=out, include_paths=[str(folder)],
                                           data={task: folder}, write_report=False,
                                           max_errors="100%",  # sample 0 fails on purpose: the budget is not tested here
                                           **options))
    lines = [json.loads(line) for line in (out / "samples" / f"{name}__{name}.jsonl").read_text().splitlines()]
    return result, lines


def test_samples_then_limit_in_the_files_order_ids_by_position(testpack, folder, tmp_path):
    _, lines = _run(folder, tmp_path / "picked", samples=["6", "2", "5"], limit=0.5)  # half of the 3 picked
    assert [(line["id"], line["doc"]["q"]) for line in lines] == [("2", "question 2"), ("5", "question 5")]
    _, lines = _run(folder, tmp_path / "half", limit=0.5)
    assert [line["id"] for line in lines] == [str(i) for i in range(8)]


def test_a_target_that_cannot_be_read_fails_before_any_call(testpack, folder, tmp_path, capsys):
    result, lines = _run(folder, tmp_path / "all", write_out=True)
    err = capsys.readouterr().err
    assert "avhb: estimate: 15 model calls" in err  # the failed sample costs nothing
    assert "Task: lazyqa/lazyqa; document 1; context prompt" in err  # --write_out shows the first that runs
    assert lines[0]["error"] and lines[0]["response"] is None and all(not line["error"] for line in lines[1:])
    assert result["results"]["lazyqa/lazyqa"]["errors"] == 1 and result["results"]["lazyqa/lazyqa"]["samples"] == 16


def test_a_shard_holds_its_own_samples_and_failures(testpack, folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("avhb.run.evaluator.window_size", lambda concurrency: 1)  # a bar spans the windows
    shards = []
    for i in range(2):
        result, lines = _run(folder, tmp_path / f"shard{i}", shard=Shard(i, 2))
        shards.append((result, lines, capsys.readouterr().err))
    ids = [[line["id"] for line in lines] for _, lines, _ in shards]
    assert sorted(ids[0] + ids[1], key=int) == [str(i) for i in range(16)] and ids[0] and ids[1]
    for result, lines, err in shards:
        failed = [line["id"] for line in lines if line["error"]]
        assert failed == (["0"] if "0" in [line["id"] for line in lines] else [])
        assert result["results"]["lazyqa/lazyqa"]["errors"] == len(failed)
        todo = len(lines) - len(failed)  # only its own failures are left out
        assert f"avhb: estimate: {todo} model calls" in err and f"[lazyqa/lazyqa: model] {todo}/{todo} (100%)" in err


def test_ids_sharing_a_hash_are_compared_again(testpack, tmp_path, monkeypatch):
    """Sample ids are checked unique on their hashes; ids that share a hash
    but differ are no duplicate (every hash is 0 here), and a real
    duplicate among them is named with both sample numbers."""
    import avhb.run.records as records
    from avhb.errors import UserError

    monkeypatch.setattr(records, "_HASH_BITS", 0)
    folder = tmp_path / "hashqa"  # its own include path name: the module's lazyqa is registered
    folder.mkdir()
    rows = [{"id": f"s{i}", "q": f"question {i}", "a": f"ans{i}"} for i in range(6)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "hashqa.yaml").write_text(textwrap.dedent("""\
        task: hashqa
        dataset_path: local/hashqa
        dataset_kwargs:
          data_files: rows.jsonl
        doc_id: id
        doc_to_text: "{{q}}"
        doc_to_target: a
        metric_list:
          - metric: exact_match
        """))
    _, lines = _run(folder, tmp_path / "distinct", "hashqa")
    assert [line["id"] for line in lines] == [f"s{i}" for i in range(6)]
    rows[4]["id"] = "s1"
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UserError, match=r"sample id 's1' appears twice in .* \(samples 1 and 4; doc_id field 'id'"):
        _run(folder, tmp_path / "dup", "hashqa")
